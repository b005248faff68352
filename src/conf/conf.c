/*
 * NAME
 *	conf 3 - a configuration: names, values, getters
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	struct conf *conf_create(void)
 *	void	conf_free(struct conf *conf)
 *	int	conf_add_params(struct conf *conf, const struct conf_def *defs,
 *			size_t count, char *why, size_t whylen)
 *	int	conf_set(struct conf *conf, const char *name, const char *value,
 *			char *why, size_t whylen)
 *
 *	long	conf_int(conf, transport, name), conf_time_ms(...),
 *		conf_bool(...), conf_str(...), conf_feedback(...)
 *
 *	int	conf_lookup(const struct conf *conf, const char *name,
 *			struct conf_info *info)
 *	size_t	conf_def_count(const struct conf *conf)
 *	const struct conf_def *conf_def_at(const struct conf *conf, size_t i)
 *	size_t	conf_override_count(const struct conf *conf)
 *	const char *conf_override_at(const struct conf *conf, size_t i)
 * DESCRIPTION
 *	This file owns the names: which names are parameters, which are
 *	overrides of one, and where each value lives. See conf.h for the
 *	contract; the parts that are this file's choices:
 *
 *	A name is first looked up as a global parameter. Failing that, it
 *	is an override when it ends in the suffix of an overridable
 *	parameter and what comes before the suffix (the transport) is a
 *	non-empty run of [a-z0-9_.-] (the dot is for sluice-sim, whose
 *	per-domain keys are overrides for "transport" sim_domain_DOMAIN).
 *	When several suffixes match, the longest wins:
 *	smtp_destination_recipient_limit overrides
 *	default_destination_recipient_limit (suffix
 *	_destination_recipient_limit) for transport smtp, not
 *	default_recipient_limit (suffix _recipient_limit) for transport
 *	smtp_destination.
 *
 *	conf_add_params() copies the definitions, but not the strings they
 *	point to: those must outlive the configuration (a static table).
 *	It checks every definition first and adds none when one is wrong.
 *
 *	Every change resolves the whole configuration again (see expand.c),
 *	so that getters only read: a configuration that is not changed may
 *	be read by many threads at once.
 */

#include "conf/conf.h"
#include "conf/conf_private.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void conf_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("conf: ", fmt, ap);
}

/*
 * conf's messages have always kept one byte of buf spare: util_quote()
 * is given one byte less, so that every message reads as it did.
 */
void conf_quote(char *buf, size_t len, const char *text)
{
    if (len == 0)
        return;
    buf[0] = 0;
    util_quote(buf, len - 1, text, strlen(text), 0);
}

const char *conf_value_raw(const struct conf_param *p,
                           const struct conf_value *val)
{
    return val->raw ? val->raw : p->def.defval;
}

/* Transport names; '.' lets sluice-sim use domains (sim_domain_a.test_). */
static int is_transport_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == '-' || ch == '.';
}

enum conf_name_kind conf_name_find(const struct conf *conf, const char *name,
                                   size_t len, size_t *param, size_t *tlen)
{
    const struct conf_def *def;
    size_t best_len = 0;
    size_t slen;
    size_t i;
    size_t k;

    for (i = 0; i < conf->nparams; i++) {
        def = &conf->params[i].def;
        if (strncmp(def->name, name, len) == 0 && def->name[len] == 0) {
            *param = i;
            *tlen = 0;
            return CONF_NAME_GLOBAL;
        }
    }
    for (i = 0; i < conf->nparams; i++) {
        def = &conf->params[i].def;
        if (def->suffix == NULL || (slen = strlen(def->suffix)) >= len ||
            slen <= best_len ||
            memcmp(name + len - slen, def->suffix, slen) != 0)
            continue;
        for (k = 0; k < len - slen; k++)
            if (!is_transport_char((unsigned char)name[k]))
                break;
        if (k < len - slen)
            continue;
        best_len = slen;
        *param = i;
        *tlen = len - slen;
    }
    return best_len ? CONF_NAME_OVERRIDE : CONF_NAME_UNKNOWN;
}

