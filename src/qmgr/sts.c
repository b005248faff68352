/*
 * NAME
 *	sts 3 - MTA-STS in the queue manager: which policy a delivery obeys
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_sts_open(struct qmgr *q)
 *	void	qm_sts_close(struct qmgr *q)
 *	int	qm_sts_own_mx(const struct qm_delivery *d)
 *	int	qm_sts_applies(const struct qm_delivery *d)
 *	void	qm_sts_get(struct qm_delivery *d, qm_sts_fn *done)
 *	size_t	qm_sts_filter(const struct qm_delivery *d,
 *			struct deliver_addr *addrs, size_t n, char *why,
 *			size_t whylen)
 *	void	qm_sts_report(struct qm_delivery *d,
 *			const struct deliver_result *res)
 *	enum qm_sts_verdict qm_sts_verdict(const struct qm_delivery *d,
 *			const struct deliver_result *res, char *host,
 *			size_t hostlen, char *addr, size_t addrlen)
 * DESCRIPTION
 *	RFC 8461 through sts/ (which finds, fetches and caches policies):
 *	this file opens the layer with the configuration, answers its TXT
 *	questions with dns/, and applies a policy to a delivery.
 *
 *	qm_sts_open() opens it when smtp_mta_sts_enable is yes (read at
 *	start only; a change waits for a restart), with
 *	smtp_mta_sts_fetch_timeout,
 *	smtp_mta_sts_CAfile and smtp_mta_sts_max_policy_size, the spool as
 *	its cache and the queue manager's log, and dns/ for the TXT record
 *	and the policy host's addresses; when it cannot, it logs
 *	why and delivers without MTA-STS. qm_sts_close() closes it
 *	(qmgr_stop(): before the resolver goes, since its lookups answer
 *	into it).
 *
 *	qm_sts_own_mx() says whether d is an SMTP delivery to a
 *	recipient's own domain through its MX records; not to a relay
 *	host, a next hop in brackets or a transport table's other domain.
 *	qm_sts_applies(): a policy is looked up for those deliveries only
 *	(section 3.4: the policy is the recipient domain's, about its MX
 *	hosts), when MTA-STS is on. TLS reporting counts the same
 *	deliveries without a policy as "no-policy-found" (tlsrpt.c).
 *	qm_sts_get() asks sts/ and calls done(d) once with d->sts_mode and
 *	d->sts set (a copy of the policy, none when there is none or its
 *	mode is none). A policy that could not be had is
 *	logged, once per distinct reason in a row, unless the domain
 *	simply publishes none.
 *
 *	qm_sts_filter() applies an enforce policy to the addresses a
 *	delivery is about to try: those of MX hosts that no mx pattern
 *	allows are dropped (section 5.1: "MX candidates that do not match
 *	... MUST NOT be used"); it returns how many are left, and when none
 *	is, the reason in why. The TLS half (a certificate valid for the MX
 *	host's name, section 4.2) is the client's: deliver/starttls.c at
 *	DELIVER_STS_ENFORCE.
 *
 *	qm_sts_report() logs, for a policy in testing mode, what enforce
 *	would have refused of a delivery made (section 5.2: "the sender
 *	... SHOULD deliver as if no policy existed, but report"):
 *
 *	DOMAIN: MTA-STS policy in testing mode would refuse HOST: REASON
 *
 *	where REASON is "not in the policy's mx", "no TLS", or "the
 *	certificate does not verify for HOST" (what the TLS client saw:
 *	Trusted, Untrusted or Anonymous). qm_sts_verdict() is that
 *	judgement for TLS reporting too: the relay's host and address,
 *	and what enforce would have said of them. A policy that a TXT
 *	record announces but that could not be had is counted for TLS
 *	reporting (qm_tlsrpt_policy_failure()).
 */

#include "qmgr/qmgr_impl.h"

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A TXT question of sts/, answered by dns/. */
struct txt_lookup {
    sts_txt_done_fn *done;
    void *ctx;
};

static void txt_answer(void *ctx, struct dns_txt_result *res)
{
    struct txt_lookup *l = ctx;
    int status = res->status == DNS_OK         ? STS_TXT_OK
                 : res->status == DNS_PERMFAIL ? STS_TXT_NONE
                                               : STS_TXT_TEMPFAIL;

    l->done(l->ctx, status, (const char *const *)res->txt, res->n);
    dns_txt_result_free(res);
    free(l);
}

