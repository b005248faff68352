/*
 * NAME
 *	test_smtp_address 1 - unit tests of address lists and addresses
 * SYNOPSIS
 *	build/tests/test_smtp_address
 * DESCRIPTION
 *	Tests src/smtp/address.c: smtp_address_list_parse() on RFC 5322
 *	address lists (mailboxes with and without display names, quoted
 *	strings, comments, groups, route addresses, folding, obsolete
 *	syntax) with the exact addresses it must return, every error
 *	message with the text it must name, and a few thousand seeded
 *	random inputs that must give 0 or -1 and nothing else;
 *	smtp_address_valid() on envelope addresses at and past the RFC
 *	5321 limits; and the list helpers.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHY_SIZE 512

/* The addresses of l joined with "|". */
static void joined(const struct smtp_addr_list *l, char *buf, size_t len)
{
    size_t used = 0;
    size_t i;

    buf[0] = 0;
    for (i = 0; i < l->count; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "|" : "",
                                 l->addr[i]);
}

/* Parse text[0..len) and compare with the expected addresses. */
static void parses_n(const char *text, size_t len, const char *expected)
{
    struct smtp_addr_list l = {0};
    char why[WHY_SIZE] = "";
    char got[1024];
    int status = smtp_address_list_parse(text, len, &l, why, sizeof(why));

    if (status != 0)
        fail_msg("\"%s\": %s", text, why);
    joined(&l, got, sizeof(got));
    assert_string_equal(got, expected);
    smtp_addr_list_free(&l);
}

static void parses(const char *text, const char *expected)
{
    parses_n(text, strlen(text), expected);
}

static void fails_n(const char *text, size_t len, const char *expected)
{
    struct smtp_addr_list l = {0};
    char why[WHY_SIZE] = "";

    smtp_addr_list_add(&l, "keep@example.org");
    assert_int_equal(smtp_address_list_parse(text, len, &l, why, sizeof(why)),
                     -1);
    assert_string_equal(why, expected);
    assert_int_equal(l.count, 1);
    assert_string_equal(l.addr[0], "keep@example.org");
    smtp_addr_list_free(&l);
}

static void fails(const char *text, const char *expected)
{
    fails_n(text, strlen(text), expected);
}

static void test_plain_mailboxes(void **state)
{
    (void)state;
    parses("a@b", "a@b");
    parses("alice@example.org", "alice@example.org");
    parses("a@b, c@d", "a@b|c@d");
    parses("a@b,c@d,e@f", "a@b|c@d|e@f");
    parses("  a@b  ", "a@b");
    parses("first.last+tag@sub.example.org", "first.last+tag@sub.example.org");
    parses("!#$%&'*+-/=?^_`{|}~@x", "!#$%&'*+-/=?^_`{|}~@x");
}

static void test_display_names(void **state)
{
    (void)state;
    parses("Joe <j@x.org>", "j@x.org");
    parses("Joe Q. Public <jqp@x>", "jqp@x");
    parses("<j@x>", "j@x");
    parses("\"Smith, John\" <js@x>", "js@x");
    parses("\"Joe \\\"the\\\" man\" <j@x>, k@y", "j@x|k@y");
    parses("\"\" <a@b>", "a@b");
    parses("=?utf-8?q?J=C3=B6rg?= <j@x>", "j@x");
    parses("Joe<j@x>,Ann<a@y>", "j@x|a@y");
    parses("john <j@x>", "j@x");
}

static void test_quoted_local_parts(void **state)
{
    (void)state;
    parses("\"a b\"@x", "\"a b\"@x");
    parses("\"a\\\"b\"@x", "\"a\\\"b\"@x");
    parses("\"a@b\"@x", "\"a@b\"@x");
    parses("\"\"@x", "\"\"@x");
    parses("Joe <\"j o e\"@x>", "\"j o e\"@x");
    parses("\"a\".b@x", "\"a\".b@x");
    parses("\"a b\"", "\"a b\"");
}

