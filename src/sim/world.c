/*
 * NAME
 *	world 3 - the simulated world: client, connections, servers
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	void	sim_run(const struct sim_scenario *sc, struct sim_result *res,
 *			FILE *trace)
 * DESCRIPTION
 *	One run of a scenario, event by event in virtual time. The client
 *	is the real core/ scheduler: whenever anything happens, every
 *	destination starts deliveries while core_queue_can_start() allows
 *	and it has recipients left, and every delivery's end goes back to
 *	core/ with its hop status. Around it we model what the seed's
 *	measurements depended on (doc/sim.md says why each piece is there):
 *
 *	A delivery uses a cached idle connection to its destination if
 *	connection caching is on and one exists, else it opens a TCP
 *	connection to a server chosen at random among the destination's
 *	sim_servers. A server has sim_server_process_limit processes; a
 *	connection that finds one free is served at once, else it waits in
 *	the accept queue (sim_server_backlog long, first come first served).
 *	When the accept queue is full, the connection is not admitted:
 *	with drop_syn (FreeBSD) the client's SYN is dropped and
 *	retransmitted after sim_syn_retry_delay, doubling, until
 *	sim_connect_timeout; with drop_ack (Linux) the client believes it is
 *	connected while the server retransmits its SYN-ACK sim_syn_retries
 *	times and then forgets the connection, and the client waits for a
 *	greeting until sim_greeting_timeout. A queued connection that waits
 *	longer than the greeting timeout fails the same way.
 *
 *	A server process that takes a connection greets it, unless the
 *	server is bad (it fails the handshake) or already holds
 *	sim_server_concurrency_limit connections (it replies 421 and hangs
 *	up); either failure reaches the client sim_reject_delay later. A
 *	greeted connection delivers the entry's recipients, each taking
 *	sim_recipient_delay +/- sim_recipient_delay_jitter, then is closed,
 *	or with caching kept idle for smtp_connection_cache_time_limit
 *	unless it reached smtp_connection_reuse_time_limit or
 *	smtp_connection_reuse_count_limit. A closing connection frees its
 *	server process, which at once takes the next queued connection.
 *
 *	Every failure is a hop failure for core/, and its recipients are
 *	deferred: as in the seed, the run counts first attempts only. When
 *	core/ declares a destination dead, its remaining recipients are
 *	deferred at once ("delivery temporarily suspended").
 *
 *	Client concurrency is the destination's busy count (deliveries in
 *	flight, including connections waiting to connect or being rejected)
 *	as each delivery starts, from the first start after the initial
 *	fill at time 0 until the destination's last entry is handed out:
 *	the steady state, as the seed measured it. Sampled this way the
 *	model reproduces both the average and the standard deviation of
 *	the seed's tables (doc/decisions.md). The time-weighted average of
 *	the same count over the same span is reported too.
 */

#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

enum conn_state {
    CONN_SYN_SENT,    /* SYN dropped, client retransmitting */
    CONN_SYNACK_WAIT, /* client "connected", server retransmitting SYN-ACK */
    CONN_LOST,        /* server forgot it; client waits for a greeting */
    CONN_QUEUED,      /* in the accept queue */
    CONN_REJECTING,   /* 421 or handshake failure on its way */
    CONN_SERVING,     /* delivering an entry */
    CONN_IDLE,        /* cached */
    CONN_CLOSED,
};

enum fail_kind {
    FAIL_CONNECT,
    FAIL_GREETING,
    FAIL_REJECT,
};

enum ev_type {
    EV_SYN_RETRY,
    EV_SYNACK_RETRY,
    EV_CLIENT_TIMEOUT,
    EV_SERVICE_DONE,
    EV_REJECT_DONE,
    EV_CACHE_EXPIRE,
};

struct server;
struct dest;

struct conn {
    struct dest *dest;
    struct server *server;
    enum conn_state state;
    uint32_t gen;         /* invalidates pending state events */
    uint32_t timeout_gen; /* invalidates the pending client timeout */
    enum fail_kind timeout_kind;
    int rcpts; /* recipients of the entry it carries */
    int retries;
    int uses;
    int has_worker;
    int admitted; /* counted by the server's 421 limiter */
    core_time_t opened_at;
    TAILQ_ENTRY(conn) link; /* accept queue or idle list */
    struct conn *all_next;
};

TAILQ_HEAD(conn_list, conn);

struct server {
    int bad;
    int workers_busy;
    int admitted;
    int queued;
    struct conn_list accept_queue;
};

