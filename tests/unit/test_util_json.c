/*
 * test_util_json - JSON strings from any text (escapes, UTF-8 kept, bytes
 * that are not UTF-8 replaced, so that a strict parser accepts it), and
 * the strict parser: RFC 8259's values, what it refuses, round trips
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

static struct util_json *parse(const char *text)
{
    char why[128];
    struct util_json *v = util_json_parse(text, strlen(text), why, sizeof(why));

    if (v == NULL)
        fail_msg("%s: %s", text, why);
    return v;
}

static void expect_refused(const char *text, const char *why_expected)
{
    char why[128];
    struct util_json *v = util_json_parse(text, strlen(text), why, sizeof(why));

    if (v != NULL)
        fail_msg("accepted: %s", text);
    if (strstr(why, why_expected) == NULL)
        fail_msg("%s: %s, not %s", text, why, why_expected);
}

/* RFC 8259's values, and the tree they make. */
static void test_parse(void **state)
{
    struct util_json *v;
    const struct util_json *m;

    (void)state;
    v = parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\": "
              "\"x\\u00e9\\ud83d\\udce7\\n\","
              " \"c\": {}, \"d\": [], \"e\": \"\"} ");
    assert_int_equal(v->type, UTIL_JSON_OBJECT);
    assert_int_equal(v->count, 5);
    m = util_json_get(v, "a");
    assert_non_null(m);
    assert_int_equal(m->type, UTIL_JSON_ARRAY);
    assert_int_equal(m->count, 5);
    assert_true(m->items[0]->number == 1);
    assert_true(m->items[1]->number == -2500);
    assert_int_equal(m->items[2]->type, UTIL_JSON_BOOL);
    assert_true(m->items[2]->boolean);
    assert_false(m->items[3]->boolean);
    assert_int_equal(m->items[4]->type, UTIL_JSON_NULL);
    m = util_json_get(v, "b");
    assert_string_equal(m->string, "x\xc3\xa9\xf0\x9f\x93\xa7\n");
    assert_int_equal(m->length, 8);
    assert_int_equal(util_json_get(v, "c")->count, 0);
    assert_int_equal(util_json_get(v, "d")->type, UTIL_JSON_ARRAY);
    assert_string_equal(util_json_get(v, "e")->string, "");
    assert_null(util_json_get(v, "f"));
    assert_null(util_json_get(m, "b")); /* not an object */
    util_json_free(v);
    v = parse("\"caf\xc3\xa9 \\\"q\\\" \\\\ \\/\"");
    assert_string_equal(v->string, "caf\xc3\xa9 \"q\" \\ /");
    util_json_free(v);
    v = parse("0");
    assert_true(v->number == 0);
    util_json_free(v);
}

static void test_refused(void **state)
{
    char deep[80];

    (void)state;
    expect_refused("", "unexpected end");
    expect_refused("{\"a\":1,}", "expected a name");
    expect_refused("[1,]", "unexpected character");
    expect_refused("{\"a\":1 \"b\":2}", "expected ',' or '}'");
    expect_refused("{\"a\":1,\"a\":2}", "a name twice");
    expect_refused("01", "text after the value");
    expect_refused("1.", "bad number");
    expect_refused("1e", "bad number");
    expect_refused("+1", "unexpected character");
    expect_refused("NaN", "unexpected character");
    expect_refused("tru", "unexpected character");
    expect_refused("\"a\x01\"", "control character");
    expect_refused("\"a\\x\"", "bad escape");
    expect_refused("\"\\u12G4\"", "bad \\u escape");
    expect_refused("\"\\udc00\"", "lone low surrogate");
    expect_refused("\"\\ud800x\"", "lone high surrogate");
    expect_refused("\"\\u0000\"", "\\u0000");
    expect_refused("\"\xff\"", "not UTF-8");
    expect_refused("\"\xc0\xaf\"", "not UTF-8");
    expect_refused("\"abc", "unterminated string");
    expect_refused("[1] [2]", "text after the value");
    expect_refused("{\"a\"}", "expected ':'");
    memset(deep, '[', 40);
    deep[40] = 0;
    expect_refused(deep, "nested too deep");
    /* The byte where it went wrong. */
    {
        char why[64];

        assert_null(util_json_parse("[1, x]", 6, why, sizeof(why)));
        assert_string_equal(why, "unexpected character at byte 4");
    }
}

/* What the writer writes, the parser reads back. */
static void test_round_trip(void **state)
{
    static const char *const texts[] = {"plain", "tab\there \"q\" \\",
                                        "b\xc3\xbcro \xf0\x9f\x93\xa7", "\x01"};

    (void)state;
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        struct util_buf b = UTIL_BUF_INIT;
        struct util_json *v;

        util_json_string(&b, texts[i]);
        v = parse(b.data);
        assert_string_equal(v->string, texts[i]);
        util_json_free(v);
        util_buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),    cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_parse),      cmocka_unit_test(test_refused),
        cmocka_unit_test(test_round_trip),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
