/*
 * NAME
 *	test_ingress_submit 1 - unit tests of the submit path
 * SYNOPSIS
 *	build/tests/test_ingress_submit
 * DESCRIPTION
 *	Tests src/ingress/submit.c: reading a message with and without a
 *	"." line ending it, CR and LF handling, a last line without LF, NUL
 *	bytes, the size limit at its exact boundary, read errors; where the
 *	header section ends; getting and removing header fields (folded
 *	ones too); sendmail -t recipient extraction with and without
 *	Resent- fields; the From:, Date: and Message-ID: fields added to a
 *	local submission, byte for byte, for a fixed time in fixed zones;
 *	and the -N, -R and -V argument checks.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ingress/ingress.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define WHY_SIZE 512

/* 2024-11-22 00:02:03 UTC, a Friday. */
#define NOW ((time_t)1732233723)

/* ------------------------------------------------------------ helpers */

/* Read len bytes of text through submit_read(); in is left open. */
static int read_text(const char *text, size_t len, int dot_ends, uint64_t limit,
                     struct submit_input *out, char *why, FILE **inp)
{
    static char copy[1 << 16];
    FILE *in;
    int status;

    assert_true(len <= sizeof(copy));
    memcpy(copy, text, len);
    in = fmemopen(copy, len ? len : 1, "r");
    assert_non_null(in);
    if (len == 0)
        fgetc(in); /* fmemopen() wants a size > 0: read it past */
    why[0] = 0;
    status = submit_read(in, dot_ends, limit, out, why, WHY_SIZE);
    if (inp != NULL)
        *inp = in;
    else
        fclose(in);
    return status;
}

/* Read text and expect the stored form. */
static void reads_as(const char *text, int dot_ends, const char *expected)
{
    struct submit_input m;
    char why[WHY_SIZE];

    assert_int_equal(read_text(text, strlen(text), dot_ends, 0, &m, why, NULL),
                     SUBMIT_OK);
    assert_int_equal(m.len, strlen(expected));
    assert_memory_equal(m.data, expected, m.len);
    assert_int_equal(m.data[m.len], 0);
    submit_input_free(&m);
    assert_null(m.data);
}

/* A message in its stored form, from a string. */
static void msg_set(struct submit_input *m, const char *text)
{
    m->len = strlen(text);
    m->size = m->len + 1;
    m->data = malloc(m->size);
    assert_non_null(m->data);
    memcpy(m->data, text, m->size);
}

static void joined(const struct smtp_addr_list *l, char *buf, size_t len)
{
    size_t used = 0;
    size_t i;

    buf[0] = 0;
    for (i = 0; i < l->count; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "|" : "",
                                 l->addr[i]);
}

/* ---------------------------------------------------------- reading */

static void test_read_line_ends(void **state)
{
    (void)state;
    reads_as("a\nb\n", 0, "a\r\nb\r\n");
    reads_as("a\r\nb\r\n", 0, "a\r\nb\r\n");
    reads_as("a\r\r\n", 0, "a\r\r\n"); /* one CR is removed */
    reads_as("a\rb\n", 0, "a\rb\r\n"); /* a CR inside stays */
    reads_as("\n\n", 0, "\r\n\r\n");
    reads_as("\r\n", 0, "\r\n");
    reads_as("x\xff\x80y\n", 0, "x\xff\x80y\r\n"); /* 8-bit is data */
}

static void test_read_missing_final_newline(void **state)
{
    (void)state;
    reads_as("a\nb", 0, "a\r\nb\r\n");
    reads_as("a\nb\r", 0, "a\r\nb\r\n");
    reads_as("b", 0, "b\r\n");
    reads_as("", 0, "");
    reads_as("", 1, "");
}

static void test_read_dot_ends(void **state)
{
    struct submit_input m;
    char why[WHY_SIZE];
    FILE *in;

    (void)state;
    assert_int_equal(read_text("a\n.\nb\n", 6, 1, 0, &m, why, &in), SUBMIT_OK);
    assert_string_equal(m.data, "a\r\n");
    /* The rest of the input was not read. */
    assert_int_equal(fgetc(in), 'b');
    fclose(in);
    submit_input_free(&m);

    reads_as("a\r\n.\r\nb\r\n", 1, "a\r\n");
    reads_as(".\n", 1, "");
    reads_as("a\n.", 1, "a\r\n"); /* a last "." without LF too */
    reads_as("a\n..\nb\n", 1, "a\r\n..\r\nb\r\n"); /* no unstuffing */
    reads_as("a\n .\n. \nb", 1, "a\r\n .\r\n. \r\nb\r\n");
    reads_as("a\n.\r\r\nb\n", 1, "a\r\n.\r\r\nb\r\n");
    /* Without dot_ends (sendmail -i) a "." line is data. */
    reads_as("a\n.\nb\n", 0, "a\r\n.\r\nb\r\n");
}

