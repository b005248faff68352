/*
 * NAME
 *	nexthop 3 - domains, address literals and next hops
 * SYNOPSIS
 *	#include "route/route.h"
 *
 *	size_t	route_nexthop_format(const struct route_result *r, char *buf,
 *			size_t len)
 *	const char *route_type_name(enum route_type type)
 *
 *	#include "route/route_impl.h"
 *
 *	int	route_domain_parse(const char *text, size_t len,
 *			char out[ROUTE_DOMAIN_MAX + 1], enum route_domain *kind)
 *	int	route_hop_parse(const char *text, enum route_type type,
 *			struct route_hop *hop, char *why, size_t whylen)
 *	void	route_hop_free(struct route_hop *hop)
 *	int	route_transport_name_valid(const char *name, size_t len)
 * DESCRIPTION
 *	The syntax of what routing reads and writes; see route.h and
 *	route_impl.h for the contracts. The choices made here:
 *
 *	Domain names are checked by smtp_domain_valid(), what smtp/ accepts
 *	in an address (labels of letters, digits, "-", "_" and 8-bit
 *	bytes), so that every address the daemon took in can be routed; a
 *	trailing dot or an empty label is an error. Address literals are compared in the canonical form
 *	inet_ntop() gives, so [IPv6:2001:DB8:0::1] and [ipv6:2001:db8::1]
 *	are one destination.
 *
 *	An unbracketed next hop that is an IPv4 address is refused: it
 *	would be looked up as a mail domain and fail at delivery time,
 *	where the operator surely meant [address]. A port is a decimal
 *	number from 1 to 65535 (no service names).
 *
 *	"unix:/path" is an LMTP server on a local socket; the path must be
 *	absolute, and only lmtp takes one.
 *
 *	A formatted next hop has brackets when it is not an MX domain for
 *	SMTP, and for any IP address (an IPv6 address needs them before a
 *	port). For LMTP a host name is shown without brackets, whichever
 *	way it was written: LMTP never looks up MX records, so both
 *	spellings are one destination and one queue key.
 */

#include "route/route.h"
#include "route/route_impl.h"
#include "smtp/smtp.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int lower(int ch)
{
    return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

/*
 * A domain name of text[0..len), lower-cased into out; its syntax is
 * smtp/'s, so that every domain an address may have can be routed.
 */
static int name_parse(const char *text, size_t len, char *out)
{
    size_t i;

    if (len == 0 || len > ROUTE_DOMAIN_MAX || text[0] == '[' ||
        memchr(text, 0, len) != NULL)
        return -1;
    for (i = 0; i < len; i++)
        out[i] = (char)lower((unsigned char)text[i]);
    out[len] = 0;
    return smtp_domain_valid(out) ? 0 : -1;
}

/*
 * The inside of an address literal, text[0..len): an IPv4 address, or
 * an IPv6 address with or without the "IPv6:" tag. The canonical
 * address goes to addr.
 */
static int ip_parse(const char *text, size_t len, char addr[INET6_ADDRSTRLEN],
                    enum route_domain *kind)
{
    char copy[INET6_ADDRSTRLEN + 8];
    unsigned char bin[16];

    if (len >= 5 && strncasecmp(text, "ipv6:", 5) == 0) {
        text += 5;
        len -= 5;
        if (memchr(text, ':', len) == NULL)
            return -1;
    }
    if (len == 0 || len >= sizeof(copy))
        return -1;
    memcpy(copy, text, len);
    copy[len] = 0;
    if (inet_pton(AF_INET, copy, bin) == 1) {
        *kind = ROUTE_DOMAIN_IPV4;
        return inet_ntop(AF_INET, bin, addr, INET6_ADDRSTRLEN) ? 0 : -1;
    }
    if (inet_pton(AF_INET6, copy, bin) == 1) {
        *kind = ROUTE_DOMAIN_IPV6;
        return inet_ntop(AF_INET6, bin, addr, INET6_ADDRSTRLEN) ? 0 : -1;
    }
    return -1;
}

int route_domain_parse(const char *text, size_t len,
                       char out[ROUTE_DOMAIN_MAX + 1], enum route_domain *kind)
{
    char addr[INET6_ADDRSTRLEN];

    if (len > 0 && text[0] == '[') {
        if (len < 2 || text[len - 1] != ']' ||
            ip_parse(text + 1, len - 2, addr, kind) < 0)
            return -1;
        snprintf(out, ROUTE_DOMAIN_MAX + 1, "[%s%s]",
                 *kind == ROUTE_DOMAIN_IPV6 ? "ipv6:" : "", addr);
        return 0;
    }
    *kind = ROUTE_DOMAIN_NAME;
    return name_parse(text, len, out);
}

int route_transport_name_valid(const char *name, size_t len)
{
    size_t i;

    if (len == 0 || len > ROUTE_NAME_MAX)
        return 0;
    for (i = 0; i < len; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') ||
              (name[i] >= '0' && name[i] <= '9') || name[i] == '_' ||
              name[i] == '-'))
            return 0;
    return 1;
}

/* ":port" at text, or nothing. */
static int port_parse(const char *text, unsigned *port, char *why,
                      size_t whylen)
{
    unsigned long n = 0;
    const char *cp;

    *port = 0;
    if (*text == 0)
        return 0;
    if (*text != ':') {
        snprintf(why, whylen, "unexpected text after the host");
        return -1;
    }
    for (cp = text + 1; *cp >= '0' && *cp <= '9' && n <= 65535; cp++)
        n = n * 10 + (unsigned long)(*cp - '0');
    if (cp == text + 1 || *cp != 0 || n < 1 || n > 65535) {
        snprintf(why, whylen, "bad port: expected a number from 1 to 65535");
        return -1;
    }
    *port = (unsigned)n;
    return 0;
}

