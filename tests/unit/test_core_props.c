/*
 * test_core_props - properties of the preemptive scheduler over thousands
 * of random workloads with fixed seeds
 *
 * From ../shared/seeds/postfix-scheduler-readme.txt, "How the preemption
 * works": "if for every k>1 normally used slots we accumulate one free
 * delivery slot, than the inflation factor is not worse than k/(k-1) no
 * matter how many recursive preemptions happen. And it's not worse than
 * (k+1)/k if only non-recursive preemption happens."
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core_fixture.h"

#define SEC      1000
#define MAX_JOBS 32

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Deepest preemption seen, from core/'s verbose log. */
static int max_level;
static int preemptor[MAX_JOBS + 1];

static void props_log(void *ctx, enum core_log_level level, const char *text)
{
    const char *by = strstr(text, "preempted by message ");
    const char *lv = strstr(text, "level ");

    (void)ctx;
    (void)level;
    if (by && lv) {
        int job = atoi(by + strlen("preempted by message "));

        if (job >= 0 && job <= MAX_JOBS)
            preemptor[job] = 1;
        if (atoi(lv + 6) > max_level)
            max_level = atoi(lv + 6);
    }
}

static struct core *props_core(void)
{
    static const struct core_callbacks cb = {.log = props_log};

    max_level = 0;
    memset(preemptor, 0, sizeof(preemptor));
    return core_create(&cb, NULL);
}

static void props_params(struct core_transport_params *p, int k, int loan,
                         int discount, int min_slots)
{
    core_transport_params_init(p);
    p->slot_cost = k;
    p->slot_loan = loan;
    p->slot_discount = discount;
    p->min_slots = min_slots;
    p->recipient_limit = 1;
    p->initial_concurrency = 1;
    p->concurrency_limit = 1;
    p->positive.value = 0;
}

/*
 * One destination, one delivery at a time, every job present from the
 * start (job j queued at second j). The FIFO schedule completes job j
 * after the entries of jobs 0..j; the preemptive one must not complete
 * it later than k/(k-1) times that, or (k+1)/k when no preemption was
 * recursive.
 */
static void inflation(int k, int loan, int discount, int min_slots, int runs)
{
    for (int seed = 1; seed <= runs; seed++) {
        struct core *core = props_core();
        struct core_transport_params p;
        struct core_transport *t;
        struct core_queue *q;
        struct core_message *m[MAX_JOBS];
        long fifo[MAX_JOBS], done[MAX_JOBS], total = 0, pos = 0;
        int n, entries;
        core_time_t now;
        struct core_entry *e;
        double bound;

        rng_state = (uint64_t)seed * 7919 + k;
        props_params(&p, k, loan, discount, min_slots);
        t = core_transport_create(core, "smtp", &p);
        q = core_queue_create(t, "d");
        n = 2 + (int)(rng() % (MAX_JOBS - 2));
        for (int j = 0; j < n; j++) {
            /* A mix of bulk and small mail. */
            entries =
                rng() % 4 == 0 ? 1 + (int)(rng() % 200) : 1 + (int)(rng() % 12);
            total += entries;
            fifo[j] = total;
            done[j] = 0;
            m[j] = core_message_create(core, j, (core_time_t)j * SEC, NULL);
            for (int i = 0; i < entries; i++)
                core_message_add(m[j], q, i);
            core_message_release(m[j]);
        }
        now = (core_time_t)(n + 1) * SEC;
        while ((e = core_select(core, now)) != NULL) {
            done[e->peer->job->message->id] = ++pos;
            core_entry_done(e, now, CORE_HOP_OK, NULL);
            now += SEC;
        }
        assert_int_equal(pos, total);
        bound = max_level <= 1 ? (double)(k + 1) / k : (double)k / (k - 1);
        for (int j = 0; j < n; j++) {
            if (done[j] > fifo[j] * bound + 1e-9)
                fail_msg("seed %d, k %d: job %d of %d done at %ld, FIFO %ld, "
                         "bound %.3f (max level %d)",
                         seed, k, j, n, done[j], fifo[j], bound, max_level);
        }
        core_free(core);
    }
}

static void test_inflation_k2(void **state)
{
    (void)state;
    inflation(2, 0, 0, 1, 1500);
}

static void test_inflation_k3(void **state)
{
    (void)state;
    inflation(3, 0, 0, 1, 1500);
}

