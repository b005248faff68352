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
 *	void	core_transport_update(struct core_transport *t,
 *			const struct core_transport_params *p)
 *	void	core_transport_suspend(struct core_transport *t,
 *			core_time_t now, core_time_t duration,
 *			const char *reason)
 *	void	core_transport_resume(struct core_transport *t)
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
 *	void	core_queue_suspend(struct core_queue *q, core_time_t now,
 *			core_time_t duration, const char *reason)
 *	int	core_queue_resume(struct core_queue *q, core_time_t now)
 *	void	core_queue_kill(struct core_queue *q, core_time_t now,
 *			core_time_t revive_at, const char *reason,
 *			const char *how)
 *	void	core_queue_revive(struct core_queue *q, const char *how)
 *
 *	void	core_transport_params_init(struct core_transport_params *p)
 *
 *	struct core_message *core_message_create(struct core *core,
 *			uint64_t id, core_time_t queued, void *ctx)
 *	int	core_message_add(struct core_message *m, struct core_queue *q,
 *			uint64_t rcpt)
 *	void	core_message_release(struct core_message *m)
 *
 *	struct core_entry *core_select(struct core *core, core_time_t now)
 *	struct core_entry *core_transport_select(struct core_transport *t,
 *			core_time_t now)
 *	void	core_entry_done(struct core_entry *e, core_time_t now,
 *			enum core_hop hop, const char *reason)
 *
 *	struct core_transport *core_transport_next(const struct core *core,
 *			const struct core_transport *t)
 *	void	core_transport_status(const struct core_transport *t,
 *			struct core_transport_status *st)
 *	void	core_queue_status(const struct core_queue *q,
 *			struct core_queue_status *st)
 *	const struct core_job *core_job_next(const struct core_transport *t,
 *			const struct core_job *job)
 *	void	core_job_status(const struct core_job *job,
 *			struct core_job_status *st)
 *	const char *core_transport_name(const struct core_transport *t)
 *	const struct core_job_policy *core_transport_scheduler(
 *			const struct core_transport *t)
 *	size_t	core_transport_queue_count(const struct core_transport *t)
 *	struct core_queue *core_queue_next(const struct core_transport *t,
 *			const struct core_queue *q)
 *	const char *core_queue_key(const struct core_queue *q)
 *	struct core_transport *core_queue_transport(const struct core_queue *q)
 *	void	*core_queue_ctx(const struct core_queue *q)
 *	void	core_queue_ctx_set(struct core_queue *q, void *ctx)
 *	int	core_queue_busy(const struct core_queue *q)
 *	int	core_queue_todo(const struct core_queue *q)
 *	int	core_queue_dead(const struct core_queue *q)
 *	void	core_queue_cap_set(struct core_queue *q, int cap)
 *	int	core_queue_cache_store(const struct core_queue *q)
 *	const char *core_queue_refusal(const struct core_queue *q)
 *	int	core_queue_release(struct core_queue *q, void **ctx)
 *	struct core_message *core_entry_message(const struct core_entry *e)
 *	struct core_queue *core_entry_queue(const struct core_entry *e)
 *	const uint64_t *core_entry_rcpts(const struct core_entry *e, int *n)
 *	int	core_entry_count(const struct core_entry *e)
 *	void	*core_message_ctx(const struct core_message *m)
 *	uint64_t core_message_id(const struct core_message *m)
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
 *	core_queue_suspend() is the operator's suspension of a destination
 *	(`sluice suspend`): the queue is dead with reason, for duration
 *	(0: until resumed), its waiting entries are deferred and it takes no
 *	recipients, like a dead one; but nothing revives it except the end
 *	of that duration or core_queue_resume() (which returns 1 if it was
 *	suspended): not a delivery that succeeds, not a flush.
 *
 *	core_queue_kill() and core_queue_revive() apply what another party
 *	(a member of a cluster, decision 113) found: the queue is dead with
 *	reason until revive_at (a later time than its own revival pushes
 *	that back; a success or a flush revives it as usual; an operator's
 *	suspension stands), or alive again, each logged with how
 *	("SERVICE: KEY: destination dead (HOW): REASON; retry in Ns",
 *	"... destination alive again (HOW), window N").
 *
 *	core_queue_free() removes an idle queue (nothing busy, nothing
 *	waiting); freeing a dead queue cancels its revival: the caller keeps
 *	dead queues until they revive if it wants to remember that they are
 *	dead.
 *
 *	Messages, jobs, peers and entries (job.c, message.c, entry.c) are
 *	the seed's structures: a message is split into one job per
 *	transport, a job into one peer per destination queue, a peer into
 *	entries of up to the transport's recipient_limit recipients.
 *	core_message_create() makes a message (id and ctx are the caller's;
 *	queued is when it entered the active queue, which orders jobs).
 *	core_message_add() assigns one resolved recipient (the caller's
 *	rcpt number) to queue q: it is appended to the last waiting entry of
 *	the message's peer for q while that has room, else to a new entry.
 *	It returns 0, or -1 if q is dead: the recipient is not taken and the
 *	caller defers it with q->dead_reason. core_message_release() says
 *	the caller will add no more recipients for now; a message whose
 *	entries are all done is then finished: the message_done callback
 *	runs and the message is freed. core_message_hold() says the caller
 *	is still working out where more of m's recipients go (Finch's
 *	routing workers): a held message is not finished and core/ asks
 *	for none of its unread recipients while its entries are done;
 *	core_message_unhold() ends one hold at time now and finishes the
 *	message, or reads its next batch, as core_message_release() would.
 *
 *	core_select() picks the next entry to deliver, round-robin over the
 *	transports; core_transport_select() for one transport. The entry
 *	is chosen by the transport's job selection policy (preemptive, the
 *	seed's nqmgr; or round_robin, the older oqmgr), counts as started
 *	(core_queue_start()) and stays the caller's until it reports the
 *	outcome with core_entry_done(), which applies the hop status to the
 *	queue as core_queue_done() does and frees the entry. What happens
 *	to each recipient is the caller's business. NULL means nothing can
 *	be delivered now; core_next_timer() says when that may change by
 *	itself.
 *
 *	When a queue is declared dead, its waiting entries are handed to
 *	the entry_deferred callback, one by one, and freed.
 *
 *	This header is core/'s whole public face: the structures' bodies
 *	are in core_impl.h, for core/ and its unit tests alone. Callers
 *	walk transports with core_transport_next() (NULL: the first) and a
 *	transport's queues with core_queue_next() (NULL: the first; take
 *	the next one before releasing the current). A queue, a message and
 *	an entry carry the caller's context (core_queue_ctx(),
 *	core_message_ctx(); an entry's message and queue lead to them).
 *	core_entry_rcpts() gives an entry's recipients (the caller's
 *	numbers) and their count, core_entry_count() the count alone. core_queue_busy() and core_queue_todo()
 *	count a queue's entries in flight and waiting. core_queue_dead() says the queue is dead;
 *	core_queue_cache_store() whether the delivery just started should
 *	keep its connection for the queue's next one (on-demand session
 *	caching, queue.c);
 *	core_queue_refusal() why core_message_add() refuses recipients for
 *	it: the dead queue's reason, else its transport's suspension
 *	reason, else NULL.
 *
 *	core_transport_status(), core_queue_status() and core_job_status()
 *	(status.c) copy out what an operator's status view shows, without
 *	changing anything; core_job_next() walks a transport's job list in
 *	the scheduler's order.
 *
 *	core_queue_release() frees queue q when nothing is waiting or in
 *	flight and it has nothing to remember (not dead, no rate delay
 *	running, no failed cohort that a success has not cleared: mail
 *	trickling to a dead site must still add up to a dead
 *	destination); it then returns 1 with the queue's context in *ctx
 *	for the caller to free, else 0.
 */

