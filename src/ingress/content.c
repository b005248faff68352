/*
 * NAME
 *	content 3 - the content of a message an SMTP session receives
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	void	content_begin(struct smtpd_session *ss, int mode)
 *	int	content_read_data(struct smtpd_session *ss,
 *			struct evbuffer *in)
 *	int	content_read_chunk(struct smtpd_session *ss,
 *			struct evbuffer *in)
 *	int	content_bare_command(struct smtpd_session *ss)
 *	void	content_drop(struct smtpd_session *ss)
 * DESCRIPTION
 *	content_begin() starts a message's content, at DATA (mode
 *	SMTP_DATA_DOT) or the first BDAT (SMTP_DATA_RAW): its queue id,
 *	its Received: header (receive.c), the reader and the bare line end
 *	mode for this client. content_read_data() reads DATA content from
 *	in up to the CRLF.CRLF, content_read_chunk() the rest of a BDAT
 *	chunk; each returns 1 when it finished (and answered), 0 when it
 *	needs more input. content_bare_command() applies the bare line end
 *	policy to a command line that ends in a bare LF, and returns 1 when
 *	the line is refused (answered, not to be run). content_drop()
 *	frees the content read so far and gives its memory back.
 *
 *	In DATA, an end of data that is not CRLF.CRLF, or a bare CR or LF
 *	anywhere, is the smuggling family of attacks (see smtp/data.c): by
 *	default (smtpd_forbid_bare_newline = disconnect) the answer is
 *	"521 5.5.2 ... bare <LF> received" and the connection is closed,
 *	since what follows cannot be trusted. In BDAT the chunk sizes say
 *	where a chunk ends, so a bare line end fails only the transaction
 *	("554 5.6.0"). The other modes, per client (the exclusions
 *	normalize): normalize (yes, no) takes a bare LF as a line end,
 *	stored as CRLF, in commands and content, while only CRLF.CRLF ends
 *	the data; note does the same and adds "notes=bare_lf" to the
 *	disconnect line; reject answers a command line ending in a bare LF,
 *	and a message with one (read to its CRLF.CRLF), with "CODE 5.5.2
 *	... bare <LF> received", CODE the reject code (550; 521 also ends
 *	the session), and the session goes on. In those three modes a bare
 *	CR in content is refused the same way: it is no line end, and it
 *	is never stored. The bytes of a chunk are always read to its end,
 *	even of a chunk refused, so that message content is never read as
 *	commands. A NUL in the content is refused at its end, "554 5.6.0
 *	Error: NUL character in message header" (or body; smtp/data.c),
 *	unless message_strip_characters removes body NULs. Content beyond
 *	smtpd_memory_limit, for all sessions together, is dropped and its
 *	message refused at the end with "452 4.3.1". A message larger than
 *	message_size_limit is read to its end and refused with 552 5.3.4.
 *
 *	Content is held in memory up to smtpd_staging_threshold bytes (the
 *	Received: header included); past it, what the session holds and
 *	everything after goes to a staging file (staging.c) and the memory
 *	is given back, so that a session holds at most the threshold and
 *	only content in memory counts against smtpd_memory_limit. A staging file that cannot be written (a full disk) or
 *	read back fails the message alone, at its end, with "451 4.3.0
 *	Error: queue file write error" (logged "warning: ID: CLIENT:
 *	staging file PATH: write: REASON"); a message refused for any
 *	reason, or a session that ends mid-DATA, removes its file.
 *
 *	Finished, a message is refused as a mail loop ("554 5.4.6 Error:
 *	too many hops") when it has more Received: headers than
 *	hopcount_limit; otherwise it gets what always_add_missing_headers
 *	adds and goes to the store; the answer "250 2.0.0 Ok: queued as ID"
 *	is written only when the store says the message is durable, "451
 *	4.3.0" or "452 4.3.1" when it could not be stored.
 *
 *	Log lines: "warning: bare <LF> received after DATA from CLIENT:
 *	disconnected" (or "message rejected"; or <CR>; or BDAT), "warning:
 *	bare <LF> received in a command from CLIENT: rejected", "NOQUEUE:
 *	reject: DATA from CLIENT: 554 5.6.0 Error: NUL character in message
 *	header; from=<S> proto=ESMTP helo=<H>", "NOQUEUE: reject: DATA from
 *	CLIENT: 554 5.4.6 Error: too many hops (N Received: headers);
 *	from=<S> proto=ESMTP helo=<H>".
 */

#include "ingress/smtpd_impl.h"

#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------- memory */

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

