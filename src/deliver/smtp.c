/*
 * NAME
 *	smtp 3 - the SMTP and LMTP client: one delivery as a state machine
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_session *deliver_start(struct event_base *base,
 *			const struct deliver_request *req,
 *			deliver_done_fn *done, void *ctx)
 *	void	deliver_cancel(struct deliver_session *s)
 *	void	deliver_result_free(struct deliver_result *res)
 * DESCRIPTION
 *	The discard and error agents share the session and its deferred
 *	callback (local_deliver()); they never touch the network.
 *
 *	A session walks these states, each with its timeout, over a libevent
 *	bufferevent:
 *
 *	CONNECT -> GREETING -> EHLO [-> HELO] -> MAIL -> RCPT... -> DATA
 *	-> DOT -> QUIT
 *
 *	Replies are read line by line (smtp_reply_line()); a complete reply
 *	is handed to the state's function. With PIPELINING, MAIL, every
 *	RCPT and DATA are written at once and their replies taken in order;
 *	a MAIL rejection then leaves the RCPT and DATA replies to be read
 *	and ignored (skip). Without it each command waits for its reply.
 *
 *	Until the greeting and EHLO/HELO have succeeded on some address, a
 *	failure moves to the next address (at most session_limit
 *	connections); when none is left the delivery is a hop failure. From
 *	MAIL on, replies decide per recipient; a lost connection or a
 *	timeout there is a hop failure for the recipients not yet decided.
 *	See deliver.h for the outcome.
 */

#include "deliver/deliver_impl.h"
#include "smtp/smtp.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netdb.h>
#include <sys/un.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

enum state {
    ST_CONNECT,
    ST_GREETING,
    ST_EHLO,
    ST_HELO,
    ST_MAIL,
    ST_RCPT,
    ST_DATA,
    ST_DOT,
    ST_QUIT,
    ST_DONE,
};

/* What the reference calls each state in its reasons. */
static const char *const state_doing[] = {
    "connecting",
    "receiving the initial server greeting",
    "performing the EHLO handshake",
    "performing the HELO handshake",
    "sending MAIL FROM",
    "sending RCPT TO",
    "sending DATA command",
    "sending end of data -- message may be sent more than once",
    "sending QUIT",
    "done",
};

struct deliver_session {
    struct event_base *base;
    struct deliver_request req; /* copied */
    deliver_done_fn *done;
    void *ctx;
    struct deliver_result *res;
    size_t addr;  /* index of the address in use */
    int sessions; /* connections tried */
    struct bufferevent *bev;
    struct event *timer;
    struct event *finish; /* calls done from the loop */
    enum state state;
    struct smtp_reply reply;
    unsigned features;
    uint64_t size_limit;
    int pipelined;
    int handshake_ok; /* greeting and EHLO/HELO passed somewhere */
    size_t rcpt_replied;
    size_t accepted;
    size_t dot_replied; /* LMTP: replies after the body */
    char *decided;      /* per recipient: a final result is set */
    char *accepted_flag;
    size_t skip; /* replies to ignore after a rejected MAIL */
    char peer[400];
    struct timeval start, handshake_done;
    char last_failure[600];
    int reused;          /* the connection came from the cache */
    size_t replies;      /* complete replies on this connection */
    struct timeval born; /* when this connection was made */
    int uses;            /* deliveries it carried, this one included */
};

static double elapsed(const struct timeval *from)
{
    struct timeval now;

    gettimeofday(&now, NULL);
    return (now.tv_sec - from->tv_sec) + (now.tv_usec - from->tv_usec) / 1e6;
}

/*
 * An address as logs show it: "host[addr]" for peer, "host[addr]:port"
 * for relay=; a local socket is "host[/path]" in both.
 */
