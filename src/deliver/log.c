/*
 * NAME
 *	log 3 - delivery log lines in the reference's form
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	void	deliver_log_line(char *buf, size_t len,
 *			const struct deliver_log_entry *e)
 *	void	deliver_format_delay(char *buf, size_t len, double seconds)
 * DESCRIPTION
 *	See deliver.h. Log tools written for the reference parse these
 *	lines, so the field order, the separators and the time format
 *	follow it exactly.
 */

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

#include "deliver/deliver.h"

#define MILLION 1000000LL

/* At most this many decimals (the reference's default resolution). */
#define DELAY_DECIMALS 2

/* Significant digits of small values. */
#define DELAY_SIG_DIGITS 2

void deliver_format_delay(char *buf, size_t len, double seconds)
{
    long long total = seconds > 0 ? llround(seconds * MILLION) : 0;
    long long sec = total / MILLION;
    long long usec = total % MILLION;
    long long res = MILLION / 100; /* 10^(6 - DELAY_DECIMALS) */
    long long limit = 100;         /* 10^DELAY_SIG_DIGITS */
    size_t n;

    /*
     * The resolution: whole seconds from ten seconds up, tenths from one,
     * and below one second as fine as two significant digits allow,
     * never finer than the decimal limit.
     */
    if (sec >= limit / 10)
        res = MILLION;
    else if (sec > 0)
        res = MILLION / (limit / 10);
    else
        while (usec >= limit * res)
            res *= 10;

    usec += res / 2; /* round half up */
    if (usec >= MILLION) {
        sec++;
        usec -= MILLION;
    }
    n = (size_t)snprintf(buf, len, "%lld", sec);
    if (usec >= res && n + 1 < len) {
        buf[n++] = '.';
        for (long long digit = MILLION / 10;
             usec >= res && digit >= res && n + 1 < len; digit /= 10) {
            buf[n++] = (char)('0' + usec / digit);
            usec %= digit;
        }
        buf[n] = 0;
    }
}

/* Append to buf at *used, truncating; *used stops at len - 1. */
static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void append(char *buf, size_t len, size_t *used, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*used + 1 >= len)
        return;
    va_start(ap, fmt);
    n = vsnprintf(buf + *used, len - *used, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    *used = *used + (size_t)n < len ? *used + (size_t)n : len - 1;
}

static void append_delay(char *buf, size_t len, size_t *used, const char *label,
                         double seconds)
{
    char num[32];

    deliver_format_delay(num, sizeof(num), seconds);
    append(buf, len, used, "%s%s", label, num);
}

static const char *status_word(enum deliver_status status)
{
    return status == DELIVER_OK      ? "sent"
           : status == DELIVER_DEFER ? "deferred"
                                     : "bounced";
}

void deliver_log_line(char *buf, size_t len, const struct deliver_log_entry *e)
{
    size_t used = 0;
    double a, b = 0, c = 0, d = 0;

    if (len == 0)
        return;
    buf[0] = 0;
    append(buf, len, &used, "%s: to=<%s>", e->queue_id, e->recipient);
    if (e->orig_recipient && *e->orig_recipient &&
        strcasecmp(e->orig_recipient, e->recipient) != 0)
        append(buf, len, &used, ", orig_to=<%s>", e->orig_recipient);
    append(buf, len, &used, ", relay=%s", e->relay);
    if (e->conn_use > 1)
        append(buf, len, &used, ", conn_use=%d", e->conn_use);

    /* The stages that did not happen leave their time to the next one. */
    if (e->active > 0) {
        a = e->active - e->arrival;
        if (e->handoff > 0) {
            b = e->handoff - e->active;
            if (e->conn_done > 0) {
                c = e->conn_done - e->handoff;
                d = e->done - e->conn_done;
            } else {
                d = e->done - e->handoff;
            }
        } else {
            b = e->done - e->active;
        }
    } else {
        a = e->done - e->arrival;
    }
    append_delay(buf, len, &used, ", delay=", e->done - e->arrival);
    append_delay(buf, len, &used, ", delays=", a);
    append_delay(buf, len, &used, "/", b);
    append_delay(buf, len, &used, "/", c);
    append_delay(buf, len, &used, "/", d);
    append(buf, len, &used, ", dsn=%s, status=%s (%s)", e->dsn,
           e->probe
               ? (e->status == DELIVER_OK ? "deliverable" : "undeliverable")
               : status_word(e->status),
           e->text);
    if (e->tls && *e->tls)
        append(buf, len, &used, " tls=%s", e->tls);
}
