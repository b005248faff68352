/*
 * NAME
 *	session 3 - one SMTP server session, as a state machine
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	struct smtpd_session *session_create(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen, int tls)
 *	void	session_shutdown(struct smtpd_session *ss)
 *	int	session_busy(const struct smtpd_session *ss)
 *	void	session_orphan(struct smtpd_session *ss)
 *
 *	For the commands (command.c) and the content (content.c):
 *
 *	const char *session_hostname(const struct smtpd_session *ss)
 *	void	session_reply(struct smtpd_session *ss, const char *fmt, ...)
 *	void	session_reply_final(struct smtpd_session *ss,
 *			const char *fmt, ...)
 *	void	session_reply_raw(struct smtpd_session *ss, const char *text)
 *	void	session_transaction_reset(struct smtpd_session *ss)
 *	void	session_wait_begin(struct smtpd_session *ss)
 *	void	session_wait_end(struct smtpd_session *ss)
 *	int	session_callback_orphaned(struct smtpd_session *ss)
 *	void	session_greet(struct smtpd_session *ss)
 *	void	session_tls_begin(struct smtpd_session *ss)
 * DESCRIPTION
 *	A session reads what its client sends and answers it, RFC 5321
 *	with the extensions PIPELINING (RFC 2920), SIZE (1870), 8BITMIME
 *	(6152), ENHANCEDSTATUSCODES (2034, 3463), DSN (3461), CHUNKING
 *	(3030) and ETRN (1985). It is in one of these states:
 *
 *	LOOKUP	nothing is read: the client's name is being looked up
 *		(peer.c), before "connect from" and the greeting;
 *	COMMAND	reading command lines, each handed to command_run()
 *		(command.c: the verbs and their order);
 *	DATA	after "354", the content, through smtp_data_feed() in DOT
 *		mode, up to the CRLF.CRLF (content.c);
 *	BDAT	a chunk's announced bytes, in RAW mode (content.c);
 *	WAIT	nothing is read: a message is being stored, an ETRN flushed,
 *		an address verified for RCPT (verify.c),
 *		or a MAIL answer held back for in_flow_delay;
 *	TLS	nothing is read: STARTTLS's 220 is going out, then the TLS
 *		handshake runs (starttls.c);
 *	AUTH	reading the client's response to a 334 challenge of AUTH
 *		(auth.c), one line, under the command deadline;
 *	CLOSING	the last reply is going out, then the session is freed.
 *
 *	Pipelining comes for free: every complete command in the input is
 *	answered in order, and the answers leave together when the loop
 *	writes; while a session waits, what the client sent on stays in
 *	the input buffer and is read once the wait is over. Replies that
 *	back up (SMTPD_OUTPUT_MAX: a client that sends and never reads)
 *	stop the reading until they drain, and at most SMTPD_INPUT_MAX
 *	bytes are read ahead. A command line longer than line_length_limit
 *	is "500 5.5.2 Error: line too long". Each 4xx or 5xx answer counts
 *	as an error (and so do junk commands, command.c); at
 *	smtpd_hard_error_limit the session ends with "421 4.7.0 ... too
 *	many errors".
 *
 *	Deadlines (deadline.c) bound every wait for the client: each
 *	command line, and each line of content, must come within
 *	smtpd_timeout, shorter under stress ("421 4.4.2 ... timeout
 *	exceeded").
 *
 *	session_create() starts a session on fd: it looks up the client's
 *	name (peer.c), then (session_connected()) logs "connect from" and
 *	greets the client; with tls set (implicit TLS) it starts the TLS
 *	handshake instead, and the greeting (session_greet()) follows it. session_tls_begin() turns
 *	the connection to TLS: reading stops, and once the replies so far
 *	are out (STARTTLS's 220) the socket's bufferevent goes under a TLS
 *	filter (tls/) with the session's callbacks; the handshake's end
 *	comes as an event (starttls_established() or starttls_failed(),
 *	then the session ends). A deadline that passes in the handshake
 *	ends the session without a reply: the client could not read one.
 *	session_shutdown() ends it with "421 4.3.2 ... Service shutting
 *	down", or, when it is storing, after the store's answer.
 *	session_busy() tells whether a store or a flush will call back, or
 *	the last replies are still going out (a stop waits for both).
 *	session_orphan() is for a server going away: the connection is
 *	closed, and a session whose store will call back is freed then.
 *
 *	session_reply() writes one reply line "CODE X.Y.Z text" (control
 *	characters become "?"); a 4xx or 5xx counts as an error.
 *	session_reply_final() writes the last one: the session ends once it
 *	is out. session_reply_raw() writes text as it is (a multi-line
 *	reply). session_hostname() is the name replies give for this
 *	server. session_transaction_reset() forgets the mail transaction:
 *	sender, recipients, the content read so far. session_wait_begin()
 *	stops the reading (state WAIT) for a store, a flush or a delay;
 *	session_wait_end() reads on, with what came meanwhile.
 *	session_callback_orphaned() is the first step of a store's or
 *	flush's answer: it returns 1, having freed the session, when there
 *	is no longer a client to answer.
 *
 *	Log lines: "connect from CLIENT", "disconnect from CLIENT ehlo=1
 *	mail=1 rcpt=1 data=1 quit=1 commands=5" (Postfix's form: ok/total
 *	where some failed), "timeout after VERB from CLIENT", "lost
 *	connection after VERB from CLIENT", "too many errors after VERB
 *	from CLIENT". CLIENT is "NAME[ADDRESS]", NAME the client's
 *	forward-confirmed host name (peer.c) or "unknown".
 */

