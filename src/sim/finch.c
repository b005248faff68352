/*
 * NAME
 *	finch 3 - Finch's delivery scheduler in the simulated world
 * SYNOPSIS
 *	#include "sim/world_impl.h"
 *
 *	void	finch_init(struct world *w)
 *	void	finch_deliver(struct world *w, struct domain *d,
 *			struct core_entry *e)
 *	void	finch_event(struct world *w, const struct event *ev)
 *	void	finch_results(struct world *w)
 *	void	finch_free(struct world *w)
 * DESCRIPTION
 *	With <transport>_delivery_scheduler = finch, the entries core/
 *	selects (its windows and job selection, with the process limit
 *	counting connections times the backlog threshold, as in the
 *	daemon) become Finch's delivery jobs, and this file does what
 *	qmgr/finch.c does in the daemon, with the same core/ functions:
 *	core_finch_choose() places each job on a connection (active under
 *	the backlog threshold, a free ride, idle) or a new one to a host
 *	(unused, closed, retry, one more to the host with the fewest),
 *	makes it wait, or defers it; core_finch_allowed_new_worker() says
 *	whether its message may have another connection; destdb is
 *	core_destdb_memory(). A job that waits is placed again whenever a
 *	job ends, in order.
 *
 *	Each destination has its MX hosts (sim_mx_hosts of the best
 *	preference, sim_mx_secondary_hosts of the next): the first
 *	sim_mx_dead_hosts refuse every connection (sim_reject_delay after
 *	it is opened), the next sim_mx_slow_hosts take sim_mx_slow_factor
 *	times the recipient delay. A host serves every connection at once
 *	(no accept queue or limiter: Finch's choices, not the servers', are
 *	under study); a connection serves its jobs one after the other,
 *	each its recipients' delays.
 *
 *	A refused connection marks its host failed in destdb until
 *	minimal_backoff_time from then; its first job goes on to another
 *	host while it has tried fewer than smtp_mx_session_limit and one
 *	may be tried, else it is deferred (hop failure); the jobs in line
 *	behind it are placed again. A connection with no job is closed
 *	after <transport>_idle_connection_max_age, or at once when its
 *	place is wanted for a new one (the transport has process_limit
 *	connections); one older than <transport>_active_connection_max_age
 *	takes no new job and closes after its last. destdb's garbage
 *	collector runs at each placement.
 *
 *	finch_results() gives each host its line of the result: recipients
 *	delivered, jobs, connections opened, connections opened after its
 *	first failure and the shortest time from a failure to the next
 *	connection.
 */

#include "sim/world_impl.h"

#include <stdlib.h>
#include <string.h>

#define FINCH_HOSTS_MAX 64

static const struct sim_finch *settings(const struct world *w)
{
    return &w->sc->finch;
}

static unsigned finch_rand(void *ctx)
{
    return (unsigned)world_rand(ctx, 0, 0xffffffffLL);
}

void finch_init(struct world *w)
{
    struct finch_world *f = &w->finch;
    struct sim_result *res = w->res;
    int n = 0;

    TAILQ_INIT(&f->wait);
    LIST_INIT(&f->open_conns);
    if (!settings(w)->on)
        return;
    f->db = core_destdb_memory(settings(w)->record_lifetime);
    for (int i = 0; i < w->sc->ndomains; i++)
        n += w->sc->domains[i].mx.primary + w->sc->domains[i].mx.secondary;
    res->hosts = xcalloc((size_t)n, sizeof(*res->hosts));
    f->hosts = xcalloc((size_t)n, sizeof(*f->hosts));
    for (int i = 0; i < w->sc->ndomains; i++) {
        const struct sim_domain *sd = &w->sc->domains[i];
        int all = sd->mx.primary + sd->mx.secondary;

        w->domains[i].host0 = res->nhosts;
        w->domains[i].nhosts = all;
        for (int k = 0; k < all; k++) {
            struct sim_host_result *r = &res->hosts[res->nhosts];
            struct fhost *h = &f->hosts[res->nhosts++];

            snprintf(r->name, sizeof(r->name), "mx%d.%s", k + 1, sd->name);
            r->domain = i;
            r->pref = k < sd->mx.primary ? 10 : 20;
            h->r = r;
            h->dead = k < sd->mx.dead;
            h->factor = !h->dead && k < sd->mx.dead + sd->mx.slow
                            ? sd->mx.slow_factor
                            : 1.0;
            r->kind = h->dead ? "dead" : h->factor != 1.0 ? "slow" : "ok";
            r->retry_gap = -1;
            h->last_fail = -1;
        }
    }
}

/* The job ends: its outcome goes to core/. */
static void job_end(struct world *w, struct fjob *j, enum core_hop hop)
{
    struct run_msg *rm = core_message_ctx(core_entry_message(j->e));

    rm->inflight--;
    world_entry_done(w, j->d, j->e, hop,
                     hop == CORE_HOP_OK ? FAIL_NONE : FAIL_REJECT);
    free(j);
}

