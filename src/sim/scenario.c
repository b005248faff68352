/*
 * NAME
 *	scenario 3 - simulator scenarios: the sim_* keys, workloads, loading
 * SYNOPSIS
 *	#include "sim/sim.h"
 *
 *	struct conf *sim_conf_create(char *why, size_t whylen)
 *	int	sim_scenario_load(struct sim_scenario *sc, const char *base,
 *			const char *path, char *why, size_t whylen)
 *	int	sim_scenario_from_conf(struct sim_scenario *sc,
 *			const struct conf *conf, const char *name, char *why,
 *			size_t whylen)
 *	void	sim_scenario_free(struct sim_scenario *sc)
 * DESCRIPTION
 *	A scenario file is a sluice configuration file: the client side
 *	uses sluice's own parameters (per-transport overrides included),
 *	the modelled world uses the sim_* keys defined here and documented
 *	in doc/sim.md. sim_scenario_load() reads the base configuration
 *	file first, if base is not NULL, then the scenario, whose settings
 *	win.
 *
 *	The workload is the file named by sim_workload (relative to the
 *	scenario's directory), one message per line:
 *	"ARRIVAL_SECONDS DOMAIN:RECIPIENTS [DOMAIN:RECIPIENTS...]", "#"
 *	comments. Without one, a single message at time 0 has
 *	sim_recipients recipients for each of sim_destinations domains
 *	d1.sim, d2.sim, ... (the seed's "one message to a virtual alias
 *	that expanded into 2000 different remote recipients").
 *
 *	The server model keys (sim_servers, sim_server_*, sim_recipient_*,
 *	sim_reject_delay, sim_syn_*) may be set per domain as
 *	sim_domain_DOMAIN_KEY, where KEY is the key without its "sim_"
 *	(sim_domain_big.test_server_process_limit): they are overrides of
 *	the "transport" sim_domain_DOMAIN.
 *
 *	Under <transport>_delivery_scheduler = finch, each domain has MX
 *	hosts (sim_mx_hosts, sim_mx_secondary_hosts, of which
 *	sim_mx_dead_hosts dead and sim_mx_slow_hosts slow by
 *	sim_mx_slow_factor; per domain as sim_domain_DOMAIN_mx_hosts...),
 *	and the client takes Finch's settings from the transport's
 *	parameters, as the daemon does (finch.c).
 *
 *	Loading checks what the type system cannot (at most as many bad
 *	servers as servers, jitter no larger than the delay, no more dead
 *	and slow hosts than hosts) and reports
 *	workload errors with the file and line. sim_scenario_free() frees
 *	what loading allocated.
 */

