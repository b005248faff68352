/*
 * NAME
 *	status 3 - the queue manager's state for `sluice status`
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_status(struct qmgr *q, struct util_buf *out, int json,
 *			long max_destinations)
 * DESCRIPTION
 *	qmgr_status() appends to out what the scheduler holds now, as text
 *	for a person or (json) as one JSON object: messages and recipients
 *	in core against their limits; Finch's routing jobs under way
 *	against router_worker_limit and waiting (text: only when there
 *	are some); per transport, deliveries in flight
 *	against the process limit, the job selection policy, the jobs and
 *	the recipient pool, a suspension with its reason and how long
 *	it still lasts, and its external agents (agent.c); per destination queue, the concurrency window and
 *	its limit, deliveries in flight, entries waiting, the feedback's
 *	state (success and failure accumulators, failed pseudo-cohorts),
 *	and whether it is dead, suspended by the operator (sluice suspend)
 *	or paused by a rate delay, why, and for how many seconds more;
 *	under the zmailer scheduler, its threads, thread-rings, agents
 *	(running and idle) and vertices (qm_zmailer_status()); and the head of each transport's job list (the
 *	first STATUS_JOBS jobs) with their entries and delivery slots.
 *
 *	Destinations come busiest first (entries waiting and in flight),
 *	at most max_destinations of each transport (0: all); the rest are
 *	counted ("more_destinations"), so that a queue manager holding
 *	100,000 destinations answers with a bounded reply. It reads and
 *	changes nothing but out.
 *
 *	The JSON object: {"time": EPOCH, "messages": {"in_core", "limit"},
 *	"recipients": {"in_core", "limit"}, "routing": {"busy", "limit",
 *	"waiting"}, "transports": [{"name",
 *	"scheduler", "busy", "limit", "jobs", "destination_count",
 *	"recipient_pool", "recipient_pool_free", "suspended",
 *	"suspend_reason", "resume_in_s", "zmailer": {"threads", "rings",
 *	"agents", "running", "idle", "vertices"} (null under another
 *	scheduler), "agents": {"running", "idle", "started", "failed"}
 *	(qm_agent_status()), "destinations": [{"name",
 *	"window", "limit", "busy", "todo", "success", "failure",
 *	"failed_cohorts", "dead", "suspended", "rate_delayed", "reason",
 *	"retry_in_s"}],
 *	"more_destinations", "job_list": [{"queue_id", "entries_read",
 *	"entries_selected", "slots_available", "slots_used", "preempting",
 *	"recipients"}]}]}; absent values are null.
 */

#include "qmgr/qmgr_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STATUS_JOBS 10 /* jobs shown from the head of each list */

