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
 *	struct tls_context *tls_client_context_create(
 *			const struct tls_client_config *cf, char *why,
 *			size_t whylen)
 *
 *	Sessions (session.c):
 *
 *	struct bufferevent *tls_session_accept(struct tls_context *c,
 *			struct bufferevent *under)
 *	struct bufferevent *tls_session_connect(struct tls_context *c,
 *			struct bufferevent *under,
 *			const struct tls_connect_params *p)
 *	void	tls_session_peer(struct bufferevent *bev,
 *			struct tls_peer *out)
 *	int	tls_session_active(struct bufferevent *bev)
 *	void	tls_session_summary(struct bufferevent *bev,
 *			struct tls_summary *out)
 *	void	tls_session_error(struct bufferevent *bev, char *why,
 *			size_t whylen)
 *	void	tls_session_free(struct bufferevent *bev)
 *
 *	Policies (policy.c):
 *
 *	int	tls_level_parse(const char *word, enum tls_level *out)
 *	const char *tls_level_name(enum tls_level level)
 *	int	tls_level_enforced(enum tls_level level)
 *	int	tls_policy_parse(const char *text, struct tls_policy *p,
 *			char *why, size_t whylen)
 *	int	tls_protocols_parse(const char *text, int *min, int *max,
 *			char *why, size_t whylen)
 *	const char *tls_cipher_list(const char *grade)
 *	struct tls_policy_map *tls_policy_map_load(const char *param,
 *			const char *value, char *why, size_t whylen)
 *	int	tls_policy_map_find(const struct tls_policy_map *m,
 *			const char *nexthop, struct tls_policy *out)
 *	void	tls_policy_map_free(struct tls_policy_map *m)
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
 *	sending what the peer is still owed: what is in the filter's
 *	output, the TLS close_notify and the encrypted bytes the filter had not yet written to the socket, as
 *	far as the socket takes them without waiting.
 *
 *	The client side (the SMTP client's STARTTLS, decision 47):
 *	tls_client_context_create() makes the one client context of a
 *	daemon: the trusted CAs from cf->ca_file and cf->ca_path (both
 *	empty: the system's store, as Debian's packaged Postfix is set
 *	up), a client certificate from cf->files when one is configured
 *	(prefix "smtp_tls" in the reasons), DANE enabled, and a cache of
 *	sessions for resumption: at most TLS_RESUME_MAX sessions, each
 *	kept cf->session_timeout seconds, under the key its connection
 *	gave. cf->prefix names the parameters in the reasons (NULL:
 *	"smtp_tls"; the cluster's Redis client says "cluster_redis_tls").
 *
 *	tls_session_connect() puts a client-side TLS filter over under and
 *	starts the handshake; NULL when OpenSSL cannot (under is then
 *	still the caller's). p says what to send and check: p->servername
 *	for SNI (NULL: none); p->resume_key to resume a session made under
 *	that key and keep the new one there (NULL: no resumption; callers
 *	put in it everything the session was checked against: the peer,
 *	the name sent, the level, the names and TLSA records); the lowest
 *	and highest protocol versions (OpenSSL's TLS1_2_VERSION and so
 *	on; 0: no bound) and the TLS 1.2 cipher list; the names the
 *	certificate must match (p->match: "mx.example.com", or
 *	".example.com" for any name below it); DANE's TLSA records
 *	(p->tlsa, only usages DANE-TA(2) and DANE-EE(3) count, RFC 7672
 *	3.1) with p->dane_base, the TLSA base domain, as the name a
 *	DANE-TA certificate must match (DANE-EE matches no name, RFC 7672
 *	3.1.1). The handshake never fails for a certificate that does not
 *	verify: the caller decides from tls_session_peer() what its policy
 *	accepts.
 *
 *	tls_session_peer() tells what an established client session is
 *	worth: out->has_cert, out->trusted (the chain verified to a
 *	trusted CA, or DANE authenticated it), out->matched (trusted and
 *	one of p->match named in it; for DANE, authenticated by a usable
 *	TLSA record with its name check), out->dane (DANE decided),
 *	out->resumed, the certificate's subject CN and issuer CN, the
 *	verification's reason when it failed, out->expired when that
 *	reason is a certificate of the chain past its notAfter
 *	(X509_V_ERR_CERT_HAS_EXPIRED: a chain that is otherwise good, since
 *	OpenSSL stops at the first error and checks dates last), and the
 *	word Postfix's logs use: "Verified" (matched), "Trusted"
 *	(trusted, no name matched), "Untrusted" (a certificate that does
 *	not verify) or "Anonymous" (none).
 *
 *	Policies (policy.c) are the reference's: tls_level_parse() reads
 *	a level word of smtp_tls_security_level (none, may, encrypt, dane,
 *	dane-only, verify, secure), tls_level_name() writes it back, and
 *	tls_level_enforced() is 1 for the levels that never send mail in
 *	plaintext (all but none, may and dane, which falls back to may
 *	where DNSSEC gives no TLSA). tls_policy_parse() reads one policy
 *	of smtp_tls_policy_maps: a level, then attributes match=
 *	(names separated by ":"), protocols= and ciphers=; an unknown
 *	attribute or level is an error. tls_protocols_parse() reads a
 *	protocols value (">=TLSv1.2", "<=TLSv1.2", "TLSv1.2:TLSv1.3",
 *	"!SSLv2, !SSLv3", and the like) into the lowest and highest
 *	versions (0: no bound). tls_cipher_list() turns a grade (high,
 *	medium, low, export, null) into an OpenSSL cipher list, NULL for
 *	an unknown grade.
 *
 *	tls_policy_map_load() reads the table named by value (param is
 *	the parameter, for messages; NULL and no error for an empty value,
 *	NULL with why for an error). Its keys are next hops as the
 *	transport table writes them ("example.com", "[mx.example.com]",
 *	"[10.0.0.1]:2525") and ".example.com" for every domain below
 *	example.com; every value is a policy. tls_policy_map_find() looks
 *	up a next hop as route_nexthop_format() writes it: itself, then,
 *	for a domain, its parents as ".parent", nearest first. It returns
 *	1 with the policy in out, 0 when the table has none.
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

/* The reference's security levels (smtp_tls_security_level). */
enum tls_level {
    TLS_LEV_NONE,
    TLS_LEV_MAY,
    TLS_LEV_ENCRYPT,
    TLS_LEV_DANE,
    TLS_LEV_DANE_ONLY,
    TLS_LEV_VERIFY,
    TLS_LEV_SECURE,
};

/* A policy: the level and what the policy table may add to it. */
struct tls_policy {
    enum tls_level level;
    char match[512];     /* match=, ":"-separated; "": the level's own */
    char protocols[128]; /* protocols=; "": the parameter's */
    char ciphers[16];    /* ciphers=; "": the parameter's */
};

struct tls_client_config {
    const char *prefix;     /* the parameters' in reasons; NULL: smtp_tls */
    const char *ca_file;    /* smtp_tls_CAfile */
    const char *ca_path;    /* smtp_tls_CApath */
    struct tls_files files; /* client certificate; none when empty */
    int session_timeout;    /* seconds a session may be resumed; 0: none */
};

/* A TLSA record (RFC 6698). */
struct tls_tlsa {
    unsigned char usage, selector, mtype;
    const unsigned char *data;
    size_t len;
};

struct tls_connect_params {
    const char *servername;       /* SNI, or NULL */
    const char *resume_key;       /* or NULL: no resumption */
    int min_version, max_version; /* TLS1_2_VERSION...; 0: no bound */
    const char *ciphers;          /* TLS 1.2 cipher list, or NULL */
    const char *const *match;     /* names to match; see above */
    size_t nmatch;
    const struct tls_tlsa *tlsa; /* DANE, or NULL */
    size_t ntlsa;
    const char *dane_base; /* the TLSA base domain */
};

/* What an established client session is worth. */
struct tls_peer {
    int has_cert, trusted, matched, dane, resumed;
    int expired;       /* not trusted: a certificate has expired */
    const char *word;  /* Verified, Trusted, Untrusted or Anonymous */
    char subject[256]; /* the certificate's CN, or "" */
    char issuer[256];  /* its issuer's CN, or "" */
    char why[256];     /* why it did not verify, or "" */
};

#define TLS_RESUME_MAX 1000 /* sessions kept for resumption */

struct tls_policy_map;

struct tls_context *tls_server_context_create(const char *prefix,
                                              const struct tls_files *files,
                                              char *why, size_t whylen);
struct tls_context *tls_context_ref(struct tls_context *c);
void tls_context_free(struct tls_context *c);

struct bufferevent *tls_session_accept(struct tls_context *c,
                                       struct bufferevent *under);
struct tls_context *
tls_client_context_create(const struct tls_client_config *cf, char *why,
                          size_t whylen);
struct bufferevent *tls_session_connect(struct tls_context *c,
                                        struct bufferevent *under,
                                        const struct tls_connect_params *p);
void tls_session_peer(struct bufferevent *bev, struct tls_peer *out);
int tls_session_active(struct bufferevent *bev);
void tls_session_summary(struct bufferevent *bev, struct tls_summary *out);
void tls_session_error(struct bufferevent *bev, char *why, size_t whylen);
void tls_session_free(struct bufferevent *bev);

int tls_level_parse(const char *word, enum tls_level *out);
const char *tls_level_name(enum tls_level level);
int tls_level_enforced(enum tls_level level);
int tls_policy_parse(const char *text, struct tls_policy *p, char *why,
                     size_t whylen);
int tls_protocols_parse(const char *text, int *min, int *max, char *why,
                        size_t whylen);
const char *tls_cipher_list(const char *grade);
struct tls_policy_map *tls_policy_map_load(const char *param, const char *value,
                                           char *why, size_t whylen);
int tls_policy_map_find(const struct tls_policy_map *m, const char *nexthop,
                        struct tls_policy *out);
void tls_policy_map_free(struct tls_policy_map *m);

#endif
