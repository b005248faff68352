/*
 * NAME
 *	rules 3 - the scheduler rules file, ZMailer's scheduler.conf form
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	struct conf_rules *conf_rules_load(const char *path, char *why,
 *			size_t whylen)
 *	struct conf_rules *conf_rules_create(const char *name)
 *	int	conf_rules_line(struct conf_rules *r, int line,
 *			const char *text, char *why, size_t whylen)
 *	int	conf_rules_finish(struct conf_rules *r, char *why,
 *			size_t whylen)
 *	void	conf_rules_free(struct conf_rules *r)
 *	size_t	conf_rules_count(const struct conf_rules *r)
 *	int	conf_rules_maxta(const struct conf_rules *r)
 *	int	conf_rules_match(const struct conf_rules *r,
 *			const char *channel, const char *host,
 *			struct conf_rule_match *m)
 *	int	conf_rules_channel_known(const struct conf_rules *r,
 *			const char *channel)
 *	int	conf_rules_channel_program(const struct conf_rules *r,
 *			const char *channel, int *line)
 *	char	**conf_rules_argv(const struct conf_rule_match *m,
 *			const char *channel, const char *host)
 *	void	conf_rules_argv_free(char **argv)
 *	int64_t conf_rules_retry_delay(const struct conf_rule_match *m,
 *			int attempt)
 *	void	conf_rules_zrule(const struct conf_rule_match *m,
 *			struct core_zrule *z)
 * DESCRIPTION
 *	The file scheduler_rules names is a list of clauses, as in
 *	ZMailer's scheduler.conf: a clause starts at the beginning of a
 *	line with its selector, channel/host (shell globs, fnmatch(3); a
 *	selector without "/" is a channel, its host "*"), followed by
 *	options, on the same line or on lines that start with white space.
 *	"#" at the start of a line (after blanks) is a comment. Options
 *	are key=value or a bare keyword, keywords in any case; a value in
 *	double quotes may hold blanks, and a backslash in it quotes the
 *	next character. The file is read by util_table_read(), so its
 *	limits and messages ("PATH, line N: ...") are every table's.
 *
 *	Options: command="PROGRAM ARGS" (smtp and lmtp alone are the
 *	built-in sessions; any other program is an absolute path whose
 *	words may hold $host and $channel, or ${host} and ${channel});
 *	maxring=N (agents of a thread-ring), maxta=N (agents overall, once
 *	in the file), idlemax=TIME, interval=TIME, retries="N N ...",
 *	skew=N, and the flags ageorder and queueonly. ZMailer keywords
 *	that sluice does not implement are refused by name, as is
 *	anything else; nothing is ignored in silence.
 *
 *	A clause with nothing but its selector takes the options of the
 *	next clause that has some (ZMailer's rule).
 *
 *	conf_rules_match() walks the clauses in order, as ZMailer does:
 *	every clause whose selector matches channel/host adds its options
 *	(a later value replaces an earlier one), and the first matching
 *	clause with a command ends the walk; it is the rule (m->index).
 *	Hosts are matched in lower case. It returns 0, or -1 when no
 *	clause with a command matches. conf_rules_channel_known() says
 *	whether some clause with a command could match the channel.
 *	conf_rules_channel_program() is for a transport of the agent type
 *	(decision 129): 1 when some clause whose command is an external
 *	program could match the channel, else -1 when clauses with a
 *	built-in command (smtp, lmtp) could, the first one's line in
 *	*line, else 0.
 *
 *	conf_rules_argv() returns the command's words with $host and
 *	$channel replaced (a NULL-terminated array, each word whole: no
 *	shell ever sees it); conf_rules_argv_free() frees it.
 *	conf_rules_retry_delay() is the wait before retry number attempt
 *	(0 for the first): interval times the attempt's factor in retries
 *	(the last one once the list is used up; 1 without a list), that
 *	factor at most skew when skew is set. conf_rules_zrule() gives
 *	core/ its part of a match.
 *
 *	conf_rules_create(), conf_rules_line() and conf_rules_finish() are
 *	the loader's steps, one logical line at a time, for the tests and
 *	the fuzz target; conf_rules_load() is create, read, finish. Each
 *	returns -1 (NULL) with a complete message on bad input and never
 *	aborts.
 */

#include "conf/conf.h"

