/*
 * NAME
 *	http 3 - the daemon's HTTP listener: metrics and the status API
 * SYNOPSIS
 *	#include "ops/ops.h"
 *
 *	int	ops_http_check(const char *listen, char *why, size_t whylen)
 *	struct ops_http *ops_http_create(struct event_base *base,
 *			const char *listen, size_t body_max, char *why,
 *			size_t whylen)
 *	void	ops_http_route(struct ops_http *h, const char *path,
 *			const char *content_type, ops_http_fn *fn, void *ctx)
 *	void	ops_http_route_post(struct ops_http *h, const char *path,
 *			ops_http_call_fn *call, void *ctx)
 *	void	ops_http_free(struct ops_http *h)
 *
 *	const char *ops_http_call_body(const struct ops_http_call *c,
 *			size_t *len)
 *	const char *ops_http_call_header(const struct ops_http_call *c,
 *			const char *name)
 *	const char *ops_http_call_peer(const struct ops_http_call *c,
 *			char *buf, size_t len)
 *	void	ops_http_call_reply(struct ops_http_call *c, int status,
 *			const char *content_type, const char *body,
 *			size_t len, const char *header, const char *value)
 * DESCRIPTION
 *	sluiced answers HTTP (libevent's evhttp) on the addresses of
 *	http_listen, a list of IP:PORT or [IPV6]:PORT (empty: no listener),
 *	for scrapers, dashboards and injecting programs. A path routed
 *	with ops_http_route() answers GET and HEAD at once; one routed with
 *	ops_http_route_post() answers POST when its work is done; any other
 *	method is 405, any other path 404. A request's headers may hold at
 *	most OPS_HTTP_HEADERS_MAX bytes and its body body_max; a connection
 *	idle for OPS_HTTP_TIMEOUT seconds is closed.
 *
 *	ops_http_check() checks the list's syntax (for the configuration
 *	check); ops_http_create() binds every address and serves them on
 *	base: NULL with the reason ("http_listen ADDR: ...") when one
 *	cannot be bound. ops_http_route() adds a path: fn appends the body
 *	to body and returns the HTTP status (200, or 500 with a text);
 *	content_type is sent with it. ops_http_route_post() adds a path
 *	whose call gets each POST as a struct ops_http_call: its body
 *	(ops_http_call_body(), NUL-terminated after len bytes), a request
 *	header (ops_http_call_header(), NULL when absent), the client's
 *	address (ops_http_call_peer()); the call answers, now or later, with
 *	ops_http_call_reply() (one extra header may go with it), which frees
 *	c. A client that went away meanwhile gets nothing, and neither does
 *	one whose server was freed first: ops_http_free() closes everything
 *	and leaves calls under way to be answered to nobody.
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
#include <sys/queue.h>

#define ROUTES_MAX 8

struct route {
    char *path;
    const char *content_type; /* of fn's replies */
    ops_http_fn *fn;          /* GET and HEAD, answered at once */
    ops_http_call_fn *call;   /* POST, answered when it is done */
    void *ctx;
};

/* A POST under way: answered later, or orphaned by ops_http_free(). */
struct ops_http_call {
    struct ops_http *h;
    struct evhttp_request *req; /* NULL: the server is gone */
    char *body;
    size_t len;
    LIST_ENTRY(ops_http_call) link;
};

struct ops_http {
    struct evhttp *http;
    struct route routes[ROUTES_MAX];
    int nroutes;
    LIST_HEAD(, ops_http_call) calls;
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

/* A POST: its body and headers go to the route's call function. */
static void call_start(struct ops_http *h, const struct route *r,
                       struct evhttp_request *req)
{
    struct ops_http_call *c = xcalloc(1, sizeof(*c));
    struct evbuffer *in = evhttp_request_get_input_buffer(req);

