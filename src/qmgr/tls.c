/*
 * NAME
 *	tls 3 - the TLS policy of each delivery
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	struct qmgr_tls *qmgr_tls_load(const struct conf *conf,
 *			const struct route_table *routes, char *why,
 *			size_t whylen)
 *	void	qmgr_tls_free(struct qmgr_tls *t)
 *	void	qmgr_tls_set(struct qmgr *q, struct qmgr_tls *t)
 *
 *	#include "qmgr/qmgr_impl.h"
 *
 *	void	qm_tls_request(const struct qmgr *q, const char *transport,
 *			const struct route_result *r, enum deliver_sts sts,
 *			struct deliver_tls *out)
 *	void	qm_tls_log(struct qmgr *q, const char *transport,
 *			const struct deliver_result *res)
 *	void	qm_tls_field(const struct deliver_result *res, char *buf,
 *			size_t len)
 *	struct deliver_passwd *qm_tls_passwd(const struct qmgr *q)
 * DESCRIPTION
 *	qmgr_tls_load() builds what the SMTP client's TLS needs from the
 *	configuration: the client context (smtp_tls_CAfile and _CApath,
 *	the client certificate smtp_tls_cert_file, _key_file or
 *	_chain_files, smtp_tls_session_cache_timeout) and the policy table
 *	smtp_tls_policy_maps. NULL with a message that names the
 *	parameter or the file and line, for sluiced to refuse at start and
 *	at reload, and for "sluice config" (daemon_config_load()). The
 *	SMTP client's AUTH material comes with it: the password table and
 *	the checked security options (qm_sasl_load(), sasl.c), so that a
 *	reload replaces both at once; qm_tls_passwd() is the table in use
 *	(NULL: none). The
 *	protocols of smtp_tls_protocols and smtp_tls_mandatory_protocols
 *	are checked too, globally and as each transport of routes
 *	overrides them. qmgr_tls_set() gives t to the queue manager,
 *	which frees the one it had: deliveries under way keep their
 *	context (it is reference-counted), the next ones use the new.
 *
 *	qm_tls_request() decides the TLS of one delivery of transport to
 *	the next hop of r: the policy table's entry for the next hop (as
 *	route_nexthop_format() writes it, then ".parent" domains), else
 *	the transport's smtp_tls_security_level. The names to match are
 *	the policy's match= or, at verify and secure, the transport's
 *	smtp_tls_verify_cert_match or smtp_tls_secure_cert_match; the
 *	protocols and cipher grade are the policy's or, from the
 *	transport, smtp_tls_mandatory_protocols and _mandatory_ciphers at
 *	the levels that require TLS, smtp_tls_protocols and _ciphers at
 *	the others; the SNI is smtp_tls_servername. Values that were
 *	checked when the configuration loaded cannot fail here. sts is
 *	the recipient domain's MTA-STS policy: it goes to the client
 *	(which raises the level to a certificate verified for the MX
 *	host's name under enforce, decision 50), unless the policy table
 *	had an entry for the next hop: the operator's word for a
 *	destination outranks what the destination publishes. Discard
 *	and error transports and LMTP over a local socket get no TLS.
 *
 *	qm_tls_log() writes the reference's line for a connection whose
 *	handshake happened in this delivery, unless the transport's
 *	smtp_tls_loglevel is 0:
 *
 *	Verified TLS connection established to mx.example.com[192.0.2.1]:25:
 *	TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)
 *	key-exchange X25519 server-signature RSA-PSS (2048 bits)
 *	server-digest SHA256
 *
 *	qm_tls_field() writes the value of a delivery line's tls= field,
 *	"TLSv1.3:TLS_AES_256_GCM_SHA384:Verified", or "" when the delivery
 *	did not go over TLS.
 */

#include "qmgr/qmgr_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qmgr_tls {
    struct tls_context *ctx;
    struct tls_policy_map *map;
    struct deliver_passwd *passwd; /* smtp_sasl_password_maps */
};

/* The protocols of transport (NULL: the global values) must parse. */
static int protocols_check(const struct conf *conf, const char *transport,
                           char *why, size_t whylen)
{
    static const enum conf_param_id ids[] = {CONF_smtp_tls_protocols,
                                             CONF_smtp_tls_mandatory_protocols};
    char problem[256];
    int lo, hi;

    for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
        if (tls_protocols_parse(conf_str(conf, transport, ids[i]), &lo, &hi,
                                problem, sizeof(problem)) < 0) {
            snprintf(why, whylen, "%s%s%s: %s", transport ? transport : "",
                     transport ? conf_params[ids[i]].suffix
                               : conf_params[ids[i]].name,
                     "", problem);
            return -1;
        }
    return 0;
}

