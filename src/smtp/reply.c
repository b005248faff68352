/*
 * NAME
 *	reply 3 - SMTP replies, EHLO keywords, dot-stuffing
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	void	smtp_reply_init(struct smtp_reply *r)
 *	int	smtp_reply_line(struct smtp_reply *r, const char *line,
 *			size_t len)
 *	void	smtp_reply_free(struct smtp_reply *r)
 *	size_t	smtp_enhanced_code(const char *p, size_t len)
 *	unsigned smtp_ehlo_features(const struct smtp_reply *r,
 *			uint64_t *size_limit)
 *	void	smtp_stuff(struct smtp_stuffer *st, const char *p, size_t len,
 *			smtp_emit_fn *emit, void *ctx)
 *	void	smtp_stuff_end(struct smtp_stuffer *st, smtp_emit_fn *emit,
 *			void *ctx)
 * DESCRIPTION
 *	smtp_reply_line() adds one line (without its CRLF) to a reply being
 *	read: "250-text" continues, "250 text" (or "250") ends it. It
 *	returns 1 when the reply is complete, 0 when more lines are needed,
 *	and -1 when the line is not part of a well-formed reply (no three
 *	digits and a separator, a code that changes between lines, more
 *	than SMTP_REPLY_MAX_LINES lines or SMTP_REPLY_MAX_TEXT bytes): the
 *	peer is broken and the session should end. A complete reply has its
 *	code, its enhanced status code ("5.1.1") when the first line's text
 *	starts with one, and its text: the lines' texts joined by a space,
 *	as log lines and bounces quote it. smtp_reply_free() frees the text
 *	and makes the reply ready for the next one.
 *
 *	smtp_enhanced_code() returns the length of the enhanced status code
 *	("X.Y.Z", X 2, 4 or 5, followed by a space or the end) at the start
 *	of p, or 0 when there is none.
 *
 *	smtp_ehlo_features() reads the keywords of an EHLO reply (every line
 *	but the first): PIPELINING, SIZE (with its limit, 0 if none),
 *	8BITMIME, STARTTLS, ENHANCEDSTATUSCODES, CHUNKING, DSN, SMTPUTF8.
 *
 *	smtp_stuff() writes a message body for DATA: every line that starts
 *	with "." gets another "." in front (RFC 5321 4.5.2), across calls;
 *	smtp_stuff_end() ends the data: a CRLF if the body did not end with
 *	one, then ".\r\n". A stuffer starts zeroed: at a line start. With
 *	line_limit set (smtp_line_length_limit), a line longer than that
 *	many characters (its CRLF not counted) is broken by inserting CRLF
 *	and a space, as Postfix's smtp(8) does "to minimize the damage to
 *	MIME formatted mail" (RFC 5322 2.1.1 allows 998 characters); folded
 *	counts the breaks, for the log.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void smtp_reply_init(struct smtp_reply *r)
{
    memset(r, 0, sizeof(*r));
}

void smtp_reply_free(struct smtp_reply *r)
{
    free(r->text);
    memset(r, 0, sizeof(*r));
}

/* The length of "X.Y.Z" at the start of text (X 2, 4 or 5), or 0. */
size_t smtp_enhanced_code(const char *p, size_t len)
{
    size_t i = 2;

    if (len < 5 || (p[0] != '2' && p[0] != '4' && p[0] != '5') || p[1] != '.')
        return 0;
    for (int part = 0; part < 2; part++) {
        size_t digits = 0;

        while (i < len && isdigit((unsigned char)p[i]) && digits < 3)
            i++, digits++;
        if (digits == 0)
            return 0;
        if (part == 0) {
            if (i >= len || p[i] != '.')
                return 0;
            i++;
        }
    }
    if (i < len && p[i] != ' ')
        return 0;
    return i;
}

static void text_add(struct smtp_reply *r, const char *p, size_t len)
{
    size_t need = r->text_len + (r->text_len ? 1 : 0) + len + 1;
    char *t = xrealloc(r->text, need);

    r->text = t;
    if (r->text_len)
        r->text[r->text_len++] = ' ';
    memcpy(r->text + r->text_len, p, len);
    r->text_len += len;
    r->text[r->text_len] = 0;
}

