/*
 * NAME
 *	data 3 - message content as an SMTP server reads it (DATA, BDAT)
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	void	smtp_data_init(struct smtp_data_reader *r, int mode,
 *			uint64_t limit)
 *	int	smtp_data_feed(struct smtp_data_reader *r, const char *p,
 *			size_t len, size_t *used, smtp_emit_fn *emit, void *ctx)
 *	int	smtp_data_finish(struct smtp_data_reader *r,
 *			smtp_emit_fn *emit, void *ctx)
 * DESCRIPTION
 *	A reader turns what a client sends after DATA (SMTP_DATA_DOT) or in
 *	BDAT chunks (SMTP_DATA_RAW) into the message in its stored form:
 *	lines ending in CRLF, no dot-stuffing. smtp_data_init() starts one;
 *	limit is the message size limit (0: none).
 *
 *	smtp_data_feed() reads what it can of p[0..len), hands the content
 *	to emit(ctx, bytes, n) in pieces, and sets *used to the bytes it
 *	took. It returns SMTP_DATA_MORE when it wants more input (it took
 *	all of it), SMTP_DATA_DONE at the end of data (DOT mode: the
 *	CRLF.CRLF; what follows is left unread, *used stops after the
 *	final LF, for the pipelined commands), or an error where the
 *	offending byte is p[*used]:
 *
 *	SMTP_DATA_BARE_LF  an LF not after a CR
 *	SMTP_DATA_BARE_CR  a CR not followed by an LF
 *
 *	Lines must end in CRLF, and the end of data is exactly CRLF "."
 *	CRLF: every other spelling of an end (".\n", "\n.\n", ".\r ") is a
 *	bare line end, refused where it is seen rather than read as text.
 *	That is the defence against SMTP smuggling: a server that took one
 *	of them as an end, or as text, while the next server in the chain
 *	reads it the other way, lets a client slip a second message past
 *	the first one's checks. The caller answers an error and closes the
 *	connection: the rest of the stream cannot be trusted.
 *
 *	That is the STRICT reading, r->newline as smtp_data_init() leaves
 *	it. With r->newline = SMTP_NEWLINE_NORMALIZE (the server's
 *	smtpd_forbid_bare_newline = normalize, reject or note) a bare LF
 *	ends a line, stored as CRLF, and a bare CR is dropped; both are
 *	noted in r->bare (SMTP_DATA_SAW_BARE_LF, SMTP_DATA_SAW_BARE_CR) and
 *	reading goes on, for the caller to accept or refuse the message at
 *	its end. The end of data is still CRLF "." CRLF and nothing else: a
 *	"." line that ends in a bare LF, or that began after one, is no end;
 *	it is dropped, as Postfix drops it (it was meant as an end, and is
 *	not one); ".\r " is a bare CR. So no smuggling form ends the data
 *	in either mode, and the stored form has CRLF line ends only.
 *
 *	In DOT mode a line that starts with "." loses that dot (RFC 5321
 *	4.5.2). In RAW mode nothing is unstuffed and nothing ends the data
 *	(the caller counts the chunk sizes); bare line ends are refused
 *	the same way, across chunks too, since the stored message is sent
 *	on with DATA later. smtp_data_finish() ends RAW content: a last
 *	line without CRLF gets one (SMTP_DATA_DONE), a content that ends in
 *	a lone CR is SMTP_DATA_BARE_CR.
 *
 *	r->size counts the content bytes (stored form); once it passes the
 *	limit, r->too_big is set and nothing more is emitted, but reading
 *	goes on to the end, so that the refusal (552) comes in step with
 *	the client.
 *
 *	NUL bytes: a NUL in the header section (before the first empty
 *	line, as stored) sets r->nul to SMTP_DATA_NUL_HEADER, one in the
 *	body SMTP_DATA_NUL_BODY, unless r->strip holds NUL; from then on
 *	nothing more is emitted and reading goes on to the end, as for
 *	too_big, for the caller to refuse the message. r->strip (all zero
 *	after smtp_data_init()) is a set of bytes that are dropped from the
 *	content wherever they are, NUL in the header excepted: Postfix's
 *	message_strip_characters. smtp_data_strip_parse() fills a set from
 *	that parameter's text, with Postfix's escapes (\a \b \f \n \r \t
 *	\v, \ddd in octal, \\; another escaped character is itself); it
 *	refuses CR and LF, whose removal would leave lines without ends,
 *	with a reason in why.
 */

