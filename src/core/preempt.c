/*
 * NAME
 *	preempt 3 - the preemptive job selection policy (the seed's nqmgr)
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	const struct core_job_policy core_policy_preemptive
 * DESCRIPTION
 *	Entry selection ("How the entry selection works"): starting at the
 *	current job (the job of the last selection, normally the head of
 *	the scheduler's job list), skip blocker jobs and take the first
 *	waiting entry of the first peer, round-robin within the job, whose
 *	destination may start a delivery. A job that has waiting entries
 *	but none selectable becomes a blocker. Every selection adds one to
 *	the job's slots_available; when used, that counter is divided by
 *	the slot cost k ("the counter is incremented every time an entry is
 *	selected and it is divided by k when it is used").
 *
 *	Before selecting, the current job may be preempted ("How the
 *	preemption works"), unless k < 2, it has no slots yet, or it could
 *	never accumulate minimum_delivery_slots. The candidate is the job
 *	after it on the list, not a blocker and not already preempted by
 *	another, with the best (now - queued + 1) / entries ("the older the
 *	job is, the more we should try to deliver it", per entry), among
 *	those that need between 1 and max_slots more entries, where max_slots
 *	is what the current job can still accumulate: (entries - selected +
 *	available) / k. Looking only among jobs that fit in what the current
 *	job may yet accumulate, rather than what it has, is what lets bigger
 *	jobs get a turn instead of one-recipient mail always winning. The
 *	result, including "none", is cached for the current job and the
 *	second.
 *
 *	The candidate preempts when available / k + loan >= needed *
 *	(100 - discount) / 100: the loan and the discount only let the
 *	preemption happen sooner, the full needed * k slots are charged to
 *	the current job at once (so that a job preempted by several jobs at
 *	a time does not spend the same slots twice), and what the preemptor
 *	does not use goes back when it leaves the stack (core_job_unstack()).
 *	The candidate moves in front of the current job and becomes its
 *	child on the preemption stack.
 *
 *	Entry counts are estimates while a message has recipients not yet
 *	read (rcpt.c): the minimum is the entries read so far, the maximum
 *	adds one entry per unread recipient (job_min_entries(),
 *	job_max_entries(), the reference's MIN_ENTRIES and MAX_ENTRIES).
 */

#include "core/core.h"

#include "core/core_impl.h"

#include <limits.h>

/*
 * The fewest and the most entries a job can end up with: its entries so
 * far, and as many again as its message has unread recipients (each may
 * go to this transport, each to a destination of its own). The minimum
 * cannot count them: they may all go to other transports.
 */
static int job_min_entries(const struct core_job *job)
{
    return job->read_entries;
}

static int job_max_entries(const struct core_job *job)
{
    long max = job->read_entries + job->message->rcpt_unread;

    return max > INT_MAX ? INT_MAX : (int)max;
}

static struct core_job *job_candidate(struct core_job *current, core_time_t now)
{
    struct core_transport *t = current->transport;
    core_time_t sec = now / 1000;
    struct core_job *job, *best = NULL;
    double score, best_score = 0;
    int max_slots;

    if (t->candidate_valid && t->candidate_for == current &&
        (t->candidate_sec == sec || t->candidate == NULL))
        return t->candidate;
    max_slots = (job_min_entries(current) - current->selected_entries +
                 current->slots_available) /
                t->params.slot_cost;
    if (max_slots > 0) {
        for (job = TAILQ_NEXT(current, list); job;
             job = TAILQ_NEXT(job, list)) {
            int total, needed;
            core_time_t delay;

            if (!TAILQ_EMPTY(&job->stack_children) || CORE_JOB_BLOCKER_P(job))
                continue;
            total = job_max_entries(job);
            needed = total - job->selected_entries;
            delay = sec - job->message->queued / 1000 + 1;
            if (needed > 0 && needed <= max_slots) {
                score = (double)delay / total;
                if (score > best_score) {
                    best_score = score;
                    best = job;
                }
            }
            /* Later jobs are younger: none can beat delay / 1. */
            if (delay <= best_score && job->stack_level == 0)
                break;
        }
    }
    t->candidate = best;
    t->candidate_for = current;
    t->candidate_sec = sec;
    t->candidate_valid = 1;
    return best;
}

