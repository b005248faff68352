#ifndef SLUICE_SPOOL_H
#define SLUICE_SPOOL_H

/*
 * NAME
 *	spool 3 - the durable message store, on LMDB
 * SYNOPSIS
 *	#include "spool/spool.h"
 *
 *	int	spool_open(struct spool **sp, const struct spool_config *cf,
 *			int flags, char *why, size_t whylen)
 *	void	spool_close(struct spool *sp)
 *
 *	struct spool_msg *spool_msg_new(void)
 *	void	spool_msg_free(struct spool_msg *m)
 *	int	spool_msg_add_rcpt(struct spool_msg *m, const char *address,
 *			const char *orig, unsigned notify, const char *orcpt)
 *	void	spool_msg_body_file(struct spool_msg *m, int fd,
 *			const char *path, uint64_t size)
 *
 *	int	spool_submit(struct spool *sp, struct spool_msg *m,
 *			spool_done_fn *done, void *ctx)
 *	int	spool_store(struct spool *sp, struct spool_msg *m, char *why,
 *			size_t whylen)
 *	int	spool_submit_change(struct spool *sp, const char *id,
 *			const struct spool_change *ch,
 *			spool_change_done_fn *done, void *ctx)
 *	int	spool_submit_delete(struct spool *sp, const char *id,
 *			spool_change_done_fn *done, void *ctx)
 *
 *	int	spool_get(struct spool *sp, const char *id, struct spool_msg **m,
 *			int what, char *why, size_t whylen)
 *	int	spool_rcpts(struct spool *sp, const char *id, uint32_t from,
 *			uint32_t max, struct spool_rcpt **out, uint32_t *count,
 *			char *why, size_t whylen)
 *	int	spool_list(struct spool *sp, enum spool_index index,
 *			spool_list_fn *fn, void *ctx, char *why, size_t whylen)
 *	int	spool_list_index(struct spool *sp, enum spool_index index,
 *			spool_index_fn *fn, void *ctx, char *why,
 *			size_t whylen)
 *	int	spool_update(struct spool *sp, const char *id,
 *			const struct spool_change *ch, char *why, size_t whylen)
 *	int	spool_delete(struct spool *sp, const char *id, char *why,
 *			size_t whylen)
 *	int	spool_recover(struct spool *sp, struct spool_recovery *rec,
 *			char *why, size_t whylen)
 *	void	spool_stats(struct spool *sp, struct spool_stats *st)
 *	long	spool_count(struct spool *sp, enum spool_index index)
 *	int64_t spool_free_bytes(struct spool *sp)
 *	void	spool_id_new(char id[SPOOL_ID_MAX + 1], int64_t now)
 *
 *	int	spool_meta_put(struct spool *sp, const char *key,
 *			const void *val, size_t len, char *why, size_t whylen)
 *	int	spool_meta_get(struct spool *sp, const char *key, void **val,
 *			size_t *len, char *why, size_t whylen)
 *	int	spool_meta_delete(struct spool *sp, const char *key,
 *			char *why, size_t whylen)
 *	int	spool_meta_list(struct spool *sp, const char *prefix,
 *			spool_meta_fn *fn, void *ctx, char *why,
 *			size_t whylen)
 *	int	spool_meta_submit(struct spool *sp, const char *key,
 *			const void *val, size_t len, spool_meta_done_fn *done,
 *			void *ctx)
 * DESCRIPTION
 *	The spool keeps messages (envelope, recipients, body) in one LMDB
 *	environment under <queue_directory>/db. A message is acknowledged
 *	only after the write transaction that holds it is on disk: LMDB
 *	runs with its default synchronous commits, never with MDB_NOSYNC or
 *	MDB_WRITEMAP, so a crash at any instant loses no committed message
 *	and shows no partly written one.
 *
 *	spool_open() opens (with SPOOL_CREATE: creates, mode 0700) the
 *	environment. With SPOOL_READONLY nothing can be changed. The map
 *	starts at spool_config.map_size and grows (doubling, up to
 *	map_size_limit, 0 = no limit but the disk) when a transaction does
 *	not fit. Errors return -1 with the reason in why, and errno set:
 *	EACCES when the caller may not write the spool (sendmail then uses
 *	the maildrop), ENOENT when it does not exist.
 *
 *	spool_submit() queues a message for the next group commit and
 *	returns at once; the message gets its queue id (m->id) when it is
 *	written, and belongs to the spool until the callback gets it back.
 *	The body is m->size bytes at m->body (size 0: the body is a string
 *	and its length is taken), or, after spool_msg_body_file(), the
 *	first size bytes of the open file fd named path (the SMTP server's
 *	staging file of a large message): m takes fd and a copy of path
 *	over. Such a body is copied from the file straight into the space
 *	the write transaction reserves for it (MDB_RESERVE), so that the
 *	caller never holds it in memory; the file is closed and unlinked
 *	once the transaction that holds the message is durable, before
 *	the callback, or when it failed, or when m is freed unsubmitted
 *	(spool_msg_free()). A file that cannot be read whole (an I/O
 *	error, shorter than size) fails its own message, "staging file:
 *	...", and no other. A committer thread writes every message queued
 *	while the previous commit was going on in one transaction, commits
 *	it (one fsync for all) and then calls each message's done callback,
 *	from the committer thread, with status 0 (durable) or -1 and a
 *	reason (nothing of that message was stored: a temporary failure,
 *	"spool full", "disk full"). Many submitters, one fsync: group
 *	commit. spool_store() is the synchronous form: submit and wait; the
 *	caller keeps m.
 *
 *	spool_submit_change() and spool_submit_delete() queue a change or a
 *	delete of a stored message for the same group commit (the daemon's
 *	delivery results): many messages and state changes share one write
 *	transaction. Each is applied whole or not at all (a nested
 *	transaction); one that cannot be (no such message, no such
 *	recipient) fails alone, with its reason, and the others commit. The
 *	change is copied; the callback gets the queue id back.
 *
 *	spool_get() reads a message by queue id: its envelope always, its
 *	recipients with SPOOL_GET_RCPTS, its body with SPOOL_GET_BODY.
 *	spool_rcpts() reads up to max recipients starting at index from
 *	(recipients can be read in batches from any position);
 *	spool_rcpts_free() frees what it gave, and spool_rcpt_clear() the
 *	strings of one of them (left NULL). spool_list()
 *	calls fn for each message of an index: SPOOL_INDEX_INCOMING in
 *	arrival order, SPOOL_INDEX_DEFERRED by next attempt time,
 *	SPOOL_INDEX_ALL by queue id (roughly arrival order); fn returns
 *	non-zero to stop. spool_list_index() walks the incoming or deferred
 *	index alone, without reading a message: fn gets each queue id and
 *	its time there (arrival, or next attempt), in that order; it is
 *	what the daemon's feed runs every time it looks. Listing uses a
 *	read transaction and never blocks writers.
 *
 *	spool_update() applies a change to one message in one transaction:
 *	new state, next attempt time, attempt count, and recipient results.
 *	A recipient result sets its status, code and reason, and adds its
 *	notified bits (the notices the sender has had about it: they are
 *	never taken away); with notified_only it only adds the bits. With
 *	keep_hold, a message that is on hold stays on hold and the new state
 *	is where a release will put it (the queue manager's writes: an
 *	operator's hold while a message is being delivered is kept).
 *	A change to SPOOL_CORRUPT keeps the envelope and the recipients as
 *	they are and records corrupt_reason; the message then leaves both
 *	indices (nothing delivers or expires it) until an operator deletes
 *	it.
 *	spool_delete() removes a message with everything it has.
 *
 *	spool_recover() is the start-up pass: messages left active go back
 *	to incoming; a record that cannot be decoded moves its message to
 *	corrupt, with the reason, its raw bytes kept (nothing is deleted).
 *
 *	spool_stats() reports the number of group commits so far and the
 *	current map size. spool_count() returns how many messages an index
 *	holds (SPOOL_INDEX_INCOMING: the incoming queue, those in memory
 *	included; SPOOL_INDEX_ALL: every message), from LMDB's own count,
 *	without a walk; -1 if it cannot be read. spool_free_bytes() returns
 *	the bytes of the database file that deleted messages left free for
 *	reuse (the file never shrinks), -1 if it cannot be read: free space
 *	for new mail that the file system does not see.
 *
 *	spool_id_new() draws a queue id for a message stored at time now
 *	(microseconds), as the committer does (id.c): a caller that needs
 *	the id before the message is stored (a Received: header) sets
 *	m->id to it; the committer keeps it unless it is taken.
 *
 *	The meta functions (meta.c) keep small named values for other
 *	layers in the spool's "meta" database, so that they survive a
 *	restart with the spool's own durability: MTA-STS policies (sts/,
 *	keys "sts:DOMAIN"), TLS reporting's counts (qmgr/tlsrpt.c, keys
 *	"tlsrpt:period" and "tlsrpt:d:DOMAIN"). A key is 1 to
 *	SPOOL_META_KEY_MAX bytes, by convention its owner's prefix first;
 *	a value is small and read whole. spool_meta_put() and spool_meta_delete() write and sync
 *	a transaction of their own (deleting a key that is not there
 *	succeeds); spool_meta_submit() queues the put (val NULL: the
 *	delete) for the next group commit and returns at once, the form
 *	for the event loop, whose done (NULL: none) comes from the
 *	committer thread. spool_meta_get() copies a value (NUL added
 *	after its len bytes; the caller frees it); a missing key is -1
 *	with errno ENOENT. spool_meta_list() calls fn for each key that
 *	starts with prefix, in byte order, in one read transaction: fn
 *	does not write the spool, and returns non-zero to stop.
 *
 *	Every function that can fail for reasons outside the program
 *	returns -1 with a one-line reason in why; they never exit.
 */

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define SPOOL_ID_MAX       16  /* queue id length, at most */
#define SPOOL_META_KEY_MAX 400 /* meta key length, at most (LMDB: 511) */

