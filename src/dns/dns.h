#ifndef SLUICE_DNS_H
#define SLUICE_DNS_H

/*
 * NAME
 *	dns 3 - asynchronous MX, A, AAAA, TLSA and TXT resolution with a
 *	TTL cache and the resolver's DNSSEC verdict
 * SYNOPSIS
 *	#include "dns/dns.h"
 *
 *	struct dns_resolver *dns_create(struct event_base *base,
 *			const struct dns_config *cf, char *why, size_t whylen)
 *	void	dns_free(struct dns_resolver *r)
 *	int	dns_servers_check(const char *servers, char *why,
 *			size_t whylen)
 *
 *	int	dns_lookup_mx(struct dns_resolver *r, const char *domain,
 *			dns_done_fn *done, void *ctx)
 *	int	dns_lookup_host(struct dns_resolver *r, const char *host,
 *			dns_done_fn *done, void *ctx)
 *	void	dns_result_free(struct dns_result *res)
 *
 *	int	dns_lookup_tlsa(struct dns_resolver *r, const char *host,
 *			int port, dns_tlsa_fn *done, void *ctx)
 *	void	dns_tlsa_result_free(struct dns_tlsa_result *res)
 *	int	dns_lookup_txt(struct dns_resolver *r, const char *name,
 *			dns_txt_fn *done, void *ctx)
 *	void	dns_txt_result_free(struct dns_txt_result *res)
 *
 *	int	dns_lookup_peer(struct dns_resolver *r,
 *			const struct sockaddr *sa, socklen_t salen,
 *			dns_peer_fn *done, void *ctx)
 *	void	dns_peer_result_free(struct dns_peer_result *res)
 *	int	dns_reverse_name(const struct sockaddr *sa, char *out,
 *			size_t len)
 *	int	dns_addr_match(const struct dns_addr *a,
 *			const struct sockaddr *sa)
 *
 *	int	dns_servers_loopback(const struct dns_resolver *r)
 *	void	dns_set_clock(struct dns_resolver *r, dns_clock_fn *now,
 *			void *ctx)
 *	void	dns_stats(const struct dns_resolver *r, struct dns_stats *st)
 * DESCRIPTION
 *	A resolver runs c-ares on a libevent loop: one event per socket
 *	that c-ares opens (its socket state callback), one timer for its
 *	retransmissions and timeouts. No threads, nothing blocks. It
 *	belongs to the thread that runs base and is not thread-safe: a
 *	loop per thread needs a resolver per loop.
 *
 *	dns_create() asks the name servers in cf->servers ("ip[:port]"
 *	separated by commas, an IPv6 address with a port in brackets:
 *	"[::1]:53"), or, when that is NULL or empty, those of
 *	/etc/resolv.conf (c-ares reads its options too). cf->timeout_ms
 *	and cf->tries, when not 0, replace the per-try timeout (doubled
 *	at each round of the server list) and the number of tries.
 *	cf->cache_size bounds the cache (0: 100,000 answers). cf->seed
 *	seeds the shuffling of equal preferences (0: from the clock and
 *	the process id), so that tests can fix the order. On error it
 *	returns NULL with the reason in why. dns_free() ends every lookup
 *	still outstanding (see below) and frees everything.
 *
 *	dns_servers_check() tells, without a loop or a query, whether
 *	dns_create() would take servers as its server list: 0, or -1 with
 *	the same message dns_create() would give (for "sluice config").
 *
 *	dns_lookup_mx() finds where mail for domain goes. It asks for the
 *	MX records (following CNAMEs), then for the A and AAAA records of
 *	each exchanger, and calls done with a result listing the
 *	exchangers that have addresses: by preference, lowest first;
 *	exchangers of equal preference in random order (RFC 5321,
 *	5.1); each exchanger's IPv4 addresses in the order received,
 *	then its IPv6 addresses in the order received. An exchanger
 *	listed twice is kept once, at its best preference; at most
 *	DNS_MAX_HOSTS exchangers are kept, the best ones. An exchanger
 *	named by an IP address is taken as that address, as the
 *	reference does (the host's name is then the address's text).
 *
 *	dns_lookup_host() finds the addresses of one host (a [host]
 *	nexthop): a result with that one host, preference 0. An IP
 *	address (also in brackets, "[192.0.2.1]", "[IPv6:2001:db8::1]")
 *	is its own answer and asks no name server; a name in brackets is
 *	the name.
 *
 *	dns_lookup_tlsa() asks for the TLSA records of a server, named
 *	_PORT._tcp.HOST (RFC 6698, 3; RFC 7672, 2.2), following CNAMEs.
 *	DNS_OK means the question was answered: with records (each with
 *	its certificate usage, selector, matching type and association
 *	data; records with fewer than 3 bytes of data are skipped), or
 *	with a denial of existence (NXDOMAIN or no data: n = 0, which RFC
 *	7672, 2.2 reads as "no TLSA records"; the caller decides by
 *	secure). DNS_TEMPFAIL: SERVFAIL (which is what a validating
 *	resolver answers for a bogus answer), a timeout, a malformed
 *	reply. DNS_PERMFAIL: a host that is not a domain name (an
 *	address, say) or a port outside 0-65535, without a query; FORMERR;
 *	a CNAME loop. A caller doing DANE treats every status but DNS_OK
 *	as a failed TLSA lookup (RFC 7672, 2.2: the server is then
 *	unusable). The result's name is the name asked for
 *	("_25._tcp.mx.example").
 *
 *	dns_lookup_txt() asks for the TXT records of name (following
 *	CNAMEs), for MTA-STS (_mta-sts.DOMAIN, RFC 8461, 3.1) and TLS-RPT
 *	(_smtp._tls.DOMAIN, RFC 8460, 3). Each record's character-strings
 *	are joined into one string, as both RFCs ask, in the order of the
 *	record; records in the order received. A record holding a NUL
 *	byte is skipped (no such policy record can be valid). NXDOMAIN and
 *	no data are DNS_PERMFAIL with n = 0 and the reason in the
 *	reference's words ("... type=TXT: Host not found"), failures as for
 *	the other lookups.
 *
 *	dns_lookup_peer() finds an SMTP client's host name as the
 *	reference's smtpd does: the PTR record of its address, accepted
 *	only when that name's A or AAAA records include the address
 *	(forward confirmation); "unknown" otherwise, with the reference's
 *	warning. peer.c describes it, and dns_reverse_name() (the
 *	in-addr.arpa or ip6.arpa name of an address) and dns_addr_match().
 *
 *	DNSSEC: sluice validates nothing itself; it trusts the AD bit of
 *	its resolver, as the reference does (smtp_dns_support_level =
 *	dnssec). Every question carries the AD bit (RFC 6840, 5.7) and
 *	EDNS0 with the DO bit (RFC 3225, for resolvers older than RFC
 *	6840), and the AD bit of every reply is kept with its answer, in
 *	the cache too. An answer is secure when its reply had AD set and,
 *	when a CNAME chain was asked again from where it stopped, every
 *	reply on the way did. For dns_lookup_mx(): result->secure is the
 *	MX answer's (a null MX or NXDOMAIN too); for an implicit MX it also
 *	needs the secure A and AAAA answers of the domain. host->secure:
 *	every A and AAAA answer of that host was secure, no-data answers
 *	included; never for a host named by an address, whose name nobody
 *	validated. dns_lookup_host(): result->secure is the host's. TLSA
 *	and TXT results: their answer's, denials included. secure is 0 for
 *	temporary failures. The AD bit means something only when the path
 *	to the resolver is trusted: dns_servers_loopback() says whether
 *	every configured server is a loopback address (127.0.0.0/8, ::1),
 *	so that the caller can warn when DANE rests on a remote one.
 *
 *	All four return 0, or -1 when the resolver is being freed (done
 *	is then never called). Otherwise done is called exactly once, never
 *	from inside the call that started the lookup (a cached answer
 *	or an address is delivered on the next turn of the loop), so
 *	callers never see reentrancy. done owns the result and frees it
 *	with dns_result_free() (dns_tlsa_result_free(),
 *	dns_txt_result_free()), now or later; it may start new lookups.
 *	A TLSA or TXT lookup still outstanding when its resolver is freed
 *	ends as the others do (below).
 *
 *	Outcomes of dns_lookup_mx() and dns_lookup_host() and their
 *	reasons, in the reference's words:
 * .IP DNS_OK
 *	At least one host with at least one address. A domain without MX
 *	records (NOERROR, no data) is its own exchanger, preference 0
 *	(RFC 5321, 5.1, "implicit MX"): implicit_mx is then set.
 * .IP DNS_PERMFAIL
 *	The domain does not exist (NXDOMAIN): "Host or domain name not
 *	found. Name service error for name=D type=MX: Host not found",
 *	dsn 5.4.4. A null MX (RFC 7505: an MX record whose exchanger is
 *	".", whatever else is listed): "Domain D does not accept mail
 *	(nullMX)", dsn 5.1.0. A name that is not a domain name: "Name
 *	service error for D: invalid host or domain name", dsn 5.4.4,
 *	without a query. No exchanger
 *	has an address, and every exchanger's A and AAAA lookups were
 *	answered (NXDOMAIN or no data): the reason of the first exchanger
 *	in order, e.g. "Host or domain name not found. Name service error
 *	for name=H type=A: Host not found", dsn 5.4.4. A FORMERR answer
 *	("Non-recoverable error", 5.4.3) and a CNAME chain longer than 10
 *	("Name server loop for N") also fail for good.
 * .IP DNS_TEMPFAIL
 *	SERVFAIL, REFUSED, a timeout, an unreachable server: "Host or
 *	domain name not found. Name service error for name=N type=T: Host
 *	not found, try again", dsn 4.4.3; a malformed answer: "Name
 *	service error for name=N type=T: Malformed or unexpected name
 *	server reply". No exchanger has an address and at least one of
 *	their lookups failed this way: that exchanger's reason (a
 *	temporary failure outweighs permanent ones, as in the
 *	reference). A lookup still outstanding when its resolver is
 *	freed: "resolver shut down", dsn 4.4.3, called from dns_free()
 *	(one whose result was known but not yet delivered gets it then).
 * .PP
 *	An exchanger without addresses is left out when another one has
 *	some: the reference ignores such hosts "as long as we are able to
 *	look up any host address". When none has any, the failure is
 *	permanent only if every exchanger is known not to have one (the
 *	reference's default, smtp_defer_if_no_mx_address_found = no),
 *	else temporary. An NXDOMAIN for the domain's MX ends the lookup
 *	without asking for its A records (a name that does not exist has
 *	no records of any type, RFC 2308), where the reference would ask
 *	and report type=A.
 *
 *	The cache holds each answer, per name and record type, for its
 *	TTL: the smallest TTL of the records used, CNAMEs of the chain
 *	included, at most one day. A result is put together from cached
 *	answers (an exchanger shared by many domains is looked up once),
 *	so each of its parts lives by its own TTL. NXDOMAIN and no-data
 *	answers are kept for the negative TTL of RFC 2308 (the smaller of
 *	the SOA record's TTL and its minimum field, when the server sends
 *	the SOA) or else 60 seconds, at most one hour. Temporary failures
 *	are never kept. Questions already on the wire are not asked twice:
 *	a second lookup waits for the same answer. When the cache is full
 *	the least recently used answer goes. Time is a monotonic clock
 *	(immune to wall-clock steps), or what dns_set_clock() installs
 *	(now(ctx) in milliseconds; NULL restores the default), for tests.
 *
 *	dns_stats() reports counters: queries sent, answers taken from the
 *	cache, lookups started (of all four kinds), answers in the cache.
 */

