#ifndef SLUICE_INGRESS_H
#define SLUICE_INGRESS_H

/*
 * NAME
 *	ingress 3h - mail coming in: the submit path and the maildrop
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	Reading and preparing a locally submitted message (submit.c):
 *
 *	int	submit_read(FILE *in, int dot_ends, uint64_t size_limit,
 *			struct submit_input *out, char *why, size_t whylen)
 *	void	submit_input_free(struct submit_input *msg)
 *
 *	size_t	submit_header_end(const struct submit_input *msg,
 *			size_t *body)
 *	size_t	submit_header_get(const struct submit_input *msg,
 *			const char *name, char ***values)
 *	void	submit_header_values_free(char **values)
 *	size_t	submit_header_remove(struct submit_input *msg,
 *			const char *name)
 *
 *	int	submit_recipients_from_headers(const struct submit_input *msg,
 *			struct smtp_addr_list *out, char *why, size_t whylen)
 *	void	submit_remove_bcc(struct submit_input *msg)
 *	int	submit_add_missing_headers(struct submit_input *msg,
 *			const char *sender, const char *full_name,
 *			const char *hostname, time_t now, const char *queue_id)
 *
 *	int	submit_parse_notify(const char *text, unsigned *bits)
 *	int	submit_parse_ret(const char *text, enum spool_ret *ret)
 *	int	submit_envid_valid(const char *envid)
 *
 *	The maildrop directory (maildrop.c, drop.c, pickup.c):
 *
 *	int	maildrop_create(const char *queue_directory, char *why,
 *			size_t whylen)
 *	int	maildrop_write(const char *dir, const struct spool_msg *m,
 *			char *name, size_t namelen, char *why, size_t whylen)
 *	int	maildrop_read(int dirfd, const char *name,
 *			struct spool_msg **m, uid_t *owner, char *why,
 *			size_t whylen)
 *	int	maildrop_format(const struct spool_msg *m, char **out,
 *			size_t *len, char *why, size_t whylen)
 *	int	maildrop_parse(char *buf, size_t len, uid_t owner,
 *			struct spool_msg **m, char *why, size_t whylen)
 *	int	maildrop_import(const char *queue_directory,
 *			maildrop_store_fn *store, void *ctx,
 *			struct maildrop_stats *st, char *why, size_t whylen)
 *
 *	The daemon's submission socket (local.c):
 *
 *	int	local_submit(const char *queue_directory,
 *			const struct spool_msg *m, int timeout_ms, char *id,
 *			size_t idlen, char *why, size_t whylen)
 *	int	local_flush(const char *queue_directory, const char *domain,
 *			int timeout_ms, long *messages, char *why,
 *			size_t whylen)
 *	struct local_server *local_server_create(struct event_base *base,
 *			const char *queue_directory,
 *			const struct local_params *p, local_store_fn *store,
 *			void *ctx, char *why, size_t whylen)
 *	void	local_server_params_set(struct local_server *s,
 *			const struct local_params *p)
 *	void	local_server_close(struct local_server *s)
 *	long	local_server_busy(const struct local_server *s)
 *	void	local_server_free(struct local_server *s)
 *
 *	The SMTP server (smtpd.c, listener.c, session.c, command.c,
 *	starttls.c, content.c, deadline.c, receive.c, peer.c):
 *
 *	struct smtpd_server *smtpd_server_create(struct event_base *base,
 *			const struct smtpd_params *p,
 *			const struct smtpd_ops *ops, char *why, size_t whylen)
 *	int	smtpd_server_params_set(struct smtpd_server *s,
 *			const struct smtpd_params *p, char *why,
 *			size_t whylen)
 *	int	smtpd_params_check(const struct smtpd_params *p, char *why,
 *			size_t whylen)
 *	int	smtpd_session_start(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen)
 *	int	smtpd_session_start_tls(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen)
 *	void	smtpd_server_close(struct smtpd_server *s)
 *	long	smtpd_server_busy(const struct smtpd_server *s)
 *	long	smtpd_server_sessions(const struct smtpd_server *s)
 *	void	smtpd_server_free(struct smtpd_server *s)
 *
 *	DKIM signing of mail from local programs (sign.c):
 *
 *	int	ingress_sign(const struct dkim_keys *k, struct spool_msg *m,
 *			time_t now, ingress_log_fn *log, void *ctx,
 *			char *why, size_t whylen)
 *
 *	Lists of networks, for who may relay and who is exempt from
 *	limits (nets.c):
 *
 *	struct ingress_nets *ingress_nets_parse(const char *list,
 *			char *why, size_t whylen)
 *	int	ingress_nets_match(const struct ingress_nets *n,
 *			const struct sockaddr *sa)
 *	void	ingress_nets_free(struct ingress_nets *n)
 * DESCRIPTION
 *	The ingress/ layer brings mail in: SMTP server sessions (later),
 *	and the submit path that "sluice sendmail" uses, which reads a
 *	message from a local program, prepares its headers and hands it
 *	to the spool, or, for a user who may not write the spool, drops
 *	it into the maildrop directory for the daemon to import.
 *
 *	A submitted message is kept in its stored form: every line ends
 *	in CRLF, no dot-stuffing (the SMTP client stuffs when it sends).
 *	submit_read() reads it; the header functions look at and change
 *	its header section; see submit.c for the details of each.
 *
 *	submit_read() returns SUBMIT_OK, or SUBMIT_DATAERR when the input
 *	is not acceptable (a NUL byte, too big: sendmail exits EX_DATAERR)
 *	or SUBMIT_TEMPFAIL when reading failed (EX_TEMPFAIL), with the
 *	reason in why. Both error values are negative.
 *
 *	The maildrop holds one file per message, written by
 *	maildrop_write() (drop.c) so that a reader never sees a partial
 *	file, read back strictly by maildrop_read(), and moved into the
 *	spool by maildrop_import() (pickup.c), which hands each message to
 *	a store function and removes the file only once the message is
 *	durable there. The file format is described in maildrop.c, why
 *	files are mode 0444 in drop.c. maildrop_read() fails with errno
 *	EBADMSG for a malformed file (the importer sets it aside in
 *	maildrop-bad), with another errno when the file could not be read
 *	(it stays).
 *
 *	The SMTP server (smtpd.c) listens on the smtpd_listen addresses
 *	and runs one session (session.c) per client on the event loop:
 *	ESMTP with pipelining, DATA and BDAT, relay control, limits, and a
 *	250 to the end of a message only once its store callback says it
 *	is durable; STARTTLS, and implicit TLS on the
 *	smtpd_tls_wrapper_listen addresses (starttls.c, through tls/). smtpd.c describes the server, its parameters and flow
 *	control; session.c the state machine, reply by reply; command.c
 *	the commands and their order; content.c the message content and
 *	its policies (bare line ends, NUL, hops); deadline.c how long a
 *	session waits for its client; receive.c what is added to a message
 *	(Received:, missing headers); auth.c SMTP AUTH (RFC 4954, through
 *	sasl/), failures.c the delay of failed logins per client address,
 *	peer.c the client's host name, looked up before the greeting,
 *	restrict.c smtpd_relay_restrictions, smtpd_sender_restrictions and
 *	smtpd_sender_login_maps. With auth_required (the submission
 *	listener's server) MAIL waits for AUTH.
 *
 *	A network list (nets.c) is mynetworks or another list in its
 *	syntax (smtpd_client_event_limit_exceptions): addresses and CIDR
 *	blocks, matched against a client's address; nets.c says what it
 *	accepts.
 *
 *	Mail is DKIM-signed at acceptance (sign.c, through dkim/): the
 *	SMTP server signs what clients in dkim_internal_hosts send, and the
 *	daemon calls ingress_sign() for what local programs submit; sign.c
 *	says what is signed and what is logged.
 *
 *	The submission socket (local.c) carries a message from "sluice
 *	sendmail" to the running daemon, which stores it in its group
 *	commit; local.c describes the protocol, the limits and who may
 *	submit.
 *
 *	Functions that can fail for reasons outside the program return a
 *	negative status with a one-line reason in why; none exits.
 */

