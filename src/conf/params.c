/*
 * NAME
 *	params 3 - the table of sluice parameters
 * SYNOPSIS
 *	#include "conf/conf.h"
 *
 *	extern const struct conf_def conf_params[];
 *	extern const size_t conf_param_count;
 * DESCRIPTION
 *	conf_params[] is every parameter sluice knows, with its type, its
 *	default (as text, exactly as a user would write it), its bounds
 *	or default time unit, and, for parameters that one transport may
 *	override, the suffix of the <transport><suffix> override name.
 *
 *	Names and defaults are those of the Postfix queue manager, so that
 *	a tuned Postfix scheduler configuration carries over; see
 *	doc/sluice.conf.5 for the meaning of each parameter. The rule for
 *	suffixes is Postfix's: default_X is overridden by <transport>_X,
 *	a few parameters without the default_ prefix
 *	(initial_destination_concurrency, concurrency_feedback_rounding)
 *	are overridden by <transport>_<name>, and the SMTP client's smtp_X
 *	(timeouts, MX limits, connection reuse, smtp_helo_name) by
 *	<transport>_X, so that smtp_X is both the global value and that of
 *	transport smtp. No suffix may end another one in a way that makes
 *	an existing name change meaning: test_conf.c checks the pairs.
 *
 *	Keep the table sorted by subject, not by name: "sluice config"
 *	sorts its output itself.
 */

#include "conf/conf.h"

#include <limits.h>

/*
 * Bounds. They keep values in the range where the scheduler's
 * arithmetic (window sizes, slot counts, recipient pools multiplied by
 * small factors) cannot overflow, and far beyond any sane setting.
 */
#define MAX_CONCURRENCY 100000L
#define MAX_RECIPIENTS  10000000L
#define MAX_SLOTS       10000L

/*
 * One initializer per type, for the lines of params.def: name, default,
 * override suffix, then what the type needs (INT bounds, TIME a default
 * unit, CHOICE its words), then the summary. Unused fields are 0.
 */
/* clang-format off */
#define INT(n, d, s, lo, hi, sum) {n, CONF_INT, d, s, lo, hi, 0, NULL, sum}
#define TIME(n, d, s, unit, sum)  {n, CONF_TIME, d, s, 0, 0, unit, NULL, sum}
#define BOOL(n, d, s, sum)        {n, CONF_BOOL, d, s, 0, 0, 0, NULL, sum}
#define FEEDBACK(n, d, s, sum)    {n, CONF_FEEDBACK, d, s, 0, 0, 0, NULL, sum}
#define CHOICE(n, d, s, w, sum)   {n, CONF_CHOICE, d, s, 0, 0, 0, w, sum}
#define STRING(n, d, s, sum)      {n, CONF_STRING, d, s, 0, 0, 0, NULL, sum}
#define LIST(n, d, s, sum)        {n, CONF_LIST, d, s, 0, 0, 0, NULL, sum}
/* clang-format on */

const struct conf_def conf_params[] = {
#define CONF_PARAM(name, type, ...) type(#name, __VA_ARGS__),
#include "conf/params.def"
#undef CONF_PARAM
};

const size_t conf_param_count = sizeof(conf_params) / sizeof(conf_params[0]);
