/*
 * NAME
 *	cluster 3 - the queue manager as a member of a cluster on Redis
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_cluster_open(struct qmgr *q)
 *	void	qm_cluster_close(struct qmgr *q)
 *	void	qm_cluster_reload(struct qmgr *q)
 *	void	qm_cluster_queue(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_poke(struct qmgr *q)
 *	void	qm_cluster_started(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_done(struct qmgr *q, struct core_queue *cq)
 *	int	qm_cluster_keeps(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_suspended(struct qmgr *q, const char *dest,
 *			int64_t duration_ms)
 *	void	qm_cluster_resumed(struct qmgr *q, const char *dest)
 *	int	qm_cluster_held(struct qmgr *q, const char *dest,
 *			cluster_held_fn *fn, void *arg)
 *	struct core_destdb *qm_cluster_destdb(struct qmgr *q,
 *			struct core_destdb *inner)
 * DESCRIPTION
 *	With cluster_redis_url set, qm_cluster_open() joins the cluster
 *	(cluster/, doc/cluster.md); unset, every function here does
 *	nothing and the daemon decides alone, as it always did.
 *
 *	A destination queue's deliveries in flight are capped by the
 *	connection leases this daemon holds for it (core_queue_cap_set()):
 *	at each sync the queue's demand goes out (its
 *	<transport>_destination_concurrency_limit, the deliveries it could
 *	run, min(limit, in flight + waiting), nothing more while it is
 *	dead, and those in flight); the caps come back.
 *	The leases cover the connections the agent's cache keeps idle for
 *	the queue as well (decision 111), and under Finch its idle workers
 *	(qm_finch_idle(), decision 122): they count in its demand
 *	(cluster_conns()), and when its cap is below what it uses the idle
 *	connections above the cap close (cluster_idle_keep()); an idle
 *	queue with idle connections is kept (qm_cluster_keeps()), so that
 *	its demand keeps their leases until they close.
 *	qm_cluster_queue() gives a new queue its cap at once (0 until its
 *	first grant, the share while alone); qm_cluster_poke(), at each
 *	dispatch, asks for a sync, except while the caps themselves are
 *	being applied (that dispatch changes no demand).
 *
 *	A queue with <transport>_destination_rate also asks for starts (as
 *	many as wait beyond the tokens in hand, a burst at most) and its cap
 *	is at most its deliveries in flight plus its tokens;
 *	qm_cluster_started() spends one for each delivery started, and
 *	qm_cluster_done() lowers the cap with each delivery ended, so that
 *	a start always takes a token.
 *
 *	qm_cluster_suspended() and qm_cluster_resumed() publish the
 *	operator's `sluice suspend` and `resume` (decision 103); another
 *	member's are applied here through qmgr_suspend() and qmgr_resume(),
 *	logged as "cluster NAME: suspend DEST[ for Ns]: by the cluster"
 *	and "cluster NAME: resume DEST: by the cluster". qm_cluster_held()
 *	asks whether the cluster holds DEST suspended, for an operator's
 *	resume here (cluster_suspend_held()).
 *
 *	qm_cluster_destdb() shares Finch's destdb with the cluster
 *	(cluster_destdb()); without a cluster it is inner itself.
 *	qm_cluster_close() leaves: the leases expire in Redis after
 *	cluster_lease_time. qm_cluster_reload() applies a reload's cluster
 *	parameters (cluster_reconfigure(): another URL, name or prefix is
 *	another cluster to join); setting or emptying cluster_redis_url
 *	waits for a restart, with a warning.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void queue_name(struct core_queue *cq, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%s", core_transport_name(core_queue_transport(cq)),
             core_queue_key(cq));
}

static int queue_limit(struct qmgr *q, struct core_queue *cq)
{
    return (int)conf_int(q->conf, core_transport_name(core_queue_transport(cq)),
                         CONF_default_destination_concurrency_limit);
}

typedef void queue_fn(struct qmgr *q, struct core_queue *cq);

static void each_queue(struct qmgr *q, queue_fn *fn)
{
    struct core_transport *t = NULL;
    struct core_queue *cq;

    while ((t = core_transport_next(q->core, t)) != NULL)
        for (cq = NULL; (cq = core_queue_next(t, cq)) != NULL;)
            fn(q, cq);
}

/* The queue's rate of each kind (checked at start): of deliveries
 * started, of connections opened. */
