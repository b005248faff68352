/*
 * NAME
 *	rcpt 3 - a message's recipients in memory: batches read from the spool
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	long	qm_rcpt_read(struct qm_msg *m, long max)
 *	struct spool_rcpt *qm_rcpt_get(struct qm_msg *m, uint32_t i)
 *	void	qm_rcpt_decided(struct qm_msg *m, uint32_t i)
 *	long	qm_rcpt_expire(struct qm_msg *m, const char *text)
 *	int	qm_rcpt_walk(struct qm_msg *m, qm_rcpt_visit_fn *visit,
 *			void *ctx, char *why, size_t whylen)
 *	void	qm_rcpt_free(struct qm_msg *m)
 * DESCRIPTION
 *	"Dealing with memory resource limits" in the seed: a message in
 *	the active queue does not hold all its recipients. They come from
 *	the spool in batches, as many as core/ allows (its message_more
 *	callback and core_message_read_limit()), and a batch leaves memory
 *	once each of its recipients that was handed to core/ has an
 *	outcome written. What the queue manager keeps of a message between
 *	batches is its envelope and where the next batch starts; the
 *	spool holds the rest, so memory follows the seed's bounds on
 *	in-core recipients and not the size of a mailing list.
 *
 *	qm_rcpt_read() reads the next batch of up to max recipients of m:
 *	each one not yet final is routed and added to core/ (bad address
 *	syntax: bounced at once; a dead destination: deferred), and core/
 *	learns how many are still unread. It returns how many records were
 *	read; 0 when there are none left or the spool cannot give them
 *	(logged; the rest wait for the message's next pass, as they would
 *	after a crash).
 *
 *	qm_rcpt_get() finds recipient i among the batches in memory; a
 *	recipient asked for that is not there is a bug (panic).
 *	qm_rcpt_decided() says recipient i has its outcome for this pass:
 *	the last one of a batch lets the batch go.
 *
 *	qm_rcpt_expire() returns every recipient of m still open (deferred
 *	or not yet tried) to the sender as expired (4.4.7, "message
 *	expired: " and text, or each recipient's own last reason with text
 *	NULL), a batch at a time. It returns how many it decided, or -1
 *	when the spool cannot give them.
 *
 *	qm_rcpt_walk() calls visit for every recipient of m, as the spool
 *	has it now, a batch at a time; visit may take the strings it wants
 *	to keep (and leave NULL behind). It is how the end of a pass learns
 *	what happened to recipients no longer in memory.
 *
 *	qm_rcpt_free() lets every batch of m go.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WALK_BATCH 1000 /* recipients per read when walking or expiring */

/* Recipients first .. first + count - 1 of a message, from one read. */
struct qm_batch {
    uint32_t first;
    uint32_t count;
    uint32_t waiting;        /* of them: handed out, outcome not written */
    unsigned char *awaiting; /* per recipient: is it one of those */
    struct spool_rcpt *r;
};

static void batch_free(struct qm_batch *b)
{
    spool_rcpts_free(b->r, b->count);
    free(b->awaiting);
    free(b);
}

