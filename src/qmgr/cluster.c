/*
 * NAME
 *	cluster 3 - the queue manager as a member of a cluster on Redis
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_cluster_open(struct qmgr *q)
 *	void	qm_cluster_close(struct qmgr *q)
 *	void	qm_cluster_queue(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_poke(struct qmgr *q)
 *	void	qm_cluster_started(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_done(struct qmgr *q, struct core_queue *cq)
 *	void	qm_cluster_gone(struct qmgr *q, const struct qm_dest *dest)
 *	void	qm_cluster_suspended(struct qmgr *q, const char *dest,
 *			int64_t duration_ms)
 *	void	qm_cluster_resumed(struct qmgr *q, const char *dest)
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
 *	the queue as well (decision 111): they count in its demand
 *	(cluster_conns()), and when its cap is below what it uses the idle
 *	connections above the cap close (cluster_idle_keep()); a queue
 *	freed closes its idle connections with it (qm_cluster_gone()).
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
 *	and "cluster NAME: resume DEST: by the cluster".
 *
 *	qm_cluster_destdb() shares Finch's destdb with the cluster
 *	(cluster_destdb()); without a cluster it is inner itself.
 *	qm_cluster_close() leaves: the leases expire in Redis after
 *	cluster_lease_time.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
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

/* The queue's <transport>_destination_rate (checked at start). */
static int queue_rate(struct qmgr *q, struct core_queue *cq,
                      struct cluster_rate *r)
{
    char why[200];

    return cluster_rate_parse(
               conf_str(q->conf, core_transport_name(core_queue_transport(cq)),
                        CONF_default_destination_rate),
               r, why, sizeof(why)) == 0 &&
           r->count > 0;
}

/* The agent's idle connections for cq (by its cache key), and its
 * deliveries not connected yet, which will take them first. */
static int queue_idle(struct qmgr *q, struct core_queue *cq, int *pending)
{
    const struct qm_dest *dest = core_queue_ctx(cq);
    const struct qm_delivery *d;
    int idle = (int)deliver_cache_idle(q->cache, dest->route.key.cache);

    *pending = 0;
    if (idle > 0)
        LIST_FOREACH(d, &q->deliveries, link)
            *pending += d->queue == cq && d->session == NULL;
    return idle;
}

static void demand_one(struct qmgr *q, struct core_queue *cq)
{
    int limit = queue_limit(q, cq), busy = core_queue_busy(cq);
    int todo = core_queue_dead(cq) ? 0 : core_queue_todo(cq);
    int want = busy + todo, tokens, pending, idle, conns;
    struct cluster_rate r;
    char name[256];

    queue_name(cq, name, sizeof(name));
    if (limit > 0) {
        /* the leases cover idle connections too (decision 111) */
        idle = queue_idle(q, cq, &pending);
        conns = cluster_conns(busy, idle, pending);
        if (conns > want)
            want = conns;
        cluster_demand(q->cluster, name, limit, want < limit ? want : limit,
                       conns);
    }
    if (queue_rate(q, cq, &r)) {
        /* starts for what waits beyond the tokens in hand, a burst at most */
        tokens = cluster_tokens(q->cluster, name);
        want = todo - (tokens > 0 ? tokens : 0);
        cluster_rate(q->cluster, name, r.count, r.period_ms,
                     want < r.count ? want : r.count);
    }
}

/* Close the idle connections of cq that its cap does not cover. */
static void trim_idle(struct qmgr *q, struct core_queue *cq, int cap)
{
    const struct qm_dest *dest = core_queue_ctx(cq);
    int pending, idle = queue_idle(q, cq, &pending), keep;

    keep = cluster_idle_keep(cap, core_queue_busy(cq), idle, pending);
    if (keep < idle)
        deliver_cache_trim(q->cache, dest->route.key.cache, (size_t)keep);
}

