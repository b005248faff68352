/*
 * NAME
 *	control 3 - the verbs sluiced answers on its control socket
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	struct ops_control *daemon_control_create(struct event_base *base,
 *			const char *queue_directory, struct qmgr *q,
 *			daemon_control_log_fn *log, void *log_ctx,
 *			char *why, size_t whylen)
 *	int	daemon_status_args(const char *args, int *json,
 *			long *max_destinations, char *why, size_t whylen)
 *	int	daemon_http_create(struct event_base *base,
 *			const struct conf *conf, struct qmgr *q,
 *			const struct daemon_inject_ops *inject,
 *			struct ops_http **http, char *why, size_t whylen)
 * DESCRIPTION
 *	daemon_control_create() opens the control socket (ops/) and
 *	teaches it sluiced's verbs (log gets the lines they log):
 *
 *	status [--json] [--all | --destinations N]
 *		the queue manager's state (qmgr_status()), as text or one
 *		JSON object; at most N destinations per transport, busiest
 *		first (default DAEMON_STATUS_DESTINATIONS; --all: every one).
 *
 *	suspend DESTINATION [DURATION]
 *		suspend a destination (qmgr_suspend()) for DURATION (a
 *		time as in the configuration, seconds by default; none:
 *		until resumed), logged as "suspend DESTINATION [for Ns]:
 *		by the operator" before core/'s own line.
 *
 *	resume DESTINATION
 *		end its suspension and make its deferred mail due
 *		(qmgr_resume()), logged as "resume DESTINATION: by the
 *		operator".
 *
 *	verify [--cached] [--wait MS] ADDRESS...
 *		address verification (verify.c).
 *
 *	A DESTINATION is at most 255 bytes of printable ASCII without
 *	spaces: a domain or a next hop as sluice status shows it.
 *
 *	daemon_http_create() starts the HTTP listener of http_listen (ops/)
 *	with its two paths, or sets *http to NULL when the list is empty:
 *	GET /metrics, the queue manager's numbers in Prometheus' text
 *	format (qmgr_metrics()), and GET /api/status, the JSON of sluice
 *	status --json (DAEMON_STATUS_DESTINATIONS destinations per
 *	transport), and POST /api/inject when http_token_file is set
 *	(inject.c). A request body may hold twice message_size_limit and
 *	64 KB more (JSON escapes). It returns 0, or -1 with the reason.
 *
 *	daemon_status_args() reads status's arguments, for the daemon and
 *	for `sluice status`, which checks them before it asks: 0, or -1
 *	with the reason.
 */

#include "conf/conf.h"
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

/* One DESTINATION argument, and the rest; -1 with why if malformed. */
static int destination_arg(const char *args, char *dest, size_t len,
                           const char **rest, char *why, size_t whylen)
{
    size_t n = strcspn(args, " ");

    if (n == 0) {
        snprintf(why, whylen, "a destination is needed");
        return -1;
    }
    if (n >= len || n > 255) {
        snprintf(why, whylen, "destination longer than 255 bytes");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if ((unsigned char)args[i] <= ' ' || (unsigned char)args[i] >= 0x7f) {
            snprintf(why, whylen,
                     "destination holds a byte that is not printable ASCII");
            return -1;
        }
    }
    memcpy(dest, args, n);
    dest[n] = 0;
    *rest = args[n] ? args + n + 1 : args + n;
    return 0;
}

struct control_ctx {
    struct qmgr *q;
    daemon_control_log_fn *log;
    void *log_ctx;
};

