/*
 * NAME
 *	network 3 - the simulated network: connections and SMTP servers
 * SYNOPSIS
 *	#include "sim/world_impl.h"
 *
 *	void	net_deliver(struct world *w, struct domain *d,
 *			struct core_entry *e)
 *	void	net_event(struct world *w, const struct event *ev)
 *	void	net_domain_init(struct world *w, struct domain *d)
 * DESCRIPTION
 *	A delivery uses a cached idle connection to its domain if
 *	connection caching is on and one exists, else it opens a TCP
 *	connection to a server chosen at random among the domain's
 *	sim_servers. A server has sim_server_process_limit processes; a
 *	connection that finds one free is served at once, else it waits in
 *	the accept queue (sim_server_backlog long, first come first served).
 *	When the accept queue is full, the connection is not admitted: with
 *	drop_syn (FreeBSD) the client's SYN is dropped and retransmitted
 *	after sim_syn_retry_delay, doubling, until sim_connect_timeout; with
 *	drop_ack (Linux) the client believes it is connected while the
 *	server retransmits its SYN-ACK sim_syn_retries times and then
 *	forgets the connection, and the client waits for a greeting until
 *	sim_greeting_timeout. A queued connection that waits longer than
 *	the greeting timeout fails the same way.
 *
 *	A server process that takes a connection greets it, unless the
 *	server is bad (it fails the handshake) or already holds
 *	sim_server_concurrency_limit connections (it replies 421 and hangs
 *	up); either failure reaches the client sim_reject_delay later. A
 *	greeted connection delivers the entry's recipients, each taking
 *	sim_recipient_delay +/- sim_recipient_delay_jitter, then is closed,
 *	or with caching kept idle for smtp_connection_cache_time_limit
 *	unless it reached smtp_connection_reuse_time_limit or
 *	smtp_connection_reuse_count_limit, or its domain has nothing
 *	waiting. A closing connection frees its server process, which at
 *	once takes the next queued connection, before the client can open
 *	another one.
 */

#include "sim/world_impl.h"

#include <stdlib.h>

static const struct sim_model *model(const struct conn *c)
{
    return &c->domain->def->model;
}

static void conn_timeout(struct world *w, struct conn *c, core_time_t after,
                         enum fail_kind kind)
{
    c->timeout_gen++;
    c->timeout_kind = kind;
    world_event(w, w->now + after, EV_CLIENT_TIMEOUT, c, c->timeout_gen);
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
    } else if (c->state == CONN_IDLE) {
        TAILQ_REMOVE(&c->domain->idle, c, link);
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
    const struct sim_model *m = model(c);
    core_time_t took = 0;
    for (int i = 0; i < core_entry_count(c->entry); i++)
        took += world_rand(w, m->recipient_delay - m->recipient_delay_jitter,
                           m->recipient_delay + m->recipient_delay_jitter);
    c->state = CONN_SERVING;
    c->uses++;
    c->gen++;
    world_event(w, w->now + took, EV_SERVICE_DONE, c, c->gen);
}

/* A server process takes the connection and greets it, or refuses it. */
static void conn_accepted(struct world *w, struct conn *c)
{
    struct server *s = c->server;
    int limit = model(c)->concurrency_limit;

    s->workers_busy++;
    c->timeout_gen++; /* the greeting arrives */
    if (s->bad || (limit > 0 && s->admitted >= limit)) {
        /* 421 and hang up, or a failed handshake: the process is free. */
        c->state = CONN_REJECTING;
        c->gen++;
        world_event(w, w->now + model(c)->reject_delay, EV_REJECT_DONE, c,
                    c->gen);
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
    const struct sim_model *m = model(c);
    struct server *s = c->server;

    if (s->workers_busy < m->process_limit) {
        conn_accepted(w, c);
    } else if (s->queued < m->backlog) {
        if (c->state == CONN_SYN_SENT)
            conn_timeout(w, c, w->sc->greeting_timeout, FAIL_GREETING);
        c->state = CONN_QUEUED;
        TAILQ_INSERT_TAIL(&s->accept_queue, c, link);
        s->queued++;
    } else if (m->overflow == SIM_OVERFLOW_DROP_SYN) {
        c->gen++;
        world_event(w, w->now + (m->syn_retry_delay << c->retries++),
                    EV_SYN_RETRY, c, c->gen);
    } else {
        if (c->state == CONN_SYN_SENT)
            conn_timeout(w, c, w->sc->greeting_timeout, FAIL_GREETING);
        c->gen++;
        if (c->retries < m->syn_retries) {
            c->state = CONN_SYNACK_WAIT;
            world_event(w, w->now + (m->syn_retry_delay << c->retries++),
                        EV_SYNACK_RETRY, c, c->gen);
        } else {
            c->state = CONN_LOST;
        }
    }
}

static void conn_open(struct world *w, struct domain *d, struct core_entry *e)
{
    struct conn *c = xcalloc(1, sizeof(*c));

    c->domain = d;
    c->entry = e;
    c->server = &d->servers[world_rand(w, 0, d->def->model.servers - 1)];
    c->state = CONN_SYN_SENT;
    c->all_next = w->all_conns;
    w->all_conns = c;
    w->res->connections++;
    conn_timeout(w, c, w->sc->connect_timeout, FAIL_CONNECT);
    server_syn(w, c);
}

void net_deliver(struct world *w, struct domain *d, struct core_entry *e)
{
    struct conn *c;

    if ((c = TAILQ_FIRST(&d->idle)) != NULL) {
        TAILQ_REMOVE(&d->idle, c, link);
        c->entry = e;
        conn_serve(w, c);
    } else {
        conn_open(w, d, e);
    }
}

static void conn_failed(struct world *w, struct conn *c, enum fail_kind kind)
{
    conn_close(w, c);
    world_delivery_done(w, c, CORE_HOP_FAIL, kind);
}

static void service_done(struct world *w, struct conn *c)
{
    if (world_conn_reusable(w, c)) {
        c->state = CONN_IDLE;
        c->gen++;
        TAILQ_INSERT_TAIL(&c->domain->idle, c, link);
        world_event(w, w->now + w->sc->cache_time_limit, EV_CACHE_EXPIRE, c,
                    c->gen);
    } else {
        conn_close(w, c);
    }
    world_delivery_done(w, c, CORE_HOP_OK, FAIL_NONE);
}

void net_event(struct world *w, const struct event *ev)
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
        conn_close(w, c);
        break;
    default:
        break;
    }
}

void net_domain_init(struct world *w, struct domain *d)
{
    const struct sim_model *m = &d->def->model;

    (void)w;
    d->servers = xcalloc(m->servers, sizeof(*d->servers));
    for (int j = 0; j < m->servers; j++) {
        TAILQ_INIT(&d->servers[j].accept_queue);
        d->servers[j].bad = j < m->bad_servers;
    }
    TAILQ_INIT(&d->idle);
}