/* The leases' cap, and no more starts than the rate's tokens allow. */
static void cap_one(struct qmgr *q, struct core_queue *cq)
{
    int cap, tokens, by_rate;
    struct cluster_rate r;
    char name[256];

    queue_name(cq, name, sizeof(name));
    cap = cluster_cap(q->cluster, name, queue_limit(q, cq));
    trim_idle(q, cq, cap);
    tokens = cluster_tokens(q->cluster, name);
    if (tokens < 0 && queue_rate(q, cq, &r))
        tokens = 0; /* a rate, no token yet */
    if (tokens >= 0) {
        by_rate = core_queue_busy(cq) + tokens;
        if (cap < 0 || by_rate < cap)
            cap = by_rate;
    }
    core_queue_cap_set(cq, cap);
}

static void on_demand(void *ctx)
{
    each_queue(ctx, demand_one);
}

static void on_caps(void *ctx)
{
    struct qmgr *q = ctx;

    each_queue(q, cap_one);
    q->cluster_caps = 1;
    qm_dispatch(q);
    q->cluster_caps = 0;
}

/* Another member suspended dest (until: wall-clock ms, 0: until
 * resumed): so does this daemon, for what is left of it. */
static void on_suspend(void *ctx, const char *dest, int64_t until)
{
    struct qmgr *q = ctx;
    int64_t left = until > 0 ? until - util_clock_wall_us() / 1000 : 0;
    struct util_buf out = {0};
    char why[300], span[40] = "";

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

static void on_log(void *ctx, int warning, const char *line)
{
    qm_log(ctx, warning ? QMGR_LOG_WARNING : QMGR_LOG_INFO, "%s", line);
}

void qm_cluster_open(struct qmgr *q)
{
    const char *url = conf_str(q->conf, NULL, CONF_cluster_redis_url);
    char member[300];

    if (url == NULL || url[0] == '\0')
        return;
    snprintf(member, sizeof(member), "%s:%ld", q->hostname, (long)getpid());
    q->cluster = cluster_create(
        q->base,
        &(struct cluster_config){
            .url = url,
            .name = conf_str(q->conf, NULL, CONF_cluster_name),
            .prefix = conf_str(q->conf, NULL, CONF_cluster_key_prefix),
            .member = member,
            .lease_ms = conf_time_ms(q->conf, NULL, CONF_cluster_lease_time),
            .timeout_ms =
                conf_time_ms(q->conf, NULL, CONF_cluster_redis_timeout),
        },
        &(struct cluster_callbacks){
            on_log, on_demand, on_caps, q, {on_suspend, on_resume}});
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

void qm_cluster_close(struct qmgr *q)
{
    cluster_free(q->cluster);
    q->cluster = NULL;
}

void qm_cluster_queue(struct qmgr *q, struct core_queue *cq)
{
    if (q->cluster == NULL)
        return;
    cap_one(q, cq);
    cluster_poke(q->cluster);
}

void qm_cluster_started(struct qmgr *q, struct core_queue *cq)
{
    char name[256];

    if (q->cluster == NULL)
        return;
    queue_name(cq, name, sizeof(name));
    if (cluster_tokens(q->cluster, name) < 0)
        return;
    cluster_spend(q->cluster, name);
    cap_one(q, cq);
}

void qm_cluster_done(struct qmgr *q, struct core_queue *cq)
{
    char name[256];

    if (q->cluster == NULL)
        return;
    queue_name(cq, name, sizeof(name));
    if (cluster_tokens(q->cluster, name) >= 0)
        cap_one(q, cq); /* one fewer in flight: not one more start */
}

/* A queue freed: its idle connections, which its leases covered, close
 * (with no queue there is no demand to keep the leases). */
void qm_cluster_gone(struct qmgr *q, const struct qm_dest *dest)
{
    if (q->cluster != NULL &&
        conf_int(q->conf, dest->route.transport,
                 CONF_default_destination_concurrency_limit) > 0)
        deliver_cache_drop(q->cache, dest->route.key.cache);
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
