/*
 * NAME
 *	expand 3 - $name expansion and validation of every value
 * SYNOPSIS
 *	#include "conf/conf_private.h"
 *
 *	int	conf_resolve(struct conf *conf)
 *
 *	#include "conf/conf.h"
 *
 *	int	conf_validate(struct conf *conf, char *why, size_t whylen)
 * DESCRIPTION
 *	A value may refer to other parameters: $name or ${name} is replaced
 *	by the expanded value of name, and $$ by a single $. name is a
 *	global parameter (its value, or its default), an override
 *	<transport><suffix> (its value if set, else the global one, which
 *	is what a getter would return for that transport), or a name the
 *	table does not know that the file sets (a user-defined parameter,
 *	expanded as text and marked used). ${...} also allows the '-' that
 *	transport names may contain.
 *
 *	conf_resolve() expands every value, then checks the expanded text
 *	against the parameter's type. Each value is expanded once (a depth-
 *	first walk that marks values busy while their references are being
 *	expanded and keeps the result), so the work is linear in the size
 *	of the configuration even when values refer to each other many
 *	times, a reference to a busy value is a loop, and nothing can
 *	recurse forever. Nesting is limited to CONF_EXPAND_DEPTH levels and
 *	an expanded text to CONF_EXPAND_MAX bytes, so that hostile input
 *	cannot exhaust the stack or the memory.
 *
 *	A value that is wrong by itself (bad syntax after $, an unknown
 *	name, the reference that closes a loop, a bad typed value) records
 *	its message; a value that is bad only because it refers to a bad
 *	one is marked bad without a message of its own, so that one mistake
 *	gives one message. conf_resolve() returns the number of bad values.
 *
 *	conf_validate() resolves and returns -1 with the message of the
 *	bad value that was set first (the earliest line of the file), or 0
 *	when every value is good.
 */

#include "conf/conf.h"
#include "conf/conf_private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONF_EXPAND_DEPTH 100
#define CONF_EXPAND_MAX   (1024 * 1024)

/* Longest error message kept with a value. */
#define ERROR_MAX 512

struct resolve_frame {
    const char *name;
    const struct conf_value *value;
};

struct resolve {
    struct conf *conf;
    struct resolve_frame stack[CONF_EXPAND_DEPTH];
    size_t depth;
};

/* Record why val is wrong: "NAME: bad value "RAW": REASON". */
static void value_fail(struct conf_value *val, const char *name,
                       const char *raw, const char *fmt, ...)
{
    char reason[ERROR_MAX];
    char quoted[ERROR_MAX];
    char where[ERROR_MAX];
    char msg[4 * ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(reason, sizeof(reason), fmt, ap);
    va_end(ap);
    conf_quote(quoted, sizeof(quoted), raw);
    if (val->file)
        snprintf(where, sizeof(where), "%s, line %d: ", val->file, val->line);
    else
        where[0] = 0;
    snprintf(msg, sizeof(msg), "%s%s: bad value %s: %s", where, name, quoted,
             reason);
    free(val->error);
    val->error = xstrdup(msg);
}

static int is_name_char(int ch, int braced)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '_' || (braced && ch == '-');
}

/*
 * The value a reference names and its text as written, or NULL. An
 * override that is not set stands for its global parameter, as in a
 * getter.
 */
static struct conf_value *ref_value(struct conf *conf, const char *name,
                                    const char **canon, const char **raw)
{
    struct conf_override *ov;
    struct conf_unknown *u;
    struct conf_param *p;
    size_t param;
    size_t tlen;

    switch (conf_name_find(conf, name, strlen(name), &param, &tlen)) {
    case CONF_NAME_OVERRIDE:
        if ((ov = conf_override_find(conf, param, name, tlen)) != NULL) {
            *canon = ov->name;
            *raw = ov->value.raw;
            return &ov->value;
        }
        /* FALLTHROUGH */
    case CONF_NAME_GLOBAL:
        p = conf->params + param;
        *canon = p->def.name;
        *raw = conf_value_raw(p, &p->value);
        return &p->value;
    case CONF_NAME_UNKNOWN:
        break;
    }
    if ((u = conf_unknown_find(conf, name)) != NULL) {
        u->used = 1;
        *canon = u->name;
        *raw = u->value.raw;
        return &u->value;
    }
    return NULL;
}

