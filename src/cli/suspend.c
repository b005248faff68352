/*
 * NAME
 *	suspend 3 - "sluice suspend" and "sluice resume": a destination paused
 * SYNOPSIS
 *	sluice [-c FILE] suspend DESTINATION [DURATION]
 *	sluice [-c FILE] resume DESTINATION
 * DESCRIPTION
 *	suspend asks the running sluiced to stop delivering to DESTINATION
 *	(a domain, or a next hop as `sluice status` shows it, in every
 *	transport that has it; a domain with no mail yet is routed as
 *	postmaster@DESTINATION) for DURATION (a time as in the
 *	configuration: 90s, 30m, 2h; seconds without a unit) or until
 *	resumed: what waits for it is deferred with "suspended by the
 *	operator", new mail for it is deferred at once, deliveries under
 *	way finish. Neither a successful delivery nor a flush ends it;
 *	the end of DURATION or resume does. resume ends it and makes the
 *	destination's deferred mail due now. Each prints one line per
 *	destination queue it changed ("suspended smtp:example.com for
 *	3600s", "resumed smtp:example.com"). Suspensions live in the
 *	daemon's memory: a restart ends them.
 *
 *	Exit status: 0 done; 1 the daemon refused (an unknown destination,
 *	a bad duration, nothing suspended to resume) or did not answer; 64
 *	on a usage error; 69 when no sluiced runs on the queue.
 */

#include "cli/cli.h"

#include <stdio.h>

CLI_COMMAND(cli_suspend_command, "suspend", "DESTINATION [DURATION]",
            "stop deliveries to a destination, for a while or until resumed",
            suspend_run);
CLI_COMMAND(cli_resume_command, "resume", "DESTINATION",
            "end a destination's suspension; its deferred mail goes now",
            resume_run);

static int suspend_run(const struct cli *cli, int argc, char **argv)
{
    char request[600];

    if (argc < 2 || argc > 3 || argv[1][0] == '-') {
        fprintf(stderr, "usage: sluice suspend %s\n", cli_suspend_command.args);
        return CLI_EXIT_USAGE;
    }
    if ((size_t)snprintf(request, sizeof(request), "suspend %s%s%s", argv[1],
                         argc == 3 ? " " : "",
                         argc == 3 ? argv[2] : "") >= sizeof(request)) {
        fprintf(stderr, "sluice: suspend: destination too long\n");
        return CLI_EXIT_USAGE;
    }
    return cli_control(cli, "suspend", request);
}

static int resume_run(const struct cli *cli, int argc, char **argv)
{
    char request[600];

    if (argc != 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: sluice resume %s\n", cli_resume_command.args);
        return CLI_EXIT_USAGE;
    }
    if ((size_t)snprintf(request, sizeof(request), "resume %s", argv[1]) >=
        sizeof(request)) {
        fprintf(stderr, "sluice: resume: destination too long\n");
        return CLI_EXIT_USAGE;
    }
    return cli_control(cli, "resume", request);
}
