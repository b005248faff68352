#ifndef SLUICE_QMGR_H
#define SLUICE_QMGR_H

/*
 * NAME
 *	qmgr 3h - the queue manager: the imperative shell around core/
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	struct qmgr *qmgr_create(struct event_base *base,
 *			const struct conf *conf, struct spool *sp,
 *			const struct route_table *routes,
 *			struct dns_resolver *dns, qmgr_log_fn *log, void *ctx)
 *	void	qmgr_wake(struct qmgr *q)
 *	void	qmgr_rules_set(struct qmgr *q, struct conf_rules *rules)
 *	void	qmgr_reload(struct qmgr *q, const struct conf *conf,
 *			const struct route_table *routes)
 *	void	qmgr_submit(struct qmgr *q, struct spool_msg *m,
 *			const char *origin, qmgr_submit_fn *done, void *ctx)
 *	void	qmgr_flush(struct qmgr *q, const struct smtp_node *node,
 *			qmgr_flush_fn *done, void *ctx)
 *	int	qmgr_idle(const struct qmgr *q)
 *	void	qmgr_stats(const struct qmgr *q, struct qmgr_stats *st)
 *	void	qmgr_metrics(struct qmgr *q, struct util_buf *out)
 *	void	qmgr_status(struct qmgr *q, struct util_buf *out, int json,
 *			long max_destinations)
 *	int	qmgr_suspend(struct qmgr *q, const char *destination,
 *			int64_t duration_ms, struct util_buf *out,
 *			char *why, size_t whylen)
 *	int	qmgr_resume_ask(struct qmgr *q, const char *destination,
 *			struct util_buf *out, char *why, size_t whylen,
 *			qmgr_resume_fn *fn, void *arg,
 *			struct qmgr_resume_wait **wait)
 *	void	qmgr_resume_cancel(struct qmgr_resume_wait *w)
 *	int	qmgr_resume(struct qmgr *q, const char *destination,
 *			struct util_buf *out, char *why, size_t whylen)
 *	void	qmgr_drain(struct qmgr *q)
 *	long	qmgr_busy(const struct qmgr *q)
 *	int	qmgr_leave(struct qmgr *q)
 *	void	qmgr_stop(struct qmgr *q)
 *	void	qmgr_free(struct qmgr *q)
 *
 *	void	qmgr_deliver_settings(const struct conf *conf,
 *			const char *transport, struct qmgr_deliver_settings *d)
 *
 *	size_t	qmgr_addresses(const struct dns_result *res, unsigned port,
 *			int limit, struct deliver_addr *out, size_t max)
 *
 *	enum tlsrpt_result qmgr_tlsrpt_result(enum deliver_tls_fail kind)
 *
 *	struct qmgr_inbox *qmgr_inbox_create(struct event_base *base)
 *	void	qmgr_inbox_post(struct qmgr_inbox *in, qmgr_inbox_fn *fn,
 *			void *ctx)
 *	void	qmgr_inbox_free(struct qmgr_inbox *in)
 *
 *	char	*qmgr_notice_format(const struct qmgr_notice_params *p,
 *			enum qmgr_notice kind, const struct spool_msg *m,
 *			const struct qmgr_notice_rcpt *r, size_t n, size_t *len)
 *
 *	void	qmgr_retry_params(const struct conf *conf, struct qmgr_retry *r)
 *	enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r,
 *			int deferred, int null_sender, int64_t arrival,
 *			int64_t now, int64_t *next_attempt)
 *	int64_t	qmgr_retry_jitter(int64_t wait, uint32_t rnd)
 *
 *	int	qmgr_verify(struct qmgr *q, const char *address,
 *			int64_t wait_ms, int flags,
 *			struct qmgr_verify_answer *now, qmgr_verify_fn *done,
 *			void *ctx, struct qmgr_verify_wait **wait)
 *	void	qmgr_verify_cancel(struct qmgr_verify_wait *w)
 *	const char *qmgr_verify_status_name(enum qmgr_verify_status s)
 *
 *	struct qmgr_verify_cache *qmgr_verify_cache_create(
 *			const struct qmgr_verify_cache_params *p)
 *	(and the rest of verify_cache.c)
 * DESCRIPTION
 *	qmgr/ feeds the active queue from the spool, hands entries to the
 *	delivery agents and applies their results to the spool and to
 *	core/, on the libevent loop base.
 *
 *	qmgr_create() starts a queue manager on an open spool (with its
 *	committer), a routing table and a resolver, all the caller's and
 *	all outliving it. It loads messages at once: incoming ones first,
 *	alternating with deferred ones whose retry time has come, at most
 *	qmgr_message_active_limit in memory; it looks again whenever a
 *	message leaves memory, every queue_run_delay, and on qmgr_wake()
 *	(new mail was stored). Each recipient's outcome is written to the
 *	spool (group commit) and logged through log in the reference's form
 *	(deliver_log_line()); a message whose recipients are all final is
 *	removed ("ID: removed"), one with deferred recipients waits for its
 *	retry time (qmgr_retry_decide()) or, too old, has them bounced
 *	("message expired") and is removed. At the end of each pass the
 *	sender is sent the notices it is owed (notice.c), from the null
 *	sender: one about the recipients that failed, one about those
 *	delivered that asked for it (NOTIFY=SUCCESS) when the next hop does
 *	not report success itself, and once per message, past
 *	delay_warning_time, one about those still waiting; never for a
 *	null-sender message, never against NOTIFY=NEVER. Each is logged
 *	("ID: sender non-delivery notification: NEWID", "delay
 *	notification", "delivery status notification"), and the recipients
 *	it covers are marked in the spool so that no notice is sent twice
 *	for them (a crash in between may send one twice, never lose it).
 *	A recipient that cannot be routed is bounced (5.1.3); DNS answers
 *	are applied per entry: a temporary failure defers its recipients
 *	and counts as a connection failure of the destination (negative
 *	feedback), a permanent one bounces them.
 *
 *	qmgr_reload() switches to a new configuration and routing table
 *	(the caller frees the old ones after the call: nothing keeps a
 *	pointer into them). Recipients routed from then on use the new
 *	table; those already in memory keep their route. The active limit,
 *	queue_run_delay, backoff and lifetimes, connection cache limits
 *	and every transport's scheduler parameters (core_transport_update():
 *	windows above a lowered concurrency limit come down at once) apply
 *	at once; each delivery reads its transport's settings when it
 *	starts. A transport's job scheduler changes only at a restart
 *	(logged).
 *
 *	qmgr_rules_set() gives the queue manager the scheduler rules
 *	(scheduler_rules, conf_rules_load()) of the zmailer delivery
 *	scheduler and of the agent transport type (its programs), or
 *	NULL; they are its own from then on, the ones before
 *	are freed, and threads that exist run out under the rules they
 *	were made with (zmailer.c). Call it after qmgr_create() and after
 *	each qmgr_reload().
 *
 *	qmgr_submit() stores a new message m (taken over) in the spool's
 *	next group commit, and calls done(ctx, status, id, why) on the loop
 *	thread once it is durable (status 0, its queue id) or could not be
 *	stored (status -1, the reason; nothing of it is in the spool),
 *	possibly before it returns. A stored message is logged as "ID:
 *	ORIGIN", where origin says where it came from as Postfix's pickup
 *	and smtpd do ("uid=UID from=<SENDER>", "client=NAME[ADDRESS]"); one
 *	that could not be, as "ORIGIN: not stored: REASON". The incoming
 *	queue is looked at soon after: a burst of submissions costs one
 *	look.
 *
 *	A destination queue that has nothing waiting and nothing in flight
 *	is freed, as the reference does, unless it is dead, in a rate delay,
 *	or has failures that no success has cleared since (its state is
 *	still needed: one message at a time to a dead site must still add
 *	up to a dead destination); the next mail for it starts at the
 *	initial concurrency. Dead ones that came back are freed at the
 *	next queue run. So memory follows the destinations in use, not
 *	every destination ever seen.
 *
 *	qmgr_flush() is ETRN's and "sluice flush"'s work: every dead
 *	destination whose next hop or queue key is in node
 *	(smtp_node_match(): its domain, and its subdomains if the node
 *	says so; every destination with node NULL), or that mail for the
 *	node is routed to, comes back to life at once, and every deferred
 *	message that is not in memory and has a recipient still waiting
 *	in the node (all, without one) is made due now; then done(ctx,
 *	messages) tells how many, once those changes are committed, and
 *	the feed looks at the queue. Logged as "flush [NODE]: N deferred
 *	messages due now", NODE in its written form (".example.com" with
 *	subdomains).
 *
 *	qmgr_idle() is true when nothing is in memory, nothing is being
 *	delivered, and the last look at the spool found nothing to load.
 *	qmgr_stats() reports counters since creation.
 *	qmgr_metrics() (metrics.c) appends the daemon's numbers in
 *	Prometheus' text format: recipient outcomes and delivery delays per
 *	transport, queue sizes, what is in core, destinations, connections.
 *	qmgr_status() (status.c) appends the scheduler's state now, as text
 *	or JSON, for `sluice status`: messages and recipients in core,
 *	transports, destinations busiest first (at most max_destinations
 *	per transport; 0: all), the head of each job list.
 *	qmgr_suspend() and qmgr_resume() (suspend.c) are the operator's
 *	suspension of a destination (its queue key or next hop) for a
 *	duration or until resumed, and its end, which makes its deferred
 *	mail due now; qmgr_resume_ask() is the operator's resume, which in
 *	a cluster also succeeds for a suspension this member had not
 *	applied yet, answering later when only Redis can tell.
 *
 *	qmgr_drain() is the polite start of a stop: no delivery starts any
 *	more, the ones in flight go on and their results are written.
 *	qmgr_busy() counts what is still going on: deliveries in flight and
 *	spool writes not yet committed. The daemon drains until that is 0
 *	or its time bound has passed, then stops. qmgr_leave(), once the
 *	drain is over, takes this daemon out of its cluster
 *	(cluster_leave()): it returns 1 while that is under way.
 *
 *	Stopping, in this order: qmgr_stop() (nothing new starts, agents in
 *	flight are abandoned: their recipients stay as they are on disk and
 *	are delivered again later), then dns_free() of the resolver (lookups
 *	in flight end), then spool_close() (writes already submitted are
 *	committed), then qmgr_free().
 *
 *	A transport's scheduler parameters come from conf_core_params()
 *	(conf/sched.c), which the simulator shares.
 *
 *	qmgr_deliver_settings() fills the delivery client's settings of a
 *	transport: the smtp_* timeouts, address and session limits,
 *	connection cache limits and HELO name, or their <transport>_*
 *	overrides (an lmtp transport named "lmtp" thus reads lmtp_* first,
 *	then smtp_*). With smtp_connection_cache_on_demand off, connections
 *	are not cached (cache.idle_ms is 0); cache_always lists the next
 *	hops whose connections are kept whatever the demand
 *	(smtp_connection_cache_destinations). Times are milliseconds; the
 *	HELO name and the list point into conf.
 *
 *	qmgr_addresses() lists the addresses a delivery tries from a DNS
 *	answer: every exchanger's addresses in the answer's order (by MX
 *	preference; IPv4 before IPv6 within a host), each with its host's
 *	name and the given port, at most limit of them (0: no limit,
 *	smtp_mx_address_limit) and at most max. It returns how many it
 *	wrote: 0 for an answer that is not DNS_OK.
 *
 *	qmgr_tlsrpt_result() is the RFC 8460 result type (section 4.3)
 *	that TLS reporting counts for a TLS failure of the SMTP client
 *	(decision 63): starttls-not-supported, certificate-not-trusted,
 *	certificate-expired, certificate-host-mismatch, tlsa-invalid,
 *	dnssec-invalid, dane-required, or validation-failure for a
 *	handshake that failed.
 *
 *	An inbox hands work to the thread that runs base from any thread
 *	(the spool's committer calls back from its own thread, and the
 *	queue manager's state belongs to the loop). qmgr_inbox_post() never
 *	blocks for long and never runs fn itself: fn(ctx) runs on the loop
 *	thread, items from one thread in the order posted.
 *	qmgr_inbox_create() returns NULL when it cannot get a pipe.
 *	qmgr_inbox_free(), called on the loop thread once no other thread
 *	posts any more, first runs whatever is still waiting: nothing
 *	posted is lost.
 *
 *	qmgr_notice_format() writes a delivery status notification (RFC
 *	3464) about some recipients of a message: failed, delayed or
 *	delivered; see notice.c.
 *
 *	qmgr_retry_params() reads minimal_backoff_time, maximal_backoff_time,
 *	maximal_queue_lifetime and bounce_queue_lifetime (microseconds, the
 *	spool's unit). qmgr_retry_decide() says what becomes of a message
 *	whose last in-core entry is done: QMGR_DONE when no recipient was
 *	deferred (the caller removes it once every recipient is final);
 *	QMGR_EXPIRE when some were and the message is older than its
 *	lifetime (bounce_queue_lifetime for the null sender; a lifetime of
 *	0 means one attempt only): the deferred recipients are returned;
 *	else QMGR_RETRY, with *next_attempt = now + the message's age,
 *	clamped to the backoff bounds, so that the wait about doubles from
 *	one attempt to the next. qmgr_retry_jitter() lengthens a wait by
 *	0 to 10 % (rnd % 1001 thousandths of a tenth; the caller draws rnd
 *	at random) so that messages deferred together, or machines started
 *	together, do not come back in step; the queue manager applies it to
 *	every retry time.
 */

