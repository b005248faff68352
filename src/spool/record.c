/*
 * NAME
 *	record 3 - spool records and keys: encoding, strict decoding
 * SYNOPSIS
 *	#include "spool/spool_impl.h"
 *
 *	void	spool_envelope_encode(struct util_buf *b,
 *			const struct spool_msg *m)
 *	int	spool_envelope_decode(const void *p, size_t len,
 *			struct spool_msg *m, char *why, size_t whylen)
 *	void	spool_rcpt_encode(struct util_buf *b, const struct spool_rcpt *r)
 *	int	spool_rcpt_decode(const void *p, size_t len,
 *			struct spool_rcpt *r, char *why, size_t whylen)
 *	void	spool_key_id(), spool_key_rcpt(), spool_key_time()
 * DESCRIPTION
 *	The envelope record holds everything about a message but its
 *	recipients and body; a recipient record one recipient. Both are
 *	version 1 tag-length-value strings (spool_impl.h). Decoding checks
 *	every length against the record's end, every number's encoding,
 *	that strings hold no NUL, that enumerations are in range and that
 *	the required fields are there; it fills the structure only from
 *	what it checked, and on failure leaves nothing allocated. Fields
 *	added later are optional, written only when they say something
 *	(ENV_SMTPUTF8, a message that asked for SMTPUTF8): a record
 *	written before them reads as it did, and one written after them
 *	by a version that knows them is read by an older one, which skips
 *	tags it does not know.
 */

#include "spool/spool_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_VERSION 1

enum envelope_tag {
    ENV_SENDER = 1,
    ENV_ENVID,
    ENV_RET,
    ENV_STATE,
    ENV_HELD_FROM,
    ENV_ARRIVAL,
    ENV_CREATED,
    ENV_NEXT_ATTEMPT,
    ENV_ATTEMPTS,
    ENV_SIZE,
    ENV_NRCPT,
    ENV_CORRUPT_REASON,
    ENV_SMTPUTF8, /* only when set: older records lack it */
};

enum rcpt_tag {
    RCPT_ADDRESS = 1,
    RCPT_ORIG,
    RCPT_ORCPT,
    RCPT_NOTIFY,
    RCPT_STATUS,
    RCPT_CODE,
    RCPT_REASON,
    RCPT_NOTIFIED,
    RCPT_TLS,
};

static void buf_leb(struct util_buf *b, uint64_t v)
{
    unsigned char c[10];
    size_t n = 0;

    do {
        c[n] = v & 0x7f;
        v >>= 7;
        if (v)
            c[n] |= 0x80;
        n++;
    } while (v);
    util_buf_add(b, c, n);
}

static void field_bytes(struct util_buf *b, int tag, const void *p, size_t len)
{
    unsigned char t = (unsigned char)tag;

    util_buf_add(b, &t, 1);
    buf_leb(b, len);
    util_buf_add(b, p, len);
}

static void field_str(struct util_buf *b, int tag, const char *s)
{
    if (s)
        field_bytes(b, tag, s, strlen(s));
}

static void field_num(struct util_buf *b, int tag, uint64_t v)
{
    struct util_buf tmp = {0};

    buf_leb(&tmp, v);
    field_bytes(b, tag, tmp.data, tmp.len);
    util_buf_free(&tmp);
}

void spool_envelope_encode(struct util_buf *b, const struct spool_msg *m)
{
    unsigned char version = RECORD_VERSION;

    util_buf_reset(b);
    util_buf_add(b, &version, 1);
    field_str(b, ENV_SENDER, m->sender ? m->sender : "");
    field_str(b, ENV_ENVID, m->envid);
    field_num(b, ENV_RET, m->ret);
    field_num(b, ENV_STATE, m->state);
    field_num(b, ENV_HELD_FROM, m->held_from);
    field_num(b, ENV_ARRIVAL, (uint64_t)m->arrival);
    field_num(b, ENV_CREATED, (uint64_t)m->created);
    field_num(b, ENV_NEXT_ATTEMPT, (uint64_t)m->next_attempt);
    field_num(b, ENV_ATTEMPTS, m->attempts);
    field_num(b, ENV_SIZE, m->size);
    field_num(b, ENV_NRCPT, m->nrcpt);
    field_str(b, ENV_CORRUPT_REASON, m->corrupt_reason);
    if (m->smtputf8)
        field_num(b, ENV_SMTPUTF8, 1);
}