struct conf_override *conf_override_find(const struct conf *conf, size_t param,
                                         const char *transport, size_t tlen)
{
    struct conf_override *ov;
    size_t i;

    for (i = 0; i < conf->noverrides; i++) {
        ov = conf->overrides + i;
        if (ov->param == param && ov->tlen == tlen &&
            strncmp(ov->name, transport, tlen) == 0)
            return ov;
    }
    return NULL;
}

void conf_value_clear(struct conf_value *val)
{
    free(val->raw);
    free(val->file);
    free(val->text);
    free(val->error);
    memset(val, 0, sizeof(*val));
}

static struct conf_param *param_append(struct conf *conf,
                                       const struct conf_def *def)
{
    struct conf_param *p;

    if (conf->nparams == conf->params_alloc) {
        conf->params_alloc = conf->params_alloc ? 2 * conf->params_alloc : 64;
        conf->params =
            xrealloc(conf->params, conf->params_alloc * sizeof(*conf->params));
    }
    p = conf->params + conf->nparams++;
    memset(p, 0, sizeof(*p));
    p->def = *def;
    return p;
}

struct conf *conf_create(void)
{
    struct conf *conf = xmalloc(sizeof(*conf));
    char why[512];
    size_t i;

    memset(conf, 0, sizeof(*conf));
    for (i = 0; i < conf_param_count; i++)
        param_append(conf, conf_params + i);
    if (conf_validate(conf, why, sizeof(why)) < 0)
        conf_panic("built-in parameter table: %s", why);
    return conf;
}

void conf_free(struct conf *conf)
{
    size_t i;

    if (conf == NULL)
        return;
    for (i = 0; i < conf->nparams; i++) {
        conf_value_clear(&conf->params[i].value);
        free(conf->params[i].defval_owned);
    }
    for (i = 0; i < conf->noverrides; i++) {
        free(conf->overrides[i].name);
        conf_value_clear(&conf->overrides[i].value);
    }
    conf_unknown_free(conf);
    free(conf->params);
    free(conf->overrides);
    free(conf);
}

int conf_default_set(struct conf *conf, const char *name, const char *text,
                     char *why, size_t whylen)
{
    struct conf_param *p;
    union conf_typed v;
    char expected[256];
    char quoted[2 * UTIL_QUOTE_MAX];
    size_t param;
    size_t tlen;

    if (conf_name_find(conf, name, strlen(name), &param, &tlen) !=
        CONF_NAME_GLOBAL)
        conf_panic("conf_default_set: \"%s\" is not a global parameter", name);
    p = conf->params + param;
    if (strchr(text, '$') == NULL &&
        conf_value_parse(&p->def, text, &v, expected, sizeof(expected)) < 0) {
        conf_quote(quoted, sizeof(quoted), text);
        snprintf(why, whylen, "%s: bad default %s: %s", name, quoted, expected);
        return -1;
    }
    free(p->defval_owned);
    p->defval_owned = xstrdup(text);
    p->def.defval = p->defval_owned;
    conf_resolve(conf);
    return 0;
}

