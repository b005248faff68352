/*
 * test_ingress_auth - the SMTP server's AUTH (src/ingress/auth.c,
 * failures.c, restrict.c) against the passwd-file back end: what EHLO
 * offers, RFC 4954's replies and their order, PLAIN and LOGIN,
 * cancelling, bad base64, a response too long, the growing delay of
 * failed logins and smtpd_hard_error_limit, relaying when logged in,
 * smtpd_relay_restrictions and smtpd_sender_restrictions with
 * smtpd_sender_login_maps, the login in Received:, and a client that
 * goes away while its password is being checked.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "smtpd_fixture.h"

#include <signal.h>

/* "secret" hashed by doveadm pw -s SHA512-CRYPT */
#define SHA512_SECRET                                                          \
    "$6$5KeL07RkMZmJsGSm$ufm4.S0IdF62Xwa2t419tVBxa.MJsYtXjPphUINYwc4ToUFHPQn"  \
    "hSKLd6gkvRvvwmQeF0h1MQ3ZKt0FwG9VY80"

static char passwd[64], maps[64];

static const char ehlo_auth[] = "250-mx.test\r\n"
                                "250-PIPELINING\r\n"
                                "250-SIZE 1000\r\n"
                                "250-ETRN\r\n"
                                "250-AUTH PLAIN LOGIN\r\n"
                                "250-ENHANCEDSTATUSCODES\r\n"
                                "250-8BITMIME\r\n"
                                "250-DSN\r\n"
                                "250 CHUNKING\r\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int auth_setup(void **state)
{
    int fd;

    signal(SIGPIPE, SIG_IGN); /* as the daemon does */
    setup(state);
    snprintf(passwd, sizeof(passwd), "/tmp/test_auth_pw.XXXXXX");
    assert_true((fd = mkstemp(passwd)) >= 0);
    close(fd);
    write_file(passwd, "alice:{PLAIN}wonderland\n"
                       "bob:{SHA512-CRYPT}" SHA512_SECRET "\n");
    snprintf(maps, sizeof(maps), "/tmp/test_auth_maps.XXXXXX");
    assert_true((fd = mkstemp(maps)) >= 0);
    close(fd);
    write_file(maps, "alice@corp.test alice\n"
                     "@shared.test alice, bob\n");
    params.sasl_auth_enable = 1;
    params.sasl_type = "passwd-file";
    params.sasl_path = passwd;
    params.tls_auth_only = 0;
    params.sasl_delay_ms = 100;
    params.sasl_delay_limit_ms = 400;
    return 0;
}

static int auth_teardown(void **state)
{
    teardown(state);
    unlink(passwd);
    unlink(maps);
    return 0;
}

/* A session from address that has said EHLO (AUTH offered). */
static int ehlo(const char *address)
{
    int fd = connect_from(address);

    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", ehlo_auth);
    return fd;
}

/* "250 2.0.0 Ok: queued as ID" */
static void expect_queued(int fd)
{
    char buf[200];
    int eof;

    pump(fd, buf, sizeof(buf), 40, 2000, &eof);
    assert_memory_equal(buf, "250 2.0.0 Ok: queued as ", 24);
}

static void test_offer(void **state)
{
    int fd;
    char why[300];

    (void)state;
    fd = ehlo("192.0.2.1");
    close(fd);
    smtpd_server_free(server);
    server = NULL;
    /* not enabled: not offered, and AUTH is refused */
    params.sasl_auth_enable = 0;
    fd = hello("192.0.2.1");
    chat(fd, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n",
         "503 5.5.1 Error: authentication not enabled\r\n");
    close(fd);
    smtpd_server_free(server);
    server = NULL;
    /* only in TLS: a server without TLS cannot be made so */
    params.sasl_auth_enable = 1;
    params.tls_auth_only = 1;
    assert_null(smtpd_server_create(
        base, &params, &(struct smtpd_ops){.log = fake_log}, why, sizeof(why)));
    assert_string_equal(why, "smtpd_sasl_auth_enable: AUTH is offered only "
                             "in TLS (smtpd_tls_auth_only = yes) and the "
                             "server has no TLS: set smtpd_tls_cert_file, "
                             "or smtpd_tls_auth_only = no");
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    /* a passwd-file that is not there */
    params.tls_auth_only = 0;
    params.sasl_path = "/nonexistent/passwd";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_memory_equal(why, "smtpd_sasl_path: ", 17);
    assert_non_null(strstr(why, "/nonexistent/passwd"));
}