static const enum conf_param_id rate_param[CLUSTER_RATES] = {
    CONF_default_destination_rate, CONF_default_destination_connection_rate};

static int queue_rate(struct qmgr *q, struct core_queue *cq, int kind,
                      struct cluster_rate *r)
{
    char why[200];

    return cluster_rate_parse(
               conf_str(q->conf, core_transport_name(core_queue_transport(cq)),
                        rate_param[kind]),
               r, why, sizeof(why)) == 0 &&
           r->count > 0;
}

/*
 * The agent's idle connections for cq (by its cache key); its
 * deliveries under way (*live: in the agent or before it; starting: one
 * more, being started), of which *pending are not connected yet and will
 * take the idle ones first. core/'s busy count is higher: it holds a
 * delivery until its outcome is on disk, and the agent's session until
 * the loop's next turn, their connection back in the cache (counted as
 * idle) or closed; without idle connections it is *live.
 */
static int queue_idle(struct qmgr *q, struct core_queue *cq, int starting,
                      int *pending, int *live)
{
    const struct qm_dest *dest = core_queue_ctx(cq);
    const struct qm_delivery *d;
    int idle = (int)deliver_cache_idle(q->cache, dest->route.key.cache) +
               qm_finch_idle(q, cq); /* Finch's workers (decision 122) */

    *pending = *live = starting;
    if (idle == 0) {
        *live += core_queue_busy(cq);
        return 0;
    }
    LIST_FOREACH(d, &q->deliveries, link)
        if (d->queue == cq && d->session == NULL) {
            ++*live;
            ++*pending;
        } else if (d->queue == cq && !deliver_session_done(d->session)) {
            ++*live; /* it holds a connection, or is getting one */
        }
    return idle;
}

/* Idle connections that no delivery of cq is about to take: the next
 * starts take them, and open no connection. */
static int queue_spare(struct qmgr *q, struct core_queue *cq, int starting)
{
    int pending, live, spare;

    spare = queue_idle(q, cq, starting, &pending, &live) - pending;

    return spare > 0 ? spare : 0;
}

/* Starts for what waits beyond the tokens in hand (and, for the
 * connection rate, beyond the spare idle connections), a burst at most. */
static void demand_rates(struct qmgr *q, struct core_queue *cq,
                         const char *name, int todo)
{
    struct cluster_rate r;
    int tokens, want;

    for (int k = 0; k < CLUSTER_RATES; k++) {
        if (!queue_rate(q, cq, k, &r))
            continue;
        tokens = cluster_tokens(q->cluster, name, k);
        want = todo - (tokens > 0 ? tokens : 0);
        if (k == CLUSTER_RATE_CONN)
            want -= queue_spare(q, cq, 0);
        cluster_rate(q->cluster, name, k, r.count, r.period_ms,
                     want < r.count ? want : r.count);
    }
}

static void demand_one(struct qmgr *q, struct core_queue *cq)
{
    int limit = queue_limit(q, cq), busy = core_queue_busy(cq);
    int todo = core_queue_dead(cq) ? 0 : core_queue_todo(cq);
    int want = busy + todo, pending, live, idle, conns;
    char name[256];

    queue_name(cq, name, sizeof(name));
    if (limit > 0) {
        /* the leases cover idle connections too (decision 111) */
        idle = queue_idle(q, cq, 0, &pending, &live);
        conns = cluster_conns(live, idle, pending);
        if (conns > want)
            want = conns;
        cluster_demand(q->cluster, name, limit, want < limit ? want : limit,
                       conns);
    }
    demand_rates(q, cq, name, todo);
}

/* Close the idle connections of cq that its cap does not cover. */
static void trim_idle(struct qmgr *q, struct core_queue *cq, int cap,
                      int starting)
{
    const struct qm_dest *dest = core_queue_ctx(cq);
    int pending, live, idle = queue_idle(q, cq, starting, &pending, &live);
    int keep = cluster_idle_keep(cap, live, idle, pending);
    int workers = qm_finch_idle(q, cq);

    if (keep >= idle)
        return;
    /* Finch's idle workers first: under Finch the cache holds none */
    qm_finch_trim(q, cq, keep > workers ? workers : keep);
    keep -= keep > workers ? workers : keep;
    deliver_cache_trim(q->cache, dest->route.key.cache, (size_t)keep);
}

