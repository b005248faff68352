/*
 * test_deliver_dane - the SMTP client's DANE (RFC 7672) given TLSA
 * records, against tests/integration/lib/tls_receiver.py on loopback
 * with tls_ca.sh's certificates (localhost, signed by the test CA). The
 * records are made here from the certificates: DANE-EE(3) SPKI(1)
 * SHA2-256(1) of the server's key, DANE-TA(2) Cert(0) SHA2-256(1) of
 * the CA. What DNSSEC said is given directly (struct deliver_dane); the
 * lookups are dns/'s and qmgr/'s business. A second receiver shows
 * tls_ca.sh's expired certificate (the same key as the server's).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deliver/deliver.h"

static char dir[64];
static pid_t receiver, receiver_expired;
static int port, port_good, port_expired;
static struct tls_context *ctx;
static unsigned char ee[32], ta[32], other_ee[32];

/* SHA2-256 of a certificate (selector 0) or its key (selector 1). */
static void digest(const char *file, int selector, unsigned char out[32])
{
    FILE *f = fopen(file, "r");
    X509 *x = f ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
    unsigned char *der = NULL;
    int len;
    unsigned int n = 32;

    assert_non_null(x);
    fclose(f);
    len = selector ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY(x), &der)
                   : i2d_X509(x, &der);
    assert_true(len > 0);
    assert_int_equal(EVP_Digest(der, (size_t)len, out, &n, EVP_sha256(), NULL),
                     1);
    OPENSSL_free(der);
    X509_free(x);
}

/* tls_receiver.py in DIR/NAME with the certificates CHAIN: its pid. */
static pid_t receiver_start(const char *name, const char *chain, int *p)
{
    char file[160];
    FILE *f;
    pid_t pid;

    if ((pid = fork()) == 0) {
        char d[128], cert[128], key[128];

        snprintf(d, sizeof(d), "%s/%s", dir, name);
        snprintf(cert, sizeof(cert), "%s/ca/%s", dir, chain);
        snprintf(key, sizeof(key), "%s/ca/server.key", dir);
        execl("/usr/bin/python3", "python3",
              "tests/integration/lib/tls_receiver.py", d, "good", cert, key,
              (char *)NULL);
        _exit(127);
    }
    snprintf(file, sizeof(file), "%s/%s/port", dir, name);
    for (int i = 0; i < 100 && (f = fopen(file, "r")) == NULL; i++)
        usleep(100000);
    if (f == NULL || fscanf(f, "%d", p) != 1)
        return -1;
    fclose(f);
    return pid;
}

