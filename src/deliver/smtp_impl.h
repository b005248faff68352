#ifndef SLUICE_SMTP_IMPL_H
#define SLUICE_SMTP_IMPL_H

/*
 * NAME
 *	smtp_impl 3h - what the SMTP and LMTP client's files share
 * SYNOPSIS
 *	#include "deliver/smtp_impl.h"
 *
 *	Connection handling (connection.c), for the protocol steps:
 *
 *	void	connection_timer_arm(struct deliver_session *s, int ms)
 *	void	connection_setcb(struct deliver_session *s)
 *	void	connection_next_address(struct deliver_session *s,
 *			const char *reason)
 *	void	connection_next_address_dsn(struct deliver_session *s,
 *			const char *dsn, const char *reason)
 *	void	connection_retry_address(struct deliver_session *s)
 *	void	connection_reconnect(struct deliver_session *s)
 *	void	connection_finish(struct deliver_session *s)
 *
 *	Protocol steps (protocol.c), for the connection handling:
 *
 *	void	protocol_reply(struct deliver_session *s)
 *	void	protocol_handshake_passed(struct deliver_session *s)
 *	void	protocol_ehlo_done(struct deliver_session *s)
 *	void	protocol_rcpt_set_rest(struct deliver_session *s,
 *			enum deliver_status status, int code,
 *			const char *enhanced, const char *text)
 *
 *	STARTTLS (starttls.c), for both:
 *
 *	void	starttls_out_init(struct deliver_session *s)
 *	int	starttls_out_host_ok(struct deliver_session *s, char *reason,
 *			size_t len)
 *	int	starttls_out_after_ehlo(struct deliver_session *s)
 *	void	starttls_out_reply(struct deliver_session *s)
 *	void	starttls_out_established(struct deliver_session *s)
 *	void	starttls_out_failed(struct deliver_session *s, int timed_out)
 *	const char *starttls_out_cache_key(const struct deliver_session *s,
 *			int tls)
 *
 *	SMTP AUTH (auth.c), for both:
 *
 *	int	auth_out_after_ehlo(struct deliver_session *s)
 *	void	auth_out_reply(struct deliver_session *s)
 *	char	*auth_out_cache_key(const struct deliver_session *s, int tls,
 *			const char *user)
 *	char	*auth_out_endpoint_key(const struct deliver_session *s,
 *			int tls, const char *user)
 *	const char *auth_out_user_at(const struct deliver_session *s,
 *			size_t i)
 *	size_t	auth_out_users(const struct deliver_session *s,
 *			const char **users, size_t max)
 * DESCRIPTION
 *	Nothing outside the client's files includes this header.
 *	connection.c, protocol.c, starttls.c and auth.c describe their
 *	functions. A struct
 *	deliver_session is one delivery: the request (copied), the result
 *	being built, the connection in use and where the dialogue is
 *	(enum deliver_state).
 */

#include "deliver/deliver_impl.h"
#include "smtp/smtp.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

struct event;
struct event_base;

/* Where a delivery is; connection.c names each for reasons. */
enum deliver_state {
    ST_CONNECT,
    ST_GREETING,
    ST_EHLO,
    ST_HELO,
    ST_STARTTLS, /* STARTTLS sent, its reply awaited */
    ST_TLS,      /* the TLS handshake */
    ST_AUTH,     /* AUTH sent, its replies awaited (auth.c) */
    ST_MAIL,
    ST_RCPT,
    ST_DATA,
    ST_DOT,
    ST_RSET, /* RSET after a transaction that sent nothing, to keep it */
    ST_QUIT,
    ST_DONE,
};

struct agent;

struct deliver_session {
    struct event_base *base;
    struct agent *agent; /* DELIVER_AGENT: the agent at its job (agent.c) */
    struct deliver_request req;   /* copied */
    int holding;                  /* holds req.cache_key (queue_behind) */
    int queued;                   /* in line behind another delivery */
    struct deliver_waiter waiter; /* while queued */
    deliver_done_fn *done;
    void *ctx;
    struct deliver_result *res;
    size_t addr;  /* index of the address in use */
    int sessions; /* connections tried */
    struct bufferevent *bev;
    struct event *timer;
    struct event *finish; /* calls done from the loop */
    enum deliver_state state;
    struct smtp_reply reply;
    unsigned features;
    uint64_t size_limit;
    int pipelined;
    int handshake_ok; /* greeting and EHLO/HELO passed somewhere */
    size_t rcpt_replied;
    size_t accepted;
    size_t dot_replied; /* LMTP: replies after the body */
    char *decided;      /* per recipient: a final result is set */
    char *accepted_flag;
    size_t skip; /* replies to ignore after a rejected MAIL */
    char peer[400];
    char endpoint[160]; /* the connection's "addr:port", for the cache */
    int64_t start_us, handshake_us; /* monotonic: intervals only */
    char last_failure[600];
    char last_dsn[8];           /* of last_failure */
    int reused;                 /* the connection came from the cache */
    size_t replies;             /* complete replies on this connection */
    int64_t born_us;            /* when this connection was made (monotonic) */
    int uses;                   /* deliveries it carried, this one included */
    struct util_buf downgraded; /* the body made 7-bit for this server */
    int downgrade;              /* send downgraded, not req.body */
    int tls_on;                 /* the connection speaks TLS */
    int tls_plain;              /* TLS failed at may: this address plain */
    char *key_tls, *key_plain;  /* cache keys (starttls.c) */
    char *tls_ident;            /* the TLS policy asked for, as text */
    unsigned auth_offered;      /* SMTP_AUTH_* of the last EHLO */
    unsigned auth_mech;         /* the mechanism in use */
    int auth_step;              /* responses sent after AUTH */
    struct deliver_credentials cred; /* for this server, into the table */
    char auth_user[256];             /* the connection's user, "" if none */
    int auth_long;                   /* the user did not fit: do not cache */
};

void connection_timer_arm(struct deliver_session *s, int ms);
void connection_setcb(struct deliver_session *s);
void connection_next_address(struct deliver_session *s, const char *reason);
void connection_next_address_dsn(struct deliver_session *s, const char *dsn,
                                 const char *reason);
void connection_retry_address(struct deliver_session *s);
void connection_reconnect(struct deliver_session *s);
void connection_finish(struct deliver_session *s);

void protocol_reply(struct deliver_session *s);
void protocol_handshake_passed(struct deliver_session *s);
void protocol_ehlo_done(struct deliver_session *s);
void protocol_rcpt_set_rest(struct deliver_session *s,
                            enum deliver_status status, int code,
                            const char *enhanced, const char *text);

void starttls_out_init(struct deliver_session *s);
int starttls_out_host_ok(struct deliver_session *s, char *reason, size_t len);
int starttls_out_after_ehlo(struct deliver_session *s);
void starttls_out_reply(struct deliver_session *s);
void starttls_out_established(struct deliver_session *s);
void starttls_out_failed(struct deliver_session *s, int timed_out);
const char *starttls_out_cache_key(const struct deliver_session *s, int tls);

int auth_out_after_ehlo(struct deliver_session *s);
void auth_out_reply(struct deliver_session *s);
char *auth_out_endpoint_key(const struct deliver_session *s, int tls,
                            const char *user);
const char *auth_out_user_at(const struct deliver_session *s, size_t i);
char *auth_out_cache_key(const struct deliver_session *s, int tls,
                         const char *user);
size_t auth_out_users(const struct deliver_session *s, const char **users,
                      size_t max);

#endif
