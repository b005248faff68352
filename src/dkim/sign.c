/*
 * NAME
 *	sign 3 - a DKIM-Signature for a message (RFC 6376, RFC 8463)
 * SYNOPSIS
 *	#include "dkim/dkim.h"
 *
 *	struct dkim_sign *dkim_sign_begin(const struct dkim_keys *k,
 *			const char *head, size_t len, int whole,
 *			char *why, size_t whylen)
 *	void	dkim_sign_body(struct dkim_sign *s, const char *p, size_t n)
 *	int	dkim_sign_end(struct dkim_sign *s, time_t now,
 *			struct util_buf *field, char *why, size_t whylen)
 *	size_t	dkim_sign_count(const struct dkim_sign *s)
 *	const char *dkim_sign_domain(const struct dkim_sign *s, size_t i)
 *	const char *dkim_sign_selector(const struct dkim_sign *s, size_t i)
 *	void	dkim_sign_free(struct dkim_sign *s)
 *	int	dkim_sign_message(const struct dkim_keys *k, const char *msg,
 *			size_t len, time_t now, struct util_buf *field,
 *			char *note, size_t notelen)
 * DESCRIPTION
 *	dkim_sign_begin() finds the header section in head, the From:
 *	address and its keys (dkim_keys_find_all(): one, or with
 *	dkim_multiple_signatures up to DKIM_SIGNATURES_MAX), chooses the fields to sign
 *	and canonicalizes them, and starts the body hash with the body
 *	bytes that head holds after the empty line; the caller gives the
 *	rest of the message, whatever follows those len bytes, to
 *	dkim_sign_body(), in pieces of any size (a staged body is read
 *	back a piece at a time: memory does not grow with the message).
 *
 *	The fields signed (h=) are RFC 6376 5.4.1's list, those the
 *	message has, in the order it has them, each as often as it occurs,
 *	and "From" once more at the end (names longer than NAME_SIGNED_MAX,
 *	or with characters other than letters, digits and "-", are left
 *	out): a verifier takes the instances of
 *	a name from the bottom up (5.4.2), and the extra one stands for a
 *	From: field that is not there, so one added on the way breaks the
 *	signature (oversigning, 8.15).
 *
 *	dkim_sign_end() ends the body hash (bh=), signs (rsa-sha256:
 *	EVP_DigestSign with SHA-256 over the header data; ed25519-sha256:
 *	PureEdDSA over the SHA-256 hash of the header data, RFC 8463 3)
 *	and appends the field, for instance
 *
 *	    DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed;
 *		d=example.com; s=sel; t=1700000000;
 *		h=From:To:Subject:Date:Message-ID:From;
 *		bh=...;
 *		b=...
 *
 *	folded so that no line is longer than 78 characters, each line
 *	after the first starting with a tab, ending in CRLF; it goes at
 *	the top of the message. The header data signed is the chosen
 *	fields, canonicalized, then this field with b= empty and without
 *	its final CRLF (3.7). With several keys, one field per key, in the
 *	order the SigningTable gave them, each signed on its own (none
 *	covers another): RSA beside Ed25519 is what RFC 8463 expects while
 *	verifiers learn Ed25519. It returns 0, or -1 with the reason
 *	(OpenSSL refused to sign; then no field is appended).
 *	dkim_sign_count() is the number of fields, dkim_sign_domain() and
 *	dkim_sign_selector() the d= and s= of field i, for the log.
 *	dkim_sign_free() frees s, ended or not.
 */

#include "dkim/dkim_impl.h"

#include <openssl/err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE_MAX_COLS   78 /* RFC 5322 2.1.1's SHOULD */
#define B64_COLS        70 /* of b= per continuation line: 78 with its tab */
#define ADDR_MAX        512
#define NAME_SIGNED_MAX 128 /* longest field name signed */

struct dkim_sign {
    const struct dkim_key *keys[DKIM_SIGNATURES_MAX];
    size_t nkeys;
    int relaxed_header;
    int relaxed_body;
    struct util_buf data;  /* the canonical signed fields */
    struct util_buf names; /* h= */
    struct dkim_body body;
    EVP_MD_CTX *bh;
};