static void test_read_nul(void **state)
{
    struct submit_input m;
    char why[WHY_SIZE];

    (void)state;
    assert_int_equal(read_text("a\0b\n", 4, 0, 0, &m, why, NULL),
                     SUBMIT_DATAERR);
    assert_string_equal(why, "message contains a NUL byte");
    assert_null(m.data);
    assert_int_equal(m.len, 0);
    assert_int_equal(read_text("a\nb\n\0", 5, 1, 0, &m, why, NULL),
                     SUBMIT_DATAERR);
    assert_string_equal(why, "message contains a NUL byte");
    /* After the "." nothing is read, so a NUL there does not matter. */
    assert_int_equal(read_text("a\n.\n\0", 5, 1, 0, &m, why, NULL), SUBMIT_OK);
    submit_input_free(&m);
}

static void size_ok(const char *text, int dot_ends, uint64_t limit)
{
    struct submit_input m;
    char why[WHY_SIZE];

    if (read_text(text, strlen(text), dot_ends, limit, &m, why, NULL) !=
        SUBMIT_OK)
        fail_msg("\"%s\" limit %llu: %s", text, (unsigned long long)limit, why);
    submit_input_free(&m);
}

static void size_fails(const char *text, int dot_ends, uint64_t limit)
{
    struct submit_input m;
    char why[WHY_SIZE];
    char expected[64];

    assert_int_equal(
        read_text(text, strlen(text), dot_ends, limit, &m, why, NULL),
        SUBMIT_DATAERR);
    snprintf(expected, sizeof(expected),
             "message too big: more than %llu bytes",
             (unsigned long long)limit);
    assert_string_equal(why, expected);
    assert_null(m.data);
}

/* The limit counts stored bytes, CRLF included. */
static void test_read_size_limit(void **state)
{
    (void)state;
    size_ok("abc\n", 0, 5);
    size_fails("abc\n", 0, 4);
    size_ok("abc\r\n", 0, 5);
    size_ok("abcd", 0, 6);
    size_fails("abcd", 0, 5);
    size_ok("abc\n.\n", 1, 5);
    size_ok("abc\n.\r\n", 1, 5);
    size_fails("abc\n.\n", 0, 5);
    size_ok("a\nb\nc\n", 0, 9);
    size_fails("a\nb\nc\n", 0, 8);
    size_ok("", 0, 1);
    size_ok("abc\n", 0, 0); /* no limit */
}

/* Reading stops soon after the limit is passed. */
static void test_read_size_limit_stops(void **state)
{
    static char big[60000];
    struct submit_input m;
    char why[WHY_SIZE];
    FILE *in;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(big); i++)
        big[i] = i % 10 == 9 ? '\n' : 'x';
    assert_int_equal(read_text(big, sizeof(big), 0, 1000, &m, why, &in),
                     SUBMIT_DATAERR);
    assert_string_equal(why, "message too big: more than 1000 bytes");
    assert_true(ftell(in) <= 1003);
    fclose(in);
    /* One long line, too. */
    memset(big, 'y', sizeof(big));
    assert_int_equal(read_text(big, sizeof(big), 0, 1000, &m, why, &in),
                     SUBMIT_DATAERR);
    assert_true(ftell(in) <= 1003);
    fclose(in);
}

static void test_read_error(void **state)
{
    struct submit_input m;
    char why[WHY_SIZE];
    FILE *in = fopen("/", "r");

    (void)state;
    assert_non_null(in);
    assert_int_equal(submit_read(in, 0, 0, &m, why, sizeof(why)),
                     SUBMIT_TEMPFAIL);
    assert_string_equal(why, "error reading the message: Is a directory");
    assert_null(m.data);
    fclose(in);
}

/* ---------------------------------------------------- header section */

