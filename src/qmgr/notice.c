/*
 * NAME
 *	notice 3 - delivery status notifications to the sender (RFC 3464)
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	char	*qmgr_notice_format(const struct qmgr_notice_params *p,
 *			enum qmgr_notice kind, const struct spool_msg *m,
 *			const struct qmgr_notice_rcpt *r, size_t n, size_t *len)
 * DESCRIPTION
 *	qmgr_notice_format() writes the notice about message m (envelope
 *	and body) that reports on its recipients r[0..n-1]: that delivery
 *	failed (QMGR_NOTICE_FAILED: bounced, or given up at expiry), that
 *	it is delayed (QMGR_NOTICE_DELAYED) or that it succeeded
 *	(QMGR_NOTICE_DELIVERED). It returns the whole message in the
 *	spool's stored form (CRLF line ends, not dot-stuffed), malloc'd and
 *	NUL-terminated, its length in *len. The caller sends it from the
 *	null sender to m's sender; a message from the null sender gets no
 *	notice at all (a notice is never answered with a notice).
 *
 *	The notice is a multipart/report (RFC 6522) of report-type
 *	delivery-status with three parts: a text for people listing each
 *	recipient with the reason; a message/delivery-status part (RFC
 *	3464) with the per-message fields in the RFC's order
 *	(Original-Envelope-Id when the message had an ENVID,
 *	Reporting-MTA, Arrival-Date, then the queue id and sender as
 *	X-Sluice- extensions) and, per recipient, Original-Recipient (its
 *	ORCPT), Final-Recipient, Action, Status, and Remote-MTA and
 *	Diagnostic-Code when a server said why, X-Sluice-TLS (the
 *	attempt's "TLSv1.3:CIPHER:WORD", as the log's tls= field, when it
 *	went over TLS; the text part says it too, under the recipient's
 *	line), Will-Retry-Until for a
 *	delay; and the message
 *	itself. A failure returns the whole message (message/rfc822)
 *	unless the sender asked for headers only (RET=HDRS) or the message
 *	is larger than p->size_limit (bounce_size_limit); then, and for
 *	delay and success notices, only its header section
 *	(text/rfc822-headers). A returned part with 8-bit bytes is marked
 *	8bit, and so is the notice.
 *
 *	Each recipient's reason is the spool's: the enhanced status code,
 *	a space, and the text the log shows. The Status field is that code
 *	(or 5.0.0, 4.0.0, 2.0.0 when it has none). When the text is a
 *	server's reply in the form the SMTP client writes ("host NAME[ADDR]
 *	said: REPLY (in reply to COMMAND command)"), NAME becomes the
 *	Remote-MTA and REPLY the smtp Diagnostic-Code; another reply with a
 *	code (a success's "250 2.0.0 Ok") is the smtp Diagnostic-Code as it
 *	is; any other text is an X-Sluice diagnostic.
 *
 *	The boundary is made of the queue id, the time and the host name,
 *	and made longer until it appears nowhere in the returned part.
 */

#define _GNU_SOURCE /* memmem */

#include "qmgr/qmgr.h"
#include "util/util.h"

#include "ingress/ingress.h"
#include "smtp/smtp.h"
#include "spool/spool.h"
#include "util/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DIAG_MAX 900 /* bytes of a reason in one field: lines stay short */

