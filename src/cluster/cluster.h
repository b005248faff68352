#ifndef SLUICE_CLUSTER_H
#define SLUICE_CLUSTER_H

/*
 * NAME
 *	cluster 3 - daemons sharing destination state on Redis
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_url_parse(const char *text, struct cluster_url *u,
 *			char *why, size_t whylen)
 *	char	*cluster_url_shown(const char *text)
 *	int	cluster_tls_check(const struct cluster_config *cfg,
 *			char *why, size_t whylen)
 *	int	cluster_share(int limit, int members)
 *	int	cluster_conns(int busy, int idle, int pending)
 *	int	cluster_idle_keep(int cap, int busy, int idle, int pending)
 *	int	cluster_alone_cap(const struct cluster_alone *a,
 *			int64_t now, int share, int held)
 *
 *	struct cluster_leases *cluster_leases_create(void)
 *	void	cluster_leases_free(struct cluster_leases *t)
 *	void	cluster_leases_demand(struct cluster_leases *t,
 *			const char *name, int limit, int want, int busy)
 *	size_t	cluster_leases_round(struct cluster_leases *t,
 *			struct cluster_lease_req **reqs)
 *	void	cluster_leases_grant(struct cluster_leases *t,
 *			const char *name, int granted, int target)
 *	int	cluster_leases_cap(const struct cluster_leases *t,
 *			const char *name, int limit, int joined, int members)
 *
 *	void	cluster_leases_rate(struct cluster_leases *t,
 *			const char *name, int kind, int count,
 *			int64_t period_ms, int want)
 *	void	cluster_leases_tokens_add(struct cluster_leases *t,
 *			const char *name, int kind, int tokens)
 *	int	cluster_leases_tokens(const struct cluster_leases *t,
 *			const char *name, int kind)
 *	void	cluster_leases_spend(struct cluster_leases *t,
 *			const char *name, int kind)
 *	int64_t	cluster_leases_alone(struct cluster_leases *t, int64_t now,
 *			int members)
 *
 *	int	cluster_rate_parse(const char *text, struct cluster_rate *r,
 *			char *why, size_t whylen)
 *	int	cluster_gcra(int64_t *tat, int64_t now, int count,
 *			int64_t period, int want, int64_t *wait)
 *
 *	void	cluster_susps_set(struct cluster_susps *known,
 *			const char *dest, int64_t until)
 *	void	cluster_susps_merge(struct cluster_susps *known,
 *			const struct cluster_susp *set, size_t n,
 *			const struct cluster_susp_fns *fns, void *ctx)
 *	void	cluster_susps_clear(struct cluster_susps *known)
 *
 *	int	cluster_fact_merge(int64_t local_retry, int64_t remote_wall,
 *			int64_t now_mono, int64_t now_wall, int64_t *retry)
 *
 *	struct cluster *cluster_create(struct event_base *base,
 *			const struct cluster_config *cfg,
 *			const struct cluster_callbacks *cb)
 *	void	cluster_free(struct cluster *c)
 *	int	cluster_reconfigure(struct cluster *c,
 *			const struct cluster_config *cfg)
 *	void	cluster_poke(struct cluster *c)
 *	void	cluster_demand(struct cluster *c, const char *name,
 *			int limit, int want, int busy)
 *	int	cluster_cap(const struct cluster *c, const char *name,
 *			int limit)
 *	int	cluster_idle_cap(const struct cluster *c, const char *name,
 *			int limit)
 *	int	cluster_joined(const struct cluster *c)
 *	int	cluster_leave(struct cluster *c)
 *	int	cluster_members(const struct cluster *c)
 *	void	cluster_rate(struct cluster *c, const char *name, int kind,
 *			int count, int64_t period_ms, int want)
 *	int	cluster_tokens(const struct cluster *c, const char *name,
 *			int kind)
 *	void	cluster_spend(struct cluster *c, const char *name, int kind)
 *	void	cluster_suspend(struct cluster *c, const char *dest,
 *			int64_t until)
 *	int	cluster_suspend_held(struct cluster *c, const char *dest,
 *			cluster_held_fn *fn, void *arg)
 *	void	cluster_dead(struct cluster *c, const char *name,
 *			int64_t until, const char *why)
 *	int64_t	cluster_dead_until(const struct cluster *c,
 *			const char *name, const char **why)
 *	struct core_destdb *cluster_destdb(struct cluster *c,
 *			struct core_destdb *inner)
 * DESCRIPTION
 *	Daemons of one cluster (cluster_name) on one Redis share what they
 *	know of delivery hosts and hold a destination's concurrency limit
 *	together (doc/cluster.md, decision 100). Every scheduling decision
 *	stays local and synchronous: this layer mirrors Redis state into
 *	local numbers (a cap per destination queue, retry times in destdb)
 *	and out again, asynchronously, in one script call per sync.
 *
 *	The pure parts, unit-tested alone:
 *
 *	cluster_url_parse() reads cluster_redis_url:
 *	redis://[[USER]:PASSWORD@]IP[:PORT] (port 6379), the same with
 *	rediss:// for TLS (decision 117), or
 *	unix://[[USER]:PASSWORD@]/PATH. The host must be an IP address: a
 *	name would be looked up blocking the event loop.
 *	cluster_url_shown() is the URL for the logs, its password "***".
 *	cluster_tls_check() says whether cfg's TLS files for a rediss://
 *	URL make a client context (conn.c).
 *
 *	cluster_share() is a member's share of a limit when it decides
 *	alone: limit divided by the live members it last knew, rounded
 *	down, at least 1 (0: no limit).
 *
 *	cluster_alone_cap() is a queue's cap while the member is cut off
 *	from Redis (alone.c, decision 120): 1 before it ever had a reply,
 *	no more than the leases it held until a->grace_end, its share until
 *	a->deadline (cluster_alone_time after its last sync), 1 after.
 *
 *	cluster_conns() is how many connections a queue's leases must
 *	cover: its deliveries in flight (busy), each with a connection or
 *	about to have one, and the idle connections the agent's cache
 *	keeps for it beyond those that its deliveries not yet connected
 *	(pending) will take. cluster_idle_keep() is how many of the idle
 *	connections may stay under a cap on the queue (-1: all): those
 *	that keep cluster_conns() within the cap, or within the
 *	deliveries in flight when they exceed it (idle.c).
 *
 *	The lease table: cluster_leases_demand() records a queue's demand
 *	for this round (name "TRANSPORT:QUEUE", its concurrency limit, the
 *	connections it could use, those it must keep: cluster_conns());
 *	cluster_leases_round() lists what the next script call carries
 *	(every queue with demand, leases or a want to withdraw; a queue not
 *	named this round asks for nothing) and forgets the queues with
 *	none of these; cluster_leases_grant() stores a reply's leases held
 *	and target; cluster_leases_cap() is how many deliveries the queue
 *	may have in flight: the leases held or the target, the lower,
 *	while joined (0 before the first grant), the share while alone, -1
 *	(no cap) for a queue without a limit.
 *
 *	Rates (decisions 102 and 112), of two kinds: CLUSTER_RATE_MSG
 *	(<transport>_destination_rate, deliveries started) and
 *	CLUSTER_RATE_CONN (<transport>_destination_connection_rate,
 *	connections opened). A queue with a rate names it each round with
 *	cluster_leases_rate() (count per period, and the starts it wants
 *	tokens for); granted tokens are added with
 *	cluster_leases_tokens_add(), one is spent per start
 *	(cluster_leases_spend()); cluster_leases_tokens() says how many are
 *	left, -1 for a queue without that rate. cluster_leases_alone()
 *	grants the tokens of the round's rate wants itself, from this
 *	member's share of each rate (count / members, at least 1) on its
 *	own GCRA, and returns the ms until one more would fit (-1: none
 *	waits). cluster_rate_parse()
 *	reads COUNT/TIME; cluster_gcra() is the arithmetic (rate.c).
 *
 *	Suspensions (suspend.c, decision 103) and dead destinations
 *	(decision 113) are sets the cluster shares (shared.c): as this
 *	member last applied them, the changes made here on their way out,
 *	and the merge of a pulled set into them.
 *
 *	cluster_fact_merge() decides whether a retry time another member
 *	published (wall-clock milliseconds) replaces the local one
 *	(monotonic milliseconds, -1: none): when it is later and still in
 *	the future; then *retry is it on the local clock.
 *
 *	The object: cluster_create() connects (never blocking) and starts
 *	syncing; cluster_reconfigure() applies a reload (another URL, name
 *	or prefix: it leaves for that cluster); cluster_poke() asks for a sync soon (demand changed); at
 *	each sync the demand callback names every queue's demand with
 *	cluster_demand(), and after each reply or change of state the caps
 *	callback reads cluster_cap() for each queue, and trims its idle
 *	connections to cluster_idle_cap() (the same but alone past the
 *	share's end: 0, decision 120). cluster_rate(),
 *	cluster_tokens() and cluster_spend() are the lease table's for a
 *	queue's rate; alone, the member grants its tokens itself from its
 *	share of the rate. cluster_suspend() publishes a suspension made
 *	here (until: wall-clock ms, 0 until resumed, -1 resumed; kept until
 *	Redis has it); the suspend and resume callbacks apply another
 *	member's at each pull. cluster_suspend_held() tells a resume made
 *	here whether the cluster held dest suspended: 1 at once when this
 *	member knows it, else -2 and fn(arg, 1 or 0) when Redis answered
 *	(fn(arg, -1): no answer), -1 without a connection (cluster.c). cluster_dead() publishes a destination queue
 *	("TRANSPORT:QUEUE") found dead here, until its revival (wall-clock
 *	ms; -1: revived here), with the reason (decision 113); the dead
 *	callbacks apply another member's at each pull, and
 *	cluster_dead_until() is the revival time of a queue the cluster
 *	holds dead (-1: none), for a queue made after the pull.
 *	cluster_joined() says
 *	whether Redis answers; cluster_leave(), at a clean stop, sends one
 *	last sync that gives back every lease and want and takes this
 *	member out of the members (decision 136), and returns 1 while its
 *	reply is awaited (bounded by cluster_redis_timeout), 0 once it is
 *	in, given up, or not needed (never joined, alone); no sync follows; cluster_members() the live members last
 *	known. cluster_destdb() wraps Finch's destdb: failures and
 *	recoveries of hosts go out, other members' come in.
 */

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct core_destdb;