#include "ingress/smtpd_impl.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void session_input(struct smtpd_session *ss);
static void session_free(struct smtpd_session *ss);
static void tls_start(struct smtpd_session *ss);

/* ------------------------------------------------------------ replies */

const char *session_hostname(const struct smtpd_session *ss)
{
    return ss->s ? ss->s->cf.hostname : "localhost";
}

void session_reply_raw(struct smtpd_session *ss, const char *text)
{
    if (ss->bev)
        bufferevent_write(ss->bev, text, strlen(text));
}

/* One reply line "CODE X.Y.Z text"; 4xx and 5xx count as errors. */
static void vreply(struct smtpd_session *ss, const char *fmt, va_list ap)
{
    char line[SESSION_REPLY_MAX];
    size_t n;

    vsnprintf(line, sizeof(line) - 2, fmt, ap);
    for (n = 0; line[n]; n++)
        if ((unsigned char)line[n] < ' ' || line[n] == 0x7f)
            line[n] = '?';
    memcpy(line + n, "\r\n", 3);
    session_reply_raw(ss, line);
    ss->last_code = atoi(line);
    if (ss->last_code >= 400 && !ss->quitting)
        ss->errors++;
}

void session_reply(struct smtpd_session *ss, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vreply(ss, fmt, ap);
    va_end(ap);
}

