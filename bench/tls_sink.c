/*
 * NAME
 *	tls_sink - an SMTP sink that speaks STARTTLS, for the TLS benchmarks
 * SYNOPSIS
 *	build/bench/tls_sink [-P] [-b BACKLOG] [-i MS] ADDR:PORT CERT KEY COUNTFILE
 * DESCRIPTION
 *	Listens on ADDR:PORT (backlog BACKLOG, default 256) and accepts any
 *	mail, discarding it, as Postfix's smtp-sink does, but over TLS:
 *	EHLO offers PIPELINING, 8BITMIME, SIZE and STARTTLS, STARTTLS
 *	starts a TLS handshake with the certificate chain in CERT and the
 *	key in KEY, and MAIL is refused (530) until it has succeeded, so
 *	that every message counted came over TLS; with -P it is accepted
 *	in plaintext too (the counters tell the two apart: a connection
 *	without a handshake). MAIL, RCPT, DATA, RSET,
 *	NOOP and QUIT follow RFC 5321's order (503 out of it); commands may
 *	be pipelined, and those sent after STARTTLS in the same packet are
 *	discarded, not answered (CVE-2011-0411).
 *
 *	Session resumption is on: TLS 1.3 tickets, and TLS 1.2 tickets and
 *	session ids, all from OpenSSL's defaults, under one ticket key for
 *	the life of the process.
 *
 *	Every MS milliseconds (default 100), and at the exit, COUNTFILE is replaced (a new
 *	file renamed over it) by one line of counters since the start:
 *
 *	  sess=N quit=N mesg=N rcpt=N tls=N offered=N resumed=N tlserr=N
 *
 *	connections accepted, QUITs answered, messages accepted (final
 *	dots), recipients accepted, TLS handshakes completed, those of
 *	them where the client offered a session to resume (a TLS 1.3
 *	pre-shared key or a TLS 1.2 ticket), those that
 *	resumed one, and handshakes that failed. The
 *	fields are smtp-sink's where they exist, so bench/lib.sh's
 *	sink_messages() reads mesg= from it too.
 *
 *	SIGTERM or SIGINT: the counters are written and it exits 0. One
 *	process, one thread, libevent with bufferevent_openssl; a benchmark
 *	peer, run by bench/tls_relay.sh, not a test.
 */

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "util/util.h"

/* A command line, or a line of content, longer than this closes the
 * connection: the clients under test write short lines. */
#define LINE_MAX_BYTES 65536

enum sink_state {
    SINK_COMMAND, /* reading commands */
    SINK_DATA,    /* reading content until the dot */
    SINK_TLS,     /* 220 to STARTTLS written, waiting to hand over */
    SINK_QUIT,    /* 221 written, closing once it has left */
};

struct sink_conn {
    struct bufferevent *bev;
    SSL *ssl; /* NULL before STARTTLS */
    enum sink_state state;
    int ehlo;    /* EHLO or HELO since the greeting or the handshake */
    int mail;    /* MAIL accepted, transaction open */
    int rcpts;   /* recipients of the open transaction */
    int offered; /* the ClientHello offered a session */
};

struct sink_counts {
    unsigned long sess, quit, mesg, rcpt, tls, offered, resumed, tlserr;
};

static struct event_base *base;
static SSL_CTX *ssl_ctx;
static struct sink_counts counts;
static const char *count_path;
static char *count_tmp;
static int plaintext_ok; /* -P */

static void conn_read(struct bufferevent *bev, void *arg);
static void conn_write(struct bufferevent *bev, void *arg);
static void conn_event(struct bufferevent *bev, short what, void *arg);

/* counts_write: a new file renamed over the old, so that a reader never
 * sees half a line. */
