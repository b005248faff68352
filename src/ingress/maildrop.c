/*
 * NAME
 *	maildrop 3 - the maildrop file format: one message as a record
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	maildrop_format(const struct spool_msg *m, char **out,
 *			size_t *len, char *why, size_t whylen)
 *	int	maildrop_parse(char *buf, size_t len, uid_t owner,
 *			struct spool_msg **m, char *why, size_t whylen)
 *
 *	#include "ingress/ingress_private.h"
 *
 *	int	maildrop_envelope_format(const struct spool_msg *m,
 *			struct util_buf *b, char *why, size_t whylen)
 * DESCRIPTION
 *	A file in the maildrop directory holds one message as a record,
 *	in the format below; this file is its codec. drop.c writes such a
 *	file into the maildrop (maildrop_write()); pickup.c makes the
 *	directory, reads its files and imports them into the spool.
 *
 *	maildrop_format() and maildrop_parse() are the same record in
 *	memory, for the daemon's submission socket (local.c), which speaks
 *	the file format so that both ways in are read by one strict
 *	parser. maildrop_format() returns in *out a new buffer (free() it)
 *	of *len bytes holding exactly what maildrop_write() would write.
 *	maildrop_parse() reads one from buf (len bytes, malloc'd; it is
 *	taken over, and becomes the body or is freed) whose uid must be
 *	owner; it fails as maildrop_read() does, with EBADMSG.
 *
 *	maildrop_envelope_format() appends to b everything before the body
 *	(maildrop_write() writes the body from the message itself, without
 *	a copy).
 *
 * FILE FORMAT
 *	A maildrop file is text lines ending in LF, then the body, then a
 *	last line. In this order:
 *
 *	    sluice-maildrop 1		magic and format version
 *	    uid UID			submitting uid (decimal)
 *	    arrival USEC		microseconds since the epoch
 *	    sender VALUE		empty VALUE: the null sender
 *	    envid VALUE			optional: DSN ENVID
 *	    ret full|hdrs		optional: DSN RET
 *	    smtputf8 yes		optional: the sender asked for
 *					SMTPUTF8 (RFC 6531)
 *	    rcpts N			number of recipients, at least 1
 *	    rcpt VALUE			N times this group of lines:
 *	    orig VALUE			  optional: original recipient
 *	    orcpt VALUE			  optional: DSN ORCPT
 *	    notify WORDS		  optional: "never", or some of
 *					  success,failure,delay in this order
 *	    body LENGTH			body length in bytes
 *	    BODY			exactly LENGTH bytes, any bytes
 *	    end				and nothing after it
 *
 *	Keys and values are separated by one space. A VALUE holds the
 *	bytes 0x21-0x7e other than "%" as themselves and every other byte
 *	as %XX (two upper-case hex digits); %00 is not allowed. Numbers
 *	are decimal without sign or leading zeros. Anything else (an
 *	unknown or misplaced key, a bad value, fewer or more recipients
 *	than announced, a body shorter or longer than its length, bytes
 *	after "end") makes the file malformed: the reader parses strictly
 *	so that a damaged file is set aside rather than half delivered.
 *	A later version changes the number on the first line.
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC     "sluice-maildrop"
#define VERSION   "1"
#define QUOTE_MAX 40 /* bytes of a bad line quoted in a reason */

/* -------------------------------------------------------------- write */

static void put_value(struct util_buf *b, const char *key, const char *v)
{
    unsigned char ch;

    util_buf_printf(b, "%s ", key);
    for (; *v != 0; v++) {
        ch = (unsigned char)*v;
        if (ch > ' ' && ch < 0x7f && ch != '%')
            util_buf_add(b, v, 1);
        else
            util_buf_printf(b, "%%%02X", ch);
    }
    util_buf_add(b, "\n", 1);
}

