/*
 * NAME
 *	map 3 - the transport table file (transport_maps)
 * SYNOPSIS
 *	#include "route/route_impl.h"
 *
 *	int	route_map_load(struct route_table *t, const char *value,
 *			char *why, size_t whylen)
 *	const struct route_entry *route_map_find(const struct route_map *m,
 *			const char *key)
 *	void	route_map_free(struct route_map *m)
 * DESCRIPTION
 *	value is the transport_maps setting: the path of a text file, or
 *	empty for none, read by util/'s table reader (table.c: a "hash:"
 *	or "texthash:" prefix dropped, comments, continuation lines, and
 *	its own errors: a NUL byte, an overlong line, a file that is
 *	missing or not a regular file). Every logical line is
 *
 *		PATTERN RESULT
 *
 *	PATTERN is a domain (any case), ".domain" for every subdomain of
 *	domain (not domain itself), an address literal [192.0.2.1] or
 *	[IPv6:2001:db8::1], or "*" for everything else. RESULT is the rest
 *	of the line: "transport:nexthop"; "transport:" or "transport" (the
 *	next hop is the recipient's domain); ":nexthop" (the default
 *	transport); or ":" (the default transport to the recipient's
 *	domain, bypassing the relay host). The transport must be declared.
 *	For smtp and lmtp transports the next hop is host, host:port,
 *	[host] or [host]:port; for discard and error it is free text (the
 *	reason, for error: "error:5.1.1 no such user").
 *
 *	Every problem is an error that names the file and the line where
 *	the logical line starts: a bad pattern, a duplicate pattern (with
 *	the line of the first), a missing result, an unknown transport, a
 *	bad next hop. Loading stops at the first error.
 *
 *	The patterns go into one hash table (FNV-1a, open addressing with
 *	linear probing, at most half full), keyed by the pattern as
 *	normalized: "example.com", ".example.com", "[192.0.2.1]". A parent
 *	lookup is then a lookup of a suffix of the recipient's domain that
 *	starts at a dot, with no copying; "*" is kept aside.
 */

#include "route/route.h"
#include "route/route_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message quotes this much of a bad text. */
#define QUOTED 96

static uint64_t hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL;

    while (*s) {
        h ^= (unsigned char)*s++;
        h *= 1099511628211ULL;
    }
    return h;
}

const struct route_entry *route_map_find(const struct route_map *m,
                                         const char *key)
{
    size_t i;
    uint32_t slot;

    if (m == NULL || m->slots == NULL)
        return NULL;
    for (i = hash(key) & m->mask; (slot = m->slots[i]) != 0;
         i = (i + 1) & m->mask)
        if (strcmp(m->entries[slot - 1].pattern, key) == 0)
            return m->entries + slot - 1;
    return NULL;
}

static void slots_insert(struct route_map *m, size_t index)
{
    size_t i = hash(m->entries[index].pattern) & m->mask;

    while (m->slots[i] != 0)
        i = (i + 1) & m->mask;
    m->slots[i] = (uint32_t)(index + 1);
}

/* Keep the hash table at most half full. */
static void slots_grow(struct route_map *m)
{
    size_t size = m->mask + 1;
    size_t i;

    if (m->slots != NULL && 2 * (m->count + 1) <= size)
        return;
    size = m->slots ? 2 * size : 64;
    free(m->slots);
    m->slots = xmalloc(size * sizeof(*m->slots));
    memset(m->slots, 0, size * sizeof(*m->slots));
    m->mask = size - 1;
    for (i = 0; i < m->count; i++)
        if (m->entries[i].pattern[0] != '*')
            slots_insert(m, i);
}

void route_map_free(struct route_map *m)
{
    size_t i;

    if (m == NULL)
        return;
    for (i = 0; i < m->count; i++) {
        free(m->entries[i].pattern);
        route_hop_free(&m->entries[i].hop);
    }
    free(m->entries);
    free(m->slots);
    free(m->path);
    free(m);
}

/* The table being read, and where a problem goes. */
struct reader {
    struct route_table *t;
    int line;
    char *why;
    size_t whylen;
};

/* The problem of the line being read; util_table_read() says where. */
#define READER_FAIL(rd, ...)                                                   \
    do {                                                                       \
        snprintf((rd)->why, (rd)->whylen, __VA_ARGS__);                        \
        return -1;                                                             \
    } while (0)

/* The normalized lookup key of a pattern. */
static int pattern_parse(struct reader *rd, const char *text, size_t len,
                         char key[ROUTE_DOMAIN_MAX + 2])
{
    enum route_domain kind;
    char quoted[QUOTED];

    util_quote(quoted, sizeof(quoted), text, len, UTIL_QUOTE_8BIT);
    if (len == 1 && text[0] == '*') {
        strcpy(key, "*");
        return 0;
    }
    if (memchr(text, '@', len) != NULL)
        READER_FAIL(rd,
                    "bad pattern %s: addresses are not supported, only "
                    "domains",
                    quoted);
    if (len > 2 && text[0] == '*' && text[1] == '.')
        READER_FAIL(rd,
                    "bad pattern %s: write \".%.*s\" for the subdomains of "
                    "%.*s",
                    quoted, (int)(len - 2 > 64 ? 64 : len - 2), text + 2,
                    (int)(len - 2 > 64 ? 64 : len - 2), text + 2);
    if (text[0] == '.' && len > 1 && text[1] != '[' &&
        route_domain_parse(text + 1, len - 1, key + 1, &kind) == 0) {
        key[0] = '.';
        return 0;
    }
    if (text[0] != '.' && route_domain_parse(text, len, key, &kind) == 0)
        return 0;
    READER_FAIL(rd,
                "bad pattern %s: expected a domain, .domain, [address] or *",
                quoted);
}

