#ifndef SLUICE_QMGR_H
#define SLUICE_QMGR_H

/*
 * NAME
 *	qmgr 3h - the queue manager: the imperative shell around core/
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_core_params(const struct conf *conf,
 *			const char *transport, struct core_transport_params *p)
 *	void	qmgr_deliver_settings(const struct conf *conf,
 *			const char *transport, struct qmgr_deliver_settings *d)
 *
 *	size_t	qmgr_addresses(const struct dns_result *res, unsigned port,
 *			int limit, struct deliver_addr *out, size_t max)
 *
 *	struct qmgr_inbox *qmgr_inbox_create(struct event_base *base)
 *	void	qmgr_inbox_post(struct qmgr_inbox *in, qmgr_inbox_fn *fn,
 *			void *ctx)
 *	void	qmgr_inbox_free(struct qmgr_inbox *in)
 *
 *	void	qmgr_retry_params(const struct conf *conf, struct qmgr_retry *r)
 *	enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r,
 *			int deferred, int null_sender, int64_t arrival,
 *			int64_t now, int64_t *next_attempt)
 * DESCRIPTION
 *	qmgr/ feeds the active queue from the spool, hands entries to the
 *	delivery agents and applies their results to the spool and to
 *	core/. This header grows with it; for now it holds the mapping from
 *	configuration to the other layers, which sits here because qmgr/ is
 *	the layer that may use both conf/ and core/ (the simulator uses the
 *	same mapping, so a scenario runs with the daemon's settings).
 *
 *	qmgr_core_params() fills the scheduler's parameters of a transport:
 *	each default_* parameter, or its <transport>_* override.
 *
 *	qmgr_deliver_settings() fills the delivery client's settings of a
 *	transport: the smtp_* timeouts, address and session limits,
 *	connection cache limits and HELO name, or their <transport>_*
 *	overrides (an lmtp transport named "lmtp" thus reads lmtp_* first,
 *	then smtp_*). With smtp_connection_cache_on_demand off, connections
 *	are not cached (cache.idle_ms is 0). Times are milliseconds; the
 *	HELO name points into conf.
 *
 *	qmgr_addresses() lists the addresses a delivery tries from a DNS
 *	answer: every exchanger's addresses in the answer's order (by MX
 *	preference; IPv4 before IPv6 within a host), each with its host's
 *	name and the given port, at most limit of them (0: no limit,
 *	smtp_mx_address_limit) and at most max. It returns how many it
 *	wrote: 0 for an answer that is not DNS_OK.
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
 *	one attempt to the next.
 */

#include "conf/conf.h"
#include "core/core.h"
#include "deliver/deliver.h"
#include "dns/dns.h"

struct qmgr_deliver_settings {
    struct deliver_timeouts timeouts;
    int address_limit; /* smtp_mx_address_limit, 0 = no limit */
    int session_limit; /* smtp_mx_session_limit, 0 = no limit */
    struct deliver_cache_params cache;
    const char *helo_name; /* smtp_helo_name */
};

void qmgr_core_params(const struct conf *conf, const char *transport,
                      struct core_transport_params *p);
void qmgr_deliver_settings(const struct conf *conf, const char *transport,
                           struct qmgr_deliver_settings *d);
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
enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r, int deferred,
                                 int null_sender, int64_t arrival, int64_t now,
                                 int64_t *next_attempt);
size_t qmgr_addresses(const struct dns_result *res, unsigned port, int limit,
                      struct deliver_addr *out, size_t max);

#endif
