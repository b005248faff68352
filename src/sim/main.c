/*
 * NAME
 *	sluice-sim 1 - run scheduler scenarios in virtual time
 * SYNOPSIS
 *	sluice-sim [-c FILE] [--tsv | --latency | --sequence | --hosts]
 *		[--trace FILE] SCENARIO...
 * DESCRIPTION
 *	Runs each scenario file with the real core/ scheduler against the
 *	modelled servers and prints one row per scenario, in a table like
 *	the seed's, followed by message latency by size when a scenario has
 *	a workload of several messages. --tsv prints the table as
 *	tab-separated values with a header, --latency the latency report
 *	so, --sequence the order in which entries were handed to delivery,
 *	--hosts the report per MX host of scenarios under Finch's delivery
 *	scheduler (printed after the table otherwise).
 *	--trace FILE writes a CSV time series of every destination's window
 *	and busy count. -c FILE (or $SLUICE_CONFIG) is a sluice
 *	configuration read before each scenario, so that an operator can
 *	try scenarios against their own settings; without either, scenarios
 *	start from the built-in defaults: the system's configuration file is
 *	not read, so that the seed's tables come out the same everywhere.
 *	See doc/sluice-sim.1 and doc/sim.md.
 *
 *	Exit status: 0 on success, 1 when a scenario cannot be loaded (the
 *	message names the file, the line and the problem), 64 on a usage
 *	error, 73 when the trace file cannot be created.
 */

#include "sim/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum output {
    OUT_TABLE,
    OUT_TSV,
    OUT_LATENCY,
    OUT_SEQUENCE,
    OUT_HOSTS,
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: sluice-sim [-c FILE] [--tsv | --latency | --sequence "
                "| --hosts] [--trace FILE] SCENARIO...\n");
}

static int run_all(char **paths, int count, const char *base, FILE *trace,
                   enum output out)
{
    char *later = NULL, *hosts_text = NULL;
    size_t later_len = 0, hosts_len = 0;
    FILE *latency = NULL, *hosts = NULL;
    int workloads = 0, finch = 0;

    if (out == OUT_TABLE || out == OUT_TSV)
        sim_report_header(stdout, out == OUT_TSV);
    else if (out == OUT_LATENCY)
        sim_report_latency_header(stdout, 1);
    else if (out == OUT_HOSTS)
        sim_report_hosts_header(stdout, 1);
    if (out == OUT_TABLE &&
        ((latency = open_memstream(&later, &later_len)) == NULL ||
         (hosts = open_memstream(&hosts_text, &hosts_len)) == NULL)) {
        fprintf(stderr, "sluice-sim: out of memory\n");
        return 75;
    }
    for (int i = 0; i < count; i++) {
        struct sim_scenario sc;
        struct sim_result res;
        char why[512];

        if (sim_scenario_load(&sc, base, paths[i], why, sizeof(why)) < 0) {
            fflush(stdout);
            fprintf(stderr, "sluice-sim: %s\n", why);
            if (latency) {
                fclose(latency);
                free(later);
            }
            if (hosts) {
                fclose(hosts);
                free(hosts_text);
            }
            return 1;
        }
        sim_run(&sc, &res, trace);
        switch (out) {
        case OUT_TABLE:
        case OUT_TSV:
            sim_report_row(stdout, out == OUT_TSV, &res);
            if (latency && sc.nmessages > 1) {
                sim_report_latency(latency, 0, &res);
                workloads++;
            }
            if (hosts && res.nhosts > 0) {
                sim_report_hosts(hosts, 0, &res);
                finch++;
            }
            break;
        case OUT_HOSTS:
            sim_report_hosts(stdout, 1, &res);
            break;
        case OUT_LATENCY:
            sim_report_latency(stdout, 1, &res);
            break;
        case OUT_SEQUENCE:
            sim_report_sequence(stdout, &res);
            break;
        }
        fflush(stdout);
        sim_result_free(&res);
        sim_scenario_free(&sc);
    }
    if (out == OUT_TABLE || out == OUT_TSV)
        sim_report_footer(stdout, out == OUT_TSV);
    if (latency) {
        fclose(latency);
        if (workloads) {
            printf("\n");
            sim_report_latency_header(stdout, 0);
            fwrite(later, 1, later_len, stdout);
        }
        free(later);
    }
    if (hosts) {
        fclose(hosts);
        if (finch) {
            printf("\n");
            sim_report_hosts_header(stdout, 0);
            fwrite(hosts_text, 1, hosts_len, stdout);
        }
        free(hosts_text);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *trace_path = NULL;
    const char *base = getenv("SLUICE_CONFIG");
    enum output out = OUT_TABLE;
    FILE *trace = NULL;
    int i, ret;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--tsv") == 0) {
            out = OUT_TSV;
        } else if (strcmp(argv[i], "--latency") == 0) {
            out = OUT_LATENCY;
        } else if (strcmp(argv[i], "--sequence") == 0) {
            out = OUT_SEQUENCE;
        } else if (strcmp(argv[i], "--hosts") == 0) {
            out = OUT_HOSTS;
        } else if (strcmp(argv[i], "-c") == 0 && i + 1 < argc) {
            base = argv[++i];
        } else if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
            trace_path = argv[++i];
        } else if (strcmp(argv[i], "-h") == 0 ||
                   strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "sluice-sim: unknown option \"%s\"\n", argv[i]);
            usage(stderr);
            return 64;
        }
    }
    if (i >= argc) {
        usage(stderr);
        return 64;
    }
    if (trace_path) {
        if ((trace = fopen(trace_path, "w")) == NULL) {
            fprintf(stderr, "sluice-sim: cannot create %s: %s\n", trace_path,
                    strerror(errno));
            return 73;
        }
        fprintf(trace, "scenario,time,destination,window,busy\n");
    }
    ret = run_all(argv + i, argc - i, base && *base ? base : NULL, trace, out);
    if (trace && fclose(trace) != 0 && ret == 0) {
        fprintf(stderr, "sluice-sim: writing %s: %s\n", trace_path,
                strerror(errno));
        return 73;
    }
    return ret;
}
