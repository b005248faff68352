/*
 * test_smtp_compose - a MIME message built from its parts
 * (src/smtp/compose.c): header fields folded or RFC 2047-encoded (each
 * encoded word within 76 characters, split between UTF-8 characters),
 * display names as atoms, quoted strings or encoded words, texts as
 * 7bit, quoted-printable (lines within 76, trailing space encoded) or
 * base64, the multipart tree, RFC 2231 file names, and the checks of
 * content types and Content-IDs.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smtp/smtp.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>

static char *field(const char *name, const char *value)
{
    struct util_buf b = UTIL_BUF_INIT;

    smtp_compose_field(&b, name, value);
    return util_buf_take(&b);
}

static char *body(const struct smtp_compose *c)
{
    struct util_buf b = UTIL_BUF_INIT;

    smtp_compose_body(&b, c);
    return util_buf_take(&b);
}

/* Every line of s ends in CRLF and holds at most max bytes. */
static void lines_within(const char *s, size_t max)
{
    while (*s) {
        const char *e = strstr(s, "\r\n");

        assert_non_null(e);
        assert_true((size_t)(e - s) <= max);
        assert_null(memchr(s, '\n', (size_t)(e - s)));
        s = e + 2;
    }
}

static void test_field_plain_and_folded(void **state)
{
    char long_value[200];
    char *f = field("Subject", "Hello there");

    (void)state;
    assert_string_equal(f, "Subject: Hello there\r\n");
    free(f);
    memset(long_value, 0, sizeof(long_value));
    for (int i = 0; i < 30; i++)
        strcat(long_value, "word ");
    f = field("Subject", long_value);
    lines_within(f, 78);
    /* Unfolding (removing CRLF) gives the value back. */
    {
        struct util_buf u = UTIL_BUF_INIT;

        for (const char *p = f; *p; p++)
            if (!(p[0] == '\r' && p[1] == '\n'))
                util_buf_add(&u, p, 1);
            else
                p++;
        assert_string_equal(u.data + strlen("Subject: "), long_value);
        util_buf_free(&u);
    }
    free(f);
}

static void test_field_encoded_words(void **state)
{
    char *f = field("Subject", "Gr\xc3\xbc\xc3\x9f"
                               "e");

    (void)state;
    assert_string_equal(f, "Subject: =?utf-8?B?R3LDvMOfZQ==?=\r\n");
    free(f);
    /* "=?" in plain text would be read as an encoded word: encode it. */
    f = field("X-A", "a =?b?= c");
    assert_string_equal(f, "X-A: =?utf-8?B?YSA9P2I/PSBj?=\r\n");
    free(f);
    /* 100 two-byte characters: words within 76, none split in two. */
    {
        char v[201];

        for (int i = 0; i < 100; i++)
            memcpy(v + 2 * i, "\xc3\xa9", 2);
        v[200] = 0;
        f = field("Subject", v);
        lines_within(f, 76);
        assert_non_null(strstr(f, "?=\r\n =?utf-8?B?"));
        free(f);
    }
}

static void test_mailbox(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;

    (void)state;
    smtp_compose_mailbox(&b, "From", "News Desk", "n@example.com");
    smtp_compose_mailbox(&b, "To", "O'Neil, Bob \"B\"", "b@example.com");
    smtp_compose_mailbox(&b, "Cc", "", "c@example.com");
    smtp_compose_mailbox(&b, "Reply-To", "\xc3\x9c", "r@example.com");
    assert_string_equal(b.data,
                        "From: News Desk <n@example.com>\r\n"
                        "To: \"O'Neil, Bob \\\"B\\\"\" <b@example.com>\r\n"
                        "Cc: c@example.com\r\n"
                        "Reply-To: =?utf-8?B?w5w=?= <r@example.com>\r\n");
    util_buf_free(&b);
}

/* An address that does not fit after the last encoded word folds. */
static void test_mailbox_fold(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    char name[64] = "";
    const char *at;

    (void)state;
    while (strlen(name) < 40)
        strcat(name, "\xc3\xa9"); /* 20 x e-acute: one word of 68 */
    smtp_compose_mailbox(&b, "From", name, "a-rather-long-address@example.com");
    at = strstr(b.data, "?=");
    assert_non_null(at);
    assert_string_equal(at, "?=\r\n <a-rather-long-address@example.com>\r\n");
    assert_true(at + 2 - b.data <= 78);
    util_buf_free(&b);
}

static void test_text_7bit(void **state)
{
    struct smtp_compose c = {"one\ntwo\r\nthree\r", NULL, NULL, 0, "=_b"};
    char *m = body(&c);

    (void)state;
    assert_string_equal(m, "MIME-Version: 1.0\r\n"
                           "Content-Type: text/plain; charset=utf-8\r\n"
                           "Content-Transfer-Encoding: 7bit\r\n\r\n"
                           "one\r\ntwo\r\nthree\r\n");
    free(m);
}

