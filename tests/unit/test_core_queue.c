/*
 * test_core_queue - destination queues: dead destinations, revival, rate
 * delays, process limits, timers
 *
 * Quotes are from ../shared/seeds/postfix-scheduler-readme.txt and
 * ../shared/postfix-reference-notes.md.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "core_fixture.h"

#define SEC 1000

/*
 * "a destination is declared 'dead' after a configurable number of
 * pseudo-cohorts suffers from connection or handshake failures": with
 * limit 2 and negative feedback 0 (window stays 4), 8 failures = 2
 * pseudo-cohorts. A dead destination is "suspended for
 * minimal_backoff_time (a timer the caller learns from core), then tried
 * again".
 */
static void test_dead_after_cohort_limit_and_revival_timer(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 4;
    fx->params.negative.value = 0;
    fx->params.failed_cohort_limit = 2;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "dead.example");
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    for (int i = 1; i <= 7; i++) {
        fixture_start(q, 1, i * SEC);
        core_queue_done(q, i * SEC, CORE_HOP_FAIL, "connect refused");
        assert_int_equal(q->state, CORE_QUEUE_READY);
        assert_float_equal(q->fail_cohorts, i * 0.25, 1e-9);
    }
    fixture_start(q, 1, 8 * SEC);
    core_queue_done(q, 8 * SEC, CORE_HOP_FAIL, "connect refused");
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    assert_int_equal(fx->dead_calls, 1);
    assert_string_equal(q->dead_reason, "connect refused");
    assert_false(core_queue_can_start(q));
    assert_string_equal(fixture_last(fx),
                        "smtp:dead.example: destination dead after 2.00 "
                        "failed pseudo-cohorts (window 4): connect refused; "
                        "retry in 300s");
    /* What `sluice status` shows of it (status.c). */
    {
        struct core_queue_status st;
        struct core_transport_status ts;

        core_queue_status(q, &st);
        assert_string_equal(st.key, "dead.example");
        assert_true(st.dead);
        assert_false(st.rate_wait);
        assert_string_equal(st.dead_reason, "connect refused");
        assert_int_equal(st.until, 308 * SEC);
        assert_int_equal(st.busy, 0);
        assert_int_equal(st.todo, 0);
        assert_float_equal(st.fail_cohorts, 2.0, 1e-9);
        core_transport_status(fx->t, &ts);
        assert_string_equal(ts.name, "smtp");
        assert_int_equal(ts.queues, 1);
        assert_int_equal(ts.busy, 0);
        assert_false(ts.suspended);
        assert_int_equal(ts.suspended_until, CORE_TIME_NEVER);
    }
    /* The caller learns when to come back. */
    assert_int_equal(core_next_timer(fx->core), 308 * SEC);
    core_run_timers(fx->core, 308 * SEC - 1);
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    core_run_timers(fx->core, 308 * SEC);
    assert_int_equal(q->state, CORE_QUEUE_READY);
    assert_int_equal(q->window, 4); /* initial: nothing busy */
    assert_float_equal(q->fail_cohorts, 0, 1e-9);
    assert_int_equal(fx->alive_calls, 1);
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    assert_string_equal(fixture_last(fx), "smtp:dead.example: destination "
                                          "alive again (backoff timer), "
                                          "window 4");
    fixture_free(fx);
}

/*
 * "Success: fail_cohorts = 0; a dead queue comes back with window = busy
 * (or the initial concurrency if nothing is busy)". Failures reported
 * for a dead queue change nothing.
 */
static void test_dead_revived_by_success_in_flight(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.negative.value = 0; /* window stays 5 */
    fixture_transport(fx);
    q = core_queue_create(fx->t, "x.example");
    fixture_start(q, 5, 0);
    for (int i = 0; i < 4; i++)
        core_queue_done(q, 0, CORE_HOP_FAIL, "timeout");
    fixture_start(q, 4, 0);
    core_queue_done(q, 0, CORE_HOP_FAIL, "timeout");
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    assert_int_equal(q->busy, 4);
    /* Another failure in flight on the dead queue: nothing changes. */
    core_queue_done(q, 0, CORE_HOP_FAIL, "timeout");
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    assert_int_equal(fx->dead_calls, 1);
    core_queue_done(q, 1, CORE_HOP_OK, NULL);
    assert_int_equal(q->state, CORE_QUEUE_READY);
    assert_int_equal(q->window, 3); /* busy when it came back */
    assert_int_equal(q->busy, 2);
    assert_int_equal(fx->alive_calls, 1);
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    fixture_free(fx);
}

