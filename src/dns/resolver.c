/*
 * NAME
 *	resolver 3 - c-ares on a libevent loop
 * SYNOPSIS
 *	#include "dns/dns.h"
 *
 *	struct dns_resolver *dns_create(struct event_base *base,
 *			const struct dns_config *cf, char *why, size_t whylen)
 *	void	dns_free(struct dns_resolver *r)
 *	int	dns_servers_check(const char *servers, char *why,
 *			size_t whylen)
 *	void	dns_set_clock(struct dns_resolver *r, dns_clock_fn *now,
 *			void *ctx)
 *	void	dns_stats(const struct dns_resolver *r, struct dns_stats *st)
 *	int	dns_servers_loopback(const struct dns_resolver *r)
 *
 *	#include "dns/dns_impl.h"
 *
 *	int64_t	dns_now(struct dns_resolver *r)
 *	uint32_t dns_random(struct dns_resolver *r)
 *	void	dns_rearm(struct dns_resolver *r)
 * DESCRIPTION
 *	c-ares says through its socket state callback which sockets it
 *	wants watched, for reading or writing (TCP connects); each gets a
 *	persistent libevent event that hands readiness to
 *	ares_process_fd(). One timer, set from ares_timeout() after every
 *	call into c-ares that may have changed its deadlines (a query
 *	sent, sockets processed, the timer itself), drives retransmission
 *	and timeouts: ares_process_fd() with no socket processes only
 *	those. Nothing blocks: c-ares opens its sockets non-blocking.
 *
 *	dns_free() ends lookups in an order that keeps every promise of
 *	dns.h: lookups without a result get "resolver shut down";
 *	ares_destroy() then ends the queries on the wire (their entries
 *	leave the cache as temporary failures, telling their waiters);
 *	then every result not yet delivered is delivered, from
 *	dns_free() itself, and only then is anything freed.
 *
 *	dns_servers_loopback() reads the server list back from c-ares
 *	(what resolv.conf gave, or cf->servers): 1 when it is not empty and
 *	every server is in 127.0.0.0/8 or is ::1.
 *
 *	dns_now() is the cache's clock in milliseconds: CLOCK_MONOTONIC,
 *	or the clock a test installed. dns_random() is splitmix64, seeded
 *	from the configuration so that a test can fix the shuffling of
 *	equal preferences; it need not be unpredictable.
 */

#include "dns/dns_impl.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct dns_sock {
    struct dns_sock *next;
    struct dns_resolver *r;
    ares_socket_t fd;
    struct event *ev;
};

