/*
 * NAME
 *	stdio_smtp 3 - "sendmail -bs": an SMTP session on standard input
 *	and output
 * SYNOPSIS
 *	#include "sendmail/sendmail_impl.h"
 *
 *	int	sendmail_smtp(const struct conf *conf)
 * DESCRIPTION
 *	sendmail_smtp() is Postfix's stand-alone SMTP mode (sendmail -bs):
 *	it reads SMTP commands on standard input and writes the replies on
 *	standard output, for programs that submit mail by speaking SMTP to
 *	a command (MUAs with a "sendmail -bs" setting, swaks --pipe).
 *
 *	The session is sluice's own SMTP server (ingress/), the same code
 *	as sluiced's listener, with the configuration's smtpd parameters:
 *	ESMTP, PIPELINING, SIZE, DSN, the limits and the content checks.
 *	Its connection is one end of a socket pair; this file copies
 *	standard input to the other end and what comes back to standard
 *	output. As in Postfix, the client is the local host: it is
 *	127.0.0.1 to the server (inside mynetworks by default, so it may
 *	send anywhere, as the local user of sendmail may), and each
 *	message is stored as "sluice sendmail" stores one (store.c: the
 *	running daemon, else the spool, else the maildrop), the 250 going
 *	out only once it is durable. Nothing is staged to disk (the
 *	caller may not write the queue directory), there is no STARTTLS
 *	(the daemon's key is not the caller's to read) and nothing is logged:
 *	the replies are the client's report. The session ends with QUIT or
 *	the end of standard input; the exit status is 0 then, 75 when the
 *	server cannot start.
 */

#include "sendmail/sendmail_impl.h"

#include "daemon/daemon.h"
#include "ingress/ingress.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

struct stdio_smtp {
    const struct conf *conf;
    struct event_base *base;
    struct bufferevent *in;   /* standard input, read only */
    struct bufferevent *out;  /* standard output, write only */
    struct bufferevent *peer; /* our end of the socket pair */
    int session_over;         /* the server closed its end */
};

/* The store operation of the server: as "sluice sendmail" stores. */
static void store_cb(void *ctx, struct spool_msg *m, const char *origin,
                     ingress_done_fn *done, void *conn)
{
    struct stdio_smtp *ss = ctx;
    char id[SPOOL_ID_MAX + 1];
    int rc;

    (void)origin;
    rc = sendmail_store(ss->conf, m);
    snprintf(id, sizeof(id), "%s", m->id);
    spool_msg_free(m);
    done(conn, rc == 0 ? 0 : -1, rc == 0 ? id : NULL,
         rc == 0 ? NULL : "queue file write error");
}

static void log_cb(void *ctx, const char *line)
{
    (void)ctx;
    (void)line;
}

/* Client to server: standard input into the socket pair. */
static void in_read_cb(struct bufferevent *bev, void *arg)
{
    struct stdio_smtp *ss = arg;

    bufferevent_write_buffer(ss->peer, bufferevent_get_input(bev));
}

/* The end of standard input: the server sees the client close. */
static void in_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct stdio_smtp *ss = arg;

    (void)what;
    bufferevent_disable(bev, EV_READ);
    ss->in = NULL;
    bufferevent_free(bev);
    /* What is still to go goes first (peer_write_cb() then shuts). */
    if (evbuffer_get_length(bufferevent_get_output(ss->peer)) == 0)
        shutdown(bufferevent_getfd(ss->peer), SHUT_WR);
}

/* Server to client: replies onto standard output. */
static void peer_read_cb(struct bufferevent *bev, void *arg)
{
    struct stdio_smtp *ss = arg;

    bufferevent_write_buffer(ss->out, bufferevent_get_input(bev));
}

static void peer_write_cb(struct bufferevent *bev, void *arg)
{
    struct stdio_smtp *ss = arg;

    if (ss->in == NULL)
        shutdown(bufferevent_getfd(bev), SHUT_WR);
}

