#ifndef SLUICE_SMTPD_IMPL_H
#define SLUICE_SMTPD_IMPL_H

/*
 * NAME
 *	smtpd_impl 3h - what the SMTP server's files share
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	Server (smtpd.c), for the sessions:
 *
 *	void	smtpd_log(struct smtpd_server *s, const char *fmt, ...)
 *	int	smtpd_relay_domain(const struct smtpd_server *s,
 *			const char *domain)
 *	int	smtpd_storage_check(struct smtpd_server *s, uint64_t size,
 *			char *why, size_t whylen)
 *	long	smtpd_flow_delay(struct smtpd_server *s, char *why,
 *			size_t whylen)
 *	void	smtpd_store_failed(struct smtpd_server *s, const char *why)
 *	void	smtpd_session_gone(struct smtpd_session *ss)
 *	int	smtpd_client_trusted(const struct smtpd_session *ss)
 *	enum bare_mode smtpd_bare_mode(const struct smtpd_session *ss)
 *	void	smtpd_client_text(const struct sockaddr *sa, socklen_t salen,
 *			char *addr, size_t addrlen, char *client,
 *			size_t clientlen)
 *	int	smtpd_list_each(const char *list,
 *			int (*fn)(void *, const char *), void *ctx)
 *	int	smtpd_session_open(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen, int tls)
 *
 *	Listeners (listener.c), for the server:
 *
 *	int	listener_open(struct smtpd_server *s, const char *list,
 *			const char *param, int tls, char *why, size_t whylen)
 *	int	listener_word_check(const char *word)
 *	void	listener_enable(struct smtpd_server *s, int on)
 *	void	listener_close(struct smtpd_server *s)
 *
 *	Sessions (session.c), for the server:
 *
 *	struct smtpd_session *session_create(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen, int tls)
 *	void	session_shutdown(struct smtpd_session *ss)
 *	int	session_busy(const struct smtpd_session *ss)
 *	void	session_orphan(struct smtpd_session *ss)
 *
 *	Sessions (session.c), for the commands and the content:
 *
 *	const char *session_hostname(const struct smtpd_session *ss)
 *	void	session_reply(struct smtpd_session *ss, const char *fmt, ...)
 *	void	session_reply_final(struct smtpd_session *ss,
 *			const char *fmt, ...)
 *	void	session_reply_raw(struct smtpd_session *ss, const char *text)
 *	void	session_transaction_reset(struct smtpd_session *ss)
 *	void	session_wait_begin(struct smtpd_session *ss)
 *	void	session_wait_end(struct smtpd_session *ss)
 *	int	session_callback_orphaned(struct smtpd_session *ss)
 *	void	session_greet(struct smtpd_session *ss)
 *	void	session_tls_begin(struct smtpd_session *ss)
 *	void	session_connected(struct smtpd_session *ss)
 *
 *	The client's name (peer.c), for the sessions:
 *
 *	int	peer_start(struct smtpd_session *ss)
 *	void	peer_timeout(struct smtpd_session *ss)
 *	void	peer_cancel(struct smtpd_session *ss)
 *
 *	STARTTLS and implicit TLS (starttls.c), for the commands, the
 *	sessions and what goes into a message:
 *
 *	int	starttls_offered(const struct smtpd_session *ss)
 *	int	starttls_required(struct smtpd_session *ss)
 *	void	starttls_command(struct smtpd_session *ss,
 *			struct smtp_command *cmd)
 *	void	starttls_established(struct smtpd_session *ss)
 *	void	starttls_failed(struct smtpd_session *ss, const char *why)
 *	void	starttls_received(struct util_buf *b,
 *			const struct smtpd_session *ss)
 *
 *	Commands (command.c), for the sessions:
 *
 *	void	command_rcpt_resume(struct smtpd_session *ss)
 *	void	command_run(struct smtpd_session *ss, const char *line,
 *			size_t len)
 *
 *	Content (content.c), for the sessions and the commands:
 *
 *	void	content_begin(struct smtpd_session *ss, int mode)
 *	int	content_read_data(struct smtpd_session *ss,
 *			struct evbuffer *in)
 *	int	content_read_chunk(struct smtpd_session *ss,
 *			struct evbuffer *in)
 *	int	content_bare_command(struct smtpd_session *ss)
 *	void	content_drop(struct smtpd_session *ss)
 *
 *	For the deadlines (deadline.c), the session's answer to one passed:
 *
 *	void	session_timeout(struct smtpd_session *ss)
 *
 *	Deadlines (deadline.c), for the sessions and the server:
 *
 *	int	deadline_init(struct smtpd_session *ss)
 *	void	deadline_start(struct smtpd_session *ss)
 *	void	deadline_read(struct smtpd_session *ss)
 *	void	deadline_progress(struct smtpd_session *ss, const char *p,
 *			size_t n)
 *	void	deadline_tighten(struct smtpd_session *ss)
 *	void	deadline_stop(struct smtpd_session *ss)
 *	void	deadline_free(struct smtpd_session *ss)
 *
 *	AUTH (auth.c), for the commands and the sessions:
 *
 *	int	auth_offered(const struct smtpd_session *ss)
 *	void	auth_command(struct smtpd_session *ss,
 *			struct smtp_command *cmd)
 *	void	auth_response(struct smtpd_session *ss, const char *line,
 *			size_t len)
 *	void	auth_line_too_long(struct smtpd_session *ss)
 *	void	auth_session_end(struct smtpd_session *ss)
 *
 *	Failed logins per client address (failures.c), for AUTH:
 *
 *	struct auth_failures *failures_create(void)
 *	long	failures_note(struct auth_failures *t,
 *			const struct sockaddr *sa, long base_ms,
 *			long limit_ms, time_t now)
 *	void	failures_free(struct auth_failures *t)
 *
 *	Restrictions (restrict.c), for the server and the commands:
 *
 *	int	restrict_parse(const char *param, const char *list,
 *			int relay, struct restrict_list *out, char *why,
 *			size_t whylen)
 *	int	login_maps_load(const char *value, struct login_map **out,
 *			char *why, size_t whylen)
 *	void	login_maps_free(struct login_map *m)
 *	int	restrict_sender(struct smtpd_session *ss, const char *rcpt,
 *			char *reply, size_t replylen)
 *	int	restrict_relay(struct smtpd_session *ss, const char *rcpt,
 *			char *reply, size_t replylen)
 *	int	restrict_recipient(struct smtpd_session *ss,
 *			const char *rcpt, char *reply, size_t replylen)
 *
 *	Address verification (verify.c), for the restrictions:
 *
 *	int	verify_check(struct smtpd_session *ss, int sender,
 *			const char *address, char *reply, size_t replylen)
 *	void	verify_cancel(struct smtpd_session *ss)
 *	void	verify_forget(struct smtpd_session *ss)
 *
 *	What goes into a message (receive.c), for the sessions:
 *
 *	void	receive_received(struct util_buf *b,
 *			const struct smtpd_session *ss, const char *hostname,
 *			time_t now)
 *	int	receive_head(struct smtpd_session *ss, struct util_buf *tmp,
 *			struct submit_input *in, char *why, size_t whylen)
 *	struct spool_msg *receive_message(struct smtpd_session *ss,
 *			const char *hostname, int add_missing, time_t now,
 *			char *why, size_t whylen)
 *
 *	Its DKIM signature (sign.c):
 *
 *	int	receive_sign(struct smtpd_session *ss, time_t now,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	Nothing outside the SMTP server's files includes this header.
 *	smtpd.c, listener.c, session.c, command.c, starttls.c, auth.c,
 *	failures.c, restrict.c, content.c, deadline.c, receive.c, peer.c
 *	and sign.c
 *	describe their functions (staging.c's are in ingress_private.h).
 *	SESSION_REPLY_MAX bounds one reply; RECEIVE_HEAD_MAX the start of
 *	a staged message read back for its header checks (receive.c).
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"
#include "sasl/sasl.h"
#include "smtp/smtp.h"
#include "tls/tls.h"

#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>

struct bufferevent;
struct evbuffer;
struct evconnlistener;
struct event;

#define SESSION_REPLY_MAX 600    /* bytes of one reply line, CRLF included */
#define FAILURES_MAX      4096   /* client addresses with failed logins kept */
#define FAILURES_EXPIRE   600    /* s: a failed login is remembered this long */
#define RESTRICT_MAX      16     /* entries of one restriction list */
#define RECEIVE_HEAD_MAX  262144 /* bytes of a staged message read back */

