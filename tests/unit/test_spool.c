/*
 * test_spool - the LMDB spool: storing, reading, listing, changing,
 * recovering, group commit, full maps and disks, bodies stored from a
 * file (the SMTP server's staging files), and the meta values other layers
 * keep there
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "spool_raw_fixture.h"

struct fixture {
    char dir[64];
    struct spool_config cf;
    struct spool *sp;
    char why[256];
};

static int setup(void **state)
{
    struct fixture *fx = calloc(1, sizeof(*fx));

    snprintf(fx->dir, sizeof(fx->dir), "/tmp/sluice-spool.XXXXXX");
    if (mkdtemp(fx->dir) == NULL)
        return -1;
    fx->cf.queue_directory = fx->dir;
    fx->cf.map_size = 1 << 20;
    if (spool_open(&fx->sp, &fx->cf, SPOOL_CREATE, fx->why, sizeof(fx->why)) <
        0) {
        fprintf(stderr, "%s\n", fx->why);
        return -1;
    }
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *fx = *state;
    char cmd[128];

    spool_close(fx->sp);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", fx->dir);
    if (system(cmd) != 0)
        return -1;
    free(fx);
    return 0;
}

static void reopen(struct fixture *fx, int flags)
{
    spool_close(fx->sp);
    fx->sp = NULL;
    if (spool_open(&fx->sp, &fx->cf, flags, fx->why, sizeof(fx->why)) < 0)
        fail_msg("reopen: %s", fx->why);
}

/* A message from sender with n recipients r0@x.test ... and a body. */
static struct spool_msg *make_msg(const char *sender, int n, const char *body)
{
    struct spool_msg *m = spool_msg_new();
    char addr[64];

    m->sender = strdup(sender);
    m->body = strdup(body);
    for (int i = 0; i < n; i++) {
        snprintf(addr, sizeof(addr), "r%d@x.test", i);
        assert_int_equal(spool_msg_add_rcpt(m, addr, NULL, 0, NULL), 0);
    }
    return m;
}

static void store(struct fixture *fx, struct spool_msg *m)
{
    if (spool_store(fx->sp, m, fx->why, sizeof(fx->why)) < 0)
        fail_msg("store: %s", fx->why);
}

static int count_cb(void *ctx, const struct spool_msg *m)
{
    (void)m;
    (*(int *)ctx)++;
    return 0;
}

static int count(struct fixture *fx, enum spool_index index)
{
    int n = 0;

    assert_int_equal(
        spool_list(fx->sp, index, count_cb, &n, fx->why, sizeof(fx->why)), 0);
    return n;
}