static int group_setup(void **state)
{
    char cmd[400], file[128], why[256];
    struct tls_client_config cf = {0};

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    snprintf(dir, sizeof(dir), "/tmp/sluice-dane.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    /* RFC 7672 3.1.2: with DANE-TA the server sends the trust anchor */
    snprintf(cmd, sizeof(cmd),
             "sh tests/integration/lib/tls_ca.sh %s/ca && cd %s/ca && "
             "cat server.pem ca.pem >fullchain.pem && "
             "cat expired.pem ca.pem >expiredchain.pem",
             dir, dir);
    if (system(cmd) != 0)
        return -1;
    snprintf(file, sizeof(file), "%s/ca/server.pem", dir);
    digest(file, 1, ee);
    snprintf(file, sizeof(file), "%s/ca/ca.pem", dir);
    digest(file, 0, ta);
    snprintf(file, sizeof(file), "%s/ca/other.pem", dir);
    digest(file, 1, other_ee);
    if ((receiver = receiver_start("rx", "fullchain.pem", &port_good)) < 0 ||
        (receiver_expired =
             receiver_start("rx2", "expiredchain.pem", &port_expired)) < 0)
        return -1;
    port = port_good;
    /* no trust anchors at all: only DANE can make a certificate good */
    snprintf(file, sizeof(file), "%s/ca/rogue.pem", dir);
    cf.ca_file = file;
    ctx = tls_client_context_create(&cf, why, sizeof(why));
    return ctx ? 0 : -1;
}

static int group_teardown(void **state)
{
    char cmd[128];

    (void)state;
    tls_context_free(ctx);
    kill(receiver, SIGTERM);
    waitpid(receiver, NULL, 0);
    kill(receiver_expired, SIGTERM);
    waitpid(receiver_expired, NULL, 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct deliver_result *result;
static const char *host = "localhost"; /* the MX host's name */

static void done_cb(void *c, struct deliver_result *res)
{
    (void)c;
    result = res;
}

/* Messages the receiver stored so far. */
static int stored(void)
{
    char cmd[160];
    FILE *p;
    int n = -1;

    snprintf(cmd, sizeof(cmd), "ls %s/rx/ | grep -c eml", dir);
    p = popen(cmd, "r");
    if (p == NULL || fscanf(p, "%d", &n) != 1)
        n = -1;
    if (p)
        pclose(p);
    return n;
}

/* One delivery to localhost at level with the DANE data d (host set). */
static struct deliver_result *deliver(enum tls_level level,
                                      const struct deliver_dane *d)
{
    static const struct deliver_rcpt rcpt = {"a@dane.test", NULL, 0};
    struct event_base *base = event_base_new();
    struct deliver_request req = {0};
    struct deliver_addr addr = {0};
    struct sockaddr_in *sin = (struct sockaddr_in *)&addr.sa;

    snprintf(addr.host, sizeof(addr.host), "%s", host);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.salen = sizeof(*sin);
    req.proto = DELIVER_SMTP;
    req.helo_name = "client.test";
    req.sender = "s@client.test";
    req.rcpt = &rcpt;
    req.nrcpt = 1;
    req.body = util_blob_copy("Subject: dane\r\n\r\nhi\r\n", 21);
    req.addrs = &addr;
    req.naddrs = 1;
    req.session_limit = 2;
    req.timeouts = (struct deliver_timeouts){5000, 5000, 5000, 5000,
                                             5000, 5000, 5000, 5000};
    req.tls.ctx = ctx;
    req.tls.level = level;
    snprintf(req.tls.servername, sizeof(req.tls.servername), "hostname");
    snprintf(req.tls.nexthop, sizeof(req.tls.nexthop), "dane.test");
    req.tls.dane = d;
    req.tls.ndane = d ? 1 : 0;
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body);
    event_base_dispatch(base);
    event_base_free(base);
    assert_non_null(result);
    return result;
}

static struct deliver_dane records(const struct tls_tlsa *t, size_t n)
{
    struct deliver_dane d = {0};

    snprintf(d.host, sizeof(d.host), "%s", host);
    d.state = DELIVER_DANE_RECORDS;
    d.tlsa = t;
    d.ntlsa = n;
    return d;
}

/* RFC 7672 3.1.1: DANE-EE(3) SPKI(1) SHA2-256(1) of the server's key. */
static void test_dane_ee(void **state)
{
    struct tls_tlsa t = {3, 1, 1, ee, 32};
    struct deliver_dane d = records(&t, 1);
    struct deliver_result *r;
    int before = stored();

    (void)state;
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_true(r->tls.used);
    assert_string_equal(r->tls.word, "Verified");
    assert_int_equal(stored(), before + 1);
    deliver_result_free(r);
}

/* 3.1.2: DANE-TA(2) Cert(0) of the CA; the base domain "localhost" is
 * the reference identifier, and the certificate names it. */
static void test_dane_ta(void **state)
{
    struct tls_tlsa t = {2, 0, 1, ta, 32};
    struct deliver_dane d = records(&t, 1);
    struct deliver_result *r;

    (void)state;
    r = deliver(TLS_LEV_DANE_ONLY, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->tls.word, "Verified");
    deliver_result_free(r);
}

/* 3.2.2: with DANE-TA the certificate must name the TLSA base domain;
 * the CA is right, the name is not. (DANE-EE checks no name: 3.1.1.) */
static void test_dane_ta_wrong_name(void **state)
{
    struct tls_tlsa t = {2, 0, 1, ta, 32}, e = {3, 1, 1, ee, 32};
    struct deliver_dane d;
    struct deliver_result *r;

    (void)state;
    host = "mx.elsewhere.test";
    d = records(&t, 1);
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_non_null(strstr(r->rcpt[0].text, "Server certificate not verified"));
    deliver_result_free(r);
    d = records(&e, 1);
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    deliver_result_free(r);
    host = "localhost";
}

/* A record that matches nothing: TLS is mandatory and authentication
 * fails, so nothing is sent (2.2, "MUST NOT deliver"). */
static void test_dane_mismatch(void **state)
{
    struct tls_tlsa t = {3, 1, 1, other_ee, 32};
    struct deliver_dane d = records(&t, 1);
    struct deliver_result *r;
    int before = stored();

    (void)state;
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[0].enhanced, "4.7.5");
    assert_non_null(strstr(r->rcpt[0].text, "Server certificate not verified"));
    assert_int_equal(stored(), before);
    /* for TLS reporting (RFC 8460, 4.4): the kind, both addresses */
    assert_int_equal(r->ntls_fail, 1);
    assert_int_equal(r->tls_fail[0].kind, DELIVER_TLS_FAIL_DANE);
    assert_string_equal(r->tls_fail[0].host, "localhost");
    assert_string_equal(r->tls_fail[0].addr, "127.0.0.1");
    assert_string_equal(r->tls_fail[0].local, "127.0.0.1"); /* getsockname */
    deliver_result_free(r);
}

/* 3.1: PKIX-TA(0) and PKIX-EE(1) are unusable; with only those, TLS is
 * still mandatory, unauthenticated (encrypt). */
static void test_dane_unusable(void **state)
{
    struct tls_tlsa t = {1, 1, 1, ee, 32};
    struct deliver_dane d = records(&t, 1);
    struct deliver_result *r;

    (void)state;
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_true(r->tls.used);
    assert_string_equal(r->tls.word, "Untrusted");
    deliver_result_free(r);
}

/* 2.2: a TLSA lookup that failed makes the host unusable, even at dane;
 * dane-only cannot use a host without validated records; dane then is
 * opportunistic TLS. */
static void test_dane_no_records(void **state)
{
    struct deliver_dane d = {0};
    struct deliver_result *r;
    int before = stored();

    (void)state;
    snprintf(d.host, sizeof(d.host), "localhost");
    d.state = DELIVER_DANE_FAILED;
    snprintf(d.why, sizeof(d.why), "Host not found, try again");
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_non_null(
        strstr(r->rcpt[0].text, "TLSA lookup error for localhost:"));
    /* refused before a connection: no sending address */
    assert_int_equal(r->ntls_fail, 1);
    assert_int_equal(r->tls_fail[0].kind, DELIVER_TLS_FAIL_TLSA_LOOKUP);
    assert_string_equal(r->tls_fail[0].addr, "127.0.0.1");
    assert_string_equal(r->tls_fail[0].local, "");
    deliver_result_free(r);
    d.state = DELIVER_DANE_NONE;
    r = deliver(TLS_LEV_DANE_ONLY, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_non_null(
        strstr(r->rcpt[0].text, "has no DNSSEC-validated TLSA records"));
    deliver_result_free(r);
    assert_int_equal(stored(), before);
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->tls.word, "Untrusted"); /* may: not checked */
    deliver_result_free(r);
}

/* DANE-TA checks the chain, dates included: an expired certificate is
 * RFC 8460's "certificate-expired" (the reason says so). DANE-EE
 * ignores them (RFC 7672 3.1.1: "the expiration date ... is ignored"). */
static void test_dane_ta_expired(void **state)
{
    struct tls_tlsa t = {2, 0, 1, ta, 32}, e = {3, 1, 1, ee, 32};
    struct deliver_dane d = records(&t, 1);
    struct deliver_result *r;

    (void)state;
    port = port_expired;
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_DEFER);
    assert_non_null(strstr(r->rcpt[0].text, "certificate has expired"));
    assert_int_equal(r->ntls_fail, 1);
    assert_int_equal(r->tls_fail[0].kind, DELIVER_TLS_FAIL_EXPIRED);
    assert_string_equal(r->tls_fail[0].local, "127.0.0.1");
    deliver_result_free(r);
    d = records(&e, 1);
    r = deliver(TLS_LEV_DANE, &d);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->tls.word, "Verified");
    assert_int_equal(r->ntls_fail, 0);
    deliver_result_free(r);
    port = port_good;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dane_ee),
        cmocka_unit_test(test_dane_ta),
        cmocka_unit_test(test_dane_mismatch),
        cmocka_unit_test(test_dane_ta_wrong_name),
        cmocka_unit_test(test_dane_unusable),
        cmocka_unit_test(test_dane_no_records),
        cmocka_unit_test(test_dane_ta_expired),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
