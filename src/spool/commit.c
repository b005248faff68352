/*
 * NAME
 *	commit 3 - storing new messages: group commit
 * SYNOPSIS
 *	#include "spool/spool.h"
 *
 *	int	spool_submit(struct spool *sp, struct spool_msg *m,
 *			spool_done_fn *done, void *ctx)
 *	int	spool_store(struct spool *sp, struct spool_msg *m, char *why,
 *			size_t whylen)
 *	int	spool_meta_submit(struct spool *sp, const char *key,
 *			const void *val, size_t len, spool_meta_done_fn *done,
 *			void *ctx)
 * DESCRIPTION
 *	Durability costs a disk flush, and a flush costs the same for one
 *	message as for a hundred. So submitters do not commit: they queue
 *	their message and a committer thread, started with the first
 *	submission, takes everything queued while its previous commit was
 *	under way, writes it in one write transaction, commits (LMDB syncs
 *	the data, then the meta page), and only then tells each submitter,
 *	through its callback, that its message is durable. Under load the
 *	batches grow by themselves; with one submitter each message is its
 *	own batch and nothing waits for a timer.
 *
 *	A batch that does not fit grows the map and is written again. If it
 *	cannot be stored (the map may not grow, the disk is full, an I/O
 *	error), every message of the batch gets status -1 and the reason:
 *	the transaction is abandoned as a whole, so none of them is partly
 *	there and nothing stored before is touched.
 *
 *	A new message gets its queue id (the one in m->id if the caller
 *	set one and no stored message has it), its creation and (unless set)
 *	arrival time, state incoming (unless hold was asked), its size (the
 *	caller's, or the body's length as a string when the caller left it
 *	0), and every recipient pending. The spool owns a submitted message
 *	until it hands it back to the callback, which frees it or keeps it.
 *
 *	A body given as a file (spool_msg_body_file(), the SMTP server's
 *	staging file) is read into the space the transaction reserves for
 *	the value (MDB_RESERVE), never into a buffer of ours; such a message
 *	goes in a nested transaction, so that a file that cannot be read
 *	fails it alone. Its file is closed and unlinked once the batch is
 *	durable or has failed, before the callback.
 *
 *	spool_meta_submit() queues a meta value (meta.c) to be put, or
 *	with val NULL deleted, in the next group commit: the loop's threads
 *	keep a layer's state that way without waiting for a disk flush.
 *	The value is copied. done, if not NULL, is called from the
 *	committer thread with the key and the outcome.
 *
 *	spool_store() submits and waits for the outcome. Programs opened
 *	with SPOOL_NO_COMMITTER (sendmail: one message, then exit) write in
 *	the calling thread instead.
 */

#include "spool/spool_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum pending_kind {
    PENDING_NEW,
    PENDING_CHANGE,
    PENDING_DELETE,
    PENDING_META,
};

struct spool_pending {
    enum pending_kind kind;
    struct spool_msg *msg;      /* PENDING_NEW */
    spool_done_fn *done;        /* PENDING_NEW */
    char id[SPOOL_ID_MAX + 1];  /* PENDING_CHANGE, PENDING_DELETE */
    struct spool_change change; /* a deep copy */
    spool_change_done_fn *change_done;
    char *meta_key; /* PENDING_META: the key, and a copy of the value */
    char *meta_val; /* NULL: delete the key */
    size_t meta_len;
    spool_meta_done_fn *meta_done; /* may be NULL */
    void *ctx;
    int status; /* this item's own outcome */
    char why[256];
    struct spool_pending *next;
};

static void msg_prepare(struct spool_msg *m, int64_t now)
{
    m->created = now;
    if (m->arrival == 0)
        m->arrival = now;
    if (m->state != SPOOL_HOLD)
        m->state = SPOOL_INCOMING;
    else
        m->held_from = SPOOL_INCOMING;
    if (m->body_path != NULL)
        ; /* the size is the file's, as the caller said */
    else if (m->body == NULL)
        m->size = 0;
    else if (m->size == 0)
        m->size = strlen(m->body);
    for (uint32_t i = 0; i < m->nrcpt; i++)
        m->rcpt[i].status = SPOOL_RCPT_PENDING;
}

/*
 * A body in a file goes straight from the file into the space LMDB
 * reserves for the value: the submitter never held it in memory, and
 * neither does this thread beyond what the transaction itself holds
 * until it is written. -1 with why when the file cannot be read whole.
 */
