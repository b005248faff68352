/*
 * NAME
 *	tls_source - submit messages over SMTP with STARTTLS, for the TLS
 *	benchmarks
 * SYNOPSIS
 *	build/bench/tls_source [-s SESSIONS] [-m MESSAGES] [-k PER_CONNECTION]
 *		[-l BYTES] [-d DOMAINS] [-r PREFIX] [-n] [-P] ADDR:PORT
 * DESCRIPTION
 *	Postfix's smtp-source with STARTTLS, which smtp-source lacks:
 *	SESSIONS (default 20) sessions at once send MESSAGES (default
 *	1000) messages in all to the server at ADDR:PORT. Each connection
 *	reads the greeting, sends EHLO, STARTTLS (the server must offer
 *	it), makes the TLS handshake, sends EHLO again, then sends up to
 *	PER_CONNECTION (default 1) messages, each MAIL FROM, RCPT TO and
 *	DATA pipelined (as smtp-source does not), then the content and
 *	the dot, then QUIT; the session then connects again while messages
 *	are left (a connection takes its share of the messages left when
 *	it connects, so none is left empty). Message N (from 0) is from bench@sluice-bench.test to
 *	u<N>@<PREFIX><I>.bench (PREFIX default d), I = N mod DOMAINS + 1
 *	(DOMAINS default 1), with
 *	From, To, Subject and Message-ID headers and a body of about BYTES
 *	(default 2048) bytes.
 *
 *	Each session offers the server the TLS session of its previous
 *	connection (a ticket), as a client with a session cache would;
 *	-n offers none. -P sends no STARTTLS: the same sessions in
 *	plaintext, for a baseline. The server's certificate is not checked: this
 *	is a load generator.
 *
 *	It exits 0 once every message has had its 250 to the dot and its
 *	connection its 221, after printing
 *
 *	  tls_source: M messages in S s = R msg/s; C connections, H
 *	  handshakes, X resumed
 *
 *	and 1, saying why, at the first unexpected reply, a failed
 *	connection or handshake. No time limit of its own: run it under
 *	timeout(1). Run by bench/tls_relay.sh; not a test.
 */

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "util/util.h"

enum source_state {
    SRC_GREETING, /* waiting for the 220 */
    SRC_EHLO,     /* EHLO sent in plaintext */
    SRC_STARTTLS, /* STARTTLS sent */
    SRC_HANDSHAKE,
    SRC_TLS_EHLO, /* EHLO sent inside TLS */
    SRC_MAIL,     /* MAIL, RCPT, DATA sent: 250, 250, 354 due */
    SRC_DOT,      /* content and dot sent */
    SRC_QUIT,     /* QUIT sent */
};

struct source_session {
    int id;
    struct bufferevent *bev;
    SSL *ssl;
    SSL_SESSION *resume; /* of the previous connection, if any */
    enum source_state state;
    int replies;       /* replies read in SRC_MAIL */
    int starttls_seen; /* the EHLO reply offered STARTTLS */
    int sent;          /* messages on this connection */
    int quota;         /* messages this connection is to send */
    long message;      /* the number of the message under way */
};

static struct event_base *base;
static SSL_CTX *ssl_ctx;
static struct sockaddr_storage server;
static int server_len = sizeof(server);
static const char *server_name, *prefix = "d";
static long messages = 1000, next_message, done_messages, reserved;
static int per_connection = 1, domains = 1, bytes = 2048, resume = 1;
static int plaintext; /* -P */
static int sessions_left;
static unsigned long connections, handshakes, resumed;
static char *body;

static void session_connect(struct source_session *s);
static void session_read(struct bufferevent *bev, void *arg);
static void session_event(struct bufferevent *bev, short what, void *arg);

static void fail(const struct source_session *s, const char *what,
                 const char *detail)
{
    fprintf(stderr, "tls_source: session %d, %s: %s\n", s->id, what, detail);
    exit(1);
}

static void send_text(struct source_session *s, const char *text)
{
    evbuffer_add(bufferevent_get_output(s->bev), text, strlen(text));
}

/* body_make: the content after the headers, lines of 78 characters to
 * about BYTES in all, the dot at the end. */
static char *body_make(void)
{
    struct util_buf b = UTIL_BUF_INIT;
    int i = 1;

    while ((int)b.len < bytes - 200)
        util_buf_printf(&b, "%-76.76d\r\n", i++);
    util_buf_puts(&b, ".\r\n");
    return b.data;
}

/* message_next: the next message's envelope, pipelined, or QUIT when
 * this connection has sent its share or none is left. */
static void message_next(struct source_session *s)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);
    long n;

    if (s->sent >= s->quota) {
        send_text(s, "QUIT\r\n");
        s->state = SRC_QUIT;
        return;
    }
    n = next_message++;
    s->message = n;
    s->sent++;
    evbuffer_add_printf(out,
                        "MAIL FROM:<bench@sluice-bench.test>\r\n"
                        "RCPT TO:<u%ld@%s%ld.bench>\r\nDATA\r\n",
                        n, prefix, n % domains + 1);
    s->state = SRC_MAIL;
    s->replies = 0;
}