static int txt_ask(void *ctx, const char *name, sts_txt_done_fn *done,
                   void *lookup_ctx)
{
    struct qmgr *q = ctx;
    struct txt_lookup *l = xcalloc(1, sizeof(*l));

    l->done = done;
    l->ctx = lookup_ctx;
    if (dns_lookup_txt(q->dns, name, txt_answer, l) < 0) {
        free(l);
        return -1;
    }
    return 0;
}

/* The policy host's addresses, from dns/ too (dns_servers). */
struct addr_lookup {
    sts_addr_done_fn *done;
    void *ctx;
};

static void addr_answer(void *ctx, struct dns_result *res)
{
    struct addr_lookup *l = ctx;
    struct util_buf b = UTIL_BUF_INIT;

    qm_addr_list(res, &b);
    l->done(l->ctx, b.len ? b.data : NULL, res->why);
    util_buf_free(&b);
    dns_result_free(res);
    free(l);
}

static int addr_ask(void *ctx, const char *host, sts_addr_done_fn *done,
                    void *lookup_ctx)
{
    struct qmgr *q = ctx;
    struct addr_lookup *l = xcalloc(1, sizeof(*l));

    l->done = done;
    l->ctx = lookup_ctx;
    if (dns_lookup_host(q->dns, host, addr_answer, l) < 0) {
        free(l);
        return -1;
    }
    return 0;
}

static void sts_log_cb(void *ctx, const char *text)
{
    qm_log(ctx, QMGR_LOG_WARNING, "%s", text);
}

void qm_sts_open(struct qmgr *q)
{
    const struct conf *conf = q->conf;
    struct sts_config cf = {0};
    char why[512];

    if (!conf_bool(conf, NULL, CONF_smtp_mta_sts_enable))
        return;
    cf.base = q->base;
    cf.spool = q->sp;
    cf.txt = txt_ask;
    cf.txt_ctx = q;
    cf.addr = addr_ask;
    cf.addr_ctx = q;
    cf.ca_file = conf_str(conf, NULL, CONF_smtp_mta_sts_CAfile);
    cf.fetch_timeout_ms =
        (int)conf_time_ms(conf, NULL, CONF_smtp_mta_sts_fetch_timeout);
    cf.max_policy_bytes =
        (size_t)conf_int(conf, NULL, CONF_smtp_mta_sts_max_policy_size);
    cf.log = sts_log_cb;
    cf.log_ctx = q;
    if ((q->sts = sts_create(&cf, why, sizeof(why))) == NULL)
        qm_log(q, QMGR_LOG_WARNING, "MTA-STS is off: %s", why);
}

void qm_sts_close(struct qmgr *q)
{
    sts_free(q->sts);
    q->sts = NULL;
}

int qm_sts_applies(const struct qm_delivery *d)
{
    return d->q->sts != NULL && qm_sts_own_mx(d);
}

int qm_sts_own_mx(const struct qm_delivery *d)
{
    const struct route_result *r = &d->dest->route;
    const char *at;

    if (r->type != ROUTE_SMTP || !r->mx || d->nrcpt == 0)
        return 0;
    /* the queue's recipients share the next hop: one tells the domain */
    at = strrchr(qm_delivery_address(d, 0), '@');
    return at != NULL && strcasecmp(at + 1, r->nexthop) == 0;
}

struct sts_wait {
    struct qm_delivery *d;
    qm_sts_fn *done;
};

/*
 * RFC 8460, 4.3.2.2: a policy that a TXT record announces and that
 * could not be had is a failure of the domain's policy (decision 63):
 * the certificate of the policy server ("sts-webpki-invalid"), a
 * policy that does not read ("sts-policy-invalid"), anything else on
 * the way ("sts-policy-fetch-error"). No record, or no answer for it,
 * is no policy and no failure.
 */
static void sts_report_failure(struct qm_delivery *d, const char *why)
{
    if (strstr(why, "_mta-sts.") != NULL || strstr(why, "shut down") != NULL)
        return;
    qm_tlsrpt_policy_failure(d,
                             strstr(why, ": invalid policy: ")
                                 ? TLSRPT_STS_POLICY_INVALID
                             : strstr(why, "certificate") || strstr(why, "SSL")
                                 ? TLSRPT_STS_WEBPKI_INVALID
                                 : TLSRPT_STS_POLICY_FETCH_ERROR,
                             "", why);
}

