#ifndef SLUICE_TLS_IMPL_H
#define SLUICE_TLS_IMPL_H

/*
 * NAME
 *	tls_impl 3h - what the files of tls/ share, and only they
 * SYNOPSIS
 *	#include "tls/tls_impl.h"
 *
 *	Files (context.c):
 *	const char *tls_ssl_reason(const char *fallback)
 *	int	tls_file_readable(const char *prefix, const char *param,
 *			const char *file, char *why, size_t whylen)
 *	int	tls_files_load(SSL_CTX *ctx, const char *prefix,
 *			const struct tls_files *f, char *why, size_t whylen)
 *
 *	Client connections (client.c):
 *	int	tls_client_resume(SSL *ssl, const char *key)
 *	struct tls_conn *tls_conn_of(SSL *ssl)
 * DESCRIPTION
 *	tls_ssl_reason() is OpenSSL's reason for its last failure (or
 *	fallback), clearing its error queue. tls_file_readable() opens a
 *	file to name it and the system's reason in "PREFIX_PARAM FILE:
 *	cannot read: ..." when it cannot be read. tls_files_load() loads a
 *	certificate, its chain and key (tls.h's struct tls_files) into
 *	ctx, with reasons that name the PREFIX_ parameters.
 *
 *	A struct tls_conn is what tls/ remembers of one client connection
 *	(SSL ex_data, freed with the SSL): the key its session is kept
 *	under, the names its certificate must match, and whether DANE
 *	decides. tls_conn_of() makes it on first use. tls_client_resume()
 *	offers the session kept under key and makes key the connection's.
 */

#include "tls/tls.h"

#include <openssl/ssl.h>
#include <stddef.h>

struct tls_conn {
    char *key;    /* resumption key, or NULL */
    char **match; /* names to match */
    size_t nmatch;
    int dane;        /* TLSA records were given */
    int dane_usable; /* and some were DANE-TA or DANE-EE */
};

const char *tls_ssl_reason(const char *fallback);
int tls_file_readable(const char *prefix, const char *param, const char *file,
                      char *why, size_t whylen);
int tls_files_load(SSL_CTX *ctx, const char *prefix, const struct tls_files *f,
                   char *why, size_t whylen);
int tls_client_resume(SSL *ssl, const char *key);
struct tls_conn *tls_conn_of(SSL *ssl);

#endif
