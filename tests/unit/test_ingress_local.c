/*
 * NAME
 *	test_ingress_local 1 - unit tests of the submission socket
 * SYNOPSIS
 *	build/tests/test_ingress_local
 * DESCRIPTION
 *	Tests src/ingress/local.c: a server on a libevent loop in this
 *	thread, a client (local_submit(), or raw bytes) in another. A
 *	message goes through whole and comes out equal, with the client's
 *	uid; the answer waits for the store (ok, tempfail, none at all);
 *	no daemon is LOCAL_UNAVAILABLE; malformed requests, a record in
 *	another uid's name, extra bytes and oversized messages are refused
 *	with their reason; closing the server drops clients still sending
 *	and removes the socket; a store answer after the server is freed is
 *	harmless.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ingress/ingress.h"

#include <errno.h>
#include <event2/event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static char qdir[64];
static struct event_base *base;
static struct local_server *server;

/* What the store function does with a message. */
enum store_mode { STORE_OK, STORE_LATER, STORE_TEMPFAIL, STORE_NEVER };

static enum store_mode mode;
static struct spool_msg *got; /* the last message stored */
static uid_t got_uid;
static ingress_done_fn *late_done; /* STORE_NEVER: answered by the test */
static void *late_conn;
static char log_last[1024];

struct later {
    ingress_done_fn *done;
    void *conn;
    struct event *ev;
};

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
    struct later *l = arg;

    (void)fd;
    (void)what;
    l->done(l->conn, 0, "LATER1", NULL);
    event_free(l->ev);
    free(l);
}

static void store(void *ctx, struct spool_msg *m, uid_t uid,
                  ingress_done_fn *done, void *conn)
{
    struct timeval tv = {0, 100000};
    struct later *l;

    (void)ctx;
    spool_msg_free(got);
    got = m;
    got_uid = uid;
    switch (mode) {
    case STORE_OK:
        done(conn, 0, "Q123", NULL);
        break;
    case STORE_LATER:
        l = calloc(1, sizeof(*l));
        l->done = done;
        l->conn = conn;
        l->ev = evtimer_new(base, later_cb, l);
        evtimer_add(l->ev, &tv);
        break;
    case STORE_TEMPFAIL:
        done(conn, LOCAL_TEMPFAIL, NULL, "spool full");
        break;
    case STORE_NEVER:
        late_done = done;
        late_conn = conn;
        break;
    }
}

static char flush_domain[300];
static int flush_calls;
static const char *flush_failure; /* what the flush answers, if it fails */

static void flush(void *ctx, const struct smtp_node *node,
                  ingress_flushed_fn *done, void *conn)
{
    (void)ctx;
    flush_calls++;
    if (node != NULL)
        smtp_node_format(node, flush_domain, sizeof(flush_domain));
    else
        snprintf(flush_domain, sizeof(flush_domain), "*");
    done(conn, node ? 7 : 12, flush_failure);
}

static void server_log(void *ctx, const char *line)
{
    (void)ctx;
    snprintf(log_last, sizeof(log_last), "%s", line);
}

static void server_start(uint64_t size_limit)
{
    struct local_params p = {size_limit, server_log, NULL, flush};
    char why[512];

    server = local_server_create(base, qdir, &p, store, NULL, why, sizeof(why));
    if (server == NULL)
        fail_msg("local_server_create: %s", why);
}

/* ------------------------------------------------------ client thread */

struct client {
    /* local_flush(), when flush is set */
    int flush;
    const char *domain;
    long messages;
    /* local_submit() */
    struct spool_msg *m;
    int timeout_ms;
    int rc;
    char id[64];
    char why[512];
    /* raw: send these bytes, read the answer */
    const char *raw;
    size_t rawlen;
    int hold; /* raw: keep the connection open until the server closes */
    char answer[1024];
    atomic_int done;
};

static void *client_main(void *arg)
{
    struct client *c = arg;
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    ssize_t n, got_n = 0;
    int fd;

    if (c->flush) {
        c->rc = local_flush(qdir, c->domain, 5000, &c->messages, c->why,
                            sizeof(c->why));
        atomic_store(&c->done, 1);
        return NULL;
    }
    if (c->raw == NULL) {
        c->rc = local_submit(qdir, c->m, c->timeout_ms, c->id, sizeof(c->id),
                             c->why, sizeof(c->why));
        atomic_store(&c->done, 1);
        return NULL;
    }
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/%s", qdir, LOCAL_SOCKET);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        snprintf(c->answer, sizeof(c->answer), "connect: %s", strerror(errno));
    } else {
        (void)send(fd, c->raw, c->rawlen, MSG_NOSIGNAL);
        while ((n = recv(fd, c->answer + got_n,
                         sizeof(c->answer) - 1 - (size_t)got_n, 0)) > 0)
            got_n += n;
        c->answer[got_n] = 0;
    }
    close(fd);
    atomic_store(&c->done, 1);
    return NULL;
}

