/*
 * NAME
 *	table 3 - a lookup table file in Postfix's syntax, line by line
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_table_path(const char *param, const char *value,
 *			char **path, char *why, size_t whylen)
 *	int	util_table_read(const char *path, util_table_line_fn *fn,
 *			void *ctx, char *why, size_t whylen)
 *	int	util_table_sort(void *entries, size_t count, size_t size,
 *			const char *path, char *why, size_t whylen)
 *	void	*util_table_find(const void *entries, size_t count,
 *			size_t size, const char *key)
 * DESCRIPTION
 *	The tables an operator writes for Postfix (transport_maps,
 *	smtp_tls_policy_maps) are text files that postmap would compile;
 *	sluice reads the text itself. These two functions are what every
 *	such table shares (the zmailer scheduler's rules file, in ZMailer's
 *	scheduler.conf form, too); what a line means is the caller's.
 *
 *	util_table_path() reads the value of parameter param: empty (or
 *	blanks) for no table (*path NULL), or the path of one text file,
 *	with a "hash:" or "texthash:" prefix dropped (the file named is
 *	then the text source). Any other table type, or a list of several
 *	tables, is refused with a message that names param. *path is
 *	allocated. Returns 0 or -1.
 *
 *	util_table_read() reads the file at path: a line whose first
 *	non-blank character is "#" is a comment, blank lines are ignored,
 *	and a line that starts with white space continues the one before
 *	it (joined with one space). Each logical line, without the white
 *	space at its ends, goes to fn(ctx, line, text, why, whylen) in
 *	order, with the number of the physical line it starts on. fn
 *	returns 0, or -1 with its problem in why; the reader then writes
 *	"PATH, line N: " before that problem and stops.
 *
 *	The reader's own problems name the file and the line too: a NUL
 *	byte, a line longer than UTIL_TABLE_LINE_MAX (nothing more of it
 *	is read, so a line of any length costs no more memory), a
 *	continuation with nothing before it. A missing or unreadable file
 *	is an error, as is one that is not a regular file (a FIFO would
 *	block, /dev/zero never ends; opened without blocking). It returns
 *	0 when every line was taken, -1 otherwise.
 *
 *	A table read into memory is an array of entries of size bytes,
 *	each beginning with a struct util_table_key (its key and line).
 *	util_table_sort() sorts it by key (the file's order among equal
 *	keys) and refuses a key written twice: -1 with "PATH, line N:
 *	duplicate key "KEY" (first on line M)". util_table_find() finds an
 *	entry of a sorted array by its exact key (binary search), or NULL.
 */

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int key_cmp(const void *a, const void *b)
{
    const struct util_table_key *x = a, *y = b;
    int c = strcmp(x->key, y->key);

    return c ? c : (x->line > y->line) - (x->line < y->line);
}

int util_table_sort(void *entries, size_t count, size_t size, const char *path,
                    char *why, size_t whylen)
{
    char *base = entries;

    if (count == 0)
        return 0;
    qsort(base, count, size, key_cmp);
    for (size_t i = 1; i < count; i++) {
        const struct util_table_key *a = (const void *)(base + (i - 1) * size);
        const struct util_table_key *b = (const void *)(base + i * size);

        if (strcmp(a->key, b->key) == 0) {
            snprintf(why, whylen,
                     "%s, line %d: duplicate key \"%.60s\" (first on line %d)",
                     path, b->line, b->key, a->line);
            return -1;
        }
    }
    return 0;
}