static void message_content(struct source_session *s)
{
    long n = s->message;

    evbuffer_add_printf(bufferevent_get_output(s->bev),
                        "From: <bench@sluice-bench.test>\r\n"
                        "To: <u%ld@%s%ld.bench>\r\n"
                        "Subject: tls_source %ld\r\n"
                        "Message-ID: <%ld@sluice-bench.test>\r\n\r\n",
                        n, prefix, n % domains + 1, n, n);
    send_text(s, body);
    s->state = SRC_DOT;
}

/* tls_start: the plaintext bufferevent gives its socket to a TLS one;
 * it was made without BEV_OPT_CLOSE_ON_FREE. */
static void tls_start(struct source_session *s)
{
    evutil_socket_t fd = bufferevent_getfd(s->bev);

    s->ssl = SSL_new(ssl_ctx);
    if (s->ssl == NULL)
        util_panic("tls_source: SSL_new failed");
    if (s->resume != NULL)
        SSL_set_session(s->ssl, s->resume);
    bufferevent_free(s->bev);
    s->bev = bufferevent_openssl_socket_new(
        base, fd, s->ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
    if (s->bev == NULL)
        util_panic("tls_source: bufferevent_openssl_socket_new failed");
    s->state = SRC_HANDSHAKE;
    bufferevent_setcb(s->bev, session_read, NULL, session_event, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
}

/* connection_end: after the 221. The TLS session (its ticket arrived
 * with the first replies after the handshake) is kept for the next
 * connection. */
static void connection_end(struct source_session *s)
{
    if (resume && s->ssl != NULL) {
        SSL_SESSION *sess = SSL_get1_session(s->ssl);

        if (s->resume != NULL)
            SSL_SESSION_free(s->resume);
        s->resume = NULL;
        if (sess != NULL && SSL_SESSION_is_resumable(sess))
            s->resume = sess;
        else if (sess != NULL)
            SSL_SESSION_free(sess);
    }
    if (s->ssl != NULL)
        SSL_shutdown(s->ssl);
    bufferevent_free(s->bev); /* and the SSL, and the socket */
    s->bev = NULL;
    s->ssl = NULL;
    if (reserved < messages) {
        session_connect(s);
        return;
    }
    if (s->resume != NULL)
        SSL_SESSION_free(s->resume);
    free(s);
    if (--sessions_left == 0)
        event_base_loopexit(base, NULL);
}

/* expect: the reply's code must be CODE. */
static void expect(struct source_session *s, const char *line, const char *code,
                   const char *after)
{
    if (strncmp(line, code, 3) != 0)
        fail(s, after, line);
}

/* reply: one whole reply (its last line LINE) in state s->state. */
static void reply(struct source_session *s, const char *line)
{
    switch (s->state) {
    case SRC_GREETING:
        expect(s, line, "220", "greeting");
        send_text(s, "EHLO source.sluice-bench.test\r\n");
        s->state = SRC_EHLO;
        break;
    case SRC_EHLO:
        expect(s, line, "250", "EHLO");
        if (plaintext) {
            message_next(s);
            break;
        }
        if (!s->starttls_seen)
            fail(s, "EHLO", "no STARTTLS offered");
        send_text(s, "STARTTLS\r\n");
        s->state = SRC_STARTTLS;
        break;
    case SRC_STARTTLS:
        expect(s, line, "220", "STARTTLS");
        tls_start(s);
        break;
    case SRC_HANDSHAKE:
        fail(s, "handshake", "a reply before the handshake ended");
        break;
    case SRC_TLS_EHLO:
        expect(s, line, "250", "EHLO after STARTTLS");
        message_next(s);
        break;
    case SRC_MAIL:
        s->replies++;
        expect(s, line, s->replies < 3 ? "250" : "354",
               s->replies == 1   ? "MAIL"
               : s->replies == 2 ? "RCPT"
                                 : "DATA");
        if (s->replies == 3)
            message_content(s);
        break;
    case SRC_DOT:
        expect(s, line, "250", "end of data");
        done_messages++;
        message_next(s);
        break;
    case SRC_QUIT:
        expect(s, line, "221", "QUIT");
        connection_end(s);
        break;
    }
}

static void session_read(struct bufferevent *bev, void *arg)
{
    struct source_session *s = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t n;

    while (s->bev == bev &&
           (line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF)) != NULL) {
        if (n < 3) {
            fail(s, "reply", line);
        } else if (n > 3 && line[3] == '-') {
            if (strncmp(line + 4, "STARTTLS", 8) == 0)
                s->starttls_seen = 1;
        } else {
            reply(s, line);
        }
        free(line);
    }
}

static void session_event(struct bufferevent *bev, short what, void *arg)
{
    struct source_session *s = arg;
    unsigned long err;

    if (what & BEV_EVENT_CONNECTED) {
        if (s->ssl == NULL)
            return; /* TCP is up: the greeting comes */
        handshakes++;
        if (SSL_session_reused(s->ssl))
            resumed++;
        send_text(s, "EHLO source.sluice-bench.test\r\n");
        s->state = SRC_TLS_EHLO;
        return;
    }
    err = bufferevent_get_openssl_error(bev);
    if (err != 0)
        fail(s, "TLS", ERR_reason_error_string(err));
    fail(s, "connection",
         (what & BEV_EVENT_EOF)
             ? "closed by the server"
             : evutil_socket_error_to_string(
                   evutil_socket_geterror(bufferevent_getfd(bev))));
}

static void session_connect(struct source_session *s)
{
    int one = 1;

    s->quota = messages - reserved < per_connection ? (int)(messages - reserved)
                                                    : per_connection;
    reserved += s->quota;
    connections++;
    s->bev =
        bufferevent_socket_new(base, -1, plaintext ? BEV_OPT_CLOSE_ON_FREE : 0);
    if (s->bev == NULL)
        util_panic("tls_source: bufferevent_socket_new failed");
    s->state = SRC_GREETING;
    s->starttls_seen = 0;
    s->sent = 0;
    bufferevent_setcb(s->bev, session_read, NULL, session_event, s);
    bufferevent_enable(s->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(s->bev, (struct sockaddr *)&server,
                                   server_len) != 0)
        fail(s, "connect", server_name);
    /* commands are whole when written: no Nagle delay behind a delayed
     * ACK */
    setsockopt(bufferevent_getfd(s->bev), IPPROTO_TCP, TCP_NODELAY, &one,
               sizeof(one));
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: tls_source [-s SESSIONS] [-m MESSAGES] "
            "[-k PER_CONNECTION] [-l BYTES] [-d DOMAINS] [-r PREFIX] [-n] "
            "[-P] ADDR:PORT\n");
    exit(2);
}

