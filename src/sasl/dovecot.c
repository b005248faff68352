/*
 * NAME
 *	dovecot 3 - the dovecot back end: Dovecot's auth client protocol
 * SYNOPSIS
 *	#include "sasl/sasl_impl.h"
 *
 *	extern const struct sasl_backend sasl_dovecot_backend
 * DESCRIPTION
 *	smtpd_sasl_type = dovecot: the conversations are Dovecot's, over
 *	the auth service's client socket that smtpd_sasl_path names (as
 *	Postfix's smtpd_sasl_type = dovecot does), one connection for
 *	every session, on the event loop, never blocking it.
 *
 *	The protocol (Dovecot's auth client protocol 1.2): lines of
 *	fields separated by tabs. On connecting, sluice sends "VERSION 1
 *	2" and "CPID <pid>"; the service sends its VERSION (major 1 is
 *	required), MECH, SPID, CUID, COOKIE lines and DONE, after which
 *	requests go out:
 *
 *	    AUTH <id> <mech> service=smtp nologin [secured] lip=<ip>
 *		rip=<ip> [resp=<base64>]
 *	    CONT <id> <base64>	(the client's next response)
 *
 *	and come back as "CONT <id> <challenge>", "OK <id> user=<name>
 *	..." or "FAIL <id> [reason=<text>] [temp] [user=<name>] ...":
 *	SASL_MORE, SASL_DONE, SASL_FAIL, or SASL_TEMP when "temp" is
 *	there. Requests made before DONE wait for it; an answer to an id
 *	no longer waited for (a session that went away) is dropped.
 *
 *	Trouble is temporary (SASL_TEMP, 454 to the client): a socket that
 *	cannot be connected, a connection that closes, a line that is not
 *	the protocol or longer than DOVECOT_LINE_MAX, and a request with
 *	no answer within smtpd_sasl_service_timeout. Each of these closes
 *	the connection and fails every request under way on it; the next
 *	AUTH connects again (a dead service costs a failed connect() per
 *	attempt, which is cheap).
 */

#include "sasl/sasl_impl.h"
#include "util/util.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define DOVECOT_LINE_MAX 16384 /* bytes of one line from the service */

enum dv_state { DV_DOWN, DV_CONNECTING, DV_READY };

struct dovecot_be {
    struct event_base *base;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    long timeout_ms;
    char service[32]; /* "smtp" */
    struct bufferevent *bev;
    enum dv_state state;
    unsigned next_id;
    unsigned conn; /* connections made, for requests to tell theirs */
    TAILQ_HEAD(, sasl_conv) convs; /* requests under way */
};

static void *dv_create(struct event_base *base, const struct sasl_params *p,
                       char *why, size_t whylen)
{
    struct dovecot_be *d;

    if (strlen(p->path) >= sizeof(d->path)) {
        snprintf(why, whylen, "%s: too long for a Unix socket's path", p->path);
        return NULL;
    }
    d = xcalloc(1, sizeof(*d));
    d->base = base;
    snprintf(d->path, sizeof(d->path), "%s", p->path);
    d->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 30000;
    snprintf(d->service, sizeof(d->service), "%s",
             p->service && *p->service ? p->service : "smtp");
    TAILQ_INIT(&d->convs);
    return d;
}

static void unlink_conv(struct dovecot_be *d, struct sasl_conv *c)
{
    if (!c->linked)
        return;
    TAILQ_REMOVE(&d->convs, c, link);
    c->linked = 0;
    if (c->timer)
        evtimer_del(c->timer);
    free(c->pending);
    c->pending = NULL;
}

/* The connection is gone: every request under way fails for now. */
static void dv_reset(struct dovecot_be *d, const char *why)
{
    struct sasl_conv *c;

    if (d->bev != NULL)
        bufferevent_free(d->bev);
    d->bev = NULL;
    d->state = DV_DOWN;
    while ((c = TAILQ_FIRST(&d->convs)) != NULL) {
        unlink_conv(d, c);
        sasl_conv_reply(c, SASL_TEMP, why);
    }
}

static void dv_free(void *be)
{
    struct dovecot_be *d = be;

    if (d->bev != NULL)
        bufferevent_free(d->bev);
    free(d);
}

