#ifndef SLUICE_QMGR_IMPL_H
#define SLUICE_QMGR_IMPL_H

/*
 * NAME
 *	qmgr_impl 3h - what the queue manager's own files share
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 * DESCRIPTION
 *	The queue manager is one noun per file, as Postfix's qmgr is:
 *
 *	qmgr.c		the object: create, reload, stop, free, its events
 *	feed.c		the active-queue feed: which messages come in next
 *	message.c	a message in core: load, spool writes, its end
 *	rcpt.c		its recipients in memory: batches from the spool
 *	dest.c		destination queues and their routes
 *	deliver.c	hand-off of core/'s entries to the delivery agents
 *	outcome.c	recipient outcomes: to the spool and the log
 *	bounce.c	which notices a sender is owed, and storing them
 *	submit.c	new mail into the group commit
 *	flush.c		ETRN and "sluice flush"
 *	tls.c, dane.c, sts.c	TLS, DANE and MTA-STS of a delivery
 *	sasl.c		SMTP AUTH of a delivery: the password table, the log
 *	tlsrpt.c	TLS reporting: counts, periods, the spool
 *	tlsrpt_send.c	TLS reporting: the reports made and sent
 *	verify.c	address verification: probes as one pseudo-message
 *	verify_cache.c	address verification: the answers kept
 *	cluster.c	a cluster on Redis: leases as queue caps, shared destdb
 *	agent.c		the agent transport type: its program from the rules
 *	zmailer.c	ZMailer's threads and agents driving the deliveries
 *
 *	Only qmgr/ includes this header; everyone else sees qmgr.h.
 */

#include "qmgr/qmgr.h"

#include "cluster/cluster.h"
#include "route/route.h"
#include "spool/spool.h"
#include "sts/sts.h"
#include "tlsrpt/tlsrpt.h"
#include "util/util.h"

#include <sys/queue.h>

#define QM_ID_HASH_SIZE 4096

/* Wake-ups come one per stored message: look at most every FEED_COALESCE. */
#define QM_FEED_COALESCE_US 10000

struct qm_msg {
    struct qmgr *q;
    char id[SPOOL_ID_MAX + 1];
    struct spool_msg *sm;
    struct util_blob *body; /* sm->body while in use, or NULL */
    int deliveries;         /* deliveries of it in progress */
    struct core_message *cm;
    double active;             /* seconds: entered the active queue */
    int pending;               /* spool writes not yet committed */
    int core_done;             /* core/ has no entry of it left */
    int finishing;             /* the last write is on its way */
    uint32_t next_read;        /* the first recipient not yet read */
    struct qm_batch **batches; /* recipients in memory, by index */
    int nbatches, batch_cap;
    char last_reason[512];
    long deferrals; /* recipient deferrals recorded while in memory */
    int64_t zretry; /* zmailer: the rules' next attempt (us), or 0 */
    struct qm_msg *hnext;
    TAILQ_ENTRY(qm_msg) link;
    TAILQ_HEAD(qm_route_jobs, qm_route_job) route_jobs; /* waiting (router.c) */
    int route_running;              /* its routing jobs under way */
    TAILQ_ENTRY(qm_msg) route_link; /* in q->routing, while it has jobs */
};

/* What a destination queue needs to deliver: its route. */
struct qm_dest {
    struct route_result route;
    struct qmgr *q;
};

/* The TLSA records of one host of a delivery, for TLS reporting. */
struct qm_tlsa_host {
    char host[256];
    char *text; /* the records, one a line; NULL: the lookup failed */
};

