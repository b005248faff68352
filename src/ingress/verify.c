/*
 * NAME
 *	verify 3 - reject_unverified_recipient and reject_unverified_sender
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	verify_check(struct smtpd_session *ss, int sender,
 *			const char *address, char *reply, size_t replylen)
 *	void	verify_cancel(struct smtpd_session *ss)
 *	void	verify_forget(struct smtpd_session *ss)
 * DESCRIPTION
 *	The reference's address verification at RCPT time: the address
 *	(the recipient, or with sender set the transaction's sender) is
 *	asked of the daemon's verification service (struct smtpd_ops:
 *	verify; in sluiced the queue manager's probes, qmgr/verify.c),
 *	which answers at once from its cache or after a probe, waiting at
 *	most address_verify_poll_count times address_verify_poll_delay.
 *
 *	verify_check() returns 0 for a deliverable address (and for the
 *	null sender, which is never verified), -1 with the reply for one
 *	that is not, or 1 when the answer is awaited: the session waits
 *	(reading nothing, no deadline running, every other session going
 *	on) and command.c evaluates the RCPT again with the answer, which
 *	is kept in the session for the rest of that RCPT. The replies, in
 *	the reference's words (smtpd_check.c):
 *
 *	undeliverable	"CODE X.1.1 <A>: Recipient address rejected:
 *			undeliverable address: TEXT", CODE the
 *			unverified_recipient_reject_code (450 by default)
 *	not known	"CODE 4.1.1 <A>: Recipient address rejected:
 *			unverified address: TEXT" with the
 *			unverified_recipient_defer_code (450): a probe that
 *			was deferred, or "Address verification in progress"
 *			when the wait ended first
 *
 *	and for the sender "Sender address rejected" with X.1.7 and the
 *	unverified_sender_*_code. X is the class of CODE. TEXT is what the
 *	probe found, e.g. "host mx[10.0.0.1] said: 550 5.1.1 <A>: no such
 *	user (in reply to RCPT TO command)".
 *
 *	verify_cancel() ends a wait under way (a session that ends, a
 *	client gone, a server that stops): the probe goes on for the
 *	cache, the session costs nothing more. verify_forget() drops the
 *	answers kept for the RCPT just decided.
 */

#include "ingress/smtpd_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void verify_forget(struct smtpd_session *ss)
{
    for (int i = 0; i < 2; i++) {
        free(ss->verified[i].address);
        ss->verified[i].address = NULL;
    }
}

void verify_cancel(struct smtpd_session *ss)
{
    if (ss->verify == NULL)
        return;
    if (ss->s != NULL && ss->s->ops.verify_cancel != NULL)
        ss->s->ops.verify_cancel(ss->s->ops.ctx, ss->verify);
    ss->verify = NULL;
}

/* The answer came: the RCPT is evaluated again (command.c). */
static void verify_done(void *conn, int status, const char *text)
{
    struct smtpd_session *ss = conn;
    int i =
        ss->verified[0].address != NULL && ss->verified[0].status < 0 ? 0 : 1;

    ss->verify = NULL;
    ss->verified[i].status = status;
    snprintf(ss->verified[i].text, sizeof(ss->verified[i].text), "%s", text);
    command_rcpt_resume(ss);
}

/* The reply for an answer that is not "deliverable". */
static void verify_reply(const struct smtpd_session *ss, int sender,
                         const char *address, int status, const char *text,
                         char *reply, size_t replylen)
{
    const struct smtpd_conf *cf = &ss->s->cf;
    long code = status == INGRESS_VERIFY_BOUNCE
                    ? (sender ? cf->unv_sender_reject : cf->unv_rcpt_reject)
                    : (sender ? cf->unv_sender_defer : cf->unv_rcpt_defer);

    snprintf(reply, replylen, "%ld %c.1.%c <%s>: %s address rejected: %s: %s",
             code, code >= 500 ? '5' : '4', sender ? '7' : '1', address,
             sender ? "Sender" : "Recipient",
             status == INGRESS_VERIFY_BOUNCE ? "undeliverable address"
                                             : "unverified address",
             text);
}

int verify_check(struct smtpd_session *ss, int sender, const char *address,
                 char *reply, size_t replylen)
{
    struct smtpd_server *s = ss->s;
    int i = sender ? 1 : 0, status = INGRESS_VERIFY_DEFER;
    char text[600] = "address verification is not available";

    if (sender && *address == 0)
        return 0; /* the null sender: nothing to verify */
    if (ss->verified[i].address == NULL ||
        strcmp(ss->verified[i].address, address) != 0) {
        free(ss->verified[i].address);
        ss->verified[i].address = xstrdup(address);
        ss->verified[i].status = -1; /* asked */
        if (s->ops.verify != NULL &&
            (ss->verify = s->ops.verify(s->ops.ctx, address, &status, text,
                                        sizeof(text), verify_done, ss)) != NULL)
            return 1;
        ss->verified[i].status = status;
        snprintf(ss->verified[i].text, sizeof(ss->verified[i].text), "%s",
                 text);
    }
    if (ss->verified[i].status == INGRESS_VERIFY_OK)
        return 0;
    verify_reply(ss, sender, address, ss->verified[i].status,
                 ss->verified[i].text, reply, replylen);
    return -1;
}