/* The leases' cap, and no more starts than each rate's tokens allow (a
 * start that takes a spare idle connection opens none). */
static void cap_one(struct qmgr *q, struct core_queue *cq, int starting)
{
    int cap, tokens, by_rate;
    struct cluster_rate r;
    char name[256];

    queue_name(cq, name, sizeof(name));
    cap = cluster_cap(q->cluster, name, queue_limit(q, cq));
    trim_idle(q, cq, cluster_idle_cap(q->cluster, name, queue_limit(q, cq)),
              starting);
    for (int k = 0; k < CLUSTER_RATES; k++) {
        tokens = cluster_tokens(q->cluster, name, k);
        if (tokens < 0 && queue_rate(q, cq, k, &r))
            tokens = 0; /* a rate, no token yet */
        if (tokens < 0)
            continue;
        by_rate = core_queue_busy(cq) + tokens;
        if (k == CLUSTER_RATE_CONN)
            by_rate += queue_spare(q, cq, starting);
        if (cap < 0 || by_rate < cap)
            cap = by_rate;
    }
    core_queue_cap_set(cq, cap);
}

static void cap_each(struct qmgr *q, struct core_queue *cq)
{
    cap_one(q, cq, 0);
}

static void on_demand(void *ctx)
{
    each_queue(ctx, demand_one);
}

static void on_caps(void *ctx)
{
    struct qmgr *q = ctx;

    each_queue(q, cap_each);
    q->cluster_caps = 1;
    qm_dispatch(q);
    q->cluster_caps = 0;
}

/* Another member suspended dest (until: wall-clock ms, 0: until
 * resumed): so does this daemon, for what is left of it. */
static void on_suspend(void *ctx, const char *dest, int64_t until,
                       const char *unused)
{
    struct qmgr *q = ctx;
    int64_t left = until > 0 ? until - util_clock_wall_us() / 1000 : 0;
    struct util_buf out = {0};
    char why[300], span[40] = "";

    (void)unused;
    if (until > 0 && left <= 0)
        return;
    if (left > 0)
        snprintf(span, sizeof(span), " for %llds",
                 (long long)((left + 999) / 1000));
    q->cluster_applying = 1;
    if (qmgr_suspend(q, dest, left, &out, why, sizeof(why)) == 0)
        qm_log(q, QMGR_LOG_INFO, "cluster %s: suspend %s%s: by the cluster",
               conf_str(q->conf, NULL, CONF_cluster_name), dest, span);
    q->cluster_applying = 0;
    util_buf_free(&out);
}

static void on_resume(void *ctx, const char *dest)
{
    struct qmgr *q = ctx;
    struct util_buf out = {0};
    char why[300];

    q->cluster_applying = 1;
    if (qmgr_resume(q, dest, &out, why, sizeof(why)) == 0)
        qm_log(q, QMGR_LOG_INFO, "cluster %s: resume %s: by the cluster",
               conf_str(q->conf, NULL, CONF_cluster_name), dest);
    q->cluster_applying = 0;
    util_buf_free(&out);
}

void qm_cluster_suspended(struct qmgr *q, const char *dest, int64_t duration_ms)
{
    if (q->cluster != NULL && !q->cluster_applying)
        cluster_suspend(
            q->cluster, dest,
            duration_ms > 0 ? util_clock_wall_us() / 1000 + duration_ms : 0);
}

void qm_cluster_resumed(struct qmgr *q, const char *dest)
{
    if (q->cluster != NULL && !q->cluster_applying)
        cluster_suspend(q->cluster, dest, -1);
}

/* Does the cluster hold dest suspended (cluster_suspend_held())? -1
 * without a cluster. */
int qm_cluster_held(struct qmgr *q, const char *dest, cluster_held_fn *fn,
                    void *arg)
{
    if (q->cluster == NULL || q->cluster_applying)
        return -1;
    return cluster_suspend_held(q->cluster, dest, fn, arg);
}

static void on_log(void *ctx, int warning, const char *line)
{
    qm_log(ctx, warning ? QMGR_LOG_WARNING : QMGR_LOG_INFO, "%s", line);
}

static void on_dead(void *ctx, const char *name, int64_t until,
                    const char *why);
static void on_alive(void *ctx, const char *name);

