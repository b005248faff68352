/*
 * NAME
 *	lookup 3 - where mail for a domain goes: MX, then addresses; TLSA
 *	and TXT records
 * SYNOPSIS
 *	#include "dns/dns.h"
 *
 *	int	dns_lookup_mx(struct dns_resolver *r, const char *domain,
 *			dns_done_fn *done, void *ctx)
 *	int	dns_lookup_host(struct dns_resolver *r, const char *host,
 *			dns_done_fn *done, void *ctx)
 *	void	dns_result_free(struct dns_result *res)
 *	int	dns_lookup_tlsa(struct dns_resolver *r, const char *host,
 *			int port, dns_tlsa_fn *done, void *ctx)
 *	int	dns_lookup_txt(struct dns_resolver *r, const char *name,
 *			dns_txt_fn *done, void *ctx)
 *
 *	#include "dns/dns_impl.h"
 *
 *	void	dns_lookups_abort(struct dns_resolver *r)
 *	void	dns_lookups_deliver(struct dns_resolver *r)
 * DESCRIPTION
 *	A lookup is a small state machine: LOOKUP_MX waits for the MX
 *	answer, LOOKUP_ADDR for the A and AAAA answers of every exchanger
 *	(all asked at once: the slowest answer, not the sum, is the
 *	wait), LOOKUP_RECORD for the one answer of a TLSA or TXT lookup,
 *	(PTR too, for peer.c), LOOKUP_DONE holds the result until the loop delivers it.
 *	pending counts the answers awaited; it is held one higher while
 *	questions are being asked, because an answer from the cache
 *	comes back before dns_fetch() returns, and the lookup must not
 *	move on before it has asked everything.
 *
 *	The order of the exchangers is decided when the MX answer comes:
 *	each gets a random key, and they are sorted by (preference, key),
 *	a shuffle within each preference; a cached MX answer is shuffled
 *	anew for every lookup. Duplicates are merged first (a name listed
 *	twice keeps its best preference) and only the best DNS_MAX_HOSTS
 *	are kept, so that a hostile MX list cannot make thousands of
 *	queries.
 *
 *	DNSSEC is a matter of and-ing: a host is secure when both its
 *	address answers are, an implicit MX when the no-data MX answer and
 *	the domain's address answers are. A host named by an address was
 *	never looked up, so it is never secure.
 *
 *	Every result reaches its callback through an event made active
 *	on the loop (event_active(): the next turn, no timer), never from
 *	inside dns_lookup_mx() or dns_lookup_host(). The lookup is freed
 *	before its callback runs, so the callback may do anything,
 *	dns_free() included.
 */

#include "dns/dns_impl.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum lookup_state {
    LOOKUP_MX,
    LOOKUP_ADDR,
    LOOKUP_RECORD,
    LOOKUP_DONE,
};

enum lookup_kind {
    LOOKUP_KIND_MX, /* dns_lookup_mx() and dns_lookup_host() */
    LOOKUP_KIND_TLSA,
    LOOKUP_KIND_TXT,
    LOOKUP_KIND_PTR, /* a TXT result holding the names */
};

struct lookup_host;

struct host_wait {
    struct dns_wait w; /* first: the answer comes to &w */
    struct lookup_host *h;
    int i; /* 0: A, 1: AAAA */
};

struct lookup_host {
    struct dns_lookup *l;
    char *name;
    int pref;
    uint32_t key;
    int literal;          /* named by an address: addr */
    int invalid;          /* not a host name */
    struct dns_addr addr; /* when literal */
    struct dns_answer *ans[2];
    struct host_wait wait[2];
};

struct dns_lookup {
    struct dns_resolver *r;
    struct dns_lookup *prev, *next; /* r's lookups not yet delivered */
    char *asked;                    /* as the caller wrote it */
    char name[DNS_NAME_MAX + 1];    /* normalized */
    enum lookup_kind kind;
    dns_done_fn *done;
    dns_tlsa_fn *tlsa_done;
    dns_txt_fn *txt_done;
    void *ctx;
    enum lookup_state state;
    int pending;
    struct dns_wait mxwait;
    struct dns_answer *mx;
    int implicit;
    size_t nhost;
    struct lookup_host *host;
    struct dns_wait recwait;          /* TLSA or TXT */
    struct dns_answer *rec;           /* its answer */
    struct dns_result *res;           /* when LOOKUP_DONE: one of */
    struct dns_tlsa_result *tlsa_res; /* these three */
    struct dns_txt_result *txt_res;
    struct event *ev; /* delivers it */
};

