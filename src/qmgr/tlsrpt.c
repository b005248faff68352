/*
 * NAME
 *	tlsrpt 3 - SMTP TLS reporting in the queue manager (RFC 8460)
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_tlsrpt_open(struct qmgr *q)
 *	void	qm_tlsrpt_close(struct qmgr *q)
 *	void	qm_tlsrpt_dane(struct qm_delivery *d,
 *			const struct deliver_dane *dane, size_t n)
 *	void	qm_tlsrpt_record(struct qm_delivery *d,
 *			const struct deliver_result *res)
 *	void	qm_tlsrpt_policy_failure(struct qm_delivery *d,
 *			enum tlsrpt_result result, const char *host,
 *			const char *reason)
 * DESCRIPTION
 *	qm_tlsrpt_open() starts TLS reporting when smtp_tls_report_enable
 *	is yes (read at start): the counts of the current period come
 *	back from the spool's meta database, and a timer (every minute,
 *	or more often for a short smtp_tls_report_period) writes the
 *	domains counted since the last time to it (one queued write per
 *	domain, in the group commit: not a disk write per delivery) and,
 *	when the period is over, sends its reports. qm_tlsrpt_close()
 *	writes what is left and stops (qmgr_stop(), before the resolver
 *	goes); reports being sent are abandoned.
 *
 *	Periods are aligned on the epoch: with the default of a day, a
 *	period is a UTC day, and the report's date-range is 00:00:00Z to
 *	23:59:59Z (section 4.1, "a 24-hour period").
 *
 *	Recording, per SMTP delivery: qm_tlsrpt_dane() keeps the TLSA
 *	records that qmgr/dane.c found for the delivery's hosts
 *	(policy-type "tlsa", policy-string the records as "usage selector
 *	mtype HEX"); an MTA-STS policy is the delivery's (qmgr/sts.c;
 *	policy-type "sts", policy-string its lines, mx-host its patterns).
 *	A host with TLSA records is counted under them, DANE coming before
 *	MTA-STS (RFC 8461, 2); another under the MTA-STS policy; a host
 *	under neither under "no-policy-found" of the recipient domain, when
 *	the delivery goes to that domain's own MX hosts
 *	(qm_sts_own_mx(): not to a relay host or a transport table's
 *	other next hop, whose sessions are not the domain's to hear
 *	about; decision 65). qm_tlsrpt_record() counts the delivery's
 *	result: each TLS failure the client noted (deliver_result.tls_fail)
 *	as a failed session of its host with the result type of decision
 *	63 and our address on the connection (sending-mta-ip), and a TLS
 *	session established for the transaction as a success (a delivery
 *	in plaintext where nothing required TLS is neither), unless the
 *	policy is MTA-STS in testing mode and enforce would have refused
 *	it (then a failure: "sts-policy-invalid" for an MX host outside
 *	the policy, "starttls-not-supported" for no TLS,
 *	"certificate-host-mismatch", "certificate-expired" or
 *	"certificate-not-trusted" for a certificate that does not
 *	verify). qm_tlsrpt_policy_failure() counts a failure of the
 *	domain's MTA-STS policy itself: no MX host allowed by an enforce
 *	policy (no session was made), a policy that could not be fetched
 *	or read.
 *
 *	Reporting: at the end of a period, a new table starts, the old
 *	one's domains are deleted from the spool, and each gets its report
 *	through qm_tlsrpt_report() (tlsrpt_send.c), which logs:
 *
 *	tlsrpt: DOMAIN: report REPORT-ID: queued as QUEUEID
 *	tlsrpt: DOMAIN: report REPORT-ID to URI: posted (HTTP CODE)
 *	tlsrpt: DOMAIN: report REPORT-ID to URI: failed (WHY)[, given up]
 *	tlsrpt: DOMAIN: no report: REASON
 *	tlsrpt: N sessions of the period were not counted (memory limit)
 *
 *	"no report" is not logged for a domain counted only under
 *	no-policy-found that has no _smtp._tls record: most domains
 *	mailed have none.
 */

#include "qmgr/qmgr_impl.h"

#include "http/http.h"
#include "tlsrpt/tlsrpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define POLICIES_MAX 10000 /* policies counted per period, at most */
#define META_PERIOD  "tlsrpt:period"
#define META_DOMAIN  "tlsrpt:d:"
#define TICK_MAX     60 /* seconds between flushes */

static int64_t now_sec(void)
{
    return (int64_t)(util_clock_wall_us() / 1000000);
}

static void period_save(struct qm_tlsrpt *r)
{
    char v[64];

    if (r->q->sp == NULL)
        return; /* no spool: counts in memory only */
    snprintf(v, sizeof(v), "%lld %lld", (long long)r->start,
             (long long)r->period);
    spool_meta_submit(r->q->sp, META_PERIOD, v, strlen(v), NULL, NULL);
}

