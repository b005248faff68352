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

static int server_limit(const struct sim_scenario *sc)
{
    return sc->concurrency_limit > 0 ? sc->concurrency_limit
                                     : sc->process_limit;
}

double sim_theoretical_defer_pct(const struct sim_scenario *sc)
{
    double g;

    if (sc->concurrency_limit <= 0)
        return -1;
    g = core_feedback_value(&sc->params.positive, sc->concurrency_limit);
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
                    "events\n");
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
                "%ld\t%ld\t%ld\t%.2f\t%.1f\t%ld\t%.2f\t%.2f\n",
                sc->name, sc->params.concurrency_limit, server_limit(sc), style,
                sc->connection_caching ? "yes" : "no", pct,
                res->concurrency_avg, res->concurrency_stddev,
                res->timeouts_connect, res->timeouts_greeting, res->rejected,
                res->suspended, res->recipients, res->attempts,
                res->connections, th, res->duration, res->events,
                res->concurrency_time_avg, res->concurrency_time_stddev);
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

void sim_report_footer(FILE *fp, int tsv)
{
    if (!tsv)
        fprintf(fp, "-------------------------------------------------------"
                    "------------------------------------\n");
}
