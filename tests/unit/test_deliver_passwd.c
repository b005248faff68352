/*
 * test_deliver_passwd - the SMTP client's password table
 * (smtp_sasl_password_maps): the reference's syntax and lookup order
 * (the remote host's name, then the next hop as written; decision 77),
 * values with colons, hostile tables, and the SASL security options.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "deliver/deliver.h"

static char path[64];

static struct deliver_passwd *load(const char *text, char *why, size_t len)
{
    int fd;

    snprintf(path, sizeof(path), "/tmp/test_passwd.XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return deliver_passwd_load("smtp_sasl_password_maps", path, why, len);
}

static const char table[] =
    "# destination credentials\n"
    "[relay.example]:587   sub:mission\n"
    "[relay.example]       bracket:ed\n"
    "relay.example         host:name\n"
    "Example.COM           dom:ain\n"
    "[mx.other.example]    colons:pa:ss:word with space\n"
    "  \n"
    "long.example\n"
    "   user:continued\n";

static void expect(const struct deliver_passwd *m, const char *host,
                   const char *nexthop, const char *key, const char *user,
                   const char *pass)
{
    struct deliver_credentials c = {0};

    if (key == NULL) {
        assert_int_equal(deliver_passwd_find(m, host, nexthop, &c), 0);
        return;
    }
    assert_int_equal(deliver_passwd_find(m, host, nexthop, &c), 1);
    assert_string_equal(c.key, key);
    assert_string_equal(c.user, user);
    assert_string_equal(c.pass, pass);
}

/* smtp_sasl_glue.c: maps_find(host), then maps_find(dest). */
static void test_lookup_order(void **state)
{
    char why[256];
    struct deliver_passwd *m = load(table, why, sizeof(why));

    (void)state;
    assert_non_null(m);
    /* relayhost = [relay.example]:587: the host name first */
    expect(m, "relay.example", "[relay.example]:587", "relay.example", "host",
           "name");
    /* without a host entry the next hop as written, port and all */
    expect(m, "mx1.other.example", "[relay.example]:587", "[relay.example]:587",
           "sub", "mission");
    expect(m, "mx1.other.example", "[relay.example]", "[relay.example]",
           "bracket", "ed");
    /* no canonicalizing: [relay.example]:25 is not [relay.example] */
    expect(m, "mx1.other.example", "[relay.example]:25", NULL, NULL, NULL);
    /* MX delivery to example.com: the domain, case aside */
    expect(m, "mx1.example.com", "example.com", "example.com", "dom", "ain");
    expect(m, "mx1.example.com", "EXAMPLE.com", "example.com", "dom", "ain");
    /* no parent domains */
    expect(m, "mx1.example.com", "sub.example.com", NULL, NULL, NULL);
    /* the password is everything after the first colon */
    expect(m, "x", "[mx.other.example]", "[mx.other.example]", "colons",
           "pa:ss:word with space");
    expect(m, "long.example", "x", "long.example", "user", "continued");
    expect(m, "", "", NULL, NULL, NULL);
    expect(m, NULL, "nothing.example", NULL, NULL, NULL);
    deliver_passwd_free(m);
    unlink(path);
}

static void test_reference_counted(void **state)
{
    char why[256];
    struct deliver_passwd *m = load(table, why, sizeof(why));
    struct deliver_credentials c;

    (void)state;
    assert_ptr_equal(deliver_passwd_ref(m), m);
    deliver_passwd_free(m);
    /* still held once: lookups still work */
    assert_int_equal(deliver_passwd_find(m, "relay.example", "", &c), 1);
    assert_string_equal(c.pass, "name");
    deliver_passwd_free(m);
    unlink(path);
    assert_null(deliver_passwd_ref(NULL));
    deliver_passwd_free(NULL);
}

/* Bad tables are refused at load with the file, the line and the key,
 * never the secret. */
