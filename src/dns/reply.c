/*
 * NAME
 *	reply 3 - read what a name server answered
 * SYNOPSIS
 *	#include "dns/dns_impl.h"
 *
 *	int	dns_reply_parse(const unsigned char *buf, int len,
 *			const char *qname, int qtype, struct dns_reply *rep)
 *	void	dns_reply_clear(struct dns_reply *rep)
 * DESCRIPTION
 *	c-ares hands over the reply as it came (RFC 1035 wire format). Its
 *	own parsers drop what a mail system needs: ares_parse_mx_reply()
 *	keeps no TTL, none of them reads the SOA record that carries the
 *	negative TTL (RFC 2308). So this file walks the reply itself,
 *	with ares_expand_name() for the compressed names, and checks
 *	every length against the end of the buffer.
 *
 *	The answer section may hold a CNAME chain before the records
 *	(RFC 1034, 3.6.2); the records that count are those of the type
 *	asked for, owned by the name where the chain ends, as the
 *	reference reads it. Their TTL is the smallest of theirs and of
 *	the CNAMEs followed. A TTL with the top bit set counts as 0 (RFC
 *	2181, 8). An MX record whose exchanger is the root is a null MX
 *	(RFC 7505), whatever else is there.
 *
 *	A TLSA record with less than its three one-byte fields is skipped,
 *	not the whole reply, as the reference does: one broken record must
 *	not hide good ones (RFC 7672, 2.2 asks the client to use the
 *	usable ones). A TXT record is a run of character-strings, each a
 *	length byte and that many bytes (RFC 1035, 3.3.14); one that runs
 *	past the record makes the reply malformed, and a record holding a
 *	NUL byte is skipped (a C string cannot carry it, and no MTA-STS or
 *	TLS-RPT record can contain one).
 *
 *	A PTR record's name (RFC 1035, 3.3.12) is kept as the other names
 *	are, lower case without the final dot, among the strings a TXT
 *	record would give; a name that runs past its record makes the
 *	reply malformed.
 *
 *	The AD bit (RFC 4035, 3.2.3; RFC 6840, 5.7) is read from the
 *	header as it came: what it is worth is the resolver's business
 *	(see dns.h).
 */

#include "dns/dns_impl.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define HEADER_SIZE 12
#define RR_FIXED    10 /* type, class, TTL, data length */

struct rr {
    char *owner;
    int type;
    uint32_t ttl;
    const unsigned char *data;
    int len;
};

static unsigned get16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

static uint32_t ttl_value(uint32_t ttl)
{
    return (ttl & 0x80000000u) ? 0 : ttl;
}

/* Expand the name at p, lower case; NULL when it is malformed. */
static char *name_at(const unsigned char *buf, int len, const unsigned char *p,
                     long *enclen)
{
    char *s;
    char *copy;
    char *q;

    if (p >= buf + len || ares_expand_name(p, buf, len, &s, enclen))
        return NULL;
    copy = xstrdup(s);
    ares_free_string(s);
    for (q = copy; *q; q++)
        if (*q >= 'A' && *q <= 'Z')
            *q = (char)(*q - 'A' + 'a');
    return copy;
}

static int skip_question(const unsigned char *buf, int len,
                         const unsigned char **pp)
{
    long enclen;
    char *name = name_at(buf, len, *pp, &enclen);

    if (name == NULL)
        return -1;
    free(name);
    if (*pp + enclen + 4 > buf + len)
        return -1;
    *pp += enclen + 4;
    return 0;
}

static int read_rr(const unsigned char *buf, int len, const unsigned char **pp,
                   struct rr *rr)
{
    long enclen;
    const unsigned char *p = *pp;

    if ((rr->owner = name_at(buf, len, p, &enclen)) == NULL)
        return -1;
    p += enclen;
    if (p + RR_FIXED > buf + len)
        goto bad;
    rr->type = (int)get16(p);
    rr->ttl = ttl_value(get32(p + 4));
    rr->len = (int)get16(p + 8);
    rr->data = p + RR_FIXED;
    if (rr->data + rr->len > buf + len)
        goto bad;
    *pp = rr->data + rr->len;
    return 0;
bad:
    free(rr->owner);
    rr->owner = NULL;
    return -1;
}

