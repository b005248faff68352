/*
 * test_sim_world - the simulator's model, in small worlds whose outcome
 * can be worked out by hand
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/sim.h"

/* Build a scenario from "name = value" pairs over the defaults. */
static void scenario(struct sim_scenario *sc, const char *const *settings)
{
    char why[512];
    struct conf *conf = sim_conf_create(why, sizeof(why));

    assert_non_null(conf);
    for (; *settings; settings += 2)
        if (conf_set(conf, settings[0], settings[1], why, sizeof(why)) < 0)
            fail_msg("%s", why);
    if (conf_validate(conf, why, sizeof(why)) < 0)
        fail_msg("%s", why);
    if (sim_scenario_from_conf(sc, conf, "test", why, sizeof(why)) < 0)
        fail_msg("%s", why);
    conf_free(conf);
}

static void finish(struct sim_scenario *sc, struct sim_result *res)
{
    sim_result_free(res);
    sim_scenario_free(sc);
}

/*
 * Plenty of server capacity, no jitter: 100 recipients in entries of 2
 * with concurrency 5 (feedback 0 keeps the window) take 50 deliveries in
 * 10 rounds of 2 seconds each, with nothing deferred.
 */
static void test_unconstrained(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "100",
        "smtp_destination_recipient_limit",
        "2",
        "default_destination_concurrency_positive_feedback",
        "0",
        "sim_server_process_limit",
        "100",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.recipients, 100);
    assert_int_equal(res.delivered, 100);
    assert_int_equal(res.deferred, 0);
    assert_int_equal(res.attempts, 50);
    assert_int_equal(res.connections, 50);
    assert_float_equal(res.duration, 20.0, 1e-9);
    assert_float_equal(res.concurrency_avg, 5.0, 1e-9);
    assert_float_equal(res.concurrency_stddev, 0.0, 1e-9);
    finish(&sc, &res);
}

/*
 * Connection caching: the same 50 deliveries over 5 connections, each
 * reused while the destination has mail (no reuse limits).
 */
static void test_connection_caching(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "100",
        "smtp_destination_recipient_limit",
        "2",
        "default_destination_concurrency_positive_feedback",
        "0",
        "sim_server_process_limit",
        "100",
        "sim_connection_caching",
        "yes",
        NULL,
    };
    static const char *const limited[] = {
        "sim_recipients",
        "100",
        "smtp_destination_recipient_limit",
        "2",
        "default_destination_concurrency_positive_feedback",
        "0",
        "sim_server_process_limit",
        "100",
        "sim_connection_caching",
        "yes",
        "smtp_connection_reuse_count_limit",
        "4",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.attempts, 50);
    assert_int_equal(res.connections, 5);
    assert_int_equal(res.delivered, 100);
    finish(&sc, &res);
    /* At most 4 deliveries per connection: 10 rounds need 3 each. */
    scenario(&sc, limited);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.connections, 15);
    finish(&sc, &res);
}

/*
 * The 421 limiter with feedback 1, no jitter, no reject latency: 10
 * entries, window 5, so 5 deliveries run until 2s and finish together.
 * Each success grows the window by one ("With g(N)=1 feedback per
 * delivery, concurrency increases by 1 after each positive feedback
 * event") and lets two deliveries start: the first takes the server's
 * freed connection, the second is the 6th connection and gets 421. The
 * 5 entries left go as A (ok) B (421) C (ok) D (421) E (ok).
 */
static void test_limiter_feedback_one(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "20",
        "smtp_destination_recipient_limit",
        "2",
        "sim_server_process_limit",
        "10",
        "sim_server_concurrency_limit",
        "5",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 16);
    assert_int_equal(res.rejected, 4);
    assert_int_equal(res.deferred, 4);
    assert_int_equal(res.attempts, 10);
    assert_float_equal(res.duration, 4.0, 1e-9);
    finish(&sc, &res);
}

/*
 * A destination whose only server fails every handshake: with window 5
 * and cohort limit 1, the 4th failure in a row (1/5 + 1/4 + 1/3 + 1/2 >=
 * 1) kills it, and the rest of its mail is deferred without attempts.
 */