static int suspend_verb(void *ctx, const char *args, struct util_buf *reply)
{
    struct control_ctx *cc = ctx;
    char dest[256], why[512], text[320];
    const char *rest;
    int64_t ms = 0;

    if (destination_arg(args, dest, sizeof(dest), &rest, why, sizeof(why)) < 0)
        goto fail;
    if (strchr(rest, ' ') != NULL) {
        snprintf(why, sizeof(why), "too many arguments");
        goto fail;
    }
    if (*rest && conf_time_parse(rest, 's', &ms, why, sizeof(why)) < 0)
        goto fail;
    if (*rest && ms <= 0) {
        snprintf(why, sizeof(why), "a duration must be more than 0");
        goto fail;
    }
    if (ms > 0)
        snprintf(text, sizeof(text), "suspend %s for %llds: by the operator",
                 dest, (long long)((ms + 999) / 1000));
    else
        snprintf(text, sizeof(text), "suspend %s: by the operator", dest);
    cc->log(cc->log_ctx, text);
    if (qmgr_suspend(cc->q, dest, ms, reply, why, sizeof(why)) < 0)
        goto fail;
    return 0;
fail:
    util_buf_reset(reply);
    util_buf_puts(reply, why);
    return -1;
}

static void resume_answer(void *arg, int status, const char *text)
{
    struct util_buf b = {0};

    util_buf_puts(&b, text);
    ops_control_later_reply(arg, status, &b);
    util_buf_free(&b);
}

static void resume_cancel(void *arg)
{
    qmgr_resume_cancel(arg);
}

/* In a cluster the answer may wait for Redis (qmgr_resume_ask()). */
static int resume_verb(void *ctx, const char *args, struct util_buf *reply,
                       struct ops_control_later *l, void (**cancel)(void *arg),
                       void **cancel_arg)
{
    struct control_ctx *cc = ctx;
    struct qmgr_resume_wait *w;
    char dest[256], why[512], text[320];
    const char *rest;
    int rc;

    if (destination_arg(args, dest, sizeof(dest), &rest, why, sizeof(why)) < 0)
        goto fail;
    if (*rest) {
        snprintf(why, sizeof(why), "too many arguments");
        goto fail;
    }
    snprintf(text, sizeof(text), "resume %s: by the operator", dest);
    cc->log(cc->log_ctx, text);
    rc = qmgr_resume_ask(cc->q, dest, reply, why, sizeof(why), resume_answer, l,
                         &w);
    if (rc < 0)
        goto fail;
    if (rc == 1) {
        *cancel = resume_cancel;
        *cancel_arg = w;
    }
    return rc;
fail:
    util_buf_reset(reply);
    util_buf_puts(reply, why);
    return -1;
}

struct ops_control *
daemon_control_create(struct event_base *base, const char *queue_directory,
                      struct qmgr *q, daemon_control_log_fn *log, void *log_ctx,
                      char *why, size_t whylen)
{
    static struct control_ctx cc; /* one daemon, one control socket */
    struct ops_control *c =
        ops_control_create(base, queue_directory, why, whylen);

    if (c == NULL)
        return NULL;
    cc = (struct control_ctx){q, log, log_ctx};
    ops_control_command(c, "status", status_verb, q);
    ops_control_command(c, "suspend", suspend_verb, &cc);
    ops_control_command_later(c, "resume", resume_verb, &cc);
    daemon_verify_command(c, q); /* verify.c */
    return c;
}

static int metrics_path(void *ctx, struct util_buf *body)
{
    qmgr_metrics(ctx, body);
    return 200;
}

static int status_path(void *ctx, struct util_buf *body)
{
    qmgr_status(ctx, body, 1, DAEMON_STATUS_DESTINATIONS);
    return 200;
}

int daemon_http_create(struct event_base *base, const struct conf *conf,
                       struct qmgr *q, const struct daemon_inject_ops *inject,
                       struct ops_http **http, char *why, size_t whylen)
{
    const char *listen = conf_str(conf, NULL, CONF_http_listen);

    *http = NULL;
    if (listen[strspn(listen, ", \t")] == 0)
        return 0;
    if ((*http = ops_http_create(
             base, listen,
             (size_t)conf_int(conf, NULL, CONF_message_size_limit) * 2 + 65536,
             why, whylen)) == NULL)
        return -1;
    ops_http_route(*http, "/metrics",
                   "text/plain; version=0.0.4; charset=utf-8", metrics_path, q);
    ops_http_route(*http, "/api/status", "application/json", status_path, q);
    if (daemon_inject_route(*http, conf, inject, why, whylen) < 0) {
        ops_http_free(*http);
        *http = NULL;
        return -1;
    }
    return 0;
}