/* "an explicit flush revives it at once". */
static void test_flush_revives(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 1;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "f.example");
    fixture_start(q, 1, 0);
    core_queue_done(q, 0, CORE_HOP_FAIL, "refused");
    assert_int_equal(q->state, CORE_QUEUE_DEAD);
    core_queue_flush(q, 10);
    assert_int_equal(q->state, CORE_QUEUE_READY);
    assert_int_equal(q->window, 1);
    assert_null(q->dead_reason);
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    /* Flushing a live queue changes nothing. */
    core_queue_flush(q, 11);
    assert_int_equal(fx->alive_calls, 1);
    fixture_free(fx);
}

/* failed_cohort_limit 0: never declared dead. */
/*
 * A death another party found (a cluster's member): dead with its reason
 * until the revival given, which a later one pushes back and an earlier
 * one does not; a success revives it as our own death would; a revival
 * reported revives it; a suspension stands.
 */
static void test_queue_kill(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q, *s;

    (void)state;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "k.example");
    core_queue_kill(q, SEC, 31 * SEC, "refused", "by the cluster");
    assert_string_equal(fixture_last(fx),
                        "smtp:k.example: destination dead (by the cluster): "
                        "refused; retry in 30s");
    assert_true(core_queue_dead(q));
    assert_int_equal(fx->dead_calls, 1);
    assert_string_equal(core_queue_refusal(q), "refused");
    assert_int_equal(core_next_timer(fx->core), 31 * SEC);
    core_queue_kill(q, 2 * SEC, 20 * SEC, "x", "by the cluster");
    assert_int_equal(core_next_timer(fx->core), 31 * SEC); /* earlier */
    core_queue_kill(q, 2 * SEC, 40 * SEC, "x", "by the cluster");
    assert_int_equal(core_next_timer(fx->core), 40 * SEC); /* later */
    assert_int_equal(fx->dead_calls, 1);
    core_queue_revive(q, "by the cluster");
    assert_false(core_queue_dead(q));
    assert_string_equal(fixture_last(fx), "smtp:k.example: destination alive "
                                          "again (by the cluster), window 5");
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    /* the revival time passed already: nothing */
    core_queue_kill(q, 50 * SEC, 50 * SEC, "x", "by the cluster");
    assert_false(core_queue_dead(q));
    /* a success in flight revives it, as our own death */
    fixture_start(q, 1, 51 * SEC);
    core_queue_kill(q, 52 * SEC, 90 * SEC, "x", "by the cluster");
    core_queue_done(q, 53 * SEC, CORE_HOP_OK, NULL);
    assert_false(core_queue_dead(q));
    /* an operator's suspension stands */
    s = core_queue_create(fx->t, "s.example");
    core_queue_suspend(s, SEC, 0, "suspended by the operator");
    core_queue_kill(s, SEC, 9 * SEC, "refused", "by the cluster");
    core_queue_revive(s, "by the cluster");
    assert_true(core_queue_dead(s));
    assert_string_equal(core_queue_refusal(s), "suspended by the operator");
    fixture_free(fx);
}

static void test_cohort_limit_zero_never_dies(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.failed_cohort_limit = 0;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "n.example");
    for (int i = 0; i < 100; i++) {
        fixture_start(q, 1, i);
        core_queue_done(q, i, CORE_HOP_FAIL, "refused");
    }
    assert_int_equal(q->state, CORE_QUEUE_READY);
    assert_int_equal(q->window, 1);
    fixture_free(fx);
}

/*
 * "default_destination_rate_delay: pause between deliveries to one
 * destination (forces window 1)".
 */
static void test_destination_rate_delay(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q, *other;

    (void)state;
    fx->params.destination_rate_delay = 2 * SEC;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "slow.example");
    other = core_queue_create(fx->t, "other.example");
    assert_int_equal(q->window, 1);
    core_queue_start(q, 0);
    assert_false(core_queue_can_start(q));
    assert_true(core_queue_can_start(other));
    core_queue_done(q, 5 * SEC, CORE_HOP_OK, NULL);
    assert_int_equal(q->window, 1); /* feedback cannot pass the limit */
    assert_int_equal(q->state, CORE_QUEUE_RATE_WAIT);
    assert_int_equal(core_queue_window_report(q), -1);
    assert_false(core_queue_can_start(q));
    assert_int_equal(core_next_timer(fx->core), 7 * SEC);
    core_run_timers(fx->core, 7 * SEC);
    assert_int_equal(q->state, CORE_QUEUE_READY);
    assert_true(core_queue_can_start(q));
    fixture_free(fx);
}

