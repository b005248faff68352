/*
 * NAME
 *	protocol 3 - the SMTP and LMTP client: one delivery's dialogue
 * SYNOPSIS
 *	#include "deliver/smtp_impl.h"
 *
 *	void	protocol_reply(struct deliver_session *s)
 *	void	protocol_handshake_passed(struct deliver_session *s)
 *	void	protocol_rcpt_set_rest(struct deliver_session *s,
 *			enum deliver_status status, int code,
 *			const char *enhanced, const char *text)
 * DESCRIPTION
 *	A delivery walks these states, each with its timeout:
 *
 *	CONNECT -> GREETING -> EHLO [-> HELO] [-> STARTTLS -> TLS -> EHLO]
 *	[-> AUTH] -> MAIL -> RCPT... -> DATA -> DOT -> QUIT
 *
 *	A probe (address verification) stops after the RCPT replies: each
 *	recipient's RCPT reply is its result, then QUIT; DATA is never
 *	sent, not even pipelined.
 *
 *	connection.c connects and reads; protocol_reply() takes each
 *	complete reply (s->reply) to the state's function, which writes
 *	the next command. With PIPELINING, MAIL, every RCPT and DATA are
 *	written at once and their replies taken in order; a MAIL rejection
 *	then leaves the RCPT and DATA replies to be read and ignored
 *	(skip). Without it each command waits for its reply. LMTP (LHLO)
 *	answers the end of data once per accepted recipient.
 *
 *	protocol_ehlo_done() follows the last EHLO/HELO: SMTP AUTH when
 *	the server needs credentials (auth.c), then
 *	protocol_handshake_passed(). That follows AUTH, or a connection
 *	taken from the cache: a message larger than the server's SIZE is
 *	refused (552 5.3.4); a message whose sender asked for SMTPUTF8
 *	and that needs it (a UTF-8 sender, recipient of this delivery or
 *	header field: the reference's smtputf8 rule) is refused by a
 *	server that does not offer SMTPUTF8 ("SMTPUTF8 is required, but
 *	was not offered by host NAME[ADDR]", 5.6.7), else the transaction
 *	starts, with SMTPUTF8 on MAIL when the sender asked and the server
 *	offers it. After the end of
 *	data the connection goes back to the cache when its limits allow,
 *	else QUIT. A reply's code classifies it: 2xx delivered, 4xx
 *	deferred, 5xx bounced. protocol_rcpt_set_rest() gives every
 *	recipient not yet decided the same outcome.
 */

#include "deliver/smtp_impl.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

/* Set a recipient's final result, once. */
static void rcpt_set(struct deliver_session *s, size_t i,
                     enum deliver_status status, int code, const char *enhanced,
                     const char *text)
{
    struct deliver_rcpt_result *r = &s->res->rcpt[i];

    if (s->decided[i])
        return;
    s->decided[i] = 1;
    r->status = status;
    r->code = code;
    if (enhanced && *enhanced)
        snprintf(r->enhanced, sizeof(r->enhanced), "%s", enhanced);
    else
        snprintf(r->enhanced, sizeof(r->enhanced), "%c.0.0",
                 status == DELIVER_OK       ? '2'
                 : status == DELIVER_BOUNCE ? '5'
                                            : '4');
    free(r->text);
    r->text = xstrdup(text ? text : "");
}

/* Every undecided recipient gets the same outcome. */
void protocol_rcpt_set_rest(struct deliver_session *s,
                            enum deliver_status status, int code,
                            const char *enhanced, const char *text)
{
    for (size_t i = 0; i < s->req.nrcpt; i++)
        rcpt_set(s, i, status, code, enhanced, text);
}

/* "host X[addr] said: 550 5.1.1 text (in reply to RCPT TO command)" */
static void reply_text(struct deliver_session *s, const char *command,
                       char *buf, size_t len)
{
    snprintf(buf, len, "host %s said: %d %s (in reply to %s command)", s->peer,
             s->reply.code, s->reply.text ? s->reply.text : "", command);
}

static enum deliver_status reply_status(int code)
{
    return code < 400   ? DELIVER_OK
           : code < 500 ? DELIVER_DEFER
                        : DELIVER_BOUNCE;
}

