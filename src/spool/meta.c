/*
 * NAME
 *	meta 3 - small named values kept beside the messages
 * SYNOPSIS
 *	#include "spool/spool.h"
 *
 *	int	spool_meta_put(struct spool *sp, const char *key,
 *			const void *val, size_t len, char *why, size_t whylen)
 *	int	spool_meta_get(struct spool *sp, const char *key, void **val,
 *			size_t *len, char *why, size_t whylen)
 *	int	spool_meta_delete(struct spool *sp, const char *key,
 *			char *why, size_t whylen)
 *	int	spool_meta_list(struct spool *sp, const char *prefix,
 *			spool_meta_fn *fn, void *ctx, char *why,
 *			size_t whylen)
 * DESCRIPTION
 *	Layers that need a little state to survive a restart (MTA-STS
 *	policies, sts/) keep it in the spool's "meta" database rather than
 *	in files of their own: the same environment, the same durability,
 *	the same backups. A key is a string of 1 to SPOOL_META_KEY_MAX
 *	bytes without NUL, and by convention starts with its owner's
 *	prefix ("sts:"); a value is any bytes, meant to be small (a few
 *	KB): it is read whole.
 *
 *	spool_meta_put() and spool_meta_delete() are write transactions of
 *	their own, synchronous like spool_update(): they return once the
 *	change is on disk. The event loop's threads use spool_meta_submit()
 *	(commit.c) instead, which rides the next group commit.
 *	spool_meta_delete() of a key that is not there succeeds.
 *
 *	spool_meta_get() copies the value into memory the caller frees,
 *	with a NUL after its len bytes; a key that is not there is -1 with
 *	errno ENOENT. spool_meta_list() calls fn for every key that starts
 *	with prefix ("" for all), in byte order, inside one read
 *	transaction: fn must not write the spool; it returns non-zero to
 *	stop.
 *
 *	A spool made before the meta database existed gets it when it is
 *	next opened for writing; opened read-only, it simply has no
 *	values.
 */

#include "spool/spool_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int spool_meta_key_check(const char *key, char *why, size_t whylen)
{
    size_t len = key ? strlen(key) : 0;

    if (len == 0 || len > SPOOL_META_KEY_MAX) {
        snprintf(why, whylen, "spool: meta key of %zu bytes (1 to %d)", len,
                 SPOOL_META_KEY_MAX);
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int spool_apply_meta(struct spool *sp, MDB_txn *txn, const char *key,
                     const void *val, size_t len, int remove)
{
    MDB_val k = {strlen(key), (void *)key};
    int rc;

    if (!remove)
        return spool_put(txn, sp->meta, key, strlen(key), val, len, 0);
    rc = mdb_del(txn, sp->meta, &k, NULL);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

struct meta_write {
    const char *key;
    const void *val;
    size_t len;
    int remove;
};

static int meta_write(struct spool *sp, MDB_txn *txn, void *ctx, char *why,
                      size_t whylen)
{
    struct meta_write *w = ctx;

    (void)why;
    (void)whylen;
    return spool_apply_meta(sp, txn, w->key, w->val, w->len, w->remove);
}

static int meta_change(struct spool *sp, struct meta_write *w, char *why,
                       size_t whylen)
{
    if (spool_meta_key_check(w->key, why, whylen) < 0)
        return -1;
    if (sp->meta_missing) {
        snprintf(why, whylen, "spool: opened read-only");
        return -1;
    }
    return spool_txn_write(sp, meta_write, w, w->key, why, whylen);
}

int spool_meta_put(struct spool *sp, const char *key, const void *val,
                   size_t len, char *why, size_t whylen)
{
    struct meta_write w = {key, val, len, 0};

    return meta_change(sp, &w, why, whylen);
}

int spool_meta_delete(struct spool *sp, const char *key, char *why,
                      size_t whylen)
{
    struct meta_write w = {key, NULL, 0, 1};

    return meta_change(sp, &w, why, whylen);
}

int spool_meta_get(struct spool *sp, const char *key, void **val, size_t *len,
                   char *why, size_t whylen)
{
    MDB_txn *txn;
    MDB_val k, v;
    int rc;

    *val = NULL;
    *len = 0;
    if (spool_meta_key_check(key, why, whylen) < 0)
        return -1;
    if (sp->meta_missing) {
        snprintf(why, whylen, "%s: not in the spool", key);
        errno = ENOENT;
        return -1;
    }
    if (spool_txn_begin(sp, 0, &txn, why, whylen) < 0)
        return -1;
    k.mv_size = strlen(key);
    k.mv_data = (void *)key;
    if ((rc = mdb_get(txn, sp->meta, &k, &v)) == 0) {
        *val = xmalloc(v.mv_size + 1);
        memcpy(*val, v.mv_data, v.mv_size);
        ((char *)*val)[v.mv_size] = 0;
        *len = v.mv_size;
    }
    spool_txn_end(sp, txn);
    spool_map_touch(sp, 1, 0);
    if (rc == MDB_NOTFOUND) {
        snprintf(why, whylen, "%s: not in the spool", key);
        errno = ENOENT;
        return -1;
    }
    if (rc) {
        spool_why_lmdb(why, whylen, key, rc);
        errno = EIO;
        return -1;
    }
    return 0;
}

int spool_meta_list(struct spool *sp, const char *prefix, spool_meta_fn *fn,
                    void *ctx, char *why, size_t whylen)
{
    char key[SPOOL_META_KEY_MAX + 1];
    size_t plen = strlen(prefix);
    MDB_cursor_op op = MDB_SET_RANGE;
    MDB_cursor *cur;
    MDB_txn *txn;
    MDB_val k, v;
    long n = 0;
    int rc;

    if (sp->meta_missing)
        return 0;
    if (spool_txn_begin(sp, 0, &txn, why, whylen) < 0)
        return -1;
    if ((rc = mdb_cursor_open(txn, sp->meta, &cur))) {
        spool_txn_end(sp, txn);
        spool_why_lmdb(why, whylen, "spool: meta", rc);
        return -1;
    }
    k.mv_size = plen;
    k.mv_data = (void *)prefix;
    if (plen == 0)
        op = MDB_FIRST;
    while ((rc = mdb_cursor_get(cur, &k, &v, op)) == 0) {
        op = MDB_NEXT;
        if (k.mv_size < plen || memcmp(k.mv_data, prefix, plen) != 0 ||
            k.mv_size > SPOOL_META_KEY_MAX)
            break;
        memcpy(key, k.mv_data, k.mv_size);
        key[k.mv_size] = 0;
        n++;
        if (fn(ctx, key, v.mv_data, v.mv_size) != 0)
            break;
    }
    mdb_cursor_close(cur);
    spool_txn_end(sp, txn);
    spool_map_touch(sp, n, 0);
    if (rc && rc != MDB_NOTFOUND) {
        spool_why_lmdb(why, whylen, "spool: meta", rc);
        return -1;
    }
    return 0;
}
