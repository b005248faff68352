/*
 * test_ingress_sign - DKIM signing where mail comes in (ingress/sign.c):
 * the SMTP server signs what a client in dkim_internal_hosts sends, the
 * field first, above the Received: header, and logs it as OpenDKIM does;
 * a client outside the list, or a From: without a key, is not signed
 * (logged with the reason); ingress_sign() signs a local submission in
 * place. The signatures themselves are dkim/'s (test_dkim) and are
 * verified by dkimpy in tests/integration/dkim.sh.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smtpd_fixture.h"

#include "dkim/dkim.h"
#include "spool/spool.h"

#include <openssl/evp.h>
#include <openssl/pem.h>

static char dir[] = "/tmp/test_ingress_sign.XXXXXX";
static struct dkim_keys *keys;

static int group_setup(void **state)
{
    char path[256], text[512], st[300], kt[300], why[512];
    EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    FILE *f;

    (void)state;
    if (mkdtemp(dir) == NULL || k == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/ed.pem", dir);
    if ((f = fopen(path, "w")) == NULL ||
        PEM_write_PrivateKey(f, k, NULL, NULL, 0, NULL, NULL) != 1)
        return -1;
    fclose(f);
    EVP_PKEY_free(k);
    snprintf(kt, sizeof(kt), "%s/KeyTable", dir);
    snprintf(text, sizeof(text), "ed x.test:sel:%s\n", path);
    if ((f = fopen(kt, "w")) == NULL || fputs(text, f) < 0)
        return -1;
    fclose(f);
    snprintf(st, sizeof(st), "%s/SigningTable", dir);
    if ((f = fopen(st, "w")) == NULL || fputs("x.test ed\n", f) < 0)
        return -1;
    fclose(f);
    keys = dkim_keys_load(st, kt, "relaxed/relaxed", why, sizeof(why));
    return keys == NULL ? -1 : 0;
}

static int group_teardown(void **state)
{
    char cmd[300];

    (void)state;
    dkim_keys_free(keys);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd);
}

static int sign_setup(void **state)
{
    setup(state);
    params.dkim = keys;
    params.dkim_hosts = "127.0.0.1/32";
    params.mynetworks = "127.0.0.0/8";
    return 0;
}

/* One message from address with this header section; stored[n - 1]. */
static const struct spool_msg *send_from(const char *address, const char *head)
{
    int fd = hello(address);

    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<a@far.test>\r\n", "250 2.1.5 Ok\r\n");
    chat(fd, "DATA\r\n", "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, head);
    put(fd, "\r\nbody\r\n.\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    close(fd);
    assert_true(nstored > 0);
    return stored[nstored - 1];
}

static void test_internal_client_signed(void **state)
{
    const struct spool_msg *m =
        send_from("127.0.0.1", "From: a@x.test\r\nSubject: hi\r\n");
    char line[128];

    (void)state;
    assert_memory_equal(m->body,
                        "DKIM-Signature: v=1; a=ed25519-sha256; "
                        "c=relaxed/relaxed; d=x.test; s=sel;",
                        74);
    /* the field, then sluice's Received: */
    assert_non_null(strstr(m->body, "\r\nReceived: from client.test"));
    assert_int_equal(m->size, strlen(m->body));
    snprintf(line, sizeof(line),
             "%s: DKIM-Signature field added (s=sel, "
             "d=x.test)",
             m->id);
    assert_true(was_logged(line));
}

static void test_outside_client_not_signed(void **state)
{
    const struct spool_msg *m =
        send_from("127.0.0.2", "From: a@x.test\r\nSubject: hi\r\n");

    (void)state;
    assert_memory_equal(m->body, "Received: ", 10);
    assert_null(strstr(m->body, "DKIM-Signature"));
    assert_false(was_logged("DKIM"));
}

static void test_no_key_not_signed(void **state)
{
    const struct spool_msg *m =
        send_from("127.0.0.1", "From: a@y.test\r\nSubject: hi\r\n");
    char line[128];

    (void)state;
    assert_memory_equal(m->body, "Received: ", 10);
    snprintf(line, sizeof(line),
             "%s: no DKIM signature: no signing table match for 'a@y.test'",
             m->id);
    assert_true(was_logged(line));
    /* two From: fields: not signed either */
    m = send_from("127.0.0.1", "From: a@x.test\r\nFrom: b@x.test\r\n");
    assert_memory_equal(m->body, "Received: ", 10);
}

static void test_local_submission(void **state)
{
    struct spool_msg *m = spool_msg_new();
    const char *text = "From: Joe <joe@X.TEST>\r\n\r\nhello\r\n";
    char note[256];

    (void)state;
    m->body = xstrdup(text);
    m->size = strlen(text);
    snprintf(m->id, sizeof(m->id), "LOCALID");
    assert_int_equal(
        ingress_sign(keys, m, 1, fake_log, NULL, note, sizeof(note)), 1);
    assert_true(
        was_logged("LOCALID: DKIM-Signature field added (s=sel, d=x.test)"));
    assert_memory_equal(m->body, "DKIM-Signature: v=1; ", 21);
    assert_int_equal(m->size, strlen(m->body));
    assert_string_equal(m->body + m->size - strlen(text), text);
    spool_msg_free(m);

    m = spool_msg_new();
    m->body = xstrdup("Subject: no from\r\n\r\nx\r\n");
    m->size = strlen(m->body);
    snprintf(m->id, sizeof(m->id), "NOFROM");
    assert_int_equal(
        ingress_sign(keys, m, 1, fake_log, NULL, note, sizeof(note)), 0);
    assert_true(was_logged("NOFROM: no DKIM signature: no single From: "
                           "address to choose a key by"));
    assert_string_equal(m->body, "Subject: no from\r\n\r\nx\r\n");
    spool_msg_free(m);
}

#define T(f) cmocka_unit_test_setup_teardown(f, sign_setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_internal_client_signed),
        T(test_outside_client_not_signed),
        T(test_no_key_not_signed),
        T(test_local_submission),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
