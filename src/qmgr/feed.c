/*
 * NAME
 *	feed 3 - the active-queue feed: which messages come into core next
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_feed_ask(struct qmgr *q, long delay_us)
 *	void	qm_feed(struct qmgr *q)
 *	void	qm_expire_sweep(struct qmgr *q)
 * DESCRIPTION
 *	qm_feed_ask() schedules a look at the spool after delay_us, one at a
 *	time, none while stopping or draining. The delay coalesces the
 *	looks that a stream of new mail asks for (one look per delay at
 *	most), not the first after a quiet spell: the look then comes no
 *	later than delay_us after the one before, which may be now, so that
 *	a lone message does not wait for a batch that is not coming.
 *
 *	qm_feed() loads as many messages as there is room for under
 *	qmgr_message_active_limit: incoming ones first, alternating with
 *	deferred ones whose retry time has come, found from the spool's
 *	indexes alone.
 *
 *	qm_expire_sweep() loads messages past their lifetime that are not
 *	in memory, to be returned to their senders at once.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>

/* Schedule a look at the spool, after delay_us; one at a time. */
void qm_feed_ask(struct qmgr *q, long delay_us)
{
    struct timeval tv = {0, delay_us};

    int64_t since;

    if (q->feed_asked || q->closing || q->draining)
        return;
    since = util_clock_mono_us() - q->feed_last_us;
    if (since >= delay_us)
        tv.tv_usec = 0;
    else if (since > 0)
        tv.tv_usec = delay_us - since;
    q->feed_asked = 1;
    evtimer_add(q->feed_ev, &tv);
}

/* The feed: incoming first, alternating with deferred mail that is due. */
struct feed_scan {
    struct qmgr *q;
    int64_t now;
    long room;
    long n;
    char (*ids)[SPOOL_ID_MAX + 1];
    int deferred; /* the deferred index: stop at the first not yet due */
};

/* From the index alone: a look walks past what is in memory cheaply. */
static int feed_collect(void *ctx, const char *id, int64_t when)
{
    struct feed_scan *fs = ctx;

    if (fs->deferred && when > fs->now)
        return 1; /* by due time: the rest are later still */
    if (qm_message_find(fs->q, id) == NULL)
        snprintf(fs->ids[fs->n++], SPOOL_ID_MAX + 1, "%s", id);
    return fs->n >= fs->room;
}

void qm_feed(struct qmgr *q)
{
    struct feed_scan in = {q, spool_now(), 0, 0, NULL, 0};
    struct feed_scan de = in;
    char why[256];
    long i, j;

    in.room = de.room = q->limit - q->active;
    if (in.room <= 0)
        return;
    in.ids = xcalloc((size_t)in.room, sizeof(*in.ids));
    de.ids = xcalloc((size_t)de.room, sizeof(*de.ids));
    de.deferred = 1;
    if (spool_list_index(q->sp, SPOOL_INDEX_INCOMING, feed_collect, &in, why,
                         sizeof(why)) < 0 ||
        spool_list_index(q->sp, SPOOL_INDEX_DEFERRED, feed_collect, &de, why,
                         sizeof(why)) < 0)
        qm_log(q, QMGR_LOG_WARNING, "cannot read the queue: %s", why);
    for (i = j = 0; (i < in.n || j < de.n) && q->active < q->limit;) {
        if (i < in.n)
            qm_message_load(q, in.ids[i++], 0);
        if (j < de.n && q->active < q->limit)
            qm_message_load(q, de.ids[j++], 0);
    }
    q->spool_has_more = in.n >= in.room || de.n >= de.room;
    free(in.ids);
    free(de.ids);
}

/*
 * Expiry in every state: messages past their lifetime that are not in
 * memory (deferred and not due, held, or waiting in incoming) are loaded
 * to be returned to their senders at once, as many as there is room for;
 * the rest at the next sweep. A lifetime of 0 means one attempt, which
 * the message's pass makes; the sweep leaves those alone.
 */
static int expire_collect(void *ctx, const struct spool_msg *sm)
{
    struct feed_scan *es = ctx;
    const struct qmgr_retry *r = &es->q->retry;
    int64_t lifetime = sm->sender[0] ? r->lifetime : r->bounce_lifetime;

    if (sm->state == SPOOL_CORRUPT || lifetime == 0 ||
        es->now - sm->arrival <= lifetime ||
        qm_message_find(es->q, sm->id) != NULL)
        return 0;
    snprintf(es->ids[es->n++], SPOOL_ID_MAX + 1, "%s", sm->id);
    return es->n >= es->room;
}

void qm_expire_sweep(struct qmgr *q)
{
    struct feed_scan es = {q, spool_now(), q->limit - q->active, 0, NULL, 0};
    char why[256];

    if (es.room <= 0 || q->draining || q->closing)
        return;
    es.ids = xcalloc((size_t)es.room, sizeof(*es.ids));
    if (spool_list(q->sp, SPOOL_INDEX_ALL, expire_collect, &es, why,
                   sizeof(why)) < 0)
        qm_log(q, QMGR_LOG_WARNING, "cannot read the queue: %s", why);
    for (long i = 0; i < es.n; i++)
        qm_message_load(q, es.ids[i], 1);
    free(es.ids);
}
