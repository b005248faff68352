/*
 * test_qmgr_settings - a transport's parameters as core/ and deliver/ get
 * them: the reference's names and defaults (postfix-reference-notes.md),
 * per-transport overrides in the <transport>_<suffix> form, and LMTP
 * transports inheriting the smtp_* client settings; and a DNS answer
 * turned into the addresses a delivery tries, in order, at most
 * smtp_mx_address_limit of them (RFC 5321 5.1: by preference).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include <stdio.h>

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
    conf_core_params(conf, "smtp", &p);
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
    conf_core_params(conf, "relay", &p);
    assert_int_equal(p.concurrency_limit, 4);
    assert_int_equal(p.recipient_limit, 1);
    assert_ptr_equal(p.scheduler, &core_policy_round_robin);
    conf_core_params(conf, "smtp", &p);
    assert_int_equal(p.concurrency_limit, 7);
    assert_int_equal(p.recipient_limit, 50);
    assert_ptr_equal(p.scheduler, &core_policy_preemptive);
    conf_free(conf);
}

/* Under Finch the process limit counts connections, each carrying up to
 * the backlog threshold of jobs: core/ may have that many more entries in
 * flight (decision 95). */
static void test_core_finch_process_limit(void **state)
{
    struct conf *conf =
        conf_with("relay_delivery_scheduler", "finch", "relay_process_limit",
                  "30", "relay_connection_backlog_threshold", "3", NULL);
    struct core_transport_params p;

    (void)state;
    conf_core_params(conf, "relay", &p);
    assert_int_equal(p.process_limit, 90);
    assert_int_equal(p.concurrency_limit, 20);
    conf_core_params(conf, "smtp", &p);
    assert_int_equal(p.process_limit, 100);
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

static void dns_addr_set(struct dns_addr *a, const char *text)
{
    memset(a, 0, sizeof(*a));
    snprintf(a->text, sizeof(a->text), "%s", text);
    if (strchr(text, ':')) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->sa;

        sin6->sin6_family = AF_INET6;
        inet_pton(AF_INET6, text, &sin6->sin6_addr);
        a->salen = sizeof(*sin6);
    } else {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a->sa;

        sin->sin_family = AF_INET;
        inet_pton(AF_INET, text, &sin->sin_addr);
        a->salen = sizeof(*sin);
    }
}

static unsigned port_of(const struct deliver_addr *a)
{
    if (a->sa.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&a->sa)->sin6_port);
    return ntohs(((const struct sockaddr_in *)&a->sa)->sin_port);
}

static void test_addresses_from_dns(void **state)
{
    struct dns_addr a1[2], a2[1], a3[2];
    struct dns_host hosts[3] = {
        {"mx1.example.com", 10, 2, a1, 0},
        {"mx2.example.com", 20, 1, a2, 0},
        {"mx3.example.com", 30, 2, a3, 0},
    };
    struct dns_result res = {DNS_OK, "example.com", "", "", 0, 3, hosts, 0};
    struct deliver_addr out[8];
    size_t n;

    (void)state;
    dns_addr_set(&a1[0], "192.0.2.1");
    dns_addr_set(&a1[1], "2001:db8::1");
    dns_addr_set(&a2[0], "192.0.2.2");
    dns_addr_set(&a3[0], "192.0.2.3");
    dns_addr_set(&a3[1], "192.0.2.4");
    /* In order, each with its host's name and the port. */
    n = qmgr_addresses(&res, 2525, 0, out, 8);
    assert_int_equal(n, 5);
    assert_string_equal(out[0].host, "mx1.example.com");
    assert_int_equal(out[0].sa.ss_family, AF_INET);
    assert_int_equal(port_of(&out[0]), 2525);
    assert_string_equal(out[1].host, "mx1.example.com");
    assert_int_equal(out[1].sa.ss_family, AF_INET6);
    assert_int_equal(port_of(&out[1]), 2525);
    assert_int_equal(out[1].salen, sizeof(struct sockaddr_in6));
    assert_string_equal(out[2].host, "mx2.example.com");
    assert_string_equal(out[4].host, "mx3.example.com");
    assert_int_equal(port_of(&out[4]), 2525);
    /* smtp_mx_address_limit: the best ones. */
    n = qmgr_addresses(&res, 25, 3, out, 8);
    assert_int_equal(n, 3);
    assert_string_equal(out[2].host, "mx2.example.com");
    assert_int_equal(port_of(&out[2]), 25);
    /* Never more than the room given. */
    n = qmgr_addresses(&res, 25, 0, out, 2);
    assert_int_equal(n, 2);
    /* A failed lookup has no addresses. */
    res.status = DNS_TEMPFAIL;
    assert_int_equal(qmgr_addresses(&res, 25, 0, out, 8), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_defaults),
        cmocka_unit_test(test_core_overrides),
        cmocka_unit_test(test_core_finch_process_limit),
        cmocka_unit_test(test_deliver_defaults),
        cmocka_unit_test(test_deliver_overrides),
        cmocka_unit_test(test_addresses_from_dns),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
