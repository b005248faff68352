/*
 * NAME
 *	config 3 - the configuration as sluiced takes it
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	struct conf *daemon_conf_create(void)
 *	struct conf *daemon_conf_open(const char *opt_path, char *why,
 *			size_t whylen)
 *	void	daemon_spool_config(const struct conf *conf,
 *			struct spool_config *cf)
 *	int	daemon_config_load(const char *opt_path, struct daemon_config *cf,
 *			conf_warn_fn *warn, void *ctx, char *why, size_t whylen)
 *	void	daemon_config_free(struct daemon_config *cf)
 *	void	daemon_smtpd_params(const struct conf *conf,
 *			const char *queue_directory, struct smtpd_params *p)
 *	char	*daemon_dns_servers(const struct conf *conf)
 *	int	daemon_dkim_signs(const struct conf *conf)
 *	int	daemon_dkim_load(const struct conf *conf,
 *			struct dkim_keys **keys, char *why, size_t whylen)
 * DESCRIPTION
 *	One piece of code decides whether a configuration is good, so that
 *	"sluice config" and "sluice reload" refuse exactly what sluiced
 *	refuses at start and at reload.
 *
 *	daemon_conf_create() is conf_create() with the defaults that are
 *	known only at run time: myhostname defaults to this system's name
 *	(util_host_name(): gethostname(), then the canonical name when that
 *	is not qualified), or "localhost" when that name could not go into
 *	EHLO. Every program that reads the configuration starts here, so
 *	that $myhostname means the same everywhere.
 *
 *	daemon_config_load() reads the file conf_path(opt_path) chooses and
 *	checks, in order, stopping at the first error (returned as -1 with
 *	a complete message in why, the configuration not kept):
 *	- every parameter's value (conf_load());
 *	- the routing table it names (route_load());
 *	- myhostname and every transport's smtp_helo_name (or its
 *	  <transport>_helo_name override): a domain or an address literal
 *	  (smtp_helo_name_valid()), never empty, since every real receiver
 *	  answers 501 to an empty or malformed EHLO;
 *	- the SMTP server's parameters (smtpd_params_check(): network and
 *	  domain lists, smtpd_listen syntax);
 *	- http_listen syntax (ops_http_check());
 *	- dns_servers (dns_servers_check());
 *	- scheduler_rules, when set, and that every smtp, lmtp or agent
 *	  transport whose delivery_scheduler is zmailer has a clause with a
 *	  command for its channel in it (conf_rules_load(), decision 116),
 *	  and every transport of the agent type, whatever its scheduler, a
 *	  clause whose command is an external program (decision 129); the
 *	  rules are kept in cf->rules for the queue manager (its agents and
 *	  its zmailer threads, decisions 125 and 129);
 *	- with a transport of the agent type, in a process that is or was
 *	  root: agent_user exists, is not root and has not mail_owner's
 *	  uid (the spawner would refuse every agent, decision 134);
 *	- the SMTP client's TLS: its CA and certificate files and the
 *	  policy table (qmgr_tls_load(), kept in cf->tls);
 *	- with dkim_signing_table set, the DKIM SigningTable, KeyTable and
 *	  every key they name (dkim_keys_load(), kept in cf->dkim).
 *	It then calls warn, once per problem that does not stop sluiced,
 *	with a complete message: each unknown parameter in the file (see
 *	conf/unknown.c), a myhostname that is not fully qualified, and
 *	settings that make no sense together:
 *	- minimal_backoff_time longer than maximal_backoff_time;
 *	- bounce_queue_lifetime longer than maximal_queue_lifetime;
 *	- delay_warning_time not shorter than maximal_queue_lifetime (no
 *	  delay notice could ever go out);
 *	- an initial_destination_concurrency above the transport's
 *	  destination concurrency limit;
 *	- qmgr_message_recipient_minimum above qmgr_message_recipient_limit;
 *	- queue_minfree below 1.5 times message_size_limit (Postfix's own
 *	  warning: one large message could fill what is left);
 *	- smtp_connection_cache_time_limit longer than
 *	  smtp_connection_reuse_time_limit, per transport;
 *	The unknown-parameter warnings come even when a later check fails.
 *	daemon_config_free() frees what a load kept.
 *
 *	daemon_dkim_signs() says whether dkim_signing_table names a table;
 *	daemon_dkim_load() then loads the tables and keys (dkim/), for the
 *	daemon and for "sluice import", and returns 0 (*keys NULL when
 *	nothing is signed) or -1 with the reason.
 *
 *	daemon_smtpd_params() fills the SMTP server's parameters from conf;
 *	strings point into conf. The DKIM keys (p->dkim) are the caller's
 *	to set: NULL here. daemon_dns_servers() returns dns_servers as
 *	the comma-separated list c-ares wants (malloc'd).
 */