static int body_file_put(struct spool *sp, MDB_txn *txn,
                         const unsigned char *key, struct spool_msg *m,
                         char *why, size_t whylen)
{
    MDB_val k = {SPOOL_KEY_ID, (void *)key};
    MDB_val v = {(size_t)m->size, NULL};
    ssize_t got;
    int rc;

    if ((rc = mdb_put(txn, sp->body, &k, &v, MDB_RESERVE)))
        return rc;
    got = util_pread_all(m->body_fd, v.mv_data, (size_t)m->size, 0);
    if (got == (ssize_t)m->size)
        return 0;
    if (got < 0)
        snprintf(why, whylen, "staging file %s: %s", m->body_path,
                 strerror(errno));
    else
        snprintf(why, whylen, "staging file %s: %zd bytes, expected %llu",
                 m->body_path, got, (unsigned long long)m->size);
    return -1;
}

int spool_put_msg(struct spool *sp, MDB_txn *txn, struct spool_msg *m,
                  char *why, size_t whylen)
{
    unsigned char key[SPOOL_KEY_RCPT];
    struct util_buf b = {0};
    int rc;

    /*
     * The envelope first: MDB_NOOVERWRITE makes the id unique. An id the
     * caller chose (the SMTP server's, already in a Received: header)
     * is tried first; only if it is taken is another drawn.
     */
    for (int drawn = m->id[0] == 0;; drawn = 1) {
        if (drawn)
            spool_id_new(m->id, m->created);
        spool_key_id(key, m->id);
        spool_envelope_encode(&b, m);
        rc = spool_put(txn, sp->msg, key, SPOOL_KEY_ID, b.data, b.len,
                       MDB_NOOVERWRITE);
        if (rc != MDB_KEYEXIST)
            break;
    }
    if (rc)
        goto done;
    for (uint32_t i = 0; i < m->nrcpt; i++) {
        spool_key_rcpt(key, m->id, i);
        spool_rcpt_encode(&b, &m->rcpt[i]);
        if ((rc = spool_put(txn, sp->rcpt, key, SPOOL_KEY_RCPT, b.data, b.len,
                            0)))
            goto done;
    }
    spool_key_id(key, m->id);
    if (m->body_path != NULL)
        rc = body_file_put(sp, txn, key, m, why, whylen);
    else
        rc = spool_put(txn, sp->body, key, SPOOL_KEY_ID, m->body ? m->body : "",
                       m->size, 0);
    if (rc)
        goto done;
    rc = spool_index_put(sp, txn, m);
done:
    util_buf_free(&b);
    return rc;
}

/* In a nested transaction: one item's own failure (-1, why set). */
static int item_write(struct spool *sp, MDB_txn *child, struct spool_pending *p)
{
    switch (p->kind) {
    case PENDING_NEW:
        return spool_put_msg(sp, child, p->msg, p->why, sizeof(p->why));
    case PENDING_CHANGE:
        return spool_apply_change(sp, child, p->id, &p->change, p->why,
                                  sizeof(p->why));
    default:
        return spool_apply_delete(sp, child, p->id, p->why, sizeof(p->why));
    }
}

/*
 * A change or delete goes in a nested transaction, so that one that
 * cannot be applied leaves nothing behind and fails alone; so does a
 * new message whose body is in a file, which may not be readable. Other
 * new messages cannot fail alone and go in the transaction itself.
 * Returns 0 (the item's own status is in p->status) or an MDB error for
 * the batch.
 */
static int item_apply(struct spool *sp, MDB_txn *txn, struct spool_pending *p)
{
    MDB_txn *child;
    int rc;

    p->status = 0;
    if (p->kind == PENDING_META)
        return spool_apply_meta(sp, txn, p->meta_key, p->meta_val, p->meta_len,
                                p->meta_val == NULL);
    if (p->kind == PENDING_NEW && p->msg->body_path == NULL)
        return spool_put_msg(sp, txn, p->msg, p->why, sizeof(p->why));
    if ((rc = mdb_txn_begin(sp->env, txn, 0, &child)))
        return rc;
    rc = item_write(sp, child, p);
    if (rc == -1) {
        mdb_txn_abort(child);
        p->status = -1;
        return 0;
    }
    if (rc) {
        mdb_txn_abort(child);
        return rc;
    }
    return mdb_txn_commit(child);
}

/* Every item of a batch in txn: 0, or an MDB error for the batch. */
static int batch_apply(struct spool *sp, MDB_txn *txn, void *ctx, char *why,
                       size_t whylen)
{
    struct spool_pending *p;
    int rc;

    (void)why;
    (void)whylen;
    for (p = ctx; p; p = p->next)
        if ((rc = item_apply(sp, txn, p)) != 0)
            return rc;
    return 0;
}

