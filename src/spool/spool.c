/*
 * NAME
 *	spool 3 - opening the store, transactions, the growing map, its
 *	free pages
 * SYNOPSIS
 *	#include "spool/spool.h"
 *
 *	int	spool_open(struct spool **sp, const struct spool_config *cf,
 *			int flags, char *why, size_t whylen)
 *	void	spool_close(struct spool *sp)
 *	struct spool_msg *spool_msg_new(void)
 *	void	spool_msg_free(struct spool_msg *m)
 *	int	spool_msg_add_rcpt(struct spool_msg *m, const char *address,
 *			const char *orig, unsigned notify, const char *orcpt)
 *	void	spool_msg_body_file(struct spool_msg *m, int fd,
 *			const char *path, uint64_t size)
 *	const char *spool_state_name(enum spool_state s)
 *	const char *spool_rcpt_status_name(enum spool_rcpt_status s)
 *	int64_t spool_free_bytes(struct spool *sp)
 *	void	spool_map_release(struct spool *sp)
 * DESCRIPTION
 *	The environment lives in <queue_directory>/db (data.mdb, lock.mdb),
 *	a directory of mode 0700: only its owner may read or write the
 *	spool. Opening for writing checks that the caller can write there
 *	first, so that a user who cannot gets EACCES at once and sendmail
 *	can use the maildrop instead.
 *
 *	The map starts at the configured size, or at the size the file
 *	already has if that is larger, and doubles when a write transaction
 *	does not fit (spool_grow()), up to the limit if there is one. LMDB
 *	writes with pwrite(2) and syncs at every commit: when the disk is
 *	full the commit fails with ENOSPC, the transaction is abandoned as a
 *	whole, and what was there before is untouched.
 *
 *	The file never shrinks: pages that deleted messages held go to
 *	LMDB's freelist and are written again before the file grows.
 *	spool_free_bytes() counts them (freelist pages times the page
 *	size), so that a spool that once filled the disk and was then
 *	emptied is not taken for a full one; -1 if it cannot be read. The
 *	map beyond the last page used is not counted: it is not on disk,
 *	and the file system's own free space already stands for it.
 *
 *	Every page of the map this process has read stays mapped, and so
 *	counts in its resident size, until it lets it go: a daemon that
 *	drained a queue of 100,000 messages would seem to hold its whole
 *	spool. Those pages are the kernel's page cache, not the process's
 *	own memory. spool_map_release() unmaps them from the process
 *	(madvise(MADV_DONTNEED) over the map, found in /proc/self/maps by
 *	the file's inode): they stay cached, and the next read maps
 *	them again with a minor fault. That is safe because LMDB maps the
 *	file shared and read-only here (no MDB_WRITEMAP: writes go through
 *	pwrite(2)), so dropping a mapping loses nothing; it runs under the
 *	resize lock, so the map cannot move meanwhile. Every
 *	SPOOL_MAP_RELEASE_RECORDS records read or written
 *	(spool_map_touch(): reads, walks, the committer's batches) it runs
 *	again, so the pages a process holds stay a few megabytes whatever
 *	the spool's size. It must run that often because the kernel maps
 *	the neighbours of a page read from its cache too (fault-around,
 *	64 KB by default): loading 20,000 messages for the active queue
 *	maps some 250 MB of a 100,000-message spool that way.
 */

#include "spool/spool_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void spool_why_lmdb(char *why, size_t whylen, const char *what, int rc)
{
    switch (rc) {
    case MDB_MAP_FULL:
        snprintf(why, whylen, "%s: spool full (the map reached its size limit)",
                 what);
        break;
    case ENOSPC:
        snprintf(why, whylen, "%s: disk full", what);
        break;
    case EFBIG:
        snprintf(why, whylen, "%s: file size limit reached (disk full?)", what);
        break;
    case EIO:
        /* LMDB reports a short write, as on a full disk, as EIO. */
        snprintf(why, whylen,
                 "%s: I/O error writing the spool (is the disk "
                 "full?)",
                 what);
        break;
    default:
        snprintf(why, whylen, "%s: %s", what, mdb_strerror(rc));
        break;
    }
}

