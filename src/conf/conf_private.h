#ifndef SLUICE_CONF_PRIVATE_H
#define SLUICE_CONF_PRIVATE_H

/*
 * NAME
 *	conf_private 3h - what the files of src/conf/ share
 * SYNOPSIS
 *	#include "conf/conf_private.h"
 * DESCRIPTION
 *	The representation of a configuration, for conf.c (names, values,
 *	getters), expand.c ($name expansion and validation), value.c
 *	(typed values) and file.c (the config file). Nothing outside
 *	src/conf/ includes this header.
 *
 *	A configuration is the parameter table (struct conf_param, one per
 *	global parameter, holding the global value) plus the overrides that
 *	have been set (struct conf_override, one per <transport><suffix>
 *	name). Every value keeps its text as written and, after the last
 *	resolution, its expanded text and typed value, so that getters are
 *	plain reads of an immutable structure.
 *
 *	conf_name_find() classifies a name: a global parameter (exact
 *	match), else an override (the longest known suffix preceded by a
 *	non-empty transport name of [a-z0-9_-]), else unknown.
 *
 *	conf_resolve() expands and type-checks every value, recording a
 *	message in each value that is wrong by itself; it returns the
 *	number of bad values. conf_value_parse() checks one expanded text
 *	against its parameter's type and leaves "expected ..." in why.
 *
 *	conf_set_at() is conf_set() with the location of the setting, for
 *	the file reader; it does not resolve (the reader validates once at
 *	the end).
 *
 *	Names the table does not know (unknown.c): conf_name_syntax_ok()
 *	tells whether a name could be a parameter's at all; the file reader
 *	records a well-formed unknown name with conf_unknown_set(), so
 *	that its value can still be referred to as $name (Postfix's user-
 *	defined parameters), and conf_unknown_find() finds it for the
 *	expansion, which marks it used. conf_unknown_free() drops them all.
 *	conf_value_clear() frees what a value holds.
 *
 *	conf_quote() is util_quote() for conf's messages: bytes from 0x80
 *	up escaped too, and one byte of buf kept spare, as these messages
 *	have always been written.
 *
 *	Memory comes from util/'s allocators, which never return NULL.
 *	conf_panic() reports a programming error through util_vpanic(),
 *	as "sluice: conf: MESSAGE", and aborts.
 */

#include "conf/conf.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

/* Where a value is in the last resolution. */
enum conf_state {
    CONF_STATE_NEW,  /* not resolved yet */
    CONF_STATE_BUSY, /* being expanded: seeing it again is a loop */
    CONF_STATE_OK,   /* expanded: text is valid */
    CONF_STATE_BAD,  /* does not expand */
};

union conf_typed {
    long i;
    int64_t ms;
    int b;
    struct conf_feedback fb;
};

struct conf_value {
    char *raw;         /* as written; NULL: a global at its default */
    char *file;        /* file where it was set, or NULL */
    int line;          /* line in that file */
    unsigned long seq; /* order of setting; 0 for defaults */
    enum conf_state state;
    char *text;         /* expanded text when state is OK */
    union conf_typed v; /* typed value when CONF_VALUE_GOOD() */
    char *error;        /* what is wrong with this value itself */
};

/* Expanded, and of the right type: what a getter may return. */
#define CONF_VALUE_GOOD(val)                                                   \
    ((val)->state == CONF_STATE_OK && (val)->error == NULL)

struct conf_param {
    struct conf_def def;
    struct conf_value value; /* the global value */
    char *defval_owned;      /* def.defval when set by conf_default_set() */
};

struct conf_override {
    char *name;   /* <transport><suffix> */
    size_t tlen;  /* length of the transport name */
    size_t param; /* index of the overridden parameter */
    struct conf_value value;
};

/* A name the table does not know, set in a file (unknown.c). */
struct conf_unknown {
    char *name;
    struct conf_value value; /* raw, file, line; expanded when referred to */
    int used;                /* some value refers to it */
};

struct conf {
    struct conf_param *params;
    size_t nparams;
    size_t params_alloc;
    struct conf_override *overrides;
    size_t noverrides;
    size_t overrides_alloc;
    struct conf_unknown *unknowns;
    size_t nunknowns;
    size_t unknowns_alloc;
    unsigned long seq;
};

/* What conf_name_find() found. */
enum conf_name_kind {
    CONF_NAME_UNKNOWN,
    CONF_NAME_GLOBAL,
    CONF_NAME_OVERRIDE,
};

enum conf_name_kind conf_name_find(const struct conf *conf, const char *name,
                                   size_t len, size_t *param, size_t *tlen);
struct conf_override *conf_override_find(const struct conf *conf, size_t param,
                                         const char *transport, size_t tlen);
const char *conf_value_raw(const struct conf_param *p,
                           const struct conf_value *val);

int conf_resolve(struct conf *conf);
int conf_name_syntax_ok(const char *name);
void conf_unknown_set(struct conf *conf, const char *name, const char *value,
                      const char *file, int line);
struct conf_unknown *conf_unknown_find(const struct conf *conf,
                                       const char *name);
void conf_unknown_free(struct conf *conf);
void conf_value_clear(struct conf_value *val);
int conf_value_parse(const struct conf_def *def, const char *text,
                     union conf_typed *v, char *why, size_t whylen);
int conf_set_at(struct conf *conf, const char *name, const char *value,
                const char *file, int line, char *why, size_t whylen);

void conf_quote(char *buf, size_t len, const char *text);

void conf_panic(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#endif