#include "conf/conf.h"
#include "core/core.h"
#include "deliver/deliver.h"
#include "dns/dns.h"
#include "tlsrpt/tlsrpt.h"

struct spool;
struct spool_msg;
struct route_table;
struct smtp_node;
struct qmgr;

enum qmgr_log_level {
    QMGR_LOG_INFO,
    QMGR_LOG_WARNING,
};

typedef void qmgr_log_fn(void *ctx, int level, const char *service,
                         const char *line);
typedef void qmgr_submit_fn(void *ctx, int status, const char *id,
                            const char *why);
typedef void qmgr_flush_fn(void *ctx, long messages, const char *why);

struct qmgr_stats {
    long active;       /* messages in memory now */
    long loaded;       /* messages read from the spool */
    long delivered;    /* recipient outcomes: sent, */
    long deferred;     /* deferred, */
    long bounced;      /* bounced */
    long removed;      /* messages removed, every recipient final */
    long requeued;     /* messages sent back to wait for a retry */
    long submitted;    /* messages stored through qmgr_submit() */
    long destinations; /* destination queues in memory now */
    long notices;      /* notices to senders stored */
    long bodies;       /* message bodies in memory now (being delivered) */
    long recipients;   /* recipients in memory now, awaiting an outcome */
    long records;      /* recipient records held for them (rcpt.c) */
};