#include "smtp/smtp.h"
#include "spool/spool.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

/* What submit_read() returns. */
enum submit_status {
    SUBMIT_OK = 0,
    SUBMIT_DATAERR = -1,  /* the message is not acceptable */
    SUBMIT_TEMPFAIL = -2, /* reading failed; try again later */
};

/* A message in its stored form. */
struct submit_input {
    char *data;  /* CRLF line ends; NUL-terminated, no NUL inside */
    size_t len;  /* bytes in data, without the terminating NUL */
    size_t size; /* allocated */
};

int submit_read(FILE *in, int dot_ends, uint64_t size_limit,
                struct submit_input *out, char *why, size_t whylen);
void submit_input_free(struct submit_input *msg);

size_t submit_header_end(const struct submit_input *msg, size_t *body);
size_t submit_header_get(const struct submit_input *msg, const char *name,
                         char ***values);
void submit_header_values_free(char **values);
size_t submit_header_remove(struct submit_input *msg, const char *name);

int submit_recipients_from_headers(const struct submit_input *msg,
                                   struct smtp_addr_list *out, char *why,
                                   size_t whylen);
void submit_remove_bcc(struct submit_input *msg);
int submit_add_missing_headers(struct submit_input *msg, const char *sender,
                               const char *full_name, const char *hostname,
                               time_t now, const char *queue_id);