    c->h = h;
    c->req = req;
    c->len = evbuffer_get_length(in);
    c->body = xmalloc(c->len + 1);
    evbuffer_remove(in, c->body, c->len);
    c->body[c->len] = 0;
    LIST_INSERT_HEAD(&h->calls, c, link);
    r->call(r->ctx, c);
}

const char *ops_http_call_body(const struct ops_http_call *c, size_t *len)
{
    *len = c->len;
    return c->body;
}

const char *ops_http_call_header(const struct ops_http_call *c,
                                 const char *name)
{
    return c->req ? evhttp_find_header(evhttp_request_get_input_headers(c->req),
                                       name)
                  : NULL;
}

const char *ops_http_call_peer(const struct ops_http_call *c, char *buf,
                               size_t len)
{
    struct evhttp_connection *evcon =
        c->req ? evhttp_request_get_connection(c->req) : NULL;
    const char *addr = NULL;
    ev_uint16_t port = 0;

    if (evcon)
        evhttp_connection_get_peer(evcon, (char **)&addr, &port);
    snprintf(buf, len, "%s", addr ? addr : "unknown");
    return buf;
}

void ops_http_call_reply(struct ops_http_call *c, int status,
                         const char *content_type, const char *body, size_t len,
                         const char *header, const char *value)
{
    if (c->req != NULL) {
        struct evbuffer *out = evbuffer_new();
        struct evkeyvalq *hd = evhttp_request_get_output_headers(c->req);

        evbuffer_add(out, body, len);
        evhttp_add_header(hd, "Content-Type", content_type);
        if (header != NULL)
            evhttp_add_header(hd, header, value);
        /* A client gone by now: libevent frees the request here. */
        evhttp_send_reply(c->req, status, status < 300 ? "OK" : "Error", out);
        evbuffer_free(out);
    }
    if (c->h != NULL)
        LIST_REMOVE(c, link);
    free(c->body);
    free(c);
}

static void request_cb(struct evhttp_request *req, void *arg)
{
    struct ops_http *h = arg;
    const char *uri = evhttp_request_get_uri(req);
    struct evhttp_uri *parsed = evhttp_uri_parse(uri);
    const char *path = parsed ? evhttp_uri_get_path(parsed) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    struct evbuffer *out;

    for (int i = 0; path && i < h->nroutes; i++) {
        struct util_buf body = UTIL_BUF_INIT;
        int status;

        if (strcmp(path, h->routes[i].path) != 0)
            continue;
        if (h->routes[i].call != NULL) {
            if (cmd != EVHTTP_REQ_POST)
                goto not_allowed;
            call_start(h, &h->routes[i], req);
            goto done;
        }
        if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
            goto not_allowed;
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
    goto done;
not_allowed:
    evhttp_send_error(req, 405, "Method Not Allowed");
done:
    if (parsed)
        evhttp_uri_free(parsed);
}

struct ops_http *ops_http_create(struct event_base *base, const char *listen,
                                 size_t body_max, char *why, size_t whylen)
{
    struct ops_http *h = xcalloc(1, sizeof(*h));

    LIST_INIT(&h->calls);
    if ((h->http = evhttp_new(base)) == NULL) {
        snprintf(why, whylen, "http_listen: cannot make an HTTP server");
        free(h);
        return NULL;
    }
    evhttp_set_allowed_methods(h->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_POST | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_DELETE);
    evhttp_set_max_headers_size(h->http, OPS_HTTP_HEADERS_MAX);
    evhttp_set_max_body_size(h->http, (ev_ssize_t)body_max);
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
        (struct route){xstrdup(path), content_type, fn, NULL, ctx};
}

void ops_http_route_post(struct ops_http *h, const char *path,
                         ops_http_call_fn *call, void *ctx)
{
    if (h->nroutes == ROUTES_MAX)
        util_panic("ops_http_route: more than %d routes", ROUTES_MAX);
    h->routes[h->nroutes++] =
        (struct route){xstrdup(path), NULL, NULL, call, ctx};
}

void ops_http_free(struct ops_http *h)
{
    struct ops_http_call *c;

    if (h == NULL)
        return;
    /* Calls still under way are answered to nobody: evhttp frees their
     * requests with their connections. */
    while ((c = LIST_FIRST(&h->calls)) != NULL) {
        LIST_REMOVE(c, link);
        c->req = NULL;
        c->h = NULL;
    }
    evhttp_free(h->http);
    for (int i = 0; i < h->nroutes; i++)
        free(h->routes[i].path);
    free(h);
}