/*
 * "default_transport_rate_delay: pause between deliveries on one
 * transport": one delivery at a time, whatever the destination.
 */
static void test_transport_rate_delay(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *a, *b;

    (void)state;
    fx->params.transport_rate_delay = 1 * SEC;
    fixture_transport(fx);
    a = core_queue_create(fx->t, "a.example");
    b = core_queue_create(fx->t, "b.example");
    core_queue_start(a, 0);
    assert_false(core_queue_can_start(b));
    assert_false(core_queue_can_start(a));
    core_queue_done(a, 3 * SEC, CORE_HOP_OK, NULL);
    assert_false(core_queue_can_start(b));
    assert_int_equal(core_next_timer(fx->core), 4 * SEC);
    core_run_timers(fx->core, 4 * SEC);
    assert_true(core_queue_can_start(b));
    fixture_free(fx);
}

/* default_process_limit caps deliveries across the transport's queues. */
/*
 * On-demand session caching, as the reference's qmgr_entry_select()
 * decides it (postfix-reference-notes: smtp_connection_cache_on_demand,
 * "reuse connections when a destination has a backlog"): "Turn on
 * session caching after we get up to speed. Don't enable session caching
 * just because we have concurrent deliveries", i.e. at a delivery back to
 * back with the last one ("last_done + 1 >= event_time()", whole
 * seconds); "Turn off session caching when concurrency drops and we're
 * running out of steam": at a start with no other in flight that is not
 * back to back.
 */
static void test_cache_on_demand(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 5;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "demand.example");
    /* a burst within the initial window: concurrent, never back to back */
    fixture_start(q, 3, 10 * SEC);
    assert_false(core_queue_cache_store(q));
    core_queue_done(q, 10 * SEC + 400, CORE_HOP_OK, NULL);
    /* 11.9 s: the second after the last end, back to back: on */
    core_queue_start(q, 11 * SEC + 900);
    assert_true(core_queue_cache_store(q));
    core_queue_done(q, 12 * SEC, CORE_HOP_OK, NULL);
    core_queue_done(q, 12 * SEC, CORE_HOP_OK, NULL);
    core_queue_done(q, 12 * SEC, CORE_HOP_OK, NULL);
    /* it stays on while deliveries follow each other... */
    core_queue_start(q, 13 * SEC + 999);
    assert_true(core_queue_cache_store(q));
    /* ...or overlap, even long after the last end */
    core_queue_start(q, 30 * SEC);
    assert_true(core_queue_cache_store(q));
    core_queue_done(q, 31 * SEC, CORE_HOP_OK, NULL);
    core_queue_done(q, 31 * SEC, CORE_HOP_OK, NULL);
    /* alone and two whole seconds after the last end: off */
    core_queue_start(q, 33 * SEC);
    assert_false(core_queue_cache_store(q));
    /* and a concurrent start alone does not turn it on again */
    core_queue_start(q, 40 * SEC);
    assert_false(core_queue_cache_store(q));
    fixture_free(fx);
}

static void test_process_limit(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *a, *b;

    (void)state;
    fx->params.process_limit = 3;
    fixture_transport(fx);
    a = core_queue_create(fx->t, "a.example");
    b = core_queue_create(fx->t, "b.example");
    fixture_start(a, 2, 0);
    core_queue_start(b, 0);
    assert_int_equal(fx->t->busy, 3);
    assert_false(core_queue_can_start(a));
    assert_false(core_queue_can_start(b));
    core_queue_done(a, 1, CORE_HOP_OK, NULL);
    assert_true(core_queue_can_start(b));
    fixture_free(fx);
}

/*
 * A cluster's leases cap a queue below its window (issue 22): with window
 * 5 and cap 2 the third start waits; a cap of 0 stops starts; -1 lifts it.
 */
