#ifndef SLUICE_TEST_CORE_FIXTURE_H
#define SLUICE_TEST_CORE_FIXTURE_H

/*
 * NAME
 *	core_fixture - a scheduler with one transport, for core/ tests
 * DESCRIPTION
 *	fixture_new() makes a core whose callbacks record what core/
 *	reports: log lines (the last few, and a count), and the number of
 *	times a queue was declared dead or alive, an entry deferred, a
 *	message done. The transport "smtp"
 *	starts with the reference defaults; a test changes fx.params and
 *	calls fixture_transport() before creating queues.
 */

#include <stdio.h>
#include <string.h>

#include "core/core_impl.h"

#define FIXTURE_LINES 16

struct fixture {
    struct core *core;
    struct core_transport *t;
    struct core_transport_params params;
    char lines[FIXTURE_LINES][512];
    int nlines;
    int dead_calls;
    int alive_calls;
    int deferred_calls;
    int message_done_calls;
    char dead_reason[256];
};

static void fixture_log(void *ctx, enum core_log_level level, const char *text)
{
    struct fixture *fx = ctx;

    (void)level;
    snprintf(fx->lines[fx->nlines % FIXTURE_LINES], sizeof(fx->lines[0]), "%s",
             text);
    fx->nlines++;
}

static void fixture_dead(void *ctx, struct core_queue *q, const char *reason)
{
    struct fixture *fx = ctx;

    (void)q;
    fx->dead_calls++;
    snprintf(fx->dead_reason, sizeof(fx->dead_reason), "%s", reason);
}

static void fixture_alive(void *ctx, struct core_queue *q)
{
    struct fixture *fx = ctx;

    (void)q;
    fx->alive_calls++;
}

static void fixture_deferred(void *ctx, struct core_entry *e,
                             const char *reason)
{
    struct fixture *fx = ctx;

    (void)e;
    (void)reason;
    fx->deferred_calls++;
}

static void fixture_message_done(void *ctx, struct core_message *m)
{
    struct fixture *fx = ctx;

    (void)m;
    fx->message_done_calls++;
}

static const struct core_callbacks fixture_callbacks = {
    .log = fixture_log,
    .queue_dead = fixture_dead,
    .queue_alive = fixture_alive,
    .entry_deferred = fixture_deferred,
    .message_done = fixture_message_done,
};

static inline struct fixture *fixture_new(void)
{
    static struct fixture fx;

    memset(&fx, 0, sizeof(fx));
    fx.core = core_create(&fixture_callbacks, &fx);
    core_transport_params_init(&fx.params);
    return &fx;
}

static inline struct core_transport *fixture_transport(struct fixture *fx)
{
    fx->t = core_transport_create(fx->core, "smtp", &fx->params);
    return fx->t;
}

static inline void fixture_free(struct fixture *fx)
{
    core_free(fx->core);
}

/* The last log line, or "" if none. */
static inline const char *fixture_last(const struct fixture *fx)
{
    return fx->nlines ? fx->lines[(fx->nlines - 1) % FIXTURE_LINES] : "";
}

/* Start n deliveries on q. */
static inline void fixture_start(struct core_queue *q, int n, core_time_t now)
{
    while (n-- > 0)
        core_queue_start(q, now);
}

#endif
