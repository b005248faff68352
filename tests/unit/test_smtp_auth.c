/*
 * test_smtp_auth - SMTP AUTH without I/O: the mechanisms an EHLO reply
 * offers (RFC 4954, 3), PLAIN's message (RFC 4616, 2) and 334
 * challenges, hostile ones included.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "smtp/smtp.h"
#include "util/util.h"

/* An EHLO reply from its lines, "250-" and "250 " added. */
static unsigned offered(const char *const *lines, size_t n)
{
    struct smtp_reply r;
    char buf[256];
    unsigned bits;

    smtp_reply_init(&r);
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof(buf), "250%c%s", i + 1 < n ? '-' : ' ', lines[i]);
        assert_int_equal(smtp_reply_line(&r, buf, strlen(buf)),
                         i + 1 < n ? 0 : 1);
    }
    bits = smtp_ehlo_auth(&r);
    smtp_reply_free(&r);
    return bits;
}

#define OFFERED(...)                                                           \
    offered((const char *const[]){__VA_ARGS__},                                \
            sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void test_ehlo_mechanisms(void **state)
{
    (void)state;
    assert_int_equal(OFFERED("mx.test", "PIPELINING", "AUTH PLAIN LOGIN"),
                     SMTP_AUTH_OFFERED | SMTP_AUTH_PLAIN | SMTP_AUTH_LOGIN);
    assert_int_equal(OFFERED("mx.test", "auth login cram-md5"),
                     SMTP_AUTH_OFFERED | SMTP_AUTH_LOGIN);
    /* the pre-standard form, alone or beside the standard one */
    assert_int_equal(OFFERED("mx.test", "AUTH=PLAIN"),
                     SMTP_AUTH_OFFERED | SMTP_AUTH_PLAIN);
    assert_int_equal(OFFERED("mx.test", "AUTH CRAM-MD5", "AUTH=LOGIN"),
                     SMTP_AUTH_OFFERED | SMTP_AUTH_LOGIN);
    /* AUTH with nothing we speak, or nothing at all */
    assert_int_equal(OFFERED("mx.test", "AUTH CRAM-MD5 SCRAM-SHA-256"),
                     SMTP_AUTH_OFFERED);
    assert_int_equal(OFFERED("mx.test", "AUTH"), SMTP_AUTH_OFFERED);
    assert_int_equal(OFFERED("mx.test", "SIZE 10", "8BITMIME"), 0);
}

/* Hostile and near-miss lines: names that only start like ours, the
 * keyword as a prefix, the greeting line (not a keyword). */
static void test_ehlo_near_misses(void **state)
{
    (void)state;
    assert_int_equal(OFFERED("AUTH PLAIN"), 0); /* the first line */
    assert_int_equal(OFFERED("mx.test", "AUTHX PLAIN"), 0);
    assert_int_equal(OFFERED("mx.test", "AUTH PLAINX LOGINS XPLAIN"),
                     SMTP_AUTH_OFFERED);
    assert_int_equal(OFFERED("mx.test", "AUTH  ==  PLAIN   "),
                     SMTP_AUTH_OFFERED | SMTP_AUTH_PLAIN);
    assert_int_equal(OFFERED("mx.test", "X-AUTH PLAIN"), 0);
}

static void test_plain_message(void **state)
{
    struct util_buf b = {0};
    unsigned char out[64];
    ssize_t n;

    (void)state;
    /* RFC 4616, 4: "\0tim\0tanstaaftanstaaf" */
    smtp_auth_plain(&b, "tim", "tanstaaftanstaaf");
    assert_string_equal(b.data, "AHRpbQB0YW5zdGFhZnRhbnN0YWFm");
    b.len = 0;
    /* a password with ':' and spaces goes as it is */
    smtp_auth_plain(&b, "u@x.test", "p:a ss");
    n = util_base64_decode(out, sizeof(out), b.data, b.len, 0);
    assert_int_equal(n, 16);
    assert_memory_equal(out, "\0u@x.test\0p:a ss", 16);
    util_buf_free(&b);
}

static void test_plain_long(void **state)
{
    struct util_buf b = {0};
    char user[3000];
    unsigned char *out = NULL;
    ssize_t n;

    (void)state;
    memset(user, 'u', sizeof(user) - 1);
    user[sizeof(user) - 1] = 0;
    smtp_auth_plain(&b, user, "pw");
    out = malloc(UTIL_BASE64_DECODED_MAX(b.len));
    n = util_base64_decode(out, UTIL_BASE64_DECODED_MAX(b.len), b.data, b.len,
                           0);
    assert_int_equal(n, (ssize_t)(sizeof(user) - 1 + 4));
    assert_int_equal(out[0], 0);
    assert_int_equal(out[sizeof(user)], 0);
    assert_memory_equal(out + sizeof(user) + 1, "pw", 2);
    free(out);
    util_buf_free(&b);
}

static void test_challenges(void **state)
{
    unsigned char out[32];

    (void)state;
    assert_int_equal(smtp_auth_challenge("VXNlcm5hbWU6", out, sizeof(out)), 9);
    assert_memory_equal(out, "Username:", 9);
    assert_int_equal(smtp_auth_challenge("UGFzc3dvcmQ6", out, sizeof(out)), 9);
    assert_memory_equal(out, "Password:", 9);
    assert_int_equal(smtp_auth_challenge("", out, sizeof(out)), 0);
    assert_int_equal(smtp_auth_challenge(NULL, out, sizeof(out)), 0);
    /* not base64: text, white space, bad padding, too long */
    assert_int_equal(smtp_auth_challenge("Username:", out, sizeof(out)), -1);
    assert_int_equal(smtp_auth_challenge("VXNl cm5hbWU6", out, sizeof(out)),
                     -1);
    assert_int_equal(smtp_auth_challenge("VXNlcm5hbWU", out, sizeof(out)), -1);
    assert_int_equal(smtp_auth_challenge("=VXNlcm5hbWU6", out, sizeof(out)),
                     -1);
    assert_int_equal(smtp_auth_challenge("VXNlcm5hbWU6", out, 4), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ehlo_mechanisms),
        cmocka_unit_test(test_ehlo_near_misses),
        cmocka_unit_test(test_plain_message),
        cmocka_unit_test(test_plain_long),
        cmocka_unit_test(test_challenges),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
