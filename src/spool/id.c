/*
 * NAME
 *	id 3 - queue ids
 * SYNOPSIS
 *	#include "spool/spool_impl.h"
 *
 *	void	spool_id_new(char id[SPOOL_ID_MAX + 1], int64_t now)
 *	int64_t	spool_now(void)
 * DESCRIPTION
 *	A queue id is 14 characters: 11 for the time in microseconds since
 *	the epoch and 3 random ones, all from a 32-character alphabet
 *	(digits and upper-case letters without I, O, U, Y, so that ids are
 *	easy to read aloud) in ASCII order, so that ids sort like their
 *	times: "roughly time-ordered", printable, short, and fit for a log
 *	line. Uniqueness is not left to chance: the store refuses a second
 *	message with an id it already has (MDB_NOOVERWRITE) and the
 *	committer then draws another.
 *
 *	spool_now() reads the wall clock (util_clock_wall_us()), in
 *	microseconds since the epoch.
 */

#include "spool/spool_impl.h"

#include <sys/random.h>

static const char alphabet[] = "0123456789ABCDEFGHJKLMNPQRSTVWXZ";

int64_t spool_now(void)
{
    return util_clock_wall_us();
}

void spool_id_new(char id[SPOOL_ID_MAX + 1], int64_t now)
{
    uint64_t t = (uint64_t)now;
    uint16_t r = 0;

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint16_t)(now ^ (now >> 17));
    for (int i = 10; i >= 0; i--, t >>= 5)
        id[i] = alphabet[t & 31];
    for (int i = 13; i >= 11; i--, r >>= 5)
        id[i] = alphabet[r & 31];
    id[14] = 0;
}
