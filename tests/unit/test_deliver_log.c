/*
 * test_deliver_log - the delivery log line, in the reference's form
 * (DESIGN.md, "Log lines": "QUEUEID: to=<rcpt>, relay=host[addr]:port,
 * delay=..., delays=a/b/c/d, dsn=X.Y.Z, status=sent|deferred|bounced
 * (text)"), and its time format: large values rounded to whole seconds,
 * small ones with two significant digits and at most two decimals,
 * trailing zeros left out.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "deliver/deliver.h"

static const char *fmt(double seconds)
{
    static char buf[64];

    deliver_format_delay(buf, sizeof(buf), seconds);
    return buf;
}

static void test_delay_format(void **state)
{
    (void)state;
    assert_string_equal(fmt(0), "0");
    assert_string_equal(fmt(0.004), "0");
    assert_string_equal(fmt(0.005), "0.01");
    assert_string_equal(fmt(0.05), "0.05");
    assert_string_equal(fmt(0.123), "0.12");
    assert_string_equal(fmt(0.5), "0.5");
    assert_string_equal(fmt(0.996), "1");
    assert_string_equal(fmt(1), "1");
    assert_string_equal(fmt(1.04), "1");
    assert_string_equal(fmt(1.05), "1.1");
    assert_string_equal(fmt(3.45), "3.5");
    assert_string_equal(fmt(9.97), "10");
    assert_string_equal(fmt(12.4), "12");
    assert_string_equal(fmt(12.5), "13");
    assert_string_equal(fmt(1142.2), "1142");
    /* A clock that stepped back never shows a negative delay. */
    assert_string_equal(fmt(-3), "0");
}

static void test_line_sent(void **state)
{
    char buf[1024];
    struct deliver_log_entry e = {
        .queue_id = "3F2A1B9C0D4E",
        .recipient = "alice@example.com",
        .relay = "mx1.example.com[192.0.2.10]:25",
        .dsn = "2.0.0",
        .status = DELIVER_OK,
        .text = "250 2.0.0 Ok: queued as 4B7C",
        .arrival = 1000.0,
        .active = 1000.02,
        .handoff = 1000.03,
        .conn_done = 1000.33,
        .done = 1000.55,
    };

    (void)state;
    deliver_log_line(buf, sizeof(buf), &e);
    assert_string_equal(buf, "3F2A1B9C0D4E: to=<alice@example.com>, "
                             "relay=mx1.example.com[192.0.2.10]:25, "
                             "delay=0.55, delays=0.02/0.01/0.3/0.22, "
                             "dsn=2.0.0, status=sent (250 2.0.0 Ok: "
                             "queued as 4B7C)");
}

static void test_line_orig_to_and_reuse(void **state)
{
    char buf[1024];
    struct deliver_log_entry e = {
        .queue_id = "A1",
        .recipient = "bob@example.net",
        .orig_recipient = "Bob@Example.NET",
        .relay = "mx.example.net[192.0.2.20]:25",
        .conn_use = 3,
        .dsn = "4.2.0",
        .status = DELIVER_DEFER,
        .text = "host mx.example.net[192.0.2.20] said: 450 4.2.0 busy "
                "(in reply to RCPT TO command)",
        .arrival = 0,
        .active = 125.2,
        .handoff = 125.2,
        .conn_done = 125.2,
        .done = 125.3,
    };

    (void)state;
    /* An original address that differs only in case is not shown. */
    deliver_log_line(buf, sizeof(buf), &e);
    assert_string_equal(
        buf, "A1: to=<bob@example.net>, relay=mx.example.net[192.0.2.20]:25, "
             "conn_use=3, delay=125, delays=125/0/0/0.1, dsn=4.2.0, "
             "status=deferred (host mx.example.net[192.0.2.20] said: 450 "
             "4.2.0 busy (in reply to RCPT TO command))");
    e.orig_recipient = "list@example.org";
    e.conn_use = 1;
    deliver_log_line(buf, sizeof(buf), &e);
    assert_non_null(strstr(buf, "to=<bob@example.net>, "
                                "orig_to=<list@example.org>, relay="));
    assert_null(strstr(buf, "conn_use="));
    /* over TLS: the protocol, cipher and worth after the status text,
     * where pflogsumm's "status=deferred \(([^\)]+)" does not look */
    e.tls = "TLSv1.3:TLS_AES_256_GCM_SHA384:Verified";
    deliver_log_line(buf, sizeof(buf), &e);
    assert_non_null(strstr(buf, "4.2.0 busy (in reply to RCPT TO command)) "
                                "tls=TLSv1.3:TLS_AES_256_GCM_SHA384:Verified"));
    assert_string_equal(buf + strlen(buf) - 8, "Verified");
}

static void test_line_no_agent_and_no_network(void **state)
{
    char buf[1024];
    struct deliver_log_entry e = {
        .queue_id = "B2",
        .recipient = "x@nowhere.invalid",
        .relay = "none",
        .dsn = "5.1.2",
        .status = DELIVER_BOUNCE,
        .text = "Host or domain name not found",
        .arrival = 10,
        .active = 10.5,
        .done = 11,
    };

    (void)state;
    /* Decided by the queue manager (no handoff): all of it is b. */
    deliver_log_line(buf, sizeof(buf), &e);
    assert_string_equal(buf, "B2: to=<x@nowhere.invalid>, relay=none, "
                             "delay=1, delays=0.5/0.5/0/0, dsn=5.1.2, "
                             "status=bounced (Host or domain name not "
                             "found)");
    /* A delivery agent without a network connection: the rest is d. */
    e.handoff = 10.75;
    deliver_log_line(buf, sizeof(buf), &e);
    assert_non_null(strstr(buf, "delays=0.5/0.25/0/0.25,"));
}

static void test_line_truncates_safely(void **state)
{
    char buf[40];
    struct deliver_log_entry e = {
        .queue_id = "C3",
        .recipient = "someone@example.com",
        .relay = "none",
        .dsn = "2.0.0",
        .status = DELIVER_OK,
        .text = "a long text that does not fit",
    };

    (void)state;
    deliver_log_line(buf, sizeof(buf), &e);
    assert_int_equal(strlen(buf), sizeof(buf) - 1);
    assert_memory_equal(buf, "C3: to=<someone@example.com>, relay=non", 39);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delay_format),
        cmocka_unit_test(test_line_sent),
        cmocka_unit_test(test_line_orig_to_and_reuse),
        cmocka_unit_test(test_line_no_agent_and_no_network),
        cmocka_unit_test(test_line_truncates_safely),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
