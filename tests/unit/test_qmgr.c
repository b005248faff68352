/*
 * test_qmgr - the queue manager end to end on loopback: messages stored
 * in a spool are delivered to Postfix's smtp-sink through core/, the
 * routing table and the SMTP client; every recipient's outcome reaches
 * the spool and the log, and a message leaves the spool once every
 * recipient is final (postfix-reference-notes.md, "Queue life cycle").
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dnsmasq_fixture.h"
#include "sink_fixture.h"
#include "spool_raw_fixture.h"

#include "dns/dns.h"
#include "qmgr/qmgr.h"
#include "route/route.h"
#include "smtp/smtp.h"
#include "spool/spool.h"

struct world {
    char dir[64];
    struct conf *conf;
    struct spool *sp;
    struct route_table *routes;
    struct dns_resolver *dns;
    struct event_base *base;
    struct qmgr *q;
    char *log;
    size_t log_len;
};

static void log_cb(void *ctx, int level, const char *service, const char *line)
{
    struct world *w = ctx;
    size_t n = strlen(line);

    (void)level;
    (void)service;
    w->log = realloc(w->log, w->log_len + n + 2);
    memcpy(w->log + w->log_len, line, n);
    w->log_len += n;
    w->log[w->log_len++] = '\n';
    w->log[w->log_len] = 0;
}

/* The name server the next world asks; by default one that is never
 * asked (next hops are addresses). */
static const char *world_dns = "127.0.0.1:9";

/* The next world's spool map limit, in bytes; 0: none. */
static uint64_t world_map_limit;

/* A spool in a temporary directory and a configuration from pairs. */
static void world_start(struct world *w, const char *name, ...)
{
    struct spool_config cf = {0};
    struct dns_config dc = {0};
    char why[512] = "";
    va_list ap;

    memset(w, 0, sizeof(*w));
    snprintf(w->dir, sizeof(w->dir), "/tmp/sluice-qmgr.XXXXXX");
    assert_non_null(mkdtemp(w->dir));
    w->conf = conf_create();
    va_start(ap, name);
    for (; name != NULL; name = va_arg(ap, const char *)) {
        const char *value = va_arg(ap, const char *);

        if (conf_set(w->conf, name, value, why, sizeof(why)) != 0)
            fail_msg("conf_set(%s): %s", name, why);
    }
    va_end(ap);
    assert_int_equal(
        conf_set(w->conf, "queue_directory", w->dir, why, sizeof(why)), 0);
    if (conf_validate(w->conf, why, sizeof(why)) != 0)
        fail_msg("conf_validate: %s", why);
    cf.queue_directory = w->dir;
    cf.map_size = world_map_limit ? world_map_limit : 16 << 20;
    cf.map_size_limit = world_map_limit;
    if (spool_open(&w->sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0)
        fail_msg("spool_open: %s", why);
    if ((w->routes = route_load(w->conf, why, sizeof(why))) == NULL)
        fail_msg("route_load: %s", why);
    w->base = event_base_new();
    dc.servers = world_dns;
    if ((w->dns = dns_create(w->base, &dc, why, sizeof(why))) == NULL)
        fail_msg("dns_create: %s", why);
}

static void store(struct world *w, const char *sender, int nrcpt,
                  const char *const *rcpt)
{
    struct spool_msg *m = spool_msg_new();
    char why[256];

    m->sender = strdup(sender);
    m->body = strdup("From: s@client.test\r\nSubject: qmgr test\r\n\r\nhi\r\n");
    m->size = strlen(m->body);
    for (int i = 0; i < nrcpt; i++)
        assert_int_equal(spool_msg_add_rcpt(m, rcpt[i], NULL, 0, NULL), 0);
    if (spool_store(w->sp, m, why, sizeof(why)) != 0)
        fail_msg("spool_store: %s", why);
    spool_msg_free(m);
}

static void check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct world *w = arg;

    (void)fd;
    (void)what;
    if (qmgr_idle(w->q))
        event_base_loopbreak(w->base);
}

/* Run the queue manager until it is idle, at most limit_s seconds. */
static void run_until_idle(struct world *w, int limit_s)
{
    struct timeval tick = {0, 20000}, limit = {limit_s, 0};
    struct event *check = event_new(w->base, -1, EV_PERSIST, check_cb, w);

    if (w->q == NULL)
        w->q =
            qmgr_create(w->base, w->conf, w->sp, w->routes, w->dns, log_cb, w);
    assert_non_null(w->q);
    event_add(check, &tick);
    event_base_loopexit(w->base, &limit);
    event_base_dispatch(w->base);
    event_free(check);
}

static void world_stop(struct world *w)
{
    char cmd[128];

    if (getenv("TEST_QMGR_LOG"))
        fputs(w->log ? w->log : "", stderr);
    if (w->q)
        qmgr_stop(w->q);
    dns_free(w->dns);
    spool_close(w->sp);
    qmgr_free(w->q);
    route_free(w->routes);
    event_base_free(w->base);
    conf_free(w->conf);
    free(w->log);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", w->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", w->dir);
}