int smtp_reply_line(struct smtp_reply *r, const char *line, size_t len)
{
    int code;

    if (len < 3 || !isdigit((unsigned char)line[0]) ||
        !isdigit((unsigned char)line[1]) || !isdigit((unsigned char)line[2]) ||
        line[0] < '2' || line[0] > '5' ||
        (len > 3 && line[3] != ' ' && line[3] != '-'))
        return -1;
    code = (line[0] - '0') * 100 + (line[1] - '0') * 10 + (line[2] - '0');
    if (r->lines > 0 && code != r->code)
        return -1;
    if (r->lines >= SMTP_REPLY_MAX_LINES ||
        r->text_len + len > SMTP_REPLY_MAX_TEXT)
        return -1;
    r->code = code;
    if (r->lines == 0) {
        size_t e = len > 4 ? smtp_enhanced_code(line + 4, len - 4) : 0;

        if (e > 0 && e < sizeof(r->enhanced)) {
            memcpy(r->enhanced, line + 4, e);
            r->enhanced[e] = 0;
        }
    }
    r->lines++;
    if (len > 4)
        text_add(r, line + 4, len - 4);
    else if (r->text == NULL)
        text_add(r, "", 0);
    if (r->nline < SMTP_REPLY_MAX_LINES) {
        /* Each line's text, for the EHLO keywords. */
        size_t l = len > 4 ? len - 4 : 0;

        if (l >= sizeof(r->line[0]))
            l = sizeof(r->line[0]) - 1;
        memcpy(r->line[r->nline], len > 4 ? line + 4 : "", l);
        r->line[r->nline][l] = 0;
        r->nline++;
    }
    return len <= 3 || line[3] == ' ' ? 1 : 0;
}

unsigned smtp_ehlo_features(const struct smtp_reply *r, uint64_t *size_limit)
{
    static const struct {
        const char *word;
        unsigned bit;
    } words[] = {
        {"PIPELINING", SMTP_EXT_PIPELINING},
        {"SIZE", SMTP_EXT_SIZE},
        {"8BITMIME", SMTP_EXT_8BITMIME},
        {"STARTTLS", SMTP_EXT_STARTTLS},
        {"ENHANCEDSTATUSCODES", SMTP_EXT_ENHANCEDSTATUSCODES},
        {"CHUNKING", SMTP_EXT_CHUNKING},
        {"DSN", SMTP_EXT_DSN},
        {"SMTPUTF8", SMTP_EXT_SMTPUTF8},
    };
    unsigned features = 0;

    if (size_limit)
        *size_limit = 0;
    for (size_t i = 1; i < r->nline; i++) {
        const char *kw = r->line[i];
        size_t wl = strcspn(kw, " ");

        for (size_t w = 0; w < sizeof(words) / sizeof(words[0]); w++) {
            if (wl == strlen(words[w].word) &&
                strncasecmp(kw, words[w].word, wl) == 0) {
                features |= words[w].bit;
                if (words[w].bit == SMTP_EXT_SIZE && size_limit &&
                    kw[wl] == ' ')
                    *size_limit = strtoull(kw + wl + 1, NULL, 10);
            }
        }
    }
    return features;
}

void smtp_stuff(struct smtp_stuffer *st, const char *p, size_t len,
                smtp_emit_fn *emit, void *ctx)
{
    size_t start = 0;

    for (size_t i = 0; i < len; i++) {
        /* A long line goes on after CRLF SPACE (Postfix's smtp(8)). */
        if (st->line_limit && st->column >= st->line_limit && p[i] != '\r' &&
            p[i] != '\n') {
            if (i > start)
                emit(ctx, p + start, i - start);
            emit(ctx, "\r\n ", 3);
            start = i;
            st->column = 1;
            st->folded++;
        }
        if (!st->mid_line && p[i] == '.') {
            if (i > start)
                emit(ctx, p + start, i - start);
            emit(ctx, ".", 1);
            start = i; /* the original dot follows */
        }
        st->mid_line = p[i] != '\n';
        st->column = p[i] == '\n' ? 0 : st->column + (p[i] != '\r');
        st->tail[0] = st->tail[1];
        st->tail[1] = p[i];
    }
    if (len > start)
        emit(ctx, p + start, len - start);
    st->bytes += len;
}

void smtp_stuff_end(struct smtp_stuffer *st, smtp_emit_fn *emit, void *ctx)
{
    if (st->bytes > 0 && !(st->tail[0] == '\r' && st->tail[1] == '\n'))
        emit(ctx, "\r\n", 2);
    emit(ctx, ".\r\n", 3);
}
