/*
 * NAME
 *	share 3 - a member's share of a limit when it decides alone
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_share(int limit, int members)
 * DESCRIPTION
 *	cluster_share() is limit divided by the live members last known,
 *	rounded down so that the shares of all add up to no more than the
 *	limit, but at least 1, so that no destination's mail is stuck
 *	while Redis is away (with more members than the limit allows, the
 *	receiver sees up to one connection per member: decision 100). A
 *	limit of 0 (none) stays 0; no member known counts as one.
 */

#include "cluster/cluster.h"

int cluster_share(int limit, int members)
{
    int share;

    if (limit <= 0)
        return 0;
    if (members < 1)
        members = 1;
    share = limit / members;
    return share < 1 ? 1 : share;
}
