/*
 * NAME
 *	io 3 - whole reads and writes on a descriptor
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_write_all(int fd, const void *p, size_t n)
 *	ssize_t	util_read_all(int fd, void *p, size_t n)
 *	int	util_pwrite_all(int fd, const void *p, size_t n, off_t off)
 *	ssize_t	util_pread_all(int fd, void *p, size_t n, off_t off)
 * DESCRIPTION
 *	write(2) and read(2) may move fewer bytes than asked, and fail with
 *	EINTR when a signal arrives; these loops hide both, for blocking
 *	descriptors (a non-blocking one that is not ready fails with
 *	EAGAIN, for the caller's event loop to handle).
 *
 *	util_write_all() writes all n bytes of p: 0, or -1 with errno set
 *	(what was written before the error stays written).
 *
 *	util_read_all() reads until p holds n bytes or the end of the file:
 *	the count read (less than n only at the end of the file), or -1
 *	with errno set.
 *
 *	util_pwrite_all() and util_pread_all() are the same at offset off
 *	of a file, with pwrite(2) and pread(2): the file offset does not
 *	move, so that a reader and a writer of one file need not agree on
 *	where it is.
 */

#include "util/util.h"

#include <errno.h>
#include <unistd.h>

int util_write_all(int fd, const void *p, size_t n)
{
    const char *cp = p;
    ssize_t done;

    while (n > 0) {
        if ((done = write(fd, cp, n)) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        cp += done;
        n -= (size_t)done;
    }
    return 0;
}

/* Read until n bytes, the end of the file or an error: at off, or with
 * off -1 from the descriptor's position. */
static ssize_t read_loop(int fd, void *p, size_t n, off_t off)
{
    char *cp = p;
    size_t got = 0;
    ssize_t done;

    while (got < n) {
        done = off < 0 ? read(fd, cp + got, n - got)
                       : pread(fd, cp + got, n - got, off + (off_t)got);
        if (done < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (done == 0)
            break;
        got += (size_t)done;
    }
    return (ssize_t)got;
}

ssize_t util_read_all(int fd, void *p, size_t n)
{
    return read_loop(fd, p, n, -1);
}

int util_pwrite_all(int fd, const void *p, size_t n, off_t off)
{
    const char *cp = p;
    ssize_t done;

    while (n > 0) {
        if ((done = pwrite(fd, cp, n, off)) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        cp += done;
        n -= (size_t)done;
        off += done;
    }
    return 0;
}

ssize_t util_pread_all(int fd, void *p, size_t n, off_t off)
{
    if (off < 0) {
        errno = EINVAL;
        return -1;
    }
    return read_loop(fd, p, n, off);
}
