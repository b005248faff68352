/*
 * NAME
 *	deliver 3 - core/'s entries handed to the delivery agents, and back
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_dispatch(struct qmgr *q)
 *	void	qm_delivery_start(struct qmgr *q, struct core_entry *e,
 *			struct zm_agent *agent)
 *	void	qm_delivery_free(struct qm_delivery *d)
 *	void	qm_delivery_moved(struct qm_delivery *d,
 *			const struct deliver_result *res)
 * DESCRIPTION
 *	qm_dispatch() starts a delivery for every entry core/ hands out now,
 *	and sets the timer for core/'s next event. A delivery resolves its
 *	destination (MX or host) unless the route needs none, runs the
 *	agent, records each recipient's outcome and tells core/ the hop
 *	status; under Finch's scheduler (finch.c) the job goes to the
 *	connection that chooses. The agent keeps its connection for the next delivery when
 *	core/ says the destination's mail comes back to back (on-demand
 *	caching) or the next hop is one of
 *	smtp_connection_cache_destinations; a connection so kept serves
 *	the next delivery to its destination, or to any destination of
 *	its transport that has the same server among its addresses (the
 *	reference's endpoint label). Under the zmailer scheduler
 *	(zmailer.c) an entry is a vertex of a thread instead, and
 *	qm_delivery_start() runs it when the thread's agent is fed it: its
 *	connection is the agent's (cached under the agent's key, kept for
 *	its next vertex), and a hop failure ends the thread's run rather
 *	than feeding core/'s windows (CORE_HOP_NEUTRAL). qm_delivery_free() forgets a delivery (the caller has
 *	cancelled its session, if any).
 *
 *	An entry of the address probes' pseudo-message (verify.c) takes
 *	the same way, DNS, MTA-STS, DANE and TLS included, as a probe:
 *	the agent stops after the RCPT replies (deliver.h), no body, the
 *	sender address_verify_sender, no connection cached or reused, not
 *	under Finch's connections; its answers go to verify.c instead of
 *	the spool. qm_delivery_address() is recipient k's address, for
 *	either.
}

 *	qm_delivery_moved() says what became of an attempt that failed
 *	before the transaction when its job goes on to another host (Finch
 *	places it again): the reference's client logs the host it leaves,
 *	a connection that failed without the queue id ("connect to
 *	HOST[ADDR]:PORT: Connection refused"), any other failure with it
 *	("ID: host HOST[ADDR] refused to talk to me: 421 ...", "ID: lost
 *	connection with HOST[ADDR] while receiving the initial server
 *	greeting"), under the transport's name as the recipients' lines
 *	are, and the TLS failures of the attempt count for TLS
 *	reporting as they would in a delivery that ended there. The
 *	recipients' own lines come with the attempt that ends the job.
 *	Within one delivery too, each address the agent gave up before the
 *	one that ended it is logged the same way (the agent's skipped
 *	reasons), under either scheduler.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Addresses one delivery may try, at most. */
#define MAX_ADDRS 64

void qm_delivery_free(struct qm_delivery *d)
{
    qm_finch_forget(d);
    qm_zmailer_over(d);
    LIST_REMOVE(d, link);
    if (d->m != NULL) {
        d->m->deliveries--;
        qm_message_body_idle(d->m);
    }
    sts_policy_clear(&d->sts);
    qm_tlsrpt_delivery_free(d);
    free(d);
}

const char *qm_delivery_address(const struct qm_delivery *d, int k)
{
    if (d->probe)
        return qm_verify_address(d->q, d->rcpt[k]);
    return qm_rcpt_get(d->m, (uint32_t)d->rcpt[k])->address;
}

/* Every recipient of d gets the same outcome, decided here. */
static void delivery_decide(struct qm_delivery *d, enum deliver_status st,
                            const char *dsn, const char *text)
{
    if (d->probe)
        qm_verify_decided(d->q, d->dest->route.transport, d->rcpt, d->nrcpt,
                          NULL, st, dsn, text, "none", d->handoff, 0);
    else
        qm_outcome_decide(d->m, d->rcpt, d->nrcpt, st, dsn, text, "none");
}

/* An address d's attempt left, as the reference's client logs it. */
static void delivery_log_left(struct qm_delivery *d, const char *why)
{
    const char *t = d->dest->route.transport;

    if (strncmp(why, "connect to ", 11) == 0)
        qm_log_as(d->q, t, QMGR_LOG_INFO, "%s", why);
    else
        qm_log_as(d->q, t, QMGR_LOG_INFO, "%s: %s", d->m->id, why);
}

