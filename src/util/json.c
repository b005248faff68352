/*
 * NAME
 *	json 3 - a JSON string (RFC 8259) from text that may hold anything
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	util_json_string(struct util_buf *b, const char *s)
 * DESCRIPTION
 *	util_json_string() appends s to b as a JSON string in double
 *	quotes: '"' and '\\' get a backslash, newline and tab their short
 *	escapes, other control bytes and DEL \u00XX. Well-formed UTF-8 is
 *	kept as it is; a byte that does not start or continue a
 *	well-formed sequence (text from a log, a reply or an address is
 *	not always UTF-8) becomes U+FFFD, so that what is written is always
 *	valid JSON for a strict parser. A NULL s is written as "".
 */

#include "util/util.h"

#include <string.h>

/* Length of the well-formed UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_length(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned long cp;

    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    /* Overlong forms, surrogates and past U+10FFFF are not UTF-8. */
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void util_json_string(struct util_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);

    util_buf_add(b, "\"", 1);
    while (n > 0) {
        size_t len;

        if (*p == '"' || *p == '\\') {
            util_buf_printf(b, "\\%c", *p);
        } else if (*p == '\n') {
            util_buf_add(b, "\\n", 2);
        } else if (*p == '\t') {
            util_buf_add(b, "\\t", 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            util_buf_printf(b, "\\u%04x", *p);
        } else if (*p < 0x80) {
            util_buf_add(b, p, 1);
        } else if ((len = utf8_length(p, n)) > 0) {
            util_buf_add(b, p, len);
            p += len;
            n -= len;
            continue;
        } else {
            util_buf_add(b, "\\ufffd", 6);
        }
        p++;
        n--;
    }
    util_buf_add(b, "\"", 1);
}
