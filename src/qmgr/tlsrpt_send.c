/*
 * NAME
 *	tlsrpt_send 3 - TLS reports made and sent (RFC 8460, 3 and 5)
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_tlsrpt_report(struct qm_tlsrpt *r,
 *			const struct tlsrpt_table *t, const char *domain,
 *			int64_t start, int64_t end)
 *	void	qm_tlsrpt_send_stop(struct qm_tlsrpt *r)
 * DESCRIPTION
 *	qm_tlsrpt_report() makes the report of one policy domain of the
 *	period start..end from t (JSON, at once: t may go when it
 *	returns), looks up the TXT record of _smtp._tls.DOMAIN with dns/
 *	(for every domain counted, with a policy or under
 *	no-policy-found: only the record says whether it wants reports)
 *	and, with a valid one (tlsrpt_txt_select()), sends the report to
 *	each rua: to a mailto: address as a message submitted through the
 *	queue (qmgr_submit(): from the null sender, NOTIFY=NEVER, so that
 *	a report never causes a bounce), to an https: address as a POST
 *	of the gzip'd report through http/, its host looked up with dns/,
 *	tried POST_TRIES times, 1 and 2 minutes apart (at most the
 *	period; section 5.4: reports are best-effort), a 2xx counting as
 *	delivered. The report-id is the period's start, a serial and the
 *	host name.
 *
 *	qm_tlsrpt_send_stop() abandons the POSTs under way (without
 *	their answers) and marks r closing: reports that wait for a DNS
 *	answer or a submission end when it comes (the resolver answers
 *	every lookup when it is freed), and the last of them frees r
 *	(qm_tlsrpt_free()); r is freed at once when none waits.
 */

#include "qmgr/qmgr_impl.h"

#include "http/http.h"
#include "smtp/smtp.h"
#include "tlsrpt/tlsrpt.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POST_TRIES   3
#define POST_TIMEOUT 30000 /* ms */

struct qm_report {
    struct qm_tlsrpt *r;
    char domain[256];
    char id[320];
    char *json;
    int64_t start, end;
    int pending; /* the TXT lookup and POSTs under way */
    int quiet;   /* only no-policy-found: no record needs no log line */
    struct qm_report *next;
};

struct qm_post {
    struct qm_report *rep;
    char *uri;
    char host[256]; /* the URL's host, looked up with dns/ */
    unsigned port;
    int lookup; /* a lookup is under way: its answer frees */
    char *body;
    size_t len;
    int tries;
    struct event *retry;
    struct qm_post *next;
};

static void report_done(struct qm_report *rep)
{
    struct qm_tlsrpt *r = rep->r;
    struct qm_report **pp;

    if (--rep->pending > 0)
        return;
    for (pp = &r->reports; *pp != rep; pp = &(*pp)->next)
        ;
    *pp = rep->next;
    free(rep->json);
    free(rep);
    if (r->closing && r->reports == NULL)
        qm_tlsrpt_free(r);
}

static void post_free(struct qm_post *p)
{
    struct qm_tlsrpt *r = p->rep->r;
    struct qm_post **pp;

    for (pp = &r->posts; *pp != p; pp = &(*pp)->next)
        ;
    *pp = p->next;
    if (p->retry)
        event_free(p->retry);
    free(p->uri);
    free(p->body);
    report_done(p->rep);
    free(p);
}

static void post_start(struct qm_post *p);

static void post_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    post_start(arg);
}

/* A try failed: again later, or give up (section 5.4, best-effort). */
static void post_failed(struct qm_post *p, const char *why)
{
    struct qm_report *rep = p->rep;
    struct qm_tlsrpt *r = rep->r;
    int64_t delay = 60 * p->tries;
    struct timeval tv;

    qm_log(r->q, QMGR_LOG_WARNING, "tlsrpt: %s: report %s to %s: failed (%s)%s",
           rep->domain, rep->id, p->uri, why,
           p->tries >= POST_TRIES ? ", given up" : "");
    if (p->tries >= POST_TRIES) {
        post_free(p);
        return;
    }
    if (delay > r->period)
        delay = r->period; /* short test periods retry sooner */
    tv.tv_sec = delay;
    tv.tv_usec = 0;
    if (p->retry == NULL)
        p->retry = evtimer_new(r->q->base, post_retry_cb, p);
    evtimer_add(p->retry, &tv);
}

