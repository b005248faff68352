/*
 * NAME
 *	qmgr 3 - the queue manager: spool to core/ to delivery agents and back
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	struct qmgr *qmgr_create(struct event_base *base,
 *			const struct conf *conf, struct spool *sp,
 *			const struct route_table *routes,
 *			struct dns_resolver *dns, qmgr_log_fn *log, void *ctx)
 *	void	qmgr_wake(struct qmgr *q)
 *	int	qmgr_idle(const struct qmgr *q)
 *	void	qmgr_stats(const struct qmgr *q, struct qmgr_stats *st)
 *	void	qmgr_free(struct qmgr *q)
 * DESCRIPTION
 *	See qmgr.h for the contract. The life of a message in core:
 *
 *	load: read from the spool (envelope, recipients, body); each
 *	recipient not yet final is routed and added to its destination
 *	queue in core/; a recipient that cannot be routed is bounced, one
 *	whose queue is dead is deferred with the queue's reason.
 *
 *	deliver: core_select() hands out an entry; its destination is
 *	resolved (MX or host), the agent runs; each recipient's result
 *	goes to the spool (one change per delivery, in the group commit)
 *	and to the log; the hop status goes to core/.
 *
 *	finish: once core/ says every entry is done and every change of
 *	the message is committed, the message is removed (every recipient
 *	final), or deferred with a retry time, or expired (its deferred
 *	recipients bounced, then removed). Only when that last write is
 *	committed does the message leave memory, so the feed can never
 *	load a message twice.
 *
 *	The spool calls back from its committer thread: those callbacks
 *	only post to the inbox, and everything else runs on the loop.
 */

#include "qmgr/qmgr.h"

#include "route/route.h"
#include "spool/spool.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/random.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#define ID_HASH_SIZE 4096

/* Wake-ups come one per stored message: look at most every FEED_COALESCE. */
#define FEED_COALESCE_US 10000
#define MAX_ADDRS        64

struct qm_msg {
    struct qmgr *q;
    char id[SPOOL_ID_MAX + 1];
    struct spool_msg *sm;
    struct core_message *cm;
    double active;          /* seconds: entered the active queue */
    int pending;            /* spool writes not yet committed */
    int core_done;          /* core/ has no entry of it left */
    int finishing;          /* the last write is on its way */
    unsigned char *relayed; /* per recipient: delivered to a non-DSN hop */
    char last_reason[512];
    struct qm_msg *hnext;
    TAILQ_ENTRY(qm_msg) link;
};

/* What a destination queue needs to deliver: its route. */
struct qm_dest {
    struct route_result route;
};

struct qm_delivery {
    struct qmgr *q;
    struct qm_msg *m;
    struct core_entry *e;
    struct qm_dest *dest;
    double handoff;
    struct deliver_session *session;
    int dns_wait;
    LIST_ENTRY(qm_delivery) link;
};

struct qmgr {
    struct event_base *base;
    const struct conf *conf;
    struct spool *sp;
    const struct route_table *routes;
    struct dns_resolver *dns;
    qmgr_log_fn *log;
    void *log_ctx;
    struct core *core;
    struct qmgr_inbox *inbox;
    struct deliver_cache *cache;
    struct event *feed_ev, *timer_ev, *scan_ev;
    struct qm_msg *hash[ID_HASH_SIZE];
    TAILQ_HEAD(, qm_msg) msgs;
    LIST_HEAD(, qm_delivery) deliveries;
    long active; /* messages in memory */
    long limit;  /* qmgr_message_active_limit */
    int64_t scan_delay_ms;
    struct qmgr_retry retry;
    int64_t delay_warning;          /* delay_warning_time, microseconds */
    core_time_t transport_retry_ms; /* transport_retry_time */
    uint64_t bounce_size_limit;     /* bounce_size_limit */
    char hostname[256];             /* myhostname, for notices */
    uint64_t next_id;
    int feed_asked;     /* a look at the spool is scheduled */
    int spool_has_more; /* the last look stopped for want of room */
    long feed_batch;    /* room worth a new look at the spool */
    int closing;        /* qmgr_stop(): start nothing, write nothing */
    int draining;       /* qmgr_drain(): start nothing, finish what runs */
    long submitting;    /* new messages not yet committed */
    struct qmgr_stats stats;
};

