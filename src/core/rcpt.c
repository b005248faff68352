/*
 * NAME
 *	rcpt 3 - recipient memory limits: batches, slot pools, estimates
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	void	core_recipient_limits_set(struct core *core,
 *			long message_limit, long minimum)
 *	long	core_message_read_limit(const struct core_message *m)
 *	void	core_message_unread_set(struct core_message *m, long unread)
 *	long	core_recipient_count(const struct core *core)
 *
 *	#include "core/core_impl.h"
 *
 *	void	core_rcpt_job_linked(struct core_job *job)
 *	void	core_rcpt_move_limits(struct core_job *job)
 *	void	core_rcpt_preempted(struct core_job *job)
 *	void	core_rcpt_read_done(struct core_message *m)
 *	long	core_rcpt_more(struct core_message *m, core_time_t now,
 *			long max)
 *	int	core_rcpt_refill_due(const struct core_message *m,
 *			const struct core_transport *t, core_time_t now)
 * DESCRIPTION
 *	"Dealing with memory resource limits" in the seed. Not every
 *	recipient of every active message is in core: the caller reads a
 *	message's recipients in batches, when core/ asks (the message_more
 *	callback), and says how many are still unread
 *	(core_message_unread_set()). core/ decides how many each batch may
 *	hold, from pools of recipient slots, so that the recipients in core
 *	stay below the seed's bounds: per transport at most
 *	max(minimum * active messages + _recipient_limit +
 *	_extra_recipient_limit, qmgr_message_recipient_limit).
 *
 *	core_recipient_limits_set() sets qmgr_message_recipient_limit and
 *	qmgr_message_recipient_minimum (defaults 20000 and 10).
 *
 *	core_message_read_limit() says how many recipients of m the caller
 *	may read now. The first batch of a message, before it has any job,
 *	comes from the global pool: what qmgr_message_recipient_limit
 *	leaves of the recipients in core, and at least the minimum. Later
 *	batches are bounded by the message's own slots (rcpt_limit: the
 *	minimum, which always applies, plus its jobs' slots) less the
 *	recipients it holds: the seed's example, jobs with 1, 5 and 2
 *	recipients in core and 4, 5 and 0 slots, may read 2 + minimum more.
 *	A batch is at most 5000, as in the reference, so that one read
 *	does not hold up the loop.
 *
 *	Each transport has a pool of _recipient_limit slots. A job that is
 *	linked onto the job list takes the whole unused pool
 *	(core_rcpt_job_linked()); it keeps the slots while its message has
 *	unread recipients, and core_rcpt_move_limits() hands those it does
 *	not need (its unused slots, no more than the message's) back to the
 *	pool and on to the first job, by enqueue time, whose message is
 *	still unread, every time one of its entries is done, when it
 *	retires, and when its message has been read completely
 *	(core_rcpt_read_done()). A job linked in front of the first unread
 *	job takes that role, and the old one gives back what it does not
 *	need. The jobs of one message lend their slots to the message as a
 *	whole (sponsorship): a batch may go to any of them.
 *
 *	An unread job that preempts the current job gets half of what is
 *	left of the pool and of the _extra_recipient_limit reserve
 *	(core_rcpt_preempted()), so that the new current job does not read
 *	its recipients a minimum at a time; the pool may go below zero by
 *	at most the reserve.
 *
 *	core_rcpt_more() asks the caller for up to max more recipients of m
 *	(at most the read limit) and returns how many came.
 *	core_rcpt_refill_due() is the reference's refill rule for a message
 *	whose entry on transport t is done: read more when it has unread
 *	recipients and either _recipient_refill_limit slots are free or any
 *	slot is free and _recipient_refill_delay has passed since the last
 *	batch.
 */

#include "core/core.h"

#include "core/core_impl.h"

#define READ_MAX 5000 /* recipients per batch, at most */