static void addr_names(const struct deliver_addr *a, char *peer, size_t plen,
                       char *relay, size_t rlen)
{
    char host[128] = "?", port[16] = "?";

    if (a->sa.ss_family == AF_UNIX) {
        const struct sockaddr_un *sun = (const struct sockaddr_un *)&a->sa;

        snprintf(peer, plen, "%s[%s]", a->host, sun->sun_path);
        snprintf(relay, rlen, "%s[%s]", a->host, sun->sun_path);
        return;
    }
    getnameinfo((const struct sockaddr *)&a->sa, a->salen, host, sizeof(host),
                port, sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
    snprintf(peer, plen, "%s[%s]", a->host, host);
    snprintf(relay, rlen, "%s[%s]:%s", a->host, host, port);
}

static void peer_name(struct deliver_session *s)
{
    addr_names(&s->req.addrs[s->addr], s->peer, sizeof(s->peer), s->res->relay,
               sizeof(s->res->relay));
}

/* Set a recipient's final result, once. */
static void rcpt_set(struct deliver_session *s, size_t i,
                     enum deliver_status status, int code, const char *enhanced,
                     const char *text)
{
    struct deliver_rcpt_result *r = &s->res->rcpt[i];

    if (s->decided[i])
        return;
    s->decided[i] = 1;
    r->status = status;
    r->code = code;
    if (enhanced && *enhanced)
        snprintf(r->enhanced, sizeof(r->enhanced), "%s", enhanced);
    else
        snprintf(r->enhanced, sizeof(r->enhanced), "%c.0.0",
                 status == DELIVER_OK       ? '2'
                 : status == DELIVER_BOUNCE ? '5'
                                            : '4');
    free(r->text);
    r->text = xstrdup(text ? text : "");
}

/* Every undecided recipient gets the same outcome. */
static void rcpt_set_rest(struct deliver_session *s, enum deliver_status status,
                          int code, const char *enhanced, const char *text)
{
    for (size_t i = 0; i < s->req.nrcpt; i++)
        rcpt_set(s, i, status, code, enhanced, text);
}

/* "host X[addr] said: 550 5.1.1 text (in reply to RCPT TO command)" */
static void reply_text(struct deliver_session *s, const char *command,
                       char *buf, size_t len)
{
    snprintf(buf, len, "host %s said: %d %s (in reply to %s command)", s->peer,
             s->reply.code, s->reply.text ? s->reply.text : "", command);
}

static enum deliver_status reply_status(int code)
{
    return code < 400   ? DELIVER_OK
           : code < 500 ? DELIVER_DEFER
                        : DELIVER_BOUNCE;
}

static void session_close(struct deliver_session *s)
{
    if (s->bev) {
        bufferevent_free(s->bev);
        s->bev = NULL;
    }
    evtimer_del(s->timer);
    smtp_reply_free(&s->reply);
}

static void finish_cb(evutil_socket_t fd, short what, void *arg)
{
    struct deliver_session *s = arg;
    struct deliver_result *res = s->res;

    (void)fd;
    (void)what;
    s->res = NULL;
    s->done(s->ctx, res);
    deliver_cancel(s);
}

/* The end: every recipient decided; the callback runs from the loop. */
static void session_finish(struct deliver_session *s)
{
    session_close(s);
    s->state = ST_DONE;
    s->res->conn_use = s->handshake_ok ? s->uses : 0;
    if (s->handshake_ok)
        s->res->conn_time =
            (s->handshake_done.tv_sec - s->start.tv_sec) +
            (s->handshake_done.tv_usec - s->start.tv_usec) / 1e6;
    s->res->xfer_time = elapsed(&s->start) - s->res->conn_time;
    event_active(s->finish, 0, 0);
}

/* A hop failure: no address left, or the transaction was cut short. */
static void hop_fail(struct deliver_session *s, const char *reason)
{
    s->res->hop_ok = 0;
    free(s->res->hop_reason);
    s->res->hop_reason = xstrdup(reason ? reason : "");
    rcpt_set_rest(s, DELIVER_DEFER, 0, "4.4.1", reason);
    session_finish(s);
}

static void timer_arm(struct deliver_session *s, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(s->timer, &tv);
}

static void send_line(struct deliver_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void send_line(struct deliver_session *s, const char *fmt, ...)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);
    va_list ap;

    va_start(ap, fmt);
    evbuffer_add_vprintf(out, fmt, ap);
    va_end(ap);
    evbuffer_add(out, "\r\n", 2);
}

static void try_next_address(struct deliver_session *s, const char *reason);
static void reconnect_fresh(struct deliver_session *s);