#include <stddef.h>
#include <stdint.h>

typedef int64_t core_time_t; /* milliseconds */

#define CORE_TIME_NEVER INT64_MAX

/* Hop status of one finished delivery: the concurrency feedback signal. */
enum core_hop {
    CORE_HOP_OK,      /* got past connection and handshake */
    CORE_HOP_FAIL,    /* connection or handshake failure */
    CORE_HOP_NEUTRAL, /* says nothing of the destination (transport down) */
};

enum core_log_level {
    CORE_LOG_INFO,
    CORE_LOG_WARNING,
    CORE_LOG_DEBUG, /* verbose: every preemption */
};

struct core;
struct core_transport;
struct core_queue;
struct core_message;
struct core_job;
struct core_entry;
struct core_job_policy;

struct core_callbacks {
    /* A line of text for the log; never NULL. */
    void (*log)(void *ctx, enum core_log_level level, const char *text);
    /* q was declared dead with reason; it revives at q->timer.when. */
    void (*queue_dead)(void *ctx, struct core_queue *q, const char *reason);
    /* q is alive again (timer, success or flush). */
    void (*queue_alive)(void *ctx, struct core_queue *q);
    /* A waiting entry of a dead queue is deferred; it is freed after. */
    void (*entry_deferred)(void *ctx, struct core_entry *e, const char *reason);
    /* Every entry of a released message is done; it is freed after. */
    void (*message_done)(void *ctx, struct core_message *m);
    /*
     * Read up to max more recipients of m (core_message_add() each, then
     * core_message_unread_set()); returns how many were read. Asked only
     * while m has unread recipients; NULL: they are never read.
     */
    long (*message_more)(void *ctx, struct core_message *m, long max);
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
    int feedback_debug;  /* destination_concurrency_feedback_debug */
    int recipient_limit; /* _destination_recipient_limit */
    int slot_cost;       /* _delivery_slot_cost (k) */
    int slot_loan;       /* _delivery_slot_loan */
    int slot_discount;   /* _delivery_slot_discount, percent */
    int min_slots;       /* _minimum_delivery_slots */
    int rcpt_pool;       /* _recipient_limit: in-core recipient slots */
    int rcpt_extra;      /* _extra_recipient_limit: for unread preemptors */
    int refill_limit;    /* _recipient_refill_limit */
    core_time_t refill_delay;                /* _recipient_refill_delay */
    const struct core_job_policy *scheduler; /* _scheduler */
};

