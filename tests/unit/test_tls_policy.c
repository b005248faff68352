/*
 * test_tls_policy - tls/policy.c: the reference's TLS security levels,
 * the smtp_tls_policy_maps syntax ("a level, then attributes"; lists
 * inside an attribute separated by ":"), the protocols grammar
 * ("!SSLv2, !SSLv3", ">=TLSv1.2"), the cipher grades, and the table's
 * lookups by next hop, then ".parent" domains.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tls/tls.h"

static void test_levels(void **state)
{
    static const char *words[] = {"none",      "may",    "encrypt", "dane",
                                  "dane-only", "verify", "secure"};
    enum tls_level l;

    (void)state;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        assert_int_equal(tls_level_parse(words[i], &l), 0);
        assert_int_equal(l, (enum tls_level)i);
        assert_string_equal(tls_level_name(l), words[i]);
    }
    assert_int_equal(tls_level_parse("MAY", &l), 0);
    assert_int_equal(l, TLS_LEV_MAY);
    assert_int_equal(tls_level_parse("fingerprint", &l), -1);
    assert_int_equal(tls_level_parse("", &l), -1);
    /* "the message never goes in plaintext" at the enforcing levels */
    assert_false(tls_level_enforced(TLS_LEV_NONE));
    assert_false(tls_level_enforced(TLS_LEV_MAY));
    assert_false(tls_level_enforced(TLS_LEV_DANE));
    assert_true(tls_level_enforced(TLS_LEV_ENCRYPT));
    assert_true(tls_level_enforced(TLS_LEV_DANE_ONLY));
    assert_true(tls_level_enforced(TLS_LEV_VERIFY));
    assert_true(tls_level_enforced(TLS_LEV_SECURE));
}

static void protocols(const char *text, int min, int max)
{
    int lo = -1, hi = -1;
    char why[256];

    assert_int_equal(tls_protocols_parse(text, &lo, &hi, why, sizeof(why)), 0);
    assert_int_equal(lo, min);
    assert_int_equal(hi, max);
}

static void test_protocols(void **state)
{
    char why[256];
    int lo, hi;

    (void)state;
    protocols(">=TLSv1.2", TLS1_2_VERSION, 0);
    protocols("<=TLSv1.2", 0, TLS1_2_VERSION);
    protocols("TLSv1.2:TLSv1.3", TLS1_2_VERSION, 0);
    protocols("TLSv1.2", TLS1_2_VERSION, TLS1_2_VERSION);
    /* Postfix's old default: everything but SSL */
    protocols("!SSLv2, !SSLv3", TLS1_VERSION, 0);
    protocols("!SSLv2:!SSLv3:!TLSv1:!TLSv1.1", TLS1_2_VERSION, 0);
    protocols("!TLSv1.3", 0, TLS1_2_VERSION);
    protocols("", 0, 0);
    assert_int_equal(
        tls_protocols_parse(">=TLSv1.3 <=TLSv1.2", &lo, &hi, why, sizeof(why)),
        -1);
    assert_string_equal(why, "TLS protocols \">=TLSv1.3 <=TLSv1.2\" leave no "
                             "protocol");
    assert_int_equal(tls_protocols_parse("TLSv9", &lo, &hi, why, sizeof(why)),
                     -1);
    assert_string_equal(why, "unknown TLS protocol \"TLSv9\"");
}

static void test_ciphers(void **state)
{
    (void)state;
    assert_string_equal(tls_cipher_list("high"), "HIGH:!aNULL:@STRENGTH");
    assert_string_equal(tls_cipher_list("medium"),
                        "HIGH:MEDIUM:!aNULL:@STRENGTH");
    assert_string_equal(tls_cipher_list("export"),
                        "HIGH:MEDIUM:!aNULL:@STRENGTH");
    assert_non_null(tls_cipher_list("null"));
    assert_null(tls_cipher_list("strong"));
}

static void policy_fails(const char *text, const char *want)
{
    struct tls_policy p;
    char why[256];

    assert_int_equal(tls_policy_parse(text, &p, why, sizeof(why)), -1);
    assert_string_equal(why, want);
}

