/*
 * NAME
 *	auth 3 - the SMTP server's AUTH command (RFC 4954)
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	auth_offered(const struct smtpd_session *ss)
 *	void	auth_command(struct smtpd_session *ss,
 *			struct smtp_command *cmd)
 *	void	auth_response(struct smtpd_session *ss, const char *line,
 *			size_t len)
 *	void	auth_line_too_long(struct smtpd_session *ss)
 *	void	auth_session_end(struct smtpd_session *ss)
 * DESCRIPTION
 *	With smtpd_sasl_auth_enable, EHLO offers "AUTH PLAIN LOGIN"
 *	(auth_offered()): in TLS only, unless smtpd_tls_auth_only = no
 *	(decision 71). The exchange runs through sasl/ (the back end of
 *	smtpd_sasl_type); while the back end thinks, the session waits
 *	(state WAIT: nothing is read), and while the client is to answer
 *	a "334" challenge it is in state AUTH, where each line is a
 *	response (auth_response()) under the usual command deadline.
 *
 *	The replies, in Postfix's words where Postfix has them:
 *	503 5.5.1 Error: send HELO/EHLO first
 *	503 5.5.1 Error: authentication not enabled
 *	503 5.5.1 Error: MAIL transaction in progress
 *	504 5.5.4 Encryption required for requested authentication
 *		mechanism (smtpd_tls_auth_only, no TLS yet)
 *	503 5.5.1 Error: already authenticated
 *	504 5.5.4 Unrecognized authentication type (not PLAIN or LOGIN)
 *	334 challenge
 *	235 2.7.0 Authentication successful
 *	535 5.7.8 Error: authentication failed: REASON
 *	454 4.7.0 Temporary authentication failure: REASON (the back end
 *		cannot answer: Dovecot down, slow or not speaking its
 *		protocol)
 *	501 5.5.2 Cannot decode response (not base64)
 *	501 5.7.0 Authentication aborted (the client sent "*")
 *	500 5.5.6 Authentication Exchange line is too long (RFC 4954 4;
 *		a response longer than line_length_limit)
 *
 *	A failed login's 535 comes after a delay that grows with the
 *	failures from the client's address (failures.c), on the session's
 *	own timer. Every 4xx and 5xx counts toward smtpd_hard_error_limit
 *	(session.c), so a guesser is disconnected after that many tries.
 *	A successful login sets the session's user and mechanism: the
 *	relay and sender restrictions see them (restrict.c), the
 *	"client=" log line of each message carries them, Received: says
 *	ESMTPA or ESMTPSA (RFC 3848), and with
 *	smtpd_sasl_authenticated_header "(Authenticated sender: USER)"
 *	(receive.c). STARTTLS forgets a login made before it (RFC 3207
 *	4.2).
 *
 *	Log lines: "warning: CLIENT: SASL MECH authentication failed:
 *	REASON, sasl_username=USER" (Postfix's form; "(unavailable)" when
 *	no user name was given), "warning: CLIENT: SASL MECH
 *	authentication aborted".
 *
 *	auth_session_end() frees what a session's AUTH holds: a
 *	conversation under way (the back end forgets it), the delay's
 *	timer, the user name.
 */

#include "ingress/smtpd_impl.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

int auth_offered(const struct smtpd_session *ss)
{
    return ss->s != NULL && ss->s->cf.sasl != NULL &&
           (!ss->s->cf.tls_auth_only || ss->tls != NULL);
}

/* The end of an exchange: the conversation goes, the session reads on. */
static void auth_end(struct smtpd_session *ss)
{
    sasl_conv_free(ss->auth_conv);
    ss->auth_conv = NULL;
    ss->auth_turn = 0;
}

static void log_failure(struct smtpd_session *ss, const char *reason)
{
    const char *user = ss->auth_conv ? sasl_conv_user(ss->auth_conv) : "";
    char safe[SASL_FIELD_MAX + 1];

    snprintf(safe, sizeof(safe), "%s", user[0] ? user : "(unavailable)");
    for (char *c = safe; *c; c++)
        if ((unsigned char)*c < ' ' || *c == 0x7f)
            *c = '?';
    smtpd_log(ss->s,
              "warning: %s: SASL %s authentication failed: %s, "
              "sasl_username=%s",
              ss->client, ss->auth_method, reason, safe);
}

/* The failed login's delay is over: the 535 goes out. */
static void delay_over(evutil_socket_t fd, short what, void *arg)
{
    struct smtpd_session *ss = arg;

    (void)fd;
    (void)what;
    if (ss->state != SESSION_WAIT)
        return;
    session_reply(ss, "%s", ss->auth_reply);
    session_wait_end(ss);
}

static void failed(struct smtpd_session *ss, const char *reason)
{
    struct smtpd_server *s = ss->s;
    long ms;

    log_failure(ss, reason);
    auth_end(ss);
    snprintf(ss->auth_reply, sizeof(ss->auth_reply),
             "535 5.7.8 Error: authentication failed: %s", reason);
    ms = failures_note(s->failures, (const struct sockaddr *)&ss->addr,
                       s->cf.auth_delay_ms, s->cf.auth_delay_limit_ms,
                       time(NULL));
    if (ms <= 0) {
        session_reply(ss, "%s", ss->auth_reply);
        session_wait_end(ss);
        return;
    }
    if (ss->auth_ev == NULL &&
        (ss->auth_ev = evtimer_new(s->base, delay_over, ss)) == NULL)
        util_panic("smtpd: evtimer_new failed");
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(ss->auth_ev, &tv);
}