static int count_of(const char *hay, const char *needle)
{
    int n = 0;

    for (const char *p = hay; p && (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

static int counter(void *ctx, const struct spool_msg *m)
{
    (void)m;
    (*(int *)ctx)++;
    return 0;
}

static int queue_count(struct world *w, enum spool_index index)
{
    int n = 0;
    char why[256];

    assert_int_equal(spool_list(w->sp, index, counter, &n, why, sizeof(why)),
                     0);
    return n;
}

/* The idle connections the metrics count now (sluice_connections_idle). */
static long idle_connections(struct world *w)
{
    struct util_buf b = UTIL_BUF_INIT;
    const char *p;
    long idle = -1;

    qmgr_metrics(w->q, &b);
    p = strstr(b.data, "\nsluice_connections_idle ");
    if (p != NULL)
        idle = strtol(p + strlen("\nsluice_connections_idle "), NULL, 10);
    util_buf_free(&b);
    return idle;
}

/*
 * On-demand session caching (the reference's qmgr_entry_select(): "Don't
 * enable session caching just because we have concurrent deliveries.
 * This prevents unnecessary session caching when we have a burst of mail
 * <= the initial concurrency limit"): three messages to one destination
 * at once leave no idle connection holding a slot at the receiver; a
 * stream of forty, delivered back to back, reuses connections and keeps
 * some for more.
 */
static void test_cache_on_demand(void **state)
{
    struct world w;
    struct sink sk;
    char relay[64];
    const char *r[1] = {"u@d.test"};

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "myhostname", "client.test",
                "smtp_connection_cache_time_limit", "30s", NULL);
    for (int i = 0; i < 3; i++)
        store(&w, "sender@client.test", 1, r);
    run_until_idle(&w, 60);
    assert_int_equal(count_of(w.log, "status=sent (250"), 3);
    assert_int_equal(count_of(w.log, ", conn_use="), 0);
    assert_int_equal(idle_connections(&w), 0);
    for (int i = 0; i < 40; i++)
        store(&w, "sender@client.test", 1, r);
    qmgr_wake(w.q);
    run_until_idle(&w, 60);
    assert_int_equal(count_of(w.log, "status=sent (250"), 43);
    assert_true(count_of(w.log, ", conn_use=") > 0);
    assert_true(idle_connections(&w) > 0);
    world_stop(&w);
    sink_stop(&sk);
}

/* 100 messages of 3 recipients in different domains, through a relay
 * host: each delivered once, every recipient logged as sent, the spool
 * empty at the end. */
static void test_delivers_everything(void **state)
{
    struct world w;
    struct sink sk;
    char relay[64];
    struct qmgr_stats st;

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "myhostname", "client.test", NULL);
    for (int i = 0; i < 100; i++) {
        char a[3][64];
        const char *r[3] = {a[0], a[1], a[2]};

        for (int k = 0; k < 3; k++)
            snprintf(a[k], sizeof(a[k]), "u%d@d%d.test", i, (i + k) % 10);
        store(&w, "sender@client.test", 3, r);
    }
    run_until_idle(&w, 60);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.loaded, 100);
    assert_int_equal(st.delivered, 300);
    assert_int_equal(st.deferred + st.bounced, 0);
    assert_int_equal(st.removed, 100);
    /* Idle destination queues are freed: memory does not grow with
     * every destination ever seen. */
    assert_int_equal(st.destinations, 0);
    assert_int_equal(count_of(w.log, "status=sent (250"), 300);
    assert_int_equal(count_of(w.log, ": removed"), 100);
    assert_non_null(strstr(w.log, ", relay=127.0.0.1[127.0.0.1]:"));
    /* Connections are reused: fewer connections than deliveries. */
    assert_true(count_of(w.log, ", conn_use=") > 0);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_ALL), 0);
    world_stop(&w);
    /* One transaction per message: its recipients share the relay. */
    assert_int_equal(sink_count(&sk), 100);
    sink_stop(&sk);
}

/* More mail than qmgr_message_active_limit: loaded in batches as room
 * frees up, every message delivered, never more than the limit in memory. */
static long max_active;

static void active_limit_check(evutil_socket_t fd, short what, void *arg)
{
    struct world *w = arg;
    struct qmgr_stats st;

    (void)fd;
    (void)what;
    qmgr_stats(w->q, &st);
    if (st.active > 4)
        fail_msg("%ld messages in memory, limit 4", st.active);
}

static void test_active_limit(void **state)
{
    struct world w;
    struct sink sk;
    char relay[64];
    struct qmgr_stats st;
    struct event *watch;
    struct timeval tick = {0, 1000};

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "qmgr_message_active_limit", "4", NULL);
    for (int i = 0; i < 30; i++) {
        char a[64];
        const char *r[1] = {a};

        snprintf(a, sizeof(a), "u%d@limit.test", i);
        store(&w, "sender@client.test", 1, r);
    }
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    watch = event_new(w.base, -1, EV_PERSIST, active_limit_check, &w);
    event_add(watch, &tick);
    run_until_idle(&w, 30);
    event_free(watch);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.loaded, 30);
    assert_int_equal(st.delivered, 30);
    assert_int_equal(st.removed, 30);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_ALL), 0);
    world_stop(&w);
    assert_int_equal(sink_count(&sk), 30);
    sink_stop(&sk);
}

/*
 * Issue 16: "Message bodies are not held in memory for every in-core
 * message." With 30 messages in memory and one delivery at a time to
 * their destination, at most one body is in memory at any moment (the
 * one being sent); the others wait with their envelopes only.
 */
static void bodies_check(evutil_socket_t fd, short what, void *arg)
{
    struct world *w = arg;
    struct qmgr_stats st;

    (void)fd;
    (void)what;
    qmgr_stats(w->q, &st);
    if (st.bodies > 1)
        fail_msg("%ld bodies in memory with %ld messages, one delivery at "
                 "a time",
                 st.bodies, st.active);
    if (st.active > max_active)
        max_active = st.active;
}

static void test_bodies_only_while_delivered(void **state)
{
    struct world w;
    struct sink sk;
    char relay[64];
    struct qmgr_stats st;
    struct event *watch;
    struct timeval tick = {0, 500};

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "initial_destination_concurrency", "1",
                "default_destination_concurrency_limit", "1", NULL);
    for (int i = 0; i < 30; i++) {
        char a[64];
        const char *r[1] = {a};

        snprintf(a, sizeof(a), "u%d@bodies.test", i);
        store(&w, "sender@client.test", 1, r);
    }
    max_active = 0;
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    watch = event_new(w.base, -1, EV_PERSIST, bodies_check, &w);
    event_add(watch, &tick);
    run_until_idle(&w, 30);
    event_free(watch);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.delivered, 30);
    assert_int_equal(st.bodies, 0);
    assert_true(max_active > 10); /* they did wait in memory together */
    world_stop(&w);
    assert_int_equal(sink_count(&sk), 30);
    sink_stop(&sk);
}