/* smtpd_forbid_bare_newline: what a bare line end from a client does. */
enum bare_mode {
    BARE_DISCONNECT, /* in DATA: 521 at once, and the session ends */
    BARE_NORMALIZE,  /* a bare LF is a line end (normalize, yes, no) */
    BARE_NOTE,       /* as normalize, and notes=bare_lf in the log */
    BARE_REJECT,     /* the command or message gets bare_code */
};

/* smtpd_tls_security_level, as it applies (empty: may with a
 * certificate, none without). */
enum starttls_level {
    STARTTLS_NONE,    /* no STARTTLS offered */
    STARTTLS_MAY,     /* offered */
    STARTTLS_ENCRYPT, /* MAIL only after STARTTLS */
};

/* The restrictions sluice knows (restrict.c). */
enum restriction {
    R_PERMIT_MYNETWORKS,
    R_PERMIT_SASL,
    R_REJECT_UNAUTH_DEST,
    R_DEFER_UNAUTH_DEST,
    R_PERMIT,
    R_REJECT,
    R_SENDER_LOGIN_MISMATCH,
    R_AUTH_SENDER_MISMATCH,
    R_UNAUTH_SENDER_MISMATCH,
    R_UNVERIFIED_RECIPIENT, /* reject_unverified_recipient (verify.c) */
    R_UNVERIFIED_SENDER,    /* reject_unverified_sender */
};

