/*
 * NAME
 *	test_sts 1 - unit tests of MTA-STS: the policy file, the TXT record,
 *	MX patterns, and the cache's rules
 * SYNOPSIS
 *	build/tests/test_sts
 * DESCRIPTION
 *	Tests src/sts/policy.c, txt.c, mx.c, and sts.c with cache.c on a
 *	TXT lookup of the test's own and a clock of its own; the quoted
 *	words are RFC 8461's. Where a rule needs a fetch, the fetch goes
 *	to a loopback port where nothing listens, so it fails at once:
 *	the fetches that succeed, and what a real HTTPS server can get
 *	wrong, are test_sts_fetch's.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "spool/spool.h"
#include "sts/sts.h"

#define WHY 512

static void parse_ok(const char *text, struct sts_policy *p)
{
    char why[WHY] = "";

    if (sts_policy_parse(text, strlen(text), p, why, sizeof(why)) != 0)
        fail_msg("sts_policy_parse: %s", why);
}

static void parse_fails(const char *text, const char *expected)
{
    struct sts_policy p;
    char why[WHY] = "";

    assert_int_equal(sts_policy_parse(text, strlen(text), &p, why, sizeof(why)),
                     -1);
    assert_string_equal(why, expected);
    assert_null(p.mx);
    assert_int_equal(p.nmx, 0);
}

/* Section 3.2's example, with LF line ends and with CRLF. */
static void test_policy_valid(void **state)
{
    struct sts_policy p;

    (void)state;
    parse_ok("version: STSv1\nmode: enforce\nmx: mail.example.com\n"
             "mx: *.example.net\nmx: backupmx.example.com\nmax_age: 604800\n",
             &p);
    assert_int_equal(p.mode, STS_ENFORCE);
    assert_int_equal(p.max_age, 604800);
    assert_int_equal(p.nmx, 3);
    assert_string_equal(p.mx[0], "mail.example.com");
    assert_string_equal(p.mx[1], "*.example.net");
    assert_string_equal(p.mx[2], "backupmx.example.com");
    assert_string_equal(p.id, "");
    assert_int_equal(p.fetched, 0);
    sts_policy_clear(&p);

    /* "sts-policy-term = LF / CRLF"; white space after the colon. */
    parse_ok("version: STSv1\r\nmode:testing\r\nmx:\t mx.a.test  \r\n"
             "max_age: 86400",
             &p);
    assert_int_equal(p.mode, STS_TESTING);
    assert_int_equal(p.nmx, 1);
    assert_string_equal(p.mx[0], "mx.a.test");
    assert_int_equal(p.max_age, 86400);
    sts_policy_clear(&p);

    /* Mode none needs no mx; max_age 0 and the maximum are allowed. */
    parse_ok("version: STSv1\nmode: none\nmax_age: 0\n", &p);
    assert_int_equal(p.mode, STS_NONE);
    assert_int_equal(p.nmx, 0);
    assert_int_equal(p.max_age, 0);
    sts_policy_clear(&p);
    parse_ok("version: STSv1\nmode: none\nmax_age: 31557600\n", &p);
    assert_int_equal(p.max_age, 31557600);
    sts_policy_clear(&p);
}

/* Unknown keys ("extension" fields) and blank lines are ignored. */
static void test_policy_unknown_keys(void **state)
{
    struct sts_policy p, copy;

    (void)state;
    parse_ok("version: STSv1\nmode: enforce\nfoo: bar baz\n\n"
             "x-report_to.v2: mailto:a@b\nmx: a.test\nmax_age: 10\n",
             &p);
    assert_int_equal(p.mode, STS_ENFORCE);
    assert_int_equal(p.nmx, 1);
    sts_policy_copy(&copy, &p);
    sts_policy_clear(&p);
    assert_int_equal(copy.nmx, 1);
    assert_string_equal(copy.mx[0], "a.test");
    assert_int_equal(copy.max_age, 10);
    sts_policy_clear(&copy);
}

