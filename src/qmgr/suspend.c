/*
 * NAME
 *	suspend 3 - the operator suspends and resumes a destination
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	int	qmgr_suspend(struct qmgr *q, const char *destination,
 *			int64_t duration_ms, struct util_buf *out,
 *			char *why, size_t whylen)
 *	int	qmgr_resume(struct qmgr *q, const char *destination,
 *			struct util_buf *out, char *why, size_t whylen)
 *	int	qmgr_resume_ask(struct qmgr *q, const char *destination,
 *			struct util_buf *out, char *why, size_t whylen,
 *			qmgr_resume_fn *fn, void *arg,
 *			struct qmgr_resume_wait **wait)
 *	void	qmgr_resume_cancel(struct qmgr_resume_wait *w)
 * DESCRIPTION
 *	`sluice suspend DESTINATION [DURATION]` stops deliveries to a
 *	destination that asked for a pause (a receiver in maintenance, a
 *	complaint): qmgr_suspend() finds every destination queue whose key
 *	or next hop is destination, in every transport; when there is none
 *	it routes postmaster@DESTINATION and makes that queue, so that a
 *	destination may be suspended before mail for it arrives. Each one
 *	is suspended (core_queue_suspend()) for duration_ms (0: until
 *	resumed), with the reason "by the operator": what waits for it is
 *	deferred ("delivery temporarily suspended: by the operator"), new
 *	mail for it is deferred at once, deliveries under way finish. It appends one line per
 *	queue, "suspended TRANSPORT:KEY ...", to out and returns 0; -1 with
 *	the reason in why when the destination is neither known nor
 *	routable.
 *
 *	qmgr_resume() ends the suspension of every queue of destination
 *	(found as qmgr_suspend() finds them) and makes the deferred mail for
 *	it due now, as a flush of that domain does: "resumed
 *	TRANSPORT:KEY" per queue. It returns -1 with the reason when no
 *	suspended queue matches.
 *
 *	qmgr_resume_ask() is the operator's resume (`sluice resume`): as
 *	qmgr_resume(), and in a cluster it succeeds as well when the
 *	cluster held destination suspended though this member had not
 *	applied it (another member suspended it and this one has not
 *	pulled it yet, or its queue here does not route): "resumed
 *	DESTINATION in cluster NAME". When only Redis can tell, it returns
 *	1 and answers later, fn(arg, 0 or -1, text), within
 *	cluster_redis_timeout, unless qmgr_resume_cancel(*wait) came
 *	first (the client left).
 *
 *	Suspensions live in the daemon's memory: a restart ends them. In a
 *	cluster (cluster_redis_url) both go to every member through Redis
 *	(qmgr/cluster.c, decision 103), and a member that starts gets the
 *	cluster's suspensions at its first pull.
 */

#include "qmgr/qmgr_impl.h"
#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define SUSPEND_REASON "by the operator"

/* Does queue cq belong to destination (its key or its next hop)? */
static int dest_matches(struct core_queue *cq, const char *destination)
{
    const struct qm_dest *d = core_queue_ctx(cq);

    return strcasecmp(core_queue_key(cq), destination) == 0 ||
           (d != NULL && strcasecmp(d->route.nexthop, destination) == 0);
}

static void suspend_queue(struct core_queue *cq, int64_t duration_ms,
                          struct util_buf *out)
{
    core_queue_suspend(cq, qm_now_ms(), duration_ms, SUSPEND_REASON);
    util_buf_printf(out, "suspended %s:%s",
                    core_transport_name(core_queue_transport(cq)),
                    core_queue_key(cq));
    if (duration_ms > 0)
        util_buf_printf(out, " for %llds\n",
                        (long long)((duration_ms + 999) / 1000));
    else
        util_buf_puts(out, " until resumed\n");
}

typedef void dest_fn(struct core_queue *cq, void *ctx);

/*
 * Call fn for every queue of destination: those whose key or next hop it
 * is, else the queue postmaster@DESTINATION routes to (made, with make).
 * Returns how many, or -1 with why when it does not route.
 */
static int dest_each(struct qmgr *q, const char *destination, int make,
                     dest_fn *fn, void *ctx, char *why, size_t whylen)
{
    struct core_transport *t = NULL;
    struct core_queue *cq;
    struct route_result r;
    char address[600];
    int found = 0;

    while ((t = core_transport_next(q->core, t)) != NULL) {
        cq = NULL;
        while ((cq = core_queue_next(t, cq)) != NULL) {
            if (dest_matches(cq, destination)) {
                fn(cq, ctx);
                found++;
            }
        }
    }
    if (found > 0)
        return found;
    snprintf(address, sizeof(address), "postmaster@%s", destination);
    if (route_resolve(q->routes, address, &r, why, whylen) < 0)
        return -1;
    if (make)
        cq = qm_dest_queue(q, &r);
    else if ((t = core_transport_find(q->core, r.transport)) == NULL ||
             (cq = core_queue_find(t, r.key.queue)) == NULL)
        return 0;
    fn(cq, ctx);
    return 1;
}

