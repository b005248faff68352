/*
 * NAME
 *	finch 3 - Finch's delivery scheduler: delivery jobs to connections
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	int	qm_finch_applies(const struct qmgr *q,
 *			const struct route_result *r)
 *	void	qm_finch_start(struct qm_delivery *d,
 *			const struct deliver_request *req)
 *	int	qm_finch_done(struct qm_delivery *d,
 *			const struct deliver_result *res)
 *	void	qm_finch_forget(struct qm_delivery *d)
 *	void	qm_finch_gc(struct qmgr *q)
 *	void	qm_finch_free(struct qmgr *q)
 *	int	qm_finch_idle(struct qmgr *q, struct core_queue *cq)
 *	void	qm_finch_trim(struct qmgr *q, struct core_queue *cq,
 *			int keep)
 * DESCRIPTION
 *	A transport with <transport>_delivery_scheduler = finch hands each
 *	delivery job (an entry core/ selected, its addresses resolved) to
 *	a connection chosen by core_finch_choose() (core/finch.c, the
 *	seed's rules), which asks destdb (core/destdb.c) what this
 *	process has open to each address: core/'s windows, dead-destination
 *	detection and job selection are the same as under the Postfix
 *	scheduler; what changes is where each job goes.
 *
 *	qm_finch_applies() says whether a delivery goes this way: its
 *	transport chose finch and it connects over TCP (LMTP over a Unix
 *	socket, discard and error have no hosts to spread load over).
 *
 *	qm_finch_start() takes the job's request (its addresses in MX
 *	preference order) and: queues it on a connection already open
 *	(active under the backlog threshold, a free ride, or idle), or
 *	opens a new one to the host chosen (unused, closed, retry, or one
 *	more to a busy host), closing the idle connection unused longest
 *	when the transport has as many connections as its process limit;
 *	or keeps it until a connection of its transport frees up (wait);
 *	or defers its recipients when none of its hosts may be tried
 *	(every one waits for its retry time). A connection is a worker: a
 *	key of the delivery agent's cache ("finch:N") under which the
 *	agent runs the jobs one after the other down one connection
 *	(deliver.h, queue_behind), the next one starting as soon as the
 *	one before it has its last reply.
 *
 *	qm_finch_done() is told each job's outcome: the connection has one
 *	job less; a connection or handshake failure records the host's
 *	retry time in destdb (minimal_backoff_time from now) and retires
 *	the worker (the jobs in line behind it are placed again, so that
 *	none goes to that host), and the job, which sent nothing, is
 *	placed again on another host while one may be tried and it has had fewer tries
 *	than smtp_mx_session_limit (as the reference's client goes on to
 *	the next address): qm_finch_done() then returns 1 and the outcome
 *	is not the job's; a connection with no job left becomes idle, and is
 *	closed (QUIT) after <transport>_idle_connection_max_age. A
 *	worker older than <transport>_active_connection_max_age takes no
 *	new job ("close active connections after a time to spread load
 *	around even when it is low"); the agent closes it after its last.
 *	Jobs waiting for a worker are tried again in order. The attempt a
 *	job leaves for another host is logged and counted for TLS
 *	reporting (qm_delivery_moved()).
 *	qm_finch_gc() runs destdb's garbage collector (every queue run).
 *
 *	qm_finch_idle() is how many idle workers the destination queue cq
 *	has: a worker belongs to the queue of the last job it took (the
 *	cluster leases idle workers as the connections they are, decision
 *	122); qm_finch_trim() closes cq's idle workers but keep, the one
 *	idle longest first.
 *
 *	qm_finch_forget() removes a delivery from the waiting jobs (its
 *	end before its start: the daemon stops); qm_finch_free() closes
 *	every worker and frees destdb.
 */

#include "qmgr/qmgr_impl.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define FINCH_HOSTS_MAX 64