static int open_dbs(struct spool *sp, int create, char *why, size_t whylen)
{
    static const struct {
        const char *name;
        size_t offset;
        unsigned flags;
    } dbs[] = {
        {"msg", offsetof(struct spool, msg), 0},
        {"rcpt", offsetof(struct spool, rcpt), 0},
        {"body", offsetof(struct spool, body), 0},
        {"incoming", offsetof(struct spool, incoming), 0},
        {"deferred", offsetof(struct spool, deferred), 0},
        {"corrupt", offsetof(struct spool, corrupt), 0},
        /* Added later: an older spool opened read-only lacks it. */
        {"meta", offsetof(struct spool, meta), 0},
    };
    MDB_txn *txn;
    int rc;

    if ((rc = mdb_txn_begin(sp->env, NULL, create ? 0 : MDB_RDONLY, &txn))) {
        spool_why_lmdb(why, whylen, "spool: open", rc);
        return -1;
    }
    for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
        MDB_dbi *dbi = (MDB_dbi *)((char *)sp + dbs[i].offset);

        if ((rc =
                 mdb_dbi_open(txn, dbs[i].name,
                              dbs[i].flags | (create ? MDB_CREATE : 0), dbi))) {
            if (rc == MDB_NOTFOUND && dbi == &sp->meta) {
                sp->meta_missing = 1;
                continue;
            }
            mdb_txn_abort(txn);
            if (rc == MDB_NOTFOUND)
                snprintf(why, whylen,
                         "spool: database \"%s\" missing: not a sluice spool",
                         dbs[i].name);
            else
                spool_why_lmdb(why, whylen, "spool: open", rc);
            return -1;
        }
    }
    if ((rc = mdb_txn_commit(txn))) {
        spool_why_lmdb(why, whylen, "spool: open", rc);
        return -1;
    }
    return 0;
}

static int spool_dir(const struct spool_config *cf, int flags, char *path,
                     size_t len, char *why, size_t whylen)
{
    struct stat st;

    if (cf->queue_directory == NULL || *cf->queue_directory == 0) {
        snprintf(why, whylen, "spool: queue_directory is empty");
        errno = EINVAL;
        return -1;
    }
    snprintf(path, len, "%s/db", cf->queue_directory);
    if ((flags & SPOOL_CREATE) && mkdir(cf->queue_directory, 0755) < 0 &&
        errno != EEXIST) {
        snprintf(why, whylen, "spool: cannot create %s: %s",
                 cf->queue_directory, strerror(errno));
        return -1;
    }
    if ((flags & SPOOL_CREATE) && mkdir(path, 0700) < 0 && errno != EEXIST) {
        snprintf(why, whylen, "spool: cannot create %s: %s", path,
                 strerror(errno));
        return -1;
    }
    if (stat(path, &st) < 0) {
        int err = errno;

        snprintf(why, whylen, "spool: %s: %s", path, strerror(err));
        errno = err;
        return -1;
    }
    if (access(path, (flags & SPOOL_READONLY) ? R_OK | X_OK
                                              : R_OK | W_OK | X_OK) < 0) {
        int err = errno;

        snprintf(why, whylen, "spool: %s: %s", path, strerror(err));
        errno = err;
        return -1;
    }
    return 0;
}