struct dest {
    char key[32];
    struct core_queue *q;
    long pending; /* recipients not yet handed out */
    struct server *servers;
    struct conn_list idle;
    /* statistics */
    int frozen;
    core_time_t stat_time;
    double busy_integral, busy2_integral;
    core_time_t measured;
    double start_sum, start_sum2; /* busy sampled at each start */
    long starts;
    int trace_window, trace_busy;
    int trace_dirty;
};

struct event {
    core_time_t when;
    uint64_t seq;
    enum ev_type type;
    struct conn *conn;
    uint32_t gen;
};

struct world {
    const struct sim_scenario *sc;
    struct sim_result *res;
    FILE *trace;
    struct core *core;
    struct core_transport *t;
    struct dest *dests;
    int rr; /* round-robin start of dispatch */
    struct event *heap;
    size_t heap_len, heap_size;
    uint64_t seq;
    uint64_t rng;
    struct conn *all_conns;
    core_time_t now;
    struct dest **dirty; /* destinations changed at this instant */
    int ndirty;
};

static void *sim_alloc(size_t size)
{
    void *p = calloc(1, size ? size : 1);

    if (p == NULL) {
        fprintf(stderr, "sluice-sim: out of memory\n");
        exit(75);
    }
    return p;
}

/* splitmix64: small, fast, and the same sequence on every platform. */
static uint64_t rng_next(struct world *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static int64_t rng_range(struct world *w, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rng_next(w) % (uint64_t)(hi - lo + 1));
}

/* The event heap: earliest time first, then first scheduled. */
static int event_before(const struct event *a, const struct event *b)
{
    return a->when < b->when || (a->when == b->when && a->seq < b->seq);
}

static void event_push(struct world *w, core_time_t when, enum ev_type type,
                       struct conn *conn, uint32_t gen)
{
    size_t i;

    if (w->heap_len == w->heap_size) {
        w->heap_size = w->heap_size ? w->heap_size * 2 : 256;
        w->heap = realloc(w->heap, w->heap_size * sizeof(*w->heap));
        if (w->heap == NULL) {
            fprintf(stderr, "sluice-sim: out of memory\n");
            exit(75);
        }
    }
    i = w->heap_len++;
    w->heap[i] = (struct event){when, w->seq++, type, conn, gen};
    while (i > 0 && event_before(&w->heap[i], &w->heap[(i - 1) / 2])) {
        struct event tmp = w->heap[i];

        w->heap[i] = w->heap[(i - 1) / 2];
        w->heap[(i - 1) / 2] = tmp;
        i = (i - 1) / 2;
    }
}

static struct event event_pop(struct world *w)
{
    struct event top = w->heap[0];
    size_t i = 0;

    w->heap[0] = w->heap[--w->heap_len];
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;

        if (l < w->heap_len && event_before(&w->heap[l], &w->heap[m]))
            m = l;
        if (r < w->heap_len && event_before(&w->heap[r], &w->heap[m]))
            m = r;
        if (m == i)
            break;
        struct event tmp = w->heap[i];
        w->heap[i] = w->heap[m];
        w->heap[m] = tmp;
        i = m;
    }
    return top;
}

/* Statistics and trace: call before and after every busy change. */
static void dest_stat(struct world *w, struct dest *d)
{
    double dt = (double)(w->now - d->stat_time) / 1000.0;

    if (!d->frozen) {
        d->busy_integral += d->q->busy * dt;
        d->busy2_integral += (double)d->q->busy * d->q->busy * dt;
        d->measured = w->now;
    }
    d->stat_time = w->now;
}

/*
 * Trace: a destination that changed is noted, and its state is written
 * once the clock is about to move on, so that a delivery ending and the
 * next starting at the same instant make one line, not two.
 */
static void dest_trace(struct world *w, struct dest *d)
{
    if (w->trace == NULL || d->trace_dirty)
        return;
    d->trace_dirty = 1;
    w->dirty[w->ndirty++] = d;
}