#include "daemon/daemon.h"

#include "cluster/cluster.h"
#include "conf/conf.h"
#include "dkim/dkim.h"
#include "dns/dns.h"
#include "ingress/ingress.h"
#include "ops/ops.h"
#include "qmgr/qmgr.h"
#include "route/route.h"
#include "smtp/smtp.h"
#include "spool/spool.h"
#include "util/util.h"

#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NAME_BYTES 256

struct conf *daemon_conf_create(void)
{
    struct conf *conf = conf_create();
    char host[NAME_BYTES];
    char why[512];

    util_host_name(host, sizeof(host));
    if (!smtp_helo_name_valid(host))
        snprintf(host, sizeof(host), "localhost");
    if (conf_default_set(conf, "myhostname", host, why, sizeof(why)) < 0)
        abort(); /* a string parameter takes any text */
    return conf;
}

struct conf *daemon_conf_open(const char *opt_path, char *why, size_t whylen)
{
    struct conf *conf = daemon_conf_create();
    const char *path;
    int must_exist;

    path = conf_path(opt_path, &must_exist);
    if (conf_load(conf, path, must_exist, why, whylen) < 0) {
        conf_free(conf);
        return NULL;
    }
    return conf;
}

void daemon_spool_config(const struct conf *conf, struct spool_config *cf)
{
    cf->queue_directory = conf_str(conf, NULL, CONF_queue_directory);
    cf->map_size = (uint64_t)conf_int(conf, NULL, CONF_queue_map_size);
    cf->map_size_limit =
        (uint64_t)conf_int(conf, NULL, CONF_queue_map_size_limit);
}

