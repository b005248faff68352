/*
 * NAME
 *	verify 3 - address verification: probes as one pseudo-message
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	int	qmgr_verify(struct qmgr *q, const char *address,
 *			int64_t wait_ms, int flags,
 *			struct qmgr_verify_answer *now, qmgr_verify_fn *done,
 *			void *ctx, struct qmgr_verify_wait **wait)
 *	void	qmgr_verify_cancel(struct qmgr_verify_wait *w)
 *	const char *qmgr_verify_status_name(enum qmgr_verify_status s)
 *
 *	void	qm_verify_settings(struct qmgr *q)
 *	int	qm_verify_owns(const struct qmgr *q,
 *			const struct core_message *cm)
 *	const char *qm_verify_address(const struct qmgr *q, uint64_t no)
 *	const char *qm_verify_sender(const struct qmgr *q)
 *	void	qm_verify_decided(struct qmgr *q, const char *transport,
 *			const uint64_t *no, int n,
 *			const struct deliver_rcpt_result *res,
 *			enum deliver_status st, const char *dsn,
 *			const char *text, const char *relay, double handoff,
 *			double conn_done)
 *	void	qm_verify_free(struct qmgr *q)
 * DESCRIPTION
 *	The seed's last paragraph (finch-mta-scheduling.txt): "limit the
 *	load imposed from outside (attackers) by smtp-time verification
 *	... by assigning all verifications to a pseudo-message, which
 *	would probably have specially tuned concurrency settings". Every
 *	probe is a recipient of one core/ message that lives in memory
 *	alone (never in the spool; decision 96). Its recipients are routed
 *	as mail is (route/), go to the same destination queues, and so
 *	share their concurrency windows, feedback and dead-destination
 *	detection: a destination that real mail found dead is not probed,
 *	and probes that fail count against it like deliveries.
 *
 *	The pseudo-message's own tuning (decision 97): at most
 *	address_verify_concurrency_limit of its recipients are in core/ at
 *	once, so no more probes than that are in flight (core/ may group
 *	those of one destination into one session); the next ones wait in
 *	a line of at most address_verify_pending_request_limit; a request
 *	beyond it is answered "undetermined" at once, and no probe is
 *	made. Requests for an address already being probed wait for that
 *	probe. So an SMTP client sending any number of made-up recipients
 *	costs the receivers at most the concurrency limit in sessions.
 *
 *	qmgr_verify() answers from the cache (verify_cache.c): a fresh
 *	answer at once; a stale one at once too, with a probe sent in the
 *	background to renew it (address_verify_*_refresh_time). Without an
 *	answer it sends a probe, unless the route answers by itself as the
 *	reference's verify does without one: the discard transport says
 *	deliverable, the error transport undeliverable (or undetermined
 *	for a 4.X.Y reason) with its text. The caller then waits wait_ms
 *	at most (a timer of its own), and hears the probe's answer, or
 *	"Address verification in progress" at the end of the wait; the
 *	probe goes on, and its answer goes to the cache for the next
 *	request. qmgr_verify_cancel() ends a wait that has not been
 *	answered (a client gone): nothing else changes.
 *
 *	Each answer that a probe or a route gives is logged in the
 *	reference's form, under the transport's name as the reference's
 *	agents log their probes ("qmgr" for an address that does not
 *	route), with "verify" for the queue id (deliver/log.c):
 *	"verify: to=<A>, relay=R, delay=T, delays=a/b/c/d, dsn=X.Y.Z,
 *	status=deliverable (TEXT)" or status=undeliverable, for good (dsn
 *	5.X.Y) or for now (4.X.Y). A request refused by the pending limit
 *	logs "warning: address verification: N requests waiting
 *	(address_verify_pending_request_limit): not probing <A>", at most
 *	once a minute.
 *
 *	qm_verify_owns() tells the pseudo-message from the queue manager's
 *	other messages; qm_verify_address() is probe no's address,
 *	qm_verify_sender() the probes' sender (address_verify_sender; a
 *	bare name gets @myhostname). qm_verify_decided() takes the
 *	delivery agent's (res) or the queue manager's (st, dsn, text)
 *	answer for the probes no[] of one entry.
 */

#include "qmgr/qmgr_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define VERIFY_HASH_SIZE     1024
#define VERIFY_ADDRESS_MAX   512
#define VERIFY_WARN_EVERY_MS 60000

struct qmgr_verify_wait {
    struct qm_probe *p;
    struct event *timer;
    qmgr_verify_fn *done;
    void *ctx;
    LIST_ENTRY(qmgr_verify_wait) link;
};

