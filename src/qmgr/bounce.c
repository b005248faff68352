/*
 * NAME
 *	bounce 3 - the notices a sender is owed (RFC 3464), and storing them
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_bounce_notices(struct qm_msg *m, int retry,
 *			struct spool_change *ch, struct spool_result *marks)
 * DESCRIPTION
 *	qm_bounce_notices() sends m's sender the notices it is owed at the
 *	end of a pass (notice.c formats them), and marks the recipients
 *	they cover.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    struct qmgr_notice_rcpt *r = xcalloc(n, sizeof(*r));
    struct qmgr_notice_params p = {q->hostname, spool_now(), 0,
                                   q->bounce_size_limit};
    struct spool_msg *nm = spool_msg_new();
    char why[512];

    p.retry_until = m->sm->arrival + q->retry.lifetime;
    for (size_t k = 0; k < n; k++) {
        const struct spool_rcpt *sr = &m->sm->rcpt[idx[k]];

        r[k].address = sr->address;
        r[k].orcpt = sr->orcpt;
        r[k].reason = sr->reason;
        r[k].code = sr->code;
        r[k].relayed = m->relayed[idx[k]];
    }
    nm->sender = xstrdup("");
    nm->arrival = p.now;
    /* The original goes into the notice; without it, the notice still
     * goes, with its headers and text only. */
    if (qm_message_body(m, why, sizeof(why)) == NULL)
        qm_log(q, QMGR_LOG_WARNING,
               "%s: cannot read the message body for the %s: %s", m->id,
               label[kind], why);
    nm->body = qmgr_notice_format(&p, kind, m->sm, r, n, &nm->size);
    qm_message_body_idle(m);
    /* A notice is never the subject of another one. */
    spool_msg_add_rcpt(nm, m->sm->sender, NULL, SPOOL_NOTIFY_NEVER, NULL);
    free(r);
    qm_submit_notice(q, nm, label[kind], m->id);
}

/*
 * The notices m's sender is owed at the end of this pass through the
 * queue: failures (bounced, expired), successes the next hop will not
 * report, and once per message a delay warning after
 * delay_warning_time. Each recipient reported on gets its notified bit
 * in memory and, when the message stays (retry), in ch; a crash before
 * that is written sends the notice again, never loses it.
 */
void qm_bounce_notices(struct qm_msg *m, int retry, struct spool_change *ch,
                       struct spool_result *marks)
{
    struct spool_msg *sm = m->sm;
    uint32_t *idx = xcalloc(sm->nrcpt + 1, sizeof(*idx));
    static const struct {
        enum qmgr_notice kind;
        unsigned want, bit;
    } kinds[] = {
        {QMGR_NOTICE_FAILED, SPOOL_NOTIFY_FAILURE, SPOOL_NOTIFIED_FAILURE},
        {QMGR_NOTICE_DELAYED, SPOOL_NOTIFY_DELAY, SPOOL_NOTIFIED_DELAY},
        {QMGR_NOTICE_DELIVERED, SPOOL_NOTIFY_SUCCESS, SPOOL_NOTIFIED_SUCCESS},
    };
    int warned = 0, late;

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