void core_recipient_limits_set(struct core *core, long message_limit,
                               long minimum)
{
    core->msg_rcpt_limit = message_limit;
    core->msg_rcpt_minimum = minimum;
}

long core_recipient_count(const struct core *core)
{
    return core->rcpt_count;
}

long core_message_read_limit(const struct core_message *m)
{
    long n;

    if (m->reads == 0) {
        n = m->core->msg_rcpt_limit - m->core->rcpt_count;
        if (n < m->rcpt_limit)
            n = m->rcpt_limit;
    } else {
        n = m->rcpt_limit - m->rcpt_count;
    }
    if (n > READ_MAX)
        n = READ_MAX;
    return n > 0 ? n : 0;
}

void core_message_unread_set(struct core_message *m, long unread)
{
    struct core_job *job;

    m->rcpt_unread = unread > 0 ? unread : 0;
    m->reads++;
    /* MAX_ENTRIES changed: every candidate cache of its jobs is stale. */
    for (job = m->jobs; job; job = job->next_of_message)
        core_candidate_reset(job->transport);
    if (m->rcpt_unread == 0)
        core_rcpt_read_done(m);
}

void core_rcpt_read_done(struct core_message *m)
{
    struct core_job *job;

    for (job = m->jobs; job; job = job->next_of_message)
        core_rcpt_move_limits(job);
}

/* Move n slots from the pool to job (and so to its message). */
static void slots_give(struct core_job *job, long n)
{
    job->rcpt_limit += n;
    job->message->rcpt_limit += n;
    job->transport->rcpt_unused -= n;
}

void core_rcpt_job_linked(struct core_job *job)
{
    struct core_transport *t = job->transport;
    struct core_job *old = t->next_unread;

    /* In front of the first unread job (by enqueue time): take its role. */
    if (old == NULL || old->message->queued > job->message->queued) {
        t->next_unread = job;
        if (old != NULL)
            core_rcpt_move_limits(old);
    }
    if (t->rcpt_unused > 0)
        slots_give(job, t->rcpt_unused);
}

void core_rcpt_move_limits(struct core_job *job)
{
    struct core_transport *t = job->transport;
    struct core_message *m = job->message;
    struct core_job *next = t->next_unread;
    long unused = job->rcpt_limit - job->rcpt_count;

    /* The next unread job, found along the list that never reorders;
     * cached, so that this is O(1) amortized per job. */
    if (job == next) {
        for (next = TAILQ_NEXT(next, bytime); next;
             next = TAILQ_NEXT(next, bytime))
            if (next->message->rcpt_unread > 0)
                break;
        t->next_unread = next;
    }
    if (m->rcpt_limit - m->rcpt_count < unused)
        unused = m->rcpt_limit - m->rcpt_count;
    if (unused <= 0)
        return;
    slots_give(job, -unused);
    if (next != NULL && t->rcpt_unused > 0)
        slots_give(next, t->rcpt_unused);
}

void core_rcpt_preempted(struct core_job *job)
{
    struct core_transport *t = job->transport;

    if (job->message->rcpt_unread > 0)
        slots_give(job, (t->params.rcpt_extra + t->rcpt_unused + 1) / 2);
}

long core_rcpt_more(struct core_message *m, core_time_t now, long max)
{
    struct core *core = m->core;
    long limit = core_message_read_limit(m);

    if (m->rcpt_unread <= 0 || core->cb.message_more == NULL)
        return 0;
    if (max <= 0 || max > limit)
        max = limit;
    if (max <= 0)
        return 0;
    m->refill_time = now;
    return core->cb.message_more(core->ctx, m, max);
}

int core_rcpt_refill_due(const struct core_message *m,
                         const struct core_transport *t, core_time_t now)
{
    long free_slots = m->rcpt_limit - m->rcpt_count;

    if (m->rcpt_unread <= 0 || free_slots <= 0)
        return 0;
    return free_slots >= t->params.refill_limit ||
           now - m->refill_time >= t->params.refill_delay;
}