struct qm_probe {
    struct qm_verify *v;
    uint64_t no; /* its recipient number in the pseudo-message */
    char *address;
    int in_core;      /* else waiting in line */
    double requested; /* wall-clock seconds, for delays= */
    LIST_HEAD(, qmgr_verify_wait) waits;
    struct qm_probe *hnext;
    TAILQ_ENTRY(qm_probe) link; /* the line, or those in core/ */
};

struct qm_verify {
    struct qmgr *q;
    struct qmgr_verify_cache *cache;
    struct core_message *cm;
    uint64_t next_no;
    TAILQ_HEAD(, qm_probe) pending, in_core;
    long npending, nin_core;
    long concurrency, pending_limit;
    char sender[VERIFY_ADDRESS_MAX];
    int64_t warned;                 /* monotonic ms of the last limit warning */
    struct qmgr_verify_answer last; /* the last probe's, for qmgr_verify() */
    char last_address[VERIFY_ADDRESS_MAX]; /* whose */
    int admitting; /* verify_admit() is running: probe_finish() calls it */
    struct qm_probe *hash[VERIFY_HASH_SIZE];
};

static void verify_admit(struct qm_verify *v);

const char *qmgr_verify_status_name(enum qmgr_verify_status s)
{
    return s == QMGR_VERIFY_DELIVERABLE     ? "deliverable"
           : s == QMGR_VERIFY_UNDELIVERABLE ? "undeliverable"
                                            : "undetermined";
}

static unsigned verify_hash(const char *address)
{
    unsigned h = 5381;
    const char *at = strrchr(address, '@');

    for (const char *p = address; *p; p++)
        h = h * 33 +
            (unsigned char)(at && p > at ? tolower((unsigned char)*p) : *p);
    return h % VERIFY_HASH_SIZE;
}

/* Two addresses are the same if they differ in their domain's case. */
static int verify_same(const char *a, const char *b)
{
    const char *at = strrchr(a, '@'), *bt = strrchr(b, '@');

    if (at == NULL || bt == NULL || at - a != bt - b)
        return strcmp(a, b) == 0;
    return strncmp(a, b, (size_t)(at - a)) == 0 && strcasecmp(at, bt) == 0;
}

void qm_verify_settings(struct qmgr *q)
{
    const struct conf *conf = q->conf;
    struct qm_verify *v = q->verify;
    struct qmgr_verify_cache_params p;
    const char *sender = conf_str(conf, NULL, CONF_address_verify_sender);

    p.pos_expire =
        conf_time_ms(conf, NULL, CONF_address_verify_positive_expire_time);
    p.pos_refresh =
        conf_time_ms(conf, NULL, CONF_address_verify_positive_refresh_time);
    p.neg_expire =
        conf_time_ms(conf, NULL, CONF_address_verify_negative_expire_time);
    p.neg_refresh =
        conf_time_ms(conf, NULL, CONF_address_verify_negative_refresh_time);
    p.neg_cache = conf_bool(conf, NULL, CONF_address_verify_negative_cache);
    p.limit = conf_int(conf, NULL, CONF_address_verify_cache_limit);
    if (v == NULL) {
        v = q->verify = xcalloc(1, sizeof(*v));
        v->q = q;
        v->cache = qmgr_verify_cache_create(&p);
        TAILQ_INIT(&v->pending);
        TAILQ_INIT(&v->in_core);
        v->warned = -VERIFY_WARN_EVERY_MS;
    } else {
        qmgr_verify_cache_params_set(v->cache, &p);
    }
    v->concurrency =
        conf_int(conf, NULL, CONF_address_verify_concurrency_limit);
    v->pending_limit =
        conf_int(conf, NULL, CONF_address_verify_pending_request_limit);
    verify_admit(v); /* a larger limit at reload lets more go now */
    if (*sender == 0 || strchr(sender, '@') != NULL)
        snprintf(v->sender, sizeof(v->sender), "%s", sender);
    else
        snprintf(v->sender, sizeof(v->sender), "%s@%s", sender, q->hostname);
}

int qm_verify_owns(const struct qmgr *q, const struct core_message *cm)
{
    return q->verify != NULL && q->verify->cm == cm;
}

const char *qm_verify_sender(const struct qmgr *q)
{
    return q->verify->sender;
}

static struct qm_probe *probe_by_no(const struct qm_verify *v, uint64_t no)
{
    struct qm_probe *p;

