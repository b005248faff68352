/*
 * NAME
 *	message 3 - messages, jobs, peers and entries: assignment and lifetime
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core_message *core_message_create(struct core *core,
 *			uint64_t id, core_time_t queued, void *ctx)
 *	int	core_message_add(struct core_message *m, struct core_queue *q,
 *			uint64_t rcpt)
 *	void	core_message_release(struct core_message *m)
 *	void	core_message_hold(struct core_message *m)
 *	void	core_message_unhold(struct core_message *m, core_time_t now)
 *
 *	#include "core/core_impl.h"
 *
 *	void	core_entry_free(struct core_entry *e)
 *	void	core_message_free(struct core_message *m)
 *
 *	void	*core_message_ctx(const struct core_message *m)
 *	uint64_t core_message_id(const struct core_message *m)
 * DESCRIPTION
 *	This is "What happens when nqmgr picks up the message" in the seed:
 *	each resolved recipient is bound to its destination queue; the
 *	message's job for that queue's transport is found or made (and
 *	linked into the transport's job lists by enqueue time), the job's
 *	peer for that queue is found or made, and the recipient is stored
 *	in the peer's last waiting entry while it holds fewer than the
 *	transport's recipient_limit recipients, else in a new entry that is
 *	appended to both the peer's and the queue's waiting lists.
 *
 *	The peer of the last assignment is remembered by the queue, so
 *	that the recipients of a big message going to one destination find
 *	their peer at once; otherwise the job's peers are searched.
 *
 *	core_entry_free() forgets an entry that is done or deferred: a
 *	waiting one no longer counts in its job's read entries (and the
 *	job retires if nothing is left to select), a peer without entries
 *	goes, and a released message without entries is finished: the
 *	message_done callback runs, then the message and its jobs are
 *	freed. A held message (core_message_hold()) waits for its
 *	holds to end: its caller is still routing recipients that core/
 *	has not seen, so neither is it done nor is its next batch read
 *	(which would bring a whole mailing list into memory while its
 *	first batch is still being routed). core_message_free() frees a message and everything in it
 *	without callbacks (core_free()).
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

struct core_message *core_message_create(struct core *core, uint64_t id,
                                         core_time_t queued, void *ctx)
{
    struct core_message *m = xmalloc(sizeof(*m));

    memset(m, 0, sizeof(*m));
    m->id = id;
    m->ctx = ctx;
    m->queued = queued;
    m->core = core;
    m->rcpt_limit = core->msg_rcpt_minimum; /* "always applies" */
    m->refill_time = queued;
    TAILQ_INSERT_TAIL(&core->messages, m, link);
    return m;
}

static struct core_job *job_obtain(struct core_message *m,
                                   struct core_transport *t)
{
    struct core_job *job;

    for (job = m->jobs; job; job = job->next_of_message)
        if (job->transport == t)
            return job;
    job = core_job_create(m, t);
    job->next_of_message = m->jobs;
    m->jobs = job;
    return job;
}

static struct core_peer *peer_obtain(struct core_job *job, struct core_queue *q)
{
    struct core_peer *peer = q->last_peer;

    if (peer == NULL || peer->job != job) {
        TAILQ_FOREACH(peer, &job->peers, link) {
            if (peer->queue == q)
                break;
        }
        if (peer == NULL) {
            peer = xmalloc(sizeof(*peer));
            memset(peer, 0, sizeof(*peer));
            peer->job = job;
            peer->queue = q;
            TAILQ_INIT(&peer->todo);
            TAILQ_INSERT_TAIL(&job->peers, peer, link);
        }
        q->last_peer = peer;
    }
    return peer;
}

/*
 * Most entries hold one recipient (one per destination of a message), so
 * the first is stored in the entry itself; an array takes over when a
 * second one comes.
 */
static void entry_add_rcpt(struct core_entry *e, uint64_t rcpt)
{
    if (e->cap == 0) {
        e->rcpt = &e->rcpt_one;
        e->cap = 1;
    } else if (e->nrcpt == e->cap) {
        uint64_t *grown = xmalloc(e->cap * 2 * sizeof(*grown));

        memcpy(grown, e->rcpt, e->nrcpt * sizeof(*grown));
        core_entry_free_rcpts(e);
        e->rcpt = grown;
        e->cap *= 2;
    }
    e->rcpt[e->nrcpt++] = rcpt;
}

void core_entry_free_rcpts(struct core_entry *e)
{
    if (e->rcpt != &e->rcpt_one)
        free(e->rcpt);
    e->rcpt = NULL;
}