static double now_sec(void)
{
    struct timeval tv;

    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static core_time_t now_ms(void)
{
    return (core_time_t)(now_sec() * 1000.0);
}

static void qlog(struct qmgr *q, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void qlog(struct qmgr *q, int level, const char *fmt, ...)
{
    char line[2048];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (q->log)
        q->log(q->log_ctx, level, line);
}

/* ---- messages known to the queue manager, by queue id ---- */

static unsigned id_hash(const char *id)
{
    unsigned h = 5381;

    for (; *id; id++)
        h = h * 33 + (unsigned char)*id;
    return h % ID_HASH_SIZE;
}

static struct qm_msg *msg_find(struct qmgr *q, const char *id)
{
    struct qm_msg *m = q->hash[id_hash(id)];

    while (m && strcmp(m->id, id) != 0)
        m = m->hnext;
    return m;
}

/* Schedule a look at the spool, after delay_us; one at a time. */
static void feed_ask(struct qmgr *q, long delay_us)
{
    struct timeval tv = {0, delay_us};

    if (q->feed_asked || q->closing || q->draining)
        return;
    q->feed_asked = 1;
    evtimer_add(q->feed_ev, &tv);
}

static void msg_forget(struct qm_msg *m)
{
    struct qmgr *q = m->q;
    struct qm_msg **pp = &q->hash[id_hash(m->id)];

    while (*pp != m)
        pp = &(*pp)->hnext;
    *pp = m->hnext;
    TAILQ_REMOVE(&q->msgs, m, link);
    q->active--;
    spool_msg_free(m->sm);
    free(m->relayed);
    free(m);
    /*
     * A look at the spool walks past every message already in memory, so
     * it is worth it only when the last one left messages behind and
     * there is room for a batch of them; new mail wakes the feed itself.
     */
    if (q->spool_has_more && q->limit - q->active >= q->feed_batch)
        feed_ask(q, 0);
}

/* ---- spool writes: committed on the committer thread, seen here ---- */

struct commit_note {
    struct qm_msg *m;
    int status;
    int final; /* the message's last write */
    char why[256];
};

static void msg_maybe_finish(struct qm_msg *m);

static void commit_seen(void *arg)
{
    struct commit_note *n = arg;
    struct qm_msg *m = n->m;

    if (m->q->closing) {
        /* qmgr_free() frees the message; start nothing new now. */
        m->pending--;
        free(n);
        return;
    }
    if (n->status != 0)
        qlog(m->q, QMGR_LOG_WARNING, "%s: cannot update the queue file: %s",
             m->id, n->why);
    m->pending--;
    if (n->final)
        msg_forget(m);
    else
        msg_maybe_finish(m);
    free(n);
}

static void commit_done(void *ctx, const char *id, int status, const char *why)
{
    struct commit_note *n = ctx;

    (void)id;
    n->status = status;
    snprintf(n->why, sizeof(n->why), "%s", why ? why : "");
    qmgr_inbox_post(n->m->q->inbox, commit_seen, n);
}

static void msg_write(struct qm_msg *m, const struct spool_change *ch,
                      int final)
{
    struct commit_note *n = calloc(1, sizeof(*n));

    if (n == NULL)
        abort();
    n->m = m;
    n->final = final;
    m->pending++;
    if ((ch ? spool_submit_change(m->q->sp, m->id, ch, commit_done, n)
            : spool_submit_delete(m->q->sp, m->id, commit_done, n)) < 0) {
        /* The spool is closing: the message stays as it is on disk. */
        n->status = -1;
        snprintf(n->why, sizeof(n->why), "spool is shutting down");
        qmgr_inbox_post(m->q->inbox, commit_seen, n);
    }
}

/* ---- new mail: stored in the group commit, answered from the loop ---- */

struct submit_note {
    struct qmgr *q;
    qmgr_submit_fn *done; /* or NULL */
    void *ctx;
    const char *notice; /* a notice about message about: what kind */
    char about[SPOOL_ID_MAX + 1];
    int status;
    char id[SPOOL_ID_MAX + 1];
    char *origin; /* "uid=0 from=<S>", "client=NAME[ADDR]" */
    char why[256];
};

static void submit_seen(void *arg)
{
    struct submit_note *n = arg;
    struct qmgr *q = n->q;

    q->submitting--;
    if (n->status == 0 && n->notice) {
        qlog(q, QMGR_LOG_INFO, "%s: sender %s: %s", n->about, n->notice, n->id);
        q->stats.notices++;
        feed_ask(q, FEED_COALESCE_US);
    } else if (n->status == 0) {
        qlog(q, QMGR_LOG_INFO, "%s: %s", n->id, n->origin);
        q->stats.submitted++;
        feed_ask(q, FEED_COALESCE_US);
    } else if (n->notice) {
        qlog(q, QMGR_LOG_WARNING, "%s: sender %s not stored: %s", n->about,
             n->notice, n->why);
    } else {
        qlog(q, QMGR_LOG_WARNING, "%s: not stored: %s", n->origin, n->why);
    }
    if (n->done)
        n->done(n->ctx, n->status, n->id, n->why);
    free(n->origin);
    free(n);
}

static void submit_committed(void *ctx, struct spool_msg *m, int status,
                             const char *why)
{
    struct submit_note *n = ctx;

    n->status = status;
    snprintf(n->id, sizeof(n->id), "%s", m->id);
    snprintf(n->why, sizeof(n->why), "%s", why ? why : "");
    spool_msg_free(m);
    qmgr_inbox_post(n->q->inbox, submit_seen, n);
}

static void submit_store(struct qmgr *q, struct spool_msg *m,
                         struct submit_note *n)
{
    q->submitting++;
    if (spool_submit(q->sp, m, submit_committed, n) < 0) {
        spool_msg_free(m);
        n->status = -1;
        snprintf(n->why, sizeof(n->why), "the queue is shutting down");
        qmgr_inbox_post(q->inbox, submit_seen, n);
    }
}

static struct submit_note *submit_note_new(struct qmgr *q, const char *origin)
{
    struct submit_note *n = calloc(1, sizeof(*n));

    if (n == NULL || (n->origin = strdup(origin)) == NULL)
        abort();
    n->q = q;
    return n;
}

void qmgr_submit(struct qmgr *q, struct spool_msg *m, const char *origin,
                 qmgr_submit_fn *done, void *ctx)
{
    struct submit_note *n = submit_note_new(q, origin);

    n->done = done;
    n->ctx = ctx;
    submit_store(q, m, n);
}

/* ---- flush: deferred mail due now, dead destinations alive ---- */

static void dispatch(struct qmgr *q);

struct flush_job {
    struct qmgr *q;
    qmgr_flush_fn *done;
    void *ctx;
    long messages; /* changes submitted */
    long pending;  /* changes not yet committed */
    long failed;   /* of them, those that could not be written */
    char why[256]; /* the first reason */
};

static void flush_finish(struct flush_job *f)
{
    struct qmgr *q = f->q;

    q->submitting--;
    feed_ask(q, 0);
    if (f->failed)
        qlog(q, QMGR_LOG_WARNING,
             "flush: %ld of %ld deferred messages not made due: %s", f->failed,
             f->messages, f->why);
    if (f->done)
        f->done(f->ctx, f->messages - f->failed, f->failed ? f->why : NULL);
    free(f);
}

static void flush_seen(void *arg)
{
    struct flush_job *f = arg;

    if (--f->pending == 0)
        flush_finish(f);
}

/* Called from the committer's thread: only counts, then posts. */
static void flush_committed(void *ctx, const char *id, int status,
                            const char *why)
{
    struct flush_job *f = ctx;

    (void)id;
    if (status < 0) {
        if (__atomic_fetch_add(&f->failed, 1, __ATOMIC_SEQ_CST) == 0)
            snprintf(f->why, sizeof(f->why), "%s", why ? why : "unknown error");
    }
    qmgr_inbox_post(f->q->inbox, flush_seen, f);
}

/*
 * Does address (or a destination's next hop) belong to domain? A domain
 * written ".example.com" (ETRN's "@example.com") also takes in every
 * subdomain.
 */
static int in_domain(const char *name, const char *domain)
{
    const char *at = strrchr(name, '@');
    const char *d = at ? at + 1 : name;
    size_t dlen = strlen(d), len = strlen(domain);

    if (domain[0] != '.')
        return strcasecmp(d, domain) == 0;
    return strcasecmp(d, domain + 1) == 0 ||
           (dlen > len && strcasecmp(d + dlen - len, domain) == 0);
}

struct flush_scan {
    struct flush_job *f;
    const char *domain;
};

/* The destination that mail for address goes to comes back, if dead. */
static void flush_route(struct qmgr *q, const char *address)
{
    struct route_result r;
    struct core_transport *t;
    struct core_queue *cq;
    char why[256];

    if (route_resolve(q->routes, address, &r, why, sizeof(why)) < 0 ||
        (t = core_transport_find(q->core, r.transport)) == NULL)
        return;
    cq = core_queue_find(t, r.key + strlen(r.transport) + 1);
    if (cq != NULL && CORE_QUEUE_DEAD_P(cq))
        core_queue_flush(cq, now_ms());
    core_transport_resume(t);
}

static int flush_one(void *ctx, const struct spool_msg *env)
{
    struct flush_scan *fs = ctx;
    struct qmgr *q = fs->f->q;
    struct spool_change ch = {0};
    struct spool_msg *m;
    char why[256];
    int match = fs->domain == NULL;

    if (msg_find(q, env->id) != NULL)
        return 0; /* in memory: being delivered already */
    if (!match &&
        spool_get(q->sp, env->id, &m, SPOOL_GET_RCPTS, why, sizeof(why)) == 0) {
        for (uint32_t i = 0; i < m->nrcpt; i++) {
            if ((m->rcpt[i].status == SPOOL_RCPT_DEFERRED ||
                 m->rcpt[i].status == SPOOL_RCPT_PENDING) &&
                in_domain(m->rcpt[i].address, fs->domain)) {
                match = 1;
                flush_route(q, m->rcpt[i].address);
            }
        }
        spool_msg_free(m);
    }
    if (!match)
        return 0;
    ch.has_next_attempt = 1;
    ch.next_attempt = spool_now();
    fs->f->pending++;
    if (spool_submit_change(q->sp, env->id, &ch, flush_committed, fs->f) < 0)
        fs->f->pending--;
    else
        fs->f->messages++;
    return 0;
}

void qmgr_flush(struct qmgr *q, const char *domain, qmgr_flush_fn *done,
                void *ctx)
{
    struct flush_job *f = calloc(1, sizeof(*f));
    struct flush_scan fs = {f, domain && *domain ? domain : NULL};
    char why[256];

    if (f == NULL)
        abort();
    f->q = q;
    f->done = done;
    f->ctx = ctx;
    for (struct core_transport *t = q->core->transports; t; t = t->next) {
        struct core_queue *cq;

        if (fs.domain == NULL)
            core_transport_resume(t);
        TAILQ_FOREACH(cq, &t->queues, link)
        {
            const struct qm_dest *d = cq->ctx;

            if (CORE_QUEUE_DEAD_P(cq) &&
                (fs.domain == NULL || in_domain(d->route.nexthop, fs.domain) ||
                 in_domain(cq->key, fs.domain)))
                core_queue_flush(cq, now_ms());
        }
    }
    q->submitting++; /* busy until the changes are in */
    f->pending = 1;  /* this call's own */
    if (spool_list(q->sp, SPOOL_INDEX_DEFERRED, flush_one, &fs, why,
                   sizeof(why)) < 0)
        qlog(q, QMGR_LOG_WARNING, "flush: cannot read the queue: %s", why);
    qlog(q, QMGR_LOG_INFO, "flush%s%s: %ld deferred messages due now",
         fs.domain ? " " : "", fs.domain ? fs.domain : "", f->messages);
    dispatch(q);
    if (--f->pending == 0)
        flush_finish(f);
}

/* ---- recipient results ---- */

static enum spool_rcpt_status spool_status(enum deliver_status s)
{
    return s == DELIVER_OK      ? SPOOL_RCPT_DELIVERED
           : s == DELIVER_DEFER ? SPOOL_RCPT_DEFERRED
                                : SPOOL_RCPT_BOUNCED;
}

/* Log one recipient's outcome in the reference's form. */
static void log_result(struct qm_msg *m, uint32_t i, const char *relay,
                       int conn_use, const char *dsn, enum deliver_status st,
                       const char *text, double handoff, double conn_done)
{
    struct deliver_log_entry e = {0};
    char line[2048];

    e.queue_id = m->id;
    e.recipient = m->sm->rcpt[i].address;
    e.orig_recipient = m->sm->rcpt[i].orig;
    e.relay = relay;
    e.conn_use = conn_use;
    e.dsn = dsn;
    e.status = st;
    e.text = text;
    e.arrival = (double)m->sm->arrival / 1e6;
    e.active = m->active;
    e.handoff = handoff;
    e.conn_done = conn_done;
    e.done = now_sec();
    deliver_log_line(line, sizeof(line), &e);
    qlog(m->q, QMGR_LOG_INFO, "%s", line);
    m->q->stats.delivered += st == DELIVER_OK;
    m->q->stats.deferred += st == DELIVER_DEFER;
    m->q->stats.bounced += st == DELIVER_BOUNCE;
}

/* How an outcome came about, for the success notices (RFC 3461). */
enum how {
    HOW_DECIDED,  /* without a delivery: routing, DNS, a dead destination */
    HOW_FINAL,    /* delivered for good: LMTP, discard */
    HOW_SMTP,     /* relayed to a server without DSN: we report success */
    HOW_SMTP_DSN, /* relayed with NOTIFY: success is the server's to report */
};

/* Record outcomes of recipients (indexes idx) in memory and the spool. */
static void record(struct qm_msg *m, const uint64_t *idx, int n,
                   const struct deliver_rcpt_result *res,
                   const struct deliver_rcpt_result *same, enum how how)
{
    struct spool_result *out = calloc((size_t)n, sizeof(*out));
    struct spool_change ch = {0};
    char(*reason)[600] = calloc((size_t)n, sizeof(*reason));

    if (out == NULL || reason == NULL)
        abort();
    for (int k = 0; k < n; k++) {
        const struct deliver_rcpt_result *r = same ? same : &res[k];
        uint32_t i = (uint32_t)idx[k];

        snprintf(reason[k], sizeof(reason[k]), "%s %s", r->enhanced,
                 r->text ? r->text : "");
        out[k].rcpt = i;
        out[k].status = spool_status(r->status);
        out[k].code = r->code;
        out[k].reason = reason[k];
        m->sm->rcpt[i].status = out[k].status;
        m->sm->rcpt[i].code = r->code;
        free(m->sm->rcpt[i].reason);
        if ((m->sm->rcpt[i].reason = strdup(reason[k])) == NULL)
            abort();
        if (r->status == DELIVER_OK &&
            (m->sm->rcpt[i].notify & SPOOL_NOTIFY_SUCCESS)) {
            if (how == HOW_SMTP_DSN) {
                out[k].notified = SPOOL_NOTIFIED_SUCCESS;
                m->sm->rcpt[i].notified |= SPOOL_NOTIFIED_SUCCESS;
            }
            m->relayed[i] = how == HOW_SMTP;
        }
        if (r->status == DELIVER_DEFER && r->text)
            snprintf(m->last_reason, sizeof(m->last_reason), "%s", r->text);
    }
    ch.nresults = (uint32_t)n;
    ch.results = out;
    msg_write(m, &ch, 0); /* the change is copied */
    free(out);
    free(reason);
}

/* The same outcome for recipients decided without a delivery. */
static void decide_all(struct qm_msg *m, const uint64_t *idx, int n,
                       enum deliver_status st, const char *dsn,
                       const char *text, const char *relay)
{
    struct deliver_rcpt_result r = {0};

    r.status = st;
    snprintf(r.enhanced, sizeof(r.enhanced), "%s", dsn);
    r.text = (char *)text;
    for (int k = 0; k < n; k++)
        log_result(m, (uint32_t)idx[k], relay, 0, dsn, st, text, 0, 0);
    record(m, idx, n, NULL, &r, HOW_DECIDED);
}

/* ---- the end of a message's stay in core ---- */

/* The message-level line of an expiry, in the reference's form. */
static void msg_expired_log(struct qm_msg *m)
{
    qlog(m->q, QMGR_LOG_INFO, "%s: from=<%s>, status=expired, %s", m->id,
         m->sm->sender,
         m->sm->sender[0] ? "returned to sender" : "dropped (null sender)");
}

static uint32_t random_u32(void)
{
    uint32_t r;

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint32_t)random();
    return r;
}

/* Did the sender ask for this kind of notice (RFC 3461 NOTIFY)? */
static int notify_wants(unsigned notify, unsigned what)
{
    if (notify & SPOOL_NOTIFY_NEVER)
        return 0;
    /* No NOTIFY: failures, and delays when delay notices are on. */
    if (notify == 0)
        return what != SPOOL_NOTIFY_SUCCESS;
    return (notify & what) != 0;
}

/* Store one notice about m's recipients idx[0..n-1] for its sender. */
static void notice_send(struct qm_msg *m, enum qmgr_notice kind,
                        const uint32_t *idx, size_t n)
{
    static const char *const label[] = {"non-delivery notification",
                                        "delay notification",
                                        "delivery status notification"};
    struct qmgr *q = m->q;
    struct qmgr_notice_rcpt *r = calloc(n, sizeof(*r));
    struct qmgr_notice_params p = {q->hostname, spool_now(), 0,
                                   q->bounce_size_limit};
    struct spool_msg *nm = spool_msg_new();
    struct submit_note *note;

    if (r == NULL)
        abort();
    p.retry_until = m->sm->arrival + q->retry.lifetime;
    for (size_t k = 0; k < n; k++) {
        const struct spool_rcpt *sr = &m->sm->rcpt[idx[k]];

        r[k].address = sr->address;
        r[k].orcpt = sr->orcpt;
        r[k].reason = sr->reason;
        r[k].code = sr->code;
        r[k].relayed = m->relayed[idx[k]];
    }
    nm->sender = strdup("");
    nm->arrival = p.now;
    nm->body = qmgr_notice_format(&p, kind, m->sm, r, n, &nm->size);
    /* A notice is never the subject of another one. */
    spool_msg_add_rcpt(nm, m->sm->sender, NULL, SPOOL_NOTIFY_NEVER, NULL);
    free(r);
    note = submit_note_new(q, "");
    note->notice = label[kind];
    snprintf(note->about, sizeof(note->about), "%s", m->id);
    submit_store(q, nm, note);
}

/*
 * The notices m's sender is owed at the end of this pass through the
 * queue: failures (bounced, expired), successes the next hop will not
 * report, and once per message a delay warning after
 * delay_warning_time. Each recipient reported on gets its notified bit
 * in memory and, when the message stays (retry), in ch; a crash before
 * that is written sends the notice again, never loses it.
 */
static void notices(struct qm_msg *m, int retry, struct spool_change *ch,
                    struct spool_result *marks)
{
    struct spool_msg *sm = m->sm;
    uint32_t *idx = calloc(sm->nrcpt + 1, sizeof(*idx));
    static const struct {
        enum qmgr_notice kind;
        unsigned want, bit;
    } kinds[] = {
        {QMGR_NOTICE_FAILED, SPOOL_NOTIFY_FAILURE, SPOOL_NOTIFIED_FAILURE},
        {QMGR_NOTICE_DELAYED, SPOOL_NOTIFY_DELAY, SPOOL_NOTIFIED_DELAY},
        {QMGR_NOTICE_DELIVERED, SPOOL_NOTIFY_SUCCESS, SPOOL_NOTIFIED_SUCCESS},
    };
    int warned = 0, late;

    if (idx == NULL)
        abort();
    if (sm->sender[0] == 0) {
        free(idx);
        return; /* the null sender gets nothing: notices are not answered */
    }
    for (uint32_t i = 0; i < sm->nrcpt; i++)
        warned |= (sm->rcpt[i].notified & SPOOL_NOTIFIED_DELAY) != 0;
    late = retry && !warned && m->q->delay_warning > 0 &&
           spool_now() - sm->arrival >= m->q->delay_warning;
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n = 0;

        if (kinds[k].kind == QMGR_NOTICE_DELAYED && !late)
            continue;
        for (uint32_t i = 0; i < sm->nrcpt; i++) {
            struct spool_rcpt *r = &sm->rcpt[i];
            int owed = kinds[k].kind == QMGR_NOTICE_FAILED
                           ? r->status == SPOOL_RCPT_BOUNCED
                       : kinds[k].kind == QMGR_NOTICE_DELAYED
                           ? r->status == SPOOL_RCPT_DEFERRED ||
                                 r->status == SPOOL_RCPT_PENDING
                           : r->status == SPOOL_RCPT_DELIVERED;

            if (owed && !(r->notified & kinds[k].bit) &&
                notify_wants(r->notify, kinds[k].want))
                idx[n++] = i;
        }
        if (n == 0)
            continue;
        notice_send(m, kinds[k].kind, idx, n);
        for (size_t j = 0; j < n; j++) {
            sm->rcpt[idx[j]].notified |= kinds[k].bit;
            if (ch == NULL)
                continue;
            marks[ch->nresults] = (struct spool_result){
                idx[j], sm->rcpt[idx[j]].status, 0, NULL, kinds[k].bit, 1};
            ch->nresults++;
        }
    }
    if (ch != NULL)
        ch->results = marks;
    free(idx);
}