#include <event2/event.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define DNS_MAX_HOSTS  64 /* exchangers kept per domain, at most */
#define DNS_PEER_NAMES 4  /* PTR names of a client checked, at most */

struct dns_config {
    const char *servers; /* "ip[:port],..."; NULL or "": resolv.conf */
    int timeout_ms;      /* per try, 0: resolv.conf or c-ares default */
    int tries;           /* 0: resolv.conf or c-ares default */
    size_t cache_size;   /* answers kept, 0: 100,000 */
    uint64_t seed;       /* equal-preference shuffling, 0: random */
};

enum dns_status {
    DNS_OK,
    DNS_TEMPFAIL,
    DNS_PERMFAIL,
};

struct dns_addr {
    struct sockaddr_storage sa; /* AF_INET or AF_INET6, port 0 */
    socklen_t salen;
    char text[INET6_ADDRSTRLEN]; /* "192.0.2.1", "2001:db8::1" */
};

struct dns_host {
    char *name; /* as listed (lower case, no final dot) */
    int pref;   /* MX preference; 0 for an implicit MX or a host */
    size_t naddr;
    struct dns_addr *addr; /* IPv4 as received, then IPv6 */
    int secure;            /* every A and AAAA answer came with AD */
};

struct dns_result {
    enum dns_status status;
    char *name;      /* the domain or host asked for */
    char *why;       /* the reason when not DNS_OK, else "" */
    char dsn[8];     /* "5.4.4", "4.4.3", ... when not DNS_OK, else "" */
    int implicit_mx; /* the domain is its own exchanger */
    size_t nhost;    /* 0 unless DNS_OK */
    struct dns_host *host;
    int secure; /* the MX (or the host's) answers came with AD */
};

