/*
 * NAME
 *	receive 3 - what the SMTP server adds to a message it receives
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	void	receive_received(struct util_buf *b,
 *			const struct smtpd_session *ss, const char *hostname,
 *			time_t now)
 *	struct spool_msg *receive_message(struct smtpd_session *ss,
 *			const char *hostname, int add_missing, time_t now)
 * DESCRIPTION
 *	receive_received() appends the Received: header field of a message
 *	the session is receiving (RFC 5321 4.4), in Postfix's layout, so
 *	that tools that read Postfix's headers read ours:
 *
 *	    Received: from HELO (unknown [ADDRESS])
 *		by HOSTNAME (sluice) with ESMTP id QUEUEID
 *		for <RECIPIENT>; DATE
 *
 *	"with SMTP" after HELO; the "for" clause only with one recipient
 *	(more would tell each recipient about the others), else "id
 *	QUEUEID;" and the date on a line of its own. The HELO name and the
 *	recipient are the client's words: bytes outside printable ASCII,
 *	and parentheses in the HELO name (which would end the comment),
 *	become "?". ADDRESS is "IPv6:..." for IPv6 (RFC 5321 4.1.3).
 *
 *	receive_message() makes the spool message of the session's
 *	transaction: envelope (sender, ENVID, RET), recipients (NOTIFY,
 *	ORCPT) and the content read so far, Received: first; the content
 *	is taken from the session (its buffer is left empty). With
 *	add_missing (always_add_missing_headers), a message without From:,
 *	Date: or Message-ID: gets them as a locally submitted one does
 *	(submit_add_missing_headers(): the envelope sender, now, and
 *	"<QUEUEID@HOSTNAME>"); without it the message is stored as it
 *	came, which is what RFC 5321 asks of a relay (6.4: headers are the
 *	originator's business).
 */

#include "ingress/smtpd_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The client's text, made safe for a header field. */
static void safe_copy(char *out, size_t len, const char *in, const char *bad)
{
    size_t i;

    for (i = 0; in[i] && i + 1 < len; i++)
        out[i] = (unsigned char)in[i] <= ' ' || (unsigned char)in[i] >= 0x7f ||
                         strchr(bad, in[i])
                     ? '?'
                     : in[i];
    out[i] = 0;
}

void receive_received(struct util_buf *b, const struct smtpd_session *ss,
                      const char *hostname, time_t now)
{
    char helo[SMTPD_HELO_MAX + 1], rcpt[SMTP_ADDRESS_MAX + 1];
    char date[SMTP_DATE_MAX];

    safe_copy(helo, sizeof(helo), ss->helo ? ss->helo : "", "()");
    if (smtp_date(date, sizeof(date), now) < 0)
        snprintf(date, sizeof(date), "Thu, 1 Jan 1970 00:00:00 +0000");
    util_buf_printf(b,
                    "Received: from %s (unknown [%s])\r\n"
                    "\tby %s (sluice) with %s id %s",
                    helo, ss->addr_text, hostname, ss->esmtp ? "ESMTP" : "SMTP",
                    ss->id);
    if (ss->nrcpt == 1) {
        safe_copy(rcpt, sizeof(rcpt), ss->rcpt[0].address, "<>");
        util_buf_printf(b, "\r\n\tfor <%s>; %s\r\n", rcpt, date);
    } else {
        util_buf_printf(b, ";\r\n\t%s\r\n", date);
    }
}

struct spool_msg *receive_message(struct smtpd_session *ss,
                                  const char *hostname, int add_missing,
                                  time_t now)
{
    struct spool_msg *m = spool_msg_new();

    if (add_missing) {
        struct submit_input in = {ss->msg.data, ss->msg.len, ss->msg.size};

        /* fails only on a bad hostname: the message then stays as it is */
        (void)submit_add_missing_headers(&in, ss->sender, "", hostname, now,
                                         ss->id);
        ss->msg.data = in.data;
        ss->msg.len = in.len;
        ss->msg.size = in.size;
    }
    snprintf(m->id, sizeof(m->id), "%s", ss->id);
    m->sender = xstrdup(ss->sender);
    m->envid = ss->envid;
    ss->envid = NULL;
    m->ret = (enum spool_ret)ss->ret;
    m->body = ss->msg.data;
    m->size = ss->msg.len;
    memset(&ss->msg, 0, sizeof(ss->msg));
    for (size_t i = 0; i < ss->nrcpt; i++)
        if (spool_msg_add_rcpt(m, ss->rcpt[i].address, NULL, ss->rcpt[i].notify,
                               ss->rcpt[i].orcpt) < 0)
            ingress_panic("cannot add recipient %s", ss->rcpt[i].address);
    return m;
}
