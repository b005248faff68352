/*
 * test_core_job - preemptive job scheduling: the seed's golden sequences
 * and every situation of "How destination concurrency limits affect the
 * scheduling algorithm" (../shared/seeds/postfix-scheduler-readme.txt).
 *
 * Sequences are written as in the seed: one digit per selected entry, the
 * number of the message it belongs to.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core_fixture.h"

#define SEC 1000

struct world {
    struct fixture *fx;
    struct core_message *msg[10];
    char seq[256];
    int len;
    core_time_t now;
};

/*
 * A transport with slot cost k, loan, discount, minimum slots; one
 * recipient per entry; destinations with window 1 and no feedback, so
 * that a window is full exactly while a delivery is in flight. Messages
 * are released only by world_free(), so that their jobs can be inspected
 * after they are delivered.
 */
static void world_init(struct world *w, int k, int loan, int discount,
                       int min_slots)
{
    memset(w, 0, sizeof(*w));
    w->fx = fixture_new();
    w->fx->params.slot_cost = k;
    w->fx->params.slot_loan = loan;
    w->fx->params.slot_discount = discount;
    w->fx->params.min_slots = min_slots;
    w->fx->params.recipient_limit = 1;
    w->fx->params.initial_concurrency = 1;
    w->fx->params.concurrency_limit = 1;
    w->fx->params.positive.value = 0;
    w->fx->params.negative.value = 0;
    fixture_transport(w->fx);
    w->now = 100 * SEC;
}

static struct core_queue *dest(struct world *w, const char *key)
{
    struct core_queue *q = core_queue_find(w->fx->t, key);

    return q ? q : core_queue_create(w->fx->t, key);
}

/* Message n with count recipients for destination key, queued at sec. */
static void message(struct world *w, int n, int count, const char *key, int sec)
{
    struct core_queue *q = dest(w, key);

    w->msg[n] = core_message_create(w->fx->core, n, sec * SEC, NULL);
    for (int i = 0; i < count; i++)
        assert_int_equal(core_message_add(w->msg[n], q, i), 0);
}

static void world_free(struct world *w)
{
    for (int i = 0; i < 10; i++)
        if (w->msg[i])
            core_message_release(w->msg[i]);
    fixture_free(w->fx);
}

/* Select and deliver n entries, one at a time, appending to the sequence;
 * returns how many could be selected. */
static int run(struct world *w, int n)
{
    int done = 0;

    while (done < n) {
        struct core_entry *e = core_select(w->fx->core, w->now);

        if (e == NULL)
            break;
        w->seq[w->len++] = (char)('0' + e->peer->job->message->id);
        w->seq[w->len] = 0;
        core_entry_done(e, w->now, CORE_HOP_OK, NULL);
        w->now += SEC;
        done++;
    }
    return done;
}

static struct core_job *job_of(struct world *w, int n)
{
    return w->msg[n]->jobs;
}

/* Fill destination key's window with a delivery from outside the jobs. */
static void block(struct world *w, const char *key)
{
    core_queue_start(dest(w, key), w->now);
}

static void unblock(struct world *w, const char *key)
{
    core_queue_done(dest(w, key), w->now, CORE_HOP_OK, NULL);
}

/*
 * "Say we have ten-recipient mail followed by two two-recipient mails. If
 * the preemption happened when enough delivery slot accumulate (assuming
 * slot cost 2), the delivery sequence becomes 11112211113311."
 */
static void test_golden_no_loan(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 10, "d", 0);
    message(&w, 2, 2, "d", 0);
    message(&w, 3, 2, "d", 0);
    assert_int_equal(run(&w, 100), 14);
    assert_string_equal(w.seq, "11112211113311");
    world_free(&w);
}

/*
 * "If we use such slot loan, the delivery sequence becomes
 * 11221111331111": wait for only 50% of the necessary slots (discount 50).
 */
static void test_golden_discount(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 50, 1);
    message(&w, 1, 10, "d", 0);
    message(&w, 2, 2, "d", 0);
    message(&w, 3, 2, "d", 0);
    assert_int_equal(run(&w, 100), 14);
    assert_string_equal(w.seq, "11221111331111");
    world_free(&w);
}

/* "so by default we get ... within each transport we get the FIFO message
 * delivery": slot cost below 2 disables preemption. */
static void test_slot_cost_below_two_is_fifo(void **state)
{
    for (int k = 0; k < 2; k++) {
        struct world w;

        (void)state;
        world_init(&w, k, 3, 50, 1);
        message(&w, 1, 10, "d", 0);
        message(&w, 2, 2, "d", 0);
        message(&w, 3, 2, "d", 0);
        run(&w, 100);
        assert_string_equal(w.seq, "11111111112233");
        world_free(&w);
    }
}

