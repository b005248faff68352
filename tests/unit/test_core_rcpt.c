/*
 * test_core_rcpt - recipient memory limits: batches, slot pools, the
 * seed's bounds ("Dealing with memory resource limits" in
 * ../shared/seeds/postfix-scheduler-readme.txt)
 *
 * A fake caller plays the queue manager: each message has its recipients
 * in an array (recipient i goes to queue dest[i]); core/ asks for more
 * through the message_more callback and the caller adds the next ones.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "core_fixture.h"

#define SEC      1000
#define MAX_MSGS 64

struct fake_msg {
    struct core_message *cm;
    struct core_queue **dest; /* recipient i goes to dest[i] */
    long total, next;
    long delivered;
};

static struct fake_msg msgs[MAX_MSGS];
static int nmsgs;
static long reads; /* message_more calls */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static long read_batch(struct fake_msg *f, long max)
{
    long n = 0;

    while (n < max && f->next < f->total) {
        core_message_add(f->cm, f->dest[f->next], (uint64_t)f->next);
        f->next++;
        n++;
    }
    core_message_unread_set(f->cm, f->total - f->next);
    return n;
}

/*
 * Every later batch fits in the message's own slots: "the subsequent
 * recipient batch may be as large as the sum of all recipient slots of
 * all jobs of the message permits (plus the
 * qmgr_message_recipient_minimum amount which always applies)".
 */
static long more(void *ctx, struct core_message *m, long max)
{
    long n;

    (void)ctx;
    reads++;
    if (max > core_message_read_limit(m))
        fail_msg("asked for %ld, the limit is %ld", max,
                 core_message_read_limit(m));
    n = read_batch(&msgs[core_message_id(m)], max);
    if (m->rcpt_count > m->rcpt_limit)
        fail_msg("message %llu: %ld in core after a batch, %ld slots",
                 (unsigned long long)core_message_id(m), m->rcpt_count,
                 m->rcpt_limit);
    return n;
}

static const struct core_callbacks rcpt_callbacks = {.message_more = more};

/* Message n, queued at now, with total recipients for dests[0..ndest). */
static void fake_message(struct core *core, int n, long total,
                         struct core_queue **dests, int ndest, core_time_t now)
{
    struct fake_msg *f = &msgs[n];

    f->total = total;
    f->next = 0;
    f->delivered = 0;
    f->dest = xmalloc((size_t)total * sizeof(*f->dest));
    for (long i = 0; i < total; i++)
        f->dest[i] = dests[rng() % (uint64_t)ndest];
    f->cm = core_message_create(core, (uint64_t)n, now, NULL);
    read_batch(f, core_message_read_limit(f->cm));
    core_message_release(f->cm);
    if (n >= nmsgs)
        nmsgs = n + 1;
}

static void fake_free(void)
{
    for (int i = 0; i < nmsgs; i++)
        free(msgs[i].dest);
    memset(msgs, 0, sizeof(msgs));
    nmsgs = 0;
    reads = 0;
}

/*
 * A message with three jobs holding in_core[i] recipients and slots[i]
 * recipient slots: how many more it may read now.
 */
static long read_limit_of(const int in_core[3], const int slots[3])
{
    struct core *core = core_create(&rcpt_callbacks, NULL);
    struct core_transport_params p;
    struct core_queue *q[3];
    struct core_message *m;
    struct core_job *job;
    const char *names[3] = {"a", "b", "c"};
    long n;

    core_transport_params_init(&p);
    p.rcpt_pool = 0; /* the slots are set by hand below */
    for (int i = 0; i < 3; i++)
        q[i] =
            core_queue_create(core_transport_create(core, names[i], &p), "d");
    m = core_message_create(core, 0, 0, NULL);
    for (int i = 0; i < 3; i++)
        for (int r = 0; r < in_core[i]; r++)
            core_message_add(m, q[i], (uint64_t)(10 * i + r));
    core_message_unread_set(m, 1000);
    for (job = m->jobs; job; job = job->next_of_message) {
        int i = job->transport->name[0] - 'a';

        job->rcpt_limit = slots[i];
        m->rcpt_limit += slots[i];
    }
    n = core_message_read_limit(m);
    core_message_release(m);
    core_free(core);
    return n;
}

