/*
 * NAME
 *	mech 3 - the messages of the PLAIN and LOGIN mechanisms
 * SYNOPSIS
 *	#include "sasl/sasl.h"
 *
 *	int	sasl_plain_parse(const unsigned char *msg, size_t len,
 *			char *authcid, char *passwd, char *why,
 *			size_t whylen)
 *	int	sasl_login_field(const unsigned char *msg, size_t len,
 *			char *out, char *why, size_t whylen)
 *	int	sasl_secret_equal(const char *a, const char *b)
 * DESCRIPTION
 *	These work on a response already decoded from base64.
 *
 *	sasl_plain_parse() reads PLAIN's one message (RFC 4616 2):
 *	[authzid] NUL authcid NUL passwd. authcid and passwd must be 1 to
 *	SASL_FIELD_MAX octets without NUL; the authorization identity
 *	must be empty or the same as authcid (sluice lets no one act as
 *	another user). authcid and passwd are copied NUL-terminated into
 *	buffers of SASL_FIELD_MAX + 1 bytes. Returns 0, or -1 with the
 *	reason.
 *
 *	sasl_login_field() reads one of LOGIN's two responses (the user
 *	name, then the password): 1 to SASL_FIELD_MAX octets, no NUL.
 *
 *	sasl_secret_equal() compares two strings in time that depends on
 *	their lengths only, not on where they differ (1: equal).
 */

#include "sasl/sasl.h"

#include <stdio.h>
#include <string.h>

/* One field of len octets: 1 to SASL_FIELD_MAX, no NUL. */
static int field(const unsigned char *p, size_t len, char *out,
                 const char *name, char *why, size_t whylen)
{
    if (len == 0 || len > SASL_FIELD_MAX || memchr(p, 0, len) != NULL) {
        snprintf(why, whylen, "%s %s", len == 0 ? "empty" : "invalid", name);
        return -1;
    }
    memcpy(out, p, len);
    out[len] = 0;
    return 0;
}

int sasl_plain_parse(const unsigned char *msg, size_t len, char *authcid,
                     char *passwd, char *why, size_t whylen)
{
    const unsigned char *nul1 = memchr(msg, 0, len), *nul2;
    size_t zlen;

    if (nul1 == NULL ||
        (nul2 = memchr(nul1 + 1, 0, len - (size_t)(nul1 + 1 - msg))) == NULL) {
        snprintf(why, whylen, "malformed PLAIN response");
        return -1;
    }
    zlen = (size_t)(nul1 - msg);
    if (field(nul1 + 1, (size_t)(nul2 - nul1 - 1), authcid,
              "authentication identity", why, whylen) < 0 ||
        field(nul2 + 1, len - (size_t)(nul2 + 1 - msg), passwd, "password", why,
              whylen) < 0)
        return -1;
    if (zlen > 0 && (zlen != strlen(authcid) || memcmp(msg, authcid, zlen))) {
        snprintf(why, whylen,
                 "authorization identity differs from the "
                 "authentication identity");
        return -1;
    }
    return 0;
}

int sasl_login_field(const unsigned char *msg, size_t len, char *out, char *why,
                     size_t whylen)
{
    return field(msg, len, out, "LOGIN response", why, whylen);
}

int sasl_secret_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = la != lb;

    /* every byte of b is looked at, whatever a is */
    for (size_t i = 0; i < lb; i++)
        diff |= (unsigned char)(b[i] ^ (la ? a[i % la] : 0));
    return diff == 0;
}