static void post_answer(void *ctx, const struct http_response *res)
{
    struct qm_post *p = ctx;
    char why[300];

    if (res->status == 0 && res->code >= 200 && res->code < 300) {
        qm_log(p->rep->r->q, QMGR_LOG_INFO,
               "tlsrpt: %s: report %s to %s: posted (HTTP %ld)", p->rep->domain,
               p->rep->id, p->uri, res->code);
        post_free(p);
        return;
    }
    if (res->status == 0)
        snprintf(why, sizeof(why), "HTTP status %ld", res->code);
    else
        snprintf(why, sizeof(why), "%s", res->error);
    post_failed(p, why);
}

/* The request, with the addresses dns/ found for the host, if any. */
static void post_send(struct qm_post *p, const char *resolve)
{
    struct qm_tlsrpt *r = p->rep->r;
    struct http_request req = {0};
    char why[300];

    req.url = p->uri;
    req.body = p->body;
    req.body_len = p->len;
    req.content_type = "application/tlsrpt+gzip";
    req.ca_file = r->ca_file;
    req.timeout_ms = POST_TIMEOUT;
    req.max_bytes = 65536; /* the answer's body is not read */
    req.resolve = resolve;
    if (http_request_start(r->http, &req, post_answer, p, why, sizeof(why)) < 0)
        post_failed(p, why);
}

/* "https://HOST[:PORT]/..." into host and port; 0, or -1. */
static int url_host(const char *uri, char *host, size_t len, unsigned *port)
{
    const char *h = uri + strlen("https://"), *end;
    size_t n;

    *port = 443;
    if (*h == '[') {
        /* an IPv6 literal: nothing to look up */
        return -1;
    }
    n = strcspn(h, ":/?#");
    if (n == 0 || n >= len)
        return -1;
    memcpy(host, h, n);
    host[n] = 0;
    end = h + n;
    if (*end == ':')
        *port = (unsigned)strtoul(end + 1, NULL, 10);
    return 0;
}

static void post_resolved(void *ctx, struct dns_result *res)
{
    struct qm_post *p = ctx;
    struct util_buf b = UTIL_BUF_INIT;
    char line[600];

    p->lookup = 0;
    if (p->rep->r->closing) {
        /* the resolver goes with the daemon: so does the POST */
        dns_result_free(res);
        post_free(p);
        return;
    }
    qm_addr_list(res, &b);
    if (b.len == 0) {
        snprintf(line, sizeof(line), "%s: %s", p->host,
                 res->why && res->why[0] ? res->why : "no address");
        post_failed(p, line);
    } else {
        snprintf(line, sizeof(line), "%s:%u:%s", p->host, p->port, b.data);
        post_send(p, line);
    }
    util_buf_free(&b);
    dns_result_free(res);
}

/*
 * A try: the host's addresses from dns/ (dns_servers, as for every
 * other question of the daemon), then the POST to them. An address in
 * the URL needs no lookup.
 */
static void post_start(struct qm_post *p)
{
    struct in6_addr a6;
    struct in_addr a4;

    p->tries++;
    if (url_host(p->uri, p->host, sizeof(p->host), &p->port) < 0 ||
        inet_pton(AF_INET, p->host, &a4) == 1 ||
        inet_pton(AF_INET6, p->host, &a6) == 1) {
        post_send(p, NULL);
        return;
    }
    p->lookup = 1;
    if (dns_lookup_host(p->rep->r->q->dns, p->host, post_resolved, p) < 0) {
        p->lookup = 0;
        post_failed(p, "the resolver is shutting down");
    }
}

static void send_https(struct qm_report *rep, const char *uri)
{
    struct qm_tlsrpt *r = rep->r;
    struct qm_post *p;

    if (r->http == NULL) {
        qm_log(r->q, QMGR_LOG_WARNING,
               "tlsrpt: %s: report %s to %s: failed (no HTTP client)",
               rep->domain, rep->id, uri);
        return;
    }
    p = xcalloc(1, sizeof(*p));
    p->rep = rep;
    p->uri = xstrdup(uri);
    if ((p->body = tlsrpt_gzip(rep->json, strlen(rep->json), &p->len)) ==
        NULL) {
        qm_log(r->q, QMGR_LOG_WARNING,
               "tlsrpt: %s: report %s to %s: failed (gzip)", rep->domain,
               rep->id, uri);
        free(p->uri);
        free(p);
        return;
    }
    rep->pending++;
    p->next = r->posts;
    r->posts = p;
    post_start(p);
}

static void mail_queued(void *ctx, int status, const char *id, const char *why)
{
    struct qm_report *rep = ctx;

    if (status == 0)
        qm_log(rep->r->q, QMGR_LOG_INFO, "tlsrpt: %s: report %s: queued as %s",
               rep->domain, rep->id, id);
    else
        qm_log(rep->r->q, QMGR_LOG_WARNING,
               "tlsrpt: %s: report %s: failed (%s)", rep->domain, rep->id, why);
    report_done(rep);
}