static const int addr_types[2] = {DNS_TYPE_A, DNS_TYPE_AAAA};

static void lookup_step(struct dns_lookup *l);

static struct dns_lookup *lookup_new(struct dns_resolver *r, const char *asked,
                                     enum lookup_kind kind, void *ctx)
{
    struct dns_lookup *l = xcalloc(1, sizeof(*l));

    l->r = r;
    l->asked = xstrdup(asked);
    l->kind = kind;
    l->ctx = ctx;
    /* Appended, so that dns_free() delivers in the order of asking. */
    l->prev = r->last;
    if (r->last)
        r->last->next = l;
    else
        r->first = l;
    r->last = l;
    r->lookups++;
    return l;
}

static void lookup_free(struct dns_lookup *l)
{
    size_t i;
    int j;

    for (i = 0; i < l->nhost; i++) {
        free(l->host[i].name);
        for (j = 0; j < 2; j++)
            dns_answer_unref(l->host[i].ans[j]);
    }
    free(l->host);
    dns_answer_unref(l->mx);
    dns_answer_unref(l->rec);
    if (l->ev)
        event_free(l->ev);
    free(l->asked);
    free(l);
}

/* Unlink l, free it, then call its callback. */
static void lookup_fire(struct dns_lookup *l)
{
    struct dns_resolver *r = l->r;
    struct dns_result *res = l->res;
    struct dns_tlsa_result *tlsa_res = l->tlsa_res;
    struct dns_txt_result *txt_res = l->txt_res;
    dns_done_fn *done = l->done;
    dns_tlsa_fn *tlsa_done = l->tlsa_done;
    dns_txt_fn *txt_done = l->txt_done;
    void *ctx = l->ctx;

    if (l->prev)
        l->prev->next = l->next;
    else
        r->first = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        r->last = l->prev;
    lookup_free(l);
    if (tlsa_res)
        tlsa_done(ctx, tlsa_res);
    else if (txt_res)
        txt_done(ctx, txt_res);
    else
        done(ctx, res);
}

static void lookup_deliver(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    lookup_fire(arg);
}

/* The result is known: deliver it on the next turn of the loop. */
static void lookup_finish(struct dns_lookup *l)
{
    l->state = LOOKUP_DONE;
    if (l->r->closing)
        return; /* dns_free() delivers */
    if ((l->ev = event_new(l->r->base, -1, 0, lookup_deliver, l)) == NULL)
        dns_panic("cannot make an event for the lookup of %s", l->asked);
    event_active(l->ev, EV_TIMEOUT, 1);
}

static struct dns_result *result_new(const struct dns_lookup *l,
                                     enum dns_status status, const char *why,
                                     const char *dsn)
{
    struct dns_result *res = xcalloc(1, sizeof(*res));

    res->status = status;
    res->name = xstrdup(l->asked);
    res->why = xstrdup(why ? why : "");
    if (status != DNS_OK)
        snprintf(res->dsn, sizeof(res->dsn), "%s", dsn);
    res->implicit_mx = l->implicit;
    return res;
}

static void lookup_fail(struct dns_lookup *l, enum dns_status status,
                        const char *why, const char *dsn)
{
    switch (l->kind) {
    case LOOKUP_KIND_TLSA:
        l->tlsa_res = dns_tlsa_result_new(l->asked, status, why, dsn);
        break;
    case LOOKUP_KIND_TXT:
    case LOOKUP_KIND_PTR:
        l->txt_res = dns_txt_result_new(l->asked, status, why, dsn);
        break;
    default:
        l->res = result_new(l, status, why, dsn);
        break;
    }
    lookup_finish(l);
}

static void lookup_release(struct dns_lookup *l)
{
    if (--l->pending == 0)
        lookup_step(l);
}

static void mx_answer(struct dns_wait *w, struct dns_answer *a)
{
    struct dns_lookup *l =
        (struct dns_lookup *)((char *)w - offsetof(struct dns_lookup, mxwait));

    l->mx = dns_answer_ref(a);
    lookup_release(l);
}

static void record_answer(struct dns_wait *w, struct dns_answer *a)
{
    struct dns_lookup *l =
        (struct dns_lookup *)((char *)w - offsetof(struct dns_lookup, recwait));

    l->rec = dns_answer_ref(a);
    lookup_release(l);
}

static void host_answer(struct dns_wait *w, struct dns_answer *a)
{
    struct host_wait *hw = (struct host_wait *)w;

    hw->h->ans[hw->i] = dns_answer_ref(a);
    lookup_release(hw->h->l);
}