struct qm_delivery {
    struct qmgr *q;
    struct qm_msg *m; /* NULL for address probes */
    int probe;        /* an entry of the verification message */
    struct core_entry *e;
    struct core_queue *queue; /* the entry's */
    const uint64_t *rcpt;     /* the entry's recipients, while it lives */
    int nrcpt;
    struct qm_dest *dest;
    double handoff;
    struct deliver_session *session;
    int dns_wait;
    int cache_store;                   /* keep the connection: more is coming */
    struct qm_worker *worker;          /* Finch: the connection it went to */
    struct deliver_request *finch_req; /* Finch: the job, for a retry */
    int finch_tries;                   /* Finch: hosts tried */
    int waiting;                       /* Finch: waiting for a worker */
    TAILQ_ENTRY(qm_delivery) wait_link;
    size_t line_limit;         /* smtp_line_length_limit it was sent with */
    enum deliver_sts sts_mode; /* the recipient domain's MTA-STS policy */
    struct sts_policy sts;     /* its copy, when sts_mode is not none */
    struct qm_tlsa_host *tlsa; /* hosts with TLSA records (tlsrpt.c) */
    size_t ntlsa;
    struct zm_agent *zagent; /* zmailer: the agent it is fed to */
    long zdeferrals;         /* zmailer: m->deferrals when fed */
    LIST_ENTRY(qm_delivery) link;
};

struct qmgr {
    struct event_base *base;
    const struct conf *conf;
    struct spool *sp;
    const struct route_table *routes;
    struct dns_resolver *dns;
    qmgr_log_fn *log;
    void *log_ctx;
    struct core *core;
    struct qmgr_inbox *inbox;
    struct deliver_cache *cache;
    struct qmgr_tls *tls;     /* NULL: no TLS on delivery */
    struct sts *sts;          /* MTA-STS, or NULL: off */
    char sts_last_why[256];   /* the last policy failure logged */
    struct qm_tlsrpt *tlsrpt; /* TLS reporting, or NULL: off */
    struct event *feed_ev, *timer_ev, *scan_ev;
    struct qm_msg *hash[QM_ID_HASH_SIZE];
    TAILQ_HEAD(, qm_msg) msgs;
    LIST_HEAD(, qm_delivery) deliveries;
    long active; /* messages in memory */
    long limit;  /* qmgr_message_active_limit */
    int64_t scan_delay_ms;
    struct qmgr_retry retry;
    int64_t delay_warning;          /* delay_warning_time, microseconds */
    core_time_t transport_retry_ms; /* transport_retry_time */
    uint64_t bounce_size_limit;     /* bounce_size_limit */
    char hostname[256];             /* myhostname, for notices */
    uint64_t next_id;
    int feed_asked;       /* a look at the spool is scheduled */
    int64_t feed_last_us; /* when the last look began (monotonic) */
    int spool_has_more;   /* the last look stopped for want of room */
    long feed_batch;      /* room worth a new look at the spool */
    int closing;          /* qmgr_stop(): start nothing, write nothing */
    int draining;         /* qmgr_drain(): start nothing, finish what runs */
    long submitting;      /* new messages not yet committed */
    long recipients;      /* read from the spool, awaiting an outcome */
    long records;         /* recipient records held in batches */
    struct qmgr_stats stats;
    struct qm_tstats *tstats;             /* per transport, for the metrics */
    struct core_destdb *destdb;           /* Finch's, made at its first use */
    LIST_HEAD(, qm_worker) workers;       /* Finch's connections */
    TAILQ_HEAD(, qm_delivery) finch_wait; /* jobs waiting for one */
    uint64_t worker_next;
    TAILQ_HEAD(, qm_msg) routing; /* messages with routing jobs waiting */
    TAILQ_HEAD(, qm_route_job) route_running; /* lookups under way */
    long route_busy, route_waiting;           /* routing jobs */
    struct qm_verify *verify;   /* address verification (verify.c) */
    struct cluster *cluster;    /* cluster_redis_url's, or NULL */
    int cluster_caps;           /* applying the cluster's caps: no poke */
    int cluster_applying;       /* another member's suspension: no echo */
    struct conf_rules *rules;   /* scheduler_rules (agent.c, zmailer.c) */
    struct qm_zmailer *zmailer; /* made at its first vertex */
};

/* How an outcome came about, for the success notices (RFC 3461). */
enum qm_how {
    QM_HOW_DECIDED,  /* without a delivery: routing, DNS, a dead destination */
    QM_HOW_FINAL,    /* delivered for good: LMTP, discard */
    QM_HOW_SMTP,     /* relayed to a server without DSN: we report success */
    QM_HOW_SMTP_DSN, /* relayed with NOTIFY: success is the server's to report */
};