/* Busiest first: entries waiting and in flight, then by name. */
static int by_backlog(const void *a, const void *b)
{
    const struct core_queue_status *x = a, *y = b;
    long bx = (long)x->todo + x->busy, by = (long)y->todo + y->busy;

    if (bx != by)
        return bx > by ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Seconds from now until when, or -1 for never. */
static long seconds_until(core_time_t when, core_time_t now)
{
    if (when == CORE_TIME_NEVER)
        return -1;
    return when > now ? (long)((when - now + 999) / 1000) : 0;
}

static void json_seconds(struct util_buf *b, long s)
{
    if (s < 0)
        util_buf_puts(b, "null");
    else
        util_buf_printf(b, "%ld", s);
}

static void json_text(struct util_buf *b, const char *s)
{
    if (s == NULL)
        util_buf_puts(b, "null");
    else
        util_json_string(b, s);
}

static void dest_json(struct util_buf *b, const struct core_queue_status *d,
                      core_time_t now)
{
    util_buf_puts(b, "{\"name\": ");
    util_json_string(b, d->key);
    util_buf_printf(b,
                    ", \"window\": %d, \"limit\": %d, \"busy\": %d, "
                    "\"todo\": %d, \"success\": %.3f, \"failure\": %.3f, "
                    "\"failed_cohorts\": %.3f, \"dead\": %s, "
                    "\"suspended\": %s, \"rate_delayed\": %s, \"reason\": ",
                    d->window, d->limit, d->busy, d->todo, d->success,
                    d->failure, d->fail_cohorts, d->dead ? "true" : "false",
                    d->suspended ? "true" : "false",
                    d->rate_wait ? "true" : "false");
    json_text(b, d->dead_reason);
    util_buf_puts(b, ", \"retry_in_s\": ");
    json_seconds(b, seconds_until(d->until, now));
    util_buf_puts(b, "}");
}

static void dest_text(struct util_buf *b, const struct core_queue_status *d,
                      core_time_t now)
{
    char window[32];

    if (d->suspended)
        snprintf(window, sizeof(window), "suspended");
    else if (d->dead)
        snprintf(window, sizeof(window), "dead");
    else if (d->limit > 0)
        snprintf(window, sizeof(window), "%d/%d", d->window, d->limit);
    else
        snprintf(window, sizeof(window), "%d", d->window);
    util_buf_printf(b, "  %-40s %9s %5d %6d", d->key, window, d->busy, d->todo);
    if (d->dead && d->until == CORE_TIME_NEVER)
        util_buf_printf(b, "  until resumed: %s",
                        d->dead_reason ? d->dead_reason : "");
    else if (d->dead)
        util_buf_printf(
            b, "  %s %lds: %s", d->suspended ? "resumes in" : "retry in",
            seconds_until(d->until, now), d->dead_reason ? d->dead_reason : "");
    else if (d->rate_wait)
        util_buf_printf(b, "  rate delay, %lds", seconds_until(d->until, now));
    else if (d->failure > 0 || d->fail_cohorts > 0)
        util_buf_printf(b, "  failures %.2f, failed cohorts %.2f", d->failure,
                        d->fail_cohorts);
    util_buf_puts(b, "\n");
}

static void job_out(const struct qmgr *q, struct util_buf *b,
                    const struct core_job_status *j, int json)
{
    /* the address probes' pseudo-message shows as "verify" */
    const char *id =
        qm_verify_owns(q, j->message)
            ? "verify"
            : ((const struct qm_msg *)core_message_ctx(j->message))->id;

    if (json) {
        util_buf_puts(b, "{\"queue_id\": ");
        util_json_string(b, id);
        util_buf_printf(b,
                        ", \"entries_read\": %d, \"entries_selected\": %d, "
                        "\"slots_available\": %d, \"slots_used\": %d, "
                        "\"preempting\": %s, \"recipients\": %ld}",
                        j->read_entries, j->selected_entries,
                        j->slots_available, j->slots_used,
                        j->preempting ? "true" : "false", j->rcpt_count);
        return;
    }
    util_buf_printf(b,
                    "    %-16s entries %d/%d selected, slots %d available, "
                    "%d used, %ld recipients%s\n",
                    id, j->selected_entries, j->read_entries,
                    j->slots_available, j->slots_used, j->rcpt_count,
                    j->preempting ? ", preempting" : "");
}

/* Under the zmailer scheduler: its threads, rings and agents. */
static void zmailer_out(const struct qmgr *q, const char *transport,
                        struct util_buf *b, int json)
{
    struct core_zsummary z;

    if (strcmp(conf_str(q->conf, transport, CONF_default_delivery_scheduler),
               "zmailer") != 0) {
        if (json)
            util_buf_puts(b, ", \"zmailer\": null");
        return;
    }
    qm_zmailer_status(q, transport, &z);
    if (json) {
        util_buf_printf(b,
                        ", \"zmailer\": {\"threads\": %zu, \"rings\": %zu, "
                        "\"agents\": %d, \"running\": %d, \"idle\": %d, "
                        "\"vertices\": %zu}",
                        z.threads, z.rings, z.agents, z.running, z.idle,
                        z.vertices);
        return;
    }
    util_buf_printf(b,
                    "  zmailer: %zu threads in %zu rings, %d agents (%d "
                    "running, %d idle), %zu vertices\n",
                    z.threads, z.rings, z.agents, z.running, z.idle,
                    z.vertices);
}

static void transport_out(struct qmgr *q, const struct core_transport *t,
                          struct util_buf *b, int json, long max_dest,
                          core_time_t now)
{
    struct core_transport_status ts;
    struct core_queue_status *ds;
    struct core_queue *cq = NULL;
    const struct core_job *job = NULL;
    size_t n = 0, shown;
    int first = 1;

    (void)q;
    core_transport_status(t, &ts);
    ds = xcalloc(ts.queues + 1, sizeof(*ds));
    while ((cq = core_queue_next(t, cq)) != NULL && n < ts.queues)
        core_queue_status(cq, &ds[n++]);
    qsort(ds, n, sizeof(*ds), by_backlog);
    shown = max_dest > 0 && (size_t)max_dest < n ? (size_t)max_dest : n;
    if (json) {
        util_buf_puts(b, "{\"name\": ");
        util_json_string(b, ts.name);
        util_buf_puts(b, ", \"scheduler\": ");
        util_json_string(b, ts.scheduler);
        util_buf_printf(b,
                        ", \"busy\": %d, \"limit\": %d, \"jobs\": %zu, "
                        "\"destination_count\": %zu, \"recipient_pool\": %ld, "
                        "\"recipient_pool_free\": %ld, \"suspended\": %s, "
                        "\"suspend_reason\": ",
                        ts.busy, ts.process_limit, ts.jobs, ts.queues,
                        ts.rcpt_pool, ts.rcpt_unused,
                        ts.suspended ? "true" : "false");
        json_text(b, ts.suspend_reason);
        util_buf_puts(b, ", \"resume_in_s\": ");
        json_seconds(b, ts.suspended ? seconds_until(ts.suspended_until, now)
                                     : -1);
        zmailer_out(q, ts.name, b, 1);
        qm_agent_status(q, ts.name, b, 1);
        util_buf_puts(b, ", \"destinations\": [");
        for (size_t i = 0; i < shown; i++) {
            util_buf_puts(b, i ? ", " : "");
            dest_json(b, &ds[i], now);
        }
        util_buf_printf(b, "], \"more_destinations\": %zu, \"job_list\": [",
                        n - shown);
        for (int i = 0; i < STATUS_JOBS && (job = core_job_next(t, job)); i++) {
            struct core_job_status js;

            core_job_status(job, &js);
            util_buf_puts(b, first ? "" : ", ");
            first = 0;
            job_out(q, b, &js, 1);
        }
        util_buf_puts(b, "]}");
        free(ds);
        return;
    }
    util_buf_printf(b,
                    "transport %s: %d of %d deliveries, %zu jobs (%s), %zu "
                    "destinations, recipient pool %ld of %ld free\n",
                    ts.name, ts.busy, ts.process_limit, ts.jobs, ts.scheduler,
                    ts.queues, ts.rcpt_unused, ts.rcpt_pool);
    if (ts.suspended) {
        long s = seconds_until(ts.suspended_until, now);

        if (s >= 0)
            util_buf_printf(b, "  suspended for %lds more: %s\n", s,
                            ts.suspend_reason ? ts.suspend_reason : "");
        else
            util_buf_printf(b, "  suspended: %s\n",
                            ts.suspend_reason ? ts.suspend_reason : "");
    }
    zmailer_out(q, ts.name, b, 0);
    qm_agent_status(q, ts.name, b, 0);
    if (n > 0)
        util_buf_printf(b, "  %-40s %9s %5s %6s\n", "destination", "window",
                        "busy", "todo");
    for (size_t i = 0; i < shown; i++)
        dest_text(b, &ds[i], now);
    if (shown < n)
        util_buf_printf(b, "  ... and %zu more destinations\n", n - shown);
    if (ts.jobs > 0)
        util_buf_printf(b, "  jobs (the first %d of %zu):\n",
                        ts.jobs < STATUS_JOBS ? (int)ts.jobs : STATUS_JOBS,
                        ts.jobs);
    for (int i = 0; i < STATUS_JOBS && (job = core_job_next(t, job)); i++) {
        struct core_job_status js;

        core_job_status(job, &js);
        job_out(q, b, &js, 0);
    }
    free(ds);
}

void qmgr_status(struct qmgr *q, struct util_buf *out, int json,
                 long max_destinations)
{
    const struct core_transport *t = NULL;
    core_time_t now = qm_now_ms();
    long rcpt_limit =
        conf_int(q->conf, NULL, CONF_qmgr_message_recipient_limit);
    long route_limit = conf_int(q->conf, NULL, CONF_router_worker_limit);
    int first = 1;

    if (json) {
        util_buf_printf(out,
                        "{\"time\": %lld, \"messages\": {\"in_core\": %ld, "
                        "\"limit\": %ld}, \"recipients\": {\"in_core\": %ld, "
                        "\"limit\": %ld}, \"routing\": {\"busy\": %ld, "
                        "\"limit\": %ld, \"waiting\": %ld}, "
                        "\"transports\": [",
                        (long long)time(NULL), q->active, q->limit,
                        core_recipient_count(q->core), rcpt_limit,
                        q->route_busy, route_limit, q->route_waiting);
        while ((t = core_transport_next(q->core, t)) != NULL) {
            util_buf_puts(out, first ? "" : ", ");
            first = 0;
            transport_out(q, t, out, 1, max_destinations, now);
        }
        util_buf_puts(out, "]}\n");
        return;
    }
    util_buf_printf(out,
                    "messages in core: %ld of %ld\n"
                    "recipients in core: %ld of %ld\n",
                    q->active, q->limit, core_recipient_count(q->core),
                    rcpt_limit);
    if (q->route_busy + q->route_waiting > 0)
        util_buf_printf(out,
                        "routing jobs: %ld of %ld under way, %ld waiting\n",
                        q->route_busy, route_limit, q->route_waiting);
    while ((t = core_transport_next(q->core, t)) != NULL)
        transport_out(q, t, out, 0, max_destinations, now);
}
