/*
 * NAME
 *	queue 3 - destination queues: windows, deliveries, dead destinations
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core_queue *core_queue_create(struct core_transport *t,
 *			const char *key)
 *	struct core_queue *core_queue_find(struct core_transport *t,
 *			const char *key)
 *	void	core_queue_free(struct core_queue *q)
 *	int	core_queue_can_start(const struct core_queue *q)
 *	void	core_queue_start(struct core_queue *q, core_time_t now)
 *	void	core_queue_done(struct core_queue *q, core_time_t now,
 *			enum core_hop hop, const char *reason)
 *	void	core_queue_flush(struct core_queue *q, core_time_t now)
 *	int	core_queue_window_report(const struct core_queue *q)
 *	void	core_queue_cap_set(struct core_queue *q, int cap)
 *	int	core_queue_cache_store(const struct core_queue *q)
 *
 *	struct core_queue *core_queue_next(const struct core_transport *t,
 *			const struct core_queue *q)
 *	const char *core_queue_key(const struct core_queue *q)
 *	struct core_transport *core_queue_transport(const struct core_queue *q)
 *	void	*core_queue_ctx(const struct core_queue *q)
 *	void	core_queue_ctx_set(struct core_queue *q, void *ctx)
 *	int	core_queue_busy(const struct core_queue *q)
 *	int	core_queue_todo(const struct core_queue *q)
 *	int	core_queue_dead(const struct core_queue *q)
 *	const char *core_queue_refusal(const struct core_queue *q)
 *	int	core_queue_release(struct core_queue *q, void **ctx)
 *	void	core_queue_kill(struct core_queue *q, core_time_t now,
 *			core_time_t revive_at, const char *reason,
 *			const char *how)
 *	void	core_queue_revive(struct core_queue *q, const char *how)
 * DESCRIPTION
 *	A destination queue holds the concurrency state of one next hop of
 *	one transport. It starts with the transport's initial concurrency
 *	as its window (1 under a destination rate delay, which makes the
 *	reference deliver one at a time with a pause after each delivery).
 *
 *	core_queue_done() applies the hop status of a finished delivery
 *	in the order of the seed's pseudocode:
 *
 *	A success clears fail_cohorts and, if the queue was dead, brings it
 *	back ("back from the almost grave, best concurrency is anyone's
 *	guess": the window becomes the number of deliveries still in
 *	flight, or the initial concurrency if none); otherwise it is
 *	positive feedback for the concurrency policy.
 *
 *	A failure of a live queue first counts toward dead-destination
 *	detection, which is separate from feedback: each failure adds
 *	1/window to fail_cohorts, so a whole pseudo-cohort of failures (as
 *	many as the window) adds 1, and the destination is declared dead
 *	when fail_cohorts reaches failed_cohort_limit (0 disables this).
 *	The seed's pseudocode writes "fail_cohorts > limit" while its text
 *	says "after a configurable number of pseudo-cohorts" and that limit
 *	1 is the old scheduler, which died after one whole pseudo-cohort;
 *	only ">=" makes both true, and it is what the reference does (see
 *	doc/decisions.md). A queue that survives gets negative feedback.
 *
 *	Feedback is applied while the finished delivery still counts as
 *	busy, as the reference does, so the seed's safety rule (no
 *	positive feedback unless window < busy + initial) sees it.
 *
 *	A dead queue starts nothing; its revival timer fires after the
 *	transport's dead_backoff (minimal_backoff_time). core_queue_flush()
 *	revives a dead queue at once; on a live one it does nothing.
 *
 *	core_queue_cap_set() caps the deliveries in flight below the
 *	window, whatever the window says (cap < 0: no cap, the default):
 *	a cluster's connection leases (cluster/) are the cap, so that the
 *	window's feedback stays local while the limit is the cluster's.
 *
 *	core_queue_window_report() is the window as the reference shows
 *	it: 0 for a dead queue, -1 while paused by a rate delay.
 *
 *	core_queue_cache_store() says whether the delivery just started
 *	(core_queue_start()) should keep its connection for the next one
 *	when it ends: the reference's on-demand session caching. It turns
 *	on when a delivery starts in the same or the next whole second as
 *	the queue's last delivery ended (back to back), and off when one
 *	starts with no other in flight and not back to back. A burst no
 *	larger than the window thus leaves no idle connection behind.
 */

