/*
 * NAME
 *	config 3 - "sluice config": print parameter settings
 * SYNOPSIS
 *	#include "cli/cli.h"
 *
 *	extern const struct cli_command cli_config_command;
 *
 *	struct conf *cli_conf_open(const char *opt_path)
 *	void	cli_option_error(const char *cmd, int ch)
 * DESCRIPTION
 *	sluice config [-c FILE] [-n] [-x] [NAME...]
 *
 *	Prints "name = value" lines, as postconf does. Without NAME, every
 *	global parameter and every override that is set, sorted by name;
 *	with NAME, those names in the order given (a global parameter, or
 *	an override <transport><suffix>: its value if set, else the value
 *	of the global parameter it overrides). -n keeps only the names
 *	that are set to a value other than their default (every override
 *	that is set counts). Values are printed as written; -x expands
 *	$name references. -c FILE reads FILE instead of the file given to
 *	the sluice command or the default one.
 *
 *	The configuration is checked first exactly as sluiced checks it
 *	at start and at reload (daemon_config_load(): parameters, routing
 *	table, host names, SMTP server lists, name servers); what sluiced
 *	would refuse is reported and nothing is printed. Warnings (unknown
 *	parameters, settings that make no sense together) go to stderr as
 *	"sluice: warning: ..." and do not change the exit status. An
 *	unknown NAME is reported with the closest known name, if any.
 *
 *	Exit status: 0; 1 when sluiced would refuse the configuration or a
 *	NAME is unknown (the other names are still printed); 64 on a usage
 *	error.
 *
 *	cli_conf_open() and cli_option_error() are here because this is the
 *	first subcommand that needs them; see cli.h.
 */

#include "cli/cli.h"

#include "conf/conf.h"
#include "daemon/daemon.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

CLI_COMMAND(cli_config_command, "config", "[-c FILE] [-n] [-x] [NAME...]",
            "print parameter settings", config_run);

void cli_option_error(const char *cmd, int ch)
{
    fprintf(stderr,
            ch == ':' ? "sluice: %s%soption -%c needs an argument\n"
                      : "sluice: %s%sunknown option -%c\n",
            cmd ? cmd : "", cmd ? ": " : "", optopt);
}

struct conf *cli_conf_open(const char *opt_path)
{
    char why[1024];
    struct conf *conf = daemon_conf_open(opt_path, why, sizeof(why));

    if (conf == NULL)
        fprintf(stderr, "sluice: %s\n", why);
    return conf;
}

static int config_usage(void)
{
    fprintf(stderr, "usage: sluice %s %s\n", cli_config_command.name,
            cli_config_command.args);
    return CLI_EXIT_USAGE;
}

static void config_print(const char *name, const struct conf_info *info,
                         int expand)
{
    const char *value = expand ? info->expanded : info->value;

    if (value == NULL) /* cannot happen: the file was validated */
        value = info->value;
    printf("%s =%s%s\n", name, *value ? " " : "", value);
}

static int name_compare(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int config_print_all(const struct conf *conf, int non_default,
                            int expand)
{
    size_t ndefs = conf_def_count(conf);
    size_t count = ndefs + conf_override_count(conf);
    const char **names;
    struct conf_info info;
    size_t i;

    names = xcalloc(count, sizeof(*names));
    for (i = 0; i < count; i++)
        names[i] = i < ndefs ? conf_def_at(conf, i)->name
                             : conf_override_at(conf, i - ndefs);
    qsort(names, count, sizeof(*names), name_compare);
    for (i = 0; i < count; i++) {
        if (conf_lookup(conf, names[i], &info) < 0)
            continue; /* cannot happen: the names come from conf */
        if (!non_default || info.non_default)
            config_print(names[i], &info, expand);
    }
    free(names);
    return CLI_EXIT_OK;
}

static int config_print_names(const struct conf *conf, int argc, char **argv,
                              int non_default, int expand)
{
    struct conf_info info;
    char near[300];
    int status = CLI_EXIT_OK;
    int i;

    for (i = 0; i < argc; i++) {
        if (conf_lookup(conf, argv[i], &info) < 0) {
            fflush(stdout); /* keep the order of the lines on a tty */
            if (conf_suggest(conf, argv[i], near, sizeof(near)) > 0)
                fprintf(stderr,
                        "sluice: config: unknown parameter \"%s\" (did you "
                        "mean \"%s\"?)\n",
                        argv[i], near);
            else
                fprintf(stderr, "sluice: config: unknown parameter \"%s\"\n",
                        argv[i]);
            status = CLI_EXIT_FAIL;
        } else if (!non_default || info.non_default) {
            config_print(argv[i], &info, expand);
        }
    }
    return status;
}

static void config_warn(void *ctx, const char *text)
{
    (void)ctx;
    fflush(stdout);
    fprintf(stderr, "sluice: warning: %s\n", text);
}

/*
 * The configuration, checked as sluiced checks it (daemon_config_load()),
 * or NULL after saying why sluiced would refuse it.
 */
static struct conf *config_check(const char *path)
{
    struct daemon_config cf;
    struct conf *conf;
    char why[1024];

    if (daemon_config_load(path, &cf, config_warn, NULL, why, sizeof(why)) <
        0) {
        fprintf(stderr, "sluice: %s\n", why);
        return NULL;
    }
    conf = cf.conf;
    cf.conf = NULL;
    daemon_config_free(&cf);
    return conf;
}

static int config_run(const struct cli *cli, int argc, char **argv)
{
    const char *path = cli->config_path;
    struct conf *conf;
    int non_default = 0;
    int expand = 0;
    int status;
    int ch;

    /*
     * main() has used getopt() on its own argv; restarting at 1 is
     * enough because it stopped at a word boundary (the subcommand).
     */
    optind = 1;
    opterr = 0;
    while ((ch = getopt(argc, argv, "+:c:nx")) != -1) {
        switch (ch) {
        case 'c':
            path = optarg;
            break;
        case 'n':
            non_default = 1;
            break;
        case 'x':
            expand = 1;
            break;
        default:
            cli_option_error("config", ch);
            return config_usage();
        }
    }
    if ((conf = config_check(path)) == NULL)
        return CLI_EXIT_FAIL;
    if (optind == argc)
        status = config_print_all(conf, non_default, expand);
    else
        status = config_print_names(conf, argc - optind, argv + optind,
                                    non_default, expand);
    conf_free(conf);
    return status;
}