static void test_refused(void **state)
{
    static const struct {
        const char *text;
        const char *why; /* after "PATH, line " */
    } cases[] = {
        {"relay.example\n", "1: no user:password after \"relay.example\""},
        {"# c\nrelay.example secret-without-colon\n",
         "2: the value for \"relay.example\" is not user:password"},
        {"relay.example :nouser\n",
         "1: the value for \"relay.example\" is not user:password"},
        {"a.example u:p\nA.example v:q\n",
         "2: duplicate key \"a.example\" (first on line 1)"},
        {"  leading u:p\n", "1: continuation"},
        {"a.example u:p\0x\n", "1: NUL"},
    };
    char why[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char want[600];

        if (i == 5) {
            /* a NUL inside: written byte for byte */
            int fd;

            snprintf(path, sizeof(path), "/tmp/test_passwd.XXXXXX");
            fd = mkstemp(path);
            assert_int_equal(write(fd, "a.example u:p\0x\n", 16), 16);
            close(fd);
            assert_null(deliver_passwd_load("smtp_sasl_password_maps", path,
                                            why, sizeof(why)));
        } else {
            assert_null(load(cases[i].text, why, sizeof(why)));
        }
        snprintf(want, sizeof(want), "%s, line %s", path, cases[i].why);
        if (strncmp(why, want, strlen(want)) != 0 &&
            strstr(why, cases[i].why + 3) == NULL)
            fail_msg("case %zu: got \"%s\", want \"%s\"", i, why, want);
        assert_null(strstr(why, "secret"));
        unlink(path);
    }
    /* no table, a missing file, another table type */
    assert_null(
        deliver_passwd_load("smtp_sasl_password_maps", "", why, sizeof(why)));
    assert_string_equal(why, "");
    assert_null(deliver_passwd_load("smtp_sasl_password_maps",
                                    "/nonexistent/sasl_passwd", why,
                                    sizeof(why)));
    assert_non_null(strstr(why, "/nonexistent/sasl_passwd"));
    assert_null(deliver_passwd_load("smtp_sasl_password_maps",
                                    "mysql:/etc/x.cf", why, sizeof(why)));
    assert_non_null(strstr(why, "smtp_sasl_password_maps"));
}

static void test_hash_prefix(void **state)
{
    char why[256], value[128];
    struct deliver_passwd *m = load(table, why, sizeof(why));
    struct deliver_credentials c;

    (void)state;
    deliver_passwd_free(m);
    snprintf(value, sizeof(value), "hash:%s", path);
    m = deliver_passwd_load("smtp_sasl_password_maps", value, why, sizeof(why));
    assert_non_null(m);
    assert_int_equal(deliver_passwd_find(m, "", "example.com", &c), 1);
    deliver_passwd_free(m);
    unlink(path);
}

static void test_security_options(void **state)
{
    unsigned bits = 99;
    char why[256];

    (void)state;
    assert_int_equal(deliver_sasl_options_parse("noplaintext, noanonymous",
                                                &bits, why, sizeof(why)),
                     0);
    assert_int_equal(bits, DELIVER_SASL_NOPLAINTEXT | DELIVER_SASL_NOANONYMOUS);
    assert_int_equal(deliver_sasl_options_parse("", &bits, why, sizeof(why)),
                     0);
    assert_int_equal(bits, 0);
    assert_int_equal(
        deliver_sasl_options_parse(" NoActive,nodictionary mutual_auth ", &bits,
                                   why, sizeof(why)),
        0);
    assert_int_equal(bits, DELIVER_SASL_NOACTIVE | DELIVER_SASL_NODICTIONARY |
                               DELIVER_SASL_MUTUAL_AUTH);
    bits = 7;
    assert_int_equal(deliver_sasl_options_parse("noanonymous, forward_secrecy",
                                                &bits, why, sizeof(why)),
                     -1);
    assert_int_equal(bits, 7);
    assert_string_equal(why, "unknown SASL security option \"forward_secrecy\" "
                             "(noplaintext, noactive, nodictionary, "
                             "noanonymous, mutual_auth)");
    assert_int_equal(
        deliver_sasl_options_parse("noplaintextx", &bits, why, sizeof(why)),
        -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_reference_counted),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_hash_prefix),
        cmocka_unit_test(test_security_options),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