/* Everything before the body. Returns -1 (why set) for a bad message. */
int maildrop_envelope_format(const struct spool_msg *m, struct util_buf *b,
                             char *why, size_t whylen)
{
    char words[64];
    uint32_t i;

    if (m->sender == NULL) {
        snprintf(why, whylen, "message has no sender");
        return -1;
    }
    if (m->nrcpt == 0) {
        snprintf(why, whylen, "message has no recipients");
        return -1;
    }
    if (m->body == NULL && m->size > 0) {
        snprintf(why, whylen, "message has no body");
        return -1;
    }
    util_buf_printf(b, "%s %s\nuid %lu\narrival %" PRId64 "\n", MAGIC, VERSION,
                    (unsigned long)geteuid(),
                    m->arrival > 0 ? m->arrival : util_clock_wall_us());
    put_value(b, "sender", m->sender);
    if (m->envid != NULL)
        put_value(b, "envid", m->envid);
    if (m->ret == SPOOL_RET_FULL || m->ret == SPOOL_RET_HDRS)
        util_buf_printf(b, "ret %s\n",
                        m->ret == SPOOL_RET_FULL ? "full" : "hdrs");
    if (m->smtputf8)
        util_buf_printf(b, "smtputf8 yes\n");
    util_buf_printf(b, "rcpts %" PRIu32 "\n", m->nrcpt);
    for (i = 0; i < m->nrcpt; i++) {
        if (m->rcpt[i].address == NULL || *m->rcpt[i].address == 0) {
            snprintf(why, whylen, "recipient %" PRIu32 " has no address",
                     i + 1);
            return -1;
        }
        put_value(b, "rcpt", m->rcpt[i].address);
        if (m->rcpt[i].orig != NULL)
            put_value(b, "orig", m->rcpt[i].orig);
        if (m->rcpt[i].orcpt != NULL)
            put_value(b, "orcpt", m->rcpt[i].orcpt);
        if (m->rcpt[i].notify != 0) {
            ingress_notify_format(m->rcpt[i].notify, words, sizeof(words));
            util_buf_printf(b, "notify %s\n", words);
        }
    }
    util_buf_printf(b, "body %" PRIu64 "\n", m->size);
    return 0;
}
int maildrop_format(const struct spool_msg *m, char **out, size_t *len,
                    char *why, size_t whylen)
{
    struct util_buf b = UTIL_BUF_INIT;

    *out = NULL;
    *len = 0;
    if (maildrop_envelope_format(m, &b, why, whylen) < 0) {
        util_buf_free(&b);
        return -1;
    }
    util_buf_add(&b, m->body, m->size);
    util_buf_add(&b, MAILDROP_END_LINE, strlen(MAILDROP_END_LINE));
    *out = b.data;
    *len = b.len;
    return 0;
}

/* --------------------------------------------------------------- read */

struct reader {
    char *buf;
    size_t len;
    size_t pos;      /* start of the next line */
    int line;        /* number of the next line */
    const char *key; /* the line just read: key, value */
    size_t klen;
    const char *val; /* NULL: no space in the line */
    size_t vlen;
    char *why;
    size_t whylen;
};