/* The connection is lost or timed out in the current state. */
static void connection_lost(struct deliver_session *s, int timed_out)
{
    char reason[600];

    if (s->state == ST_CONNECT) {
        const struct deliver_addr *a = &s->req.addrs[s->addr];
        int err = EVUTIL_SOCKET_ERROR();
        char peer[400], relay[512];

        addr_names(a, peer, sizeof(peer), relay, sizeof(relay));
        snprintf(reason, sizeof(reason), "connect to %s: %s", relay,
                 timed_out ? "Connection timed out"
                           : evutil_socket_error_to_string(err));
        /* A local socket that is not there, or refuses: the transport
         * cannot work, whatever the destination. */
        if (a->sa.ss_family == AF_UNIX && !timed_out)
            s->res->transport_failed = 1;
    } else if (timed_out) {
        snprintf(reason, sizeof(reason),
                 "conversation with %s timed out while %s", s->peer,
                 state_doing[s->state]);
    } else {
        snprintf(reason, sizeof(reason), "lost connection with %s while %s",
                 s->peer, state_doing[s->state]);
    }
    if (s->state == ST_QUIT) {
        /* Everything was decided; a lost QUIT changes nothing. */
        session_finish(s);
    } else if (s->reused && s->replies == 0) {
        /* A cached connection that died while idle: not a failure. */
        reconnect_fresh(s);
    } else if (s->state <= ST_HELO) {
        try_next_address(s, reason);
    } else {
        hop_fail(s, reason);
    }
}

static void send_quit(struct deliver_session *s)
{
    s->state = ST_QUIT;
    send_line(s, "QUIT");
    timer_arm(s, s->req.timeouts.quit);
}

static void send_mail(struct deliver_session *s)
{
    char extra[512] = "";
    size_t n = 0;
    int eightbit = 0;

    for (size_t i = 0; i < s->req.size && !eightbit; i++)
        eightbit = (unsigned char)s->req.body[i] >= 0x80;
    if (s->features & SMTP_EXT_SIZE)
        n += snprintf(extra + n, sizeof(extra) - n, " SIZE=%zu", s->req.size);
    if (eightbit && (s->features & SMTP_EXT_8BITMIME))
        n += snprintf(extra + n, sizeof(extra) - n, " BODY=8BITMIME");
    if ((s->features & SMTP_EXT_DSN) && s->req.ret)
        n += snprintf(extra + n, sizeof(extra) - n, " RET=%s",
                      s->req.ret == 1 ? "FULL" : "HDRS");
    if ((s->features & SMTP_EXT_DSN) && s->req.envid)
        snprintf(extra + n, sizeof(extra) - n, " ENVID=%s", s->req.envid);
    /* The server takes NOTIFY on: success reports are its to send. */
    s->res->dsn_passed =
        s->req.proto == DELIVER_SMTP && (s->features & SMTP_EXT_DSN);
    s->state = ST_MAIL;
    send_line(s, "MAIL FROM:<%s>%s", s->req.sender, extra);
    timer_arm(s, s->req.timeouts.mail);
}

static void send_rcpt(struct deliver_session *s, size_t i)
{
    const struct deliver_rcpt *r = &s->req.rcpt[i];
    char extra[600] = "";
    size_t n = 0;

    if ((s->features & SMTP_EXT_DSN) && r->notify) {
        static const char *const names[] = {"NEVER", "SUCCESS", "FAILURE",
                                            "DELAY"};
        const char *sep = " NOTIFY=";

        for (int b = 0; b < 4; b++)
            if (r->notify & (1u << b)) {
                n += snprintf(extra + n, sizeof(extra) - n, "%s%s", sep,
                              names[b]);
                sep = ",";
            }
    }
    if ((s->features & SMTP_EXT_DSN) && r->orcpt)
        snprintf(extra + n, sizeof(extra) - n, " ORCPT=%s", r->orcpt);
    send_line(s, "RCPT TO:<%s>%s", r->address, extra);
}

/* The transaction: pipelined in one write, or MAIL first. */
static void start_transaction(struct deliver_session *s)
{
    gettimeofday(&s->handshake_done, NULL);
    s->handshake_ok = 1;
    s->res->hop_ok = 1;
    s->pipelined = (s->features & SMTP_EXT_PIPELINING) != 0;
    send_mail(s);
    if (s->pipelined) {
        for (size_t i = 0; i < s->req.nrcpt; i++)
            send_rcpt(s, i);
        send_line(s, "DATA");
    }
}

