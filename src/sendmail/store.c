/*
 * NAME
 *	store 3 - where "sluice sendmail" leaves its message
 * SYNOPSIS
 *	#include "sendmail/sendmail_impl.h"
 *
 *	int	sendmail_store(const struct conf *conf, struct spool_msg *m)
 * DESCRIPTION
 *	sendmail_store() hands message m to the running daemon over its
 *	submission socket (ingress/local.c), which stores it in its next
 *	group commit, and returns 0 once the daemon says it is durable.
 *	When no daemon answers, it stores the message in the spool
 *	itself, or, for a caller who may not write the spool (an ordinary
 *	user: cron, a web application), leaves it in the maildrop
 *	directory, written and synced before the exit; the daemon imports
 *	the maildrop when it starts and when woken, and "sluice import"
 *	(run by the spool's owner) does the same by hand. With DKIM
 *	signing configured (dkim_signing_table) the message always goes
 *	to the maildrop, never straight into the spool, so that the daemon
 *	signs it when it imports it. A daemon that
 *	takes the request but does not answer within SENDMAIL_TIMEOUT
 *	seconds may still store it: the message is then stored the other
 *	way too, with a warning (a possible duplicate, never a loss).
 *	The queue directory is never created here: without a daemon and
 *	without a spool the answer is EX_TEMPFAIL. It returns 0, or an
 *	exit status (EX_DATAERR when the daemon refused the message,
 *	EX_TEMPFAIL) after one line with the reason on standard error.
 */

#include "sendmail/sendmail_impl.h"

#include "ingress/ingress.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SENDMAIL_TIMEOUT 100 /* seconds to wait for the daemon's answer */

/* Store in the spool, or leave in the maildrop; 0 or EX_TEMPFAIL. */
int sendmail_store(const struct conf *conf, struct spool_msg *m)
{
    struct spool_config cf;
    struct spool *sp;
    char why[512], dir[4096], name[64], id[64];

    daemon_spool_config(conf, &cf);
    switch (local_submit(cf.queue_directory, m, SENDMAIL_TIMEOUT * 1000, id,
                         sizeof(id), why, sizeof(why))) {
    case LOCAL_OK:
        return 0;
    case LOCAL_REJECT:
        fprintf(stderr, "sendmail: refused by sluiced: %s\n", why);
        return EX_DATAERR;
    case LOCAL_TEMPFAIL:
        fprintf(stderr, "sendmail: sluiced cannot store the message now: %s\n",
                why);
        return EX_TEMPFAIL;
    case LOCAL_NO_ANSWER:
        fprintf(stderr,
                "sendmail: warning: %s; storing the message without the "
                "daemon (it may be delivered twice)\n",
                why);
        break;
    default: /* no daemon: store it ourselves */
        break;
    }
    if (access(cf.queue_directory, F_OK) < 0) {
        /* Only sluiced (or "sluice import") makes a spool: a missing
         * one means a missing installation, not a place to start one. */
        fprintf(stderr,
                "sendmail: no sluiced is running and there is no spool at %s "
                "(%s): start sluiced, which creates it, or set "
                "queue_directory\n",
                cf.queue_directory, strerror(errno));
        return EX_TEMPFAIL;
    }
    /* Signed mail goes through the maildrop: the daemon signs it at
     * import, with keys this process need not read (decision 81). */
    if (!daemon_dkim_signs(conf) &&
        spool_open(&sp, &cf, SPOOL_CREATE | SPOOL_NO_COMMITTER, why,
                   sizeof(why)) == 0) {
        int rc = spool_store(sp, m, why, sizeof(why));

        spool_close(sp);
        /* The owner makes sure the maildrop exists for everybody else. */
        maildrop_create(cf.queue_directory, name, sizeof(name));
        if (rc < 0) {
            fprintf(stderr, "sendmail: %s\n", why);
            return EX_TEMPFAIL;
        }
        daemon_wake_send(cf.queue_directory);
        return 0;
    }
    if (!daemon_dkim_signs(conf) && errno != EACCES) {
        fprintf(stderr, "sendmail: %s\n", why);
        return EX_TEMPFAIL;
    }
    snprintf(dir, sizeof(dir), "%s/%s", cf.queue_directory, MAILDROP_DIR);
    if (maildrop_write(dir, m, name, sizeof(name), why, sizeof(why)) < 0) {
        fprintf(stderr, "sendmail: %s\n", why);
        return EX_TEMPFAIL;
    }
    daemon_wake_send(cf.queue_directory);
    return 0;
}
