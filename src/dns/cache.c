/*
 * NAME
 *	cache 3 - answers by name and record type, least recently used out
 * SYNOPSIS
 *	#include "dns/dns_impl.h"
 *
 *	void	dns_cache_init(struct dns_cache *c, size_t max)
 *	void	dns_cache_clear(struct dns_cache *c)
 *	struct dns_entry *dns_cache_find(struct dns_cache *c,
 *			const char *name, int type)
 *	struct dns_entry *dns_cache_add(struct dns_cache *c, const char *name,
 *			int type)
 *	void	dns_cache_keep(struct dns_cache *c, struct dns_entry *e)
 *	void	dns_cache_touch(struct dns_cache *c, struct dns_entry *e)
 *	void	dns_cache_drop(struct dns_cache *c, struct dns_entry *e)
 * DESCRIPTION
 *	A chained hash table (FNV-1a of the name and the type; the bucket
 *	count doubles when entries outnumber buckets, so chains stay short)
 *	and a list of the done entries in order of use. Expiry is not
 *	this file's business: query.c compares an entry's expiry with the
 *	clock when it finds one and drops it when it is stale, and stale
 *	entries nobody asks for again drift to the old end of the list
 *	and are evicted first. Names are lower case, so comparison is
 *	exact.
 */

#include "dns/dns_impl.h"

#include <stdlib.h>
#include <string.h>

static uint32_t cache_hash(const char *name, int type)
{
    uint32_t h = 2166136261u;

    while (*name) {
        h ^= (unsigned char)*name++;
        h *= 16777619u;
    }
    h ^= (uint32_t)type;
    h *= 16777619u;
    return h;
}

void dns_cache_init(struct dns_cache *c, size_t max)
{
    memset(c, 0, sizeof(*c));
    c->max = max ? max : DNS_CACHE_DEFAULT;
    c->nbucket = 64;
    c->bucket = xcalloc(c->nbucket, sizeof(*c->bucket));
}

static void entry_free(struct dns_entry *e)
{
    if (e->answer)
        dns_answer_unref(e->answer);
    free(e->name);
    free(e->qname);
    free(e);
}

void dns_cache_clear(struct dns_cache *c)
{
    size_t i;
    struct dns_entry *e;
    struct dns_entry *next;

    for (i = 0; i < c->nbucket; i++) {
        for (e = c->bucket[i]; e; e = next) {
            next = e->hnext;
            if (e->waiters)
                dns_panic("cache clear: %s/%s still has waiters", e->name,
                          dns_type_name(e->type));
            entry_free(e);
        }
    }
    free(c->bucket);
    memset(c, 0, sizeof(*c));
}

struct dns_entry *dns_cache_find(struct dns_cache *c, const char *name,
                                 int type)
{
    uint32_t h = cache_hash(name, type);
    struct dns_entry *e;

    for (e = c->bucket[h & (c->nbucket - 1)]; e; e = e->hnext)
        if (e->hash == h && e->type == type && strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

static void cache_grow(struct dns_cache *c)
{
    size_t n = c->nbucket * 2;
    struct dns_entry **b = xcalloc(n, sizeof(*b));
    struct dns_entry *e;
    struct dns_entry *next;
    size_t i;

    for (i = 0; i < c->nbucket; i++) {
        for (e = c->bucket[i]; e; e = next) {
            next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
        }
    }
    free(c->bucket);
    c->bucket = b;
    c->nbucket = n;
}

struct dns_entry *dns_cache_add(struct dns_cache *c, const char *name, int type)
{
    struct dns_entry *e = xcalloc(1, sizeof(*e));
    struct dns_entry **head;

    e->name = xstrdup(name);
    e->type = type;
    e->hash = cache_hash(name, type);
    e->wtail = &e->waiters;
    if (c->count >= c->nbucket)
        cache_grow(c);
    head = &c->bucket[e->hash & (c->nbucket - 1)];
    e->hnext = *head;
    *head = e;
    c->count++;
    return e;
}

static void lru_unlink(struct dns_cache *c, struct dns_entry *e)
{
    if (e->older)
        e->older->newer = e->newer;
    else
        c->oldest = e->newer;
    if (e->newer)
        e->newer->older = e->older;
    else
        c->newest = e->older;
    e->older = e->newer = NULL;
}

static void lru_append(struct dns_cache *c, struct dns_entry *e)
{
    e->older = c->newest;
    e->newer = NULL;
    if (c->newest)
        c->newest->newer = e;
    else
        c->oldest = e;
    c->newest = e;
}

void dns_cache_drop(struct dns_cache *c, struct dns_entry *e)
{
    struct dns_entry **pp = &c->bucket[e->hash & (c->nbucket - 1)];

    if (e->waiters)
        dns_panic("cache drop: %s/%s still has waiters", e->name,
                  dns_type_name(e->type));
    while (*pp != e) {
        if (*pp == NULL)
            dns_panic("cache drop: %s/%s not in the cache", e->name,
                      dns_type_name(e->type));
        pp = &(*pp)->hnext;
    }
    *pp = e->hnext;
    c->count--;
    if (e->answer) {
        lru_unlink(c, e);
        c->done--;
    }
    entry_free(e);
}

void dns_cache_keep(struct dns_cache *c, struct dns_entry *e)
{
    if (e->answer == NULL)
        dns_panic("cache keep: %s/%s has no answer", e->name,
                  dns_type_name(e->type));
    lru_append(c, e);
    c->done++;
    while (c->done > c->max)
        dns_cache_drop(c, c->oldest);
}

void dns_cache_touch(struct dns_cache *c, struct dns_entry *e)
{
    if (c->newest != e) {
        lru_unlink(c, e);
        lru_append(c, e);
    }
}
