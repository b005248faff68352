#ifndef SLUICE_SPOOL_IMPL_H
#define SLUICE_SPOOL_IMPL_H

/*
 * NAME
 *	spool_impl 3h - what the files of spool/ share, and only they
 * SYNOPSIS
 *	#include "spool/spool_impl.h"
 *
 *	Records (record.c):
 *	void	spool_envelope_encode(struct util_buf *b,
 *			const struct spool_msg *m)
 *	int	spool_envelope_decode(const void *p, size_t len,
 *			struct spool_msg *m, char *why, size_t whylen)
 *	void	spool_rcpt_encode(struct util_buf *b, const struct spool_rcpt *r)
 *	int	spool_rcpt_decode(const void *p, size_t len,
 *			struct spool_rcpt *r, char *why, size_t whylen)
 *
 *	Keys (record.c):
 *	void	spool_key_id(unsigned char key[SPOOL_KEY_ID], const char *id)
 *	void	spool_key_rcpt(unsigned char key[SPOOL_KEY_RCPT],
 *			const char *id, uint32_t index)
 *	void	spool_key_time(unsigned char key[SPOOL_KEY_TIME], int64_t when,
 *			const char *id)
 *
 *	Queue ids (id.c):
 *
 *	Meta values (meta.c):
 *	int	spool_meta_key_check(const char *key, char *why,
 *			size_t whylen)
 *	int	spool_apply_meta(struct spool *sp, MDB_txn *txn,
 *			const char *key, const void *val, size_t len,
 *			int remove)
 *
 *	Transactions (spool.c):
 *	int	spool_txn_begin(struct spool *sp, int write, MDB_txn **txn,
 *			char *why, size_t whylen)
 *	void	spool_txn_end(struct spool *sp, MDB_txn *txn)
 *	int	spool_txn_commit(struct spool *sp, MDB_txn *txn, char *why,
 *			size_t whylen)
 *	int	spool_grow(struct spool *sp, char *why, size_t whylen)
 *	int	spool_txn_write(struct spool *sp, spool_write_fn *fn,
 *			void *ctx, const char *what, char *why, size_t whylen)
 *	int	spool_put(MDB_txn *txn, MDB_dbi dbi, const void *key,
 *			size_t klen, const void *data, size_t len,
 *			unsigned flags)
 *	void	spool_why_lmdb(char *why, size_t whylen, const char *what,
 *			int rc)
 *	void	spool_map_touch(struct spool *sp, long n, int locked)
 * DESCRIPTION
 *	Records are versioned tag-length-value strings: a version byte,
 *	then fields, each a tag byte, a length (LEB128) and the bytes;
 *	numbers are LEB128 inside their field. Unknown tags are skipped (a
 *	later version may add fields); a missing required field, a length
 *	past the end or a bad number makes the record undecodable, with
 *	the reason.
 *
 *	Keys are fixed width so that LMDB's byte order is the order we
 *	want: a queue id padded with NULs to 16 bytes; a recipient key is
 *	that and the index, big-endian; an index key (incoming by arrival,
 *	deferred by due time) is the time, big-endian, then the id.
 *
 *	Transactions go through spool.c so that the map can grow: a write
 *	that does not fit is retried by the caller after spool_grow(). The
 *	map may only be resized while no transaction of this process is
 *	open, so every transaction holds a read lock on a process-wide
 *	rwlock and spool_grow() takes it for writing. A map grown by
 *	another process (MDB_MAP_RESIZED) is adopted when a transaction
 *	begins. spool_txn_write() is that loop, once: it runs fn in a
 *	write transaction and commits, growing the map and starting over
 *	while the writes or the commit do not fit; fn returns 0, an MDB
 *	error (reported as "WHAT: ..."), or -1 with why set. spool_put()
 *	is mdb_put() of key and data given as pointers and lengths.
 *
 *	spool_map_touch() counts n records read or written through the map;
 *	every SPOOL_MAP_RELEASE_RECORDS it lets the map's pages go
 *	(spool_map_release()). With locked, the caller holds a transaction
 *	(and so the resize lock) already.
 */

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "spool/spool.h"
#include "util/util.h"

