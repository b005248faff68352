/*
 * NAME
 *	fact 3 - another member's retry time for a host, merged
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_fact_merge(int64_t local_retry, int64_t remote_wall,
 *			int64_t now_mono, int64_t now_wall, int64_t *retry)
 * DESCRIPTION
 *	Members publish a failed host's retry time on the wall clock, the
 *	one clock they share (destdb keeps the monotonic one, which a step
 *	of the wall clock does not move). cluster_fact_merge() says whether
 *	the remote time, still to come, is later than the local one
 *	(monotonic, -1: none): then the host is not tried here before it
 *	either, and *retry is that time on the monotonic clock. The later
 *	time wins, so that merges commute and a fact never shortens a
 *	wait that this daemon chose; a member that reaches the host again
 *	withdraws its fact, and the others wait out what they had.
 */

#include "cluster/cluster.h"

int cluster_fact_merge(int64_t local_retry, int64_t remote_wall,
                       int64_t now_mono, int64_t now_wall, int64_t *retry)
{
    int64_t when;

    if (remote_wall <= now_wall)
        return 0;
    when = now_mono + (remote_wall - now_wall);
    if (local_retry >= when)
        return 0;
    *retry = when;
    return 1;
}
