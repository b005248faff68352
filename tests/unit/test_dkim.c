/*
 * test_dkim - DKIM signing: RFC 6376 3.4.5's canonicalization example,
 * the body canonicalizer as a stream, the header section and its From:,
 * the SigningTable and KeyTable (and what they refuse, with file and
 * line), and signatures checked with the public key (rsa-sha256 and
 * ed25519-sha256 as RFC 8463 defines it)
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dkim/dkim_impl.h"

/* ------------------------------------------------------ canonicalization */

/* RFC 6376 3.4.5, exactly. */
static const char example[] = "A: X\r\n"
                              "B : Y\t\r\n"
                              "\tZ  \r\n"
                              "\r\n"
                              " C \r\n"
                              "D \t E\r\n"
                              "\r\n"
                              "\r\n";

static void collect(void *ctx, const char *p, size_t n)
{
    util_buf_add(ctx, p, n);
}

/* The body canonicalized, fed in pieces of step bytes. */
static char *body_canon(const char *body, size_t len, int relaxed, size_t step,
                        size_t *outlen)
{
    struct util_buf out = UTIL_BUF_INIT;
    struct dkim_body b;

    dkim_body_init(&b, relaxed, collect, &out);
    for (size_t at = 0; at < len; at += step)
        dkim_body_feed(&b, body + at, len - at < step ? len - at : step);
    dkim_body_finish(&b);
    util_buf_add(&out, "", 0);
    *outlen = out.len;
    return util_buf_take(&out);
}

static void headers_canon(int relaxed, struct util_buf *out)
{
    struct dkim_header h;

    assert_int_equal(dkim_header_split(example, strlen(example), 0, &h), 2);
    for (size_t i = 0; i < h.n; i++)
        dkim_canon_header(out, h.f[i].p, h.f[i].len, relaxed);
    assert_int_equal(h.body, strlen("A: X\r\nB : Y\t\r\n\tZ  \r\n\r\n"));
    dkim_header_free(&h);
    util_buf_add(out, "", 0);
}

static void test_rfc_example(void **state)
{
    struct util_buf hr = UTIL_BUF_INIT, hs = UTIL_BUF_INIT;
    const char *body = example + strlen("A: X\r\nB : Y\t\r\n\tZ  \r\n\r\n");
    static const size_t steps[] = {1, 2, 3, 7, 4096};
    size_t n;
    char *c;

    (void)state;
    headers_canon(1, &hr);
    assert_string_equal(hr.data, "a:X\r\nb:Y Z\r\n");
    headers_canon(0, &hs);
    assert_string_equal(hs.data, "A: X\r\nB : Y\t\r\n\tZ  \r\n");
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        c = body_canon(body, strlen(body), 1, steps[i], &n);
        assert_string_equal(c, " C\r\nD E\r\n");
        free(c);
        c = body_canon(body, strlen(body), 0, steps[i], &n);
        assert_string_equal(c, " C \r\nD \t E\r\n");
        free(c);
    }
    util_buf_free(&hr);
    util_buf_free(&hs);
}

