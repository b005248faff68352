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
 *	tls_session_free() encrypts what is still in the filter's output
 *	(the client's last "QUIT" to a cached connection), sends the TLS
 *	close_notify of an established session and writes what the filter left in the socket
 *	bufferevent's output straight to the socket, without waiting: the
 *	last reply of an SMTP session ("221 2.0.0 Bye", a 421) is small,
 *	and freeing the filter would otherwise throw it away.
 */

#include "tls/tls.h"
#include "tls/tls_impl.h"
#include "util/util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>
#include <stdint.h>
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

/* What the client checks and sends, set on a new SSL. */
static int client_setup(SSL *ssl, const struct tls_connect_params *p)
{
    struct tls_conn *tc = tls_conn_of(ssl);

    if (p->servername && p->servername[0] &&
        SSL_set_tlsext_host_name(ssl, p->servername) != 1)
        return -1;
    if ((p->min_version &&
         SSL_set_min_proto_version(ssl, p->min_version) != 1) ||
        (p->max_version && SSL_set_max_proto_version(ssl, p->max_version) != 1))
        return -1;
    if (p->ciphers && SSL_set_cipher_list(ssl, p->ciphers) != 1)
        return -1;
    tc->match = xcalloc(p->nmatch ? p->nmatch : 1, sizeof(*tc->match));
    for (size_t i = 0; i < p->nmatch; i++)
        tc->match[tc->nmatch++] = xstrdup(p->match[i]);
    if (p->ntlsa > 0) {
        tc->dane = 1;
        if (SSL_dane_enable(ssl, p->dane_base) <= 0)
            return -1;
        /* RFC 7672 3.1.1: no name checks for DANE-EE(3) */
        SSL_dane_set_flags(ssl, DANE_FLAG_NO_DANE_EE_NAMECHECKS);
        for (size_t i = 0; i < p->nmatch; i++)
            if (strcmp(p->match[i], p->dane_base) != 0)
                SSL_add1_host(ssl, p->match[i]);
        for (size_t i = 0; i < p->ntlsa; i++) {
            const struct tls_tlsa *t = &p->tlsa[i];

            /* RFC 7672 3.1: PKIX-TA(0) and PKIX-EE(1) are unusable */
            if (t->usage != 2 && t->usage != 3)
                continue;
            if (SSL_dane_tlsa_add(ssl, t->usage, t->selector, t->mtype, t->data,
                                  t->len) > 0)
                tc->dane_usable = 1;
        }
        ERR_clear_error(); /* malformed records are unusable, no more */
    }
    if (p->resume_key)
        tls_client_resume(ssl, p->resume_key);
    return 0;
}

struct bufferevent *tls_session_connect(struct tls_context *c,
                                        struct bufferevent *under,
                                        const struct tls_connect_params *p)
{
    SSL *ssl = SSL_new((SSL_CTX *)(void *)c);
    struct bufferevent *bev;

    if (ssl == NULL)
        return NULL;
    if (client_setup(ssl, p) < 0) {
        ERR_clear_error();
        SSL_free(ssl);
        return NULL;
    }
    bev = bufferevent_openssl_filter_new(bufferevent_get_base(under), under,
                                         ssl, BUFFEREVENT_SSL_CONNECTING,
                                         BEV_OPT_CLOSE_ON_FREE);
    if (bev != NULL)
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

/* The common name of name into buf, or "". */
static void common_name(X509_NAME *name, char *buf, size_t len)
{
    buf[0] = 0;
    if (name == NULL ||
        X509_NAME_get_text_by_NID(name, NID_commonName, buf, (int)len) < 0)
        buf[0] = 0;
}

/* A DNS name (or ".parent"), or an IP address: the certificate's IP
 * addresses then count too (a client that connects to an address). */
static int name_matches(X509 *cert, const char *name)
{
    unsigned char ip[16];

    if ((inet_pton(AF_INET, name, ip) == 1 ||
         inet_pton(AF_INET6, name, ip) == 1) &&
        X509_check_ip_asc(cert, name, 0) == 1)
        return 1;
    return X509_check_host(cert, name, 0, 0, NULL) == 1;
}

void tls_session_peer(struct bufferevent *bev, struct tls_peer *out)
{
    SSL *ssl = bufferevent_openssl_get_ssl(bev);
    struct tls_conn *tc = ssl ? tls_conn_of(ssl) : NULL;
    X509 *cert = ssl ? SSL_get0_peer_certificate(ssl) : NULL;
    long vr;

    memset(out, 0, sizeof(*out));
    out->word = "Anonymous";
    if (ssl == NULL)
        return;
    out->resumed = SSL_session_reused(ssl);
    if (cert == NULL)
        return;
    out->has_cert = 1;
    common_name(X509_get_subject_name(cert), out->subject,
                sizeof(out->subject));
    common_name(X509_get_issuer_name(cert), out->issuer, sizeof(out->issuer));
    vr = SSL_get_verify_result(ssl);
    out->dane = tc->dane_usable;
    out->trusted = vr == X509_V_OK;
    if (out->dane) {
        /* a DANE verification includes its name checks; a resumed
         * session keeps the result of the one it resumes, made under
         * the same records (the caller's resumption key has them) */
        out->matched =
            out->trusted &&
            (out->resumed || SSL_get0_dane_authority(ssl, NULL, NULL) >= 0);
    } else if (out->trusted) {
        for (size_t i = 0; i < tc->nmatch && !out->matched; i++)
            out->matched = name_matches(cert, tc->match[i]);
        if (!out->matched && tc->nmatch > 0)
            snprintf(out->why, sizeof(out->why),
                     "no name matches the certificate's (CN=%.200s)",
                     out->subject);
    }
    out->expired = vr == X509_V_ERR_CERT_HAS_EXPIRED;
    if (vr != X509_V_OK)
        snprintf(out->why, sizeof(out->why), "%s",
                 X509_verify_cert_error_string(vr));
    out->word = out->matched   ? "Verified"
                : out->trusted ? "Trusted"
                               : "Untrusted";
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
    int server = SSL_is_server(ssl);
    X509 *peer = server ? NULL : SSL_get0_peer_certificate(ssl);
    EVP_PKEY *key = server ? SSL_get_privatekey(ssl)
                    : peer ? X509_get0_pubkey(peer)
                           : NULL;
    char group[64];
    int nid = NID_undef;
    size_t n = 0;

    if (key == NULL || len == 0)
        return 0;
    switch (EVP_PKEY_get_base_id(key)) {
    case EVP_PKEY_RSA:
        n = (size_t)snprintf(
            out, len, "server-signature %s (%d bits)",
            (server ? SSL_get_signature_type_nid(ssl, &nid)
                    : SSL_get_peer_signature_type_nid(ssl, &nid)) &&
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
    nid = NID_undef;
    if (n < len &&
        (server ? SSL_get_signature_nid(ssl, &nid)
                : SSL_get_peer_signature_nid(ssl, &nid)) &&
        nid != NID_undef)
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
        struct evbuffer *pending = bufferevent_get_output(bev);
        size_t n = evbuffer_get_length(pending);

        /* what the filter has not encrypted yet (a last QUIT), then the
         * close_notify: both go straight into under's output */
        if (SSL_is_init_finished(ssl) && n > 0 && n <= INT32_MAX)
            (void)SSL_write(ssl, evbuffer_pullup(pending, (ssize_t)n), (int)n);
        if (SSL_is_init_finished(ssl))
            (void)SSL_shutdown(ssl);
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