/*
 * Write a batch in one transaction, growing the map as needed. 0, or -1
 * with the reason.
 */
static int batch_write(struct spool *sp, struct spool_pending *batch, char *why,
                       size_t whylen)
{
    int64_t now = spool_now();
    struct spool_pending *p;

    for (p = batch; p; p = p->next)
        if (p->kind == PENDING_NEW)
            msg_prepare(p->msg, now);
    return spool_txn_write(sp, batch_apply, batch, "spool: storing a message",
                           why, whylen);
}

static void pending_free(struct spool_pending *p)
{
    free(p->meta_key);
    free(p->meta_val);
    for (uint32_t i = 0; i < p->change.nresults; i++) {
        free((char *)p->change.results[i].reason);
        free((char *)p->change.results[i].tls);
    }
    free((struct spool_result *)p->change.results);
    free((char *)p->change.corrupt_reason);
    free(p);
}

/*
 * Tell each submitter its outcome: the batch's, or the item's own. A
 * body file has served its purpose either way (the transaction is
 * durable or gone): it goes before the callback, so that a 250 is
 * never answered with the file still there.
 */
static void batch_done(struct spool_pending *batch, int status, const char *why)
{
    struct spool_pending *p;

    while ((p = batch) != NULL) {
        batch = p->next;
        if (p->kind == PENDING_NEW)
            spool_msg_body_file_drop(p->msg);
        if (p->kind == PENDING_META) {
            if (p->meta_done)
                p->meta_done(p->ctx, p->meta_key, status, status ? why : NULL);
        } else if (p->kind == PENDING_NEW && status)
            p->done(p->ctx, p->msg, status, why);
        else if (p->kind == PENDING_NEW)
            p->done(p->ctx, p->msg, p->status, p->status ? p->why : NULL);
        else if (status)
            p->change_done(p->ctx, p->id, status, why);
        else
            p->change_done(p->ctx, p->id, p->status, p->status ? p->why : NULL);
        pending_free(p);
    }
}

static long batch_count(const struct spool_pending *batch)
{
    long n = 0;

    for (; batch; batch = batch->next)
        n++;
    return n;
}

static void *committer(void *arg)
{
    struct spool *sp = arg;
    char why[256];
    long n;

    pthread_mutex_lock(&sp->lock);
    for (;;) {
        struct spool_pending *batch;
        int status;

        while (sp->head == NULL && !sp->stop)
            pthread_cond_wait(&sp->wake, &sp->lock);
        if (sp->head == NULL)
            break;
        batch = sp->head;
        sp->head = NULL;
        sp->tail = &sp->head;
        pthread_mutex_unlock(&sp->lock);
        n = batch_count(batch);
        status = batch_write(sp, batch, why, sizeof(why));
        batch_done(batch, status, why);
        spool_map_touch(sp, n, 0);
        pthread_mutex_lock(&sp->lock);
        sp->commits++;
    }
    pthread_mutex_unlock(&sp->lock);
    return NULL;
}

/* Queue an item for the committer, starting it if need be. */
static int pending_queue(struct spool *sp, struct spool_pending *p)
{
    pthread_mutex_lock(&sp->lock);
    if (!sp->committer_running) {
        if (pthread_create(&sp->committer, NULL, committer, sp) != 0) {
            pthread_mutex_unlock(&sp->lock);
            pending_free(p);
            return -1;
        }
        sp->committer_running = 1;
    }
    *sp->tail = p;
    sp->tail = &p->next;
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    return 0;
}

int spool_submit(struct spool *sp, struct spool_msg *m, spool_done_fn *done,
                 void *ctx)
{
    struct spool_pending *p;

    if (sp->flags & (SPOOL_READONLY | SPOOL_NO_COMMITTER))
        return -1;
    p = xcalloc(1, sizeof(*p));
    p->kind = PENDING_NEW;
    p->msg = m;
    p->done = done;
    p->ctx = ctx;
    return pending_queue(sp, p);
}