struct cluster_url {
    int unix_socket;
    int tls;        /* rediss:// */
    char path[108]; /* unix:// */
    char ip[64];    /* redis:// */
    int port;
    char user[64];
    char password[256];
};

int cluster_url_parse(const char *text, struct cluster_url *u, char *why,
                      size_t whylen);
char *cluster_url_shown(const char *text);
struct cluster_config;
int cluster_tls_check(const struct cluster_config *cfg, char *why,
                      size_t whylen);
int cluster_share(int limit, int members);
int cluster_conns(int busy, int idle, int pending);

/* A member cut off from Redis (decision 120): monotonic ms. */
struct cluster_alone {
    int known;         /* it had a reply from this cluster */
    int64_t grace_end; /* until then: no more than the leases held */
    int64_t deadline;  /* from then on: 1 per destination */
};

int cluster_alone_cap(const struct cluster_alone *a, int64_t now, int share,
                      int held);
int cluster_idle_keep(int cap, int busy, int idle, int pending);

struct cluster_leases;

/* A queue's rates: of deliveries started (messages), of connections
 * opened (decision 112). */
enum cluster_rate_kind { CLUSTER_RATE_MSG, CLUSTER_RATE_CONN, CLUSTER_RATES };

struct cluster_lease_req {
    char name[256];
    int limit, want, busy;
    struct {
        int count, want; /* count 0: no rate */
        int64_t period;
    } rate[CLUSTER_RATES];
};