#include "conf/conf.h"
#include "core/core.h"
#include "sim/sim.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const struct conf_def sim_params[] = {
    {"sim_transport", CONF_STRING, "smtp", NULL, 0, 0, 0, NULL,
     "transport whose parameters the client uses"},
    {"sim_workload", CONF_STRING, "", NULL, 0, 0, 0, NULL,
     "workload file: one message per line (empty: one message)"},
    {"sim_recipients", CONF_INT, "2000", NULL, 1, 100000000, 0, NULL,
     "without a workload: recipients per destination"},
    {"sim_destinations", CONF_INT, "1", NULL, 1, 100000, 0, NULL,
     "without a workload: destinations, each with its own servers"},
    {"sim_servers", CONF_INT, "1", "_servers", 1, 1000, 0, NULL,
     "servers behind one destination address (load balancer)"},
    {"sim_bad_servers", CONF_INT, "0", "_bad_servers", 0, 1000, 0, NULL,
     "of those servers, how many fail every SMTP handshake"},
    {"sim_server_process_limit", CONF_INT, "5", "_server_process_limit", 1,
     100000, 0, NULL, "SMTP server processes per server"},
    {"sim_server_backlog", CONF_INT, "5", "_server_backlog", 0, 100000, 0, NULL,
     "established connections the kernel queues for accept(2)"},
    {"sim_server_concurrency_limit", CONF_INT, "0", "_server_concurrency_limit",
     0, 100000, 0, NULL,
     "reply 421 and disconnect above this many connections (0 = no)"},
    {"sim_server_overflow", CONF_CHOICE, "drop_syn", "_server_overflow", 0, 0,
     0, "drop_syn|drop_ack",
     "full accept queue: drop SYNs (FreeBSD) or final ACKs (Linux)"},
    {"sim_syn_retry_delay", CONF_TIME, "3s", "_syn_retry_delay", 0, 0, 's',
     NULL, "first SYN (drop_syn) or SYN-ACK (drop_ack) retransmission"},
    {"sim_syn_retries", CONF_INT, "5", "_syn_retries", 0, 100, 0, NULL,
     "SYN-ACK retransmissions before the server forgets a connection"},
    {"sim_recipient_delay", CONF_TIME, "1s", "_recipient_delay", 0, 0, 's',
     NULL, "server time per recipient"},
    {"sim_recipient_delay_jitter", CONF_TIME, "0s", "_recipient_delay_jitter",
     0, 0, 's', NULL, "each recipient's time is uniform within +/- this"},
    {"sim_reject_delay", CONF_TIME, "0s", "_reject_delay", 0, 0, 's', NULL,
     "how long a connection that ends in 421 occupies the client"},
    {"sim_connect_timeout", CONF_TIME, "30s", NULL, 0, 0, 's', NULL,
     "client: give up a TCP connection after this long"},
    {"sim_greeting_timeout", CONF_TIME, "300s", NULL, 0, 0, 's', NULL,
     "client: give up waiting for the greeting after this long"},
    {"sim_connection_caching", CONF_BOOL, "no", NULL, 0, 0, 0, NULL,
     "client: reuse connections (smtp_connection_cache_* limits)"},
    {"sim_mx_hosts", CONF_INT, "1", "_mx_hosts", 1, 64, 0, NULL,
     "finch: MX hosts of the best preference"},
    {"sim_mx_secondary_hosts", CONF_INT, "0", "_mx_secondary_hosts", 0, 63, 0,
     NULL, "finch: MX hosts of the next preference"},
    {"sim_mx_dead_hosts", CONF_INT, "0", "_mx_dead_hosts", 0, 64, 0, NULL,
     "finch: the first this many MX hosts refuse every connection"},
    {"sim_mx_slow_hosts", CONF_INT, "0", "_mx_slow_hosts", 0, 64, 0, NULL,
     "finch: the next this many take sim_mx_slow_factor times as long"},
    {"sim_mx_slow_factor", CONF_INT, "10", "_mx_slow_factor", 1, 1000, 0, NULL,
     "finch: how many times a slow host's recipient delay"},
    {"sim_seed", CONF_INT, "1", NULL, 0, 2147483647L, 0, NULL,
     "random seed; the same seed gives the same run"},
};

struct conf *sim_conf_create(char *why, size_t whylen)
{
    struct conf *conf = conf_create();

    if (conf_add_params(conf, sim_params,
                        sizeof(sim_params) / sizeof(sim_params[0]), why,
                        whylen) < 0) {
        conf_free(conf);
        return NULL;
    }
    return conf;
}

/* A domain's MX hosts (Finch): the sim_mx_* keys, or its overrides. */
static int mx_load(struct sim_mx *mx, const struct conf *conf, const char *t,
                   const char *scenario, const char *domain, char *why,
                   size_t whylen)
{
    mx->primary = (int)conf_int_named(conf, t, "sim_mx_hosts");
    mx->secondary = (int)conf_int_named(conf, t, "sim_mx_secondary_hosts");
    mx->dead = (int)conf_int_named(conf, t, "sim_mx_dead_hosts");
    mx->slow = (int)conf_int_named(conf, t, "sim_mx_slow_hosts");
    mx->slow_factor = (double)conf_int_named(conf, t, "sim_mx_slow_factor");
    if (mx->primary + mx->secondary > 64 ||
        mx->dead + mx->slow > mx->primary + mx->secondary) {
        snprintf(why, whylen,
                 "%s: %s: sim_mx_dead_hosts and sim_mx_slow_hosts (%d) are "
                 "more than the MX hosts (%d), or those more than 64",
                 scenario, domain, mx->dead + mx->slow,
                 mx->primary + mx->secondary);
        return -1;
    }
    return 0;
}

