/*
 * NAME
 *	import 3 - "sluice import": the maildrop into the spool, by hand
 * SYNOPSIS
 *	sluice import
 * DESCRIPTION
 *	Run by the spool's owner, "sluice import" makes the maildrop
 *	directories when they are missing and imports every complete file
 *	of the maildrop into the spool (maildrop_import(), ingress/
 *	pickup.c), as the daemon does when it starts and when woken; it
 *	wakes a running daemon when it stored anything. It prints
 *	"imported N, malformed N (moved to maildrop-bad), failed N, stale
 *	temporary files N" and exits 0, or 1 when something could not be
 *	imported. With dkim_signing_table set it signs what it imports as
 *	the daemon does (ingress_sign()); tables or keys that do not load
 *	stop it before anything is imported, and a message that cannot be
 *	signed stays in the maildrop.
 */

#include "cli/cli.h"

#include "daemon/daemon.h"
#include "dkim/dkim.h"
#include "ingress/ingress.h"

#include <stdio.h>
#include <time.h>

CLI_COMMAND(cli_import_command, "import", "",
            "move messages from the maildrop into the spool", import_run);

struct import_ctx {
    struct spool *sp;
    struct dkim_keys *dkim; /* NULL: nothing is signed */
};

static int import_store(void *ctx, struct spool_msg *m, uid_t owner, char *why,
                        size_t whylen)
{
    struct import_ctx *ic = ctx;
    char note[512];

    (void)owner;
    /* signed as the daemon's import signs (decision 81); a failure
     * leaves the file for the next import */
    if (ic->dkim != NULL && ingress_sign(ic->dkim, m, time(NULL), NULL, NULL,
                                         note, sizeof(note)) < 0) {
        snprintf(why, whylen, "DKIM signing failed: %s", note);
        return -1;
    }
    return spool_store(ic->sp, m, why, whylen);
}

static int import_run(const struct cli *cli, int argc, char **argv)
{
    struct maildrop_stats st = {0};
    struct import_ctx ic;
    struct spool_config cf;
    struct conf *conf;
    char why[512];
    int rc;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: sluice import\n");
        return CLI_EXIT_USAGE;
    }
    if ((conf = cli_spool_open(cli, "import", SPOOL_CREATE | SPOOL_NO_COMMITTER,
                               &ic.sp)) == NULL)
        return CLI_EXIT_FAIL;
    daemon_spool_config(conf, &cf);
    if (daemon_dkim_load(conf, &ic.dkim, why, sizeof(why)) < 0) {
        fprintf(stderr, "sluice: import: %s\n", why);
        rc = -1;
    } else if (maildrop_create(cf.queue_directory, why, sizeof(why)) < 0) {
        fprintf(stderr, "sluice: import: %s\n", why);
        rc = -1;
    } else {
        rc = maildrop_import(cf.queue_directory, import_store, &ic, &st, why,
                             sizeof(why));
        if (rc < 0)
            fprintf(stderr, "sluice: import: %s\n", why);
    }
    if (st.imported > 0)
        daemon_wake_send(cf.queue_directory);
    printf("imported %lu, malformed %lu (moved to %s), failed %lu, stale "
           "temporary files %lu\n",
           st.imported, st.malformed, MAILDROP_BAD_DIR, st.failed, st.stale);
    spool_close(ic.sp);
    dkim_keys_free(ic.dkim);
    conf_free(conf);
    return rc < 0 || st.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