struct qmgr_tls *qmgr_tls_load(const struct conf *conf,
                               const struct route_table *routes, char *why,
                               size_t whylen)
{
    struct qmgr_tls *t = xcalloc(1, sizeof(*t));
    struct tls_client_config cf = {0};
    const char *maps = conf_str(conf, NULL, CONF_smtp_tls_policy_maps);

    why[0] = 0;
    if (protocols_check(conf, NULL, why, whylen) < 0) {
        free(t);
        return NULL;
    }
    if (qm_sasl_load(conf, routes, &t->passwd, why, whylen) < 0) {
        free(t);
        return NULL;
    }
    for (int i = 0; routes && i < route_transport_count(routes); i++)
        if (protocols_check(conf, route_transport_at(routes, i)->name, why,
                            whylen) < 0) {
            qmgr_tls_free(t);
            return NULL;
        }
    cf.ca_file = conf_str(conf, NULL, CONF_smtp_tls_CAfile);
    cf.ca_path = conf_str(conf, NULL, CONF_smtp_tls_CApath);
    cf.files.cert_file = conf_str(conf, NULL, CONF_smtp_tls_cert_file);
    cf.files.key_file = conf_str(conf, NULL, CONF_smtp_tls_key_file);
    cf.files.chain_files = conf_str(conf, NULL, CONF_smtp_tls_chain_files);
    cf.session_timeout =
        (int)(conf_time_ms(conf, NULL, CONF_smtp_tls_session_cache_timeout) /
              1000);
    if ((t->ctx = tls_client_context_create(&cf, why, whylen)) == NULL ||
        ((t->map = tls_policy_map_load("smtp_tls_policy_maps", maps, why,
                                       whylen)) == NULL &&
         why[0] != 0)) {
        qmgr_tls_free(t);
        return NULL;
    }
    return t;
}

void qmgr_tls_set(struct qmgr *q, struct qmgr_tls *t)
{
    qmgr_tls_free(q->tls);
    q->tls = t;
}

void qmgr_tls_free(struct qmgr_tls *t)
{
    if (t == NULL)
        return;
    tls_context_free(t->ctx);
    tls_policy_map_free(t->map);
    deliver_passwd_free(t->passwd);
    free(t);
}

struct deliver_passwd *qm_tls_passwd(const struct qmgr *q)
{
    return q->tls ? q->tls->passwd : NULL;
}

void qm_tls_request(const struct qmgr *q, const char *transport,
                    const struct route_result *r, enum deliver_sts sts,
                    struct deliver_tls *out)
{
    const struct conf *conf = q->conf;
    struct tls_policy p;
    char hop[ROUTE_NEXTHOP_MAX + 16];
    const char *protocols, *grade, *match = "";
    int enforced;

    memset(out, 0, sizeof(*out));
    /* as the reference's LMTP client, no TLS over a local socket */
    if (q->tls == NULL || r->type == ROUTE_DISCARD || r->type == ROUTE_ERROR ||
        r->type == ROUTE_AGENT || r->unix_path)
        return;
    route_nexthop_format(r, hop, sizeof(hop));
    if (tls_policy_map_find(q->tls->map, hop, &p)) {
        sts = DELIVER_STS_NONE;
    } else {
        memset(&p, 0, sizeof(p));
        if (tls_level_parse(
                conf_str(conf, transport, CONF_smtp_tls_security_level),
                &p.level) < 0)
            p.level = TLS_LEV_MAY;
    }
    if (p.level == TLS_LEV_NONE && sts != DELIVER_STS_ENFORCE)
        return;
    out->sts = sts;
    enforced = tls_level_enforced(p.level) || sts == DELIVER_STS_ENFORCE;
    protocols = p.protocols[0]
                    ? p.protocols
                    : conf_str(conf, transport,
                               enforced ? CONF_smtp_tls_mandatory_protocols
                                        : CONF_smtp_tls_protocols);
    grade = p.ciphers[0] ? p.ciphers
                         : conf_str(conf, transport,
                                    enforced ? CONF_smtp_tls_mandatory_ciphers
                                             : CONF_smtp_tls_ciphers);
    if (p.match[0])
        match = p.match;
    else if (p.level == TLS_LEV_VERIFY)
        match = conf_str(conf, transport, CONF_smtp_tls_verify_cert_match);
    else if (p.level == TLS_LEV_SECURE)
        match = conf_str(conf, transport, CONF_smtp_tls_secure_cert_match);
    out->ctx = q->tls->ctx;
    out->level = p.level;
    snprintf(out->match, sizeof(out->match), "%s", match);
    snprintf(out->servername, sizeof(out->servername), "%s",
             conf_str(conf, transport, CONF_smtp_tls_servername));
    snprintf(out->nexthop, sizeof(out->nexthop), "%s", r->nexthop);
    if (tls_protocols_parse(protocols, &out->min_version, &out->max_version,
                            hop, sizeof(hop)) < 0)
        out->min_version = out->max_version = 0; /* checked at load */
    snprintf(out->ciphers, sizeof(out->ciphers), "%s",
             tls_cipher_list(grade) ? tls_cipher_list(grade) : "");
}

void qm_tls_field(const struct deliver_result *res, char *buf, size_t len)
{
    const struct deliver_tls_result *t = &res->tls;
    char protocol[32] = "", cipher[96] = "";

    buf[0] = 0;
    if (!t->used ||
        sscanf(t->cipher, "%31s with cipher %95s", protocol, cipher) != 2)
        return;
    snprintf(buf, len, "%s:%s:%s", protocol, cipher,
             t->word ? t->word : "Anonymous");
}

void qm_tls_log(struct qmgr *q, const char *transport,
                const struct deliver_result *res)
{
    const struct deliver_tls_result *t = &res->tls;

    if (!t->established ||
        conf_int(q->conf, transport, CONF_smtp_tls_loglevel) < 1)
        return;
    qm_log(q, QMGR_LOG_INFO, "%s TLS connection established to %s: %s%s%s",
           t->word ? t->word : "Anonymous", t->peer, t->cipher,
           t->details[0] ? " " : "", t->details);
}