/* The last reply: the session ends once it is out. */
void session_reply_final(struct smtpd_session *ss, const char *fmt, ...)
{
    va_list ap;

    ss->quitting = 1;
    va_start(ap, fmt);
    vreply(ss, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------- transactions */

void session_transaction_reset(struct smtpd_session *ss)
{
    ss->in_mail = 0;
    free(ss->sender);
    free(ss->envid);
    ss->sender = ss->envid = NULL;
    ss->ret = 0;
    ss->smtputf8 = 0;
    ss->declared_size = 0;
    for (size_t i = 0; i < ss->nrcpt; i++) {
        free(ss->rcpt[i].address);
        free(ss->rcpt[i].orcpt);
    }
    ss->nrcpt = 0;
    free(ss->waiting_rcpt.address);
    free(ss->waiting_rcpt.orcpt);
    memset(&ss->waiting_rcpt, 0, sizeof(ss->waiting_rcpt));
    verify_forget(ss);
    ss->id[0] = 0;
    ss->chunking = 0;
    ss->reader_error = 0;
    ss->memory_full = 0;
    content_drop(ss);
    ss->staging_failed = 0;
}

/* ------------------------------------------------------------ waiting */

/*
 * Waiting is sluice's time, not the client's: no deadline runs, and the
 * write timeout is off too (a TLS filter keeps its write event armed,
 * and an AUTH back end may take longer than smtpd_timeout).
 */
void session_wait_begin(struct smtpd_session *ss)
{
    ss->state = SESSION_WAIT;
    deadline_stop(ss);
    bufferevent_disable(ss->bev, EV_READ);
    bufferevent_set_timeouts(ss->bev, NULL, NULL);
}

static void write_timeout_set(struct smtpd_session *ss)
{
    long ms = ss->s ? ss->s->cf.timeout_ms : 1000;
    struct timeval tmo = {ms / 1000, (ms % 1000) * 1000};

    bufferevent_set_timeouts(ss->bev, NULL, &tmo);
}

/* A wait is over: read on (what came meanwhile is in the input). */
void session_wait_end(struct smtpd_session *ss)
{
    ss->state = ss->auth_turn ? SESSION_AUTH : SESSION_COMMAND;
    write_timeout_set(ss);
    if (ss->s && ss->s->closing && !ss->quitting)
        session_reply_final(ss, "421 4.3.2 %s Service shutting down",
                            session_hostname(ss));
    if (!ss->quitting) {
        bufferevent_enable(ss->bev, EV_READ);
        deadline_start(ss);
    }
    if (!ss->in_input)
        session_input(ss);
}

/* A store or a flush called back: is there still a session to answer? */
int session_callback_orphaned(struct smtpd_session *ss)
{
    ss->pending = 0;
    if (ss->s != NULL && ss->bev != NULL)
        return 0;
    session_free(ss);
    return 1;
}

/* in_flow_delay is over: MAIL gets its answer (command.c). */
static void delay_cb(evutil_socket_t fd, short what, void *arg)
{
    struct smtpd_session *ss = arg;

    (void)fd;
    (void)what;
    if (ss->state == SESSION_TLS) { /* the same timer starts TLS */
        tls_start(ss);
        return;
    }
    if (ss->state == SESSION_LOOKUP) { /* and ends a name lookup */
        peer_timeout(ss);
        return;
    }
    session_reply(ss, "250 2.1.0 Ok");
    session_wait_end(ss);
}

/* --------------------------------------------------------------- input */

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
        if (ss->state == SESSION_AUTH) {
            auth_line_too_long(ss);
            return 1;
        }
        ss->counts[COUNT_UNKNOWN][1]++;
        session_reply(ss, "500 5.5.2 Error: line too long");
        return 1;
    }
    n = (size_t)p.pos;
    line = xmalloc(n + 1);
    evbuffer_remove(in, line, n);
    evbuffer_drain(in, eol);
    if (n > 0 && line[n - 1] == '\r') {
        n--;
    } else if (content_bare_command(ss)) {
        free(line); /* refused: not run */
        return 1;
    }
    line[n] = 0;
    if (ss->state == SESSION_AUTH)
        auth_response(ss, line, n);
    else
        command_run(ss, line, n);
    explicit_bzero(line, n); /* it may have been a password */
    free(line);
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
    verify_cancel(ss); /* a client gone while its RCPT waited */
    ss->state = SESSION_CLOSING;
    evtimer_del(ss->delay_ev);
    if (ss->auth_ev)
        evtimer_del(ss->auth_ev);
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
        case SESSION_AUTH:
            /* a command line is a record: the next one's clock starts */
            if ((more = read_command(ss, in)) && !ss->quitting &&
                ss->state != SESSION_WAIT)
                deadline_start(ss);
            break;
        case SESSION_DATA:
            more = content_read_data(ss, in);
            break;
        case SESSION_BDAT:
            more = content_read_chunk(ss, in);
            break;
        default:
            more = 0;
        }
        if (ss->errors >= ss->s->cf.error_limit && !ss->quitting) {
            smtpd_log(ss->s, "too many errors after %s from %s", ss->last_verb,
                      ss->client);
            session_reply_final(ss, "421 4.7.0 %s Error: too many errors",
                                session_hostname(ss));
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
    if (ss->state != SESSION_WAIT && ss->state != SESSION_TLS &&
        ss->state != SESSION_LOOKUP) {
        bufferevent_enable(bev, EV_READ);
        session_input(ss);
    }
}

/* A deadline passed (deadline.c): the client took too long. */
void session_timeout(struct smtpd_session *ss)
{
    if (ss->state == SESSION_CLOSING || ss->state == SESSION_WAIT)
        return;
    if (ss->state == SESSION_TLS) { /* no reply: it could not be read */
        starttls_failed(ss, "Connection timed out");
        session_free(ss);
        return;
    }
    smtpd_log(ss->s, "timeout after %s from %s", ss->last_verb, ss->client);
    session_reply_final(ss, "421 4.4.2 %s Error: timeout exceeded",
                        session_hostname(ss));
    close_after_reply(ss);
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct smtpd_session *ss = arg;
    char why[256];

    if (ss->state == SESSION_TLS) {
        if (what & BEV_EVENT_CONNECTED) {
            starttls_established(ss);
            session_input(ss); /* what came with the handshake's end */
            return;
        }
        tls_session_error(bev, why, sizeof(why));
        starttls_failed(ss, why);
        session_free(ss);
        return;
    }
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

static const char *const count_names[COUNT_MAX] = {
    "ehlo", "helo", "starttls", "auth", "mail", "rcpt", "data",    "bdat",
    "rset", "noop", "quit",     "vrfy", "help", "etrn", "unknown",
};

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
        tls_session_free(ss->bev); /* a plain one too */
    if (ss->delay_ev)
        event_free(ss->delay_ev);
    deadline_free(ss);
    auth_session_end(ss);
    session_transaction_reset(ss);
    free(ss->rcpt);
    free(ss->helo);
    free(ss->tls);
    free(ss);
}

