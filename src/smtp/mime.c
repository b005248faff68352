/*
 * NAME
 *	mime 3 - 8-bit MIME content made 7-bit for a server without 8BITMIME
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_mime_downgrade(const char *in, size_t len,
 *			struct util_buf *out)
 * DESCRIPTION
 *	RFC 6152: a message sent without BODY=8BITMIME must be 7-bit. When
 *	the next hop does not offer 8BITMIME, Postfix's smtp(8) converts
 *	what is declared 8-bit into quoted-printable (its
 *	disable_mime_output_conversion = no); smtp_mime_downgrade() does
 *	the same, with the same rules, so that the receiver sees what
 *	Postfix would have sent it:
 *
 *	The message is read as MIME entities: a header section, then a
 *	body; multipart bodies hold parts between "--BOUNDARY" lines
 *	(those of every enclosing multipart are recognised, so that a
 *	broken part cannot hide the rest), message/rfc822 bodies hold a
 *	message. An entity whose Content-Transfer-Encoding is 8bit or
 *	binary (any of them, when it has several) loses those fields and
 *	gets, at the end of its header section, one
 *	"Content-Transfer-Encoding: 7bit" when it is a multipart
 *	or a message/rfc822 (its parts are converted instead), else
 *	"Content-Transfer-Encoding: quoted-printable", and its body is
 *	encoded so: bytes outside printable ASCII (tab excepted) and "="
 *	as =XX, a soft line break ("=") before an output line passes 73
 *	characters, and a space or tab at the end of a line encoded. What
 *	is not declared 8-bit (no header field: 7bit) is copied as it is,
 *	as Postfix does: the sender's declaration is what says which
 *	charset-bearing parts may be re-encoded.
 *
 *	in is len bytes with CRLF line ends; the result (CRLF line ends) is
 *	appended to out. It returns the number of entities converted: 0
 *	means out holds an unchanged copy.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define MIME_DEPTH_MAX 32 /* nested multiparts recognised */
#define QP_LINE_MAX    72 /* output length that calls a soft break */

enum mime_ctype {
    CTYPE_TEXT,      /* leaves: text, application, image, ... */
    CTYPE_MULTIPART, /* parts between boundaries */
    CTYPE_RFC822,    /* message/rfc822: a message inside */
    CTYPE_OPAQUE,    /* preambles and epilogues: copied */
};

struct mime_level {
    char boundary[201];
    enum mime_ctype part_default; /* digest: message/rfc822 */
};

struct mime_state {
    struct util_buf *out;
    struct mime_level stack[MIME_DEPTH_MAX];
    int depth;
    int in_header;
    struct util_buf field;    /* the header field being read, as sent */
    struct util_buf unfolded; /* the same, unfolded, for parsing */
    struct util_buf section;  /* the entity's header fields so far */
    struct util_buf sans_cte; /* the same, Content-Transfer-Encoding out */
    enum mime_ctype ctype;
    enum mime_ctype next_default; /* for the parts of a multipart */
    char boundary[201];           /* of a multipart's Content-Type */
    int eight;                    /* the entity is declared 8bit/binary */
    int encode;                   /* its body goes out quoted-printable */
    int converted;
};

static int field_is(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name);

    return len > n && strncasecmp(line, name, n) == 0 && line[n] == ':';
}

/* The header field's value, after "Name:" and blanks. */
static const char *field_value(const char *line, size_t len, size_t *vlen)
{
    const char *colon = memchr(line, ':', len);
    const char *end = line + len;

    colon++;
    while (colon < end && (*colon == ' ' || *colon == '\t'))
        colon++;
    *vlen = (size_t)(end - colon);
    return colon;
}