/* The back end's answer (sasl.h), from the loop. */
static void answered(void *arg, enum sasl_result r, const char *said)
{
    struct smtpd_session *ss = arg;
    char text[300]; /* said goes with the conversation */

    snprintf(text, sizeof(text), "%s", said);

    if (ss->state != SESSION_WAIT || ss->s == NULL)
        return; /* closing: it goes with the session */
    switch (r) {
    case SASL_MORE:
        session_reply(ss, "334 %s", text);
        ss->auth_turn = 1;
        session_wait_end(ss);
        return;
    case SASL_DONE:
        free(ss->sasl_username);
        ss->sasl_username = xstrdup(text);
        for (char *c = ss->sasl_username; *c; c++)
            if ((unsigned char)*c < ' ' || *c == 0x7f)
                *c = '?';
        snprintf(ss->sasl_method, sizeof(ss->sasl_method), "%s",
                 ss->auth_method);
        auth_end(ss);
        ss->counts[COUNT_AUTH][0]++;
        session_reply(ss, "235 2.7.0 Authentication successful");
        break;
    case SASL_FAIL:
        failed(ss, text);
        return;
    case SASL_TEMP:
        log_failure(ss, text);
        auth_end(ss);
        session_reply(ss, "454 4.7.0 Temporary authentication failure: %s",
                      text);
        break;
    case SASL_BAD:
        auth_end(ss);
        session_reply(ss, "501 5.5.2 %s", text);
        break;
    }
    session_wait_end(ss);
}

/* The session's addresses as Dovecot's rip and lip want them. */
static void client_info(struct smtpd_session *ss, struct sasl_client *ci,
                        char *lip, size_t liplen)
{
    struct sockaddr_storage local;
    socklen_t len = sizeof(local);
    evutil_socket_t fd = bufferevent_getfd(ss->bev);
    const char *rip = ss->addr_text;

    if (strncmp(rip, "IPv6:", 5) == 0)
        rip += 5;
    lip[0] = 0;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&local, &len) == 0) {
        if (local.ss_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)&local)->sin_addr, lip,
                      (socklen_t)liplen);
        else if (local.ss_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&local)->sin6_addr,
                      lip, (socklen_t)liplen);
    }
    ci->rip = strcmp(rip, "local") ? rip : NULL;
    ci->lip = lip[0] ? lip : NULL;
    ci->secured = ss->tls != NULL;
}

void auth_command(struct smtpd_session *ss, struct smtp_command *cmd)
{
    struct smtpd_server *s = ss->s;
    struct sasl_client ci;
    char lip[INET6_ADDRSTRLEN];

    if (ss->helo == NULL) {
        session_reply(ss, "503 5.5.1 Error: send HELO/EHLO first");
    } else if (s->cf.sasl == NULL) {
        session_reply(ss, "503 5.5.1 Error: authentication not enabled");
    } else if (ss->in_mail) {
        session_reply(ss, "503 5.5.1 Error: MAIL transaction in progress");
    } else if (!auth_offered(ss)) {
        session_reply(ss, "504 5.5.4 Encryption required for requested "
                          "authentication mechanism");
    } else if (ss->sasl_username != NULL) {
        session_reply(ss, "503 5.5.1 Error: already authenticated");
    } else {
        snprintf(ss->auth_method, sizeof(ss->auth_method), "%.*s",
                 SASL_MECH_MAX, cmd->arg);
        for (char *c = ss->auth_method; *c; c++)
            if (*c >= 'a' && *c <= 'z')
                *c = (char)(*c - 'a' + 'A');
            else if ((unsigned char)*c < ' ' || *c == 0x7f)
                *c = '?';
        client_info(ss, &ci, lip, sizeof(lip));
        ss->auth_conv = sasl_conv_start(s->cf.sasl, ss->auth_method, cmd->path,
                                        &ci, answered, ss);
        if (ss->auth_conv == NULL) {
            session_reply(ss, "504 5.5.4 Unrecognized authentication type");
            return;
        }
        session_wait_begin(ss);
    }
}

void auth_response(struct smtpd_session *ss, const char *line, size_t len)
{
    ss->auth_turn = 0;
    ss->state = SESSION_COMMAND;
    if (len == 1 && line[0] == '*') {
        smtpd_log(ss->s, "warning: %s: SASL %s authentication aborted",
                  ss->client, ss->auth_method);
        auth_end(ss);
        session_reply(ss, "501 5.7.0 Authentication aborted");
        return;
    }
    if (memchr(line, 0, len) != NULL) {
        auth_end(ss);
        session_reply(ss, "501 5.5.2 Cannot decode response");
        return;
    }
    session_wait_begin(ss);
    sasl_conv_step(ss->auth_conv, line);
}

void auth_line_too_long(struct smtpd_session *ss)
{
    auth_end(ss);
    ss->state = SESSION_COMMAND;
    session_reply(ss, "500 5.5.6 Authentication Exchange line is too long");
}

void auth_session_end(struct smtpd_session *ss)
{
    auth_end(ss);
    if (ss->auth_ev != NULL)
        event_free(ss->auth_ev);
    ss->auth_ev = NULL;
    free(ss->sasl_username);
    ss->sasl_username = NULL;
    ss->sasl_method[0] = 0;
}