/* "To avoid needless overhead, the preemption is not attempted if the
 * current job could never accumulate more than
 * transport_minimum_delivery_slots": 10 entries < 6 slots * cost 2. */
static void test_minimum_slots(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 0, 6);
    message(&w, 1, 10, "d", 0);
    message(&w, 2, 2, "d", 0);
    run(&w, 100);
    assert_string_equal(w.seq, "111111111122");
    world_free(&w);
}

/*
 * The candidate is "the one with maximum enqueue_time/recipient_entry_count"
 * among jobs that fit the slots the current job can still accumulate: an
 * older two-entry job beats a younger one-entry job when it waited more
 * than twice as long.
 */
static void test_candidate_by_age_per_entry(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 10, "d", 0);
    message(&w, 2, 2, "d", 10); /* waited 91 s at t=100: 91/2 = 45.5 */
    message(&w, 3, 1, "d", 60); /* waited 41 s: 41/1 = 41 */
    run(&w, 100);
    assert_string_equal(w.seq, "1111221131111");
    world_free(&w);

    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 10, "d", 0);
    message(&w, 2, 2, "d", 40); /* 61/2 = 30.5 */
    message(&w, 3, 1, "d", 60); /* 41 */
    run(&w, 100);
    assert_string_equal(w.seq, "1131111221111");
    world_free(&w);
}

/*
 * Situations 1 and 3 and the adoptive parent of the seed's section on
 * destination concurrency limits. Job 1 is preempted by job 4 ("job 1 was
 * preempted by job 4 and then job 4 was preempted by job 7"); 7 is blocked,
 * so "the next job 4 may complete before the job 7 becomes unblocked";
 * meanwhile 4 accumulates slots and is preempted by 8 too ("job 4 is
 * preempted by both job 7 AND job 8 at the same time"); "now job 8 becomes
 * blocked too, then job 4 completes": 7 and 8 are adopted by 1.
 */
static void test_blockers_preempted_twice_parent_gone(void **state)
{
    struct world w;
    struct core_job *j1, *j4, *j7, *j8;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 20, "a", 0);
    message(&w, 2, 30, "a", 0);
    message(&w, 3, 30, "a", 0);
    message(&w, 4, 6, "a", 0);
    message(&w, 5, 30, "a", 0);
    message(&w, 6, 30, "a", 0);
    j1 = job_of(&w, 1);
    j4 = job_of(&w, 4);
    /* 1 accumulates 12 slots, then 4 (6 entries) preempts it. */
    assert_int_equal(run(&w, 13), 13);
    assert_string_equal(w.seq, "1111111111114");
    assert_ptr_equal(j4->stack_parent, j1);
    assert_int_equal(j4->stack_level, 1);
    assert_int_equal(j1->slots_available, 0);

    message(&w, 7, 1, "b", 1);
    message(&w, 8, 1, "c", 1);
    j7 = job_of(&w, 7);
    j8 = job_of(&w, 8);
    block(&w, "b");
    /* 4 gets 2 slots; 7 preempts it, is blocked; 4 goes on. */
    assert_int_equal(run(&w, 2), 2);
    assert_string_equal(w.seq + 13, "44");
    assert_ptr_equal(j7->stack_parent, j4);
    assert_int_equal(j7->stack_level, 2);
    assert_true(CORE_JOB_BLOCKER_P(j7));
    assert_ptr_equal(TAILQ_FIRST(&w.fx->t->jobs), j7);
    assert_int_equal(run(&w, 1), 1);
    block(&w, "c");
    /* 4 has 2 slots again: 8 preempts it too, and is blocked. */
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq + 13, "4444");
    assert_ptr_equal(j8->stack_parent, j4);
    assert_ptr_equal(TAILQ_FIRST(&j4->stack_children), j7);
    assert_ptr_equal(TAILQ_NEXT(j7, stack_siblings), j8);
    assert_true(CORE_JOB_BLOCKER_P(j8));
    /* The job list: 7--8--4--1--2--3--5--6. */
    {
        const int order[] = {7, 8, 4, 1, 2, 3, 5, 6};
        struct core_job *job = TAILQ_FIRST(&w.fx->t->jobs);

        for (int i = 0; i < 8; i++, job = TAILQ_NEXT(job, list))
            assert_int_equal(job->message->id, order[i]);
        assert_null(job);
    }
    /* 4 completes before its children: they are adopted by 1. */
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq + 13, "44444");
    assert_int_equal(j4->stack_level, -1);
    assert_ptr_equal(j7->stack_parent, j1);
    assert_ptr_equal(j8->stack_parent, j1);
    assert_int_equal(j7->stack_level, 2);
    assert_int_equal(j1->slots_available, 0);
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq + 18, "1");
    /* 7 unblocked: selection restarts at the head of the list; 8 is
     * still blocked. */
    unblock(&w, "b");
    assert_int_equal(run(&w, 2), 2);
    assert_string_equal(w.seq + 19, "71");
    unblock(&w, "c");
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq + 21, "8");
    assert_null(j1->stack_children.tqh_first);
    world_free(&w);
}

