/*
 * test_sasl - src/sasl/: PLAIN and LOGIN messages (RFC 4616), Dovecot's
 * passwd-file lines and files, password checks against hashes made by
 * Dovecot's own "doveadm pw" (an independent implementation), and
 * conversations on an event loop against the passwd-file back end and
 * against a Dovecot auth socket that is missing or never answers.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "sasl/sasl.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* "secret", hashed by doveadm pw -s SCHEME -p secret */
#define SHA512_SECRET                                                          \
    "$6$5KeL07RkMZmJsGSm$ufm4.S0IdF62Xwa2t419tVBxa.MJsYtXjPphUINYwc4ToUFHPQn"  \
    "hSKLd6gkvRvvwmQeF0h1MQ3ZKt0FwG9VY80"
#define SHA256_SECRET                                                          \
    "$5$S6encImwhZ/w3oBO$Oz66EBo3YrNelVT.sB.1/Q.LO7aqeZet7FwXPDJOI//"
#define BLF_SECRET                                                             \
    "$2y$05$7Kl1DeRVkyi3miLQZaml4uDm94H4QpEEjLkmhZYIurstngJD7DJ26"

static char why[512];

static int plain(const char *msg, size_t len, char *user, char *pass)
{
    return sasl_plain_parse((const unsigned char *)msg, len, user, pass, why,
                            sizeof(why));
}

static void test_plain_parse(void **state)
{
    char user[SASL_FIELD_MAX + 1], pass[SASL_FIELD_MAX + 1];
    char big[600];

    (void)state;
    assert_int_equal(plain("\0alice\0wonderland", 17, user, pass), 0);
    assert_string_equal(user, "alice");
    assert_string_equal(pass, "wonderland");
    /* the authorization identity may be the authentication identity */
    assert_int_equal(plain("alice\0alice\0pw", 14, user, pass), 0);
    assert_string_equal(user, "alice");
    /* but nobody acts as another user */
    assert_int_equal(plain("bob\0alice\0pw", 12, user, pass), -1);
    assert_string_equal(why, "authorization identity differs from the "
                             "authentication identity");
    assert_int_equal(plain("alicex\0alice\0pw", 15, user, pass), -1);
    assert_int_equal(plain("alic\0alice\0pw", 13, user, pass), -1);
    assert_int_equal(plain("\0alice", 6, user, pass), -1);
    assert_string_equal(why, "malformed PLAIN response");
    assert_int_equal(plain("alice", 5, user, pass), -1);
    assert_int_equal(plain("", 0, user, pass), -1);
    assert_int_equal(plain("\0\0pw", 4, user, pass), -1);
    assert_string_equal(why, "empty authentication identity");
    assert_int_equal(plain("\0alice\0", 7, user, pass), -1);
    assert_string_equal(why, "empty password");
    /* a third NUL is in the password: refused */
    assert_int_equal(plain("\0alice\0pw\0x", 11, user, pass), -1);
    assert_string_equal(why, "invalid password");
    /* RFC 4616: at most 255 octets each */
    memset(big, 'a', sizeof(big));
    big[0] = 0;
    big[257] = 0;
    assert_int_equal(plain(big, 300, user, pass), -1);
    big[256] = 0; /* a user of 255 octets, a password of 43 */
    big[257] = 'a';
    assert_int_equal(plain(big, 300, user, pass), 0);
    assert_int_equal(strlen(user), 255);
}

static void test_login_field(void **state)
{
    char out[SASL_FIELD_MAX + 1];
    char big[300];

    (void)state;
    assert_int_equal(sasl_login_field((const unsigned char *)"bob", 3, out, why,
                                      sizeof(why)),
                     0);
    assert_string_equal(out, "bob");
    assert_int_equal(
        sasl_login_field((const unsigned char *)"", 0, out, why, sizeof(why)),
        -1);
    assert_int_equal(sasl_login_field((const unsigned char *)"a\0b", 3, out,
                                      why, sizeof(why)),
                     -1);
    memset(big, 'x', sizeof(big));
    assert_int_equal(sasl_login_field((const unsigned char *)big, 256, out, why,
                                      sizeof(why)),
                     -1);
}

