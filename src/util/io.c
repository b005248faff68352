/*
 * NAME
 *	io 3 - whole reads and writes on a descriptor
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_write_all(int fd, const void *p, size_t n)
 *	ssize_t	util_read_all(int fd, void *p, size_t n)
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

ssize_t util_read_all(int fd, void *p, size_t n)
{
    char *cp = p;
    size_t got = 0;
    ssize_t done;

    while (got < n) {
        if ((done = read(fd, cp + got, n - got)) < 0) {
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