static void test_plain(void **state)
{
    int fd;

    (void)state;
    params.sasl_auth_header = 1;
    fd = ehlo("192.0.2.1");
    /* not in mynetworks, not logged in: no relaying */
    chat(fd, "MAIL FROM:<a@x.test>\r\nRCPT TO:<r@far.test>\r\nRSET\r\n",
         "250 2.1.0 Ok\r\n"
         "554 5.7.1 <r@far.test>: Relay access denied\r\n"
         "250 2.0.0 Ok\r\n");
    chat(fd, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n",
         "235 2.7.0 Authentication successful\r\n");
    chat(fd, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n",
         "503 5.5.1 Error: already authenticated\r\n");
    chat(fd,
         "MAIL FROM:<a@x.test>\r\nRCPT TO:<r@far.test>\r\n"
         "AUTH LOGIN\r\nDATA\r\n",
         "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
         "503 5.5.1 Error: MAIL transaction in progress\r\n"
         "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: t\r\n\r\nbody\r\n.\r\n");
    expect_queued(fd);
    assert_int_equal(nstored, 1);
    assert_non_null(strstr(stored[0]->body, "\r\n\t(Authenticated sender: "
                                            "alice)\r\n\tby mx.test (sluice) "
                                            "with ESMTPA id "));
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    close(fd);
    spin(50);
    assert_true(was_logged("disconnect from unknown[192.0.2.1] ehlo=1 "
                           "auth=1/3 mail=2 rcpt=1/2 data=1 rset=1 quit=1 "
                           "commands=8/11"));
}

static void test_plain_steps(void **state)
{
    int fd;

    (void)state;
    fd = ehlo("192.0.2.1");
    chat(fd, "AUTH PLAIN\r\n", "334 \r\n");
    chat(fd, "AGJvYgBzZWNyZXQ=\r\n", "235 2.7.0 Authentication successful\r\n");
    close(fd);
    /* without the header: ESMTPA alone */
    fd = ehlo("192.0.2.1");
    chat(fd,
         "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nMAIL FROM:<a@x.test>\r\n"
         "RCPT TO:<r@far.test>\r\nDATA\r\n",
         "235 2.7.0 Authentication successful\r\n250 2.1.0 Ok\r\n"
         "250 2.1.5 Ok\r\n354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: t\r\n\r\nbody\r\n.\r\n");
    expect_queued(fd);
    assert_null(strstr(stored[0]->body, "Authenticated sender"));
    assert_non_null(strstr(stored[0]->body, "with ESMTPA id "));
    close(fd);
}

static void test_login(void **state)
{
    int fd;

    (void)state;
    fd = ehlo("192.0.2.1");
    chat(fd, "AUTH LOGIN\r\n", "334 VXNlcm5hbWU6\r\n");
    chat(fd, "Ym9i\r\n", "334 UGFzc3dvcmQ6\r\n");
    chat(fd, "c2VjcmV0\r\n", "235 2.7.0 Authentication successful\r\n");
    close(fd);
    fd = ehlo("192.0.2.1");
    chat(fd, "auth login YWxpY2U=\r\n", "334 UGFzc3dvcmQ6\r\n");
    chat(fd, "d29uZGVybGFuZA==\r\n", "235 2.7.0 Authentication successful\r\n");
    close(fd);
}

static void test_refusals(void **state)
{
    int fd;
    char line[3000];

    (void)state;
    fd = connect_from("192.0.2.1");
    expect(fd, greeting);
    chat(fd, "AUTH PLAIN\r\n", "503 5.5.1 Error: send HELO/EHLO first\r\n");
    chat(fd, "EHLO client.test\r\n", ehlo_auth);
    chat(fd, "AUTH\r\n", "501 5.5.4 Syntax: AUTH mechanism\r\n");
    chat(fd, "AUTH CRAM-MD5\r\n",
         "504 5.5.4 Unrecognized authentication type\r\n");
    chat(fd, "AUTH LOGIN\r\n", "334 VXNlcm5hbWU6\r\n");
    chat(fd, "*\r\n", "501 5.7.0 Authentication aborted\r\n");
    chat(fd, "AUTH PLAIN AGFsaWNl!!\r\n",
         "501 5.5.2 Cannot decode response\r\n");
    chat(fd, "AUTH PLAIN\r\n", "334 \r\n");
    chat(fd, "not base64\r\n", "501 5.5.2 Cannot decode response\r\n");
    /* a response longer than line_length_limit (512 here) */
    chat(fd, "AUTH PLAIN\r\n", "334 \r\n");
    memset(line, 'A', sizeof(line));
    memcpy(line + sizeof(line) - 3, "\r\n", 3);
    chat(fd, line, "500 5.5.6 Authentication Exchange line is too long\r\n");
    /* the session goes on */
    chat(fd, "NOOP\r\n", "250 2.0.0 Ok\r\n");
    close(fd);
    spin(50);
    assert_true(was_logged("warning: unknown[192.0.2.1]: SASL LOGIN "
                           "authentication aborted"));
}

