/*
 * NAME
 *	command 3 - the SMTP server's commands: the verbs and their order
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	void	command_run(struct smtpd_session *ss, const char *line,
 *			size_t len)
 * DESCRIPTION
 *	command_run() parses one command line of session ss (without its
 *	line end) with smtp_command_parse(), hands it to its verb's
 *	function (the table verbs[]) and counts it for the "disconnect
 *	from" line.
 *
 *	The order of commands: EHLO or HELO first (then MAIL, ETRN), MAIL,
 *	one or more RCPT, then DATA or BDAT chunks; EHLO, HELO and RSET
 *	end a transaction. A command out of order is "503 5.5.1"; a
 *	syntax error the parser's 501 or 555; a command that does not
 *	exist "500 5.5.2", one that sluice does not implement (EXPN, TURN;
 *	STARTTLS without a certificate) "502 5.5.1". STARTTLS is
 *	starttls.c's, AUTH auth.c's (EHLO offers it as auth_offered()
 *	says); with smtpd_tls_security_level = encrypt, MAIL in
 *	clear text is "530 5.7.0" (starttls_required()); on the submission
 *	listener MAIL before AUTH is "530 5.7.0 Authentication required". Each NOOP, VRFY, ETRN or RSET beyond
 *	smtpd_junk_command_limit counts as an error; a message accepted
 *	starts the count again. Relay permission (mynetworks) is looked up
 *	at each RCPT and ETRN, so that a reload applies to open sessions.
 *
 *	SMTPUTF8 (RFC 6531), with smtputf8_enable: EHLO offers it, MAIL
 *	may declare it, and only then may the sender and the recipients
 *	of the transaction be UTF-8 ("553 5.6.7 Must declare SMTPUTF8 to
 *	send unicode address" otherwise, the reference's strict reply);
 *	MAIL with SMTPUTF8 where it is not offered is "555 5.5.4"; a
 *	command line that is not well-formed UTF-8 is "500 5.5.2 Error:
 *	bad UTF-8 syntax", as in the reference. The message keeps the
 *	declaration (the spool's smtputf8) for its delivery.
 *
 *	MAIL checks the size the client announces against
 *	message_size_limit (552 5.3.4) and asks the server about storage
 *	and flow (452 4.3.1, or a delayed answer). RCPT counts recipients
 *	against smtpd_recipient_limit (452 4.5.3: the client sends the
 *	rest in another transaction) and applies smtpd_sender_restrictions
 *	then smtpd_relay_restrictions (restrict.c): by default a client
 *	outside mynetworks that has not logged in may send only to
 *	relay_domains, and never with a local part that routes on ("%",
 *	"!", "@"), or gets "554 5.7.1 <address>: Relay access denied"; a
 *	bare "postmaster" is always accepted (RFC 5321 4.5.1). RCPT after the first chunk is
 *	"503 5.5.1" (RFC 3030 2: the recipients come first). DATA and the
 *	first BDAT begin the content (content.c); a BDAT whose size cannot
 *	be parsed ends the session after its 501, since where the commands
 *	resume is unknown.
 *
 *	ETRN (after HELO, outside a transaction) flushes the node's
 *	deferred mail: "domain", "@domain" (with its subdomains), a domain
 *	as smtp_domain_valid() has it (501 otherwise); a client
 *	outside mynetworks only for relay_domains (459 4.7.1); "#queue" is
 *	not supported (458).
 *
 *	Log lines: "NOQUEUE: reject: RCPT from CLIENT: REPLY; from=<S>
 *	to=<R> proto=ESMTP helo=<H>", "NOQUEUE: reject: MAIL from CLIENT:
 *	452 4.3.1 REASON; from=<S>".
 */

