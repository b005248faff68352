/*
 * NAME
 *	pickup 3 - the maildrop directory: messages from users who may
 *	not write the spool, and their import
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	maildrop_create(const char *queue_directory, char *why,
 *			size_t whylen)
 *	int	maildrop_read(int dirfd, const char *name,
 *			struct spool_msg **m, uid_t *owner, char *why,
 *			size_t whylen)
 *	int	maildrop_import(const char *queue_directory,
 *			maildrop_store_fn *store, void *ctx,
 *			struct maildrop_stats *st, char *why, size_t whylen)
 * DESCRIPTION
 *	<queue_directory>/maildrop has mode 1733: anyone may create a file
 *	in it, nobody but its owner (the spool owner) may list it or read
 *	the files, and the sticky bit keeps users from removing each
 *	other's files. "sluice sendmail" run by a user who may not write
 *	the spool database writes the message there; the daemon imports
 *	it into the spool.
 *
 *	drop.c writes the files, maildrop.c is their format.
 *
 *	maildrop_create() makes maildrop (mode 1733) and maildrop-bad
 *	(mode 0700) under queue_directory when they are missing; existing
 *	directories are left as they are (an administrator may prefer a
 *	group-writable 1730 maildrop), but must be directories.
 *
 *	maildrop_read() reads file name in the directory open as dirfd and
 *	returns a new message (spool_msg_new(), free it with
 *	spool_msg_free()): sender, envid, ret, arrival, recipients, and
 *	the body in m->body (m->size bytes, NUL-terminated beyond them),
 *	and in *owner the uid that owns the file. The file must be a
 *	regular file with one link (not a symbolic link, not a hard link
 *	to someone else's file) of at most MAILDROP_SIZE_MAX bytes (its
 *	owner could make it grow while we read it), and the uid it records
 *	must be its owner; a file that the importer may not read (its
 *	owner changed its mode) counts as malformed too.
 *	On error it returns -1 with errno set: EBADMSG when the file is
 *	malformed, with the reason (without the file name) in why; ENOENT
 *	when it vanished; EINVAL for a name that starts with "." or holds
 *	"/"; another errno when it cannot be read.
 *
 *	maildrop_import() imports every complete file of
 *	<queue_directory>/maildrop, oldest first: it reads it, hands it to
 *	store(ctx, m, owner, why, whylen), and removes the file only after
 *	store returned 0 (the message is durable in the spool). A
 *	malformed file is moved to maildrop-bad/NAME (NAME.1, NAME.2...
 *	when the name is taken) with its reason in NAME.reason beside it;
 *	it is never removed and never stops the import. A store failure
 *	is temporary: the import stops there, the file stays. A file that
 *	cannot be read or moved aside stays too, and the import goes on.
 *	Temporary files (".NAME") are left alone; those older than
 *	MAILDROP_STALE_AGE are counted in st->stale (their writer may have
 *	died: an administrator should look). It returns 0 when every file
 *	was imported or moved aside, else -1 with the first problem in why
 *	("NAME: REASON"); st counts what happened either way.
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BAD_SUFFIXES 100 /* NAME.1 ... in maildrop-bad before giving up */

/* ------------------------------------------------------------- create */

static int mkdir_mode(const char *path, mode_t mode, char *why, size_t whylen)
{
    struct stat st;

    if (mkdir(path, mode) == 0) {
        if (chmod(path, mode) == 0) /* past the umask */
            return 0;
    } else if (errno == EEXIST && stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        errno = ENOTDIR;
    }
    snprintf(why, whylen, "%s: %s", path, strerror(errno));
    return -1;
}

int maildrop_create(const char *queue_directory, char *why, size_t whylen)
{
    char path[PATH_MAX];

    ingress_path_join(path, sizeof(path), queue_directory, MAILDROP_DIR);
    if (mkdir_mode(path, 01733, why, whylen) < 0)
        return -1;
    ingress_path_join(path, sizeof(path), queue_directory, MAILDROP_BAD_DIR);
    return mkdir_mode(path, 0700, why, whylen);
}

/* --------------------------------------------------------------- read */

/*
 * Read the whole open file into memory, NUL-terminated. Its owner may
 * still be writing to it: reading stops past MAILDROP_SIZE_MAX, and
 * memory that cannot be had is an error (ENOMEM), not an abort.
 */