    TAILQ_FOREACH(p, &v->in_core, link)
        if (p->no == no)
            return p;
    return NULL;
}

const char *qm_verify_address(const struct qmgr *q, uint64_t no)
{
    const struct qm_probe *p = probe_by_no(q->verify, no);

    return p ? p->address : "";
}

static struct qm_probe **probe_slot(struct qm_verify *v, const char *address)
{
    struct qm_probe **pp = &v->hash[verify_hash(address)];

    while (*pp && !verify_same((*pp)->address, address))
        pp = &(*pp)->hnext;
    return pp;
}

static void answer_set(struct qmgr_verify_answer *a, enum qmgr_verify_status st,
                       const char *dsn, const char *text)
{
    memset(a, 0, sizeof(*a));
    a->status = st;
    snprintf(a->dsn, sizeof(a->dsn), "%s", dsn);
    snprintf(a->text, sizeof(a->text), "%s", text);
}

/* "verify: to=<A>, relay=R, ..., status=deliverable (TEXT)" */
static void verify_log(struct qmgr *q, const char *service, const char *address,
                       const struct qmgr_verify_answer *a, const char *relay,
                       double requested, double handoff, double conn_done)
{
    struct deliver_log_entry e = {0};
    char line[2048];

    e.queue_id = "verify";
    e.recipient = address;
    e.relay = relay ? relay : "none";
    e.dsn = a->dsn;
    e.status = a->status == QMGR_VERIFY_DELIVERABLE     ? DELIVER_OK
               : a->status == QMGR_VERIFY_UNDELIVERABLE ? DELIVER_BOUNCE
                                                        : DELIVER_DEFER;
    e.text = a->text;
    e.probe = 1;
    e.arrival = e.active = requested;
    e.handoff = handoff;
    e.conn_done = conn_done;
    e.done = qm_now_sec();
    deliver_log_line(line, sizeof(line), &e);
    qm_log_as(q, service, QMGR_LOG_INFO, "%s", line);
}

static void wait_free(struct qmgr_verify_wait *w)
{
    LIST_REMOVE(w, link);
    event_free(w->timer);
    free(w);
}

/* Probe p has its answer: the cache, every waiter, then the next one. */
static void probe_finish(struct qm_probe *p, struct qmgr_verify_answer *a)
{
    struct qm_verify *v = p->v;
    struct qmgr_verify_wait *w;

    qmgr_verify_cache_put(v->cache, p->address, a, qm_now_ms());
    v->last = *a;
    snprintf(v->last_address, sizeof(v->last_address), "%s", p->address);
    *probe_slot(v, p->address) = p->hnext;
    if (p->in_core) {
        TAILQ_REMOVE(&v->in_core, p, link);
        v->nin_core--;
    } else {
        TAILQ_REMOVE(&v->pending, p, link);
        v->npending--;
    }
    while ((w = LIST_FIRST(&p->waits)) != NULL) {
        qmgr_verify_fn *done = w->done;
        void *ctx = w->ctx;

        wait_free(w);
        done(ctx, a); /* may ask again: p is out of the table already */
    }
    free(p->address);
    free(p);
    verify_admit(v);
}

/* Into core/: the route's destination queue, or its refusal. */
static void probe_admit(struct qm_verify *v, struct qm_probe *p)
{
    struct qmgr *q = v->q;
    struct route_result rr;
    struct core_queue *cq;
    struct qmgr_verify_answer a;
    char why[512];

    TAILQ_REMOVE(&v->pending, p, link);
    v->npending--;
    TAILQ_INSERT_TAIL(&v->in_core, p, link);
    v->nin_core++;
    p->in_core = 1;
    if (v->cm == NULL) /* never released: it lives as long as q */
        v->cm = core_message_create(q->core, 0, qm_now_ms(), v);
    if (route_resolve(q->routes, p->address, &rr, why, sizeof(why)) < 0) {
        answer_set(&a, QMGR_VERIFY_UNDELIVERABLE, "5.1.3", why);
        verify_log(q, "qmgr", p->address, &a, NULL, p->requested, 0, 0);
        probe_finish(p, &a);
        return;
    }
    cq = qm_dest_queue(q, &rr);
    if (core_message_add(v->cm, cq, p->no) < 0) {
        /* dead or suspended: deferred as real mail is, not probed */
        snprintf(why, sizeof(why), "delivery temporarily suspended: %s",
                 core_queue_refusal(cq) ? core_queue_refusal(cq)
                                        : "destination unavailable");
        answer_set(&a, QMGR_VERIFY_UNDETERMINED, "4.4.1", why);
        qm_dest_release(cq);
        verify_log(q, rr.transport, p->address, &a, NULL, p->requested, 0, 0);
        probe_finish(p, &a);
    }
}

