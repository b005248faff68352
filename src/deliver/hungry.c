/*
 * NAME
 *	hungry 3 - the hungry protocol's lines, written and read
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	void	hungry_xtext(struct util_buf *b, const char *s)
 *	char	*hungry_unxtext(const char *s, size_t n)
 *	void	hungry_job(struct util_buf *b, const char *id, size_t size,
 *			const char *sender, const struct deliver_rcpt *rcpt,
 *			size_t n)
 *	void	hungry_content(struct util_buf *b, const char *body,
 *			size_t len)
 *	int	hungry_parse(const char *line, size_t len, size_t nrcpt,
 *			struct hungry_line *out, char *why, size_t whylen)
 * DESCRIPTION
 *	The codec of sluice-agent(7), without I/O (decision 130).
 *
 *	hungry_xtext() appends s in RFC 3461's xtext: every byte outside
 *	"!" to "~", and "+" and "=", as "+" and two upper-case hex digits,
 *	so that an address, whatever it holds (blanks, controls, UTF-8),
 *	is one word of printable ASCII. hungry_unxtext() decodes s[0..n)
 *	strictly (a raw byte that should have been encoded, a "+" without
 *	two upper-case hex digits, an encoded NUL: NULL), for agents
 *	written in C and for the tests.
 *
 *	hungry_job() appends the job line, "job ID SIZE SENDER RCPT...",
 *	each word xtext, the null sender "<>", and a newline; SIZE is the
 *	byte count of the content that follows it. hungry_content()
 *	appends a message as the agent reads it: each CRLF made LF, as
 *	pipe(8) gives a command a message.
 *
 *	hungry_parse() reads one line an agent wrote (without its
 *	newline) for a job of nrcpt recipients: "#hungry", or a result
 *	"N STATUS CODE [TEXT]": N the recipient, 1 to nrcpt, in decimal
 *	without leading zeros; STATUS ok, defer or bounce; CODE an
 *	enhanced status code whose class is the status's (2, 4, 5); TEXT
 *	after one space, printable ASCII or well-formed UTF-8, no control
 *	characters. It returns 0 and fills out (index from 0, text into
 *	line), or -1 with why: anything else is a protocol error.
 */

#include "deliver/agent_impl.h"

#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hex[] = "0123456789ABCDEF";

static int xtext_plain(unsigned char c)
{
    return c >= '!' && c <= '~' && c != '+' && c != '=';
}

void hungry_xtext(struct util_buf *b, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char enc[3] = {'+', hex[*p >> 4], hex[*p & 15]};

        if (xtext_plain(*p))
            util_buf_add(b, p, 1);
        else
            util_buf_add(b, enc, 3);
    }
}

static int hex_value(char c)
{
    const char *at = c ? strchr(hex, c) : NULL;

    return at ? (int)(at - hex) : -1;
}

char *hungry_unxtext(const char *s, size_t n)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_buf_add(&b, "", 0);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        int hi, lo;

        if (xtext_plain(c)) {
            util_buf_add(&b, &c, 1);
            continue;
        }
        if (c != '+' || i + 2 >= n + 0 || (hi = hex_value(s[i + 1])) < 0 ||
            (lo = hex_value(s[i + 2])) < 0 || (hi == 0 && lo == 0)) {
            util_buf_free(&b);
            return NULL;
        }
        c = (unsigned char)(hi << 4 | lo);
        util_buf_add(&b, &c, 1);
        i += 2;
    }
    return util_buf_take(&b);
}

void hungry_job(struct util_buf *b, const char *id, size_t size,
                const char *sender, const struct deliver_rcpt *rcpt, size_t n)
{
    util_buf_puts(b, "job ");
    hungry_xtext(b, id);
    util_buf_printf(b, " %zu ", size);
    if (sender == NULL || *sender == 0)
        util_buf_puts(b, "<>");
    else
        hungry_xtext(b, sender);
    for (size_t i = 0; i < n; i++) {
        util_buf_puts(b, " ");
        hungry_xtext(b, rcpt[i].address);
    }
    util_buf_puts(b, "\n");
}

void hungry_content(struct util_buf *b, const char *body, size_t len)
{
    size_t from = 0;

    for (size_t i = 0; i + 1 < len; i++) {
        if (body[i] == '\r' && body[i + 1] == '\n') {
            util_buf_add(b, body + from, i - from);
            from = i + 1; /* the LF */
        }
    }
    util_buf_add(b, body + from, len - from);
}

static int refuse(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "%s", what);
    return -1;
}

/* N: 1 to nrcpt, no leading zero; *p moves past it. */
static int index_parse(const char **p, const char *end, size_t nrcpt,
                       size_t *out)
{
    size_t v = 0;
    const char *s = *p;

    if (s == end || *s < '1' || *s > '9')
        return -1;
    while (s < end && *s >= '0' && *s <= '9') {
        v = v * 10 + (size_t)(*s++ - '0');
        if (v > nrcpt)
            return -1;
    }
    *p = s;
    *out = v - 1;
    return 0;
}

static int status_parse(const char **p, const char *end,
                        enum deliver_status *st)
{
    static const struct {
        const char *word;
        enum deliver_status st;
    } words[] = {{"ok ", DELIVER_OK},
                 {"defer ", DELIVER_DEFER},
                 {"bounce ", DELIVER_BOUNCE}};

    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].word);

        if ((size_t)(end - *p) >= n && memcmp(*p, words[i].word, n) == 0) {
            *p += n;
            *st = words[i].st;
            return 0;
        }
    }
    return -1;
}

static int text_valid(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return smtp_utf8_valid(s, n);
}

int hungry_parse(const char *line, size_t len, size_t nrcpt,
                 struct hungry_line *out, char *why, size_t whylen)
{
    static const char cls[] = {'2', '4', '5'}; /* by enum deliver_status */
    const char *p = line, *end = line + len;
    size_t code;

    memset(out, 0, sizeof(*out));
    out->text = "";
    if (len == strlen(HUNGRY_READY) && memcmp(line, HUNGRY_READY, len) == 0) {
        out->kind = HUNGRY_LINE_READY;
        return 0;
    }
    out->kind = HUNGRY_LINE_RESULT;
    if (index_parse(&p, end, nrcpt, &out->index) < 0)
        return refuse(why, whylen, "expected a recipient number");
    if (p == end || *p++ != ' ' || status_parse(&p, end, &out->status) < 0)
        return refuse(why, whylen, "expected ok, defer or bounce");
    code = smtp_enhanced_code(p, (size_t)(end - p));
    if (code == 0 || code >= sizeof(out->enhanced) || *p != cls[out->status])
        return refuse(why, whylen,
                      "expected an enhanced status code of the status's "
                      "class");
    memcpy(out->enhanced, p, code);
    p += code;
    if (p < end && (*p++ != ' ' || !text_valid(p, (size_t)(end - p))))
        return refuse(why, whylen, "a control character or bad UTF-8");
    out->text = p;
    out->textlen = (size_t)(end - p);
    return 0;
}