static void test_inflation_k5_defaults(void **state)
{
    (void)state;
    inflation(5, 3, 50, 3, 1500);
}

static void test_inflation_k8_no_minimum(void **state)
{
    (void)state;
    inflation(8, 0, 0, 0, 1500);
}

/* "with slot cost below 2 the schedule is strict FIFO". */
static void test_slot_cost_below_two_fifo(void **state)
{
    (void)state;
    for (int k = 0; k < 2; k++) {
        for (int seed = 1; seed <= 300; seed++) {
            struct core *core = props_core();
            struct core_transport_params p;
            struct core_transport *t;
            struct core_queue *q;
            struct core_entry *e;
            int n, last = 0;

            rng_state = (uint64_t)seed;
            props_params(&p, k, 3, 50, 0);
            t = core_transport_create(core, "smtp", &p);
            q = core_queue_create(t, "d");
            n = 2 + (int)(rng() % 20);
            for (int j = 0; j < n; j++) {
                struct core_message *m =
                    core_message_create(core, j, (core_time_t)j * SEC, NULL);

                for (int i = 1 + (int)(rng() % 30); i > 0; i--)
                    core_message_add(m, q, i);
                core_message_release(m);
            }
            while ((e = core_select(core, 100 * SEC)) != NULL) {
                int j = (int)e->peer->job->message->id;

                assert_true(j >= last);
                last = j;
                core_entry_done(e, 100 * SEC, CORE_HOP_OK, NULL);
            }
            assert_int_equal(last, n - 1);
            core_free(core);
        }
    }
}

/*
 * "no job starves under a sustained stream of one-recipient jobs": a
 * 1000-entry job while a new one-entry job arrives at every delivery
 * slot completes within k/(k-1) of its own length, and every one-entry
 * job is delivered, oldest first.
 */
static void test_no_starvation(void **state)
{
    (void)state;
    for (int k = 2; k <= 8; k += 3) {
        struct core *core = props_core();
        struct core_transport_params p;
        struct core_transport *t;
        struct core_queue *q;
        struct core_message *bulk;
        struct core_entry *e;
        long pos = 0, bulk_done = 0, next_small = 1, last_small = 0;
        core_time_t now = 0;

        props_params(&p, k, 3, 50, 3);
        t = core_transport_create(core, "smtp", &p);
        q = core_queue_create(t, "d");
        bulk = core_message_create(core, 0, 0, NULL);
        for (int i = 0; i < 1000; i++)
            core_message_add(bulk, q, i);
        core_message_release(bulk);
        for (;;) {
            if (next_small <= 3000) {
                struct core_message *m =
                    core_message_create(core, next_small++, now, NULL);

                core_message_add(m, q, 0);
                core_message_release(m);
            }
            if ((e = core_select(core, now)) == NULL)
                break;
            pos++;
            if (e->peer->job->message->id == 0) {
                bulk_done = pos;
            } else {
                assert_true((long)e->peer->job->message->id > last_small);
                last_small = (long)e->peer->job->message->id;
            }
            core_entry_done(e, now, CORE_HOP_OK, NULL);
            now += SEC;
        }
        assert_int_equal(pos, 4000);
        assert_int_equal(last_small, 3000);
        if (bulk_done > 1000 * k / (k - 1) + k)
            fail_msg("k %d: bulk done at %ld", k, bulk_done);
        core_free(core);
    }
}

/*
 * "even when jobs are delivered out of order, from single destination's
 * point of view the jobs are still delivered in the expected order (that
 * is, FIFO unless there was some preemption involved)": several
 * destinations with small windows, deliveries that end in random order;
 * per destination, every entry of an older job that never preempted is
 * selected before any entry of a younger one that never preempted.
 */
