/*
 * test_core_feedback - exact traces of the seed's concurrency feedback
 *
 * Every test quotes the part of ../shared/seeds/postfix-scheduler-readme.txt
 * ("Pseudocode for the Postfix 2.5 concurrency scheduler") that it walks,
 * and asserts window, success, failure and fail_cohorts after each event.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <math.h>
#include <stdint.h>

#include <cmocka.h>

#include "core_fixture.h"

#define EPS 1e-9

struct step {
    enum core_hop hop;
    int window;
    double success, failure, fail_cohorts;
};

/*
 * Run the steps on q, each one finishing one delivery and, if the window
 * allows, starting another, and check the state after each.
 */
static void run_steps(struct core_queue *q, const struct step *steps, int n)
{
    for (int i = 0; i < n; i++) {
        core_queue_done(q, 0, steps[i].hop, "test failure");
        if (steps[i].window == 0) {
            assert_int_equal(q->state, CORE_QUEUE_DEAD);
            assert_int_equal(core_queue_window_report(q), 0);
            continue;
        }
        assert_int_equal(q->window, steps[i].window);
        assert_float_equal(q->success, steps[i].success, 1e-6);
        assert_float_equal(q->failure, steps[i].failure, 1e-6);
        assert_float_equal(q->fail_cohorts, steps[i].fail_cohorts, 1e-6);
        if (core_queue_can_start(q))
            core_queue_start(q, 0);
    }
}

static struct core_queue *queue_with_busy(struct fixture *fx, int busy)
{
    struct core_queue *q;

    fixture_transport(fx);
    q = core_queue_create(fx->t, "example.com");
    fixture_start(q, busy, 0);
    return q;
}

/*
 * "With f(N)=1 feedback per delivery, concurrency decreases by 1 after
 * each negative feedback event" and "a destination is declared dead after
 * a configurable number of pseudo-cohorts suffers from connection or
 * handshake failures": window 5, cohort limit 1, consecutive failures:
 * 4, 3, 2, then dead at the 4th (1/5 + 1/4 + 1/3 + 1/2 >= 1).
 */
static void test_seed_negative_1_dies_at_fourth(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;
    const struct step steps[] = {
        {CORE_HOP_FAIL, 4, 0, 0, 0.2},
        {CORE_HOP_FAIL, 3, 0, 0, 0.45},
        {CORE_HOP_FAIL, 2, 0, 0, 0.45 + 1.0 / 3},
        {CORE_HOP_FAIL, 0, 0, 0, 0},
    };

    (void)state;
    q = queue_with_busy(fx, 5);
    run_steps(q, steps, 4);
    assert_int_equal(fx->dead_calls, 1);
    assert_string_equal(fx->dead_reason, "test failure");
    fixture_free(fx);
}

/*
 * Postfix 3.x rounding ("failure - f/2 < 0"): the first failure with
 * feedback 1 lowers the window by 2, later ones by 1; dead at the 3rd
 * (1/5 + 1/3 + 1/2 >= 1).
 */
static void test_postfix3_negative_1_dies_at_third(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;
    const struct step steps[] = {
        {CORE_HOP_FAIL, 3, 0, 1, 0.2},
        {CORE_HOP_FAIL, 2, 0, 1, 0.2 + 1.0 / 3},
        {CORE_HOP_FAIL, 0, 0, 0, 0},
    };

    (void)state;
    fx->params.rounding = CORE_ROUNDING_POSTFIX3;
    q = queue_with_busy(fx, 5);
    run_steps(q, steps, 3);
    assert_int_equal(fx->dead_calls, 1);
    fixture_free(fx);
}

/*
 * "With g(N)=1/N feedback per delivery, concurrency increases by 1 after
 * an entire pseudo-cohort N of positive feedback reports": window 5 grows
 * to 6 at the END of the 5th success ("while (success >= 1) concurrency
 * += 1; failure = 0; success -= 1").
 */
static void test_seed_positive_1_over_n(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;
    const struct step steps[] = {
        {CORE_HOP_OK, 5, 0.2, 0, 0}, {CORE_HOP_OK, 5, 0.4, 0, 0},
        {CORE_HOP_OK, 5, 0.6, 0, 0}, {CORE_HOP_OK, 5, 0.8, 0, 0},
        {CORE_HOP_OK, 6, 0.0, 0, 0}, {CORE_HOP_OK, 6, 1.0 / 6, 0, 0},
    };

    (void)state;
    fx->params.positive.form = CORE_FEEDBACK_CONCURRENCY;
    q = queue_with_busy(fx, 5);
    run_steps(q, steps, 6);
    fixture_free(fx);
}