static void test_text_quoted_printable(void **state)
{
    char text[200];
    struct smtp_compose c = {text, NULL, NULL, 0, "=_b"};
    char *m;

    (void)state;
    memset(text, 'x', 100);
    strcpy(text + 100, "\ncaf\xc3\xa9 a=b \n");
    m = body(&c);
    assert_non_null(strstr(m, "Content-Transfer-Encoding: quoted-printable"));
    assert_non_null(strstr(m, "=\r\nxxx"));               /* a soft break */
    assert_non_null(strstr(m, "caf=C3=A9 a=3Db=20\r\n")); /* trailing space */
    lines_within(m, 76);
    free(m);
}

static void test_text_base64(void **state)
{
    struct smtp_compose c = {NULL,
                             "\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82",
                             NULL, 0, "=_b"};
    char *m = body(&c);

    (void)state;
    assert_string_equal(m, "MIME-Version: 1.0\r\n"
                           "Content-Type: text/html; charset=utf-8\r\n"
                           "Content-Transfer-Encoding: base64\r\n\r\n"
                           "0J/RgNC40LLQtdGCDQo=\r\n");
    free(m);
}

static void test_tree(void **state)
{
    static const unsigned char gif[] = "GIF89a";
    struct smtp_attachment att[] = {
        {gif, 6, "image/gif", "p.gif", "pixel"},
        {(const unsigned char *)"hi", 2, "text/plain", "\xc3\xa9t\xc3\xa9.txt",
         NULL},
    };
    struct smtp_compose c = {"t\n", "<p>h</p>", att, 2, "=_B"};
    char *m = body(&c);

    (void)state;
    assert_string_equal(
        m, "MIME-Version: 1.0\r\n"
           "Content-Type: multipart/mixed;\r\n boundary=\"=_B_m\"\r\n"
           "Content-Transfer-Encoding: 7bit\r\n\r\n"
           "--=_B_m\r\n"
           "Content-Type: multipart/related;\r\n boundary=\"=_B_r\"\r\n"
           "Content-Transfer-Encoding: 7bit\r\n\r\n"
           "--=_B_r\r\n"
           "Content-Type: multipart/alternative;\r\n boundary=\"=_B_a\"\r\n"
           "Content-Transfer-Encoding: 7bit\r\n\r\n"
           "--=_B_a\r\n"
           "Content-Type: text/plain; charset=utf-8\r\n"
           "Content-Transfer-Encoding: 7bit\r\n\r\nt\r\n"
           "\r\n--=_B_a\r\n"
           "Content-Type: text/html; charset=utf-8\r\n"
           "Content-Transfer-Encoding: 7bit\r\n\r\n<p>h</p>\r\n"
           "\r\n--=_B_a--\r\n"
           "\r\n--=_B_r\r\n"
           "Content-Type: image/gif\r\n"
           "Content-Transfer-Encoding: base64\r\n"
           "Content-Disposition: inline;\r\n filename=\"p.gif\"\r\n"
           "Content-ID: <pixel>\r\n\r\nR0lGODlh\r\n"
           "\r\n--=_B_r--\r\n"
           "\r\n--=_B_m\r\n"
           "Content-Type: text/plain\r\n"
           "Content-Transfer-Encoding: base64\r\n"
           "Content-Disposition: attachment;\r\n"
           " filename*=utf-8''%C3%A9t%C3%A9.txt\r\n\r\naGk=\r\n"
           "\r\n--=_B_m--\r\n");
    free(m);
}

static void test_boundary_text_goes_qp(void **state)
{
    struct smtp_compose c = {"--=_B_a\n", "x", NULL, 0, "=_B"};
    char *m = body(&c);

    (void)state;
    /* A 7bit text could hold the boundary; quoted-printable cannot. */
    assert_non_null(strstr(m, "--=3D_B_a\r\n"));
    free(m);
}

static void test_checks(void **state)
{
    (void)state;
    assert_true(smtp_compose_type_valid("image/png"));
    assert_true(smtp_compose_type_valid("text/plain; charset=utf-8"));
    assert_true(smtp_compose_type_valid("application/x-a; name=\"a b.txt\""));
    assert_false(smtp_compose_type_valid("text"));
    assert_false(smtp_compose_type_valid("text/"));
    assert_false(smtp_compose_type_valid("text/plain\r\nBcc: x@y"));
    assert_false(smtp_compose_type_valid("text/plain; a"));
    assert_false(smtp_compose_type_valid("text/plain; a=\"b\r\n\""));
    assert_false(smtp_compose_type_valid("multipart/mixed; boundary=x"));
    assert_false(smtp_compose_type_valid("Message/rfc822"));
    assert_true(smtp_compose_id_valid("pixel"));
    assert_true(smtp_compose_id_valid("part1.abc@example.com"));
    assert_false(smtp_compose_id_valid(""));
    assert_false(smtp_compose_id_valid("a>b"));
    assert_false(smtp_compose_id_valid("a b"));
    assert_false(smtp_compose_id_valid("a@b@c"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_field_plain_and_folded),
        cmocka_unit_test(test_field_encoded_words),
        cmocka_unit_test(test_mailbox),
        cmocka_unit_test(test_mailbox_fold),
        cmocka_unit_test(test_text_7bit),
        cmocka_unit_test(test_text_quoted_printable),
        cmocka_unit_test(test_text_base64),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_boundary_text_goes_qp),
        cmocka_unit_test(test_checks),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
