/*
 * NAME
 *	table 3 - one reporting period's TLS session counts
 * SYNOPSIS
 *	#include "tlsrpt/tlsrpt.h"
 *
 *	struct tlsrpt_table *tlsrpt_table_create(size_t max_policies)
 *	void	tlsrpt_table_free(struct tlsrpt_table *t)
 *	int	tlsrpt_table_count(struct tlsrpt_table *t,
 *			const struct tlsrpt_policy *p,
 *			const struct tlsrpt_failure *f)
 *	long	tlsrpt_table_dropped(const struct tlsrpt_table *t)
 *	size_t	tlsrpt_table_size(const struct tlsrpt_table *t)
 *	int	tlsrpt_table_has_policy(const struct tlsrpt_table *t,
 *			const char *domain)
 *	size_t	tlsrpt_table_domains(const struct tlsrpt_table *t,
 *			char ***domains)
 *	size_t	tlsrpt_table_dirty(struct tlsrpt_table *t, char ***domains)
 *	void	tlsrpt_table_save(const struct tlsrpt_table *t,
 *			const char *domain, struct util_buf *out)
 *	int	tlsrpt_table_load(struct tlsrpt_table *t, const char *text,
 *			size_t len)
 *	void	tlsrpt_table_clear(struct tlsrpt_table *t)
 *	void	tlsrpt_strings_free(char **v, size_t n)
 * DESCRIPTION
 *	Described in tlsrpt.h. A policy is found by a hash of its domain,
 *	type and text; its failure details are a short array (at most
 *	TLSRPT_DETAILS_MAX) searched in order, since a policy sees few
 *	distinct failures in a day. Policies of the type no-policy-found
 *	take at most half of the table (max_policies / 2): every domain
 *	mailed over TLS could be one, and they must not crowd out the
 *	domains that publish a policy.
 *
 *	The line form, one domain's policies, each field escaped (%, tab
 *	and newline as %25, %09, %0A):
 *
 *	P TAB type TAB domain TAB string TAB mx TAB successes TAB failures
 *	F TAB result TAB mx_host TAB ip TAB reason TAB count TAB sending_ip
 *
 *	F lines belong to the P line before them. An F line of six fields,
 *	without sending_ip (the form before it was kept), reads as one
 *	with it empty. Counts loaded are added to those in memory.
 */

#include "tlsrpt/tlsrpt_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct tlsrpt_table *tlsrpt_table_create(size_t max_policies)
{
    struct tlsrpt_table *t = xcalloc(1, sizeof(*t));

    t->max = max_policies;
    t->hsize = 1024;
    t->hash = xcalloc(t->hsize, sizeof(*t->hash));
    return t;
}

static void entry_free(struct tlsrpt_entry *e)
{
    for (size_t i = 0; i < e->ndetails; i++) {
        free(e->details[i].mx_host);
        free(e->details[i].ip);
        free(e->details[i].reason);
        free(e->details[i].sending_ip);
    }
    free(e->details);
    free(e->domain);
    free(e->string);
    free(e->mx);
    free(e);
}

void tlsrpt_table_clear(struct tlsrpt_table *t)
{
    for (size_t i = 0; i < t->n; i++)
        entry_free(t->entries[i]);
    free(t->entries);
    t->entries = NULL;
    t->n = 0;
    t->nnone = 0;
    t->dropped = 0;
    memset(t->hash, 0, t->hsize * sizeof(*t->hash));
}

void tlsrpt_table_free(struct tlsrpt_table *t)
{
    if (t == NULL)
        return;
    tlsrpt_table_clear(t);
    free(t->hash);
    free(t);
}