int spool_open(struct spool **spp, const struct spool_config *cf, int flags,
               char *why, size_t whylen)
{
    struct spool *sp;
    char path[4096];
    MDB_envinfo info;
    int rc;

    *spp = NULL;
    if (spool_dir(cf, flags, path, sizeof(path), why, whylen) < 0)
        return -1;
    sp = xcalloc(1, sizeof(*sp));
    sp->flags = flags;
    sp->map_size = cf->map_size ? cf->map_size : 256ULL << 20;
    sp->map_size_limit = cf->map_size_limit;
    pthread_rwlock_init(&sp->resize, NULL);
    atomic_init(&sp->map_touched, 0);
    pthread_mutex_init(&sp->lock, NULL);
    pthread_cond_init(&sp->wake, NULL);
    sp->tail = &sp->head;
    if ((rc = mdb_env_create(&sp->env)) ||
        (rc = mdb_env_set_maxdbs(sp->env, 8)) ||
        (rc = mdb_env_set_maxreaders(sp->env, 512)) ||
        (rc = mdb_env_set_mapsize(sp->env, sp->map_size)) ||
        (rc = mdb_env_open(
             sp->env, path,
             MDB_NOTLS | ((flags & SPOOL_READONLY) ? MDB_RDONLY : 0), 0600))) {
        spool_why_lmdb(why, whylen, "spool: open", rc);
        errno = rc == EACCES ? EACCES : EIO;
        spool_close(sp);
        return -1;
    }
    /* The map is the configured size, or what is in use if that is more
     * (LMDB never maps less than the data). */
    mdb_env_info(sp->env, &info);
    if (info.me_mapsize > sp->map_size)
        sp->map_size = info.me_mapsize;
    /* Readers killed inside a read transaction keep their slot, and with
     * it every page freed since: let their slots go. */
    if (!(flags & SPOOL_READONLY))
        mdb_reader_check(sp->env, NULL);
    if (open_dbs(sp, !(flags & SPOOL_READONLY), why, whylen) < 0) {
        errno = EIO;
        spool_close(sp);
        return -1;
    }
    *spp = sp;
    return 0;
}

void spool_close(struct spool *sp)
{
    if (sp == NULL)
        return;
    spool_committer_stop(sp);
    if (sp->env)
        mdb_env_close(sp->env);
    pthread_rwlock_destroy(&sp->resize);
    pthread_mutex_destroy(&sp->lock);
    pthread_cond_destroy(&sp->wake);
    free(sp);
}

int spool_txn_begin(struct spool *sp, int write, MDB_txn **txn, char *why,
                    size_t whylen)
{
    int rc;

    if (write && (sp->flags & SPOOL_READONLY)) {
        snprintf(why, whylen, "spool: opened read-only");
        return -1;
    }
    for (int tries = 0;; tries++) {
        pthread_rwlock_rdlock(&sp->resize);
        rc = mdb_txn_begin(sp->env, NULL, write ? 0 : MDB_RDONLY, txn);
        if (rc != MDB_MAP_RESIZED || tries > 2)
            break;
        /* Another process grew the map: adopt its size. */
        pthread_rwlock_unlock(&sp->resize);
        pthread_rwlock_wrlock(&sp->resize);
        mdb_env_set_mapsize(sp->env, 0);
        pthread_rwlock_unlock(&sp->resize);
    }
    if (rc) {
        pthread_rwlock_unlock(&sp->resize);
        spool_why_lmdb(why, whylen, "spool", rc);
        return -1;
    }
    return 0;
}

void spool_txn_end(struct spool *sp, MDB_txn *txn)
{
    mdb_txn_abort(txn);
    pthread_rwlock_unlock(&sp->resize);
}

int spool_txn_commit(struct spool *sp, MDB_txn *txn, char *why, size_t whylen)
{
    int rc = mdb_txn_commit(txn);

    pthread_rwlock_unlock(&sp->resize);
    if (rc) {
        spool_why_lmdb(why, whylen, "spool: commit", rc);
        errno = rc;
        return -1;
    }
    return 0;
}

int spool_put(MDB_txn *txn, MDB_dbi dbi, const void *key, size_t klen,
              const void *data, size_t len, unsigned flags)
{
    MDB_val k = {klen, (void *)key};
    MDB_val v = {len, (void *)data};

    return mdb_put(txn, dbi, &k, &v, flags);
}