/* "a -> b -> a", from the frame that holds ref to the top of the stack. */
static void loop_path(const struct resolve *r, const struct conf_value *ref,
                      const char *refname, char *path, size_t len)
{
    size_t used = 0;
    size_t i = r->depth;

    while (i > 0 && r->stack[i - 1].value != ref)
        i--;
    if (i > 0)
        i--;
    path[0] = 0;
    for (; i < r->depth && used < len; i++)
        used += (size_t)snprintf(path + used, len - used, "%s -> ",
                                 r->stack[i].name);
    if (used < len)
        snprintf(path + used, len - used, "%s", refname);
}

static int value_expand(struct resolve *r, const char *as, const char *name,
                        struct conf_value *val, const char *raw);

/*
 * Expand the reference at *cp (just after the '$') into out. Returns 0,
 * or -1 after recording the problem in val (when it is val's own).
 */
static int ref_expand(struct resolve *r, const char *name,
                      struct conf_value *val, const char *raw, const char **cp,
                      struct util_buf *out)
{
    const char *start = *cp;
    int braced = (*start == '{');
    const char *end;
    struct conf_value *ref;
    const char *refraw = NULL;
    const char *canon = NULL;
    char path[ERROR_MAX];
    char *refname;
    int status;

    if (*start == '$') {
        util_buf_add(out, "$", 1);
        *cp = start + 1;
        return 0;
    }
    if (braced)
        start++;
    for (end = start; is_name_char((unsigned char)*end, braced); end++)
        /* void */;
    if (end == start || (braced && *end != '}')) {
        value_fail(val, name, raw, "expected $name, ${name} or $$");
        return -1;
    }
    *cp = end + braced;
    refname = xstrndup(start, (size_t)(end - start));
    if ((ref = ref_value(r->conf, refname, &canon, &refraw)) == NULL) {
        value_fail(val, name, raw, "unknown parameter \"%s\"", refname);
        status = -1;
    } else if (ref->state == CONF_STATE_BUSY) {
        loop_path(r, ref, refname, path, sizeof(path));
        value_fail(val, name, raw, "$name expansion loop: %s", path);
        status = -1;
    } else if (value_expand(r, refname, canon, ref, refraw) < 0) {
        status = -1;
    } else {
        util_buf_add(out, ref->text, strlen(ref->text));
        status = 0;
    }
    free(refname);
    return status;
}

/*
 * Expand val once. name is the value's own name, for messages; as is the
 * name by which it was referred to (an override that is not set refers
 * to its global), for the path of a loop. The caller passes the text as
 * written because a global at its default has none of its own.
 */
static int value_expand(struct resolve *r, const char *as, const char *name,
                        struct conf_value *val, const char *raw)
{
    struct util_buf out = UTIL_BUF_INIT;
    const char *cp;
    const char *dollar;

    if (val->state == CONF_STATE_OK)
        return 0;
    if (val->state == CONF_STATE_BAD)
        return -1;
    if (r->depth == CONF_EXPAND_DEPTH) {
        value_fail(val, name, raw, "$name expansion nested deeper than %d",
                   CONF_EXPAND_DEPTH);
        val->state = CONF_STATE_BAD;
        return -1;
    }
    val->state = CONF_STATE_BUSY;
    r->stack[r->depth].name = as;
    r->stack[r->depth].value = val;
    r->depth++;
    for (cp = raw; (dollar = strchr(cp, '$')) != NULL;) {
        util_buf_add(&out, cp, (size_t)(dollar - cp));
        cp = dollar + 1;
        if (ref_expand(r, name, val, raw, &cp, &out) < 0)
            break;
        if (out.len > CONF_EXPAND_MAX) {
            value_fail(val, name, raw, "expands to more than %d bytes",
                       CONF_EXPAND_MAX);
            break;
        }
    }
    r->depth--;
    if (dollar != NULL) {
        /* Bad by itself (message recorded) or through a reference. */
        val->state = CONF_STATE_BAD;
        util_buf_free(&out);
        return -1;
    }
    util_buf_add(&out, cp, strlen(cp));
    val->text = util_buf_take(&out);
    val->state = CONF_STATE_OK;
    return 0;
}

