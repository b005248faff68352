/*
 * NAME
 *	staging 3 - the staging file of an SMTP session's large message
 * SYNOPSIS
 *	#include "ingress/ingress_private.h"
 *
 *	int	staging_dir_prepare(const char *dir, long *removed,
 *			char *why, size_t whylen)
 *	struct staging *staging_create(const char *dir, const char *id,
 *			char *why, size_t whylen)
 *	int	staging_append(struct staging *st, const void *p, size_t n,
 *			char *why, size_t whylen)
 *	uint64_t staging_size(const struct staging *st)
 *	int	staging_head(const struct staging *st, struct util_buf *b,
 *			size_t max, char *why, size_t whylen)
 *	int	staging_insert(struct staging *st, uint64_t at,
 *			const void *p, size_t n, char *why, size_t whylen)
 *	int	staging_read(const struct staging *st, uint64_t from,
 *			staging_read_fn *fn, void *ctx, char *why,
 *			size_t whylen)
 *	void	staging_hand_over(struct staging *st, struct spool_msg *m)
 *	void	staging_discard(struct staging *st)
 * DESCRIPTION
 *	A session receiving a message larger than smtpd_staging_threshold
 *	writes it, as it arrives, to a staging file instead of holding it
 *	in memory (content.c); at the end of the data the file goes to the
 *	spool's group commit, which copies it into the message's record and
 *	unlinks it once the message is durable (spool_msg_body_file()).
 *	So many clients sending large messages at once cost the daemon
 *	memory for the part of each below the threshold, not for their
 *	whole size. Staging files live in <queue_directory>/staging, beside
 *	the spool: the same file system, whose free space the server
 *	already checks at MAIL.
 *
 *	staging_dir_prepare() makes the directory dir if it is not there,
 *	gives it mode 0700 (message content is its owner's alone, as the
 *	spool's db directory is), and removes every file in it: at start no session is
 *	receiving, so what is there was left by a daemon that stopped
 *	mid-DATA (a crash, a kill), and no client got a 250 for it. It
 *	sets *removed to the count, for the log. It returns 0, or -1 with
 *	the reason.
 *
 *	staging_create() creates a new empty file in dir for the message
 *	with queue id id (mode 0600; named after the id, with a suffix if
 *	that is taken), or returns NULL with the reason.
 *	staging_append() writes n bytes at its end, whole (short writes and
 *	EINTR are retried: util_write_all()); it returns 0, or -1 with the
 *	reason (a full disk: "staging file PATH: write: No space left on
 *	device"), after which the file is good only for staging_discard().
 *	staging_size() is the bytes written so far.
 *
 *	staging_head() reads the first bytes of the file, at most max,
 *	into b (replacing what b had): where the header section is, for the
 *	checks made at the end of the data. staging_insert() puts n bytes
 *	at offset at, moving what follows (a header added by
 *	always_add_missing_headers), a piece at a time from the end so
 *	that the message is never held in memory. staging_read() gives
 *	the file from offset from to its end to fn(ctx, p, n), a piece of
 *	STAGING_MOVE_PIECE bytes at a time (the DKIM body hash, sign.c),
 *	and returns 0, or -1 with the reason when it could not be read.
 *
 *	staging_hand_over() gives the file to spool message m, as its body
 *	(spool_msg_body_file(): the spool closes and unlinks it), and
 *	frees st. staging_discard() closes and unlinks the file and frees
 *	st (a message refused, failed or abandoned); NULL is ignored.
 */

#include "ingress/ingress_private.h"
#include "spool/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STAGING_MOVE_PIECE 65536 /* bytes moved at a time by an insert */
#define STAGING_NAME_TRIES 100   /* suffixes tried when an id is taken */

struct staging {
    int fd;
    uint64_t size;
    char path[4096];
};

int staging_dir_prepare(const char *dir, long *removed, char *why,
                        size_t whylen)
{
    char path[4096];
    struct dirent *e;
    DIR *d;

    *removed = 0;
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
        return -1;
    }
    if (chmod(dir, 0700) < 0) { /* message content: its owner's alone */
        snprintf(why, whylen, "cannot chmod %s: %s", dir, strerror(errno));
        return -1;
    }
    if ((d = opendir(dir)) == NULL) {
        snprintf(why, whylen, "cannot open %s: %s", dir, strerror(errno));
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        ingress_path_join(path, sizeof(path), dir, e->d_name);
        if (unlink(path) == 0)
            (*removed)++;
    }
    closedir(d);
    return 0;
}

