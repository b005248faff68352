/*
 * NAME
 *	mx 3 - host names and the MX patterns of a policy
 * SYNOPSIS
 *	#include "sts/sts_impl.h"
 *
 *	int	sts_mx_match(const struct sts_policy *p, const char *mx_host)
 *	int	sts_name_valid(const char *name, size_t len)
 *	int	sts_name_norm(char *out, size_t size, const char *name)
 * DESCRIPTION
 *	RFC 8461 section 4.1: "Matching is identical to the rules given in
 *	[RFC6125], with restriction that the wildcard character "*" may
 *	only be used to match the entire left-most label in the presented
 *	identifier. Thus, the mx pattern "*.example.com" matches
 *	"mail.example.com" but not "example.com" or "foo.bar.example.com"."
 *	Names compare without regard to ASCII case, and a trailing dot (a
 *	fully qualified name as DNS writes it) is not part of the name.
 *
 *	sts_name_valid() tells whether the len bytes at name are a host
 *	name: dot-separated labels of 1 to 63 letters, digits, "-" or "_"
 *	(internationalized names come as A-labels), at most 253 bytes. 1
 *	or 0.
 *
 *	sts_name_norm() writes name in lower case, without a trailing dot,
 *	to out: 0, or -1 when it is not a host name or does not fit.
 */

#include "sts/sts_impl.h"

#include <string.h>
#include <strings.h>

int sts_name_valid(const char *name, size_t len)
{
    size_t label = 0;

    if (len == 0 || len > STS_NAME_MAX)
        return 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];

        if (c == '.') {
            if (label == 0)
                return 0;
            label = 0;
        } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (c >= '0' && c <= '9') || c == '-' || c == '_') {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return label > 0;
}

int sts_name_norm(char *out, size_t size, const char *name)
{
    size_t len = strlen(name);

    if (len > 0 && name[len - 1] == '.')
        len--;
    if (!sts_name_valid(name, len) || len + 1 > size)
        return -1;
    for (size_t i = 0; i < len; i++)
        out[i] =
            (name[i] >= 'A' && name[i] <= 'Z') ? name[i] - 'A' + 'a' : name[i];
    out[len] = 0;
    return 0;
}

/* Does one pattern (already checked by the parser) match host? */
static int pattern_match(const char *pattern, const char *host, size_t hlen)
{
    size_t plen = strlen(pattern);
    const char *dot;

    if (plen > 0 && pattern[plen - 1] == '.')
        plen--;
    if (plen < 2 || pattern[0] != '*' || pattern[1] != '.')
        return plen == hlen && strncasecmp(pattern, host, hlen) == 0;
    /* "*.rest": one whole label, then ".rest" exactly. */
    if ((dot = memchr(host, '.', hlen)) == NULL || dot == host)
        return 0;
    return (size_t)(host + hlen - dot) == plen - 1 &&
           strncasecmp(dot, pattern + 1, plen - 1) == 0;
}

int sts_mx_match(const struct sts_policy *p, const char *mx_host)
{
    size_t hlen;

    if (p == NULL || mx_host == NULL)
        return 0;
    hlen = strlen(mx_host);
    if (hlen > 0 && mx_host[hlen - 1] == '.')
        hlen--;
    if (!sts_name_valid(mx_host, hlen))
        return 0;
    for (size_t i = 0; i < p->nmx; i++)
        if (pattern_match(p->mx[i], mx_host, hlen))
            return 1;
    return 0;
}
