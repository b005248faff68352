/*
 * test_deliver - the SMTP and LMTP client against a scripted server on
 * loopback: the commands it sends, byte for byte, and how it classifies
 * each outcome (RFC 5321, RFC 2920 pipelining, RFC 2033 LMTP).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deliver/deliver.h"

#include "script_server_fixture.h"

/* A port where nothing listens: bound, never listening. */
static int dead_port(int *fd)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);

    *fd = socket(AF_INET, SOCK_STREAM, 0);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(*fd, (struct sockaddr *)&sin, sizeof(sin));
    getsockname(*fd, (struct sockaddr *)&sin, &len);
    return ntohs(sin.sin_port);
}

static struct deliver_result *result;

static void done_cb(void *ctx, struct deliver_result *res)
{
    (void)ctx;
    result = res;
}

static const struct deliver_rcpt two_rcpts[] = {
    {"a@x.test", NULL, 0},
    {"b@x.test", NULL, 0},
};

static struct deliver_result *deliver(const struct deliver_addr *addrs,
                                      size_t naddrs, enum deliver_proto proto,
                                      const char *body, int timeout_ms)
{
    struct event_base *base = event_base_new();
    struct deliver_request req = {0};

    req.proto = proto;
    req.helo_name = "client.test";
    req.sender = "s@y.test";
    req.rcpt = two_rcpts;
    req.nrcpt = 2;
    req.body = util_blob_copy(body, strlen(body));
    req.addrs = addrs;
    req.naddrs = naddrs;
    req.session_limit = 2;
    req.timeouts = (struct deliver_timeouts){timeout_ms, timeout_ms, timeout_ms,
                                             timeout_ms, timeout_ms, timeout_ms,
                                             timeout_ms, timeout_ms};
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body); /* the session holds its own */
    event_base_dispatch(base);
    event_base_free(base);
    assert_non_null(result);
    return result;
}

#define GREETING "220 mx.test ESMTP\r\n"
#define EHLO_PIPE                                                              \
    "250-mx.test\r\n250-PIPELINING\r\n250-SIZE 1000000\r\n250 8BITMIME\r\n"

/* RFC 2920: MAIL, the RCPTs and DATA in one go; a body line starting
 * with "." stuffed; the transaction's outcome per recipient. */
static void test_pipelined_delivery(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {4, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n550 5.1.1 <b@x.test>: no\r\n"
            "354 go\r\n"},
        {1, "250 2.0.0 Ok: queued as ABC\r\n"},
        {1, "221 2.0.0 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = deliver(&a, 1, DELIVER_SMTP, "Subject: x\r\n\r\n.dot\r\nend\r\n", 5000);
    server_stop(&sv);
    assert_string_equal(sv.got, "EHLO client.test\r\n"
                                "MAIL FROM:<s@y.test> SIZE=25\r\n"
                                "RCPT TO:<a@x.test>\r\n"
                                "RCPT TO:<b@x.test>\r\n"
                                "DATA\r\n"
                                "Subject: x\r\n\r\n..dot\r\nend\r\n.\r\n"
                                "QUIT\r\n");
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->rcpt[0].code, 250);
    assert_string_equal(r->rcpt[0].text, "250 2.0.0 Ok: queued as ABC");
    assert_int_equal(r->rcpt[1].status, DELIVER_BOUNCE);
    assert_string_equal(r->rcpt[1].enhanced, "5.1.1");
    assert_string_equal(r->rcpt[1].text,
                        "host mx.test[127.0.0.1] said: 550 5.1.1 <b@x.test>: "
                        "no (in reply to RCPT TO command)");
    assert_true(strncmp(r->relay, "mx.test[127.0.0.1]:", 19) == 0);
    deliver_result_free(r);
}

/* Without PIPELINING each command waits for its reply; EHLO refused
 * falls back to HELO; 4xx defers. */
