/*
 * NAME
 *	cluster 3 - a member of a cluster: its connection to Redis, its syncs
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	struct cluster *cluster_create(struct event_base *base,
 *			const struct cluster_config *cfg,
 *			const struct cluster_callbacks *cb)
 *	void	cluster_free(struct cluster *c)
 *	void	cluster_poke(struct cluster *c)
 *	void	cluster_demand(struct cluster *c, const char *name,
 *			int limit, int want, int busy)
 *	int	cluster_cap(const struct cluster *c, const char *name,
 *			int limit)
 *	int	cluster_joined(const struct cluster *c)
 *	int	cluster_members(const struct cluster *c)
 *	int	cluster_reconfigure(struct cluster *c,
 *			const struct cluster_config *cfg)
 *	int	cluster_suspend_held(struct cluster *c, const char *dest,
 *			cluster_held_fn *fn, void *arg)
 * DESCRIPTION
 *	The member's state is one of three. Joining (from the start to the
 *	first reply): queues with a limit start nothing, one round trip.
 *	Joined: Redis answers; each queue's cap is its leases. Alone: Redis
 *	refused the connection, closed it, answered with an error, or not
 *	within cluster_redis_timeout; each queue's cap is its share of the
 *	limit (cluster_share(), the live members last known), the
 *	connection is dropped and made again every second, and the first
 *	reply joins again. Each change to alone or joined is logged once.
 *
 *	A sync is one EVAL of script.c's script: at most one is in
 *	flight; cluster_poke() asks for one in the next turn of the event
 *	loop, a poke during a sync asks for another after it. A timer syncs
 *	every third of cluster_lease_time, renewing the leases and the
 *	heartbeat, and pulls the other members' host facts then.
 *	Nothing waits for Redis: the event loop goes on, and the caps in
 *	force are the last ones known.
 *
 *	cluster_create() returns NULL when cfg->url does not parse (the
 *	daemon's configuration check says why first).
 *
 *	cluster_reconfigure() applies a reload: a new lease time and
 *	timeout from the next sync; another URL, cluster_name or
 *	cluster_key_prefix makes the member leave its cluster and join that
 *	one (logged "cluster NAME: joining at URL"), guarded as a rejoin.
 *	It returns 0 (the same cluster), 1 (another), -1 (a URL that does
 *	not parse, or TLS files that will not do: nothing changes).
 *
 *	cluster_suspend_held() says whether the cluster holds dest
 *	suspended, for a resume on a member that had not applied it yet:
 *	1 when this member knows it, else -2 and, once Redis answered
 *	(HEXISTS, sent ahead of the sync that will carry the resume),
 *	fn(arg, 1 or 0), or fn(arg, -1) when the connection goes first; -1
 *	at once when there is no connection to ask on.
 */

#include "cluster/cluster_impl.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include "core/core.h"
#include "tls/tls.h"
#include "util/util.h"

void cluster_log(struct cluster *c, int warning, const char *fmt, ...)
{
    char line[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (c->cb.log)
        c->cb.log(c->cb.ctx, warning, line);
}

void cluster_caps(struct cluster *c)
{
    if (c->cb.caps)
        c->cb.caps(c->cb.ctx);
}

void cluster_go_alone(struct cluster *c, const char *why)
{
    if (c->state == CL_ALONE)
        return;
    c->state = CL_ALONE;
    c->alone_members = c->members;
    cluster_alone_begin(c);
    cluster_log(c, 1,
                "cluster %s: Redis at %s unavailable (%s): deciding alone "
                "with 1/%d of each destination's limit",
                c->name, c->url_shown, why, c->members < 1 ? 1 : c->members);
    cluster_caps(c);
}

void cluster_go_joined(struct cluster *c)
{
    if (c->state == CL_JOINED)
        return;
    if (c->state == CL_ALONE && c->ever_joined)
        c->probation_end = util_clock_mono_ms() + c->lease_ms;
    c->state = CL_JOINED;
    cluster_log(c, 0, "cluster %s: %s at %s as %s, %d live members", c->name,
                c->ever_joined ? "rejoined" : "joined", c->url_shown, c->member,
                c->members);
    c->ever_joined = 1;
}

static void schedule(struct event *ev, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000) * 1000};

    evtimer_add(ev, &tv);
}

/* Forget the connection; the replies it cancels are not ours now. */
static void conn_close(struct cluster *c)
{
    struct cluster_conn *cn = c->conn;

    c->seq = 0;
    c->conn = NULL;
    if (c->leave == CLUSTER_LEAVING)
        c->leave = CLUSTER_LEFT; /* no reply: the others let it expire */
    cluster_susp_unsent(c);
    cluster_conn_free(cn);
}

