/*
 * NAME
 *	json 3 - a JSON string (RFC 8259) from text that may hold anything
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	void	util_json_string(struct util_buf *b, const char *s)
 *
 *	struct util_json *util_json_parse(const char *text, size_t len,
 *			char *why, size_t whylen)
 *	void	util_json_free(struct util_json *v)
 *	const struct util_json *util_json_get(const struct util_json *v,
 *			const char *name)
 * DESCRIPTION
 *	util_json_string() appends s to b as a JSON string in double
 *	quotes: '"' and '\\' get a backslash, newline and tab their short
 *	escapes, other control bytes and DEL \u00XX. Well-formed UTF-8 is
 *	kept as it is; a byte that does not start or continue a
 *	well-formed sequence (text from a log, a reply or an address is
 *	not always UTF-8) becomes U+FFFD, so that what is written is always
 *	valid JSON for a strict parser. A NULL s is written as "".
 *
 *	util_json_parse() reads len bytes of JSON text (RFC 8259) into a
 *	tree, strictly: one value and white space only; strings of
 *	well-formed UTF-8 without control characters, escapes decoded
 *	(surrogate pairs joined; a lone surrogate or \u0000 is refused);
 *	numbers by the grammar (as double); a name twice in one object
 *	refused; at most UTIL_JSON_DEPTH_MAX levels. It returns NULL with
 *	"WHAT at byte N" in why. An object's names are in names[], its
 *	values in items[] (count of each, in the text's order); an array's
 *	values in items[]. util_json_get() finds an object's member by name
 *	(NULL: none, or v not an object). util_json_free() frees a tree.
 */

#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_length(const unsigned char *p, size_t n)
{
    size_t len;
    unsigned long cp;

    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2, cp = p[0] & 0x1f;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3, cp = p[0] & 0x0f;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4, cp = p[0] & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3f);
    }
    /* Overlong forms, surrogates and past U+10FFFF are not UTF-8. */
    if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
        return 0;
    return len;
}

void util_json_string(struct util_buf *b, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);

    util_buf_add(b, "\"", 1);
    while (n > 0) {
        size_t len;

        if (*p == '"' || *p == '\\') {
            util_buf_printf(b, "\\%c", *p);
        } else if (*p == '\n') {
            util_buf_add(b, "\\n", 2);
        } else if (*p == '\t') {
            util_buf_add(b, "\\t", 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            util_buf_printf(b, "\\u%04x", *p);
        } else if (*p < 0x80) {
            util_buf_add(b, p, 1);
        } else if ((len = utf8_length(p, n)) > 0) {
            util_buf_add(b, p, len);
            p += len;
            n -= len;
            continue;
        } else {
            util_buf_add(b, "\\ufffd", 6);
        }
        p++;
        n--;
    }
    util_buf_add(b, "\"", 1);
}

/*
 * The parser: RFC 8259, strictly. One value with white space around it
 * and nothing else; strings of well-formed UTF-8 without control
 * characters, escapes decoded (\uXXXX surrogate pairs joined; lone
 * surrogates and \u0000 refused, since the strings are C strings);
 * numbers by the grammar, kept as double; a name twice in one object
 * refused; nesting at most UTIL_JSON_DEPTH_MAX deep.
 */

struct parser {
    const char *start, *p, *end;
    char *why;
    size_t whylen;
    int depth;
};

static struct util_json *parse_value(struct parser *ps);

static void *parse_fail(struct parser *ps, const char *what)
{
    if (ps->why[0] == 0)
        snprintf(ps->why, ps->whylen, "%s at byte %zu", what,
                 (size_t)(ps->p - ps->start));
    return NULL;
}

