/*
 * NAME
 *	finch 3 - Finch's choice of a worker for a job
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	int	core_finch_allowed_new_worker(const struct core_finch_limits *l,
 *			int message_concurrency, int free_workers)
 *	int	core_finch_next_router_job(const struct core_finch_limits *l,
 *			const int *concurrency, size_t n, int free_workers)
 *	void	core_finch_choose(const struct core_finch_request *r,
 *			struct core_finch_choice *out)
 *	const char *core_finch_how_name(enum core_finch_how how)
 * DESCRIPTION
 *	The seed's two schedulers, routing and delivery, as pure
 *	functions: what they need to know comes in as arguments (destdb
 *	for the hosts, the caller's random numbers), and the answer goes
 *	out as a value. core.h says what each takes and gives.
 *
 *	core_finch_choose() follows the seed's delivery job scheduling
 *	step by step, one preference level of MX hosts at a time:
 *
 *	classify the hosts (destdb): their open connections are active
 *	(with jobs) or idle; a host with none is unused (no record),
 *	closed (a last close on record), retry (a failure whose retry
 *	time has passed) or left out (its retry time has not passed);
 *
 *	the active connections, most recently opened first: the first
 *	with fewer jobs than the backlog threshold takes the job ("We
 *	prefer recent connections so that when our load goes down older
 *	connections will become idle and eventually be closed");
 *
 *	a job not allowed a new worker gets a free ride on an active
 *	connection: the first, most recent first, with fewer jobs than the
 *	newest one, else the newest ("to spread the load evenly"); with no
 *	active connection it waits;
 *
 *	else the most recently active idle connection; else, when the
 *	system has no worker for another connection, a free ride; else a
 *	random unused host, else the closed host closed longest ago, else a
 *	random retry host;
 *
 *	else, when some host of the level works (all have connections),
 *	one more connection to a random host among those with the fewest,
 *	below the per-host limit and past their retry time (a host whose
 *	connection failed while another was open keeps that one but gets
 *	no new one), or a free ride when there is none;
 *
 *	else (every host of the level failed the retry time check) the
 *	next preference level; when none is left, the job is deferred.
 *
 *	A host has at most FINCH_CONNS_MAX connections looked at: the most
 *	recent ones.
 */

#include "core/core.h"

#include <stdlib.h>

#include "core/core_impl.h"

#define FINCH_CONNS_MAX 64

int core_finch_allowed_new_worker(const struct core_finch_limits *l,
                                  int message_concurrency, int free_workers)
{
    return message_concurrency < l->max_message_concurrency ||
           (long)message_concurrency <
               (long)l->scale_max_concurrency * free_workers;
}

int core_finch_next_router_job(const struct core_finch_limits *l,
                               const int *concurrency, size_t n,
                               int free_workers)
{
    for (size_t i = 0; i < n; i++)
        if (core_finch_allowed_new_worker(l, concurrency[i], free_workers))
            return (int)i;
    return -1;
}

/* One active connection of a level, with its host. */
struct finch_active {
    size_t host;
    struct core_conn_view c;
};

/* What one preference level of hosts holds. */
struct finch_level {
    struct finch_active *active; /* most recently opened first */
    size_t nactive;
    struct finch_active idle; /* the most recently active idle one */
    int has_idle;
    size_t *unused, nunused;
    size_t *retry, nretry;
    size_t closed; /* the host closed longest ago */
    core_time_t closed_at;
    int has_closed;
    size_t *working, nworking; /* hosts with connections */
    size_t *nconn;             /* connections of each working host */
    int *failing;              /* its retry time has not passed */
};

static int active_newer(const void *a, const void *b)
{
    const struct finch_active *x = a, *y = b;

    return x->c.opened > y->c.opened ? -1 : x->c.opened < y->c.opened;
}

static void level_host(const struct core_finch_request *r,
                       struct finch_level *lv, size_t i)
{
    struct core_conn_view conns[FINCH_CONNS_MAX];
    struct core_host_view v;
    size_t n;

    if (!r->db->ops->host_get(r->db, r->hosts[i], &v, conns, FINCH_CONNS_MAX)) {
        lv->unused[lv->nunused++] = i;
        return;
    }
    n = v.nconns < FINCH_CONNS_MAX ? v.nconns : FINCH_CONNS_MAX;
    if (n == 0) {
        if (v.retry_at >= 0 && v.retry_at > r->now)
            return; /* "omit destinations that have not passed" */
        if (v.retry_at >= 0) {
            lv->retry[lv->nretry++] = i;
        } else if (v.last_close >= 0 &&
                   (!lv->has_closed || v.last_close < lv->closed_at)) {
            lv->closed = i;
            lv->closed_at = v.last_close;
            lv->has_closed = 1;
        } else if (v.last_close < 0) {
            lv->unused[lv->nunused++] = i; /* a record with nothing in it */
        }
        return;
    }
    lv->working[lv->nworking] = i;
    lv->failing[lv->nworking] = v.retry_at >= 0 && v.retry_at > r->now;
    lv->nconn[lv->nworking++] = v.nconns;
    for (size_t k = 0; k < n; k++) {
        struct finch_active a = {i, conns[k]};

        if (conns[k].jobs > 0) {
            lv->active[lv->nactive++] = a;
        } else if (!lv->has_idle ||
                   conns[k].idle_since > lv->idle.c.idle_since) {
            lv->idle = a;
            lv->has_idle = 1;
        }
    }
}