void daemon_smtpd_params(const struct conf *conf, const char *queue_directory,
                         struct smtpd_params *p)
{
    memset(p, 0, sizeof(*p));
    p->listen = conf_str(conf, NULL, CONF_smtpd_listen);
    p->hostname = conf_str(conf, NULL, CONF_myhostname);
    p->mynetworks = conf_str(conf, NULL, CONF_mynetworks);
    p->relay_domains = conf_str(conf, NULL, CONF_relay_domains);
    p->queue_directory = queue_directory;
    p->size_limit = (uint64_t)conf_int(conf, NULL, CONF_message_size_limit);
    p->queue_minfree = (uint64_t)conf_int(conf, NULL, CONF_queue_minfree);
    p->recipient_limit = conf_int(conf, NULL, CONF_smtpd_recipient_limit);
    p->connection_limit =
        conf_int(conf, NULL, CONF_smtpd_client_connection_count_limit);
    p->exempt = conf_str(conf, NULL, CONF_smtpd_client_event_limit_exceptions);
    p->error_limit = conf_int(conf, NULL, CONF_smtpd_hard_error_limit);
    p->line_limit = conf_int(conf, NULL, CONF_line_length_limit);
    p->timeout_ms = (long)conf_time_ms(conf, NULL, CONF_smtpd_timeout);
    p->stress_timeout_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_stress_timeout);
    p->per_record_deadline =
        conf_bool(conf, NULL, CONF_smtpd_per_record_deadline);
    p->in_flow_delay_ms = (long)conf_time_ms(conf, NULL, CONF_in_flow_delay);
    p->active_limit = conf_int(conf, NULL, CONF_qmgr_message_active_limit);
    p->backlog_limit = conf_int(conf, NULL, CONF_in_flow_backlog_limit);
    p->hopcount_limit = conf_int(conf, NULL, CONF_hopcount_limit);
    p->junk_limit = conf_int(conf, NULL, CONF_smtpd_junk_command_limit);
    p->memory_limit = (uint64_t)conf_int(conf, NULL, CONF_smtpd_memory_limit);
    p->staging_threshold =
        (uint64_t)conf_int(conf, NULL, CONF_smtpd_staging_threshold);
    p->add_missing_headers =
        conf_bool(conf, NULL, CONF_always_add_missing_headers);
    p->strip_chars = conf_str(conf, NULL, CONF_message_strip_characters);
    p->bare_newline = conf_str(conf, NULL, CONF_smtpd_forbid_bare_newline);
    p->bare_exempt =
        conf_str(conf, NULL, CONF_smtpd_forbid_bare_newline_exclusions);
    p->bare_code =
        conf_int(conf, NULL, CONF_smtpd_forbid_bare_newline_reject_code);
    p->tls_cert_file = conf_str(conf, NULL, CONF_smtpd_tls_cert_file);
    p->tls_key_file = conf_str(conf, NULL, CONF_smtpd_tls_key_file);
    p->tls_chain_files = conf_str(conf, NULL, CONF_smtpd_tls_chain_files);
    p->tls_level = conf_str(conf, NULL, CONF_smtpd_tls_security_level);
    p->tls_wrappermode = conf_bool(conf, NULL, CONF_smtpd_tls_wrappermode);
    p->tls_wrapper_listen = conf_str(conf, NULL, CONF_smtpd_tls_wrapper_listen);
    p->tls_received_header =
        conf_bool(conf, NULL, CONF_smtpd_tls_received_header);
    p->starttls_timeout_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_starttls_timeout);
    p->dkim_hosts = conf_str(conf, NULL, CONF_dkim_internal_hosts);
    p->sasl_auth_enable = conf_bool(conf, NULL, CONF_smtpd_sasl_auth_enable);
    p->sasl_type = conf_str(conf, NULL, CONF_smtpd_sasl_type);
    p->sasl_path = conf_str(conf, NULL, CONF_smtpd_sasl_path);
    p->sasl_timeout_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_sasl_service_timeout);
    p->tls_auth_only = conf_bool(conf, NULL, CONF_smtpd_tls_auth_only);
    p->sasl_auth_header =
        conf_bool(conf, NULL, CONF_smtpd_sasl_authenticated_header);
    p->sasl_delay_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_sasl_failure_delay);
    p->sasl_delay_limit_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_sasl_failure_delay_limit);
    p->relay_restrictions = conf_str(conf, NULL, CONF_smtpd_relay_restrictions);
    p->sender_restrictions =
        conf_str(conf, NULL, CONF_smtpd_sender_restrictions);
    p->recipient_restrictions =
        conf_str(conf, NULL, CONF_smtpd_recipient_restrictions);
    p->unverified_recipient_reject_code =
        conf_int(conf, NULL, CONF_unverified_recipient_reject_code);
    p->unverified_recipient_defer_code =
        conf_int(conf, NULL, CONF_unverified_recipient_defer_code);
    p->unverified_sender_reject_code =
        conf_int(conf, NULL, CONF_unverified_sender_reject_code);
    p->unverified_sender_defer_code =
        conf_int(conf, NULL, CONF_unverified_sender_defer_code);
    p->peername_lookup = conf_bool(conf, NULL, CONF_smtpd_peername_lookup);
    p->smtputf8_enable = conf_bool(conf, NULL, CONF_smtputf8_enable);
    p->peername_lookup_timeout_ms =
        (long)conf_time_ms(conf, NULL, CONF_smtpd_peername_lookup_timeout);
    p->sender_login_maps = conf_str(conf, NULL, CONF_smtpd_sender_login_maps);
}

char *daemon_dns_servers(const struct conf *conf)
{
    const char *in = conf_str(conf, NULL, CONF_dns_servers);
    char *out = xcalloc(1, strlen(in) + 1), *p = out;

    for (; *in; in++) {
        if (*in == ',' || *in == ' ' || *in == '\t' || *in == '\n') {
            if (p > out && p[-1] != ',')
                *p++ = ',';
        } else {
            *p++ = *in;
        }
    }
    if (p > out && p[-1] == ',')
        p--;
    *p = 0;
    return out;
}