static void counts_write(void)
{
    FILE *fp = fopen(count_tmp, "w");

    if (fp == NULL) {
        fprintf(stderr, "tls_sink: %s: %s\n", count_tmp, strerror(errno));
        return;
    }
    fprintf(
        fp,
        "sess=%lu quit=%lu mesg=%lu rcpt=%lu tls=%lu offered=%lu resumed=%lu "
        "tlserr=%lu\n",
        counts.sess, counts.quit, counts.mesg, counts.rcpt, counts.tls,
        counts.offered, counts.resumed, counts.tlserr);
    if (fclose(fp) != 0 || rename(count_tmp, count_path) != 0)
        fprintf(stderr, "tls_sink: %s: %s\n", count_path, strerror(errno));
}

/* conn_free: a TLS bufferevent closes its socket and frees its SSL
 * (BEV_OPT_CLOSE_ON_FREE); the plaintext one was made without it, so
 * that STARTTLS can take its socket over, and is closed here. */
static void conn_free(struct sink_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);

    bufferevent_free(c->bev);
    if (c->ssl == NULL && fd >= 0)
        evutil_closesocket(fd);
    free(c);
}

static void reply(struct sink_conn *c, const char *text)
{
    evbuffer_add_printf(bufferevent_get_output(c->bev), "%s\r\n", text);
}

/* verb_is: the line starts with VERB, then ends or has a space. */
static int verb_is(const char *line, const char *verb)
{
    size_t n = strlen(verb);

    return strncasecmp(line, verb, n) == 0 &&
           (line[n] == '\0' || line[n] == ' ');
}

static void ehlo(struct sink_conn *c, const char *line)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);

    c->ehlo = 1;
    c->mail = 0;
    c->rcpts = 0;
    if (verb_is(line, "HELO")) {
        reply(c, "250 tls-sink.bench");
        return;
    }
    evbuffer_add_printf(out, "250-tls-sink.bench\r\n250-PIPELINING\r\n"
                             "250-8BITMIME\r\n250-SIZE 104857600\r\n");
    if (c->ssl == NULL)
        evbuffer_add_printf(out, "250-STARTTLS\r\n");
    evbuffer_add_printf(out, "250 ENHANCEDSTATUSCODES\r\n");
}

/* starttls: the 220 goes out in plaintext; the handshake starts from
 * conn_write() once it has left. Whatever the client pipelined after
 * STARTTLS is dropped unread. */
static void starttls(struct sink_conn *c)
{
    if (c->ssl != NULL) {
        reply(c, "554 5.5.1 Error: TLS already active");
        return;
    }
    reply(c, "220 2.0.0 Ready to start TLS");
    c->state = SINK_TLS;
    bufferevent_disable(c->bev, EV_READ);
    evbuffer_drain(bufferevent_get_input(c->bev),
                   evbuffer_get_length(bufferevent_get_input(c->bev)));
}

static void command(struct sink_conn *c, const char *line)
{
    if (verb_is(line, "EHLO") || verb_is(line, "HELO")) {
        ehlo(c, line);
    } else if (verb_is(line, "STARTTLS")) {
        starttls(c);
    } else if (verb_is(line, "NOOP")) {
        reply(c, "250 2.0.0 Ok");
    } else if (verb_is(line, "RSET")) {
        c->mail = 0;
        c->rcpts = 0;
        reply(c, "250 2.0.0 Ok");
    } else if (verb_is(line, "QUIT")) {
        counts.quit++;
        reply(c, "221 2.0.0 Bye");
        c->state = SINK_QUIT;
        bufferevent_disable(c->bev, EV_READ);
    } else if (strncasecmp(line, "MAIL FROM:", 10) == 0) {
        if (c->ssl == NULL && !plaintext_ok)
            reply(c, "530 5.7.0 Must issue a STARTTLS command first");
        else if (!c->ehlo)
            reply(c, "503 5.5.1 Error: send HELO/EHLO first");
        else if (c->mail)
            reply(c, "503 5.5.1 Error: nested MAIL command");
        else {
            c->mail = 1;
            reply(c, "250 2.1.0 Ok");
        }
    } else if (strncasecmp(line, "RCPT TO:", 8) == 0) {
        if (!c->mail)
            reply(c, "503 5.5.1 Error: need MAIL command");
        else {
            c->rcpts++;
            counts.rcpt++;
            reply(c, "250 2.1.5 Ok");
        }
    } else if (verb_is(line, "DATA")) {
        if (!c->mail || c->rcpts == 0)
            reply(c, "503 5.5.1 Error: need RCPT command");
        else {
            c->state = SINK_DATA;
            reply(c, "354 End data with <CR><LF>.<CR><LF>");
        }
    } else {
        reply(c, "502 5.5.2 Error: command not recognized");
    }
}

