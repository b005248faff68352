/*
 * NAME
 *	test_conf 1 - unit tests of the parameter table, values and lookups
 * SYNOPSIS
 *	build/tests/test_conf
 * DESCRIPTION
 *	Tests src/conf/params.c, conf.c, value.c and expand.c without
 *	files: every default of the reference table, per-transport
 *	overrides and their fallback, the longest-suffix rule, each type's
 *	syntax and its error message, $name expansion with its loops and
 *	limits, parameters added at run time, and the getters' refusal of
 *	programming errors. The config file syntax is test_conf_parse.c's.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "conf/conf.h"

#include "abort_fixture.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WHY_SIZE 1024

static int setup(void **state)
{
    *state = conf_create();
    return 0;
}

static int teardown(void **state)
{
    conf_free(*state);
    return 0;
}

/* conf_set() that must succeed. */
static void set_ok(struct conf *conf, const char *name, const char *value)
{
    char why[WHY_SIZE] = "";

    if (conf_set(conf, name, value, why, sizeof(why)) != 0)
        fail_msg("conf_set(%s, %s): %s", name, value, why);
}

/* conf_set() that must fail with exactly this message. */
static void set_fails(struct conf *conf, const char *name, const char *value,
                      const char *expected)
{
    char why[WHY_SIZE] = "";

    assert_int_equal(conf_set(conf, name, value, why, sizeof(why)), -1);
    assert_string_equal(why, expected);
}

/* conf_validate() that must fail with exactly this message. */
static void validate_fails(struct conf *conf, const char *expected)
{
    char why[WHY_SIZE] = "";

    assert_int_equal(conf_validate(conf, why, sizeof(why)), -1);
    assert_string_equal(why, expected);
}

static void validate_ok(struct conf *conf)
{
    char why[WHY_SIZE] = "";

    if (conf_validate(conf, why, sizeof(why)) != 0)
        fail_msg("conf_validate: %s", why);
}

static const struct conf_def *def_find(const char *name)
{
    size_t i;

    for (i = 0; i < conf_param_count; i++)
        if (strcmp(conf_params[i].name, name) == 0)
            return conf_params + i;
    return NULL;
}

/*
 * The table of postfix-reference-notes.md, with the defaults in the
 * unit each getter returns.
 */
static const struct {
    const char *name;
    long value;
} int_defaults[] = {
    {"initial_destination_concurrency", 5},
    {"default_destination_concurrency_limit", 20},
    {"default_destination_recipient_limit", 50},
    {"default_destination_concurrency_failed_cohort_limit", 1},
    {"default_delivery_slot_cost", 5},
    {"default_delivery_slot_loan", 3},
    {"default_delivery_slot_discount", 50},
    {"default_minimum_delivery_slots", 3},
    {"default_recipient_limit", 20000},
    {"default_extra_recipient_limit", 1000},
    {"default_recipient_refill_limit", 100},
    {"qmgr_message_active_limit", 20000},
    {"qmgr_message_recipient_limit", 20000},
    {"qmgr_message_recipient_minimum", 10},
    {"default_process_limit", 100},
    {"smtp_connection_reuse_count_limit", 0},
    {"smtp_mx_address_limit", 5},
    {"smtp_mx_session_limit", 2},
    {"smtp_line_length_limit", 998},
    {"smtp_tls_loglevel", 1},
    {"message_size_limit", 10240000},
    {"bounce_size_limit", 50000},
    {"smtpd_recipient_limit", 1000},
    {"smtpd_client_connection_count_limit", 50},
    {"smtpd_hard_error_limit", 20},
    {"line_length_limit", 2048},
    {"in_flow_backlog_limit", 100000},
    {"queue_minfree", 0},
    {"hopcount_limit", 50},
    {"smtpd_junk_command_limit", 100},
    {"smtpd_memory_limit", 268435456},
    {"smtpd_staging_threshold", 1048576},
    {"smtpd_forbid_bare_newline_reject_code", 550},
    {"smtp_mta_sts_max_policy_size", 65536},
    {"smtp_connection_backlog_threshold", 4},
    {"max_message_concurrency", 20},
    {"scale_max_concurrency", 10},
    {"router_worker_limit", 100},
    {"unverified_recipient_reject_code", 450},
    {"unverified_recipient_defer_code", 450},
    {"unverified_sender_reject_code", 450},
    {"unverified_sender_defer_code", 450},
    {"address_verify_cache_limit", 100000},
    {"address_verify_concurrency_limit", 10},
    {"address_verify_pending_request_limit", 5000},
    {"address_verify_poll_count", 3},
    {"agent_output_line_limit", 4096},
    {"agent_output_limit", 1048576},
};

static const struct {
    const char *name;
    int64_t ms;
    char unit;
} time_defaults[] = {
    {"default_destination_rate_delay", 0, 's'},
    {"smtp_active_connection_max_age", 300000, 's'},
    {"smtp_idle_connection_max_age", 2000, 's'},
    {"destdb_record_lifetime", 300000, 's'},
    {"cluster_lease_time", 3000, 's'},
    {"cluster_redis_timeout", 500, 's'},
    {"cluster_alone_time", 60000, 's'},
    {"default_transport_rate_delay", 0, 's'},
    {"default_recipient_refill_delay", 5000, 's'},
    {"transport_retry_time", 60000, 's'},
    {"minimal_backoff_time", 300000, 's'},
    {"maximal_backoff_time", 4000000, 's'},
    {"queue_run_delay", 300000, 's'},
    {"maximal_queue_lifetime", 432000000, 'd'},
    {"bounce_queue_lifetime", 432000000, 'd'},
    {"delay_warning_time", 0, 'h'},
    {"in_flow_delay", 1000, 's'},
    {"smtp_connection_cache_time_limit", 2000, 's'},
    {"smtp_connection_reuse_time_limit", 300000, 's'},
    {"smtp_connect_timeout", 30000, 's'},
    {"smtp_helo_timeout", 300000, 's'},
    {"smtp_mail_timeout", 300000, 's'},
    {"smtp_rcpt_timeout", 300000, 's'},
    {"smtp_data_init_timeout", 120000, 's'},
    {"smtp_data_xfer_timeout", 180000, 's'},
    {"smtp_data_done_timeout", 600000, 's'},
    {"smtp_quit_timeout", 300000, 's'},
    {"smtpd_timeout", 300000, 's'},
    {"smtpd_stress_timeout", 10000, 's'},
    {"smtpd_starttls_timeout", 300000, 's'},
    {"smtpd_sasl_service_timeout", 30000, 's'},
    {"smtpd_sasl_failure_delay", 1000, 's'},
    {"smtpd_sasl_failure_delay_limit", 30000, 's'},
    {"smtpd_peername_lookup_timeout", 5000, 's'},
    {"smtp_tls_session_cache_timeout", 3600000, 's'},
    {"smtp_mta_sts_fetch_timeout", 10000, 's'},
    {"smtp_tls_report_period", 86400000, 's'},
    {"address_verify_positive_expire_time", 31 * 86400000LL, 'd'},
    {"address_verify_positive_refresh_time", 7 * 86400000LL, 'd'},
    {"address_verify_negative_expire_time", 3 * 86400000LL, 'd'},
    {"address_verify_negative_refresh_time", 3 * 3600000LL, 'h'},
    {"address_verify_poll_delay", 3000, 's'},
    {"agent_time_limit", 1000000, 's'},
    {"agent_restart_delay", 10000, 's'},
};

