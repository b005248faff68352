/*
 * NAME
 *	connection 3 - the SMTP and LMTP client: one delivery's connections
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_session *deliver_start(struct event_base *base,
 *			const struct deliver_request *req,
 *			deliver_done_fn *done, void *ctx)
 *	void	deliver_cancel(struct deliver_session *s)
 *	void	deliver_result_free(struct deliver_result *res)
 *
 *	#include "deliver/smtp_impl.h"
 *
 *	void	connection_timer_arm(struct deliver_session *s, int ms)
 *	void	connection_next_address(struct deliver_session *s,
 *			const char *reason)
 *	void	connection_reconnect(struct deliver_session *s)
 *	void	connection_finish(struct deliver_session *s)
 * DESCRIPTION
 *	A delivery is a state machine over a libevent bufferevent (the
 *	states and their replies are protocol.c's); this file is its
 *	connection handling. deliver_start() copies the request and takes
 *	a cached connection for its destination (cache.c) when there is
 *	one, going straight to the transaction; else it connects to the
 *	first address. Replies are read line by line (smtp_reply_line());
 *	a complete reply is handed to protocol_reply(). Every state has its
 *	timeout (connection_timer_arm()).
 *
 *	Until the greeting and EHLO/HELO have succeeded on some address, a
 *	failure moves to the next address (connection_next_address(), at
 *	most session_limit connections); when none is left the delivery is
 *	a hop failure. From MAIL on, replies decide per recipient; a lost
 *	connection or a timeout there is a hop failure for the recipients
 *	not yet decided. A cached connection that dies before its first
 *	reply was idle, not refused: the delivery begins again on a new
 *	connection (connection_reconnect()). connection_finish() ends the
 *	delivery once every recipient is decided: done is called from the
 *	loop, never from inside deliver_start(). See deliver.h for the
 *	outcome.
 *
 *	The discard and error agents share the session and its deferred
 *	callback (local_deliver()); they never touch the network. So does
 *	an external agent's job (agent.c: agent_job_start(),
 *	agent_job_cancel()).
 */

#include "deliver/smtp_impl.h"

#include "deliver/agent_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/un.h>

/* What the reference calls each state in its reasons. */
static const char *const state_doing[] = {
    "connecting",
    "receiving the initial server greeting",
    "performing the EHLO handshake",
    "performing the HELO handshake",
    "receiving the STARTTLS response",
    "performing the TLS handshake",
    "performing SASL authentication",
    "sending MAIL FROM",
    "sending RCPT TO",
    "sending DATA command",
    "sending end of data -- message may be sent more than once",
    "sending RSET",
    "sending QUIT",
    "done",
};