/* The position of the batch holding recipient i, or where one would go. */
static int batch_find(const struct qm_msg *m, uint32_t i)
{
    int lo = 0, hi = m->nbatches;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (m->batches[mid]->first + m->batches[mid]->count <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static struct qm_batch *batch_add(struct qm_msg *m, uint32_t first,
                                  struct spool_rcpt *r, uint32_t count)
{
    struct qm_batch *b = xcalloc(1, sizeof(*b));
    int at = batch_find(m, first);

    b->first = first;
    b->count = count;
    b->r = r;
    b->awaiting = xcalloc(count, 1);
    if (m->nbatches == m->batch_cap) {
        m->batch_cap = m->batch_cap ? m->batch_cap * 2 : 4;
        m->batches =
            xrealloc(m->batches, (size_t)m->batch_cap * sizeof(*m->batches));
    }
    memmove(&m->batches[at + 1], &m->batches[at],
            (size_t)(m->nbatches - at) * sizeof(*m->batches));
    m->batches[at] = b;
    m->nbatches++;
    return b;
}

/* A batch none of whose recipients waits for an outcome leaves memory. */
static void batch_check(struct qm_msg *m, struct qm_batch *b)
{
    int at;

    if (b->waiting > 0)
        return;
    at = batch_find(m, b->first);
    if (at >= m->nbatches || m->batches[at] != b)
        util_panic("%s: batch at recipient %u is not in the message's list",
                   m->id, b->first);
    memmove(&m->batches[at], &m->batches[at + 1],
            (size_t)(m->nbatches - at - 1) * sizeof(*m->batches));
    m->nbatches--;
    batch_free(b);
}

static struct qm_batch *batch_of(struct qm_msg *m, uint32_t i)
{
    int at = batch_find(m, i);

    if (at >= m->nbatches || m->batches[at]->first > i)
        util_panic("%s: recipient %u is not in memory", m->id, i);
    return m->batches[at];
}

struct spool_rcpt *qm_rcpt_get(struct qm_msg *m, uint32_t i)
{
    struct qm_batch *b = batch_of(m, i);

    return &b->r[i - b->first];
}

static void rcpt_await(struct qm_msg *m, struct qm_batch *b, uint32_t i)
{
    b->awaiting[i - b->first] = 1;
    b->waiting++;
    m->q->recipients++;
}

void qm_rcpt_decided(struct qm_msg *m, uint32_t i)
{
    struct qm_batch *b = batch_of(m, i);

    if (!b->awaiting[i - b->first])
        util_panic("%s: recipient %u decided twice or never handed out", m->id,
                   i);
    b->awaiting[i - b->first] = 0;
    b->waiting--;
    m->q->recipients--;
    /* Nothing reads it again in this pass: the spool has its outcome. */
    spool_rcpt_clear(&b->r[i - b->first]);
    batch_check(m, b);
}

static int rcpt_final(const struct spool_rcpt *r)
{
    return r->status == SPOOL_RCPT_DELIVERED || r->status == SPOOL_RCPT_BOUNCED;
}

/* Read up to max recipients of m from where the last read stopped. */
static struct qm_batch *batch_read(struct qm_msg *m, uint32_t from, long max)
{
    struct spool_rcpt *r;
    uint32_t n;
    char why[512];

    if (spool_rcpts(m->q->sp, m->id, from, (uint32_t)max, &r, &n, why,
                    sizeof(why)) < 0) {
        qm_log(m->q, QMGR_LOG_WARNING, "%s: cannot read recipients: %s", m->id,
               why);
        return NULL;
    }
    if (n == 0) {
        qm_log(m->q, QMGR_LOG_WARNING,
               "%s: cannot read recipients: %u of %u are missing", m->id,
               m->sm->nrcpt - from, m->sm->nrcpt);
        free(r);
        return NULL;
    }
    return batch_add(m, from, r, n);
}

/* Route recipient i of batch b to its destination queue in core/. */
static void rcpt_route(struct qm_msg *m, struct qm_batch *b, uint32_t i,
                       uint64_t *bad, int *nbad)
{
    struct route_result rr;
    struct core_queue *cq;
    uint64_t one = i;
    char why[512];

    rcpt_await(m, b, i);
    if (route_resolve(m->q->routes, b->r[i - b->first].address, &rr, why,
                      sizeof(why)) < 0) {
        bad[(*nbad)++] = i;
        return;
    }
    cq = qm_dest_queue(m->q, &rr);
    if (core_message_add(m->cm, cq, i) < 0)
        qm_outcome_suspended(m, &one, 1, core_queue_refusal(cq));
}

long qm_rcpt_read(struct qm_msg *m, long max)
{
    struct qm_batch *b;
    uint64_t *bad;
    uint32_t n;
    int nbad = 0;

    if (max <= 0 || m->cm == NULL || m->next_read >= m->sm->nrcpt)
        return 0;
    if ((b = batch_read(m, m->next_read, max)) == NULL) {
        /* The rest wait for the next pass: open in the spool. */
        m->next_read = m->sm->nrcpt;
        core_message_unread_set(m->cm, 0);
        return 0;
    }
    n = b->count;
    m->next_read += n;
    bad = xcalloc(n, sizeof(*bad));
    b->waiting++; /* held while the batch is handed out */
    for (uint32_t k = 0; k < n; k++)
        if (!rcpt_final(&b->r[k]))
            rcpt_route(m, b, b->first + k, bad, &nbad);
        else
            spool_rcpt_clear(&b->r[k]);
    if (nbad > 0)
        qm_outcome_decide(m, bad, nbad, DELIVER_BOUNCE, "5.1.3",
                          "bad address syntax", "none");
    free(bad);
    b->waiting--;
    batch_check(m, b);
    core_message_unread_set(m->cm, (long)(m->sm->nrcpt - m->next_read));
    return (long)n;
}

/* Recipient i, found too old: returned with text or its last reason. */
static void expire_one(struct qm_msg *m, struct qm_batch *b, uint32_t i,
                       const char *text)
{
    const char *last = b->r[i - b->first].reason;
    const char *sp = last ? strchr(last, ' ') : NULL;
    uint64_t one = i;
    char line[700];

    if (text == NULL)
        text = sp && sp[1] ? sp + 1 : "not delivered";
    snprintf(line, sizeof(line), "message expired: %s", text);
    rcpt_await(m, b, i);
    qm_outcome_decide(m, &one, 1, DELIVER_BOUNCE, "4.4.7", line, "none");
}

long qm_rcpt_expire(struct qm_msg *m, const char *text)
{
    long decided = 0;
    uint32_t from = 0;

    while (from < m->sm->nrcpt) {
        struct qm_batch *b = batch_read(m, from, WALK_BATCH);

        if (b == NULL)
            return decided > 0 ? decided : -1;
        from += b->count;
        b->waiting++;
        for (uint32_t k = 0; k < b->count; k++)
            if (b->r[k].status == SPOOL_RCPT_DEFERRED ||
                b->r[k].status == SPOOL_RCPT_PENDING) {
                expire_one(m, b, b->first + k, text);
                decided++;
            }
        b->waiting--;
        batch_check(m, b);
    }
    return decided;
}

int qm_rcpt_walk(struct qm_msg *m, qm_rcpt_visit_fn *visit, void *ctx,
                 char *why, size_t whylen)
{
    uint32_t from = 0;

    while (from < m->sm->nrcpt) {
        struct spool_rcpt *r;
        uint32_t n;

        if (spool_rcpts(m->q->sp, m->id, from, WALK_BATCH, &r, &n, why,
                        whylen) < 0)
            return -1;
        if (n == 0) {
            free(r);
            snprintf(why, whylen, "%u of %u recipients are missing",
                     m->sm->nrcpt - from, m->sm->nrcpt);
            return -1;
        }
        for (uint32_t k = 0; k < n; k++)
            visit(ctx, from + k, &r[k]);
        spool_rcpts_free(r, n);
        from += n;
    }
    return 0;
}

void qm_rcpt_free(struct qm_msg *m)
{
    for (int k = 0; k < m->nbatches; k++) {
        m->q->recipients -= m->batches[k]->waiting;
        batch_free(m->batches[k]);
    }
    free(m->batches);
    m->batches = NULL;
    m->nbatches = m->batch_cap = 0;
}