/* Expand, then check the type of, one value. */
static void value_resolve(struct resolve *r, const struct conf_def *def,
                          const char *name, struct conf_value *val,
                          const char *raw)
{
    char why[ERROR_MAX];
    char quoted[ERROR_MAX];

    if (value_expand(r, name, name, val, raw) < 0)
        return;
    if (conf_value_parse(def, val->text, &val->v, why, sizeof(why)) == 0)
        return;
    if (strcmp(raw, val->text) == 0) {
        value_fail(val, name, raw, "%s", why);
    } else {
        conf_quote(quoted, sizeof(quoted), val->text);
        value_fail(val, name, raw, "expands to %s: %s", quoted, why);
    }
}

static void value_reset(struct conf_value *val)
{
    free(val->text);
    free(val->error);
    val->text = NULL;
    val->error = NULL;
    val->state = CONF_STATE_NEW;
}

int conf_resolve(struct conf *conf)
{
    struct resolve r;
    struct conf_param *p;
    struct conf_override *ov;
    size_t i;
    int bad = 0;

    r.conf = conf;
    r.depth = 0;
    for (i = 0; i < conf->nparams; i++)
        value_reset(&conf->params[i].value);
    for (i = 0; i < conf->noverrides; i++)
        value_reset(&conf->overrides[i].value);
    for (i = 0; i < conf->nunknowns; i++) {
        value_reset(&conf->unknowns[i].value);
        conf->unknowns[i].used = 0;
    }

    /*
     * Expanding one value expands the values it refers to; their type
     * is checked when the loop reaches them. A bad type does not make
     * the values that refer to it bad: they only use its text.
     */
    for (i = 0; i < conf->nparams; i++) {
        p = conf->params + i;
        value_resolve(&r, &p->def, p->def.name, &p->value,
                      conf_value_raw(p, &p->value));
        bad += !CONF_VALUE_GOOD(&p->value);
    }
    for (i = 0; i < conf->noverrides; i++) {
        ov = conf->overrides + i;
        value_resolve(&r, &conf->params[ov->param].def, ov->name, &ov->value,
                      ov->value.raw);
        bad += !CONF_VALUE_GOOD(&ov->value);
    }
    return bad;
}

/* Is a earlier than b? Defaults (seq 0) come after every setting. */
static int earlier(const struct conf_value *a, const struct conf_value *b)
{
    if (b == NULL)
        return 1;
    if (a->seq == 0 || b->seq == 0)
        return b->seq == 0 && a->seq != 0;
    return a->seq < b->seq;
}

int conf_validate(struct conf *conf, char *why, size_t whylen)
{
    const struct conf_value *first = NULL;
    const struct conf_value *val;
    size_t i;

    if (conf_resolve(conf) == 0)
        return 0;
    for (i = 0; i < conf->nparams + conf->noverrides; i++) {
        val = i < conf->nparams ? &conf->params[i].value
                                : &conf->overrides[i - conf->nparams].value;
        if (val->error != NULL && earlier(val, first))
            first = val;
    }
    /* A user-defined value is checked only where it is used. */
    for (i = 0; i < conf->nunknowns; i++) {
        val = &conf->unknowns[i].value;
        if (val->error != NULL && earlier(val, first))
            first = val;
    }
    if (first == NULL)
        conf_panic("conf_validate: bad values without a message");
    snprintf(why, whylen, "%s", first->error);
    return -1;
}