#include "core/core.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SELECTOR_MAX     255
#define WORD_MAX         1024
#define IDLEMAX_DEFAULT  (100 * 1000)
#define INTERVAL_DEFAULT (300 * 1000)

enum { /* what a clause sets */
       SET_COMMAND = 1 << 0,
       SET_MAXRING = 1 << 1,
       SET_IDLEMAX = 1 << 2,
       SET_INTERVAL = 1 << 3,
       SET_RETRIES = 1 << 4,
       SET_SKEW = 1 << 5,
       SET_AGEORDER = 1 << 6,
       SET_QUEUEONLY = 1 << 7,
       SET_MAXTA = 1 << 8,
};

struct clause {
    char *channel, *host;
    int line;
    unsigned set;
    enum conf_rule_agent agent;
    char **argv;
    int argc, per_host;
    int maxring, skew, nretries;
    int64_t idlemax, interval;
    int retries[CONF_RULES_RETRIES_MAX];
};

struct conf_rules {
    char *name;
    struct clause *v;
    size_t n, cap;
    int maxta, maxta_line;
};

static int refuse(char *why, size_t whylen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t whylen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A word quoted for a message: bounded, unprintable bytes escaped. */
static const char *q(char *buf, size_t size, const char *text)
{
    util_quote(buf, size, text, strlen(text), 0);
    return buf;
}

struct conf_rules *conf_rules_create(const char *name)
{
    struct conf_rules *r = xcalloc(1, sizeof(*r));

    r->name = xstrdup(name);
    return r;
}

static void argv_drop(char **argv, int argc)
{
    for (int i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
}

void conf_rules_free(struct conf_rules *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->n; i++) {
        free(r->v[i].channel);
        free(r->v[i].host);
        argv_drop(r->v[i].argv, r->v[i].argc);
    }
    free(r->v);
    free(r->name);
    free(r);
}

/*
 * The next word of *p into buf: blanks end it outside double quotes;
 * quotes are removed, a backslash inside them quotes the next byte.
 * Returns 1 with a word, 0 at the end, -1 with why.
 */
static int word_next(const char **p, char *buf, size_t size, char *why,
                     size_t whylen)
{
    const char *s = *p;
    size_t len = 0;
    int quoted = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    if (*s == '\0')
        return 0;
    for (; *s && (quoted || (*s != ' ' && *s != '\t')); s++) {
        if (*s == '"') {
            quoted = !quoted;
            continue;
        }
        if (quoted && *s == '\\' && s[1] != '\0')
            s++;
        if (len + 1 >= size)
            return refuse(why, whylen, "a word longer than %zu bytes",
                          size - 1);
        buf[len++] = *s;
    }
    if (quoted)
        return refuse(why, whylen, "a double quote that is not closed");
    buf[len] = '\0';
    *p = s;
    return 1;
}

/* Glob characters: printable ASCII, no blank, no quote, no "=". */
static int glob_check(const char *glob, const char *what, char *why,
                      size_t whylen)
{
    char quoted[UTIL_QUOTE_MAX];

    if (*glob == '\0')
        return refuse(why, whylen, "selector with an empty %s pattern", what);
    for (const char *s = glob; *s; s++)
        if (*s <= ' ' || *s > '~' || *s == '"' || *s == '=')
            return refuse(why, whylen,
                          "bad selector %s: a clause starts with its "
                          "channel/host pattern (options go after it or on "
                          "lines that start with white space)",
                          q(quoted, sizeof(quoted), glob));
    return 0;
}

static int selector_parse(struct clause *c, const char *word, char *why,
                          size_t whylen)
{
    const char *slash = strchr(word, '/');
    char quoted[UTIL_QUOTE_MAX];

    if (strlen(word) > SELECTOR_MAX)
        return refuse(why, whylen, "selector %s longer than %d bytes",
                      q(quoted, sizeof(quoted), word), SELECTOR_MAX);
    c->channel = slash ? xstrndup(word, (size_t)(slash - word)) : xstrdup(word);
    c->host = xstrdup(slash ? slash + 1 : "*");
    for (char *h = c->host; *h; h++)
        *h = (char)tolower((unsigned char)*h);
    if (glob_check(c->channel, "channel", why, whylen) < 0 ||
        glob_check(c->host, "host", why, whylen) < 0)
        return -1;
    return 0;
}

static int int_parse(const char *key, const char *value, long lo, long hi,
                     int *out, char *why, size_t whylen)
{
    char quoted[UTIL_QUOTE_MAX];
    char *end;
    long v;

    errno = 0;
    v = strtol(value, &end, 10);
    if (*value < '0' || *value > '9' || *end != '\0' || errno || v < lo ||
        v > hi)
        return refuse(why, whylen,
                      "%s: bad value %s: expected a number "
                      "from %ld to %ld",
                      key, q(quoted, sizeof(quoted), value), lo, hi);
    *out = (int)v;
    return 0;
}

static int time_parse(const char *key, const char *value, int64_t *ms,
                      char *why, size_t whylen)
{
    char quoted[UTIL_QUOTE_MAX];
    char problem[128];

    if (conf_time_parse(value, 's', ms, problem, sizeof(problem)) < 0)
        return refuse(why, whylen, "%s: bad value %s: %s", key,
                      q(quoted, sizeof(quoted), value), problem);
    if (*ms <= 0)
        return refuse(why, whylen, "%s: bad value %s: must be more than 0", key,
                      q(quoted, sizeof(quoted), value));
    return 0;
}

static int retries_parse(struct clause *c, const char *value, char *why,
                         size_t whylen)
{
    const char *p = value;
    char word[WORD_MAX];
    int got;

    c->nretries = 0;
    while ((got = word_next(&p, word, sizeof(word), why, whylen)) > 0) {
        if (c->nretries == CONF_RULES_RETRIES_MAX)
            return refuse(why, whylen, "retries: more than %d factors",
                          CONF_RULES_RETRIES_MAX);
        if (int_parse("retries", word, 1, 1000, &c->retries[c->nretries++], why,
                      whylen) < 0)
            return -1;
    }
    if (got < 0)
        return -1;
    if (c->nretries == 0)
        return refuse(why, whylen,
                      "retries: expected factors such as "
                      "\"1 1 2 3 5 8\"");
    return 0;
}

/* The variables of a command's words. */
static const struct {
    const char *text;
    int host;
} vars[] = {{"${host}", 1}, {"${channel}", 0}, {"$host", 1}, {"$channel", 0}};

#define NVARS (sizeof(vars) / sizeof(vars[0]))

/* The variable at s, or -1. */
static int var_at(const char *s)
{
    for (size_t i = 0; i < NVARS; i++)
        if (strncmp(s, vars[i].text, strlen(vars[i].text)) == 0)
            return (int)i;
    return -1;
}

/* A word of a command: $host, $channel (or in braces) and nothing else
 * after a "$". */
static int command_word_check(const char *w, int *per_host, char *why,
                              size_t whylen)
{
    char quoted[UTIL_QUOTE_MAX];

    for (const char *s = strchr(w, '$'); s; s = strchr(s, '$')) {
        int i = var_at(s);

        if (i < 0)
            return refuse(why, whylen,
                          "command: unknown variable in %s: expected $host "
                          "or $channel",
                          q(quoted, sizeof(quoted), w));
        *per_host |= vars[i].host;
        s += strlen(vars[i].text);
    }
    return 0;
}

static int command_split(struct clause *c, const char *value, char *why,
                         size_t whylen)
{
    char *copy = xstrdup(value), *save = NULL;
    char quoted[UTIL_QUOTE_MAX];

    c->argv = xcalloc(CONF_RULES_ARGV_MAX + 1, sizeof(*c->argv));
    for (char *w = strtok_r(copy, " \t", &save); w;
         w = strtok_r(NULL, " \t", &save)) {
        if (c->argc == CONF_RULES_ARGV_MAX) {
            free(copy);
            return refuse(why, whylen, "command: more than %d words",
                          CONF_RULES_ARGV_MAX);
        }
        c->argv[c->argc++] = xstrdup(w);
    }
    free(copy);
    if (c->argc == 0)
        return refuse(why, whylen, "command: empty");
    for (int i = 0; i < c->argc; i++)
        if (command_word_check(c->argv[i], &c->per_host, why, whylen) < 0)
            return -1;
    if (c->argv[0][0] != '/')
        return refuse(why, whylen,
                      "command: %s is neither smtp, lmtp nor the absolute "
                      "path of a program",
                      q(quoted, sizeof(quoted), c->argv[0]));
    return 0;
}

static int command_parse(struct clause *c, const char *value, char *why,
                         size_t whylen)
{
    const char *builtin[] = {"smtp", "lmtp"};
    char word[WORD_MAX];
    const char *p = value;
    int got;

    argv_drop(c->argv, c->argc);
    c->argv = NULL;
    c->argc = c->per_host = 0;
    for (int i = 0; i < 2; i++) {
        size_t len = strlen(builtin[i]);

        if (strncmp(value, builtin[i], len) != 0 ||
            (value[len] != '\0' && value[len] != ' ' && value[len] != '\t'))
            continue;
        if ((got = word_next(&p, word, sizeof(word), why, whylen)) > 0 &&
            (got = word_next(&p, word, sizeof(word), why, whylen)) != 0)
            return refuse(why, whylen,
                          "command: the built-in %s takes no arguments",
                          builtin[i]);
        c->agent = i == 0 ? CONF_RULE_SMTP : CONF_RULE_LMTP;
        return 0;
    }
    c->agent = CONF_RULE_PROGRAM;
    return command_split(c, value, why, whylen);
}

/* ZMailer's other keywords: named, so that a brought file says what
 * it asks for that sluice does not do. */
static const char *const zmailer_only[] = {
    "expiry",       "maxchannel", "overfeed",     "user",     "group",
    "priority",     "nice",       "wakeup",       "byhost",   "maxhost",
    "gangschedule", "bychannel",  "deliveryform", "sm",       "reporttimes",
    "queuedir",     "maxthr",     "maxkids",      "maxtasks",
};

static int flag_parse(struct clause *c, const char *key, int has_value,
                      char *why, size_t whylen)
{
    if (has_value)
        return refuse(why, whylen, "%s is a flag: it takes no value", key);
    if (strcmp(key, "ageorder") == 0) {
        c->set |= SET_AGEORDER;
        return 0;
    }
    c->set |= SET_QUEUEONLY;
    return 0;
}

static int maxta_parse(struct conf_rules *r, struct clause *c,
                       const char *value, char *why, size_t whylen)
{
    int v;

    if (int_parse("maxta", value, 1, 100000, &v, why, whylen) < 0)
        return -1;
    if (r->maxta_line)
        return refuse(why, whylen,
                      "maxta: the limit is global and already set on line %d",
                      r->maxta_line);
    r->maxta = v;
    r->maxta_line = c->line;
    return 0;
}

static int value_parse(struct conf_rules *r, struct clause *c, const char *key,
                       const char *value, char *why, size_t whylen)
{
    if (strcmp(key, "command") == 0)
        return command_parse(c, value, why, whylen);
    if (strcmp(key, "maxring") == 0)
        return int_parse(key, value, 1, 100000, &c->maxring, why, whylen);
    if (strcmp(key, "skew") == 0)
        return int_parse(key, value, 1, 1000, &c->skew, why, whylen);
    if (strcmp(key, "idlemax") == 0)
        return time_parse(key, value, &c->idlemax, why, whylen);
    if (strcmp(key, "interval") == 0)
        return time_parse(key, value, &c->interval, why, whylen);
    if (strcmp(key, "retries") == 0)
        return retries_parse(c, value, why, whylen);
    return maxta_parse(r, c, value, why, whylen);
}

static const struct {
    const char *key;
    unsigned bit;
} valued[] = {
    {"command", SET_COMMAND},   {"maxring", SET_MAXRING},
    {"maxta", SET_MAXTA},       {"idlemax", SET_IDLEMAX},
    {"interval", SET_INTERVAL}, {"retries", SET_RETRIES},
    {"skew", SET_SKEW},
};

static int keyword_refuse(const char *key, const char *word, char *why,
                          size_t whylen)
{
    char quoted[UTIL_QUOTE_MAX];

    for (size_t i = 0; i < sizeof(zmailer_only) / sizeof(zmailer_only[0]); i++)
        if (strcmp(key, zmailer_only[i]) == 0)
            return refuse(why, whylen,
                          "%s is a ZMailer keyword that sluice does not "
                          "implement",
                          key);
    return refuse(why, whylen, "unknown option %s",
                  q(quoted, sizeof(quoted), word));
}

static int option_parse(struct conf_rules *r, struct clause *c,
                        const char *word, char *why, size_t whylen)
{
    const char *eq = strchr(word, '=');
    size_t klen = eq ? (size_t)(eq - word) : strlen(word);
    char key[32], quoted[UTIL_QUOTE_MAX];

    if (klen == 0 || klen >= sizeof(key))
        return refuse(why, whylen, "bad option %s",
                      q(quoted, sizeof(quoted), word));
    for (size_t i = 0; i < klen; i++)
        key[i] = (char)tolower((unsigned char)word[i]);
    key[klen] = '\0';
    if (strcmp(key, "ageorder") == 0 || strcmp(key, "queueonly") == 0)
        return flag_parse(c, key, eq != NULL, why, whylen);
    for (size_t i = 0; i < sizeof(valued) / sizeof(valued[0]); i++) {
        if (strcmp(key, valued[i].key) != 0)
            continue;
        if (eq == NULL)
            return refuse(why, whylen, "%s needs a value (%s=...)", key, key);
        if (c->set & valued[i].bit)
            return refuse(why, whylen, "%s given twice in one clause", key);
        c->set |= valued[i].bit;
        return value_parse(r, c, key, eq + 1, why, whylen);
    }
    return keyword_refuse(key, word, why, whylen);
}

int conf_rules_line(struct conf_rules *r, int line, const char *text, char *why,
                    size_t whylen)
{
    char word[WORD_MAX];
    struct clause *c;
    const char *p = text;
    int got;

    if (r->n == CONF_RULES_MAX)
        return refuse(why, whylen, "more than %d clauses", CONF_RULES_MAX);
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
    }
    c = memset(r->v + r->n++, 0, sizeof(*c));
    c->line = line;
    if ((got = word_next(&p, word, sizeof(word), why, whylen)) <= 0)
        return got < 0 ? -1 : refuse(why, whylen, "empty clause");
    if (selector_parse(c, word, why, whylen) < 0)
        return -1;
    while ((got = word_next(&p, word, sizeof(word), why, whylen)) > 0)
        if (option_parse(r, c, word, why, whylen) < 0)
            return -1;
    return got;
}