struct dns_tlsa {
    uint8_t usage, selector, mtype; /* RFC 6698, 2.1 */
    size_t len;
    unsigned char *data; /* the certificate association data */
};

struct dns_tlsa_result {
    enum dns_status status; /* DNS_OK: records, or a denial (n = 0) */
    char *name;             /* "_25._tcp.mx.example" */
    char *why;              /* the reason when not DNS_OK, else "" */
    char dsn[8];            /* when not DNS_OK, else "" */
    int secure;             /* the answer (records or denial) came with AD */
    size_t n;
    struct dns_tlsa *rec; /* NULL when n = 0 */
};

struct dns_txt_result {
    enum dns_status status; /* DNS_PERMFAIL for NXDOMAIN and no data */
    char *name;             /* as asked */
    char *why;              /* the reason when not DNS_OK, else "" */
    char dsn[8];            /* when not DNS_OK, else "" */
    int secure;             /* the answer came with AD */
    size_t n;
    char **txt; /* each record's strings joined; NULL when n = 0 */
};

struct dns_peer_result {
    enum dns_status status; /* DNS_OK: name is forward-confirmed */
    char *addr;             /* the client's address, as text */
    char *name;             /* the confirmed name, or "unknown" */
    char *reverse_name;     /* the first PTR host name, or "unknown" */
    char *why;              /* a warning for the log, or "" */
};

