/*
 * NAME
 *	router 3 - Finch's routing workers: recipients resolved before
 *	delivery scheduling
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	int	qm_router_applies(const struct qmgr *q,
 *			const struct route_result *r)
 *	void	qm_router_add(struct qm_msg *m, uint32_t i,
 *			const struct route_result *r)
 *	void	qm_router_run(struct qmgr *q)
 *	void	qm_router_forget(struct qm_msg *m)
 *	void	qm_router_free(struct qmgr *q)
 *	void	qm_router_stats(const struct qmgr *q, long *busy,
 *			long *waiting)
 * DESCRIPTION
 *	"There are two important parts of an MTA that need a concurrent
 *	scheduler: routing (where you want concurrent DNS/LDAP/etc.
 *	lookups) and delivery" (the seed). Under Finch's scheduler a
 *	recipient is routed before core/ sees it: its transport and next
 *	hop come from route/ at once, then a routing worker looks up the
 *	next hop's exchangers and their addresses; only a recipient whose
 *	destination resolved enters its destination queue, so that a
 *	delivery slot is never spent waiting for DNS, and a domain whose
 *	name servers fail is deferred (a permanent answer: returned) at
 *	routing, without a delivery, a connection or a window's feedback.
 *	The delivery then finds the answer in the resolver's cache.
 *
 *	A routing job is a run of a message's recipients, as read, that
 *	share their transport and next hop (a mailing list sorted by
 *	domain makes one job per domain, not one per recipient). The
 *	workers are router_worker_limit lookups at a time. Which job runs
 *	next is the seed's next_router_job(): the first job, in the order
 *	messages came in, whose message is allowed a new worker
 *	(core_finch_allowed_new_worker(): fewer than
 *	max_message_concurrency routing jobs under way, or fewer than
 *	scale_max_concurrency times the free workers), so that a big
 *	envelope uses an idle system and shares a busy one.
 *
 *	While jobs of a message are waiting or under way, core/ holds the
 *	message (core_message_hold()): it is not finished, and its next
 *	batch of recipients is not read, until they are routed.
 *
 *	qm_router_applies() says whether recipients routed as r go through
 *	the routing workers: their transport's delivery scheduler is finch
 *	and they connect over TCP (qm_finch_applies()).
 *	qm_router_add() takes recipient i of m (its outcome awaited) into
 *	m's last routing job when that has the same destination, else into
 *	a new one; qm_router_run() starts what the workers have room for
 *	(none while the queue manager drains or stops).
 *
 *	qm_router_forget() drops the jobs of m that wait (the queue manager
 *	is stopping; its recipients stay as they are on disk).
 *	qm_router_free() drops every job; a lookup under way then ends
 *	without effect. qm_router_stats() counts the jobs under way and
 *	waiting.
 */

#include "qmgr/qmgr_impl.h"

#include <stdlib.h>
#include <string.h>

struct qm_route_job {
    struct qmgr *q;            /* NULL: dropped, the lookup ends alone */
    struct qm_msg *m;          /* whose recipients */
    struct route_result route; /* route.address is NULL */
    uint64_t *rcpt;
    int nrcpt, cap;
    int running;
    TAILQ_ENTRY(qm_route_job) link; /* m's waiting or q's running jobs */
};

int qm_router_applies(const struct qmgr *q, const struct route_result *r)
{
    return qm_finch_applies(q, r);
}

static int job_same(const struct qm_route_job *j, const struct route_result *r)
{
    return strcmp(j->route.transport, r->transport) == 0 &&
           strcmp(j->route.key.queue, r->key.queue) == 0;
}

static void job_free(struct qm_route_job *j)
{
    free(j->rcpt);
    free(j);
}

void qm_router_add(struct qm_msg *m, uint32_t i, const struct route_result *r)
{
    struct qm_route_job *j = TAILQ_LAST(&m->route_jobs, qm_route_jobs);

    if (j == NULL || !job_same(j, r)) {
        j = xcalloc(1, sizeof(*j));
        j->q = m->q;
        j->m = m;
        j->route = *r;
        j->route.address = NULL; /* the one field that points outside */
        if (TAILQ_EMPTY(&m->route_jobs))
            TAILQ_INSERT_TAIL(&m->q->routing, m, route_link);
        TAILQ_INSERT_TAIL(&m->route_jobs, j, link);
        m->q->route_waiting++;
        core_message_hold(m->cm);
    }
    if (j->nrcpt == j->cap) {
        j->cap = j->cap ? 2 * j->cap : 8;
        j->rcpt = xrealloc(j->rcpt, (size_t)j->cap * sizeof(*j->rcpt));
    }
    j->rcpt[j->nrcpt++] = i;
}

/* The routed recipients of j enter their destination queue. */
static void job_enter(struct qm_route_job *j)
{
    struct qm_msg *m = j->m;
    struct core_queue *cq = qm_dest_queue(j->q, &j->route);

    for (int k = 0; k < j->nrcpt; k++)
        if (core_message_add(m->cm, cq, j->rcpt[k]) < 0)
            qm_outcome_suspended(m, &j->rcpt[k], 1, core_queue_refusal(cq));
}

