/*
 * NAME
 *	compose 3 - a MIME message built from its parts
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	void	smtp_compose_field(struct util_buf *out, const char *name,
 *			const char *value)
 *	void	smtp_compose_mailbox(struct util_buf *out, const char *name,
 *			const char *display, const char *address)
 *	void	smtp_compose_body(struct util_buf *out,
 *			const struct smtp_compose *c)
 *	int	smtp_compose_type_valid(const char *content_type)
 *	int	smtp_compose_id_valid(const char *content_id)
 * DESCRIPTION
 *	These write the parts of a message that a program describes
 *	rather than spells (the injection API's structured content), as
 *	RFC 5322, RFC 2045 to 2047 and RFC 2231 want them: CRLF line ends,
 *	no line longer than 998 bytes, header fields folded near 78.
 *
 *	smtp_compose_field() appends "NAME: VALUE" and its CRLF, VALUE
 *	being unstructured text (Subject:, a header field of the caller's)
 *	of one line: printable ASCII is folded at its spaces; text with
 *	8-bit bytes, with "=?" (which a reader would take for an encoded
 *	word) or with a word too long to fold goes as RFC 2047 encoded
 *	words ("=?utf-8?B?...?="), split between UTF-8 characters, on
 *	lines of at most 76 characters.
 *
 *	smtp_compose_mailbox() appends "NAME: DISPLAY <ADDRESS>" (or
 *	"NAME: ADDRESS" when display is NULL or empty): the display name
 *	as atoms when it is plain, a quoted string when it holds specials,
 *	encoded words when it holds 8-bit bytes, the address after the
 *	last one on its line when it fits within 78, else folded.
 *
 *	smtp_compose_body() appends "MIME-Version: 1.0", the top entity's
 *	Content-Type and Content-Transfer-Encoding, the blank line and the
 *	body: the text (text/plain) or the HTML (text/html), or both in a
 *	multipart/alternative; with attachments that have a Content-ID,
 *	that and them in a multipart/related; with other attachments, all
 *	that and them in a multipart/mixed. Texts (UTF-8, line ends LF,
 *	CRLF or CR) get CRLF line ends and go as 7bit when they are
 *	printable ASCII in lines of at most 76 characters, else as
 *	quoted-printable, or base64 when more than a third of their bytes
 *	would need escaping. Attachments go as base64 in lines of 76, with
 *	a Content-Disposition (inline with a Content-ID, else attachment)
 *	and the file name as filename="NAME", or RFC 2231's
 *	filename*=utf-8''... when it is not plain ASCII. Boundaries are
 *	c->boundary (a random token of the caller's) with a suffix per
 *	level; they start with "=_", which quoted-printable and base64
 *	never write and a 7bit text is checked not to hold.
 *
 *	smtp_compose_type_valid() tells whether a Content-Type value is
 *	TYPE/SUBTYPE with optional parameters (token or quoted string
 *	values), at most SMTP_COMPOSE_TYPE_MAX bytes, and not a multipart
 *	or message type (those cannot be base64). smtp_compose_id_valid()
 *	tells whether a Content-ID (without its angle brackets) is 1 to
 *	SMTP_COMPOSE_ID_MAX bytes of RFC 5322 atext, dots and one "@" at
 *	most. Both return 1 or 0.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <string.h>
#include <strings.h>

#define FOLD_AT     78  /* header lines are folded near this width */
#define EW_LINE_MAX 76  /* RFC 2047: lines with encoded words */
#define WORD_MAX    900 /* a longer word cannot be folded: encode */
#define QP_LINE_MAX 76  /* RFC 2045: quoted-printable lines */
#define TEXT_7BIT   76  /* longer lines go quoted-printable */
#define B64_LINE    76

static const char hex[] = "0123456789ABCDEF";

static int atext(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') ||
           (ch != 0 && strchr("!#$%&'*+-/=?^_`{|}~", ch) != NULL);
}

static int eight_bit(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80)
            return 1;
    return 0;
}

/*
 * Encoded words for s, starting at column col: each "=?utf-8?B?...?="
 * fits its line (76), split only between UTF-8 characters. Returns the
 * column after the last one.
 */