struct dns_stats {
    uint64_t queries;    /* questions sent to name servers */
    uint64_t cache_hits; /* answers taken from the cache */
    uint64_t lookups;    /* dns_lookup_*() calls */
    size_t cached;       /* answers in the cache now */
};

struct dns_resolver;

typedef void dns_done_fn(void *ctx, struct dns_result *res);
typedef void dns_tlsa_fn(void *ctx, struct dns_tlsa_result *res);
typedef void dns_txt_fn(void *ctx, struct dns_txt_result *res);
typedef void dns_peer_fn(void *ctx, struct dns_peer_result *res);
typedef int64_t dns_clock_fn(void *ctx);

struct dns_resolver *dns_create(struct event_base *base,
                                const struct dns_config *cf, char *why,
                                size_t whylen);
void dns_free(struct dns_resolver *r);
int dns_servers_check(const char *servers, char *why, size_t whylen);

int dns_lookup_mx(struct dns_resolver *r, const char *domain, dns_done_fn *done,
                  void *ctx);
int dns_lookup_host(struct dns_resolver *r, const char *host, dns_done_fn *done,
                    void *ctx);
void dns_result_free(struct dns_result *res);

int dns_lookup_tlsa(struct dns_resolver *r, const char *host, int port,
                    dns_tlsa_fn *done, void *ctx);
void dns_tlsa_result_free(struct dns_tlsa_result *res);
int dns_lookup_txt(struct dns_resolver *r, const char *name, dns_txt_fn *done,
                   void *ctx);
void dns_txt_result_free(struct dns_txt_result *res);

int dns_lookup_peer(struct dns_resolver *r, const struct sockaddr *sa,
                    socklen_t salen, dns_peer_fn *done, void *ctx);
void dns_peer_result_free(struct dns_peer_result *res);
int dns_reverse_name(const struct sockaddr *sa, char *out, size_t len);
int dns_addr_match(const struct dns_addr *a, const struct sockaddr *sa);

int dns_servers_loopback(const struct dns_resolver *r);

void dns_set_clock(struct dns_resolver *r, dns_clock_fn *now, void *ctx);
void dns_stats(const struct dns_resolver *r, struct dns_stats *st);

#endif
