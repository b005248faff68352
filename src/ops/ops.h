#ifndef SLUICE_OPS_H
#define SLUICE_OPS_H

/*
 * NAME
 *	ops 3h - operating the running daemon: its control socket
 * SYNOPSIS
 *	#include "ops/ops.h"
 *
 *	struct ops_control *ops_control_create(struct event_base *base,
 *			const char *queue_directory, char *why, size_t whylen)
 *	void	ops_control_command(struct ops_control *c, const char *verb,
 *			ops_control_fn *fn, void *ctx)
 *	void	ops_control_command_later(struct ops_control *c,
 *			const char *verb, ops_control_later_fn *fn, void *ctx)
 *	void	ops_control_later_reply(struct ops_control_later *l,
 *			int status, const struct util_buf *text)
 *	long	ops_control_sessions(const struct ops_control *c)
 *	void	ops_control_free(struct ops_control *c)
 *
 *	int	ops_control_call(const char *queue_directory,
 *			const char *request, int timeout_s,
 *			struct util_buf *reply, char *why, size_t whylen)
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
 *	The control socket (control.c) is how `sluice status` and the
 *	other operator verbs talk to sluiced: a Unix stream socket,
 *	QUEUE_DIRECTORY/OPS_CONTROL_SOCKET, of mode 0660, so that only the
 *	daemon's owner and group may use it. A session is one request
 *	line, "VERB[ ARGUMENTS]" (at most OPS_REQUEST_MAX bytes, within
 *	OPS_REQUEST_TIMEOUT seconds), and one reply: "ok" or "error TEXT"
 *	on its first line, then the verb's text, then the end of the
 *	connection. A request that is too long, late, not a line or names
 *	no known verb gets its error and the session ends; it costs that
 *	session and nothing else. At most OPS_SESSIONS_MAX sessions run at
 *	once; one more is closed at once.
 *
 *	ops_control_create() makes the socket (replacing a previous
 *	daemon's) and serves it on base; NULL with the reason in why.
 *	ops_control_command() adds a verb: fn gets the arguments (after
 *	one space; "" when none) and appends its reply text to reply; it
 *	returns 0, or -1 when the request failed, reply then holding the
 *	one-line reason. ops_control_sessions() counts sessions open.
 *	ops_control_free() closes the socket and every session.
 *
 *	ops_control_call() is the client: it sends request to the daemon
 *	of queue_directory and appends the reply's text (without its
 *	status line) to reply. It returns 0 for "ok"; 1 for "error", the
 *	text in why; -1 when there was no answer, the reason in why and
 *	errno ENOENT or ECONNREFUSED when no daemon listens (it is not
 *	running), EACCES when the caller may not use the socket, ETIMEDOUT
 *	after timeout_s seconds.
 *
 *	The HTTP listener (http.c) serves the routed paths on the addresses
 *	of http_listen (IP:PORT or [IPV6]:PORT, in a list): GET and HEAD of
 *	an ops_http_route() path, answered at once (fn appends the body and
 *	returns the HTTP status), POST of an ops_http_route_post() path,
 *	handed to its call as a struct ops_http_call and answered with
 *	ops_http_call_reply() when the work is done; 405 for other methods,
 *	404 for other paths, headers of at most OPS_HTTP_HEADERS_MAX
 *	bytes, bodies of at most body_max, idle connections closed after
 *	OPS_HTTP_TIMEOUT seconds. ops_http_check() checks the list's syntax;
 *	ops_http_create() binds it (NULL with "http_listen ADDR: REASON");
 *	ops_http_free() closes it all (calls under way are then answered
 *	to nobody).
 */

#include <stddef.h>

#define OPS_CONTROL_SOCKET  "private/control"
#define OPS_REQUEST_MAX     1024
#define OPS_REQUEST_TIMEOUT 10
#define OPS_SESSIONS_MAX    16

#define OPS_HTTP_HEADERS_MAX 8192
#define OPS_HTTP_TIMEOUT     10

struct event_base;
struct util_buf;
struct ops_control;
struct ops_http;
struct ops_http_call;

typedef int ops_control_fn(void *ctx, const char *args, struct util_buf *reply);
/*
 * A verb that may answer later: 0 or -1 with reply as ops_control_fn, or
 * 1 with *cancel and *cancel_arg set; it then calls
 * ops_control_later_reply(l, ...) once, unless cancel(cancel_arg) came
 * first (the client went away, or the socket closed).
 */
struct ops_control_later;
typedef int ops_control_later_fn(void *ctx, const char *args,
                                 struct util_buf *reply,
                                 struct ops_control_later *l,
                                 void (**cancel)(void *arg), void **cancel_arg);
typedef int ops_http_fn(void *ctx, struct util_buf *body);
typedef void ops_http_call_fn(void *ctx, struct ops_http_call *c);

struct ops_control *ops_control_create(struct event_base *base,
                                       const char *queue_directory, char *why,
                                       size_t whylen);
void ops_control_command(struct ops_control *c, const char *verb,
                         ops_control_fn *fn, void *ctx);
void ops_control_command_later(struct ops_control *c, const char *verb,
                               ops_control_later_fn *fn, void *ctx);
void ops_control_later_reply(struct ops_control_later *l, int status,
                             const struct util_buf *text);
long ops_control_sessions(const struct ops_control *c);
void ops_control_free(struct ops_control *c);

int ops_control_call(const char *queue_directory, const char *request,
                     int timeout_s, struct util_buf *reply, char *why,
                     size_t whylen);

int ops_http_check(const char *listen, char *why, size_t whylen);
struct ops_http *ops_http_create(struct event_base *base, const char *listen,
                                 size_t body_max, char *why, size_t whylen);
void ops_http_route(struct ops_http *h, const char *path,
                    const char *content_type, ops_http_fn *fn, void *ctx);
void ops_http_route_post(struct ops_http *h, const char *path,
                         ops_http_call_fn *call, void *ctx);
void ops_http_free(struct ops_http *h);
const char *ops_http_call_body(const struct ops_http_call *c, size_t *len);
const char *ops_http_call_header(const struct ops_http_call *c,
                                 const char *name);
const char *ops_http_call_peer(const struct ops_http_call *c, char *buf,
                               size_t len);
void ops_http_call_reply(struct ops_http_call *c, int status,
                         const char *content_type, const char *body, size_t len,
                         const char *header, const char *value);

#endif
