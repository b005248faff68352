/*
 * NAME
 *	quote 3 - text in double quotes, for a message
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	util_quote(char *buf, size_t len, const char *text,
 *			size_t tlen, int flags)
 * DESCRIPTION
 *	util_quote() writes the tlen bytes of text into buf (len bytes) in
 *	double quotes, so that an error message can show what it refused
 *	whatever that holds: '"' and '\\' get a backslash, control bytes
 *	and DEL are written as \xHH, and so are bytes from 0x80 up unless
 *	flags has UTIL_QUOTE_8BIT (routing shows UTF-8 domains as they
 *	are). At most UTIL_QUOTE_MAX bytes of text are shown; when not
 *	all of it fits, in that limit or in buf, "..." before the closing
 *	quote says so. An escape is never split. A buf shorter than 8
 *	bytes gets "" (it could not hold a useful quote).
 */

#include "util/util.h"

#include <stdio.h>
#include <string.h>

/* One byte as it is shown: itself, \c or \xHH. Returns its length. */
static size_t quote_piece(char piece[8], unsigned char ch, int flags)
{
    if (ch == '"' || ch == '\\')
        return (size_t)snprintf(piece, 8, "\\%c", ch);
    if (ch < 0x20 || ch == 0x7f || (ch >= 0x80 && !(flags & UTIL_QUOTE_8BIT)))
        return (size_t)snprintf(piece, 8, "\\x%02x", ch);
    piece[0] = (char)ch;
    return 1;
}

void util_quote(char *buf, size_t len, const char *text, size_t tlen, int flags)
{
    size_t used = 0;
    size_t n;
    size_t plen;
    char piece[8];

    if (len == 0)
        return;
    if (len < 8) {
        buf[0] = 0;
        return;
    }
    buf[used++] = '"';
    for (n = 0; n < tlen && n < UTIL_QUOTE_MAX; n++) {
        plen = quote_piece(piece, (unsigned char)text[n], flags);
        /* Keep room for "...", the closing quote and the NUL. */
        if (used + plen + 5 > len)
            break;
        memcpy(buf + used, piece, plen);
        used += plen;
    }
    snprintf(buf + used, len - used, "%s\"", n < tlen ? "..." : "");
}