static void sock_ready(evutil_socket_t fd, short what, void *arg)
{
    struct dns_sock *s = arg;
    struct dns_resolver *r = s->r; /* s may go inside ares_process_fd() */

    ares_process_fd(r->channel, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
                    (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
    dns_rearm(r);
}

static void sock_forget(struct dns_resolver *r, struct dns_sock *s)
{
    struct dns_sock **pp;

    for (pp = &r->socks; *pp != s; pp = &(*pp)->next)
        ;
    *pp = s->next;
    event_free(s->ev);
    free(s);
}

/* c-ares wants fd watched for reading, writing, or no longer. */
static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    struct dns_resolver *r = data;
    struct dns_sock *s;
    short what = EV_PERSIST;

    for (s = r->socks; s; s = s->next)
        if (s->fd == fd)
            break;
    if (!readable && !writable) {
        if (s)
            sock_forget(r, s);
        return;
    }
    if (s == NULL) {
        s = xcalloc(1, sizeof(*s));
        s->r = r;
        s->fd = fd;
        s->next = r->socks;
        r->socks = s;
    } else {
        event_free(s->ev);
    }
    if (readable)
        what |= EV_READ;
    if (writable)
        what |= EV_WRITE;
    if ((s->ev = event_new(r->base, fd, what, sock_ready, s)) == NULL ||
        event_add(s->ev, NULL) < 0)
        dns_panic("cannot watch socket %d", (int)fd);
}

static void timer_fire(evutil_socket_t fd, short what, void *arg)
{
    struct dns_resolver *r = arg;

    (void)fd;
    (void)what;
    ares_process_fd(r->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    dns_rearm(r);
}

void dns_rearm(struct dns_resolver *r)
{
    struct timeval tv;

    if (r->closing)
        return;
    if (ares_timeout(r->channel, NULL, &tv) != NULL)
        evtimer_add(r->timer, &tv);
    else
        evtimer_del(r->timer);
}

int64_t dns_now(struct dns_resolver *r)
{
    if (r->now)
        return r->now(r->now_ctx);
    return util_clock_mono_ms();
}

uint32_t dns_random(struct dns_resolver *r)
{
    uint64_t z = (r->rng += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

static uint64_t random_seed(const struct dns_resolver *r)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
           ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)r;
}

static int channel_init(struct dns_resolver *r, const struct dns_config *cf,
                        char *why, size_t whylen)
{
    struct ares_options opts;
    int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_FLAGS | ARES_OPT_EDNSPSZ;
    int rc;

    memset(&opts, 0, sizeof(opts));
    opts.sock_state_cb = sock_state;
    opts.sock_state_cb_data = r;
    opts.flags = ARES_FLAG_EDNS;
    opts.ednspsz = DNS_EDNS_PAYLOAD;
    if (cf->timeout_ms > 0) {
        opts.timeout = cf->timeout_ms;
        mask |= ARES_OPT_TIMEOUTMS;
    }
    if (cf->tries > 0) {
        opts.tries = cf->tries;
        mask |= ARES_OPT_TRIES;
    }
    if ((rc = ares_init_options(&r->channel, &opts, mask)) != ARES_SUCCESS) {
        snprintf(why, whylen, "cannot start the resolver: %s",
                 ares_strerror(rc));
        return -1;
    }
    r->have_channel = 1;
    if (cf->servers && *cf->servers &&
        (rc = ares_set_servers_ports_csv(r->channel, cf->servers)) !=
            ARES_SUCCESS) {
        snprintf(why, whylen, "bad name server list \"%s\": %s", cf->servers,
                 ares_strerror(rc));
        return -1;
    }
    return 0;
}

struct dns_resolver *dns_create(struct event_base *base,
                                const struct dns_config *cf, char *why,
                                size_t whylen)
{
    static const struct dns_config defaults;
    struct dns_resolver *r;
    int rc;

    if (cf == NULL)
        cf = &defaults;
    if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
        snprintf(why, whylen, "cannot initialize c-ares: %s",
                 ares_strerror(rc));
        return NULL;
    }
    r = xcalloc(1, sizeof(*r));
    r->base = base;
    r->rng = cf->seed ? cf->seed : random_seed(r);
    dns_cache_init(&r->cache, cf->cache_size);
    if ((r->timer = evtimer_new(base, timer_fire, r)) == NULL) {
        snprintf(why, whylen, "cannot make the resolver's timer");
        dns_free(r);
        return NULL;
    }
    if (channel_init(r, cf, why, whylen) < 0) {
        dns_free(r);
        return NULL;
    }
    return r;
}

int dns_servers_check(const char *servers, char *why, size_t whylen)
{
    ares_channel channel;
    struct ares_options opts;
    int rc;

    if (servers == NULL || *servers == 0)
        return 0;
    if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
        snprintf(why, whylen, "cannot initialize c-ares: %s",
                 ares_strerror(rc));
        return -1;
    }
    memset(&opts, 0, sizeof(opts));
    if ((rc = ares_init_options(&channel, &opts, 0)) != ARES_SUCCESS) {
        snprintf(why, whylen, "cannot start the resolver: %s",
                 ares_strerror(rc));
        ares_library_cleanup();
        return -1;
    }
    rc = ares_set_servers_ports_csv(channel, servers);
    ares_destroy(channel);
    ares_library_cleanup();
    if (rc != ARES_SUCCESS) {
        snprintf(why, whylen, "bad name server list \"%s\": %s", servers,
                 ares_strerror(rc));
        return -1;
    }
    return 0;
}

void dns_free(struct dns_resolver *r)
{
    if (r == NULL || r->closing)
        return;
    r->closing = 1;
    dns_lookups_abort(r);
    if (r->have_channel)
        ares_destroy(r->channel);
    dns_lookups_deliver(r);
    while (r->socks)
        sock_forget(r, r->socks);
    if (r->timer)
        event_free(r->timer);
    dns_cache_clear(&r->cache);
    free(r);
    ares_library_cleanup();
}

void dns_set_clock(struct dns_resolver *r, dns_clock_fn *now, void *ctx)
{
    r->now = now;
    r->now_ctx = ctx;
}

void dns_stats(const struct dns_resolver *r, struct dns_stats *st)
{
    st->queries = r->queries;
    st->cache_hits = r->hits;
    st->lookups = r->lookups;
    st->cached = r->cache.done;
}

int dns_servers_loopback(const struct dns_resolver *r)
{
    struct ares_addr_port_node *list = NULL;
    struct ares_addr_port_node *s;
    int loopback = 0;

    if (!r->have_channel ||
        ares_get_servers_ports(r->channel, &list) != ARES_SUCCESS)
        return 0;
    for (s = list; s; s = s->next) {
        if (s->family == AF_INET)
            loopback = (ntohl(s->addr.addr4.s_addr) >> 24) == 127;
        else if (s->family == AF_INET6)
            loopback = memcmp(&s->addr.addr6, &in6addr_loopback, 16) == 0;
        else
            loopback = 0;
        if (!loopback)
            break;
    }
    ares_free_data(list);
    return loopback;
}
