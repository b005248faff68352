/*
 * test_core_finch - Finch's routing and delivery job scheduling, one test
 * per sentence of the seed that says what to choose
 *
 * Quotes are from ../shared/seeds/finch-mta-scheduling.txt.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core/core.h"

#define SEC 1000

/* Random numbers from a script, so that each pick is known. */
static unsigned rand_script[16];
static size_t rand_next;

static unsigned scripted(void *ctx)
{
    (void)ctx;
    return rand_script[rand_next++ % 16];
}

struct world {
    struct core_destdb *db;
    const char *hosts[6];
    int pref[6];
    struct core_finch_request r;
};

/* Four primary hosts a..d (preference 10), two secondary e, f (20). */
static void world_init(struct world *w)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f"};

    w->db = core_destdb_memory(600 * SEC);
    for (int i = 0; i < 6; i++) {
        w->hosts[i] = names[i];
        w->pref[i] = i < 4 ? 10 : 20;
    }
    w->r = (struct core_finch_request){
        .db = w->db,
        .hosts = w->hosts,
        .pref = w->pref,
        .nhosts = 6,
        .allowed_new = 1,
        .free_workers = 1,
        .backlog_threshold = 3,
        .host_limit = 2,
        .rand = scripted,
        .now = 1000 * SEC,
    };
    rand_next = 0;
    for (int i = 0; i < 16; i++)
        rand_script[i] = 0;
}

/* A connection to host opened at time t, carrying jobs. */
static void conn(struct world *w, const char *host, uint64_t id, int t,
                 int jobs)
{
    w->db->ops->conn_open(w->db, host, id, t * SEC);
    w->db->ops->conn_jobs(w->db, host, id, jobs, t * SEC);
}

static struct core_finch_choice choose(struct world *w)
{
    struct core_finch_choice c;

    core_finch_choose(&w->r, &c);
    return c;
}

#define EXPECT(c, HOW, HOST, CONN)                                             \
    do {                                                                       \
        struct core_finch_choice got_ = (c);                                   \
                                                                               \
        assert_string_equal(core_finch_how_name(got_.how),                     \
                            core_finch_how_name(HOW));                         \
        assert_int_equal(got_.host, HOST);                                     \
        assert_int_equal(got_.conn, CONN);                                     \
    } while (0)

/* Give free workers to the jobs in turn, as next_router_job() picks. */
static void fill(const struct core_finch_limits *l, int *c, size_t n,
                 int workers)
{
    for (;;) {
        int busy = 0, at;

        for (size_t i = 0; i < n; i++)
            busy += c[i];
        if ((at = core_finch_next_router_job(l, c, n, workers - busy)) < 0)
            return;
        c[at]++;
    }
}

/*
 * "A scale factor of 10 means that a message can use about 91% of an
 * otherwise-idle system, or two messages can use 47% each, etc. If a
 * second big envelope comes along when the first one already has 91% of
 * the system, then message 2 will slurp up the remaining 9% ... and as
 * jobs in message 1 complete message 2 will take over their workers
 * until the new equilibrium is reached."
 */
static void test_allowed_new_worker_scale(void **state)
{
    const struct core_finch_limits l = {20, 10};
    const int workers = 1100;
    int c[2] = {0, 0};

    (void)state;
    fill(&l, c, 1, workers);
    assert_int_equal(c[0], 1000); /* 90.9 % of 1100 */
    fill(&l, c, 2, workers);
    assert_int_equal(c[1], 91); /* the rest, less what stays free */
    /* each round a job of each message completes, and workers refill */
    for (int round = 0; round < 2000; round++) {
        c[0]--;
        c[1]--;
        fill(&l, c, 2, workers);
    }
    /* about 47 % each (the bound 10 (1100 - 2x) > x gives 47.6 %): the
     * first in order keeps a little more, 48.2 % and 47.2 % */
    assert_int_equal(c[0], 530);
    assert_int_equal(c[1], 519);
    /* "if job.message.concurrency < max_message_concurrency": always */
    assert_true(core_finch_allowed_new_worker(&l, 19, 0));
    assert_false(core_finch_allowed_new_worker(&l, 20, 0));
}

/*
 * "def next_router_job(jobs): if allowed_new_worker(jobs.first) then
 * return jobs.first else return next_router_job(jobs.rest)": the first
 * job in order whose message may have another worker, none when no job
 * may.
 */
static void test_next_router_job(void **state)
{
    const struct core_finch_limits l = {2, 10};
    const int c[] = {5, 2, 1, 0};

    (void)state;
    assert_int_equal(core_finch_next_router_job(&l, c, 4, 0), 2);
    assert_int_equal(core_finch_next_router_job(&l, c, 4, 1), 0);
    assert_int_equal(core_finch_next_router_job(&l, c, 2, 0), -1);
    assert_int_equal(core_finch_next_router_job(&l, c, 0, 100), -1);
}