#define SPOOL_KEY_ID   16
#define SPOOL_KEY_RCPT (SPOOL_KEY_ID + 4)
#define SPOOL_KEY_TIME (8 + SPOOL_KEY_ID)

struct spool_pending;

struct spool {
    MDB_env *env;
    MDB_dbi msg, rcpt, body, incoming, deferred, corrupt, meta;
    int meta_missing; /* read-only, and made before the meta database */
    int flags;
    uint64_t map_size, map_size_limit;
    pthread_rwlock_t resize; /* read: a transaction; write: resize */
    /* group commit */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct spool_pending *head, **tail;
    int stop, committer_running;
    pthread_t committer;
    long commits;            /* transactions committed by the committer */
    atomic_long map_touched; /* records read or written since the last
                                spool_map_release() */
};

/* Records read or written between two releases of the map's pages. */
#define SPOOL_MAP_RELEASE_RECORDS 1000

void spool_map_touch(struct spool *sp, long n, int locked);

void spool_envelope_encode(struct util_buf *b, const struct spool_msg *m);
int spool_envelope_decode(const void *p, size_t len, struct spool_msg *m,
                          char *why, size_t whylen);
void spool_rcpt_encode(struct util_buf *b, const struct spool_rcpt *r);
int spool_rcpt_decode(const void *p, size_t len, struct spool_rcpt *r,
                      char *why, size_t whylen);
void spool_envelope_clear(struct spool_msg *m);

void spool_key_id(unsigned char key[SPOOL_KEY_ID], const char *id);
void spool_key_rcpt(unsigned char key[SPOOL_KEY_RCPT], const char *id,
                    uint32_t index);
void spool_key_time(unsigned char key[SPOOL_KEY_TIME], int64_t when,
                    const char *id);

int spool_txn_begin(struct spool *sp, int write, MDB_txn **txn, char *why,
                    size_t whylen);
void spool_txn_end(struct spool *sp, MDB_txn *txn);
int spool_txn_commit(struct spool *sp, MDB_txn *txn, char *why, size_t whylen);
int spool_grow(struct spool *sp, char *why, size_t whylen);
typedef int spool_write_fn(struct spool *sp, MDB_txn *txn, void *ctx, char *why,
                           size_t whylen);
int spool_txn_write(struct spool *sp, spool_write_fn *fn, void *ctx,
                    const char *what, char *why, size_t whylen);
int spool_put(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t klen,
              const void *data, size_t len, unsigned flags);
void spool_why_lmdb(char *why, size_t whylen, const char *what, int rc);

/* Stop the committer after what is queued (commit.c; spool_close()). */
void spool_committer_stop(struct spool *sp);
/* Write one new message in txn (commit.c); MDB errors come back as is,
 * -1 with why when a body file cannot be read. */
int spool_put_msg(struct spool *sp, MDB_txn *txn, struct spool_msg *m,
                  char *why, size_t whylen);
/* Close and unlink a message's body file, if it has one (spool.c). */
void spool_msg_body_file_drop(struct spool_msg *m);
/* Apply a change or a delete in txn (access.c): 0, an MDB error, or -1
 * with the reason (the message or a recipient does not exist). */
int spool_apply_change(struct spool *sp, MDB_txn *txn, const char *id,
                       const struct spool_change *ch, char *why, size_t whylen);
int spool_apply_delete(struct spool *sp, MDB_txn *txn, const char *id,
                       char *why, size_t whylen);
/* Check a meta key (meta.c): 0, or -1 with why and errno EINVAL. */
int spool_meta_key_check(const char *key, char *why, size_t whylen);
/* Put (or with remove, delete) a meta value in txn (meta.c): 0 or an
 * MDB error; deleting a key that is not there is 0. */
int spool_apply_meta(struct spool *sp, MDB_txn *txn, const char *key,
                     const void *val, size_t len, int remove);
/* Index keys of a message's state (access.c). */
int spool_index_del(struct spool *sp, MDB_txn *txn, const struct spool_msg *m);
int spool_index_put(struct spool *sp, MDB_txn *txn, const struct spool_msg *m);

#endif
