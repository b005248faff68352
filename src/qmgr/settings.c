/*
 * NAME
 *	settings 3 - a transport's parameters, as core/ and deliver/ take them
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_core_params(const struct conf *conf,
 *			const char *transport, struct core_transport_params *p)
 *	void	qmgr_deliver_settings(const struct conf *conf,
 *			const char *transport, struct qmgr_deliver_settings *d)
 * DESCRIPTION
 *	See qmgr.h. conf/ resolves each name for the transport: the
 *	<transport>_<suffix> override when set, else the global parameter.
 */

#include "qmgr/qmgr.h"

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
                                     const char *transport, const char *name)
{
    struct conf_feedback fb = conf_feedback(conf, transport, name);
    struct core_feedback out = {feedback_form(fb.form), fb.value};

    return out;
}

void qmgr_core_params(const struct conf *conf, const char *transport,
                      struct core_transport_params *p)
{
    const char *t = transport;

    core_transport_params_init(p);
    p->initial_concurrency =
        (int)conf_int(conf, t, "initial_destination_concurrency");
    p->concurrency_limit =
        (int)conf_int(conf, t, "default_destination_concurrency_limit");
    p->positive =
        feedback(conf, t, "default_destination_concurrency_positive_feedback");
    p->negative =
        feedback(conf, t, "default_destination_concurrency_negative_feedback");
    p->failed_cohort_limit = (int)conf_int(
        conf, t, "default_destination_concurrency_failed_cohort_limit");
    p->rounding = strcmp(conf_str(conf, t, "concurrency_feedback_rounding"),
                         "postfix3") == 0
                      ? CORE_ROUNDING_POSTFIX3
                      : CORE_ROUNDING_SEED;
    p->destination_rate_delay =
        conf_time_ms(conf, t, "default_destination_rate_delay");
    p->transport_rate_delay =
        conf_time_ms(conf, t, "default_transport_rate_delay");
    p->dead_backoff = conf_time_ms(conf, NULL, "minimal_backoff_time");
    p->process_limit = (int)conf_int(conf, t, "default_process_limit");
    p->feedback_debug =
        conf_bool(conf, NULL, "destination_concurrency_feedback_debug");
    p->recipient_limit =
        (int)conf_int(conf, t, "default_destination_recipient_limit");
    p->slot_cost = (int)conf_int(conf, t, "default_delivery_slot_cost");
    p->slot_loan = (int)conf_int(conf, t, "default_delivery_slot_loan");
    p->slot_discount = (int)conf_int(conf, t, "default_delivery_slot_discount");
    p->min_slots = (int)conf_int(conf, t, "default_minimum_delivery_slots");
    p->scheduler =
        strcmp(conf_str(conf, t, "default_scheduler"), "round_robin") == 0
            ? &core_policy_round_robin
            : &core_policy_preemptive;
}

/* A time in milliseconds, as an int for deliver/ (at most ~24 days). */
static int ms(const struct conf *conf, const char *t, const char *name)
{
    int64_t v = conf_time_ms(conf, t, name);

    return v > INT32_MAX ? INT32_MAX : (int)v;
}

void qmgr_deliver_settings(const struct conf *conf, const char *transport,
                           struct qmgr_deliver_settings *d)
{
    const char *t = transport;

    memset(d, 0, sizeof(*d));
    d->timeouts.connect = ms(conf, t, "smtp_connect_timeout");
    d->timeouts.helo = ms(conf, t, "smtp_helo_timeout");
    d->timeouts.mail = ms(conf, t, "smtp_mail_timeout");
    d->timeouts.rcpt = ms(conf, t, "smtp_rcpt_timeout");
    d->timeouts.data_init = ms(conf, t, "smtp_data_init_timeout");
    d->timeouts.data_xfer = ms(conf, t, "smtp_data_xfer_timeout");
    d->timeouts.data_done = ms(conf, t, "smtp_data_done_timeout");
    d->timeouts.quit = ms(conf, t, "smtp_quit_timeout");
    d->address_limit = (int)conf_int(conf, t, "smtp_mx_address_limit");
    d->session_limit = (int)conf_int(conf, t, "smtp_mx_session_limit");
    if (conf_bool(conf, t, "smtp_connection_cache_on_demand"))
        d->cache.idle_ms = ms(conf, t, "smtp_connection_cache_time_limit");
    d->cache.reuse_ms = ms(conf, t, "smtp_connection_reuse_time_limit");
    d->cache.reuse_count_limit =
        (int)conf_int(conf, t, "smtp_connection_reuse_count_limit");
    d->helo_name = conf_str(conf, t, "smtp_helo_name");
}