static void test_lockstep_helo_fallback(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, "502 5.5.2 no EHLO\r\n"},
        {1, "250 mx.test\r\n"},
        {1, "250 Ok\r\n"},
        {1, "451 4.3.0 later\r\n"},
        {1, "250 Ok\r\n"},
        {1, "354 go\r\n"},
        {1, "250 Ok\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = deliver(&a, 1, DELIVER_SMTP, "hi", 5000);
    server_stop(&sv);
    assert_string_equal(sv.got, "EHLO client.test\r\n"
                                "HELO client.test\r\n"
                                "MAIL FROM:<s@y.test>\r\n"
                                "RCPT TO:<a@x.test>\r\n"
                                "RCPT TO:<b@x.test>\r\n"
                                "DATA\r\n"
                                "hi\r\n.\r\n"
                                "QUIT\r\n");
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[0].enhanced, "4.3.0");
    assert_int_equal(r->rcpt[1].status, DELIVER_OK);
    deliver_result_free(r);
}

/* A rejected MAIL decides every recipient; the pipelined RCPT and DATA
 * replies are read and ignored. */
static void test_mail_rejected(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {4, "553 5.7.1 sender rejected\r\n503 5.5.1 no\r\n503 5.5.1 no\r\n"
            "503 5.5.1 no\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = deliver(&a, 1, DELIVER_SMTP, "hi\r\n", 5000);
    server_stop(&sv);
    assert_int_equal(r->hop_ok, 1);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(r->rcpt[i].status, DELIVER_BOUNCE);
        assert_string_equal(r->rcpt[i].text,
                            "host mx.test[127.0.0.1] said: 553 5.7.1 sender "
                            "rejected (in reply to MAIL FROM command)");
    }
    assert_non_null(strstr(sv.got, "QUIT\r\n"));
    deliver_result_free(r);
}

/* "greeting not 2xx" and "connection refused" are hop failures: the
 * next address is tried; when none is left, every recipient is deferred
 * with the last reason. */
