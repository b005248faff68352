/*
 * test_cluster - the pure parts of the cluster layer (issue 22): the Redis
 * URL, a member's share of a limit when it decides alone, the lease table,
 * the merge of another member's retry time into the local destdb.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cluster/cluster.h"

static int parse(const char *text, struct cluster_url *u)
{
    char why[200] = "";
    int rc = cluster_url_parse(text, u, why, sizeof(why));

    if (rc < 0)
        assert_true(why[0] != '\0'); /* a failure says why */
    return rc;
}

static void test_url_tcp(void **state)
{
    struct cluster_url u;

    (void)state;
    assert_int_equal(parse("redis://127.0.0.1", &u), 0);
    assert_false(u.unix_socket);
    assert_string_equal(u.ip, "127.0.0.1");
    assert_int_equal(u.port, 6379);
    assert_string_equal(u.password, "");
    assert_int_equal(parse("redis://:s3cret@127.0.0.1:7000", &u), 0);
    assert_string_equal(u.password, "s3cret");
    assert_string_equal(u.user, "");
    assert_int_equal(u.port, 7000);
    assert_int_equal(parse("redis://mta:pw@[::1]:6380/", &u), 0);
    assert_string_equal(u.ip, "::1");
    assert_string_equal(u.user, "mta");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.port, 6380);
    assert_false(u.tls);
}

/* rediss:// is TCP with TLS (decision 117), in the same forms. */
static void test_url_tls(void **state)
{
    struct cluster_url u;

    (void)state;
    assert_int_equal(parse("rediss://127.0.0.1", &u), 0);
    assert_true(u.tls);
    assert_false(u.unix_socket);
    assert_string_equal(u.ip, "127.0.0.1");
    assert_int_equal(u.port, 6379);
    assert_int_equal(parse("rediss://mta:pw@[::1]:6380", &u), 0);
    assert_true(u.tls);
    assert_string_equal(u.ip, "::1");
    assert_string_equal(u.user, "mta");
    assert_string_equal(u.password, "pw");
    assert_int_equal(u.port, 6380);
}

static void test_url_unix(void **state)
{
    struct cluster_url u;

    (void)state;
    assert_int_equal(parse("unix:///run/redis/redis.sock", &u), 0);
    assert_true(u.unix_socket);
    assert_string_equal(u.path, "/run/redis/redis.sock");
    assert_int_equal(parse("unix://:pw@/tmp/r.sock", &u), 0);
    assert_string_equal(u.path, "/tmp/r.sock");
    assert_string_equal(u.password, "pw");
}

/* The logs show the URL without its password (decision 117). */
static void test_url_shown(void **state)
{
    static const char *const pairs[][2] = {
        {"rediss://alice:s3cret@127.0.0.1:6380",
         "rediss://alice:***@127.0.0.1:6380"},
        {"redis://:pw@[::1]", "redis://:***@[::1]"},
        {"unix://:pw@/run/r.sock", "unix://:***@/run/r.sock"},
        {"unix:///run/r.sock", "unix:///run/r.sock"},
        {"redis://127.0.0.1", "redis://127.0.0.1"},
        {"rediss://user@127.0.0.1", "rediss://user@127.0.0.1"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        char *shown = cluster_url_shown(pairs[i][0]);

        assert_string_equal(shown, pairs[i][1]);
        free(shown);
    }
}

/* Hostile and unsupported forms are refused with a reason. */
static void test_url_refused(void **state)
{
    static const char *bad[] = {
        "",
        "redis://",
        "redis://localhost", /* a name: a blocking lookup */
        "redis://127.0.0.1:0",
        "redis://127.0.0.1:65536",
        "redis://127.0.0.1:6379x",
        "redis://127.0.0.1/db/extra",
        "rediss://",
        "rediss://localhost", /* TLS too: an address, no lookup */
        "rediss:/127.0.0.1",
        "http://127.0.0.1",
        "unix://",
        "unix://relative/path",
        "redis://[::1",
        "redis://a:b:c@127.0.0.1",
        "redis://:pw@",
    };
    struct cluster_url u;
    char big[600];

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse(bad[i], &u) != -1)
            fail_msg("accepted: %s", bad[i]);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    memcpy(big, "unix:///", 8);
    assert_int_equal(parse(big, &u), -1); /* longer than sun_path */
    memcpy(big, "redis://:", 9);
    assert_int_equal(parse(big, &u), -1);
}

