/*
 * NAME
 *	entry 3 - entries: selection, delivery outcome, deferral
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core_entry *core_select(struct core *core, core_time_t now)
 *	struct core_entry *core_transport_select(struct core_transport *t,
 *			core_time_t now)
 *	void	core_entry_done(struct core_entry *e, core_time_t now,
 *			enum core_hop hop, const char *reason)
 *
 *	#include "core/core_impl.h"
 *
 *	void	core_entry_start(struct core_entry *e, core_time_t now)
 *	void	core_queue_defer_todo(struct core_queue *q, const char *reason,
 *			core_time_t now)
 *
 *	struct core_message *core_entry_message(const struct core_entry *e)
 *	struct core_queue *core_entry_queue(const struct core_entry *e)
 *	const uint64_t *core_entry_rcpts(const struct core_entry *e, int *n)
 *	int	core_entry_count(const struct core_entry *e)
 * DESCRIPTION
 *	core_select() asks the transports in turn, round-robin ("foreach
 *	transport (round-robin-by-transport)"), starting after the one that
 *	gave the last entry, and returns the first entry one of them
 *	selects. core_transport_select() asks one transport: nothing while
 *	it is at its process limit or paused by its rate delay, or while
 *	none of its queues is open with entries waiting (ready_queues, as
 *	Postfix's transport selection looks for "window > busy" and a
 *	waiting entry before it asks the job list), else its job selection
 *	policy decides. So a transport whose windows are all full costs
 *	nothing to ask, however many jobs it holds.
 *
 *	core_entry_start() is the policies' common last step: the entry
 *	leaves its peer's and queue's waiting lists for the queue's busy
 *	list, counts as selected for its job, and starts a delivery on its
 *	queue.
 *
 *	core_entry_done() ends a started entry: the hop status goes to the
 *	queue (feedback, dead-destination detection, and unblocking of jobs
 *	if the queue can send again), then the entry is freed.
 *
 *	core_queue_defer_todo() hands every waiting entry of a queue to the
 *	entry_deferred callback and frees it (a destination was declared
 *	dead: "defers its waiting entries").
 */

#include "core/core.h"

#include "core/core_impl.h"

struct core_entry *core_transport_select(struct core_transport *t,
                                         core_time_t now)
{
    if (!core_transport_can_start(t) || t->ready_queues == 0)
        return NULL;
    return t->scheduler->select(t, now);
}

struct core_entry *core_select(struct core *core, core_time_t now)
{
    struct core_transport *start =
        core->rr_next ? core->rr_next : core->transports;
    struct core_transport *t = start;
    struct core_entry *e;

    if (t == NULL)
        return NULL;
    do {
        struct core_transport *next = t->next ? t->next : core->transports;

        if ((e = core_transport_select(t, now)) != NULL) {
            core->rr_next = next;
            return e;
        }
        t = next;
    } while (t != start);
    return NULL;
}

void core_entry_start(struct core_entry *e, core_time_t now)
{
    struct core_peer *peer = e->peer;
    struct core_queue *q = peer->queue;

    TAILQ_REMOVE(&peer->todo, e, peer_link);
    TAILQ_REMOVE(&q->todo, e, queue_link);
    q->todo_count--;
    TAILQ_INSERT_TAIL(&q->busy_list, e, queue_link);
    e->busy = 1;
    core_queue_start(q, now); /* counts q's readiness again */
    core_job_entry_selected(peer->job);
}

void core_entry_done(struct core_entry *e, core_time_t now, enum core_hop hop,
                     const char *reason)
{
    struct core_queue *q = e->peer->queue;

    if (!e->busy)
        core_panic(q->transport->core,
                   "queue %s:%s: done for an entry never selected",
                   q->transport->name, q->key);
    core_queue_done(q, now, hop, reason);
    core_entry_free(e, now);
}

void core_queue_defer_todo(struct core_queue *q, const char *reason,
                           core_time_t now)
{
    struct core *core = q->transport->core;
    struct core_entry *e;

    while ((e = TAILQ_FIRST(&q->todo)) != NULL) {
        if (core->cb.entry_deferred)
            core->cb.entry_deferred(core->ctx, e, reason);
        core_entry_free(e, now);
    }
}

struct core_message *core_entry_message(const struct core_entry *e)
{
    return e->peer->job->message;
}

struct core_queue *core_entry_queue(const struct core_entry *e)
{
    return e->peer->queue;
}

const uint64_t *core_entry_rcpts(const struct core_entry *e, int *n)
{
    *n = e->nrcpt;
    return e->rcpt;
}

int core_entry_count(const struct core_entry *e)
{
    return e->nrcpt;
}
