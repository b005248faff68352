/*
 * test_util_base64 - RFC 4648 base64: the standard's test vectors, line
 * widths, and what the strict decoder refuses
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "util/util.h"

/* RFC 4648 section 10. */
static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void test_vectors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
        struct util_buf b = UTIL_BUF_INIT;
        unsigned char out[16];
        const char *text = vectors[i][1];
        ssize_t n;

        util_base64_encode(&b, vectors[i][0], strlen(vectors[i][0]), 0);
        assert_int_equal(b.len, strlen(text));
        if (b.len > 0)
            assert_memory_equal(b.data, text, b.len);
        util_buf_free(&b);
        n = util_base64_decode(out, sizeof(out), text, strlen(text), 0);
        assert_int_equal(n, (ssize_t)strlen(vectors[i][0]));
        assert_memory_equal(out, vectors[i][0], (size_t)n);
    }
}

/* The SASL PLAIN response of RFC 4616's example, binary NULs and all. */
static void test_binary(void **state)
{
    static const char plain[] = "\0tim\0tanstaaftanstaaf";
    const char *text = "AHRpbQB0YW5zdGFhZnRhbnN0YWFm";
    struct util_buf b = UTIL_BUF_INIT;
    unsigned char out[64];

    (void)state;
    util_base64_encode(&b, plain, sizeof(plain) - 1, 0);
    assert_string_equal(b.data, text);
    util_buf_free(&b);
    assert_int_equal(
        util_base64_decode(out, sizeof(out), text, strlen(text), 0),
        (ssize_t)sizeof(plain) - 1);
    assert_memory_equal(out, plain, sizeof(plain) - 1);
}

/* RFC 2045 lines: 76 characters and CRLF, the last line ended too. */
static void test_width(void **state)
{
    unsigned char in[100];
    unsigned char out[128];
    struct util_buf b = UTIL_BUF_INIT;
    const char *nl;

    (void)state;
    for (size_t i = 0; i < sizeof(in); i++)
        in[i] = (unsigned char)(i * 7);
    util_base64_encode(&b, in, sizeof(in), 76);
    nl = strstr(b.data, "\r\n");
    assert_non_null(nl);
    assert_int_equal(nl - b.data, 76);
    assert_int_equal(b.len, 136 + 4);
    assert_memory_equal(b.data + b.len - 2, "\r\n", 2);
    /* Lines decode only where white space is allowed. */
    assert_int_equal(util_base64_decode(out, sizeof(out), b.data, b.len, 0),
                     -1);
    assert_int_equal(
        util_base64_decode(out, sizeof(out), b.data, b.len, UTIL_BASE64_SPACE),
        (ssize_t)sizeof(in));
    assert_memory_equal(out, in, sizeof(in));
    util_buf_free(&b);

    /* Exactly one line's worth: one CRLF, not two. */
    util_base64_encode(&b, in, 57, 76);
    assert_int_equal(b.len, 78);
    util_buf_free(&b);
}

static void expect_refused(const char *text, int flags)
{
    unsigned char out[64];

    assert_int_equal(
        util_base64_decode(out, sizeof(out), text, strlen(text), flags), -1);
}

static void test_refused(void **state)
{
    unsigned char out[2];

    (void)state;
    expect_refused("Zg=", 0);      /* length not a multiple of 4 */
    expect_refused("Zg", 0);       /* padding missing */
    expect_refused("Z===", 0);     /* too much padding */
    expect_refused("Zg==Zg==", 0); /* data after the padding */
    expect_refused("Zh==", 0);     /* nonzero bits under the padding */
    expect_refused("Zm9=", 0);     /* the same with one pad */
    expect_refused("Zm9v!", 0);    /* outside the alphabet */
    expect_refused("Zm9v YmFy", 0);
    expect_refused("Zm=v", 0); /* padding inside */
    expect_refused("Zm9v\xff", UTIL_BASE64_SPACE);
    /* Output larger than the buffer. */
    assert_int_equal(util_base64_decode(out, sizeof(out), "Zm9v", 4, 0), -1);
    assert_int_equal(util_base64_decode(out, sizeof(out), "Zm8=", 4, 0), 2);
    /* White space around the padding, where it is allowed. */
    assert_int_equal(util_base64_decode(out, sizeof(out), " Zm 8=\r\n", 8,
                                        UTIL_BASE64_SPACE),
                     2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_width),
        cmocka_unit_test(test_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