#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

#define QUEUE_OF_TIMER(timer)                                                  \
    ((struct core_queue *)((char *)(timer)-offsetof(struct core_queue, timer)))

static void queue_hash_grow(struct core_transport *t)
{
    size_t size = t->hash_size * 2;
    struct core_queue **hash = xcalloc(size, sizeof(*hash));
    struct core_queue *q;

    TAILQ_FOREACH(q, &t->queues, link) {
        size_t slot = core_hash(q->key, size);

        q->hash_next = hash[slot];
        hash[slot] = q;
    }
    free(t->hash);
    t->hash = hash;
    t->hash_size = size;
}

int core_queue_limit(const struct core_queue *q)
{
    const struct core_transport_params *p = &q->transport->params;

    return p->destination_rate_delay > 0 ? 1 : p->concurrency_limit;
}

static int queue_initial_window(const struct core_queue *q)
{
    int limit = core_queue_limit(q);
    int initial = q->transport->params.initial_concurrency;

    return limit > 0 && initial > limit ? limit : initial;
}

static void queue_timer_fire(struct core *core, struct core_timer *timer,
                             core_time_t now);

struct core_queue *core_queue_create(struct core_transport *t, const char *key)
{
    struct core_queue *q;
    size_t slot;

    if (core_queue_find(t, key))
        core_panic(t->core, "queue %s:%s: created twice", t->name, key);
    if (t->queue_count >= t->hash_size)
        queue_hash_grow(t);
    q = xmalloc(sizeof(*q));
    memset(q, 0, sizeof(*q));
    q->key = xstrdup(key);
    q->transport = t;
    q->state = CORE_QUEUE_READY;
    q->window = queue_initial_window(q);
    q->last_done = -1;
    q->cap = -1;
    q->timer.fire = queue_timer_fire;
    TAILQ_INIT(&q->todo);
    TAILQ_INIT(&q->busy_list);
    TAILQ_INSERT_TAIL(&t->queues, q, link);
    slot = core_hash(key, t->hash_size);
    q->hash_next = t->hash[slot];
    t->hash[slot] = q;
    t->queue_count++;
    return q;
}

struct core_queue *core_queue_find(struct core_transport *t, const char *key)
{
    struct core_queue *q;

    for (q = t->hash[core_hash(key, t->hash_size)]; q; q = q->hash_next)
        if (strcmp(q->key, key) == 0)
            return q;
    return NULL;
}

/* Free the entries of a queue without any bookkeeping (core_free()). */
void core_queue_drop_entries(struct core_queue *q)
{
    struct core_entry *e;

    while ((e = TAILQ_FIRST(&q->todo)) != NULL ||
           (e = TAILQ_FIRST(&q->busy_list)) != NULL) {
        if (e->busy)
            TAILQ_REMOVE(&q->busy_list, e, queue_link);
        else
            TAILQ_REMOVE(&q->todo, e, queue_link);
        core_entry_free_rcpts(e);
        free(e);
    }
    q->todo_count = 0;
    core_queue_ready_update(q);
}

/* Free a queue, and with it any entries it still has. */
void core_queue_destroy(struct core_queue *q)
{
    struct core_transport *t = q->transport;
    struct core_queue **pp;

    core_queue_drop_entries(q);
    for (pp = &t->hash[core_hash(q->key, t->hash_size)]; *pp != q;
         pp = &(*pp)->hash_next)
        ;
    *pp = q->hash_next;
    TAILQ_REMOVE(&t->queues, q, link);
    t->queue_count--;
    core_timer_disarm(t->core, &q->timer);
    free(q->dead_reason);
    free(q->key);
    free(q);
}

void core_queue_free(struct core_queue *q)
{
    if (q->busy != 0 || q->todo_count != 0)
        core_panic(q->transport->core,
                   "queue %s:%s: freed with %d busy, %d waiting",
                   q->transport->name, q->key, q->busy, q->todo_count);
    core_queue_destroy(q);
}

int core_queue_open(const struct core_queue *q)
{
    return q->state == CORE_QUEUE_READY && q->busy < q->window &&
           (q->cap < 0 || q->busy < q->cap);
}

