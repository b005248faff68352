/*
 * test_deliver_auth - the SMTP client's AUTH (RFC 4954) against a
 * scripted server on loopback: PLAIN (RFC 4616) preferred, LOGIN, the
 * bytes on the wire, the security options (no password without TLS
 * under noplaintext), failures deferred with the server's text, hostile
 * challenges, and the connection cache kept apart per user.
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

static struct event_base *base;
static struct deliver_result *result;
static char table_path[64];

static void done_cb(void *ctx, struct deliver_result *res)
{
    (void)ctx;
    result = res;
    event_base_loopbreak(base);
}

static const struct deliver_rcpt one_rcpt[] = {{"a@x.test", NULL, 0}};

/* A password table for the tests (the host mx.test, a next hop). */
static struct deliver_passwd *table(const char *text)
{
    char why[256];
    struct deliver_passwd *m;
    int fd;

    snprintf(table_path, sizeof(table_path), "/tmp/test_auth.XXXXXX");
    fd = mkstemp(table_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    m = deliver_passwd_load("smtp_sasl_password_maps", table_path, why,
                            sizeof(why));
    unlink(table_path);
    assert_non_null(m);
    return m;
}

static struct deliver_result *deliver(const struct deliver_addr *a,
                                      struct deliver_passwd *passwd,
                                      unsigned options,
                                      struct deliver_cache *cache)
{
    struct deliver_request req = {0};

    req.proto = DELIVER_SMTP;
    req.helo_name = "client.test";
    req.sender = "s@y.test";
    req.rcpt = one_rcpt;
    req.nrcpt = 1;
    req.body = util_blob_copy("hi\r\n", 4);
    req.addrs = a;
    req.naddrs = 1;
    req.session_limit = 1;
    req.timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                             5000, 5000, 5000, 5000};
    req.sasl.passwd = passwd;
    snprintf(req.sasl.nexthop, sizeof(req.sasl.nexthop), "[relay.test]:587");
    req.sasl.options = options;
    req.sasl.tls_options = options;
    if (cache) {
        req.cache = cache;
        req.cache_key = "smtp:[relay.test]:587";
        req.cache_store = 1;
        req.cache_limits = (struct deliver_cache_params){5000, 300000, 0};
    }
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body);
    event_base_dispatch(base);
    /* the closes libevent defers to the loop's next turn */
    event_base_loop(base, EVLOOP_NONBLOCK);
    event_base_loop(base, EVLOOP_NONBLOCK);
    assert_non_null(result);
    return result;
}

#define GREETING "220 mx.test ESMTP\r\n"
#define TXN                                                                    \
    {1, "250 2.1.0 Ok\r\n"}, {1, "250 2.1.5 Ok\r\n"}, {1, "354 go\r\n"},       \
    {                                                                          \
        1, "250 2.0.0 Ok: queued\r\n"                                          \
    }
#define TXN_SENT                                                               \
    "MAIL FROM:<s@y.test>\r\nRCPT TO:<a@x.test>\r\nDATA\r\nhi\r\n.\r\n"
/* base64 of "\0user\0pa:ss" (RFC 4616), "user", "pa:ss" */
#define PLAIN_RESPONSE "AHVzZXIAcGE6c3M="
#define LOGIN_USER     "dXNlcg=="
#define LOGIN_PASS     "cGE6c3M="

static struct server sv;
static struct deliver_addr addr;

static int setup(void **state)
{
    (void)state;
    base = event_base_new();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    event_base_free(base);
    return 0;
}

static void start(const struct step *script)
{
    server_start(&sv, script);
    addr_of(&addr, "mx.test", sv.port);
}

/* PLAIN preferred, its response in the AUTH command; the password may
 * hold a colon. */
static void test_plain(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, "250-mx.test\r\n250-AUTH LOGIN PLAIN CRAM-MD5\r\n250 8BITMIME\r\n"},
        {1, "235 2.7.0 Authentication successful\r\n"},
        TXN,
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");
    struct deliver_result *r;

    (void)state;
    start(script);
    r = deliver(&addr, m, 0, NULL);
    server_stop(&sv);
    assert_string_equal(sv.got, "EHLO client.test\r\n"
                                "AUTH PLAIN " PLAIN_RESPONSE "\r\n" TXN_SENT
                                "QUIT\r\n");
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->auth_failed, 0);
    deliver_result_free(r);
    deliver_passwd_free(m);
}