static int line_fn(void *ctx, int line, const char *text, char *why,
                   size_t whylen)
{
    return conf_rules_line(ctx, line, text, why, whylen);
}

/* An empty clause takes the options of the next one that has some. */
static void clause_copy(struct clause *to, const struct clause *from)
{
    to->set = from->set & ~SET_MAXTA;
    to->agent = from->agent;
    to->argc = from->argc;
    to->per_host = from->per_host;
    to->maxring = from->maxring;
    to->skew = from->skew;
    to->nretries = from->nretries;
    to->idlemax = from->idlemax;
    to->interval = from->interval;
    memcpy(to->retries, from->retries, sizeof(to->retries));
    if (from->argv) {
        to->argv = xcalloc(CONF_RULES_ARGV_MAX + 1, sizeof(*to->argv));
        for (int i = 0; i < from->argc; i++)
            to->argv[i] = xstrdup(from->argv[i]);
    }
}

int conf_rules_finish(struct conf_rules *r, char *why, size_t whylen)
{
    for (size_t i = r->n; i-- > 0;) {
        size_t j = i + 1;

        if (r->v[i].set != 0)
            continue;
        if (j == r->n)
            return refuse(why, whylen,
                          "%s, line %d: a clause with no options and none "
                          "after it to take them from",
                          r->name, r->v[i].line);
        clause_copy(r->v + i, r->v + j);
    }
    return 0;
}

