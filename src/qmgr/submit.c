/*
 * NAME
 *	submit 3 - new mail into the spool's group commit, answered on the loop
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qmgr_submit(struct qmgr *q, struct spool_msg *m,
 *			const char *origin, qmgr_submit_fn *done, void *ctx)
 *	void	qm_submit_notice(struct qmgr *q, struct spool_msg *nm,
 *			const char *kind, const char *about)
 * DESCRIPTION
 *	qmgr_submit() is described in qmgr.h. qm_submit_notice() stores nm,
 *	a notice of the given kind about message about, for its sender,
 *	and logs it as "ABOUT: sender KIND: NEWID".
 */

#include "qmgr/qmgr_impl.h"
#include "smtp/smtp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct submit_note {
    struct qmgr *q;
    qmgr_submit_fn *done; /* or NULL */
    void *ctx;
    const char *notice; /* a notice about message about: what kind */
    char about[SPOOL_ID_MAX + 1];
    int status;
    char id[SPOOL_ID_MAX + 1];
    char *origin; /* "uid=0 from=<S>", "client=NAME[ADDR]" */
    char why[256];
    char msgid[256]; /* its Message-ID field, or "" */
};

#define MSGID_LOOK 16384 /* bytes of a message searched for Message-ID */

/* Its Message-ID, as Postfix's cleanup logs it, from its start. */
static void message_id(const struct spool_msg *m, char *out, size_t len)
{
    char head[MSGID_LOOK];
    ssize_t n;

    out[0] = 0;
    if (m->body != NULL) {
        smtp_header_value(m->body, m->size < MSGID_LOOK ? m->size : MSGID_LOOK,
                          "Message-ID", out, len);
    } else if (m->body_path != NULL &&
               (n = pread(m->body_fd, head, sizeof(head), 0)) > 0) {
        smtp_header_value(head, (size_t)n, "Message-ID", out, len);
    }
}

static void submit_seen(void *arg)
{
    struct submit_note *n = arg;
    struct qmgr *q = n->q;

    q->submitting--;
    if (n->status == 0 && n->notice) {
        qm_log_as(q, "bounce", QMGR_LOG_INFO, "%s: sender %s: %s", n->about,
                  n->notice, n->id);
        q->stats.notices++;
        qm_feed_ask(q, QM_FEED_COALESCE_US);
    } else if (n->status == 0) {
        /* Where it came from, as Postfix's smtpd and pickup say it. */
        qm_log_as(q,
                  strncmp(n->origin, "client=", 7) == 0 ? "smtpd"
                  : strncmp(n->origin, "uid=", 4) == 0  ? "pickup"
                  : strncmp(n->origin, "http=", 5) == 0 ? "http"
                                                        : "qmgr",
                  QMGR_LOG_INFO, "%s: %s", n->id, n->origin);
        if (n->msgid[0])
            qm_log_as(q, "cleanup", QMGR_LOG_INFO, "%s: message-id=%s", n->id,
                      n->msgid);
        q->stats.submitted++;
        qm_feed_ask(q, QM_FEED_COALESCE_US);
    } else if (n->notice) {
        qm_log_as(q, "bounce", QMGR_LOG_WARNING, "%s: sender %s not stored: %s",
                  n->about, n->notice, n->why);
    } else {
        qm_log(q, QMGR_LOG_WARNING, "%s: not stored: %s", n->origin, n->why);
    }
    if (n->done)
        n->done(n->ctx, n->status, n->id, n->why);
    free(n->origin);
    free(n);
}

static void submit_committed(void *ctx, struct spool_msg *m, int status,
                             const char *why)
{
    struct submit_note *n = ctx;

    n->status = status;
    snprintf(n->id, sizeof(n->id), "%s", m->id);
    snprintf(n->why, sizeof(n->why), "%s", why ? why : "");
    spool_msg_free(m);
    qmgr_inbox_post(n->q->inbox, submit_seen, n);
}

static void submit_store(struct qmgr *q, struct spool_msg *m,
                         struct submit_note *n)
{
    message_id(m, n->msgid, sizeof(n->msgid));
    q->submitting++;
    if (spool_submit(q->sp, m, submit_committed, n) < 0) {
        spool_msg_free(m);
        n->status = -1;
        snprintf(n->why, sizeof(n->why), "the queue is shutting down");
        qmgr_inbox_post(q->inbox, submit_seen, n);
    }
}

static struct submit_note *submit_note_new(struct qmgr *q, const char *origin)
{
    struct submit_note *n = xcalloc(1, sizeof(*n));

    n->origin = xstrdup(origin);
    n->q = q;
    return n;
}

void qmgr_submit(struct qmgr *q, struct spool_msg *m, const char *origin,
                 qmgr_submit_fn *done, void *ctx)
{
    struct submit_note *n = submit_note_new(q, origin);

    n->done = done;
    n->ctx = ctx;
    submit_store(q, m, n);
}

void qm_submit_notice(struct qmgr *q, struct spool_msg *nm, const char *kind,
                      const char *about)
{
    struct submit_note *n = submit_note_new(q, "");

    n->notice = kind;
    snprintf(n->about, sizeof(n->about), "%s", about);
    submit_store(q, nm, n);
}