static int slurp(int fd, const struct stat *st, char **buf, size_t *len,
                 char *why, size_t whylen)
{
    size_t size = (size_t)st->st_size + 1;
    ssize_t n;
    char *p;

    *buf = NULL;
    *len = 0;
    for (;;) {
        if (*len > MAILDROP_SIZE_MAX) {
            snprintf(why, whylen, "too big: more than %lu bytes",
                     (unsigned long)MAILDROP_SIZE_MAX);
            errno = EBADMSG;
            return -1;
        }
        if (*buf == NULL || *len + 1 >= size) {
            if (*buf != NULL)
                size *= 2;
            if ((p = realloc(*buf, size)) == NULL) {
                snprintf(why, whylen, "read: %s", strerror(ENOMEM));
                errno = ENOMEM;
                return -1;
            }
            *buf = p;
        }
        n = read(fd, *buf + *len, size - *len - 1);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, whylen, "read: %s", strerror(errno));
            return -1;
        }
        *len += (size_t)n;
    }
    (*buf)[*len] = 0;
    return 0;
}

/* Open name in dirfd as a regular file with one link; fd or -1. */
static int open_file(int dirfd, const char *name, struct stat *st, char *why,
                     size_t whylen)
{
    int fd;
    int saved;

    fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ELOOP) {
            snprintf(why, whylen, "a symbolic link");
            errno = EBADMSG;
        } else if (errno == EACCES) {
            /* Its owner made it unreadable: user input like the rest. */
            snprintf(why, whylen, "not readable: %s", strerror(errno));
            errno = EBADMSG;
        } else {
            snprintf(why, whylen, "open: %s", strerror(errno));
        }
        return -1;
    }
    if (fstat(fd, st) < 0) {
        saved = errno;
        snprintf(why, whylen, "fstat: %s", strerror(errno));
        close(fd);
        errno = saved;
        return -1;
    }
    if (!S_ISREG(st->st_mode) || st->st_nlink != 1 ||
        (uintmax_t)st->st_size > MAILDROP_SIZE_MAX) {
        if (!S_ISREG(st->st_mode))
            snprintf(why, whylen, "not a regular file");
        else if (st->st_nlink != 1)
            snprintf(why, whylen, "%lu hard links: expected one",
                     (unsigned long)st->st_nlink);
        else
            snprintf(why, whylen, "too big: more than %lu bytes",
                     (unsigned long)MAILDROP_SIZE_MAX);
        close(fd);
        errno = EBADMSG;
        return -1;
    }
    return fd;
}

int maildrop_read(int dirfd, const char *name, struct spool_msg **m,
                  uid_t *owner, char *why, size_t whylen)
{
    struct stat st;
    char *buf;
    size_t len;
    int saved;
    int fd;

    *m = NULL;
    if (name[0] == '.' || strchr(name, '/') != NULL) {
        snprintf(why, whylen, "not a maildrop file name");
        errno = EINVAL;
        return -1;
    }
    if ((fd = open_file(dirfd, name, &st, why, whylen)) < 0)
        return -1;
    if (slurp(fd, &st, &buf, &len, why, whylen) < 0) {
        saved = errno;
        close(fd);
        free(buf);
        errno = saved;
        return -1;
    }
    close(fd);
    if (maildrop_parse(buf, len, st.st_uid, m, why, whylen) < 0)
        return -1;
    *owner = st.st_uid;
    return 0;
}

/* ------------------------------------------------------------- import */

struct entry {
    char *name;
    struct timespec mtime;
};