static void emit_body(void *ctx, const char *p, size_t len)
{
    evbuffer_add(ctx, p, len);
}

static void send_body(struct deliver_session *s)
{
    struct smtp_stuffer st = {0};
    struct evbuffer *out = bufferevent_get_output(s->bev);

    smtp_stuff(&st, s->req.body, s->req.size, emit_body, out);
    smtp_stuff_end(&st, emit_body, out);
    s->state = ST_DOT;
    s->dot_replied = 0;
    timer_arm(s, s->req.timeouts.data_xfer + s->req.timeouts.data_done);
}

static void on_greeting(struct deliver_session *s)
{
    char reason[600];

    if (s->reply.code / 100 != 2) {
        snprintf(reason, sizeof(reason), "host %s refused to talk to me: %d %s",
                 s->peer, s->reply.code, s->reply.text);
        try_next_address(s, reason);
        return;
    }
    s->state = ST_EHLO;
    send_line(s, "%s %s", s->req.proto == DELIVER_LMTP ? "LHLO" : "EHLO",
              s->req.helo_name);
    timer_arm(s, s->req.timeouts.helo);
}

/*
 * The handshake is done (or skipped, on a cached connection): refuse a
 * message the server said it cannot take, or start the transaction.
 */
static void handshake_passed(struct deliver_session *s)
{
    char reason[600];

    if ((s->features & SMTP_EXT_SIZE) && s->size_limit &&
        s->req.size > s->size_limit) {
        snprintf(reason, sizeof(reason),
                 "message size %zu exceeds size limit %llu of server %s",
                 s->req.size, (unsigned long long)s->size_limit, s->peer);
        gettimeofday(&s->handshake_done, NULL);
        s->handshake_ok = 1;
        s->res->hop_ok = 1;
        rcpt_set_rest(s, DELIVER_BOUNCE, 552, "5.3.4", reason);
        send_quit(s);
        return;
    }
    start_transaction(s);
}

static void on_ehlo(struct deliver_session *s)
{
    char reason[600];

    if (s->reply.code / 100 == 2) {
        s->features = smtp_ehlo_features(&s->reply, &s->size_limit);
        handshake_passed(s);
        return;
    }
    if (s->req.proto == DELIVER_SMTP && s->state == ST_EHLO) {
        s->state = ST_HELO;
        send_line(s, "HELO %s", s->req.helo_name);
        timer_arm(s, s->req.timeouts.helo);
        return;
    }
    snprintf(reason, sizeof(reason), "host %s refused to talk to me: %d %s",
             s->peer, s->reply.code, s->reply.text);
    try_next_address(s, reason);
}

static void data_rejected(struct deliver_session *s, const char *command)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    reply_text(s, command, text, sizeof(text));
    for (size_t i = 0; i < s->req.nrcpt; i++)
        if (s->accepted_flag[i])
            rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                     s->reply.enhanced, text);
}

static void after_rcpts(struct deliver_session *s)
{
    if (s->pipelined) {
        s->state = ST_DATA; /* DATA was sent with the RCPTs */
        timer_arm(s, s->req.timeouts.data_init);
    } else if (s->accepted > 0) {
        s->state = ST_DATA;
        send_line(s, "DATA");
        timer_arm(s, s->req.timeouts.data_init);
    } else {
        send_quit(s);
    }
}

static void on_mail(struct deliver_session *s)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->reply.code / 100 == 2) {
        s->state = ST_RCPT;
        s->rcpt_replied = 0;
        if (!s->pipelined)
            send_rcpt(s, 0);
        timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    reply_text(s, "MAIL FROM", text, sizeof(text));
    rcpt_set_rest(s, reply_status(s->reply.code), s->reply.code,
                  s->reply.enhanced, text);
    if (s->pipelined) {
        s->skip = s->req.nrcpt + 1; /* the RCPT and DATA replies */
        s->state = ST_QUIT;
        timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    send_quit(s);
}

static void on_rcpt(struct deliver_session *s)
{
    size_t i = s->rcpt_replied++;
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->reply.code / 100 == 2) {
        s->accepted_flag[i] = 1;
        s->accepted++;
    } else {
        reply_text(s, "RCPT TO", text, sizeof(text));
        rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                 s->reply.enhanced, text);
    }
    if (s->rcpt_replied < s->req.nrcpt) {
        if (!s->pipelined)
            send_rcpt(s, s->rcpt_replied);
        timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    after_rcpts(s);
}