static void addf(struct util_buf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/*
 * util_buf_printf(), except that one formatted piece is cut at 2047
 * bytes, as notices have always been written: a recipient's reason of
 * any length gives a line of bounded length.
 */
static void addf(struct util_buf *t, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    util_buf_add(t, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

static void date_of(char *buf, size_t len, int64_t usec)
{
    if (smtp_date(buf, len, (time_t)(usec / 1000000)) < 0)
        snprintf(buf, len, "unknown");
}

/* What a recipient's reason says, taken apart for the DSN fields. */
struct reason {
    char status[16];
    char mta[256];   /* "" when no server said it */
    char diag[1024]; /* the reply, or the text */
    int smtp;        /* diag is a server's reply */
};

static int enhanced_code(const char *p, size_t len)
{
    return smtp_enhanced_code(p, len) == len && len < 16;
}

static void reason_split(const struct qmgr_notice_rcpt *r,
                         enum qmgr_notice kind, struct reason *out)
{
    const char *text = r->reason ? r->reason : "";
    const char *sp = strchr(text, ' ');
    const char *said, *tail;
    size_t n;

    memset(out, 0, sizeof(*out));
    if (sp && enhanced_code(text, (size_t)(sp - text))) {
        snprintf(out->status, sizeof(out->status), "%.*s", (int)(sp - text),
                 text);
        text = sp + 1;
    } else {
        snprintf(out->status, sizeof(out->status), "%s",
                 kind == QMGR_NOTICE_FAILED    ? "5.0.0"
                 : kind == QMGR_NOTICE_DELAYED ? "4.0.0"
                                               : "2.0.0");
    }
    said = strstr(text, " said: ");
    if (strncmp(text, "host ", 5) == 0 && said != NULL) {
        n = strcspn(text + 5, "[ ");
        snprintf(out->mta, sizeof(out->mta), "%.*s", (int)n, text + 5);
        said += strlen(" said: ");
        tail = strstr(said, " (in reply to ");
        n = tail ? (size_t)(tail - said) : strlen(said);
        snprintf(out->diag, sizeof(out->diag), "%.*s",
                 (int)(n < DIAG_MAX ? n : DIAG_MAX), said);
        out->smtp = 1;
    } else {
        snprintf(out->diag, sizeof(out->diag), "%.*s", DIAG_MAX, text);
        out->smtp = r->code > 0;
    }
}

static const char *subject_of(enum qmgr_notice kind)
{
    return kind == QMGR_NOTICE_FAILED ? "Returned mail: could not be delivered"
           : kind == QMGR_NOTICE_DELAYED ? "Delayed mail: not delivered yet"
                                         : "Delivery report: message delivered";
}

/* "    (over TLSv1.3, TLS_AES_256_GCM_SHA384, certificate Verified)" */
static void tls_line(struct util_buf *t, const char *tls)
{
    const char *c1 = strchr(tls, ':');
    const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

    if (c2 == NULL) {
        addf(t, "    (over TLS: %s)\r\n", tls);
        return;
    }
    addf(t, "    (over %.*s, %.*s, certificate %s)\r\n", (int)(c1 - tls), tls,
         (int)(c2 - c1 - 1), c1 + 1, c2 + 1);
}

static void human_part(struct util_buf *t, const struct qmgr_notice_params *p,
                       enum qmgr_notice kind, const struct qmgr_notice_rcpt *r,
                       size_t n)
{
    char until[SMTP_DATE_MAX];

    addf(t, "This is the mail system at %s.\r\n\r\n", p->hostname);
    switch (kind) {
    case QMGR_NOTICE_FAILED:
        addf(t, "%s",
             "Your message could not be delivered to the recipients below,\r\n"
             "and the mail system has given up on them. The reason follows\r\n"
             "each address; your message, or its header, is attached.\r\n");
        break;
    case QMGR_NOTICE_DELAYED:
        date_of(until, sizeof(until), p->retry_until);
        addf(t,
             "This is a warning only: your message has not yet been\r\n"
             "delivered to the recipients below. The mail system keeps\r\n"
             "trying until %s;\r\n"
             "there is no need to send it again.\r\n",
             until);
        break;
    case QMGR_NOTICE_DELIVERED:
        addf(t, "%s",
             "Your message was delivered to the recipients below, or\r\n"
             "handed to a mail system that does not report deliveries,\r\n"
             "as you asked.\r\n");
        break;
    }
    util_buf_add(t, "\r\n", 2);
    for (size_t i = 0; i < n; i++) {
        struct reason why;

        reason_split(&r[i], kind, &why);
        addf(t, "<%s>: %s\r\n", r[i].address,
             r[i].reason && strchr(r[i].reason, ' ')
                 ? strchr(r[i].reason, ' ') + 1
                 : why.diag);
        if (r[i].tls != NULL)
            tls_line(t, r[i].tls);
    }
}

static void status_part(struct util_buf *t, const struct qmgr_notice_params *p,
                        enum qmgr_notice kind, const struct spool_msg *m,
                        const struct qmgr_notice_rcpt *r, size_t n)
{
    char date[SMTP_DATE_MAX];

    /* In RFC 3464's order (section 2.2), extension fields last. */
    if (m->envid != NULL)
        addf(t, "Original-Envelope-Id: %s\r\n", m->envid);
    addf(t, "Reporting-MTA: dns; %s\r\n", p->hostname);
    date_of(date, sizeof(date), m->arrival);
    addf(t, "Arrival-Date: %s\r\n", date);
    addf(t, "X-Sluice-Queue-ID: %s\r\n", m->id);
    addf(t, "X-Sluice-Sender: rfc822; %s\r\n", m->sender);
    for (size_t i = 0; i < n; i++) {
        struct reason why;

        reason_split(&r[i], kind, &why);
        /* RFC 3464 section 2.3's order: Original-Recipient first. */
        util_buf_add(t, "\r\n", 2);
        if (r[i].orcpt != NULL)
            addf(t, "Original-Recipient: %s\r\n", r[i].orcpt);
        addf(t, "Final-Recipient: rfc822; %s\r\n", r[i].address);
        addf(t, "Action: %s\r\n",
             kind == QMGR_NOTICE_FAILED    ? "failed"
             : kind == QMGR_NOTICE_DELAYED ? "delayed"
             : r[i].relayed                ? "relayed"
                                           : "delivered");
        addf(t, "Status: %s\r\n", why.status);
        if (why.mta[0])
            addf(t, "Remote-MTA: dns; %s\r\n", why.mta);
        if (why.diag[0])
            addf(t, "Diagnostic-Code: %s; %s\r\n",
                 why.smtp ? "smtp" : "X-Sluice", why.diag);
        if (r[i].tls != NULL)
            addf(t, "X-Sluice-TLS: %s\r\n", r[i].tls);
        if (kind == QMGR_NOTICE_DELAYED && p->retry_until > 0) {
            date_of(date, sizeof(date), p->retry_until);
            addf(t, "Will-Retry-Until: %s\r\n", date);
        }
    }
}

static int has_8bit(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] >= 0x80)
            return 1;
    return 0;
}

/* A boundary that occurs nowhere in the returned text. */
static void boundary_for(char *buf, size_t len,
                         const struct qmgr_notice_params *p,
                         const struct spool_msg *m, const char *ret,
                         size_t retlen)
{
    snprintf(buf, len, "%s.%lld/%s", m->id, (long long)(p->now / 1000000),
             p->hostname);
    while (retlen > 0 && memmem(ret, retlen, buf, strlen(buf)) != NULL &&
           strlen(buf) + 2 < len)
        strcat(buf, "=_");
}

char *qmgr_notice_format(const struct qmgr_notice_params *p,
                         enum qmgr_notice kind, const struct spool_msg *m,
                         const struct qmgr_notice_rcpt *r, size_t n,
                         size_t *len)
{
    struct submit_input in = {m->body, m->size, m->size};
    struct util_buf t = UTIL_BUF_INIT;
    char date[SMTP_DATE_MAX], boundary[600];
    size_t body, head = m->body ? submit_header_end(&in, &body) : 0;
    int full = kind == QMGR_NOTICE_FAILED && m->ret != SPOOL_RET_HDRS &&
               (p->size_limit == 0 || m->size <= p->size_limit);
    size_t retlen = full ? m->size : head;
    int eight = has_8bit(m->body ? m->body : "", retlen);

    boundary_for(boundary, sizeof(boundary), p, m, m->body, retlen);
    date_of(date, sizeof(date), p->now);
    addf(&t, "Date: %s\r\n", date);
    addf(&t, "From: Mail Delivery System <MAILER-DAEMON@%s>\r\n", p->hostname);
    addf(&t, "To: <%s>\r\n", m->sender);
    addf(&t, "Subject: %s\r\n", subject_of(kind));
    addf(&t, "Message-ID: <%s.%lld.notice@%s>\r\n", m->id,
         (long long)(p->now / 1000000), p->hostname);
    util_buf_puts(&t, "Auto-Submitted: auto-replied\r\nMIME-Version: 1.0\r\n");
    addf(&t,
         "Content-Type: multipart/report; report-type=delivery-status;\r\n"
         "\tboundary=\"%s\"\r\n",
         boundary);
    if (eight)
        addf(&t, "Content-Transfer-Encoding: 8bit\r\n");
    addf(&t,
         "\r\nThis is a MIME-encapsulated delivery status "
         "notification.\r\n\r\n--%s\r\n",
         boundary);
    addf(&t, "Content-Description: Notification\r\n"
             "Content-Type: text/plain; charset=us-ascii\r\n\r\n");
    human_part(&t, p, kind, r, n);
    addf(&t, "\r\n--%s\r\n", boundary);
    addf(&t, "Content-Description: Delivery report\r\n"
             "Content-Type: message/delivery-status\r\n\r\n");
    status_part(&t, p, kind, m, r, n);
    addf(&t, "\r\n--%s\r\n", boundary);
    addf(&t, "Content-Description: %s\r\nContent-Type: %s\r\n",
         full ? "Undelivered Message" : "Message Headers",
         full ? "message/rfc822" : "text/rfc822-headers");
    if (eight)
        addf(&t, "Content-Transfer-Encoding: 8bit\r\n");
    util_buf_add(&t, "\r\n", 2);
    if (retlen > 0)
        util_buf_add(&t, m->body, retlen);
    if (retlen > 0 && (retlen < 2 || memcmp(m->body + retlen - 2, "\r\n", 2)))
        util_buf_add(&t, "\r\n", 2);
    addf(&t, "\r\n--%s--\r\n", boundary);
    *len = t.len;
    return util_buf_take(&t);
}
