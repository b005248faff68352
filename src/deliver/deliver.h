#ifndef SLUICE_DELIVER_H
#define SLUICE_DELIVER_H

/*
 * NAME
 *	deliver 3h - delivery agents: one SMTP or LMTP delivery
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_session *deliver_start(struct event_base *base,
 *			const struct deliver_request *req,
 *			deliver_done_fn *done, void *ctx)
 *	void	deliver_cancel(struct deliver_session *s)
 *	void	deliver_result_free(struct deliver_result *res)
 * DESCRIPTION
 *	deliver_start() delivers one entry (a message to some recipients of
 *	one destination) over SMTP or LMTP, asynchronously on the libevent
 *	loop base, and calls done exactly once with the outcome, never from
 *	inside deliver_start(). The request is copied; the result belongs
 *	to the callback (deliver_result_free()).
 *
 *	The addresses of the request are tried in order (the caller puts
 *	them in MX preference order), at most session_limit connections:
 *	a connection that fails (refused, timed out) or a greeting that is
 *	not 2xx moves on to the next address. On a connection, the client
 *	sends EHLO (HELO if EHLO is refused), then MAIL FROM (with SIZE when
 *	offered, BODY=8BITMIME for an 8-bit body when offered, RET and
 *	ENVID when DSN is offered), RCPT TO for each recipient (NOTIFY and
 *	ORCPT when DSN is offered), DATA and the dot-stuffed body; with
 *	PIPELINING offered, MAIL, the RCPTs and DATA go in one write (RFC
 *	2920). LMTP sends LHLO and reads one reply per accepted recipient
 *	after the body (RFC 2033). Then QUIT.
 *
 *	The outcome follows the reference's classification: hop_ok is 0
 *	(negative concurrency feedback) when no address could be reached,
 *	or the greeting or EHLO/HELO failed, or the connection was lost or
 *	timed out before the transaction ended; every recipient is then
 *	deferred with hop_reason. Otherwise hop_ok is 1 (the site is up)
 *	and each recipient has its own result: delivered, deferred (4xx)
 *	or bounced (5xx), from its RCPT reply, or from the MAIL or DATA
 *	reply that rejected the whole transaction, or from the end of data
 *	reply (per recipient with LMTP).
 *
 *	Each state has the reference's timeout (smtp_connect_timeout,
 *	smtp_helo_timeout, smtp_mail_timeout, smtp_rcpt_timeout,
 *	smtp_data_init_timeout, smtp_data_xfer_timeout,
 *	smtp_data_done_timeout, smtp_quit_timeout); a timeout ends the
 *	connection as a loss.
 *
 *	deliver_cancel() abandons a delivery (daemon shutdown): the callback
 *	is not called, every recipient counts as not delivered.
 */

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum deliver_proto {
    DELIVER_SMTP,
    DELIVER_LMTP,
};

enum deliver_status {
    DELIVER_OK,
    DELIVER_DEFER,
    DELIVER_BOUNCE,
};

struct deliver_addr {
    char host[256]; /* the exchanger's name, for relay= and reasons */
    struct sockaddr_storage sa;
    socklen_t salen;
};

struct deliver_rcpt {
    const char *address;
    const char *orcpt; /* or NULL */
    unsigned notify;   /* SPOOL_NOTIFY_* bits, 0 = not given */
};

struct deliver_timeouts {
    int connect, helo, mail, rcpt, data_init, data_xfer, data_done, quit;
};

struct deliver_request {
    enum deliver_proto proto;
    const char *helo_name;
    const char *sender; /* "" for the null sender */
    const char *envid;  /* or NULL */
    int ret;            /* 0 none, 1 FULL, 2 HDRS */
    const struct deliver_rcpt *rcpt;
    size_t nrcpt;
    const char *body; /* CRLF line ends, not stuffed */
    size_t size;
    const struct deliver_addr *addrs;
    size_t naddrs;
    int session_limit; /* connections at most (smtp_mx_session_limit) */
    struct deliver_timeouts timeouts; /* milliseconds */
};

struct deliver_rcpt_result {
    enum deliver_status status;
    int code;          /* the SMTP reply code, 0 if none */
    char enhanced[16]; /* "5.1.1", or derived from the code */
    char *text;        /* "host said: 550 5.1.1 ... (in reply to RCPT TO
                          command)", or the hop reason */
};

struct deliver_result {
    int hop_ok;       /* got past connection and handshake */
    char *hop_reason; /* when not */
    size_t nrcpt;
    struct deliver_rcpt_result *rcpt;
    char relay[512];  /* "host[addr]:port", or "none" */
    double conn_time; /* seconds: connection setup (c of delays=) */
    double xfer_time; /* seconds: transmission (d of delays=) */
};

typedef void deliver_done_fn(void *ctx, struct deliver_result *res);

struct deliver_session;

struct deliver_session *deliver_start(struct event_base *base,
                                      const struct deliver_request *req,
                                      deliver_done_fn *done, void *ctx);
void deliver_cancel(struct deliver_session *s);
void deliver_result_free(struct deliver_result *res);

#endif
