/*
 * NAME
 *	rate 3 - <transport>_destination_rate: GCRA arithmetic
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_rate_parse(const char *text, struct cluster_rate *r,
 *			char *why, size_t whylen)
 *	int	cluster_gcra(int64_t *tat, int64_t now, int count,
 *			int64_t period, int want, int64_t *wait)
 * DESCRIPTION
 *	cluster_rate_parse() reads COUNT/TIME ("100/1m", "5/s", "7/30"):
 *	COUNT deliveries per TIME, TIME a number with a unit of ms, s, m,
 *	h or d (s when absent); empty means no rate (r->count 0). 0, or -1
 *	with the reason in why.
 *
 *	cluster_gcra() is the generic cell rate algorithm for count per
 *	period: one delivery every period/count ms (the emission
 *	interval), with a burst of up to count after a quiet period. *tat
 *	is the theoretical arrival time of the next delivery (0: never
 *	used). It grants up to want starts at time now, the most that fit
 *	(tat + n * interval <= now + period), advances *tat by as many
 *	intervals and returns n; *wait is 0 when all of want fit, else the
 *	ms until one more would. The sync script does the same in Lua, on
 *	Redis's clock, for the cluster; this one serves a member alone
 *	(with its share of count) and the unit tests.
 */

#include "cluster/cluster.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rate_fail(char *why, size_t whylen, const char *text)
{
    snprintf(why, whylen,
             "destination rate \"%s\": not COUNT/TIME, such as 100/1m", text);
    return -1;
}

static int64_t unit_ms(const char *unit)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"", 1000},   {"ms", 1},      {"s", 1000},
                 {"m", 60000}, {"h", 3600000}, {"d", 86400000}};

    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(unit, units[i].name) == 0)
            return units[i].ms;
    return -1;
}

int cluster_rate_parse(const char *text, struct cluster_rate *r, char *why,
                       size_t whylen)
{
    const char *slash = strchr(text, '/');
    char *end;
    long count, n;
    int64_t unit;

    memset(r, 0, sizeof(*r));
    if (text[0] == '\0')
        return 0;
    if (slash == NULL)
        return rate_fail(why, whylen, text);
    count = strtol(text, &end, 10);
    if (end != slash || count < 1 || count > 1000000)
        return rate_fail(why, whylen, text);
    n = 1;
    if (slash[1] >= '0' && slash[1] <= '9')
        n = strtol(slash + 1, &end, 10);
    else
        end = (char *)slash + 1;
    if (end == slash + 1 && slash[1] == '\0')
        return rate_fail(why, whylen, text);
    if (n < 1 || n > 1000000 || (unit = unit_ms(end)) < 0)
        return rate_fail(why, whylen, text);
    r->count = (int)count;
    r->period_ms = n * unit;
    return 0;
}

int cluster_gcra(int64_t *tat, int64_t now, int count, int64_t period, int want,
                 int64_t *wait)
{
    int64_t interval = period / count, t = *tat > now ? *tat : now, fit;
    int grant;

    if (interval < 1)
        interval = 1;
    fit = (now + period - t) / interval;
    grant = want < fit ? want : (int)(fit > 0 ? fit : 0);
    if (grant < 0)
        grant = 0;
    *tat = t + grant * interval;
    *wait = grant < want ? *tat + interval - period - now : 0;
    if (*wait < 0)
        *wait = 0;
    return grant;
}
