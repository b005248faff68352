/*
 * NAME
 *	peer 3 - the SMTP client's host name, looked up before the greeting
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	peer_start(struct smtpd_session *ss)
 *	void	peer_timeout(struct smtpd_session *ss)
 *	void	peer_cancel(struct smtpd_session *ss)
 * DESCRIPTION
 *	The reference's smtpd knows its client's name before it says
 *	anything: "connect from NAME[ADDR]", every later log line and the
 *	Received: header field carry it. The name is the one the daemon's
 *	lookup (struct smtpd_ops: peer_lookup, in sluiced the resolver's
 *	dns_lookup_peer(): the PTR name, accepted only when its addresses
 *	include the client's) confirms, or "unknown".
 *
 *	peer_start() begins the lookup for a new session, when
 *	smtpd_peername_lookup is on, the server has a lookup and the
 *	client has an IP address; it returns 1 then: the session waits in
 *	state LOOKUP, reading nothing, no deadline running, for at most
 *	smtpd_peername_lookup_timeout (the session's delay timer), and
 *	session_connected() follows the answer or the timeout. It returns
 *	0 when no lookup was started: the caller goes on at once. Sessions
 *	of "sendmail -bs" have no lookup and keep their name.
 *
 *	The answer sets the session's name and its "NAME[ADDR]" for the
 *	log; a warning that comes with it is logged ("warning: hostname
 *	NAME does not resolve to address ADDR"). peer_timeout() is the
 *	timer's end: the lookup is cancelled, the client stays unknown,
 *	and "warning: ADDR: client name lookup timed out after N ms" says
 *	why. A slow or dead name server thus costs each client at most
 *	the timeout before its greeting, and nothing else: the lookup
 *	runs on the loop, beside every other session. peer_cancel() ends
 *	a lookup under way without an answer (a session that ends, a
 *	server that stops); the daemon's resolver finishes and frees it
 *	later.
 */

#include "ingress/smtpd_impl.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>

static void peer_done(void *conn, const char *name, const char *warning)
{
    struct smtpd_session *ss = conn;

    ss->peer = NULL;
    evtimer_del(ss->delay_ev);
    if (warning != NULL)
        smtpd_log(ss->s, "warning: %s", warning);
    if (name != NULL) {
        snprintf(ss->name, sizeof(ss->name), "%s", name);
        snprintf(ss->client, sizeof(ss->client), "%s[%s]", ss->name,
                 ss->addr_text +
                     (strncmp(ss->addr_text, "IPv6:", 5) == 0 ? 5 : 0));
    }
    session_connected(ss);
}

int peer_start(struct smtpd_session *ss)
{
    struct smtpd_server *s = ss->s;
    long ms = s->cf.peername_timeout_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    int family = ss->addr.ss_family;

    if (!s->cf.peername_lookup || s->ops.peer_lookup == NULL ||
        (family != AF_INET && family != AF_INET6))
        return 0;
    ss->peer = s->ops.peer_lookup(s->ops.ctx, (struct sockaddr *)&ss->addr,
                                  sizeof(ss->addr), peer_done, ss);
    if (ss->peer == NULL)
        return 0;
    ss->state = SESSION_LOOKUP;
    bufferevent_disable(ss->bev, EV_READ);
    evtimer_add(ss->delay_ev, &tv);
    return 1;
}

void peer_cancel(struct smtpd_session *ss)
{
    if (ss->peer == NULL)
        return;
    if (ss->s != NULL && ss->s->ops.peer_cancel != NULL)
        ss->s->ops.peer_cancel(ss->s->ops.ctx, ss->peer);
    ss->peer = NULL;
}

void peer_timeout(struct smtpd_session *ss)
{
    const char *addr = ss->addr_text;

    if (strncmp(addr, "IPv6:", 5) == 0)
        addr += 5;
    peer_cancel(ss);
    smtpd_log(ss->s, "warning: %s: client name lookup timed out after %ld ms",
              addr, ss->s ? ss->s->cf.peername_timeout_ms : 0);
    session_connected(ss);
}