struct conf_rules *conf_rules_load(const char *path, char *why, size_t whylen)
{
    struct conf_rules *r = conf_rules_create(path);

    if (util_table_read(path, line_fn, r, why, whylen) < 0 ||
        conf_rules_finish(r, why, whylen) < 0) {
        conf_rules_free(r);
        return NULL;
    }
    return r;
}

size_t conf_rules_count(const struct conf_rules *r)
{
    return r->n;
}

int conf_rules_maxta(const struct conf_rules *r)
{
    return r->maxta;
}

static int clause_matches(const struct clause *c, const char *channel,
                          const char *host)
{
    return fnmatch(c->channel, channel, 0) == 0 &&
           fnmatch(c->host, host, 0) == 0;
}

/* A later clause's options replace an earlier one's. */
static void clause_apply(const struct clause *c, struct conf_rule_match *m)
{
    if (c->set & SET_MAXRING)
        m->maxring = c->maxring;
    if (c->set & SET_IDLEMAX)
        m->idlemax = c->idlemax;
    if (c->set & SET_INTERVAL)
        m->interval = c->interval;
    if (c->set & SET_SKEW)
        m->skew = c->skew;
    if (c->set & SET_RETRIES) {
        m->retries = c->retries;
        m->nretries = c->nretries;
    }
    if (c->set & SET_AGEORDER)
        m->ageorder = 1;
    if (c->set & SET_QUEUEONLY)
        m->queueonly = 1;
}

