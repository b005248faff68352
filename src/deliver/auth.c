/*
 * NAME
 *	auth 3 - the SMTP client's AUTH (RFC 4954): PLAIN and LOGIN
 * SYNOPSIS
 *	#include "deliver/smtp_impl.h"
 *
 *	int	auth_out_after_ehlo(struct deliver_session *s)
 *	void	auth_out_reply(struct deliver_session *s)
 *	char	*auth_out_cache_key(const struct deliver_session *s, int tls,
 *			const char *user)
 *	size_t	auth_out_users(const struct deliver_session *s,
 *			const char **users, size_t max)
 * DESCRIPTION
 *	auth_out_after_ehlo() runs after the last EHLO of a connection
 *	(after STARTTLS, the second one's keywords, RFC 3207 4.2): with no
 *	credentials for the server (deliver_passwd_find(): its name, then
 *	the next hop) it returns 0 and the transaction starts
 *	unauthenticated, as the reference talks to a server "like
 *	strangers". With credentials it returns 1 and either sends AUTH or
 *	gives up the address (decision 78): no AUTH keyword, or no
 *	mechanism the security options allow on this connection, is a
 *	failure of the address with dsn 4.7.0 and the reference's words,
 *	so the password never goes where it should not and the message
 *	never goes unauthenticated to a server that wants a login.
 *
 *	PLAIN (RFC 4616) is preferred, its response in the AUTH command
 *	("AUTH PLAIN base64(\0user\0password)"), unless the command would
 *	exceed RFC 5321's 512 bytes: then "AUTH PLAIN" and the response
 *	after the server's empty 334. LOGIN answers the two 334 challenges
 *	(Username:, Password:) with the user name and the password in
 *	base64, in that order, as the reference's SASL library does,
 *	whatever their wording; a challenge that is not base64, a third
 *	one, or one after PLAIN's response is a protocol error.
 *
 *	auth_out_reply() takes each reply in ST_AUTH: 334 continues, 235
 *	starts the transaction on an authenticated connection, anything
 *	else fails the address with "SASL authentication failed; server
 *	HOST[ADDR] said: CODE TEXT" and the server's enhanced code, a 5 made
 *	4 (the reference's smtp_sasl_auth_soft_bounce, always): recipients
 *	are deferred, never bounced, for a login problem (decision 79).
 *
 *	auth_out_cache_key() is the connection cache's key for a
 *	connection in TLS or not, authenticated as user (NULL or "": not
 *	authenticated), allocated, or NULL without a cache key.
 *	auth_out_endpoint_key() is the key of the same connection by its
 *	server's address (the request's cache_endpoint, the transport, then
 *	the session's endpoint "addr:port" and TLS policy), or NULL when
 *	the request asks for no such key or no address is known yet.
 *	auth_out_user_at() is the user this delivery would authenticate as
 *	at its address i ("": none).
 *	auth_out_users() lists the users this delivery would authenticate
 *	as at its addresses, "" for an address without credentials, each
 *	once, so that a cached connection is taken only when it was
 *	authenticated as this delivery would authenticate (or not at all).
 */

#include "deliver/smtp_impl.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* RFC 5321 4.5.3.1.4: a command line is 512 bytes with its CRLF. */
#define COMMAND_MAX 512

/* Append a line to the output; the caller's text may be secret. */
static void send_secret(struct deliver_session *s, struct util_buf *b)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);

    evbuffer_add(out, b->data, b->len);
    evbuffer_add(out, "\r\n", 2);
    if (b->data)
        explicit_bzero(b->data, b->len);
    util_buf_free(b);
}

/* The address failed at AUTH: the next one, noted for the warning. */
static void auth_fail(struct deliver_session *s, const char *dsn,
                      const char *reason)
{
    s->res->auth_failed = 1;
    snprintf(s->res->auth_key, sizeof(s->res->auth_key), "%s",
             s->cred.key ? s->cred.key : "");
    snprintf(s->res->auth_reason, sizeof(s->res->auth_reason), "%s", reason);
    connection_next_address_dsn(s, dsn, reason);
}

/* The mechanisms the security options allow on this connection. */
static unsigned allowed(const struct deliver_session *s)
{
    unsigned opts = s->tls_on ? s->req.sasl.tls_options : s->req.sasl.options;

    /* PLAIN and LOGIN send the password itself: never without TLS
     * under noplaintext, never under the options no such mechanism
     * meets */
    if (opts & (DELIVER_SASL_NOACTIVE | DELIVER_SASL_NODICTIONARY |
                DELIVER_SASL_MUTUAL_AUTH))
        return 0;
    if ((opts & DELIVER_SASL_NOPLAINTEXT) && !s->tls_on)
        return 0;
    return SMTP_AUTH_PLAIN | SMTP_AUTH_LOGIN;
}