struct qm_worker {
    struct qmgr *q;
    uint64_t id;
    char transport[ROUTE_NAME_MAX + 1];
    char host[80]; /* destdb's name of it: address and port */
    struct deliver_addr addr;
    char key[40];                   /* the agent's cache key: "finch:ID" */
    char queue[ROUTE_NAME_MAX + 1]; /* its last job's queue (core key) */
    int jobs;                       /* queued and running */
    core_time_t idle_since;
    core_time_t opened;
    int retired; /* takes no new job */
    struct event *idle_ev;
    LIST_ENTRY(qm_worker) link;
};

/* A transport's settings for Finch, read at each job (reloads apply). */
struct finch_settings {
    struct core_finch_limits limits;
    int backlog;
    int process_limit;
    int host_limit;
    core_time_t active_max_age, idle_max_age, retry;
};

static void finch_settings(const struct conf *conf, const char *t,
                           struct finch_settings *s)
{
    s->limits.max_message_concurrency =
        (int)conf_int(conf, t, CONF_max_message_concurrency);
    s->limits.scale_max_concurrency =
        (int)conf_int(conf, t, CONF_scale_max_concurrency);
    s->backlog = (int)conf_int(conf, t, CONF_smtp_connection_backlog_threshold);
    s->process_limit = (int)conf_int(conf, t, CONF_default_process_limit);
    s->host_limit =
        (int)conf_int(conf, t, CONF_default_destination_concurrency_limit);
    s->active_max_age =
        conf_time_ms(conf, t, CONF_smtp_active_connection_max_age);
    s->idle_max_age = conf_time_ms(conf, t, CONF_smtp_idle_connection_max_age);
    s->retry = conf_time_ms(conf, NULL, CONF_minimal_backoff_time);
}

int qm_finch_applies(const struct qmgr *q, const struct route_result *r)
{
    return (r->type == ROUTE_SMTP || r->type == ROUTE_LMTP) && !r->unix_path &&
           strcmp(
               conf_str(q->conf, r->transport, CONF_default_delivery_scheduler),
               "finch") == 0;
}

static unsigned finch_rand(void *ctx)
{
    unsigned r;

    (void)ctx;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (unsigned)random();
    return r;
}

/* destdb's name of an address: "192.0.2.1:25", "[2001:db8::1]:25". */
static void host_name(const struct deliver_addr *a, char *buf, size_t len)
{
    char ip[64] = "?", port[8] = "0";

    getnameinfo((const struct sockaddr *)&a->sa, a->salen, ip, sizeof(ip), port,
                sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(buf, len, a->sa.ss_family == AF_INET6 ? "[%s]:%s" : "%s:%s", ip,
             port);
}

static struct core_destdb *finch_db(struct qmgr *q)
{
    if (q->destdb == NULL)
        q->destdb = qm_cluster_destdb(
            q, core_destdb_memory(
                   conf_time_ms(q->conf, NULL, CONF_destdb_record_lifetime)));
    return q->destdb;
}

static void worker_close(struct qm_worker *w)
{
    struct qmgr *q = w->q;

    if (!w->retired)
        q->destdb->ops->conn_close(q->destdb, w->host, w->id, qm_now_ms());
    LIST_REMOVE(w, link);
    event_free(w->idle_ev);
    free(w);
}

/* Idle for its max age, or its place wanted: QUIT, and forget it. */
static void worker_idle_end(struct qm_worker *w)
{
    deliver_cache_drop(w->q->cache, w->key);
    worker_close(w);
}

static void idle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = ((struct qm_worker *)arg)->q;

    (void)fd;
    (void)what;
    worker_idle_end(arg);
    qm_cluster_poke(q); /* its lease goes back (decision 122) */
}

/* Stop taking jobs; the agent closes the connection after its last. */
static void worker_retire(struct qm_worker *w)
{
    if (w->retired)
        return;
    w->q->destdb->ops->conn_close(w->q->destdb, w->host, w->id, qm_now_ms());
    w->retired = 1;
}

