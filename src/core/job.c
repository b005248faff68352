/*
 * NAME
 *	job 3 - jobs: the job lists, the preemption stack, blockers
 * SYNOPSIS
 *	#include "core/core_impl.h"
 *
 *	struct core_job *core_job_create(struct core_message *m,
 *			struct core_transport *t)
 *	void	core_job_free(struct core_job *job)
 *	void	core_job_entry_added(struct core_job *job)
 *	void	core_job_entry_dropped(struct core_job *job)
 *	void	core_job_entry_selected(struct core_job *job)
 *	void	core_job_block(struct core_job *job)
 *	void	core_job_unstack(struct core_job *job)
 *	void	core_queue_unblock(struct core_queue *q)
 * DESCRIPTION
 *	A transport keeps two lists of its jobs. The enqueue-time list is
 *	ordered by the time the job's message entered the active queue and
 *	never changes order (the recipient pools of the memory-limits issue
 *	walk it). The scheduler's job list starts in the same order, but
 *	preemption moves a job in front of the one it preempts; a job is on
 *	it (stack_level >= 0) while it has entries not yet selected, and
 *	"retired" (stack_level -1) otherwise.
 *
 *	core_job_create() makes a job and puts it on the enqueue-time list;
 *	it joins the scheduler's list with its first entry
 *	(core_job_entry_added()), where it is placed after the last job of
 *	the list that is not a preemption child and is not younger, as the
 *	reference does: a revived job, or one created by a later batch of
 *	recipients, lands where its age says. If that is in front of the
 *	current job, it becomes the current job. A blocker job that gains
 *	an entry is a blocker no more, and selection starts again at the
 *	head of the list (it may stand before the current job).
 *
 *	core_job_entry_dropped() accounts for a waiting entry that went away
 *	without being selected (deferred by a dead destination);
 *	core_job_entry_selected() for one that was selected. Either retires
 *	the job when nothing is left to select.
 *
 *	The preemption stack: a job that preempts another becomes its
 *	child (stack_level one more); a job may have several children at
 *	once (siblings) when blockers let it run while one child waits.
 *	core_job_unstack() takes a job off the stack, when it is retired or
 *	when it preempts again from a different place: the slots it did not
 *	use go back to the job it preempted, if that is still its parent
 *	(an adoptive parent, which took over when the job it preempted was
 *	retired, gets nothing back: it paid nothing), and its own children
 *	are adopted by its parent.
 *
 *	Blockers ("How destination concurrency limits affect the scheduling
 *	algorithm"): a job none of whose waiting entries can be selected
 *	because every destination concerned is at its window is marked with
 *	the transport's blocker tag by core_job_block(), as are those
 *	destination queues. Selection and candidacy skip blockers. When a
 *	blocking queue can send again and has entries waiting,
 *	core_queue_unblock() changes the transport's tag, which unblocks
 *	every job at once (so that per destination the jobs still go in
 *	their order) and restarts selection at the head of the job list.
 *	Tags are odd, so a job or queue with tag 0 never matches.
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

struct core_job *core_job_create(struct core_message *m,
                                 struct core_transport *t)
{
    struct core_job *job = xmalloc(sizeof(*job));
    struct core_job *prev;

    memset(job, 0, sizeof(*job));
    job->message = m;
    job->transport = t;
    job->stack_level = -1;
    TAILQ_INIT(&job->peers);
    TAILQ_INIT(&job->stack_children);
    TAILQ_FOREACH_REVERSE(prev, &t->jobs_bytime, core_job_list, bytime) {
        if (prev->message->queued <= m->queued)
            break;
    }
    if (prev)
        TAILQ_INSERT_AFTER(&t->jobs_bytime, prev, job, bytime);
    else
        TAILQ_INSERT_HEAD(&t->jobs_bytime, job, bytime);
    return job;
}

void core_job_free(struct core_job *job)
{
    struct core_transport *t = job->transport;

    if (job->stack_level >= 0)
        core_job_retire(job);
    core_rcpt_move_limits(job); /* and off next_unread */
    if (t->next_unread == job)
        t->next_unread = TAILQ_NEXT(job, bytime);
    if (job->rcpt_limit != 0 && job->message->rcpt_count == 0)
        core_panic(t->core, "job %llu: %ld recipient slots leak",
                   (unsigned long long)job->message->id, job->rcpt_limit);
    TAILQ_REMOVE(&t->jobs_bytime, job, bytime);
    free(job);
}

void core_candidate_reset(struct core_transport *t)
{
    t->candidate_valid = 0;
    t->candidate = t->candidate_for = NULL;
}

