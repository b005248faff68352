#ifndef SLUICE_CONF_H
#define SLUICE_CONF_H

/*
 * NAME
 *	conf 3 - sluice parameters: the table, the config file, lookups
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	struct conf *conf_create(void)
 *	void	conf_free(struct conf *conf)
 *	int	conf_add_params(struct conf *conf, const struct conf_def *defs,
 *			size_t count, char *why, size_t whylen)
 *	int	conf_load(struct conf *conf, const char *path, int must_exist,
 *			char *why, size_t whylen)
 *	int	conf_set(struct conf *conf, const char *name, const char *value,
 *			char *why, size_t whylen)
 *	int	conf_validate(struct conf *conf, char *why, size_t whylen)
 *	const char *conf_path(const char *opt_path, int *must_exist)
 *	int	conf_default_set(struct conf *conf, const char *name,
 *			const char *text, char *why, size_t whylen)
 *	void	conf_unknown_warn(const struct conf *conf, conf_warn_fn *fn,
 *			void *ctx)
 *	size_t	conf_suggest(const struct conf *conf, const char *name,
 *			char *buf, size_t len)
 *
 *	long	conf_int(const struct conf *conf, const char *transport,
 *			enum conf_param_id param)
 *	int64_t conf_time_ms(const struct conf *conf, const char *transport,
 *			enum conf_param_id param)
 *	int	conf_bool(...), const char *conf_str(...),
 *	struct conf_feedback conf_feedback(...)	(same arguments)
 *	long	conf_int_named(const struct conf *conf, const char *transport,
 *			const char *name)
 *	conf_time_ms_named(), conf_bool_named(), conf_str_named(),
 *	conf_feedback_named()	(same arguments)
 *
 *	int	conf_feedback_parse(const char *text, struct conf_feedback *fb,
 *			char *why, size_t whylen)
 *	int	conf_time_parse(const char *text, char unit, int64_t *ms,
 *			char *why, size_t whylen)
 *
 *	int	conf_lookup(const struct conf *conf, const char *name,
 *			struct conf_info *info)
 *	size_t	conf_def_count(const struct conf *conf)
 *	const struct conf_def *conf_def_at(const struct conf *conf, size_t i)
 *	size_t	conf_override_count(const struct conf *conf)
 *	const char *conf_override_at(const struct conf *conf, size_t i)
 * DESCRIPTION
 *	The parameter table (conf_params[], written once in params.def)
 *	lists every parameter sluice knows, in the order of enum
 *	conf_param: CONF_<name> is its symbol and its index. Its name, type, default value (text, may refer to other
 *	parameters as $name or ${name}), and, for parameters that a
 *	transport may override, the suffix of the <transport>_<suffix>
 *	override name (e.g. "_destination_concurrency_limit" for
 *	default_destination_concurrency_limit, so that
 *	smtp_destination_concurrency_limit overrides it for transport smtp).
 *
 *	conf_create() returns a configuration holding the built-in table
 *	with every parameter at its default. conf_add_params() adds more
 *	parameters (sluice-sim adds its sim_* keys this way).
 *
 *	conf_load() reads a file of "name = value" lines: "#" starts a
 *	comment line, a line that starts with white space continues the
 *	previous one, blank lines are ignored. A missing file is not an
 *	error unless must_exist is set. conf_set() sets one value. Both
 *	check that a value without $ references has the right type;
 *	conf_validate() checks every value after $name expansion
 *	(conf_load() calls it). conf_set() refuses a name that is not
 *	known (a global parameter, or an override <transport>_<suffix> of
 *	one); conf_load() keeps such a name from the file aside, usable as
 *	$name in other values, for conf_unknown_warn() to report (see
 *	unknown.c): a Postfix main.cf loads. On error they return -1 and
 *	leave in why a complete message: "FILE, line N: bad parameter name
 *	\"a b\"" or "FILE, line N: default_process_limit: bad value \"x\":
 *	expected an integer". They never exit or abort on bad input.
 *
 *	conf_default_set() replaces the default text of a global parameter
 *	in this configuration only, for defaults known only at run time
 *	(myhostname: this system's name). A text of the wrong type gives
 *	-1 and a message; naming a parameter that is not global is a
 *	programming error.
 *
 *	conf_unknown_warn() calls fn with one complete warning for each
 *	unknown name set in the file and not referred to by any value:
 *	"FILE, line N: unknown parameter \"NAME\" ignored (did you mean
 *	\"KNOWN\"?)". conf_suggest() writes the known name closest to name
 *	(a likely typo) into buf and returns its length, or 0 for none.
 *
 *	conf_path() chooses the config file: opt_path (-c FILE) if not
 *	NULL, else $SLUICE_CONFIG if set, else the built-in default path;
 *	must_exist is set for the first two.
 *
 *	The typed getters return the effective value of a parameter of the
 *	built-in table, named by its symbol (conf_int(conf, NULL,
 *	CONF_queue_run_delay)): a misspelt name does not compile, and the
 *	lookup is an index. With transport non-NULL and the parameter
 *	overridable, the value of <transport><suffix> is used when it is
 *	set, else the global one. The _named getters take the name as
 *	text, for parameters added at run time (conf_add_params()) and for
 *	override names (transport is then ignored). Asking for an unknown
 *	name or the wrong type, or for a value that conf_validate() would
 *	reject, is a programming error and aborts with a message naming
 *	both.
 *
 *	Types: integers; times (a number with an optional unit: ms, s, m,
 *	h, d, w; the parameter's default unit when none; fractions such as
 *	0.5s allowed) returned in milliseconds; booleans (yes/no); feedback
 *	expressions (x, x/y, x/concurrency, x/sqrt_concurrency with the
 *	resulting value in [0,1]); choices (one word of a fixed set);
 *	strings; lists (words separated by commas and/or white space,
 *	returned as the expanded text).
 *
 *	conf_feedback_parse() and conf_time_parse() leave in why only what
 *	was expected ("expected a time like 300s, 5m, 1h"); the caller
 *	names the parameter and the value.
 *
 *	conf_lookup() describes one name, a global parameter or an
 *	override, for tools such as "sluice config": its definition, its
 *	effective value as written and expanded (for an override that is
 *	not set, the global's), whether the name itself is set and to a
 *	value other than the default text, and the file and line where it
 *	was set. It returns -1 for an unknown name. conf_def_count() and
 *	conf_def_at() list the global parameters (the built-in table, then
 *	any added ones), conf_override_count() and conf_override_at() the
 *	names of the overrides that are set, in the order they were first
 *	set.
 *
 *	$$ in a value stands for a single $. $name expansion is described
 *	in expand.c and sluice.conf(5).
 *
 *	Strings returned by conf_str() and conf_lookup() belong to conf:
 *	they stay valid until conf is changed (conf_set(), conf_load(),
 *	conf_add_params()) or freed. Getters and conf_lookup() only read,
 *	so a configuration that is no longer changed may be shared by
 *	threads.
 */

