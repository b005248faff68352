/*
 * NAME
 *	conn 3 - the connection to Redis: a RESP client on a bufferevent
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_tls_check(const struct cluster_config *cfg,
 *			char *why, size_t whylen)
 *
 *	#include "cluster/cluster_impl.h"
 *
 *	struct tls_context *cluster_conn_tls(const struct cluster_config *cfg,
 *			char *why, size_t whylen)
 *	struct cluster_conn *cluster_conn_open(struct event_base *base,
 *			const struct cluster_url *u, struct tls_context *tls,
 *			const char *servername, cluster_conn_lost_fn *lost,
 *			void *ctx, char *why, size_t whylen)
 *	void	cluster_conn_send(struct cluster_conn *cn, int argc,
 *			const char **argv, const size_t *len,
 *			cluster_conn_reply_fn *fn, void *arg)
 *	void	cluster_conn_free(struct cluster_conn *cn)
 * DESCRIPTION
 *	hiredis serves as the protocol's codec alone (its reader for
 *	replies, redisFormatCommandArgv() for requests); the bytes travel
 *	on the daemon's own libevent bufferevent, so that rediss:// is
 *	tls/'s client session over it (decision 117): Debian 12's hiredis
 *	0.14 has no TLS of its own.
 *
 *	cluster_conn_tls() makes the client TLS context of a rediss:// URL
 *	(NULL with why[0] 0 for another URL): the CAs of
 *	cluster_redis_tls_CAfile (empty: the system's), a client
 *	certificate when cluster_redis_tls_cert_file is set; NULL with the
 *	reason when a file will not do. cluster_tls_check() is the
 *	configuration check of the same: 0, or -1 with the reason.
 *
 *	cluster_conn_open() connects to u without blocking (a Unix socket,
 *	or TCP to an IP address); with tls, the TLS handshake follows on
 *	the connection, with servername as SNI when set, and the server's
 *	certificate must verify to a trusted CA and carry servername, or
 *	the URL's IP address when servername is empty. Only then does
 *	anything go out: first AUTH with the URL's password (AUTH USER
 *	PASSWORD with a user), then the commands sent meanwhile. NULL with
 *	the reason when the connection cannot even start.
 *
 *	cluster_conn_send() queues one command; fn(arg, reply) gets its
 *	reply, replies in the order of the commands (RESP's pipelining),
 *	or fn(arg, NULL) when the connection is freed first. lost(ctx, why)
 *	is called once when the connection fails: refused, closed, a TLS
 *	handshake or verification that fails, AUTH refused, a reply that
 *	is not RESP, larger than CONN_REPLY_MAX, or with no command
 *	waiting for it. The caller then frees it, in the callback or
 *	later; nothing is read after. There is no timer here: the
 *	caller's sync timeout (cluster_redis_timeout) bounds a connection
 *	that never finishes, a handshake that never ends and a reply that
 *	never comes alike.
 *
 *	cluster_conn_free() closes (a TLS session with its close_notify)
 *	and calls the callbacks still waiting with NULL; it may be called
 *	from any callback of this connection.
 */

#include "cluster/cluster_impl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <hiredis/hiredis.h>

#include "tls/tls.h"
#include "util/util.h"

#define CONN_REPLY_MAX (64 * 1024 * 1024) /* a reply being read, bytes */

struct conn_cmd {
    cluster_conn_reply_fn *fn;
    void *arg;
};

struct cluster_conn {
    struct bufferevent *bev; /* the socket, or the TLS filter over it */
    struct tls_context *tls; /* NULL: plain */
    char match[128];         /* the certificate's name to check */
    redisReader *reader;
    struct evbuffer *early; /* commands sent before it is ready */
    int ready;
    struct conn_cmd *cmds; /* FIFO: head at first, n waiting */
    size_t first, n, cap;
    cluster_conn_lost_fn *lost;
    void *ctx;
    int dead;      /* lost: nothing more is read */
    int reading;   /* in conn_read(): a free waits for its end */
    int freed;     /* cluster_conn_free() came while reading */
    char why[300]; /* why it failed */
};

struct tls_context *cluster_conn_tls(const struct cluster_config *cfg,
                                     char *why, size_t whylen)
{
    struct tls_client_config tc = {0};

    why[0] = '\0';
    if (strncmp(cfg->url, "rediss://", 9) != 0)
        return NULL;
    tc.prefix = "cluster_redis_tls";
    tc.ca_file = cfg->tls_ca_file;
    tc.files.cert_file = cfg->tls_cert_file;
    tc.files.key_file = cfg->tls_key_file;
    return tls_client_context_create(&tc, why, whylen);
}

int cluster_tls_check(const struct cluster_config *cfg, char *why,
                      size_t whylen)
{
    struct tls_context *tls = cluster_conn_tls(cfg, why, whylen);

    if (tls != NULL)
        tls_context_free(tls);
    return why[0] != '\0' ? -1 : 0;
}