#include "smtp/smtp.h"

#include <stdio.h>
#include <string.h>

enum {
    LINE_START, /* after CRLF, or at the very start */
    IN_LINE,
    SEEN_CR, /* CR inside a line: LF must follow */
    DOT,     /* DOT mode: "." at a line's start */
    DOT_CR,  /* ".CR" at a line's start: LF ends the data */
};

#define OUT_MAX 4096

struct out {
    struct smtp_data_reader *r;
    smtp_emit_fn *emit;
    void *ctx;
    size_t n;
    char buf[OUT_MAX];
};

static void out_flush(struct out *o)
{
    if (o->n > 0)
        o->emit(o->ctx, o->buf, o->n);
    o->n = 0;
}

static void out_put(struct out *o, const char *p, size_t n)
{
    struct smtp_data_reader *r = o->r;

    r->size += n;
    if (r->limit > 0 && r->size > r->limit)
        r->too_big = 1;
    if (r->too_big || r->nul)
        return;
    if (o->n + n > OUT_MAX)
        out_flush(o);
    memcpy(o->buf + o->n, p, n);
    o->n += n;
}

static int in_set(const unsigned char *set, unsigned char c)
{
    return (set[c / 8] >> (c % 8)) & 1;
}

/*
 * One byte of a line's text: dropped when the strip set holds it; a NUL
 * refuses the message (nothing more comes out), except in the body when
 * the set holds it. The header section is what comes before its empty
 * line, as stored (a line that stripping empties ends it).
 */
static void out_char(struct out *o, char c)
{
    struct smtp_data_reader *r = o->r;

    if (c == 0 && !r->body && r->nul == 0)
        r->nul = SMTP_DATA_NUL_HEADER;
    if (in_set(r->strip, (unsigned char)c))
        return;
    if (c == 0 && r->nul == 0)
        r->nul = SMTP_DATA_NUL_BODY;
    out_put(o, &c, 1);
    r->line_out++;
}

/* A line's CRLF; an empty line ends the header section. */
static void out_eol(struct out *o)
{
    struct smtp_data_reader *r = o->r;

    out_put(o, "\r\n", 2);
    if (r->line_out == 0)
        r->body = 1;
    r->line_out = 0;
}

void smtp_data_init(struct smtp_data_reader *r, int mode, uint64_t limit)
{
    memset(r, 0, sizeof(*r));
    r->mode = mode;
    r->limit = limit;
    r->state = LINE_START;
}

/*
 * A bare line end: in STRICT mode the error, where it is seen; in
 * NORMALIZE mode it is noted and reading goes on.
 */
static int bare(struct smtp_data_reader *r, int rc)
{
    if (r->newline == SMTP_NEWLINE_STRICT)
        return rc;
    r->bare |=
        rc == SMTP_DATA_BARE_LF ? SMTP_DATA_SAW_BARE_LF : SMTP_DATA_SAW_BARE_CR;
    return SMTP_DATA_MORE;
}

/* A line's end: real (CRLF), or a bare LF taken as one (NORMALIZE). */
static void line_end(struct out *o, int after_bare)
{
    out_eol(o);
    o->r->state = LINE_START;
    o->r->after_bare = after_bare;
}

static int in_line(struct out *o, char c)
{
    struct smtp_data_reader *r = o->r;
    int rc = SMTP_DATA_MORE;

    if (c == '\r') {
        r->state = SEEN_CR;
    } else if (c == '\n') {
        if ((rc = bare(r, SMTP_DATA_BARE_LF)) == SMTP_DATA_MORE)
            line_end(o, 1);
    } else {
        out_char(o, c);
        r->state = IN_LINE;
    }
    return rc;
}

static int line_start(struct out *o, char c)
{
    if (c == '.' && o->r->mode == SMTP_DATA_DOT) {
        o->r->state = DOT;
        return SMTP_DATA_MORE;
    }
    return in_line(o, c);
}

/* After a CR: an LF ends the line; anything else makes the CR bare
 * (NORMALIZE: dropped, and c is text of the same line). */
static int seen_cr(struct out *o, char c)
{
    int rc;

    if (c == '\n') {
        line_end(o, 0);
        return SMTP_DATA_MORE;
    }
    if ((rc = bare(o->r, SMTP_DATA_BARE_CR)) != SMTP_DATA_MORE)
        return rc;
    o->r->state = IN_LINE;
    return in_line(o, c);
}