enum spool_state {
    SPOOL_INCOMING,
    SPOOL_ACTIVE,
    SPOOL_DEFERRED,
    SPOOL_HOLD,
    SPOOL_CORRUPT,
};

enum spool_rcpt_status {
    SPOOL_RCPT_PENDING,
    SPOOL_RCPT_DELIVERED,
    SPOOL_RCPT_BOUNCED,
    SPOOL_RCPT_DEFERRED,
};

/* DSN NOTIFY bits; 0 means not given (the default: FAILURE,DELAY). */
#define SPOOL_NOTIFY_NEVER   1u
#define SPOOL_NOTIFY_SUCCESS 2u
#define SPOOL_NOTIFY_FAILURE 4u
#define SPOOL_NOTIFY_DELAY   8u

/* Notices the sender has had about a recipient (spool_rcpt.notified). */
#define SPOOL_NOTIFIED_FAILURE 1u /* bounced or expired */
#define SPOOL_NOTIFIED_DELAY   2u /* delayed */
#define SPOOL_NOTIFIED_SUCCESS 4u /* delivered or relayed */
/* Not a notice: delivered to a next hop without DSN, so the success
 * notice owed says "relayed" (RFC 3464 Action). */
#define SPOOL_NOTIFIED_RELAYED 8u

/* DSN RET. */
enum spool_ret {
    SPOOL_RET_DEFAULT,
    SPOOL_RET_FULL,
    SPOOL_RET_HDRS,
};