/* Run the loop until the client is done (at most 5 s). */
static void run_client(struct client *c)
{
    struct timeval tick = {0, 10000};
    pthread_t t;
    int i;

    atomic_store(&c->done, 0);
    assert_int_equal(pthread_create(&t, NULL, client_main, c), 0);
    for (i = 0; i < 500 && !atomic_load(&c->done); i++) {
        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
    pthread_join(t, NULL);
    assert_true(atomic_load(&c->done));
    /* Let the server finish with its side of the connection. */
    event_base_loopexit(base, &tick);
    event_base_dispatch(base);
}

static struct spool_msg *sample(size_t body_len)
{
    struct spool_msg *m = spool_msg_new();
    char *body = malloc(body_len + 1);

    for (size_t i = 0; i < body_len; i++)
        body[i] = (char)(i % 251 + 1);
    body[body_len] = 0;
    m->sender = strdup("alice@example.org");
    m->envid = strdup("env-1");
    m->ret = SPOOL_RET_HDRS;
    m->arrival = 1700000000000000;
    spool_msg_add_rcpt(m, "bob@a.test", "Bob@A.test", SPOOL_NOTIFY_SUCCESS,
                       "rfc822;Bob@A.test");
    spool_msg_add_rcpt(m, "carol@b.test", NULL, 0, NULL);
    m->body = body;
    m->size = body_len;
    return m;
}

/* Submit a sample message of body_len bytes through local_submit(). */
static void submit_sample(struct client *c, size_t body_len, int timeout_ms)
{
    c->m = sample(body_len);
    c->timeout_ms = timeout_ms;
    run_client(c);
}

/* ------------------------------------------------------------ fixture */

static int setup(void **state)
{
    (void)state;
    snprintf(qdir, sizeof(qdir), "/tmp/test_ingress_local.XXXXXX");
    if (mkdtemp(qdir) == NULL)
        return -1;
    base = event_base_new();
    mode = STORE_OK;
    got = NULL;
    log_last[0] = 0;
    return base ? 0 : -1;
}

static int teardown(void **state)
{
    char path[256];

    (void)state;
    local_server_free(server);
    server = NULL;
    spool_msg_free(got);
    got = NULL;
    event_base_free(base);
    snprintf(path, sizeof(path), "%s/%s", qdir, LOCAL_SOCKET);
    unlink(path);
    snprintf(path, sizeof(path), "%s/public", qdir);
    rmdir(path);
    rmdir(qdir);
    return 0;
}

/* -------------------------------------------------------------- tests */

static void test_round_trip(void **state)
{
    struct client c = {0};
    struct stat st;
    char path[256];

    (void)state;
    server_start(0);
    snprintf(path, sizeof(path), "%s/%s", qdir, LOCAL_SOCKET);
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0666);
    submit_sample(&c, 70000, 5000);
    assert_int_equal(c.rc, LOCAL_OK);
    assert_string_equal(c.id, "Q123");
    assert_non_null(got);
    assert_int_equal(got_uid, geteuid());
    assert_string_equal(got->sender, "alice@example.org");
    assert_string_equal(got->envid, "env-1");
    assert_int_equal(got->ret, SPOOL_RET_HDRS);
    assert_int_equal(got->arrival, 1700000000000000);
    assert_int_equal(got->nrcpt, 2);
    assert_string_equal(got->rcpt[0].address, "bob@a.test");
    assert_string_equal(got->rcpt[0].orig, "Bob@A.test");
    assert_string_equal(got->rcpt[0].orcpt, "rfc822;Bob@A.test");
    assert_int_equal(got->rcpt[0].notify, SPOOL_NOTIFY_SUCCESS);
    assert_string_equal(got->rcpt[1].address, "carol@b.test");
    assert_int_equal(got->size, 70000);
    assert_memory_equal(got->body, c.m->body, 70000);
    assert_int_equal(local_server_busy(server), 0);
    spool_msg_free(c.m);
}

static void test_answer_waits_for_store(void **state)
{
    struct client c = {0};

    (void)state;
    mode = STORE_LATER;
    server_start(0);
    submit_sample(&c, 10, 5000);
    assert_int_equal(c.rc, LOCAL_OK);
    assert_string_equal(c.id, "LATER1");
    spool_msg_free(c.m);
}