struct qmgr *qmgr_create(struct event_base *base, const struct conf *conf,
                         struct spool *sp, const struct route_table *routes,
                         struct dns_resolver *dns, qmgr_log_fn *log, void *ctx);
void qmgr_wake(struct qmgr *q);
void qmgr_rules_set(struct qmgr *q, struct conf_rules *rules);
void qmgr_reload(struct qmgr *q, const struct conf *conf,
                 const struct route_table *routes);
void qmgr_submit(struct qmgr *q, struct spool_msg *m, const char *origin,
                 qmgr_submit_fn *done, void *ctx);
void qmgr_flush(struct qmgr *q, const struct smtp_node *node,
                qmgr_flush_fn *done, void *ctx);
int qmgr_idle(const struct qmgr *q);
void qmgr_stats(const struct qmgr *q, struct qmgr_stats *st);
struct util_buf;
void qmgr_metrics(struct qmgr *q, struct util_buf *out);
void qmgr_status(struct qmgr *q, struct util_buf *out, int json,
                 long max_destinations);
int qmgr_suspend(struct qmgr *q, const char *destination, int64_t duration_ms,
                 struct util_buf *out, char *why, size_t whylen);
int qmgr_resume(struct qmgr *q, const char *destination, struct util_buf *out,
                char *why, size_t whylen);