static void test_comments(void **state)
{
    (void)state;
    parses("a(comment)@b", "a@b");
    parses("(c (nested (deep)) c) a@b (trailing)", "a@b");
    parses("a@b (x\\) y)", "a@b");
    parses("a@b (with \"quote), c@d", "a@b|c@d");
    parses("Joe (the man) <j@x> (work)", "j@x");
    parses("a@(inside)b", "a@b");
    parses("(only a comment)", "");
}

static void test_groups(void **state)
{
    (void)state;
    parses("Friends: a@x, b@y;", "a@x|b@y");
    parses("Friends: a@x, b@y;, c@z", "a@x|b@y|c@z");
    parses("c@z, Friends: a@x;", "c@z|a@x");
    parses("undisclosed-recipients:;", "");
    parses("undisclosed-recipients: ;", "");
    parses("undisclosed-recipients:", "");
    parses("G: Joe <j@x>, \"k k\"@y;", "j@x|\"k k\"@y");
    parses("\"The Group\": a@x;", "a@x");
    parses("G: a@x, , b@y,;", "a@x|b@y");
    parses("A: a@x;, B: b@y;", "a@x|b@y");
}

static void test_routes(void **state)
{
    (void)state;
    parses("<@r1,@r2:a@b>", "a@b");
    parses("Joe <@r.example:a@b>", "a@b");
    parses("< @r1 , , @r2 : a@b >", "a@b");
    parses("<@[192.0.2.1]:a@b>", "a@b");
}

static void test_folding(void **state)
{
    (void)state;
    parses("Joe\r\n <j@x>,\r\n\tk@y", "j@x|k@y");
    parses("Joe\n <j@x>,\n\tk@y", "j@x|k@y");
    parses("\"a\r\n b\"@x", "\"a b\"@x");
    parses("a@b,\r\n c@d\r\n", "a@b|c@d");
    parses("a@[1.2.\r\n 3.4]", "a@[1.2. 3.4]");
}

static void test_obsolete_spacing(void **state)
{
    (void)state;
    parses("a . b @ x . y", "a.b@x.y");
    parses("a@b,,c@d,", "a@b|c@d");
    parses(" , ,, ", "");
    parses("", "");
    parses(",a@b", "a@b");
}

static void test_bare_local_parts(void **state)
{
    (void)state;
    parses("root", "root");
    parses("root, <postmaster>", "root|postmaster");
    parses("a.b", "a.b");
    parses("G: root;", "root");
}

static void test_domains(void **state)
{
    (void)state;
    parses("a@[192.0.2.1]", "a@[192.0.2.1]");
    parses("a@[IPv6:2001:db8::1]", "a@[IPv6:2001:db8::1]");
    parses("a@[x\\]y]", "a@[x\\]y]");
    parses("j\xc3\xb6rg@b\xc3\xbc"
           "cher.de",
           "j\xc3\xb6rg@b\xc3\xbc"
           "cher.de");
    parses("a@b-c.d_e", "a@b-c.d_e");
}

static void test_appends(void **state)
{
    struct smtp_addr_list l = {0};
    char why[WHY_SIZE];
    char got[256];

    (void)state;
    assert_int_equal(smtp_address_list_parse("a@x", 3, &l, why, sizeof(why)),
                     0);
    assert_int_equal(
        smtp_address_list_parse("b@y, c@z", 8, &l, why, sizeof(why)), 0);
    joined(&l, got, sizeof(got));
    assert_string_equal(got, "a@x|b@y|c@z");
    /* len bounds the text: "d@w, e@v" cut after "d@w" */
    assert_int_equal(
        smtp_address_list_parse("d@w, e@v", 3, &l, why, sizeof(why)), 0);
    joined(&l, got, sizeof(got));
    assert_string_equal(got, "a@x|b@y|c@z|d@w");
    smtp_addr_list_free(&l);
    assert_int_equal(l.count, 0);
    assert_null(l.addr);
}

