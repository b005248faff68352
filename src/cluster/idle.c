/*
 * NAME
 *	idle 3 - idle cached connections counted against the leases
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_conns(int busy, int idle, int pending)
 *	int	cluster_idle_keep(int cap, int busy, int idle, int pending)
 * DESCRIPTION
 *	A receiver's connection limit counts the connections a sender
 *	keeps open between deliveries as well as those in a transaction,
 *	so a cluster's leases cover both (decision 111). A queue has busy
 *	deliveries in flight, pending of them not connected yet (looking
 *	up DNS: each will take one of the queue's idle connections when
 *	there is one, else open its own), and idle connections in the
 *	agent's cache under its cache key. It uses, or is about to,
 *	cluster_conns() = busy + max(0, idle - pending) connections: a
 *	connection opens only when none is idle, so this never grows but
 *	by a start within the cap.
 *
 *	cluster_idle_keep() is how many idle connections may stay under a
 *	cap (-1: no cap, all stay): all when cluster_conns() is within
 *	max(cap, busy); else as many fewer as it is above (never below
 *	pending: those are spoken for). Deliveries in flight are never
 *	cut short; only idle connections close.
 */

#include "cluster/cluster.h"

int cluster_conns(int busy, int idle, int pending)
{
    int spare = idle - pending;

    return busy + (spare > 0 ? spare : 0);
}

int cluster_idle_keep(int cap, int busy, int idle, int pending)
{
    int allowed = cap > busy ? cap : busy;
    int over = cluster_conns(busy, idle, pending) - allowed;

    if (cap < 0 || over <= 0)
        return idle;
    return idle - over;
}
