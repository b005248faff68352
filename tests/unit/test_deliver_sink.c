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

#include "sink_fixture.h"

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
    req.body = util_blob_copy(body, strlen(body));
    req.addrs = &a;
    req.naddrs = 1;
    req.session_limit = 1;
    req.timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                             5000, 5000, 5000, 5000};
    req.cache = cache;
    req.cache_key = "smtp:sink.test";
    req.cache_store = 1;
    result = NULL;
    deliver_start(base, &req, done_cb, base);
    util_blob_unref(req.body); /* the session holds its own */
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
    NEED_SINK(&sk, NULL, NULL);
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