struct cluster_leases *cluster_leases_create(void);
void cluster_leases_free(struct cluster_leases *t);
void cluster_leases_demand(struct cluster_leases *t, const char *name,
                           int limit, int want, int busy);
size_t cluster_leases_round(struct cluster_leases *t,
                            struct cluster_lease_req **reqs);
void cluster_leases_grant(struct cluster_leases *t, const char *name,
                          int granted, int target);
int cluster_leases_cap(const struct cluster_leases *t, const char *name,
                       int limit, int joined, int members);

struct cluster_rate {
    int count; /* per period; 0: no rate */
    int64_t period_ms;
};

int cluster_rate_parse(const char *text, struct cluster_rate *r, char *why,
                       size_t whylen);
int cluster_gcra(int64_t *tat, int64_t now, int count, int64_t period, int want,
                 int64_t *wait);
void cluster_leases_rate(struct cluster_leases *t, const char *name, int kind,
                         int count, int64_t period_ms, int want);
void cluster_leases_tokens_add(struct cluster_leases *t, const char *name,
                               int kind, int tokens);
int cluster_leases_tokens(const struct cluster_leases *t, const char *name,
                          int kind);
void cluster_leases_spend(struct cluster_leases *t, const char *name, int kind);
int64_t cluster_leases_alone(struct cluster_leases *t, int64_t now,
                             int members);

