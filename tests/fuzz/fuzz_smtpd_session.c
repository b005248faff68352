/*
 * NAME
 *	fuzz_smtpd_session 1 - libFuzzer target: a whole SMTP server session
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Each input is what one client sends, in one stream: it is written to
 *	one end of a socket pair whose other end is a session of a real
 *	server (src/ingress/smtpd.c, session.c, command.c, content.c,
 *	deadline.c, receive.c) on a
 *	libevent loop, the write side is then shut, and the loop runs until
 *	the session is over. Each input is played three times, once in each
 *	way of reading bare line ends (smtpd_forbid_bare_newline): the
 *	default, disconnect (client 127.0.0.1 of the first server);
 *	normalize (client 127.0.0.2, in that server's
 *	smtpd_forbid_bare_newline_exclusions); and reject (a second server,
 *	which also strips \001 and body NULs, message_strip_characters,
 *	and offers AUTH without TLS against a passwd-file of {PLAIN} users,
 *	with reject_sender_login_mismatch, no login map and no failure
 *	delay).
 *	The server relays for the client, stores every
 *	message at once, flushes ETRN at once, and has small limits (3
 *	recipients, 2000 bytes, 2100 bytes held in memory, line length 512,
 *	5 errors, 20 junk commands), so that inputs reach them. Under ASan and UBSan it checks what the server
 *	promises: no stored message holds a bare CR or LF (the smuggling
 *	defence, end to end, in every mode) or a NUL (or a \001 where it is
 *	stripped); each begins with its Received: header and is
 *	within the size limit plus that header; each has a sender and 1 to
 *	3 recipients; the client got exactly one "250 2.0.0 Ok: queued as"
 *	per stored message; and the session ends.
 */

#include "ingress/ingress.h"

#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct event_base *base;
static struct smtpd_server *servers[2]; /* disconnect (+exclusions), reject */
static long stored;
static int stripping; /* the server of this run strips \001 */

static void check_message(const struct spool_msg *m)
{
    int last_cr = 0;

    if (m->size < 10 || memcmp(m->body, "Received: ", 10) != 0)
        abort();
    if (m->size > 2000 + 1000)
        abort(); /* the limit, plus a Received: header */
    for (size_t i = 0; i < m->size; i++) {
        if (m->body[i] == 0 || (m->body[i] == 1 && stripping))
            abort(); /* NULs are refused, stripped bytes gone */
        if (m->body[i] == '\n' && !last_cr)
            abort();
        if (last_cr && m->body[i] != '\n')
            abort();
        last_cr = m->body[i] == '\r';
    }
    if (last_cr || m->sender == NULL || m->nrcpt < 1 || m->nrcpt > 3)
        abort();
}

static void store(void *ctx, struct spool_msg *m, const char *origin,
                  ingress_done_fn *done, void *conn)
{
    (void)ctx;
    (void)origin;
    check_message(m);
    stored++;
    done(conn, 0, "FUZZID", NULL);
    spool_msg_free(m);
}

static void flush(void *ctx, const struct smtp_node *node,
                  ingress_flushed_fn *done, void *conn)
{
    (void)ctx;
    done(conn, (long)strlen(node->domain), NULL);
}

static void setup(void)
{
    static const struct smtpd_ops ops = {.store = store, .flush = flush};
    struct smtpd_params p = {0};
    static const char users[] = "alice:{PLAIN}wonderland\nbob:{CLEAR}x\n";
    char why[256], passwd[] = "/tmp/fuzz_smtpd_passwd.XXXXXX";
    int fd;

    base = event_base_new();
    p.bare_exempt = "127.0.0.2/32"; /* normalize */
    p.listen = "";
    p.hostname = "mx.fuzz";
    p.mynetworks = "127.0.0.0/8";
    p.relay_domains = "relay.fuzz";
    p.queue_directory = "";
    p.size_limit = 2000;
    p.recipient_limit = 3;
    p.error_limit = 5;
    p.line_limit = 512;
    p.timeout_ms = 60000;
    p.junk_limit = 20;
    p.memory_limit = 2100; /* between the size limit and what DATA can add */
    servers[0] = smtpd_server_create(base, &p, &ops, why, sizeof(why));
    p.bare_exempt = "";
    p.bare_newline = "reject";
    p.bare_code = 550;
    p.strip_chars = "\\001\\0";
    /* the second server offers AUTH (PLAIN users: no worker thread) */
    if ((fd = mkstemp(passwd)) < 0 ||
        write(fd, users, sizeof(users) - 1) != (ssize_t)sizeof(users) - 1)
        abort();
    close(fd);
    p.sasl_auth_enable = 1;
    p.sasl_path = passwd;
    p.sender_restrictions = "reject_sender_login_mismatch";
    servers[1] = smtpd_server_create(base, &p, &ops, why, sizeof(why));
    unlink(passwd);
    if (servers[0] == NULL || servers[1] == NULL)
        abort();
}

/* Count "250 2.0.0 Ok: queued as" in what the client received. */
static long count_queued(const char *out, size_t len)
{
    static const char what[] = "250 2.0.0 Ok: queued as ";
    long n = 0;

    for (size_t i = 0; i + sizeof(what) - 1 <= len; i++)
        if ((i == 0 || out[i - 1] == '\n') &&
            memcmp(out + i, what, sizeof(what) - 1) == 0)
            n++;
    return n;
}

/* One session of client (host order) on server s, sending data. */
static void play(struct smtpd_server *s, uint32_t client, const uint8_t *data,
                 size_t size)
{
    struct sockaddr_in sin = {0};
    static char out[1 << 20];
    size_t got = 0, off = 0;
    int sv[2];

    stored = 0;
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
        abort();
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(client);
    if (smtpd_session_start(s, sv[1], (struct sockaddr *)&sin, sizeof(sin)) < 0)
        abort();
    for (int i = 0; i < 100000; i++) {
        ssize_t n;

        if (off < size) {
            n = write(sv[0], data + off, size - off);
            if (n > 0)
                off += (size_t)n;
            if (off == size)
                shutdown(sv[0], SHUT_WR);
        } else if (size == 0 && i == 0) {
            shutdown(sv[0], SHUT_WR);
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        while ((n = read(sv[0], out + got, sizeof(out) - 1 - got)) > 0)
            got += (size_t)n;
        if (off == size && smtpd_server_sessions(s) == 0)
            break;
    }
    if (smtpd_server_sessions(s) != 0)
        abort(); /* the session never ended */
    if (count_queued(out, got) != stored)
        abort();
    close(sv[0]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (base == NULL)
        setup();
    stripping = 0;
    play(servers[0], 0x7f000001, data, size); /* disconnect */
    play(servers[0], 0x7f000002, data, size); /* normalize */
    stripping = 1;
    play(servers[1], 0x7f000001, data, size); /* reject */
    return 0;
}