/* LOGIN when PLAIN is not offered: user, then password, each answering
 * a 334 (the pre-standard AUTH= form counts). */
static void test_login(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, "250-mx.test\r\n250-AUTH=LOGIN\r\n250 SIZE 1000\r\n"},
        {1, "334 VXNlcm5hbWU6\r\n"},
        {1, "334 UGFzc3dvcmQ6\r\n"},
        {1, "235 2.7.0 Authentication successful\r\n"},
        {1, "250 2.1.0 Ok\r\n"},
        {1, "250 2.1.5 Ok\r\n"},
        {1, "354 go\r\n"},
        {1, "250 2.0.0 Ok: queued\r\n"},
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");
    struct deliver_result *r;

    (void)state;
    start(script);
    r = deliver(&addr, m, 0, NULL);
    server_stop(&sv);
    assert_string_equal(sv.got,
                        "EHLO client.test\r\n"
                        "AUTH LOGIN\r\n" LOGIN_USER "\r\n" LOGIN_PASS "\r\n"
                        "MAIL FROM:<s@y.test> SIZE=4\r\n"
                        "RCPT TO:<a@x.test>\r\nDATA\r\nhi\r\n.\r\n"
                        "QUIT\r\n");
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    deliver_result_free(r);
    deliver_passwd_free(m);
}

/* Credentials by next hop when the host has none; none at all: no AUTH,
 * as strangers. */