/* "limit ÷ known live members", rounded down so that the shares add up to
 * no more than the limit, but never 0: mail must not be stuck. */
static void test_share(void **state)
{
    (void)state;
    assert_int_equal(cluster_share(10, 3), 3);
    assert_int_equal(cluster_share(10, 1), 10);
    assert_int_equal(cluster_share(10, 0), 10); /* none known: alone */
    assert_int_equal(cluster_share(2, 3), 1);
    assert_int_equal(cluster_share(9, 3), 3);
    assert_int_equal(cluster_share(0, 3), 0); /* no limit */
}

/* Cut off from Redis (decision 120): no more than the leases held while
 * they are good in Redis, the share while the others hold it, 1 after;
 * 1 for a member the others never heard of. */
static void test_alone_cap(void **state)
{
    struct cluster_alone a = {.known = 1, .grace_end = 1400, .deadline = 4000};

    (void)state;
    assert_int_equal(cluster_alone_cap(&a, 1000, 3, 1), 1); /* held */
    assert_int_equal(cluster_alone_cap(&a, 1000, 3, 5), 3); /* the share */
    assert_int_equal(cluster_alone_cap(&a, 1399, 3, 0), 0);
    assert_int_equal(cluster_alone_cap(&a, 1400, 3, 0), 3);
    assert_int_equal(cluster_alone_cap(&a, 3999, 3, 0), 3);
    assert_int_equal(cluster_alone_cap(&a, 4000, 3, 0), 1); /* deadline */
    assert_int_equal(cluster_alone_cap(&a, 9000, 3, 3), 1);
    assert_int_equal(cluster_alone_cap(&a, 9000, 0, 0), 0); /* no limit */
    assert_int_equal(cluster_alone_cap(&a, 9000, -1, 0), -1);
    a.known = 0;
    assert_int_equal(cluster_alone_cap(&a, 1000, 3, 0), 1);
    assert_int_equal(cluster_alone_cap(&a, 1000, 10, 10), 1);
}

#define M CLUSTER_RATE_MSG
#define C CLUSTER_RATE_CONN

static struct cluster_lease_req *find_req(struct cluster_lease_req *r,
                                          size_t nr, const char *name)
{
    for (size_t i = 0; i < nr; i++)
        if (strcmp(r[i].name, name) == 0)
            return &r[i];
    return NULL;
}

/* A round carries each queue's demand; grants become caps. */
static void test_leases_round(void **state)
{
    struct cluster_leases *t = cluster_leases_create();
    struct cluster_lease_req *r;
    size_t nr;

    (void)state;
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 1, 3), 0);
    cluster_leases_demand(t, "smtp:a", 4, 3, 0);
    cluster_leases_demand(t, "smtp:b", 4, 0, 0); /* nothing to ask */
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 1);
    assert_string_equal(r[0].name, "smtp:a");
    assert_int_equal(r[0].limit, 4);
    assert_int_equal(r[0].want, 3);
    assert_int_equal(r[0].busy, 0);
    free(r);
    cluster_leases_grant(t, "smtp:a", 2, 3);
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 1, 3), 2);
    /* leases held above the target (connections kept them): the
     * target caps the deliveries */
    cluster_leases_grant(t, "smtp:a", 3, 1);
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 1, 3), 1);
    cluster_leases_grant(t, "smtp:a", 2, 2);
    /* alone: the share of the limit, whatever was granted */
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 0, 3), 1);
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 0, 1), 4);
    /* no limit: no cap */
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 0, 1, 3), -1);
    cluster_leases_free(t);
}

/* A queue that is gone (not named in a round) gives its leases back and
 * withdraws its want, once; then it is forgotten. */