struct staging *staging_create(const char *dir, const char *id, char *why,
                               size_t whylen)
{
    struct staging *st = xcalloc(1, sizeof(*st));
    char name[64];

    for (int i = 0; i < STAGING_NAME_TRIES; i++) {
        if (i == 0)
            snprintf(name, sizeof(name), "%s", id);
        else
            snprintf(name, sizeof(name), "%s.%d", id, i);
        ingress_path_join(st->path, sizeof(st->path), dir, name);
        st->fd = open(st->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (st->fd >= 0)
            return st;
        if (errno != EEXIST)
            break;
    }
    snprintf(why, whylen, "staging file %s: create: %s", st->path,
             strerror(errno));
    free(st);
    return NULL;
}

int staging_append(struct staging *st, const void *p, size_t n, char *why,
                   size_t whylen)
{
    if (util_pwrite_all(st->fd, p, n, (off_t)st->size) < 0) {
        snprintf(why, whylen, "staging file %s: write: %s", st->path,
                 strerror(errno));
        return -1;
    }
    st->size += n;
    return 0;
}

uint64_t staging_size(const struct staging *st)
{
    return st->size;
}

int staging_head(const struct staging *st, struct util_buf *b, size_t max,
                 char *why, size_t whylen)
{
    char *piece = xmalloc(STAGING_MOVE_PIECE);
    uint64_t want = st->size < max ? st->size : max;
    ssize_t got = 0;

    util_buf_reset(b);
    util_buf_add(b, "", 0); /* data is a string, even when empty */
    while (b->len < want) {
        size_t len = want - b->len < STAGING_MOVE_PIECE
                         ? (size_t)(want - b->len)
                         : STAGING_MOVE_PIECE;

        if ((got = util_pread_all(st->fd, piece, len, (off_t)b->len)) <= 0)
            break;
        util_buf_add(b, piece, (size_t)got);
    }
    free(piece);
    if (b->len < want) {
        snprintf(why, whylen, "staging file %s: read: %s", st->path,
                 got < 0 ? strerror(errno) : "shorter than written");
        return -1;
    }
    return 0;
}

/* Move [at, size) up by n bytes, the last piece first. */
static int move_up(struct staging *st, uint64_t at, size_t n)
{
    char *piece = xmalloc(STAGING_MOVE_PIECE);
    uint64_t end = st->size;
    int rc = 0;

    while (rc == 0 && end > at) {
        size_t len = end - at < STAGING_MOVE_PIECE ? (size_t)(end - at)
                                                   : STAGING_MOVE_PIECE;

        end -= len;
        if (util_pread_all(st->fd, piece, len, (off_t)end) != (ssize_t)len ||
            util_pwrite_all(st->fd, piece, len, (off_t)(end + n)) < 0)
            rc = -1;
    }
    free(piece);
    return rc;
}

int staging_insert(struct staging *st, uint64_t at, const void *p, size_t n,
                   char *why, size_t whylen)
{
    if (at > st->size || move_up(st, at, n) < 0 ||
        util_pwrite_all(st->fd, p, n, (off_t)at) < 0) {
        snprintf(why, whylen, "staging file %s: insert: %s", st->path,
                 at > st->size ? "past the end" : strerror(errno));
        return -1;
    }
    st->size += n;
    return 0;
}

int staging_read(const struct staging *st, uint64_t from, staging_read_fn *fn,
                 void *ctx, char *why, size_t whylen)
{
    char *piece = xmalloc(STAGING_MOVE_PIECE);
    ssize_t got = 0;

    while (from < st->size) {
        size_t len = st->size - from < STAGING_MOVE_PIECE
                         ? (size_t)(st->size - from)
                         : STAGING_MOVE_PIECE;

        if ((got = util_pread_all(st->fd, piece, len, (off_t)from)) <= 0)
            break;
        fn(ctx, piece, (size_t)got);
        from += (uint64_t)got;
    }
    free(piece);
    if (from < st->size) {
        snprintf(why, whylen, "staging file %s: read: %s", st->path,
                 got < 0 ? strerror(errno) : "shorter than written");
        return -1;
    }
    return 0;
}

void staging_hand_over(struct staging *st, struct spool_msg *m)
{
    spool_msg_body_file(m, st->fd, st->path, st->size);
    free(st);
}

void staging_discard(struct staging *st)
{
    if (st == NULL)
        return;
    close(st->fd);
    unlink(st->path);
    free(st);
}
