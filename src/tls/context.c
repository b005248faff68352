/*
 * NAME
 *	context 3 - OpenSSL contexts made from the configured files
 * SYNOPSIS
 *	#include "tls/tls.h"
 *
 *	struct tls_context *tls_server_context_create(const char *prefix,
 *			const struct tls_files *files, char *why,
 *			size_t whylen)
 *	struct tls_context *tls_context_ref(struct tls_context *c)
 *	void	tls_context_free(struct tls_context *c)
 * DESCRIPTION
 *	A struct tls_context is an OpenSSL SSL_CTX under another name, so
 *	that no other layer needs OpenSSL's headers, and it is counted as
 *	OpenSSL counts it: SSL_CTX_up_ref() and SSL_CTX_free(). Every SSL
 *	object made from it holds a reference too, which is what lets a
 *	reload replace the server's context while sessions under way keep
 *	theirs.
 *
 *	tls_server_context_create() reads the files as tls.h says. Each
 *	file is first opened, so that "cannot read" names the file and the
 *	system's reason; OpenSSL's own reason (no PEM, a bad key) comes
 *	after the file's name otherwise. A key that does not match its
 *	certificate is refused here, at start or at reload, not at a
 *	client's first handshake.
 *
 *	Settings beyond the files are OpenSSL's defaults (protocols,
 *	ciphers, security level), with client-initiated renegotiation
 *	refused (a cheap way for a client to make the server work) and
 *	session resumption by ticket.
 */

#include "tls/tls.h"
#include "tls/tls_impl.h"

#include <errno.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

#define CTX(c) ((SSL_CTX *)(void *)(c))

/* OpenSSL's reason for the last failure, or fallback. */
const char *tls_ssl_reason(const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;

    ERR_clear_error();
    return r ? r : fallback;
}

/* Can file be opened for reading? With the reason when it cannot. */
int tls_file_readable(const char *prefix, const char *param, const char *file,
                      char *why, size_t whylen)
{
    FILE *f = fopen(file, "r");

    if (f == NULL) {
        snprintf(why, whylen, "%s_%s %s: cannot read: %s", prefix, param, file,
                 strerror(errno));
        return -1;
    }
    fclose(f);
    return 0;
}

static int load_cert(SSL_CTX *ctx, const char *prefix, const char *param,
                     const char *file, char *why, size_t whylen)
{
    if (tls_file_readable(prefix, param, file, why, whylen) < 0)
        return -1;
    if (SSL_CTX_use_certificate_chain_file(ctx, file) != 1) {
        snprintf(why, whylen, "%s_%s %s: no certificate: %s", prefix, param,
                 file, tls_ssl_reason("not a PEM certificate"));
        return -1;
    }
    return 0;
}

static int load_key(SSL_CTX *ctx, const char *prefix, const char *param,
                    const char *file, const char *cert, char *why,
                    size_t whylen)
{
    if (tls_file_readable(prefix, param, file, why, whylen) < 0)
        return -1;
    if (SSL_CTX_use_PrivateKey_file(ctx, file, SSL_FILETYPE_PEM) != 1) {
        const char *r = tls_ssl_reason("not a PEM private key");

        if (strstr(r, "mismatch") != NULL)
            snprintf(why, whylen,
                     "%s_%s %s: does not match the certificate in %s", prefix,
                     param, file, cert);
        else
            snprintf(why, whylen, "%s_%s %s: no private key: %s", prefix, param,
                     file, r);
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ERR_clear_error();
        snprintf(why, whylen, "%s_%s %s: does not match the certificate in %s",
                 prefix, param, file, cert);
        return -1;
    }
    return 0;
}

/* smtpd_tls_chain_files: each file a key, its certificate, its chain. */
static int load_chains(SSL_CTX *ctx, const char *prefix, const char *list,
                       char *why, size_t whylen)
{
    const char *sep = ", \t\r\n";
    char file[4096];

    for (const char *p = list + strspn(list, sep); *p; p += strspn(p, sep)) {
        size_t n = strcspn(p, sep);

        snprintf(file, sizeof(file), "%.*s", (int)n, p);
        p += n;
        /* the certificate first: the key is checked against it */
        if (load_cert(ctx, prefix, "chain_files", file, why, whylen) < 0 ||
            load_key(ctx, prefix, "chain_files", file, file, why, whylen) < 0)
            return -1;
    }
    return 0;
}

int tls_files_load(SSL_CTX *ctx, const char *prefix, const struct tls_files *f,
                   char *why, size_t whylen)
{
    const char *key;

    if (f->chain_files != NULL &&
        f->chain_files[strspn(f->chain_files, ", \t\r\n")] != 0)
        return load_chains(ctx, prefix, f->chain_files, why, whylen);
    if (f->cert_file == NULL || f->cert_file[0] == 0) {
        snprintf(why, whylen, "%s_cert_file: no certificate configured",
                 prefix);
        return -1;
    }
    key = f->key_file != NULL && f->key_file[0] ? f->key_file : f->cert_file;
    if (load_cert(ctx, prefix, "cert_file", f->cert_file, why, whylen) < 0)
        return -1;
    return load_key(ctx, prefix, "key_file", key, f->cert_file, why, whylen);
}

struct tls_context *tls_server_context_create(const char *prefix,
                                              const struct tls_files *files,
                                              char *why, size_t whylen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    static const unsigned char sid[] = "sluice";

    if (ctx == NULL) {
        snprintf(why, whylen, "%s: cannot make a TLS context: %s", prefix,
                 tls_ssl_reason("out of memory"));
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
                                 SSL_OP_CIPHER_SERVER_PREFERENCE);
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    if (tls_files_load(ctx, prefix, files, why, whylen) < 0) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    return (struct tls_context *)(void *)ctx;
}

struct tls_context *tls_context_ref(struct tls_context *c)
{
    if (c != NULL)
        SSL_CTX_up_ref(CTX(c));
    return c;
}

void tls_context_free(struct tls_context *c)
{
    if (c != NULL)
        SSL_CTX_free(CTX(c));
}
