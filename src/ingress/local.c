/*
 * NAME
 *	local 3 - the daemon's submission socket, both ends
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	local_submit(const char *queue_directory,
 *			const struct spool_msg *m, int timeout_ms, char *id,
 *			size_t idlen, char *why, size_t whylen)
 *	int	local_flush(const char *queue_directory, const char *domain,
 *			int timeout_ms, long *messages, char *why,
 *			size_t whylen)
 *
 *	struct local_server *local_server_create(struct event_base *base,
 *			const char *queue_directory,
 *			const struct local_params *p, local_store_fn *store,
 *			void *ctx, char *why, size_t whylen)
 *	void	local_server_params_set(struct local_server *s,
 *			const struct local_params *p)
 *	void	local_server_close(struct local_server *s)
 *	long	local_server_busy(const struct local_server *s)
 *	void	local_server_free(struct local_server *s)
 * DESCRIPTION
 *	"sluice sendmail" hands its message to the running daemon over a
 *	stream socket at QUEUE_DIRECTORY/public/submit (LOCAL_SOCKET), so
 *	that the daemon stores it in its next group commit: many programs
 *	submitting at once share one fsync, where each would otherwise
 *	open the spool and commit alone. When no daemon answers, sendmail
 *	stores the message itself, or leaves it in the maildrop.
 *
 *	The protocol, one request per connection:
 *
 *	    client: submit LENGTH LF, then LENGTH bytes: one maildrop
 *		    record (maildrop_format(); the maildrop file format)
 *	    server: one line, once the message is durable or refused:
 *		    ok QUEUEID LF		stored
 *		    reject REASON LF	never acceptable (malformed, too big)
 *		    tempfail REASON LF	not stored now (spool full, disk full)
 *
 *	    client: flush LF, or flush DOMAIN LF
 *	    server: ok N LF		N deferred messages made due now
 *		    reject REASON LF	a malformed domain
 *
 *	The server reads the record with the same strict parser as the
 *	maildrop (maildrop_parse()), and the uid it records must be the
 *	peer's effective uid (SO_PEERCRED), so that a local user cannot
 *	submit in another's name. A request larger than the message size
 *	limit plus LOCAL_ENVELOPE_MAX is refused before it is read; a
 *	client that sends nothing for LOCAL_CLIENT_TIMEOUT is dropped.
 *	At most LOCAL_CLIENT_LIMIT clients are served at once: beyond
 *	that the server stops accepting, and new clients wait in the
 *	listen queue (flow control, not failure).
 *
 *	local_flush() asks the daemon to flush deferred mail, for one
 *	domain or all (NULL), and puts the number of messages made due in
 *	*messages; it returns as local_submit() does. The domain is a
 *	node's written form (smtp_node_parse(): a domain, .domain for its
 *	subdomains too, or an address literal, at most LOCAL_DOMAIN_MAX
 *	bytes of domain); anything else is refused at once (LOCAL_REJECT),
 *	without asking, and the server refuses it too. The server hands a
 *	flush to p->flush(ctx, node, done, conn) (node NULL for all), which
 *	calls done(conn, messages,
 *	why) once, on the loop thread; a why (some changes could not be
 *	written) is answered as a temporary failure with that reason.
 *
 *	local_submit() is the client. It returns LOCAL_OK with the queue id
 *	in id, or LOCAL_REJECT / LOCAL_TEMPFAIL with the daemon's reason;
 *	LOCAL_UNAVAILABLE when no daemon listens or the connection ended
 *	before an answer (nothing was stored: the caller stores the message
 *	another way); LOCAL_NO_ANSWER when the request went out but no
 *	answer came within timeout_ms (the daemon may yet store it: storing
 *	it another way risks a duplicate, never a loss).
 *
 *	local_server_create() creates the socket (mode 0666 in the public
 *	directory, mode 0755, made if missing; a stale socket of a previous
 *	daemon is replaced) and serves it on base. For each complete
 *	request it calls store(ctx, m, uid, done, conn), which owns m from
 *	then on and calls done(conn, status, id, why) exactly once, on the
 *	loop thread, possibly before store returns: status 0 and the queue
 *	id when the message is durable, LOCAL_TEMPFAIL and a reason when
 *	it is not. Every refusal and drop is logged through p->log.
 *
 *	local_server_params_set() changes the size limit and the log
 *	function (a configuration reload), for requests from then on.
 *
 *	local_server_close() is the start of a stop: the socket is
 *	removed and no request is taken any more; clients still sending
 *	are dropped (they store their message another way), those being
 *	stored get their answer. local_server_busy() counts those. After
 *	local_server_free() a pending done() is still safe to call: it
 *	only frees what is left of its client.
 */

