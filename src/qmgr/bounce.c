/*
 * NAME
 *	bounce 3 - the notices a sender is owed (RFC 3464), and storing them
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	int	qm_bounce_census(struct qm_msg *m, struct qm_census *c,
 *			char *why, size_t whylen)
 *	void	qm_bounce_notices(struct qm_msg *m, struct qm_census *c,
 *			int retry, struct spool_change *ch,
 *			struct spool_result **marks)
 *	void	qm_bounce_census_free(struct qm_census *c)
 * DESCRIPTION
 *	At the end of a pass most of a message's recipients are no longer
 *	in memory (rcpt.c): qm_bounce_census() reads them back from the
 *	spool, where every outcome of the pass is committed by then, and
 *	counts those still open (deferred or never tried) and gathers, per
 *	kind of notice, the recipients one is owed for. It returns -1 with
 *	the reason when the spool cannot give them.
 *
 *	qm_bounce_notices() sends m's sender the notices the census found
 *	owed (notice.c formats them), and marks the recipients they cover:
 *	with ch, the marks go into that change (*marks is the array they
 *	live in, for the caller to free once ch is submitted).
 *	qm_bounce_census_free() frees what the census gathered.
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

/* A recipient owed a notice of this kind, in the census. */
static void owed_add(struct qm_owed *o, uint32_t i, struct spool_rcpt *r)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? o->cap * 2 : 4;
        o->idx = xrealloc(o->idx, o->cap * sizeof(*o->idx));
        o->r = xrealloc(o->r, o->cap * sizeof(*o->r));
    }
    o->idx[o->n] = i;
    /* The strings are taken from the spool's record: freed with c. */
    o->r[o->n] =
        (struct qmgr_notice_rcpt){r->address,
                                  r->orcpt,
                                  r->reason,
                                  r->code,
                                  (r->notified & SPOOL_NOTIFIED_RELAYED) != 0,
                                  r->tls};
    r->address = r->orcpt = r->reason = r->tls = NULL;
    o->n++;
}

