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
 *	outcome written; one whose records mostly are done with keeps only
 *	those still waiting, with their positions, so that a few recipients
 *	stuck at a slow destination do not hold a whole batch of 5,000.
 *	What the queue manager keeps of a message between
 *	batches is its envelope and where the next batch starts; the
 *	spool holds the rest, so memory follows the seed's bounds on
 *	in-core recipients and not the size of a mailing list.
 *
 *	qm_rcpt_read() reads the next batch of up to max recipients of m:
 *	each one not yet final is routed and added to core/ (bad address
 *	syntax: bounced at once; a dead destination: deferred), or, under
 *	Finch's scheduler, handed to the routing workers (router.c), which
 *	add it once its next hop resolves; and core/
 *	learns how many are still unread. It returns how many records were
 *	read; 0 when there are none left or the spool cannot give them
 *	(logged; the rest wait for the message's next pass, as they would
 *	after a crash), or while the queue manager drains or stops (the
 *	rest stay in the spool for its next start).
 *
 *	qm_rcpt_get() finds recipient i among the batches in memory; a
 *	recipient asked for that is not there is a bug (panic).
 *	qm_rcpt_decided() says recipient i has its outcome for this pass:
 *	the last one of a batch lets the batch go.
 *
 *	qm_rcpt_expire() returns every recipient of m still open (deferred
 *	or not yet tried) to the sender as expired (4.4.7, "message
 *	expired: " and text, or each recipient's own last reason with text
 *	NULL), a batch at a time, with one outcome (one spool write) for
 *	each run of recipients that share their text. It returns how many
 *	it decided, or -1 when the spool cannot give them.
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

/*
 * Recipients [first, end) of a message, from one read. While most of
 * them are still to come, they sit in an array by position; once fewer
 * than a quarter still wait for an outcome, the batch keeps only those,
 * with their positions (index), so that a few recipients stuck at a slow
 * destination do not hold thousands of records (a batch is up to 5,000).
 */
struct qm_batch {
    uint32_t first, end;
    uint32_t count;          /* records held */
    uint32_t *index;         /* their positions; NULL: first + k */
    uint32_t waiting;        /* of them: handed out, outcome not written */
    int hold;                /* a loop walks it: keep it as it is */
    unsigned char *awaiting; /* per record: is it one of those */
    struct spool_rcpt *r;
};

#define COMPACT_MIN 64 /* records: below this a batch is left as it is */

static void batch_free(struct qm_msg *m, struct qm_batch *b)
{
    m->q->records -= b->count;
    spool_rcpts_free(b->r, b->count);
    free(b->index);
    free(b->awaiting);
    free(b);
}