/* qmgr.c */
double qm_now_sec(void);
core_time_t qm_now_ms(void);
void qm_log(struct qmgr *q, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void qm_log_as(struct qmgr *q, const char *service, int level, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));

/* deliver.c */
void qm_delivery_done(void *ctx, struct deliver_result *res);
void qm_delivery_moved(struct qm_delivery *d, const struct deliver_result *res);
void qm_delivery_defer(struct qm_delivery *d, const char *dsn, const char *why);

/* cluster.c */
void qm_cluster_open(struct qmgr *q);
void qm_cluster_close(struct qmgr *q);
void qm_cluster_reload(struct qmgr *q);
void qm_cluster_queue(struct qmgr *q, struct core_queue *cq);
void qm_cluster_poke(struct qmgr *q);
void qm_cluster_started(struct qmgr *q, struct core_queue *cq);
void qm_cluster_done(struct qmgr *q, struct core_queue *cq);
int qm_cluster_keeps(struct qmgr *q, struct core_queue *cq);
void qm_cluster_queue_dead(void *ctx, struct core_queue *cq, const char *why);
void qm_cluster_queue_alive(void *ctx, struct core_queue *cq);
void qm_cluster_suspended(struct qmgr *q, const char *dest,
                          int64_t duration_ms);
void qm_cluster_resumed(struct qmgr *q, const char *dest);
int qm_cluster_held(struct qmgr *q, const char *dest, cluster_held_fn *fn,
                    void *arg);
struct core_destdb *qm_cluster_destdb(struct qmgr *q,
                                      struct core_destdb *inner);

/* finch.c */
int qm_finch_applies(const struct qmgr *q, const struct route_result *r);
void qm_finch_start(struct qm_delivery *d, const struct deliver_request *req);
int qm_finch_done(struct qm_delivery *d, const struct deliver_result *res);
void qm_finch_forget(struct qm_delivery *d);
void qm_finch_gc(struct qmgr *q);
void qm_finch_free(struct qmgr *q);
int qm_finch_idle(struct qmgr *q, struct core_queue *cq);
void qm_finch_trim(struct qmgr *q, struct core_queue *cq, int keep);

/* router.c */
struct qm_route_job;
int qm_router_applies(const struct qmgr *q, const struct route_result *r);
void qm_router_add(struct qm_msg *m, uint32_t i, const struct route_result *r);
void qm_router_run(struct qmgr *q);
void qm_router_forget(struct qm_msg *m);
void qm_router_free(struct qmgr *q);
void qm_router_stats(const struct qmgr *q, long *busy, long *waiting);
/* verify.c */
struct qm_verify;
void qm_verify_settings(struct qmgr *q);
int qm_verify_owns(const struct qmgr *q, const struct core_message *cm);
const char *qm_verify_address(const struct qmgr *q, uint64_t no);
const char *qm_verify_sender(const struct qmgr *q);
void qm_verify_decided(struct qmgr *q, const char *transport,
                       const uint64_t *no, int n,
                       const struct deliver_rcpt_result *res,
                       enum deliver_status st, const char *dsn,
                       const char *text, const char *relay, double handoff,
                       double conn_done);
void qm_verify_free(struct qmgr *q);

/* deliver.c: recipient k's address, for a message or a probe */
const char *qm_delivery_address(const struct qm_delivery *d, int k);

/* feed.c */
void qm_feed_ask(struct qmgr *q, long delay_us);
void qm_feed(struct qmgr *q);
void qm_expire_sweep(struct qmgr *q);

/* message.c */
struct qm_msg *qm_message_find(struct qmgr *q, const char *id);
void qm_message_free(struct qm_msg *m);
void qm_message_load(struct qmgr *q, const char *id, int expire);
struct util_blob *qm_message_body(struct qm_msg *m, char *why, size_t whylen);
void qm_message_body_idle(struct qm_msg *m);
void qm_message_write(struct qm_msg *m, const struct spool_change *ch,
                      int final);
