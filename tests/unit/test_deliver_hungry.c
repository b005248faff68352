/*
 * test_deliver_hungry - the hungry protocol's codec (deliver/hungry.c,
 * sluice-agent(7)): xtext both ways on hostile addresses, the job line,
 * the content's line ends, result lines good and bad, oversize numbers
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deliver/agent_impl.h"

static void expect_xtext(const char *in, const char *out)
{
    struct util_buf b = UTIL_BUF_INIT;
    char *back;

    util_buf_add(&b, "", 0);
    hungry_xtext(&b, in);
    assert_string_equal(b.data, out);
    back = hungry_unxtext(b.data, b.len);
    assert_non_null(back);
    assert_string_equal(back, in);
    free(back);
    util_buf_free(&b);
}

static void test_xtext_round_trip(void **state)
{
    (void)state;
    expect_xtext("a@b.example", "a@b.example");
    expect_xtext("a b@c", "a+20b@c");
    expect_xtext("x+y=z@c", "x+2By+3Dz@c");
    expect_xtext("\"quoted\\\r\n\t\"@c", "\"quoted\\+0D+0A+09\"@c");
    expect_xtext("j\xc3\xbcrg@b\xc3\xbc.example", "j+C3+BCrg@b+C3+BC.example");
    expect_xtext("\x7f\x01@c", "+7F+01@c");
}

static void expect_unxtext_refused(const char *in)
{
    assert_null(hungry_unxtext(in, strlen(in)));
}

static void test_unxtext_strict(void **state)
{
    (void)state;
    expect_unxtext_refused("a b");      /* a raw space */
    expect_unxtext_refused("a=b");      /* "=" must be encoded */
    expect_unxtext_refused("a+2");      /* cut short */
    expect_unxtext_refused("a+");       /* cut short */
    expect_unxtext_refused("a+2b");     /* lower-case hex */
    expect_unxtext_refused("a+G0");     /* not hex */
    expect_unxtext_refused("a+00b");    /* an encoded NUL */
    expect_unxtext_refused("\xc3\xbc"); /* raw 8-bit */
}

static void test_job_line(void **state)
{
    struct deliver_rcpt r[3] = {
        {"a@x.example", NULL, 0},
        {"b c@x.example", NULL, 0},
        {"d+e=f@x.example", NULL, 0},
    };
    struct util_buf b = UTIL_BUF_INIT;

    (void)state;
    hungry_job(&b, "1K18ABC", 42, "s@y.example", r, 3);
    assert_string_equal(b.data, "job 1K18ABC 42 s@y.example a@x.example "
                                "b+20c@x.example d+2Be+3Df@x.example\n");
    util_buf_reset(&b);
    hungry_job(&b, "ID", 0, "", r, 1);
    assert_string_equal(b.data, "job ID 0 <> a@x.example\n");
    util_buf_reset(&b);
    hungry_job(&b, "ID", 7, NULL, r, 1);
    assert_string_equal(b.data, "job ID 7 <> a@x.example\n");
    util_buf_free(&b);
}

static void test_content_lf(void **state)
{
    static const char body[] = "A: b\r\n\r\nline\rwith CR\r\nlast\r\n\r";
    struct util_buf b = UTIL_BUF_INIT;

    (void)state;
    util_buf_add(&b, "", 0);
    hungry_content(&b, body, sizeof(body) - 1);
    assert_int_equal(b.len, strlen("A: b\n\nline\rwith CR\nlast\n\r"));
    assert_memory_equal(b.data, "A: b\n\nline\rwith CR\nlast\n\r", b.len);
    util_buf_reset(&b);
    hungry_content(&b, "", 0);
    assert_int_equal(b.len, 0);
    util_buf_free(&b);
}

static int parse(const char *line, size_t nrcpt, struct hungry_line *h)
{
    char why[160] = "";
    int rc = hungry_parse(line, strlen(line), nrcpt, h, why, sizeof(why));

    if (rc < 0)
        assert_true(why[0] != 0); /* a refusal says why */
    return rc;
}

static void test_parse_good(void **state)
{
    struct hungry_line h;

    (void)state;
    assert_int_equal(parse("#hungry", 0, &h), 0);
    assert_int_equal(h.kind, HUNGRY_LINE_READY);
    assert_int_equal(parse("1 ok 2.0.0 delivered to maildir", 3, &h), 0);
    assert_int_equal(h.kind, HUNGRY_LINE_RESULT);
    assert_int_equal(h.index, 0);
    assert_int_equal(h.status, DELIVER_OK);
    assert_string_equal(h.enhanced, "2.0.0");
    assert_int_equal(h.textlen, strlen("delivered to maildir"));
    assert_memory_equal(h.text, "delivered to maildir", h.textlen);
    assert_int_equal(parse("3 defer 4.2.1 mailbox busy", 3, &h), 0);
    assert_int_equal(h.index, 2);
    assert_int_equal(h.status, DELIVER_DEFER);
    assert_int_equal(parse("12 bounce 5.1.1", 12, &h), 0);
    assert_int_equal(h.index, 11);
    assert_int_equal(h.status, DELIVER_BOUNCE);
    assert_int_equal(h.textlen, 0);
    assert_int_equal(parse("2 ok 2.0.0 \xc3\xbc utf-8", 2, &h), 0);
}

static void test_parse_garbage(void **state)
{
    static const char *const bad[] = {
        "",
        "#hungry ",
        "#HUNGRY",
        "# hungry",
        "#hungry\r",
        "0 ok 2.0.0",  /* recipients count from 1 */
        "01 ok 2.0.0", /* no leading zero */
        "4 ok 2.0.0",  /* past the job's three */
        "99999999999999999999999 ok 2.0.0",
        "1 OK 2.0.0",
        "1 ok",
        "1 ok ",
        "1  ok 2.0.0",
        "1 ok 4.0.0 wrong class",
        "1 defer 5.0.0 wrong class",
        "1 bounce 2.0.0 wrong class",
        "1 ok 2.0",
        "1 ok 2.0.0x",
        "1 ok 2.0.0\ttab",
        "1 ok 2.0.0 text\r",
        "1 ok 2.0.0 bell\a",
        "1 ok 2.0.0 \xff bad utf-8",
        "1 ok 2.0.0 \xc3",
        "ok 2.0.0",
        "job x 1 a b",
    };
    struct hungry_line h;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (parse(bad[i], 3, &h) != -1)
            fail_msg("accepted: \"%s\"", bad[i]);
    }
    /* no job: no result is possible */
    assert_int_equal(parse("1 ok 2.0.0", 0, &h), -1);
    /* a NUL inside a line */
    assert_int_equal(
        hungry_parse("1 ok 2.0.0 a\0b", 14, 3, &h, (char[8]){0}, 8), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xtext_round_trip),
        cmocka_unit_test(test_unxtext_strict),
        cmocka_unit_test(test_job_line),
        cmocka_unit_test(test_content_lf),
        cmocka_unit_test(test_parse_good),
        cmocka_unit_test(test_parse_garbage),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