/* The job selection policy: which waiting entry of a transport goes next. */
struct core_job_policy {
    const char *name;
    struct core_entry *(*select)(struct core_transport *t, core_time_t now);
};

extern const struct core_job_policy core_policy_preemptive;
extern const struct core_job_policy core_policy_round_robin;

/* The concurrency policy: what a hop status does to a queue's window. */
struct core_concurrency_policy {
    const char *name;
    /* A delivery to a live queue got past the handshake. */
    void (*positive)(struct core_queue *q);
    /* A delivery to a live queue failed at connection or handshake. */
    void (*negative)(struct core_queue *q);
};

extern const struct core_concurrency_policy core_policy_feedback;

struct core *core_create(const struct core_callbacks *cb, void *ctx);
void core_free(struct core *core);
core_time_t core_next_timer(const struct core *core);
void core_run_timers(struct core *core, core_time_t now);

void core_transport_params_init(struct core_transport_params *p);
struct core_transport *
core_transport_create(struct core *core, const char *name,
                      const struct core_transport_params *p);
struct core_transport *core_transport_find(struct core *core, const char *name);
void core_transport_update(struct core_transport *t,
                           const struct core_transport_params *p);
void core_transport_suspend(struct core_transport *t, core_time_t now,
                            core_time_t duration, const char *reason);
void core_transport_resume(struct core_transport *t);

struct core_queue *core_queue_create(struct core_transport *t, const char *key);
struct core_queue *core_queue_find(struct core_transport *t, const char *key);
void core_queue_free(struct core_queue *q);
int core_queue_can_start(const struct core_queue *q);
void core_queue_start(struct core_queue *q, core_time_t now);
void core_queue_done(struct core_queue *q, core_time_t now, enum core_hop hop,
                     const char *reason);
void core_queue_flush(struct core_queue *q, core_time_t now);
void core_queue_suspend(struct core_queue *q, core_time_t now,
                        core_time_t duration, const char *reason);
int core_queue_resume(struct core_queue *q, core_time_t now);
void core_queue_kill(struct core_queue *q, core_time_t now,
                     core_time_t revive_at, const char *reason,
                     const char *how);
void core_queue_revive(struct core_queue *q, const char *how);

struct core_message *core_message_create(struct core *core, uint64_t id,
                                         core_time_t queued, void *ctx);
int core_message_add(struct core_message *m, struct core_queue *q,
                     uint64_t rcpt);
void core_message_release(struct core_message *m);
void core_message_hold(struct core_message *m);
void core_message_unhold(struct core_message *m, core_time_t now);

void core_recipient_limits_set(struct core *core, long message_limit,
                               long minimum);
long core_message_read_limit(const struct core_message *m);
void core_message_unread_set(struct core_message *m, long unread);
long core_recipient_count(const struct core *core);