static int transport_find(const struct route_table *t, const char *name,
                          size_t len)
{
    int i;

    for (i = 0; i < t->ntransports; i++)
        if (strlen(t->transports[i].name) == len &&
            memcmp(t->transports[i].name, name, len) == 0)
            return i;
    return -1;
}

static int is_blank(int ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Drop white space at both ends of s[0..*len). */
static const char *trim(const char *s, size_t *len)
{
    while (*len > 0 && is_blank((unsigned char)*s))
        s++, (*len)--;
    while (*len > 0 && is_blank((unsigned char)s[*len - 1]))
        (*len)--;
    return s;
}

/* RESULT into entry's transport and hop. */
static int result_parse(struct reader *rd, const char *text,
                        struct route_entry *e)
{
    const char *colon = strchr(text, ':');
    const char *hop = colon ? colon + 1 : "";
    size_t nlen = colon ? (size_t)(colon - text) : strlen(text);
    size_t hlen = strlen(hop);
    char quoted[QUOTED];
    char problem[256];
    char *copy;
    int status;

    text = trim(text, &nlen);
    hop = trim(hop, &hlen);
    if (nlen == 0) {
        e->transport = rd->t->default_transport;
    } else if ((e->transport = transport_find(rd->t, text, nlen)) < 0) {
        util_quote(quoted, sizeof(quoted), text, nlen, UTIL_QUOTE_8BIT);
        READER_FAIL(rd, "unknown transport %s%s", quoted,
                    colon ? "" : " (a result is transport:nexthop)");
    }
    copy = xstrndup(hop, hlen);
    status = route_hop_parse(copy, rd->t->transports[e->transport].type,
                             &e->hop, problem, sizeof(problem));
    free(copy);
    if (status < 0) {
        util_quote(quoted, sizeof(quoted), hop, hlen, UTIL_QUOTE_8BIT);
        READER_FAIL(rd, "bad nexthop %s for transport %s: %s", quoted,
                    rd->t->transports[e->transport].name, problem);
    }
    return 0;
}

/* One logical line "PATTERN RESULT". */
static int line_parse(struct reader *rd, const char *text)
{
    struct route_map *m = rd->t->map;
    const struct route_entry *dup;
    struct route_entry e;
    char key[ROUTE_DOMAIN_MAX + 2];
    char quoted[QUOTED];
    size_t plen = 0;

    while (text[plen] != 0 && !is_blank((unsigned char)text[plen]))
        plen++;
    if (pattern_parse(rd, text, plen, key) < 0)
        return -1;
    while (is_blank((unsigned char)text[plen]))
        plen++;
    if (text[plen] == 0) {
        util_quote(quoted, sizeof(quoted), text, strlen(text), UTIL_QUOTE_8BIT);
        READER_FAIL(rd,
                    "no result after pattern %s: expected PATTERN "
                    "TRANSPORT:NEXTHOP",
                    quoted);
    }
    dup = key[0] == '*' ? (m->wildcard >= 0 ? m->entries + m->wildcard : NULL)
                        : route_map_find(m, key);
    if (dup != NULL) {
        util_quote(quoted, sizeof(quoted), key, strlen(key), UTIL_QUOTE_8BIT);
        READER_FAIL(rd, "duplicate pattern %s (first on line %d)", quoted,
                    dup->line);
    }
    memset(&e, 0, sizeof(e));
    e.line = rd->line;
    if (result_parse(rd, text + plen, &e) < 0)
        return -1;
    if (m->count >= UINT32_MAX - 1) {
        route_hop_free(&e.hop);
        READER_FAIL(rd, "too many entries");
    }
    e.pattern = xstrndup(key, strlen(key));
    slots_grow(m);
    if (m->count == m->alloc) {
        m->alloc = m->alloc ? 2 * m->alloc : 64;
        m->entries = xrealloc(m->entries, m->alloc * sizeof(*m->entries));
    }
    m->entries[m->count] = e;
    if (key[0] == '*')
        m->wildcard = (long)m->count;
    else
        slots_insert(m, m->count);
    m->count++;
    return 0;
}

/* One logical line, from util_table_read(). */
static int table_line(void *ctx, int line, const char *text, char *why,
                      size_t whylen)
{
    struct reader *rd = ctx;

    rd->line = line;
    rd->why = why;
    rd->whylen = whylen;
    return line_parse(rd, text);
}

int route_map_load(struct route_table *t, const char *value, char *why,
                   size_t whylen)
{
    struct reader rd = {t, 0, why, whylen};
    struct route_map *m;
    char *path;

    if (util_table_path("transport_maps", value, &path, why, whylen) < 0)
        return -1;
    if (path == NULL)
        return 0;
    m = xmalloc(sizeof(*m));
    memset(m, 0, sizeof(*m));
    m->path = path;
    m->wildcard = -1;
    t->map = m;
    return util_table_read(path, table_line, &rd, why, whylen);
}