static void send_mail(struct qm_report *rep, const char *uri)
{
    struct qm_tlsrpt *r = rep->r;
    struct qmgr *q = r->q;
    const char *to = uri + strlen("mailto:");
    struct spool_msg *m = spool_msg_new();
    char date[SMTP_DATE_MAX], origin[700];
    struct tlsrpt_mail mail = {r->contact, to,          rep->domain,
                               r->org,     q->hostname, rep->id,
                               date,       rep->start,  rep->end};

    smtp_date(date, sizeof(date), time(NULL));
    m->sender = xstrdup("");
    m->arrival = spool_now();
    m->body = tlsrpt_mail_format(&mail, rep->json, &m->size);
    if (m->body == NULL || !smtp_address_valid(to)) {
        qm_log(q, QMGR_LOG_WARNING, "tlsrpt: %s: report %s to %s: failed (%s)",
               rep->domain, rep->id, uri, m->body ? "bad address" : "gzip");
        spool_msg_free(m);
        return;
    }
    /* a report is never the subject of a notice */
    spool_msg_add_rcpt(m, to, NULL, SPOOL_NOTIFY_NEVER, NULL);
    snprintf(origin, sizeof(origin), "tlsrpt=%s report-id=%s to=<%s>",
             rep->domain, rep->id, to);
    rep->pending++;
    qmgr_submit(q, m, origin, mail_queued, rep);
}

static void report_txt(void *ctx, struct dns_txt_result *res)
{
    struct qm_report *rep = ctx;
    struct qm_tlsrpt *r = rep->r;
    struct tlsrpt_rua rua;

    if (r->closing || r->q->closing) {
        /* the resolver is going away with the daemon */
    } else if (res->status == DNS_PERMFAIL && rep->quiet) {
        /* a domain without a policy rarely asks for reports either */
    } else if (res->status != DNS_OK) {
        qm_log(r->q, QMGR_LOG_INFO, "tlsrpt: %s: no report: %s", rep->domain,
               res->why && res->why[0] ? res->why : "no _smtp._tls record");
    } else if (tlsrpt_txt_select((const char *const *)res->txt, res->n, &rua) <
               0) {
        qm_log(r->q, QMGR_LOG_INFO,
               "tlsrpt: %s: no report: no valid TXT record at _smtp._tls.%s",
               rep->domain, rep->domain);
    } else {
        for (size_t i = 0; i < rua.n; i++) {
            if (strncmp(rua.uri[i], "mailto:", 7) == 0)
                send_mail(rep, rua.uri[i]);
            else
                send_https(rep, rua.uri[i]);
        }
        tlsrpt_rua_clear(&rua);
    }
    dns_txt_result_free(res);
    report_done(rep); /* the lookup's share */
}

void qm_tlsrpt_report(struct qm_tlsrpt *r, const struct tlsrpt_table *t,
                      const char *domain, int64_t start, int64_t end)
{
    struct qm_report *rep = xcalloc(1, sizeof(*rep));
    struct tlsrpt_report_info info;
    char name[300];

    rep->r = r;
    snprintf(rep->domain, sizeof(rep->domain), "%s", domain);
    snprintf(rep->id, sizeof(rep->id), "%lld.%u.%lld@%s", (long long)start,
             ++r->serial, (long long)(util_clock_wall_us() % 1000000),
             r->q->hostname);
    rep->start = start;
    rep->end = end;
    info = (struct tlsrpt_report_info){r->org, r->contact, rep->id, start, end};
    rep->json = tlsrpt_report_json(t, domain, &info);
    rep->quiet = !tlsrpt_table_has_policy(t, domain);
    rep->pending = 1;
    rep->next = r->reports;
    r->reports = rep;
    snprintf(name, sizeof(name), "_smtp._tls.%s", domain);
    if (rep->json == NULL ||
        dns_lookup_txt(r->q->dns, name, report_txt, rep) < 0)
        report_done(rep);
}

void qm_tlsrpt_send_stop(struct qm_tlsrpt *r)
{
    /* POSTs end with the client, without their done */
    http_client_free(r->http);
    r->http = NULL;
    for (struct qm_post *p = r->posts, *next; p != NULL; p = next) {
        next = p->next;
        if (!p->lookup)
            post_free(p); /* one that waits for dns/ ends with it */
    }
    r->closing = 1;
    if (r->reports == NULL)
        qm_tlsrpt_free(r);
}