struct suspend_call {
    int64_t duration_ms;
    struct util_buf *out;
};

static void suspend_one(struct core_queue *cq, void *ctx)
{
    struct suspend_call *sc = ctx;

    suspend_queue(cq, sc->duration_ms, sc->out);
}

int qmgr_suspend(struct qmgr *q, const char *destination, int64_t duration_ms,
                 struct util_buf *out, char *why, size_t whylen)
{
    struct suspend_call sc = {duration_ms, out};

    if (dest_each(q, destination, 1, suspend_one, &sc, why, whylen) < 0)
        return -1;
    qm_cluster_suspended(q, destination, duration_ms);
    return 0;
}

struct resume_call {
    struct util_buf *out;
    int resumed;
};

static void resume_one(struct core_queue *cq, void *ctx)
{
    struct resume_call *rc = ctx;

    if (core_queue_resume(cq, qm_now_ms())) {
        util_buf_printf(rc->out, "resumed %s:%s\n",
                        core_transport_name(core_queue_transport(cq)),
                        core_queue_key(cq));
        rc->resumed++;
    }
}

static void resume_flushed(void *ctx, long messages, const char *why)
{
    (void)ctx;
    (void)messages;
    (void)why; /* the flush logs what it made due */
}

struct qmgr_resume_wait {
    qmgr_resume_fn *fn; /* NULL: answered already, or cancelled */
    void *arg;
    char dest[256], cluster[128];
};

static void resume_text(const struct qmgr_resume_wait *w, int held, char *text,
                        size_t len)
{
    if (held == 1)
        snprintf(text, len, "resumed %s in cluster %s\n", w->dest, w->cluster);
    else if (held == 0)
        snprintf(text, len, "%s: no suspended destination by that name",
                 w->dest);
    else
        snprintf(text, len,
                 "%s: no suspended destination by that name here, and Redis "
                 "did not answer (the resume goes to the cluster when it "
                 "does)",
                 w->dest);
}

/* Redis's answer: did the cluster hold it suspended? */
static void resume_held(void *arg, int held)
{
    struct qmgr_resume_wait *w = arg;
    char text[600];

    if (w->fn != NULL) {
        resume_text(w, held, text, sizeof(text));
        w->fn(w->arg, held == 1 ? 0 : -1, text);
    }
    free(w);
}

int qmgr_resume_ask(struct qmgr *q, const char *destination,
                    struct util_buf *out, char *why, size_t whylen,
                    qmgr_resume_fn *fn, void *arg,
                    struct qmgr_resume_wait **wait)
{
    struct qmgr_resume_wait *w = xcalloc(1, sizeof(*w));
    int held, rc;

    *wait = NULL;
    w->fn = fn;
    w->arg = arg;
    snprintf(w->dest, sizeof(w->dest), "%s", destination);
    snprintf(w->cluster, sizeof(w->cluster), "%s",
             conf_str(q->conf, NULL, CONF_cluster_name));
    /* asked before the resume is published, which deletes it */
    held = qm_cluster_held(q, destination, resume_held, w);
    rc = qmgr_resume(q, destination, out, why, whylen);
    if (held == -2 && rc < 0) {
        *wait = w;
        return 1;
    }
    if (rc < 0 && held == 1) {
        resume_text(w, 1, why, whylen);
        util_buf_puts(out, why);
        rc = 0;
    }
    if (held == -2)
        w->fn = NULL; /* answered now: resume_held() frees it */
    else
        free(w);
    return rc;
}

void qmgr_resume_cancel(struct qmgr_resume_wait *w)
{
    w->fn = NULL;
}

int qmgr_resume(struct qmgr *q, const char *destination, struct util_buf *out,
                char *why, size_t whylen)
{
    struct resume_call rc = {out, 0};
    struct smtp_node node;

    qm_cluster_resumed(q, destination); /* suspended elsewhere, maybe */
    if (dest_each(q, destination, 0, resume_one, &rc, why, whylen) < 0)
        return -1;
    if (rc.resumed == 0) {
        snprintf(why, whylen, "%s: no suspended destination by that name",
                 destination);
        return -1;
    }
    /* Its deferred mail goes now (a next hop that is not a domain, such
     * as "[10.0.0.1]:25", has no mail of its own to name). */
    if (smtp_node_parse(&node, destination) == 0)
        qmgr_flush(q, &node, resume_flushed, NULL);
    qm_dispatch(q);
    return 0;
}
