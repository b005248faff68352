/*
 * test_dns - MX, A, AAAA, TLSA and TXT lookups against real and fake
 * name servers
 *
 * The real server is dnsmasq (../shared/TESTING-PEERS.md), started by
 * this test on a free loopback port, twice: one instance serves the
 * records of the test domains as local data (NXDOMAIN and no-data
 * answers without an SOA record), the other is authoritative for
 * auth.test (negative answers with an SOA record). Both are stopped by
 * their PIDs in the group teardown, and die with the test if it
 * crashes (PR_SET_PDEATHSIG).
 *
 * The fake server lives on the test's own event loop: a UDP socket that
 * answers in one chosen way (not at all, SERVFAIL, FORMERR, a malformed
 * reply, NXDOMAIN with an SOA of a chosen TTL and minimum, records in a
 * known order, an MX record and then silence, records with the AD bit
 * set), for what dnsmasq will not do on demand. It also counts the
 * questions that carried the AD bit and EDNS0's DO bit.
 *
 * dnsmasq validates nothing and sets no AD bit: against it every result
 * has secure = 0. What a validating resolver says is tested twice: with
 * the fake server's AD bit here, and with a real unbound validating a
 * signed zone in tests/integration/dns_dnssec.sh.
 *
 * The cache's clock is the test's (dns_set_clock()), so TTLs are tested
 * without sleeping; the counters of dns_stats() say how many queries
 * went out. Every callback checks that it is not called from inside
 * the lookup call. Without dnsmasq the tests that need it fail and name
 * the package (dnsmasq-base); the others run.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/un.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "dns/dns.h"
#include "util/util.h"

#include "dnsmasq_fixture.h"

/* ---- dnsmasq ---- */

static const char *local_records[] = {
    "--local=/test/",
    "--local=/127.in-addr.arpa/",
    "--local=/ip6.arpa/",
    /* client names (peer.c): confirmed, a liar, an address, two, gone */
    "--host-record=good.peer.test,127.0.0.2,fd00::2",
    "--ptr-record=3.0.0.127.in-addr.arpa,liar.peer.test",
    "--host-record=liar.peer.test,127.0.0.33",
    "--ptr-record=5.0.0.127.in-addr.arpa,127.0.0.5",
    "--ptr-record=6.0.0.127.in-addr.arpa,two.peer.test",
    "--ptr-record=6.0.0.127.in-addr.arpa,nope.peer.test",
    "--host-record=two.peer.test,127.0.0.6",
    "--host-record=nope.peer.test,127.0.0.66",
    "--ptr-record=7.0.0.127.in-addr.arpa,gone.peer.test",
    "--local-ttl=300",
    "--mx-host=pref.test,mx2.pref.test,20",
    "--mx-host=pref.test,mx1.pref.test,10",
    "--host-record=mx1.pref.test,127.0.0.11,fd00::11",
    "--host-record=mx2.pref.test,127.0.0.12",
    "--mx-host=eq.test,mxa.eq.test,10",
    "--mx-host=eq.test,mxb.eq.test,10",
    "--mx-host=eq.test,mxc.eq.test,10",
    "--host-record=mxa.eq.test,127.0.0.21",
    "--host-record=mxb.eq.test,127.0.0.22",
    "--host-record=mxc.eq.test,127.0.0.23",
    "--host-record=implicit.test,127.0.0.30,fd00::30",
    "--mx-host=nullmx.test,.,0",
    "--mx-host=nullmx2.test,.,0",
    "--mx-host=nullmx2.test,mx1.pref.test,10",
    "--mx-host=badmx.test,missing.badmx.test,10",
    "--mx-host=halfbad.test,missing.halfbad.test,10",
    "--mx-host=halfbad.test,mx2.pref.test,20",
    "--mx-host=nodata.test,pref.test,10",
    "--mx-host=v6.test,mx.v6.test,10",
    "--host-record=mx.v6.test,fd00::60",
    "--mx-host=cn.test,alias.cn.test,5",
    "--cname=alias.cn.test,real.cn.test,7",
    "--host-record=real.cn.test,127.0.0.70",
    "--cname=mxalias.test,cn.test",
    "--mx-host=dang.test,dangling.test,10",
    "--cname=dangling.test,nothere.test",
    "--mx-host=ttl.test,mx.ttl.test,10",
    "--host-record=mx.ttl.test,127.0.0.80,5",
    "--host-record=multi.test,127.0.0.41,20",
    "--host-record=multi.test,127.0.0.42,10",
    "--mx-host=literal.test,127.0.0.99,10",
    "--mx-host=dup.test,mx1.pref.test,30",
    "--mx-host=dup.test,mx2.pref.test,20",
    "--mx-host=dup.test,mx1.pref.test,10",
    /* TLSA (type 52): 3 1 1 and 32 bytes; 2 0 1 and 3 bytes. */
    "--dns-rr=_25._tcp.mx1.pref.test,52,030101"
    "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
    "--dns-rr=_25._tcp.mx2.pref.test,52,020001aabbcc",
    "--dns-rr=_25._tcp.short.test,52,0301",
    "--dns-rr=_25._tcp.short.test,52,030100ff",
    "--txt-record=_465._tcp.mx1.pref.test,not a TLSA record",
    "--cname=_25._tcp.alias.cn.test,_25._tcp.mx2.pref.test",
    "--txt-record=_mta-sts.pref.test,v=STSv1; id=20240101",
    "--txt-record=_smtp._tls.pref.test,v=TLSRPTv1; ,rua=mailto:r@pref.test",
    NULL,
};

/* cap.test: CAP_HOSTS exchangers hNN.cap.test, preference NN. */
#define CAP_HOSTS 70
static char cap_records[2 * CAP_HOSTS][64];

static const char *auth_records[] = {
    "--auth-server=ns.auth.test,127.0.0.1",
    "--auth-zone=auth.test",
    "--auth-soa=1,hostmaster.auth.test,1200,120,604800",
    "--auth-ttl=120",
    "--mx-host=auth.test,mx.auth.test,10",
    "--host-record=mx.auth.test,127.0.0.90",
    NULL,
};

static struct peer local_dns, auth_dns;

static int group_setup(void **state)
{
    int i;

    (void)state;
    if ((dnsmasq_path = find_dnsmasq()) == NULL)
        return 0;
    for (i = 0; i < CAP_HOSTS; i++) {
        snprintf(cap_records[2 * i], sizeof(cap_records[0]),
                 "--mx-host=cap.test,h%02d.cap.test,%d", i, i);
        snprintf(cap_records[2 * i + 1], sizeof(cap_records[0]),
                 "--host-record=h%02d.cap.test,127.0.1.%d", i, i);
    }
    if (peer_start(&local_dns, local_records, cap_records, 2 * CAP_HOSTS,
                   "mx1.pref.test") < 0 ||
        peer_start(&auth_dns, auth_records, NULL, 0, "mx.auth.test") < 0) {
        fprintf(stderr,
                "cannot start %s (SLUICE_TEST_VERBOSE=1 shows "
                "its messages)\n",
                dnsmasq_path);
        peer_stop(&local_dns);
        return -1;
    }
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    peer_stop(&local_dns);
    peer_stop(&auth_dns);
    return 0;
}

/* A missing peer fails and names the package that brings it. */
#define NEED_DNSMASQ()                                                         \
    do {                                                                       \
        if (dnsmasq_path == NULL)                                              \
            fail_msg("dnsmasq is not installed: install the Debian package "   \
                     "dnsmasq-base (bash .ci/install-deps)");                  \
    } while (0)

/* ---- the loop, the clock, running lookups ---- */

static struct event_base *base;
static int64_t now_ms;
static int in_call; /* inside dns_lookup_*(): no callback may run */

static int64_t test_clock(void *ctx)
{
    (void)ctx;
    return now_ms;
}

static int loop_setup(void **state)
{
    (void)state;
    base = event_base_new();
    now_ms = 1000000;
    return base ? 0 : -1;
}

static int loop_teardown(void **state)
{
    (void)state;
    event_base_free(base);
    base = NULL;
    return 0;
}

static struct dns_resolver *resolver(const char *servers, int timeout_ms,
                                     int tries, size_t cache_size,
                                     uint64_t seed)
{
    struct dns_config cf = {servers, timeout_ms, tries, cache_size, seed};
    char why[256] = "";
    struct dns_resolver *r = dns_create(base, &cf, why, sizeof(why));

    if (r == NULL)
        fail_msg("dns_create: %s", why);
    dns_set_clock(r, test_clock, NULL);
    return r;
}

static struct dns_resolver *local_resolver(void)
{
    return resolver(local_dns.servers, 500, 2, 0, 1);
}

struct outcome {
    int calls;
    struct dns_result *res;
};

static void on_done(void *ctx, struct dns_result *res)
{
    struct outcome *o = ctx;

    assert_false(in_call);
    o->calls++;
    if (o->res)
        dns_result_free(o->res);
    o->res = res;
}

