/*
 * NAME
 *	test_qmgr_notice 1 - unit tests of delivery status notifications
 * SYNOPSIS
 *	build/tests/test_qmgr_notice
 * DESCRIPTION
 *	Tests src/qmgr/notice.c in UTC: a failure notice byte for byte (the
 *	three parts of RFC 3464's multipart/report, every per-message and
 *	per-recipient field, the whole message returned); headers only for
 *	RET=HDRS, for a message over the size limit, and for delay and
 *	success notices; Will-Retry-Until and the delay wording; relayed
 *	and delivered actions; 8-bit content marked 8bit; a boundary that
 *	the returned message happens to contain made longer.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "qmgr/qmgr.h"
#include "spool/spool.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 2026-11-22 10:00:00 UTC, and the message arrived an hour before. */
#define NOW     INT64_C(1795341600000000)
#define ARRIVAL (NOW - INT64_C(3600000000))

static const char body[] = "From: alice@example.org\r\n"
                           "To: bob@a.test\r\n"
                           "Subject: hello\r\n"
                           "\r\n"
                           "Hi Bob.\r\n";

static struct spool_msg *message(const char *text, enum spool_ret ret)
{
    struct spool_msg *m = spool_msg_new();

    snprintf(m->id, sizeof(m->id), "%s", "1K0QID");
    m->sender = strdup("alice@example.org");
    m->envid = strdup("env-42");
    m->ret = ret;
    m->arrival = ARRIVAL;
    m->body = strdup(text);
    m->size = strlen(text);
    return m;
}

static const struct qmgr_notice_params params = {
    "mx.example.org", NOW, NOW + INT64_C(86400000000) * 4, 50000};

static const struct qmgr_notice_rcpt failed[] = {
    {"bob@a.test", "rfc822;Bob@A.test",
     "5.1.1 host mx.a.test[192.0.2.1] said: 550 5.1.1 <bob@a.test>: "
     "Recipient address rejected (in reply to RCPT TO command)",
     550, 0, NULL},
    {"carol@b.test", NULL,
     "4.4.7 message expired: connect to mx.b.test[192.0.2.2]:25: "
     "Connection refused",
     0, 0, NULL},
};

