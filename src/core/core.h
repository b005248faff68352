#ifndef SLUICE_CORE_H
#define SLUICE_CORE_H

/*
 * NAME
 *	core 3 - the sluice scheduler, as a pure state machine
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core *core_create(const struct core_callbacks *cb, void *ctx)
 *	void	core_free(struct core *core)
 *	core_time_t core_next_timer(const struct core *core)
 *	void	core_run_timers(struct core *core, core_time_t now)
 *
 *	struct core_transport *core_transport_create(struct core *core,
 *			const char *name, const struct core_transport_params *p)
 *	struct core_transport *core_transport_find(struct core *core,
 *			const char *name)
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
 *
 *	void	core_transport_params_init(struct core_transport_params *p)
 * DESCRIPTION
 *	core/ decides how many concurrent deliveries each destination gets
 *	(this file), and later which recipient entry goes next. It does no
 *	I/O and reads no clock: every function that depends on time takes
 *	"now" (milliseconds on the caller's clock, any epoch) and every
 *	decision is a function of the calls made so far, so a test or the
 *	simulator can replay it exactly. What core/ has to tell the outside
 *	world (log lines, a destination declared dead or alive again)
 *	leaves through the callbacks given to core_create().
 *
 *	A transport (a delivery method: smtp, lmtp, ...) owns destination
 *	queues, one per next hop. The queue key is an opaque string chosen
 *	by the caller (route/ decides whether it is a domain, an MX set or
 *	a provider); core/ only compares keys.
 *
 *	A queue may start a delivery while core_queue_can_start() says so:
 *	it is alive, not paused by a rate delay, busy < window, and its
 *	transport is below its process limit and not paused either. The
 *	caller reports each start with core_queue_start() and each end with
 *	core_queue_done(), whose hop status is the feedback signal:
 *	CORE_HOP_OK for a delivery that got past the connection and the
 *	handshake (even if recipients were rejected), CORE_HOP_FAIL for a
 *	connection or handshake failure. The concurrency policy (a vtable,
 *	see feedback.c) turns that signal into window changes; the
 *	dead-destination detector (queue.c) counts failed pseudo-cohorts.
 *
 *	A dead queue starts nothing until its revival timer (at death +
 *	minimal_backoff) fires in core_run_timers(), a delivery already in
 *	flight succeeds, or core_queue_flush() revives it. core_next_timer()
 *	is the earliest time at which core_run_timers() has work, or
 *	CORE_TIME_NEVER.
 *
 *	core_queue_free() removes an idle queue (nothing busy); freeing a
 *	dead queue cancels its revival: the caller keeps dead queues until
 *	they revive if it wants to remember that they are dead.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

typedef int64_t core_time_t; /* milliseconds */

#define CORE_TIME_NEVER INT64_MAX

/* Hop status of one finished delivery: the concurrency feedback signal. */
enum core_hop {
    CORE_HOP_OK,   /* got past connection and handshake */
    CORE_HOP_FAIL, /* connection or handshake failure */
};

enum core_log_level {
    CORE_LOG_INFO,
    CORE_LOG_WARNING,
    CORE_LOG_DEBUG, /* destination_concurrency_feedback_debug */
};

struct core;
struct core_queue;

struct core_callbacks {
    /* A line of text for the log; never NULL. */
    void (*log)(void *ctx, enum core_log_level level, const char *text);
    /* q was declared dead with reason; it revives at q->revive_at. */
    void (*queue_dead)(void *ctx, struct core_queue *q, const char *reason);
    /* q is alive again (timer, success or flush). */
    void (*queue_alive)(void *ctx, struct core_queue *q);
};

/* Feedback g(N) or f(N): x, x/N or x/sqrt(N). */
enum core_feedback_form {
    CORE_FEEDBACK_CONSTANT,
    CORE_FEEDBACK_CONCURRENCY,
    CORE_FEEDBACK_SQRT_CONCURRENCY,
};

struct core_feedback {
    enum core_feedback_form form;
    double value;
};

/* Hysteresis rounding: the seed's pseudocode, or Postfix 3.x's half step. */
enum core_rounding {
    CORE_ROUNDING_SEED,
    CORE_ROUNDING_POSTFIX3,
};