static struct qm_worker *worker_new(struct qmgr *q, const char *transport,
                                    const struct deliver_addr *a,
                                    const char *host)
{
    struct qm_worker *w = xcalloc(1, sizeof(*w));

    w->q = q;
    w->id = ++q->worker_next;
    snprintf(w->transport, sizeof(w->transport), "%s", transport);
    snprintf(w->host, sizeof(w->host), "%s", host);
    w->addr = *a;
    snprintf(w->key, sizeof(w->key), "finch:%llu", (unsigned long long)w->id);
    w->opened = qm_now_ms();
    w->idle_ev = evtimer_new(q->base, idle_cb, w);
    LIST_INSERT_HEAD(&q->workers, w, link);
    q->destdb->ops->conn_open(q->destdb, host, w->id, w->opened);
    return w;
}

static struct qm_worker *worker_find(struct qmgr *q, uint64_t id)
{
    struct qm_worker *w;

    LIST_FOREACH(w, &q->workers, link)
        if (w->id == id)
            return w;
    return NULL;
}

/* Retire the transport's workers past their age; count the rest. */
static void workers_scan(struct qmgr *q, const char *transport,
                         const struct finch_settings *s, int *open,
                         struct qm_worker **oldest_idle)
{
    core_time_t now = qm_now_ms();
    struct qm_worker *w;

    *open = 0;
    *oldest_idle = NULL;
    LIST_FOREACH(w, &q->workers, link) {
        if (strcmp(w->transport, transport) != 0)
            continue;
        if (!w->retired && now - w->opened >= s->active_max_age)
            worker_retire(w);
        (*open)++;
        if (w->jobs == 0 &&
            (*oldest_idle == NULL || w->opened < (*oldest_idle)->opened))
            *oldest_idle = w;
    }
}

/* The job goes down w now, or after the jobs before it. */
static void worker_submit(struct qm_worker *w, struct qm_delivery *d,
                          const struct deliver_request *req,
                          const struct finch_settings *s)
{
    struct deliver_request r = *req;
    struct qmgr *q = w->q;

    r.addrs = &w->addr;
    r.naddrs = 1;
    r.session_limit = 1;
    r.cache = q->cache;
    r.cache_key = w->key;
    r.cache_store = 1;
    r.queue_behind = 1;
    r.cache_limits.idle_ms =
        (int)(s->idle_max_age + 60000); /* the worker closes it before */
    r.cache_limits.reuse_ms = (int)s->active_max_age;
    evtimer_del(w->idle_ev);
    snprintf(w->queue, sizeof(w->queue), "%s", core_queue_key(d->queue));
    w->jobs++;
    q->destdb->ops->conn_jobs(q->destdb, w->host, w->id, w->jobs, qm_now_ms());
    d->worker = w;
    d->session = deliver_start(q->base, &r, qm_delivery_done, d);
}

/* Where the job goes (core_finch_choose()); 0: nowhere now. */
static int finch_place(struct qm_delivery *d, const struct deliver_request *req,
                       enum core_finch_how *how)
{
    struct qmgr *q = d->q;
    const char *transport = d->dest->route.transport;
    struct finch_settings s;
    char names[FINCH_HOSTS_MAX][80];
    const char *hosts[FINCH_HOSTS_MAX];
    int pref[FINCH_HOSTS_MAX];
    size_t n = req->naddrs < FINCH_HOSTS_MAX ? req->naddrs : FINCH_HOSTS_MAX;
    struct qm_worker *w, *oldest_idle;
    struct core_finch_choice c;
    int open;

    finch_settings(q->conf, transport, &s);
    workers_scan(q, transport, &s, &open, &oldest_idle);
    for (size_t i = 0; i < n; i++) {
        host_name(&req->addrs[i], names[i], sizeof(names[i]));
        hosts[i] = names[i];
        pref[i] = req->addrs[i].pref;
    }
    core_finch_choose(
        &(struct core_finch_request){
            .db = finch_db(q),
            .hosts = hosts,
            .pref = pref,
            .nhosts = n,
            .allowed_new = core_finch_allowed_new_worker(
                &s.limits, d->m->deliveries - 1, s.process_limit - open),
            .free_workers = open < s.process_limit || oldest_idle != NULL,
            .backlog_threshold = s.backlog,
            .host_limit = s.host_limit,
            .rand = finch_rand,
            .now = qm_now_ms(),
        },
        &c);
    *how = c.how;
    switch (c.how) {
    case CORE_FINCH_ACTIVE:
    case CORE_FINCH_FREE_RIDE:
    case CORE_FINCH_IDLE:
        if ((w = worker_find(q, c.conn)) == NULL)
            util_panic("finch: destdb names connection %llu, unknown",
                       (unsigned long long)c.conn);
        break;
    case CORE_FINCH_WAIT:
    case CORE_FINCH_DEFER:
        return 0;
    default:
        if (open >= s.process_limit && oldest_idle != NULL)
            worker_idle_end(oldest_idle); /* its worker for the new one */
        w = worker_new(q, transport, &req->addrs[c.host], hosts[c.host]);
        break;
    }
    worker_submit(w, d, req, &s);
    return 1;
}

