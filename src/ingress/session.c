/*
 * NAME
 *	session 3 - one SMTP server session, as a state machine
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	struct smtpd_session *session_create(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen)
 *	void	session_shutdown(struct smtpd_session *ss)
 *	int	session_busy(const struct smtpd_session *ss)
 *	void	session_orphan(struct smtpd_session *ss)
 * DESCRIPTION
 *	A session reads what its client sends and answers it, RFC 5321
 *	with the extensions PIPELINING (RFC 2920), SIZE (1870), 8BITMIME
 *	(6152), ENHANCEDSTATUSCODES (2034, 3463), DSN (3461), CHUNKING
 *	(3030) and ETRN (1985). It is in one of these states:
 *
 *	COMMAND	reading command lines, each parsed by smtp_command_parse()
 *		and handed to its verb's function (the table verbs[]);
 *	DATA	after "354", the content, through smtp_data_feed() in DOT
 *		mode, up to the CRLF.CRLF;
 *	BDAT	a chunk's announced bytes, in RAW mode;
 *	WAIT	nothing is read: a message is being stored, an ETRN flushed,
 *		or a MAIL answer held back for in_flow_delay;
 *	CLOSING	the last reply is going out, then the session is freed.
 *
 *	Pipelining comes for free: every complete command in the input is
 *	answered in order, and the answers leave together when the loop
 *	writes; while a session waits, what the client sent on stays in
 *	the input buffer and is read once the wait is over. Replies that
 *	back up (SMTPD_OUTPUT_MAX: a client that sends and never reads)
 *	stop the reading until they drain, and at most SMTPD_INPUT_MAX
 *	bytes are read ahead.
 *
 *	The order of commands: EHLO or HELO first (then MAIL, ETRN), MAIL,
 *	one or more RCPT, then DATA or BDAT chunks; EHLO, HELO and RSET
 *	end a transaction. A command out of order is "503 5.5.1"; a
 *	syntax error the parser's 501 or 555; a command that does not
 *	exist "500 5.5.2", one that sluice does not implement (STARTTLS,
 *	EXPN, TURN) "502 5.5.1"; a command line longer than
 *	line_length_limit "500 5.5.2 Error: line too long". Each 4xx or 5xx
 *	answer counts as an error, and so does each NOOP, VRFY, ETRN or RSET
 *	beyond smtpd_junk_command_limit; a message accepted starts both
 *	counts again; at smtpd_hard_error_limit the session ends with "421
 *	4.7.0 ... too many errors". Relay permission (mynetworks) is looked
 *	up at each RCPT and ETRN, so that a reload applies to open sessions.
 *
 *	MAIL checks the size the client announces against
 *	message_size_limit (552 5.3.4) and asks the server about storage
 *	and flow (452 4.3.1, or a delayed answer). RCPT counts recipients
 *	against smtpd_recipient_limit (452 4.5.3: the client sends the
 *	rest in another transaction) and applies the relay policy: a
 *	client outside mynetworks may send only to relay_domains, and
 *	never with a local part that routes on ("%", "!", "@"), or gets
 *	"554 5.7.1 <address>: Relay access denied"; a bare "postmaster" is
 *	always accepted (RFC 5321 4.5.1).
 *
 *	The content: in DATA, an end of data that is not CRLF.CRLF, or a
 *	bare CR or LF anywhere, is the smuggling family of attacks (see
 *	smtp/data.c): by default (smtpd_forbid_bare_newline = disconnect)
 *	the answer is "521 5.5.2 ... bare <LF> received" and the connection
 *	is closed, since what follows cannot be trusted. In BDAT the chunk
 *	sizes say where a chunk ends, so a bare line end fails only the
 *	transaction ("554 5.6.0"). The other modes, per client (the
 *	exclusions normalize): normalize (yes, no) takes a bare LF as a line
 *	end, stored as CRLF, in commands and content, while only CRLF.CRLF
 *	ends the data; note does the same and adds "notes=bare_lf" to the
 *	disconnect line; reject answers a command line ending in a bare LF,
 *	and a message with one (read to its CRLF.CRLF), with
 *	"CODE 5.5.2 ... bare <LF> received", CODE the reject code (550; 521
 *	also ends the session), and the session goes on. In those three
 *	modes a bare CR in content is refused the same way: it is no line
 *	end, and it is never stored. The bytes of a chunk are
 *	always read to its end, even of a chunk refused, so that message
 *	content is never read as commands, and a BDAT whose size cannot be
 *	parsed ends the session after its 501. RCPT after the first chunk
 *	is "503 5.5.1" (RFC 3030 2: the recipients come first). A NUL in
 *	the content is refused at its end, "554 5.6.0 Error: NUL character
 *	in message header" (or body; smtp/data.c), unless
 *	message_strip_characters removes body NULs. Content
 *	beyond smtpd_memory_limit, for all sessions together, is dropped
 *	and its message refused at the end with "452 4.3.1". A message larger than
 *	message_size_limit is read to its end and refused with 552 5.3.4.
 *
 *	A message's Received: header is written when its content begins
 *	(receive.c). Finished, it is refused as a mail loop ("554 5.4.6
 *	Error: too many hops") when it has more Received: headers than
 *	hopcount_limit; otherwise it gets what always_add_missing_headers
 *	adds and goes to the store; the answer "250 2.0.0 Ok: queued as ID"
 *	is written only when the store says the message is durable, "451
 *	4.3.0" or "452 4.3.1" when it could not be stored.
 *
 *	Deadlines (deadline.c) bound every wait for the client: each
 *	command line, and each line of content, must come within
 *	smtpd_timeout, shorter under stress ("421 4.4.2 ... timeout
 *	exceeded"). ETRN (after HELO,
 *	outside a transaction) flushes the node's deferred mail: "domain",
 *	"@domain" (with its subdomains); a client outside mynetworks only
 *	for relay_domains (459 4.7.1); "#queue" is not supported (458).
 *
 *	session_create() starts a session on fd and greets the client.
 *	session_shutdown() ends it with "421 4.3.2 ... Service shutting
 *	down", or, when it is storing, after the store's answer.
 *	session_busy() tells whether a store or a flush will call back, or
 *	the last replies are still going out (a stop waits for both).
 *	session_orphan() is for a server going away: the connection is
 *	closed, and a session whose store will call back is freed then.
 *
 *	Log lines: "connect from CLIENT", "disconnect from CLIENT ehlo=1
 *	mail=1 rcpt=1 data=1 quit=1 commands=5" (Postfix's form: ok/total
 *	where some failed), "NOQUEUE: reject: RCPT from CLIENT: REPLY;
 *	from=<S> to=<R> proto=ESMTP helo=<H>", "timeout after VERB from
 *	CLIENT", "lost connection after VERB from CLIENT", "too many errors
 *	after VERB from CLIENT", "warning: bare <LF> received after DATA
 *	from CLIENT: disconnected" (or "message rejected"; or <CR>; or
 *	BDAT), "warning: bare <LF> received in a command from CLIENT:
 *	rejected", "NOQUEUE: reject: DATA from CLIENT: 554 5.6.0 Error:
 *	NUL character in message header; from=<S> proto=ESMTP helo=<H>".
 *	CLIENT is "unknown[ADDRESS]": sluice does not look up client names.
 */