static void test_leases_release(void **state)
{
    struct cluster_leases *t = cluster_leases_create();
    struct cluster_lease_req *r;
    size_t nr;

    (void)state;
    cluster_leases_demand(t, "smtp:a", 4, 4, 0);
    free((cluster_leases_round(t, &r), r));
    cluster_leases_grant(t, "smtp:a", 4, 4);
    cluster_leases_demand(t, "smtp:a", 4, 2, 2); /* busy 2, 2 waiting */
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 1);
    assert_int_equal(r[0].busy, 2);
    free(r);
    cluster_leases_grant(t, "smtp:a", 4, 4);
    nr = cluster_leases_round(t, &r); /* not named: gone */
    assert_int_equal(nr, 1);
    assert_int_equal(r[0].want, 0);
    assert_int_equal(r[0].busy, 0);
    assert_int_equal(r[0].limit, 4);
    free(r);
    cluster_leases_grant(t, "smtp:a", 0, 0);
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 0);
    free(r);
    assert_int_equal(cluster_leases_cap(t, "smtp:a", 4, 1, 2), 0);
    cluster_leases_free(t);
}

/* Many queues: each keeps its own grant. */
static void test_leases_many(void **state)
{
    struct cluster_leases *t = cluster_leases_create();
    struct cluster_lease_req *r;
    char name[32];
    size_t nr;

    (void)state;
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "smtp:d%d", i);
        cluster_leases_demand(t, name, 10, 1 + i % 10, 0);
    }
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 300);
    assert_non_null(find_req(r, nr, "smtp:d299"));
    assert_int_equal(find_req(r, nr, "smtp:d37")->want, 8);
    free(r);
    for (int i = 0; i < 300; i++) {
        snprintf(name, sizeof(name), "smtp:d%d", i);
        cluster_leases_grant(t, name, i % 7, 10);
    }
    assert_int_equal(cluster_leases_cap(t, "smtp:d20", 10, 1, 1), 6);
    assert_int_equal(cluster_leases_cap(t, "smtp:d21", 10, 1, 1), 0);
    cluster_leases_free(t);
}

/* The connections a queue's leases cover: deliveries in flight and the
 * idle connections its deliveries not yet connected will not take; the
 * idle ones above a cap close, never below those spoken for. */
static void test_idle_conns(void **state)
{
    (void)state;
    assert_int_equal(cluster_conns(3, 0, 0), 3);
    assert_int_equal(cluster_conns(3, 1, 0), 4); /* one idle */
    assert_int_equal(cluster_conns(4, 1, 1), 4); /* the start will take it */
    assert_int_equal(cluster_conns(4, 1, 2), 4); /* one will open its own */
    assert_int_equal(cluster_conns(0, 2, 0), 2); /* backlog over, idle */
    /* within the cap: all stay */
    assert_int_equal(cluster_idle_keep(4, 3, 1, 0), 1);
    assert_int_equal(cluster_idle_keep(4, 4, 1, 1), 1);
    /* no cap: all stay */
    assert_int_equal(cluster_idle_keep(-1, 9, 5, 0), 5);
    /* the target fell to 2: 2 in flight, 2 idle -> both close */
    assert_int_equal(cluster_idle_keep(2, 2, 2, 0), 0);
    /* cap 2, 1 in flight, 3 idle -> one stays */
    assert_int_equal(cluster_idle_keep(2, 1, 3, 0), 1);
    /* in flight above the cap: no idle stays but those spoken for */
    assert_int_equal(cluster_idle_keep(2, 4, 3, 1), 1);
    assert_int_equal(cluster_idle_keep(0, 0, 2, 0), 0);
}

/* Another member's retry time: taken when later than ours and still to
 * come, converted to the local monotonic clock. */
static void test_fact_merge(void **state)
{
    int64_t retry = 0;

    (void)state;
    /* now: mono 5000, wall 1,000,000; remote retry at wall 1,003,000 */
    assert_int_equal(cluster_fact_merge(-1, 1003000, 5000, 1000000, &retry), 1);
    assert_int_equal(retry, 8000);
    assert_int_equal(cluster_fact_merge(7000, 1003000, 5000, 1000000, &retry),
                     1);
    assert_int_equal(retry, 8000);
    /* ours is later: kept */
    assert_int_equal(cluster_fact_merge(9000, 1003000, 5000, 1000000, &retry),
                     0);
    /* the same time, once converted: nothing to do */
    assert_int_equal(cluster_fact_merge(8000, 1003000, 5000, 1000000, &retry),
                     0);
    /* past: ignored */
    assert_int_equal(cluster_fact_merge(-1, 999000, 5000, 1000000, &retry), 0);
    assert_int_equal(cluster_fact_merge(-1, 1000000, 5000, 1000000, &retry), 0);
}