int cluster_fact_merge(int64_t local_retry, int64_t remote_wall,
                       int64_t now_mono, int64_t now_wall, int64_t *retry);

struct cluster_susp {
    char dest[256];
    int64_t until; /* wall-clock ms; 0: until resumed; -1: resumed */
    char why[200]; /* a dead destination's reason; else empty */
};

struct cluster_susps {
    struct cluster_susp *v;
    size_t n, cap;
};

struct cluster_susp_fns {
    void (*suspend)(void *ctx, const char *dest, int64_t until,
                    const char *why);
    void (*resume)(void *ctx, const char *dest);
};

/* A set the cluster shares: as applied, changed here, being sent. */
struct cluster_shared {
    struct cluster_susps known, out, sent;
};

void cluster_susps_set(struct cluster_susps *known, const char *dest,
                       int64_t until);
void cluster_susps_merge(struct cluster_susps *known,
                         const struct cluster_susp *set, size_t n,
                         const struct cluster_susp_fns *fns, void *ctx);
void cluster_susps_clear(struct cluster_susps *known);
void cluster_susps_set_why(struct cluster_susps *known, const char *dest,
                           int64_t until, const char *why);

void cluster_shared_change(struct cluster_shared *s, const char *dest,
                           int64_t until, const char *why);
void cluster_shared_send(struct cluster_shared *s);
void cluster_shared_sent(struct cluster_shared *s);
void cluster_shared_unsent(struct cluster_shared *s);
void cluster_shared_pulled(struct cluster_shared *s,
                           const struct cluster_susp *set, size_t n,
                           const struct cluster_susp_fns *fns, void *ctx);
const struct cluster_susp *cluster_shared_find(const struct cluster_shared *s,
                                               const char *dest);
void cluster_shared_clear(struct cluster_shared *s);

struct cluster;

struct cluster_config {
    const char *url;
    const char *name;   /* cluster_name */
    const char *prefix; /* cluster_key_prefix */
    const char *member; /* this daemon: host name and process id */
    int64_t lease_ms;   /* cluster_lease_time */
    int64_t timeout_ms; /* cluster_redis_timeout */
    /* rediss:// (decision 117): cluster_redis_tls_CAfile, _cert_file,
     * _key_file, _servername; NULL or empty: none */
    const char *tls_ca_file, *tls_cert_file, *tls_key_file;
    const char *tls_servername;
    int64_t alone_ms; /* cluster_alone_time */
};

struct cluster_callbacks {
    void (*log)(void *ctx, int warning, const char *line);
    void (*demand)(void *ctx); /* name each queue's demand now */
    void (*caps)(void *ctx);   /* the caps may have changed */
    void *ctx;
    struct cluster_susp_fns susp; /* another member's suspend or resume */
    struct cluster_susp_fns dead; /* another member's dead destination
                                     (dest: "TRANSPORT:QUEUE") or revival */
};

struct cluster *cluster_create(struct event_base *base,
                               const struct cluster_config *cfg,
                               const struct cluster_callbacks *cb);
void cluster_free(struct cluster *c);
int cluster_reconfigure(struct cluster *c, const struct cluster_config *cfg);
void cluster_poke(struct cluster *c);
void cluster_demand(struct cluster *c, const char *name, int limit, int want,
                    int busy);
int cluster_cap(const struct cluster *c, const char *name, int limit);
int cluster_idle_cap(const struct cluster *c, const char *name, int limit);
int cluster_joined(const struct cluster *c);
int cluster_leave(struct cluster *c);
void cluster_suspend(struct cluster *c, const char *dest, int64_t until);
typedef void cluster_held_fn(void *arg, int held);
int cluster_suspend_held(struct cluster *c, const char *dest,
                         cluster_held_fn *fn, void *arg);
void cluster_dead(struct cluster *c, const char *name, int64_t until,
                  const char *why);
int64_t cluster_dead_until(const struct cluster *c, const char *name,
                           const char **why);
void cluster_rate(struct cluster *c, const char *name, int kind, int count,
                  int64_t period_ms, int want);
int cluster_tokens(const struct cluster *c, const char *name, int kind);
void cluster_spend(struct cluster *c, const char *name, int kind);
int cluster_members(const struct cluster *c);
struct core_destdb *cluster_destdb(struct cluster *c,
                                   struct core_destdb *inner);

#endif
