/*
 * NAME
 *	scenario 3 - simulator scenarios: the sim_* keys and their loading
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	struct conf *sim_conf_create(char *why, size_t whylen)
 *	int	sim_scenario_load(struct sim_scenario *sc, const char *base,
 *			const char *path, char *why, size_t whylen)
 *	int	sim_scenario_from_conf(struct sim_scenario *sc,
 *			const struct conf *conf, const char *name, char *why,
 *			size_t whylen)
 *	void	sim_transport_params(const struct conf *conf,
 *			const char *transport, struct core_transport_params *p)
 * DESCRIPTION
 *	A scenario file is a sluice configuration file: the client side
 *	uses sluice's own parameters (per-transport overrides included),
 *	the modelled world uses the sim_* keys defined here and documented
 *	in doc/sim.md. sim_scenario_load() reads the base configuration
 *	file first, if base is not NULL, then the scenario, whose settings
 *	win. Loading checks what the type system cannot: at most
 *	as many bad servers as servers, at least one of everything.
 */

#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

static const struct conf_def sim_params[] = {
    {"sim_transport", CONF_STRING, "smtp", NULL, 0, 0, 0, NULL,
     "transport whose parameters the client uses"},
    {"sim_recipients", CONF_INT, "2000", NULL, 1, 100000000, 0, NULL,
     "recipients per destination"},
    {"sim_destinations", CONF_INT, "1", NULL, 1, 100000, 0, NULL,
     "destinations, each with its own servers"},
    {"sim_servers", CONF_INT, "1", NULL, 1, 1000, 0, NULL,
     "servers behind one destination address (load balancer)"},
    {"sim_bad_servers", CONF_INT, "0", NULL, 0, 1000, 0, NULL,
     "of those servers, how many fail every SMTP handshake"},
    {"sim_server_process_limit", CONF_INT, "5", NULL, 1, 100000, 0, NULL,
     "SMTP server processes per server"},
    {"sim_server_backlog", CONF_INT, "5", NULL, 0, 100000, 0, NULL,
     "established connections the kernel queues for accept(2)"},
    {"sim_server_concurrency_limit", CONF_INT, "0", NULL, 0, 100000, 0, NULL,
     "reply 421 and disconnect above this many connections (0 = no)"},
    {"sim_server_overflow", CONF_CHOICE, "drop_syn", NULL, 0, 0, 0,
     "drop_syn|drop_ack",
     "full accept queue: drop SYNs (FreeBSD) or final ACKs (Linux)"},
    {"sim_syn_retry_delay", CONF_TIME, "3s", NULL, 0, 0, 's', NULL,
     "first SYN (drop_syn) or SYN-ACK (drop_ack) retransmission, doubling"},
    {"sim_syn_retries", CONF_INT, "5", NULL, 0, 100, 0, NULL,
     "SYN-ACK retransmissions before the server forgets a connection"},
    {"sim_recipient_delay", CONF_TIME, "1s", NULL, 0, 0, 's', NULL,
     "server time per recipient"},
    {"sim_recipient_delay_jitter", CONF_TIME, "0s", NULL, 0, 0, 's', NULL,
     "each recipient's time is uniform within +/- this much"},
    {"sim_reject_delay", CONF_TIME, "0s", NULL, 0, 0, 's', NULL,
     "how long a connection that ends in 421 occupies the client"},
    {"sim_connect_timeout", CONF_TIME, "30s", NULL, 0, 0, 's', NULL,
     "client: give up a TCP connection after this long"},
    {"sim_greeting_timeout", CONF_TIME, "300s", NULL, 0, 0, 's', NULL,
     "client: give up waiting for the greeting after this long"},
    {"sim_connection_caching", CONF_BOOL, "no", NULL, 0, 0, 0, NULL,
     "client: reuse connections (smtp_connection_cache_* limits)"},
    {"sim_seed", CONF_INT, "1", NULL, 0, 2147483647L, 0, NULL,
     "random seed; the same seed gives the same run"},
};

struct conf *sim_conf_create(char *why, size_t whylen)
{
    struct conf *conf = conf_create();

    if (conf_add_params(conf, sim_params,
                        sizeof(sim_params) / sizeof(sim_params[0]), why,
                        whylen) < 0) {
        conf_free(conf);
        return NULL;
    }
    return conf;
}

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