static void deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    *(int *)arg = 1;
}

/* Run the loop until *count reaches want, at most ms milliseconds. */
static void run_until(const int *count, int want, int ms)
{
    int expired = 0;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    struct event *ev = evtimer_new(base, deadline, &expired);

    evtimer_add(ev, &tv);
    while (*count < want && !expired)
        event_base_loop(base, EVLOOP_ONCE);
    event_free(ev);
}

static struct dns_result *wait_result(struct outcome *o)
{
    assert_int_equal(o->calls, 0); /* never from inside the call */
    run_until(&o->calls, 1, 5000);
    assert_int_equal(o->calls, 1);
    return o->res;
}

static struct dns_result *lookup_mx(struct dns_resolver *r, const char *d)
{
    struct outcome o = {0, NULL};

    in_call = 1;
    assert_int_equal(dns_lookup_mx(r, d, on_done, &o), 0);
    in_call = 0;
    return wait_result(&o);
}

static struct dns_result *lookup_host(struct dns_resolver *r, const char *h)
{
    struct outcome o = {0, NULL};

    in_call = 1;
    assert_int_equal(dns_lookup_host(r, h, on_done, &o), 0);
    in_call = 0;
    return wait_result(&o);
}

struct tlsa_outcome {
    int calls;
    struct dns_tlsa_result *res;
};

static void on_tlsa(void *ctx, struct dns_tlsa_result *res)
{
    struct tlsa_outcome *o = ctx;

    assert_false(in_call);
    o->calls++;
    dns_tlsa_result_free(o->res);
    o->res = res;
}

static struct dns_tlsa_result *lookup_tlsa(struct dns_resolver *r,
                                           const char *host, int port)
{
    struct tlsa_outcome o = {0, NULL};

    in_call = 1;
    assert_int_equal(dns_lookup_tlsa(r, host, port, on_tlsa, &o), 0);
    in_call = 0;
    assert_int_equal(o.calls, 0); /* never from inside the call */
    run_until(&o.calls, 1, 5000);
    assert_int_equal(o.calls, 1);
    return o.res;
}

struct txt_outcome {
    int calls;
    struct dns_txt_result *res;
};

static void on_txt(void *ctx, struct dns_txt_result *res)
{
    struct txt_outcome *o = ctx;

    assert_false(in_call);
    o->calls++;
    dns_txt_result_free(o->res);
    o->res = res;
}

static struct dns_txt_result *lookup_txt(struct dns_resolver *r,
                                         const char *name)
{
    struct txt_outcome o = {0, NULL};

    in_call = 1;
    assert_int_equal(dns_lookup_txt(r, name, on_txt, &o), 0);
    in_call = 0;
    assert_int_equal(o.calls, 0);
    run_until(&o.calls, 1, 5000);
    assert_int_equal(o.calls, 1);
    return o.res;
}

/* "3 1 1 0001...; 2 0 1 aabbcc": the records in the order received. */
static const char *tlsa_text(const struct dns_tlsa_result *res)
{
    static char buf[1024];
    size_t i, j, n = 0;

    buf[0] = 0;
    for (i = 0; i < res->n; i++) {
        const struct dns_tlsa *t = &res->rec[i];

        n += snprintf(buf + n, sizeof(buf) - n, "%s%u %u %u ", i ? "; " : "",
                      t->usage, t->selector, t->mtype);
        for (j = 0; j < t->len; j++)
            n += snprintf(buf + n, sizeof(buf) - n, "%02x", t->data[j]);
    }
    return buf;
}

/* The TLSA result: status, secure, records; then freed. */
static void expect_tlsa(struct dns_tlsa_result *res, enum dns_status status,
                        int secure, const char *name, const char *recs)
{
    assert_non_null(res);
    assert_int_equal(res->status, status);
    assert_int_equal(res->secure, secure);
    assert_string_equal(res->name, name);
    assert_string_equal(tlsa_text(res), recs);
    if (status == DNS_OK) {
        assert_string_equal(res->why, "");
        assert_string_equal(res->dsn, "");
    }
    if (res->n == 0)
        assert_null(res->rec);
    dns_tlsa_result_free(res);
}

/* "10 mx1.pref.test 127.0.0.11 fd00::11; 20 mx2.pref.test 127.0.0.12" */
static const char *hosts_text(const struct dns_result *res)
{
    static char buf[1024];
    size_t i, j, n = 0;

    buf[0] = 0;
    for (i = 0; i < res->nhost; i++) {
        const struct dns_host *h = &res->host[i];

        n += snprintf(buf + n, sizeof(buf) - n, "%s%d %s", i ? "; " : "",
                      h->pref, h->name);
        for (j = 0; j < h->naddr; j++)
            n += snprintf(buf + n, sizeof(buf) - n, " %s", h->addr[j].text);
    }
    return buf;
}

static uint64_t queries(struct dns_resolver *r)
{
    struct dns_stats st;

    dns_stats(r, &st);
    return st.queries;
}

static void expect_fail(struct dns_result *res, enum dns_status status,
                        const char *why, const char *dsn)
{
    assert_non_null(res);
    assert_int_equal(res->status, status);
    assert_string_equal(res->why, why);
    assert_string_equal(res->dsn, dsn);
    assert_int_equal(res->nhost, 0);
    dns_result_free(res);
}

static void expect_hosts(struct dns_result *res, const char *hosts)
{
    assert_non_null(res);
    assert_int_equal(res->status, DNS_OK);
    assert_string_equal(res->why, "");
    assert_string_equal(res->dsn, "");
    assert_string_equal(hosts_text(res), hosts);
    dns_result_free(res);
}

/* ---- the fake server ---- */

enum fake_mode {
    FAKE_SILENT,   /* reads, never answers */
    FAKE_SERVFAIL, /* rcode 2 */
    FAKE_FORMERR,  /* rcode 1 */
    FAKE_GARBAGE,  /* claims an answer record that is not there */
    FAKE_NXSOA,    /* NXDOMAIN with an SOA: soa_ttl, soa_min */
    FAKE_MXONLY,   /* "MX 10 mx.<name>", silence for anything else */
    FAKE_RECORDS,  /* that MX, and three A and two AAAA records for all */
    FAKE_SECURE,   /* the same, TLSA and TXT records, AD set (see below) */
};

struct fake {
    int fd;
    char servers[32];
    struct event *ev;
    enum fake_mode mode;
    int queries;
    int ad_queries;      /* with the AD bit (RFC 6840, 5.7) */
    int do_queries;      /* with EDNS0 and its DO bit (RFC 3225) */
    unsigned plain_type; /* FAKE_SECURE: no AD for this type */
    int chain;           /* FAKE_SECURE: "alias.X" is a CNAME to X, alone */
    int chain_ad;        /* the AD bit of that CNAME reply */
    int target_ad;       /* the AD bit of the replies for X */
    uint32_t soa_ttl, soa_min;
};

