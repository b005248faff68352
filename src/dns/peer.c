/*
 * NAME
 *	peer 3 - a client's host name: PTR, then forward confirmation
 * SYNOPSIS
 *	#include "dns/dns.h"
 *
 *	int	dns_lookup_peer(struct dns_resolver *r,
 *			const struct sockaddr *sa, socklen_t salen,
 *			dns_peer_fn *done, void *ctx)
 *	void	dns_peer_result_free(struct dns_peer_result *res)
 *	int	dns_reverse_name(const struct sockaddr *sa, char *out,
 *			size_t len)
 *	int	dns_addr_match(const struct dns_addr *a,
 *			const struct sockaddr *sa)
 * DESCRIPTION
 *	An SMTP server names its client in its logs and in the Received:
 *	header field. The reference's smtpd (smtpd_peer.c) takes the name
 *	that the address's PTR record gives only when that name's own
 *	addresses include the client's: anyone who controls the reverse
 *	zone of their address can make its PTR say anything, and a name
 *	that enters the audit trail unchecked would be believed. So does
 *	this file, on the resolver's loop.
 *
 *	dns_lookup_peer() asks for the PTR records of the client's
 *	address (dns_reverse_name()), then for the A and AAAA records of
 *	each name they give (at most DNS_PEER_NAMES, all at once), and
 *	calls done once, never from inside the call, with a result: the
 *	first name, in the order the PTR records came, one of whose
 *	addresses is the client's (dns_addr_match()) is res->name, status
 *	DNS_OK. Otherwise res->name is "unknown" and status says why:
 *	DNS_TEMPFAIL when the PTR lookup or a forward lookup failed for
 *	the time being, else DNS_PERMFAIL (no PTR record, no name that is
 *	a host name, or none confirmed). res->reverse_name is the first
 *	PTR name that is a host name, confirmed or not ("unknown" without
 *	one), as the reference keeps it. res->why is a warning in the
 *	reference's words, or "": "hostname NAME does not resolve to
 *	address ADDR" (the name's addresses do not include the client's),
 *	the same with ": REASON" when the name's lookup failed, "numeric
 *	hostname: NAME" for a PTR record that names an address. A name
 *	that is not a host name (dns_name_norm()) is skipped, as the
 *	reference's valid_hostname() refuses it. A PTR lookup that fails
 *	gives no warning (the reference's getnameinfo() gives none).
 *
 *	It returns 0, or -1 when sa is not an IPv4 or IPv6 address or the
 *	resolver is being freed: done is then never called. An IPv4
 *	address mapped into IPv6 (::ffff:192.0.2.1, a client of a
 *	listener on [::]) is looked up and compared as the IPv4 address
 *	it is. Every answer goes through the resolver's cache.
 *
 *	dns_reverse_name() writes the name of an address's PTR records:
 *	"1.2.0.192.in-addr.arpa" for 192.0.2.1 (RFC 1035, 3.5), one
 *	nibble per label, lowest first, under "ip6.arpa" for IPv6 (RFC
 *	3596, 2.5). It returns 0, or -1 when sa is not an address or out
 *	is too short. dns_addr_match() tells whether a is sa's address
 *	(the port does not count).
 */

#include "dns/dns_impl.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct peer_lookup;

/* One name of the PTR answer and the answer to its addresses. */
struct peer_name {
    struct peer_lookup *p;
    char *name;
    struct dns_result *res; /* NULL until it comes */
};

struct peer_lookup {
    struct dns_resolver *r;
    dns_peer_fn *done;
    void *ctx;
    struct sockaddr_storage sa; /* IPv4 for a mapped address */
    char addr[INET6_ADDRSTRLEN];
    char *reverse_name; /* the first host name of the PTR records */
    char *numeric;      /* a PTR record naming an address */
    size_t n;
    struct peer_name names[DNS_PEER_NAMES];
    size_t pending;
};