#include <stddef.h>
#include <stdint.h>

struct core_transport_params;

enum conf_type {
    CONF_INT,
    CONF_TIME,
    CONF_BOOL,
    CONF_FEEDBACK,
    CONF_CHOICE,
    CONF_STRING,
    CONF_LIST,
};

/* A feedback expression: value, or value/concurrency, or
 * value/sqrt(concurrency). */
enum conf_feedback_form {
    CONF_FEEDBACK_CONSTANT,
    CONF_FEEDBACK_CONCURRENCY,
    CONF_FEEDBACK_SQRT_CONCURRENCY,
};

struct conf_feedback {
    enum conf_feedback_form form;
    double value; /* in [0, 1] */
};

struct conf_def {
    const char *name; /* global name */
    enum conf_type type;
    const char *defval;  /* default, as text */
    const char *suffix;  /* per-transport override suffix, or NULL */
    long min, max;       /* CONF_INT bounds (inclusive) */
    char unit;           /* CONF_TIME default unit: 's', 'm', 'h', 'd', 'w' */
    const char *choices; /* CONF_CHOICE: words separated by '|' */
    const char *summary; /* one line, for humans */
};

/* Every built-in parameter's symbol, in the order of conf_params[]. */
enum conf_param_id {
#define CONF_PARAM(name, type, ...) CONF_##name,
#include "conf/params.def"
#undef CONF_PARAM
    CONF_PARAM_COUNT
};

extern const struct conf_def conf_params[];
extern const size_t conf_param_count;

struct conf;

/* Receives one complete warning message. */
typedef void conf_warn_fn(void *ctx, const char *text);

struct conf *conf_create(void);
void conf_free(struct conf *conf);
int conf_add_params(struct conf *conf, const struct conf_def *defs,
                    size_t count, char *why, size_t whylen);
int conf_load(struct conf *conf, const char *path, int must_exist, char *why,
              size_t whylen);
int conf_set(struct conf *conf, const char *name, const char *value, char *why,
             size_t whylen);
int conf_validate(struct conf *conf, char *why, size_t whylen);
const char *conf_path(const char *opt_path, int *must_exist);
int conf_default_set(struct conf *conf, const char *name, const char *text,
                     char *why, size_t whylen);