static void msg_maybe_finish(struct qm_msg *m)
{
    struct qmgr *q = m->q;
    struct spool_change ch = {0};
    int64_t now, next = 0;
    int open = 0;

    if (!m->core_done || m->pending > 0 || m->finishing)
        return;
    for (uint32_t i = 0; i < m->sm->nrcpt; i++)
        open += m->sm->rcpt[i].status == SPOOL_RCPT_DEFERRED ||
                m->sm->rcpt[i].status == SPOOL_RCPT_PENDING;
    now = spool_now();
    switch (qmgr_retry_decide(&q->retry, open > 0, m->sm->sender[0] == 0,
                              m->sm->arrival, now, &next)) {
    case QMGR_DONE:
        m->finishing = 1;
        notices(m, 0, NULL, NULL);
        qlog(q, QMGR_LOG_INFO, "%s: removed", m->id);
        q->stats.removed++;
        msg_write(m, NULL, 1);
        return;
    case QMGR_EXPIRE: {
        uint64_t *idx = calloc(m->sm->nrcpt, sizeof(*idx));
        int n = 0;
        char text[700];

        if (idx == NULL)
            abort();
        for (uint32_t i = 0; i < m->sm->nrcpt; i++)
            if (m->sm->rcpt[i].status == SPOOL_RCPT_DEFERRED ||
                m->sm->rcpt[i].status == SPOOL_RCPT_PENDING)
                idx[n++] = i;
        snprintf(text, sizeof(text), "message expired: %s",
                 m->last_reason[0] ? m->last_reason : "not delivered");
        msg_expired_log(m);
        decide_all(m, idx, n, DELIVER_BOUNCE, "4.4.7", text, "none");
        free(idx);
        return; /* finishes again once that is committed: DONE */
    }
    case QMGR_RETRY: {
        /* One mark per recipient at most: the kinds are disjoint. */
        struct spool_result *marks = calloc(m->sm->nrcpt + 1, sizeof(*marks));

        if (marks == NULL)
            abort();
        m->finishing = 1;
        notices(m, 1, &ch, marks);
        ch.has_state = 1;
        ch.state = SPOOL_DEFERRED;
        ch.keep_hold = 1; /* held while it was being delivered: stays */
        ch.has_next_attempt = 1;
        ch.next_attempt = now + qmgr_retry_jitter(next - now, random_u32());
        ch.has_attempts = 1;
        ch.attempts = m->sm->attempts + 1;
        q->stats.requeued++;
        msg_write(m, &ch, 1);
        free(marks);
        return;
    }
    }
}

