/*
 * NAME
 *	test_route 1 - unit tests of routing: transports, table, resolution
 * SYNOPSIS
 *	build/tests/test_route
 * DESCRIPTION
 *	Tests src/route/: the declared transports and their errors; the
 *	default route with and without a relay host in every form; every
 *	form of the transport table (exact domain, .domain, *, address
 *	literals; transport:nexthop, transport:, transport, :nexthop, :,
 *	brackets, ports, IPv6, discard and error texts) and its lookup
 *	order; upper-case domains; every error message with its file and
 *	line; bad addresses; a 100,000-line table resolved entry by entry;
 *	reloads; and seeded random junk that must load or fail, never
 *	crash. Table files live in a directory made by mkdtemp() and
 *	removed at the end.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "conf/conf.h"
#include "route/route.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define WHY_SIZE 1024

static char dir[64];
static char table[128]; /* dir/transport */

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/test_route.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(table, sizeof(table), "%s/transport", dir);
    return 0;
}

static int group_teardown(void **state)
{
    char path[128];

    (void)state;
    unlink(table);
    snprintf(path, sizeof(path), "%s/sub", dir);
    rmdir(path);
    return rmdir(dir);
}

/* Write text to the table file. */
static void table_write_n(const char *text, size_t len)
{
    FILE *fp = fopen(table, "w");

    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

static void table_write(const char *text)
{
    table_write_n(text, strlen(text));
}

/* A configuration with NULL-terminated name, value pairs set. */
static struct conf *conf_with(const char *name, ...)
{
    struct conf *conf = conf_create();
    char why[WHY_SIZE] = "";
    const char *value;
    va_list ap;

    va_start(ap, name);
    for (; name != NULL; name = va_arg(ap, const char *)) {
        value = va_arg(ap, const char *);
        if (conf_set(conf, name, value, why, sizeof(why)) != 0)
            fail_msg("conf_set(%s, %s): %s", name, value, why);
    }
    va_end(ap);
    return conf;
}

static struct route_table *load_conf_ok(struct conf *conf)
{
    char why[WHY_SIZE] = "";
    struct route_table *t = route_load(conf, why, sizeof(why));

    conf_free(conf);
    if (t == NULL)
        fail_msg("route_load: %s", why);
    return t;
}

/* Load the table file as it is, or NULL with why. */
static struct route_table *try_load(char why[WHY_SIZE])
{
    struct conf *conf = conf_with("transport_maps", table, NULL);
    struct route_table *t = route_load(conf, why, WHY_SIZE);

    conf_free(conf);
    return t;
}

/* Load with the table file holding text. */
static struct route_table *table_ok(const char *text)
{
    table_write(text);
    return load_conf_ok(conf_with("transport_maps", table, NULL));
}

/* route_load() must fail with exactly this message. */
static void load_conf_fails(struct conf *conf, const char *expected)
{
    char why[WHY_SIZE] = "";

    assert_null(route_load(conf, why, sizeof(why)));
    conf_free(conf);
    assert_string_equal(why, expected);
}

/*
 * The table file holding text must fail to load with "FILE, line N: "
 * and then expected.
 */
static void table_fails_n(const char *text, size_t len, int line,
                          const char *expected)
{
    char full[WHY_SIZE];

    table_write_n(text, len);
    snprintf(full, sizeof(full), "%s, line %d: %s", table, line, expected);
    load_conf_fails(conf_with("transport_maps", table, NULL), full);
}

static void table_fails(const char *text, int line, const char *expected)
{
    table_fails_n(text, strlen(text), line, expected);
}

/* address must route to exactly this. */
static void routes(const struct route_table *t, const char *address,
                   const char *transport, enum route_type type,
                   const char *nexthop, unsigned port, int mx, const char *key)
{
    struct route_result r;
    char why[WHY_SIZE] = "";

    memset(&r, 0x5a, sizeof(r));
    if (route_resolve(t, address, &r, why, sizeof(why)) != 0)
        fail_msg("route_resolve(%s): %s", address, why);
    assert_ptr_equal(r.address, address);
    assert_string_equal(r.transport, transport);
    assert_int_equal(r.type, type);
    assert_string_equal(r.nexthop, nexthop);
    assert_int_equal(r.port, port);
    assert_int_equal(r.mx, mx);
    assert_string_equal(r.key.cache, key);
    /* The queue key is the cache key without "TRANSPORT:". */
    assert_string_equal(r.key.queue, key + strlen(transport) + 1);
}

/* The key alone, for the many lookup order checks. */
static void routes_key(const struct route_table *t, const char *address,
                       const char *key)
{
    struct route_result r;
    char why[WHY_SIZE] = "";

    if (route_resolve(t, address, &r, why, sizeof(why)) != 0)
        fail_msg("route_resolve(%s): %s", address, why);
    assert_string_equal(r.key.cache, key);
}

static void resolve_fails(const struct route_table *t, const char *address,
                          const char *expected)
{
    struct route_result r;
    char why[WHY_SIZE] = "";

    assert_int_equal(route_resolve(t, address, &r, why, sizeof(why)), -1);
    assert_string_equal(why, expected);
}

static void test_default_transports(void **state)
{
    static const struct {
        const char *name;
        enum route_type type;
    } expected[] = {
        {"smtp", ROUTE_SMTP},   {"relay", ROUTE_SMTP},
        {"lmtp", ROUTE_LMTP},   {"discard", ROUTE_DISCARD},
        {"error", ROUTE_ERROR},
    };
    struct route_table *t = load_conf_ok(conf_with(NULL));
    const struct route_transport *tr;
    size_t i;

    (void)state;
    assert_int_equal(route_transport_count(t), 5);
    for (i = 0; i < 5; i++) {
        tr = route_transport_at(t, (int)i);
        assert_string_equal(tr->name, expected[i].name);
        assert_int_equal(tr->type, expected[i].type);
        assert_ptr_equal(route_transport_find(t, expected[i].name), tr);
    }
    assert_null(route_transport_at(t, 5));
    assert_null(route_transport_at(t, -1));
    assert_null(route_transport_find(t, "relay2"));
    assert_null(route_transport_find(t, "rela"));
    assert_string_equal(route_type_name(ROUTE_SMTP), "smtp");
    assert_string_equal(route_type_name(ROUTE_LMTP), "lmtp");
    assert_string_equal(route_type_name(ROUTE_DISCARD), "discard");
    assert_string_equal(route_type_name(ROUTE_ERROR), "error");
    routes(t, "user@example.com", "smtp", ROUTE_SMTP, "example.com", 0, 1,
           "smtp:example.com");
    route_free(t);
    route_free(NULL);
}

static void test_declared_transports(void **state)
{
    struct route_table *t = load_conf_ok(conf_with(
        "transports", "out:smtp,fast-lane:smtp  bounce_all:error,\n lmtp2:lmtp",
        "default_transport", "out", NULL));

    (void)state;
    assert_int_equal(route_transport_count(t), 4);
    assert_string_equal(route_transport_at(t, 1)->name, "fast-lane");
    assert_int_equal(route_transport_at(t, 2)->type, ROUTE_ERROR);
    assert_int_equal(route_transport_find(t, "lmtp2")->type, ROUTE_LMTP);
    assert_null(route_transport_find(t, "smtp"));
    routes(t, "a@Example.com", "out", ROUTE_SMTP, "example.com", 0, 1,
           "out:example.com");
    route_free(t);
}

static void test_transport_errors(void **state)
{
    (void)state;
    load_conf_fails(conf_with("transports", "smtp:smtp relay", NULL),
                    "transports: bad entry \"relay\": expected NAME:TYPE");
    load_conf_fails(conf_with("transports", "smtp:smtp, pigeon:carrier", NULL),
                    "transports: bad entry \"pigeon:carrier\": unknown type: "
                    "expected smtp, lmtp, discard, error or agent");
    load_conf_fails(conf_with("transports", "smtp:SMTP", NULL),
                    "transports: bad entry \"smtp:SMTP\": unknown type: "
                    "expected smtp, lmtp, discard, error or agent");
    load_conf_fails(conf_with("transports", "smtp:", NULL),
                    "transports: bad entry \"smtp:\": unknown type: expected "
                    "smtp, lmtp, discard, error or agent");
    load_conf_fails(conf_with("transports", "smtp:smtp:smtp", NULL),
                    "transports: bad entry \"smtp:smtp:smtp\": unknown type: "
                    "expected smtp, lmtp, discard, error or agent");
    load_conf_fails(conf_with("transports", "Smtp:smtp", NULL),
                    "transports: bad entry \"Smtp:smtp\": a transport name is "
                    "1 to 63 of a-z, 0-9, _ and -");
    load_conf_fails(conf_with("transports", ":smtp", NULL),
                    "transports: bad entry \":smtp\": a transport name is 1 "
                    "to 63 of a-z, 0-9, _ and -");
    load_conf_fails(conf_with("transports", "a.b:smtp", NULL),
                    "transports: bad entry \"a.b:smtp\": a transport name is "
                    "1 to 63 of a-z, 0-9, _ and -");
    load_conf_fails(
        conf_with("transports",
                  "a234567890123456789012345678901234567890123456789012345678"
                  "901234:smtp",
                  NULL),
        "transports: bad entry "
        "\"a234567890123456789012345678901234567890123456789012345678901234"
        "...\": a transport name is 1 to 63 of a-z, 0-9, _ and -");
    load_conf_fails(
        conf_with("transports", "smtp:smtp, relay:smtp, smtp:lmtp", NULL),
        "transports: transport \"smtp\" is declared twice");
    load_conf_fails(conf_with("transports", "", NULL),
                    "default_transport: \"smtp\" is not a declared transport "
                    "(see transports)");
    load_conf_fails(conf_with("default_transport", "rleay", NULL),
                    "default_transport: \"rleay\" is not a declared transport "
                    "(see transports)");
    load_conf_fails(conf_with("default_transport", "", NULL),
                    "default_transport: \"\" is not a declared transport (see "
                    "transports)");
    /* 63 bytes is fine. */
    route_free(load_conf_ok(conf_with(
        "transports",
        "a23456789012345678901234567890123456789012345678901234567890123:smtp",
        "default_transport",
        "a23456789012345678901234567890123456789012345678901234567890123",
        NULL)));
}

/* The queue and cache keys of address, checked apart. */
static void routes_keys(const struct route_table *t, const char *address,
                        const char *queue, const char *cache)
{
    struct route_result r;
    char why[WHY_SIZE] = "";

    if (route_resolve(t, address, &r, why, sizeof(why)) != 0)
        fail_msg("route_resolve(%s): %s", address, why);
    assert_string_equal(r.key.queue, queue);
    assert_string_equal(r.key.cache, cache);
}

/*
 * "_destination_recipient_limit = 1 makes the recipient its own
 * destination queue" (issue 16): the reference names the queue
 * "localpart@nexthop", lower-cased, so that concurrency and dead
 * destinations count per recipient, while connections stay shared per
 * next hop (the cache key does not change). The error transport keeps
 * one queue per text, as in the reference.
 */
/* The agent type (decision 129): its next hop is a host name. */
static void test_agent_transport(void **state)
{
    struct route_table *t;

    (void)state;
    table_write("a.example mdir:\n"
                "b.example mdir:Store1.Example\n");
    t = load_conf_ok(conf_with("transports", "smtp:smtp, mdir:agent",
                               "transport_maps", table, NULL));
    routes(t, "u@A.Example", "mdir", ROUTE_AGENT, "a.example", 0, 0,
           "mdir:a.example");
    routes(t, "u@b.example", "mdir", ROUTE_AGENT, "store1.example", 0, 0,
           "mdir:store1.example");
    assert_string_equal(route_type_name(ROUTE_AGENT), "agent");
    route_free(t);
    table_write("a.example mdir:[10.0.0.1]\n");
    t = load_conf_ok(conf_with("transports", "smtp:smtp, mdir:agent", NULL));
    route_free(t);
    {
        char full[WHY_SIZE];

        snprintf(full, sizeof(full),
                 "%s, line 1: bad nexthop \"[10.0.0.1]\" for transport "
                 "mdir: an agent's next hop is a host name",
                 table);
        load_conf_fails(conf_with("transports", "smtp:smtp, mdir:agent",
                                  "transport_maps", table, NULL),
                        full);
    }
}

static void test_per_recipient_queues(void **state)
{
    struct route_table *t;
    char text[256];

    (void)state;
    snprintf(text, sizeof(text),
             "gone.test error:5.1.1 no such user\n"
             "lmtp.test lmtp:[10.0.0.7]:24\n");
    table_write_n(text, strlen(text));
    t = load_conf_ok(conf_with("smtp_destination_recipient_limit", "1",
                               "lmtp_destination_recipient_limit", "1",
                               "error_destination_recipient_limit", "1",
                               "transport_maps", table, NULL));
    routes_keys(t, "Alice@Example.COM", "alice@example.com",
                "smtp:example.com");
    routes_keys(t, "bob@example.com", "bob@example.com", "smtp:example.com");
    routes_keys(t, "\"a b\"@example.com", "\"a b\"@example.com",
                "smtp:example.com");
    routes_keys(t, "carol@lmtp.test", "carol@[10.0.0.7]:24",
                "lmtp:[10.0.0.7]:24");
    routes_keys(t, "dave@gone.test", "5.1.1 no such user",
                "error:5.1.1 no such user");
    route_free(t);
    /* Any other limit: one queue per next hop, as before. */
    t = load_conf_ok(conf_with("smtp_destination_recipient_limit", "2", NULL));
    routes_keys(t, "alice@example.com", "example.com", "smtp:example.com");
    route_free(t);
}

static void test_relayhost(void **state)
{
    struct route_table *t;

    (void)state;
    t = load_conf_ok(conf_with("relayhost", "Relay.ISP.net", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "relay.isp.net", 0, 1,
           "smtp:relay.isp.net");
    route_free(t);
    t = load_conf_ok(conf_with("relayhost", "relay.isp.net:587", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "relay.isp.net", 587, 1,
           "smtp:relay.isp.net:587");
    route_free(t);
    t = load_conf_ok(conf_with("relayhost", "[relay.isp.net]", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "relay.isp.net", 0, 0,
           "smtp:[relay.isp.net]");
    route_free(t);
    t = load_conf_ok(conf_with("relayhost", "[10.0.0.1]:2525", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "10.0.0.1", 2525, 0,
           "smtp:[10.0.0.1]:2525");
    /* The relay host also carries mail for address literals. */
    routes(t, "u@[192.0.2.1]", "smtp", ROUTE_SMTP, "10.0.0.1", 2525, 0,
           "smtp:[10.0.0.1]:2525");
    route_free(t);
    t = load_conf_ok(
        conf_with("relayhost", "[IPv6:2001:DB8:0::1]:65535", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "2001:db8::1", 65535, 0,
           "smtp:[2001:db8::1]:65535");
    route_free(t);
    t = load_conf_ok(conf_with("relayhost", "[::1]", NULL));
    routes(t, "u@example.com", "smtp", ROUTE_SMTP, "::1", 0, 0, "smtp:[::1]");
    route_free(t);
    /* Through $name expansion, as a config file may have it. */
    t = load_conf_ok(conf_with("myhostname", "gw.example.com", "relayhost",
                               "[$myhostname]", "default_transport", "relay",
                               NULL));
    routes(t, "u@example.com", "relay", ROUTE_SMTP, "gw.example.com", 0, 0,
           "relay:[gw.example.com]");
    route_free(t);
}

static void test_relayhost_errors(void **state)
{
    static const struct {
        const char *value;
        const char *problem;
    } bad[] = {
        {"[10.0.0.1", "missing \"]\""},
        {"10.0.0.1", "an IP address needs brackets: [10.0.0.1]"},
        {"10.0.0.1:25", "an IP address needs brackets: [10.0.0.1]"},
        {"relay:0", "bad port: expected a number from 1 to 65535"},
        {"relay:65536", "bad port: expected a number from 1 to 65535"},
        {"relay:99999999999999999999",
         "bad port: expected a number from 1 to 65535"},
        {"relay:", "bad port: expected a number from 1 to 65535"},
        {"relay:smtp", "bad port: expected a number from 1 to 65535"},
        {"relay:25:26", "bad port: expected a number from 1 to 65535"},
        {"[relay]x", "unexpected text after the host"},
        {"[relay] :25", "unexpected text after the host"},
        {"relay..isp", "expected host, host:port, [host] or [host]:port"},
        {"relay.isp.", "expected host, host:port, [host] or [host]:port"},
        {"relay isp", "expected host, host:port, [host] or [host]:port"},
        {":25", "expected host, host:port, [host] or [host]:port"},
        {"2001:db8::1", "an IP address needs brackets: [2001:db8::1]"},
        {"2001:db8::1:25", "an IP address needs brackets: [2001:db8::1:25]"},
        {"[]", "expected a host name or an IP address between the brackets"},
        {"[relay:25]",
         "expected a host name or an IP address between the brackets"},
        {"[ipv6:10.0.0.1]",
         "expected a host name or an IP address between the brackets"},
        {"[2001:db8::g]",
         "expected a host name or an IP address between the brackets"},
    };
    char expected[WHY_SIZE];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(expected, sizeof(expected), "relayhost: bad value \"%s\": %s",
                 bad[i].value, bad[i].problem);
        load_conf_fails(conf_with("relayhost", bad[i].value, NULL), expected);
    }
}

static void test_default_transport_types(void **state)
{
    struct route_table *t;

    (void)state;
    /* LMTP never looks up MX, relay host or not. */
    t = load_conf_ok(conf_with("default_transport", "lmtp", NULL));
    routes(t, "u@Store.Example", "lmtp", ROUTE_LMTP, "store.example", 0, 0,
           "lmtp:store.example");
    route_free(t);
    t = load_conf_ok(conf_with("default_transport", "lmtp", "relayhost",
                               "[store.example]:24", NULL));
    routes(t, "u@x.example", "lmtp", ROUTE_LMTP, "store.example", 24, 0,
           "lmtp:store.example:24");
    route_free(t);
    /* discard and error get an empty text, relay host or not. */
    t = load_conf_ok(
        conf_with("default_transport", "error", "relayhost", "[relay]", NULL));
    routes(t, "u@x.example", "error", ROUTE_ERROR, "", 0, 0, "error:");
    route_free(t);
    t = load_conf_ok(conf_with("default_transport", "discard", NULL));
    routes(t, "u@x.example", "discard", ROUTE_DISCARD, "", 0, 0, "discard:");
    route_free(t);
}

/*
 * Issue 14: default_transport is TRANSPORT[:NEXTHOP], as the
 * reference's: "error:5.1.2 some text" bounces everything that no
 * table entry routes, with that text; a next hop there wins over the
 * relay host (the reference's order of precedence).
 */
static void test_default_transport_nexthop(void **state)
{
    struct route_table *t;

    (void)state;
    t = load_conf_ok(
        conf_with("default_transport", "error:5.1.2 some text", NULL));
    routes(t, "u@x.example", "error", ROUTE_ERROR, "5.1.2 some text", 0, 0,
           "error:5.1.2 some text");
    route_free(t);
    t = load_conf_ok(conf_with("default_transport", "discard:not wanted",
                               "relayhost", "[relay]", NULL));
    routes(t, "u@x.example", "discard", ROUTE_DISCARD, "not wanted", 0, 0,
           "discard:not wanted");
    route_free(t);
    t = load_conf_ok(conf_with("default_transport", "relay:[10.0.0.1]:2525",
                               "relayhost", "[relay]", NULL));
    routes(t, "u@x.example", "relay", ROUTE_SMTP, "10.0.0.1", 2525, 0,
           "relay:[10.0.0.1]:2525");
    route_free(t);
    t = load_conf_ok(
        conf_with("default_transport", "smtp:", "relayhost", "[relay]", NULL));
    routes(t, "u@x.example", "smtp", ROUTE_SMTP, "relay", 0, 0, "smtp:[relay]");
    route_free(t);
    /* the table still wins for what it names */
    table_write("a.example smtp:\n");
    t = load_conf_ok(conf_with("default_transport", "error:5.1.2 no route",
                               "transport_maps", table, NULL));
    routes(t, "u@a.example", "smtp", ROUTE_SMTP, "a.example", 0, 1,
           "smtp:a.example");
    routes(t, "u@b.example", "error", ROUTE_ERROR, "5.1.2 no route", 0, 0,
           "error:5.1.2 no route");
    route_free(t);
    load_conf_fails(conf_with("default_transport", "nosuch:x", NULL),
                    "default_transport: \"nosuch\" is not a declared "
                    "transport (see transports)");
    load_conf_fails(conf_with("default_transport", "smtp:[x", NULL),
                    "default_transport: bad next hop \"[x\" for transport "
                    "smtp: missing \"]\"");
}

static void test_lookup_order(void **state)
{
    struct route_table *t = table_ok("example.com smtp:exact\n"
                                     ".example.com smtp:sub\n"
                                     ".b.example.com smtp:sub-b\n"
                                     "c.b.example.com smtp:exact-c\n"
                                     ".com smtp:dot-com\n"
                                     "* smtp:star\n");

    (void)state;
    routes_key(t, "u@example.com", "smtp:exact");
    routes_key(t, "u@a.example.com", "smtp:sub");
    routes_key(t, "u@x.a.example.com", "smtp:sub");
    routes_key(t, "u@b.example.com", "smtp:sub");
    routes_key(t, "u@a.b.example.com", "smtp:sub-b");
    routes_key(t, "u@x.y.b.example.com", "smtp:sub-b");
    routes_key(t, "u@c.b.example.com", "smtp:exact-c");
    routes_key(t, "u@d.c.b.example.com", "smtp:sub-b");
    routes_key(t, "u@other.com", "smtp:dot-com");
    routes_key(t, "u@com", "smtp:star");
    routes_key(t, "u@example.net", "smtp:star");
    routes_key(t, "u@xexample.com", "smtp:dot-com");
    routes_key(t, "u@localhost", "smtp:star");
    route_free(t);

    /* Without "*": the default, to the relay host when there is one. */
    table_write("example.com smtp:exact\n.example.com smtp:sub\n");
    t = load_conf_ok(conf_with("transport_maps", table, NULL));
    routes_key(t, "u@example.com", "smtp:exact");
    routes_key(t, "u@example.net", "smtp:example.net");
    routes_key(t, "u@a.example.net", "smtp:a.example.net");
    route_free(t);
    t = load_conf_ok(conf_with("transport_maps", table, "relayhost",
                               "[relay.isp.net]:587", NULL));
    routes_key(t, "u@example.com", "smtp:exact");
    routes_key(t, "u@x.example.com", "smtp:sub");
    routes(t, "u@example.net", "smtp", ROUTE_SMTP, "relay.isp.net", 587, 0,
           "smtp:[relay.isp.net]:587");
    route_free(t);
}

static void test_result_forms(void **state)
{
    struct route_table *t;

    (void)state;
    table_write("# Every form of result.\n"
                "\n"
                "   \t\n"
                "a.example relay:[10.0.0.1]:2525\n"
                "b.example relay:\n"
                "c.example relay\n"
                "d.example :mx.Example.NET\n"
                "e.example :\n"
                "f.example smtp:mx.example.net:2525\n"
                "g.example smtp:[mx.example.net]\n"
                "h.example lmtp:[store.example]\n"
                "i.example lmtp:store.example\n"
                "j.example lmtp:[10.0.0.2]:24\n"
                "k.example smtp:[IPv6:2001:db8::5]:26\n"
                "l.example lmtp:[2001:DB8::6]\n"
                "m.example error:5.1.1 no such user\n"
                "n.example error:\n"
                "o.example discard:silently dropped\n"
                "p.example discard\n"
                "  # a comment inside does not end the line above\n"
                "q.example\terror:5.7.1 this line\n"
                "  continues here\n"
                "\tand here\n"
                "r.example    relay  :   [10.0.0.3]   \r\n"
                "s.example smtp:[127.0.0.1]:25\n"
                "t.example lmtp:unix:/run/dovecot/lmtp\n");
    t = load_conf_ok(conf_with("transport_maps", table, "relayhost",
                               "[relay.isp.net]", NULL));
    routes(t, "u@a.example", "relay", ROUTE_SMTP, "10.0.0.1", 2525, 0,
           "relay:[10.0.0.1]:2525");
    routes(t, "u@b.example", "relay", ROUTE_SMTP, "b.example", 0, 1,
           "relay:b.example");
    routes(t, "u@c.example", "relay", ROUTE_SMTP, "c.example", 0, 1,
           "relay:c.example");
    routes(t, "u@d.example", "smtp", ROUTE_SMTP, "mx.example.net", 0, 1,
           "smtp:mx.example.net");
    /* ":" is the default transport straight to the domain: no relay. */
    routes(t, "u@e.example", "smtp", ROUTE_SMTP, "e.example", 0, 1,
           "smtp:e.example");
    routes(t, "u@f.example", "smtp", ROUTE_SMTP, "mx.example.net", 2525, 1,
           "smtp:mx.example.net:2525");
    routes(t, "u@g.example", "smtp", ROUTE_SMTP, "mx.example.net", 0, 0,
           "smtp:[mx.example.net]");
    /* LMTP: one destination however it is written. */
    routes(t, "u@h.example", "lmtp", ROUTE_LMTP, "store.example", 0, 0,
           "lmtp:store.example");
    routes(t, "u@i.example", "lmtp", ROUTE_LMTP, "store.example", 0, 0,
           "lmtp:store.example");
    routes(t, "u@j.example", "lmtp", ROUTE_LMTP, "10.0.0.2", 24, 0,
           "lmtp:[10.0.0.2]:24");
    routes(t, "u@k.example", "smtp", ROUTE_SMTP, "2001:db8::5", 26, 0,
           "smtp:[2001:db8::5]:26");
    routes(t, "u@l.example", "lmtp", ROUTE_LMTP, "2001:db8::6", 0, 0,
           "lmtp:[2001:db8::6]");
    routes(t, "u@m.example", "error", ROUTE_ERROR, "5.1.1 no such user", 0, 0,
           "error:5.1.1 no such user");
    routes(t, "u@n.example", "error", ROUTE_ERROR, "", 0, 0, "error:");
    routes(t, "u@o.example", "discard", ROUTE_DISCARD, "silently dropped", 0, 0,
           "discard:silently dropped");
    routes(t, "u@p.example", "discard", ROUTE_DISCARD, "", 0, 0, "discard:");
    routes(t, "u@q.example", "error", ROUTE_ERROR,
           "5.7.1 this line continues here and here", 0, 0,
           "error:5.7.1 this line continues here and here");
    routes(t, "u@r.example", "relay", ROUTE_SMTP, "10.0.0.3", 0, 0,
           "relay:[10.0.0.3]");
    routes(t, "u@s.example", "smtp", ROUTE_SMTP, "127.0.0.1", 25, 0,
           "smtp:[127.0.0.1]:25");
    /* LMTP over a local socket: the path is the next hop. */
    routes(t, "u@t.example", "lmtp", ROUTE_LMTP, "/run/dovecot/lmtp", 0, 0,
           "lmtp:unix:/run/dovecot/lmtp");
    {
        struct route_result r;
        char why[WHY_SIZE];

        assert_int_equal(route_resolve(t, "u@t.example", &r, why, sizeof(why)),
                         0);
        assert_int_equal(r.unix_path, 1);
        assert_int_equal(route_resolve(t, "u@s.example", &r, why, sizeof(why)),
                         0);
        assert_int_equal(r.unix_path, 0);
    }
    /* No match: the default transport to the relay host. */
    routes(t, "u@z.example", "smtp", ROUTE_SMTP, "relay.isp.net", 0, 0,
           "smtp:[relay.isp.net]");
    route_free(t);
}

static void test_nexthop_format(void **state)
{
    struct route_table *t = table_ok("a.example relay:[10.0.0.1]:2525\n"
                                     "b.example smtp:mx.example.net\n"
                                     "c.example lmtp:[::1]:24\n"
                                     "d.example error:5.1.1 gone\n");
    struct route_result r;
    char why[WHY_SIZE];
    char buf[64];

    (void)state;
    assert_int_equal(route_resolve(t, "u@a.example", &r, why, sizeof(why)), 0);
    assert_int_equal(route_nexthop_format(&r, buf, sizeof(buf)), 15);
    assert_string_equal(buf, "[10.0.0.1]:2525");
    /* snprintf()-style: the length it needed, cut short to fit. */
    assert_int_equal(route_nexthop_format(&r, buf, 5), 15);
    assert_string_equal(buf, "[10.");
    assert_int_equal(route_resolve(t, "u@b.example", &r, why, sizeof(why)), 0);
    route_nexthop_format(&r, buf, sizeof(buf));
    assert_string_equal(buf, "mx.example.net");
    assert_int_equal(route_resolve(t, "u@c.example", &r, why, sizeof(why)), 0);
    route_nexthop_format(&r, buf, sizeof(buf));
    assert_string_equal(buf, "[::1]:24");
    assert_int_equal(route_resolve(t, "u@d.example", &r, why, sizeof(why)), 0);
    route_nexthop_format(&r, buf, sizeof(buf));
    assert_string_equal(buf, "5.1.1 gone");
    route_free(t);
}

static void test_address_literals(void **state)
{
    struct route_table *t;

    (void)state;
    t = load_conf_ok(conf_with(NULL));
    routes(t, "u@[192.0.2.1]", "smtp", ROUTE_SMTP, "192.0.2.1", 0, 0,
           "smtp:[192.0.2.1]");
    routes(t, "u@[IPv6:2001:DB8:0:0::1]", "smtp", ROUTE_SMTP, "2001:db8::1", 0,
           0, "smtp:[2001:db8::1]");
    routes(t, "u@[ipv6:::1]", "smtp", ROUTE_SMTP, "::1", 0, 0, "smtp:[::1]");
    route_free(t);

    t = table_ok("[192.0.2.1] relay:[10.0.0.9]\n"
                 "[IPv6:2001:db8::1] discard:v6\n"
                 ".0.2.1 error:never\n"
                 "* relay:\n");
    routes(t, "u@[192.0.2.1]", "relay", ROUTE_SMTP, "10.0.0.9", 0, 0,
           "relay:[10.0.0.9]");
    routes(t, "u@[IPv6:2001:db8:0::1]", "discard", ROUTE_DISCARD, "v6", 0, 0,
           "discard:v6");
    /* Parent patterns do not apply to literals; "*" does. */
    routes(t, "u@[198.0.2.1]", "relay", ROUTE_SMTP, "198.0.2.1", 0, 0,
           "relay:[198.0.2.1]");
    routes(t, "u@[IPv6:2001:db8::2]", "relay", ROUTE_SMTP, "2001:db8::2", 0, 0,
           "relay:[2001:db8::2]");
    route_free(t);
}

static void test_upper_case(void **state)
{
    struct route_table *t = table_ok("Example.COM relay:[MX.Example.COM]\n"
                                     ".Sub.Example.ORG lmtp:Store.Example\n");

    (void)state;
    routes(t, "John.Doe@EXAMPLE.com", "relay", ROUTE_SMTP, "mx.example.com", 0,
           0, "relay:[mx.example.com]");
    routes(t, "x@A.SUB.example.org", "lmtp", ROUTE_LMTP, "store.example", 0, 0,
           "lmtp:store.example");
    routes(t, "Y@Other.NET", "smtp", ROUTE_SMTP, "other.net", 0, 1,
           "smtp:other.net");
    /* The local part is never touched; the last "@" starts the domain. */
    routes(t, "\"a@b\"@Other.NET", "smtp", ROUTE_SMTP, "other.net", 0, 1,
           "smtp:other.net");
    /* 8-bit domains pass through unchanged (lower-casing is ASCII only). */
    routes(t,
           "u@B\xc3\x9c"
           "cher.Example",
           "smtp", ROUTE_SMTP,
           "b\xc3\x9c"
           "cher.example",
           0, 1,
           "smtp:b\xc3\x9c"
           "cher.example");
    route_free(t);
}

static void test_address_errors(void **state)
{
    struct route_table *t = load_conf_ok(conf_with(NULL));
    char longdomain[300];
    char label[80];
    char address[400];
    char key[400];
    char expected[WHY_SIZE];
    size_t i;

    (void)state;
    resolve_fails(t, "", "the null address has no route");
    resolve_fails(t, NULL, "the null address has no route");
    resolve_fails(t, "postmaster", "bad address \"postmaster\": no @domain");
    resolve_fails(t, "@example.com",
                  "bad address \"@example.com\": empty local part");
    resolve_fails(t, "user@", "bad address \"user@\": empty domain");
    resolve_fails(t, "user@exa mple.com",
                  "bad address \"user@exa mple.com\": bad domain");
    resolve_fails(t, "user@example..com",
                  "bad address \"user@example..com\": bad domain");
    resolve_fails(t, "user@.example.com",
                  "bad address \"user@.example.com\": bad domain");
    resolve_fails(t, "user@example.com.",
                  "bad address \"user@example.com.\": bad domain");
    resolve_fails(t, "user@ex\x01mple",
                  "bad address \"user@ex\\x01mple\": bad domain");
    resolve_fails(t, "user@[192.0.2]",
                  "bad address \"user@[192.0.2]\": bad address literal: "
                  "expected [IPv4] or [IPv6:address]");
    resolve_fails(t, "user@[mail.example.com]",
                  "bad address \"user@[mail.example.com]\": bad address "
                  "literal: expected [IPv4] or [IPv6:address]");
    resolve_fails(t, "user@[IPv6:192.0.2.1]",
                  "bad address \"user@[IPv6:192.0.2.1]\": bad address "
                  "literal: expected [IPv4] or [IPv6:address]");
    resolve_fails(t, "user@[192.0.2.1",
                  "bad address \"user@[192.0.2.1\": bad address literal: "
                  "expected [IPv4] or [IPv6:address]");
    /* A 63-byte label and a 255-byte domain are the limits. */
    memset(label, 'a', 63);
    label[63] = 0;
    snprintf(address, sizeof(address), "u@%s.example", label);
    snprintf(key, sizeof(key), "smtp:%s.example", label);
    routes_key(t, address, key);
    label[63] = 'a';
    label[64] = 0;
    snprintf(address, sizeof(address), "u@%s.example", label);
    snprintf(expected, sizeof(expected),
             "bad address \"u@%.62s...\": bad "
             "domain",
             label);
    resolve_fails(t, address, expected);
    memset(longdomain, 0, sizeof(longdomain));
    for (i = 0; i < 255; i++)
        longdomain[i] = (i % 2) ? '.' : 'x';
    snprintf(address, sizeof(address), "u@%s", longdomain);
    snprintf(key, sizeof(key), "smtp:%s", longdomain);
    routes_key(t, address, key);
    snprintf(address, sizeof(address), "u@x.%s", longdomain);
    resolve_fails(t, address,
                  "bad address \"u@x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x."
                  "x.x.x.x.x.x.x.x.x.x....\": bad domain");
    route_free(t);
}

static void test_table_errors(void **state)
{
    char longline[70 * 1024];

    (void)state;
    table_fails("example.com smtp:\nuser@example.com smtp:\n", 2,
                "bad pattern \"user@example.com\": addresses are not "
                "supported, only domains");
    table_fails("example.com lmtp:unix:relative/path\n", 1,
                "bad nexthop \"unix:relative/path\" for transport lmtp: a "
                "local socket is an absolute path (unix:/path)");
    table_fails("example.com smtp:unix:/run/sock\n", 1,
                "bad nexthop \"unix:/run/sock\" for transport smtp: only lmtp "
                "delivers to a local socket");
    table_fails("*.example.com smtp:\n", 1,
                "bad pattern \"*.example.com\": write \".example.com\" for "
                "the subdomains of example.com");
    table_fails("\n\nx..y smtp:\n", 3,
                "bad pattern \"x..y\": expected a domain, .domain, [address] "
                "or *");
    table_fails(". smtp:\n", 1,
                "bad pattern \".\": expected a domain, .domain, [address] or "
                "*");
    table_fails(".[192.0.2.1] smtp:\n", 1,
                "bad pattern \".[192.0.2.1]\": expected a domain, .domain, "
                "[address] or *");
    table_fails("[192.0.2] smtp:\n", 1,
                "bad pattern \"[192.0.2]\": expected a domain, .domain, "
                "[address] or *");
    table_fails("** smtp:\n", 1,
                "bad pattern \"**\": expected a domain, .domain, [address] "
                "or *");
    table_fails("# first\nexample.com smtp:\n\n  # more\nExample.COM relay:\n",
                5, "duplicate pattern \"example.com\" (first on line 2)");
    table_fails(".example.com smtp:\n.EXAMPLE.com relay:\n", 2,
                "duplicate pattern \".example.com\" (first on line 1)");
    table_fails("* smtp:\na smtp:\n* relay:\n", 3,
                "duplicate pattern \"*\" (first on line 1)");
    table_fails("[IPv6:2001:db8::1] smtp:\n[ipv6:2001:DB8:0::1] relay:\n", 2,
                "duplicate pattern \"[ipv6:2001:db8::1]\" (first on line 1)");
    table_fails("example.com smtp:\nexample.net\n", 2,
                "no result after pattern \"example.net\": expected PATTERN "
                "TRANSPORT:NEXTHOP");
    table_fails("example.com rleay:[10.0.0.1]\n", 1,
                "unknown transport \"rleay\"");
    table_fails("example.com mx.example.net\n", 1,
                "unknown transport \"mx.example.net\" (a result is "
                "transport:nexthop)");
    table_fails("example.com smtp [10.0.0.1]:25\n", 1,
                "unknown transport \"smtp [10.0.0.1]\"");
    table_fails("example.com SMTP:\n", 1, "unknown transport \"SMTP\"");
    table_fails("example.com relay:[10.0.0.1\n", 1,
                "bad nexthop \"[10.0.0.1\" for transport relay: missing "
                "\"]\"");
    table_fails("example.com relay:10.0.0.1\n", 1,
                "bad nexthop \"10.0.0.1\" for transport relay: an IP address "
                "needs brackets: [10.0.0.1]");
    table_fails("example.com :[10.0.0.1]:0\n", 1,
                "bad nexthop \"[10.0.0.1]:0\" for transport smtp: bad port: "
                "expected a number from 1 to 65535");
    table_fails("example.com relay:mx.example.net extra\n", 1,
                "bad nexthop \"mx.example.net extra\" for transport relay: "
                "expected host, host:port, [host] or [host]:port");
    table_fails("example.com lmtp:[store] 24\n", 1,
                "bad nexthop \"[store] 24\" for transport lmtp: unexpected "
                "text after the host");
    table_fails("a smtp:\nb\n  relay:[x\n", 2,
                "bad nexthop \"[x\" for transport relay: missing \"]\"");
    table_fails_n("a smtp:\nb smtp:\0\n", 16, 2, "line contains a NUL byte");
    table_fails("  a smtp:\n", 1,
                "continuation line (starting with white space) with nothing "
                "before it");
    table_fails("# comment\n\n\tb smtp:\n", 3,
                "continuation line (starting with white space) with nothing "
                "before it");
    memset(longline, 'x', sizeof(longline) - 1);
    memcpy(longline, "a error:", 8);
    longline[sizeof(longline) - 1] = 0;
    table_fails(longline, 1, "line longer than 65536 bytes");
    /* A logical line too long from its continuations. */
    memset(longline, 'y', sizeof(longline) - 1);
    memcpy(longline, "a error:", 8);
    for (size_t i = 1000; i + 1 < sizeof(longline); i += 1000)
        longline[i] = '\n', longline[i + 1] = ' ';
    longline[sizeof(longline) - 1] = 0;
    table_fails(longline, 1, "logical line longer than 65536 bytes");
    /* Text over ROUTE_NEXTHOP_MAX bytes. */
    memset(longline, 'y', 600);
    memcpy(longline, "a error:", 8);
    longline[600] = '\n';
    longline[601] = 0;
    table_fails(longline, 1,
                "bad nexthop \"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                "yyyyyyyyyyyyyyyyy...\" for transport error: longer than 511 "
                "bytes");
}

static void test_table_file_errors(void **state)
{
    char expected[WHY_SIZE];
    char path[256];

    (void)state;
    snprintf(path, sizeof(path), "%s/none", dir);
    snprintf(expected, sizeof(expected), "%s: No such file or directory", path);
    load_conf_fails(conf_with("transport_maps", path, NULL), expected);
    snprintf(path, sizeof(path), "%s/sub", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(expected, sizeof(expected), "%s: Is a directory", path);
    load_conf_fails(conf_with("transport_maps", path, NULL), expected);
    load_conf_fails(conf_with("transport_maps", "ldap:/etc/x.cf", NULL),
                    "transport_maps: table type \"ldap\" is not supported: "
                    "expected the path of a text file");
    load_conf_fails(conf_with("transport_maps", "/a, /b", NULL),
                    "transport_maps: bad value \"/a, /b\": expected the path "
                    "of one text file");
    load_conf_fails(conf_with("transport_maps", "hash:", NULL),
                    "transport_maps: bad value \"hash:\": expected the path of "
                    "one text file");
    /* Postfix's hash: and texthash: name the text source here. */
    table_write("example.com relay:\n");
    snprintf(path, sizeof(path), "hash:%s", table);
    route_free(load_conf_ok(conf_with("transport_maps", path, NULL)));
    snprintf(path, sizeof(path), "texthash:%s", table);
    route_free(load_conf_ok(conf_with("transport_maps", path, NULL)));
    /* An empty table is fine. */
    route_free(table_ok(""));
    route_free(table_ok("# nothing\n\n"));
}

/* Largest resident size so far, in kilobytes. */
static long max_rss_kb(void)
{
    struct rusage ru;

    assert_int_equal(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/*
 * Issue 14: a table with a line of unbounded length made getline()
 * grow without limit (a 100 MB line; /dev/zero never ends). A line is
 * read up to the stated limit and no further, and what is not a
 * regular file is refused before it is read.
 */
static void test_table_unbounded_line(void **state)
{
    char expected[WHY_SIZE];
    char why[WHY_SIZE] = "";
    size_t chunk = 1024 * 1024;
    char *junk = malloc(chunk);
    long before;
    FILE *fp;

    (void)state;
    load_conf_fails(conf_with("transport_maps", "/dev/zero", NULL),
                    "/dev/zero: not a regular file");
    assert_non_null(junk);
    memset(junk, 'b', chunk);
    fp = fopen(table, "w");
    assert_non_null(fp);
    fputs("a.test relay:[127.0.0.1]:25\n", fp);
    for (int i = 0; i < 100; i++)
        assert_int_equal(fwrite(junk, 1, chunk, fp), chunk);
    fputs(" relay:\n", fp);
    assert_int_equal(fclose(fp), 0);
    free(junk);
    before = max_rss_kb();
    assert_null(try_load(why));
    snprintf(expected, sizeof(expected),
             "%s, line 2: line longer than 65536 bytes", table);
    assert_string_equal(why, expected);
    /* far less than the 100 MB of the line */
    assert_true(max_rss_kb() - before < 16 * 1024);
    unlink(table);
}

/*
 * 100,000 lines: 50,000 domains and 50,000 parent patterns, each with
 * its own next hop, resolved one by one.
 */
#define BIG 50000

static void test_big_table(void **state)
{
    struct route_table *t;
    char address[128];
    char key[128];
    FILE *fp;
    int i;

    (void)state;
    fp = fopen(table, "w");
    assert_non_null(fp);
    for (i = 0; i < BIG; i++) {
        fprintf(fp, "d%d.Example relay:[10.%d.%d.%d]:%d\n", i, i >> 16,
                (i >> 8) & 255, i & 255, 1 + i % 65535);
        fprintf(fp, ".p%d.example smtp:mx%d.example.net\n", i, i);
    }
    assert_int_equal(fclose(fp), 0);
    t = load_conf_ok(conf_with("transport_maps", table, NULL));
    for (i = 0; i < BIG; i++) {
        snprintf(address, sizeof(address), "user%d@D%d.example", i, i);
        snprintf(key, sizeof(key), "relay:[10.%d.%d.%d]:%d", i >> 16,
                 (i >> 8) & 255, i & 255, 1 + i % 65535);
        routes_key(t, address, key);
        snprintf(address, sizeof(address), "user@a.b.p%d.example", i);
        snprintf(key, sizeof(key), "smtp:mx%d.example.net", i);
        routes_key(t, address, key);
        /* p%d.example itself is not a subdomain of itself. */
        snprintf(address, sizeof(address), "user@p%d.example", i);
        snprintf(key, sizeof(key), "smtp:p%d.example", i);
        routes_key(t, address, key);
    }
    routes_key(t, "u@d50000.example", "smtp:d50000.example");
    route_free(t);
}

static void test_reload(void **state)
{
    struct route_table *old;
    struct route_table *t;
    struct route_result copy;
    struct route_result r;
    char why[WHY_SIZE];

    (void)state;
    old = table_ok("example.com relay:[10.0.0.1]\n");
    assert_int_equal(route_resolve(old, "u@example.com", &r, why, sizeof(why)),
                     0);
    /* A bad new table leaves the old one working. */
    table_write("example.com relay:[10.0.0.2\n");
    assert_null(try_load(why));
    routes_key(old, "u@example.com", "relay:[10.0.0.1]");
    t = table_ok("example.com relay:[10.0.0.2]\n");
    route_free(old);
    /* A result outlives its table and may be copied. */
    copy = r;
    route_free(t);
    assert_string_equal(copy.key.cache, "relay:[10.0.0.1]");
    assert_string_equal(copy.key.queue, "[10.0.0.1]");
    assert_string_equal(copy.transport, "relay");
    assert_string_equal(copy.nexthop, "10.0.0.1");
}

/* Tiny deterministic generator (xorshift), so that failures repeat. */
static uint32_t rnd_state = 2463534242u;

static uint32_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 17;
    rnd_state ^= rnd_state << 5;
    return rnd_state;
}

static void test_random_junk(void **state)
{
    static const char alphabet[] = "abcxyz019.-_*@[]:#\t \n\r\"\\\x01\xff"
                                   "smtprelayerrordiscard";
    static const char *addresses[] = {
        "u@a",  "u@b.c", "u@[1.2.3.4]", "u@[ipv6:::1]", "@",   "u@.",
        "u@[]", "a@@b",  "u@x..",       "u@*",          "u@[",
    };
    struct route_result r;
    struct route_table *t;
    char text[512];
    char why[WHY_SIZE];
    size_t len;
    size_t i;
    int round;
    int loaded = 0;

    (void)state;
    for (round = 0; round < 2000; round++) {
        len = rnd() % sizeof(text);
        for (i = 0; i < len; i++)
            text[i] = alphabet[rnd() % (sizeof(alphabet) - 1)];
        table_write_n(text, len);
        why[0] = 0;
        t = try_load(why);
        if (t == NULL) {
            assert_true(strncmp(why, table, strlen(table)) == 0);
            continue;
        }
        loaded++;
        for (i = 0; i < sizeof(addresses) / sizeof(addresses[0]); i++)
            if (route_resolve(t, addresses[i], &r, why, sizeof(why)) == 0)
                assert_true(strncmp(r.key.cache, r.transport,
                                    strlen(r.transport)) == 0);
        route_free(t);
    }
    /* Some junk is a valid table (empty, or comments only). */
    assert_true(loaded > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_transports),
        cmocka_unit_test(test_declared_transports),
        cmocka_unit_test(test_transport_errors),
        cmocka_unit_test(test_relayhost),
        cmocka_unit_test(test_relayhost_errors),
        cmocka_unit_test(test_default_transport_types),
        cmocka_unit_test(test_default_transport_nexthop),
        cmocka_unit_test(test_lookup_order),
        cmocka_unit_test(test_result_forms),
        cmocka_unit_test(test_nexthop_format),
        cmocka_unit_test(test_address_literals),
        cmocka_unit_test(test_upper_case),
        cmocka_unit_test(test_address_errors),
        cmocka_unit_test(test_table_errors),
        cmocka_unit_test(test_table_file_errors),
        cmocka_unit_test(test_table_unbounded_line),
        cmocka_unit_test(test_big_table),
        cmocka_unit_test(test_reload),
        cmocka_unit_test(test_agent_transport),
        cmocka_unit_test(test_per_recipient_queues),
        cmocka_unit_test(test_random_junk),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
