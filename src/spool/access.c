/*
 * NAME
 *	access 3 - reading, listing, changing and removing stored messages
 * SYNOPSIS
 *	#include "spool/spool.h"
 *
 *	int	spool_get(struct spool *sp, const char *id, struct spool_msg **m,
 *			int what, char *why, size_t whylen)
 *	int	spool_rcpts(struct spool *sp, const char *id, uint32_t from,
 *			uint32_t max, struct spool_rcpt **out, uint32_t *count,
 *			char *why, size_t whylen)
 *	int	spool_list(struct spool *sp, enum spool_index index,
 *			spool_list_fn *fn, void *ctx, char *why, size_t whylen)
 *	long	spool_count(struct spool *sp, enum spool_index index)
 *	int	spool_update(struct spool *sp, const char *id,
 *			const struct spool_change *ch, char *why, size_t whylen)
 *	int	spool_delete(struct spool *sp, const char *id, char *why,
 *			size_t whylen)
 *	int	spool_recover(struct spool *sp, struct spool_recovery *rec,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	Readers use read transactions: they see a consistent spool and
 *	never block the committer. Changes are write transactions of their
 *	own (one per call), serialized by LMDB with the committer and with
 *	other processes.
 *
 *	The index entries follow the state: an incoming message has an
 *	entry keyed by its arrival time, a deferred one an entry keyed by
 *	its next attempt time; other states have none (they are found by
 *	listing all messages). Going on hold remembers the state to go back
 *	to (held_from).
 *
 *	spool_get() and spool_rcpts() report a record that does not decode
 *	as an error ("corrupt record: ..."), and leave it as it is:
 *	spool_recover(), run by the daemon at start-up, moves such a
 *	message to the corrupt state, keeping its raw record.
 */

#include "spool/spool_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int msg_read(struct spool *sp, MDB_txn *txn, const char *id,
                    struct spool_msg *m, char *why, size_t whylen)
{
    unsigned char key[SPOOL_KEY_ID];
    MDB_val k = {SPOOL_KEY_ID, key}, v;
    int rc;

    if (strlen(id) == 0 || strlen(id) > SPOOL_ID_MAX) {
        snprintf(why, whylen, "%s: no such message", id);
        errno = ENOENT;
        return -1;
    }
    spool_key_id(key, id);
    if ((rc = mdb_get(txn, sp->msg, &k, &v))) {
        if (rc == MDB_NOTFOUND) {
            snprintf(why, whylen, "%s: no such message", id);
            errno = ENOENT;
        } else {
            spool_why_lmdb(why, whylen, id, rc);
            errno = EIO;
        }
        return -1;
    }
    snprintf(m->id, sizeof(m->id), "%s", id);
    if (spool_envelope_decode(v.mv_data, v.mv_size, m, why, whylen) < 0) {
        char reason[200];

        snprintf(reason, sizeof(reason), "%s", why);
        snprintf(why, whylen, "%s: corrupt envelope record: %s", id, reason);
        errno = EILSEQ;
        return -1;
    }
    return 0;
}

static int rcpts_read(struct spool *sp, MDB_txn *txn, const char *id,
                      uint32_t from, uint32_t max, struct spool_rcpt **out,
                      uint32_t *count, char *why, size_t whylen)
{
    unsigned char key[SPOOL_KEY_RCPT];
    MDB_val k = {SPOOL_KEY_RCPT, key}, v;
    MDB_cursor *cur;
    struct spool_rcpt *r = NULL;
    uint32_t n = 0, cap = 0;
    MDB_cursor_op op = MDB_SET_RANGE;
    int rc;

    *out = NULL;
    *count = 0;
    if ((rc = mdb_cursor_open(txn, sp->rcpt, &cur))) {
        spool_why_lmdb(why, whylen, id, rc);
        return -1;
    }
    spool_key_rcpt(key, id, from);
    while (n < max && (rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
        char reason[200];

        op = MDB_NEXT;
        if (k.mv_size != SPOOL_KEY_RCPT ||
            memcmp(k.mv_data, key, SPOOL_KEY_ID) != 0)
            break;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            r = xrealloc(r, cap * sizeof(*r));
        }
        if (spool_rcpt_decode(v.mv_data, v.mv_size, &r[n], reason,
                              sizeof(reason)) < 0) {
            const unsigned char *kp = k.mv_data;

            snprintf(why, whylen, "%s: corrupt recipient record %u: %s", id,
                     (unsigned)kp[16] << 24 | (unsigned)kp[17] << 16 |
                         (unsigned)kp[18] << 8 | kp[19],
                     reason);
            mdb_cursor_close(cur);
            spool_rcpts_free(r, n);
            errno = EILSEQ;
            return -1;
        }
        n++;
    }
    mdb_cursor_close(cur);
    if (rc && rc != MDB_NOTFOUND) {
        spool_rcpts_free(r, n);
        spool_why_lmdb(why, whylen, id, rc);
        return -1;
    }
    *out = r;
    *count = n;
    return 0;
}