/* <transport>_destination_rate: N/TIME, TIME with a unit (s by default). */
static void test_rate_parse(void **state)
{
    struct cluster_rate r;
    char why[200];
    static const char *bad[] = {"0/s",  "x/s",   "10",
                                "10/",  "10/0s", "10/5y",
                                "-1/s", "10/s/", "99999999999/s"};

    (void)state;
    assert_int_equal(cluster_rate_parse("", &r, why, sizeof(why)), 0);
    assert_int_equal(r.count, 0); /* none */
    assert_int_equal(cluster_rate_parse("100/1m", &r, why, sizeof(why)), 0);
    assert_int_equal(r.count, 100);
    assert_int_equal(r.period_ms, 60000);
    assert_int_equal(cluster_rate_parse("5/s", &r, why, sizeof(why)), 0);
    assert_int_equal(r.period_ms, 1000);
    assert_int_equal(cluster_rate_parse("3/2h", &r, why, sizeof(why)), 0);
    assert_int_equal(r.period_ms, 7200000);
    assert_int_equal(cluster_rate_parse("10/500ms", &r, why, sizeof(why)), 0);
    assert_int_equal(r.period_ms, 500);
    assert_int_equal(cluster_rate_parse("7/30", &r, why, sizeof(why)), 0);
    assert_int_equal(r.period_ms, 30000);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (cluster_rate_parse(bad[i], &r, why, sizeof(why)) != -1)
            fail_msg("accepted: %s", bad[i]);
}

/*
 * GCRA: with 10 per 1000 ms (one every 100 ms, a burst of 10), a fresh
 * limiter grants 10 at once, then one per 100 ms; asking more than fits
 * grants what fits and says when the next one does.
 */
static void test_gcra(void **state)
{
    int64_t tat = 0, wait = -1;

    (void)state;
    assert_int_equal(cluster_gcra(&tat, 5000, 10, 1000, 4, &wait), 4);
    assert_int_equal(tat, 5400);
    assert_int_equal(wait, 0); /* more would fit now */
    assert_int_equal(cluster_gcra(&tat, 5000, 10, 1000, 20, &wait), 6);
    assert_int_equal(tat, 6000);
    assert_int_equal(wait, 100);
    assert_int_equal(cluster_gcra(&tat, 5050, 10, 1000, 1, &wait), 0);
    assert_int_equal(tat, 6000);
    assert_int_equal(wait, 50);
    assert_int_equal(cluster_gcra(&tat, 5100, 10, 1000, 3, &wait), 1);
    assert_int_equal(tat, 6100);
    assert_int_equal(wait, 100);
    /* idle long enough: the burst again, no more */
    assert_int_equal(cluster_gcra(&tat, 9000, 10, 1000, 50, &wait), 10);
    assert_int_equal(tat, 10000);
    /* asking nothing changes nothing */
    assert_int_equal(cluster_gcra(&tat, 9000, 10, 1000, 0, &wait), 0);
    assert_int_equal(tat, 10000);
    /* alone with 3 members: a third of the rate */
    tat = 0;
    assert_int_equal(cluster_gcra(&tat, 5000, 10 / 3, 1000, 50, &wait), 3);
}