static void on_data(struct deliver_session *s)
{
    if (s->reply.code == 354 && s->accepted > 0) {
        send_body(s);
        return;
    }
    if (s->reply.code == 354) {
        /* Pipelined DATA with no recipient left: end it empty. */
        evbuffer_add(bufferevent_get_output(s->bev), ".\r\n", 3);
        s->skip = 1;
        s->state = ST_QUIT;
        timer_arm(s, s->req.timeouts.data_done);
        return;
    }
    if (s->accepted > 0)
        data_rejected(s, "DATA");
    send_quit(s);
}

/*
 * After the end-of-data replies the connection is between transactions:
 * keep it for the next delivery to this destination, or say QUIT.
 */
static void end_transaction(struct deliver_session *s)
{
    struct deliver_conn conn;

    const struct deliver_cache_params *limits;

    if (s->req.cache == NULL || s->req.cache_key == NULL ||
        !deliver_cache_may_keep(limits =
                                    deliver_cache_limits(s->req.cache, &s->req),
                                &s->born, s->uses)) {
        send_quit(s);
        return;
    }
    memset(&conn, 0, sizeof(conn));
    conn.bev = s->bev;
    snprintf(conn.peer, sizeof(conn.peer), "%s", s->peer);
    snprintf(conn.relay, sizeof(conn.relay), "%s", s->res->relay);
    conn.features = s->features;
    conn.size_limit = s->size_limit;
    conn.born = s->born;
    conn.uses = s->uses;
    s->bev = NULL; /* the cache's now */
    deliver_cache_put(s->req.cache, limits, s->req.cache_key, &conn);
    session_finish(s);
}

static void on_dot(struct deliver_session *s)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->req.proto == DELIVER_LMTP) {
        /* One reply per accepted recipient, in order. */
        size_t seen = 0;

        /* As for SMTP: the reply alone when sent, quoted when not. */
        if (s->reply.code / 100 == 2)
            snprintf(text, sizeof(text), "%d %s", s->reply.code, s->reply.text);
        else
            snprintf(text, sizeof(text),
                     "host %s said: %d %s (in reply to end of "
                     "DATA command)",
                     s->peer, s->reply.code, s->reply.text);
        for (size_t i = 0; i < s->req.nrcpt; i++) {
            if (!s->accepted_flag[i])
                continue;
            if (seen++ == s->dot_replied) {
                rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                         s->reply.enhanced, text);
                break;
            }
        }
        if (++s->dot_replied < s->accepted) {
            timer_arm(s, s->req.timeouts.data_done);
            return;
        }
    } else if (s->reply.code / 100 == 2) {
        /* The log says "status=sent (250 2.0.0 Ok: queued as X)". */
        snprintf(text, sizeof(text), "%d %s", s->reply.code, s->reply.text);
        for (size_t i = 0; i < s->req.nrcpt; i++)
            if (s->accepted_flag[i])
                rcpt_set(s, i, DELIVER_OK, s->reply.code, s->reply.enhanced,
                         text);
    } else {
        data_rejected(s, "end of DATA");
    }
    end_transaction(s);
}

static void on_reply(struct deliver_session *s)
{
    if (s->reused && s->replies == 0 && s->reply.code == 421) {
        /*
         * The server gave up on the idle connection as we took it from
         * the cache: its 421 crossed our MAIL on the wire. Nothing was
         * decided, so this is a dead cached connection, not a refusal.
         */
        reconnect_fresh(s);
        return;
    }
    s->replies++;
    if (s->skip > 0) {
        if (--s->skip == 0)
            send_quit(s);
        return;
    }
    switch (s->state) {
    case ST_GREETING:
        on_greeting(s);
        break;
    case ST_EHLO:
    case ST_HELO:
        on_ehlo(s);
        break;
    case ST_MAIL:
        on_mail(s);
        break;
    case ST_RCPT:
        on_rcpt(s);
        break;
    case ST_DATA:
        on_data(s);
        break;
    case ST_DOT:
        on_dot(s);
        break;
    case ST_QUIT:
        session_finish(s);
        break;
    default:
        break;
    }
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct deliver_session *s = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t len;

    while (s->state != ST_DONE &&
           (line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF)) != NULL) {
        int rc = smtp_reply_line(&s->reply, line, len);

        free(line);
        if (rc < 0) {
            char reason[600];

            snprintf(reason, sizeof(reason),
                     "host %s sent a malformed reply while %s", s->peer,
                     state_doing[s->state]);
            if (s->state <= ST_HELO)
                try_next_address(s, reason);
            else if (s->state == ST_QUIT)
                session_finish(s);
            else
                hop_fail(s, reason);
            return;
        }
        if (rc == 1) {
            on_reply(s);
            if (s->state == ST_DONE || s->bev != bev)
                return; /* finished, or moved to another connection */
            smtp_reply_free(&s->reply);
        }
    }
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct deliver_session *s = arg;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        gettimeofday(&s->born, NULL);
        peer_name(s);
        s->state = ST_GREETING;
        timer_arm(s, s->req.timeouts.helo);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
        connection_lost(s, 0);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct deliver_session *s = arg;

    (void)fd;
    (void)what;
    connection_lost(s, 1);
}