void qm_core_entry_deferred(void *ctx, struct core_entry *e,
                            const char *reason);
void qm_core_message_done(void *ctx, struct core_message *cm);
long qm_core_message_more(void *ctx, struct core_message *cm, long max);

/* rcpt.c */
typedef void qm_rcpt_visit_fn(void *ctx, uint32_t i, struct spool_rcpt *r);

long qm_rcpt_read(struct qm_msg *m, long max);
struct spool_rcpt *qm_rcpt_get(struct qm_msg *m, uint32_t i);
void qm_rcpt_decided(struct qm_msg *m, uint32_t i);
long qm_rcpt_expire(struct qm_msg *m, const char *text);
int qm_rcpt_walk(struct qm_msg *m, qm_rcpt_visit_fn *visit, void *ctx,
                 char *why, size_t whylen);
void qm_rcpt_free(struct qm_msg *m);

/* dest.c */
struct core_queue *qm_dest_queue(struct qmgr *q, const struct route_result *r);
void qm_dest_release(struct core_queue *cq);
void qm_dest_sweep(struct qmgr *q);

/* deliver.c */
void qm_dispatch(struct qmgr *q);
struct zm_agent;
void qm_delivery_start(struct qmgr *q, struct core_entry *e,
                       struct zm_agent *agent);

/* zmailer.c */
struct qm_zmailer;
int qm_zmailer_take(struct qmgr *q, struct core_entry *e);
void qm_zmailer_cache(const struct qm_delivery *d, const char **key,
                      int *idle_ms);
void qm_zmailer_entry_done(struct qm_delivery *d, int hop_failed,
                           const char *reason);
void qm_zmailer_over(struct qm_delivery *d);
void qm_zmailer_flush(struct qmgr *q, const struct smtp_node *node);
void qm_zmailer_reload(struct qmgr *q);
void qm_zmailer_status(const struct qmgr *q, const char *transport,
                       struct core_zsummary *s);
void qm_zmailer_free(struct qmgr *q);

/* nexthop.c */
void qm_addr_list(const struct dns_result *res, struct util_buf *b);

/* The TLSA lookups of a delivery at dane and dane-only (dane.c). */
typedef void qm_dane_fn(struct qm_delivery *d, const struct dns_result *res,
                        const struct deliver_dane *dane, size_t n);
void qm_dane_start(struct qm_delivery *d, struct dns_result *res, unsigned port,
                   qm_dane_fn *done);

/* MTA-STS (sts.c). */
typedef void qm_sts_fn(struct qm_delivery *d);
void qm_sts_open(struct qmgr *q);
void qm_sts_close(struct qmgr *q);
int qm_sts_own_mx(const struct qm_delivery *d);
int qm_sts_applies(const struct qm_delivery *d);
void qm_sts_get(struct qm_delivery *d, qm_sts_fn *done);
size_t qm_sts_filter(const struct qm_delivery *d, struct deliver_addr *addrs,
                     size_t n, char *why, size_t whylen);
void qm_sts_report(struct qm_delivery *d, const struct deliver_result *res);

/* What enforce would make of a delivery made (sts.c). */
enum qm_sts_verdict {
    QM_STS_OK,
    QM_STS_NOT_IN_MX,
    QM_STS_NO_TLS,
    QM_STS_NOT_TRUSTED,   /* the chain does not verify */
    QM_STS_HOST_MISMATCH, /* it does, not for the MX host's name */
};
enum qm_sts_verdict qm_sts_verdict(const struct qm_delivery *d,
                                   const struct deliver_result *res, char *host,
                                   size_t hostlen, char *addr, size_t addrlen);

/* TLS reporting, RFC 8460: counts (tlsrpt.c), reports (tlsrpt_send.c). */
struct qm_tlsrpt {
    struct qmgr *q;
    struct tlsrpt_table *table;
    int64_t period, start; /* seconds */
    char org[256], contact[300], ca_file[1024];
    struct event *tick;
    struct http_client *http;
    struct qm_report *reports;
    struct qm_post *posts;
    unsigned serial;
    int closing;
};

