/*
 * NAME
 *	agent 3 - the agent transport type: its program from the rules
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_agent_log_init(struct qmgr *q)
 *	void	qmgr_spawner_set(struct qmgr *q, struct deliver_spawner *sp)
 *	void	qm_agent_status(struct qmgr *q, const char *transport,
 *			struct util_buf *b, int json)
 *	char	**qm_agent_request(struct qmgr *q,
 *			const struct route_result *r,
 *			struct deliver_request *req, char *key, size_t keylen,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	qm_agent_log_init() sends the agent pool's log lines to the queue
 *	manager's log under each agent's transport name. The rules file
 *	(scheduler_rules) is q->rules, set by qmgr_rules_set() (zmailer.c).
 *
 *	qmgr_spawner_set() hands the agent spawner sluiced forked before
 *	it gave up root (decision 134) to the agents of the queue
 *	manager's cache, which own it from then on.
 *
 *	qm_agent_status() appends a transport's agent figures to the
 *	status (status.c): in JSON ", \"agents\": {\"running\", \"idle\",
 *	\"started\", \"failed\"}" (null for a transport that never had an
 *	agent), as text a line "  agents: R running, I idle, S started, F
 *	failed" (none for such a transport). Running is at a job or
 *	starting, idle in the pool; started and failed count since start.
 *
 *	qm_agent_request() fills the agent part of a request for a
 *	recipient routed to a transport of the agent type (decision 129):
 *	the first rule of the rules file that matches the channel (the
 *	transport's name) and the host (the next hop), as
 *	conf_rules_match() walks it, gives the program and its arguments
 *	with $host and $channel replaced, and idlemax; the parameters
 *	give the rest (agent_user, agent_time_limit per transport,
 *	agent_output_line_limit, agent_output_limit, agent_restart_delay).
 *	The pool key, written into key, is the channel, the rule and the
 *	host when the command has $host, "*" when it has not, so that an
 *	agent serves every host its command can (ZMailer's thread-ring).
 *	Under the zmailer scheduler the request has its key already, the
 *	driver's agent's (zmailer.c), and keeps it: the driver ends that
 *	agent itself (idlemax, maxta, a reload). It returns the argv (conf_rules_argv_free() once deliver_start()
 *	has copied the request), or NULL with why when no rule with an
 *	external program matches: the recipients are then deferred.
 */

#include "qmgr/qmgr_impl.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ms_int(int64_t ms)
{
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

static void agent_log_cb(void *ctx, int warning, const char *channel,
                         const char *text)
{
    struct qmgr *q = ctx;

    if (q->log)
        q->log(q->log_ctx, warning ? QMGR_LOG_WARNING : QMGR_LOG_INFO, channel,
               text);
}

void qm_agent_log_init(struct qmgr *q)
{
    deliver_cache_agent_log(q->cache, agent_log_cb, q);
}

void qmgr_spawner_set(struct qmgr *q, struct deliver_spawner *sp)
{
    deliver_cache_spawner_set(q->cache, sp);
}

#define STATUS_CHANNELS 64

void qm_agent_status(struct qmgr *q, const char *transport, struct util_buf *b,
                     int json)
{
    struct deliver_agent_stats st[STATUS_CHANNELS];
    size_t n =
        q->cache ? deliver_cache_agent_stats(q->cache, st, STATUS_CHANNELS) : 0;

    for (size_t i = 0; i < n; i++) {
        if (strcmp(st[i].channel, transport) != 0)
            continue;
        util_buf_printf(b,
                        json ? ", \"agents\": {\"running\": %zu, \"idle\": "
                               "%zu, \"started\": %llu, \"failed\": %llu}"
                             : "  agents: %zu running, %zu idle, %llu "
                               "started, %llu failed\n",
                        st[i].running, st[i].idle,
                        (unsigned long long)st[i].started,
                        (unsigned long long)st[i].failed);
        return;
    }
    if (json)
        util_buf_puts(b, ", \"agents\": null");
}

char **qm_agent_request(struct qmgr *q, const struct route_result *r,
                        struct deliver_request *req, char *key, size_t keylen,
                        char *why, size_t whylen)
{
    const struct conf *conf = q->conf;
    struct conf_rule_match m;

    if (q->rules == NULL ||
        conf_rules_match(q->rules, r->transport, r->nexthop, &m) < 0) {
        snprintf(why, whylen, "no rule in scheduler_rules for %s/%s",
                 r->transport, r->nexthop);
        return NULL;
    }
    if (m.agent != CONF_RULE_PROGRAM) {
        snprintf(why, whylen,
                 "the rule of scheduler_rules at line %d for %s/%s is a "
                 "built-in agent, not a program",
                 m.line, r->transport, r->nexthop);
        return NULL;
    }
    req->proto = DELIVER_AGENT;
    req->agent.argv = conf_rules_argv(&m, r->transport, r->nexthop);
    req->agent.channel = r->transport;
    req->agent.user = conf_str(conf, NULL, CONF_agent_user);
    req->agent.idle_ms = ms_int(m.idlemax);
    req->agent.time_limit_ms =
        ms_int(conf_time_ms(conf, r->transport, CONF_agent_time_limit));
    req->agent.restart_ms =
        ms_int(conf_time_ms(conf, NULL, CONF_agent_restart_delay));
    req->agent.line_limit =
        (size_t)conf_int(conf, NULL, CONF_agent_output_line_limit);
    req->agent.output_limit =
        (size_t)conf_int(conf, NULL, CONF_agent_output_limit);
    req->cache = q->cache;
    if (req->cache_key != NULL) /* ZMailer's driver: its agent's own key */
        return (char **)req->agent.argv;
    snprintf(key, keylen, "%s/%d/%s", r->transport, m.index,
             m.per_host ? r->nexthop : "*");
    req->cache_key = key;
    return (char **)req->agent.argv;
}