static void test_fallback_and_hop_failure(void **state)
{
    static const struct step refuse[] = {
        {0, "421 4.3.2 busy\r\n"},
        {0, NULL},
    };
    static const struct step ok[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {4, "250 Ok\r\n250 Ok\r\n250 Ok\r\n354 go\r\n"},
        {1, "250 Ok\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct server busy, good;
    struct deliver_addr a[2];
    struct deliver_result *r;
    int fd, port = dead_port(&fd);

    (void)state;
    /* Refused, then accepted: delivered through the second. */
    addr_of(&a[0], "mx1.test", port);
    server_start(&good, ok);
    addr_of(&a[1], "mx2.test", good.port);
    r = deliver(a, 2, DELIVER_SMTP, "hi\r\n", 5000);
    server_stop(&good);
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_true(strncmp(r->relay, "mx2.test[127.0.0.1]:", 20) == 0);
    {
        /* the address left behind, for the log as the reference has it */
        char want[128];

        snprintf(want, sizeof(want),
                 "connect to mx1.test[127.0.0.1]:%d: Connection refused", port);
        assert_int_equal(r->nskipped, 1);
        assert_string_equal(r->skipped[0], want);
    }
    deliver_result_free(r);

    /* A 421 greeting, then nothing listening: a hop failure. */
    server_start(&busy, refuse);
    addr_of(&a[0], "mx1.test", busy.port);
    addr_of(&a[1], "mx2.test", port);
    r = deliver(a, 2, DELIVER_SMTP, "hi\r\n", 5000);
    server_stop(&busy);
    close(fd);
    assert_int_equal(r->hop_ok, 0);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    {
        char want[128];

        snprintf(want, sizeof(want),
                 "connect to mx2.test[127.0.0.1]:%d: Connection refused", port);
        assert_string_equal(r->hop_reason, want);
        assert_string_equal(r->rcpt[0].text, want);
        /* the first one left; the last is the deferral's reason */
        assert_int_equal(r->nskipped, 1);
        assert_non_null(strstr(r->skipped[0], "refused to talk to me: 421"));
    }
    deliver_result_free(r);
}

/* A server that never greets: the greeting timeout. */
static void test_greeting_timeout(void **state)
{
    static const struct step silent[] = {
        {1, ""}, /* waits for a line that never comes */
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, silent);
    addr_of(&a, "slow.test", sv.port);
    r = deliver(&a, 1, DELIVER_SMTP, "hi\r\n", 300);
    server_stop(&sv);
    assert_int_equal(r->hop_ok, 0);
    assert_string_equal(r->hop_reason,
                        "conversation with slow.test[127.0.0.1] timed out "
                        "while receiving the initial server greeting");
    deliver_result_free(r);
}

/* A connection lost in the middle of the transaction is a hop failure
 * for the recipients not yet decided. */
static void test_lost_mid_transaction(void **state)
{
    static const struct step script[] = {
        {0, GREETING},     {1, "250 mx.test\r\n"},
        {1, "250 Ok\r\n"}, {1, "550 5.1.1 no such user\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    sv.close_after = 4;
    addr_of(&a, "mx.test", sv.port);
    r = deliver(&a, 1, DELIVER_SMTP, "hi\r\n", 5000);
    server_stop(&sv);
    assert_int_equal(r->hop_ok, 0);
    assert_int_equal(r->rcpt[0].status, DELIVER_BOUNCE);
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[1].text, "lost connection with "
                                         "mx.test[127.0.0.1] while sending "
                                         "RCPT TO");
    deliver_result_free(r);
}

/* LMTP: LHLO, and one reply per accepted recipient after the body. */
static void test_lmtp(void **state)
{
    static const struct step script[] = {
        {0, "220 lmtp.test LMTP\r\n"},
        {1, EHLO_PIPE},
        {4, "250 Ok\r\n250 Ok\r\n250 Ok\r\n354 go\r\n"},
        {1, "250 2.0.0 a delivered\r\n452 4.2.2 b over quota\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "lmtp.test", sv.port);
    r = deliver(&a, 1, DELIVER_LMTP, "hi\r\n", 5000);
    server_stop(&sv);
    assert_true(strncmp(sv.got, "LHLO client.test\r\n", 18) == 0);
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->rcpt[0].text, "250 2.0.0 a delivered");
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[1].enhanced, "4.2.2");
    assert_string_equal(r->rcpt[1].text,
                        "host lmtp.test[127.0.0.1] said: 452 4.2.2 b over "
                        "quota (in reply to end of DATA command)");
    deliver_result_free(r);
}

static struct deliver_result *deliver_local(enum deliver_proto proto,
                                            const char *reason)
{
    struct event_base *base = event_base_new();
    struct deliver_request req = {0};
    struct deliver_session *s;

    req.proto = proto;
    req.sender = "s@y.test";
    req.rcpt = two_rcpts;
    req.nrcpt = 2;
    req.body = util_blob_copy("Subject: x\r\n\r\nbody\r\n", 20);
    req.reason = reason;
    result = NULL;
    s = deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body); /* the session holds its own */
    assert_non_null(s);
    /* Never from inside deliver_start(). */
    assert_null(result);
    event_base_dispatch(base);
    event_base_free(base);
    assert_non_null(result);
    assert_int_equal(result->hop_ok, 1);
    assert_int_equal(result->nrcpt, 2);
    assert_string_equal(result->relay, "none");
    return result;
}

/* discard: every recipient delivered, with the nexthop as the text. */
static void test_discard(void **state)
{
    struct deliver_result *r;

    (void)state;
    r = deliver_local(DELIVER_DISCARD, NULL);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(r->rcpt[i].status, DELIVER_OK);
        assert_string_equal(r->rcpt[i].enhanced, "2.0.0");
        assert_string_equal(r->rcpt[i].text, "discarded");
    }
    deliver_result_free(r);
    r = deliver_local(DELIVER_DISCARD, "x.test");
    assert_string_equal(r->rcpt[1].text, "x.test");
    deliver_result_free(r);
}

/* error: bounce with the nexthop as the reason; a leading 4.X.Y defers,
 * a leading X.Y.Z becomes the dsn and leaves the text. */
static void test_error(void **state)
{
    struct deliver_result *r;

    (void)state;
    r = deliver_local(DELIVER_ERROR, "mail for x.test is not accepted here");
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(r->rcpt[i].status, DELIVER_BOUNCE);
        assert_string_equal(r->rcpt[i].enhanced, "5.0.0");
        assert_string_equal(r->rcpt[i].text,
                            "mail for x.test is not accepted here");
    }
    deliver_result_free(r);
    r = deliver_local(DELIVER_ERROR, "4.3.2 maintenance until noon");
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[0].enhanced, "4.3.2");
    assert_string_equal(r->rcpt[0].text, "maintenance until noon");
    deliver_result_free(r);
    r = deliver_local(DELIVER_ERROR, "5.1.1");
    assert_int_equal(r->rcpt[1].status, DELIVER_BOUNCE);
    assert_string_equal(r->rcpt[1].enhanced, "5.1.1");
    assert_string_equal(r->rcpt[1].text, "delivery refused by the error "
                                         "transport");
    deliver_result_free(r);
    r = deliver_local(DELIVER_ERROR, NULL);
    assert_int_equal(r->rcpt[0].status, DELIVER_BOUNCE);
    assert_string_equal(r->rcpt[0].text, "delivery refused by the error "
                                         "transport");
    deliver_result_free(r);
}