/*
 * Issue 16, the seed's "Dealing with memory resource limits": "the
 * queue manager reads the recipients in batches" and keeps at most
 * max(qmgr_message_recipient_limit, minimum * active messages +
 * _recipient_limit + _extra_recipient_limit) of them in core per
 * transport. Three lists of 1,500 recipients over 30 domains and 20
 * single-recipient messages, with limits of 100: the recipients in
 * memory never pass the bound, every one is delivered once, and the
 * lists are read in many batches.
 */
static long max_recipients;

static void recipients_check(evutil_socket_t fd, short what, void *arg)
{
    struct world *w = arg;
    struct qmgr_stats st;
    long bound;

    (void)fd;
    (void)what;
    qmgr_stats(w->q, &st);
    bound = 10 * st.active + 100 + 100;
    if (bound < 100)
        bound = 100;
    if (st.recipients > bound)
        fail_msg("%ld recipients in memory, bound %ld (%ld messages)",
                 st.recipients, bound, st.active);
    if (st.recipients > max_recipients)
        max_recipients = st.recipients;
}

static void store_list(struct world *w, int list, int nrcpt)
{
    char **a = calloc((size_t)nrcpt, sizeof(*a));

    for (int i = 0; i < nrcpt; i++) {
        a[i] = malloc(64);
        snprintf(a[i], 64, "l%d-u%d@d%d.test", list, i, i % 30);
    }
    store(w, "owner@client.test", nrcpt, (const char *const *)a);
    for (int i = 0; i < nrcpt; i++)
        free(a[i]);
    free(a);
}

static void test_recipient_batches(void **state)
{
    struct world w;
    struct sink sk;
    char relay[64];
    struct qmgr_stats st;
    struct event *watch;
    struct timeval tick = {0, 1000};

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "qmgr_message_recipient_limit", "100",
                "qmgr_message_recipient_minimum", "10",
                "default_recipient_limit", "100",
                "default_extra_recipient_limit", "100",
                "default_destination_recipient_limit", "20", NULL);
    for (int l = 0; l < 3; l++)
        store_list(&w, l, 1500);
    for (int i = 0; i < 20; i++) {
        char a[64];
        const char *r[1] = {a};

        snprintf(a, sizeof(a), "single%d@small.test", i);
        store(&w, "sender@client.test", 1, r);
    }
    max_recipients = 0;
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    watch = event_new(w.base, -1, EV_PERSIST, recipients_check, &w);
    event_add(watch, &tick);
    run_until_idle(&w, 120);
    event_free(watch);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.loaded, 23);
    assert_int_equal(st.delivered, 3 * 1500 + 20);
    assert_int_equal(st.deferred + st.bounced, 0);
    assert_int_equal(st.removed, 23);
    assert_int_equal(st.recipients, 0);
    assert_true(max_recipients > 20); /* batches were in memory */
    assert_int_equal(count_of(w.log, "status=sent (250"), 3 * 1500 + 20);
    assert_int_equal(count_of(w.log, "to=<l1-u1499@d29.test>"), 1);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_ALL), 0);
    world_stop(&w);
    sink_stop(&sk);
}

/*
 * A few recipients of a big list stuck at a destination that never
 * answers must not keep the batches they came in: a 6,000-recipient
 * list (batches of 5,000 and 1,000) with one recipient in a hundred at
 * a server that accepts connections and says nothing. Once the rest is
 * delivered, the 60 waiting recipients hold a few hundred records, not
 * the 6,000 they were read with (the review of the batches found 4,411
 * held for 181 waiting before batches were compacted).
 */
static void test_stuck_recipients_free_their_batch(void **state)
{
    struct world w;
    struct sink sk;
    struct sockaddr_in sa = {0};
    socklen_t len = sizeof(sa);
    char table[96], relay[64];
    struct qmgr_stats st;
    int hung = socket(AF_INET, SOCK_STREAM, 0);
    char **a = calloc(6000, sizeof(*a));
    FILE *fp;

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(hung, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(hung, 64), 0); /* never accepted: no greeting */
    assert_int_equal(getsockname(hung, (struct sockaddr *)&sa, &len), 0);
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-hung.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp, "hung.test relay:[127.0.0.1]:%d\n", ntohs(sa.sin_port));
    fclose(fp);
    snprintf(relay, sizeof(relay), "[127.0.0.1]:%d", sk.port);
    world_start(&w, "relayhost", relay, "transport_maps", table, NULL);
    for (int i = 0; i < 6000; i++) {
        a[i] = malloc(64);
        snprintf(a[i], 64, "u%d@%s", i, i % 100 == 0 ? "hung.test" : "d.test");
    }
    store(&w, "owner@client.test", 6000, (const char *const *)a);
    for (int i = 0; i < 6000; i++)
        free(a[i]);
    free(a);
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    for (int t = 0; t < 300; t++) {
        struct timeval tick = {0, 100000};

        event_base_loopexit(w.base, &tick);
        event_base_dispatch(w.base);
        qmgr_stats(w.q, &st);
        if (st.delivered == 5940)
            break;
    }
    assert_int_equal(st.delivered, 5940);
    assert_int_equal(st.recipients, 60);
    if (st.records > 4 * st.recipients + 2 * 64)
        fail_msg("%ld records held for %ld recipients waiting", st.records,
                 st.recipients);
    world_stop(&w);
    close(hung);
    unlink(table);
    sink_stop(&sk);
}

/* The transport table's discard and error transports, and an address
 * that cannot be routed: every recipient final, the message removed. */