/* String and list parameters with their defaults as written. */
static const struct {
    const char *name;
    enum conf_type type;
    const char *defval;
} string_defaults[] = {
    {"transports", CONF_LIST,
     "smtp:smtp, relay:smtp, lmtp:lmtp, discard:discard, error:error"},
    {"default_transport", CONF_STRING, "smtp"},
    {"relayhost", CONF_STRING, ""},
    {"transport_maps", CONF_STRING, ""},
    {"scheduler_rules", CONF_STRING, ""},
    {"smtp_helo_name", CONF_STRING, "$myhostname"},
    {"dns_servers", CONF_LIST, ""},
    {"smtp_connection_cache_destinations", CONF_LIST, ""},
    {"queue_directory", CONF_STRING, "/var/spool/sluice"},
    {"myhostname", CONF_STRING, ""},
    {"cluster_redis_url", CONF_STRING, ""},
    {"cluster_name", CONF_STRING, "sluice"},
    {"cluster_key_prefix", CONF_STRING, "sluice:"},
    {"cluster_redis_tls_CAfile", CONF_STRING, ""},
    {"cluster_redis_tls_cert_file", CONF_STRING, ""},
    {"cluster_redis_tls_key_file", CONF_STRING, "$cluster_redis_tls_cert_file"},
    {"cluster_redis_tls_server_name", CONF_STRING, ""},
    {"default_destination_rate", CONF_STRING, ""},
    {"default_destination_connection_rate", CONF_STRING, ""},
    {"smtpd_listen", CONF_LIST, "127.0.0.1:2525"},
    {"mynetworks", CONF_LIST, "127.0.0.0/8, [::1]/128"},
    {"relay_domains", CONF_LIST, ""},
    {"smtpd_client_event_limit_exceptions", CONF_LIST, "$mynetworks"},
    {"message_strip_characters", CONF_STRING, ""},
    {"smtpd_forbid_bare_newline_exclusions", CONF_LIST, ""},
    {"smtpd_tls_cert_file", CONF_STRING, ""},
    {"smtpd_tls_key_file", CONF_STRING, "$smtpd_tls_cert_file"},
    {"smtpd_tls_chain_files", CONF_LIST, ""},
    {"smtpd_tls_security_level", CONF_STRING, ""},
    {"smtpd_tls_wrapper_listen", CONF_LIST, ""},
    {"smtp_tls_policy_maps", CONF_STRING, ""},
    {"smtp_tls_CAfile", CONF_STRING, ""},
    {"smtp_tls_CApath", CONF_STRING, ""},
    {"smtp_tls_cert_file", CONF_STRING, ""},
    {"smtp_tls_key_file", CONF_STRING, "$smtp_tls_cert_file"},
    {"smtp_tls_chain_files", CONF_LIST, ""},
    {"smtp_tls_protocols", CONF_STRING, ">=TLSv1.2"},
    {"smtp_tls_mandatory_protocols", CONF_STRING, ">=TLSv1.2"},
    {"smtp_tls_verify_cert_match", CONF_LIST, "hostname"},
    {"smtp_tls_secure_cert_match", CONF_LIST, "nexthop, dot-nexthop"},
    {"smtp_tls_servername", CONF_STRING, "hostname"},
    {"smtp_mta_sts_CAfile", CONF_STRING, ""},
    {"smtp_tls_report_organization", CONF_STRING, "$myhostname"},
    {"smtp_tls_report_CAfile", CONF_STRING, ""},
    {"smtp_sasl_password_maps", CONF_STRING, ""},
    {"http_listen", CONF_LIST, ""},
    {"http_token_file", CONF_STRING, ""},
    {"maillog_file", CONF_STRING, ""},
    {"mail_owner", CONF_STRING, "sluice"},
    {"smtp_sasl_security_options", CONF_LIST, "noplaintext, noanonymous"},
    {"smtp_sasl_tls_security_options", CONF_LIST,
     "$smtp_sasl_security_options"},
    {"dkim_signing_table", CONF_STRING, ""},
    {"dkim_key_table", CONF_STRING, ""},
    {"dkim_internal_hosts", CONF_LIST, "$mynetworks"},
    {"smtpd_sasl_path", CONF_STRING, ""},
    {"smtpd_relay_restrictions", CONF_LIST,
     "permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination"},
    {"smtpd_sender_restrictions", CONF_LIST, ""},
    {"smtpd_sender_login_maps", CONF_STRING, ""},
    {"smtpd_submission_listen", CONF_LIST, ""},
    {"smtpd_submission_options", CONF_LIST, "smtpd_tls_security_level=encrypt"},
    {"smtpd_recipient_restrictions", CONF_LIST, ""},
    {"address_verify_sender", CONF_STRING, "double-bounce"},
    {"agent_user", CONF_STRING, "nobody"},
};

/* Every overridable parameter and its suffix; all others are global. */
static const struct {
    const char *name;
    const char *suffix;
} overridable[] = {
    {"initial_destination_concurrency", "_initial_destination_concurrency"},
    {"default_destination_concurrency_limit", "_destination_concurrency_limit"},
    {"default_destination_recipient_limit", "_destination_recipient_limit"},
    {"default_destination_concurrency_positive_feedback",
     "_destination_concurrency_positive_feedback"},
    {"default_destination_concurrency_negative_feedback",
     "_destination_concurrency_negative_feedback"},
    {"default_destination_concurrency_failed_cohort_limit",
     "_destination_concurrency_failed_cohort_limit"},
    {"default_destination_rate_delay", "_destination_rate_delay"},
    {"default_destination_rate", "_destination_rate"},
    {"default_destination_connection_rate", "_destination_connection_rate"},
    {"default_transport_rate_delay", "_transport_rate_delay"},
    {"default_delivery_slot_cost", "_delivery_slot_cost"},
    {"default_delivery_slot_loan", "_delivery_slot_loan"},
    {"default_delivery_slot_discount", "_delivery_slot_discount"},
    {"default_minimum_delivery_slots", "_minimum_delivery_slots"},
    {"default_recipient_limit", "_recipient_limit"},
    {"default_extra_recipient_limit", "_extra_recipient_limit"},
    {"default_recipient_refill_limit", "_recipient_refill_limit"},
    {"default_recipient_refill_delay", "_recipient_refill_delay"},
    {"default_process_limit", "_process_limit"},
    {"concurrency_feedback_rounding", "_concurrency_feedback_rounding"},
    {"default_scheduler", "_scheduler"},
    {"default_delivery_scheduler", "_delivery_scheduler"},
    {"smtp_connection_backlog_threshold", "_connection_backlog_threshold"},
    {"smtp_active_connection_max_age", "_active_connection_max_age"},
    {"smtp_idle_connection_max_age", "_idle_connection_max_age"},
    {"max_message_concurrency", "_max_message_concurrency"},
    {"scale_max_concurrency", "_scale_max_concurrency"},
    {"smtp_connection_cache_on_demand", "_connection_cache_on_demand"},
    {"smtp_connection_cache_destinations", "_connection_cache_destinations"},
    {"smtp_connection_cache_time_limit", "_connection_cache_time_limit"},
    {"smtp_connection_reuse_time_limit", "_connection_reuse_time_limit"},
    {"smtp_connection_reuse_count_limit", "_connection_reuse_count_limit"},
    {"smtp_mx_address_limit", "_mx_address_limit"},
    {"smtp_mx_session_limit", "_mx_session_limit"},
    {"smtp_line_length_limit", "_line_length_limit"},
    {"smtp_connect_timeout", "_connect_timeout"},
    {"smtp_helo_timeout", "_helo_timeout"},
    {"smtp_mail_timeout", "_mail_timeout"},
    {"smtp_rcpt_timeout", "_rcpt_timeout"},
    {"smtp_data_init_timeout", "_data_init_timeout"},
    {"smtp_data_xfer_timeout", "_data_xfer_timeout"},
    {"smtp_data_done_timeout", "_data_done_timeout"},
    {"smtp_quit_timeout", "_quit_timeout"},
    {"smtp_helo_name", "_helo_name"},
    {"smtp_tls_security_level", "_tls_security_level"},
    {"smtp_tls_protocols", "_tls_protocols"},
    {"smtp_tls_mandatory_protocols", "_tls_mandatory_protocols"},
    {"smtp_tls_ciphers", "_tls_ciphers"},
    {"smtp_tls_mandatory_ciphers", "_tls_mandatory_ciphers"},
    {"smtp_tls_verify_cert_match", "_tls_verify_cert_match"},
    {"smtp_tls_secure_cert_match", "_tls_secure_cert_match"},
    {"smtp_tls_servername", "_tls_servername"},
    {"smtp_tls_loglevel", "_tls_loglevel"},
    {"smtp_sasl_auth_enable", "_sasl_auth_enable"},
    {"smtp_sasl_security_options", "_sasl_security_options"},
    {"smtp_sasl_tls_security_options", "_sasl_tls_security_options"},
    {"agent_time_limit", "_agent_time_limit"},
};

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