/* Connection reuse: deliveries share one event loop and one cache. */
static struct event_base *reuse_base;

static void reuse_done_cb(void *ctx, struct deliver_result *res)
{
    (void)ctx;
    result = res;
    event_base_loopbreak(reuse_base);
}

/* The transport's cache limits a request brings (zero: the cache's). */
static struct deliver_cache_params req_limits;

static int reuse_store = 1;                  /* the requests' cache_store */
static const char *reuse_nexthop = "x.test"; /* and their TLS next hop */

/* The reuse tests' request: two recipients to a, through cache under key
 * (the caller unrefs the body after deliver_start()). */
static void reuse_request(struct deliver_request *req,
                          const struct deliver_addr *a,
                          struct deliver_cache *cache, const char *key)
{
    memset(req, 0, sizeof(*req));
    req->proto = DELIVER_SMTP;
    req->helo_name = "client.test";
    req->sender = "s@y.test";
    req->rcpt = two_rcpts;
    req->nrcpt = 2;
    req->body = util_blob_copy("Subject: x\r\n\r\nbody\r\n", 20);
    req->addrs = a;
    req->naddrs = 1;
    req->session_limit = 1; /* a dead cached connection must not count */
    req->timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                              5000, 5000, 5000, 5000};
    req->cache = cache;
    req->cache_key = key;
    req->cache_store = reuse_store;
    snprintf(req->tls.nexthop, sizeof(req->tls.nexthop), "%s", reuse_nexthop);
    snprintf(req->tls.match, sizeof(req->tls.match), "%s", reuse_nexthop);
    req->cache_limits = req_limits;
}

static struct deliver_result *deliver_cached(const struct deliver_addr *a,
                                             struct deliver_cache *cache)
{
    struct deliver_request req;

    reuse_request(&req, a, cache, "smtp:x.test");
    result = NULL;
    deliver_start(reuse_base, &req, reuse_done_cb, NULL);
    util_blob_unref(req.body); /* the session holds its own */
    event_base_dispatch(reuse_base);
    assert_non_null(result);
    return result;
}

/* A scripted server, a loop and a cache for the reuse tests. */
static struct deliver_cache *reuse_begin(struct server *sv,
                                         const struct step *script,
                                         const struct deliver_cache_params *p,
                                         struct deliver_addr *a)
{
    reuse_base = event_base_new();
    server_start(sv, script);
    addr_of(a, "mx.test", sv->port);
    return deliver_cache_create(reuse_base, p);
}

/* Close what is cached (each with a QUIT), then the server and loop. */
static void reuse_end(struct deliver_cache *cache, struct server *sv)
{
    deliver_cache_free(cache);
    server_stop(sv);
    event_base_free(reuse_base);
}

/* Run the loop for ms milliseconds. */
static void run_for(int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    event_base_loopexit(reuse_base, &tv);
    event_base_dispatch(reuse_base);
}