/* Limits of RFC 3461: ENVID length, and what the -F name is cut to. */
#define SUBMIT_ENVID_MAX     100
#define SUBMIT_FULL_NAME_MAX 256

int submit_parse_notify(const char *text, unsigned *bits);
int submit_parse_ret(const char *text, enum spool_ret *ret);
int submit_envid_valid(const char *envid);

/* Directories under queue_directory. */
#define MAILDROP_DIR     "maildrop"
#define MAILDROP_BAD_DIR "maildrop-bad"

/* A maildrop file name: this many hex digits (no dot, no suffix). */
#define MAILDROP_NAME_LEN 16

/*
 * A maildrop file larger than this is malformed (moved aside): more
 * than any message sluice accepts, and the importer must not be made
 * to run out of memory by a local user.
 */
#define MAILDROP_SIZE_MAX (1UL << 30)

/* Temporary files older than this (seconds) are counted as stale. */
#define MAILDROP_STALE_AGE 3600

/*
 * Store one imported message; owner is the uid that owns its file.
 * Return 0 once the message is durable, or -1 with a reason in why
 * (a temporary failure: the file stays for the next import). m still
 * belongs to the importer, which frees it after the call.
 */
typedef int maildrop_store_fn(void *ctx, struct spool_msg *m, uid_t owner,
                              char *why, size_t whylen);

struct maildrop_stats {
    unsigned long imported;  /* stored and removed */
    unsigned long malformed; /* moved to maildrop-bad with a reason */
    unsigned long failed;    /* left in place: store or I/O failure */
    unsigned long stale;     /* temporary files older than an hour */
};

int maildrop_create(const char *queue_directory, char *why, size_t whylen);
int maildrop_write(const char *dir, const struct spool_msg *m, char *name,
                   size_t namelen, char *why, size_t whylen);
int maildrop_read(int dirfd, const char *name, struct spool_msg **m,
                  uid_t *owner, char *why, size_t whylen);
int maildrop_import(const char *queue_directory, maildrop_store_fn *store,
                    void *ctx, struct maildrop_stats *st, char *why,
                    size_t whylen);