static void send_line(struct deliver_session *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void send_line(struct deliver_session *s, const char *fmt, ...)
{
    struct evbuffer *out = bufferevent_get_output(s->bev);
    va_list ap;

    va_start(ap, fmt);
    evbuffer_add_vprintf(out, fmt, ap);
    va_end(ap);
    evbuffer_add(out, "\r\n", 2);
}

static void send_quit(struct deliver_session *s)
{
    s->state = ST_QUIT;
    send_line(s, "QUIT");
    connection_timer_arm(s, s->req.timeouts.quit);
}

static void send_mail(struct deliver_session *s)
{
    const char *body = util_blob_data(s->req.body);
    size_t size = util_blob_len(s->req.body);
    char extra[512] = "";
    size_t n = 0;
    int eightbit = 0;

    for (size_t i = 0; i < size && !eightbit; i++)
        eightbit = (unsigned char)body[i] >= 0x80;
    /* RFC 6152: no 8BITMIME, no 8-bit body; what is declared 8-bit MIME
     * goes out quoted-printable, as Postfix converts it. */
    s->downgrade = 0;
    s->downgraded.len = 0;
    if (eightbit && !(s->features & SMTP_EXT_8BITMIME) &&
        s->req.mime_conversion &&
        smtp_mime_downgrade(body, size, &s->downgraded) > 0) {
        s->downgrade = 1;
        size = s->downgraded.len;
    }
    if (s->features & SMTP_EXT_SIZE)
        n += snprintf(extra + n, sizeof(extra) - n, " SIZE=%zu", size);
    if (eightbit && (s->features & SMTP_EXT_8BITMIME))
        n += snprintf(extra + n, sizeof(extra) - n, " BODY=8BITMIME");
    if ((s->features & SMTP_EXT_DSN) && s->req.ret)
        n += snprintf(extra + n, sizeof(extra) - n, " RET=%s",
                      s->req.ret == 1 ? "FULL" : "HDRS");
    if ((s->features & SMTP_EXT_DSN) && s->req.envid)
        n += snprintf(extra + n, sizeof(extra) - n, " ENVID=%s", s->req.envid);
    if ((s->features & SMTP_EXT_SMTPUTF8) && s->req.smtputf8)
        snprintf(extra + n, sizeof(extra) - n, " SMTPUTF8");
    /* The server takes NOTIFY on: success reports are its to send. */
    s->res->dsn_passed =
        s->req.proto == DELIVER_SMTP && (s->features & SMTP_EXT_DSN);
    s->state = ST_MAIL;
    send_line(s, "MAIL FROM:<%s>%s", s->req.sender, extra);
    connection_timer_arm(s, s->req.timeouts.mail);
}

static void send_rcpt(struct deliver_session *s, size_t i)
{
    const struct deliver_rcpt *r = &s->req.rcpt[i];
    char extra[600] = "";
    size_t n = 0;

    if ((s->features & SMTP_EXT_DSN) && r->notify) {
        static const char *const names[] = {"NEVER", "SUCCESS", "FAILURE",
                                            "DELAY"};
        const char *sep = " NOTIFY=";

        for (int b = 0; b < 4; b++)
            if (r->notify & (1u << b)) {
                n += snprintf(extra + n, sizeof(extra) - n, "%s%s", sep,
                              names[b]);
                sep = ",";
            }
    }
    if ((s->features & SMTP_EXT_DSN) && r->orcpt)
        snprintf(extra + n, sizeof(extra) - n, " ORCPT=%s", r->orcpt);
    send_line(s, "RCPT TO:<%s>%s", r->address, extra);
}

/* The transaction: pipelined in one write, or MAIL first. */
static void start_transaction(struct deliver_session *s)
{
    s->handshake_us = util_clock_mono_us();
    s->handshake_ok = 1;
    s->res->hop_ok = 1;
    s->pipelined = (s->features & SMTP_EXT_PIPELINING) != 0;
    send_mail(s);
    if (s->pipelined) {
        for (size_t i = 0; i < s->req.nrcpt; i++)
            send_rcpt(s, i);
        if (!s->req.probe)
            send_line(s, "DATA");
    }
}

static void emit_body(void *ctx, const char *p, size_t len)
{
    evbuffer_add(ctx, p, len);
}

static void send_body(struct deliver_session *s)
{
    struct smtp_stuffer st = {0};
    struct evbuffer *out = bufferevent_get_output(s->bev);

    st.line_limit = s->req.line_limit;
    if (s->downgrade)
        smtp_stuff(&st, s->downgraded.data, s->downgraded.len, emit_body, out);
    else
        smtp_stuff(&st, util_blob_data(s->req.body), util_blob_len(s->req.body),
                   emit_body, out);
    smtp_stuff_end(&st, emit_body, out);
    s->res->lines_folded = st.folded;
    s->state = ST_DOT;
    s->dot_replied = 0;
    connection_timer_arm(s,
                         s->req.timeouts.data_xfer + s->req.timeouts.data_done);
}

static void on_greeting(struct deliver_session *s)
{
    char reason[600];

    if (s->reply.code / 100 != 2) {
        snprintf(reason, sizeof(reason), "host %s refused to talk to me: %d %s",
                 s->peer, s->reply.code, s->reply.text);
        connection_next_address(s, reason);
        return;
    }
    s->state = ST_EHLO;
    send_line(s, "%s %s", s->req.proto == DELIVER_LMTP ? "LHLO" : "EHLO",
              s->req.helo_name);
    connection_timer_arm(s, s->req.timeouts.helo);
}

/*
 * The handshake is done (or skipped, on a cached connection): refuse a
 * message the server said it cannot take, or start the transaction.
 */
/*
 * Does this delivery need SMTPUTF8? The reference's rule (smtp.h,
 * DELIVERY_REQUIRES_SMTPUTF8): the sender asked for it, and the
 * sender, a recipient of this delivery or a header field is not
 * ASCII. Otherwise it goes to a server without SMTPUTF8 as it is.
 */
static int utf8_required(const struct deliver_session *s)
{
    const char *body = util_blob_data(s->req.body);

    if (!s->req.smtputf8)
        return 0;
    if (!smtp_ascii(s->req.sender, strlen(s->req.sender)))
        return 1;
    for (size_t i = 0; i < s->req.nrcpt; i++)
        if (!smtp_ascii(s->req.rcpt[i].address, strlen(s->req.rcpt[i].address)))
            return 1;
    return body != NULL && !smtp_header_ascii(body, util_blob_len(s->req.body));
}

/* The handshake is over: a transaction, or why this server cannot. */
static int server_unfit(struct deliver_session *s, char *reason, size_t len)
{
    int code = 552;
    const char *dsn = "5.3.4";

    if ((s->features & SMTP_EXT_SIZE) && s->size_limit &&
        util_blob_len(s->req.body) > s->size_limit) {
        snprintf(reason, len,
                 "message size %zu exceeds size limit %llu of server %s",
                 util_blob_len(s->req.body), (unsigned long long)s->size_limit,
                 s->peer);
    } else if (!(s->features & SMTP_EXT_SMTPUTF8) && utf8_required(s)) {
        /* RFC 6531, 3.2: no downgrade; the reference's words (3.10) */
        snprintf(reason, len,
                 "SMTPUTF8 is required, but was not offered by host %s",
                 s->peer);
        code = 550;
        dsn = "5.6.7";
    } else {
        return 0;
    }
    s->handshake_us = util_clock_mono_us();
    s->handshake_ok = 1;
    s->res->hop_ok = 1;
    protocol_rcpt_set_rest(s, DELIVER_BOUNCE, code, dsn, reason);
    send_quit(s);
    return 1;
}

void protocol_handshake_passed(struct deliver_session *s)
{
    char reason[600];

    if (server_unfit(s, reason, sizeof(reason)))
        return;
    start_transaction(s);
}

/* The last EHLO/HELO: AUTH when credentials say so, then the rest. */
void protocol_ehlo_done(struct deliver_session *s)
{
    if (!auth_out_after_ehlo(s))
        protocol_handshake_passed(s);
}

static void on_ehlo(struct deliver_session *s)
{
    char reason[600];

    if (s->reply.code / 100 == 2) {
        s->features = smtp_ehlo_features(&s->reply, &s->size_limit);
        s->auth_offered = smtp_ehlo_auth(&s->reply);
        if (!starttls_out_after_ehlo(s))
            protocol_ehlo_done(s);
        return;
    }
    if (s->req.proto == DELIVER_SMTP && s->state == ST_EHLO) {
        s->state = ST_HELO;
        send_line(s, "HELO %s", s->req.helo_name);
        connection_timer_arm(s, s->req.timeouts.helo);
        return;
    }
    snprintf(reason, sizeof(reason), "host %s refused to talk to me: %d %s",
             s->peer, s->reply.code, s->reply.text);
    connection_next_address(s, reason);
}

static void data_rejected(struct deliver_session *s, const char *command)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    reply_text(s, command, text, sizeof(text));
    for (size_t i = 0; i < s->req.nrcpt; i++)
        if (s->accepted_flag[i])
            rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                     s->reply.enhanced, text);
}