void *util_table_find(const void *entries, size_t count, size_t size,
                      const char *key)
{
    const char *base = entries;
    size_t lo = 0, hi = count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct util_table_key *e = (const void *)(base + mid * size);
        int c = strcmp(key, e->key);

        if (c == 0)
            return (void *)e;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

struct reader {
    const char *path;
    util_table_line_fn *fn;
    void *ctx;
    char *why;
    size_t whylen;
    struct util_buf text; /* the logical line being assembled */
    int start;            /* where it starts; 0: none */
};

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

/* "PATH, line N: " then the problem already in why, or fmt's. */
static int fail_at(struct reader *rd, int line, const char *problem)
{
    char *copy = xstrdup(problem);

    snprintf(rd->why, rd->whylen, "%s, line %d: %s", rd->path, line, copy);
    free(copy);
    return -1;
}

static int logical_add(struct reader *rd, const char *text, size_t len)
{
    char problem[64];

    if (rd->text.len + len + 1 > UTIL_TABLE_LINE_MAX) {
        snprintf(problem, sizeof(problem), "logical line longer than %d bytes",
                 UTIL_TABLE_LINE_MAX);
        return fail_at(rd, rd->start, problem);
    }
    if (rd->text.len > 0)
        util_buf_add(&rd->text, " ", 1);
    util_buf_add(&rd->text, text, len);
    return 0;
}

/* Hand over the logical line held, if any, and start over. */
static int logical_end(struct reader *rd)
{
    int status = 0;

    if (rd->start == 0)
        return 0;
    rd->why[0] = 0;
    if (rd->fn(rd->ctx, rd->start, rd->text.data, rd->why, rd->whylen) < 0)
        status = fail_at(rd, rd->start, rd->why);
    util_buf_reset(&rd->text);
    rd->start = 0;
    return status;
}

/* One physical line, without its newline. */
static int physical_line(struct reader *rd, int lineno, const char *line,
                         size_t len)
{
    const char *text;

    if (memchr(line, 0, len) != NULL)
        return fail_at(rd, lineno, "line contains a NUL byte");
    text = trim(line, &len);
    if (len == 0 || text[0] == '#')
        return 0;
    if (!is_blank((unsigned char)line[0])) {
        if (logical_end(rd) < 0)
            return -1;
        rd->start = lineno;
        return logical_add(rd, text, len);
    }
    if (rd->start == 0)
        return fail_at(rd, lineno,
                       "continuation line (starting with white space) "
                       "with nothing before it");
    return logical_add(rd, text, len);
}

/*
 * Read one line into buf (size bytes), without its newline. Returns 1
 * with the line, 0 at the end of the file, -1 when the line does not
 * fit: nothing more of it is read.
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
    char *line = xmalloc(UTIL_TABLE_LINE_MAX + 1);
    char problem[64];
    size_t n;
    int lineno = 0;
    int status = 0;
    int got;

    errno = 0;
    while (status == 0 &&
           (got = line_get(fp, line, UTIL_TABLE_LINE_MAX + 1, &n)) != 0) {
        lineno++;
        if (got < 0) {
            snprintf(problem, sizeof(problem), "line longer than %d bytes",
                     UTIL_TABLE_LINE_MAX);
            status = fail_at(rd, lineno, problem);
            break;
        }
        line[n] = 0;
        status = physical_line(rd, lineno, line, n);
        errno = 0;
    }
    if (status == 0 && ferror(fp)) {
        snprintf(rd->why, rd->whylen, "%s: %s", rd->path,
                 strerror(errno ? errno : EIO));
        status = -1;
    }
    if (status == 0)
        status = logical_end(rd);
    free(line);
    return status;
}

/* Open path for reading, if it is a regular file (or a directory, which
 * then fails to read with EISDIR). */
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

int util_table_read(const char *path, util_table_line_fn *fn, void *ctx,
                    char *why, size_t whylen)
{
    struct reader rd = {path, fn, ctx, why, whylen, UTIL_BUF_INIT, 0};
    FILE *fp;
    int status;

    if ((fp = table_open(path, why, whylen)) == NULL)
        return -1;
    status = lines_read(&rd, fp);
    fclose(fp);
    util_buf_free(&rd.text);
    return status;
}

int util_table_path(const char *param, const char *value, char **path,
                    char *why, size_t whylen)
{
    size_t len = strlen(value);
    const char *text = trim(value, &len);
    size_t type = 0;
    char quoted[UTIL_QUOTE_MAX + 16];

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
            util_quote(quoted, sizeof(quoted), text, type, UTIL_QUOTE_8BIT);
            snprintf(why, whylen,
                     "%s: table type %s is not supported: expected the "
                     "path of a text file",
                     param, quoted);
            return -1;
        }
    }
    if (len == 0 || strcspn(text, ", \t") < len) {
        util_quote(quoted, sizeof(quoted), value, strlen(value),
                   UTIL_QUOTE_8BIT);
        snprintf(why, whylen,
                 "%s: bad value %s: expected the path of one text file", param,
                 quoted);
        return -1;
    }
    *path = xstrndup(text, len);
    return 0;
}
