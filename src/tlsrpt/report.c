/*
 * NAME
 *	report 3 - the JSON report of one policy domain (RFC 8460, 4)
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt.h"
 *
 *	char	*tlsrpt_report_json(const struct tlsrpt_table *t,
 *			const char *domain,
 *			const struct tlsrpt_report_info *info)
 *	const char *tlsrpt_result_name(enum tlsrpt_result r)
 * DESCRIPTION
 *	tlsrpt_report_json() is described in tlsrpt.h. The fields come in
 *	the order of the RFC's example (section 4.4), two spaces of
 *	indentation; strings are escaped as RFC 8259 asks (the quote, the
 *	backslash and control characters; bytes of 0x80 and above are
 *	passed as they are, so UTF-8 stays UTF-8). tlsrpt_result_name() is
 *	the result-type's name in the report.
 */

#include "tlsrpt/tlsrpt_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

const char *tlsrpt_result_name(enum tlsrpt_result r)
{
    static const char *const name[TLSRPT_RESULT_COUNT] = {
        "starttls-not-supported", "certificate-host-mismatch",
        "certificate-expired",    "certificate-not-trusted",
        "validation-failure",     "tlsa-invalid",
        "dnssec-invalid",         "dane-required",
        "sts-policy-fetch-error", "sts-policy-invalid",
        "sts-webpki-invalid",
    };

    return (unsigned)r < TLSRPT_RESULT_COUNT ? name[r] : "validation-failure";
}

/* A JSON array of the lines of text ("\n" between them). */
static void json_lines(struct util_buf *b, const char *text)
{
    const char *p = text;

    util_buf_puts(b, "[");
    while (*p) {
        size_t n = strcspn(p, "\n");
        char *line = xstrndup(p, n);

        util_buf_puts(b, p == text ? "" : ", ");
        util_json_string(b, line);
        free(line);
        p += n;
        if (*p)
            p++;
    }
    util_buf_puts(b, "]");
}

static void datetime(char *buf, size_t len, int64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;

    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const char *type_name(enum tlsrpt_policy_type t)
{
    return t == TLSRPT_POLICY_STS    ? "sts"
           : t == TLSRPT_POLICY_TLSA ? "tlsa"
                                     : "no-policy-found";
}

static void detail_json(struct util_buf *b, const struct tlsrpt_detail *d)
{
    util_buf_puts(b, "{\n        \"result-type\": ");
    util_json_string(b, tlsrpt_result_name(d->result));
    if (d->sending_ip[0]) {
        util_buf_puts(b, ",\n        \"sending-mta-ip\": ");
        util_json_string(b, d->sending_ip);
    }
    if (d->mx_host[0]) {
        util_buf_puts(b, ",\n        \"receiving-mx-hostname\": ");
        util_json_string(b, d->mx_host);
    }
    if (d->ip[0]) {
        util_buf_puts(b, ",\n        \"receiving-ip\": ");
        util_json_string(b, d->ip);
    }
    util_buf_printf(b, ",\n        \"failed-session-count\": %ld", d->count);
    if (d->reason[0]) {
        util_buf_puts(b, ",\n        \"failure-reason-code\": ");
        util_json_string(b, d->reason);
    }
    util_buf_puts(b, "\n      }");
}

static void policy_json(struct util_buf *b, const struct tlsrpt_entry *e)
{
    util_buf_puts(b, "{\n    \"policy\": {\n      \"policy-type\": ");
    util_json_string(b, type_name(e->type));
    if (e->type != TLSRPT_POLICY_NONE) {
        util_buf_puts(b, ",\n      \"policy-string\": ");
        json_lines(b, e->string);
    }
    util_buf_puts(b, ",\n      \"policy-domain\": ");
    util_json_string(b, e->domain);
    if (e->type == TLSRPT_POLICY_STS) {
        util_buf_puts(b, ",\n      \"mx-host\": ");
        json_lines(b, e->mx);
    }
    util_buf_printf(b,
                    "\n    },\n    \"summary\": {\n"
                    "      \"total-successful-session-count\": %ld,\n"
                    "      \"total-failure-session-count\": %ld\n    }",
                    e->success, e->failure);
    if (e->ndetails > 0) {
        util_buf_puts(b, ",\n    \"failure-details\": [");
        for (size_t k = 0; k < e->ndetails; k++) {
            util_buf_puts(b, k ? ", " : "");
            detail_json(b, &e->details[k]);
        }
        util_buf_puts(b, "]");
    }
    util_buf_puts(b, "\n  }");
}

char *tlsrpt_report_json(const struct tlsrpt_table *t, const char *domain,
                         const struct tlsrpt_report_info *info)
{
    struct util_buf b = UTIL_BUF_INIT;
    char start[32], end[32];
    size_t n = 0;

    datetime(start, sizeof(start), info->start);
    datetime(end, sizeof(end), info->end);
    util_buf_puts(&b, "{\n  \"organization-name\": ");
    util_json_string(&b, info->organization);
    util_buf_printf(&b,
                    ",\n  \"date-range\": {\n    \"start-datetime\": \"%s\",\n"
                    "    \"end-datetime\": \"%s\"\n  },\n  \"contact-info\": ",
                    start, end);
    util_json_string(&b, info->contact);
    util_buf_puts(&b, ",\n  \"report-id\": ");
    util_json_string(&b, info->report_id);
    util_buf_puts(&b, ",\n  \"policies\": [");
    for (size_t i = 0; i < t->n; i++) {
        if (strcasecmp(t->entries[i]->domain, domain) != 0)
            continue;
        util_buf_puts(&b, n++ ? ", " : "");
        policy_json(&b, t->entries[i]);
    }
    util_buf_puts(&b, "]\n}\n");
    if (n == 0) {
        util_buf_free(&b);
        return NULL;
    }
    return util_buf_take(&b);
}
