#ifndef SLUICE_STS_H
#define SLUICE_STS_H

/*
 * NAME
 *	sts 3 - MTA-STS (RFC 8461): policy discovery, fetch and cache
 * SYNOPSIS
 *	#include "sts/sts.h"
 *
 *	struct sts *sts_create(const struct sts_config *cf, char *why,
 *			size_t whylen)
 *	void	sts_free(struct sts *s)
 *	int	sts_policy_get(struct sts *s, const char *domain,
 *			sts_done_fn *done, void *ctx)
 *	size_t	sts_refresh_due(struct sts *s)
 *	void	sts_stats(const struct sts *s, struct sts_stats *st)
 *
 *	int	sts_mx_match(const struct sts_policy *p, const char *mx_host)
 *	int	sts_policy_parse(const char *text, size_t len,
 *			struct sts_policy *out, char *why, size_t whylen)
 *	void	sts_policy_copy(struct sts_policy *dst,
 *			const struct sts_policy *src)
 *	void	sts_policy_clear(struct sts_policy *p)
 *	const char *sts_mode_name(enum sts_mode mode)
 *	int	sts_txt_parse(const char *txt, char id[STS_ID_MAX + 1])
 *	int	sts_txt_select(const char *const *txt, size_t n,
 *			char id[STS_ID_MAX + 1])
 * DESCRIPTION
 *	A domain that publishes MTA-STS asks senders to deliver its mail
 *	only to the MX hosts its policy names, and only over TLS with a
 *	certificate valid for the MX host's name. This layer finds that
 *	policy for a recipient domain and keeps it; applying it (which MX
 *	hosts to try, what TLS to demand) is the delivery's business.
 *
 *	sts_create() makes the layer on cf->base, the event loop whose
 *	thread alone may call it afterwards (it is not thread-safe). It
 *	reads the policies cached in cf->spool (NULL: none, and nothing
 *	is kept across restarts). On error it returns NULL with the
 *	reason in why. sts_free() ends every lookup still under way:
 *	their done is called, from sts_free(), with no policy and "MTA-STS:
 *	shut down" (one whose answer was known but not yet delivered gets
 *	it then).
 *
 *	sts_policy_get() finds the policy of domain (a DNS domain, any
 *	case, a trailing dot ignored) and calls done exactly once, never
 *	from inside the call: with the policy and why NULL; with a cached
 *	policy and why when a newer one could not be had (the fetch's
 *	failure, for the log); or with NULL and why when there is no
 *	policy to apply. It returns 0, or -1 (done is then never called)
 *	for a domain that is not a domain name, or from inside sts_free().
 *	The policy given to done lives until done returns:
 *	sts_policy_copy() keeps it. done may call sts_policy_get() again;
 *	it must not call sts_free(). Lookups for one domain that overlap
 *	share one TXT lookup and one fetch.
 *
 *	How a policy is found, following RFC 8461:
 * .IP 1.
 *	The TXT records of _mta-sts.DOMAIN are asked through cf->txt (the
 *	caller's resolver). Those that do not begin with "v=STSv1" are
 *	discarded; unless exactly one is left and it is valid (an id of 1
 *	to 32 letters and digits, other fields ignored), the domain has
 *	no TXT record as far as MTA-STS goes (section 3.1).
 * .IP 2.
 *	A policy in the cache is valid until fetched + max_age. A valid
 *	policy whose id is the TXT record's is used as it is, with no
 *	fetch. Without a TXT record (or when the lookup fails) a valid
 *	policy is used all the same: an attacker who can remove the
 *	record must not be able to switch the policy off (sections 5.1,
 *	10).
 * .IP 3.
 *	With a TXT record and no valid policy of its id, the policy is
 *	fetched from https://mta-sts.DOMAIN/.well-known/mta-sts.txt:
 *	HTTPS only, the certificate verified for mta-sts.DOMAIN against
 *	cf->ca_file (NULL: the system's CAs), no redirect followed, only
 *	a 200 with a Content-Type of text/plain (parameters allowed)
 *	counts, a body of at most cf->max_policy_bytes, the whole fetch
 *	within cf->fetch_timeout_ms, no proxy. A valid policy fetched
 *	replaces the cached one, with the TXT record's id, and is
 *	written to the spool. When the fetch fails or the policy is
 *	invalid, a valid cached policy (of an older id) is used, and
 *	without one there is no policy (section 3.3: "as though the
 *	domain has not implemented MTA-STS"). The same id is not fetched
 *	again for cf->retry_delay seconds after a failure (section 3.3:
 *	senders "may wish to rate-limit" fetches).
 * .IP 4.
 *	No TXT record and no valid cached policy: no policy. An expired
 *	policy is never used; it is dropped from the cache.
 * .PP
 *	A policy of mode none is given as such: the caller applies no
 *	MTA-STS, as with NULL.
 *
 *	sts_refresh_due() refreshes what is about to go stale, as section
 *	3.3 asks ("MTAs SHOULD proactively refresh cached policies before
 *	they expire"): every cached policy fetched at least
 *	cf->refresh_interval seconds ago, or past half its max_age, gets
 *	a TXT lookup and, if the record is there, a fetch whatever its
 *	id; a failure keeps the cached policy and is logged (cf->log)
 *	unless its mode is none. Expired policies are dropped. It returns
 *	how many refreshes it started. sts_create() runs it on a timer
 *	every STS_REFRESH_TICK seconds unless cf->refresh_interval is
 *	negative.
 *
 *	sts_stats() counts what the layer did: fetches started,
 *	succeeded and failed, answers from the cache without a fetch.
 *
 *	sts_mx_match() tells whether mx_host (an MX record's name) is
 *	allowed by p (section 4.1): it matches one of the mx patterns,
 *	case-insensitively and with trailing dots ignored; a pattern
 *	"*.example.com" matches exactly one leftmost label
 *	(mail.example.com, not example.com nor a.b.example.com). 1 or 0.
 *
 *	sts_policy_parse() reads a policy file (section 3.2): key: value
 *	lines ended by LF or CRLF; "version: STSv1", "mode: enforce",
 *	"testing" or "none", "max_age:" 0 to 31557600 seconds and one or
 *	more "mx:" patterns (none needed for mode none) are required;
 *	other keys are ignored; version, mode and max_age may not be
 *	given twice. 0 with out filled (id empty, fetched 0; free it with
 *	sts_policy_clear()), or -1 with the reason. sts_policy_copy()
 *	makes dst a deep copy of src.
 *
 *	sts_txt_parse() reads one TXT record: 0 with its id, or -1.
 *	sts_txt_select() applies section 3.1 to all the TXT records of
 *	_mta-sts.DOMAIN (each given whole, its strings joined): 0 with
 *	the id when exactly one begins with v=STSv1 and it is valid, -1
 *	otherwise.
 *
 *	cf->addr, when set, finds the addresses of mta-sts.DOMAIN before a
 *	fetch, with the caller's resolver, as cf->txt does for the TXT
 *	record (so that every DNS question of a delivery goes to the same
 *	name servers, dns_servers): it calls done once with lookup_ctx and
 *	the addresses as libcurl's CURLOPT_RESOLVE takes them ("192.0.2.1"
 *	or "192.0.2.1,[2001:db8::1]"), or NULL and the reason; it returns
 *	-1 when it will not call done. Without it libcurl resolves the name
 *	itself (the system's resolver, in a thread of its own).
 *
 *	Wiring it into the queue manager: the caller provides cf->txt, a
 *	function that starts a TXT lookup of name and calls done exactly
 *	once, later or at once (sts copes), also when its resolver shuts
 *	down, with lookup_ctx, STS_TXT_OK and the records (each record's
 *	strings joined into one), STS_TXT_NONE (NXDOMAIN or no TXT
 *	records) or STS_TXT_TEMPFAIL (anything else); it returns 0, or -1
 *	when it cannot start one and will not call done (taken as a
 *	temporary failure). dns_lookup_txt() with a small adapter is that.
 *	It opens the layer at start when smtp_mta_sts_enable is yes, with
 *	smtp_mta_sts_fetch_timeout, smtp_mta_sts_CAfile and
 *	smtp_mta_sts_max_policy_size, its spool and its log, and frees it
 *	at stop. Before an SMTP delivery to a recipient domain (not to a
 *	relayhost or a [host] next hop: section 3.4) it asks
 *	sts_policy_get(); with a policy of mode enforce it keeps only MX
 *	hosts for which sts_mx_match() is true and requires TLS with a
 *	certificate verified for the MX host's name, deferring when none
 *	can be had; with mode testing it delivers as usual and logs what
 *	enforce would have refused.
 */