static void test_local_outcomes(void **state)
{
    struct world w;
    char table[96], why[64];
    FILE *fp;
    static const char *const rcpt[] = {"a@gone.test", "b@bad.test",
                                       "c@later.test", "nobody"};
    struct qmgr_stats st;

    (void)state;
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-table.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp, "gone.test discard:\n"
                "bad.test error:5.1.1 no such domain here\n"
                "later.test error:4.3.2 try again later\n"
                "client.test discard:\n");
    fclose(fp);
    world_start(&w, "transport_maps", table, NULL);
    (void)why;
    store(&w, "sender@client.test", 4, rcpt);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    unlink(table);
    /* a@gone.test, and the failure notice to the sender */
    assert_int_equal(st.delivered, 2);
    assert_int_equal(st.notices, 1);
    assert_non_null(strstr(w.log, ": sender non-delivery notification: "));
    assert_non_null(strstr(w.log, "to=<sender@client.test>, relay=none"));
    assert_int_equal(st.bounced, 2);
    assert_int_equal(st.deferred, 1);
    assert_non_null(strstr(w.log, "to=<a@gone.test>, relay=none, delay="));
    assert_non_null(strstr(w.log, "dsn=2.0.0, status=sent (discarded)"));
    assert_non_null(strstr(w.log, "to=<b@bad.test>"));
    assert_non_null(
        strstr(w.log, "dsn=5.1.1, status=bounced (no such domain here)"));
    assert_non_null(
        strstr(w.log, "dsn=4.3.2, status=deferred (try again later)"));
    assert_non_null(strstr(w.log, "to=<nobody>"));
    assert_non_null(strstr(w.log, "dsn=5.1.3, status=bounced"));
    /* One recipient deferred: the message waits for its retry; the
     * notice was delivered and removed. */
    assert_int_equal(st.removed, 1);
    assert_int_equal(st.requeued, 1);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_DEFERRED), 1);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_INCOMING), 0);
    world_stop(&w);
}

/* Store a message with DSN details: its ENVID, RET and NOTIFY. */
static void store_dsn(struct world *w, const char *sender, const char *rcpt,
                      unsigned notify, const char *orcpt)
{
    struct spool_msg *m = spool_msg_new();
    char why[256];

    m->sender = strdup(sender);
    m->envid = strdup("env-7");
    m->body = strdup("From: s@client.test\r\nSubject: dsn test\r\n\r\nhi\r\n");
    m->size = strlen(m->body);
    assert_int_equal(spool_msg_add_rcpt(m, rcpt, NULL, notify, orcpt), 0);
    if (spool_store(w->sp, m, why, sizeof(why)) != 0)
        fail_msg("spool_store: %s", why);
    spool_msg_free(m);
}

/*
 * Failures are reported to the sender in one RFC 3464 notice per message,
 * from the null sender; NOTIFY=NEVER and the null sender get none; a
 * notice that fails is not reported on; NOTIFY=SUCCESS gets a delivery
 * notice ("delivered" for a local delivery).
 */
static void test_failure_notices(void **state)
{
    struct world w;
    struct sink sk;
    char table[96], dump[8192];
    FILE *fp;
    struct qmgr_stats st;

    (void)state;
    NEED_SINK(&sk, NULL, NULL);
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-table.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp,
            "bad.test error:5.1.1 no such user here\n"
            "gone.test discard:\n"
            "client.test relay:[127.0.0.1]:%d\n"
            "lost.test error:5.1.2 nobody home\n",
            sk.port);
    fclose(fp);
    world_start(&w, "transport_maps", table, "myhostname", "mx.sluice.test",
                NULL);
    store_dsn(&w, "sender@client.test", "x@bad.test", 0, "rfc822;X@bad.test");
    store_dsn(&w, "quiet@client.test", "y@bad.test", SPOOL_NOTIFY_NEVER, NULL);
    store_dsn(&w, "", "z@bad.test", 0, NULL);
    /* The notice to this sender fails too: it is not reported on. */
    store_dsn(&w, "who@lost.test", "w@bad.test", 0, NULL);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.notices, 2);
    assert_int_equal(count_of(w.log, ": sender non-delivery notification: "),
                     2);
    assert_non_null(strstr(w.log, "to=<who@lost.test>, relay=none"));
    assert_int_equal(queue_count(&w, SPOOL_INDEX_ALL), 0);
    assert_int_equal(sink_count(&sk), 1);
    sink_dump(&sk, dump, sizeof(dump)); /* smtp-sink writes LF line ends */
    assert_non_null(strstr(dump, "X-Mail-Args: <>\n"));
    assert_non_null(strstr(dump, "To: <sender@client.test>\n"));
    assert_non_null(strstr(
        dump, "From: Mail Delivery System <MAILER-DAEMON@mx.sluice.test>"));
    assert_non_null(strstr(dump, "Content-Type: multipart/report; "
                                 "report-type=delivery-status;"));
    assert_non_null(strstr(dump, "Original-Envelope-Id: env-7\n"));
    assert_non_null(strstr(dump, "Original-Recipient: rfc822;X@bad.test\n"
                                 "Final-Recipient: rfc822; x@bad.test\n"
                                 "Action: failed\n"
                                 "Status: 5.1.1\n"
                                 "Diagnostic-Code: X-Sluice; no such user "
                                 "here\n"));
    assert_non_null(strstr(dump, "Subject: dsn test"));
    world_stop(&w);

    /* NOTIFY=SUCCESS on a final delivery: a "delivered" notice. */
    world_start(&w, "transport_maps", table, NULL);
    store_dsn(&w, "sender@client.test", "v@gone.test", SPOOL_NOTIFY_SUCCESS,
              NULL);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.notices, 1);
    assert_int_equal(count_of(w.log, ": sender delivery status notification: "),
                     1);
    assert_int_equal(sink_count(&sk), 2);
    world_stop(&w);
    sink_stop(&sk);
    unlink(table);
}

