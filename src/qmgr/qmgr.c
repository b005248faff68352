/*
 * NAME
 *	qmgr 3 - the queue manager: spool to core/ to delivery agents and back
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	struct qmgr *qmgr_create(struct event_base *base,
 *			const struct conf *conf, struct spool *sp,
 *			const struct route_table *routes,
 *			struct dns_resolver *dns, qmgr_log_fn *log, void *ctx)
 *	void	qmgr_reload(struct qmgr *q, const struct conf *conf,
 *			const struct route_table *routes)
 *	void	qmgr_wake(struct qmgr *q)
 *	int	qmgr_idle(const struct qmgr *q)
 *	void	qmgr_stats(const struct qmgr *q, struct qmgr_stats *st)
 *	void	qmgr_drain(struct qmgr *q)
 *	long	qmgr_busy(const struct qmgr *q)
 *	void	qmgr_stop(struct qmgr *q)
 *	void	qmgr_free(struct qmgr *q)
 *
 *	double	qm_now_sec(void)
 *	core_time_t qm_now_ms(void)
 *	void	qm_log(struct qmgr *q, int level, const char *fmt, ...)
 * DESCRIPTION
 *	See qmgr.h for the contract, and qmgr_impl.h for the files that
 *	share the work. The life of a message in core:
 *
 *	load (message.c): read from the spool (envelope, recipients,
 *	body); each recipient not yet final is routed and added to its
 *	destination queue in core/ (dest.c); a recipient that cannot be
 *	routed is bounced, one whose queue is dead is deferred with the
 *	queue's reason.
 *
 *	deliver (deliver.c): core_select() hands out an entry; its
 *	destination is resolved (MX or host), the agent runs; each
 *	recipient's result goes to the spool (one change per delivery, in
 *	the group commit) and to the log (outcome.c); the hop status goes
 *	to core/.
 *
 *	finish (message.c): once core/ says every entry is done and every
 *	change of the message is committed, the message is removed (every
 *	recipient final), or deferred with a retry time, or expired (its
 *	deferred recipients bounced, then removed), with the notices its
 *	sender is owed (bounce.c). Only when that last write is committed
 *	does the message leave memory, so the feed (feed.c) can never load
 *	a message twice.
 *
 *	The spool calls back from its committer thread: those callbacks
 *	only post to the inbox, and everything else runs on the loop.
 *
 *	This file holds the object itself, its three events (the feed,
 *	core/'s next timer, the queue run every queue_run_delay), the
 *	settings read once per reload, the clocks and the log: qm_now_ms()
 *	is core/'s time, monotonic (a step of the wall clock moves no
 *	timer); qm_now_sec() is wall-clock seconds, for the delays logged
 *	against the spool's arrival times.
 */

#include "qmgr/qmgr_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Wall-clock seconds: log delays are measured from the spool's arrival. */
double qm_now_sec(void)
{
    return (double)util_clock_wall_us() / 1e6;
}

/* core/'s time: monotonic, so that a step of the wall clock moves no timer. */
core_time_t qm_now_ms(void)
{
    return (core_time_t)util_clock_mono_ms();
}

void qm_log(struct qmgr *q, int level, const char *fmt, ...)
{
    char line[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (q->log)
        q->log(q->log_ctx, level, "qmgr", line);
}

void qm_log_as(struct qmgr *q, const char *service, int level, const char *fmt,
               ...)
{
    char line[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (q->log)
        q->log(q->log_ctx, level, service, line);
}

static void core_log_cb(void *ctx, enum core_log_level level, const char *text)
{
    struct qmgr *q = ctx;

    if (level != CORE_LOG_DEBUG)
        qm_log(q, level == CORE_LOG_WARNING ? QMGR_LOG_WARNING : QMGR_LOG_INFO,
               "%s", text);
}

static void feed_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    q->feed_asked = 0;
    if (q->draining)
        return;
    q->feed_last_us = util_clock_mono_us();
    qm_feed(q);
    qm_dispatch(q);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    core_run_timers(q->core, qm_now_ms());
    qm_dispatch(q);
}

static void scan_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    qm_dest_sweep(q);
    qm_expire_sweep(q);
    qm_finch_gc(q);
    qm_feed_ask(q, 0);
}

