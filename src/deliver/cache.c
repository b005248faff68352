/*
 * NAME
 *	cache 3 - idle SMTP and LMTP connections kept for the next delivery
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_cache *deliver_cache_create(struct event_base *base,
 *			const struct deliver_cache_params *p)
 *	void	deliver_cache_free(struct deliver_cache *c)
 *	size_t	deliver_cache_count(const struct deliver_cache *c)
 *	size_t	deliver_cache_idle(const struct deliver_cache *c,
 *			const char *cache_key)
 *	void	deliver_cache_trim(struct deliver_cache *c,
 *			const char *cache_key, size_t keep)
 *	void	deliver_cache_params_set(struct deliver_cache *c,
 *			const struct deliver_cache_params *p)
 *	void	deliver_cache_agent_log(struct deliver_cache *c,
 *			deliver_agent_log_fn *fn, void *ctx)
 *	size_t	deliver_cache_agents(const struct deliver_cache *c)
 *	void	deliver_cache_spawner_set(struct deliver_cache *c,
 *			struct deliver_spawner *sp)
 *	size_t	deliver_cache_agent_stats(const struct deliver_cache *c,
 *			struct deliver_agent_stats *out, size_t max)
 *
 *	#include "deliver/agent_impl.h"
 *
 *	struct agent_pool *deliver_cache_agent_pool(struct deliver_cache *c)
 * DESCRIPTION
 *	See deliver.h for the public face and deliver_impl.h for what the
 *	client uses. Idle connections sit in one list, most recently cached
 *	first, so that a lookup finds the freshest connection for a key and
 *	the oldest ones are the ones left to time out. The list is short (at
 *	most one idle connection per delivery slot that just finished), so a
 *	linear search costs less than keeping an index.
 *
 *	Keys held by deliveries that queue behind a connection
 *	(deliver_cache_hold()) are in a list too: one per connection such a
 *	scheduler keeps open, each with its deliveries in line, first come
 *	first served.
 *
 *	The cache also holds the pool of external agents (pool.c), made
 *	when a delivery first needs it or deliver_cache_agent_log() names
 *	where its log lines go, freed with the cache: the idle agents are
 *	to their deliveries what idle connections are to SMTP's.
 *	deliver_cache_agents() counts its agents, busy or idle.
 *	deliver_cache_spawner_set() gives the pool the spawner that starts
 *	its agents (decision 134); the pool owns it from then on.
 */

#include "deliver/deliver_impl.h"

#include "deliver/agent_impl.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>

struct cached {
    TAILQ_ENTRY(cached) link;
    struct deliver_cache *cache;
    char *key;
    char *endpoint; /* its second key, or NULL */
    struct deliver_conn conn;
    struct event *idle;
};

/* A key some delivery holds, with the deliveries queued behind it. */
struct deliver_hold {
    char *key;
    TAILQ_HEAD(, deliver_waiter) waiters;
    LIST_ENTRY(deliver_hold) link;
};

struct deliver_cache {
    struct event_base *base;
    struct deliver_cache_params params;
    TAILQ_HEAD(, cached) list;
    LIST_HEAD(, deliver_hold) holds;
    size_t count;
    uint64_t opened;           /* connections established, for the metrics */
    struct agent_pool *agents; /* external agents (pool.c), when used */
};

void deliver_cache_params_set(struct deliver_cache *c,
                              const struct deliver_cache_params *p)
{
    c->params = *p;
}

struct deliver_cache *deliver_cache_create(struct event_base *base,
                                           const struct deliver_cache_params *p)
{
    struct deliver_cache *c = xcalloc(1, sizeof(*c));

    c->base = base;
    c->params = *p;
    TAILQ_INIT(&c->list);
    LIST_INIT(&c->holds);
    return c;
}

