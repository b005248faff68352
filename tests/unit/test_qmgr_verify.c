/*
 * test_qmgr_verify - the verification pseudo-message's limits (decision
 * 97): at most address_verify_concurrency_limit probes in flight, at most
 * address_verify_pending_request_limit waiting, and beyond that
 * "undetermined" at once, never an unbounded queue; a request for an
 * address being probed shares its probe; the discard and error routes
 * answer without one.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dns/dns.h"
#include "qmgr/qmgr.h"
#include "route/route.h"
#include "spool/spool.h"

struct world {
    char dir[64];
    struct conf *conf;
    struct spool *sp;
    struct route_table *routes;
    struct dns_resolver *dns;
    struct event_base *base;
    struct qmgr *q;
    int silent; /* listens, never accepts: probes hang before the greeting */
};

static void log_cb(void *ctx, int level, const char *service, const char *line)
{
    (void)ctx;
    (void)level;
    (void)service;
    (void)line;
}

static int silent_listener(unsigned *port)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(listen(fd, 64), 0);
    getsockname(fd, (struct sockaddr *)&sin, &len);
    *port = ntohs(sin.sin_port);
    return fd;
}

static void world_start(struct world *w)
{
    struct spool_config cf = {0};
    struct dns_config dc = {0};
    char why[512] = "", relay[64], tmap[128];
    unsigned port;
    FILE *f;
    static const char *const pairs[][2] = {
        {"address_verify_concurrency_limit", "2"},
        {"address_verify_pending_request_limit", "3"},
        {"myhostname", "client.test"},
    };

    memset(w, 0, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "/tmp/sluice-verify.XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    w->silent = silent_listener(&port);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%u", port);
    snprintf(tmap, sizeof(tmap), "%s/transport", w->dir);
    f = fopen(tmap, "w");
    assert_non_null(f);
    fprintf(f, "gone.test error:5.1.2 no such domain\nsink.test discard:\n");
    fclose(f);
    w->conf = conf_create();
    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
        assert_int_equal(
            conf_set(w->conf, pairs[i][0], pairs[i][1], why, sizeof(why)), 0);
    assert_int_equal(conf_set(w->conf, "relayhost", relay, why, sizeof(why)),
                     0);
    assert_int_equal(
        conf_set(w->conf, "transport_maps", tmap, why, sizeof(why)), 0);
    assert_int_equal(
        conf_set(w->conf, "queue_directory", w->dir, why, sizeof(why)), 0);
    if (conf_validate(w->conf, why, sizeof(why)) != 0)
        fail_msg("conf_validate: %s", why);
    cf.queue_directory = w->dir;
    cf.map_size = 16 << 20;
    if (spool_open(&w->sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0)
        fail_msg("spool_open: %s", why);
    if ((w->routes = route_load(w->conf, why, sizeof(why))) == NULL)
        fail_msg("route_load: %s", why);
    w->base = event_base_new();
    dc.servers = "127.0.0.1:9";
    if ((w->dns = dns_create(w->base, &dc, why, sizeof(why))) == NULL)
        fail_msg("dns_create: %s", why);
    w->q = qmgr_create(w->base, w->conf, w->sp, w->routes, w->dns, log_cb, w);
    assert_non_null(w->q);
}

static void world_end(struct world *w)
{
    char cmd[128];

    qmgr_stop(w->q);
    dns_free(w->dns);
    spool_close(w->sp);
    qmgr_free(w->q);
    route_free(w->routes);
    conf_free(w->conf);
    event_base_free(w->base);
    close(w->silent);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", w->dir);
    assert_int_equal(system(cmd), 0);
}

static int answers;

static void answered(void *ctx, const struct qmgr_verify_answer *a)
{
    (void)ctx;
    (void)a;
    answers++;
}

/* 2 in flight, 3 waiting: the sixth distinct address is refused at once,
 * a repeated one shares its probe. */
static void test_pending_limit(void **state)
{
    struct world w;
    struct qmgr_verify_answer a;
    struct qmgr_verify_wait *wait[8];
    char addr[64];

    (void)state;
    world_start(&w);
    answers = 0;
    for (int i = 0; i < 5; i++) {
        snprintf(addr, sizeof(addr), "u%d@remote.test", i);
        assert_int_equal(
            qmgr_verify(w.q, addr, 60000, 0, &a, answered, NULL, &wait[i]), 0);
        assert_non_null(wait[i]);
    }
    assert_int_equal(qmgr_verify(w.q, "u5@remote.test", 60000, 0, &a, answered,
                                 NULL, &wait[5]),
                     1);
    assert_null(wait[5]);
    assert_int_equal(a.status, QMGR_VERIFY_UNDETERMINED);
    assert_string_equal(a.dsn, "4.3.2");
    assert_string_equal(
        a.text, "address verification is busy: too many requests waiting");
    /* the same address as a probe in line: it waits for that one */
    assert_int_equal(qmgr_verify(w.q, "u4@REMOTE.test", 60000, 0, &a, answered,
                                 NULL, &wait[6]),
                     0);
    /* no wait asked: still refused past the limit, no probe */
    assert_int_equal(
        qmgr_verify(w.q, "u7@remote.test", 0, 0, &a, answered, NULL, &wait[7]),
        1);
    assert_string_equal(a.dsn, "4.3.2");
    /* the routes that answer by themselves do so at any load */
    assert_int_equal(
        qmgr_verify(w.q, "x@gone.test", 60000, 0, &a, answered, NULL, &wait[7]),
        1);
    assert_int_equal(a.status, QMGR_VERIFY_UNDELIVERABLE);
    assert_string_equal(a.dsn, "5.1.2");
    assert_string_equal(a.text, "no such domain");
    assert_int_equal(
        qmgr_verify(w.q, "y@sink.test", 60000, 0, &a, answered, NULL, &wait[7]),
        1);
    assert_int_equal(a.status, QMGR_VERIFY_DELIVERABLE);
    /* a cancelled wait is never answered */
    qmgr_verify_cancel(wait[0]);
    event_base_loop(w.base, EVLOOP_NONBLOCK);
    assert_int_equal(answers, 0);
    for (int i = 1; i <= 4; i++)
        qmgr_verify_cancel(wait[i]);
    qmgr_verify_cancel(wait[6]);
    world_end(&w);
}

/* A wait that ends first says "in progress"; the probe goes on. */
static void test_wait_ends(void **state)
{
    struct world w;
    struct qmgr_verify_answer a;
    struct qmgr_verify_wait *wait;

    (void)state;
    world_start(&w);
    answers = 0;
    assert_int_equal(
        qmgr_verify(w.q, "slow@remote.test", 50, 0, &a, answered, NULL, &wait),
        0);
    event_base_loop(w.base, EVLOOP_ONCE);
    while (answers == 0)
        event_base_loop(w.base, EVLOOP_ONCE);
    assert_int_equal(answers, 1);
    /* asked again without waiting: the probe under way, not a new one */
    assert_int_equal(
        qmgr_verify(w.q, "slow@remote.test", 0, 0, &a, answered, NULL, &wait),
        1);
    assert_int_equal(a.status, QMGR_VERIFY_UNDETERMINED);
    assert_true(a.in_progress);
    assert_string_equal(a.text, "Address verification in progress");
    world_end(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pending_limit),
        cmocka_unit_test(test_wait_ends),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