/*
 * Situation 2: "if both 7 and 4 are blocked, then 1 is completed, then 7
 * becomes unblocked and is completed, then 2 is completed and only after
 * that 4 becomes unblocked and is completed".
 */
static void test_blockers_complete_out_of_order(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 12, "a", 0);
    message(&w, 2, 10, "a", 0);
    message(&w, 4, 4, "d", 0);
    assert_int_equal(run(&w, 9), 9);
    assert_string_equal(w.seq, "111111114");
    message(&w, 7, 1, "b", 1);
    assert_int_equal(run(&w, 1), 1); /* 4 has 2 slots now */
    block(&w, "b");
    block(&w, "d");
    /* 7 preempts 4; 7 and 4 are blocked; 1 goes on to its end. */
    assert_int_equal(run(&w, 4), 4);
    assert_string_equal(w.seq + 10, "1111");
    assert_true(CORE_JOB_BLOCKER_P(job_of(&w, 7)));
    assert_true(CORE_JOB_BLOCKER_P(job_of(&w, 4)));
    assert_int_equal(job_of(&w, 1)->stack_level, -1);
    assert_int_equal(run(&w, 3), 3);
    assert_string_equal(w.seq + 14, "222");
    unblock(&w, "b");
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq + 17, "7");
    assert_int_equal(run(&w, 100), 7);
    assert_string_equal(w.seq + 18, "2222222");
    assert_null(core_select(w.fx->core, w.now));
    unblock(&w, "d");
    assert_int_equal(run(&w, 100), 2);
    assert_string_equal(w.seq, "111111114411112227222222244");
    world_free(&w);
}

/*
 * When a preemptor leaves the stack, the slots it did not use go back to
 * the job it preempted; an adoptive parent gets nothing back, as in the
 * reference (qmgr_job_pop() refunds only a parent one level up), because
 * it never paid for the preemption. 7 is charged 2 entries x 2 slots when
 * it preempts 4; 4 completes and 7 is adopted by 1; 7's destination dies
 * and its two entries are deferred unused: 1 stays at 0 slots (sluice
 * used to refund it the 4, which let 1 preempt again without having
 * earned it).
 */
static void test_unused_slots_not_to_adoptive_parent(void **state)
{
    struct world w;
    struct core_job *j1;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 30, "a", 0);
    message(&w, 4, 8, "a", 0);
    j1 = job_of(&w, 1);
    assert_int_equal(run(&w, 17), 17);
    assert_string_equal(w.seq, "11111111111111114");
    message(&w, 7, 2, "b", 1);
    block(&w, "b");
    assert_int_equal(run(&w, 7), 7);
    assert_string_equal(w.seq + 17, "4444444");
    assert_ptr_equal(job_of(&w, 7)->stack_parent, j1);
    assert_int_equal(job_of(&w, 7)->slots_used, -2);
    assert_int_equal(j1->slots_available, 0);
    /* The destination of 7 dies: its entries are deferred, not used. */
    core_queue_done(dest(&w, "b"), w.now, CORE_HOP_FAIL, "refused");
    assert_int_equal(w.fx->dead_calls, 1);
    assert_int_equal(w.fx->deferred_calls, 2);
    assert_int_equal(job_of(&w, 7)->stack_level, -1);
    assert_null(job_of(&w, 7)->stack_parent);
    assert_int_equal(j1->slots_available, 0);
    world_free(&w);
}

/* The original parent does get its unused slots back. */
static void test_unused_slots_to_parent(void **state)
{
    struct world w;
    struct core_job *j1;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 30, "a", 0);
    j1 = job_of(&w, 1);
    assert_int_equal(run(&w, 4), 4); /* 1 has 4 slots */
    message(&w, 7, 2, "b", 1);
    block(&w, "b");
    assert_int_equal(run(&w, 1), 1); /* 7 preempts 1, is blocked; "1" */
    assert_string_equal(w.seq, "11111");
    assert_ptr_equal(job_of(&w, 7)->stack_parent, j1);
    assert_int_equal(j1->slots_available, 1);
    core_queue_done(dest(&w, "b"), w.now, CORE_HOP_FAIL, "refused");
    assert_int_equal(w.fx->deferred_calls, 2);
    assert_int_equal(j1->slots_available, 5);
    world_free(&w);
}