/* The settings read once rather than per delivery: at start, on reload. */
static void settings_apply(struct qmgr *q)
{
    const struct conf *conf = q->conf;
    struct deliver_cache_params cp = {0};
    struct timeval scan;

    q->limit = conf_int(conf, NULL, CONF_qmgr_message_active_limit);
    core_recipient_limits_set(
        q->core, conf_int(conf, NULL, CONF_qmgr_message_recipient_limit),
        conf_int(conf, NULL, CONF_qmgr_message_recipient_minimum));
    q->feed_batch = q->limit / 20 > 0 ? q->limit / 20 : 1;
    q->scan_delay_ms = conf_time_ms(conf, NULL, CONF_queue_run_delay);
    qmgr_retry_params(conf, &q->retry);
    q->delay_warning = conf_time_ms(conf, NULL, CONF_delay_warning_time) * 1000;
    q->transport_retry_ms = conf_time_ms(conf, NULL, CONF_transport_retry_time);
    q->bounce_size_limit =
        (uint64_t)conf_int(conf, NULL, CONF_bounce_size_limit);
    snprintf(q->hostname, sizeof(q->hostname), "%s",
             conf_str(conf, NULL, CONF_myhostname));
    /* One cache for every transport, with the global limits. */
    cp.idle_ms =
        (int)conf_time_ms(conf, NULL, CONF_smtp_connection_cache_time_limit);
    cp.reuse_ms =
        (int)conf_time_ms(conf, NULL, CONF_smtp_connection_reuse_time_limit);
    cp.reuse_count_limit =
        (int)conf_int(conf, NULL, CONF_smtp_connection_reuse_count_limit);
    deliver_cache_params_set(q->cache, &cp);
    qm_verify_settings(q);
    scan.tv_sec = q->scan_delay_ms / 1000;
    scan.tv_usec = (q->scan_delay_ms % 1000) * 1000;
    event_add(q->scan_ev, &scan);
}

struct qmgr *qmgr_create(struct event_base *base, const struct conf *conf,
                         struct spool *sp, const struct route_table *routes,
                         struct dns_resolver *dns, qmgr_log_fn *log, void *ctx)
{
    struct qmgr *q = xcalloc(1, sizeof(*q));
    /* core/ logs deaths and revivals itself; a cluster shares them. */
    struct core_callbacks cb = {.log = core_log_cb,
                                .queue_dead = qm_cluster_queue_dead,
                                .queue_alive = qm_cluster_queue_alive,
                                .entry_deferred = qm_core_entry_deferred,
                                .message_done = qm_core_message_done,
                                .message_more = qm_core_message_more};
    struct deliver_cache_params cp = {0};

    q->base = base;
    q->conf = conf;
    q->sp = sp;
    q->routes = routes;
    q->dns = dns;
    q->log = log;
    q->log_ctx = ctx;
    TAILQ_INIT(&q->msgs);
    LIST_INIT(&q->deliveries);
    LIST_INIT(&q->workers);
    TAILQ_INIT(&q->finch_wait);
    TAILQ_INIT(&q->routing);
    TAILQ_INIT(&q->route_running);
    q->core = core_create(&cb, q);
    q->inbox = qmgr_inbox_create(base);
    q->cache = deliver_cache_create(base, &cp);
    qm_agent_log_init(q);
    q->feed_ev = event_new(base, -1, 0, feed_cb, q);
    q->timer_ev = evtimer_new(base, timer_cb, q);
    q->scan_ev = event_new(base, -1, EV_PERSIST, scan_cb, q);
    if (q->inbox == NULL || q->feed_ev == NULL || q->timer_ev == NULL ||
        q->scan_ev == NULL) {
        qmgr_free(q);
        return NULL;
    }
    settings_apply(q);
    qm_cluster_open(q);
    qm_sts_open(q);
    qm_tlsrpt_open(q);
    qm_feed_ask(q, 0);
    return q;
}

void qmgr_reload(struct qmgr *q, const struct conf *conf,
                 const struct route_table *routes)
{
    struct core_transport_params p;
    struct core_transport *t = NULL;

    q->conf = conf;
    q->routes = routes;
    settings_apply(q);
    qm_cluster_reload(q);

    while ((t = core_transport_next(q->core, t)) != NULL) {
        conf_core_params(conf, core_transport_name(t), &p);
        if (p.scheduler != core_transport_scheduler(t))
            qm_log(q, QMGR_LOG_WARNING,
                   "transport %s: the new scheduler takes effect when sluiced "
                   "restarts",
                   core_transport_name(t));
        core_transport_update(t, &p);
    }
    /* A larger active limit or window may let more start now. */
    qm_feed_ask(q, 0);
    qm_dispatch(q);
}