/*
 * g(N) = 1/sqrt(N): at window 5 each success adds 0.447; the seed grows
 * after the 3rd (1.342 >= 1) and keeps the remainder 0.342; Postfix 3.x
 * grows after the 2nd (0.894 + 0.224 >= 1).
 */
static void test_positive_sqrt_both_roundings(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;
    double g = 1 / sqrt(5.0);
    const struct step seed[] = {
        {CORE_HOP_OK, 5, g, 0, 0},
        {CORE_HOP_OK, 5, 2 * g, 0, 0},
        {CORE_HOP_OK, 6, 3 * g - 1, 0, 0},
    };
    const struct step postfix3[] = {
        {CORE_HOP_OK, 5, g, 0, 0},
        {CORE_HOP_OK, 6, 2 * g - 1, 0, 0},
    };

    (void)state;
    fx->params.positive.form = CORE_FEEDBACK_SQRT_CONCURRENCY;
    q = queue_with_busy(fx, 5);
    run_steps(q, seed, 3);
    fixture_free(fx);

    fx = fixture_new();
    fx->params.positive.form = CORE_FEEDBACK_SQRT_CONCURRENCY;
    fx->params.rounding = CORE_ROUNDING_POSTFIX3;
    q = queue_with_busy(fx, 5);
    run_steps(q, postfix3, 2);
    fixture_free(fx);
}

/*
 * "We 'reverse' the negative hysteresis cycle so that the transition to
 * lower concurrency happens at the beginning of a sequence of 1/f(N)
 * negative feedback events": f = 1/N at window 6 drops to 5 at once
 * (failure -1/6 -> 5/6), and the window stays at 5 until the 5th
 * failure at 1/5 each drops it again. Each drop clears success ("success = 0").
 */
static void test_seed_negative_reverse_hysteresis(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;
    const double f0 = 1.0 - 1.0 / 6;
    const struct step steps[] = {
        {CORE_HOP_OK, 6, 0, 0, 0},
        {CORE_HOP_FAIL, 5, 0, f0, 1.0 / 6},
        {CORE_HOP_FAIL, 5, 0, f0 - 0.2, 1.0 / 6 + 0.2},
        {CORE_HOP_OK, 5, 0.2, f0 - 0.2, 0},
        {CORE_HOP_FAIL, 5, 0.2, f0 - 0.4, 0.2},
        {CORE_HOP_FAIL, 5, 0.2, f0 - 0.6, 0.4},
        {CORE_HOP_FAIL, 5, 0.2, f0 - 0.8, 0.6},
        {CORE_HOP_FAIL, 4, 0, f0 - 1.0 + 1, 0.8},
    };

    (void)state;
    fx->params.positive.form = CORE_FEEDBACK_CONSTANT;
    fx->params.positive.value = 1;
    fx->params.negative.form = CORE_FEEDBACK_CONCURRENCY;
    fx->params.failed_cohort_limit = 0;
    q = queue_with_busy(fx, 5);
    /* Steps 1 and 2 use positive feedback 1; then switch to 1/N. */
    run_steps(q, steps, 1);
    fx->t->params.positive.form = CORE_FEEDBACK_CONCURRENCY;
    run_steps(q, steps + 1, 7);
    fixture_free(fx);
}

/*
 * "Safety: Don't apply positive feedback unless concurrency <
 * busy_refcount + init_dest_concurrency": window 5 with 1 busy and
 * initial 5 takes feedback (5 < 6); window 6 with 1 busy does not.
 */
static void test_safety_rule(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    q = queue_with_busy(fx, 1);
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    assert_int_equal(q->window, 6);
    core_queue_start(q, 0);
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    assert_int_equal(q->window, 6);
    assert_float_equal(q->success, 0, EPS);
    fixture_free(fx);
}

/*
 * "Be prepared for overshoot: if (concurrency > concurrency limit)
 * concurrency = concurrency limit". The seed accumulates and clamps,
 * which restarts the negative cycle (failure = 0); Postfix 3.x applies
 * no positive feedback at the limit.
 */
static void test_overshoot_clamp(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 4;
    fx->params.concurrency_limit = 4;
    fx->params.negative.form = CORE_FEEDBACK_CONCURRENCY;
    fx->params.failed_cohort_limit = 0;
    q = queue_with_busy(fx, 4);
    core_queue_done(q, 0, CORE_HOP_FAIL, "x"); /* 4 -> 3, failure 0.75 */
    assert_int_equal(q->window, 3);
    core_queue_done(q, 0, CORE_HOP_OK, NULL); /* 3 -> 4 */
    assert_int_equal(q->window, 4);
    assert_float_equal(q->failure, 0, EPS);
    q->failure = 0.5;
    core_queue_done(q, 0, CORE_HOP_OK, NULL); /* 4 -> 5 -> 4 */
    assert_int_equal(q->window, 4);
    assert_float_equal(q->failure, 0, EPS);
    assert_float_equal(q->success, 0, EPS);
    fixture_free(fx);

    fx = fixture_new();
    fx->params.initial_concurrency = 4;
    fx->params.concurrency_limit = 4;
    fx->params.rounding = CORE_ROUNDING_POSTFIX3;
    q = queue_with_busy(fx, 4);
    q->failure = 0.5;
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    assert_int_equal(q->window, 4);
    assert_float_equal(q->failure, 0.5, EPS);
    assert_float_equal(q->success, 0, EPS);
    fixture_free(fx);
}