int conf_rules_match(const struct conf_rules *r, const char *channel,
                     const char *host, struct conf_rule_match *m)
{
    char lower[SELECTOR_MAX + 1];
    size_t i;

    for (i = 0; host[i] && i < SELECTOR_MAX; i++)
        lower[i] = (char)tolower((unsigned char)host[i]);
    lower[i] = '\0';
    memset(m, 0, sizeof(*m));
    m->idlemax = IDLEMAX_DEFAULT;
    m->interval = INTERVAL_DEFAULT;
    for (i = 0; i < r->n; i++) {
        const struct clause *c = r->v + i;

        if (!clause_matches(c, channel, lower))
            continue;
        clause_apply(c, m);
        if (c->set & SET_COMMAND) {
            m->index = (int)i;
            m->line = c->line;
            m->agent = c->agent;
            m->argv = c->argv;
            m->argc = c->argc;
            m->per_host = c->per_host;
            return 0;
        }
    }
    return -1;
}

int conf_rules_channel_known(const struct conf_rules *r, const char *channel)
{
    for (size_t i = 0; i < r->n; i++)
        if ((r->v[i].set & SET_COMMAND) &&
            fnmatch(r->v[i].channel, channel, 0) == 0)
            return 1;
    return 0;
}

int conf_rules_channel_program(const struct conf_rules *r, const char *channel,
                               int *line)
{
    int found = 0;

    for (size_t i = 0; i < r->n; i++) {
        const struct clause *c = r->v + i;

        if (!(c->set & SET_COMMAND) || fnmatch(c->channel, channel, 0) != 0)
            continue;
        if (c->agent == CONF_RULE_PROGRAM)
            return 1;
        if (found == 0)
            *line = c->line;
        found = -1;
    }
    return found;
}