int spool_txn_write(struct spool *sp, spool_write_fn *fn, void *ctx,
                    const char *what, char *why, size_t whylen)
{
    MDB_txn *txn;
    int rc;

    for (;;) {
        if (spool_txn_begin(sp, 1, &txn, why, whylen) < 0)
            return -1;
        if ((rc = fn(sp, txn, ctx, why, whylen)) == 0) {
            /* The commit itself may need pages the map does not have. */
            if (spool_txn_commit(sp, txn, why, whylen) == 0)
                return 0;
            if (errno != MDB_MAP_FULL || spool_grow(sp, why, whylen) < 0)
                return -1;
            continue;
        }
        spool_txn_end(sp, txn);
        if (rc == -1)
            return -1;
        if (rc != MDB_MAP_FULL) {
            spool_why_lmdb(why, whylen, what, rc);
            return -1;
        }
        if (spool_grow(sp, why, whylen) < 0)
            return -1;
    }
}

/*
 * Before growing, free the slots of dead readers: their old snapshots
 * may be what keeps freed pages from being reused. The size is read and
 * changed under the resize lock, so two threads that both ran out grow
 * the map once each, never past the limit.
 */
int spool_grow(struct spool *sp, char *why, size_t whylen)
{
    uint64_t size;
    int rc = 0, full = 0;

    mdb_reader_check(sp->env, NULL);
    pthread_rwlock_wrlock(&sp->resize);
    size = sp->map_size * 2;
    if (sp->map_size_limit && sp->map_size >= sp->map_size_limit) {
        full = 1;
    } else {
        if (sp->map_size_limit && size > sp->map_size_limit)
            size = sp->map_size_limit;
        if ((rc = mdb_env_set_mapsize(sp->env, size)) == 0)
            sp->map_size = size;
    }
    pthread_rwlock_unlock(&sp->resize);
    if (full) {
        snprintf(why, whylen,
                 "spool full: the map reached queue_map_size_limit (%llu "
                 "bytes)",
                 (unsigned long long)sp->map_size_limit);
        return -1;
    }
    if (rc) {
        spool_why_lmdb(why, whylen, "spool: growing the map", rc);
        return -1;
    }
    return 0;
}

struct spool_msg *spool_msg_new(void)
{
    return xcalloc(1, sizeof(struct spool_msg));
}

void spool_msg_body_file(struct spool_msg *m, int fd, const char *path,
                         uint64_t size)
{
    spool_msg_body_file_drop(m);
    free(m->body);
    m->body = NULL;
    m->body_fd = fd;
    m->body_path = xstrdup(path);
    m->size = size;
}

/*
 * The body file was the submitter's until it handed it over: once the
 * message is stored, failed or freed, nobody needs it, and a file left
 * behind would only be swept at the next start.
 */
void spool_msg_body_file_drop(struct spool_msg *m)
{
    if (m->body_path == NULL)
        return;
    close(m->body_fd);
    unlink(m->body_path);
    free(m->body_path);
    m->body_path = NULL;
    m->body_fd = -1;
}

void spool_msg_free(struct spool_msg *m)
{
    if (m == NULL)
        return;
    spool_msg_body_file_drop(m);
    spool_envelope_clear(m);
    for (uint32_t i = 0; i < m->nrcpt && m->rcpt; i++)
        spool_rcpt_clear(&m->rcpt[i]);
    free(m->rcpt);
    free(m->body);
    free(m);
}

void spool_rcpts_free(struct spool_rcpt *r, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        spool_rcpt_clear(&r[i]);
    free(r);
}