/* Place d's job; 0: deferred, d is gone. */
static int finch_go(struct qm_delivery *d)
{
    enum core_finch_how how;
    char why[600];

    if (finch_place(d, d->finch_req, &how))
        return 1;
    if (how == CORE_FINCH_WAIT) {
        d->waiting = 1;
        TAILQ_INSERT_TAIL(&d->q->finch_wait, d, wait_link);
        return 1;
    }
    snprintf(why, sizeof(why),
             "no host of %s may be tried before its retry time",
             d->dest->route.nexthop);
    qm_delivery_defer(d, "4.4.1", why);
    return 0;
}

void qm_finch_start(struct qm_delivery *d, const struct deliver_request *req)
{
    d->finch_req = xcalloc(1, sizeof(*d->finch_req));
    deliver_request_copy(d->finch_req, req);
    (void)finch_go(d);
}

/* A worker freed up: each waiting job that finds a place now goes. */
static void finch_retry_waiting(struct qmgr *q)
{
    struct qm_delivery *d, *next;
    enum core_finch_how how;

    for (d = TAILQ_FIRST(&q->finch_wait); d != NULL; d = next) {
        next = TAILQ_NEXT(d, wait_link);
        TAILQ_REMOVE(&q->finch_wait, d, wait_link);
        d->waiting = 0;
        if (finch_place(d, d->finch_req, &how))
            continue;
        if (how == CORE_FINCH_WAIT) {
            d->waiting = 1;
            if (next != NULL)
                TAILQ_INSERT_BEFORE(next, d, wait_link);
            else
                TAILQ_INSERT_TAIL(&q->finch_wait, d, wait_link);
            continue;
        }
        qm_delivery_defer(d, "4.4.1",
                          "no host may be tried before its retry time");
    }
}

/*
 * The jobs in line behind a connection whose host failed leave the line
 * (the seed: "If the connection has a queue of pending jobs when it is
 * closed then these must be re-scheduled"), so that none of them goes to
 * that host before its retry time; oldest first in line[], *n of them.
 */
static struct qm_delivery **worker_unqueue(struct qmgr *q, struct qm_worker *w,
                                           size_t *n)
{
    struct qm_delivery **line, *d;
    size_t k = 0;

    *n = 0;
    if (w->jobs <= 0)
        return NULL;
    line = xcalloc((size_t)w->jobs, sizeof(*line));
    LIST_FOREACH(d, &q->deliveries, link) /* newest first */
        if (d->worker == w && k < (size_t)w->jobs)
            line[k++] = d;
    for (size_t i = 0; i < k; i++) {
        deliver_cancel(line[i]->session);
        line[i]->session = NULL;
        line[i]->worker = NULL;
    }
    w->jobs -= (int)k;
    for (size_t i = 0; i < k / 2; i++) {
        d = line[i];
        line[i] = line[k - 1 - i];
        line[k - 1 - i] = d;
    }
    *n = k;
    return line;
}

