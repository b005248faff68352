/*
 * NAME
 *	sasl 3 - the SMTP AUTH of each delivery
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	int	qm_sasl_load(const struct conf *conf,
 *			const struct route_table *routes,
 *			struct deliver_passwd **passwd, char *why,
 *			size_t whylen)
 *	void	qm_sasl_request(const struct qmgr *q, const char *transport,
 *			const struct route_result *r, struct deliver_sasl *out)
 *	void	qm_sasl_log(struct qmgr *q, const char *id,
 *			const struct deliver_result *res)
 * DESCRIPTION
 *	qm_sasl_load() checks smtp_sasl_security_options and
 *	smtp_sasl_tls_security_options, globally and as each transport of
 *	routes overrides them (an unknown word refuses the configuration,
 *	naming the parameter), and reads the table of
 *	smtp_sasl_password_maps into *passwd (NULL when there is none). It
 *	returns 0, or -1 with a message; qmgr_tls_load() calls it, so the
 *	table is read, checked and replaced with the TLS material: at
 *	start, at reload and by "sluice config", which shows the table's
 *	path, never its contents.
 *
 *	qm_sasl_request() fills in the AUTH of one delivery of transport to
 *	the next hop of r: nothing (no table) unless the transport's
 *	smtp_sasl_auth_enable is yes and there is a table, and never for
 *	discard, error or a local socket; else the table, the next hop as
 *	route_nexthop_format() writes it ("[relay.example]:587", the form
 *	the reference looks up) and the transport's two option sets.
 *
 *	qm_sasl_log() writes the warning of a delivery in which a server
 *	refused the credentials or could not take them:
 *
 *	warning: ID: SASL authentication failed; server
 *	relay.example[192.0.2.1] said: 535 5.7.8 Error: authentication
 *	failed (credentials of smtp_sasl_password_maps entry
 *	[relay.example]:587)
 *
 *	It names the table's key, never the user name or the password.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <string.h>

/* The option words of transport (NULL: the global values) must parse. */
static int options_check(const struct conf *conf, const char *transport,
                         char *why, size_t whylen)
{
    static const enum conf_param_id ids[] = {
        CONF_smtp_sasl_security_options, CONF_smtp_sasl_tls_security_options};
    char problem[256];
    unsigned bits;

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (deliver_sasl_options_parse(conf_str(conf, transport, ids[i]), &bits,
                                       problem, sizeof(problem)) < 0) {
            snprintf(why, whylen, "%s%s: %s", transport ? transport : "",
                     transport ? conf_params[ids[i]].suffix
                               : conf_params[ids[i]].name,
                     problem);
            return -1;
        }
    return 0;
}

int qm_sasl_load(const struct conf *conf, const struct route_table *routes,
                 struct deliver_passwd **passwd, char *why, size_t whylen)
{
    *passwd = NULL;
    why[0] = 0;
    if (options_check(conf, NULL, why, whylen) < 0)
        return -1;
    for (int i = 0; routes && i < route_transport_count(routes); i++)
        if (options_check(conf, route_transport_at(routes, i)->name, why,
                          whylen) < 0)
            return -1;
    *passwd = deliver_passwd_load(
        "smtp_sasl_password_maps",
        conf_str(conf, NULL, CONF_smtp_sasl_password_maps), why, whylen);
    return *passwd == NULL && why[0] != 0 ? -1 : 0;
}

void qm_sasl_request(const struct qmgr *q, const char *transport,
                     const struct route_result *r, struct deliver_sasl *out)
{
    const struct conf *conf = q->conf;
    char why[256];

    memset(out, 0, sizeof(*out));
    if (qm_tls_passwd(q) == NULL || r->type == ROUTE_DISCARD ||
        r->type == ROUTE_ERROR || r->type == ROUTE_AGENT || r->unix_path ||
        !conf_bool(conf, transport, CONF_smtp_sasl_auth_enable))
        return;
    /* checked when the configuration loaded: these cannot fail here */
    if (deliver_sasl_options_parse(
            conf_str(conf, transport, CONF_smtp_sasl_security_options),
            &out->options, why, sizeof(why)) < 0 ||
        deliver_sasl_options_parse(
            conf_str(conf, transport, CONF_smtp_sasl_tls_security_options),
            &out->tls_options, why, sizeof(why)) < 0)
        return;
    out->passwd = qm_tls_passwd(q);
    route_nexthop_format(r, out->nexthop, sizeof(out->nexthop));
}

void qm_sasl_log(struct qmgr *q, const char *id,
                 const struct deliver_result *res)
{
    if (!res->auth_failed)
        return;
    qm_log(q, QMGR_LOG_WARNING,
           "%s: %s (credentials of smtp_sasl_password_maps entry %s)", id,
           res->auth_reason, res->auth_key);
}
