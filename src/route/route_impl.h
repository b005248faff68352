#ifndef SLUICE_ROUTE_IMPL_H
#define SLUICE_ROUTE_IMPL_H

/*
 * NAME
 *	route_impl 3h - what the files of route/ share, and only they
 * SYNOPSIS
 *	#include "route/route_impl.h"
 *
 *	Names and next hops (nexthop.c):
 *	int	route_domain_parse(const char *text, size_t len,
 *			char out[ROUTE_DOMAIN_MAX + 1], enum route_domain *kind)
 *	int	route_hop_parse(const char *text, enum route_type type,
 *			struct route_hop *hop, char *why, size_t whylen)
 *	void	route_hop_free(struct route_hop *hop)
 *	int	route_transport_name_valid(const char *name, size_t len)
 *
 *	Messages (route.c):
 *	int	route_refuse(char *why, size_t whylen, const char *before,
 *			const char *text, size_t len, const char *fmt, ...)
 *
 *	The transport table (map.c):
 *	int	route_map_load(struct route_table *t, const char *value,
 *			char *why, size_t whylen)
 *	const struct route_entry *route_map_find(const struct route_map *m,
 *			const char *key)
 *	void	route_map_free(struct route_map *m)
 * DESCRIPTION
 *	route_domain_parse() checks a domain as it appears after "@" or in
 *	a table pattern: a name (dot-separated labels of letters, digits,
 *	"-", "_" or 8-bit bytes, each at most 63 bytes, at most 255 in
 *	all), lower-cased into out; or an address literal, [IPv4] or
 *	[IPv6:addr] (the tag in any case, or no tag), written into out in
 *	its canonical form "[192.0.2.1]" or "[ipv6:2001:db8::1]" so that
 *	every spelling of one address is one lookup key. It returns 0, or
 *	-1 for anything else (without a message: callers know what they
 *	were reading).
 *
 *	route_hop_parse() reads the next hop of a transport of the given
 *	type. For smtp and lmtp: empty (hop->host NULL: the recipient's
 *	domain), or host, host:port, [host] or [host]:port, where host is
 *	a domain name or, in brackets only, an IPv4 or IPv6 address; the
 *	host is lower-cased, an address put in canonical form without
 *	brackets or tag. For discard and error: any text, kept as it is.
 *	On error it returns -1 with the problem in why ("missing \"]\"");
 *	the caller names the value and where it came from.
 *
 *	route_transport_name_valid() accepts 1 to ROUTE_NAME_MAX bytes of
 *	[a-z0-9_-]: names that can prefix a per-transport override.
 *
 *	Messages quote what they refuse with util_quote(), bytes from 0x80
 *	up as they are (UTF-8 domain names read as written).
 *	route_refuse() writes such a message into why: before, the len
 *	bytes of text quoted, then fmt's formatted text; it returns -1,
 *	for the caller to return.
 *
 *	route_map_load() reads the transport table named by the value of
 *	transport_maps into t->map (see map.c for the format and the
 *	messages). route_map_find() looks up one key: a lower-cased
 *	domain, ".parent", or a canonical address literal.
 *
 *	Memory comes from util/'s allocators, which never return NULL.
 */

#include "route/route.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

int route_refuse(char *why, size_t whylen, const char *before, const char *text,
                 size_t len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

/* Longest domain, as smtp/ accepts them (RFC 5321 allows 255). */
#define ROUTE_DOMAIN_MAX 255

enum route_domain {
    ROUTE_DOMAIN_NAME,
    ROUTE_DOMAIN_IPV4,
    ROUTE_DOMAIN_IPV6,
};

/* A parsed next hop. */
struct route_hop {
    char *host;    /* see route_hop_parse(); NULL: none given */
    unsigned port; /* 0: the default */
    int bracketed; /* written in brackets: no MX lookup */
    int unix_path; /* "unix:/path": host is a local socket's path */
};

/* One line of the transport table. */
struct route_entry {
    char *pattern;        /* lookup key: "example.com", ".example.com" */
    int transport;        /* index into the table's transports */
    struct route_hop hop; /* hop.host NULL: the recipient's domain */
    int line;             /* where it was written */
};

struct route_map {
    char *path;
    struct route_entry *entries;
    size_t count;
    size_t alloc;
    uint32_t *slots; /* open addressing: entry index + 1, 0 = empty */
    size_t mask;     /* number of slots - 1 */
    long wildcard;   /* entry index of "*", or -1 */
};

struct route_table {
    struct route_transport *transports;
    int ntransports;
    int default_transport;        /* index into transports */
    struct route_hop default_hop; /* default_transport's NEXTHOP, if any */
    struct route_hop relay;       /* relay.host NULL: no relayhost */
    struct route_map *map;        /* NULL: no transport_maps */
};

int route_domain_parse(const char *text, size_t len,
                       char out[ROUTE_DOMAIN_MAX + 1], enum route_domain *kind);
int route_hop_parse(const char *text, enum route_type type,
                    struct route_hop *hop, char *why, size_t whylen);
void route_hop_free(struct route_hop *hop);
int route_transport_name_valid(const char *name, size_t len);

int route_map_load(struct route_table *t, const char *value, char *why,
                   size_t whylen);
const struct route_entry *route_map_find(const struct route_map *m,
                                         const char *key);
void route_map_free(struct route_map *m);

#endif