/* The server model of a domain: the sim_* keys, or its overrides. */
static int model_load(struct sim_model *m, struct sim_mx *mx,
                      const struct conf *conf, const char *scenario,
                      const char *domain, char *why, size_t whylen)
{
    char t[96];

    snprintf(t, sizeof(t), "sim_domain_%s", domain);
    m->servers = (int)conf_int_named(conf, t, "sim_servers");
    m->bad_servers = (int)conf_int_named(conf, t, "sim_bad_servers");
    m->process_limit = (int)conf_int_named(conf, t, "sim_server_process_limit");
    m->backlog = (int)conf_int_named(conf, t, "sim_server_backlog");
    m->concurrency_limit =
        (int)conf_int_named(conf, t, "sim_server_concurrency_limit");
    m->overflow =
        strcmp(conf_str_named(conf, t, "sim_server_overflow"), "drop_ack") == 0
            ? SIM_OVERFLOW_DROP_ACK
            : SIM_OVERFLOW_DROP_SYN;
    m->syn_retry_delay = conf_time_ms_named(conf, t, "sim_syn_retry_delay");
    m->syn_retries = (int)conf_int_named(conf, t, "sim_syn_retries");
    m->recipient_delay = conf_time_ms_named(conf, t, "sim_recipient_delay");
    m->recipient_delay_jitter =
        conf_time_ms_named(conf, t, "sim_recipient_delay_jitter");
    m->reject_delay = conf_time_ms_named(conf, t, "sim_reject_delay");
    if (mx_load(mx, conf, t, scenario, domain, why, whylen) < 0)
        return -1;
    if (m->bad_servers > m->servers) {
        snprintf(why, whylen,
                 "%s: %s: sim_bad_servers (%d) is more than sim_servers (%d)",
                 scenario, domain, m->bad_servers, m->servers);
        return -1;
    }
    if (m->recipient_delay_jitter > m->recipient_delay) {
        snprintf(why, whylen,
                 "%s: %s: sim_recipient_delay_jitter is larger than "
                 "sim_recipient_delay",
                 scenario, domain);
        return -1;
    }
    return 0;
}

static int domain_find(struct sim_scenario *sc, const char *name, size_t len,
                       int *cap)
{
    for (int i = 0; i < sc->ndomains; i++)
        if (strlen(sc->domains[i].name) == len &&
            memcmp(sc->domains[i].name, name, len) == 0)
            return i;
    if (sc->ndomains == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        sc->domains = xrealloc(sc->domains, *cap * sizeof(*sc->domains));
    }
    memset(&sc->domains[sc->ndomains], 0, sizeof(sc->domains[0]));
    memcpy(sc->domains[sc->ndomains].name, name, len);
    return sc->ndomains++;
}

/* One "DOMAIN:COUNT" word of a workload line. */
static int workload_part(struct sim_scenario *sc, const char *word,
                         struct sim_part *part, int *cap, const char **err)
{
    const char *colon = strchr(word, ':');
    char *end;
    size_t len;

    if (colon == NULL) {
        *err = "expected DOMAIN:RECIPIENTS";
        return -1;
    }
    len = (size_t)(colon - word);
    if (len == 0 || len >= sizeof(sc->domains[0].name)) {
        *err = "a domain name must have 1 to 63 characters";
        return -1;
    }
    for (size_t i = 0; i < len; i++)
        if (!(islower((unsigned char)word[i]) ||
              isdigit((unsigned char)word[i]) || word[i] == '.' ||
              word[i] == '-')) {
            *err = "a domain name has lower-case letters, digits, '.', '-'";
            return -1;
        }
    errno = 0;
    part->rcpts = strtol(colon + 1, &end, 10);
    if (errno || *end || end == colon + 1 || part->rcpts < 1 ||
        part->rcpts > 10000000) {
        *err = "expected a number of recipients from 1 to 10000000";
        return -1;
    }
    part->domain = domain_find(sc, word, len, cap);
    return 0;
}

