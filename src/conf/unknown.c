/*
 * NAME
 *	unknown 3 - names the parameter table does not know
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	void	conf_unknown_warn(const struct conf *conf, conf_warn_fn *fn,
 *			void *ctx)
 *	size_t	conf_suggest(const struct conf *conf, const char *name,
 *			char *buf, size_t len)
 *
 *	#include "conf/conf_private.h"
 *
 *	int	conf_name_syntax_ok(const char *name)
 *	void	conf_unknown_set(struct conf *conf, const char *name,
 *			const char *value, const char *file, int line)
 *	struct conf_unknown *conf_unknown_find(const struct conf *conf,
 *			const char *name)
 *	void	conf_unknown_free(struct conf *conf)
 * DESCRIPTION
 *	An operator who brings a Postfix main.cf brings many parameters
 *	sluice does not implement (smtpd_banner, alias_maps, ...). Refusing
 *	the whole file for them would make every such operator edit it
 *	first; ignoring them silently would hide a misspelt name that was
 *	meant to take effect. So a name the table does not know is kept,
 *	its value usable as $name in other values (Postfix's user-defined
 *	parameters), and every one that no value refers to gets one
 *	warning, with the closest known name when it looks like a typo.
 *
 *	conf_name_syntax_ok() accepts names made of letters, digits, '_',
 *	'-' and '.', at most CONF_NAME_MAX bytes: anything else ("foo bar",
 *	"a/b") is a syntax error in the file, not an unknown name.
 *
 *	conf_unknown_set() records name = value (a later setting replaces
 *	an earlier one, as for known names). conf_unknown_find() returns
 *	the record of a name, or NULL.
 *
 *	conf_unknown_warn() calls fn once for every unknown name that no
 *	value refers to, in the order they were first set, with a complete
 *	message: 'FILE, line N: unknown parameter "NAME" ignored' and, when
 *	a known name is close, ' (did you mean "KNOWN"?)'.
 *
 *	conf_suggest() writes into buf the known name closest to name:
 *	a global parameter, or an override <transport><suffix> whose suffix
 *	is close to the end of name. Close means an edit distance (insert,
 *	delete, replace, or swap two neighbours) of at most 1 for names of
 *	up to 8 bytes and 2 for longer ones. It returns the length written,
 *	or 0 when no name is close.
 */

#include "conf/conf.h"
#include "conf/conf_private.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longer names are junk, not parameters. */
#define CONF_NAME_MAX 256

/* The edit distance is computed over at most this many bytes. */
#define DISTANCE_MAX_LEN CONF_NAME_MAX

int conf_name_syntax_ok(const char *name)
{
    size_t n = 0;

    for (; name[n]; n++) {
        int ch = (unsigned char)name[n];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
              (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.'))
            return 0;
    }
    return n > 0 && n <= CONF_NAME_MAX;
}

struct conf_unknown *conf_unknown_find(const struct conf *conf,
                                       const char *name)
{
    for (size_t i = 0; i < conf->nunknowns; i++)
        if (strcmp(conf->unknowns[i].name, name) == 0)
            return conf->unknowns + i;
    return NULL;
}

void conf_unknown_set(struct conf *conf, const char *name, const char *value,
                      const char *file, int line)
{
    struct conf_unknown *u = conf_unknown_find(conf, name);

    if (u == NULL) {
        if (conf->nunknowns == conf->unknowns_alloc) {
            conf->unknowns_alloc =
                conf->unknowns_alloc ? 2 * conf->unknowns_alloc : 16;
            conf->unknowns =
                xrealloc(conf->unknowns, conf->unknowns_alloc * sizeof(*u));
        }
        u = conf->unknowns + conf->nunknowns++;
        memset(u, 0, sizeof(*u));
        u->name = xstrdup(name);
    }
    conf_value_clear(&u->value);
    u->value.raw = xstrdup(value);
    u->value.file = file ? xstrdup(file) : NULL;
    u->value.line = line;
    u->value.seq = ++conf->seq;
}

void conf_unknown_free(struct conf *conf)
{
    for (size_t i = 0; i < conf->nunknowns; i++) {
        free(conf->unknowns[i].name);
        conf_value_clear(&conf->unknowns[i].value);
    }
    free(conf->unknowns);
    conf->unknowns = NULL;
    conf->nunknowns = conf->unknowns_alloc = 0;
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;

    return m < c ? m : c;
}

/*
 * Optimal string alignment distance between a[0..alen) and b[0..blen):
 * three rows of the classic table are enough for the swap rule.
 */
static size_t distance(const char *a, size_t alen, const char *b, size_t blen)
{
    size_t rows[3][DISTANCE_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2], *t;

    if (alen > DISTANCE_MAX_LEN || blen > DISTANCE_MAX_LEN)
        return (size_t)-1;
    for (size_t j = 0; j <= blen; j++)
        prev[j] = j;
    for (size_t i = 1; i <= alen; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= blen; j++) {
            size_t cost = a[i - 1] != b[j - 1];

            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
                a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < cur[j])
                cur[j] = prev2[j - 2] + 1;
        }
        t = prev2, prev2 = prev, prev = cur, cur = t;
    }
    return prev[blen];
}

