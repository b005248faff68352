/*
 * NAME
 *	deadline 3 - how long an SMTP session waits for its client
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	deadline_init(struct smtpd_session *ss)
 *	void	deadline_start(struct smtpd_session *ss)
 *	void	deadline_read(struct smtpd_session *ss)
 *	void	deadline_progress(struct smtpd_session *ss, const char *p,
 *			size_t n)
 *	void	deadline_tighten(struct smtpd_session *ss)
 *	void	deadline_stop(struct smtpd_session *ss)
 *	void	deadline_free(struct smtpd_session *ss)
 * DESCRIPTION
 *	A session waits for its client one record at a time: a command
 *	line, or in message content (DATA, BDAT) a line or line_length_limit
 *	bytes of a longer one. Each record must arrive whole within
 *	smtpd_timeout of its start, however its bytes are spread: a client
 *	that sends a byte every few seconds cannot hold a session for ever,
 *	as it could when every byte restarted the clock (the slowloris
 *	attack: a few addresses trickling bytes hold every session the
 *	server has). That is Postfix's smtpd_per_record_deadline, here on by
 *	default; with it off, the clock restarts at every read, as before,
 *	except under stress.
 *
 *	Under stress (the server near its session limit, smtpd.c), deadlines
 *	are per record whatever smtpd_per_record_deadline says, and last at
 *	most smtpd_stress_timeout: Postfix's "smtpd_timeout =
 *	${stress?{10}:{300}}s". Sessions already open get the shorter
 *	deadline too, counted from the start of the record they are in.
 *
 *	deadline_init() makes the timer (-1 when it cannot). deadline_start()
 *	begins a record: after the greeting, after each command line, at the
 *	start of content, after a wait. deadline_read() is called when bytes
 *	arrive: it restarts the clock only in the per-read mode.
 *	deadline_progress() is told of content consumed (n bytes at p): a
 *	line end in them, or line_length_limit bytes since the record began,
 *	begins the next record. deadline_tighten() applies the deadline the
 *	server's state now gives (stress began) to the record under way.
 *	deadline_stop() stops the clock (the server is waiting: a store, a
 *	flush, in_flow_delay; or the session is closing). deadline_free()
 *	frees the timer.
 *
 *	The TLS handshake (after STARTTLS, or at connect with implicit TLS)
 *	is one record of smtpd_starttls_timeout, or smtpd_stress_timeout
 *	under stress when that is shorter.
 *
 *	When a deadline passes, session_timeout() answers "421 4.4.2" and
 *	closes the session (in a handshake it closes it without a reply). Time is the monotonic clock's, in milliseconds.
 */

#include "ingress/smtpd_impl.h"

#include <event2/event.h>
#include <string.h>

/* The time a record may take, as the server's state says now. */
static long limit_ms(const struct smtpd_session *ss)
{
    const struct smtpd_server *s = ss->s;
    long ms =
        ss->state == SESSION_TLS ? s->cf.starttls_timeout_ms : s->cf.timeout_ms;

    if (s->stress && s->cf.stress_timeout_ms < ms)
        return s->cf.stress_timeout_ms;
    return ms;
}

static int per_record(const struct smtpd_server *s)
{
    return s->cf.per_record_deadline || s->stress;
}

static void deadline_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    session_timeout(arg);
}

int deadline_init(struct smtpd_session *ss)
{
    ss->deadline_ev = evtimer_new(ss->s->base, deadline_cb, ss);
    return ss->deadline_ev ? 0 : -1;
}

/* Arm the timer for the record that began at ss->record_start. */
static void arm(struct smtpd_session *ss)
{
    int64_t left = ss->record_start + limit_ms(ss) - util_clock_mono_ms();
    struct timeval tv;

    if (left < 0)
        left = 0;
    tv.tv_sec = (time_t)(left / 1000);
    tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
    evtimer_add(ss->deadline_ev, &tv);
}

void deadline_start(struct smtpd_session *ss)
{
    if (ss->s == NULL || ss->deadline_ev == NULL)
        return;
    ss->record_start = util_clock_mono_ms();
    ss->record_bytes = 0;
    arm(ss);
}

void deadline_read(struct smtpd_session *ss)
{
    if (ss->s != NULL && !per_record(ss->s) &&
        evtimer_pending(ss->deadline_ev, NULL))
        deadline_start(ss);
}

void deadline_progress(struct smtpd_session *ss, const char *p, size_t n)
{
    if (ss->s == NULL || !per_record(ss->s))
        return;
    ss->record_bytes += n;
    if (memchr(p, '\n', n) != NULL ||
        ss->record_bytes >= (uint64_t)ss->s->cf.line_limit)
        deadline_start(ss);
}

void deadline_tighten(struct smtpd_session *ss)
{
    if (ss->deadline_ev != NULL && evtimer_pending(ss->deadline_ev, NULL))
        arm(ss);
}

void deadline_stop(struct smtpd_session *ss)
{
    if (ss->deadline_ev != NULL)
        evtimer_del(ss->deadline_ev);
}

void deadline_free(struct smtpd_session *ss)
{
    if (ss->deadline_ev != NULL)
        event_free(ss->deadline_ev);
    ss->deadline_ev = NULL;
}
