/*
 * test_smtp_mime - 8-bit MIME made 7-bit for a server without 8BITMIME
 * (src/smtp/mime.c), by the rules of Postfix's mime_state.c: what is
 * declared 8bit or binary is re-encoded, "With message or multipart we
 * specify 7bit, with leaf entities we specify quoted-printable", soft
 * line breaks past 72 output characters, trailing white space encoded;
 * what is not declared 8-bit is left as it is.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smtp/smtp.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *downgrade(const char *in, int *converted)
{
    struct util_buf b = {0};
    char *out;

    *converted = smtp_mime_downgrade(in, strlen(in), &b);
    out = strdup(b.data ? b.data : "");
    util_buf_free(&b);
    return out;
}

static void test_undeclared_unchanged(void **state)
{
    const char *in = "Subject: x\r\n\r\ncaf\xc3\xa9\r\n";
    int n;
    char *out = downgrade(in, &n);

    (void)state;
    assert_int_equal(n, 0);
    assert_string_equal(out, in);
    free(out);
}

static void test_leaf_quoted_printable(void **state)
{
    char long_line[200], in[512], want[512];
    int n;
    char *out;

    (void)state;
    memset(long_line, 'x', 100);
    long_line[100] = 0;
    snprintf(in, sizeof(in),
             "Subject: x\r\nMIME-Version: 1.0\r\n"
             "Content-Transfer-Encoding: 8bit\r\n"
             "Content-Type: text/plain; charset=utf-8\r\n"
             "\r\n"
             "caf\xc3\xa9 = ok \r\n"
             "%s\r\n"
             "tab\t\r\n",
             long_line);
    /* 73 characters, then "=" and the rest. */
    snprintf(want, sizeof(want),
             "Subject: x\r\nMIME-Version: 1.0\r\n"
             "Content-Type: text/plain; charset=utf-8\r\n"
             "Content-Transfer-Encoding: quoted-printable\r\n"
             "\r\n"
             "caf=C3=A9 =3D ok=20\r\n"
             "%.73s=\r\n%s\r\n"
             "tab=09\r\n",
             long_line, long_line + 73);
    out = downgrade(in, &n);
    assert_int_equal(n, 1);
    assert_string_equal(out, want);
    free(out);
}

static void test_multipart(void **state)
{
    const char *in = "MIME-Version: 1.0\r\n"
                     "Content-Type: multipart/mixed; boundary=\"B1\"\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n"
                     "\r\n"
                     "preamble \xe9\r\n"
                     "--B1\r\n"
                     "Content-Type: text/plain\r\n"
                     "Content-Transfer-Encoding: 8Bit\r\n"
                     "\r\n"
                     "\xe9t\xe9\r\n"
                     "--B1\r\n"
                     "Content-Type: application/octet-stream\r\n"
                     "Content-Transfer-Encoding: base64\r\n"
                     "\r\n"
                     "AAEC\r\n"
                     "--B1\r\n"
                     "Content-Type: message/rfc822\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n"
                     "\r\n"
                     "Subject: inner\r\n"
                     "Content-Transfer-Encoding:\r\n"
                     " binary\r\n"
                     "\r\n"
                     "inner \xe9\r\n"
                     "--B1--\r\n"
                     "epilogue \xe9\r\n";
    const char *want = "MIME-Version: 1.0\r\n"
                       "Content-Type: multipart/mixed; boundary=\"B1\"\r\n"
                       "Content-Transfer-Encoding: 7bit\r\n"
                       "\r\n"
                       "preamble \xe9\r\n"
                       "--B1\r\n"
                       "Content-Type: text/plain\r\n"
                       "Content-Transfer-Encoding: quoted-printable\r\n"
                       "\r\n"
                       "=E9t=E9\r\n"
                       "--B1\r\n"
                       "Content-Type: application/octet-stream\r\n"
                       "Content-Transfer-Encoding: base64\r\n"
                       "\r\n"
                       "AAEC\r\n"
                       "--B1\r\n"
                       "Content-Type: message/rfc822\r\n"
                       "Content-Transfer-Encoding: 7bit\r\n"
                       "\r\n"
                       "Subject: inner\r\n"
                       "Content-Transfer-Encoding: quoted-printable\r\n"
                       "\r\n"
                       "inner =E9\r\n"
                       "--B1--\r\n"
                       "epilogue \xe9\r\n";
    int n;
    char *out = downgrade(in, &n);

    (void)state;
    assert_int_equal(n, 4);
    assert_string_equal(out, want);
    free(out);
}

/* A part whose boundary comes before its empty line, nested multiparts
 * closed by the outer boundary: the parser finds its way back. */
static void test_resynchronise(void **state)
{
    const char *in = "Content-Type: multipart/mixed; boundary=OUT\r\n"
                     "\r\n"
                     "--OUT\r\n"
                     "Content-Type: multipart/alternative; boundary=IN\r\n"
                     "\r\n"
                     "--IN\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n"
                     "\r\n"
                     "\xe9\r\n"
                     "--OUT\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n"
                     "\r\n"
                     "\xe8\r\n"
                     "--OUT--\r\n";
    int n;
    char *out = downgrade(in, &n);

    (void)state;
    assert_int_equal(n, 2);
    assert_non_null(strstr(out, "\r\n=E9\r\n--OUT\r\n"));
    assert_non_null(strstr(out, "\r\n=E8\r\n--OUT--\r\n"));
    for (const char *p = out; *p; p++)
        assert_true((unsigned char)*p < 0x80);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_undeclared_unchanged),
        cmocka_unit_test(test_leaf_quoted_printable),
        cmocka_unit_test(test_multipart),
        cmocka_unit_test(test_resynchronise),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
