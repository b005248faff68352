/*
 * NAME
 *	sluice-sim 1 - run scheduler scenarios in virtual time
 * SYNOPSIS
 *	sluice-sim [-c FILE] [--tsv] [--trace FILE] SCENARIO...
 * DESCRIPTION
 *	Runs each scenario file with the real core/ scheduler against the
 *	modelled servers and prints one row per scenario, in a table like
 *	the seed's or, with --tsv, as tab-separated values with a header.
 *	--trace FILE writes a CSV time series of every destination's window
 *	and busy count. -c FILE (or $SLUICE_CONFIG) is a sluice configuration
 *	read before each scenario, so that an operator can try scenarios
 *	against their own settings; without either, scenarios start from the
 *	built-in defaults: the system's configuration file is not read, so
 *	that the seed's tables come out the same everywhere. See
 *	doc/sluice-sim.1 and doc/sim.md.
 *
 *	Exit status: 0 on success, 1 when a scenario cannot be loaded (the
 *	message names the file, the line and the problem), 64 on a usage
 *	error, 73 when the trace file cannot be created.
 */

#include "sim/sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *fp)
{
    fprintf(fp, "usage: sluice-sim [-c FILE] [--tsv] [--trace FILE] "
                "SCENARIO...\n");
}

int main(int argc, char **argv)
{
    const char *trace_path = NULL;
    const char *base = getenv("SLUICE_CONFIG");
    FILE *trace = NULL;
    int tsv = 0;
    int i;

    for (i = 1; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--") == 0) {
            i++;
            break;
        } else if (strcmp(argv[i], "--tsv") == 0) {
            tsv = 1;
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
    sim_report_header(stdout, tsv);
    for (; i < argc; i++) {
        struct sim_scenario sc;
        struct sim_result res;
        char why[512];

        if (sim_scenario_load(&sc, base && *base ? base : NULL, argv[i], why,
                              sizeof(why)) < 0) {
            fflush(stdout);
            fprintf(stderr, "sluice-sim: %s\n", why);
            if (trace)
                fclose(trace);
            return 1;
        }
        sim_run(&sc, &res, trace);
        sim_report_row(stdout, tsv, &res);
        fflush(stdout);
    }
    sim_report_footer(stdout, tsv);
    if (trace && fclose(trace) != 0) {
        fprintf(stderr, "sluice-sim: writing %s: %s\n", trace_path,
                strerror(errno));
        return 73;
    }
    return 0;
}
