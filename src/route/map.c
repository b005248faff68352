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
 *	empty for none. A Postfix "hash:" or "texthash:" prefix is
 *	dropped (the file named is then the text source that postmap
 *	would have compiled); any other table type is an error, as is a
 *	list of several tables.
 *
 *	The file has Postfix's table syntax: a line whose first non-blank
 *	character is "#" is a comment, blank lines are ignored, and a line
 *	that starts with white space continues the one before it (joined
 *	with one space). Every other line is
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
 *	the logical line starts: a NUL byte, a line longer than
 *	LINE_MAX_BYTES (read no further than that, so that a line of any
 *	length costs no more memory), a bad pattern, a duplicate pattern (with the line
 *	of the first), a missing result, an unknown transport, a bad next
 *	hop. A missing or unreadable file is an error too, as is one that
 *	is not a regular file (a FIFO would block, /dev/zero never ends). Loading stops at
 *	the first error.
 *
 *	The patterns go into one hash table (FNV-1a, open addressing with
 *	linear probing, at most half full), keyed by the pattern as
 *	normalized: "example.com", ".example.com", "[192.0.2.1]". A parent
 *	lookup is then a lookup of a suffix of the recipient's domain that
 *	starts at a dot, with no copying; "*" is kept aside.
 */

#include "route/route.h"
#include "route/route_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest logical line: far beyond any real entry, short of hostile. */
#define LINE_MAX_BYTES (64 * 1024)

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

/* Where an error happened, for messages. */
struct reader {
    struct route_table *t;
    const char *path;
    int line;
    char *why;
    size_t whylen;
};

#define READER_FAIL(rd, ...)                                                   \
    do {                                                                       \
        int used_ = snprintf((rd)->why, (rd)->whylen,                          \
                             "%s, line %d: ", (rd)->path, (rd)->line);         \
        if (used_ >= 0 && (size_t)used_ < (rd)->whylen)                        \
            snprintf((rd)->why + used_, (rd)->whylen - (size_t)used_,          \
                     __VA_ARGS__);                                             \
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

/* A logical line being assembled. */
struct logical {
    struct util_buf text;
    int line; /* where it starts; 0: none */
};

static int logical_add(struct reader *rd, struct logical *lg, const char *text,
                       size_t len)
{
    if (lg->text.len + len + 1 > LINE_MAX_BYTES) {
        rd->line = lg->line;
        READER_FAIL(rd, "logical line longer than %d bytes", LINE_MAX_BYTES);
    }
    if (lg->text.len > 0)
        util_buf_add(&lg->text, " ", 1);
    util_buf_add(&lg->text, text, len);
    return 0;
}

/* Parse the logical line held, if any, and start over. */
static int logical_end(struct reader *rd, struct logical *lg)
{
    int status;

    if (lg->line == 0)
        return 0;
    rd->line = lg->line;
    status = line_parse(rd, lg->text.data);
    util_buf_reset(&lg->text);
    lg->line = 0;
    return status;
}

/* One physical line, without its newline. */
static int physical_line(struct reader *rd, struct logical *lg, int lineno,
                         char *line, size_t len)
{
    const char *text;

    if (memchr(line, 0, len) != NULL) {
        rd->line = lineno;
        READER_FAIL(rd, "line contains a NUL byte");
    }
    text = trim(line, &len);
    if (len == 0 || text[0] == '#')
        return 0;
    if (!is_blank((unsigned char)line[0])) {
        if (logical_end(rd, lg) < 0)
            return -1;
        lg->line = lineno;
        return logical_add(rd, lg, text, len);
    }
    if (lg->line == 0) {
        rd->line = lineno;
        READER_FAIL(rd, "continuation line (starting with white space) "
                        "with nothing before it");
    }
    return logical_add(rd, lg, text, len);
}

/*
 * Read one line into buf (size bytes), without its newline. Returns 1
 * with the line, 0 at the end of the file, -1 when the line does not
 * fit: nothing more of it is read, so a line of any length (or a file
 * that never ends) costs no more than buf.
 */
static int line_get(FILE *fp, char *buf, size_t size, size_t *len)
{
    int ch = EOF;

    *len = 0;
    while (*len < size && (ch = getc(fp)) != EOF && ch != '\n')
        buf[(*len)++] = (char)ch;
    if (*len == size)
        return -1;
    return ch != EOF || *len > 0 ? 1 : 0;
}

static int lines_read(struct reader *rd, FILE *fp)
{
    struct logical lg = {UTIL_BUF_INIT, 0};
    char *line = xmalloc(LINE_MAX_BYTES + 1);
    size_t n;
    int lineno = 0;
    int status = 0;
    int got;

    errno = 0;
    while (status == 0 &&
           (got = line_get(fp, line, LINE_MAX_BYTES + 1, &n)) != 0) {
        lineno++;
        if (got < 0) {
            rd->line = lineno;
            snprintf(rd->why, rd->whylen,
                     "%s, line %d: line longer than %d "
                     "bytes",
                     rd->path, lineno, LINE_MAX_BYTES);
            status = -1;
            break;
        }
        line[n] = 0;
        status = physical_line(rd, &lg, lineno, line, n);
        errno = 0;
    }
    if (status == 0 && ferror(fp)) {
        snprintf(rd->why, rd->whylen, "%s: %s", rd->path,
                 strerror(errno ? errno : EIO));
        status = -1;
    }
    if (status == 0)
        status = logical_end(rd, &lg);
    util_buf_free(&lg.text);
    free(line);
    return status;
}

/* Open path for reading, if it is a regular file (or a directory, which
 * then fails to read with EISDIR as it always did). */
static FILE *table_open(const char *path, char *why, size_t whylen)
{
    struct stat st;
    FILE *fp;
    int fd;

    /* O_NONBLOCK: a FIFO must not stop the daemon at open */
    if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    if (fstat(fd, &st) < 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
        snprintf(why, whylen, "%s: not a regular file", path);
        close(fd);
        return NULL;
    }
    if ((fp = fdopen(fd, "r")) == NULL) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        close(fd);
    }
    return fp;
}