static void conn_serve(struct world *w, struct fconn *c)
{
    const struct sim_model *m = &c->d->def->model;
    struct fjob *j = TAILQ_FIRST(&c->line);
    double took = 0;

    for (int i = 0; i < core_entry_count(j->e); i++)
        took += (double)world_rand(
            w, m->recipient_delay - m->recipient_delay_jitter,
            m->recipient_delay + m->recipient_delay_jitter);
    world_finch_event(w, w->now + (core_time_t)(took * c->host->factor),
                      EV_FINCH_DONE, c, ++c->gen);
}

static void conn_jobs(struct world *w, struct fconn *c)
{
    if (!c->retired)
        w->finch.db->ops->conn_jobs(w->finch.db, c->host->r->name, c->id,
                                    c->njobs, w->now);
}

static void conn_add(struct world *w, struct fconn *c, struct fjob *j)
{
    TAILQ_INSERT_TAIL(&c->line, j, link);
    c->njobs++;
    c->idle_gen++; /* no idle end now */
    conn_jobs(w, c);
    if (c->njobs == 1 && !c->host->dead)
        conn_serve(w, c);
}

static struct fconn *conn_open(struct world *w, struct fhost *h,
                               struct domain *d)
{
    struct fconn *c = xcalloc(1, sizeof(*c));

    c->id = ++w->finch.next_id;
    c->host = h;
    c->d = d;
    c->opened = w->now;
    TAILQ_INIT(&c->line);
    LIST_INSERT_HEAD(&w->finch.open_conns, c, link);
    c->all_next = w->finch.all;
    w->finch.all = c;
    w->finch.open++;
    w->res->connections++;
    h->r->connections++;
    if (h->last_fail >= 0) {
        double gap = (double)(w->now - h->last_fail) / 1000.0;

        h->r->after_failure++;
        if (h->r->retry_gap < 0 || gap < h->r->retry_gap)
            h->r->retry_gap = gap;
    }
    w->finch.db->ops->conn_open(w->finch.db, h->r->name, c->id, w->now);
    if (h->dead)
        world_finch_event(w, w->now + d->def->model.reject_delay, EV_FINCH_FAIL,
                          c, ++c->gen);
    return c;
}

static void conn_retire(struct world *w, struct fconn *c)
{
    if (c->retired)
        return;
    w->finch.db->ops->conn_close(w->finch.db, c->host->r->name, c->id, w->now);
    c->retired = 1;
}

static void conn_close(struct world *w, struct fconn *c)
{
    conn_retire(w, c);
    LIST_REMOVE(c, link);
    c->closed = 1;
    c->gen++;
    w->finch.open--;
}

/* Retire the connections past their age; count and find as the daemon. */
static struct fconn *conns_scan(struct world *w, int *open)
{
    struct fconn *c, *oldest_idle = NULL;

    *open = 0;
    LIST_FOREACH(c, &w->finch.open_conns, link) {
        if (!c->retired && w->now - c->opened >= settings(w)->active_max_age)
            conn_retire(w, c);
        (*open)++;
        if (c->njobs == 0 &&
            (oldest_idle == NULL || c->opened < oldest_idle->opened))
            oldest_idle = c;
    }
    return oldest_idle;
}

static struct fconn *conn_find(struct world *w, uint64_t id)
{
    struct fconn *c;

    LIST_FOREACH(c, &w->finch.open_conns, link)
        if (c->id == id)
            return c;
    util_panic("sim finch: destdb names connection %llu, unknown",
               (unsigned long long)id);
}

/* core_finch_choose() for job j, as the daemon asks it. */
static void job_choose(struct world *w, struct fjob *j, int open, int has_idle,
                       struct core_finch_choice *out)
{
    const struct sim_finch *s = settings(w);
    const char *hosts[FINCH_HOSTS_MAX];
    int pref[FINCH_HOSTS_MAX];
    size_t n = 0;
    struct run_msg *rm = core_message_ctx(core_entry_message(j->e));

    for (int k = 0; k < j->d->nhosts && n < FINCH_HOSTS_MAX; k++, n++) {
        hosts[n] = w->finch.hosts[j->d->host0 + k].r->name;
        pref[n] = w->finch.hosts[j->d->host0 + k].r->pref;
    }
    core_finch_choose(
        &(struct core_finch_request){
            .db = w->finch.db,
            .hosts = hosts,
            .pref = pref,
            .nhosts = n,
            .allowed_new = core_finch_allowed_new_worker(
                &s->limits, rm->inflight - 1, s->process_limit - open),
            .free_workers = open < s->process_limit || has_idle,
            .backlog_threshold = s->backlog,
            .host_limit = s->host_limit,
            .rand = finch_rand,
            .rand_ctx = w,
            .now = w->now,
        },
        out);
}

