/*
 * NAME
 *	sign 3 - the DKIM signature of mail coming in, once, at acceptance
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	ingress_sign(const struct dkim_keys *k, struct spool_msg *m,
 *			time_t now, ingress_log_fn *log, void *ctx,
 *			char *why, size_t whylen)
 *
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	receive_sign(struct smtpd_session *ss, time_t now, char *why,
 *			size_t whylen)
 * DESCRIPTION
 *	Mail is signed where it is accepted, before its spool commit, so
 *	that every delivery attempt sends the same signed bytes and none
 *	pays for signing again (decision 81). Which mail is signed: what
 *	local programs submit (the submission socket and the maildrop:
 *	the daemon calls ingress_sign()), and what SMTP clients in
 *	dkim_internal_hosts send (receive_sign(), by default $mynetworks:
 *	OpenDKIM's InternalHosts); mail relayed in from outside is never
 *	signed, since sluice does not vouch for it. A message is signed
 *	when the address of its From: field has an entry in
 *	dkim_signing_table (dkim/table.c); the DKIM-Signature field goes
 *	at the very top of the message.
 *
 *	ingress_sign() signs message m, whose body is in memory (m->body,
 *	m->size: the stored form), and logs what it did through log (with
 *	ctx; NULL: nothing logged), in the lines below, with m->id. It
 *	returns 1 when it was signed, 0 when it is not to be signed (no
 *	From: address, no signing table match), -1 when signing failed,
 *	with the reason in why (the caller then
 *	refuses the message for now: mail the operator wants signed is not
 *	sent unsigned, as OpenDKIM's On-InternalError default tempfails).
 *
 *	receive_sign() signs the message an SMTP session has received when
 *	its client is one whose mail is signed, and logs what it did. A
 *	message in memory is signed in place. A staged one is hashed
 *	without being read into memory: its head (RECEIVE_HEAD_MAX bytes,
 *	receive_head()) gives the header section, the rest of the file is
 *	read back a piece at a time into the body hash (staging_read()),
 *	and the field is written at the top of the file
 *	(staging_insert()): the file is read once more and moved once, on
 *	the loop thread, as always_add_missing_headers already moves it.
 *	A header section longer than the head is not signed. It returns 0 (signed or not), or -1 with the reason when
 *	signing failed or the file could not be read or written.
 *
 *	Log lines: "ID: DKIM-Signature field added (s=SELECTOR,
 *	d=DOMAIN)", as OpenDKIM writes it, one per signature; "ID: no DKIM signature:
 *	REASON" for mail that would be signed but has no key (REASON "no
 *	signing table match for 'ADDRESS'", "no single From: address to
 *	choose a key by", or "header section longer than N bytes").
 */

#include "ingress/smtpd_impl.h"

#include "dkim/dkim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Put field before the len bytes of *data (allocated size *size). */
static void prepend(char **data, size_t *len, size_t *size,
                    const struct util_buf *field)
{
    if (*len + field->len + 1 > *size) {
        *size = *len + field->len + 1;
        *data = xrealloc(*data, *size);
    }
    memmove(*data + field->len, *data, *len);
    memcpy(*data, field->data, field->len);
    *len += field->len;
    (*data)[*len] = 0;
}

/* The log lines of a message signed, one per signature, or not. */
static void log_signed(ingress_log_fn *log, void *ctx, const char *id,
                       const struct dkim_sign *s)
{
    char line[600];

    for (size_t i = 0; log != NULL && i < dkim_sign_count(s); i++) {
        snprintf(line, sizeof(line),
                 "%s: DKIM-Signature field added (s=%s, d=%s)", id,
                 dkim_sign_selector(s, i), dkim_sign_domain(s, i));
        log(ctx, line);
    }
}

static void log_unsigned(ingress_log_fn *log, void *ctx, const char *id,
                         const char *why)
{
    char line[700];

    if (log == NULL)
        return;
    snprintf(line, sizeof(line), "%s: no DKIM signature: %s", id, why);
    log(ctx, line);
}

