/*
 * NAME
 *	test_ingress_starttls 1 - unit tests of the SMTP server's TLS
 * SYNOPSIS
 *	build/tests/test_ingress_starttls
 * DESCRIPTION
 *	Tests src/ingress/starttls.c, and the TLS parts of session.c,
 *	deadline.c, receive.c and smtpd.c, on smtpd_fixture.h's sessions:
 *	the client's end of the socket pair turns to TLS with OpenSSL in
 *	this thread, the loop pumped between its steps. The certificates
 *	come from tests/integration/lib/tls_ca.sh (run from the top of the
 *	tree). What a real client sees (s_client, swaks, Python's ssl) is
 *	tests/integration/smtpd_tls.sh's.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "smtpd_fixture.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>

static char dir[64];
static char cert[128], key[128], none[128];
static SSL_CTX *client_ctx;

static int group_setup(void **state)
{
    char cmd[256], ca[128];

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/sluice-starttls.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(cmd, sizeof(cmd),
             "sh tests/integration/lib/tls_ca.sh %s >/dev/null", dir);
    if (system(cmd) != 0)
        return -1;
    snprintf(cert, sizeof(cert), "%s/server.pem", dir);
    snprintf(key, sizeof(key), "%s/server.key", dir);
    snprintf(none, sizeof(none), "%s/none.pem", dir);
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    client_ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_verify(client_ctx, SSL_VERIFY_PEER, NULL);
    return SSL_CTX_load_verify_locations(client_ctx, ca, NULL) == 1 ? 0 : -1;
}

static int group_teardown(void **state)
{
    char cmd[128];

    (void)state;
    SSL_CTX_free(client_ctx);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* The fixture's server, with a certificate. */
static int tls_setup(void **state)
{
    setup(state);
    params.tls_cert_file = cert;
    params.tls_key_file = key;
    params.tls_level = "";
    params.starttls_timeout_ms = 5000;
    return 0;
}

static const char ehlo_tls[] = "250-mx.test\r\n"
                               "250-PIPELINING\r\n"
                               "250-SIZE 1000\r\n"
                               "250-ETRN\r\n"
                               "250-STARTTLS\r\n"
                               "250-ENHANCEDSTATUSCODES\r\n"
                               "250-8BITMIME\r\n"
                               "250-DSN\r\n"
                               "250 CHUNKING\r\n";

/* An SSL call on the client's side, retried while the loop runs. */
static int tls_retry(SSL *ssl, int rc)
{
    int err = SSL_get_error(ssl, rc);

    if (err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE)
        return 0;
    event_base_loop(base, EVLOOP_NONBLOCK);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    return 1;
}

/* The client's handshake on fd; NULL when it failed (2 s at most). */
static SSL *tls_connect(int fd)
{
    SSL *ssl = SSL_new(client_ctx);
    int rc;

    SSL_set_fd(ssl, fd);
    SSL_set_tlsext_host_name(ssl, "localhost");
    for (int i = 0; i < 2000; i++) {
        if ((rc = SSL_connect(ssl)) == 1)
            return ssl;
        if (!tls_retry(ssl, rc))
            break;
    }
    ERR_clear_error();
    SSL_free(ssl);
    return NULL;
}

static void tls_put(SSL *ssl, const char *text)
{
    int rc;

    for (int i = 0; i < 2000; i++) {
        if ((rc = SSL_write(ssl, text, (int)strlen(text))) > 0)
            return;
        if (!tls_retry(ssl, rc))
            break;
    }
    fail_msg("SSL_write failed");
}

/* Exactly text next, in TLS. */
static void tls_expect(SSL *ssl, const char *text)
{
    char buf[4096];
    size_t got = 0, want = strlen(text);
    int rc;

    assert_true(want < sizeof(buf));
    for (int i = 0; i < 2000 && got < want; i++) {
        if ((rc = SSL_read(ssl, buf + got, (int)(want - got))) > 0)
            got += (size_t)rc;
        else if (!tls_retry(ssl, rc))
            break;
    }
    buf[got] = 0;
    assert_string_equal(buf, text);
}

