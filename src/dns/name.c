/*
 * NAME
 *	name 3 - domain names, address literals, small helpers of dns/
 * SYNOPSIS
 *	#include "dns/dns_impl.h"
 *
 *	int	dns_name_norm(const char *in, char out[DNS_NAME_MAX + 1])
 *	int	dns_literal(const char *in, struct dns_addr *a)
 *	void	dns_addr_set(struct dns_addr *a, int family, const void *bytes)
 *	const char *dns_type_name(int type)
 * DESCRIPTION
 *	Names are checked before they go on the wire, as the reference
 *	does ("the Linux resolver misbehaves when given an invalid domain
 *	name"): a name that cannot be a host or domain name fails at once
 *	and for good. Underscores are allowed (they occur in real host
 *	names); a last label of digits only is not (no top-level domain is
 *	numeric, and it keeps IPv4 addresses out of MX lookups, as the
 *	reference does).
 */

#include "dns/dns_impl.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int dns_name_norm(const char *in, char out[DNS_NAME_MAX + 1])
{
    size_t len = strlen(in);
    size_t i;
    size_t label = 0;
    int digits_only = 1;

    if (len > 0 && in[len - 1] == '.')
        len--;
    if (len == 0 || len > DNS_NAME_MAX)
        return -1;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)in[i];

        if (c == '.') {
            if (label == 0)
                return -1;
            label = 0;
            digits_only = 1;
        } else if (c < 128 && (isalnum(c) || c == '-' || c == '_')) {
            if (++label > 63)
                return -1;
            if (!isdigit(c))
                digits_only = 0;
        } else {
            return -1;
        }
        out[i] = (char)tolower(c);
    }
    if (label == 0 || digits_only)
        return -1;
    out[len] = 0;
    return 0;
}

int dns_literal(const char *in, struct dns_addr *a)
{
    char buf[INET6_ADDRSTRLEN + 8];
    size_t len = strlen(in);
    const char *p = in;
    unsigned char bytes[16];

    if (len >= 2 && in[0] == '[' && in[len - 1] == ']') {
        p = in + 1;
        len -= 2;
        if (len >= 5 && strncasecmp(p, "IPv6:", 5) == 0) {
            p += 5;
            len -= 5;
        }
    }
    if (len >= sizeof(buf))
        return 0;
    memcpy(buf, p, len);
    buf[len] = 0;
    if (inet_pton(AF_INET, buf, bytes) == 1) {
        dns_addr_set(a, AF_INET, bytes);
        return 1;
    }
    if (inet_pton(AF_INET6, buf, bytes) == 1) {
        dns_addr_set(a, AF_INET6, bytes);
        return 1;
    }
    return 0;
}

void dns_addr_set(struct dns_addr *a, int family, const void *bytes)
{
    memset(a, 0, sizeof(*a));
    if (family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&a->sa;

        sin->sin_family = AF_INET;
        memcpy(&sin->sin_addr, bytes, 4);
        a->salen = sizeof(*sin);
    } else if (family == AF_INET6) {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&a->sa;

        sin6->sin6_family = AF_INET6;
        memcpy(&sin6->sin6_addr, bytes, 16);
        a->salen = sizeof(*sin6);
    } else {
        dns_panic("dns_addr_set: address family %d", family);
    }
    if (inet_ntop(family, bytes, a->text, sizeof(a->text)) == NULL)
        dns_panic("dns_addr_set: inet_ntop failed for family %d", family);
}

const char *dns_type_name(int type)
{
    switch (type) {
    case DNS_TYPE_A:
        return "A";
    case DNS_TYPE_AAAA:
        return "AAAA";
    case DNS_TYPE_MX:
        return "MX";
    case DNS_TYPE_CNAME:
        return "CNAME";
    case DNS_TYPE_SOA:
        return "SOA";
    case DNS_TYPE_TXT:
        return "TXT";
    case DNS_TYPE_PTR:
        return "PTR";
    case DNS_TYPE_TLSA:
        return "TLSA";
    default:
        return "unknown";
    }
}

void dns_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("dns: panic: ", fmt, ap);
}

char *dns_xprintf(const char *fmt, ...)
{
    va_list ap;
    int n;
    char *s;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        dns_panic("dns_xprintf: bad format \"%s\"", fmt);
    s = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}
