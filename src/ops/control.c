/*
 * NAME
 *	control 3 - the daemon's control socket: one request, one reply
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
 * DESCRIPTION
 *	See ops.h. Each session is a bufferevent on the daemon's event
 *	loop: its request is read under a deadline and a size limit, the
 *	verb's handler runs to completion (handlers read the daemon's
 *	state and do not wait), and the reply is written as fast as the
 *	client reads it, under a deadline of its own; the session then
 *	ends. A client that connects and says nothing, sends an endless
 *	line or reads nothing holds one of OPS_SESSIONS_MAX sessions for at
 *	most its deadline. Nothing a client sends is trusted to be text:
 *	the error reply quotes it with util_quote().
 *
 *	A verb added with ops_control_command_later() may answer later
 *	(sluice verify waits for probes): its handler returns 1 and keeps
 *	the session's handle; no deadline runs meanwhile (the verb bounds
 *	its own wait), and a client that goes away ends the session at
 *	once, the handler's cancel function called with its argument.
 */

#include "ops/ops.h"
#include "util/util.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <unistd.h>

#define REPLY_TIMEOUT 30 /* seconds for a client to read its reply */
#define VERBS_MAX     16

struct verb {
    const char *name;
    ops_control_fn *fn;
    ops_control_later_fn *later; /* or this, for a verb that may wait */
    void *ctx;
};

struct session {
    struct ops_control *c;
    struct bufferevent *bev;
    LIST_ENTRY(session) link;
    void (*cancel)(void *arg); /* while a later verb works */
    void *cancel_arg;
};

/* The handle a later verb answers through is its session. */
struct ops_control_later {
    struct session s;
};

struct ops_control {
    struct event_base *base;
    struct evconnlistener *listener;
    struct verb verbs[VERBS_MAX];
    int nverbs;
    LIST_HEAD(, session) sessions;
    long nsessions;
};

static void session_free(struct session *s)
{
    if (s->cancel != NULL)
        s->cancel(s->cancel_arg); /* the client is gone: nobody to answer */
    LIST_REMOVE(s, link);
    s->c->nsessions--;
    bufferevent_free(s->bev);
    free(s);
}

static void session_event(struct bufferevent *bev, short what, void *arg);

/* The reply is out (or cannot be): the session ends. */
static void session_written(struct bufferevent *bev, void *arg)
{
    struct session *s = arg;

    if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        session_free(s);
}

static void session_reply(struct session *s, int status,
                          const struct util_buf *text)
{
    struct timeval tv = {REPLY_TIMEOUT, 0};

    bufferevent_disable(s->bev, EV_READ);
    bufferevent_set_timeouts(s->bev, NULL, &tv);
    if (status == 0) {
        bufferevent_write(s->bev, "ok\n", 3);
        if (text->len > 0)
            bufferevent_write(s->bev, text->data, text->len);
    } else {
        bufferevent_write(s->bev, "error ", 6);
        /* One line: the reason, newlines and all, as one line. */
        for (size_t i = 0; i < text->len; i++)
            bufferevent_write(s->bev,
                              text->data[i] == '\n' ? " " : &text->data[i], 1);
        bufferevent_write(s->bev, "\n", 1);
    }
    /* An error or a timeout while writing ends the session too. */
    bufferevent_setcb(s->bev, NULL, session_written, session_event, s);
}

static void session_error(struct session *s, const char *fmt, const char *arg)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_buf_printf(&b, fmt, arg);
    session_reply(s, -1, &b);
    util_buf_free(&b);
}

static void session_request(struct session *s, char *line)
{
    struct ops_control *c = s->c;
    struct util_buf reply = UTIL_BUF_INIT;
    char *args = strchr(line, ' ');
    char quoted[96];
    int rc;

    if (args != NULL)
        *args++ = 0;
    else
        args = "";
    for (int i = 0; i < c->nverbs; i++) {
        if (strcmp(c->verbs[i].name, line) != 0)
            continue;
        if (c->verbs[i].later != NULL)
            rc = c->verbs[i].later(c->verbs[i].ctx, args, &reply,
                                   (struct ops_control_later *)s, &s->cancel,
                                   &s->cancel_arg);
        else
            rc = c->verbs[i].fn(c->verbs[i].ctx, args, &reply);
        if (rc > 0) {
            /* later: no deadline; a client that leaves ends it */
            bufferevent_set_timeouts(s->bev, NULL, NULL);
            util_buf_free(&reply);
            return;
        }
        session_reply(s, rc == 0 ? 0 : -1, &reply);
        util_buf_free(&reply);
        return;
    }
    util_quote(quoted, sizeof(quoted), line, strlen(line), 0);
    session_error(s, "unknown request %s", quoted);
}

