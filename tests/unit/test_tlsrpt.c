/*
 * NAME
 *	test_tlsrpt 1 - unit tests of TLS reporting: counts, the JSON
 *	report, the TXT record, the report message
 * SYNOPSIS
 *	build/tests/test_tlsrpt
 * DESCRIPTION
 *	Tests src/tlsrpt/table.c, report.c, txt.c and mail.c, and the
 *	queue manager's result types for the SMTP client's TLS failures
 *	(qmgr_tlsrpt_result(), decision 63); the quoted words are RFC
 *	8460's. The JSON of a known set of counts is compared with a
 *	golden text, byte for byte; the message's gzip'd report is
 *	decompressed with zlib and compared with the JSON.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "qmgr/qmgr.h"
#include "tlsrpt/tlsrpt.h"

static const struct tlsrpt_policy sts_policy = {
    TLSRPT_POLICY_STS, "Company-Y.example",
    "version: STSv1\nmode: testing\nmx: *.mail.company-y.example\n"
    "max_age: 86400",
    "*.mail.company-y.example"};

static const struct tlsrpt_policy tlsa_policy = {
    TLSRPT_POLICY_TLSA, "company-y.example", "3 1 1 0011AABB", ""};

/* Section 4.4's example, with sluice's counts and fields. */
static const char golden[] =
    "{\n"
    "  \"organization-name\": \"Company-X\",\n"
    "  \"date-range\": {\n"
    "    \"start-datetime\": \"2016-04-01T00:00:00Z\",\n"
    "    \"end-datetime\": \"2016-04-01T23:59:59Z\"\n"
    "  },\n"
    "  \"contact-info\": \"sts-reporting@company-x.example\",\n"
    "  \"report-id\": \"5065427c-23d3-47ca-b6e0-946ea0e8c4be\",\n"
    "  \"policies\": [{\n"
    "    \"policy\": {\n"
    "      \"policy-type\": \"sts\",\n"
    "      \"policy-string\": [\"version: STSv1\", \"mode: testing\", "
    "\"mx: *.mail.company-y.example\", \"max_age: 86400\"],\n"
    "      \"policy-domain\": \"company-y.example\",\n"
    "      \"mx-host\": [\"*.mail.company-y.example\"]\n"
    "    },\n"
    "    \"summary\": {\n"
    "      \"total-successful-session-count\": 2,\n"
    "      \"total-failure-session-count\": 3\n"
    "    },\n"
    "    \"failure-details\": [{\n"
    "        \"result-type\": \"starttls-not-supported\",\n"
    "        \"sending-mta-ip\": \"2001:db8:abcd:0012::1\",\n"
    "        \"receiving-mx-hostname\": \"mx2.mail.company-y.example\",\n"
    "        \"receiving-ip\": \"203.0.113.56\",\n"
    "        \"failed-session-count\": 2,\n"
    "        \"failure-reason-code\": \"TLS is required, but was not "
    "offered by host \\\"mx2\\\"\"\n"
    "      }, {\n"
    "        \"result-type\": \"certificate-not-trusted\",\n"
    "        \"receiving-mx-hostname\": \"mx1.mail.company-y.example\",\n"
    "        \"failed-session-count\": 1\n"
    "      }]\n"
    "  }, {\n"
    "    \"policy\": {\n"
    "      \"policy-type\": \"tlsa\",\n"
    "      \"policy-string\": [\"3 1 1 0011AABB\"],\n"
    "      \"policy-domain\": \"company-y.example\"\n"
    "    },\n"
    "    \"summary\": {\n"
    "      \"total-successful-session-count\": 1,\n"
    "      \"total-failure-session-count\": 0\n"
    "    }\n"
    "  }]\n"
    "}\n";

static const struct tlsrpt_report_info info = {
    "Company-X", "sts-reporting@company-x.example",
    "5065427c-23d3-47ca-b6e0-946ea0e8c4be",
    1459468800, /* 2016-04-01T00:00:00Z */
    1459468800 + 86399};

