/*
 * NAME
 *	listener 3 - the SMTP server's listening sockets
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	listener_open(struct smtpd_server *s, const char *list,
 *			const char *param, int tls, char *why, size_t whylen)
 *	int	listener_word_check(const char *word)
 *	void	listener_enable(struct smtpd_server *s, int on)
 *	void	listener_close(struct smtpd_server *s)
 * DESCRIPTION
 *	listener_open() listens on every address of list ("127.0.0.1:2525",
 *	"[::1]:2525", separated by commas or spaces), the value of
 *	parameter param, and hands each connection to smtpd_session_open():
 *	with tls set the connection speaks TLS from its first byte
 *	(smtpd_tls_wrapper_listen, or smtpd_listen with
 *	smtpd_tls_wrappermode), else plain SMTP that may turn to TLS with
 *	STARTTLS. It returns -1 with a reason naming param when an address
 *	is bad or cannot be bound. listener_word_check() checks one
 *	address's syntax without binding (0 or -1).
 *
 *	listener_enable() stops or resumes accepting on every listener (at
 *	SMTPD_SESSION_MAX sessions, smtpd.c). When accept() fails (out of
 *	file descriptors or memory) the pending connection stays pending
 *	and a listener would be called again at once, for ever: the
 *	listeners pause for SMTPD_ACCEPT_PAUSE_MS instead (clients wait in
 *	the listen queue), with a warning at most once a minute.
 *	listener_close() closes them all (the start of a stop).
 */

#include "ingress/smtpd_impl.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void listener_enable(struct smtpd_server *s, int on)
{
    for (size_t i = 0; i < s->nlisteners; i++) {
        if (on)
            evconnlistener_enable(s->listeners[i]);
        else
            evconnlistener_disable(s->listeners[i]);
    }
    s->paused = !on;
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd,
                      struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    smtpd_session_open(arg, fd, sa, (socklen_t)salen, 0);
}

static void accept_tls_cb(struct evconnlistener *l, evutil_socket_t fd,
                          struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    smtpd_session_open(arg, fd, sa, (socklen_t)salen, 1);
}

/* The pause after accept() failed is over: accept again, if there is room. */
static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct smtpd_server *s = arg;

    (void)fd;
    (void)what;
    if (!s->closing && s->nsessions < SMTPD_SESSION_MAX)
        listener_enable(s, 1);
}

static void accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct smtpd_server *s = arg;
    struct timeval tv = {0, SMTPD_ACCEPT_PAUSE_MS * 1000};
    int err = EVUTIL_SOCKET_ERROR();
    time_t now = time(NULL);

    (void)l;
    if (now - s->accept_logged >= 60) {
        s->accept_logged = now;
        smtpd_log(s, "warning: accept: %s; not accepting for %d ms",
                  evutil_socket_error_to_string(err), SMTPD_ACCEPT_PAUSE_MS);
    }
    listener_enable(s, 0);
    evtimer_add(s->resume_ev, &tv);
}

/* The address of one word; -1 when it is not ADDRESS:PORT. */
static int word_parse(const char *word, struct sockaddr_storage *ss, int *len)
{
    *len = sizeof(*ss);
    memset(ss, 0, sizeof(*ss));
    if (evutil_parse_sockaddr_port(word, (struct sockaddr *)ss, len) < 0 ||
        ((struct sockaddr_in *)ss)->sin_port == 0)
        return -1;
    return 0;
}

int listener_word_check(const char *word)
{
    struct sockaddr_storage ss;
    int len;

    return word_parse(word, &ss, &len);
}

struct listen_ctx {
    struct smtpd_server *s;
    const char *param;
    int tls;
    char *why;
    size_t whylen;
};

static int listen_one(void *arg, const char *word)
{
    struct listen_ctx *lc = arg;
    struct smtpd_server *s = lc->s;
    struct sockaddr_storage ss;
    int len;
    struct evconnlistener *l;

    if (word_parse(word, &ss, &len) < 0) {
        snprintf(lc->why, lc->whylen,
                 "%s: \"%s\" is not ADDRESS:PORT or [IPV6-ADDRESS]:PORT",
                 lc->param, word);
        return -1;
    }
    l = evconnlistener_new_bind(s->base, lc->tls ? accept_tls_cb : accept_cb, s,
                                LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE |
                                    LEV_OPT_CLOSE_ON_EXEC,
                                511, (struct sockaddr *)&ss, len);
    if (l == NULL) {
        snprintf(lc->why, lc->whylen, "%s: %s: %s", lc->param, word,
                 strerror(errno));
        return -1;
    }
    evconnlistener_set_error_cb(l, accept_error_cb);
    s->listeners =
        xrealloc(s->listeners, (s->nlisteners + 1) * sizeof(*s->listeners));
    s->listeners[s->nlisteners++] = l;
    return 0;
}

int listener_open(struct smtpd_server *s, const char *list, const char *param,
                  int tls, char *why, size_t whylen)
{
    struct listen_ctx lc = {s, param, tls, why, whylen};

    if (s->resume_ev == NULL &&
        (s->resume_ev = evtimer_new(s->base, resume_cb, s)) == NULL) {
        snprintf(why, whylen, "smtpd: cannot create a timer");
        return -1;
    }
    return smtpd_list_each(list, listen_one, &lc);
}

void listener_close(struct smtpd_server *s)
{
    if (s->resume_ev)
        evtimer_del(s->resume_ev);
    for (size_t i = 0; i < s->nlisteners; i++)
        evconnlistener_free(s->listeners[i]);
    free(s->listeners);
    s->listeners = NULL;
    s->nlisteners = 0;
}
