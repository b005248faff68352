#ifndef SLUICE_SIM_H
#define SLUICE_SIM_H

/*
 * NAME
 *	sim 3 - discrete-event simulator around the real core/
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	int	sim_scenario_load(struct sim_scenario *sc, const char *base,
 *			const char *path, char *why, size_t whylen)
 *	int	sim_scenario_from_conf(struct sim_scenario *sc,
 *			const struct conf *conf, const char *name, char *why,
 *			size_t whylen)
 *	struct conf *sim_conf_create(char *why, size_t whylen)
 *	void	sim_run(const struct sim_scenario *sc, struct sim_result *res,
 *			FILE *trace)
 *	void	sim_report_header(FILE *fp, int tsv)
 *	void	sim_report_row(FILE *fp, int tsv, const struct sim_result *res)
 *	void	sim_report_footer(FILE *fp, int tsv)
 *	void	sim_report_hosts_header(FILE *fp, int tsv)
 *	void	sim_report_hosts(FILE *fp, int tsv,
 *			const struct sim_result *res)
 *	double	sim_theoretical_defer_pct(const struct sim_scenario *sc)
 * DESCRIPTION
 *	The simulator runs one delivery run of a scenario in virtual time
 *	(milliseconds): a client (the real core/ scheduler with a
 *	transport's parameters) delivers sim_recipients recipients to each
 *	of sim_destinations destinations, in entries of
 *	destination_recipient_limit recipients; each destination is an
 *	address in front of sim_servers modelled SMTP servers. The model is
 *	described in doc/sim.md.
 *
 *	As in the seed's measurements, only first delivery attempts count:
 *	an entry that fails is deferred and not retried within the run.
 *
 *	With <transport>_delivery_scheduler = finch the client is Finch's
 *	(finch.c): each destination has MX hosts (struct sim_mx), jobs go
 *	to connections with a backlog through core_finch_choose() and
 *	destdb (core_destdb_memory()), and the result has one
 *	sim_host_result per host (sim_report_hosts()).
 *
 *	sim_conf_create() returns a configuration that knows sluice's
 *	parameters and the simulator's sim_* keys. sim_scenario_load() reads
 *	a base configuration file (if base is not NULL) and then a scenario
 *	file into sc (name = the scenario's file name without extension);
 *	sim_scenario_from_conf() does the same from a conf.
 *	The client's parameters come from conf_core_params(), the daemon's
 *	own mapping of a transport's parameters to core/.
 *
 *	sim_run() runs the scenario and fills res. With trace non-NULL it
 *	appends to it CSV lines "scenario,time,destination,window,busy"
 *	(time in seconds, window as core_queue_window_report() gives it)
 *	for each instant at whose end a destination's window or busy count
 *	differs from the last line written; the caller writes the header.
 *	core/'s log lines go to the trace too, as lines starting with "#"
 *	and the time (feedback debug included when it is on).
 *
 *	The report functions print results as a table like the seed's, or
 *	with tsv set as tab-separated values with a header row.
 */

#include <stdint.h>
#include <stdio.h>

#include "conf/conf.h"
#include "core/core.h"

enum sim_overflow {
    SIM_OVERFLOW_DROP_SYN, /* full accept queue drops SYNs (FreeBSD) */
    SIM_OVERFLOW_DROP_ACK, /* full accept queue drops the final ACK (Linux) */
};

/* What is behind one destination address. */
struct sim_model {
    int servers;           /* behind one address (load balancer) */
    int bad_servers;       /* of which fail every handshake */
    int process_limit;     /* server processes, per server */
    int backlog;           /* accept queue length, per server */
    int concurrency_limit; /* 421 above this many connections, 0 = none */
    enum sim_overflow overflow;
    core_time_t syn_retry_delay; /* first retransmission, then doubling */
    int syn_retries;
    core_time_t recipient_delay;
    core_time_t recipient_delay_jitter;
    core_time_t reject_delay;
};

/* A destination's MX hosts under Finch: primaries, then secondaries. */
struct sim_mx {
    int primary;   /* hosts of the best MX preference */
    int secondary; /* hosts of the next preference */
    int dead;      /* the first this many hosts refuse every connection */
    int slow;      /* the next this many take slow_factor times as long */
    double slow_factor;
};

struct sim_domain {
    char name[64];
    struct sim_model model;
    struct sim_mx mx;
};

/* Finch's delivery scheduler, as <transport>_delivery_scheduler = finch
 * and its parameters set it up. */
