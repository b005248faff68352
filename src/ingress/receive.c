/*
 * NAME
 *	receive 3 - what the SMTP server adds to a message it receives
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	void	receive_received(struct util_buf *b,
 *			const struct smtpd_session *ss, const char *hostname,
 *			time_t now)
 *	int	receive_head(struct smtpd_session *ss, struct util_buf *tmp,
 *			struct submit_input *in, char *why, size_t whylen)
 *	struct spool_msg *receive_message(struct smtpd_session *ss,
 *			const char *hostname, int add_missing, time_t now,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	receive_received() appends the Received: header field of a message
 *	the session is receiving (RFC 5321 4.4), in Postfix's layout, so
 *	that tools that read Postfix's headers read ours:
 *
 *	    Received: from HELO (NAME [ADDRESS])
 *		by HOSTNAME (sluice) with ESMTP id QUEUEID
 *		for <RECIPIENT>; DATE
 *
 *	"with SMTP" after HELO, "ESMTPS" or "SMTPS" in TLS, "ESMTPA" after
 *	AUTH, "ESMTPSA" for both (RFC 3848), "UTF8SMTP" (and UTF8SMTPS,
 *	UTF8SMTPA, UTF8SMTPSA) for a transaction with SMTPUTF8 (RFC 6531,
 *	3.7.3; the reference writes UTF8SMTP alone), with
 *	smtpd_sasl_authenticated_header the comment
 *	"(Authenticated sender: USER)" of a logged-in client before "by", and
 *	with smtpd_tls_received_header the TLS comment of starttls.c on
 *	the lines before "by"; the "for" clause only with one recipient
 *	(more would tell each recipient about the others), else "id
 *	QUEUEID;" and the date on a line of its own. The HELO name and the
 *	recipient are the client's words: bytes outside printable ASCII,
 *	and parentheses in the HELO name (which would end the comment),
 *	become "?". NAME is the client's forward-confirmed host name, or
 *	"unknown" (peer.c). ADDRESS is "IPv6:..." for IPv6 (RFC 5321 4.1.3).
 *
 *	receive_head() sets in to the start of the content, where its
 *	header section is: the content itself when it is in memory; for a
 *	staged message its first RECEIVE_HEAD_MAX bytes, read back into
 *	tmp (freed by the caller) and cut after their last line end. That
 *	is more than Postfix's header_size_limit (102400 bytes), beyond
 *	which Postfix itself reads no headers, and it is read once per
 *	message, on the one loop thread: the memory it takes is brief and
 *	not per session. It returns -1 with the reason when the file
 *	cannot be read.
 *
 *	receive_message() makes the spool message of the session's
 *	transaction: envelope (sender, ENVID, RET), recipients (NOTIFY,
 *	ORCPT) and the content read so far, Received: first; the content
 *	is taken from the session (its buffer is left empty, its staging
 *	file handed to the spool, which unlinks it once the message is
 *	stored). It returns NULL with the reason when a staging file
 *	cannot be read or changed. With
 *	add_missing (always_add_missing_headers), a message without From:,
 *	Date: or Message-ID: gets them as a locally submitted one does
 *	(submit_add_missing_headers(): the envelope sender, now, and
 *	"<QUEUEID@HOSTNAME>"); without it the message is stored as it
 *	came, which is what RFC 5321 asks of a relay (6.4: headers are the
 *	originator's business). A staged message gets its missing headers
 *	written into the file (staging_insert()), when its header section
 *	ends within RECEIVE_HEAD_MAX bytes; one longer is stored as it
 *	came. Then, for the clients whose mail is signed, the DKIM
 *	signature goes on top (receive_sign(), sign.c), over the message
 *	as it will be stored; it returns NULL with the reason when signing
 *	failed.
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
    util_buf_printf(b, "Received: from %s (%s [%s])\r\n", helo, ss->name,
                    ss->addr_text);
    starttls_received(b, ss);
    if (ss->sasl_username != NULL && ss->s != NULL && ss->s->cf.auth_header) {
        char user[SASL_FIELD_MAX + 1];

        safe_copy(user, sizeof(user), ss->sasl_username, "()");
        util_buf_printf(b, "\t(Authenticated sender: %s)\r\n", user);
    }
    /* RFC 3848: ESMTPS, ESMTPA, ESMTPSA; RFC 6531 3.7.3: UTF8SMTP... */
    util_buf_printf(b, "\tby %s (sluice) with %s%s%s id %s", hostname,
                    ss->smtputf8 ? "UTF8SMTP"
                    : ss->esmtp  ? "ESMTP"
                                 : "SMTP",
                    ss->tls ? "S" : "", ss->sasl_username ? "A" : "", ss->id);
    if (ss->nrcpt == 1) {
        safe_copy(rcpt, sizeof(rcpt), ss->rcpt[0].address, "<>");
        util_buf_printf(b, "\r\n\tfor <%s>; %s\r\n", rcpt, date);
    } else {
        util_buf_printf(b, ";\r\n\t%s\r\n", date);
    }
}

