/*
 * NAME
 *	route 3 - "sluice route": show how addresses are routed
 * SYNOPSIS
 *	#include "cli/cli.h"
 *
 *	extern const struct cli_command cli_route_command;
 * DESCRIPTION
 *	sluice route [-c FILE] [ADDRESS...]
 *
 *	Loads the routing table as the daemon would (transports,
 *	default_transport, relayhost, transport_maps) and prints, for each
 *	ADDRESS, one line
 *
 *		ADDRESS TRANSPORT NEXTHOP KEY
 *
 *	where NEXTHOP is written as in the transport table (example.com,
 *	[10.0.0.1]:2525, or the text of a discard or error transport) and
 *	KEY is the destination queue the recipient would join. Fields are
 *	separated by one space; a field that is empty or holds white
 *	space, '"', '\\' or a control character is printed in double quotes
 *	with those escaped (\", \\, \xHH), so that every line splits into
 *	exactly four fields. Without ADDRESS it only checks the table,
 *	like "postmap" would before a reload.
 *
 *	Exit status: 0; 1 when the configuration or the routing table is
 *	bad (nothing printed) or an ADDRESS cannot be routed (the others
 *	are still printed), with "sluice: route: REASON" on stderr; 64 on a
 *	usage error.
 */

#include "cli/cli.h"

#include "conf/conf.h"
#include "route/route.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

CLI_COMMAND(cli_route_command, "route", "[-c FILE] [ADDRESS...]",
            "show the transport, next hop and queue of addresses", route_run);

static int route_usage(void)
{
    fprintf(stderr, "usage: sluice %s %s\n", cli_route_command.name,
            cli_route_command.args);
    return CLI_EXIT_USAGE;
}

/* One field, quoted when it would not read back as one word. */
static void field_print(const char *text, int last)
{
    const unsigned char *cp;
    int quote = (*text == 0);

    for (cp = (const unsigned char *)text; *cp && !quote; cp++)
        if (*cp <= ' ' || *cp == 0x7f || *cp == '"' || *cp == '\\')
            quote = 1;
    if (!quote) {
        fputs(text, stdout);
    } else {
        putchar('"');
        for (cp = (const unsigned char *)text; *cp; cp++) {
            if (*cp == '"' || *cp == '\\')
                printf("\\%c", *cp);
            else if (*cp < ' ' || *cp == 0x7f)
                printf("\\x%02x", *cp);
            else
                putchar(*cp);
        }
        putchar('"');
    }
    putchar(last ? '\n' : ' ');
}

static int route_print(const struct route_table *t, const char *address)
{
    struct route_result r;
    char nexthop[ROUTE_KEY_MAX + 1];
    char why[1024];

    if (route_resolve(t, address, &r, why, sizeof(why)) < 0) {
        fflush(stdout); /* keep the order of the lines on a tty */
        fprintf(stderr, "sluice: route: %s\n", why);
        return CLI_EXIT_FAIL;
    }
    route_nexthop_format(&r, nexthop, sizeof(nexthop));
    field_print(r.address, 0);
    field_print(r.transport, 0);
    field_print(nexthop, 0);
    field_print(r.key.cache, 1);
    return CLI_EXIT_OK;
}

static int route_run(const struct cli *cli, int argc, char **argv)
{
    const char *path = cli->config_path;
    struct route_table *t;
    struct conf *conf;
    char why[1024];
    int status = CLI_EXIT_OK;
    int ch;
    int i;

    optind = 1; /* see config.c */
    opterr = 0;
    while ((ch = getopt(argc, argv, "+:c:")) != -1) {
        switch (ch) {
        case 'c':
            path = optarg;
            break;
        default:
            cli_option_error("route", ch);
            return route_usage();
        }
    }
    if ((conf = cli_conf_open(path)) == NULL)
        return CLI_EXIT_FAIL;
    t = route_load(conf, why, sizeof(why));
    conf_free(conf);
    if (t == NULL) {
        fprintf(stderr, "sluice: route: %s\n", why);
        return CLI_EXIT_FAIL;
    }
    for (i = optind; i < argc; i++)
        if (route_print(t, argv[i]) != CLI_EXIT_OK)
            status = CLI_EXIT_FAIL;
    route_free(t);
    return status;
}