static void test_policy_parse(void **state)
{
    struct tls_policy p;
    char why[256];

    (void)state;
    /* postconf(5), smtp_tls_policy_maps: "secure match=.example.com" */
    assert_int_equal(tls_policy_parse("secure match=.example.com:example.com "
                                      "protocols=!SSLv2:!SSLv3 ciphers=high",
                                      &p, why, sizeof(why)),
                     0);
    assert_int_equal(p.level, TLS_LEV_SECURE);
    assert_string_equal(p.match, ".example.com:example.com");
    assert_string_equal(p.protocols, "!SSLv2:!SSLv3");
    assert_string_equal(p.ciphers, "high");
    assert_int_equal(tls_policy_parse("  encrypt  ", &p, why, sizeof(why)), 0);
    assert_int_equal(p.level, TLS_LEV_ENCRYPT);
    assert_string_equal(p.match, "");
    assert_int_equal(tls_policy_parse("none", &p, why, sizeof(why)), 0);
    assert_int_equal(p.level, TLS_LEV_NONE);

    policy_fails("fingerprint match=3D:95:34",
                 "TLS security level fingerprint is not supported");
    policy_fails("sometimes", "unknown TLS security level \"sometimes\" "
                              "(expected none, may, encrypt, dane, "
                              "dane-only, verify or secure)");
    policy_fails("", "unknown TLS security level \"\" (expected none, may, "
                     "encrypt, dane, dane-only, verify or secure)");
    policy_fails("verify tafile=/etc/ta.pem",
                 "TLS policy attribute \"tafile\" is not supported (sluice "
                 "knows match, protocols and ciphers)");
    policy_fails("verify match", "TLS policy attribute \"match\": expected "
                                 "name=value");
    policy_fails("verify match=", "TLS policy attribute match: empty value");
    policy_fails("encrypt ciphers=strong",
                 "TLS policy attribute ciphers: unknown grade \"strong\" "
                 "(expected high, medium, low, export or null)");
    policy_fails("encrypt protocols=TLSv9", "unknown TLS protocol \"TLSv9\"");
}

static char path[64];

static void table(const char *text)
{
    FILE *f;

    snprintf(path, sizeof(path), "/tmp/sluice-tls-policy.%d", (int)getpid());
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_map(void **state)
{
    struct tls_policy_map *m;
    struct tls_policy p;
    char why[512], want[512];

    (void)state;
    why[0] = 'x';
    assert_null(
        tls_policy_map_load("smtp_tls_policy_maps", "", why, sizeof(why)));
    assert_string_equal(why, ""); /* no table, no error */
    table("# the reference's examples\n"
          "example.com        secure match=.example.com\n"
          ".example.com       verify\n"
          "[mail.example.net]:587 encrypt protocols=>=TLSv1.3\n"
          "[192.0.2.1]        none\n"
          "EXAMPLE.ORG        dane-only\n"
          "    ciphers=high\n");
    m = tls_policy_map_load("smtp_tls_policy_maps", path, why, sizeof(why));
    assert_non_null(m);
    assert_int_equal(tls_policy_map_find(m, "example.com", &p), 1);
    assert_int_equal(p.level, TLS_LEV_SECURE);
    assert_string_equal(p.match, ".example.com");
    /* a subdomain: ".example.com", nearest parent first */
    assert_int_equal(tls_policy_map_find(m, "a.b.example.com", &p), 1);
    assert_int_equal(p.level, TLS_LEV_VERIFY);
    assert_int_equal(tls_policy_map_find(m, "[mail.example.net]:587", &p), 1);
    assert_int_equal(p.level, TLS_LEV_ENCRYPT);
    assert_string_equal(p.protocols, ">=TLSv1.3");
    assert_int_equal(tls_policy_map_find(m, "[mail.example.net]", &p), 0);
    assert_int_equal(tls_policy_map_find(m, "[192.0.2.1]", &p), 1);
    assert_int_equal(p.level, TLS_LEV_NONE);
    /* keys are case-insensitive; a continuation line joins */
    assert_int_equal(tls_policy_map_find(m, "Example.Org", &p), 1);
    assert_int_equal(p.level, TLS_LEV_DANE_ONLY);
    assert_string_equal(p.ciphers, "high");
    assert_int_equal(tls_policy_map_find(m, "example.net", &p), 0);
    assert_int_equal(tls_policy_map_find(m, "com", &p), 0);
    tls_policy_map_free(m);

    table("a.example  may\n\nb.example  secure\na.example  encrypt\n");
    assert_null(
        tls_policy_map_load("smtp_tls_policy_maps", path, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "%s, line 4: duplicate key \"a.example\" (first on line 1)", path);
    assert_string_equal(why, want);

    table("a.example  may\nb.example  fingerprint\n");
    assert_null(tls_policy_map_load(
        "smtp_tls_policy_maps", "texthash:/nonexistent/x", why, sizeof(why)));
    assert_string_equal(why, "/nonexistent/x: No such file or directory");
    snprintf(want, sizeof(want), "hash:%s", path);
    assert_null(
        tls_policy_map_load("smtp_tls_policy_maps", want, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "%s, line 2: TLS security level fingerprint is not supported",
             path);
    assert_string_equal(why, want);
    assert_null(tls_policy_map_load("smtp_tls_policy_maps", "lmdb:/x", why,
                                    sizeof(why)));
    assert_string_equal(why, "smtp_tls_policy_maps: table type \"lmdb\" is not "
                             "supported: expected the path of a text file");
    table("a.example\n");
    assert_null(
        tls_policy_map_load("smtp_tls_policy_maps", path, why, sizeof(why)));
    snprintf(want, sizeof(want), "%s, line 1: no policy after \"a.example\"",
             path);
    assert_string_equal(why, want);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_levels),  cmocka_unit_test(test_protocols),
        cmocka_unit_test(test_ciphers), cmocka_unit_test(test_policy_parse),
        cmocka_unit_test(test_map),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
