/*
 * test_util_quote - text in double quotes for messages: escapes, 8-bit
 * bytes, the length limit and a buffer too small for all of it
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* Quote text into a buffer of len bytes; it must read as expected. */
static void expect_quote(size_t len, const char *text, int flags,
                         const char *expected)
{
    char buf[256];

    assert_true(len <= sizeof(buf));
    util_quote(buf, len, text, strlen(text), flags);
    assert_string_equal(buf, expected);
}

static void test_escapes(void **state)
{
    char buf[16];

    (void)state;
    expect_quote(128, "plain text", 0, "\"plain text\"");
    expect_quote(128, "a\"b\\c\td\x7f", 0, "\"a\\\"b\\\\c\\x09d\\x7f\"");
    expect_quote(128, "", 0, "\"\"");
    util_quote(buf, sizeof(buf), "a\0b", 3, 0);
    assert_string_equal(buf, "\"a\\x00b\"");
}

static void test_8bit(void **state)
{
    (void)state;
    expect_quote(128, "b\xc3\xbcro", 0, "\"b\\xc3\\xbcro\"");
    expect_quote(128, "b\xc3\xbcro", UTIL_QUOTE_8BIT, "\"b\xc3\xbcro\"");
    expect_quote(128, "\x01\x7f", UTIL_QUOTE_8BIT, "\"\\x01\\x7f\"");
}

static void test_long_text(void **state)
{
    char text[101];
    char expect[160];

    (void)state;
    memset(text, 'x', 100);
    text[100] = 0;
    snprintf(expect, sizeof(expect), "\"%.*s...\"", UTIL_QUOTE_MAX, text);
    expect_quote(256, text, 0, expect);
    text[UTIL_QUOTE_MAX] = 0;
    snprintf(expect, sizeof(expect), "\"%s\"", text);
    expect_quote(256, text, 0, expect);
}

static void test_small_buffer(void **state)
{
    char buf[4] = "x";

    (void)state;
    /* 16 bytes: the quote, 10 of text, "...", the quote, the NUL. */
    expect_quote(16, "abcdefghijklmnop", 0, "\"abcdefghij...\"");
    expect_quote(16, "abcdefghij", 0, "\"abcdefghij\"");
    /* An escape is never cut in two. */
    expect_quote(16, "abcdefgh\x01z", 0, "\"abcdefgh...\"");
    expect_quote(7, "abc", 0, "");
    util_quote(buf, 0, "abc", 3, 0);
    assert_string_equal(buf, "x");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_8bit),
        cmocka_unit_test(test_long_text),
        cmocka_unit_test(test_small_buffer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