/* Drop the connection (a timeout, a bad reply); connect again later. */
void cluster_drop(struct cluster *c)
{
    conn_close(c);
    schedule(c->retry_ev, CLUSTER_RECONNECT_MS);
}

/* Refused, closed, TLS or AUTH failed, a reply that is not RESP. */
static void on_lost(void *ctx, const char *why)
{
    struct cluster *c = ctx;

    conn_close(c);
    cluster_go_alone(c, why);
    schedule(c->retry_ev, CLUSTER_RECONNECT_MS);
}

static void cluster_connect(struct cluster *c)
{
    char why[300];

    c->conn = cluster_conn_open(c->base, &c->url, c->tls, c->servername,
                                on_lost, c, why, sizeof(why));
    if (c->conn == NULL) {
        cluster_go_alone(c, why);
        schedule(c->retry_ev, CLUSTER_RECONNECT_MS);
    }
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;

    (void)fd;
    (void)what;
    if (c->leave != CLUSTER_STAYING)
        return;
    cluster_connect(c);
    c->pull = 1;
    cluster_poke(c);
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;
    char why[80];

    (void)fd;
    (void)what;
    snprintf(why, sizeof(why), "no reply within %lld ms",
             (long long)c->timeout_ms);
    cluster_go_alone(c, why);
    cluster_drop(c);
}

/* A round with no Redis: the rates' tokens from this member's share. */
static void alone_round(struct cluster *c)
{
    struct cluster_lease_req *reqs;
    int64_t wait;

    if (c->cb.demand)
        c->cb.demand(c->cb.ctx);
    wait = cluster_leases_alone(c->leases, util_clock_mono_ms(), c->members);
    free((cluster_leases_round(c->leases, &reqs), reqs));
    if (wait >= 0)
        cluster_rate_wait(c, wait);
    cluster_caps(c);
}

static void wait_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    cluster_poke(arg);
}

void cluster_rate_wait(struct cluster *c, int64_t ms)
{
    struct timeval tv;

    if (evtimer_pending(c->wait_ev, &tv))
        return; /* one is coming */
    schedule(c->wait_ev, ms < 1 ? 1 : ms);
}

static void sync_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;

    (void)fd;
    (void)what;
    if (c->seq != 0) {
        c->dirty = 1; /* after the one in flight */
        return;
    }
    if (c->leave == CLUSTER_LEFT)
        return;
    if (c->state == CL_ALONE)
        alone_round(c);
    if (c->conn == NULL)
        return;
    cluster_sync_send(c);
    if (c->seq != 0)
        schedule(c->timeout_ev, c->timeout_ms);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;

    (void)fd;
    (void)what;
    c->pull = 1;
    if (c->state == CL_ALONE)
        cluster_caps(c); /* the grace may have ended */
    sync_cb(-1, 0, c);
}

/*
 * A clean stop: one last sync that asks for nothing and takes the member
 * out (decision 136), after the one in flight, if any.
 */
int cluster_leave(struct cluster *c)
{
    if (c == NULL)
        return 0;
    if (c->leave == CLUSTER_STAYING) {
        if (c->state != CL_JOINED || c->conn == NULL) {
            c->leave = CLUSTER_LEFT; /* alone: nothing to give back now */
            return 0;
        }
        c->leave = CLUSTER_LEAVING;
        evtimer_del(c->tick_ev);
        evtimer_del(c->wait_ev);
        if (c->seq != 0)
            c->dirty = 1;
        else
            sync_cb(-1, 0, c);
    }
    return c->leave == CLUSTER_LEAVING;
}

void cluster_poke(struct cluster *c)
{
    if (!evtimer_pending(c->sync_ev, NULL))
        schedule(c->sync_ev, 0);
}

static char *tag_of(const struct cluster_config *cfg)
{
    size_t len = strlen(cfg->prefix) + strlen(cfg->name) + 4;
    char *tag = xmalloc(len);

    /* the braces: a hash tag, every key in one slot of a Redis Cluster */
    snprintf(tag, len, "%s{%s}:", cfg->prefix, cfg->name);
    return tag;
}

/* The timers that follow cluster_lease_time: the tick every third. */
static void tick_arm(struct cluster *c)
{
    struct timeval tick = {(time_t)(c->lease_ms / 3 / 1000),
                           (suseconds_t)(c->lease_ms / 3 % 1000) * 1000};

    event_add(c->tick_ev, &tick);
}

/* rediss://'s client context and the name its certificate must have,
 * for the connections from now on (each holds its own reference). */
static int tls_set(struct cluster *c, const struct cluster_config *cfg,
                   char *why, size_t whylen)
{
    struct tls_context *tls = cluster_conn_tls(cfg, why, whylen);

    if (tls == NULL && why[0] != '\0')
        return -1;
    if (c->tls != NULL)
        tls_context_free(c->tls);
    c->tls = tls;
    free(c->servername);
    c->servername = xstrdup(cfg->tls_servername ? cfg->tls_servername : "");
    return 0;
}

