#ifndef SLUICE_SASL_H
#define SLUICE_SASL_H

/*
 * NAME
 *	sasl 3h - SMTP AUTH's server side: mechanisms and back ends
 * SYNOPSIS
 *	#include "sasl/sasl.h"
 *
 *	The mechanisms' messages (mech.c):
 *
 *	int	sasl_plain_parse(const unsigned char *msg, size_t len,
 *			char *authcid, char *passwd, char *why,
 *			size_t whylen)
 *	int	sasl_login_field(const unsigned char *msg, size_t len,
 *			char *out, char *why, size_t whylen)
 *	int	sasl_secret_equal(const char *a, const char *b)
 *
 *	Dovecot's passwd-file (passwd.c):
 *
 *	int	sasl_passwd_line(const char *text, struct sasl_entry *e,
 *			char *why, size_t whylen)
 *	struct sasl_passwd *sasl_passwd_load(const char *path, char *why,
 *			size_t whylen)
 *	const struct sasl_entry *sasl_passwd_find(
 *			const struct sasl_passwd *p, const char *user)
 *	size_t	sasl_passwd_count(const struct sasl_passwd *p)
 *	void	sasl_passwd_free(struct sasl_passwd *p)
 *	int	sasl_entry_verify(const struct sasl_entry *e,
 *			const char *password)
 *
 *	The server and its conversations (server.c):
 *
 *	struct sasl_server *sasl_server_create(struct event_base *base,
 *			const struct sasl_params *p, char *why, size_t whylen)
 *	void	sasl_server_free(struct sasl_server *s)
 *	const char *sasl_server_type(const struct sasl_server *s)
 *	struct sasl_conv *sasl_conv_start(struct sasl_server *s,
 *			const char *mech, const char *initial,
 *			const struct sasl_client *client,
 *			sasl_reply_fn *fn, void *arg)
 *	void	sasl_conv_step(struct sasl_conv *c, const char *response)
 *	const char *sasl_conv_user(const struct sasl_conv *c)
 *	void	sasl_conv_free(struct sasl_conv *c)
 * DESCRIPTION
 *	The sasl/ layer answers one question for the SMTP server: are
 *	these credentials good? A conversation (RFC 4954's exchange of
 *	challenges and responses, base64 on both sides) runs against a
 *	back end chosen by smtpd_sasl_type: "passwd-file", built in,
 *	reading Dovecot's passwd-file format (passwd.c, file.c), whose
 *	password hashes are checked by a worker thread (worker.c), or
 *	"dovecot", Dovecot's auth service spoken to over its Unix socket
 *	(dovecot.c). Both are vtables behind server.c. Mechanisms are
 *	PLAIN (RFC 4616) and LOGIN; none that needs passwords kept in
 *	the clear.
 *
 *	Nothing here blocks the event loop: every answer comes back
 *	through fn(arg, result, text) from the loop, never from inside
 *	sasl_conv_start() or sasl_conv_step(), and once per call:
 *	SASL_MORE with the next challenge (base64, possibly empty),
 *	SASL_DONE with the authenticated user name, SASL_FAIL with the
 *	reason (bad credentials: 535), SASL_TEMP with the reason (the
 *	back end cannot tell now: 454). SASL_BAD says that a response
 *	was not base64 or not the mechanism's syntax (501).
 *	sasl_conv_free() ends a conversation at any time; no answer
 *	follows it.
 *
 *	A server is reference-counted: conversations hold their server,
 *	so that a reload can put a new one in place while old sessions
 *	finish against the old. sasl_server_create() with base NULL only
 *	checks the parameters and reads the files (for "sluice config").
 */

#include <stddef.h>

struct event_base;
struct sasl_server;
struct sasl_conv;
struct sasl_passwd;

#define SASL_FIELD_MAX 255 /* octets of a user name or password (RFC 4616) */
#define SASL_MECH_MAX  20  /* octets of a mechanism name (RFC 4422 3.1) */

/* The mechanisms sluice offers, in the order of the EHLO keyword. */
#define SASL_MECHANISMS "PLAIN LOGIN"

enum sasl_result {
    SASL_MORE, /* text: the next challenge, base64 */
    SASL_DONE, /* text: the authenticated user */
    SASL_FAIL, /* text: why the credentials are refused */
    SASL_TEMP, /* text: why the back end cannot answer now */
    SASL_BAD,  /* text: why the response is malformed */
};

typedef void sasl_reply_fn(void *arg, enum sasl_result r, const char *text);

/* The password schemes of the passwd-file back end. */
enum sasl_scheme {
    SASL_SCHEME_PLAIN,  /* {PLAIN}, {CLEAR} */
    SASL_SCHEME_CRYPT,  /* {CRYPT}, and a secret without a scheme */
    SASL_SCHEME_SHA512, /* {SHA512-CRYPT}: $6$ */
    SASL_SCHEME_SHA256, /* {SHA256-CRYPT}: $5$ */
    SASL_SCHEME_BLF,    /* {BLF-CRYPT}: $2a$, $2b$, $2y$ */
};

/* One line of a passwd-file. */
struct sasl_entry {
    char user[SASL_FIELD_MAX + 1];
    enum sasl_scheme scheme;
    char secret[512]; /* the password or its crypt(3) hash */
};

/* The parameters; strings are copied. */
struct sasl_params {
    const char *type;    /* smtpd_sasl_type: passwd-file or dovecot */
    const char *path;    /* smtpd_sasl_path */
    long timeout_ms;     /* smtpd_sasl_service_timeout */
    const char *service; /* Dovecot's service=, "smtp" when NULL */
};

/* The client, as the back end is told (Dovecot's rip, lip, secured). */
struct sasl_client {
    const char *rip; /* remote address, or NULL */
    const char *lip; /* local address, or NULL */
    int secured;     /* the session is in TLS */
};

int sasl_plain_parse(const unsigned char *msg, size_t len, char *authcid,
                     char *passwd, char *why, size_t whylen);
int sasl_login_field(const unsigned char *msg, size_t len, char *out, char *why,
                     size_t whylen);
int sasl_secret_equal(const char *a, const char *b);

int sasl_passwd_line(const char *text, struct sasl_entry *e, char *why,
                     size_t whylen);
struct sasl_passwd *sasl_passwd_load(const char *path, char *why,
                                     size_t whylen);
const struct sasl_entry *sasl_passwd_find(const struct sasl_passwd *p,
                                          const char *user);
size_t sasl_passwd_count(const struct sasl_passwd *p);
void sasl_passwd_free(struct sasl_passwd *p);
int sasl_entry_verify(const struct sasl_entry *e, const char *password);

struct sasl_server *sasl_server_create(struct event_base *base,
                                       const struct sasl_params *p, char *why,
                                       size_t whylen);
void sasl_server_free(struct sasl_server *s);
const char *sasl_server_type(const struct sasl_server *s);
struct sasl_conv *sasl_conv_start(struct sasl_server *s, const char *mech,
                                  const char *initial,
                                  const struct sasl_client *client,
                                  sasl_reply_fn *fn, void *arg);
void sasl_conv_step(struct sasl_conv *c, const char *response);
const char *sasl_conv_user(const struct sasl_conv *c);
void sasl_conv_free(struct sasl_conv *c);

#endif