static void rrs_free(struct rr *rrs, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        free(rrs[i].owner);
    free(rrs);
}

static uint32_t min32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* The negative TTL from an SOA record: min(its TTL, its minimum). */
static int read_soa(const unsigned char *buf, int len, const struct rr *rr,
                    uint32_t *neg_ttl)
{
    const unsigned char *p = rr->data;
    const unsigned char *end = rr->data + rr->len;
    long enclen;
    char *name;
    int i;

    for (i = 0; i < 2; i++) { /* MNAME, RNAME */
        if ((name = name_at(buf, len, p, &enclen)) == NULL)
            return -1;
        free(name);
        p += enclen;
    }
    if (p + 20 > end)
        return -1;
    *neg_ttl = min32(rr->ttl, ttl_value(get32(p + 16)));
    return 0;
}

static int take_tlsa(const struct rr *rr, struct dns_reply *rep)
{
    size_t n = rep->count;
    struct dns_tlsa *t;

    if (rr->len < 3)
        return 0; /* skipped */
    rep->tlsa = xrealloc(rep->tlsa, (n + 1) * sizeof(*rep->tlsa));
    t = &rep->tlsa[n];
    t->usage = rr->data[0];
    t->selector = rr->data[1];
    t->mtype = rr->data[2];
    t->len = (size_t)rr->len - 3;
    t->data = xmalloc(t->len + 1);
    memcpy(t->data, rr->data + 3, t->len);
    return 1;
}

/* The character-strings of a TXT record, joined: 0 skipped, -1 bad. */
static int take_txt(const struct rr *rr, struct dns_reply *rep)
{
    size_t n = rep->count;
    const unsigned char *p = rr->data;
    const unsigned char *end = rr->data + rr->len;
    char *s = xmalloc((size_t)rr->len + 1);
    size_t out = 0;

    while (p < end) {
        if (p + 1 + *p > end) {
            free(s);
            return -1;
        }
        memcpy(s + out, p + 1, *p);
        out += *p;
        p += 1 + *p;
    }
    s[out] = 0;
    if (memchr(s, 0, out) != NULL) {
        free(s);
        return 0;
    }
    rep->txt = xrealloc(rep->txt, (n + 1) * sizeof(*rep->txt));
    rep->txt[n] = s;
    return 1;
}

/* Add the record's data to rep; -1 if it is malformed. */
static int take_record(const unsigned char *buf, int len, const struct rr *rr,
                       struct dns_reply *rep)
{
    size_t n = rep->count;
    int took;

    if (rr->type == DNS_TYPE_PTR) {
        long enclen;
        char *name = name_at(buf, len, rr->data, &enclen);

        if (name == NULL || enclen > rr->len) {
            free(name);
            return -1;
        }
        rep->txt = xrealloc(rep->txt, (n + 1) * sizeof(*rep->txt));
        rep->txt[n] = name;
    } else if (rr->type == DNS_TYPE_TLSA || rr->type == DNS_TYPE_TXT) {
        took =
            rr->type == DNS_TYPE_TLSA ? take_tlsa(rr, rep) : take_txt(rr, rep);
        if (took <= 0)
            return took;
    } else if (rr->type == DNS_TYPE_MX) {
        long enclen;
        char *name;

        if (rr->len < 3 ||
            (name = name_at(buf, len, rr->data + 2, &enclen)) == NULL)
            return -1;
        rep->mx = xrealloc(rep->mx, (n + 1) * sizeof(*rep->mx));
        rep->mx[n].pref = (int)get16(rr->data);
        rep->mx[n].name = name;
        if (*name == 0)
            rep->nullmx = 1;
    } else {
        int family = rr->type == DNS_TYPE_A ? AF_INET : AF_INET6;

        if (rr->len != (family == AF_INET ? 4 : 16))
            return -1;
        rep->addr = xrealloc(rep->addr, (n + 1) * sizeof(*rep->addr));
        dns_addr_set(&rep->addr[n], family, rr->data);
    }
    rep->count = n + 1;
    rep->ttl = min32(rep->ttl, rr->ttl);
    return 0;
}

