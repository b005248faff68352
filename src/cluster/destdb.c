/*
 * NAME
 *	destdb 3 - Finch's destdb shared with the cluster
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	struct core_destdb *cluster_destdb(struct cluster *c,
 *			struct core_destdb *inner)
 * DESCRIPTION
 *	cluster_destdb() wraps a destdb (core_destdb_memory()'s): every
 *	operation is the inner one's, so that each decision reads local
 *	memory; a host's failure goes out to the cluster too, its retry
 *	time on the wall clock, and so does its recovery when the host had
 *	one (a success after a failure withdraws the fact). The other
 *	members' facts come in at each pull: a later retry time than the
 *	local one is taken (cluster_fact_merge()), so a host one member
 *	found dead is not tried by the others before its retry time.
 *	Connections stay local, but their closes go out as connection
 *	records (decision 121): another member's close of a host makes it
 *	"closed" here (host_closed()), so that Finch opens new connections
 *	to the hosts no member used lately first; the cluster's limit on
 *	connections is the leases'. Failures and closes reach the others
 *	at their next sync (script.c's capped list), not only at a pull.
 *	Freeing the wrapper frees the inner.
 */

#include "cluster/cluster_impl.h"

#include <stdlib.h>

#include "core/core.h"
#include "util/util.h"

struct cl_destdb {
    struct core_destdb db; /* first: the vtable's pointer is ours */
    struct core_destdb *inner;
    struct cluster *c;
};

#define CL(db)    ((struct cl_destdb *)(db))
#define INNER(db) (CL(db)->inner)

static void cl_conn_open(struct core_destdb *db, const char *host,
                         uint64_t conn, core_time_t now)
{
    INNER(db)->ops->conn_open(INNER(db), host, conn, now);
}

static void cl_conn_jobs(struct core_destdb *db, const char *host,
                         uint64_t conn, int jobs, core_time_t now)
{
    INNER(db)->ops->conn_jobs(INNER(db), host, conn, jobs, now);
}

static void cl_conn_close(struct core_destdb *db, const char *host,
                          uint64_t conn, core_time_t now)
{
    INNER(db)->ops->conn_close(INNER(db), host, conn, now);
    cluster_fact_publish(CL(db)->c, host, CLUSTER_FACT_CLOSE,
                         util_clock_wall_us() / 1000 +
                             (now - util_clock_mono_ms()));
}

static void cl_host_closed(struct core_destdb *db, const char *host,
                           core_time_t when)
{
    INNER(db)->ops->host_closed(INNER(db), host, when);
}

static void cl_host_fail(struct core_destdb *db, const char *host,
                         core_time_t retry_at)
{
    int64_t wall =
        util_clock_wall_us() / 1000 + (retry_at - util_clock_mono_ms());

    INNER(db)->ops->host_fail(INNER(db), host, retry_at);
    cluster_fact_publish(CL(db)->c, host, CLUSTER_FACT_RETRY,
                         wall > 0 ? wall : 1);
}

static void cl_host_ok(struct core_destdb *db, const char *host)
{
    struct core_host_view v;
    struct core_conn_view conn;

    if (INNER(db)->ops->host_get(INNER(db), host, &v, &conn, 1) &&
        v.retry_at >= 0)
        cluster_fact_publish(CL(db)->c, host, CLUSTER_FACT_RETRY, 0);
    INNER(db)->ops->host_ok(INNER(db), host);
}

static int cl_host_get(struct core_destdb *db, const char *host,
                       struct core_host_view *v, struct core_conn_view *conns,
                       size_t max)
{
    return INNER(db)->ops->host_get(INNER(db), host, v, conns, max);
}

static void cl_gc(struct core_destdb *db, core_time_t now)
{
    INNER(db)->ops->gc(INNER(db), now);
}

static size_t cl_count(const struct core_destdb *db)
{
    const struct core_destdb *in = ((const struct cl_destdb *)db)->inner;

    return in->ops->count(in);
}

static void cl_free(struct core_destdb *db)
{
    if (CL(db)->c->destdb == db)
        CL(db)->c->destdb = NULL;
    INNER(db)->ops->free(INNER(db));
    free(db);
}

static const struct core_destdb_ops cl_ops = {
    .conn_open = cl_conn_open,
    .conn_jobs = cl_conn_jobs,
    .conn_close = cl_conn_close,
    .host_closed = cl_host_closed,
    .host_fail = cl_host_fail,
    .host_ok = cl_host_ok,
    .host_get = cl_host_get,
    .gc = cl_gc,
    .count = cl_count,
    .free = cl_free,
};

struct core_destdb *cluster_destdb(struct cluster *c, struct core_destdb *inner)
{
    struct cl_destdb *d = xcalloc(1, sizeof(*d));

    d->db.ops = &cl_ops;
    d->inner = inner;
    d->c = c;
    c->destdb = &d->db;
    return &d->db;
}

void cluster_destdb_apply(struct core_destdb *db, const char *host,
                          int64_t retry_wall)
{
    struct core_destdb *in = INNER(db);
    struct core_host_view v;
    struct core_conn_view conn;
    int64_t retry;

    if (!in->ops->host_get(in, host, &v, &conn, 1))
        v.retry_at = -1;
    if (cluster_fact_merge(v.retry_at, retry_wall, util_clock_mono_ms(),
                           util_clock_wall_us() / 1000, &retry))
        in->ops->host_fail(in, host, retry);
}

/* On the local clock, never in the future: a close is a past event. */
void cluster_destdb_closed(struct core_destdb *db, const char *host,
                           int64_t when_wall)
{
    int64_t now = util_clock_mono_ms();
    int64_t when = now - (util_clock_wall_us() / 1000 - when_wall);

    INNER(db)->ops->host_closed(INNER(db), host, when < now ? when : now);
}