static int submit_change(struct spool *sp, enum pending_kind kind,
                         const char *id, const struct spool_change *ch,
                         spool_change_done_fn *done, void *ctx)
{
    struct spool_pending *p;
    struct spool_result *results;

    if ((sp->flags & (SPOOL_READONLY | SPOOL_NO_COMMITTER)) ||
        strlen(id) > SPOOL_ID_MAX)
        return -1;
    p = xcalloc(1, sizeof(*p));
    p->kind = kind;
    snprintf(p->id, sizeof(p->id), "%s", id);
    if (ch) {
        p->change = *ch;
        results = xcalloc(ch->nresults, sizeof(*results));
        for (uint32_t i = 0; i < ch->nresults; i++) {
            results[i] = ch->results[i];
            results[i].reason =
                ch->results[i].reason ? xstrdup(ch->results[i].reason) : NULL;
            results[i].tls =
                ch->results[i].tls ? xstrdup(ch->results[i].tls) : NULL;
        }
        p->change.results = results;
        if (ch->corrupt_reason)
            p->change.corrupt_reason = xstrdup(ch->corrupt_reason);
    }
    p->change_done = done;
    p->ctx = ctx;
    return pending_queue(sp, p);
}

int spool_submit_change(struct spool *sp, const char *id,
                        const struct spool_change *ch,
                        spool_change_done_fn *done, void *ctx)
{
    return submit_change(sp, PENDING_CHANGE, id, ch, done, ctx);
}

int spool_submit_delete(struct spool *sp, const char *id,
                        spool_change_done_fn *done, void *ctx)
{
    return submit_change(sp, PENDING_DELETE, id, NULL, done, ctx);
}

int spool_meta_submit(struct spool *sp, const char *key, const void *val,
                      size_t len, spool_meta_done_fn *done, void *ctx)
{
    struct spool_pending *p;
    char why[128];

    if ((sp->flags & (SPOOL_READONLY | SPOOL_NO_COMMITTER)) ||
        spool_meta_key_check(key, why, sizeof(why)) < 0)
        return -1;
    p = xcalloc(1, sizeof(*p));
    p->kind = PENDING_META;
    p->meta_key = xstrdup(key);
    if (val != NULL) {
        p->meta_val = xmalloc(len ? len : 1);
        memcpy(p->meta_val, val, len);
        p->meta_len = len;
    }
    p->meta_done = done;
    p->ctx = ctx;
    return pending_queue(sp, p);
}

void spool_stats(struct spool *sp, struct spool_stats *st)
{
    pthread_mutex_lock(&sp->lock);
    st->commits = sp->commits;
    pthread_mutex_unlock(&sp->lock);
    pthread_rwlock_rdlock(&sp->resize);
    st->map_size = sp->map_size;
    pthread_rwlock_unlock(&sp->resize);
}

/* Let the committer finish what is queued, then stop it (spool_close()). */
void spool_committer_stop(struct spool *sp)
{
    pthread_mutex_lock(&sp->lock);
    sp->stop = 1;
    pthread_cond_signal(&sp->wake);
    pthread_mutex_unlock(&sp->lock);
    if (sp->committer_running) {
        pthread_join(sp->committer, NULL);
        sp->committer_running = 0;
    }
}

/* spool_store(): wait for our own message's outcome. */
struct store_wait {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int finished, status;
    char *why;
    size_t whylen;
};

static void store_done(void *ctx, struct spool_msg *m, int status,
                       const char *why)
{
    struct store_wait *w = ctx;

    (void)m;
    pthread_mutex_lock(&w->lock);
    w->status = status;
    if (status && why)
        snprintf(w->why, w->whylen, "%s", why);
    w->finished = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

int spool_store(struct spool *sp, struct spool_msg *m, char *why, size_t whylen)
{
    struct store_wait w = {
        PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, why, whylen};

    if (sp->flags & SPOOL_READONLY) {
        snprintf(why, whylen, "spool: opened read-only");
        return -1;
    }
    if (sp->flags & SPOOL_NO_COMMITTER) {
        struct spool_pending one = {0};
        int rc;

        one.kind = PENDING_NEW;
        one.msg = m;
        rc = batch_write(sp, &one, why, whylen);
        spool_msg_body_file_drop(m);
        if (rc == 0 && one.status != 0) {
            snprintf(why, whylen, "%s", one.why);
            rc = -1;
        }
        return rc;
    }
    if (spool_submit(sp, m, store_done, &w) < 0) {
        snprintf(why, whylen, "spool: cannot start the committer");
        return -1;
    }
    pthread_mutex_lock(&w.lock);
    while (!w.finished)
        pthread_cond_wait(&w.cond, &w.lock);
    pthread_mutex_unlock(&w.lock);
    pthread_mutex_destroy(&w.lock);
    pthread_cond_destroy(&w.cond);
    return w.status;
}
