/*
 * NAME
 *	queue 3 - "sluice queue" and "sluice show": looking at the spool
 * SYNOPSIS
 *	sluice queue [--json]
 *	sluice show [--body] ID
 * DESCRIPTION
 *	sluice queue lists every message in Postfix's mailq format (its
 *	long queue id layout, postqueue -p), so that what reads mailq's
 *	output reads ours: a heading; per message the queue id, marked "*"
 *	while active and "!" on hold, the size, the arrival time and the
 *	sender (MAILER-DAEMON for the null sender); then the recipients
 *	still to be delivered, each under the reason it was deferred for,
 *	printed once for a run of recipients with the same reason,
 *	right-aligned in parentheses; a last line counts the messages and
 *	their size in Kbytes. A message found corrupt shows the reason
 *	instead ("(corrupt: ...)"). An empty or not yet created spool says
 *	"Mail queue is empty". The next attempt time and the recipients
 *	already final are for sluice show.
 *
 *	With --json, postqueue -j's form: one JSON object per message and
 *	line, with its field names: queue_name (incoming, active, deferred,
 *	hold, or corrupt), queue_id, arrival_time (seconds since the epoch),
 *	message_size, forced_expire (false: sluice has no forced expiry),
 *	sender, and recipients, each with orig_address (the ORCPT address,
 *	or the address), address and, when deferred with a reason,
 *	delay_reason; a corrupt message has corrupt_reason.
 *
 *	Called mailq, or as sendmail -bp, the program is sluice queue
 *	(main.c).
 *
 *	sluice show prints a message's envelope and its header section;
 *	--body prints the whole message as stored.
 *
 *	Both read the spool in read transactions: safe while mail is being
 *	stored or delivered. Exit status 0, or 1 with a reason on stderr
 *	(no such message, no permission to read the spool, a corrupt
 *	record), 64 on a usage error.
 */

#include "cli/cli.h"

#include "daemon/daemon.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

CLI_COMMAND(cli_queue_command, "queue", "[--json]",
            "list the queued messages, like mailq", queue_run);

CLI_COMMAND(cli_show_command, "show", "[--body] ID",
            "show a message's envelope and headers (--body: all of it)",
            show_run);

static void time_text(char *buf, size_t len, int64_t usec)
{
    time_t t = (time_t)(usec / 1000000);
    struct tm tm;

    localtime_r(&t, &tm);
    strftime(buf, len, "%a %b %e %H:%M:%S %Y", &tm);
}

static void json_string(FILE *fp, const char *s)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_json_string(&b, s);
    fwrite(b.data, 1, b.len, fp);
    util_buf_free(&b);
}

struct queue_listing {
    struct spool *sp;
    int json;
    long messages;
    uint64_t bytes;
    int failed;
};

/* Postfix's long queue id layout (postqueue/showq_compat.c). */
#define QUEUE_HEADING_FORMAT "%-17s %8s %-19s %s\n"
#define QUEUE_SENDER_FORMAT  "%-17s %8" PRIu64 " %19.19s %s\n"

/* Still to be delivered: what mailq lists. */
static int rcpt_open(const struct spool_rcpt *r)
{
    return r->status == SPOOL_RCPT_PENDING || r->status == SPOOL_RCPT_DEFERRED;
}

/* The text of a recipient's last reason, without its status code. */
static const char *rcpt_why(const struct spool_rcpt *r)
{
    const char *sp;

    if (r->reason == NULL || r->status != SPOOL_RCPT_DEFERRED)
        return "";
    sp = strchr(r->reason, ' ');
    return sp ? sp + 1 : r->reason;
}

static void reason_line(const char *why)
{
    int pad = 76 - (int)strlen(why);

    printf("%*s(%s)\n", pad > 0 ? pad : 0, "", why);
}

