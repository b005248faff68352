/*
 * NAME
 *	core 3 - scheduler instance, timers, logging
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core *core_create(const struct core_callbacks *cb, void *ctx)
 *	void	core_free(struct core *core)
 *	core_time_t core_next_timer(const struct core *core)
 *	void	core_run_timers(struct core *core, core_time_t now)
 *
 *	#include "core/core_impl.h"
 *
 *	size_t	core_hash(const char *key, size_t size)
 * DESCRIPTION
 *	core_create() makes an empty scheduler whose outside effects go
 *	through cb (any member may be NULL) with ctx as first argument.
 *	core_free() frees it with everything in it, without callbacks.
 *
 *	core_next_timer() tells when core_run_timers() next has work
 *	(revival of a dead destination, end of a rate delay), or
 *	CORE_TIME_NEVER. core_run_timers() fires every timer due at or
 *	before now, oldest first; a timer armed while firing for a time
 *	not after now fires in the same call.
 *
 *	core_hash() is the slot of a string key in a table of size slots
 *	(FNV-1a: keys are short strings chosen by the caller), for the
 *	destination queues and destdb's hosts.
 */

#include "core/core.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

size_t core_hash(const char *key, size_t size)
{
    uint64_t h = 14695981039346656037ULL;

    while (*key)
        h = (h ^ (unsigned char)*key++) * 1099511628211ULL;
    return (size_t)(h % size);
}

struct core *core_create(const struct core_callbacks *cb, void *ctx)
{
    struct core *core = xmalloc(sizeof(*core));

    memset(core, 0, sizeof(*core));
    if (cb)
        core->cb = *cb;
    core->ctx = ctx;
    core->msg_rcpt_limit = 20000; /* the reference's defaults */
    core->msg_rcpt_minimum = 10;
    TAILQ_INIT(&core->timers);
    TAILQ_INIT(&core->messages);
    return core;
}

void core_free(struct core *core)
{
    struct core_transport *t;
    struct core_queue *q;
    struct core_message *m;

    /* Entries first (they hang off queues), then messages, then the rest. */
    for (t = core->transports; t; t = t->next) {
        TAILQ_FOREACH(q, &t->queues, link) {
            core_queue_drop_entries(q);
        }
    }
    TAILQ_FOREACH(m, &core->messages, link) {
        for (struct core_job *job = m->jobs; job; job = job->next_of_message)
            job->stack_level = -1; /* no unstacking: all goes */
    }
    while ((m = TAILQ_FIRST(&core->messages)) != NULL)
        core_message_free(m);
    while ((t = core->transports) != NULL) {
        core->transports = t->next;
        core_transport_free(t);
    }
    free(core);
}

core_time_t core_next_timer(const struct core *core)
{
    const struct core_timer *first = TAILQ_FIRST(&core->timers);

    return first ? first->when : CORE_TIME_NEVER;
}

void core_run_timers(struct core *core, core_time_t now)
{
    struct core_timer *timer;

    while ((timer = TAILQ_FIRST(&core->timers)) != NULL && timer->when <= now) {
        core_timer_disarm(core, timer);
        timer->fire(core, timer, now);
    }
}

void core_timer_arm(struct core *core, struct core_timer *timer,
                    core_time_t when)
{
    struct core_timer *after;

    if (timer->armed)
        core_timer_disarm(core, timer);
    timer->when = when;
    timer->armed = 1;
    TAILQ_FOREACH_REVERSE(after, &core->timers, core_timer_list, link) {
        if (after->when <= when)
            break;
    }
    if (after)
        TAILQ_INSERT_AFTER(&core->timers, after, timer, link);
    else
        TAILQ_INSERT_HEAD(&core->timers, timer, link);
}

void core_timer_disarm(struct core *core, struct core_timer *timer)
{
    if (timer->armed) {
        TAILQ_REMOVE(&core->timers, timer, link);
        timer->armed = 0;
    }
}

static void core_vlog(struct core *core, enum core_log_level level,
                      const char *fmt, va_list ap)
{
    char text[512];

    if (core->cb.log == NULL)
        return;
    vsnprintf(text, sizeof(text), fmt, ap);
    core->cb.log(core->ctx, level, text);
}

void core_log(struct core *core, enum core_log_level level, const char *fmt,
              ...)
{
    va_list ap;

    va_start(ap, fmt);
    core_vlog(core, level, fmt, ap);
    va_end(ap);
}

void core_panic(struct core *core, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    core_log(core, CORE_LOG_WARNING, "%s", text);
    util_panic("%s", text);
}