/* Unlink and free an entry; quit says whether to say goodbye first. */
static void drop(struct cached *e, int quit)
{
    struct deliver_cache *c = e->cache;
    evutil_socket_t fd;

    TAILQ_REMOVE(&c->list, e, link);
    c->count--;
    /*
     * Say QUIT (best effort, never blocking: the socket is idle) and shut
     * the socket down now: libevent closes it only when the loop next
     * runs, and the server should not have to wait for that.
     */
    if (e->conn.tls.used) {
        /* QUIT in TLS, then the close_notify (tls_session_free()) */
        if (quit)
            evbuffer_add(bufferevent_get_output(e->conn.bev), "QUIT\r\n", 6);
        tls_session_free(e->conn.bev);
        event_free(e->idle);
        free(e->key);
        free(e->endpoint);
        free(e);
        return;
    }
    fd = bufferevent_getfd(e->conn.bev);
    if (fd >= 0) {
        if (quit)
            (void)send(fd, "QUIT\r\n", 6, MSG_NOSIGNAL | MSG_DONTWAIT);
        shutdown(fd, SHUT_RDWR);
    }
    bufferevent_free(e->conn.bev);
    event_free(e->idle);
    free(e->key);
    free(e->endpoint);
    free(e);
}

void deliver_cache_free(struct deliver_cache *c)
{
    if (c == NULL)
        return;
    while (!TAILQ_EMPTY(&c->list))
        drop(TAILQ_FIRST(&c->list), 1);
    if (!LIST_EMPTY(&c->holds))
        util_panic("deliver_cache_free: deliveries still hold %s",
                   LIST_FIRST(&c->holds)->key);
    agent_pool_free(c->agents);
    free(c);
}

/* The external agents' pool, made when first needed (agent.c). */
struct agent_pool *deliver_cache_agent_pool(struct deliver_cache *c)
{
    if (c->agents == NULL)
        c->agents = agent_pool_create(c->base);
    return c->agents;
}

void deliver_cache_agent_log(struct deliver_cache *c, deliver_agent_log_fn *fn,
                             void *ctx)
{
    agent_pool_log_set(deliver_cache_agent_pool(c), fn, ctx);
}

void deliver_cache_spawner_set(struct deliver_cache *c,
                               struct deliver_spawner *sp)
{
    agent_pool_spawner_set(deliver_cache_agent_pool(c), sp);
}

size_t deliver_cache_agent_stats(const struct deliver_cache *c,
                                 struct deliver_agent_stats *out, size_t max)
{
    return c->agents ? agent_pool_stats(c->agents, out, max) : 0;
}

size_t deliver_cache_agents(const struct deliver_cache *c)
{
    return c->agents ? agent_pool_count(c->agents) : 0;
}

/* The cache's keys are the request's, then "\n" and the session's. */
static int key_is(const struct cached *e, const char *cache_key, size_t len)
{
    return strncmp(e->key, cache_key, len) == 0 && e->key[len] == '\n';
}

void deliver_cache_drop(struct deliver_cache *c, const char *cache_key)
{
    deliver_cache_trim(c, cache_key, 0);
}

/* The list is newest first: the first keep of the key stay. */
void deliver_cache_trim(struct deliver_cache *c, const char *cache_key,
                        size_t keep)
{
    size_t len = strlen(cache_key), seen = 0;
    struct cached *e, *next;

    for (e = TAILQ_FIRST(&c->list); e != NULL; e = next) {
        next = TAILQ_NEXT(e, link);
        if (key_is(e, cache_key, len) && ++seen > keep)
            drop(e, 1);
    }
    if (c->agents != NULL)
        agent_pool_drop(c->agents, cache_key, keep);
}

size_t deliver_cache_idle(const struct deliver_cache *c, const char *cache_key)
{
    size_t len, n = 0;
    const struct cached *e;

    if (c == NULL || cache_key == NULL)
        return 0;
    len = strlen(cache_key);
    TAILQ_FOREACH(e, &c->list, link)
        n += key_is(e, cache_key, len);
    return n;
}

size_t deliver_cache_count(const struct deliver_cache *c)
{
    return c ? c->count : 0;
}

const struct deliver_cache_params *
deliver_cache_limits(const struct deliver_cache *c,
                     const struct deliver_request *req)
{
    return req->cache_limits.idle_ms > 0 ? &req->cache_limits : &c->params;
}

int deliver_cache_may_keep(const struct deliver_cache_params *p,
                           int64_t born_us, int uses)
{
    double age;

    if (p->idle_ms <= 0)
        return 0;
    if (p->reuse_count_limit > 0 && uses > p->reuse_count_limit)
        return 0;
    age = (double)(util_clock_mono_us() - born_us) / 1000.0;
    return age < (double)p->reuse_ms;
}

/* An idle connection that speaks or closes is of no further use. */
static void idle_read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    drop(arg, 0);
}