static struct sasl_conv *find(struct dovecot_be *d, const char *id_text)
{
    struct sasl_conv *c;
    char *end;
    unsigned long id = strtoul(id_text, &end, 10);

    if (*end != 0 && *end != '\t')
        return NULL;
    TAILQ_FOREACH(c, &d->convs, link)
        if (c->id == id)
            return c;
    return NULL;
}

/* The value of "name=" among the tab-separated fields, or NULL. */
static const char *param(char *fields, const char *name, char *out,
                         size_t outlen)
{
    size_t n = strlen(name);

    for (char *p = fields; p && *p;
         p = strchr(p, '\t') ? strchr(p, '\t') + 1 : NULL) {
        if (strncmp(p, name, n) == 0 &&
            (p[n] == '=' || p[n] == '\t' || p[n] == 0)) {
            size_t len = p[n] == '=' ? strcspn(p + n + 1, "\t") : 0;

            snprintf(out, outlen, "%.*s", (int)len, p + n + 1);
            return out;
        }
    }
    return NULL;
}

/* One answer line: OK, CONT or FAIL with an id. */
static void dv_answer(struct dovecot_be *d, char *line)
{
    char *id = strchr(line, '\t'), *rest, value[SASL_FIELD_MAX + 1];
    struct sasl_conv *c;

    if (id == NULL || (c = find(d, id + 1)) == NULL)
        return; /* not ours, or no longer waited for */
    *id++ = 0;
    rest = strchr(id, '\t');
    rest = rest ? rest + 1 : id + strlen(id);
    if (strcmp(line, "CONT") == 0) {
        /* the client's turn: a reset meanwhile is found at its answer */
        unlink_conv(d, c);
        sasl_conv_reply(c, SASL_MORE, rest);
        return;
    }
    unlink_conv(d, c);
    if (param(rest, "user", value, sizeof(value)) && value[0])
        snprintf(c->user, sizeof(c->user), "%s", value);
    if (strcmp(line, "OK") == 0) {
        sasl_conv_reply(c, SASL_DONE, c->user);
    } else if (param(rest, "temp", value, sizeof(value))) {
        sasl_conv_reply(c, SASL_TEMP,
                        param(rest, "reason", value, sizeof(value))
                            ? value
                            : "auth service temporary failure");
    } else {
        sasl_conv_reply(c, SASL_FAIL,
                        param(rest, "reason", value, sizeof(value)) && value[0]
                            ? value
                            : "authentication failure");
    }
}

static void dv_send_pending(struct dovecot_be *d)
{
    struct sasl_conv *c;

    TAILQ_FOREACH(c, &d->convs, link)
        if (c->pending != NULL) {
            bufferevent_write(d->bev, c->pending, strlen(c->pending));
            free(c->pending);
            c->pending = NULL;
        }
}

/* One line of the handshake; -1 when it is not Dovecot's. */
static int dv_handshake(struct dovecot_be *d, const char *line)
{
    if (strncmp(line, "VERSION\t", 8) == 0)
        return atoi(line + 8) == 1 ? 0 : -1;
    if (strcmp(line, "DONE") == 0) {
        d->state = DV_READY;
        dv_send_pending(d);
    }
    return 0; /* MECH, SPID, CUID, COOKIE and what a later one adds */
}

static void dv_read(struct bufferevent *bev, void *arg)
{
    struct dovecot_be *d = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t n;

    while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF)) != NULL) {
        int bad = n > DOVECOT_LINE_MAX ||
                  (d->state != DV_READY && dv_handshake(d, line) < 0);

        if (!bad && d->state == DV_READY && strncmp(line, "VERSION", 7) &&
            strcmp(line, "DONE"))
            dv_answer(d, line);
        free(line);
        if (bad) {
            dv_reset(d, "auth service: not Dovecot's auth protocol");
            return;
        }
    }
    if (evbuffer_get_length(in) > DOVECOT_LINE_MAX)
        dv_reset(d, "auth service: line too long");
}