void content_drop(struct smtpd_session *ss)
{
    held_release(ss);
    util_buf_free(&ss->msg);
    staging_discard(ss->staging);
    ss->staging = NULL;
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
    content_drop(ss);
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

/* ------------------------------------------------------------ staging */

/*
 * A staging write failed (a full disk): the content is dropped as it
 * comes and the message gets 451 at its end. Only this transaction
 * suffers; the session, and every other, goes on.
 */
static void staging_fail(struct smtpd_session *ss, const char *why)
{
    smtpd_log(ss->s, "warning: %s: %s: %s", ss->id, ss->client, why);
    content_drop(ss);
    ss->staging_failed = 1;
}

/*
 * Past smtpd_staging_threshold, the content goes to a staging file
 * (staging.c): what the session held goes first, and is given back.
 * What a session holds in memory is so at most the threshold, whatever
 * the size of its message.
 */
static int staging_due(const struct smtpd_session *ss, size_t n)
{
    const struct smtpd_server *s = ss->s;

    return s->staging_dir != NULL && ss->held + n > s->cf.staging_threshold;
}

static void staging_begin(struct smtpd_session *ss)
{
    char why[512];

    ss->staging = staging_create(ss->s->staging_dir, ss->id, why, sizeof(why));
    if (ss->staging == NULL) {
        staging_fail(ss, why);
        return;
    }
    if (staging_append(ss->staging, ss->msg.data, ss->msg.len, why,
                       sizeof(why)) < 0) {
        staging_fail(ss, why);
        return;
    }
    held_release(ss);
    util_buf_free(&ss->msg);
}

static void staging_add(struct smtpd_session *ss, const char *p, size_t n)
{
    char why[512];

    if (ss->staging == NULL)
        staging_begin(ss);
    if (ss->staging != NULL &&
        staging_append(ss->staging, p, n, why, sizeof(why)) < 0)
        staging_fail(ss, why);
}

static void emit(void *ctx, const char *p, size_t n)
{
    struct smtpd_session *ss = ctx;

    if (ss->staging_failed)
        return;
    if (ss->staging != NULL || (!ss->memory_full && staging_due(ss, n))) {
        staging_add(ss, p, n);
        return;
    }
    if (!held_room(ss, n))
        return;
    util_buf_add(&ss->msg, p, n);
    held_add(ss, n);
}

/* DATA or the first BDAT: the queue id, the Received: header. */
void content_begin(struct smtpd_session *ss, int mode)
{
    spool_id_new(ss->id, spool_now());
    receive_received(&ss->msg, ss, session_hostname(ss), time(NULL));
    held_add(ss, ss->msg.len);
    smtp_data_init(&ss->reader, mode, ss->s->cf.size_limit);
    memcpy(ss->reader.strip, ss->s->cf.strip, sizeof(ss->reader.strip));
    ss->bare_mode = smtpd_bare_mode(ss);
    if (ss->bare_mode != BARE_DISCONNECT)
        ss->reader.newline = SMTP_NEWLINE_NORMALIZE;
}

/* ------------------------------------------------------------ storing */

static void stored(void *conn, int status, const char *id, const char *why)
{
    struct smtpd_session *ss = conn;

    if (session_callback_orphaned(ss))
        return;
    if (status == 0) {
        session_reply(ss, "250 2.0.0 Ok: queued as %s", id);
        ss->errors = 0;
        ss->junk = 0;
    } else {
        smtpd_store_failed(ss->s, why);
        if (why && strstr(why, "full"))
            session_reply(ss, "452 4.3.1 Insufficient system storage: %s", why);
        else
            session_reply(ss, "451 4.3.0 Error: queue file write error: %s",
                          why ? why : "unknown");
    }
    session_transaction_reset(ss);
    session_wait_end(ss);
}

/*
 * Refuse the content with reply, logged as Postfix logs a rejection with
 * detail (for the log only) after it; the transaction ends, the session
 * goes on.
 */
static void content_refuse(struct smtpd_session *ss, const char *reply,
                           const char *detail)
{
    smtpd_log(ss->s,
              "NOQUEUE: reject: %s from %s: %s%s; from=<%s> proto=%s "
              "helo=<%s>",
              ss->chunking ? "BDAT" : "DATA", ss->client, reply, detail,
              ss->sender, ss->esmtp ? "ESMTP" : "SMTP", ss->helo);
    session_reply(ss, "%s", reply);
    session_transaction_reset(ss);
}

/*
 * A message that has passed through more relays than hopcount_limit
 * (its Received: headers, ours included, as Postfix counts them) is in
 * a mail loop: refused, never stored, so that it stops going round.
 */
static int looping(struct smtpd_session *ss, const struct submit_input *in)
{
    char **values;
    size_t hops = submit_header_get(in, "Received", &values);
    char detail[64];

    submit_header_values_free(values);
    if ((long)hops <= ss->s->cf.hopcount_limit)
        return 0;
    snprintf(detail, sizeof(detail), " (%zu Received: headers)", hops);
    content_refuse(ss, "554 5.4.6 Error: too many hops", detail);
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
    if (ss->reader.nul == 0)
        return 0;
    content_refuse(ss,
                   ss->reader.nul == SMTP_DATA_NUL_HEADER
                       ? "554 5.6.0 Error: NUL character in message header"
                       : "554 5.6.0 Error: NUL character in message body",
                   "");
    return 1;
}

/* A staging file that cannot be written or read: this message only. */
static void staging_refuse(struct smtpd_session *ss, const char *why)
{
    if (why != NULL)
        smtpd_log(ss->s, "warning: %s: %s: %s", ss->id, ss->client, why);
    content_refuse(ss, "451 4.3.0 Error: queue file write error", "");
}

/* Refused at its end: a loop, or a staged message that cannot be read. */
static int refused_at_end(struct smtpd_session *ss)
{
    struct util_buf head = UTIL_BUF_INIT;
    struct submit_input in;
    char why[512];
    int refused;

    if (receive_head(ss, &head, &in, why, sizeof(why)) < 0) {
        util_buf_free(&head);
        staging_refuse(ss, why);
        return 1;
    }
    refused = looping(ss, &in);
    util_buf_free(&head);
    return refused;
}

static void message_store(struct smtpd_session *ss)
{
    struct smtpd_server *s = ss->s;
    struct spool_msg *m;
    char origin[128 + 2 * SASL_FIELD_MAX], why[512];

    if (ss->memory_full) {
        session_reply(
            ss, "452 4.3.1 Insufficient system resources, try again later");
        session_transaction_reset(ss);
        return;
    }
    if (ss->staging_failed) {
        staging_refuse(ss, NULL); /* logged when it failed */
        return;
    }
    if (refused_at_end(ss))
        return;
    held_release(ss); /* the spool's from here on */
    m = receive_message(ss, s->cf.hostname, s->cf.add_missing_headers,
                        time(NULL), why, sizeof(why));
    if (m == NULL) {
        staging_refuse(ss, why);
        return;
    }
    if (ss->sasl_username != NULL) /* Postfix's form */
        snprintf(origin, sizeof(origin),
                 "client=%s, sasl_method=%s, sasl_username=%s", ss->client,
                 ss->sasl_method, ss->sasl_username);
    else
        snprintf(origin, sizeof(origin), "client=%s", ss->client);
    session_wait_begin(ss);
    ss->pending = 1;
    s->ops.store(s->ops.ctx, m, origin, stored, ss);
}

/* --------------------------------------------------------------- input */

/* The reply to a bare line end, with smtpd_forbid_bare_newline_reject_code:
 * 521 ends the session (Postfix: "521 to disconnect"). */
static void bare_reply(struct smtpd_session *ss, const char *what)
{
    long code = ss->s->cf.bare_code;

    if (code == 521)
        session_reply_final(ss, "521 5.5.2 %s Error: bare %s received",
                            session_hostname(ss), what);
    else
        session_reply(ss, "%ld 5.5.2 %s Error: bare %s received", code,
                      session_hostname(ss), what);
}

/*
 * A command line that ends in a bare LF: run (the default, normalize,
 * note) or refused (reject). No content follows a command, so taking
 * the LF as its end smuggles nothing; reject is for operators who want
 * no bare line end at all. Returns 1 when the line is refused.
 */
int content_bare_command(struct smtpd_session *ss)
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

static void bare_line_end(struct smtpd_session *ss, int rc)
{
    const char *what = rc == SMTP_DATA_BARE_LF ? "<LF>" : "<CR>";

    smtpd_log(ss->s,
              "warning: bare %s received after DATA from %s: disconnected",
              what, ss->client);
    ss->counts[COUNT_DATA][0]--;
    session_reply_final(ss, "521 5.5.2 %s Error: bare %s received",
                        session_hostname(ss), what);
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
    session_transaction_reset(ss);
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
        session_reply(ss, "552 5.3.4 Message size exceeds fixed limit");
        session_transaction_reset(ss);
        return;
    }
    if (nul_refused(ss)) {
        ss->counts[COUNT_DATA][0]--;
        return;
    }
    message_store(ss);
}

