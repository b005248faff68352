/*
 * NAME
 *	zmailer 3 - ZMailer's thread scheduler driving the delivery agents
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qmgr_rules_set(struct qmgr *q, struct conf_rules *rules)
 *	int	qm_zmailer_take(struct qmgr *q, struct core_entry *e)
 *	void	qm_zmailer_cache(const struct qm_delivery *d,
 *			const char **key, int *idle_ms)
 *	void	qm_zmailer_entry_done(struct qm_delivery *d,
 *			int hop_failed, const char *reason)
 *	void	qm_zmailer_over(struct qm_delivery *d)
 *	void	qm_zmailer_flush(struct qmgr *q,
 *			const struct smtp_node *node)
 *	void	qm_zmailer_reload(struct qmgr *q)
 *	void	qm_zmailer_status(const struct qmgr *q,
 *			const char *transport, struct core_zsummary *s)
 *	void	qm_zmailer_free(struct qmgr *q)
 * DESCRIPTION
 *	A transport with <transport>_delivery_scheduler = zmailer is run
 *	by the seed's scheduler (core/zthread.c): core/ hands each of its
 *	entries over at once (conf_core_params(): no window holds them),
 *	and qm_zmailer_take() makes it a vertex: it matches the rules
 *	(conf_rules_match(), channel the transport's name, host the next
 *	hop) and adds it to the thread of its triplet
 *	(core_zsched_vertex_add()), which starts when it can. A vertex is
 *	the seed's: the recipients of one message for one thread (core/'s
 *	entry, up to the transport's recipient limit). It returns 0 for
 *	an entry that is not for such a transport (or is an address probe).
 *
 *	An agent is a number of core/'s; here it is a key of the delivery
 *	agent's connection cache, "zmailer:N", so that one agent is one
 *	connection at most. A started agent is hungry: at the loop's next
 *	turn it is fed the next vertex of its run (core_zsched_next_vertex())
 *	as a delivery of its own (qm_delivery_start(), with the same DNS,
 *	TLS, MTA-STS, DANE, logging and spool writes as under the postfix
 *	scheduler), whose connection stays in the cache under the agent's
 *	key for the next one: the thread's vertices go down one connection,
 *	one after the other. When a delivery ends (qm_zmailer_over()) its
 *	vertex leaves the thread and the agent is hungry again; with no
 *	vertex left it is idle, its connection idle in the cache: the
 *	ring's idle pool is the connection cache. An idle agent is reused
 *	by the next thread of its ring, and ended, its connection closed
 *	with QUIT, after the rule's idlemax ("zmailer: transport T: agent N
 *	for HOST ended after idlemax"), or when maxta needs its place.
 *	qm_zmailer_cache() gives a fed delivery its agent's key and how
 *	long the cache may keep the connection (idlemax and a minute: the
 *	driver ends it first). qm_zmailer_entry_done() is told of each
 *	fed delivery's end before core/ is: a hop failure ends the run,
 *	a deferral sets the message's retry time.
 *
 *	The built-in smtp and lmtp agents reach one next hop per
 *	connection, so their rings are one host's (per_host, as a $host
 *	command is): the idle pool of a ring is then the connections to
 *	that host (decision 124). Everything else about an agent is the
 *	delivery request's, so that another kind of agent can take the
 *	same path.
 *
 *	A hop failure (no connection, a refused greeting, DNS) ends the
 *	thread's run: the vertices left in it are deferred without a
 *	connection ("delivery temporarily suspended: REASON"), as is a
 *	vertex whose destination or transport was suspended (sluice
 *	suspend, a cluster's dead destination) after it arrived. A deferred
 *	vertex leaves the thread and its recipients wait in the spool: the
 *	message's next attempt is the rule's retry schedule
 *	(conf_rules_retry_delay(), retry number the message's attempts,
 *	skew applied) instead of the backoff. A recipient that no rule
 *	matches is deferred ("no scheduler rule for CHANNEL/HOST", with a
 *	warning), one whose rule is queueonly too ("queueonly: held until
 *	ETRN or sluice flush for HOST"), unless an ETRN or "sluice flush"
 *	for its host (qm_zmailer_flush()) released the host in the last
 *	ZM_RELEASE_MS: then its thread is started by core_zsched_flush().
 *
 *	Threads that met maxta or maxring wait ZM_LIMIT_DELAY_MS and are
 *	started again by the agenda (core_zsched_agenda()) on the driver's
 *	timer, which also ends idle agents (core_zsched_idle_expire()).
 *
 *	qmgr_rules_set() hands the queue manager the rules of a new
 *	configuration (they are its own from then on; the old ones are
 *	freed). qm_zmailer_reload() applies them: the threads that exist
 *	run out under the rules they were made with, every vertex that
 *	arrives from then on is matched with the new ones (into new
 *	threads: rule numbers carry the generation), and idle agents are
 *	ended at once (decision 125). qm_zmailer_status() sums a
 *	transport's threads, rings, agents and vertices for "sluice
 *	status". qm_zmailer_free() forgets every vertex and agent (core/'s
 *	entries go with core/).
 */