void qm_tlsrpt_free(struct qm_tlsrpt *r);
void qm_tlsrpt_report(struct qm_tlsrpt *r, const struct tlsrpt_table *t,
                      const char *domain, int64_t start, int64_t end);
void qm_tlsrpt_send_stop(struct qm_tlsrpt *r);
void qm_tlsrpt_open(struct qmgr *q);
void qm_tlsrpt_close(struct qmgr *q);
void qm_tlsrpt_dane(struct qm_delivery *d, const struct deliver_dane *dane,
                    size_t n);
void qm_tlsrpt_record(struct qm_delivery *d, const struct deliver_result *res);
void qm_tlsrpt_policy_failure(struct qm_delivery *d, enum tlsrpt_result result,
                              const char *host, const char *reason);
void qm_tlsrpt_delivery_free(struct qm_delivery *d);

/* An external agent's delivery (agent.c). */
void qm_agent_log_init(struct qmgr *q);
void qm_agent_status(struct qmgr *q, const char *transport, struct util_buf *b,
                     int json);
char **qm_agent_request(struct qmgr *q, const struct route_result *r,
                        struct deliver_request *req, char *key, size_t keylen,
                        char *why, size_t whylen);

/* TLS of a delivery (tls.c). */
void qm_tls_request(const struct qmgr *q, const char *transport,
                    const struct route_result *r, enum deliver_sts sts,
                    struct deliver_tls *out);
void qm_tls_log(struct qmgr *q, const char *transport,
                const struct deliver_result *res);
void qm_tls_field(const struct deliver_result *res, char *buf, size_t len);
struct deliver_passwd *qm_tls_passwd(const struct qmgr *q);

/* SMTP AUTH (sasl.c). */
int qm_sasl_load(const struct conf *conf, const struct route_table *routes,
                 struct deliver_passwd **passwd, char *why, size_t whylen);
void qm_sasl_request(const struct qmgr *q, const char *transport,
                     const struct route_result *r, struct deliver_sasl *out);
void qm_sasl_log(struct qmgr *q, const char *id,
                 const struct deliver_result *res);
void qm_delivery_free(struct qm_delivery *d);

/* outcome.c */
void qm_outcome_log(struct qm_msg *m, uint32_t i, const char *transport,
                    const char *relay, int conn_use, const char *dsn,
                    enum deliver_status st, const char *text, const char *tls,
                    double handoff, double conn_done);

/* metrics.c */
void qm_metrics_outcome(struct qmgr *q, const char *transport,
                        enum deliver_status st, double delay);
void qm_metrics_free(struct qmgr *q);
void qm_outcome_record(struct qm_msg *m, const uint64_t *idx, int n,
                       const struct deliver_rcpt_result *res,
                       const struct deliver_rcpt_result *same, enum qm_how how,
                       const char *tls);
void qm_outcome_decide(struct qm_msg *m, const uint64_t *idx, int n,
                       enum deliver_status st, const char *dsn,
                       const char *text, const char *relay);
void qm_outcome_suspended(struct qm_msg *m, const uint64_t *idx, int n,
                          const char *reason);

/* bounce.c */
struct qm_owed {
    uint32_t *idx;              /* recipients owed one kind of notice */
    struct qmgr_notice_rcpt *r; /* what the notice says of each */
    size_t n, cap;
};

struct qm_census {
    uint32_t open;          /* recipients deferred or never tried */
    int warned;             /* a delay notice went out already */
    int notices;            /* the sender gets notices (not null) */
    int delays;             /* old enough for a delay notice */
    struct qm_owed owed[3]; /* by enum qmgr_notice */
};

int qm_bounce_census(struct qm_msg *m, struct qm_census *c, char *why,
                     size_t whylen);
void qm_bounce_notices(struct qm_msg *m, struct qm_census *c, int retry,
                       struct spool_change *ch, struct spool_result **marks);
void qm_bounce_census_free(struct qm_census *c);

/* submit.c */
void qm_submit_notice(struct qmgr *q, struct spool_msg *nm, const char *kind,
                      const char *about);

#endif