/* An IPv4 address mapped into IPv6 is the IPv4 address. */
static int peer_addr_norm(const struct sockaddr *sa,
                          struct sockaddr_storage *out)
{
    memset(out, 0, sizeof(*out));
    if (sa->sa_family == AF_INET) {
        memcpy(out, sa, sizeof(struct sockaddr_in));
        return 0;
    }
    if (sa->sa_family != AF_INET6)
        return -1;
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

    if (IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
        struct sockaddr_in *s4 = (struct sockaddr_in *)out;

        s4->sin_family = AF_INET;
        memcpy(&s4->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
        return 0;
    }
    memcpy(out, sa, sizeof(*s6));
    return 0;
}

int dns_reverse_name(const struct sockaddr *sa, char *out, size_t len)
{
    const unsigned char *b;
    size_t n = 0;
    int i, w;

    if (sa->sa_family == AF_INET) {
        b = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
        w = snprintf(out, len, "%u.%u.%u.%u.in-addr.arpa", b[3], b[2], b[1],
                     b[0]);
        return w < 0 || (size_t)w >= len ? -1 : 0;
    }
    if (sa->sa_family != AF_INET6 || len < 16 * 4 + sizeof("ip6.arpa"))
        return -1;
    b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
    for (i = 15; i >= 0; i--) {
        out[n++] = "0123456789abcdef"[b[i] & 0xf];
        out[n++] = '.';
        out[n++] = "0123456789abcdef"[b[i] >> 4];
        out[n++] = '.';
    }
    memcpy(out + n, "ip6.arpa", sizeof("ip6.arpa"));
    return 0;
}

int dns_addr_match(const struct dns_addr *a, const struct sockaddr *sa)
{
    const struct sockaddr *mine = (const struct sockaddr *)&a->sa;

    if (mine->sa_family != sa->sa_family)
        return 0;
    if (sa->sa_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)mine)->sin_addr,
                      &((const struct sockaddr_in *)sa)->sin_addr, 4) == 0;
    if (sa->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)mine)->sin6_addr,
                      &((const struct sockaddr_in6 *)sa)->sin6_addr, 16) == 0;
    return 0;
}

void dns_peer_result_free(struct dns_peer_result *res)
{
    if (res == NULL)
        return;
    free(res->addr);
    free(res->name);
    free(res->reverse_name);
    free(res->why);
    free(res);
}

static void peer_free(struct peer_lookup *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->names[i].name);
        dns_result_free(p->names[i].res);
    }
    free(p->reverse_name);
    free(p->numeric);
    free(p);
}

/* Free p, then tell its caller (who may free the resolver). */
static void peer_finish(struct peer_lookup *p, enum dns_status status,
                        const char *name, char *why)
{
    struct dns_peer_result *res = xcalloc(1, sizeof(*res));
    dns_peer_fn *done = p->done;
    void *ctx = p->ctx;

    res->status = status;
    res->addr = xstrdup(p->addr);
    res->name = xstrdup(name ? name : "unknown");
    res->reverse_name = xstrdup(p->reverse_name ? p->reverse_name : "unknown");
    res->why = why ? why : xstrdup(p->numeric ? p->numeric : "");
    peer_free(p);
    done(ctx, res);
}

static int host_has(const struct dns_result *res, const struct sockaddr *sa)
{
    if (res == NULL || res->status != DNS_OK)
        return 0;
    for (size_t h = 0; h < res->nhost; h++)
        for (size_t i = 0; i < res->host[h].naddr; i++)
            if (dns_addr_match(&res->host[h].addr[i], sa))
                return 1;
    return 0;
}