static long timed_chat(int fd, const char *send, const char *reply)
{
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    chat(fd, send, reply);
    return elapsed_ms(&t0);
}

/* Failed logins: 535 after a delay that doubles per address. */
static void test_failure_delay(void **state)
{
    static const char fail[] =
        "535 5.7.8 Error: authentication failed: authentication failure\r\n";
    int fd, other;
    long ms;

    (void)state;
    params.error_limit = 4;
    fd = ehlo("192.0.2.7");
    ms = timed_chat(fd, "AUTH PLAIN AGFsaWNlAHg=\r\n", fail);
    assert_true(ms >= 95 && ms < 1000);
    ms = timed_chat(fd, "AUTH PLAIN AGFsaWNlAHg=\r\n", fail);
    assert_true(ms >= 195 && ms < 1100);
    /* a hashed user's wrong password, and an unknown user: the same */
    ms = timed_chat(fd, "AUTH PLAIN AGJvYgB4\r\n", fail);
    assert_true(ms >= 395);
    assert_true(was_logged("warning: unknown[192.0.2.7]: SASL PLAIN "
                           "authentication failed: authentication failure, "
                           "sasl_username=bob"));
    /* another address is not slowed, and logs in at once */
    other = ehlo("192.0.2.8");
    ms = timed_chat(other, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n",
                    "235 2.7.0 Authentication successful\r\n");
    assert_true(ms < 300); /* a success is never delayed */
    close(other);
    /* the fourth error ends the session (smtpd_hard_error_limit) */
    ms = timed_chat(fd, "AUTH PLAIN AGRhdmUAeA==\r\n", fail);
    assert_true(ms >= 395); /* smtpd_sasl_failure_delay_limit */
    expect_close(fd, "421 4.7.0 mx.test Error: too many errors\r\n");
    close(fd);
}

/* The client goes while its password is checked, or in the delay. */
static void test_gone_mid_auth(void **state)
{
    int fd;

    (void)state;
    for (int i = 0; i < 5; i++) {
        char address[20];

        snprintf(address, sizeof(address), "192.0.2.%d", 30 + i);
        fd = ehlo(address);
        put(fd, i % 2 ? "AUTH PLAIN AGJvYgBzZWNyZXQ=\r\n"
                      : "AUTH PLAIN AGJvYgB3cm9uZw==\r\n");
        spin(i * 3);
        close(fd);
    }
    fd = ehlo("192.0.2.9");
    chat(fd, "AUTH LOGIN\r\n", "334 VXNlcm5hbWU6\r\n");
    close(fd); /* at the 334 */
    spin(600);
    fd = ehlo("192.0.2.10");
    chat(fd, "AUTH PLAIN AGJvYgBzZWNyZXQ=\r\n",
         "235 2.7.0 Authentication successful\r\n");
    close(fd);
}

static void test_relay_restrictions(void **state)
{
    int fd;
    char why[400];

    (void)state;
    params.relay_restrictions = "permit_sasl_authenticated, "
                                "defer_unauth_destination";
    fd = ehlo("127.0.0.1"); /* mynetworks no longer relays */
    chat(fd,
         "MAIL FROM:<a@x.test>\r\nRCPT TO:<r@far.test>\r\n"
         "RCPT TO:<r@relay.test>\r\n",
         "250 2.1.0 Ok\r\n454 4.7.1 <r@far.test>: Relay access denied\r\n"
         "250 2.1.5 Ok\r\n");
    close(fd);
    smtpd_server_free(server);
    server = NULL;
    params.relay_restrictions = "permit_mynetworks, reject_unath_destination";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(
        why, "smtpd_relay_restrictions: unknown restriction "
             "\"reject_unath_destination\" (sluice knows permit_mynetworks, "
             "permit_sasl_authenticated, reject_unauth_destination, "
             "defer_unauth_destination, permit, reject)");
    params.relay_restrictions = "permit_mynetworks";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_relay_restrictions: specify at least "
                             "one of reject_unauth_destination, "
                             "defer_unauth_destination or reject (an open "
                             "relay otherwise)");
    params.relay_restrictions = NULL;
    params.sender_restrictions = "reject_unauth_destination";
    assert_int_equal(smtpd_params_check(&params, why, sizeof(why)), -1);
    assert_memory_equal(why,
                        "smtpd_sender_restrictions: unknown restriction "
                        "\"reject_unauth_destination\"",
                        71);
}