int auth_out_after_ehlo(struct deliver_session *s)
{
    const struct deliver_addr *a = &s->req.addrs[s->addr];
    unsigned usable;
    char reason[600];
    struct util_buf b = {0};

    memset(&s->cred, 0, sizeof(s->cred));
    if (s->req.sasl.passwd == NULL ||
        !deliver_passwd_find(s->req.sasl.passwd, a->host, s->req.sasl.nexthop,
                             &s->cred))
        return 0;
    if (!(s->auth_offered & SMTP_AUTH_OFFERED)) {
        snprintf(reason, sizeof(reason),
                 "SASL authentication failed: server %s offered no AUTH",
                 s->peer);
        auth_fail(s, "4.7.0", reason);
        return 1;
    }
    usable = s->auth_offered & allowed(s);
    if (usable == 0) {
        snprintf(reason, sizeof(reason),
                 "SASL authentication failed: server %s offered no "
                 "compatible authentication mechanisms for this type of "
                 "connection security",
                 s->peer);
        auth_fail(s, "4.7.0", reason);
        return 1;
    }
    s->state = ST_AUTH;
    s->auth_step = 0;
    if (usable & SMTP_AUTH_PLAIN) {
        s->auth_mech = SMTP_AUTH_PLAIN;
        util_buf_add(&b, "AUTH PLAIN ", 11);
        smtp_auth_plain(&b, s->cred.user, s->cred.pass);
        if (b.len + 2 > COMMAND_MAX) {
            explicit_bzero(b.data, b.len);
            b.len = 0;
            util_buf_add(&b, "AUTH PLAIN", 10);
            s->auth_step = 1; /* the response awaits an empty 334 */
        }
        send_secret(s, &b);
    } else {
        s->auth_mech = SMTP_AUTH_LOGIN;
        evbuffer_add(bufferevent_get_output(s->bev), "AUTH LOGIN\r\n", 12);
    }
    connection_timer_arm(s, s->req.timeouts.helo);
    return 1;
}

/* A 334: the next response, or a protocol error (returns -1). */
static int challenge(struct deliver_session *s, char *reason, size_t len)
{
    unsigned char text[256];
    ssize_t n = smtp_auth_challenge(s->reply.text, text, sizeof(text));
    struct util_buf b = {0};
    const char *secret;

    explicit_bzero(text, sizeof(text));
    if (n < 0) {
        snprintf(reason, len,
                 "SASL authentication failed; cannot authenticate to "
                 "server %s: malformed challenge",
                 s->peer);
        return -1;
    }
    if (s->auth_mech == SMTP_AUTH_PLAIN && s->auth_step == 1 && n == 0) {
        smtp_auth_plain(&b, s->cred.user, s->cred.pass);
    } else if (s->auth_mech == SMTP_AUTH_LOGIN && s->auth_step < 2) {
        secret = s->auth_step == 0 ? s->cred.user : s->cred.pass;
        util_base64_encode(&b, secret, strlen(secret), 0);
    } else {
        snprintf(reason, len,
                 "SASL authentication failed; cannot authenticate to "
                 "server %s: unexpected %s challenge",
                 s->peer, s->auth_mech == SMTP_AUTH_PLAIN ? "PLAIN" : "LOGIN");
        return -1;
    }
    s->auth_step++;
    send_secret(s, &b);
    connection_timer_arm(s, s->req.timeouts.helo);
    return 0;
}

void auth_out_reply(struct deliver_session *s)
{
    char reason[SMTP_REPLY_MAX_TEXT / 8], dsn[16] = "4.7.0";

    if (s->reply.code == 334) {
        if (challenge(s, reason, sizeof(reason)) < 0)
            auth_fail(s, "4.7.0", reason);
        return;
    }
    if (s->reply.code == 235) {
        s->auth_long = strlen(s->cred.user) >= sizeof(s->auth_user);
        snprintf(s->auth_user, sizeof(s->auth_user), "%s", s->cred.user);
        protocol_handshake_passed(s);
        return;
    }
    /* the reference's smtp_sasl_auth_soft_bounce: 5.X.Y becomes 4.X.Y */
    if (s->reply.enhanced[0])
        snprintf(dsn, sizeof(dsn), "4%s", s->reply.enhanced + 1);
    snprintf(reason, sizeof(reason),
             "SASL authentication failed; server %s said: %d %s", s->peer,
             s->reply.code, s->reply.text ? s->reply.text : "");
    auth_fail(s, dsn, reason);
}

/* A cache key: base, then the login ("" none); allocated. */
static char *key_with_user(const char *base, const char *user)
{
    size_t n = strlen(base) + strlen(user ? user : "") + 8;
    char *key = xmalloc(n);

    snprintf(key, n, "%s\nauth=%s", base, user ? user : "");
    return key;
}

char *auth_out_cache_key(const struct deliver_session *s, int tls,
                         const char *user)
{
    const char *base = starttls_out_cache_key(s, tls);

    return base ? key_with_user(base, user) : NULL;
}

char *auth_out_endpoint_key(const struct deliver_session *s, int tls,
                            const char *user)
{
    char base[1800];

    if (s->req.cache_endpoint == NULL || s->endpoint[0] == 0 ||
        s->tls_ident == NULL)
        return NULL;
    snprintf(base, sizeof(base), "@%s\n%s\n%s\n%s", s->req.cache_endpoint,
             s->endpoint, s->tls_ident, tls ? "tls" : "plain");
    return key_with_user(base, user);
}

const char *auth_out_user_at(const struct deliver_session *s, size_t i)
{
    struct deliver_credentials c;

    if (s->req.sasl.passwd &&
        deliver_passwd_find(s->req.sasl.passwd, s->req.addrs[i].host,
                            s->req.sasl.nexthop, &c))
        return c.user;
    return "";
}

size_t auth_out_users(const struct deliver_session *s, const char **users,
                      size_t max)
{
    size_t n = 0;

    for (size_t i = 0; i < s->req.naddrs && n < max; i++) {
        const char *user = auth_out_user_at(s, i);
        size_t k;

        for (k = 0; k < n && strcmp(users[k], user) != 0; k++)
            ;
        if (k == n)
            users[n++] = user;
    }
    if (n == 0 && max > 0)
        users[n++] = "";
    return n;
}