static void test_body_edges(void **state)
{
    static const struct {
        const char *in;
        int relaxed;
        const char *out;
    } cases[] = {
        {"", 1, ""},         /* relaxed: an empty body stays empty */
        {"", 0, "\r\n"},     /* simple: an empty body is one CRLF */
        {"\r\n\r\n", 1, ""}, /* only empty lines: empty */
        {"\r\n\r\n", 0, "\r\n"},
        {"abc", 1, "abc\r\n"}, /* no CRLF at the end: one added */
        {"abc", 0, "abc\r\n"},
        {"a  \t b \t\r\n \r\n\t\r\n", 1, "a b\r\n"},
        {"a\r\n\r\nb\r\n\r\n", 0, "a\r\n\r\nb\r\n"},
        {"a\rb\n\r\n", 1, "a\rb\n\r\n"}, /* lone CR, LF: text */
        {"x\r", 0, "x\r\r\n"},
        {"a\r\n  ", 1, "a\r\n \r\n"}, /* as dkimpy: no CRLF, SP kept */
        {" \t \r\nx\r\n", 1, "\r\nx\r\n"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (size_t step = 1; step <= 3; step++) {
            size_t n;
            char *c = body_canon(cases[i].in, strlen(cases[i].in),
                                 cases[i].relaxed, step, &n);

            if (strcmp(c, cases[i].out) != 0)
                fail_msg("case %zu step %zu: got \"%s\"", i, step, c);
            free(c);
        }
    }
}

/* A body longer than the output piece goes out whole, in order. */
static void test_body_long(void **state)
{
    size_t len = 3 * DKIM_BODY_PIECE + 17, n;
    char *in = malloc(len), *c;

    (void)state;
    for (size_t i = 0; i < len; i++)
        in[i] = (i % 50 == 48) ? '\r' : (i % 50 == 49) ? '\n' : 'a' + i % 26;
    c = body_canon(in, len, 1, 1000, &n);
    assert_int_equal(n, len - len % 50 + len % 50 + 2);
    assert_memory_equal(c, in, len);
    free(c);
    free(in);
}

static void test_header_relaxed(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;

    (void)state;
    dkim_canon_header(&b, "SUBJect \t:  a  \r\n \t b\t \r\n", 25, 1);
    util_buf_add(&b, "", 0);
    assert_string_equal(b.data, "subject:a b\r\n");
    util_buf_reset(&b);
    dkim_canon_header(&b, "To:\r\n", 5, 1);
    util_buf_add(&b, "", 0);
    assert_string_equal(b.data, "to:\r\n");
    util_buf_free(&b);
}

/* ---------------------------------------------------------------- From */

static int from_of(const char *msg, char *addr, size_t len)
{
    struct dkim_header h;
    int rc;

    if (dkim_header_split(msg, strlen(msg), 1, &h) < 0)
        return -2;
    rc = dkim_header_from(&h, addr, len);
    dkim_header_free(&h);
    return rc;
}

static void test_from(void **state)
{
    static const struct {
        const char *msg;
        const char *addr; /* NULL: refused */
    } cases[] = {
        {"From: a@Example.COM\r\n\r\nx", "a@example.com"},
        {"from:  Joe <joe@example.com>\r\n\r\n", "joe@example.com"},
        {"From: \"x <y@evil.test>\" <joe@example.com>\r\n\r\n",
         "joe@example.com"},
        {"From: (c <evil@evil.test>) joe@example.com\r\n\r\n",
         "joe@example.com"},
        {"From: Joe\r\n <joe@example.com>\r\n\r\n", "joe@example.com"},
        {"From: a@example.com, b@example.org\r\n\r\n", "a@example.com"},
        {"Subject: x\r\nFrom: a@x.test\r\n", "a@x.test"}, /* no body */
        {"From: a@x.test\r\nFrom: b@y.test\r\n\r\n", NULL},
        {"To: a@x.test\r\n\r\n", NULL},
        {"From: Joe\r\n\r\n", NULL},
        {"From: <@x.test>\r\n\r\n", NULL},
        {"From: <a@>\r\n\r\n", NULL},
        {"From: <a@b@c>\r\n\r\n", NULL},
        {"From: \"unterminated <a@b.test>\r\n\r\n", NULL},
        {"From:\r\n\r\n", NULL},
    };
    char addr[64];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = from_of(cases[i].msg, addr, sizeof(addr));

        if (cases[i].addr == NULL) {
            if (rc == 0)
                fail_msg("case %zu: took \"%s\"", i, addr);
        } else {
            if (rc != 0)
                fail_msg("case %zu: refused", i);
            assert_string_equal(addr, cases[i].addr);
        }
    }
    /* an address that does not fit is refused, never cut */
    assert_int_equal(from_of("From: abcdef@example.com\r\n\r\n", addr, 8), -1);
}

