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
 *	int	deliver_session_done(const struct deliver_session *s)
 *	void	deliver_result_free(struct deliver_result *res)
 *	void	deliver_request_copy(struct deliver_request *to,
 *			const struct deliver_request *from)
 *	void	deliver_request_clear(struct deliver_request *req)
 *
 *	struct deliver_cache *deliver_cache_create(struct event_base *base,
 *			const struct deliver_cache_params *p)
 *	void	deliver_cache_free(struct deliver_cache *c)
 *	size_t	deliver_cache_count(const struct deliver_cache *c)
 *	uint64_t deliver_cache_opened(const struct deliver_cache *c)
 *	void	deliver_cache_params_set(struct deliver_cache *c,
 *			const struct deliver_cache_params *p)
 *	size_t	deliver_cache_idle(const struct deliver_cache *c,
 *			const char *cache_key)
 *	void	deliver_cache_trim(struct deliver_cache *c,
 *			const char *cache_key, size_t keep)
 *	void	deliver_cache_drop(struct deliver_cache *c,
 *			const char *cache_key)
 *	void	deliver_cache_agent_log(struct deliver_cache *c,
 *			deliver_agent_log_fn *fn, void *ctx)
 *	size_t	deliver_cache_agents(const struct deliver_cache *c)
 *	struct deliver_spawner *deliver_spawner_start(const char *agent_user,
 *			const char *mail_owner, char *why, size_t whylen)
 *	void	deliver_spawner_free(struct deliver_spawner *sp)
 *	void	deliver_cache_spawner_set(struct deliver_cache *c,
 *			struct deliver_spawner *sp)
 *	size_t	deliver_cache_agent_stats(const struct deliver_cache *c,
 *			struct deliver_agent_stats *out, size_t max)
 *
 *	struct deliver_passwd *deliver_passwd_load(const char *param,
 *			const char *value, char *why, size_t whylen)
 *	struct deliver_passwd *deliver_passwd_ref(struct deliver_passwd *m)
 *	void	deliver_passwd_free(struct deliver_passwd *m)
 *	int	deliver_passwd_find(const struct deliver_passwd *m,
 *			const char *host, const char *nexthop,
 *			struct deliver_credentials *out)
 *	int	deliver_sasl_options_parse(const char *text, unsigned *out,
 *			char *why, size_t whylen)
 *
 *	void	deliver_log_line(char *buf, size_t len,
 *			const struct deliver_log_entry *e)
 *	void	deliver_format_delay(char *buf, size_t len, double seconds)
 * DESCRIPTION
 *	deliver_start() delivers one entry (a message to some recipients of
 *	one destination) over SMTP or LMTP, asynchronously on the libevent
 *	loop base, and calls done exactly once with the outcome, never from
 *	inside deliver_start(). The request is copied, except its body:
 *	the session takes a reference to that blob (util_blob_ref()),
 *	shared with the caller and every other delivery of the message.
 *	The result belongs to the callback (deliver_result_free()).
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
 *	A probe (req.probe, address verification: decision 96) is the same
 *	dialogue up to the RCPT replies and no further: MAIL FROM, RCPT TO
 *	for each recipient (pipelined when the server offers PIPELINING),
 *	then QUIT, never DATA. Each recipient's result
 *	is its RCPT reply: 2xx delivered (the text "250 2.1.5 Ok" as the
 *	server said it), 4xx deferred, 5xx bounced ("host X said: 550 ...
 *	(in reply to RCPT TO command)"); a MAIL refusal, a lost connection
 *	or a failed handshake decides every recipient as for a delivery.
 *	A probe neither takes nor keeps a cached connection.
 *
 *	Each state has the reference's timeout (smtp_connect_timeout,
 *	smtp_helo_timeout, smtp_mail_timeout, smtp_rcpt_timeout,
 *	smtp_data_init_timeout, smtp_data_xfer_timeout,
 *	smtp_data_done_timeout, smtp_quit_timeout); a timeout ends the
 *	connection as a loss.
 *
 *	The discard and error agents need no network: discard reports every
 *	recipient delivered (status sent, dsn 2.0.0) with the request's
 *	reason (the transport's nexthop) as text, "discarded" when there is
 *	none; error reports every recipient bounced with the reason as text,
 *	or deferred when the reason starts with a 4.X.Y status code (a
 *	leading X.Y.Z code becomes the dsn; 5.0.0 or 4.0.0 otherwise). Both
 *	have hop_ok 1 and relay "none", and call done from the loop like the
 *	network agents.
 *
 *	Connection reuse: with a cache and a cache_key in the request (the
 *	destination: requests with the same key may share connections), a
 *	delivery first takes an idle connection cached under that key and
 *	goes straight to MAIL FROM; it counts as neither a session nor an
 *	address tried. Only a request with cache_store set keeps its
 *	connection when it ends (the caller's on-demand decision: more
 *	mail for the destination is coming); one without it still takes a
 *	cached connection, but says QUIT at the end. A request that names
 *	its transport in cache_endpoint (the reference's endpoint label)
 *	has its connection cached under the server's address as well, and,
 *	when none is cached for its destination, takes one cached under
 *	the address it is about to connect to, for whichever destination
 *	(at the same TLS policy and login): domains with a shared exchanger
 *	share its connections.
 *
 *	A request with queue_behind (Finch's connections with a backlog of
 *	jobs: cache_key then names one connection, not a destination) does
 *	not open a connection of its own while another delivery with the
 *	same cache_key is running: it waits in line, first come first
 *	served, and when its turn comes it takes the connection the one
 *	before it left in the cache, or, when that one was not kept (closed
 *	by the server, a failure, a reuse limit), connects anew to its
 *	addresses. Its deadlines start with its turn; a delivery cancelled
 *	in line leaves the line. A cached connection found dead (closed, reset or
 *	silent before the first reply, or answering 421 to its first
 *	command: the server's idle timeout crossing our MAIL) is closed and the delivery connects
 *	afresh, as if there had been none: not a failure of the
 *	destination. A delivery that ends its transaction cleanly (after
 *	the end-of-data replies) puts its connection in the cache instead
 *	of sending QUIT, unless the connection is older than reuse_ms
 *	(smtp_connection_reuse_time_limit) or has carried more than
 *	reuse_count_limit deliveries after its first (the reference's
 *	reuse count limit; 0: no limit). An idle connection is closed with
 *	a QUIT after idle_ms (smtp_connection_cache_time_limit; 0 disables
 *	caching), and at once when the server speaks or closes it. These
 *	limits are the request's cache_limits (its transport's), or the
 *	cache's own when the request's idle_ms is 0.
 *	conn_use in the result counts the deliveries the connection has
 *	carried, this one included (1 for a fresh connection).
 *	transport_failed says that connecting to a local (AF_UNIX) socket
 *	failed: the socket is missing or refuses, so the transport cannot
 *	work at all (the caller suspends it) rather than one destination
 *	being down.
 *	tls_fail[] says why TLS failed at each address where it did, in a
 *	form a program can count (RFC 8460's result types come from it):
 *	the kind, the host and address, the local address of the
 *	connection (getsockname(); empty when the failure came before
 *	one was made, as a DANE refusal does), and the reason text that
 *	the log and the notices show. tls.expired says that the
 *	certificate of the TLS session used did not verify because it,
 *	or one of its chain, has expired.
 *	dsn_passed says that an SMTP server offered DSN, so the request's
 *	NOTIFY, ORCPT, RET and ENVID went with the message: reporting
 *	success is that server's job from then on (RFC 3461).
 *	deliver_cache_params_set() changes the cache's own limits (a
 *	configuration reload): they apply to connections cached from then
 *	on; an idle timer already running keeps its time.
 *	deliver_cache_opened() counts the connections the sessions that
 *	use c have established (TCP or Unix, first TLS handshake or not),
 *	for the metrics.
 *	deliver_cache_drop() closes, each with a QUIT, the idle connections
 *	cached for requests with that cache_key (its scheduler has no more
 *	use for them).
 *	deliver_cache_idle() is the number of idle connections cached for
 *	requests with that cache_key; deliver_cache_trim() closes, each
 *	with a QUIT, the oldest of them until keep are left (a cluster's
 *	leases count them: qmgr/cluster.c).
 *	deliver_cache_count() is the number of idle connections;
 *	deliver_cache_free() closes them all, each with a QUIT.
 *
 *	SMTP AUTH (RFC 4954; auth.c, decisions 77 to 79): with a password
 *	table in the request's sasl, the client looks up the credentials
 *	of each server it reaches (deliver_passwd_find(): the host's name,
 *	then the next hop). With none it talks to the server as a
 *	stranger. With some, after the last EHLO (the one after STARTTLS
 *	when TLS started) it authenticates with PLAIN (RFC 4616, the
 *	response in the AUTH command) or, when PLAIN is not offered, LOGIN
 *	(the user name and password each answering a 334 challenge), and
 *	only where the security options allow: noplaintext forbids both on
 *	a connection without TLS (the options are tls_options once TLS is
 *	established); noactive, nodictionary and mutual_auth forbid them
 *	everywhere. A server that offers no AUTH, or no mechanism allowed,
 *	and a server that refuses the credentials (any reply but 235, the
 *	dsn of a 5xx made 4.X.Y) are failures of that address, like a
 *	greeting refused: the next address is tried and, when none is
 *	left, every recipient is deferred (never bounced) with the reason
 *	("SASL authentication failed; server HOST[ADDR] said: 535 5.7.8
 *	..."), hop_ok 0. auth_failed then says that an address failed at
 *	SMTP AUTH, auth_reason why (the last such failure) and auth_key
 *	the table key that gave the credentials, for the caller's warning.
 *	A connection that authenticated is cached under a key that names
 *	its user, apart from unauthenticated ones, and is taken again only
 *	by a delivery whose credentials for that server name the same
 *	user. The password stays in the table and is wiped from the
 *	buffers that carried it; the user name appears in no log line.
 *
 *	External agents (proto DELIVER_AGENT, the agent transport type;
 *	agent.c, pool.c, hungry.c, sluice-agent(7), decisions 129 to 133):
 *	the request's agent.argv is a program that speaks the hungry
 *	protocol. The delivery takes an idle agent kept in the cache's
 *	pool under the request's cache_key with the same argv (the most
 *	recently idle first), or starts one (through the spawner, as agent_user
 *	when sluiced is or was root, a fixed small environment), feeds
 *	it the job (queue_id, sender, recipients, the message) and takes
 *	one result per recipient; when the agent says #hungry again it
 *	goes back to the pool, where it ends after agent.idle_ms. relay
 *	is the channel; conn_use counts the jobs the agent has taken, this
 *	one included. An agent that exits, is killed, writes what the
 *	protocol does not allow, passes its line or output limit or its
 *	time limit is killed and reaped: the recipients it had not
 *	answered are deferred (4.3.0, hop_ok 0, the reason in hop_reason),
 *	those it answered keep their answers, and for agent.restart_ms no
 *	new agent starts for that cache_key (deliveries meanwhile are
 *	deferred with the same hop failure). deliver_cache_agent_log()
 *	sets where the pool's own log lines go (the agents started and
 *	ended, their failures, their standard error, bounded);
 *	deliver_cache_agents() counts the agents running, idle or not.
 *	deliver_cache_free() ends them all.
 *
 *	Agents are started, signalled and reaped by the spawner
 *	(spawner.c, decision 134), a process that sluiced forks while it
 *	is still root and that stays root: deliver_spawner_start() forks
 *	it (agent_user is looked up then, refused when it is root or has
 *	mail_owner's uid; NULL with why when it cannot be forked), and
 *	deliver_cache_spawner_set() hands it to a cache's agents, which
 *	own it from then on. A cache that was given none forks its own at
 *	its first agent, as whatever user the process is.
 *	deliver_spawner_free() ends one that was never handed over: its
 *	agents end and it exits.
 *
 *	deliver_cache_agent_stats() fills out with up to max transports'
 *	agent figures (those that have had an agent or a failed start):
 *	agents at a job or starting, idle in the pool, started and failed
 *	(killed for a fault, or could not start) since sluiced started;
 *	it returns how many it filled.
 *
 *	deliver_request_copy() makes a copy of a request that lives on its
 *	own (strings, recipients, addresses and DANE records copied; the
 *	body, TLS context and password table referenced), as deliver_start()
 *	keeps its own; deliver_request_clear() frees such a copy.
 *
 *	deliver_session_done() says that a session has decided every
 *	recipient and let go of its connection (cached or closed); its
 *	callback comes at the loop's next turn.
 *	deliver_cancel() abandons a delivery (daemon shutdown): the callback
 *	is not called, every recipient counts as not delivered.
 *
 *	deliver_log_line() writes the log line of one recipient's outcome
 *	in the reference's form, truncated to fit len (always terminated):
 *
 *	ID: to=<rcpt>, orig_to=<orcpt>, relay=R, conn_use=N, delay=T,
 *	delays=a/b/c/d, dsn=X.Y.Z, status=sent|deferred|bounced (text)
 *	[tls=PROTOCOL:CIPHER:WORD]
 *
 *	An address probe's line (e->probe) says status=deliverable for a
 *	recipient accepted and status=undeliverable for one refused, for
 *	good or for now (the dsn tells which), as the reference's verify
 *	probes do.
 *
 *	tls= (sluice's, after the reference's fields, in the manner of
 *	Exim's X=) appears when the transaction went over TLS: the
 *	protocol, the cipher and what the certificate was worth
 *	("tls=TLSv1.3:TLS_AES_256_GCM_SHA384:Verified"). Log readers that
 *	take the reference's lines (pflogsumm) read up to the status's
 *	parenthesis and are not disturbed by it.
 *	orig_to appears when the original recipient differs (ignoring case)
 *	from the address, conn_use when the connection had carried earlier
 *	deliveries (N counts this one). delay is arrival to done; a is
 *	arrival to the active queue, b the wait in the active queue until
 *	the agent took it, c the connection set-up and d the transmission.
 *	Times missing from the entry (zero) shift the rest as the reference
 *	does: with no handoff, b runs to done; with no connection, d runs
 *	from the handoff.
 *
 *	deliver_format_delay() formats a duration as the reference's logs
 *	do: at most two decimals, two significant digits below ten seconds,
 *	whole seconds above, rounded half up, trailing zeros left out.
 */

#include "tls/tls.h"
#include "util/util.h"

#include <event2/event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum deliver_proto {
    DELIVER_SMTP,
    DELIVER_LMTP,
    DELIVER_DISCARD,
    DELIVER_ERROR,
    DELIVER_AGENT, /* an external program, the hungry protocol */
};

enum deliver_status {
    DELIVER_OK,
    DELIVER_DEFER,
    DELIVER_BOUNCE,
};

struct deliver_addr {
    char host[256]; /* the exchanger's name, for relay= and reasons */
    int pref;       /* its MX preference (0: a host), for schedulers */
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

struct deliver_cache_params {
    int idle_ms;           /* smtp_connection_cache_time_limit */
    int reuse_ms;          /* smtp_connection_reuse_time_limit */
    int reuse_count_limit; /* reuses after the first delivery, 0 = any */
};

/*
 * What DNSSEC said of one host for DANE (RFC 7672, 2.2): validated TLSA
 * records (DANE applies), nothing usable that is validated (an insecure
 * MX or address answer, or a validated denial: no DANE), or a TLSA
 * lookup that failed (the host must not be used).
 */
enum deliver_dane_state {
    DELIVER_DANE_NONE,
    DELIVER_DANE_RECORDS,
    DELIVER_DANE_FAILED,
};

struct deliver_dane {
    char host[256]; /* as in struct deliver_addr */
    enum deliver_dane_state state;
    char why[256]; /* DELIVER_DANE_FAILED: the lookup's error */
    const struct tls_tlsa *tlsa;
    size_t ntlsa;
};

/* What an MTA-STS policy (RFC 8461) asks of a delivery. */
enum deliver_sts {
    DELIVER_STS_NONE,
    DELIVER_STS_TESTING, /* check the names, enforce nothing */
    DELIVER_STS_ENFORCE, /* TLS verified for the MX host's name */
};

/*
 * TLS for one delivery (SMTP and LMTP): the level and everything the
 * caller resolved for it from the parameters and the policy table.
 * Lists separate their items with commas, spaces or colons.
 */
struct deliver_tls {
    struct tls_context *ctx; /* the client context; NULL: no TLS (the
                                delivery holds a reference of its own) */
    enum tls_level level;
    char match[512];      /* names to match: hostname, nexthop, dot-nexthop,
                             a name or .domain */
    char servername[256]; /* SNI: hostname, nexthop, a name; "": none */
    char nexthop[512];    /* the next hop's domain or host */
    int min_version, max_version;    /* for the level; 0: no bound */
    char ciphers[64];                /* TLS 1.2 cipher list for the level */
    const struct deliver_dane *dane; /* dane, dane-only: per host */
    size_t ndane;
    enum deliver_sts sts; /* the recipient domain's MTA-STS policy */
};

/* SASL security options (the reference's smtp_sasl_security_options). */
#define DELIVER_SASL_NOPLAINTEXT  0x01u
#define DELIVER_SASL_NOACTIVE     0x02u
#define DELIVER_SASL_NODICTIONARY 0x04u
#define DELIVER_SASL_NOANONYMOUS  0x08u
#define DELIVER_SASL_MUTUAL_AUTH  0x10u

struct deliver_passwd;

/* Credentials found in the table: pointers into it. */
struct deliver_credentials {
    const char *key; /* the table key that matched, lower case */
    const char *user;
    const char *pass;
};

/* SMTP AUTH for one delivery. */
struct deliver_sasl {
    struct deliver_passwd *passwd; /* NULL: no AUTH (the delivery holds a
                                      reference of its own) */
    char nexthop[512];             /* as written: "[relay.example]:587" */
    unsigned options;              /* DELIVER_SASL_*, without TLS */
    unsigned tls_options;          /* DELIVER_SASL_*, over TLS */
};

/*
 * An external agent (agent.c, pool.c, hungry.c; sluice-agent(7),
 * decisions 129 to 133).
 */
struct deliver_agent {
    char *const *argv;   /* NULL-terminated: the program, its arguments */
    const char *channel; /* the transport: SLUICE_CHANNEL, relay= */
    const char *user;    /* agent_user, for a spawner the pool forks */
    int idle_ms;         /* idlemax: an idle agent ends after it */
    int time_limit_ms;   /* agent_time_limit: one job, from its start */
    int restart_ms;      /* agent_restart_delay: after a failure */
    size_t line_limit;   /* agent_output_line_limit */
    size_t output_limit; /* agent_output_limit, per job */
};

typedef void deliver_agent_log_fn(void *ctx, int warning, const char *channel,
                                  const char *text);

struct deliver_request {
    enum deliver_proto proto;
    const char *queue_id;       /* agent: the job's message id; or NULL */
    struct deliver_agent agent; /* DELIVER_AGENT */
    const char *helo_name;
    const char *sender; /* "" for the null sender */
    const char *envid;  /* or NULL */
    int ret;            /* 0 none, 1 FULL, 2 HDRS */
    const struct deliver_rcpt *rcpt;
    size_t nrcpt;
    struct util_blob *body; /* CRLF line ends, not stuffed; NULL: empty */
    const struct deliver_addr *addrs;
    size_t naddrs;
    int session_limit;  /* connections at most (smtp_mx_session_limit) */
    const char *reason; /* discard and error: the text, or NULL */
    struct deliver_cache *cache; /* connection reuse, or NULL */
    const char *cache_key;       /* the destination, or NULL: no reuse */
    const char *cache_endpoint;  /* the transport: reuse by address too */
    int cache_store;  /* keep the connection at the end (on demand) */
    int queue_behind; /* wait for a delivery holding cache_key to end */
    struct deliver_cache_params cache_limits; /* idle_ms 0: the cache's */
    struct deliver_timeouts timeouts;         /* milliseconds */
    size_t line_limit;   /* smtp_line_length_limit: break longer; 0 none */
    int mime_conversion; /* 8-bit MIME to 7-bit for servers without
                            8BITMIME (not disable_mime_output_conversion) */
    int smtputf8;        /* the sender asked for SMTPUTF8 (RFC 6531) */
    int probe;           /* address verification: MAIL, RCPT, QUIT, no DATA */
    struct deliver_tls tls;
    struct deliver_sasl sasl;
};

struct deliver_rcpt_result {
    enum deliver_status status;
    int code;          /* the SMTP reply code, 0 if none */
    char enhanced[16]; /* "5.1.1", or derived from the code */
    char *text;        /* "host said: 550 5.1.1 ... (in reply to RCPT TO
                          command)", or the hop reason */
};

/* The TLS of the connection a delivery used. */
struct deliver_tls_result {
    int used;          /* the transaction went over TLS */
    int established;   /* the handshake happened in this delivery */
    const char *word;  /* Verified, Trusted, Untrusted, Anonymous */
    int expired;       /* Untrusted because a certificate has expired */
    char peer[512];    /* "host[addr]:port", for the log line */
    char cipher[160];  /* "TLSv1.3 with cipher NAME (256/256 bits)" */
    char details[200]; /* "key-exchange X25519 server-signature ..." */
};

/*
 * Why TLS failed at one address, as TLS reporting (RFC 8460, 4.3) counts
 * it; the reason texts of the log and the notices stay as they were.
 */
enum deliver_tls_fail {
    DELIVER_TLS_FAIL_STARTTLS,      /* not offered, or refused */
    DELIVER_TLS_FAIL_HANDSHAKE,     /* the handshake failed or timed out */
    DELIVER_TLS_FAIL_NOT_TRUSTED,   /* no chain to a trusted CA */
    DELIVER_TLS_FAIL_EXPIRED,       /* a certificate of it has expired */
    DELIVER_TLS_FAIL_HOST_MISMATCH, /* trusted, but not for the names */
    DELIVER_TLS_FAIL_DANE,          /* no TLSA record matched */
    DELIVER_TLS_FAIL_TLSA_LOOKUP,   /* the TLSA lookup failed (DNSSEC) */
    DELIVER_TLS_FAIL_DANE_REQUIRED, /* dane-only, no validated records */
};

#define DELIVER_TLS_FAILS_MAX 8 /* failures kept per delivery */

struct deliver_tls_failure {
    enum deliver_tls_fail kind;
    char host[256];   /* the MX host's name */
    char addr[64];    /* its address, text */
    char local[64];   /* our address on the connection, or "" (none) */
    char reason[256]; /* the client's reason, as logged */
};

struct deliver_result {
    int hop_ok;       /* got past connection and handshake */
    char *hop_reason; /* when not */
    size_t nrcpt;
    struct deliver_rcpt_result *rcpt;
    char relay[512];      /* "host[addr]:port", or "none" */
    double conn_time;     /* seconds: connection setup (c of delays=) */
    double xfer_time;     /* seconds: transmission (d of delays=) */
    int conn_use;         /* deliveries on the connection, this one included */
    int dsn_passed;       /* SMTP: the server offered DSN and got NOTIFY */
    int transport_failed; /* a local socket could not be reached */
    long lines_folded;    /* lines broken at line_limit */
    struct deliver_tls_result tls;
    /* TLS failures at the addresses tried, in order (the first
     * DELIVER_TLS_FAILS_MAX; ntls_fail counts them all) */
    struct deliver_tls_failure tls_fail[DELIVER_TLS_FAILS_MAX];
    size_t ntls_fail;
    /* why each address given up before the last one tried was, in
     * order (the last one's is hop_reason or the recipients'): the
     * reference's client logs each address it leaves */
    char **skipped;
    size_t nskipped;
    int auth_failed;       /* an address failed at SMTP AUTH */
    char auth_key[80];     /* the password table's key it used */
    char auth_reason[600]; /* why, as the recipients' text says */
};

typedef void deliver_done_fn(void *ctx, struct deliver_result *res);

struct deliver_session;
struct deliver_cache;

struct deliver_session *deliver_start(struct event_base *base,
                                      const struct deliver_request *req,
                                      deliver_done_fn *done, void *ctx);
void deliver_cancel(struct deliver_session *s);
int deliver_session_done(const struct deliver_session *s);
void deliver_result_free(struct deliver_result *res);
void deliver_request_copy(struct deliver_request *to,
                          const struct deliver_request *from);
void deliver_request_clear(struct deliver_request *req);

struct deliver_cache *
deliver_cache_create(struct event_base *base,
                     const struct deliver_cache_params *p);
void deliver_cache_free(struct deliver_cache *c);
size_t deliver_cache_count(const struct deliver_cache *c);
uint64_t deliver_cache_opened(const struct deliver_cache *c);
void deliver_cache_params_set(struct deliver_cache *c,
                              const struct deliver_cache_params *p);
void deliver_cache_drop(struct deliver_cache *c, const char *cache_key);
size_t deliver_cache_idle(const struct deliver_cache *c, const char *cache_key);
void deliver_cache_trim(struct deliver_cache *c, const char *cache_key,
                        size_t keep);
void deliver_cache_agent_log(struct deliver_cache *c, deliver_agent_log_fn *fn,
                             void *ctx);
size_t deliver_cache_agents(const struct deliver_cache *c);

struct deliver_spawner;

struct deliver_agent_stats {
    const char *channel; /* the transport; valid until the pool changes */
    size_t running, idle;
    uint64_t started, failed;
};

size_t deliver_cache_agent_stats(const struct deliver_cache *c,
                                 struct deliver_agent_stats *out, size_t max);
struct deliver_spawner *deliver_spawner_start(const char *agent_user,
                                              const char *mail_owner, char *why,
                                              size_t whylen);
void deliver_spawner_free(struct deliver_spawner *sp);
void deliver_cache_spawner_set(struct deliver_cache *c,
                               struct deliver_spawner *sp);

struct deliver_log_entry {
    const char *queue_id;
    const char *recipient;
    const char *orig_recipient; /* or NULL */
    const char *relay;          /* "host[addr]:port" or "none" */
    int conn_use;               /* deliveries on this connection so far */
    const char *dsn;
    enum deliver_status status;
    const char *text;
    const char *tls; /* "TLSv1.3:CIPHER:Verified" when over TLS, or NULL */
    int probe;       /* status=deliverable|undeliverable (verification) */
    /* Seconds since the epoch; 0 where the step did not happen. */
    double arrival, active, handoff, conn_done, done;
};

struct deliver_passwd *deliver_passwd_load(const char *param, const char *value,
                                           char *why, size_t whylen);
struct deliver_passwd *deliver_passwd_ref(struct deliver_passwd *m);
void deliver_passwd_free(struct deliver_passwd *m);
int deliver_passwd_find(const struct deliver_passwd *m, const char *host,
                        const char *nexthop, struct deliver_credentials *out);
int deliver_sasl_options_parse(const char *text, unsigned *out, char *why,
                               size_t whylen);

void deliver_log_line(char *buf, size_t len, const struct deliver_log_entry *e);
void deliver_format_delay(char *buf, size_t len, double seconds);

#endif
