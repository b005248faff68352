/*
 * NAME
 *	file 3 - the sluice configuration file
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	int	conf_load(struct conf *conf, const char *path, int must_exist,
 *			char *why, size_t whylen)
 *	const char *conf_path(const char *opt_path, int *must_exist)
 * DESCRIPTION
 *	conf_load() reads a file of logical lines "name = value" into conf
 *	and validates the result. The syntax is main.cf's:
 *
 *	- a line whose first non-blank character is '#' is a comment, and
 *	  a line of only white space is ignored; neither ends a logical
 *	  line, so a value may continue after them;
 *	- a line that starts with white space continues the logical line
 *	  before it; the pieces are joined with one space;
 *	- white space at the end of every line, and around the name and
 *	  the value, is removed; '#' after the start of a line is text;
 *	- a later setting of a name replaces an earlier one.
 *
 *	A name the parameter table does not know is kept aside (unknown.c)
 *	when it is made of letters, digits, '_', '-' and '.'; any other
 *	name is an error.
 *
 *	The file is read whole (at most CONF_FILE_MAX bytes), then split at
 *	newlines; the last line needs no newline. Any byte other than NUL
 *	is text: junk gives an error message, not a crash. Errors name the
 *	file and the line where the logical line starts. conf_load() stops
 *	at the first error; the configuration is then partly changed and
 *	should be thrown away.
 *
 *	conf_path() chooses the file: opt_path (the -c option) if not
 *	NULL, else $SLUICE_CONFIG if set and not empty (the file must then
 *	exist), else SLUICE_CONFIG_FILE (which may be missing: sluice then
 *	runs on its defaults).
 */

#include "conf/conf.h"
#include "conf/conf_private.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef SLUICE_CONFIG_FILE
#define SLUICE_CONFIG_FILE "/etc/sluice/sluice.conf"
#endif

/* A config file is small; a huge one is a mistake (-c /dev/zero). */
#define CONF_FILE_MAX (64L * 1024 * 1024)

/* How much of a bad line an error message shows. */
#define LINE_QUOTE 128

const char *conf_path(const char *opt_path, int *must_exist)
{
    const char *env;
    int dummy;

    if (must_exist == NULL)
        must_exist = &dummy;
    if (opt_path != NULL) {
        *must_exist = 1;
        return opt_path;
    }
    if ((env = getenv("SLUICE_CONFIG")) != NULL && *env != 0) {
        *must_exist = 1;
        return env;
    }
    *must_exist = 0;
    return SLUICE_CONFIG_FILE;
}

/*
 * Read the whole file. Returns 1 with the data, 0 when the file does
 * not exist and need not, -1 with a message.
 */
static int file_read(const char *path, int must_exist, char **data, size_t *len,
                     char *why, size_t whylen)
{
    FILE *fp;
    size_t size = 4096;
    size_t n;
    char *buf;

    if ((fp = fopen(path, "r")) == NULL) {
        if (errno == ENOENT && !must_exist)
            return 0;
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    buf = xmalloc(size);
    *len = 0;
    while ((n = fread(buf + *len, 1, size - *len, fp)) > 0) {
        *len += n;
        if (*len > CONF_FILE_MAX) {
            snprintf(why, whylen, "%s: larger than %ld bytes", path,
                     CONF_FILE_MAX);
            goto fail;
        }
        if (*len == size)
            buf = xrealloc(buf, size *= 2);
    }
    if (ferror(fp)) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        goto fail;
    }
    fclose(fp);
    *data = buf;
    return 1;

fail:
    fclose(fp);
    free(buf);
    return -1;
}

/* A logical line being assembled. */
struct logical {
    struct util_buf text;
    int line; /* where it starts; 0: none */
};

static void logical_add(struct logical *lg, const char *text, size_t len)
{
    if (lg->text.len > 0)
        util_buf_add(&lg->text, " ", 1);
    util_buf_add(&lg->text, text, len);
}

static int is_blank(int ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\v' || ch == '\f';
}