static void test_failure_notice_exact(void **state)
{
    struct spool_msg *m = message(body, SPOOL_RET_DEFAULT);
    size_t len;
    char *text;
    static const char want[] =
        "Date: Sun, 22 Nov 2026 10:00:00 +0000\r\n"
        "From: Mail Delivery System <MAILER-DAEMON@mx.example.org>\r\n"
        "To: <alice@example.org>\r\n"
        "Subject: Returned mail: could not be delivered\r\n"
        "Message-ID: <1K0QID.1795341600.notice@mx.example.org>\r\n"
        "Auto-Submitted: auto-replied\r\n"
        "MIME-Version: 1.0\r\n"
        "Content-Type: multipart/report; report-type=delivery-status;\r\n"
        "\tboundary=\"1K0QID.1795341600/mx.example.org\"\r\n"
        "\r\n"
        "This is a MIME-encapsulated delivery status notification.\r\n"
        "\r\n"
        "--1K0QID.1795341600/mx.example.org\r\n"
        "Content-Description: Notification\r\n"
        "Content-Type: text/plain; charset=us-ascii\r\n"
        "\r\n"
        "This is the mail system at mx.example.org.\r\n"
        "\r\n"
        "Your message could not be delivered to the recipients below,\r\n"
        "and the mail system has given up on them. The reason follows\r\n"
        "each address; your message, or its header, is attached.\r\n"
        "\r\n"
        "<bob@a.test>: host mx.a.test[192.0.2.1] said: 550 5.1.1 "
        "<bob@a.test>: Recipient address rejected (in reply to RCPT TO "
        "command)\r\n"
        "<carol@b.test>: message expired: connect to "
        "mx.b.test[192.0.2.2]:25: Connection refused\r\n"
        "\r\n"
        "--1K0QID.1795341600/mx.example.org\r\n"
        "Content-Description: Delivery report\r\n"
        "Content-Type: message/delivery-status\r\n"
        "\r\n"
        "Original-Envelope-Id: env-42\r\n"
        "Reporting-MTA: dns; mx.example.org\r\n"
        "Arrival-Date: Sun, 22 Nov 2026 09:00:00 +0000\r\n"
        "X-Sluice-Queue-ID: 1K0QID\r\n"
        "X-Sluice-Sender: rfc822; alice@example.org\r\n"
        "\r\n"
        "Original-Recipient: rfc822;Bob@A.test\r\n"
        "Final-Recipient: rfc822; bob@a.test\r\n"
        "Action: failed\r\n"
        "Status: 5.1.1\r\n"
        "Remote-MTA: dns; mx.a.test\r\n"
        "Diagnostic-Code: smtp; 550 5.1.1 <bob@a.test>: Recipient address "
        "rejected\r\n"
        "\r\n"
        "Final-Recipient: rfc822; carol@b.test\r\n"
        "Action: failed\r\n"
        "Status: 4.4.7\r\n"
        "Diagnostic-Code: X-Sluice; message expired: connect to "
        "mx.b.test[192.0.2.2]:25: Connection refused\r\n"
        "\r\n"
        "--1K0QID.1795341600/mx.example.org\r\n"
        "Content-Description: Undelivered Message\r\n"
        "Content-Type: message/rfc822\r\n"
        "\r\n"
        "From: alice@example.org\r\n"
        "To: bob@a.test\r\n"
        "Subject: hello\r\n"
        "\r\n"
        "Hi Bob.\r\n"
        "\r\n"
        "--1K0QID.1795341600/mx.example.org--\r\n";

    (void)state;
    text = qmgr_notice_format(&params, QMGR_NOTICE_FAILED, m, failed, 2, &len);
    assert_string_equal(text, want);
    assert_int_equal(len, strlen(want));
    free(text);
    spool_msg_free(m);
}

/* The part after the last "Content-Type:" line, to the closing line. */
static const char *returned_type(const char *text)
{
    const char *p = text, *last = NULL;

    while ((p = strstr(p, "\r\nContent-Type: ")) != NULL)
        last = p++;
    return last ? last + 2 : "";
}

static void test_headers_only(void **state)
{
    struct spool_msg *m = message(body, SPOOL_RET_HDRS);
    struct qmgr_notice_params small = params;
    size_t len;
    char *text;

    (void)state;
    /* RET=HDRS */
    text = qmgr_notice_format(&params, QMGR_NOTICE_FAILED, m, failed, 1, &len);
    assert_true(strncmp(returned_type(text),
                        "Content-Type: text/rfc822-headers\r\n\r\n"
                        "From: alice@example.org\r\nTo: bob@a.test\r\n"
                        "Subject: hello\r\n\r\n--",
                        90) == 0);
    assert_null(strstr(text, "Hi Bob."));
    free(text);
    /* Over bounce_size_limit */
    m->ret = SPOOL_RET_FULL;
    small.size_limit = 10;
    text = qmgr_notice_format(&small, QMGR_NOTICE_FAILED, m, failed, 1, &len);
    assert_non_null(strstr(text, "Content-Description: Message Headers\r\n"));
    assert_null(strstr(text, "Hi Bob."));
    free(text);
    /* Delay and success notices never return the body. */
    text = qmgr_notice_format(&params, QMGR_NOTICE_DELAYED, m, failed, 1, &len);
    assert_null(strstr(text, "Hi Bob."));
    free(text);
    spool_msg_free(m);
}

