/*
 * NAME
 *	query 3 - one question, answered from the cache or the wire
 * SYNOPSIS
 *	#include "dns/dns_impl.h"
 *
 *	struct dns_answer *dns_answer_new(enum dns_kind kind)
 *	struct dns_answer *dns_answer_ref(struct dns_answer *a)
 *	void	dns_answer_unref(struct dns_answer *a)
 *	void	dns_fetch(struct dns_resolver *r, const char *name, int type,
 *			struct dns_wait *w)
 * DESCRIPTION
 *	dns_fetch() looks for (name, type) in the cache. A fresh answer is
 *	lent to w->fn at once; a stale one is dropped. A pending entry
 *	(the same question is on the wire) gets w as one more waiter.
 *	Otherwise a pending entry is made and the question goes out
 *	through ares_send(): no search list, no local domain appended,
 *	as the reference asks for mail (RES_DEFNAMES and RES_DNSRCH off).
 *
 *	The question is made here, not by ares_query(), because c-ares
 *	1.18 has no option for what DNSSEC needs: ares_create_query()
 *	writes it (recursion desired, EDNS0 with a 1232-byte payload), then
 *	the AD bit is set in the header (RFC 6840, 5.7: a validating
 *	resolver then reports AD without sending the DNSSEC records) and
 *	the DO bit in the OPT record (RFC 3225, for resolvers that predate
 *	RFC 6840; the reference sets both, through RES_USE_DNSSEC and
 *	RES_TRUSTAD), and the query ID is drawn from getrandom(), as
 *	ares_query() draws it from its own generator (ares_send() takes
 *	the ID it is given). ares_query()'s work on the reply is done here
 *	too: the response code becomes the status (NXDOMAIN, no data,
 *	FORMERR). A server that answers FORMERR to a question with EDNS0
 *	is asked again without it (c-ares does this once for a channel,
 *	and then only for questions it made itself); one that answered so
 *	without an OPT record gets no EDNS0 from this resolver again.
 *
 *	When the answer comes, c-ares's status and the reply become an
 *	answer (the reference's words and DSN codes: see dns.h), the
 *	entry keeps it when it may be cached (records, null MX, NXDOMAIN,
 *	no data; a TTL above 0) or leaves the cache, and every waiter is
 *	told. A reply whose CNAME chain stops short of records sends the
 *	question again for the name where it stopped.
 *
 *	Error mapping (c-ares tries every server before giving up on
 *	SERVFAIL, REFUSED and NOTIMP, as the system resolver does, which
 *	then says TRY_AGAIN): NXDOMAIN and no data are permanent and
 *	cached; FORMERR is permanent (the reference's NO_RECOVERY) and
 *	not cached; everything else is temporary, and never cached.
 */

#include "dns/dns_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define CLASS_IN    1
#define HEADER_SIZE 12
#define HEADER_AD   0x20 /* in the fourth byte of the header */
#define OPT_SIZE    11   /* the OPT record ares_create_query() appends */
#define OPT_DO      0x80 /* in the first byte of its flags (TTL bytes 3-4) */

#define NOT_FOUND_FMT                                                          \
    "Host or domain name not found. "                                          \
    "Name service error for name=%s type=%s: %s"

struct dns_answer *dns_answer_new(enum dns_kind kind)
{
    struct dns_answer *a = xcalloc(1, sizeof(*a));

    a->refs = 1;
    a->kind = kind;
    return a;
}

struct dns_answer *dns_answer_ref(struct dns_answer *a)
{
    a->refs++;
    return a;
}

void dns_answer_unref(struct dns_answer *a)
{
    size_t i;

    if (a == NULL || --a->refs > 0)
        return;
    for (i = 0; i < a->count; i++) {
        if (a->mx)
            free(a->mx[i].name);
        if (a->tlsa)
            free(a->tlsa[i].data);
        if (a->txt)
            free(a->txt[i]);
    }
    free(a->mx);
    free(a->addr);
    free(a->tlsa);
    free(a->txt);
    free(a->why);
    free(a);
}

static uint32_t min32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

static struct dns_answer *answer_fail(enum dns_kind kind, const char *dsn,
                                      char *why)
{
    struct dns_answer *a = dns_answer_new(kind);

    a->dsn = dsn;
    a->why = why;
    return a;
}

static struct dns_answer *answer_not_found(const struct dns_entry *e,
                                           enum dns_kind kind, const char *dsn,
                                           const char *text)
{
    return answer_fail(
        kind, dsn,
        dns_xprintf(NOT_FOUND_FMT, e->qname, dns_type_name(e->type), text));
}

