/*
 * NAME
 *	suspend 3 - suspensions shared by the cluster: what is known, merged
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	void	cluster_susps_set(struct cluster_susps *known,
 *			const char *dest, int64_t until)
 *	void	cluster_susps_set_why(struct cluster_susps *known,
 *			const char *dest, int64_t until, const char *why)
 *	void	cluster_susps_merge(struct cluster_susps *known,
 *			const struct cluster_susp *set, size_t n,
 *			const struct cluster_susp_fns *fns, void *ctx)
 *	void	cluster_susps_clear(struct cluster_susps *known)
 * DESCRIPTION
 *	`sluice suspend` and `resume` act on every member (decision 103):
 *	Redis holds the cluster's suspensions (destination to the wall-clock
 *	ms it ends, 0: until resumed), and each member remembers the set it
 *	last applied.
 *
 *	cluster_susps_set() records a change made here (until -1: resumed),
 *	so that the next pull does not apply it again;
 *	cluster_susps_set_why() with a reason (a dead destination's). cluster_susps_merge()
 *	compares the set pulled from Redis with the one known: a
 *	destination new or with another end is suspended (fns->suspend), a
 *	destination gone is resumed (fns->resume: resumed by a member, or
 *	its time is over); then the known set is the pulled one.
 *	Destinations compare without regard to case.
 */

#include "cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/util.h"

static struct cluster_susp *susp_find(const struct cluster_susps *k,
                                      const char *dest)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcasecmp(k->v[i].dest, dest) == 0)
            return &k->v[i];
    return NULL;
}

void cluster_susps_set(struct cluster_susps *k, const char *dest, int64_t until)
{
    cluster_susps_set_why(k, dest, until, NULL);
}

void cluster_susps_set_why(struct cluster_susps *k, const char *dest,
                           int64_t until, const char *why)
{
    struct cluster_susp *s = susp_find(k, dest);

    if (until < 0) {
        if (s != NULL)
            *s = k->v[--k->n];
        return;
    }
    if (s == NULL) {
        if (k->n == k->cap) {
            k->cap = k->cap ? 2 * k->cap : 8;
            k->v = xrealloc(k->v, k->cap * sizeof(*k->v));
        }
        s = &k->v[k->n++];
        snprintf(s->dest, sizeof(s->dest), "%s", dest);
    }
    s->until = until;
    snprintf(s->why, sizeof(s->why), "%s", why ? why : "");
}

void cluster_susps_merge(struct cluster_susps *k,
                         const struct cluster_susp *set, size_t n,
                         const struct cluster_susp_fns *fns, void *ctx)
{
    struct cluster_susps old = *k;

    for (size_t i = 0; i < n; i++) {
        const struct cluster_susp *was = susp_find(&old, set[i].dest);

        if (was == NULL || was->until != set[i].until)
            fns->suspend(ctx, set[i].dest, set[i].until, set[i].why);
    }
    for (size_t i = 0; i < old.n; i++) {
        int kept = 0;

        for (size_t j = 0; j < n && !kept; j++)
            kept = strcasecmp(old.v[i].dest, set[j].dest) == 0;
        if (!kept)
            fns->resume(ctx, old.v[i].dest);
    }
    k->n = 0; /* old's entries are read: its array is k's again */
    for (size_t i = 0; i < n; i++)
        cluster_susps_set_why(k, set[i].dest, set[i].until, set[i].why);
}

void cluster_susps_clear(struct cluster_susps *k)
{
    free(k->v);
    memset(k, 0, sizeof(*k));
}