int ingress_sign(const struct dkim_keys *k, struct spool_msg *m, time_t now,
                 ingress_log_fn *log, void *ctx, char *why, size_t whylen)
{
    struct util_buf field = UTIL_BUF_INIT;
    size_t len = m->body ? (size_t)m->size : 0, size = len;
    struct dkim_sign *s;
    char note[512];

    if ((s = dkim_sign_begin(k, m->body ? m->body : "", len, 1, note,
                             sizeof(note))) == NULL) {
        log_unsigned(log, ctx, m->id, note); /* an empty message too */
        return 0;
    }
    if (dkim_sign_end(s, now, &field, why, whylen) < 0) {
        dkim_sign_free(s);
        util_buf_free(&field);
        return -1;
    }
    prepend(&m->body, &len, &size, &field);
    m->size = len;
    log_signed(log, ctx, m->id, s);
    dkim_sign_free(s);
    util_buf_free(&field);
    return 1;
}

/* ------------------------------------------------------- SMTP sessions */

/* The SMTP server's log, as an ingress_log_fn. */
static void server_log(void *ctx, const char *line)
{
    smtpd_log(ctx, "%s", line);
}

static int session_signs(const struct smtpd_session *ss)
{
    const struct smtpd_conf *cf = &ss->s->cf;

    /* Authenticated clients send their own mail, wherever they are. */
    return cf->dkim != NULL &&
           (ss->sasl_username != NULL ||
            (cf->dkim_hosts != NULL &&
             ingress_nets_match(cf->dkim_hosts,
                                (const struct sockaddr *)&ss->addr)));
}

static void body_feed(void *ctx, const char *p, size_t n)
{
    dkim_sign_body(ctx, p, n);
}

/* The field for the staged message; NULL, why set, when not signed. */
static struct dkim_sign *staged_begin(struct smtpd_session *ss, int *failed,
                                      char *why, size_t whylen)
{
    struct util_buf head = UTIL_BUF_INIT;
    struct submit_input in;
    struct dkim_sign *s;

    *failed = 0;
    if (receive_head(ss, &head, &in, why, whylen) < 0) {
        util_buf_free(&head);
        *failed = 1;
        return NULL;
    }
    s = dkim_sign_begin(ss->s->cf.dkim, in.data, in.len,
                        in.len == staging_size(ss->staging), why, whylen);
    if (s != NULL && in.len < staging_size(ss->staging) &&
        staging_read(ss->staging, in.len, body_feed, s, why, whylen) < 0) {
        dkim_sign_free(s);
        s = NULL;
        *failed = 1;
    }
    free(in.data);
    return s;
}

static int staged_sign(struct smtpd_session *ss, time_t now, char *why,
                       size_t whylen)
{
    struct util_buf field = UTIL_BUF_INIT;
    struct dkim_sign *s;
    int failed, rc = -1;

    if ((s = staged_begin(ss, &failed, why, whylen)) == NULL) {
        if (!failed)
            log_unsigned(server_log, ss->s, ss->id, why);
        return failed ? -1 : 0;
    }
    if (dkim_sign_end(s, now, &field, why, whylen) == 0 &&
        staging_insert(ss->staging, 0, field.data, field.len, why, whylen) ==
            0) {
        log_signed(server_log, ss->s, ss->id, s);
        rc = 0;
    }
    dkim_sign_free(s);
    util_buf_free(&field);
    return rc;
}

static int memory_sign(struct smtpd_session *ss, time_t now, char *why,
                       size_t whylen)
{
    struct util_buf field = UTIL_BUF_INIT;
    struct dkim_sign *s;
    int rc = -1;

    s = dkim_sign_begin(ss->s->cf.dkim, ss->msg.data ? ss->msg.data : "",
                        ss->msg.len, 1, why, whylen);
    if (s == NULL) {
        log_unsigned(server_log, ss->s, ss->id, why);
        return 0;
    }
    if (dkim_sign_end(s, now, &field, why, whylen) == 0) {
        prepend(&ss->msg.data, &ss->msg.len, &ss->msg.size, &field);
        log_signed(server_log, ss->s, ss->id, s);
        rc = 0;
    }
    dkim_sign_free(s);
    util_buf_free(&field);
    return rc;
}

int receive_sign(struct smtpd_session *ss, time_t now, char *why, size_t whylen)
{
    char problem[512];
    int rc;

    if (!session_signs(ss))
        return 0;
    if (ss->staging != NULL)
        rc = staged_sign(ss, now, problem, sizeof(problem));
    else
        rc = memory_sign(ss, now, problem, sizeof(problem));
    if (rc < 0)
        snprintf(why, whylen, "DKIM signing failed: %s", problem);
    return rc;
}