static void test_queue_cap(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *a;

    (void)state;
    fx->params.initial_concurrency = 5;
    fixture_transport(fx);
    a = core_queue_create(fx->t, "a.example");
    core_queue_cap_set(a, 2);
    fixture_start(a, 2, 0);
    assert_false(core_queue_can_start(a));
    core_queue_cap_set(a, 3);
    assert_true(core_queue_can_start(a));
    core_queue_cap_set(a, 0);
    assert_false(core_queue_can_start(a));
    core_queue_cap_set(a, -1);
    assert_true(core_queue_can_start(a));
    fixture_start(a, 3, 0);
    assert_false(core_queue_can_start(a)); /* the window, 5 */
    for (int i = 0; i < 5; i++)
        core_queue_done(a, 1, CORE_HOP_OK, NULL);
    fixture_free(fx);
}

/*
 * A reload changes a transport's parameters under its live queues: a
 * window above the new concurrency limit comes down to it at once (the
 * limit is the operator's promise to the receiver), a dead queue stays
 * dead, new queues start at the new initial window, the process limit
 * applies to the next start, and the job policy is kept (its state lives
 * in the job list).
 */
static void test_transport_update(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_transport_params p;
    struct core_queue *a, *b, *dead;

    (void)state;
    fx->params.initial_concurrency = 10;
    fx->params.concurrency_limit = 20;
    fixture_transport(fx);
    a = core_queue_create(fx->t, "a.example");
    dead = core_queue_create(fx->t, "dead.example");
    fixture_start(a, 6, 0);
    for (int i = 0; i < 20 && CORE_QUEUE_READY_P(dead); i++) {
        fixture_start(dead, 1, 0);
        core_queue_done(dead, 0, CORE_HOP_FAIL, "connection refused");
    }
    assert_true(CORE_QUEUE_DEAD_P(dead));
    assert_int_equal(a->window, 10);

    p = fx->params;
    p.concurrency_limit = 4;
    p.process_limit = 6;
    p.scheduler = &core_policy_round_robin;
    core_transport_update(fx->t, &p);
    assert_int_equal(a->window, 4);
    assert_false(core_queue_can_start(a)); /* busy 6 > window 4 */
    assert_true(CORE_QUEUE_DEAD_P(dead));
    assert_int_equal(fx->t->params.concurrency_limit, 4);
    assert_ptr_equal(fx->t->scheduler, &core_policy_preemptive);
    assert_ptr_equal(fx->t->params.scheduler, &core_policy_preemptive);
    core_queue_done(a, 1, CORE_HOP_OK, NULL);
    core_queue_done(a, 1, CORE_HOP_OK, NULL);
    core_queue_done(a, 1, CORE_HOP_OK, NULL);
    assert_int_equal(a->window, 4); /* positive feedback stops at the limit */
    assert_true(core_queue_can_start(a));
    b = core_queue_create(fx->t, "b.example");
    assert_int_equal(b->window, 4);
    fixture_start(b, 3, 0);
    assert_int_equal(fx->t->busy, 6);
    assert_false(core_queue_can_start(b)); /* window 4 > busy 3, but 6 of 6 */
    fixture_free(fx);
}

/*
 * A transport that cannot work (its local socket is missing) is
 * suspended for transport_retry_time: everything waiting on any of its
 * queues is deferred with the reason, nothing starts, new recipients are
 * refused; the delivery that found out is neutral for its destination;
 * at the end of the time it works again.
 */