/* The addresses the agent left before the one that ended it. */
static void delivery_log_skipped(struct qm_delivery *d,
                                 const struct deliver_result *res)
{
    for (size_t i = 0; i < res->nskipped && !d->probe; i++)
        delivery_log_left(d, res->skipped[i]);
}

void qm_delivery_moved(struct qm_delivery *d, const struct deliver_result *res)
{
    delivery_log_skipped(d, res);
    delivery_log_left(d, res->hop_reason ? res->hop_reason : "");
    qm_sasl_log(d->q, d->m->id, res);
    qm_tlsrpt_record(d, res);
}

/* The entry of d is done: tell core/, then let its queue go if idle. */
static void delivery_entry_done(struct qm_delivery *d, enum core_hop hop,
                                const char *reason)
{
    struct core_queue *cq = d->queue;

    if (d->zagent != NULL) {
        /* ZMailer's threads have no feedback: a failed hop ends the
         * run, a deferral waits for the rule's retry time */
        qm_zmailer_entry_done(d, hop == CORE_HOP_FAIL, reason);
        hop = CORE_HOP_NEUTRAL;
    }
    core_entry_done(d->e, qm_now_ms(), hop, reason);
    qm_cluster_done(d->q, cq);
    qm_dest_release(cq);
}

void qm_delivery_done(void *ctx, struct deliver_result *res)
{
    struct qm_delivery *d = ctx;
    struct qmgr *q = d->q;
    struct qm_msg *m = d->m;
    double done = qm_now_sec();
    double conn_done = res->hop_ok ? done - res->xfer_time : 0;
    char tls[256];

    d->session = NULL;
    if (d->probe) {
        qm_verify_decided(q, d->dest->route.transport, d->rcpt, d->nrcpt,
                          res->rcpt, DELIVER_OK, NULL, NULL, res->relay,
                          d->handoff, conn_done);
        delivery_entry_done(d, res->hop_ok ? CORE_HOP_OK : CORE_HOP_FAIL,
                            res->hop_reason);
        deliver_result_free(res);
        qm_delivery_free(d);
        qm_dispatch(q);
        return;
    }
    if (qm_finch_done(d, res)) {
        /* Finch placed the job on another host: nothing to say yet */
        deliver_result_free(res);
        return;
    }
    delivery_log_skipped(d, res);
    qm_tls_log(q, d->dest->route.transport, res);
    qm_sasl_log(q, m->id, res);
    qm_sts_report(d, res);
    qm_tlsrpt_record(d, res);
    qm_tls_field(res, tls, sizeof(tls));
    if (res->lines_folded > 0)
        qm_log(q, QMGR_LOG_INFO,
               "%s: breaking line > %zu bytes with <CR><LF>SPACE", m->id,
               d->line_limit);
    for (int k = 0; k < d->nrcpt; k++) {
        const struct deliver_rcpt_result *r = &res->rcpt[k];

        qm_outcome_log(m, (uint32_t)d->rcpt[k], d->dest->route.transport,
                       res->relay, res->conn_use, r->enhanced, r->status,
                       r->text ? r->text : "", tls[0] ? tls : NULL, d->handoff,
                       conn_done);
    }
    qm_outcome_record(m, d->rcpt, d->nrcpt, res->rcpt, NULL,
                      d->dest->route.type != ROUTE_SMTP ? QM_HOW_FINAL
                      : res->dsn_passed                 ? QM_HOW_SMTP_DSN
                                                        : QM_HOW_SMTP,
                      tls[0] ? tls : NULL);
    if (res->transport_failed) {
        /* Its local socket is not there: the transport cannot work. */
        core_transport_suspend(core_queue_transport(d->queue), qm_now_ms(),
                               q->transport_retry_ms, res->hop_reason);
        delivery_entry_done(d, CORE_HOP_NEUTRAL, res->hop_reason);
    } else {
        delivery_entry_done(d, res->hop_ok ? CORE_HOP_OK : CORE_HOP_FAIL,
                            res->hop_reason);
    }
    deliver_result_free(res);
    qm_delivery_free(d);
    qm_dispatch(q);
}

