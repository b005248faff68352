/*
 * NAME
 *	value 3 - typed parameter values: integers, times, feedback, ...
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	int	conf_time_parse(const char *text, char unit, int64_t *ms,
 *			char *why, size_t whylen)
 *	int	conf_feedback_parse(const char *text, struct conf_feedback *fb,
 *			char *why, size_t whylen)
 *
 *	#include "conf/conf_private.h"
 *
 *	int	conf_value_parse(const struct conf_def *def, const char *text,
 *			union conf_typed *v, char *why, size_t whylen)
 * DESCRIPTION
 *	conf_time_parse() converts a time to milliseconds: a decimal
 *	number (fractions allowed: 0.5s) followed by an optional unit, one
 *	of ms, s, m, h, d, w; without a unit the number counts in the given
 *	default unit (0 means seconds). At most 10000w.
 *
 *	conf_feedback_parse() converts a feedback expression: x, x/y,
 *	x/concurrency or x/sqrt_concurrency, with x and y non-negative
 *	decimal numbers and the value (x, or x/y) in [0, 1].
 *
 *	conf_value_parse() checks an expanded text against the type of a
 *	parameter (and its bounds, unit or choices) and stores the typed
 *	value. Strings and lists are always valid.
 *
 *	All three return 0 on success, or -1 with what was expected in why
 *	("expected a time like 300s, 5m, 1h"); the caller adds the name
 *	and the value.
 */

#include "conf/conf.h"
#include "conf/conf_private.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TIME_EXPECTED "expected a time like 300s, 5m, 1h"
#define FEEDBACK_EXPECTED                                                      \
    "expected x, x/y, x/concurrency or x/sqrt_concurrency with a value "       \
    "between 0 and 1"

/* 10000 weeks in milliseconds: below 2^53, so whole numbers stay exact. */
#define TIME_MAX_MS (10000.0 * 7 * 86400 * 1000)

/* Longest number we accept; anything longer is junk, not a setting. */
#define NUMBER_MAX 40

static int is_digit(int ch)
{
    return ch >= '0' && ch <= '9';
}

/*
 * A non-negative decimal number: digits, optionally a point and more
 * digits, at least one digit in all. No sign, exponent, hex, "inf" or
 * "nan": strtod() would accept those, so the syntax is checked first
 * and strtod() only converts.
 */
static int number_scan(const char *text, const char **end, double *value)
{
    char copy[NUMBER_MAX + 1];
    const char *cp = text;
    size_t digits = 0;

    while (is_digit((unsigned char)*cp))
        cp++, digits++;
    if (*cp == '.') {
        cp++;
        while (is_digit((unsigned char)*cp))
            cp++, digits++;
    }
    if (digits == 0 || (size_t)(cp - text) > NUMBER_MAX)
        return -1;
    memcpy(copy, text, (size_t)(cp - text));
    copy[cp - text] = 0;
    *value = strtod(copy, NULL);
    *end = cp;
    return 0;
}

/* Milliseconds per unit, or 0 for an unknown unit. */
static int64_t unit_ms(const char *unit)
{
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {
        {"ms", 1},      {"s", 1000},     {"m", 60000},
        {"h", 3600000}, {"d", 86400000}, {"w", 604800000},
    };
    size_t i;

    for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (strcmp(unit, units[i].name) == 0)
            return units[i].ms;
    return 0;
}

int conf_time_parse(const char *text, char unit, int64_t *ms, char *why,
                    size_t whylen)
{
    char defunit[2] = {unit ? unit : 's', 0};
    int64_t per_unit;
    const char *end;
    double number;
    double total;

    if (unit_ms(defunit) == 0)
        conf_panic("conf_time_parse: bad default unit '%c'", unit);
    if (number_scan(text, &end, &number) < 0 ||
        (per_unit = unit_ms(*end ? end : defunit)) == 0) {
        snprintf(why, whylen, "%s", TIME_EXPECTED);
        return -1;
    }
    total = number * (double)per_unit;
    if (total > TIME_MAX_MS) {
        snprintf(why, whylen, "%s, at most 10000w", TIME_EXPECTED);
        return -1;
    }
    *ms = (int64_t)llround(total);
    return 0;
}