/* Is def (about to be added) well formed and new? */
static int def_check(const struct conf *conf, const struct conf_def *defs,
                     size_t n, char *why, size_t whylen)
{
    const struct conf_def *def = defs + n;
    union conf_typed v;
    char expected[256];
    const char *cp;
    size_t param;
    size_t tlen;
    size_t i;

#define DEF_FAIL(...)                                                          \
    do {                                                                       \
        snprintf(why, whylen, __VA_ARGS__);                                    \
        return -1;                                                             \
    } while (0)

    if (def->name == NULL || *def->name == 0)
        DEF_FAIL("conf_add_params: definition %zu has no name", n);
    for (cp = def->name; *cp; cp++)
        if (!is_transport_char((unsigned char)*cp) || *cp == '-' || *cp == '.')
            DEF_FAIL("conf_add_params: %s: name is not [a-z0-9_]", def->name);
    if (conf_name_find(conf, def->name, strlen(def->name), &param, &tlen) ==
        CONF_NAME_GLOBAL)
        DEF_FAIL("conf_add_params: %s: already defined", def->name);
    for (i = 0; i < n; i++)
        if (strcmp(defs[i].name, def->name) == 0)
            DEF_FAIL("conf_add_params: %s: defined twice", def->name);
    if (def->suffix != NULL) {
        if (def->suffix[0] != '_' || def->suffix[1] == 0)
            DEF_FAIL("conf_add_params: %s: suffix \"%s\" is not _something",
                     def->name, def->suffix);
        for (i = 0; i < conf->nparams + n; i++) {
            const struct conf_def *other = i < conf->nparams
                                               ? &conf->params[i].def
                                               : defs + i - conf->nparams;
            if (other->suffix && strcmp(other->suffix, def->suffix) == 0)
                DEF_FAIL("conf_add_params: %s: suffix %s is already used by %s",
                         def->name, def->suffix, other->name);
        }
    }
    if (def->type == CONF_INT && def->min > def->max)
        DEF_FAIL("conf_add_params: %s: min %ld > max %ld", def->name, def->min,
                 def->max);
    if (def->type == CONF_TIME &&
        (def->unit == 0 || !strchr("smhdw", def->unit)))
        DEF_FAIL("conf_add_params: %s: bad time unit", def->name);
    if (def->type == CONF_CHOICE && (def->choices == NULL || !*def->choices))
        DEF_FAIL("conf_add_params: %s: no choices", def->name);
    if ((unsigned)def->type > CONF_LIST)
        DEF_FAIL("conf_add_params: %s: bad type %d", def->name, (int)def->type);
    if (def->defval == NULL)
        DEF_FAIL("conf_add_params: %s: no default value", def->name);
    if (strchr(def->defval, '$') == NULL &&
        conf_value_parse(def, def->defval, &v, expected, sizeof(expected)) < 0)
        DEF_FAIL("conf_add_params: %s: bad default \"%s\": %s", def->name,
                 def->defval, expected);
    return 0;
#undef DEF_FAIL
}

int conf_add_params(struct conf *conf, const struct conf_def *defs,
                    size_t count, char *why, size_t whylen)
{
    size_t i;

    for (i = 0; i < count; i++)
        if (def_check(conf, defs, i, why, whylen) < 0)
            return -1;
    for (i = 0; i < count; i++)
        param_append(conf, defs + i);
    conf_resolve(conf);
    return 0;
}

/* Store a checked value, replacing an earlier one. */
static void value_store(struct conf *conf, struct conf_value *val,
                        const char *value, const char *file, int line)
{
    free(val->raw);
    free(val->file);
    val->raw = xstrdup(value);
    val->file = file ? xstrdup(file) : NULL;
    val->line = line;
    val->seq = ++conf->seq;
}

static struct conf_value *override_get(struct conf *conf, const char *name,
                                       size_t param, size_t tlen)
{
    struct conf_override *ov;

    if ((ov = conf_override_find(conf, param, name, tlen)) != NULL)
        return &ov->value;
    if (conf->noverrides == conf->overrides_alloc) {
        conf->overrides_alloc =
            conf->overrides_alloc ? 2 * conf->overrides_alloc : 16;
        conf->overrides = xrealloc(
            conf->overrides, conf->overrides_alloc * sizeof(*conf->overrides));
    }
    ov = conf->overrides + conf->noverrides++;
    memset(ov, 0, sizeof(*ov));
    ov->name = xstrdup(name);
    ov->tlen = tlen;
    ov->param = param;
    return &ov->value;
}