static void test_header_split(void **state)
{
    struct dkim_header h;
    const char *cut = "From: a@b.test\r\nSubject: x\r\n";

    (void)state;
    /* the head ends before the empty line: not whole, not usable */
    assert_int_equal(dkim_header_split(cut, strlen(cut), 0, &h), -1);
    assert_int_equal(dkim_header_split(cut, strlen(cut), 1, &h), 2);
    assert_int_equal(h.body, strlen(cut));
    dkim_header_free(&h);
    /* a continuation line first is a field of its own; no colon: no name */
    assert_int_equal(dkim_header_split(" x\r\nnocolon\r\n\r\n", 16, 0, &h), 2);
    assert_int_equal(h.f[0].name_len, 0);
    assert_int_equal(h.f[1].name_len, 0);
    dkim_header_free(&h);
    assert_int_equal(dkim_header_split("", 0, 0, &h), -1);
}

/* ------------------------------------------------------------- patterns */

static void test_pattern(void **state)
{
    (void)state;
    assert_true(dkim_pattern_match("*@example.com", "a@example.com"));
    assert_true(dkim_pattern_match("*@*.example.com", "a@x.example.com"));
    assert_false(dkim_pattern_match("*@*.example.com", "a@example.com"));
    assert_false(dkim_pattern_match("*@example.com", "a@example.com.evil"));
    assert_true(dkim_pattern_match("user@*", "user@x"));
    assert_true(dkim_pattern_match("*", ""));
    assert_true(dkim_pattern_match("a*b*c", "aXbYbc"));
    assert_false(dkim_pattern_match("a*b*c", "aXbYb"));
    assert_false(dkim_pattern_match("", "a"));
    /* many stars against a long miss: no exponential backtracking */
    assert_false(dkim_pattern_match(
        "*a*a*a*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
                                  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
}

/* --------------------------------------------------------------- tables */

static char dir[] = "/tmp/test_dkim.XXXXXX";

static void write_file(const char *name, const char *text)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void write_key(const char *name, EVP_PKEY *pkey)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL),
                     1);
    fclose(f);
}

static EVP_PKEY *rsa_key, *ed_key;

static int setup(void **state)
{
    EVP_PKEY *small;

    (void)state;
    if (mkdtemp(dir) == NULL)
        return -1;
    rsa_key = EVP_RSA_gen(2048);
    ed_key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    small = EVP_RSA_gen(512);
    if (rsa_key == NULL || ed_key == NULL || small == NULL)
        return -1;
    write_key("rsa.pem", rsa_key);
    write_key("ed.pem", ed_key);
    write_key("small.pem", small);
    {
        char path[256];
        FILE *f;

        snprintf(path, sizeof(path), "%s/encrypted.pem", dir);
        f = fopen(path, "w");
        if (f == NULL ||
            PEM_write_PrivateKey(f, rsa_key, EVP_aes_128_cbc(), NULL, 0, NULL,
                                 (void *)"secret") != 1)
            return -1;
        fclose(f);
    }
    EVP_PKEY_free(small);
    write_file("notakey.pem", "hello\n");
    return 0;
}