#include "ingress/smtpd_impl.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define REPLY_MAX 600

static void session_input(struct smtpd_session *ss);
static void session_free(struct smtpd_session *ss);

/* ------------------------------------------------------------ replies */

static const char *hostname(const struct smtpd_session *ss)
{
    return ss->s ? ss->s->cf.hostname : "localhost";
}

static void reply_raw(struct smtpd_session *ss, const char *text)
{
    if (ss->bev)
        bufferevent_write(ss->bev, text, strlen(text));
}

/* One reply line "CODE X.Y.Z text"; 4xx and 5xx count as errors. */
static void reply(struct smtpd_session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void vreply(struct smtpd_session *ss, const char *fmt, va_list ap)
{
    char line[REPLY_MAX];
    size_t n;

    vsnprintf(line, sizeof(line) - 2, fmt, ap);
    for (n = 0; line[n]; n++)
        if ((unsigned char)line[n] < ' ' || line[n] == 0x7f)
            line[n] = '?';
    memcpy(line + n, "\r\n", 3);
    reply_raw(ss, line);
    ss->last_code = atoi(line);
    if (ss->last_code >= 400 && !ss->quitting)
        ss->errors++;
}

static void reply(struct smtpd_session *ss, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreply(ss, fmt, ap);
    va_end(ap);
}

/* The last reply: the session ends once it is out. */
static void reply_final(struct smtpd_session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void reply_final(struct smtpd_session *ss, const char *fmt, ...)
{
    va_list ap;

    ss->quitting = 1;
    va_start(ap, fmt);
    vreply(ss, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------- transactions */

/*
 * Message content held in memory, counted against smtpd_memory_limit
 * for all sessions together: what many clients sending large messages
 * at once may make the daemon hold is bounded.
 */
static void held_release(struct smtpd_session *ss)
{
    if (ss->s != NULL)
        ss->s->held -= ss->held;
    ss->held = 0;
}

static void held_add(struct smtpd_session *ss, size_t n)
{
    ss->held += n;
    ss->s->held += n;
}

/* Over the limit: the content is dropped, the message refused at its end. */
static int held_room(struct smtpd_session *ss, size_t n)
{
    struct smtpd_server *s = ss->s;
    time_t now;

    if (ss->memory_full)
        return 0;
    if (s->cf.memory_limit == 0 || s->held + n <= s->cf.memory_limit)
        return 1;
    ss->memory_full = 1;
    held_release(ss);
    free(ss->msg.s);
    memset(&ss->msg, 0, sizeof(ss->msg));
    now = time(NULL);
    if (now - s->memory_logged >= 60) {
        s->memory_logged = now;
        smtpd_log(s,
                  "warning: smtpd_memory_limit (%llu bytes) reached: "
                  "messages being received are refused with 452",
                  (unsigned long long)s->cf.memory_limit);
    }
    return 0;
}

static void transaction_reset(struct smtpd_session *ss)
{
    ss->in_mail = 0;
    free(ss->sender);
    free(ss->envid);
    ss->sender = ss->envid = NULL;
    ss->ret = 0;
    ss->declared_size = 0;
    for (size_t i = 0; i < ss->nrcpt; i++) {
        free(ss->rcpt[i].address);
        free(ss->rcpt[i].orcpt);
    }
    ss->nrcpt = 0;
    ss->id[0] = 0;
    ss->chunking = 0;
    ss->reader_error = 0;
    ss->memory_full = 0;
    held_release(ss);
    free(ss->msg.s);
    memset(&ss->msg, 0, sizeof(ss->msg));
}

static void emit(void *ctx, const char *p, size_t n)
{
    struct smtpd_session *ss = ctx;

    if (!held_room(ss, n))
        return;
    ingress_buf_add(&ss->msg, p, n);
    held_add(ss, n);
}

/* DATA or the first BDAT: the queue id, the Received: header. */
static void message_begin(struct smtpd_session *ss, int mode)
{
    spool_id_new(ss->id, spool_now());
    receive_received(&ss->msg, ss, hostname(ss), time(NULL));
    held_add(ss, ss->msg.len);
    smtp_data_init(&ss->reader, mode, ss->s->cf.size_limit);
    memcpy(ss->reader.strip, ss->s->cf.strip, sizeof(ss->reader.strip));
    ss->bare_mode = smtpd_bare_mode(ss);
    if (ss->bare_mode != BARE_DISCONNECT)
        ss->reader.newline = SMTP_NEWLINE_NORMALIZE;
}

/* ------------------------------------------------------------ waiting */

static void wait_begin(struct smtpd_session *ss)
{
    ss->state = SESSION_WAIT;
    deadline_stop(ss);
    bufferevent_disable(ss->bev, EV_READ);
}

/* A wait is over: read on (what came meanwhile is in the input). */
static void wait_end(struct smtpd_session *ss)
{
    ss->state = SESSION_COMMAND;
    if (ss->s && ss->s->closing && !ss->quitting)
        reply_final(ss, "421 4.3.2 %s Service shutting down", hostname(ss));
    if (!ss->quitting) {
        bufferevent_enable(ss->bev, EV_READ);
        deadline_start(ss);
    }
    if (!ss->in_input)
        session_input(ss);
}

/* A store or a flush called back: is there still a session to answer? */
static int callback_orphaned(struct smtpd_session *ss)
{
    ss->pending = 0;
    if (ss->s != NULL && ss->bev != NULL)
        return 0;
    session_free(ss);
    return 1;
}

static void stored(void *conn, int status, const char *id, const char *why)
{
    struct smtpd_session *ss = conn;

    if (callback_orphaned(ss))
        return;
    if (status == 0) {
        reply(ss, "250 2.0.0 Ok: queued as %s", id);
        ss->errors = 0;
        ss->junk = 0;
    } else {
        smtpd_store_failed(ss->s, why);
        if (why && strstr(why, "full"))
            reply(ss, "452 4.3.1 Insufficient system storage: %s", why);
        else
            reply(ss, "451 4.3.0 Error: queue file write error: %s",
                  why ? why : "unknown");
    }
    transaction_reset(ss);
    wait_end(ss);
}

/*
 * A message that has passed through more relays than hopcount_limit
 * (its Received: headers, ours included, as Postfix counts them) is in
 * a mail loop: refused, never stored, so that it stops going round.
 */
static int looping(struct smtpd_session *ss)
{
    struct submit_input in = {ss->msg.s, ss->msg.len, ss->msg.size};
    char **values;
    size_t hops = submit_header_get(&in, "Received", &values);

    submit_header_values_free(values);
    if ((long)hops <= ss->s->cf.hopcount_limit)
        return 0;
    smtpd_log(ss->s,
              "NOQUEUE: reject: %s from %s: 554 5.4.6 Error: too many hops "
              "(%zu Received: headers); from=<%s> proto=%s helo=<%s>",
              ss->chunking ? "BDAT" : "DATA", ss->client, hops, ss->sender,
              ss->esmtp ? "ESMTP" : "SMTP", ss->helo);
    reply(ss, "554 5.4.6 Error: too many hops");
    transaction_reset(ss);
    return 1;
}

/*
 * A NUL in the content (smtp/data.c): in the header section always, in
 * the body unless message_strip_characters removes it. Refused, not
 * stored: a NUL is no text (RFC 5322, RFC 6152), and programs that read
 * a message as C strings would each see a different part of it.
 */
static int nul_refused(struct smtpd_session *ss)
{
    const char *where =
        ss->reader.nul == SMTP_DATA_NUL_HEADER ? "header" : "body";

    if (ss->reader.nul == 0)
        return 0;
    smtpd_log(ss->s,
              "NOQUEUE: reject: %s from %s: 554 5.6.0 Error: NUL character "
              "in message %s; from=<%s> proto=%s helo=<%s>",
              ss->chunking ? "BDAT" : "DATA", ss->client, where, ss->sender,
              ss->esmtp ? "ESMTP" : "SMTP", ss->helo);
    reply(ss, "554 5.6.0 Error: NUL character in message %s", where);
    transaction_reset(ss);
    return 1;
}

static void message_store(struct smtpd_session *ss)
{
    struct smtpd_server *s = ss->s;
    struct spool_msg *m;
    char origin[128];

    if (ss->memory_full) {
        reply(ss, "452 4.3.1 Insufficient system resources, try again later");
        transaction_reset(ss);
        return;
    }
    if (looping(ss))
        return;
    held_release(ss); /* the spool's from here on */
    m = receive_message(ss, s->cf.hostname, s->cf.add_missing_headers,
                        time(NULL));
    snprintf(origin, sizeof(origin), "client=%s", ss->client);
    wait_begin(ss);
    ss->pending = 1;
    s->ops.store(s->ops.ctx, m, origin, stored, ss);
}

static void delay_cb(evutil_socket_t fd, short what, void *arg)
{
    struct smtpd_session *ss = arg;

    (void)fd;
    (void)what;
    reply(ss, "250 2.1.0 Ok");
    wait_end(ss);
}

/* ----------------------------------------------------------- commands */

static void cmd_hello(struct smtpd_session *ss, struct smtp_command *cmd,
                      int esmtp)
{
    struct smtpd_server *s = ss->s;
    char size[40] = "SIZE", text[REPLY_MAX];
    size_t n;

    transaction_reset(ss);
    free(ss->helo);
    n = strlen(cmd->arg);
    ss->helo = xstrndup(cmd->arg, n < SMTPD_HELO_MAX ? n : SMTPD_HELO_MAX);
    for (char *c = ss->helo; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            *c = '?'; /* it goes into log lines */
    ss->esmtp = esmtp;
    if (!esmtp) {
        reply(ss, "250 %s", s->cf.hostname);
        return;
    }
    if (s->cf.size_limit > 0)
        snprintf(size, sizeof(size), "SIZE %llu",
                 (unsigned long long)s->cf.size_limit);
    snprintf(text, sizeof(text),
             "250-%s\r\n250-PIPELINING\r\n250-%s\r\n%s"
             "250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250-DSN\r\n"
             "250 CHUNKING\r\n",
             s->cf.hostname, size, s->ops.flush ? "250-ETRN\r\n" : "");
    reply_raw(ss, text);
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

static void cmd_mail(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_server *s = ss->s;
    char why[300];
    long delay;

    if (ss->helo == NULL) {
        reply(ss, "503 5.5.1 Error: send HELO/EHLO first");
        return;
    }
    if (ss->in_mail) {
        reply(ss, "503 5.5.1 Error: nested MAIL command");
        return;
    }
    if (s->cf.size_limit > 0 && cmd->has_size && cmd->size > s->cf.size_limit) {
        reply(ss, "552 5.3.4 Message size exceeds fixed limit");
        return;
    }
    if (smtpd_storage_check(s, cmd->has_size ? cmd->size : 0, why,
                            sizeof(why)) < 0 ||
        (delay = smtpd_flow_delay(s, why, sizeof(why))) < 0) {
        reply(ss, "452 4.3.1 %s", why);
        smtpd_log(s, "NOQUEUE: reject: MAIL from %s: 452 4.3.1 %s; from=<%s>",
                  ss->client, why, cmd->path);
        return;
    }
    ss->in_mail = 1;
    ss->sender = xstrdup(cmd->path);
    ss->envid = cmd->envid;
    cmd->envid = NULL;
    ss->ret = cmd->ret;
    ss->declared_size = cmd->size;
    if (delay == 0) {
        reply(ss, "250 2.1.0 Ok");
        return;
    }
    struct timeval tv = {delay / 1000, (delay % 1000) * 1000};

    wait_begin(ss);
    evtimer_add(ss->delay_ev, &tv);
}

/* May this client send to address? */
static int relay_allowed(const struct smtpd_session *ss, const char *address)
{
    const char *at = strrchr(address, '@');

    if (smtpd_client_trusted(ss))
        return 1;
    if (at == NULL)
        return strcasecmp(address, "postmaster") == 0;
    /* a local part that routes on would make us relay for anyone */
    for (const char *p = address; p < at; p++)
        if (*p == '%' || *p == '!' || *p == '@')
            return 0;
    return smtpd_relay_domain(ss->s, at + 1);
}

static void cmd_rcpt(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_rcpt *r;

    if (!ss->in_mail) {
        reply(ss, "503 5.5.1 Error: need MAIL command");
        return;
    }
    if (ss->chunking) { /* RFC 3030 2: recipients come before content */
        reply(ss, "503 5.5.1 Error: RCPT after BDAT");
        return;
    }
    if ((long)ss->nrcpt >= ss->s->cf.recipient_limit) {
        reply(ss, "452 4.5.3 Error: too many recipients");
        return;
    }
    if (!relay_allowed(ss, cmd->path)) {
        reply(ss, "554 5.7.1 <%s>: Relay access denied", cmd->path);
        smtpd_log(ss->s,
                  "NOQUEUE: reject: RCPT from %s: 554 5.7.1 <%s>: Relay "
                  "access denied; from=<%s> to=<%s> proto=%s helo=<%s>",
                  ss->client, cmd->path, ss->sender, cmd->path,
                  ss->esmtp ? "ESMTP" : "SMTP", ss->helo);
        return;
    }
    if (ss->nrcpt == ss->rcpt_size) {
        ss->rcpt_size = ss->rcpt_size ? 2 * ss->rcpt_size : 8;
        ss->rcpt = xrealloc(ss->rcpt, ss->rcpt_size * sizeof(*ss->rcpt));
    }
    r = &ss->rcpt[ss->nrcpt++];
    r->address = xstrdup(cmd->path);
    r->notify = cmd->notify;
    r->orcpt = cmd->orcpt;
    cmd->orcpt = NULL;
    reply(ss, "250 2.1.5 Ok");
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
        reply(ss, "%s", why);
        return;
    }
    if (ss->chunking) {
        reply(ss, "503 5.5.1 Error: DATA after BDAT");
        return;
    }
    message_begin(ss, SMTP_DATA_DOT);
    ss->state = SESSION_DATA;
    reply(ss, "354 End data with <CR><LF>.<CR><LF>");
}

static void cmd_bdat(struct smtpd_session *ss, struct smtp_command *cmd)
{
    ss->chunk_left = cmd->chunk;
    ss->chunk_last = cmd->last;
    ss->chunk_skip =
        !content_allowed(ss, ss->chunk_reply, sizeof(ss->chunk_reply));
    if (!ss->chunk_skip && !ss->chunking) {
        message_begin(ss, SMTP_DATA_RAW);
        ss->chunking = 1;
    }
    ss->state = SESSION_BDAT;
}

static void cmd_rset(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    transaction_reset(ss);
    reply(ss, "250 2.0.0 Ok");
}

static void cmd_noop(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    reply(ss, "250 2.0.0 Ok");
}

static void cmd_quit(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    reply_final(ss, "221 2.0.0 Bye");
}

static void cmd_vrfy(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    reply(ss, "252 2.0.0 Cannot VRFY user, but will accept message and "
              "attempt delivery");
}

static void cmd_help(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    reply(ss, "214 2.0.0 Commands: EHLO HELO MAIL RCPT DATA BDAT RSET NOOP "
              "QUIT VRFY HELP ETRN");
}

static void cmd_starttls(struct smtpd_session *ss, struct smtp_command *cmd)
{
    (void)cmd;
    reply(ss, "502 5.5.1 Error: command not implemented");
}

static void flushed(void *conn, long messages, const char *why)
{
    struct smtpd_session *ss = conn;

    if (callback_orphaned(ss))
        return;
    if (why != NULL)
        reply(ss, "458 4.3.0 Unable to queue messages for node %s", ss->etrn);
    else if (messages == 0)
        reply(ss, "251 2.0.0 OK, no messages waiting for node %s", ss->etrn);
    else
        reply(ss, "253 2.0.0 OK, %ld pending messages for node %s started",
              messages, ss->etrn);
    wait_end(ss);
}

static int node_ok(const char *d)
{
    size_t n = strlen(d);

    if (n == 0 || n > LOCAL_DOMAIN_MAX)
        return 0;
    for (; *d; d++)
        if (!(*d >= 'a' && *d <= 'z') && !(*d >= 'A' && *d <= 'Z') &&
            !(*d >= '0' && *d <= '9') && !strchr(".-_[]:", *d))
            return 0;
    return 1;
}

static void cmd_etrn(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_server *s = ss->s;
    const char *node = cmd->arg;
    int subdomains = node[0] == '@';

    if (ss->helo == NULL) {
        reply(ss, "503 5.5.1 Error: send HELO/EHLO first");
    } else if (ss->in_mail) {
        reply(ss, "503 5.5.1 Error: MAIL transaction in progress");
    } else if (s->ops.flush == NULL) {
        reply(ss, "502 5.5.1 Error: command not implemented");
    } else if (node[0] == '#') {
        reply(ss,
              "458 4.3.0 Unable to queue messages for node %s: named "
              "queues are not supported",
              node);
    } else if (!node_ok(node + subdomains)) {
        reply(ss, "501 5.5.4 Syntax: ETRN domain");
    } else if (!smtpd_client_trusted(ss) &&
               !smtpd_relay_domain(s, node + subdomains)) {
        reply(ss, "459 4.7.1 <%s>: Node not allowed: not in relay_domains",
              node);
    } else {
        /* "@example.com": the domain and its subdomains (qmgr_flush) */
        snprintf(ss->etrn, sizeof(ss->etrn), "%s%s", subdomains ? "." : "",
                 node + subdomains);
        wait_begin(ss);
        ss->pending = 1;
        s->ops.flush(s->ops.ctx, ss->etrn, flushed, ss);
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
    [SMTP_CMD_STARTTLS] = {"STARTTLS", cmd_starttls, COUNT_UNKNOWN},
};

static const char *const count_names[COUNT_MAX] = {
    "ehlo", "helo", "mail", "rcpt", "data", "bdat",    "rset",
    "noop", "quit", "vrfy", "help", "etrn", "unknown",
};

/* Commands RFC 5321 and its predecessors name that sluice leaves out. */
static int unimplemented(const char *line)
{
    static const char *const names[] = {"EXPN", "TURN", "ATRN", "SEND",
                                        "SOML", "SAML", "AUTH"};
    size_t n = strcspn(line, " ");

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (n == 4 && strncasecmp(line, names[i], 4) == 0)
            return 1;
    return 0;
}

static void command(struct smtpd_session *ss, const char *line, size_t len)
{
    struct smtp_command cmd;
    char why[REPLY_MAX];
    enum session_count c = COUNT_UNKNOWN;
    int rc = smtp_command_parse(line, len, &cmd, why, sizeof(why));

    if (rc == SMTP_PARSE_UNKNOWN && unimplemented(line)) {
        reply(ss, "502 5.5.1 Error: command not implemented");
        ss->last_verb = "UNIMPLEMENTED";
    } else if (rc != 0 && cmd.verb == SMTP_CMD_BDAT) {
        /* a chunk of unknown size: where commands resume is unknown */
        reply_final(ss, "%d %s", rc, why);
        ss->last_verb = "BDAT";
        c = COUNT_BDAT;
    } else if (rc != 0) {
        reply(ss, "%d %s", rc, why);
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
    ss->counts[c][0] += ss->last_code < 400 && ss->state != SESSION_BDAT;
}

/* --------------------------------------------------------------- input */

/* The reply to a bare line end, with smtpd_forbid_bare_newline_reject_code:
 * 521 ends the session (Postfix: "521 to disconnect"). */
static void bare_reply(struct smtpd_session *ss, const char *what)
{
    long code = ss->s->cf.bare_code;

    if (code == 521)
        reply_final(ss, "521 5.5.2 %s Error: bare %s received", hostname(ss),
                    what);
    else
        reply(ss, "%ld 5.5.2 %s Error: bare %s received", code, hostname(ss),
              what);
}

/*
 * A command line that ends in a bare LF: run (the default, normalize,
 * note) or refused (reject). No content follows a command, so taking
 * the LF as its end smuggles nothing; reject is for operators who want
 * no bare line end at all. Returns 1 when the line is refused.
 */
static int bare_command(struct smtpd_session *ss)
{
    enum bare_mode mode = smtpd_bare_mode(ss);

    if (mode == BARE_NOTE)
        ss->noted_bare = 1;
    if (mode != BARE_REJECT)
        return 0;
    smtpd_log(ss->s, "warning: bare <LF> received in a command from %s: %s",
              ss->client,
              ss->s->cf.bare_code == 521 ? "disconnected" : "rejected");
    ss->counts[COUNT_UNKNOWN][1]++;
    bare_reply(ss, "<LF>");
    return 1;
}

static int read_command(struct smtpd_session *ss, struct evbuffer *in)
{
    size_t eol = 0, n;
    struct evbuffer_ptr p =
        evbuffer_search_eol(in, NULL, &eol, EVBUFFER_EOL_LF);
    char *line;

    if (p.pos < 0) {
        n = evbuffer_get_length(in);
        if ((long)n > ss->s->cf.line_limit) {
            evbuffer_drain(in, n);
            ss->skip_line = 1;
        }
        return 0;
    }
    if (ss->skip_line || p.pos > ss->s->cf.line_limit) {
        evbuffer_drain(in, (size_t)p.pos + eol);
        ss->skip_line = 0;
        ss->counts[COUNT_UNKNOWN][1]++;
        reply(ss, "500 5.5.2 Error: line too long");
        return 1;
    }
    n = (size_t)p.pos;
    line = xmalloc(n + 1);
    evbuffer_remove(in, line, n);
    evbuffer_drain(in, eol);
    if (n > 0 && line[n - 1] == '\r') {
        n--;
    } else if (bare_command(ss)) {
        free(line); /* refused: not run */
        return 1;
    }
    line[n] = 0;
    command(ss, line, n);
    free(line);
    return 1;
}

static void bare_line_end(struct smtpd_session *ss, int rc)
{
    const char *what = rc == SMTP_DATA_BARE_LF ? "<LF>" : "<CR>";

    smtpd_log(ss->s,
              "warning: bare %s received after DATA from %s: disconnected",
              what, ss->client);
    ss->counts[COUNT_DATA][0]--;
    reply_final(ss, "521 5.5.2 %s Error: bare %s received", hostname(ss), what);
}

/*
 * The message's bare line ends, in the modes that read on past them
 * (smtp/data.c's NORMALIZE): a bare CR is refused in every mode (no one
 * agrees on what it is, and it is never stored), a bare LF in reject
 * mode; in note mode it is noted for the log. Returns 1 when refused.
 */
static int bare_refused(struct smtpd_session *ss)
{
    unsigned bare = ss->reader.bare;
    const char *what = bare & SMTP_DATA_SAW_BARE_CR ? "<CR>" : "<LF>";

    if (bare == 0)
        return 0;
    if (ss->bare_mode == BARE_NOTE)
        ss->noted_bare = 1;
    if (!(bare & SMTP_DATA_SAW_BARE_CR) && ss->bare_mode != BARE_REJECT)
        return 0;
    smtpd_log(ss->s, "warning: bare %s received after %s from %s: %s", what,
              ss->chunking ? "BDAT" : "DATA", ss->client,
              ss->s->cf.bare_code == 521 ? "disconnected" : "message rejected");
    bare_reply(ss, what);
    transaction_reset(ss);
    return 1;
}

static void data_done(struct smtpd_session *ss)
{
    ss->state = SESSION_COMMAND;
    if (bare_refused(ss)) {
        ss->counts[COUNT_DATA][0]--;
        return;
    }
    if (ss->reader.too_big) {
        ss->counts[COUNT_DATA][0]--;
        reply(ss, "552 5.3.4 Message size exceeds fixed limit");
        transaction_reset(ss);
        return;
    }
    if (nul_refused(ss)) {
        ss->counts[COUNT_DATA][0]--;
        return;
    }
    message_store(ss);
}

static int read_data(struct smtpd_session *ss, struct evbuffer *in)
{
    struct evbuffer_iovec v;
    size_t used;
    int rc;

    while (evbuffer_peek(in, -1, NULL, &v, 1) > 0 && v.iov_len > 0) {
        rc =
            smtp_data_feed(&ss->reader, v.iov_base, v.iov_len, &used, emit, ss);
        deadline_progress(ss, v.iov_base, used);
        evbuffer_drain(in, used);
        if (rc == SMTP_DATA_DONE) {
            data_done(ss);
            return 1;
        }
        if (rc < 0) {
            bare_line_end(ss, rc);
            return 1;
        }
    }
    return 0;
}

static void chunk_fail(struct smtpd_session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void chunk_fail(struct smtpd_session *ss, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreply(ss, fmt, ap);
    va_end(ap);
    transaction_reset(ss);
}

static void chunk_done(struct smtpd_session *ss)
{
    int rc = ss->reader_error;

    ss->state = SESSION_COMMAND;
    if (ss->chunk_skip) {
        reply(ss, "%s", ss->chunk_reply);
        ss->chunk_skip = 0;
        return;
    }
    if (rc == 0 && ss->chunk_last)
        rc = smtp_data_finish(&ss->reader, emit, ss);
    if (rc < 0) {
        chunk_fail(ss, "554 5.6.0 Error: bare %s in message content",
                   rc == SMTP_DATA_BARE_LF ? "<LF>" : "<CR>");
    } else if (bare_refused(ss)) {
        return;
    } else if (ss->reader.too_big) {
        chunk_fail(ss, "552 5.3.4 Message size exceeds fixed limit");
    } else if (!ss->chunk_last) {
        ss->counts[COUNT_BDAT][0]++;
        reply(ss, "250 2.0.0 Ok: %llu bytes",
              (unsigned long long)ss->reader.size);
    } else if (nul_refused(ss)) {
        return;
    } else {
        ss->counts[COUNT_BDAT][0]++;
        message_store(ss);
    }
}

static int read_chunk(struct smtpd_session *ss, struct evbuffer *in)
{
    struct evbuffer_iovec v;
    size_t n, used;

    while (ss->chunk_left > 0 && evbuffer_peek(in, -1, NULL, &v, 1) > 0 &&
           v.iov_len > 0) {
        n = v.iov_len < ss->chunk_left ? v.iov_len : (size_t)ss->chunk_left;
        if (!ss->chunk_skip && ss->reader_error == 0) {
            int rc =
                smtp_data_feed(&ss->reader, v.iov_base, n, &used, emit, ss);

            if (rc < 0)
                ss->reader_error = rc;
        }
        deadline_progress(ss, v.iov_base, n);
        evbuffer_drain(in, n);
        ss->chunk_left -= n;
    }
    if (ss->chunk_left > 0)
        return 0;
    chunk_done(ss);
    return 1;
}

/* ---------------------------------------------------------- the events */

static void event_cb(struct bufferevent *bev, short what, void *arg);

static void closing_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    session_free(arg);
}

static void close_after_reply(struct smtpd_session *ss)
{
    ss->state = SESSION_CLOSING;
    evtimer_del(ss->delay_ev);
    deadline_stop(ss);
    bufferevent_disable(ss->bev, EV_READ);
    bufferevent_setcb(ss->bev, NULL, closing_written, event_cb, ss);
    bufferevent_setwatermark(ss->bev, EV_WRITE, 0, 0);
    if (evbuffer_get_length(bufferevent_get_output(ss->bev)) == 0)
        session_free(ss);
}

static void session_input(struct smtpd_session *ss)
{
    struct evbuffer *in = bufferevent_get_input(ss->bev);
    struct evbuffer *out = bufferevent_get_output(ss->bev);
    int more = 1;

    ss->in_input = 1;
    while (more && !ss->quitting && !ss->output_full) {
        switch (ss->state) {
        case SESSION_COMMAND:
            /* a command line is a record: the next one's clock starts */
            if ((more = read_command(ss, in)) && !ss->quitting &&
                ss->state != SESSION_WAIT)
                deadline_start(ss);
            break;
        case SESSION_DATA:
            more = read_data(ss, in);
            break;
        case SESSION_BDAT:
            more = read_chunk(ss, in);
            break;
        default:
            more = 0;
        }
        if (ss->errors >= ss->s->cf.error_limit && !ss->quitting) {
            smtpd_log(ss->s, "too many errors after %s from %s", ss->last_verb,
                      ss->client);
            reply_final(ss, "421 4.7.0 %s Error: too many errors",
                        hostname(ss));
        }
        if (evbuffer_get_length(out) > SMTPD_OUTPUT_MAX) {
            ss->output_full = 1;
            bufferevent_disable(ss->bev, EV_READ);
        }
    }
    ss->in_input = 0;
    if (ss->quitting && ss->state != SESSION_WAIT)
        close_after_reply(ss);
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    (void)bev;
    deadline_read(arg);
    session_input(arg);
}

/* The replies drained below SMTPD_OUTPUT_MAX: read on. */
static void write_cb(struct bufferevent *bev, void *arg)
{
    struct smtpd_session *ss = arg;

    if (!ss->output_full)
        return;
    ss->output_full = 0;
    if (ss->state != SESSION_WAIT) {
        bufferevent_enable(bev, EV_READ);
        session_input(ss);
    }
}

/* A deadline passed (deadline.c): the client took too long. */
void session_timeout(struct smtpd_session *ss)
{
    if (ss->state == SESSION_CLOSING || ss->state == SESSION_WAIT)
        return;
    smtpd_log(ss->s, "timeout after %s from %s", ss->last_verb, ss->client);
    reply_final(ss, "421 4.4.2 %s Error: timeout exceeded", hostname(ss));
    close_after_reply(ss);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct smtpd_session *ss = arg;

    if ((what & BEV_EVENT_EOF) &&
        (ss->in_mail || ss->state == SESSION_DATA || ss->state == SESSION_BDAT))
        smtpd_log(ss->s, "lost connection after %s from %s", ss->last_verb,
                  ss->client);
    if ((what & BEV_EVENT_EOF) && ss->state != SESSION_CLOSING) {
        /*
         * The client sent all it will; it may still read (a half
         * close). What is answered goes out, then the session ends; a
         * store under way answers first.
         */
        ss->quitting = 1;
        if (!ss->pending)
            close_after_reply(ss);
        return;
    }
    if (ss->pending) {
        /* the store or flush calls back later and frees what is left */
        bufferevent_free(bev);
        ss->bev = NULL;
        return;
    }
    session_free(ss);
}

/* ------------------------------------------------------------ lifetime */

static void log_disconnect(struct smtpd_session *ss)
{
    char line[512];
    size_t n = 0;
    unsigned ok = 0, total = 0;

    n += (size_t)snprintf(line, sizeof(line), "disconnect from %s", ss->client);
    for (int c = 0; c < COUNT_MAX && n < sizeof(line); c++) {
        if (ss->counts[c][1] == 0)
            continue;
        ok += ss->counts[c][0];
        total += ss->counts[c][1];
        if (ss->counts[c][0] == ss->counts[c][1])
            n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%u",
                                  count_names[c], ss->counts[c][1]);
        else
            n += (size_t)snprintf(line + n, sizeof(line) - n, " %s=%u/%u",
                                  count_names[c], ss->counts[c][0],
                                  ss->counts[c][1]);
    }
    if (n < sizeof(line) && ok == total)
        n +=
            (size_t)snprintf(line + n, sizeof(line) - n, " commands=%u", total);
    else if (n < sizeof(line))
        n += (size_t)snprintf(line + n, sizeof(line) - n, " commands=%u/%u", ok,
                              total);
    if (n < sizeof(line) && ss->noted_bare) /* Postfix's form */
        snprintf(line + n, sizeof(line) - n, " notes=bare_lf");
    smtpd_log(ss->s, "%s", line);
}

static void session_free(struct smtpd_session *ss)
{
    if (ss->s != NULL) {
        log_disconnect(ss);
        smtpd_session_gone(ss);
    }
    if (ss->bev)
        bufferevent_free(ss->bev);
    if (ss->delay_ev)
        event_free(ss->delay_ev);
    deadline_free(ss);
    transaction_reset(ss);
    free(ss->rcpt);
    free(ss->helo);
    free(ss);
}

struct smtpd_session *session_create(struct smtpd_server *s, int fd,
                                     const struct sockaddr *sa, socklen_t salen)
{
    struct smtpd_session *ss = xmalloc(sizeof(*ss));
    struct timeval tmo = {s->cf.timeout_ms / 1000,
                          (s->cf.timeout_ms % 1000) * 1000};
    char greeting[REPLY_MAX];

    memset(ss, 0, sizeof(*ss));
    ss->s = s;
    if (salen > sizeof(ss->addr))
        salen = sizeof(ss->addr);
    memcpy(&ss->addr, sa, salen);
    smtpd_client_text(sa, salen, ss->addr_text, sizeof(ss->addr_text),
                      ss->client, sizeof(ss->client));
    ss->last_verb = "CONNECT";
    /* the timers first: once the bufferevent has fd, it closes it */
    ss->delay_ev = evtimer_new(s->base, delay_cb, ss);
    if (ss->delay_ev != NULL && deadline_init(ss) == 0)
        ss->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (ss->bev == NULL) {
        if (ss->delay_ev)
            event_free(ss->delay_ev);
        deadline_free(ss);
        free(ss);
        return NULL; /* fd is still the caller's */
    }
    bufferevent_setcb(ss->bev, read_cb, write_cb, event_cb, ss);
    /* reading has its deadlines (deadline.c); writing a plain timeout */
    bufferevent_set_timeouts(ss->bev, NULL, &tmo);
    bufferevent_setwatermark(ss->bev, EV_READ, 0, SMTPD_INPUT_MAX);
    bufferevent_setwatermark(ss->bev, EV_WRITE, SMTPD_OUTPUT_MAX / 2, 0);
    bufferevent_enable(ss->bev, EV_READ | EV_WRITE);
    snprintf(greeting, sizeof(greeting), "220 %s ESMTP sluice\r\n",
             s->cf.hostname);
    reply_raw(ss, greeting);
    deadline_start(ss);
    return ss;
}

void session_shutdown(struct smtpd_session *ss)
{
    if (ss->pending || ss->state == SESSION_CLOSING)
        return; /* wait_end() says it once the answer is out */
    if (ss->state == SESSION_WAIT)
        evtimer_del(ss->delay_ev);
    reply_final(ss, "421 4.3.2 %s Service shutting down", hostname(ss));
    close_after_reply(ss);
}

int session_busy(const struct smtpd_session *ss)
{
    return ss->pending ||
           (ss->state == SESSION_CLOSING && ss->bev != NULL &&
            evbuffer_get_length(bufferevent_get_output(ss->bev)) > 0);
}

void session_orphan(struct smtpd_session *ss)
{
    smtpd_session_gone(ss);
    if (ss->bev) {
        bufferevent_free(ss->bev);
        ss->bev = NULL;
    }
    /* the event base may go before a late store answer frees the rest */
    if (ss->delay_ev) {
        event_free(ss->delay_ev);
        ss->delay_ev = NULL;
    }
    deadline_free(ss);
    if (!ss->pending)
        session_free(ss);
}