/* Which list restrict_parse() reads. */
enum restrict_where {
    RESTRICT_SENDER,
    RESTRICT_RELAY,
    RESTRICT_RECIPIENT,
};

struct restrict_list {
    enum restriction r[RESTRICT_MAX];
    size_t n;
};

struct login_map;
struct auth_failures;

/* The server's settings, as parsed from struct smtpd_params. */
struct smtpd_conf {
    char *hostname;
    char *queue_directory;
    struct ingress_nets *mynetworks;
    struct ingress_nets *exempt; /* from connection_limit */
    char **relay_domains;        /* lower case */
    size_t nrelay;
    uint64_t size_limit, queue_minfree;
    long recipient_limit, connection_limit, error_limit, line_limit;
    long timeout_ms, in_flow_delay_ms, active_limit, backlog_limit;
    long stress_timeout_ms; /* at most timeout_ms */
    int per_record_deadline;
    long hopcount_limit, junk_limit;
    uint64_t memory_limit;
    uint64_t staging_threshold; /* past it, content goes to a file */
    int add_missing_headers;
    unsigned char strip[SMTP_STRIP_SET]; /* message_strip_characters */
    enum bare_mode bare_mode;            /* smtpd_forbid_bare_newline */
    struct ingress_nets *bare_exempt;    /* these normalize */
    long bare_code;                      /* ..._reject_code */
    struct tls_context *tls;             /* NULL: no certificate */
    enum starttls_level tls_level;
    int tls_received_header;
    long starttls_timeout_ms;
    const struct dkim_keys *dkim;    /* the daemon's; NULL: no signing */
    struct ingress_nets *dkim_hosts; /* dkim_internal_hosts */
    struct sasl_server *sasl; /* NULL: no AUTH (smtpd_sasl_auth_enable) */
    int tls_auth_only;        /* AUTH only in TLS */
    int auth_required;        /* MAIL only after AUTH (submission) */
    int auth_header;          /* smtpd_sasl_authenticated_header */
    long auth_delay_ms, auth_delay_limit_ms;
    struct restrict_list relay_restrictions;
    struct restrict_list sender_restrictions;
    struct restrict_list recipient_restrictions;
    long unv_rcpt_reject, unv_rcpt_defer; /* unverified_recipient_*_code */
    long unv_sender_reject, unv_sender_defer;
    struct login_map *login_maps; /* smtpd_sender_login_maps, or NULL */
    int peername_lookup;          /* smtpd_peername_lookup */
    long peername_timeout_ms;     /* smtpd_peername_lookup_timeout */
    int smtputf8;                 /* smtputf8_enable */
};