/*
 * The name of the parameter that gives transport t its value of global
 * parameter name (suffix being its override suffix): the override when
 * it is set, else the global.
 */
static const char *source_name(const struct conf *conf, const char *t,
                               const char *name, const char *suffix, char *buf,
                               size_t len)
{
    struct conf_info info;

    snprintf(buf, len, "%s%s", t, suffix);
    if (conf_lookup(conf, buf, &info) == 0 && info.is_set)
        return buf;
    return name;
}

static int helo_check(const char *param, const char *value, char *why,
                      size_t whylen)
{
    if (smtp_helo_name_valid(value))
        return 0;
    snprintf(why, whylen,
             "%s: bad value \"%.255s\": EHLO, HELO and LHLO need a domain "
             "name or an address literal such as [192.0.2.1]",
             param, value);
    return -1;
}

/* myhostname, and the name each transport sends in EHLO/HELO/LHLO. */
static int names_check(const struct conf *conf,
                       const struct route_table *routes, char *why,
                       size_t whylen)
{
    char buf[NAME_BYTES];

    if (helo_check("myhostname", conf_str(conf, NULL, CONF_myhostname), why,
                   whylen) < 0 ||
        helo_check("smtp_helo_name", conf_str(conf, NULL, CONF_smtp_helo_name),
                   why, whylen) < 0)
        return -1;
    for (int i = 0; i < route_transport_count(routes); i++) {
        const char *t = route_transport_at(routes, i)->name;

        if (helo_check(source_name(conf, t, "smtp_helo_name", "_helo_name", buf,
                                   sizeof(buf)),
                       conf_str(conf, t, CONF_smtp_helo_name), why, whylen) < 0)
            return -1;
    }
    return 0;
}

static int servers_check(const struct conf *conf, char *why, size_t whylen)
{
    char *servers = daemon_dns_servers(conf);
    char problem[512];
    int status = dns_servers_check(servers, problem, sizeof(problem));

    free(servers);
    if (status < 0)
        snprintf(why, whylen, "dns_servers: %s", problem);
    return status;
}

/* cluster_redis_url and each transport's rates must parse (decisions 100,
 * 102 and 112); rediss://'s TLS files must make a context (decision
 * 117). */
static int cluster_check(const struct conf *conf,
                         const struct route_table *routes, char *why,
                         size_t whylen)
{
    const char *url = conf_str(conf, NULL, CONF_cluster_redis_url);
    struct cluster_url u;
    struct cluster_rate r;

    struct cluster_config cfg = {
        .url = url,
        .tls_ca_file = conf_str(conf, NULL, CONF_cluster_redis_tls_CAfile),
        .tls_cert_file = conf_str(conf, NULL, CONF_cluster_redis_tls_cert_file),
        .tls_key_file = conf_str(conf, NULL, CONF_cluster_redis_tls_key_file),
    };

    if (url[0] != '\0' && (cluster_url_parse(url, &u, why, whylen) < 0 ||
                           cluster_tls_check(&cfg, why, whylen) < 0))
        return -1;
    for (int k = 0; k < 2; k++) {
        enum conf_param_id p = k ? CONF_default_destination_connection_rate
                                 : CONF_default_destination_rate;

        if (cluster_rate_parse(conf_str(conf, NULL, p), &r, why, whylen) < 0)
            return -1;
        for (int i = 0; i < route_transport_count(routes); i++)
            if (cluster_rate_parse(
                    conf_str(conf, route_transport_at(routes, i)->name, p), &r,
                    why, whylen) < 0)
                return -1;
    }
    return 0;
}

static int zmailer_chosen(const struct conf *conf,
                          const struct route_transport *t)
{
    return (t->type == ROUTE_SMTP || t->type == ROUTE_LMTP ||
            t->type == ROUTE_AGENT) &&
           strcmp(conf_str(conf, t->name, CONF_default_delivery_scheduler),
                  "zmailer") == 0;
}

/* A transport of the agent type needs a clause whose command is a
 * program for its channel, whatever its scheduler (decision 129). */
