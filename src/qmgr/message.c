/*
 * NAME
 *	message 3 - a message in core: load, spool writes, the end of its stay
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	struct qm_msg *qm_message_find(struct qmgr *q, const char *id)
 *	void	qm_message_free(struct qm_msg *m)
 *	void	qm_message_load(struct qmgr *q, const char *id, int expire)
 *	struct util_blob *qm_message_body(struct qm_msg *m, char *why,
 *			size_t whylen)
 *	void	qm_message_body_idle(struct qm_msg *m)
 *	void	qm_message_write(struct qm_msg *m,
 *			const struct spool_change *ch, int final)
 *	void	qm_core_entry_deferred(void *ctx, struct core_entry *e,
 *			const char *reason)
 *	void	qm_core_message_done(void *ctx, struct core_message *cm)
 *	long	qm_core_message_more(void *ctx, struct core_message *cm,
 *			long max)
 * DESCRIPTION
 *	qm_message_find() finds a message in memory by queue id.
 *	qm_message_free() frees one that has left the queue manager's
 *	lists; its body lives on while deliveries still hold it.
 *
 *	A message's body is in memory only while it is used: a message
 *	waiting for a delivery slot holds its envelope and recipients,
 *	not its body, so the active queue's memory does not grow with the
 *	size of the messages in it. qm_message_body() reads the body from
 *	the spool when a delivery or a notice needs it and it is not in
 *	memory (sm->body then points into it); every delivery under way
 *	sends that one copy (a util_blob: the deliveries hold references,
 *	not copies). qm_message_body_idle() lets it go when no delivery of
 *	the message is in progress (m->deliveries); a session still
 *	sending keeps its own reference. It returns NULL with the reason
 *	when the spool cannot give the body.
 *
 *	qm_message_load() brings message id into memory: its envelope, and
 *	the first batch of its recipients that core/ makes room for
 *	(rcpt.c), each one not yet final routed to its destination queue;
 *	or, with expire, every open recipient returned to the sender at
 *	once (a message found too old in any state, held ones included).
 *
 *	qm_message_write() submits one change of m (or, with ch NULL, its
 *	removal) to the group commit; final says it is the message's last
 *	write, after which it leaves memory once committed.
 *
 *	qm_core_entry_deferred(), qm_core_message_done() and
 *	qm_core_message_more() are core/'s callbacks: an entry of a dead
 *	destination deferred without a delivery; a message with no in-core
 *	work left, which then finishes (removed, deferred until its retry
 *	time, or expired); and the next batch of a message's recipients.
 *	A message finishes from what the spool says of its recipients
 *	(bounce.c counts them), since most are no longer in memory.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static void message_finish(struct qm_msg *m);

static unsigned id_hash(const char *id)
{
    unsigned h = 5381;

    for (; *id; id++)
        h = h * 33 + (unsigned char)*id;
    return h % QM_ID_HASH_SIZE;
}

struct qm_msg *qm_message_find(struct qmgr *q, const char *id)
{
    struct qm_msg *m = q->hash[id_hash(id)];

    while (m && strcmp(m->id, id) != 0)
        m = m->hnext;
    return m;
}

void qm_message_free(struct qm_msg *m)
{
    qm_router_forget(m);
    m->sm->body = NULL; /* the blob's: freed with its last reference */
    spool_msg_free(m->sm);
    util_blob_unref(m->body);
    qm_rcpt_free(m);
    free(m);
}

struct util_blob *qm_message_body(struct qm_msg *m, char *why, size_t whylen)
{
    struct spool_msg *got;

    if (m->body != NULL)
        return m->body;
    if (spool_get(m->q->sp, m->id, &got, SPOOL_GET_BODY, why, whylen) < 0)
        return NULL;
    m->body = util_blob_adopt(got->body, (size_t)got->size);
    got->body = NULL;
    spool_msg_free(got);
    m->sm->body = (char *)util_blob_data(m->body);
    return m->body;
}

void qm_message_body_idle(struct qm_msg *m)
{
    if (m->deliveries > 0 || m->body == NULL)
        return;
    m->sm->body = NULL;
    util_blob_unref(m->body);
    m->body = NULL;
}

static void message_forget(struct qm_msg *m)
{
    struct qmgr *q = m->q;
    struct qm_msg **pp = &q->hash[id_hash(m->id)];

    while (*pp != m)
        pp = &(*pp)->hnext;
    *pp = m->hnext;
    TAILQ_REMOVE(&q->msgs, m, link);
    q->active--;
    qm_message_free(m);
    /*
     * A look at the spool walks past every message already in memory, so
     * it is worth it only when the last one left messages behind and
     * there is room for a batch of them; new mail wakes the feed itself.
     */
    if (q->spool_has_more && q->limit - q->active >= q->feed_batch)
        qm_feed_ask(q, 0);
}