void qmgr_wake(struct qmgr *q)
{
    qm_feed_ask(q, QM_FEED_COALESCE_US);
}

int qmgr_idle(const struct qmgr *q)
{
    /* Nothing in memory, and the last look left nothing behind. */
    return q->active == 0 && !q->spool_has_more && !q->feed_asked &&
           LIST_EMPTY(&q->deliveries);
}

void qmgr_stats(const struct qmgr *q, struct qmgr_stats *st)
{
    struct core_transport *t = NULL;

    const struct qm_msg *m;

    *st = q->stats;
    st->active = q->active;
    st->bodies = 0;
    st->recipients = q->recipients;
    st->records = q->records;
    TAILQ_FOREACH(m, &q->msgs, link)
        st->bodies += m->body != NULL;
    st->destinations = 0;
    while ((t = core_transport_next(q->core, t)) != NULL)
        st->destinations += (long)core_transport_queue_count(t);
}

void qmgr_drain(struct qmgr *q)
{
    q->draining = 1;
}

long qmgr_busy(const struct qmgr *q)
{
    const struct qm_delivery *d;
    const struct qm_msg *m;
    long n = 0;

    n = q->submitting;
    LIST_FOREACH(d, &q->deliveries, link)
        n++;
    TAILQ_FOREACH(m, &q->msgs, link)
        n += m->pending;
    return n;
}

void qmgr_stop(struct qmgr *q)
{
    struct qm_delivery *d, *next;

    q->closing = 1;
    event_del(q->feed_ev);
    event_del(q->timer_ev);
    event_del(q->scan_ev);
    /* its TXT lookups answer into it: before the resolver goes; its
     * waiting deliveries are told, and end */
    qm_sts_close(q);
    /* its counts go to the spool; its TXT lookups end with the resolver */
    qm_tlsrpt_close(q);
    /* Agents stop at once; their recipients stay as they are on disk.
     * Deliveries waiting for DNS end when the resolver is freed. */
    for (d = LIST_FIRST(&q->deliveries); d != NULL; d = next) {
        next = LIST_NEXT(d, link);
        if (!d->dns_wait) {
            deliver_cancel(d->session);
            qm_delivery_free(d);
        }
    }
}

void qmgr_free(struct qmgr *q)
{
    struct qm_delivery *d;
    struct qm_msg *m;

    if (q == NULL)
        return;
    if (!q->closing && q->feed_ev && q->timer_ev && q->scan_ev)
        qmgr_stop(q);
    q->closing = 1;
    while ((d = LIST_FIRST(&q->deliveries)) != NULL) {
        deliver_cancel(d->session);
        qm_delivery_free(d);
    }
    /* Writes committed since qmgr_stop() reported here: let them land. */
    qmgr_inbox_free(q->inbox);
    q->inbox = NULL;
    qm_zmailer_free(q); /* before core/: its vertices are entries */
    if (q->core) {
        struct core_transport *t = NULL;

        while ((t = core_transport_next(q->core, t)) != NULL) {
            struct core_queue *cq = NULL;

            while ((cq = core_queue_next(t, cq)) != NULL)
                free(core_queue_ctx(cq));
        }
        core_free(q->core);
    }
    qm_metrics_free(q);
    qm_finch_free(q);
    qm_router_free(q);
    qm_verify_free(q);
    qm_cluster_close(q); /* after destdb, which it may wrap */
    while ((m = TAILQ_FIRST(&q->msgs)) != NULL) {
        TAILQ_REMOVE(&q->msgs, m, link);
        qm_message_free(m);
    }
    deliver_cache_free(q->cache);
    qmgr_tls_free(q->tls);
    conf_rules_free(q->rules);
    if (q->feed_ev)
        event_free(q->feed_ev);
    if (q->timer_ev)
        event_free(q->timer_ev);
    if (q->scan_ev)
        event_free(q->scan_ev);
    free(q);
}