int receive_head(struct smtpd_session *ss, struct util_buf *tmp,
                 struct submit_input *in, char *why, size_t whylen)
{
    size_t end;

    if (ss->staging == NULL) {
        util_buf_add(&ss->msg, "", 0); /* a string, even when empty */
        *in = (struct submit_input){ss->msg.data, ss->msg.len, ss->msg.size};
        return 0;
    }
    if (staging_head(ss->staging, tmp, RECEIVE_HEAD_MAX, why, whylen) < 0)
        return -1;
    /* a head shorter than the file ends after its last whole line */
    for (end = tmp->len; tmp->len < staging_size(ss->staging) && end > 0;
         end--) {
        if (tmp->data[end - 1] == '\n') {
            tmp->len = end;
            tmp->data[end] = 0;
            break;
        }
    }
    *in = (struct submit_input){tmp->data, tmp->len, tmp->size};
    return 0;
}

/*
 * A staged message's missing headers go into its file, where the
 * in-memory message would get them: at the end of its header section,
 * found in the head read back. A header section that does not end
 * within the head is left as it came.
 */
static int staged_add_missing(struct smtpd_session *ss, const char *hostname,
                              time_t now, char *why, size_t whylen)
{
    struct util_buf head = UTIL_BUF_INIT;
    struct submit_input in;
    size_t at, body, before;
    int rc = 0;

    if (receive_head(ss, &head, &in, why, whylen) < 0) {
        util_buf_free(&head);
        return -1;
    }
    at = submit_header_end(&in, &body);
    before = in.len;
    if ((body < in.len || in.len == staging_size(ss->staging)) &&
        submit_add_missing_headers(&in, ss->sender, "", hostname, now,
                                   ss->id) == 0 &&
        in.len > before)
        rc = staging_insert(ss->staging, at, in.data + at, in.len - before, why,
                            whylen);
    free(in.data); /* head's memory, perhaps moved by the insert */
    return rc;
}

static void memory_add_missing(struct smtpd_session *ss, const char *hostname,
                               time_t now)
{
    struct submit_input in = {ss->msg.data, ss->msg.len, ss->msg.size};

    if (in.data == NULL)
        return;
    /* fails only on a bad hostname: the message then stays as it is */
    (void)submit_add_missing_headers(&in, ss->sender, "", hostname, now,
                                     ss->id);
    ss->msg.data = in.data;
    ss->msg.len = in.len;
    ss->msg.size = in.size;
}

struct spool_msg *receive_message(struct smtpd_session *ss,
                                  const char *hostname, int add_missing,
                                  time_t now, char *why, size_t whylen)
{
    struct spool_msg *m;

    if (add_missing && ss->staging != NULL &&
        staged_add_missing(ss, hostname, now, why, whylen) < 0)
        return NULL;
    if (add_missing && ss->staging == NULL)
        memory_add_missing(ss, hostname, now);
    if (receive_sign(ss, now, why, whylen) < 0)
        return NULL;
    m = spool_msg_new();
    snprintf(m->id, sizeof(m->id), "%s", ss->id);
    m->sender = xstrdup(ss->sender);
    m->envid = ss->envid;
    ss->envid = NULL;
    m->ret = (enum spool_ret)ss->ret;
    m->smtputf8 = ss->smtputf8;
    m->body = ss->msg.data;
    m->size = ss->msg.len;
    memset(&ss->msg, 0, sizeof(ss->msg));
    if (ss->staging != NULL) {
        staging_hand_over(ss->staging, m); /* frees m->body */
        ss->staging = NULL;
    }
    for (size_t i = 0; i < ss->nrcpt; i++)
        if (spool_msg_add_rcpt(m, ss->rcpt[i].address, NULL, ss->rcpt[i].notify,
                               ss->rcpt[i].orcpt) < 0)
            ingress_panic("cannot add recipient %s", ss->rcpt[i].address);
    return m;
}