static long flushed;
static char flush_why[512];

/* The node of a flush, in its written form ("domain" or ".domain"). */
static const struct smtp_node *node_of(const char *text)
{
    static struct smtp_node n;

    assert_int_equal(smtp_node_parse(&n, text), 0);
    return &n;
}

static void flush_cb(void *ctx, long messages, const char *why)
{
    (void)ctx;
    flushed = messages;
    snprintf(flush_why, sizeof(flush_why), "%s", why ? why : "");
}

/* Run the loop until the last flush has answered, at most 5 s. */
static void run_until_flushed(struct world *w)
{
    struct timeval tick = {0, 10000};

    for (int i = 0; i < 500 && flushed < 0; i++) {
        event_base_loopexit(w->base, &tick);
        event_base_dispatch(w->base);
    }
}

/* Store a message that arrived age_s ago, then put it in state. */
static void store_old(struct world *w, const char *rcpt, int64_t age_s,
                      enum spool_state state, int64_t due_in_s)
{
    struct spool_msg *m = spool_msg_new();
    struct spool_change ch = {0};
    char why[256];

    m->sender = strdup("sender@client.test");
    m->body = strdup("Subject: old\r\n\r\nold\r\n");
    m->size = strlen(m->body);
    m->arrival = spool_now() - age_s * 1000000;
    assert_int_equal(spool_msg_add_rcpt(m, rcpt, NULL, 0, NULL), 0);
    if (spool_store(w->sp, m, why, sizeof(why)) != 0)
        fail_msg("spool_store: %s", why);
    ch.has_state = 1;
    ch.state = state;
    ch.has_next_attempt = state == SPOOL_DEFERRED;
    ch.next_attempt = spool_now() + due_in_s * 1000000;
    if (spool_update(w->sp, m->id, &ch, why, sizeof(why)) != 0)
        fail_msg("spool_update: %s", why);
    spool_msg_free(m);
}

static void stop_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

/*
 * Expiry in every state: a held message and a deferred one not yet due,
 * both older than maximal_queue_lifetime, are returned at the next queue
 * run without a delivery attempt; a young deferred one stays.
 */
static void test_expiry_sweep(void **state)
{
    struct world w;
    char table[96];
    FILE *fp;
    struct qmgr_stats st;
    struct timeval run = {1, 600000};
    struct event *stop;

    (void)state;
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-table.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp, "client.test discard:\nfar.test error:4.4.1 not now\n");
    fclose(fp);
    world_start(&w, "transport_maps", table, "queue_run_delay", "1s",
                "maximal_queue_lifetime", "2h", NULL);
    store_old(&w, "held@far.test", 3 * 3600, SPOOL_HOLD, 0);
    store_old(&w, "later@far.test", 3 * 3600, SPOOL_DEFERRED, 86400);
    store_old(&w, "young@far.test", 60, SPOOL_DEFERRED, 86400);
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    stop = evtimer_new(w.base, stop_cb, w.base);
    evtimer_add(stop, &run);
    event_base_dispatch(w.base);
    event_free(stop);
    run_until_idle(&w, 10);
    qmgr_stats(w.q, &st);
    unlink(table);
    assert_int_equal(st.bounced, 2);
    assert_int_equal(count_of(w.log, "dsn=4.4.7, status=bounced (message "
                                     "expired: not delivered)"),
                     2);
    assert_non_null(strstr(w.log, "to=<held@far.test>"));
    assert_int_equal(count_of(w.log, ": from=<sender@client.test>, "
                                     "status=expired, returned to sender\n"),
                     2);
    assert_non_null(strstr(w.log, "to=<later@far.test>"));
    assert_null(strstr(w.log, "to=<young@far.test>"));
    assert_int_equal(st.notices, 2);
    /* The young one waits; the two old ones and their notices are gone. */
    assert_int_equal(queue_count(&w, SPOOL_INDEX_ALL), 1);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_DEFERRED), 1);
    world_stop(&w);
}

/*
 * A message whose recipient record cannot be read at runtime: the end of
 * its pass cannot tell what happened to its recipients (decision 52). A
 * young one is deferred with the backoff its age gives, not retried at
 * every queue run; one still unreadable past its lifetime and a maximal
 * backoff is marked corrupt with the reason, kept, and left alone by the
 * queue runs and the expiry sweep: it used to be requeued every
 * minimal_backoff_time forever.
 */
