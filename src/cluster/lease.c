/*
 * NAME
 *	lease 3 - the lease table: each queue's demand and its grant
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	struct cluster_leases *cluster_leases_create(void)
 *	void	cluster_leases_free(struct cluster_leases *t)
 *	void	cluster_leases_demand(struct cluster_leases *t,
 *			const char *name, int limit, int want, int busy)
 *	size_t	cluster_leases_round(struct cluster_leases *t,
 *			struct cluster_lease_req **reqs)
 *	void	cluster_leases_grant(struct cluster_leases *t,
 *			const char *name, int granted, int target)
 *	int	cluster_leases_cap(const struct cluster_leases *t,
 *			const char *name, int limit, int joined, int members)
 * DESCRIPTION
 *	What this member knows of its connection leases, without I/O: a
 *	record per destination queue ("TRANSPORT:QUEUE") with the demand
 *	named in the current round and the count Redis granted last.
 *
 *	cluster_leases_round() ends a round: it lists, in *reqs (freed by
 *	the caller), every queue that wants leases, has deliveries in
 *	flight, holds leases, or asked before and must withdraw its want;
 *	a queue not named this round (freed by the queue manager) asks for
 *	nothing. Records with nothing to say are forgotten. The next round
 *	starts empty.
 *
 *	cluster_leases_grant() stores a reply's leases held and the
 *	queue's target (its fair part, or what it wants when the others
 *	want less); the leases held may be above the target while the
 *	queue's connections use them (cluster_conns()).
 *
 *	cluster_leases_cap(): while joined, the leases held or the target,
 *	the lower (0 for a queue never granted: it waits one round trip);
 *	while alone, the share of the limit (cluster_share()); -1 for no
 *	limit.
 */

#include "cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct lease_rate {
    int count, want, named; /* count 0: no rate */
    int64_t period;
    int tokens;        /* starts granted, not yet spent */
    int64_t local_tat; /* alone: the member's own GCRA */
};

struct lease {
    char *name;
    struct lease *next; /* hash chain */
    int limit, want, busy;
    int named;   /* in this round */
    int asked;   /* the last request carried a want */
    int granted; /* held, as the last reply said */
    int target;  /* what it may run, as the last reply said */
    struct lease_rate rate[CLUSTER_RATES]; /* of messages, of connections */
};

struct cluster_leases {
    struct lease **hash;
    size_t size, count;
};

static size_t lease_hash(const char *s, size_t size)
{
    uint64_t h = 1469598103934665603ULL; /* FNV-1a */

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return (size_t)(h % size);
}

struct cluster_leases *cluster_leases_create(void)
{
    struct cluster_leases *t = xcalloc(1, sizeof(*t));

    t->size = 64;
    t->hash = xcalloc(t->size, sizeof(*t->hash));
    return t;
}

void cluster_leases_free(struct cluster_leases *t)
{
    struct lease *l, *next;

    for (size_t i = 0; i < t->size; i++)
        for (l = t->hash[i]; l; l = next) {
            next = l->next;
            free(l->name);
            free(l);
        }
    free(t->hash);
    free(t);
}

static struct lease **lease_slot(const struct cluster_leases *t,
                                 const char *name)
{
    struct lease **pp = &t->hash[lease_hash(name, t->size)];

    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    return pp;
}

static void leases_grow(struct cluster_leases *t)
{
    size_t size = t->size * 2;
    struct lease **hash = xcalloc(size, sizeof(*hash)), *l, *next;

    for (size_t i = 0; i < t->size; i++)
        for (l = t->hash[i]; l; l = next) {
            size_t slot = lease_hash(l->name, size);

            next = l->next;
            l->next = hash[slot];
            hash[slot] = l;
        }
    free(t->hash);
    t->hash = hash;
    t->size = size;
}

/* The record of name; made when absent and make is set. */
static struct lease *lease_get(struct cluster_leases *t, const char *name,
                               int make)
{
    struct lease **pp = lease_slot(t, name), *l = *pp;

    if (l != NULL || !make)
        return l;
    l = *pp = xcalloc(1, sizeof(*l));
    l->name = xstrdup(name);
    if (++t->count > t->size)
        leases_grow(t);
    return l;
}

void cluster_leases_demand(struct cluster_leases *t, const char *name,
                           int limit, int want, int busy)
{
    /* nothing to ask, nothing held: no record */
    struct lease *l = lease_get(t, name, want > 0 || busy > 0);

    if (l == NULL)
        return;
    l->limit = limit;
    l->want = want < 0 ? 0 : want;
    l->busy = busy < 0 ? 0 : busy;
    l->named = 1;
}

