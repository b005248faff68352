/*
 * NAME
 *	dane 3 - the TLSA lookups of a delivery at the levels dane and
 *	dane-only
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_dane_start(struct qm_delivery *d, struct dns_result *res,
 *			unsigned port, qm_dane_fn *done)
 * DESCRIPTION
 *	RFC 7672, 2.2: DANE applies to a server when the MX records that
 *	named it (or, for a next hop in brackets, nothing: the host is the
 *	destination) and its address records were DNSSEC-validated; its
 *	TLSA records (_PORT._tcp.HOST) then say how to authenticate it.
 *	qm_dane_start() takes the MX or host answer res of delivery d (and
 *	owns it from then on), looks up the TLSA records of each server
 *	the delivery may use (the hosts of the first smtp_mx_address_limit
 *	addresses, the same that qmgr_addresses() hands to the agent), and
 *	then calls done(d, res, dane, n) with one struct deliver_dane per
 *	host: DELIVER_DANE_RECORDS with the validated records,
 *	DELIVER_DANE_NONE when the MX answer, the host's addresses or its
 *	TLSA answer were not validated or DNSSEC denied TLSA records, and
 *	DELIVER_DANE_FAILED when the lookup failed (a validating resolver
 *	answers SERVFAIL for a bogus answer: such a server must not be
 *	used, whatever the level). done is called once, from the loop;
 *	what it is given lives until it returns. A delivery whose MX answer
 *	is insecure asks no TLSA question at all (every host: none).
 *
 *	While the lookups run, d->dns_wait stays set: qmgr_stop() leaves
 *	the delivery to the resolver, which ends the lookups when it is
 *	freed; done is then called as for any answer, and the caller sees
 *	that the queue manager is closing.
 *
 *	DANE trusts the resolver's AD bit, so the path to the resolver
 *	must be trusted (decision 53): the first DANE lookup through a
 *	resolver that is not on loopback logs a warning, once per process.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct qm_dane {
    struct qm_delivery *d;
    struct dns_result *res;
    qm_dane_fn *done;
    size_t n, pending;
    struct deliver_dane *hosts;
    struct dns_tlsa_result **answers;
    struct tls_tlsa **records;
    struct event *finish; /* done from the loop when nothing was asked */
};

struct qm_dane_lookup {
    struct qm_dane *dn;
    size_t i;
};

static void dane_free(struct qm_dane *dn)
{
    for (size_t i = 0; i < dn->n; i++) {
        dns_tlsa_result_free(dn->answers[i]);
        free(dn->records[i]);
    }
    free(dn->answers);
    free(dn->records);
    free(dn->hosts);
    if (dn->finish)
        event_free(dn->finish);
    dns_result_free(dn->res);
    free(dn);
}

static void dane_finish(struct qm_dane *dn)
{
    dn->d->dns_wait = 0;
    dn->done(dn->d, dn->res, dn->hosts, dn->n);
    dane_free(dn);
}

static void finish_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    dane_finish(arg);
}

static void tlsa_done(void *ctx, struct dns_tlsa_result *res)
{
    struct qm_dane_lookup *l = ctx;
    struct qm_dane *dn = l->dn;
    struct deliver_dane *h = &dn->hosts[l->i];

    dn->answers[l->i] = res;
    if (res->status != DNS_OK) {
        h->state = DELIVER_DANE_FAILED;
        snprintf(h->why, sizeof(h->why), "%s",
                 res->why && res->why[0] ? res->why : "lookup failed");
    } else if (res->secure && res->n > 0) {
        struct tls_tlsa *t = xcalloc(res->n, sizeof(*t));

        for (size_t k = 0; k < res->n; k++) {
            t[k].usage = res->rec[k].usage;
            t[k].selector = res->rec[k].selector;
            t[k].mtype = res->rec[k].mtype;
            t[k].data = res->rec[k].data;
            t[k].len = res->rec[k].len;
        }
        dn->records[l->i] = t;
        h->state = DELIVER_DANE_RECORDS;
        h->tlsa = t;
        h->ntlsa = res->n;
    }
    free(l);
    if (--dn->pending == 0)
        dane_finish(dn);
}

/* Is host among the first hosts[0..n)? */
static int seen(const struct deliver_dane *hosts, size_t n, const char *host)
{
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(hosts[i].host, host) == 0)
            return 1;
    return 0;
}

void qm_dane_start(struct qm_delivery *d, struct dns_result *res, unsigned port,
                   qm_dane_fn *done)
{
    static int warned;
    struct qmgr *q = d->q;
    struct qm_dane *dn = xcalloc(1, sizeof(*dn));
    struct qmgr_deliver_settings set;
    size_t max = res->nhost, addrs = 0;

    dn->d = d;
    dn->res = res;
    dn->done = done;
    dn->hosts = xcalloc(max ? max : 1, sizeof(*dn->hosts));
    dn->answers = xcalloc(max ? max : 1, sizeof(*dn->answers));
    dn->records = xcalloc(max ? max : 1, sizeof(*dn->records));
    d->dns_wait = 1;
    qmgr_deliver_settings(q->conf, d->dest->route.transport, &set);
    /* the hosts of the addresses the agent will be given */
    for (size_t h = 0; h < res->nhost; h++) {
        const struct dns_host *host = &res->host[h];

        if (set.address_limit > 0 && addrs >= (size_t)set.address_limit)
            break;
        addrs += host->naddr;
        if (host->naddr == 0 || seen(dn->hosts, dn->n, host->name))
            continue;
        snprintf(dn->hosts[dn->n].host, sizeof(dn->hosts[dn->n].host), "%s",
                 host->name);
        dn->hosts[dn->n].state = DELIVER_DANE_NONE;
        dn->n++;
    }
    if (!warned && !dns_servers_loopback(q->dns)) {
        warned = 1;
        qm_log(q, QMGR_LOG_WARNING,
               "DANE trusts the DNSSEC status (AD bit) that the resolver "
               "sends, and dns_servers (or /etc/resolv.conf) names a "
               "resolver that is not on loopback: run a validating "
               "resolver on this host");
    }
    /* RFC 7672, 2.2.1: an insecure MX answer means no DANE at all */
    for (size_t i = 0; res->secure && i < dn->n; i++) {
        const struct dns_host *host = NULL;

        for (size_t h = 0; h < res->nhost && host == NULL; h++)
            if (strcasecmp(res->host[h].name, dn->hosts[i].host) == 0)
                host = &res->host[h];
        /* 2.2.2: TLSA records only for a host whose addresses are
         * validated */
        if (host == NULL || !host->secure)
            continue;
        struct qm_dane_lookup *l = xcalloc(1, sizeof(*l));

        l->dn = dn;
        l->i = i;
        dn->pending++;
        if (dns_lookup_tlsa(q->dns, dn->hosts[i].host, (int)port, tlsa_done,
                            l) < 0) {
            /* the resolver is going away: the lookup fails */
            dn->pending--;
            free(l);
            dn->hosts[i].state = DELIVER_DANE_FAILED;
            snprintf(dn->hosts[i].why, sizeof(dn->hosts[i].why),
                     "resolver shut down");
        }
    }
    if (dn->pending == 0) {
        dn->finish = event_new(q->base, -1, 0, finish_cb, dn);
        event_active(dn->finish, 0, 0);
    }
}
