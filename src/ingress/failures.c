/*
 * NAME
 *	failures 3 - recent failed logins per client address
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	struct auth_failures *failures_create(void)
 *	long	failures_note(struct auth_failures *t,
 *			const struct sockaddr *sa, long base_ms,
 *			long limit_ms, time_t now)
 *	void	failures_free(struct auth_failures *t)
 * DESCRIPTION
 *	A password guesser's answers come slower and slower: each failed
 *	login from an address is answered after a delay that doubles with
 *	the failures from that address in the last FAILURES_EXPIRE
 *	seconds, from smtpd_sasl_failure_delay up to
 *	smtpd_sasl_failure_delay_limit. The session waits on its own
 *	timer (auth.c): no other session, and not the event loop, waits
 *	with it. A login that succeeds is never delayed, so a user who
 *	shares an address with a guesser still logs in at once.
 *
 *	failures_note() counts one failure from the address of sa at now
 *	and returns the delay in milliseconds for it. The table keeps at
 *	most FAILURES_MAX addresses: an entry older than FAILURES_EXPIRE
 *	is forgotten, and when all are recent the one whose last failure
 *	is the oldest makes room, so that memory stays bounded whatever
 *	number of addresses guess (an IPv6 guesser has many).
 */

#include "ingress/smtpd_impl.h"

#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

struct failure {
    int family; /* 0: a free slot */
    unsigned char addr[16];
    long count;
    time_t last;
};

struct auth_failures {
    struct failure *v; /* FAILURES_MAX slots */
};

struct auth_failures *failures_create(void)
{
    struct auth_failures *t = xcalloc(1, sizeof(*t));

    t->v = xcalloc(FAILURES_MAX, sizeof(*t->v));
    return t;
}

void failures_free(struct auth_failures *t)
{
    if (t == NULL)
        return;
    free(t->v);
    free(t);
}

/* The address bytes of sa; IPv4-mapped IPv6 as IPv4. */
static int key(const struct sockaddr *sa, unsigned char addr[16])
{
    memset(addr, 0, 16);
    if (sa->sa_family == AF_INET) {
        memcpy(addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        return AF_INET;
    }
    if (sa->sa_family == AF_INET6) {
        memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
        return AF_INET6;
    }
    return AF_UNIX; /* one client: all its sessions share an entry */
}

long failures_note(struct auth_failures *t, const struct sockaddr *sa,
                   long base_ms, long limit_ms, time_t now)
{
    unsigned char addr[16];
    int family = key(sa, addr);
    struct failure *f = NULL, *room = NULL;
    long delay;

    for (size_t i = 0; i < FAILURES_MAX && f == NULL; i++) {
        struct failure *e = &t->v[i];

        if (e->family != 0 && now - e->last > FAILURES_EXPIRE)
            e->family = 0; /* forgotten */
        if (e->family == family && memcmp(e->addr, addr, 16) == 0)
            f = e;
        else if (room == NULL || (room->family != 0 &&
                                  (e->family == 0 || e->last < room->last)))
            room = e;
    }
    if (f == NULL) {
        f = room;
        f->family = family;
        memcpy(f->addr, addr, 16);
        f->count = 0;
    }
    f->count++;
    f->last = now;
    if (base_ms <= 0)
        return 0;
    delay = base_ms;
    for (long i = 1; i < f->count && delay < limit_ms; i++)
        delay *= 2;
    return delay < limit_ms ? delay : limit_ms;
}