#include "qmgr/qmgr_impl.h"

#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define ZM_LIMIT_DELAY_MS 1000  /* a thread that met a limit waits */
#define ZM_RELEASE_MS     60000 /* an ETRN releases its host this long */
#define ZM_AGENT_HASH     1024
#define ZM_STARTS         64 /* starts asked of core/ at a time */

struct zm_vertex {
    struct core_entry *e;
    TAILQ_ENTRY(zm_vertex) link;
};

struct zm_agent {
    uint64_t id;
    char key[40]; /* the connection cache's: "zmailer:N" */
    char transport[ROUTE_NAME_MAX + 1];
    char host[ROUTE_NEXTHOP_MAX + 16];
    struct zm_vertex *current; /* being delivered, or NULL */
    char *failed;              /* the run's hop failure, or NULL */
    int64_t idle_ms;           /* its rule's idlemax */
    int hungry;
    struct zm_agent *hnext;
    TAILQ_ENTRY(zm_agent) hungry_link;
};

struct zm_release {
    struct smtp_node node; /* domain "" with all: every host */
    int all;
    char **hosts; /* the threads it started, flushed again on the timer */
    size_t nhosts;
    core_time_t until;
    struct zm_release *next;
};

struct qm_zmailer {
    struct qmgr *q;
    struct core_zsched *z;
    int generation;
    struct event *timer_ev, *kick_ev;
    struct zm_agent *agents[ZM_AGENT_HASH];
    TAILQ_HEAD(, zm_agent) hungry;
    TAILQ_HEAD(, zm_vertex) vertices;
    struct zm_release *releases;
};

static unsigned zm_rand(void *ctx, unsigned n)
{
    uint32_t r;

    (void)ctx;
    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint32_t)random();
    return n ? r % n : 0;
}

static void zm_feed_all(evutil_socket_t fd, short what, void *arg);
static void zm_timer_cb(evutil_socket_t fd, short what, void *arg);
static void zm_timer_set(struct qm_zmailer *zm);

/* The maxta of the rules, or the process limit when they set none. */
static int zm_maxta(const struct qmgr *q)
{
    int maxta = q->rules ? conf_rules_maxta(q->rules) : 0;

    return maxta > 0 ? maxta
                     : (int)conf_int(q->conf, NULL, CONF_default_process_limit);
}

static struct qm_zmailer *zm_get(struct qmgr *q)
{
    struct qm_zmailer *zm = q->zmailer;

    if (zm != NULL)
        return zm;
    zm = xcalloc(1, sizeof(*zm));
    zm->q = q;
    zm->z = core_zsched_create(zm_maxta(q), ZM_LIMIT_DELAY_MS, zm_rand, NULL);
    zm->timer_ev = evtimer_new(q->base, zm_timer_cb, zm);
    zm->kick_ev = event_new(q->base, -1, 0, zm_feed_all, zm);
    TAILQ_INIT(&zm->hungry);
    TAILQ_INIT(&zm->vertices);
    q->zmailer = zm;
    return zm;
}

void qmgr_rules_set(struct qmgr *q, struct conf_rules *rules)
{
    conf_rules_free(q->rules);
    q->rules = rules;
    if (q->zmailer != NULL)
        qm_zmailer_reload(q);
}