void spool_rcpt_encode(struct util_buf *b, const struct spool_rcpt *r)
{
    unsigned char version = RECORD_VERSION;

    util_buf_reset(b);
    util_buf_add(b, &version, 1);
    field_str(b, RCPT_ADDRESS, r->address);
    field_str(b, RCPT_ORIG, r->orig);
    field_str(b, RCPT_ORCPT, r->orcpt);
    field_num(b, RCPT_NOTIFY, r->notify);
    field_num(b, RCPT_STATUS, r->status);
    field_num(b, RCPT_CODE, (uint64_t)r->code);
    field_str(b, RCPT_REASON, r->reason);
    if (r->notified)
        field_num(b, RCPT_NOTIFIED, r->notified);
    field_str(b, RCPT_TLS, r->tls);
}

/* A reader over one record. */
struct reader {
    const unsigned char *p, *end;
    char *why;
    size_t whylen;
};

static int read_leb(struct reader *r, uint64_t *v, const unsigned char *end)
{
    int shift = 0;

    *v = 0;
    for (;;) {
        if (r->p >= end || shift > 63)
            return -1;
        *v |= (uint64_t)(*r->p & 0x7f) << shift;
        if ((*r->p++ & 0x80) == 0)
            return 0;
        shift += 7;
    }
}

/* The next field: its tag and bytes. 0 at the end, 1 found, -1 bad. */
static int read_field(struct reader *r, int *tag, const unsigned char **data,
                      size_t *len)
{
    uint64_t n;

    if (r->p == r->end)
        return 0;
    *tag = *r->p++;
    if (read_leb(r, &n, r->end) < 0 || n > (uint64_t)(r->end - r->p)) {
        snprintf(r->why, r->whylen, "field %d: length past the end", *tag);
        return -1;
    }
    *data = r->p;
    *len = (size_t)n;
    r->p += n;
    return 1;
}

static int field_to_num(struct reader *r, int tag, const unsigned char *data,
                        size_t len, uint64_t *v)
{
    struct reader sub = {data, data + len, r->why, r->whylen};

    if (read_leb(&sub, v, sub.end) < 0 || sub.p != sub.end) {
        snprintf(r->why, r->whylen, "field %d: bad number", tag);
        return -1;
    }
    return 0;
}

static int field_to_str(struct reader *r, int tag, const unsigned char *data,
                        size_t len, char **out)
{
    if (memchr(data, 0, len) != NULL) {
        snprintf(r->why, r->whylen, "field %d: NUL in a string", tag);
        return -1;
    }
    free(*out);
    *out = xcalloc(1, len + 1);
    memcpy(*out, data, len);
    return 0;
}

static int reader_start(struct reader *r, const void *p, size_t len, char *why,
                        size_t whylen)
{
    r->p = p;
    r->end = r->p + len;
    r->why = why;
    r->whylen = whylen;
    if (len < 1) {
        snprintf(why, whylen, "empty record");
        return -1;
    }
    if (*r->p != RECORD_VERSION) {
        snprintf(why, whylen, "unknown record version %d", *r->p);
        return -1;
    }
    r->p++;
    return 0;
}

void spool_envelope_clear(struct spool_msg *m)
{
    free(m->sender);
    free(m->envid);
    free(m->corrupt_reason);
    m->sender = m->envid = m->corrupt_reason = NULL;
}

int spool_envelope_decode(const void *p, size_t len, struct spool_msg *m,
                          char *why, size_t whylen)
{
    struct reader r;
    const unsigned char *data;
    size_t flen;
    int tag, ret;
    unsigned seen = 0;
    uint64_t v;

    if (reader_start(&r, p, len, why, whylen) < 0)
        return -1;
    while ((ret = read_field(&r, &tag, &data, &flen)) > 0) {
        if (tag == ENV_SENDER || tag == ENV_ENVID ||
            tag == ENV_CORRUPT_REASON) {
            char **dst = tag == ENV_SENDER  ? &m->sender
                         : tag == ENV_ENVID ? &m->envid
                                            : &m->corrupt_reason;

            if (field_to_str(&r, tag, data, flen, dst) < 0)
                goto bad;
        } else if (tag == ENV_SMTPUTF8) {
            if (field_to_num(&r, tag, data, flen, &v) < 0)
                goto bad;
            if (v > 1)
                goto range;
            m->smtputf8 = (int)v;
        } else if (tag >= ENV_RET && tag <= ENV_NRCPT) {
            if (field_to_num(&r, tag, data, flen, &v) < 0)
                goto bad;
            switch (tag) {
            case ENV_RET:
                if (v > SPOOL_RET_HDRS)
                    goto range;
                m->ret = (enum spool_ret)v;
                break;
            case ENV_STATE:
            case ENV_HELD_FROM:
                if (v > SPOOL_CORRUPT)
                    goto range;
                if (tag == ENV_STATE)
                    m->state = (enum spool_state)v;
                else
                    m->held_from = (enum spool_state)v;
                break;
            case ENV_ARRIVAL:
                m->arrival = (int64_t)v;
                break;
            case ENV_CREATED:
                m->created = (int64_t)v;
                break;
            case ENV_NEXT_ATTEMPT:
                m->next_attempt = (int64_t)v;
                break;
            case ENV_ATTEMPTS:
                if (v > UINT32_MAX)
                    goto range;
                m->attempts = (uint32_t)v;
                break;
            case ENV_SIZE:
                m->size = v;
                break;
            case ENV_NRCPT:
                if (v > UINT32_MAX)
                    goto range;
                m->nrcpt = (uint32_t)v;
                break;
            }
        }
        if (tag < 32)
            seen |= 1u << tag;
    }
    if (ret < 0)
        goto bad;
    if ((seen & (1u << ENV_SENDER)) == 0 || (seen & (1u << ENV_STATE)) == 0 ||
        (seen & (1u << ENV_ARRIVAL)) == 0 || (seen & (1u << ENV_NRCPT)) == 0) {
        snprintf(why, whylen,
                 "envelope without sender, state, arrival or "
                 "recipient count");
        goto bad;
    }
    return 0;
range:
    snprintf(why, whylen, "field %d: value %llu out of range", tag,
             (unsigned long long)v);
bad:
    spool_envelope_clear(m);
    return -1;
}