#define _GNU_SOURCE /* struct ucred */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"
#include "smtp/smtp.h"

#include <ctype.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <inttypes.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define REQUEST_LINE_MAX 64 /* "submit LENGTH" */
#define REPLY_LINE_MAX   600

/* ------------------------------------------------------------- common */

/* ------------------------------------------------------------- client */

/*
 * Wait for fd to be ready for events, timeout_ms after start_ms (the
 * monotonic clock's); 1 ready, 0 timed out, -1 error.
 */
static int wait_fd(int fd, short events, int64_t start_ms, int timeout_ms)
{
    struct pollfd pfd = {fd, events, 0};
    long left;
    int n;

    for (;;) {
        left = timeout_ms - (long)(util_clock_mono_ms() - start_ms);
        if (left <= 0)
            return 0;
        n = poll(&pfd, 1, (int)left);
        if (n >= 0 || errno != EINTR)
            return n > 0 ? 1 : n;
    }
}

static int send_all(int fd, const char *data, size_t len, int64_t start_ms,
                    int timeout_ms)
{
    ssize_t n;

    while (len > 0) {
        if (wait_fd(fd, POLLOUT, start_ms, timeout_ms) <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Read the answer line; its length, 0 at end of file, -1 error/timeout. */
static ssize_t read_reply(int fd, char *buf, size_t len, int64_t start_ms,
                          int timeout_ms)
{
    size_t got = 0;
    ssize_t n;
    int ready;

    while (got + 1 < len) {
        if ((ready = wait_fd(fd, POLLIN, start_ms, timeout_ms)) <= 0) {
            errno = ready == 0 ? ETIMEDOUT : errno;
            return -1;
        }
        n = recv(fd, buf + got, len - got - 1, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return n;
        got += (size_t)n;
        buf[got] = 0;
        if (memchr(buf, '\n', got) != NULL)
            return (ssize_t)got;
    }
    errno = EPROTO;
    return -1;
}

/* The daemon's answer line, to a status. */
static int parse_reply(char *line, char *id, size_t idlen, char *why,
                       size_t whylen)
{
    char *nl = strchr(line, '\n');
    char *arg;

    *nl = 0;
    arg = strchr(line, ' ');
    if (arg == NULL) {
        snprintf(why, whylen, "unexpected answer from the daemon");
        return LOCAL_NO_ANSWER;
    }
    *arg++ = 0;
    if (strcmp(line, "ok") == 0) {
        snprintf(id, idlen, "%s", arg);
        return LOCAL_OK;
    }
    snprintf(why, whylen, "%s", arg);
    if (strcmp(line, "reject") == 0)
        return LOCAL_REJECT;
    if (strcmp(line, "tempfail") == 0)
        return LOCAL_TEMPFAIL;
    snprintf(why, whylen, "unexpected answer from the daemon");
    return LOCAL_NO_ANSWER;
}

/*
 * One exchange with the daemon: the request line head, then len bytes of
 * body; the answer's argument (the queue id, a count) goes to arg.
 */
static int request(const char *queue_directory, const char *head,
                   const char *body, size_t len, int timeout_ms, char *arg,
                   size_t arglen, char *why, size_t whylen)
{
    struct sockaddr_un sun;
    int64_t start_ms;
    char reply[REPLY_LINE_MAX];
    ssize_t n;
    int fd, rc;

    *arg = 0;
    if (util_socket_address(&sun, queue_directory, LOCAL_SOCKET, why, whylen) <
        0)
        return LOCAL_UNAVAILABLE;
    start_ms = util_clock_mono_ms();
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        snprintf(why, whylen, "%s: %s", sun.sun_path, strerror(errno));
        rc = LOCAL_UNAVAILABLE;
        goto done;
    }
    if (send_all(fd, head, strlen(head), start_ms, timeout_ms) < 0 ||
        send_all(fd, body, len, start_ms, timeout_ms) < 0) {
        snprintf(why, whylen, "sending to %s: %s", sun.sun_path,
                 strerror(errno));
        /* A refusal may already be waiting: a request too big. */
        n = read_reply(fd, reply, sizeof(reply), start_ms,
                       errno == ETIMEDOUT ? 0 : timeout_ms);
        rc = n > 0                ? parse_reply(reply, arg, arglen, why, whylen)
             : errno == ETIMEDOUT ? LOCAL_NO_ANSWER
                                  : LOCAL_UNAVAILABLE;
        goto done;
    }
    n = read_reply(fd, reply, sizeof(reply), start_ms, timeout_ms);
    if (n > 0) {
        rc = parse_reply(reply, arg, arglen, why, whylen);
    } else if (n == 0 || errno != ETIMEDOUT) {
        snprintf(why, whylen, "%s: the daemon closed the connection",
                 sun.sun_path);
        rc = LOCAL_UNAVAILABLE;
    } else {
        snprintf(why, whylen, "%s: no answer within %d s", sun.sun_path,
                 timeout_ms / 1000);
        rc = LOCAL_NO_ANSWER;
    }
done:
    if (fd >= 0)
        close(fd);
    return rc;
}

int local_submit(const char *queue_directory, const struct spool_msg *m,
                 int timeout_ms, char *id, size_t idlen, char *why,
                 size_t whylen)
{
    char head[REQUEST_LINE_MAX];
    char *rec = NULL;
    size_t len;
    int rc;

    *id = 0;
    if (maildrop_format(m, &rec, &len, why, whylen) < 0)
        return LOCAL_REJECT;
    snprintf(head, sizeof(head), "submit %zu\n", len);
    rc = request(queue_directory, head, rec, len, timeout_ms, id, idlen, why,
                 whylen);
    free(rec);
    return rc;
}

/* Both ends check a flush's node, the client before it connects. */
int local_flush(const char *queue_directory, const char *domain, int timeout_ms,
                long *messages, char *why, size_t whylen)
{
    char head[REQUEST_LINE_MAX + LOCAL_DOMAIN_MAX], count[32];
    struct smtp_node node;
    int rc;

    *messages = 0;
    if (domain != NULL && smtp_node_parse(&node, domain) < 0) {
        snprintf(why, whylen,
                 "malformed domain for flush: a domain, .domain or "
                 "[address], at most %d bytes",
                 LOCAL_DOMAIN_MAX);
        return LOCAL_REJECT;
    }
    snprintf(head, sizeof(head), "flush%s%s\n", domain ? " " : "",
             domain ? domain : "");
    rc = request(queue_directory, head, "", 0, timeout_ms, count, sizeof(count),
                 why, whylen);
    if (rc == LOCAL_OK)
        *messages = strtol(count, NULL, 10);
    return rc;
}

/* ------------------------------------------------------------- server */

enum conn_state {
    CONN_HEADER,  /* reading "submit LENGTH" */
    CONN_BODY,    /* reading the record */
    CONN_STORING, /* store() has the message */
    CONN_REPLYING /* writing the answer */
};

struct local_conn {
    struct local_server *s; /* NULL: the server is gone */
    struct bufferevent *bev;
    enum conn_state state;
    int gone; /* the client hung up while its message was stored */
    uid_t uid;
    pid_t pid;
    uint64_t want;
    LIST_ENTRY(local_conn) link;
};

struct local_server {
    struct event_base *base;
    struct local_params p;
    local_store_fn *store;
    void *ctx;
    struct evconnlistener *listener;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    long nconn;
    int paused; /* at LOCAL_CLIENT_LIMIT: not accepting */
    LIST_HEAD(, local_conn) conns;
};

static void slog(struct local_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void slog(struct local_server *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (s->p.log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    s->p.log(s->p.log_ctx, line);
}

static void conn_free(struct local_conn *c)
{
    struct local_server *s = c->s;

    if (c->bev)
        bufferevent_free(c->bev);
    if (s != NULL) {
        LIST_REMOVE(c, link);
        s->nconn--;
        if (s->paused && s->listener && s->nconn < LOCAL_CLIENT_LIMIT) {
            evconnlistener_enable(s->listener);
            s->paused = 0;
        }
    }
    free(c);
}

static void reply_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_free(arg);
}

/* Answer one line and close once it is out. */
static void conn_reply(struct local_conn *c, const char *word, const char *text)
{
    char line[REPLY_LINE_MAX];
    size_t i, n;

    n = (size_t)snprintf(line, sizeof(line) - 1, "%s %s", word, text);
    if (n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    for (i = 0; i < n; i++)
        if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
            line[i] = ' ';
    line[n++] = '\n';
    c->state = CONN_REPLYING;
    bufferevent_disable(c->bev, EV_READ);
    bufferevent_setcb(c->bev, NULL, reply_written, NULL, c);
    bufferevent_write(c->bev, line, n);
}

static void conn_reject(struct local_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void conn_reject(struct local_conn *c, const char *fmt, ...)
{
    char why[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    slog(c->s, "submit: uid %lu pid %ld: rejected: %s", (unsigned long)c->uid,
         (long)c->pid, why);
    conn_reply(c, "reject", why);
}

static void stored(void *arg, int status, const char *id, const char *why)
{
    struct local_conn *c = arg;

    if (c->s == NULL || c->gone) {
        conn_free(c);
        return;
    }
    if (status == 0)
        conn_reply(c, "ok", id);
    else
        conn_reply(c, "tempfail", why);
}

static uint64_t request_limit(const struct local_server *s)
{
    return s->p.size_limit > 0 ? s->p.size_limit + LOCAL_ENVELOPE_MAX
                               : MAILDROP_SIZE_MAX;
}

static void flushed(void *arg, long messages, const char *why)
{
    struct local_conn *c = arg;
    char count[32];

    if (c->s == NULL || c->gone) {
        conn_free(c);
        return;
    }
    if (why != NULL) {
        conn_reply(c, "tempfail", why);
        return;
    }
    snprintf(count, sizeof(count), "%ld", messages);
    conn_reply(c, "ok", count);
}

static void read_flush(struct local_conn *c, char *line)
{
    struct local_server *s = c->s;
    const char *domain = line[5] == ' ' ? line + 6 : NULL;
    struct smtp_node node;

    if (line[5] != 0 && line[5] != ' ') {
        conn_reject(c, "malformed request line: expected \"flush [DOMAIN]\"");
    } else if (domain != NULL && smtp_node_parse(&node, domain) < 0) {
        conn_reject(c, "malformed domain for flush");
    } else if (s->p.flush == NULL) {
        conn_reject(c, "flush is not available here");
    } else {
        c->state = CONN_STORING;
        bufferevent_disable(c->bev, EV_READ);
        s->p.flush(s->ctx, domain ? &node : NULL, flushed, c);
    }
    free(line);
}

static void read_header(struct local_conn *c, struct evbuffer *in)
{
    size_t n;
    char *line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF);
    char *end;
    unsigned long long want;

    if (line == NULL) {
        if (evbuffer_get_length(in) > REQUEST_LINE_MAX + LOCAL_DOMAIN_MAX)
            conn_reject(c, "request line too long");
        return;
    }
    if (strncmp(line, "flush", 5) == 0) {
        read_flush(c, line);
        return;
    }
    errno = 0;
    want = strncmp(line, "submit ", 7) == 0 && line[7] >= '1' && line[7] <= '9'
               ? strtoull(line + 7, &end, 10)
               : 0;
    if (want == 0 || errno != 0 || *end != 0) {
        free(line);
        conn_reject(c, "malformed request line: expected \"submit LENGTH\"");
        return;
    }
    free(line);
    if (want > request_limit(c->s)) {
        conn_reject(c, "message too big: %llu bytes, the limit is %" PRIu64,
                    want, request_limit(c->s));
        return;
    }
    c->want = want;
    c->state = CONN_BODY;
}

static void read_body(struct local_conn *c, struct evbuffer *in)
{
    struct local_server *s = c->s;
    struct spool_msg *m;
    size_t have = evbuffer_get_length(in);
    char why[512];
    char *buf;

    if (have < c->want)
        return;
    if (have > c->want) {
        conn_reject(c, "%zu bytes more than the %" PRIu64 " announced",
                    have - (size_t)c->want, c->want);
        return;
    }
    buf = xmalloc((size_t)c->want);
    evbuffer_remove(in, buf, (size_t)c->want);
    if (maildrop_parse(buf, (size_t)c->want, c->uid, &m, why, sizeof(why)) <
        0) {
        conn_reject(c, "malformed message record: %s", why);
        return;
    }
    if (s->p.size_limit > 0 && m->size > s->p.size_limit) {
        uint64_t size = m->size;

        spool_msg_free(m);
        conn_reject(c,
                    "message too big: %" PRIu64 " bytes, the limit is %" PRIu64,
                    size, s->p.size_limit);
        return;
    }
    c->state = CONN_STORING;
    bufferevent_disable(c->bev, EV_READ);
    s->store(s->ctx, m, c->uid, stored, c);
}

static void conn_read(struct bufferevent *bev, void *arg)
{
    struct local_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);

    if (c->state == CONN_HEADER)
        read_header(c, in);
    if (c->state == CONN_BODY)
        read_body(c, in);
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct local_conn *c = arg;

    (void)bev;
    if (c->state == CONN_STORING) {
        c->gone = 1; /* its answer has nobody to go to */
        return;
    }
    if (what & BEV_EVENT_TIMEOUT)
        slog(c->s, "submit: uid %lu pid %ld: timeout after %d s, dropped",
             (unsigned long)c->uid, (long)c->pid, LOCAL_CLIENT_TIMEOUT);
    conn_free(c);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    struct local_server *s = arg;
    struct local_conn *c;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    struct timeval tmo = {LOCAL_CLIENT_TIMEOUT, 0};

    (void)sa;
    (void)salen;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
        slog(s, "submit: cannot tell who connected: %s", strerror(errno));
        close(fd);
        return;
    }
    c = xmalloc(sizeof(*c));
    memset(c, 0, sizeof(*c));
    c->s = s;
    c->uid = cred.uid;
    c->pid = cred.pid;
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL) {
        close(fd);
        free(c);
        return;
    }
    LIST_INSERT_HEAD(&s->conns, c, link);
    if (++s->nconn >= LOCAL_CLIENT_LIMIT) {
        evconnlistener_disable(l);
        s->paused = 1;
    }
    bufferevent_setcb(c->bev, conn_read, NULL, conn_event, c);
    bufferevent_set_timeouts(c->bev, &tmo, &tmo);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

struct local_server *local_server_create(struct event_base *base,
                                         const char *queue_directory,
                                         const struct local_params *p,
                                         local_store_fn *store, void *ctx,
                                         char *why, size_t whylen)
{
    struct local_server *s;
    struct sockaddr_un sun;
    int fd;

    if (util_socket_address(&sun, queue_directory, LOCAL_SOCKET, why, whylen) <
            0 ||
        (fd = util_socket_listen(queue_directory, LOCAL_SOCKET, SOCK_STREAM,
                                 0666, "submission socket", why, whylen)) < 0)
        return NULL;
    s = xmalloc(sizeof(*s));
    memset(s, 0, sizeof(*s));
    s->base = base;
    s->p = *p;
    s->store = store;
    s->ctx = ctx;
    snprintf(s->path, sizeof(s->path), "%s", sun.sun_path);
    LIST_INIT(&s->conns);
    s->listener =
        evconnlistener_new(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE, -1, fd);
    if (s->listener == NULL) {
        snprintf(why, whylen, "submission socket %s: cannot listen",
                 sun.sun_path);
        close(fd);
        unlink(s->path);
        free(s);
        return NULL;
    }
    return s;
}

void local_server_params_set(struct local_server *s,
                             const struct local_params *p)
{
    s->p = *p;
}

void local_server_close(struct local_server *s)
{
    struct local_conn *c, *next;

    if (s == NULL || s->listener == NULL)
        return;
    evconnlistener_free(s->listener);
    s->listener = NULL;
    unlink(s->path);
    for (c = LIST_FIRST(&s->conns); c != NULL; c = next) {
        next = LIST_NEXT(c, link);
        if (c->state == CONN_HEADER || c->state == CONN_BODY)
            conn_free(c);
    }
}

long local_server_busy(const struct local_server *s)
{
    const struct local_conn *c;
    long n = 0;

    if (s == NULL)
        return 0;
    LIST_FOREACH(c, &s->conns, link)
        n += c->state == CONN_STORING || c->state == CONN_REPLYING;
    return n;
}

void local_server_free(struct local_server *s)
{
    struct local_conn *c;

    if (s == NULL)
        return;
    local_server_close(s);
    while ((c = LIST_FIRST(&s->conns)) != NULL) {
        if (c->state == CONN_STORING) {
            /* done() comes later: it frees what is left. */
            LIST_REMOVE(c, link);
            bufferevent_free(c->bev);
            c->bev = NULL;
            c->s = NULL;
        } else {
            conn_free(c);
        }
    }
    free(s);
}