#include <stddef.h>
#include <stdint.h>

#define STS_ID_MAX       32       /* the TXT record's id, at most */
#define STS_MAX_AGE_MAX  31557600 /* seconds: about a year */
#define STS_REFRESH_TICK 300      /* seconds between refresh checks */

enum sts_mode {
    STS_NONE,
    STS_TESTING,
    STS_ENFORCE,
};

struct sts_policy {
    enum sts_mode mode;
    char id[STS_ID_MAX + 1]; /* the TXT record's id it was fetched for */
    int64_t max_age;         /* seconds */
    int64_t fetched;         /* seconds since the epoch */
    size_t nmx;
    char **mx; /* patterns as given: "mail.example.com", "*.example.com" */
};

/* What a TXT lookup found. */
enum sts_txt_status {
    STS_TXT_OK,       /* records: txt[0 .. n-1] */
    STS_TXT_TEMPFAIL, /* no answer */
    STS_TXT_NONE,     /* no such name, or no TXT records */
};

struct event_base;
struct spool;
struct sts;

typedef void sts_txt_done_fn(void *lookup_ctx, int status,
                             const char *const *txt, size_t n);
typedef int sts_txt_fn(void *ctx, const char *name, sts_txt_done_fn *done,
                       void *lookup_ctx);
typedef void sts_addr_done_fn(void *lookup_ctx, const char *addrs,
                              const char *why);