static void fill(struct tlsrpt_table *t)
{
    struct tlsrpt_failure nostarttls = {
        TLSRPT_STARTTLS_NOT_SUPPORTED, "mx2.mail.company-y.example",
        "203.0.113.56", "TLS is required, but was not offered by host \"mx2\"",
        "2001:db8:abcd:0012::1"};
    struct tlsrpt_failure untrusted = {TLSRPT_CERTIFICATE_NOT_TRUSTED,
                                       "mx1.mail.company-y.example", "", "",
                                       ""};

    assert_int_equal(tlsrpt_table_count(t, &sts_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, &nostarttls), 0);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, &untrusted), 0);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, &nostarttls), 0);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, NULL), 0);
}

/* "The report ... aggregate[s] ... successful and failed sessions" per
 * policy; the same failure counted twice is one detail of count 2. */
static void test_golden_json(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(10);
    char *json;

    (void)state;
    fill(t);
    assert_int_equal(tlsrpt_table_size(t), 2);
    json = tlsrpt_report_json(t, "company-y.example", &info);
    assert_non_null(json);
    assert_string_equal(json, golden);
    free(json);
    assert_null(tlsrpt_report_json(t, "other.example", &info));
    tlsrpt_table_free(t);
}

/* Memory is bounded: what does not fit is counted as dropped. */
static void test_limits(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(1);
    struct tlsrpt_failure f = {TLSRPT_VALIDATION_FAILURE, "mx", "", "", ""};
    char reason[32];
    char *json;

    (void)state;
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, NULL), -1);
    assert_int_equal(tlsrpt_table_dropped(t), 1);
    for (int i = 0; i < TLSRPT_DETAILS_MAX + 5; i++) {
        snprintf(reason, sizeof(reason), "reason %d", i);
        f.reason = reason;
        assert_int_equal(tlsrpt_table_count(t, &sts_policy, &f),
                         i < TLSRPT_DETAILS_MAX ? 0 : -1);
    }
    assert_int_equal(tlsrpt_table_dropped(t), 6);
    json = tlsrpt_report_json(t, "company-y.example", &info);
    /* the summary counts every failure, the details what fit */
    assert_non_null(strstr(json, "\"total-failure-session-count\": 105"));
    free(json);
    tlsrpt_table_free(t);
}

/* Counts survive a restart: saved, loaded into a new table, the same. */
static void test_save_load(void **state)
{
    static const char *const bad[] = {
        "P\tx\n",                 /* too few fields */
        "F\t1\ta\tb\tc\t1\n",     /* a failure before its policy */
        "P\t0\td\t%zz\t\t1\t0\n", /* a bad escape */
        "P\t9\td\t\t\t1\t0\n",    /* no such policy type */
        "P\t0\td\t\t\t1\t0\nF\t99\ta\tb\tc\t1\n", /* no such result */
    };
    struct tlsrpt_table *t = tlsrpt_table_create(10), *u;
    struct util_buf b = UTIL_BUF_INIT;
    char **d;
    size_t n;
    char *json;

    (void)state;
    fill(t);
    n = tlsrpt_table_dirty(t, &d);
    assert_int_equal(n, 1);
    assert_string_equal(d[0], "company-y.example");
    tlsrpt_strings_free(d, n);
    n = tlsrpt_table_dirty(t, &d);
    assert_int_equal(n, 0);
    tlsrpt_strings_free(d, n);
    tlsrpt_table_save(t, "company-y.example", &b);
    u = tlsrpt_table_create(10);
    assert_int_equal(tlsrpt_table_load(u, b.data, b.len), 0);
    json = tlsrpt_report_json(u, "company-y.example", &info);
    assert_string_equal(json, golden);
    free(json);
    /* loaded counts add to those counted since */
    assert_int_equal(tlsrpt_table_load(u, b.data, b.len), 0);
    json = tlsrpt_report_json(u, "company-y.example", &info);
    assert_non_null(strstr(json, "\"total-successful-session-count\": 4"));
    free(json);
    /* text that does not read adds nothing */
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(tlsrpt_table_load(u, bad[i], strlen(bad[i])), -1);
    assert_int_equal(tlsrpt_table_size(u), 2);
    n = tlsrpt_table_domains(u, &d);
    assert_int_equal(n, 1);
    tlsrpt_strings_free(d, n);
    tlsrpt_table_clear(u);
    assert_int_equal(tlsrpt_table_size(u), 0);
    util_buf_free(&b);
    tlsrpt_table_free(t);
    tlsrpt_table_free(u);
}