static void test_delay_notice(void **state)
{
    struct spool_msg *m = message(body, SPOOL_RET_DEFAULT);
    static const struct qmgr_notice_rcpt later[] = {
        {"carol@b.test", NULL,
         "4.4.1 connect to mx.b.test[192.0.2.2]:25: Connection refused", 0, 0,
         NULL},
    };
    size_t len;
    char *text;

    (void)state;
    text = qmgr_notice_format(&params, QMGR_NOTICE_DELAYED, m, later, 1, &len);
    assert_non_null(
        strstr(text, "Subject: Delayed mail: not delivered yet\r\n"));
    assert_non_null(
        strstr(text, "trying until Thu, 26 Nov 2026 10:00:00 +0000;\r\n"));
    assert_non_null(strstr(text, "\r\nFinal-Recipient: rfc822; carol@b.test\r\n"
                                 "Action: delayed\r\n"
                                 "Status: 4.4.1\r\n"
                                 "Diagnostic-Code: X-Sluice; connect to "
                                 "mx.b.test[192.0.2.2]:25: Connection "
                                 "refused\r\n"
                                 "Will-Retry-Until: Thu, 26 Nov 2026 10:00:00 "
                                 "+0000\r\n"));
    free(text);
    spool_msg_free(m);
}

static void test_success_notice(void **state)
{
    struct spool_msg *m = message(body, SPOOL_RET_DEFAULT);
    static const struct qmgr_notice_rcpt done[] = {
        {"bob@a.test", NULL, "2.0.0 250 2.0.0 Ok: queued as ABC", 250, 1,
         "TLSv1.3:TLS_AES_256_GCM_SHA384:Verified"},
        {"dan@c.test", NULL, "2.0.0 discarded", 0, 0, NULL},
    };
    size_t len;
    char *text;

    (void)state;
    text = qmgr_notice_format(&params, QMGR_NOTICE_DELIVERED, m, done, 2, &len);
    assert_non_null(
        strstr(text, "Subject: Delivery report: message delivered\r\n"));
    assert_non_null(strstr(text, "Final-Recipient: rfc822; bob@a.test\r\n"
                                 "Action: relayed\r\n"
                                 "Status: 2.0.0\r\n"
                                 "Diagnostic-Code: smtp; 250 2.0.0 Ok: queued "
                                 "as ABC\r\n"
                                 "X-Sluice-TLS: TLSv1.3:TLS_AES_256_GCM_SHA384:"
                                 "Verified\r\n"));
    /* issue 17: the TLS of the delivery, in both parts */
    assert_non_null(strstr(text, "<bob@a.test>: 250 2.0.0 Ok: queued as ABC\r\n"
                                 "    (over TLSv1.3, TLS_AES_256_GCM_SHA384, "
                                 "certificate Verified)\r\n"));
    assert_non_null(strstr(text,
                           "Final-Recipient: rfc822; dan@c.test\r\n"
                           "Action: delivered\r\n"
                           "Status: 2.0.0\r\n"
                           "Diagnostic-Code: X-Sluice; discarded\r\n\r\n"));
    free(text);
    spool_msg_free(m);
}

static void test_8bit_and_boundary(void **state)
{
    char text8[256];
    struct spool_msg *m;
    size_t len;
    char *text;

    (void)state;
    snprintf(text8, sizeof(text8),
             "Subject: caf\xc3\xa9\r\n\r\n--1K0QID.1795341600/mx.example.org"
             "\r\n");
    m = message(text8, SPOOL_RET_DEFAULT);
    text = qmgr_notice_format(&params, QMGR_NOTICE_FAILED, m, failed, 1, &len);
    assert_non_null(
        strstr(text, "\tboundary=\"1K0QID.1795341600/mx.example.org=_\"\r\n"
                     "Content-Transfer-Encoding: 8bit\r\n"));
    assert_non_null(strstr(text, "Content-Type: message/rfc822\r\n"
                                 "Content-Transfer-Encoding: 8bit\r\n"));
    assert_non_null(
        strstr(text, "\r\n--1K0QID.1795341600/mx.example.org=_--\r\n"));
    free(text);
    spool_msg_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_failure_notice_exact),
        cmocka_unit_test(test_headers_only),
        cmocka_unit_test(test_delay_notice),
        cmocka_unit_test(test_success_notice),
        cmocka_unit_test(test_8bit_and_boundary),
    };

    setenv("TZ", "UTC", 1);
    tzset();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