/* ---- core/ callbacks ---- */

static void core_log_cb(void *ctx, enum core_log_level level, const char *text)
{
    struct qmgr *q = ctx;

    if (level != CORE_LOG_DEBUG)
        qlog(q, level == CORE_LOG_WARNING ? QMGR_LOG_WARNING : QMGR_LOG_INFO,
             "%s", text);
}

/* Mail for a dead destination waits without a connection attempt. */
static void defer_suspended(struct qm_msg *m, const uint64_t *idx, int n,
                            const char *reason)
{
    char text[700];

    snprintf(text, sizeof(text), "delivery temporarily suspended: %s",
             reason && *reason ? reason : "destination not reachable");
    decide_all(m, idx, n, DELIVER_DEFER, "4.4.1", text, "none");
}

static void entry_deferred_cb(void *ctx, struct core_entry *e,
                              const char *reason)
{
    (void)ctx;
    defer_suspended(e->peer->job->message->ctx, e->rcpt, e->nrcpt, reason);
}

static void message_done_cb(void *ctx, struct core_message *cm)
{
    struct qm_msg *m = cm->ctx;

    (void)ctx;
    m->cm = NULL;
    m->core_done = 1;
    msg_maybe_finish(m);
}

/* ---- loading ---- */

static struct core_queue *queue_for(struct qmgr *q,
                                    const struct route_result *r)
{
    struct core_transport *t = core_transport_find(q->core, r->transport);
    struct core_queue *cq;
    const char *key;

    if (t == NULL) {
        struct core_transport_params p;

        qmgr_core_params(q->conf, r->transport, &p);
        t = core_transport_create(q->core, r->transport, &p);
    }
    /* Queues live in their transport: the key without "transport:", so
     * that core/'s lines read "smtp:example.com: ..." as Postfix's do. */
    key = r->key + strlen(r->transport) + 1;
    if ((cq = core_queue_find(t, key)) == NULL) {
        struct qm_dest *d = calloc(1, sizeof(*d));

        if (d == NULL)
            abort();
        d->route = *r;
        d->route.address = NULL; /* the one field that points outside */
        cq = core_queue_create(t, key);
        cq->ctx = d;
    }
    return cq;
}