/* Write the domains counted since the last flush to the meta database. */
static void flush_dirty(struct qm_tlsrpt *r)
{
    char **d;
    size_t n = tlsrpt_table_dirty(r->table, &d);

    for (size_t i = 0; i < n && r->q->sp != NULL; i++) {
        struct util_buf b = UTIL_BUF_INIT;
        char key[SPOOL_META_KEY_MAX + 1];

        snprintf(key, sizeof(key), "%s%s", META_DOMAIN, d[i]);
        tlsrpt_table_save(r->table, d[i], &b);
        spool_meta_submit(r->q->sp, key, b.data, b.len, NULL, NULL);
        util_buf_free(&b);
    }
    tlsrpt_strings_free(d, n);
}

static int load_domain(void *ctx, const char *key, const void *val, size_t len)
{
    struct qm_tlsrpt *r = ctx;

    if (tlsrpt_table_load(r->table, val, len) < 0)
        qm_log(r->q, QMGR_LOG_WARNING,
               "tlsrpt: %s: counts unreadable, "
               "dropped",
               key);
    return 0;
}

/* The counts of the period under way, from before a restart. */
static void load(struct qm_tlsrpt *r)
{
    void *val;
    size_t len;
    char why[256], **d;
    long long start, period;
    size_t n;

    r->start = now_sec() - now_sec() % r->period;
    if (r->q->sp == NULL)
        return;
    if (spool_meta_get(r->q->sp, META_PERIOD, &val, &len, why, sizeof(why)) ==
        0) {
        if (sscanf(val, "%lld %lld", &start, &period) == 2 && start > 0 &&
            start <= now_sec())
            r->start = start;
        free(val);
    }
    if (spool_meta_list(r->q->sp, META_DOMAIN, load_domain, r, why,
                        sizeof(why)) < 0)
        qm_log(r->q, QMGR_LOG_WARNING, "tlsrpt: cannot read counts: %s", why);
    /* what was loaded is on disk already */
    n = tlsrpt_table_dirty(r->table, &d);
    tlsrpt_strings_free(d, n);
    period_save(r);
}

void qm_tlsrpt_free(struct qm_tlsrpt *r)
{
    tlsrpt_table_free(r->table);
    free(r);
}

/* The period is over: a new one starts, the old one's reports go. */
static void period_end(struct qm_tlsrpt *r, int64_t now)
{
    struct tlsrpt_table *old = r->table;
    int64_t start = r->start, end = r->start + r->period - 1;
    char **d;
    size_t n = tlsrpt_table_domains(old, &d);

    if (tlsrpt_table_dropped(old) > 0)
        qm_log(r->q, QMGR_LOG_WARNING,
               "tlsrpt: %ld sessions of the period were not counted "
               "(memory limit)",
               tlsrpt_table_dropped(old));
    r->table = tlsrpt_table_create(POLICIES_MAX);
    r->start = now - now % r->period;
    period_save(r);
    for (size_t i = 0; i < n; i++) {
        char key[SPOOL_META_KEY_MAX + 1];

        snprintf(key, sizeof(key), "%s%s", META_DOMAIN, d[i]);
        if (r->q->sp != NULL)
            spool_meta_submit(r->q->sp, key, NULL, 0, NULL, NULL);
        qm_tlsrpt_report(r, old, d[i], start, end);
    }
    tlsrpt_strings_free(d, n);
    tlsrpt_table_free(old);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct qm_tlsrpt *r = arg;
    int64_t now = now_sec();

    (void)fd;
    (void)what;
    flush_dirty(r);
    if (now >= r->start + r->period)
        period_end(r, now);
}

void qm_tlsrpt_open(struct qmgr *q)
{
    const struct conf *conf = q->conf;
    struct qm_tlsrpt *r;
    struct timeval tv = {0, 0};
    char why[256];

    if (!conf_bool(conf, NULL, CONF_smtp_tls_report_enable))
        return;
    r = xcalloc(1, sizeof(*r));
    r->q = q;
    r->period = conf_time_ms(conf, NULL, CONF_smtp_tls_report_period) / 1000;
    if (r->period < 1)
        r->period = 86400;
    snprintf(r->org, sizeof(r->org), "%s",
             conf_str(conf, NULL, CONF_smtp_tls_report_organization));
    if (r->org[0] == 0)
        snprintf(r->org, sizeof(r->org), "%s", q->hostname);
    snprintf(r->contact, sizeof(r->contact), "postmaster@%s", q->hostname);
    snprintf(r->ca_file, sizeof(r->ca_file), "%s",
             conf_str(conf, NULL, CONF_smtp_tls_report_CAfile));
    r->table = tlsrpt_table_create(POLICIES_MAX);
    if ((r->http = http_client_create(q->base, why, sizeof(why))) == NULL)
        qm_log(q, QMGR_LOG_WARNING, "tlsrpt: no https: reports: %s", why);
    load(r);
    tv.tv_sec = r->period / 4 < TICK_MAX ? r->period / 4 : TICK_MAX;
    if (tv.tv_sec < 1)
        tv.tv_sec = 1;
    r->tick = event_new(q->base, -1, EV_PERSIST, tick_cb, r);
    event_add(r->tick, &tv);
    q->tlsrpt = r;
}