void core_queue_cap_set(struct core_queue *q, int cap)
{
    q->cap = cap;
    core_queue_ready_update(q);
}

/*
 * Keep the transport's count of queues that could give an entry now, as
 * Postfix's transport selection asks ("window > busy and todo"): with
 * none, the job list need not be walked to find nothing.
 */
void core_queue_ready_update(struct core_queue *q)
{
    int ready = q->todo_count > 0 && core_queue_open(q);

    if (ready != q->ready) {
        q->ready = ready;
        q->transport->ready_queues += ready ? 1 : -1;
    }
}

int core_queue_can_start(const struct core_queue *q)
{
    return core_queue_open(q) && core_transport_can_start(q->transport);
}

/*
 * The reference's deliveries back to back: one starts in the second a
 * delivery of the queue ended, or in the next (its clock is whole
 * seconds: "last_done + 1 >= event_time()").
 */
static int queue_back_to_back(const struct core_queue *q, core_time_t now)
{
    return q->last_done >= 0 && q->last_done / 1000 + 1 >= now / 1000;
}

/*
 * On-demand session caching, as the reference's qmgr_entry_select()
 * decides it for each delivery it starts (busy already counts that
 * one). Caching turns on at a delivery back to back with the previous
 * one, not merely at concurrent ones, so that a burst no larger than
 * the initial window leaves no idle connections behind; it stays on
 * while deliveries overlap or follow each other, and turns off when the
 * queue runs out of steam, so that connections are kept only while its
 * destination has more mail coming.
 */
static void queue_cache_update(struct core_queue *q, core_time_t now)
{
    if (!q->cache_store)
        q->cache_store = queue_back_to_back(q, now);
    else if (q->busy <= 1 && !queue_back_to_back(q, now))
        q->cache_store = 0;
}

void core_queue_start(struct core_queue *q, core_time_t now)
{
    if (!core_queue_can_start(q))
        core_panic(q->transport->core,
                   "queue %s:%s: start in state %d with busy %d, window %d",
                   q->transport->name, q->key, q->state, q->busy, q->window);
    q->busy++;
    queue_cache_update(q, now);
    core_queue_ready_update(q);
    core_transport_start(q->transport);
}

int core_queue_cache_store(const struct core_queue *q)
{
    return q->cache_store;
}

static void queue_debug(const struct core_queue *q, int old_window,
                        const char *why)
{
    if (!q->transport->params.feedback_debug)
        return;
    core_log(q->transport->core, CORE_LOG_INFO,
             "%s:%s: window %d -> %d: %s (success %.3f, failure %.3f, "
             "fail_cohorts %.3f, busy %d)",
             q->transport->name, q->key, old_window,
             core_queue_window_report(q), why, q->success, q->failure,
             q->fail_cohorts, q->busy);
}

static void queue_feedback_debug(const struct core_queue *q, int old_window,
                                 const char *sign,
                                 const struct core_feedback *fb)
{
    char why[64];

    snprintf(why, sizeof(why), "%s feedback %.3f", sign,
             core_feedback_value(fb, old_window));
    queue_debug(q, old_window, why);
}

static void queue_revive(struct core_queue *q, const char *how)
{
    struct core_transport *t = q->transport;
    int limit = core_queue_limit(q);

    q->suspended = 0;
    core_timer_disarm(t->core, &q->timer);
    free(q->dead_reason);
    q->dead_reason = NULL;
    q->state = CORE_QUEUE_READY;
    q->window = q->busy > 0 ? q->busy : t->params.initial_concurrency;
    if (limit > 0 && q->window > limit)
        q->window = limit;
    q->success = q->failure = q->fail_cohorts = 0;
    core_queue_ready_update(q);
    core_log(t->core, CORE_LOG_INFO,
             "%s:%s: destination alive again (%s), window %d", t->name, q->key,
             how, q->window);
    queue_debug(q, 0, how);
    if (t->core->cb.queue_alive)
        t->core->cb.queue_alive(t->core->ctx, q);
    core_queue_unblock(q);
}