/* Quote text for a reason, as conf does: "...", \xHH, cut with "...". */
static void quote(char *out, size_t outlen, const char *s, size_t n)
{
    size_t used = 0;
    size_t i;
    unsigned char ch;

    used += (size_t)snprintf(out, outlen, "\"");
    for (i = 0; i < n && i < QUOTE_MAX && used + 8 < outlen; i++) {
        ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            used += (size_t)snprintf(out + used, outlen - used, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            used += (size_t)snprintf(out + used, outlen - used, "\\x%02x", ch);
        else
            out[used++] = (char)ch;
    }
    snprintf(out + used, outlen - used, "%s\"", i < n ? "..." : "");
}

static int bad(struct reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static int bad(struct reader *r, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(r->why, r->whylen, fmt, ap);
    va_end(ap);
    errno = EBADMSG;
    return -1;
}

/* Read the next line into r->key, r->val. */
static int next_line(struct reader *r)
{
    const char *s = r->buf + r->pos;
    const char *nl = memchr(s, '\n', r->len - r->pos);
    const char *sp;

    if (nl == NULL)
        return bad(r, "truncated at line %d", r->line);
    r->key = s;
    sp = memchr(s, ' ', (size_t)(nl - s));
    r->klen = (size_t)((sp ? sp : nl) - s);
    r->val = sp ? sp + 1 : NULL;
    r->vlen = sp ? (size_t)(nl - sp - 1) : 0;
    r->pos = (size_t)(nl - r->buf) + 1;
    r->line++;
    return 0;
}

static int key_is(const struct reader *r, const char *key)
{
    return r->klen == strlen(key) && memcmp(r->key, key, r->klen) == 0;
}

/* Read a line that must have this key and a value. */
static int expect(struct reader *r, const char *key)
{
    char found[4 * QUOTE_MAX + 8];

    if (next_line(r) < 0)
        return -1;
    if (key_is(r, key) && r->val != NULL)
        return 0;
    quote(found, sizeof(found), r->key, r->klen);
    if (key_is(r, key))
        return bad(r, "line %d: \"%s\" without a value", r->line - 1, key);
    return bad(r, "line %d: expected \"%s\", found %s", r->line - 1, key,
               found);
}

/* Is the next line's key this one? (Does not consume it.) */
static int peek(const struct reader *r, const char *key)
{
    size_t n = strlen(key);

    return r->len - r->pos > n && memcmp(r->buf + r->pos, key, n) == 0 &&
           r->buf[r->pos + n] == ' ';
}

static int bad_value(struct reader *r, const char *key)
{
    char q[4 * QUOTE_MAX + 8];

    quote(q, sizeof(q), r->val, r->vlen);
    return bad(r, "line %d: bad %s %s", r->line - 1, key, q);
}

/* The current line's value as a number up to max. */
static int number(struct reader *r, const char *key, uint64_t max,
                  uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (r->vlen == 0 || (r->val[0] == '0' && r->vlen > 1))
        return bad_value(r, key);
    for (i = 0; i < r->vlen; i++) {
        if (r->val[i] < '0' || r->val[i] > '9' ||
            v > (max - (uint64_t)(r->val[i] - '0')) / 10)
            return bad_value(r, key);
        v = 10 * v + (uint64_t)(r->val[i] - '0');
    }
    *out = v;
    return 0;
}

static int hex(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* The current line's value, decoded into a new string. */
static int value(struct reader *r, const char *key, int may_be_empty,
                 char **out)
{
    char *s = xmalloc(r->vlen + 1);
    size_t n = 0;
    size_t i;
    int hi;
    int lo;

    for (i = 0; i < r->vlen; i++) {
        unsigned char ch = (unsigned char)r->val[i];

        if (ch == '%' && r->vlen - i >= 3 && (hi = hex(r->val[i + 1])) >= 0 &&
            (lo = hex(r->val[i + 2])) >= 0 && (hi | lo) != 0) {
            s[n++] = (char)(hi * 16 + lo);
            i += 2;
        } else if (ch > ' ' && ch < 0x7f && ch != '%') {
            s[n++] = (char)ch;
        } else {
            free(s);
            return bad_value(r, key);
        }
    }
    s[n] = 0;
    if (n == 0 && !may_be_empty) {
        free(s);
        return bad_value(r, key);
    }
    *out = s;
    return 0;
}

/* An optional "key VALUE" line into *out. */
static int optional_value(struct reader *r, const char *key, char **out)
{
    if (!peek(r, key))
        return 0;
    if (expect(r, key) < 0)
        return -1;
    return value(r, key, 0, out);
}

static int read_magic(struct reader *r)
{
    size_t mlen = strlen(MAGIC);
    char q[4 * QUOTE_MAX + 8];
    const char *nl;

    if (r->len == 0)
        return bad(r, "empty file");
    nl = memchr(r->buf, '\n', r->len);
    if (r->len <= mlen || memcmp(r->buf, MAGIC " ", mlen + 1) != 0) {
        quote(q, sizeof(q), r->buf, nl ? (size_t)(nl - r->buf) : r->len);
        return bad(r, "bad magic %s: not a sluice maildrop file", q);
    }
    if (next_line(r) < 0)
        return -1;
    if (r->vlen != strlen(VERSION) || memcmp(r->val, VERSION, r->vlen) != 0) {
        quote(q, sizeof(q), r->val, r->vlen);
        return bad(r, "unsupported version %s", q);
    }
    return 0;
}

static int read_smtputf8(struct reader *r, struct spool_msg *m)
{
    if (!peek(r, "smtputf8"))
        return 0;
    if (expect(r, "smtputf8") < 0)
        return -1;
    if (r->vlen != 3 || memcmp(r->val, "yes", 3) != 0)
        return bad_value(r, "smtputf8");
    m->smtputf8 = 1;
    return 0;
}

static int read_ret(struct reader *r, struct spool_msg *m)
{
    if (!peek(r, "ret"))
        return 0;
    if (expect(r, "ret") < 0)
        return -1;
    if (r->vlen == 4 && memcmp(r->val, "full", 4) == 0)
        m->ret = SPOOL_RET_FULL;
    else if (r->vlen == 4 && memcmp(r->val, "hdrs", 4) == 0)
        m->ret = SPOOL_RET_HDRS;
    else
        return bad_value(r, "ret");
    return 0;
}

/* The canonical NOTIFY words, and nothing else. */
static int read_notify(struct reader *r, unsigned *bits)
{
    char words[64];
    char canon[64];

    *bits = 0;
    if (!peek(r, "notify"))
        return 0;
    if (expect(r, "notify") < 0)
        return -1;
    if (r->vlen >= sizeof(words))
        return bad_value(r, "notify");
    memcpy(words, r->val, r->vlen);
    words[r->vlen] = 0;
    if (submit_parse_notify(words, bits) < 0)
        return bad_value(r, "notify");
    ingress_notify_format(*bits, canon, sizeof(canon));
    if (strcmp(canon, words) != 0)
        return bad_value(r, "notify");
    return 0;
}

static int read_rcpt(struct reader *r, struct spool_msg *m, uint64_t i,
                     uint64_t n)
{
    char *addr = NULL;
    char *orig = NULL;
    char *orcpt = NULL;
    unsigned notify = 0;
    int status = -1;

    char q[4 * QUOTE_MAX + 8];

    if (next_line(r) < 0)
        return -1;
    if (!key_is(r, "rcpt") || r->val == NULL) {
        quote(q, sizeof(q), r->key, r->klen);
        return bad(r,
                   "line %d: expected \"rcpt\" (recipient %" PRIu64
                   " of %" PRIu64 "), found %s",
                   r->line - 1, i + 1, n, q);
    }
    if (value(r, "rcpt", 0, &addr) == 0 &&
        optional_value(r, "orig", &orig) == 0 &&
        optional_value(r, "orcpt", &orcpt) == 0 &&
        read_notify(r, &notify) == 0) {
        if (spool_msg_add_rcpt(m, addr, orig, notify, orcpt) < 0)
            ingress_panic("spool_msg_add_rcpt failed");
        status = 0;
    }
    free(addr);
    free(orig);
    free(orcpt);
    return status;
}

/* Everything up to the "body" line; leaves *body_len. */
static int read_envelope(struct reader *r, struct spool_msg *m, uid_t owner,
                         uint64_t *body_len)
{
    uint64_t v;
    uint64_t nrcpt;
    uint64_t i;

    if (read_magic(r) < 0 || expect(r, "uid") < 0 ||
        number(r, "uid", UINT32_MAX, &v) < 0)
        return -1;
    if (v != (uint64_t)owner)
        return bad(r,
                   "uid %" PRIu64 " in the file, but the file belongs "
                   "to uid %lu",
                   v, (unsigned long)owner);
    if (expect(r, "arrival") < 0 || number(r, "arrival", INT64_MAX, &v) < 0)
        return -1;
    m->arrival = (int64_t)v;
    if (expect(r, "sender") < 0 || value(r, "sender", 1, &m->sender) < 0 ||
        optional_value(r, "envid", &m->envid) < 0 || read_ret(r, m) < 0 ||
        read_smtputf8(r, m) < 0 || expect(r, "rcpts") < 0 ||
        number(r, "rcpts", UINT32_MAX, &nrcpt) < 0)
        return -1;
    if (nrcpt == 0)
        return bad(r, "line %d: no recipients", r->line - 1);
    for (i = 0; i < nrcpt; i++)
        if (read_rcpt(r, m, i, nrcpt) < 0)
            return -1;
    if (peek(r, "rcpt"))
        return bad(r, "line %d: more recipients than the %" PRIu64 " announced",
                   r->line, nrcpt);
    if (expect(r, "body") < 0 || number(r, "body", UINT64_MAX, body_len) < 0)
        return -1;
    return 0;
}

/* The body and the "end" line; the body moves to the start of r->buf. */
static int read_body(struct reader *r, uint64_t body_len)
{
    size_t left = r->len - r->pos;
    size_t elen = strlen(MAILDROP_END_LINE);

    if (body_len > left)
        return bad(r,
                   "truncated body: %" PRIu64 " bytes announced, %zu "
                   "present",
                   body_len, left);
    left -= (size_t)body_len;
    if (left < elen &&
        memcmp(r->buf + r->pos + body_len, MAILDROP_END_LINE, left) == 0)
        return bad(r, "truncated after the body: no \"end\" line");
    if (left < elen ||
        memcmp(r->buf + r->pos + body_len, MAILDROP_END_LINE, elen) != 0)
        return bad(r,
                   "body length mismatch: no \"end\" line after %" PRIu64
                   " bytes of body",
                   body_len);
    if (left > elen)
        return bad(r, "trailing junk: %zu bytes after the \"end\" line",
                   left - elen);
    memmove(r->buf, r->buf + r->pos, (size_t)body_len);
    r->buf[body_len] = 0;
    r->len = (size_t)body_len;
    return 0;
}

int maildrop_parse(char *buf, size_t len, uid_t owner, struct spool_msg **m,
                   char *why, size_t whylen)
{
    struct reader r;
    uint64_t body_len;

    memset(&r, 0, sizeof(r));
    r.buf = buf;
    r.len = len;
    r.line = 1;
    r.why = why;
    r.whylen = whylen;
    *m = spool_msg_new();
    if (read_envelope(&r, *m, owner, &body_len) < 0 ||
        read_body(&r, body_len) < 0) {
        spool_msg_free(*m);
        *m = NULL;
        free(buf);
        errno = EBADMSG;
        return -1;
    }
    (*m)->body = xrealloc(r.buf, r.len + 1);
    (*m)->size = r.len;
    return 0;
}