static void test_dead_destination(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "100",
        "smtp_destination_recipient_limit",
        "2",
        "sim_bad_servers",
        "1",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.attempts, 5);
    assert_int_equal(res.rejected, 10);
    assert_int_equal(res.suspended, 90);
    assert_int_equal(res.deferred, 100);
    assert_int_equal(res.delivered, 0);
    finish(&sc, &res);
}

/*
 * A full accept queue with drop_syn: 1 server process, no backlog, three
 * entries at once (feedback 0, no dead detection): the first is served
 * for 10s; the SYNs of the other two are dropped and retransmitted at 1s
 * and 3s (then 7s), and the connect timeout ends them at 5s.
 */
static void test_syn_drop_connect_timeout(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "3",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_initial_destination_concurrency",
        "3",
        "default_destination_concurrency_positive_feedback",
        "0",
        "default_destination_concurrency_negative_feedback",
        "0",
        "default_destination_concurrency_failed_cohort_limit",
        "0",
        "sim_server_process_limit",
        "1",
        "sim_server_backlog",
        "0",
        "sim_syn_retry_delay",
        "1s",
        "sim_recipient_delay",
        "10s",
        "sim_connect_timeout",
        "5s",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 1);
    assert_int_equal(res.timeouts_connect, 2);
    assert_int_equal(res.timeouts_greeting, 0);
    assert_float_equal(res.duration, 10.0, 1e-9);
    finish(&sc, &res);
}

/*
 * drop_ack: the second connection finds the accept queue full; the client
 * believes it is connected and waits for the greeting, the server retries
 * its SYN-ACK at 1s and 3s (2 retries), finds the queue still full and
 * forgets the connection; the client gives up at the greeting timeout
 * (20s), while the first delivery runs until 30s.
 */
static void test_ack_drop_greeting_timeout(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "2",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_initial_destination_concurrency",
        "2",
        "default_destination_concurrency_positive_feedback",
        "0",
        "default_destination_concurrency_failed_cohort_limit",
        "0",
        "sim_server_process_limit",
        "1",
        "sim_server_backlog",
        "0",
        "sim_server_overflow",
        "drop_ack",
        "sim_syn_retry_delay",
        "1s",
        "sim_syn_retries",
        "2",
        "sim_recipient_delay",
        "30s",
        "sim_greeting_timeout",
        "20s",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 1);
    assert_int_equal(res.timeouts_greeting, 1);
    assert_int_equal(res.timeouts_connect, 0);
    assert_float_equal(res.duration, 30.0, 1e-9);
    finish(&sc, &res);
}

/*
 * A queued connection (accept queue of 1) is served when the process
 * frees up, as long as that happens before the greeting timeout.
 */
static void test_accept_queue_served_in_time(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "2",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_initial_destination_concurrency",
        "2",
        "default_destination_concurrency_positive_feedback",
        "0",
        "sim_server_process_limit",
        "1",
        "sim_server_backlog",
        "1",
        "sim_recipient_delay",
        "10s",
        "sim_greeting_timeout",
        "11s",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 2);
    assert_int_equal(res.deferred, 0);
    assert_float_equal(res.duration, 20.0, 1e-9);
    finish(&sc, &res);
}

/* The destination rate delay: one at a time, 3s pause after each. */
static void test_destination_rate_delay(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "3",
        "smtp_destination_recipient_limit",
        "1",
        "default_destination_rate_delay",
        "3s",
        "sim_server_process_limit",
        "10",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 3);
    /* 1s + 3s + 1s + 3s + 1s */
    assert_float_equal(res.duration, 9.0, 1e-9);
    finish(&sc, &res);
}

/*
 * The trace: a header-less CSV line when window or busy differ at the end
 * of an instant (a delivery ending and the next starting at 1s make none).
 */
static void test_trace_lines(void **state)
{
    static const char *const set[] = {
        "sim_recipients",
        "2",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_initial_destination_concurrency",
        "1",
        "default_destination_concurrency_positive_feedback",
        "0",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);

    (void)state;
    assert_non_null(fp);
    scenario(&sc, set);
    sim_run(&sc, &res, fp);
    fclose(fp);
    assert_string_equal(buf, "test,0.000,d1.sim,1,1\n"
                             "test,2.000,d1.sim,1,0\n");
    free(buf);
    finish(&sc, &res);
}