/* "." at a line's start (DOT mode). A "." line that ends in a bare LF
 * is no end of data (NORMALIZE: it is dropped, as Postfix drops it). */
static int dot(struct out *o, char c)
{
    int rc = SMTP_DATA_MORE;

    if (c == '\r') {
        o->r->state = DOT_CR;
    } else if (c == '\n') {
        if ((rc = bare(o->r, SMTP_DATA_BARE_LF)) == SMTP_DATA_MORE) {
            o->r->state = LINE_START;
            o->r->after_bare = 1;
        }
    } else {
        /* ".." is a stuffed dot; ".x" loses its dot too. */
        out_char(o, c);
        o->r->state = IN_LINE;
    }
    return rc;
}

/* ".CR" at a line's start: with an LF, the end of data, if the line
 * began after a CRLF (or at the start); after a bare LF, no end, and
 * the line is dropped. */
static int dot_cr(struct out *o, char c)
{
    struct smtp_data_reader *r = o->r;
    int rc;

    if (c == '\n' && !r->after_bare)
        return SMTP_DATA_DONE;
    if (c == '\n') {
        r->state = LINE_START;
        r->after_bare = 0;
        return SMTP_DATA_MORE;
    }
    if ((rc = bare(r, SMTP_DATA_BARE_CR)) != SMTP_DATA_MORE)
        return rc;
    r->state = IN_LINE;
    return in_line(o, c);
}

static int step(struct out *o, char c)
{
    switch (o->r->state) {
    case LINE_START:
        return line_start(o, c);
    case IN_LINE:
        return in_line(o, c);
    case SEEN_CR:
        return seen_cr(o, c);
    case DOT:
        return dot(o, c);
    default:
        return dot_cr(o, c);
    }
}

int smtp_data_feed(struct smtp_data_reader *r, const char *p, size_t len,
                   size_t *used, smtp_emit_fn *emit, void *ctx)
{
    struct out o;
    int rc = SMTP_DATA_MORE;
    size_t i;

    o.r = r;
    o.emit = emit;
    o.ctx = ctx;
    o.n = 0;
    for (i = 0; i < len && rc == SMTP_DATA_MORE; i++)
        rc = step(&o, p[i]);
    out_flush(&o);
    /* An error's byte is not taken; the end's LF is. */
    *used = rc == SMTP_DATA_MORE || rc == SMTP_DATA_DONE ? i : i - 1;
    return rc;
}

int smtp_data_finish(struct smtp_data_reader *r, smtp_emit_fn *emit, void *ctx)
{
    struct out o;

    if (r->state == SEEN_CR && bare(r, SMTP_DATA_BARE_CR) != SMTP_DATA_MORE)
        return SMTP_DATA_BARE_CR;
    if (r->state == SEEN_CR) /* NORMALIZE: the CR is dropped */
        r->state = IN_LINE;
    o.r = r;
    o.emit = emit;
    o.ctx = ctx;
    o.n = 0;
    if (r->state == IN_LINE)
        out_eol(&o);
    out_flush(&o);
    r->state = LINE_START;
    return SMTP_DATA_DONE;
}

/* One character of a strip set's text, with Postfix's escapes. */
static unsigned char unescape(const char **pp)
{
    static const char from[] = "abfnrtv", to[] = "\a\b\f\n\r\t\v";
    const char *p = *pp, *e;
    unsigned v = 0;
    int digits;

    if (p[0] != '\\' || p[1] == 0) {
        *pp = p + 1;
        return (unsigned char)p[0];
    }
    p++;
    for (digits = 0; digits < 3 && *p >= '0' && *p <= '7'; digits++)
        v = v * 8 + (unsigned)(*p++ - '0');
    if (digits == 0) {
        e = strchr(from, *p);
        v = (unsigned char)(e != NULL ? to[e - from] : *p);
        p++;
    }
    *pp = p;
    return (unsigned char)v;
}

int smtp_data_strip_parse(const char *text, unsigned char set[SMTP_STRIP_SET],
                          char *why, size_t whylen)
{
    const char *p = text ? text : "";

    memset(set, 0, SMTP_STRIP_SET);
    while (*p) {
        unsigned char c = unescape(&p);

        set[c / 8] |= (unsigned char)(1u << (c % 8));
    }
    if (in_set(set, '\r') || in_set(set, '\n')) {
        snprintf(why, whylen,
                 "CR and LF cannot be stripped (lines would lose their ends)");
        return -1;
    }
    return 0;
}
