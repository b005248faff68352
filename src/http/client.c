/*
 * NAME
 *	client 3 - HTTPS requests with libcurl's multi interface on libevent
 * SYNOPSIS
 *	#include "http/http.h"
 *
 *	struct http_client *http_client_create(struct event_base *base,
 *			char *why, size_t whylen)
 *	void	http_client_free(struct http_client *c)
 *	int	http_request_start(struct http_client *c,
 *			const struct http_request *r, http_done_fn *done,
 *			void *ctx, char *why, size_t whylen)
 *	size_t	http_client_pending(const struct http_client *c)
 * DESCRIPTION
 *	Described in http.h. curl tells through its socket callback which
 *	descriptors it wants to read or write (an event each, added and
 *	changed as it asks) and through its timer callback when it next
 *	needs to run (one timer); each event hands the descriptor back
 *	with curl_multi_socket_action(), and finished transfers are
 *	collected with curl_multi_info_read(). Nothing blocks the loop;
 *	name resolution, when the caller gives no addresses, is curl's
 *	own (its resolver thread). MTA-STS's policy fetch (sts/fetch.c)
 *	and TLS reporting's POST (qmgr/tlsrpt_send.c) are its users.
 */

#include "http/http.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <event2/event.h>

struct sock {
    struct event *ev;
    struct sock *next;
};

struct transfer {
    struct http_client *c;
    CURL *easy;
    struct curl_slist *connect_to, *resolve, *headers;
    char *body_out; /* a copy of the POST body */
    size_t max_bytes;
    struct util_buf body;
    int too_big;
    char err[CURL_ERROR_SIZE];
    http_done_fn *done;
    void *ctx;
    struct transfer *next;
};

struct http_client {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    struct sock *socks;
    struct transfer *transfers;
};

static void transfer_free(struct transfer *t)
{
    struct transfer **pp;

    for (pp = &t->c->transfers; *pp && *pp != t; pp = &(*pp)->next)
        ;
    if (*pp)
        *pp = t->next;
    curl_multi_remove_handle(t->c->multi, t->easy);
    curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->connect_to);
    curl_slist_free_all(t->resolve);
    curl_slist_free_all(t->headers);
    free(t->body_out);
    util_buf_free(&t->body);
    free(t);
}

/* Hand every finished transfer to its caller. */
static void transfer_collect(struct http_client *c)
{
    CURLMsg *msg;
    int left;

    while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
        struct http_response r = {0};
        struct transfer *t;
        char *priv = NULL;

        if (msg->msg != CURLMSG_DONE)
            continue;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
        t = (struct transfer *)priv;
        r.body = t->body.data ? t->body.data : "";
        r.len = t->body.len;
        r.too_big = t->too_big || msg->data.result == CURLE_FILESIZE_EXCEEDED;
        if (msg->data.result != CURLE_OK || r.too_big) {
            r.status = -1;
            r.error = t->err[0] ? t->err : curl_easy_strerror(msg->data.result);
        } else {
            curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &r.code);
            curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &r.content_type);
        }
        t->done(t->ctx, &r);
        transfer_free(t);
    }
}

static void sock_event(evutil_socket_t fd, short what, void *arg)
{
    struct http_client *c = arg;
    int running, flags = 0;

    if (what & EV_READ)
        flags |= CURL_CSELECT_IN;
    if (what & EV_WRITE)
        flags |= CURL_CSELECT_OUT;
    curl_multi_socket_action(c->multi, fd, flags, &running);
    transfer_collect(c);
}

static void timer_event(evutil_socket_t fd, short what, void *arg)
{
    struct http_client *c = arg;
    int running;

    (void)fd;
    (void)what;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    transfer_collect(c);
}

static void sock_forget(struct http_client *c, struct sock *k)
{
    struct sock **pp;

    for (pp = &c->socks; *pp != k; pp = &(*pp)->next)
        ;
    *pp = k->next;
    event_free(k->ev);
    free(k);
}

/* curl's socket callback: watch s for what curl wants. */
static int sock_cb(CURL *easy, curl_socket_t s, int what, void *userp,
                   void *socketp)
{
    struct http_client *c = userp;
    struct sock *k = socketp;
    short kind = EV_PERSIST;

    (void)easy;
    if (what == CURL_POLL_REMOVE) {
        if (k != NULL)
            sock_forget(c, k);
        curl_multi_assign(c->multi, s, NULL);
        return 0;
    }
    if (what & CURL_POLL_IN)
        kind |= EV_READ;
    if (what & CURL_POLL_OUT)
        kind |= EV_WRITE;
    if (k == NULL) {
        k = xcalloc(1, sizeof(*k));
        k->next = c->socks;
        c->socks = k;
        k->ev = event_new(c->base, s, kind, sock_event, c);
        curl_multi_assign(c->multi, s, k);
    } else {
        event_del(k->ev);
        event_assign(k->ev, c->base, s, kind, sock_event, c);
    }
    event_add(k->ev, NULL);
    return 0;
}