static struct zm_agent **agent_slot(struct qm_zmailer *zm, uint64_t id)
{
    struct zm_agent **p = &zm->agents[id % ZM_AGENT_HASH];

    while (*p != NULL && (*p)->id != id)
        p = &(*p)->hnext;
    return p;
}

static void agent_hungry(struct qm_zmailer *zm, struct zm_agent *a)
{
    if (!a->hungry) {
        a->hungry = 1;
        TAILQ_INSERT_TAIL(&zm->hungry, a, hungry_link);
    }
    event_active(zm->kick_ev, 0, 0);
}

/* core/ ended agent id (idlemax, maxta, reload): its connection goes. */
static void agent_end(struct qm_zmailer *zm, uint64_t id, const char *why)
{
    struct zm_agent **p = agent_slot(zm, id), *a = *p;

    if (a == NULL)
        return;
    *p = a->hnext;
    if (a->hungry)
        TAILQ_REMOVE(&zm->hungry, a, hungry_link);
    deliver_cache_drop(zm->q->cache, a->key);
    qm_log(zm->q, QMGR_LOG_INFO, "zmailer: transport %s: agent %llu for %s %s",
           a->transport, (unsigned long long)a->id, a->host, why);
    free(a->failed);
    free(a);
}

/* A start core/ answered: a new agent, or an idle one that takes it. */
static void zm_started(struct qm_zmailer *zm,
                       const struct core_zstart_result *r)
{
    struct zm_agent **p, *a;
    const char *channel = "", *host = "";
    core_time_t idlemax;

    if (r->how != CORE_ZSTART_NEW && r->how != CORE_ZSTART_REUSE)
        return;
    if (r->ended != 0)
        agent_end(zm, r->ended, "ended to make room (maxta)");
    p = agent_slot(zm, r->agent);
    if ((a = *p) == NULL) {
        a = *p = xcalloc(1, sizeof(*a));
        a->id = r->agent;
        snprintf(a->key, sizeof(a->key), "zmailer:%llu",
                 (unsigned long long)a->id);
    }
    core_zsched_agent_thread(zm->z, a->id, &channel, &host, &idlemax);
    snprintf(a->transport, sizeof(a->transport), "%s", channel);
    snprintf(a->host, sizeof(a->host), "%s", host);
    a->idle_ms = idlemax;
    agent_hungry(zm, a);
}

/* The route of an entry: its destination queue's. */
static const struct route_result *entry_route(struct core_entry *e)
{
    const struct qm_dest *d = core_queue_ctx(core_entry_queue(e));

    return &d->route;
}

static int zm_applies(const struct qmgr *q, const struct route_result *r)
{
    return (r->type == ROUTE_SMTP || r->type == ROUTE_LMTP ||
            r->type == ROUTE_AGENT) &&
           strcmp(
               conf_str(q->conf, r->transport, CONF_default_delivery_scheduler),
               "zmailer") == 0;
}

/* The message's next attempt: the rule's schedule, the earliest one. */
static void zm_retry_at(struct qmgr *q, struct qm_msg *m,
                        const struct route_result *r)
{
    struct conf_rule_match cm;
    int64_t at;

    if (m == NULL || q->rules == NULL ||
        conf_rules_match(q->rules, r->transport, r->nexthop, &cm) < 0)
        return;
    at = spool_now() +
         conf_rules_retry_delay(&cm, (int)m->sm->attempts) * (int64_t)1000;
    if (m->zretry == 0 || at < m->zretry)
        m->zretry = at;
}

/* Every recipient of e deferred without a delivery; e is done. */
static void zm_defer(struct qmgr *q, struct core_entry *e, const char *dsn,
                     const char *text)
{
    struct qm_msg *m = core_message_ctx(core_entry_message(e));
    const struct route_result *r = entry_route(e);
    struct core_queue *cq = core_entry_queue(e);
    const uint64_t *rcpt;
    int n;

    rcpt = core_entry_rcpts(e, &n);
    qm_outcome_decide(m, rcpt, n, DELIVER_DEFER, dsn, text, "none");
    zm_retry_at(q, m, r);
    core_entry_done(e, qm_now_ms(), CORE_HOP_NEUTRAL, NULL);
    qm_dest_release(cq);
}

