#ifndef SLUICE_STS_IMPL_H
#define SLUICE_STS_IMPL_H

/*
 * NAME
 *	sts_impl 3h - what the files of sts/ share, and only they
 * SYNOPSIS
 *	#include "sts/sts_impl.h"
 *
 *	Names (mx.c):
 *	int	sts_name_valid(const char *name, size_t len)
 *	int	sts_name_norm(char *out, size_t size, const char *name)
 *
 *	Policies (policy.c):
 *	void	sts_policy_format(struct util_buf *b,
 *			const struct sts_policy *p)
 *
 *	Fetching (fetch.c):
 *	struct sts_fetcher *sts_fetcher_create(
 *			const struct sts_fetch_config *cf, char *why,
 *			size_t whylen)
 *	void	sts_fetcher_free(struct sts_fetcher *f)
 *	int	sts_fetch_start(struct sts_fetcher *f, const char *domain,
 *			sts_fetch_done_fn *done, void *ctx, char *why,
 *			size_t whylen)
 *
 *	The cache (cache.c):
 *	void	sts_cache_init(struct sts_cache *c, struct spool *sp)
 *	void	sts_cache_clear(struct sts_cache *c)
 *	struct sts_entry *sts_cache_find(struct sts_cache *c,
 *			const char *domain)
 *	struct sts_entry *sts_cache_add(struct sts_cache *c,
 *			const char *domain)
 *	void	sts_cache_remove(struct sts_cache *c, struct sts_entry *e)
 *	void	sts_cache_set(struct sts_cache *c, struct sts_entry *e,
 *			struct sts_policy *p)
 *	void	sts_cache_drop(struct sts_cache *c, struct sts_entry *e)
 *	int	sts_cache_load(struct sts_cache *c, int64_t now,
 *			sts_log_fn *log, void *log_ctx, char *why,
 *			size_t whylen)
 *	struct sts_entry *sts_cache_next(struct sts_cache *c,
 *			size_t *slot, struct sts_entry *e)
 * DESCRIPTION
 *	A fetcher runs libcurl's multi interface on the event loop and
 *	fetches one domain's policy file per sts_fetch_start(): done gets
 *	status 0 with the body, or -1 with the reason, from the loop,
 *	never from inside sts_fetch_start(). sts_fetcher_free() drops
 *	transfers under way without calling their done.
 *
 *	The cache holds an entry per domain that has a policy, a lookup
 *	under way or a recent failed fetch; sts_cache_set() gives an
 *	entry a new policy (taking p's contents) and writes it to the
 *	spool, sts_cache_drop() forgets its policy there and here.
 *	sts_cache_load() reads the spool's policies at start, dropping
 *	the expired and the unreadable. sts_cache_next() walks the
 *	entries (slot 0 and e NULL to begin; the entry returned may be
 *	removed before the next call).
 */

#include <stddef.h>
#include <stdint.h>

#include "sts/sts.h"
#include "util/util.h"

#define STS_NAME_MAX 253 /* a host name's length, at most */

int sts_name_valid(const char *name, size_t len);
int sts_name_norm(char *out, size_t size, const char *name);

void sts_policy_format(struct util_buf *b, const struct sts_policy *p);

struct sts_fetch_config {
    struct event_base *base;
    const char *ca_file;
    int timeout_ms;
    size_t max_bytes;
    int port;
    const char *host_override;
};

struct sts_fetcher;

typedef void sts_fetch_done_fn(void *ctx, int status, const char *body,
                               size_t len, const char *why);

struct sts_fetcher *sts_fetcher_create(const struct sts_fetch_config *cf,
                                       char *why, size_t whylen);
void sts_fetcher_free(struct sts_fetcher *f);
int sts_fetch_start(struct sts_fetcher *f, const char *domain,
                    const char *addrs, sts_fetch_done_fn *done, void *ctx,
                    char *why, size_t whylen);

struct sts_op;

struct sts_entry {
    char domain[STS_NAME_MAX + 1];
    struct sts_policy policy;       /* fetched 0: none */
    char failed_id[STS_ID_MAX + 1]; /* the last id whose fetch failed */
    int64_t failed_at;              /* and when */
    char failed_why[640];           /* and why */
    struct sts_op *op;              /* the lookup under way, or NULL */
    struct sts_entry *next;         /* in its hash slot */
};

struct sts_cache {
    struct sts_entry **slots;
    size_t nslots, count, policies;
    struct spool *sp;
};

void sts_cache_init(struct sts_cache *c, struct spool *sp);
void sts_cache_clear(struct sts_cache *c);
struct sts_entry *sts_cache_find(struct sts_cache *c, const char *domain);
struct sts_entry *sts_cache_add(struct sts_cache *c, const char *domain);
void sts_cache_remove(struct sts_cache *c, struct sts_entry *e);
void sts_cache_set(struct sts_cache *c, struct sts_entry *e,
                   struct sts_policy *p);
void sts_cache_drop(struct sts_cache *c, struct sts_entry *e);
int sts_cache_load(struct sts_cache *c, int64_t now, sts_log_fn *log,
                   void *log_ctx, char *why, size_t whylen);
struct sts_entry *sts_cache_next(struct sts_cache *c, size_t *slot,
                                 struct sts_entry *e);

#endif
