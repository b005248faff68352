/*
 * NAME
 *	report 3 - the simulator's result table
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	void	sim_report_header(FILE *fp, int tsv)
 *	void	sim_report_row(FILE *fp, int tsv, const struct sim_result *res)
 *	void	sim_report_footer(FILE *fp, int tsv)
 *	double	sim_theoretical_defer_pct(const struct sim_scenario *sc)
 *	void	sim_report_latency_header(FILE *fp, int tsv)
 *	void	sim_report_latency(FILE *fp, int tsv,
 *			const struct sim_result *res)
 *	void	sim_report_sequence(FILE *fp, const struct sim_result *res)
 *	void	sim_report_hosts_header(FILE *fp, int tsv)
 *	void	sim_report_hosts(FILE *fp, int tsv,
 *			const struct sim_result *res)
 * DESCRIPTION
 *	The table has the seed's columns: client limit (the destination
 *	concurrency limit), server limit (the 421 limiter if there is one,
 *	else the server process limit), feedback style (N is the client's
 *	concurrency; one style when positive and negative are the same,
 *	else "positive,negative"), connection caching, percentage of
 *	recipients deferred, client concurrency average and standard
 *	deviation, and recipients that timed out in connect and greeting
 *	("-" for none), then the theoretical defer rate against a 421
 *	limiter and the scenario name.
 *
 *	sim_theoretical_defer_pct() is the seed's 1/(1+roundup(1/feedback))
 *	with the positive feedback evaluated at the server's concurrency
 *	limit, in percent, or -1 when the scenario has no such limiter.
 *
 *	With tsv set the same values, and more, are tab-separated with a
 *	header row of column names.
 *
 *	The latency report has a row per scenario and size class (1, 2-10,
 *	11-100, 101-1000, over 1000 recipients) with the number of messages
 *	and the 50th, 90th and 99th percentile, maximum and mean of their
 *	latency. The sequence report is described at sim_report_sequence(),
 *	the hosts' (Finch) at sim_report_hosts().
 */

#include "sim/sim.h"

#include <math.h>
#include <string.h>

static void feedback_label(char *buf, size_t len,
                           const struct core_feedback *fb)
{
    char num[24];

    snprintf(num, sizeof(num), "%g", fb->value);
    switch (fb->form) {
    case CORE_FEEDBACK_CONCURRENCY:
        snprintf(buf, len, "%s/N", num);
        break;
    case CORE_FEEDBACK_SQRT_CONCURRENCY:
        snprintf(buf, len, "%s/sqrt(N)", num);
        break;
    default:
        snprintf(buf, len, "%s", num);
        break;
    }
}

static void style_label(char *buf, size_t len, const struct sim_scenario *sc)
{
    char pos[48], neg[48];

    feedback_label(pos, sizeof(pos), &sc->params.positive);
    feedback_label(neg, sizeof(neg), &sc->params.negative);
    if (strcmp(pos, neg) == 0)
        snprintf(buf, len, "%s", pos);
    else
        snprintf(buf, len, "%s,%s", pos, neg);
}

/* The table shows the first domain's server; most scenarios have one. */
static int server_limit(const struct sim_scenario *sc)
{
    const struct sim_model *m = &sc->domains[0].model;

    return m->concurrency_limit > 0 ? m->concurrency_limit : m->process_limit;
}

double sim_theoretical_defer_pct(const struct sim_scenario *sc)
{
    int limit = sc->domains[0].model.concurrency_limit;
    double g;

    if (limit <= 0)
        return -1;
    g = core_feedback_value(&sc->params.positive, limit);
    if (g <= 0)
        return -1;
    return 100.0 / (1 + ceil(1 / g - 1e-9));
}

void sim_report_header(FILE *fp, int tsv)
{
    if (tsv) {
        fprintf(fp, "scenario\tclient_limit\tserver_limit\tfeedback\t"
                    "caching\tdeferred_pct\tconcurrency_avg\t"
                    "concurrency_stddev\ttimeouts_connect\t"
                    "timeouts_greeting\trejected\tsuspended\trecipients\t"
                    "attempts\tconnections\ttheoretical_pct\tduration_s\t"
                    "events\tconcurrency_time_avg\tconcurrency_time_stddev\t"
                    "max_incore_recipients\tincore_bound\n");
        return;
    }
    fprintf(fp, "client server  feedback connection percentage client        "
                "  timed-out in  theoretical  scenario\n"
                " limit  limit     style    caching   deferred concurrency   "
                "  connect/      defer rate\n"
                "                                                average/stddev"
                "  greeting\n");
    sim_report_footer(fp, 0);
}

static void count_or_dash(char *buf, size_t len, long n)
{
    if (n > 0)
        snprintf(buf, len, "%ld", n);
    else
        snprintf(buf, len, "-");
}