/*
 * A reload: lease time and timeout apply from the next sync; another
 * URL, name or prefix is another cluster, so the member leaves the one
 * it was in (its leases there expire) and joins the new one as after a
 * fall-back: alone with its share until the first reply, then for a
 * lease time no more than its share (Redis's leases are not its own).
 */
int cluster_reconfigure(struct cluster *c, const struct cluster_config *cfg)
{
    struct cluster_url u;
    char why[300], *tag;

    if (cluster_url_parse(cfg->url, &u, why, sizeof(why)) < 0)
        return -1;
    if (tls_set(c, cfg, why, sizeof(why)) < 0) {
        cluster_log(c, 1, "cluster %s: %s: TLS unchanged", c->name, why);
        return -1;
    }
    c->lease_ms = cfg->lease_ms > 0 ? cfg->lease_ms : 3000;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 500;
    c->alone_ms = cfg->alone_ms >= 0 ? cfg->alone_ms : 60000;
    tick_arm(c);
    tag = tag_of(cfg);
    if (strcmp(cfg->url, c->url_text) == 0 && strcmp(tag, c->tag) == 0) {
        free(tag);
        return 0;
    }
    c->ok_sent_at = 0;   /* unknown there: 1 per destination until joined */
    c->recent_seen = -1; /* its records: from the first sync on */
    c->alone.known = 0;  /* already alone: go_alone() keeps the rest */
    cluster_go_alone(c, "the configuration names another cluster");
    conn_close(c);
    free(c->url_text);
    free(c->url_shown);
    free(c->name);
    free(c->tag);
    c->url = u;
    c->url_text = xstrdup(cfg->url);
    c->url_shown = cluster_url_shown(cfg->url);
    c->name = xstrdup(cfg->name);
    c->tag = tag;
    cluster_log(c, 0, "cluster %s: joining at %s", c->name, c->url_shown);
    evtimer_del(c->retry_ev);
    schedule(c->retry_ev, 0);
    return 1;
}

struct cluster *cluster_create(struct event_base *base,
                               const struct cluster_config *cfg,
                               const struct cluster_callbacks *cb)
{
    struct cluster *c = xcalloc(1, sizeof(*c));
    char why[300];

    if (cluster_url_parse(cfg->url, &c->url, why, sizeof(why)) < 0 ||
        tls_set(c, cfg, why, sizeof(why)) < 0) {
        free(c);
        return NULL;
    }
    c->base = base;
    c->url_text = xstrdup(cfg->url);
    c->url_shown = cluster_url_shown(cfg->url);
    c->name = xstrdup(cfg->name);
    c->member = xstrdup(cfg->member);
    c->tag = tag_of(cfg);
    c->lease_ms = cfg->lease_ms > 0 ? cfg->lease_ms : 3000;
    c->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 500;
    c->alone_ms = cfg->alone_ms >= 0 ? cfg->alone_ms : 60000;
    c->cb = *cb;
    c->members = 1;
    c->recent_seen = -1;
    c->leases = cluster_leases_create();
    c->sync_ev = evtimer_new(base, sync_cb, c);
    c->timeout_ev = evtimer_new(base, timeout_cb, c);
    c->retry_ev = evtimer_new(base, retry_cb, c);
    c->tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, c);
    c->wait_ev = evtimer_new(base, wait_cb, c);
    tick_arm(c);
    c->pull = 1;
    cluster_connect(c);
    cluster_poke(c);
    return c;
}

void cluster_free(struct cluster *c)
{
    if (c == NULL)
        return;
    c->cb.log = NULL;
    c->cb.caps = NULL;
    conn_close(c);
    if (c->tls != NULL)
        tls_context_free(c->tls);
    free(c->servername);
    event_free(c->sync_ev);
    event_free(c->timeout_ev);
    event_free(c->retry_ev);
    event_free(c->tick_ev);
    event_free(c->wait_ev);
    if (c->deadline_ev != NULL)
        event_free(c->deadline_ev);
    cluster_leases_free(c->leases);
    cluster_shared_clear(&c->susp);
    cluster_shared_clear(&c->dead);
    free(c->reqs);
    free(c->facts);
    free(c->url_text);
    free(c->url_shown);
    free(c->name);
    free(c->member);
    free(c->tag);
    free(c);
}

/*
 * Rejoining, and for a lease time after, ask no more than the share:
 * Redis may have lost its leases (a restart), and the other members'
 * deliveries in flight, each within its share, hold no lease until they
 * sync again.
 */