/* The best candidate so far. */
struct guess {
    size_t dist;
    char name[CONF_NAME_MAX + 1];
};

static void guess_offer(struct guess *g, const char *name, size_t dist)
{
    if (dist < g->dist && strlen(name) <= CONF_NAME_MAX) {
        g->dist = dist;
        snprintf(g->name, sizeof(g->name), "%s", name);
    }
}

/*
 * name as an override with a misspelt suffix: every '_' splits it into
 * a transport and a suffix to compare with def's.
 */
static void guess_override(struct guess *g, const struct conf_def *def,
                           const char *name)
{
    char candidate[CONF_NAME_MAX + 1];
    size_t slen = strlen(def->suffix);

    for (const char *u = strchr(name + 1, '_'); u; u = strchr(u + 1, '_')) {
        size_t tlen = (size_t)(u - name);
        size_t d = distance(u, strlen(u), def->suffix, slen);

        if (d == 0 || tlen + slen > CONF_NAME_MAX)
            continue;
        snprintf(candidate, sizeof(candidate), "%.*s%s", (int)tlen, name,
                 def->suffix);
        guess_offer(g, candidate, d);
    }
}

size_t conf_suggest(const struct conf *conf, const char *name, char *buf,
                    size_t len)
{
    size_t nlen = strlen(name);
    size_t limit = nlen <= 8 ? 1 : 2;
    struct guess g = {(size_t)-1, ""};

    if (len == 0)
        return 0;
    buf[0] = 0;
    if (nlen > CONF_NAME_MAX)
        return 0;
    for (size_t i = 0; i < conf->nparams; i++) {
        const struct conf_def *def = &conf->params[i].def;

        guess_offer(&g, def->name,
                    distance(name, nlen, def->name, strlen(def->name)));
        if (def->suffix != NULL)
            guess_override(&g, def, name);
    }
    if (g.dist == 0 || g.dist > limit)
        return 0;
    snprintf(buf, len, "%s", g.name);
    return strlen(buf);
}

void conf_unknown_warn(const struct conf *conf, conf_warn_fn *fn, void *ctx)
{
    char msg[2 * CONF_NAME_MAX + 1024];
    char near[CONF_NAME_MAX + 1];
    char where[512];

    for (size_t i = 0; i < conf->nunknowns; i++) {
        const struct conf_unknown *u = conf->unknowns + i;

        if (u->used)
            continue;
        if (u->value.file)
            snprintf(where, sizeof(where), "%.400s, line %d: ", u->value.file,
                     u->value.line);
        else
            where[0] = 0;
        if (conf_suggest(conf, u->name, near, sizeof(near)) > 0)
            snprintf(msg, sizeof(msg),
                     "%sunknown parameter \"%s\" ignored (did you mean "
                     "\"%s\"?)",
                     where, u->name, near);
        else
            snprintf(msg, sizeof(msg), "%sunknown parameter \"%s\" ignored",
                     where, u->name);
        fn(ctx, msg);
    }
}
