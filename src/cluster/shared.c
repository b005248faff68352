/*
 * NAME
 *	shared 3 - a set of destinations the cluster shares, in and out
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	void	cluster_shared_change(struct cluster_shared *s,
 *			const char *dest, int64_t until, const char *why)
 *	void	cluster_shared_send(struct cluster_shared *s)
 *	void	cluster_shared_sent(struct cluster_shared *s)
 *	void	cluster_shared_unsent(struct cluster_shared *s)
 *	void	cluster_shared_pulled(struct cluster_shared *s,
 *			const struct cluster_susp *set, size_t n,
 *			const struct cluster_susp_fns *fns, void *ctx)
 *	const struct cluster_susp *cluster_shared_find(
 *			const struct cluster_shared *s, const char *dest)
 *	void	cluster_shared_clear(struct cluster_shared *s)
 * DESCRIPTION
 *	The suspensions (decision 103) and the dead destinations (decision
 *	113) each live in Redis as a hash, destination to its end on the
 *	wall clock (0: until resumed), and in each member as three lists:
 *	the set as last applied (known), the changes made here that Redis
 *	has not heard of (out), and those in the sync in flight (sent).
 *
 *	cluster_shared_change() records a change made here (until -1: the
 *	destination's end, a resume or a revival): known at once, so that a
 *	pull does not apply it again, and out until a sync carries it.
 *	cluster_shared_send() moves out to sent as a sync leaves;
 *	cluster_shared_sent() forgets sent when Redis answered;
 *	cluster_shared_unsent() puts sent back in out when the sync failed,
 *	unless a newer change to the same destination waits there.
 *	cluster_shared_pulled() merges the set Redis holds, with the changes
 *	made here since the sync left laid over it, into known
 *	(cluster_susps_merge(): fns->suspend for what is new or changed,
 *	fns->resume for what is gone). cluster_shared_find() is a
 *	destination's entry in known, or NULL.
 */

#include "cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static struct cluster_susp *find(const struct cluster_susps *k,
                                 const char *dest)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcasecmp(k->v[i].dest, dest) == 0)
            return &k->v[i];
    return NULL;
}

/* Set dest in k, a resume included (kept as until -1). */
static void out_set(struct cluster_susps *k, const char *dest, int64_t until,
                    const char *why)
{
    struct cluster_susp *s = find(k, dest);

    if (s == NULL) {
        cluster_susps_set_why(k, dest, 0, why);
        s = &k->v[k->n - 1];
    }
    s->until = until;
    snprintf(s->why, sizeof(s->why), "%s", why ? why : "");
}

void cluster_shared_change(struct cluster_shared *s, const char *dest,
                           int64_t until, const char *why)
{
    cluster_susps_set_why(&s->known, dest, until, why);
    out_set(&s->out, dest, until, why);
}

void cluster_shared_send(struct cluster_shared *s)
{
    cluster_susps_clear(&s->sent);
    s->sent = s->out;
    memset(&s->out, 0, sizeof(s->out));
}

void cluster_shared_sent(struct cluster_shared *s)
{
    s->sent.n = 0;
}

void cluster_shared_unsent(struct cluster_shared *s)
{
    for (size_t i = 0; i < s->sent.n; i++)
        if (find(&s->out, s->sent.v[i].dest) == NULL)
            out_set(&s->out, s->sent.v[i].dest, s->sent.v[i].until,
                    s->sent.v[i].why);
    s->sent.n = 0;
}

void cluster_shared_pulled(struct cluster_shared *s,
                           const struct cluster_susp *set, size_t n,
                           const struct cluster_susp_fns *fns, void *ctx)
{
    struct cluster_susps all = {0};

    for (size_t i = 0; i < n; i++)
        cluster_susps_set_why(&all, set[i].dest, set[i].until, set[i].why);
    for (size_t i = 0; i < s->out.n; i++)
        cluster_susps_set_why(&all, s->out.v[i].dest, s->out.v[i].until,
                              s->out.v[i].why);
    cluster_susps_merge(&s->known, all.v, all.n, fns, ctx);
    cluster_susps_clear(&all);
}

const struct cluster_susp *cluster_shared_find(const struct cluster_shared *s,
                                               const char *dest)
{
    return find(&s->known, dest);
}

void cluster_shared_clear(struct cluster_shared *s)
{
    cluster_susps_clear(&s->known);
    cluster_susps_clear(&s->out);
    cluster_susps_clear(&s->sent);
}