static int teardown(void **state)
{
    char cmd[300];

    (void)state;
    EVP_PKEY_free(rsa_key);
    EVP_PKEY_free(ed_key);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

/* The tables from text; NULL with why when refused. */
static struct dkim_keys *tables(const char *signing, const char *keys,
                                int refile, char *why, size_t whylen)
{
    char st[300], kt[300], k2[2048];

    /* "@DIR@" in the KeyTable is the test's directory */
    const char *at = strstr(keys, "@DIR@");

    if (at != NULL)
        snprintf(k2, sizeof(k2), "%.*s%s%s", (int)(at - keys), keys, dir,
                 at + 5);
    else
        snprintf(k2, sizeof(k2), "%s", keys);
    for (char *p; (p = strstr(k2, "@DIR@")) != NULL;) {
        char rest[2048];

        snprintf(rest, sizeof(rest), "%s", p + 5);
        snprintf(p, sizeof(k2) - (size_t)(p - k2), "%s%s", dir, rest);
    }
    write_file("SigningTable", signing);
    write_file("KeyTable", k2);
    snprintf(st, sizeof(st), "%s%s/SigningTable", refile ? "refile:" : "", dir);
    snprintf(kt, sizeof(kt), "%s/KeyTable", dir);
    return dkim_keys_load(st, kt, "relaxed/relaxed", why, whylen);
}

static const char key_table[] = "# OpenDKIM KeyTable\n"
                                "rsa   Example.com:sel:@DIR@/rsa.pem\n"
                                "ed    example.com:ed:@DIR@/ed.pem\n"
                                "other other.test:s2024:@DIR@/rsa.pem\n";

static void test_tables_plain(void **state)
{
    char why[512];
    struct dkim_keys *k = tables("example.com rsa\n"
                                 "Boss@example.com ed\n"
                                 "other.test other\n",
                                 key_table, 0, why, sizeof(why));
    const struct dkim_key *key;

    (void)state;
    if (k == NULL)
        fail_msg("%s", why);
    key = dkim_keys_find(k, "joe@example.com");
    assert_non_null(key);
    assert_string_equal(key->name, "rsa");
    assert_string_equal(key->domain, "example.com");
    assert_string_equal(key->selector, "sel");
    assert_int_equal(key->alg, DKIM_RSA_SHA256);
    key = dkim_keys_find(k, "boss@example.com"); /* the address first */
    assert_non_null(key);
    assert_string_equal(key->name, "ed");
    assert_int_equal(key->alg, DKIM_ED25519_SHA256);
    assert_null(dkim_keys_find(k, "joe@sub.example.com")); /* not a pattern */
    assert_null(dkim_keys_find(k, "joe@example.org"));
    dkim_keys_free(k);
}

static void test_tables_refile(void **state)
{
    char why[512];
    struct dkim_keys *k = tables("boss@example.com ed\n"
                                 "*@example.com rsa\n"
                                 "*@*.other.test other\n",
                                 key_table, 1, why, sizeof(why));

    (void)state;
    if (k == NULL)
        fail_msg("%s", why);
    assert_string_equal(dkim_keys_find(k, "boss@example.com")->name, "ed");
    assert_string_equal(dkim_keys_find(k, "x@example.com")->name, "rsa");
    assert_string_equal(dkim_keys_find(k, "x@a.other.test")->name, "other");
    assert_null(dkim_keys_find(k, "x@other.test"));
    assert_null(dkim_keys_find(k, "example.com")); /* no address */
    dkim_keys_free(k);
}

static void test_tables_refused(void **state)
{
    static const struct {
        const char *signing, *keys;
        const char *why; /* the end of the reason */
    } cases[] = {
        {"example.com nokey\n", key_table,
         "SigningTable, line 1: key name nokey is not in the KeyTable"},
        {"example.com\n", key_table,
         "SigningTable, line 1: expected two fields, NAME and VALUE"},
        {"example.com rsa extra\n", key_table,
         "SigningTable, line 1: expected two fields, NAME and VALUE"},
        {"", "# c\n\nk example.com:sel\n",
         "KeyTable, line 3: expected DOMAIN:SELECTOR:/PATH after k"},
        {"", "k exa_mple..com:sel:@DIR@/rsa.pem\n",
         "KeyTable, line 1: bad signing domain \"exa_mple..com\""},
        {"", "k example.com:s;el:@DIR@/rsa.pem\n",
         "KeyTable, line 1: bad selector \"s;el\""},
        {"", "k example.com:sel:rsa.pem\n",
         "KeyTable, line 1: the key must be the absolute path of a PEM "
         "file, not \"rsa.pem\""},
        {"", "k example.com:sel:@DIR@/rsa.pem\nk x.test:s:@DIR@/ed.pem\n",
         "KeyTable, line 2: key name k is there twice"},
        {"", "k example.com:sel:@DIR@/small.pem\n",
         "small.pem: RSA key of 512 bits, fewer than 1024 (RFC 8301)"},
        {"", "k example.com:sel:@DIR@/missing.pem\n",
         "missing.pem: No such file or directory"},
        {"", "k example.com:sel:@DIR@/\n", "/: not a regular file"},
        {"", "k example.com:sel:@DIR@/encrypted.pem\n",
         "encrypted.pem: no PEM private key (unencrypted) in it: bad "
         "password read"},
        {"", "k example.com:%:@DIR@/rsa.pem\n",
         "KeyTable, line 1: bad selector \"%\""},
    };
    char why[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct dkim_keys *k =
            tables(cases[i].signing, cases[i].keys, 0, why, sizeof(why));
        size_t wl = strlen(why), el = strlen(cases[i].why);

        if (k != NULL)
            fail_msg("case %zu: taken", i);
        if (wl < el || strcmp(why + wl - el, cases[i].why) != 0)
            fail_msg("case %zu: \"%s\"", i, why);
        assert_non_null(strstr(why, dir)); /* the file is named */
    }
    /* a key file that is not PEM names the file */
    assert_null(
        tables("", "k example.com:s:@DIR@/notakey.pem\n", 0, why, sizeof(why)));
    assert_non_null(strstr(why, "notakey.pem: no PEM private key"));
    assert_non_null(strstr(why, "KeyTable, line 1: "));
    /* a signing table without a key table, an empty refile:, another
     * table type */
    assert_null(dkim_keys_load("/x", "", "relaxed/relaxed", why, sizeof(why)));
    assert_string_equal(why, "dkim_signing_table is set, dkim_key_table not");
    {
        char kt[300], text[300];

        snprintf(text, sizeof(text), "k example.com:s:%s/rsa.pem\n", dir);
        write_file("KeyTable", text);
        snprintf(kt, sizeof(kt), "hash:%s/KeyTable", dir); /* taken */
        assert_null(
            dkim_keys_load("refile:", kt, "relaxed/relaxed", why, sizeof(why)));
        assert_string_equal(why, "dkim_signing_table: no file named");
        assert_null(dkim_keys_load("regexp:/x", kt, "relaxed/relaxed", why,
                                   sizeof(why)));
        assert_non_null(strstr(why, "dkim_signing_table"));
    }
    /* a canonicalization that does not exist */
    assert_null(dkim_keys_load("x", "y", "relaxed", why, sizeof(why)));
    assert_string_equal(why,
                        "dkim_canonicalization: unknown value \"relaxed\"");
}

/* -------------------------------------------------------------- signing */

static const char message[] =
    "Received: from x by y; Thu, 1 Jan 2026 00:00:00 +0000\r\n"
    "From: Joe <joe@example.com>\r\n"
    "To: a@example.org\r\n"
    "X-Mailer: test\r\n"
    "Subject: hello\r\n"
    "To: b@example.org\r\n"
    "Date: Thu, 1 Jan 2026 00:00:00 +0000\r\n"
    "List-Id: <l.example.com>\r\n"
    "Message-ID: <1@example.com>\r\n"
    "\r\n"
    "Hello.\r\n";

/* The value of tag in field (unfolded, without white space). */
static char *tag(const char *field, const char *name)
{
    struct util_buf v = UTIL_BUF_INIT;
    char key[16];
    const char *p;

    snprintf(key, sizeof(key), " %s=", name);
    p = strstr(field, key);
    if (p == NULL) {
        snprintf(key, sizeof(key), "\t%s=", name);
        p = strstr(field, key);
    }
    assert_non_null(p);
    for (p += strlen(key); *p && *p != ';'; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n')
            util_buf_add(&v, p, 1);
    util_buf_add(&v, "", 0);
    return util_buf_take(&v);
}

/* Every line at most 78 characters, continuations starting with a tab. */
static void check_folding(const char *field)
{
    const char *line = field, *end;

    assert_int_equal(strncmp(field, "DKIM-Signature: v=1; ", 21), 0);
    while ((end = strstr(line, "\r\n")) != NULL) {
        assert_true(end - line <= 78 - (line == field ? 0 : 7));
        if (line != field)
            assert_int_equal(line[0], '\t');
        line = end + 2;
    }
    assert_int_equal(*line, 0); /* ends in CRLF */
}

/* The header data a verifier hashes, from the signed message. */
static void verify(const char *field, EVP_PKEY *pkey, int ed)
{
    struct util_buf all = UTIL_BUF_INIT, data = UTIL_BUF_INIT;
    struct dkim_header h;
    unsigned char sig[512], hash[32];
    char *b = tag(field, "b"), *hlist = tag(field, "h");
    char used[32] = {0}, *name, *save = NULL;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    ssize_t siglen;
    const char *bpos;

    util_buf_puts(&all, field);
    util_buf_puts(&all, message);
    assert_true(dkim_header_split(all.data, all.len, 1, &h) > 0);
    for (name = strtok_r(hlist, ":", &save); name;
         name = strtok_r(NULL, ":", &save)) {
        for (size_t i = h.n; i-- > 1;) /* 0 is the signature */
            if (!used[i] && h.f[i].name_len == strlen(name) &&
                strncasecmp(h.f[i].p, name, h.f[i].name_len) == 0) {
                used[i] = 1;
                dkim_canon_header(&data, h.f[i].p, h.f[i].len, 1);
                break;
            }
    }
    /* the signature field with b= emptied, no CRLF */
    bpos = strstr(h.f[0].p, "b=");
    while (bpos && bpos[-1] != ' ' && bpos[-1] != '\t')
        bpos = strstr(bpos + 1, "b=");
    {
        struct util_buf sf = UTIL_BUF_INIT;

        util_buf_add(&sf, h.f[0].p, (size_t)(bpos + 2 - h.f[0].p));
        util_buf_add(&sf, "\r\n", 2);
        dkim_canon_header(&data, sf.data, sf.len, 1);
        data.len -= 2;
        util_buf_free(&sf);
    }
    siglen = util_base64_decode(sig, sizeof(sig), b, strlen(b), 0);
    assert_true(siglen > 0);
    if (ed) {
        EVP_Digest(data.data, data.len, hash, NULL, EVP_sha256(), NULL);
        assert_int_equal(EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pkey), 1);
        assert_int_equal(
            EVP_DigestVerify(ctx, sig, (size_t)siglen, hash, sizeof(hash)), 1);
    } else {
        assert_int_equal(
            EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, pkey), 1);
        assert_int_equal(EVP_DigestVerify(ctx, sig, (size_t)siglen,
                                          (unsigned char *)data.data, data.len),
                         1);
    }
    EVP_MD_CTX_free(ctx);
    dkim_header_free(&h);
    util_buf_free(&all);
    util_buf_free(&data);
    free(b);
    free(hlist);
}

