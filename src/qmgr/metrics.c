/*
 * NAME
 *	metrics 3 - the queue manager's numbers in Prometheus' text format
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_metrics(struct qmgr *q, struct util_buf *out)
 *
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_metrics_outcome(struct qmgr *q, const char *transport,
 *			enum deliver_status st, double delay)
 *	void	qm_metrics_free(struct qmgr *q)
 * DESCRIPTION
 *	qm_metrics_outcome() counts one recipient's outcome under its
 *	transport (NULL: decided without a delivery, as "none"): delivered,
 *	deferred or bounced, and for a delivered one its delay since the
 *	message arrived in the histogram's buckets. Transports are few
 *	(those of the configuration), so they are kept in a list;
 *	qm_metrics_free() frees it.
 *
 *	qmgr_metrics() appends the exposition (Prometheus text format
 *	0.0.4) of what the daemon knows now:
 *
 *	sluice_recipients_total{transport,status}	counter
 *		recipient outcomes: delivered, deferred, bounced
 *	sluice_delivery_delay_seconds{transport}	histogram
 *		arrival to delivery of the recipients delivered
 *	sluice_messages_received_total			counter
 *		messages stored through the daemon (SMTP, sendmail)
 *	sluice_messages_removed_total			counter
 *		messages that left the queue, every recipient final
 *	sluice_queue_messages{queue}			gauge
 *		incoming and deferred (the spool's indexes), active (in
 *		core)
 *	sluice_core_messages, sluice_core_recipients	gauges
 *		in core, against qmgr_message_active_limit and
 *		qmgr_message_recipient_limit (sluice_core_*_limit)
 *	sluice_deliveries_busy{transport}		gauge
 *	sluice_destinations{transport}			gauge
 *	sluice_destinations_dead{transport}		gauge
 *		dead or suspended destination queues
 *	sluice_connections_open				gauge
 *		deliveries in flight plus idle cached connections
 *	sluice_connections_idle				gauge
 *	sluice_connections_opened_total			counter
 *	sluice_agents{transport,state}			gauge
 *		external agents: running (at a job or starting), idle
 *	sluice_agents_started_total{transport}		counter
 *	sluice_agents_failed_total{transport}		counter
 *		killed for a fault, or could not start
 *
 *	Reading it walks the destination queues of each transport and
 *	asks the spool for two index sizes: its cost is that of the
 *	destinations in memory, never of the queue on disk.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const double bounds[] = {0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600};
#define NBOUNDS (sizeof(bounds) / sizeof(bounds[0]))

struct qm_tstats {
    char *name;
    long delivered, deferred, bounced;
    uint64_t bucket[NBOUNDS]; /* delivered with delay <= bounds[i] */
    uint64_t count;
    double sum;
    struct qm_tstats *next;
};

static struct qm_tstats *tstats_find(struct qmgr *q, const char *name)
{
    struct qm_tstats **p;

    for (p = &q->tstats; *p; p = &(*p)->next)
        if (strcmp((*p)->name, name) == 0)
            return *p;
    *p = xcalloc(1, sizeof(**p));
    (*p)->name = xstrdup(name);
    return *p;
}

void qm_metrics_outcome(struct qmgr *q, const char *transport,
                        enum deliver_status st, double delay)
{
    struct qm_tstats *t = tstats_find(q, transport ? transport : "none");

    if (st == DELIVER_DEFER) {
        t->deferred++;
        return;
    }
    if (st != DELIVER_OK) {
        t->bounced++;
        return;
    }
    t->delivered++;
    if (delay < 0)
        delay = 0;
    for (size_t i = 0; i < NBOUNDS; i++)
        t->bucket[i] += delay <= bounds[i];
    t->count++;
    t->sum += delay;
}

void qm_metrics_free(struct qmgr *q)
{
    while (q->tstats) {
        struct qm_tstats *t = q->tstats;

        q->tstats = t->next;
        free(t->name);
        free(t);
    }
}