static void put16(unsigned char *p, unsigned v)
{
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static void put32(unsigned char *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

/* An RR owned by the question's name (a pointer to offset 12). */
static size_t put_rr(unsigned char *p, unsigned type, uint32_t ttl,
                     const unsigned char *data, unsigned len)
{
    p[0] = 0xc0;
    p[1] = 12;
    put16(p + 2, type);
    put16(p + 4, 1);
    put32(p + 6, ttl);
    put16(p + 10, len);
    memcpy(p + 12, data, len);
    return 12 + len;
}

static void fake_read(evutil_socket_t fd, short what, void *arg)
{
    struct fake *f = arg;
    unsigned char q[512], out[1024], data[64];
    struct sockaddr_storage from;
    socklen_t fromlen = sizeof(from);
    ssize_t n =
        recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fromlen);
    size_t end = 12, len;
    unsigned qtype;

    (void)what;
    if (n < 12)
        return;
    f->queries++;
    while (end < (size_t)n && q[end])
        end += q[end] + 1u;
    end += 5;
    if (end > (size_t)n)
        return;
    qtype = (unsigned)q[end - 4] << 8 | q[end - 3];
    if (q[3] & 0x20)
        f->ad_queries++;
    /* The OPT record: root name, type 41, class, TTL (DO: 0x8000). */
    if ((q[10] | q[11]) && end + 11 <= (size_t)n && q[end] == 0 &&
        q[end + 2] == 41 && (q[end + 7] & 0x80))
        f->do_queries++;
    if (f->mode == FAKE_SILENT || (f->mode == FAKE_MXONLY && qtype != 15))
        return;
    memcpy(out, q, end);
    out[2] = (unsigned char)(0x80 | (q[2] & 0x01)); /* QR, RD */
    out[3] = 0x80;                                  /* RA, NOERROR */
    put16(out + 4, 1);
    put16(out + 6, 0);
    put16(out + 8, 0);
    put16(out + 10, 0);
    len = end;
    switch (f->mode) {
    case FAKE_SERVFAIL:
        out[3] |= 2;
        break;
    case FAKE_FORMERR:
        out[3] |= 1;
        break;
    case FAKE_GARBAGE:
        put16(out + 6, 1);
        break;
    case FAKE_NXSOA:
        out[3] |= 3;
        put16(out + 8, 1);
        data[0] = data[2] = 0xc0; /* MNAME, RNAME: the question's name */
        data[1] = data[3] = 12;
        put32(data + 4, 1);           /* serial */
        put32(data + 8, 1200);        /* refresh */
        put32(data + 12, 120);        /* retry */
        put32(data + 16, 86400);      /* expire */
        put32(data + 20, f->soa_min); /* minimum */
        len += put_rr(out + len, 6, f->soa_ttl, data, 24);
        break;
    case FAKE_SECURE:
        if (f->chain && q[12] == 5 && memcmp(q + 13, "alias", 5) == 0) {
            if (f->chain_ad)
                out[3] |= 0x20;
            put16(out + 6, 1);
            data[0] = 0xc0; /* the question's name after "alias." */
            data[1] = 18;
            len += put_rr(out + len, 5, 300, data, 2);
            break;
        }
        if (qtype != f->plain_type && (!f->chain || f->target_ad))
            out[3] |= 0x20; /* AD */
        if (qtype == 52) {
            /* 3 1 1 and 32 bytes; a record of 2 bytes; 2 0 0 and one. */
            put16(out + 6, 3);
            data[0] = 3;
            data[1] = 1;
            data[2] = 1;
            for (size_t i = 0; i < 32; i++)
                data[3 + i] = (unsigned char)(0xa0 + i);
            len += put_rr(out + len, 52, 300, data, 35);
            len += put_rr(out + len, 52, 300, data, 2);
            data[0] = 2;
            data[1] = 0;
            data[2] = 0;
            data[3] = 0x42;
            len += put_rr(out + len, 52, 300, data, 4);
            break;
        }
        if (qtype == 16) {
            /* Two strings; an empty record; one with a NUL: skipped. */
            put16(out + 6, 3);
            len += put_rr(out + len, 16, 300,
                          (const unsigned char *)"\011v=STSv1; \005id=42", 16);
            len += put_rr(out + len, 16, 300, (const unsigned char *)"", 0);
            len += put_rr(out + len, 16, 300, (const unsigned char *)"\003a\0b",
                          4);
            break;
        }
        /* FALLTHROUGH */
    case FAKE_MXONLY:
    case FAKE_RECORDS:
        if (qtype == 15) {
            put16(out + 6, 1);
            put16(data, 10);
            memcpy(data + 2, "\002mx\300\014", 5);
            len += put_rr(out + len, 15, 300, data, 7);
        } else if (qtype == 1) {
            put16(out + 6, 3);
            len += put_rr(out + len, 1, 300,
                          (const unsigned char *)"\300\0\2\3", 4);
            len += put_rr(out + len, 1, 300,
                          (const unsigned char *)"\300\0\2\1", 4);
            len += put_rr(out + len, 1, 300,
                          (const unsigned char *)"\300\0\2\2", 4);
        } else if (qtype == 28) {
            memset(data, 0, 16);
            put16(data, 0x2001);
            put16(data + 2, 0xdb8);
            put16(out + 6, 2);
            data[15] = 2;
            len += put_rr(out + len, 28, 300, data, 16);
            data[15] = 1;
            len += put_rr(out + len, 28, 300, data, 16);
        }
        break;
    default:
        break;
    }
    sendto(fd, out, len, 0, (struct sockaddr *)&from, fromlen);
}

static void fake_start(struct fake *f, enum fake_mode mode)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);

    memset(f, 0, sizeof(*f));
    memset(&sin, 0, sizeof(sin));
    f->mode = mode;
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    f->fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(f->fd >= 0);
    assert_int_equal(bind(f->fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(f->fd, (struct sockaddr *)&sin, &len), 0);
    snprintf(f->servers, sizeof(f->servers), "127.0.0.1:%d",
             ntohs(sin.sin_port));
    f->ev = event_new(base, f->fd, EV_READ | EV_PERSIST, fake_read, f);
    event_add(f->ev, NULL);
}

static void fake_stop(struct fake *f)
{
    event_free(f->ev);
    close(f->fd);
}

/* ---- MX lookups against dnsmasq ---- */

/* Lowest preference first; an exchanger's IPv4, then IPv6 addresses. */
static void test_mx_preference_order(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_mx(r, "pref.test");
    assert_string_equal(res->name, "pref.test");
    assert_int_equal(res->implicit_mx, 0);
    assert_int_equal(res->host[0].addr[0].sa.ss_family, AF_INET);
    assert_int_equal(res->host[0].addr[0].salen, sizeof(struct sockaddr_in));
    assert_int_equal(res->host[0].addr[1].sa.ss_family, AF_INET6);
    assert_int_equal(res->host[0].addr[1].salen, sizeof(struct sockaddr_in6));
    expect_hosts(res, "10 mx1.pref.test 127.0.0.11 fd00::11; "
                      "20 mx2.pref.test 127.0.0.12");
    /* A final dot and capitals change nothing. */
    expect_hosts(lookup_mx(r, "PREF.Test."),
                 "10 mx1.pref.test 127.0.0.11 fd00::11; "
                 "20 mx2.pref.test 127.0.0.12");
    /* Listed twice: kept once, at the better preference. */
    expect_hosts(lookup_mx(r, "dup.test"),
                 "10 mx1.pref.test 127.0.0.11 fd00::11; "
                 "20 mx2.pref.test 127.0.0.12");
    dns_free(r);
}

/* At most DNS_MAX_HOSTS exchangers, the best; the reply needs TCP. */
static void test_mx_many_exchangers(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;
    char name[32], addr[32];
    size_t i;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_mx(r, "cap.test");
    assert_string_equal(res->why, "");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->nhost, DNS_MAX_HOSTS);
    for (i = 0; i < res->nhost; i++) {
        snprintf(name, sizeof(name), "h%02zu.cap.test", i);
        snprintf(addr, sizeof(addr), "127.0.1.%zu", i);
        assert_string_equal(res->host[i].name, name);
        assert_int_equal(res->host[i].pref, (int)i);
        assert_int_equal(res->host[i].naddr, 1);
        assert_string_equal(res->host[i].addr[0].text, addr);
    }
    dns_result_free(res);
    assert_int_equal(queries(r), 1 + 2 * DNS_MAX_HOSTS);
    dns_free(r);
}

static int order_of(struct dns_result *res, char out[4])
{
    size_t i;

    if (res->status != DNS_OK || res->nhost != 3)
        return -1;
    for (i = 0; i < 3; i++) {
        if (res->host[i].pref != 10 || strlen(res->host[i].name) != 11 ||
            res->host[i].naddr != 1)
            return -1;
        out[i] = res->host[i].name[2]; /* mxa.eq.test: 'a' */
    }
    out[3] = 0;
    return 0;
}

/* Equal preferences come in random order, fixed by the seed. */
static void test_mx_equal_preference_shuffled(void **state)
{
    char orders[16][4], order[4], again[4];
    int distinct = 0;
    uint64_t seed;
    int i, j;
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    NEED_DNSMASQ();
    for (seed = 1; seed <= 16; seed++) {
        r = resolver(local_dns.servers, 500, 2, 0, seed);
        res = lookup_mx(r, "eq.test");
        assert_int_equal(order_of(res, orders[seed - 1]), 0);
        assert_non_null(strchr(orders[seed - 1], 'a'));
        assert_non_null(strchr(orders[seed - 1], 'b'));
        assert_non_null(strchr(orders[seed - 1], 'c'));
        dns_result_free(res);
        dns_free(r);
    }
    for (i = 0; i < 16; i++) {
        for (j = 0; j < i; j++)
            if (strcmp(orders[i], orders[j]) == 0)
                break;
        distinct += j == i;
    }
    assert_true(distinct >= 2);

    /* The same seed, the same order. */
    r = resolver(local_dns.servers, 500, 2, 0, 7);
    res = lookup_mx(r, "eq.test");
    assert_int_equal(order_of(res, again), 0);
    assert_string_equal(again, orders[6]);
    dns_result_free(res);

    /* Each lookup shuffles anew, from the cache too. */
    distinct = 0;
    for (i = 0; i < 10; i++) {
        res = lookup_mx(r, "eq.test");
        assert_int_equal(order_of(res, order), 0);
        distinct += strcmp(order, again) != 0;
        dns_result_free(res);
    }
    assert_true(distinct >= 1);
    assert_int_equal(queries(r), 7); /* MX, A and AAAA of three */
    dns_free(r);
}

/* No MX records: the domain is its own exchanger, preference 0. */
static void test_mx_implicit(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_mx(r, "implicit.test");
    assert_int_equal(res->implicit_mx, 1);
    expect_hosts(res, "0 implicit.test 127.0.0.30 fd00::30");
    dns_free(r);
}

