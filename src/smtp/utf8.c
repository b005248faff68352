/*
 * NAME
 *	utf8 3 - UTF-8 in SMTP: well-formed text, and text that needs it
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_utf8_valid(const char *s, size_t len)
 *	int	smtp_ascii(const char *s, size_t len)
 *	int	smtp_header_ascii(const char *msg, size_t len)
 * DESCRIPTION
 *	SMTPUTF8 (RFC 6531) lets addresses and header fields carry UTF-8,
 *	and only UTF-8 (RFC 6531, 3.3: "UTF-8 strings"; RFC 6532, 3.1).
 *
 *	smtp_utf8_valid() tells whether s[0..len) is well-formed UTF-8 as
 *	RFC 3629, 4 defines it: no overlong forms, no surrogates (U+D800
 *	to U+DFFF), nothing above U+10FFFF, no sequence cut short. ASCII
 *	is UTF-8. The SMTP server refuses a command line that is not
 *	("500 5.5.2 Error: bad UTF-8 syntax", as the reference does, so
 *	that no malformed text reaches the spool or the log).
 *
 *	smtp_ascii() tells whether s[0..len) is 7-bit: an address for
 *	which SMTPUTF8 is not needed. smtp_header_ascii() tells the same
 *	of the header section of a message (its bytes up to the first
 *	empty line, or all of it): the reference's test for whether a
 *	message that asked for SMTPUTF8 needs it on the way out
 *	(smtputf8.h: SMTPUTF8_FLAG_HEADER).
 */

#include "smtp/smtp.h"

#include <string.h>

/* The length of the sequence a lead byte starts, and its lowest value. */
static int lead(unsigned char c, unsigned long *min, unsigned long *v)
{
    if (c < 0x80) {
        *v = c;
        return 1;
    }
    if (c >= 0xc2 && c <= 0xdf) {
        *v = c & 0x1f;
        *min = 0x80;
        return 2;
    }
    if (c >= 0xe0 && c <= 0xef) {
        *v = c & 0x0f;
        *min = 0x800;
        return 3;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        *v = c & 0x07;
        *min = 0x10000;
        return 4;
    }
    return 0; /* a continuation byte, 0xc0, 0xc1, or past 0xf4 */
}

int smtp_utf8_valid(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < len) {
        unsigned long min = 0, v;
        int n = lead(p[i], &min, &v);

        if (n == 0 || (size_t)n > len - i)
            return 0;
        for (int k = 1; k < n; k++) {
            if ((p[i + k] & 0xc0) != 0x80)
                return 0;
            v = v << 6 | (p[i + k] & 0x3f);
        }
        if (n > 1 && (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)))
            return 0;
        i += (size_t)n;
    }
    return 1;
}

int smtp_ascii(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] >= 0x80)
            return 0;
    return 1;
}

int smtp_header_ascii(const char *msg, size_t len)
{
    const char *end = msg + len;

    for (const char *p = msg; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);

        if (n == 1 || (n == 2 && p[0] == '\r'))
            return 1; /* the empty line: the body begins */
        if (!smtp_ascii(p, n))
            return 0;
        p += n;
    }
    return 1;
}