/* One metric's HELP and TYPE lines. */
static void head(struct util_buf *b, const char *name, const char *type,
                 const char *help)
{
    util_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/*
 * A label value: transport names come from the configuration (letters,
 * digits, "-", "_", "."), but the format's escapes cost nothing.
 */
static void label(struct util_buf *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            util_buf_printf(b, "\\%c", *v);
        else if (*v == '\n')
            util_buf_puts(b, "\\n");
        else
            util_buf_add(b, v, 1);
    }
}

static void per_transport_gauges(struct qmgr *q, struct util_buf *b)
{
    static const char *const names[] = {"sluice_deliveries_busy",
                                        "sluice_destinations",
                                        "sluice_destinations_dead"};
    static const char *const helps[] = {
        "Deliveries in flight, by transport.",
        "Destination queues in memory, by transport.",
        "Destination queues dead or suspended, by transport."};

    for (size_t k = 0; k < 3; k++) {
        const struct core_transport *t = NULL;

        head(b, names[k], "gauge", helps[k]);
        while ((t = core_transport_next(q->core, t)) != NULL) {
            struct core_transport_status ts;
            long v;

            core_transport_status(t, &ts);
            if (k == 0) {
                v = ts.busy;
            } else if (k == 1) {
                v = (long)ts.queues;
            } else {
                struct core_queue *cq = NULL;

                v = 0;
                while ((cq = core_queue_next(t, cq)) != NULL)
                    v += core_queue_dead(cq);
            }
            util_buf_printf(b, "%s{transport=\"", names[k]);
            label(b, ts.name);
            util_buf_printf(b, "\"} %ld\n", v);
        }
    }
}

#define AGENT_CHANNELS 64

/* The external agents, per transport (decision 134's issue). */
static void agent_metrics(struct qmgr *q, struct util_buf *b)
{
    struct deliver_agent_stats st[AGENT_CHANNELS];
    size_t n =
        q->cache ? deliver_cache_agent_stats(q->cache, st, AGENT_CHANNELS) : 0;

    head(b, "sluice_agents", "gauge",
         "External agents: running (at a job or starting) and idle.");
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            util_buf_puts(b, "sluice_agents{transport=\"");
            label(b, st[i].channel);
            util_buf_printf(b, "\",state=\"%s\"} %zu\n", k ? "idle" : "running",
                            k ? st[i].idle : st[i].running);
        }
    head(b, "sluice_agents_started_total", "counter",
         "External agents started.");
    for (size_t i = 0; i < n; i++) {
        util_buf_puts(b, "sluice_agents_started_total{transport=\"");
        label(b, st[i].channel);
        util_buf_printf(b, "\"} %llu\n", (unsigned long long)st[i].started);
    }
    head(b, "sluice_agents_failed_total", "counter",
         "External agents killed for a fault, or that could not start.");
    for (size_t i = 0; i < n; i++) {
        util_buf_puts(b, "sluice_agents_failed_total{transport=\"");
        label(b, st[i].channel);
        util_buf_printf(b, "\"} %llu\n", (unsigned long long)st[i].failed);
    }
}