static void sign_with(const char *signing, int ed)
{
    struct util_buf field = UTIL_BUF_INIT;
    char why[512], *v;
    struct dkim_keys *k = tables(signing, key_table, 1, why, sizeof(why));

    if (k == NULL)
        fail_msg("%s", why);
    assert_int_equal(dkim_sign_message(k, message, strlen(message), 1767225600,
                                       &field, why, sizeof(why)),
                     1);
    util_buf_add(&field, "", 0);
    check_folding(field.data);
    v = tag(field.data, "a");
    assert_string_equal(v, ed ? "ed25519-sha256" : "rsa-sha256");
    free(v);
    v = tag(field.data, "c");
    assert_string_equal(v, "relaxed/relaxed");
    free(v);
    v = tag(field.data, "d");
    assert_string_equal(v, "example.com");
    free(v);
    v = tag(field.data, "s");
    assert_string_equal(v, ed ? "ed" : "sel");
    free(v);
    v = tag(field.data, "t");
    assert_string_equal(v, "1767225600");
    free(v);
    v = tag(field.data, "h"); /* in order, each occurrence, From again */
    assert_string_equal(v, "From:To:Subject:To:Date:List-Id:Message-ID:From");
    free(v);
    /* bh: SHA-256 of "Hello.\r\n" */
    v = tag(field.data, "bh");
    assert_string_equal(v, "yZQq1c8wjBl0fZ4Wc/oraMCAG1mZJv5v/hlvyFy+t6A=");
    free(v);
    verify(field.data, ed ? ed_key : rsa_key, ed);
    util_buf_free(&field);
    dkim_keys_free(k);
}