static void test_table_has_every_parameter(void **state)
{
    static const char *others[] = {
        "default_destination_concurrency_positive_feedback",
        "default_destination_concurrency_negative_feedback",
        "destination_concurrency_feedback_debug",
        "smtp_connection_cache_on_demand",
        "concurrency_feedback_rounding",
        "default_scheduler",
        "default_delivery_scheduler",
        "always_add_missing_headers",
        "smtpd_per_record_deadline",
        "smtpd_forbid_bare_newline",
        "disable_mime_output_conversion",
        "smtpd_tls_wrappermode",
        "smtpd_tls_received_header",
        "smtp_tls_security_level",
        "smtp_tls_ciphers",
        "smtp_tls_mandatory_ciphers",
        "smtp_mta_sts_enable",
        "smtp_tls_report_enable",
        "smtp_sasl_auth_enable",
        "dkim_canonicalization",
        "dkim_multiple_signatures",
        "smtpd_sasl_auth_enable",
        "smtpd_sasl_type",
        "smtpd_tls_auth_only",
        "smtpd_sasl_authenticated_header",
        "smtpd_peername_lookup",
        "address_verify_negative_cache",
        "smtputf8_enable",
    };
    size_t i;
    size_t j;

    (void)state;
    /*
     * 21 integers (the reference table's 18, bounce_size_limit,
     * smtp_connection_reuse_count_limit and smtp_line_length_limit), 21
     * times (13, and the SMTP client's 8 timeouts), 3 booleans
     * (disable_mime_output_conversion the last), 2 feedbacks, 2 choices
     * (concurrency_feedback_rounding, default_scheduler), the spool's 2
     * integers and 2 strings (queue_map_size, queue_map_size_limit,
     * queue_directory, myhostname), and routing's and the SMTP client's
     * 4 strings and 2 lists (default_transport, relayhost,
     * transport_maps, smtp_helo_name, transports, dns_servers); the
     * SMTP server's 12 integers (smtpd_staging_threshold the last), 2
     * times, 2 booleans, 5 lists, 1 choice (smtpd_forbid_bare_newline)
     * and 1 string (message_strip_characters); its TLS's 3 strings, 2
     * lists, 2 booleans and 1 time; the SMTP client's TLS: 3 choices
     * (the level and the two cipher grades), 8 strings, 3 lists, 1 time
     * and 1 integer (smtp_tls_loglevel); MTA-STS's 1 boolean, 1 time, 1
     * string and 1 integer; TLS reporting's 1 boolean, 1 time and 2
     * strings; the SMTP client's AUTH: 1 boolean, 1 string and 2 lists;
     * the daemon's HTTP listener: 1 list and 1 string (http_listen,
     * http_token_file); maillog_file; mail_owner; DKIM signing's 2 strings, 1 list, 1 choice and 1
     * boolean; SMTP AUTH's 3 booleans, 1 choice, 3 times, 2 strings and 4
     * lists (decisions 70 to 74); the connection cache's list
     * (smtp_connection_cache_destinations); the SMTP server's client
     * names: 1 boolean and 1 time (decision 84); smtputf8_enable
     * (decision 85); Finch's scheduler: 1 choice, 3 integers and 3
     * times (decisions 93 and 94); its routing workers: 1 integer (decision
     * 108); address verification (decisions 96 to 99):
     * smtpd_recipient_restrictions, 4 reply codes, and 11 address_verify_*
     * (1 string, 1 boolean, 4 integers, 5 times); a cluster on Redis: 3
     * strings and 2 times (decision 100); the cluster's destination rate,
     * 1 string (decision 102); its connection rate, 1 string (decision
     * 112); ZMailer's scheduler rules file, 1 string (decision 114);
     * the cluster's TLS to Redis, 4 strings (decision 117); external
     * agents: 1 string, 2 integers and 2 times (decision 129);
     * cluster_alone_time, 1 time (decision 120).
     */
    assert_int_equal(conf_param_count, 185);
    assert_int_equal(NELEM(int_defaults) + NELEM(time_defaults) +
                         NELEM(string_defaults) + NELEM(others) + 2,
                     conf_param_count);
    for (i = 0; i < NELEM(int_defaults); i++)
        assert_non_null(def_find(int_defaults[i].name));
    for (i = 0; i < NELEM(time_defaults); i++)
        assert_non_null(def_find(time_defaults[i].name));
    for (i = 0; i < NELEM(string_defaults); i++)
        assert_non_null(def_find(string_defaults[i].name));
    for (i = 0; i < NELEM(others); i++)
        assert_non_null(def_find(others[i]));
    for (i = 0; i < conf_param_count; i++) {
        assert_non_null(conf_params[i].summary);
        assert_true(strlen(conf_params[i].summary) > 10);
        for (j = i + 1; j < conf_param_count; j++)
            assert_string_not_equal(conf_params[i].name, conf_params[j].name);
    }
}

static void test_table_types_and_units(void **state)
{
    const struct conf_def *def;
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(int_defaults); i++)
        assert_int_equal(def_find(int_defaults[i].name)->type, CONF_INT);
    for (i = 0; i < NELEM(time_defaults); i++) {
        def = def_find(time_defaults[i].name);
        assert_int_equal(def->type, CONF_TIME);
        assert_int_equal(def->unit, time_defaults[i].unit);
    }
    assert_int_equal(
        def_find("default_destination_concurrency_positive_feedback")->type,
        CONF_FEEDBACK);
    assert_int_equal(
        def_find("default_destination_concurrency_negative_feedback")->type,
        CONF_FEEDBACK);
    assert_int_equal(def_find("destination_concurrency_feedback_debug")->type,
                     CONF_BOOL);
    assert_int_equal(def_find("smtp_connection_cache_on_demand")->type,
                     CONF_BOOL);
    def = def_find("disable_mime_output_conversion");
    assert_int_equal(def->type, CONF_BOOL);
    assert_string_equal(def->defval, "no");
    def = def_find("concurrency_feedback_rounding");
    assert_int_equal(def->type, CONF_CHOICE);
    assert_string_equal(def->choices, "seed|postfix3");
    assert_string_equal(def->defval, "seed");
    def = def_find("smtpd_forbid_bare_newline");
    assert_int_equal(def->type, CONF_CHOICE);
    assert_string_equal(def->choices,
                        "disconnect|normalize|yes|no|note|reject");
    assert_string_equal(def->defval, "disconnect");
    for (i = 0; i < NELEM(string_defaults); i++) {
        def = def_find(string_defaults[i].name);
        assert_int_equal(def->type, string_defaults[i].type);
        assert_string_equal(def->defval, string_defaults[i].defval);
    }
}

static void test_table_suffixes(void **state)
{
    const struct conf_def *def;
    size_t overridden = 0;
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(overridable); i++) {
        def = def_find(overridable[i].name);
        assert_non_null(def);
        assert_non_null(def->suffix);
        assert_string_equal(def->suffix, overridable[i].suffix);
    }
    for (i = 0; i < conf_param_count; i++)
        overridden += conf_params[i].suffix != NULL;
    assert_int_equal(overridden, NELEM(overridable));
}

static void test_table_bounds(void **state)
{
    static const struct {
        const char *name;
        long min, max;
    } bounds[] = {
        {"initial_destination_concurrency", 1, 100000},
        {"default_destination_concurrency_limit", 0, 100000},
        {"default_destination_recipient_limit", 1, 10000000},
        {"default_destination_concurrency_failed_cohort_limit", 0, 100000},
        {"default_delivery_slot_discount", 0, 100},
        {"default_delivery_slot_cost", 0, 10000},
        {"default_recipient_limit", 1, 10000000},
        {"default_recipient_refill_limit", 1, 10000000},
        {"qmgr_message_active_limit", 1, 10000000},
        {"default_process_limit", 1, 100000},
    };
    const struct conf_def *def;
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(bounds); i++) {
        def = def_find(bounds[i].name);
        assert_int_equal(def->min, bounds[i].min);
        assert_int_equal(def->max, bounds[i].max);
    }
}

static void test_defaults_int(void **state)
{
    struct conf *conf = *state;
    size_t i;

    for (i = 0; i < NELEM(int_defaults); i++)
        assert_int_equal(conf_int_named(conf, NULL, int_defaults[i].name),
                         int_defaults[i].value);
}

static void test_defaults_time(void **state)
{
    struct conf *conf = *state;
    size_t i;

    for (i = 0; i < NELEM(time_defaults); i++)
        assert_int_equal(conf_time_ms_named(conf, NULL, time_defaults[i].name),
                         time_defaults[i].ms);
}

static void test_defaults_other(void **state)
{
    struct conf *conf = *state;
    struct conf_feedback fb;

    fb = conf_feedback(conf, NULL,
                       CONF_default_destination_concurrency_positive_feedback);
    assert_int_equal(fb.form, CONF_FEEDBACK_CONSTANT);
    assert_true(fb.value == 1.0);
    fb = conf_feedback(conf, NULL,
                       CONF_default_destination_concurrency_negative_feedback);
    assert_int_equal(fb.form, CONF_FEEDBACK_CONSTANT);
    assert_true(fb.value == 1.0);
    assert_int_equal(
        conf_bool(conf, NULL, CONF_destination_concurrency_feedback_debug), 0);
    assert_int_equal(
        conf_bool(conf, NULL, CONF_smtp_connection_cache_on_demand), 1);
    assert_string_equal(
        conf_str(conf, NULL, CONF_concurrency_feedback_rounding), "seed");
}

