/*
 * NAME
 *	verify 3 - "sluice verify": is an address deliverable?
 * SYNOPSIS
 *	sluice [-c FILE] verify [--cached] [-w SECONDS] ADDRESS...
 * DESCRIPTION
 *	verify asks the running sluiced to verify each ADDRESS as the SMTP
 *	server's reject_unverified_recipient does: the answer of its cache
 *	(address_verify_*_expire_time), or a probe routed as mail to the
 *	address would be (MAIL, RCPT, QUIT; never DATA) through the
 *	verification pseudo-message and its limits. The probes of all the
 *	addresses run at once; verify waits for them at most SECONDS
 *	(default: address_verify_poll_count times address_verify_poll_delay;
 *	0: not at all, the probes go on for the cache). --cached sends no
 *	probe: the cache's answer, or undetermined.
 *
 *	It prints one line per address, in order:
 *
 *	ADDRESS: deliverable (dsn=2.1.5): 250 2.1.5 Ok
 *	ADDRESS: undeliverable (dsn=5.1.1): host mx[10.0.0.1] said: 550 ...
 *	ADDRESS: undetermined (dsn=4.1.1): Address verification in progress
 *
 *	with ", cached" after the dsn when the answer came from the cache.
 *
 *	Exit status: 0 every address deliverable; 2 one or more
 *	undeliverable; 3 none undeliverable but one or more undetermined;
 *	1 the daemon refused the request or did not answer; 64 on a usage
 *	error; 69 when no sluiced runs on the queue.
 */

#include "cli/cli.h"
#include "daemon/daemon.h"
#include "ops/ops.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CLI_COMMAND(cli_verify_command, "verify", "[--cached] [-w SECONDS] ADDRESS...",
            "probe addresses as reject_unverified_recipient does, and say "
            "if they are deliverable",
            verify_run);

#define VERIFY_EXIT_UNDELIVERABLE 2
#define VERIFY_EXIT_UNDETERMINED  3

/* "ADDR STATUS DSN SOURCE TEXT" lines, printed; the worst status seen. */
static int verify_print(const char *reply, int worst)
{
    char *copy = xstrdup(reply), *line, *save = NULL;

    for (line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char addr[512], status[32], dsn[16], source[16];
        int off = 0;

        if (sscanf(line, "%511s %31s %15s %15s %n", addr, status, dsn, source,
                   &off) < 4)
            continue;
        printf("%s: %s (dsn=%s%s): %s\n", addr, status, dsn,
               strcmp(source, "cached") == 0 ? ", cached" : "", line + off);
        if (strcmp(status, "undeliverable") == 0)
            worst = VERIFY_EXIT_UNDELIVERABLE;
        else if (strcmp(status, "deliverable") != 0 &&
                 worst != VERIFY_EXIT_UNDELIVERABLE)
            worst = VERIFY_EXIT_UNDETERMINED;
    }
    free(copy);
    return worst;
}

/* One request: as many addresses as fit, from argv[*i] on. */
static int verify_request(const struct cli *cli, const char *queue,
                          const char *head, char **argv, int argc, int *i,
                          long wait_ms, int *worst)
{
    struct util_buf req = UTIL_BUF_INIT, reply = UTIL_BUF_INIT;
    int n = 0, rc, down;
    char why[1024];

    (void)cli;
    util_buf_puts(&req, head);
    while (*i < argc && n < DAEMON_VERIFY_MAX &&
           req.len + 1 + strlen(argv[*i]) <= OPS_REQUEST_MAX) {
        util_buf_printf(&req, " %s", argv[(*i)++]);
        n++;
    }
    rc = ops_control_call(queue, req.data, (int)(wait_ms / 1000) + 30, &reply,
                          why, sizeof(why));
    down = rc < 0 && (errno == ENOENT || errno == ECONNREFUSED);
    if (rc == 0)
        *worst = verify_print(reply.data ? reply.data : "", *worst);
    else if (down)
        fprintf(stderr,
                "sluice: verify: sluiced is not running on queue %s (%s)\n",
                queue, why);
    else
        fprintf(stderr, "sluice: verify: %s\n", why);
    util_buf_free(&req);
    util_buf_free(&reply);
    return rc == 0 ? CLI_EXIT_OK : down ? CLI_EXIT_DOWN : CLI_EXIT_FAIL;
}

/* Options; the index of the first address, or -1 after a usage line. */
static int verify_options(int argc, char **argv, int *cached, long *wait_ms)
{
    int i = 1;
    char *end;

    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--cached") == 0) {
            *cached = 1;
        } else if (strcmp(argv[i], "-w") == 0 && i + 1 < argc) {
            double s = strtod(argv[++i], &end);

            if (*end || end == argv[i] || s < 0 || s > 3600)
                return -1;
            *wait_ms = (long)(s * 1000);
        } else {
            return -1;
        }
    }
    return i < argc ? i : -1;
}

static int verify_run(const struct cli *cli, int argc, char **argv)
{
    struct conf *conf;
    int cached = 0, worst = CLI_EXIT_OK, rc = CLI_EXIT_OK, i, dummy_cached;
    long wait_ms = -1, dummy_wait;
    char head[64], why[256], **addrs;
    size_t n;

    if ((i = verify_options(argc, argv, &cached, &wait_ms)) < 0) {
        fprintf(stderr, "usage: sluice verify %s\n", cli_verify_command.args);
        return CLI_EXIT_USAGE;
    }
    for (int k = i; k < argc; k++) /* the daemon's own check, first */
        if (daemon_verify_args(argv[k], &dummy_cached, &dummy_wait, &addrs, &n,
                               why, sizeof(why)) < 0) {
            fprintf(stderr, "sluice: verify: %s\n", why);
            return CLI_EXIT_USAGE;
        } else {
            free(addrs[0]);
            free(addrs);
        }
    if ((conf = cli_conf_open(cli->config_path)) == NULL)
        return CLI_EXIT_FAIL;
    if (wait_ms < 0)
        wait_ms = conf_int(conf, NULL, CONF_address_verify_poll_count) *
                  conf_time_ms(conf, NULL, CONF_address_verify_poll_delay);
    snprintf(head, sizeof(head), "verify%s --wait %ld",
             cached ? " --cached" : "", wait_ms);
    while (i < argc && rc == CLI_EXIT_OK)
        rc = verify_request(cli, conf_str(conf, NULL, CONF_queue_directory),
                            head, argv, argc, &i, wait_ms, &worst);
    conf_free(conf);
    return rc != CLI_EXIT_OK ? rc : worst;
}