struct core_entry *core_select(struct core *core, core_time_t now);
struct core_entry *core_transport_select(struct core_transport *t,
                                         core_time_t now);
void core_entry_done(struct core_entry *e, core_time_t now, enum core_hop hop,
                     const char *reason);

/* What callers may know of core/'s objects: accessors, no struct bodies. */
struct core_transport *core_transport_next(const struct core *core,
                                           const struct core_transport *t);
const char *core_transport_name(const struct core_transport *t);
const struct core_job_policy *
core_transport_scheduler(const struct core_transport *t);
size_t core_transport_queue_count(const struct core_transport *t);
struct core_queue *core_queue_next(const struct core_transport *t,
                                   const struct core_queue *q);
const char *core_queue_key(const struct core_queue *q);
struct core_transport *core_queue_transport(const struct core_queue *q);
void *core_queue_ctx(const struct core_queue *q);
void core_queue_ctx_set(struct core_queue *q, void *ctx);
int core_queue_busy(const struct core_queue *q);
int core_queue_todo(const struct core_queue *q);
int core_queue_dead(const struct core_queue *q);
void core_queue_cap_set(struct core_queue *q, int cap);
int core_queue_cache_store(const struct core_queue *q);
const char *core_queue_refusal(const struct core_queue *q);
int core_queue_release(struct core_queue *q, void **ctx);
struct core_message *core_entry_message(const struct core_entry *e);
struct core_queue *core_entry_queue(const struct core_entry *e);
const uint64_t *core_entry_rcpts(const struct core_entry *e, int *n);
int core_entry_count(const struct core_entry *e);
void *core_message_ctx(const struct core_message *m);
uint64_t core_message_id(const struct core_message *m);

/* What `sluice status` shows (status.c); strings are core/'s. */
struct core_transport_status {
    const char *name;
    const char *scheduler; /* the job selection policy's name */
    int busy;              /* deliveries in flight */
    int process_limit;
    size_t queues; /* destination queues */
    size_t jobs;   /* on the scheduler's job list */
    long rcpt_pool, rcpt_unused;
    int rate_wait; /* paused by the transport rate delay */
    int suspended;
    const char *suspend_reason;  /* while suspended */
    core_time_t suspended_until; /* CORE_TIME_NEVER: until resumed */
};

struct core_queue_status {
    const char *key;
    int window, limit; /* limit 0: none */
    int busy, todo;
    double success, failure, fail_cohorts; /* the feedback's state */
    int dead, rate_wait;
    int suspended;           /* dead by the operator's suspension */
    const char *dead_reason; /* while dead */
    core_time_t until;       /* revival or end of the rate delay */
};

struct core_job_status {
    const struct core_message *message;
    core_time_t queued;
    int read_entries, selected_entries;
    int slots_available, slots_used;
    int preempting;
    long rcpt_count, rcpt_limit;
};

void core_transport_status(const struct core_transport *t,
                           struct core_transport_status *st);
void core_queue_status(const struct core_queue *q,
                       struct core_queue_status *st);
const struct core_job *core_job_next(const struct core_transport *t,
                                     const struct core_job *job);
void core_job_status(const struct core_job *job, struct core_job_status *st);

/* Effective window as Postfix reports it: 0 dead, -1 rate-delayed. */
int core_queue_window_report(const struct core_queue *q);

/* Value of feedback fb at concurrency n. */
double core_feedback_value(const struct core_feedback *fb, int n);

/*
 * Finch's delivery scheduler (the seed finch-mta-scheduling.txt):
 * destdb, the database of delivery hosts (destdb.c), and the choice of
 * the connection a delivery job goes to (finch.c). A host is whatever
 * key the caller connects to (an address and port); a connection is
 * the caller's number for it.
 *
 * destdb is a vtable, so that a cluster can keep it elsewhere
 * (core_destdb_memory() is the one in this process's memory):
 * conn_open() records a connection just made to host, conn_jobs() the
 * jobs it carries now (queued and in progress; 0: idle),
 * conn_close() its end (the host keeps the time of its last close);
 * host_closed() a connection to host that another process (a member of
 * a cluster) closed at when: the host's last close is the later;
 * host_fail() says not to bother connecting to host before retry_at,
 * host_ok() forgets that. host_get() fills v with what is known of host
 * and up to max of its open connections (most recently opened first),
 * and returns 0 when host has no record. gc() removes the records of
 * hosts with no open connection whose last close and retry time are
 * both older than the database's record lifetime: a host whose
 * retry record is collected is "unused" again. count() is the number
 * of host records, free() frees the database.
 */
