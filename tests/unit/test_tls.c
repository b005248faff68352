/*
 * test_tls - the tls/ layer: server contexts from files and their
 * errors (tls/context.c), a handshake through the filter over a socket
 * pair and its summary in Postfix's words, a client that sends garbage
 * instead of a ClientHello (tls/session.c). The certificates come from
 * tests/integration/lib/tls_ca.sh, run from the top of the tree.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls/tls.h"

static char dir[64];

static int setup(void **state)
{
    char cmd[256];

    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as the daemon does */
    snprintf(dir, sizeof(dir), "/tmp/sluice-tls.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(cmd, sizeof(cmd),
             "sh tests/integration/lib/tls_ca.sh %s >/dev/null", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[128];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The context of cert and key (names in dir), or NULL with why. */
static struct tls_context *make(const char *cert, const char *key,
                                const char *chain, char *why, size_t len)
{
    char c[128] = "", k[128] = "", ch[128] = "";
    struct tls_files f = {c, k, ch};

    if (cert)
        snprintf(c, sizeof(c), "%s/%s", dir, cert);
    if (key)
        snprintf(k, sizeof(k), "%s/%s", dir, key);
    if (chain)
        snprintf(ch, sizeof(ch), "%s/%s", dir, chain);
    why[0] = 0;
    return tls_server_context_create("smtpd_tls", &f, why, len);
}

static void test_context_errors(void **state)
{
    char why[512], want[512];

    (void)state;
    assert_null(make("none.pem", "server.key", NULL, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_cert_file %s/none.pem: cannot read: No such file or "
             "directory",
             dir);
    assert_string_equal(why, want);

    assert_null(make("server.pem", "none.key", NULL, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_key_file %s/none.key: cannot read: No such file or "
             "directory",
             dir);
    assert_string_equal(why, want);

    assert_null(make("garbage.pem", "server.key", NULL, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_cert_file %s/garbage.pem: no "
             "certificate: ",
             dir);
    assert_memory_equal(why, want, strlen(want));

    assert_null(make("server.pem", "garbage.pem", NULL, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_key_file %s/garbage.pem: no private key: ", dir);
    assert_memory_equal(why, want, strlen(want));

    assert_null(make("server.pem", "wrong.key", NULL, why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_key_file %s/wrong.key: does not match the "
             "certificate in %s/server.pem",
             dir, dir);
    assert_string_equal(why, want);

    assert_null(make(NULL, NULL, "none.pem", why, sizeof(why)));
    snprintf(want, sizeof(want),
             "smtpd_tls_chain_files %s/none.pem: cannot read: No such file "
             "or directory",
             dir);
    assert_string_equal(why, want);

    assert_null(make(NULL, NULL, NULL, why, sizeof(why)));
    assert_string_equal(why, "smtpd_tls_cert_file: no certificate configured");
}

static void test_context_ok(void **state)
{
    struct tls_context *c;
    char why[512];

    (void)state;
    c = make("server.pem", "server.key", NULL, why, sizeof(why));
    assert_non_null(c);
    assert_ptr_equal(tls_context_ref(c), c);
    tls_context_free(c);
    tls_context_free(c);
    /* the key in the certificate's file (key_file empty) */
    c = make("chain.pem", NULL, NULL, why, sizeof(why));
    assert_non_null(c);
    tls_context_free(c);
    /* chain_files wins over the other two */
    c = make("none.pem", "none.key", "chain.pem", why, sizeof(why));
    assert_non_null(c);
    tls_context_free(c);
}

struct pair {
    struct event_base *base;
    struct bufferevent *server, *client;
    short server_event, client_event;
    char got[64];
};

static void server_event(struct bufferevent *bev, short what, void *arg)
{
    struct pair *p = arg;

    (void)bev;
    p->server_event = what;
    if (what & BEV_EVENT_CONNECTED)
        bufferevent_write(p->server, "250 over TLS\r\n", 14);
    else
        event_base_loopexit(p->base, NULL);
}

static void client_read(struct bufferevent *bev, void *arg)
{
    struct pair *p = arg;
    size_t n = bufferevent_read(bev, p->got, sizeof(p->got) - 1);

    p->got[n] = 0;
    event_base_loopexit(p->base, NULL);
}

static void client_event(struct bufferevent *bev, short what, void *arg)
{
    struct pair *p = arg;

    (void)bev;
    p->client_event = what;
    if (!(what & BEV_EVENT_CONNECTED))
        event_base_loopexit(p->base, NULL);
}

/* A server filter on one end of a socket pair; the other end's fd. */
static int server_side(struct pair *p, struct tls_context *c)
{
    int fds[2];
    struct bufferevent *under;

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    evutil_make_socket_nonblocking(fds[0]);
    evutil_make_socket_nonblocking(fds[1]);
    under = bufferevent_socket_new(p->base, fds[0], BEV_OPT_CLOSE_ON_FREE);
    p->server = tls_session_accept(c, under);
    assert_non_null(p->server);
    assert_true(tls_session_active(p->server));
    assert_false(tls_session_active(under));
    bufferevent_setcb(p->server, NULL, NULL, server_event, p);
    bufferevent_enable(p->server, EV_READ | EV_WRITE);
    return fds[1];
}

static void test_handshake(void **state)
{
    struct pair p = {0};
    struct tls_context *c;
    struct tls_summary sum;
    SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
    char why[512], ca[128];
    struct timeval limit = {10, 0};
    int fd;

    (void)state;
    p.base = event_base_new();
    c = make("server.pem", "server.key", NULL, why, sizeof(why));
    assert_non_null(c);
    fd = server_side(&p, c);
    tls_context_free(c); /* the session holds its own reference */
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    assert_int_equal(SSL_CTX_load_verify_locations(cctx, ca, NULL), 1);
    SSL_CTX_set_verify(cctx, SSL_VERIFY_PEER, NULL);
    p.client = bufferevent_openssl_socket_new(p.base, fd, SSL_new(cctx),
                                              BUFFEREVENT_SSL_CONNECTING,
                                              BEV_OPT_CLOSE_ON_FREE);
    bufferevent_setcb(p.client, client_read, NULL, client_event, &p);
    bufferevent_enable(p.client, EV_READ | EV_WRITE);
    event_base_loopexit(p.base, &limit);
    event_base_dispatch(p.base);
    if (p.server_event != BEV_EVENT_CONNECTED) {
        tls_session_error(p.server, why, sizeof(why));
        fprintf(stderr, "server %x client %x: %s\n", p.server_event,
                p.client_event, why);
    }
    assert_int_equal(p.server_event, BEV_EVENT_CONNECTED);
    assert_string_equal(p.got, "250 over TLS\r\n");
    tls_session_summary(p.server, &sum);
    assert_string_equal(sum.cipher, "TLSv1.3 with cipher "
                                    "TLS_AES_256_GCM_SHA384 (256/256 bits)");
    assert_string_equal(sum.details,
                        "key-exchange X25519 server-signature RSA-PSS (2048 "
                        "bits) server-digest SHA256");
    /* the last words reach the client before the filter is gone */
    bufferevent_write(p.server, "221 2.0.0 Bye\r\n", 15);
    tls_session_free(p.server);
    p.got[0] = 0;
    event_base_loopexit(p.base, &limit);
    event_base_dispatch(p.base);
    assert_string_equal(p.got, "221 2.0.0 Bye\r\n");
    bufferevent_free(p.client);
    SSL_CTX_free(cctx);
    event_base_free(p.base);
}

static void test_garbage(void **state)
{
    struct pair p = {0};
    struct tls_context *c;
    char why[512];
    struct timeval limit = {10, 0};
    static const char junk[] = "\x16\x09\x09garbage, not a ClientHello\r\n";
    int fd;

    (void)state;
    p.base = event_base_new();
    c = make("server.pem", "server.key", NULL, why, sizeof(why));
    fd = server_side(&p, c);
    assert_int_equal(write(fd, junk, sizeof(junk) - 1), sizeof(junk) - 1);
    event_base_loopexit(p.base, &limit);
    event_base_dispatch(p.base);
    assert_true(p.server_event & BEV_EVENT_ERROR);
    tls_session_error(p.server, why, sizeof(why));
    assert_memory_equal(why, "error:", 6);
    /* a client that goes away mid-handshake */
    tls_session_free(p.server);
    close(fd);
    p.server_event = 0;
    fd = server_side(&p, c);
    close(fd);
    event_base_loopexit(p.base, &limit);
    event_base_dispatch(p.base);
    assert_true(p.server_event & (BEV_EVENT_EOF | BEV_EVENT_ERROR));
    tls_session_error(p.server, why, sizeof(why));
    assert_string_equal(why, "lost connection");
    tls_session_free(p.server);
    tls_context_free(c);
    event_base_free(p.base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_errors),
        cmocka_unit_test(test_context_ok),
        cmocka_unit_test(test_handshake),
        cmocka_unit_test(test_garbage),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