/* RFC 7505: "MX 0 ." is a permanent failure, with other MX records too. */
static void test_mx_null(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_fail(lookup_mx(r, "nullmx.test"), DNS_PERMFAIL,
                "Domain nullmx.test does not accept mail (nullMX)", "5.1.0");
    expect_fail(lookup_mx(r, "nullmx2.test"), DNS_PERMFAIL,
                "Domain nullmx2.test does not accept mail (nullMX)", "5.1.0");
    assert_int_equal(queries(r), 2); /* no address lookups */
    dns_free(r);
}

static void test_mx_nxdomain(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_fail(lookup_mx(r, "nx.test"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=nx.test type=MX: Host not found",
                "5.4.4");
    assert_int_equal(queries(r), 1); /* no A lookup of a missing name */
    dns_free(r);
}

/*
 * An exchanger without addresses is skipped when another has some; when
 * none has any and every answer was final, the failure is permanent.
 */
static void test_mx_exchanger_without_address(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_hosts(lookup_mx(r, "halfbad.test"), "20 mx2.pref.test 127.0.0.12");
    expect_fail(lookup_mx(r, "badmx.test"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=missing.badmx.test type=A: Host not found",
                "5.4.4");
    expect_fail(lookup_mx(r, "nodata.test"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=pref.test type=A: Host found but no data record of "
                "requested type",
                "5.4.4");
    /* An exchanger named by an address is that address. */
    expect_hosts(lookup_mx(r, "literal.test"), "10 127.0.0.99 127.0.0.99");
    dns_free(r);
}

static void test_mx_ipv6_only(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;
    struct sockaddr_in6 *sin6;
    unsigned char want[16];

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_mx(r, "v6.test");
    assert_int_equal(res->nhost, 1);
    assert_int_equal(res->host[0].naddr, 1);
    sin6 = (struct sockaddr_in6 *)&res->host[0].addr[0].sa;
    assert_int_equal(sin6->sin6_family, AF_INET6);
    assert_int_equal(sin6->sin6_port, 0);
    inet_pton(AF_INET6, "fd00::60", want);
    assert_memory_equal(&sin6->sin6_addr, want, 16);
    expect_hosts(res, "10 mx.v6.test fd00::60");
    dns_free(r);
}

/* CNAMEs are followed, for the domain and for its exchangers. */
static void test_mx_cname(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_hosts(lookup_mx(r, "cn.test"), "5 alias.cn.test 127.0.0.70");
    expect_hosts(lookup_mx(r, "mxalias.test"), "5 alias.cn.test 127.0.0.70");
    /* A chain that stops short is asked again where it stops. */
    expect_fail(lookup_mx(r, "dang.test"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=nothere.test type=A: Host not found",
                "5.4.4");
    dns_free(r);
}

static void test_mx_invalid_names(void **state)
{
    struct dns_resolver *r;

    (void)state;
    r = resolver("127.0.0.1:9", 100, 1, 0, 1); /* never asked */
    expect_fail(lookup_mx(r, "1.2.3.4"), DNS_PERMFAIL,
                "Name service error for 1.2.3.4: invalid host or domain name",
                "5.4.4");
    expect_fail(lookup_mx(r, "a..test"), DNS_PERMFAIL,
                "Name service error for a..test: invalid host or domain name",
                "5.4.4");
    expect_fail(lookup_mx(r, ""), DNS_PERMFAIL,
                "Name service error for : invalid host or domain name",
                "5.4.4");
    expect_fail(lookup_mx(r, "a b.test"), DNS_PERMFAIL,
                "Name service error for a b.test: invalid host or domain "
                "name",
                "5.4.4");
    assert_int_equal(queries(r), 0);
    dns_free(r);
}

/* SERVFAIL from every server is temporary, and REFUSED too. */
static void test_mx_refused(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_fail(lookup_mx(r, "example.invalid"), DNS_TEMPFAIL,
                "Host or domain name not found. Name service error for "
                "name=example.invalid type=MX: Host not found, try again",
                "4.4.3");
    dns_free(r);
}

/* ---- host lookups ---- */

static void test_host_lookup(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_hosts(lookup_host(r, "mx1.pref.test"),
                 "0 mx1.pref.test 127.0.0.11 fd00::11");
    res = lookup_host(r, "[mx1.pref.test]");
    assert_string_equal(res->name, "[mx1.pref.test]");
    assert_int_equal(res->implicit_mx, 0);
    expect_hosts(res, "0 mx1.pref.test 127.0.0.11 fd00::11");
    expect_fail(lookup_host(r, "nx.test"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=nx.test type=A: Host not found",
                "5.4.4");
    expect_hosts(lookup_host(r, "alias.cn.test"), "0 alias.cn.test 127.0.0.70");
    dns_free(r);
}

/* An address is its own answer, without a query, still not at once. */
static void test_host_literal(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    r = resolver("127.0.0.1:9", 100, 1, 0, 1);
    expect_hosts(lookup_host(r, "192.0.2.1"), "0 192.0.2.1 192.0.2.1");
    res = lookup_host(r, "[192.0.2.1]");
    assert_string_equal(res->name, "[192.0.2.1]");
    expect_hosts(res, "0 192.0.2.1 192.0.2.1");
    expect_hosts(lookup_host(r, "[IPv6:2001:DB8::1]"),
                 "0 2001:db8::1 2001:db8::1");
    expect_hosts(lookup_host(r, "::1"), "0 ::1 ::1");
    expect_fail(lookup_host(r, "bad..name"), DNS_PERMFAIL,
                "Name service error for bad..name: invalid host or domain "
                "name",
                "5.4.4");
    assert_int_equal(queries(r), 0);
    dns_free(r);
}

/* ---- TLSA and TXT against dnsmasq ---- */

/*
 * RFC 6698, 3: "TLSA resource records are stored at a prefixed DNS domain
 * name", "_" port "._tcp." and the server's name; RFC 6698, 2.1: one byte
 * each of certificate usage, selector and matching type, then the
 * certificate association data. Exactly what was served comes back.
 */
static void test_tlsa_records(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_tlsa(
        lookup_tlsa(r, "mx1.pref.test", 25), DNS_OK, 0,
        "_25._tcp.mx1.pref.test",
        "3 1 1 "
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    /* The server's name as written: a final dot, capitals. */
    expect_tlsa(lookup_tlsa(r, "MX2.Pref.Test.", 25), DNS_OK, 0,
                "_25._tcp.mx2.pref.test", "2 0 1 aabbcc");
    /* A CNAME is followed (RFC 7672, 2.2.2: the client follows it). */
    expect_tlsa(lookup_tlsa(r, "alias.cn.test", 25), DNS_OK, 0,
                "_25._tcp.alias.cn.test", "2 0 1 aabbcc");
    assert_int_equal(queries(r), 3);
    dns_free(r);
}

/*
 * Record data shorter than its three fixed fields is skipped, not the
 * reply: the record beside it is used (as the reference does).
 */
static void test_tlsa_short_record_skipped(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_tlsa(lookup_tlsa(r, "short.test", 25), DNS_OK, 0,
                "_25._tcp.short.test", "3 1 0 ff");
    dns_free(r);
}

/*
 * RFC 7672, 2.2: a denial of existence is an answer, "no TLSA records":
 * NXDOMAIN and no data are DNS_OK without records (the caller then looks
 * at secure, 0 from a server that does not validate).
 */
static void test_tlsa_denial(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_tlsa(lookup_tlsa(r, "nx.test", 25), DNS_OK, 0, "_25._tcp.nx.test",
                "");
    expect_tlsa(lookup_tlsa(r, "mx1.pref.test", 465), DNS_OK, 0,
                "_465._tcp.mx1.pref.test", "");
    assert_int_equal(queries(r), 2);
    dns_free(r);
}

/* Not a host name, or not a port: a permanent failure, no query. */
static void test_tlsa_invalid(void **state)
{
    struct dns_resolver *r;

    (void)state;
    r = resolver("127.0.0.1:9", 100, 1, 0, 1);
    expect_tlsa(lookup_tlsa(r, "192.0.2.1", 25), DNS_PERMFAIL, 0,
                "_25._tcp.192.0.2.1", "");
    expect_tlsa(lookup_tlsa(r, "mx.example", 65536), DNS_PERMFAIL, 0,
                "_65536._tcp.mx.example", "");
    expect_tlsa(lookup_tlsa(r, "bad..name", 25), DNS_PERMFAIL, 0,
                "_25._tcp.bad..name", "");
    assert_int_equal(queries(r), 0);
    dns_free(r);
}

/* TLSA answers are cached by their TTL, denials by the negative TTL. */
static void test_tlsa_cached(void **state)
{
    struct dns_resolver *r;
    const int64_t t0 = now_ms;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_tlsa(
        lookup_tlsa(r, "mx1.pref.test", 25), DNS_OK, 0,
        "_25._tcp.mx1.pref.test",
        "3 1 1 "
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    expect_tlsa(lookup_tlsa(r, "nx.test", 25), DNS_OK, 0, "_25._tcp.nx.test",
                "");
    assert_int_equal(kill(local_dns.pid, SIGSTOP), 0);
    now_ms = t0 + 59999;
    expect_tlsa(
        lookup_tlsa(r, "mx1.pref.test", 25), DNS_OK, 0,
        "_25._tcp.mx1.pref.test",
        "3 1 1 "
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    expect_tlsa(lookup_tlsa(r, "nx.test", 25), DNS_OK, 0, "_25._tcp.nx.test",
                "");
    assert_int_equal(kill(local_dns.pid, SIGCONT), 0);
    assert_int_equal(queries(r), 2);
    now_ms = t0 + 60000; /* the denial (no SOA: 60 s) is asked again */
    expect_tlsa(lookup_tlsa(r, "nx.test", 25), DNS_OK, 0, "_25._tcp.nx.test",
                "");
    assert_int_equal(queries(r), 3);
    now_ms = t0 + 300000; /* the records: --local-ttl=300 */
    expect_tlsa(
        lookup_tlsa(r, "mx1.pref.test", 25), DNS_OK, 0,
        "_25._tcp.mx1.pref.test",
        "3 1 1 "
        "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f");
    assert_int_equal(queries(r), 4);
    dns_free(r);
}

/*
 * RFC 8461, 3.1 and RFC 8460, 3: "If the resource record contains
 * multiple character-strings, they are concatenated", with nothing put
 * between them.
 */
static void test_txt_records(void **state)
{
    struct dns_resolver *r;
    struct dns_txt_result *res;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_txt(r, "_mta-sts.pref.test");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->secure, 0);
    assert_string_equal(res->name, "_mta-sts.pref.test");
    assert_int_equal(res->n, 1);
    assert_string_equal(res->txt[0], "v=STSv1; id=20240101");
    dns_txt_result_free(res);
    res = lookup_txt(r, "_smtp._tls.pref.test");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->n, 1);
    assert_string_equal(res->txt[0], "v=TLSRPTv1; rua=mailto:r@pref.test");
    dns_txt_result_free(res);
    /* Cached. */
    res = lookup_txt(r, "_smtp._tls.pref.test");
    assert_int_equal(res->n, 1);
    dns_txt_result_free(res);
    assert_int_equal(queries(r), 2);
    dns_free(r);
}

/* No record: a permanent failure in the reference's words, cached. */
static void test_txt_missing(void **state)
{
    struct dns_resolver *r;
    struct dns_txt_result *res;
    int i;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    for (i = 0; i < 2; i++) {
        res = lookup_txt(r, "_mta-sts.nx.test");
        assert_int_equal(res->status, DNS_PERMFAIL);
        assert_string_equal(res->why,
                            "Host or domain name not found. Name service "
                            "error for name=_mta-sts.nx.test type=TXT: "
                            "Host not found");
        assert_string_equal(res->dsn, "5.4.4");
        assert_int_equal(res->n, 0);
        assert_null(res->txt);
        dns_txt_result_free(res);
    }
    res = lookup_txt(r, "mx1.pref.test");
    assert_int_equal(res->status, DNS_PERMFAIL);
    assert_string_equal(res->why,
                        "Host or domain name not found. Name service error "
                        "for name=mx1.pref.test type=TXT: Host found but no "
                        "data record of requested type");
    dns_txt_result_free(res);
    res = lookup_txt(r, "not a name");
    assert_int_equal(res->status, DNS_PERMFAIL);
    assert_string_equal(res->why, "Name service error for not a name: "
                                  "invalid host or domain name");
    dns_txt_result_free(res);
    assert_int_equal(queries(r), 2);
    dns_free(r);
}

/* Without a validating resolver nothing is secure. */
static void test_not_secure_without_ad(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    res = lookup_mx(r, "pref.test");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->secure, 0);
    assert_int_equal(res->host[0].secure, 0);
    assert_int_equal(res->host[1].secure, 0);
    dns_result_free(res);
    dns_free(r);
}

/* ---- the cache ---- */

/* A second lookup is answered from the cache: dnsmasq is stopped. */
static void test_cache_hit(void **state)
{
    struct dns_resolver *r;
    struct dns_stats st;
    const char *want = "10 mx1.pref.test 127.0.0.11 fd00::11; "
                       "20 mx2.pref.test 127.0.0.12";

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_hosts(lookup_mx(r, "pref.test"), want);
    assert_int_equal(queries(r), 5); /* MX, then A and AAAA of both */
    assert_int_equal(kill(local_dns.pid, SIGSTOP), 0);
    expect_hosts(lookup_mx(r, "pref.test"), want);
    expect_hosts(lookup_host(r, "mx2.pref.test"), "0 mx2.pref.test 127.0.0.12");
    assert_int_equal(kill(local_dns.pid, SIGCONT), 0);
    dns_stats(r, &st);
    assert_int_equal(st.queries, 5);
    assert_int_equal(st.cache_hits, 7);
    assert_int_equal(st.lookups, 3);
    assert_int_equal(st.cached, 5);
    dns_free(r);
}

/* Lookups of the same domain at the same time share the queries. */
static void test_cache_shared_questions(void **state)
{
    struct dns_resolver *r;
    struct outcome a = {0, NULL}, b = {0, NULL};

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    in_call = 1;
    assert_int_equal(dns_lookup_mx(r, "pref.test", on_done, &a), 0);
    assert_int_equal(dns_lookup_mx(r, "pref.test", on_done, &b), 0);
    in_call = 0;
    run_until(&b.calls, 1, 5000);
    run_until(&a.calls, 1, 5000);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_string_equal(hosts_text(a.res), hosts_text(b.res));
    assert_int_equal(queries(r), 5);
    dns_result_free(a.res);
    dns_result_free(b.res);
    dns_free(r);
}

/* Each answer lives by its own TTL, on the cache's clock. */
static void test_cache_ttl(void **state)
{
    struct dns_resolver *r;
    const int64_t t0 = now_ms;
    const char *want = "10 mx.ttl.test 127.0.0.80";

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_hosts(lookup_mx(r, "ttl.test"), want);
    assert_int_equal(queries(r), 3);
    now_ms = t0 + 4999; /* A: TTL 5 s */
    expect_hosts(lookup_mx(r, "ttl.test"), want);
    assert_int_equal(queries(r), 3);
    now_ms = t0 + 5000;
    expect_hosts(lookup_mx(r, "ttl.test"), want);
    assert_int_equal(queries(r), 4); /* A again */
    now_ms = t0 + 61000; /* AAAA: no data, no SOA: 60 s; A again too */
    expect_hosts(lookup_mx(r, "ttl.test"), want);
    assert_int_equal(queries(r), 6);
    now_ms = t0 + 301000; /* MX: TTL 300 s; A and AAAA again too */
    expect_hosts(lookup_mx(r, "ttl.test"), want);
    assert_int_equal(queries(r), 9);
    dns_free(r);
}

/* dnsmasq sends these two in no fixed order. */
static void expect_multi(struct dns_result *res)
{
    const char *text = hosts_text(res);

    if (strcmp(text, "0 multi.test 127.0.0.41 127.0.0.42") != 0)
        assert_string_equal(text, "0 multi.test 127.0.0.42 127.0.0.41");
    dns_result_free(res);
}

/* The smallest TTL counts: of the records, and of the CNAMEs followed. */
static void test_cache_ttl_smallest(void **state)
{
    struct dns_resolver *r;
    const int64_t t0 = now_ms;
    const char *alias = "0 alias.cn.test 127.0.0.70";

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_multi(lookup_host(r, "multi.test")); /* TTLs 10 and 20 */
    /*
     * CNAME TTL 7, A TTL 300. The AAAA reply is the CNAME alone: it is
     * asked again for real.cn.test (no data), as the reference does.
     */
    expect_hosts(lookup_host(r, "alias.cn.test"), alias);
    assert_int_equal(queries(r), 5);
    now_ms = t0 + 6999;
    expect_multi(lookup_host(r, "multi.test"));
    expect_hosts(lookup_host(r, "alias.cn.test"), alias);
    assert_int_equal(queries(r), 5);
    now_ms = t0 + 7000; /* A, and AAAA twice again, held by the CNAME */
    expect_hosts(lookup_host(r, "alias.cn.test"), alias);
    assert_int_equal(queries(r), 8);
    now_ms = t0 + 9999;
    expect_multi(lookup_host(r, "multi.test"));
    assert_int_equal(queries(r), 8);
    now_ms = t0 + 10000;
    expect_multi(lookup_host(r, "multi.test"));
    assert_int_equal(queries(r), 9);
    dns_free(r);
}

/* NXDOMAIN without an SOA record is kept 60 s. */
static void test_cache_negative_default(void **state)
{
    struct dns_resolver *r;
    const int64_t t0 = now_ms;
    const char *why = "Host or domain name not found. Name service error "
                      "for name=nx.test type=MX: Host not found";

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_fail(lookup_mx(r, "nx.test"), DNS_PERMFAIL, why, "5.4.4");
    now_ms = t0 + 59999;
    expect_fail(lookup_mx(r, "nx.test"), DNS_PERMFAIL, why, "5.4.4");
    assert_int_equal(queries(r), 1);
    now_ms = t0 + 60000;
    expect_fail(lookup_mx(r, "nx.test"), DNS_PERMFAIL, why, "5.4.4");
    assert_int_equal(queries(r), 2);
    dns_free(r);
}

/* With an SOA record (RFC 2308), NXDOMAIN is kept for its minimum. */
static void test_cache_negative_soa(void **state)
{
    struct dns_resolver *r;
    const int64_t t0 = now_ms;
    const char *why = "Host or domain name not found. Name service error "
                      "for name=nope.auth.test type=MX: Host not found";

    (void)state;
    NEED_DNSMASQ();
    r = resolver(auth_dns.servers, 500, 2, 0, 1);
    expect_hosts(lookup_mx(r, "auth.test"), "10 mx.auth.test 127.0.0.90");
    expect_fail(lookup_mx(r, "nope.auth.test"), DNS_PERMFAIL, why, "5.4.4");
    assert_int_equal(queries(r), 4);
    now_ms = t0 + 119999; /* --auth-ttl=120: SOA TTL and minimum */
    expect_fail(lookup_mx(r, "nope.auth.test"), DNS_PERMFAIL, why, "5.4.4");
    expect_hosts(lookup_mx(r, "auth.test"), "10 mx.auth.test 127.0.0.90");
    assert_int_equal(queries(r), 4);
    now_ms = t0 + 120000;
    expect_fail(lookup_mx(r, "nope.auth.test"), DNS_PERMFAIL, why, "5.4.4");
    assert_int_equal(queries(r), 5);
    dns_free(r);
}

/*
 * The negative TTL is the smaller of the SOA record's TTL and its minimum
 * field (RFC 2308, 5), an hour at most.
 */
static void test_cache_negative_soa_fields(void **state)
{
    static const struct {
        uint32_t ttl, min, kept;
    } cases[] = {
        {86400, 86400, 3600},
        {1800, 86400, 1800},
        {86400, 900, 900},
        {0, 900, 0},
    };
    const char *why = "Host or domain name not found. Name service error "
                      "for name=gone.example type=MX: Host not found";
    struct fake f;
    struct dns_resolver *r;
    int64_t t0 = now_ms;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_start(&f, FAKE_NXSOA);
        f.soa_ttl = cases[i].ttl;
        f.soa_min = cases[i].min;
        r = resolver(f.servers, 500, 1, 0, 1);
        now_ms = t0;
        expect_fail(lookup_mx(r, "gone.example"), DNS_PERMFAIL, why, "5.4.4");
        assert_int_equal(f.queries, 1);
        if (cases[i].kept > 0) {
            now_ms = t0 + cases[i].kept * 1000 - 1;
            expect_fail(lookup_mx(r, "gone.example"), DNS_PERMFAIL, why,
                        "5.4.4");
            assert_int_equal(f.queries, 1);
        }
        now_ms = t0 + cases[i].kept * 1000;
        expect_fail(lookup_mx(r, "gone.example"), DNS_PERMFAIL, why, "5.4.4");
        assert_int_equal(f.queries, 2);
        dns_free(r);
        fake_stop(&f);
    }
}

/* A full cache lets its least recently used answer go. */
static void test_cache_bounded(void **state)
{
    struct dns_resolver *r;
    struct dns_stats st;

    (void)state;
    NEED_DNSMASQ();
    r = resolver(local_dns.servers, 500, 2, 1, 1);
    expect_hosts(lookup_host(r, "mx2.pref.test"), "0 mx2.pref.test 127.0.0.12");
    dns_stats(r, &st);
    assert_int_equal(st.cached, 1);
    assert_int_equal(st.queries, 2);
    expect_hosts(lookup_host(r, "mx2.pref.test"), "0 mx2.pref.test 127.0.0.12");
    dns_stats(r, &st);
    assert_int_equal(st.queries, 3); /* the one evicted, asked again */
    assert_int_equal(st.cache_hits, 1);
    assert_int_equal(st.cached, 1);
    dns_free(r);
}

/* ---- failures from the fake server ---- */

/* No answer: a temporary failure within the configured time, uncached. */
static void test_timeout(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    int64_t t0;
    int64_t ms;
    const char *why = "Host or domain name not found. Name service error "
                      "for name=slow.example type=MX: Host not found, try "
                      "again";

    (void)state;
    fake_start(&f, FAKE_SILENT);
    r = resolver(f.servers, 100, 2, 0, 1);
    t0 = util_clock_mono_ms();
    expect_fail(lookup_mx(r, "slow.example"), DNS_TEMPFAIL, why, "4.4.3");
    ms = util_clock_mono_ms() - t0;
    assert_true(ms >= 150); /* 100 ms, then 200 ms */
    assert_true(ms < 2000);
    assert_int_equal(f.queries, 2);
    expect_fail(lookup_mx(r, "slow.example"), DNS_TEMPFAIL, why, "4.4.3");
    assert_int_equal(f.queries, 4);
    dns_free(r);
    fake_stop(&f);
}

static void test_servfail(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    const char *why = "Host or domain name not found. Name service error "
                      "for name=broken.example type=MX: Host not found, try "
                      "again";
    int before;

    (void)state;
    fake_start(&f, FAKE_SERVFAIL);
    r = resolver(f.servers, 500, 2, 0, 1);
    expect_fail(lookup_mx(r, "broken.example"), DNS_TEMPFAIL, why, "4.4.3");
    before = f.queries;
    assert_true(before >= 1);
    expect_fail(lookup_mx(r, "broken.example"), DNS_TEMPFAIL, why, "4.4.3");
    assert_true(f.queries > before); /* not cached */
    dns_free(r);
    fake_stop(&f);
}

static void test_formerr(void **state)
{
    struct fake f;
    struct dns_resolver *r;

    (void)state;
    fake_start(&f, FAKE_FORMERR);
    r = resolver(f.servers, 500, 1, 0, 1);
    expect_fail(lookup_mx(r, "old.example"), DNS_PERMFAIL,
                "Host or domain name not found. Name service error for "
                "name=old.example type=MX: Non-recoverable error",
                "5.4.3");
    dns_free(r);
    fake_stop(&f);
}

static void test_malformed_reply(void **state)
{
    struct fake f;
    struct dns_resolver *r;

    (void)state;
    fake_start(&f, FAKE_GARBAGE);
    r = resolver(f.servers, 500, 1, 0, 1);
    expect_fail(lookup_mx(r, "garbled.example"), DNS_TEMPFAIL,
                "Name service error for name=garbled.example type=MX: "
                "Malformed or unexpected name server reply",
                "4.4.3");
    dns_free(r);
    fake_stop(&f);
}

/* Addresses come in the order the server sent them, IPv4 first. */
static void test_address_order(void **state)
{
    struct fake f;
    struct dns_resolver *r;

    (void)state;
    fake_start(&f, FAKE_RECORDS);
    r = resolver(f.servers, 500, 1, 0, 1);
    expect_hosts(lookup_mx(r, "order.example"),
                 "10 mx.order.example 192.0.2.3 192.0.2.1 192.0.2.2 "
                 "2001:db8::2 2001:db8::1");
    dns_free(r);
    fake_stop(&f);
}

/* ---- DNSSEC: the AD bit ---- */

/*
 * RFC 6840, 5.7: "validating resolvers ... SHOULD set the AD bit" in a
 * response "only if the request contained either a set DO bit or a set
 * AD bit"; every question asks with both, and a reply's AD bit makes its
 * answer secure: the MX result, each exchanger, the TLSA and TXT results.
 * Records of the TLSA answer with short data are skipped, TXT records
 * with a NUL byte too; an empty TXT record is an empty string.
 */
static void test_ad_secure(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    struct dns_result *res;
    struct dns_txt_result *txt;

    (void)state;
    fake_start(&f, FAKE_SECURE);
    r = resolver(f.servers, 500, 1, 0, 1);
    res = lookup_mx(r, "signed.example");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->secure, 1);
    assert_int_equal(res->nhost, 1);
    assert_int_equal(res->host[0].secure, 1);
    dns_result_free(res);
    res = lookup_host(r, "mx.signed.example");
    assert_int_equal(res->secure, 1);
    assert_int_equal(res->host[0].secure, 1);
    dns_result_free(res);
    expect_tlsa(lookup_tlsa(r, "mx.signed.example", 25), DNS_OK, 1,
                "_25._tcp.mx.signed.example",
                "3 1 1 a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9"
                "babbbcbdbebf; 2 0 0 42");
    txt = lookup_txt(r, "_mta-sts.signed.example");
    assert_int_equal(txt->status, DNS_OK);
    assert_int_equal(txt->secure, 1);
    assert_int_equal(txt->n, 2);
    assert_string_equal(txt->txt[0], "v=STSv1; id=42");
    assert_string_equal(txt->txt[1], "");
    dns_txt_result_free(txt);
    assert_int_equal(f.queries, 5); /* MX, A, AAAA, TLSA, TXT */
    assert_int_equal(f.ad_queries, 5);
    assert_int_equal(f.do_queries, 5);
    dns_free(r);
    fake_stop(&f);
}

/*
 * A host is secure only when all its address answers are: here the AAAA
 * answer comes without AD. The MX result stays secure (its MX answer
 * was), and the cache keeps each answer's flag.
 */
static void test_ad_per_answer(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    struct dns_result *res;
    int i;

    (void)state;
    fake_start(&f, FAKE_SECURE);
    f.plain_type = 28;
    r = resolver(f.servers, 500, 1, 0, 1);
    for (i = 0; i < 2; i++) {
        res = lookup_mx(r, "half.example");
        assert_int_equal(res->status, DNS_OK);
        assert_int_equal(res->secure, 1);
        assert_int_equal(res->host[0].secure, 0);
        dns_result_free(res);
        res = lookup_host(r, "mx.half.example");
        assert_int_equal(res->secure, 0);
        dns_result_free(res);
    }
    assert_int_equal(f.queries, 3);
    dns_free(r);
    fake_stop(&f);

    /* Only the MX answer without AD: the exchanger is secure, not it. */
    fake_start(&f, FAKE_SECURE);
    f.plain_type = 15;
    r = resolver(f.servers, 500, 1, 0, 1);
    res = lookup_mx(r, "half.example");
    assert_int_equal(res->secure, 0);
    assert_int_equal(res->host[0].secure, 1);
    dns_result_free(res);
    dns_free(r);
    fake_stop(&f);
}

/*
 * A CNAME chain asked again from where it stopped: the result is secure
 * only when every reply on the way was ("the MX answer and every CNAME
 * leading to it").
 */
static void test_ad_cname_chain(void **state)
{
    static const struct {
        int chain_ad, target_ad, secure;
    } cases[] = {{1, 1, 1}, {1, 0, 0}, {0, 1, 0}};
    struct fake f;
    struct dns_resolver *r;
    struct dns_result *res;
    struct dns_txt_result *txt;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        fake_start(&f, FAKE_SECURE);
        f.chain = 1;
        f.chain_ad = cases[i].chain_ad;
        f.target_ad = cases[i].target_ad;
        r = resolver(f.servers, 500, 1, 0, 1);
        txt = lookup_txt(r, "alias._mta-sts.example");
        assert_int_equal(txt->status, DNS_OK);
        assert_int_equal(txt->n, 2);
        assert_int_equal(txt->secure, cases[i].secure);
        dns_txt_result_free(txt);
        res = lookup_host(r, "alias.mx.example");
        assert_int_equal(res->status, DNS_OK);
        assert_int_equal(res->secure, cases[i].secure);
        assert_int_equal(res->host[0].secure, cases[i].secure);
        dns_result_free(res);
        assert_int_equal(f.queries, 6); /* each asked twice */
        dns_free(r);
        fake_stop(&f);
    }
}

/* An address was validated by nobody: never secure. */
static void test_ad_literal_not_secure(void **state)
{
    struct dns_resolver *r;
    struct dns_result *res;

    (void)state;
    r = resolver("127.0.0.1:9", 100, 1, 0, 1);
    res = lookup_host(r, "[192.0.2.1]");
    assert_int_equal(res->status, DNS_OK);
    assert_int_equal(res->secure, 0);
    assert_int_equal(res->host[0].secure, 0);
    dns_result_free(res);
    dns_free(r);
}

/* SERVFAIL (what a validator answers for a bogus answer): TEMPFAIL. */
static void test_tlsa_servfail(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    struct dns_tlsa_result *res;
    struct dns_txt_result *txt;

    (void)state;
    fake_start(&f, FAKE_SERVFAIL);
    r = resolver(f.servers, 500, 1, 0, 1);
    res = lookup_tlsa(r, "mx.bogus.example", 25);
    assert_int_equal(res->status, DNS_TEMPFAIL);
    assert_int_equal(res->secure, 0);
    assert_int_equal(res->n, 0);
    assert_string_equal(res->why, "Host or domain name not found. Name "
                                  "service error for "
                                  "name=_25._tcp.mx.bogus.example "
                                  "type=TLSA: Host not found, try again");
    assert_string_equal(res->dsn, "4.4.3");
    dns_tlsa_result_free(res);
    txt = lookup_txt(r, "_mta-sts.bogus.example");
    assert_int_equal(txt->status, DNS_TEMPFAIL);
    assert_string_equal(txt->dsn, "4.4.3");
    dns_txt_result_free(txt);
    dns_free(r);
    fake_stop(&f);
}

/* Whether every configured name server is on this machine. */
static void test_servers_loopback(void **state)
{
    static const struct {
        const char *servers;
        int loopback;
    } cases[] = {
        {"127.0.0.1", 1},           {"127.0.0.53:53,[::1]:5353", 1},
        {"127.0.0.1,192.0.2.1", 0}, {"192.0.2.1:53", 0},
        {"[2001:db8::1]:53", 0},
    };
    struct dns_resolver *r;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        r = resolver(cases[i].servers, 100, 1, 0, 1);
        assert_int_equal(dns_servers_loopback(r), cases[i].loopback);
        dns_free(r);
    }
}

/* ---- shutting down ---- */

static void test_free_with_lookups_outstanding(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    struct outcome a = {0, NULL}, b = {0, NULL}, c = {0, NULL};
    struct tlsa_outcome t = {0, NULL};
    struct txt_outcome x = {0, NULL};

    (void)state;
    fake_start(&f, FAKE_MXONLY);
    r = resolver(f.servers, 1000, 3, 0, 1);
    in_call = 1;
    /* Waiting for the addresses of its exchanger. */
    assert_int_equal(dns_lookup_mx(r, "busy.example", on_done, &a), 0);
    in_call = 0;
    run_until(&f.queries, 3, 3000);
    assert_int_equal(f.queries, 3); /* MX answered; A, AAAA unanswered */
    in_call = 1;
    /* Waiting for its MX. */
    assert_int_equal(dns_lookup_mx(r, "other.example", on_done, &b), 0);
    /* Answered, not yet delivered. */
    assert_int_equal(dns_lookup_host(r, "192.0.2.7", on_done, &c), 0);
    /* Waiting for their records. */
    assert_int_equal(dns_lookup_tlsa(r, "mx.busy.example", 25, on_tlsa, &t), 0);
    assert_int_equal(dns_lookup_txt(r, "_mta-sts.busy.example", on_txt, &x), 0);
    in_call = 0;
    assert_int_equal(a.calls + b.calls + c.calls + t.calls + x.calls, 0);
    dns_free(r);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(c.calls, 1);
    assert_int_equal(t.calls, 1);
    assert_int_equal(x.calls, 1);
    expect_tlsa(t.res, DNS_TEMPFAIL, 0, "_25._tcp.mx.busy.example", "");
    assert_int_equal(x.res->status, DNS_TEMPFAIL);
    assert_string_equal(x.res->why, "resolver shut down");
    dns_txt_result_free(x.res);
    expect_fail(a.res, DNS_TEMPFAIL, "resolver shut down", "4.4.3");
    expect_fail(b.res, DNS_TEMPFAIL, "resolver shut down", "4.4.3");
    expect_hosts(c.res, "0 192.0.2.7 192.0.2.7");
    /* Nothing is left on the loop. */
    event_base_loop(base, EVLOOP_NONBLOCK);
    assert_int_equal(a.calls + b.calls + c.calls, 3);
    fake_stop(&f);
}

static void free_in_callback(void *ctx, struct dns_result *res)
{
    struct dns_resolver **rp = ctx;

    assert_false(in_call);
    assert_int_equal(res->status, DNS_OK);
    dns_result_free(res);
    dns_free(*rp);
    *rp = NULL;
}

/* A callback may free the resolver, and lookups fail after that starts. */
static void test_free_from_callback(void **state)
{
    struct dns_resolver *r;

    (void)state;
    r = resolver("127.0.0.1:9", 100, 1, 0, 1);
    in_call = 1;
    assert_int_equal(dns_lookup_host(r, "192.0.2.8", free_in_callback, &r), 0);
    in_call = 0;
    while (r != NULL)
        event_base_loop(base, EVLOOP_ONCE);
}

static void test_create_errors(void **state)
{
    struct dns_config cf = {"not-an-address", 0, 0, 0, 0};
    char why[256] = "";
    struct dns_resolver *r;

    (void)state;
    assert_null(dns_create(base, &cf, why, sizeof(why)));
    assert_non_null(strstr(why, "bad name server list \"not-an-address\""));
    /* The system's servers, by default. */
    r = dns_create(base, NULL, why, sizeof(why));
    assert_non_null(r);
    dns_free(r);
}

/* ---- client names (peer.c) ---- */

struct peer_outcome {
    int calls;
    struct dns_peer_result *res;
};

static void on_peer(void *ctx, struct dns_peer_result *res)
{
    struct peer_outcome *o = ctx;

    assert_false(in_call);
    o->calls++;
    dns_peer_result_free(o->res);
    o->res = res;
}

static struct dns_peer_result *lookup_peer(struct dns_resolver *r,
                                           const char *addr)
{
    struct peer_outcome o = {0, NULL};
    struct sockaddr_storage ss;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

    memset(&ss, 0, sizeof(ss));
    if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(4321);
    } else {
        assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
        s6->sin6_family = AF_INET6;
    }
    in_call = 1;
    assert_int_equal(
        dns_lookup_peer(r, (struct sockaddr *)&ss, sizeof(ss), on_peer, &o), 0);
    in_call = 0;
    assert_int_equal(o.calls, 0);
    run_until(&o.calls, 1, 5000);
    assert_int_equal(o.calls, 1);
    return o.res;
}