static void test_errors_unterminated(void **state)
{
    (void)state;
    fails("\"abc", "unterminated quoted string at \"\\\"abc\"");
    fails("a@b, \"x\\\"", "unterminated quoted string at \"\\\"x\\\\\\\"\"");
    fails("a@b (comment", "unterminated comment at \"(comment\"");
    fails("a@b (x (y)", "unterminated comment at \"(x (y)\"");
    fails("a@[1.2.3", "unterminated domain literal at \"[1.2.3\"");
    fails("a@[1.[2]", "\"[\" inside a domain literal at \"[2]\"");
}

static void test_errors_structure(void **state)
{
    (void)state;
    fails("John Smith", "name without an address at \"John Smith\"");
    fails("John Smith, a@b", "name without an address at \"John Smith, a@b\"");
    fails("G: John Smith;", "name without an address at \"John Smith;\"");
    fails("<>", "empty address at \"<>\"");
    fails("Joe <>", "empty address at \"<>\"");
    fails("<@r:>", "empty address at \"<@r:>\"");
    fails("a@b c@d", "expected \",\" at \"c@d\"");
    fails("a@b>", "expected \",\" at \">\"");
    fails("a@b@c", "expected \",\" at \"@c\"");
    fails("<a@b> c", "expected \",\" at \"c\"");
    fails("G: a@b;x", "expected \",\" at \"x\"");
    fails("G: a@b, H: c@d;;", "nested group at \"H: c@d;;\"");
    fails("A: a@x; B: b@y;", "expected \",\" at \"B: b@y;\"");
    fails(": a@b;", "group without a name at \": a@b;\"");
    fails("G: a@b c", "expected \",\" or \";\" at \"c\"");
    fails(";", "expected an address at \";\"");
    fails("a@b, ;", "expected an address at \";\"");
    fails("[x]", "expected an address at \"[x]\"");
    fails("<", "expected an address at end of text");
    fails("Joe <j@x", "expected \">\" at end of text");
    fails("Joe <j@x, k@y>", "expected \">\" at \", k@y>\"");
}

static void test_errors_parts(void **state)
{
    (void)state;
    fails("a..b@x", "bad local part at \"a..b@x\"");
    fails(".a@x", "bad local part at \".a@x\"");
    fails("a.@x", "bad local part at \"a.@x\"");
    fails("a \"b\"@x", "bad local part at \"a \\\"b\\\"@x\"");
    fails("Joe <a..b@x>", "bad local part at \"a..b@x>\"");
    fails("<John Smith>", "bad local part at \"John Smith>\"");
    fails("a@", "expected a domain at end of text");
    fails("a@b.", "expected a domain at end of text");
    fails("a@b..c", "expected a domain at \".c\"");
    fails("a@\"b\"", "expected a domain at \"\\\"b\\\"\"");
    fails("a@, b@c", "expected a domain at \", b@c\"");
    fails("<@r a@b>", "expected \":\" after a route at \"a@b>\"");
    fails("<@r:@s a@b>", "expected an address at \"@s a@b>\"");
}

static void test_errors_characters(void **state)
{
    (void)state;
    fails("a@b\x01", "unexpected character at \"\\x01\"");
    fails("a@b)", "unexpected character at \")\"");
    fails("a@b]", "unexpected character at \"]\"");
    fails("a\\b@c", "unexpected character at \"\\\\b@c\"");
    fails("a@b\x7f", "unexpected character at \"\\x7f\"");
    fails_n("a@b\0c", 5, "unexpected character at \"\\x00c\"");
    fails_n("\"a\0\"@x", 6, "NUL byte at \"\\x00\\\"@x\"");
    /* The excerpt stops after 40 bytes. */
    fails("a@b ) 0123456789012345678901234567890123456789",
          "unexpected character at "
          "\") 01234567890123456789012345678901234567...\"");
}