static void test_tempfail(void **state)
{
    struct client c = {0};

    (void)state;
    mode = STORE_TEMPFAIL;
    server_start(0);
    submit_sample(&c, 10, 5000);
    assert_int_equal(c.rc, LOCAL_TEMPFAIL);
    assert_string_equal(c.why, "spool full");
    spool_msg_free(c.m);
}

static void test_no_daemon(void **state)
{
    struct client c = {0};

    (void)state;
    submit_sample(&c, 10, 5000);
    assert_int_equal(c.rc, LOCAL_UNAVAILABLE);
    assert_non_null(strstr(c.why, "No such file or directory"));
    spool_msg_free(c.m);
}

static void test_no_answer(void **state)
{
    struct client c = {0};

    (void)state;
    mode = STORE_NEVER;
    server_start(0);
    submit_sample(&c, 10, 300);
    assert_int_equal(c.rc, LOCAL_NO_ANSWER);
    assert_non_null(strstr(c.why, "no answer within"));
    assert_int_equal(local_server_busy(server), 1);
    /* The store answers after the server is gone: nothing breaks. */
    local_server_free(server);
    server = NULL;
    late_done(late_conn, 0, "Q9", NULL);
    spool_msg_free(c.m);
}

/* A raw request; the answer must start with want. */
static void raw_request(const char *bytes, size_t len, const char *want)
{
    struct client c = {0};

    c.raw = bytes;
    c.rawlen = len;
    run_client(&c);
    if (strncmp(c.answer, want, strlen(want)) != 0)
        fail_msg("answer \"%s\", expected \"%s...\"", c.answer, want);
}

static void test_reject_malformed(void **state)
{
    static const char bad_line[] = "hello\n";
    static const char bad_len[] = "submit 012\n";
    static const char bad_rec[] = "submit 5\nhello";
    static const char huge[] = "submit 99999999999\n";

    (void)state;
    server_start(1000);
    raw_request(bad_line, strlen(bad_line),
                "reject malformed request line: expected \"submit LENGTH\"\n");
    raw_request(bad_len, strlen(bad_len), "reject malformed request line");
    raw_request(bad_rec, strlen(bad_rec), "reject malformed message record: ");
    assert_non_null(strstr(log_last, "rejected: malformed message record"));
    raw_request(huge, strlen(huge),
                "reject message too big: 99999999999 bytes, the limit is "
                "16778216\n");
    assert_null(got);
}

static void test_reject_other_uid(void **state)
{
    struct spool_msg *m = sample(10);
    char *rec, *req, uidline[64], want[128];
    size_t len, reqlen;
    char why[256];

    (void)state;
    server_start(0);
    assert_int_equal(maildrop_format(m, &rec, &len, why, sizeof(why)), 0);
    /* Claim another uid: same length, so the record stays well formed. */
    snprintf(uidline, sizeof(uidline), "\nuid %lu\n", (unsigned long)geteuid());
    char *at = strstr(rec, uidline);
    assert_non_null(at);
    for (char *p = at + 5; *p != '\n'; p++)
        *p = *p == '9' ? '8' : '9';
    req = malloc(len + 64);
    reqlen = (size_t)sprintf(req, "submit %zu\n", len);
    memcpy(req + reqlen, rec, len);
    snprintf(want, sizeof(want),
             "reject malformed message record: uid %.*s in the file, but the "
             "file belongs to uid %lu\n",
             (int)strcspn(at + 5, "\n"), at + 5, (unsigned long)geteuid());
    raw_request(req, reqlen + len, want);
    assert_null(got);
    free(req);
    free(rec);
    spool_msg_free(m);
}

static void test_reject_extra_and_too_big(void **state)
{
    struct spool_msg *m = sample(10);
    struct client c = {0};
    char *rec, *req, why[256];
    size_t len, reqlen;

    (void)state;
    server_start(1000);
    assert_int_equal(maildrop_format(m, &rec, &len, why, sizeof(why)), 0);
    req = malloc(len + 64);
    reqlen = (size_t)sprintf(req, "submit %zu\n", len - 4);
    memcpy(req + reqlen, rec, len);
    raw_request(req, reqlen + len, "reject 4 bytes more than the ");
    assert_null(got);
    /* Within the request limit, but the body is over the size limit. */
    submit_sample(&c, 1001, 5000);
    assert_int_equal(c.rc, LOCAL_REJECT);
    assert_string_equal(c.why,
                        "message too big: 1001 bytes, the limit is 1000");
    assert_null(got);
    spool_msg_free(c.m);
    free(req);
    free(rec);
    spool_msg_free(m);
}