static void session_read(struct bufferevent *bev, void *arg)
{
    struct session *s = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t len;
    char *line;

    if (s->cancel != NULL) { /* one request a session: the rest is noise */
        evbuffer_drain(in, evbuffer_get_length(in));
        return;
    }
    line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF);

    if (line == NULL) {
        if (evbuffer_get_length(in) > OPS_REQUEST_MAX)
            session_error(s, "%s", "request longer than 1024 bytes");
        return;
    }
    if (len > 0 && line[len - 1] == '\r')
        line[--len] = 0;
    if (len > OPS_REQUEST_MAX || strlen(line) != len) {
        session_error(s, "%s",
                      len > OPS_REQUEST_MAX ? "request longer than 1024 bytes"
                                            : "request holds a NUL byte");
    } else {
        session_request(s, line);
    }
    free(line);
}

static void session_event(struct bufferevent *bev, short what, void *arg)
{
    struct session *s = arg;

    (void)bev;
    if ((what & BEV_EVENT_TIMEOUT) && (what & BEV_EVENT_READING)) {
        session_error(s, "%s", "no request within 10 seconds");
        return;
    }
    /* Closed by the client, an error, or a reply it did not read. */
    session_free(s);
}

static void control_accept(struct evconnlistener *l, evutil_socket_t fd,
                           struct sockaddr *sa, int salen, void *arg)
{
    struct ops_control *c = arg;
    struct timeval tv = {OPS_REQUEST_TIMEOUT, 0};
    struct session *s;

    (void)l;
    (void)sa;
    (void)salen;
    if (c->nsessions >= OPS_SESSIONS_MAX) {
        static const char busy[] = "error busy: too many control sessions\n";

        (void)!write(fd, busy, sizeof(busy) - 1);
        close(fd);
        return;
    }
    s = xcalloc(1, sizeof(*s));
    s->c = c;
    s->bev = bufferevent_socket_new(c->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (s->bev == NULL) {
        close(fd);
        free(s);
        return;
    }
    LIST_INSERT_HEAD(&c->sessions, s, link);
    c->nsessions++;
    bufferevent_setcb(s->bev, session_read, NULL, session_event, s);
    bufferevent_set_timeouts(s->bev, &tv, NULL);
    /* Room for the longest request, its line end and one byte more. */
    bufferevent_setwatermark(s->bev, EV_READ, 0, OPS_REQUEST_MAX + 3);
    bufferevent_enable(s->bev, EV_READ);
}

struct ops_control *ops_control_create(struct event_base *base,
                                       const char *queue_directory, char *why,
                                       size_t whylen)
{
    struct ops_control *c;
    int fd =
        util_socket_listen(queue_directory, OPS_CONTROL_SOCKET, SOCK_STREAM,
                           0660, "control socket", why, whylen);

    if (fd < 0)
        return NULL;
    c = xcalloc(1, sizeof(*c));
    c->base = base;
    LIST_INIT(&c->sessions);
    c->listener = evconnlistener_new(base, control_accept, c,
                                     LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (c->listener == NULL) {
        snprintf(why, whylen, "control socket: cannot serve it");
        close(fd);
        free(c);
        return NULL;
    }
    return c;
}

void ops_control_command(struct ops_control *c, const char *verb,
                         ops_control_fn *fn, void *ctx)
{
    if (c->nverbs == VERBS_MAX)
        util_panic("ops_control_command: more than %d verbs", VERBS_MAX);
    c->verbs[c->nverbs++] = (struct verb){verb, fn, NULL, ctx};
}

void ops_control_command_later(struct ops_control *c, const char *verb,
                               ops_control_later_fn *fn, void *ctx)
{
    if (c->nverbs == VERBS_MAX)
        util_panic("ops_control_command: more than %d verbs", VERBS_MAX);
    c->verbs[c->nverbs++] = (struct verb){verb, NULL, fn, ctx};
}

void ops_control_later_reply(struct ops_control_later *l, int status,
                             const struct util_buf *text)
{
    struct session *s = &l->s;

    s->cancel = NULL;
    session_reply(s, status, text);
}

long ops_control_sessions(const struct ops_control *c)
{
    return c ? c->nsessions : 0;
}

void ops_control_free(struct ops_control *c)
{
    if (c == NULL)
        return;
    while (!LIST_EMPTY(&c->sessions))
        session_free(LIST_FIRST(&c->sessions));
    evconnlistener_free(c->listener);
    free(c);
}