/* Probes from the line into core/, while the concurrency limit allows. */
static void verify_admit(struct qm_verify *v)
{
    int admitted = 0;

    if (v->admitting || v->q->closing)
        return;
    v->admitting = 1;
    while (v->nin_core < v->concurrency && !TAILQ_EMPTY(&v->pending)) {
        probe_admit(v, TAILQ_FIRST(&v->pending));
        admitted = 1;
    }
    v->admitting = 0;
    if (admitted)
        qm_dispatch(v->q);
}

/* The route answers for discard, error and agent, without a probe. */
static int route_answers(struct qmgr *q, const char *address,
                         struct qmgr_verify_answer *a)
{
    struct route_result rr;
    const char *text;
    char why[512];

    if (route_resolve(q->routes, address, &rr, why, sizeof(why)) < 0)
        return 0; /* the probe says it, and logs it */
    if (rr.type == ROUTE_DISCARD) {
        answer_set(a, QMGR_VERIFY_DELIVERABLE, "2.0.0",
                   rr.nexthop[0] ? rr.nexthop : "discarded");
    } else if (rr.type == ROUTE_AGENT) {
        /* as the reference's pipe(8) in verification mode */
        answer_set(a, QMGR_VERIFY_DELIVERABLE, "2.0.0", "delivers to an agent");
    } else if (rr.type == ROUTE_ERROR) {
        text = rr.nexthop[0] ? rr.nexthop : "undeliverable";
        if (isdigit((unsigned char)text[0]) && text[1] == '.' &&
            strchr("45", text[0]) && strchr(text, ' ')) {
            char dsn[16];

            snprintf(dsn, sizeof(dsn), "%.*s", (int)(strchr(text, ' ') - text),
                     text);
            answer_set(a,
                       text[0] == '4' ? QMGR_VERIFY_UNDETERMINED
                                      : QMGR_VERIFY_UNDELIVERABLE,
                       dsn, strchr(text, ' ') + 1);
        } else {
            answer_set(a, QMGR_VERIFY_UNDELIVERABLE, "5.0.0", text);
        }
    } else {
        return 0;
    }
    verify_log(q, rr.transport, address, a, NULL, qm_now_sec(), 0, 0);
    qmgr_verify_cache_put(q->verify->cache, address, a, qm_now_ms());
    return 1;
}

/* A new probe in line, or NULL past the pending limit. */
static struct qm_probe *probe_create(struct qm_verify *v, const char *address)
{
    struct qm_probe *p, **pp;

    if (v->npending >= v->pending_limit && v->nin_core >= v->concurrency) {
        if (qm_now_ms() - v->warned >= VERIFY_WARN_EVERY_MS) {
            v->warned = qm_now_ms();
            qm_log(v->q, QMGR_LOG_WARNING,
                   "address verification: %ld requests waiting "
                   "(address_verify_pending_request_limit): not probing <%s>",
                   v->npending, address);
        }
        return NULL;
    }
    p = xcalloc(1, sizeof(*p));
    p->v = v;
    p->no = ++v->next_no;
    p->address = xstrdup(address);
    p->requested = qm_now_sec();
    LIST_INIT(&p->waits);
    pp = probe_slot(v, address);
    *pp = p;
    TAILQ_INSERT_TAIL(&v->pending, p, link);
    v->npending++;
    return p;
}

static void wait_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr_verify_wait *w = arg;
    qmgr_verify_fn *done = w->done;
    void *ctx = w->ctx;
    struct qmgr_verify_answer a;

    (void)fd;
    (void)what;
    answer_set(&a, QMGR_VERIFY_UNDETERMINED, "4.1.1",
               "Address verification in progress");
    a.in_progress = 1;
    wait_free(w);
    done(ctx, &a);
}

static struct qmgr_verify_wait *wait_create(struct qm_probe *p, int64_t ms,
                                            qmgr_verify_fn *done, void *ctx)
{
    struct qmgr_verify_wait *w = xcalloc(1, sizeof(*w));
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    w->p = p;
    w->done = done;
    w->ctx = ctx;
    w->timer = evtimer_new(p->v->q->base, wait_timeout, w);
    evtimer_add(w->timer, &tv);
    LIST_INSERT_HEAD(&p->waits, w, link);
    return w;
}