static void expect_peer(struct dns_peer_result *res, enum dns_status status,
                        const char *name, const char *reverse, const char *why)
{
    assert_non_null(res);
    assert_int_equal(res->status, status);
    assert_string_equal(res->name, name);
    assert_string_equal(res->reverse_name, reverse);
    assert_string_equal(res->why, why);
    dns_peer_result_free(res);
}

/* RFC 1035, 3.5 and RFC 3596, 2.5: the names of the PTR records. */
static void test_reverse_name(void **state)
{
    struct sockaddr_in s4 = {0};
    struct sockaddr_in6 s6 = {0};
    struct sockaddr_un su = {0};
    char out[128];

    (void)state;
    s4.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", &s4.sin_addr);
    assert_int_equal(dns_reverse_name((struct sockaddr *)&s4, out, sizeof(out)),
                     0);
    assert_string_equal(out, "1.2.0.192.in-addr.arpa");
    assert_int_equal(dns_reverse_name((struct sockaddr *)&s4, out, 22), -1);
    s6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "2001:db8::567:89ab", &s6.sin6_addr);
    assert_int_equal(dns_reverse_name((struct sockaddr *)&s6, out, sizeof(out)),
                     0);
    assert_string_equal(out, "b.a.9.8.7.6.5.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0."
                             "8.b.d.0.1.0.0.2.ip6.arpa");
    assert_int_equal(dns_reverse_name((struct sockaddr *)&s6, out, 72), -1);
    su.sun_family = AF_UNIX;
    assert_int_equal(dns_reverse_name((struct sockaddr *)&su, out, sizeof(out)),
                     -1);
}