void sim_report_row(FILE *fp, int tsv, const struct sim_result *res)
{
    const struct sim_scenario *sc = res->sc;
    char style[100], tc[24], tg[24], theo[24];
    double pct = res->recipients ? 100.0 * res->deferred / res->recipients : 0;
    double th = sim_theoretical_defer_pct(sc);

    style_label(style, sizeof(style), sc);
    if (tsv) {
        fprintf(fp,
                "%s\t%d\t%d\t%s\t%s\t%.2f\t%.2f\t%.2f\t%ld\t%ld\t%ld\t%ld\t"
                "%ld\t%ld\t%ld\t%.2f\t%.1f\t%ld\t%.2f\t%.2f\t%ld\t%ld\n",
                sc->name, sc->params.concurrency_limit, server_limit(sc), style,
                sc->connection_caching ? "yes" : "no", pct,
                res->concurrency_avg, res->concurrency_stddev,
                res->timeouts_connect, res->timeouts_greeting, res->rejected,
                res->suspended, res->recipients, res->attempts,
                res->connections, th, res->duration, res->events,
                res->concurrency_time_avg, res->concurrency_time_stddev,
                res->max_incore_recipients, res->incore_bound);
        return;
    }
    count_or_dash(tc, sizeof(tc), res->timeouts_connect);
    count_or_dash(tg, sizeof(tg), res->timeouts_greeting);
    if (th < 0)
        snprintf(theo, sizeof(theo), "-");
    else
        snprintf(theo, sizeof(theo), "%.1f%%", th);
    fprintf(fp, "%6d %6d %9s %10s %10.2f %6.2f %6.2f %7s %6s %13s  %s\n",
            sc->params.concurrency_limit, server_limit(sc), style,
            sc->connection_caching ? "yes" : "no", pct, res->concurrency_avg,
            res->concurrency_stddev, tc, tg, theo, sc->name);
}

/*
 * Latency of messages by envelope size: a TSV row, or a table row, per
 * size class that has messages.
 */
void sim_report_latency(FILE *fp, int tsv, const struct sim_result *res)
{
    for (int c = 0; c < SIM_SIZE_CLASSES; c++) {
        const struct sim_latency *l = &res->latency[c];

        if (l->messages == 0)
            continue;
        if (tsv)
            fprintf(fp, "%s\t%s\t%ld\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\n",
                    res->sc->name, sim_size_class_names[c], l->messages, l->p50,
                    l->p90, l->p99, l->max, l->mean);
        else
            fprintf(fp, "%-24s %9s %8ld %9.2f %9.2f %9.2f %9.2f %9.2f\n",
                    res->sc->name, sim_size_class_names[c], l->messages, l->p50,
                    l->p90, l->p99, l->max, l->mean);
    }
}

void sim_report_latency_header(FILE *fp, int tsv)
{
    if (tsv)
        fprintf(fp, "scenario\tsize\tmessages\tp50_s\tp90_s\tp99_s\t"
                    "max_s\tmean_s\n");
    else
        fprintf(fp,
                "message latency in seconds, arrival to last recipient, "
                "by recipients per message\n"
                "%-24s %9s %8s %9s %9s %9s %9s %9s\n",
                "scenario", "size", "messages", "p50", "p90", "p99", "max",
                "mean");
}

/*
 * The order in which entries were handed to delivery, as message numbers:
 * digits without separators when every number is below 10 (the seed's
 * notation), else separated by spaces; with several domains, one line
 * each, prefixed "DOMAIN: ".
 */
void sim_report_sequence(FILE *fp, const struct sim_result *res)
{
    const struct sim_scenario *sc = res->sc;
    int compact = sc->nmessages < 10;

    for (int i = 0; i < sc->ndomains; i++) {
        const char *seq = res->sequence[i];

        if (sc->ndomains > 1)
            fprintf(fp, "%s: ", sc->domains[i].name);
        for (; *seq; seq++)
            if (!(compact && *seq == ' '))
                fputc(*seq, fp);
        fputc('\n', fp);
    }
}

void sim_report_footer(FILE *fp, int tsv)
{
    if (!tsv)
        fprintf(fp, "-------------------------------------------------------"
                    "------------------------------------\n");
}

void sim_report_hosts_header(FILE *fp, int tsv)
{
    if (tsv)
        fprintf(fp, "scenario\thost\tpref\tkind\tdelivered\tshare_pct\t"
                    "connections\tjobs_per_connection\tafter_failure\t"
                    "retry_gap_s\n");
    else
        fprintf(fp,
                "finch: per MX host, recipients delivered and their share "
                "of the destination's,\nconnections opened, jobs per "
                "connection, connections after its first failure\n"
                "%-24s %-20s %4s %4s %9s %6s %6s %8s %6s %8s\n",
                "scenario", "host", "pref", "kind", "delivered", "share",
                "conns", "jobs/con", "retry", "gap_s");
}

/* The recipients the hosts of domain i delivered. */
static long domain_delivered(const struct sim_result *res, int i)
{
    long n = 0;

    for (int k = 0; k < res->nhosts; k++)
        if (res->hosts[k].domain == i)
            n += res->hosts[k].delivered;
    return n;
}

/*
 * One row per MX host under Finch: its share of its destination's
 * delivered recipients, connections opened to it, jobs per connection,
 * connections opened after its first failure and the shortest gap from a
 * failure to the next ("-" when none followed).
 */
void sim_report_hosts(FILE *fp, int tsv, const struct sim_result *res)
{
    for (int k = 0; k < res->nhosts; k++) {
        const struct sim_host_result *h = &res->hosts[k];
        long all = domain_delivered(res, h->domain);
        double share = all ? 100.0 * h->delivered / all : 0;
        double per = h->connections ? (double)h->jobs / h->connections : 0;
        char gap[24];

        if (h->retry_gap < 0)
            snprintf(gap, sizeof(gap), "-");
        else
            snprintf(gap, sizeof(gap), "%.1f", h->retry_gap);
        fprintf(fp,
                tsv ? "%s\t%s\t%d\t%s\t%ld\t%.2f\t%ld\t%.2f\t%ld\t%s\n"
                    : "%-24s %-20s %4d %4s %9ld %5.1f%% %6ld %8.2f %6ld %8s\n",
                res->sc->name, h->name, h->pref, h->kind, h->delivered, share,
                h->connections, per, h->after_failure, gap);
    }
}