/* A recipient of a message found too old: returned with its last reason. */
static void expire_rcpt(struct qm_msg *m, uint32_t i)
{
    const char *last = m->sm->rcpt[i].reason;
    const char *sp = last ? strchr(last, ' ') : NULL;
    uint64_t one = i;
    char text[700];

    snprintf(text, sizeof(text), "message expired: %s",
             sp && sp[1] ? sp + 1 : "not delivered");
    decide_all(m, &one, 1, DELIVER_BOUNCE, "4.4.7", text, "none");
}

/*
 * Bring message id into memory: each recipient not yet final is routed
 * to its destination queue; or, with expire, returned to the sender at
 * once (a message found too old in any state, held ones included).
 */
static void msg_load(struct qmgr *q, const char *id, int expire)
{
    struct qm_msg *m = calloc(1, sizeof(*m));
    char why[512];
    uint64_t *bad;
    int nbad = 0;
    unsigned h;

    if (m == NULL)
        abort();
    if (spool_get(q->sp, id, &m->sm, SPOOL_GET_RCPTS | SPOOL_GET_BODY, why,
                  sizeof(why)) < 0) {
        qlog(q, QMGR_LOG_WARNING, "%s: cannot read: %s", id, why);
        free(m);
        return;
    }
    m->q = q;
    snprintf(m->id, sizeof(m->id), "%s", id);
    m->active = now_sec();
    if ((m->relayed = calloc(m->sm->nrcpt + 1, 1)) == NULL)
        abort();
    h = id_hash(m->id);
    m->hnext = q->hash[h];
    q->hash[h] = m;
    TAILQ_INSERT_TAIL(&q->msgs, m, link);
    q->active++;
    q->stats.loaded++;
    m->cm = core_message_create(q->core, ++q->next_id, now_ms(), m);
    bad = calloc(m->sm->nrcpt + 1, sizeof(*bad));
    if (bad == NULL)
        abort();
    if (expire)
        msg_expired_log(m);
    for (uint32_t i = 0; i < m->sm->nrcpt; i++) {
        struct route_result r;
        struct core_queue *cq;

        if (m->sm->rcpt[i].status == SPOOL_RCPT_DELIVERED ||
            m->sm->rcpt[i].status == SPOOL_RCPT_BOUNCED)
            continue;
        if (expire) {
            expire_rcpt(m, i);
            continue;
        }
        if (route_resolve(q->routes, m->sm->rcpt[i].address, &r, why,
                          sizeof(why)) < 0) {
            bad[nbad++] = i;
            continue;
        }
        cq = queue_for(q, &r);
        if (core_message_add(m->cm, cq, i) < 0) {
            uint64_t one = i;

            defer_suspended(m, &one, 1,
                            CORE_QUEUE_DEAD_P(cq)
                                ? cq->dead_reason
                                : cq->transport->suspend_reason);
        }
    }
    if (nbad > 0)
        decide_all(m, bad, nbad, DELIVER_BOUNCE, "5.1.3", "bad address syntax",
                   "none");
    free(bad);
    core_message_release(m->cm); /* may finish it at once */
}