/* Tokens: granted, spent one per delivery started, never below 0. */
static void test_leases_tokens(void **state)
{
    struct cluster_leases *t = cluster_leases_create();
    struct cluster_lease_req *r;
    size_t nr;

    (void)state;
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", M), -1); /* no rate */
    cluster_leases_demand(t, "smtp:a", 4, 3, 0);
    cluster_leases_rate(t, "smtp:a", M, 10, 60000, 3);
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 1);
    assert_int_equal(r[0].rate[M].count, 10);
    assert_int_equal(r[0].rate[M].period, 60000);
    assert_int_equal(r[0].rate[M].want, 3);
    assert_int_equal(r[0].rate[C].count, 0); /* no connection rate */
    free(r);
    cluster_leases_tokens_add(t, "smtp:a", M, 2);
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", M), 2);
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", C), -1);
    cluster_leases_spend(t, "smtp:a", M);
    cluster_leases_spend(t, "smtp:a", M);
    cluster_leases_spend(t, "smtp:a", M);
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", M), 0);
    /* a rate-limited queue with nothing else to say still asks */
    cluster_leases_rate(t, "smtp:b", M, 10, 60000, 1);
    nr = cluster_leases_round(t, &r);
    assert_non_null(find_req(r, nr, "smtp:b"));
    assert_int_equal(find_req(r, nr, "smtp:b")->limit, 0);
    free(r);
    /* alone among 2: 5 per minute, a burst of 5 then one per 12 s */
    cluster_leases_rate(t, "smtp:b", M, 10, 60000, 8);
    assert_int_equal(cluster_leases_alone(t, 1000, 2), 12000);
    assert_int_equal(cluster_leases_tokens(t, "smtp:b", M), 5);
    cluster_leases_free(t);
}

/*
 * The connection rate is a second GCRA beside the message rate, with
 * its own tokens: a queue asks for each, each is granted and spent
 * apart, and alone each runs on its own share.
 */
static void test_leases_conn_rate(void **state)
{
    struct cluster_leases *t = cluster_leases_create();
    struct cluster_lease_req *r;
    size_t nr;

    (void)state;
    cluster_leases_rate(t, "smtp:a", M, 100, 1000, 6);
    cluster_leases_rate(t, "smtp:a", C, 2, 1000, 2);
    nr = cluster_leases_round(t, &r);
    assert_int_equal(nr, 1);
    assert_int_equal(r[0].rate[M].count, 100);
    assert_int_equal(r[0].rate[M].want, 6);
    assert_int_equal(r[0].rate[C].count, 2);
    assert_int_equal(r[0].rate[C].period, 1000);
    assert_int_equal(r[0].rate[C].want, 2);
    free(r);
    cluster_leases_tokens_add(t, "smtp:a", M, 6);
    cluster_leases_tokens_add(t, "smtp:a", C, 2);
    cluster_leases_spend(t, "smtp:a", C);
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", M), 6);
    assert_int_equal(cluster_leases_tokens(t, "smtp:a", C), 1);
    /* only the connection rate waits: the queue is still listed */
    cluster_leases_rate(t, "smtp:b", C, 2, 1000, 1);
    nr = cluster_leases_round(t, &r);
    assert_non_null(find_req(r, nr, "smtp:b"));
    assert_int_equal(find_req(r, nr, "smtp:b")->rate[M].want, 0);
    free(r);
    /* alone among 2: connections 1 per second (a share of 2/s), messages
     * 50 per second; the next connection fits in 1000 ms */
    cluster_leases_rate(t, "smtp:c", M, 100, 1000, 3);
    cluster_leases_rate(t, "smtp:c", C, 2, 1000, 3);
    assert_int_equal(cluster_leases_alone(t, 5000, 2), 1000);
    assert_int_equal(cluster_leases_tokens(t, "smtp:c", M), 3);
    assert_int_equal(cluster_leases_tokens(t, "smtp:c", C), 1);
    cluster_leases_free(t);
}

struct susp_log {
    char text[400];
};

static void susp_on(void *ctx, const char *dest, int64_t until, const char *why)
{
    struct susp_log *l = ctx;
    size_t len = strlen(l->text);

    snprintf(l->text + len, sizeof(l->text) - len, "+%s:%lld%s%s ", dest,
             (long long)until, why[0] ? "/" : "", why);
}

static void susp_off(void *ctx, const char *dest)
{
    struct susp_log *l = ctx;
    size_t len = strlen(l->text);

    snprintf(l->text + len, sizeof(l->text) - len, "-%s ", dest);
}

/* The pulled set against the known one: new or changed ones are
 * suspended, gone ones resumed, known ones left alone; local changes
 * are not applied again. */