int maildrop_format(const struct spool_msg *m, char **out, size_t *len,
                    char *why, size_t whylen);
int maildrop_parse(char *buf, size_t len, uid_t owner, struct spool_msg **m,
                   char *why, size_t whylen);

/* The submission socket, under queue_directory. */
#define LOCAL_SOCKET "public/submit"

/* Bytes of envelope allowed beyond the message size limit. */
#define LOCAL_ENVELOPE_MAX (16UL << 20)

#define LOCAL_CLIENT_TIMEOUT 60  /* seconds a client may stay silent */
#define LOCAL_CLIENT_LIMIT   100 /* clients served at once */
#define LOCAL_DOMAIN_MAX     SMTP_DOMAIN_MAX /* a flush's domain */

/* What local_submit() returns; the message stored only with LOCAL_OK. */
enum local_status {
    LOCAL_OK = 0,
    LOCAL_REJECT = -1,      /* the daemon will never take it */
    LOCAL_TEMPFAIL = -2,    /* the daemon cannot store it now */
    LOCAL_UNAVAILABLE = -3, /* no daemon, or it went away: not stored */
    LOCAL_NO_ANSWER = -4,   /* sent, no answer in time: maybe stored */
};

struct event_base;
struct local_server;

/* Called once per message store() took: status 0 or LOCAL_TEMPFAIL. */
typedef void ingress_done_fn(void *conn, int status, const char *id,
                             const char *why);
typedef void local_store_fn(void *ctx, struct spool_msg *m, uid_t uid,
                            ingress_done_fn *done, void *conn);

/*
 * Called once per flush request: messages made due now, and why NULL,
 * or the reason some of the changes could not be written (the spool or
 * the disk is full): the flush then failed, at least in part.
 */
typedef void ingress_flushed_fn(void *conn, long messages, const char *why);

struct local_params {
    uint64_t size_limit; /* message_size_limit; 0 = none */
    void (*log)(void *ctx, const char *line);
    void *log_ctx;
    /* flush requests (NULL: refused), with the server's ctx; node NULL
     * asks for all deferred mail */
    void (*flush)(void *ctx, const struct smtp_node *node,
                  ingress_flushed_fn *done, void *conn);
};

int local_submit(const char *queue_directory, const struct spool_msg *m,
                 int timeout_ms, char *id, size_t idlen, char *why,
                 size_t whylen);
int local_flush(const char *queue_directory, const char *domain, int timeout_ms,
                long *messages, char *why, size_t whylen);
struct local_server *local_server_create(struct event_base *base,
                                         const char *queue_directory,
                                         const struct local_params *p,
                                         local_store_fn *store, void *ctx,
                                         char *why, size_t whylen);
void local_server_params_set(struct local_server *s,
                             const struct local_params *p);
void local_server_close(struct local_server *s);
long local_server_busy(const struct local_server *s);
void local_server_free(struct local_server *s);

struct sockaddr;
struct ingress_nets;
struct dkim_keys;

typedef void ingress_log_fn(void *ctx, const char *line);
int ingress_sign(const struct dkim_keys *k, struct spool_msg *m, time_t now,
                 ingress_log_fn *log, void *ctx, char *why, size_t whylen);

/* The SMTP server. */
#define SMTPD_SESSION_MAX     500    /* sessions at once; then accept waits */
#define SMTPD_STRESS_ON       400    /* sessions: stress begins (80 %) */
#define SMTPD_STRESS_OFF      300    /* fewer sessions: stress is over */
#define SMTPD_STORE_LATCH     10     /* s: 452 to MAIL after a failed store */
#define SMTPD_HELO_MAX        255    /* bytes of a HELO name kept */
#define SMTPD_INPUT_MAX       262144 /* bytes read ahead of the session */
#define SMTPD_OUTPUT_MAX      65536  /* replies queued before reading stops */
#define SMTPD_ACCEPT_PAUSE_MS 500    /* no accept() after one failed */