/* Every recipient of d deferred, the destination's failure. */
void qm_delivery_defer(struct qm_delivery *d, const char *dsn, const char *why)
{
    struct qmgr *q = d->q;

    delivery_decide(d, DELIVER_DEFER, dsn, why);
    delivery_entry_done(d, CORE_HOP_FAIL, why);
    qm_delivery_free(d);
    qm_dispatch(q);
}

/* DNS gave no address: every recipient of the entry gets its answer. */
static void delivery_dns_failed(struct qm_delivery *d,
                                const struct dns_result *res)
{
    struct qmgr *q = d->q;
    int temp = res->status != DNS_PERMFAIL;

    delivery_decide(d, temp ? DELIVER_DEFER : DELIVER_BOUNCE,
                    res->dsn[0] ? res->dsn : (temp ? "4.4.3" : "5.4.4"),
                    res->why && res->why[0] ? res->why : "no address found");
    /* A name server that fails is the destination's trouble: negative. */
    delivery_entry_done(d, temp ? CORE_HOP_FAIL : CORE_HOP_OK, res->why);
    qm_delivery_free(d);
    qm_dispatch(q);
}

/* Is r's next hop one of smtp_connection_cache_destinations? */
static int delivery_cache_always(const struct route_result *r,
                                 const struct qmgr_deliver_settings *set)
{
    char nexthop[ROUTE_NEXTHOP_MAX + 16];

    if (set->cache_always[0] == 0)
        return 0;
    route_nexthop_format(r, nexthop, sizeof(nexthop));
    return util_list_has(set->cache_always, nexthop);
}

/* The sender and recipients of d: the message's, or the probes'. */
static void delivery_envelope(struct qm_delivery *d,
                              struct deliver_request *req,
                              struct deliver_rcpt *rcpt)
{
    const struct spool_msg *sm;

    if (d->probe) {
        for (int k = 0; k < d->nrcpt; k++)
            rcpt[k].address = qm_delivery_address(d, k);
        req->sender = qm_verify_sender(d->q);
        req->probe = 1;
        return;
    }
    sm = d->m->sm;
    for (int k = 0; k < d->nrcpt; k++) {
        const struct spool_rcpt *sr = qm_rcpt_get(d->m, (uint32_t)d->rcpt[k]);

        rcpt[k].address = sr->address;
        rcpt[k].orcpt = sr->orcpt;
        rcpt[k].notify = sr->notify;
    }
    req->sender = sm->sender;
    req->envid = sm->envid;
    req->ret = sm->ret == SPOOL_RET_FULL   ? 1
               : sm->ret == SPOOL_RET_HDRS ? 2
                                           : 0;
    req->smtputf8 = sm->smtputf8;
}

/* An external agent's delivery: its program from the rules (agent.c). */
static void delivery_agent(struct qm_delivery *d, struct deliver_request *req)
{
    struct qmgr *q = d->q;
    char key[ROUTE_KEY_MAX + 32], why[512];
    char **argv = qm_agent_request(q, &d->dest->route, req, key, sizeof(key),
                                   why, sizeof(why));

    if (argv == NULL) {
        qm_log(q, QMGR_LOG_WARNING, "%s: %s", d->m->id, why);
        qm_outcome_decide(d->m, d->rcpt, d->nrcpt, DELIVER_DEFER, "4.3.5", why,
                          "none");
        delivery_entry_done(d, CORE_HOP_NEUTRAL, NULL);
        qm_delivery_free(d);
        return;
    }
    req->queue_id = d->m->id;
    d->session = deliver_start(q->base, req, qm_delivery_done, d);
    conf_rules_argv_free(argv);
}

