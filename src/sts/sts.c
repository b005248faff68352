/*
 * NAME
 *	sts 3 - the MTA-STS layer: finding a domain's policy
 * SYNOPSIS
 *	#include "sts/sts.h"
 *
 *	struct sts *sts_create(const struct sts_config *cf, char *why,
 *			size_t whylen)
 *	void	sts_free(struct sts *s)
 *	int	sts_policy_get(struct sts *s, const char *domain,
 *			sts_done_fn *done, void *ctx)
 *	size_t	sts_refresh_due(struct sts *s)
 *	void	sts_stats(const struct sts *s, struct sts_stats *st)
 * DESCRIPTION
 *	A lookup is an operation on a domain's cache entry: the TXT lookup,
 *	then (when the cache cannot answer) the fetch, then the answer to
 *	every caller that asked meanwhile. An entry has at most one
 *	operation; a caller who asks while one is under way waits for the
 *	same answer, so a burst of deliveries to one domain costs one TXT
 *	lookup and one fetch.
 *
 *	Answers are delivered from an event of their own (made active when
 *	the answer is known), never from the call that asked, nor from
 *	inside the caller's TXT function or curl: a caller's done may ask
 *	again at once. An operation is detached from its entry before its
 *	callers hear the answer, so that such a new question starts afresh.
 *
 *	The TXT lookup's context is a small request that outlives its
 *	operation: if the operation ends first (sts_free()), the request
 *	forgets it and the resolver's late answer frees only the request.
 *
 *	The rules themselves (RFC 8461 sections 3.1, 3.3 and 5.1) are in
 *	sts.h; op_decide() and fetch_done() are where they are applied.
 */

#include "sts/sts_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#define STS_DEFAULT_TIMEOUT_MS 10000
#define STS_DEFAULT_MAX_BYTES  65536
#define STS_DEFAULT_REFRESH    86400
#define STS_DEFAULT_RETRY      300
#define STS_WHY_MAX            640 /* a failure's reason, at most */

struct waiter {
    sts_done_fn *done;
    void *ctx;
    struct waiter *next;
};

struct txt_req {
    struct sts_op *op; /* NULL once the operation has ended */
};

/* An address lookup of the policy host (cf->addr), like txt_req. */
struct addr_req {
    struct sts_op *op;
};

struct sts_op {
    struct sts *s;
    struct sts_entry *e;
    struct waiter *waiters, **tail;
    int refresh;             /* proactive: fetch whatever the id */
    struct txt_req *txt;     /* the TXT lookup under way, or NULL */
    struct addr_req *addr;   /* the address lookup under way, or NULL */
    char id[STS_ID_MAX + 1]; /* the TXT record's, while fetching */
    struct event *ev;        /* delivers the answer */
    struct sts_policy answer;
    int has_answer; /* answer holds a policy */
    int answered;   /* the answer is known, its event active */
    char why[STS_WHY_MAX + 64];
    struct sts_op *next, **prevp; /* in s->ops */
};

struct sts {
    struct sts_config cf;
    struct sts_fetcher *fetcher;
    struct sts_cache cache;
    struct sts_op *ops;
    struct event *refresh;
    struct sts_stats stats;
    int closing; /* in sts_free(): no new questions */
};

static int64_t sts_now(const struct sts *s)
{
    return s->cf.clock ? s->cf.clock(s->cf.clock_ctx) : (int64_t)time(NULL);
}