static int body_read(struct spool *sp, MDB_txn *txn, struct spool_msg *m,
                     char *why, size_t whylen)
{
    unsigned char key[SPOOL_KEY_ID];
    MDB_val k = {SPOOL_KEY_ID, key}, v;
    int rc;

    spool_key_id(key, m->id);
    if ((rc = mdb_get(txn, sp->body, &k, &v))) {
        spool_why_lmdb(why, whylen, m->id, rc);
        return -1;
    }
    if (v.mv_size != m->size) {
        snprintf(why, whylen, "%s: corrupt body: %zu bytes, expected %llu",
                 m->id, v.mv_size, (unsigned long long)m->size);
        errno = EILSEQ;
        return -1;
    }
    m->body = xcalloc(1, v.mv_size + 1);
    memcpy(m->body, v.mv_data, v.mv_size);
    return 0;
}

int spool_get(struct spool *sp, const char *id, struct spool_msg **mp, int what,
              char *why, size_t whylen)
{
    struct spool_msg *m = spool_msg_new();
    MDB_txn *txn;
    int ret = -1;

    *mp = NULL;
    if (spool_txn_begin(sp, 0, &txn, why, whylen) < 0) {
        spool_msg_free(m);
        return -1;
    }
    if (msg_read(sp, txn, id, m, why, whylen) < 0)
        goto done;
    if (what & SPOOL_GET_RCPTS) {
        uint32_t n;

        if (rcpts_read(sp, txn, id, 0, m->nrcpt, &m->rcpt, &n, why, whylen) < 0)
            goto done;
        m->rcpt_cap = n;
        if (n != m->nrcpt) {
            snprintf(why, whylen, "%s: %u recipient records, expected %u", id,
                     n, m->nrcpt);
            m->nrcpt = n;
            errno = EILSEQ;
            goto done;
        }
    }
    if ((what & SPOOL_GET_BODY) && body_read(sp, txn, m, why, whylen) < 0)
        goto done;
    ret = 0;
done:
    spool_txn_end(sp, txn);
    spool_map_touch(sp, 1 + (long)m->nrcpt * !!(what & SPOOL_GET_RCPTS), 0);
    if (ret == 0)
        *mp = m;
    else
        spool_msg_free(m);
    return ret;
}

int spool_rcpts(struct spool *sp, const char *id, uint32_t from, uint32_t max,
                struct spool_rcpt **out, uint32_t *count, char *why,
                size_t whylen)
{
    MDB_txn *txn;
    int ret;

    if (spool_txn_begin(sp, 0, &txn, why, whylen) < 0)
        return -1;
    ret = rcpts_read(sp, txn, id, from, max, out, count, why, whylen);
    spool_txn_end(sp, txn);
    spool_map_touch(sp, ret == 0 ? (long)*count : 1, 0);
    return ret;
}

/* The id in an index key (time, then the padded id). */
static void id_from_key(char id[SPOOL_ID_MAX + 1], const unsigned char *p)
{
    memcpy(id, p, SPOOL_KEY_ID);
    id[SPOOL_KEY_ID] = 0;
}

