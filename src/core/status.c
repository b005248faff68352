/*
 * NAME
 *	status 3 - what the scheduler holds, for an operator to read
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	void	core_transport_status(const struct core_transport *t,
 *			struct core_transport_status *st)
 *	void	core_queue_status(const struct core_queue *q,
 *			struct core_queue_status *st)
 *	const struct core_job *core_job_next(const struct core_transport *t,
 *			const struct core_job *job)
 *	void	core_job_status(const struct core_job *job,
 *			struct core_job_status *st)
 * DESCRIPTION
 *	`sluice status` shows the scheduler's state as the seed describes
 *	it: per transport, deliveries in flight against the process limit,
 *	the job list and the recipient pool; per destination queue, the
 *	concurrency window, deliveries in flight, entries waiting, the
 *	feedback accumulators and whether the queue is dead (and until
 *	when) or paused by a rate delay; per job, its message, its
 *	delivery slots and whether it is preempting another. These
 *	functions copy that out without changing anything: strings point
 *	into core/'s objects and live until the next call into core/.
 *
 *	core_job_next() walks a transport's job list in the scheduler's
 *	order (NULL: the first); core_job_status() describes one job.
 *	Times are core/'s (the caller's clock); CORE_TIME_NEVER when there
 *	is no such time.
 */

#include "core/core.h"

#include <string.h>

#include "core/core_impl.h"

void core_transport_status(const struct core_transport *t,
                           struct core_transport_status *st)
{
    const struct core_job *job;

    memset(st, 0, sizeof(*st));
    st->name = t->name;
    st->scheduler = t->scheduler->name;
    st->busy = t->busy;
    st->process_limit = t->params.process_limit;
    st->queues = t->queue_count;
    TAILQ_FOREACH(job, &t->jobs, list)
        st->jobs++;
    st->rcpt_pool = t->params.rcpt_pool;
    st->rcpt_unused = t->rcpt_unused;
    st->rate_wait = t->rate_wait;
    st->suspended = t->suspended;
    st->suspend_reason = t->suspended ? t->suspend_reason : NULL;
    st->suspended_until = t->suspended && t->suspend_timer.armed
                              ? t->suspend_timer.when
                              : CORE_TIME_NEVER;
}

void core_queue_status(const struct core_queue *q, struct core_queue_status *st)
{
    memset(st, 0, sizeof(*st));
    st->key = q->key;
    st->window = q->window;
    st->limit = core_queue_limit(q);
    st->busy = q->busy;
    st->todo = q->todo_count;
    st->success = q->success;
    st->failure = q->failure;
    st->fail_cohorts = q->fail_cohorts;
    st->dead = q->state == CORE_QUEUE_DEAD;
    st->rate_wait = q->state == CORE_QUEUE_RATE_WAIT;
    st->suspended = q->suspended;
    st->dead_reason = st->dead ? q->dead_reason : NULL;
    st->until = q->state != CORE_QUEUE_READY && q->timer.armed
                    ? q->timer.when
                    : CORE_TIME_NEVER;
}

const struct core_job *core_job_next(const struct core_transport *t,
                                     const struct core_job *job)
{
    return job ? TAILQ_NEXT(job, list) : TAILQ_FIRST(&t->jobs);
}

void core_job_status(const struct core_job *job, struct core_job_status *st)
{
    memset(st, 0, sizeof(*st));
    st->message = job->message;
    st->queued = job->message->queued;
    st->read_entries = job->read_entries;
    st->selected_entries = job->selected_entries;
    st->slots_available = job->slots_available;
    st->slots_used = job->slots_used;
    st->preempting = job->stack_level > 0;
    st->rcpt_count = job->rcpt_count;
    st->rcpt_limit = job->rcpt_limit;
}