static int agent_cover(const struct route_transport *t,
                       const struct conf_rules *rules, const char *path,
                       char *why, size_t whylen)
{
    int line = 0, found;

    if (t->type != ROUTE_AGENT)
        return 0;
    if (rules == NULL) {
        snprintf(why, whylen,
                 "transport %s: type agent needs scheduler_rules, the rules "
                 "file whose command gives its program",
                 t->name);
        return -1;
    }
    if ((found = conf_rules_channel_program(rules, t->name, &line)) > 0)
        return 0;
    if (found < 0)
        snprintf(why, whylen,
                 "transport %s: type agent: %s, line %d: the command is a "
                 "built-in agent (smtp or lmtp); an agent transport needs "
                 "an external program",
                 t->name, path, line);
    else
        snprintf(why, whylen,
                 "transport %s: type agent: no clause in %s with an external "
                 "program as its command matches channel %s",
                 t->name, path, t->name);
    return -1;
}

/* The spawner runs agents as agent_user: never root, never the spool's
 * owner, unless sluiced never was root (decision 134). */
static int agent_user_check(const struct conf *conf, char *why, size_t whylen)
{
    const char *name = conf_str(conf, NULL, CONF_agent_user);
    const char *owner = conf_str(conf, NULL, CONF_mail_owner);
    struct passwd *pw;
    uid_t owner_uid;

    if (geteuid() != 0 && !daemon_privilege_dropped())
        return 0;
    owner_uid = (pw = getpwnam(owner)) ? pw->pw_uid : (uid_t)-1;
    if ((pw = getpwnam(name)) == NULL)
        snprintf(why, whylen, "agent_user %s: no such user", name);
    else if (pw->pw_uid == 0)
        snprintf(why, whylen, "agent_user %s: an agent never runs as root",
                 name);
    else if (pw->pw_uid == owner_uid)
        snprintf(why, whylen,
                 "agent_user %s has the uid of mail_owner %s (%lu): an agent "
                 "could read and change the queue; give the agents a user of "
                 "their own",
                 name, owner, (unsigned long)owner_uid);
    else
        return 0;
    return -1;
}

/* Every transport under the zmailer scheduler needs a clause with a
 * command for its channel (decision 116). */
static int rules_cover(const struct conf *conf,
                       const struct route_table *routes,
                       const struct conf_rules *rules, const char *path,
                       char *why, size_t whylen)
{
    for (int i = 0; i < route_transport_count(routes); i++) {
        const struct route_transport *t = route_transport_at(routes, i);

        if (agent_cover(t, rules, path, why, whylen) < 0 ||
            (t->type == ROUTE_AGENT && agent_user_check(conf, why, whylen) < 0))
            return -1;
        if (!zmailer_chosen(conf, t))
            continue;
        if (rules == NULL) {
            snprintf(why, whylen,
                     "transport %s: delivery_scheduler = zmailer needs "
                     "scheduler_rules, the rules file",
                     t->name);
            return -1;
        }
        if (!conf_rules_channel_known(rules, t->name)) {
            snprintf(why, whylen,
                     "transport %s: delivery_scheduler = zmailer: no clause "
                     "with a command in scheduler_rules matches channel %s",
                     t->name, t->name);
            return -1;
        }
    }
    return 0;
}

/* scheduler_rules must load (decision 114), and cover its transports;
 * kept in *out for the queue manager (agents and zmailer threads,
 * decisions 125 and 129). */
static int rules_check(const struct conf *conf,
                       const struct route_table *routes,
                       struct conf_rules **out, char *why, size_t whylen)
{
    struct conf_rules *rules = NULL;
    char *path;
    int status;

    *out = NULL;
    if (util_table_path("scheduler_rules",
                        conf_str(conf, NULL, CONF_scheduler_rules), &path, why,
                        whylen) < 0)
        return -1;
    if (path && (rules = conf_rules_load(path, why, whylen)) == NULL) {
        free(path);
        return -1;
    }
    status = rules_cover(conf, routes, rules, path, why, whylen);
    free(path);
    if (status < 0)
        conf_rules_free(rules);
    else
        *out = rules;
    return status;
}

/* Everything after the parameters themselves. */
static int whole_check(const char *opt_path, const struct conf *conf,
                       const struct route_table *routes,
                       struct conf_rules **rules, char *why, size_t whylen)
{
    struct smtpd_params sp;
    struct conf *sub;
    char swhy[512];
    int bad;

