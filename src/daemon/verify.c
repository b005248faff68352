/*
 * NAME
 *	verify 3 - the control socket's verify verb (sluice verify)
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	void	daemon_verify_command(struct ops_control *c, struct qmgr *q)
 *	int	daemon_verify_args(const char *args, int *cached,
 *			long *wait_ms, char ***addresses, size_t *n,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	daemon_verify_command() teaches the control socket
 *
 *	verify [--cached] [--wait MS] ADDRESS...
 *		the queue manager's address verification (qmgr_verify()):
 *		each address is answered from the cache or probed, all
 *		at once, and the reply comes when every one has its
 *		answer, or after MS milliseconds (default
 *		DAEMON_VERIFY_WAIT_MS; 0: at once) with "undetermined,
 *		Address verification in progress" for those still under
 *		way. --cached sends no probe: the cache's answer, or
 *		undetermined. The reply has one line per address, in
 *		order: "ADDRESS STATUS DSN SOURCE TEXT", STATUS
 *		deliverable, undeliverable or undetermined, SOURCE
 *		"cached" or "new".
 *
 *	A client that goes away while it waits cancels its waits; the
 *	probes go on for the cache. daemon_verify_args() reads the
 *	arguments, for the daemon and for `sluice verify`: at most
 *	DAEMON_VERIFY_MAX addresses, each printable ASCII of at most 500
 *	bytes; 0, or -1 with the reason. *addresses is the caller's to
 *	free (each, then the array).
 */

#include "daemon/daemon.h"
#include "ops/ops.h"
#include "qmgr/qmgr.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct verify_call;

struct verify_one {
    struct verify_call *call;
    struct qmgr_verify_wait *wait;
    struct qmgr_verify_answer a;
    int waiting;
};

struct verify_call {
    struct ops_control_later *l;
    char **addr;
    size_t n, left;
    struct verify_one *one;
};

static void verify_args_free(char **addr, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(addr[i]);
    free(addr);
}

/* An address as the control socket takes it: printable, no space. */
static int address_ok(const char *w)
{
    size_t len = strlen(w);

    if (len == 0 || len > 500)
        return 0;
    for (const char *p = w; *p; p++)
        if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 127)
            return 0;
    return 1;
}

int daemon_verify_args(const char *args, int *cached, long *wait_ms,
                       char ***addresses, size_t *n, char *why, size_t whylen)
{
    char *copy = xstrdup(args), *w, *save = NULL, *end;

    *cached = 0;
    *wait_ms = DAEMON_VERIFY_WAIT_MS;
    *addresses = xcalloc(DAEMON_VERIFY_MAX, sizeof(**addresses));
    *n = 0;
    for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
        if (strcmp(w, "--cached") == 0) {
            *cached = 1;
        } else if (strcmp(w, "--wait") == 0) {
            w = strtok_r(NULL, " ", &save);
            errno = 0;
            *wait_ms = w ? strtol(w, &end, 10) : -1;
            if (w == NULL || errno || *end || *wait_ms < 0 ||
                *wait_ms > 3600000) {
                snprintf(why, whylen,
                         "--wait: not milliseconds from 0 to "
                         "3600000");
                goto fail;
            }
        } else if (*n == DAEMON_VERIFY_MAX) {
            snprintf(why, whylen, "more than %d addresses", DAEMON_VERIFY_MAX);
            goto fail;
        } else if (!address_ok(w)) {
            char quoted[64];

            util_quote(quoted, sizeof(quoted), w, strlen(w), 0);
            snprintf(why, whylen, "malformed address %s", quoted);
            goto fail;
        } else {
            (*addresses)[(*n)++] = xstrdup(w);
        }
    }
    free(copy);
    if (*n == 0) {
        snprintf(why, whylen, "no address to verify");
        verify_args_free(*addresses, 0);
        *addresses = NULL;
        return -1;
    }
    return 0;
fail:
    free(copy);
    verify_args_free(*addresses, *n);
    *addresses = NULL;
    *n = 0;
    return -1;
}

static void call_free(struct verify_call *c)
{
    verify_args_free(c->addr, c->n);
    free(c->one);
    free(c);
}

static void call_format(const struct verify_call *c, struct util_buf *b)
{
    for (size_t i = 0; i < c->n; i++) {
        const struct qmgr_verify_answer *a = &c->one[i].a;

        util_buf_printf(b, "%s %s %s %s %s\n", c->addr[i],
                        qmgr_verify_status_name(a->status),
                        a->dsn[0] ? a->dsn : "-", a->cached ? "cached" : "new",
                        a->text);
    }
}

static void one_answered(void *ctx, const struct qmgr_verify_answer *a)
{
    struct verify_one *o = ctx;
    struct verify_call *c = o->call;
    struct util_buf b = UTIL_BUF_INIT;

    o->a = *a;
    o->wait = NULL;
    o->waiting = 0;
    if (--c->left > 0)
        return;
    call_format(c, &b);
    ops_control_later_reply(c->l, 0, &b);
    util_buf_free(&b);
    call_free(c);
}

/* The client went away: its waits end, the probes go on. */
static void call_cancel(void *arg)
{
    struct verify_call *c = arg;

    for (size_t i = 0; i < c->n; i++)
        if (c->one[i].waiting)
            qmgr_verify_cancel(c->one[i].wait);
    call_free(c);
}

static int verify_verb(void *ctx, const char *args, struct util_buf *reply,
                       struct ops_control_later *l, void (**cancel)(void *),
                       void **cancel_arg)
{
    struct verify_call *c = xcalloc(1, sizeof(*c));
    int cached;
    long wait_ms;
    char why[256];

    if (daemon_verify_args(args, &cached, &wait_ms, &c->addr, &c->n, why,
                           sizeof(why)) < 0) {
        util_buf_puts(reply, why);
        free(c);
        return -1;
    }
    c->l = l;
    c->one = xcalloc(c->n, sizeof(*c->one));
    for (size_t i = 0; i < c->n; i++) {
        struct verify_one *o = &c->one[i];

        o->call = c;
        o->waiting = qmgr_verify(ctx, c->addr[i], wait_ms,
                                 cached ? QMGR_VERIFY_CACHED : 0, &o->a,
                                 one_answered, o, &o->wait) == 0;
        c->left += (size_t)o->waiting;
    }
    if (c->left == 0) {
        call_format(c, reply);
        call_free(c);
        return 0;
    }
    *cancel = call_cancel;
    *cancel_arg = c;
    return 1;
}

void daemon_verify_command(struct ops_control *c, struct qmgr *q)
{
    ops_control_command_later(c, "verify", verify_verb, q);
}
