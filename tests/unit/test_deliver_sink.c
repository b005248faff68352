/*
 * test_deliver_sink - the SMTP and LMTP client against a real peer:
 * Postfix's smtp-sink on a loopback port (../shared/TESTING-PEERS.md),
 * started and stopped by this test, by its PID.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "deliver/deliver.h"

#define SINK "/usr/sbin/smtp-sink"

struct sink {
    pid_t pid;
    int port;
    char dir[64];
};

/* Start smtp-sink with extra options on a free port; wait until it
 * answers. Returns 0, or -1 if it cannot run here. */
static int sink_start(struct sink *sk, const char *opt1, const char *opt2)
{
    char addr[64], dump[128];

    snprintf(sk->dir, sizeof(sk->dir), "/tmp/sluice-sink.XXXXXX");
    if (mkdtemp(sk->dir) == NULL)
        return -1;
    chmod(sk->dir, 0777);
    for (int attempt = 0; attempt < 20; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sin = {0};
        socklen_t len = sizeof(sin);

        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd, (struct sockaddr *)&sin, sizeof(sin));
        getsockname(fd, (struct sockaddr *)&sin, &len);
        sk->port = ntohs(sin.sin_port);
        close(fd);
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", sk->port);
        snprintf(dump, sizeof(dump), "%s/%%M.", sk->dir);
        if ((sk->pid = fork()) == 0) {
            const char *argv[12];
            int n = 0;

            argv[n++] = SINK;
            if (geteuid() == 0) {
                argv[n++] = "-u";
                argv[n++] = "postfix";
            }
            argv[n++] = "-d";
            argv[n++] = dump;
            if (opt1)
                argv[n++] = opt1;
            if (opt2)
                argv[n++] = opt2;
            argv[n++] = addr;
            argv[n++] = "16";
            argv[n] = NULL;
            freopen("/dev/null", "w", stderr);
            execv(SINK, (char *const *)argv);
            _exit(127);
        }
        for (int wait = 0; wait < 100; wait++) {
            int fd2 = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in to = {0};
            int status;

            to.sin_family = AF_INET;
            to.sin_port = htons((uint16_t)sk->port);
            to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (connect(fd2, (struct sockaddr *)&to, sizeof(to)) == 0) {
                close(fd2);
                return 0;
            }
            close(fd2);
            if (waitpid(sk->pid, &status, WNOHANG) == sk->pid)
                break; /* it exited: port taken, or no smtp-sink */
            nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        }
        kill(sk->pid, SIGTERM);
        waitpid(sk->pid, NULL, 0);
    }
    return -1;
}

static void sink_stop(struct sink *sk)
{
    char cmd[128];

    kill(sk->pid, SIGTERM);
    waitpid(sk->pid, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", sk->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", sk->dir);
}

/* The one message smtp-sink dumped, in *buf. */
static size_t sink_dump(struct sink *sk, char *buf, size_t len)
{
    DIR *d = opendir(sk->dir);
    struct dirent *e;
    size_t n = 0;

    buf[0] = 0;
    while (d && (e = readdir(d)) != NULL) {
        char path[400];
        FILE *fp;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", sk->dir, e->d_name);
        if ((fp = fopen(path, "r")) != NULL) {
            n = fread(buf, 1, len - 1, fp);
            buf[n] = 0;
            fclose(fp);
        }
    }
    if (d)
        closedir(d);
    return n;
}

/*
 * Without smtp-sink (no Postfix installed) a test says so and passes:
 * tests/run.sh would count cmocka's skip() as a failure. CI installs it.
 */
#define NEED_SINK(sk, o1, o2)                                                  \
    do {                                                                       \
        if (sink_start(sk, o1, o2) < 0) {                                      \
            print_message("# SKIP %s: cannot run %s\n", __func__, SINK);       \
            return;                                                            \
        }                                                                      \
    } while (0)

static struct deliver_result *result;

static void done_cb(void *ctx, struct deliver_result *res)
{
    result = res;
    event_base_loopbreak(ctx);
}

/* One delivery on base, through cache (or none). */
static struct deliver_result *deliver_on(struct event_base *base,
                                         struct deliver_cache *cache, int port,
                                         enum deliver_proto proto,
                                         const char *body)
{
    static const struct deliver_rcpt rcpt[] = {
        {"one@sink.test", NULL, 0},
        {"two@sink.test", NULL, 0},
        {"three@sink.test", NULL, 0},
    };
    struct deliver_request req = {0};
    struct deliver_addr a = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&a.sa;

    snprintf(a.host, sizeof(a.host), "sink.test");
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.salen = sizeof(*sin);
    req.proto = proto;
    req.helo_name = "client.test";
    req.sender = "sender@client.test";
    req.rcpt = rcpt;
    req.nrcpt = 3;
    req.body = body;
    req.size = strlen(body);
    req.addrs = &a;
    req.naddrs = 1;
    req.session_limit = 1;
    req.timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                             5000, 5000, 5000, 5000};
    req.cache = cache;
    req.cache_key = "smtp:sink.test";
    result = NULL;
    deliver_start(base, &req, done_cb, base);
    event_base_dispatch(base);
    assert_non_null(result);
    return result;
}