static void queue_die(struct core_queue *q, core_time_t now, const char *reason)
{
    struct core_transport *t = q->transport;
    int old_window = q->window;

    q->state = CORE_QUEUE_DEAD;
    core_queue_ready_update(q);
    free(q->dead_reason);
    q->dead_reason = xstrdup(reason ? reason : "connection failure");
    core_timer_arm(t->core, &q->timer, now + t->params.dead_backoff);
    core_log(t->core, CORE_LOG_INFO,
             "%s:%s: destination dead after %.2f failed pseudo-cohorts "
             "(window %d): %s; retry in %llds",
             t->name, q->key, q->fail_cohorts, old_window, q->dead_reason,
             (long long)(t->params.dead_backoff / 1000));
    queue_debug(q, old_window, "dead");
    if (t->core->cb.queue_dead)
        t->core->cb.queue_dead(t->core->ctx, q, q->dead_reason);
    core_queue_defer_todo(q, q->dead_reason, now);
    q->blocker_tag = 0;
}

static void queue_timer_fire(struct core *core, struct core_timer *timer,
                             core_time_t now)
{
    struct core_queue *q = QUEUE_OF_TIMER(timer);

    (void)core;
    (void)now;
    if (q->state == CORE_QUEUE_DEAD) {
        queue_revive(q, q->suspended ? "suspension ended" : "backoff timer");
    } else if (q->state == CORE_QUEUE_RATE_WAIT) {
        q->state = CORE_QUEUE_READY;
        core_queue_ready_update(q);
        core_queue_unblock(q);
    }
}

/* Dead-destination detection by failed pseudo-cohorts. */
static int queue_cohort_failed(struct core_queue *q, core_time_t now,
                               const char *reason)
{
    int limit = q->transport->params.failed_cohort_limit;

    q->fail_cohorts += 1.0 / q->window;
    if (limit > 0 && q->fail_cohorts >= limit - 1e-9) {
        queue_die(q, now, reason);
        return 1;
    }
    return 0;
}

void core_queue_done(struct core_queue *q, core_time_t now, enum core_hop hop,
                     const char *reason)
{
    struct core_transport *t = q->transport;
    int old_window = q->window;

    if (q->busy <= 0)
        core_panic(t->core, "queue %s:%s: done with busy %d", t->name, q->key,
                   q->busy);
    if (hop == CORE_HOP_OK) {
        if (q->suspended) {
            q->fail_cohorts = 0; /* the operator's word stands */
        } else if (q->state == CORE_QUEUE_DEAD) {
            queue_revive(q, "delivery succeeded");
        } else {
            q->fail_cohorts = 0;
            t->policy->positive(q);
            if (q->window != old_window)
                queue_feedback_debug(q, old_window, "positive",
                                     &t->params.positive);
        }
    } else if (hop == CORE_HOP_FAIL && q->state != CORE_QUEUE_DEAD) {
        if (!queue_cohort_failed(q, now, reason)) {
            t->policy->negative(q);
            if (q->window != old_window)
                queue_feedback_debug(q, old_window, "negative",
                                     &t->params.negative);
        }
    }
    q->busy--;
    q->last_done = now;
    core_transport_done(t, now);
    if (t->params.destination_rate_delay > 0 && q->state == CORE_QUEUE_READY) {
        q->state = CORE_QUEUE_RATE_WAIT;
        core_timer_arm(t->core, &q->timer,
                       now + t->params.destination_rate_delay);
    }
    core_queue_ready_update(q);
    core_queue_unblock(q);
}

void core_queue_flush(struct core_queue *q, core_time_t now)
{
    (void)now;
    if (q->state == CORE_QUEUE_DEAD && !q->suspended)
        queue_revive(q, "flush");
}