void cluster_demand(struct cluster *c, const char *name, int limit, int want,
                    int busy)
{
    if (c->state == CL_ALONE || c->probation_end > util_clock_mono_ms()) {
        int members =
            c->members > c->alone_members ? c->members : c->alone_members;
        int share = cluster_share(limit, members);

        if (want > share)
            want = share;
    }
    cluster_leases_demand(c->leases, name, limit, want, busy);
}

/* Alone, a queue's cap is bounded in time (alone.c, decision 120). */
int cluster_cap(const struct cluster *c, const char *name, int limit)
{
    int cap = cluster_leases_cap(c->leases, name, limit, c->state != CL_ALONE,
                                 c->members);

    if (c->state != CL_ALONE || cap <= 0)
        return cap;
    return cluster_alone_cap(&c->alone, util_clock_mono_ms(), cap,
                             cluster_leases_cap(c->leases, name, limit, 1, 1));
}

void cluster_rate(struct cluster *c, const char *name, int kind, int count,
                  int64_t period_ms, int want)
{
    cluster_leases_rate(c->leases, name, kind, count, period_ms, want);
}

int cluster_tokens(const struct cluster *c, const char *name, int kind)
{
    return cluster_leases_tokens(c->leases, name, kind);
}

void cluster_spend(struct cluster *c, const char *name, int kind)
{
    cluster_leases_spend(c->leases, name, kind);
}

void cluster_suspend(struct cluster *c, const char *dest, int64_t until)
{
    cluster_shared_change(&c->susp, dest, until, NULL);
    cluster_poke(c);
}

struct held_ask {
    cluster_held_fn *fn;
    void *arg;
};

static void on_held(void *arg, const redisReply *r)
{
    struct held_ask *a = arg;

    a->fn(a->arg, r == NULL                        ? -1
                  : r->type != REDIS_REPLY_INTEGER ? -1
                                                   : r->integer == 1);
    free(a);
}

/*
 * Does the cluster hold dest suspended? Known here (a pull, or a change
 * made here): 1 at once. Else Redis is asked, ahead of any sync still to
 * be sent (a resume being made here goes with the next one): -2, and
 * fn(arg, 1, 0, or -1 for no answer) later, whatever happens. -1: no
 * connection to ask on.
 */
int cluster_suspend_held(struct cluster *c, const char *dest,
                         cluster_held_fn *fn, void *arg)
{
    const struct cluster_susp *s = cluster_shared_find(&c->susp, dest);
    struct held_ask *a;
    char key[600];
    const char *argv[3] = {"HEXISTS", key, dest};
    size_t len[3];

    if (s != NULL && s->until >= 0)
        return 1;
    if (c->conn == NULL)
        return -1;
    snprintf(key, sizeof(key), "%ssuspend", c->tag);
    len[0] = 7;
    len[1] = strlen(key);
    len[2] = strlen(dest);
    a = xcalloc(1, sizeof(*a));
    a->fn = fn;
    a->arg = arg;
    cluster_conn_send(c->conn, 3, argv, len, on_held, a);
    return -2;
}

void cluster_dead(struct cluster *c, const char *name, int64_t until,
                  const char *why)
{
    cluster_shared_change(&c->dead, name, until, why);
    cluster_poke(c);
}

int64_t cluster_dead_until(const struct cluster *c, const char *name,
                           const char **why)
{
    const struct cluster_susp *d = cluster_shared_find(&c->dead, name);

    if (d == NULL || d->until <= 0)
        return -1;
    *why = d->why;
    return d->until;
}

/* A sync that failed: its suspensions and deaths go out with the next,
 * unless a newer change to the same destination is waiting. */
void cluster_susp_unsent(struct cluster *c)
{
    cluster_shared_unsent(&c->susp);
    cluster_shared_unsent(&c->dead);
}

int cluster_joined(const struct cluster *c)
{
    return c->state == CL_JOINED;
}

int cluster_members(const struct cluster *c)
{
    return c->members;
}

void cluster_fact_publish(struct cluster *c, const char *host, int kind,
                          int64_t retry_wall)
{
    struct cluster_fact_out *f;

    for (size_t i = 0; i < c->nfacts; i++)
        if (c->facts[i].kind == kind && strcmp(c->facts[i].host, host) == 0) {
            c->facts[i].retry_wall = retry_wall;
            return;
        }
    if (c->nfacts == c->capfacts) {
        c->capfacts = c->capfacts ? 2 * c->capfacts : 8;
        c->facts = xrealloc(c->facts, c->capfacts * sizeof(*c->facts));
    }
    f = &c->facts[c->nfacts++];
    snprintf(f->host, sizeof(f->host), "%s", host);
    f->kind = kind;
    f->retry_wall = retry_wall;
    cluster_poke(c);
}
