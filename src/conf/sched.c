/*
 * NAME
 *	sched 3 - a transport's scheduler parameters, as core/ takes them
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	void	conf_core_params(const struct conf *conf,
 *			const char *transport, struct core_transport_params *p)
 * DESCRIPTION
 *	conf_core_params() fills the scheduler's parameters of a
 *	transport: each default_* parameter, or its <transport>_*
 *	override (under the finch delivery scheduler the process limit
 *	counts connections, so core/'s limit of entries in flight is it
 *	times smtp_connection_backlog_threshold; under the zmailer delivery
 *	scheduler core/ holds nothing back: no window, no process limit,
 *	no rate delay, no dead destination, since ZMailer's threads decide
 *	when each recipient goes). The daemon's queue
 *	manager and the simulator both take them from here, so that a scenario runs with the daemon's
 *	settings; core/ itself reads no configuration.
 */

#include "conf/conf.h"

#include "core/core.h"

#include <string.h>

static enum core_feedback_form feedback_form(enum conf_feedback_form form)
{
    switch (form) {
    case CONF_FEEDBACK_CONCURRENCY:
        return CORE_FEEDBACK_CONCURRENCY;
    case CONF_FEEDBACK_SQRT_CONCURRENCY:
        return CORE_FEEDBACK_SQRT_CONCURRENCY;
    default:
        return CORE_FEEDBACK_CONSTANT;
    }
}

static struct core_feedback feedback(const struct conf *conf,
                                     const char *transport,
                                     enum conf_param_id name)
{
    struct conf_feedback fb = conf_feedback(conf, transport, name);
    struct core_feedback out = {feedback_form(fb.form), fb.value};

    return out;
}

void conf_core_params(const struct conf *conf, const char *transport,
                      struct core_transport_params *p)
{
    const char *t = transport;

    core_transport_params_init(p);
    p->initial_concurrency =
        (int)conf_int(conf, t, CONF_initial_destination_concurrency);
    p->concurrency_limit =
        (int)conf_int(conf, t, CONF_default_destination_concurrency_limit);
    p->positive = feedback(
        conf, t, CONF_default_destination_concurrency_positive_feedback);
    p->negative = feedback(
        conf, t, CONF_default_destination_concurrency_negative_feedback);
    p->failed_cohort_limit = (int)conf_int(
        conf, t, CONF_default_destination_concurrency_failed_cohort_limit);
    p->rounding = strcmp(conf_str(conf, t, CONF_concurrency_feedback_rounding),
                         "postfix3") == 0
                      ? CORE_ROUNDING_POSTFIX3
                      : CORE_ROUNDING_SEED;
    p->destination_rate_delay =
        conf_time_ms(conf, t, CONF_default_destination_rate_delay);
    p->transport_rate_delay =
        conf_time_ms(conf, t, CONF_default_transport_rate_delay);
    p->dead_backoff = conf_time_ms(conf, NULL, CONF_minimal_backoff_time);
    p->process_limit = (int)conf_int(conf, t, CONF_default_process_limit);
    if (strcmp(conf_str(conf, t, CONF_default_delivery_scheduler), "finch") ==
        0) {
        /*
         * Finch's workers are connections, each carrying up to the
         * backlog threshold of jobs: the process limit counts them, so
         * core/ may have that many times its entries in flight (else the
         * jobs queued on slow hosts' connections take every slot).
         */
        long jobs = (long)p->process_limit *
                    conf_int(conf, t, CONF_smtp_connection_backlog_threshold);

        p->process_limit = jobs > 1000000 ? 1000000 : (int)jobs;
    } else if (strcmp(conf_str(conf, t, CONF_default_delivery_scheduler),
                      "zmailer") == 0) {
        /*
         * ZMailer's threads decide when a recipient goes (decision 124):
         * core/ hands every entry over at once, so no window, process
         * limit, rate delay or dead destination of its own holds them.
         */
        p->initial_concurrency = 1000000;
        p->concurrency_limit = 0;
        p->process_limit = 0;
        p->failed_cohort_limit = 0;
        p->destination_rate_delay = 0;
        p->transport_rate_delay = 0;
    }
    p->feedback_debug =
        conf_bool(conf, NULL, CONF_destination_concurrency_feedback_debug);
    p->recipient_limit =
        (int)conf_int(conf, t, CONF_default_destination_recipient_limit);
    p->slot_cost = (int)conf_int(conf, t, CONF_default_delivery_slot_cost);
    p->slot_loan = (int)conf_int(conf, t, CONF_default_delivery_slot_loan);
    p->slot_discount =
        (int)conf_int(conf, t, CONF_default_delivery_slot_discount);
    p->min_slots = (int)conf_int(conf, t, CONF_default_minimum_delivery_slots);
    p->rcpt_pool = (int)conf_int(conf, t, CONF_default_recipient_limit);
    p->rcpt_extra = (int)conf_int(conf, t, CONF_default_extra_recipient_limit);
    p->refill_limit =
        (int)conf_int(conf, t, CONF_default_recipient_refill_limit);
    p->refill_delay =
        conf_time_ms(conf, t, CONF_default_recipient_refill_delay);
    p->scheduler =
        strcmp(conf_str(conf, t, CONF_default_scheduler), "round_robin") == 0
            ? &core_policy_round_robin
            : &core_policy_preemptive;
}