/* Does a release cover e: its next hop or one of its recipients, as
 * qmgr_flush() matches them? */
static int release_covers(const struct zm_release *r, struct core_entry *e)
{
    struct qm_msg *m = core_message_ctx(core_entry_message(e));
    const uint64_t *rcpt;
    int n;

    if (r->all || smtp_node_match(&r->node, entry_route(e)->nexthop))
        return 1;
    rcpt = core_entry_rcpts(e, &n);
    for (int k = 0; k < n; k++)
        if (smtp_node_match(&r->node,
                            qm_rcpt_get(m, (uint32_t)rcpt[k])->address))
            return 1;
    return 0;
}

/* The release of a recent ETRN or flush that covers e, or NULL. */
static struct zm_release *zm_released(struct qm_zmailer *zm,
                                      struct core_entry *e, core_time_t now)
{
    for (struct zm_release *r = zm->releases; r; r = r->next)
        if (now < r->until && release_covers(r, e))
            return r;
    return NULL;
}

/* A thread the release started: flushed again while it lasts, so that
 * one that met a limit is not left for the next ETRN. */
static void release_host(struct zm_release *r, const char *host)
{
    for (size_t i = 0; i < r->nhosts; i++)
        if (strcmp(r->hosts[i], host) == 0)
            return;
    r->hosts = xrealloc(r->hosts, (r->nhosts + 1) * sizeof(*r->hosts));
    r->hosts[r->nhosts++] = xstrdup(host);
}

static void release_free(struct zm_release *r)
{
    for (size_t i = 0; i < r->nhosts; i++)
        free(r->hosts[i]);
    free(r->hosts);
    free(r);
}

static void zm_flush_host(struct qm_zmailer *zm, const char *host,
                          core_time_t now)
{
    struct core_zstart_result out[ZM_STARTS];
    size_t n = core_zsched_flush(zm->z, host, now, out, ZM_STARTS);

    for (size_t i = 0; i < n; i++)
        zm_started(zm, &out[i]);
}

int qm_zmailer_take(struct qmgr *q, struct core_entry *e)
{
    const struct route_result *r = entry_route(e);
    struct qm_msg *m = core_message_ctx(core_entry_message(e));
    struct conf_rule_match cm;
    struct core_zrule zr;
    struct core_zstart_result res;
    struct qm_zmailer *zm;
    struct zm_vertex *v;
    struct zm_release *rel = NULL;
    core_time_t now = qm_now_ms();
    char text[ROUTE_NEXTHOP_MAX + 200], host[ROUTE_NEXTHOP_MAX + 16];

    if (qm_verify_owns(q, core_entry_message(e)) || !zm_applies(q, r) ||
        q->rules == NULL)
        return 0;
    zm = zm_get(q);
    if (conf_rules_match(q->rules, r->transport, r->nexthop, &cm) < 0) {
        snprintf(text, sizeof(text), "no scheduler rule for %s/%s",
                 r->transport, r->nexthop);
        qm_log(q, QMGR_LOG_WARNING, "%s: %s", m->id, text);
        zm_defer(q, e, "4.3.5", text);
        return 1;
    }
    if (cm.queueonly && (rel = zm_released(zm, e, now)) == NULL) {
        snprintf(text, sizeof(text),
                 "queueonly: held until ETRN or sluice flush for %s",
                 r->nexthop);
        zm_defer(q, e, "4.3.2", text);
        return 1;
    }
    route_nexthop_format(r, host, sizeof(host)); /* with its port */
    conf_rules_zrule(&cm, &zr);
    zr.index += zm->generation * CONF_RULES_MAX;
    if (cm.agent != CONF_RULE_PROGRAM)
        zr.per_host = 1; /* a connection reaches one host */
    v = xcalloc(1, sizeof(*v));
    v->e = e;
    TAILQ_INSERT_TAIL(&zm->vertices, v, link);
    core_zsched_vertex_add(zm->z, &zr, r->transport, host,
                           (uint64_t)(uintptr_t)v, now,
                           (core_time_t)(m->sm->arrival / 1000), now, &res);
    if (res.how == CORE_ZSTART_QUEUEONLY) {
        release_host(rel, host);
        zm_flush_host(zm, host, now);
    } else if (res.how == CORE_ZSTART_LIMIT) {
        zm_timer_set(zm); /* its thread waits: the agenda must come */
    } else {
        zm_started(zm, &res);
    }
    return 1;
}