static void test_sign_rsa(void **state)
{
    (void)state;
    sign_with("*@example.com rsa\n", 0);
}

static void test_sign_ed25519(void **state)
{
    (void)state;
    sign_with("*@example.com ed\n", 1);
}

/* The same signature whether the body comes whole or a byte at a time. */
static void test_sign_stream(void **state)
{
    struct util_buf whole = UTIL_BUF_INIT, parts = UTIL_BUF_INIT;
    char why[512];
    struct dkim_keys *k =
        tables("*@example.com ed\n", key_table, 1, why, sizeof(why));
    const char *body = strstr(message, "\r\n\r\n") + 4;
    size_t head = (size_t)(body - message);
    struct dkim_sign *s;

    (void)state;
    assert_non_null(k);
    assert_int_equal(dkim_sign_message(k, message, strlen(message), 1, &whole,
                                       why, sizeof(why)),
                     1);
    s = dkim_sign_begin(k, message, head, 0, why, sizeof(why));
    assert_non_null(s);
    assert_int_equal(dkim_sign_count(s), 1);
    assert_string_equal(dkim_sign_domain(s, 0), "example.com");
    assert_string_equal(dkim_sign_selector(s, 0), "ed");
    for (const char *p = body; *p; p++)
        dkim_sign_body(s, p, 1);
    assert_int_equal(dkim_sign_end(s, 1, &parts, why, sizeof(why)), 0);
    dkim_sign_free(s);
    assert_int_equal(whole.len, parts.len); /* Ed25519 is deterministic */
    assert_memory_equal(whole.data, parts.data, whole.len);
    util_buf_free(&whole);
    util_buf_free(&parts);
    dkim_keys_free(k);
}

