/*
 * NAME
 *	nexthop 3 - from a DNS answer to the addresses a delivery tries
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	size_t	qmgr_addresses(const struct dns_result *res, unsigned port,
 *			int limit, struct deliver_addr *out, size_t max)
 *	void	qm_addr_list(const struct dns_result *res,
 *			struct util_buf *b)
 * DESCRIPTION
 *	qmgr_addresses(): see qmgr.h. dns/ has already ordered the
 *	exchangers (preference, then shuffled within one preference), so
 *	this keeps that order.
 *
 *	qm_addr_list() appends the addresses of a host answer to b as
 *	libcurl's CURLOPT_RESOLVE takes them ("192.0.2.1,[2001:db8::1]"),
 *	for the HTTPS requests that use dns/'s answers (MTA-STS's policy
 *	host, TLS reporting's https: addresses); nothing when there are
 *	none.
 */

#include "qmgr/qmgr_impl.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static void set_port(struct deliver_addr *a, unsigned port)
{
    if (a->sa.ss_family == AF_INET6)
        ((struct sockaddr_in6 *)&a->sa)->sin6_port = htons((uint16_t)port);
    else
        ((struct sockaddr_in *)&a->sa)->sin_port = htons((uint16_t)port);
}

size_t qmgr_addresses(const struct dns_result *res, unsigned port, int limit,
                      struct deliver_addr *out, size_t max)
{
    size_t n = 0;

    if (res->status != DNS_OK)
        return 0;
    if (limit > 0 && (size_t)limit < max)
        max = (size_t)limit;
    for (size_t h = 0; h < res->nhost && n < max; h++) {
        const struct dns_host *host = &res->host[h];

        for (size_t i = 0; i < host->naddr && n < max; i++, n++) {
            struct deliver_addr *a = &out[n];

            memset(a, 0, sizeof(*a));
            snprintf(a->host, sizeof(a->host), "%s", host->name);
            a->pref = host->pref;
            memcpy(&a->sa, &host->addr[i].sa, host->addr[i].salen);
            a->salen = host->addr[i].salen;
            set_port(a, port);
        }
    }
    return n;
}

void qm_addr_list(const struct dns_result *res, struct util_buf *b)
{
    for (size_t h = 0; res->status == DNS_OK && h < res->nhost; h++)
        for (size_t i = 0; i < res->host[h].naddr; i++) {
            const struct dns_addr *a = &res->host[h].addr[i];
            int v6 = a->sa.ss_family == AF_INET6;

            util_buf_printf(b, "%s%s%s%s", b->len ? "," : "", v6 ? "[" : "",
                            a->text, v6 ? "]" : "");
        }
}
