/*
 * NAME
 *	clock 3 - the two clocks: monotonic for intervals, wall for stamps
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int64_t	util_clock_mono_ms(void)
 *	int64_t	util_clock_mono_us(void)
 *	int64_t	util_clock_wall_us(void)
 * DESCRIPTION
 *	util_clock_mono_ms() and util_clock_mono_us() read CLOCK_MONOTONIC,
 *	in milliseconds and microseconds: for intervals, timeouts and the
 *	time handed to core/ (which never reads a clock itself), because
 *	it never jumps when the system time is set. Its zero is arbitrary
 *	(usually the boot), so its values mean nothing outside the process.
 *
 *	util_clock_wall_us() reads CLOCK_REALTIME in microseconds since
 *	the epoch: for what is written down, in the spool or in a log, and
 *	read by people or by a later process.
 */

#include "util/util.h"

#include <time.h>

static int64_t clock_us(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t util_clock_mono_ms(void)
{
    return clock_us(CLOCK_MONOTONIC) / 1000;
}

int64_t util_clock_mono_us(void)
{
    return clock_us(CLOCK_MONOTONIC);
}

int64_t util_clock_wall_us(void)
{
    return clock_us(CLOCK_REALTIME);
}
