#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

/*
 * NAME
 *	cli 3h - the subcommands of the sluice command
 * SYNOPSIS
 *	#include "cli/cli.h"
 *
 *	extern const struct cli_command cli_config_command;
 *	extern const struct cli_command cli_queue_command, cli_show_command,
 *			cli_qshape_command;
 *	extern const struct cli_command cli_delete_command, cli_hold_command,
 *			cli_release_command, cli_requeue_command;
 *	extern const struct cli_command cli_import_command, cli_recover_command;
 *	extern const struct cli_command cli_route_command, cli_reload_command,
 *			cli_flush_command, cli_status_command,
 *			cli_suspend_command, cli_resume_command,
 *			cli_verify_command,
 *			cli_top_command;
 *
 *	struct conf *cli_conf_open(const char *opt_path)
 *	int	cli_control(const struct cli *cli, const char *cmd,
 *			const char *request)
 *	void	cli_option_error(const char *cmd, int ch)
 *	struct conf *cli_spool_open(const struct cli *cli, const char *cmd,
 *			int flags, struct spool **sp)
 *
 *	struct cli_qshape *cli_qshape_create(int tick, int buckets,
 *			int linear)
 *	void	cli_qshape_add(struct cli_qshape *qs, const char *address,
 *			int64_t age_us)
 *	void	cli_qshape_print(const struct cli_qshape *qs, FILE *fp,
 *			int width)
 *	void	cli_qshape_free(struct cli_qshape *qs)
 * DESCRIPTION
 *	The sluice command (src/cli/main.c) is a dispatcher: it takes the
 *	global options, then runs one subcommand from its table. A
 *	subcommand is a struct cli_command: its name, the arguments it
 *	takes (for usage lines and "sluice help"), a one-line summary, and
 *	the function that runs it. That function receives the global
 *	options and its own argument vector (argv[0] is the subcommand's
 *	name, so getopt() works as usual), writes to stdout and stderr,
 *	and returns the exit status: CLI_EXIT_OK, CLI_EXIT_FAIL, or
 *	CLI_EXIT_USAGE after a usage line on stderr. A new subcommand is a
 *	new file with one struct cli_command, and one line in main.c.
 *	"sluice sendmail" is in src/sendmail/ (sendmail_main()), below
 *	this layer: main.c gives it its table entry.
 *
 *	cli_control() (control.c) sends a request line to the running
 *	sluiced over its control socket and prints its reply: the exit
 *	status is CLI_EXIT_OK, CLI_EXIT_FAIL (refused, or no answer), or
 *	CLI_EXIT_DOWN (no daemon runs on the queue).
 *
 *	cli_conf_open() loads the configuration a subcommand runs with:
 *	the file named by -c (opt_path), else $SLUICE_CONFIG, else the
 *	default file (see conf_path()). On error it prints "sluice: " and
 *	the reason to stderr and returns NULL. cli_option_error() reports
 *	what getopt() returned as ch (':' a missing argument, else an
 *	unknown option; optopt names it) as "sluice: CMD: option -x needs
 *	an argument" or "sluice: CMD: unknown option -x" (without "CMD: "
 *	for a NULL cmd). A subcommand is defined with CLI_COMMAND(variable,
 *	name, args, summary, run function). cli_spool_open() is
 *	described in spool_open.c.
 */

#include "conf/conf.h"
#include "spool/spool.h"
#include "util/util.h"

#include <stdio.h>

#define CLI_EXIT_OK    0
#define CLI_EXIT_FAIL  1
#define CLI_EXIT_USAGE 64 /* EX_USAGE of sysexits.h */
#define CLI_EXIT_DOWN  69 /* EX_UNAVAILABLE: no daemon runs, as postqueue */

/* Defines subcommand var; its function run follows in the same file. */
#define CLI_COMMAND(var, name, args, summary, run)                             \
    static int run(const struct cli *cli, int argc, char **argv);              \
    const struct cli_command var = {name, args, summary, run}

/* Options given before the subcommand. */
struct cli {
    const char *config_path; /* -c FILE, or NULL */
};

struct cli_command {
    const char *name;
    const char *args;    /* what follows the name in a usage line */
    const char *summary; /* one line */
    int (*run)(const struct cli *cli, int argc, char **argv);
};

extern const struct cli_command cli_config_command;
extern const struct cli_command cli_queue_command;
extern const struct cli_command cli_show_command;
extern const struct cli_command cli_qshape_command;
extern const struct cli_command cli_delete_command;
extern const struct cli_command cli_hold_command;
extern const struct cli_command cli_release_command;
extern const struct cli_command cli_requeue_command;
extern const struct cli_command cli_import_command;
extern const struct cli_command cli_recover_command;
extern const struct cli_command cli_route_command;
extern const struct cli_command cli_reload_command;
extern const struct cli_command cli_flush_command;
extern const struct cli_command cli_status_command;
extern const struct cli_command cli_suspend_command;
extern const struct cli_command cli_verify_command;
extern const struct cli_command cli_resume_command;
extern const struct cli_command cli_top_command;

struct conf *cli_conf_open(const char *opt_path);
int cli_control(const struct cli *cli, const char *cmd, const char *request);
void cli_option_error(const char *cmd, int ch);
struct conf *cli_spool_open(const struct cli *cli, const char *cmd, int flags,
                            struct spool **sp);

/* qshape.c: the table of "sluice qshape" (tests fill it directly). */
struct cli_qshape;
struct cli_qshape *cli_qshape_create(int tick, int buckets, int linear);
void cli_qshape_add(struct cli_qshape *qs, const char *address, int64_t age_us);
void cli_qshape_print(const struct cli_qshape *qs, FILE *fp, int width);
void cli_qshape_free(struct cli_qshape *qs);

#endif
