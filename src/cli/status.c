/*
 * NAME
 *	status 3 - "sluice status": the running scheduler, as it is now
 * SYNOPSIS
 *	sluice [-c FILE] status [--json] [--all | --destinations N]
 * DESCRIPTION
 *	Asks the sluiced running on the configured queue, over its control
 *	socket (QUEUE_DIRECTORY/private/control: its owner and group
 *	only), for the scheduler's state and prints it: messages and
 *	recipients in core against their limits; per transport,
 *	deliveries in flight against the process limit, jobs, the
 *	recipient pool, a suspension; per destination, busiest first, the
 *	concurrency window (and its limit), deliveries in flight, entries
 *	waiting, failures, and dead destinations with how long until they
 *	are tried again and why; the head of each job list with its
 *	delivery slots. At most 50 destinations per transport unless
 *	--destinations N or --all says otherwise. With --json, one JSON
 *	object (its fields are listed in qmgr/status.c and the manual).
 *
 *	Exit status: 0 printed; 1 the daemon refused the request or did
 *	not answer in time; 64 on a usage error; 69 (EX_UNAVAILABLE, as
 *	postqueue when the mail system is down) when no sluiced runs on
 *	the queue.
 */

#include "cli/cli.h"
#include "daemon/daemon.h"

#include <stdio.h>

CLI_COMMAND(cli_status_command, "status", "[--json] [--all | --destinations N]",
            "show the running scheduler: transports, destinations, jobs",
            status_run);

static int status_run(const struct cli *cli, int argc, char **argv)
{
    struct util_buf request = UTIL_BUF_INIT;
    char why[256];
    long max;
    int json, rc;

    util_buf_puts(&request, "status");
    for (int i = 1; i < argc; i++)
        util_buf_printf(&request, " %s", argv[i]);
    if (daemon_status_args(request.data + 6, &json, &max, why, sizeof(why)) <
        0) {
        fprintf(stderr, "sluice: status: %s\n", why);
        fprintf(stderr, "usage: sluice status %s\n", cli_status_command.args);
        util_buf_free(&request);
        return CLI_EXIT_USAGE;
    }
    rc = cli_control(cli, "status", request.data);
    util_buf_free(&request);
    return rc;
}
