/*
 * NAME
 *	settings 3 - a transport's delivery settings, as deliver/ takes them
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_deliver_settings(const struct conf *conf,
 *			const char *transport, struct qmgr_deliver_settings *d)
 * DESCRIPTION
 *	See qmgr.h. conf/ resolves each name for the transport: the
 *	<transport>_<suffix> override when set, else the global parameter.
 */

#include "qmgr/qmgr.h"

#include <string.h>

/* A time in milliseconds, as an int for deliver/ (at most ~24 days). */
static int ms(const struct conf *conf, const char *t, enum conf_param_id name)
{
    int64_t v = conf_time_ms(conf, t, name);

    return v > INT32_MAX ? INT32_MAX : (int)v;
}

void qmgr_deliver_settings(const struct conf *conf, const char *transport,
                           struct qmgr_deliver_settings *d)
{
    const char *t = transport;

    memset(d, 0, sizeof(*d));
    d->timeouts.connect = ms(conf, t, CONF_smtp_connect_timeout);
    d->timeouts.helo = ms(conf, t, CONF_smtp_helo_timeout);
    d->timeouts.mail = ms(conf, t, CONF_smtp_mail_timeout);
    d->timeouts.rcpt = ms(conf, t, CONF_smtp_rcpt_timeout);
    d->timeouts.data_init = ms(conf, t, CONF_smtp_data_init_timeout);
    d->timeouts.data_xfer = ms(conf, t, CONF_smtp_data_xfer_timeout);
    d->timeouts.data_done = ms(conf, t, CONF_smtp_data_done_timeout);
    d->timeouts.quit = ms(conf, t, CONF_smtp_quit_timeout);
    d->address_limit = (int)conf_int(conf, t, CONF_smtp_mx_address_limit);
    d->session_limit = (int)conf_int(conf, t, CONF_smtp_mx_session_limit);
    if (conf_bool(conf, t, CONF_smtp_connection_cache_on_demand))
        d->cache.idle_ms = ms(conf, t, CONF_smtp_connection_cache_time_limit);
    d->cache.reuse_ms = ms(conf, t, CONF_smtp_connection_reuse_time_limit);
    d->cache.reuse_count_limit =
        (int)conf_int(conf, t, CONF_smtp_connection_reuse_count_limit);
    d->cache_always =
        conf_str(conf, t, CONF_smtp_connection_cache_destinations);
    d->helo_name = conf_str(conf, t, CONF_smtp_helo_name);
    d->line_limit = (size_t)conf_int(conf, t, CONF_smtp_line_length_limit);
    d->mime_conversion =
        !conf_bool(conf, NULL, CONF_disable_mime_output_conversion);
}