static void test_unreadable_recipients(void **state)
{
    struct world w;
    struct spool_msg *got;
    unsigned char key[20];
    char ids[2][SPOOL_ID_MAX + 1];
    const int64_t ages[2] = {1800, 5 * 3600};
    char why[256];
    struct timeval run = {2, 500000};
    struct event *stop;
    int64_t before;

    (void)state;
    world_start(&w, "queue_run_delay", "1s", "maximal_queue_lifetime", "2h",
                "maximal_backoff_time", "1h", "minimal_backoff_time", "5m",
                NULL);
    for (int i = 0; i < 2; i++) {
        struct spool_msg *m = spool_msg_new();

        m->sender = strdup("sender@client.test");
        m->body = strdup("Subject: unreadable\r\n\r\nbody\r\n");
        m->size = strlen(m->body);
        m->arrival = spool_now() - ages[i] * 1000000;
        assert_int_equal(spool_msg_add_rcpt(m, "rcpt@far.test", NULL, 0, NULL),
                         0);
        if (spool_store(w.sp, m, why, sizeof(why)) != 0)
            fail_msg("spool_store: %s", why);
        snprintf(ids[i], sizeof(ids[i]), "%s", m->id);
        spool_msg_free(m);
        /* Recipient 0's record becomes junk. */
        memset(key, 0, sizeof(key));
        memcpy(key, ids[i], strlen(ids[i]));
        raw_put(w.dir, "rcpt", key, sizeof(key), "\x07junk", 5);
    }
    before = spool_now();
    w.q = qmgr_create(w.base, w.conf, w.sp, w.routes, w.dns, log_cb, &w);
    stop = evtimer_new(w.base, stop_cb, w.base);
    evtimer_add(stop, &run);
    event_base_dispatch(w.base);
    event_free(stop);

    /* The young one (30 minutes): deferred by its age's backoff, once. */
    assert_int_equal(spool_get(w.sp, ids[0], &got, 0, why, sizeof(why)), 0);
    assert_int_equal(got->state, SPOOL_DEFERRED);
    assert_true(got->next_attempt >= before + 1800 * (int64_t)1000000);
    assert_true(got->next_attempt <= spool_now() + 2000 * (int64_t)1000000);
    assert_int_equal(got->attempts, 1);
    spool_msg_free(got);

    /* The old one: corrupt, with the reason, out of both indices. */
    assert_int_equal(spool_get(w.sp, ids[1], &got, 0, why, sizeof(why)), 0);
    assert_int_equal(got->state, SPOOL_CORRUPT);
    assert_non_null(got->corrupt_reason);
    assert_non_null(strstr(got->corrupt_reason, "recipients unreadable: "));
    assert_string_equal(got->sender, "sender@client.test");
    spool_msg_free(got);
    assert_int_equal(count_of(w.log, ": marked corrupt: its recipients could "
                                     "not be read until past its lifetime: "),
                     1);
    assert_null(strstr(w.log, "status=expired"));
    assert_int_equal(queue_count(&w, SPOOL_INDEX_DEFERRED), 1);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_INCOMING), 0);
    world_stop(&w);
}

/*
 * A relay ("[127.0.0.1]:PORT" in buf) on a port nobody listens on: bound,
 * never listened to, so connections are refused until the returned
 * descriptor is closed.
 */
static int closed_relay(char *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {0};
    socklen_t slen = sizeof(sin);

    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    getsockname(fd, (struct sockaddr *)&sin, &slen);
    snprintf(buf, len, "[127.0.0.1]:%d", ntohs(sin.sin_port));
    return fd;
}

/* A relay that refuses connections: the recipients are deferred (not
 * bounced), the destination is declared dead, the messages wait. */
static void test_unreachable_relay(void **state)
{
    struct world w;
    char relay[64];
    int fd;
    static const char *const rcpt[] = {"x@far.test", "y@far.test"};
    struct qmgr_stats st;

    (void)state;
    fd = closed_relay(relay, sizeof(relay));
    world_start(&w, "relayhost", relay, NULL);
    /* Twice the initial window: the first five fail, the rest wait. */
    for (int i = 0; i < 10; i++)
        store(&w, "sender@client.test", 2, rcpt);
    run_until_idle(&w, 30);
    close(fd);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.delivered + st.bounced, 0);
    assert_int_equal(st.deferred, 20);
    assert_int_equal(st.requeued, 10);
    /* A dead destination is remembered until its backoff ends. */
    assert_int_equal(st.destinations, 1);
    assert_non_null(strstr(w.log, "status=deferred (connect to 127.0.0.1"));
    assert_non_null(strstr(w.log, ": destination dead after "));
    /* The mail still waiting is deferred without a connection attempt. */
    assert_non_null(strstr(w.log, "dsn=4.4.1, status=deferred (delivery "
                                  "temporarily suspended: connect to "
                                  "127.0.0.1[127.0.0.1]:"));
    assert_int_equal(count_of(w.log, "status=deferred (connect to 127.0.0.1"),
                     10);
    assert_int_equal(count_of(w.log, "status=deferred (delivery temporarily "
                                     "suspended: "),
                     10);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_DEFERRED), 10);

    /* A flush for another domain, or for far.test's parent without its
     * subdomains, changes nothing; one for far.test revives the
     * destination and makes its ten messages due now. */
    flushed = -1;
    qmgr_flush(w.q, node_of("other.test"), flush_cb, NULL);
    run_until_flushed(&w);
    assert_int_equal(flushed, 0);
    flushed = -1;
    qmgr_flush(w.q, node_of("test"), flush_cb, NULL);
    run_until_flushed(&w);
    assert_int_equal(flushed, 0);
    assert_null(strstr(w.log, "destination alive again (flush)"));
    flushed = -1;
    qmgr_flush(w.q, node_of("FAR.test"), flush_cb, NULL);
    run_until_flushed(&w);
    assert_int_equal(flushed, 10);
    assert_non_null(strstr(w.log, "flush FAR.test: 10 deferred messages due "
                                  "now"));
    assert_non_null(strstr(w.log, "destination alive again (flush)"));
    /* They are tried again at once (and fail again: nobody listens). */
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.requeued, 20);
    world_stop(&w);
}

/* Store messages until the spool's map is full. */
static void spool_fill(struct world *w)
{
    static const size_t sizes[] = {65536, 4096, 256};
    char why[256];

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        for (int n = 0; n < 100000; n++) {
            struct spool_msg *m = spool_msg_new();
            int rc;

            m->sender = strdup("filler@client.test");
            m->body = calloc(1, sizes[k] + 1);
            memset(m->body, 'f', sizes[k]);
            m->size = sizes[k];
            assert_int_equal(
                spool_msg_add_rcpt(m, "filler@filler.test", NULL, 0, NULL), 0);
            rc = spool_store(w->sp, m, why, sizeof(why));
            spool_msg_free(m);
            if (rc < 0)
                break;
        }
    }
}

/*
 * Issue 14: "sluice flush" on a full disk reported success and did
 * nothing. A flush whose changes cannot be written says so, with the
 * reason, to its caller and in the log.
 */
/* The pinning child: waits, inside a read transaction, for a byte. */
static int pin_cb(void *ctx, const struct spool_msg *env)
{
    int *fds = ctx;
    char c;

    (void)env;
    if (write(fds[1], "p", 1) != 1 || read(fds[0], &c, 1) < 0)
        _exit(2);
    return 1; /* stop the walk */
}

