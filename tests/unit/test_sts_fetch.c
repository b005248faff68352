/*
 * NAME
 *	test_sts_fetch 1 - MTA-STS policies fetched from a real HTTPS server
 * SYNOPSIS
 *	build/tests/test_sts_fetch
 * DESCRIPTION
 *	Runs tests/integration/lib/sts_peer.py, Python's http.server over
 *	its ssl module, on a loopback port with a certificate of a CA made
 *	for the run (tests/integration/lib/sts_ca.sh), and fetches
 *	policies from it through sts/ with libcurl on libevent: the name
 *	verified is mta-sts.DOMAIN, the connection goes to the peer
 *	(host_override). What the peer serves for each host is a file the
 *	test writes; it logs every request, so that the test counts the
 *	fetches the server saw. The quoted words are RFC 8461's.
 *
 *	The peer is stopped by its PID, and dies with the test
 *	(PR_SET_PDEATHSIG).
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <event2/event.h>

#include "spool/spool.h"
#include "sts/sts.h"
#include "util/util.h"

#define WHY 1024

static const char policy_ok[] = "version: STSv1\r\nmode: enforce\r\n"
                                "mx: mx1.ok.test\r\nmx: *.mx.ok.test\r\n"
                                "max_age: 86400\r\n";

/* The peer, for the whole run. */
static char dir[64];
static pid_t peer_pid;
static int peer_port;

static const char *python(void)
{
    return access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3"
                                                 : "python3";
}

static int read_port(void)
{
    char path[128], buf[16] = "";
    FILE *fp;

    snprintf(path, sizeof(path), "%s/port", dir);
    if ((fp = fopen(path, "r")) == NULL)
        return -1;
    if (fgets(buf, sizeof(buf), fp) == NULL)
        buf[0] = 0;
    fclose(fp);
    return atoi(buf) > 0 ? atoi(buf) : -1;
}

static int group_setup(void **state)
{
    char cmd[256];
    int64_t deadline;

    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/sluice-sts-fetch.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(cmd, sizeof(cmd),
             "sh tests/integration/lib/sts_ca.sh %s >/dev/null && "
             "mkdir %s/www",
             dir, dir);
    if (system(cmd) != 0)
        return -1;
    if ((peer_pid = fork()) < 0)
        return -1;
    if (peer_pid == 0) {
        int fd = open("/dev/null", O_RDWR);

        prctl(PR_SET_PDEATHSIG, SIGTERM);
        dup2(fd, 0);
        dup2(fd, 1);
        if (getenv("SLUICE_TEST_VERBOSE") == NULL)
            dup2(fd, 2);
        execlp(python(), python(), "tests/integration/lib/sts_peer.py", dir,
               (char *)NULL);
        _exit(127);
    }
    deadline = util_clock_mono_ms() + 10000;
    while ((peer_port = read_port()) < 0) {
        if (util_clock_mono_ms() > deadline ||
            waitpid(peer_pid, NULL, WNOHANG) == peer_pid) {
            fprintf(stderr, "sts_peer.py did not start\n");
            return -1;
        }
        usleep(20000);
    }
    return 0;
}

