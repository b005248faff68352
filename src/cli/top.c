/*
 * NAME
 *	top 3 - "sluice top": sluice status, refreshing in the terminal
 * SYNOPSIS
 *	sluice [-c FILE] top [-d SECONDS] [-n ITERATIONS]
 * DESCRIPTION
 *	Shows what `sluice status` shows, asked again every SECONDS
 *	(default 2, at least 0.1) until interrupted or ITERATIONS times:
 *	the screen is cleared before each view (ANSI "home" and "erase"),
 *	and as many destinations are asked for as the terminal has rows
 *	(50 when standard output is not a terminal). Destinations come
 *	busiest first, by entries waiting and in flight: the backlog.
 *
 *	Exit status: 0 after ITERATIONS views; 1 when the daemon did not
 *	answer; 64 on a usage error; 69 when no sluiced runs on the queue
 *	(at the first view, or later when it stops).
 */

#include "cli/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

CLI_COMMAND(cli_top_command, "top", "[-d SECONDS] [-n ITERATIONS]",
            "sluice status, refreshed in the terminal, busiest first", top_run);

/* Destinations that fit: the terminal's rows less the header lines. */
static long top_rows(void)
{
    struct winsize ws;

    if (!isatty(STDOUT_FILENO) || ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) < 0 ||
        ws.ws_row == 0)
        return 50;
    return ws.ws_row > 12 ? ws.ws_row - 10 : 2;
}

static int top_run(const struct cli *cli, int argc, char **argv)
{
    double delay = 2;
    long iterations = 0; /* 0: until interrupted */
    char *end, request[64];
    int ch, rc;

    optind = 1;
    while ((ch = getopt(argc, argv, "+d:n:")) != -1) {
        switch (ch) {
        case 'd':
            delay = strtod(optarg, &end);
            if (*end || end == optarg || !(delay >= 0.1 && delay <= 3600)) {
                fprintf(stderr, "sluice: top: -d: not a number of seconds "
                                "from 0.1 to 3600\n");
                return CLI_EXIT_USAGE;
            }
            break;
        case 'n':
            iterations = strtol(optarg, &end, 10);
            if (*end || end == optarg || iterations < 1) {
                fprintf(stderr, "sluice: top: -n: not a positive count\n");
                return CLI_EXIT_USAGE;
            }
            break;
        default:
            cli_option_error("top", ch);
            fprintf(stderr, "usage: sluice top %s\n", cli_top_command.args);
            return CLI_EXIT_USAGE;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "usage: sluice top %s\n", cli_top_command.args);
        return CLI_EXIT_USAGE;
    }
    for (long i = 0; iterations == 0 || i < iterations; i++) {
        struct timespec ts = {(time_t)delay,
                              (long)((delay - (time_t)delay) * 1e9)};
        time_t now = time(NULL);
        char stamp[32];

        if (i > 0)
            nanosleep(&ts, NULL);
        snprintf(request, sizeof(request), "status --destinations %ld",
                 top_rows());
        strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
        printf("\033[H\033[2Jsluice top - %s, every %gs\n", stamp, delay);
        fflush(stdout);
        if ((rc = cli_control(cli, "top", request)) != CLI_EXIT_OK)
            return rc;
        fflush(stdout);
    }
    return CLI_EXIT_OK;
}