/* Classify the hosts hosts[from, to). */
static void level_classify(const struct core_finch_request *r,
                           struct finch_level *lv, size_t from, size_t to)
{
    size_t n = to - from;

    lv->active = xcalloc(n * FINCH_CONNS_MAX, sizeof(*lv->active));
    lv->unused = xcalloc(n, sizeof(size_t));
    lv->retry = xcalloc(n, sizeof(size_t));
    lv->working = xcalloc(n, sizeof(size_t));
    lv->nconn = xcalloc(n, sizeof(size_t));
    lv->failing = xcalloc(n, sizeof(int));
    for (size_t i = from; i < to; i++)
        level_host(r, lv, i);
    qsort(lv->active, lv->nactive, sizeof(*lv->active), active_newer);
}

static void level_free(struct finch_level *lv)
{
    free(lv->active);
    free(lv->unused);
    free(lv->retry);
    free(lv->working);
    free(lv->nconn);
    free(lv->failing);
}

static void choose(struct core_finch_choice *out, enum core_finch_how how,
                   size_t host, uint64_t conn)
{
    out->how = how;
    out->host = host;
    out->conn = conn;
}

/* "add the job to an active connection as above", or wait. */
static void free_ride(const struct finch_level *lv,
                      struct core_finch_choice *out)
{
    const struct finch_active *pick;

    if (lv->nactive == 0) {
        choose(out, CORE_FINCH_WAIT, 0, 0);
        return;
    }
    pick = &lv->active[0];
    for (size_t k = 1; k < lv->nactive; k++) {
        if (lv->active[k].c.jobs < lv->active[0].c.jobs) {
            pick = &lv->active[k];
            break;
        }
    }
    choose(out, CORE_FINCH_FREE_RIDE, pick->host, pick->c.conn);
}

static size_t pick_random(const struct core_finch_request *r, const size_t *set,
                          size_t n)
{
    return set[r->rand(r->rand_ctx) % n];
}

/*
 * One more connection to a busy host, among those with the fewest; not
 * to one whose retry time has not passed (a connection opened before
 * its failure was known keeps it working, but it gets no new one).
 */
static int more_to_busy(const struct core_finch_request *r,
                        const struct finch_level *lv,
                        struct core_finch_choice *out)
{
    size_t fewest = (size_t)-1, cand[FINCH_CONNS_MAX], ncand = 0;

    for (size_t k = 0; k < lv->nworking; k++)
        if (!lv->failing[k] && lv->nconn[k] < fewest)
            fewest = lv->nconn[k];
    if (fewest == (size_t)-1 ||
        (r->host_limit > 0 && fewest >= (size_t)r->host_limit))
        return 0;
    for (size_t k = 0; k < lv->nworking && ncand < FINCH_CONNS_MAX; k++)
        if (!lv->failing[k] && lv->nconn[k] == fewest)
            cand[ncand++] = lv->working[k];
    choose(out, CORE_FINCH_MORE, pick_random(r, cand, ncand), 0);
    return 1;
}

/* The seed's procedure on one level; 0: go on to the next level. */
static int level_choose(const struct core_finch_request *r,
                        const struct finch_level *lv,
                        struct core_finch_choice *out)
{
    for (size_t k = 0; k < lv->nactive; k++) {
        if (lv->active[k].c.jobs < r->backlog_threshold) {
            choose(out, CORE_FINCH_ACTIVE, lv->active[k].host,
                   lv->active[k].c.conn);
            return 1;
        }
    }
    if (!r->allowed_new) {
        free_ride(lv, out);
        return 1;
    }
    if (lv->has_idle) {
        choose(out, CORE_FINCH_IDLE, lv->idle.host, lv->idle.c.conn);
        return 1;
    }
    if (!r->free_workers) {
        free_ride(lv, out);
        return 1;
    }
    if (lv->nunused > 0) {
        choose(out, CORE_FINCH_UNUSED, pick_random(r, lv->unused, lv->nunused),
               0);
    } else if (lv->has_closed) {
        choose(out, CORE_FINCH_CLOSED, lv->closed, 0);
    } else if (lv->nretry > 0) {
        choose(out, CORE_FINCH_RETRY, pick_random(r, lv->retry, lv->nretry), 0);
    } else if (lv->nworking > 0) {
        if (!more_to_busy(r, lv, out))
            free_ride(lv, out);
    } else {
        return 0;
    }
    return 1;
}

void core_finch_choose(const struct core_finch_request *r,
                       struct core_finch_choice *out)
{
    size_t from = 0;

    while (from < r->nhosts) {
        struct finch_level lv = {0};
        size_t to = from + 1;
        int done;

        while (to < r->nhosts && r->pref[to] == r->pref[from])
            to++;
        level_classify(r, &lv, from, to);
        done = level_choose(r, &lv, out);
        level_free(&lv);
        if (done)
            return;
        from = to;
    }
    choose(out, CORE_FINCH_DEFER, 0, 0);
}

const char *core_finch_how_name(enum core_finch_how how)
{
    static const char *const names[] = {
        "active", "free ride", "idle", "unused", "closed",
        "retry",  "more",      "wait", "defer",
    };

    return (size_t)how < sizeof(names) / sizeof(names[0]) ? names[how] : "?";
}