#include "ingress/smtpd_impl.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static void cmd_hello(struct smtpd_session *ss, struct smtp_command *cmd,
                      int esmtp)
{
    struct smtpd_server *s = ss->s;
    char size[40] = "SIZE", text[SESSION_REPLY_MAX];
    size_t n;

    session_transaction_reset(ss);
    free(ss->helo);
    n = strlen(cmd->arg);
    ss->helo = xstrndup(cmd->arg, n < SMTPD_HELO_MAX ? n : SMTPD_HELO_MAX);
    for (char *c = ss->helo; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            *c = '?'; /* it goes into log lines */
    ss->esmtp = esmtp;
    if (!esmtp) {
        session_reply(ss, "250 %s", s->cf.hostname);
        return;
    }
    if (s->cf.size_limit > 0)
        snprintf(size, sizeof(size), "SIZE %llu",
                 (unsigned long long)s->cf.size_limit);
    snprintf(text, sizeof(text),
             "250-%s\r\n250-PIPELINING\r\n250-%s\r\n%s%s%s"
             "250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250-DSN\r\n"
             "%s250 CHUNKING\r\n",
             s->cf.hostname, size, s->ops.flush ? "250-ETRN\r\n" : "",
             starttls_offered(ss) ? "250-STARTTLS\r\n" : "",
             auth_offered(ss) ? "250-AUTH " SASL_MECHANISMS "\r\n" : "",
             s->cf.smtputf8 ? "250-SMTPUTF8\r\n" : "");
    session_reply_raw(ss, text);
    ss->last_code = 250;
}

static void cmd_ehlo(struct smtpd_session *ss, struct smtp_command *cmd)
{
    cmd_hello(ss, cmd, 1);
}

static void cmd_helo(struct smtpd_session *ss, struct smtp_command *cmd)
{
    cmd_hello(ss, cmd, 0);
}

/*
 * RFC 6531: SMTPUTF8 on MAIL only where EHLO offered it (555), and an
 * address in UTF-8 only in a transaction that declared it (553 5.6.7,
 * the reference's reply with strict_smtputf8).
 */
static int utf8_refused(struct smtpd_session *ss, int declared,
                        const char *path)
{
    if (declared && !ss->s->cf.smtputf8) {
        session_reply(ss, "555 5.5.4 Unsupported parameter SMTPUTF8");
        return 1;
    }
    if (!declared && !smtp_ascii(path, strlen(path))) {
        session_reply(ss, "553 5.6.7 Must declare SMTPUTF8 to send unicode "
                          "address");
        return 1;
    }
    return 0;
}

static void cmd_mail(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_server *s = ss->s;
    char why[300];
    long delay;

    if (ss->helo == NULL) {
        session_reply(ss, "503 5.5.1 Error: send HELO/EHLO first");
        return;
    }
    if (starttls_required(ss))
        return;
    if (s->cf.auth_required && ss->sasl_username == NULL) {
        session_reply(ss, "530 5.7.0 Authentication required");
        return;
    }
    if (ss->in_mail) {
        session_reply(ss, "503 5.5.1 Error: nested MAIL command");
        return;
    }
    if (utf8_refused(ss, cmd->smtputf8, cmd->path))
        return;
    if (s->cf.size_limit > 0 && cmd->has_size && cmd->size > s->cf.size_limit) {
        session_reply(ss, "552 5.3.4 Message size exceeds fixed limit");
        return;
    }
    if (smtpd_storage_check(s, cmd->has_size ? cmd->size : 0, why,
                            sizeof(why)) < 0 ||
        (delay = smtpd_flow_delay(s, why, sizeof(why))) < 0) {
        session_reply(ss, "452 4.3.1 %s", why);
        smtpd_log(s, "NOQUEUE: reject: MAIL from %s: 452 4.3.1 %s; from=<%s>",
                  ss->client, why, cmd->path);
        return;
    }
    ss->in_mail = 1;
    ss->sender = xstrdup(cmd->path);
    ss->envid = cmd->envid;
    cmd->envid = NULL;
    ss->ret = cmd->ret;
    ss->smtputf8 = cmd->smtputf8;
    ss->declared_size = cmd->size;
    if (delay == 0) {
        session_reply(ss, "250 2.1.0 Ok");
        return;
    }
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};

    session_wait_begin(ss);
    evtimer_add(ss->delay_ev, &tv);
}