typedef int sts_addr_fn(void *ctx, const char *host, sts_addr_done_fn *done,
                        void *lookup_ctx);
typedef int64_t sts_clock_fn(void *ctx); /* seconds since the epoch */
typedef void sts_log_fn(void *ctx, const char *text);
typedef void sts_done_fn(void *ctx, const struct sts_policy *p,
                         const char *why);

struct sts_config {
    struct event_base *base;
    struct spool *spool; /* the cache's home; NULL: memory only */
    sts_txt_fn *txt;     /* required */
    void *txt_ctx;
    sts_addr_fn *addr; /* the policy host's addresses; NULL: libcurl's */
    void *addr_ctx;
    const char *ca_file;     /* NULL or "": the system's CAs */
    int fetch_timeout_ms;    /* 0: 10,000 */
    size_t max_policy_bytes; /* 0: 65,536 */
    /* Tests: connect to host_override (an address or name) and port
     * instead of mta-sts.DOMAIN:443; the name verified and sent stays
     * mta-sts.DOMAIN. */
    int port; /* 0: 443 */
    const char *host_override;
    int64_t refresh_interval; /* seconds; 0: a day; < 0: no refresh timer */
    int64_t retry_delay;      /* seconds; 0: 300 */
    sts_clock_fn *clock;      /* NULL: the wall clock */
    void *clock_ctx;
    sts_log_fn *log; /* NULL: nothing is logged */
    void *log_ctx;
};

struct sts_stats {
    long fetches;    /* started */
    long fetches_ok; /* a valid policy came back */
    long fetches_failed;
    long cache_hits; /* answered from the cache without a fetch */
    long cached;     /* policies in the cache now */
};

struct sts *sts_create(const struct sts_config *cf, char *why, size_t whylen);
void sts_free(struct sts *s);
int sts_policy_get(struct sts *s, const char *domain, sts_done_fn *done,
                   void *ctx);
size_t sts_refresh_due(struct sts *s);
void sts_stats(const struct sts *s, struct sts_stats *st);

int sts_mx_match(const struct sts_policy *p, const char *mx_host);
int sts_policy_parse(const char *text, size_t len, struct sts_policy *out,
                     char *why, size_t whylen);
void sts_policy_copy(struct sts_policy *dst, const struct sts_policy *src);
void sts_policy_clear(struct sts_policy *p);
const char *sts_mode_name(enum sts_mode mode);
int sts_txt_parse(const char *txt, char id[STS_ID_MAX + 1]);
int sts_txt_select(const char *const *txt, size_t n, char id[STS_ID_MAX + 1]);

#endif