static void test_fifo_per_destination(void **state)
{
    enum { DESTS = 4, FLIGHT = 64 };

    (void)state;
    for (int seed = 1; seed <= 800; seed++) {
        struct core *core = props_core();
        struct core_transport_params p;
        struct core_transport *t;
        struct core_queue *q[DESTS];
        struct core_entry *flight[FLIGHT];
        long first[DESTS][MAX_JOBS], last[DESTS][MAX_JOBS], pos = 0;
        int nflight = 0, n;
        char key[16];

        rng_state = (uint64_t)seed;
        props_params(&p, 2 + (int)(rng() % 4), (int)(rng() % 4),
                     (int)(rng() % 2) * 50, (int)(rng() % 3));
        p.process_limit = 6;
        t = core_transport_create(core, "smtp", &p);
        for (int d = 0; d < DESTS; d++) {
            snprintf(key, sizeof(key), "d%d", d);
            q[d] = core_queue_create(t, key);
            q[d]->window = 1 + (int)(rng() % 3);
        }
        memset(first, 0, sizeof(first));
        memset(last, 0, sizeof(last));
        n = 2 + (int)(rng() % (MAX_JOBS - 2));
        for (int j = 0; j < n; j++) {
            struct core_message *m =
                core_message_create(core, j, (core_time_t)j * SEC, NULL);
            int entries =
                rng() % 3 == 0 ? 1 + (int)(rng() % 60) : 1 + (int)(rng() % 6);

            for (int i = 0; i < entries; i++)
                core_message_add(m, q[rng() % DESTS], i);
            core_message_release(m);
        }
        for (core_time_t now = (n + 1) * SEC;; now += SEC / 4) {
            struct core_entry *e = NULL;

            if (nflight < FLIGHT && (nflight == 0 || rng() % 2))
                e = core_select(core, now);
            if (e != NULL) {
                int d = e->peer->queue->key[1] - '0';
                int j = (int)e->peer->job->message->id;

                if (first[d][j] == 0)
                    first[d][j] = pos + 1;
                last[d][j] = ++pos;
                flight[nflight++] = e;
            } else if (nflight > 0) {
                int i = (int)(rng() % nflight);

                core_entry_done(flight[i], now, CORE_HOP_OK, NULL);
                flight[i] = flight[--nflight];
            } else {
                break;
            }
        }
        assert_true(TAILQ_EMPTY(&core->messages));
        for (int d = 0; d < DESTS; d++)
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++)
                    if (!preemptor[a] && !preemptor[b] && last[d][a] &&
                        first[d][b] && first[d][b] < last[d][a])
                        fail_msg("seed %d: destination %d: job %d before "
                                 "older job %d",
                                 seed, d, b, a);
        core_free(core);
    }
}

/* Queues of t that could give an entry now, counted the long way. */
static int ready_recount(const struct core_transport *t)
{
    const struct core_queue *q;
    int n = 0;

    TAILQ_FOREACH(q, &t->queues, link)
        n += q->todo_count > 0 && core_queue_open(q);
    return n;
}

/*
 * The transport's count of ready queues (Postfix's transport selection
 * test, "window > busy" and an entry waiting) is exact after every event,
 * and selection never stalls: while the transport may start a delivery,
 * it answers "nothing" only when no queue is ready. Random workloads with
 * windows that move (feedback on), destinations that die and come back,
 * and entries added to messages already in progress (blockers gaining
 * entries).
 */
static void test_ready_count_and_no_stall(void **state)
{
    enum { DESTS = 5, FLIGHT = 48, MSGS = 24 };

    (void)state;
    for (int seed = 1; seed <= 600; seed++) {
        struct core *core = props_core();
        struct core_transport_params p;
        struct core_transport *t;
        struct core_queue *q[DESTS];
        struct core_message *m[MSGS];
        struct core_entry *flight[FLIGHT];
        int nflight = 0, n, steps = 0;
        uint64_t next_rcpt = 1000;
        char key[16];
        core_time_t now;

        rng_state = (uint64_t)seed * 31;
        props_params(&p, 2 + (int)(rng() % 4), (int)(rng() % 4), 50, 1);
        p.concurrency_limit = 1 + (int)(rng() % 4);
        p.initial_concurrency = 1;
        p.positive.value = 1;
        p.failed_cohort_limit = 1;
        p.dead_backoff = 5 * SEC;
        p.process_limit = 8;
        t = core_transport_create(core, "smtp", &p);
        for (int d = 0; d < DESTS; d++) {
            snprintf(key, sizeof(key), "d%d", d);
            q[d] = core_queue_create(t, key);
        }
        n = 2 + (int)(rng() % (MSGS - 2));
        for (int j = 0; j < n; j++) {
            int entries = 1 + (int)(rng() % 20);

            m[j] = core_message_create(core, j, (core_time_t)j * SEC, NULL);
            for (int i = 0; i < entries; i++)
                core_message_add(m[j], q[rng() % DESTS], i);
        }
        for (now = (n + 1) * SEC; steps < 4000; now += SEC / 4, steps++) {
            struct core_entry *e = NULL;
            int r = (int)(rng() % 10);

            core_run_timers(core, now);
            assert_int_equal(t->ready_queues, ready_recount(t));
            if (r == 0) {
                /* a later batch: more entries for a message in core */
                core_message_add(m[rng() % n], q[rng() % DESTS], next_rcpt++);
            } else if (nflight < FLIGHT && (nflight == 0 || r < 6)) {
                e = core_select(core, now);
                if (e == NULL && core_transport_can_start(t) &&
                    ready_recount(t) > 0)
                    fail_msg("seed %d step %d: nothing selected with %d "
                             "ready queues",
                             seed, steps, ready_recount(t));
                if (e != NULL)
                    flight[nflight++] = e;
                else if (nflight == 0 && ready_recount(t) == 0 &&
                         core_next_timer(core) == CORE_TIME_NEVER)
                    break;
            } else if (nflight > 0) {
                int i = (int)(rng() % nflight);

                core_entry_done(flight[i], now,
                                rng() % 8 == 0 ? CORE_HOP_FAIL : CORE_HOP_OK,
                                "refused");
                flight[i] = flight[--nflight];
            }
            assert_int_equal(t->ready_queues, ready_recount(t));
        }
        while (nflight > 0)
            core_entry_done(flight[--nflight], now, CORE_HOP_OK, NULL);
        for (int j = 0; j < n; j++)
            core_message_release(m[j]);
        core_free(core);
    }
}

