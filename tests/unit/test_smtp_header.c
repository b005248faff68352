/*
 * test_smtp_header - one header field's value from a message's start:
 * case, white space before the colon, folding, the end of the header
 * section, a value cut to fit
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "smtp/smtp.h"

static void expect_field(const char *text, const char *name, int found,
                         const char *value)
{
    char out[64];

    assert_int_equal(
        smtp_header_value(text, strlen(text), name, out, sizeof(out)), found);
    assert_string_equal(out, value);
}

static void test_values(void **state)
{
    (void)state;
    expect_field("From: a@b\r\nMessage-ID: <1@x>\r\n\r\nbody\r\n", "Message-ID",
                 1, "<1@x>");
    expect_field("message-id:<2@x>\r\n\r\n", "Message-ID", 1, "<2@x>");
    expect_field("Message-ID  : \t<3@x> \r\n\r\n", "Message-ID", 1, "<3@x>");
    /* Folded: the CRLF goes, the white space after it stays. */
    expect_field("Message-ID:\r\n <4@x>\r\nTo: c\r\n\r\n", "Message-ID", 1,
                 "<4@x>");
    expect_field("Subject: a\r\n b\r\n\tc\r\n\r\n", "Subject", 1, "a b\tc");
    /* LF alone, as a file may have it. */
    expect_field("Subject: lf\n\nbody\n", "Subject", 1, "lf");
    /* The first of two. */
    expect_field("Subject: one\r\nSubject: two\r\n\r\n", "Subject", 1, "one");
    /* Not a prefix match. */
    expect_field("Message-IDs: <5@x>\r\n\r\n", "Message-ID", 0, "");
}

static void test_header_section_only(void **state)
{
    (void)state;
    /* In the body: not a header field. */
    expect_field("From: a\r\n\r\nMessage-ID: <6@x>\r\n", "Message-ID", 0, "");
    /* A line that is not a field ends the section. */
    expect_field("From: a\r\nnot a field\r\nMessage-ID: <7@x>\r\n\r\n",
                 "Message-ID", 0, "");
    expect_field("", "Message-ID", 0, "");
    /* Cut off in the middle (only the start of a message). */
    expect_field("Message-ID: <8@x", "Message-ID", 1, "<8@x");
}

static void test_cut_to_fit(void **state)
{
    char out[8];

    (void)state;
    assert_int_equal(smtp_header_value("Subject: 0123456789\r\n\r\n", 23,
                                       "Subject", out, sizeof(out)),
                     1);
    assert_string_equal(out, "0123456");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_header_section_only),
        cmocka_unit_test(test_cut_to_fit),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