static void cmd_push(struct cluster_conn *cn, cluster_conn_reply_fn *fn,
                     void *arg)
{
    if (cn->n == cn->cap) {
        struct conn_cmd *v = xcalloc(cn->cap ? 2 * cn->cap : 8, sizeof(*v));

        for (size_t i = 0; i < cn->n; i++)
            v[i] = cn->cmds[(cn->first + i) % cn->cap];
        free(cn->cmds);
        cn->cmds = v;
        cn->first = 0;
        cn->cap = cn->cap ? 2 * cn->cap : 8;
    }
    cn->cmds[(cn->first + cn->n++) % cn->cap] = (struct conn_cmd){fn, arg};
}

static struct conn_cmd cmd_pop(struct cluster_conn *cn)
{
    struct conn_cmd c = cn->cmds[cn->first];

    cn->first = (cn->first + 1) % cn->cap;
    cn->n--;
    return c;
}

/* Tell the owner once; it frees cn, now or later. */
static void conn_lost(struct cluster_conn *cn, const char *why)
{
    cluster_conn_lost_fn *lost = cn->lost;

    cn->lost = NULL;
    cn->dead = 1;
    snprintf(cn->why, sizeof(cn->why), "%.290s", why);
    bufferevent_disable(cn->bev, EV_READ | EV_WRITE);
    if (lost != NULL)
        lost(cn->ctx, why);
}

static void write_command(struct cluster_conn *cn, int argc, const char **argv,
                          const size_t *len)
{
    char *cmd;
    int n = redisFormatCommandArgv(&cmd, argc, argv, len);

    if (n < 0)
        util_panic("cluster: cannot format a Redis command");
    evbuffer_add(cn->ready ? bufferevent_get_output(cn->bev) : cn->early, cmd,
                 (size_t)n);
    redisFreeCommand(cmd);
}

void cluster_conn_send(struct cluster_conn *cn, int argc, const char **argv,
                       const size_t *len, cluster_conn_reply_fn *fn, void *arg)
{
    write_command(cn, argc, argv, len);
    cmd_push(cn, fn, arg);
}

static void on_auth(void *arg, const redisReply *r)
{
    struct cluster_conn *cn = arg;

    if (r != NULL && r->type == REDIS_REPLY_ERROR)
        conn_lost(cn, r->str);
}

/* Connected (and verified): what waited goes, AUTH first. */
static void conn_ready(struct cluster_conn *cn)
{
    cn->ready = 1;
    evbuffer_add_buffer(bufferevent_get_output(cn->bev), cn->early);
}

/* The replies in the input, each to the command at the FIFO's head. */
static void conn_read(struct cluster_conn *cn)
{
    struct evbuffer *in = bufferevent_get_input(cn->bev);
    struct evbuffer_iovec v[8];
    struct conn_cmd c;
    int nv;
    void *reply;

    if (cn->dead)
        return;
    if (!cn->ready) {
        conn_lost(cn, "data before the connection was ready");
        return;
    }
    while ((nv = evbuffer_peek(in, -1, NULL, v, 8)) > 0) {
        for (int i = 0; i < nv && i < 8; i++)
            redisReaderFeed(cn->reader, v[i].iov_base, v[i].iov_len);
        for (int i = 0; i < nv && i < 8; i++)
            evbuffer_drain(in, v[i].iov_len);
    }
    cn->reading = 1;
    while (!cn->freed && !cn->dead) {
        if (redisReaderGetReply(cn->reader, &reply) != REDIS_OK) {
            conn_lost(cn, cn->reader->errstr);
            break;
        }
        if (reply == NULL) {
            if (cn->reader->len - cn->reader->pos > CONN_REPLY_MAX)
                conn_lost(cn, "a reply over 64 MB");
            break;
        }
        if (cn->n == 0) {
            freeReplyObject(reply);
            conn_lost(cn, "a reply to no command");
            break;
        }
        c = cmd_pop(cn);
        c.fn(c.arg, reply);
        freeReplyObject(reply);
    }
    cn->reading = 0;
    if (cn->freed)
        cluster_conn_free(cn);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    conn_read(arg);
}

static void verify(struct cluster_conn *cn)
{
    struct tls_peer p;
    char why[1000];

    tls_session_peer(cn->bev, &p);
    if (p.matched) {
        conn_ready(cn);
        return;
    }
    if (!p.has_cert)
        snprintf(why, sizeof(why), "TLS: Redis sent no certificate");
    else if (!p.trusted)
        snprintf(why, sizeof(why),
                 "TLS: Redis's certificate (CN=%s, issuer CN=%s) does not "
                 "verify: %s",
                 p.subject, p.issuer, p.why);
    else
        snprintf(why, sizeof(why),
                 "TLS: Redis's certificate (CN=%s) does not name %s", p.subject,
                 cn->match);
    conn_lost(cn, why);
}

static void tls_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct cluster_conn *cn = arg;
    char why[300], reason[256];

    if (what & BEV_EVENT_CONNECTED) {
        verify(cn);
        return;
    }
    if (!cn->ready) {
        tls_session_error(bev, reason, sizeof(reason));
        snprintf(why, sizeof(why), "TLS handshake: %s", reason);
        conn_lost(cn, why);
    } else if (what & BEV_EVENT_EOF)
        conn_lost(cn, "connection closed");
    else {
        tls_session_error(bev, reason, sizeof(reason));
        snprintf(why, sizeof(why), "TLS: %s", reason);
        conn_lost(cn, why);
    }
}