/* The feed: incoming first, alternating with deferred mail that is due. */
struct feed_scan {
    struct qmgr *q;
    int64_t now;
    long room;
    long n;
    char (*ids)[SPOOL_ID_MAX + 1];
    int deferred; /* the deferred index: stop at the first not yet due */
};

/* From the index alone: a look walks past what is in memory cheaply. */
static int feed_collect(void *ctx, const char *id, int64_t when)
{
    struct feed_scan *fs = ctx;

    if (fs->deferred && when > fs->now)
        return 1; /* by due time: the rest are later still */
    if (msg_find(fs->q, id) == NULL)
        snprintf(fs->ids[fs->n++], SPOOL_ID_MAX + 1, "%s", id);
    return fs->n >= fs->room;
}

static void feed(struct qmgr *q)
{
    struct feed_scan in = {q, spool_now(), 0, 0, NULL, 0};
    struct feed_scan de = in;
    char why[256];
    long i, j;

    in.room = de.room = q->limit - q->active;
    if (in.room <= 0)
        return;
    in.ids = calloc((size_t)in.room, sizeof(*in.ids));
    de.ids = calloc((size_t)de.room, sizeof(*de.ids));
    if (in.ids == NULL || de.ids == NULL)
        abort();
    de.deferred = 1;
    if (spool_list_index(q->sp, SPOOL_INDEX_INCOMING, feed_collect, &in, why,
                         sizeof(why)) < 0 ||
        spool_list_index(q->sp, SPOOL_INDEX_DEFERRED, feed_collect, &de, why,
                         sizeof(why)) < 0)
        qlog(q, QMGR_LOG_WARNING, "cannot read the queue: %s", why);
    for (i = j = 0; (i < in.n || j < de.n) && q->active < q->limit;) {
        if (i < in.n)
            msg_load(q, in.ids[i++], 0);
        if (j < de.n && q->active < q->limit)
            msg_load(q, de.ids[j++], 0);
    }
    q->spool_has_more = in.n >= in.room || de.n >= de.room;
    free(in.ids);
    free(de.ids);
}

/*
 * Expiry in every state: messages past their lifetime that are not in
 * memory (deferred and not due, held, or waiting in incoming) are loaded
 * to be returned to their senders at once, as many as there is room for;
 * the rest at the next sweep. A lifetime of 0 means one attempt, which
 * the message's pass makes; the sweep leaves those alone.
 */
static int expire_collect(void *ctx, const struct spool_msg *sm)
{
    struct feed_scan *es = ctx;
    const struct qmgr_retry *r = &es->q->retry;
    int64_t lifetime = sm->sender[0] ? r->lifetime : r->bounce_lifetime;

    if (sm->state == SPOOL_CORRUPT || lifetime == 0 ||
        es->now - sm->arrival <= lifetime || msg_find(es->q, sm->id) != NULL)
        return 0;
    snprintf(es->ids[es->n++], SPOOL_ID_MAX + 1, "%s", sm->id);
    return es->n >= es->room;
}

static void expire_sweep(struct qmgr *q)
{
    struct feed_scan es = {q, spool_now(), q->limit - q->active, 0, NULL, 0};
    char why[256];

    if (es.room <= 0 || q->draining || q->closing)
        return;
    if ((es.ids = calloc((size_t)es.room, sizeof(*es.ids))) == NULL)
        abort();
    if (spool_list(q->sp, SPOOL_INDEX_ALL, expire_collect, &es, why,
                   sizeof(why)) < 0)
        qlog(q, QMGR_LOG_WARNING, "cannot read the queue: %s", why);
    for (long i = 0; i < es.n; i++)
        msg_load(q, es.ids[i], 1);
    free(es.ids);
}

/* ---- delivery ---- */

static void delivery_free(struct qm_delivery *d)
{
    LIST_REMOVE(d, link);
    free(d);
}

/*
 * Free a destination queue with nothing waiting, nothing in flight and no
 * state to remember (not dead, no rate delay running, no failures that a
 * success has not cleared: mail trickling to a dead site must still add
 * up to a dead destination): its route goes with it, and the next mail
 * for it starts at the initial window.
 */
static void dest_release(struct core_queue *cq)
{
    if (cq->busy == 0 && cq->todo_count == 0 && CORE_QUEUE_READY_P(cq) &&
        cq->fail_cohorts == 0) {
        free(cq->ctx);
        core_queue_free(cq);
    }
}

/* Dead destinations that came back idle, and any other idle queue. */
static void dest_sweep(struct qmgr *q)
{
    for (struct core_transport *t = q->core->transports; t; t = t->next) {
        struct core_queue *cq, *next;

        for (cq = TAILQ_FIRST(&t->queues); cq != NULL; cq = next) {
            next = TAILQ_NEXT(cq, link);
            dest_release(cq);
        }
    }
}

