/*
 * NAME
 *	spool_open 3 - the spool, as the sluice command's subcommands open it
 * SYNOPSIS
 *	#include "cli/cli.h"
 *
 *	struct conf *cli_spool_open(const struct cli *cli, const char *cmd,
 *			int flags, struct spool **sp)
 * DESCRIPTION
 *	cli_spool_open() loads the configuration (-c, $SLUICE_CONFIG, the
 *	default file) and opens the spool it names with the spool_open()
 *	flags given. On failure it prints "sluice: CMD: REASON" to stderr
 *	and returns NULL, with errno as spool_open() left it (ENOENT: there
 *	is no spool yet; EACCES: the caller may not use it). On success the
 *	caller closes the spool and frees the configuration.
 *
 *	The spool's configuration comes from daemon_spool_config(), as the
 *	daemon's does.
 */

#include "cli/cli.h"

#include "daemon/daemon.h"

#include <errno.h>
#include <stdio.h>

struct conf *cli_spool_open(const struct cli *cli, const char *cmd, int flags,
                            struct spool **sp)
{
    struct conf *conf = cli_conf_open(cli->config_path);
    struct spool_config cf;
    char why[512];
    int err;

    *sp = NULL;
    if (conf == NULL) {
        errno = EINVAL;
        return NULL;
    }
    daemon_spool_config(conf, &cf);
    if (spool_open(sp, &cf, flags, why, sizeof(why)) < 0) {
        err = errno;
        fprintf(stderr, "sluice: %s: %s\n", cmd, why);
        conf_free(conf);
        errno = err;
        return NULL;
    }
    return conf;
}