/* One word with its variables replaced. */
static char *word_expand(const char *w, const char *channel, const char *host)
{
    struct util_buf b = UTIL_BUF_INIT;
    char *out;

    while (*w) {
        int i = *w == '$' ? var_at(w) : -1;

        if (i >= 0) {
            const char *value = vars[i].host ? host : channel;

            util_buf_add(&b, value, strlen(value));
            w += strlen(vars[i].text);
        } else {
            util_buf_add(&b, w++, 1);
        }
    }
    util_buf_add(&b, "", 1);
    out = xstrdup(b.data);
    util_buf_free(&b);
    return out;
}

char **conf_rules_argv(const struct conf_rule_match *m, const char *channel,
                       const char *host)
{
    char **argv = xcalloc((size_t)m->argc + 1, sizeof(*argv));

    for (int i = 0; i < m->argc; i++)
        argv[i] = word_expand(m->argv[i], channel, host);
    return argv;
}

void conf_rules_argv_free(char **argv)
{
    for (size_t i = 0; argv && argv[i]; i++)
        free(argv[i]);
    free(argv);
}

int64_t conf_rules_retry_delay(const struct conf_rule_match *m, int attempt)
{
    int factor = 1;

    if (m->nretries > 0)
        factor = m->retries[attempt < 0              ? 0
                            : attempt >= m->nretries ? m->nretries - 1
                                                     : attempt];
    if (m->skew > 0 && factor > m->skew)
        factor = m->skew;
    return m->interval * factor;
}

void conf_rules_zrule(const struct conf_rule_match *m, struct core_zrule *z)
{
    memset(z, 0, sizeof(*z));
    z->index = m->index;
    z->maxring = m->maxring;
    z->idlemax = m->idlemax;
    z->ageorder = m->ageorder;
    z->queueonly = m->queueonly;
    z->per_host = m->per_host;
}