static void content_type(struct mime_state *st, const char *v, size_t n)
{
    char text[1024];
    const char *b;
    size_t i = 0;

    if (n >= sizeof(text))
        n = sizeof(text) - 1;
    for (size_t k = 0; k < n; k++)
        text[k] = (char)tolower((unsigned char)v[k]);
    text[n] = 0;
    st->boundary[0] = 0;
    if (strncmp(text, "multipart/", 10) == 0) {
        st->ctype = CTYPE_MULTIPART;
        st->next_default =
            strncmp(text + 10, "digest", 6) == 0 ? CTYPE_RFC822 : CTYPE_TEXT;
        if ((b = strstr(text, "boundary=")) != NULL) {
            /* The value as written, not lower-cased. */
            const char *p = v + (b - text) + 9;
            const char *end = v + n;
            int quoted = p < end && *p == '"';

            for (p += quoted; p < end && i + 1 < sizeof(st->boundary); p++) {
                if (quoted ? *p == '"'
                           : (*p == ';' || isspace((unsigned char)*p)))
                    break;
                st->boundary[i++] = *p;
            }
            st->boundary[i] = 0;
        }
    } else if (strncmp(text, "message/rfc822", 14) == 0) {
        st->ctype = CTYPE_RFC822;
    } else {
        st->ctype = CTYPE_TEXT;
    }
}

/* 8bit or binary declared; other encodings (7bit, base64...) are 7-bit. */
static int encoding_eight(const char *v, size_t n)
{
    return (n >= 4 && strncasecmp(v, "8bit", 4) == 0 &&
            (n == 4 || !isalnum((unsigned char)v[4]))) ||
           (n >= 6 && strncasecmp(v, "binary", 6) == 0 &&
            (n == 6 || !isalnum((unsigned char)v[6])));
}

static void entity_start(struct mime_state *st, enum mime_ctype def)
{
    st->in_header = 1;
    st->ctype = def;
    st->boundary[0] = 0;
    st->eight = 0;
    st->encode = 0;
}

/* A boundary line of an enclosing multipart: the level, else -1. */
static int boundary_level(const struct mime_state *st, const char *line,
                          size_t len, int *closing)
{
    if (len < 3 || line[0] != '-' || line[1] != '-')
        return -1;
    for (int l = st->depth - 1; l >= 0; l--) {
        size_t b = strlen(st->stack[l].boundary);

        if (len >= 2 + b && memcmp(line + 2, st->stack[l].boundary, b) == 0) {
            *closing = len >= 4 + b && line[2 + b] == '-' && line[3 + b] == '-';
            return l;
        }
    }
    return -1;
}

static void put_line(struct mime_state *st, const char *line, size_t len)
{
    util_buf_add(st->out, line, len);
    util_buf_add(st->out, "\r\n", 2);
}

static void put_qp(struct mime_state *st, const char *line, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[QP_LINE_MAX + 8];
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)line[i];

        if (n > QP_LINE_MAX) {
            buf[n++] = '=';
            put_line(st, buf, n);
            n = 0;
        }
        if ((ch < 32 && ch != '\t') || ch == '=' || ch > 126) {
            buf[n++] = '=';
            buf[n++] = hex[ch >> 4];
            buf[n++] = hex[ch & 0xf];
        } else {
            buf[n++] = (char)ch;
        }
    }
    /* Trailing white space would be lost in transit: encode it. */
    if (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t')) {
        unsigned char ch = (unsigned char)buf[--n];

        buf[n++] = '=';
        buf[n++] = hex[ch >> 4];
        buf[n++] = hex[ch & 0xf];
    }
    put_line(st, buf, n);
}

/* The header field read so far is complete: parse it, then send it. */
static void field_flush(struct mime_state *st)
{
    const char *line = st->unfolded.data;
    size_t len = st->unfolded.len, vlen;
    const char *v;
    int cte = 0;

    if (st->field.len == 0)
        return;
    if (field_is(line, len, "Content-Type")) {
        v = field_value(line, len, &vlen);
        content_type(st, v, vlen);
    } else if (field_is(line, len, "Content-Transfer-Encoding")) {
        v = field_value(line, len, &vlen);
        /* Any that says 8bit or binary: all are replaced by one. */
        st->eight |= encoding_eight(v, vlen);
        cte = 1;
    }
    util_buf_add(&st->section, st->field.data, st->field.len);
    if (!cte)
        util_buf_add(&st->sans_cte, st->field.data, st->field.len);
    st->field.len = st->unfolded.len = 0;
}