/*
 * "if a message has three jobs, first with 1 recipient still in-core and
 * 4 recipient slots, second with 5 recipient in-core and 5 recipient
 * slots, and third with 2 recipients in-core and 0 recipient slots, it
 * has 1+5+2=7 recipients in-core and 4+5+0=9 jobs' recipients slots in
 * total. This means that we could immediately read
 * 2+qmgr_message_recipient_minimum more recipients of that message".
 * The rule is slots less recipients in core, plus the minimum (10). The
 * seed's sum has a slip: 1+5+2 is 8, which leaves 1 + minimum; with 7
 * in core (1, 4 and 2) it is the seed's 2 + minimum.
 */
static void test_seed_example(void **state)
{
    static const int slots[3] = {4, 5, 0};
    static const int as_listed[3] = {1, 5, 2}, seven[3] = {1, 4, 2};

    (void)state;
    assert_int_equal(read_limit_of(seven, slots), 2 + 10);
    assert_int_equal(read_limit_of(as_listed, slots), 1 + 10);
}

/*
 * The first batch comes from the global pool: what
 * qmgr_message_recipient_limit leaves, at least the minimum; a message
 * bigger than that is read in batches as its entries are delivered, and
 * the recipients in core never exceed
 * max(minimum * active + _recipient_limit + _extra_recipient_limit,
 * qmgr_message_recipient_limit).
 */
static void test_batches_within_bound(void **state)
{
    struct core *core = core_create(&rcpt_callbacks, NULL);
    struct core_transport_params p;
    struct core_transport *t;
    struct core_queue *q;
    struct core_entry *e;
    core_time_t now = 0;
    long done = 0, max_in_core = 0;

    (void)state;
    rng_state = 1;
    core_recipient_limits_set(core, 100, 10);
    core_transport_params_init(&p);
    p.rcpt_pool = 50;
    p.rcpt_extra = 0;
    p.refill_limit = 10;
    p.recipient_limit = 1;
    t = core_transport_create(core, "smtp", &p);
    q = core_queue_create(t, "d");
    fake_message(core, 0, 1000, &q, 1, now);
    assert_int_equal(msgs[0].next, 100); /* the global pool's first read */
    assert_int_equal(core_recipient_count(core), 100);
    while ((e = core_select(core, now)) != NULL) {
        if (core_recipient_count(core) > max_in_core)
            max_in_core = core_recipient_count(core);
        core_entry_done(e, now, CORE_HOP_OK, NULL);
        done++;
        now += 10;
    }
    assert_int_equal(done, 1000);
    assert_int_equal(msgs[0].next, 1000);
    assert_true(max_in_core <= 100);
    assert_true(reads > 10); /* read in many batches */
    assert_true(TAILQ_EMPTY(&core->messages));
    assert_int_equal(core_recipient_count(core), 0);
    assert_int_equal(t->rcpt_unused, 50); /* every slot back in the pool */
    core_free(core);
    fake_free();
}

/*
 * "Each time an unread job preempts the current job, it gets half of the
 * remaining recipient slots from the normal pool and this extra pool."
 * A (40 recipients, all read) holds the transport's pool; B (5, of which
 * the global pool leaves room for 2) is unread and has no slots of its
 * own. When B preempts A it gets (extra 6 + unused 0 + 1) / 2 = 3 slots,
 * the pool going 3 below zero, and reads the rest; at the end every slot
 * is back in the pool.
 */