/* Scenario errors name the problem. */
static void test_scenario_errors(void **state)
{
    char why[512];
    struct conf *conf = sim_conf_create(why, sizeof(why));
    struct sim_scenario sc;

    (void)state;
    assert_int_equal(conf_set(conf, "sim_servers", "2", why, sizeof(why)), 0);
    assert_int_equal(conf_set(conf, "sim_bad_servers", "3", why, sizeof(why)),
                     0);
    assert_int_equal(sim_scenario_from_conf(&sc, conf, "x", why, sizeof(why)),
                     -1);
    assert_string_equal(
        why, "x: d1.sim: sim_bad_servers (3) is more than sim_servers (2)");
    conf_free(conf);
    assert_int_equal(
        sim_scenario_load(&sc, NULL, "/nonexistent/s.conf", why, sizeof(why)),
        -1);
    assert_non_null(strstr(why, "/nonexistent/s.conf"));
}

/*
 * Finch with one connection allowed (smtp_process_limit = 1) and a
 * backlog threshold of 2: core/ has 2 jobs in flight, both on the one
 * connection ("the first we find is the worker for this job"); four
 * one-recipient jobs of 1 s each go down it one after the other in 4 s.
 */
static void test_finch_one_connection(void **state)
{
    static const char *const set[] = {
        "smtp_delivery_scheduler",
        "finch",
        "sim_recipients",
        "4",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_process_limit",
        "1",
        "smtp_connection_backlog_threshold",
        "2",
        "sim_mx_hosts",
        "3",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;
    long conns = 0, jobs = 0;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 4);
    assert_int_equal(res.deferred, 0);
    assert_int_equal(res.connections, 1);
    assert_int_equal(res.finch_waits, 0);
    assert_float_equal(res.duration, 4.0, 1e-9);
    assert_int_equal(res.nhosts, 3);
    for (int k = 0; k < res.nhosts; k++) {
        conns += res.hosts[k].connections;
        jobs += res.hosts[k].jobs;
        assert_int_equal(res.hosts[k].pref, 10);
        assert_int_equal(res.hosts[k].after_failure, 0);
    }
    assert_int_equal(conns, 1);
    assert_int_equal(jobs, 4);
    finish(&sc, &res);
}

/*
 * Two destinations of one host each, one connection allowed: a job for
 * the second while the first's connection carries a job "must wait to be
 * rescheduled when a worker becomes free"; then the idle connection is
 * closed for it ("idle connections can be closed if the worker is
 * required for a new connection"). The jobs alternate between the two
 * hosts, so each of the four takes a connection of its own, one at a
 * time: three waits, four connections, 4 s.
 */
static void test_finch_wait(void **state)
{
    static const char *const set[] = {
        "smtp_delivery_scheduler",
        "finch",
        "sim_recipients",
        "2",
        "sim_destinations",
        "2",
        "smtp_destination_recipient_limit",
        "1",
        "smtp_process_limit",
        "1",
        "smtp_connection_backlog_threshold",
        "2",
        NULL,
    };
    struct sim_scenario sc;
    struct sim_result res;

    (void)state;
    scenario(&sc, set);
    sim_run(&sc, &res, NULL);
    assert_int_equal(res.delivered, 4);
    assert_int_equal(res.deferred, 0);
    assert_int_equal(res.finch_waits, 3);
    assert_int_equal(res.connections, 4);
    assert_float_equal(res.duration, 4.0, 1e-9);
    assert_int_equal(res.hosts[0].jobs, 2);
    assert_int_equal(res.hosts[1].jobs, 2);
    finish(&sc, &res);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finch_one_connection),
        cmocka_unit_test(test_finch_wait),
        cmocka_unit_test(test_unconstrained),
        cmocka_unit_test(test_connection_caching),
        cmocka_unit_test(test_limiter_feedback_one),
        cmocka_unit_test(test_dead_destination),
        cmocka_unit_test(test_syn_drop_connect_timeout),
        cmocka_unit_test(test_ack_drop_greeting_timeout),
        cmocka_unit_test(test_accept_queue_served_in_time),
        cmocka_unit_test(test_destination_rate_delay),
        cmocka_unit_test(test_trace_lines),
        cmocka_unit_test(test_scenario_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