/* RFC 6376 5.4.1's list; Resent-* and List-* are prefixes. */
static const char *const signed_names[] = {
    "From",       "Reply-To",     "Subject",      "Date",
    "To",         "Cc",           "In-Reply-To",  "References",
    "Message-ID", "MIME-Version", "Content-Type", "Content-Transfer-Encoding"};
static const char *const signed_prefixes[] = {"Resent-", "List-"};

static int name_signed(const struct dkim_field *f)
{
    size_t i, n;

    for (i = 0; i < sizeof(signed_names) / sizeof(signed_names[0]); i++)
        if (f->name_len == strlen(signed_names[i]) &&
            strncasecmp(f->p, signed_names[i], f->name_len) == 0)
            return 1;
    for (i = 0; i < sizeof(signed_prefixes) / sizeof(signed_prefixes[0]); i++) {
        n = strlen(signed_prefixes[i]);
        if (f->name_len > n && strncasecmp(f->p, signed_prefixes[i], n) == 0)
            return 1;
    }
    return 0;
}

/* A name of h=: letters, digits and "-" alone (RFC 5322's ftext is more,
 * but a name with ":" or ";" would not survive in h=), and not longer
 * than any real one: a "List-xxx..." of a thousand characters is not
 * signed rather than folded. */
static int name_plain(const struct dkim_field *f)
{
    if (f->name_len > NAME_SIGNED_MAX)
        return 0;
    for (size_t i = 0; i < f->name_len; i++)
        if (!(f->p[i] == '-' || (f->p[i] >= '0' && f->p[i] <= '9') ||
              ((f->p[i] | 0x20) >= 'a' && (f->p[i] | 0x20) <= 'z')))
            return 0;
    return f->name_len > 0;
}

/* The bottom-most field named name (len bytes) not used yet, or -1. */
static long pick(const struct dkim_header *h, char *used, const char *name,
                 size_t len)
{
    for (size_t i = h->n; i-- > 0;)
        if (!used[i] && h->f[i].name_len == len &&
            strncasecmp(h->f[i].p, name, len) == 0) {
            used[i] = 1;
            return (long)i;
        }
    return -1;
}

/* h= and the canonical fields in the order a verifier takes them. */
static void choose_fields(struct dkim_sign *s, const struct dkim_header *h)
{
    char *used = xcalloc(h->n + 1, 1);
    const char *name;
    size_t len;
    long at;

    for (size_t i = 0; i < h->n; i++)
        if (name_signed(&h->f[i]) && name_plain(&h->f[i])) {
            util_buf_add(&s->names, h->f[i].p, h->f[i].name_len);
            util_buf_add(&s->names, ":", 1);
        }
    util_buf_puts(&s->names, "From");
    for (name = s->names.data; *name; name += len + (name[len] == ':')) {
        len = strcspn(name, ":");
        if ((at = pick(h, used, name, len)) >= 0)
            dkim_canon_header(&s->data, h->f[at].p, h->f[at].len,
                              s->relaxed_header);
    }
    free(used);
}

static void body_out(void *ctx, const char *p, size_t n)
{
    struct dkim_sign *s = ctx;

    if (EVP_DigestUpdate(s->bh, p, n) != 1)
        util_panic("dkim: SHA-256 update failed");
}

struct dkim_sign *dkim_sign_begin(const struct dkim_keys *k, const char *head,
                                  size_t len, int whole, char *why,
                                  size_t whylen)
{
    struct dkim_header h;
    struct dkim_sign *s;
    char addr[ADDR_MAX];
    const struct dkim_key *keys[DKIM_SIGNATURES_MAX];
    size_t nkeys;

    if (dkim_header_split(head, len, whole, &h) < 0) {
        snprintf(why, whylen, "header section longer than %zu bytes", len);
        return NULL;
    }
    if (dkim_header_from(&h, addr, sizeof(addr)) < 0) {
        snprintf(why, whylen, "no single From: address to choose a key by");
        dkim_header_free(&h);
        return NULL;
    }
    if ((nkeys = dkim_keys_find_all(k, addr, keys, DKIM_SIGNATURES_MAX)) == 0) {
        snprintf(why, whylen, "no signing table match for '%s'", addr);
        dkim_header_free(&h);
        return NULL;
    }
    s = xcalloc(1, sizeof(*s));
    memcpy(s->keys, keys, nkeys * sizeof(keys[0]));
    s->nkeys = nkeys;
    s->relaxed_header = k->relaxed_header;
    s->relaxed_body = k->relaxed_body;
    choose_fields(s, &h);
    s->bh = EVP_MD_CTX_new();
    if (s->bh == NULL || EVP_DigestInit_ex(s->bh, EVP_sha256(), NULL) != 1)
        util_panic("dkim: cannot start SHA-256");
    dkim_body_init(&s->body, s->relaxed_body, body_out, s);
    dkim_body_feed(&s->body, head + h.body, len - h.body);
    dkim_header_free(&h);
    return s;
}

