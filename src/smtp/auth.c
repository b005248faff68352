/*
 * NAME
 *	auth 3 - SMTP AUTH (RFC 4954) without I/O: what a server offers, what
 *	a client says
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	unsigned smtp_ehlo_auth(const struct smtp_reply *r)
 *	void	smtp_auth_plain(struct util_buf *out, const char *user,
 *			const char *pass)
 *	ssize_t	smtp_auth_challenge(const char *text, unsigned char *out,
 *			size_t outlen)
 * DESCRIPTION
 *	smtp_ehlo_auth() reads the AUTH keyword of an EHLO reply (every line
 *	but the first): SMTP_AUTH_OFFERED when the server names AUTH at
 *	all, with SMTP_AUTH_PLAIN and SMTP_AUTH_LOGIN for the mechanisms
 *	the client speaks. The names are case-insensitive and separated by
 *	spaces; the pre-standard "AUTH=LOGIN PLAIN" that old servers send
 *	beside or instead of RFC 4954's "AUTH LOGIN PLAIN" counts too (the
 *	reference reads both). Other mechanisms are ignored.
 *
 *	smtp_auth_plain() appends to out the base64 of PLAIN's one message
 *	(RFC 4616, 2): an empty authorization identity, NUL, the
 *	authentication identity user, NUL, the password. The clear text is
 *	wiped from the stack after it has been encoded.
 *
 *	smtp_auth_challenge() decodes the text of a 334 reply (the server's
 *	challenge, RFC 4954, 4) into out and returns its length, 0 for an
 *	empty challenge ("334" or "334 "), or -1 when the text is not
 *	strict base64 (no white space inside, padding, alphabet) or does
 *	not fit in outlen bytes.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One mechanism name of an AUTH line: its bit, or 0. */
static unsigned mechanism(const char *name, size_t len)
{
    if (len == 5 && strncasecmp(name, "PLAIN", 5) == 0)
        return SMTP_AUTH_PLAIN;
    if (len == 5 && strncasecmp(name, "LOGIN", 5) == 0)
        return SMTP_AUTH_LOGIN;
    return 0;
}

unsigned smtp_ehlo_auth(const struct smtp_reply *r)
{
    unsigned offered = 0;

    for (size_t i = 1; i < r->nline; i++) {
        const char *p = r->line[i];

        if (strncasecmp(p, "AUTH", 4) != 0 ||
            (p[4] != ' ' && p[4] != '=' && p[4] != 0))
            continue;
        offered |= SMTP_AUTH_OFFERED;
        for (p += 4; *p;) {
            size_t len;

            p += strspn(p, " =");
            len = strcspn(p, " ");
            offered |= mechanism(p, len);
            p += len;
        }
    }
    return offered;
}

void smtp_auth_plain(struct util_buf *out, const char *user, const char *pass)
{
    size_t ul = strlen(user), pl = strlen(pass);
    unsigned char msg[2 * 1024 + 2];

    if (ul + pl + 2 > sizeof(msg)) {
        /* longer than any table line allows: encode from the heap */
        unsigned char *big = xmalloc(ul + pl + 2);

        big[0] = 0;
        memcpy(big + 1, user, ul);
        big[1 + ul] = 0;
        memcpy(big + 2 + ul, pass, pl);
        util_base64_encode(out, big, ul + pl + 2, 0);
        explicit_bzero(big, ul + pl + 2);
        free(big);
        return;
    }
    msg[0] = 0;
    memcpy(msg + 1, user, ul);
    msg[1 + ul] = 0;
    memcpy(msg + 2 + ul, pass, pl);
    util_base64_encode(out, msg, ul + pl + 2, 0);
    explicit_bzero(msg, sizeof(msg));
}

ssize_t smtp_auth_challenge(const char *text, unsigned char *out, size_t outlen)
{
    size_t n = text ? strlen(text) : 0;

    if (n == 0)
        return 0;
    return util_base64_decode(out, outlen, text, n, 0);
}