/* The address, not the port; families apart. */
static void test_addr_match(void **state)
{
    struct dns_addr a;
    struct sockaddr_in s4 = {0};
    struct sockaddr_in6 s6 = {0};

    (void)state;
    memset(&a, 0, sizeof(a));
    a.sa.ss_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", &((struct sockaddr_in *)&a.sa)->sin_addr);
    s4.sin_family = AF_INET;
    s4.sin_port = htons(25);
    inet_pton(AF_INET, "192.0.2.1", &s4.sin_addr);
    assert_true(dns_addr_match(&a, (struct sockaddr *)&s4));
    inet_pton(AF_INET, "192.0.2.2", &s4.sin_addr);
    assert_false(dns_addr_match(&a, (struct sockaddr *)&s4));
    s6.sin6_family = AF_INET6;
    inet_pton(AF_INET6, "::ffff:192.0.2.1", &s6.sin6_addr);
    assert_false(dns_addr_match(&a, (struct sockaddr *)&s6));
    a.sa.ss_family = AF_INET6;
    inet_pton(AF_INET6, "2001:db8::1",
              &((struct sockaddr_in6 *)&a.sa)->sin6_addr);
    inet_pton(AF_INET6, "2001:db8::1", &s6.sin6_addr);
    assert_true(dns_addr_match(&a, (struct sockaddr *)&s6));
}