/*
 * A reader in another process holding a read transaction, as a full
 * disk would: LMDB cannot reuse the pages freed after it began, so a
 * full map stays full for every change. Returns the child's pid; a byte
 * on *release ends it.
 */
static pid_t spool_pin(const char *dir, int *release)
{
    int to_child[2], from_child[2];
    pid_t pid;
    char c;

    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    if ((pid = fork()) == 0) {
        struct spool_config cf = {0};
        struct spool *sp;
        char why[256];
        int fds[2] = {to_child[0], from_child[1]};

        cf.queue_directory = dir;
        if (spool_open(&sp, &cf, SPOOL_READONLY | SPOOL_NO_COMMITTER, why,
                       sizeof(why)) < 0)
            _exit(1);
        spool_list(sp, SPOOL_INDEX_DEFERRED, pin_cb, fds, why, sizeof(why));
        _exit(0);
    }
    assert_true(pid > 0);
    close(to_child[0]);
    close(from_child[1]);
    assert_int_equal(read(from_child[0], &c, 1), 1);
    close(from_child[0]);
    *release = to_child[1];
    return pid;
}

static void test_flush_spool_full(void **state)
{
    struct world w;
    char relay[64];
    int release, status;
    pid_t pin;
    int fd;
    static const char *const rcpt[] = {"x@far.test"};

    (void)state;
    fd = closed_relay(relay, sizeof(relay));
    world_map_limit = 2 << 20;
    /* no TLS report counts: their writes to the spool's meta database
     * would leave free pages for the flush to use */
    world_start(&w, "relayhost", relay, "smtp_tls_report_enable", "no", NULL);
    world_map_limit = 0;
    for (int i = 0; i < 10; i++)
        store(&w, "sender@client.test", 1, rcpt);
    run_until_idle(&w, 30);
    close(fd);
    assert_int_equal(queue_count(&w, SPOOL_INDEX_DEFERRED), 10);
    /* A reader held open keeps LMDB from reusing pages, as a full disk
     * keeps it from growing: the flush's changes cannot be written. */
    pin = spool_pin(w.dir, &release);
    spool_fill(&w);
    flushed = -1;
    qmgr_flush(w.q, NULL, flush_cb, NULL);
    run_until_flushed(&w);
    assert_int_equal(write(release, "x", 1), 1);
    close(release);
    assert_int_equal(waitpid(pin, &status, 0), pin);
    assert_true(flushed >= 0 && flushed < 10);
    assert_non_null(strstr(flush_why, "spool full"));
    assert_non_null(strstr(w.log, " deferred messages not made due: spool "
                                  "full"));
    assert_non_null(strstr(w.log, "of 10 deferred messages not made due"));
    world_stop(&w);
}

/*
 * Mail trickling, one message at a time, to a site that refuses: the
 * failures add up (the idle queue is kept while it has failures) and the
 * destination is declared dead: 1/5 + 1/4 + 1/3 + 1/2 >= 1.
 */
static void test_trickle_to_dead_site(void **state)
{
    struct world w;
    char relay[64];
    int fd;
    static const char *const rcpt[] = {"x@far.test"};
    struct qmgr_stats st;

    (void)state;
    fd = closed_relay(relay, sizeof(relay));
    world_start(&w, "relayhost", relay, NULL);
    for (int i = 0; i < 4; i++) {
        assert_null(strstr(w.log ? w.log : "", "destination dead"));
        store(&w, "", 1, rcpt);
        if (w.q != NULL)
            qmgr_wake(w.q);
        run_until_idle(&w, 10);
    }
    close(fd);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.deferred, 4);
    assert_non_null(strstr(w.log, ": destination dead after 1.28 failed "
                                  "pseudo-cohorts (window 2)"));
    assert_int_equal(st.destinations, 1);
    world_stop(&w);
}

/* MX records from a real name server (dnsmasq): fallback from a primary
 * that refuses to the secondary, an implicit MX (RFC 5321 5.1), a null
 * MX (RFC 7505) and a domain that does not exist, which are permanent. */
static void test_mx_outcomes(void **state)
{
    struct world w;
    struct sink sk;
    struct peer ns = {0};
    char table[96];
    FILE *fp;
    static const char *const rcpt[] = {"a@fb.test", "b@implicit.test",
                                       "c@nullmx.test", "d@nx.test"};
    static const char *base[] = {
        "--local=/test/",
        "--mx-host=fb.test,mx1.fb.test,10",
        "--mx-host=fb.test,mx2.fb.test,20",
        "--host-record=mx1.fb.test,127.0.0.2",
        "--host-record=mx2.fb.test,127.0.0.1",
        "--host-record=implicit.test,127.0.0.1",
        "--mx-host=nullmx.test,.,0",
        NULL,
    };
    struct qmgr_stats st;

    (void)state;
    if ((dnsmasq_path = find_dnsmasq()) == NULL)
        fail_msg("dnsmasq is not installed: install the Debian package "
                 "dnsmasq-base (bash .ci/install-deps)");
    NEED_SINK(&sk, NULL, NULL);
    assert_int_equal(peer_start(&ns, base, NULL, 0, "mx2.fb.test"), 0);
    /* MX lookups, with the sink's port instead of 25. */
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-mx.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp,
            "fb.test smtp:fb.test:%d\nimplicit.test smtp:implicit.test:%d\n"
            "nullmx.test smtp:nullmx.test:%d\nnx.test smtp:nx.test:%d\n",
            sk.port, sk.port, sk.port, sk.port);
    fclose(fp);
    world_dns = ns.servers;
    world_start(&w, "transport_maps", table, NULL);
    world_dns = "127.0.0.1:9";
    /* The null sender: the bounces here are about MX, not notices. */
    store(&w, "", 4, rcpt);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    unlink(table);
    assert_int_equal(st.delivered, 2);
    assert_int_equal(st.bounced, 2);
    assert_int_equal(st.deferred, 0);
    assert_int_equal(st.removed, 1);
    assert_non_null(
        strstr(w.log, "to=<a@fb.test>, relay=mx2.fb.test[127.0.0.1]:"));
    assert_non_null(
        strstr(w.log, "to=<b@implicit.test>, relay=implicit.test[127.0.0.1]:"));
    assert_non_null(strstr(w.log, "to=<c@nullmx.test>, relay=none"));
    assert_non_null(strstr(w.log,
                           "dsn=5.1.0, status=bounced (Domain "
                           "nullmx.test does not accept mail (nullMX))"));
    assert_non_null(strstr(w.log, "to=<d@nx.test>, relay=none"));
    assert_non_null(strstr(w.log, "dsn=5.4.4, status=bounced (Host or domain "
                                  "name not found. Name service error for "
                                  "name=nx.test type=MX: Host not found)"));
    world_stop(&w);
    peer_stop(&ns);
    assert_int_equal(sink_count(&sk), 2);
    sink_stop(&sk);
}