static void tls_chat(SSL *ssl, const char *send, const char *reply)
{
    tls_put(ssl, send);
    tls_expect(ssl, reply);
}

static void tls_close(SSL *ssl, int fd)
{
    SSL_free(ssl);
    close(fd);
}

/* A session in TLS after STARTTLS and a new EHLO. */
static SSL *tls_session(int *fd)
{
    SSL *ssl;

    *fd = connect_from("127.0.0.1");
    expect(*fd, greeting);
    chat(*fd, "EHLO client.test\r\n", ehlo_tls);
    chat(*fd, "STARTTLS\r\n", "220 2.0.0 Ready to start TLS\r\n");
    ssl = tls_connect(*fd);
    assert_non_null(ssl);
    tls_chat(ssl, "EHLO client.test\r\n", ehlo_reply);
    return ssl;
}

/* ------------------------------------------------------------ tests */

/* RFC 3207 4: STARTTLS in EHLO with a certificate; none without. */
static void test_offer(void **state)
{
    int fd;

    (void)state;
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_tls);
    chat(fd, "STARTTLS now\r\n", "501 5.5.4 Syntax: STARTTLS\r\n");
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    expect_close(fd, "");
    smtpd_server_free(server);
    server = NULL;
    params.tls_level = "none";
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_reply);
    chat(fd, "STARTTLS\r\n", "502 5.5.1 Error: command not implemented\r\n");
    close(fd);
}

/*
 * CVE-2011-0411: what came with STARTTLS in clear text is not run; RFC
 * 3207 4.2: the client starts again from EHLO, with no transaction.
 */
static void test_pipelined_input_dropped(void **state)
{
    int fd = connect_from("127.0.0.1");
    SSL *ssl;

    (void)state;
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_tls);
    chat(fd, "MAIL FROM:<a@client.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "STARTTLS\r\nRCPT TO:<x@relay.test>\r\n",
         "220 2.0.0 Ready to start TLS\r\n");
    ssl = tls_connect(fd);
    assert_non_null(ssl);
    tls_chat(ssl, "MAIL FROM:<a@client.test>\r\n",
             "503 5.5.1 Error: send HELO/EHLO first\r\n");
    tls_chat(ssl, "EHLO client.test\r\n", ehlo_reply);
    tls_chat(ssl, "RCPT TO:<x@relay.test>\r\n",
             "503 5.5.1 Error: need MAIL command\r\n");
    tls_chat(ssl, "MAIL FROM:<a@client.test>\r\n", "250 2.1.0 Ok\r\n");
    tls_chat(ssl, "STARTTLS\r\n", "503 5.5.1 Error: TLS already active\r\n");
    tls_chat(ssl, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    tls_close(ssl, fd);
    spin(50);
    assert_true(
        was_logged("improper command pipelining after STARTTLS "
                   "from unknown[127.0.0.1]: RCPT TO:<x@relay.test>??"));
    assert_true(was_logged("Anonymous TLS connection established from "
                           "unknown[127.0.0.1]: TLSv1.3 with cipher "
                           "TLS_AES_256_GCM_SHA384 (256/256 bits) "
                           "key-exchange X25519 server-signature RSA-PSS "
                           "(2048 bits) server-digest SHA256"));
}

