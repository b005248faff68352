/*
 * test_cluster_conn - the connection to Redis (src/cluster/conn.c,
 * decision 117): requests and replies paired in order over a real Unix
 * socket whose server side is the test's, replies split across reads,
 * error replies, AUTH first and refused, a reply after its command was
 * given up on, a free from inside a callback, and hostile peers (a reply
 * to no command, bytes that are not RESP, a close).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "cluster/cluster_impl.h"

struct fixture {
    struct event_base *base;
    char path[108];
    int listener, peer; /* the test's server side */
    struct cluster_conn *cn;
    char got[16][64]; /* each reply as text, in the order they came */
    int ngot, nlost;
    char lost[300];
    int free_in_reply; /* the first reply frees the connection */
};

static void pump(struct fixture *f)
{
    for (int i = 0; i < 20; i++) {
        event_base_loop(f->base, EVLOOP_NONBLOCK);
        usleep(1000);
    }
}

static void on_reply(void *arg, const redisReply *r)
{
    struct fixture *f = arg;
    char *t = f->got[f->ngot++];

    if (r == NULL)
        snprintf(t, 64, "NULL");
    else if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
        snprintf(t, 64, "%s", r->str);
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(t, 64, "error %s", r->str);
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(t, 64, "%lld", r->integer);
    else
        snprintf(t, 64, "type %d", r->type);
    if (r != NULL && f->free_in_reply) {
        f->free_in_reply = 0;
        cluster_conn_free(f->cn);
        f->cn = NULL;
    }
}

static void on_lost(void *ctx, const char *why)
{
    struct fixture *f = ctx;

    f->nlost++;
    snprintf(f->lost, sizeof(f->lost), "%s", why);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct sockaddr_un un = {.sun_family = AF_UNIX};

    f->base = event_base_new();
    snprintf(f->path, sizeof(f->path), "/tmp/test_cluster_conn.%ld",
             (long)getpid());
    unlink(f->path);
    snprintf(un.sun_path, sizeof(un.sun_path), "%s", f->path);
    f->listener = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(f->listener, (struct sockaddr *)&un, sizeof(un)), 0);
    assert_int_equal(listen(f->listener, 4), 0);
    f->peer = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    cluster_conn_free(f->cn);
    if (f->peer >= 0)
        close(f->peer);
    close(f->listener);
    unlink(f->path);
    event_base_free(f->base);
    free(f);
    return 0;
}

/* Connect with URL's user and password; the server side accepts. */
static void open_conn(struct fixture *f, const char *user, const char *pw)
{
    struct cluster_url u = {.unix_socket = 1};
    char why[300] = "";

    snprintf(u.path, sizeof(u.path), "%s", f->path);
    snprintf(u.user, sizeof(u.user), "%s", user);
    snprintf(u.password, sizeof(u.password), "%s", pw);
    f->cn = cluster_conn_open(f->base, &u, NULL, NULL, on_lost, f, why,
                              sizeof(why));
    assert_non_null(f->cn);
    pump(f);
    f->peer = accept(f->listener, NULL, NULL);
    assert_true(f->peer >= 0);
}

static void send_cmd(struct fixture *f, const char *a, const char *b)
{
    const char *argv[2] = {a, b};
    size_t len[2] = {strlen(a), b ? strlen(b) : 0};

    cluster_conn_send(f->cn, b ? 2 : 1, argv, len, on_reply, f);
}

/* What the server side has been sent so far. */
static void peer_read(struct fixture *f, char *buf, size_t len)
{
    ssize_t n;

    pump(f);
    n = recv(f->peer, buf, len - 1, MSG_DONTWAIT);
    buf[n > 0 ? n : 0] = '\0';
}

static void peer_write(struct fixture *f, const char *s, size_t len)
{
    assert_int_equal(write(f->peer, s, len), (ssize_t)len);
    pump(f);
}

/* AUTH USER PASSWORD goes first; replies split anywhere reach their
 * commands in order; an error reply is a reply like any other. */
static void test_pairs_in_order(void **state)
{
    struct fixture *f = *state;
    static const char reply[] = "$1\r\nx\r\n-ERR no such\r\n:5\r\n";
    char buf[512];

    open_conn(f, "alice", "pw");
    send_cmd(f, "GET", "a");
    send_cmd(f, "HEXISTS", "b");
    send_cmd(f, "PING", NULL);
    peer_read(f, buf, sizeof(buf));
    assert_string_equal(buf, "*3\r\n$4\r\nAUTH\r\n$5\r\nalice\r\n$2\r\npw\r\n"
                             "*2\r\n$3\r\nGET\r\n$1\r\na\r\n"
                             "*2\r\n$7\r\nHEXISTS\r\n$1\r\nb\r\n"
                             "*1\r\n$4\r\nPING\r\n");
    peer_write(f, "+OK\r\n$1\r", 8); /* AUTH's, then half of GET's */
    assert_int_equal(f->ngot, 0);
    for (size_t i = 3; i < sizeof(reply) - 1; i++) /* a byte a read */
        peer_write(f, reply + i, 1);
    assert_int_equal(f->ngot, 3);
    assert_string_equal(f->got[0], "x");
    assert_string_equal(f->got[1], "error ERR no such");
    assert_string_equal(f->got[2], "5");
    assert_int_equal(f->nlost, 0);
}