void core_queue_suspend(struct core_queue *q, core_time_t now,
                        core_time_t duration, const char *reason)
{
    struct core_transport *t = q->transport;
    int was_dead = q->state == CORE_QUEUE_DEAD;

    q->state = CORE_QUEUE_DEAD;
    q->suspended = 1;
    core_queue_ready_update(q);
    free(q->dead_reason);
    q->dead_reason = xstrdup(reason);
    if (duration > 0)
        core_timer_arm(t->core, &q->timer, now + duration);
    else
        core_timer_disarm(t->core, &q->timer);
    if (duration > 0)
        core_log(t->core, CORE_LOG_INFO,
                 "%s:%s: destination suspended for %llds: %s", t->name, q->key,
                 (long long)((duration + 999) / 1000), reason);
    else
        core_log(t->core, CORE_LOG_INFO,
                 "%s:%s: destination suspended until resumed: %s", t->name,
                 q->key, reason);
    if (!was_dead && t->core->cb.queue_dead)
        t->core->cb.queue_dead(t->core->ctx, q, q->dead_reason);
    core_queue_defer_todo(q, q->dead_reason, now);
    q->blocker_tag = 0;
}

int core_queue_resume(struct core_queue *q, core_time_t now)
{
    (void)now;
    if (!q->suspended)
        return 0;
    queue_revive(q, "resumed");
    return 1;
}

/*
 * Another party (a cluster's member) found the destination dead: dead
 * here too until revive_at, as if by our own detector (a success or a
 * flush still revives it); an earlier revival is pushed back, an
 * operator's suspension stands.
 */
void core_queue_kill(struct core_queue *q, core_time_t now,
                     core_time_t revive_at, const char *reason, const char *how)
{
    struct core_transport *t = q->transport;

    if (q->suspended || revive_at <= now)
        return;
    if (q->state == CORE_QUEUE_DEAD) {
        if (!q->timer.armed || q->timer.when < revive_at)
            core_timer_arm(t->core, &q->timer, revive_at);
        return;
    }
    q->state = CORE_QUEUE_DEAD;
    core_queue_ready_update(q);
    free(q->dead_reason);
    q->dead_reason =
        xstrdup(reason && reason[0] ? reason : "connection failure");
    core_timer_arm(t->core, &q->timer, revive_at);
    core_log(t->core, CORE_LOG_INFO,
             "%s:%s: destination dead (%s): %s; retry in %llds", t->name,
             q->key, how, q->dead_reason,
             (long long)((revive_at - now + 999) / 1000));
    if (t->core->cb.queue_dead)
        t->core->cb.queue_dead(t->core->ctx, q, q->dead_reason);
    core_queue_defer_todo(q, q->dead_reason, now);
    q->blocker_tag = 0;
}

/* A revival reported by another party: a dead queue (not suspended)
 * comes back, logged with how. */
void core_queue_revive(struct core_queue *q, const char *how)
{
    if (q->state == CORE_QUEUE_DEAD && !q->suspended)
        queue_revive(q, how);
}

int core_queue_window_report(const struct core_queue *q)
{
    switch (q->state) {
    case CORE_QUEUE_DEAD:
        return 0;
    case CORE_QUEUE_RATE_WAIT:
        return -1;
    default:
        return q->window;
    }
}

struct core_queue *core_queue_next(const struct core_transport *t,
                                   const struct core_queue *q)
{
    return q ? TAILQ_NEXT(q, link) : TAILQ_FIRST(&t->queues);
}

const char *core_queue_key(const struct core_queue *q)
{
    return q->key;
}

struct core_transport *core_queue_transport(const struct core_queue *q)
{
    return q->transport;
}

void *core_queue_ctx(const struct core_queue *q)
{
    return q->ctx;
}

void core_queue_ctx_set(struct core_queue *q, void *ctx)
{
    q->ctx = ctx;
}

int core_queue_busy(const struct core_queue *q)
{
    return q->busy;
}

int core_queue_todo(const struct core_queue *q)
{
    return q->todo_count;
}

int core_queue_dead(const struct core_queue *q)
{
    return CORE_QUEUE_DEAD_P(q);
}

const char *core_queue_refusal(const struct core_queue *q)
{
    if (CORE_QUEUE_DEAD_P(q))
        return q->dead_reason;
    if (CORE_TRANSPORT_SUSPENDED_P(q->transport))
        return q->transport->suspend_reason;
    return NULL;
}

int core_queue_release(struct core_queue *q, void **ctx)
{
    if (q->busy != 0 || q->todo_count != 0 || !CORE_QUEUE_READY_P(q) ||
        q->fail_cohorts != 0)
        return 0;
    *ctx = q->ctx;
    core_queue_free(q);
    return 1;
}