/*
 * The reference's smtpd_peer.c: the PTR name only when its addresses
 * include the client's; "unknown" and its warning otherwise.
 */
static void test_peer_names(void **state)
{
    struct dns_resolver *r;

    (void)state;
    NEED_DNSMASQ();
    r = local_resolver();
    expect_peer(lookup_peer(r, "127.0.0.2"), DNS_OK, "good.peer.test",
                "good.peer.test", "");
    expect_peer(lookup_peer(r, "fd00::2"), DNS_OK, "good.peer.test",
                "good.peer.test", "");
    expect_peer(lookup_peer(r, "::ffff:127.0.0.2"), DNS_OK, "good.peer.test",
                "good.peer.test", "");
    expect_peer(lookup_peer(r, "127.0.0.3"), DNS_PERMFAIL, "unknown",
                "liar.peer.test",
                "hostname liar.peer.test does not resolve to address "
                "127.0.0.3");
    expect_peer(lookup_peer(r, "127.0.0.4"), DNS_PERMFAIL, "unknown", "unknown",
                "");
    expect_peer(lookup_peer(r, "127.0.0.5"), DNS_PERMFAIL, "unknown", "unknown",
                "numeric hostname: 127.0.0.5");
    /* the second PTR name is the one that confirms */
    expect_peer(lookup_peer(r, "127.0.0.6"), DNS_OK, "two.peer.test",
                "nope.peer.test", "");
    expect_peer(lookup_peer(r, "127.0.0.7"), DNS_PERMFAIL, "unknown",
                "gone.peer.test",
                "hostname gone.peer.test does not resolve to address "
                "127.0.0.7: Host or domain name not found. Name service "
                "error for name=gone.peer.test type=A: Host not found");
    dns_free(r);
}