void dkim_sign_body(struct dkim_sign *s, const char *p, size_t n)
{
    dkim_body_feed(&s->body, p, n);
}

/* ------------------------------------------------------------ the field */

struct folder {
    struct util_buf *b;
    size_t col;
};

/* Append text, on a new line first when it would not fit. */
static void fold_add(struct folder *f, const char *text, size_t n, int space)
{
    if (f->col + space + n > LINE_MAX_COLS) {
        util_buf_add(f->b, "\r\n\t", 3);
        f->col = 8;
    } else if (space) {
        util_buf_add(f->b, " ", 1);
        f->col++;
    }
    util_buf_add(f->b, text, n);
    f->col += n;
}

static void fold_tag(struct folder *f, const char *fmt, const char *value)
{
    char text[600];
    int n = snprintf(text, sizeof(text), fmt, value);

    fold_add(f, text, (size_t)n, 1);
}

/* h=, folded after a colon when it is long. */
static void fold_names(struct folder *f, const char *names)
{
    const char *p = names;
    size_t len;
    int first = 1;

    while (*p) {
        char piece[300];

        len = strcspn(p, ":");
        snprintf(piece, sizeof(piece), "%s%.*s%s", first ? "h=" : "", (int)len,
                 p, p[len] ? ":" : ";");
        fold_add(f, piece, strlen(piece), first);
        first = 0;
        p += len + (p[len] == ':');
    }
}

/* Everything up to "b=", the value the signature goes after. */
static void field_head(const struct dkim_sign *s, const struct dkim_key *key,
                       struct util_buf *b, time_t now, const unsigned char *bh,
                       unsigned bhlen)
{
    struct folder f = {b, 0};
    struct util_buf v = UTIL_BUF_INIT;
    char t[32];

    util_buf_puts(b, "DKIM-Signature: v=1;");
    f.col = b->len;
    fold_tag(&f, "a=%s;",
             key->alg == DKIM_RSA_SHA256 ? "rsa-sha256" : "ed25519-sha256");
    fold_tag(&f, "c=%s;",
             s->relaxed_header
                 ? (s->relaxed_body ? "relaxed/relaxed" : "relaxed/simple")
                 : (s->relaxed_body ? "simple/relaxed" : "simple/simple"));
    fold_tag(&f, "d=%s;", key->domain);
    fold_tag(&f, "s=%s;", key->selector);
    snprintf(t, sizeof(t), "%lld", (long long)now);
    fold_tag(&f, "t=%s;", t);
    fold_names(&f, s->names.data);
    util_base64_encode(&v, bh, bhlen, 0);
    fold_tag(&f, "bh=%s;", v.data);
    util_buf_free(&v);
    fold_add(&f, "b=", 2, 1);
}

/* The signature of data with the key; -1 with the reason. */
static int sign_data(const struct dkim_key *key, const struct util_buf *data,
                     unsigned char **sig, size_t *siglen, char *why,
                     size_t whylen)
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char hash[EVP_MAX_MD_SIZE];
    unsigned hashlen = 0;
    const unsigned char *in = (const unsigned char *)data->data;
    size_t inlen = data->len;
    int ok;

    if (key->alg == DKIM_ED25519_SHA256) { /* RFC 8463 3: sign the hash */
        if (EVP_Digest(data->data, data->len, hash, &hashlen, EVP_sha256(),
                       NULL) != 1)
            util_panic("dkim: SHA-256 failed");
        in = hash;
        inlen = hashlen;
    }
    ok = ctx != NULL &&
         EVP_DigestSignInit(ctx, NULL,
                            key->alg == DKIM_RSA_SHA256 ? EVP_sha256() : NULL,
                            NULL, key->pkey) == 1 &&
         EVP_DigestSign(ctx, NULL, siglen, in, inlen) == 1;
    *sig = ok ? xmalloc(*siglen) : NULL;
    ok = ok && EVP_DigestSign(ctx, *sig, siglen, in, inlen) == 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        snprintf(why, whylen, "signing with %s failed: %s", key->path,
                 ERR_reason_error_string(ERR_peek_last_error())
                     ? ERR_reason_error_string(ERR_peek_last_error())
                     : "unknown error");
        ERR_clear_error();
        free(*sig);
        *sig = NULL;
        return -1;
    }
    return 0;
}