/* The next hop of j did not resolve: its recipients get the answer. */
static void job_failed(struct qm_route_job *j, const struct dns_result *res)
{
    int temp = res->status != DNS_PERMFAIL;

    qm_outcome_decide(
        j->m, j->rcpt, j->nrcpt, temp ? DELIVER_DEFER : DELIVER_BOUNCE,
        res->dsn[0] ? res->dsn : (temp ? "4.4.3" : "5.4.4"),
        res->why && res->why[0] ? res->why : "no address found", "none");
}

static void job_done(void *ctx, struct dns_result *res)
{
    struct qm_route_job *j = ctx;
    struct qmgr *q = j->q;
    struct qm_msg *m = j->m;

    if (q == NULL) { /* dropped: the queue manager is gone */
        dns_result_free(res);
        job_free(j);
        return;
    }
    TAILQ_REMOVE(&q->route_running, j, link);
    q->route_busy--;
    m->route_running--;
    if (q->closing || m->cm == NULL) {
        /* The recipients stay as they are on disk. */
        dns_result_free(res);
        job_free(j);
        return;
    }
    if (res->status == DNS_OK)
        job_enter(j);
    else
        job_failed(j, res);
    dns_result_free(res);
    job_free(j);
    core_message_unhold(m->cm, qm_now_ms()); /* m may be finished now */
    qm_router_run(q);
    qm_dispatch(q);
}

/* The seed's next_router_job(): the first message allowed a worker. */
static struct qm_msg *router_next(struct qmgr *q, int limit)
{
    struct qm_msg *m;

    TAILQ_FOREACH(m, &q->routing, route_link) {
        const char *t = TAILQ_FIRST(&m->route_jobs)->route.transport;
        struct core_finch_limits l;

        l.max_message_concurrency =
            (int)conf_int(q->conf, t, CONF_max_message_concurrency);
        l.scale_max_concurrency =
            (int)conf_int(q->conf, t, CONF_scale_max_concurrency);
        if (core_finch_allowed_new_worker(&l, m->route_running,
                                          limit - (int)q->route_busy))
            return m;
    }
    return NULL;
}

static void job_start(struct qmgr *q, struct qm_msg *m)
{
    struct qm_route_job *j = TAILQ_FIRST(&m->route_jobs);
    int started;

    TAILQ_REMOVE(&m->route_jobs, j, link);
    if (TAILQ_EMPTY(&m->route_jobs))
        TAILQ_REMOVE(&q->routing, m, route_link);
    q->route_waiting--;
    TAILQ_INSERT_TAIL(&q->route_running, j, link);
    q->route_busy++;
    m->route_running++;
    started = j->route.mx
                  ? dns_lookup_mx(q->dns, j->route.nexthop, job_done, j)
                  : dns_lookup_host(q->dns, j->route.nexthop, job_done, j);
    if (started < 0) {
        /* The resolver is going away with the daemon: left on disk. */
        TAILQ_REMOVE(&q->route_running, j, link);
        q->route_busy--;
        m->route_running--;
        job_free(j);
    }
}

void qm_router_run(struct qmgr *q)
{
    int limit = (int)conf_int(q->conf, NULL, CONF_router_worker_limit);
    struct qm_msg *m;

    while (!q->closing && !q->draining && q->route_busy < limit &&
           (m = router_next(q, limit)) != NULL)
        job_start(q, m);
}

void qm_router_forget(struct qm_msg *m)
{
    struct qmgr *q = m->q;
    struct qm_route_job *j, *next;

    if (!TAILQ_EMPTY(&m->route_jobs))
        TAILQ_REMOVE(&q->routing, m, route_link);
    while ((j = TAILQ_FIRST(&m->route_jobs)) != NULL) {
        TAILQ_REMOVE(&m->route_jobs, j, link);
        q->route_waiting--;
        job_free(j);
    }
    for (j = TAILQ_FIRST(&q->route_running); j != NULL; j = next) {
        next = TAILQ_NEXT(j, link);
        if (j->m != m)
            continue;
        TAILQ_REMOVE(&q->route_running, j, link);
        q->route_busy--;
        j->q = NULL; /* its lookup ends alone */
        j->m = NULL;
    }
    m->route_running = 0;
}

void qm_router_free(struct qmgr *q)
{
    struct qm_msg *m;

    while ((m = TAILQ_FIRST(&q->routing)) != NULL)
        qm_router_forget(m);
    while (!TAILQ_EMPTY(&q->route_running))
        qm_router_forget(TAILQ_FIRST(&q->route_running)->m);
}

void qm_router_stats(const struct qmgr *q, long *busy, long *waiting)
{
    *busy = q->route_busy;
    *waiting = q->route_waiting;
}