/* The position of the batch holding recipient i, or where one would go. */
static int batch_find(const struct qm_msg *m, uint32_t i)
{
    int lo = 0, hi = m->nbatches;

    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;

        if (m->batches[mid]->end <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The record of recipient i in b, or -1. */
static long batch_slot(const struct qm_batch *b, uint32_t i)
{
    long lo = 0, hi = b->count;

    if (b->index == NULL)
        return i >= b->first && i - b->first < b->count ? (long)(i - b->first)
                                                        : -1;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;

        if (b->index[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < (long)b->count && b->index[lo] == i ? lo : -1;
}

static struct qm_batch *batch_add(struct qm_msg *m, uint32_t first,
                                  struct spool_rcpt *r, uint32_t count)
{
    struct qm_batch *b = xcalloc(1, sizeof(*b));
    int at = batch_find(m, first);

    if (at < m->nbatches && m->batches[at]->first < first + count)
        util_panic("%s: recipients %u to %u read again", m->id, first,
                   first + count - 1);
    b->first = first;
    b->end = first + count;
    b->count = count;
    b->r = r;
    b->awaiting = xcalloc(count, 1);
    m->q->records += count;
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

/* Keep only the records still waiting, with their positions. */
static void batch_compact(struct qm_msg *m, struct qm_batch *b)
{
    struct spool_rcpt *r = xcalloc(b->waiting, sizeof(*r));
    uint32_t *index = xcalloc(b->waiting, sizeof(*index));
    uint32_t n = 0;

    for (uint32_t k = 0; k < b->count; k++) {
        if (!b->awaiting[k]) {
            spool_rcpt_clear(&b->r[k]);
            continue;
        }
        r[n] = b->r[k];
        index[n++] = b->index ? b->index[k] : b->first + k;
    }
    free(b->r);
    free(b->index);
    b->r = r;
    b->index = index;
    m->q->records -= b->count - n;
    b->count = n;
    memset(b->awaiting, 1, n);
}

/*
 * A batch none of whose recipients waits for an outcome leaves memory;
 * one that holds mostly records done with keeps only those still waiting.
 */
static void batch_check(struct qm_msg *m, struct qm_batch *b)
{
    int at;

    if (b->hold > 0)
        return;
    if (b->waiting > 0) {
        if (b->count >= COMPACT_MIN && b->waiting < b->count / 4)
            batch_compact(m, b);
        return;
    }
    at = batch_find(m, b->first);
    if (at >= m->nbatches || m->batches[at] != b)
        util_panic("%s: batch at recipient %u is not in the message's list",
                   m->id, b->first);
    memmove(&m->batches[at], &m->batches[at + 1],
            (size_t)(m->nbatches - at - 1) * sizeof(*m->batches));
    m->nbatches--;
    batch_free(m, b);
}

/* The batch and record of recipient i, which must be in memory. */
static struct qm_batch *batch_of(struct qm_msg *m, uint32_t i, long *slot)
{
    int at = batch_find(m, i);

    if (at >= m->nbatches || (*slot = batch_slot(m->batches[at], i)) < 0)
        util_panic("%s: recipient %u is not in memory", m->id, i);
    return m->batches[at];
}

struct spool_rcpt *qm_rcpt_get(struct qm_msg *m, uint32_t i)
{
    long k;
    struct qm_batch *b = batch_of(m, i, &k);

    return &b->r[k];
}

static void rcpt_await(struct qm_msg *m, struct qm_batch *b, uint32_t i)
{
    long k = batch_slot(b, i);

    b->awaiting[k] = 1;
    b->waiting++;
    m->q->recipients++;
}

void qm_rcpt_decided(struct qm_msg *m, uint32_t i)
{
    long k;
    struct qm_batch *b = batch_of(m, i, &k);

    if (!b->awaiting[k])
        util_panic("%s: recipient %u decided twice or never handed out", m->id,
                   i);
    b->awaiting[k] = 0;
    b->waiting--;
    m->q->recipients--;
    /* Nothing reads it again in this pass: the spool has its outcome. */
    spool_rcpt_clear(&b->r[k]);
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
    if (route_resolve(m->q->routes, qm_rcpt_get(m, i)->address, &rr, why,
                      sizeof(why)) < 0) {
        bad[(*nbad)++] = i;
        return;
    }
    if (qm_router_applies(m->q, &rr)) {
        qm_router_add(m, i, &rr); /* into core/ once its next hop resolves */
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

    /* Stopping: what is unread stays in the spool for the next start. */
    if (max <= 0 || m->cm == NULL || m->next_read >= m->sm->nrcpt ||
        m->q->draining || m->q->closing)
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
    b->hold++; /* as it is while it is handed out */
    for (uint32_t k = 0; k < n; k++)
        if (!rcpt_final(&b->r[k]))
            rcpt_route(m, b, b->first + k, bad, &nbad);
        else
            spool_rcpt_clear(&b->r[k]);
    if (nbad > 0)
        qm_outcome_decide(m, bad, nbad, DELIVER_BOUNCE, "5.1.3",
                          "bad address syntax", "none");
    free(bad);
    b->hold--;
    batch_check(m, b);
    core_message_unread_set(m->cm, (long)(m->sm->nrcpt - m->next_read));
    qm_router_run(m->q);
    return (long)n;
}

/* The text a recipient found too old is returned with: text, or what
 * follows the status code of its last reason. */
static const char *expire_text(const struct spool_rcpt *r, const char *text)
{
    const char *sp = r->reason ? strchr(r->reason, ' ') : NULL;

    if (text != NULL)
        return text;
    return sp && sp[1] ? sp + 1 : "not delivered";
}

/*
 * The open recipients of batch b returned to the sender: one outcome
 * (one spool write) for each run of them that shares its text.
 */
static long expire_batch(struct qm_msg *m, struct qm_batch *b, const char *text)
{
    uint64_t *idx = xcalloc(b->count + 1, sizeof(*idx));
    long decided = 0;
    int n = 0;
    char run[600], line[700];

    for (uint32_t k = 0; k <= b->count; k++) {
        const struct spool_rcpt *r = k < b->count ? &b->r[k] : NULL;
        int open = r && (r->status == SPOOL_RCPT_DEFERRED ||
                         r->status == SPOOL_RCPT_PENDING);

        /* The run ends here: at the end, or where the text changes. */
        if (n > 0 &&
            (r == NULL || (open && strcmp(expire_text(r, text), run) != 0))) {
            snprintf(line, sizeof(line), "message expired: %s", run);
            qm_outcome_decide(m, idx, n, DELIVER_BOUNCE, "4.4.7", line, "none");
            decided += n;
            n = 0;
        }
        if (!open)
            continue;
        if (n == 0)
            snprintf(run, sizeof(run), "%s", expire_text(r, text));
        rcpt_await(m, b, b->first + k);
        idx[n++] = b->first + k;
    }
    free(idx);
    return decided;
}

long qm_rcpt_expire(struct qm_msg *m, const char *text)
{
    long decided = 0;
    uint32_t from = 0;

    while (from < m->sm->nrcpt) {
        struct qm_batch *b = batch_read(m, from, WALK_BATCH);

        if (b == NULL)
            return decided > 0 ? decided : -1;
        from = b->end;
        b->hold++;
        decided += expire_batch(m, b, text);
        b->hold--;
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
        batch_free(m, m->batches[k]);
    }
    free(m->batches);
    m->batches = NULL;
    m->nbatches = m->batch_cap = 0;
}
