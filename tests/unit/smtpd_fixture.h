#ifndef SLUICE_SMTPD_FIXTURE_H
#define SLUICE_SMTPD_FIXTURE_H

/*
 * smtpd_fixture - an SMTP server on the test's event loop, for the
 * tests of src/ingress/'s server (test_ingress_smtpd, test_ingress_
 * starttls): sessions on one end of a socket pair with a made-up client
 * address, talked to from the other end while the loop runs in this
 * thread. A fake store keeps the messages (and answers at once, later,
 * or with a failure), a fake flush records ETRN's domain, a fake
 * backlog drives flow control, a fake spool_free stands for the
 * spool's free pages; log lines are kept for was_logged(). setup() and
 * teardown() go around each test; server_start() makes the server of
 * params (connect_from() does when there is none).
 *
 * Include after cmocka.h.
 */

#include "ingress/ingress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum store_mode { STORE_NOW, STORE_LATER, STORE_FAIL };

static struct event_base *base __attribute__((unused));
static struct smtpd_server *server __attribute__((unused));
static struct smtpd_params params __attribute__((unused));
static enum store_mode mode __attribute__((unused));
static struct spool_msg *stored[8] __attribute__((unused));
static int nstored __attribute__((unused));
static ingress_done_fn *late_done __attribute__((unused));
static void *late_conn __attribute__((unused));
static char flushed_domain[300] __attribute__((unused));
static long flush_count __attribute__((unused));
static long backlog __attribute__((unused));
static int64_t spool_free __attribute__((unused));
static char logged[2048][600] __attribute__((unused));
static int nlogged __attribute__((unused));

static inline void fake_store(void *ctx, struct spool_msg *m,
                              const char *origin, ingress_done_fn *done,
                              void *conn)
{
    (void)ctx;
    (void)origin;
    assert_true(nstored < 8);
    if (mode == STORE_FAIL) {
        spool_msg_free(m);
        done(conn, -1, NULL, "spool full");
        return;
    }
    if (m->id[0] == 0)
        snprintf(m->id, sizeof(m->id), "NOID");
    stored[nstored++] = m;
    if (mode == STORE_NOW) {
        done(conn, 0, m->id, NULL);
        return;
    }
    late_done = done;
    late_conn = conn;
}

static inline void fake_flush(void *ctx, const struct smtp_node *node,
                              ingress_flushed_fn *done, void *conn)
{
    (void)ctx;
    smtp_node_format(node, flushed_domain, sizeof(flushed_domain));
    done(conn, flush_count, NULL);
}

static inline long fake_backlog(void *ctx)
{
    (void)ctx;
    return backlog;
}

static inline int64_t fake_spool_free(void *ctx)
{
    (void)ctx;
    return spool_free;
}

static inline void fake_log(void *ctx, const char *line)
{
    (void)ctx;
    if (nlogged < 2048)
        snprintf(logged[nlogged++], sizeof(logged[0]), "%s", line);
}

static inline int was_logged(const char *text)
{
    for (int i = 0; i < nlogged; i++)
        if (strstr(logged[i], text))
            return 1;
    return 0;
}

static inline int setup(void **state)
{
    (void)state;
    base = event_base_new();
    memset(&params, 0, sizeof(params));
    params.listen = "";
    params.hostname = "mx.test";
    params.mynetworks = "127.0.0.1/32";
    params.relay_domains = "relay.test, .sub.test";
    params.queue_directory = "";
    params.size_limit = 1000;
    params.recipient_limit = 3;
    params.connection_limit = 2;
    params.exempt = params.mynetworks; /* the default */
    params.error_limit = 20;
    params.line_limit = 512;
    params.timeout_ms = 5000;
    params.stress_timeout_ms = 10000;
    params.per_record_deadline = 1;
    params.in_flow_delay_ms = 200;
    params.active_limit = 10;
    params.backlog_limit = 100;
    params.junk_limit = 100;
    params.memory_limit = 1 << 20;
    params.bare_newline = "disconnect";
    params.bare_exempt = "";
    params.bare_code = 550;
    mode = STORE_NOW;
    nstored = nlogged = 0;
    late_done = NULL;
    backlog = flush_count = 0;
    spool_free = 0;
    flushed_domain[0] = 0;
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    smtpd_server_free(server);
    server = NULL;
    /* callbacks libevent deferred hold their bufferevent (a TLS filter
     * defers its own): they run, and let go, before the base goes */
    if (base)
        event_base_loop(base, EVLOOP_NONBLOCK);
    if (base)
        event_base_free(base);
    for (int i = 0; i < nstored; i++)
        spool_msg_free(stored[i]);
    return 0;
}

static inline void server_start(void)
{
    static const struct smtpd_ops ops = {.store = fake_store,
                                         .flush = fake_flush,
                                         .backlog = fake_backlog,
                                         .spool_free = fake_spool_free,
                                         .log = fake_log};
    char why[256];

    server = smtpd_server_create(base, &params, &ops, why, sizeof(why));
    assert_non_null(server);
}