#define TXN_STEPS                                                              \
    {4, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.1.5 Ok\r\n354 go\r\n"},         \
    {                                                                          \
        1, "250 2.0.0 Ok: queued\r\n"                                          \
    }

static void all_sent(const struct deliver_result *r)
{
    assert_int_equal(r->hop_ok, 1);
    for (size_t i = 0; i < r->nrcpt; i++)
        assert_int_equal(r->rcpt[i].status, DELIVER_OK);
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* A connection that finished a delivery carries the next one for the
 * same destination: no new greeting, no EHLO, straight to MAIL. */
static void test_reuse(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 2);
    assert_true(strncmp(r->relay, "mx.test[127.0.0.1]:", 19) == 0);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 1);
    assert_int_equal(count_of(sv.got, "MAIL FROM"), 2);
    assert_int_equal(sv.accepted, 0);
    assert_true(strcmp(sv.got + strlen(sv.got) - 6, "QUIT\r\n") == 0);
}

/* Without TLS (no name checked) the next hop is not part of a connection's
 * key: two domains whose exchanger is the same share its connection. */
static void test_reuse_across_domains(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    reuse_nexthop = "a.test";
    r = deliver_cached(&a, cache);
    deliver_result_free(r);
    reuse_nexthop = "b.test";
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    reuse_nexthop = "x.test";
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 1);
}

/* The reference's endpoint label: a connection is cached under its server's
 * address too, and a delivery to another destination whose exchanger that
 * address is takes it before connecting there (the caller names the
 * transport in cache_endpoint): one EHLO for two next hops. */
static void test_reuse_by_address(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_request req;
    const char *keys[] = {"smtp:a.test", "smtp:b.test"};

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    for (int i = 0; i < 2; i++) {
        reuse_request(&req, &a, cache, keys[i]);
        req.cache_endpoint = "smtp";
        result = NULL;
        deliver_start(reuse_base, &req, reuse_done_cb, NULL);
        util_blob_unref(req.body);
        event_base_dispatch(reuse_base);
        assert_non_null(result);
        all_sent(result);
        assert_int_equal(result->conn_use, i + 1);
        deliver_result_free(result);
        assert_int_equal(deliver_cache_count(cache), 1);
    }
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 1);
    assert_int_equal(count_of(sv.got, "MAIL FROM"), 2);
}

/* A transaction in which the server took no recipient (greylisting: 451
 * for each, then 554 to the pipelined DATA) ends with RSET, as the
 * reference's client ends one when it means to keep the connection, and
 * the connection is cached for the next delivery instead of closed. */
static void test_reuse_after_all_refused(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {4, "250 2.1.0 Ok\r\n451 4.7.1 greylisted\r\n451 4.7.1 greylisted\r\n"
            "554 5.5.1 Error: no valid recipients\r\n"},
        {1, "250 2.0.0 Ok\r\n"},
        TXN_STEPS,
        {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    r = deliver_cached(&a, cache);
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 1);
    assert_int_equal(count_of(sv.got, "RSET\r\n"), 1);
    assert_int_equal(count_of(sv.got, "MAIL FROM"), 2);
}

/* On demand: a delivery the caller does not ask to keep its connection
 * takes a cached one all the same, and then says QUIT instead of putting
 * it back; so does one that connects afresh. */
static void test_reuse_not_stored(void **state)
{
    static const struct step script[] = {
        {0, GREETING},      {1, EHLO_PIPE},     TXN_STEPS,     TXN_STEPS,
        {1, "221 Bye\r\n"}, {-1, ""},           {0, GREETING}, {1, EHLO_PIPE},
        TXN_STEPS,          {1, "221 Bye\r\n"}, {-1, ""},      {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    r = deliver_cached(&a, cache);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    reuse_store = 0;
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 0);
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 0);
    reuse_store = 1;
    run_for(100);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 2);
    assert_int_equal(count_of(sv.got, "QUIT"), 2);
}

/* Deliveries that queue behind a connection (Finch's backlog). */
static struct deliver_result *line_res[3];
static int line_done_n;