int conf_feedback_parse(const char *text, struct conf_feedback *fb, char *why,
                        size_t whylen)
{
    const char *end;
    double x;
    double y;

    if (number_scan(text, &end, &x) < 0)
        goto bad;
    if (*end == 0) {
        fb->form = CONF_FEEDBACK_CONSTANT;
    } else if (strcmp(end, "/concurrency") == 0) {
        fb->form = CONF_FEEDBACK_CONCURRENCY;
    } else if (strcmp(end, "/sqrt_concurrency") == 0) {
        fb->form = CONF_FEEDBACK_SQRT_CONCURRENCY;
    } else if (*end == '/' && number_scan(end + 1, &end, &y) == 0 &&
               *end == 0 && y > 0) {
        fb->form = CONF_FEEDBACK_CONSTANT;
        x /= y;
    } else {
        goto bad;
    }
    if (x > 1)
        goto bad;
    fb->value = x;
    return 0;

bad:
    snprintf(why, whylen, "%s", FEEDBACK_EXPECTED);
    return -1;
}

static int int_parse(const struct conf_def *def, const char *text, long *out,
                     char *why, size_t whylen)
{
    const char *cp = text;
    char *end;
    long n;

    /* strtol() also skips white space and accepts '+': we do not. */
    if (*cp == '-')
        cp++;
    if (!is_digit((unsigned char)*cp))
        goto bad;
    errno = 0;
    n = strtol(text, &end, 10);
    if (*end != 0 || errno == ERANGE || n < def->min || n > def->max)
        goto bad;
    *out = n;
    return 0;

bad:
    if (def->min == LONG_MIN && def->max == LONG_MAX)
        snprintf(why, whylen, "expected an integer");
    else if (def->max == LONG_MAX)
        snprintf(why, whylen, "expected an integer of at least %ld", def->min);
    else
        snprintf(why, whylen, "expected an integer between %ld and %ld",
                 def->min, def->max);
    return -1;
}

static int bool_parse(const char *text, int *out, char *why, size_t whylen)
{
    if (strcasecmp(text, "yes") == 0) {
        *out = 1;
    } else if (strcasecmp(text, "no") == 0) {
        *out = 0;
    } else {
        snprintf(why, whylen, "expected yes or no");
        return -1;
    }
    return 0;
}

/* One of the words of "a|b|c"; the message lists them as "a, b, c". */
static int choice_parse(const char *choices, const char *text, char *why,
                        size_t whylen)
{
    size_t len = strlen(text);
    const char *cp = choices;
    const char *bar;
    size_t used;

    for (;;) {
        bar = strchr(cp, '|');
        if ((bar ? (size_t)(bar - cp) : strlen(cp)) == len &&
            strncmp(cp, text, len) == 0 && len > 0)
            return 0;
        if (bar == NULL)
            break;
        cp = bar + 1;
    }
    used = (size_t)snprintf(why, whylen, "expected one of: ");
    for (cp = choices; *cp && used + 2 < whylen; cp++) {
        if (*cp == '|') {
            why[used++] = ',';
            why[used++] = ' ';
        } else {
            why[used++] = *cp;
        }
    }
    if (whylen > 0)
        why[used < whylen ? used : whylen - 1] = 0;
    return -1;
}

int conf_value_parse(const struct conf_def *def, const char *text,
                     union conf_typed *v, char *why, size_t whylen)
{
    switch (def->type) {
    case CONF_INT:
        return int_parse(def, text, &v->i, why, whylen);
    case CONF_TIME:
        return conf_time_parse(text, def->unit, &v->ms, why, whylen);
    case CONF_BOOL:
        return bool_parse(text, &v->b, why, whylen);
    case CONF_FEEDBACK:
        return conf_feedback_parse(text, &v->fb, why, whylen);
    case CONF_CHOICE:
        return choice_parse(def->choices, text, why, whylen);
    case CONF_STRING:
    case CONF_LIST:
        return 0;
    }
    conf_panic("conf_value_parse: %s: bad type %d", def->name, (int)def->type);
}