static int workload_line(struct sim_scenario *sc, char *line, int *dcap,
                         int *mcap, const char **err)
{
    struct sim_message *m;
    char *word, *save = NULL, *end;
    double arrival;

    if ((word = strtok_r(line, " \t\r\n", &save)) == NULL || *word == '#')
        return 0;
    errno = 0;
    arrival = strtod(word, &end);
    if (errno || *end || !(arrival >= 0) || arrival > 1e9) {
        *err = "expected the arrival time in seconds, then DOMAIN:RECIPIENTS";
        return -1;
    }
    if (sc->nmessages == *mcap) {
        *mcap = *mcap ? *mcap * 2 : 64;
        sc->messages = xrealloc(sc->messages, *mcap * sizeof(*sc->messages));
    }
    m = &sc->messages[sc->nmessages];
    memset(m, 0, sizeof(*m));
    m->arrival = (core_time_t)(arrival * 1000 + 0.5);
    while ((word = strtok_r(NULL, " \t\r\n", &save)) != NULL && *word != '#') {
        m->parts = xrealloc(m->parts, (m->nparts + 1) * sizeof(*m->parts));
        if (workload_part(sc, word, &m->parts[m->nparts], dcap, err) < 0) {
            free(m->parts);
            return -1;
        }
        m->rcpts += m->parts[m->nparts++].rcpts;
    }
    if (m->nparts == 0) {
        *err = "a message needs at least one DOMAIN:RECIPIENTS";
        return -1;
    }
    sc->nmessages++;
    return 0;
}

static int workload_load(struct sim_scenario *sc, const char *path, char *why,
                         size_t whylen)
{
    FILE *fp = fopen(path, "r");
    char line[4096];
    int lineno = 0, dcap = 0, mcap = 0;
    const char *err = NULL;

    if (fp == NULL) {
        snprintf(why, whylen, "sim_workload: cannot open %s: %s", path,
                 strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), fp) != NULL) {
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(fp))
            err = "line too long (4095 characters at most)";
        else if (workload_line(sc, line, &dcap, &mcap, &err) == 0)
            continue;
        snprintf(why, whylen, "%s, line %d: %s", path, lineno, err);
        fclose(fp);
        return -1;
    }
    fclose(fp);
    if (sc->nmessages == 0) {
        snprintf(why, whylen, "%s: the workload has no message", path);
        return -1;
    }
    return 0;
}

/* Without a workload: one message for sim_destinations domains. */
static void workload_default(struct sim_scenario *sc, const struct conf *conf)
{
    long rcpts = conf_int_named(conf, NULL, "sim_recipients");
    struct sim_message *m;

    sc->ndomains = (int)conf_int_named(conf, NULL, "sim_destinations");
    sc->domains = xcalloc(1, sc->ndomains * sizeof(*sc->domains));
    sc->messages = m = xcalloc(1, sizeof(*m));
    sc->nmessages = 1;
    m->parts = xcalloc(1, sc->ndomains * sizeof(*m->parts));
    m->nparts = sc->ndomains;
    for (int i = 0; i < sc->ndomains; i++) {
        snprintf(sc->domains[i].name, sizeof(sc->domains[i].name), "d%d.sim",
                 i + 1);
        m->parts[i].domain = i;
        m->parts[i].rcpts = rcpts;
        m->rcpts += rcpts;
    }
}

/* Finch's settings, from the transport's parameters as the daemon's. */
static void finch_load(struct sim_finch *f, const struct conf *conf,
                       const char *t)
{
    f->on = strcmp(conf_str(conf, t, CONF_default_delivery_scheduler),
                   "finch") == 0;
    f->limits.max_message_concurrency =
        (int)conf_int(conf, t, CONF_max_message_concurrency);
    f->limits.scale_max_concurrency =
        (int)conf_int(conf, t, CONF_scale_max_concurrency);
    f->backlog = (int)conf_int(conf, t, CONF_smtp_connection_backlog_threshold);
    f->process_limit = (int)conf_int(conf, t, CONF_default_process_limit);
    f->host_limit =
        (int)conf_int(conf, t, CONF_default_destination_concurrency_limit);
    f->session_limit = (int)conf_int(conf, t, CONF_smtp_mx_session_limit);
    if (f->session_limit <= 0)
        f->session_limit = 1000;
    f->active_max_age =
        conf_time_ms(conf, t, CONF_smtp_active_connection_max_age);
    f->idle_max_age = conf_time_ms(conf, t, CONF_smtp_idle_connection_max_age);
    f->retry = conf_time_ms(conf, NULL, CONF_minimal_backoff_time);
    f->record_lifetime = conf_time_ms(conf, NULL, CONF_destdb_record_lifetime);
}