static void test_defaults_are_defaults(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;
    size_t i;

    validate_ok(conf);
    assert_int_equal(conf_def_count(conf), conf_param_count);
    assert_int_equal(conf_override_count(conf), 0);
    for (i = 0; i < conf_def_count(conf); i++) {
        assert_ptr_equal(conf_def_at(conf, i)->name, conf_params[i].name);
        assert_int_equal(conf_lookup(conf, conf_params[i].name, &info), 0);
        assert_int_equal(info.is_set, 0);
        assert_int_equal(info.non_default, 0);
        assert_int_equal(info.is_override, 0);
        assert_string_equal(info.value, conf_params[i].defval);
        if (strchr(conf_params[i].defval, '$') == NULL)
            assert_string_equal(info.expanded, conf_params[i].defval);
        assert_null(info.file);
    }
    /* The one default with a reference: myhostname, empty by default. */
    assert_int_equal(conf_lookup(conf, "smtp_helo_name", &info), 0);
    assert_string_equal(info.value, "$myhostname");
    assert_string_equal(info.expanded, "");
    set_ok(conf, "myhostname", "mx.example.com");
    assert_string_equal(conf_str(conf, NULL, CONF_smtp_helo_name),
                        "mx.example.com");
    assert_string_equal(conf_str(conf, "relay", CONF_smtp_helo_name),
                        "mx.example.com");
}

static void test_override_and_fallback(void **state)
{
    struct conf *conf = *state;
    const char *limit = "default_destination_concurrency_limit";

    set_ok(conf, "smtp_destination_concurrency_limit", "7");
    assert_int_equal(conf_int_named(conf, "smtp", limit), 7);
    assert_int_equal(conf_int_named(conf, "relay", limit), 20);
    assert_int_equal(conf_int_named(conf, NULL, limit), 20);
    /* An override name asks for that transport's effective value. */
    assert_int_equal(
        conf_int_named(conf, NULL, "smtp_destination_concurrency_limit"), 7);
    assert_int_equal(
        conf_int_named(conf, NULL, "lmtp_destination_concurrency_limit"), 20);
    /* The fallback follows the global value. */
    set_ok(conf, limit, "30");
    assert_int_equal(conf_int_named(conf, "relay", limit), 30);
    assert_int_equal(conf_int_named(conf, "smtp", limit), 7);

    set_ok(conf, "smtp_initial_destination_concurrency", "2");
    assert_int_equal(
        conf_int(conf, "smtp", CONF_initial_destination_concurrency), 2);
    assert_int_equal(
        conf_int(conf, "lmtp", CONF_initial_destination_concurrency), 5);
    set_ok(conf, "relay_destination_rate_delay", "2s");
    assert_int_equal(
        conf_time_ms(conf, "relay", CONF_default_destination_rate_delay), 2000);
    assert_int_equal(
        conf_time_ms(conf, "smtp", CONF_default_destination_rate_delay), 0);
    set_ok(conf, "smtp_destination_concurrency_negative_feedback",
           "1/concurrency");
    assert_int_equal(
        conf_feedback(conf, "smtp",
                      CONF_default_destination_concurrency_negative_feedback)
            .form,
        CONF_FEEDBACK_CONCURRENCY);
    set_ok(conf, "smtp_process_limit", "10");
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 10);
    assert_int_equal(conf_int(conf, "lmtp", CONF_default_process_limit), 100);
    assert_int_equal(conf_override_count(conf), 5);
    assert_string_equal(conf_override_at(conf, 0),
                        "smtp_destination_concurrency_limit");
    assert_string_equal(conf_override_at(conf, 4), "smtp_process_limit");
}

static void test_override_of_global_only(void **state)
{
    struct conf *conf = *state;

    /* A transport argument is ignored for a global-only parameter... */
    set_ok(conf, "minimal_backoff_time", "10s");
    assert_int_equal(conf_time_ms(conf, "smtp", CONF_minimal_backoff_time),
                     10000);
    /* ...and such a parameter has no override names. */
    set_fails(conf, "smtp_minimal_backoff_time", "1s",
              "unknown parameter \"smtp_minimal_backoff_time\"");
    set_fails(conf, "smtp_qmgr_message_active_limit", "1",
              "unknown parameter \"smtp_qmgr_message_active_limit\"");
}

static void test_longest_suffix_wins(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    set_ok(conf, "smtp_destination_recipient_limit", "2");
    assert_int_equal(
        conf_int(conf, "smtp", CONF_default_destination_recipient_limit), 2);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_recipient_limit),
                     20000);
    assert_int_equal(
        conf_int(conf, "smtp_destination", CONF_default_recipient_limit),
        20000);
    assert_int_equal(
        conf_lookup(conf, "smtp_destination_recipient_limit", &info), 0);
    assert_string_equal(info.def->name, "default_destination_recipient_limit");
    assert_int_equal(info.is_override, 1);

    set_ok(conf, "smtp_extra_recipient_limit", "9");
    assert_int_equal(conf_int(conf, "smtp", CONF_default_extra_recipient_limit),
                     9);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_recipient_limit),
                     20000);
    set_ok(conf, "smtp_recipient_refill_limit", "8");
    assert_int_equal(
        conf_int(conf, "smtp", CONF_default_recipient_refill_limit), 8);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_recipient_limit),
                     20000);
    /* Two suffixes, two valid transports: the longer suffix wins. */
    set_ok(conf, "smtp_destination_extra_recipient_limit", "7");
    assert_int_equal(
        conf_int(conf, "smtp_destination", CONF_default_extra_recipient_limit),
        7);
    assert_int_equal(
        conf_int(conf, "smtp_destination_extra", CONF_default_recipient_limit),
        20000);
}

/*
 * The SMTP client's parameters are named smtp_X and overridden by
 * <transport>_X: smtp_X is the global value and transport smtp's.
 */
static void test_smtp_client_overrides(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    set_ok(conf, "relay_connect_timeout", "5s");
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_connect_timeout),
                     5000);
    assert_int_equal(conf_time_ms(conf, "smtp", CONF_smtp_connect_timeout),
                     30000);
    assert_int_equal(conf_time_ms(conf, "lmtp", CONF_smtp_connect_timeout),
                     30000);
    assert_int_equal(conf_time_ms_named(conf, NULL, "relay_connect_timeout"),
                     5000);
    set_ok(conf, "smtp_connect_timeout", "10s");
    assert_int_equal(conf_time_ms(conf, "smtp", CONF_smtp_connect_timeout),
                     10000);
    assert_int_equal(conf_time_ms(conf, "lmtp", CONF_smtp_connect_timeout),
                     10000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_connect_timeout),
                     5000);

    set_ok(conf, "lmtp_mx_address_limit", "1");
    assert_int_equal(conf_int(conf, "lmtp", CONF_smtp_mx_address_limit), 1);
    assert_int_equal(conf_int(conf, "smtp", CONF_smtp_mx_address_limit), 5);
    assert_int_equal(conf_int(conf, "lmtp", CONF_smtp_mx_session_limit), 2);
    assert_int_equal(conf_lookup(conf, "lmtp_mx_address_limit", &info), 0);
    assert_string_equal(info.def->name, "smtp_mx_address_limit");
    assert_int_equal(info.is_override, 1);

    /* Each suffix reaches its own parameter and no other. */
    set_ok(conf, "relay_data_init_timeout", "1s");
    set_ok(conf, "relay_data_xfer_timeout", "2s");
    set_ok(conf, "relay_data_done_timeout", "3s");
    set_ok(conf, "relay_helo_timeout", "4s");
    set_ok(conf, "relay_mail_timeout", "6s");
    set_ok(conf, "relay_rcpt_timeout", "7s");
    set_ok(conf, "relay_quit_timeout", "8s");
    set_ok(conf, "relay_connection_cache_time_limit", "9s");
    set_ok(conf, "relay_connection_reuse_time_limit", "10s");
    set_ok(conf, "relay_connection_reuse_count_limit", "11");
    set_ok(conf, "relay_mx_session_limit", "12");
    set_ok(conf, "relay_helo_name", "relay.example.com");
    set_ok(conf, "relay_connection_cache_on_demand", "no");
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_data_init_timeout),
                     1000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_data_xfer_timeout),
                     2000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_data_done_timeout),
                     3000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_helo_timeout), 4000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_mail_timeout), 6000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_rcpt_timeout), 7000);
    assert_int_equal(conf_time_ms(conf, "relay", CONF_smtp_quit_timeout), 8000);
    assert_int_equal(
        conf_time_ms(conf, "relay", CONF_smtp_connection_cache_time_limit),
        9000);
    assert_int_equal(
        conf_time_ms(conf, "relay", CONF_smtp_connection_reuse_time_limit),
        10000);
    assert_int_equal(
        conf_int(conf, "relay", CONF_smtp_connection_reuse_count_limit), 11);
    assert_int_equal(conf_int(conf, "relay", CONF_smtp_mx_session_limit), 12);
    assert_int_equal(conf_int(conf, "relay", CONF_smtp_mx_address_limit), 5);
    assert_string_equal(conf_str(conf, "relay", CONF_smtp_helo_name),
                        "relay.example.com");
    assert_string_equal(conf_str(conf, "smtp", CONF_smtp_helo_name), "");
    assert_int_equal(conf_time_ms(conf, "smtp", CONF_smtp_data_init_timeout),
                     120000);
    assert_int_equal(
        conf_bool(conf, "relay", CONF_smtp_connection_cache_on_demand), 0);
    assert_int_equal(
        conf_bool(conf, "smtp", CONF_smtp_connection_cache_on_demand), 1);
    assert_int_equal(conf_override_count(conf), 15);

    /* Type checks apply to overrides too. */
    set_fails(conf, "relay_connect_timeout", "soon",
              "relay_connect_timeout: bad value \"soon\": expected a time "
              "like 300s, 5m, 1h");
    set_fails(conf, "lmtp_mx_address_limit", "-1",
              "lmtp_mx_address_limit: bad value \"-1\": expected an integer "
              "between 0 and 1000");
    /* Global-only neighbours stay global-only. */
    set_fails(conf, "relay_dns_servers", "127.0.0.1",
              "unknown parameter \"relay_dns_servers\"");
}