struct qmgr_resume_wait;
typedef void qmgr_resume_fn(void *arg, int status, const char *text);
int qmgr_resume_ask(struct qmgr *q, const char *destination,
                    struct util_buf *out, char *why, size_t whylen,
                    qmgr_resume_fn *fn, void *arg,
                    struct qmgr_resume_wait **wait);
void qmgr_resume_cancel(struct qmgr_resume_wait *w);
void qmgr_drain(struct qmgr *q);
long qmgr_busy(const struct qmgr *q);
int qmgr_leave(struct qmgr *q);
void qmgr_stop(struct qmgr *q);
void qmgr_free(struct qmgr *q);

/* The SMTP client's TLS (tls.c). */
struct qmgr_tls;

struct qmgr_tls *qmgr_tls_load(const struct conf *conf,
                               const struct route_table *routes, char *why,
                               size_t whylen);
void qmgr_tls_free(struct qmgr_tls *t);
void qmgr_tls_set(struct qmgr *q, struct qmgr_tls *t);

/* The agent spawner forked before the drop of root (decision 134). */
void qmgr_spawner_set(struct qmgr *q, struct deliver_spawner *sp);

struct qmgr_deliver_settings {
    struct deliver_timeouts timeouts;
    int address_limit; /* smtp_mx_address_limit, 0 = no limit */
    int session_limit; /* smtp_mx_session_limit, 0 = no limit */
    struct deliver_cache_params cache;
    const char *cache_always; /* smtp_connection_cache_destinations */
    const char *helo_name;    /* smtp_helo_name */
    size_t line_limit;        /* smtp_line_length_limit, 0 = none */
    int mime_conversion;      /* not disable_mime_output_conversion */
};