/*
 * Issue 16: "Candidate-cache, loan sequence and the k/(k-1) inflation
 * bound with blockers present, as property tests."
 *
 * With blockers: a second destination b whose one delivery slot is
 * taken for good by a plug entry, so every job with entries for b is a
 * blocker there ("the job is marked as a blocker ... and the scheduler
 * skips it"). Jobs of three kinds, at random: entries for d only, for b
 * only (pure blockers, never selectable), or both. The FIFO schedule of
 * d completes job j after the d entries of jobs 0..j; the preemptive one
 * must not complete j's d entries later than k/(k-1) times that. The
 * claim is about slots accumulated, so there is no loan and no discount
 * here: with them a job may be preempted before it has earned the slots,
 * and a short job then ends later than k/(k-1) of FIFO (a 2-entry job
 * done at 5 with k 2 and a loan of 1); test_loan_small_sooner states
 * what a loan does keep.
 */
static void inflation_blockers(int k, int runs)
{
    for (int seed = 1; seed <= runs; seed++) {
        struct core *core = props_core();
        struct core_transport_params p;
        struct core_queue *d, *b;
        struct core_message *m[MAX_JOBS], *plug;
        long fifo[MAX_JOBS], done[MAX_JOBS], total = 0, pos = 0;
        int n, blockers = 0;
        core_time_t now;
        struct core_entry *e, *plugged;
        double bound = (double)k / (k - 1);

        rng_state = (uint64_t)seed * 104729 + k;
        props_params(&p, k, 0, 0, (int)(rng() % 4));
        core_transport_create(core, "smtp", &p);
        d = core_queue_create(core_transport_find(core, "smtp"), "d");
        b = core_queue_create(core_transport_find(core, "smtp"), "b");
        plug = core_message_create(core, MAX_JOBS, 0, NULL);
        core_message_add(plug, b, 0);
        core_message_release(plug);
        plugged = core_select(core, 0);
        assert_non_null(plugged);
        assert_ptr_equal(plugged->peer->queue, b);
        n = 2 + (int)(rng() % (MAX_JOBS - 2));
        for (int j = 0; j < n; j++) {
            int kind = (int)(rng() % 4); /* 0: b only, 1: both, else d */
            int entries =
                rng() % 4 == 0 ? 1 + (int)(rng() % 200) : 1 + (int)(rng() % 12);

            m[j] =
                core_message_create(core, j, (core_time_t)(j + 1) * SEC, NULL);
            if (kind <= 1) {
                for (int i = 0; i < 1 + (int)(rng() % 5); i++)
                    core_message_add(m[j], b, 1000 + i);
                blockers++;
            }
            if (kind == 0)
                entries = 0;
            for (int i = 0; i < entries; i++)
                core_message_add(m[j], d, i);
            total += entries;
            fifo[j] = total;
            done[j] = 0;
            core_message_release(m[j]);
        }
        now = (core_time_t)(n + 2) * SEC;
        while ((e = core_select(core, now)) != NULL) {
            if (e->peer->queue != d)
                fail_msg("seed %d: an entry of the plugged destination went",
                         seed);
            done[e->peer->job->message->id] = ++pos;
            core_entry_done(e, now, CORE_HOP_OK, NULL);
            now += SEC;
        }
        assert_int_equal(pos, total);
        for (int j = 0; j < n; j++)
            if (fifo[j] > 0 && done[j] > fifo[j] * bound + 1e-9)
                fail_msg("seed %d, k %d, loan %d, discount %d, %d blockers: "
                         "job %d of %d done at %ld, FIFO %ld, bound %.3f",
                         seed, k, p.slot_loan, p.slot_discount, blockers, j, n,
                         done[j], fifo[j], bound);
        core_entry_done(plugged, now, CORE_HOP_OK, NULL);
        core_free(core);
    }
}