/* Everything a transport needs, with reference names in the comments. */
struct core_transport_params {
    int initial_concurrency;            /* initial_destination_concurrency */
    int concurrency_limit;              /* _destination_concurrency_limit, 0 =
                                           unlimited */
    struct core_feedback positive;      /* _positive_feedback */
    struct core_feedback negative;      /* _negative_feedback */
    int failed_cohort_limit;            /* _failed_cohort_limit, 0 = never */
    enum core_rounding rounding;        /* concurrency_feedback_rounding */
    core_time_t destination_rate_delay; /* _destination_rate_delay */
    core_time_t transport_rate_delay;   /* _transport_rate_delay */
    core_time_t dead_backoff;           /* minimal_backoff_time */
    int process_limit;                  /* _process_limit */
    int feedback_debug; /* destination_concurrency_feedback_debug */
};

/* The concurrency policy: what a hop status does to a queue's window. */
struct core_concurrency_policy {
    const char *name;
    /* A delivery to a live queue got past the handshake. */
    void (*positive)(struct core_queue *q);
    /* A delivery to a live queue failed at connection or handshake. */
    void (*negative)(struct core_queue *q);
};

extern const struct core_concurrency_policy core_policy_feedback;

enum core_queue_state {
    CORE_QUEUE_READY,     /* may start deliveries up to the window */
    CORE_QUEUE_DEAD,      /* suspended until revive_at */
    CORE_QUEUE_RATE_WAIT, /* destination rate delay until resume_at */
};

struct core_timer {
    core_time_t when;
    void (*fire)(struct core *core, struct core_timer *timer, core_time_t now);
    int armed;
    TAILQ_ENTRY(core_timer) link;
};

struct core_transport;

struct core_queue {
    char *key;
    struct core_transport *transport;
    enum core_queue_state state;
    int window;              /* concurrency allowed while READY */
    int busy;                /* deliveries in flight */
    double success;          /* positive feedback accumulator */
    double failure;          /* negative feedback accumulator */
    double fail_cohorts;     /* failed pseudo-cohorts since the last success */
    char *dead_reason;       /* why it is dead, while DEAD */
    struct core_timer timer; /* revival or end of rate delay */
    struct core_queue *hash_next;
    TAILQ_ENTRY(core_queue) link;
};

TAILQ_HEAD(core_queue_list, core_queue);

struct core_transport {
    char *name;
    struct core *core;
    struct core_transport_params params;
    const struct core_concurrency_policy *policy;
    int busy;                /* deliveries in flight, all queues */
    int rate_wait;           /* paused by the transport rate delay */
    struct core_timer timer; /* end of the transport rate delay */
    struct core_queue_list queues;
    struct core_queue **hash; /* queues by key */
    size_t hash_size;
    size_t queue_count;
    struct core_transport *next;
};

TAILQ_HEAD(core_timer_list, core_timer);

struct core {
    struct core_callbacks cb;
    void *ctx;
    struct core_transport *transports;
    struct core_timer_list timers; /* armed timers, by time */
};

struct core *core_create(const struct core_callbacks *cb, void *ctx);
void core_free(struct core *core);
core_time_t core_next_timer(const struct core *core);
void core_run_timers(struct core *core, core_time_t now);

void core_transport_params_init(struct core_transport_params *p);
struct core_transport *
core_transport_create(struct core *core, const char *name,
                      const struct core_transport_params *p);
struct core_transport *core_transport_find(struct core *core, const char *name);

struct core_queue *core_queue_create(struct core_transport *t, const char *key);
struct core_queue *core_queue_find(struct core_transport *t, const char *key);
void core_queue_free(struct core_queue *q);
int core_queue_can_start(const struct core_queue *q);
void core_queue_start(struct core_queue *q, core_time_t now);
void core_queue_done(struct core_queue *q, core_time_t now, enum core_hop hop,
                     const char *reason);
void core_queue_flush(struct core_queue *q, core_time_t now);

/* Named predicates. */
#define CORE_QUEUE_DEAD_P(q)  ((q)->state == CORE_QUEUE_DEAD)
#define CORE_QUEUE_READY_P(q) ((q)->state == CORE_QUEUE_READY)

/* Effective window as Postfix reports it: 0 dead, -1 rate-delayed. */
int core_queue_window_report(const struct core_queue *q);

/* Value of feedback fb at concurrency n. */
double core_feedback_value(const struct core_feedback *fb, int n);

#endif
