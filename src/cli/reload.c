/*
 * NAME
 *	reload 3 - "sluice reload": make the running daemon reload
 * SYNOPSIS
 *	sluice [-c FILE] reload
 * DESCRIPTION
 *	Checks the configuration with the daemon's own checks
 *	(daemon_config_load(): parameters, routing table, host names, SMTP
 *	server lists, name servers), and sends SIGHUP to the sluiced running on
 *	the configured queue (the one holding QUEUE_DIRECTORY/pid). A
 *	configuration that does not load is reported and nothing is sent:
 *	the daemon would refuse it too and keep its running one. The
 *	daemon logs the outcome ("reloaded: FILE" or "reload failed, ...").
 *
 *	Exit status: 0 the daemon was signalled; 1 the configuration is
 *	bad, no daemon runs on the queue, or it could not be signalled;
 *	64 on a usage error.
 */

#include "cli/cli.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

CLI_COMMAND(cli_reload_command, "reload", "",
            "check the configuration and make the running sluiced reload it",
            reload_run);

static void reload_warn(void *ctx, const char *text)
{
    (void)ctx;
    fprintf(stderr, "sluice: warning: %s\n", text);
}

static int reload_run(const struct cli *cli, int argc, char **argv)
{
    struct daemon_config cf;
    const char *queue;
    char why[1024];
    long pid;
    int rc = CLI_EXIT_FAIL;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: sluice reload\n");
        return CLI_EXIT_USAGE;
    }
    if (daemon_config_load(cli->config_path, &cf, reload_warn, NULL, why,
                           sizeof(why)) < 0) {
        fprintf(stderr, "sluice: reload: %s; nothing sent\n", why);
        return CLI_EXIT_FAIL;
    }
    queue = conf_str(cf.conf, NULL, CONF_queue_directory);
    if ((pid = daemon_pid_running(queue)) == 0) {
        fprintf(stderr, "sluice: reload: no sluiced is running on queue %s\n",
                queue);
        goto done;
    }
    if (kill((pid_t)pid, SIGHUP) < 0) {
        fprintf(stderr, "sluice: reload: cannot signal sluiced (pid %ld): %s\n",
                pid, strerror(errno));
        goto done;
    }
    printf("sluiced (pid %ld) told to reload; see its log for the outcome\n",
           pid);
    rc = CLI_EXIT_OK;
done:
    daemon_config_free(&cf);
    return rc;
}