static void test_inflation_with_blockers(void **state)
{
    (void)state;
    for (int k = 2; k <= 8; k++)
        inflation_blockers(k, 400);
}

/*
 * The candidate cache ("it seemed reasonable to add cache which minimizes
 * the overhead") changes no decision: the same random workloads (several
 * destinations with moving windows, deliveries ending out of order, later
 * batches of recipients, time in quarter seconds) select exactly the same
 * entries, in the same order, when the cache is emptied before every
 * selection.
 */
struct cache_run {
    long seq[4096];
    int n;
};

static void cache_workload(int seed, int uncached, struct cache_run *out)
{
    enum { DESTS = 4, FLIGHT = 32, MSGS = 24 };
    struct core *core = props_core();
    struct core_transport_params p;
    struct core_transport *t;
    struct core_queue *q[DESTS];
    struct core_message *m[MSGS];
    struct core_entry *flight[FLIGHT];
    int nflight = 0, n;
    uint64_t next_rcpt = 1000;
    char key[16];

    rng_state = (uint64_t)seed * 7;
    props_params(&p, 2 + (int)(rng() % 5), (int)(rng() % 4),
                 (int)(rng() % 3) * 50, (int)(rng() % 4));
    p.concurrency_limit = 1 + (int)(rng() % 3);
    p.process_limit = 6;
    p.positive.value = 1;
    t = core_transport_create(core, "smtp", &p);
    for (int d = 0; d < DESTS; d++) {
        snprintf(key, sizeof(key), "d%d", d);
        q[d] = core_queue_create(t, key);
    }
    n = 2 + (int)(rng() % (MSGS - 2));
    for (int j = 0; j < n; j++) {
        int entries =
            rng() % 4 == 0 ? 1 + (int)(rng() % 80) : 1 + (int)(rng() % 6);

        m[j] = core_message_create(core, j, (core_time_t)j * SEC / 3, NULL);
        for (int i = 0; i < entries; i++)
            core_message_add(m[j], q[rng() % DESTS], i);
    }
    out->n = 0;
    for (core_time_t now = (core_time_t)n * SEC; out->n < 4096;
         now += SEC / 4) {
        struct core_entry *e = NULL;
        int r = (int)(rng() % 12);

        if (r == 0) {
            core_message_add(m[rng() % n], q[rng() % DESTS], next_rcpt++);
            continue;
        }
        if (nflight < FLIGHT && (nflight == 0 || r < 7)) {
            if (uncached)
                core_candidate_reset(t);
            if ((e = core_select(core, now)) != NULL) {
                out->seq[out->n++] = (long)e->peer->job->message->id * 100 +
                                     (e->peer->queue->key[1] - '0');
                flight[nflight++] = e;
                continue;
            }
        }
        if (nflight == 0)
            break;
        r = (int)(rng() % nflight);
        core_entry_done(flight[r], now, CORE_HOP_OK, NULL);
        flight[r] = flight[--nflight];
    }
    while (nflight > 0)
        core_entry_done(flight[--nflight], 0, CORE_HOP_OK, NULL);
    for (int j = 0; j < n; j++)
        core_message_release(m[j]);
    core_free(core);
}

static void test_candidate_cache_changes_nothing(void **state)
{
    static struct cache_run cached, uncached;

    (void)state;
    for (int seed = 1; seed <= 500; seed++) {
        cache_workload(seed, 0, &cached);
        cache_workload(seed, 1, &uncached);
        for (int i = 0; i < cached.n && i < uncached.n; i++)
            if (cached.seq[i] != uncached.seq[i])
                fail_msg("seed %d: selection %d differs: message %ld, "
                         "destination %ld with the cache; %ld, %ld without",
                         seed, i, cached.seq[i] / 100, cached.seq[i] % 100,
                         uncached.seq[i] / 100, uncached.seq[i] % 100);
        assert_int_equal(cached.n, uncached.n);
    }
}