/* b= after the field's head, cut to lines of B64_COLS. */
static void add_b(struct util_buf *field, size_t col, const unsigned char *sig,
                  size_t siglen)
{
    struct util_buf v = UTIL_BUF_INIT;
    size_t at = 0, room = col < LINE_MAX_COLS ? LINE_MAX_COLS - col : 0;

    util_base64_encode(&v, sig, siglen, 0);
    while (at < v.len) {
        size_t n = v.len - at < room ? v.len - at : room;

        util_buf_add(field, v.data + at, n);
        at += n;
        if (at < v.len)
            util_buf_add(field, "\r\n\t", 3);
        room = B64_COLS;
    }
    util_buf_add(field, "\r\n", 2);
    util_buf_free(&v);
}

/* One key's field, appended to field; -1 with the reason. */
static int sign_one(const struct dkim_sign *s, const struct dkim_key *key,
                    time_t now, const unsigned char *bh, unsigned bhlen,
                    struct util_buf *field, char *why, size_t whylen)
{
    struct util_buf head = UTIL_BUF_INIT, data = UTIL_BUF_INIT;
    unsigned char *sig;
    size_t siglen, col, line;
    int rc = -1;

    field_head(s, key, &head, now, bh, bhlen);
    /* the field as signed: canonical, b= empty, no CRLF at its end */
    util_buf_add(&data, s->data.data, s->data.len);
    util_buf_add(&head, "\r\n", 2);
    dkim_canon_header(&data, head.data, head.len, s->relaxed_header);
    data.len -= 2;
    head.len -= 2;
    if (sign_data(key, &data, &sig, &siglen, why, whylen) == 0) {
        for (line = head.len; line > 0 && head.data[line - 1] != '\n'; line--)
            continue;
        col = head.len - line + (line > 0 ? 7 : 0); /* a tab counts 8 */
        util_buf_add(field, head.data, head.len);
        add_b(field, col, sig, siglen);
        free(sig);
        rc = 0;
    }
    util_buf_free(&head);
    util_buf_free(&data);
    return rc;
}

int dkim_sign_end(struct dkim_sign *s, time_t now, struct util_buf *field,
                  char *why, size_t whylen)
{
    unsigned char bh[EVP_MAX_MD_SIZE];
    unsigned bhlen = 0;
    size_t before = field->len;

    dkim_body_finish(&s->body);
    if (EVP_DigestFinal_ex(s->bh, bh, &bhlen) != 1)
        util_panic("dkim: SHA-256 final failed");
    for (size_t i = 0; i < s->nkeys; i++)
        if (sign_one(s, s->keys[i], now, bh, bhlen, field, why, whylen) < 0) {
            field->len = before; /* all or none */
            if (field->data != NULL)
                field->data[before] = 0;
            return -1;
        }
    return 0;
}

size_t dkim_sign_count(const struct dkim_sign *s)
{
    return s->nkeys;
}

const char *dkim_sign_domain(const struct dkim_sign *s, size_t i)
{
    return s->keys[i]->domain;
}

const char *dkim_sign_selector(const struct dkim_sign *s, size_t i)
{
    return s->keys[i]->selector;
}

void dkim_sign_free(struct dkim_sign *s)
{
    if (s == NULL)
        return;
    util_buf_free(&s->data);
    util_buf_free(&s->names);
    EVP_MD_CTX_free(s->bh);
    free(s);
}

int dkim_sign_message(const struct dkim_keys *k, const char *msg, size_t len,
                      time_t now, struct util_buf *field, char *note,
                      size_t notelen)
{
    struct dkim_sign *s = dkim_sign_begin(k, msg, len, 1, note, notelen);
    int rc;

    if (s == NULL)
        return 0;
    rc = dkim_sign_end(s, now, field, note, notelen) < 0 ? -1 : 1;
    dkim_sign_free(s);
    return rc;
}
