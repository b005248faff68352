/*
 * NAME
 *	world 3 - the simulated world: the client, the clock, the results
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	void	sim_run(const struct sim_scenario *sc, struct sim_result *res,
 *			FILE *trace)
 *	void	sim_result_free(struct sim_result *res)
 *	int	sim_size_class(long rcpts)
 * DESCRIPTION
 *	One run of a scenario, event by event in virtual time. The client
 *	is the real core/ scheduler. Each message of the workload arrives
 *	at its time, its recipients are given to core/ (one queue per
 *	domain), and whenever anything happens the client asks core/ for
 *	entries (core_select()) until it has none, and hands each to the
 *	network model (network.c); every delivery's end goes back to core/
 *	with its hop status. As in the seed, only first delivery attempts
 *	count: an entry that fails is deferred and not retried within the
 *	run; when core/ declares a domain dead, its waiting entries are
 *	deferred at once ("delivery temporarily suspended").
 *
 *	A message is done when its last recipient is delivered or deferred;
 *	its latency is the time from its arrival until then, reported by
 *	size class (1, 2-10, 11-100, 101-1000, over 1000 recipients) as
 *	percentiles. For each domain, the numbers of the messages whose
 *	entries were handed to delivery are kept in order (--sequence).
 *
 *	Client concurrency is a domain's busy count (deliveries in flight,
 *	including connections waiting to connect or being rejected) as
 *	each delivery starts, from the first start after the domain's
 *	initial fill until its last entry is handed out: the steady state,
 *	as the seed measured it. Sampled this way the model reproduces both
 *	the average and the standard deviation of the seed's tables
 *	(doc/decisions.md). The time-weighted average of the same count
 *	over the same span is reported too.
 *
 *	sim_result_free() frees what sim_run() put in res. sim_size_class()
 *	is the size class of a message.
 */

#include "sim/world_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const sim_size_class_names[SIM_SIZE_CLASSES] = {
    "1", "2-10", "11-100", "101-1000", ">1000",
};

int sim_size_class(long rcpts)
{
    return rcpts <= 1      ? 0
           : rcpts <= 10   ? 1
           : rcpts <= 100  ? 2
           : rcpts <= 1000 ? 3
                           : 4;
}

/* splitmix64: small, fast, and the same sequence on every platform. */
int64_t world_rand(struct world *w, int64_t lo, int64_t hi)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (int64_t)(z % (uint64_t)(hi - lo + 1));
}

