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
#include "ops/ops.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define STATUS_TIMEOUT 30 /* seconds for the daemon's answer */

CLI_COMMAND(cli_status_command, "status", "[--json] [--all | --destinations N]",
            "show the running scheduler: transports, destinations, jobs",
            status_run);

static int status_run(const struct cli *cli, int argc, char **argv)
{
    struct util_buf request = UTIL_BUF_INIT, reply = UTIL_BUF_INIT;
    struct conf *conf;
    const char *queue;
    char why[1024];
    long max;
    int json, rc, down;

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
    if ((conf = cli_conf_open(cli->config_path)) == NULL) {
        util_buf_free(&request);
        return CLI_EXIT_FAIL;
    }
    queue = conf_str(conf, NULL, CONF_queue_directory);
    rc = ops_control_call(queue, request.data, STATUS_TIMEOUT, &reply, why,
                          sizeof(why));
    down = rc < 0 && (errno == ENOENT || errno == ECONNREFUSED);
    if (rc == 0) {
        fwrite(reply.data ? reply.data : "", 1, reply.len, stdout);
    } else if (down) {
        fprintf(stderr,
                "sluice: status: sluiced is not running on queue %s (%s)\n",
                queue, why);
    } else {
        fprintf(stderr, "sluice: status: %s\n", why);
    }
    conf_free(conf);
    util_buf_free(&request);
    util_buf_free(&reply);
    if (rc == 0)
        return CLI_EXIT_OK;
    return rc < 0 && (errno == ENOENT || errno == ECONNREFUSED) ? CLI_EXIT_DOWN
                                                                : CLI_EXIT_FAIL;
}