int qm_finch_done(struct qm_delivery *d, const struct deliver_result *res)
{
    struct qm_worker *w = d->worker;
    struct qmgr *q = d->q;
    struct finch_settings s;
    struct qm_delivery **line = NULL;
    size_t nline = 0;
    struct timeval tv;
    int again = 0;

    if (w == NULL)
        return 0;
    d->worker = NULL;
    finch_settings(q->conf, w->transport, &s);
    w->jobs--;
    if (!res->hop_ok) {
        /* the host failed: not again before its retry time */
        q->destdb->ops->host_fail(q->destdb, w->host, qm_now_ms() + s.retry);
        worker_retire(w);
        line = worker_unqueue(q, w, &nline);
        /* nothing was sent: the job tries another host, as the
         * reference's client tries the next address */
        again = !res->transport_failed &&
                ++d->finch_tries < d->finch_req->session_limit;
    } else {
        q->destdb->ops->host_ok(q->destdb, w->host);
        if (!w->retired)
            q->destdb->ops->conn_jobs(q->destdb, w->host, w->id, w->jobs,
                                      qm_now_ms());
    }
    if (w->jobs == 0) {
        if (w->retired) {
            deliver_cache_drop(q->cache, w->key);
            worker_close(w);
        } else {
            w->idle_since = qm_now_ms();
            tv.tv_sec = s.idle_max_age / 1000;
            tv.tv_usec = (s.idle_max_age % 1000) * 1000;
            evtimer_add(w->idle_ev, &tv);
        }
    }
    if (again) {
        struct core_destdb *db = q->destdb;
        struct core_host_view v;
        struct core_conn_view c;
        int left = 0;

        /* another host of the job's is worth a try now */
        for (size_t i = 0; i < d->finch_req->naddrs && !left; i++) {
            char name[80];

            host_name(&d->finch_req->addrs[i], name, sizeof(name));
            left = !db->ops->host_get(db, name, &v, &c, 1) || v.nconns > 0 ||
                   v.retry_at < 0 || v.retry_at <= qm_now_ms();
        }
        again = left;
    }
    if (again) {
        qm_delivery_moved(d, res); /* the host it leaves, logged */
        (void)finch_go(d);
    }
    for (size_t i = 0; i < nline; i++)
        (void)finch_go(line[i]);
    free(line);
    finch_retry_waiting(q);
    return again;
}

void qm_finch_forget(struct qm_delivery *d)
{
    if (d->waiting) {
        TAILQ_REMOVE(&d->q->finch_wait, d, wait_link);
        d->waiting = 0;
    }
    if (d->finch_req != NULL) {
        deliver_request_clear(d->finch_req);
        free(d->finch_req);
        d->finch_req = NULL;
    }
    if (d->worker != NULL) {
        /* its session was cancelled: the worker has a job less */
        d->worker->jobs--;
        d->worker = NULL;
    }
}

/* Is w an idle worker of cq? */
static int worker_idle_of(const struct qm_worker *w, struct core_queue *cq)
{
    return w->jobs == 0 && !w->retired &&
           strcmp(w->transport,
                  core_transport_name(core_queue_transport(cq))) == 0 &&
           strcmp(w->queue, core_queue_key(cq)) == 0;
}

int qm_finch_idle(struct qmgr *q, struct core_queue *cq)
{
    const struct qm_worker *w;
    int n = 0;

    LIST_FOREACH(w, &q->workers, link)
        n += worker_idle_of(w, cq);
    return n;
}

void qm_finch_trim(struct qmgr *q, struct core_queue *cq, int keep)
{
    struct qm_worker *w, *oldest;

    while (qm_finch_idle(q, cq) > keep) {
        oldest = NULL;
        LIST_FOREACH(w, &q->workers, link)
            if (worker_idle_of(w, cq) &&
                (oldest == NULL || w->idle_since < oldest->idle_since))
                oldest = w;
        worker_idle_end(oldest);
    }
}

void qm_finch_gc(struct qmgr *q)
{
    if (q->destdb != NULL)
        q->destdb->ops->gc(q->destdb, qm_now_ms());
}

void qm_finch_free(struct qmgr *q)
{
    while (!LIST_EMPTY(&q->workers)) {
        struct qm_worker *w = LIST_FIRST(&q->workers);

        w->retired = 1; /* destdb goes too */
        deliver_cache_drop(q->cache, w->key);
        worker_close(w);
    }
    if (q->destdb != NULL)
        q->destdb->ops->free(q->destdb);
    q->destdb = NULL;
}