/*
 * A new suffix must not take over names that meant something else: the
 * only suffixes that end other suffixes, and the only global names that
 * end in another parameter's suffix, are these known ones (where the
 * longest suffix, or the exact global name, wins).
 */
static void test_suffixes_unambiguous(void **state)
{
    static const char *expected[] = {
        "_destination_recipient_limit ends _recipient_limit",
        "_extra_recipient_limit ends _recipient_limit",
        "default_destination_recipient_limit ends _recipient_limit",
        "default_extra_recipient_limit ends _recipient_limit",
        "qmgr_message_recipient_limit ends _recipient_limit",
        "smtpd_recipient_limit ends _recipient_limit",
        "smtpd_tls_security_level ends _tls_security_level",
        "smtpd_sasl_auth_enable ends _sasl_auth_enable",
        "_delivery_scheduler ends _scheduler",
        "default_delivery_scheduler ends _scheduler",
    };
    char found[NELEM(expected) + 1][128];
    const char *a;
    const char *b;
    size_t nfound = 0;
    size_t i;
    size_t j;
    size_t k;

    (void)state;
    for (i = 0; i < conf_param_count; i++) {
        for (j = 0; j < conf_param_count; j++) {
            if (i == j || (b = conf_params[j].suffix) == NULL)
                continue;
            for (k = 0; k < 2; k++) {
                a = k == 0 ? conf_params[i].suffix : conf_params[i].name;
                if (a == NULL || strlen(a) <= strlen(b) ||
                    strcmp(a + strlen(a) - strlen(b), b) != 0)
                    continue;
                assert_true(nfound < NELEM(expected));
                snprintf(found[nfound++], sizeof(found[0]), "%s ends %s", a, b);
            }
        }
    }
    assert_int_equal(nfound, NELEM(expected));
    for (i = 0; i < NELEM(expected); i++) {
        for (j = 0; j < nfound; j++)
            if (strcmp(found[j], expected[i]) == 0)
                break;
        if (j == nfound)
            fail_msg("missing: %s", expected[i]);
    }
}

static void test_global_name_matches_first(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    /* Each of these also ends in a suffix with a valid prefix. */
    assert_int_equal(
        conf_lookup(conf, "default_destination_concurrency_limit", &info), 0);
    assert_int_equal(info.is_override, 0);
    assert_int_equal(conf_lookup(conf, "qmgr_message_recipient_limit", &info),
                     0);
    assert_int_equal(info.is_override, 0);
    assert_string_equal(info.def->name, "qmgr_message_recipient_limit");
    set_ok(conf, "qmgr_message_recipient_limit", "5000");
    assert_int_equal(conf_int(conf, NULL, CONF_qmgr_message_recipient_limit),
                     5000);
    assert_int_equal(
        conf_int(conf, "qmgr_message", CONF_default_recipient_limit), 20000);
    assert_int_equal(conf_override_count(conf), 0);
}

/*
 * Issue 19: "smtp_delivery_scheduler parses as the _scheduler job policy
 * of a transport named smtp_delivery: the longest known suffix must win".
 */
static void test_delivery_scheduler_suffix(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    assert_int_equal(conf_lookup(conf, "smtp_delivery_scheduler", &info), 0);
    assert_int_equal(info.is_override, 1);
    assert_string_equal(info.def->name, "default_delivery_scheduler");
    set_ok(conf, "smtp_delivery_scheduler", "finch");
    assert_string_equal(conf_str(conf, "smtp", CONF_default_delivery_scheduler),
                        "finch");
    assert_string_equal(
        conf_str(conf, "relay", CONF_default_delivery_scheduler), "postfix");
    assert_string_equal(conf_str(conf, "smtp", CONF_default_scheduler),
                        "preemptive");
    set_ok(conf, "relay_delivery_scheduler", "zmailer");
    assert_string_equal(
        conf_str(conf, "relay", CONF_default_delivery_scheduler), "zmailer");
    set_fails(conf, "relay_delivery_scheduler", "kumo",
              "relay_delivery_scheduler: bad value \"kumo\": expected "
              "one of: postfix, finch, zmailer");
}

static void test_override_name_syntax(void **state)
{
    struct conf *conf = *state;

    set_fails(conf, "SMTP_process_limit", "1",
              "unknown parameter \"SMTP_process_limit\"");
    set_fails(conf, "_process_limit", "1",
              "unknown parameter \"_process_limit\"");
    set_fails(conf, "smtp/x_process_limit", "1",
              "unknown parameter \"smtp/x_process_limit\"");
    set_fails(conf, "process_limit", "1",
              "unknown parameter \"process_limit\"");
    set_fails(conf, "", "1", "unknown parameter \"\"");
    set_ok(conf, "smtp-relay_process_limit", "3");
    set_ok(conf, "a_b-9_process_limit", "4");
    set_ok(conf, "sim_domain_a.test_process_limit", "5");
    assert_int_equal(
        conf_int(conf, "sim_domain_a.test", CONF_default_process_limit), 5);
    assert_int_equal(conf_int(conf, "smtp-relay", CONF_default_process_limit),
                     3);
    assert_int_equal(conf_int(conf, "a_b-9", CONF_default_process_limit), 4);
}

static void test_later_setting_wins(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    set_ok(conf, "default_process_limit", "10");
    set_ok(conf, "default_process_limit", "11");
    set_ok(conf, "smtp_process_limit", "12");
    set_ok(conf, "smtp_process_limit", "13");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 11);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 13);
    assert_int_equal(conf_override_count(conf), 1);
    assert_int_equal(conf_lookup(conf, "smtp_process_limit", &info), 0);
    assert_string_equal(info.value, "13");
    assert_int_equal(info.is_set, 1);
    assert_int_equal(info.non_default, 1);
}

static void test_lookup_info(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    assert_int_equal(conf_lookup(conf, "nope", &info), -1);
    /* Set to the default text: set, but not "non-default". */
    set_ok(conf, "default_process_limit", "100");
    assert_int_equal(conf_lookup(conf, "default_process_limit", &info), 0);
    assert_int_equal(info.is_set, 1);
    assert_int_equal(info.non_default, 0);
    set_ok(conf, "default_process_limit", "$initial_destination_concurrency");
    assert_int_equal(conf_lookup(conf, "default_process_limit", &info), 0);
    assert_int_equal(info.non_default, 1);
    assert_string_equal(info.value, "$initial_destination_concurrency");
    assert_string_equal(info.expanded, "5");
    assert_null(info.file);
    assert_int_equal(info.line, 0);
    /* An override that is not set shows the global's value. */
    assert_int_equal(conf_lookup(conf, "smtp_process_limit", &info), 0);
    assert_int_equal(info.is_override, 1);
    assert_int_equal(info.is_set, 0);
    assert_int_equal(info.non_default, 0);
    assert_string_equal(info.value, "$initial_destination_concurrency");
    assert_string_equal(info.expanded, "5");
    assert_string_equal(info.def->name, "default_process_limit");
    /* An override set to the global's default text is still non-default. */
    set_ok(conf, "smtp_process_limit", "100");
    assert_int_equal(conf_lookup(conf, "smtp_process_limit", &info), 0);
    assert_int_equal(info.is_set, 1);
    assert_int_equal(info.non_default, 1);
}