static void test_sign_not(void **state)
{
    struct util_buf field = UTIL_BUF_INIT;
    char why[512];
    struct dkim_keys *k =
        tables("*@example.com rsa\n", key_table, 1, why, sizeof(why));

    (void)state;
    assert_non_null(k);
    assert_int_equal(dkim_sign_message(k, "From: a@else.test\r\n\r\nx\r\n", 24,
                                       1, &field, why, sizeof(why)),
                     0);
    assert_string_equal(why, "no signing table match for 'a@else.test'");
    assert_int_equal(dkim_sign_message(k, "To: a@else.test\r\n\r\n", 19, 1,
                                       &field, why, sizeof(why)),
                     0);
    assert_string_equal(why, "no single From: address to choose a key by");
    assert_int_equal(field.len, 0);
    /* a head that is cut before the empty line */
    assert_null(
        dkim_sign_begin(k, "From: a@example.com\r\n", 21, 0, why, sizeof(why)));
    assert_string_equal(why, "header section longer than 21 bytes");
    dkim_keys_free(k);
}

/* dkim_multiple_signatures: every match signs, each field on its own. */
static void test_sign_multiple(void **state)
{
    struct util_buf field = UTIL_BUF_INIT;
    const struct dkim_key *found[DKIM_SIGNATURES_MAX];
    char why[512], *second;
    struct dkim_keys *k = tables("*@example.com rsa\n"
                                 "joe@* rsa\n" /* the same key: once */
                                 "*@example.com ed\n",
                                 key_table, 1, why, sizeof(why));

    (void)state;
    assert_non_null(k);
    /* off (the default): the first match alone */
    assert_int_equal(dkim_keys_find_all(k, "joe@example.com", found, 4), 1);
    assert_int_equal(dkim_sign_message(k, message, strlen(message), 1, &field,
                                       why, sizeof(why)),
                     1);
    util_buf_add(&field, "", 0);
    assert_null(strstr(field.data + 1, "DKIM-Signature:"));
    util_buf_reset(&field);
    dkim_keys_multiple_set(k, 1);
    assert_int_equal(dkim_keys_find_all(k, "joe@example.com", found, 4), 2);
    assert_string_equal(found[0]->name, "rsa");
    assert_string_equal(found[1]->name, "ed");
    assert_int_equal(dkim_keys_find_all(k, "joe@example.com", found, 1), 1);
    assert_int_equal(dkim_sign_message(k, message, strlen(message), 1, &field,
                                       why, sizeof(why)),
                     1);
    util_buf_add(&field, "", 0);
    second = strstr(field.data + 1, "\r\nDKIM-Signature:");
    assert_non_null(second);
    second += 2;
    assert_null(strstr(second + 1, "DKIM-Signature:")); /* two, not three */
    verify(second, ed_key, 1);
    *second = 0; /* the first field alone */
    check_folding(field.data);
    verify(field.data, rsa_key, 0);
    util_buf_free(&field);
    dkim_keys_free(k);
}

