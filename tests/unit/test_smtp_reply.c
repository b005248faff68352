/*
 * test_smtp_reply - SMTP replies (RFC 5321 4.2), enhanced status codes
 * (RFC 3463), EHLO keywords, dot-stuffing (RFC 5321 4.5.2)
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "smtp/smtp.h"

static int feed(struct smtp_reply *r, const char *line)
{
    return smtp_reply_line(r, line, strlen(line));
}

static void test_single_line(void **state)
{
    struct smtp_reply r;

    (void)state;
    smtp_reply_init(&r);
    assert_int_equal(feed(&r, "250 2.1.0 Ok"), 1);
    assert_int_equal(r.code, 250);
    assert_string_equal(r.enhanced, "2.1.0");
    assert_string_equal(r.text, "2.1.0 Ok");
    smtp_reply_free(&r);
    assert_int_equal(feed(&r, "354 End data with <CR><LF>.<CR><LF>"), 1);
    assert_int_equal(r.code, 354);
    assert_string_equal(r.enhanced, "");
    smtp_reply_free(&r);
    assert_int_equal(feed(&r, "220"), 1);
    assert_int_equal(r.code, 220);
    assert_string_equal(r.text, "");
    smtp_reply_free(&r);
}

/* "The format for multiline replies requires that every line, except the
 * last, begin with the reply code, followed immediately by a hyphen". */
static void test_multi_line_and_ehlo(void **state)
{
    struct smtp_reply r;
    uint64_t size;

    (void)state;
    smtp_reply_init(&r);
    assert_int_equal(feed(&r, "250-mx.example.com"), 0);
    assert_int_equal(feed(&r, "250-PIPELINING"), 0);
    assert_int_equal(feed(&r, "250-SIZE 10240000"), 0);
    assert_int_equal(feed(&r, "250-8bitmime"), 0);
    assert_int_equal(feed(&r, "250-ENHANCEDSTATUSCODES"), 0);
    assert_int_equal(feed(&r, "250-AUTH PLAIN"), 0);
    assert_int_equal(feed(&r, "250 DSN"), 1);
    assert_int_equal(r.lines, 7);
    assert_string_equal(r.text, "mx.example.com PIPELINING SIZE 10240000 "
                                "8bitmime ENHANCEDSTATUSCODES AUTH PLAIN DSN");
    assert_int_equal(smtp_ehlo_features(&r, &size),
                     SMTP_EXT_PIPELINING | SMTP_EXT_SIZE | SMTP_EXT_8BITMIME |
                         SMTP_EXT_ENHANCEDSTATUSCODES | SMTP_EXT_DSN);
    assert_int_equal(size, 10240000);
    smtp_reply_free(&r);

    /* The first line is the greeting name, never a keyword. */
    assert_int_equal(feed(&r, "250 PIPELINING"), 1);
    assert_int_equal(smtp_ehlo_features(&r, &size), 0);
    assert_int_equal(size, 0);
    smtp_reply_free(&r);
}

static void test_enhanced_codes(void **state)
{
    static const struct {
        const char *line, *enhanced;
    } cases[] = {
        {"550 5.1.1 <x@y.test>: Recipient address rejected", "5.1.1"},
        {"451 4.3.0 Try again later", "4.3.0"},
        {"250 2.0.0", "2.0.0"},
        {"550 5.7.123 policy", "5.7.123"},
        {"550 5.1.1234 not a code", ""},
        {"550 3.1.1 not a class", ""},
        {"550 5.1 short", ""},
        {"550 5.1.1x glued", ""},
        {"550 No such user", ""},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct smtp_reply r;

        smtp_reply_init(&r);
        assert_int_equal(feed(&r, cases[i].line), 1);
        assert_string_equal(r.enhanced, cases[i].enhanced);
        smtp_reply_free(&r);
    }
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "25 Ok", "250xOk", "abc Ok", "650 Ok", "150 Ok", "", "2",
    };
    struct smtp_reply r;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        smtp_reply_init(&r);
        assert_int_equal(feed(&r, bad[i]), -1);
        smtp_reply_free(&r);
    }
    /* A code that changes between lines. */
    smtp_reply_init(&r);
    assert_int_equal(feed(&r, "250-one"), 0);
    assert_int_equal(feed(&r, "251 two"), -1);
    smtp_reply_free(&r);
    /* Endless replies end the session. */
    smtp_reply_init(&r);
    for (int i = 0; i < SMTP_REPLY_MAX_LINES; i++)
        assert_int_equal(feed(&r, "250-more"), 0);
    assert_int_equal(feed(&r, "250 end"), -1);
    smtp_reply_free(&r);
}

