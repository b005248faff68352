/*
 * NAME
 *	request 3 - a delivery request that outlives its maker
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	void	deliver_request_copy(struct deliver_request *to,
 *			const struct deliver_request *from)
 *	void	deliver_request_clear(struct deliver_request *req)
 * DESCRIPTION
 *	deliver_request_copy() makes to a deep copy of from: its strings,
 *	recipients, addresses, agent argv and DANE records are copied; the body, the
 *	TLS context and the password table are shared by reference (a
 *	reload may replace the maker's while the copy lives). The cache
 *	is the caller's, as in from. deliver_request_clear() frees what a
 *	copy holds and zeroes it. deliver_start() keeps its request this
 *	way; a scheduler that holds a request until a connection is free
 *	does too.
 */

#include "deliver/deliver.h"

#include <stdlib.h>
#include <string.h>

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The request's DANE data, deep. */
static void dane_copy(struct deliver_tls *to, const struct deliver_tls *from)
{
    struct deliver_dane *d = xcalloc(from->ndane ? from->ndane : 1, sizeof(*d));

    for (size_t i = 0; i < from->ndane; i++) {
        size_t n = from->dane[i].ntlsa;
        struct tls_tlsa *t = xcalloc(n ? n : 1, sizeof(*t));

        d[i] = from->dane[i];
        for (size_t k = 0; k < n; k++) {
            unsigned char *data = xmalloc(from->dane[i].tlsa[k].len + 1);

            t[k] = from->dane[i].tlsa[k];
            memcpy(data, from->dane[i].tlsa[k].data, t[k].len);
            t[k].data = data;
        }
        d[i].tlsa = t;
    }
    to->dane = d;
}

/* The agent's argv, deep; NULL stays NULL. */
static char *const *argv_copy(char *const *argv)
{
    size_t n = 0;
    char **out;

    if (argv == NULL)
        return NULL;
    while (argv[n])
        n++;
    out = xcalloc(n + 1, sizeof(*out));
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(argv[i]);
    return out;
}

static void argv_free(char *const *argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free((char **)argv);
}

static void dane_free(struct deliver_tls *t)
{
    for (size_t i = 0; i < t->ndane; i++) {
        for (size_t k = 0; k < t->dane[i].ntlsa; k++)
            free((unsigned char *)t->dane[i].tlsa[k].data);
        free((struct tls_tlsa *)t->dane[i].tlsa);
    }
    free((struct deliver_dane *)t->dane);
    t->dane = NULL;
}

void deliver_request_copy(struct deliver_request *to,
                          const struct deliver_request *from)
{
    struct deliver_rcpt *rcpt =
        xcalloc(from->nrcpt ? from->nrcpt : 1, sizeof(*rcpt));
    struct deliver_addr *addrs =
        xcalloc(from->naddrs ? from->naddrs : 1, sizeof(*addrs));

    *to = *from;
    to->helo_name = xstrdup(from->helo_name ? from->helo_name : "");
    to->sender = xstrdup(from->sender ? from->sender : "");
    to->envid = dup_or_null(from->envid);
    to->queue_id = dup_or_null(from->queue_id);
    to->agent.argv = argv_copy(from->agent.argv);
    to->agent.channel = dup_or_null(from->agent.channel);
    to->agent.user = dup_or_null(from->agent.user);
    for (size_t i = 0; i < from->nrcpt; i++) {
        rcpt[i] = from->rcpt[i];
        rcpt[i].address = xstrdup(from->rcpt[i].address);
        rcpt[i].orcpt = dup_or_null(from->rcpt[i].orcpt);
    }
    to->rcpt = rcpt;
    if (from->naddrs > 0)
        memcpy(addrs, from->addrs, from->naddrs * sizeof(*addrs));
    to->addrs = addrs;
    to->reason = dup_or_null(from->reason);
    to->cache_key = dup_or_null(from->cache_key);
    to->cache_endpoint = dup_or_null(from->cache_endpoint);
    dane_copy(&to->tls, &from->tls);
    to->tls.ctx = tls_context_ref(from->tls.ctx);
    to->sasl.passwd = deliver_passwd_ref(from->sasl.passwd);
    /* The body is shared with the maker and every other delivery of
     * the message: a reference, not a copy. */
    to->body = from->body ? util_blob_ref(from->body) : util_blob_copy("", 0);
}

void deliver_request_clear(struct deliver_request *req)
{
    free((char *)req->helo_name);
    free((char *)req->sender);
    free((char *)req->envid);
    free((char *)req->queue_id);
    argv_free(req->agent.argv);
    free((char *)req->agent.channel);
    free((char *)req->agent.user);
    free((char *)req->reason);
    free((char *)req->cache_key);
    free((char *)req->cache_endpoint);
    tls_context_free(req->tls.ctx);
    dane_free(&req->tls);
    deliver_passwd_free(req->sasl.passwd);
    for (size_t i = 0; i < req->nrcpt; i++) {
        free((char *)req->rcpt[i].address);
        free((char *)req->rcpt[i].orcpt);
    }
    free((struct deliver_rcpt *)req->rcpt);
    free((struct deliver_addr *)req->addrs);
    util_blob_unref(req->body);
    memset(req, 0, sizeof(*req));
}