struct sim_finch {
    int on;
    struct core_finch_limits limits;
    int backlog;       /* smtp_connection_backlog_threshold */
    int process_limit; /* connections of the transport */
    int host_limit;    /* connections per host */
    int session_limit; /* hosts one job tries */
    core_time_t active_max_age, idle_max_age, retry, record_lifetime;
};

/* A message of the workload: recipients per domain. */
struct sim_part {
    int domain; /* index into the scenario's domains */
    long rcpts;
};

struct sim_message {
    core_time_t arrival;
    int nparts;
    struct sim_part *parts;
    long rcpts;
};

struct sim_scenario {
    char name[128];
    char transport[64];
    struct core_transport_params params;
    int ndomains;
    struct sim_domain *domains;
    int nmessages; /* numbered from 1 in this order */
    struct sim_message *messages;
    /* The client's SMTP behaviour. */
    core_time_t connect_timeout;
    core_time_t greeting_timeout;
    int connection_caching;
    core_time_t cache_time_limit;
    core_time_t reuse_time_limit;
    int reuse_count_limit;     /* 0 = none */
    long message_rcpt_limit;   /* qmgr_message_recipient_limit */
    long message_rcpt_minimum; /* qmgr_message_recipient_minimum */
    struct sim_finch finch;
    uint64_t seed;
};

/* What one MX host saw under Finch. */
struct sim_host_result {
    char name[96];
    int domain;
    int pref;
    const char *kind;   /* "ok", "dead", "slow" */
    long delivered;     /* recipients */
    long jobs;          /* deliveries (entries) it completed */
    long connections;   /* opened to it */
    long after_failure; /* connections opened after its first failure */
    double retry_gap;   /* seconds: the shortest from a failure to the
                           next connection, -1 when none followed */
};

/* Message latency (arrival to last recipient done) for one size class. */
#define SIM_SIZE_CLASSES 5

struct sim_latency {
    long messages;
    double p50, p90, p99, max, mean; /* seconds */
};

struct sim_result {
    const struct sim_scenario *sc;
    long recipients; /* total, all destinations */
    long delivered;
    long deferred;          /* recipients whose first attempt failed */
    long timeouts_connect;  /* recipients deferred by connect timeout */
    long timeouts_greeting; /* recipients deferred by greeting timeout */
    long rejected;          /* recipients deferred by 421 or bad server */
    long suspended;         /* recipients deferred by a dead destination */
    long attempts;          /* deliveries started */
    long connections;       /* TCP connections opened */
    double concurrency_avg; /* in flight as each delivery starts */
    double concurrency_stddev;
    double concurrency_time_avg; /* deliveries in flight, time-weighted */
    double concurrency_time_stddev;
    double duration;            /* seconds of virtual time */
    long events;                /* simulator events processed */
    long max_incore_recipients; /* the most recipients core/ held */
    long max_incore_messages;   /* the most messages in core at once */
    long incore_bound;          /* the seed's total bound for the run */
    struct sim_latency latency[SIM_SIZE_CLASSES];
    char **sequence; /* per domain: message numbers in selection order */
    int nhosts;      /* Finch: every MX host of every domain */
    struct sim_host_result *hosts;
    long finch_waits; /* jobs that waited for a connection */
    long finch_moved; /* jobs that went on to another host */
};

extern const char *const sim_size_class_names[SIM_SIZE_CLASSES];

struct conf *sim_conf_create(char *why, size_t whylen);
int sim_scenario_load(struct sim_scenario *sc, const char *base,
                      const char *path, char *why, size_t whylen);
int sim_scenario_from_conf(struct sim_scenario *sc, const struct conf *conf,
                           const char *name, char *why, size_t whylen);
void sim_scenario_free(struct sim_scenario *sc);
void sim_run(const struct sim_scenario *sc, struct sim_result *res,
             FILE *trace);
void sim_result_free(struct sim_result *res);
int sim_size_class(long rcpts);
void sim_report_latency_header(FILE *fp, int tsv);
void sim_report_latency(FILE *fp, int tsv, const struct sim_result *res);
void sim_report_sequence(FILE *fp, const struct sim_result *res);
void sim_report_hosts_header(FILE *fp, int tsv);
void sim_report_hosts(FILE *fp, int tsv, const struct sim_result *res);
void sim_report_header(FILE *fp, int tsv);
void sim_report_row(FILE *fp, int tsv, const struct sim_result *res);
void sim_report_footer(FILE *fp, int tsv);
double sim_theoretical_defer_pct(const struct sim_scenario *sc);

#endif