/* The session's callbacks, deadlines and limits on its bufferevent. */
static void bev_setup(struct smtpd_session *ss)
{
    long ms = ss->s->cf.timeout_ms;
    struct timeval tmo = {ms / 1000, (ms % 1000) * 1000};

    bufferevent_setcb(ss->bev, read_cb, write_cb, event_cb, ss);
    /* reading has its deadlines (deadline.c); writing a plain timeout */
    bufferevent_set_timeouts(ss->bev, NULL, &tmo);
    bufferevent_setwatermark(ss->bev, EV_READ, 0, SMTPD_INPUT_MAX);
    bufferevent_setwatermark(ss->bev, EV_WRITE, SMTPD_OUTPUT_MAX / 2, 0);
    bufferevent_enable(ss->bev, EV_READ | EV_WRITE);
}

/*
 * The client is known (its name looked up, or not): "connect from",
 * then the greeting, or the TLS handshake that comes before it.
 */
void session_connected(struct smtpd_session *ss)
{
    ss->state = SESSION_COMMAND;
    smtpd_log(ss->s, "connect from %s", ss->client);
    if (ss->wrapped) {
        session_tls_begin(ss);
        return;
    }
    session_greet(ss);
    bufferevent_enable(ss->bev, EV_READ);
    deadline_start(ss);
}

void session_greet(struct smtpd_session *ss)
{
    char greeting[SESSION_REPLY_MAX];

    snprintf(greeting, sizeof(greeting), "220 %s ESMTP sluice\r\n",
             session_hostname(ss));
    session_reply_raw(ss, greeting);
}

/* What was written is out: the connection goes under TLS. */
static void tls_written(struct bufferevent *bev, void *arg)
{
    (void)bev;
    tls_start(arg);
}

static void tls_start(struct smtpd_session *ss)
{
    struct bufferevent *bev = NULL;

    if (ss->s != NULL && ss->s->cf.tls != NULL)
        bev = tls_session_accept(ss->s->cf.tls, ss->bev);
    if (bev == NULL) { /* out of memory, or the certificate went away */
        smtpd_log(ss->s, "warning: cannot start TLS for %s", ss->client);
        session_free(ss);
        return;
    }
    ss->bev = bev;
    ss->output_full = 0; /* everything written before is out */
    bev_setup(ss);
}

void session_tls_begin(struct smtpd_session *ss)
{
    struct timeval now = {0, 0};

    ss->state = SESSION_TLS;
    deadline_start(ss); /* smtpd_starttls_timeout, from now */
    bufferevent_disable(ss->bev, EV_READ);
    if (evbuffer_get_length(bufferevent_get_output(ss->bev)) == 0) {
        /* nothing to wait for; not from inside the caller, though */
        evtimer_add(ss->delay_ev, &now);
        return;
    }
    bufferevent_setcb(ss->bev, NULL, tls_written, event_cb, ss);
    bufferevent_setwatermark(ss->bev, EV_WRITE, 0, 0);
}

struct smtpd_session *session_create(struct smtpd_server *s, int fd,
                                     const struct sockaddr *sa, socklen_t salen,
                                     int tls)
{
    struct smtpd_session *ss = xmalloc(sizeof(*ss));

    memset(ss, 0, sizeof(*ss));
    ss->s = s;
    if (salen > sizeof(ss->addr))
        salen = sizeof(ss->addr);
    memcpy(&ss->addr, sa, salen);
    smtpd_client_text(sa, salen, ss->addr_text, sizeof(ss->addr_text),
                      ss->client, sizeof(ss->client));
    snprintf(ss->name, sizeof(ss->name), "unknown");
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
    bev_setup(ss);
    ss->wrapped = tls;
    if (!peer_start(ss))
        session_connected(ss);
    return ss;
}

void session_shutdown(struct smtpd_session *ss)
{
    if (ss->pending || ss->state == SESSION_CLOSING)
        return; /* session_wait_end() says it once the answer is out */
    if (ss->state == SESSION_TLS) { /* a reply could not be read */
        session_free(ss);
        return;
    }
    if (ss->state == SESSION_LOOKUP) {
        peer_cancel(ss);
        evtimer_del(ss->delay_ev);
    }
    if (ss->state == SESSION_WAIT) {
        evtimer_del(ss->delay_ev);
        if (ss->auth_ev)
            evtimer_del(ss->auth_ev);
    }
    session_reply_final(ss, "421 4.3.2 %s Service shutting down",
                        session_hostname(ss));
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
        tls_session_free(ss->bev);
        ss->bev = NULL;
    }
    /* the event base may go before a late store answer frees the rest */
    if (ss->delay_ev) {
        event_free(ss->delay_ev);
        ss->delay_ev = NULL;
    }
    deadline_free(ss);
    auth_session_end(ss); /* its timer and back end go with the base */
    if (!ss->pending)
        session_free(ss);
}