static void idle_event_cb(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    (void)what;
    drop(arg, 0);
}

static void idle_timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    drop(arg, 1);
}

void deliver_cache_put(struct deliver_cache *c,
                       const struct deliver_cache_params *p, const char *key,
                       const char *endpoint, const struct deliver_conn *conn)
{
    struct cached *e = xcalloc(1, sizeof(*e));
    struct timeval tv = {p->idle_ms / 1000, (p->idle_ms % 1000) * 1000};

    e->cache = c;
    e->key = xstrdup(key);
    e->endpoint = endpoint ? xstrdup(endpoint) : NULL;
    e->conn = *conn;
    e->idle = evtimer_new(c->base, idle_timer_cb, e);
    bufferevent_setcb(e->conn.bev, idle_read_cb, NULL, idle_event_cb, e);
    bufferevent_set_timeouts(e->conn.bev, NULL, NULL);
    bufferevent_enable(e->conn.bev, EV_READ);
    evtimer_add(e->idle, &tv);
    TAILQ_INSERT_HEAD(&c->list, e, link);
    c->count++;
    /* Anything already read arrived after the last reply: drop it now. */
    if (evbuffer_get_length(bufferevent_get_input(e->conn.bev)) > 0)
        drop(e, 0);
}

int deliver_cache_take(struct deliver_cache *c, const char *key,
                       struct deliver_conn *out)
{
    struct cached *e;

    if (c == NULL || key == NULL)
        return 0;
    TAILQ_FOREACH(e, &c->list, link) {
        if (strcmp(e->key, key) != 0 &&
            (e->endpoint == NULL || strcmp(e->endpoint, key) != 0))
            continue;
        *out = e->conn;
        TAILQ_REMOVE(&c->list, e, link);
        c->count--;
        bufferevent_setcb(out->bev, NULL, NULL, NULL, NULL);
        event_free(e->idle);
        free(e->key);
        free(e->endpoint);
        free(e);
        return 1;
    }
    return 0;
}

void deliver_cache_opened_add(struct deliver_cache *c)
{
    if (c != NULL)
        c->opened++;
}

uint64_t deliver_cache_opened(const struct deliver_cache *c)
{
    return c ? c->opened : 0;
}

static struct deliver_hold *hold_find(struct deliver_cache *c, const char *key)
{
    struct deliver_hold *h;

    LIST_FOREACH(h, &c->holds, link)
        if (strcmp(h->key, key) == 0)
            return h;
    return NULL;
}

static void waiter_cb(evutil_socket_t fd, short what, void *arg)
{
    struct deliver_waiter *w = arg;

    (void)fd;
    (void)what;
    event_free(w->ev);
    w->ev = NULL;
    w->wake(w->arg);
}

int deliver_cache_hold(struct deliver_cache *c, const char *key,
                       struct deliver_waiter *w)
{
    struct deliver_hold *h = hold_find(c, key);

    if (h == NULL) {
        h = xcalloc(1, sizeof(*h));
        h->key = xstrdup(key);
        TAILQ_INIT(&h->waiters);
        LIST_INSERT_HEAD(&c->holds, h, link);
        return 1;
    }
    w->hold = h;
    w->ev = event_new(c->base, -1, 0, waiter_cb, w);
    TAILQ_INSERT_TAIL(&h->waiters, w, link);
    return 0;
}

void deliver_cache_release(struct deliver_cache *c, const char *key)
{
    struct deliver_hold *h = hold_find(c, key);
    struct deliver_waiter *w;

    if (h == NULL)
        util_panic("deliver_cache_release: %s is not held", key);
    if ((w = TAILQ_FIRST(&h->waiters)) != NULL) {
        /* the key passes to the first in line, from the loop */
        TAILQ_REMOVE(&h->waiters, w, link);
        w->hold = NULL;
        event_active(w->ev, 0, 0);
        return;
    }
    LIST_REMOVE(h, link);
    free(h->key);
    free(h);
}

void deliver_cache_unqueue(struct deliver_cache *c, struct deliver_waiter *w)
{
    (void)c;
    if (w->hold != NULL) {
        TAILQ_REMOVE(&w->hold->waiters, w, link);
        w->hold = NULL;
    }
    if (w->ev != NULL) {
        event_free(w->ev);
        w->ev = NULL;
    }
}
