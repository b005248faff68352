/*
 * NAME
 *	http 3 - the daemon's HTTP listener: metrics and the status API
 * SYNOPSIS
 *	#include "ops/ops.h"
 *
 *	int	ops_http_check(const char *listen, char *why, size_t whylen)
 *	struct ops_http *ops_http_create(struct event_base *base,
 *			const char *listen, char *why, size_t whylen)
 *	void	ops_http_route(struct ops_http *h, const char *path,
 *			const char *content_type, ops_http_fn *fn, void *ctx)
 *	void	ops_http_free(struct ops_http *h)
 * DESCRIPTION
 *	sluiced answers HTTP (libevent's evhttp) on the addresses of
 *	http_listen, a list of IP:PORT or [IPV6]:PORT (empty: no listener),
 *	for scrapers and dashboards. Only GET and HEAD are served, on the
 *	paths routed; any other method is 405, any other path 404. A
 *	request's headers may hold at most OPS_HTTP_HEADERS_MAX bytes and
 *	no body; a connection idle for OPS_HTTP_TIMEOUT seconds is closed.
 *
 *	ops_http_check() checks the list's syntax (for the configuration
 *	check); ops_http_create() binds every address and serves them on
 *	base: NULL with the reason ("http_listen ADDR: ...") when one
 *	cannot be bound. ops_http_route() adds a path: fn appends the body
 *	to body and returns the HTTP status (200, or 500 with a text);
 *	content_type is sent with it. ops_http_free() closes everything.
 */

#include "ops/ops.h"
#include "util/util.h"

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUTES_MAX 8

struct route {
    char *path;
    const char *content_type;
    ops_http_fn *fn;
    void *ctx;
};

struct ops_http {
    struct evhttp *http;
    struct route routes[ROUTES_MAX];
    int nroutes;
};

/* One address, NUL-terminated: host (numeric) and port; -1 if malformed. */
static int address_parse(const char *item, char *host, size_t hostlen,
                         unsigned *port)
{
    unsigned char addr[16];
    const char *colon = strrchr(item, ':');
    const char *h = item;
    size_t hl;
    char *end;
    unsigned long p;
    int family = AF_INET;

    if (colon == NULL)
        return -1;
    hl = (size_t)(colon - item);
    if (item[0] == '[') {
        if (hl < 2 || colon[-1] != ']')
            return -1;
        h = item + 1;
        hl -= 2;
        family = AF_INET6;
    }
    if (hl == 0 || hl >= hostlen)
        return -1;
    memcpy(host, h, hl);
    host[hl] = 0;
    if (inet_pton(family, host, addr) != 1)
        return -1;
    if (colon[1] < '0' || colon[1] > '9')
        return -1;
    p = strtoul(colon + 1, &end, 10);
    if (*end != 0 || p == 0 || p > 65535)
        return -1;
    *port = (unsigned)p;
    return 0;
}

typedef int address_fn(void *ctx, const char *item, const char *host,
                       unsigned port, char *why, size_t whylen);

/* Each address of the list (commas and white space between them). */
static int addresses(const char *list, address_fn *fn, void *ctx, char *why,
                     size_t whylen)
{
    const char *p = list;

    while (*p) {
        size_t n;
        char item[128], host[64], quoted[160];
        unsigned port;

        p += strspn(p, ", \t");
        n = strcspn(p, ", \t");
        if (n == 0)
            break;
        if (n >= sizeof(item) ||
            (memcpy(item, p, n), item[n] = 0,
             address_parse(item, host, sizeof(host), &port) < 0)) {
            util_quote(quoted, sizeof(quoted), p, n, 0);
            snprintf(why, whylen,
                     "http_listen: %s is not IP:PORT or [IPV6]:PORT", quoted);
            return -1;
        }
        if (fn && fn(ctx, item, host, port, why, whylen) < 0)
            return -1;
        p += n;
    }
    return 0;
}

int ops_http_check(const char *listen, char *why, size_t whylen)
{
    return addresses(listen, NULL, NULL, why, whylen);
}

static int bind_one(void *ctx, const char *item, const char *host,
                    unsigned port, char *why, size_t whylen)
{
    struct ops_http *h = ctx;

    if (evhttp_bind_socket_with_handle(h->http, host, (ev_uint16_t)port) ==
        NULL) {
        snprintf(why, whylen, "http_listen %s: cannot listen: %s", item,
                 strerror(errno));
        return -1;
    }
    return 0;
}

static void request_cb(struct evhttp_request *req, void *arg)
{
    struct ops_http *h = arg;
    const char *uri = evhttp_request_get_uri(req);
    struct evhttp_uri *parsed = evhttp_uri_parse(uri);
    const char *path = parsed ? evhttp_uri_get_path(parsed) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    struct evbuffer *out;

    if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Allow",
                          "GET, HEAD");
        evhttp_send_error(req, 405, "Method Not Allowed");
        goto done;
    }
    for (int i = 0; path && i < h->nroutes; i++) {
        struct util_buf body = UTIL_BUF_INIT;
        int status;

        if (strcmp(path, h->routes[i].path) != 0)
            continue;
        status = h->routes[i].fn(h->routes[i].ctx, &body);
        out = evbuffer_new();
        if (body.len > 0)
            evbuffer_add(out, body.data, body.len);
        util_buf_free(&body);
        evhttp_add_header(evhttp_request_get_output_headers(req),
                          "Content-Type",
                          status == 200 ? h->routes[i].content_type
                                        : "text/plain; charset=utf-8");
        evhttp_send_reply(req, status, status == 200 ? "OK" : "Error", out);
        evbuffer_free(out);
        goto done;
    }
    evhttp_send_error(req, 404, "Not Found");
done:
    if (parsed)
        evhttp_uri_free(parsed);
}

struct ops_http *ops_http_create(struct event_base *base, const char *listen,
                                 char *why, size_t whylen)
{
    struct ops_http *h = xcalloc(1, sizeof(*h));

    if ((h->http = evhttp_new(base)) == NULL) {
        snprintf(why, whylen, "http_listen: cannot make an HTTP server");
        free(h);
        return NULL;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE);
    evhttp_set_max_headers_size(h->http, OPS_HTTP_HEADERS_MAX);
    evhttp_set_max_body_size(h->http, 0);
    evhttp_set_timeout(h->http, OPS_HTTP_TIMEOUT);
    evhttp_set_gencb(h->http, request_cb, h);
    if (addresses(listen, bind_one, h, why, whylen) < 0) {
        ops_http_free(h);
        return NULL;
    }
    return h;
}

void ops_http_route(struct ops_http *h, const char *path,
                    const char *content_type, ops_http_fn *fn, void *ctx)
{
    if (h->nroutes == ROUTES_MAX)
        util_panic("ops_http_route: more than %d routes", ROUTES_MAX);
    h->routes[h->nroutes++] =
        (struct route){xstrdup(path), content_type, fn, ctx};
}

void ops_http_free(struct ops_http *h)
{
    if (h == NULL)
        return;
    evhttp_free(h->http);
    for (int i = 0; i < h->nroutes; i++)
        free(h->routes[i].path);
    free(h);
}
