/*
 * NAME
 *	nexthop 3 - from a DNS answer to the addresses a delivery tries
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	size_t	qmgr_addresses(const struct dns_result *res, unsigned port,
 *			int limit, struct deliver_addr *out, size_t max)
 * DESCRIPTION
 *	See qmgr.h. dns/ has already ordered the exchangers (preference,
 *	then shuffled within one preference), so this keeps that order.
 */

#include "qmgr/qmgr.h"

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
            memcpy(&a->sa, &host->addr[i].sa, host->addr[i].salen);
            a->salen = host->addr[i].salen;
            set_port(a, port);
        }
    }
    return n;
}
