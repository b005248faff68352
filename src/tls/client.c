/*
 * NAME
 *	client 3 - the SMTP client's TLS context and its session cache
 * SYNOPSIS
 *	#include "tls/tls.h"
 *	#include "tls/tls_impl.h"
 *
 *	struct tls_context *tls_client_context_create(
 *			const struct tls_client_config *cf, char *why,
 *			size_t whylen)
 *
 *	int	tls_client_resume(SSL *ssl, const char *key)
 *	struct tls_conn *tls_conn_of(SSL *ssl)
 * DESCRIPTION
 *	One client context serves every delivery. Its trust anchors are
 *	smtp_tls_CAfile and smtp_tls_CApath, or the system's store when
 *	neither is set; a client certificate is loaded when configured
 *	(context.c's loaders, with cf->prefix, "smtp_tls" by default, in
 *	the reasons). DANE is enabled on the context; a session turns it
 *	on for itself when it has TLSA records (session.c).
 *
 *	Resumption (RFC 5077 tickets and TLS 1.3's): OpenSSL hands every
 *	new session to new_session(), which keeps it under the key the
 *	connection was given, replacing what was there;
 *	tls_client_resume() offers the session kept under key, if it is
 *	still within its lifetime and resumable (a copy of it: concurrent
 *	connections each resume their own, where OpenSSL 3 would let only
 *	the first resume a TLS 1.3 session), and marks the connection with
 *	key so
 *	that its new session is kept there in turn. The cache is a list in
 *	use order, at most TLS_RESUME_MAX sessions, the least recently
 *	used dropped first; it hangs off the SSL_CTX (ex_data) and goes
 *	with it. tls_conn_of() is the per-connection record (its key, its
 *	match names, whether DANE is on), also ex_data, freed with the
 *	SSL.
 */

#include "tls/tls.h"
#include "tls/tls_impl.h"
#include "util/util.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct resume_entry {
    char *key;
    SSL_SESSION *session;
    struct resume_entry *prev, *next;
};

struct resume_cache {
    struct resume_entry *head, *tail; /* most recently used first */
    size_t count;
};

static int ctx_index = -1, ssl_index = -1;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void entry_free(struct resume_entry *e)
{
    SSL_SESSION_free(e->session);
    free(e->key);
    free(e);
}

static void unlink_entry(struct resume_cache *c, struct resume_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        c->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        c->tail = e->prev;
    e->prev = e->next = NULL;
    c->count--;
}

static void push_front(struct resume_cache *c, struct resume_entry *e)
{
    e->next = c->head;
    e->prev = NULL;
    if (c->head)
        c->head->prev = e;
    c->head = e;
    if (c->tail == NULL)
        c->tail = e;
    c->count++;
}

static struct resume_entry *cache_find(struct resume_cache *c, const char *key)
{
    for (struct resume_entry *e = c->head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            return e;
    return NULL;
}

static void cache_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
                       long argl, void *argp)
{
    struct resume_cache *c = ptr;

    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    if (c == NULL)
        return;
    while (c->head) {
        struct resume_entry *e = c->head;

        unlink_entry(c, e);
        entry_free(e);
    }
    free(c);
}

static void conn_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx,
                      long argl, void *argp)
{
    struct tls_conn *tc = ptr;

    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    if (tc == NULL)
        return;
    for (size_t i = 0; i < tc->nmatch; i++)
        free(tc->match[i]);
    free(tc->match);
    free(tc->key);
    free(tc);
}

static void indexes(void)
{
    ctx_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, cache_free);
    ssl_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, conn_free);
    if (ctx_index < 0 || ssl_index < 0)
        util_panic("tls: no OpenSSL ex_data index");
}

struct tls_conn *tls_conn_of(SSL *ssl)
{
    struct tls_conn *tc;

    pthread_once(&once, indexes);
    if ((tc = SSL_get_ex_data(ssl, ssl_index)) == NULL) {
        tc = xcalloc(1, sizeof(*tc));
        SSL_set_ex_data(ssl, ssl_index, tc);
    }
    return tc;
}