static void test_transport_suspend(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_message *m;
    struct core_queue *a, *b;
    struct core_entry *e;

    (void)state;
    fx->params.recipient_limit = 1;
    fixture_transport(fx);
    a = core_queue_create(fx->t, "a.example");
    b = core_queue_create(fx->t, "b.example");
    m = core_message_create(fx->core, 1, 0, NULL);
    for (int i = 0; i < 4; i++)
        assert_int_equal(core_message_add(m, a, (uint64_t)i), 0);
    assert_int_equal(core_message_add(m, b, 4), 0);
    core_message_release(m);
    e = core_select(fx->core, 0);
    assert_non_null(e);
    {
        struct core_job_status js;
        const struct core_job *job = core_job_next(fx->t, NULL);

        assert_non_null(job);
        core_job_status(job, &js);
        assert_ptr_equal(js.message, m);
        assert_int_equal(js.selected_entries, 1);
        assert_int_equal(js.read_entries, 5);
        assert_false(js.preempting);
        assert_null(core_job_next(fx->t, job));
    }
    core_transport_suspend(fx->t, 0, 60000, "connect to /run/lmtp: gone");
    assert_true(CORE_TRANSPORT_SUSPENDED_P(fx->t));
    assert_int_equal(fx->deferred_calls, 4);
    assert_string_equal(fixture_last(fx), "smtp: transport suspended for 60s: "
                                          "connect to /run/lmtp: gone");
    assert_null(core_select(fx->core, 0));
    {
        struct core_transport_status ts;
        struct core_queue_status st;

        core_transport_status(fx->t, &ts);
        assert_true(ts.suspended);
        assert_string_equal(ts.suspend_reason, "connect to /run/lmtp: gone");
        assert_int_equal(ts.suspended_until, 60000);
        assert_int_equal(ts.busy, 1);
        assert_int_equal(ts.queues, 2);
        assert_int_equal(ts.jobs, 0); /* its entries were deferred */
        assert_string_equal(ts.scheduler, "preemptive");
        core_queue_status(a, &st);
        assert_int_equal(st.busy, 1);
        assert_int_equal(st.todo, 0); /* deferred by the suspension */
        assert_false(st.dead);
        assert_null(st.dead_reason);
        assert_int_equal(st.until, CORE_TIME_NEVER);
    }
    m = core_message_create(fx->core, 2, 0, NULL);
    assert_int_equal(core_message_add(m, b, 0), -1);
    core_message_release(m);
    core_entry_done(e, 0, CORE_HOP_NEUTRAL, "connect to /run/lmtp: gone");
    assert_int_equal(a->window, 5);
    assert_int_equal(a->fail_cohorts, 0);
    assert_true(CORE_QUEUE_READY_P(a));
    assert_int_equal(core_next_timer(fx->core), 60000);
    core_run_timers(fx->core, 60000);
    assert_false(CORE_TRANSPORT_SUSPENDED_P(fx->t));
    assert_string_equal(fixture_last(fx), "smtp: transport resumed");
    m = core_message_create(fx->core, 3, 60000, NULL);
    assert_int_equal(core_message_add(m, b, 0), 0);
    core_message_release(m);
    assert_non_null(core_select(fx->core, 60000));
    fixture_free(fx);
}

/*
 * The operator's suspension (sluice suspend): the queue defers what waits
 * and takes nothing, like a dead one, but neither a delivery that
 * succeeds nor a flush brings it back; the end of its duration or a
 * resume does.
 */
static void test_queue_suspend(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue_status st;
    struct core_message *m;
    struct core_queue *q;

    (void)state;
    fx->params.recipient_limit = 1;
    fixture_transport(fx);
    q = core_queue_create(fx->t, "busy.example");
    m = core_message_create(fx->core, 1, 0, NULL);
    for (int i = 0; i < 3; i++)
        assert_int_equal(core_message_add(m, q, (uint64_t)i), 0);
    core_message_release(m);
    struct core_entry *e = core_select(fx->core, 0);
    assert_non_null(e);
    core_queue_suspend(q, SEC, 60 * SEC, "suspended by the operator");
    assert_string_equal(fixture_last(fx), "smtp:busy.example: destination "
                                          "suspended for 60s: suspended by "
                                          "the operator");
    assert_int_equal(fx->deferred_calls, 2); /* the two waiting entries */
    assert_int_equal(fx->dead_calls, 1);
    assert_false(core_queue_can_start(q));
    assert_string_equal(core_queue_refusal(q), "suspended by the operator");
    core_queue_status(q, &st);
    assert_true(st.dead && st.suspended);
    assert_int_equal(st.until, 61 * SEC);
    /* The delivery in flight succeeds: still suspended. */
    core_entry_done(e, 2 * SEC, CORE_HOP_OK, NULL);
    assert_true(core_queue_dead(q));
    core_queue_flush(q, 3 * SEC);
    assert_true(core_queue_dead(q));
    /* It is remembered while idle. */
    void *ctx;
    assert_int_equal(core_queue_release(q, &ctx), 0);
    /* Its time runs out. */
    assert_int_equal(core_next_timer(fx->core), 61 * SEC);
    core_run_timers(fx->core, 61 * SEC);
    assert_false(core_queue_dead(q));
    core_queue_status(q, &st);
    assert_false(st.suspended);
    assert_string_equal(fixture_last(fx), "smtp:busy.example: destination "
                                          "alive again (suspension ended), "
                                          "window 5");

    /* Until resumed: no timer; resume brings it back, once. */
    core_queue_suspend(q, 70 * SEC, 0, "maintenance");
    assert_string_equal(fixture_last(fx), "smtp:busy.example: destination "
                                          "suspended until resumed: "
                                          "maintenance");
    assert_int_equal(core_next_timer(fx->core), CORE_TIME_NEVER);
    assert_int_equal(core_queue_resume(q, 80 * SEC), 1);
    assert_false(core_queue_dead(q));
    assert_string_equal(fixture_last(fx), "smtp:busy.example: destination "
                                          "alive again (resumed), window 5");
    assert_int_equal(core_queue_resume(q, 81 * SEC), 0);

    /* A queue dead by failures, suspended, keeps the operator's word. */
    fx->params.failed_cohort_limit = 1;
    fx->params.negative.value = 0;
    core_transport_update(fx->t, &fx->params);
    for (int i = 0; i < 10 && !core_queue_dead(q); i++) {
        fixture_start(q, 1, 90 * SEC);
        core_queue_done(q, 90 * SEC, CORE_HOP_FAIL, "refused");
    }
    assert_true(core_queue_dead(q));
    core_queue_status(q, &st);
    assert_false(st.suspended);
    assert_int_equal(st.until, 90 * SEC + fx->params.dead_backoff);
    core_queue_suspend(q, 91 * SEC, 0, "by hand");
    core_queue_status(q, &st);
    assert_true(st.suspended);
    assert_string_equal(st.dead_reason, "by hand");
    assert_int_equal(st.until, CORE_TIME_NEVER);
    assert_int_equal(core_queue_resume(q, 92 * SEC), 1);
    fixture_free(fx);
}