/* The entry of d is done: tell core/, then let its queue go if idle. */
static void delivery_entry_done(struct qm_delivery *d, enum core_hop hop,
                                const char *reason)
{
    struct core_queue *cq = d->e->peer->queue;

    core_entry_done(d->e, now_ms(), hop, reason);
    dest_release(cq);
}

static void delivery_done(void *ctx, struct deliver_result *res)
{
    struct qm_delivery *d = ctx;
    struct qmgr *q = d->q;
    struct qm_msg *m = d->m;
    double done = now_sec();
    double conn_done = res->hop_ok ? done - res->xfer_time : 0;

    d->session = NULL;
    for (int k = 0; k < d->e->nrcpt; k++) {
        const struct deliver_rcpt_result *r = &res->rcpt[k];

        log_result(m, (uint32_t)d->e->rcpt[k], res->relay, res->conn_use,
                   r->enhanced, r->status, r->text ? r->text : "", d->handoff,
                   conn_done);
    }
    record(m, d->e->rcpt, d->e->nrcpt, res->rcpt, NULL,
           d->dest->route.type != ROUTE_SMTP ? HOW_FINAL
           : res->dsn_passed                 ? HOW_SMTP_DSN
                                             : HOW_SMTP);
    if (res->transport_failed) {
        /* Its local socket is not there: the transport cannot work. */
        core_transport_suspend(d->e->peer->queue->transport, now_ms(),
                               q->transport_retry_ms, res->hop_reason);
        delivery_entry_done(d, CORE_HOP_NEUTRAL, res->hop_reason);
    } else {
        delivery_entry_done(d, res->hop_ok ? CORE_HOP_OK : CORE_HOP_FAIL,
                            res->hop_reason);
    }
    deliver_result_free(res);
    delivery_free(d);
    dispatch(q);
}

/* DNS gave no address: every recipient of the entry gets its answer. */
static void delivery_dns_failed(struct qm_delivery *d,
                                const struct dns_result *res)
{
    struct qmgr *q = d->q;
    int temp = res->status != DNS_PERMFAIL;

    decide_all(d->m, d->e->rcpt, d->e->nrcpt,
               temp ? DELIVER_DEFER : DELIVER_BOUNCE,
               res->dsn[0] ? res->dsn : (temp ? "4.4.3" : "5.4.4"),
               res->why && res->why[0] ? res->why : "no address found", "none");
    /* A name server that fails is the destination's trouble: negative. */
    delivery_entry_done(d, temp ? CORE_HOP_FAIL : CORE_HOP_OK, res->why);
    delivery_free(d);
    dispatch(q);
}