/* The server closed the session (QUIT, or an error): finish writing. */
static void peer_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct stdio_smtp *ss = arg;

    (void)what;
    bufferevent_disable(bev, EV_READ);
    ss->session_over = 1;
    if (evbuffer_get_length(bufferevent_get_output(ss->out)) == 0)
        event_base_loopexit(ss->base, NULL);
}

static void out_write_cb(struct bufferevent *bev, void *arg)
{
    struct stdio_smtp *ss = arg;

    (void)bev;
    if (ss->session_over)
        event_base_loopexit(ss->base, NULL);
}

static void out_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct stdio_smtp *ss = arg;

    (void)bev;
    (void)what;
    event_base_loopexit(ss->base, NULL); /* standard output is gone */
}

static struct smtpd_server *server_start(struct stdio_smtp *ss, int fd)
{
    struct smtpd_ops ops = {0};
    struct smtpd_params p;
    struct smtpd_server *srv;
    struct sockaddr_in local = {0};
    char why[512];

    daemon_smtpd_params(ss->conf, "", &p);
    p.listen = "";
    /* No TLS on a pipe: the key is the daemon's, and the local user of
     * sendmail may not read it. */
    p.tls_cert_file = p.tls_key_file = p.tls_chain_files = "";
    p.tls_level = "none";
    p.tls_wrappermode = 0;
    p.tls_wrapper_listen = "";
    /* No AUTH either: the user is known by uid, and the passwd-file and
     * the login maps are the daemon's to read. */
    p.sasl_auth_enable = 0;
    p.sender_restrictions = "";
    p.sender_login_maps = "";
    ops.store = store_cb;
    ops.log = log_cb;
    ops.ctx = ss;
    if ((srv = smtpd_server_create(ss->base, &p, &ops, why, sizeof(why))) ==
        NULL) {
        fprintf(stderr, "sendmail: -bs: %s\n", why);
        return NULL;
    }
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (smtpd_session_start(srv, fd, (struct sockaddr *)&local, sizeof(local)) <
        0) {
        fprintf(stderr, "sendmail: -bs: cannot start the session\n");
        smtpd_server_free(srv);
        return NULL;
    }
    return srv;
}

int sendmail_smtp(const struct conf *conf)
{
    struct stdio_smtp ss = {conf, NULL, NULL, NULL, NULL, 0};
    struct smtpd_server *srv = NULL;
    struct event_config *cfg = NULL;
    int sv[2], rc = EX_TEMPFAIL;

    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0) {
        perror("sendmail: -bs: socketpair");
        return EX_TEMPFAIL;
    }
    /* poll(2), not epoll: standard input may be a plain file. */
    if ((cfg = event_config_new()) == NULL ||
        event_config_avoid_method(cfg, "epoll") < 0 ||
        (ss.base = event_base_new_with_config(cfg)) == NULL ||
        (srv = server_start(&ss, sv[0])) == NULL) {
        close(sv[0]);
        close(sv[1]);
        goto done;
    }
    ss.peer = bufferevent_socket_new(ss.base, sv[1], BEV_OPT_CLOSE_ON_FREE);
    ss.in = bufferevent_socket_new(ss.base, STDIN_FILENO, 0);
    ss.out = bufferevent_socket_new(ss.base, STDOUT_FILENO, 0);
    bufferevent_setcb(ss.peer, peer_read_cb, peer_write_cb, peer_event_cb, &ss);
    bufferevent_setcb(ss.in, in_read_cb, NULL, in_event_cb, &ss);
    bufferevent_setcb(ss.out, NULL, out_write_cb, out_event_cb, &ss);
    bufferevent_enable(ss.peer, EV_READ | EV_WRITE);
    bufferevent_enable(ss.in, EV_READ);
    bufferevent_enable(ss.out, EV_WRITE);
    event_base_dispatch(ss.base);
    rc = 0;
done:
    if (ss.in)
        bufferevent_free(ss.in);
    if (ss.out)
        bufferevent_free(ss.out);
    if (ss.peer)
        bufferevent_free(ss.peer);
    if (srv)
        smtpd_server_free(srv);
    if (ss.base)
        event_base_free(ss.base);
    if (cfg)
        event_config_free(cfg);
    return rc;
}