/* A new session of a connection that has a key: keep it there. */
static int new_session(SSL *ssl, SSL_SESSION *session)
{
    struct tls_conn *tc = SSL_get_ex_data(ssl, ssl_index);
    struct resume_cache *c =
        SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_index);
    struct resume_entry *e;

    if (tc == NULL || tc->key == NULL || c == NULL ||
        !SSL_SESSION_is_resumable(session))
        return 0;
    if ((e = cache_find(c, tc->key)) != NULL) {
        unlink_entry(c, e);
        SSL_SESSION_free(e->session);
    } else {
        if (c->count >= TLS_RESUME_MAX) {
            struct resume_entry *old = c->tail;

            unlink_entry(c, old);
            entry_free(old);
        }
        e = xcalloc(1, sizeof(*e));
        e->key = xstrdup(tc->key);
    }
    e->session = session; /* returning 1: the reference is ours */
    push_front(c, e);
    return 1;
}

int tls_client_resume(SSL *ssl, const char *key)
{
    struct resume_cache *c =
        SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), ctx_index);
    struct tls_conn *tc = tls_conn_of(ssl);
    struct resume_entry *e;
    time_t now = time(NULL);
    SSL_SESSION *copy;
    int ok;

    free(tc->key);
    tc->key = xstrdup(key);
    if (c == NULL || (e = cache_find(c, key)) == NULL)
        return 0;
    unlink_entry(c, e);
    if (!SSL_SESSION_is_resumable(e->session) ||
        SSL_SESSION_get_time(e->session) + SSL_SESSION_get_timeout(e->session) <
            now) {
        entry_free(e);
        return 0;
    }
    push_front(c, e);
    /* each connection resumes a copy: OpenSSL 3 marks a TLS 1.3 session
     * it has resumed once as not resumable, and connections that start
     * before the new ticket arrives would otherwise get none */
    if ((copy = SSL_SESSION_dup(e->session)) == NULL)
        return 0;
    ok = SSL_set_session(ssl, copy) == 1;
    SSL_SESSION_free(copy);
    return ok;
}

static int load_anchors(SSL_CTX *ctx, const struct tls_client_config *cf,
                        const char *prefix, char *why, size_t whylen)
{
    const char *file = cf->ca_file && cf->ca_file[0] ? cf->ca_file : NULL;
    const char *path = cf->ca_path && cf->ca_path[0] ? cf->ca_path : NULL;

    if (file == NULL && path == NULL) {
        if (SSL_CTX_set_default_verify_paths(ctx) != 1)
            ERR_clear_error(); /* no system store: nothing is trusted */
        return 0;
    }
    if (file && tls_file_readable(prefix, "CAfile", file, why, whylen) < 0)
        return -1;
    if (SSL_CTX_load_verify_locations(ctx, file, path) != 1) {
        snprintf(why, whylen, "%s_CA%s %s: no certificates: %s", prefix,
                 file ? "file" : "path", file ? file : path,
                 tls_ssl_reason("not PEM"));
        return -1;
    }
    return 0;
}

struct tls_context *
tls_client_context_create(const struct tls_client_config *cf, char *why,
                          size_t whylen)
{
    SSL_CTX *ctx;
    const struct tls_files *f = &cf->files;
    const char *prefix = cf->prefix ? cf->prefix : "smtp_tls";
    int cert =
        (f->cert_file && f->cert_file[0]) ||
        (f->chain_files && f->chain_files[strspn(f->chain_files, ", \t\r\n")]);

    pthread_once(&once, indexes);
    if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
        snprintf(why, whylen, "%s: cannot make a TLS context: %s", prefix,
                 tls_ssl_reason("out of memory"));
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
    if (load_anchors(ctx, cf, prefix, why, whylen) < 0 ||
        (cert && tls_files_load(ctx, prefix, f, why, whylen) < 0)) {
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (SSL_CTX_dane_enable(ctx) <= 0) {
        snprintf(why, whylen, "%s: cannot enable DANE: %s", prefix,
                 tls_ssl_reason("unknown error"));
        SSL_CTX_free(ctx);
        return NULL;
    }
    if (cf->session_timeout > 0) {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT |
                                                SSL_SESS_CACHE_NO_INTERNAL);
        SSL_CTX_set_timeout(ctx, (long)cf->session_timeout);
        SSL_CTX_sess_set_new_cb(ctx, new_session);
        SSL_CTX_set_ex_data(ctx, ctx_index,
                            xcalloc(1, sizeof(struct resume_cache)));
    } else {
        SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
        SSL_CTX_set_options(ctx, SSL_OP_NO_TICKET);
    }
    return (struct tls_context *)(void *)ctx;
}
