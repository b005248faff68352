#ifndef SLUICE_DELIVER_IMPL_H
#define SLUICE_DELIVER_IMPL_H

/*
 * NAME
 *	deliver_impl 3h - what the SMTP client and the connection cache share
 * SYNOPSIS
 *	#include "deliver/deliver_impl.h"
 *
 *	const struct deliver_cache_params *deliver_cache_limits(
 *			const struct deliver_cache *c,
 *			const struct deliver_request *req)
 *	int	deliver_cache_may_keep(const struct deliver_cache_params *p,
 *			const struct timeval *born, int uses)
 *	void	deliver_cache_put(struct deliver_cache *c,
 *			const struct deliver_cache_params *p, const char *key,
 *			const char *endpoint, const struct deliver_conn *conn)
 *	void	deliver_cache_opened_add(struct deliver_cache *c)
 *	int	deliver_cache_hold(struct deliver_cache *c, const char *key,
 *			struct deliver_waiter *w)
 *	void	deliver_cache_release(struct deliver_cache *c, const char *key)
 *	void	deliver_cache_unqueue(struct deliver_cache *c,
 *			struct deliver_waiter *w)
 *	int	deliver_cache_take(struct deliver_cache *c, const char *key,
 *			struct deliver_conn *out)
 * DESCRIPTION
 *	A deliver_conn is an open SMTP or LMTP connection between two
 *	transactions: its bufferevent, what the server offered, how long
 *	and how much it has been used, and the user it authenticated as.
 *
 *	deliver_cache_limits() is what applies to a request: its own
 *	cache_limits (its transport's), or the cache's when those have no
 *	idle time. deliver_cache_may_keep() says whether a connection born
 *	at born that has carried uses deliveries may be cached under limits
 *	p (smtp_connection_reuse_time_limit and the reuse count limit).
 *	deliver_cache_put() stores a copy of conn under key, and under
 *	endpoint too unless that is NULL (the reference's two labels: the
 *	destination, and the server's address), and owns its
 *	bufferevent from then on; an idle connection is closed (with a
 *	QUIT) after p's cache time limit, and dropped at once if the
 *	server says anything or closes it. deliver_cache_opened_add() counts
 *	one connection established (deliver_cache_opened()). deliver_cache_take() moves the
 *	most recently cached connection for key (either of its keys) into out and returns 1, or
 *	returns 0 when there is none; the caller then owns the bufferevent
 *	and must set its callbacks.
 *
 *	Deliveries queued behind a connection (a request's queue_behind):
 *	deliver_cache_hold() registers a delivery under its request's
 *	cache_key and returns 1 when it may go now (no other delivery
 *	holds the key), or queues w and returns 0: w->wake(w->arg) is
 *	called from the loop when the delivery before it releases the key
 *	(deliver_cache_release(), after it has put its connection in the
 *	cache or closed it). A queued delivery abandoned before its turn
 *	leaves the queue with deliver_cache_unqueue(). Keys with nothing
 *	holding or queued are forgotten.
 *
 *	Memory comes from util/'s allocators, which never return NULL.
 */

#include "deliver/deliver.h"
#include "util/util.h"

#include <event2/bufferevent.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/time.h>

struct deliver_waiter {
    void (*wake)(void *arg);
    void *arg;
    struct event *ev; /* made by deliver_cache_hold() when queued */
    TAILQ_ENTRY(deliver_waiter) link;
    struct deliver_hold *hold; /* the key it waits for, while queued */
};

struct deliver_conn {
    struct bufferevent *bev;
    char peer[400];     /* "host[addr]", for reasons */
    char relay[512];    /* "host[addr]:port", for relay= */
    char endpoint[160]; /* "addr:port", its second key's */
    unsigned features;
    uint64_t size_limit;
    int64_t born_us;               /* connected, on the monotonic clock */
    int uses;                      /* deliveries carried so far */
    struct deliver_tls_result tls; /* used: bev is a TLS filter */
    char auth_user[256];           /* authenticated as; "": not */
};

const struct deliver_cache_params *
deliver_cache_limits(const struct deliver_cache *c,
                     const struct deliver_request *req);
int deliver_cache_may_keep(const struct deliver_cache_params *p,
                           int64_t born_us, int uses);
void deliver_cache_put(struct deliver_cache *c,
                       const struct deliver_cache_params *p, const char *key,
                       const char *endpoint, const struct deliver_conn *conn);
void deliver_cache_opened_add(struct deliver_cache *c);
int deliver_cache_take(struct deliver_cache *c, const char *key,
                       struct deliver_conn *out);
int deliver_cache_hold(struct deliver_cache *c, const char *key,
                       struct deliver_waiter *w);
void deliver_cache_release(struct deliver_cache *c, const char *key);
void deliver_cache_unqueue(struct deliver_cache *c, struct deliver_waiter *w);

#endif