struct core_destdb;

struct core_conn_view {
    uint64_t conn;
    core_time_t opened;     /* when it was made */
    core_time_t idle_since; /* when its jobs last went to 0 */
    int jobs;               /* queued and in progress; 0: idle */
};

struct core_host_view {
    core_time_t last_close; /* -1: never closed */
    core_time_t retry_at;   /* -1: no failure on record */
    size_t nconns;          /* open connections (all of them) */
};

struct core_destdb_ops {
    void (*conn_open)(struct core_destdb *db, const char *host, uint64_t conn,
                      core_time_t now);
    void (*conn_jobs)(struct core_destdb *db, const char *host, uint64_t conn,
                      int jobs, core_time_t now);
    void (*conn_close)(struct core_destdb *db, const char *host, uint64_t conn,
                       core_time_t now);
    void (*host_closed)(struct core_destdb *db, const char *host,
                        core_time_t when);
    void (*host_fail)(struct core_destdb *db, const char *host,
                      core_time_t retry_at);
    void (*host_ok)(struct core_destdb *db, const char *host);
    int (*host_get)(struct core_destdb *db, const char *host,
                    struct core_host_view *v, struct core_conn_view *conns,
                    size_t max);
    void (*gc)(struct core_destdb *db, core_time_t now);
    size_t (*count)(const struct core_destdb *db);
    void (*free)(struct core_destdb *db);
};

struct core_destdb {
    const struct core_destdb_ops *ops;
};

struct core_destdb *core_destdb_memory(core_time_t record_lifetime);

/*
 * The seed's allowed_new_worker(): a message may have another worker
 * while its concurrency is below max_message_concurrency, or below
 * scale_max_concurrency times the free workers (an idle system lets a
 * big envelope use most of it). core_finch_next_router_job() is the
 * seed's next_router_job() over jobs in order (their messages'
 * concurrency in concurrency[]): the index of the first that may have
 * another worker, or -1.
 */
struct core_finch_limits {
    int max_message_concurrency;
    int scale_max_concurrency;
};

int core_finch_allowed_new_worker(const struct core_finch_limits *l,
                                  int message_concurrency, int free_workers);
int core_finch_next_router_job(const struct core_finch_limits *l,
                               const int *concurrency, size_t n,
                               int free_workers);

/*
 * core_finch_choose(): where one delivery job goes. hosts[] are the
 * job's possible hosts with their MX preference in pref[], most
 * preferred first; allowed_new is allowed_new_worker() for its
 * message, free_workers whether the system can have another
 * connection (a free worker, or an idle connection it may close).
 * rand() gives random numbers for the random picks. The answer names
 * a connection to queue the job on (ACTIVE: a recent one under the
 * backlog threshold; FREE_RIDE: an active one though over it; IDLE),
 * or a host to open a connection to (UNUSED, CLOSED, RETRY, MORE: one
 * more to a busy host), or says to WAIT for a worker or to DEFER the
 * job (no host of any preference works now).
 */
enum core_finch_how {
    CORE_FINCH_ACTIVE,
    CORE_FINCH_FREE_RIDE,
    CORE_FINCH_IDLE,
    CORE_FINCH_UNUSED,
    CORE_FINCH_CLOSED,
    CORE_FINCH_RETRY,
    CORE_FINCH_MORE,
    CORE_FINCH_WAIT,
    CORE_FINCH_DEFER,
};

struct core_finch_request {
    struct core_destdb *db;
    const char *const *hosts;
    const int *pref; /* MX preference of each host, ascending */
    size_t nhosts;
    int allowed_new;
    int free_workers;
    int backlog_threshold; /* jobs per connection before another */
    int host_limit;        /* connections per host, 0: no limit */
    unsigned (*rand)(void *ctx);
    void *rand_ctx;
    core_time_t now;
};

struct core_finch_choice {
    enum core_finch_how how;
    size_t host;   /* index into hosts[], but for WAIT and DEFER */
    uint64_t conn; /* ACTIVE, FREE_RIDE and IDLE */
};

void core_finch_choose(const struct core_finch_request *r,
                       struct core_finch_choice *out);
const char *core_finch_how_name(enum core_finch_how how);

