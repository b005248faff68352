#ifndef SLUICE_CORE_IMPL_H
#define SLUICE_CORE_IMPL_H

/*
 * NAME
 *	core_impl 3h - helpers shared by the files of core/, and only by them
 * SYNOPSIS
 *	#include "core/core_impl.h"
 *
 *	void	core_log(struct core *core, enum core_log_level level,
 *			const char *fmt, ...)
 *	void	core_panic(struct core *core, const char *fmt, ...)
 *	size_t	core_hash(const char *key, size_t size)
 *	void	core_timer_arm(struct core *core, struct core_timer *timer,
 *			core_time_t when)
 *	void	core_timer_disarm(struct core *core, struct core_timer *timer)
 *
 *	void	core_transport_free(struct core_transport *t)
 *	int	core_transport_can_start(const struct core_transport *t)
 *	void	core_transport_start(struct core_transport *t)
 *	void	core_transport_done(struct core_transport *t, core_time_t now)
 *	int	core_queue_limit(const struct core_queue *q)
 *	int	core_queue_open(const struct core_queue *q)
 *	void	core_queue_ready_update(struct core_queue *q)
 *
 *	Jobs, entries, messages (job.c, entry.c, message.c):
 *	struct core_job *core_job_create(struct core_message *m,
 *			struct core_transport *t)
 *	void	core_job_free(struct core_job *job)
 *	void	core_job_entry_added(struct core_job *job)
 *	void	core_job_entry_dropped(struct core_job *job)
 *	void	core_job_entry_selected(struct core_job *job)
 *	void	core_job_block(struct core_job *job)
 *	void	core_job_unstack(struct core_job *job)
 *	void	core_job_retire(struct core_job *job)
 *	void	core_candidate_reset(struct core_transport *t)
 *	void	core_queue_unblock(struct core_queue *q)
 *	void	core_queue_destroy(struct core_queue *q)
 *	void	core_queue_drop_entries(struct core_queue *q)
 *	void	core_queue_defer_todo(struct core_queue *q, const char *reason,
 *			core_time_t now)
 *	void	core_entry_start(struct core_entry *e, core_time_t now)
 *	void	core_entry_free(struct core_entry *e, core_time_t now)
 *	void	core_entry_free_rcpts(struct core_entry *e)
 *	void	core_message_free(struct core_message *m)
 *
 *	Recipient memory limits (rcpt.c):
 *	void	core_rcpt_job_linked(struct core_job *job)
 *	void	core_rcpt_move_limits(struct core_job *job)
 *	void	core_rcpt_preempted(struct core_job *job)
 *	void	core_rcpt_read_done(struct core_message *m)
 *	long	core_rcpt_more(struct core_message *m, core_time_t now,
 *			long max)
 *	int	core_rcpt_refill_due(const struct core_message *m,
 *			const struct core_transport *t, core_time_t now)
 * DESCRIPTION
 *	Memory comes from util/'s allocators, which never return NULL
 *	(util/ is libc-only and deterministic, so core/ may use it).
 *	core_log() formats a line and hands it to the log callback.
 *	core_panic() reports a broken invariant (a bug, never bad input)
 *	through the log callback, then util_panic() aborts. Timers are
 *	kept in one list sorted by time; arming searches from the tail,
 *	because most timers are set to "now + a fixed delay" and so belong
 *	at the end.
 *
 *	The transport functions are the transport's half of a delivery
 *	start and end (queue.c calls them); core_queue_limit() is the
 *	queue's effective concurrency limit (1 under a destination rate
 *	delay, 0 for none); core_queue_open() says whether the queue itself
 *	(not counting its transport) may start one more delivery.
 *	core_queue_ready_update() recounts the queue in its transport's
 *	ready_queues (open, with entries waiting) after anything that may
 *	have changed either: every change of state, window, busy or todo
 *	calls it, so that a transport with no ready queue answers "nothing"
 *	without looking at its jobs (queue.c).
 *
 *	The job, entry and message functions are described in job.c,
 *	entry.c and message.c, the recipient limits in rcpt.c.
 */

#include "core/core.h"
#include "util/util.h"

#include <sys/queue.h>

struct core_timer;

void core_log(struct core *core, enum core_log_level level, const char *fmt,
              ...) __attribute__((format(printf, 3, 4)));