/* encrypt: no MAIL in clear text; in TLS, the message and Received:. */
static void test_encrypt_and_received(void **state)
{
    static const char received[] =
        "Received: from client.test (unknown [127.0.0.1])\r\n"
        "\t(using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 "
        "bits)\r\n"
        "\t key-exchange X25519 server-signature RSA-PSS (2048 bits) "
        "server-digest SHA256)\r\n"
        "\t(No client certificate requested)\r\n"
        "\tby mx.test (sluice) with ESMTPS id ";
    int fd;
    SSL *ssl;

    (void)state;
    params.tls_level = "encrypt";
    params.tls_received_header = 1;
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_tls);
    chat(fd, "MAIL FROM:<a@client.test>\r\n",
         "530 5.7.0 Must issue a STARTTLS command first\r\n");
    close(fd);
    ssl = tls_session(&fd);
    tls_chat(ssl, "MAIL FROM:<a@client.test>\r\n", "250 2.1.0 Ok\r\n");
    tls_chat(ssl, "RCPT TO:<x@relay.test>\r\n", "250 2.1.5 Ok\r\n");
    tls_chat(ssl, "DATA\r\n", "354 End data with <CR><LF>.<CR><LF>\r\n");
    tls_put(ssl, "Subject: in TLS\r\n\r\nhello\r\n.\r\n");
    tls_expect(ssl, "250 2.0.0 Ok: queued as ");
    tls_close(ssl, fd);
    spin(50);
    assert_int_equal(nstored, 1);
    assert_memory_equal(stored[0]->body, received, sizeof(received) - 1);
    assert_string_equal(after_received(stored[0]),
                        "Subject: in TLS\r\n\r\nhello\r\n");
}

/* Without smtpd_tls_received_header: ESMTPS, and no comment. */
static void test_received_plain(void **state)
{
    static const char received[] =
        "Received: from client.test (unknown [127.0.0.1])\r\n"
        "\tby mx.test (sluice) with ESMTPS id ";
    int fd;
    SSL *ssl;

    (void)state;
    ssl = tls_session(&fd);
    tls_chat(ssl, "MAIL FROM:<a@client.test>\r\n", "250 2.1.0 Ok\r\n");
    tls_chat(ssl, "RCPT TO:<x@relay.test>\r\n", "250 2.1.5 Ok\r\n");
    tls_chat(ssl, "BDAT 5 LAST\r\nhello", "250 2.0.0 Ok: queued as ");
    tls_close(ssl, fd);
    spin(50);
    assert_int_equal(nstored, 1);
    assert_memory_equal(stored[0]->body, received, sizeof(received) - 1);
}

/* A client that never finishes the handshake costs its session only. */
static void test_handshake_deadline(void **state)
{
    int other, fd;

    (void)state;
    params.starttls_timeout_ms = 300;

    other = connect_from("127.0.0.1");
    expect(other, greeting);
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "STARTTLS\r\n", "220 2.0.0 Ready to start TLS\r\n");
    put(fd, "\x16\x03"); /* the start of a record, and no more */
    expect_close_within(fd, "", 2000);
    assert_true(was_logged("SSL_accept error from unknown[127.0.0.1]: "
                           "Connection timed out"));
    assert_true(was_logged("lost connection after STARTTLS from "
                           "unknown[127.0.0.1]"));
    chat(other, "EHLO client.test\r\n", ehlo_tls);
    chat(other, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    expect_close(other, "");
}

/* Garbage instead of a ClientHello: that session ends, logged. */
static void test_garbage_hello(void **state)
{
    int fd;

    (void)state;
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "STARTTLS\r\n", "220 2.0.0 Ready to start TLS\r\n");
    put(fd, "EHLO client.test\r\nMAIL FROM:<a@client.test>\r\n");
    pump(fd, (char[256]){0}, 256, 0, 2000, &(int){0});
    assert_true(was_logged("SSL_accept error from unknown[127.0.0.1]: "
                           "error:"));
    assert_int_equal(smtpd_server_sessions(server), 0);
    close(fd);
}