static struct deliver_result *deliver(int port, enum deliver_proto proto,
                                      const char *body)
{
    struct event_base *base = event_base_new();
    struct deliver_result *r = deliver_on(base, NULL, port, proto, body);

    event_base_free(base);
    return r;
}

static const char body[] = "From: sender@client.test\r\n"
                           "Subject: sink test\r\n"
                           "\r\n"
                           "first line\r\n"
                           ".a line that starts with a dot\r\n"
                           "last line\r\n";

/* A pipelining SMTP server that accepts everything: delivered, and the
 * message it stored is the message sent (the dot unstuffed again). */
static void test_smtp_sink(void **state)
{
    struct sink sk;
    struct deliver_result *r;
    char dump[4096];

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    r = deliver(sk.port, DELIVER_SMTP, body);
    sink_dump(&sk, dump, sizeof(dump));
    sink_stop(&sk);
    assert_int_equal(r->hop_ok, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r->rcpt[i].status, DELIVER_OK);
    assert_non_null(strstr(dump, "\n.a line that starts with a dot"));
    assert_non_null(strstr(dump, "Subject: sink test"));
    deliver_result_free(r);
}

/* smtp-sink -f RCPT: every RCPT gets 5xx (and no pipelining): bounced,
 * but the site is up. */
static void test_smtp_sink_rcpt_rejected(void **state)
{
    struct sink sk;
    struct deliver_result *r;

    (void)state;
    NEED_SINK(&sk, "-f", "RCPT");
    r = deliver(sk.port, DELIVER_SMTP, body);
    sink_stop(&sk);
    assert_int_equal(r->hop_ok, 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r->rcpt[i].status, DELIVER_BOUNCE);
        assert_int_equal(r->rcpt[i].code / 100, 5);
    }
    deliver_result_free(r);
}

/* smtp-sink -Q EHLO,HELO: 421 and hang up at the handshake: a hop
 * failure, everything deferred. */
static void test_smtp_sink_421_at_ehlo(void **state)
{
    struct sink sk;
    struct deliver_result *r;

    (void)state;
    NEED_SINK(&sk, "-Q", "EHLO,HELO");
    r = deliver(sk.port, DELIVER_SMTP, body);
    sink_stop(&sk);
    assert_int_equal(r->hop_ok, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r->rcpt[i].status, DELIVER_DEFER);
    assert_non_null(strstr(r->hop_reason, "sink.test[127.0.0.1]"));
    deliver_result_free(r);
}

/* smtp-sink -L: LMTP, one reply per recipient after the data. */
static void test_lmtp_sink(void **state)
{
    struct sink sk;
    struct deliver_result *r;

    (void)state;
    NEED_SINK(&sk, "-L", NULL);
    r = deliver(sk.port, DELIVER_LMTP, body);
    sink_stop(&sk);
    assert_int_equal(r->hop_ok, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(r->rcpt[i].status, DELIVER_OK);
    deliver_result_free(r);
}

/* Connection reuse against a real server: three deliveries, one
 * connection, one greeting. */
static void test_smtp_sink_reuse(void **state)
{
    struct deliver_cache_params p = {2000, 300000, 0};
    struct event_base *base = event_base_new();
    struct deliver_cache *cache = deliver_cache_create(base, &p);
    struct sink sk;
    struct deliver_result *r;

    (void)state;
    if (sink_start(&sk, NULL, NULL) < 0) {
        print_message("# SKIP %s: cannot run %s\n", __func__, SINK);
        deliver_cache_free(cache);
        event_base_free(base);
        return;
    }
    for (int use = 1; use <= 3; use++) {
        r = deliver_on(base, cache, sk.port, DELIVER_SMTP, body);
        assert_int_equal(r->hop_ok, 1);
        for (int i = 0; i < 3; i++)
            assert_int_equal(r->rcpt[i].status, DELIVER_OK);
        assert_int_equal(r->conn_use, use);
        deliver_result_free(r);
        assert_int_equal(deliver_cache_count(cache), 1);
    }
    deliver_cache_free(cache);
    event_base_free(base);
    sink_stop(&sk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_smtp_sink),
        cmocka_unit_test(test_smtp_sink_rcpt_rejected),
        cmocka_unit_test(test_smtp_sink_421_at_ehlo),
        cmocka_unit_test(test_lmtp_sink),
        cmocka_unit_test(test_smtp_sink_reuse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