/* Section 4.4: "sending-mta-ip" is a field of the failure: sessions
 * that failed alike from two of our addresses are two details. */
static void test_sending_ip(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(10);
    struct tlsrpt_failure a = {TLSRPT_CERTIFICATE_EXPIRED, "mx.example.net",
                               "192.0.2.1", "expired", "198.51.100.1"};
    struct tlsrpt_failure b = a;
    char *json;

    (void)state;
    b.sending_ip = "198.51.100.2";
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, &a), 0);
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, &b), 0);
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, &a), 0);
    json = tlsrpt_report_json(t, "company-y.example", &info);
    assert_non_null(strstr(json, "\"sending-mta-ip\": \"198.51.100.1\",\n"
                                 "        \"receiving-mx-hostname\": "
                                 "\"mx.example.net\",\n"
                                 "        \"receiving-ip\": \"192.0.2.1\",\n"
                                 "        \"failed-session-count\": 2,"));
    assert_non_null(strstr(json, "\"sending-mta-ip\": \"198.51.100.2\",\n"
                                 "        \"receiving-mx-hostname\": "
                                 "\"mx.example.net\",\n"
                                 "        \"receiving-ip\": \"192.0.2.1\",\n"
                                 "        \"failed-session-count\": 1,"));
    free(json);
    tlsrpt_table_free(t);
}

static const struct tlsrpt_policy none_policy = {TLSRPT_POLICY_NONE,
                                                 "Example.NET", "", ""};

static const char golden_none[] =
    "{\n"
    "  \"organization-name\": \"Company-X\",\n"
    "  \"date-range\": {\n"
    "    \"start-datetime\": \"2016-04-01T00:00:00Z\",\n"
    "    \"end-datetime\": \"2016-04-01T23:59:59Z\"\n"
    "  },\n"
    "  \"contact-info\": \"sts-reporting@company-x.example\",\n"
    "  \"report-id\": \"5065427c-23d3-47ca-b6e0-946ea0e8c4be\",\n"
    "  \"policies\": [{\n"
    "    \"policy\": {\n"
    "      \"policy-type\": \"no-policy-found\",\n"
    "      \"policy-domain\": \"example.net\"\n"
    "    },\n"
    "    \"summary\": {\n"
    "      \"total-successful-session-count\": 1,\n"
    "      \"total-failure-session-count\": 1\n"
    "    },\n"
    "    \"failure-details\": [{\n"
    "        \"result-type\": \"certificate-expired\",\n"
    "        \"sending-mta-ip\": \"198.51.100.1\",\n"
    "        \"receiving-mx-hostname\": \"mx.example.net\",\n"
    "        \"receiving-ip\": \"192.0.2.1\",\n"
    "        \"failed-session-count\": 1,\n"
    "        \"failure-reason-code\": \"Server certificate not trusted "
    "(certificate has expired)\"\n"
    "      }]\n"
    "  }]\n"
    "}\n";

