/*
 * NAME
 *	date 3 - RFC 5322 date-time
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_date(char *buf, size_t len, time_t t)
 * DESCRIPTION
 *	smtp_date() writes t as an RFC 5322 date-time in local time with
 *	its numeric zone ("Sun, 22 Nov 2026 03:30:00 +0100"), English day
 *	and month names whatever the locale, as a Date: field and the
 *	dates of a delivery status notification want. It returns 0, or -1
 *	(errno EINVAL) when t cannot be converted; buf (at least
 *	SMTP_DATE_MAX bytes) always ends in a NUL.
 */

#include "smtp/smtp.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int smtp_date(char *buf, size_t len, time_t t)
{
    static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                    "Thu", "Fri", "Sat"};
    static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr",
                                       "May", "Jun", "Jul", "Aug",
                                       "Sep", "Oct", "Nov", "Dec"};
    struct tm tm;
    long off;

    if (len > 0)
        buf[0] = 0;
    if (localtime_r(&t, &tm) == NULL || tm.tm_wday < 0 || tm.tm_wday > 6 ||
        tm.tm_mon < 0 || tm.tm_mon > 11) {
        errno = EINVAL;
        return -1;
    }
    off = tm.tm_gmtoff / 60;
    snprintf(buf, len, "%s, %d %s %d %02d:%02d:%02d %c%02ld%02ld",
             days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon], tm.tm_year + 1900,
             tm.tm_hour, tm.tm_min, tm.tm_sec, off < 0 ? '-' : '+',
             labs(off) / 60, labs(off) % 60);
    return 0;
}