int conf_set_at(struct conf *conf, const char *name, const char *value,
                const char *file, int line, char *why, size_t whylen)
{
    const struct conf_def *def;
    enum conf_name_kind kind;
    union conf_typed v;
    char where[512];
    char quoted[2 * UTIL_QUOTE_MAX];
    char expected[256];
    size_t param;
    size_t tlen;

    if (file)
        snprintf(where, sizeof(where), "%s, line %d: ", file, line);
    else
        where[0] = 0;
    kind = conf_name_find(conf, name, strlen(name), &param, &tlen);
    if (kind == CONF_NAME_UNKNOWN) {
        conf_quote(quoted, sizeof(quoted), name);
        snprintf(why, whylen, "%sunknown parameter %s", where, quoted);
        return -1;
    }
    def = &conf->params[param].def;
    if (value == NULL)
        value = "";
    if (strchr(value, '$') == NULL &&
        conf_value_parse(def, value, &v, expected, sizeof(expected)) < 0) {
        conf_quote(quoted, sizeof(quoted), value);
        snprintf(why, whylen, "%s%s: bad value %s: %s", where, name, quoted,
                 expected);
        return -1;
    }
    value_store(conf,
                kind == CONF_NAME_GLOBAL
                    ? &conf->params[param].value
                    : override_get(conf, name, param, tlen),
                value, file, line);
    return 0;
}

int conf_set(struct conf *conf, const char *name, const char *value, char *why,
             size_t whylen)
{
    if (conf_set_at(conf, name, value, NULL, 0, why, whylen) < 0)
        return -1;
    conf_resolve(conf);
    return 0;
}

static const char *type_name(enum conf_type type)
{
    static const char *names[] = {"integer", "time",   "boolean", "feedback",
                                  "choice",  "string", "list"};

    return (unsigned)type <= CONF_LIST ? names[type] : "unknown";
}

/*
 * The parameter that name (a global or an override name) is of, and for
 * an override name its override (NULL when it is not set).
 */
static enum conf_name_kind param_find(const struct conf *conf, const char *name,
                                      const struct conf_param **p,
                                      const struct conf_override **ov)
{
    enum conf_name_kind kind;
    size_t param;
    size_t tlen;

    *p = NULL;
    *ov = NULL;
    kind = conf_name_find(conf, name, strlen(name), &param, &tlen);
    if (kind == CONF_NAME_UNKNOWN)
        return kind;
    *p = conf->params + param;
    if (kind == CONF_NAME_OVERRIDE)
        *ov = conf_override_find(conf, param, name, tlen);
    return kind;
}

/*
 * The value that a getter returns: the override (ov, or that of p for
 * transport) when there is one, else the global value of p. A wrong
 * name or type is the caller's bug.
 */
static const struct conf_value *
value_pick(const struct conf *conf, const char *transport,
           const struct conf_param *p, const struct conf_override *ov,
           const char *name, const char *fn, unsigned types)
{
    const struct conf_value *val;

    if ((types & (1u << p->def.type)) == 0)
        conf_panic("%s: parameter %s is of type %s", fn, name,
                   type_name(p->def.type));
    if (ov == NULL && transport != NULL && p->def.suffix != NULL)
        ov = conf_override_find(conf, (size_t)(p - conf->params), transport,
                                strlen(transport));
    val = ov ? &ov->value : &p->value;
    if (!CONF_VALUE_GOOD(val))
        conf_panic("%s: %s%s%s: value is not valid: %s", fn,
                   transport ? transport : "", transport ? ": " : "", name,
                   val->error ? val->error : "see conf_validate()");
    return val;
}

/* A built-in parameter, by its symbol: an index into the table. */
static const struct conf_value *value_get(const struct conf *conf,
                                          const char *transport,
                                          enum conf_param_id param,
                                          const char *fn, unsigned types)
{
    const struct conf_param *p;

    if ((size_t)param >= CONF_PARAM_COUNT || (size_t)param >= conf->nparams)
        conf_panic("%s: no parameter number %d", fn, (int)param);
    p = conf->params + param;
    return value_pick(conf, transport, p, NULL, p->def.name, fn, types);
}

/* Any parameter or override, by its name. */
static const struct conf_value *value_named(const struct conf *conf,
                                            const char *transport,
                                            const char *name, const char *fn,
                                            unsigned types)
{
    const struct conf_override *ov;
    const struct conf_param *p;

    if (param_find(conf, name, &p, &ov) == CONF_NAME_UNKNOWN)
        conf_panic("%s: unknown parameter \"%s\"", fn, name);
    if (ov != NULL || strcmp(p->def.name, name) != 0)
        transport = NULL; /* an override name: that value, set or not */
    return value_pick(conf, transport, p, ov, name, fn, types);
}