/*
 * The restrictions on the held RCPT: its answer, or a wait for an
 * address verification, after which command_rcpt_resume() comes back.
 */
static int rcpt_restrict(struct smtpd_session *ss, char *reply, size_t len)
{
    const char *rcpt = ss->waiting_rcpt.address;
    int rc;

    if ((rc = restrict_sender(ss, rcpt, reply, len)) != 0 ||
        (rc = restrict_relay(ss, rcpt, reply, len)) != 0)
        return rc;
    return restrict_recipient(ss, rcpt, reply, len);
}

static void rcpt_decide(struct smtpd_session *ss)
{
    char reply[SESSION_REPLY_MAX];
    int rc = rcpt_restrict(ss, reply, sizeof(reply));

    if (rc > 0) {
        session_wait_begin(ss); /* reading waits; others go on */
        return;
    }
    if (rc < 0) {
        session_reply(ss, "%s", reply);
        smtpd_log(ss->s,
                  "NOQUEUE: reject: RCPT from %s: %s; from=<%s> to=<%s> "
                  "proto=%s helo=<%s>",
                  ss->client, reply, ss->sender, ss->waiting_rcpt.address,
                  ss->esmtp ? "ESMTP" : "SMTP", ss->helo);
        free(ss->waiting_rcpt.address);
        free(ss->waiting_rcpt.orcpt);
    } else {
        if (ss->nrcpt == ss->rcpt_size) {
            ss->rcpt_size = ss->rcpt_size ? 2 * ss->rcpt_size : 8;
            ss->rcpt = xrealloc(ss->rcpt, ss->rcpt_size * sizeof(*ss->rcpt));
        }
        ss->rcpt[ss->nrcpt++] = ss->waiting_rcpt;
        session_reply(ss, "250 2.1.5 Ok");
    }
    memset(&ss->waiting_rcpt, 0, sizeof(ss->waiting_rcpt));
    verify_forget(ss);
}

void command_rcpt_resume(struct smtpd_session *ss)
{
    rcpt_decide(ss);
    if (ss->state == SESSION_WAIT && ss->verify == NULL)
        session_wait_end(ss); /* and what the client sent meanwhile */
}

static void cmd_rcpt(struct smtpd_session *ss, struct smtp_command *cmd)
{

    if (!ss->in_mail) {
        session_reply(ss, "503 5.5.1 Error: need MAIL command");
        return;
    }
    if (ss->chunking) { /* RFC 3030 2: recipients come before content */
        session_reply(ss, "503 5.5.1 Error: RCPT after BDAT");
        return;
    }
    if (utf8_refused(ss, ss->smtputf8, cmd->path))
        return;
    if ((long)ss->nrcpt >= ss->s->cf.recipient_limit) {
        session_reply(ss, "452 4.5.3 Error: too many recipients");
        return;
    }
    ss->waiting_rcpt.address = xstrdup(cmd->path);
    ss->waiting_rcpt.notify = cmd->notify;
    ss->waiting_rcpt.orcpt = cmd->orcpt;
    cmd->orcpt = NULL;
    rcpt_decide(ss);
}

/* Can a message's content start now? */
static int content_allowed(struct smtpd_session *ss, char *why, size_t len)
{
    if (!ss->in_mail)
        snprintf(why, len, "503 5.5.1 Error: need MAIL command");
    else if (ss->nrcpt == 0)
        snprintf(why, len, "503 5.5.1 Error: need RCPT command");
    else
        return 1;
    return 0;
}