int content_read_data(struct smtpd_session *ss, struct evbuffer *in)
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

static void chunk_done(struct smtpd_session *ss)
{
    int rc = ss->reader_error;

    ss->state = SESSION_COMMAND;
    if (ss->chunk_skip) {
        session_reply(ss, "%s", ss->chunk_reply);
        ss->chunk_skip = 0;
        return;
    }
    if (rc == 0 && ss->chunk_last)
        rc = smtp_data_finish(&ss->reader, emit, ss);
    if (rc < 0) {
        session_reply(ss, "554 5.6.0 Error: bare %s in message content",
                      rc == SMTP_DATA_BARE_LF ? "<LF>" : "<CR>");
        session_transaction_reset(ss);
    } else if (bare_refused(ss)) {
        return;
    } else if (ss->reader.too_big) {
        session_reply(ss, "552 5.3.4 Message size exceeds fixed limit");
        session_transaction_reset(ss);
    } else if (!ss->chunk_last) {
        ss->counts[COUNT_BDAT][0]++;
        session_reply(ss, "250 2.0.0 Ok: %llu bytes",
                      (unsigned long long)ss->reader.size);
    } else if (nul_refused(ss)) {
        return;
    } else {
        ss->counts[COUNT_BDAT][0]++;
        message_store(ss);
    }
}

int content_read_chunk(struct smtpd_session *ss, struct evbuffer *in)
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