/*
 * "First sort the active list by connection time and traverse it from
 * most recent to least recent. If we find one that has less than the
 * backlog threshold then the first we find is the worker for this job."
 */
static void test_active_by_recency_under_threshold(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    conn(&w, "a", 1, 10, 1); /* oldest, under the threshold */
    conn(&w, "b", 2, 30, 3); /* newest, at the threshold */
    conn(&w, "c", 3, 20, 2); /* middle, under it */
    EXPECT(choose(&w), CORE_FINCH_ACTIVE, 2, 3);
    /* even a job that may not have a new worker takes it */
    w.r.allowed_new = 0;
    EXPECT(choose(&w), CORE_FINCH_ACTIVE, 2, 3);
    w.db->ops->free(w.db);
}

/*
 * "If this fails then check if this job is allowed to use a new worker.
 * If it is not, we still allocate it to an active connection so that big
 * envelopes can get a free ride off smaller ones. ... We choose the first
 * connection in the active list that has fewer jobs than the newest
 * active connection (to spread the load evenly). If they all have the
 * same number of jobs, use the first one. If there are no active
 * connections then this job must wait"
 */
static void test_free_ride(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    w.r.allowed_new = 0;
    EXPECT(choose(&w), CORE_FINCH_WAIT, 0, 0);
    conn(&w, "a", 1, 10, 4);
    conn(&w, "b", 2, 30, 5); /* newest */
    conn(&w, "c", 3, 20, 4); /* first after it with fewer jobs */
    EXPECT(choose(&w), CORE_FINCH_FREE_RIDE, 2, 3);
    w.db->ops->conn_jobs(w.db, "c", 3, 5, 40 * SEC);
    w.db->ops->conn_jobs(w.db, "a", 1, 5, 40 * SEC);
    EXPECT(choose(&w), CORE_FINCH_FREE_RIDE, 1, 2); /* all equal: first */
    w.db->ops->free(w.db);
}

/*
 * "If there are destinations on its idle list the job should use the
 * most recent one (which presumably was active until not long ago)."
 * Idle comes before unused hosts.
 */
static void test_idle_before_unused(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    conn(&w, "a", 1, 10, 3); /* active, full */
    conn(&w, "b", 2, 11, 1);
    w.db->ops->conn_jobs(w.db, "b", 2, 0, 50 * SEC);
    conn(&w, "c", 3, 20, 1);
    w.db->ops->conn_jobs(w.db, "c", 3, 0, 40 * SEC);
    /* b went idle last, though c is the newer connection */
    EXPECT(choose(&w), CORE_FINCH_IDLE, 1, 2);
    w.db->ops->free(w.db);
}

/*
 * "If the system has no unused workers (or idle ones that we can close)
 * to handle the new connection, then add the job to an active connection
 * as above."
 */
static void test_no_free_worker_rides(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    w.r.free_workers = 0;
    conn(&w, "a", 1, 10, 3);
    EXPECT(choose(&w), CORE_FINCH_FREE_RIDE, 0, 1);
    w.db->ops->free(w.db);
}

/*
 * "If there are destinations on its unused list the job should pick one
 * at random and use that."
 */
static void test_unused_at_random(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    conn(&w, "a", 1, 10, 3);
    rand_script[0] = 2; /* unused are b, c, d: the third */
    EXPECT(choose(&w), CORE_FINCH_UNUSED, 3, 0);
    rand_script[1] = 4; /* 4 % 3: the second */
    EXPECT(choose(&w), CORE_FINCH_UNUSED, 2, 0);
    w.db->ops->free(w.db);
}

/*
 * "Otherwise, we have previously used all the possible destinations. If
 * there are destinations on the closed list, pick the oldest."
 */
static void test_oldest_closed(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    conn(&w, "a", 1, 10, 3);
    conn(&w, "b", 2, 1, 0);
    w.db->ops->conn_close(w.db, "b", 2, 50 * SEC);
    conn(&w, "c", 3, 1, 0);
    w.db->ops->conn_close(w.db, "c", 3, 30 * SEC); /* closed longest ago */
    conn(&w, "d", 4, 1, 0);
    w.db->ops->conn_close(w.db, "d", 4, 40 * SEC);
    EXPECT(choose(&w), CORE_FINCH_CLOSED, 2, 0);
    w.db->ops->free(w.db);
}

/*
 * "Finally, if there are destinations on the retry list, try one of them
 * at random." Those that "have not passed their retry time" are omitted.
 */