struct smtpd_server {
    struct event_base *base;
    struct smtpd_ops ops;
    struct smtpd_conf cf;
    struct evconnlistener **listeners;
    size_t nlisteners;
    int paused;  /* at SMTPD_SESSION_MAX: not accepting */
    int closing; /* smtpd_server_close() was called */
    long nsessions;
    int stress;          /* near SMTPD_SESSION_MAX: shorter deadlines */
    time_t store_failed; /* last failed store, for SMTPD_STORE_LATCH */
    char store_why[256];
    time_t flow_logged;      /* last in_flow_delay warning */
    uint64_t held;           /* message bytes all sessions hold */
    time_t memory_logged;    /* last smtpd_memory_limit warning */
    char *staging_dir;       /* <queue_directory>/staging, or NULL */
    struct event *resume_ev; /* accept again after a failed accept() */
    time_t accept_logged;    /* last accept() warning */
    /* failed logins per client address (failures.c) */
    struct auth_failures *failures;
    LIST_HEAD(, smtpd_session) sessions;
};

/* Where a session is. */
enum session_state {
    SESSION_COMMAND, /* reading command lines */
    SESSION_LOOKUP,  /* nothing read: the client's name (peer.c) */
    SESSION_DATA,    /* reading message content after DATA */
    SESSION_BDAT,    /* reading a BDAT chunk */
    SESSION_WAIT,    /* waiting: a store, a flush, in_flow_delay */
    SESSION_TLS,     /* STARTTLS's 220 going out, then the handshake */
    SESSION_AUTH,    /* reading the client's answer to a 334 (auth.c) */
    SESSION_CLOSING, /* the last reply is going out; then freed */
};

struct smtpd_rcpt {
    char *address;
    unsigned notify; /* SMTP_NOTIFY_* */
    char *orcpt;     /* "type;address", or NULL */
};

/* Per-command counts, for the "disconnect from" line. */
enum session_count {
    COUNT_EHLO,
    COUNT_HELO,
    COUNT_STARTTLS,
    COUNT_AUTH,
    COUNT_MAIL,
    COUNT_RCPT,
    COUNT_DATA,
    COUNT_BDAT,
    COUNT_RSET,
    COUNT_NOOP,
    COUNT_QUIT,
    COUNT_VRFY,
    COUNT_HELP,
    COUNT_ETRN,
    COUNT_UNKNOWN,
    COUNT_MAX,
};