/* Follow the CNAME chain from qname; the name where it ends. */
static char *follow_chain(const unsigned char *buf, int len,
                          const struct rr *an, size_t nan, const char *qname,
                          uint32_t *ttl, int *bad)
{
    char *cur = xstrdup(qname);
    char *target;
    long enclen;
    int hops;
    size_t i;

    for (hops = 0; hops < DNS_CHAIN_MAX; hops++) {
        for (i = 0; i < nan; i++)
            if (an[i].type == DNS_TYPE_CNAME && strcmp(an[i].owner, cur) == 0)
                break;
        if (i == nan)
            break;
        target = name_at(buf, len, an[i].data, &enclen);
        if (target == NULL || an[i].data + enclen > an[i].data + an[i].len) {
            free(target);
            *bad = 1;
            break;
        }
        *ttl = min32(*ttl, an[i].ttl);
        free(cur);
        cur = target;
    }
    return cur;
}

int dns_reply_parse(const unsigned char *buf, int len, const char *qname,
                    int qtype, struct dns_reply *rep)
{
    const unsigned char *p = buf + HEADER_SIZE;
    unsigned qd, an, ns, i;
    struct rr *rrs = NULL;
    size_t nan = 0;
    struct rr rr;
    uint32_t chain_ttl = UINT32_MAX;
    char *last = NULL;
    int bad = 0;
    int seen = 0;

    memset(rep, 0, sizeof(*rep));
    rep->ttl = UINT32_MAX;
    if (buf == NULL || len < HEADER_SIZE)
        return -1;
    rep->ad = dns_reply_ad(buf, len);
    qd = get16(buf + 4);
    an = get16(buf + 6);
    ns = get16(buf + 8);
    for (i = 0; i < qd; i++)
        if (skip_question(buf, len, &p) < 0)
            return -1;
    rrs = xcalloc(an, sizeof(*rrs));
    for (nan = 0; nan < an; nan++)
        if (read_rr(buf, len, &p, &rrs[nan]) < 0)
            goto bad;
    for (i = 0; i < ns; i++) {
        if (read_rr(buf, len, &p, &rr) < 0)
            goto bad;
        if (rr.type == DNS_TYPE_SOA && !rep->has_soa &&
            read_soa(buf, len, &rr, &rep->neg_ttl) == 0)
            rep->has_soa = 1;
        free(rr.owner);
    }
    last = follow_chain(buf, len, rrs, nan, qname, &chain_ttl, &bad);
    if (bad)
        goto bad;
    for (i = 0; i < nan; i++) {
        if (rrs[i].type != qtype || strcmp(rrs[i].owner, last) != 0)
            continue;
        seen = 1; /* the chain ends here, even if every record is skipped */
        if (take_record(buf, len, &rrs[i], rep) < 0)
            goto bad;
    }
    rep->ttl = min32(rep->ttl, chain_ttl);
    if (rep->count == 0 && !seen && strcmp(last, qname) != 0) {
        rep->cname = last;
        last = NULL;
    }
    if (rep->ttl == UINT32_MAX)
        rep->ttl = 0;
    free(last);
    rrs_free(rrs, nan);
    return 0;
bad:
    free(last);
    rrs_free(rrs, nan);
    dns_reply_clear(rep);
    return -1;
}

int dns_reply_ad(const unsigned char *buf, int len)
{
    return buf != NULL && len >= HEADER_SIZE && (buf[3] & 0x20) != 0;
}

void dns_reply_clear(struct dns_reply *rep)
{
    size_t i;

    for (i = 0; i < rep->count; i++) {
        if (rep->mx)
            free(rep->mx[i].name);
        if (rep->tlsa)
            free(rep->tlsa[i].data);
        if (rep->txt)
            free(rep->txt[i]);
    }
    free(rep->mx);
    free(rep->addr);
    free(rep->tlsa);
    free(rep->txt);
    free(rep->cname);
    memset(rep, 0, sizeof(*rep));
}
