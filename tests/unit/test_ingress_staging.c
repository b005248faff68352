/*
 * NAME
 *	test_ingress_staging 1 - unit tests of the SMTP server's staging
 *	files
 * SYNOPSIS
 *	build/tests/test_ingress_staging
 * DESCRIPTION
 *	Tests src/ingress/staging.c and its use by content.c and receive.c:
 *	sessions on one end of a socket pair, as in test_ingress_smtpd,
 *	with a queue directory holding a real spool, into which the store
 *	writes each message with spool_store() (the group commit) before it
 *	answers. Checks that a message below smtpd_staging_threshold is
 *	held in memory and nothing is staged; that one above it is staged
 *	while the memory the server counts against smtpd_memory_limit
 *	stays at most the threshold, and reads back from the spool byte for
 *	byte, with the staging directory empty after; that a message over
 *	message_size_limit, a session closed mid-DATA and a failed staging
 *	write (a file size limit standing for a full disk: 451, the other
 *	session unharmed) leave no file; that leftovers are removed at
 *	start; and that the header checks and always_add_missing_headers
 *	see a staged message's header section.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ingress/smtpd_impl.h"
#include "spool/spool.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define THRESHOLD (64 * 1024)

static struct event_base *base;
static struct smtpd_server *server;
static struct smtpd_params params;
static struct spool *sp;
static char dir[64], staging_dir[128];
static char ids[8][SPOOL_ID_MAX + 1];
static int nstored, nstaged;
static uint64_t held_max;
static char logged[256][600];
static int nlogged;

static void real_store(void *ctx, struct spool_msg *m, const char *origin,
                       ingress_done_fn *done, void *conn)
{
    char why[256];
    int rc;

    (void)ctx;
    (void)origin;
    nstaged += m->body_path != NULL;
    rc = spool_store(sp, m, why, sizeof(why));
    if (rc == 0)
        snprintf(ids[nstored++], sizeof(ids[0]), "%s", m->id);
    done(conn, rc, m->id, rc ? why : NULL);
    spool_msg_free(m);
}

static void fake_log(void *ctx, const char *line)
{
    (void)ctx;
    if (nlogged < 256)
        snprintf(logged[nlogged++], sizeof(logged[0]), "%s", line);
}

static int was_logged(const char *text)
{
    for (int i = 0; i < nlogged; i++)
        if (strstr(logged[i], text))
            return 1;
    return 0;
}

/* Files in the staging directory now. */
static int staged_files(void)
{
    DIR *d = opendir(staging_dir);
    struct dirent *e;
    int n = 0;

    assert_non_null(d);
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int setup(void **state)
{
    struct spool_config cf = {0};
    char why[256];

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sluice-staging.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(staging_dir, sizeof(staging_dir), "%s/staging", dir);
    cf.queue_directory = dir;
    cf.map_size = 64 << 20;
    if (spool_open(&sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0)
        return -1;
    base = event_base_new();
    memset(&params, 0, sizeof(params));
    params.listen = "";
    params.hostname = "mx.test";
    params.mynetworks = "127.0.0.1/32";
    params.relay_domains = "";
    params.queue_directory = dir;
    params.size_limit = 20 << 20;
    params.recipient_limit = 10;
    params.exempt = params.mynetworks;
    params.error_limit = 20;
    params.line_limit = 2048;
    params.timeout_ms = 10000;
    params.stress_timeout_ms = 10000;
    params.hopcount_limit = 50;
    params.junk_limit = 100;
    params.memory_limit = 256 * 1024; /* less than every large message */
    params.staging_threshold = THRESHOLD;
    params.bare_newline = "disconnect";
    params.bare_exempt = "";
    params.bare_code = 550;
    nstored = nstaged = nlogged = 0;
    held_max = 0;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    smtpd_server_free(server);
    server = NULL;
    event_base_free(base);
    spool_close(sp);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void server_start(void)
{
    static const struct smtpd_ops ops = {.store = real_store, .log = fake_log};
    char why[256];

    server = smtpd_server_create(base, &params, &ops, why, sizeof(why));
    if (server == NULL)
        fail_msg("smtpd_server_create: %s", why);
}

/* Run the loop once, and note the most the server held. */
static void turn(void)
{
    event_base_loop(base, EVLOOP_NONBLOCK);
    if (server->held > held_max)
        held_max = server->held;
}

static int connect_client(void)
{
    struct sockaddr_in sin;
    int sv[2];

    if (server == NULL)
        server_start();
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons(40000);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    smtpd_session_start(server, sv[1], (struct sockaddr *)&sin, sizeof(sin));
    return sv[0];
}

/* In pieces of at most 8 KB, the loop run after each: the server reads
 * each apart, so that what it holds is seen between them. */
static void put_n(int fd, const char *text, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(fd, text + off, len - off < 8192 ? len - off : 8192);

        if (n < 0 && errno == EAGAIN) {
            turn();
            continue;
        }
        assert_true(n > 0);
        off += (size_t)n;
        turn();
    }
}

static void put(int fd, const char *text)
{
    put_n(fd, text, strlen(text));
}

/* Run the loop until the server sent text (exactly that, first). */
static void expect(int fd, const char *text)
{
    size_t want = strlen(text), got = 0;
    char buf[4096];

    assert_true(want < sizeof(buf));
    for (int i = 0; i < 5000 && got < want; i++) {
        ssize_t n;

        turn();
        if ((n = read(fd, buf + got, want - got)) > 0)
            got += (size_t)n;
        else {
            struct timespec ts = {0, 1000000};

            nanosleep(&ts, NULL);
        }
    }
    buf[got] = 0;
    if (strcmp(buf, text) != 0)
        for (int i = 0; i < nlogged; i++)
            fprintf(stderr, "log: %s\n", logged[i]);
    assert_string_equal(buf, text);
}

/* The rest of the reply line. */
static void skip_line(int fd)
{
    char c = 0;

    for (int i = 0; i < 5000 && c != '\n';) {
        turn();
        if (read(fd, &c, 1) != 1) {
            struct timespec ts = {0, 1000000};

            nanosleep(&ts, NULL);
            i++;
        }
    }
    assert_int_equal(c, '\n');
}

static int hello(void)
{
    int fd = connect_client();

    expect(fd, "220 mx.test ESMTP sluice\r\n");
    put(fd, "HELO client.test\r\n");
    expect(fd, "250 mx.test\r\n");
    return fd;
}

static void begin_data(int fd)
{
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
}

/* Content of n bytes (n >= 2) in lines of at most 78 characters and
 * CRLF, the last line whole; no dots. */
static char *content(size_t n)
{
    char *c = malloc(n + 1);
    size_t i = 0;

    while (i < n) {
        size_t len = n - i - 2 < 78 ? n - i - 2 : 78;

        for (size_t j = 0; j < len; j++)
            c[i + j] = (char)('a' + (i + j) % 23);
        i += len;
        c[i++] = '\r';
        c[i++] = '\n';
    }
    c[n] = 0;
    return c;
}

/* The stored message's body, read back from the spool. */
static struct spool_msg *stored(int i)
{
    struct spool_msg *m;
    char why[256];

    assert_int_equal(
        spool_get(sp, ids[i], &m, SPOOL_GET_BODY, why, sizeof(why)), 0);
    return m;
}

/* What follows the Received: header of a stored body. */
static const char *after_received(const struct spool_msg *m)
{
    const char *p = m->body;

    assert_memory_equal(p, "Received: ", 10);
    while ((p = strstr(p, "\r\n")) != NULL && (p[2] == '\t' || p[2] == ' '))
        p += 2;
    assert_non_null(p);
    return p + 2;
}

/* Send a whole message of n bytes of content; expect the 250. */
static void send_message(int fd, const char *c, size_t n)
{
    begin_data(fd);
    put_n(fd, c, n);
    put(fd, ".\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    skip_line(fd);
}

/* ------------------------------------------------------------ tests */

/* Below the threshold: held in memory, nothing staged. */
static void test_below_threshold(void **state)
{
    char *c = content(THRESHOLD / 2);
    struct spool_msg *m;
    int fd;

    (void)state;
    fd = hello();
    begin_data(fd);
    put_n(fd, c, THRESHOLD / 2);
    assert_int_equal(staged_files(), 0);
    assert_true(server->held > THRESHOLD / 2);
    put(fd, ".\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    skip_line(fd);
    assert_int_equal(nstaged, 0);
    assert_int_equal(server->held, 0);
    m = stored(0);
    assert_string_equal(after_received(m), c);
    spool_msg_free(m);
    close(fd);
    free(c);
}

/*
 * Above it: staged as it arrives, at most the threshold held in memory
 * the whole time (smtpd_memory_limit, 256 KB, is less than the 4 MB
 * message: held in memory it would be refused), stored byte for byte,
 * and no file left once the 250 came.
 */
static void test_above_threshold(void **state)
{
    size_t n = 4 << 20;
    char *c = content(n);
    struct spool_msg *m;
    int fd;

    (void)state;
    fd = hello();
    begin_data(fd);
    put_n(fd, c, n / 2);
    assert_int_equal(staged_files(), 1);
    put_n(fd, c + n / 2, n - n / 2);
    put(fd, ".\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    skip_line(fd);
    assert_true(held_max > 0);
    assert_true(held_max <= THRESHOLD);
    assert_int_equal(server->held, 0);
    assert_int_equal(nstaged, 1);
    assert_int_equal(staged_files(), 0);
    m = stored(0);
    assert_int_equal(strlen(after_received(m)), n);
    assert_string_equal(after_received(m), c);
    assert_int_equal(m->size, strlen(m->body));
    spool_msg_free(m);
    /* the next message, small, is held in memory again */
    send_message(fd, "small\r\n", 7);
    assert_int_equal(nstaged, 1);
    close(fd);
    free(c);
}

/* 0: every message is staged, even the smallest. */
static void test_threshold_zero(void **state)
{
    struct spool_msg *m;
    int fd;

    (void)state;
    params.staging_threshold = 0;
    fd = hello();
    send_message(fd, "tiny\r\n", 6);
    assert_int_equal(nstaged, 1);
    assert_int_equal(held_max > 0, 1); /* the Received: header, at first */
    assert_int_equal(staged_files(), 0);
    m = stored(0);
    assert_string_equal(after_received(m), "tiny\r\n");
    spool_msg_free(m);
    close(fd);
}

/* message_size_limit: read to the end, 552, and the file is gone. */
static void test_size_limit(void **state)
{
    size_t n = 2 << 20;
    char *c = content(n);
    int fd;

    (void)state;
    params.size_limit = 1 << 20;
    fd = hello();
    begin_data(fd);
    put_n(fd, c, n / 4);
    assert_int_equal(staged_files(), 1);
    put_n(fd, c + n / 4, n - n / 4);
    put(fd, ".\r\n");
    expect(fd, "552 5.3.4 Message size exceeds fixed limit\r\n");
    assert_int_equal(staged_files(), 0);
    assert_int_equal(nstored, 0);
    assert_int_equal(server->held, 0);
    close(fd);
    free(c);
}

/* A client that goes away mid-DATA leaves no file. */
static void test_close_mid_data(void **state)
{
    char *c = content(THRESHOLD * 4);
    int fd;

    (void)state;
    fd = hello();
    begin_data(fd);
    put_n(fd, c, THRESHOLD * 4);
    assert_int_equal(staged_files(), 1);
    close(fd);
    for (int i = 0; i < 2000 && smtpd_server_sessions(server) > 0; i++)
        turn();
    assert_int_equal(smtpd_server_sessions(server), 0);
    assert_int_equal(staged_files(), 0);
    assert_int_equal(server->held, 0);
    assert_int_equal(nstored, 0);
    free(c);
}

/*
 * A staging write that fails (a file size limit: EFBIG, as a full disk
 * gives ENOSPC) fails that message with 451; the session goes on, and
 * another session sending meanwhile is not touched.
 */
static void test_write_error(void **state)
{
    struct rlimit old, rl;
    size_t n = THRESHOLD * 8;
    char *c = content(n);
    int fd, other;

    (void)state;
    signal(SIGXFSZ, SIG_IGN);
    fd = hello();
    other = hello();
    begin_data(other);
    put(other, "Subject: meanwhile\r\n\r\n");
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    rl = old; /* the soft limit only: it can be raised again */
    rl.rlim_cur = THRESHOLD * 3;
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
    begin_data(fd);
    put_n(fd, c, n);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    put(fd, ".\r\n");
    expect(fd, "451 4.3.0 Error: queue file write error\r\n");
    assert_true(was_logged(": unknown[127.0.0.1]: staging file "));
    assert_true(was_logged(": write: File too large"));
    assert_int_equal(staged_files(), 0);
    assert_int_equal(nstored, 0);
    /* the other session's message, and this session's next, go through */
    put(other, "body\r\n.\r\n");
    expect(other, "250 2.0.0 Ok: queued as ");
    skip_line(other);
    send_message(fd, "next\r\n", 6);
    assert_int_equal(nstored, 2);
    close(fd);
    close(other);
    free(c);
}

/* Files left by an earlier run are removed at start, and logged; a
 * directory that was there is made private. */
static void test_leftovers(void **state)
{
    char path[256];
    struct stat st;
    int fd;

    (void)state;
    assert_int_equal(mkdir(staging_dir, 0755), 0);
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/left%d", staging_dir, i);
        fd = open(path, O_WRONLY | O_CREAT, 0600);
        assert_true(fd >= 0);
        close(fd);
    }
    server_start();
    assert_int_equal(staged_files(), 0);
    snprintf(path, sizeof(path),
             "warning: %s: removed 2 staging files left by an earlier run",
             staging_dir);
    assert_true(was_logged(path));
    assert_int_equal(stat(staging_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700); /* made private */
}

/* A fresh directory is made 0700: message content is private. */
static void test_directory_mode(void **state)
{
    struct stat st;

    (void)state;
    server_start();
    assert_int_equal(stat(staging_dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_false(was_logged("removed"));
}

/*
 * The checks at the end see a staged message's header section: a loop
 * is refused (and the file removed); missing headers are written into
 * the file, at the end of the header section, as in memory.
 */
static void test_staged_headers(void **state)
{
    char *c = content(THRESHOLD * 2), want[128];
    const char *p;
    struct spool_msg *m;
    int fd;

    (void)state;
    params.hopcount_limit = 2;
    params.add_missing_headers = 1;
    fd = hello();
    begin_data(fd);
    put(fd, "Received: from a\r\nReceived: from b\r\n\r\n");
    put_n(fd, c, THRESHOLD * 2);
    put(fd, ".\r\n");
    expect(fd, "554 5.4.6 Error: too many hops\r\n");
    assert_int_equal(staged_files(), 0);
    begin_data(fd);
    put(fd, "Subject: big\r\n\r\n");
    put_n(fd, c, THRESHOLD * 2);
    put(fd, ".\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    skip_line(fd);
    assert_int_equal(nstaged, 1);
    assert_int_equal(staged_files(), 0);
    m = stored(0);
    p = after_received(m);
    assert_memory_equal(p, "Subject: big\r\nFrom: s@x.test\r\nDate: ", 36);
    snprintf(want, sizeof(want), "\r\nMessage-ID: <%s@mx.test>\r\n\r\n", m->id);
    p = strstr(p, want);
    assert_non_null(p);
    assert_string_equal(p + strlen(want), c);
    spool_msg_free(m);
    close(fd);
    free(c);
}

/* staging.c alone: an insert in the middle moves what follows. */
static void test_insert(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    struct staging *st;
    char why[256], *c = content(200000);

    (void)state;
    assert_int_equal(mkdir(staging_dir, 0700), 0);
    st = staging_create(staging_dir, "ID", why, sizeof(why));
    assert_non_null(st);
    assert_int_equal(staging_append(st, c, 200000, why, sizeof(why)), 0);
    assert_int_equal(staging_insert(st, 100, "INSERTED", 8, why, sizeof(why)),
                     0);
    assert_int_equal(staging_size(st), 200008);
    assert_int_equal(staging_head(st, &b, 1 << 20, why, sizeof(why)), 0);
    assert_int_equal(b.len, 200008);
    assert_memory_equal(b.data, c, 100);
    assert_memory_equal(b.data + 100, "INSERTED", 8);
    assert_memory_equal(b.data + 108, c + 100, 200000 - 100);
    assert_int_equal(staging_head(st, &b, 10, why, sizeof(why)), 0);
    assert_int_equal(b.len, 10);
    /* a second file for the same id gets a suffix */
    {
        struct staging *two =
            staging_create(staging_dir, "ID", why, sizeof(why));

        assert_non_null(two);
        assert_int_equal(staged_files(), 2);
        staging_discard(two);
    }
    staging_discard(st);
    assert_int_equal(staged_files(), 0);
    util_buf_free(&b);
    free(c);
}

static void collect(void *ctx, const char *p, size_t n)
{
    struct util_buf *b = ctx;

    assert_true(n > 0 && n <= 65536); /* in pieces, never whole */
    util_buf_add(b, p, n);
}

/* staging_read(): the file from an offset to its end, in pieces. */
static void test_read(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    struct staging *st;
    char why[256], *c = content(300000);

    (void)state;
    assert_int_equal(mkdir(staging_dir, 0700), 0);
    st = staging_create(staging_dir, "ID", why, sizeof(why));
    assert_non_null(st);
    assert_int_equal(staging_append(st, c, 300000, why, sizeof(why)), 0);
    assert_int_equal(staging_read(st, 1000, collect, &b, why, sizeof(why)), 0);
    assert_int_equal(b.len, 299000);
    assert_memory_equal(b.data, c + 1000, 299000);
    util_buf_reset(&b);
    assert_int_equal(staging_read(st, 300000, collect, &b, why, sizeof(why)),
                     0);
    assert_int_equal(b.len, 0);
    staging_discard(st);
    util_buf_free(&b);
    free(c);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_below_threshold),
        T(test_above_threshold),
        T(test_threshold_zero),
        T(test_size_limit),
        T(test_close_mid_data),
        T(test_write_error),
        T(test_leftovers),
        T(test_directory_mode),
        T(test_staged_headers),
        T(test_insert),
        T(test_read),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