/* A refused AUTH is the connection's end, with Redis's words: the reply
 * after it in the same read is not delivered; the commands waiting get
 * NULL when it is freed, and only then. */
static void test_auth_refused(void **state)
{
    struct fixture *f = *state;
    char buf[512];
    static const char no[] =
        "-WRONGPASS invalid username-password pair\r\n+PONG\r\n";

    open_conn(f, "", "bad");
    send_cmd(f, "PING", NULL);
    peer_read(f, buf, sizeof(buf));
    assert_string_equal(buf, "*2\r\n$4\r\nAUTH\r\n$3\r\nbad\r\n"
                             "*1\r\n$4\r\nPING\r\n");
    peer_write(f, no, sizeof(no) - 1);
    assert_int_equal(f->nlost, 1);
    assert_string_equal(f->lost, "WRONGPASS invalid username-password pair");
    assert_int_equal(f->ngot, 0);
    cluster_conn_free(f->cn);
    f->cn = NULL;
    assert_int_equal(f->ngot, 1);
    assert_string_equal(f->got[0], "NULL");
}

/* Given up on (the caller's timeout): its callback gets NULL once, the
 * late reply goes nowhere, and a new connection pairs its own. */
static void test_reply_after_timeout(void **state)
{
    struct fixture *f = *state;

    open_conn(f, "", "");
    send_cmd(f, "EVAL", "x");
    pump(f);
    cluster_conn_free(f->cn); /* the sync's timeout */
    f->cn = NULL;
    assert_int_equal(f->ngot, 1);
    assert_string_equal(f->got[0], "NULL");
    (void)!write(f->peer, ":1\r\n", 4); /* late: the socket is closed */
    close(f->peer);
    f->peer = -1;
    pump(f);
    assert_int_equal(f->ngot, 1);
    assert_int_equal(f->nlost, 0);
    open_conn(f, "", "");
    send_cmd(f, "PING", NULL);
    pump(f);
    peer_write(f, "+PONG\r\n", 7);
    assert_int_equal(f->ngot, 2);
    assert_string_equal(f->got[1], "PONG");
}

/* Freed from inside a reply's callback: the replies after it in the same
 * read are not delivered, the commands waiting get NULL. */
static void test_free_in_callback(void **state)
{
    struct fixture *f = *state;

    open_conn(f, "", "");
    send_cmd(f, "A", NULL);
    send_cmd(f, "B", NULL);
    pump(f);
    f->free_in_reply = 1;
    peer_write(f, ":1\r\n:2\r\n", 8);
    assert_null(f->cn);
    assert_int_equal(f->ngot, 2);
    assert_string_equal(f->got[0], "1");
    assert_string_equal(f->got[1], "NULL");
    assert_int_equal(f->nlost, 0);
}

/* Hostile peers: each ends the connection with a reason, once. */
static void hostile(struct fixture *f, const char *bytes, size_t len,
                    int command, const char *why)
{
    open_conn(f, "", "");
    if (command)
        send_cmd(f, "PING", NULL);
    pump(f);
    if (bytes != NULL)
        peer_write(f, bytes, len);
    else {
        char buf[64];

        peer_read(f, buf, sizeof(buf)); /* read: a close, not a reset */
        close(f->peer);
        f->peer = -1;
        pump(f);
    }
    assert_int_equal(f->nlost, 1);
    assert_string_equal(f->lost, why);
    cluster_conn_free(f->cn);
    f->cn = NULL;
    if (f->peer >= 0)
        close(f->peer);
    f->peer = -1;
    assert_int_equal(f->ngot, command); /* PING's: NULL, at the free */
    f->nlost = f->ngot = 0;
}

static void test_hostile(void **state)
{
    struct fixture *f = *state;
    static char garbage[4096];

    memset(garbage, 0xff, sizeof(garbage));
    hostile(f, ":1\r\n", 4, 0, "a reply to no command");
    hostile(f, ":1\r\n:2\r\n", 8, 1, "a reply to no command");
    hostile(f, garbage, sizeof(garbage), 1,
            "Protocol error, got \"\\xff\" as reply type byte");
    hostile(f, NULL, 0, 1, "connection closed");
    /* a reply cut off waits for the rest (the caller's timeout bounds
     * it): no callback, no loss */
    open_conn(f, "", "");
    send_cmd(f, "PING", NULL);
    pump(f);
    peer_write(f, "$5\r\nab", 6);
    assert_int_equal(f->ngot, 0);
    assert_int_equal(f->nlost, 0);
}

/* A Unix socket that is not there: NULL at once, with the reason. */
static void test_refused(void **state)
{
    struct fixture *f = *state;
    struct cluster_url u = {.unix_socket = 1};
    char why[300] = "";

    snprintf(u.path, sizeof(u.path), "%.90s.none", f->path);
    assert_null(cluster_conn_open(f->base, &u, NULL, NULL, on_lost, f, why,
                                  sizeof(why)));
    assert_string_equal(why, "No such file or directory");
    assert_int_equal(f->nlost, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_pairs_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(test_auth_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reply_after_timeout, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_free_in_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
