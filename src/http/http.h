#ifndef SLUICE_HTTP_H
#define SLUICE_HTTP_H

/*
 * NAME
 *	http 3h - HTTPS requests with libcurl's multi interface on libevent
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
 *	One client runs any number of requests on the loop base, whose
 *	thread alone may call it: libcurl's multi interface does the HTTP
 *	and TLS, the loop does the waiting (decision 57). What every
 *	request gets, whoever asks: HTTPS only, no redirect followed (a
 *	3xx is an answer like any other), the peer's certificate verified
 *	for the URL's host (against r->ca_file, or the system's CAs), TLS
 *	1.2 at least, no proxy whatever the environment says, no
 *	connection kept, the whole exchange within r->timeout_ms, a
 *	response body of at most r->max_bytes (the transfer ends as soon
 *	as it passes).
 *
 *	http_client_create() returns a client, or NULL with why.
 *	http_client_free() ends every request under way; their done is
 *	not called.
 *
 *	http_request_start() starts r: a GET, or a POST of r->body
 *	(r->body_len bytes, r->content_type) when r->body is not NULL.
 *	r->connect_to and r->resolve, when set, are one line of
 *	CURLOPT_CONNECT_TO and CURLOPT_RESOLVE ("HOST:PORT:ADDRESSES"):
 *	the caller's resolver's answer, or a test's server. r is copied.
 *	done is called once, from the loop, never from inside the call,
 *	with the response: status 0 with the HTTP code, the Content-Type
 *	(or NULL) and the body, or status -1 with error (the transfer
 *	failed; too_big when the body passed max_bytes); what it is given
 *	lives until it returns. It returns 0, or -1 with why (done is then
 *	never called). http_client_pending() counts requests under way.
 */

#include <stddef.h>

struct event_base;
struct http_client;

struct http_request {
    const char *url;
    const char *body; /* NULL: GET; else POST */
    size_t body_len;
    const char *content_type; /* of the body */
    const char *ca_file;      /* NULL or "": the system's CAs */
    int timeout_ms;
    size_t max_bytes; /* of the response body */
    const char *connect_to, *resolve;
    const char *user_agent;
};

struct http_response {
    int status; /* 0: an HTTP answer; -1: none */
    long code;
    const char *content_type; /* or NULL */
    const char *body;         /* NUL-ended */
    size_t len;
    int too_big;
    const char *error; /* status -1: why */
};

typedef void http_done_fn(void *ctx, const struct http_response *r);

struct http_client *http_client_create(struct event_base *base, char *why,
                                       size_t whylen);
void http_client_free(struct http_client *c);
int http_request_start(struct http_client *c, const struct http_request *r,
                       http_done_fn *done, void *ctx, char *why, size_t whylen);
size_t http_client_pending(const struct http_client *c);

#endif