void spool_rcpt_clear(struct spool_rcpt *r)
{
    free(r->address);
    free(r->orig);
    free(r->orcpt);
    free(r->reason);
    free(r->tls);
    memset(r, 0, sizeof(*r));
}

int spool_rcpt_decode(const void *p, size_t len, struct spool_rcpt *rc,
                      char *why, size_t whylen)
{
    struct reader r;
    const unsigned char *data;
    size_t flen;
    int tag, ret;
    uint64_t v;

    memset(rc, 0, sizeof(*rc));
    if (reader_start(&r, p, len, why, whylen) < 0)
        return -1;
    while ((ret = read_field(&r, &tag, &data, &flen)) > 0) {
        switch (tag) {
        case RCPT_ADDRESS:
        case RCPT_ORIG:
        case RCPT_ORCPT:
        case RCPT_REASON:
        case RCPT_TLS:
            if (field_to_str(&r, tag, data, flen,
                             tag == RCPT_ADDRESS  ? &rc->address
                             : tag == RCPT_ORIG   ? &rc->orig
                             : tag == RCPT_ORCPT  ? &rc->orcpt
                             : tag == RCPT_REASON ? &rc->reason
                                                  : &rc->tls) < 0)
                goto bad;
            break;
        case RCPT_NOTIFY:
        case RCPT_STATUS:
        case RCPT_CODE:
        case RCPT_NOTIFIED:
            if (field_to_num(&r, tag, data, flen, &v) < 0)
                goto bad;
            if ((tag == RCPT_NOTIFY && v > 15) ||
                (tag == RCPT_NOTIFIED && v > 15) ||
                (tag == RCPT_STATUS && v > SPOOL_RCPT_DEFERRED) ||
                (tag == RCPT_CODE && v > 999)) {
                snprintf(why, whylen, "field %d: value %llu out of range", tag,
                         (unsigned long long)v);
                goto bad;
            }
            if (tag == RCPT_NOTIFY)
                rc->notify = (unsigned)v;
            else if (tag == RCPT_STATUS)
                rc->status = (enum spool_rcpt_status)v;
            else if (tag == RCPT_NOTIFIED)
                rc->notified = (unsigned)v;
            else
                rc->code = (int)v;
            break;
        default:
            break;
        }
    }
    if (ret < 0)
        goto bad;
    if (rc->address == NULL) {
        snprintf(why, whylen, "recipient without address");
        goto bad;
    }
    return 0;
bad:
    spool_rcpt_clear(rc);
    return -1;
}

void spool_key_id(unsigned char key[SPOOL_KEY_ID], const char *id)
{
    size_t len = strlen(id);

    memset(key, 0, SPOOL_KEY_ID);
    memcpy(key, id, len > SPOOL_KEY_ID ? SPOOL_KEY_ID : len);
}

void spool_key_rcpt(unsigned char key[SPOOL_KEY_RCPT], const char *id,
                    uint32_t index)
{
    spool_key_id(key, id);
    key[SPOOL_KEY_ID] = (unsigned char)(index >> 24);
    key[SPOOL_KEY_ID + 1] = (unsigned char)(index >> 16);
    key[SPOOL_KEY_ID + 2] = (unsigned char)(index >> 8);
    key[SPOOL_KEY_ID + 3] = (unsigned char)index;
}

void spool_key_time(unsigned char key[SPOOL_KEY_TIME], int64_t when,
                    const char *id)
{
    uint64_t v = (uint64_t)when;

    for (int i = 7; i >= 0; i--, v >>= 8)
        key[i] = (unsigned char)v;
    spool_key_id(key + 8, id);
}