struct smtpd_session {
    struct smtpd_server *s; /* NULL once the server is gone */
    struct bufferevent *bev;
    LIST_ENTRY(smtpd_session) link;
    struct sockaddr_storage addr;
    char addr_text[64];             /* "127.0.0.1", "IPv6:::1" in Received: */
    char name[SMTP_DOMAIN_MAX + 1]; /* the client's name, or "unknown" */
    char client[SMTP_DOMAIN_MAX + 80]; /* "unknown[127.0.0.1]", for the log */
    void *peer;   /* the name lookup under way (peer.c), or NULL */
    void *verify; /* the address verification awaited (verify.c), or NULL */
    /* the answers of this RCPT's verifications: [0] recipient, [1] sender */
    struct {
        char *address;
        int status; /* INGRESS_VERIFY_* */
        char text[600];
    } verified[2];
    struct smtpd_rcpt waiting_rcpt; /* the RCPT waiting for a verification */
    enum session_state state;
    int output_full; /* replies back up: reading waits */
    int skip_line;   /* discarding a command line that is too long */
    int quitting;    /* QUIT, timeout or fatal error: close after reply */
    int pending;     /* a store or a flush will call back */
    int in_input;    /* session_input() is running */
    int wrapped;     /* implicit TLS: the greeting follows the handshake */
    struct tls_summary *tls; /* NULL until a TLS handshake is done */
    int last_code;           /* of the last reply */
    int errors;
    long junk;  /* NOOP, VRFY, ETRN, RSET since the last message */
    char *helo; /* NULL before HELO/EHLO */
    int esmtp;
    /* the mail transaction */
    int in_mail;
    char *sender;
    char *envid;
    int ret;
    int smtputf8; /* MAIL ... SMTPUTF8 */
    uint64_t declared_size;
    struct smtpd_rcpt *rcpt;
    size_t nrcpt, rcpt_size;
    char id[SPOOL_ID_MAX + 1]; /* chosen at DATA or the first BDAT */
    int chunking;              /* BDAT chunks have begun */
    enum bare_mode bare_mode;  /* for the message under way */
    int noted_bare;            /* notes=bare_lf (BARE_NOTE) */
    struct util_buf msg;       /* Received: + content, stored form */
    struct smtp_data_reader reader;
    int reader_error;        /* a bare line end seen in a BDAT chunk */
    uint64_t held;           /* bytes of msg counted in the server's held */
    int memory_full;         /* smtpd_memory_limit reached: content dropped */
    struct staging *staging; /* past staging_threshold: content goes here */
    int staging_failed;      /* a staging write failed: content dropped */
    uint64_t chunk_left;
    int chunk_last;
    int chunk_skip; /* discard the chunk, then answer chunk_reply */
    char chunk_reply[160];
    char etrn[SMTP_NODE_TEXT_MAX]; /* the node of the ETRN being flushed */
    struct event *delay_ev;        /* in_flow_delay */
    struct event *deadline_ev;     /* the record under way (deadline.c) */
    int64_t record_start;          /* when it began, monotonic ms */
    uint64_t record_bytes;         /* content bytes of it so far */
    const char *last_verb;         /* for "timeout after VERB" */
    /* AUTH (auth.c) */
    struct sasl_conv *auth_conv; /* an exchange under way */
    int auth_turn;               /* the client is to answer a 334 */
    char auth_method[SASL_MECH_MAX + 1];
    struct event *auth_ev;              /* a failed login's delay */
    char auth_reply[SESSION_REPLY_MAX]; /* its 535, meanwhile */
    char *sasl_username;                /* once logged in */
    char sasl_method[SASL_MECH_MAX + 1];
    unsigned counts[COUNT_MAX][2]; /* [ok, total] */
};