struct out {
    char buf[512];
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

/* "Before sending a line of mail text, the SMTP client checks the first
 * character of the line. If it is a period, one additional period is
 * inserted at the beginning of the line." */
static void test_dot_stuffing(void **state)
{
    struct smtp_stuffer st = {0};
    struct out o = {{0}, 0};
    const char *body = ".start\r\nmid.dle\r\n.\r\n..two\r\nend\r\n";

    (void)state;
    smtp_stuff(&st, body, strlen(body), emit, &o);
    smtp_stuff_end(&st, emit, &o);
    assert_string_equal(o.buf, "..start\r\nmid.dle\r\n..\r\n...two\r\nend\r\n"
                               ".\r\n");

    /* Across calls: a dot at the start of the next chunk, after LF. */
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    smtp_stuff(&st, "a\r", 2, emit, &o);
    smtp_stuff(&st, "\n", 1, emit, &o);
    smtp_stuff(&st, ".b", 2, emit, &o);
    smtp_stuff_end(&st, emit, &o);
    assert_string_equal(o.buf, "a\r\n..b\r\n.\r\n");

    /* No final CRLF: one is added; empty body: just the end. */
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    smtp_stuff_end(&st, emit, &o);
    assert_string_equal(o.buf, ".\r\n");
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    smtp_stuff(&st, "x\r", 2, emit, &o);
    smtp_stuff(&st, "\n", 1, emit, &o);
    smtp_stuff_end(&st, emit, &o);
    assert_string_equal(o.buf, "x\r\n.\r\n");
}

/*
 * smtp_line_length_limit: "Longer lines are broken by inserting
 * <CR><LF><SPACE>, to minimize the damage to MIME formatted mail" (the
 * reference's smtp(8)). With a limit of 10: a line of 10 stays whole,
 * longer ones go on after CRLF SPACE (the space counts in the next
 * line), a stuffed dot does not count (the receiver removes it), and
 * the state carries across calls.
 */
static void test_line_folding(void **state)
{
    struct smtp_stuffer st = {0};
    struct out o = {{0}, 0};

    (void)state;
    st.line_limit = 10;
    smtp_stuff(&st, "0123456789\r\n", 12, emit, &o);
    smtp_stuff(&st, "aaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 27, emit, &o);
    smtp_stuff(&st, ".bbbbbbbbbbb\r\n", 14, emit, &o);
    smtp_stuff(&st, "ccccccc", 7, emit, &o);
    smtp_stuff(&st, "cccc\r\n", 6, emit, &o);
    smtp_stuff_end(&st, emit, &o);
    assert_string_equal(o.buf, "0123456789\r\n"
                               "aaaaaaaaaa\r\n aaaaaaaaa\r\n aaaaaa\r\n"
                               "..bbbbbbbbb\r\n bb\r\n"
                               "cccccccccc\r\n c\r\n"
                               ".\r\n");
    assert_int_equal(st.folded, 4);

    /* No limit: nothing broken. */
    memset(&st, 0, sizeof(st));
    memset(&o, 0, sizeof(o));
    smtp_stuff(&st, "aaaaaaaaaaaaaaaaaaaaaaaaa\r\n", 27, emit, &o);
    assert_string_equal(o.buf, "aaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
    assert_int_equal(st.folded, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_line),
        cmocka_unit_test(test_multi_line_and_ehlo),
        cmocka_unit_test(test_enhanced_codes),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_dot_stuffing),
        cmocka_unit_test(test_line_folding),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