static void sts_log(const struct sts *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void sts_log(const struct sts *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (s->cf.log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    s->cf.log(s->cf.log_ctx, line);
}

static int policy_valid(const struct sts_policy *p, int64_t now)
{
    return p->fetched != 0 && now < p->fetched + p->max_age;
}

static void op_free(struct sts_op *op)
{
    struct waiter *w;

    if (op->txt)
        op->txt->op = NULL;
    if (op->addr)
        op->addr->op = NULL;
    while ((w = op->waiters) != NULL) {
        op->waiters = w->next;
        free(w);
    }
    *op->prevp = op->next;
    if (op->next)
        op->next->prevp = op->prevp;
    event_free(op->ev);
    sts_policy_clear(&op->answer);
    free(op);
}

/* An entry with nothing to remember goes. */
static void entry_tidy(struct sts *s, struct sts_entry *e)
{
    if (e->op == NULL && e->policy.fetched == 0 && e->failed_id[0] == 0)
        sts_cache_remove(&s->cache, e);
}

/* The answer's event: tell every caller, then end the operation. */
static void op_deliver(evutil_socket_t fd, short what, void *arg)
{
    struct sts_op *op = arg;
    const struct sts_policy *p = op->has_answer ? &op->answer : NULL;
    const char *why = op->why[0] ? op->why : NULL;
    struct waiter *w;

    (void)fd;
    (void)what;
    op->e->op = NULL;
    entry_tidy(op->s, op->e);
    op->e = NULL;
    while ((w = op->waiters) != NULL) {
        op->waiters = w->next;
        w->done(w->ctx, p, why);
        free(w);
    }
    op_free(op);
}

/* The answer is known: p (copied; NULL: none), and why (fmt NULL: none). */
static void op_finish(struct sts_op *op, const struct sts_policy *p,
                      const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void op_finish(struct sts_op *op, const struct sts_policy *p,
                      const char *fmt, ...)
{
    va_list ap;

    if (p != NULL) {
        sts_policy_copy(&op->answer, p);
        op->has_answer = 1;
    }
    op->why[0] = 0;
    if (fmt != NULL) {
        va_start(ap, fmt);
        vsnprintf(op->why, sizeof(op->why), fmt, ap);
        va_end(ap);
    }
    op->answered = 1;
    event_active(op->ev, EV_TIMEOUT, 1);
}

static void fetch_done(void *ctx, int status, const char *body, size_t len,
                       const char *why)
{
    struct sts_op *op = ctx;
    struct sts *s = op->s;
    struct sts_entry *e = op->e;
    int64_t now = sts_now(s);
    struct sts_policy p;
    char reason[200], detail[STS_WHY_MAX];

    if (status == 0 &&
        sts_policy_parse(body, len, &p, reason, sizeof(reason)) == 0) {
        s->stats.fetches_ok++;
        p.fetched = now;
        snprintf(p.id, sizeof(p.id), "%s", op->id);
        sts_cache_set(&s->cache, e, &p);
        e->failed_id[0] = 0;
        op_finish(op, &e->policy, NULL);
        return;
    }
    if (status == 0)
        snprintf(detail, sizeof(detail),
                 "https://mta-sts.%s/.well-known/mta-sts.txt: invalid "
                 "policy: %s",
                 e->domain, reason);
    else
        snprintf(detail, sizeof(detail), "%s", why);
    s->stats.fetches_failed++;
    snprintf(e->failed_id, sizeof(e->failed_id), "%s", op->id);
    e->failed_at = now;
    snprintf(e->failed_why, sizeof(e->failed_why), "%s", detail);
    if (!policy_valid(&e->policy, now)) {
        sts_cache_drop(&s->cache, e);
        op_finish(op, NULL, "no MTA-STS policy: %s", detail);
        return;
    }
    if (op->refresh && e->policy.mode != STS_NONE)
        sts_log(s,
                "MTA-STS: policy refresh for %s failed, cached policy "
                "kept: %s",
                e->domain, detail);
    op_finish(op, &e->policy, "cached MTA-STS policy used: %s", detail);
}

/* The fetch proper, to addrs (NULL: libcurl resolves). */
static void op_transfer(struct sts_op *op, const char *addrs)
{
    char why[STS_WHY_MAX];

    if (sts_fetch_start(op->s->fetcher, op->e->domain, addrs, fetch_done, op,
                        why, sizeof(why)) < 0)
        fetch_done(op, -1, NULL, 0, why);
}

static void addr_done(void *lookup_ctx, const char *addrs, const char *why)
{
    struct addr_req *req = lookup_ctx;
    struct sts_op *op = req->op;
    char reason[STS_WHY_MAX];

    free(req);
    if (op == NULL)
        return;
    op->addr = NULL;
    if (addrs == NULL || *addrs == 0) {
        snprintf(reason, sizeof(reason), "mta-sts.%s: %s", op->e->domain,
                 why && *why ? why : "no address");
        fetch_done(op, -1, NULL, 0, reason);
        return;
    }
    op_transfer(op, addrs);
}

static void op_fetch(struct sts_op *op, const char *id)
{
    char host[STS_NAME_MAX + 16];
    struct addr_req *req;

    snprintf(op->id, sizeof(op->id), "%s", id);
    op->s->stats.fetches++;
    if (op->s->cf.addr == NULL || op->s->cf.host_override != NULL) {
        op_transfer(op, NULL);
        return;
    }
    snprintf(host, sizeof(host), "mta-sts.%s", op->e->domain);
    req = xcalloc(1, sizeof(*req));
    req->op = op;
    op->addr = req;
    if (op->s->cf.addr(op->s->cf.addr_ctx, host, addr_done, req) < 0) {
        free(req);
        op->addr = NULL;
        fetch_done(op, -1, NULL, 0, "MTA-STS: cannot look up the policy host");
    }
}

/* The TXT record is known (id, or NULL: none that counts). */
static void op_decide(struct sts_op *op, const char *id, int status)
{
    struct sts *s = op->s;
    struct sts_entry *e = op->e;
    int64_t now = sts_now(s);
    int valid = policy_valid(&e->policy, now);

    if (!valid)
        sts_cache_drop(&s->cache, e); /* expired: never used again */
    if (id == NULL && valid) {
        s->stats.cache_hits++;
        op_finish(op, &e->policy, NULL);
    } else if (id == NULL) {
        op_finish(op, NULL, "no MTA-STS policy: %s _mta-sts.%s",
                  status == STS_TXT_TEMPFAIL ? "no answer for TXT"
                                             : "no valid TXT record at",
                  e->domain);
    } else if (valid && !op->refresh && strcmp(e->policy.id, id) == 0) {
        s->stats.cache_hits++;
        op_finish(op, &e->policy, NULL);
    } else if (strcmp(e->failed_id, id) == 0 &&
               now < e->failed_at + s->cf.retry_delay) {
        op_finish(op, valid ? &e->policy : NULL, "%s: %s",
                  valid ? "cached MTA-STS policy used" : "no MTA-STS policy",
                  e->failed_why);
    } else {
        op_fetch(op, id);
    }
}

static void txt_done(void *lookup_ctx, int status, const char *const *txt,
                     size_t n)
{
    struct txt_req *req = lookup_ctx;
    struct sts_op *op = req->op;
    char id[STS_ID_MAX + 1];
    int have;

    free(req);
    if (op == NULL)
        return;
    op->txt = NULL;
    have = status == STS_TXT_OK && sts_txt_select(txt, n, id) == 0;
    op_decide(op, have ? id : NULL, status);
}

static struct sts_op *op_start(struct sts *s, struct sts_entry *e, int refresh)
{
    struct sts_op *op = xcalloc(1, sizeof(*op));
    char name[sizeof("_mta-sts.") + STS_NAME_MAX];

    op->s = s;
    op->e = e;
    op->refresh = refresh;
    op->tail = &op->waiters;
    op->ev = event_new(s->cf.base, -1, 0, op_deliver, op);
    op->next = s->ops;
    if (s->ops)
        s->ops->prevp = &op->next;
    op->prevp = &s->ops;
    s->ops = op;
    e->op = op;
    op->txt = xcalloc(1, sizeof(*op->txt));
    op->txt->op = op;
    snprintf(name, sizeof(name), "_mta-sts.%s", e->domain);
    if (s->cf.txt(s->cf.txt_ctx, name, txt_done, op->txt) < 0) {
        free(op->txt); /* the lookup never started: no answer will come */
        op->txt = NULL;
        op_decide(op, NULL, STS_TXT_TEMPFAIL);
    }
    return op;
}

int sts_policy_get(struct sts *s, const char *domain, sts_done_fn *done,
                   void *ctx)
{
    char name[STS_NAME_MAX + 1];
    struct sts_entry *e;
    struct waiter *w;

    if (s->closing || sts_name_norm(name, sizeof(name), domain) < 0)
        return -1;
    if ((e = sts_cache_find(&s->cache, name)) == NULL)
        e = sts_cache_add(&s->cache, name);
    w = xcalloc(1, sizeof(*w));
    w->done = done;
    w->ctx = ctx;
    if (e->op == NULL)
        op_start(s, e, 0);
    *e->op->tail = w;
    e->op->tail = &w->next;
    return 0;
}

static int64_t refresh_interval(const struct sts *s)
{
    return s->cf.refresh_interval > 0 ? s->cf.refresh_interval
                                      : STS_DEFAULT_REFRESH;
}

size_t sts_refresh_due(struct sts *s)
{
    int64_t now = sts_now(s), interval = refresh_interval(s);
    struct sts_entry *e, *next;
    size_t slot = 0, n = 0;

    for (e = sts_cache_next(&s->cache, &slot, NULL); e; e = next) {
        int64_t age = now - e->policy.fetched;

        next = sts_cache_next(&s->cache, &slot, e);
        if (e->op != NULL)
            continue;
        if (e->failed_id[0] && now >= e->failed_at + s->cf.retry_delay)
            e->failed_id[0] = 0;
        if (!policy_valid(&e->policy, now)) {
            sts_cache_drop(&s->cache, e);
            entry_tidy(s, e);
        } else if (age >= interval || age * 2 >= e->policy.max_age) {
            op_start(s, e, 1);
            n++;
        }
    }
    return n;
}

static void refresh_event(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sts_refresh_due(arg);
}

struct sts *sts_create(const struct sts_config *cf, char *why, size_t whylen)
{
    struct sts_fetch_config fc;
    struct sts *s;

    if (cf->base == NULL || cf->txt == NULL) {
        snprintf(why, whylen, "MTA-STS: no event loop or no TXT lookup");
        return NULL;
    }
    s = xcalloc(1, sizeof(*s));
    s->cf = *cf;
    if (s->cf.fetch_timeout_ms <= 0)
        s->cf.fetch_timeout_ms = STS_DEFAULT_TIMEOUT_MS;
    if (s->cf.max_policy_bytes == 0)
        s->cf.max_policy_bytes = STS_DEFAULT_MAX_BYTES;
    if (s->cf.retry_delay <= 0)
        s->cf.retry_delay = STS_DEFAULT_RETRY;
    fc = (struct sts_fetch_config){cf->base,
                                   cf->ca_file,
                                   s->cf.fetch_timeout_ms,
                                   s->cf.max_policy_bytes,
                                   cf->port,
                                   cf->host_override};
    s->cf.ca_file = NULL; /* the fetcher keeps its own copies */
    s->cf.host_override = NULL;
    sts_cache_init(&s->cache, cf->spool);
    if ((s->fetcher = sts_fetcher_create(&fc, why, whylen)) == NULL ||
        sts_cache_load(&s->cache, sts_now(s), cf->log, cf->log_ctx, why,
                       whylen) < 0) {
        sts_free(s);
        return NULL;
    }
    if (cf->refresh_interval >= 0) {
        struct timeval tick = {STS_REFRESH_TICK, 0};

        s->refresh = event_new(cf->base, -1, EV_PERSIST, refresh_event, s);
        event_add(s->refresh, &tick);
    }
    return s;
}

void sts_free(struct sts *s)
{
    if (s == NULL)
        return;
    /* No transfer may call back into what is being freed. */
    s->closing = 1;
    sts_fetcher_free(s->fetcher);
    while (s->ops) {
        struct sts_op *op = s->ops;

        if (!op->answered)
            snprintf(op->why, sizeof(op->why), "MTA-STS: shut down");
        event_del(op->ev);
        op_deliver(-1, 0, op);
    }
    if (s->refresh)
        event_free(s->refresh);
    sts_cache_clear(&s->cache);
    free(s);
}

void sts_stats(const struct sts *s, struct sts_stats *st)
{
    *st = s->stats;
    st->cached = (long)s->cache.policies;
}