static void line_done_cb(void *ctx, struct deliver_result *res)
{
    line_res[(intptr_t)ctx] = res;
    if (++line_done_n == 2)
        event_base_loopbreak(reuse_base);
}

static struct deliver_session *line_start(const struct deliver_addr *a,
                                          struct deliver_cache *cache,
                                          intptr_t i)
{
    struct deliver_request req;
    struct deliver_session *s;

    reuse_request(&req, a, cache, "finch:1");
    req.queue_behind = 1;
    s = deliver_start(reuse_base, &req, line_done_cb, (void *)i);
    util_blob_unref(req.body);
    return s;
}

/*
 * "there can be a queue of multiple jobs per worker": three deliveries
 * started at once for one connection go down it one after the other, in
 * order (one greeting, one EHLO, two transactions); a delivery cancelled
 * while in line leaves it without a trace.
 */
static void test_queue_behind(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_session *cancelled;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    line_done_n = 0;
    line_start(&a, cache, 0);
    cancelled = line_start(&a, cache, 2);
    line_start(&a, cache, 1);
    deliver_cancel(cancelled);
    event_base_dispatch(reuse_base);
    assert_int_equal(line_done_n, 2);
    all_sent(line_res[0]);
    all_sent(line_res[1]);
    assert_int_equal(line_res[0]->conn_use, 1);
    assert_int_equal(line_res[1]->conn_use, 2);
    deliver_result_free(line_res[0]);
    deliver_result_free(line_res[1]);
    assert_int_equal(deliver_cache_count(cache), 1);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 1);
    assert_int_equal(count_of(sv.got, "MAIL FROM"), 2);
}

/* When the connection before it is gone, the next in line connects anew
 * to the same address: nothing lost, nothing sent twice. */
static void test_queue_behind_closed(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, {1, "221 Bye\r\n"}, {-1, ""},
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    line_done_n = 0;
    reuse_store = 0;
    line_start(&a, cache, 0);
    reuse_store = 1;
    line_start(&a, cache, 1);
    event_base_dispatch(reuse_base);
    all_sent(line_res[0]);
    all_sent(line_res[1]);
    assert_int_equal(line_res[1]->conn_use, 1);
    deliver_result_free(line_res[0]);
    deliver_result_free(line_res[1]);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 2);
    assert_int_equal(count_of(sv.got, "MAIL FROM"), 2);
}

/* A cached connection the server closed is replaced by a new one; that is
 * not a failure of the destination and not one of its sessions. */
static void test_reuse_dead_connection(void **state)
{
    static const struct step script[] = {
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, {-1, ""},
        {0, GREETING}, {1, EHLO_PIPE}, TXN_STEPS, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    r = deliver_cached(&a, cache);
    all_sent(r);
    deliver_result_free(r);
    /* The loop does not run between the two: the cache cannot know. */
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    reuse_end(cache, &sv);
    assert_int_equal(sv.accepted, 1);
    assert_int_equal(count_of(sv.got, "EHLO"), 2);
}

/* Idle connections: dropped when the server closes them, closed with a
 * QUIT after the cache time limit; the limits on reuse hold. */
static void test_reuse_limits(void **state)
{
    static const struct step script[] = {
        {0, GREETING},      {1, EHLO_PIPE},     TXN_STEPS,     TXN_STEPS,
        {1, "221 Bye\r\n"}, {-1, ""},           {0, GREETING}, {1, EHLO_PIPE},
        TXN_STEPS,          {1, "221 Bye\r\n"}, {-1, ""},      {0, GREETING},
        {1, EHLO_PIPE},     TXN_STEPS,          {-1, ""},      {0, NULL},
    };
    struct deliver_cache_params p = {200, 300000, 1};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    /* A reuse count limit of 1: two deliveries, then QUIT. */
    r = deliver_cached(&a, cache);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    r = deliver_cached(&a, cache);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 0);
    /* Cached, then closed with a QUIT when idle for 200 ms. */
    r = deliver_cached(&a, cache);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    run_for(500);
    assert_int_equal(deliver_cache_count(cache), 0);
    /* Cached, then closed by the server: gone at once. */
    r = deliver_cached(&a, cache);
    all_sent(r);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    run_for(100);
    assert_int_equal(deliver_cache_count(cache), 0);
    reuse_end(cache, &sv);
    assert_int_equal(sv.accepted, 3);
    assert_int_equal(count_of(sv.got, "QUIT"), 2);
}