/* Seconds since from_us, on the monotonic clock. */
static double elapsed(int64_t from_us)
{
    return (double)(util_clock_mono_us() - from_us) / 1e6;
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

static void session_close(struct deliver_session *s)
{
    if (s->bev) {
        tls_session_free(s->bev); /* a close_notify for a TLS one */
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

int deliver_session_done(const struct deliver_session *s)
{
    return s->state == ST_DONE;
}

/* The end: every recipient decided; the callback runs from the loop. */
void connection_finish(struct deliver_session *s)
{
    session_close(s);
    s->state = ST_DONE;
    s->res->conn_use = s->handshake_ok ? s->uses : 0;
    if (s->handshake_ok)
        s->res->conn_time = (double)(s->handshake_us - s->start_us) / 1e6;
    s->res->xfer_time = elapsed(s->start_us) - s->res->conn_time;
    event_active(s->finish, 0, 0);
}

/* A hop failure: no address left, or the transaction was cut short. */
static void hop_fail(struct deliver_session *s, const char *reason)
{
    s->res->hop_ok = 0;
    free(s->res->hop_reason);
    s->res->hop_reason = xstrdup(reason ? reason : "");
    protocol_rcpt_set_rest(s, DELIVER_DEFER, 0,
                           s->last_dsn[0] ? s->last_dsn : "4.4.1", reason);
    connection_finish(s);
}

void connection_timer_arm(struct deliver_session *s, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(s->timer, &tv);
}

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
    if (s->state == ST_QUIT || s->state == ST_RSET) {
        /* Everything was decided; a lost QUIT or RSET changes nothing. */
        connection_finish(s);
    } else if (s->reused && s->replies == 0) {
        /* A cached connection that died while idle: not a failure. */
        connection_reconnect(s);
    } else if (s->state == ST_TLS) {
        starttls_out_failed(s, timed_out);
    } else if (s->state < ST_MAIL) {
        connection_next_address(s, reason);
    } else {
        hop_fail(s, reason);
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
            if (s->state < ST_MAIL)
                connection_next_address(s, reason);
            else if (s->state == ST_QUIT)
                connection_finish(s);
            else
                hop_fail(s, reason);
            return;
        }
        if (rc == 1) {
            protocol_reply(s);
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
    if ((what & BEV_EVENT_CONNECTED) && s->state == ST_TLS) {
        starttls_out_established(s);
        return;
    }
    if (what & BEV_EVENT_CONNECTED) {
        s->born_us = util_clock_mono_us();
        deliver_cache_opened_add(s->req.cache);
        peer_name(s);
        s->state = ST_GREETING;
        connection_timer_arm(s, s->req.timeouts.helo);
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

void connection_setcb(struct deliver_session *s)
{
    bufferevent_setcb(s->bev, read_cb, NULL, event_cb, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

/* Open a connection to the current address. */
static int endpoint_take(struct deliver_session *s, struct deliver_conn *conn);
static void adopt(struct deliver_session *s, const struct deliver_conn *conn);

/* "addr:port" of a, the endpoint key's; "" for a local socket. */
static void endpoint_name(const struct deliver_addr *a, char *buf, size_t len)
{
    char host[128], port[16];

    buf[0] = 0;
    if (a->sa.ss_family != AF_UNIX &&
        getnameinfo((const struct sockaddr *)&a->sa, a->salen, host,
                    sizeof(host), port, sizeof(port),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0)
        snprintf(buf, len, "%s:%s", host, port);
}

static void connect_current(struct deliver_session *s)
{
    const struct deliver_addr *a = &s->req.addrs[s->addr];
    struct deliver_conn conn;
    char reason[600];

    if (!starttls_out_host_ok(s, reason, sizeof(reason))) {
        /* DANE says this host must not be used: no connection */
        connection_next_address_dsn(s, "4.7.5", reason);
        return;
    }
    endpoint_name(a, s->endpoint, sizeof(s->endpoint));
    if (endpoint_take(s, &conn)) {
        /* the reference's endpoint label: another destination's
         * connection to this very server */
        adopt(s, &conn);
        return;
    }
    s->sessions++;
    s->state = ST_CONNECT;
    s->features = 0;
    s->reused = 0;
    s->replies = 0;
    s->uses = 1;
    s->tls_on = 0;
    s->auth_offered = 0;
    s->auth_user[0] = 0;
    s->auth_long = 0;
    memset(&s->res->tls, 0, sizeof(s->res->tls));
    s->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (s->bev == NULL) {
        hop_fail(s, "cannot create a socket");
        return;
    }
    connection_setcb(s);
    connection_timer_arm(s, s->req.timeouts.connect);
    if (bufferevent_socket_connect(s->bev, (struct sockaddr *)&a->sa,
                                   (int)a->salen) < 0)
        connection_lost(s, 0);
}

void connection_next_address(struct deliver_session *s, const char *reason)
{
    connection_next_address_dsn(s, "4.4.1", reason);
}

void connection_next_address_dsn(struct deliver_session *s, const char *dsn,
                                 const char *reason)
{
    snprintf(s->last_failure, sizeof(s->last_failure), "%s", reason);
    snprintf(s->last_dsn, sizeof(s->last_dsn), "%s", dsn);
    session_close(s);
    s->addr++;
    s->tls_plain = 0;
    if (s->addr >= s->req.naddrs ||
        (s->req.session_limit > 0 && s->sessions >= s->req.session_limit)) {
        hop_fail(s, s->last_failure);
        return;
    }
    /* Left for the next one: the caller logs it (at most naddrs) */
    s->res->skipped = xrealloc(s->res->skipped, (s->res->nskipped + 1) *
                                                    sizeof(*s->res->skipped));
    s->res->skipped[s->res->nskipped++] = xstrdup(reason);
    connect_current(s);
}

/*
 * The same address again on a new connection (TLS failed at may: the
 * retry in plaintext). It does not count against the session limit.
 */
void connection_retry_address(struct deliver_session *s)
{
    session_close(s);
    s->sessions--;
    connect_current(s);
}

/*
 * A cached connection died before its first reply: forget it and begin
 * again on a new connection. Nothing was decided (no reply came), so
 * the transaction state starts over.
 */
void connection_reconnect(struct deliver_session *s)
{
    session_close(s);
    s->handshake_ok = 0;
    s->res->hop_ok = 0;
    s->pipelined = 0;
    s->rcpt_replied = 0;
    s->accepted = 0;
    s->skip = 0;
    s->tls_plain = 0;
    memset(s->accepted_flag, 0, s->req.nrcpt);
    snprintf(s->res->relay, sizeof(s->res->relay), "none");
    s->start_us = util_clock_mono_us();
    if (s->req.naddrs == 0)
        hop_fail(s, "no address to deliver to");
    else
        connect_current(s);
}

typedef char *cache_key_fn(const struct deliver_session *s, int tls,
                           const char *user);

/* A cached connection under key's form, for tls and one login. */
static int take_one(struct deliver_session *s, cache_key_fn *key, int tls,
                    const char *user, struct deliver_conn *conn)
{
    char *k = key(s, tls, user);
    int found = deliver_cache_take(s->req.cache, k, conn);

    free(k);
    return found;
}

/*
 * A cached connection made under this delivery's TLS policy: in TLS
 * first, unless the level is none; in plaintext only when the level
 * allows plaintext. Authenticated as this delivery would authenticate
 * (at one of its addresses, or at the one its endpoint key names; or
 * not, where it has no credentials).
 */
static int take_users(struct deliver_session *s, cache_key_fn *key,
                      const char **users, size_t n, struct deliver_conn *conn)
{
    enum tls_level level = s->req.tls.ctx ? s->req.tls.level : TLS_LEV_NONE;

    for (size_t i = 0; i < n; i++) {
        if (level != TLS_LEV_NONE && take_one(s, key, 1, users[i], conn))
            return 1;
        if (!tls_level_enforced(level) && take_one(s, key, 0, users[i], conn))
            return 1;
    }
    return 0;
}

/* A connection cached for the destination. */
static int cache_take(struct deliver_session *s, struct deliver_conn *conn)
{
    const char *users[16];
    size_t n = auth_out_users(s, users, 16);

    return take_users(s, auth_out_cache_key, users, n, conn);
}

/* One cached to the address about to be tried, for any destination. */
static int endpoint_take(struct deliver_session *s, struct deliver_conn *conn)
{
    const char *user = auth_out_user_at(s, s->addr);

    return s->req.cache_endpoint != NULL &&
           take_users(s, auth_out_endpoint_key, &user, 1, conn);
}

/* Take over a cached connection: straight to the transaction. */
static void adopt(struct deliver_session *s, const struct deliver_conn *conn)
{
    s->bev = conn->bev;
    s->reused = 1;
    s->replies = 0;
    s->uses = conn->uses + 1;
    s->born_us = conn->born_us;
    s->features = conn->features;
    s->size_limit = conn->size_limit;
    s->tls_on = conn->tls.used;
    snprintf(s->auth_user, sizeof(s->auth_user), "%s", conn->auth_user);
    s->res->tls = conn->tls;
    s->res->tls.established = 0;
    snprintf(s->peer, sizeof(s->peer), "%s", conn->peer);
    snprintf(s->res->relay, sizeof(s->res->relay), "%s", conn->relay);
    snprintf(s->endpoint, sizeof(s->endpoint), "%s", conn->endpoint);
    bufferevent_setcb(s->bev, read_cb, NULL, event_cb, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
    protocol_handshake_passed(s);
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
    protocol_rcpt_set_rest(s, status, 0, enhanced, text);
    connection_finish(s);
}

/* Its turn: the connection it queued for, else a new one. */
static void wake_cb(void *arg)
{
    struct deliver_session *s = arg;
    struct deliver_conn conn;

    s->queued = 0;
    s->holding = 1;
    s->start_us = util_clock_mono_us();
    if (cache_take(s, &conn))
        adopt(s, &conn);
    else if (s->req.naddrs == 0)
        hop_fail(s, "no address to deliver to");
    else
        connect_current(s); /* it was closed: another to the same place */
}

/* Hold the request's key, or queue behind whoever holds it (0). */
static int hold_or_queue(struct deliver_session *s)
{
    s->waiter.wake = wake_cb;
    s->waiter.arg = s;
    if (!deliver_cache_hold(s->req.cache, s->req.cache_key, &s->waiter))
        return 0;
    s->holding = 1;
    return 1;
}

/* Let the next delivery in line have the key. */
static void hold_end(struct deliver_session *s)
{
    if (s->queued) {
        int woken = s->waiter.hold == NULL; /* the key is already ours */

        deliver_cache_unqueue(s->req.cache, &s->waiter);
        if (woken)
            deliver_cache_release(s->req.cache, s->req.cache_key);
        s->queued = 0;
    } else if (s->holding) {
        deliver_cache_release(s->req.cache, s->req.cache_key);
    }
    s->holding = 0;
}

struct deliver_session *deliver_start(struct event_base *base,
                                      const struct deliver_request *req,
                                      deliver_done_fn *done, void *ctx)
{
    struct deliver_session *s = xcalloc(1, sizeof(*s));
    struct deliver_conn conn;

    s->base = base;
    deliver_request_copy(&s->req, req);
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
    s->start_us = util_clock_mono_us();
    starttls_out_init(s);
    if (req->proto == DELIVER_AGENT) {
        agent_job_start(s); /* agent.c */
    } else if (req->proto == DELIVER_DISCARD || req->proto == DELIVER_ERROR) {
        local_deliver(s);
    } else if (req->queue_behind && req->cache && req->cache_key &&
               !hold_or_queue(s)) {
        s->queued = 1; /* wake_cb() goes on when its turn comes */
    } else if (cache_take(s, &conn)) {
        adopt(s, &conn);
    } else if (req->naddrs == 0) {
        hop_fail(s, "no address to deliver to");
    } else {
        connect_current(s);
    }
    return s;
}

void deliver_cancel(struct deliver_session *s)
{
    if (s == NULL)
        return;
    session_close(s); /* its connection is cached or closed: then */
    hold_end(s);      /* the next in line may go */
    agent_job_cancel(s);
    event_free(s->timer);
    event_free(s->finish);
    if (s->res)
        deliver_result_free(s->res);
    free(s->key_tls);
    free(s->key_plain);
    free(s->tls_ident);
    deliver_request_clear(&s->req);
    util_buf_free(&s->downgraded);
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
    for (size_t i = 0; i < res->nskipped; i++)
        free(res->skipped[i]);
    free(res->skipped);
    free(res);
}