/* Ask for the addresses of every exchanger that has a name. */
static void lookup_ask_addresses(struct dns_lookup *l)
{
    size_t i;
    int j;

    l->state = LOOKUP_ADDR;
    l->pending++;
    for (i = 0; i < l->nhost; i++) {
        struct lookup_host *h = &l->host[i];

        h->l = l;
        if (h->literal || h->invalid)
            continue;
        for (j = 0; j < 2; j++) {
            h->wait[j].w.fn = host_answer;
            h->wait[j].h = h;
            h->wait[j].i = j;
            l->pending++;
            dns_fetch(l->r, h->name, addr_types[j], &h->wait[j].w);
        }
    }
    lookup_release(l);
}

static void host_init(struct lookup_host *h, const char *name, int pref)
{
    char norm[DNS_NAME_MAX + 1];

    h->pref = pref;
    if (dns_literal(name, &h->addr)) {
        h->literal = 1;
        h->name = xstrdup(h->addr.text);
    } else if (dns_name_norm(name, norm) < 0) {
        h->invalid = 1;
        h->name = xstrdup(name);
    } else {
        h->name = xstrdup(norm);
    }
}

static int mx_by_name(const void *a, const void *b)
{
    const struct dns_mx *x = a;
    const struct dns_mx *y = b;
    int c = strcmp(x->name, y->name);

    return c ? c : (x->pref > y->pref) - (x->pref < y->pref);
}

