/*
 * NAME
 *	test_smtp_data 1 - unit tests of the DATA and BDAT content reader
 * SYNOPSIS
 *	build/tests/test_smtp_data
 * DESCRIPTION
 *	Tests src/smtp/data.c against RFC 5321 4.5.2 (dot-stuffing, the end
 *	of data) and the SMTP smuggling defence: content comes out in the
 *	stored form (CRLF lines, dots unstuffed) whatever the input's
 *	packet boundaries; the end is CRLF.CRLF and nothing else; a bare LF
 *	or bare CR anywhere, including in ".\n" or ".\r" forms of an end, is
 *	an error at the byte where it is seen; what follows the end is left
 *	unread (pipelined commands); BDAT content is taken as it is, bare
 *	line ends refused, a last line without CRLF completed; the size
 *	limit stops storing but not reading. A NUL in the header section is
 *	refused, in the body too unless the strip set (Postfix's
 *	message_strip_characters, its escapes parsed) holds it; in the
 *	NORMALIZE reading a bare LF ends a line and no smuggling form ends
 *	the data.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smtp/smtp.h"

#include <stdlib.h>
#include <string.h>

struct out {
    char buf[4096];
    size_t len;
};

static void emit(void *ctx, const char *p, size_t len)
{
    struct out *o = ctx;

    assert_true(o->len + len < sizeof(o->buf));
    memcpy(o->buf + o->len, p, len);
    o->len += len;
    o->buf[o->len] = 0;
}

/* Feed text in pieces of step bytes; the status and bytes used. */
static int feed(struct smtp_data_reader *r, const char *text, size_t step,
                struct out *o, size_t *used_total)
{
    size_t len = strlen(text), pos = 0;
    int rc = SMTP_DATA_MORE;

    *used_total = 0;
    while (pos < len && rc == SMTP_DATA_MORE) {
        size_t n = len - pos < step ? len - pos : step;
        size_t used = 0;

        rc = smtp_data_feed(r, text + pos, n, &used, emit, o);
        *used_total += used;
        pos += used;
        if (rc == SMTP_DATA_MORE)
            assert_int_equal(used, n);
    }
    return rc;
}

static void test_unstuffing_any_split(void **state)
{
    static const char in[] = "Subject: x\r\n"
                             "\r\n"
                             "..leading dot\r\n"
                             ".x dropped dot\r\n"
                             "...\r\n"
                             "last\r\n"
                             ".\r\n"
                             "QUIT\r\n";
    static const char want[] = "Subject: x\r\n"
                               "\r\n"
                               ".leading dot\r\n"
                               "x dropped dot\r\n"
                               "..\r\n"
                               "last\r\n";

    (void)state;
    for (size_t step = 1; step <= sizeof(in); step++) {
        struct smtp_data_reader r;
        struct out o = {{0}, 0};
        size_t used;

        smtp_data_init(&r, SMTP_DATA_DOT, 0);
        assert_int_equal(feed(&r, in, step, &o, &used), SMTP_DATA_DONE);
        assert_string_equal(o.buf, want);
        /* "QUIT\r\n" is left for the command reader. */
        assert_int_equal(used, strlen(in) - strlen("QUIT\r\n"));
        assert_int_equal(r.size, strlen(want));
    }
}

static void test_empty_message(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    size_t used;

    (void)state;
    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(feed(&r, ".\r\n", 3, &o, &used), SMTP_DATA_DONE);
    assert_int_equal(o.len, 0);
}

/* Each of these must fail at the byte given, whatever came before. */
static void smuggle(const char *text, int want, size_t at)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    size_t used;

    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(feed(&r, text, 1, &o, &used), want);
    assert_int_equal(used, at);
}

