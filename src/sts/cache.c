/*
 * NAME
 *	cache 3 - policies kept in memory and in the spool
 * SYNOPSIS
 *	#include "sts/sts_impl.h"
 *
 *	void	sts_cache_init(struct sts_cache *c, struct spool *sp)
 *	void	sts_cache_clear(struct sts_cache *c)
 *	struct sts_entry *sts_cache_find(struct sts_cache *c,
 *			const char *domain)
 *	struct sts_entry *sts_cache_add(struct sts_cache *c,
 *			const char *domain)
 *	void	sts_cache_remove(struct sts_cache *c, struct sts_entry *e)
 *	void	sts_cache_set(struct sts_cache *c, struct sts_entry *e,
 *			struct sts_policy *p)
 *	void	sts_cache_drop(struct sts_cache *c, struct sts_entry *e)
 *	int	sts_cache_load(struct sts_cache *c, int64_t now,
 *			sts_log_fn *log, void *log_ctx, char *why,
 *			size_t whylen)
 *	struct sts_entry *sts_cache_next(struct sts_cache *c,
 *			size_t *slot, struct sts_entry *e)
 * DESCRIPTION
 *	RFC 8461 section 5.1 (and the pseudocode of its appendix): a
 *	policy once fetched is kept for its max_age and used while the TXT
 *	record is gone or the web server is down, which is what defeats an
 *	attacker who can only strip those. A policy that a restart forgot
 *	would open that window again, so each one is also kept in the
 *	spool's meta database under "sts:DOMAIN" as a small text record:
 *
 *	    fetched: SECONDS SINCE THE EPOCH
 *	    id: THE TXT RECORD'S ID
 *	    (a blank line)
 *	    the policy, as sts_policy_format() writes it
 *
 *	Writes go through the group commit (spool_meta_submit()): the loop
 *	never waits for a disk flush, and a write lost in a crash only
 *	costs a fetch. With no spool the cache lives in memory alone.
 *
 *	In memory, entries are in a hash table of domain names (FNV-1a),
 *	doubled when it holds more entries than slots.
 */

#include "sts/sts_impl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spool/spool.h"

#define CACHE_PREFIX "sts:"

static size_t name_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

void sts_cache_init(struct sts_cache *c, struct spool *sp)
{
    memset(c, 0, sizeof(*c));
    c->nslots = 64;
    c->slots = xcalloc(c->nslots, sizeof(*c->slots));
    c->sp = sp;
}

void sts_cache_clear(struct sts_cache *c)
{
    for (size_t i = 0; i < c->nslots; i++)
        while (c->slots[i]) {
            struct sts_entry *e = c->slots[i];

            c->slots[i] = e->next;
            sts_policy_clear(&e->policy);
            free(e);
        }
    free(c->slots);
    memset(c, 0, sizeof(*c));
}

struct sts_entry *sts_cache_find(struct sts_cache *c, const char *domain)
{
    struct sts_entry *e = c->slots[name_hash(domain) % c->nslots];

    while (e && strcmp(e->domain, domain) != 0)
        e = e->next;
    return e;
}

static void cache_grow(struct sts_cache *c)
{
    size_t n = c->nslots * 2;
    struct sts_entry **slots = xcalloc(n, sizeof(*slots));

    for (size_t i = 0; i < c->nslots; i++)
        while (c->slots[i]) {
            struct sts_entry *e = c->slots[i];
            size_t j = name_hash(e->domain) % n;

            c->slots[i] = e->next;
            e->next = slots[j];
            slots[j] = e;
        }
    free(c->slots);
    c->slots = slots;
    c->nslots = n;
}

struct sts_entry *sts_cache_add(struct sts_cache *c, const char *domain)
{
    struct sts_entry *e = xcalloc(1, sizeof(*e));
    size_t i;

    if (c->count >= c->nslots)
        cache_grow(c);
    snprintf(e->domain, sizeof(e->domain), "%s", domain);
    i = name_hash(domain) % c->nslots;
    e->next = c->slots[i];
    c->slots[i] = e;
    c->count++;
    return e;
}

void sts_cache_remove(struct sts_cache *c, struct sts_entry *e)
{
    struct sts_entry **pp = &c->slots[name_hash(e->domain) % c->nslots];

    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    if (e->policy.fetched)
        c->policies--;
    sts_policy_clear(&e->policy);
    free(e);
    c->count--;
}

struct sts_entry *sts_cache_next(struct sts_cache *c, size_t *slot,
                                 struct sts_entry *e)
{
    if (e != NULL && e->next != NULL)
        return e->next;
    if (e != NULL)
        (*slot)++;
    for (; *slot < c->nslots; (*slot)++)
        if (c->slots[*slot])
            return c->slots[*slot];
    return NULL;
}

static void record_key(char *key, size_t size, const char *domain)
{
    snprintf(key, size, CACHE_PREFIX "%s", domain);
}