/*
 * A server's idle-timeout 421 that crosses our MAIL on a reused
 * connection is a dead cached connection, not a refusal: the delivery
 * connects afresh and every recipient is sent.
 */
static void test_reuse_421_on_first_command(void **state)
{
    static const struct step script[] = {
        {0, GREETING},      {1, EHLO_PIPE},
        TXN_STEPS,          {4, "421 4.4.2 mx.test idle timeout\r\n"},
        {-1, ""},           {0, GREETING},
        {1, EHLO_PIPE},     TXN_STEPS,
        {1, "221 Bye\r\n"}, {0, NULL},
    };
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    r = deliver_cached(&a, cache);
    all_sent(r);
    deliver_result_free(r);
    r = deliver_cached(&a, cache);
    all_sent(r);
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "EHLO"), 2);
}

/*
 * A request's own cache limits (its transport's overrides) decide how
 * long its connection stays idle, not the cache's defaults.
 */
static void test_reuse_transport_limits(void **state)
{
    static const struct step script[] = {
        {0, GREETING},      {1, EHLO_PIPE}, TXN_STEPS,      {1, "221 Bye\r\n"},
        {-1, ""},           {0, GREETING},  {1, EHLO_PIPE}, TXN_STEPS,
        {1, "221 Bye\r\n"}, {-1, ""},       {0, NULL},
    };
    struct deliver_cache_params p = {100, 300000, 0};
    struct deliver_cache *cache;
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    cache = reuse_begin(&sv, script, &p, &a);
    req_limits = (struct deliver_cache_params){2000, 300000, 0};
    r = deliver_cached(&a, cache);
    all_sent(r);
    deliver_result_free(r);
    run_for(400); /* past the cache's 100 ms, within the request's 2 s */
    assert_int_equal(deliver_cache_count(cache), 1);
    deliver_cache_free(cache); /* QUIT */
    /* Without limits of its own a request gets the cache's. */
    cache = deliver_cache_create(reuse_base, &p);
    req_limits = (struct deliver_cache_params){0, 0, 0};
    r = deliver_cached(&a, cache);
    all_sent(r);
    deliver_result_free(r);
    run_for(400);
    assert_int_equal(deliver_cache_count(cache), 0);
    reuse_end(cache, &sv);
    assert_int_equal(count_of(sv.got, "QUIT"), 2);
}

/* A local delivery cancelled before the loop runs never calls back. */
/* An address probe (decision 96) of two_rcpts: no body, no DATA. */
static struct deliver_result *probe(const struct deliver_addr *a)
{
    struct event_base *base = event_base_new();
    struct deliver_request req = {0};

    req.proto = DELIVER_SMTP;
    req.probe = 1;
    req.helo_name = "client.test";
    req.sender = "double-bounce@client.test";
    req.rcpt = two_rcpts;
    req.nrcpt = 2;
    req.addrs = a;
    req.naddrs = 1;
    req.session_limit = 1;
    req.timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                             5000, 5000, 5000, 5000};
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    event_base_dispatch(base);
    event_base_free(base);
    assert_non_null(result);
    return result;
}

/* A probe with PIPELINING: MAIL and the RCPTs in one write, never DATA;
 * each RCPT reply is its recipient's answer (2xx, 5xx), then QUIT. */