static void test_sender_login_maps(void **state)
{
    int fd;

    (void)state;
    params.sender_restrictions = "reject_sender_login_mismatch";
    params.sender_login_maps = maps;
    fd = ehlo("192.0.2.1");
    /* not logged in: an owned address is refused, another is not */
    chat(fd,
         "MAIL FROM:<alice@corp.test>\r\nRCPT TO:<r@relay.test>\r\nRSET\r\n"
         "MAIL FROM:<x@else.test>\r\nRCPT TO:<r@relay.test>\r\nRSET\r\n",
         "250 2.1.0 Ok\r\n"
         "553 5.7.1 <alice@corp.test>: Sender address rejected: not logged "
         "in\r\n"
         "250 2.0.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.0.0 Ok\r\n");
    chat(fd, "AUTH PLAIN AGJvYgBzZWNyZXQ=\r\n",
         "235 2.7.0 Authentication successful\r\n");
    chat(fd,
         "MAIL FROM:<Alice@Corp.test>\r\nRCPT TO:<r@far.test>\r\nRSET\r\n"
         "MAIL FROM:<any@shared.test>\r\nRCPT TO:<r@far.test>\r\nRSET\r\n"
         "MAIL FROM:<x@else.test>\r\nRCPT TO:<r@far.test>\r\n",
         "250 2.1.0 Ok\r\n"
         "553 5.7.1 <Alice@Corp.test>: Sender address rejected: not owned "
         "by user bob\r\n"
         "250 2.0.0 Ok\r\n250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.0.0 Ok\r\n"
         "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n");
    close(fd);
    spin(20);
    assert_true(was_logged("NOQUEUE: reject: RCPT from unknown[192.0.2.1]: "
                           "553 5.7.1 <Alice@Corp.test>: Sender address "
                           "rejected: not owned by user bob; "
                           "from=<Alice@Corp.test> to=<r@far.test> "
                           "proto=ESMTP helo=<client.test>"));
}

/* The submission listener's server: MAIL only after AUTH. */
static void test_auth_required(void **state)
{
    int fd;

    (void)state;
    params.auth_required = 1;
    fd = ehlo("127.0.0.1"); /* even from mynetworks */
    chat(fd, "MAIL FROM:<a@x.test>\r\n",
         "530 5.7.0 Authentication required\r\n");
    chat(fd, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\nMAIL FROM:<a@x.test>\r\n",
         "235 2.7.0 Authentication successful\r\n250 2.1.0 Ok\r\n");
    close(fd);
}

/* A reload with a bad passwd-file is refused; the users in use stay. */
static void test_reload(void **state)
{
    int fd;
    char why[400];

    (void)state;
    server_start();
    write_file(passwd, "alice:{PLAIN}changed\nbob:{NTLM}x\n");
    assert_int_equal(smtpd_server_params_set(server, &params, why, sizeof(why)),
                     -1);
    assert_non_null(strstr(why, ", line 2: unknown password scheme {NTLM}"));
    fd = ehlo("192.0.2.1");
    chat(fd, "AUTH PLAIN AGFsaWNlAHdvbmRlcmxhbmQ=\r\n",
         "235 2.7.0 Authentication successful\r\n");
    close(fd);
    write_file(passwd, "alice:{PLAIN}changed\n");
    assert_int_equal(smtpd_server_params_set(server, &params, why, sizeof(why)),
                     0);
    fd = ehlo("192.0.2.1");
    chat(fd, "AUTH PLAIN AGFsaWNlAGNoYW5nZWQ=\r\n",
         "235 2.7.0 Authentication successful\r\n");
    close(fd);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, auth_setup, auth_teardown)
    const struct CMUnitTest tests[] = {
        T(test_offer),
        T(test_plain),
        T(test_plain_steps),
        T(test_login),
        T(test_refusals),
        T(test_failure_delay),
        T(test_gone_mid_auth),
        T(test_relay_restrictions),
        T(test_sender_login_maps),
        T(test_auth_required),
        T(test_reload),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