static void test_nexthop_and_strangers(void **state)
{
    static const struct step script[] = {
        {0, GREETING},           {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        {1, "235 2.7.0 Ok\r\n"}, TXN,
        {1, "221 Bye\r\n"},      {0, NULL},
    };
    static const struct step stranger[] = {
        {0, GREETING}, {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        TXN,           {1, "221 Bye\r\n"},
        {0, NULL},
    };
    struct deliver_passwd *m = table("[relay.test]:587 user:pa:ss\n"
                                     "other.test x:y\n");
    struct deliver_passwd *other = table("other.test x:y\n");
    struct deliver_result *r;

    (void)state;
    start(script);
    r = deliver(&addr, m, 0, NULL);
    server_stop(&sv);
    assert_non_null(strstr(sv.got, "AUTH PLAIN " PLAIN_RESPONSE "\r\n"));
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    deliver_result_free(r);
    start(stranger);
    r = deliver(&addr, other, 0, NULL);
    server_stop(&sv);
    assert_string_equal(sv.got, "EHLO client.test\r\n" TXN_SENT "QUIT\r\n");
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    deliver_result_free(r);
    deliver_passwd_free(m);
    deliver_passwd_free(other);
}

/* A server that refuses the login: deferred with its text and its code
 * made 4.X.Y, never bounced; no MAIL; a hop failure. */
static void test_refused(void **state)
{
    static const struct {
        const char *reply;
        const char *dsn;
        const char *text;
    } cases[] = {
        {"535 5.7.8 Error: authentication failed: bad\r\n", "4.7.8",
         "535 5.7.8 Error: authentication failed: bad"},
        {"454 4.7.0 Temporary authentication failure\r\n", "4.7.0",
         "454 4.7.0 Temporary authentication failure"},
        {"535 Authentication credentials invalid\r\n", "4.7.0",
         "535 Authentication credentials invalid"},
        {"504 5.5.4 Unrecognized authentication type\r\n", "4.5.4",
         "504 5.5.4 Unrecognized authentication type"},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct step script[] = {
            {0, GREETING},
            {1, "250-mx.test\r\n250 AUTH PLAIN LOGIN\r\n"},
            {1, cases[i].reply},
            {0, NULL},
        };
        struct deliver_result *r;
        char want[300];

        start(script);
        r = deliver(&addr, m, 0, NULL);
        server_stop(&sv);
        assert_string_equal(sv.got, "EHLO client.test\r\n"
                                    "AUTH PLAIN " PLAIN_RESPONSE "\r\n");
        assert_int_equal(r->hop_ok, 0);
        assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
        assert_string_equal(r->rcpt[0].enhanced, cases[i].dsn);
        snprintf(want, sizeof(want),
                 "SASL authentication failed; server mx.test[127.0.0.1] "
                 "said: %s",
                 cases[i].text);
        assert_string_equal(r->rcpt[0].text, want);
        assert_int_equal(r->auth_failed, 1);
        assert_string_equal(r->auth_key, "mx.test");
        deliver_result_free(r);
    }
    deliver_passwd_free(m);
}

/* noplaintext without TLS (the default options): the password is not
 * sent, the address fails with the reference's words; likewise a
 * server without AUTH, or with no mechanism sluice speaks. */
static void test_not_attempted(void **state)
{
    static const struct {
        const char *ehlo;
        unsigned options;
        const char *why;
    } cases[] = {
        {"250-mx.test\r\n250 AUTH PLAIN LOGIN\r\n",
         DELIVER_SASL_NOPLAINTEXT | DELIVER_SASL_NOANONYMOUS,
         "offered no compatible authentication mechanisms for this type "
         "of connection security"},
        {"250-mx.test\r\n250 AUTH PLAIN LOGIN\r\n", DELIVER_SASL_NODICTIONARY,
         "offered no compatible authentication mechanisms for this type "
         "of connection security"},
        {"250-mx.test\r\n250 AUTH CRAM-MD5 SCRAM-SHA-256\r\n", 0,
         "offered no compatible authentication mechanisms for this type "
         "of connection security"},
        {"250-mx.test\r\n250 8BITMIME\r\n", 0, "offered no AUTH"},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct step script[] = {
            {0, GREETING},
            {1, cases[i].ehlo},
            {0, NULL},
        };
        struct deliver_result *r;
        char want[300];

        start(script);
        r = deliver(&addr, m, cases[i].options, NULL);
        server_stop(&sv);
        assert_string_equal(sv.got, "EHLO client.test\r\n");
        assert_int_equal(r->hop_ok, 0);
        assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
        assert_string_equal(r->rcpt[0].enhanced, "4.7.0");
        snprintf(want, sizeof(want),
                 "SASL authentication failed: server mx.test[127.0.0.1] %s",
                 cases[i].why);
        assert_string_equal(r->rcpt[0].text, want);
        assert_int_equal(r->auth_failed, 1);
        deliver_result_free(r);
    }
    deliver_passwd_free(m);
}

/* Hostile challenges: not base64, one after PLAIN's response, a third
 * for LOGIN. The exchange stops; nothing more is sent. */
static void test_hostile_challenges(void **state)
{
    static const struct {
        const char *ehlo;
        const char *challenges;
        int lines;
        const char *sent;
        const char *why;
    } cases[] = {
        {"250-mx.test\r\n250 AUTH LOGIN\r\n", "334 Username:\r\n", 1,
         "AUTH LOGIN\r\n", "malformed challenge"},
        {"250-mx.test\r\n250 AUTH LOGIN\r\n", "334 VXNlcm5hbWU6 x\r\n", 1,
         "AUTH LOGIN\r\n", "malformed challenge"},
        {"250-mx.test\r\n250 AUTH PLAIN\r\n", "334 \r\n", 1,
         "AUTH PLAIN " PLAIN_RESPONSE "\r\n", "unexpected PLAIN challenge"},
        {"250-mx.test\r\n250 AUTH LOGIN\r\n", "334 VXNlcm5hbWU6\r\n", 1,
         "AUTH LOGIN\r\n", NULL},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");

    (void)state;
    for (size_t i = 0; i < 3; i++) {
        const struct step script[] = {
            {0, GREETING},
            {1, cases[i].ehlo},
            {cases[i].lines, cases[i].challenges},
            {0, NULL},
        };
        struct deliver_result *r;
        char want[300], got[8192];

        start(script);
        r = deliver(&addr, m, 0, NULL);
        server_stop(&sv);
        snprintf(got, sizeof(got), "EHLO client.test\r\n%s", cases[i].sent);
        assert_string_equal(sv.got, got);
        assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
        snprintf(want, sizeof(want),
                 "SASL authentication failed; cannot authenticate to server "
                 "mx.test[127.0.0.1]: %s",
                 cases[i].why);
        assert_string_equal(r->rcpt[0].text, want);
        deliver_result_free(r);
    }
    /* LOGIN asked a third time */
    {
        static const struct step script[] = {
            {0, GREETING},
            {1, "250-mx.test\r\n250 AUTH LOGIN\r\n"},
            {1, "334 VXNlcm5hbWU6\r\n"},
            {1, "334 UGFzc3dvcmQ6\r\n"},
            {1, "334 UGFzc3dvcmQ6\r\n"},
            {0, NULL},
        };
        struct deliver_result *r;

        start(script);
        r = deliver(&addr, m, 0, NULL);
        server_stop(&sv);
        assert_string_equal(sv.got,
                            "EHLO client.test\r\nAUTH LOGIN\r\n" LOGIN_USER
                            "\r\n" LOGIN_PASS "\r\n");
        assert_string_equal(r->rcpt[0].text,
                            "SASL authentication failed; cannot authenticate "
                            "to server mx.test[127.0.0.1]: unexpected LOGIN "
                            "challenge");
        deliver_result_free(r);
    }
    deliver_passwd_free(m);
}

/* A PLAIN response that would make the command longer than 512 bytes
 * goes after an empty 334 (RFC 4954, 4). */
static void test_plain_long(void **state)
{
    static const struct step script[] = {
        {0, GREETING},
        {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        {1, "334 \r\n"},
        {1, "235 2.7.0 Ok\r\n"},
        TXN,
        {1, "221 Bye\r\n"},
        {0, NULL},
    };
    char text[600];
    struct deliver_passwd *m;
    struct deliver_result *r;

    (void)state;
    memset(text, 0, sizeof(text));
    memcpy(text, "mx.test user:", 13);
    memset(text + 13, 'p', 400);
    text[413] = '\n';
    m = table(text);
    start(script);
    r = deliver(&addr, m, 0, NULL);
    server_stop(&sv);
    assert_true(strncmp(sv.got,
                        "EHLO client.test\r\nAUTH PLAIN\r\nAHVzZXIAcHBw",
                        42) == 0);
    assert_non_null(strstr(sv.got, "\r\n" TXN_SENT "QUIT\r\n"));
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    deliver_result_free(r);
    deliver_passwd_free(m);
}

/* Authenticated connections are cached apart: a delivery without
 * credentials, or with another user's, makes its own connection; one
 * with the same user takes the cached one, without AUTH again. */
static void test_cache_per_user(void **state)
{
    static const struct step script[] = {
        /* first connection: user */
        {0, GREETING},
        {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        {1, "235 2.7.0 Ok\r\n"},
        TXN,
        /* the same user again on it */
        TXN,
        {0, NULL},
    };
    static const struct step script2[] = {
        /* a delivery as another user: its own connection */
        {0, GREETING},
        {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        {1, "235 2.7.0 Ok\r\n"},
        TXN,
        {0, NULL},
    };
    static const struct step script3[] = {
        /* a delivery with no credentials: its own connection */
        {0, GREETING},
        {1, "250-mx.test\r\n250 AUTH PLAIN\r\n"},
        TXN,
        {0, NULL},
    };
    struct deliver_passwd *m = table("mx.test user:pa:ss\n");
    struct deliver_passwd *m2 = table("mx.test other:pw\n");
    struct deliver_cache_params p = {5000, 300000, 0};
    struct deliver_cache *cache = deliver_cache_create(base, &p);
    struct server sv2, sv3;
    struct deliver_addr a2, a3;
    struct deliver_result *r;

    (void)state;
    start(script);
    r = deliver(&addr, m, 0, cache);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 1);
    /* another user, to "the same" destination (another port here) */
    server_start(&sv2, script2);
    addr_of(&a2, "mx.test", sv2.port);
    r = deliver(&a2, m2, 0, cache);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 2);
    /* no credentials */
    server_start(&sv3, script3);
    addr_of(&a3, "mx.test", sv3.port);
    r = deliver(&a3, NULL, 0, cache);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_count(cache), 3);
    /* the first user again: its cached connection, no AUTH */
    r = deliver(&addr, m, 0, cache);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    deliver_cache_free(cache);
    server_stop(&sv);
    server_stop(&sv2);
    server_stop(&sv3);
    assert_string_equal(sv.got, "EHLO client.test\r\n"
                                "AUTH PLAIN " PLAIN_RESPONSE
                                "\r\n" TXN_SENT TXN_SENT "QUIT\r\n");
    assert_non_null(strstr(sv2.got, "AUTH PLAIN AG90aGVyAHB3\r\n"));
    assert_null(strstr(sv3.got, "AUTH"));
    deliver_passwd_free(m);
    deliver_passwd_free(m2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain),
        cmocka_unit_test(test_login),
        cmocka_unit_test(test_nexthop_and_strangers),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_not_attempted),
        cmocka_unit_test(test_hostile_challenges),
        cmocka_unit_test(test_plain_long),
        cmocka_unit_test(test_cache_per_user),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