static void header_end_is(const char *text, size_t hdr_end, size_t body)
{
    struct submit_input m;
    size_t b = 12345;

    msg_set(&m, text);
    assert_int_equal(submit_header_end(&m, &b), hdr_end);
    assert_int_equal(b, body);
    assert_int_equal(submit_header_end(&m, NULL), hdr_end);
    submit_input_free(&m);
}

static void test_header_end(void **state)
{
    (void)state;
    header_end_is("A: 1\r\nB: 2\r\n\r\nbody\r\n", 12, 14);
    header_end_is("A: 1\r\nB: 2\r\n", 12, 12); /* all headers */
    header_end_is("A: 1\r\nhello\r\n", 6, 6);  /* non-header line */
    header_end_is("A: 1\r\n 2\r\n\t3\r\nB: 4\r\n\r\nx\r\n", 20, 22);
    header_end_is(" x\r\nA: 1\r\n", 0, 0); /* leading space */
    header_end_is("hello world\r\n", 0, 0);
    header_end_is("", 0, 0);
    header_end_is("\r\nbody\r\n", 0, 2);
    header_end_is("From me@x Fri Nov 22\r\nA: 1\r\n", 0, 0);
    header_end_is("Subject : x\r\n\r\n", 13, 15);   /* space before ':' */
    header_end_is(":x\r\n", 0, 0);                  /* no name */
    header_end_is("N\xc3\xa4me: x\r\n", 0, 0);      /* 8-bit name */
    header_end_is("A: 1\r\n \r\nB: 2\r\n", 15, 15); /* blank continuation */
    header_end_is("A: 1\r\nB 2\r\n\r\n", 6, 6);
    header_end_is("A:\r\n\r\n", 4, 6);
}

static void test_header_get(void **state)
{
    struct submit_input m;
    char **v;

    (void)state;
    msg_set(&m, "To: a@b\r\nCc: c@d\r\nto:  e@f \r\nSubject: one\r\n two\r\n"
                "\tthree\r\nX:\r\n\r\nTo: body@x\r\n");
    assert_int_equal(submit_header_get(&m, "TO", &v), 2);
    assert_string_equal(v[0], "a@b");
    assert_string_equal(v[1], "e@f");
    assert_null(v[2]);
    submit_header_values_free(v);
    assert_int_equal(submit_header_get(&m, "subject", &v), 1);
    assert_string_equal(v[0], "one two\tthree");
    submit_header_values_free(v);
    assert_int_equal(submit_header_get(&m, "X", &v), 1);
    assert_string_equal(v[0], "");
    submit_header_values_free(v);
    assert_int_equal(submit_header_get(&m, "Bcc", &v), 0);
    assert_null(v);
    submit_header_values_free(v);
    assert_int_equal(submit_header_get(&m, "T", &v), 0); /* no prefixes */
    submit_input_free(&m);
}

static void removes(const char *text, const char *name, size_t count,
                    const char *expected)
{
    struct submit_input m;

    msg_set(&m, text);
    assert_int_equal(submit_header_remove(&m, name), count);
    assert_string_equal(m.data, expected);
    assert_int_equal(m.len, strlen(expected));
    submit_input_free(&m);
}

static void test_header_remove(void **state)
{
    (void)state;
    removes("A: 1\r\nBcc: x@y,\r\n z@w\r\nB: 2\r\n\r\nBcc: body\r\n", "Bcc", 1,
            "A: 1\r\nB: 2\r\n\r\nBcc: body\r\n");
    removes("Bcc: a\r\nBCC: b\r\n\tc\r\nA: 1\r\nbcc : d\r\n\r\nx\r\n", "bcc", 3,
            "A: 1\r\n\r\nx\r\n");
    removes("Bcc: a\r\n", "Bcc", 1, "");
    removes("Bcc: a\r\nhello\r\n", "Bcc", 1, "hello\r\n");
    removes("A: 1\r\n\r\n", "Bcc", 0, "A: 1\r\n\r\n");
    removes("A: 1\r\nBcc: a\r\n", "Bcc", 1, "A: 1\r\n");
    removes("Bcc-Copy: a\r\nBcc: b\r\n", "Bcc", 1, "Bcc-Copy: a\r\n");
}

static void test_remove_bcc(void **state)
{
    struct submit_input m;

    (void)state;
    msg_set(&m, "To: a@x\r\nBcc: b@x,\r\n  c@x\r\nResent-Bcc: d@x\r\n"
                "Resent-To: e@x\r\n\r\nBcc: in the body\r\n");
    submit_remove_bcc(&m);
    assert_string_equal(
        m.data, "To: a@x\r\nResent-To: e@x\r\n\r\nBcc: in the body\r\n");
    submit_input_free(&m);
}