struct smtpd_server;

/*
 * The answer to a client name lookup: the forward-confirmed name, or
 * NULL (unknown); a warning to log (without "warning: "), or NULL.
 */
typedef void ingress_peer_fn(void *conn, const char *name, const char *warning);

/* What an address verification found (struct smtpd_ops: verify). */
enum ingress_verify {
    INGRESS_VERIFY_OK,     /* deliverable */
    INGRESS_VERIFY_BOUNCE, /* undeliverable */
    INGRESS_VERIFY_DEFER,  /* undetermined, or in progress */
};
typedef void ingress_verify_fn(void *conn, int status, const char *text);

/* What the server needs from the daemon; set once, at creation. */
struct smtpd_ops {
    /*
     * Store m (taken over) and call done(conn, status, id, why) once,
     * on the loop thread, possibly before returning: 0 and the queue id
     * once durable, -1 and a reason when nothing was stored. origin is
     * "client=NAME[ADDR]", for the log line.
     */
    void (*store)(void *ctx, struct spool_msg *m, const char *origin,
                  ingress_done_fn *done, void *conn);
    /* ETRN: flush node (as qmgr_flush()); NULL refuses ETRN. */
    void (*flush)(void *ctx, const struct smtp_node *node,
                  ingress_flushed_fn *done, void *conn);
    /* Messages in the incoming queue now; NULL: none counted. */
    long (*backlog)(void *ctx);
    /* Bytes free inside the spool's file (spool_free_bytes()), which
     * the file system does not count as free; NULL: none. */
    int64_t (*spool_free)(void *ctx);
    void (*log)(void *ctx, const char *line);
    /*
     * The client's host name (smtpd_peername_lookup): start a lookup
     * for the client at sa and return a handle, or NULL when none was
     * started (the client stays unknown). done(conn, ...) is called
     * once, never from inside peer_lookup(), unless peer_cancel()
     * was called first with the handle. NULL: no lookups.
     */
    void *(*peer_lookup)(void *ctx, const struct sockaddr *sa, socklen_t salen,
                         ingress_peer_fn *done, void *conn);
    void (*peer_cancel)(void *ctx, void *lookup);
    /*
     * Address verification (reject_unverified_recipient and _sender):
     * answer at once (NULL returned, *status and text set), or start a
     * wait and return its handle: done(conn, status, text) is called
     * once, later, unless verify_cancel() was called with the handle
     * first. NULL verify: every address is undetermined.
     */
    void *(*verify)(void *ctx, const char *address, int *status, char *text,
                    size_t textlen, ingress_verify_fn *done, void *conn);
    void (*verify_cancel)(void *ctx, void *wait);
    void *ctx;
};