/* A session from address (IPv4 text); returns the client's end. */
static inline int connect_from(const char *address)
{
    struct sockaddr_in sin;
    int sv[2];

    if (server == NULL)
        server_start();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(40000);
    assert_int_equal(inet_pton(AF_INET, address, &sin.sin_addr), 1);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    smtpd_session_start(server, sv[1], (struct sockaddr *)&sin, sizeof(sin));
    return sv[0];
}

static inline void put_n(int fd, const char *text, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(fd, text + off, len - off);

        if (n < 0 && errno == EAGAIN) {
            event_base_loop(base, EVLOOP_NONBLOCK);
            continue;
        }
        assert_true(n > 0);
        off += (size_t)n;
    }
}

static inline void put(int fd, const char *text)
{
    put_n(fd, text, strlen(text));
}

/* A literal with NULs in it. */
#define PUT_LIT(fd, lit) put_n(fd, lit, sizeof(lit) - 1)

/*
 * Run the loop until want bytes came from the server (or ms passed),
 * and return what came (at most size - 1 bytes). *eof says whether the
 * server closed its end.
 */
static inline size_t pump(int fd, char *buf, size_t size, size_t want, int ms,
                          int *eof)
{
    size_t got = 0;

    *eof = 0;
    for (int i = 0; i < ms; i++) {
        ssize_t n;

        event_base_loop(base, EVLOOP_NONBLOCK);
        while (got + 1 < size && (n = read(fd, buf + got, size - 1 - got)) > 0)
            got += (size_t)n;
        if (got + 1 < size && read(fd, buf + got, 0) == 0 &&
            recv(fd, buf + got, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            *eof = 1;
            break;
        }
        if (want > 0 && got >= want)
            break;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    buf[got] = 0;
    return got;
}

/* Expect exactly text from the server next. */
static inline void expect(int fd, const char *text)
{
    char buf[8192];
    int eof;

    assert_true(strlen(text) < sizeof(buf));
    pump(fd, buf, strlen(text) + 1, strlen(text), 2000, &eof);
    assert_string_equal(buf, text);
}

/* One BDAT command and its chunk. */
static inline void bdat(int fd, const char *chunk, int last)
{
    char cmd[64];

    snprintf(cmd, sizeof(cmd), "BDAT %zu%s\r\n", strlen(chunk),
             last ? " LAST" : "");
    put(fd, cmd);
    put(fd, chunk);
}

static inline void chat(int fd, const char *send, const char *reply)
{
    put(fd, send);
    expect(fd, reply);
}

/* Nothing more comes for a while. */
static inline void expect_silence(int fd, int ms)
{
    char buf[512];
    int eof;

    assert_int_equal(pump(fd, buf, sizeof(buf), 0, ms, &eof), 0);
    assert_false(eof);
}

/* The server closed the connection within ms, after text. */
static inline void expect_close_within(int fd, const char *text, int ms)
{
    char buf[2048];
    int eof;

    pump(fd, buf, sizeof(buf), 0, ms, &eof);
    assert_string_equal(buf, text);
    assert_true(eof);
    close(fd);
}

/* The server closed the connection, after text. */
static inline void expect_close(int fd, const char *text)
{
    expect_close_within(fd, text, 2000);
}

static inline long elapsed_ms(const struct timespec *since)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000L +
           (now.tv_nsec - since->tv_nsec) / 1000000;
}

/* Run the loop for ms of real time (the server's deadlines are in real
 * time, however loaded the machine), leaving what the server sends
 * unread. */
static inline void spin(int ms)
{
    struct timespec start;

    clock_gettime(CLOCK_MONOTONIC, &start);
    while (elapsed_ms(&start) < ms) {
        struct timespec ts = {0, 1000000};

        event_base_loop(base, EVLOOP_NONBLOCK);
        nanosleep(&ts, NULL);
    }
}

/* A slow client: one byte of text every gap_ms (writes that fail once
 * the server has closed are ignored). */
static inline void trickle(int fd, const char *text, int gap_ms)
{
    for (; *text; text++) {
        ssize_t n = send(fd, text, 1, MSG_NOSIGNAL);

        (void)n;
        spin(gap_ms);
    }
}

static const char greeting[] __attribute__((unused)) =
    "220 mx.test ESMTP sluice\r\n";
static const char ehlo_reply[] __attribute__((unused)) =
    "250-mx.test\r\n"
    "250-PIPELINING\r\n"
    "250-SIZE 1000\r\n"
    "250-ETRN\r\n"
    "250-ENHANCEDSTATUSCODES\r\n"
    "250-8BITMIME\r\n"
    "250-DSN\r\n"
    "250 CHUNKING\r\n";

/* A session from a mynetworks client, past EHLO. */
static inline int hello(const char *address)
{
    int fd = connect_from(address);

    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_reply);
    return fd;
}

/* The stored message's content after its Received: header. */
static inline const char *after_received(const struct spool_msg *m)
{
    const char *p = m->body;

    assert_memory_equal(p, "Received: ", 10);
    while ((p = strstr(p, "\r\n")) != NULL && (p[2] == '\t' || p[2] == ' '))
        p += 2;
    assert_non_null(p);
    return p + 2;
}

#endif