/*
 * A transport whose windows are all full answers "nothing" without
 * walking its jobs (Postfix asks the job list only when some queue has
 * "window > busy" and an entry waiting): no job is marked a blocker, and
 * the current job stays where it was. sluice used to walk every job and
 * mark it, which cost a pass over all in-core jobs per delivery.
 */
static void test_full_windows_cost_nothing(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 2, 0, 0, 1);
    message(&w, 1, 3, "a", 0);
    message(&w, 2, 3, "a", 1);
    block(&w, "a");
    assert_int_equal(w.fx->t->ready_queues, 0);
    assert_null(core_select(w.fx->core, w.now));
    assert_false(CORE_JOB_BLOCKER_P(job_of(&w, 1)));
    assert_false(CORE_JOB_BLOCKER_P(job_of(&w, 2)));
    assert_ptr_equal(w.fx->t->current, job_of(&w, 1));
    unblock(&w, "a");
    assert_int_equal(w.fx->t->ready_queues, 1);
    assert_int_equal(run(&w, 100), 6);
    assert_string_equal(w.seq, "111222");
    assert_int_equal(w.fx->t->ready_queues, 0);
    world_free(&w);
}

/*
 * A blocker job that gains an entry is reconsidered at once: selection
 * starts again at the head of the job list, as the reference's
 * qmgr_job_obtain() does, instead of carrying on from the current job
 * behind it. 1 is blocked on a, 2 is selected and becomes current; 1
 * gains an entry for c, which is open: 1 goes next ("21"; sluice used to
 * give "22" and leave 1 waiting behind 2).
 */
static void test_blocker_gaining_entry_goes_first(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 0, 0, 0, 1);
    message(&w, 1, 2, "a", 0);
    message(&w, 2, 3, "b", 1);
    block(&w, "a");
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq, "2");
    assert_true(CORE_JOB_BLOCKER_P(job_of(&w, 1)));
    assert_int_equal(core_message_add(w.msg[1], dest(&w, "c"), 2), 0);
    assert_false(CORE_JOB_BLOCKER_P(job_of(&w, 1)));
    assert_int_equal(run(&w, 1), 1);
    assert_string_equal(w.seq, "21");
    world_free(&w);
}

/* "the job list is by default kept in the order the message was picked up
 * by the nqmgr": a job created later for an older message is placed by
 * its age, and becomes current if it lands in front of the current job. */
static void test_job_link_by_age(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, 0, 0, 0, 1);
    message(&w, 2, 3, "d", 20);
    assert_int_equal(run(&w, 1), 1);
    message(&w, 1, 2, "d", 10);
    message(&w, 3, 1, "d", 30);
    run(&w, 100);
    assert_string_equal(w.seq, "211223");
    world_free(&w);
}

/* "foreach transport (round-robin-by-transport)". */
static void test_round_robin_transports(void **state)
{
    struct world w;
    struct core_transport *lmtp;
    struct core_message *m;

    (void)state;
    world_init(&w, 0, 0, 0, 1);
    lmtp = core_transport_create(w.fx->core, "lmtp", &w.fx->params);
    message(&w, 1, 3, "d", 0);
    m = core_message_create(w.fx->core, 2, 0, NULL);
    core_message_add(m, core_queue_create(lmtp, "x"), 0);
    core_message_add(m, core_queue_create(lmtp, "y"), 1);
    core_message_add(m, core_queue_find(lmtp, "y"), 2);
    core_message_release(m);
    run(&w, 100);
    assert_string_equal(w.seq, "212121");
    world_free(&w);
}

/* "foreach job's peer (round-robin-by-destination)". */
static void test_round_robin_peers(void **state)
{
    struct world w;
    struct core_message *m;

    (void)state;
    world_init(&w, 0, 0, 0, 1);
    w.fx->t->params.concurrency_limit = 0;
    m = core_message_create(w.fx->core, 1, 0, NULL);
    for (int i = 0; i < 6; i++)
        core_message_add(m, dest(&w, i % 2 ? "odd" : "even"), i);
    core_message_release(m);
    for (int i = 0; i < 6; i++) {
        struct core_entry *e = core_select(w.fx->core, w.now);

        assert_non_null(e);
        assert_string_equal(e->peer->queue->key, i % 2 ? "odd" : "even");
        assert_int_equal(e->rcpt[0], i);
        core_entry_done(e, w.now, CORE_HOP_OK, NULL);
    }
    world_free(&w);
}

