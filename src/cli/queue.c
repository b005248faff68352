/*
 * NAME
 *	queue 3 - "sluice queue" and "sluice show": looking at the spool
 * SYNOPSIS
 *	sluice queue [--json]
 *	sluice show [--body] ID
 * DESCRIPTION
 *	sluice queue lists every message, like mailq: queue id, size,
 *	arrival time, state and sender, then each recipient with its
 *	status and last reason, and for deferred mail the next attempt
 *	time; a last line counts the messages and their size. An empty or
 *	not yet created spool says "Mail queue is empty". With --json, one
 *	JSON object per message and line (times as seconds since the epoch,
 *	and as text).
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
    fputc('"', fp);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20 || c == 0x7f)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

struct queue_listing {
    struct spool *sp;
    int json;
    long messages;
    uint64_t bytes;
    int failed;
};

static void queue_text(const struct spool_msg *m)
{
    char arrival[64], next[64];

    time_text(arrival, sizeof(arrival), m->arrival);
    printf("%-16s %9" PRIu64 " %-24s %-8s %s\n", m->id, m->size, arrival,
           spool_state_name(m->state), *m->sender ? m->sender : "<>");
    if (m->state == SPOOL_CORRUPT)
        printf("%52s(corrupt: %s)\n", "",
               m->corrupt_reason ? m->corrupt_reason : "unknown reason");
    for (uint32_t i = 0; i < m->nrcpt && m->rcpt; i++) {
        const struct spool_rcpt *r = &m->rcpt[i];

        printf("%52s%s (%s", "", r->address, spool_rcpt_status_name(r->status));
        if (r->reason)
            printf(": %s", r->reason);
        printf(")\n");
    }
    if (m->state == SPOOL_DEFERRED) {
        time_text(next, sizeof(next), m->next_attempt);
        printf("%52snext attempt %s, %u attempt%s so far\n", "", next,
               m->attempts, m->attempts == 1 ? "" : "s");
    }
    printf("\n");
}

static void queue_json(const struct spool_msg *m)
{
    char arrival[64], next[64];

    time_text(arrival, sizeof(arrival), m->arrival);
    time_text(next, sizeof(next), m->next_attempt);
    printf("{\"id\":");
    json_string(stdout, m->id);
    printf(",\"size\":%" PRIu64 ",\"arrival\":%.6f,\"arrival_text\":", m->size,
           m->arrival / 1e6);
    json_string(stdout, arrival);
    printf(",\"state\":");
    json_string(stdout, spool_state_name(m->state));
    printf(",\"sender\":");
    json_string(stdout, m->sender);
    printf(",\"attempts\":%u", m->attempts);
    if (m->state == SPOOL_DEFERRED) {
        printf(",\"next_attempt\":%.6f,\"next_attempt_text\":",
               m->next_attempt / 1e6);
        json_string(stdout, next);
    }
    if (m->state == SPOOL_CORRUPT) {
        printf(",\"corrupt_reason\":");
        json_string(stdout, m->corrupt_reason);
    }
    printf(",\"recipients\":[");
    for (uint32_t i = 0; i < m->nrcpt && m->rcpt; i++) {
        const struct spool_rcpt *r = &m->rcpt[i];

        printf("%s{\"address\":", i ? "," : "");
        json_string(stdout, r->address);
        printf(",\"status\":");
        json_string(stdout, spool_rcpt_status_name(r->status));
        if (r->code)
            printf(",\"code\":%d", r->code);
        if (r->reason) {
            printf(",\"reason\":");
            json_string(stdout, r->reason);
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
    if (ql->messages++ == 0 && !ql->json) /* as mailq: no header when empty */
        printf("%-16s %9s %-24s %-8s %s\n", "-Queue ID-", "--Size--",
               "-----Arrival Time-----", "-State--",
               "-Sender/Recipient-------");
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
            printf("-- %" PRIu64 " Kbytes in %ld Request%s.\n",
                   (ql.bytes + 1023) / 1024, ql.messages,
                   ql.messages == 1 ? "" : "s");
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
