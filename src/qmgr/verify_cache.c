/*
 * NAME
 *	verify_cache 3 - address verification answers, bounded in memory
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	struct qmgr_verify_cache *qmgr_verify_cache_create(
 *			const struct qmgr_verify_cache_params *p)
 *	void	qmgr_verify_cache_params_set(struct qmgr_verify_cache *c,
 *			const struct qmgr_verify_cache_params *p)
 *	enum qmgr_verify_found qmgr_verify_cache_get(
 *			struct qmgr_verify_cache *c, const char *address,
 *			int64_t now, struct qmgr_verify_answer *out)
 *	void	qmgr_verify_cache_put(struct qmgr_verify_cache *c,
 *			const char *address,
 *			const struct qmgr_verify_answer *a, int64_t now)
 *	size_t	qmgr_verify_cache_count(const struct qmgr_verify_cache *c)
 *	void	qmgr_verify_cache_free(struct qmgr_verify_cache *c)
 * DESCRIPTION
 *	The reference's verify(8) database, in memory (decision 98): one
 *	answer per address, with the reference's lifetimes. A deliverable
 *	answer is served until address_verify_positive_expire_time after
 *	its probe, and from address_verify_positive_refresh_time on it is
 *	"stale": still served, but the caller sends a probe to renew it in
 *	the background. Undeliverable and undetermined answers (the
 *	negative ones) live by address_verify_negative_expire_time and
 *	address_verify_negative_refresh_time, and only while
 *	address_verify_negative_cache is on; with it off a negative answer
 *	is not kept (and removes the one before it).
 *
 *	An undetermined answer (a probe deferred) does not replace a
 *	deliverable one that has not expired, as the reference's verify
 *	keeps a positive result through a passing failure: the old answer
 *	stays, and the next renewal is due a negative refresh time later,
 *	not at the next lookup.
 *
 *	qmgr_verify_cache_get() says MISS (no answer, or an expired one,
 *	which is removed), FRESH or STALE, and copies the answer to out
 *	for the last two. Time is the caller's, in milliseconds: the
 *	cache reads no clock. Addresses are compared with their domain
 *	in lower case.
 *
 *	The cache is bounded: at most limit answers
 *	(address_verify_cache_limit); a new one beyond it pushes out the
 *	least recently used. A daemon that runs for months, probed with
 *	every address an attacker can make up, keeps no more than that.
 */

#include "qmgr/qmgr.h"

#include "util/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

struct vc_entry {
    char *key;
    struct qmgr_verify_answer a;
    int64_t refresh_at, expire_at;
    struct vc_entry *hnext;
    TAILQ_ENTRY(vc_entry) lru; /* most recently used first */
};

struct qmgr_verify_cache {
    struct qmgr_verify_cache_params p;
    struct vc_entry **hash;
    size_t nbuckets, count;
    TAILQ_HEAD(vc_lru, vc_entry) lru;
};

struct qmgr_verify_cache *
qmgr_verify_cache_create(const struct qmgr_verify_cache_params *p)
{
    struct qmgr_verify_cache *c = xcalloc(1, sizeof(*c));

    c->p = *p;
    /* about two answers per bucket at the limit, within reason */
    c->nbuckets = 64;
    while (c->nbuckets < (size_t)p->limit / 2 && c->nbuckets < (1u << 20))
        c->nbuckets *= 2;
    c->hash = xcalloc(c->nbuckets, sizeof(*c->hash));
    TAILQ_INIT(&c->lru);
    return c;
}

/* The address with its domain in lower case: the key. */
static char *vc_key(const char *address)
{
    char *key = xstrdup(address);
    char *at = strrchr(key, '@');

    for (char *p = at; p && *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return key;
}

static size_t vc_hash(const struct qmgr_verify_cache *c, const char *key)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    for (const unsigned char *p = (const unsigned char *)key; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (size_t)(h & (c->nbuckets - 1));
}

static struct vc_entry **vc_slot(struct qmgr_verify_cache *c, const char *key)
{
    struct vc_entry **pp = &c->hash[vc_hash(c, key)];

    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->hnext;
    return pp;
}

static void vc_remove(struct qmgr_verify_cache *c, struct vc_entry **pp)
{
    struct vc_entry *e = *pp;

    *pp = e->hnext;
    TAILQ_REMOVE(&c->lru, e, lru);
    c->count--;
    free(e->key);
    free(e);
}

/* The least recently used answers go until count is below limit. */
static void vc_trim(struct qmgr_verify_cache *c, size_t limit)
{
    struct vc_entry *e;

    while (c->count > limit && (e = TAILQ_LAST(&c->lru, vc_lru)) != NULL)
        vc_remove(c, vc_slot(c, e->key));
}

void qmgr_verify_cache_params_set(struct qmgr_verify_cache *c,
                                  const struct qmgr_verify_cache_params *p)
{
    c->p = *p;
    vc_trim(c, (size_t)p->limit);
}

enum qmgr_verify_found qmgr_verify_cache_get(struct qmgr_verify_cache *c,
                                             const char *address, int64_t now,
                                             struct qmgr_verify_answer *out)
{
    char *key = vc_key(address);
    struct vc_entry **pp = vc_slot(c, key), *e = *pp;

    free(key);
    if (e == NULL)
        return QMGR_VERIFY_MISS;
    if (now >= e->expire_at) {
        vc_remove(c, pp);
        return QMGR_VERIFY_MISS;
    }
    TAILQ_REMOVE(&c->lru, e, lru);
    TAILQ_INSERT_HEAD(&c->lru, e, lru);
    *out = e->a;
    return now >= e->refresh_at ? QMGR_VERIFY_STALE : QMGR_VERIFY_FRESH;
}

void qmgr_verify_cache_put(struct qmgr_verify_cache *c, const char *address,
                           const struct qmgr_verify_answer *a, int64_t now)
{
    char *key = vc_key(address);
    struct vc_entry **pp = vc_slot(c, key), *e = *pp;
    int positive = a->status == QMGR_VERIFY_DELIVERABLE;

    if (e != NULL && a->status == QMGR_VERIFY_UNDETERMINED &&
        e->a.status == QMGR_VERIFY_DELIVERABLE && now < e->expire_at) {
        e->refresh_at = now + c->p.neg_refresh; /* keep it, try later */
        free(key);
        return;
    }
    if (!positive && !c->p.neg_cache) {
        if (e != NULL)
            vc_remove(c, pp);
        free(key);
        return;
    }
    if (e == NULL) {
        vc_trim(c, (size_t)c->p.limit - 1);
        e = xcalloc(1, sizeof(*e));
        e->key = key;
        pp = vc_slot(c, key); /* the trim may have moved the chain's end */
        *pp = e;
        c->count++;
    } else {
        free(key);
        TAILQ_REMOVE(&c->lru, e, lru);
    }
    TAILQ_INSERT_HEAD(&c->lru, e, lru);
    e->a = *a;
    e->a.updated = now;
    e->refresh_at = now + (positive ? c->p.pos_refresh : c->p.neg_refresh);
    e->expire_at = now + (positive ? c->p.pos_expire : c->p.neg_expire);
}

size_t qmgr_verify_cache_count(const struct qmgr_verify_cache *c)
{
    return c->count;
}

void qmgr_verify_cache_free(struct qmgr_verify_cache *c)
{
    struct vc_entry *e;

    if (c == NULL)
        return;
    while ((e = TAILQ_FIRST(&c->lru)) != NULL) {
        TAILQ_REMOVE(&c->lru, e, lru);
        free(e->key);
        free(e);
    }
    free(c->hash);
    free(c);
}