static void delivery_run(struct qm_delivery *d, const struct dns_result *res)
{
    struct qmgr *q = d->q;
    const struct route_result *r = &d->dest->route;
    struct qmgr_deliver_settings set;
    struct deliver_request req = {0};
    struct deliver_rcpt *rcpt = calloc((size_t)d->e->nrcpt, sizeof(*rcpt));
    struct deliver_addr *addrs = NULL;
    struct spool_msg *sm = d->m->sm;

    if (rcpt == NULL)
        abort();
    qmgr_deliver_settings(q->conf, r->transport, &set);
    for (int k = 0; k < d->e->nrcpt; k++) {
        const struct spool_rcpt *sr = &sm->rcpt[d->e->rcpt[k]];

        rcpt[k].address = sr->address;
        rcpt[k].orcpt = sr->orcpt;
        rcpt[k].notify = sr->notify;
    }
    req.proto = r->type == ROUTE_LMTP      ? DELIVER_LMTP
                : r->type == ROUTE_DISCARD ? DELIVER_DISCARD
                : r->type == ROUTE_ERROR   ? DELIVER_ERROR
                                           : DELIVER_SMTP;
    req.helo_name = set.helo_name;
    req.sender = sm->sender;
    req.envid = sm->envid;
    req.ret = sm->ret == SPOOL_RET_FULL ? 1 : sm->ret == SPOOL_RET_HDRS ? 2 : 0;
    req.rcpt = rcpt;
    req.nrcpt = (size_t)d->e->nrcpt;
    req.body = sm->body;
    req.size = (size_t)sm->size;
    req.session_limit = set.session_limit;
    req.timeouts = set.timeouts;
    req.reason = r->nexthop;
    if (res != NULL) {
        unsigned port = r->port ? r->port : r->type == ROUTE_LMTP ? 24 : 25;

        addrs = calloc(MAX_ADDRS, sizeof(*addrs));
        if (addrs == NULL)
            abort();
        req.addrs = addrs;
        req.naddrs =
            qmgr_addresses(res, port, set.address_limit, addrs, MAX_ADDRS);
    } else if (r->unix_path) {
        struct sockaddr_un *sun;

        addrs = calloc(1, sizeof(*addrs));
        if (addrs == NULL)
            abort();
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
    if (req.naddrs > 0 && set.cache.idle_ms > 0) {
        req.cache = q->cache;
        req.cache_key = r->key;
        req.cache_limits = set.cache;
    }
    d->session = deliver_start(q->base, &req, delivery_done, d);
    free(rcpt);
    free(addrs);
}

static void delivery_dns_done(void *ctx, struct dns_result *res)
{
    struct qm_delivery *d = ctx;

    d->dns_wait = 0;
    if (d->q->closing)
        delivery_free(d); /* the recipients stay as they are on disk */
    else if (res->status != DNS_OK)
        delivery_dns_failed(d, res);
    else
        delivery_run(d, res);
    dns_result_free(res);
}

static void delivery_start(struct qmgr *q, struct core_entry *e)
{
    struct qm_delivery *d = calloc(1, sizeof(*d));
    const struct route_result *r;

    if (d == NULL)
        abort();
    d->q = q;
    d->e = e;
    d->m = e->peer->job->message->ctx;
    d->dest = e->peer->queue->ctx;
    d->handoff = now_sec();
    LIST_INSERT_HEAD(&q->deliveries, d, link);
    r = &d->dest->route;
    if (r->type == ROUTE_DISCARD || r->type == ROUTE_ERROR || r->unix_path) {
        delivery_run(d, NULL);
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

static void dispatch(struct qmgr *q)
{
    struct core_entry *e;
    core_time_t next;
    struct timeval tv;

    if (q->closing || q->draining)
        return;
    while ((e = core_select(q->core, now_ms())) != NULL)
        delivery_start(q, e);
    next = core_next_timer(q->core);
    if (next != CORE_TIME_NEVER) {
        core_time_t wait = next - now_ms();

        if (wait < 0)
            wait = 0;
        tv.tv_sec = wait / 1000;
        tv.tv_usec = (wait % 1000) * 1000;
        evtimer_add(q->timer_ev, &tv);
    }
}

/* ---- events ---- */

static void feed_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    q->feed_asked = 0;
    if (q->draining)
        return;
    feed(q);
    dispatch(q);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    core_run_timers(q->core, now_ms());
    dispatch(q);
}

static void scan_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qmgr *q = arg;

    (void)fd;
    (void)what;
    dest_sweep(q);
    expire_sweep(q);
    feed_ask(q, 0);
}

/* The settings read once rather than per delivery: at start, on reload. */
static void settings_apply(struct qmgr *q)
{
    const struct conf *conf = q->conf;
    struct deliver_cache_params cp = {0};
    struct timeval scan;

    q->limit = conf_int(conf, NULL, "qmgr_message_active_limit");
    q->feed_batch = q->limit / 20 > 0 ? q->limit / 20 : 1;
    q->scan_delay_ms = conf_time_ms(conf, NULL, "queue_run_delay");
    qmgr_retry_params(conf, &q->retry);
    q->delay_warning = conf_time_ms(conf, NULL, "delay_warning_time") * 1000;
    q->transport_retry_ms = conf_time_ms(conf, NULL, "transport_retry_time");
    q->bounce_size_limit = (uint64_t)conf_int(conf, NULL, "bounce_size_limit");
    snprintf(q->hostname, sizeof(q->hostname), "%s",
             conf_str(conf, NULL, "myhostname"));
    /* One cache for every transport, with the global limits. */
    cp.idle_ms =
        (int)conf_time_ms(conf, NULL, "smtp_connection_cache_time_limit");
    cp.reuse_ms =
        (int)conf_time_ms(conf, NULL, "smtp_connection_reuse_time_limit");
    cp.reuse_count_limit =
        (int)conf_int(conf, NULL, "smtp_connection_reuse_count_limit");
    deliver_cache_params_set(q->cache, &cp);
    scan.tv_sec = q->scan_delay_ms / 1000;
    scan.tv_usec = (q->scan_delay_ms % 1000) * 1000;
    event_add(q->scan_ev, &scan);
}

struct qmgr *qmgr_create(struct event_base *base, const struct conf *conf,
                         struct spool *sp, const struct route_table *routes,
                         struct dns_resolver *dns, qmgr_log_fn *log, void *ctx)
{
    struct qmgr *q = calloc(1, sizeof(*q));
    /* core/ logs deaths and revivals itself: no queue callbacks. */
    struct core_callbacks cb = {core_log_cb, NULL, NULL, entry_deferred_cb,
                                message_done_cb};
    struct deliver_cache_params cp = {0};

    if (q == NULL)
        return NULL;
    q->base = base;
    q->conf = conf;
    q->sp = sp;
    q->routes = routes;
    q->dns = dns;
    q->log = log;
    q->log_ctx = ctx;
    TAILQ_INIT(&q->msgs);
    LIST_INIT(&q->deliveries);
    q->core = core_create(&cb, q);
    q->inbox = qmgr_inbox_create(base);
    q->cache = deliver_cache_create(base, &cp);
    q->feed_ev = event_new(base, -1, 0, feed_cb, q);
    q->timer_ev = evtimer_new(base, timer_cb, q);
    q->scan_ev = event_new(base, -1, EV_PERSIST, scan_cb, q);
    if (q->inbox == NULL || q->feed_ev == NULL || q->timer_ev == NULL ||
        q->scan_ev == NULL) {
        qmgr_free(q);
        return NULL;
    }
    settings_apply(q);
    feed_ask(q, 0);
    return q;
}

void qmgr_reload(struct qmgr *q, const struct conf *conf,
                 const struct route_table *routes)
{
    struct core_transport_params p;

    q->conf = conf;
    q->routes = routes;
    settings_apply(q);
    for (struct core_transport *t = q->core->transports; t; t = t->next) {
        qmgr_core_params(conf, t->name, &p);
        if (p.scheduler != t->scheduler)
            qlog(q, QMGR_LOG_WARNING,
                 "transport %s: the new scheduler takes effect when sluiced "
                 "restarts",
                 t->name);
        core_transport_update(t, &p);
    }
    /* A larger active limit or window may let more start now. */
    feed_ask(q, 0);
    dispatch(q);
}

void qmgr_wake(struct qmgr *q)
{
    feed_ask(q, FEED_COALESCE_US);
}

int qmgr_idle(const struct qmgr *q)
{
    /* Nothing in memory, and the last look left nothing behind. */
    return q->active == 0 && !q->spool_has_more && !q->feed_asked &&
           LIST_EMPTY(&q->deliveries);
}

void qmgr_stats(const struct qmgr *q, struct qmgr_stats *st)
{
    *st = q->stats;
    st->active = q->active;
    st->destinations = 0;
    for (const struct core_transport *t = q->core->transports; t; t = t->next)
        st->destinations += (long)t->queue_count;
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
    /* Agents stop at once; their recipients stay as they are on disk.
     * Deliveries waiting for DNS end when the resolver is freed. */
    for (d = LIST_FIRST(&q->deliveries); d != NULL; d = next) {
        next = LIST_NEXT(d, link);
        if (!d->dns_wait) {
            deliver_cancel(d->session);
            delivery_free(d);
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
        delivery_free(d);
    }
    /* Writes committed since qmgr_stop() reported here: let them land. */
    qmgr_inbox_free(q->inbox);
    q->inbox = NULL;
    if (q->core) {
        for (struct core_transport *t = q->core->transports; t; t = t->next) {
            struct core_queue *cq;

            TAILQ_FOREACH(cq, &t->queues, link)
            free(cq->ctx);
        }
        core_free(q->core);
    }
    while ((m = TAILQ_FIRST(&q->msgs)) != NULL) {
        TAILQ_REMOVE(&q->msgs, m, link);
        spool_msg_free(m->sm);
        free(m->relayed);
        free(m);
    }
    deliver_cache_free(q->cache);
    if (q->feed_ev)
        event_free(q->feed_ev);
    if (q->timer_ev)
        event_free(q->timer_ev);
    if (q->scan_ev)
        event_free(q->scan_ev);
    free(q);
}
