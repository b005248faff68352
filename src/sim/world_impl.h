#ifndef SLUICE_SIM_WORLD_IMPL_H
#define SLUICE_SIM_WORLD_IMPL_H

/*
 * NAME
 *	world_impl 3h - the simulated world's structures, shared by world.c
 *	(client, events, statistics) and network.c (connections, servers)
 * SYNOPSIS
 *	#include "sim/world_impl.h"
 *
 *	int64_t world_rand(struct world *w, int64_t lo, int64_t hi)
 *	void	world_event(struct world *w, core_time_t when,
 *			enum ev_type type, struct conn *c, uint32_t gen)
 *	void	world_delivery_done(struct world *w, struct conn *c,
 *			enum core_hop hop, enum fail_kind kind)
 *	void	world_entry_done(struct world *w, struct domain *d,
 *			struct core_entry *e, enum core_hop hop,
 *			enum fail_kind kind)
 *	void	world_finch_event(struct world *w, core_time_t when,
 *			enum ev_type type, struct fconn *c, uint32_t gen)
 *	int	world_conn_reusable(const struct world *w, const struct conn *c)
 *
 *	void	net_deliver(struct world *w, struct domain *d,
 *			struct core_entry *e)
 *	void	net_event(struct world *w, const struct event *ev)
 *	void	net_domain_init(struct world *w, struct domain *d)
 *
 *	void	finch_init(struct world *w)
 *	void	finch_deliver(struct world *w, struct domain *d,
 *			struct core_entry *e)
 *	void	finch_event(struct world *w, const struct event *ev)
 *	void	finch_results(struct world *w)
 *	void	finch_free(struct world *w)
 * DESCRIPTION
 *	Memory comes from util/'s allocators, which never return NULL
 *	(out of memory, the simulator panics). world_rand() is uniform in
 *	[lo, hi] from the run's seeded generator. world_event() schedules an
 *	event; events carry a generation number so that a connection's
 *	stale events are ignored. world_delivery_done() ends the delivery a
 *	connection carried: kind FAIL_NONE for success, else why it failed;
 *	world_entry_done() does the same for an entry of d, with no
 *	connection. world_finch_event() schedules an event of a Finch
 *	connection.
 *
 *	net_deliver() carries an entry to its domain over a cached or new
 *	connection; net_event() runs a network event; net_domain_init()
 *	sets up a domain's servers.
 *
 *	Under Finch's scheduler, finch.c takes the entries instead of
 *	network.c: finch_init() makes the hosts and destdb, finch_deliver()
 *	places an entry's job, finch_event() runs its events,
 *	finch_results() fills the hosts' results and finch_free() frees
 *	what it made.
 */

#include <stdint.h>
#include <stdio.h>
#include <sys/queue.h>

#include "sim/sim.h"
#include "util/util.h"

enum conn_state {
    CONN_SYN_SENT,    /* SYN dropped, client retransmitting */
    CONN_SYNACK_WAIT, /* client "connected", server retransmitting SYN-ACK */
    CONN_LOST,        /* server forgot it; client waits for a greeting */
    CONN_QUEUED,      /* in the accept queue */
    CONN_REJECTING,   /* 421 or handshake failure on its way */
    CONN_SERVING,     /* delivering an entry */
    CONN_IDLE,        /* cached */
    CONN_CLOSED,
};

enum fail_kind {
    FAIL_NONE,
    FAIL_CONNECT,
    FAIL_GREETING,
    FAIL_REJECT,
};

enum ev_type {
    EV_ARRIVAL, /* a message of the workload arrives */
    EV_SYN_RETRY,
    EV_SYNACK_RETRY,
    EV_CLIENT_TIMEOUT,
    EV_SERVICE_DONE,
    EV_REJECT_DONE,
    EV_CACHE_EXPIRE,
    EV_FINCH_DONE, /* the first job in a Finch connection's line ends */
    EV_FINCH_FAIL, /* a dead host refuses a Finch connection */
    EV_FINCH_IDLE, /* a Finch connection was idle its max age */
};

struct domain;
struct fconn;

struct conn {
    struct domain *domain;
    struct server *server;
    struct core_entry *entry; /* the delivery it carries */
    enum conn_state state;
    uint32_t gen;         /* invalidates pending state events */
    uint32_t timeout_gen; /* invalidates the pending client timeout */
    enum fail_kind timeout_kind;
    int retries;
    int uses;
    int has_worker;
    int admitted; /* counted by the server's 421 limiter */
    core_time_t opened_at;
    TAILQ_ENTRY(conn) link; /* accept queue or idle list */
    struct conn *all_next;
};