static void delivery_run(struct qm_delivery *d, const struct dns_result *res,
                         const struct deliver_dane *dane, size_t ndane)
{
    struct qmgr *q = d->q;
    const struct route_result *r = &d->dest->route;
    struct qmgr_deliver_settings set;
    struct deliver_request req = {0};
    struct deliver_rcpt *rcpt = xcalloc((size_t)d->nrcpt, sizeof(*rcpt));
    struct deliver_addr *addrs = NULL;
    char why[512];

    if (!d->probe &&
        (req.body = qm_message_body(d->m, why, sizeof(why))) == NULL) {
        /* The spool cannot give it now: try again later, not a bounce. */
        qm_log(q, QMGR_LOG_WARNING, "%s: cannot read the message body: %s",
               d->m->id, why);
        qm_outcome_decide(d->m, d->rcpt, d->nrcpt, DELIVER_DEFER, "4.3.0",
                          "cannot read the message from the queue", "none");
        delivery_entry_done(d, CORE_HOP_NEUTRAL, NULL);
        free(rcpt);
        qm_delivery_free(d);
        return;
    }
    qmgr_deliver_settings(q->conf, r->transport, &set);
    delivery_envelope(d, &req, rcpt);
    req.proto = r->type == ROUTE_LMTP      ? DELIVER_LMTP
                : r->type == ROUTE_DISCARD ? DELIVER_DISCARD
                : r->type == ROUTE_ERROR   ? DELIVER_ERROR
                                           : DELIVER_SMTP;
    req.helo_name = set.helo_name;
    req.line_limit = d->line_limit = set.line_limit;
    req.mime_conversion = set.mime_conversion;
    qm_tls_request(q, r->transport, r, d->sts_mode, &req.tls);
    req.tls.dane = dane;
    req.tls.ndane = ndane;
    qm_sasl_request(q, r->transport, r, &req.sasl);
    qm_tlsrpt_dane(d, dane, ndane);
    req.rcpt = rcpt;
    req.nrcpt = (size_t)d->nrcpt;
    req.session_limit = set.session_limit;
    req.timeouts = set.timeouts;
    req.reason = r->nexthop;
    if (res != NULL) {
        unsigned port = r->port ? r->port : r->type == ROUTE_LMTP ? 24 : 25;
        size_t all;

        addrs = xcalloc(MAX_ADDRS, sizeof(*addrs));
        req.addrs = addrs;
        req.naddrs =
            qmgr_addresses(res, port, set.address_limit, addrs, MAX_ADDRS);
        all = req.naddrs;
        req.naddrs = qm_sts_filter(d, addrs, all, why, sizeof(why));
        if (all > 0 && req.naddrs == 0) {
            /* RFC 8461, 5.1: no MX host the policy allows: temporary */
            qm_tlsrpt_policy_failure(d, TLSRPT_STS_POLICY_INVALID,
                                     addrs[0].host, why);
            delivery_decide(d, DELIVER_DEFER, "4.7.5", why);
            delivery_entry_done(d, CORE_HOP_FAIL, why);
            free(rcpt);
            free(addrs);
            qm_delivery_free(d);
            qm_dispatch(q);
            return;
        }
    } else if (r->unix_path) {
        struct sockaddr_un *sun;

        addrs = xcalloc(1, sizeof(*addrs));
        sun = (struct sockaddr_un *)&addrs->sa;
        sun->sun_family = AF_UNIX;
        /* route/ keeps socket paths short enough for sun_path */
        if (strlen(r->nexthop) < sizeof(sun->sun_path)) {
            memcpy(sun->sun_path, r->nexthop, strlen(r->nexthop) + 1);
            addrs->salen = sizeof(*sun);
            snprintf(addrs->host, sizeof(addrs->host), "%s", q->hostname);
            req.addrs = addrs;
            req.naddrs = 1;
        }
    }
    if (d->zagent != NULL) {
        /* the agent's one connection (or process: whatever the request's
         * transport runs is pooled under cache_key), kept for its next
         * vertex */
        req.cache = q->cache;
        req.cache_limits = set.cache;
        qm_zmailer_cache(d, &req.cache_key, &req.cache_limits.idle_ms);
        req.cache_store = 1;
    } else if (req.naddrs > 0 && set.cache.idle_ms > 0 && !d->probe) {
        req.cache = q->cache;
        req.cache_key = r->key.cache;
        req.cache_limits = set.cache;
        req.cache_store = d->cache_store || delivery_cache_always(r, &set);
        /* and by server address, as the reference's endpoint label;
         * Finch keys its connections itself */
        req.cache_endpoint = qm_finch_applies(q, r) ? NULL : r->transport;
    }
    if (r->type == ROUTE_AGENT) {
        delivery_agent(d, &req);
    } else if (req.naddrs > 0 && !d->probe && qm_finch_applies(q, r))
        qm_finch_start(d, &req); /* d may be gone after this */
    else
        d->session = deliver_start(q->base, &req, qm_delivery_done, d);
    free(rcpt);
    free(addrs);
}