static void test_policy_invalid(void **state)
{
    (void)state;
    parse_fails("version: STSv1\nmx: a.test\nmax_age: 10\n", "no mode");
    parse_fails("mode: enforce\nmx: a.test\nmax_age: 10\n", "no version");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\n", "no max_age");
    parse_fails("version: STSv1\nmode: enforce\nmax_age: 10\n", "no mx");
    parse_fails("version: STSv1\nmode: testing\nmax_age: 10\n", "no mx");
    parse_fails("version: STSv2\nmode: enforce\nmx: a.test\nmax_age: 10\n",
                "line 1: version is not STSv1");
    parse_fails("version: STSv1\nmode: Enforce\nmx: a.test\nmax_age: 10\n",
                "line 2: mode is not enforce, testing or none");
    parse_fails("version: STSv1\nmode: report\nmx: a.test\nmax_age: 10\n",
                "line 2: mode is not enforce, testing or none");
    /* "maximum value of 31557600", "1*10(DIGIT)". */
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\nmax_age: "
                "31557601\n",
                "line 4: max_age is not a number of 0 to 31557600");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\nmax_age: -1\n",
                "line 4: max_age is not a number of 0 to 31557600");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\nmax_age: 1d\n",
                "line 4: max_age is not a number of 0 to 31557600");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\nmax_age: "
                "00000000001\n",
                "line 4: max_age is not a number of 0 to 31557600");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.test\nmax_age:\n",
                "line 4: max_age is not a number of 0 to 31557600");
    parse_fails("version: STSv1\nmode: enforce\nmode: none\nmx: a.test\n"
                "max_age: 10\n",
                "line 3: mode given twice");
    parse_fails("version: STSv1\nmode: enforce\nmx: *\nmax_age: 10\n",
                "line 3: mx is not a host name pattern");
    parse_fails("version: STSv1\nmode: enforce\nmx: a.*.test\nmax_age: 10\n",
                "line 3: mx is not a host name pattern");
    parse_fails("version: STSv1\nmode: enforce\nmx: a..test\nmax_age: 10\n",
                "line 3: mx is not a host name pattern");
    parse_fails("version: STSv1\nmode enforce\nmx: a.test\nmax_age: 10\n",
                "line 2: not a key: value pair");
    parse_fails("<html>\n<body>Not Found</body>\n", "line 1: not a key: value "
                                                    "pair");
    {
        static const char nul[] = "version: STSv1\nmode: none\0\nmax_age: 1\n";
        struct sts_policy p;
        char why[WHY];

        assert_int_equal(
            sts_policy_parse(nul, sizeof(nul) - 1, &p, why, sizeof(why)), -1);
        assert_string_equal(why, "a NUL byte in the policy");
    }
}