/* The rest of a failed run, or a vertex of a destination or transport
 * suspended since it arrived (sluice suspend): deferred without a
 * connection, as core/ defers a dead destination's entries. */
static void zm_skip(struct qm_zmailer *zm, struct zm_agent *a,
                    struct zm_vertex *v, const char *why)
{
    char text[700];

    snprintf(text, sizeof(text), "delivery temporarily suspended: %s", why);
    TAILQ_REMOVE(&zm->vertices, v, link);
    core_zsched_vertex_done(zm->z, a->id, (uint64_t)(uintptr_t)v, -1);
    zm_defer(zm->q, v->e, "4.4.1", text);
    free(v);
}

/* The seed's feed_child(): the agent's next vertex, or idle. */
static void zm_feed(struct qm_zmailer *zm, struct zm_agent *a)
{
    struct qmgr *q = zm->q;
    uint64_t id;

    while (core_zsched_next_vertex(zm->z, a->id, qm_now_ms(), &id)) {
        struct zm_vertex *v = (struct zm_vertex *)(uintptr_t)id;

        const char *refusal = core_queue_refusal(core_entry_queue(v->e));

        if (a->failed != NULL || refusal != NULL) {
            zm_skip(zm, a, v, a->failed ? a->failed : refusal);
            continue;
        }
        a->current = v;
        qm_cluster_started(q, core_entry_queue(v->e));
        qm_delivery_start(q, v->e, a);
        return;
    }
    free(a->failed); /* the run is over */
    a->failed = NULL;
}

static void zm_timer_set(struct qm_zmailer *zm)
{
    core_time_t next = core_zsched_next_timer(zm->z), now = qm_now_ms();
    struct timeval tv;

    for (struct zm_release *r = zm->releases; r; r = r->next)
        if (r->until < next)
            next = r->until > now + ZM_LIMIT_DELAY_MS ? now + ZM_LIMIT_DELAY_MS
                                                      : r->until;
    if (next == CORE_TIME_NEVER) {
        evtimer_del(zm->timer_ev);
        return;
    }
    next = next > now ? next - now : 0;
    tv.tv_sec = next / 1000;
    tv.tv_usec = (next % 1000) * 1000;
    evtimer_add(zm->timer_ev, &tv);
}

static void zm_feed_all(evutil_socket_t fd, short what, void *arg)
{
    struct qm_zmailer *zm = arg;
    struct zm_agent *a;

    (void)fd;
    (void)what;
    if (zm->q->closing || zm->q->draining)
        return;
    while ((a = TAILQ_FIRST(&zm->hungry)) != NULL) {
        TAILQ_REMOVE(&zm->hungry, a, hungry_link);
        a->hungry = 0;
        zm_feed(zm, a);
    }
    zm_timer_set(zm);
    qm_dispatch(zm->q);
}

/* The agenda: due threads started, idle agents past idlemax ended. */
static void zm_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qm_zmailer *zm = arg;
    struct core_zstart_result out[ZM_STARTS];
    uint64_t ended[ZM_STARTS];
    core_time_t now = qm_now_ms();
    struct zm_release **p = &zm->releases, *r;
    size_t n;

    (void)fd;
    (void)what;
    while ((n = core_zsched_idle_expire(zm->z, now, ended, ZM_STARTS)) > 0)
        for (size_t i = 0; i < n; i++)
            agent_end(zm, ended[i], "ended after idlemax");
    if (!zm->q->closing && !zm->q->draining) {
        n = core_zsched_agenda(zm->z, now, out, ZM_STARTS);
        for (size_t i = 0; i < n; i++)
            zm_started(zm, &out[i]);
    }
    while ((r = *p) != NULL) {
        if (r->until <= now) {
            *p = r->next;
            release_free(r);
            continue;
        }
        for (size_t i = 0; i < r->nhosts && !zm->q->draining && !zm->q->closing;
             i++)
            zm_flush_host(zm, r->hosts[i], now);
        p = &r->next;
    }
    zm_timer_set(zm);
}