static void test_retry_last(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    conn(&w, "a", 1, 10, 3);
    w.db->ops->host_fail(w.db, "b", 999 * SEC);  /* passed */
    w.db->ops->host_fail(w.db, "c", 2000 * SEC); /* not yet */
    w.db->ops->host_fail(w.db, "d", 500 * SEC);  /* passed */
    rand_script[0] = 1;
    EXPECT(choose(&w), CORE_FINCH_RETRY, 3, 0);
    /* a closed host comes before any retry host */
    conn(&w, "d", 9, 1, 0);
    w.db->ops->conn_close(w.db, "d", 9, 5 * SEC);
    w.db->ops->host_ok(w.db, "d");
    EXPECT(choose(&w), CORE_FINCH_CLOSED, 3, 0);
    w.db->ops->free(w.db);
}

/*
 * "all of the working destinations have active connections ... we open
 * another connection to a destination picked at random from those with
 * the fewest concurrent connections. If they have all reached their
 * per-destination concurrency limit, add the job to an active connection
 * as above."
 */
static void test_more_to_fewest_then_ride(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    w.r.nhosts = 2; /* a and b alone */
    conn(&w, "a", 1, 10, 3);
    conn(&w, "a", 2, 11, 3);
    conn(&w, "b", 3, 12, 4);
    EXPECT(choose(&w), CORE_FINCH_MORE, 1, 0);
    conn(&w, "b", 4, 13, 4); /* both at the limit of 2 */
    EXPECT(choose(&w), CORE_FINCH_FREE_RIDE, 0, 2);
    w.r.host_limit = 0; /* no limit: random among the fewest (both) */
    rand_next = 0;
    rand_script[0] = 1;
    EXPECT(choose(&w), CORE_FINCH_MORE, 1, 0);
    w.db->ops->free(w.db);
}

/*
 * "For broken destinations it records when we should next bother to try
 * to connecting to them": a host whose connection failed while another
 * of its connections was still open (opened before the failure was
 * known) keeps that one, but gets no new connection before its retry
 * time, though it has the fewest; with no other host below its limit,
 * the job rides.
 */
static void test_more_not_to_failed(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    w.r.nhosts = 2; /* a and b alone */
    conn(&w, "a", 1, 10, 3);
    conn(&w, "a", 2, 11, 3);
    conn(&w, "b", 3, 12, 3);
    w.r.host_limit = 3;
    w.db->ops->host_fail(w.db, "b", 2000 * SEC);
    EXPECT(choose(&w), CORE_FINCH_MORE, 0, 0);
    conn(&w, "a", 4, 13, 3); /* a at its limit of 3 */
    EXPECT(choose(&w), CORE_FINCH_FREE_RIDE, 0, 4);
    w.r.now = 2000 * SEC; /* the retry time has passed */
    EXPECT(choose(&w), CORE_FINCH_MORE, 1, 0);
    w.db->ops->free(w.db);
}

/*
 * "In the second case, none of the job's primary destinations are
 * currently working. So we repeat the whole process from the
 * classification stage using the secondary destination list. ... If we
 * run out of fallbacks then the message must be deferred for later
 * retry."
 */
static void test_secondary_then_defer(void **state)
{
    struct world w;

    (void)state;
    world_init(&w);
    for (int i = 0; i < 4; i++)
        w.db->ops->host_fail(w.db, w.hosts[i], 2000 * SEC);
    conn(&w, "f", 1, 10, 1);
    EXPECT(choose(&w), CORE_FINCH_ACTIVE, 5, 1);
    w.db->ops->conn_jobs(w.db, "f", 1, 3, 20 * SEC);
    EXPECT(choose(&w), CORE_FINCH_UNUSED, 4, 0);
    w.db->ops->host_fail(w.db, "e", 2000 * SEC);
    w.db->ops->conn_close(w.db, "f", 1, 30 * SEC);
    w.db->ops->host_fail(w.db, "f", 2000 * SEC);
    EXPECT(choose(&w), CORE_FINCH_DEFER, 0, 0);
    /* the retry times pass: the primaries come back first */
    w.r.now = 2000 * SEC;
    EXPECT(choose(&w), CORE_FINCH_RETRY, 0, 0);
    w.db->ops->free(w.db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allowed_new_worker_scale),
        cmocka_unit_test(test_next_router_job),
        cmocka_unit_test(test_active_by_recency_under_threshold),
        cmocka_unit_test(test_free_ride),
        cmocka_unit_test(test_idle_before_unused),
        cmocka_unit_test(test_no_free_worker_rides),
        cmocka_unit_test(test_unused_at_random),
        cmocka_unit_test(test_oldest_closed),
        cmocka_unit_test(test_retry_last),
        cmocka_unit_test(test_more_to_fewest_then_ride),
        cmocka_unit_test(test_more_not_to_failed),
        cmocka_unit_test(test_secondary_then_defer),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