struct commit_note {
    struct qm_msg *m;
    int status;
    int final; /* the message's last write */
    char why[256];
};

static void commit_seen(void *arg)
{
    struct commit_note *n = arg;
    struct qm_msg *m = n->m;

    if (m->q->closing) {
        /* qmgr_free() frees the message; start nothing new now. */
        m->pending--;
        free(n);
        return;
    }
    if (n->status != 0)
        qm_log(m->q, QMGR_LOG_WARNING, "%s: cannot update the queue file: %s",
               m->id, n->why);
    m->pending--;
    if (n->final)
        message_forget(m);
    else
        message_finish(m);
    free(n);
}

static void commit_done(void *ctx, const char *id, int status, const char *why)
{
    struct commit_note *n = ctx;

    (void)id;
    n->status = status;
    snprintf(n->why, sizeof(n->why), "%s", why ? why : "");
    qmgr_inbox_post(n->m->q->inbox, commit_seen, n);
}

void qm_message_write(struct qm_msg *m, const struct spool_change *ch,
                      int final)
{
    struct commit_note *n = xcalloc(1, sizeof(*n));

    n->m = m;
    n->final = final;
    m->pending++;
    if ((ch ? spool_submit_change(m->q->sp, m->id, ch, commit_done, n)
            : spool_submit_delete(m->q->sp, m->id, commit_done, n)) < 0) {
        /* The spool is closing: the message stays as it is on disk. */
        n->status = -1;
        snprintf(n->why, sizeof(n->why), "spool is shutting down");
        qmgr_inbox_post(m->q->inbox, commit_seen, n);
    }
}

/* The message-level line of an expiry, in the reference's form. */
static void message_expired_log(struct qm_msg *m)
{
    qm_log(m->q, QMGR_LOG_INFO, "%s: from=<%s>, status=expired, %s", m->id,
           m->sm->sender,
           m->sm->sender[0] ? "returned to sender" : "dropped (null sender)");
}

static uint32_t random_u32(void)
{
    uint32_t r;

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint32_t)random();
    return r;
}

/* The message stays: deferred until its next attempt, notices sent. */
static void message_requeue(struct qm_msg *m, struct qm_census *c, int64_t now,
                            int64_t next)
{
    struct spool_change ch = {0};
    struct spool_result *marks = NULL;

    m->finishing = 1;
    if (c != NULL)
        qm_bounce_notices(m, c, 1, &ch, &marks);
    ch.has_state = 1;
    ch.state = SPOOL_DEFERRED;
    ch.keep_hold = 1; /* held while it was being delivered: stays */
    ch.has_next_attempt = 1;
    ch.next_attempt = now + qmgr_retry_jitter(next - now, random_u32());
    ch.has_attempts = 1;
    ch.attempts = m->sm->attempts + 1;
    m->q->stats.requeued++;
    qm_message_write(m, &ch, 1);
    free(marks);
}

/*
 * The spool cannot give m's recipients, so nothing can be decided about
 * them (decision 52). That may pass (a spool error), so the message is
 * retried as a deferred one would be, the wait growing with its age;
 * a record that stays unreadable past the message's lifetime and one
 * more maximal backoff is not going to heal, and the message is marked
 * corrupt with the reason: kept, out of the queue's way, for the
 * operator (sluice queue shows it, sluice delete removes it).
 */
static void message_unreadable(struct qm_msg *m, int64_t now, const char *why)
{
    struct qmgr *q = m->q;
    const struct qmgr_retry *r = &q->retry;
    int64_t lifetime = m->sm->sender[0] ? r->lifetime : r->bounce_lifetime;
    int64_t next = now;
    struct spool_change ch = {0};
    char reason[600];

    if (now - m->sm->arrival <= lifetime + r->max_backoff) {
        qm_log(q, QMGR_LOG_WARNING, "%s: cannot read recipients: %s", m->id,
               why);
        if (qmgr_retry_decide(r, 1, m->sm->sender[0] == 0, m->sm->arrival, now,
                              &next) != QMGR_RETRY)
            next = now + r->max_backoff; /* past its lifetime: the grace */
        message_requeue(m, NULL, now, next);
        return;
    }
    snprintf(reason, sizeof(reason), "recipients unreadable: %s", why);
    qm_log(q, QMGR_LOG_WARNING,
           "%s: marked corrupt: its recipients could not be read until past "
           "its lifetime: %s",
           m->id, why);
    m->finishing = 1;
    ch.has_state = 1;
    ch.state = SPOOL_CORRUPT;
    ch.corrupt_reason = reason;
    qm_message_write(m, &ch, 1);
}

