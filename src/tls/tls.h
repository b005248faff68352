#ifndef SLUICE_TLS_H
#define SLUICE_TLS_H

/*
 * NAME
 *	tls 3h - TLS on OpenSSL 3, for both SMTP sides
 * SYNOPSIS
 *	#include "tls/tls.h"
 *
 *	Contexts (context.c):
 *
 *	struct tls_context *tls_server_context_create(const char *prefix,
 *			const struct tls_files *files, char *why,
 *			size_t whylen)
 *	struct tls_context *tls_context_ref(struct tls_context *c)
 *	void	tls_context_free(struct tls_context *c)
 *
 *	Sessions (session.c):
 *
 *	struct bufferevent *tls_session_accept(struct tls_context *c,
 *			struct bufferevent *under)
 *	int	tls_session_active(struct bufferevent *bev)
 *	void	tls_session_summary(struct bufferevent *bev,
 *			struct tls_summary *out)
 *	void	tls_session_error(struct bufferevent *bev, char *why,
 *			size_t whylen)
 *	void	tls_session_free(struct bufferevent *bev)
 * DESCRIPTION
 *	The tls/ layer holds what the SMTP server (ingress/) and, later,
 *	the SMTP client (deliver/) share about TLS: OpenSSL contexts made
 *	from the configured files, a TLS session as a libevent filter
 *	bufferevent (bufferevent_openssl) over a connection's socket
 *	bufferevent, and the words the logs and the Received: header use
 *	for an established session, in Postfix's form.
 *
 *	tls_server_context_create() makes a server context from files:
 *	files->chain_files when it is not empty (Postfix's
 *	smtpd_tls_chain_files: each file holds a private key followed by
 *	its certificate and the chain), else files->cert_file (the
 *	certificate, then the chain) with files->key_file. prefix names
 *	the parameters in the reasons ("smtpd_tls" gives
 *	"smtpd_tls_cert_file /x: cannot read: No such file or directory",
 *	"smtpd_tls_key_file /k: does not match the certificate in /c").
 *	It returns NULL with the reason when a file cannot be read, holds
 *	no certificate or key, or the key does not match. Contexts are
 *	reference-counted: tls_context_ref() takes another reference, and
 *	tls_context_free() drops one. A session holds its own reference to
 *	the context it was made from, so a context replaced on reload stays
 *	alive for the sessions under way.
 *
 *	tls_session_accept() puts a server-side TLS filter over under (the
 *	connection's bufferevent, taken over: freeing the filter frees it)
 *	and returns the filter, or NULL (under is then still the caller's).
 *	The handshake runs as the filter reads; the filter's event callback
 *	gets BEV_EVENT_CONNECTED once it is done, BEV_EVENT_ERROR (or EOF)
 *	when it failed. A peer that closes without a TLS close_notify is an
 *	EOF, not an error (SMTP clients often do). tls_session_active()
 *	tells whether bev is such a filter. tls_session_summary() describes
 *	an established session: out->cipher is "TLSv1.3 with cipher
 *	TLS_AES_256_GCM_SHA384 (256/256 bits)", out->details "key-exchange
 *	X25519 server-signature RSA-PSS (2048 bits) server-digest SHA256"
 *	(Postfix 3.4's words; empty when OpenSSL does not say).
 *	tls_session_error() gives the reason a handshake failed: OpenSSL's
 *	queued errors, or "lost connection" when there are none.
 *	tls_session_free() frees a filter (or any bufferevent) after
 *	sending what the peer is still owed: the TLS close_notify and the
 *	encrypted bytes the filter had not yet written to the socket, as
 *	far as the socket takes them without waiting.
 */

#include <stddef.h>

struct bufferevent;
struct tls_context;

/* The files a context is made of; unused ones NULL or empty. */
struct tls_files {
    const char *cert_file;   /* certificate, then its chain (PEM) */
    const char *key_file;    /* private key (PEM) */
    const char *chain_files; /* list: key, certificate, chain per file */
};

/* An established session, in Postfix's words. */
struct tls_summary {
    char cipher[160];  /* "TLSv1.3 with cipher NAME (256/256 bits)" */
    char details[200]; /* "key-exchange ... server-digest SHA256" */
};

struct tls_context *tls_server_context_create(const char *prefix,
                                              const struct tls_files *files,
                                              char *why, size_t whylen);
struct tls_context *tls_context_ref(struct tls_context *c);
void tls_context_free(struct tls_context *c);

struct bufferevent *tls_session_accept(struct tls_context *c,
                                       struct bufferevent *under);
int tls_session_active(struct bufferevent *bev);
void tls_session_summary(struct bufferevent *bev, struct tls_summary *out);
void tls_session_error(struct bufferevent *bev, char *why, size_t whylen);
void tls_session_free(struct bufferevent *bev);

#endif
