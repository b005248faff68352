#ifndef SLUICE_DNS_IMPL_H
#define SLUICE_DNS_IMPL_H

/*
 * NAME
 *	dns_impl 3h - what the files of src/dns/ share, and only they
 * SYNOPSIS
 *	#include "dns/dns_impl.h"
 *
 *	Answers (query.c):
 *	struct dns_answer *dns_answer_new(enum dns_kind kind)
 *	struct dns_answer *dns_answer_ref(struct dns_answer *a)
 *	void	dns_answer_unref(struct dns_answer *a)
 *	void	dns_fetch(struct dns_resolver *r, const char *name, int type,
 *			struct dns_wait *w)
 *
 *	The cache (cache.c):
 *	void	dns_cache_init(struct dns_cache *c, size_t max)
 *	void	dns_cache_clear(struct dns_cache *c)
 *	struct dns_entry *dns_cache_find(struct dns_cache *c,
 *			const char *name, int type)
 *	struct dns_entry *dns_cache_add(struct dns_cache *c, const char *name,
 *			int type)
 *	void	dns_cache_keep(struct dns_cache *c, struct dns_entry *e)
 *	void	dns_cache_touch(struct dns_cache *c, struct dns_entry *e)
 *	void	dns_cache_drop(struct dns_cache *c, struct dns_entry *e)
 *
 *	Name server replies (reply.c):
 *	int	dns_reply_parse(const unsigned char *buf, int len,
 *			const char *qname, int qtype, struct dns_reply *rep)
 *	void	dns_reply_clear(struct dns_reply *rep)
 *	int	dns_reply_ad(const unsigned char *buf, int len)
 *
 *	TLSA and TXT results (record.c):
 *	struct dns_tlsa_result *dns_tlsa_result_new(const char *name,
 *			enum dns_status status, const char *why,
 *			const char *dsn)
 *	struct dns_tlsa_result *dns_tlsa_result_make(const char *name,
 *			const struct dns_answer *a)
 *	struct dns_txt_result *dns_txt_result_new(const char *name,
 *			enum dns_status status, const char *why,
 *			const char *dsn)
 *	struct dns_txt_result *dns_txt_result_make(const char *name,
 *			const struct dns_answer *a)
 *
 *	Names and addresses (name.c):
 *	int	dns_name_norm(const char *in, char out[DNS_NAME_MAX + 1])
 *	int	dns_literal(const char *in, struct dns_addr *a)
 *	void	dns_addr_set(struct dns_addr *a, int family, const void *bytes)
 *	const char *dns_type_name(int type)
 *	char	*dns_xprintf(const char *fmt, ...)
 *	void	dns_panic(const char *fmt, ...)
 *
 *	The loop (resolver.c):
 *	int64_t	dns_now(struct dns_resolver *r)
 *	uint32_t dns_random(struct dns_resolver *r)
 *	void	dns_rearm(struct dns_resolver *r)
 *
 *	Lookups (lookup.c):
 *	int	dns_lookup_ptr(struct dns_resolver *r, const char *name,
 *			dns_txt_fn *done, void *ctx)
 *	void	dns_lookups_abort(struct dns_resolver *r)
 *	void	dns_lookups_deliver(struct dns_resolver *r)
 * DESCRIPTION
 *	An answer is what one question (a name and a record type) came
 *	to: records (MX targets with their preferences, or addresses), a
 *	null MX, NXDOMAIN, no data, or a failure with its reason and DSN
 *	code, and how long it may be kept. Answers never change once
 *	made and are shared by reference count between the cache and the
 *	lookups that use them, so that an answer evicted from the cache
 *	stays valid for a lookup still putting its result together.
 *
 *	dns_fetch() gets the answer to one question: from the cache when
 *	it is there and fresh, else from the name servers. A question
 *	already on the wire gets no second query: the caller waits on the
 *	same cache entry. w->fn is called once with the answer (lent: it
 *	takes a reference to keep it), possibly before dns_fetch() returns;
 *	the lookups of lookup.c, not this layer, defer what their callers
 *	see. CNAME chains are followed: the recursive server usually
 *	sends the whole chain, a chain that stops short is asked again
 *	from where it stopped, 10 times at most.
 *
 *	The cache maps (name, type) to an entry: pending while its
 *	question is on the wire (with the waiters), or done with an
 *	answer and an expiry time. dns_cache_add() makes a pending entry;
 *	dns_cache_keep() makes it done and most recently used and evicts
 *	the least recently used done entries beyond the limit;
 *	dns_cache_drop() removes and frees an entry (it must have no
 *	waiters). Pending entries are never evicted.
 *
 *	dns_reply_parse() reads a name server reply: it follows the CNAME
 *	chain from qname through the answer section and collects the
 *	records of qtype owned by its last name, with the smallest TTL
 *	of the records and CNAMEs used; when the chain moved and has no
 *	records, rep->cname names where it stopped. It also reads the
 *	SOA record of the authority section for the negative TTL and the
 *	AD bit of the header. It returns -1 on a malformed reply.
 *	dns_reply_ad() is the AD bit alone (0 without a reply).
 *
 *	dns_tlsa_result_make() and dns_txt_result_make() turn the answer
 *	to a TLSA or TXT question into what the caller of dns.h gets (see
 *	there); the _new() functions make a result without records (why
 *	NULL: "").
 *
 *	dns_name_norm() checks a domain name (letters, digits, hyphens,
 *	underscores; labels of 1 to 63 characters; 253 characters in all;
 *	not all-numeric at the end, so not an IPv4 address) and writes it
 *	in lower case without a final dot; it returns -1 when it is not
 *	one. dns_literal() recognizes an IPv4 or IPv6 address, also in
 *	brackets and as "[IPv6:...]", and returns 1 with a filled.
 *
 *	dns_lookup_ptr() asks for the PTR records of name (an in-addr.arpa
 *	or ip6.arpa name), as dns_lookup_txt() asks for TXT records: the
 *	result's txt[] holds the names the records point to (lower case,
 *	no final dot), failures as for TXT. It is peer.c's first step.
 *
 *	dns_lookups_abort() ends every lookup that has no result yet with
 *	"resolver shut down"; dns_lookups_deliver() calls the callbacks of
 *	every lookup with a result not yet delivered, then frees them. The
 *	resolver calls both from dns_free(), around ares_destroy().
 */