/* A server that never answers: a temporary failure, no name. */
static void test_peer_timeout(void **state)
{
    struct fake f;
    struct dns_resolver *r;

    (void)state;
    fake_start(&f, FAKE_SILENT);
    r = resolver(f.servers, 100, 1, 0, 1);
    expect_peer(lookup_peer(r, "192.0.2.1"), DNS_TEMPFAIL, "unknown", "unknown",
                "");
    dns_free(r);
    fake_stop(&f);
}

/* Not an address; a resolver going away ends a lookup under way. */
static void test_peer_refused_and_shutdown(void **state)
{
    struct fake f;
    struct dns_resolver *r;
    struct sockaddr_un su = {0};
    struct sockaddr_in s4 = {0};
    struct peer_outcome o = {0, NULL};

    (void)state;
    fake_start(&f, FAKE_SILENT);
    r = resolver(f.servers, 1000, 1, 0, 1);
    su.sun_family = AF_UNIX;
    assert_int_equal(
        dns_lookup_peer(r, (struct sockaddr *)&su, sizeof(su), on_peer, &o),
        -1);
    s4.sin_family = AF_INET;
    inet_pton(AF_INET, "192.0.2.1", &s4.sin_addr);
    assert_int_equal(
        dns_lookup_peer(r, (struct sockaddr *)&s4, sizeof(s4), on_peer, &o), 0);
    dns_free(r);
    assert_int_equal(o.calls, 1);
    assert_int_equal(o.res->status, DNS_TEMPFAIL);
    assert_string_equal(o.res->name, "unknown");
    dns_peer_result_free(o.res);
    fake_stop(&f);
}

#define T(f) cmocka_unit_test_setup_teardown(f, loop_setup, loop_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_mx_preference_order),
        T(test_mx_equal_preference_shuffled),
        T(test_mx_many_exchangers),
        T(test_mx_implicit),
        T(test_mx_null),
        T(test_mx_nxdomain),
        T(test_mx_exchanger_without_address),
        T(test_mx_ipv6_only),
        T(test_mx_cname),
        T(test_mx_invalid_names),
        T(test_mx_refused),
        T(test_host_lookup),
        T(test_host_literal),
        T(test_tlsa_records),
        T(test_tlsa_short_record_skipped),
        T(test_tlsa_denial),
        T(test_tlsa_invalid),
        T(test_tlsa_cached),
        T(test_txt_records),
        T(test_txt_missing),
        T(test_not_secure_without_ad),
        T(test_cache_hit),
        T(test_cache_shared_questions),
        T(test_cache_ttl),
        T(test_cache_ttl_smallest),
        T(test_cache_negative_default),
        T(test_cache_negative_soa),
        T(test_cache_negative_soa_fields),
        T(test_cache_bounded),
        T(test_timeout),
        T(test_servfail),
        T(test_formerr),
        T(test_malformed_reply),
        T(test_address_order),
        T(test_ad_secure),
        T(test_ad_per_answer),
        T(test_ad_cname_chain),
        T(test_ad_literal_not_secure),
        T(test_tlsa_servfail),
        T(test_servers_loopback),
        T(test_free_with_lookups_outstanding),
        T(test_free_from_callback),
        T(test_create_errors),
        T(test_reverse_name),
        T(test_addr_match),
        T(test_peer_names),
        T(test_peer_timeout),
        T(test_peer_refused_and_shutdown),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