/*
 * Walk a table in key order, calling visit(ctx, txn, key, value) for
 * each record until it returns non-zero, in one read transaction: what
 * both kinds of listing and the recovery scan share. An LMDB error is
 * reported as "spool: WHAT: ...".
 */
typedef int walk_fn(void *ctx, MDB_txn *txn, const MDB_val *key,
                    const MDB_val *value);

static int walk(struct spool *sp, MDB_dbi dbi, const char *what, walk_fn *visit,
                void *ctx, char *why, size_t whylen)
{
    char label[64];

    MDB_cursor *cur;
    MDB_txn *txn;
    MDB_val k, v;
    int rc;

    if (spool_txn_begin(sp, 0, &txn, why, whylen) < 0)
        return -1;
    snprintf(label, sizeof(label), "spool: %s", what);
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) {
        spool_why_lmdb(why, whylen, label, rc);
        spool_txn_end(sp, txn);
        return -1;
    }
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
        spool_map_touch(sp, 1, 1);
        if (visit(ctx, txn, &k, &v))
            break;
    }
    mdb_cursor_close(cur);
    spool_txn_end(sp, txn);
    if (rc && rc != MDB_NOTFOUND) {
        spool_why_lmdb(why, whylen, label, rc);
        return -1;
    }
    return 0;
}

struct index_walk {
    spool_index_fn *fn;
    void *ctx;
};

/* An index key: the time (8 bytes, big-endian), then the queue id. */
static int index_visit(void *ctx, MDB_txn *txn, const MDB_val *k,
                       const MDB_val *v)
{
    struct index_walk *w = ctx;
    const unsigned char *p = k->mv_data;
    char id[SPOOL_ID_MAX + 1];
    uint64_t when = 0;

    (void)txn;
    (void)v;
    if (k->mv_size != 8 + SPOOL_KEY_ID)
        return 0;
    for (int i = 0; i < 8; i++)
        when = when << 8 | p[i];
    id_from_key(id, p + 8);
    return w->fn(w->ctx, id, (int64_t)when);
}

int spool_list_index(struct spool *sp, enum spool_index index,
                     spool_index_fn *fn, void *ctx, char *why, size_t whylen)
{
    struct index_walk w = {fn, ctx};

    if (index == SPOOL_INDEX_ALL) {
        snprintf(why, whylen, "spool: list: the message list has no times");
        return -1;
    }
    return walk(sp, index == SPOOL_INDEX_INCOMING ? sp->incoming : sp->deferred,
                "list", index_visit, &w, why, whylen);
}

struct list_walk {
    struct spool *sp;
    size_t idpos; /* where the queue id is in a key */
    spool_list_fn *fn;
    void *ctx;
};

static int list_visit(void *ctx, MDB_txn *txn, const MDB_val *k,
                      const MDB_val *v)
{
    struct list_walk *w = ctx;
    struct spool_msg m = {0};
    char id[SPOOL_ID_MAX + 1];
    char reason[256];
    int stop;

    (void)v; /* msg_read() reads the envelope of every kind of key */
    if (k->mv_size != w->idpos + SPOOL_KEY_ID)
        return 0;
    id_from_key(id, (const unsigned char *)k->mv_data + w->idpos);
    if (msg_read(w->sp, txn, id, &m, reason, sizeof(reason)) < 0) {
        /* Shown as corrupt; spool_recover() will make it so. */
        memset(&m, 0, sizeof(m));
        snprintf(m.id, sizeof(m.id), "%s", id);
        m.state = SPOOL_CORRUPT;
        m.corrupt_reason = reason;
        m.sender = "";
        return w->fn(w->ctx, &m);
    }
    stop = w->fn(w->ctx, &m);
    spool_envelope_clear(&m);
    return stop;
}

int spool_list(struct spool *sp, enum spool_index index, spool_list_fn *fn,
               void *ctx, char *why, size_t whylen)
{
    struct list_walk w = {sp, index == SPOOL_INDEX_ALL ? 0 : 8, fn, ctx};
    MDB_dbi dbi = index == SPOOL_INDEX_INCOMING   ? sp->incoming
                  : index == SPOOL_INDEX_DEFERRED ? sp->deferred
                                                  : sp->msg;

    return walk(sp, dbi, "list", list_visit, &w, why, whylen);
}

