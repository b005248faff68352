/*
 * NAME
 *	flush 3 - ETRN and "sluice flush": deferred mail due now, dead destinations alive
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
#include "smtp/smtp.h"
 *
 *	void	qmgr_flush(struct qmgr *q, const struct smtp_node *node,
 *			qmgr_flush_fn *done, void *ctx)
 * DESCRIPTION
 *	See qmgr.h. Under the zmailer scheduler a flush also releases the
 *	node's queueonly threads (qm_zmailer_flush()).
 */

#include "qmgr/qmgr_impl.h"
#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    qm_feed_ask(q, 0);
    if (f->failed)
        qm_log(q, QMGR_LOG_WARNING,
               "flush: %ld of %ld deferred messages not made due: %s",
               f->failed, f->messages, f->why);
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

struct flush_scan {
    struct flush_job *f;
    const struct smtp_node *node; /* NULL: every deferred message */
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
    cq = core_queue_find(t, r.key.queue);
    if (cq != NULL && core_queue_dead(cq))
        core_queue_flush(cq, qm_now_ms());
    core_transport_resume(t);
}

static int flush_one(void *ctx, const struct spool_msg *env)
{
    struct flush_scan *fs = ctx;
    struct qmgr *q = fs->f->q;
    struct spool_change ch = {0};
    struct spool_msg *m;
    char why[256];
    int match = fs->node == NULL;

    if (qm_message_find(q, env->id) != NULL)
        return 0; /* in memory: being delivered already */
    if (!match &&
        spool_get(q->sp, env->id, &m, SPOOL_GET_RCPTS, why, sizeof(why)) == 0) {
        for (uint32_t i = 0; i < m->nrcpt; i++) {
            if ((m->rcpt[i].status == SPOOL_RCPT_DEFERRED ||
                 m->rcpt[i].status == SPOOL_RCPT_PENDING) &&
                smtp_node_match(fs->node, m->rcpt[i].address)) {
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

void qmgr_flush(struct qmgr *q, const struct smtp_node *node,
                qmgr_flush_fn *done, void *ctx)
{
    struct flush_job *f = xcalloc(1, sizeof(*f));
    struct flush_scan fs = {f, node};
    struct core_transport *t;
    char why[256], text[SMTP_NODE_TEXT_MAX] = "";

    f->q = q;
    f->done = done;
    f->ctx = ctx;
    for (t = core_transport_next(q->core, NULL); t != NULL;
         t = core_transport_next(q->core, t)) {
        struct core_queue *cq = NULL;

        if (node == NULL)
            core_transport_resume(t);
        while ((cq = core_queue_next(t, cq)) != NULL) {
            const struct qm_dest *d = core_queue_ctx(cq);

            if (core_queue_dead(cq) &&
                (node == NULL || smtp_node_match(node, d->route.nexthop) ||
                 smtp_node_match(node, core_queue_key(cq))))
                core_queue_flush(cq, qm_now_ms());
        }
    }
    qm_zmailer_flush(q, node); /* queueonly threads of the node start */
    q->submitting++;           /* busy until the changes are in */
    f->pending = 1;            /* this call's own */
    if (spool_list(q->sp, SPOOL_INDEX_DEFERRED, flush_one, &fs, why,
                   sizeof(why)) < 0)
        qm_log(q, QMGR_LOG_WARNING, "flush: cannot read the queue: %s", why);
    if (node != NULL)
        smtp_node_format(node, text, sizeof(text));
    qm_log(q, QMGR_LOG_INFO, "flush%s%s: %ld deferred messages due now",
           node ? " " : "", text, f->messages);
    qm_dispatch(q);
    if (--f->pending == 0)
        flush_finish(f);
}