/* Open a connection to the current address. */
static void connect_current(struct deliver_session *s)
{
    const struct deliver_addr *a = &s->req.addrs[s->addr];

    s->sessions++;
    s->state = ST_CONNECT;
    s->features = 0;
    s->reused = 0;
    s->replies = 0;
    s->uses = 1;
    s->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (s->bev == NULL) {
        hop_fail(s, "cannot create a socket");
        return;
    }
    bufferevent_setcb(s->bev, read_cb, NULL, event_cb, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
    timer_arm(s, s->req.timeouts.connect);
    if (bufferevent_socket_connect(s->bev, (struct sockaddr *)&a->sa,
                                   (int)a->salen) < 0)
        connection_lost(s, 0);
}

static void try_next_address(struct deliver_session *s, const char *reason)
{
    snprintf(s->last_failure, sizeof(s->last_failure), "%s", reason);
    session_close(s);
    s->addr++;
    if (s->addr >= s->req.naddrs ||
        (s->req.session_limit > 0 && s->sessions >= s->req.session_limit)) {
        hop_fail(s, s->last_failure);
        return;
    }
    connect_current(s);
}

/*
 * A cached connection died before its first reply: forget it and begin
 * again on a new connection. Nothing was decided (no reply came), so
 * the transaction state starts over.
 */
static void reconnect_fresh(struct deliver_session *s)
{
    session_close(s);
    s->handshake_ok = 0;
    s->res->hop_ok = 0;
    s->pipelined = 0;
    s->rcpt_replied = 0;
    s->accepted = 0;
    s->skip = 0;
    memset(s->accepted_flag, 0, s->req.nrcpt);
    snprintf(s->res->relay, sizeof(s->res->relay), "none");
    gettimeofday(&s->start, NULL);
    if (s->req.naddrs == 0)
        hop_fail(s, "no address to deliver to");
    else
        connect_current(s);
}

/* Take over a cached connection: straight to the transaction. */
static void adopt(struct deliver_session *s, const struct deliver_conn *conn)
{
    s->bev = conn->bev;
    s->reused = 1;
    s->replies = 0;
    s->uses = conn->uses + 1;
    s->born = conn->born;
    s->features = conn->features;
    s->size_limit = conn->size_limit;
    snprintf(s->peer, sizeof(s->peer), "%s", conn->peer);
    snprintf(s->res->relay, sizeof(s->res->relay), "%s", conn->relay);
    bufferevent_setcb(s->bev, read_cb, NULL, event_cb, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
    handshake_passed(s);
}

/*
 * The discard and error agents: no network, every recipient gets the
 * same outcome from the request's reason (the transport's nexthop).
 */
static void local_deliver(struct deliver_session *s)
{
    const char *reason = s->req.reason ? s->req.reason : "";
    size_t code = smtp_enhanced_code(reason, strlen(reason));
    char enhanced[16] = "";
    const char *text = reason + code;
    enum deliver_status status;

    if (code > 0 && code < sizeof(enhanced)) {
        memcpy(enhanced, reason, code);
        enhanced[code] = 0;
    } else {
        text = reason;
    }
    while (*text == ' ')
        text++;
    if (s->req.proto == DELIVER_DISCARD) {
        status = DELIVER_OK;
        snprintf(enhanced, sizeof(enhanced), "2.0.0");
        if (*reason == 0)
            text = "discarded";
        else
            text = reason;
    } else {
        status = enhanced[0] == '4' ? DELIVER_DEFER : DELIVER_BOUNCE;
        if (enhanced[0] == '2')
            enhanced[0] = 0; /* an error never succeeds */
        if (*text == 0)
            text = "delivery refused by the error transport";
    }
    s->res->hop_ok = 1;
    rcpt_set_rest(s, status, 0, enhanced, text);
    session_finish(s);
}

struct deliver_session *deliver_start(struct event_base *base,
                                      const struct deliver_request *req,
                                      deliver_done_fn *done, void *ctx)
{
    struct deliver_session *s = xcalloc(1, sizeof(*s));
    struct deliver_conn conn;
    struct deliver_rcpt *rcpt = xcalloc(req->nrcpt, sizeof(*rcpt));
    struct deliver_addr *addrs = xcalloc(req->naddrs, sizeof(*addrs));
    char *body = malloc(req->size + 1);

    if (body == NULL)
        abort();
    s->base = base;
    s->req = *req;
    s->req.helo_name = xstrdup(req->helo_name ? req->helo_name : "");
    s->req.sender = xstrdup(req->sender ? req->sender : "");
    s->req.envid = req->envid ? xstrdup(req->envid) : NULL;
    for (size_t i = 0; i < req->nrcpt; i++) {
        rcpt[i] = req->rcpt[i];
        rcpt[i].address = xstrdup(req->rcpt[i].address);
        rcpt[i].orcpt = req->rcpt[i].orcpt ? xstrdup(req->rcpt[i].orcpt) : NULL;
    }
    s->req.rcpt = rcpt;
    if (req->naddrs > 0)
        memcpy(addrs, req->addrs, req->naddrs * sizeof(*addrs));
    s->req.addrs = addrs;
    s->req.reason = req->reason ? xstrdup(req->reason) : NULL;
    s->req.cache_key = req->cache_key ? xstrdup(req->cache_key) : NULL;
    memcpy(body, req->body, req->size);
    body[req->size] = 0;
    s->req.body = body;
    s->done = done;
    s->ctx = ctx;
    s->res = xcalloc(1, sizeof(*s->res));
    s->res->nrcpt = req->nrcpt;
    s->res->rcpt = xcalloc(req->nrcpt, sizeof(*s->res->rcpt));
    snprintf(s->res->relay, sizeof(s->res->relay), "none");
    s->decided = xcalloc(req->nrcpt, 1);
    s->accepted_flag = xcalloc(req->nrcpt, 1);
    s->timer = evtimer_new(base, timer_cb, s);
    s->finish = event_new(base, -1, 0, finish_cb, s);
    smtp_reply_init(&s->reply);
    gettimeofday(&s->start, NULL);
    if (req->proto == DELIVER_DISCARD || req->proto == DELIVER_ERROR)
        local_deliver(s);
    else if (deliver_cache_take(req->cache, req->cache_key, &conn))
        adopt(s, &conn);
    else if (req->naddrs == 0)
        hop_fail(s, "no address to deliver to");
    else
        connect_current(s);
    return s;
}

void deliver_cancel(struct deliver_session *s)
{
    if (s == NULL)
        return;
    session_close(s);
    event_free(s->timer);
    event_free(s->finish);
    if (s->res)
        deliver_result_free(s->res);
    free((char *)s->req.helo_name);
    free((char *)s->req.sender);
    free((char *)s->req.envid);
    free((char *)s->req.reason);
    free((char *)s->req.cache_key);
    for (size_t i = 0; i < s->req.nrcpt; i++) {
        free((char *)s->req.rcpt[i].address);
        free((char *)s->req.rcpt[i].orcpt);
    }
    free((struct deliver_rcpt *)s->req.rcpt);
    free((struct deliver_addr *)s->req.addrs);
    free((char *)s->req.body);
    free(s->decided);
    free(s->accepted_flag);
    free(s);
}

void deliver_result_free(struct deliver_result *res)
{
    if (res == NULL)
        return;
    for (size_t i = 0; i < res->nrcpt; i++)
        free(res->rcpt[i].text);
    free(res->rcpt);
    free(res->hop_reason);
    free(res);
}
