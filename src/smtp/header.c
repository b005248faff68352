/*
 * NAME
 *	header 3 - one header field's value, from a message's text
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_header_value(const char *text, size_t len,
 *			const char *name, char *out, size_t outlen)
 * DESCRIPTION
 *	smtp_header_value() looks in the header section of the message in
 *	text (len bytes: it may be only the message's start) for the first
 *	field called name (without regard to case, white space allowed
 *	before the colon) and writes its value to out: continuation lines
 *	unfolded (CRLF or LF before white space removed), white space at
 *	both ends trimmed, cut to outlen - 1 bytes, NUL-terminated. The
 *	header section ends at the first empty line or at a line that is
 *	neither a field nor a continuation. It returns 1 when the field
 *	was found, 0 when not (out is then "").
 */

#include "smtp/smtp.h"

#include <string.h>
#include <strings.h>

/* The end of the line at p (past its LF), or end. */
static const char *line_end(const char *p, const char *end)
{
    const char *nl = memchr(p, '\n', (size_t)(end - p));

    return nl ? nl + 1 : end;
}

int smtp_header_value(const char *text, size_t len, const char *name, char *out,
                      size_t outlen)
{
    const char *p = text, *end = text + len;
    size_t nlen = strlen(name), o = 0;
    int in_field = 0, found = 0;

    if (outlen > 0)
        out[0] = 0;
    while (p < end) {
        const char *next = line_end(p, end);
        const char *colon;

        if (*p == '\r' || *p == '\n')
            break; /* the empty line */
        if (*p == ' ' || *p == '\t') {
            if (in_field) {
                for (const char *c = p; c < next && outlen > 0; c++)
                    if (*c != '\r' && *c != '\n' && o + 1 < outlen)
                        out[o++] = *c;
            }
            p = next;
            continue;
        }
        if (found)
            break;
        colon = memchr(p, ':', (size_t)(next - p));
        if (colon == NULL)
            break; /* not a header field: the body starts */
        in_field = 0;
        {
            const char *n = colon;

            while (n > p && (n[-1] == ' ' || n[-1] == '\t'))
                n--;
            if ((size_t)(n - p) == nlen && strncasecmp(p, name, nlen) == 0) {
                const char *v = colon + 1;

                in_field = found = 1;
                while (v < next && (*v == ' ' || *v == '\t'))
                    v++;
                for (const char *c = v; c < next && outlen > 0; c++)
                    if (*c != '\r' && *c != '\n' && o + 1 < outlen)
                        out[o++] = *c;
            }
        }
        p = next;
    }
    if (outlen == 0)
        return found;
    /* Trim both ends. */
    while (o > 0 && (out[o - 1] == ' ' || out[o - 1] == '\t'))
        o--;
    out[o] = 0;
    {
        size_t lead = strspn(out, " \t");

        memmove(out, out + lead, o - lead + 1);
    }
    return found;
}