static void test_smuggling_forms_refused(void **state)
{
    (void)state;
    smuggle("a\nb\r\n.\r\n", SMTP_DATA_BARE_LF, 1);
    smuggle("a\rb\r\n.\r\n", SMTP_DATA_BARE_CR, 2);
    smuggle("a\r\n.\nMAIL FROM:<x>\r\n", SMTP_DATA_BARE_LF, 4);
    smuggle("a\r\n.\r MAIL FROM:<x>\r\n", SMTP_DATA_BARE_CR, 5);
    smuggle("a\n.\n", SMTP_DATA_BARE_LF, 1);
    smuggle("a\r\n\n.\r\n", SMTP_DATA_BARE_LF, 3);
    smuggle("\n.\r\n", SMTP_DATA_BARE_LF, 0);
    smuggle("..\n", SMTP_DATA_BARE_LF, 2);
}

static void test_size_limit(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    size_t used;

    (void)state;
    smtp_data_init(&r, SMTP_DATA_DOT, 10);
    assert_int_equal(feed(&r, "0123456789\r\nmore\r\n.\r\nX", 4, &o, &used),
                     SMTP_DATA_DONE);
    assert_true(r.too_big);
    assert_int_equal(r.size, 18);
    assert_true(o.len <= 10);
    assert_int_equal(used, strlen("0123456789\r\nmore\r\n.\r\n"));
}

static void test_bdat(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    size_t used;

    (void)state;
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    assert_int_equal(
        smtp_data_feed(&r, "Subject: y\r\n\r\n.no", 17, &used, emit, &o),
        SMTP_DATA_MORE);
    assert_int_equal(used, 17);
    assert_int_equal(
        smtp_data_feed(&r, " stuffing\r\n.\r\nlast", 18, &used, emit, &o),
        SMTP_DATA_MORE);
    assert_int_equal(smtp_data_finish(&r, emit, &o), SMTP_DATA_DONE);
    /* Taken as it is, and the last line completed with CRLF. */
    assert_string_equal(o.buf,
                        "Subject: y\r\n\r\n.no stuffing\r\n.\r\nlast\r\n");
    assert_int_equal(r.size, strlen(o.buf));
    /* Bare line ends are refused in chunks too, even across them. */
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    assert_int_equal(smtp_data_feed(&r, "a\r", 2, &used, emit, &o),
                     SMTP_DATA_MORE);
    assert_int_equal(smtp_data_feed(&r, "b", 1, &used, emit, &o),
                     SMTP_DATA_BARE_CR);
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    assert_int_equal(smtp_data_feed(&r, "a\nb", 3, &used, emit, &o),
                     SMTP_DATA_BARE_LF);
    assert_int_equal(used, 1);
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    assert_int_equal(smtp_data_feed(&r, "a\r", 2, &used, emit, &o),
                     SMTP_DATA_MORE);
    assert_int_equal(smtp_data_finish(&r, emit, &o), SMTP_DATA_BARE_CR);
}

/* Feed len bytes of text (NULs and all) in pieces of step bytes. */
static int feed_n(struct smtp_data_reader *r, const char *text, size_t len,
                  size_t step, struct out *o)
{
    size_t pos = 0;
    int rc = SMTP_DATA_MORE;

    while (pos < len && rc == SMTP_DATA_MORE) {
        size_t n = len - pos < step ? len - pos : step;
        size_t used = 0;

        rc = smtp_data_feed(r, text + pos, n, &used, emit, o);
        pos += used;
    }
    return rc;
}

#define FEED(r, lit, step, o) feed_n(r, lit, sizeof(lit) - 1, step, o)

/* A NUL in the header section (before its empty line) is refused: the
 * message is read to its end, and nothing from the NUL on comes out. */
static void test_nul_in_header(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};

    (void)state;
    for (size_t step = 1; step < 8; step++) {
        smtp_data_init(&r, SMTP_DATA_DOT, 0);
        o.len = 0;
        o.buf[0] = 0;
        assert_int_equal(
            FEED(&r, "Subject: a\0b\r\n\r\nbody\r\n.\r\nQUIT\r\n", step, &o),
            SMTP_DATA_DONE);
        assert_int_equal(r.nul, SMTP_DATA_NUL_HEADER);
        assert_string_equal(o.buf, "Subject: a");
    }
    /* no empty line yet: still the header section */
    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(FEED(&r, "Subject: a\r\nb\0\r\n.\r\n", 3, &o),
                     SMTP_DATA_DONE);
    assert_int_equal(r.nul, SMTP_DATA_NUL_HEADER);
}