/* "concurrency limit 0 means unlimited": the window grows past 20. */
static void test_limit_zero_is_unlimited(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 20;
    fx->params.concurrency_limit = 0;
    q = queue_with_busy(fx, 20);
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    assert_int_equal(q->window, 21);
    fixture_free(fx);
}

/* "if (concurrency < 1) concurrency = 1": feedback never kills. */
static void test_window_never_below_one(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.initial_concurrency = 2;
    fx->params.failed_cohort_limit = 0;
    q = queue_with_busy(fx, 2);
    core_queue_done(q, 0, CORE_HOP_FAIL, "x");
    assert_int_equal(q->window, 1);
    core_queue_done(q, 0, CORE_HOP_FAIL, "x");
    assert_int_equal(q->window, 1);
    assert_int_equal(q->state, CORE_QUEUE_READY);
    fixture_free(fx);
}

/* Feedback larger than the hysteresis: "Be prepared for feedback >
 * hysteresis": can't happen with values in [0,1] except through rounding;
 * x/y forms are constants. */
static void test_feedback_values(void **state)
{
    struct core_feedback fb = {CORE_FEEDBACK_CONSTANT, 0.25};

    (void)state;
    assert_float_equal(core_feedback_value(&fb, 7), 0.25, EPS);
    fb.form = CORE_FEEDBACK_CONCURRENCY;
    fb.value = 1;
    assert_float_equal(core_feedback_value(&fb, 8), 0.125, EPS);
    fb.form = CORE_FEEDBACK_SQRT_CONCURRENCY;
    assert_float_equal(core_feedback_value(&fb, 4), 0.5, EPS);
    fb.value = 0.5;
    assert_float_equal(core_feedback_value(&fb, 16), 0.125, EPS);
}

/*
 * destination_concurrency_feedback_debug: every window change is
 * reported with the values that caused it.
 */
static void test_feedback_debug_lines(void **state)
{
    struct fixture *fx = fixture_new();
    struct core_queue *q;

    (void)state;
    fx->params.feedback_debug = 1;
    fx->params.positive.form = CORE_FEEDBACK_CONCURRENCY;
    q = queue_with_busy(fx, 5);
    for (int i = 0; i < 4; i++) {
        core_queue_done(q, 0, CORE_HOP_OK, NULL);
        core_queue_start(q, 0);
    }
    assert_int_equal(fx->nlines, 0);
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    assert_int_equal(fx->nlines, 1);
    assert_string_equal(fixture_last(fx),
                        "smtp:example.com: window 5 -> 6: positive feedback "
                        "0.200 (success 0.000, failure 0.000, fail_cohorts "
                        "0.000, busy 5)");
    core_queue_start(q, 0);
    core_queue_done(q, 0, CORE_HOP_FAIL, "lost connection");
    assert_string_equal(fixture_last(fx),
                        "smtp:example.com: window 6 -> 5: negative feedback "
                        "1.000 (success 0.000, failure 0.000, fail_cohorts "
                        "0.167, busy 5)");
    fixture_free(fx);

    /* Without debug, feedback logs nothing. */
    fx = fixture_new();
    q = queue_with_busy(fx, 5);
    core_queue_done(q, 0, CORE_HOP_OK, NULL);
    core_queue_done(q, 0, CORE_HOP_FAIL, "x");
    assert_int_equal(fx->nlines, 0);
    fixture_free(fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seed_negative_1_dies_at_fourth),
        cmocka_unit_test(test_postfix3_negative_1_dies_at_third),
        cmocka_unit_test(test_seed_positive_1_over_n),
        cmocka_unit_test(test_positive_sqrt_both_roundings),
        cmocka_unit_test(test_seed_negative_reverse_hysteresis),
        cmocka_unit_test(test_safety_rule),
        cmocka_unit_test(test_overshoot_clamp),
        cmocka_unit_test(test_limit_zero_is_unlimited),
        cmocka_unit_test(test_window_never_below_one),
        cmocka_unit_test(test_feedback_values),
        cmocka_unit_test(test_feedback_debug_lines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