/* Put a job on the scheduler's list, by age, among jobs on level 0. */
static void job_link(struct core_job *job)
{
    struct core_transport *t = job->transport;
    struct core_job *prev, *current = t->current;

    TAILQ_FOREACH_REVERSE(prev, &t->jobs, core_job_list, list) {
        if (prev->stack_parent == NULL &&
            prev->message->queued <= job->message->queued)
            break;
        if (prev == current)
            current = NULL;
    }
    if (prev)
        TAILQ_INSERT_AFTER(&t->jobs, prev, job, list);
    else
        TAILQ_INSERT_HEAD(&t->jobs, job, list);
    job->stack_level = 0;
    if (current == NULL)
        t->current = job;
    core_rcpt_job_linked(job);
}

void core_job_entry_added(struct core_job *job)
{
    struct core_transport *t = job->transport;

    job->read_entries++;
    if (job->stack_level < 0)
        job_link(job);
    /*
     * A blocker that gains an entry may be selectable again, and it may
     * stand before the current job, where selection would never look:
     * unmark it and start again at the head, as the reference does
     * (the walk skips the other blockers at the cost of a compare).
     */
    if (CORE_JOB_BLOCKER_P(job)) {
        job->blocker_tag = 0;
        t->current = TAILQ_FIRST(&t->jobs);
    }
    if (t->current == NULL)
        t->current = TAILQ_FIRST(&t->jobs);
    core_candidate_reset(t);
}

/* Nothing left to select: off the list, unless more may be read. */
static void job_retire_if_done(struct core_job *job)
{
    if (job->stack_level >= 0 && job->selected_entries >= job->read_entries &&
        job->message->rcpt_unread == 0)
        core_job_retire(job);
}

void core_job_entry_dropped(struct core_job *job)
{
    job->read_entries--;
    job_retire_if_done(job);
}

void core_job_entry_selected(struct core_job *job)
{
    if (++job->selected_entries > job->read_entries)
        core_panic(job->transport->core, "job %llu: selected %d of %d entries",
                   (unsigned long long)job->message->id, job->selected_entries,
                   job->read_entries);
    job->slots_available++;
    job->slots_used++;
    job_retire_if_done(job);
}

void core_job_unstack(struct core_job *job)
{
    struct core_transport *t = job->transport;
    struct core_job *parent = job->stack_parent;
    struct core_job *child;

    if (parent) {
        /*
         * slots_used is used minus expected: unused slots go back, but
         * only to the job this one preempted (one level up). An adoptive
         * parent did not pay for the preemption, and a refund would let
         * it preempt sooner than its own deliveries earned, which is
         * what keeps the inflation bound (the reference does the same).
         */
        if (job->stack_level == parent->stack_level + 1)
            parent->slots_available -= job->slots_used * t->params.slot_cost;
        TAILQ_REMOVE(&parent->stack_children, job, stack_siblings);
        job->stack_parent = NULL;
    }
    while ((child = TAILQ_FIRST(&job->stack_children)) != NULL) {
        TAILQ_REMOVE(&job->stack_children, child, stack_siblings);
        child->stack_parent = parent;
        if (parent)
            TAILQ_INSERT_TAIL(&parent->stack_children, child, stack_siblings);
    }
    job->stack_level = 0;
    core_candidate_reset(t);
}

void core_job_retire(struct core_job *job)
{
    struct core_transport *t = job->transport;

    if (t->current == job)
        t->current = TAILQ_NEXT(job, list);
    core_job_unstack(job);
    TAILQ_REMOVE(&t->jobs, job, list);
    job->stack_level = -1;
    job->blocker_tag = 0;
    core_rcpt_move_limits(job);
}

void core_job_block(struct core_job *job)
{
    struct core_transport *t = job->transport;
    struct core_peer *peer;

    job->blocker_tag = t->blocker_tag;
    TAILQ_FOREACH(peer, &job->peers, link) {
        if (!TAILQ_EMPTY(&peer->todo) && !core_queue_open(peer->queue))
            peer->queue->blocker_tag = t->blocker_tag;
    }
    if (t->candidate == job)
        core_candidate_reset(t);
}

void core_queue_unblock(struct core_queue *q)
{
    struct core_transport *t = q->transport;

    if (q->blocker_tag != t->blocker_tag)
        return;
    if (core_queue_open(q) && q->todo_count > 0) {
        t->blocker_tag += 2;
        t->current = TAILQ_FIRST(&t->jobs);
        core_candidate_reset(t);
    }
    if (core_queue_open(q) || q->state == CORE_QUEUE_DEAD)
        q->blocker_tag = 0;
}