static void cmd_data(struct smtpd_session *ss, struct smtp_command *cmd)
{
    char why[160];

    (void)cmd;
    if (!content_allowed(ss, why, sizeof(why))) {
        session_reply(ss, "%s", why);
        return;
    }
    if (ss->chunking) {
        session_reply(ss, "503 5.5.1 Error: DATA after BDAT");
        return;
    }
    content_begin(ss, SMTP_DATA_DOT);
    ss->state = SESSION_DATA;
    session_reply(ss, "354 End data with <CR><LF>.<CR><LF>");
}

static void cmd_bdat(struct smtpd_session *ss, struct smtp_command *cmd)
{
    ss->chunk_left = cmd->chunk;
    ss->chunk_last = cmd->last;
    ss->chunk_skip =
        !content_allowed(ss, ss->chunk_reply, sizeof(ss->chunk_reply));
    if (!ss->chunk_skip && !ss->chunking) {
        content_begin(ss, SMTP_DATA_RAW);
        ss->chunking = 1;
    }
    ss->state = SESSION_BDAT;
}

static void cmd_rset(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    session_transaction_reset(ss);
    session_reply(ss, "250 2.0.0 Ok");
}

static void cmd_noop(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    session_reply(ss, "250 2.0.0 Ok");
}

static void cmd_quit(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    session_reply_final(ss, "221 2.0.0 Bye");
}

static void cmd_vrfy(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    session_reply(ss, "252 2.0.0 Cannot VRFY user, but will accept message and "
                      "attempt delivery");
}

static void cmd_help(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    session_reply(ss,
                  "214 2.0.0 Commands: EHLO HELO MAIL RCPT DATA BDAT RSET NOOP "
                  "QUIT VRFY HELP ETRN");
}

static void flushed(void *conn, long messages, const char *why)
{
    struct smtpd_session *ss = conn;

    if (session_callback_orphaned(ss))
        return;
    if (why != NULL)
        session_reply(ss, "458 4.3.0 Unable to queue messages for node %s",
                      ss->etrn);
    else if (messages == 0)
        session_reply(ss, "251 2.0.0 OK, no messages waiting for node %s",
                      ss->etrn);
    else
        session_reply(ss,
                      "253 2.0.0 OK, %ld pending messages for node %s started",
                      messages, ss->etrn);
    session_wait_end(ss);
}

static void cmd_etrn(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_server *s = ss->s;
    const char *node = cmd->arg;
    int subdomains = node[0] == '@'; /* RFC 1985's "@example.com" */
    struct smtp_node n;

    if (ss->helo == NULL) {
        session_reply(ss, "503 5.5.1 Error: send HELO/EHLO first");
    } else if (ss->in_mail) {
        session_reply(ss, "503 5.5.1 Error: MAIL transaction in progress");
    } else if (s->ops.flush == NULL) {
        session_reply(ss, "502 5.5.1 Error: command not implemented");
    } else if (node[0] == '#') {
        session_reply(ss,
                      "458 4.3.0 Unable to queue messages for node %s: named "
                      "queues are not supported",
                      node);
    } else if (smtp_node_set(&n, node + subdomains, subdomains) < 0) {
        session_reply(ss, "501 5.5.4 Syntax: ETRN domain");
    } else if (!smtpd_client_trusted(ss) &&
               !smtpd_relay_domain(s, node + subdomains)) {
        session_reply(
            ss, "459 4.7.1 <%s>: Node not allowed: not in relay_domains", node);
    } else {
        smtp_node_format(&n, ss->etrn, sizeof(ss->etrn));
        session_wait_begin(ss);
        ss->pending = 1;
        s->ops.flush(s->ops.ctx, &n, flushed, ss);
    }
}