void sim_transport_params(const struct conf *conf, const char *transport,
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
    p->slot_discount =
        (int)conf_int(conf, t, "default_delivery_slot_discount");
    p->min_slots = (int)conf_int(conf, t, "default_minimum_delivery_slots");
    p->scheduler =
        strcmp(conf_str(conf, t, "default_scheduler"), "round_robin") == 0
            ? &core_policy_round_robin
            : &core_policy_preemptive;
}

int sim_scenario_from_conf(struct sim_scenario *sc, const struct conf *conf,
                           const char *name, char *why, size_t whylen)
{
    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    snprintf(sc->transport, sizeof(sc->transport), "%s",
             conf_str(conf, NULL, "sim_transport"));
    sim_transport_params(conf, sc->transport, &sc->params);
    sc->recipient_limit = (int)conf_int(conf, sc->transport,
                                        "default_destination_recipient_limit");
    sc->recipients = conf_int(conf, NULL, "sim_recipients");
    sc->destinations = (int)conf_int(conf, NULL, "sim_destinations");
    sc->servers = (int)conf_int(conf, NULL, "sim_servers");
    sc->bad_servers = (int)conf_int(conf, NULL, "sim_bad_servers");
    sc->process_limit = (int)conf_int(conf, NULL, "sim_server_process_limit");
    sc->backlog = (int)conf_int(conf, NULL, "sim_server_backlog");
    sc->concurrency_limit =
        (int)conf_int(conf, NULL, "sim_server_concurrency_limit");
    sc->overflow =
        strcmp(conf_str(conf, NULL, "sim_server_overflow"), "drop_ack") == 0
            ? SIM_OVERFLOW_DROP_ACK
            : SIM_OVERFLOW_DROP_SYN;
    sc->syn_retry_delay = conf_time_ms(conf, NULL, "sim_syn_retry_delay");
    sc->syn_retries = (int)conf_int(conf, NULL, "sim_syn_retries");
    sc->recipient_delay = conf_time_ms(conf, NULL, "sim_recipient_delay");
    sc->recipient_delay_jitter =
        conf_time_ms(conf, NULL, "sim_recipient_delay_jitter");
    sc->reject_delay = conf_time_ms(conf, NULL, "sim_reject_delay");
    sc->connect_timeout = conf_time_ms(conf, NULL, "sim_connect_timeout");
    sc->greeting_timeout = conf_time_ms(conf, NULL, "sim_greeting_timeout");
    sc->connection_caching = conf_bool(conf, NULL, "sim_connection_caching");
    sc->cache_time_limit =
        conf_time_ms(conf, NULL, "smtp_connection_cache_time_limit");
    sc->reuse_time_limit =
        conf_time_ms(conf, NULL, "smtp_connection_reuse_time_limit");
    sc->reuse_count_limit =
        (int)conf_int(conf, NULL, "smtp_connection_reuse_count_limit");
    sc->seed = (uint64_t)conf_int(conf, NULL, "sim_seed");
    if (sc->bad_servers > sc->servers) {
        snprintf(why, whylen,
                 "%s: sim_bad_servers (%d) is more than sim_servers (%d)", name,
                 sc->bad_servers, sc->servers);
        return -1;
    }
    if (sc->recipient_delay_jitter > sc->recipient_delay) {
        snprintf(why, whylen,
                 "%s: sim_recipient_delay_jitter is larger than "
                 "sim_recipient_delay",
                 name);
        return -1;
    }
    return 0;
}

int sim_scenario_load(struct sim_scenario *sc, const char *base,
                      const char *path, char *why, size_t whylen)
{
    struct conf *conf = sim_conf_create(why, whylen);
    const char *slash = strrchr(path, '/');
    char name[128];
    char *dot;
    int ret;

    if (conf == NULL)
        return -1;
    if ((base && conf_load(conf, base, 1, why, whylen) < 0) ||
        conf_load(conf, path, 1, why, whylen) < 0) {
        conf_free(conf);
        return -1;
    }
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : path);
    if ((dot = strrchr(name, '.')) != NULL && dot != name)
        *dot = 0;
    ret = sim_scenario_from_conf(sc, conf, name, why, whylen);
    conf_free(conf);
    return ret;
}
