/*
 * NAME
 *	header 3 - the header fields of a message to be signed, its From:
 * SYNOPSIS
 *	#include "dkim/dkim.h"
 *
 *	int	dkim_header_split(const char *head, size_t len, int whole,
 *			struct dkim_header *h)
 *	int	dkim_header_from(const struct dkim_header *h, char *addr,
 *			size_t len)
 *	void	dkim_header_free(struct dkim_header *h)
 * DESCRIPTION
 *	dkim_header_split() finds the header fields in head, the first len
 *	bytes of a message in its stored form (CRLF line ends): a field is
 *	a line and the lines after it that begin with white space (RFC
 *	5322 2.2.3); the header section ends at the first empty line, and
 *	the body starts after it (h->body). When whole is set head is the
 *	whole message, and one without an empty line is all header, with
 *	an empty body. A field's name is what comes before its colon,
 *	without the white space there; a line without a colon is kept as
 *	a field with an empty name, which nothing signs. It returns the
 *	number of fields, or -1 when the header section does not end
 *	within head (and whole is not set); h is then empty.
 *
 *	dkim_header_from() finds the one From: field and writes the first
 *	address in it, lowercased (OpenDKIM compares without case too):
 *	the addr-spec between "<" and ">", or the bare one; quoted strings
 *	and comments are skipped, so a display name with "<" or "@" in it
 *	does not fool it. It returns 0, or -1 when there is no From: field
 *	or more than one (RFC 5322 3.6 allows one: a second is an attempt
 *	to make the signer and the reader see different authors), or no
 *	address of the form local@domain in it, or one longer than len.
 */

#include "dkim/dkim.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static size_t name_length(const char *p, size_t len)
{
    const char *colon = memchr(p, ':', len);
    size_t n;

    if (colon == NULL)
        return 0;
    n = (size_t)(colon - p);
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return n;
}

/* The end of the line that starts at i: after its LF, or len. */
static size_t line_end(const char *p, size_t len, size_t i)
{
    const char *nl = memchr(p + i, '\n', len - i);

    return nl == NULL ? len : (size_t)(nl - p) + 1;
}

static void field_add(struct dkim_header *h, size_t *cap, const char *p,
                      size_t len)
{
    if (h->n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        h->f = xrealloc(h->f, *cap * sizeof(*h->f));
    }
    h->f[h->n].p = p;
    h->f[h->n].len = len;
    h->f[h->n].name_len = name_length(p, len);
    h->n++;
}

int dkim_header_split(const char *head, size_t len, int whole,
                      struct dkim_header *h)
{
    size_t i = 0, cap = 0, start = 0, end;
    int open = 0;

    memset(h, 0, sizeof(*h));
    while (i < len) {
        end = line_end(head, len, i);
        if (end - i <= 2 && (head[i] == '\r' || head[i] == '\n') &&
            head[end - 1] == '\n') { /* the empty line */
            if (open)
                field_add(h, &cap, head + start, i - start);
            h->body = end;
            return (int)h->n;
        }
        if (end == len && head[end - 1] != '\n' && !whole)
            break; /* a line cut by the end of the head */
        if (!(head[i] == ' ' || head[i] == '\t') || !open) {
            if (open)
                field_add(h, &cap, head + start, i - start);
            start = i;
            open = 1;
        }
        i = end;
    }
    if (!whole) {
        dkim_header_free(h);
        return -1;
    }
    if (open)
        field_add(h, &cap, head + start, len - start);
    h->body = len;
    return (int)h->n;
}

void dkim_header_free(struct dkim_header *h)
{
    free(h->f);
    memset(h, 0, sizeof(*h));
}

/* ---------------------------------------------------------------- From */

/*
 * The text of a field's value outside quoted strings and comments, with
 * "<" and ">" kept: enough to find its first address.
 */
static char *plain_value(const struct dkim_field *f)
{
    const char *v = memchr(f->p, ':', f->len) + 1;
    const char *end = f->p + f->len;
    char *out = xmalloc(f->len + 1), *o = out;
    int quoted = 0, depth = 0;

    for (; v < end; v++) {
        if ((quoted || depth) && *v == '\\' && v + 1 < end) {
            v++;
            continue;
        }
        if (quoted) {
            quoted = *v != '"';
        } else if (*v == '(') {
            depth++;
        } else if (depth) {
            depth -= *v == ')';
        } else if (*v == '"') {
            quoted = 1;
        } else if (*v != '\r' && *v != '\n' && *v != ' ' && *v != '\t') {
            *o++ = *v;
        }
    }
    *o = 0;
    return out;
}

static int address_valid(const char *a)
{
    const char *at = strrchr(a, '@');

    return at != NULL && at > a && at[1] != 0 && strchr(a, '@') == at;
}

int dkim_header_from(const struct dkim_header *h, char *addr, size_t len)
{
    const struct dkim_field *from = NULL;
    char *plain, *a, *e;
    int rc = -1;

    for (size_t i = 0; i < h->n; i++) {
        if (h->f[i].name_len == 4 && strncasecmp(h->f[i].p, "From", 4) == 0) {
            if (from != NULL)
                return -1;
            from = &h->f[i];
        }
    }
    if (from == NULL)
        return -1;
    plain = plain_value(from);
    a = strchr(plain, '<');
    if (a != NULL) {
        a++;
        e = strchr(a, '>');
    } else {
        a = plain;
        e = strchr(a, ',');
    }
    if (e != NULL)
        *e = 0;
    if (address_valid(a) && strlen(a) < len && strpbrk(a, "<>,;:") == NULL) {
        for (size_t i = 0; a[i]; i++)
            addr[i] = (char)tolower((unsigned char)a[i]);
        addr[strlen(a)] = 0;
        rc = 0;
    }
    free(plain);
    return rc;
}