void qm_zmailer_entry_done(struct qm_delivery *d, int hop_failed,
                           const char *reason)
{
    struct zm_agent *a = d->zagent;

    if (hop_failed && a->failed == NULL)
        a->failed = xstrdup(reason && *reason ? reason : "hop failure");
    if (d->m != NULL && d->m->deferrals != d->zdeferrals)
        zm_retry_at(d->q, d->m, &d->dest->route);
}

void qm_zmailer_over(struct qm_delivery *d)
{
    struct qmgr *q = d->q;
    struct qm_zmailer *zm = q->zmailer;
    struct zm_agent *a = d->zagent;
    struct zm_vertex *v;

    d->zagent = NULL;
    if (a == NULL || zm == NULL || (v = a->current) == NULL)
        return;
    a->current = NULL;
    TAILQ_REMOVE(&zm->vertices, v, link);
    if (!q->closing) {
        core_zsched_vertex_done(zm->z, a->id, (uint64_t)(uintptr_t)v, -1);
        agent_hungry(zm, a);
    }
    free(v);
}

void qm_zmailer_flush(struct qmgr *q, const struct smtp_node *node)
{
    struct qm_zmailer *zm;
    struct zm_release *r;

    if (q->rules == NULL)
        return;     /* no zmailer transport */
    zm = zm_get(q); /* the flushed mail may be its first vertices */
    r = xcalloc(1, sizeof(*r));
    if (node != NULL)
        r->node = *node;
    r->all = node == NULL;
    r->until = qm_now_ms() + ZM_RELEASE_MS;
    r->next = zm->releases;
    zm->releases = r;
    zm_timer_set(zm);
}

void qm_zmailer_reload(struct qmgr *q)
{
    struct qm_zmailer *zm = q->zmailer;
    uint64_t ended[ZM_STARTS];
    size_t n;

    if (zm == NULL)
        return;
    zm->generation = (zm->generation + 1) % (INT32_MAX / CONF_RULES_MAX);
    while ((n = core_zsched_idle_expire(zm->z, CORE_TIME_NEVER, ended,
                                        ZM_STARTS)) > 0)
        for (size_t i = 0; i < n; i++)
            agent_end(zm, ended[i], "ended by a reload");
    core_zsched_maxta_set(zm->z, zm_maxta(q));
    zm_timer_set(zm);
}

void qm_zmailer_cache(const struct qm_delivery *d, const char **key,
                      int *idle_ms)
{
    const struct zm_agent *a = d->zagent;
    int64_t ms = a->idle_ms + 60000; /* the driver closes it before */

    *key = a->key;
    *idle_ms = ms > INT32_MAX ? INT32_MAX : (int)ms;
}

void qm_zmailer_status(const struct qmgr *q, const char *transport,
                       struct core_zsummary *s)
{
    memset(s, 0, sizeof(*s));
    if (q->zmailer != NULL)
        core_zsched_summary(q->zmailer->z, transport, s);
}

void qm_zmailer_free(struct qmgr *q)
{
    struct qm_zmailer *zm = q->zmailer;
    struct zm_vertex *v;

    if (zm == NULL)
        return;
    for (size_t i = 0; i < ZM_AGENT_HASH; i++)
        while (zm->agents[i] != NULL) {
            struct zm_agent *a = zm->agents[i];

            zm->agents[i] = a->hnext;
            free(a->failed);
            free(a);
        }
    while ((v = TAILQ_FIRST(&zm->vertices)) != NULL) {
        TAILQ_REMOVE(&zm->vertices, v, link);
        free(v);
    }
    while (zm->releases != NULL) {
        struct zm_release *r = zm->releases;

        zm->releases = r->next;
        release_free(r);
    }
    core_zsched_free(zm->z);
    event_free(zm->timer_ev);
    event_free(zm->kick_ev);
    free(zm);
    q->zmailer = NULL;
}