static int count_arg(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v <= 0 || v > 100000000)
        usage();
    return (int)v;
}

int main(int argc, char **argv)
{
    int sessions = 20, ch;
    double start, secs;

    while ((ch = getopt(argc, argv, "s:m:k:l:d:r:nP")) != -1) {
        switch (ch) {
        case 's':
            sessions = count_arg(optarg);
            break;
        case 'm':
            messages = count_arg(optarg);
            break;
        case 'k':
            per_connection = count_arg(optarg);
            break;
        case 'l':
            bytes = count_arg(optarg);
            break;
        case 'd':
            domains = count_arg(optarg);
            break;
        case 'r':
            prefix = optarg;
            break;
        case 'P':
            plaintext = 1;
            break;
        case 'n':
            resume = 0;
            break;
        default:
            usage();
        }
    }
    if (argc - optind != 1)
        usage();
    server_name = argv[optind];
    if (evutil_parse_sockaddr_port(server_name, (struct sockaddr *)&server,
                                   &server_len) != 0)
        usage();
    signal(SIGPIPE, SIG_IGN);
    ssl_ctx = SSL_CTX_new(TLS_client_method());
    if (ssl_ctx == NULL)
        util_panic("tls_source: SSL_CTX_new failed");
    SSL_CTX_set_min_proto_version(ssl_ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ssl_ctx, SSL_VERIFY_NONE, NULL);
    /* sessions are kept by hand (connection_end), not in a cache */
    SSL_CTX_set_session_cache_mode(ssl_ctx, SSL_SESS_CACHE_CLIENT |
                                                SSL_SESS_CACHE_NO_INTERNAL);
    if (!resume)
        SSL_CTX_set_options(ssl_ctx, SSL_OP_NO_TICKET);
    body = body_make();
    base = event_base_new();
    if (base == NULL)
        util_panic("tls_source: event_base_new failed");

    /* no more sessions than connections' worth of messages */
    start = now();
    for (int i = 0; i < sessions && reserved < messages; i++) {
        struct source_session *s = xcalloc(1, sizeof(*s));

        s->id = i + 1;
        sessions_left++;
        session_connect(s);
    }
    event_base_dispatch(base);
    secs = now() - start;

    if (done_messages != messages) {
        fprintf(stderr, "tls_source: %ld of %ld messages sent\n", done_messages,
                messages);
        return 1;
    }
    printf("tls_source: %ld messages in %.3f s = %.0f msg/s; %lu "
           "connections, %lu handshakes, %lu resumed\n",
           done_messages, secs, secs > 0 ? done_messages / secs : 0.0,
           connections, handshakes, resumed);
    event_base_free(base);
    SSL_CTX_free(ssl_ctx);
    free(body);
    return 0;
}