/* Recipients of one message for one destination are batched up to the
 * recipient limit ("The addresses for same nexthop are batched in the
 * entries up to recipient_concurrency limit"). */
static void test_batching(void **state)
{
    struct world w;
    struct core_message *m;
    struct core_entry *e;
    int seen = 0;

    (void)state;
    world_init(&w, 5, 3, 50, 3);
    w.fx->t->params.recipient_limit = 4;
    m = core_message_create(w.fx->core, 1, 0, NULL);
    for (int i = 0; i < 10; i++)
        core_message_add(m, dest(&w, "d"), i);
    core_message_release(m);
    assert_int_equal(m->jobs->read_entries, 3);
    while ((e = core_select(w.fx->core, w.now)) != NULL) {
        assert_int_equal(e->nrcpt, seen < 8 ? 4 : 2);
        for (int i = 0; i < e->nrcpt; i++)
            assert_int_equal(e->rcpt[i], seen++);
        core_entry_done(e, w.now, CORE_HOP_OK, NULL);
    }
    assert_int_equal(seen, 10);
    assert_int_equal(w.fx->message_done_calls, 1);
    world_free(&w);
}

/* A message is done when its last entry is; a recipient for a dead
 * destination is refused; a dead destination's waiting entries are
 * deferred through the callback. */
static void test_message_lifetime_and_dead_destination(void **state)
{
    struct world w;
    struct core_message *m;
    struct core_entry *e;
    struct core_queue *q;

    (void)state;
    world_init(&w, 5, 3, 50, 3);
    q = dest(&w, "d");
    m = core_message_create(w.fx->core, 1, 0, NULL);
    for (int i = 0; i < 3; i++)
        core_message_add(m, q, i);
    core_message_release(m);
    e = core_select(w.fx->core, w.now);
    core_entry_done(e, w.now, CORE_HOP_FAIL, "connection refused");
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    assert_int_equal(w.fx->dead_calls, 1);
    assert_int_equal(w.fx->deferred_calls, 2);
    assert_int_equal(q->todo_count, 0);
    assert_int_equal(w.fx->message_done_calls, 1);
    assert_int_equal(TAILQ_EMPTY(&w.fx->core->messages), 1);
    m = core_message_create(w.fx->core, 2, 0, NULL);
    assert_int_equal(core_message_add(m, q, 0), -1);
    core_message_release(m);
    assert_int_equal(w.fx->message_done_calls, 2);
    assert_int_equal(TAILQ_EMPTY(&w.fx->core->messages), 1);
    world_free(&w);
}

/* A message whose recipients are still being routed outside core/ (Finch's
 * routing workers) is held: it is not done while its entries are, nor
 * does core/ read its next batch; the last hold's end finishes it. */
static void test_message_hold(void **state)
{
    struct world w;
    struct core_message *m;
    struct core_entry *e;

    (void)state;
    world_init(&w, 5, 3, 50, 3);
    m = core_message_create(w.fx->core, 1, 0, NULL);
    core_message_hold(m);
    core_message_hold(m);
    core_message_release(m);
    assert_int_equal(w.fx->message_done_calls, 0);
    core_message_add(m, dest(&w, "d"), 0);
    core_message_unhold(m, w.now);
    e = core_select(w.fx->core, w.now);
    core_entry_done(e, w.now, CORE_HOP_OK, NULL);
    assert_int_equal(w.fx->message_done_calls, 0);
    core_message_unhold(m, w.now);
    assert_int_equal(w.fx->message_done_calls, 1);
    assert_int_equal(TAILQ_EMPTY(&w.fx->core->messages), 1);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_no_loan),
        cmocka_unit_test(test_golden_discount),
        cmocka_unit_test(test_slot_cost_below_two_is_fifo),
        cmocka_unit_test(test_minimum_slots),
        cmocka_unit_test(test_candidate_by_age_per_entry),
        cmocka_unit_test(test_blockers_preempted_twice_parent_gone),
        cmocka_unit_test(test_blockers_complete_out_of_order),
        cmocka_unit_test(test_unused_slots_not_to_adoptive_parent),
        cmocka_unit_test(test_unused_slots_to_parent),
        cmocka_unit_test(test_full_windows_cost_nothing),
        cmocka_unit_test(test_blocker_gaining_entry_goes_first),
        cmocka_unit_test(test_job_link_by_age),
        cmocka_unit_test(test_round_robin_transports),
        cmocka_unit_test(test_round_robin_peers),
        cmocka_unit_test(test_batching),
        cmocka_unit_test(test_message_lifetime_and_dead_destination),
        cmocka_unit_test(test_message_hold),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