static size_t encoded_words(struct util_buf *out, size_t col, const char *s)
{
    size_t len = strlen(s);

    while (len > 0) {
        size_t room = col + 12 < EW_LINE_MAX ? EW_LINE_MAX - col - 12 : 0;
        size_t n = room / 4 * 3;

        if (n < 6) { /* no room for a character on this line */
            util_buf_puts(out, "\r\n ");
            col = 1;
            continue;
        }
        if (n > len)
            n = len;
        while (n < len && n > 1 && ((unsigned char)s[n] & 0xc0) == 0x80)
            n--;
        util_buf_puts(out, "=?utf-8?B?");
        util_base64_encode(out, s, n, 0);
        util_buf_puts(out, "?=");
        col += 12 + (n + 2) / 3 * 4;
        s += n;
        len -= n;
        if (len > 0) {
            util_buf_puts(out, "\r\n ");
            col = 1;
        }
    }
    return col;
}

/* Printable ASCII that unfolds to itself and folds within 998. */
static int plain_text(const char *s)
{
    size_t word = 0;

    if (strstr(s, "=?") != NULL)
        return 0;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch != '\t' && (ch < 0x20 || ch > 0x7e))
            return 0;
        word = ch == ' ' || ch == '\t' ? 0 : word + 1;
        if (word > WORD_MAX)
            return 0;
    }
    return 1;
}

/*
 * s folded before a space when its line would pass FOLD_AT, never
 * leaving a line of white space only: CRLF is inserted, nothing else
 * changes, so the unfolded value is s.
 */
static void folded(struct util_buf *out, size_t col, const char *s)
{
    int seen = 0; /* a non-space on this line */

    while (*s) {
        size_t ws = strspn(s, " \t");
        size_t word = strcspn(s + ws, " \t");

        if (ws > 0 && seen && col + ws + word > FOLD_AT) {
            util_buf_puts(out, "\r\n");
            col = 0;
            seen = 0;
        }
        util_buf_add(out, s, ws + word);
        col += ws + word;
        seen |= word > 0;
        s += ws + word;
    }
}

void smtp_compose_field(struct util_buf *out, const char *name,
                        const char *value)
{
    size_t col = strlen(name) + 2;

    util_buf_printf(out, "%s: ", name);
    if (plain_text(value))
        folded(out, col, value);
    else
        encoded_words(out, col, value);
    util_buf_puts(out, "\r\n");
}

static int plain_phrase(const char *s)
{
    int prev_space = 1;

    for (; *s; s++) {
        if (*s == ' ') {
            if (prev_space)
                return 0;
            prev_space = 1;
        } else if (atext((unsigned char)*s)) {
            prev_space = 0;
        } else {
            return 0;
        }
    }
    return !prev_space;
}

void smtp_compose_mailbox(struct util_buf *out, const char *name,
                          const char *display, const char *address)
{
    util_buf_printf(out, "%s: ", name);
    if (display != NULL && display[0] != 0) {
        if (eight_bit(display)) {
            size_t col = encoded_words(out, strlen(name) + 2, display);

            /* the address on the last word's line when it fits */
            if (col + 3 + strlen(address) > FOLD_AT)
                util_buf_puts(out, "\r\n");
        } else if (plain_phrase(display)) {
            util_buf_puts(out, display);
        } else {
            util_buf_puts(out, "\"");
            for (const char *p = display; *p; p++) {
                if (*p == '"' || *p == '\\')
                    util_buf_puts(out, "\\");
                util_buf_add(out, p, 1);
            }
            util_buf_puts(out, "\"");
        }
        util_buf_printf(out, " <%s>\r\n", address);
    } else {
        util_buf_printf(out, "%s\r\n", address);
    }
}

/* ------------------------------------------------------------ bodies */

enum cte { CTE_7BIT, CTE_QP, CTE_BASE64 };

/* The text's lines, whatever their ends: fn gets each without it. */
typedef void line_fn(struct util_buf *out, const char *p, size_t n);

static void each_line(struct util_buf *out, const char *s, line_fn *fn)
{
    while (*s) {
        size_t n = strcspn(s, "\r\n");

        fn(out, s, n);
        s += n;
        if (s[0] == '\r' && s[1] == '\n')
            s += 2;
        else if (*s)
            s++;
    }
}

static enum cte text_encoding(const char *s)
{
    size_t len = strlen(s), escaped = 0, line = 0, longest = 0;