/* ----------------------------------------------------------------- -t */

static void recipients_are(const char *text, const char *expected)
{
    struct smtp_addr_list l = {0};
    struct submit_input m;
    char why[WHY_SIZE] = "";
    char got[512];

    msg_set(&m, text);
    if (submit_recipients_from_headers(&m, &l, why, sizeof(why)) != 0)
        fail_msg("%s", why);
    joined(&l, got, sizeof(got));
    assert_string_equal(got, expected);
    smtp_addr_list_free(&l);
    submit_input_free(&m);
}

static void test_recipients(void **state)
{
    (void)state;
    recipients_are("To: a@x, B <b@y>\r\nCc: c@z\r\nSubject: s\r\nBcc: d@w\r\n"
                   "\r\nTo: e@body\r\n",
                   "a@x|b@y|c@z|d@w");
    recipients_are("Cc: c@x\r\nTo: t@x\r\n", "c@x|t@x"); /* field order */
    recipients_are("To: a@x,\r\n b@y\r\n", "a@x|b@y");
    recipients_are("TO: root\r\ncc: G: x@y;\r\n", "root|x@y");
    recipients_are("Subject: none\r\n\r\n", "");
    recipients_are("To: undisclosed-recipients:;\r\n", "");
    recipients_are("To: a@x\r\nhello\r\nCc: b@x\r\n", "a@x");
    recipients_are("To: a@x\r\nTo: a@x\r\n", "a@x|a@x"); /* uniq: caller */
}

static void test_recipients_resent(void **state)
{
    (void)state;
    recipients_are("To: a@x\r\nResent-To: r@x\r\nResent-Cc: s@x\r\n"
                   "Resent-Bcc: t@x\r\nCc: c@x\r\n\r\n",
                   "r@x|s@x|t@x");
    recipients_are("To: a@x\r\nRESENT-BCC: t@x\r\n", "t@x");
    /* Other Resent- fields do not count. */
    recipients_are("Resent-From: f@x\r\nResent-Date: x\r\nTo: a@x\r\n", "a@x");
}

static void test_recipients_errors(void **state)
{
    struct smtp_addr_list l = {0};
    struct submit_input m;
    char why[WHY_SIZE];

    (void)state;
    smtp_addr_list_add(&l, "before@x");
    msg_set(&m, "To: a@x\r\nCC: John Smith\r\n");
    assert_int_equal(submit_recipients_from_headers(&m, &l, why, sizeof(why)),
                     -1);
    assert_string_equal(why, "CC: name without an address at \"John Smith\"");
    assert_int_equal(l.count, 1);
    submit_input_free(&m);

    msg_set(&m, "Bcc: <a@x\r\n");
    assert_int_equal(submit_recipients_from_headers(&m, &l, why, sizeof(why)),
                     -1);
    assert_string_equal(why, "Bcc: expected \">\" at end of text");
    submit_input_free(&m);

    msg_set(&m, "To: b@x\r\n");
    assert_int_equal(submit_recipients_from_headers(&m, &l, why, sizeof(why)),
                     0);
    assert_int_equal(l.count, 2); /* appended */
    assert_string_equal(l.addr[1], "b@x");
    submit_input_free(&m);
    smtp_addr_list_free(&l);
}

/* ---------------------------------------------------- missing headers */

static void set_tz(const char *tz)
{
    setenv("TZ", tz, 1);
    tzset();
}

static void completes(const char *text, const char *sender,
                      const char *full_name, const char *expected)
{
    struct submit_input m;

    msg_set(&m, text);
    assert_int_equal(submit_add_missing_headers(&m, sender, full_name,
                                                "mx.example.org", NOW, "4XyZ"),
                     0);
    assert_string_equal(m.data, expected);
    assert_int_equal(m.len, strlen(expected));
    submit_input_free(&m);
}

#define ADDED_DATE  "Date: Fri, 22 Nov 2024 00:02:03 +0000\r\n"
#define ADDED_ID    "Message-ID: <4XyZ@mx.example.org>\r\n"
#define ADDED(from) "From: " from "\r\n" ADDED_DATE ADDED_ID

