/*
 * NAME
 *	canon 3 - DKIM canonicalization of header fields and of the body
 * SYNOPSIS
 *	#include "dkim/dkim.h"
 *
 *	void	dkim_canon_header(struct util_buf *out, const char *field,
 *			size_t len, int relaxed)
 *	void	dkim_body_init(struct dkim_body *b, int relaxed,
 *			dkim_body_out_fn *out, void *ctx)
 *	void	dkim_body_feed(struct dkim_body *b, const char *p, size_t n)
 *	void	dkim_body_finish(struct dkim_body *b)
 * DESCRIPTION
 *	RFC 6376 3.4: what a signer and a verifier hash must be the same
 *	bytes although the message passed through relays that may refold
 *	header fields and change white space.
 *
 *	dkim_canon_header() appends one header field. Simple (3.4.1): the
 *	field as it is. Relaxed (3.4.2): the name lowercased, the field
 *	unfolded (every CRLF removed), each run of white space (SP, HTAB)
 *	made one SP, white space at the end of the value and on both sides
 *	of the colon removed; then CRLF.
 *
 *	The body canonicalizer is a stream, so that a staged body of any
 *	size is hashed in a fixed amount of memory. Simple (3.4.3): empty
 *	lines at the end of the body are dropped, and a body that does
 *	not end in CRLF (the empty one too) gets one. Relaxed (3.4.4):
 *	white space at the end of each line is dropped, each other run of
 *	it becomes one SP, empty lines at the end are dropped, and a body
 *	that is not empty ends in CRLF. Line ends waiting to be placed are
 *	kept as a count (b->crlfs), white space as a flag, so what is held
 *	back never grows with the input. Output goes out through a piece
 *	of DKIM_BODY_PIECE bytes.
 */

#include "dkim/dkim.h"

#include <ctype.h>
#include <string.h>

static int is_wsp(int c)
{
    return c == ' ' || c == '\t';
}

/* ------------------------------------------------------------- header */

void dkim_canon_header(struct util_buf *out, const char *field, size_t len,
                       int relaxed)
{
    const char *colon = memchr(field, ':', len);
    size_t i, name_end, start;
    int wsp = 0, any = 0;

    if (!relaxed || colon == NULL) {
        util_buf_add(out, field, len);
        return;
    }
    name_end = (size_t)(colon - field);
    while (name_end > 0 && is_wsp((unsigned char)field[name_end - 1]))
        name_end--;
    for (i = 0; i < name_end; i++) {
        char c = (char)tolower((unsigned char)field[i]);

        if (c != '\r' && c != '\n') /* unfolded, the name too */
            util_buf_add(out, &c, 1);
    }
    util_buf_add(out, ":", 1);
    start = (size_t)(colon - field) + 1;
    for (i = start; i < len; i++) {
        unsigned char c = (unsigned char)field[i];

        if (c == '\r' || c == '\n') /* unfolded: line ends vanish */
            continue;
        if (is_wsp(c)) {
            wsp = 1;
            continue;
        }
        if (wsp && any)
            util_buf_add(out, " ", 1);
        wsp = 0;
        any = 1;
        util_buf_add(out, &field[i], 1);
    }
    util_buf_add(out, "\r\n", 2);
}

/* --------------------------------------------------------------- body */

void dkim_body_init(struct dkim_body *b, int relaxed, dkim_body_out_fn *out,
                    void *ctx)
{
    memset(b, 0, sizeof(*b));
    b->relaxed = relaxed;
    b->out = out;
    b->ctx = ctx;
}

static void flush(struct dkim_body *b)
{
    if (b->n > 0)
        b->out(b->ctx, b->piece, b->n);
    b->n = 0;
}

static void put(struct dkim_body *b, char c)
{
    if (b->n == sizeof(b->piece))
        flush(b);
    b->piece[b->n++] = c;
}

/* A character that is not a line end nor (relaxed) white space. */
static void text(struct dkim_body *b, char c)
{
    for (; b->crlfs > 0; b->crlfs--) {
        put(b, '\r');
        put(b, '\n');
    }
    if (b->wsp)
        put(b, ' ');
    b->wsp = 0;
    b->any = 1;
    put(b, c);
}

static void line_end(struct dkim_body *b)
{
    b->wsp = 0; /* white space at the end of a line is dropped */
    b->crlfs++;
}

static void byte(struct dkim_body *b, char c)
{
    if (b->cr) {
        b->cr = 0;
        if (c == '\n') {
            line_end(b);
            return;
        }
        text(b, '\r'); /* a lone CR is text */
    }
    if (c == '\r')
        b->cr = 1;
    else if (b->relaxed && is_wsp((unsigned char)c))
        b->wsp = 1;
    else
        text(b, c);
}

void dkim_body_feed(struct dkim_body *b, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        byte(b, p[i]);
}

void dkim_body_finish(struct dkim_body *b)
{
    if (b->cr) {
        b->cr = 0;
        text(b, '\r');
    }
    if (b->wsp) { /* an unfinished last line keeps its white space, one SP */
        b->wsp = 0;
        text(b, ' ');
    }
    /* Simple: every body ends in one CRLF; relaxed: only one not empty. */
    if (b->any || !b->relaxed) {
        put(b, '\r');
        put(b, '\n');
    }
    b->crlfs = 0;
    flush(b);
}