#include "dns/dns.h"
#include "util/util.h"

#include <ares.h>
#include <stddef.h>
#include <stdint.h>

#define DNS_NAME_MAX 253 /* characters in a domain name, final dot aside */

/* Record types asked for and met. */
#define DNS_TYPE_A     1
#define DNS_TYPE_CNAME 5
#define DNS_TYPE_SOA   6
#define DNS_TYPE_PTR   12
#define DNS_TYPE_MX    15
#define DNS_TYPE_TXT   16
#define DNS_TYPE_AAAA  28
#define DNS_TYPE_OPT   41
#define DNS_TYPE_TLSA  52

#define DNS_CHAIN_MAX     10     /* CNAMEs followed, as the reference */
#define DNS_NEG_TTL       60     /* seconds, when the server sends no SOA */
#define DNS_NEG_TTL_MAX   3600   /* seconds, negative answers at most */
#define DNS_TTL_MAX       86400  /* seconds, any answer at most */
#define DNS_CACHE_DEFAULT 100000 /* answers */
#define DNS_EDNS_PAYLOAD  1232   /* DNS flag day 2020: no IP fragmentation */

enum dns_kind {
    DNS_ANSWER_DATA,     /* records */
    DNS_ANSWER_NULLMX,   /* an MX record with the root as exchanger */
    DNS_ANSWER_NXDOMAIN, /* the name does not exist */
    DNS_ANSWER_NODATA,   /* it exists, without records of the type */
    DNS_ANSWER_PERM,     /* other permanent failure */
    DNS_ANSWER_TEMP,     /* temporary failure: never cached */
};

#define DNS_ANSWER_CACHED(a) ((a)->kind <= DNS_ANSWER_NODATA)

struct dns_mx {
    int pref;
    char *name; /* lower case, "" for the root */
};

struct dns_answer {
    int refs;
    enum dns_kind kind;
    char *why;       /* when not DATA or NULLMX */
    const char *dsn; /* when not DATA */
    uint32_t ttl;    /* seconds */
    int secure;      /* every reply it took had AD set */
    size_t count;
    struct dns_mx *mx;     /* type MX */
    struct dns_addr *addr; /* type A or AAAA */
    struct dns_tlsa *tlsa; /* type TLSA */
    char **txt;            /* type TXT; type PTR: the names */
};

struct dns_wait {
    struct dns_wait *next;
    void (*fn)(struct dns_wait *w, struct dns_answer *a);
};