/* Implicit TLS: the handshake first, then the greeting, in TLS. */
static void test_wrapped(void **state)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    int sv[2];
    SSL *ssl;

    (void)state;
    server_start();
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    assert_int_equal(smtpd_session_start_tls(
                         server, sv[1], (struct sockaddr *)&sin, sizeof(sin)),
                     0);
    ssl = tls_connect(sv[0]);
    assert_non_null(ssl);
    tls_expect(ssl, greeting);
    tls_chat(ssl, "EHLO client.test\r\n", ehlo_reply);
    tls_chat(ssl, "STARTTLS\r\n", "503 5.5.1 Error: TLS already active\r\n");
    tls_chat(ssl, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    tls_close(ssl, sv[0]);
    spin(50);
    assert_true(was_logged("disconnect from unknown[127.0.0.1] ehlo=1 "
                           "starttls=0/1 quit=1 commands=2/3"));
}

/* A reload with a bad certificate changes nothing; the errors. */
static void test_reload_and_errors(void **state)
{
    char why[512], want[512];
    int fd;
    SSL *ssl;

    (void)state;
    server_start();
    params.tls_cert_file = none;
    assert_int_equal(smtpd_server_params_set(server, &params, why, sizeof(why)),
                     -1);
    snprintf(want, sizeof(want),
             "smtpd_tls_cert_file %s: cannot read: No such file or "
             "directory",
             none);
    assert_string_equal(why, want);
    ssl = tls_session(&fd); /* the certificate in use stays */
    tls_close(ssl, fd);

    params.tls_cert_file = cert;
    params.tls_key_file = none;
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    params.tls_key_file = key;
    params.tls_level = "sometimes";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_tls_security_level: \"sometimes\" is "
                             "not one of none, may, encrypt (or empty)");
    params.tls_level = "encrypt";
    params.tls_cert_file = "";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_tls_security_level needs a certificate: "
                             "set smtpd_tls_cert_file or "
                             "smtpd_tls_chain_files");
    params.tls_level = "";
    params.tls_wrapper_listen = "127.0.0.1:2465";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_tls_wrapper_listen needs a certificate: "
                             "set smtpd_tls_cert_file or "
                             "smtpd_tls_chain_files");
    params.tls_cert_file = cert;
    params.tls_wrapper_listen = "127.0.0.1";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_tls_wrapper_listen: \"127.0.0.1\" is "
                             "not ADDRESS:PORT or [IPV6-ADDRESS]:PORT");
}

/* A reload that takes the certificate away: no STARTTLS, and implicit
 * TLS connections are closed rather than served in clear text. */
static void test_reload_without_certificate(void **state)
{
    struct sockaddr_in sin = {.sin_family = AF_INET};
    char why[512];
    int sv[2], fd;

    (void)state;
    server_start();
    params.tls_cert_file = "";
    params.tls_key_file = "";
    assert_int_equal(smtpd_server_params_set(server, &params, why, sizeof(why)),
                     0);
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_reply);
    chat(fd, "STARTTLS\r\n", "502 5.5.1 Error: command not implemented\r\n");
    close(fd);
    inet_pton(AF_INET, "127.0.0.1", &sin.sin_addr);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    assert_int_equal(smtpd_session_start_tls(
                         server, sv[1], (struct sockaddr *)&sin, sizeof(sin)),
                     -1);
    expect_close(sv[0], "");
    assert_true(was_logged("warning: no TLS certificate: connection from "
                           "unknown[127.0.0.1] closed"));
}

/* A stop while a client is in its handshake: the session just ends. */
static void test_close_in_handshake(void **state)
{
    int fd;

    (void)state;
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "STARTTLS\r\n", "220 2.0.0 Ready to start TLS\r\n");
    spin(20);
    smtpd_server_close(server);
    expect_close(fd, "");
    assert_int_equal(smtpd_server_sessions(server), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, tls_setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_offer),
        T(test_pipelined_input_dropped),
        T(test_encrypt_and_received),
        T(test_received_plain),
        T(test_handshake_deadline),
        T(test_garbage_hello),
        T(test_wrapped),
        T(test_reload_and_errors),
        T(test_reload_without_certificate),
        T(test_close_in_handshake),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
