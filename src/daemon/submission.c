/*
 * NAME
 *	submission 3 - the submission listener's configuration
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	struct conf *daemon_submission_conf(const char *opt_path,
 *			const struct conf *conf, char *why, size_t whylen)
 *	void	daemon_submission_params(const struct conf *sub,
 *			const char *queue_directory, struct smtpd_params *p)
 * DESCRIPTION
 *	smtpd_submission_listen names the addresses of a second SMTP
 *	server, the port 587 style (RFC 6409) listener of mail user agents
 *	and applications: AUTH is offered there and required before MAIL
 *	("530 5.7.0 Authentication required"), whatever
 *	smtpd_sasl_auth_enable says for smtpd_listen. It is Postfix's
 *	master.cf "submission" entry, and smtpd_submission_options are its
 *	"-o" overrides: the SMTP server's parameters as this listener sees
 *	them, "name=value" entries separated by white space or commas, an
 *	entry whose value holds either in braces as in master.cf:
 *
 *	    smtpd_submission_options = smtpd_tls_security_level=encrypt
 *		{ smtpd_relay_restrictions = permit_sasl_authenticated, reject }
 *
 *	daemon_submission_conf() returns the listener's configuration: the
 *	file that opt_path chooses read again, with the overrides set over
 *	it (each checked as the parameter's own value is), or NULL with
 *	why empty when smtpd_submission_listen is empty, or NULL with the
 *	reason. Only the SMTP server's parameters may be overridden
 *	(smtpd_*, mynetworks, relay_domains, myhostname,
 *	message_size_limit, line_length_limit); smtpd_submission_listen and
 *	the listener addresses of smtpd_listen may not. The caller frees
 *	it with conf_free() once the server has copied its parameters.
 *
 *	daemon_submission_params() fills the server's parameters from it:
 *	daemon_smtpd_params(), then the submission addresses, no implicit
 *	TLS (use smtpd_tls_wrapper_listen for port 465), AUTH offered and
 *	required.
 */

#include "daemon/daemon.h"
#include "conf/conf.h"
#include "ingress/ingress.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* May an override set this parameter? */
static int overridable(const char *name)
{
    static const char *const others[] = {
        "mynetworks",         "relay_domains",     "myhostname",
        "message_size_limit", "line_length_limit",
    };

    if (strcmp(name, "smtpd_submission_listen") == 0 ||
        strcmp(name, "smtpd_submission_options") == 0 ||
        strcmp(name, "smtpd_listen") == 0 ||
        strcmp(name, "smtpd_tls_wrapper_listen") == 0 ||
        strcmp(name, "smtpd_tls_wrappermode") == 0)
        return 0;
    if (strncmp(name, "smtpd_", 6) == 0)
        return 1;
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        if (strcmp(name, others[i]) == 0)
            return 1;
    return 0;
}

/* Text without white space at its ends, copied. */
static char *trimmed(const char *p, size_t n)
{
    while (n > 0 && (*p == ' ' || *p == '\t'))
        p++, n--;
    while (n > 0 && (p[n - 1] == ' ' || p[n - 1] == '\t'))
        n--;
    return xstrndup(p, n);
}

/* One "name=value" override set in sub; -1 with why. */
static int override(struct conf *sub, const char *entry, size_t n, char *why,
                    size_t whylen)
{
    const char *eq = memchr(entry, '=', n);
    char *name, *value, problem[512];
    int rc = -1;

    if (eq == NULL) {
        snprintf(why, whylen,
                 "smtpd_submission_options: \"%.*s\" is not name=value",
                 (int)(n > 100 ? 100 : n), entry);
        return -1;
    }
    name = trimmed(entry, (size_t)(eq - entry));
    value = trimmed(eq + 1, n - (size_t)(eq + 1 - entry));
    if (!overridable(name))
        snprintf(why, whylen,
                 "smtpd_submission_options: %s cannot be overridden for the "
                 "submission listener",
                 name);
    else if (conf_set(sub, name, value, problem, sizeof(problem)) < 0)
        snprintf(why, whylen, "smtpd_submission_options: %s", problem);
    else
        rc = 0;
    free(name);
    free(value);
    return rc;
}

static int overrides(struct conf *sub, const char *list, char *why,
                     size_t whylen)
{
    const char *p = list;

    for (;;) {
        size_t n;

        p += strspn(p, " \t\r\n,");
        if (*p == 0)
            return 0;
        if (*p == '{') {
            const char *close = strchr(p, '}');

            if (close == NULL) {
                snprintf(why, whylen,
                         "smtpd_submission_options: no \"}\" after \"%.40s\"",
                         p);
                return -1;
            }
            if (override(sub, p + 1, (size_t)(close - p - 1), why, whylen) < 0)
                return -1;
            p = close + 1;
            continue;
        }
        n = strcspn(p, " \t\r\n,");
        if (override(sub, p, n, why, whylen) < 0)
            return -1;
        p += n;
    }
}

struct conf *daemon_submission_conf(const char *opt_path,
                                    const struct conf *conf, char *why,
                                    size_t whylen)
{
    const char *listen = conf_str(conf, NULL, CONF_smtpd_submission_listen);
    struct conf *sub;

    why[0] = 0;
    if (listen[strspn(listen, " \t\r\n,")] == 0)
        return NULL;
    if ((sub = daemon_conf_open(opt_path, why, whylen)) == NULL)
        return NULL;
    if (overrides(sub, conf_str(conf, NULL, CONF_smtpd_submission_options), why,
                  whylen) < 0 ||
        conf_validate(sub, why, whylen) < 0) {
        conf_free(sub);
        return NULL;
    }
    return sub;
}

void daemon_submission_params(const struct conf *sub,
                              const char *queue_directory,
                              struct smtpd_params *p)
{
    daemon_smtpd_params(sub, queue_directory, p);
    p->listen = conf_str(sub, NULL, CONF_smtpd_submission_listen);
    p->tls_wrappermode = 0;
    p->tls_wrapper_listen = "";
    p->sasl_auth_enable = 1;
    p->auth_required = 1;
}