static void policy_done(void *ctx, const struct sts_policy *p, const char *why)
{
    struct sts_wait *w = ctx;
    struct qm_delivery *d = w->d;
    struct qmgr *q = d->q;
    qm_sts_fn *done = w->done;

    free(w);
    /* a domain without a record is the usual case: nothing to say */
    if (why && !q->closing && strstr(why, "_mta-sts.") == NULL &&
        strcmp(why, q->sts_last_why) != 0) {
        snprintf(q->sts_last_why, sizeof(q->sts_last_why), "%s", why);
        qm_log(q, QMGR_LOG_WARNING, "%s: %s", d->dest->route.nexthop, why);
    }
    if (p == NULL && why && !q->closing)
        sts_report_failure(d, why);
    if (p && p->mode != STS_NONE) {
        d->sts_mode =
            p->mode == STS_ENFORCE ? DELIVER_STS_ENFORCE : DELIVER_STS_TESTING;
        sts_policy_copy(&d->sts, p);
    }
    done(d);
}

void qm_sts_get(struct qm_delivery *d, qm_sts_fn *done)
{
    struct sts_wait *w = xcalloc(1, sizeof(*w));

    w->d = d;
    w->done = done;
    d->dns_wait = 1; /* qmgr_stop() leaves it to the answer */
    if (sts_policy_get(d->q->sts, d->dest->route.nexthop, policy_done, w) < 0) {
        /* not a domain name, or closing: no policy */
        free(w);
        d->dns_wait = 0;
        done(d);
    }
}

size_t qm_sts_filter(const struct qm_delivery *d, struct deliver_addr *addrs,
                     size_t n, char *why, size_t whylen)
{
    size_t kept = 0;

    if (d->sts_mode != DELIVER_STS_ENFORCE)
        return n;
    for (size_t i = 0; i < n; i++)
        if (sts_mx_match(&d->sts, addrs[i].host))
            addrs[kept++] = addrs[i];
    if (kept == 0)
        snprintf(why, whylen,
                 "MTA-STS policy of %s allows none of its MX hosts (first: "
                 "%s)",
                 d->dest->route.nexthop, n ? addrs[0].host : "none");
    return kept;
}

enum qm_sts_verdict qm_sts_verdict(const struct qm_delivery *d,
                                   const struct deliver_result *res, char *host,
                                   size_t hostlen, char *addr, size_t addrlen)
{
    size_t n = strcspn(res->relay, "[");
    const char *a = res->relay + n;

    snprintf(host, hostlen, "%.*s", (int)(n < 255 ? n : 255), res->relay);
    addr[0] = 0;
    if (*a == '[')
        snprintf(addr, addrlen, "%.*s", (int)strcspn(a + 1, "]"), a + 1);
    if (!sts_mx_match(&d->sts, host))
        return QM_STS_NOT_IN_MX;
    if (!res->tls.used)
        return QM_STS_NO_TLS;
    if (res->tls.word == NULL || strcmp(res->tls.word, "Verified") != 0)
        return res->tls.word && strcmp(res->tls.word, "Trusted") == 0
                   ? QM_STS_HOST_MISMATCH
                   : QM_STS_NOT_TRUSTED;
    return QM_STS_OK;
}

void qm_sts_report(struct qm_delivery *d, const struct deliver_result *res)
{
    static const char *const reason[] = {
        NULL, "not in the policy's mx", "no TLS",
        "the certificate does not verify for the MX host",
        "the certificate does not verify for the MX host"};
    char host[256], addr[64];
    enum qm_sts_verdict v;

    if (d->sts_mode != DELIVER_STS_TESTING || !res->hop_ok)
        return;
    v = qm_sts_verdict(d, res, host, sizeof(host), addr, sizeof(addr));
    if (v != QM_STS_OK)
        qm_log(d->q, QMGR_LOG_INFO,
               "%s: MTA-STS policy in testing mode would refuse %s: %s (%s)",
               d->dest->route.nexthop, host, reason[v],
               res->tls.word ? res->tls.word : "plaintext");
}