static void end_refused(struct deliver_session *s);
static void end_transaction(struct deliver_session *s);

static void after_rcpts(struct deliver_session *s)
{
    if (s->req.probe) {
        send_quit(s); /* the RCPT replies were the answer: never DATA */
    } else if (s->pipelined) {
        s->state = ST_DATA; /* DATA was sent with the RCPTs */
        connection_timer_arm(s, s->req.timeouts.data_init);
    } else if (s->accepted > 0) {
        s->state = ST_DATA;
        send_line(s, "DATA");
        connection_timer_arm(s, s->req.timeouts.data_init);
    } else {
        end_refused(s);
    }
}

static void on_mail(struct deliver_session *s)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->reply.code / 100 == 2) {
        s->state = ST_RCPT;
        s->rcpt_replied = 0;
        if (!s->pipelined)
            send_rcpt(s, 0);
        connection_timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    reply_text(s, "MAIL FROM", text, sizeof(text));
    protocol_rcpt_set_rest(s, reply_status(s->reply.code), s->reply.code,
                           s->reply.enhanced, text);
    if (s->pipelined) {
        /* the RCPT replies, and DATA's unless this is a probe */
        s->skip = s->req.nrcpt + (s->req.probe ? 0 : 1);
        s->state = ST_QUIT;
        connection_timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    end_refused(s);
}

static void on_rcpt(struct deliver_session *s)
{
    size_t i = s->rcpt_replied++;
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->reply.code / 100 == 2 && s->req.probe) {
        /* the log says "status=deliverable (250 2.1.5 Ok)" */
        snprintf(text, sizeof(text), "%d %s", s->reply.code, s->reply.text);
        rcpt_set(s, i, DELIVER_OK, s->reply.code, s->reply.enhanced, text);
    } else if (s->reply.code / 100 == 2) {
        s->accepted_flag[i] = 1;
        s->accepted++;
    } else {
        reply_text(s, "RCPT TO", text, sizeof(text));
        rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                 s->reply.enhanced, text);
    }
    if (s->rcpt_replied < s->req.nrcpt) {
        if (!s->pipelined)
            send_rcpt(s, s->rcpt_replied);
        connection_timer_arm(s, s->req.timeouts.rcpt);
        return;
    }
    after_rcpts(s);
}

