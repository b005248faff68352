/*
 * test_smtp_utf8 - well-formed UTF-8 (RFC 3629, 4) and what needs
 * SMTPUTF8 (RFC 6531): smtp_utf8_valid(), smtp_ascii(),
 * smtp_header_ascii()
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "smtp/smtp.h"

static int valid(const char *s)
{
    return smtp_utf8_valid(s, strlen(s));
}

/* Every length of sequence, at its bounds. */
static void test_valid(void **state)
{
    (void)state;
    assert_true(valid(""));
    assert_true(valid("plain ASCII"));
    assert_true(valid("\xc2\x80"));         /* U+0080 */
    assert_true(valid("\xdf\xbf"));         /* U+07FF */
    assert_true(valid("\xe0\xa0\x80"));     /* U+0800 */
    assert_true(valid("\xed\x9f\xbf"));     /* U+D7FF */
    assert_true(valid("\xee\x80\x80"));     /* U+E000 */
    assert_true(valid("\xef\xbf\xbf"));     /* U+FFFF */
    assert_true(valid("\xf0\x90\x80\x80")); /* U+10000 */
    assert_true(valid("\xf4\x8f\xbf\xbf")); /* U+10FFFF */
    assert_true(valid("\xc3\xa9l\xc3\xa8ve@\xc3\xa9"
                      "cole.example"));
    assert_true(smtp_utf8_valid("a\0b", 3)); /* NUL is the caller's */
}

/* RFC 3629, 4 and its examples of what is not UTF-8. */
static void test_invalid(void **state)
{
    (void)state;
    assert_false(valid("\x80"));             /* a lone continuation */
    assert_false(valid("\xc0\x80"));         /* overlong NUL */
    assert_false(valid("\xc1\xbf"));         /* overlong */
    assert_false(valid("\xe0\x9f\xbf"));     /* overlong U+07FF */
    assert_false(valid("\xf0\x8f\xbf\xbf")); /* overlong U+FFFF */
    assert_false(valid("\xed\xa0\x80"));     /* U+D800, a surrogate */
    assert_false(valid("\xed\xbf\xbf"));     /* U+DFFF */
    assert_false(valid("\xf4\x90\x80\x80")); /* U+110000 */
    assert_false(valid("\xf5\x80\x80\x80"));
    assert_false(valid("\xff"));
    assert_false(valid("\xc3"));     /* cut short at the end */
    assert_false(valid("\xe2\x82")); /* cut short */
    assert_false(valid("\xc3 "));    /* not a continuation */
    assert_false(valid("caf\xe9"));  /* Latin-1 */
    assert_false(smtp_utf8_valid("\xc3\xa9", 1));
}

static void test_ascii(void **state)
{
    (void)state;
    assert_true(smtp_ascii("", 0));
    assert_true(smtp_ascii("user@example.com", 16));
    assert_false(smtp_ascii("\xc3\xa9", 2));
    assert_true(smtp_ascii("a\xc3\xa9", 1));
    assert_false(smtp_ascii("\x7f\x80", 2));
}

/* The header section only: a UTF-8 body needs 8BITMIME, not SMTPUTF8. */
static void test_header_ascii(void **state)
{
    const char *body8 = "Subject: hi\r\n\r\nh\xc3\xa9llo\r\n";
    const char *head8 = "Subject: h\xc3\xa9llo\r\n\r\nbody\r\n";
    const char *lf = "From: a\nSubject: b\n\nc\xc3\xa9\n";
    const char *nobody = "Subject: caf\xc3\xa9";

    (void)state;
    assert_true(smtp_header_ascii(body8, strlen(body8)));
    assert_false(smtp_header_ascii(head8, strlen(head8)));
    assert_true(smtp_header_ascii(lf, strlen(lf)));
    assert_false(smtp_header_ascii(nobody, strlen(nobody)));
    assert_true(smtp_header_ascii("", 0));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_invalid),
        cmocka_unit_test(test_ascii),
        cmocka_unit_test(test_header_ascii),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
