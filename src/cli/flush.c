/*
 * NAME
 *	flush 3 - "sluice flush [DOMAIN]": deferred mail due now
 * SYNOPSIS
 *	sluice [-c FILE] flush [DOMAIN]
 * DESCRIPTION
 *	Asks the running sluiced (over its submission socket) to make the
 *	deferred mail that has a recipient still waiting in DOMAIN (all
 *	deferred mail, without DOMAIN) due now, and to bring back to life
 *	the destinations that mail goes to if they were declared dead:
 *	ZMailer's and ETRN's release of mail held for a site that is back.
 *	It prints how many messages were made due.
 *
 *	When no daemon runs, the command does the first half itself, in
 *	the spool (it must be able to write it: the spool's owner or
 *	root); there is no dead destination without a daemon. The mail
 *	goes out when sluiced starts.
 *
 *	DOMAIN is checked before anything is asked (a domain, .domain for
 *	the domain and its subdomains, or an address literal, at most 255
 *	bytes: smtp_node_parse() in local_flush()), and means the same
 *	with or without a daemon. A flush
 *	whose changes could not all be written (the spool or the disk is
 *	full) is a failure with the reason, whichever side made it.
 *
 *	Exit status: 0 done; 1 a malformed domain, the daemon did not
 *	answer or could not write every change, or the spool could not be
 *	changed; 64 on a usage error.
 */

#include "cli/cli.h"

#include "daemon/daemon.h"
#include "ingress/ingress.h"
#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FLUSH_TIMEOUT 100 /* seconds to wait for the daemon's answer */

CLI_COMMAND(cli_flush_command, "flush", "[DOMAIN]",
            "make deferred mail (for DOMAIN) due now; revive its destinations",
            flush_run);

struct offline {
    struct spool *sp;
    const struct smtp_node *node;  /* NULL: every deferred message */
    char (*ids)[SPOOL_ID_MAX + 1]; /* the messages to make due */
    size_t n, cap;
};

/* Without a daemon: note each matching deferred message. */
static int offline_one(void *ctx, const struct spool_msg *env)
{
    struct offline *o = ctx;
    struct spool_msg *m;
    char why[512];
    int match = o->node == NULL;

    if (!match &&
        spool_get(o->sp, env->id, &m, SPOOL_GET_RCPTS, why, sizeof(why)) == 0) {
        for (uint32_t i = 0; i < m->nrcpt && !match; i++)
            match = (m->rcpt[i].status == SPOOL_RCPT_DEFERRED ||
                     m->rcpt[i].status == SPOOL_RCPT_PENDING) &&
                    smtp_node_match(o->node, m->rcpt[i].address);
        spool_msg_free(m);
    }
    if (!match)
        return 0;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->ids = xrealloc(o->ids, o->cap * sizeof(*o->ids));
    }
    snprintf(o->ids[o->n++], sizeof(o->ids[0]), "%s", env->id);
    return 0;
}

static int flush_offline(const struct cli *cli, const char *domain)
{
    struct smtp_node node;
    struct offline o = {NULL, NULL, NULL, 0, 0};
    struct spool_change ch = {0};
    struct conf *conf;
    char why[512];
    long done = 0, failed = 0;
    int rc;

    if (domain != NULL) { /* local_flush() has checked it */
        if (smtp_node_parse(&node, domain) < 0)
            return CLI_EXIT_FAIL;
        o.node = &node;
    }
    if ((conf = cli_spool_open(cli, "flush", SPOOL_NO_COMMITTER, &o.sp)) ==
        NULL)
        return CLI_EXIT_FAIL;
    rc = spool_list(o.sp, SPOOL_INDEX_DEFERRED, offline_one, &o, why,
                    sizeof(why));
    if (rc < 0)
        fprintf(stderr, "sluice: flush: %s\n", why);
    ch.has_next_attempt = 1;
    ch.next_attempt = spool_now();
    for (size_t i = 0; i < o.n; i++) {
        if (spool_update(o.sp, o.ids[i], &ch, why, sizeof(why)) < 0) {
            fprintf(stderr, "sluice: flush: %s: %s\n", o.ids[i], why);
            failed++;
        } else {
            done++;
        }
    }
    if (failed > 0 || rc < 0)
        fprintf(stderr,
                "sluice: flush: sluiced is not running, and %ld of %ld "
                "deferred messages could not be made due\n",
                failed, done + failed);
    else
        printf("sluiced is not running: %ld deferred messages%s%s made due; "
               "they go out when it starts\n",
               done, domain ? " for " : "", domain ? domain : "");
    free(o.ids);
    spool_close(o.sp);
    conf_free(conf);
    return rc < 0 || failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int flush_run(const struct cli *cli, int argc, char **argv)
{
    struct spool_config cf;
    struct conf *conf;
    const char *domain = argc == 2 ? argv[1] : NULL;
    char why[512];
    long messages;
    int rc;

    if (argc > 2) {
        fprintf(stderr, "usage: sluice flush [DOMAIN]\n");
        return CLI_EXIT_USAGE;
    }
    if ((conf = cli_conf_open(cli->config_path)) == NULL)
        return CLI_EXIT_FAIL;
    daemon_spool_config(conf, &cf);
    rc = local_flush(cf.queue_directory, domain, FLUSH_TIMEOUT * 1000,
                     &messages, why, sizeof(why));
    conf_free(conf);
    switch (rc) {
    case LOCAL_OK:
        printf("sluiced: %ld deferred messages%s%s due now\n", messages,
               domain ? " for " : "", domain ? domain : "");
        return CLI_EXIT_OK;
    case LOCAL_UNAVAILABLE:
        return flush_offline(cli, domain);
    default:
        fprintf(stderr, "sluice: flush: %s\n", why);
        return CLI_EXIT_FAIL;
    }
}