static void test_probe_pipelined(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {3, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n550 5.1.1 <b@x.test>: no\r\n"},
        {1, "221 2.0.0 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = probe(&a);
    server_stop(&sv);
    assert_string_equal(sv.got,
                        "EHLO client.test\r\n"
                        "MAIL FROM:<double-bounce@client.test> SIZE=0\r\n"
                        "RCPT TO:<a@x.test>\r\n"
                        "RCPT TO:<b@x.test>\r\n"
                        "QUIT\r\n");
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->rcpt[0].enhanced, "2.1.5");
    assert_string_equal(r->rcpt[0].text, "250 2.1.5 Ok");
    assert_int_equal(r->rcpt[1].status, DELIVER_BOUNCE);
    assert_string_equal(r->rcpt[1].text,
                        "host mx.test[127.0.0.1] said: 550 5.1.1 <b@x.test>: "
                        "no (in reply to RCPT TO command)");
    deliver_result_free(r);
}

/* Lockstep: a 4xx RCPT reply is a deferral (undetermined); still no DATA
 * though a recipient was accepted. */
static void test_probe_lockstep_defer(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, "250 mx.test\r\n"},
        {1, "250 2.1.0 Ok\r\n"},
        {1, "450 4.2.0 <a@x.test>: greylisted\r\n"},
        {1, "250 2.1.5 Ok\r\n"},
        {1, "221 2.0.0 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = probe(&a);
    server_stop(&sv);
    assert_null(strstr(sv.got, "DATA"));
    assert_non_null(strstr(sv.got, "RCPT TO:<b@x.test>\r\nQUIT\r\n"));
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[0].enhanced, "4.2.0");
    assert_int_equal(r->rcpt[1].status, DELIVER_OK);
    deliver_result_free(r);
}

/* A pipelined probe whose MAIL is refused: both recipients get that
 * reply, the RCPT replies are read and ignored (no DATA reply awaited). */
static void test_probe_mail_rejected(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, EHLO_PIPE},
        {3, "553 5.7.1 sender rejected\r\n503 5.5.1 no\r\n503 5.5.1 no\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct server sv;
    struct deliver_addr a;
    struct deliver_result *r;

    (void)state;
    server_start(&sv, script);
    addr_of(&a, "mx.test", sv.port);
    r = probe(&a);
    server_stop(&sv);
    assert_null(strstr(sv.got, "DATA"));
    assert_non_null(strstr(sv.got, "QUIT\r\n"));
    for (int i = 0; i < 2; i++)
        assert_int_equal(r->rcpt[i].status, DELIVER_BOUNCE);
    deliver_result_free(r);
}

static void test_local_cancel(void **state)
{
    struct event_base *base = event_base_new();
    struct deliver_request req = {0};
    struct deliver_session *s;

    (void)state;
    req.proto = DELIVER_DISCARD;
    req.sender = "";
    req.rcpt = two_rcpts;
    req.nrcpt = 2;
    req.body = NULL; /* an empty body */
    result = NULL;
    s = deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body); /* the session holds its own */
    deliver_cancel(s);
    event_base_dispatch(base);
    event_base_free(base);
    assert_null(result);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipelined_delivery),
        cmocka_unit_test(test_lockstep_helo_fallback),
        cmocka_unit_test(test_mail_rejected),
        cmocka_unit_test(test_fallback_and_hop_failure),
        cmocka_unit_test(test_greeting_timeout),
        cmocka_unit_test(test_lost_mid_transaction),
        cmocka_unit_test(test_lmtp),
        cmocka_unit_test(test_discard),
        cmocka_unit_test(test_error),
        cmocka_unit_test(test_local_cancel),
        cmocka_unit_test(test_probe_pipelined),
        cmocka_unit_test(test_probe_lockstep_defer),
        cmocka_unit_test(test_probe_mail_rejected),
        cmocka_unit_test(test_reuse),
        cmocka_unit_test(test_reuse_not_stored),
        cmocka_unit_test(test_reuse_across_domains),
        cmocka_unit_test(test_reuse_by_address),
        cmocka_unit_test(test_reuse_after_all_refused),
        cmocka_unit_test(test_queue_behind),
        cmocka_unit_test(test_queue_behind_closed),
        cmocka_unit_test(test_reuse_dead_connection),
        cmocka_unit_test(test_reuse_limits),
        cmocka_unit_test(test_reuse_421_on_first_command),
        cmocka_unit_test(test_reuse_transport_limits),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