static int host_by_order(const void *a, const void *b)
{
    const struct lookup_host *x = a;
    const struct lookup_host *y = b;

    if (x->pref != y->pref)
        return x->pref < y->pref ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

/* The exchangers of an MX answer, merged, ordered, at most the best few. */
static void hosts_from_mx(struct dns_lookup *l, const struct dns_answer *a)
{
    struct dns_mx *mx = xcalloc(a->count, sizeof(*mx));
    size_t n = 0;
    size_t i;

    /*
     * Keys are drawn in name order, not in the order received, so that a
     * seed fixes the outcome whatever order the server chose.
     */
    memcpy(mx, a->mx, a->count * sizeof(*mx));
    qsort(mx, a->count, sizeof(*mx), mx_by_name);
    l->host = xcalloc(a->count, sizeof(*l->host));
    for (i = 0; i < a->count; i++) {
        if (i > 0 && strcmp(mx[i].name, mx[i - 1].name) == 0)
            continue;
        host_init(&l->host[n], mx[i].name, mx[i].pref);
        n++;
    }
    for (i = 0; i < n; i++)
        l->host[i].key = dns_random(l->r);
    qsort(l->host, n, sizeof(*l->host), host_by_order);
    while (n > DNS_MAX_HOSTS)
        free(l->host[--n].name);
    l->nhost = n;
    free(mx);
}

static void lookup_mx_answered(struct dns_lookup *l)
{
    struct dns_answer *a = l->mx;
    char *why;

    switch (a->kind) {
    case DNS_ANSWER_DATA:
        hosts_from_mx(l, a);
        break;
    case DNS_ANSWER_NODATA:
        /* RFC 5321, 5.1: the domain is its own exchanger. */
        l->implicit = 1;
        l->host = xcalloc(1, sizeof(*l->host));
        host_init(&l->host[0], l->name, 0);
        l->nhost = 1;
        break;
    case DNS_ANSWER_NULLMX:
        why = dns_xprintf("Domain %s does not accept mail (nullMX)", l->name);
        lookup_fail(l, DNS_PERMFAIL, why, a->dsn);
        l->res->secure = a->secure;
        free(why);
        return;
    case DNS_ANSWER_TEMP:
        lookup_fail(l, DNS_TEMPFAIL, a->why, a->dsn);
        return;
    default:
        lookup_fail(l, DNS_PERMFAIL, a->why, a->dsn);
        l->res->secure = a->kind == DNS_ANSWER_NXDOMAIN && a->secure;
        return;
    }
    lookup_ask_addresses(l);
}

static size_t host_addr_count(const struct lookup_host *h)
{
    size_t n = 0;
    int j;

    if (h->literal)
        return 1;
    if (h->invalid)
        return 0;
    for (j = 0; j < 2; j++)
        if (h->ans[j]->kind == DNS_ANSWER_DATA)
            n += h->ans[j]->count;
    return n;
}

static void host_copy(struct dns_host *out, const struct lookup_host *h,
                      size_t naddr)
{
    size_t n = 0;
    int j;

    out->name = xstrdup(h->name);
    out->pref = h->pref;
    out->secure = !h->literal && h->ans[0]->secure && h->ans[1]->secure;
    out->naddr = naddr;
    out->addr = xcalloc(naddr, sizeof(*out->addr));
    if (h->literal) {
        out->addr[0] = h->addr;
        return;
    }
    for (j = 0; j < 2; j++) {
        if (h->ans[j]->kind != DNS_ANSWER_DATA)
            continue;
        memcpy(out->addr + n, h->ans[j]->addr,
               h->ans[j]->count * sizeof(*out->addr));
        n += h->ans[j]->count;
    }
}

/* Why a host without addresses has none; the answer that says it. */
static const struct dns_answer *host_failure(const struct lookup_host *h)
{
    if (h->ans[1]->kind == DNS_ANSWER_TEMP &&
        h->ans[0]->kind != DNS_ANSWER_TEMP)
        return h->ans[1];
    return h->ans[0];
}

/*
 * An MX lookup's result is as secure as its MX answer, an implicit MX's
 * also needs the domain's address answers; a host lookup's is its host's.
 */
static int result_secure(const struct dns_lookup *l,
                         const struct dns_result *res)
{
    if (l->mx == NULL) /* dns_lookup_host() */
        return res->host[0].secure;
    if (l->implicit)
        return l->mx->secure && res->host[0].secure;
    return l->mx->secure;
}

/*
 * Every answer is in: the hosts with addresses make the result. When
 * none has any, a temporary failure outweighs permanent ones (the
 * reference keeps a soft error over hard ones), and the first host in
 * order gives the reason.
 */
static void lookup_assemble(struct dns_lookup *l)
{
    struct dns_result *res;
    const struct dns_answer *temp = NULL;
    const struct dns_answer *perm = NULL;
    const char *invalid = NULL;
    size_t i, n;
    char *why;

    res = result_new(l, DNS_OK, NULL, NULL);
    res->host = xcalloc(l->nhost, sizeof(*res->host));
    for (i = 0; i < l->nhost; i++) {
        const struct lookup_host *h = &l->host[i];
        const struct dns_answer *a;

        if ((n = host_addr_count(h)) > 0) {
            host_copy(&res->host[res->nhost++], h, n);
        } else if (h->invalid) {
            if (!perm && !invalid)
                invalid = h->name;
        } else if ((a = host_failure(h))->kind == DNS_ANSWER_TEMP) {
            if (!temp)
                temp = a;
        } else if (!perm && !invalid) {
            perm = a;
        }
    }
    if (res->nhost > 0) {
        res->secure = result_secure(l, res);
        l->res = res;
        lookup_finish(l);
        return;
    }
    dns_result_free(res);
    if (temp) {
        lookup_fail(l, DNS_TEMPFAIL, temp->why, temp->dsn);
    } else if (perm) {
        lookup_fail(l, DNS_PERMFAIL, perm->why, perm->dsn);
    } else {
        why = dns_xprintf("Name service error for %s: invalid host or "
                          "domain name",
                          invalid ? invalid : l->name);
        lookup_fail(l, DNS_PERMFAIL, why, "5.4.4");
        free(why);
    }
}

/* The answer to a TLSA or TXT question is the result. */
static void lookup_record_answered(struct dns_lookup *l)
{
    if (l->kind == LOOKUP_KIND_TLSA)
        l->tlsa_res = dns_tlsa_result_make(l->asked, l->rec);
    else
        l->txt_res = dns_txt_result_make(l->asked, l->rec);
    lookup_finish(l);
}

static void lookup_step(struct dns_lookup *l)
{
    if (l->state == LOOKUP_DONE)
        return; /* aborted: answers still coming are only kept */
    if (l->state == LOOKUP_MX)
        lookup_mx_answered(l);
    else if (l->state == LOOKUP_RECORD)
        lookup_record_answered(l);
    else
        lookup_assemble(l);
}

static void lookup_invalid(struct dns_lookup *l)
{
    char *why = dns_xprintf("Name service error for %s: invalid host or "
                            "domain name",
                            l->asked);

    lookup_fail(l, DNS_PERMFAIL, why, "5.4.4");
    free(why);
}

int dns_lookup_mx(struct dns_resolver *r, const char *domain, dns_done_fn *done,
                  void *ctx)
{
    struct dns_lookup *l;

    if (r->closing)
        return -1;
    l = lookup_new(r, domain, LOOKUP_KIND_MX, ctx);
    l->done = done;
    if (dns_name_norm(domain, l->name) < 0) {
        lookup_invalid(l);
        return 0;
    }
    l->state = LOOKUP_MX;
    l->mxwait.fn = mx_answer;
    l->pending = 2; /* the answer, and this call */
    dns_fetch(r, l->name, DNS_TYPE_MX, &l->mxwait);
    lookup_release(l);
    return 0;
}

int dns_lookup_host(struct dns_resolver *r, const char *host, dns_done_fn *done,
                    void *ctx)
{
    struct dns_lookup *l;
    char buf[DNS_NAME_MAX + 3];
    size_t len = strlen(host);
    const char *name = host;

    if (r->closing)
        return -1;
    l = lookup_new(r, host, LOOKUP_KIND_MX, ctx);
    l->done = done;
    l->host = xcalloc(1, sizeof(*l->host));
    l->nhost = 1;
    if (dns_literal(host, &l->host[0].addr)) {
        l->host[0].literal = 1;
        l->host[0].name = xstrdup(l->host[0].addr.text);
        lookup_ask_addresses(l);
        return 0;
    }
    if (len >= 2 && host[0] == '[' && host[len - 1] == ']' &&
        len - 2 < sizeof(buf)) {
        memcpy(buf, host + 1, len - 2);
        buf[len - 2] = 0;
        name = buf;
    }
    if (dns_name_norm(name, l->name) < 0) {
        l->nhost = 0;
        lookup_invalid(l);
        return 0;
    }
    l->host[0].name = xstrdup(l->name);
    lookup_ask_addresses(l);
    return 0;
}

void dns_result_free(struct dns_result *res)
{
    size_t i;

    if (res == NULL)
        return;
    for (i = 0; i < res->nhost; i++) {
        free(res->host[i].name);
        free(res->host[i].addr);
    }
    free(res->host);
    free(res->name);
    free(res->why);
    free(res);
}

/* Ask the one question of a TLSA or TXT lookup. */
static void lookup_ask_record(struct dns_lookup *l, int type)
{
    l->state = LOOKUP_RECORD;
    l->recwait.fn = record_answer;
    l->pending = 2; /* the answer, and this call */
    dns_fetch(l->r, l->name, type, &l->recwait);
    lookup_release(l);
}

int dns_lookup_tlsa(struct dns_resolver *r, const char *host, int port,
                    dns_tlsa_fn *done, void *ctx)
{
    struct dns_lookup *l;
    char norm[DNS_NAME_MAX + 1];
    char *asked;
    int ok;

    if (r->closing)
        return -1;
    ok = port >= 0 && port <= 65535 && dns_name_norm(host, norm) == 0;
    asked = dns_xprintf("_%d._tcp.%s", port, ok ? norm : host);
    l = lookup_new(r, asked, LOOKUP_KIND_TLSA, ctx);
    free(asked);
    l->tlsa_done = done;
    /* RFC 6698, 3: the name is _PORT._tcp. and the server's name. */
    if (!ok || dns_name_norm(l->asked, l->name) < 0) {
        lookup_invalid(l);
        return 0;
    }
    lookup_ask_record(l, DNS_TYPE_TLSA);
    return 0;
}

int dns_lookup_txt(struct dns_resolver *r, const char *name, dns_txt_fn *done,
                   void *ctx)
{
    struct dns_lookup *l;

    if (r->closing)
        return -1;
    l = lookup_new(r, name, LOOKUP_KIND_TXT, ctx);
    l->txt_done = done;
    if (dns_name_norm(name, l->name) < 0) {
        lookup_invalid(l);
        return 0;
    }
    lookup_ask_record(l, DNS_TYPE_TXT);
    return 0;
}

int dns_lookup_ptr(struct dns_resolver *r, const char *name, dns_txt_fn *done,
                   void *ctx)
{
    struct dns_lookup *l;

    if (r->closing)
        return -1;
    l = lookup_new(r, name, LOOKUP_KIND_PTR, ctx);
    l->txt_done = done;
    if (dns_name_norm(name, l->name) < 0) {
        lookup_invalid(l);
        return 0;
    }
    lookup_ask_record(l, DNS_TYPE_PTR);
    return 0;
}

void dns_lookups_abort(struct dns_resolver *r)
{
    struct dns_lookup *l;

    for (l = r->first; l; l = l->next)
        if (l->state != LOOKUP_DONE)
            lookup_fail(l, DNS_TEMPFAIL, "resolver shut down", "4.4.3");
}

void dns_lookups_deliver(struct dns_resolver *r)
{
    struct dns_lookup *l;

    while ((l = r->first) != NULL) {
        if (l->state != LOOKUP_DONE || l->pending != 0)
            dns_panic("lookup of %s still busy at shutdown (pending %d)",
                      l->asked, l->pending);
        lookup_fire(l);
    }
}
