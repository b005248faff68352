/*
 * NAME
 *	sluice 1 - the sluice command: dispatch to a subcommand
 * SYNOPSIS
 *	sluice [-c FILE] COMMAND [ARGS...]
 * DESCRIPTION
 *	Takes the options that apply to every subcommand (-c FILE: the
 *	configuration file), then runs the subcommand named by the first
 *	argument that is not an option, from the table commands[] below,
 *	and exits with its status. "help" and "version" live here because
 *	they are about the command itself; every other subcommand is a
 *	struct cli_command in its own file (see cli.h), except "sendmail",
 *	whose entry is here and whose work is src/sendmail/'s
 *	(sendmail_main()). "--help" and "--version"
 *	in the command's place are the same as "help" and "version", as
 *	most commands take them. Called sendmail (argv[0]), the program is
 *	"sluice sendmail", and called mailq, "sluice queue"; sendmail -bp
 *	is mailq, as in Postfix.
 *
 *	Exit status: the subcommand's; 1 when what it printed could not all
 *	be written to standard output ("sluice: CMD: write error: ..."); 64
 *	on a usage error.
 */

#include "cli/cli.h"

#include "sendmail/sendmail.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int help_run(const struct cli *cli, int argc, char **argv);
static int version_run(const struct cli *cli, int argc, char **argv);
static int sendmail_run(const struct cli *cli, int argc, char **argv);

static const struct cli_command sendmail_command = {
    "sendmail",
    SENDMAIL_ARGS,
    "submit a message read on standard input",
    sendmail_run,
};

static const struct cli_command help_command = {
    "help",
    "[COMMAND]",
    "show how to use sluice or one of its commands",
    help_run,
};

static const struct cli_command version_command = {
    "version",
    "",
    "print the version of sluice",
    version_run,
};

/* The subcommands, in the order "sluice help" lists them. */
static const struct cli_command *const commands[] = {
    &sendmail_command,    &cli_import_command,  &cli_queue_command,
    &cli_qshape_command,  &cli_show_command,    &cli_delete_command,
    &cli_hold_command,    &cli_release_command, &cli_requeue_command,
    &cli_recover_command, &cli_config_command,  &cli_route_command,
    &cli_reload_command,  &cli_flush_command,   &cli_status_command,
    &cli_top_command,     &cli_suspend_command, &cli_resume_command,
    &cli_verify_command,  &help_command,        &version_command,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/*
 * sendmail -bp is mailq, as in Postfix: the listing is sluice queue's,
 * with the configuration sendmail would use (-C FILE).
 */
static int sendmail_run(const struct cli *cli, int argc, char **argv)
{
    struct cli listing = *cli;
    int bp = 0;

    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "-bp") == 0)
            bp = 1;
        else if (strcmp(argv[i], "-C") == 0 && i + 1 < argc)
            listing.config_path = argv[++i];
        else if (strncmp(argv[i], "-C", 2) == 0 && argv[i][2])
            listing.config_path = argv[i] + 2;
    }
    if (bp) {
        char *args[] = {"queue", NULL};

        return cli_queue_command.run(&listing, 1, args);
    }
    return sendmail_main(cli->config_path, argc, argv);
}

static const struct cli_command *command_find(const char *name)
{
    size_t i;

    for (i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0)
            return commands[i];
    return NULL;
}

static void usage_line(FILE *fp, const struct cli_command *cmd)
{
    fprintf(fp, "usage: sluice %s%s%s\n", cmd->name, *cmd->args ? " " : "",
            cmd->args);
}

static void usage_all(FILE *fp)
{
    size_t i;

    fprintf(fp, "usage: sluice [-c FILE] COMMAND [ARGS...]\n\ncommands:\n");
    for (i = 0; i < NCOMMANDS; i++)
        fprintf(fp, "  %-10s%s\n", commands[i]->name, commands[i]->summary);
    fprintf(fp, "\n\"sluice help COMMAND\" shows the arguments of COMMAND.\n");
}

static int help_run(const struct cli *cli, int argc, char **argv)
{
    const struct cli_command *cmd;

    (void)cli;
    if (argc == 1) {
        usage_all(stdout);
        return CLI_EXIT_OK;
    }
    if (argc > 2 || (cmd = command_find(argv[1])) == NULL) {
        if (argc == 2)
            fprintf(stderr, "sluice: help: unknown command \"%s\"\n", argv[1]);
        usage_line(stderr, &help_command);
        return CLI_EXIT_USAGE;
    }
    usage_line(stdout, cmd);
    printf("%s\n", cmd->summary);
    return CLI_EXIT_OK;
}

static int version_run(const struct cli *cli, int argc, char **argv)
{
    (void)cli;
    (void)argv;
    if (argc != 1) {
        usage_line(stderr, &version_command);
        return CLI_EXIT_USAGE;
    }
    printf("sluice %s\n", SLUICE_VERSION);
    return CLI_EXIT_OK;
}

/*
 * What a command printed must all have reached standard output: a
 * listing cut short by a full disk or a closed pipe is a failure, not a
 * short success.
 */
static int output_checked(const struct cli_command *cmd, int status)
{
    if (fflush(stdout) == 0 && !ferror(stdout))
        return status;
    fprintf(stderr, "sluice: %s: write error: %s\n", cmd->name,
            strerror(errno ? errno : EIO));
    return CLI_EXIT_FAIL;
}

int main(int argc, char **argv)
{
    struct cli cli = {NULL};
    const struct cli_command *cmd;
    const char *base = strrchr(argv[0], '/');
    int ch;

    base = base ? base + 1 : argv[0];
    /* Installed as the system's mailq, or sendmail, it is those. */
    if (strcmp(base, "mailq") == 0)
        return output_checked(&cli_queue_command,
                              cli_queue_command.run(&cli, argc, argv));
    if (strcmp(base, "sendmail") == 0)
        return output_checked(&sendmail_command,
                              sendmail_run(&cli, argc, argv));

    opterr = 0;
    while (optind < argc && strncmp(argv[optind], "--", 2) != 0 &&
           (ch = getopt(argc, argv, "+:c:")) != -1) {
        switch (ch) {
        case 'c':
            cli.config_path = optarg;
            break;
        default:
            cli_option_error(NULL, ch);
            usage_all(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind == argc) {
        usage_all(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[optind], "--help") == 0)
        return output_checked(&help_command, help_run(&cli, 1, argv + optind));
    if (strcmp(argv[optind], "--version") == 0)
        return output_checked(&version_command,
                              version_run(&cli, 1, argv + optind));
    if ((cmd = command_find(argv[optind])) == NULL) {
        fprintf(stderr, "sluice: unknown command \"%s\"\n", argv[optind]);
        usage_all(stderr);
        return CLI_EXIT_USAGE;
    }
    return output_checked(cmd, cmd->run(&cli, argc - optind, argv + optind));
}