/* Queues are found by their opaque key; many of them. */
static void test_queue_lookup_many(void **state)
{
    struct fixture *fx = fixture_new();
    char key[32];

    (void)state;
    fixture_transport(fx);
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "d%d.example", i);
        core_queue_create(fx->t, key);
    }
    for (int i = 0; i < 1000; i += 7) {
        snprintf(key, sizeof(key), "d%d.example", i);
        assert_string_equal(core_queue_find(fx->t, key)->key, key);
    }
    assert_null(core_queue_find(fx->t, "nowhere.example"));
    snprintf(key, sizeof(key), "d%d.example", 500);
    core_queue_free(core_queue_find(fx->t, key));
    assert_null(core_queue_find(fx->t, key));
    assert_int_equal(fx->t->queue_count, 999);
    assert_ptr_equal(core_transport_find(fx->core, "smtp"), fx->t);
    assert_null(core_transport_find(fx->core, "lmtp"));
    fixture_free(fx);
}

/* Timers fire in time order; several at once. */
static void test_timers_in_order(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q[3];
    const char *keys[] = {"a", "b", "c"};
    const core_time_t when[] = {30, 10, 20};

    (void)state;
    fx->params.initial_concurrency = 1;
    fx->params.dead_backoff = 0;
    fixture_transport(fx);
    for (int i = 0; i < 3; i++) {
        q[i] = core_queue_create(fx->t, keys[i]);
        core_queue_start(q[i], 0);
        core_queue_done(q[i], when[i], CORE_HOP_FAIL, "x");
    }
    assert_int_equal(core_next_timer(fx->core), 10);
    core_run_timers(fx->core, 20);
    assert_int_equal(q[0]->state, CORE_QUEUE_DEAD);
    assert_int_equal(q[1]->state, CORE_QUEUE_READY);
    assert_int_equal(q[2]->state, CORE_QUEUE_READY);
    assert_int_equal(core_next_timer(fx->core), 30);
    fixture_free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dead_after_cohort_limit_and_revival_timer),
        cmocka_unit_test(test_dead_revived_by_success_in_flight),
        cmocka_unit_test(test_flush_revives),
        cmocka_unit_test(test_cohort_limit_zero_never_dies),
        cmocka_unit_test(test_destination_rate_delay),
        cmocka_unit_test(test_transport_rate_delay),
        cmocka_unit_test(test_process_limit),
        cmocka_unit_test(test_queue_cap),
        cmocka_unit_test(test_cache_on_demand),
        cmocka_unit_test(test_transport_update),
        cmocka_unit_test(test_transport_suspend),
        cmocka_unit_test(test_queue_suspend),
        cmocka_unit_test(test_queue_kill),
        cmocka_unit_test(test_queue_lookup_many),
        cmocka_unit_test(test_timers_in_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
