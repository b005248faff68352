/*
 * NAME
 *	buf 3 - a growing byte string
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	struct util_buf b = UTIL_BUF_INIT;
 *
 *	void	util_buf_add(struct util_buf *b, const void *p, size_t n)
 *	void	util_buf_puts(struct util_buf *b, const char *s)
 *	void	util_buf_printf(struct util_buf *b, const char *fmt, ...)
 *	void	util_buf_reset(struct util_buf *b)
 *	char	*util_buf_take(struct util_buf *b)
 *	void	util_buf_free(struct util_buf *b)
 * DESCRIPTION
 *	One buffer for every layer: records being encoded, strings being
 *	assembled, lines being joined. b->data holds b->len bytes followed
 *	by a NUL (once anything was added; before that it is NULL), so the
 *	same buffer serves binary records and C strings. Memory comes from
 *	xrealloc(): appending never fails. The size at least doubles when
 *	it grows, so appending n bytes one at a time costs O(n).
 *
 *	util_buf_add() appends n bytes, util_buf_puts() a string,
 *	util_buf_printf() formatted text. util_buf_reset() empties the
 *	buffer and keeps its memory. util_buf_take() hands the string to
 *	the caller (an allocated "" when nothing was added; the caller
 *	frees it) and leaves the buffer empty, as util_buf_free() does.
 */

#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for n more bytes and the NUL after them. */
static void buf_room(struct util_buf *b, size_t n)
{
    if (b->len + n + 1 > b->size) {
        b->size = 2 * (b->len + n + 1);
        b->data = xrealloc(b->data, b->size);
    }
}

void util_buf_add(struct util_buf *b, const void *p, size_t n)
{
    buf_room(b, n);
    if (n > 0)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = 0;
}

void util_buf_puts(struct util_buf *b, const char *s)
{
    util_buf_add(b, s, strlen(s));
}

void util_buf_printf(struct util_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        util_panic("util_buf_printf: bad format \"%s\"", fmt);
    buf_room(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void util_buf_reset(struct util_buf *b)
{
    b->len = 0;
    if (b->data != NULL)
        b->data[0] = 0;
}

char *util_buf_take(struct util_buf *b)
{
    char *s = b->data != NULL ? b->data : xstrdup("");

    b->data = NULL;
    b->len = b->size = 0;
    return s;
}

void util_buf_free(struct util_buf *b)
{
    free(util_buf_take(b));
}
