/*
 * NAME
 *	session 3 - one TLS session, as a libevent filter bufferevent
 * SYNOPSIS
 *	#include "tls/tls.h"
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
 *	A TLS session is libevent's bufferevent_openssl in filter mode
 *	over the connection's socket bufferevent (decision 44): the SMTP
 *	session goes on reading and writing plain text through the filter,
 *	with the same callbacks, watermarks and deadlines as before, and
 *	the handshake, partial records and WANT_READ/WANT_WRITE retries are
 *	libevent's business. A filter rather than a new socket bufferevent
 *	because STARTTLS switches a connection that already has one, with
 *	its buffers, and implicit TLS then takes the same path.
 *
 *	tls_session_summary() follows Postfix's tls_log_summary() and
 *	smtpd's Received: comment: the protocol and cipher with its secret
 *	and algorithm bits, then the key exchange (X25519, X448, or
 *	"ECDHE (P-256)", "DHE (2048 bits)"), the server's signature (its
 *	key: "RSA-PSS (2048 bits)" when the handshake signed with PSS, as
 *	TLS 1.3 always does, "RSA (2048 bits)", "ECDSA (P-256)",
 *	"ED25519") and the signature's digest.
 *
 *	tls_session_free() sends the TLS close_notify of an established
 *	session and writes what the filter left in the socket
 *	bufferevent's output straight to the socket, without waiting: the
 *	last reply of an SMTP session ("221 2.0.0 Bye", a 421) is small,
 *	and freeing the filter would otherwise throw it away.
 */

#include "tls/tls.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <string.h>

struct bufferevent *tls_session_accept(struct tls_context *c,
                                       struct bufferevent *under)
{
    SSL *ssl = SSL_new((SSL_CTX *)(void *)c);
    struct bufferevent *bev;

    if (ssl == NULL)
        return NULL;
    /* on failure libevent frees ssl (BEV_OPT_CLOSE_ON_FREE) */
    bev = bufferevent_openssl_filter_new(bufferevent_get_base(under), under,
                                         ssl, BUFFEREVENT_SSL_ACCEPTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL)
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

int tls_session_active(struct bufferevent *bev)
{
    return bev != NULL && bufferevent_openssl_get_ssl(bev) != NULL;
}

/* "P-256" for a NIST curve, else OpenSSL's short name. */
static const char *curve_name(int nid)
{
    const char *n = EC_curve_nid2nist(nid);

    return n ? n : OBJ_nid2sn(nid);
}

static size_t add_kex(SSL *ssl, char *out, size_t len)
{
    int nid = SSL_get_negotiated_group(ssl);

    if (nid == NID_undef || nid == 0)
        return 0;
    if (nid == NID_X25519 || nid == NID_X448)
        return (size_t)snprintf(out, len, "key-exchange %s", OBJ_nid2sn(nid));
    if (nid >= NID_ffdhe2048 && nid <= NID_ffdhe8192)
        return (size_t)snprintf(out, len, "key-exchange DHE (%s)",
                                OBJ_nid2sn(nid));
    return (size_t)snprintf(out, len, "key-exchange ECDHE (%s)",
                            curve_name(nid));
}

static size_t add_signature(SSL *ssl, char *out, size_t len)
{
    EVP_PKEY *key = SSL_get_privatekey(ssl);
    char group[64];
    int nid = NID_undef;
    size_t n = 0;

    if (key == NULL || len == 0)
        return 0;
    switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
        n = (size_t)snprintf(out, len, "server-signature %s (%d bits)",
                             SSL_get_signature_type_nid(ssl, &nid) &&
                                     nid == EVP_PKEY_RSA_PSS
                                 ? "RSA-PSS"
                                 : "RSA",
                             EVP_PKEY_get_bits(key));
        break;
    case EVP_PKEY_EC:
        if (EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof(group),
                                           NULL) != 1)
            snprintf(group, sizeof(group), "unknown");
        n = (size_t)snprintf(out, len, "server-signature ECDSA (%s)",
                             curve_name(OBJ_sn2nid(group)));
        break;
    case EVP_PKEY_ED25519:
        n = (size_t)snprintf(out, len, "server-signature ED25519");
        break;
    case EVP_PKEY_ED448:
        n = (size_t)snprintf(out, len, "server-signature ED448");
        break;
    default:
        return 0;
    }
    if (n < len && SSL_get_signature_nid(ssl, &nid) && nid != NID_undef)
        n += (size_t)snprintf(out + n, len - n, " server-digest %s",
                              OBJ_nid2sn(nid));
    return n;
}

void tls_session_summary(struct bufferevent *bev, struct tls_summary *out)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    const SSL_CIPHER *c = ssl ? SSL_get_current_cipher(ssl) : NULL;
    int alg_bits = 0, bits;
    size_t n;

    out->cipher[0] = out->details[0] = 0;
    if (c == NULL)
        return;
    bits = SSL_CIPHER_get_bits(c, &alg_bits);
    snprintf(out->cipher, sizeof(out->cipher), "%s with cipher %s (%d/%d bits)",
             SSL_get_version(ssl), SSL_CIPHER_get_name(c), bits, alg_bits);
    n = add_kex(ssl, out->details, sizeof(out->details));
    if (n > 0 && n + 1 < sizeof(out->details))
        out->details[n++] = ' ';
    if (n < sizeof(out->details) &&
        add_signature(ssl, out->details + n, sizeof(out->details) - n) == 0 &&
        n > 0)
        out->details[n - 1] = 0; /* no signature: no trailing space */
}

void tls_session_error(struct bufferevent *bev, char *why, size_t whylen)
{
    unsigned long e, first = 0;

    while ((e = bufferevent_get_openssl_error(bev)) != 0)
        if (first == 0)
            first = e;
    if (first != 0)
        ERR_error_string_n(first, why, whylen);
    else
        snprintf(why, whylen, "lost connection");
}

void tls_session_free(struct bufferevent *bev)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    struct bufferevent *under = bufferevent_get_underlying(bev);
    struct evbuffer *out;
    int fd;

    if (ssl != NULL && under != NULL) {
        if (SSL_is_init_finished(ssl))
            (void)SSL_shutdown(ssl); /* close_notify, into under's output */
        ERR_clear_error();
        fd = bufferevent_getfd(under);
        out = bufferevent_get_output(under);
        /* a socket bufferevent keeps its output's start frozen: only it
         * writes, and it is about to be freed */
        evbuffer_unfreeze(out, 1);
        if (fd >= 0)
            (void)evbuffer_write(out, fd);
    }
    bufferevent_free(bev);
}
