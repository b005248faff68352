/*
 * NAME
 *	record 3 - TLSA and TXT results, made from one answer
 * SYNOPSIS
 *	#include "dns/dns.h"
 *
 *	void	dns_tlsa_result_free(struct dns_tlsa_result *res)
 *	void	dns_txt_result_free(struct dns_txt_result *res)
 *
 *	#include "dns/dns_impl.h"
 *
 *	struct dns_tlsa_result *dns_tlsa_result_new(const char *name,
 *			enum dns_status status, const char *why,
 *			const char *dsn)
 *	struct dns_tlsa_result *dns_tlsa_result_make(const char *name,
 *			const struct dns_answer *a)
 *	struct dns_txt_result *dns_txt_result_new(const char *name,
 *			enum dns_status status, const char *why,
 *			const char *dsn)
 *	struct dns_txt_result *dns_txt_result_make(const char *name,
 *			const struct dns_answer *a)
 * DESCRIPTION
 *	A TLSA or TXT lookup asks one question; its result is that answer,
 *	copied out of the cache (the caller owns it, the cache may drop
 *	the answer at any time).
 *
 *	The two kinds read a denial of existence differently. For TLSA,
 *	NXDOMAIN and no data are an answer, DNS_OK without records: RFC
 *	7672, 2.2 makes a validated denial mean "no TLSA records" (the
 *	server is then reached without DANE), and only a failed lookup
 *	(SERVFAIL, which a validating resolver returns for a bogus
 *	answer, or a timeout) makes it unusable. For TXT, a name without
 *	records is DNS_PERMFAIL, with the reference's reason, as for the
 *	other lookups: the caller of an MTA-STS or TLS-RPT lookup wants
 *	the records and takes any failure as "no policy". secure is the
 *	answer's in both cases, denials included; a temporary failure is
 *	never secure.
 */

#include "dns/dns_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dns_tlsa_result *dns_tlsa_result_new(const char *name,
                                            enum dns_status status,
                                            const char *why, const char *dsn)
{
    struct dns_tlsa_result *res = xcalloc(1, sizeof(*res));

    res->status = status;
    res->name = xstrdup(name);
    res->why = xstrdup(why ? why : "");
    if (status != DNS_OK)
        snprintf(res->dsn, sizeof(res->dsn), "%s", dsn);
    return res;
}

struct dns_tlsa_result *dns_tlsa_result_make(const char *name,
                                             const struct dns_answer *a)
{
    struct dns_tlsa_result *res;
    size_t i;

    switch (a->kind) {
    case DNS_ANSWER_DATA:
        res = dns_tlsa_result_new(name, DNS_OK, NULL, NULL);
        res->n = a->count;
        res->rec = xcalloc(a->count, sizeof(*res->rec));
        for (i = 0; i < a->count; i++) {
            res->rec[i] = a->tlsa[i];
            res->rec[i].data = xmalloc(a->tlsa[i].len + 1);
            memcpy(res->rec[i].data, a->tlsa[i].data, a->tlsa[i].len);
        }
        break;
    case DNS_ANSWER_NXDOMAIN:
    case DNS_ANSWER_NODATA:
        res = dns_tlsa_result_new(name, DNS_OK, NULL, NULL);
        break;
    case DNS_ANSWER_TEMP:
        return dns_tlsa_result_new(name, DNS_TEMPFAIL, a->why, a->dsn);
    default:
        return dns_tlsa_result_new(name, DNS_PERMFAIL, a->why, a->dsn);
    }
    res->secure = a->secure;
    return res;
}

void dns_tlsa_result_free(struct dns_tlsa_result *res)
{
    size_t i;

    if (res == NULL)
        return;
    for (i = 0; i < res->n; i++)
        free(res->rec[i].data);
    free(res->rec);
    free(res->name);
    free(res->why);
    free(res);
}

struct dns_txt_result *dns_txt_result_new(const char *name,
                                          enum dns_status status,
                                          const char *why, const char *dsn)
{
    struct dns_txt_result *res = xcalloc(1, sizeof(*res));

    res->status = status;
    res->name = xstrdup(name);
    res->why = xstrdup(why ? why : "");
    if (status != DNS_OK)
        snprintf(res->dsn, sizeof(res->dsn), "%s", dsn);
    return res;
}

struct dns_txt_result *dns_txt_result_make(const char *name,
                                           const struct dns_answer *a)
{
    struct dns_txt_result *res;
    size_t i;

    switch (a->kind) {
    case DNS_ANSWER_DATA:
        res = dns_txt_result_new(name, DNS_OK, NULL, NULL);
        res->n = a->count;
        res->txt = xcalloc(a->count, sizeof(*res->txt));
        for (i = 0; i < a->count; i++)
            res->txt[i] = xstrdup(a->txt[i]);
        break;
    case DNS_ANSWER_TEMP:
        return dns_txt_result_new(name, DNS_TEMPFAIL, a->why, a->dsn);
    default: /* NXDOMAIN, no data, FORMERR, a CNAME loop */
        res = dns_txt_result_new(name, DNS_PERMFAIL, a->why, a->dsn);
        break;
    }
    res->secure = a->secure;
    return res;
}

void dns_txt_result_free(struct dns_txt_result *res)
{
    size_t i;

    if (res == NULL)
        return;
    for (i = 0; i < res->n; i++)
        free(res->txt[i]);
    free(res->txt);
    free(res->name);
    free(res->why);
    free(res);
}