static void test_secret_equal(void **state)
{
    (void)state;
    assert_true(sasl_secret_equal("wonderland", "wonderland"));
    assert_false(sasl_secret_equal("wonderlanD", "wonderland"));
    assert_false(sasl_secret_equal("wonder", "wonderland"));
    assert_false(sasl_secret_equal("wonderlandx", "wonderland"));
    assert_false(sasl_secret_equal("", "x"));
    assert_false(sasl_secret_equal("x", ""));
    assert_true(sasl_secret_equal("", ""));
}

static int line(const char *text, struct sasl_entry *e)
{
    return sasl_passwd_line(text, e, why, sizeof(why));
}

static void test_passwd_line(void **state)
{
    struct sasl_entry e;

    (void)state;
    assert_int_equal(line("alice:{PLAIN}wonderland", &e), 0);
    assert_string_equal(e.user, "alice");
    assert_int_equal(e.scheme, SASL_SCHEME_PLAIN);
    assert_string_equal(e.secret, "wonderland");
    /* Dovecot's further fields are ignored */
    assert_int_equal(
        line("a@b.test:{CLEAR}pw:1000:1000::/home/a::userdb_quota=1G", &e), 0);
    assert_string_equal(e.user, "a@b.test");
    assert_string_equal(e.secret, "pw");
    assert_int_equal(line("bob:{SHA512-CRYPT}" SHA512_SECRET, &e), 0);
    assert_int_equal(e.scheme, SASL_SCHEME_SHA512);
    assert_string_equal(e.secret, SHA512_SECRET);
    assert_int_equal(line("bob:{sha256-crypt}" SHA256_SECRET, &e), 0);
    assert_int_equal(e.scheme, SASL_SCHEME_SHA256);
    assert_int_equal(line("bob:{BLF-CRYPT}" BLF_SECRET, &e), 0);
    assert_int_equal(e.scheme, SASL_SCHEME_BLF);
    assert_int_equal(line("bob:{CRYPT}" SHA512_SECRET, &e), 0);
    assert_int_equal(e.scheme, SASL_SCHEME_CRYPT);
    /* no scheme: {CRYPT}, Dovecot's default for the file */
    assert_int_equal(line("bob:" BLF_SECRET, &e), 0);
    assert_int_equal(e.scheme, SASL_SCHEME_CRYPT);

    assert_int_equal(line("bob:{SSHA}abc", &e), -1);
    assert_string_equal(why, "unknown password scheme {SSHA} (sluice knows "
                             "PLAIN, CLEAR, CRYPT, SHA512-CRYPT, SHA256-"
                             "CRYPT, BLF-CRYPT)");
    assert_int_equal(line("bob:{CRAM-MD5}abc", &e), -1);
    assert_int_equal(line("bob:{SHA512-CRYPT}" BLF_SECRET, &e), -1);
    assert_string_equal(why, "a $2y$ hash where the scheme wants another");
    assert_int_equal(line("bob:{BLF-CRYPT}" SHA512_SECRET, &e), -1);
    assert_int_equal(line("bob:{SHA512-CRYPT}plain", &e), -1);
    assert_string_equal(why, "not a crypt(3) hash \"$id$...\"");
    assert_int_equal(line("bob:plaintext", &e), -1);
    assert_int_equal(line("bob:$9z$abc", &e), -1);
    assert_string_equal(why, "this system's libcrypt has no $9z$ hashes");
    assert_int_equal(line("bob:{SHA512-CRYPT}$6$a b$c", &e), -1);
    assert_int_equal(line("bob:{PLAIN}", &e), -1);
    assert_string_equal(why, "empty password");
    assert_int_equal(line("bob", &e), -1);
    assert_string_equal(why, "no password field");
    assert_int_equal(line(":{PLAIN}x", &e), -1);
    assert_string_equal(why, "no user name");
    assert_int_equal(line("b b:{PLAIN}x", &e), -1);
    assert_int_equal(line("bob:{PLAIN:x", &e), -1);
    assert_string_equal(why, "no \"}\" after the scheme's name");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_passwd_load(void **state)
{
    char path[] = "/tmp/test_sasl.XXXXXX";
    int fd = mkstemp(path);
    struct sasl_passwd *p;
    const struct sasl_entry *e;
    char expected[600];

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    write_file(path, "# users\n"
                     "alice:{PLAIN}wonderland\n"
                     "\n"
                     "Bob:{SHA512-CRYPT}" SHA512_SECRET "\n"
                     "carol:{BLF-CRYPT}" BLF_SECRET "::::::\n");
    p = sasl_passwd_load(path, why, sizeof(why));
    assert_non_null(p);
    assert_int_equal(sasl_passwd_count(p), 3);
    e = sasl_passwd_find(p, "bob"); /* Dovecot's %Lu: no case */
    assert_non_null(e);
    assert_string_equal(e->user, "Bob");
    assert_non_null(sasl_passwd_find(p, "ALICE"));
    assert_null(sasl_passwd_find(p, "dave"));
    assert_true(sasl_entry_verify(sasl_passwd_find(p, "alice"), "wonderland"));
    assert_false(sasl_entry_verify(sasl_passwd_find(p, "alice"), "Wonderland"));
    assert_true(sasl_entry_verify(e, "secret"));
    assert_false(sasl_entry_verify(e, "secreT"));
    assert_true(sasl_entry_verify(sasl_passwd_find(p, "carol"), "secret"));
    assert_false(sasl_entry_verify(sasl_passwd_find(p, "carol"), "wrong"));
    sasl_passwd_free(p);

    /* a bad line: the file and the line, and nothing is taken */
    write_file(path, "alice:{PLAIN}x\n"
                     "bob:{MD5}abc\n");
    assert_null(sasl_passwd_load(path, why, sizeof(why)));
    snprintf(expected, sizeof(expected),
             "%s, line 2: unknown password scheme {MD5} (sluice knows PLAIN, "
             "CLEAR, CRYPT, SHA512-CRYPT, SHA256-CRYPT, BLF-CRYPT)",
             path);
    assert_string_equal(why, expected);
    write_file(path, "alice:{PLAIN}x\nbob:{PLAIN}y\nALICE:{PLAIN}z\n");
    assert_null(sasl_passwd_load(path, why, sizeof(why)));
    snprintf(expected, sizeof(expected),
             "%s, line 3: user \"ALICE\" is also on line 1", path);
    assert_string_equal(why, expected);
    unlink(path);
    assert_null(sasl_passwd_load(path, why, sizeof(why)));
    /* an empty file is no users, which is allowed */
    write_file(path, "");
    p = sasl_passwd_load(path, why, sizeof(why));
    assert_non_null(p);
    assert_int_equal(sasl_passwd_count(p), 0);
    sasl_passwd_free(p);
    unlink(path);
}

/* ------------------------------------------------------ conversations */

static struct event_base *base;
static struct sasl_server *srv;
static char passwd_path[64];
static int nanswers;
static enum sasl_result result;
static char text[600];

static void answered(void *arg, enum sasl_result r, const char *t)
{
    (void)arg;
    nanswers++;
    result = r;
    snprintf(text, sizeof(text), "%s", t);
}

/* Run the loop until an answer came (at most ms). */
static void wait_answer(int ms)
{
    struct timeval tick = {0, 5000};

    for (int i = 0; i < ms / 5 && nanswers == 0; i++) {
        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
    assert_int_equal(nanswers, 1);
    nanswers = 0;
}

static int conv_setup(void **state)
{
    int fd;
    struct sasl_params p = {"passwd-file", passwd_path, 0, "smtp"};

    (void)state;
    snprintf(passwd_path, sizeof(passwd_path), "/tmp/test_sasl_pw.XXXXXX");
    fd = mkstemp(passwd_path);
    assert_true(fd >= 0);
    close(fd);
    write_file(passwd_path, "alice:{PLAIN}wonderland\n"
                            "bob:{SHA512-CRYPT}" SHA512_SECRET "\n"
                            "carol:{BLF-CRYPT}" BLF_SECRET "\n");
    base = event_base_new();
    srv = sasl_server_create(base, &p, why, sizeof(why));
    assert_non_null(srv);
    nanswers = 0;
    return 0;
}

static int conv_teardown(void **state)
{
    (void)state;
    sasl_server_free(srv);
    event_base_free(base);
    unlink(passwd_path);
    return 0;
}

static const struct sasl_client client = {"192.0.2.1", "192.0.2.25", 1};

static struct sasl_conv *start(const char *mech, const char *initial)
{
    return sasl_conv_start(srv, mech, initial, &client, answered, NULL);
}

static void test_conv_plain(void **state)
{
    struct sasl_conv *c;

    (void)state;
    /* "\0alice\0wonderland" */
    c = start("plain", "AGFsaWNlAHdvbmRlcmxhbmQ=");
    assert_int_equal(nanswers, 0); /* never from inside the call */
    wait_answer(1000);
    assert_int_equal(result, SASL_DONE);
    assert_string_equal(text, "alice");
    sasl_conv_free(c);
    /* without an initial response: an empty challenge, then the message */
    c = start("PLAIN", NULL);
    wait_answer(1000);
    assert_int_equal(result, SASL_MORE);
    assert_string_equal(text, "");
    sasl_conv_step(c, "AGJvYgBzZWNyZXQ="); /* "\0bob\0secret" */
    wait_answer(5000);
    assert_int_equal(result, SASL_DONE);
    assert_string_equal(text, "bob");
    sasl_conv_free(c);
    /* a wrong password for a hashed user */
    c = start("PLAIN", "AGJvYgB3cm9uZw=="); /* "\0bob\0wrong" */
    wait_answer(5000);
    assert_int_equal(result, SASL_FAIL);
    assert_string_equal(text, "authentication failure");
    assert_string_equal(sasl_conv_user(c), "bob");
    sasl_conv_free(c);
    /* a user who does not exist: the same answer */
    c = start("PLAIN", "AGRhdmUAeA=="); /* "\0dave\0x" */
    wait_answer(5000);
    assert_int_equal(result, SASL_FAIL);
    assert_string_equal(text, "authentication failure");
    sasl_conv_free(c);
    /* not base64, and a bad PLAIN message */
    c = start("PLAIN", "AGFsaWNl!");
    wait_answer(1000);
    assert_int_equal(result, SASL_BAD);
    assert_string_equal(text, "Cannot decode response");
    sasl_conv_free(c);
    c = start("PLAIN", "YWxpY2U="); /* "alice": no NULs */
    wait_answer(1000);
    assert_int_equal(result, SASL_FAIL);
    sasl_conv_free(c);
    /* mechanisms sluice does not offer */
    assert_null(start("CRAM-MD5", NULL));
    assert_null(start("GSSAPI", NULL));
}

static void test_conv_login(void **state)
{
    struct sasl_conv *c;

    (void)state;
    c = start("LOGIN", NULL);
    wait_answer(1000);
    assert_int_equal(result, SASL_MORE);
    assert_string_equal(text, "VXNlcm5hbWU6"); /* Username: */
    sasl_conv_step(c, "Y2Fyb2w=");             /* carol */
    wait_answer(1000);
    assert_int_equal(result, SASL_MORE);
    assert_string_equal(text, "UGFzc3dvcmQ6"); /* Password: */
    sasl_conv_step(c, "c2VjcmV0");             /* secret */
    wait_answer(5000);
    assert_int_equal(result, SASL_DONE);
    assert_string_equal(text, "carol");
    sasl_conv_free(c);
    /* the user name as the initial response */
    c = start("LOGIN", "YWxpY2U=");
    wait_answer(1000);
    assert_string_equal(text, "UGFzc3dvcmQ6");
    sasl_conv_step(c, "d3Jvbmc="); /* wrong */
    wait_answer(1000);
    assert_int_equal(result, SASL_FAIL);
    assert_string_equal(sasl_conv_user(c), "alice");
    sasl_conv_free(c);
    /* "=" is not a response to a challenge */
    c = start("LOGIN", NULL);
    wait_answer(1000);
    sasl_conv_step(c, "=");
    wait_answer(1000);
    assert_int_equal(result, SASL_BAD);
    sasl_conv_free(c);
}

/* A conversation freed while its hash is being checked: no answer. */
static void test_conv_free_in_flight(void **state)
{
    struct sasl_conv *c;

    (void)state;
    for (int i = 0; i < 20; i++) {
        c = start("PLAIN", "AGJvYgBzZWNyZXQ=");
        sasl_conv_free(c);
    }
    c = start("PLAIN", "AGNhcm9sAHNlY3JldA=="); /* carol secret */
    wait_answer(5000);
    assert_int_equal(result, SASL_DONE);
    assert_string_equal(text, "carol");
    sasl_conv_free(c);
    /* the server goes before a conversation: the conversation keeps it */
    c = start("PLAIN", "AGJvYgBzZWNyZXQ=");
    sasl_server_free(srv);
    srv = NULL;
    wait_answer(5000);
    assert_int_equal(result, SASL_DONE);
    sasl_conv_free(c);
}

/* The worker keeps the loop free: a bcrypt check takes the worker's
 * time, not the loop's. */
static void test_conv_loop_free(void **state)
{
    struct sasl_conv *c[8];
    struct timespec t0, t1, t2;
    double started, answered_ms;

    (void)state;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 8; i++)
        c[i] = start("PLAIN", "AGNhcm9sAHNlY3JldA==");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    for (int i = 0; i < 5000 / 5 && nanswers < 8; i++) {
        struct timeval tick = {0, 5000};

        event_base_loopexit(base, &tick);
        event_base_dispatch(base);
    }
    clock_gettime(CLOCK_MONOTONIC, &t2);
    assert_int_equal(nanswers, 8);
    assert_int_equal(result, SASL_DONE);
    nanswers = 0;
    /* starting took a small part of the eight checks' time */
    started = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    answered_ms =
        (t2.tv_sec - t0.tv_sec) * 1e3 + (t2.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(started * 4 < answered_ms);
    for (int i = 0; i < 8; i++)
        sasl_conv_free(c[i]);
}

static void test_server_create_errors(void **state)
{
    struct sasl_params p = {"cyrus", "/x", 0, "smtp"};
    (void)state;
    sasl_server_free(srv); /* the setup's */
    srv = NULL;
    assert_null(sasl_server_create(NULL, &p, why, sizeof(why)));
    assert_string_equal(why, "smtpd_sasl_type: \"cyrus\" is not one of "
                             "passwd-file, dovecot");
    p.type = "passwd-file";
    p.path = "";
    assert_null(sasl_server_create(NULL, &p, why, sizeof(why)));
    assert_string_equal(why, "smtpd_sasl_path: empty; smtpd_sasl_type = "
                             "passwd-file needs the passwd-file");
    p.path = "/nonexistent/passwd";
    assert_null(sasl_server_create(NULL, &p, why, sizeof(why)));
    assert_memory_equal(why, "smtpd_sasl_path: ", 17);
    assert_non_null(strstr(why, "/nonexistent/passwd"));
    /* checking only: the file is read, nothing runs */
    p.path = passwd_path;
    srv = sasl_server_create(NULL, &p, why, sizeof(why));
    assert_non_null(srv);
    assert_string_equal(sasl_server_type(srv), "passwd-file");
    sasl_server_free(srv);
    srv = NULL;
}

/* ------------------------------------------------------ dovecot trouble */

static void dovecot_server(const char *path, long timeout_ms)
{
    struct sasl_params p = {"dovecot", path, timeout_ms, "smtp"};

    sasl_server_free(srv);
    srv = sasl_server_create(base, &p, why, sizeof(why));
    assert_non_null(srv);
    assert_string_equal(sasl_server_type(srv), "dovecot");
}

static void test_dovecot_missing(void **state)
{
    struct sasl_conv *c;

    (void)state;
    dovecot_server("/nonexistent/auth-client", 1000);
    c = start("PLAIN", "AGFsaWNlAHdvbmRlcmxhbmQ=");
    wait_answer(1000);
    assert_int_equal(result, SASL_TEMP);
    assert_string_equal(text, "auth service /nonexistent/auth-client: No such "
                              "file or directory");
    sasl_conv_free(c);
}

/* A service that accepts and never answers: 454 in bounded time. */
static void test_dovecot_silent(void **state)
{
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    char path[64];
    int lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sasl_conv *c;
    struct timespec t0, t1;
    long ms;

    (void)state;
    snprintf(path, sizeof(path), "/tmp/test_sasl_dv.%ld", (long)getpid());
    unlink(path);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    assert_int_equal(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    assert_int_equal(listen(lfd, 5), 0);
    dovecot_server(path, 300);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    c = start("PLAIN", "AGFsaWNlAHdvbmRlcmxhbmQ=");
    wait_answer(3000);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    assert_int_equal(result, SASL_TEMP);
    assert_string_equal(text, "auth service: no answer in time");
    assert_true(ms >= 290 && ms < 2000);
    sasl_conv_free(c);
    close(lfd);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_parse),
        cmocka_unit_test(test_login_field),
        cmocka_unit_test(test_secret_equal),
        cmocka_unit_test(test_passwd_line),
        cmocka_unit_test(test_passwd_load),
        cmocka_unit_test_setup_teardown(test_conv_plain, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_conv_login, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_conv_free_in_flight, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_conv_loop_free, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_server_create_errors, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_dovecot_missing, conv_setup,
                                        conv_teardown),
        cmocka_unit_test_setup_teardown(test_dovecot_silent, conv_setup,
                                        conv_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