void conf_unknown_warn(const struct conf *conf, conf_warn_fn *fn, void *ctx);
size_t conf_suggest(const struct conf *conf, const char *name, char *buf,
                    size_t len);

long conf_int(const struct conf *conf, const char *transport,
              enum conf_param_id param);
int64_t conf_time_ms(const struct conf *conf, const char *transport,
                     enum conf_param_id param);
int conf_bool(const struct conf *conf, const char *transport,
              enum conf_param_id param);
const char *conf_str(const struct conf *conf, const char *transport,
                     enum conf_param_id param);
struct conf_feedback conf_feedback(const struct conf *conf,
                                   const char *transport,
                                   enum conf_param_id param);
long conf_int_named(const struct conf *conf, const char *transport,
                    const char *name);
int64_t conf_time_ms_named(const struct conf *conf, const char *transport,
                           const char *name);
int conf_bool_named(const struct conf *conf, const char *transport,
                    const char *name);
const char *conf_str_named(const struct conf *conf, const char *transport,
                           const char *name);
struct conf_feedback conf_feedback_named(const struct conf *conf,
                                         const char *transport,
                                         const char *name);

int conf_feedback_parse(const char *text, struct conf_feedback *fb, char *why,
                        size_t whylen);
int conf_time_parse(const char *text, char unit, int64_t *ms, char *why,
                    size_t whylen);

/* What conf_lookup() tells about one name. */
struct conf_info {
    const struct conf_def *def; /* the parameter (global for an override) */
    int is_override;            /* the name is <transport><suffix> */
    int is_set;                 /* the name itself is set */
    int non_default;            /* set, and not to the default text */
    const char *value;          /* effective value as written */
    const char *expanded;       /* ...expanded; NULL if that fails */
    const char *file;           /* where the name was set, or NULL */
    int line;                   /* line in that file */
};

int conf_lookup(const struct conf *conf, const char *name,
                struct conf_info *info);
size_t conf_def_count(const struct conf *conf);
const struct conf_def *conf_def_at(const struct conf *conf, size_t i);
size_t conf_override_count(const struct conf *conf);
const char *conf_override_at(const struct conf *conf, size_t i);

void conf_core_params(const struct conf *conf, const char *transport,
                      struct core_transport_params *p);

/*
 * The scheduler rules file (scheduler_rules), ZMailer's scheduler.conf
 * form, for <transport>_delivery_scheduler = zmailer (rules.c).
 */
#define CONF_RULES_ARGV_MAX    32    /* words of a command */
#define CONF_RULES_RETRIES_MAX 32    /* factors of a retries list */
#define CONF_RULES_MAX         10000 /* clauses of a file */

struct core_zrule;
struct conf_rules;

enum conf_rule_agent {
    CONF_RULE_SMTP,    /* the built-in SMTP session */
    CONF_RULE_LMTP,    /* the built-in LMTP session */
    CONF_RULE_PROGRAM, /* an external program */
};

/* What a recipient's channel/host picks up from the file; pointers
 * into the rules. */
struct conf_rule_match {
    int index; /* the clause with the command: the rule */
    int line;  /* where that clause starts */
    enum conf_rule_agent agent;
    char *const *argv; /* PROGRAM: words, $host and $channel as written */
    int argc;
    int per_host; /* argv has $host */
    int maxring;  /* 0: no limit of its own */
    int64_t idlemax, interval;
    int ageorder, queueonly;
    const int *retries;
    int nretries;
    int skew; /* 0: none */
};

struct conf_rules *conf_rules_create(const char *name);
int conf_rules_line(struct conf_rules *r, int line, const char *text, char *why,
                    size_t whylen);
int conf_rules_finish(struct conf_rules *r, char *why, size_t whylen);
struct conf_rules *conf_rules_load(const char *path, char *why, size_t whylen);
void conf_rules_free(struct conf_rules *r);
size_t conf_rules_count(const struct conf_rules *r);
int conf_rules_maxta(const struct conf_rules *r);
int conf_rules_match(const struct conf_rules *r, const char *channel,
                     const char *host, struct conf_rule_match *m);
int conf_rules_channel_known(const struct conf_rules *r, const char *channel);
int conf_rules_channel_program(const struct conf_rules *r, const char *channel,
                               int *line);
char **conf_rules_argv(const struct conf_rule_match *m, const char *channel,
                       const char *host);
void conf_rules_argv_free(char **argv);
int64_t conf_rules_retry_delay(const struct conf_rule_match *m, int attempt);
void conf_rules_zrule(const struct conf_rule_match *m, struct core_zrule *z);

#endif