static const struct {
    enum qmgr_notice kind;
    unsigned want, bit;
} kinds[] = {
    {QMGR_NOTICE_FAILED, SPOOL_NOTIFY_FAILURE, SPOOL_NOTIFIED_FAILURE},
    {QMGR_NOTICE_DELAYED, SPOOL_NOTIFY_DELAY, SPOOL_NOTIFIED_DELAY},
    {QMGR_NOTICE_DELIVERED, SPOOL_NOTIFY_SUCCESS, SPOOL_NOTIFIED_SUCCESS},
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Which notice, if any, recipient r is owed now (its kinds[] index). */
static int rcpt_owed(const struct qm_census *c, const struct spool_rcpt *r)
{
    for (size_t k = 0; k < NKINDS; k++) {
        int owed = kinds[k].kind == QMGR_NOTICE_FAILED
                       ? r->status == SPOOL_RCPT_BOUNCED
                   : kinds[k].kind == QMGR_NOTICE_DELAYED
                       ? c->delays && (r->status == SPOOL_RCPT_DEFERRED ||
                                       r->status == SPOOL_RCPT_PENDING)
                       : r->status == SPOOL_RCPT_DELIVERED;

        if (owed && !(r->notified & kinds[k].bit) &&
            notify_wants(r->notify, kinds[k].want))
            return (int)k;
    }
    return -1;
}

static void census_visit(void *ctx, uint32_t i, struct spool_rcpt *r)
{
    struct qm_census *c = ctx;
    int k;

    c->open +=
        r->status == SPOOL_RCPT_DEFERRED || r->status == SPOOL_RCPT_PENDING;
    c->warned |= (r->notified & SPOOL_NOTIFIED_DELAY) != 0;
    if (c->notices && (k = rcpt_owed(c, r)) >= 0)
        owed_add(&c->owed[k], i, r);
}

int qm_bounce_census(struct qm_msg *m, struct qm_census *c, char *why,
                     size_t whylen)
{
    struct qmgr *q = m->q;

    memset(c, 0, sizeof(*c));
    /* The null sender gets nothing: notices are not answered. */
    c->notices = m->sm->sender[0] != 0;
    /* Delay notices only once the message is old enough for one. */
    c->delays = q->delay_warning > 0 &&
                spool_now() - m->sm->arrival >= q->delay_warning;
    if (qm_rcpt_walk(m, census_visit, c, why, whylen) < 0) {
        qm_bounce_census_free(c);
        return -1;
    }
    return 0;
}

void qm_bounce_census_free(struct qm_census *c)
{
    for (size_t k = 0; k < NKINDS; k++) {
        for (size_t j = 0; j < c->owed[k].n; j++) {
            free((char *)c->owed[k].r[j].address);
            free((char *)c->owed[k].r[j].orcpt);
            free((char *)c->owed[k].r[j].reason);
            free((char *)c->owed[k].r[j].tls);
        }
        free(c->owed[k].idx);
        free(c->owed[k].r);
    }
    memset(c, 0, sizeof(*c));
}

/* Store one notice about m's recipients o for its sender. */
static void notice_send(struct qm_msg *m, enum qmgr_notice kind,
                        const struct qm_owed *o)
{
    static const char *const label[] = {"non-delivery notification",
                                        "delay notification",
                                        "delivery status notification"};
    struct qmgr *q = m->q;
    struct qmgr_notice_params p = {q->hostname, spool_now(), 0,
                                   q->bounce_size_limit};
    struct spool_msg *nm = spool_msg_new();
    char why[512];

    p.retry_until = m->sm->arrival + q->retry.lifetime;
    nm->sender = xstrdup("");
    nm->arrival = p.now;
    /* SMTPUTF8 stays with the mail it was asked for, notices included
     * (the reference keeps the flag when mail is bounced) */
    nm->smtputf8 = m->sm->smtputf8;
    /* The original goes into the notice; without it, the notice still
     * goes, with its headers and text only. */
    if (qm_message_body(m, why, sizeof(why)) == NULL)
        qm_log(q, QMGR_LOG_WARNING,
               "%s: cannot read the message body for the %s: %s", m->id,
               label[kind], why);
    nm->body = qmgr_notice_format(&p, kind, m->sm, o->r, o->n, &nm->size);
    qm_message_body_idle(m);
    /* A notice is never the subject of another one. */
    spool_msg_add_rcpt(nm, m->sm->sender, NULL, SPOOL_NOTIFY_NEVER, NULL);
    qm_submit_notice(q, nm, label[kind], m->id);
}

/*
 * The notices m's sender is owed at the end of this pass through the
 * queue: failures (bounced, expired), successes the next hop will not
 * report, and once per message a delay warning after
 * delay_warning_time. Each recipient reported on gets its notified bit
 * in ch when the message stays (retry); a crash before that is written
 * sends the notice again, never loses it.
 */
void qm_bounce_notices(struct qm_msg *m, struct qm_census *c, int retry,
                       struct spool_change *ch, struct spool_result **marks)
{
    size_t total = 0;

    for (size_t k = 0; k < NKINDS; k++)
        total += c->owed[k].n;
    if (ch != NULL)
        *marks = xcalloc(total + 1, sizeof(**marks));
    for (size_t k = 0; k < NKINDS; k++) {
        const struct qm_owed *o = &c->owed[k];

        if (o->n == 0 ||
            (kinds[k].kind == QMGR_NOTICE_DELAYED && (!retry || c->warned)))
            continue;
        notice_send(m, kinds[k].kind, o);
        for (size_t j = 0; j < o->n && ch != NULL; j++)
            (*marks)[ch->nresults++] = (struct spool_result){
                o->idx[j], 0, 0, NULL, kinds[k].bit, 1, NULL};
    }
    if (ch != NULL)
        ch->results = *marks;
}