void qmgr_deliver_settings(const struct conf *conf, const char *transport,
                           struct qmgr_deliver_settings *d);
/* Delivery status notifications (notice.c). */
enum qmgr_notice {
    QMGR_NOTICE_FAILED,
    QMGR_NOTICE_DELAYED,
    QMGR_NOTICE_DELIVERED,
};

struct qmgr_notice_rcpt {
    const char *address;
    const char *orcpt;  /* DSN ORCPT as given ("rfc822;x@y"), or NULL */
    const char *reason; /* the spool's: "X.Y.Z text" */
    int code;           /* the server's reply code, 0 if none */
    int relayed;        /* delivered: to a server without DSN */
    const char *tls;    /* the attempt's "TLSv1.3:CIPHER:WORD", or NULL */
};

struct qmgr_notice_params {
    const char *hostname; /* myhostname */
    int64_t now;          /* microseconds since the epoch */
    int64_t retry_until;  /* delayed: when the message expires */
    uint64_t size_limit;  /* bounce_size_limit: larger returns headers */
};

char *qmgr_notice_format(const struct qmgr_notice_params *p,
                         enum qmgr_notice kind, const struct spool_msg *m,
                         const struct qmgr_notice_rcpt *r, size_t n,
                         size_t *len);

/* What becomes of a message whose in-core entries are all done. */
enum qmgr_fate {
    QMGR_DONE,   /* nothing deferred */
    QMGR_RETRY,  /* deferred until *next_attempt */
    QMGR_EXPIRE, /* too old: return the deferred recipients */
};