/* RFC 5321 limits: local part 64, whole address 254. */
static void test_valid_limits(void **state)
{
    char addr[400];

    (void)state;
    memset(addr, 'a', 64);
    strcpy(addr + 64, "@x");
    assert_int_equal(smtp_address_valid(addr), 1);
    memset(addr, 'a', 65);
    strcpy(addr + 65, "@x");
    assert_int_equal(smtp_address_valid(addr), 0);
    /* 64 + 1 + 189 = 254: labels of 63 */
    memset(addr, 'a', 64);
    addr[64] = '@';
    memset(addr + 65, 'b', 63);
    addr[128] = '.';
    memset(addr + 129, 'c', 63);
    addr[192] = '.';
    memset(addr + 193, 'd', 61);
    addr[254] = 0;
    assert_int_equal(strlen(addr), 254);
    assert_int_equal(smtp_address_valid(addr), 1);
    addr[254] = 'd';
    addr[255] = 0;
    assert_int_equal(smtp_address_valid(addr), 0);
    /* a label of 64 */
    memset(addr, 'b', 64);
    addr[64] = 0;
    memmove(addr + 2, addr, 65);
    memcpy(addr, "a@", 2);
    assert_int_equal(smtp_address_valid(addr), 0);
    addr[65] = 0; /* label of 63 */
    assert_int_equal(smtp_address_valid(addr), 1);
}

static void test_valid(void **state)
{
    static const char *const good[] = {
        "a@b",
        "a.b@c.d",
        "\"a b\"@x",
        "\"a\\\"b\"@x",
        "\"\"@x",
        "root",
        "\"root user\"",
        "a+tag@x-y.example",
        "a@[192.0.2.1]",
        "a@[IPv6:2001:db8::1]",
        "a@my_host.example",
        "j\xc3\xb6rg@b\xc3\xbc"
        "cher.de",
        "!#$%&'*+-/=?^_`{|}~@x",
    };
    static const char *const bad[] = {
        "",        "@x",    "a@",     "a..b@x",      ".a@x",    "a.@x",
        "a b@x",   "a@b c", "a@b\n",  "a\r@b",       "a\x01@b", "\"a\"b@x",
        "\"a@x",   "\"a\\", "a@b..c", "a@.b",        "a@b.",    "a@[]",
        "a@[a b]", "a@@b",  "<a@b>",  "a@b@c",       "a\"b@x",  "a@[x]y",
        "a@[x",    "a@b,c", "a@b/c",  "\"a\x01\"@x", "a@b\x7f", "a(b)@c",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (smtp_address_valid(good[i]) != 1)
            fail_msg("\"%s\" should be valid", good[i]);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (smtp_address_valid(bad[i]) != 0)
            fail_msg("\"%s\" should not be valid", bad[i]);
}

static void test_list_helpers(void **state)
{
    struct smtp_addr_list l = {0};
    char got[256];
    int i;

    (void)state;
    for (i = 0; i < 20; i++)
        smtp_addr_list_add(&l, i % 3 == 0 ? "a@x" : i % 3 == 1 ? "b@x" : "A@x");
    smtp_addr_list_add(&l, "c@x");
    smtp_addr_list_add(&l, "b@x");
    assert_int_equal(l.count, 22);
    smtp_addr_list_uniq(&l);
    joined(&l, got, sizeof(got));
    assert_string_equal(got, "a@x|b@x|A@x|c@x");
    smtp_addr_list_free(&l);
    smtp_addr_list_uniq(&l); /* empty: nothing to do */
    assert_int_equal(l.count, 0);
    smtp_addr_list_add(&l, "again@x"); /* reusable after free */
    assert_int_equal(l.count, 1);
    smtp_addr_list_free(&l);
}

/* Deterministic, so that a failure can be replayed (xorshift32). */
static uint32_t rnd_state = 2463534242u;

static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}

/* One random piece of an address list, or a random byte. */
static size_t random_piece(char *out)
{
    static const char *const pieces[] = {
        "a@b", "x", "\"q r\"", "<",  ">",     ",",     ":",     ";",
        "@",   ".", "(c)",     " ",  "\r\n ", "Joe",   "[1.2]", "G:",
        "\\",  "(", ")",       "\"", "<@r:",  "a@b.c", "x.y",   "\t",
    };
    const char *p;

    if (rnd() % 10 == 0) {
        out[0] = (char)(rnd() & 0xff);
        return 1;
    }
    p = pieces[rnd() % (sizeof(pieces) / sizeof(pieces[0]))];
    memcpy(out, p, strlen(p));
    return strlen(p);
}

