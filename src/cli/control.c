/*
 * NAME
 *	control 3 - a request to the running sluiced, for a subcommand
 * SYNOPSIS
 *	#include "cli/cli.h"
 *
 *	int	cli_control(const struct cli *cli, const char *cmd,
 *			const char *request)
 * DESCRIPTION
 *	cli_control() loads the configuration, sends request to the
 *	sluiced running on its queue over the control socket
 *	(ops_control_call()), prints the daemon's reply on standard output
 *	and returns the subcommand's exit status: CLI_EXIT_OK; CLI_EXIT_FAIL
 *	after "sluice: CMD: REASON" when the daemon refused the request
 *	(its reason) or did not answer within CLI_CONTROL_TIMEOUT seconds;
 *	CLI_EXIT_DOWN after "sluice: CMD: sluiced is not running on queue
 *	DIR (REASON)" when nothing listens on the socket.
 */

#include "cli/cli.h"
#include "ops/ops.h"

#include <errno.h>
#include <stdio.h>

#define CLI_CONTROL_TIMEOUT 30 /* seconds for the daemon's answer */

int cli_control(const struct cli *cli, const char *cmd, const char *request)
{
    struct util_buf reply = UTIL_BUF_INIT;
    struct conf *conf;
    const char *queue;
    char why[1024];
    int rc, down;

    if ((conf = cli_conf_open(cli->config_path)) == NULL)
        return CLI_EXIT_FAIL;
    queue = conf_str(conf, NULL, CONF_queue_directory);
    rc = ops_control_call(queue, request, CLI_CONTROL_TIMEOUT, &reply, why,
                          sizeof(why));
    down = rc < 0 && (errno == ENOENT || errno == ECONNREFUSED);
    if (rc == 0)
        fwrite(reply.data ? reply.data : "", 1, reply.len, stdout);
    else if (down)
        fprintf(stderr, "sluice: %s: sluiced is not running on queue %s (%s)\n",
                cmd, queue, why);
    else
        fprintf(stderr, "sluice: %s: %s\n", cmd, why);
    conf_free(conf);
    util_buf_free(&reply);
    if (rc == 0)
        return CLI_EXIT_OK;
    return down ? CLI_EXIT_DOWN : CLI_EXIT_FAIL;
}