long spool_count(struct spool *sp, enum spool_index index)
{
    MDB_dbi dbi = index == SPOOL_INDEX_INCOMING   ? sp->incoming
                  : index == SPOOL_INDEX_DEFERRED ? sp->deferred
                                                  : sp->msg;
    MDB_txn *txn;
    MDB_stat st;
    char why[256];
    int rc;

    if (spool_txn_begin(sp, 0, &txn, why, sizeof(why)) < 0)
        return -1;
    rc = mdb_stat(txn, dbi, &st);
    spool_txn_end(sp, txn);
    return rc ? -1 : (long)st.ms_entries;
}

static int index_op(struct spool *sp, MDB_txn *txn, const struct spool_msg *m,
                    int put)
{
    unsigned char key[SPOOL_KEY_TIME];
    MDB_val k = {SPOOL_KEY_TIME, key}, v = {0, ""};
    MDB_dbi dbi;
    int64_t when;
    int rc;

    if (m->state == SPOOL_INCOMING) {
        dbi = sp->incoming;
        when = m->arrival;
    } else if (m->state == SPOOL_DEFERRED) {
        dbi = sp->deferred;
        when = m->next_attempt;
    } else {
        return 0;
    }
    spool_key_time(key, when, m->id);
    rc = put ? mdb_put(txn, dbi, &k, &v, 0) : mdb_del(txn, dbi, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

int spool_index_put(struct spool *sp, MDB_txn *txn, const struct spool_msg *m)
{
    return index_op(sp, txn, m, 1);
}

int spool_index_del(struct spool *sp, MDB_txn *txn, const struct spool_msg *m)
{
    return index_op(sp, txn, m, 0);
}

static int envelope_write(struct spool *sp, MDB_txn *txn,
                          const struct spool_msg *m)
{
    unsigned char key[SPOOL_KEY_ID];
    struct util_buf b = {0};
    int rc;

    spool_key_id(key, m->id);
    spool_envelope_encode(&b, m);
    rc = spool_put(txn, sp->msg, key, sizeof(key), b.data, b.len, 0);
    util_buf_free(&b);
    return rc;
}

static int results_write(struct spool *sp, MDB_txn *txn, const char *id,
                         const struct spool_change *ch, char *why,
                         size_t whylen)
{
    unsigned char key[SPOOL_KEY_RCPT];
    struct util_buf b = {0};
    int rc = 0;

    for (uint32_t i = 0; i < ch->nresults && rc == 0; i++) {
        const struct spool_result *res = &ch->results[i];
        MDB_val k = {SPOOL_KEY_RCPT, key}, v;
        struct spool_rcpt r;

        spool_key_rcpt(key, id, res->rcpt);
        if ((rc = mdb_get(txn, sp->rcpt, &k, &v)))
            break;
        if (spool_rcpt_decode(v.mv_data, v.mv_size, &r, why, whylen) < 0) {
            rc = -1;
            break;
        }
        r.notified |= res->notified;
        if (!res->notified_only) {
            r.status = res->status;
            r.code = res->code;
            free(r.reason);
            r.reason = res->reason ? xstrdup(res->reason) : NULL;
            free(r.tls);
            r.tls = res->tls ? xstrdup(res->tls) : NULL;
        }
        spool_rcpt_encode(&b, &r);
        spool_rcpt_clear(&r);
        rc = spool_put(txn, sp->rcpt, key, sizeof(key), b.data, b.len, 0);
    }
    util_buf_free(&b);
    return rc;
}

/*
 * Run a change in a write transaction, growing the map when needed:
 * apply() returns 0, an MDB error, or -1 with why set.
 */
typedef int change_fn(struct spool *sp, MDB_txn *txn, const char *id,
                      const void *arg, char *why, size_t whylen);

struct change_call {
    const char *id;
    change_fn *apply;
    const void *arg;
};

static int change_write(struct spool *sp, MDB_txn *txn, void *ctx, char *why,
                        size_t whylen)
{
    const struct change_call *c = ctx;

    return c->apply(sp, txn, c->id, c->arg, why, whylen);
}

static int change_run(struct spool *sp, const char *id, change_fn *apply,
                      const void *arg, char *why, size_t whylen)
{
    struct change_call c = {id, apply, arg};

    return spool_txn_write(sp, change_write, &c, id, why, whylen);
}

static int update_apply(struct spool *sp, MDB_txn *txn, const char *id,
                        const void *arg, char *why, size_t whylen)
{
    const struct spool_change *ch = arg;
    struct spool_msg m = {0};
    int rc;

    if (msg_read(sp, txn, id, &m, why, whylen) < 0)
        return -1;
    if ((rc = spool_index_del(sp, txn, &m)) == 0) {
        if (ch->has_state && ch->keep_hold && m.state == SPOOL_HOLD &&
            ch->state != SPOOL_HOLD) {
            m.held_from = ch->state; /* released into it later */
        } else if (ch->has_state) {
            if (ch->state == SPOOL_HOLD && m.state != SPOOL_HOLD)
                m.held_from = m.state;
            m.state = ch->state;
            if (ch->state == SPOOL_CORRUPT && ch->corrupt_reason) {
                free(m.corrupt_reason);
                m.corrupt_reason = xstrdup(ch->corrupt_reason);
            }
        }
        if (ch->has_next_attempt)
            m.next_attempt = ch->next_attempt;
        if (ch->has_attempts)
            m.attempts = ch->attempts;
        if ((rc = envelope_write(sp, txn, &m)) == 0 &&
            (rc = spool_index_put(sp, txn, &m)) == 0)
            rc = results_write(sp, txn, id, ch, why, whylen);
    }
    spool_envelope_clear(&m);
    if (rc == MDB_NOTFOUND) {
        snprintf(why, whylen, "%s: no such recipient", id);
        return -1;
    }
    return rc;
}

int spool_apply_change(struct spool *sp, MDB_txn *txn, const char *id,
                       const struct spool_change *ch, char *why, size_t whylen)
{
    return update_apply(sp, txn, id, ch, why, whylen);
}

int spool_update(struct spool *sp, const char *id,
                 const struct spool_change *ch, char *why, size_t whylen)
{
    return change_run(sp, id, update_apply, ch, why, whylen);
}

/* Delete every record whose key starts with the padded id. */
static int prefix_delete(MDB_txn *txn, MDB_dbi dbi, const char *id)
{
    unsigned char key[SPOOL_KEY_RCPT];
    MDB_val k = {SPOOL_KEY_ID, key}, v;
    MDB_cursor *cur;
    int rc;

    if ((rc = mdb_cursor_open(txn, dbi, &cur)))
        return rc;
    spool_key_id(key, id);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size >= SPOOL_KEY_ID &&
           memcmp(k.mv_data, key, SPOOL_KEY_ID) == 0) {
        if ((rc = mdb_cursor_del(cur, 0)))
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_GET_CURRENT);
        if (rc == EINVAL || rc == MDB_NOTFOUND)
            rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    }
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

static int delete_apply(struct spool *sp, MDB_txn *txn, const char *id,
                        const void *arg, char *why, size_t whylen)
{
    struct spool_msg m = {0};
    unsigned char key[SPOOL_KEY_ID];
    MDB_val k = {SPOOL_KEY_ID, key};
    int rc;

    (void)arg;
    if (msg_read(sp, txn, id, &m, why, whylen) == 0) {
        rc = spool_index_del(sp, txn, &m);
        spool_envelope_clear(&m);
        if (rc)
            return rc;
    } else if (errno == ENOENT) {
        return -1;
    }
    /* A corrupt envelope goes too: the user asked for it by id. */
    spool_key_id(key, id);
    if ((rc = mdb_del(txn, sp->msg, &k, NULL)) ||
        (rc = prefix_delete(txn, sp->rcpt, id)) ||
        ((rc = mdb_del(txn, sp->body, &k, NULL)) && rc != MDB_NOTFOUND) ||
        ((rc = prefix_delete(txn, sp->corrupt, id))))
        return rc;
    return 0;
}

int spool_apply_delete(struct spool *sp, MDB_txn *txn, const char *id,
                       char *why, size_t whylen)
{
    return delete_apply(sp, txn, id, NULL, why, whylen);
}

int spool_delete(struct spool *sp, const char *id, char *why, size_t whylen)
{
    return change_run(sp, id, delete_apply, NULL, why, whylen);
}

/* Keep raw bytes that did not decode, under the id and a label. */
static int corrupt_keep(struct spool *sp, MDB_txn *txn, const char *id,
                        const char *label, const MDB_val *raw)
{
    unsigned char key[SPOOL_KEY_ID + 32];
    size_t len = strlen(label);
    MDB_val k, v = *raw;

    spool_key_id(key, id);
    memcpy(key + SPOOL_KEY_ID, label, len);
    k.mv_data = key;
    k.mv_size = SPOOL_KEY_ID + len;
    return mdb_put(txn, sp->corrupt, &k, &v, 0);
}

/* Remove index entries of a message whose times are unknown: a scan. */
static int index_purge(MDB_txn *txn, MDB_dbi dbi, const char *id)
{
    unsigned char key[SPOOL_KEY_ID];
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;

    spool_key_id(key, id);
    if ((rc = mdb_cursor_open(txn, dbi, &cur)))
        return rc;
    while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0)
        if (k.mv_size == SPOOL_KEY_TIME &&
            memcmp((unsigned char *)k.mv_data + 8, key, SPOOL_KEY_ID) == 0 &&
            (rc = mdb_cursor_del(cur, 0)))
            break;
    mdb_cursor_close(cur);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Mark one message corrupt, with the reason; its raw envelope kept. */
static int corrupt_mark(struct spool *sp, MDB_txn *txn, const char *id,
                        const char *reason, const MDB_val *raw_envelope)
{
    struct spool_msg m = {0};
    MDB_val copy;
    int rc;

    if ((rc = index_purge(txn, sp->incoming, id)) ||
        (rc = index_purge(txn, sp->deferred, id)))
        return rc;
    if (raw_envelope) {
        /* The value points into the map; copy before writing. */
        copy.mv_size = raw_envelope->mv_size;
        copy.mv_data = xcalloc(1, copy.mv_size + 1);
        memcpy(copy.mv_data, raw_envelope->mv_data, copy.mv_size);
        rc = corrupt_keep(sp, txn, id, "envelope", &copy);
        free(copy.mv_data);
        if (rc)
            return rc;
    }
    snprintf(m.id, sizeof(m.id), "%s", id);
    m.sender = "";
    m.state = SPOOL_CORRUPT;
    m.corrupt_reason = (char *)reason;
    return envelope_write(sp, txn, &m);
}

struct recover_item {
    char id[SPOOL_ID_MAX + 1];
    char reason[256];
    int corrupt_envelope;
    struct recover_item *next;
};

/*
 * What is wrong with the recipients and body of message it->id, whose
 * envelope m reads well, in it->reason ("" if nothing).
 */
static void recover_check(struct spool *sp, MDB_txn *txn,
                          struct recover_item *it, const struct spool_msg *m)
{
    unsigned char bkey[SPOOL_KEY_ID];
    MDB_val bk = {SPOOL_KEY_ID, bkey}, bv;
    struct spool_rcpt *r;
    char reason[200];
    uint32_t n;
    int brc;

    if (rcpts_read(sp, txn, it->id, 0, m->nrcpt, &r, &n, reason,
                   sizeof(reason)) < 0) {
        snprintf(it->reason, sizeof(it->reason), "%s", reason);
        return;
    }
    spool_rcpts_free(r, n);
    if (n != m->nrcpt) {
        snprintf(it->reason, sizeof(it->reason),
                 "%u recipient records, expected %u", n, m->nrcpt);
        return;
    }
    spool_key_id(bkey, it->id);
    if ((brc = mdb_get(txn, sp->body, &bk, &bv)) != 0)
        snprintf(it->reason, sizeof(it->reason), "body: %s",
                 brc == MDB_NOTFOUND ? "missing" : mdb_strerror(brc));
    else if (bv.mv_size != m->size)
        snprintf(it->reason, sizeof(it->reason),
                 "body: %zu bytes, expected %llu", bv.mv_size,
                 (unsigned long long)m->size);
}

struct recover_walk {
    struct spool *sp;
    struct recover_item **list;
};

/* One message record: listed if it needs fixing. */
static int recover_visit(void *ctx, MDB_txn *txn, const MDB_val *k,
                         const MDB_val *v)
{
    struct recover_walk *w = ctx;
    struct recover_item *it = xcalloc(1, sizeof(*it));
    struct spool_msg m = {0};
    char reason[200];

    memcpy(it->id, k->mv_data,
           k->mv_size < SPOOL_KEY_ID ? k->mv_size : SPOOL_KEY_ID);
    if (spool_envelope_decode(v->mv_data, v->mv_size, &m, reason,
                              sizeof(reason)) < 0) {
        snprintf(it->reason, sizeof(it->reason), "envelope record: %s", reason);
        it->corrupt_envelope = 1;
    } else if (m.state != SPOOL_CORRUPT) {
        recover_check(w->sp, txn, it, &m);
    }
    if (it->reason[0] == 0 && m.state != SPOOL_ACTIVE) {
        free(it);
    } else {
        it->next = *w->list;
        *w->list = it;
    }
    spool_envelope_clear(&m);
    return 0;
}

/* Find what needs fixing, in a read transaction. */
static int recover_scan(struct spool *sp, struct recover_item **list, char *why,
                        size_t whylen)
{
    struct recover_walk w = {sp, list};

    return walk(sp, sp->msg, "recovery", recover_visit, &w, why, whylen);
}

static int recover_apply(struct spool *sp, MDB_txn *txn, const char *id,
                         const void *arg, char *why, size_t whylen)
{
    const struct recover_item *it = arg;
    unsigned char key[SPOOL_KEY_ID];
    MDB_val k = {SPOOL_KEY_ID, key}, v;
    struct spool_msg m = {0};
    int rc;

    (void)why;
    (void)whylen;
    spool_key_id(key, id);
    if ((rc = mdb_get(txn, sp->msg, &k, &v)))
        return rc == MDB_NOTFOUND ? 0 : rc; /* deleted meanwhile */
    if (it->corrupt_envelope)
        return corrupt_mark(sp, txn, id, it->reason, &v);
    if (spool_envelope_decode(v.mv_data, v.mv_size, &m, why, whylen) < 0)
        return corrupt_mark(sp, txn, id, why, &v);
    snprintf(m.id, sizeof(m.id), "%s", id);
    if (it->reason[0]) {
        /* A bad recipient record: it stays where it is, untouched. */
        rc = spool_index_del(sp, txn, &m);
        free(m.corrupt_reason);
        m.corrupt_reason = xstrdup(it->reason);
        m.state = SPOOL_CORRUPT;
    } else if (m.state == SPOOL_ACTIVE) {
        m.state = SPOOL_INCOMING;
    }
    if (rc == 0 && (rc = envelope_write(sp, txn, &m)) == 0)
        rc = spool_index_put(sp, txn, &m);
    spool_envelope_clear(&m);
    return rc;
}

int spool_recover(struct spool *sp, struct spool_recovery *rec, char *why,
                  size_t whylen)
{
    struct recover_item *list = NULL, *it;
    int ret = 0;

    memset(rec, 0, sizeof(*rec));
    if (recover_scan(sp, &list, why, whylen) < 0)
        return -1;
    while ((it = list) != NULL) {
        list = it->next;
        if (ret == 0 &&
            change_run(sp, it->id, recover_apply, it, why, whylen) < 0)
            ret = -1;
        else if (ret == 0 && it->reason[0])
            rec->corrupt++;
        else if (ret == 0)
            rec->active_to_incoming++;
        free(it);
    }
    return ret;
}