/* The file named by a transport_maps value, or NULL for none. */
static int path_get(const char *value, char **path, char *why, size_t whylen)
{
    size_t len = strlen(value);
    const char *text = trim(value, &len);
    size_t type = 0;

    *path = NULL;
    if (len == 0)
        return 0;
    while (type < len && ((text[type] >= 'a' && text[type] <= 'z') ||
                          (text[type] >= '0' && text[type] <= '9')))
        type++;
    if (type > 0 && type < len && text[type] == ':' && text[0] != '/') {
        if ((type == 4 && strncmp(text, "hash", 4) == 0) ||
            (type == 8 && strncmp(text, "texthash", 8) == 0)) {
            text += type + 1;
            len -= type + 1;
        } else {
            return route_refuse(why, whylen, "transport_maps: table type ",
                                text, type,
                                " is not supported: expected the path of a "
                                "text file");
        }
    }
    if (len == 0 || strcspn(text, ", \t") < len)
        return route_refuse(why, whylen, "transport_maps: bad value ", value,
                            strlen(value),
                            ": expected the path of one text file");
    *path = xstrndup(text, len);
    return 0;
}

int route_map_load(struct route_table *t, const char *value, char *why,
                   size_t whylen)
{
    struct reader rd = {t, NULL, 0, why, whylen};
    struct route_map *m;
    char *path;
    FILE *fp;
    int status;

    if (path_get(value, &path, why, whylen) < 0)
        return -1;
    if (path == NULL)
        return 0;
    if ((fp = table_open(path, why, whylen)) == NULL) {
        free(path);
        return -1;
    }
    m = xmalloc(sizeof(*m));
    memset(m, 0, sizeof(*m));
    m->path = path;
    m->wildcard = -1;
    t->map = m;
    rd.path = path;
    status = lines_read(&rd, fp);
    fclose(fp);
    return status;
}