/* data_line: content is discarded; the dot ends it. */
static void data_line(struct sink_conn *c, const char *line)
{
    if (strcmp(line, ".") != 0)
        return;
    counts.mesg++;
    c->state = SINK_COMMAND;
    c->mail = 0;
    c->rcpts = 0;
    reply(c, "250 2.0.0 Ok: queued as SINK");
}

/* conn_read: every whole line, in order, replies appended as they come:
 * pipelined commands get their replies in one write. */
static void conn_read(struct bufferevent *bev, void *arg)
{
    struct sink_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    size_t n;
    char *line;

    while ((c->state == SINK_COMMAND || c->state == SINK_DATA) &&
           (line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)) != NULL) {
        if (c->state == SINK_DATA)
            data_line(c, line);
        else
            command(c, line);
        free(line);
    }
    if (evbuffer_get_length(in) > LINE_MAX_BYTES) {
        fprintf(stderr, "tls_sink: a line over %d bytes: closing\n",
                LINE_MAX_BYTES);
        conn_free(c);
    }
}

/* hello: note whether the client offers a session: a TLS 1.3 PSK or a
 * TLS 1.2 ticket (a session_ticket extension with content). A TLS 1.2
 * session id is not told apart: TLS 1.3 clients send a random one. */
static int hello(SSL *ssl, int *alert, void *arg)
{
    struct sink_conn *c = SSL_get_app_data(ssl);
    const unsigned char *ext;
    size_t len;

    (void)alert, (void)arg;
    if (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_psk, &ext, &len) == 1 ||
        (SSL_client_hello_get0_ext(ssl, TLSEXT_TYPE_session_ticket, &ext,
                                   &len) == 1 &&
         len > 0))
        c->offered = 1;
    return SSL_CLIENT_HELLO_SUCCESS;
}

/* handshake: the plaintext bufferevent gives its socket to a TLS one.
 * It was made without BEV_OPT_CLOSE_ON_FREE, so the socket stays open. */
static void handshake(struct sink_conn *c)
{
    evutil_socket_t fd = bufferevent_getfd(c->bev);
    SSL *ssl = SSL_new(ssl_ctx);

    if (ssl == NULL)
        util_panic("tls_sink: SSL_new failed");
    SSL_set_app_data(ssl, c);
    bufferevent_free(c->bev);
    c->bev = bufferevent_openssl_socket_new(
        base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL)
        util_panic("tls_sink: bufferevent_openssl_socket_new failed");
    c->ssl = ssl;
    c->ehlo = 0;
    c->mail = 0;
    c->rcpts = 0;
    c->state = SINK_COMMAND;
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* conn_write: the output has left; act on what was waiting for it. */
static void conn_write(struct bufferevent *bev, void *arg)
{
    struct sink_conn *c = arg;

    (void)bev;
    if (c->state == SINK_TLS) {
        handshake(c);
    } else if (c->state == SINK_QUIT) {
        if (c->ssl != NULL)
            SSL_shutdown(c->ssl); /* close_notify; no wait for theirs */
        conn_free(c);
    }
}

static void conn_event(struct bufferevent *bev, short what, void *arg)
{
    struct sink_conn *c = arg;
    unsigned long err;

    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        /* the TLS handshake is done */
        counts.tls++;
        if (c->offered)
            counts.offered++;
        if (SSL_session_reused(c->ssl))
            counts.resumed++;
        return;
    }
    if ((what & BEV_EVENT_ERROR) && c->ssl != NULL &&
        !SSL_is_init_finished(c->ssl)) {
        err = bufferevent_get_openssl_error(bev);
        if (counts.tlserr++ == 0)
            fprintf(stderr, "tls_sink: handshake failed: %s\n",
                    err ? ERR_reason_error_string(err) : "connection lost");
    }
    conn_free(c);
}