/*
 * Random texts made of pieces that matter to the grammar and random
 * bytes: the parser must return 0 or -1, leave a reason on -1 and the
 * list as it was, and return no empty address and none with a CR or LF
 * in it. Valgrind checks the rest.
 */
static void test_random_junk(void **state)
{
    struct smtp_addr_list l = {0};
    char text[16 * 8];
    char why[WHY_SIZE];
    size_t len;
    size_t k;
    int pieces;
    int iter;
    int status;
    int ok = 0;

    (void)state;
    for (iter = 0; iter < 5000; iter++) {
        len = 0;
        for (pieces = (int)(rnd() % 16); pieces > 0; pieces--)
            len += random_piece(text + len);
        smtp_addr_list_add(&l, "first@x");
        why[0] = 0;
        status = smtp_address_list_parse(text, len, &l, why, sizeof(why));
        if (status == -1) {
            assert_true(why[0] != 0);
            assert_int_equal(l.count, 1);
        } else {
            assert_int_equal(status, 0);
            ok++;
            for (k = 1; k < l.count; k++) {
                assert_true(l.addr[k][0] != 0);
                assert_null(strpbrk(l.addr[k], "\r\n"));
            }
        }
        smtp_addr_list_free(&l);
    }
    /* Both outcomes were exercised. */
    print_message("%d of 5000 random texts parsed\n", ok);
    assert_true(ok > 250);
    assert_true(ok < 4750);
}

/*
 * Issue 14: every name sent in EHLO, HELO or LHLO is a valid domain or
 * address literal, never empty (Postfix smtpd, Exim, Dovecot LMTP and
 * aiosmtpd all answer 501 to "EHLO ").
 */
static void test_helo_name_valid(void **state)
{
    static const char *good[] = {
        "mail.example.com", "vm",          "a-b.example",
        "host_1.example",   "[192.0.2.1]", "[IPv6:2001:db8::1]",
        "[ipv6:::1]",       "x.y.z.",
    };
    static const char *bad[] = {
        "",
        " ",
        "mail example",
        "-mail.example",
        "mail-.example",
        "a..b",
        ".example",
        "[]",
        "[192.0.2]",
        "[2001:db8::1]",
        "[IPv6:192.0.2.1]",
        "[192.0.2.1",
        "m\xc3\xa9l.example",
        "mail.example\r\n",
        "mail@example",
        "[192.0.2.1]x",
    };
    char longname[300];

    (void)state;
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]) - 1; i++)
        assert_int_equal(smtp_helo_name_valid(good[i]), 1);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(smtp_helo_name_valid(bad[i]), 0);
    /* a trailing dot leaves an empty label */
    assert_int_equal(smtp_helo_name_valid("x.y.z."), 0);
    memset(longname, 'a', 63);
    longname[63] = 0;
    assert_int_equal(smtp_helo_name_valid(longname), 1);
    memset(longname, 'a', 64);
    longname[64] = 0;
    assert_int_equal(smtp_helo_name_valid(longname), 0);
    assert_int_equal(smtp_domain_valid("a.example"), 1);
    assert_int_equal(smtp_domain_valid(""), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_mailboxes),
        cmocka_unit_test(test_display_names),
        cmocka_unit_test(test_quoted_local_parts),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_folding),
        cmocka_unit_test(test_obsolete_spacing),
        cmocka_unit_test(test_bare_local_parts),
        cmocka_unit_test(test_domains),
        cmocka_unit_test(test_appends),
        cmocka_unit_test(test_errors_unterminated),
        cmocka_unit_test(test_errors_structure),
        cmocka_unit_test(test_errors_parts),
        cmocka_unit_test(test_errors_characters),
        cmocka_unit_test(test_valid_limits),
        cmocka_unit_test(test_valid),
        cmocka_unit_test(test_list_helpers),
        cmocka_unit_test(test_random_junk),
        cmocka_unit_test(test_helo_name_valid),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