#define TYPES_INT  (1u << CONF_INT)
#define TYPES_TIME (1u << CONF_TIME)
#define TYPES_BOOL (1u << CONF_BOOL)
#define TYPES_STR                                                              \
    ((1u << CONF_STRING) | (1u << CONF_LIST) | (1u << CONF_CHOICE))
#define TYPES_FEEDBACK (1u << CONF_FEEDBACK)

long conf_int(const struct conf *conf, const char *transport,
              enum conf_param_id param)
{
    return value_get(conf, transport, param, "conf_int", TYPES_INT)->v.i;
}

int64_t conf_time_ms(const struct conf *conf, const char *transport,
                     enum conf_param_id param)
{
    return value_get(conf, transport, param, "conf_time_ms", TYPES_TIME)->v.ms;
}

int conf_bool(const struct conf *conf, const char *transport,
              enum conf_param_id param)
{
    return value_get(conf, transport, param, "conf_bool", TYPES_BOOL)->v.b;
}

const char *conf_str(const struct conf *conf, const char *transport,
                     enum conf_param_id param)
{
    return value_get(conf, transport, param, "conf_str", TYPES_STR)->text;
}

struct conf_feedback conf_feedback(const struct conf *conf,
                                   const char *transport,
                                   enum conf_param_id param)
{
    return value_get(conf, transport, param, "conf_feedback", TYPES_FEEDBACK)
        ->v.fb;
}

long conf_int_named(const struct conf *conf, const char *transport,
                    const char *name)
{
    return value_named(conf, transport, name, "conf_int", TYPES_INT)->v.i;
}

int64_t conf_time_ms_named(const struct conf *conf, const char *transport,
                           const char *name)
{
    return value_named(conf, transport, name, "conf_time_ms", TYPES_TIME)->v.ms;
}

int conf_bool_named(const struct conf *conf, const char *transport,
                    const char *name)
{
    return value_named(conf, transport, name, "conf_bool", TYPES_BOOL)->v.b;
}

const char *conf_str_named(const struct conf *conf, const char *transport,
                           const char *name)
{
    return value_named(conf, transport, name, "conf_str", TYPES_STR)->text;
}

struct conf_feedback conf_feedback_named(const struct conf *conf,
                                         const char *transport,
                                         const char *name)
{
    return value_named(conf, transport, name, "conf_feedback", TYPES_FEEDBACK)
        ->v.fb;
}

int conf_lookup(const struct conf *conf, const char *name,
                struct conf_info *info)
{
    const struct conf_override *ov;
    const struct conf_param *p;
    const struct conf_value *val;
    enum conf_name_kind kind;

    kind = param_find(conf, name, &p, &ov);
    if (kind == CONF_NAME_UNKNOWN)
        return -1;
    val = ov ? &ov->value : &p->value;
    memset(info, 0, sizeof(*info));
    info->def = &p->def;
    info->is_override = (kind == CONF_NAME_OVERRIDE);
    info->value = conf_value_raw(p, val);
    info->expanded = val->state == CONF_STATE_OK ? val->text : NULL;
    if (kind == CONF_NAME_GLOBAL || ov != NULL) {
        info->is_set = (val->raw != NULL);
        info->non_default =
            info->is_set && (ov || strcmp(val->raw, p->def.defval) != 0);
        info->file = val->file;
        info->line = val->line;
    }
    return 0;
}

size_t conf_def_count(const struct conf *conf)
{
    return conf->nparams;
}

const struct conf_def *conf_def_at(const struct conf *conf, size_t i)
{
    if (i >= conf->nparams)
        conf_panic("conf_def_at: index %zu >= %zu", i, conf->nparams);
    return &conf->params[i].def;
}

size_t conf_override_count(const struct conf *conf)
{
    return conf->noverrides;
}

const char *conf_override_at(const struct conf *conf, size_t i)
{
    if (i >= conf->noverrides)
        conf_panic("conf_override_at: index %zu >= %zu", i, conf->noverrides);
    return conf->overrides[i].name;
}
