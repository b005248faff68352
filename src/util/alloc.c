/*
 * NAME
 *	alloc 3 - memory allocation that never returns NULL
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	*xmalloc(size_t size)
 *	void	*xcalloc(size_t n, size_t size)
 *	void	*xrealloc(void *ptr, size_t size)
 *	char	*xstrdup(const char *s)
 *	char	*xstrndup(const char *s, size_t n)
 * DESCRIPTION
 *	OpenSMTPD's xmalloc family, once for every layer: running out of
 *	memory is not an error a caller can handle in a mail daemon's
 *	event loop, so these panic (util_panic(), which logs through the
 *	daemon's hook before it aborts) instead of returning NULL, and call
 *	sites stay short. A size of 0 asks for 1 byte, so that the result
 *	is never NULL either. xcalloc() checks n * size for overflow.
 *	xstrndup() copies at most n bytes and always terminates the copy.
 */

#include "util/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *xmalloc(size_t size)
{
    return xrealloc(NULL, size);
}

void *xcalloc(size_t n, size_t size)
{
    void *p;

    if (size != 0 && n > SIZE_MAX / size)
        util_panic("alloc: %zu * %zu bytes overflows", n, size);
    if ((p = calloc(n ? n : 1, size ? size : 1)) == NULL)
        util_panic("alloc: out of memory allocating %zu * %zu bytes", n, size);
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);

    if (p == NULL)
        util_panic("alloc: out of memory allocating %zu bytes", size);
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *copy = xmalloc(len + 1);

    memcpy(copy, s, len);
    copy[len] = 0;
    return copy;
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}
