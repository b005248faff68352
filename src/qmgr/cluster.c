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
 *	qm_cluster_queue() gives a new queue its cap at once (0 until its
 *	first grant, the share while alone); qm_cluster_poke(), at each
 *	dispatch, asks for a sync, except while the caps themselves are
 *	being applied (that dispatch changes no demand).
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

static void demand_one(struct qmgr *q, struct core_queue *cq)
{
    int limit = queue_limit(q, cq), busy = core_queue_busy(cq);
    int want = core_queue_dead(cq) ? 0 : busy + core_queue_todo(cq);
    char name[256];

    if (limit <= 0)
        return; /* no limit, no leases */
    queue_name(cq, name, sizeof(name));
    cluster_demand(q->cluster, name, limit, want < limit ? want : limit, busy);
}

static void cap_one(struct qmgr *q, struct core_queue *cq)
{
    char name[256];

    queue_name(cq, name, sizeof(name));
    core_queue_cap_set(cq, cluster_cap(q->cluster, name, queue_limit(q, cq)));
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
        &(struct cluster_callbacks){on_log, on_demand, on_caps, q});
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

void qm_cluster_poke(struct qmgr *q)
{
    if (q->cluster != NULL && !q->cluster_caps)
        cluster_poke(q->cluster);
}

struct core_destdb *qm_cluster_destdb(struct qmgr *q, struct core_destdb *inner)
{
    return q->cluster != NULL ? cluster_destdb(q->cluster, inner) : inner;
}