/* "[host]" or "[address]", then an optional port. */
static int bracket_parse(const char *text, struct route_hop *hop, char *why,
                         size_t whylen)
{
    char host[ROUTE_DOMAIN_MAX + 1];
    char addr[INET6_ADDRSTRLEN];
    enum route_domain kind;
    const char *close = strchr(text, ']');
    size_t len;

    if (close == NULL) {
        snprintf(why, whylen, "missing \"]\"");
        return -1;
    }
    len = (size_t)(close - text - 1);
    if (ip_parse(text + 1, len, addr, &kind) == 0) {
        snprintf(host, sizeof(host), "%s", addr);
    } else if (memchr(text + 1, ':', len) != NULL ||
               name_parse(text + 1, len, host) < 0) {
        snprintf(why, whylen,
                 "expected a host name or an IP address "
                 "between the brackets");
        return -1;
    }
    if (port_parse(close + 1, &hop->port, why, whylen) < 0)
        return -1;
    hop->host = xstrndup(host, strlen(host));
    hop->bracketed = 1;
    return 0;
}

/* "host" or "host:port". */
static int plain_parse(const char *text, struct route_hop *hop, char *why,
                       size_t whylen)
{
    char host[ROUTE_DOMAIN_MAX + 1];
    unsigned char bin[16];
    size_t len = strcspn(text, ":");

    if (inet_pton(AF_INET6, text, bin) == 1) {
        snprintf(why, whylen, "an IP address needs brackets: [%s]", text);
        return -1;
    }
    if (name_parse(text, len, host) < 0) {
        snprintf(why, whylen,
                 "expected host, host:port, [host] or "
                 "[host]:port");
        return -1;
    }
    if (inet_pton(AF_INET, host, bin) == 1) {
        snprintf(why, whylen, "an IP address needs brackets: [%s]", host);
        return -1;
    }
    if (port_parse(text + len, &hop->port, why, whylen) < 0)
        return -1;
    hop->host = xstrndup(host, len);
    hop->bracketed = 0;
    return 0;
}

/* An agent's host: a name alone, $host of an argv (decision 129). */
static int agent_parse(const char *text, size_t len, struct route_hop *hop,
                       char *why, size_t whylen)
{
    char host[ROUTE_DOMAIN_MAX + 1];

    if (name_parse(text, len, host) < 0) {
        snprintf(why, whylen, "an agent's next hop is a host name");
        return -1;
    }
    hop->host = xstrdup(host);
    return 0;
}

int route_hop_parse(const char *text, enum route_type type,
                    struct route_hop *hop, char *why, size_t whylen)
{
    size_t len = strlen(text);

    memset(hop, 0, sizeof(*hop));
    if (len > ROUTE_NEXTHOP_MAX) {
        snprintf(why, whylen, "longer than %d bytes", ROUTE_NEXTHOP_MAX);
        return -1;
    }
    if (type == ROUTE_DISCARD || type == ROUTE_ERROR) {
        if (len > 0)
            hop->host = xstrndup(text, len);
        return 0;
    }
    if (len == 0)
        return 0;
    if (type == ROUTE_AGENT)
        return agent_parse(text, len, hop, why, whylen);
    if (strncmp(text, "unix:", 5) == 0) {
        if (type != ROUTE_LMTP) {
            snprintf(why, whylen, "only lmtp delivers to a local socket");
            return -1;
        }
        if (text[5] != '/' || strpbrk(text, " \t") != NULL) {
            snprintf(why, whylen,
                     "a local socket is an absolute path (unix:/path)");
            return -1;
        }
        if (len - 5 > ROUTE_SOCKET_PATH_MAX) {
            snprintf(why, whylen, "a local socket path is at most %d bytes",
                     ROUTE_SOCKET_PATH_MAX);
            return -1;
        }
        hop->host = xstrndup(text + 5, len - 5);
        hop->unix_path = 1;
        return 0;
    }
    if (text[0] == '[')
        return bracket_parse(text, hop, why, whylen);
    return plain_parse(text, hop, why, whylen);
}

void route_hop_free(struct route_hop *hop)
{
    free(hop->host);
    hop->host = NULL;
}

const char *route_type_name(enum route_type type)
{
    switch (type) {
    case ROUTE_SMTP:
        return "smtp";
    case ROUTE_LMTP:
        return "lmtp";
    case ROUTE_DISCARD:
        return "discard";
    case ROUTE_ERROR:
        return "error";
    case ROUTE_AGENT:
        return "agent";
    }
    return "unknown";
}

size_t route_nexthop_format(const struct route_result *r, char *buf, size_t len)
{
    const char *host = r->nexthop;
    unsigned char bin[4];
    int brackets;
    int n;

    if (r->type == ROUTE_DISCARD || r->type == ROUTE_ERROR ||
        r->type == ROUTE_AGENT) {
        n = snprintf(buf, len, "%s", host);
    } else if (r->unix_path) {
        n = snprintf(buf, len, "unix:%s", host);
    } else {
        brackets = (r->type == ROUTE_SMTP && !r->mx) ||
                   strchr(host, ':') != NULL ||
                   inet_pton(AF_INET, host, bin) == 1;
        if (r->port)
            n = snprintf(buf, len, "%s%s%s:%u", brackets ? "[" : "", host,
                         brackets ? "]" : "", r->port);
        else
            n = snprintf(buf, len, "%s%s%s", brackets ? "[" : "", host,
                         brackets ? "]" : "");
    }
    return n < 0 ? 0 : (size_t)n;
}