static void test_missing_all(void **state)
{
    (void)state;
    set_tz("UTC");
    completes("Subject: hi\r\n\r\nbody\r\n", "alice@example.org", NULL,
              "Subject: hi\r\n" ADDED("alice@example.org") "\r\nbody\r\n");
    completes("", "alice@example.org", NULL, ADDED("alice@example.org"));
    completes("Subject: hi\r\n", "alice@example.org", NULL,
              "Subject: hi\r\n" ADDED("alice@example.org"));
    /* "\"a b\"@x" is a valid sender: spaces inside quotes. */
    completes("", "\"a b\"@x", NULL, ADDED("\"a b\"@x"));
}

static void test_missing_some(void **state)
{
    (void)state;
    set_tz("UTC");
    completes("from: x@y\r\nDATE: whenever\r\nmessage-id: <1@x>\r\n\r\nb\r\n",
              "alice@example.org", "Alice",
              "from: x@y\r\nDATE: whenever\r\nmessage-id: <1@x>\r\n\r\nb\r\n");
    completes("From: x@y\r\n\r\n", "a@b", NULL,
              "From: x@y\r\n" ADDED_DATE ADDED_ID "\r\n");
    completes("Date: d\r\nMessage-Id: <1@x>\r\n\r\n", "a@b", NULL,
              "Date: d\r\nMessage-Id: <1@x>\r\nFrom: a@b\r\n\r\n");
    /* Fields in the body do not count. */
    completes("Subject: s\r\n\r\nFrom: x@y\r\n", "a@b", NULL,
              "Subject: s\r\n" ADDED("a@b") "\r\nFrom: x@y\r\n");
}

static void test_missing_resent(void **state)
{
    (void)state;
    set_tz("UTC");
    completes("Resent-To: x@y\r\nFrom: a@b\r\nDate: d\r\nMessage-ID: <m>\r\n"
              "\r\n",
              "r@b", NULL,
              "Resent-To: x@y\r\nFrom: a@b\r\nDate: d\r\nMessage-ID: <m>\r\n"
              "Resent-From: r@b\r\n"
              "Resent-Date: Fri, 22 Nov 2024 00:02:03 +0000\r\n"
              "Resent-Message-ID: <4XyZ@mx.example.org>\r\n\r\n");
    completes("resent-from: r@b\r\nResent-Message-ID: <m>\r\n\r\n", "r@b", NULL,
              "resent-from: r@b\r\nResent-Message-ID: <m>\r\n"
              "Resent-Date: Fri, 22 Nov 2024 00:02:03 +0000\r\n\r\n");
}

/* The body must not be read as broken headers. */
static void test_missing_separator(void **state)
{
    (void)state;
    set_tz("UTC");
    completes("Subject: x\r\nhello\r\n", "a@b", NULL,
              "Subject: x\r\n" ADDED("a@b") "\r\nhello\r\n");
    completes("hello\r\n", "a@b", NULL, ADDED("a@b") "\r\nhello\r\n");
    completes("From: x\r\nDate: y\r\nMessage-ID: z\r\nhello\r\n", "a@b", NULL,
              "From: x\r\nDate: y\r\nMessage-ID: z\r\n\r\nhello\r\n");
    completes("\r\nbody\r\n", "a@b", NULL, ADDED("a@b") "\r\nbody\r\n");
}

static void test_full_names(void **state)
{
    (void)state;
    set_tz("UTC");
    completes("", "a@b", "Alice Liddell", ADDED("Alice Liddell <a@b>"));
    completes("", "a@b", "Liddell, Alice", ADDED("\"Liddell, Alice\" <a@b>"));
    completes("", "a@b", "A \"B\" C\\", ADDED("\"A \\\"B\\\" C\\\\\" <a@b>"));
    completes("", "a@b", "John Q. Public", ADDED("\"John Q. Public\" <a@b>"));
    completes("", "a@b", "  Alice  ", ADDED("Alice <a@b>"));
    completes("", "a@b", "Alice  Liddell", ADDED("\"Alice  Liddell\" <a@b>"));
    completes("", "a@b", "O'Brien", ADDED("O'Brien <a@b>"));
    completes("", "a@b", "   ", ADDED("a@b"));
    completes("", "a@b", "", ADDED("a@b"));
    /* No header injection: control characters become spaces. */
    completes("", "a@b", "Eve\r\nBcc: x@y", ADDED("\"Eve  Bcc: x@y\" <a@b>"));
    completes("", "a@b", "Eve\n", ADDED("Eve <a@b>"));
    /* The null sender. */
    completes("", "", NULL, ADDED("MAILER-DAEMON@mx.example.org"));
    completes("", "", "Mail System",
              ADDED("Mail System <MAILER-DAEMON@mx.example.org>"));
}