/* Every forward answer is in: the first name they confirm, if any. */
static void peer_decide(struct peer_lookup *p)
{
    const struct sockaddr *sa = (const struct sockaddr *)&p->sa;
    enum dns_status status = DNS_PERMFAIL;
    const struct peer_name *first = &p->names[0];
    char name[DNS_NAME_MAX + 1];

    for (size_t i = 0; i < p->n; i++) {
        if (host_has(p->names[i].res, sa)) {
            snprintf(name, sizeof(name), "%s", p->names[i].name);
            peer_finish(p, DNS_OK, name, xstrdup(""));
            return;
        }
        if (p->names[i].res == NULL || p->names[i].res->status == DNS_TEMPFAIL)
            status = DNS_TEMPFAIL;
    }
    if (first->res == NULL || first->res->status != DNS_OK)
        peer_finish(
            p, status, NULL,
            dns_xprintf("hostname %s does not resolve to address "
                        "%s: %s",
                        first->name, p->addr,
                        first->res ? first->res->why : "resolver shut down"));
    else
        peer_finish(p, status, NULL,
                    dns_xprintf("hostname %s does not resolve to address %s",
                                first->name, p->addr));
}

static void forward_done(void *ctx, struct dns_result *res)
{
    struct peer_name *pn = ctx;
    struct peer_lookup *p = pn->p;

    pn->res = res;
    if (--p->pending == 0)
        peer_decide(p);
}

/* Keep a PTR name that is a host name; note one that is an address. */
static void peer_name_add(struct peer_lookup *p, const char *ptr)
{
    struct dns_addr a;
    char norm[DNS_NAME_MAX + 1];

    if (dns_name_norm(ptr, norm) < 0) {
        if (p->numeric == NULL && dns_literal(ptr, &a))
            p->numeric =
                dns_xprintf("numeric hostname: %.*s", DNS_NAME_MAX, ptr);
        return;
    }
    if (p->reverse_name == NULL)
        p->reverse_name = xstrdup(norm);
    if (p->n < DNS_PEER_NAMES) {
        p->names[p->n].p = p;
        p->names[p->n++].name = xstrdup(norm);
    }
}

static void ptr_done(void *ctx, struct dns_txt_result *res)
{
    struct peer_lookup *p = ctx;
    enum dns_status status = res->status;

    for (size_t i = 0; status == DNS_OK && i < res->n; i++)
        peer_name_add(p, res->txt[i]);
    dns_txt_result_free(res);
    if (status != DNS_OK || p->n == 0) {
        peer_finish(p, status == DNS_TEMPFAIL ? DNS_TEMPFAIL : DNS_PERMFAIL,
                    NULL, NULL);
        return;
    }
    /* one more while asking: a name may fail at once (resolver closing) */
    p->pending = p->n + 1;
    for (size_t i = 0; i < p->n; i++)
        if (dns_lookup_host(p->r, p->names[i].name, forward_done,
                            &p->names[i]) < 0)
            p->pending--; /* no answer: res stays NULL, a TEMPFAIL */
    if (--p->pending == 0)
        peer_decide(p);
}

int dns_lookup_peer(struct dns_resolver *r, const struct sockaddr *sa,
                    socklen_t salen, dns_peer_fn *done, void *ctx)
{
    struct peer_lookup *p;
    char arpa[128];
    const void *in;

    (void)salen;
    p = xcalloc(1, sizeof(*p));
    if (peer_addr_norm(sa, &p->sa) < 0 ||
        dns_reverse_name((const struct sockaddr *)&p->sa, arpa, sizeof(arpa)) <
            0) {
        free(p);
        return -1;
    }
    in = p->sa.ss_family == AF_INET
             ? (const void *)&((struct sockaddr_in *)&p->sa)->sin_addr
             : (const void *)&((struct sockaddr_in6 *)&p->sa)->sin6_addr;
    inet_ntop(p->sa.ss_family, in, p->addr, sizeof(p->addr));
    p->r = r;
    p->done = done;
    p->ctx = ctx;
    if (dns_lookup_ptr(r, arpa, ptr_done, p) < 0) {
        free(p);
        return -1;
    }
    return 0;
}