static void trace_flush(struct world *w)
{
    for (int i = 0; i < w->ndirty; i++) {
        struct dest *d = w->dirty[i];
        int window = core_queue_window_report(d->q);

        d->trace_dirty = 0;
        if (window == d->trace_window && d->q->busy == d->trace_busy)
            continue;
        d->trace_window = window;
        d->trace_busy = d->q->busy;
        fprintf(w->trace, "%s,%.3f,%s,%d,%d\n", w->sc->name, w->now / 1000.0,
                d->key, window, d->q->busy);
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

static void conn_timeout(struct world *w, struct conn *c, core_time_t after,
                         enum fail_kind kind)
{
    c->timeout_gen++;
    c->timeout_kind = kind;
    event_push(w, w->now + after, EV_CLIENT_TIMEOUT, c, c->timeout_gen);
}

static void conn_accepted(struct world *w, struct conn *c);

/* A server process is free again: it takes the next queued connection. */
static void server_release(struct world *w, struct server *s)
{
    struct conn *next;

    s->workers_busy--;
    if ((next = TAILQ_FIRST(&s->accept_queue)) != NULL) {
        TAILQ_REMOVE(&s->accept_queue, next, link);
        s->queued--;
        conn_accepted(w, next);
    }
}

static void conn_close(struct world *w, struct conn *c)
{
    struct server *s = c->server;

    if (c->state == CONN_QUEUED) {
        TAILQ_REMOVE(&s->accept_queue, c, link);
        s->queued--;
    }
    c->state = CONN_CLOSED;
    c->gen++;
    c->timeout_gen++;
    if (c->admitted) {
        c->admitted = 0;
        s->admitted--;
    }
    if (c->has_worker) {
        c->has_worker = 0;
        server_release(w, s);
    }
}

static void conn_serve(struct world *w, struct conn *c)
{
    const struct sim_scenario *sc = w->sc;
    core_time_t took = 0;

    for (int i = 0; i < c->rcpts; i++)
        took += rng_range(w, sc->recipient_delay - sc->recipient_delay_jitter,
                          sc->recipient_delay + sc->recipient_delay_jitter);
    c->state = CONN_SERVING;
    c->uses++;
    c->gen++;
    event_push(w, w->now + took, EV_SERVICE_DONE, c, c->gen);
}

/* A server process takes the connection and greets it, or refuses it. */
static void conn_accepted(struct world *w, struct conn *c)
{
    struct server *s = c->server;
    int limit = w->sc->concurrency_limit;

    s->workers_busy++;
    c->timeout_gen++; /* the greeting arrives */
    if (s->bad || (limit > 0 && s->admitted >= limit)) {
        /* 421 and hang up, or a failed handshake: the process is free. */
        c->state = CONN_REJECTING;
        c->gen++;
        event_push(w, w->now + w->sc->reject_delay, EV_REJECT_DONE, c, c->gen);
        server_release(w, s);
        return;
    }
    c->has_worker = 1;
    c->admitted = 1;
    s->admitted++;
    c->opened_at = w->now;
    conn_serve(w, c);
}

/* The connection reached the server: served, queued, or not admitted. */
static void server_syn(struct world *w, struct conn *c)
{
    const struct sim_scenario *sc = w->sc;
    struct server *s = c->server;

    if (s->workers_busy < sc->process_limit) {
        conn_accepted(w, c);
    } else if (s->queued < sc->backlog) {
        if (c->state == CONN_SYN_SENT)
            conn_timeout(w, c, sc->greeting_timeout, FAIL_GREETING);
        c->state = CONN_QUEUED;
        TAILQ_INSERT_TAIL(&s->accept_queue, c, link);
        s->queued++;
    } else if (sc->overflow == SIM_OVERFLOW_DROP_SYN) {
        c->gen++;
        event_push(w, w->now + (sc->syn_retry_delay << c->retries++),
                   EV_SYN_RETRY, c, c->gen);
    } else {
        if (c->state == CONN_SYN_SENT)
            conn_timeout(w, c, sc->greeting_timeout, FAIL_GREETING);
        c->gen++;
        if (c->retries < sc->syn_retries) {
            c->state = CONN_SYNACK_WAIT;
            event_push(w, w->now + (sc->syn_retry_delay << c->retries++),
                       EV_SYNACK_RETRY, c, c->gen);
        } else {
            c->state = CONN_LOST;
        }
    }
}

static void conn_open(struct world *w, struct dest *d, int rcpts)
{
    struct conn *c = sim_alloc(sizeof(*c));

    c->dest = d;
    c->rcpts = rcpts;
    c->server = &d->servers[rng_range(w, 0, w->sc->servers - 1)];
    c->state = CONN_SYN_SENT;
    c->all_next = w->all_conns;
    w->all_conns = c;
    w->res->connections++;
    conn_timeout(w, c, w->sc->connect_timeout, FAIL_CONNECT);
    server_syn(w, c);
}

static void dest_start(struct world *w, struct dest *d)
{
    int rcpts = d->pending < w->sc->recipient_limit ? (int)d->pending
                                                    : w->sc->recipient_limit;
    struct conn *c;

    dest_stat(w, d);
    d->pending -= rcpts;
    if (d->pending == 0) {
        d->frozen = 1;
    }
    core_queue_start(d->q, w->now);
    w->res->attempts++;
    if (w->now > 0) {
        d->start_sum += d->q->busy;
        d->start_sum2 += (double)d->q->busy * d->q->busy;
        d->starts++;
    }
    dest_trace(w, d);
    if ((c = TAILQ_FIRST(&d->idle)) != NULL) {
        TAILQ_REMOVE(&d->idle, c, link);
        c->rcpts = rcpts;
        conn_serve(w, c);
    } else {
        conn_open(w, d, rcpts);
    }
}

/* Hand out entries while core/ allows, round-robin over destinations. */
static void dispatch(struct world *w)
{
    int n = w->sc->destinations;
    int started;

    do {
        started = 0;
        for (int i = 0; i < n; i++) {
            struct dest *d = &w->dests[(w->rr + i) % n];

            if (d->pending > 0 && core_queue_can_start(d->q)) {
                dest_start(w, d);
                started = 1;
            }
        }
        w->rr = (w->rr + 1) % n;
    } while (started);
}

static void delivery_done(struct world *w, struct conn *c, enum core_hop hop,
                          const char *reason)
{
    struct dest *d = c->dest;

    dest_stat(w, d);
    core_queue_done(d->q, w->now, hop, reason);
    dest_trace(w, d);
}

static void conn_failed(struct world *w, struct conn *c, enum fail_kind kind)
{
    static const char *const reasons[] = {
        "connect timed out",
        "timed out while receiving the initial server greeting",
        "lost connection or 421 while receiving the initial server greeting",
    };
    struct sim_result *res = w->res;

    res->deferred += c->rcpts;
    if (kind == FAIL_CONNECT)
        res->timeouts_connect += c->rcpts;
    else if (kind == FAIL_GREETING)
        res->timeouts_greeting += c->rcpts;
    else
        res->rejected += c->rcpts;
    conn_close(w, c);
    delivery_done(w, c, CORE_HOP_FAIL, reasons[kind]);
}

static int conn_reusable(const struct world *w, const struct conn *c)
{
    const struct sim_scenario *sc = w->sc;

    return sc->connection_caching && c->dest->pending > 0 &&
           (sc->reuse_count_limit == 0 || c->uses < sc->reuse_count_limit) &&
           w->now - c->opened_at < sc->reuse_time_limit;
}

static void service_done(struct world *w, struct conn *c)
{
    w->res->delivered += c->rcpts;
    if (conn_reusable(w, c)) {
        c->state = CONN_IDLE;
        c->gen++;
        TAILQ_INSERT_TAIL(&c->dest->idle, c, link);
        event_push(w, w->now + w->sc->cache_time_limit, EV_CACHE_EXPIRE, c,
                   c->gen);
    } else {
        conn_close(w, c);
    }
    delivery_done(w, c, CORE_HOP_OK, NULL);
}

static void event_run(struct world *w, const struct event *ev)
{
    struct conn *c = ev->conn;

    if (ev->type == EV_CLIENT_TIMEOUT) {
        if (ev->gen == c->timeout_gen && c->state != CONN_CLOSED)
            conn_failed(w, c, c->timeout_kind);
        return;
    }
    if (ev->gen != c->gen)
        return;
    switch (ev->type) {
    case EV_SYN_RETRY:
    case EV_SYNACK_RETRY:
        server_syn(w, c);
        break;
    case EV_SERVICE_DONE:
        service_done(w, c);
        break;
    case EV_REJECT_DONE:
        conn_failed(w, c, FAIL_REJECT);
        break;
    case EV_CACHE_EXPIRE:
        TAILQ_REMOVE(&c->dest->idle, c, link);
        conn_close(w, c);
        break;
    default:
        break;
    }
}

/* core/ declared a destination dead: its remaining mail is deferred. */
static void world_queue_dead(void *ctx, struct core_queue *q,
                             const char *reason)
{
    struct world *w = ctx;

    (void)reason;
    for (int i = 0; i < w->sc->destinations; i++) {
        struct dest *d = &w->dests[i];

        if (d->q == q) {
            w->res->deferred += d->pending;
            w->res->suspended += d->pending;
            dest_stat(w, d);
            d->pending = 0;
            d->frozen = 1;
        }
    }
}

static void world_log(void *ctx, enum core_log_level level, const char *text)
{
    struct world *w = ctx;

    (void)level;
    if (w->trace)
        fprintf(w->trace, "# %.3f %s\n", w->now / 1000.0, text);
}

static void world_init(struct world *w, const struct sim_scenario *sc,
                       struct sim_result *res, FILE *trace)
{
    static const struct core_callbacks cb = {
        .log = world_log,
        .queue_dead = world_queue_dead,
    };

    memset(w, 0, sizeof(*w));
    memset(res, 0, sizeof(*res));
    w->sc = sc;
    w->res = res;
    w->trace = trace;
    w->rng = sc->seed;
    w->core = core_create(&cb, w);
    w->t = core_transport_create(w->core, sc->transport, &sc->params);
    w->dests = sim_alloc(sizeof(*w->dests) * sc->destinations);
    w->dirty = sim_alloc(sizeof(*w->dirty) * sc->destinations);
    res->sc = sc;
    res->recipients = sc->recipients * sc->destinations;
    for (int i = 0; i < sc->destinations; i++) {
        struct dest *d = &w->dests[i];

        snprintf(d->key, sizeof(d->key), "d%d.sim", i + 1);
        d->q = core_queue_create(w->t, d->key);
        d->pending = sc->recipients;
        d->servers = sim_alloc(sizeof(*d->servers) * sc->servers);
        for (int j = 0; j < sc->servers; j++) {
            TAILQ_INIT(&d->servers[j].accept_queue);
            d->servers[j].bad = j < sc->bad_servers;
        }
        TAILQ_INIT(&d->idle);
        d->trace_window = d->trace_busy = -2;
    }
}

static void world_results(struct world *w)
{
    struct sim_result *res = w->res;
    int n = w->sc->destinations;
    double avg = 0, var = 0, tavg = 0, tvar = 0;

    for (int i = 0; i < n; i++) {
        struct dest *d = &w->dests[i];
        double span = d->measured / 1000.0;

        if (span > 0) {
            double m = d->busy_integral / span;

            tavg += m;
            tvar += d->busy2_integral / span - m * m;
        }
        if (d->starts > 0) {
            double m = d->start_sum / d->starts;

            avg += m;
            var += d->start_sum2 / d->starts - m * m;
        }
    }
    res->concurrency_avg = avg / n;
    res->concurrency_stddev = var > 0 ? sqrt(var / n) : 0;
    res->concurrency_time_avg = tavg / n;
    res->concurrency_time_stddev = tvar > 0 ? sqrt(tvar / n) : 0;
    res->duration = w->now / 1000.0;
}

static void world_free(struct world *w)
{
    struct conn *c;

    while ((c = w->all_conns) != NULL) {
        w->all_conns = c->all_next;
        free(c);
    }
    for (int i = 0; i < w->sc->destinations; i++)
        free(w->dests[i].servers);
    free(w->dests);
    free(w->dirty);
    free(w->heap);
    core_free(w->core);
}

static int world_busy(const struct world *w)
{
    for (int i = 0; i < w->sc->destinations; i++)
        if (w->dests[i].pending > 0 || w->dests[i].q->busy > 0)
            return 1;
    return 0;
}

void sim_run(const struct sim_scenario *sc, struct sim_result *res, FILE *trace)
{
    struct world w;

    world_init(&w, sc, res, trace);
    for (int i = 0; i < sc->destinations; i++)
        dest_trace(&w, &w.dests[i]);
    dispatch(&w);
    /* Run until every entry is handed out and finished; what is left in
     * the heap then (stale timeouts, idle connections) changes nothing. */
    while (world_busy(&w)) {
        core_time_t timer = core_next_timer(w.core);

        if (w.heap_len > 0 && w.heap[0].when <= timer) {
            struct event ev = event_pop(&w);

            world_advance(&w, ev.when);
            event_run(&w, &ev);
        } else if (timer != CORE_TIME_NEVER) {
            world_advance(&w, timer);
            core_run_timers(w.core, timer);
            for (int i = 0; i < sc->destinations; i++)
                dest_trace(&w, &w.dests[i]);
        } else {
            break;
        }
        res->events++;
        dispatch(&w);
    }
    trace_flush(&w);
    world_results(&w);
    world_free(&w);
}