    if (names_check(conf, routes, why, whylen) < 0 ||
        rules_check(conf, routes, rules, why, whylen) < 0)
        return -1;
    daemon_smtpd_params(conf, NULL, &sp);
    if (smtpd_params_check(&sp, why, whylen) < 0 ||
        ops_http_check(conf_str(conf, NULL, CONF_http_listen), why, whylen) < 0)
        return -1;
    /* the submission listener's server, with its overrides */
    sub = daemon_submission_conf(opt_path, conf, why, whylen);
    if (sub == NULL && why[0] != 0)
        return -1;
    if (sub != NULL) {
        daemon_submission_params(sub, NULL, &sp);
        bad = smtpd_params_check(&sp, swhy, sizeof(swhy)) < 0;
        conf_free(sub);
        if (bad) {
            snprintf(why, whylen, "submission listener: %s", swhy);
            return -1;
        }
    }
    if (cluster_check(conf, routes, why, whylen) < 0)
        return -1;
    return servers_check(conf, why, whylen);
}

/* Warnings: a typed call of warn with a formatted message. */
struct warner {
    conf_warn_fn *fn;
    void *ctx;
};

static void say(const struct warner *w, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void say(const struct warner *w, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    w->fn(w->ctx, msg);
}

/* A value as written, for a message. */
static const char *written(const struct conf *conf, enum conf_param_id id)
{
    struct conf_info info;

    return conf_lookup(conf, conf_params[id].name, &info) == 0 ? info.value
                                                               : "?";
}

/* "A (value) RELATION B (value)CONSEQUENCE", values as written. */
static void pair_warn(const struct conf *conf, const struct warner *w,
                      enum conf_param_id a, const char *relation,
                      enum conf_param_id b, const char *consequence)
{
    say(w, "%s (%s) %s %s (%s)%s", conf_params[a].name, written(conf, a),
        relation, conf_params[b].name, written(conf, b), consequence);
}

static void times_warn(const struct conf *conf, const struct warner *w)
{
    int64_t min = conf_time_ms(conf, NULL, CONF_minimal_backoff_time);
    int64_t max = conf_time_ms(conf, NULL, CONF_maximal_backoff_time);
    int64_t life = conf_time_ms(conf, NULL, CONF_maximal_queue_lifetime);
    int64_t bounce = conf_time_ms(conf, NULL, CONF_bounce_queue_lifetime);
    int64_t delay = conf_time_ms(conf, NULL, CONF_delay_warning_time);

    if (min > max)
        pair_warn(conf, w, CONF_minimal_backoff_time, "is longer than",
                  CONF_maximal_backoff_time,
                  ": every retry waits minimal_backoff_time");
    if (bounce > life)
        pair_warn(conf, w, CONF_bounce_queue_lifetime, "is longer than",
                  CONF_maximal_queue_lifetime, "");
    if (delay > 0 && delay >= life)
        pair_warn(conf, w, CONF_delay_warning_time, "is not shorter than",
                  CONF_maximal_queue_lifetime, ": no delay notice can be sent");
}

static void sizes_warn(const struct conf *conf, const struct warner *w)
{
    long minfree = conf_int(conf, NULL, CONF_queue_minfree);
    long size = conf_int(conf, NULL, CONF_message_size_limit);
    long rmin = conf_int(conf, NULL, CONF_qmgr_message_recipient_minimum);
    long rlimit = conf_int(conf, NULL, CONF_qmgr_message_recipient_limit);

    if (minfree > 0 && (size == 0 || minfree / 3 * 2 < size))
        say(w,
            "queue_minfree (%ld) should be at least 1.5 times "
            "message_size_limit (%ld)",
            minfree, size);
    if (rmin > rlimit)
        say(w,
            "qmgr_message_recipient_minimum (%ld) is above "
            "qmgr_message_recipient_limit (%ld)",
            rmin, rlimit);
}

/* The per-transport pairs, for every declared transport. */
static void transport_warn(const struct conf *conf, const char *t,
                           const struct warner *w)
{
    long initial = conf_int(conf, t, CONF_initial_destination_concurrency);
    long limit = conf_int(conf, t, CONF_default_destination_concurrency_limit);
    int64_t idle = conf_time_ms(conf, t, CONF_smtp_connection_cache_time_limit);
    int64_t reuse =
        conf_time_ms(conf, t, CONF_smtp_connection_reuse_time_limit);
    char a[NAME_BYTES], b[NAME_BYTES];

    if (limit > 0 && initial > limit)
        say(w,
            "transport %s: %s (%ld) is above %s (%ld): the window starts at "
            "the limit",
            t,
            source_name(conf, t, "initial_destination_concurrency",
                        "_initial_destination_concurrency", a, sizeof(a)),
            initial,
            source_name(conf, t, "default_destination_concurrency_limit",
                        "_destination_concurrency_limit", b, sizeof(b)),
            limit);
    if (idle > reuse)
        say(w,
            "transport %s: %s is longer than %s: idle connections are "
            "closed when their reuse time is up",
            t,
            source_name(conf, t, "smtp_connection_cache_time_limit",
                        "_connection_cache_time_limit", a, sizeof(a)),
            source_name(conf, t, "smtp_connection_reuse_time_limit",
                        "_connection_reuse_time_limit", b, sizeof(b)));
}

static void combos_warn(const struct conf *conf,
                        const struct route_table *routes,
                        const struct warner *w)
{
    const char *host = conf_str(conf, NULL, CONF_myhostname);

    if (strchr(host, '.') == NULL && host[0] != '[')
        say(w,
            "myhostname \"%s\" is not a fully qualified domain name: "
            "receivers may refuse it in EHLO; set myhostname",
            host);
    times_warn(conf, w);
    sizes_warn(conf, w);
    for (int i = 0; i < route_transport_count(routes); i++) {
        transport_warn(conf, route_transport_at(routes, i)->name, w);
    }
}

int daemon_dkim_signs(const struct conf *conf)
{
    const char *st = conf_str(conf, NULL, CONF_dkim_signing_table);

    return st[strspn(st, " \t")] != 0;
}

int daemon_dkim_load(const struct conf *conf, struct dkim_keys **keys,
                     char *why, size_t whylen)
{
    *keys = NULL;
    if (!daemon_dkim_signs(conf))
        return 0;
    *keys = dkim_keys_load(conf_str(conf, NULL, CONF_dkim_signing_table),
                           conf_str(conf, NULL, CONF_dkim_key_table),
                           conf_str(conf, NULL, CONF_dkim_canonicalization),
                           why, whylen);
    if (*keys == NULL)
        return -1;
    dkim_keys_multiple_set(
        *keys, conf_bool(conf, NULL, CONF_dkim_multiple_signatures));
    return 0;
}

int daemon_config_load(const char *opt_path, struct daemon_config *cf,
                       conf_warn_fn *warn, void *ctx, char *why, size_t whylen)
{
    struct warner w = {warn, ctx};
    int must_exist;

    memset(cf, 0, sizeof(*cf));
    cf->conf = daemon_conf_create();
    cf->path = conf_path(opt_path, &must_exist);
    if (conf_load(cf->conf, cf->path, must_exist, why, whylen) < 0)
        goto fail;
    conf_unknown_warn(cf->conf, warn, ctx);
    if ((cf->routes = route_load(cf->conf, why, whylen)) == NULL ||
        whole_check(opt_path, cf->conf, cf->routes, &cf->rules, why, whylen) <
            0 ||
        (cf->tls = qmgr_tls_load(cf->conf, cf->routes, why, whylen)) == NULL ||
        daemon_dkim_load(cf->conf, &cf->dkim, why, whylen) < 0)
        goto fail;
    combos_warn(cf->conf, cf->routes, &w);
    return 0;

fail:
    daemon_config_free(cf);
    return -1;
}

void daemon_config_free(struct daemon_config *cf)
{
    route_free(cf->routes);
    conf_free(cf->conf);
    qmgr_tls_free(cf->tls);
    dkim_keys_free(cf->dkim);
    conf_rules_free(cf->rules);
    cf->rules = NULL;
    cf->dkim = NULL;
    cf->tls = NULL;
    cf->routes = NULL;
    cf->conf = NULL;
}