/* Records (or a null MX); rep gives its records up. */
static struct dns_answer *answer_data(const struct dns_entry *e,
                                      struct dns_reply *rep)
{
    struct dns_answer *a =
        dns_answer_new(rep->nullmx ? DNS_ANSWER_NULLMX : DNS_ANSWER_DATA);

    a->ttl = min32(min32(rep->ttl, e->chain_ttl), DNS_TTL_MAX);
    a->secure = rep->ad && e->chain_secure;
    a->count = rep->count;
    a->mx = rep->mx;
    a->addr = rep->addr;
    a->tlsa = rep->tlsa;
    a->txt = rep->txt;
    rep->mx = NULL;
    rep->addr = NULL;
    rep->tlsa = NULL;
    rep->txt = NULL;
    rep->count = 0;
    if (rep->nullmx) {
        a->dsn = "5.1.0";
        a->why =
            dns_xprintf("Domain %s does not accept mail (nullMX)", e->qname);
    }
    return a;
}

/* NXDOMAIN or no data, kept for the negative TTL (RFC 2308, 5). */
static struct dns_answer *answer_negative(const struct dns_entry *e,
                                          enum dns_kind kind,
                                          const struct dns_reply *rep)
{
    struct dns_answer *a = answer_not_found(
        e, kind, "5.4.4",
        kind == DNS_ANSWER_NXDOMAIN
            ? "Host not found"
            : "Host found but no data record of requested type");
    uint32_t ttl = rep->has_soa ? rep->neg_ttl : DNS_NEG_TTL;

    a->ttl = min32(min32(ttl, e->chain_ttl), DNS_NEG_TTL_MAX);
    a->secure = rep->ad && e->chain_secure;
    return a;
}

static struct dns_answer *answer_shutdown(void)
{
    return answer_fail(DNS_ANSWER_TEMP, "4.4.3", xstrdup("resolver shut down"));
}

static void entry_finish(struct dns_entry *e, struct dns_answer *a)
{
    struct dns_resolver *r = e->r;
    struct dns_wait *w = e->waiters;
    struct dns_wait *next;

    e->waiters = NULL;
    e->wtail = &e->waiters;
    if (DNS_ANSWER_CACHED(a) && a->ttl > 0) {
        e->answer = dns_answer_ref(a);
        e->expires = dns_now(r) + (int64_t)a->ttl * 1000;
        dns_cache_keep(&r->cache, e);
    } else {
        dns_cache_drop(&r->cache, e);
    }

    /*
     * A waiter may start questions that evict this entry: the answer
     * lives on by the reference it was made with until all are told.
     */
    for (; w; w = next) {
        next = w->next;
        w->fn(w, a);
    }
    dns_answer_unref(a);
}

static void query_send(struct dns_resolver *r, struct dns_entry *e);

/* What ares_query() makes of a reply's response code. */
static int reply_status(const unsigned char *abuf, int alen)
{
    if (abuf == NULL || alen < HEADER_SIZE)
        return ARES_EBADRESP;
    switch (abuf[3] & 0x0f) {
    case 0: /* NOERROR */
        return (abuf[6] | abuf[7]) ? ARES_SUCCESS : ARES_ENODATA;
    case 1:
        return ARES_EFORMERR;
    case 2:
        return ARES_ESERVFAIL;
    case 3:
        return ARES_ENOTFOUND;
    case 4:
        return ARES_ENOTIMP;
    case 5:
        return ARES_EREFUSED;
    default:
        return ARES_SUCCESS; /* as ares_query(): the reply decides */
    }
}

/* An unpredictable query ID: it is half of what stops spoofed replies. */
static unsigned short query_id(struct dns_resolver *r)
{
    unsigned short id;

    if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
        id = (unsigned short)dns_random(r);
    return id;
}