static void dv_event(struct bufferevent *bev, short what, void *arg)
{
    struct dovecot_be *d = arg;
    char line[64], why[300];

    if (what & BEV_EVENT_CONNECTED) {
        snprintf(line, sizeof(line), "VERSION\t1\t2\nCPID\t%ld\n",
                 (long)getpid());
        bufferevent_write(bev, line, strlen(line));
        return;
    }
    if (what & BEV_EVENT_EOF)
        snprintf(why, sizeof(why), "auth service %s: connection closed",
                 d->path);
    else
        snprintf(why, sizeof(why), "auth service %s: %s", d->path,
                 evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
    dv_reset(d, why);
}

static void dv_connect(struct dovecot_be *d)
{
    struct sockaddr_un sun;
    char why[300];

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, d->path, strlen(d->path));
    d->bev = bufferevent_socket_new(d->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (d->bev == NULL) {
        dv_reset(d, "auth service: out of memory");
        return;
    }
    d->state = DV_CONNECTING;
    d->conn++;
    bufferevent_setcb(d->bev, dv_read, NULL, dv_event, d);
    bufferevent_setwatermark(d->bev, EV_READ, 0, 4 * DOVECOT_LINE_MAX);
    bufferevent_enable(d->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(d->bev, (struct sockaddr *)&sun,
                                   sizeof(sun)) < 0) {
        snprintf(why, sizeof(why), "auth service %s: %s", d->path,
                 strerror(errno));
        dv_reset(d, why);
    }
}

static void dv_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct sasl_conv *c = arg;
    struct dovecot_be *d = c->s->be;

    (void)fd;
    (void)what;
    /* a service this slow is reconnected to at the next request */
    dv_reset(d, "auth service: no answer in time");
}

/* Send line for c now, or once the handshake is done. */
static void dv_request(struct dovecot_be *d, struct sasl_conv *c,
                       const char *line)
{
    struct timeval tv = {d->timeout_ms / 1000, (d->timeout_ms % 1000) * 1000};

    if (c->timer == NULL &&
        (c->timer = evtimer_new(d->base, dv_timeout, c)) == NULL)
        util_panic("sasl: evtimer_new failed");
    if (!c->linked) {
        TAILQ_INSERT_TAIL(&d->convs, c, link);
        c->linked = 1;
    }
    evtimer_add(c->timer, &tv);
    if (d->state == DV_READY) {
        bufferevent_write(d->bev, line, strlen(line));
        return;
    }
    free(c->pending);
    c->pending = xstrdup(line);
    if (d->state == DV_DOWN)
        dv_connect(d);
}

static void dv_start(struct sasl_conv *c, const char *initial)
{
    struct dovecot_be *d = c->s->be;
    struct util_buf b = {0};

    c->id = ++d->next_id;
    c->conn = d->state == DV_DOWN ? d->conn + 1 : d->conn;
    util_buf_printf(&b, "AUTH\t%u\t%s\tservice=%s\tnologin%s", c->id, c->mech,
                    d->service, c->secured ? "\tsecured" : "");
    if (c->lip[0])
        util_buf_printf(&b, "\tlip=%s", c->lip);
    if (c->rip[0])
        util_buf_printf(&b, "\trip=%s", c->rip);
    if (initial != NULL)
        util_buf_printf(&b, "\tresp=%s", strcmp(initial, "=") ? initial : "");
    util_buf_puts(&b, "\n");
    dv_request(d, c, b.data);
    util_buf_free(&b);
}

static void dv_step(struct sasl_conv *c, const char *response)
{
    struct dovecot_be *d = c->s->be;
    struct util_buf b = {0};

    if (d->state != DV_READY || c->conn != d->conn) { /* it went */
        sasl_conv_reply(c, SASL_TEMP, "auth service: connection lost");
        return;
    }
    util_buf_printf(&b, "CONT\t%u\t%s\n", c->id, response);
    dv_request(d, c, b.data);
    util_buf_free(&b);
}

static void dv_abort(struct sasl_conv *c)
{
    unlink_conv(c->s->be, c);
    if (c->timer)
        event_free(c->timer);
    c->timer = NULL;
}

const struct sasl_backend sasl_dovecot_backend = {
    "dovecot", dv_create, dv_free, dv_start, dv_step, dv_abort,
};