/* Section 4.3: "no-policy-found": no policy-string, no mx-host. */
static void test_no_policy(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(10), *u;
    struct tlsrpt_failure f = {
        TLSRPT_CERTIFICATE_EXPIRED, "mx.example.net", "192.0.2.1",
        "Server certificate not trusted (certificate has expired)",
        "198.51.100.1"};
    struct util_buf b = UTIL_BUF_INIT;
    char *json;

    (void)state;
    assert_int_equal(tlsrpt_table_count(t, &none_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &none_policy, &f), 0);
    json = tlsrpt_report_json(t, "example.net", &info);
    assert_non_null(json);
    assert_string_equal(json, golden_none);
    assert_int_equal(tlsrpt_table_has_policy(t, "example.net"), 0);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_has_policy(t, "company-y.example"), 1);
    assert_int_equal(tlsrpt_table_has_policy(t, "other.example"), 0);
    free(json);
    /* the line form keeps it all */
    tlsrpt_table_save(t, "example.net", &b);
    u = tlsrpt_table_create(10);
    assert_int_equal(tlsrpt_table_load(u, b.data, b.len), 0);
    json = tlsrpt_report_json(u, "example.net", &info);
    assert_string_equal(json, golden_none);
    free(json);
    util_buf_free(&b);
    tlsrpt_table_free(u);
    tlsrpt_table_free(t);
}

/* Every domain mailed could be a no-policy-found entry: they take at
 * most half of the table, so that the domains that publish a policy
 * always find room. */