/* The probe of address ended as it was admitted: its answer. */
static int verify_answered(struct qm_verify *v, const char *address,
                           struct qmgr_verify_answer *now)
{
    if (verify_same(v->last_address, address))
        *now = v->last;
    else if (qmgr_verify_cache_get(v->cache, address, qm_now_ms(), now) ==
             QMGR_VERIFY_MISS)
        answer_set(now, QMGR_VERIFY_UNDETERMINED, "4.1.1",
                   "Address verification in progress");
    return 1;
}

int qmgr_verify(struct qmgr *q, const char *address, int64_t wait_ms, int flags,
                struct qmgr_verify_answer *now, qmgr_verify_fn *done, void *ctx,
                struct qmgr_verify_wait **wait)
{
    struct qm_verify *v = q->verify;
    enum qmgr_verify_found found;
    struct qm_probe *p;

    *wait = NULL;
    if (strlen(address) >= VERIFY_ADDRESS_MAX) {
        answer_set(now, QMGR_VERIFY_UNDELIVERABLE, "5.1.3", "address too long");
        return 1;
    }
    found = qmgr_verify_cache_get(v->cache, address, qm_now_ms(), now);
    if (found != QMGR_VERIFY_MISS) {
        now->cached = 1;
        if (found == QMGR_VERIFY_STALE && !(flags & QMGR_VERIFY_CACHED) &&
            !q->closing && *probe_slot(v, address) == NULL &&
            probe_create(v, address) != NULL)
            verify_admit(v); /* renew it meanwhile */
        return 1;
    }
    if (flags & QMGR_VERIFY_CACHED) {
        answer_set(now, QMGR_VERIFY_UNDETERMINED, "4.1.1",
                   "no answer in the address verification cache");
        return 1;
    }
    if (route_answers(q, address, now))
        return 1;
    if ((p = *probe_slot(v, address)) == NULL) {
        if (q->closing || (p = probe_create(v, address)) == NULL) {
            answer_set(now, QMGR_VERIFY_UNDETERMINED, "4.3.2",
                       "address verification is busy: too many requests "
                       "waiting");
            return 1;
        }
        verify_admit(v);
        if ((p = *probe_slot(v, address)) == NULL)
            return verify_answered(v, address, now); /* a dead destination */
    }
    if (wait_ms <= 0) {
        answer_set(now, QMGR_VERIFY_UNDETERMINED, "4.1.1",
                   "Address verification in progress");
        now->in_progress = 1;
        return 1;
    }
    *wait = wait_create(p, wait_ms, done, ctx);
    return 0;
}

void qmgr_verify_cancel(struct qmgr_verify_wait *w)
{
    if (w != NULL)
        wait_free(w);
}

void qm_verify_decided(struct qmgr *q, const char *transport,
                       const uint64_t *no, int n,
                       const struct deliver_rcpt_result *res,
                       enum deliver_status st, const char *dsn,
                       const char *text, const char *relay, double handoff,
                       double conn_done)
{
    struct qmgr_verify_answer a;

    for (int k = 0; k < n; k++) {
        struct qm_probe *p = probe_by_no(q->verify, no[k]);
        enum deliver_status s = res ? res[k].status : st;

        if (p == NULL)
            continue;
        answer_set(&a,
                   s == DELIVER_OK       ? QMGR_VERIFY_DELIVERABLE
                   : s == DELIVER_BOUNCE ? QMGR_VERIFY_UNDELIVERABLE
                                         : QMGR_VERIFY_UNDETERMINED,
                   res ? res[k].enhanced : dsn,
                   res ? (res[k].text ? res[k].text : "") : text);
        verify_log(q, transport, p->address, &a, relay, p->requested, handoff,
                   conn_done);
        probe_finish(p, &a);
    }
}

void qm_verify_free(struct qmgr *q)
{
    struct qm_verify *v = q->verify;
    struct qm_probe *p;

    if (v == NULL)
        return;
    for (int i = 0; i < 2; i++) {
        while ((p = TAILQ_FIRST(i ? &v->in_core : &v->pending)) != NULL) {
            struct qmgr_verify_wait *w;

            TAILQ_REMOVE(i ? &v->in_core : &v->pending, p, link);
            while ((w = LIST_FIRST(&p->waits)) != NULL)
                wait_free(w); /* the daemon's users have gone before us */
            free(p->address);
            free(p);
        }
    }
    qmgr_verify_cache_free(v->cache);
    free(v);
    q->verify = NULL;
}