static struct core_job *job_preempt(struct core_job *current, core_time_t now)
{
    struct core_transport *t = current->transport;
    const struct core_transport_params *p = &t->params;
    struct core_job *job;
    int expected;

    if (current->slots_available <= 0 ||
        job_max_entries(current) < p->min_slots * p->slot_cost)
        return current;
    if ((job = job_candidate(current, now)) == NULL)
        return current;
    if (job == current || !TAILQ_EMPTY(&job->stack_children) ||
        job->stack_level < 0)
        core_panic(t->core, "transport %s: bad preemption candidate (level %d)",
                   t->name, job->stack_level);
    expected = job_max_entries(job) - job->selected_entries;
    if (current->slots_available / p->slot_cost + p->slot_loan <
        expected * (100 - p->slot_discount) / 100.0)
        return current;

    if (job->stack_level > 0)
        core_job_unstack(job);
    TAILQ_REMOVE(&t->jobs, job, list);
    TAILQ_INSERT_BEFORE(current, job, list);
    job->stack_parent = current;
    TAILQ_INSERT_TAIL(&current->stack_children, job, stack_siblings);
    job->stack_level = current->stack_level + 1;
    t->current = job;
    core_candidate_reset(t);
    current->slots_available -= expected * p->slot_cost;
    job->slots_used = -expected;
    core_rcpt_preempted(job);
    core_log(t->core, CORE_LOG_DEBUG,
             "%s: message %llu preempted by message %llu, level %d", t->name,
             (unsigned long long)current->message->id,
             (unsigned long long)job->message->id, job->stack_level);
    return job;
}

/* The first peer of the job, round-robin, that may deliver now. */
static struct core_peer *job_peer_find(struct core_job *job)
{
    struct core_peer *peer;

    TAILQ_FOREACH(peer, &job->peers, link) {
        if (!TAILQ_EMPTY(&peer->todo) && core_queue_open(peer->queue)) {
            TAILQ_REMOVE(&job->peers, peer, link);
            TAILQ_INSERT_TAIL(&job->peers, peer, link);
            return peer;
        }
    }
    return NULL;
}

/*
 * As job_peer_find(), reading more recipients of the job's message when
 * none of its entries can go and it has slots for more: not sooner, so
 * that recipients still group per destination into few entries.
 */
static struct core_peer *job_peer_select(struct core_job *job, core_time_t now)
{
    struct core_peer *peer = job_peer_find(job);
    struct core_message *m = job->message;

    if (peer == NULL && m->released && m->rcpt_unread > 0 &&
        m->rcpt_limit > m->rcpt_count && core_rcpt_more(m, now, 0) > 0)
        peer = job_peer_find(job);
    return peer;
}

static struct core_entry *preemptive_select(struct core_transport *t,
                                            core_time_t now)
{
    struct core_job *job, *next;
    struct core_peer *peer;

    if ((job = t->current) == NULL)
        return NULL;
    if (!CORE_JOB_BLOCKER_P(job) && t->params.slot_cost >= 2)
        job = t->current = job_preempt(job, now);
    for (; job; job = next) {
        next = TAILQ_NEXT(job, list);
        if (CORE_JOB_BLOCKER_P(job))
            continue;
        if ((peer = job_peer_select(job, now)) != NULL) {
            struct core_entry *e = TAILQ_FIRST(&peer->todo);

            t->current = job;
            core_entry_start(e, now);
            return e;
        }
        if (job->selected_entries < job->read_entries)
            core_job_block(job);
        else /* stalled: nothing here until more is read */
            core_job_retire(job);
    }
    t->current = NULL;
    return NULL;
}

const struct core_job_policy core_policy_preemptive = {
    .name = "preemptive",
    .select = preemptive_select,
};