static size_t entry_hash(const struct tlsrpt_policy *p, size_t size)
{
    uint32_t h = 2166136261u ^ (uint32_t)p->type;

    for (const char *s = p->domain; *s; s++)
        h = (h ^ (unsigned char)(*s | 0x20)) * 16777619u;
    for (const char *s = p->string; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h & (size - 1);
}

static struct tlsrpt_entry *entry_get(struct tlsrpt_table *t,
                                      const struct tlsrpt_policy *p)
{
    size_t h = entry_hash(p, t->hsize);
    struct tlsrpt_entry *e;

    for (e = t->hash[h]; e; e = e->hnext)
        if (e->type == p->type && strcasecmp(e->domain, p->domain) == 0 &&
            strcmp(e->string, p->string) == 0)
            return e;
    if (t->n >= t->max ||
        (p->type == TLSRPT_POLICY_NONE && t->nnone >= t->max / 2))
        return NULL;
    if (p->type == TLSRPT_POLICY_NONE)
        t->nnone++;
    e = xcalloc(1, sizeof(*e));
    e->type = p->type;
    e->domain = xstrdup(p->domain);
    for (char *c = e->domain; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    e->string = xstrdup(p->string);
    e->mx = xstrdup(p->mx ? p->mx : "");
    e->hnext = t->hash[h];
    t->hash[h] = e;
    t->entries = xrealloc(t->entries, (t->n + 1) * sizeof(*t->entries));
    t->entries[t->n++] = e;
    return e;
}

static int same(const char *a, const char *b)
{
    return strcmp(a, b ? b : "") == 0;
}

/* Add count to f's detail of e; -1 when a new one does not fit. */
static int detail_add(struct tlsrpt_entry *e, const struct tlsrpt_failure *f,
                      long count)
{
    struct tlsrpt_detail *d;

    for (size_t i = 0; i < e->ndetails; i++) {
        d = &e->details[i];
        if (d->result == f->result && same(d->mx_host, f->mx_host) &&
            same(d->ip, f->ip) && same(d->reason, f->reason) &&
            same(d->sending_ip, f->sending_ip)) {
            d->count += count;
            return 0;
        }
    }
    if (e->ndetails >= TLSRPT_DETAILS_MAX)
        return -1;
    e->details = xrealloc(e->details, (e->ndetails + 1) * sizeof(*e->details));
    d = &e->details[e->ndetails++];
    d->result = f->result;
    d->mx_host = xstrdup(f->mx_host ? f->mx_host : "");
    d->ip = xstrdup(f->ip ? f->ip : "");
    d->reason = xstrdup(f->reason ? f->reason : "");
    d->sending_ip = xstrdup(f->sending_ip ? f->sending_ip : "");
    d->count = count;
    return 0;
}

static int count_add(struct tlsrpt_table *t, const struct tlsrpt_policy *p,
                     const struct tlsrpt_failure *f, long count)
{
    struct tlsrpt_entry *e = entry_get(t, p);

    if (e == NULL) {
        t->dropped += count;
        return -1;
    }
    e->dirty = 1;
    if (f == NULL) {
        e->success += count;
        return 0;
    }
    e->failure += count;
    if (detail_add(e, f, count) < 0) {
        t->dropped += count;
        return -1;
    }
    return 0;
}

int tlsrpt_table_count(struct tlsrpt_table *t, const struct tlsrpt_policy *p,
                       const struct tlsrpt_failure *f)
{
    return count_add(t, p, f, 1);
}

long tlsrpt_table_dropped(const struct tlsrpt_table *t)
{
    return t->dropped;
}

size_t tlsrpt_table_size(const struct tlsrpt_table *t)
{
    return t->n;
}

int tlsrpt_table_has_policy(const struct tlsrpt_table *t, const char *domain)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->entries[i]->type != TLSRPT_POLICY_NONE &&
            strcasecmp(t->entries[i]->domain, domain) == 0)
            return 1;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The distinct domains of the entries (all, or the dirty ones). */
static size_t domains_of(struct tlsrpt_table *t, int dirty, char ***out)
{
    char **v = xcalloc(t->n + 1, sizeof(*v));
    size_t n = 0, k = 0;

    for (size_t i = 0; i < t->n; i++) {
        if (dirty && !t->entries[i]->dirty)
            continue;
        v[n++] = t->entries[i]->domain;
    }
    qsort(v, n, sizeof(*v), cmp_str);
    for (size_t i = 0; i < n; i++)
        if (k == 0 || strcmp(v[k - 1], v[i]) != 0)
            v[k++] = v[i];
    for (size_t i = 0; i < k; i++)
        v[i] = xstrdup(v[i]);
    if (dirty)
        for (size_t i = 0; i < t->n; i++)
            t->entries[i]->dirty = 0;
    *out = v;
    return k;
}

size_t tlsrpt_table_domains(const struct tlsrpt_table *t, char ***domains)
{
    return domains_of((struct tlsrpt_table *)t, 0, domains);
}

size_t tlsrpt_table_dirty(struct tlsrpt_table *t, char ***domains)
{
    return domains_of(t, 1, domains);
}

void tlsrpt_strings_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void put_escaped(struct util_buf *b, const char *s)
{
    util_buf_puts(b, "\t");
    for (; *s; s++) {
        if (*s == '%')
            util_buf_puts(b, "%25");
        else if (*s == '\t')
            util_buf_puts(b, "%09");
        else if (*s == '\n')
            util_buf_puts(b, "%0A");
        else if (*s == '\r')
            util_buf_puts(b, "%0D");
        else
            util_buf_add(b, s, 1);
    }
}

void tlsrpt_table_save(const struct tlsrpt_table *t, const char *domain,
                       struct util_buf *out)
{
    for (size_t i = 0; i < t->n; i++) {
        const struct tlsrpt_entry *e = t->entries[i];

        if (strcasecmp(e->domain, domain) != 0)
            continue;
        util_buf_printf(out, "P\t%d", (int)e->type);
        put_escaped(out, e->domain);
        put_escaped(out, e->string);
        put_escaped(out, e->mx);
        util_buf_printf(out, "\t%ld\t%ld\n", e->success, e->failure);
        for (size_t k = 0; k < e->ndetails; k++) {
            const struct tlsrpt_detail *d = &e->details[k];

            util_buf_printf(out, "F\t%d", (int)d->result);
            put_escaped(out, d->mx_host);
            put_escaped(out, d->ip);
            put_escaped(out, d->reason);
            util_buf_printf(out, "\t%ld", d->count);
            put_escaped(out, d->sending_ip);
            util_buf_puts(out, "\n");
        }
    }
}

/* Unescape s in place; -1 on a bad escape. */
static int unescape(char *s)
{
    char *w = s;

    for (; *s; s++) {
        if (*s != '%') {
            *w++ = *s;
            continue;
        }
        if (strncmp(s, "%25", 3) == 0)
            *w++ = '%';
        else if (strncmp(s, "%09", 3) == 0)
            *w++ = '\t';
        else if (strncmp(s, "%0A", 3) == 0)
            *w++ = '\n';
        else if (strncmp(s, "%0D", 3) == 0)
            *w++ = '\r';
        else
            return -1;
        s += 2;
    }
    *w = 0;
    return 0;
}

/* Split line at tabs into at most n fields; how many, or -1. */
static int fields(char *line, char **f, size_t n)
{
    size_t k = 0;

    for (char *p = line;; p++) {
        if (k == n)
            return -1;
        f[k++] = p;
        p += strcspn(p, "\t");
        if (*p == 0)
            break;
        *p = 0;
    }
    for (size_t i = 1; i < k; i++)
        if (unescape(f[i]) < 0)
            return -1;
    return (int)k;
}

static int number(const char *s, long max, long *out)
{
    char *end;

    if (*s < '0' || *s > '9')
        return -1;
    *out = strtol(s, &end, 10);
    return *end == 0 && *out >= 0 && *out <= max ? 0 : -1;
}

/* One line of the line form, checked; added when add is set. */
static int load_line(struct tlsrpt_table *t, char *line, int add,
                     struct tlsrpt_policy *p, char **held)
{
    char *f[7];
    long type, a, b;
    int nf = fields(line, f, 7);

    if (line[0] == 'P' && nf == 7 &&
        number(f[1], TLSRPT_POLICY_NONE, &type) == 0 &&
        number(f[5], 1L << 40, &a) == 0 && number(f[6], 1L << 40, &b) == 0 &&
        f[2][0] != 0) {
        free(held[0]);
        held[0] = xstrdup(f[2]);
        free(held[1]);
        held[1] = xstrdup(f[3]);
        free(held[2]);
        held[2] = xstrdup(f[4]);
        p->type = (enum tlsrpt_policy_type)type;
        p->domain = held[0];
        p->string = held[1];
        p->mx = held[2];
        if (add) {
            struct tlsrpt_entry *e = entry_get(t, p);

            if (e == NULL) {
                t->dropped += a + b;
            } else {
                e->dirty = 1;
                e->success += a;
                e->failure += b; /* the F lines add their details */
            }
        }
        return 0;
    }
    /* six fields: the form before sending_ip */
    if (line[0] == 'F' && p->domain != NULL && (nf == 6 || nf == 7) &&
        number(f[1], TLSRPT_RESULT_COUNT - 1, &type) == 0 &&
        number(f[5], 1L << 40, &a) == 0) {
        struct tlsrpt_failure fl = {(enum tlsrpt_result)type, f[2], f[3], f[4],
                                    nf == 7 ? f[6] : ""};

        struct tlsrpt_entry *e = add ? entry_get(t, p) : NULL;

        if (e && detail_add(e, &fl, a) < 0)
            t->dropped += a;
        return 0;
    }
    return -1;
}

/* Run the lines of text through load_line(); -1 at the first bad one. */
static int load_pass(struct tlsrpt_table *t, const char *text, size_t len,
                     int add)
{
    char *copy = xstrndup(text, len), *line, *next;
    struct tlsrpt_policy p = {0};
    char *held[3] = {NULL, NULL, NULL};
    int rc = 0;

    for (line = copy; rc == 0 && *line; line = next) {
        next = line + strcspn(line, "\n");
        if (*next)
            *next++ = 0;
        if (*line)
            rc = load_line(t, line, add, &p, held);
    }
    for (size_t i = 0; i < 3; i++)
        free(held[i]);
    free(copy);
    return rc;
}

int tlsrpt_table_load(struct tlsrpt_table *t, const char *text, size_t len)
{
    if (load_pass(t, text, len, 0) < 0)
        return -1;
    return load_pass(t, text, len, 1);
}
