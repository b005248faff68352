/*
 * NAME
 *	feedback 3 - the seed's concurrency feedback policy
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	const struct core_concurrency_policy core_policy_feedback
 *	double	core_feedback_value(const struct core_feedback *fb, int n)
 * DESCRIPTION
 *	core_policy_feedback is the Postfix 2.5 concurrency feedback
 *	algorithm of the seed ("Pseudocode for the Postfix 2.5 concurrency
 *	scheduler"), with the transport's feedback functions g(N), f(N)
 *	evaluated by core_feedback_value() at the current window N.
 *
 *	Positive feedback accumulates in success; the window grows by one
 *	at the END of each run of 1/g(N) positive events (hysteresis), and
 *	every growth restarts the negative cycle (failure = 0). Negative
 *	feedback is "reversed": failure drops below zero at the BEGINNING
 *	of a run of 1/f(N) negative events, so the window shrinks at once
 *	and then stays put for the rest of the run; every shrink restarts
 *	the positive cycle (success = 0). This asymmetry is what lets the
 *	scheduler back off quickly from an active limiter (421) without
 *	deferring half the mail.
 *
 *	Safety: positive feedback is applied only while
 *	window < busy + initial_concurrency, "otherwise negative feedback
 *	effect could be delayed". Overshoot: the window is clamped to the
 *	limit (0 = none) after growing, and never drops below 1 by
 *	feedback (dead destinations are the detector's business).
 *
 *	Rounding. CORE_ROUNDING_SEED is the pseudocode as written
 *	("while success >= 1", "while failure < 0"), which is what the
 *	seed's tables measured, and, as the pseudocode does, accumulates
 *	success even at the limit and then clamps. CORE_ROUNDING_POSTFIX3 is
 *	current Postfix: a window step happens once the accumulator is
 *	within half a feedback step of the threshold ("success + g/2 >= 1",
 *	"failure - f/2 < 0"), and no positive feedback is accumulated at
 *	the limit. With feedback 1 the first failure then lowers the window
 *	by 2. Comparisons allow 1e-9 of floating-point error, so that five
 *	times 1/5 is a whole step ("be prepared for rounding error").
 */

#include "core/core.h"

#include <math.h>

#include "core/core_impl.h"

#define FEEDBACK_EPSILON 1e-9

double core_feedback_value(const struct core_feedback *fb, int n)
{
    if (n < 1)
        n = 1;
    switch (fb->form) {
    case CORE_FEEDBACK_CONCURRENCY:
        return fb->value / n;
    case CORE_FEEDBACK_SQRT_CONCURRENCY:
        return fb->value / sqrt((double)n);
    default:
        return fb->value;
    }
}

static int feedback_grow_p(const struct core_queue *q, double g)
{
    if (q->transport->params.rounding == CORE_ROUNDING_POSTFIX3)
        return q->success + g / 2 >= 1 - FEEDBACK_EPSILON;
    return q->success >= 1 - FEEDBACK_EPSILON;
}

static int feedback_shrink_p(const struct core_queue *q, double f)
{
    if (q->transport->params.rounding == CORE_ROUNDING_POSTFIX3)
        return q->failure - f / 2 < -FEEDBACK_EPSILON;
    return q->failure < -FEEDBACK_EPSILON;
}

static void feedback_positive(struct core_queue *q)
{
    const struct core_transport_params *p = &q->transport->params;
    int limit = core_queue_limit(q);
    double g;

    if (p->rounding == CORE_ROUNDING_POSTFIX3 && limit > 0 &&
        q->window >= limit)
        return;
    /* Safety: keep the window near the actual concurrency. */
    if (q->window >= q->busy + p->initial_concurrency)
        return;
    g = core_feedback_value(&p->positive, q->window);
    q->success += g;
    while (feedback_grow_p(q, g)) {
        q->window += 1;
        q->failure = 0;
        q->success -= 1;
    }
    if (limit > 0 && q->window > limit)
        q->window = limit;
}

static void feedback_negative(struct core_queue *q)
{
    double f = core_feedback_value(&q->transport->params.negative, q->window);

    q->failure -= f;
    while (feedback_shrink_p(q, f)) {
        q->window -= 1;
        q->failure += 1;
        q->success = 0;
    }
    if (q->window < 1)
        q->window = 1;
}

const struct core_concurrency_policy core_policy_feedback = {
    .name = "feedback",
    .positive = feedback_positive,
    .negative = feedback_negative,
};