static void test_extra_pool_for_unread_preemptor(void **state)
{
    struct core *core = core_create(&rcpt_callbacks, NULL);
    struct core_transport_params p;
    struct core_transport *t;
    struct core_queue *q;
    struct core_entry *e;
    struct core_job *b;
    core_time_t now = 100 * SEC;
    int preempted = 0, done = 0;

    (void)state;
    rng_state = 5;
    core_recipient_limits_set(core, 42, 1);
    core_transport_params_init(&p);
    p.rcpt_pool = 10;
    p.rcpt_extra = 6;
    p.recipient_limit = 1;
    p.slot_cost = 2;
    p.slot_loan = 0;
    p.slot_discount = 0;
    p.min_slots = 1;
    p.initial_concurrency = 1;
    p.concurrency_limit = 1;
    p.refill_limit = 1;
    t = core_transport_create(core, "smtp", &p);
    q = core_queue_create(t, "d");
    fake_message(core, 0, 40, &q, 1, 0);
    assert_int_equal(msgs[0].next, 40);
    fake_message(core, 1, 5, &q, 1, SEC);
    assert_int_equal(msgs[1].next, 2); /* 42 - 40 */
    b = msgs[1].cm->jobs;
    assert_int_equal(b->rcpt_limit, 0);
    assert_int_equal(t->rcpt_unused, 0);
    while ((e = core_select(core, now)) != NULL) {
        if (!preempted && b->stack_level > 0) {
            preempted = 1;
            assert_int_equal(b->rcpt_limit, 3);
            assert_int_equal(t->rcpt_unused, -3);
        }
        core_entry_done(e, now, CORE_HOP_OK, NULL);
        done++;
        now += SEC;
    }
    assert_true(preempted);
    assert_int_equal(done, 45);
    assert_int_equal(msgs[1].next, 5);
    assert_int_equal(t->rcpt_unused, 10);
    core_free(core);
    fake_free();
}

/* The recipients in core on transport t. */
static long transport_in_core(const struct core_transport *t)
{
    const struct core_job *job;
    long n = 0;

    TAILQ_FOREACH(job, &t->jobs_bytime, bytime)
        n += job->rcpt_count;
    return n;
}

/* One random run's settings. */
struct run {
    long minimum, limit;
    struct core_transport_params p[2];
    int reference;     /* limit <= each pool + extra, as the defaults are */
    int one_transport; /* every message goes to one transport */
    int n;             /* messages, the run's qmgr_message_active_limit */
};

/*
 * The bounds after one event. The seed's: "Each transport has at
 * maximum max(qmgr_message_recipient_minimum * qmgr_message_active_limit
 * + *_recipient_limit + *_extra_recipient_limit,
 * qmgr_message_recipient_limit) recipients in core. The total amount of
 * recipients in core is max(qmgr_message_recipient_minimum *
 * qmgr_message_active_limit + sum( *_recipient_limit +
 * *_extra_recipient_limit ), qmgr_message_recipient_limit)". They hold
 * where the reference's defaults put them (qmgr_message_recipient_limit
 * no larger than a transport's pool and reserve: 20000 against 21000),
 * the per-transport one when no message spans two transports. Always,
 * and provably: the first reads take at most
 * qmgr_message_recipient_limit from the global pool, the minimum at most
 * minimum * active, the jobs their pools and reserves.
 */
static void bounds_check(const struct run *r, struct core *core,
                         struct core_transport *t[2], int seed, int step)
{
    long in_core = core_recipient_count(core), active = 0, seed_total, proven;
    const struct core_message *m;

    TAILQ_FOREACH(m, &core->messages, link)
        active++;
    seed_total = r->minimum * r->n;
    proven = r->limit + r->minimum * active;
    for (int i = 0; i < 2; i++) {
        seed_total += r->p[i].rcpt_pool + r->p[i].rcpt_extra;
        proven += r->p[i].rcpt_pool + r->p[i].rcpt_extra;
    }
    if (seed_total < r->limit)
        seed_total = r->limit;
    if (in_core > proven)
        fail_msg("seed %d step %d: %ld in core, over %ld", seed, step, in_core,
                 proven);
    if (r->reference && in_core > seed_total)
        fail_msg("seed %d step %d: %ld in core, over the seed's %ld", seed,
                 step, in_core, seed_total);
    for (int i = 0; r->reference && r->one_transport && i < 2; i++) {
        long bound = r->minimum * r->n + r->p[i].rcpt_pool + r->p[i].rcpt_extra;

        if (bound < r->limit)
            bound = r->limit;
        if (transport_in_core(t[i]) > bound)
            fail_msg("seed %d step %d: transport %d holds %ld, over the "
                     "seed's %ld",
                     seed, step, i, transport_in_core(t[i]), bound);
    }
}

