/*
 * NAME
 *	pid 3 - one daemon per queue, and finding it
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	int	daemon_pid_lock(const char *queue_directory, char *why,
 *			size_t whylen)
 *	long	daemon_pid_running(const char *queue_directory)
 * DESCRIPTION
 *	See daemon.h. The lock is a POSIX record lock (fcntl) on all of
 *	QUEUE_DIRECTORY/pid, so that a command can ask who holds it
 *	(F_GETLK) without taking it even for an instant: a start-up racing
 *	with "sluice reload" never sees a lock that is not a daemon's. The
 *	file's content is for people; the lock is the truth.
 */

#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void pid_path(const char *queue_directory, char *buf, size_t len)
{
    snprintf(buf, len, "%s/pid", queue_directory);
}

int daemon_pid_lock(const char *queue_directory, char *why, size_t whylen)
{
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char path[4096], pid[32];
    long other;
    int fd, n;

    pid_path(queue_directory, path, sizeof(path));
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0) {
        snprintf(why, whylen, "open %s: %s", path, strerror(errno));
        return -1;
    }
    if (fcntl(fd, F_SETLK, &lk) < 0) {
        other = daemon_pid_running(queue_directory);
        snprintf(why, whylen,
                 "another sluiced (pid %ld) is running on queue %s", other,
                 queue_directory);
        close(fd);
        return -1;
    }
    n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        snprintf(why, whylen, "write %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

long daemon_pid_running(const char *queue_directory)
{
    struct flock lk = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    char path[4096];
    int fd;

    pid_path(queue_directory, path, sizeof(path));
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return 0;
    if (fcntl(fd, F_GETLK, &lk) < 0)
        lk.l_type = F_UNLCK;
    close(fd);
    return lk.l_type == F_UNLCK ? 0 : (long)lk.l_pid;
}