static void on_data(struct deliver_session *s)
{
    if (s->reply.code == 354 && s->accepted > 0) {
        send_body(s);
        return;
    }
    if (s->reply.code == 354) {
        /* Pipelined DATA with no recipient left: end it empty. */
        evbuffer_add(bufferevent_get_output(s->bev), ".\r\n", 3);
        s->skip = 1;
        s->state = ST_QUIT;
        connection_timer_arm(s, s->req.timeouts.data_done);
        return;
    }
    if (s->accepted > 0)
        data_rejected(s, "DATA");
    end_refused(s);
}

/* May the connection be cached now (under the limits it returns)? */
static const struct deliver_cache_params *
may_cache(const struct deliver_session *s)
{
    const struct deliver_cache_params *limits;

    if (s->req.cache == NULL || !s->req.cache_store ||
        starttls_out_cache_key(s, s->tls_on) == NULL || s->auth_long)
        return NULL;
    limits = deliver_cache_limits(s->req.cache, &s->req);
    return deliver_cache_may_keep(limits, s->born_us, s->uses) ? limits : NULL;
}

/*
 * A transaction that sent no message (MAIL, every RCPT or DATA refused):
 * the connection is sound, so one that is to be kept is reset (RSET) and
 * kept, as the reference's client does; otherwise QUIT.
 */
static void end_refused(struct deliver_session *s)
{
    if (s->req.probe || may_cache(s) == NULL) {
        send_quit(s);
        return;
    }
    s->state = ST_RSET;
    send_line(s, "RSET");
    connection_timer_arm(s, s->req.timeouts.quit);
}

/* The RSET reply: a clean state to cache, else goodbye. */
static void on_rset(struct deliver_session *s)
{
    if (s->reply.code / 100 == 2)
        end_transaction(s);
    else
        send_quit(s);
}