size_t core_hash(const char *key, size_t size);
void core_panic(struct core *core, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void core_timer_arm(struct core *core, struct core_timer *timer,
                    core_time_t when);
void core_timer_disarm(struct core *core, struct core_timer *timer);
void core_transport_free(struct core_transport *t);
int core_transport_can_start(const struct core_transport *t);
void core_transport_start(struct core_transport *t);
void core_transport_done(struct core_transport *t, core_time_t now);
int core_queue_limit(const struct core_queue *q);
int core_queue_open(const struct core_queue *q);
void core_queue_ready_update(struct core_queue *q);

struct core_job *core_job_create(struct core_message *m,
                                 struct core_transport *t);
void core_job_free(struct core_job *job);
void core_job_entry_added(struct core_job *job);
void core_job_entry_dropped(struct core_job *job);
void core_job_entry_selected(struct core_job *job);
void core_job_block(struct core_job *job);
void core_job_unstack(struct core_job *job);
void core_job_retire(struct core_job *job);
void core_candidate_reset(struct core_transport *t);
void core_queue_unblock(struct core_queue *q);
void core_queue_destroy(struct core_queue *q);
void core_queue_drop_entries(struct core_queue *q);
void core_queue_defer_todo(struct core_queue *q, const char *reason,
                           core_time_t now);
void core_entry_start(struct core_entry *e, core_time_t now);
void core_entry_free(struct core_entry *e, core_time_t now);
void core_entry_free_rcpts(struct core_entry *e);
void core_message_free(struct core_message *m);
void core_rcpt_job_linked(struct core_job *job);
void core_rcpt_move_limits(struct core_job *job);
void core_rcpt_preempted(struct core_job *job);
void core_rcpt_read_done(struct core_message *m);
long core_rcpt_more(struct core_message *m, core_time_t now, long max);
int core_rcpt_refill_due(const struct core_message *m,
                         const struct core_transport *t, core_time_t now);

enum core_queue_state {
    CORE_QUEUE_READY,     /* may start deliveries up to the window */
    CORE_QUEUE_DEAD,      /* suspended until timer.when */
    CORE_QUEUE_RATE_WAIT, /* destination rate delay until timer.when */
};

struct core_timer {
    core_time_t when;
    void (*fire)(struct core *core, struct core_timer *timer, core_time_t now);
    int armed;
    TAILQ_ENTRY(core_timer) link;
};

struct core_transport;
struct core_job;
struct core_peer;

TAILQ_HEAD(core_entry_list, core_entry);
TAILQ_HEAD(core_peer_list, core_peer);
TAILQ_HEAD(core_job_list, core_job);

/* A batch of recipients of one message for one destination queue. */
struct core_entry {
    struct core_peer *peer;
    TAILQ_ENTRY(core_entry) peer_link;  /* peer's waiting entries */
    TAILQ_ENTRY(core_entry) queue_link; /* queue's todo or busy list */
    int busy;                           /* selected, not done */
    int nrcpt, cap;
    uint64_t *rcpt;    /* the caller's recipient numbers */
    uint64_t rcpt_one; /* rcpt's storage while cap is 1 */
};

/* One job's share of one destination queue. */
struct core_peer {
    struct core_job *job;
    struct core_queue *queue;
    TAILQ_ENTRY(core_peer) link; /* job's peers, round-robin */
    struct core_entry_list todo; /* entries not yet selected */
    int entries;                 /* entries not yet done */
};

/* One message within one transport. */
struct core_job {
    struct core_message *message;
    struct core_transport *transport;
    TAILQ_ENTRY(core_job) list;   /* scheduler's job list */
    TAILQ_ENTRY(core_job) bytime; /* enqueue-time job list */
    struct core_peer_list peers;
    int read_entries;     /* entries made so far */
    int selected_entries; /* of which handed out */
    int slots_available;  /* +1 per selection; / slot_cost when used */
    int slots_used;       /* preemptor: used minus expected */
    int stack_level;      /* -1 retired, 0 on the list, >0 preempting */
    struct core_job *stack_parent;
    struct core_job_list stack_children;
    TAILQ_ENTRY(core_job) stack_siblings;
    unsigned blocker_tag;
    struct core_job *next_of_message;
    long rcpt_count; /* recipients in core, in its entries */
    long rcpt_limit; /* recipient slots it holds (rcpt.c) */
};

struct core_message {
    TAILQ_ENTRY(core_message) link; /* all messages of the core */
    uint64_t id;                    /* the caller's */
    void *ctx;                      /* the caller's */
    core_time_t queued;             /* entered the active queue */
    struct core *core;
    struct core_job *jobs;
    long entries; /* not yet done, all jobs */
    int released;
    int holds;               /* the caller still routes some recipients */
    long rcpt_count;         /* recipients in core */
    long rcpt_limit;         /* recipient slots: minimum + its jobs' */
    long rcpt_unread;        /* recipients the caller has not read yet */
    long reads;              /* batches read */
    core_time_t refill_time; /* when the last batch was read */
};

struct core_queue {
    char *key;
    struct core_transport *transport;
    enum core_queue_state state;
    int window;              /* concurrency allowed while READY */
    int busy;                /* deliveries in flight */
    int cap;                 /* at most this many busy (leases), -1: none */
    double success;          /* positive feedback accumulator */
    double failure;          /* negative feedback accumulator */
    double fail_cohorts;     /* failed pseudo-cohorts since the last success */
    char *dead_reason;       /* why it is dead, while DEAD */
    int suspended;           /* DEAD by the operator's suspension */
    struct core_timer timer; /* revival or end of rate delay */
    struct core_queue *hash_next;
    TAILQ_ENTRY(core_queue) link; /* transport's queues; round-robin */
    struct core_entry_list todo;  /* waiting entries, FIFO */
    struct core_entry_list busy_list;
    int todo_count;
    int ready;                   /* counted in transport's ready_queues */
    unsigned blocker_tag;        /* = transport's: blocking a job */
    struct core_peer *last_peer; /* recipient assignment cache */
    core_time_t last_done;       /* when a delivery last ended, or -1 */
    int cache_store;             /* on-demand session caching is on */
    void *ctx;                   /* the caller's */
};

TAILQ_HEAD(core_queue_list, core_queue);

struct core_transport {
    char *name;
    struct core *core;
    struct core_transport_params params;
    const struct core_concurrency_policy *policy;
    const struct core_job_policy *scheduler;
    int busy;                         /* deliveries in flight, all queues */
    int ready_queues;                 /* queues open with entries waiting */
    int rate_wait;                    /* paused by the transport rate delay */
    struct core_job_list jobs;        /* the scheduler's job list */
    struct core_job_list jobs_bytime; /* by enqueue time */
    struct core_job *current;         /* job of the last selection */
    long rcpt_unused;                 /* the recipient pool (may go < 0) */
    struct core_job *next_unread;     /* first job, by time, still unread */
    unsigned blocker_tag;             /* odd; jobs and queues with it block */
    struct core_job *candidate;       /* candidate cache: the result, */
    struct core_job *candidate_for;   /* for this current job, */
    core_time_t candidate_sec;        /* in this second */
    int candidate_valid;
    struct core_timer timer;         /* end of the transport rate delay */
    int suspended;                   /* cannot work: nothing starts */
    char *suspend_reason;            /* why, while suspended */
    struct core_timer suspend_timer; /* end of transport_retry_time */
    struct core_queue_list queues;
    struct core_queue **hash; /* queues by key */
    size_t hash_size;
    size_t queue_count;
    struct core_transport *next;
};

TAILQ_HEAD(core_timer_list, core_timer);
TAILQ_HEAD(core_message_list, core_message);

struct core {
    struct core_callbacks cb;
    void *ctx;
    struct core_transport *transports;
    struct core_transport *rr_next; /* core_select() starts here */
    struct core_timer_list timers;  /* armed timers, by time */
    struct core_message_list messages;
    long rcpt_count;       /* recipients in core, all messages */
    long msg_rcpt_limit;   /* qmgr_message_recipient_limit */
    long msg_rcpt_minimum; /* qmgr_message_recipient_minimum */
};

/* Named predicates. */
#define CORE_QUEUE_DEAD_P(q)          ((q)->state == CORE_QUEUE_DEAD)
#define CORE_TRANSPORT_SUSPENDED_P(t) ((t)->suspended)
#define CORE_QUEUE_READY_P(q)         ((q)->state == CORE_QUEUE_READY)
#define CORE_JOB_BLOCKER_P(j)         ((j)->blocker_tag == (j)->transport->blocker_tag)
#define CORE_JOB_RETIRED_P(j)         ((j)->stack_level < 0)

#endif