static void test_time_parse(void **state)
{
    static const struct {
        const char *text;
        char unit;
        int64_t ms;
    } good[] = {
        {"300s", 's', 300000},  {"5m", 's', 300000},
        {"1h", 's', 3600000},   {"2d", 's', 172800000},
        {"1w", 's', 604800000}, {"250ms", 's', 250},
        {"0.5s", 's', 500},     {"1.5m", 's', 90000},
        {".5h", 's', 1800000},  {"10", 's', 10000},
        {"10", 0, 10000},       {"2", 'h', 7200000},
        {"5", 'd', 432000000},  {"1", 'w', 604800000},
        {"3", 'm', 180000},     {"0", 's', 0},
        {"0h", 'h', 0},         {"10000w", 's', 6048000000000},
        {"007s", 's', 7000},    {"1.", 's', 1000},
    };
    static const char *bad[] = {
        "",
        "s",
        "5x",
        "-5s",
        "5 s",
        " 5s",
        "5s ",
        "1e3s",
        "inf",
        "nan",
        "0x10s",
        "5S",
        "5sec",
        "1.2.3s",
        "+5s",
        "10001w",
        "99999999999999999999999999999d",
    };
    char why[WHY_SIZE];
    int64_t ms;
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(good); i++) {
        ms = -1;
        if (conf_time_parse(good[i].text, good[i].unit, &ms, why,
                            sizeof(why)) != 0)
            fail_msg("\"%s\": %s", good[i].text, why);
        assert_int_equal(ms, good[i].ms);
    }
    for (i = 0; i < NELEM(bad); i++) {
        why[0] = 0;
        if (conf_time_parse(bad[i], 's', &ms, why, sizeof(why)) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        if (strcmp(bad[i], "10001w") == 0 || bad[i][0] == '9')
            assert_string_equal(why, "expected a time like 300s, 5m, 1h, "
                                     "at most 10000w");
        else
            assert_string_equal(why, "expected a time like 300s, 5m, 1h");
    }
}

static void test_time_default_units(void **state)
{
    struct conf *conf = *state;

    set_ok(conf, "delay_warning_time", "2");
    set_ok(conf, "maximal_queue_lifetime", "1");
    set_ok(conf, "bounce_queue_lifetime", "3");
    set_ok(conf, "minimal_backoff_time", "10");
    set_ok(conf, "queue_run_delay", "1.5m");
    assert_int_equal(conf_time_ms(conf, NULL, CONF_delay_warning_time),
                     7200000);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_maximal_queue_lifetime),
                     86400000);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_bounce_queue_lifetime),
                     259200000);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_minimal_backoff_time),
                     10000);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_queue_run_delay), 90000);
    set_fails(conf, "in_flow_delay", "1 s",
              "in_flow_delay: bad value \"1 s\": expected a time like 300s, "
              "5m, 1h");
}

static void test_feedback_parse(void **state)
{
    static const struct {
        const char *text;
        enum conf_feedback_form form;
        double value;
    } good[] = {
        {"1", CONF_FEEDBACK_CONSTANT, 1},
        {"0", CONF_FEEDBACK_CONSTANT, 0},
        {"0.5", CONF_FEEDBACK_CONSTANT, 0.5},
        {"1/4", CONF_FEEDBACK_CONSTANT, 0.25},
        {"2/4", CONF_FEEDBACK_CONSTANT, 0.5},
        {"3/3", CONF_FEEDBACK_CONSTANT, 1},
        {"1/concurrency", CONF_FEEDBACK_CONCURRENCY, 1},
        {"0.5/concurrency", CONF_FEEDBACK_CONCURRENCY, 0.5},
        {"1/sqrt_concurrency", CONF_FEEDBACK_SQRT_CONCURRENCY, 1},
        {"0.5/sqrt_concurrency", CONF_FEEDBACK_SQRT_CONCURRENCY, 0.5},
        {"0/concurrency", CONF_FEEDBACK_CONCURRENCY, 0},
    };
    static const char *bad[] = {
        "",     "2",   "1.5",   "-1",          "x",
        "1/",   "/2",  "1/0",   "1/conc",      "2/concurrency",
        "1/-2", "5/4", "1 /4",  "1/ 4",        "1/sqrt",
        "inf",  "1e0", "1/4/2", "concurrency", "1/Concurrency",
    };
    struct conf_feedback fb;
    char why[WHY_SIZE];
    size_t i;

    (void)state;
    for (i = 0; i < NELEM(good); i++) {
        if (conf_feedback_parse(good[i].text, &fb, why, sizeof(why)) != 0)
            fail_msg("\"%s\": %s", good[i].text, why);
        assert_int_equal(fb.form, good[i].form);
        if (fb.value != good[i].value)
            fail_msg("\"%s\": %g != %g", good[i].text, fb.value, good[i].value);
    }
    for (i = 0; i < NELEM(bad); i++) {
        why[0] = 0;
        if (conf_feedback_parse(bad[i], &fb, why, sizeof(why)) != -1)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_string_equal(why, "expected x, x/y, x/concurrency or "
                                 "x/sqrt_concurrency with a value between 0 "
                                 "and 1");
    }
}

static void test_int_values(void **state)
{
    struct conf *conf = *state;

    set_ok(conf, "default_destination_concurrency_limit", "0");
    assert_int_equal(
        conf_int(conf, NULL, CONF_default_destination_concurrency_limit), 0);
    set_ok(conf, "default_delivery_slot_discount", "100");
    assert_int_equal(conf_int(conf, NULL, CONF_default_delivery_slot_discount),
                     100);
    set_ok(conf, "default_destination_concurrency_failed_cohort_limit", "0");
    assert_int_equal(
        conf_int(conf, NULL,
                 CONF_default_destination_concurrency_failed_cohort_limit),
        0);
    set_ok(conf, "message_size_limit", "9223372036854775807");
    assert_int_equal(conf_int(conf, NULL, CONF_message_size_limit),
                     9223372036854775807L);
    set_fails(conf, "default_delivery_slot_discount", "101",
              "default_delivery_slot_discount: bad value \"101\": expected an "
              "integer between 0 and 100");
    set_fails(conf, "initial_destination_concurrency", "0",
              "initial_destination_concurrency: bad value \"0\": expected an "
              "integer between 1 and 100000");
    set_fails(conf, "default_destination_recipient_limit", "0",
              "default_destination_recipient_limit: bad value \"0\": expected "
              "an integer between 1 and 10000000");
    set_fails(conf, "default_destination_concurrency_limit", "-1",
              "default_destination_concurrency_limit: bad value \"-1\": "
              "expected an integer between 0 and 100000");
    set_fails(conf, "default_process_limit", "1.5",
              "default_process_limit: bad value \"1.5\": expected an integer "
              "between 1 and 100000");
    set_fails(conf, "default_process_limit", "+5",
              "default_process_limit: bad value \"+5\": expected an integer "
              "between 1 and 100000");
    set_fails(conf, "default_process_limit", " 5",
              "default_process_limit: bad value \" 5\": expected an integer "
              "between 1 and 100000");
    set_fails(conf, "default_process_limit", "",
              "default_process_limit: bad value \"\": expected an integer "
              "between 1 and 100000");
    set_fails(conf, "message_size_limit", "99999999999999999999",
              "message_size_limit: bad value \"99999999999999999999\": "
              "expected an integer of at least 0");
    set_fails(conf, "smtp_delivery_slot_discount", "x",
              "smtp_delivery_slot_discount: bad value \"x\": expected an "
              "integer between 0 and 100");
    /* Failed settings changed nothing. */
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 100);
    assert_int_equal(conf_override_count(conf), 0);
}

static void test_bool_values(void **state)
{
    struct conf *conf = *state;
    const char *name = "destination_concurrency_feedback_debug";

    set_ok(conf, name, "yes");
    assert_int_equal(conf_bool_named(conf, NULL, name), 1);
    set_ok(conf, name, "NO");
    assert_int_equal(conf_bool_named(conf, NULL, name), 0);
    set_ok(conf, name, "Yes");
    assert_int_equal(conf_bool_named(conf, NULL, name), 1);
    set_fails(conf, name, "true",
              "destination_concurrency_feedback_debug: bad value \"true\": "
              "expected yes or no");
    set_fails(conf, name, "1",
              "destination_concurrency_feedback_debug: bad value \"1\": "
              "expected yes or no");
}

static void test_choice_values(void **state)
{
    struct conf *conf = *state;
    const char *name = "concurrency_feedback_rounding";

    set_ok(conf, "smtp_concurrency_feedback_rounding", "postfix3");
    assert_string_equal(conf_str_named(conf, "smtp", name), "postfix3");
    assert_string_equal(conf_str_named(conf, "lmtp", name), "seed");
    set_ok(conf, name, "postfix3");
    set_ok(conf, "smtp_concurrency_feedback_rounding", "seed");
    assert_string_equal(conf_str_named(conf, "smtp", name), "seed");
    assert_string_equal(conf_str_named(conf, "lmtp", name), "postfix3");
    set_fails(conf, name, "Seed",
              "concurrency_feedback_rounding: bad value \"Seed\": expected "
              "one of: seed, postfix3");
    set_fails(conf, name, "",
              "concurrency_feedback_rounding: bad value \"\": expected one "
              "of: seed, postfix3");
    set_fails(conf, name, "seed|postfix3",
              "concurrency_feedback_rounding: bad value \"seed|postfix3\": "
              "expected one of: seed, postfix3");
}

