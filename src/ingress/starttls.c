/*
 * NAME
 *	starttls 3 - the SMTP server's STARTTLS and implicit TLS
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	starttls_offered(const struct smtpd_session *ss)
 *	int	starttls_required(struct smtpd_session *ss)
 *	void	starttls_command(struct smtpd_session *ss,
 *			struct smtp_command *cmd)
 *	void	starttls_established(struct smtpd_session *ss)
 *	void	starttls_failed(struct smtpd_session *ss, const char *why)
 *	void	starttls_received(struct util_buf *b,
 *			const struct smtpd_session *ss)
 * DESCRIPTION
 *	RFC 3207 on the server's side. starttls_offered() tells EHLO
 *	whether to announce STARTTLS: the server has a certificate,
 *	smtpd_tls_security_level is not none, and the session is not in
 *	TLS yet. starttls_required() answers "530 5.7.0 Must issue a
 *	STARTTLS command first" and returns 1 when the level is encrypt
 *	and the session is in clear text (MAIL asks).
 *
 *	starttls_command() is the STARTTLS verb: "503 5.5.1 Error: TLS
 *	already active" in TLS (Postfix answers 554 there; 503 is the
 *	bad-sequence code), "502 5.5.1 Error: command not implemented"
 *	when STARTTLS is not offered; the parser has already answered a
 *	STARTTLS with an argument "501 5.5.4 Syntax: STARTTLS". Otherwise
 *	"220 2.0.0 Ready to start TLS", and then whatever the client sent
 *	after the STARTTLS line is thrown away, unread, with Postfix's log
 *	line "improper command pipelining after STARTTLS from CLIENT:
 *	TEXT": those bytes came in clear text and anyone on the path could
 *	have put them there (the command injection of CVE-2011-0411, which
 *	would have them run as if they came through TLS). The session
 *	stops reading, and once the 220 is out its connection is wrapped
 *	in TLS (session.c, session_tls_begin()). The handshake has
 *	smtpd_starttls_timeout (deadline.c).
 *
 *	starttls_established() is called once the handshake is done: it
 *	logs "Anonymous TLS connection established from CLIENT: SUMMARY"
 *	(Postfix's words: the client showed no certificate, none was
 *	asked for), and forgets what the client said before, as RFC 3207
 *	4.2 asks: the HELO/EHLO name, the mail transaction. The client must
 *	send EHLO again; MAIL before it is "503 5.5.1 Error: send HELO/EHLO
 *	first". A session with implicit TLS (smtpd_tls_wrapper_listen) gets
 *	its greeting now. starttls_failed() logs a handshake that failed or
 *	took too long, as Postfix does: "SSL_accept error from CLIENT:
 *	REASON", then "lost connection after STARTTLS from CLIENT" (or
 *	"after CONNECT", with implicit TLS); the session then ends,
 *	nothing else does.
 *
 *	starttls_received() adds to the Received: header field of a message
 *	received in TLS, with smtpd_tls_received_header, what Postfix adds:
 *
 *	    (using TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)
 *	     key-exchange X25519 server-signature RSA-PSS (2048 bits)
 *	     server-digest SHA256)
 *	    (No client certificate requested)
 *
 *	(the second and third lines are one, folded here); without TLS or
 *	the parameter, nothing.
 */

#include "ingress/smtpd_impl.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <stdlib.h>

#define PIPELINED_LOG_MAX 100 /* bytes of discarded input in the log */

int starttls_offered(const struct smtpd_session *ss)
{
    return ss->s != NULL && ss->s->cf.tls != NULL &&
           ss->s->cf.tls_level != STARTTLS_NONE && ss->tls == NULL &&
           !ss->wrapped;
}

int starttls_required(struct smtpd_session *ss)
{
    if (ss->s == NULL || ss->s->cf.tls_level != STARTTLS_ENCRYPT ||
        ss->tls != NULL)
        return 0;
    session_reply(ss, "530 5.7.0 Must issue a STARTTLS command first");
    return 1;
}

/* Input that came after STARTTLS: logged as Postfix's printable() has
 * it, then dropped. */
static void discard_pipelined(struct smtpd_session *ss)
{
    struct evbuffer *in = bufferevent_get_input(ss->bev);
    size_t n = evbuffer_get_length(in);
    char text[PIPELINED_LOG_MAX + 1];
    ev_ssize_t got;

    if (n == 0)
        return;
    got = evbuffer_copyout(in, text, PIPELINED_LOG_MAX);
    for (ev_ssize_t i = 0; i < got; i++)
        if ((unsigned char)text[i] < ' ' || (unsigned char)text[i] >= 0x7f)
            text[i] = '?';
    text[got > 0 ? got : 0] = 0;
    smtpd_log(ss->s, "improper command pipelining after STARTTLS from %s: %s",
              ss->client, text);
    evbuffer_drain(in, n);
}

void starttls_command(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    if (ss->tls != NULL || ss->wrapped) {
        session_reply(ss, "503 5.5.1 Error: TLS already active");
        return;
    }
    if (!starttls_offered(ss)) {
        session_reply(ss, "502 5.5.1 Error: command not implemented");
        return;
    }
    session_reply(ss, "220 2.0.0 Ready to start TLS");
    discard_pipelined(ss);
    ss->skip_line = 0;
    session_tls_begin(ss);
}

void starttls_established(struct smtpd_session *ss)
{
    struct tls_summary *t = xmalloc(sizeof(*t));

    tls_session_summary(ss->bev, t);
    ss->tls = t;
    smtpd_log(ss->s, "Anonymous TLS connection established from %s: %s%s%s",
              ss->client, t->cipher, t->details[0] ? " " : "", t->details);
    /* RFC 3207 4.2: nothing the client said in clear text counts */
    session_transaction_reset(ss);
    free(ss->helo);
    ss->helo = NULL;
    ss->esmtp = 0;
    auth_session_end(ss);
    ss->state = SESSION_COMMAND;
    if (ss->wrapped)
        session_greet(ss);
    deadline_start(ss);
}

void starttls_failed(struct smtpd_session *ss, const char *why)
{
    smtpd_log(ss->s, "SSL_accept error from %s: %s", ss->client, why);
    smtpd_log(ss->s, "lost connection after %s from %s", ss->last_verb,
              ss->client);
}

void starttls_received(struct util_buf *b, const struct smtpd_session *ss)
{
    if (ss->tls == NULL || ss->s == NULL || !ss->s->cf.tls_received_header)
        return;
    if (ss->tls->details[0])
        util_buf_printf(b, "\t(using %s\r\n\t %s)\r\n", ss->tls->cipher,
                        ss->tls->details);
    else
        util_buf_printf(b, "\t(using %s)\r\n", ss->tls->cipher);
    util_buf_puts(b, "\t(No client certificate requested)\r\n");
}