static void skip_space(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
                               *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int literal(struct parser *ps, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return 0;
    ps->p += n;
    return 1;
}

static int hex4(const char *p, unsigned *out)
{
    unsigned v = 0;

    for (int i = 0; i < 4; i++) {
        char c = p[i];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static void utf8_put(struct util_buf *b, unsigned long cp)
{
    char u[4];

    if (cp < 0x80) {
        u[0] = (char)cp;
        util_buf_add(b, u, 1);
    } else if (cp < 0x800) {
        u[0] = (char)(0xc0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3f));
        util_buf_add(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xe0 | cp >> 12);
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[2] = (char)(0x80 | (cp & 0x3f));
        util_buf_add(b, u, 3);
    } else {
        u[0] = (char)(0xf0 | cp >> 18);
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        u[3] = (char)(0x80 | (cp & 0x3f));
        util_buf_add(b, u, 4);
    }
}

/* A string, at its opening quote; its decoded bytes, or NULL. */
static char *parse_string(struct parser *ps, size_t *lenp)
{
    struct util_buf b = UTIL_BUF_INIT;
    static const char esc_in[] = "\"\\/bfnrt", esc_out[] = "\"\\/\b\f\n\r\t";

    ps->p++; /* the quote */
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p;
        size_t len;

        if (c < 0x20) {
            util_buf_free(&b);
            return parse_fail(ps, "control character in a string");
        }
        if (c == '\\') {
            const char *e;
            unsigned u, lo;

            if (ps->end - ps->p < 2)
                break;
            if (ps->p[1] != 'u') {
                if ((e = strchr(esc_in, ps->p[1])) == NULL || ps->p[1] == 0) {
                    util_buf_free(&b);
                    return parse_fail(ps, "bad escape in a string");
                }
                util_buf_add(&b, &esc_out[e - esc_in], 1);
                ps->p += 2;
                continue;
            }
            if (ps->end - ps->p < 6 || hex4(ps->p + 2, &u) < 0) {
                util_buf_free(&b);
                return parse_fail(ps, "bad \\u escape");
            }
            ps->p += 6;
            if (u >= 0xdc00 && u <= 0xdfff) {
                util_buf_free(&b);
                return parse_fail(ps, "lone low surrogate");
            }
            if (u >= 0xd800 && u <= 0xdbff) {
                if (ps->end - ps->p < 6 || ps->p[0] != '\\' ||
                    ps->p[1] != 'u' || hex4(ps->p + 2, &lo) < 0 ||
                    lo < 0xdc00 || lo > 0xdfff) {
                    util_buf_free(&b);
                    return parse_fail(ps, "lone high surrogate");
                }
                ps->p += 6;
                utf8_put(&b, 0x10000 + ((unsigned long)(u - 0xd800) << 10) +
                                 (lo - 0xdc00));
                continue;
            }
            if (u == 0) {
                util_buf_free(&b);
                return parse_fail(ps, "\\u0000 in a string");
            }
            utf8_put(&b, u);
            continue;
        }
        if (c < 0x80) {
            util_buf_add(&b, ps->p++, 1);
            continue;
        }
        if ((len = utf8_length((const unsigned char *)ps->p,
                               (size_t)(ps->end - ps->p))) == 0) {
            util_buf_free(&b);
            return parse_fail(ps, "a string that is not UTF-8");
        }
        util_buf_add(&b, ps->p, len);
        ps->p += len;
    }
    if (ps->p >= ps->end) {
        util_buf_free(&b);
        return parse_fail(ps, "unterminated string");
    }
    ps->p++;
    *lenp = b.len;
    return b.data ? util_buf_take(&b) : xstrdup("");
}

static struct util_json *parse_number(struct parser *ps)
{
    const char *q = ps->p;
    char buf[64], *end;
    struct util_json *v;

    if (q < ps->end && *q == '-')
        q++;
    if (q < ps->end && *q == '0')
        q++;
    else if (q < ps->end && *q >= '1' && *q <= '9')
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    else
        return parse_fail(ps, "unexpected character");
    if (q < ps->end && *q == '.') {
        q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return parse_fail(ps, "bad number");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if (q < ps->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < ps->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= ps->end || *q < '0' || *q > '9')
            return parse_fail(ps, "bad number");
        while (q < ps->end && *q >= '0' && *q <= '9')
            q++;
    }
    if ((size_t)(q - ps->p) >= sizeof(buf))
        return parse_fail(ps, "number too long");
    memcpy(buf, ps->p, (size_t)(q - ps->p));
    buf[q - ps->p] = 0;
    v = xcalloc(1, sizeof(*v));
    v->type = UTIL_JSON_NUMBER;
    v->number = strtod(buf, &end);
    ps->p = q;
    return v;
}

static struct util_json *parse_container(struct parser *ps, int object)
{
    struct util_json *v = xcalloc(1, sizeof(*v));
    size_t cap = 0;

    v->type = object ? UTIL_JSON_OBJECT : UTIL_JSON_ARRAY;
    if (++ps->depth > UTIL_JSON_DEPTH_MAX) {
        util_json_free(v);
        return parse_fail(ps, "nested too deep");
    }
    ps->p++; /* [ or { */
    skip_space(ps);
    if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
        ps->p++;
        ps->depth--;
        return v;
    }
    for (;;) {
        char *name = NULL;
        size_t nlen;
        struct util_json *item;

        skip_space(ps);
        if (object) {
            if (ps->p >= ps->end || *ps->p != '"') {
                util_json_free(v);
                return parse_fail(ps, "expected a name");
            }
            if ((name = parse_string(ps, &nlen)) == NULL) {
                util_json_free(v);
                return NULL;
            }
            if (strlen(name) != nlen || util_json_get(v, name) != NULL) {
                free(name);
                util_json_free(v);
                return parse_fail(ps, "a name twice in one object");
            }
            skip_space(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                free(name);
                util_json_free(v);
                return parse_fail(ps, "expected ':'");
            }
            ps->p++;
        }
        if ((item = parse_value(ps)) == NULL) {
            free(name);
            util_json_free(v);
            return NULL;
        }
        if (v->count == cap) {
            cap = cap ? cap * 2 : 4;
            v->items = xrealloc(v->items, cap * sizeof(*v->items));
            if (object)
                v->names = xrealloc(v->names, cap * sizeof(*v->names));
        }
        v->items[v->count] = item;
        if (object)
            v->names[v->count] = name;
        v->count++;
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == (object ? '}' : ']')) {
            ps->p++;
            ps->depth--;
            return v;
        }
        util_json_free(v);
        return parse_fail(ps, object ? "expected ',' or '}'"
                                     : "expected ',' or ']'");
    }
}