/* A NUL in the body is refused too, unless the strip set holds it. */
static void test_nul_in_body(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    char why[128];

    (void)state;
    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(FEED(&r, "Subject: a\r\n\r\nbo\0dy\r\n.\r\n", 5, &o),
                     SMTP_DATA_DONE);
    assert_int_equal(r.nul, SMTP_DATA_NUL_BODY);
    assert_string_equal(o.buf, "Subject: a\r\n\r\nbo");
    /* message_strip_characters = \0 */
    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(smtp_data_strip_parse("\\0", r.strip, why, sizeof(why)),
                     0);
    o.len = 0;
    assert_int_equal(FEED(&r, "Subject: a\r\n\r\nbo\0dy\0\r\n.\r\n", 5, &o),
                     SMTP_DATA_DONE);
    assert_int_equal(r.nul, 0);
    assert_string_equal(o.buf, "Subject: a\r\n\r\nbody\r\n");
    assert_int_equal(r.size, strlen(o.buf));
    /* in the header, a NUL is refused even then */
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    assert_int_equal(smtp_data_strip_parse("\\0", r.strip, why, sizeof(why)),
                     0);
    assert_int_equal(FEED(&r, "Sub\0ject: a\r\n\r\nx", 4, &o), SMTP_DATA_MORE);
    assert_int_equal(r.nul, SMTP_DATA_NUL_HEADER);
}

/* Other characters of the strip set go wherever they are; a line left
 * empty by stripping is the end of the header section, as stored. */
static void test_strip(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    char why[128];

    (void)state;
    smtp_data_init(&r, SMTP_DATA_DOT, 0);
    assert_int_equal(
        smtp_data_strip_parse("\\0\\001", r.strip, why, sizeof(why)), 0);
    assert_int_equal(FEED(&r, "X: a\001b\r\n\001\r\nY: \0c\r\n.\r\n", 2, &o),
                     SMTP_DATA_DONE);
    assert_int_equal(r.nul, 0);
    assert_string_equal(o.buf, "X: ab\r\n\r\nY: c\r\n");
}

/* message_strip_characters: Postfix's escapes; CR and LF never. */
static void test_strip_parse(void **state)
{
    unsigned char set[SMTP_STRIP_SET], want[SMTP_STRIP_SET];
    char why[128];

    (void)state;
#define HAS(c) ((set[(unsigned char)(c) / 8] >> ((unsigned char)(c) % 8)) & 1)
    assert_int_equal(smtp_data_strip_parse("", set, why, sizeof(why)), 0);
    memset(want, 0, sizeof(want));
    assert_memory_equal(set, want, sizeof(set));
    assert_int_equal(
        smtp_data_strip_parse("\\0\\a\\b\\f\\t\\v\\101\\0012x\\\\\\q", set, why,
                              sizeof(why)),
        0);
    assert_true(HAS(0) && HAS('\a') && HAS('\b') && HAS('\f') && HAS('\t') &&
                HAS('\v') && HAS('A') && HAS(1) && HAS('2') && HAS('x') &&
                HAS('\\') && HAS('q'));
    assert_false(HAS('0') || HAS('\r') || HAS('\n') || HAS('y'));
    assert_int_equal(smtp_data_strip_parse("\\r", set, why, sizeof(why)), -1);
    assert_string_equal(why, "CR and LF cannot be stripped (lines would lose "
                             "their ends)");
    assert_int_equal(smtp_data_strip_parse("a\\n", set, why, sizeof(why)), -1);
    assert_int_equal(smtp_data_strip_parse("\\015", set, why, sizeof(why)), -1);
#undef HAS
}

/*
 * smtpd_forbid_bare_newline = normalize: a bare LF ends a line (stored as
 * CRLF), but only CRLF.CRLF ends the data: a "." line next to a bare LF
 * is not an end, and is dropped (as Postfix drops it). Every split.
 */