static void test_txt_parse(void **state)
{
    char id[STS_ID_MAX + 1];

    (void)state;
    assert_int_equal(sts_txt_parse("v=STSv1; id=20160831085700Z;", id), 0);
    assert_string_equal(id, "20160831085700Z");
    assert_int_equal(sts_txt_parse("v=STSv1;id=abc", id), 0);
    assert_string_equal(id, "abc");
    /* "sts-field-delim = *WSP ";" *WSP"; extensions are ignored. */
    assert_int_equal(sts_txt_parse("v=STSv1 ;\tid=x1 ; ext_1.a-b=va:lue;", id),
                     0);
    assert_string_equal(id, "x1");
    assert_int_equal(
        sts_txt_parse("v=STSv1; id=12345678901234567890123456789012", id), 0);
    assert_string_equal(id, "12345678901234567890123456789012");

    /* "sts-id = %s"id=" 1*32(ALPHA / DIGIT)", and exactly one. */
    assert_int_equal(
        sts_txt_parse("v=STSv1; id=123456789012345678901234567890123", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=a-b", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1;", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=a; id=b", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; ID=a", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv2; id=a", id), -1);
    assert_int_equal(sts_txt_parse(" v=STSv1; id=a", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1 id=a", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=a; =b", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=a; e=", id), -1);
    assert_int_equal(sts_txt_parse("v=STSv1; id=a; _e=1", id), -1);
}

/*
 * "If multiple TXT records for "_mta-sts" are returned by the resolver,
 * records that do not begin with "v=STSv1;" are discarded. If the number
 * of resulting records is not one, or if the resulting record is
 * syntactically invalid, senders MUST assume the recipient domain does
 * not have an available MTA-STS Policy."
 */
static void test_txt_select(void **state)
{
    const char *one_of_three[] = {"v=spf1 -all", "v=STSv1; id=abc",
                                  "something else"};
    const char *two[] = {"v=STSv1; id=abc", "v=STSv1; id=def"};
    const char *bad[] = {"v=STSv1; id=a_b", "v=spf1 -all"};
    char id[STS_ID_MAX + 1];

    (void)state;
    assert_int_equal(sts_txt_select(one_of_three, 3, id), 0);
    assert_string_equal(id, "abc");
    assert_int_equal(sts_txt_select(two, 2, id), -1);
    assert_int_equal(sts_txt_select(bad, 2, id), -1);
    assert_int_equal(sts_txt_select(one_of_three + 2, 1, id), -1);
    assert_int_equal(sts_txt_select(NULL, 0, id), -1);
}

/*
 * "the mx pattern "*.example.com" matches "mail.example.com" but not
 * "example.com" or "foo.bar.example.com"".
 */
static void test_mx_match(void **state)
{
    static const struct {
        const char *host;
        int match;
    } table[] = {
        {"mail.example.com", 1},    {"MAIL.Example.COM", 1},
        {"mail.example.com.", 1},   {"example.com", 0},
        {"foo.bar.example.com", 0}, {".example.com", 0},
        {"mailexample.com", 0},     {"mx1.example.net", 1},
        {"MX1.EXAMPLE.NET.", 1},    {"mx2.example.net", 0},
        {"a.mx1.example.net", 0},   {"x.mail.example.org", 1},
        {"mail.example.org", 0},    {"", 0},
        {"mail.example.com..", 0},  {"m ail.example.com", 0},
    };
    struct sts_policy p;

    (void)state;
    parse_ok("version: STSv1\nmode: enforce\nmx: *.example.com\n"
             "mx: mx1.example.net.\nmx: *.MAIL.example.org\nmax_age: 10\n",
             &p);
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (sts_mx_match(&p, table[i].host) != table[i].match)
            fail_msg("sts_mx_match(%s) is not %d", table[i].host,
                     table[i].match);
    assert_int_equal(sts_mx_match(NULL, "mail.example.com"), 0);
    sts_policy_clear(&p);
}

/* The cache's rules, with a TXT lookup and a clock of the test's own. */

struct fx {
    struct event_base *base;
    char dir[64];
    struct spool_config scf;
    struct spool *sp;
    struct sts_config cf;
    struct sts *s;
    int64_t now;
    /* the TXT lookup */
    int txt_status;
    const char *txt[4];
    size_t ntxt;
    int txt_sync; /* answer from inside the call */
    int txt_hold; /* answer only when the test says */
    long txt_calls;
    char txt_name[300];
    sts_txt_done_fn *held_done;
    void *held_ctx;
    /* what the callback got */
    int calls;
    int got_policy;
    struct sts_policy policy;
    char why[WHY];
    char log[WHY];
    int logs;
};

static int64_t fx_clock(void *ctx)
{
    return ((struct fx *)ctx)->now;
}

static void fx_log(void *ctx, const char *text)
{
    struct fx *f = ctx;

    f->logs++;
    snprintf(f->log, sizeof(f->log), "%s", text);
}

struct later {
    struct fx *f;
    sts_txt_done_fn *done;
    void *ctx;
};

static void txt_answer(struct fx *f, sts_txt_done_fn *done, void *ctx)
{
    done(ctx, f->txt_status, f->txt, f->ntxt);
}

static void txt_later(evutil_socket_t fd, short what, void *arg)
{
    struct later *l = arg;

    (void)fd;
    (void)what;
    txt_answer(l->f, l->done, l->ctx);
    free(l);
}

static int fx_txt(void *ctx, const char *name, sts_txt_done_fn *done,
                  void *lookup_ctx)
{
    struct fx *f = ctx;
    struct later *l;
    struct timeval zero = {0, 0};

    f->txt_calls++;
    snprintf(f->txt_name, sizeof(f->txt_name), "%s", name);
    if (f->txt_hold) {
        f->held_done = done;
        f->held_ctx = lookup_ctx;
    } else if (f->txt_sync) {
        txt_answer(f, done, lookup_ctx);
    } else {
        l = malloc(sizeof(*l));
        *l = (struct later){f, done, lookup_ctx};
        event_base_once(f->base, -1, EV_TIMEOUT, txt_later, l, &zero);
    }
    return 0;
}

/* A loopback port where nothing listens: every fetch fails at once. */
static int dead_port(void)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
    port = ntohs(sin.sin_port);
    close(fd);
    return port;
}

static void fx_open_spool(struct fx *f)
{
    char why[WHY];

    if (spool_open(&f->sp, &f->scf, SPOOL_CREATE, why, sizeof(why)) < 0)
        fail_msg("spool_open: %s", why);
    f->cf.spool = f->sp;
}

static void fx_start(struct fx *f)
{
    char why[WHY];

    if ((f->s = sts_create(&f->cf, why, sizeof(why))) == NULL)
        fail_msg("sts_create: %s", why);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));

    f->base = event_base_new();
    snprintf(f->dir, sizeof(f->dir), "/tmp/sluice-sts.XXXXXX");
    if (mkdtemp(f->dir) == NULL)
        return -1;
    f->scf.queue_directory = f->dir;
    f->scf.map_size = 1 << 20;
    f->now = 1700000000;
    f->txt_status = STS_TXT_NONE;
    f->cf.base = f->base;
    f->cf.txt = fx_txt;
    f->cf.txt_ctx = f;
    f->cf.clock = fx_clock;
    f->cf.clock_ctx = f;
    f->cf.log = fx_log;
    f->cf.log_ctx = f;
    f->cf.host_override = "127.0.0.1";
    f->cf.port = dead_port();
    f->cf.fetch_timeout_ms = 2000;
    f->cf.refresh_interval = -1;
    fx_open_spool(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];

    sts_free(f->s);
    spool_close(f->sp);
    sts_policy_clear(&f->policy);
    event_base_free(f->base);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static void got(void *ctx, const struct sts_policy *p, const char *why)
{
    struct fx *f = ctx;

    f->calls++;
    sts_policy_clear(&f->policy);
    f->got_policy = p != NULL;
    if (p)
        sts_policy_copy(&f->policy, p);
    snprintf(f->why, sizeof(f->why), "%s", why ? why : "");
}

/* Ask for domain and run the loop until the answer came. */
static void ask(struct fx *f, const char *domain)
{
    int before = f->calls;

    assert_int_equal(sts_policy_get(f->s, domain, got, f), 0);
    assert_int_equal(f->calls, before); /* never from inside the call */
    while (f->calls == before)
        event_base_loop(f->base, EVLOOP_ONCE);
}

/* Put a policy in the spool as the cache writes it. */
static void seed(struct fx *f, const char *domain, const char *id,
                 int64_t fetched, const char *mode, int64_t max_age)
{
    char key[300], val[512], why[WHY];

    snprintf(key, sizeof(key), "sts:%s", domain);
    snprintf(val, sizeof(val),
             "fetched: %lld\nid: %s\n\nversion: STSv1\nmode: %s\n"
             "mx: mx.%s\nmax_age: %lld\n",
             (long long)fetched, id, mode, domain, (long long)max_age);
    if (spool_meta_put(f->sp, key, val, strlen(val), why, sizeof(why)) < 0)
        fail_msg("spool_meta_put: %s", why);
}

static struct sts_stats stats(struct fx *f)
{
    struct sts_stats st;

    sts_stats(f->s, &st);
    return st;
}

/* "no TXT and no cached policy: no policy", and nothing fetched. */
static void test_no_txt_no_policy(void **state)
{
    struct fx *f = *state;

    fx_start(f);
    ask(f, "Example.COM.");
    assert_string_equal(f->txt_name, "_mta-sts.example.com");
    assert_int_equal(f->got_policy, 0);
    assert_string_equal(f->why, "no MTA-STS policy: no valid TXT record at "
                                "_mta-sts.example.com");
    f->txt_status = STS_TXT_TEMPFAIL;
    ask(f, "example.com");
    assert_int_equal(f->got_policy, 0);
    assert_string_equal(f->why, "no MTA-STS policy: no answer for TXT "
                                "_mta-sts.example.com");
    assert_int_equal(stats(f).fetches, 0);
    assert_int_equal(sts_policy_get(f->s, "not a domain", got, f), -1);
    assert_int_equal(sts_policy_get(f->s, "a..b", got, f), -1);
    assert_int_equal(sts_policy_get(f->s, "", got, f), -1);
}

/* Several v=STSv1 records: as if there were none (section 3.1). */
static void test_several_txt_records(void **state)
{
    struct fx *f = *state;

    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=one";
    f->txt[1] = "v=STSv1; id=two";
    f->ntxt = 2;
    ask(f, "a.test");
    assert_int_equal(f->got_policy, 0);
    assert_string_equal(f->why, "no MTA-STS policy: no valid TXT record at "
                                "_mta-sts.a.test");
    assert_int_equal(stats(f).fetches, 0);
}

/*
 * "if no "live" policy can be discovered via DNS or fetched via HTTPS,
 * but a valid (non-expired) policy exists in the sender's cache, the
 * sender MUST apply that cached policy": a TXT record gone, or a lookup
 * that fails, does not switch a cached policy off.
 */
static void test_cached_without_txt(void **state)
{
    struct fx *f = *state;

    seed(f, "a.test", "id1", f->now - 100, "enforce", 86400);
    fx_start(f);
    assert_int_equal(stats(f).cached, 1);
    ask(f, "a.test");
    assert_int_equal(f->got_policy, 1);
    assert_int_equal(f->policy.mode, STS_ENFORCE);
    assert_string_equal(f->policy.id, "id1");
    assert_int_equal(f->policy.fetched, f->now - 100);
    assert_string_equal(f->policy.mx[0], "mx.a.test");
    assert_string_equal(f->why, "");
    f->txt_status = STS_TXT_TEMPFAIL;
    ask(f, "a.test");
    assert_int_equal(f->got_policy, 1);
    assert_int_equal(stats(f).cache_hits, 2);
    assert_int_equal(stats(f).fetches, 0);
}

/* The same id: the cached policy, no fetch. */
static void test_cached_same_id(void **state)
{
    struct fx *f = *state;

    seed(f, "a.test", "id1", f->now - 100, "testing", 86400);
    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=id1";
    f->ntxt = 1;
    f->txt_sync = 1; /* an answer from inside the TXT call: still later */
    ask(f, "a.test");
    assert_int_equal(f->got_policy, 1);
    assert_int_equal(f->policy.mode, STS_TESTING);
    assert_int_equal(stats(f).fetches, 0);
    assert_int_equal(stats(f).cache_hits, 1);
}

/*
 * A new id: refetch; when that fails the cached policy stays in use,
 * with the reason; the same id is not fetched again for retry_delay.
 */
static void test_new_id_fetch_fails(void **state)
{
    struct fx *f = *state;

    seed(f, "a.test", "id1", f->now - 100, "enforce", 86400);
    f->cf.retry_delay = 60;
    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=id2";
    f->ntxt = 1;
    ask(f, "a.test");
    assert_int_equal(stats(f).fetches, 1);
    assert_int_equal(stats(f).fetches_failed, 1);
    assert_int_equal(f->got_policy, 1);
    assert_string_equal(f->policy.id, "id1");
    assert_non_null(strstr(f->why, "cached MTA-STS policy used: "
                                   "https://mta-sts.a.test/.well-known/"
                                   "mta-sts.txt: "));
    f->now += 59;
    ask(f, "a.test");
    assert_int_equal(stats(f).fetches, 1);
    assert_int_equal(f->got_policy, 1);
    assert_non_null(strstr(f->why, "cached MTA-STS policy used: "));
    f->now += 1;
    ask(f, "a.test");
    assert_int_equal(stats(f).fetches, 2);
    assert_int_equal(f->got_policy, 1);
    assert_string_equal(f->policy.id, "id1");
    assert_int_equal(f->logs, 0); /* not a refresh: nothing logged */
}

/*
 * "If a valid TXT record is found but no policy can be fetched via HTTPS
 * (for any reason), and there is no valid (non-expired) previously
 * cached policy, senders MUST continue with delivery as though the
 * domain has not implemented MTA-STS."
 */
static void test_txt_fetch_fails_no_cache(void **state)
{
    struct fx *f = *state;

    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=id1";
    f->ntxt = 1;
    ask(f, "b.test");
    assert_int_equal(f->got_policy, 0);
    assert_non_null(strstr(f->why, "no MTA-STS policy: https://mta-sts.b.test"
                                   "/.well-known/mta-sts.txt: "));
    assert_int_equal(stats(f).fetches_failed, 1);
    assert_int_equal(stats(f).cached, 0);
}

/* An expired policy is never used, and leaves the cache and the spool. */
static void test_expired(void **state)
{
    struct fx *f = *state;
    char why[WHY];
    void *val;
    size_t len;

    seed(f, "a.test", "id1", f->now - 1000, "enforce", 1000); /* just now */
    seed(f, "b.test", "id1", f->now - 100, "enforce", 1000);
    fx_start(f);
    assert_int_equal(stats(f).cached, 1); /* a.test dropped at load */
    f->now += 899;                        /* b.test's last second */
    ask(f, "b.test");
    assert_int_equal(f->got_policy, 1);
    f->now += 1;
    ask(f, "b.test");
    assert_int_equal(f->got_policy, 0);
    assert_int_equal(stats(f).cached, 0);
    sts_free(f->s);
    f->s = NULL;
    spool_close(f->sp); /* the queued deletes are written */
    fx_open_spool(f);
    assert_int_equal(
        spool_meta_get(f->sp, "sts:a.test", &val, &len, why, sizeof(why)), -1);
    assert_int_equal(
        spool_meta_get(f->sp, "sts:b.test", &val, &len, why, sizeof(why)), -1);
}

/* A record that cannot be read is dropped, and said so. */
static void test_corrupt_record(void **state)
{
    static const char no_mode[] = "fetched: 1\nid: x\n\nversion: STSv1\n";
    struct fx *f = *state;
    char why[WHY];

    assert_int_equal(
        spool_meta_put(f->sp, "sts:a.test", "garbage", 7, why, sizeof(why)), 0);
    assert_int_equal(spool_meta_put(f->sp, "sts:b.test", no_mode,
                                    strlen(no_mode), why, sizeof(why)),
                     0);
    fx_start(f);
    assert_int_equal(stats(f).cached, 0);
    assert_int_equal(f->logs, 2);
    assert_string_equal(f->log, "MTA-STS: cached policy sts:b.test dropped: "
                                "no mode");
}

/* Lookups of one domain that overlap share one TXT lookup. */
static void test_shared_lookup(void **state)
{
    struct fx *f = *state;
    struct fx other = {0};

    fx_start(f);
    assert_int_equal(sts_policy_get(f->s, "a.test", got, f), 0);
    assert_int_equal(sts_policy_get(f->s, "A.TEST.", got, &other), 0);
    while (f->calls == 0 || other.calls == 0)
        event_base_loop(f->base, EVLOOP_ONCE);
    assert_int_equal(f->txt_calls, 1);
    assert_int_equal(f->calls, 1);
    assert_int_equal(other.calls, 1);
    assert_string_equal(other.why, f->why);
    ask(f, "a.test"); /* after the answer: a new lookup */
    assert_int_equal(f->txt_calls, 2);
}

/* done may ask again at once. */
static void got_and_ask(void *ctx, const struct sts_policy *p, const char *why)
{
    struct fx *f = ctx;

    got(ctx, p, why);
    if (f->calls == 1)
        assert_int_equal(sts_policy_get(f->s, "a.test", got, f), 0);
}

static void test_ask_from_done(void **state)
{
    struct fx *f = *state;

    fx_start(f);
    assert_int_equal(sts_policy_get(f->s, "a.test", got_and_ask, f), 0);
    while (f->calls < 2)
        event_base_loop(f->base, EVLOOP_ONCE);
    assert_int_equal(f->txt_calls, 2);
}

/* sts_free() answers what is outstanding; a late TXT answer is harmless. */
static void test_free_outstanding(void **state)
{
    struct fx *f = *state;

    fx_start(f);
    f->txt_hold = 1;
    assert_int_equal(sts_policy_get(f->s, "a.test", got, f), 0);
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    assert_int_equal(f->calls, 0);
    sts_free(f->s);
    f->s = NULL;
    assert_int_equal(f->calls, 1);
    assert_int_equal(f->got_policy, 0);
    assert_string_equal(f->why, "MTA-STS: shut down");
    f->held_done(f->held_ctx, STS_TXT_NONE, NULL, 0);
    assert_int_equal(f->calls, 1);
}

/*
 * "MTAs SHOULD proactively refresh cached policies before they expire;
 * a suggested refresh frequency is once per day. ... MTAs SHOULD alert
 * administrators (through the use of logs or similar) when such
 * attempts fail, unless the cached policy mode is "none"."
 */
static void test_refresh_due(void **state)
{
    struct fx *f = *state;

    seed(f, "a.test", "id1", f->now, "enforce", 7 * 86400);
    seed(f, "b.test", "id1", f->now, "none", 7 * 86400);
    seed(f, "c.test", "id1", f->now, "enforce", 3600);
    f->cf.refresh_interval = 0; /* a day; the timer's tick is 300 s */
    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=id1"; /* the same id: fetched all the same */
    f->ntxt = 1;
    assert_int_equal(sts_refresh_due(f->s), 0);
    f->now += 1800; /* c.test: half its max_age */
    assert_int_equal(sts_refresh_due(f->s), 1);
    assert_string_equal(f->txt_name, "_mta-sts.c.test");
    while (stats(f).fetches_failed < 1)
        event_base_loop(f->base, EVLOOP_ONCE);
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    assert_int_equal(f->logs, 1);
    assert_non_null(strstr(f->log, "MTA-STS: policy refresh for c.test "
                                   "failed, cached policy kept: "));
    assert_int_equal(stats(f).cached, 3);
    f->now += 86400 - 1800; /* a day: all three; c.test has expired */
    assert_int_equal(sts_refresh_due(f->s), 2);
    while (stats(f).fetches_failed < 3)
        event_base_loop(f->base, EVLOOP_ONCE);
    event_base_loop(f->base, EVLOOP_NONBLOCK);
    assert_int_equal(f->logs, 2); /* b.test's mode is none: not logged */
    assert_non_null(strstr(f->log, "policy refresh for a.test failed"));
    assert_int_equal(stats(f).cached, 2);
    /* Failed just now: asked again, but not fetched before retry_delay. */
    assert_int_equal(sts_refresh_due(f->s), 2);
    for (int i = 0; i < 5; i++)
        event_base_loop(f->base, EVLOOP_NONBLOCK);
    assert_int_equal(f->txt_calls, 5);
    assert_int_equal(stats(f).fetches, 3);
    assert_int_equal(stats(f).cached, 2);
    assert_int_equal(f->calls, 0); /* nobody asked: nobody is told */
}

/* No spool: the cache is in memory only, and works the same. */
static void test_memory_only(void **state)
{
    struct fx *f = *state;

    f->cf.spool = NULL;
    fx_start(f);
    f->txt_status = STS_TXT_OK;
    f->txt[0] = "v=STSv1; id=id1";
    f->ntxt = 1;
    ask(f, "a.test");
    assert_int_equal(f->got_policy, 0);
    assert_int_equal(stats(f).fetches_failed, 1);
}

static void test_create_errors(void **state)
{
    struct fx *f = *state;
    struct sts_config cf = f->cf;
    char why[WHY];

    cf.txt = NULL;
    assert_null(sts_create(&cf, why, sizeof(why)));
    assert_string_equal(why, "MTA-STS: no event loop or no TXT lookup");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_valid),
        cmocka_unit_test(test_policy_unknown_keys),
        cmocka_unit_test(test_policy_invalid),
        cmocka_unit_test(test_txt_parse),
        cmocka_unit_test(test_txt_select),
        cmocka_unit_test(test_mx_match),
        cmocka_unit_test_setup_teardown(test_no_txt_no_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_several_txt_records, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cached_without_txt, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_cached_same_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_new_id_fetch_fails, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_txt_fetch_fails_no_cache, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expired, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ask_from_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_outstanding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refresh_due, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_only, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_errors, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