static struct util_json *parse_value(struct parser *ps)
{
    struct util_json *v;

    skip_space(ps);
    if (ps->p >= ps->end)
        return parse_fail(ps, "unexpected end");
    switch (*ps->p) {
    case '{':
        return parse_container(ps, 1);
    case '[':
        return parse_container(ps, 0);
    case '"':
        v = xcalloc(1, sizeof(*v));
        v->type = UTIL_JSON_STRING;
        if ((v->string = parse_string(ps, &v->length)) == NULL) {
            free(v);
            return NULL;
        }
        return v;
    default:
        break;
    }
    if (literal(ps, "true") || literal(ps, "false") || literal(ps, "null")) {
        v = xcalloc(1, sizeof(*v));
        v->type = ps->p[-1] == 'l' ? UTIL_JSON_NULL : UTIL_JSON_BOOL;
        v->boolean = ps->p[-1] == 'e' && ps->p[-2] == 'u';
        return v;
    }
    return parse_number(ps);
}

struct util_json *util_json_parse(const char *text, size_t len, char *why,
                                  size_t whylen)
{
    struct parser ps = {text, text, text + len, why, whylen, 0};
    struct util_json *v;

    why[0] = 0;
    if ((v = parse_value(&ps)) == NULL)
        return NULL;
    skip_space(&ps);
    if (ps.p != ps.end) {
        util_json_free(v);
        return parse_fail(&ps, "text after the value");
    }
    return v;
}

void util_json_free(struct util_json *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->count; i++) {
        util_json_free(v->items[i]);
        if (v->names)
            free(v->names[i]);
    }
    free(v->items);
    free(v->names);
    free(v->string);
    free(v);
}

const struct util_json *util_json_get(const struct util_json *v,
                                      const char *name)
{
    if (v == NULL || v->type != UTIL_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->names[i], name) == 0)
            return v->items[i];
    return NULL;
}