    for (const char *p = s; *p; p++) {
        unsigned char ch = (unsigned char)*p;

        if (ch == '\r' || ch == '\n') {
            line = 0;
            continue;
        }
        if (++line > longest)
            longest = line;
        if ((ch < 0x20 && ch != '\t') || ch > 0x7e || ch == '=')
            escaped++;
    }
    if (escaped * 3 > len)
        return CTE_BASE64;
    if (longest > TEXT_7BIT || strstr(s, "=_") != NULL)
        return CTE_QP;
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p > 0x7e ||
            ((unsigned char)*p < 0x20 && strchr("\t\r\n", *p) == NULL))
            return CTE_QP;
    return CTE_7BIT;
}

static void line_7bit(struct util_buf *out, const char *p, size_t n)
{
    util_buf_add(out, p, n);
    util_buf_puts(out, "\r\n");
}

/* One line as quoted-printable: soft breaks keep each within 76. */
static void line_qp(struct util_buf *out, const char *p, size_t n)
{
    size_t col = 0;

    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)p[i];
        int last = i + 1 == n;
        int esc = (ch < 0x20 && ch != '\t') || ch > 0x7e || ch == '=' ||
                  (last && (ch == ' ' || ch == '\t'));
        size_t w = esc ? 3 : 1;

        /* Room for this character and, unless it ends the line, a '='. */
        if (col + w + (last ? 0 : 1) > QP_LINE_MAX) {
            util_buf_puts(out, "=\r\n");
            col = 0;
        }
        if (esc) {
            char e[3] = {'=', hex[ch >> 4], hex[ch & 0xf]};

            util_buf_add(out, e, 3);
        } else {
            util_buf_add(out, p + i, 1);
        }
        col += w;
    }
    util_buf_puts(out, "\r\n");
}

static void text_entity(struct util_buf *out, const char *subtype,
                        const char *text)
{
    enum cte e = text_encoding(text);
    struct util_buf crlf = UTIL_BUF_INIT;

    util_buf_printf(out,
                    "Content-Type: text/%s; charset=utf-8\r\n"
                    "Content-Transfer-Encoding: %s\r\n\r\n",
                    subtype,
                    e == CTE_7BIT ? "7bit"
                    : e == CTE_QP ? "quoted-printable"
                                  : "base64");
    if (e == CTE_BASE64) {
        each_line(&crlf, text, line_7bit);
        util_base64_encode(out, crlf.data ? crlf.data : "", crlf.len, B64_LINE);
        util_buf_free(&crlf);
    } else {
        each_line(out, text, e == CTE_7BIT ? line_7bit : line_qp);
    }
}

/* filename="NAME", or RFC 2231's filename*=utf-8''... */
static void file_name_param(struct util_buf *out, const char *name)
{
    int plain = strlen(name) <= 60;

    for (const char *p = name; *p && plain; p++)
        plain = (unsigned char)*p >= 0x20 && (unsigned char)*p <= 0x7e &&
                *p != '"' && *p != '\\';
    if (plain) {
        util_buf_printf(out, ";\r\n filename=\"%s\"", name);
        return;
    }
    util_buf_puts(out, ";\r\n filename*=utf-8''");
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (*p >= '0' && *p <= '9') || strchr("!#$&+-.^_`|~", *p)) {
            util_buf_add(out, p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 0xf]};

            util_buf_add(out, e, 3);
        }
    }
}

static void attachment_entity(struct util_buf *out,
                              const struct smtp_attachment *a)
{
    util_buf_printf(out,
                    "Content-Type: %s\r\n"
                    "Content-Transfer-Encoding: base64\r\n"
                    "Content-Disposition: %s",
                    a->content_type, a->content_id ? "inline" : "attachment");
    if (a->file_name != NULL && a->file_name[0] != 0)
        file_name_param(out, a->file_name);
    util_buf_puts(out, "\r\n");
    if (a->content_id != NULL)
        util_buf_printf(out, "Content-ID: <%s>\r\n", a->content_id);
    util_buf_puts(out, "\r\n");
    util_base64_encode(out, a->data, a->len, B64_LINE);
}

/* The levels of the tree, outermost last, each with its own boundary. */
enum level { LEVEL_ALTERNATIVE, LEVEL_RELATED, LEVEL_MIXED };

static void entity(struct util_buf *out, const struct smtp_compose *c,
                   enum level lv);

static void multipart_start(struct util_buf *out, const char *subtype,
                            const struct smtp_compose *c, int tag)
{
    util_buf_printf(out,
                    "Content-Type: multipart/%s;\r\n"
                    " boundary=\"%s_%c\"\r\n"
                    "Content-Transfer-Encoding: 7bit\r\n\r\n",
                    subtype, c->boundary, tag);
}

