/*
 * NAME
 *	test_ingress_nets 1 - unit tests of network lists (mynetworks)
 * SYNOPSIS
 *	build/tests/test_ingress_nets
 * DESCRIPTION
 *	Tests src/ingress/nets.c: Postfix's mynetworks syntax (addresses
 *	and CIDR blocks, IPv6 in brackets or bare, separated by commas or
 *	white space), matching IPv4, IPv6 and IPv4-mapped IPv6 clients,
 *	host bits set in a block (refused, as Postfix does, so that a typo
 *	does not open a relay), and every kind of bad entry with its reason.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ingress/ingress.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

static int match(const struct ingress_nets *n, const char *addr)
{
    struct sockaddr_storage ss;

    memset(&ss, 0, sizeof(ss));
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
    }
    return ingress_nets_match(n, (struct sockaddr *)&ss);
}

static void test_match(void **state)
{
    char why[256];
    struct ingress_nets *n = ingress_nets_parse(
        "127.0.0.0/8, [::1]/128 192.0.2.7\t10.1.0.0/16,[2001:db8::]/32 "
        "2001:db8:ffff::/48 172.16.0.0/12",
        why, sizeof(why));

    (void)state;
    assert_non_null(n);
    assert_true(match(n, "127.0.0.1"));
    assert_true(match(n, "127.255.255.254"));
    assert_false(match(n, "128.0.0.1"));
    assert_true(match(n, "192.0.2.7"));
    assert_false(match(n, "192.0.2.8"));
    assert_true(match(n, "10.1.200.3"));
    assert_false(match(n, "10.2.0.1"));
    /* A prefix that ends inside a byte. */
    assert_true(match(n, "172.16.0.1"));
    assert_true(match(n, "172.31.255.255"));
    assert_false(match(n, "172.32.0.0"));
    assert_false(match(n, "172.15.255.255"));
    assert_true(match(n, "::1"));
    assert_false(match(n, "::2"));
    assert_true(match(n, "2001:db8:1234::5"));
    assert_false(match(n, "2001:db9::1"));
    /* A client on an IPv6 socket with an IPv4 address. */
    assert_true(match(n, "::ffff:127.0.0.9"));
    assert_false(match(n, "::ffff:11.0.0.1"));
    ingress_nets_free(n);
}

static void test_empty_and_everything(void **state)
{
    char why[256];
    struct ingress_nets *n = ingress_nets_parse("", why, sizeof(why));

    (void)state;
    assert_non_null(n);
    assert_false(match(n, "127.0.0.1"));
    ingress_nets_free(n);
    n = ingress_nets_parse("0.0.0.0/0 [::]/0", why, sizeof(why));
    assert_non_null(n);
    assert_true(match(n, "203.0.113.5"));
    assert_true(match(n, "2001:db8::1"));
    ingress_nets_free(n);
}

static void bad(const char *list, const char *reason)
{
    char why[256] = "";

    assert_null(ingress_nets_parse(list, why, sizeof(why)));
    assert_string_equal(why, reason);
}

static void test_errors(void **state)
{
    (void)state;
    bad("127.0.0.1/33", "bad network \"127.0.0.1/33\": prefix longer than 32");
    bad("[::1]/129", "bad network \"[::1]/129\": prefix longer than 128");
    bad("127.0.0.1/8",
        "bad network \"127.0.0.1/8\": host bits set (did you mean "
        "127.0.0.0/8?)");
    bad("[2001:db8::1]/32",
        "bad network \"[2001:db8::1]/32\": host bits set (did you mean "
        "[2001:db8::]/32?)");
    bad("172.17.0.0/12", "bad network \"172.17.0.0/12\": host bits set (did "
                         "you mean 172.16.0.0/12?)");
    bad("localhost", "bad network \"localhost\": not an IP address");
    bad("10.0.0.0/x", "bad network \"10.0.0.0/x\": bad prefix length");
    bad("10.0.0.0/", "bad network \"10.0.0.0/\": bad prefix length");
    bad("[10.0.0.1", "bad network \"[10.0.0.1\": not an IP address");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_match),
        cmocka_unit_test(test_empty_and_everything),
        cmocka_unit_test(test_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