static void queue_text(const struct spool_msg *m)
{
    char id[SPOOL_ID_MAX + 2], arrival[32];
    const char *last = "";
    time_t t = (time_t)(m->arrival / 1000000);
    struct tm tm;

    snprintf(id, sizeof(id), "%s%s", m->id,
             m->state == SPOOL_ACTIVE ? "*"
             : m->state == SPOOL_HOLD ? "!"
                                      : "");
    localtime_r(&t, &tm);
    strftime(arrival, sizeof(arrival), "%a %b %e %H:%M:%S", &tm);
    printf(QUEUE_SENDER_FORMAT, id, m->size, arrival,
           *m->sender ? m->sender : "MAILER-DAEMON");
    if (m->state == SPOOL_CORRUPT) {
        char why[600];

        snprintf(why, sizeof(why), "corrupt: %s",
                 m->corrupt_reason ? m->corrupt_reason : "unknown reason");
        reason_line(why);
    }
    for (uint32_t i = 0; i < m->nrcpt && m->rcpt; i++) {
        const struct spool_rcpt *r = &m->rcpt[i];

        if (!rcpt_open(r))
            continue;
        /* A reason once for a run of recipients that share it. */
        if (strcmp(rcpt_why(r), last) != 0) {
            last = rcpt_why(r);
            reason_line(*last ? last : "reason unavailable");
        }
        printf(QUEUE_HEADING_FORMAT, "", "", "", r->address);
    }
}

static void queue_json(const struct spool_msg *m)
{
    printf("{\"queue_name\": ");
    json_string(stdout, spool_state_name(m->state));
    printf(", \"queue_id\": ");
    json_string(stdout, m->id);
    printf(", \"arrival_time\": %" PRId64 ", \"message_size\": %" PRIu64
           ", \"forced_expire\": false, \"sender\": ",
           m->arrival / 1000000, m->size);
    json_string(stdout, m->sender);
    if (m->state == SPOOL_CORRUPT) {
        printf(", \"corrupt_reason\": ");
        json_string(stdout, m->corrupt_reason);
    }
    printf(", \"recipients\": [");
    for (uint32_t i = 0, n = 0; i < m->nrcpt && m->rcpt; i++) {
        const struct spool_rcpt *r = &m->rcpt[i];
        const char *orig = r->orcpt ? strchr(r->orcpt, ';') : NULL;

        if (!rcpt_open(r))
            continue;
        printf("%s{\"orig_address\": ", n++ ? ", " : "");
        json_string(stdout, orig ? orig + 1 : r->address);
        printf(", \"address\": ");
        json_string(stdout, r->address);
        if (*rcpt_why(r)) {
            printf(", \"delay_reason\": ");
            json_string(stdout, rcpt_why(r));
        }
        printf("}");
    }
    printf("]}\n");
}

static int queue_one(void *ctx, const struct spool_msg *listed)
{
    struct queue_listing *ql = ctx;
    struct spool_msg *m = NULL;
    const struct spool_msg *show = listed;
    char why[512];

    if (listed->state != SPOOL_CORRUPT) {
        if (spool_get(ql->sp, listed->id, &m, SPOOL_GET_RCPTS, why,
                      sizeof(why)) < 0) {
            if (errno == ENOENT)
                return 0; /* delivered or deleted meanwhile */
            fprintf(stderr, "sluice: queue: %s\n", why);
            ql->failed = 1;
            return 0;
        }
        show = m;
    }
    /* As mailq: a heading before the first, an empty line between. */
    if (!ql->json && ql->messages == 0)
        printf(QUEUE_HEADING_FORMAT, "----Queue ID-----", "--Size--",
               "---Arrival Time----", "--Sender/Recipient------");
    else if (!ql->json)
        printf("\n");
    ql->messages++;
    ql->bytes += show->size;
    if (ql->json)
        queue_json(show);
    else
        queue_text(show);
    spool_msg_free(m);
    return 0;
}