/* A line of a header field: a new field, or a continuation (unfolded
 * with the CRLF taken out, RFC 5322 2.2.3). */
static void header_line(struct mime_state *st, const char *line, size_t len)
{
    if (len == 0 || (line[0] != ' ' && line[0] != '\t'))
        field_flush(st);
    util_buf_add(&st->field, line, len);
    util_buf_add(&st->field, "\r\n", 2);
    util_buf_add(&st->unfolded, line, len);
}

/*
 * The end of a header section: the new encoding, the empty line that
 * ended it (blank: there was one), and what the body holds.
 */
static void header_end(struct mime_state *st, int blank)
{
    int transparent;

    field_flush(st);
    transparent = st->ctype == CTYPE_MULTIPART || st->ctype == CTYPE_RFC822;
    if (st->eight)
        util_buf_add(st->out, st->sans_cte.data, st->sans_cte.len);
    else
        util_buf_add(st->out, st->section.data, st->section.len);
    st->section.len = st->sans_cte.len = 0;

    if (st->eight) {
        util_buf_printf(st->out, "Content-Transfer-Encoding: %s\r\n",
                        transparent ? "7bit" : "quoted-printable");
        st->converted++;
        st->encode = !transparent;
    }
    if (blank)
        put_line(st, "", 0);
    if (st->ctype == CTYPE_RFC822) {
        entity_start(st, CTYPE_TEXT); /* its headers come next */
        return;
    }
    st->in_header = 0;
    if (st->ctype == CTYPE_MULTIPART && st->boundary[0] &&
        st->depth < MIME_DEPTH_MAX) {
        memcpy(st->stack[st->depth].boundary, st->boundary,
               sizeof(st->boundary));
        st->stack[st->depth].part_default = st->next_default;
        st->depth++;
        st->ctype = CTYPE_OPAQUE; /* the preamble */
        st->encode = 0;
    }
}

/* A line that is neither a header field nor its continuation. */
static int header_like(const char *line, size_t len)
{
    size_t i = 0;

    while (i < len && line[i] > ' ' && line[i] < 0x7f && line[i] != ':')
        i++;
    return (i > 0 && i < len && line[i] == ':') ||
           (len > 0 && (line[0] == ' ' || line[0] == '\t'));
}

static void one_line(struct mime_state *st, const char *line, size_t len)
{
    int closing = 0;
    int level = boundary_level(st, line, len, &closing);

    if (level >= 0) {
        if (st->in_header)
            header_end(st, 0); /* an entity cut short: its fields */
        put_line(st, line, len);
        st->depth = level + 1;
        if (closing) {
            st->depth = level; /* the epilogue: copied */
            st->in_header = 0;
            st->ctype = CTYPE_OPAQUE;
            st->encode = 0;
        } else {
            entity_start(st, st->stack[level].part_default);
        }
        return;
    }
    if (st->in_header) {
        if (len == 0) {
            header_end(st, 1);
            return;
        }
        if (header_like(line, len)) {
            header_line(st, line, len);
            return;
        }
        /* No empty line: the header section ends before this line. */
        header_end(st, 0);
        if (st->in_header) { /* message/rfc822: its own headers, then */
            one_line(st, line, len);
            return;
        }
    }
    if (st->encode)
        put_qp(st, line, len);
    else
        put_line(st, line, len);
}

int smtp_mime_downgrade(const char *in, size_t len, struct util_buf *out)
{
    struct mime_state st = {0};
    size_t start = 0;

    st.out = out;
    entity_start(&st, CTYPE_TEXT);
    while (start < len) {
        const char *nl = memchr(in + start, '\n', len - start);
        size_t end = nl ? (size_t)(nl - in) : len;
        size_t n = end - start;

        if (n > 0 && in[start + n - 1] == '\r')
            n--;
        one_line(&st, in + start, n);
        start = nl ? end + 1 : len;
    }
    if (st.in_header) /* headers to the very end: they end there */
        header_end(&st, 0);
    util_buf_free(&st.field);
    util_buf_free(&st.unfolded);
    util_buf_free(&st.section);
    util_buf_free(&st.sans_cte);
    return st.converted;
}