void sts_cache_set(struct sts_cache *c, struct sts_entry *e,
                   struct sts_policy *p)
{
    struct util_buf b = UTIL_BUF_INIT;
    char key[sizeof(CACHE_PREFIX) + STS_NAME_MAX];

    if (!e->policy.fetched)
        c->policies++;
    sts_policy_clear(&e->policy);
    e->policy = *p;
    memset(p, 0, sizeof(*p));
    if (c->sp == NULL)
        return;
    util_buf_printf(&b, "fetched: %" PRId64 "\nid: %s\n\n", e->policy.fetched,
                    e->policy.id);
    sts_policy_format(&b, &e->policy);
    record_key(key, sizeof(key), e->domain);
    (void)spool_meta_submit(c->sp, key, b.data, b.len, NULL, NULL);
    util_buf_free(&b);
}

void sts_cache_drop(struct sts_cache *c, struct sts_entry *e)
{
    char key[sizeof(CACHE_PREFIX) + STS_NAME_MAX];

    if (!e->policy.fetched)
        return;
    sts_policy_clear(&e->policy);
    c->policies--;
    if (c->sp == NULL)
        return;
    record_key(key, sizeof(key), e->domain);
    (void)spool_meta_submit(c->sp, key, NULL, 0, NULL, NULL);
}

/* A record's header line "name: number" or "name: text": its value. */
static const char *header_value(const char *p, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(p, name, n) != 0 || p[n] != ':' || p[n + 1] != ' ')
        return NULL;
    return p + n + 2;
}

/* Decode a record (len bytes and a NUL after them) into p: 0, or -1. */
static int record_decode(const char *val, size_t len, struct sts_policy *p,
                         char *why, size_t whylen)
{
    const char *fetched, *id, *nl, *body;
    char *end;
    int64_t when;
    size_t idlen;

    if (memchr(val, 0, len) != NULL ||
        (fetched = header_value(val, "fetched")) == NULL ||
        (when = strtoll(fetched, &end, 10)) <= 0 || *end != '\n' ||
        (id = header_value(end + 1, "id")) == NULL ||
        (nl = strchr(id, '\n')) == NULL || nl[1] != '\n' ||
        (idlen = (size_t)(nl - id)) == 0 || idlen > STS_ID_MAX) {
        snprintf(why, whylen, "not a cached policy record");
        return -1;
    }
    body = nl + 2;
    if (sts_policy_parse(body, len - (size_t)(body - val), p, why, whylen) < 0)
        return -1;
    memcpy(p->id, id, idlen);
    p->id[idlen] = 0;
    p->fetched = when;
    return 0;
}

struct load {
    struct sts_cache *c;
    int64_t now;
    sts_log_fn *log;
    void *log_ctx;
    char **stale; /* keys to delete once the walk is over */
    size_t nstale;
};

static int load_one(void *ctx, const char *key, const void *val, size_t len)
{
    struct load *l = ctx;
    const char *domain = key + strlen(CACHE_PREFIX);
    struct sts_policy p;
    char why[256], line[512];
    struct sts_entry *e;
    char *text = xmalloc(len + 1); /* LMDB's bytes end without a NUL */
    int bad;

    memcpy(text, val, len);
    text[len] = 0;
    bad = !sts_name_valid(domain, strlen(domain)) ||
          record_decode(text, len, &p, why, sizeof(why)) < 0;
    free(text);
    if (bad) {
        if (l->log) {
            snprintf(line, sizeof(line),
                     "MTA-STS: cached policy %s dropped: %s", key,
                     sts_name_valid(domain, strlen(domain)) ? why
                                                            : "bad domain");
            l->log(l->log_ctx, line);
        }
    } else if (p.fetched + p.max_age <= l->now) {
        sts_policy_clear(&p);
    } else {
        if ((e = sts_cache_find(l->c, domain)) == NULL)
            e = sts_cache_add(l->c, domain);
        sts_policy_clear(&e->policy);
        e->policy = p;
        l->c->policies++;
        return 0;
    }
    l->stale = xrealloc(l->stale, (l->nstale + 1) * sizeof(*l->stale));
    l->stale[l->nstale++] = xstrdup(key);
    return 0;
}

int sts_cache_load(struct sts_cache *c, int64_t now, sts_log_fn *log,
                   void *log_ctx, char *why, size_t whylen)
{
    struct load l = {c, now, log, log_ctx, NULL, 0};
    int rc;

    if (c->sp == NULL)
        return 0;
    rc = spool_meta_list(c->sp, CACHE_PREFIX, load_one, &l, why, whylen);
    for (size_t i = 0; i < l.nstale; i++) {
        (void)spool_meta_submit(c->sp, l.stale[i], NULL, 0, NULL, NULL);
        free(l.stale[i]);
    }
    free(l.stale);
    return rc;
}
