/*
 * NAME
 *	drop 3 - leaving a message in the maildrop
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	maildrop_write(const char *dir, const struct spool_msg *m,
 *			char *name, size_t namelen, char *why, size_t whylen)
 * DESCRIPTION
 *	maildrop_write() writes message m (sender, envid, ret, arrival
 *	time, recipients with their original address, ORCPT and NOTIFY,
 *	and the body: m->size bytes at m->body, the whole message as it
 *	will be stored) into a new file in dir and puts its name in name
 *	(at least MAILDROP_NAME_LEN + 1 bytes). The name is 16 hex digits
 *	from getrandom(2). The file is created as ".NAME" with O_EXCL and
 *	mode 0444 (see below), written, fsynced, and renamed to NAME without
 *	replacing a file of that name (renameat2 RENAME_NOREPLACE, or a
 *	check before rename() on file systems without it; 64 random bits
 *	make a clash a formality either way). An importer ignores names
 *	that start with ".", so it never sees a partial file. The rename
 *	is made durable with an fsync of the directory when the writer may
 *	open it (its owner, root); other users may not read a 1733
 *	directory, so the file is fsynced again after the rename, which
 *	on ext4, XFS and btrfs commits the rename with the inode's change
 *	(POSIX promises nothing here; see doc/ if this matters to you).
 *	The file records geteuid() as the submitting uid. m->arrival of 0
 *	means now.
 *
 *	Why 0444 and not 0600: the file belongs to the submitting user,
 *	and the importer runs as the spool owner, not as root, so it could
 *	not read a 0600 file. Other users cannot list the directory, so
 *	they cannot learn the 64-bit random names of the files to read
 *	them (Postfix's postdrop makes its maildrop files 0444 for the same
 *	reason). The mode is set with fchmod(), past the writer's umask.
 *
 *	The record's format is maildrop.c's; pickup.c imports the file.
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NAME_TRIES 8 /* random names tried before giving up */

/*
 * Maildrop files are readable by all, as Postfix's are: the importer
 * (the spool owner) is not their owner, and the directory cannot be
 * listed, so only the writer and the importer know a file's name.
 */
#define MAILDROP_FILE_MODE 0444

/* renameat2() flag of <linux/fs.h>, not declared without _GNU_SOURCE. */
#define MAILDROP_RENAME_NOREPLACE 1u

static int random_name(char *name, char *why, size_t whylen)
{
    unsigned char bytes[MAILDROP_NAME_LEN / 2];
    size_t got = 0;
    ssize_t n;
    size_t i;

    while (got < sizeof(bytes)) {
        if ((n = getrandom(bytes + got, sizeof(bytes) - got, 0)) < 0) {
            if (errno == EINTR)
                continue;
            snprintf(why, whylen, "getrandom: %s", strerror(errno));
            return -1;
        }
        got += (size_t)n;
    }
    for (i = 0; i < sizeof(bytes); i++)
        sprintf(name + 2 * i, "%02x", bytes[i]);
    return 0;
}

/* rename() that never replaces an existing file. */
static int rename_noreplace(const char *from, const char *to)
{
    struct stat st;

#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, from, AT_FDCWD, to,
                MAILDROP_RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    if (lstat(to, &st) == 0) {
        errno = EEXIST;
        return -1;
    }
    if (errno != ENOENT)
        return -1;
    return rename(from, to);
}

/*
 * Make the rename durable: fsync the directory if we may open it, else
 * fsync the file again (see DESCRIPTION).
 */
static int sync_rename(const char *dir, int fd)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int status;
    int saved;

    if (dfd < 0)
        return errno == EACCES ? fsync(fd) : -1;
    status = fsync(dfd);
    saved = errno;
    close(dfd);
    errno = saved;
    return status;
}

/* Write the file, rename it into place; fd is open on dir/.NAME. */
static int write_file(const char *dir, int fd, const char *tmp,
                      const struct util_buf *env, const struct spool_msg *m,
                      char *name, size_t namelen, char *why, size_t whylen)
{
    char final[PATH_MAX];
    int tries;

    if (util_write_all(fd, env->data, env->len) < 0 ||
        util_write_all(fd, m->body, m->size) < 0 ||
        util_write_all(fd, MAILDROP_END_LINE, strlen(MAILDROP_END_LINE)) < 0 ||
        fsync(fd) < 0) {
        snprintf(why, whylen, "write %s: %s", tmp, strerror(errno));
        return -1;
    }
    /* The final name is the temporary one without the dot, if free. */
    snprintf(name, namelen, "%s", strrchr(tmp, '/') + 2);
    for (tries = 0;; tries++) {
        ingress_path_join(final, sizeof(final), dir, name);
        if (rename_noreplace(tmp, final) == 0)
            break;
        if (errno != EEXIST || tries == NAME_TRIES ||
            random_name(name, why, whylen) < 0) {
            snprintf(why, whylen, "rename %s to %s: %s", tmp, final,
                     strerror(errno));
            return -1;
        }
    }
    if (sync_rename(dir, fd) < 0) {
        snprintf(why, whylen, "fsync %s: %s", final, strerror(errno));
        unlink(final);
        return -1;
    }
    return 0;
}

int maildrop_write(const char *dir, const struct spool_msg *m, char *name,
                   size_t namelen, char *why, size_t whylen)
{
    struct util_buf env = UTIL_BUF_INIT;
    char base[MAILDROP_NAME_LEN + 2];
    char tmp[PATH_MAX];
    int status = -1;
    int tries;
    int fd = -1;

    if (namelen < MAILDROP_NAME_LEN + 1)
        ingress_panic("maildrop_write: name buffer of %zu bytes", namelen);
    if (maildrop_envelope_format(m, &env, why, whylen) < 0)
        goto done;
    base[0] = '.';
    for (tries = 0; fd < 0; tries++) {
        if (random_name(base + 1, why, whylen) < 0)
            goto done;
        ingress_path_join(tmp, sizeof(tmp), dir, base);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                  MAILDROP_FILE_MODE);
        if (fd < 0 && (errno != EEXIST || tries == NAME_TRIES)) {
            snprintf(why, whylen, "create %s: %s", tmp, strerror(errno));
            goto done;
        }
    }
    /* Past the umask: the importer is not the writer. */
    if (fchmod(fd, MAILDROP_FILE_MODE) < 0)
        snprintf(why, whylen, "chmod %s: %s", tmp, strerror(errno));
    else
        status = write_file(dir, fd, tmp, &env, m, name, namelen, why, whylen);
    if (close(fd) < 0 && status == 0) {
        snprintf(why, whylen, "close %s: %s", tmp, strerror(errno));
        status = -1;
    }
    if (status < 0)
        unlink(tmp); /* gone already if the rename was done */

done:
    util_buf_free(&env);
    return status;
}
