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
 *	libcurl's multi interface does the HTTP and TLS; the loop does the
 *	waiting. curl tells through its socket callback which descriptors
 *	it wants to read or write (an event each, added and changed as it
 *	asks) and through its timer callback when it next needs to run (one
 *	timer); each event hands the descriptor back with
 *	curl_multi_socket_action(), and finished transfers are collected
 *	with curl_multi_info_read(). Nothing blocks the loop; name
 *	resolution is curl's own (its resolver thread).
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

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <event2/event.h>

struct sock {
    struct event *ev;
    struct sock *next;
};

struct sts_fetch {
    struct sts_fetcher *f;
    CURL *easy;
    struct curl_slist *connect_to;
    struct util_buf body;
    int too_big;
    char url[STS_NAME_MAX + 64];
    char err[CURL_ERROR_SIZE];
    sts_fetch_done_fn *done;
    void *ctx;
    struct sts_fetch *next;
};

struct sts_fetcher {
    struct sts_fetch_config cf;
    CURLM *multi;
    struct event *timer;
    struct sock *socks;
    struct sts_fetch *fetches;
};

static void fetch_free(struct sts_fetch *t)
{
    struct sts_fetch **pp;

    for (pp = &t->f->fetches; *pp && *pp != t; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = t->next;
    curl_multi_remove_handle(t->f->multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->connect_to);
    util_buf_free(&t->body);
    free(t);
}

static int content_type_ok(const char *type)
{
    size_t n = strlen("text/plain");

    if (type == NULL || strncasecmp(type, "text/plain", n) != 0)
        return 0;
    return type[n] == 0 || type[n] == ';' || type[n] == ' ' || type[n] == '\t';
}

/* What became of a finished transfer: 0, or -1 with why. */
static int fetch_outcome(struct sts_fetch *t, CURLcode result, char *why,
                         size_t whylen)
{
    long code = 0;
    char *type = NULL;

    if (t->too_big || result == CURLE_FILESIZE_EXCEEDED) {
        snprintf(why, whylen, "%s: the policy is larger than %zu bytes", t->url,
                 t->f->cf.max_bytes);
        return -1;
    }
    if (result != CURLE_OK) {
        snprintf(why, whylen, "%s: %s", t->url,
                 t->err[0] ? t->err : curl_easy_strerror(result));
        return -1;
    }
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (code != 200) {
        snprintf(why, whylen, "%s: HTTP status %ld%s", t->url, code,
                 code >= 300 && code < 400 ? " (redirects are not followed)"
                                           : "");
        return -1;
    }
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &type);
    if (!content_type_ok(type)) {
        snprintf(why, whylen, "%s: Content-Type %s, not text/plain", t->url,
                 type ? type : "missing");
        return -1;
    }
    return 0;
}

/* Hand every finished transfer to its caller. */
static void fetch_collect(struct sts_fetcher *f)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(f->multi, &left)) != NULL) {
        struct sts_fetch *t;
        char why[1024], *priv = NULL;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        t = (struct sts_fetch *)priv;
        if (fetch_outcome(t, msg->data.result, why, sizeof(why)) == 0)
            t->done(t->ctx, 0, t->body.data ? t->body.data : "", t->body.len,
                    NULL);
        else
            t->done(t->ctx, -1, NULL, 0, why);
        fetch_free(t);
    }
}

static void sock_event(evutil_socket_t fd, short what, void *arg)
{
    struct sts_fetcher *f = arg;
    int running, flags = 0;

    if (what & EV_READ)
        flags |= CURL_CSELECT_IN;
    if (what & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(f->multi, fd, flags, &running);
    fetch_collect(f);
}

static void timer_event(evutil_socket_t fd, short what, void *arg)
{
    struct sts_fetcher *f = arg;
    int running;

    (void)fd;
    (void)what;
    curl_multi_socket_action(f->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    fetch_collect(f);
}

static void sock_forget(struct sts_fetcher *f, struct sock *k)
{
    struct sock **pp;

    for (pp = &f->socks; *pp != k; pp = &(*pp)->next)
        ;
    *pp = k->next;
    event_free(k->ev);
    free(k);
}

/* curl's socket callback: watch s for what curl wants. */
static int sock_cb(CURL *easy, curl_socket_t s, int what, void *userp,
                   void *socketp)
{
    struct sts_fetcher *f = userp;
    struct sock *k = socketp;
    short kind = EV_PERSIST;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (k != NULL)
            sock_forget(f, k);
        curl_multi_assign(f->multi, s, NULL);
        return 0;
    }
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (k == NULL) {
        k = xcalloc(1, sizeof(*k));
        k->next = f->socks;
        f->socks = k;
        k->ev = event_new(f->cf.base, s, kind, sock_event, f);
        curl_multi_assign(f->multi, s, k);
    } else {
        event_del(k->ev);
        event_assign(k->ev, f->cf.base, s, kind, sock_event, f);
    }
    event_add(k->ev, NULL);
    return 0;
}

/* curl's timer callback: run it after timeout_ms (-1: not at all). */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct sts_fetcher *f = userp;
    struct timeval tv;

    (void)multi;
    if (timeout_ms < 0) {
        evtimer_del(f->timer);
        return 0;
    }
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    evtimer_add(f->timer, &tv);
    return 0;
}