/*
 * After the end-of-data replies the connection is between transactions:
 * keep it for the next delivery to this destination, or say QUIT.
 */
static void end_transaction(struct deliver_session *s)
{
    struct deliver_conn conn;
    const struct deliver_cache_params *limits;
    char *key, *endpoint;

    if ((limits = may_cache(s)) == NULL) {
        send_quit(s);
        return;
    }
    memset(&conn, 0, sizeof(conn));
    conn.bev = s->bev;
    snprintf(conn.peer, sizeof(conn.peer), "%s", s->peer);
    snprintf(conn.relay, sizeof(conn.relay), "%s", s->res->relay);
    conn.features = s->features;
    conn.size_limit = s->size_limit;
    conn.born_us = s->born_us;
    conn.uses = s->uses;
    conn.tls = s->res->tls;
    snprintf(conn.auth_user, sizeof(conn.auth_user), "%s", s->auth_user);
    s->bev = NULL; /* the cache's now */
    snprintf(conn.endpoint, sizeof(conn.endpoint), "%s", s->endpoint);
    /* apart per user: never a transaction under another's login */
    key = auth_out_cache_key(s, s->tls_on, s->auth_user);
    endpoint = auth_out_endpoint_key(s, s->tls_on, s->auth_user);
    deliver_cache_put(s->req.cache, limits, key, endpoint, &conn);
    free(key);
    free(endpoint);
    connection_finish(s);
}

static void on_dot(struct deliver_session *s)
{
    char text[SMTP_REPLY_MAX_TEXT / 8];

    if (s->req.proto == DELIVER_LMTP) {
        /* One reply per accepted recipient, in order. */
        size_t seen = 0;

        /* As for SMTP: the reply alone when sent, quoted when not. */
        if (s->reply.code / 100 == 2)
            snprintf(text, sizeof(text), "%d %s", s->reply.code, s->reply.text);
        else
            snprintf(text, sizeof(text),
                     "host %s said: %d %s (in reply to end of "
                     "DATA command)",
                     s->peer, s->reply.code, s->reply.text);
        for (size_t i = 0; i < s->req.nrcpt; i++) {
            if (!s->accepted_flag[i])
                continue;
            if (seen++ == s->dot_replied) {
                rcpt_set(s, i, reply_status(s->reply.code), s->reply.code,
                         s->reply.enhanced, text);
                break;
            }
        }
        if (++s->dot_replied < s->accepted) {
            connection_timer_arm(s, s->req.timeouts.data_done);
            return;
        }
    } else if (s->reply.code / 100 == 2) {
        /* The log says "status=sent (250 2.0.0 Ok: queued as X)". */
        snprintf(text, sizeof(text), "%d %s", s->reply.code, s->reply.text);
        for (size_t i = 0; i < s->req.nrcpt; i++)
            if (s->accepted_flag[i])
                rcpt_set(s, i, DELIVER_OK, s->reply.code, s->reply.enhanced,
                         text);
    } else {
        data_rejected(s, "end of DATA");
    }
    end_transaction(s);
}

void protocol_reply(struct deliver_session *s)
{
    if (s->reused && s->replies == 0 && s->reply.code == 421) {
        /*
         * The server gave up on the idle connection as we took it from
         * the cache: its 421 crossed our MAIL on the wire. Nothing was
         * decided, so this is a dead cached connection, not a refusal.
         */
        connection_reconnect(s);
        return;
    }
    s->replies++;
    if (s->skip > 0) {
        if (--s->skip == 0)
            send_quit(s);
        return;
    }
    switch (s->state) {
    case ST_GREETING:
        on_greeting(s);
        break;
    case ST_EHLO:
    case ST_HELO:
        on_ehlo(s);
        break;
    case ST_STARTTLS:
        starttls_out_reply(s);
        break;
    case ST_AUTH:
        auth_out_reply(s);
        break;
    case ST_MAIL:
        on_mail(s);
        break;
    case ST_RCPT:
        on_rcpt(s);
        break;
    case ST_DATA:
        on_data(s);
        break;
    case ST_DOT:
        on_dot(s);
        break;
    case ST_RSET:
        on_rset(s);
        break;
    case ST_QUIT:
        connection_finish(s);
        break;
    default:
        break;
    }
}