void qm_tlsrpt_close(struct qmgr *q)
{
    struct qm_tlsrpt *r = q->tlsrpt;

    if (r == NULL)
        return;
    q->tlsrpt = NULL;
    flush_dirty(r);
    event_free(r->tick);
    qm_tlsrpt_send_stop(r); /* r may be gone */
}

/*
 * The policy a session with host counts under; 0 when there is none: a
 * delivery without DANE or MTA-STS counts as "no-policy-found" when it
 * goes to the recipient domain's own MX hosts (those whose reports the
 * domain's _smtp._tls record asks for; not a relay host's).
 */
static int policy_of(const struct qm_delivery *d, const char *host,
                     struct tlsrpt_policy *p, struct util_buf *lines,
                     struct util_buf *mx)
{
    for (size_t i = 0; i < d->ntlsa; i++)
        if (strcasecmp(d->tlsa[i].host, host) == 0) {
            p->type = TLSRPT_POLICY_TLSA;
            p->domain = d->dest->route.nexthop;
            p->string = d->tlsa[i].text ? d->tlsa[i].text : "";
            p->mx = "";
            return 1;
        }
    if (d->sts_mode == DELIVER_STS_NONE) {
        if (!qm_sts_own_mx(d))
            return 0;
        p->type = TLSRPT_POLICY_NONE;
        p->domain = d->dest->route.nexthop;
        p->string = "";
        p->mx = "";
        return 1;
    }
    util_buf_printf(lines, "version: STSv1\nmode: %s\n",
                    sts_mode_name(d->sts.mode));
    for (size_t i = 0; i < d->sts.nmx; i++) {
        util_buf_printf(lines, "mx: %s\n", d->sts.mx[i]);
        util_buf_printf(mx, "%s%s", i ? "\n" : "", d->sts.mx[i]);
    }
    util_buf_printf(lines, "max_age: %lld", (long long)d->sts.max_age);
    p->type = TLSRPT_POLICY_STS;
    p->domain = d->dest->route.nexthop;
    p->string = lines->data;
    p->mx = mx->data ? mx->data : "";
    return 1;
}

static void count(struct qm_delivery *d, const char *host,
                  const struct tlsrpt_failure *f)
{
    struct util_buf lines = UTIL_BUF_INIT, mx = UTIL_BUF_INIT;
    struct tlsrpt_policy p;

    if (d->q->tlsrpt && policy_of(d, host, &p, &lines, &mx))
        tlsrpt_table_count(d->q->tlsrpt->table, &p, f);
    util_buf_free(&lines);
    util_buf_free(&mx);
}

/* Decision 63: the client's reasons as section 4.3's result types. */
enum tlsrpt_result qmgr_tlsrpt_result(enum deliver_tls_fail kind)
{
    switch (kind) {
    case DELIVER_TLS_FAIL_STARTTLS:
        return TLSRPT_STARTTLS_NOT_SUPPORTED;
    case DELIVER_TLS_FAIL_NOT_TRUSTED:
        return TLSRPT_CERTIFICATE_NOT_TRUSTED;
    case DELIVER_TLS_FAIL_EXPIRED:
        return TLSRPT_CERTIFICATE_EXPIRED;
    case DELIVER_TLS_FAIL_HOST_MISMATCH:
        return TLSRPT_CERTIFICATE_HOST_MISMATCH;
    case DELIVER_TLS_FAIL_DANE:
        return TLSRPT_TLSA_INVALID;
    case DELIVER_TLS_FAIL_TLSA_LOOKUP:
        return TLSRPT_DNSSEC_INVALID;
    case DELIVER_TLS_FAIL_DANE_REQUIRED:
        return TLSRPT_DANE_REQUIRED;
    case DELIVER_TLS_FAIL_HANDSHAKE:
        break;
    }
    return TLSRPT_VALIDATION_FAILURE;
}

static int under_sts(const struct qm_delivery *d, const char *host)
{
    for (size_t i = 0; i < d->ntlsa; i++)
        if (strcasecmp(d->tlsa[i].host, host) == 0)
            return 0;
    return d->sts_mode != DELIVER_STS_NONE;
}