static void test_no_policy_limit(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(4), *u;
    struct tlsrpt_policy p = none_policy;
    const char *line = "P\t2\tlate.example\t\t\t3\t0\n";

    (void)state;
    p.domain = "a.example";
    assert_int_equal(tlsrpt_table_count(t, &p, NULL), 0);
    p.domain = "b.example";
    assert_int_equal(tlsrpt_table_count(t, &p, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &p, NULL), 0); /* known */
    p.domain = "c.example";
    assert_int_equal(tlsrpt_table_count(t, &p, NULL), -1);
    assert_int_equal(tlsrpt_table_dropped(t), 1);
    /* loaded counts obey the same limit */
    assert_int_equal(tlsrpt_table_load(t, line, strlen(line)), 0);
    assert_int_equal(tlsrpt_table_dropped(t), 4);
    assert_int_equal(tlsrpt_table_count(t, &sts_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_count(t, &tlsa_policy, NULL), 0);
    assert_int_equal(tlsrpt_table_size(t), 4);
    /* a new period starts empty */
    tlsrpt_table_clear(t);
    p.domain = "c.example";
    assert_int_equal(tlsrpt_table_count(t, &p, NULL), 0);
    assert_int_equal(tlsrpt_table_dropped(t), 0);
    tlsrpt_table_free(t);
    /* a table too small for half: none at all */
    u = tlsrpt_table_create(1);
    assert_int_equal(tlsrpt_table_count(u, &p, NULL), -1);
    assert_int_equal(tlsrpt_table_count(u, &sts_policy, NULL), 0);
    tlsrpt_table_free(u);
}

/* The line form of before sending-mta-ip (F lines of six fields) still
 * loads; seven fields carry it; more do not read. */
static void test_load_old_form(void **state)
{
    static const char old[] =
        "P\t2\texample.net\t\t\t0\t1\n"
        "F\t2\tmx.example.net\t192.0.2.1\tServer certificate not trusted "
        "(certificate has expired)\t1\n";
    static const char now[] = "P\t2\texample.net\t\t\t1\t1\n"
                              "F\t2\tmx.example.net\t192.0.2.1\tServer "
                              "certificate not trusted (certificate has "
                              "expired)\t1\t198.51.100.1\n";
    static const char more[] = "P\t2\texample.net\t\t\t0\t1\n"
                               "F\t2\tmx\t\t\t1\t198.51.100.1\tx\n";
    struct tlsrpt_table *t = tlsrpt_table_create(10);
    struct util_buf b = UTIL_BUF_INIT;
    char *json;

    (void)state;
    assert_int_equal(tlsrpt_table_load(t, old, strlen(old)), 0);
    json = tlsrpt_report_json(t, "example.net", &info);
    assert_null(strstr(json, "sending-mta-ip"));
    assert_non_null(strstr(json, "\"result-type\": \"certificate-expired\","
                                 "\n        \"receiving-mx-hostname\""));
    free(json);
    /* saved again, it has the new form, with an empty field */
    tlsrpt_table_save(t, "example.net", &b);
    assert_string_equal(b.data,
                        "P\t2\texample.net\t\t\t0\t1\n"
                        "F\t2\tmx.example.net\t192.0.2.1\tServer certificate "
                        "not trusted (certificate has expired)\t1\t\n");
    util_buf_free(&b);
    tlsrpt_table_clear(t);
    assert_int_equal(tlsrpt_table_load(t, now, strlen(now)), 0);
    json = tlsrpt_report_json(t, "example.net", &info);
    assert_string_equal(json, golden_none);
    free(json);
    assert_int_equal(tlsrpt_table_load(t, more, strlen(more)), -1);
    tlsrpt_table_free(t);
}

static void test_result_names(void **state)
{
    (void)state;
    /* section 4.3's result types, as written in reports */
    assert_string_equal(tlsrpt_result_name(TLSRPT_STARTTLS_NOT_SUPPORTED),
                        "starttls-not-supported");
    assert_string_equal(tlsrpt_result_name(TLSRPT_CERTIFICATE_HOST_MISMATCH),
                        "certificate-host-mismatch");
    assert_string_equal(tlsrpt_result_name(TLSRPT_CERTIFICATE_EXPIRED),
                        "certificate-expired");
    assert_string_equal(tlsrpt_result_name(TLSRPT_CERTIFICATE_NOT_TRUSTED),
                        "certificate-not-trusted");
    assert_string_equal(tlsrpt_result_name(TLSRPT_VALIDATION_FAILURE),
                        "validation-failure");
    assert_string_equal(tlsrpt_result_name(TLSRPT_TLSA_INVALID),
                        "tlsa-invalid");
    assert_string_equal(tlsrpt_result_name(TLSRPT_DNSSEC_INVALID),
                        "dnssec-invalid");
    assert_string_equal(tlsrpt_result_name(TLSRPT_DANE_REQUIRED),
                        "dane-required");
    assert_string_equal(tlsrpt_result_name(TLSRPT_STS_POLICY_FETCH_ERROR),
                        "sts-policy-fetch-error");
    assert_string_equal(tlsrpt_result_name(TLSRPT_STS_POLICY_INVALID),
                        "sts-policy-invalid");
    assert_string_equal(tlsrpt_result_name(TLSRPT_STS_WEBPKI_INVALID),
                        "sts-webpki-invalid");
}

/* Decision 63: each of the client's failures as a section 4.3 type. */
static void test_client_failures(void **state)
{
    static const struct {
        enum deliver_tls_fail kind;
        const char *type;
    } map[] = {
        {DELIVER_TLS_FAIL_STARTTLS, "starttls-not-supported"},
        {DELIVER_TLS_FAIL_HANDSHAKE, "validation-failure"},
        {DELIVER_TLS_FAIL_NOT_TRUSTED, "certificate-not-trusted"},
        /* "certificate-expired: This indicates that the certificate has
         * expired." */
        {DELIVER_TLS_FAIL_EXPIRED, "certificate-expired"},
        {DELIVER_TLS_FAIL_HOST_MISMATCH, "certificate-host-mismatch"},
        {DELIVER_TLS_FAIL_DANE, "tlsa-invalid"},
        {DELIVER_TLS_FAIL_TLSA_LOOKUP, "dnssec-invalid"},
        {DELIVER_TLS_FAIL_DANE_REQUIRED, "dane-required"},
    };

    (void)state;
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        assert_string_equal(tlsrpt_result_name(qmgr_tlsrpt_result(map[i].kind)),
                            map[i].type);
}

static void txt_ok(const char *txt, size_t n, const char *first,
                   const char *second)
{
    struct tlsrpt_rua r;

    assert_int_equal(tlsrpt_txt_parse(txt, &r), 0);
    assert_int_equal(r.n, n);
    assert_string_equal(r.uri[0], first);
    if (second)
        assert_string_equal(r.uri[1], second);
    tlsrpt_rua_clear(&r);
}

static void txt_bad(const char *txt)
{
    struct tlsrpt_rua r;

    if (tlsrpt_txt_parse(txt, &r) != -1)
        fail_msg("accepted: %s", txt);
    assert_int_equal(r.n, 0);
}

/* Section 3's record and examples. */
static void test_txt_parse(void **state)
{
    (void)state;
    /* "_smtp._tls.example.com. IN TXT \
     *  "v=TLSRPTv1;rua=mailto:reports@example.com"" */
    txt_ok("v=TLSRPTv1;rua=mailto:reports@example.com", 1,
           "mailto:reports@example.com", NULL);
    /* "v=TLSRPTv1; rua=https://reporting.example.com/v1/tlsrpt" */
    txt_ok("v=TLSRPTv1; rua=https://reporting.example.com/v1/tlsrpt", 1,
           "https://reporting.example.com/v1/tlsrpt", NULL);
    /* "The record supports the ability to declare more than one rua" */
    txt_ok("v=TLSRPTv1; rua=mailto:a@b.example,https://x.example/y", 2,
           "mailto:a@b.example", "https://x.example/y");
    txt_ok("v=TLSRPTv1 ; rua=mailto:a@b.example , MAILTO:c@d.example;", 2,
           "mailto:a@b.example", "mailto:c@d.example");
    /* an extension is ignored; a mailto's query is dropped */
    txt_ok("v=TLSRPTv1; ext_1=value; rua=mailto:a@b.example?subject=x", 1,
           "mailto:a@b.example", NULL);
    /* a scheme sluice cannot use is skipped */
    txt_ok("v=TLSRPTv1; rua=ftp://x.example/,mailto:a@b.example", 1,
           "mailto:a@b.example", NULL);
    txt_bad("v=TLSRPTv1");
    txt_bad("v=TLSRPTv1;");
    txt_bad("v=TLSRPTv2; rua=mailto:a@b.example");
    txt_bad("rua=mailto:a@b.example; v=TLSRPTv1");
    txt_bad("v=TLSRPTv1; rua=mailto:a@b.example; rua=mailto:c@d.example");
    txt_bad("v=TLSRPTv1; rua=ftp://x.example/");
    txt_bad("v=TLSRPTv1; rua=mailto:nobody");
    txt_bad("v=TLSRPTv1; rua=http://x.example/");
    txt_bad("v=TLSRPTv1; rua=mailto:a@b.example,");
    txt_bad("v=TLSRPTv1; bad field; rua=mailto:a@b.example");
    txt_bad("v=TLSRPTv1 rua=mailto:a@b.example");
}

static void test_txt_select(void **state)
{
    const char *one[] = {"v=spf1 -all", "v=TLSRPTv1; rua=mailto:a@b.example"};
    const char *two[] = {"v=TLSRPTv1; rua=mailto:a@b.example",
                         "v=TLSRPTv1; rua=mailto:c@d.example"};
    const char *none[] = {"v=spf1 -all"};
    struct tlsrpt_rua r;

    (void)state;
    /* "records that do not begin with "v=TLSRPTv1;" are discarded" */
    assert_int_equal(tlsrpt_txt_select(one, 2, &r), 0);
    assert_string_equal(r.uri[0], "mailto:a@b.example");
    tlsrpt_rua_clear(&r);
    /* "If the number of resulting records is not one, senders MUST
     * assume the recipient domain does not implement TLSRPT." */
    assert_int_equal(tlsrpt_txt_select(two, 2, &r), -1);
    assert_int_equal(tlsrpt_txt_select(none, 1, &r), -1);
    assert_int_equal(tlsrpt_txt_select(NULL, 0, &r), -1);
}

static char *gunzip(const char *z, size_t zlen, size_t *len)
{
    z_stream s;
    size_t cap = 65536;
    char *out = malloc(cap);

    memset(&s, 0, sizeof(s));
    assert_int_equal(inflateInit2(&s, 15 + 16), Z_OK);
    s.next_in = (Bytef *)z;
    s.avail_in = (uInt)zlen;
    s.next_out = (Bytef *)out;
    s.avail_out = (uInt)cap - 1;
    assert_int_equal(inflate(&s, Z_FINISH), Z_STREAM_END);
    *len = cap - 1 - s.avail_out;
    out[*len] = 0;
    inflateEnd(&s);
    return out;
}

static int b64(char c)
{
    const char *abc =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char *p = strchr(abc, c);

    return c && p ? (int)(p - abc) : -1;
}

/* Section 5.3: the message's fields and parts; the report round-trips. */
static void test_mail(void **state)
{
    struct tlsrpt_table *t = tlsrpt_table_create(10);
    struct tlsrpt_mail m = {"postmaster@mta.company-x.example",
                            "reports@company-y.example",
                            "company-y.example",
                            "Company-X",
                            "mta.company-x.example",
                            "5065427c-23d3-47ca-b6e0-946ea0e8c4be",
                            "Fri, 01 Apr 2016 00:00:00 +0000",
                            1459468800,
                            1459555199};
    char *json, *msg, *p, *z, *plain;
    size_t len, zlen = 0, plen;
    unsigned v = 0;
    int bits = 0;

    (void)state;
    fill(t);
    json = tlsrpt_report_json(t, "company-y.example", &info);
    msg = tlsrpt_mail_format(&m, json, &len);
    assert_non_null(msg);
    assert_int_equal(strlen(msg), len);
    assert_non_null(strstr(msg, "\r\nSubject: Report Domain: company-y.example "
                                "Submitter: Company-X Report-ID: "
                                "<5065427c-23d3-47ca-b6e0-946ea0e8c4be>\r\n"));
    assert_non_null(
        strstr(msg, "\r\nTLS-Report-Domain: company-y.example\r\n"));
    assert_non_null(strstr(msg, "\r\nTLS-Report-Submitter: Company-X\r\n"));
    assert_non_null(strstr(msg, "Content-Type: multipart/report; "
                                "report-type=\"tlsrpt\";"));
    assert_non_null(strstr(msg, "Content-Type: text/plain"));
    assert_non_null(strstr(msg,
                           "filename=\"mta.company-x.example!company-y.example!"
                           "1459468800!1459555199!"
                           "5065427c-23d3-47ca-b6e0-946ea0e8c4be.json.gz\""));
    p = strstr(msg, "Content-Type: application/tlsrpt+gzip\r\n"
                    "Content-Transfer-Encoding: base64\r\n");
    assert_non_null(p);
    p = strstr(p, "\r\n\r\n") + 4;
    z = malloc(len);
    for (; *p && *p != '-'; p++) {
        if (b64(*p) < 0)
            continue;
        v = (v << 6) | (unsigned)b64(*p);
        if ((bits += 6) >= 8) {
            bits -= 8;
            z[zlen++] = (char)((v >> bits) & 0xff);
        }
    }
    plain = gunzip(z, zlen, &plen);
    assert_string_equal(plain, json);
    free(plain);
    free(z);
    free(msg);
    free(json);
    tlsrpt_table_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_json),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_save_load),
        cmocka_unit_test(test_sending_ip),
        cmocka_unit_test(test_no_policy),
        cmocka_unit_test(test_no_policy_limit),
        cmocka_unit_test(test_load_old_form),
        cmocka_unit_test(test_result_names),
        cmocka_unit_test(test_client_failures),
        cmocka_unit_test(test_txt_parse),
        cmocka_unit_test(test_txt_select),
        cmocka_unit_test(test_mail),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
