/*
 * NAME
 *	panic 3 - give up on a bug or an exhausted resource, loudly
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	util_panic(const char *fmt, ...)
 *	void	util_vpanic(const char *prefix, const char *fmt, va_list ap)
 *	void	util_panic_hook_set(util_panic_hook_fn *hook)
 * DESCRIPTION
 *	util_panic() formats its message, hands it to the hook if one is
 *	set (the daemon logs it, since its stderr may go nowhere), writes
 *	"sluice: panic: MESSAGE" to stderr, and aborts, so that a core file
 *	shows where. It is for what can only happen through a bug, or when
 *	memory runs out; expected trouble is returned to the caller.
 *
 *	util_vpanic() is the same with the words between "sluice: " and
 *	the message chosen by the caller: a layer's own panic (conf_panic(),
 *	dns_panic()) keeps the form its messages have always had, such as
 *	"sluice: conf: MESSAGE". The hook gets the message without them.
 *
 *	util_panic_hook_set() sets the hook (NULL: none). The hook must not
 *	return to the code that panicked: util_panic() aborts after it.
 */

#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static util_panic_hook_fn *panic_hook;

void util_panic_hook_set(util_panic_hook_fn *hook)
{
    panic_hook = hook;
}

void util_vpanic(const char *prefix, const char *fmt, va_list ap)
{
    char msg[1024];

    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (panic_hook != NULL)
        panic_hook(msg);
    fflush(stdout);
    fprintf(stderr, "sluice: %s%s\n", prefix, msg);
    abort();
}

void util_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("panic: ", fmt, ap);
}