static int queue_run(const struct cli *cli, int argc, char **argv)
{
    struct queue_listing ql = {0};
    struct spool *sp;
    struct conf *conf;
    char why[512];

    if (argc == 2 && strcmp(argv[1], "--json") == 0) {
        ql.json = 1;
    } else if (argc != 1) {
        fprintf(stderr, "usage: sluice queue [--json]\n");
        return CLI_EXIT_USAGE;
    }
    conf = cli_conf_open(cli->config_path);
    if (conf == NULL)
        return CLI_EXIT_FAIL;
    {
        struct spool_config cf;

        daemon_spool_config(conf, &cf);
        if (spool_open(&sp, &cf, SPOOL_READONLY, why, sizeof(why)) < 0) {
            conf_free(conf);
            if (errno == ENOENT) {
                if (!ql.json)
                    printf("Mail queue is empty\n");
                return CLI_EXIT_OK;
            }
            fprintf(stderr, "sluice: queue: %s\n", why);
            return CLI_EXIT_FAIL;
        }
    }
    conf_free(conf);
    ql.sp = sp;
    if (spool_list(sp, SPOOL_INDEX_ALL, queue_one, &ql, why, sizeof(why)) < 0) {
        fprintf(stderr, "sluice: queue: %s\n", why);
        ql.failed = 1;
    }
    spool_close(sp);
    if (!ql.json) {
        if (ql.messages == 0)
            printf("Mail queue is empty\n");
        else
            printf("\n-- %" PRIu64 " Kbytes in %ld Request%s.\n",
                   ql.bytes / 1024, ql.messages, ql.messages == 1 ? "" : "s");
    }
    return ql.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* Print the envelope of a message, as "name: value" lines. */
static void show_envelope(const struct spool_msg *m)
{
    static const char *const ret[] = {"default", "full", "hdrs"};
    char when[64];

    printf("queue_id: %s\n", m->id);
    printf("state: %s\n", spool_state_name(m->state));
    if (m->state == SPOOL_HOLD)
        printf("held_from: %s\n", spool_state_name(m->held_from));
    if (m->state == SPOOL_CORRUPT)
        printf("corrupt_reason: %s\n", m->corrupt_reason);
    printf("sender: <%s>\n", m->sender);
    if (m->envid)
        printf("envid: %s\n", m->envid);
    printf("ret: %s\n", ret[m->ret]);
    time_text(when, sizeof(when), m->arrival);
    printf("arrival: %s\n", when);
    time_text(when, sizeof(when), m->created);
    printf("created: %s\n", when);
    printf("size: %" PRIu64 "\n", m->size);
    printf("attempts: %u\n", m->attempts);
    if (m->state == SPOOL_DEFERRED) {
        time_text(when, sizeof(when), m->next_attempt);
        printf("next_attempt: %s\n", when);
    }
    for (uint32_t i = 0; i < m->nrcpt; i++) {
        const struct spool_rcpt *r = &m->rcpt[i];

        printf("recipient: <%s> %s", r->address,
               spool_rcpt_status_name(r->status));
        if (r->orig)
            printf(" orig=<%s>", r->orig);
        if (r->orcpt)
            printf(" orcpt=%s", r->orcpt);
        if (r->notify) {
            static const char *const names[] = {"never", "success", "failure",
                                                "delay"};
            const char *sep = " notify=";

            for (int b = 0; b < 4; b++)
                if (r->notify & (1u << b)) {
                    printf("%s%s", sep, names[b]);
                    sep = ",";
                }
        }
        if (r->reason)
            printf(" (%s)", r->reason);
        printf("\n");
    }
}

/* The header section: up to the first empty line. */
static size_t header_length(const char *body, size_t size)
{
    for (size_t i = 0; i + 1 < size; i++) {
        if (body[i] == '\n' &&
            (body[i + 1] == '\n' ||
             (body[i + 1] == '\r' && i + 2 < size && body[i + 2] == '\n')))
            return i + 1;
        if (i == 0 && (body[0] == '\n' || body[0] == '\r'))
            return 0;
    }
    return size;
}

static int show_run(const struct cli *cli, int argc, char **argv)
{
    const char *id = NULL;
    int body = 0, ret = CLI_EXIT_OK;
    struct spool *sp;
    struct spool_msg *m;
    struct conf *conf;
    char why[512];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--body") == 0 && !body)
            body = 1;
        else if (id == NULL && argv[i][0] != '-')
            id = argv[i];
        else
            id = NULL, argc = 0;
    }
    if (id == NULL) {
        fprintf(stderr, "usage: sluice show [--body] ID\n");
        return CLI_EXIT_USAGE;
    }
    if ((conf = cli_spool_open(cli, "show", SPOOL_READONLY, &sp)) == NULL)
        return CLI_EXIT_FAIL;
    conf_free(conf);
    if (spool_get(sp, id, &m, SPOOL_GET_RCPTS | SPOOL_GET_BODY, why,
                  sizeof(why)) < 0) {
        fprintf(stderr, "sluice: show: %s\n", why);
        ret = CLI_EXIT_FAIL;
    } else {
        show_envelope(m);
        printf("\n");
        fwrite(m->body, 1, body ? m->size : header_length(m->body, m->size),
               stdout);
        spool_msg_free(m);
    }
    spool_close(sp);
    return ret;
}
