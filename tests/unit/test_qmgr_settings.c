/*
 * test_qmgr_settings - a transport's parameters as core/ and deliver/ get
 * them: the reference's names and defaults (postfix-reference-notes.md),
 * per-transport overrides in the <transport>_<suffix> form, and LMTP
 * transports inheriting the smtp_* client settings.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "qmgr/qmgr.h"

static struct conf *conf_with(const char *name, ...)
{
    struct conf *conf = conf_create();
    char why[256] = "";
    const char *value;
    va_list ap;

    va_start(ap, name);
    for (; name != NULL; name = va_arg(ap, const char *)) {
        value = va_arg(ap, const char *);
        if (conf_set(conf, name, value, why, sizeof(why)) != 0)
            fail_msg("conf_set(%s, %s): %s", name, value, why);
    }
    va_end(ap);
    if (conf_validate(conf, why, sizeof(why)) != 0)
        fail_msg("conf_validate: %s", why);
    return conf;
}

static void test_core_defaults(void **state)
{
    struct conf *conf = conf_with(NULL);
    struct core_transport_params p;

    (void)state;
    qmgr_core_params(conf, "smtp", &p);
    assert_int_equal(p.initial_concurrency, 5);
    assert_int_equal(p.concurrency_limit, 20);
    assert_int_equal(p.positive.form, CORE_FEEDBACK_CONSTANT);
    assert_true(p.positive.value == 1.0);
    assert_int_equal(p.negative.form, CORE_FEEDBACK_CONSTANT);
    assert_int_equal(p.failed_cohort_limit, 1);
    assert_int_equal(p.dead_backoff, 300000);
    assert_int_equal(p.process_limit, 100);
    assert_int_equal(p.recipient_limit, 50);
    assert_int_equal(p.slot_cost, 5);
    assert_int_equal(p.slot_loan, 3);
    assert_int_equal(p.slot_discount, 50);
    assert_int_equal(p.min_slots, 3);
    assert_ptr_equal(p.scheduler, &core_policy_preemptive);
    conf_free(conf);
}

static void test_core_overrides(void **state)
{
    struct conf *conf = conf_with(
        "relay_destination_concurrency_limit", "4",
        "relay_destination_recipient_limit", "1", "relay_scheduler",
        "round_robin", "default_destination_concurrency_limit", "7", NULL);
    struct core_transport_params p;

    (void)state;
    qmgr_core_params(conf, "relay", &p);
    assert_int_equal(p.concurrency_limit, 4);
    assert_int_equal(p.recipient_limit, 1);
    assert_ptr_equal(p.scheduler, &core_policy_round_robin);
    qmgr_core_params(conf, "smtp", &p);
    assert_int_equal(p.concurrency_limit, 7);
    assert_int_equal(p.recipient_limit, 50);
    assert_ptr_equal(p.scheduler, &core_policy_preemptive);
    conf_free(conf);
}

static void test_deliver_defaults(void **state)
{
    struct conf *conf = conf_with("myhostname", "mta.example.com", NULL);
    struct qmgr_deliver_settings d;

    (void)state;
    qmgr_deliver_settings(conf, "smtp", &d);
    assert_int_equal(d.timeouts.connect, 30000);
    assert_int_equal(d.timeouts.helo, 300000);
    assert_int_equal(d.timeouts.mail, 300000);
    assert_int_equal(d.timeouts.rcpt, 300000);
    assert_int_equal(d.timeouts.data_init, 120000);
    assert_int_equal(d.timeouts.data_xfer, 180000);
    assert_int_equal(d.timeouts.data_done, 600000);
    assert_int_equal(d.timeouts.quit, 300000);
    assert_int_equal(d.address_limit, 5);
    assert_int_equal(d.session_limit, 2);
    assert_int_equal(d.cache.idle_ms, 2000);
    assert_int_equal(d.cache.reuse_ms, 300000);
    assert_int_equal(d.cache.reuse_count_limit, 0);
    assert_string_equal(d.helo_name, "mta.example.com");
    conf_free(conf);
}

static void test_deliver_overrides(void **state)
{
    struct conf *conf = conf_with(
        "relay_connect_timeout", "5s", "smtp_mx_session_limit", "3",
        "relay_connection_cache_time_limit", "10s", "lmtp_connect_timeout",
        "1s", "smtp_helo_name", "out.test", "smtp_connection_cache_on_demand",
        "no", "relay_connection_cache_on_demand", "yes", NULL);
    struct qmgr_deliver_settings d;

    (void)state;
    qmgr_deliver_settings(conf, "relay", &d);
    assert_int_equal(d.timeouts.connect, 5000);
    assert_int_equal(d.timeouts.helo, 300000);
    assert_int_equal(d.session_limit, 3);
    assert_int_equal(d.cache.idle_ms, 10000);
    assert_string_equal(d.helo_name, "out.test");
    /* Caching off for smtp: no idle time. */
    qmgr_deliver_settings(conf, "smtp", &d);
    assert_int_equal(d.cache.idle_ms, 0);
    assert_int_equal(d.timeouts.connect, 30000);
    /* An lmtp transport takes its own override, else smtp_*. */
    qmgr_deliver_settings(conf, "lmtp", &d);
    assert_int_equal(d.timeouts.connect, 1000);
    assert_int_equal(d.session_limit, 3);
    conf_free(conf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_defaults),
        cmocka_unit_test(test_core_overrides),
        cmocka_unit_test(test_deliver_defaults),
        cmocka_unit_test(test_deliver_overrides),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