/*
 * A part's last CRLF belongs to the delimiter after it (RFC 2046 5.1.1):
 * one more is written before each but the first, so that a text that
 * ends in a line break keeps it.
 */
static void delimiter(struct util_buf *out, const struct smtp_compose *c,
                      int tag, int first, int close)
{
    util_buf_printf(out, "%s--%s_%c%s\r\n", first ? "" : "\r\n", c->boundary,
                    tag, close ? "--" : "");
}

static void alternative(struct util_buf *out, const struct smtp_compose *c)
{
    if (c->text == NULL || c->html == NULL) {
        text_entity(out, c->text ? "plain" : "html",
                    c->text   ? c->text
                    : c->html ? c->html
                              : "");
        return;
    }
    multipart_start(out, "alternative", c, 'a');
    delimiter(out, c, 'a', 1, 0);
    text_entity(out, "plain", c->text);
    delimiter(out, c, 'a', 0, 0);
    text_entity(out, "html", c->html);
    delimiter(out, c, 'a', 0, 1);
}

static int count(const struct smtp_compose *c, int with_id)
{
    int n = 0;

    for (size_t i = 0; i < c->natt; i++)
        n += (c->att[i].content_id != NULL) == with_id;
    return n;
}

/* lv's entity: its attachments around the entity of the level below. */
static void entity(struct util_buf *out, const struct smtp_compose *c,
                   enum level lv)
{
    int with_id = lv == LEVEL_RELATED, tag = with_id ? 'r' : 'm';

    if (lv == LEVEL_ALTERNATIVE) {
        alternative(out, c);
        return;
    }
    if (count(c, with_id) == 0) {
        entity(out, c, lv - 1);
        return;
    }
    multipart_start(out, with_id ? "related" : "mixed", c, tag);
    delimiter(out, c, tag, 1, 0);
    entity(out, c, lv - 1);
    for (size_t i = 0; i < c->natt; i++) {
        if ((c->att[i].content_id != NULL) != with_id)
            continue;
        delimiter(out, c, tag, 0, 0);
        attachment_entity(out, &c->att[i]);
    }
    delimiter(out, c, tag, 0, 1);
}

void smtp_compose_body(struct util_buf *out, const struct smtp_compose *c)
{
    util_buf_puts(out, "MIME-Version: 1.0\r\n");
    entity(out, c, LEVEL_MIXED);
}

/* ------------------------------------------------------------ checks */

static int tspecial(int ch)
{
    return ch != 0 && strchr("()<>@,;:\\\"/[]?=", ch) != NULL;
}

static size_t token(const char *s)
{
    size_t n = 0;

    while (s[n] > 0x20 && s[n] < 0x7f && !tspecial((unsigned char)s[n]))
        n++;
    return n;
}

static size_t quoted(const char *s)
{
    size_t n = 1;

    if (s[0] != '"')
        return 0;
    while (s[n] != '"') {
        if (s[n] < 0x20 || s[n] > 0x7e || s[n] == '\\')
            return 0;
        n++;
    }
    return n + 1;
}

int smtp_compose_type_valid(const char *t)
{
    const char *p = t;
    size_t n;

    if (strlen(t) > SMTP_COMPOSE_TYPE_MAX || (n = token(p)) == 0 ||
        (n == 9 && strncasecmp(p, "multipart", 9) == 0) ||
        (n == 7 && strncasecmp(p, "message", 7) == 0))
        return 0;
    p += n;
    if (*p++ != '/' || (n = token(p)) == 0)
        return 0;
    for (p += n; *p; p += n) {
        p += strspn(p, " ");
        if (*p++ != ';')
            return 0;
        p += strspn(p, " ");
        if ((n = token(p)) == 0 || p[n] != '=')
            return 0;
        p += n + 1;
        if ((n = token(p)) == 0 && (n = quoted(p)) == 0)
            return 0;
        p += n;
        p += strspn(p, " ");
        n = 0;
    }
    return 1;
}

int smtp_compose_id_valid(const char *id)
{
    size_t len = strlen(id);
    const char *at = strchr(id, '@');

    if (len == 0 || len > SMTP_COMPOSE_ID_MAX || (at && strchr(at + 1, '@')))
        return 0;
    for (const char *p = id; *p; p++)
        if (!atext((unsigned char)*p) && *p != '.' && *p != '@')
            return 0;
    return 1;
}