struct spool_rcpt {
    char *address;
    char *orig;  /* original recipient, or NULL */
    char *orcpt; /* DSN ORCPT ("rfc822;x@y"), or NULL */
    unsigned notify;
    enum spool_rcpt_status status;
    int code;          /* last SMTP status code, 0 if none */
    char *reason;      /* last status text (with enhanced code), or NULL */
    unsigned notified; /* SPOOL_NOTIFIED_* bits */
    char *tls; /* the last attempt's TLS ("TLSv1.3:CIPHER:WORD"), or NULL */
};

struct spool_msg {
    char id[SPOOL_ID_MAX + 1];
    char *sender; /* "" for the null sender */
    char *envid;  /* DSN ENVID, or NULL */
    enum spool_ret ret;
    enum spool_state state;
    enum spool_state held_from; /* state to release to, while HOLD */
    int64_t arrival;            /* microseconds since the epoch */
    int64_t created;            /* when first stored */
    int64_t next_attempt;       /* due time, while DEFERRED */
    uint32_t attempts;
    uint64_t size;        /* body bytes */
    int smtputf8;         /* the sender asked for SMTPUTF8 (RFC 6531) */
    char *corrupt_reason; /* while CORRUPT */
    uint32_t nrcpt;
    struct spool_rcpt *rcpt; /* with SPOOL_GET_RCPTS or when submitting */
    char *body;              /* with SPOOL_GET_BODY or when submitting */
    int body_fd;             /* with body_path: the body is in this file */
    char *body_path;         /* spool_msg_body_file(): unlinked when stored */
    size_t rcpt_cap;
};

struct spool_config {
    const char *queue_directory;
    uint64_t map_size;       /* bytes, initial */
    uint64_t map_size_limit; /* bytes, 0 = no limit but the disk */
};

#define SPOOL_CREATE       1
#define SPOOL_READONLY     2
#define SPOOL_NO_COMMITTER 4 /* one-shot programs: spool_store() only */

#define SPOOL_GET_RCPTS 1
#define SPOOL_GET_BODY  2

enum spool_index {
    SPOOL_INDEX_ALL,
    SPOOL_INDEX_INCOMING,
    SPOOL_INDEX_DEFERRED,
};

