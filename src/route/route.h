#ifndef SLUICE_ROUTE_H
#define SLUICE_ROUTE_H

/*
 * NAME
 *	route 3h - recipient to transport, next hop and queue
 * SYNOPSIS
 *	#include "route/route.h"
 *
 *	struct route_table *route_load(const struct conf *conf, char *why,
 *			size_t whylen)
 *	void	route_free(struct route_table *t)
 *	int	route_resolve(const struct route_table *t, const char *address,
 *			struct route_result *out, char *why, size_t whylen)
 *	size_t	route_nexthop_format(const struct route_result *r, char *buf,
 *			size_t len)
 *
 *	int	route_transport_count(const struct route_table *t)
 *	const struct route_transport *route_transport_at(
 *			const struct route_table *t, int i)
 *	const struct route_transport *route_transport_find(
 *			const struct route_table *t, const char *name)
 *	const char *route_type_name(enum route_type type)
 * DESCRIPTION
 *	The route/ layer decides, for one recipient, which transport
 *	delivers it, to which next hop, and so into which destination
 *	queue it goes. This header is the layer's whole public face.
 *
 *	route_load() builds a routing table from a validated configuration:
 *	the declared transports ("transports", NAME:TYPE entries), the
 *	default transport ("default_transport", which must be declared),
 *	the relay host ("relayhost") and the transport table file
 *	("transport_maps"). Everything is checked: on any error it returns
 *	NULL and leaves in why a complete message that names the parameter,
 *	or the file and line ("/etc/sluice/transport, line 3: unknown
 *	transport \"rleay\""). It never exits or aborts on bad input. To
 *	reload, build a new table and free the old one only once the new
 *	one loaded; nothing in a struct route_result points into a table.
 *	route_free() frees a table (NULL is fine).
 *
 *	route_resolve() routes one recipient address local@domain. The
 *	domain is compared without regard to case. The transport table is
 *	searched for the domain itself, then for ".parent" patterns from
 *	the nearest parent up (a.b.example.com tries .b.example.com, then
 *	.example.com, then .com), then for "*". Without a match the
 *	default transport delivers, to the relay host if one is set, else
 *	to the recipient's domain. An address literal domain
 *	([192.0.2.1], [IPv6:2001:db8::1]) is looked up as itself, then
 *	"*", then the default; as a next hop it means that address, with no
 *	MX lookup. It returns 0 and fills out, or -1 with a message in why
 *	for an address that cannot be routed: the null address, a bare
 *	local part, an empty local part, a malformed domain or an address
 *	literal that is not IPv4 or IPv6. A table that has loaded cannot
 *	make route_resolve() fail.
 *
 *	A route_result is self-contained (no pointers into the table; out
 *	may be copied freely), except for address, which is the address
 *	argument itself.
 *
 *	route_nexthop_format() writes the next hop as an operator would
 *	write it in the transport table (example.com, [10.0.0.1]:2525, or
 *	the text of a discard or error transport) and returns its length,
 *	snprintf()-style; it is also the queue key (key.queue, below).
 *
 *	route_transport_count() and route_transport_at() list the declared
 *	transports in the order of "transports"; route_transport_find()
 *	finds one by name (NULL if not declared). route_type_name() is
 *	"smtp", "lmtp", "discard", "error" or "agent".
 */

#include "conf/conf.h"

#include <stddef.h>

/* What a transport does with its recipients. */
enum route_type {
    ROUTE_SMTP,    /* SMTP to the next hop: MX lookup unless in brackets */
    ROUTE_LMTP,    /* LMTP to the next hop host: never an MX lookup */
    ROUTE_DISCARD, /* report delivered; the next hop is a text */
    ROUTE_ERROR,   /* bounce; the next hop is the reason text */
    ROUTE_AGENT,   /* an external agent of scheduler_rules (decision 129) */
};

/* Longest transport name, and longest next hop or text, in bytes. */
#define ROUTE_NAME_MAX    63
#define ROUTE_NEXTHOP_MAX 511
/* Longest local socket path: what struct sockaddr_un holds on Linux. */
#define ROUTE_SOCKET_PATH_MAX 107
/* A local part and "@" (per-recipient queues), the next hop in brackets
 * with ":65535"; "transport:" and the next hop so written. */
#define ROUTE_QUEUE_KEY_MAX (64 + 1 + ROUTE_NEXTHOP_MAX + 2 + 6)
#define ROUTE_KEY_MAX       (ROUTE_NAME_MAX + 1 + ROUTE_QUEUE_KEY_MAX)

struct route_transport {
    const char *name; /* [a-z0-9_-], at most ROUTE_NAME_MAX bytes */
    enum route_type type;
    int per_recipient; /* _destination_recipient_limit 1: a queue each */
};

/*
 * Where a recipient goes, in named parts, so that no caller parses a
 * string (and destinations may later be grouped by MX set or provider
 * by changing route/ alone).
 */
struct route_key {
    char queue[ROUTE_QUEUE_KEY_MAX + 1]; /* its queue, in its transport */
    char cache[ROUTE_KEY_MAX + 1];       /* connections made for it may serve */
};

struct route_result {
    const char *address;                 /* the address given, unchanged */
    char transport[ROUTE_NAME_MAX + 1];  /* declared transport name */
    enum route_type type;                /* its type */
    char nexthop[ROUTE_NEXTHOP_MAX + 1]; /* see below */
    unsigned port;                       /* 0: the transport's default */
    int mx;                              /* 1: look up nexthop's MX */
    int unix_path;                       /* lmtp: nexthop is a socket path */
    struct route_key key;                /* see below */
};

/*
 * nexthop: for smtp and lmtp, a lower-cased domain or host name, or an
 * IP address (IPv6 without brackets or "IPv6:" tag), never with brackets
 * or a port; mx says whether it is a mail domain to look up MX records
 * for (smtp, written without brackets) or a host to connect to. For
 * discard and error, the text from the table (may be empty: the agent
 * supplies its own), with port 0 and mx 0. For lmtp written as
 * "unix:/path", the absolute path of a local (Unix domain) socket, with
 * unix_path 1, port 0 and mx 0. For agent, a lower-cased host name
 * (the table's, else the recipient's domain; an address literal's bare
 * address), with port 0 and mx 0: the host of scheduler_rules' selector
 * and of $host.
 *
 * key.queue: two recipients of one transport with the same queue key
 * share a destination queue ("example.com", "[10.0.0.1]:2525", "5.1.1
 * no such user"); it is the next hop as route_nexthop_format() writes
 * it. For a transport whose _destination_recipient_limit is 1 (except
 * an error transport), each recipient is its own destination, as in the
 * reference: the key is "localpart@" and that, lower-cased
 * ("alice@example.com"), so that concurrency and dead-destination
 * detection count per recipient. key.cache: a connection made for one
 * destination may be reused for any with the same cache key,
 * "TRANSPORT:" and the next hop as written above ("smtp:example.com",
 * "relay:[10.0.0.1]:2525"), per recipient or not. Both are opaque to
 * callers, who only compare them.
 */

struct route_table;

struct route_table *route_load(const struct conf *conf, char *why,
                               size_t whylen);
void route_free(struct route_table *t);
int route_resolve(const struct route_table *t, const char *address,
                  struct route_result *out, char *why, size_t whylen);
size_t route_nexthop_format(const struct route_result *r, char *buf,
                            size_t len);

int route_transport_count(const struct route_table *t);
const struct route_transport *route_transport_at(const struct route_table *t,
                                                 int i);
const struct route_transport *route_transport_find(const struct route_table *t,
                                                   const char *name);
const char *route_type_name(enum route_type type);

#endif
