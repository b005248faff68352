/*
 * NAME
 *	transport 3 - delivery transports and their destination queues
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	void	core_transport_params_init(struct core_transport_params *p)
 *	struct core_transport *core_transport_create(struct core *core,
 *			const char *name, const struct core_transport_params *p)
 *	struct core_transport *core_transport_find(struct core *core,
 *			const char *name)
 *	void	core_transport_update(struct core_transport *t,
 *			const struct core_transport_params *p)
 *	void	core_transport_suspend(struct core_transport *t,
 *			core_time_t now, core_time_t duration,
 *			const char *reason)
 *	void	core_transport_resume(struct core_transport *t)
 *
 *	struct core_transport *core_transport_next(const struct core *core,
 *			const struct core_transport *t)
 *	const char *core_transport_name(const struct core_transport *t)
 *	const struct core_job_policy *core_transport_scheduler(
 *			const struct core_transport *t)
 *	size_t	core_transport_queue_count(const struct core_transport *t)
 * DESCRIPTION
 *	core_transport_params_init() fills p with the reference defaults
 *	(initial concurrency 5, limit 20, feedback 1 both ways, cohort
 *	limit 1, seed rounding, no rate delays, 300s dead backoff, process
 *	limit 100, 50 recipients per entry, slot cost 5, loan 3, discount
 *	50 %, minimum slots 3, a recipient pool of 20000 with 1000 extra,
 *	refill at 100 free slots or after 5 s, the preemptive scheduler).
 *	Callers with a
 *	configuration overwrite what it sets.
 *
 *	core_transport_create() adds a transport with a copy of p, using
 *	the feedback concurrency policy and p's job selection policy; the
 *	name must be new.
 *	core_transport_find() returns the transport of that name or NULL.
 *
 *	core_transport_update() gives a live transport new parameters (a
 *	configuration reload). They apply from the next decision on: a
 *	queue whose window is above the new concurrency limit comes down
 *	to it at once, since the limit is the operator's promise to the
 *	receiver (deliveries in flight finish; no new one starts until
 *	busy is below the window); dead and rate-delayed queues keep their
 *	state and timers; new queues start at the new initial window. The
 *	job selection policy is kept: its state lives in the job list,
 *	and a different one takes effect when the transport is created
 *	again (at the next start).
 *
 *	core_transport_suspend() is for a transport that cannot work at
 *	all (its delivery agent cannot reach what it needs: a local LMTP
 *	socket that is missing), the reference's transport_retry_time: for
 *	duration, nothing starts on it, every entry waiting on any of its
 *	queues is deferred through the entry_deferred callback with reason,
 *	and core_message_add() refuses new recipients for it, as for a dead
 *	destination. The delivery that found out ends with
 *	CORE_HOP_NEUTRAL, which is no feedback for its destination. The
 *	suspension is logged, and so is its end: when the time is up, or on
 *	core_transport_resume() (a flush).
 *
 *	A transport may start a delivery while it is below its process
 *	limit (0 = no limit) and not paused by its rate delay. A transport
 *	rate delay means one delivery at a time and a pause of that length
 *	after each one, whatever the destination, as the reference does.
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

void core_transport_params_init(struct core_transport_params *p)
{
    memset(p, 0, sizeof(*p));
    p->initial_concurrency = 5;
    p->concurrency_limit = 20;
    p->positive.form = CORE_FEEDBACK_CONSTANT;
    p->positive.value = 1;
    p->negative.form = CORE_FEEDBACK_CONSTANT;
    p->negative.value = 1;
    p->failed_cohort_limit = 1;
    p->rounding = CORE_ROUNDING_SEED;
    p->dead_backoff = 300 * 1000;
    p->process_limit = 100;
    p->recipient_limit = 50;
    p->slot_cost = 5;
    p->slot_loan = 3;
    p->slot_discount = 50;
    p->min_slots = 3;
    p->rcpt_pool = 20000;
    p->rcpt_extra = 1000;
    p->refill_limit = 100;
    p->refill_delay = 5000;
    p->scheduler = &core_policy_preemptive;
}

static void transport_rate_wait_end(struct core *core, struct core_timer *timer,
                                    core_time_t now)
{
    struct core_transport *t =
        (struct core_transport *)((char *)timer -
                                  offsetof(struct core_transport, timer));

    (void)core;
    (void)now;
    t->rate_wait = 0;
}

static void transport_suspend_end(struct core *core, struct core_timer *timer,
                                  core_time_t now)
{
    struct core_transport *t =
        (struct core_transport *)((char *)timer -
                                  offsetof(struct core_transport,
                                           suspend_timer));

    (void)core;
    (void)now;
    core_transport_resume(t);
}

struct core_transport *
core_transport_create(struct core *core, const char *name,
                      const struct core_transport_params *p)
{
    struct core_transport *t;

    if (core_transport_find(core, name))
        core_panic(core, "transport %s: created twice", name);
    if (p->initial_concurrency < 1)
        core_panic(core, "transport %s: initial concurrency %d < 1", name,
                   p->initial_concurrency);
    t = xmalloc(sizeof(*t));
    memset(t, 0, sizeof(*t));
    t->name = xstrdup(name);
    t->core = core;
    t->params = *p;
    t->policy = &core_policy_feedback;
    t->scheduler = p->scheduler ? p->scheduler : &core_policy_preemptive;
    t->timer.fire = transport_rate_wait_end;
    t->suspend_timer.fire = transport_suspend_end;
    t->blocker_tag = 1;
    TAILQ_INIT(&t->queues);
    TAILQ_INIT(&t->jobs);
    TAILQ_INIT(&t->jobs_bytime);
    t->rcpt_unused = p->rcpt_pool;
    t->hash_size = 64;
    t->hash = xcalloc(t->hash_size, sizeof(*t->hash));
    t->next = core->transports;
    core->transports = t;
    return t;
}

void core_transport_update(struct core_transport *t,
                           const struct core_transport_params *p)
{
    struct core_queue *q;
    int limit;

    if (p->initial_concurrency < 1)
        core_panic(t->core, "transport %s: initial concurrency %d < 1", t->name,
                   p->initial_concurrency);
    t->rcpt_unused += p->rcpt_pool - t->params.rcpt_pool;
    t->params = *p;
    t->params.scheduler = t->scheduler;
    TAILQ_FOREACH(q, &t->queues, link) {
        limit = core_queue_limit(q);
        if (limit > 0 && q->window > limit)
            q->window = limit;
        core_queue_ready_update(q);
    }
}

struct core_transport *core_transport_find(struct core *core, const char *name)
{
    struct core_transport *t;

    for (t = core->transports; t; t = t->next)
        if (strcmp(t->name, name) == 0)
            return t;
    return NULL;
}

void core_transport_free(struct core_transport *t)
{
    struct core_queue *q;

    while ((q = TAILQ_FIRST(&t->queues)) != NULL)
        core_queue_destroy(q);
    core_timer_disarm(t->core, &t->timer);
    core_timer_disarm(t->core, &t->suspend_timer);
    free(t->suspend_reason);
    free(t->hash);
    free(t->name);
    free(t);
}

void core_transport_suspend(struct core_transport *t, core_time_t now,
                            core_time_t duration, const char *reason)
{
    struct core_queue *q;

    free(t->suspend_reason);
    t->suspend_reason = xstrdup(reason ? reason : "transport unavailable");
    if (!t->suspended)
        core_log(t->core, CORE_LOG_INFO,
                 "%s: transport suspended for %llds: %s", t->name,
                 (long long)(duration / 1000), t->suspend_reason);
    t->suspended = 1;
    core_timer_arm(t->core, &t->suspend_timer, now + duration);
    TAILQ_FOREACH(q, &t->queues, link)
        core_queue_defer_todo(q, t->suspend_reason, now);
}

void core_transport_resume(struct core_transport *t)
{
    if (!t->suspended)
        return;
    t->suspended = 0;
    free(t->suspend_reason);
    t->suspend_reason = NULL;
    core_timer_disarm(t->core, &t->suspend_timer);
    core_log(t->core, CORE_LOG_INFO, "%s: transport resumed", t->name);
}

int core_transport_can_start(const struct core_transport *t)
{
    int limit = t->params.process_limit;

    if (t->rate_wait || t->suspended)
        return 0;
    if (t->params.transport_rate_delay > 0)
        limit = 1;
    return limit == 0 || t->busy < limit;
}

void core_transport_start(struct core_transport *t)
{
    if (!core_transport_can_start(t))
        core_panic(t->core, "transport %s: start with busy %d, limit %d%s",
                   t->name, t->busy, t->params.process_limit,
                   t->rate_wait ? ", rate-delayed" : "");
    t->busy++;
}

void core_transport_done(struct core_transport *t, core_time_t now)
{
    if (t->busy <= 0)
        core_panic(t->core, "transport %s: done with busy %d", t->name,
                   t->busy);
    t->busy--;
    if (t->params.transport_rate_delay > 0) {
        t->rate_wait = 1;
        core_timer_arm(t->core, &t->timer,
                       now + t->params.transport_rate_delay);
    }
}

struct core_transport *core_transport_next(const struct core *core,
                                           const struct core_transport *t)
{
    return t ? t->next : core->transports;
}

const char *core_transport_name(const struct core_transport *t)
{
    return t->name;
}

const struct core_job_policy *
core_transport_scheduler(const struct core_transport *t)
{
    return t->scheduler;
}

size_t core_transport_queue_count(const struct core_transport *t)
{
    return t->queue_count;
}