/* Trim white space from both ends of s[0..*len), in place. */
static char *trim(char *s, size_t *len)
{
    while (*len > 0 && is_blank((unsigned char)*s))
        s++, (*len)--;
    while (*len > 0 && is_blank((unsigned char)s[*len - 1]))
        (*len)--;
    s[*len] = 0;
    return s;
}

/*
 * Apply one complete logical line "name = value". The name and value
 * are cut out of lg->text in place: the caller empties it afterwards.
 */
static int logical_apply(struct conf *conf, const char *path,
                         struct logical *lg, char *why, size_t whylen)
{
    char quoted[LINE_QUOTE];
    size_t param, tlen;
    char *eq;
    char *name;
    char *value;
    size_t nlen;
    size_t vlen;
    int line;

    if (lg->line == 0)
        return 0;
    if ((eq = strchr(lg->text.data, '=')) == NULL) {
        conf_quote(quoted, sizeof(quoted), lg->text.data);
        snprintf(why, whylen, "%s, line %d: expected \"name = value\": %s",
                 path, lg->line, quoted);
        return -1;
    }
    nlen = (size_t)(eq - lg->text.data);
    vlen = lg->text.len - nlen - 1;
    name = trim(lg->text.data, &nlen);
    value = trim(eq + 1, &vlen);
    if (nlen == 0) {
        snprintf(why, whylen, "%s, line %d: no parameter name before \"=\"",
                 path, lg->line);
        return -1;
    }
    line = lg->line;
    lg->line = 0;
    if (conf_name_find(conf, name, nlen, &param, &tlen) != CONF_NAME_UNKNOWN)
        return conf_set_at(conf, name, value, path, line, why, whylen);
    if (!conf_name_syntax_ok(name)) {
        conf_quote(quoted, sizeof(quoted), name);
        snprintf(why, whylen, "%s, line %d: bad parameter name %s", path, line,
                 quoted);
        return -1;
    }
    conf_unknown_set(conf, name, value, path, line);
    return 0;
}

static int lines_parse(struct conf *conf, const char *path, char *data,
                       size_t len, char *why, size_t whylen)
{
    struct logical lg = {UTIL_BUF_INIT, 0};
    char *line = data;
    char *end = data + len;
    char *nl;
    size_t llen;
    int lineno = 0;
    int status = 0;

    for (; line < end && status == 0; line = nl + 1) {
        lineno++;
        if ((nl = memchr(line, '\n', (size_t)(end - line))) == NULL)
            nl = end;
        llen = (size_t)(nl - line);
        if (memchr(line, 0, llen) != NULL) {
            snprintf(why, whylen, "%s, line %d: line contains a NUL byte", path,
                     lineno);
            status = -1;
            break;
        }
        line[llen] = 0; /* the newline, or the spare byte after data */
        while (llen > 0 && is_blank((unsigned char)line[llen - 1]))
            line[--llen] = 0;
        if (!is_blank((unsigned char)line[0])) {
            if (line[0] == '#' || line[0] == 0)
                continue;
            status = logical_apply(conf, path, &lg, why, whylen);
            util_buf_reset(&lg.text); /* name and value pointed into it */
            lg.line = lineno;
            logical_add(&lg, line, llen);
            continue;
        }
        line = trim(line, &llen);
        if (llen == 0 || line[0] == '#')
            continue;
        if (lg.line == 0) {
            snprintf(why, whylen,
                     "%s, line %d: continuation line (starting with white "
                     "space) with nothing before it",
                     path, lineno);
            status = -1;
            break;
        }
        logical_add(&lg, line, llen);
    }
    if (status == 0)
        status = logical_apply(conf, path, &lg, why, whylen);
    util_buf_free(&lg.text);
    return status;
}

int conf_load(struct conf *conf, const char *path, int must_exist, char *why,
              size_t whylen)
{
    char *data;
    size_t len;
    int status;

    switch (file_read(path, must_exist, &data, &len, why, whylen)) {
    case -1:
        return -1;
    case 0:
        return conf_validate(conf, why, whylen);
    }
    status = lines_parse(conf, path, data, len, why, whylen);
    free(data);
    if (status < 0)
        return -1;
    return conf_validate(conf, why, whylen);
}
