/*
 * NAME
 *	ingress 3 - helpers shared by the files of src/ingress/
 * SYNOPSIS
 *	#include "ingress/ingress_private.h"
 *
 *	void	ingress_panic(const char *fmt, ...)
 *
 *	void	ingress_notify_format(unsigned bits, char *buf, size_t len)
 *	void	ingress_path_join(char *buf, size_t len, const char *dir,
 *			const char *name)
 * DESCRIPTION
 *	See ingress_private.h.
 */

#include "ingress/ingress_private.h"
#include "spool/spool.h"

#include <stdarg.h>
#include <stdio.h>

void ingress_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("ingress: ", fmt, ap);
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