int spool_msg_add_rcpt(struct spool_msg *m, const char *address,
                       const char *orig, unsigned notify, const char *orcpt)
{
    struct spool_rcpt *r;

    if (address == NULL || notify > 15)
        return -1;
    if (m->nrcpt == m->rcpt_cap) {
        m->rcpt_cap = m->rcpt_cap ? m->rcpt_cap * 2 : 4;
        m->rcpt = xrealloc(m->rcpt, m->rcpt_cap * sizeof(*m->rcpt));
    }
    r = &m->rcpt[m->nrcpt++];
    memset(r, 0, sizeof(*r));
    r->address = xstrdup(address);
    r->orig = orig ? xstrdup(orig) : NULL;
    r->orcpt = orcpt ? xstrdup(orcpt) : NULL;
    r->notify = notify;
    return 0;
}

const char *spool_state_name(enum spool_state s)
{
    static const char *const names[] = {"incoming", "active", "deferred",
                                        "hold", "corrupt"};

    return (unsigned)s <= SPOOL_CORRUPT ? names[s] : "unknown";
}

const char *spool_rcpt_status_name(enum spool_rcpt_status s)
{
    static const char *const names[] = {"pending", "delivered", "bounced",
                                        "deferred"};

    return (unsigned)s <= SPOOL_RCPT_DEFERRED ? names[s] : "unknown";
}

/*
 * LMDB's freelist (database 0) holds, per transaction that freed pages,
 * the list of those page numbers, its length first: the pages a later
 * write reuses before the file grows.
 */
int64_t spool_free_bytes(struct spool *sp)
{
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    MDB_stat st;
    char why[256];
    uint64_t pages = 0;
    int rc;

    if (spool_txn_begin(sp, 0, &txn, why, sizeof(why)) < 0)
        return -1;
    rc = mdb_stat(txn, 0, &st);
    if (rc == 0)
        rc = mdb_cursor_open(txn, 0, &cur);
    if (rc == 0) {
        while ((rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) == 0) {
            size_t n = 0;

            if (v.mv_size >= sizeof(n))
                memcpy(&n, v.mv_data, sizeof(n)); /* may be unaligned */
            pages += n;
        }
        mdb_cursor_close(cur);
    }
    spool_txn_end(sp, txn);
    if (rc != MDB_NOTFOUND)
        return -1;
    return (int64_t)(pages * st.ms_psize);
}

/*
 * Where this process maps the data file: LMDB tells its address only for
 * a fixed map, so find it in /proc/self/maps by the file's device and
 * inode. 0 with the range, -1 if it is not found.
 */
static int map_find(struct spool *sp, uintptr_t *lo, uintptr_t *hi)
{
    struct stat st;
    mdb_filehandle_t fd;
    char line[512];
    FILE *fp;
    int found = -1;

    if (mdb_env_get_fd(sp->env, &fd) != 0 || fstat(fd, &st) != 0 ||
        (fp = fopen("/proc/self/maps", "re")) == NULL)
        return -1;
    while (found < 0 && fgets(line, sizeof(line), fp) != NULL) {
        unsigned long a, b, maj, min, ino;

        if (sscanf(line, "%lx-%lx %*s %*s %lx:%lx %lu", &a, &b, &maj, &min,
                   &ino) == 5 &&
            ino == (unsigned long)st.st_ino && makedev(maj, min) == st.st_dev) {
            *lo = a;
            *hi = b;
            found = 0;
        }
    }
    fclose(fp);
    return found;
}

/* Let the map's pages go; the caller holds the resize lock. */
static void map_drop(struct spool *sp)
{
    uintptr_t lo, hi;

    if (map_find(sp, &lo, &hi) == 0)
        (void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

void spool_map_release(struct spool *sp)
{
    pthread_rwlock_rdlock(&sp->resize);
    map_drop(sp);
    pthread_rwlock_unlock(&sp->resize);
}

void spool_map_touch(struct spool *sp, long n, int locked)
{
    if (atomic_fetch_add(&sp->map_touched, n) + n < SPOOL_MAP_RELEASE_RECORDS)
        return;
    atomic_store(&sp->map_touched, 0);
    if (locked)
        map_drop(sp);
    else
        spool_map_release(sp);
}
