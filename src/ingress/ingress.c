/*
 * NAME
 *	ingress 3 - helpers shared by the files of src/ingress/
 * SYNOPSIS
 *	#include "ingress/ingress_private.h"
 *
 *	void	ingress_panic(const char *fmt, ...)
 *
 *	void	ingress_buf_add(struct ingress_buf *b, const void *data,
 *			size_t len)
 *	void	ingress_buf_addf(struct ingress_buf *b, const char *fmt, ...)
 *	void	ingress_notify_format(unsigned bits, char *buf, size_t len)
 *	void	ingress_path_join(char *buf, size_t len, const char *dir,
 *			const char *name)
 * DESCRIPTION
 *	See ingress_private.h.
 */

#include "ingress/ingress_private.h"
#include "spool/spool.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void ingress_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("ingress: ", fmt, ap);
}

static void buf_reserve(struct ingress_buf *b, size_t more)
{
    if (more > (size_t)-1 / 2 - b->len)
        ingress_panic("buffer of %zu bytes cannot grow by %zu", b->len, more);
    if (b->len + more + 1 > b->size) {
        b->size = 2 * (b->len + more + 1);
        b->s = xrealloc(b->s, b->size);
    }
}

void ingress_buf_add(struct ingress_buf *b, const void *data, size_t len)
{
    buf_reserve(b, len);
    if (len > 0)
        memcpy(b->s + b->len, data, len);
    b->len += len;
    b->s[b->len] = 0;
}

void ingress_buf_addf(struct ingress_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        ingress_panic("ingress_buf_addf: bad format \"%s\"", fmt);
    buf_reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ingress_notify_format(unsigned bits, char *buf, size_t len)
{
    static const struct {
        unsigned bit;
        const char *word;
    } words[] = {
        {SPOOL_NOTIFY_SUCCESS, "success"},
        {SPOOL_NOTIFY_FAILURE, "failure"},
        {SPOOL_NOTIFY_DELAY, "delay"},
    };
    size_t used = 0;
    size_t i;

    if (len == 0)
        return;
    buf[0] = 0;
    if (bits & SPOOL_NOTIFY_NEVER) {
        snprintf(buf, len, "never");
        return;
    }
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if ((bits & words[i].bit) == 0 || used >= len)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 used ? "," : "", words[i].word);
    }
}

void ingress_path_join(char *buf, size_t len, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, len, "%s/%s", dir, name) >= len)
        ingress_panic("path too long: %s/%s", dir, name);
}