/*
 * ZMailer's thread scheduler (the seed zmailer-scheduler-notes.txt), as
 * data and decisions (zthread.c): recipients (vertices) grouped into
 * threads by (rule, channel, host), threads into thread-rings of those
 * one agent can process, at most one agent per thread, an idle pool of
 * agents per ring that expires after the rule's idlemax. The caller
 * runs the agents; this says which to start, reuse, feed and end.
 * A rule is what the rules file says of it, as numbers (conf/rules.c);
 * rules are told apart by index, the index of the rules file's clause.
 */
struct core_zrule {
    int index;           /* which rule: a vertex's thread is per rule */
    int maxring;         /* agents of one thread-ring, 0: no limit */
    core_time_t idlemax; /* how long an idle agent is kept */
    int ageorder;        /* run a thread oldest first, not shuffled */
    int queueonly;       /* started only by a flush of its host */
    int per_host;        /* the command's argv has $host */
};

struct core_zsched;

enum core_zstart {
    CORE_ZSTART_NEW,       /* start a new agent (id in agent) */
    CORE_ZSTART_REUSE,     /* an idle agent of the ring takes it */
    CORE_ZSTART_BUSY,      /* the thread already has its agent */
    CORE_ZSTART_LIMIT,     /* maxring or maxta: thread rescheduled */
    CORE_ZSTART_QUEUEONLY, /* waits for a flush of its host */
    CORE_ZSTART_NOT_DUE,   /* its wake-up time is still ahead */
};

struct core_zstart_result {
    enum core_zstart how;
    uint64_t agent; /* NEW and REUSE */
    uint64_t ended; /* NEW: an idle agent of another ring to end, or 0 */
};

struct core_zsched *core_zsched_create(int maxta, core_time_t limit_delay,
                                       unsigned (*rand)(void *ctx, unsigned n),
                                       void *rand_ctx);
void core_zsched_free(struct core_zsched *z);
void core_zsched_vertex_add(struct core_zsched *z, const struct core_zrule *r,
                            const char *channel, const char *host,
                            uint64_t vertex, core_time_t wakeup,
                            core_time_t age, core_time_t now,
                            struct core_zstart_result *out);
size_t core_zsched_agenda(struct core_zsched *z, core_time_t now,
                          struct core_zstart_result *out, size_t max);
size_t core_zsched_flush(struct core_zsched *z, const char *host,
                         core_time_t now, struct core_zstart_result *out,
                         size_t max);
int core_zsched_next_vertex(struct core_zsched *z, uint64_t agent,
                            core_time_t now, uint64_t *vertex);
void core_zsched_vertex_done(struct core_zsched *z, uint64_t agent,
                             uint64_t vertex, core_time_t retry);
void core_zsched_agent_gone(struct core_zsched *z, uint64_t agent,
                            core_time_t now, core_time_t backoff);
size_t core_zsched_idle_expire(struct core_zsched *z, core_time_t now,
                               uint64_t *ended, size_t max);
core_time_t core_zsched_next_timer(const struct core_zsched *z);

/* What an operator and the tests see of the model. */
struct core_zthread_view {
    int found;
    int running;        /* an agent is on it */
    uint64_t agent;     /* which */
    core_time_t wakeup; /* its first vertex's */
    size_t vertices;    /* in the thread */
    int ring_threads;   /* threads of its ring */
    int ring_agents;    /* agents of its ring, running and idle */
    int ring_idle;      /* of which idle */
};

void core_zsched_thread_view(const struct core_zsched *z, const char *channel,
                             const char *host, int rule,
                             struct core_zthread_view *v);
size_t core_zsched_thread_vertices(const struct core_zsched *z,
                                   const char *channel, const char *host,
                                   int rule, uint64_t *ids, size_t max);
int core_zsched_agents(const struct core_zsched *z);

/* A channel's part of the model, summed (sluice status). */
struct core_zsummary {
    size_t threads, rings, vertices;
    int agents, running, idle;
};

void core_zsched_summary(const struct core_zsched *z, const char *channel,
                         struct core_zsummary *s);
int core_zsched_agent_thread(const struct core_zsched *z, uint64_t agent,
                             const char **channel, const char **host,
                             core_time_t *idlemax);
void core_zsched_maxta_set(struct core_zsched *z, int maxta);
const char *core_zstart_name(enum core_zstart how);

#endif