static void test_susps_merge(void **state)
{
    static const struct cluster_susp_fns fns = {susp_on, susp_off};
    struct cluster_susps k = {0};
    struct cluster_susp set[3] = {
        {"a.example", 0, ""}, {"b.example", 5000, ""}, {"c.example", 0, ""}};
    struct susp_log l = {""};

    (void)state;
    cluster_susps_set(&k, "c.example", 0); /* suspended here */
    cluster_susps_merge(&k, set, 3, &fns, &l);
    assert_string_equal(l.text, "+a.example:0 +b.example:5000 ");
    l.text[0] = '\0';
    cluster_susps_merge(&k, set, 3, &fns, &l); /* the same: nothing */
    assert_string_equal(l.text, "");
    set[1].until = 9000;                           /* b extended */
    cluster_susps_merge(&k, set + 1, 1, &fns, &l); /* a and c resumed */
    assert_string_equal(l.text, "+b.example:9000 -a.example -c.example ");
    l.text[0] = '\0';
    cluster_susps_set(&k, "B.EXAMPLE", -1); /* resumed here */
    cluster_susps_merge(&k, NULL, 0, &fns, &l);
    assert_string_equal(l.text, "");
    assert_int_equal(k.n, 0);
    cluster_susps_clear(&k);
}

/*
 * A shared set (the dead destinations): a death here is known at once
 * and goes out once; a failed sync puts it back unless a newer change
 * waits; a pull applies the others' with their reasons, keeps what is
 * on its way out, and revives what is gone.
 */
static void test_shared_dead(void **state)
{
    static const struct cluster_susp_fns fns = {susp_on, susp_off};
    struct cluster_shared s = {0};
    struct cluster_susp set[2] = {{"smtp:b.example", 7000, "421 busy"},
                                  {"smtp:a.example", 6000, "refused"}};
    struct susp_log l = {""};

    (void)state;
    cluster_shared_change(&s, "smtp:a.example", 6000, "refused");
    assert_int_equal(s.out.n, 1);
    assert_string_equal(cluster_shared_find(&s, "smtp:a.example")->why,
                        "refused");
    cluster_shared_send(&s);
    assert_int_equal(s.out.n, 0);
    assert_int_equal(s.sent.n, 1);
    cluster_shared_unsent(&s); /* the sync failed: out again */
    assert_int_equal(s.out.n, 1);
    assert_int_equal(s.sent.n, 0);
    cluster_shared_send(&s);
    cluster_shared_change(&s, "smtp:a.example", -1, NULL); /* revived */
    cluster_shared_unsent(&s); /* the newer change stays */
    assert_int_equal(s.out.n, 1);
    assert_int_equal(s.out.v[0].until, -1);
    assert_null(cluster_shared_find(&s, "smtp:a.example"));
    cluster_shared_send(&s);
    cluster_shared_sent(&s);
    /* b is another member's; a's revival reached Redis, a is not there */
    cluster_shared_pulled(&s, set, 1, &fns, &l);
    assert_string_equal(l.text, "+smtp:b.example:7000/421 busy ");
    l.text[0] = '\0';
    /* a dies here again, not yet sent: a pull without it keeps it */
    cluster_shared_change(&s, "smtp:a.example", 6000, "refused");
    cluster_shared_pulled(&s, set, 1, &fns, &l);
    assert_string_equal(l.text, "");
    /* b revived by its member: gone from Redis, revived here */
    cluster_shared_send(&s);
    cluster_shared_sent(&s);
    cluster_shared_pulled(&s, set + 1, 1, &fns, &l);
    assert_string_equal(l.text, "-smtp:b.example ");
    cluster_shared_clear(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_tcp),
        cmocka_unit_test(test_url_unix),
        cmocka_unit_test(test_url_tls),
        cmocka_unit_test(test_url_shown),
        cmocka_unit_test(test_url_refused),
        cmocka_unit_test(test_share),
        cmocka_unit_test(test_alone_cap),
        cmocka_unit_test(test_leases_round),
        cmocka_unit_test(test_leases_release),
        cmocka_unit_test(test_leases_many),
        cmocka_unit_test(test_idle_conns),
        cmocka_unit_test(test_fact_merge),
        cmocka_unit_test(test_rate_parse),
        cmocka_unit_test(test_gcra),
        cmocka_unit_test(test_leases_tokens),
        cmocka_unit_test(test_leases_conn_rate),
        cmocka_unit_test(test_susps_merge),
        cmocka_unit_test(test_shared_dead),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