/* The socket is connected: ready, or TLS over it first. */
static void connected(struct cluster_conn *cn)
{
    struct tls_connect_params p = {0};
    const char *match = cn->match;
    struct bufferevent *bev;
    unsigned char ip[16];

    if (cn->tls == NULL) {
        conn_ready(cn);
        return;
    }
    if (inet_pton(AF_INET, match, ip) != 1 &&
        inet_pton(AF_INET6, match, ip) != 1)
        p.servername = match; /* SNI carries names, not addresses */
    p.min_version = 0;
    p.match = &match;
    p.nmatch = 1;
    if ((bev = tls_session_connect(cn->tls, cn->bev, &p)) == NULL) {
        conn_lost(cn, "TLS: cannot start a session");
        return;
    }
    cn->bev = bev;
    bufferevent_setcb(bev, read_cb, NULL, tls_event_cb, cn);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct cluster_conn *cn = arg;
    char why[300];
    int err = EVUTIL_SOCKET_ERROR();

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        connected(cn);
        return;
    }
    if (what & BEV_EVENT_EOF)
        snprintf(why, sizeof(why), "connection closed");
    else
        snprintf(why, sizeof(why), "%s", err ? strerror(err) : "I/O error");
    conn_lost(cn, why);
}

/* u's address as a sockaddr; its length, or 0. */
static socklen_t conn_addr(const struct cluster_url *u,
                           struct sockaddr_storage *ss)
{
    struct sockaddr_un *un = (struct sockaddr_un *)ss;
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

    memset(ss, 0, sizeof(*ss));
    if (u->unix_socket) {
        un->sun_family = AF_UNIX;
        snprintf(un->sun_path, sizeof(un->sun_path), "%s", u->path);
        return sizeof(*un);
    }
    if (inet_pton(AF_INET, u->ip, &in->sin_addr) == 1) {
        in->sin_family = AF_INET;
        in->sin_port = htons((uint16_t)u->port);
        return sizeof(*in);
    }
    if (inet_pton(AF_INET6, u->ip, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)u->port);
        return sizeof(*in6);
    }
    return 0;
}

struct cluster_conn *cluster_conn_open(struct event_base *base,
                                       const struct cluster_url *u,
                                       struct tls_context *tls,
                                       const char *servername,
                                       cluster_conn_lost_fn *lost, void *ctx,
                                       char *why, size_t whylen)
{
    struct cluster_conn *cn = xcalloc(1, sizeof(*cn));
    struct sockaddr_storage ss;
    socklen_t sslen = conn_addr(u, &ss);

    cn->bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    cn->reader = redisReaderCreate();
    cn->early = evbuffer_new();
    if (cn->bev == NULL || cn->reader == NULL || cn->early == NULL ||
        sslen == 0) {
        snprintf(why, whylen, "cannot make a connection");
        cluster_conn_free(cn);
        return NULL;
    }
    cn->tls = tls ? tls_context_ref(tls) : NULL;
    snprintf(cn->match, sizeof(cn->match), "%s",
             servername && servername[0] ? servername : u->ip);
    cn->ctx = ctx;
    if (u->password[0]) {
        const char *argv[3];
        size_t len[3];
        int argc = 0;

        argv[argc] = "AUTH";
        len[argc++] = 4;
        if (u->user[0]) {
            argv[argc] = u->user;
            len[argc++] = strlen(u->user);
        }
        argv[argc] = u->password;
        len[argc++] = strlen(u->password);
        /* the first command: its reply comes before any other */
        cluster_conn_send(cn, argc, argv, len, on_auth, cn);
    }
    bufferevent_setcb(cn->bev, read_cb, NULL, event_cb, cn);
    bufferevent_enable(cn->bev, EV_READ | EV_WRITE);
    /* a connect that fails at once reports here, not through lost */
    if (bufferevent_socket_connect(cn->bev, (struct sockaddr *)&ss,
                                   (int)sslen) < 0) {
        snprintf(why, whylen, "%s", cn->why[0] ? cn->why : strerror(errno));
        cluster_conn_free(cn);
        return NULL;
    }
    cn->lost = lost;
    return cn;
}

void cluster_conn_free(struct cluster_conn *cn)
{
    if (cn == NULL)
        return;
    cn->lost = NULL;
    while (cn->n > 0) {
        struct conn_cmd c = cmd_pop(cn);

        if (c.fn != on_auth)
            c.fn(c.arg, NULL);
    }
    if (cn->reading) {
        cn->freed = 1; /* conn_read() frees it as it ends */
        return;
    }
    if (cn->bev != NULL) {
        if (cn->tls != NULL && tls_session_active(cn->bev))
            tls_session_free(cn->bev);
        else
            bufferevent_free(cn->bev);
    }
    if (cn->tls != NULL)
        tls_context_free(cn->tls);
    if (cn->reader != NULL)
        redisReaderFree(cn->reader);
    if (cn->early != NULL)
        evbuffer_free(cn->early);
    free(cn->cmds);
    free(cn);
}