static void normalized(const char *in, const char *want, unsigned bare)
{
    for (size_t step = 1; step <= strlen(in); step++) {
        struct smtp_data_reader r;
        struct out o = {{0}, 0};
        size_t used;

        smtp_data_init(&r, SMTP_DATA_DOT, 0);
        r.newline = SMTP_NEWLINE_NORMALIZE;
        assert_int_equal(feed(&r, in, step, &o, &used), SMTP_DATA_DONE);
        assert_string_equal(o.buf, want);
        assert_int_equal(used, strlen(in) - strlen("QUIT\r\n"));
        assert_int_equal(r.bare, bare);
    }
}

static void test_normalize(void **state)
{
    (void)state;
    normalized("a\nb\r\n.\r\nQUIT\r\n", "a\r\nb\r\n", SMTP_DATA_SAW_BARE_LF);
    /* the smuggling forms: none of them ends the data */
    normalized("a\r\n.\nMAIL FROM:<x>\r\n.\r\nQUIT\r\n",
               "a\r\nMAIL FROM:<x>\r\n", SMTP_DATA_SAW_BARE_LF);
    normalized("a\n.\nb\r\n.\r\nQUIT\r\n", "a\r\nb\r\n", SMTP_DATA_SAW_BARE_LF);
    normalized("a\n.\r\nb\r\n.\r\nQUIT\r\n", "a\r\nb\r\n",
               SMTP_DATA_SAW_BARE_LF);
    normalized("\n.\r\n.\r\nQUIT\r\n", "\r\n", SMTP_DATA_SAW_BARE_LF);
    normalized("..\n\r\n.\r\nQUIT\r\n", ".\r\n\r\n", SMTP_DATA_SAW_BARE_LF);
    /* a bare CR is no line end: noted (the message is refused), dropped */
    normalized("a\r\n.\r b\r\n.\r\nQUIT\r\n", "a\r\n b\r\n",
               SMTP_DATA_SAW_BARE_CR);
    normalized("a\r.\r\n.\r\nQUIT\r\n", "a.\r\n", SMTP_DATA_SAW_BARE_CR);
    normalized("x\r\n.\r\nQUIT\r\n", "x\r\n", 0);
}

static void test_normalize_bdat(void **state)
{
    struct smtp_data_reader r;
    struct out o = {{0}, 0};
    size_t used;

    (void)state;
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    r.newline = SMTP_NEWLINE_NORMALIZE;
    assert_int_equal(smtp_data_feed(&r, "a\nb\n.\nc", 7, &used, emit, &o),
                     SMTP_DATA_MORE);
    assert_int_equal(used, 7);
    assert_int_equal(smtp_data_finish(&r, emit, &o), SMTP_DATA_DONE);
    assert_string_equal(o.buf, "a\r\nb\r\n.\r\nc\r\n");
    assert_int_equal(r.bare, SMTP_DATA_SAW_BARE_LF);
    smtp_data_init(&r, SMTP_DATA_RAW, 0);
    r.newline = SMTP_NEWLINE_NORMALIZE;
    o.len = 0;
    assert_int_equal(smtp_data_feed(&r, "a\rb\r", 4, &used, emit, &o),
                     SMTP_DATA_MORE);
    assert_int_equal(smtp_data_finish(&r, emit, &o), SMTP_DATA_DONE);
    assert_string_equal(o.buf, "ab\r\n");
    assert_int_equal(r.bare, SMTP_DATA_SAW_BARE_CR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unstuffing_any_split),
        cmocka_unit_test(test_empty_message),
        cmocka_unit_test(test_smuggling_forms_refused),
        cmocka_unit_test(test_size_limit),
        cmocka_unit_test(test_bdat),
        cmocka_unit_test(test_nul_in_header),
        cmocka_unit_test(test_nul_in_body),
        cmocka_unit_test(test_strip),
        cmocka_unit_test(test_strip_parse),
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_normalize_bdat),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
