/*
 * NAME
 *	fuzz_dkim 1 - libFuzzer target: DKIM's header parsing,
 *	canonicalization, signing and SigningTable
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Takes arbitrary bytes as a message (its head cut anywhere, or
 *	whole) and as a SigningTable file, under AddressSanitizer and
 *	UBSan: a crash, an overrun or undefined behaviour is a bug. It
 *	also checks the contract: the header fields found lie inside the
 *	input and in order; a From: address taken has one "@" and is
 *	lowercase; a relaxed header field is one line ending in CRLF with
 *	no white space run; the body canonicalized in one piece and a byte
 *	at a time is the same, relaxed has no white space before a CRLF
 *	(but the one it adds to an unfinished last line, as dkimpy does)
 *	and no run of it, both end in CRLF unless empty; a message that
 *	has a From: address is signed with the Ed25519 key made at start
 *	(the SigningTable "*" matches every address), never refused with
 *	an error; a SigningTable refused says where ("line N"). The seed
 *	corpus is tests/fuzz/corpus/dkim/.
 */

#include "dkim/dkim_impl.h"

#include <openssl/pem.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz_dkim.XXXXXX";
static struct dkim_keys *keys;

static void write_file(const char *name, const void *p, size_t n)
{
    char path[256];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "w")) == NULL)
        abort();
    if (fwrite(p, 1, n, f) != n)
        abort();
    fclose(f);
}

/* The key and tables go when the fuzzer exits. */
static void cleanup(void)
{
    static const char *const names[] = {"ed.pem", "KeyTable", "SigningTable",
                                        "FuzzTable"};
    char path[256];

    dkim_keys_free(keys);
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static void init(void)
{
    char path[256], text[512], st[300], kt[300], why[512];
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *f;

    if (mkdtemp(dir) == NULL || k == NULL)
        abort();
    atexit(cleanup);
    snprintf(path, sizeof(path), "%s/ed.pem", dir);
    if ((f = fopen(path, "w")) == NULL ||
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) != 1)
        abort();
    fclose(f);
    EVP_PKEY_free(k);
    snprintf(text, sizeof(text), "k x.test:s:%s\n", path);
    write_file("KeyTable", text, strlen(text));
    write_file("SigningTable", "* k\n", 4);
    snprintf(st, sizeof(st), "refile:%s/SigningTable", dir);
    snprintf(kt, sizeof(kt), "%s/KeyTable", dir);
    if ((keys = dkim_keys_load(st, kt, "relaxed/relaxed", why, sizeof(why))) ==
        NULL)
        abort();
}

static void collect(void *ctx, const char *p, size_t n)
{
    util_buf_add(ctx, p, n);
}

static void body_check(const char *p, size_t n, int relaxed)
{
    struct util_buf whole = UTIL_BUF_INIT, bytes = UTIL_BUF_INIT;
    struct dkim_body b;

    dkim_body_init(&b, relaxed, collect, &whole);
    dkim_body_feed(&b, p, n);
    dkim_body_finish(&b);
    dkim_body_init(&b, relaxed, collect, &bytes);
    for (size_t i = 0; i < n; i++)
        dkim_body_feed(&b, p + i, 1);
    dkim_body_finish(&b);
    if (whole.len != bytes.len ||
        (whole.len && memcmp(whole.data, bytes.data, whole.len) != 0))
        abort();
    if (whole.len == 0 ? !relaxed
                       : whole.len < 2 || whole.data[whole.len - 2] != '\r' ||
                             whole.data[whole.len - 1] != '\n')
        abort();
    for (size_t i = 1; relaxed && i < whole.len; i++) {
        int wsp = whole.data[i - 1] == ' ' || whole.data[i - 1] == '\t';

        if (whole.data[i - 1] == '\t' ||
            (wsp && (whole.data[i] == ' ' ||
                     (whole.data[i] == '\r' && i + 2 < whole.len &&
                      whole.data[i + 1] == '\n'))))
            abort();
    }
    util_buf_free(&whole);
    util_buf_free(&bytes);
}

/* Does p[0..n) hold s (len bytes)? */
static int holds(const char *p, size_t n, const char *s, size_t len)
{
    for (size_t i = 0; i + len <= n; i++)
        if (memcmp(p + i, s, len) == 0)
            return 1;
    return 0;
}

static void header_check(const char *p, size_t n, int whole)
{
    struct dkim_header h;
    struct util_buf c = UTIL_BUF_INIT;
    char addr[256];

    if (dkim_header_split(p, n, whole, &h) < 0)
        return;
    for (size_t i = 0; i < h.n; i++) {
        if (h.f[i].p < p || h.f[i].p + h.f[i].len > p + n ||
            (i > 0 && h.f[i].p < h.f[i - 1].p + h.f[i - 1].len) ||
            h.f[i].name_len > h.f[i].len)
            abort();
        util_buf_reset(&c);
        dkim_canon_header(&c, h.f[i].p, h.f[i].len, 1);
        if (memchr(h.f[i].p, ':', h.f[i].len) != NULL) {
            const char *v = memchr(c.data, ':', c.len);

            if (c.len < 2 || memcmp(c.data + c.len - 2, "\r\n", 2) != 0 ||
                holds(c.data, c.len - 2, "\n", 1) || v == NULL ||
                holds(v, c.len - (size_t)(v - c.data), "  ", 2) ||
                holds(v, c.len - (size_t)(v - c.data), "\t", 1))
                abort();
        }
        dkim_canon_header(&c, h.f[i].p, h.f[i].len, 0);
    }
    if (h.body > n)
        abort();
    if (dkim_header_from(&h, addr, sizeof(addr)) == 0) {
        const char *at = strchr(addr, '@');

        if (at == NULL || strchr(at + 1, '@') != NULL)
            abort();
        for (const char *a = addr; *a; a++)
            if (*a >= 'A' && *a <= 'Z')
                abort();
    }
    body_check(p + h.body, n - h.body, 1);
    body_check(p + h.body, n - h.body, 0);
    dkim_header_free(&h);
    util_buf_free(&c);
}

static void sign_check(const char *p, size_t n)
{
    struct util_buf field = UTIL_BUF_INIT;
    char why[512];
    int rc = dkim_sign_message(keys, p, n, 1, &field, why, sizeof(why));

    if (rc < 0 || (rc == 1 && (field.len < 20 ||
                               memcmp(field.data, "DKIM-Signature: v=1;", 20))))
        abort();
    util_buf_free(&field);
}

static void table_check(const uint8_t *data, size_t size)
{
    char st[300], kt[300], why[512];
    struct dkim_keys *k;

    write_file("FuzzTable", data, size);
    snprintf(st, sizeof(st), "%s%s/FuzzTable",
             size > 0 && data[0] & 1 ? "refile:" : "", dir);
    snprintf(kt, sizeof(kt), "%s/KeyTable", dir);
    why[0] = 0;
    k = dkim_keys_load(st, kt, "simple/relaxed", why, sizeof(why));
    if (k == NULL && strstr(why, "FuzzTable") == NULL)
        abort();
    if (k != NULL)
        (void)dkim_keys_find(k, "a@x.test");
    dkim_keys_free(k);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (keys == NULL)
        init();
    memcpy(text, data, size);
    text[size] = 0;
    header_check(text, size, 0);
    header_check(text, size, 1);
    sign_check(text, size);
    table_check(data, size);
    (void)dkim_pattern_match(text, text + size / 2);
    free(text);
    return 0;
}
