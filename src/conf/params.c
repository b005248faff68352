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

/* An integer parameter with bounds. */
#define INT(name, def, sfx, lo, hi, sum)                                       \
    {                                                                          \
        name, CONF_INT, def, sfx, lo, hi, 0, NULL, sum                         \
    }
/* A time parameter with its default unit. */
#define TIME(name, def, sfx, unit, sum)                                        \
    {                                                                          \
        name, CONF_TIME, def, sfx, 0, 0, unit, NULL, sum                       \
    }
#define BOOL(name, def, sfx, sum)                                              \
    {                                                                          \
        name, CONF_BOOL, def, sfx, 0, 0, 0, NULL, sum                          \
    }
#define FEEDBACK(name, def, sfx, sum)                                          \
    {                                                                          \
        name, CONF_FEEDBACK, def, sfx, 0, 0, 0, NULL, sum                      \
    }
#define CHOICE(name, def, sfx, choices, sum)                                   \
    {                                                                          \
        name, CONF_CHOICE, def, sfx, 0, 0, 0, choices, sum                     \
    }
#define STRING(name, def, sfx, sum)                                            \
    {                                                                          \
        name, CONF_STRING, def, sfx, 0, 0, 0, NULL, sum                        \
    }
#define LIST(name, def, sfx, sum)                                              \
    {                                                                          \
        name, CONF_LIST, def, sfx, 0, 0, 0, NULL, sum                          \
    }

const struct conf_def conf_params[] = {
#define CONF_PARAM(name, type, ...) type(#name, __VA_ARGS__),
#include "conf/params.def"
#undef CONF_PARAM
};

const size_t conf_param_count = sizeof(conf_params) / sizeof(conf_params[0]);