static void test_full_names_8bit(void **state)
{
    char name[400];

    (void)state;
    set_tz("UTC");
    completes("", "j@b", "J\xc3\xb6rg M\xc3\xbcller",
              ADDED("=?utf-8?B?SsO2cmcgTcO8bGxlcg==?= <j@b>"));
    /* 30 x e-acute, 60 bytes: each word fits its line (smtp/compose.c),
     * 42 bytes on the first, split between characters. */
    name[0] = 0;
    while (strlen(name) < 60)
        strcat(name, "\xc3\xa9");
    completes(
        "", "j@b", name,
        ADDED("=?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOp"
              "w6nDqcOp?=\r\n =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOp?= <j@b>"));
    /* "a" + 150 x e-acute, 301 bytes: cut to 255, not inside a character. */
    strcpy(name, "a");
    while (strlen(name) < 301)
        strcat(name, "\xc3\xa9");
    completes("", "j@b", name,
              ADDED("=?utf-8?B?YcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6n"
                    "DqcOpw6k=?=\r\n"
                    " =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqc"
                    "Opw6nDqcOpw6k=?=\r\n"
                    " =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqc"
                    "Opw6nDqcOpw6k=?=\r\n"
                    " =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqc"
                    "Opw6nDqcOpw6k=?=\r\n"
                    " =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqc"
                    "Opw6nDqcOpw6k=?=\r\n"
                    " =?utf-8?B?w6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqcOpw6nDqc"
                    "Opw6k=?= <j@b>"));
}

static void test_long_ascii_name_cut(void **state)
{
    char name[300];
    char expected[1024];

    (void)state;
    set_tz("UTC");
    memset(name, 'n', 299);
    name[299] = 0;
    snprintf(expected, sizeof(expected),
             "From: %.256s <a@b>\r\n" ADDED_DATE ADDED_ID, name);
    completes("", "a@b", name, expected);
}

static void test_date_zones(void **state)
{
    (void)state;
    set_tz("IST-5:30");
    completes("From: a\r\nMessage-ID: m\r\n", "a@b", NULL,
              "From: a\r\nMessage-ID: m\r\n"
              "Date: Fri, 22 Nov 2024 05:32:03 +0530\r\n");
    set_tz("EST5");
    completes("From: a\r\nMessage-ID: m\r\n", "a@b", NULL,
              "From: a\r\nMessage-ID: m\r\n"
              "Date: Thu, 21 Nov 2024 19:02:03 -0500\r\n");
    set_tz("UTC");
    {
        struct submit_input m;

        msg_set(&m, "From: a\r\nMessage-ID: m\r\n");
        assert_int_equal(submit_add_missing_headers(&m, "a@b", NULL, "h",
                                                    (time_t)946684799, "q"),
                         0);
        assert_string_equal(m.data,
                            "From: a\r\nMessage-ID: m\r\n"
                            "Date: Fri, 31 Dec 1999 23:59:59 +0000\r\n");
        submit_input_free(&m);
    }
}

static void bad_args(const char *sender, const char *hostname,
                     const char *queue_id)
{
    struct submit_input m;

    msg_set(&m, "Subject: s\r\n\r\n");
    errno = 0;
    assert_int_equal(
        submit_add_missing_headers(&m, sender, NULL, hostname, NOW, queue_id),
        -1);
    assert_int_equal(errno, EINVAL);
    assert_string_equal(m.data, "Subject: s\r\n\r\n");
    submit_input_free(&m);
}

static void test_missing_bad_arguments(void **state)
{
    (void)state;
    bad_args("a@b\r\nBcc: x@y", "h", "q");
    bad_args("a@b\x7f", "h", "q");
    bad_args("a@b", "", "q");
    bad_args("a@b", "h h", "q");
    bad_args("a@b", "h\n", "q");
    bad_args("a@b", "h", "");
    bad_args("a@b", "h", "q q");
}

/* ------------------------------------------------------ DSN arguments */