void qmgr_metrics(struct qmgr *q, struct util_buf *b)
{
    static const char *const status[] = {"delivered", "deferred", "bounced"};
    const struct core_transport *t = NULL;
    struct qm_tstats *s;
    long busy = 0, incoming = spool_count(q->sp, SPOOL_INDEX_INCOMING),
         deferred = spool_count(q->sp, SPOOL_INDEX_DEFERRED);
    size_t idle = q->cache ? deliver_cache_count(q->cache) : 0;

    head(b, "sluice_recipients_total", "counter",
         "Recipient outcomes, by transport (none: decided without a "
         "delivery) and status.");
    for (s = q->tstats; s; s = s->next) {
        const long v[] = {s->delivered, s->deferred, s->bounced};

        for (size_t k = 0; k < 3; k++) {
            util_buf_puts(b, "sluice_recipients_total{transport=\"");
            label(b, s->name);
            util_buf_printf(b, "\",status=\"%s\"} %ld\n", status[k], v[k]);
        }
    }
    head(b, "sluice_delivery_delay_seconds", "histogram",
         "Time from a message's arrival to a recipient's delivery.");
    for (s = q->tstats; s; s = s->next) {
        for (size_t i = 0; i <= NBOUNDS; i++) {
            util_buf_puts(b,
                          "sluice_delivery_delay_seconds_bucket{transport=\"");
            label(b, s->name);
            if (i < NBOUNDS)
                util_buf_printf(b, "\",le=\"%g\"} %llu\n", bounds[i],
                                (unsigned long long)s->bucket[i]);
            else
                util_buf_printf(b, "\",le=\"+Inf\"} %llu\n",
                                (unsigned long long)s->count);
        }
        util_buf_puts(b, "sluice_delivery_delay_seconds_sum{transport=\"");
        label(b, s->name);
        util_buf_printf(b, "\"} %.6f\n", s->sum);
        util_buf_puts(b, "sluice_delivery_delay_seconds_count{transport=\"");
        label(b, s->name);
        util_buf_printf(b, "\"} %llu\n", (unsigned long long)s->count);
    }
    head(b, "sluice_messages_received_total", "counter",
         "Messages stored through the daemon (SMTP, sendmail).");
    util_buf_printf(b, "sluice_messages_received_total %ld\n",
                    q->stats.submitted);
    head(b, "sluice_messages_removed_total", "counter",
         "Messages that left the queue with every recipient final.");
    util_buf_printf(b, "sluice_messages_removed_total %ld\n", q->stats.removed);
    head(b, "sluice_queue_messages", "gauge",
         "Messages in the queue: incoming and deferred on disk, active in "
         "core.");
    if (incoming >= 0)
        util_buf_printf(b, "sluice_queue_messages{queue=\"incoming\"} %ld\n",
                        incoming);
    if (deferred >= 0)
        util_buf_printf(b, "sluice_queue_messages{queue=\"deferred\"} %ld\n",
                        deferred);
    util_buf_printf(b, "sluice_queue_messages{queue=\"active\"} %ld\n",
                    q->active);
    head(b, "sluice_core_messages", "gauge", "Messages in core.");
    util_buf_printf(b, "sluice_core_messages %ld\n", q->active);
    head(b, "sluice_core_messages_limit", "gauge",
         "qmgr_message_active_limit.");
    util_buf_printf(b, "sluice_core_messages_limit %ld\n", q->limit);
    head(b, "sluice_core_recipients", "gauge", "Recipients in core.");
    util_buf_printf(b, "sluice_core_recipients %ld\n",
                    core_recipient_count(q->core));
    head(b, "sluice_core_recipients_limit", "gauge",
         "qmgr_message_recipient_limit.");
    util_buf_printf(b, "sluice_core_recipients_limit %ld\n",
                    conf_int(q->conf, NULL, CONF_qmgr_message_recipient_limit));
    per_transport_gauges(q, b);
    while ((t = core_transport_next(q->core, t)) != NULL) {
        struct core_transport_status ts;

        core_transport_status(t, &ts);
        busy += ts.busy;
    }
    head(b, "sluice_connections_open", "gauge",
         "Delivery connections open: in use plus idle in the cache.");
    util_buf_printf(b, "sluice_connections_open %ld\n", busy + (long)idle);
    head(b, "sluice_connections_idle", "gauge",
         "Idle delivery connections in the cache.");
    util_buf_printf(b, "sluice_connections_idle %zu\n", idle);
    head(b, "sluice_connections_opened_total", "counter",
         "Delivery connections established.");
    util_buf_printf(b, "sluice_connections_opened_total %llu\n",
                    (unsigned long long)deliver_cache_opened(q->cache));
    agent_metrics(q, b);
}