/* A change to one message; fields with has_* unset stay as they are. */
struct spool_change {
    int has_state;
    enum spool_state state;
    int has_next_attempt;
    int64_t next_attempt;
    int has_attempts;
    uint32_t attempts;
    uint32_t nresults;
    const struct spool_result *results;
    int keep_hold; /* a held message stays held: state becomes held_from */
    const char *corrupt_reason; /* with state SPOOL_CORRUPT: why */
};

struct spool_result {
    uint32_t rcpt; /* index */
    enum spool_rcpt_status status;
    int code;
    const char *reason;
    unsigned notified; /* SPOOL_NOTIFIED_* bits to add */
    int notified_only; /* add them; status, code and reason stay */
    const char *tls;   /* the attempt's TLS, or NULL: none (replaces) */
};

struct spool_recovery {
    long active_to_incoming;
    long corrupt;
};

struct spool;

typedef void spool_done_fn(void *ctx, struct spool_msg *m, int status,
                           const char *why);
typedef void spool_change_done_fn(void *ctx, const char *id, int status,
                                  const char *why);
typedef int spool_list_fn(void *ctx, const struct spool_msg *m);
typedef int spool_index_fn(void *ctx, const char *id, int64_t when);
typedef int spool_meta_fn(void *ctx, const char *key, const void *val,
                          size_t len);
typedef void spool_meta_done_fn(void *ctx, const char *key, int status,
                                const char *why);

int spool_open(struct spool **sp, const struct spool_config *cf, int flags,
               char *why, size_t whylen);
void spool_close(struct spool *sp);

struct spool_msg *spool_msg_new(void);
void spool_msg_free(struct spool_msg *m);
int spool_msg_add_rcpt(struct spool_msg *m, const char *address,
                       const char *orig, unsigned notify, const char *orcpt);
void spool_msg_body_file(struct spool_msg *m, int fd, const char *path,
                         uint64_t size);

int spool_submit(struct spool *sp, struct spool_msg *m, spool_done_fn *done,
                 void *ctx);
int spool_store(struct spool *sp, struct spool_msg *m, char *why,
                size_t whylen);
int spool_submit_change(struct spool *sp, const char *id,
                        const struct spool_change *ch,
                        spool_change_done_fn *done, void *ctx);
int spool_submit_delete(struct spool *sp, const char *id,
                        spool_change_done_fn *done, void *ctx);

int spool_get(struct spool *sp, const char *id, struct spool_msg **m, int what,
              char *why, size_t whylen);
int spool_rcpts(struct spool *sp, const char *id, uint32_t from, uint32_t max,
                struct spool_rcpt **out, uint32_t *count, char *why,
                size_t whylen);
void spool_rcpts_free(struct spool_rcpt *r, uint32_t count);
void spool_rcpt_clear(struct spool_rcpt *r);
void spool_map_release(struct spool *sp);
int spool_list(struct spool *sp, enum spool_index index, spool_list_fn *fn,
               void *ctx, char *why, size_t whylen);
int spool_list_index(struct spool *sp, enum spool_index index,
                     spool_index_fn *fn, void *ctx, char *why, size_t whylen);
int spool_update(struct spool *sp, const char *id,
                 const struct spool_change *ch, char *why, size_t whylen);
int spool_delete(struct spool *sp, const char *id, char *why, size_t whylen);
int spool_recover(struct spool *sp, struct spool_recovery *rec, char *why,
                  size_t whylen);

struct spool_stats {
    long commits;      /* group commits done by the committer */
    uint64_t map_size; /* current map size, bytes */
};

void spool_stats(struct spool *sp, struct spool_stats *st);
long spool_count(struct spool *sp, enum spool_index index);
int64_t spool_free_bytes(struct spool *sp);
void spool_id_new(char id[SPOOL_ID_MAX + 1], int64_t now);

int spool_meta_put(struct spool *sp, const char *key, const void *val,
                   size_t len, char *why, size_t whylen);
int spool_meta_get(struct spool *sp, const char *key, void **val, size_t *len,
                   char *why, size_t whylen);
int spool_meta_delete(struct spool *sp, const char *key, char *why,
                      size_t whylen);
int spool_meta_list(struct spool *sp, const char *prefix, spool_meta_fn *fn,
                    void *ctx, char *why, size_t whylen);
int spool_meta_submit(struct spool *sp, const char *key, const void *val,
                      size_t len, spool_meta_done_fn *done, void *ctx);

const char *spool_state_name(enum spool_state s);
const char *spool_rcpt_status_name(enum spool_rcpt_status s);
int64_t spool_now(void); /* microseconds since the epoch */

#endif