/* A folded field (a long h=) stays within 78 columns. */
static void test_sign_long_names(void **state)
{
    struct util_buf msg = UTIL_BUF_INIT, field = UTIL_BUF_INIT;
    char why[512], *v;
    struct dkim_keys *k =
        tables("*@example.com rsa\n", key_table, 1, why, sizeof(why));

    (void)state;
    assert_non_null(k);
    util_buf_puts(&msg, "From: a@example.com\r\n");
    for (int i = 0; i < 30; i++)
        util_buf_printf(&msg, "Resent-Message-Id-Extra-%d: x\r\n", i);
    /* a name longer than any real one, and one with a dot: not signed */
    util_buf_puts(&msg, "List-");
    for (int i = 0; i < 200; i++)
        util_buf_puts(&msg, "x");
    util_buf_puts(&msg, ": y\r\nList-a.b: z\r\n");
    util_buf_puts(&msg, "\r\nbody\r\n");
    assert_int_equal(
        dkim_sign_message(k, msg.data, msg.len, 1, &field, why, sizeof(why)),
        1);
    util_buf_add(&field, "", 0);
    check_folding(field.data);
    v = tag(field.data, "h");
    assert_int_equal(strncmp(v, "From:Resent-Message-Id-Extra-0:", 31), 0);
    assert_int_equal(strcmp(v + strlen(v) - 5, ":From"), 0);
    assert_null(strstr(v, "List-"));
    free(v);
    util_buf_free(&msg);
    util_buf_free(&field);
    dkim_keys_free(k);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_example),
        cmocka_unit_test(test_body_edges),
        cmocka_unit_test(test_body_long),
        cmocka_unit_test(test_header_relaxed),
        cmocka_unit_test(test_from),
        cmocka_unit_test(test_header_split),
        cmocka_unit_test(test_pattern),
        cmocka_unit_test(test_tables_plain),
        cmocka_unit_test(test_tables_refile),
        cmocka_unit_test(test_tables_refused),
        cmocka_unit_test(test_sign_rsa),
        cmocka_unit_test(test_sign_ed25519),
        cmocka_unit_test(test_sign_stream),
        cmocka_unit_test(test_sign_not),
        cmocka_unit_test(test_sign_multiple),
        cmocka_unit_test(test_sign_long_names),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