void smtpd_log(struct smtpd_server *s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int smtpd_relay_domain(const struct smtpd_server *s, const char *domain);
int smtpd_storage_check(struct smtpd_server *s, uint64_t size, char *why,
                        size_t whylen);
long smtpd_flow_delay(struct smtpd_server *s, char *why, size_t whylen);
void smtpd_store_failed(struct smtpd_server *s, const char *why);
void smtpd_session_gone(struct smtpd_session *ss);
int smtpd_client_trusted(const struct smtpd_session *ss);
enum bare_mode smtpd_bare_mode(const struct smtpd_session *ss);
void smtpd_client_text(const struct sockaddr *sa, socklen_t salen, char *addr,
                       size_t addrlen, char *client, size_t clientlen);
int smtpd_list_each(const char *list, int (*fn)(void *, const char *),
                    void *ctx);
int smtpd_session_open(struct smtpd_server *s, int fd,
                       const struct sockaddr *sa, socklen_t salen, int tls);

int listener_open(struct smtpd_server *s, const char *list, const char *param,
                  int tls, char *why, size_t whylen);
int listener_word_check(const char *word);
void listener_enable(struct smtpd_server *s, int on);
void listener_close(struct smtpd_server *s);

struct smtpd_session *session_create(struct smtpd_server *s, int fd,
                                     const struct sockaddr *sa, socklen_t salen,
                                     int tls);
void session_shutdown(struct smtpd_session *ss);
int session_busy(const struct smtpd_session *ss);
void session_orphan(struct smtpd_session *ss);
void session_timeout(struct smtpd_session *ss);
const char *session_hostname(const struct smtpd_session *ss);
void session_reply(struct smtpd_session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void session_reply_final(struct smtpd_session *ss, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void session_reply_raw(struct smtpd_session *ss, const char *text);
void session_transaction_reset(struct smtpd_session *ss);
void session_wait_begin(struct smtpd_session *ss);
void session_wait_end(struct smtpd_session *ss);
int session_callback_orphaned(struct smtpd_session *ss);
void session_greet(struct smtpd_session *ss);
void session_tls_begin(struct smtpd_session *ss);
void session_connected(struct smtpd_session *ss);

int peer_start(struct smtpd_session *ss);
void peer_timeout(struct smtpd_session *ss);
void peer_cancel(struct smtpd_session *ss);

int starttls_offered(const struct smtpd_session *ss);
int starttls_required(struct smtpd_session *ss);
void starttls_command(struct smtpd_session *ss, struct smtp_command *cmd);
void starttls_established(struct smtpd_session *ss);
void starttls_failed(struct smtpd_session *ss, const char *why);
void starttls_received(struct util_buf *b, const struct smtpd_session *ss);

void command_run(struct smtpd_session *ss, const char *line, size_t len);

void content_begin(struct smtpd_session *ss, int mode);
int content_read_data(struct smtpd_session *ss, struct evbuffer *in);
int content_read_chunk(struct smtpd_session *ss, struct evbuffer *in);
int content_bare_command(struct smtpd_session *ss);
void content_drop(struct smtpd_session *ss);

int deadline_init(struct smtpd_session *ss);
void deadline_start(struct smtpd_session *ss);
void deadline_read(struct smtpd_session *ss);
void deadline_progress(struct smtpd_session *ss, const char *p, size_t n);
void deadline_tighten(struct smtpd_session *ss);
void deadline_stop(struct smtpd_session *ss);
void deadline_free(struct smtpd_session *ss);

int auth_offered(const struct smtpd_session *ss);
void auth_command(struct smtpd_session *ss, struct smtp_command *cmd);
void auth_response(struct smtpd_session *ss, const char *line, size_t len);
void auth_line_too_long(struct smtpd_session *ss);
void auth_session_end(struct smtpd_session *ss);

struct auth_failures *failures_create(void);
long failures_note(struct auth_failures *t, const struct sockaddr *sa,
                   long base_ms, long limit_ms, time_t now);
void failures_free(struct auth_failures *t);

int restrict_parse(const char *param, const char *list,
                   enum restrict_where where, struct restrict_list *out,
                   char *why, size_t whylen);
int login_maps_load(const char *value, struct login_map **out, char *why,
                    size_t whylen);
void login_maps_free(struct login_map *m);
int restrict_sender(struct smtpd_session *ss, const char *rcpt, char *reply,
                    size_t replylen);
int restrict_relay(struct smtpd_session *ss, const char *rcpt, char *reply,
                   size_t replylen);
int restrict_recipient(struct smtpd_session *ss, const char *rcpt, char *reply,
                       size_t replylen);

void command_rcpt_resume(struct smtpd_session *ss);
int verify_check(struct smtpd_session *ss, int sender, const char *address,
                 char *reply, size_t replylen);
void verify_cancel(struct smtpd_session *ss);
void verify_forget(struct smtpd_session *ss);

void receive_received(struct util_buf *b, const struct smtpd_session *ss,
                      const char *hostname, time_t now);
int receive_head(struct smtpd_session *ss, struct util_buf *tmp,
                 struct submit_input *in, char *why, size_t whylen);
int receive_sign(struct smtpd_session *ss, time_t now, char *why,
                 size_t whylen);
struct spool_msg *receive_message(struct smtpd_session *ss,
                                  const char *hostname, int add_missing,
                                  time_t now, char *why, size_t whylen);

#endif