/*
 * The loan ("it is not really necessary to wait until the jobs counter
 * accumulates all the delivery slots in advance ... If we use such slot
 * loan, the delivery sequence becomes 11221111331111. As we can see, it
 * makes it no considerably worse for the delivery of the ten-recipient
 * mail, but it allows the small messages to be delivered sooner"), over
 * random shapes of the seed's example: one big message, then small ones,
 * one destination. With a loan and a discount, against none: the small
 * messages are done sooner (the sum of their completion positions, and
 * the last of them, never later; one of them may be overtaken by
 * another, since the loan changes which fits first), and the big one at
 * most one small message later (the loan taken at its very end is never
 * paid back).
 */
static long loan_run(int k, int loan, int discount, int big, int nsmall,
                     const int *small, long *done)
{
    struct core *core = props_core();
    struct core_transport_params p;
    struct core_queue *q;
    struct core_entry *e;
    long pos = 0;

    props_params(&p, k, loan, discount, 1);
    q = core_queue_create(core_transport_create(core, "smtp", &p), "d");
    for (int j = 0; j <= nsmall; j++) {
        struct core_message *m =
            core_message_create(core, j, (core_time_t)j * SEC, NULL);

        for (int i = 0; i < (j == 0 ? big : small[j - 1]); i++)
            core_message_add(m, q, i);
        core_message_release(m);
        done[j] = 0;
    }
    while ((e = core_select(core, 100 * SEC)) != NULL) {
        done[e->peer->job->message->id] = ++pos;
        core_entry_done(e, 100 * SEC, CORE_HOP_OK, NULL);
    }
    core_free(core);
    return pos;
}

static void test_loan_small_sooner(void **state)
{
    (void)state;
    for (int seed = 1; seed <= 3000; seed++) {
        long with[16], without[16], total;
        long sum_with = 0, sum_without = 0, last_with = 0, last_without = 0;
        int small[15], nsmall, big, k, loan, discount, largest = 0;

        rng_state = (uint64_t)seed * 2654435761u;
        k = 2 + (int)(rng() % 5);
        loan = (int)(rng() % 4);
        discount = (int)(rng() % 3) * 25;
        big = 10 + (int)(rng() % 190);
        nsmall = 1 + (int)(rng() % 15);
        total = big;
        for (int j = 0; j < nsmall; j++)
            total += small[j] = 1 + (int)(rng() % 4);
        assert_int_equal(loan_run(k, 0, 0, big, nsmall, small, without), total);
        assert_int_equal(loan_run(k, loan, discount, big, nsmall, small, with),
                         total);
        for (int j = 1; j <= nsmall; j++) {
            sum_with += with[j];
            sum_without += without[j];
            last_with = with[j] > last_with ? with[j] : last_with;
            last_without =
                without[j] > last_without ? without[j] : last_without;
            largest = small[j - 1] > largest ? small[j - 1] : largest;
        }
        if (sum_with > sum_without || last_with > last_without)
            fail_msg("seed %d, k %d, loan %d, discount %d: the small "
                     "messages done at %ld in all, the last at %ld, with "
                     "the loan; %ld and %ld without",
                     seed, k, loan, discount, sum_with, last_with, sum_without,
                     last_without);
        if (with[0] > without[0] + largest)
            fail_msg("seed %d, k %d, loan %d, discount %d: the big message "
                     "done at %ld with the loan, %ld without",
                     seed, k, loan, discount, with[0], without[0]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_inflation_k2),
        cmocka_unit_test(test_inflation_k3),
        cmocka_unit_test(test_inflation_k5_defaults),
        cmocka_unit_test(test_inflation_k8_no_minimum),
        cmocka_unit_test(test_slot_cost_below_two_fifo),
        cmocka_unit_test(test_no_starvation),
        cmocka_unit_test(test_fifo_per_destination),
        cmocka_unit_test(test_ready_count_and_no_stall),
        cmocka_unit_test(test_inflation_with_blockers),
        cmocka_unit_test(test_candidate_cache_changes_nothing),
        cmocka_unit_test(test_loan_small_sooner),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