static int scenario_build(struct sim_scenario *sc, const struct conf *conf,
                          const char *name, const char *dir, char *why,
                          size_t whylen)
{
    const char *workload = conf_str_named(conf, NULL, "sim_workload");

    memset(sc, 0, sizeof(*sc));
    snprintf(sc->name, sizeof(sc->name), "%s", name);
    snprintf(sc->transport, sizeof(sc->transport), "%s",
             conf_str_named(conf, NULL, "sim_transport"));
    conf_core_params(conf, sc->transport, &sc->params);
    sc->message_rcpt_limit =
        conf_int(conf, NULL, CONF_qmgr_message_recipient_limit);
    sc->message_rcpt_minimum =
        conf_int(conf, NULL, CONF_qmgr_message_recipient_minimum);
    if (*workload) {
        char path[1024];

        if (*workload == '/' || dir == NULL)
            snprintf(path, sizeof(path), "%s", workload);
        else
            snprintf(path, sizeof(path), "%s/%s", dir, workload);
        if (workload_load(sc, path, why, whylen) < 0)
            return -1;
    } else {
        workload_default(sc, conf);
    }
    for (int i = 0; i < sc->ndomains; i++)
        if (model_load(&sc->domains[i].model, &sc->domains[i].mx, conf, name,
                       sc->domains[i].name, why, whylen) < 0)
            return -1;
    finch_load(&sc->finch, conf, sc->transport);
    sc->connect_timeout = conf_time_ms_named(conf, NULL, "sim_connect_timeout");
    sc->greeting_timeout =
        conf_time_ms_named(conf, NULL, "sim_greeting_timeout");
    sc->connection_caching =
        conf_bool_named(conf, NULL, "sim_connection_caching");
    sc->cache_time_limit =
        conf_time_ms(conf, NULL, CONF_smtp_connection_cache_time_limit);
    sc->reuse_time_limit =
        conf_time_ms(conf, NULL, CONF_smtp_connection_reuse_time_limit);
    sc->reuse_count_limit =
        (int)conf_int(conf, NULL, CONF_smtp_connection_reuse_count_limit);
    sc->seed = (uint64_t)conf_int_named(conf, NULL, "sim_seed");
    return 0;
}

int sim_scenario_from_conf(struct sim_scenario *sc, const struct conf *conf,
                           const char *name, char *why, size_t whylen)
{
    if (scenario_build(sc, conf, name, NULL, why, whylen) < 0) {
        sim_scenario_free(sc);
        return -1;
    }
    return 0;
}

void sim_scenario_free(struct sim_scenario *sc)
{
    for (int i = 0; i < sc->nmessages; i++)
        free(sc->messages[i].parts);
    free(sc->messages);
    free(sc->domains);
    sc->messages = NULL;
    sc->domains = NULL;
    sc->nmessages = sc->ndomains = 0;
}

int sim_scenario_load(struct sim_scenario *sc, const char *base,
                      const char *path, char *why, size_t whylen)
{
    struct conf *conf = sim_conf_create(why, whylen);
    const char *slash = strrchr(path, '/');
    char name[128], dir[1024];
    char *dot;
    int ret;

    memset(sc, 0, sizeof(*sc));
    if (conf == NULL)
        return -1;
    if ((base && conf_load(conf, base, 1, why, whylen) < 0) ||
        conf_load(conf, path, 1, why, whylen) < 0) {
        conf_free(conf);
        return -1;
    }
    snprintf(name, sizeof(name), "%s", slash ? slash + 1 : path);
    if ((dot = strrchr(name, '.')) != NULL && dot != name)
        *dot = 0;
    if (slash)
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    else
        snprintf(dir, sizeof(dir), ".");
    ret = scenario_build(sc, conf, name, dir, why, whylen);
    if (ret < 0)
        sim_scenario_free(sc);
    conf_free(conf);
    return ret;
}