static int group_teardown(void **state)
{
    char cmd[128];

    (void)state;
    if (peer_pid > 0) {
        kill(peer_pid, SIGTERM);
        waitpid(peer_pid, NULL, 0);
    }
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* What the peer serves for mta-sts.NAME.test. */
static void serve(const char *name, const char *first_line, const char *body,
                  size_t len)
{
    char path[192];
    FILE *fp;

    snprintf(path, sizeof(path), "%s/www/mta-sts.%s.test", dir, name);
    assert_non_null(fp = fopen(path, "w"));
    fprintf(fp, "%s\n", first_line);
    fwrite(body, 1, len, fp);
    assert_int_equal(fclose(fp), 0);
}

/* Requests the peer saw for mta-sts.NAME.test. */
static int requests(const char *name)
{
    char path[128], line[512], host[128];
    FILE *fp;
    int n = 0;

    snprintf(path, sizeof(path), "%s/requests", dir);
    snprintf(host, sizeof(host), "mta-sts.%s.test ", name);
    if ((fp = fopen(path, "r")) == NULL)
        return 0;
    while (fgets(line, sizeof(line), fp))
        if (strncmp(line, host, strlen(host)) == 0)
            n++;
    fclose(fp);
    return n;
}

struct fx {
    struct event_base *base;
    char qdir[64];
    struct spool_config scf;
    struct spool *sp;
    struct sts_config cf;
    struct sts *s;
    int64_t now;
    char txt_id[40];
    char txt[64];
    int calls;
    int got_policy;
    struct sts_policy policy;
    char why[WHY];
};

static int64_t fx_clock(void *ctx)
{
    return ((struct fx *)ctx)->now;
}

struct later {
    struct fx *f;
    sts_txt_done_fn *done;
    void *ctx;
};

static void txt_later(evutil_socket_t fd, short what, void *arg)
{
    struct later *l = arg;
    const char *txt[1] = {l->f->txt};

    (void)fd;
    (void)what;
    snprintf(l->f->txt, sizeof(l->f->txt), "v=STSv1; id=%s", l->f->txt_id);
    if (l->f->txt_id[0])
        l->done(l->ctx, STS_TXT_OK, txt, 1);
    else
        l->done(l->ctx, STS_TXT_NONE, NULL, 0);
    free(l);
}

/* Every domain has the TXT record "v=STSv1; id=<txt_id>" (none if ""). */
static int fx_txt(void *ctx, const char *name, sts_txt_done_fn *done,
                  void *lookup_ctx)
{
    struct fx *f = ctx;
    struct later *l = malloc(sizeof(*l));
    struct timeval zero = {0, 0};

    (void)name;
    *l = (struct later){f, done, lookup_ctx};
    event_base_once(f->base, -1, EV_TIMEOUT, txt_later, l, &zero);
    return 0;
}

static void fx_start(struct fx *f)
{
    char why[WHY];

    if (f->sp == NULL &&
        spool_open(&f->sp, &f->scf, SPOOL_CREATE, why, sizeof(why)) < 0)
        fail_msg("spool_open: %s", why);
    f->cf.spool = f->sp;
    if ((f->s = sts_create(&f->cf, why, sizeof(why))) == NULL)
        fail_msg("sts_create: %s", why);
}

static void fx_stop(struct fx *f)
{
    sts_free(f->s);
    f->s = NULL;
    spool_close(f->sp);
    f->sp = NULL;
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    static char ca[128];

    f->base = event_base_new();
    snprintf(f->qdir, sizeof(f->qdir), "/tmp/sluice-sts-q.XXXXXX");
    if (mkdtemp(f->qdir) == NULL)
        return -1;
    snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
    f->scf.queue_directory = f->qdir;
    f->scf.map_size = 1 << 20;
    f->now = 1700000000;
    snprintf(f->txt_id, sizeof(f->txt_id), "20240101");
    f->cf.base = f->base;
    f->cf.txt = fx_txt;
    f->cf.txt_ctx = f;
    f->cf.clock = fx_clock;
    f->cf.clock_ctx = f;
    f->cf.ca_file = ca;
    f->cf.host_override = "127.0.0.1";
    f->cf.port = peer_port;
    f->cf.fetch_timeout_ms = 5000;
    f->cf.refresh_interval = -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[128];

    fx_stop(f);
    sts_policy_clear(&f->policy);
    event_base_free(f->base);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->qdir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static void got(void *ctx, const struct sts_policy *p, const char *why)
{
    struct fx *f = ctx;

    f->calls++;
    sts_policy_clear(&f->policy);
    f->got_policy = p != NULL;
    if (p)
        sts_policy_copy(&f->policy, p);
    snprintf(f->why, sizeof(f->why), "%s", why ? why : "");
}

static void ask(struct fx *f, const char *domain)
{
    int before = f->calls;

    assert_int_equal(sts_policy_get(f->s, domain, got, f), 0);
    while (f->calls == before)
        event_base_loop(f->base, EVLOOP_ONCE);
}

static struct sts_stats stats(struct fx *f)
{
    struct sts_stats st;

    sts_stats(f->s, &st);
    return st;
}

/* A policy fetched, checked, cached: the second question asks nobody. */
static void test_fetch_ok(void **state)
{
    struct fx *f = *state;

    serve("ok", "200 text/plain", policy_ok, strlen(policy_ok));
    fx_start(f);
    ask(f, "ok.test");
    assert_true(f->got_policy);
    assert_string_equal(f->why, "");
    assert_int_equal(f->policy.mode, STS_ENFORCE);
    assert_string_equal(f->policy.id, "20240101");
    assert_int_equal(f->policy.max_age, 86400);
    assert_int_equal(f->policy.fetched, f->now);
    assert_int_equal(f->policy.nmx, 2);
    assert_true(sts_mx_match(&f->policy, "mx1.ok.test"));
    assert_true(sts_mx_match(&f->policy, "a.mx.ok.test"));
    assert_false(sts_mx_match(&f->policy, "mx.ok.test"));
    assert_int_equal(requests("ok"), 1);
    ask(f, "ok.test");
    assert_true(f->got_policy);
    assert_int_equal(requests("ok"), 1);
    assert_int_equal(stats(f).fetches, 1);
    assert_int_equal(stats(f).fetches_ok, 1);
    assert_int_equal(stats(f).cache_hits, 1);
}

/* "text/plain" with parameters is text/plain. */
static void test_fetch_charset(void **state)
{
    struct fx *f = *state;

    serve("charset", "200 text/plain;charset=utf-8", policy_ok,
          strlen(policy_ok));
    fx_start(f);
    ask(f, "charset.test");
    assert_true(f->got_policy);
}

/*
 * The cache survives a restart (section 5.1): closed and reopened, the
 * policy is there with no request to the server, even while the TXT
 * record is gone.
 */
static void test_restart_keeps_policy(void **state)
{
    struct fx *f = *state;

    serve("restart", "200 text/plain", policy_ok, strlen(policy_ok));
    fx_start(f);
    ask(f, "restart.test");
    assert_true(f->got_policy);
    assert_int_equal(requests("restart"), 1);
    fx_stop(f);
    f->now += 3600;
    fx_start(f);
    assert_int_equal(stats(f).cached, 1);
    ask(f, "restart.test");
    assert_true(f->got_policy);
    assert_string_equal(f->policy.id, "20240101");
    assert_int_equal(f->policy.fetched, f->now - 3600);
    assert_string_equal(f->policy.mx[1], "*.mx.ok.test");
    f->txt_id[0] = 0;
    ask(f, "restart.test");
    assert_true(f->got_policy);
    assert_int_equal(requests("restart"), 1);
    assert_int_equal(stats(f).fetches, 0);
}

/*
 * "id: A short string used to track policy updates": a new id is a new
 * policy, fetched; it replaces the cached one.
 */
static void test_id_change_refetches(void **state)
{
    static const char testing[] = "version: STSv1\nmode: testing\n"
                                  "mx: mx2.moved.test\nmax_age: 600\n";
    struct fx *f = *state;

    serve("moved", "200 text/plain", policy_ok, strlen(policy_ok));
    fx_start(f);
    ask(f, "moved.test");
    assert_int_equal(f->policy.mode, STS_ENFORCE);
    serve("moved", "200 text/plain", testing, strlen(testing));
    ask(f, "moved.test"); /* the same id: the cached policy */
    assert_int_equal(f->policy.mode, STS_ENFORCE);
    assert_int_equal(requests("moved"), 1);
    snprintf(f->txt_id, sizeof(f->txt_id), "20240202");
    f->now += 10;
    ask(f, "moved.test");
    assert_int_equal(requests("moved"), 2);
    assert_true(f->got_policy);
    assert_int_equal(f->policy.mode, STS_TESTING);
    assert_string_equal(f->policy.id, "20240202");
    assert_int_equal(f->policy.max_age, 600);
    assert_int_equal(f->policy.fetched, f->now);
    assert_true(sts_mx_match(&f->policy, "mx2.moved.test"));
    assert_false(sts_mx_match(&f->policy, "mx1.ok.test"));
}

/* "Senders MUST NOT use a cached policy after its max_age": refetched. */
static void test_max_age_expiry_refetches(void **state)
{
    struct fx *f = *state;

    serve("expire", "200 text/plain", policy_ok, strlen(policy_ok));
    fx_start(f);
    ask(f, "expire.test");
    f->now += 86399;
    ask(f, "expire.test");
    assert_int_equal(requests("expire"), 1);
    f->now += 1;
    ask(f, "expire.test");
    assert_true(f->got_policy);
    assert_int_equal(requests("expire"), 2);
    assert_int_equal(f->policy.fetched, f->now);
}

/* A fetch that fails leaves no policy, with its reason. */
static void fetch_fails(struct fx *f, const char *name, const char *why)
{
    char domain[64];

    snprintf(domain, sizeof(domain), "%s.test", name);
    fx_start(f);
    ask(f, domain);
    assert_false(f->got_policy);
    if (strstr(f->why, why) == NULL)
        fail_msg("%s: \"%s\" does not say \"%s\"", domain, f->why, why);
    assert_int_equal(stats(f).fetches_failed, 1);
    assert_int_equal(stats(f).cached, 0);
}

/* "only valid if the HTTP response code is 200 (OK)". */
static void test_not_found(void **state)
{
    fetch_fails(*state, "notfound",
                "no MTA-STS policy: https://mta-sts.notfound.test/"
                ".well-known/mta-sts.txt: HTTP status 404");
    assert_int_equal(requests("notfound"), 1);
}

/*
 * "HTTP 3xx redirects MUST NOT be followed": the redirect points at the
 * same server, where a second request would be counted.
 */
static void test_redirect_not_followed(void **state)
{
    serve("redirect", "301 text/plain 0 https://mta-sts.redirect.test/policy",
          policy_ok, strlen(policy_ok));
    fetch_fails(*state, "redirect",
                "HTTP status 301 (redirects are not followed)");
    assert_int_equal(requests("redirect"), 1);
}

/* Senders "SHOULD validate that the media type is "text/plain"". */
static void test_wrong_content_type(void **state)
{
    serve("html", "200 text/html", policy_ok, strlen(policy_ok));
    fetch_fails(*state, "html", "Content-Type text/html, not text/plain");
}

/* "a limit on the maximum size of the response body". */
static void test_oversize_body(void **state)
{
    struct fx *f = *state;
    size_t len = 70000;
    char *big = malloc(len);

    memcpy(big, policy_ok, strlen(policy_ok));
    memset(big + strlen(policy_ok), '#', len - strlen(policy_ok));
    serve("big", "200 text/plain", big, len);
    f->cf.max_policy_bytes = 65536;
    fetch_fails(f, "big", "the policy is larger than 65536 bytes");
    /* Without a Content-Length, the body is cut off as it arrives. */
    serve("big", "200 !text/plain", big, len);
    free(big);
    sts_free(f->s);
    f->s = NULL;
    f->cf.max_policy_bytes = 1000;
    fetch_fails(f, "big", "the policy is larger than 1000 bytes");
    assert_int_equal(requests("big"), 2);
}

/* A 200 that is not a valid policy. */
static void test_invalid_policy(void **state)
{
    static const char no_mode[] = "version: STSv1\nmx: a.test\nmax_age: 9\n";

    serve("invalid", "200 text/plain", no_mode, strlen(no_mode));
    fetch_fails(*state, "invalid",
                "/.well-known/mta-sts.txt: invalid policy: "
                "no mode");
}

/*
 * The certificate "MUST present an X.509 certificate that is valid for
 * the "mta-sts" DNS-ID": the peer's names do not include
 * mta-sts.othername.test.
 */
static void test_certificate_other_name(void **state)
{
    fetch_fails(*state, "othername",
                "https://mta-sts.othername.test/.well-known/mta-sts.txt: SSL: "
                "no alternative certificate subject name matches target host "
                "name 'mta-sts.othername.test'");
    assert_int_equal(requests("othername"), 0);
}

/* "with a chain of trust from a certification authority (CA) that is
 * trusted by the sending MTA". */
static void test_untrusted_ca(void **state)
{
    struct fx *f = *state;
    char other[128];

    serve("untrusted", "200 text/plain", policy_ok, strlen(policy_ok));
    snprintf(other, sizeof(other), "%s/other-ca.pem", dir);
    f->cf.ca_file = other;
    fetch_fails(f, "untrusted",
                "https://mta-sts.untrusted.test/.well-known/mta-sts.txt: SSL "
                "certificate problem: unable to get local issuer "
                "certificate");
    assert_int_equal(requests("untrusted"), 0);
}

/* "Senders SHOULD impose a timeout on the HTTPS GET request". */
static void test_timeout(void **state)
{
    struct fx *f = *state;
    int64_t t0 = util_clock_mono_ms();

    serve("slow", "200 text/plain 3", policy_ok, strlen(policy_ok));
    f->cf.fetch_timeout_ms = 300;
    fetch_fails(f, "slow",
                "https://mta-sts.slow.test/.well-known/"
                "mta-sts.txt: Operation timed out after ");
    assert_true(util_clock_mono_ms() - t0 < 2500);
}

/* Many deliveries to one domain at once: one fetch. */
static void test_shared_fetch(void **state)
{
    struct fx *f = *state;
    struct fx others[5];

    serve("shared", "200 text/plain 0.2", policy_ok, strlen(policy_ok));
    fx_start(f);
    memset(others, 0, sizeof(others));
    for (int i = 0; i < 5; i++)
        assert_int_equal(sts_policy_get(f->s, "shared.test", got, &others[i]),
                         0);
    for (int i = 0; i < 5; i++) {
        while (others[i].calls == 0)
            event_base_loop(f->base, EVLOOP_ONCE);
        assert_true(others[i].got_policy);
        assert_string_equal(others[i].policy.mx[0], "mx1.ok.test");
        sts_policy_clear(&others[i].policy);
    }
    assert_int_equal(requests("shared"), 1);
    assert_int_equal(stats(f).fetches, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_fetch_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fetch_charset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_keeps_policy, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_id_change_refetches, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_max_age_expiry_refetches, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_not_found, setup, teardown),
        cmocka_unit_test_setup_teardown(test_redirect_not_followed, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_wrong_content_type, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_oversize_body, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_policy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_certificate_other_name, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_untrusted_ca, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shared_fetch, setup, teardown),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