/* Flush requests reach the flush function with their domain, or none. */
static void test_flush(void **state)
{
    static const char bad[] = "flush bad domain!\n";
    static const char worse[] = "flushing\n";
    struct client c = {0};

    (void)state;
    flush_calls = 0;
    server_start(0);
    c.flush = 1;
    c.domain = "a.test";
    run_client(&c);
    assert_int_equal(c.rc, LOCAL_OK);
    assert_int_equal(c.messages, 7);
    assert_string_equal(flush_domain, "a.test");
    c.domain = NULL;
    run_client(&c);
    assert_int_equal(c.rc, LOCAL_OK);
    assert_int_equal(c.messages, 12);
    assert_string_equal(flush_domain, "*");
    assert_int_equal(flush_calls, 2);
    raw_request(bad, strlen(bad), "reject malformed domain for flush\n");
    raw_request(worse, strlen(worse),
                "reject malformed request line: expected \"flush [DOMAIN]\"\n");
    assert_int_equal(flush_calls, 2);
}

/*
 * Issue 14: a domain over 312 bytes hung the client for 60 s and then
 * answered wrongly; a malformed one went to the daemon. Both ends check
 * the domain (a domain, .domain or an address literal, at most 255
 * bytes) at once, the client before it connects.
 */
static void test_flush_bad_domains(void **state)
{
    static const char *const bad[] = {
        "a b.test", "a\tb.test",  "x..test",  "",
        ".",        "[192.0.2.1", "a@b.test", "\x01.test",
    };
    char longname[400], raw[500];
    struct client c = {0};
    struct timeval t0, t1;

    (void)state;
    flush_calls = 0;
    server_start(0);
    memset(longname, 'a', 313);
    longname[313] = 0;
    for (int i = 0; i < 4; i++)
        longname[60 * (i + 1)] = '.';
    c.flush = 1;
    c.domain = longname;
    gettimeofday(&t0, NULL);
    run_client(&c);
    gettimeofday(&t1, NULL);
    assert_int_equal(c.rc, LOCAL_REJECT);
    assert_string_equal(c.why, "malformed domain for flush: a domain, "
                               ".domain or [address], at most 255 bytes");
    assert_true(t1.tv_sec - t0.tv_sec < 2);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        c.domain = bad[i];
        run_client(&c);
        assert_int_equal(c.rc, LOCAL_REJECT);
    }
    c.domain = ".Sub.Example";
    run_client(&c);
    assert_int_equal(c.rc, LOCAL_OK);
    c.domain = "[192.0.2.1]";
    run_client(&c);
    assert_int_equal(c.rc, LOCAL_OK);
    assert_int_equal(flush_calls, 2);
    /* the daemon checks too, for clients other than ours */
    snprintf(raw, sizeof(raw), "flush %s\n", longname);
    raw_request(raw, strlen(raw), "reject malformed domain for flush\n");
    raw_request("flush a..b\n", 11, "reject malformed domain for flush\n");
    assert_int_equal(flush_calls, 2);
}

/* Issue 14: a flush whose changes could not be written is a failure. */
static void test_flush_failure(void **state)
{
    struct client c = {0};

    (void)state;
    server_start(0);
    flush_failure = "spool full: the map reached queue_map_size_limit";
    c.flush = 1;
    c.domain = "a.test";
    run_client(&c);
    flush_failure = NULL;
    assert_int_equal(c.rc, LOCAL_TEMPFAIL);
    assert_string_equal(c.why,
                        "spool full: the map reached queue_map_size_limit");
}

/* The server's side of a close, run from the loop while a client waits. */
static void close_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    local_server_close(server);
}

static void test_close_drops_senders(void **state)
{
    static const char partial[] = "submit 100\nsluice-maildrop 1\n";
    struct timeval tv = {0, 200000};
    struct event *ev;
    struct client c = {0};
    struct stat st;
    char path[256];

    (void)state;
    server_start(0);
    ev = evtimer_new(base, close_cb, NULL);
    evtimer_add(ev, &tv);
    c.raw = partial;
    c.rawlen = strlen(partial);
    run_client(&c);
    event_free(ev);
    assert_string_equal(c.answer, ""); /* dropped: no answer, no store */
    assert_null(got);
    snprintf(path, sizeof(path), "%s/%s", qdir, LOCAL_SOCKET);
    assert_int_equal(stat(path, &st), -1);
    assert_int_equal(errno, ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answer_waits_for_store, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_tempfail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_daemon, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_answer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reject_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reject_other_uid, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reject_extra_and_too_big, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_close_drops_senders, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_flush_bad_domains, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_flush_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flush, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