/* curl's timer callback: run it after timeout_ms (-1: not at all). */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    struct http_client *c = userp;
    struct timeval tv;

    (void)multi;
    if (timeout_ms < 0) {
        evtimer_del(c->timer);
        return 0;
    }
    tv.tv_sec = timeout_ms / 1000;
    tv.tv_usec = (timeout_ms % 1000) * 1000;
    evtimer_add(c->timer, &tv);
    return 0;
}

static size_t body_write(char *p, size_t size, size_t n, void *arg)
{
    struct transfer *t = arg;

    n *= size;
    if (t->body.len + n > t->max_bytes) {
        t->too_big = 1;
        return 0; /* curl ends the transfer: CURLE_WRITE_ERROR */
    }
    util_buf_add(&t->body, p, n);
    return n;
}

struct http_client *http_client_create(struct event_base *base, char *why,
                                       size_t whylen)
{
    struct http_client *c;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(why, whylen, "libcurl cannot start");
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    c->base = base;
    if ((c->multi = curl_multi_init()) == NULL) {
        snprintf(why, whylen, "libcurl cannot start");
        http_client_free(c);
        return NULL;
    }
    c->timer = evtimer_new(base, timer_event, c);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

void http_client_free(struct http_client *c)
{
    if (c == NULL)
        return;
    while (c->transfers)
        transfer_free(c->transfers);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    while (c->socks)
        sock_forget(c, c->socks);
    if (c->timer)
        event_free(c->timer);
    free(c);
    curl_global_cleanup();
}

size_t http_client_pending(const struct http_client *c)
{
    size_t n = 0;

    for (const struct transfer *t = c->transfers; t; t = t->next)
        n++;
    return n;
}

static void transfer_options(struct transfer *t, const struct http_request *r)
{
    CURL *e = t->easy;

    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, (char *)t);
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(e, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    if (r->ca_file && *r->ca_file)
        curl_easy_setopt(e, CURLOPT_CAINFO, r->ca_file);
    curl_easy_setopt(e, CURLOPT_PROXY, "");
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_FORBID_REUSE, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)r->timeout_ms);
    curl_easy_setopt(e, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)r->max_bytes);
    curl_easy_setopt(e, CURLOPT_USERAGENT,
                     r->user_agent ? r->user_agent : "sluice/" SLUICE_VERSION);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->err);
    if (r->connect_to) {
        t->connect_to = curl_slist_append(NULL, r->connect_to);
        curl_easy_setopt(e, CURLOPT_CONNECT_TO, t->connect_to);
    }
    if (r->resolve) {
        t->resolve = curl_slist_append(NULL, r->resolve);
        curl_easy_setopt(e, CURLOPT_RESOLVE, t->resolve);
    }
}

/* A POST of the request's body, with its type. */
static void transfer_post(struct transfer *t, const struct http_request *r)
{
    char line[256];

    t->body_out = xmalloc(r->body_len ? r->body_len : 1);
    memcpy(t->body_out, r->body, r->body_len);
    curl_easy_setopt(t->easy, CURLOPT_POST, 1L);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDS, t->body_out);
    curl_easy_setopt(t->easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)r->body_len);
    snprintf(line, sizeof(line), "Content-Type: %s",
             r->content_type ? r->content_type : "application/octet-stream");
    t->headers = curl_slist_append(NULL, line);
    /* no "Expect: 100-continue" round trip for a small body */
    t->headers = curl_slist_append(t->headers, "Expect:");
    curl_easy_setopt(t->easy, CURLOPT_HTTPHEADER, t->headers);
}

int http_request_start(struct http_client *c, const struct http_request *r,
                       http_done_fn *done, void *ctx, char *why, size_t whylen)
{
    struct transfer *t = xcalloc(1, sizeof(*t));

    t->c = c;
    t->done = done;
    t->ctx = ctx;
    t->max_bytes = r->max_bytes;
    if ((t->easy = curl_easy_init()) == NULL) {
        snprintf(why, whylen, "%s: libcurl cannot make a transfer", r->url);
        free(t);
        return -1;
    }
    transfer_options(t, r);
    if (r->body)
        transfer_post(t, r);
    if (curl_multi_add_handle(c->multi, t->easy) != CURLM_OK) {
        snprintf(why, whylen, "%s: libcurl cannot start the transfer", r->url);
        t->next = c->transfers;
        c->transfers = t; /* transfer_free() unlinks it */
        transfer_free(t);
        return -1;
    }
    t->next = c->transfers;
    c->transfers = t;
    return 0;
}