static void message_finish(struct qm_msg *m)
{
    struct qmgr *q = m->q;
    struct qm_census c;
    int64_t now, next = 0;
    char why[512], text[600];

    if (!m->core_done || m->pending > 0 || m->finishing)
        return;
    now = spool_now();
    if (qm_bounce_census(m, &c, why, sizeof(why)) < 0) {
        message_unreadable(m, now, why);
        return;
    }
    switch (qmgr_retry_decide(&q->retry, c.open > 0, m->sm->sender[0] == 0,
                              m->sm->arrival, now, &next)) {
    case QMGR_DONE:
        m->finishing = 1;
        qm_bounce_notices(m, &c, 0, NULL, NULL);
        qm_log(q, QMGR_LOG_INFO, "%s: removed", m->id);
        q->stats.removed++;
        qm_message_write(m, NULL, 1);
        break;
    case QMGR_EXPIRE:
        snprintf(text, sizeof(text), "%s",
                 m->last_reason[0] ? m->last_reason : "not delivered");
        message_expired_log(m);
        if (qm_rcpt_expire(m, text) > 0)
            break; /* finishes again once that is committed: DONE */
        /* No notice now (not even a delay notice): it is expired. */
        message_unreadable(m, now, "expiry cannot read them");
        break;
    case QMGR_RETRY:
        if (m->zretry > 0)
            next = m->zretry; /* the zmailer rules' schedule */
        message_requeue(m, &c, now, next);
        break;
    }
    qm_bounce_census_free(&c);
}

void qm_core_entry_deferred(void *ctx, struct core_entry *e, const char *reason)
{
    const uint64_t *rcpt;
    int n;

    rcpt = core_entry_rcpts(e, &n);
    if (qm_verify_owns(ctx, core_entry_message(e))) {
        qm_verify_decided(
            ctx, core_transport_name(core_queue_transport(core_entry_queue(e))),
            rcpt, n, NULL, DELIVER_DEFER, "4.4.1", reason, "none", 0, 0);
        return;
    }
    qm_outcome_suspended(core_message_ctx(core_entry_message(e)), rcpt, n,
                         reason);
}

void qm_core_message_done(void *ctx, struct core_message *cm)
{
    struct qm_msg *m = core_message_ctx(cm);

    (void)ctx;
    m->cm = NULL;
    m->core_done = 1;
    message_finish(m);
}

long qm_core_message_more(void *ctx, struct core_message *cm, long max)
{
    (void)ctx;
    return qm_rcpt_read(core_message_ctx(cm), max);
}

/*
 * Bring message id into memory: its envelope and the first batch of
 * recipients core/ makes room for; or, with expire, every open
 * recipient returned to the sender at once (a message found too old in
 * any state, held ones included).
 */
void qm_message_load(struct qmgr *q, const char *id, int expire)
{
    struct qm_msg *m = xcalloc(1, sizeof(*m));
    char why[512];
    unsigned h;

    if (spool_get(q->sp, id, &m->sm, 0, why, sizeof(why)) < 0) {
        qm_log(q, QMGR_LOG_WARNING, "%s: cannot read: %s", id, why);
        free(m);
        return;
    }
    m->q = q;
    TAILQ_INIT(&m->route_jobs);
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->active = qm_now_sec();
    h = id_hash(m->id);
    m->hnext = q->hash[h];
    q->hash[h] = m;
    TAILQ_INSERT_TAIL(&q->msgs, m, link);
    q->active++;
    q->stats.loaded++;
    /* Entering the active queue, as Postfix's qmgr logs it. */
    qm_log(q, QMGR_LOG_INFO,
           "%s: from=<%s>, size=%llu, nrcpt=%u (queue active)", m->id,
           m->sm->sender, (unsigned long long)m->sm->size, m->sm->nrcpt);
    m->cm = core_message_create(q->core, ++q->next_id, qm_now_ms(), m);
    if (expire) {
        message_expired_log(m);
        qm_rcpt_expire(m, NULL);
        core_message_unread_set(m->cm, 0);
    } else if (qm_rcpt_read(m, core_message_read_limit(m->cm)) == 0) {
        core_message_unread_set(m->cm, 0); /* no recipients at all */
    }
    core_message_release(m->cm); /* may finish it at once */
}