static void test_feedback_values(void **state)
{
    struct conf *conf = *state;
    const char *pos = "default_destination_concurrency_positive_feedback";
    struct conf_feedback fb;

    set_ok(conf, pos, "0.5/sqrt_concurrency");
    fb = conf_feedback_named(conf, NULL, pos);
    assert_int_equal(fb.form, CONF_FEEDBACK_SQRT_CONCURRENCY);
    assert_true(fb.value == 0.5);
    set_fails(conf, pos, "3/2",
              "default_destination_concurrency_positive_feedback: bad value "
              "\"3/2\": expected x, x/y, x/concurrency or x/sqrt_concurrency "
              "with a value between 0 and 1");
}

/* Parameters of every type, added the way sluice-sim adds its keys. */
static const struct conf_def test_defs[] = {
    {"test_string", CONF_STRING, "", "_test_string", 0, 0, 0, NULL,
     "a string for tests"},
    {"test_list", CONF_LIST, "a, b c", NULL, 0, 0, 0, NULL, "a list"},
    {"test_int", CONF_INT, "$default_process_limit", NULL, 0, 1000, 0, NULL,
     "an integer whose default refers to another parameter"},
    {"test_neg", CONF_INT, "-5", NULL, -10, 10, 0, NULL, "may be negative"},
    {"test_any", CONF_INT, "0", NULL, -9223372036854775807L - 1,
     9223372036854775807L, 0, NULL, "any integer"},
    {"test_time", CONF_TIME, "2", "_test_time", 0, 0, 'w', NULL,
     "a time in weeks"},
};

static struct conf *conf_with_test_defs(void)
{
    struct conf *conf = conf_create();
    char why[WHY_SIZE] = "";

    if (conf_add_params(conf, test_defs, NELEM(test_defs), why, sizeof(why)) !=
        0)
        fail_msg("conf_add_params: %s", why);
    return conf;
}

static void test_add_params(void **state)
{
    struct conf *conf = conf_with_test_defs();

    (void)state;
    assert_int_equal(conf_def_count(conf), conf_param_count + NELEM(test_defs));
    assert_string_equal(conf_def_at(conf, conf_param_count)->name,
                        "test_string");
    assert_string_equal(conf_str_named(conf, NULL, "test_string"), "");
    assert_string_equal(conf_str_named(conf, NULL, "test_list"), "a, b c");
    assert_int_equal(conf_int_named(conf, NULL, "test_int"), 100);
    assert_int_equal(conf_int_named(conf, NULL, "test_neg"), -5);
    assert_int_equal(conf_time_ms_named(conf, NULL, "test_time"), 1209600000);
    set_ok(conf, "test_neg", "-10");
    assert_int_equal(conf_int_named(conf, NULL, "test_neg"), -10);
    set_fails(conf, "test_neg", "-11",
              "test_neg: bad value \"-11\": expected an integer between -10 "
              "and 10");
    set_fails(conf, "test_any", "x",
              "test_any: bad value \"x\": expected an integer");
    set_ok(conf, "smtp_test_time", "3");
    assert_int_equal(conf_time_ms_named(conf, "smtp", "test_time"), 1814400000);
    assert_int_equal(conf_time_ms_named(conf, "lmtp", "test_time"), 1209600000);
    validate_ok(conf);
    conf_free(conf);
}

static void test_add_params_errors(void **state)
{
    static const struct {
        struct conf_def def;
        const char *why;
    } bad[] = {
        {{"default_process_limit", CONF_INT, "1", NULL, 0, 9, 0, NULL, "x"},
         "conf_add_params: default_process_limit: already defined"},
        {{"Caps", CONF_INT, "1", NULL, 0, 9, 0, NULL, "x"},
         "conf_add_params: Caps: name is not [a-z0-9_]"},
        {{"", CONF_INT, "1", NULL, 0, 9, 0, NULL, "x"},
         "conf_add_params: definition 0 has no name"},
        {{"sim_x", CONF_INT, "x", NULL, 0, 9, 0, NULL, "x"},
         "conf_add_params: sim_x: bad default \"x\": expected an integer "
         "between 0 and 9"},
        {{"sim_x", CONF_INT, "1", NULL, 9, 0, 0, NULL, "x"},
         "conf_add_params: sim_x: min 9 > max 0"},
        {{"sim_x", CONF_TIME, "1", NULL, 0, 0, 'y', NULL, "x"},
         "conf_add_params: sim_x: bad time unit"},
        {{"sim_x", CONF_CHOICE, "a", NULL, 0, 0, 0, NULL, "x"},
         "conf_add_params: sim_x: no choices"},
        {{"sim_x", CONF_STRING, NULL, NULL, 0, 0, 0, NULL, "x"},
         "conf_add_params: sim_x: no default value"},
        {{"sim_x", CONF_STRING, "", "_process_limit", 0, 0, 0, NULL, "x"},
         "conf_add_params: sim_x: suffix _process_limit is already used by "
         "default_process_limit"},
        {{"sim_x", CONF_STRING, "", "x", 0, 0, 0, NULL, "x"},
         "conf_add_params: sim_x: suffix \"x\" is not _something"},
    };
    struct conf *conf = *state;
    struct conf_def twice[2] = {
        {"sim_a", CONF_INT, "1", NULL, 0, 9, 0, NULL, "x"},
        {"sim_a", CONF_INT, "1", NULL, 0, 9, 0, NULL, "x"},
    };
    char why[WHY_SIZE];
    size_t i;

    for (i = 0; i < NELEM(bad); i++) {
        why[0] = 0;
        assert_int_equal(
            conf_add_params(conf, &bad[i].def, 1, why, sizeof(why)), -1);
        assert_string_equal(why, bad[i].why);
    }
    assert_int_equal(conf_add_params(conf, twice, 2, why, sizeof(why)), -1);
    assert_string_equal(why, "conf_add_params: sim_a: defined twice");
    /* Nothing was added. */
    assert_int_equal(conf_def_count(conf), conf_param_count);
}

static void test_expand(void **state)
{
    struct conf *conf = conf_with_test_defs();
    struct conf_info info;

    (void)state;
    set_ok(conf, "default_process_limit", "$initial_destination_concurrency");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 5);
    set_ok(conf, "default_process_limit",
           "${initial_destination_concurrency}0");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 50);
    /* test_int's default refers to default_process_limit. */
    assert_int_equal(conf_int_named(conf, NULL, "test_int"), 50);
    set_ok(conf, "test_string",
           "<$default_process_limit> $$ ${test_list}$$x $qmgr_message_"
           "recipient_minimum.");
    assert_string_equal(conf_str_named(conf, NULL, "test_string"),
                        "<50> $ a, b c$x 10.");
    /* Values are kept as written; expansion happens at lookup time. */
    assert_int_equal(conf_lookup(conf, "test_string", &info), 0);
    assert_string_equal(info.value, "<$default_process_limit> $$ "
                                    "${test_list}$$x "
                                    "$qmgr_message_recipient_minimum.");
    set_ok(conf, "initial_destination_concurrency", "7");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 70);
    assert_string_equal(conf_str_named(conf, NULL, "test_string"),
                        "<70> $ a, b c$x 10.");
    validate_ok(conf);
    conf_free(conf);
}

static void test_expand_overrides(void **state)
{
    struct conf *conf = *state;

    /* An unset override stands for its global. */
    set_ok(conf, "smtp_process_limit", "$smtp_destination_concurrency_limit");
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 20);
    set_ok(conf, "smtp_destination_concurrency_limit", "3");
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 3);
    /* ${} allows the '-' of transport names. */
    set_ok(conf, "relay-out_destination_concurrency_limit", "4");
    set_ok(conf, "default_process_limit",
           "${relay-out_destination_concurrency_limit}");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 4);
    validate_ok(conf);
}

static void test_expand_deferred_check(void **state)
{
    struct conf *conf = *state;

    /* With a $, conf_set() cannot check: conf_validate() does. */
    set_ok(conf, "default_process_limit", "$nope");
    validate_fails(conf, "default_process_limit: bad value \"$nope\": "
                         "unknown parameter \"nope\"");
    set_ok(conf, "default_process_limit", "${initial_destination_concurrency");
    validate_fails(conf, "default_process_limit: bad value "
                         "\"${initial_destination_concurrency\": expected "
                         "$name, ${name} or $$");
    set_ok(conf, "default_process_limit", "1$");
    validate_fails(conf, "default_process_limit: bad value \"1$\": expected "
                         "$name, ${name} or $$");
    set_ok(conf, "default_process_limit", "$-x");
    validate_fails(conf, "default_process_limit: bad value \"$-x\": expected "
                         "$name, ${name} or $$");
    set_ok(conf, "default_process_limit", "${}");
    validate_fails(conf, "default_process_limit: bad value \"${}\": expected "
                         "$name, ${name} or $$");
    set_ok(conf, "default_process_limit", "$message_size_limit");
    validate_fails(conf, "default_process_limit: bad value "
                         "\"$message_size_limit\": expands to \"10240000\": "
                         "expected an integer between 1 and 100000");
    set_ok(conf, "default_process_limit", "$$");
    validate_fails(conf, "default_process_limit: bad value \"$$\": expands "
                         "to \"$\": expected an integer between 1 and 100000");
    set_ok(conf, "default_process_limit", "$default_delivery_slot_cost");
    validate_ok(conf);
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 5);
}

