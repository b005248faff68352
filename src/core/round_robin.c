/*
 * NAME
 *	round_robin 3 - the older queue manager's selection policy (oqmgr)
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	const struct core_job_policy core_policy_round_robin
 * DESCRIPTION
 *	No jobs, no preemption: the transport's destination queues are
 *	served round-robin, and each queue in FIFO order ("oqmgr uses
 *	round-robin by destination"). The queue that delivers moves to the
 *	end of the rotation. This is the baseline the seed compares the
 *	preemptive scheduler with; a transport chooses it with
 *	<transport>_scheduler = round_robin. Jobs and peers are still kept
 *	(they cost little and keep the two policies interchangeable), but
 *	play no part in the choice.
 */

#include "core/core.h"

#include "core/core_impl.h"

static struct core_entry *round_robin_select(struct core_transport *t,
                                             core_time_t now)
{
    struct core_queue *q;

    TAILQ_FOREACH(q, &t->queues, link) {
        if (q->todo_count > 0 && core_queue_open(q)) {
            struct core_entry *e = TAILQ_FIRST(&q->todo);

            TAILQ_REMOVE(&t->queues, q, link);
            TAILQ_INSERT_TAIL(&t->queues, q, link);
            core_entry_start(e, now);
            return e;
        }
    }
    return NULL;
}

const struct core_job_policy core_policy_round_robin = {
    .name = "round_robin",
    .select = round_robin_select,
};