static size_t body_write(char *p, size_t size, size_t n, void *arg)
{
    struct sts_fetch *t = arg;

    n *= size;
    if (t->body.len + n > t->f->cf.max_bytes) {
        t->too_big = 1;
        return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
    }
    util_buf_add(&t->body, p, n);
    return n;
}

struct sts_fetcher *sts_fetcher_create(const struct sts_fetch_config *cf,
                                       char *why, size_t whylen)
{
    struct sts_fetcher *f;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(why, whylen, "MTA-STS: libcurl cannot start");
        return NULL;
    }
    f = xcalloc(1, sizeof(*f));
    f->cf = *cf;
    f->cf.ca_file = cf->ca_file && *cf->ca_file ? xstrdup(cf->ca_file) : NULL;
    f->cf.host_override = cf->host_override && *cf->host_override
                              ? xstrdup(cf->host_override)
                              : NULL;
    if ((f->multi = curl_multi_init()) == NULL) {
        snprintf(why, whylen, "MTA-STS: libcurl cannot start");
        sts_fetcher_free(f);
        return NULL;
    }
    f->timer = evtimer_new(cf->base, timer_event, f);
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(f->multi, CURLMOPT_SOCKETDATA, f);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(f->multi, CURLMOPT_TIMERDATA, f);
    return f;
}

void sts_fetcher_free(struct sts_fetcher *f)
{
    if (f == NULL)
        return;
    while (f->fetches)
        fetch_free(f->fetches);
    if (f->multi)
        curl_multi_cleanup(f->multi);
    while (f->socks)
        sock_forget(f, f->socks);
    if (f->timer)
        event_free(f->timer);
    free((char *)f->cf.ca_file);
    free((char *)f->cf.host_override);
    free(f);
    curl_global_cleanup();
}

/* Tests: connect elsewhere, keep the name. */
static void fetch_connect_to(struct sts_fetch *t, const char *domain)
{
    const struct sts_fetch_config *cf = &t->f->cf;
    const char *h = cf->host_override;
    char line[2 * STS_NAME_MAX + 64];

    if (h == NULL)
        return;
    snprintf(line, sizeof(line), "mta-sts.%s:443:%s%s%s:%d", domain,
             strchr(h, ':') ? "[" : "", h, strchr(h, ':') ? "]" : "",
             cf->port ? cf->port : 443);
    t->connect_to = curl_slist_append(NULL, line);
    curl_easy_setopt(t->easy, CURLOPT_CONNECT_TO, t->connect_to);
}

static void fetch_options(struct sts_fetch *t)
{
    const struct sts_fetch_config *cf = &t->f->cf;
    CURL *e = t->easy;

    curl_easy_setopt(e, CURLOPT_URL, t->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)t);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (cf->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, cf->ca_file);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)cf->timeout_ms);
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)cf->max_bytes);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sluice/" SLUICE_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->err);
}

int sts_fetch_start(struct sts_fetcher *f, const char *domain,
                    const char *addrs, sts_fetch_done_fn *done, void *ctx,
                    char *why, size_t whylen)
{
    struct sts_fetch *t = xcalloc(1, sizeof(*t));

    t->f = f;
    t->done = done;
    t->ctx = ctx;
    if (f->cf.port && f->cf.port != 443 && f->cf.host_override == NULL)
        snprintf(t->url, sizeof(t->url),
                 "https://mta-sts.%s:%d/.well-known/mta-sts.txt", domain,
                 f->cf.port);
    else
        snprintf(t->url, sizeof(t->url),
                 "https://mta-sts.%s/.well-known/mta-sts.txt", domain);
    if ((t->easy = curl_easy_init()) == NULL) {
        snprintf(why, whylen, "%s: libcurl cannot make a transfer", t->url);
        free(t);
        return -1;
    }
    fetch_options(t);
    fetch_connect_to(t, domain);
    if (addrs && *addrs && t->connect_to == NULL) {
        /* the addresses the caller's resolver found for the host */
        char line[2 * STS_NAME_MAX + 600];

        snprintf(line, sizeof(line), "mta-sts.%s:%d:%s", domain,
                 f->cf.port ? f->cf.port : 443, addrs);
        t->connect_to = curl_slist_append(NULL, line);
        curl_easy_setopt(t->easy, CURLOPT_RESOLVE, t->connect_to);
    }
    if (curl_multi_add_handle(f->multi, t->easy) != CURLM_OK) {
        snprintf(why, whylen, "%s: libcurl cannot start the transfer", t->url);
        curl_easy_cleanup(t->easy);
        curl_slist_free_all(t->connect_to);
        free(t);
        return -1;
    }
    t->next = f->fetches;
    f->fetches = t;
    return 0;
}