/* LMTP (RFC 2033) to smtp-sink -L: one reply per recipient after the
 * message, each recipient logged with its own reply. */
static void test_lmtp(void **state)
{
    struct world w;
    struct sink sk;
    char table[96];
    FILE *fp;
    static const char *const rcpt[] = {"a@lm.test", "b@lm.test", "c@lm.test"};
    struct qmgr_stats st;

    (void)state;
    NEED_SINK(&sk, "-L", NULL);
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-lmtp.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp, "lm.test lmtp:[127.0.0.1]:%d\n", sk.port);
    fclose(fp);
    world_start(&w, "transport_maps", table, NULL);
    store(&w, "sender@client.test", 3, rcpt);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    unlink(table);
    assert_int_equal(st.delivered, 3);
    assert_int_equal(st.removed, 1);
    for (int i = 0; i < 3; i++) {
        char want[128];

        snprintf(want, sizeof(want),
                 "to=<%s>, relay=127.0.0.1[127.0.0.1]:", rcpt[i]);
        assert_non_null(strstr(w.log, want));
    }
    assert_int_equal(count_of(w.log, "dsn=2.2.0, status=sent (250 2.2.0 "), 3);
    world_stop(&w);
    assert_int_equal(sink_count(&sk), 1);
    sink_stop(&sk);
}

/*
 * LMTP over a local socket; a missing socket suspends the transport for
 * transport_retry_time: the mail waiting for it is deferred without a
 * try, the destination is not marked dead; a flush resumes it.
 */
static void test_lmtp_unix_and_suspend(void **state)
{
    struct world w;
    struct sink sk;
    char table[96];
    FILE *fp;
    static const char *const rcpt[] = {"a@lm.test"};
    struct qmgr_stats st;

    (void)state;
    if (access(SINK, X_OK) < 0)
        fail_msg("cannot run %s: install the Debian package %s (bash "
                 ".ci/install-deps)",
                 SINK, SINK_PACKAGE);
    sink_unix_dir(&sk);
    snprintf(table, sizeof(table), "/tmp/sluice-qmgr-lmtp.%d", (int)getpid());
    fp = fopen(table, "w");
    assert_non_null(fp);
    fprintf(fp, "lm.test lmtp:unix:%s\n", sk.path);
    fclose(fp);
    world_start(&w, "transport_maps", table, "myhostname", "mx.sluice.test",
                "lmtp_destination_concurrency_limit", "1", NULL);
    for (int i = 0; i < 3; i++)
        store(&w, "", 1, rcpt);
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    assert_int_equal(st.deferred, 3);
    assert_non_null(strstr(w.log,
                           "lmtp: transport suspended for 60s: connect to "
                           "mx.sluice.test["));
    assert_int_equal(count_of(w.log, "status=deferred (delivery temporarily "
                                     "suspended: connect to mx.sluice.test["),
                     2);
    assert_null(strstr(w.log, "destination dead"));
    /* The sink appears; a flush brings the transport back at once. */
    assert_int_equal(sink_start_unix(&sk), 0);
    flushed = -1;
    qmgr_flush(w.q, NULL, flush_cb, NULL);
    run_until_flushed(&w);
    assert_int_equal(flushed, 3);
    assert_non_null(strstr(w.log, "lmtp: transport resumed"));
    run_until_idle(&w, 30);
    qmgr_stats(w.q, &st);
    unlink(table);
    assert_int_equal(st.delivered, 3);
    {
        char relay[160];

        snprintf(relay, sizeof(relay), "relay=mx.sluice.test[%s], ", sk.path);
        assert_int_equal(count_of(w.log, relay), 3);
    }
    world_stop(&w);
    assert_int_equal(sink_count(&sk) - 1, 3); /* the socket is a file too */
    sink_stop(&sk);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_delivers_everything),
        cmocka_unit_test(test_cache_on_demand),
        cmocka_unit_test(test_active_limit),
        cmocka_unit_test(test_bodies_only_while_delivered),
        cmocka_unit_test(test_recipient_batches),
        cmocka_unit_test(test_stuck_recipients_free_their_batch),
        cmocka_unit_test(test_local_outcomes),
        cmocka_unit_test(test_unreachable_relay),
        cmocka_unit_test(test_flush_spool_full),
        cmocka_unit_test(test_trickle_to_dead_site),
        cmocka_unit_test(test_failure_notices),
        cmocka_unit_test(test_expiry_sweep),
        cmocka_unit_test(test_unreadable_recipients),
        cmocka_unit_test(test_mx_outcomes),
        cmocka_unit_test(test_lmtp),
        cmocka_unit_test(test_lmtp_unix_and_suspend),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