void qm_tlsrpt_record(struct qm_delivery *d, const struct deliver_result *res)
{
    size_t n = res->ntls_fail < DELIVER_TLS_FAILS_MAX ? res->ntls_fail
                                                      : DELIVER_TLS_FAILS_MAX;
    char host[256], addr[64], why[128];
    enum qm_sts_verdict v;

    if (d->q->tlsrpt == NULL ||
        (d->sts_mode == DELIVER_STS_NONE && !d->ntlsa && !qm_sts_own_mx(d)))
        return;
    for (size_t i = 0; i < n; i++) {
        const struct deliver_tls_failure *f = &res->tls_fail[i];
        struct tlsrpt_failure tf = {qmgr_tlsrpt_result(f->kind), f->host,
                                    f->addr, f->reason, f->local};

        count(d, f->host, &tf);
    }
    if (!res->hop_ok)
        return;
    v = qm_sts_verdict(d, res, host, sizeof(host), addr, sizeof(addr));
    if (res->tls.used && !res->tls.established)
        return; /* a cached session, counted when it was made */
    if (!res->tls.used && res->conn_use > 1)
        return; /* a cached plaintext connection, likewise */
    if (d->sts_mode == DELIVER_STS_TESTING && under_sts(d, host) &&
        v != QM_STS_OK) {
        struct tlsrpt_failure tf = {TLSRPT_VALIDATION_FAILURE, host, addr, "",
                                    ""};

        tf.result = v == QM_STS_NOT_IN_MX ? TLSRPT_STS_POLICY_INVALID
                    : v == QM_STS_NO_TLS  ? TLSRPT_STARTTLS_NOT_SUPPORTED
                    : v == QM_STS_NOT_TRUSTED
                        ? (res->tls.expired ? TLSRPT_CERTIFICATE_EXPIRED
                                            : TLSRPT_CERTIFICATE_NOT_TRUSTED)
                        : TLSRPT_CERTIFICATE_HOST_MISMATCH;
        snprintf(why, sizeof(why), "%s",
                 v == QM_STS_NOT_IN_MX ? "the MX host is not in the policy"
                 : v == QM_STS_NO_TLS  ? "no TLS"
                                       : "the certificate does not verify "
                                         "for the MX host");
        if (v == QM_STS_NOT_TRUSTED || v == QM_STS_HOST_MISMATCH)
            snprintf(why + strlen(why), sizeof(why) - strlen(why), " (%s)",
                     res->tls.word ? res->tls.word : "none");
        tf.reason = why;
        count(d, host, &tf);
        return;
    }
    if (res->tls.used)
        count(d, host, NULL);
}

void qm_tlsrpt_policy_failure(struct qm_delivery *d, enum tlsrpt_result result,
                              const char *host, const char *reason)
{
    struct tlsrpt_policy p = {TLSRPT_POLICY_STS, d->dest->route.nexthop, "",
                              ""};
    struct tlsrpt_failure f = {result, host ? host : "", "", reason, ""};
    struct util_buf lines = UTIL_BUF_INIT, mx = UTIL_BUF_INIT;

    if (d->q->tlsrpt == NULL)
        return;
    if (d->sts_mode != DELIVER_STS_NONE)
        policy_of(d, "", &p, &lines, &mx); /* the policy that refused */
    tlsrpt_table_count(d->q->tlsrpt->table, &p, &f);
    util_buf_free(&lines);
    util_buf_free(&mx);
}

void qm_tlsrpt_dane(struct qm_delivery *d, const struct deliver_dane *dane,
                    size_t n)
{
    if (d->q->tlsrpt == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        struct util_buf b = UTIL_BUF_INIT;
        struct qm_tlsa_host *h;

        if (dane[i].state == DELIVER_DANE_NONE)
            continue;
        d->tlsa = xrealloc(d->tlsa, (d->ntlsa + 1) * sizeof(*d->tlsa));
        h = &d->tlsa[d->ntlsa++];
        snprintf(h->host, sizeof(h->host), "%s", dane[i].host);
        for (size_t k = 0; k < dane[i].ntlsa; k++) {
            const struct tls_tlsa *t = &dane[i].tlsa[k];

            util_buf_printf(&b, "%s%u %u %u ", k ? "\n" : "", t->usage,
                            t->selector, t->mtype);
            for (size_t j = 0; j < t->len; j++)
                util_buf_printf(&b, "%02X", t->data[j]);
        }
        h->text = dane[i].state == DELIVER_DANE_RECORDS
                      ? (b.data ? util_buf_take(&b) : xstrdup(""))
                      : NULL;
        util_buf_free(&b);
    }
}

void qm_tlsrpt_delivery_free(struct qm_delivery *d)
{
    for (size_t i = 0; i < d->ntlsa; i++)
        free(d->tlsa[i].text);
    free(d->tlsa);
    d->tlsa = NULL;
    d->ntlsa = 0;
}