int core_message_add(struct core_message *m, struct core_queue *q,
                     uint64_t rcpt)
{
    struct core_transport *t = q->transport;
    int limit = t->params.recipient_limit > 0 ? t->params.recipient_limit : 1;
    struct core_job *job;
    struct core_peer *peer;
    struct core_entry *e;

    if (q->state == CORE_QUEUE_DEAD || t->suspended)
        return -1;
    job = job_obtain(m, t);
    peer = peer_obtain(job, q);
    e = TAILQ_LAST(&peer->todo, core_entry_list);
    if (e == NULL || e->nrcpt >= limit) {
        e = xmalloc(sizeof(*e));
        memset(e, 0, sizeof(*e));
        e->peer = peer;
        TAILQ_INSERT_TAIL(&peer->todo, e, peer_link);
        TAILQ_INSERT_TAIL(&q->todo, e, queue_link);
        q->todo_count++;
        core_queue_ready_update(q);
        peer->entries++;
        m->entries++;
        core_job_entry_added(job);
    }
    entry_add_rcpt(e, rcpt);
    job->rcpt_count++;
    m->rcpt_count++;
    m->core->rcpt_count++;
    return 0;
}

static void message_finish(struct core_message *m)
{
    struct core *core = m->core;

    if (core->cb.message_done)
        core->cb.message_done(core->ctx, m);
    core_message_free(m);
}

/*
 * A released message without entries is done, unless recipients are
 * still unread: then the next batch is read, for as long as batches
 * bring entries (a batch of recipients that are all final or refused
 * brings none).
 */
static void message_check_done(struct core_message *m, core_time_t now)
{
    long unread;

    if (m->holds > 0)
        return; /* more recipients are coming from the caller */
    while (m->entries == 0 && m->rcpt_unread > 0) {
        unread = m->rcpt_unread;
        if (core_rcpt_more(m, now, 0) <= 0 && m->rcpt_unread >= unread)
            break; /* the caller cannot read: it keeps them for later */
    }
    if (m->entries == 0)
        message_finish(m);
}

void core_message_release(struct core_message *m)
{
    m->released = 1;
    if (m->rcpt_unread == 0)
        core_rcpt_read_done(m);
    message_check_done(m, m->refill_time);
}

void core_message_hold(struct core_message *m)
{
    m->holds++;
}

void core_message_unhold(struct core_message *m, core_time_t now)
{
    if (m->holds <= 0)
        core_panic(m->core, "message %llu: unhold without a hold",
                   (unsigned long long)m->id);
    if (--m->holds == 0 && m->released)
        message_check_done(m, now);
}

void core_entry_free(struct core_entry *e, core_time_t now)
{
    struct core_peer *peer = e->peer;
    struct core_job *job = peer->job;
    struct core_message *m = job->message;
    struct core_queue *q = peer->queue;
    struct core_transport *t = q->transport;

    if (e->busy) {
        TAILQ_REMOVE(&q->busy_list, e, queue_link);
    } else {
        TAILQ_REMOVE(&q->todo, e, queue_link);
        TAILQ_REMOVE(&peer->todo, e, peer_link);
        q->todo_count--;
        core_queue_ready_update(q);
        core_job_entry_dropped(job);
    }
    job->rcpt_count -= e->nrcpt;
    m->rcpt_count -= e->nrcpt;
    m->core->rcpt_count -= e->nrcpt;
    core_entry_free_rcpts(e);
    free(e);
    if (--peer->entries == 0) {
        TAILQ_REMOVE(&job->peers, peer, link);
        if (q->last_peer == peer)
            q->last_peer = NULL;
        free(peer);
    }
    m->entries--;
    if (m->rcpt_unread == 0)
        core_rcpt_move_limits(job);
    else if (m->released && core_rcpt_refill_due(m, t, now))
        core_rcpt_more(m, now, 0);
    if (m->released)
        message_check_done(m, now);
}

void core_message_free(struct core_message *m)
{
    struct core_job *job;

    while ((job = m->jobs) != NULL) {
        struct core_peer *peer;

        m->jobs = job->next_of_message;
        while ((peer = TAILQ_FIRST(&job->peers)) != NULL) {
            TAILQ_REMOVE(&job->peers, peer, link);
            if (peer->queue->last_peer == peer)
                peer->queue->last_peer = NULL;
            free(peer);
        }
        core_job_free(job);
    }
    TAILQ_REMOVE(&m->core->messages, m, link);
    free(m);
}

void *core_message_ctx(const struct core_message *m)
{
    return m->ctx;
}

uint64_t core_message_id(const struct core_message *m)
{
    return m->id;
}