/* The parameters; strings are copied, and may change on reload. */
struct smtpd_params {
    const char *listen;             /* smtpd_listen (only at creation) */
    const char *hostname;           /* myhostname */
    const char *mynetworks;         /* clients that may relay anywhere */
    const char *relay_domains;      /* where anyone may send */
    const char *queue_directory;    /* free space; staging files ("": none) */
    uint64_t size_limit;            /* message_size_limit, 0 = none */
    uint64_t queue_minfree;         /* queue_minfree, bytes */
    long recipient_limit;           /* smtpd_recipient_limit */
    long connection_limit;          /* smtpd_client_connection_count_limit */
    const char *exempt;             /* smtpd_client_event_limit_exceptions */
    long error_limit;               /* smtpd_hard_error_limit */
    long line_limit;                /* line_length_limit */
    long timeout_ms;                /* smtpd_timeout */
    long stress_timeout_ms;         /* smtpd_stress_timeout */
    int per_record_deadline;        /* smtpd_per_record_deadline */
    long in_flow_delay_ms;          /* in_flow_delay */
    long active_limit;              /* qmgr_message_active_limit */
    long backlog_limit;             /* in_flow_backlog_limit, 0 = none */
    long hopcount_limit;            /* hopcount_limit */
    long junk_limit;                /* smtpd_junk_command_limit */
    uint64_t memory_limit;          /* smtpd_memory_limit, 0 = none */
    uint64_t staging_threshold;     /* smtpd_staging_threshold */
    int add_missing_headers;        /* always_add_missing_headers */
    const char *strip_chars;        /* message_strip_characters */
    const char *bare_newline;       /* smtpd_forbid_bare_newline */
    const char *bare_exempt;        /* ..._exclusions: these normalize */
    long bare_code;                 /* ..._reject_code */
    const char *tls_cert_file;      /* smtpd_tls_cert_file */
    const char *tls_key_file;       /* smtpd_tls_key_file */
    const char *tls_chain_files;    /* smtpd_tls_chain_files */
    const char *tls_level;          /* smtpd_tls_security_level */
    int tls_wrappermode;            /* smtpd_tls_wrappermode (at creation) */
    const char *tls_wrapper_listen; /* smtpd_tls_wrapper_listen (ditto) */
    int tls_received_header;        /* smtpd_tls_received_header */
    long starttls_timeout_ms;       /* smtpd_starttls_timeout */
    const struct dkim_keys *dkim;   /* signing keys (kept by the caller,
                                       alive until replaced); NULL: none */
    const char *dkim_hosts;         /* dkim_internal_hosts */
    int sasl_auth_enable;           /* smtpd_sasl_auth_enable */
    const char *sasl_type;          /* smtpd_sasl_type */
    const char *sasl_path;          /* smtpd_sasl_path */
    long sasl_timeout_ms;           /* smtpd_sasl_service_timeout */
    int tls_auth_only;              /* smtpd_tls_auth_only */
    int sasl_auth_header;           /* smtpd_sasl_authenticated_header */
    long sasl_delay_ms;             /* smtpd_sasl_failure_delay */
    long sasl_delay_limit_ms;       /* smtpd_sasl_failure_delay_limit */
    const char *relay_restrictions; /* smtpd_relay_restrictions (NULL:
                                       the default) */
    const char *sender_login_maps;  /* smtpd_sender_login_maps */
    int auth_required;              /* MAIL only after AUTH (submission) */
    /* smtpd_sender_restrictions */
    const char *sender_restrictions;
    const char *recipient_restrictions; /* smtpd_recipient_restrictions */
    long unverified_recipient_reject_code;
    long unverified_recipient_defer_code;
    long unverified_sender_reject_code;
    long unverified_sender_defer_code;
    int smtputf8_enable;             /* smtputf8_enable */
    int peername_lookup;             /* smtpd_peername_lookup */
    long peername_lookup_timeout_ms; /* smtpd_peername_lookup_timeout */
};

struct smtpd_server *smtpd_server_create(struct event_base *base,
                                         const struct smtpd_params *p,
                                         const struct smtpd_ops *ops, char *why,
                                         size_t whylen);
int smtpd_server_params_set(struct smtpd_server *s,
                            const struct smtpd_params *p, char *why,
                            size_t whylen);
int smtpd_params_check(const struct smtpd_params *p, char *why, size_t whylen);
int smtpd_session_start(struct smtpd_server *s, int fd,
                        const struct sockaddr *sa, socklen_t salen);
int smtpd_session_start_tls(struct smtpd_server *s, int fd,
                            const struct sockaddr *sa, socklen_t salen);
void smtpd_server_close(struct smtpd_server *s);
long smtpd_server_busy(const struct smtpd_server *s);
long smtpd_server_sessions(const struct smtpd_server *s);
void smtpd_server_free(struct smtpd_server *s);

struct ingress_nets *ingress_nets_parse(const char *list, char *why,
                                        size_t whylen);
int ingress_nets_match(const struct ingress_nets *n, const struct sockaddr *sa);
void ingress_nets_free(struct ingress_nets *n);

#endif
