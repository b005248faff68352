/*
 * test_smtp_node - the node of an ETRN (RFC 1985) or a "sluice flush": a
 * domain, and whether its subdomains are taken in too
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "smtp/smtp.h"

/* The written form: "domain", or ".domain" for its subdomains too. */
static void test_parse(void **state)
{
    struct smtp_node n;
    char text[SMTP_NODE_TEXT_MAX];

    (void)state;
    assert_int_equal(smtp_node_parse(&n, "Example.COM"), 0);
    assert_string_equal(n.domain, "Example.COM");
    assert_int_equal(n.subdomains, 0);
    smtp_node_format(&n, text, sizeof(text));
    assert_string_equal(text, "Example.COM");
    assert_int_equal(smtp_node_parse(&n, ".sub.example"), 0);
    assert_string_equal(n.domain, "sub.example");
    assert_int_equal(n.subdomains, 1);
    smtp_node_format(&n, text, sizeof(text));
    assert_string_equal(text, ".sub.example");
    assert_int_equal(smtp_node_parse(&n, "[192.0.2.1]"), 0);
    assert_string_equal(n.domain, "[192.0.2.1]");
}

/* What is not a domain is refused, and leaves nothing half set. */
static void test_parse_refuses(void **state)
{
    static const char *const bad[] = {
        "",         ".",     "..a.test",   "a b.test",  "a\tb.test", "x..test",
        "a@b.test", "bad/x", "[192.0.2.1", "\x01.test", "@a.test",
    };
    char longname[300];
    struct smtp_node n;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&n, 0x55, sizeof(n));
        assert_int_equal(smtp_node_parse(&n, bad[i]), -1);
        assert_string_equal(n.domain, "");
        assert_int_equal(n.subdomains, 0);
    }
    /* 256 bytes of domain: one more than RFC 5321 allows */
    memset(longname, 'a', 256);
    longname[256] = 0;
    for (int i = 60; i < 256; i += 61)
        longname[i] = '.';
    assert_int_equal(smtp_node_parse(&n, longname), -1);
    assert_int_equal(smtp_node_parse(&n, longname + 1), 0);
    assert_int_equal(smtp_node_set(&n, longname, 1), -1);
}

/* ETRN's "@domain" is the same node as ".domain". */
static void test_set(void **state)
{
    struct smtp_node n;
    char text[SMTP_NODE_TEXT_MAX];

    (void)state;
    assert_int_equal(smtp_node_set(&n, "relay.test", 1), 0);
    smtp_node_format(&n, text, sizeof(text));
    assert_string_equal(text, ".relay.test");
    assert_int_equal(smtp_node_set(&n, ".relay.test", 0), -1);
    assert_int_equal(smtp_node_set(&n, "bad/domain", 0), -1);
}

/* A name matches its own domain, any case; with subdomains, those too. */
static void test_match(void **state)
{
    struct smtp_node n;

    (void)state;
    assert_int_equal(smtp_node_parse(&n, "example.com"), 0);
    assert_true(smtp_node_match(&n, "example.com"));
    assert_true(smtp_node_match(&n, "EXAMPLE.com"));
    assert_true(smtp_node_match(&n, "user@Example.Com"));
    assert_true(smtp_node_match(&n, "\"a@b\"@example.com"));
    assert_false(smtp_node_match(&n, "mx.example.com"));
    assert_false(smtp_node_match(&n, "user@mx.example.com"));
    assert_false(smtp_node_match(&n, "badexample.com"));
    assert_false(smtp_node_match(&n, "example.com.evil"));
    assert_false(smtp_node_match(&n, ""));
    assert_int_equal(smtp_node_parse(&n, ".example.com"), 0);
    assert_true(smtp_node_match(&n, "example.com"));
    assert_true(smtp_node_match(&n, "mx.example.com"));
    assert_true(smtp_node_match(&n, "u@a.b.EXAMPLE.com"));
    assert_false(smtp_node_match(&n, "badexample.com"));
    assert_false(smtp_node_match(&n, "u@badexample.com"));
    assert_false(smtp_node_match(&n, "com"));
}

/* A buffer too small still ends in a NUL. */
static void test_format_cut(void **state)
{
    struct smtp_node n;
    char text[5];

    (void)state;
    assert_int_equal(smtp_node_parse(&n, ".example.com"), 0);
    smtp_node_format(&n, text, sizeof(text));
    assert_string_equal(text, ".exa");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),      cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_set),        cmocka_unit_test(test_match),
        cmocka_unit_test(test_format_cut),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
