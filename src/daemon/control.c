/*
 * NAME
 *	control 3 - the verbs sluiced answers on its control socket
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	struct ops_control *daemon_control_create(struct event_base *base,
 *			const char *queue_directory, struct qmgr *q,
 *			char *why, size_t whylen)
 *	int	daemon_status_args(const char *args, int *json,
 *			long *max_destinations, char *why, size_t whylen)
 * DESCRIPTION
 *	daemon_control_create() opens the control socket (ops/) and
 *	teaches it sluiced's verbs:
 *
 *	status [--json] [--all | --destinations N]
 *		the queue manager's state (qmgr_status()), as text or one
 *		JSON object; at most N destinations per transport, busiest
 *		first (default DAEMON_STATUS_DESTINATIONS; --all: every one).
 *
 *	daemon_status_args() reads status's arguments, for the daemon and
 *	for `sluice status`, which checks them before it asks: 0, or -1
 *	with the reason.
 */

#include "daemon/daemon.h"
#include "ops/ops.h"
#include "qmgr/qmgr.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int daemon_status_args(const char *args, int *json, long *max_destinations,
                       char *why, size_t whylen)
{
    char *copy = xstrdup(args), *word, *save = NULL, *end;
    int rc = 0;

    *json = 0;
    *max_destinations = DAEMON_STATUS_DESTINATIONS;
    for (word = strtok_r(copy, " ", &save); word && rc == 0;
         word = strtok_r(NULL, " ", &save)) {
        if (strcmp(word, "--json") == 0) {
            *json = 1;
        } else if (strcmp(word, "--all") == 0) {
            *max_destinations = 0;
        } else if (strcmp(word, "--destinations") == 0) {
            if ((word = strtok_r(NULL, " ", &save)) == NULL) {
                snprintf(why, whylen, "--destinations needs a number");
                rc = -1;
                break;
            }
            errno = 0;
            *max_destinations = strtol(word, &end, 10);
            if (errno || *end || end == word || *max_destinations < 1 ||
                *max_destinations > 1000000) {
                snprintf(why, whylen,
                         "--destinations: not a number from 1 to 1000000: "
                         "%.40s",
                         word);
                rc = -1;
            }
        } else {
            char quoted[64];

            util_quote(quoted, sizeof(quoted), word, strlen(word), 0);
            snprintf(why, whylen, "unknown argument %s", quoted);
            rc = -1;
        }
    }
    free(copy);
    return rc;
}

static int status_verb(void *ctx, const char *args, struct util_buf *reply)
{
    struct qmgr *q = ctx;
    long max;
    int json;
    char why[256];

    if (daemon_status_args(args, &json, &max, why, sizeof(why)) < 0) {
        util_buf_puts(reply, why);
        return -1;
    }
    qmgr_status(q, reply, json, max);
    return 0;
}

struct ops_control *daemon_control_create(struct event_base *base,
                                          const char *queue_directory,
                                          struct qmgr *q, char *why,
                                          size_t whylen)
{
    struct ops_control *c =
        ops_control_create(base, queue_directory, why, whylen);

    if (c != NULL)
        ops_control_command(c, "status", status_verb, q);
    return c;
}
