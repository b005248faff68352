/*
 * NAME
 *	base64 3 - RFC 4648 base64, for MIME, SASL and DKIM
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	util_base64_encode(struct util_buf *b, const void *p,
 *			size_t n, size_t width)
 *	ssize_t	util_base64_decode(unsigned char *out, size_t outlen,
 *			const char *s, size_t n, int flags)
 * DESCRIPTION
 *	util_base64_encode() appends the n bytes at p to b in base64 with
 *	'=' padding. A width of 0 writes one run (SASL, DKIM, encoded
 *	words); a width (a multiple of 4) writes lines of that many
 *	characters with CRLF after each, the last line included (RFC 2045
 *	bodies use 76).
 *
 *	util_base64_decode() decodes the n characters at s into out, which
 *	holds outlen bytes (UTIL_BASE64_DECODED_MAX(n) always suffices). It
 *	returns the number of bytes written, or -1 when the text is not
 *	base64: a character outside the alphabet, padding that is missing
 *	or not at the end, a length that is not a multiple of 4, nonzero
 *	bits under the padding, or more output than outlen. With
 *	UTIL_BASE64_SPACE, white space (SP, HTAB, CR, LF) anywhere is
 *	skipped, as RFC 6376 asks of a DKIM key's p= tag; without it, white
 *	space is refused, as a SASL response must be (RFC 4954).
 */

#include "util/util.h"

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void util_base64_encode(struct util_buf *b, const void *p, size_t n,
                        size_t width)
{
    const unsigned char *s = p;
    size_t col = 0;

    for (size_t i = 0; i < n; i += 3) {
        unsigned long v = (unsigned long)s[i] << 16;
        char q[4];

        if (i + 1 < n)
            v |= (unsigned long)s[i + 1] << 8;
        if (i + 2 < n)
            v |= s[i + 2];
        q[0] = alphabet[(v >> 18) & 63];
        q[1] = alphabet[(v >> 12) & 63];
        q[2] = i + 1 < n ? alphabet[(v >> 6) & 63] : '=';
        q[3] = i + 2 < n ? alphabet[v & 63] : '=';
        util_buf_add(b, q, 4);
        col += 4;
        if (width > 0 && (col >= width || i + 3 >= n)) {
            util_buf_add(b, "\r\n", 2);
            col = 0;
        }
    }
}

/* A character's six bits, or -1. */
static int sextet(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

ssize_t util_base64_decode(unsigned char *out, size_t outlen, const char *s,
                           size_t n, int flags)
{
    unsigned long v = 0;
    size_t have = 0; /* characters in the current quantum */
    size_t pad = 0;
    size_t len = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int x;

        if (is_space(c)) {
            if (!(flags & UTIL_BASE64_SPACE))
                return -1;
            continue;
        }
        if (c == '=') {
            /* Padding only in the last two places of the last quantum. */
            if (have < 2)
                return -1;
            pad++;
            have++;
            v <<= 6;
        } else {
            if (pad > 0 || (x = sextet(c)) < 0)
                return -1;
            v = v << 6 | (unsigned long)x;
            have++;
        }
        if (have == 4) {
            size_t k = 3 - pad;

            /* The bits under the padding must be zero (RFC 4648 3.5). */
            if ((pad == 1 && (v & 0xff)) || (pad == 2 && (v & 0xffff)))
                return -1;
            if (len + k > outlen)
                return -1;
            out[len++] = (unsigned char)(v >> 16);
            if (k > 1)
                out[len++] = (unsigned char)(v >> 8);
            if (k > 2)
                out[len++] = (unsigned char)v;
            have = 0;
            v = 0;
            if (pad > 0) {
                /* Nothing but white space after the padding. */
                for (i++; i < n; i++)
                    if (!is_space((unsigned char)s[i]) ||
                        !(flags & UTIL_BASE64_SPACE))
                        return -1;
                break;
            }
        }
    }
    if (have != 0)
        return -1;
    return (ssize_t)len;
}
