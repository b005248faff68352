/*
 * NAME
 *	outcome 3 - recipient outcomes: into memory, the spool and the log
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_outcome_log(struct qm_msg *m, uint32_t i,
 *			const char *transport, const char *relay,
 *			int conn_use, const char *dsn, enum deliver_status st,
 *			const char *text, const char *tls, double handoff,
 *			double conn_done)
 *	void	qm_outcome_record(struct qm_msg *m, const uint64_t *idx,
 *			int n, const struct deliver_rcpt_result *res,
 *			const struct deliver_rcpt_result *same, enum qm_how how,
 *			const char *tls)
 *	void	qm_outcome_decide(struct qm_msg *m, const uint64_t *idx,
 *			int n, enum deliver_status st, const char *dsn,
 *			const char *text, const char *relay)
 *	void	qm_outcome_suspended(struct qm_msg *m, const uint64_t *idx,
 *			int n, const char *reason)
 * DESCRIPTION
 *	qm_outcome_log() logs one recipient's outcome in the reference's
 *	form, with tls= when the delivery went over TLS (tls not NULL), and
 *	counts it for the metrics under its transport (NULL: decided
 *	without one).
 *	qm_outcome_record() records the outcomes of recipients idx (res[k]
 *	each, or same for all) in memory and in one spool change, with the
 *	delivery's TLS (tls, the tls= field's value, or NULL: none) for the
 *	notices.
 *	qm_outcome_decide() gives recipients decided without a delivery
 *	(routing, DNS, expiry) one outcome, logged and recorded.
 *	qm_outcome_suspended() defers recipients of a dead destination
 *	without a connection attempt.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static enum spool_rcpt_status spool_status(enum deliver_status s)
{
    return s == DELIVER_OK      ? SPOOL_RCPT_DELIVERED
           : s == DELIVER_DEFER ? SPOOL_RCPT_DEFERRED
                                : SPOOL_RCPT_BOUNCED;
}

/* Log one recipient's outcome in the reference's form. */
void qm_outcome_log(struct qm_msg *m, uint32_t i, const char *transport,
                    const char *relay, int conn_use, const char *dsn,
                    enum deliver_status st, const char *text, const char *tls,
                    double handoff, double conn_done)
{
    struct deliver_log_entry e = {0};
    char line[2048];

    e.queue_id = m->id;
    e.recipient = qm_rcpt_get(m, i)->address;
    e.orig_recipient = qm_rcpt_get(m, i)->orig;
    e.relay = relay;
    e.conn_use = conn_use;
    e.dsn = dsn;
    e.status = st;
    e.text = text;
    e.tls = tls;
    e.arrival = (double)m->sm->arrival / 1e6;
    e.active = m->active;
    e.handoff = handoff;
    e.conn_done = conn_done;
    e.done = qm_now_sec();
    deliver_log_line(line, sizeof(line), &e);
    /* A delivery's line is its agent's, as Postfix's smtp(8) writes it. */
    qm_log_as(m->q, transport ? transport : "qmgr", QMGR_LOG_INFO, "%s", line);
    m->q->stats.delivered += st == DELIVER_OK;
    m->q->stats.deferred += st == DELIVER_DEFER;
    m->q->stats.bounced += st == DELIVER_BOUNCE;
    qm_metrics_outcome(m->q, transport, st, e.done - e.arrival);
}

/* Record outcomes of recipients (indexes idx) in memory and the spool. */
void qm_outcome_record(struct qm_msg *m, const uint64_t *idx, int n,
                       const struct deliver_rcpt_result *res,
                       const struct deliver_rcpt_result *same, enum qm_how how,
                       const char *tls)
{
    struct spool_result *out = xcalloc((size_t)n, sizeof(*out));
    struct spool_change ch = {0};
    char(*reason)[600] = xcalloc((size_t)n, sizeof(*reason));

    for (int k = 0; k < n; k++) {
        const struct deliver_rcpt_result *r = same ? same : &res[k];
        uint32_t i = (uint32_t)idx[k];

        snprintf(reason[k], sizeof(reason[k]), "%s %s", r->enhanced,
                 r->text ? r->text : "");
        out[k].rcpt = i;
        out[k].status = spool_status(r->status);
        out[k].code = r->code;
        out[k].reason = reason[k];
        out[k].tls = tls;
        if (r->status == DELIVER_OK &&
            (qm_rcpt_get(m, i)->notify & SPOOL_NOTIFY_SUCCESS))
            out[k].notified = how == QM_HOW_SMTP_DSN ? SPOOL_NOTIFIED_SUCCESS
                              : how == QM_HOW_SMTP   ? SPOOL_NOTIFIED_RELAYED
                                                     : 0;
        if (r->status == DELIVER_DEFER && r->text)
            snprintf(m->last_reason, sizeof(m->last_reason), "%s", r->text);
        m->deferrals += r->status == DELIVER_DEFER;
    }
    ch.nresults = (uint32_t)n;
    ch.results = out;
    qm_message_write(m, &ch, 0); /* the change is copied */
    for (int k = 0; k < n; k++)
        qm_rcpt_decided(m, (uint32_t)idx[k]);
    free(out);
    free(reason);
}

/* The same outcome for recipients decided without a delivery. */
void qm_outcome_decide(struct qm_msg *m, const uint64_t *idx, int n,
                       enum deliver_status st, const char *dsn,
                       const char *text, const char *relay)
{
    struct deliver_rcpt_result r = {0};

    r.status = st;
    snprintf(r.enhanced, sizeof(r.enhanced), "%s", dsn);
    r.text = (char *)text;
    for (int k = 0; k < n; k++)
        qm_outcome_log(m, (uint32_t)idx[k], NULL, relay, 0, dsn, st, text, NULL,
                       0, 0);
    qm_outcome_record(m, idx, n, NULL, &r, QM_HOW_DECIDED, NULL);
}

/* Mail for a dead destination waits without a connection attempt. */
void qm_outcome_suspended(struct qm_msg *m, const uint64_t *idx, int n,
                          const char *reason)
{
    char text[700];

    snprintf(text, sizeof(text), "delivery temporarily suspended: %s",
             reason && *reason ? reason : "destination not reachable");
    qm_outcome_decide(m, idx, n, DELIVER_DEFER, "4.4.1", text, "none");
}