struct qmgr_retry {
    int64_t min_backoff, max_backoff; /* microseconds */
    int64_t lifetime, bounce_lifetime;
};

struct qmgr_inbox;
typedef void qmgr_inbox_fn(void *ctx);

struct qmgr_inbox *qmgr_inbox_create(struct event_base *base);
void qmgr_inbox_post(struct qmgr_inbox *in, qmgr_inbox_fn *fn, void *ctx);
void qmgr_inbox_free(struct qmgr_inbox *in);

void qmgr_retry_params(const struct conf *conf, struct qmgr_retry *r);
int64_t qmgr_retry_jitter(int64_t wait, uint32_t rnd);
enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r, int deferred,
                                 int null_sender, int64_t arrival, int64_t now,
                                 int64_t *next_attempt);
/*
 * Address verification (verify.c, verify_cache.c; decisions 96 to 99).
 * qmgr_verify() answers for address at once (returns 1, the answer in
 * *now) from the cache, or sends a probe and returns 0: done(ctx, a)
 * then comes once, from the loop, with the probe's answer, or with
 * "undetermined" when wait_ms pass first (0: at once, the probe goes
 * on), unless qmgr_verify_cancel(*wait) was called before.
 * QMGR_VERIFY_CACHED: no probe, the cache's answer or undetermined.
 */
enum qmgr_verify_status {
    QMGR_VERIFY_DELIVERABLE,
    QMGR_VERIFY_UNDELIVERABLE,
    QMGR_VERIFY_UNDETERMINED,
};

struct qmgr_verify_answer {
    enum qmgr_verify_status status;
    char dsn[16];    /* "2.1.5", "5.1.1", "4.4.1" */
    char text[600];  /* "250 2.1.5 Ok", "host X said: 550 ...", a reason */
    int64_t updated; /* when the cache took it (ms), 0 if not cached */
    int cached;      /* came from the cache */
    int in_progress; /* undetermined because the probe is still under way */
};

#define QMGR_VERIFY_CACHED 1

struct qmgr_verify_wait;
typedef void qmgr_verify_fn(void *ctx, const struct qmgr_verify_answer *a);

int qmgr_verify(struct qmgr *q, const char *address, int64_t wait_ms, int flags,
                struct qmgr_verify_answer *now, qmgr_verify_fn *done, void *ctx,
                struct qmgr_verify_wait **wait);
void qmgr_verify_cancel(struct qmgr_verify_wait *w);
const char *qmgr_verify_status_name(enum qmgr_verify_status s);

struct qmgr_verify_cache_params {
    int64_t pos_expire, pos_refresh; /* ms */
    int64_t neg_expire, neg_refresh; /* ms */
    int neg_cache;
    long limit; /* answers kept at most */
};

enum qmgr_verify_found {
    QMGR_VERIFY_MISS,
    QMGR_VERIFY_FRESH,
    QMGR_VERIFY_STALE, /* served, but a probe should renew it */
};

struct qmgr_verify_cache;

struct qmgr_verify_cache *
qmgr_verify_cache_create(const struct qmgr_verify_cache_params *p);
void qmgr_verify_cache_params_set(struct qmgr_verify_cache *c,
                                  const struct qmgr_verify_cache_params *p);
enum qmgr_verify_found qmgr_verify_cache_get(struct qmgr_verify_cache *c,
                                             const char *address, int64_t now,
                                             struct qmgr_verify_answer *out);
void qmgr_verify_cache_put(struct qmgr_verify_cache *c, const char *address,
                           const struct qmgr_verify_answer *a, int64_t now);
size_t qmgr_verify_cache_count(const struct qmgr_verify_cache *c);
void qmgr_verify_cache_free(struct qmgr_verify_cache *c);

size_t qmgr_addresses(const struct dns_result *res, unsigned port, int limit,
                      struct deliver_addr *out, size_t max);
enum tlsrpt_result qmgr_tlsrpt_result(enum deliver_tls_fail kind);

#endif
