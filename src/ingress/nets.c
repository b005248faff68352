/*
 * NAME
 *	nets 3 - lists of networks: who may relay (mynetworks), who is exempt
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	struct ingress_nets *ingress_nets_parse(const char *list, char *why,
 *			size_t whylen)
 *	int	ingress_nets_match(const struct ingress_nets *n,
 *			const struct sockaddr *sa)
 *	void	ingress_nets_free(struct ingress_nets *n)
 * DESCRIPTION
 *	ingress_nets_parse() reads a list in Postfix's mynetworks syntax:
 *	entries separated by commas or white space, each an IPv4 or IPv6
 *	address, optionally with a /prefix (an IPv6 address in brackets or
 *	bare: "[::1]/128", "2001:db8::/32"). It returns NULL with the reason
 *	in why for a bad entry: not an address, a prefix out of range, or
 *	host bits set below the prefix ("127.0.0.1/8" is refused, as
 *	Postfix refuses it, because a slip there silently lets a whole
 *	network relay). An empty list matches nothing.
 *
 *	ingress_nets_match() says whether a client's address is in one of
 *	the networks (1 or 0). An IPv4-mapped IPv6 address (::ffff:a.b.c.d,
 *	a client on a dual-stack socket) is matched as the IPv4 address it
 *	carries.
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

struct net {
    int family;             /* AF_INET or AF_INET6 */
    unsigned char addr[16]; /* network bytes */
    int prefix;             /* bits that must match */
};

struct ingress_nets {
    struct net *net;
    size_t n;
};

static int prefix_match(const unsigned char *a, const unsigned char *b,
                        int bits)
{
    int whole = bits / 8, rest = bits % 8;

    if (memcmp(a, b, (size_t)whole) != 0)
        return 0;
    return rest == 0 ||
           ((a[whole] ^ b[whole]) & (unsigned char)(0xff << (8 - rest))) == 0;
}

/* One entry; -1 with why set when it is not good. */
static int net_parse(const char *text, struct net *out, char *why,
                     size_t whylen)
{
    char host[64];
    const char *slash = strchr(text, '/'), *h = text;
    size_t hlen = slash ? (size_t)(slash - text) : strlen(text);
    int max;

    if (hlen > 1 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= sizeof(host))
        goto not_ip;
    memcpy(host, h, hlen);
    host[hlen] = 0;
    if (inet_pton(AF_INET, host, out->addr) == 1)
        out->family = AF_INET;
    else if (inet_pton(AF_INET6, host, out->addr) == 1)
        out->family = AF_INET6;
    else
        goto not_ip;
    max = out->family == AF_INET ? 32 : 128;
    out->prefix = max;
    if (slash != NULL) {
        char *end;
        long v;

        if (slash[1] < '0' || slash[1] > '9' ||
            (v = strtol(slash + 1, &end, 10), *end != 0)) {
            snprintf(why, whylen, "bad network \"%s\": bad prefix length",
                     text);
            return -1;
        }
        if (v > max) {
            snprintf(why, whylen, "bad network \"%s\": prefix longer than %d",
                     text, max);
            return -1;
        }
        out->prefix = (int)v;
    }
    {
        /* Host bits set below the prefix: refuse, and say the network. */
        unsigned char net[16];
        char shown[INET6_ADDRSTRLEN];
        int bytes = max / 8;

        memcpy(net, out->addr, (size_t)bytes);
        for (int i = 0; i < bytes; i++) {
            int keep = out->prefix - 8 * i;

            net[i] &= keep >= 8  ? 0xff
                      : keep > 0 ? (unsigned char)(0xff << (8 - keep))
                                 : 0;
        }
        if (memcmp(net, out->addr, (size_t)bytes) != 0) {
            inet_ntop(out->family, net, shown, sizeof(shown));
            snprintf(why, whylen,
                     "bad network \"%s\": host bits set (did you mean "
                     "%s%s%s/%d?)",
                     text, out->family == AF_INET6 ? "[" : "", shown,
                     out->family == AF_INET6 ? "]" : "", out->prefix);
            return -1;
        }
    }
    return 0;
not_ip:
    snprintf(why, whylen, "bad network \"%s\": not an IP address", text);
    return -1;
}

struct ingress_nets *ingress_nets_parse(const char *list, char *why,
                                        size_t whylen)
{
    struct ingress_nets *n = xmalloc(sizeof(*n));
    const char *p = list;

    n->net = NULL;
    n->n = 0;
    while (*p) {
        size_t len = strcspn(p, ", \t\r\n");
        char entry[128];

        if (len == 0) {
            p++;
            continue;
        }
        snprintf(entry, sizeof(entry), "%.*s", (int)len, p);
        n->net = xrealloc(n->net, (n->n + 1) * sizeof(*n->net));
        if (net_parse(entry, &n->net[n->n], why, whylen) < 0) {
            ingress_nets_free(n);
            return NULL;
        }
        n->n++;
        p += len;
    }
    return n;
}

int ingress_nets_match(const struct ingress_nets *n, const struct sockaddr *sa)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    const unsigned char *addr;
    int family = sa->sa_family;

    if (family == AF_INET) {
        addr =
            (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
    } else if (family == AF_INET6) {
        addr = (const unsigned char *)&((const struct sockaddr_in6 *)sa)
                   ->sin6_addr;
        if (memcmp(addr, mapped, sizeof(mapped)) == 0) {
            addr += 12;
            family = AF_INET;
        }
    } else {
        return 0;
    }
    for (size_t i = 0; i < n->n; i++)
        if (n->net[i].family == family &&
            prefix_match(n->net[i].addr, addr, n->net[i].prefix))
            return 1;
    return 0;
}

void ingress_nets_free(struct ingress_nets *n)
{
    if (n == NULL)
        return;
    free(n->net);
    free(n);
}