/* The event heap: earliest time first, then first scheduled. */
static int event_before(const struct event *a, const struct event *b)
{
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void event_push(struct world *w, struct event ev)
{
    size_t i;

    if (w->heap_len == w->heap_size) {
        w->heap_size = w->heap_size ? w->heap_size * 2 : 256;
        w->heap = xrealloc(w->heap, w->heap_size * sizeof(*w->heap));
    }
    i = w->heap_len++;
    ev.seq = w->seq++;
    w->heap[i] = ev;
    while (i > 0 && event_before(&w->heap[i], &w->heap[(i - 1) / 2])) {
        struct event tmp = w->heap[i];

        w->heap[i] = w->heap[(i - 1) / 2];
        w->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

void world_event(struct world *w, core_time_t when, enum ev_type type,
                 struct conn *c, uint32_t gen)
{
    event_push(w, (struct event){when, 0, type, c, gen, NULL});
}

void world_finch_event(struct world *w, core_time_t when, enum ev_type type,
                       struct fconn *c, uint32_t gen)
{
    event_push(w, (struct event){when, 0, type, NULL, gen, c});
}

static struct event event_pop(struct world *w)
{
    struct event top = w->heap[0];
    size_t i = 0;

    w->heap[0] = w->heap[--w->heap_len];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        struct event tmp;

        if (l < w->heap_len && event_before(&w->heap[l], &w->heap[m]))
            m = l;
        if (r < w->heap_len && event_before(&w->heap[r], &w->heap[m]))
            m = r;
        if (m == i)
            break;
        tmp = w->heap[i];
        w->heap[i] = w->heap[m];
        w->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* Time-weighted statistics: busy was the count since the last call. */
static void domain_stat(struct world *w, struct domain *d, int busy)
{
    double dt = (double)(w->now - d->stat_time) / 1000.0;

    d->busy_integral += busy * dt;
    d->busy2_integral += (double)busy * busy * dt;
    d->stat_time = w->now;
}

/*
 * Trace: a domain that changed is noted, and its state is written once
 * the clock is about to move on, so that a delivery ending and the next
 * starting at the same instant make one line, not two.
 */
static void domain_trace(struct world *w, struct domain *d)
{
    if (w->trace == NULL || d->trace_dirty)
        return;
    d->trace_dirty = 1;
    w->dirty[w->ndirty++] = d;
}

static void trace_flush(struct world *w)
{
    for (int i = 0; i < w->ndirty; i++) {
        struct domain *d = w->dirty[i];
        int window = core_queue_window_report(d->q);

        d->trace_dirty = 0;
        if (window == d->trace_window && core_queue_busy(d->q) == d->trace_busy)
            continue;
        d->trace_window = window;
        d->trace_busy = core_queue_busy(d->q);
        fprintf(w->trace, "%s,%.3f,%s,%d,%d\n", w->sc->name, w->now / 1000.0,
                d->def->name, window, core_queue_busy(d->q));
    }
    w->ndirty = 0;
}

/* Move the clock, closing the instant that ends. */
static void world_advance(struct world *w, core_time_t when)
{
    if (when != w->now)
        trace_flush(w);
    w->now = when;
}

static void domain_start(struct world *w, struct domain *d,
                         struct core_entry *e)
{
    /* core_select() started it: busy counts it already. */
    domain_stat(w, d, core_queue_busy(d->q) - 1);
    if (d->first_start < 0)
        d->first_start = w->now;
    if (w->now > d->first_start) {
        d->start_sum += core_queue_busy(d->q);
        d->start_sum2 += (double)core_queue_busy(d->q) * core_queue_busy(d->q);
        d->starts++;
    }
    d->measured_integral = d->busy_integral;
    d->measured_integral2 = d->busy2_integral;
    d->measured_until = w->now;
    util_buf_printf(&d->sequence, "%s%llu", d->sequence.len ? " " : "",
                    (unsigned long long)core_message_id(core_entry_message(e)));
    w->res->attempts++;
    domain_trace(w, d);
    if (w->sc->finch.on)
        finch_deliver(w, d, e);
    else
        net_deliver(w, d, e);
}

/* Hand out entries while core/ has any. */
static void dispatch(struct world *w)
{
    struct core_entry *e;

    while ((e = core_select(w->core, w->now)) != NULL)
        domain_start(w, core_queue_ctx(core_entry_queue(e)), e);
}

void world_delivery_done(struct world *w, struct conn *c, enum core_hop hop,
                         enum fail_kind kind)
{
    struct core_entry *e = c->entry;

    c->entry = NULL;
    world_entry_done(w, c->domain, e, hop, kind);
}

void world_entry_done(struct world *w, struct domain *d, struct core_entry *e,
                      enum core_hop hop, enum fail_kind kind)
{
    static const char *const reasons[] = {
        "",
        "connect timed out",
        "timed out while receiving the initial server greeting",
        "lost connection or 421 while receiving the initial server greeting",
    };
    struct sim_result *res = w->res;
    long rcpts = core_entry_count(e);

    if (hop == CORE_HOP_OK) {
        res->delivered += rcpts;
    } else {
        res->deferred += rcpts;
        if (kind == FAIL_CONNECT)
            res->timeouts_connect += rcpts;
        else if (kind == FAIL_GREETING)
            res->timeouts_greeting += rcpts;
        else
            res->rejected += rcpts;
    }
    domain_stat(w, d, core_queue_busy(d->q));
    core_entry_done(e, w->now, hop, reasons[kind]);
    domain_trace(w, d);
}

int world_conn_reusable(const struct world *w, const struct conn *c)
{
    const struct sim_scenario *sc = w->sc;

    return sc->connection_caching && core_queue_todo(c->domain->q) > 0 &&
           (sc->reuse_count_limit == 0 || c->uses < sc->reuse_count_limit) &&
           w->now - c->opened_at < sc->reuse_time_limit;
}

/*
 * The next max recipients of message i go to core/, as the queue
 * manager reads a batch from the spool; then core/ learns how many are
 * left unread. Returns how many were read.
 */
static long message_read(struct world *w, int i, long max)
{
    const struct sim_message *sm = &w->sc->messages[i];
    struct run_msg *rm = &w->msgs[i];
    long n = 0;

    while (n < max && rm->part < sm->nparts) {
        struct domain *d = &w->domains[sm->parts[rm->part].domain];

        if (rm->in_part == sm->parts[rm->part].rcpts) {
            rm->part++;
            rm->in_part = 0;
            continue;
        }
        if (core_message_add(rm->core, d->q, (uint64_t)(rm->read + n)) < 0) {
            w->res->deferred++;
            w->res->suspended++;
        }
        rm->in_part++;
        n++;
    }
    rm->read += n;
    core_message_unread_set(rm->core, sm->rcpts - rm->read);
    return n;
}

static long world_message_more(void *ctx, struct core_message *m, long max)
{
    struct world *w = ctx;

    return message_read(w, (int)core_message_id(m) - 1, max);
}

/* A message of the workload arrives: its first batch goes to core/. */
static void message_arrive(struct world *w, int i)
{
    struct core_message *m;

    m = core_message_create(w->core, (uint64_t)i + 1, w->now, &w->msgs[i]);
    w->msgs[i].core = m;
    w->msgs[i].done_at = -1;
    w->in_core++;
    message_read(w, i, core_message_read_limit(m));
    core_message_release(m);
}

static void world_message_done(void *ctx, struct core_message *m)
{
    struct world *w = ctx;
    struct run_msg *rm = core_message_ctx(m);

    rm->done_at = w->now;
    rm->core = NULL;
    w->in_core--;
}

static void world_entry_deferred(void *ctx, struct core_entry *e,
                                 const char *reason)
{
    struct world *w = ctx;
    (void)reason;
    w->res->deferred += core_entry_count(e);
    w->res->suspended += core_entry_count(e);
}

static void world_log(void *ctx, enum core_log_level level, const char *text)
{
    struct world *w = ctx;

    if (w->trace && level != CORE_LOG_DEBUG)
        fprintf(w->trace, "# %.3f %s\n", w->now / 1000.0, text);
}

static void world_init(struct world *w, const struct sim_scenario *sc,
                       struct sim_result *res, FILE *trace)
{
    static const struct core_callbacks cb = {
        .log = world_log,
        .entry_deferred = world_entry_deferred,
        .message_done = world_message_done,
        .message_more = world_message_more,
    };

    memset(w, 0, sizeof(*w));
    memset(res, 0, sizeof(*res));
    w->sc = sc;
    w->res = res;
    w->trace = trace;
    w->rng = sc->seed;
    w->core = core_create(&cb, w);
    core_recipient_limits_set(w->core, sc->message_rcpt_limit,
                              sc->message_rcpt_minimum);
    w->t = core_transport_create(w->core, sc->transport, &sc->params);
    w->domains = xcalloc(sc->ndomains, sizeof(*w->domains));
    w->dirty = xcalloc(sc->ndomains, sizeof(*w->dirty));
    w->msgs = xcalloc(sc->nmessages, sizeof(*w->msgs));
    res->sc = sc;
    for (int i = 0; i < sc->nmessages; i++)
        res->recipients += sc->messages[i].rcpts;
    for (int i = 0; i < sc->ndomains; i++) {
        struct domain *d = &w->domains[i];

        d->def = &sc->domains[i];
        d->q = core_queue_create(w->t, d->def->name);
        core_queue_ctx_set(d->q, d);
        d->first_start = -1;
        d->trace_window = d->trace_busy = -2;
        net_domain_init(w, d);
        domain_trace(w, d);
    }
    finch_init(w);
    for (int i = 0; i < sc->nmessages; i++)
        world_event(w, sc->messages[i].arrival, EV_ARRIVAL, NULL, (uint32_t)i);
}

static int double_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double percentile(const double *v, long n, double p)
{
    long i = (long)ceil(p * n) - 1;

    return v[i < 0 ? 0 : i >= n ? n - 1 : i];
}

static void world_latency(struct world *w)
{
    const struct sim_scenario *sc = w->sc;
    double *v = xcalloc(sc->nmessages, sizeof(*v));

    for (int c = 0; c < SIM_SIZE_CLASSES; c++) {
        struct sim_latency *l = &w->res->latency[c];
        double sum = 0;
        long n = 0;

        for (int i = 0; i < sc->nmessages; i++) {
            if (sim_size_class(sc->messages[i].rcpts) != c ||
                w->msgs[i].done_at < 0)
                continue;
            v[n] = (w->msgs[i].done_at - sc->messages[i].arrival) / 1000.0;
            sum += v[n++];
        }
        l->messages = n;
        if (n == 0)
            continue;
        qsort(v, n, sizeof(*v), double_cmp);
        l->p50 = percentile(v, n, 0.50);
        l->p90 = percentile(v, n, 0.90);
        l->p99 = percentile(v, n, 0.99);
        l->max = v[n - 1];
        l->mean = sum / n;
    }
    free(v);
}

static void world_results(struct world *w)
{
    struct sim_result *res = w->res;
    int n = w->sc->ndomains, used = 0;
    double avg = 0, var = 0, tavg = 0, tvar = 0;

    res->sequence = xcalloc(n, sizeof(*res->sequence));
    for (int i = 0; i < n; i++) {
        struct domain *d = &w->domains[i];
        double span = (d->measured_until - d->first_start) / 1000.0;

        res->sequence[i] = util_buf_take(&d->sequence);
        if (d->first_start < 0)
            continue;
        used++;
        if (span > 0) {
            double m = d->measured_integral / span;

            tavg += m;
            tvar += d->measured_integral2 / span - m * m;
        }
        if (d->starts > 0) {
            double m = d->start_sum / d->starts;

            avg += m;
            var += d->start_sum2 / d->starts - m * m;
        }
    }
    if (used > 0) {
        res->concurrency_avg = avg / used;
        res->concurrency_stddev = var > 0 ? sqrt(var / used) : 0;
        res->concurrency_time_avg = tavg / used;
        res->concurrency_time_stddev = tvar > 0 ? sqrt(tvar / used) : 0;
    }
    res->duration = w->now / 1000.0;
    /* The seed's: max(minimum * messages in core + the transport's pool
     * and reserve, qmgr_message_recipient_limit); the sim has no active
     * limit, so the most messages it held stand for it. */
    res->incore_bound = w->sc->message_rcpt_minimum * res->max_incore_messages +
                        w->sc->params.rcpt_pool + w->sc->params.rcpt_extra;
    if (res->incore_bound < w->sc->message_rcpt_limit)
        res->incore_bound = w->sc->message_rcpt_limit;
    world_latency(w);
    finch_results(w);
}

static void world_free(struct world *w)
{
    struct conn *c;

    finch_free(w);
    while ((c = w->all_conns) != NULL) {
        w->all_conns = c->all_next;
        free(c);
    }
    for (int i = 0; i < w->sc->ndomains; i++) {
        free(w->domains[i].servers);
        util_buf_free(&w->domains[i].sequence);
    }
    free(w->domains);
    free(w->dirty);
    free(w->msgs);
    free(w->heap);
    core_free(w->core);
}

/* Anything left that can change a result? */
static int world_busy(const struct world *w)
{
    return w->next_arrival < w->sc->nmessages || w->in_core > 0;
}

void sim_run(const struct sim_scenario *sc, struct sim_result *res, FILE *trace)
{
    struct world w;

    world_init(&w, sc, res, trace);
    while (world_busy(&w)) {
        core_time_t timer = core_next_timer(w.core);

        if (w.heap_len > 0 && w.heap[0].when <= timer) {
            struct event ev = event_pop(&w);

            world_advance(&w, ev.when);
            if (ev.type == EV_ARRIVAL) {
                message_arrive(&w, (int)ev.gen);
                w.next_arrival++;
            } else if (ev.fconn != NULL) {
                finch_event(&w, &ev);
            } else {
                net_event(&w, &ev);
            }
        } else if (timer != CORE_TIME_NEVER) {
            world_advance(&w, timer);
            core_run_timers(w.core, timer);
            for (int i = 0; i < sc->ndomains; i++)
                domain_trace(&w, &w.domains[i]);
        } else {
            break;
        }
        res->events++;
        dispatch(&w);
        if (core_recipient_count(w.core) > res->max_incore_recipients)
            res->max_incore_recipients = core_recipient_count(w.core);
        if (w.in_core > res->max_incore_messages)
            res->max_incore_messages = w.in_core;
    }
    if (trace)
        trace_flush(&w);
    world_results(&w);
    world_free(&w);
}

void sim_result_free(struct sim_result *res)
{
    if (res->sequence && res->sc)
        for (int i = 0; i < res->sc->ndomains; i++)
            free(res->sequence[i]);
    free(res->sequence);
    res->sequence = NULL;
    free(res->hosts);
    res->hosts = NULL;
    res->nhosts = 0;
}