/* The cluster's parameters as they are now; member: this daemon's. */
static struct cluster_config cluster_cfg(struct qmgr *q, const char *member)
{
    return (struct cluster_config){
        .url = conf_str(q->conf, NULL, CONF_cluster_redis_url),
        .name = conf_str(q->conf, NULL, CONF_cluster_name),
        .prefix = conf_str(q->conf, NULL, CONF_cluster_key_prefix),
        .member = member,
        .lease_ms = conf_time_ms(q->conf, NULL, CONF_cluster_lease_time),
        .timeout_ms = conf_time_ms(q->conf, NULL, CONF_cluster_redis_timeout),
        .tls_ca_file = conf_str(q->conf, NULL, CONF_cluster_redis_tls_CAfile),
        .tls_cert_file =
            conf_str(q->conf, NULL, CONF_cluster_redis_tls_cert_file),
        .tls_key_file =
            conf_str(q->conf, NULL, CONF_cluster_redis_tls_key_file),
        .tls_servername =
            conf_str(q->conf, NULL, CONF_cluster_redis_tls_server_name),
        .alone_ms = conf_time_ms(q->conf, NULL, CONF_cluster_alone_time),
    };
}

/* A reload: the cluster's parameters apply (cluster_reconfigure());
 * joining or leaving a cluster waits for a restart, as the destdb that
 * the cluster wraps is made at start. */
void qm_cluster_reload(struct qmgr *q)
{
    const char *url = conf_str(q->conf, NULL, CONF_cluster_redis_url);
    struct cluster_config cfg = cluster_cfg(q, NULL);

    if ((q->cluster != NULL) != (url[0] != '\0'))
        qm_log(q, QMGR_LOG_WARNING,
               "cluster_redis_url %s: takes effect when sluiced restarts",
               url[0] ? "set" : "emptied");
    else if (q->cluster != NULL && cluster_reconfigure(q->cluster, &cfg) < 0)
        qm_log(q, QMGR_LOG_WARNING,
               "cluster_redis_url %s does not parse: cluster unchanged", url);
}

void qm_cluster_open(struct qmgr *q)
{
    const char *url = conf_str(q->conf, NULL, CONF_cluster_redis_url);
    char member[300];
    struct cluster_config cfg;

    if (url == NULL || url[0] == '\0')
        return;
    snprintf(member, sizeof(member), "%s:%ld", q->hostname, (long)getpid());
    cfg = cluster_cfg(q, member);
    q->cluster = cluster_create(q->base, &cfg,
                                &(struct cluster_callbacks){
                                    on_log,
                                    on_demand,
                                    on_caps,
                                    q,
                                    {on_suspend, on_resume},
                                    {on_dead, on_alive},
                                });
    if (q->cluster == NULL) {
        qm_log(q, QMGR_LOG_WARNING,
               "cluster_redis_url %s does not parse: no cluster", url);
        return;
    }
    /* Finch's destdb from the start, so that the first pull fills it. */
    if (q->destdb == NULL)
        q->destdb = cluster_destdb(
            q->cluster, core_destdb_memory(conf_time_ms(
                            q->conf, NULL, CONF_destdb_record_lifetime)));
}

int qmgr_leave(struct qmgr *q)
{
    return cluster_leave(q->cluster);
}

void qm_cluster_close(struct qmgr *q)
{
    cluster_free(q->cluster);
    q->cluster = NULL;
}

void qm_cluster_queue(struct qmgr *q, struct core_queue *cq)
{
    const char *why;
    int64_t until, now = util_clock_wall_us() / 1000;
    char name[256];

    if (q->cluster == NULL)
        return;
    cap_one(q, cq, 0);
    cluster_poke(q->cluster);
    /* dead in the cluster since a pull, before this queue was made */
    queue_name(cq, name, sizeof(name));
    if ((until = cluster_dead_until(q->cluster, name, &why)) > now) {
        q->cluster_applying = 1;
        core_queue_kill(cq, qm_now_ms(), qm_now_ms() + (until - now), why,
                        "by the cluster");
        q->cluster_applying = 0;
    }
}

/* core/ declared cq dead (its detector, not a suspension): the cluster
 * hears of it, with its revival on the wall clock. */
void qm_cluster_queue_dead(void *ctx, struct core_queue *cq, const char *why)
{
    struct qmgr *q = ctx;
    struct core_queue_status st;
    char name[256];

    if (q->cluster == NULL || q->cluster_applying)
        return;
    core_queue_status(cq, &st);
    if (st.suspended || st.until == CORE_TIME_NEVER)
        return;
    queue_name(cq, name, sizeof(name));
    cluster_dead(q->cluster, name,
                 util_clock_wall_us() / 1000 + (st.until - qm_now_ms()), why);
}