/* The reply to a query (the ares_callback). */
static void query_done(void *arg, int status, int timeouts, unsigned char *abuf,
                       int alen)
{
    struct dns_entry *e = arg;
    struct dns_reply rep;
    struct dns_answer *a;

    (void)timeouts;
    if (status == ARES_SUCCESS &&
        (status = reply_status(abuf, alen)) == ARES_EFORMERR && e->edns) {
        e->edns = 0;
        if (alen >= HEADER_SIZE && abuf[10] == 0 && abuf[11] == 0)
            e->r->no_edns = 1; /* no OPT record: EDNS0 unknown there */
        query_send(e->r, e);
        return;
    }
    switch (status) {
    case ARES_SUCCESS:
        if (dns_reply_parse(abuf, alen, e->qname, e->type, &rep) < 0) {
            a = answer_fail(DNS_ANSWER_TEMP, "4.4.3",
                            dns_xprintf("Name service error for name=%s "
                                        "type=%s: Malformed or unexpected "
                                        "name server reply",
                                        e->qname, dns_type_name(e->type)));
            break;
        }
        if (rep.count == 0 && rep.cname) {
            if (++e->hops > DNS_CHAIN_MAX) {
                a = answer_fail(
                    DNS_ANSWER_PERM, "5.4.4",
                    dns_xprintf("Name server loop for %s", e->qname));
                dns_reply_clear(&rep);
                break;
            }
            e->chain_ttl = min32(e->chain_ttl, rep.ttl);
            e->chain_secure = e->chain_secure && rep.ad;
            free(e->qname);
            e->qname = rep.cname;
            rep.cname = NULL;
            dns_reply_clear(&rep);
            query_send(e->r, e);
            return;
        }
        if (rep.count > 0)
            a = answer_data(e, &rep);
        else
            a = answer_negative(e, DNS_ANSWER_NODATA, &rep);
        dns_reply_clear(&rep);
        break;
    case ARES_ENODATA:
    case ARES_ENOTFOUND:
        if (dns_reply_parse(abuf, alen, e->qname, e->type, &rep) < 0)
            memset(&rep, 0, sizeof(rep));
        a = answer_negative(e,
                            status == ARES_ENOTFOUND ? DNS_ANSWER_NXDOMAIN
                                                     : DNS_ANSWER_NODATA,
                            &rep);
        dns_reply_clear(&rep);
        break;
    case ARES_EFORMERR:
        a = answer_not_found(e, DNS_ANSWER_PERM, "5.4.3",
                             "Non-recoverable error");
        break;
    case ARES_EDESTRUCTION:
    case ARES_ECANCELLED:
        a = answer_shutdown();
        break;
    default:
        a = answer_not_found(e, DNS_ANSWER_TEMP, "4.4.3",
                             "Host not found, try again");
        break;
    }
    entry_finish(e, a);
}

static void query_send(struct dns_resolver *r, struct dns_entry *e)
{
    unsigned char *q = NULL;
    int qlen;
    int rc;

    if (r->closing) {
        entry_finish(e, answer_shutdown());
        return;
    }
    if (r->no_edns)
        e->edns = 0;
    rc = ares_create_query(e->qname, CLASS_IN, e->type, query_id(r), 1, &q,
                           &qlen, e->edns ? DNS_EDNS_PAYLOAD : 0);
    if (rc != ARES_SUCCESS) {
        /* A name dns_name_norm() let through: no query, for good. */
        if (q)
            ares_free_string(q);
        entry_finish(e, answer_not_found(e, DNS_ANSWER_PERM, "5.4.4",
                                         "Non-recoverable error"));
        return;
    }
    q[3] |= HEADER_AD;
    if (e->edns && qlen >= HEADER_SIZE + OPT_SIZE && q[qlen - OPT_SIZE] == 0 &&
        q[qlen - OPT_SIZE + 2] == DNS_TYPE_OPT)
        q[qlen - OPT_SIZE + 7] |= OPT_DO;
    r->queries++;
    ares_send(r->channel, q, qlen, query_done, e);
    ares_free_string(q);
    dns_rearm(r);
}

void dns_fetch(struct dns_resolver *r, const char *name, int type,
               struct dns_wait *w)
{
    struct dns_entry *e = dns_cache_find(&r->cache, name, type);
    struct dns_answer *a;

    w->next = NULL;
    if (e && e->answer) {
        if (dns_now(r) < e->expires) {
            r->hits++;
            dns_cache_touch(&r->cache, e);
            a = dns_answer_ref(e->answer);
            w->fn(w, a);
            dns_answer_unref(a);
            return;
        }
        dns_cache_drop(&r->cache, e);
        e = NULL;
    }
    if (e) {
        *e->wtail = w;
        e->wtail = &w->next;
        return;
    }
    e = dns_cache_add(&r->cache, name, type);
    e->r = r;
    e->qname = xstrdup(name);
    e->chain_ttl = UINT32_MAX;
    e->chain_secure = 1;
    e->edns = 1;
    *e->wtail = w;
    e->wtail = &w->next;
    query_send(r, e);
}