static void test_expand_loops(void **state)
{
    struct conf *conf = *state;

    set_ok(conf, "default_process_limit", "$default_process_limit");
    validate_fails(conf, "default_process_limit: bad value "
                         "\"$default_process_limit\": $name expansion loop: "
                         "default_process_limit -> default_process_limit");
    set_ok(conf, "default_process_limit", "$initial_destination_concurrency");
    set_ok(conf, "initial_destination_concurrency", "$smtp_process_limit");
    /*
     * smtp_process_limit is not set: it stands for default_process_limit,
     * which is where the loop closes. The path shows the names as written.
     */
    validate_fails(conf, "default_process_limit: bad value "
                         "\"$initial_destination_concurrency\": $name "
                         "expansion loop: initial_destination_concurrency -> "
                         "smtp_process_limit -> "
                         "initial_destination_concurrency");
    /* A three-step loop through an override. */
    set_ok(conf, "initial_destination_concurrency", "7");
    set_ok(conf, "smtp_process_limit", "$smtp_delivery_slot_cost");
    set_ok(conf, "smtp_delivery_slot_cost", "$smtp_delivery_slot_loan");
    set_ok(conf, "smtp_delivery_slot_loan", "$smtp_process_limit");
    validate_fails(conf, "smtp_delivery_slot_loan: bad value "
                         "\"$smtp_process_limit\": $name expansion loop: "
                         "smtp_process_limit -> smtp_delivery_slot_cost -> "
                         "smtp_delivery_slot_loan -> smtp_process_limit");
    /* Values outside the loop stay usable. */
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 7);
    set_ok(conf, "smtp_delivery_slot_loan", "1");
    validate_ok(conf);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 1);
}

static void test_expand_depth_limit(void **state)
{
    struct conf *conf = *state;
    char name[64];
    char value[64];
    int i;

    /* t0 = $t1, ..., t99 = 9: 100 levels are fine... */
    for (i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "t%d_process_limit", i);
        snprintf(value, sizeof(value), "$t%d_process_limit", i + 1);
        set_ok(conf, name, i == 99 ? "9" : value);
    }
    validate_ok(conf);
    assert_int_equal(conf_int(conf, "t0", CONF_default_process_limit), 9);
    /*
     * ...102 are not. Globals resolve first: default_process_limit,
     * tx, t0, ..., t97 fill the 100 levels, and t98 is one too many.
     */
    set_ok(conf, "tx_process_limit", "$t0_process_limit");
    set_ok(conf, "default_process_limit", "$tx_process_limit");
    validate_fails(conf, "t98_process_limit: bad value "
                         "\"$t99_process_limit\": $name expansion nested "
                         "deeper than 100");
}

static void test_expand_size_limit(void **state)
{
    struct conf *conf = conf_with_test_defs();
    char name[64];
    char value[64];
    int i;

    (void)state;
    /*
     * Each level doubles the previous one. With an empty leaf, 40 levels
     * cost 40 expansions, not 2^40; with a 16-byte leaf, the text would
     * reach 16 * 2^20 bytes at level 20, and stops at 1 MiB.
     */
    for (i = 1; i <= 40; i++) {
        snprintf(name, sizeof(name), "t%d_test_string", i);
        snprintf(value, sizeof(value), "$t%d_test_string${t%d_test_string}",
                 i - 1, i - 1);
        set_ok(conf, name, value);
    }
    set_ok(conf, "t0_test_string", "");
    validate_ok(conf);
    assert_string_equal(conf_str_named(conf, "t40", "test_string"), "");
    set_ok(conf, "t0_test_string", "0123456789abcdef");
    validate_fails(conf, "t17_test_string: bad value "
                         "\"$t16_test_string${t16_test_string}\": expands to "
                         "more than 1048576 bytes");
    assert_int_equal(strlen(conf_str_named(conf, "t16", "test_string")),
                     1048576);
    conf_free(conf);
}

static void test_set_messages_quote_junk(void **state)
{
    struct conf *conf = *state;
    char longname[200];

    set_fails(conf, "\x01\"x\\\xff", "1",
              "unknown parameter \"\\x01\\\"x\\\\\\xff\"");
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    set_fails(conf, longname, "1",
              "unknown parameter \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
              "aaaaaaaaaaaaaaaaaaaaaaaa...\"");
    set_fails(conf, "default_process_limit", "1\n2",
              "default_process_limit: bad value \"1\\x0a2\": expected an "
              "integer between 1 and 100000");
}

static void test_conf_path(void **state)
{
    int must_exist = -1;

    (void)state;
    setenv("SLUICE_CONFIG", "/from/env", 1);
    assert_string_equal(conf_path("/from/opt", &must_exist), "/from/opt");
    assert_int_equal(must_exist, 1);
    must_exist = -1;
    assert_string_equal(conf_path(NULL, &must_exist), "/from/env");
    assert_int_equal(must_exist, 1);
    setenv("SLUICE_CONFIG", "", 1);
    assert_string_equal(conf_path(NULL, &must_exist), SLUICE_CONFIG_FILE);
    assert_int_equal(must_exist, 0);
    unsetenv("SLUICE_CONFIG");
    must_exist = -1;
    assert_string_equal(conf_path(NULL, &must_exist), SLUICE_CONFIG_FILE);
    assert_int_equal(must_exist, 0);
    assert_string_equal(conf_path(NULL, NULL), SLUICE_CONFIG_FILE);
}

static void get_unknown(void *arg)
{
    struct conf *conf = arg;
    conf_int_named(conf, NULL, "nope");
}

static void get_wrong_type(void *arg)
{
    struct conf *conf = arg;
    conf_int(conf, NULL, CONF_minimal_backoff_time);
}

static void get_bad_value(void *arg)
{
    struct conf *conf = arg;
    char why[WHY_SIZE];

    conf_set(conf, "default_process_limit", "$nope", why, sizeof(why));
    conf_int(conf, "smtp", CONF_default_process_limit);
}

static void get_str_of_int(void *arg)
{
    struct conf *conf = arg;
    conf_str(conf, NULL, CONF_default_process_limit);
}

static void test_getter_programming_errors(void **state)
{
    struct conf *conf = *state;

    expect_abort(get_unknown, conf,
                 "sluice: conf: conf_int: unknown parameter \"nope\"\n");
    expect_abort(get_wrong_type, conf,
                 "sluice: conf: conf_int: parameter minimal_backoff_time is "
                 "of type time\n");
    expect_abort(get_str_of_int, conf,
                 "sluice: conf: conf_str: parameter default_process_limit is "
                 "of type integer\n");
    expect_abort(get_bad_value, conf,
                 "sluice: conf: conf_int: smtp: default_process_limit: value "
                 "is not valid: default_process_limit: bad value \"$nope\": "
                 "unknown parameter \"nope\"\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_has_every_parameter),
        cmocka_unit_test(test_table_types_and_units),
        cmocka_unit_test(test_table_suffixes),
        cmocka_unit_test(test_table_bounds),
        cmocka_unit_test_setup_teardown(test_defaults_int, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_defaults_are_defaults, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_override_and_fallback, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_override_of_global_only, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_longest_suffix_wins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_smtp_client_overrides, setup,
                                        teardown),
        cmocka_unit_test(test_suffixes_unambiguous),
        cmocka_unit_test_setup_teardown(test_global_name_matches_first, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_delivery_scheduler_suffix, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_override_name_syntax, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_later_setting_wins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_lookup_info, setup, teardown),
        cmocka_unit_test(test_time_parse),
        cmocka_unit_test_setup_teardown(test_time_default_units, setup,
                                        teardown),
        cmocka_unit_test(test_feedback_parse),
        cmocka_unit_test_setup_teardown(test_int_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bool_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_choice_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_feedback_values, setup, teardown),
        cmocka_unit_test(test_add_params),
        cmocka_unit_test_setup_teardown(test_add_params_errors, setup,
                                        teardown),
        cmocka_unit_test(test_expand),
        cmocka_unit_test_setup_teardown(test_expand_overrides, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expand_deferred_check, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expand_loops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_expand_depth_limit, setup,
                                        teardown),
        cmocka_unit_test(test_expand_size_limit),
        cmocka_unit_test_setup_teardown(test_set_messages_quote_junk, setup,
                                        teardown),
        cmocka_unit_test(test_conf_path),
        cmocka_unit_test_setup_teardown(test_getter_programming_errors, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
