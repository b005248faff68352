/*
 * NAME
 *	alone 3 - a member cut off from Redis: its cap, bounded in time
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_alone_cap(const struct cluster_alone *a,
 *			int64_t now, int share, int held)
 *
 *	#include "cluster/cluster_impl.h"
 *
 *	void	cluster_alone_begin(struct cluster *c)
 *
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_idle_cap(const struct cluster *c, const char *name,
 *			int limit)
 * DESCRIPTION
 *	A member that loses Redis cannot tell "Redis is down for all" from
 *	"only I am cut off", and the others cannot tell it from a member
 *	killed. So the cluster bounds what it may take (decision 120): the
 *	members that still reach Redis keep counting a silent member for
 *	cluster_alone_time after its heartbeat ends (its leases stay, and
 *	its share of every limit is held for it: script.c), and the member
 *	keeps within that.
 *
 *	cluster_alone_cap() is the cap of one destination queue of a member
 *	alone, from its share of the queue's limit (cluster_share()) and the
 *	leases it held when Redis went away, at monotonic time now:
 *
 *	before the member ever had a reply (a->known 0), 1: the others
 *	hold nothing for a member they never heard of;
 *
 *	until a->grace_end, no more than the leases it held, nor its share:
 *	its heartbeat and leases are good that long in Redis, and the
 *	others take the slots they see free;
 *
 *	then its share, until a->deadline: the others hold the share for
 *	it until its heartbeat is older than cluster_alone_time;
 *
 *	from a->deadline on, 1: the others take the whole limit again, so
 *	that a member killed does not keep its share from them; 1 and not
 *	0, so that no mail waits for Redis. An idle connection delivers no
 *	mail, so then none stays: cluster_idle_cap() is the cap the idle
 *	connections of a queue are trimmed to (cluster_idle_keep()), 0
 *	then (and before the first reply), the queue's cap otherwise.
 *
 *	cluster_alone_begin() sets these times as the member goes alone,
 *	and arms a timer that applies the caps again at the deadline, not
 *	a tick later. grace_end is a lease time and one tick (a third of
 *	it) after Redis went away: by then every member that reaches Redis
 *	has synced once since this member's heartbeat ended, and holds its
 *	share. deadline is cluster_lease_time plus cluster_alone_time after
 *	the last sync Redis answered was sent, which is no later than the
 *	time Redis ran it: the others drop the member no sooner.
 */

#include "cluster/cluster_impl.h"

#include "util/util.h"

int cluster_alone_cap(const struct cluster_alone *a, int64_t now, int share,
                      int held)
{
    int cap = share;

    if (share <= 0)
        return share; /* no limit */
    if (!a->known || now >= a->deadline)
        return 1;
    if (now < a->grace_end && held < cap)
        cap = held;
    return cap;
}

int cluster_idle_cap(const struct cluster *c, const char *name, int limit)
{
    int cap = cluster_cap(c, name, limit);

    if (c->state == CL_ALONE && cap > 0 &&
        (!c->alone.known || util_clock_mono_ms() >= c->alone.deadline))
        return 0;
    return cap;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    struct cluster *c = arg;
    int64_t left = c->alone.deadline - util_clock_mono_ms();
    struct timeval tv = {0, 1000};

    (void)fd;
    (void)what;
    if (left > 0) { /* libevent's clock ran ahead of ours: not yet */
        tv.tv_usec = (suseconds_t)(left < 1000 ? left * 1000 : 999000);
        evtimer_add(c->deadline_ev, &tv);
        return;
    }
    cluster_caps(c);
}

void cluster_alone_begin(struct cluster *c)
{
    int64_t now = util_clock_mono_ms(), left;
    struct timeval tv;

    c->alone.known = c->ever_joined && c->ok_sent_at > 0;
    c->alone.grace_end = now + c->lease_ms + c->lease_ms / 3;
    c->alone.deadline = c->ok_sent_at + c->lease_ms + c->alone_ms;
    if (c->deadline_ev == NULL)
        c->deadline_ev = evtimer_new(c->base, deadline_cb, c);
    left = c->alone.deadline - now;
    if (!c->alone.known || left < 0)
        return;
    tv.tv_sec = (time_t)(left / 1000);
    tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
    evtimer_add(c->deadline_ev, &tv);
}