TAILQ_HEAD(conn_list, conn);

struct server {
    int bad;
    int workers_busy;
    int admitted;
    int queued;
    struct conn_list accept_queue;
};

struct domain {
    const struct sim_domain *def;
    struct core_queue *q;
    struct server *servers;
    struct conn_list idle;
    /* statistics of client concurrency */
    core_time_t first_start; /* -1 until the first delivery */
    core_time_t stat_time;
    double busy_integral, busy2_integral;
    double measured_integral, measured_integral2;
    core_time_t measured_until;
    double start_sum, start_sum2; /* busy sampled at each start */
    long starts;
    /* trace and sequence */
    int trace_window, trace_busy;
    int trace_dirty;
    struct util_buf sequence; /* message numbers, in delivery order */
    int host0, nhosts;        /* Finch: its MX hosts in the world's */
};

struct event {
    core_time_t when;
    uint64_t seq;
    enum ev_type type;
    struct conn *conn;   /* or NULL */
    uint32_t gen;        /* or the message index (EV_ARRIVAL) */
    struct fconn *fconn; /* EV_FINCH_* */
};

/* Finch (finch.c): a job, a connection with its line, a host. */
struct fjob {
    struct core_entry *e;
    struct domain *d;
    int tries; /* hosts that failed it */
    TAILQ_ENTRY(fjob) link;
};

TAILQ_HEAD(fjob_list, fjob);

struct fhost {
    struct sim_host_result *r; /* its line of the result */
    int dead;
    double factor;         /* of the recipient delay */
    core_time_t last_fail; /* -1: none */
};

struct fconn {
    uint64_t id;
    struct fhost *host;
    struct domain *d;
    struct fjob_list line; /* the first is being served */
    int njobs;
    core_time_t opened;
    int retired, closed;
    uint32_t gen;      /* of its EV_FINCH_DONE and _FAIL */
    uint32_t idle_gen; /* of its EV_FINCH_IDLE */
    LIST_ENTRY(fconn) link;
    struct fconn *all_next;
};

struct finch_world {
    struct core_destdb *db;
    struct fhost *hosts;
    LIST_HEAD(, fconn) open_conns;
    int open;
    struct fjob_list wait;
    struct fconn *all; /* every connection, freed at the end */
    uint64_t next_id;
};

/* A message of the run. */
struct run_msg {
    struct core_message *core;
    core_time_t done_at; /* -1 while recipients are outstanding */
    int part;            /* the next recipient to read: this part, */
    long in_part;        /* this one in it, */
    long read;           /* and so many read before it */
    int inflight;        /* Finch: its jobs in flight */
};

struct world {
    const struct sim_scenario *sc;
    struct sim_result *res;
    FILE *trace;
    struct core *core;
    struct core_transport *t;
    struct domain *domains;
    struct run_msg *msgs;
    int next_arrival;
    long in_core; /* messages not yet finished */
    struct event *heap;
    size_t heap_len, heap_size;
    uint64_t seq;
    uint64_t rng;
    struct conn *all_conns;
    core_time_t now;
    struct domain **dirty; /* domains changed at this instant */
    int ndirty;
    struct finch_world finch;
};

int64_t world_rand(struct world *w, int64_t lo, int64_t hi);
void world_event(struct world *w, core_time_t when, enum ev_type type,
                 struct conn *c, uint32_t gen);
void world_delivery_done(struct world *w, struct conn *c, enum core_hop hop,
                         enum fail_kind kind);
void world_entry_done(struct world *w, struct domain *d, struct core_entry *e,
                      enum core_hop hop, enum fail_kind kind);
void world_finch_event(struct world *w, core_time_t when, enum ev_type type,
                       struct fconn *c, uint32_t gen);
int world_conn_reusable(const struct world *w, const struct conn *c);

void net_deliver(struct world *w, struct domain *d, struct core_entry *e);
void net_event(struct world *w, const struct event *ev);
void net_domain_init(struct world *w, struct domain *d);

void finch_init(struct world *w);
void finch_deliver(struct world *w, struct domain *d, struct core_entry *e);
void finch_event(struct world *w, const struct event *ev);
void finch_results(struct world *w);
void finch_free(struct world *w);

#endif