/* cq is alive again here (its timer, a success, a flush): the others
 * revive it too. */
void qm_cluster_queue_alive(void *ctx, struct core_queue *cq)
{
    struct qmgr *q = ctx;
    char name[256];

    if (q->cluster == NULL || q->cluster_applying)
        return;
    queue_name(cq, name, sizeof(name));
    cluster_dead(q->cluster, name, -1, NULL);
}

/* The queue named "TRANSPORT:QUEUE" here, or NULL. */
static struct core_queue *queue_named(struct qmgr *q, const char *name)
{
    const char *colon = strchr(name, ':');
    struct core_transport *t;
    char transport[128];

    if (colon == NULL || (size_t)(colon - name) >= sizeof(transport))
        return NULL;
    snprintf(transport, sizeof(transport), "%.*s", (int)(colon - name), name);
    t = core_transport_find(q->core, transport);
    return t != NULL ? core_queue_find(t, colon + 1) : NULL;
}

/* Another member found name dead until (wall-clock ms): so is it here. */
static void on_dead(void *ctx, const char *name, int64_t until, const char *why)
{
    struct qmgr *q = ctx;
    struct core_queue *cq = queue_named(q, name);
    int64_t left = until - util_clock_wall_us() / 1000;

    if (cq == NULL || left <= 0)
        return; /* a queue made later looks it up (qm_cluster_queue()) */
    q->cluster_applying = 1;
    core_queue_kill(cq, qm_now_ms(), qm_now_ms() + left, why, "by the cluster");
    q->cluster_applying = 0;
}

/* Another member's dead destination revived: so does it here. */
static void on_alive(void *ctx, const char *name)
{
    struct qmgr *q = ctx;
    struct core_queue *cq = queue_named(q, name);

    if (cq == NULL)
        return;
    q->cluster_applying = 1;
    core_queue_revive(cq, "by the cluster");
    q->cluster_applying = 0;
}

/* Does cq have a rate with tokens? */
static int queue_rated(struct qmgr *q, const char *name)
{
    return cluster_tokens(q->cluster, name, CLUSTER_RATE_MSG) >= 0 ||
           cluster_tokens(q->cluster, name, CLUSTER_RATE_CONN) >= 0;
}

void qm_cluster_started(struct qmgr *q, struct core_queue *cq)
{
    char name[256];

    if (q->cluster == NULL)
        return;
    queue_name(cq, name, sizeof(name));
    if (!queue_rated(q, name))
        return;
    cluster_spend(q->cluster, name, CLUSTER_RATE_MSG);
    /* a connection opens unless a spare idle one is there to take */
    if (cluster_tokens(q->cluster, name, CLUSTER_RATE_CONN) >= 0 &&
        queue_spare(q, cq, 0) == 0)
        cluster_spend(q->cluster, name, CLUSTER_RATE_CONN);
    cap_one(q, cq, 1);
}

void qm_cluster_done(struct qmgr *q, struct core_queue *cq)
{
    char name[256];

    if (q->cluster == NULL)
        return;
    queue_name(cq, name, sizeof(name));
    if (queue_rated(q, name))
        cap_one(q, cq, 0); /* one fewer in flight: not one more start */
}

/* Is cq to stay, though idle, while the agent keeps connections for it?
 * Its demand keeps their leases (with no queue there would be none),
 * and the next mail for it finds them; the queue run's sweep frees it
 * once they are gone. */
int qm_cluster_keeps(struct qmgr *q, struct core_queue *cq)
{
    const struct qm_dest *dest = core_queue_ctx(cq);

    return q->cluster != NULL && queue_limit(q, cq) > 0 &&
           (deliver_cache_idle(q->cache, dest->route.key.cache) > 0 ||
            qm_finch_idle(q, cq) > 0);
}

void qm_cluster_poke(struct qmgr *q)
{
    if (q->cluster != NULL && !q->cluster_caps)
        cluster_poke(q->cluster);
}

struct core_destdb *qm_cluster_destdb(struct qmgr *q, struct core_destdb *inner)
{
    return q->cluster != NULL ? cluster_destdb(q->cluster, inner) : inner;
}