struct dns_entry {
    struct dns_entry *hnext;         /* hash chain */
    struct dns_entry *older, *newer; /* use order, done entries only */
    char *name;
    int type;
    uint32_t hash;
    struct dns_answer *answer; /* NULL while pending */
    int64_t expires;           /* milliseconds, when done */
    struct dns_wait *waiters;  /* while pending */
    struct dns_wait **wtail;
    struct dns_resolver *r; /* the query on the wire */
    char *qname;            /* where the CNAME chain is */
    int hops;               /* CNAME queries so far */
    uint32_t chain_ttl;     /* smallest TTL of the CNAMEs followed */
    int chain_secure;       /* every reply of the chain had AD set */
    int edns;               /* the question carries EDNS0 */
};

struct dns_cache {
    struct dns_entry **bucket;
    size_t nbucket;
    size_t count; /* entries, pending included */
    size_t done;  /* entries with an answer */
    size_t max;   /* done entries at most */
    struct dns_entry *oldest, *newest;
};

struct dns_reply {
    size_t count;
    struct dns_mx *mx;
    struct dns_addr *addr;
    struct dns_tlsa *tlsa;
    char **txt; /* TXT strings, or PTR names */
    int nullmx;
    int ad;       /* the header's AD bit */
    uint32_t ttl; /* of the records and CNAMEs used */
    char *cname;  /* the chain stops here without records */
    int has_soa;
    uint32_t neg_ttl; /* min(SOA TTL, SOA minimum) */
};

struct dns_sock;
struct dns_lookup;

struct dns_resolver {
    struct event_base *base;
    ares_channel channel;
    int have_channel;
    struct dns_sock *socks;
    struct event *timer;
    struct dns_cache cache;
    dns_clock_fn *now;
    void *now_ctx;
    uint64_t rng;
    uint64_t queries;
    uint64_t hits;
    uint64_t lookups;
    int no_edns;              /* a server answered FORMERR to EDNS0 */
    struct dns_lookup *first; /* lookups not yet delivered, oldest */
    struct dns_lookup *last;  /* and newest */
    int closing;              /* dns_free() is at work */
};

struct dns_answer *dns_answer_new(enum dns_kind kind);
struct dns_answer *dns_answer_ref(struct dns_answer *a);
void dns_answer_unref(struct dns_answer *a);
void dns_fetch(struct dns_resolver *r, const char *name, int type,
               struct dns_wait *w);

void dns_cache_init(struct dns_cache *c, size_t max);
void dns_cache_clear(struct dns_cache *c);
struct dns_entry *dns_cache_find(struct dns_cache *c, const char *name,
                                 int type);
struct dns_entry *dns_cache_add(struct dns_cache *c, const char *name,
                                int type);
void dns_cache_keep(struct dns_cache *c, struct dns_entry *e);
void dns_cache_touch(struct dns_cache *c, struct dns_entry *e);
void dns_cache_drop(struct dns_cache *c, struct dns_entry *e);

int dns_reply_parse(const unsigned char *buf, int len, const char *qname,
                    int qtype, struct dns_reply *rep);
void dns_reply_clear(struct dns_reply *rep);
int dns_reply_ad(const unsigned char *buf, int len);

struct dns_tlsa_result *dns_tlsa_result_new(const char *name,
                                            enum dns_status status,
                                            const char *why, const char *dsn);
struct dns_tlsa_result *dns_tlsa_result_make(const char *name,
                                             const struct dns_answer *a);
struct dns_txt_result *dns_txt_result_new(const char *name,
                                          enum dns_status status,
                                          const char *why, const char *dsn);
struct dns_txt_result *dns_txt_result_make(const char *name,
                                           const struct dns_answer *a);

int dns_name_norm(const char *in, char out[DNS_NAME_MAX + 1]);
int dns_literal(const char *in, struct dns_addr *a);
void dns_addr_set(struct dns_addr *a, int family, const void *bytes);
const char *dns_type_name(int type);
char *dns_xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void dns_panic(const char *fmt, ...)
    __attribute__((format(printf, 1, 2), noreturn));

int64_t dns_now(struct dns_resolver *r);
uint32_t dns_random(struct dns_resolver *r);
void dns_rearm(struct dns_resolver *r);

int dns_lookup_ptr(struct dns_resolver *r, const char *name, dns_txt_fn *done,
                   void *ctx);
void dns_lookups_abort(struct dns_resolver *r);
void dns_lookups_deliver(struct dns_resolver *r);

#endif