/* The TLSA answers are in: the agent runs with them. */
static void delivery_dane_done(struct qm_delivery *d,
                               const struct dns_result *res,
                               const struct deliver_dane *dane, size_t n)
{
    if (d->q->closing)
        qm_delivery_free(d); /* the recipients stay as they are on disk */
    else
        delivery_run(d, res, dane, n);
}

/* Does the TLS of d's deliveries ask for DANE? */
static int delivery_wants_dane(const struct qm_delivery *d)
{
    struct deliver_tls t;

    qm_tls_request(d->q, d->dest->route.transport, &d->dest->route, d->sts_mode,
                   &t);
    return t.ctx != NULL &&
           (t.level == TLS_LEV_DANE || t.level == TLS_LEV_DANE_ONLY);
}

static void delivery_dns_done(void *ctx, struct dns_result *res)
{
    struct qm_delivery *d = ctx;
    const struct route_result *r = &d->dest->route;

    d->dns_wait = 0;
    if (d->q->closing) {
        qm_delivery_free(d); /* the recipients stay as they are on disk */
    } else if (res->status != DNS_OK) {
        delivery_dns_failed(d, res);
    } else if (delivery_wants_dane(d)) {
        qm_dane_start(d, res,
                      r->port                 ? r->port
                      : r->type == ROUTE_LMTP ? 24
                                              : 25,
                      delivery_dane_done);
        return; /* res is qm_dane_start()'s now */
    } else {
        delivery_run(d, res, NULL, 0);
    }
    dns_result_free(res);
}

static void delivery_resolve(struct qm_delivery *d);

void qm_delivery_start(struct qmgr *q, struct core_entry *e,
                       struct zm_agent *agent)
{
    struct qm_delivery *d = xcalloc(1, sizeof(*d));
    const struct route_result *r;

    d->q = q;
    d->e = e;
    d->zagent = agent;
    d->queue = core_entry_queue(e);
    d->rcpt = core_entry_rcpts(e, &d->nrcpt);
    if (qm_verify_owns(q, core_entry_message(e))) {
        d->probe = 1;
    } else {
        d->m = core_message_ctx(core_entry_message(e));
        d->m->deliveries++;
        d->zdeferrals = d->m->deferrals;
    }
    d->dest = core_queue_ctx(d->queue);
    d->cache_store = core_queue_cache_store(d->queue);
    d->handoff = qm_now_sec();
    LIST_INSERT_HEAD(&q->deliveries, d, link);
    r = &d->dest->route;
    if (r->type == ROUTE_DISCARD || r->type == ROUTE_ERROR ||
        r->type == ROUTE_AGENT || r->unix_path) {
        delivery_run(d, NULL, NULL, 0);
        return;
    }
    if (qm_sts_applies(d))
        qm_sts_get(d, delivery_resolve); /* the policy, then DNS */
    else
        delivery_resolve(d);
}

/* The MX or host lookup of d (its MTA-STS policy known, if any). */
static void delivery_resolve(struct qm_delivery *d)
{
    struct qmgr *q = d->q;
    const struct route_result *r = &d->dest->route;

    d->dns_wait = 0;
    if (q->closing) {
        qm_delivery_free(d); /* the recipients stay as they are on disk */
        return;
    }
    d->dns_wait = 1;
    if ((r->mx
             ? dns_lookup_mx(q->dns, r->nexthop, delivery_dns_done, d)
             : dns_lookup_host(q->dns, r->nexthop, delivery_dns_done, d)) < 0) {
        /* The resolver is going away with the daemon: leave it queued. */
        d->dns_wait = 0;
    }
}

void qm_dispatch(struct qmgr *q)
{
    struct core_entry *e;
    core_time_t next;
    struct timeval tv;

    if (q->closing || q->draining)
        return;
    while ((e = core_select(q->core, qm_now_ms())) != NULL) {
        if (qm_zmailer_take(q, e))
            continue; /* a vertex of its thread now (zmailer.c) */
        qm_cluster_started(q, core_entry_queue(e));
        qm_delivery_start(q, e, NULL);
    }
    qm_cluster_poke(q);
    next = core_next_timer(q->core);
    if (next != CORE_TIME_NEVER) {
        core_time_t wait = next - qm_now_ms();

        if (wait < 0)
            wait = 0;
        tv.tv_sec = wait / 1000;
        tv.tv_usec = (wait % 1000) * 1000;
        evtimer_add(q->timer_ev, &tv);
    }
}