static void notify_is(const char *text, unsigned expected)
{
    unsigned bits = 999;

    if (submit_parse_notify(text, &bits) != 0)
        fail_msg("\"%s\" rejected", text);
    assert_int_equal(bits, expected);
}

static void test_notify(void **state)
{
    static const char *const bad[] = {
        "",          ",",      " , ",      "never,success",   "success,NEVER",
        "sometimes", "succes", "successx", "success;failure", "success,x",
    };
    unsigned bits;
    size_t i;

    (void)state;
    notify_is("never", SPOOL_NOTIFY_NEVER);
    notify_is("NEVER", SPOOL_NOTIFY_NEVER);
    notify_is("never,never", SPOOL_NOTIFY_NEVER);
    notify_is("success", SPOOL_NOTIFY_SUCCESS);
    notify_is("failure", SPOOL_NOTIFY_FAILURE);
    notify_is("delay", SPOOL_NOTIFY_DELAY);
    notify_is("success,failure", SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE);
    notify_is("Success, Delay", SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_DELAY);
    notify_is("failure,delay,success",
              SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE | SPOOL_NOTIFY_DELAY);
    notify_is(",success,,failure,",
              SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE);
    notify_is("delay\tfailure", SPOOL_NOTIFY_FAILURE | SPOOL_NOTIFY_DELAY);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bits = 999;
        if (submit_parse_notify(bad[i], &bits) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_int_equal(bits, 999);
    }
}

static void test_ret(void **state)
{
    enum spool_ret ret = SPOOL_RET_DEFAULT;

    (void)state;
    assert_int_equal(submit_parse_ret("full", &ret), 0);
    assert_int_equal(ret, SPOOL_RET_FULL);
    assert_int_equal(submit_parse_ret("HDRS", &ret), 0);
    assert_int_equal(ret, SPOOL_RET_HDRS);
    assert_int_equal(submit_parse_ret("Full", &ret), 0);
    assert_int_equal(ret, SPOOL_RET_FULL);
    assert_int_equal(submit_parse_ret("", &ret), -1);
    assert_int_equal(submit_parse_ret("headers", &ret), -1);
    assert_int_equal(submit_parse_ret("full ", &ret), -1);
    assert_int_equal(submit_parse_ret("hdr", &ret), -1);
    assert_int_equal(ret, SPOOL_RET_FULL);
}

static void test_envid(void **state)
{
    char id[128];

    (void)state;
    assert_int_equal(submit_envid_valid("abc"), 1);
    assert_int_equal(submit_envid_valid("a+b=c<d>@e"), 1);
    assert_int_equal(submit_envid_valid(""), 0);
    assert_int_equal(submit_envid_valid("a b"), 0);
    assert_int_equal(submit_envid_valid("a\tb"), 0);
    assert_int_equal(submit_envid_valid("a\x7f"), 0);
    assert_int_equal(submit_envid_valid("\xc3\xa9"), 0);
    memset(id, 'x', 100);
    id[100] = 0;
    assert_int_equal(submit_envid_valid(id), 1);
    id[100] = 'x';
    id[101] = 0;
    assert_int_equal(submit_envid_valid(id), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_line_ends),
        cmocka_unit_test(test_read_missing_final_newline),
        cmocka_unit_test(test_read_dot_ends),
        cmocka_unit_test(test_read_nul),
        cmocka_unit_test(test_read_size_limit),
        cmocka_unit_test(test_read_size_limit_stops),
        cmocka_unit_test(test_read_error),
        cmocka_unit_test(test_header_end),
        cmocka_unit_test(test_header_get),
        cmocka_unit_test(test_header_remove),
        cmocka_unit_test(test_remove_bcc),
        cmocka_unit_test(test_recipients),
        cmocka_unit_test(test_recipients_resent),
        cmocka_unit_test(test_recipients_errors),
        cmocka_unit_test(test_missing_all),
        cmocka_unit_test(test_missing_some),
        cmocka_unit_test(test_missing_resent),
        cmocka_unit_test(test_missing_separator),
        cmocka_unit_test(test_full_names),
        cmocka_unit_test(test_full_names_8bit),
        cmocka_unit_test(test_long_ascii_name_cut),
        cmocka_unit_test(test_date_zones),
        cmocka_unit_test(test_missing_bad_arguments),
        cmocka_unit_test(test_notify),
        cmocka_unit_test(test_ret),
        cmocka_unit_test(test_envid),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
