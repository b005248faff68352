/*
 * NAME
 *	dnsq 1 - ask sluice's resolver one question, for the tests
 * SYNOPSIS
 *	dnsq [-s servers] [-t timeout_ms] [-r count] mx DOMAIN
 *	dnsq [-s servers] [-t timeout_ms] [-r count] host HOST
 *	dnsq [-s servers] [-t timeout_ms] [-r count] tlsa HOST PORT
 *	dnsq [-s servers] [-t timeout_ms] [-r count] txt NAME
 *	dnsq [-s servers] loopback
 * DESCRIPTION
 *	Runs one dns_lookup_mx(), dns_lookup_host(), dns_lookup_tlsa() or
 *	dns_lookup_txt() on its own event loop against servers (the form
 *	of dns_servers; default /etc/resolv.conf) and prints the result in
 *	a fixed form that shell tests compare:
 *
 *	    status=ok secure=1 [implicit_mx=0] [n=N] name=NAME
 *	    host PREF NAME secure=S ADDR...    (mx, host: one per host)
 *	    tlsa USAGE SELECTOR MTYPE HEX       (one per record)
 *	    txt TEXT                           (one per record)
 *
 *	or "status=tempfail|permfail secure=S dsn=X.Y.Z why=TEXT". With
 *	-r, the lookup is made count times in a row on the same resolver
 *	(the later ones from its cache) and a last line gives
 *	"queries=Q cache_hits=H" from dns_stats(). The
 *	exit status is 0 when the lookup ran (whatever it found), 2 on a
 *	usage error. "loopback" prints dns_servers_loopback().
 *	A test tool, not installed: tests/integration/dns_dnssec.sh uses
 *	it, and so may the DANE tests.
 */

#include "dns/dns.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

static int finished;

static const char *status_name(enum dns_status st)
{
    return st == DNS_OK ? "ok" : st == DNS_TEMPFAIL ? "tempfail" : "permfail";
}

static void head(enum dns_status st, int secure, const char *dsn,
                 const char *why)
{
    printf("status=%s secure=%d", status_name(st), secure);
    if (st != DNS_OK)
        printf(" dsn=%s why=%s\n", dsn, why);
}

static void on_hosts(void *ctx, struct dns_result *res)
{
    size_t i, j;

    (void)ctx;
    head(res->status, res->secure, res->dsn, res->why);
    if (res->status == DNS_OK)
        printf(" implicit_mx=%d name=%s\n", res->implicit_mx, res->name);
    for (i = 0; i < res->nhost; i++) {
        printf("host %d %s secure=%d", res->host[i].pref, res->host[i].name,
               res->host[i].secure);
        for (j = 0; j < res->host[i].naddr; j++)
            printf(" %s", res->host[i].addr[j].text);
        printf("\n");
    }
    dns_result_free(res);
    finished = 1;
}

static void on_tlsa(void *ctx, struct dns_tlsa_result *res)
{
    size_t i, j;

    (void)ctx;
    head(res->status, res->secure, res->dsn, res->why);
    if (res->status == DNS_OK)
        printf(" n=%zu name=%s\n", res->n, res->name);
    for (i = 0; i < res->n; i++) {
        printf("tlsa %u %u %u ", res->rec[i].usage, res->rec[i].selector,
               res->rec[i].mtype);
        for (j = 0; j < res->rec[i].len; j++)
            printf("%02x", res->rec[i].data[j]);
        printf("\n");
    }
    dns_tlsa_result_free(res);
    finished = 1;
}

static void on_txt(void *ctx, struct dns_txt_result *res)
{
    size_t i;

    (void)ctx;
    head(res->status, res->secure, res->dsn, res->why);
    if (res->status == DNS_OK)
        printf(" n=%zu name=%s\n", res->n, res->name);
    for (i = 0; i < res->n; i++)
        printf("txt %s\n", res->txt[i]);
    dns_txt_result_free(res);
    finished = 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: dnsq [-s servers] [-t timeout_ms] "
                    "mx|host|txt NAME | tlsa HOST PORT | loopback\n");
    return 2;
}

static int start(struct dns_resolver *r, int argc, char **argv)
{
    const char *what = argv[0];

    if (strcmp(what, "mx") == 0 && argc == 2)
        return dns_lookup_mx(r, argv[1], on_hosts, NULL);
    if (strcmp(what, "host") == 0 && argc == 2)
        return dns_lookup_host(r, argv[1], on_hosts, NULL);
    if (strcmp(what, "tlsa") == 0 && argc == 3)
        return dns_lookup_tlsa(r, argv[1], atoi(argv[2]), on_tlsa, NULL);
    if (strcmp(what, "txt") == 0 && argc == 2)
        return dns_lookup_txt(r, argv[1], on_txt, NULL);
    return -2;
}

int main(int argc, char **argv)
{
    struct dns_config cf = {NULL, 1000, 2, 0, 1};
    struct event_base *base;
    struct dns_resolver *r;
    struct dns_stats st;
    char why[256];
    int c, rc, i, count = 1, stats = 0;

    while ((c = getopt(argc, argv, "s:t:r:")) != -1) {
        if (c == 's')
            cf.servers = optarg;
        else if (c == 't')
            cf.timeout_ms = atoi(optarg);
        else if (c == 'r' && (count = atoi(optarg)) > 0)
            stats = 1;
        else
            return usage();
    }
    argc -= optind;
    argv += optind;
    if (argc < 1)
        return usage();
    if ((base = event_base_new()) == NULL ||
        (r = dns_create(base, &cf, why, sizeof(why))) == NULL) {
        fprintf(stderr, "dnsq: %s\n", base ? why : "no event base");
        return 1;
    }
    if (strcmp(argv[0], "loopback") == 0 && argc == 1) {
        printf("loopback=%d\n", dns_servers_loopback(r));
        count = 0;
    }
    for (i = 0; i < count; i++) {
        finished = 0;
        if ((rc = start(r, argc, argv)) < 0) {
            dns_free(r);
            event_base_free(base);
            return rc == -2 ? usage() : 1;
        }
        while (!finished)
            event_base_loop(base, EVLOOP_ONCE);
    }
    if (stats) {
        dns_stats(r, &st);
        printf("queries=%llu cache_hits=%llu\n", (unsigned long long)st.queries,
               (unsigned long long)st.cache_hits);
    }
    dns_free(r);
    event_base_free(base);
    return 0;
}