static void run_params(struct run *r, int seed)
{
    r->minimum = 1 + (long)(rng() % 10);
    r->reference = seed % 2;
    r->one_transport = seed % 4 < 2;
    r->n = 4 + (int)(rng() % (MAX_MSGS - 4));
    for (int i = 0; i < 2; i++) {
        core_transport_params_init(&r->p[i]);
        r->p[i].rcpt_pool = 20 + (int)(rng() % 100);
        r->p[i].rcpt_extra = (int)(rng() % 20);
        r->p[i].refill_limit = 1 + (int)(rng() % 20);
        r->p[i].refill_delay = SEC;
        r->p[i].recipient_limit = 1 + (int)(rng() % 5);
        r->p[i].process_limit = 12;
        r->p[i].failed_cohort_limit = 0; /* no dead ends: all delivered */
    }
    r->limit = 20 + (long)(rng() % 250);
    if (r->reference)
        for (int i = 0; i < 2; i++)
            if (r->limit > r->p[i].rcpt_pool + r->p[i].rcpt_extra)
                r->limit = r->p[i].rcpt_pool + r->p[i].rcpt_extra;
}

/*
 * Random workloads: two transports, a few big lists among small
 * messages, deliveries that end in random order; the bounds hold after
 * every event, every recipient is delivered, and every slot goes back to
 * its pool.
 */
static void test_bounds_random(void **state)
{
    enum { FLIGHT = 40, DESTS = 4 };

    (void)state;
    for (int seed = 1; seed <= 400; seed++) {
        struct core *core = core_create(&rcpt_callbacks, NULL);
        struct core_transport *t[2];
        struct core_queue *q[2 * DESTS];
        struct core_entry *flight[FLIGHT];
        long total = 0, done = 0;
        int nflight = 0, created = 0;
        core_time_t now = 0;
        struct run r;
        char key[16];

        rng_state = (uint64_t)seed * 977;
        run_params(&r, seed);
        core_recipient_limits_set(core, r.limit, r.minimum);
        for (int i = 0; i < 2; i++) {
            t[i] = core_transport_create(core, i ? "b" : "a", &r.p[i]);
            for (int d = 0; d < DESTS; d++) {
                snprintf(key, sizeof(key), "d%d", d);
                q[i * DESTS + d] = core_queue_create(t[i], key);
            }
        }
        for (int step = 0;; step++) {
            struct core_entry *e = NULL;

            bounds_check(&r, core, t, seed, step);
            if (created < r.n && rng() % 4 == 0) {
                long size = rng() % 5 == 0 ? 200 + (long)(rng() % 800)
                                           : 1 + (long)(rng() % 5);
                int both = !r.one_transport && rng() % 3 == 0;
                int first = both ? 0 : (int)(rng() % 2) * DESTS;

                fake_message(core, created++, size, q + first,
                             both ? 2 * DESTS : DESTS, now);
                total += size;
                continue;
            }
            if (nflight < FLIGHT && (nflight == 0 || rng() % 2))
                e = core_select(core, now);
            if (e != NULL) {
                flight[nflight++] = e;
            } else if (nflight > 0) {
                int i = (int)(rng() % nflight);

                done += core_entry_count(flight[i]);
                core_entry_done(flight[i], now, CORE_HOP_OK, NULL);
                flight[i] = flight[--nflight];
            } else if (created == r.n) {
                break;
            }
            now += SEC / 10;
        }
        if (done != total)
            fail_msg("seed %d: %ld of %ld recipients delivered", seed, done,
                     total);
        assert_true(TAILQ_EMPTY(&core->messages));
        assert_int_equal(core_recipient_count(core), 0);
        assert_int_equal(t[0]->rcpt_unused, r.p[0].rcpt_pool);
        assert_int_equal(t[1]->rcpt_unused, r.p[1].rcpt_pool);
        core_free(core);
        fake_free();
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_batches_within_bound),
        cmocka_unit_test(test_extra_pool_for_unread_preemptor),
        cmocka_unit_test(test_bounds_random),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
