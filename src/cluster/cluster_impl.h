#ifndef SLUICE_CLUSTER_IMPL_H
#define SLUICE_CLUSTER_IMPL_H

/* cluster/'s own: the sync script and the wrapped destdb's hooks. */

#include "cluster/cluster.h"

#include <event2/event.h>
#include <hiredis/hiredis.h>

struct tls_context;

#define CLUSTER_RECONNECT_MS 1000

enum cluster_state { CL_JOINING, CL_JOINED, CL_ALONE };

/* A clean stop (cluster_leave(), decision 136). */
enum { CLUSTER_STAYING, CLUSTER_LEAVING, CLUSTER_LEFT };

/* A host fact to publish: a failure or recovery (CLUSTER_FACT_RETRY,
 * retry_wall 0: recovered), a connection closed (CLUSTER_FACT_CLOSE,
 * when, wall-clock ms): decision 121. */
enum { CLUSTER_FACT_RETRY = 'F', CLUSTER_FACT_CLOSE = 'C' };

struct cluster_fact_out {
    char host[128];
    int kind;
    int64_t retry_wall;
};

struct cluster {
    struct event_base *base;
    struct cluster_url url;
    char *url_text, *name, *member;
    char *url_shown; /* url_text without its password, for the logs */
    char *tag;       /* the start of every key: "PREFIX{NAME}:" */
    int64_t lease_ms, timeout_ms;
    struct cluster_callbacks cb;
    struct cluster_conn *conn; /* NULL: none now */
    struct tls_context *tls;   /* rediss://: the client context */
    char *servername;          /* cluster_redis_tls_server_name */
    enum cluster_state state;
    int ever_joined, members;
    int alone_members;          /* members known when it went alone */
    int64_t probation_end;      /* after a rejoin: wants capped by the share */
    int64_t alone_ms;           /* cluster_alone_time (decision 120) */
    int64_t sent_at;            /* the sync in flight left (monotonic ms) */
    int64_t ok_sent_at;         /* the last sync Redis answered left */
    struct cluster_alone alone; /* the caps while alone (alone.c) */
    struct event *deadline_ev;  /* alone: the share's end */
    struct cluster_leases *leases;
    struct cluster_lease_req *reqs; /* of the sync in flight */
    size_t nreqs;
    uint64_t seq, next_seq; /* the sync in flight; 0: none */
    int dirty, pull;
    int leave; /* CLUSTER_STAYING, _LEAVING (its sync in flight), _LEFT */
    struct cluster_fact_out *facts;
    size_t nfacts, capfacts;
    long long recent_seen; /* the last connection record applied */
    struct event *sync_ev, *timeout_ev, *retry_ev, *tick_ev;
    struct event *wait_ev;      /* a rate fits one more start */
    struct core_destdb *destdb; /* cluster_destdb()'s, while it lives */
    struct cluster_shared susp; /* suspensions (decision 103) */
    struct cluster_shared dead; /* dead destinations (decision 113) */
};

/* The connection to Redis (conn.c). */
struct cluster_conn;
typedef void cluster_conn_reply_fn(void *arg, const redisReply *reply);
typedef void cluster_conn_lost_fn(void *ctx, const char *why);

struct tls_context *cluster_conn_tls(const struct cluster_config *cfg,
                                     char *why, size_t whylen);
struct cluster_conn *cluster_conn_open(struct event_base *base,
                                       const struct cluster_url *u,
                                       struct tls_context *tls,
                                       const char *servername,
                                       cluster_conn_lost_fn *lost, void *ctx,
                                       char *why, size_t whylen);
void cluster_conn_send(struct cluster_conn *cn, int argc, const char **argv,
                       const size_t *len, cluster_conn_reply_fn *fn, void *arg);
void cluster_conn_free(struct cluster_conn *cn);

void cluster_log(struct cluster *c, int warning, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void cluster_caps(struct cluster *c);
void cluster_go_alone(struct cluster *c, const char *why);
void cluster_go_joined(struct cluster *c);
void cluster_drop(struct cluster *c);
void cluster_sync_send(struct cluster *c);
void cluster_rate_wait(struct cluster *c, int64_t ms);
void cluster_susp_unsent(struct cluster *c);
void cluster_alone_begin(struct cluster *c);

extern const char cluster_sync_script[];

/* A host fact to publish: retry_wall 0 withdraws a failure. */
void cluster_fact_publish(struct cluster *c, const char *host, int kind,
                          int64_t retry_wall);
/* Another member's fact, into the wrapped destdb. */
void cluster_destdb_apply(struct core_destdb *db, const char *host,
                          int64_t retry_wall);
/* Another member's connection to host closed at when (wall-clock ms). */
void cluster_destdb_closed(struct core_destdb *db, const char *host,
                           int64_t when_wall);

#endif
