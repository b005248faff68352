/*
 * NAME
 *	fetch 3 - the policy file over HTTPS, with libcurl on the event loop
 * SYNOPSIS
 *	#include "sts/sts_impl.h"
 *
 *	struct sts_fetcher *sts_fetcher_create(
 *			const struct sts_fetch_config *cf, char *why,
 *			size_t whylen)
 *	void	sts_fetcher_free(struct sts_fetcher *f)
 *	int	sts_fetch_start(struct sts_fetcher *f, const char *domain,
 *			const char *addrs,
 *			sts_fetch_done_fn *done, void *ctx, char *why,
 *			size_t whylen)
 * DESCRIPTION
 *	The transfer is http/'s (libcurl's multi interface on the event
 *	loop, shared with TLS reporting's POST); this file asks for the
 *	policy and judges the answer.
 *
 *	What a fetch accepts, RFC 8461 section 3.3: the URL
 *	"https://mta-sts.DOMAIN/.well-known/mta-sts.txt" and HTTPS alone
 *	(CURLOPT_PROTOCOLS_STR); "HTTP 3xx redirects MUST NOT be
 *	followed" (curl follows none unless asked, and a 3xx is then not a
 *	200); the certificate "MUST ... be valid for the "mta-sts" DNS-ID"
 *	(peer and host verification on, the CA file when one is given;
 *	TLS 1.2 at least); "Policies fetched via HTTPS are only valid if
 *	the HTTP response code is 200 (OK)"; senders "SHOULD validate that
 *	the media type is "text/plain""; and "a timeout ... and a limit on
 *	the maximum size of the response body" (the transfer ends as soon
 *	as the body passes max_bytes). No proxy is used, whatever the
 *	environment says, and no connection is kept: a policy is fetched
 *	once in days.
 */

#include "sts/sts_impl.h"

#include "http/http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct sts_fetch {
    struct sts_fetcher *f;
    char url[STS_NAME_MAX + 64];
    sts_fetch_done_fn *done;
    void *ctx;
    struct sts_fetch *next;
};

struct sts_fetcher {
    struct sts_fetch_config cf;
    struct http_client *http;
    struct sts_fetch *fetches; /* under way, for sts_fetcher_free() */
};

static void fetch_unlink(struct sts_fetch *t)
{
    struct sts_fetch **pp;

    for (pp = &t->f->fetches; *pp && *pp != t; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = t->next;
}

static int content_type_ok(const char *type)
{
    size_t n = strlen("text/plain");

    if (type == NULL || strncasecmp(type, "text/plain", n) != 0)
        return 0;
    return type[n] == 0 || type[n] == ';' || type[n] == ' ' || type[n] == '\t';
}

/* What became of a finished transfer: 0, or -1 with why. */
static int fetch_outcome(const struct sts_fetch *t,
                         const struct http_response *r, char *why,
                         size_t whylen)
{
    if (r->too_big) {
        snprintf(why, whylen, "%s: the policy is larger than %zu bytes", t->url,
                 t->f->cf.max_bytes);
        return -1;
    }
    if (r->status != 0) {
        snprintf(why, whylen, "%s: %s", t->url, r->error);
        return -1;
    }
    if (r->code != 200) {
        snprintf(why, whylen, "%s: HTTP status %ld%s", t->url, r->code,
                 r->code >= 300 && r->code < 400
                     ? " (redirects are not followed)"
                     : "");
        return -1;
    }
    if (!content_type_ok(r->content_type)) {
        snprintf(why, whylen, "%s: Content-Type %s, not text/plain", t->url,
                 r->content_type ? r->content_type : "missing");
        return -1;
    }
    return 0;
}

static void fetch_done(void *ctx, const struct http_response *r)
{
    struct sts_fetch *t = ctx;
    char why[1024];

    fetch_unlink(t);
    if (fetch_outcome(t, r, why, sizeof(why)) == 0)
        t->done(t->ctx, 0, r->body, r->len, NULL);
    else
        t->done(t->ctx, -1, NULL, 0, why);
    free(t);
}

struct sts_fetcher *sts_fetcher_create(const struct sts_fetch_config *cf,
                                       char *why, size_t whylen)
{
    struct sts_fetcher *f = xcalloc(1, sizeof(*f));
    char reason[200];

    f->cf = *cf;
    f->cf.ca_file = cf->ca_file && *cf->ca_file ? xstrdup(cf->ca_file) : NULL;
    f->cf.host_override = cf->host_override && *cf->host_override
                              ? xstrdup(cf->host_override)
                              : NULL;
    if ((f->http = http_client_create(cf->base, reason, sizeof(reason))) ==
        NULL) {
        snprintf(why, whylen, "MTA-STS: %s", reason);
        sts_fetcher_free(f);
        return NULL;
    }
    return f;
}

void sts_fetcher_free(struct sts_fetcher *f)
{
    if (f == NULL)
        return;
    http_client_free(f->http); /* no done is called */
    while (f->fetches) {
        struct sts_fetch *t = f->fetches;

        f->fetches = t->next;
        free(t);
    }
    free((char *)f->cf.ca_file);
    free((char *)f->cf.host_override);
    free(f);
}

int sts_fetch_start(struct sts_fetcher *f, const char *domain,
                    const char *addrs, sts_fetch_done_fn *done, void *ctx,
                    char *why, size_t whylen)
{
    const struct sts_fetch_config *cf = &f->cf;
    struct sts_fetch *t = xcalloc(1, sizeof(*t));
    struct http_request r = {0};
    const char *h = cf->host_override;
    char connect_to[2 * STS_NAME_MAX + 64], resolve[2 * STS_NAME_MAX + 600];
    int port = cf->port ? cf->port : 443;

    t->f = f;
    t->done = done;
    t->ctx = ctx;
    if (cf->port && cf->port != 443 && h == NULL)
        snprintf(t->url, sizeof(t->url),
                 "https://mta-sts.%s:%d/.well-known/mta-sts.txt", domain,
                 cf->port);
    else
        snprintf(t->url, sizeof(t->url),
                 "https://mta-sts.%s/.well-known/mta-sts.txt", domain);
    r.url = t->url;
    r.ca_file = cf->ca_file;
    r.timeout_ms = cf->timeout_ms;
    r.max_bytes = cf->max_bytes;
    if (h != NULL) {
        /* tests: connect elsewhere, keep the name */
        snprintf(connect_to, sizeof(connect_to), "mta-sts.%s:443:%s%s%s:%d",
                 domain, strchr(h, ':') ? "[" : "", h,
                 strchr(h, ':') ? "]" : "", port);
        r.connect_to = connect_to;
    } else if (addrs && *addrs) {
        /* the addresses the caller's resolver found for the host */
        snprintf(resolve, sizeof(resolve), "mta-sts.%s:%d:%s", domain, port,
                 addrs);
        r.resolve = resolve;
    }
    if (http_request_start(f->http, &r, fetch_done, t, why, whylen) < 0) {
        free(t);
        return -1;
    }
    t->next = f->fetches;
    f->fetches = t;
    return 0;
}