static void accepted(struct evconnlistener *l, evutil_socket_t fd,
                     struct sockaddr *sa, int salen, void *arg)
{
    struct sink_conn *c = xcalloc(1, sizeof(*c));
    int one = 1;

    (void)l, (void)sa, (void)salen, (void)arg;
    counts.sess++;
    evutil_make_socket_nonblocking(fd);
    /* Replies are whole when written: no Nagle delay behind a delayed
     * ACK (40 ms a message with pipelining over TLS). */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->bev = bufferevent_socket_new(base, fd, 0);
    if (c->bev == NULL)
        util_panic("tls_sink: bufferevent_socket_new failed");
    c->state = SINK_COMMAND;
    bufferevent_setcb(c->bev, conn_read, conn_write, conn_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    reply(c, "220 tls-sink.bench ESMTP");
}

static void tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    counts_write();
}

static void stop(evutil_socket_t sig, short what, void *arg)
{
    (void)sig, (void)what, (void)arg;
    event_base_loopexit(base, NULL);
}

static SSL_CTX *context(const char *cert, const char *key)
{
    static const unsigned char sid[] = "tls_sink";
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());

    if (ctx == NULL || SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
        fprintf(stderr, "tls_sink: %s, %s: %s\n", cert, key,
                ERR_reason_error_string(ERR_get_error()));
        exit(1);
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    SSL_CTX_set_client_hello_cb(ctx, hello, NULL);
    return ctx;
}

static void usage(void)
{
    fprintf(stderr, "usage: tls_sink [-P] [-b BACKLOG] [-i MS] ADDR:PORT CERT "
                    "KEY COUNTFILE\n");
    exit(2);
}

int main(int argc, char **argv)
{
    struct sockaddr_storage ss;
    int sslen = sizeof(ss), backlog = 256, ms = 100, ch;
    struct evconnlistener *listener;
    struct timeval every;
    struct event *timer, *term, *intr;

    while ((ch = getopt(argc, argv, "Pb:i:")) != -1) {
        if (ch == 'P') {
            plaintext_ok = 1;
            continue;
        }
        if (ch == 'b' && (backlog = atoi(optarg)) > 0)
            continue;
        if (ch == 'i' && (ms = atoi(optarg)) > 0 && ms <= 10000)
            continue;
        usage();
    }
    every.tv_sec = ms / 1000;
    every.tv_usec = ms % 1000 * 1000;
    argc -= optind;
    argv += optind;
    if (argc != 4)
        usage();
    if (evutil_parse_sockaddr_port(argv[0], (struct sockaddr *)&ss, &sslen) !=
        0) {
        fprintf(stderr, "tls_sink: bad address %s\n", argv[0]);
        return 2;
    }
    count_path = argv[3];
    count_tmp = xmalloc(strlen(count_path) + 5);
    sprintf(count_tmp, "%s.new", count_path);
    signal(SIGPIPE, SIG_IGN);
    ssl_ctx = context(argv[1], argv[2]);

    base = event_base_new();
    if (base == NULL)
        util_panic("tls_sink: event_base_new failed");
    listener = evconnlistener_new_bind(
        base, accepted, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE,
        backlog, (struct sockaddr *)&ss, sslen);
    if (listener == NULL) {
        fprintf(stderr, "tls_sink: cannot listen on %s: %s\n", argv[0],
                strerror(errno));
        return 1;
    }
    counts_write();
    timer = event_new(base, -1, EV_PERSIST, tick, NULL);
    term = evsignal_new(base, SIGTERM, stop, NULL);
    intr = evsignal_new(base, SIGINT, stop, NULL);
    event_add(timer, &every);
    event_add(term, NULL);
    event_add(intr, NULL);

    event_base_dispatch(base);

    counts_write();
    event_free(timer);
    event_free(term);
    event_free(intr);
    evconnlistener_free(listener);
    event_base_free(base);
    SSL_CTX_free(ssl_ctx);
    free(count_tmp);
    return 0;
}