/* Everything a message has comes back as it went in. */
static void test_store_and_get(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m = spool_msg_new(), *got;
    static const char alphabet[] = "0123456789ABCDEFGHJKLMNPQRSTVWXZ";

    m->sender = strdup("alice@a.test");
    m->envid = strdup("ENV-1");
    m->ret = SPOOL_RET_HDRS;
    m->arrival = 1700000000123456;
    m->body = strdup("Subject: hi\r\n\r\nhello\r\n");
    spool_msg_add_rcpt(m, "bob@b.test", "Bob@B.test",
                       SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE,
                       "rfc822;Bob@B.test");
    spool_msg_add_rcpt(m, "carol@c.test", NULL, SPOOL_NOTIFY_NEVER, NULL);
    store(fx, m);
    assert_int_equal(strlen(m->id), 14);
    assert_int_equal(strspn(m->id, alphabet), 14);

    assert_int_equal(spool_get(fx->sp, m->id, &got,
                               SPOOL_GET_RCPTS | SPOOL_GET_BODY, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_string_equal(got->id, m->id);
    assert_string_equal(got->sender, "alice@a.test");
    assert_string_equal(got->envid, "ENV-1");
    assert_int_equal(got->ret, SPOOL_RET_HDRS);
    assert_int_equal(got->state, SPOOL_INCOMING);
    assert_int_equal(got->arrival, 1700000000123456);
    assert_true(got->created > 1700000000000000);
    assert_int_equal(got->size, 22);
    assert_int_equal(got->attempts, 0);
    assert_int_equal(got->nrcpt, 2);
    assert_string_equal(got->rcpt[0].address, "bob@b.test");
    assert_string_equal(got->rcpt[0].orig, "Bob@B.test");
    assert_string_equal(got->rcpt[0].orcpt, "rfc822;Bob@B.test");
    assert_int_equal(got->rcpt[0].notify,
                     SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE);
    assert_int_equal(got->rcpt[0].status, SPOOL_RCPT_PENDING);
    assert_string_equal(got->rcpt[1].address, "carol@c.test");
    assert_null(got->rcpt[1].orig);
    assert_null(got->rcpt[1].orcpt);
    assert_int_equal(got->rcpt[1].notify, SPOOL_NOTIFY_NEVER);
    assert_string_equal(got->body, "Subject: hi\r\n\r\nhello\r\n");
    assert_int_equal(got->smtputf8, 0); /* a record without the field */
    spool_msg_free(got);
    spool_msg_free(m);

    /* SMTPUTF8 (RFC 6531) asked for, and a UTF-8 envelope. */
    m = make_msg("\xc3\xa9@a.test", 1, "Subject: x\r\n\r\ny\r\n");
    m->smtputf8 = 1;
    store(fx, m);
    assert_int_equal(
        spool_get(fx->sp, m->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->smtputf8, 1);
    assert_string_equal(got->sender, "\xc3\xa9@a.test");
    spool_msg_free(got);
    spool_msg_free(m);

    /* The null sender, and a binary body with a given size. */
    m = spool_msg_new();
    m->sender = strdup("");
    m->body = malloc(5);
    memcpy(m->body, "a\0b\0c", 5);
    m->size = 5;
    spool_msg_add_rcpt(m, "x@y.test", NULL, 0, NULL);
    store(fx, m);
    assert_int_equal(spool_get(fx->sp, m->id, &got, SPOOL_GET_BODY, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_string_equal(got->sender, "");
    assert_int_equal(got->size, 5);
    assert_memory_equal(got->body, "a\0b\0c", 5);
    assert_null(got->rcpt);
    spool_msg_free(got);
    spool_msg_free(m);
}

/* "Queue ids: unique, printable, roughly time-ordered, short". */
static void test_ids_unique_and_ordered(void **state)
{
    struct fixture *fx = *state;
    char prev[SPOOL_ID_MAX + 1] = "";

    for (int i = 0; i < 300; i++) {
        struct spool_msg *m = make_msg("a@a.test", 1, "x\r\n");

        store(fx, m);
        assert_true(strcmp(m->id, prev) > 0);
        memcpy(prev, m->id, sizeof(prev));
        spool_msg_free(m);
    }
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 300);
}

static void test_get_unknown(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m;

    assert_int_equal(
        spool_get(fx->sp, "NOSUCHID", &m, 0, fx->why, sizeof(fx->why)), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(fx->why, "NOSUCHID: no such message");
    assert_null(m);
}

/* "Recipients can be read in batches from any position". */
static void test_recipient_batches(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m = make_msg("a@a.test", 100, "x\r\n");
    struct spool_rcpt *r;
    uint32_t n;

    store(fx, m);
    assert_int_equal(
        spool_rcpts(fx->sp, m->id, 37, 10, &r, &n, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(n, 10);
    assert_string_equal(r[0].address, "r37@x.test");
    assert_string_equal(r[9].address, "r46@x.test");
    spool_rcpts_free(r, n);
    assert_int_equal(
        spool_rcpts(fx->sp, m->id, 95, 10, &r, &n, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(n, 5);
    assert_string_equal(r[4].address, "r99@x.test");
    spool_rcpts_free(r, n);
    assert_int_equal(
        spool_rcpts(fx->sp, m->id, 100, 10, &r, &n, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(n, 0);
    spool_msg_free(m);
}

struct order {
    char ids[8][SPOOL_ID_MAX + 1];
    int n;
};

static int order_cb(void *ctx, const struct spool_msg *m)
{
    struct order *o = ctx;

    snprintf(o->ids[o->n++], sizeof(o->ids[0]), "%s", m->id);
    return o->n == 8;
}

struct keys {
    char ids[8][SPOOL_ID_MAX + 1];
    int64_t when[8];
    int n;
};

static int keys_cb(void *ctx, const char *id, int64_t when)
{
    struct keys *k = ctx;

    snprintf(k->ids[k->n], sizeof(k->ids[0]), "%s", id);
    k->when[k->n++] = when;
    return k->n == 8;
}

/* "Indices to list incoming mail in arrival order, deferred mail by due
 * time": updates move messages between them. */
static void test_indices_and_updates(void **state)
{
    struct fixture *fx = *state;
    const int64_t arrival[3] = {3000, 1000, 2000};
    char ids[3][SPOOL_ID_MAX + 1];
    struct spool_change ch = {0};
    struct spool_result res[2];
    struct order o = {0};
    struct spool_msg *got;

    for (int i = 0; i < 3; i++) {
        struct spool_msg *m = make_msg("a@a.test", 2, "x\r\n");

        m->arrival = arrival[i];
        store(fx, m);
        snprintf(ids[i], sizeof(ids[i]), "%s", m->id);
        spool_msg_free(m);
    }
    spool_list(fx->sp, SPOOL_INDEX_INCOMING, order_cb, &o, fx->why,
               sizeof(fx->why));
    assert_int_equal(o.n, 3);
    assert_string_equal(o.ids[0], ids[1]);
    assert_string_equal(o.ids[1], ids[2]);
    assert_string_equal(o.ids[2], ids[0]);
    {
        /* The same order from the index alone, with the times. */
        struct keys k = {0};

        assert_int_equal(spool_list_index(fx->sp, SPOOL_INDEX_INCOMING, keys_cb,
                                          &k, fx->why, sizeof(fx->why)),
                         0);
        assert_int_equal(k.n, 3);
        assert_string_equal(k.ids[0], ids[1]);
        assert_int_equal(k.when[0], arrival[1]);
        assert_string_equal(k.ids[2], ids[0]);
        assert_int_equal(k.when[2], arrival[0]);
    }

    /* Defer two, due at 500 and 200; record recipient results. */
    ch.has_state = 1;
    ch.state = SPOOL_DEFERRED;
    ch.has_next_attempt = 1;
    ch.next_attempt = 500;
    ch.has_attempts = 1;
    ch.attempts = 1;
    res[0] = (struct spool_result){0,
                                   SPOOL_RCPT_DELIVERED,
                                   250,
                                   "2.0.0 ok",
                                   0,
                                   0,
                                   "TLSv1.3:TLS_AES_256_GCM_SHA384:Verified"};
    res[1] = (struct spool_result){
        1, SPOOL_RCPT_DEFERRED, 451, "4.3.0 try later", 0, 0, NULL};
    ch.results = res;
    ch.nresults = 2;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    ch.next_attempt = 200;
    ch.nresults = 0;
    assert_int_equal(
        spool_update(fx->sp, ids[1], &ch, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 1);
    memset(&o, 0, sizeof(o));
    spool_list(fx->sp, SPOOL_INDEX_DEFERRED, order_cb, &o, fx->why,
               sizeof(fx->why));
    assert_int_equal(o.n, 2);
    assert_string_equal(o.ids[0], ids[1]);
    {
        struct keys k = {0};

        assert_int_equal(spool_list_index(fx->sp, SPOOL_INDEX_DEFERRED, keys_cb,
                                          &k, fx->why, sizeof(fx->why)),
                         0);
        assert_int_equal(k.n, 2);
        assert_string_equal(k.ids[0], ids[1]);
        assert_int_equal(k.when[0], 200);
        assert_int_equal(k.when[1], 500);
    }
    assert_string_equal(o.ids[1], ids[0]);

    assert_int_equal(spool_get(fx->sp, ids[0], &got, SPOOL_GET_RCPTS, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_int_equal(got->state, SPOOL_DEFERRED);
    assert_int_equal(got->next_attempt, 500);
    assert_int_equal(got->attempts, 1);
    assert_int_equal(got->rcpt[0].status, SPOOL_RCPT_DELIVERED);
    assert_int_equal(got->rcpt[0].code, 250);
    assert_string_equal(got->rcpt[0].reason, "2.0.0 ok");
    /* the attempt's TLS, for the notices (issue 17) */
    assert_string_equal(got->rcpt[0].tls,
                        "TLSv1.3:TLS_AES_256_GCM_SHA384:Verified");
    assert_int_equal(got->rcpt[1].status, SPOOL_RCPT_DEFERRED);
    assert_string_equal(got->rcpt[1].reason, "4.3.0 try later");
    assert_null(got->rcpt[1].tls);
    spool_msg_free(got);

    /*
     * Which notices a recipient's sender has had: flags are added, never
     * taken away, and a notice-only result leaves the outcome alone.
     */
    memset(&ch, 0, sizeof(ch));
    res[0] = (struct spool_result){1, SPOOL_RCPT_DEFERRED, 0, NULL, 0, 0, NULL};
    res[0].notified = SPOOL_NOTIFIED_DELAY;
    res[0].notified_only = 1;
    ch.results = res;
    ch.nresults = 1;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    res[0] = (struct spool_result){
        1, SPOOL_RCPT_BOUNCED, 550, "5.1.1 gone", 0, 0, NULL};
    res[0].notified = SPOOL_NOTIFIED_FAILURE;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(spool_get(fx->sp, ids[0], &got, SPOOL_GET_RCPTS, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_int_equal(got->rcpt[1].status, SPOOL_RCPT_BOUNCED);
    assert_int_equal(got->rcpt[1].code, 550);
    assert_string_equal(got->rcpt[1].reason, "5.1.1 gone");
    assert_int_equal(got->rcpt[1].notified,
                     SPOOL_NOTIFIED_DELAY | SPOOL_NOTIFIED_FAILURE);
    assert_int_equal(got->rcpt[0].notified, 0);
    res[0] = (struct spool_result){1, SPOOL_RCPT_PENDING, 0, NULL, 0, 0, NULL};
    res[0].notified = SPOOL_NOTIFIED_SUCCESS;
    res[0].notified_only = 1;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    spool_msg_free(got);
    assert_int_equal(spool_get(fx->sp, ids[0], &got, SPOOL_GET_RCPTS, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_int_equal(got->rcpt[1].status, SPOOL_RCPT_BOUNCED);
    assert_string_equal(got->rcpt[1].reason, "5.1.1 gone");
    assert_int_equal(got->rcpt[1].notified, SPOOL_NOTIFIED_DELAY |
                                                SPOOL_NOTIFIED_FAILURE |
                                                SPOOL_NOTIFIED_SUCCESS);
    spool_msg_free(got);

    /* Hold remembers where it came from; it leaves every index. */
    memset(&ch, 0, sizeof(ch));
    ch.has_state = 1;
    ch.state = SPOOL_HOLD;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(count(fx, SPOOL_INDEX_DEFERRED), 1);
    assert_int_equal(
        spool_get(fx->sp, ids[0], &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_HOLD);
    assert_int_equal(got->held_from, SPOOL_DEFERRED);
    spool_msg_free(got);

    /*
     * keep_hold: the queue manager's state change for a message that an
     * operator held meanwhile goes to held_from; the message stays held.
     */
    memset(&ch, 0, sizeof(ch));
    ch.has_state = 1;
    ch.state = SPOOL_DEFERRED;
    ch.has_next_attempt = 1;
    ch.next_attempt = 900;
    ch.keep_hold = 1;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(
        spool_get(fx->sp, ids[0], &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_HOLD);
    assert_int_equal(got->held_from, SPOOL_DEFERRED);
    assert_int_equal(got->next_attempt, 900);
    spool_msg_free(got);
    assert_int_equal(count(fx, SPOOL_INDEX_DEFERRED), 1);
    memset(&ch, 0, sizeof(ch));
    ch.has_state = 1;
    ch.state = SPOOL_HOLD;

    /* A result for a recipient that does not exist is refused whole. */
    res[0] =
        (struct spool_result){7, SPOOL_RCPT_DELIVERED, 250, "ok", 0, 0, NULL};
    ch.results = res;
    ch.nresults = 1;
    ch.state = SPOOL_INCOMING;
    assert_int_equal(
        spool_update(fx->sp, ids[0], &ch, fx->why, sizeof(fx->why)), -1);
    assert_string_equal(
        fx->why, strcat(strcpy((char[64]){0}, ids[0]), ": no such recipient"));
    assert_int_equal(
        spool_get(fx->sp, ids[0], &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_HOLD);
    spool_msg_free(got);

    /* Delete: gone from everything. */
    assert_int_equal(spool_delete(fx->sp, ids[1], fx->why, sizeof(fx->why)), 0);
    assert_int_equal(count(fx, SPOOL_INDEX_DEFERRED), 0);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 2);
    assert_int_equal(
        spool_get(fx->sp, ids[1], &got, 0, fx->why, sizeof(fx->why)), -1);
    assert_int_equal(spool_delete(fx->sp, ids[1], fx->why, sizeof(fx->why)),
                     -1);
}

/* Group commit: many submitters, few commits, every callback. */
struct submitted {
    pthread_mutex_t lock;
    int ok, failed;
};

static void submitted_cb(void *ctx, struct spool_msg *m, int status,
                         const char *why)
{
    struct submitted *s = ctx;

    (void)why;
    pthread_mutex_lock(&s->lock);
    if (status == 0 && strlen(m->id) == 14)
        s->ok++;
    else
        s->failed++;
    pthread_mutex_unlock(&s->lock);
    spool_msg_free(m);
}

static void *submitter(void *arg)
{
    struct fixture *fx = arg;

    for (int i = 0; i < 20; i++) {
        struct spool_msg *m = make_msg("t@a.test", 3, "threaded\r\n");
        char why[256];

        if (spool_store(fx->sp, m, why, sizeof(why)) < 0)
            fail_msg("%s", why);
        spool_msg_free(m);
    }
    return NULL;
}

static void test_group_commit(void **state)
{
    struct fixture *fx = *state;
    struct submitted s = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    struct spool_stats st;
    pthread_t t[64];

    for (int i = 0; i < 100; i++)
        assert_int_equal(spool_submit(fx->sp,
                                      make_msg("s@a.test", 2, "body\r\n"),
                                      submitted_cb, &s),
                         0);
    reopen(fx, 0); /* closing waits for the committer */
    assert_int_equal(s.ok, 100);
    assert_int_equal(s.failed, 0);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 100);

    for (int i = 0; i < 64; i++)
        pthread_create(&t[i], NULL, submitter, fx);
    for (int i = 0; i < 64; i++)
        pthread_join(t[i], NULL);
    spool_stats(fx->sp, &st);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 100 + 64 * 20);
    /* 1280 synchronous stores by 64 threads share commits. */
    assert_true(st.commits < 1280);
}

/* "many messages and state changes share one write transaction": queued
 * changes and deletes commit with new messages; one that cannot be
 * applied fails alone and leaves nothing behind. */
struct change_seen {
    pthread_mutex_t lock;
    int n;
    char ids[8][SPOOL_ID_MAX + 1];
    int status[8];
    char why[8][128];
};

static void change_cb(void *ctx, const char *id, int status, const char *why)
{
    struct change_seen *c = ctx;

    pthread_mutex_lock(&c->lock);
    snprintf(c->ids[c->n], sizeof(c->ids[0]), "%s", id);
    c->status[c->n] = status;
    snprintf(c->why[c->n], sizeof(c->why[0]), "%s", why ? why : "");
    c->n++;
    pthread_mutex_unlock(&c->lock);
}

static void test_queued_changes(void **state)
{
    struct fixture *fx = *state;
    struct change_seen c = {PTHREAD_MUTEX_INITIALIZER, 0, {{0}}, {0}, {{0}}};
    struct submitted s = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    struct spool_msg *a = make_msg("a@a.test", 2, "a\r\n");
    struct spool_msg *b = make_msg("b@a.test", 1, "b\r\n");
    struct spool_msg *d = make_msg("d@a.test", 1, "d\r\n"), *got;
    struct spool_result res[2] = {
        {0, SPOOL_RCPT_DELIVERED, 250, "2.0.0 ok", 0, 0,
         "TLSv1.3:TLS_AES_128_GCM_SHA256:Trusted"},
        {5, SPOOL_RCPT_BOUNCED, 550, "5.1.1 no", 0, 0, NULL},
    };
    struct spool_change defer = {1,   SPOOL_DEFERRED, 1, 777, 1, 1, 1, res, 0,
                                 NULL};
    struct spool_change bad = {1, SPOOL_DEFERRED, 0, 0, 0, 0, 2, res, 0, NULL};
    char why[128];

    store(fx, a);
    store(fx, b);
    store(fx, d);
    /* Queued together, they share the committer's next batches. */
    assert_int_equal(spool_submit_change(fx->sp, a->id, &defer, change_cb, &c),
                     0);
    assert_int_equal(spool_submit_delete(fx->sp, b->id, change_cb, &c), 0);
    assert_int_equal(
        spool_submit_change(fx->sp, "NOSUCHID", &defer, change_cb, &c), 0);
    assert_int_equal(spool_submit_change(fx->sp, d->id, &bad, change_cb, &c),
                     0);
    assert_int_equal(spool_submit(fx->sp, make_msg("n@a.test", 1, "n\r\n"),
                                  submitted_cb, &s),
                     0);
    reopen(fx, 0);
    assert_int_equal(c.n, 4);
    assert_int_equal(s.ok, 1);
    assert_string_equal(c.ids[0], a->id);
    assert_int_equal(c.status[0], 0);
    assert_int_equal(c.status[1], 0);
    assert_string_equal(c.ids[2], "NOSUCHID");
    assert_int_equal(c.status[2], -1);
    assert_string_equal(c.why[2], "NOSUCHID: no such message");
    assert_int_equal(c.status[3], -1);
    snprintf(why, sizeof(why), "%s: no such recipient", d->id);
    assert_string_equal(c.why[3], why);
    /* a changed; b gone; d untouched (its first result not applied). */
    assert_int_equal(spool_get(fx->sp, a->id, &got, SPOOL_GET_RCPTS, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_int_equal(got->state, SPOOL_DEFERRED);
    assert_int_equal(got->next_attempt, 777);
    assert_int_equal(got->rcpt[0].status, SPOOL_RCPT_DELIVERED);
    spool_msg_free(got);
    assert_int_equal(
        spool_get(fx->sp, b->id, &got, 0, fx->why, sizeof(fx->why)), -1);
    assert_int_equal(spool_get(fx->sp, d->id, &got, SPOOL_GET_RCPTS, fx->why,
                               sizeof(fx->why)),
                     0);
    assert_int_equal(got->state, SPOOL_INCOMING);
    assert_int_equal(got->rcpt[0].status, SPOOL_RCPT_PENDING);
    spool_msg_free(got);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 3);
    assert_int_equal(count(fx, SPOOL_INDEX_DEFERRED), 1);
    spool_msg_free(a);
    spool_msg_free(b);
    spool_msg_free(d);
}

/* "A reader listing the queue while writers commit": every listing is a
 * consistent snapshot, every message in it complete, and it only grows. */
struct lister {
    struct fixture *fx;
    int done;
};

static void *writer(void *arg)
{
    struct lister *l = arg;

    for (int i = 0; i < 400; i++) {
        struct spool_msg *m = make_msg("w@a.test", 1 + i % 7, "w\r\n");
        char why[256];

        if (spool_store(l->fx->sp, m, why, sizeof(why)) < 0)
            fail_msg("%s", why);
        spool_msg_free(m);
    }
    __atomic_store_n(&l->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

struct seen {
    struct spool *sp;
    int n, bad;
};

static int check_cb(void *ctx, const struct spool_msg *listed)
{
    struct seen *s = ctx;
    struct spool_msg *m;
    char why[256];

    s->n++;
    if (spool_get(s->sp, listed->id, &m, SPOOL_GET_RCPTS | SPOOL_GET_BODY, why,
                  sizeof(why)) < 0 ||
        m->nrcpt != listed->nrcpt || strcmp(m->body, "w\r\n") != 0)
        s->bad++;
    else
        spool_msg_free(m);
    return 0;
}

static void test_list_while_writing(void **state)
{
    struct fixture *fx = *state;
    struct lister l = {fx, 0};
    pthread_t t;
    int last = 0, listings = 0;

    pthread_create(&t, NULL, writer, &l);
    while (!__atomic_load_n(&l.done, __ATOMIC_SEQ_CST)) {
        struct seen s = {fx->sp, 0, 0};

        assert_int_equal(spool_list(fx->sp, SPOOL_INDEX_INCOMING, check_cb, &s,
                                    fx->why, sizeof(fx->why)),
                         0);
        assert_int_equal(s.bad, 0);
        assert_true(s.n >= last);
        last = s.n;
        listings++;
        /* Let the writer run: under valgrind threads take turns. */
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    pthread_join(t, NULL);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 400);
    assert_true(listings > 1);
}

/* Start-up recovery: active goes back to incoming. */
static void test_recover_active(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m = make_msg("a@a.test", 1, "x\r\n"), *got;
    struct spool_change ch = {0};
    struct spool_recovery rec;

    store(fx, m);
    ch.has_state = 1;
    ch.state = SPOOL_ACTIVE;
    assert_int_equal(spool_update(fx->sp, m->id, &ch, fx->why, sizeof(fx->why)),
                     0);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 0);
    assert_int_equal(spool_recover(fx->sp, &rec, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(rec.active_to_incoming, 1);
    assert_int_equal(rec.corrupt, 0);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 1);
    assert_int_equal(
        spool_get(fx->sp, m->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_INCOMING);
    spool_msg_free(got);
    spool_msg_free(m);
}

/* "A record that cannot be decoded moves the message to corrupt with the
 * reason; nothing is deleted silently." */
static void test_recover_corrupt(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *a = make_msg("a@a.test", 2, "x\r\n");
    struct spool_msg *b = make_msg("b@a.test", 2, "y\r\n");
    struct spool_msg *c = make_msg("c@a.test", 1, "zzzz\r\n");
    struct spool_msg *got;
    struct spool_recovery rec;
    unsigned char key[20] = {0};

    store(fx, a);
    store(fx, b);
    store(fx, c);
    spool_close(fx->sp);
    fx->sp = NULL;
    /* a's envelope is junk; b's second recipient is junk. */
    memcpy(key, a->id, strlen(a->id));
    raw_put(fx->dir, "msg", key, 16, "\x01\x01\xff\xff\xff", 5);
    memset(key, 0, sizeof(key));
    memcpy(key, b->id, strlen(b->id));
    key[19] = 1;
    raw_put(fx->dir, "rcpt", key, 20, "\x07junk", 5);
    /* c's body lost its end. */
    memset(key, 0, sizeof(key));
    memcpy(key, c->id, strlen(c->id));
    raw_put(fx->dir, "body", key, 16, "zz", 2);
    reopen(fx, 0);

    assert_int_equal(
        spool_get(fx->sp, a->id, &got, 0, fx->why, sizeof(fx->why)), -1);
    assert_int_equal(errno, EILSEQ);
    assert_int_equal(spool_recover(fx->sp, &rec, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(rec.corrupt, 3);
    assert_int_equal(
        spool_get(fx->sp, c->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_string_equal(got->corrupt_reason, "body: 2 bytes, expected 6");
    spool_msg_free(got);
    assert_int_equal(
        spool_get(fx->sp, a->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_string_equal(got->corrupt_reason,
                        "envelope record: field 1: length past the end");
    spool_msg_free(got);
    assert_int_equal(
        spool_get(fx->sp, b->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_true(strstr(got->corrupt_reason,
                       "corrupt recipient record 1: unknown record "
                       "version 7") != NULL);
    /* Nothing was deleted: b's first recipient and body are there. */
    assert_int_equal(got->nrcpt, 2);
    spool_msg_free(got);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 0);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 3);
    /* A second pass finds nothing more to do. */
    assert_int_equal(spool_recover(fx->sp, &rec, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(rec.corrupt + rec.active_to_incoming, 0);
    spool_msg_free(a);
    spool_msg_free(b);
    spool_msg_free(c);
}

/* Records that are missing, not garbled: a recipient, a body. */
static void test_recover_missing(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *d = make_msg("d@a.test", 2, "x\r\n");
    struct spool_msg *e = make_msg("e@a.test", 1, "y\r\n");
    struct spool_msg *got;
    struct spool_recovery rec;
    unsigned char key[20] = {0};

    store(fx, d);
    store(fx, e);
    spool_close(fx->sp);
    fx->sp = NULL;
    memcpy(key, d->id, strlen(d->id));
    key[19] = 1; /* d's second recipient */
    raw_put(fx->dir, "rcpt", key, 20, NULL, 0);
    memset(key, 0, sizeof(key));
    memcpy(key, e->id, strlen(e->id));
    raw_put(fx->dir, "body", key, 16, NULL, 0);
    reopen(fx, 0);

    assert_int_equal(spool_recover(fx->sp, &rec, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(rec.corrupt, 2);
    assert_int_equal(
        spool_get(fx->sp, d->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_string_equal(got->corrupt_reason, "1 recipient records, expected 2");
    spool_msg_free(got);
    assert_int_equal(
        spool_get(fx->sp, e->id, &got, 0, fx->why, sizeof(fx->why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_string_equal(got->corrupt_reason, "body: missing");
    spool_msg_free(got);
    spool_msg_free(d);
    spool_msg_free(e);
}

/* "the map size is configurable and grows when needed; when ... the map
 * is full, the submitter gets a temporary failure with a clear reason,
 * the store stays consistent, and nothing already stored is harmed". */
static void test_map_grows_then_full(void **state)
{
    struct fixture *fx = *state;
    char *big = malloc(100001);
    char ids[64][SPOOL_ID_MAX + 1];
    struct spool_stats st;
    int stored = 0;

    memset(big, 'x', 100000);
    big[100000] = 0;
    fx->cf.map_size_limit = 3 << 20;
    reopen(fx, 0);
    for (int i = 0; i < 64; i++) {
        struct spool_msg *m = make_msg("a@a.test", 1, big);
        int rc = spool_store(fx->sp, m, fx->why, sizeof(fx->why));

        if (rc == 0)
            snprintf(ids[stored++], sizeof(ids[0]), "%s", m->id);
        spool_msg_free(m);
        if (rc < 0)
            break;
    }
    spool_stats(fx->sp, &st);
    assert_int_equal(st.map_size, 3 << 20);
    assert_true(stored > 12); /* more than fit in the first 1 MB */
    assert_true(stored < 64);
    assert_string_equal(fx->why, "spool full: the map reached "
                                 "queue_map_size_limit (3145728 bytes)");
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), stored);
    for (int i = 0; i < stored; i++) {
        struct spool_msg *got;

        assert_int_equal(spool_get(fx->sp, ids[i], &got, SPOOL_GET_BODY,
                                   fx->why, sizeof(fx->why)),
                         0);
        assert_int_equal(got->size, 100000);
        assert_string_equal(got->body, big);
        spool_msg_free(got);
    }
    free(big);
}

/* The database file never shrinks: what deleted messages occupied is
 * free inside it, and spool_free_bytes() counts it, so that a spool
 * that was filled and then emptied is not taken for a full one. */
/* The process's resident file-backed pages (RssFile), in kB. */
static long rss_file_kb(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;

    assert_non_null(fp);
    while (fgets(line, sizeof(line), fp))
        if (sscanf(line, "RssFile: %ld kB", &kb) == 1)
            break;
    fclose(fp);
    return kb;
}

/*
 * Issue 16: "peak resident memory (under 150 MB at 100,000 queued)". The
 * pages of the map a process has read count in its resident size until
 * spool_map_release() lets them go: reading 20 MB of bodies maps 20 MB,
 * and after the release they are no longer the process's (the data are
 * still there, read again through the page cache).
 */
static void test_map_release(void **state)
{
    struct fixture *fx = *state;
    char *big = malloc(200001);
    char ids[100][SPOOL_ID_MAX + 1];
    long before, read_all, released;

    memset(big, 'y', 200000);
    big[200000] = 0;
    for (int i = 0; i < 100; i++) {
        struct spool_msg *m = make_msg("a@a.test", 1, big);

        if (spool_store(fx->sp, m, fx->why, sizeof(fx->why)) != 0)
            fail_msg("store: %s", fx->why);
        snprintf(ids[i], sizeof(ids[0]), "%s", m->id);
        spool_msg_free(m);
    }
    spool_map_release(fx->sp);
    before = rss_file_kb();
    for (int i = 0; i < 100; i++) {
        struct spool_msg *m;

        if (spool_get(fx->sp, ids[i], &m, SPOOL_GET_BODY, fx->why,
                      sizeof(fx->why)) != 0)
            fail_msg("get: %s", fx->why);
        spool_msg_free(m);
    }
    read_all = rss_file_kb();
    spool_map_release(fx->sp);
    released = rss_file_kb();
    assert_true(read_all - before >= 15000); /* 20 MB of bodies mapped */
    assert_true(read_all - released >= 15000);
    for (int i = 0; i < 100; i++) {
        struct spool_msg *m;

        if (spool_get(fx->sp, ids[i], &m, SPOOL_GET_BODY, fx->why,
                      sizeof(fx->why)) != 0)
            fail_msg("get again: %s", fx->why);
        assert_int_equal(m->size, 200000);
        assert_memory_equal(m->body, big, 200000);
        spool_msg_free(m);
    }
    free(big);
}

static void test_free_bytes(void **state)
{
    struct fixture *fx = *state;
    char *big = malloc(100001);
    char ids[64][SPOOL_ID_MAX + 1], path[128];
    struct stat before, after;
    int stored = 0, again = 0;
    int64_t free_full, free_empty;

    memset(big, 'x', 100000);
    big[100000] = 0;
    fx->cf.map_size_limit = 3 << 20;
    reopen(fx, 0);
    for (int i = 0; i < 64; i++) {
        struct spool_msg *m = make_msg("a@a.test", 1, big);
        int rc = spool_store(fx->sp, m, fx->why, sizeof(fx->why));

        if (rc == 0)
            snprintf(ids[stored++], sizeof(ids[0]), "%s", m->id);
        spool_msg_free(m);
        if (rc < 0)
            break;
    }
    assert_true(stored > 12);
    free_full = spool_free_bytes(fx->sp);
    assert_true(free_full >= 0);
    assert_true(free_full < 200000); /* less than two messages' worth */
    for (int i = 0; i < stored; i++)
        assert_int_equal(spool_delete(fx->sp, ids[i], fx->why, sizeof(fx->why)),
                         0);
    snprintf(path, sizeof(path), "%s/db/data.mdb", fx->dir);
    assert_int_equal(stat(path, &before), 0);
    free_empty = spool_free_bytes(fx->sp);
    /* every body's pages are free, and no more than the file holds */
    assert_true(free_empty >= (int64_t)stored * 100000);
    assert_true(free_empty <= (int64_t)before.st_size);
    /* and they are reused: half as many again fit, the file does not
     * grow, and the free bytes go down by what they take */
    for (int i = 0; i < stored / 2; i++) {
        struct spool_msg *m = make_msg("a@a.test", 1, big);

        again += spool_store(fx->sp, m, fx->why, sizeof(fx->why)) == 0;
        spool_msg_free(m);
    }
    assert_int_equal(again, stored / 2);
    assert_int_equal(stat(path, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_true(spool_free_bytes(fx->sp) <=
                free_empty - (int64_t)(stored / 2) * 100000);
    free(big);
}

/* A full disk (here: the file size limit): temporary failure, nothing
 * harmed. */
static void test_disk_full(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m = make_msg("a@a.test", 1, "small\r\n");
    char path[128];
    struct stat st;
    pid_t pid;
    int status;

    store(fx, m);
    spool_close(fx->sp);
    fx->sp = NULL;
    snprintf(path, sizeof(path), "%s/db/data.mdb", fx->dir);
    assert_int_equal(stat(path, &st), 0);
    pid = fork();
    if (pid == 0) {
        struct rlimit rl = {(rlim_t)st.st_size + 4096,
                            (rlim_t)st.st_size + 4096};
        char *big = malloc(1 << 20);
        struct spool_msg *m2;
        char why[256];

        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        memset(big, 'y', (1 << 20) - 1);
        big[(1 << 20) - 1] = 0;
        m2 = make_msg("b@a.test", 1, big);
        if (spool_open(&fx->sp, &fx->cf, 0, why, sizeof(why)) < 0)
            _exit(2);
        if (spool_store(fx->sp, m2, why, sizeof(why)) == 0)
            _exit(3);
        spool_close(fx->sp);
        spool_msg_free(m2);
        spool_msg_free(m);
        free(big);
        free(fx);
        if (strcmp(why, "spool: commit: I/O error writing the spool (is the "
                        "disk full?)") != 0) {
            fprintf(stderr, "store failed with: %s\n", why);
            _exit(4);
        }
        _exit(0);
    }
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    reopen(fx, 0);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 1);
    {
        struct spool_msg *got;

        assert_int_equal(spool_get(fx->sp, m->id, &got, SPOOL_GET_BODY, fx->why,
                                   sizeof(fx->why)),
                         0);
        assert_string_equal(got->body, "small\r\n");
        spool_msg_free(got);
    }
    spool_msg_free(m);
}

/* ------------------------------------------------------- body files */

#define FILE_BODY (5u << 20) /* 5 MB: overflow pages, more than one write */

/* A body of n bytes that is not text: NULs, every byte value, no period. */
static char *body_bytes(size_t n, unsigned seed)
{
    char *b = malloc(n);

    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        b[i] = (char)(seed >> 16);
    }
    return b;
}

/* A staging file under the spool's directory holding n bytes of body. */
static int body_file(struct fixture *fx, const char *name, const char *body,
                     size_t n, char *path, size_t len)
{
    int fd;

    snprintf(path, len, "%s/%s", fx->dir, name);
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, body, n), (ssize_t)n);
    return fd;
}

/* What the callback saw: the status, and whether the file was gone. */
struct file_seen {
    pthread_mutex_t lock;
    int n, status[4], file_gone[4];
    char why[4][256];
};

static void file_cb(void *ctx, struct spool_msg *m, int status, const char *why)
{
    struct file_seen *f = ctx;
    struct stat st;

    pthread_mutex_lock(&f->lock);
    f->status[f->n] = status;
    /* the sender names the file the message had */
    f->file_gone[f->n] = stat(m->sender, &st) < 0 && errno == ENOENT;
    snprintf(f->why[f->n], sizeof(f->why[0]), "%s", why ? why : "");
    f->n++;
    pthread_mutex_unlock(&f->lock);
    spool_msg_free(m);
}

static void body_matches(struct fixture *fx, const char *id, const char *body,
                         size_t n)
{
    struct spool_msg *got;

    assert_int_equal(
        spool_get(fx->sp, id, &got, SPOOL_GET_BODY, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(got->size, n);
    assert_memory_equal(got->body, body, n);
    spool_msg_free(got);
}

/*
 * A body in a file is stored byte for byte, through the group commit
 * beside a body in memory, and the file is gone when the callback says
 * the message is durable.
 */
static void test_body_file(void **state)
{
    struct fixture *fx = *state;
    struct file_seen f = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}, {{0}}};
    char *body = body_bytes(FILE_BODY, 1), path[128], id[SPOOL_ID_MAX + 1];
    struct spool_msg *m = make_msg("", 2, "");
    struct spool_msg *small = make_msg("", 1, "in memory\r\n");
    int fd = body_file(fx, "staged", body, FILE_BODY, path, sizeof(path));

    free(m->sender);
    m->sender = strdup(path);
    free(small->sender);
    small->sender = strdup("/nonexistent/in-memory");
    spool_msg_body_file(m, fd, path, FILE_BODY);
    assert_null(m->body);
    spool_id_new(m->id, spool_now());
    snprintf(id, sizeof(id), "%s", m->id);
    assert_int_equal(spool_submit(fx->sp, m, file_cb, &f), 0);
    assert_int_equal(spool_submit(fx->sp, small, file_cb, &f), 0);
    reopen(fx, 0); /* closing waits for the committer */
    assert_int_equal(f.n, 2);
    assert_int_equal(f.status[0], 0);
    assert_int_equal(f.status[1], 0);
    assert_true(f.file_gone[0]);
    assert_int_equal(count(fx, SPOOL_INDEX_INCOMING), 2);
    body_matches(fx, id, body, FILE_BODY);
    free(body);
}

/*
 * A batch that fails (the map may not grow) removes the file too, and
 * stores nothing; a file shorter than its size fails its own message
 * alone; a message freed unsubmitted takes its file with it.
 */
static void test_body_file_failures(void **state)
{
    struct fixture *fx = *state;
    struct file_seen f = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}, {{0}}};
    char *body = body_bytes(FILE_BODY, 2), path[128], expect[300];
    struct spool_msg *m;
    struct stat st;
    int fd;

    fx->cf.map_size_limit = 1 << 20; /* 1 MB: the 5 MB body cannot fit */
    reopen(fx, 0);
    fd = body_file(fx, "too-big", body, FILE_BODY, path, sizeof(path));
    m = make_msg(path, 1, "");
    spool_msg_body_file(m, fd, path, FILE_BODY);
    assert_int_equal(spool_submit(fx->sp, m, file_cb, &f), 0);
    reopen(fx, 0);
    assert_int_equal(f.n, 1);
    assert_int_equal(f.status[0], -1);
    assert_string_equal(f.why[0], "spool full: the map reached "
                                  "queue_map_size_limit (1048576 bytes)");
    assert_true(f.file_gone[0]);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 0);

    /* a short file fails alone; the message beside it is stored */
    fd = body_file(fx, "short", body, 1000, path, sizeof(path));
    m = make_msg(path, 1, "");
    spool_msg_body_file(m, fd, path, 2000);
    assert_int_equal(spool_submit(fx->sp, m, file_cb, &f), 0);
    assert_int_equal(
        spool_submit(fx->sp, make_msg("/none", 1, "x\r\n"), file_cb, &f), 0);
    reopen(fx, 0);
    assert_int_equal(f.n, 3);
    assert_int_equal(f.status[1], -1);
    snprintf(expect, sizeof(expect),
             "staging file %s: 1000 bytes, expected 2000", path);
    assert_string_equal(f.why[1], expect);
    assert_true(f.file_gone[1]);
    assert_int_equal(f.status[2], 0);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 1);

    /* freed without being submitted */
    fd = body_file(fx, "unsubmitted", body, 10, path, sizeof(path));
    m = make_msg("", 1, "");
    spool_msg_body_file(m, fd, path, 10);
    spool_msg_free(m);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
    free(body);
}

/* spool_store() without a committer (sendmail's way) does the same. */
static void test_body_file_no_committer(void **state)
{
    struct fixture *fx = *state;
    char *body = body_bytes(FILE_BODY, 3), path[128];
    struct spool_msg *m = make_msg("s@a.test", 1, "");
    struct stat st;
    int fd = body_file(fx, "sync", body, FILE_BODY, path, sizeof(path));

    reopen(fx, SPOOL_NO_COMMITTER);
    spool_msg_body_file(m, fd, path, FILE_BODY);
    store(fx, m);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
    body_matches(fx, m->id, body, FILE_BODY);
    spool_msg_free(m);
    free(body);
}

/* Read-only: reading works, writing is refused with the reason. */
static void test_readonly(void **state)
{
    struct fixture *fx = *state;
    struct spool_msg *m = make_msg("a@a.test", 1, "x\r\n");

    store(fx, m);
    spool_msg_free(m);
    reopen(fx, SPOOL_READONLY);
    assert_int_equal(count(fx, SPOOL_INDEX_ALL), 1);
    m = make_msg("a@a.test", 1, "x\r\n");
    assert_int_equal(spool_store(fx->sp, m, fx->why, sizeof(fx->why)), -1);
    assert_string_equal(fx->why, "spool: opened read-only");
    spool_msg_free(m);
}

/* Who may not write the spool gets EACCES (sendmail uses the maildrop). */
static void test_not_writable(void **state)
{
    struct fixture *fx = *state;
    char db[128];
    pid_t pid;
    int status;

    /* As root, become nobody; otherwise take our own write permission. */
    snprintf(db, sizeof(db), "%s/db", fx->dir);
    spool_close(fx->sp); /* nothing of ours open in the child */
    fx->sp = NULL;
    if (geteuid() != 0)
        assert_int_equal(chmod(db, 0500), 0);
    pid = fork();
    if (pid == 0) {
        struct spool *sp;
        char why[256];

        if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
            _exit(2);
        if (spool_open(&sp, &fx->cf, 0, why, sizeof(why)) == 0)
            _exit(3);
        _exit(errno == EACCES && strstr(why, "Permission denied") ? 0 : 4);
    }
    waitpid(pid, &status, 0);
    chmod(db, 0700);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_open_missing(void **state)
{
    struct fixture *fx = *state;
    struct spool_config cf = {"/nonexistent/sluice", 1 << 20, 0};
    struct spool *sp;

    assert_int_equal(spool_open(&sp, &cf, 0, fx->why, sizeof(fx->why)), -1);
    assert_int_equal(errno, ENOENT);
    assert_string_equal(fx->why,
                        "spool: /nonexistent/sluice/db: No such file or "
                        "directory");
    assert_null(sp);
}

static int meta_collect(void *ctx, const char *key, const void *val, size_t len)
{
    char *out = ctx;

    strcat(out, key);
    strcat(out, "=");
    strncat(out, val, len);
    strcat(out, ";");
    return 0;
}

static int meta_first(void *ctx, const char *key, const void *val, size_t len)
{
    (void)val;
    (void)len;
    strcat(ctx, key);
    return 1;
}

/* Meta values: put, get, overwrite, list by prefix, delete, survive. */
static void test_meta(void **state)
{
    struct fixture *fx = *state;
    char listed[512] = "", key[SPOOL_META_KEY_MAX + 2];
    void *val;
    size_t len;

    assert_int_equal(spool_meta_put(fx->sp, "sts:b.test", "two", 3, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_int_equal(spool_meta_put(fx->sp, "sts:a.test", "one", 3, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_int_equal(
        spool_meta_put(fx->sp, "other:x", "\0bin", 4, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(spool_meta_put(fx->sp, "sts:a.test", "uno", 3, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_int_equal(spool_meta_get(fx->sp, "sts:a.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_int_equal(len, 3);
    assert_string_equal(val, "uno"); /* NUL added after the value */
    free(val);
    assert_int_equal(
        spool_meta_get(fx->sp, "other:x", &val, &len, fx->why, sizeof(fx->why)),
        0);
    assert_int_equal(len, 4);
    assert_memory_equal(val, "\0bin", 4);
    free(val);

    /* By prefix, in byte order; "" lists all; fn may stop the walk. */
    assert_int_equal(spool_meta_list(fx->sp, "sts:", meta_collect, listed,
                                     fx->why, sizeof(fx->why)),
                     0);
    assert_string_equal(listed, "sts:a.test=uno;sts:b.test=two;");
    listed[0] = 0;
    assert_int_equal(spool_meta_list(fx->sp, "", meta_first, listed, fx->why,
                                     sizeof(fx->why)),
                     0);
    assert_string_equal(listed, "other:x");

    /* Survives a reopen, and a read-only one. */
    reopen(fx, SPOOL_READONLY);
    listed[0] = 0;
    assert_int_equal(spool_meta_list(fx->sp, "sts:", meta_collect, listed,
                                     fx->why, sizeof(fx->why)),
                     0);
    assert_string_equal(listed, "sts:a.test=uno;sts:b.test=two;");
    assert_int_equal(
        spool_meta_put(fx->sp, "sts:c.test", "x", 1, fx->why, sizeof(fx->why)),
        -1);
    assert_string_equal(fx->why, "spool: opened read-only");
    reopen(fx, 0);

    /* Deleted, twice: the second finds nothing and says so by success. */
    assert_int_equal(
        spool_meta_delete(fx->sp, "sts:a.test", fx->why, sizeof(fx->why)), 0);
    assert_int_equal(
        spool_meta_delete(fx->sp, "sts:a.test", fx->why, sizeof(fx->why)), 0);
    assert_int_equal(spool_meta_get(fx->sp, "sts:a.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     -1);
    assert_int_equal(errno, ENOENT);
    assert_null(val);
    assert_string_equal(fx->why, "sts:a.test: not in the spool");

    /* Keys of 1 to SPOOL_META_KEY_MAX bytes. */
    assert_int_equal(
        spool_meta_put(fx->sp, "", "x", 1, fx->why, sizeof(fx->why)), -1);
    assert_string_equal(fx->why, "spool: meta key of 0 bytes (1 to 400)");
    memset(key, 'k', sizeof(key) - 1);
    key[sizeof(key) - 1] = 0;
    assert_int_equal(
        spool_meta_put(fx->sp, key, "x", 1, fx->why, sizeof(fx->why)), -1);
    assert_string_equal(fx->why, "spool: meta key of 401 bytes (1 to 400)");
    key[SPOOL_META_KEY_MAX] = 0;
    assert_int_equal(
        spool_meta_put(fx->sp, key, "x", 1, fx->why, sizeof(fx->why)), 0);
}

struct meta_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int calls, status;
    char key[64];
};

static void meta_done(void *ctx, const char *key, int status, const char *why)
{
    struct meta_wait *w = ctx;

    (void)why;
    pthread_mutex_lock(&w->lock);
    w->calls++;
    w->status = status;
    snprintf(w->key, sizeof(w->key), "%s", key);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/*
 * Queued meta writes ride the group commit with messages: done (if any)
 * from the committer, the value copied at once, and a close writes what
 * is queued.
 */
static void test_meta_submit(void **state)
{
    struct fixture *fx = *state;
    struct meta_wait w = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                          0, -1, ""};
    struct spool_msg *m = make_msg("a@a.test", 1, "x\r\n");
    char value[] = "policy one";
    void *val;
    size_t len;

    assert_int_equal(spool_meta_submit(fx->sp, "sts:a.test", value,
                                       strlen(value), meta_done, &w),
                     0);
    memcpy(value, "POLICY", 6); /* copied: this change is not stored */
    store(fx, m);
    spool_msg_free(m);
    pthread_mutex_lock(&w.lock);
    while (w.calls == 0)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    assert_int_equal(w.calls, 1);
    assert_int_equal(w.status, 0);
    assert_string_equal(w.key, "sts:a.test");
    assert_int_equal(spool_meta_get(fx->sp, "sts:a.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_string_equal(val, "policy one");
    free(val);

    /* Without done; NULL deletes; the close drains the queue. */
    assert_int_equal(
        spool_meta_submit(fx->sp, "sts:b.test", "b", 1, NULL, NULL), 0);
    assert_int_equal(
        spool_meta_submit(fx->sp, "sts:a.test", NULL, 0, NULL, NULL), 0);
    reopen(fx, 0);
    assert_int_equal(spool_meta_get(fx->sp, "sts:a.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     -1);
    assert_int_equal(spool_meta_get(fx->sp, "sts:b.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     0);
    assert_string_equal(val, "b");
    free(val);
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);

    /* One-shot programs and readers cannot queue. */
    reopen(fx, SPOOL_NO_COMMITTER);
    assert_int_equal(
        spool_meta_submit(fx->sp, "sts:c.test", "c", 1, NULL, NULL), -1);
}

/*
 * A spool made before the meta database existed: opened read-only it has
 * no values (and is not refused as "not a sluice spool"); opened for
 * writing it gets the database.
 */
static void test_meta_old_spool(void **state)
{
    struct fixture *fx = *state;
    char path[128], listed[64] = "";
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    void *val;
    size_t len;

    spool_close(fx->sp);
    fx->sp = NULL;
    snprintf(path, sizeof(path), "%s/db", fx->dir);
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
    assert_int_equal(mdb_env_open(env, path, 0, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "meta", 0, &dbi), 0);
    assert_int_equal(mdb_drop(txn, dbi, 1), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    reopen(fx, SPOOL_READONLY);
    assert_int_equal(spool_meta_list(fx->sp, "", meta_collect, listed, fx->why,
                                     sizeof(fx->why)),
                     0);
    assert_string_equal(listed, "");
    assert_int_equal(spool_meta_get(fx->sp, "sts:a.test", &val, &len, fx->why,
                                    sizeof(fx->why)),
                     -1);
    assert_int_equal(errno, ENOENT);
    reopen(fx, 0);
    assert_int_equal(
        spool_meta_put(fx->sp, "sts:a.test", "a", 1, fx->why, sizeof(fx->why)),
        0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_store_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ids_unique_and_ordered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_get_unknown, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recipient_batches, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_indices_and_updates, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_group_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queued_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_while_writing, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_recover_active, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recover_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_grows_then_full, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_free_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_map_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_disk_full, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_file_failures, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_body_file_no_committer, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_readonly, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_writable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_submit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_meta_old_spool, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