static int entry_cmp(const void *a, const void *b)
{
    const struct entry *x = a;
    const struct entry *y = b;

    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/*
 * The names of the complete files, oldest first; counts the stale
 * temporary files.
 */
static int list_files(int dirfd, struct entry **list, size_t *count,
                      struct maildrop_stats *st, char *why, size_t whylen)
{
    struct dirent *d;
    struct stat sb;
    size_t size = 0;
    time_t now = time(NULL);
    DIR *dp;
    int fd;

    *list = NULL;
    *count = 0;
    if ((fd = dup(dirfd)) < 0 || (dp = fdopendir(fd)) == NULL) {
        snprintf(why, whylen, "%s: %s", MAILDROP_DIR, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    rewinddir(dp);
    while ((errno = 0, d = readdir(dp)) != NULL) {
        if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
            continue;
        if (fstatat(dirfd, d->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue; /* vanished */
        if (d->d_name[0] == '.') {
            if (sb.st_mtime < now - MAILDROP_STALE_AGE)
                st->stale++;
            continue;
        }
        if (*count == size) {
            size = size ? 2 * size : 64;
            *list = xrealloc(*list, size * sizeof(**list));
        }
        (*list)[*count].name = xstrdup(d->d_name);
        (*list)[(*count)++].mtime = sb.st_mtim;
    }
    if (errno != 0) {
        snprintf(why, whylen, "%s: %s", MAILDROP_DIR, strerror(errno));
        closedir(dp);
        return -1;
    }
    closedir(dp);
    if (*count > 0)
        qsort(*list, *count, sizeof(**list), entry_cmp);
    return 0;
}

static void entries_free(struct entry *list, size_t count)
{
    size_t i;

    for (i = 0; i < count; i++)
        free(list[i].name);
    free(list);
}

/* A name free in maildrop-bad for the file and its ".reason". */
static int bad_name(int baddirfd, const char *name, char *out, size_t outlen)
{
    char reason[NAME_MAX + 32];
    struct stat sb;
    int i;

    for (i = 0; i < BAD_SUFFIXES; i++) {
        if (i == 0)
            snprintf(out, outlen, "%s", name);
        else
            snprintf(out, outlen, "%s.%d", name, i);
        snprintf(reason, sizeof(reason), "%s.reason", out);
        if (fstatat(baddirfd, out, &sb, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT &&
            fstatat(baddirfd, reason, &sb, AT_SYMLINK_NOFOLLOW) < 0 &&
            errno == ENOENT)
            return 0;
    }
    errno = EEXIST;
    return -1;
}

/* Write NAME.reason, then move the file beside it. */
static int move_aside(const char *queue_directory, int dirfd, const char *name,
                      const char *reason, char *why, size_t whylen)
{
    char path[PATH_MAX];
    char target[NAME_MAX + 16];
    char rname[NAME_MAX + 32];
    int bfd;
    int fd = -1;
    int status = -1;

    ingress_path_join(path, sizeof(path), queue_directory, MAILDROP_BAD_DIR);
    if ((mkdir(path, 0700) < 0 && errno != EEXIST) ||
        (bfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot open %s: %s", reason,
                 MAILDROP_BAD_DIR, strerror(errno));
        return -1;
    }
    if (bad_name(bfd, name, target, sizeof(target)) < 0) {
        snprintf(why, whylen, "malformed (%s), and no free name for it in %s",
                 reason, MAILDROP_BAD_DIR);
        goto done;
    }
    snprintf(rname, sizeof(rname), "%s.reason", target);
    fd = openat(bfd, rname,
                O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 || util_write_all(fd, reason, strlen(reason)) < 0 ||
        util_write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot write %s/%s: %s",
                 reason, MAILDROP_BAD_DIR, rname, strerror(errno));
        goto done;
    }
    if (renameat(dirfd, name, bfd, target) < 0) {
        snprintf(why, whylen, "malformed (%s), and cannot move it to %s/%s: %s",
                 reason, MAILDROP_BAD_DIR, target, strerror(errno));
        unlinkat(bfd, rname, 0);
        goto done;
    }
    fsync(bfd);
    status = 0;

done:
    if (fd >= 0)
        close(fd);
    close(bfd);
    return status;
}

/* Remember the first problem, as "NAME: REASON". */
static void note(char *why, size_t whylen, int *status, const char *name,
                 const char *reason)
{
    if (*status == 0)
        snprintf(why, whylen, "%s: %s", name, reason);
    *status = -1;
}

/* Import one file; returns 1 to go on, 0 to stop. */
static int import_one(const char *queue_directory, int dirfd, const char *name,
                      maildrop_store_fn *store, void *ctx,
                      struct maildrop_stats *st, int *status, char *why,
                      size_t whylen)
{
    char reason[1024];
    char problem[2048];
    struct spool_msg *m;
    uid_t owner;
    int stored;

    if (maildrop_read(dirfd, name, &m, &owner, reason, sizeof(reason)) < 0) {
        if (errno == ENOENT)
            return 1;
        if (errno != EBADMSG) {
            st->failed++;
            note(why, whylen, status, name, reason);
        } else if (move_aside(queue_directory, dirfd, name, reason, problem,
                              sizeof(problem)) == 0) {
            st->malformed++;
        } else {
            st->failed++;
            note(why, whylen, status, name, problem);
        }
        return 1;
    }
    stored = store(ctx, m, owner, reason, sizeof(reason));
    spool_msg_free(m);
    if (stored < 0) {
        st->failed++;
        note(why, whylen, status, name, reason);
        return 0;
    }
    st->imported++;
    if (unlinkat(dirfd, name, 0) < 0) {
        snprintf(problem, sizeof(problem),
                 "stored, but cannot be removed (%s): it will be imported "
                 "again",
                 strerror(errno));
        note(why, whylen, status, name, problem);
        return 0;
    }
    return 1;
}

int maildrop_import(const char *queue_directory, maildrop_store_fn *store,
                    void *ctx, struct maildrop_stats *st, char *why,
                    size_t whylen)
{
    char path[PATH_MAX];
    struct entry *list;
    size_t count;
    size_t i;
    int status = 0;
    int dirfd;

    memset(st, 0, sizeof(*st));
    ingress_path_join(path, sizeof(path), queue_directory, MAILDROP_DIR);
    if ((dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        snprintf(why, whylen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (list_files(dirfd, &list, &count, st, why, whylen) < 0) {
        close(dirfd);
        return -1;
    }
    for (i = 0; i < count; i++)
        if (!import_one(queue_directory, dirfd, list[i].name, store, ctx, st,
                        &status, why, whylen))
            break;
    entries_free(list, count);
    close(dirfd);
    return status;
}
