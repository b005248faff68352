/*
 * test_util_json - JSON strings from any text: escapes, UTF-8 kept,
 * bytes that are not UTF-8 replaced, so that a strict parser accepts it
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "util/util.h"

static void expect_json(const char *text, const char *expected)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_json_string(&b, text);
    assert_string_equal(b.data, expected);
    util_buf_free(&b);
}

static void test_escapes(void **state)
{
    (void)state;
    expect_json("plain", "\"plain\"");
    expect_json("a\"b\\c", "\"a\\\"b\\\\c\"");
    expect_json("l1\nl2\tx", "\"l1\\nl2\\tx\"");
    expect_json("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    expect_json("", "\"\"");
    expect_json(NULL, "\"\"");
}

/* RFC 8259 section 8.1: JSON text is UTF-8. */
static void test_utf8(void **state)
{
    (void)state;
    expect_json("b\xc3\xbcro", "\"b\xc3\xbcro\"");           /* 2 bytes */
    expect_json("\xe2\x82\xac", "\"\xe2\x82\xac\"");         /* 3 bytes */
    expect_json("\xf0\x9f\x93\xa7", "\"\xf0\x9f\x93\xa7\""); /* 4 bytes */
    expect_json("a\xff"
                "b",
                "\"a\\ufffdb\"");                             /* never UTF-8 */
    expect_json("\xc3", "\"\\ufffd\"");                       /* cut short */
    expect_json("\xc0\xaf", "\"\\ufffd\\ufffd\"");            /* overlong */
    expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    expect_json("\xf4\x90\x80\x80",
                "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > 10FFFF */
    expect_json("\x80x", "\"\\ufffdx\"");            /* lone continuation */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_utf8),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