void cluster_leases_rate(struct cluster_leases *t, const char *name, int kind,
                         int count, int64_t period_ms, int want)
{
    struct lease *l = lease_get(t, name, want > 0);

    if (l == NULL)
        return;
    l->rate[kind].count = count;
    l->rate[kind].period = period_ms;
    l->rate[kind].want = want < 0 ? 0 : want;
    l->rate[kind].named = 1;
}

void cluster_leases_tokens_add(struct cluster_leases *t, const char *name,
                               int kind, int tokens)
{
    struct lease *l = *lease_slot(t, name);

    if (l != NULL && tokens > 0)
        l->rate[kind].tokens += tokens;
}

int cluster_leases_tokens(const struct cluster_leases *t, const char *name,
                          int kind)
{
    const struct lease *l = *lease_slot(t, name);

    return l == NULL || l->rate[kind].count == 0 ? -1 : l->rate[kind].tokens;
}

void cluster_leases_spend(struct cluster_leases *t, const char *name, int kind)
{
    struct lease *l = *lease_slot(t, name);

    if (l != NULL && l->rate[kind].tokens > 0)
        l->rate[kind].tokens--;
}

/* One rate alone: its tokens from the member's share; the ms until one
 * more fits (-1: nothing waits). */
static int64_t rate_alone(struct lease_rate *r, int64_t now, int members)
{
    int64_t wait;

    if (r->count == 0 || r->want == 0)
        return -1;
    r->tokens +=
        cluster_gcra(&r->local_tat, now, cluster_share(r->count, members),
                     r->period, r->want, &wait);
    return wait > 0 ? wait : -1;
}

int64_t cluster_leases_alone(struct cluster_leases *t, int64_t now, int members)
{
    int64_t next = -1, wait;

    for (size_t i = 0; i < t->size; i++)
        for (struct lease *l = t->hash[i]; l; l = l->next)
            for (int k = 0; k < CLUSTER_RATES; k++)
                if ((wait = rate_alone(&l->rate[k], now, members)) > 0 &&
                    (next < 0 || wait < next))
                    next = wait;
    return next;
}

/* Forget what has nothing to say; else list it. */
static int lease_keep(struct lease *l)
{
    int rates = 0;

    if (!l->named)
        l->want = l->busy = 0;
    l->named = 0;
    for (int k = 0; k < CLUSTER_RATES; k++) {
        if (!l->rate[k].named)
            l->rate[k].want = 0;
        l->rate[k].named = 0;
        rates |= l->rate[k].want > 0 || l->rate[k].tokens > 0;
    }
    return l->want > 0 || l->busy > 0 || l->granted > 0 || l->asked || rates;
}

size_t cluster_leases_round(struct cluster_leases *t,
                            struct cluster_lease_req **reqs)
{
    struct cluster_lease_req *r = xcalloc(t->count + 1, sizeof(*r));
    size_t n = 0;

    for (size_t i = 0; i < t->size; i++) {
        struct lease **pp = &t->hash[i], *l;

        while ((l = *pp) != NULL) {
            if (!lease_keep(l)) {
                *pp = l->next;
                free(l->name);
                free(l);
                t->count--;
                continue;
            }
            snprintf(r[n].name, sizeof(r[n].name), "%s", l->name);
            r[n].limit = l->limit;
            r[n].want = l->want;
            r[n].busy = l->busy;
            for (int k = 0; k < CLUSTER_RATES; k++) {
                r[n].rate[k].count = l->rate[k].count;
                r[n].rate[k].period = l->rate[k].period;
                r[n].rate[k].want = l->rate[k].want;
            }
            l->asked = l->want > 0;
            n++;
            pp = &l->next;
        }
    }
    *reqs = r;
    return n;
}

void cluster_leases_grant(struct cluster_leases *t, const char *name,
                          int granted, int target)
{
    struct lease *l = *lease_slot(t, name);

    if (l != NULL) {
        l->granted = granted;
        l->target = target;
    }
}

int cluster_leases_cap(const struct cluster_leases *t, const char *name,
                       int limit, int joined, int members)
{
    const struct lease *l;

    if (limit <= 0)
        return -1;
    if (!joined)
        return cluster_share(limit, members);
    l = *lease_slot(t, name);
    if (l == NULL)
        return 0;
    return l->granted < l->target ? l->granted : l->target;
}