/* The verbs, in enum smtp_verb's order. */
static const struct {
    const char *name;
    void (*fn)(struct smtpd_session *, struct smtp_command *);
    enum session_count count;
} verbs[] = {
    [SMTP_CMD_EHLO] = {"EHLO", cmd_ehlo, COUNT_EHLO},
    [SMTP_CMD_HELO] = {"HELO", cmd_helo, COUNT_HELO},
    [SMTP_CMD_MAIL] = {"MAIL", cmd_mail, COUNT_MAIL},
    [SMTP_CMD_RCPT] = {"RCPT", cmd_rcpt, COUNT_RCPT},
    [SMTP_CMD_DATA] = {"DATA", cmd_data, COUNT_DATA},
    [SMTP_CMD_BDAT] = {"BDAT", cmd_bdat, COUNT_BDAT},
    [SMTP_CMD_RSET] = {"RSET", cmd_rset, COUNT_RSET},
    [SMTP_CMD_NOOP] = {"NOOP", cmd_noop, COUNT_NOOP},
    [SMTP_CMD_QUIT] = {"QUIT", cmd_quit, COUNT_QUIT},
    [SMTP_CMD_VRFY] = {"VRFY", cmd_vrfy, COUNT_VRFY},
    [SMTP_CMD_HELP] = {"HELP", cmd_help, COUNT_HELP},
    [SMTP_CMD_ETRN] = {"ETRN", cmd_etrn, COUNT_ETRN},
    [SMTP_CMD_STARTTLS] = {"STARTTLS", starttls_command, COUNT_STARTTLS},
    [SMTP_CMD_AUTH] = {"AUTH", auth_command, COUNT_AUTH},
};

/* Commands RFC 5321 and its predecessors name that sluice leaves out. */
static int unimplemented(const char *line)
{
    static const char *const names[] = {"EXPN", "TURN", "ATRN",
                                        "SEND", "SOML", "SAML"};
    size_t n = strcspn(line, " ");

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n == 4 && strncasecmp(line, names[i], 4) == 0)
            return 1;
    return 0;
}

void command_run(struct smtpd_session *ss, const char *line, size_t len)
{
    struct smtp_command cmd;
    char why[SESSION_REPLY_MAX];
    enum session_count c = COUNT_UNKNOWN;
    int rc = smtp_command_parse(line, len, &cmd, why, sizeof(why));

    if (ss->s->cf.smtputf8 && cmd.verb != SMTP_CMD_BDAT &&
        !smtp_utf8_valid(line, len)) { /* BDAT's size decides below */
        session_reply(ss, "500 5.5.2 Error: bad UTF-8 syntax");
        ss->last_verb = "UNKNOWN";
    } else if (rc == SMTP_PARSE_UNKNOWN && unimplemented(line)) {
        session_reply(ss, "502 5.5.1 Error: command not implemented");
        ss->last_verb = "UNIMPLEMENTED";
    } else if (rc != 0 && cmd.verb == SMTP_CMD_BDAT) {
        /* a chunk of unknown size: where commands resume is unknown */
        session_reply_final(ss, "%d %s", rc, why);
        ss->last_verb = "BDAT";
        c = COUNT_BDAT;
    } else if (rc != 0) {
        session_reply(ss, "%d %s", rc, why);
        if (cmd.verb != SMTP_CMD_UNKNOWN) {
            c = verbs[cmd.verb].count;
            ss->last_verb = verbs[cmd.verb].name;
        } else {
            ss->last_verb = "UNKNOWN";
        }
    } else {
        c = verbs[cmd.verb].count;
        ss->last_verb = verbs[cmd.verb].name;
        verbs[cmd.verb].fn(ss, &cmd);
    }
    /* NOOP, VRFY, ETRN and RSET beyond the junk limit count as errors */
    if ((c == COUNT_NOOP || c == COUNT_VRFY || c == COUNT_ETRN ||
         c == COUNT_RSET) &&
        ++ss->junk > ss->s->cf.junk_limit)
        ss->errors++;
    smtp_command_free(&cmd);
    ss->counts[c][1]++;
    /* AUTH counts as done when its 235 goes out (auth.c) */
    ss->counts[c][0] +=
        ss->last_code < 400 && ss->state != SESSION_BDAT && c != COUNT_AUTH;
}