/* Place job j: on a connection, in the wait, or deferred. */
static void job_place(struct world *w, struct fjob *j)
{
    struct core_finch_choice c;
    struct fconn *conn, *oldest_idle;
    int open;

    w->finch.db->ops->gc(w->finch.db, w->now);
    oldest_idle = conns_scan(w, &open);
    job_choose(w, j, open, oldest_idle != NULL, &c);
    switch (c.how) {
    case CORE_FINCH_ACTIVE:
    case CORE_FINCH_FREE_RIDE:
    case CORE_FINCH_IDLE:
        conn = conn_find(w, c.conn);
        break;
    case CORE_FINCH_WAIT:
        w->res->finch_waits++;
        TAILQ_INSERT_TAIL(&w->finch.wait, j, link);
        return;
    case CORE_FINCH_DEFER:
        job_end(w, j, CORE_HOP_FAIL);
        return;
    default:
        if (open >= settings(w)->process_limit && oldest_idle != NULL)
            conn_close(w, oldest_idle); /* its worker for the new one */
        conn = conn_open(w, &w->finch.hosts[j->d->host0 + c.host], j->d);
        break;
    }
    conn_add(w, conn, j);
}

/* A connection ended a job: the waiting jobs, in order, try again. */
static void wait_retry(struct world *w)
{
    struct fjob_list again = TAILQ_HEAD_INITIALIZER(again);
    struct fjob *j;

    TAILQ_CONCAT(&again, &w->finch.wait, link);
    while ((j = TAILQ_FIRST(&again)) != NULL) {
        TAILQ_REMOVE(&again, j, link);
        job_place(w, j);
    }
}

void finch_deliver(struct world *w, struct domain *d, struct core_entry *e)
{
    struct fjob *j = xcalloc(1, sizeof(*j));
    struct run_msg *rm = core_message_ctx(core_entry_message(e));

    j->e = e;
    j->d = d;
    rm->inflight++;
    job_place(w, j);
}

/* Is any host of d worth a try now (as qm_finch_done() asks)? */
static int domain_any_host(struct world *w, const struct domain *d)
{
    for (int k = 0; k < d->nhosts; k++) {
        struct core_host_view v;
        struct core_conn_view cv;

        if (!w->finch.db->ops->host_get(w->finch.db,
                                        w->finch.hosts[d->host0 + k].r->name,
                                        &v, &cv, 1) ||
            v.nconns > 0 || v.retry_at < 0 || v.retry_at <= w->now)
            return 1;
    }
    return 0;
}

/* The connection's host refused it: the jobs go elsewhere, or end. */
static void conn_failed(struct world *w, struct fconn *c)
{
    struct fjob_list line = TAILQ_HEAD_INITIALIZER(line);
    struct fjob *first = TAILQ_FIRST(&c->line), *j;

    w->finch.db->ops->host_fail(w->finch.db, c->host->r->name,
                                w->now + settings(w)->retry);
    c->host->last_fail = w->now;
    TAILQ_CONCAT(&line, &c->line, link);
    c->njobs = 0;
    conn_close(w, c);
    if (first != NULL) {
        TAILQ_REMOVE(&line, first, link);
        if (++first->tries < settings(w)->session_limit &&
            domain_any_host(w, first->d)) {
            w->res->finch_moved++;
            job_place(w, first);
        } else {
            job_end(w, first, CORE_HOP_FAIL);
        }
    }
    while ((j = TAILQ_FIRST(&line)) != NULL) {
        TAILQ_REMOVE(&line, j, link);
        job_place(w, j);
    }
}

/* The first job in line is delivered. */
static void conn_job_done(struct world *w, struct fconn *c)
{
    struct fjob *j = TAILQ_FIRST(&c->line);

    TAILQ_REMOVE(&c->line, j, link);
    c->njobs--;
    c->host->r->delivered += core_entry_count(j->e);
    c->host->r->jobs++;
    w->finch.db->ops->host_ok(w->finch.db, c->host->r->name);
    conn_jobs(w, c);
    job_end(w, j, CORE_HOP_OK);
    if (c->njobs > 0)
        conn_serve(w, c);
    else if (c->retired)
        conn_close(w, c);
    else
        world_finch_event(w, w->now + settings(w)->idle_max_age, EV_FINCH_IDLE,
                          c, ++c->idle_gen);
}

void finch_event(struct world *w, const struct event *ev)
{
    struct fconn *c = ev->fconn;

    if (c->closed ||
        ev->gen != (ev->type == EV_FINCH_IDLE ? c->idle_gen : c->gen))
        return;
    switch (ev->type) {
    case EV_FINCH_DONE:
        conn_job_done(w, c);
        break;
    case EV_FINCH_FAIL:
        conn_failed(w, c);
        break;
    case EV_FINCH_IDLE:
        conn_close(w, c);
        return;
    default:
        return;
    }
    wait_retry(w);
}

void finch_results(struct world *w)
{
    (void)w; /* the hosts' lines are filled as the run goes */
}

void finch_free(struct world *w)
{
    struct finch_world *f = &w->finch;
    struct fconn *c;
    struct fjob *j;

    while ((j = TAILQ_FIRST(&f->wait)) != NULL) {
        TAILQ_REMOVE(&f->wait, j, link);
        free(j);
    }
    while ((c = f->all) != NULL) {
        f->all = c->all_next;
        while ((j = TAILQ_FIRST(&c->line)) != NULL) {
            TAILQ_REMOVE(&c->line, j, link);
            free(j);
        }
        free(c);
    }
    if (f->db != NULL)
        f->db->ops->free(f->db);
    free(f->hosts);
    memset(f, 0, sizeof(*f));
}
