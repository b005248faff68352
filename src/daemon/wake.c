/*
 * NAME
 *	wake 3 - the wake-up socket: "new mail is in the spool"
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	int	daemon_wake_listen(const char *queue_directory, char *why,
 *			size_t whylen)
 *	void	daemon_wake_send(const char *queue_directory)
 * DESCRIPTION
 *	See daemon.h. A datagram carries no data that matters: any datagram
 *	means "look at the incoming queue now". Datagrams never block the
 *	sender and a full socket buffer loses only redundant wake-ups.
 */

#include "daemon/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int wake_address(const char *queue_directory, struct sockaddr_un *sun)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    return snprintf(sun->sun_path, sizeof(sun->sun_path), "%s/public/wakeup",
                    queue_directory) < (int)sizeof(sun->sun_path)
               ? 0
               : -1;
}

int daemon_wake_listen(const char *queue_directory, char *why, size_t whylen)
{
    struct sockaddr_un sun;
    char dir[sizeof(sun.sun_path)];
    int fd;

    if (wake_address(queue_directory, &sun) < 0) {
        snprintf(why, whylen, "queue_directory %s: name too long for a socket",
                 queue_directory);
        return -1;
    }
    snprintf(dir, sizeof(dir), "%s/public", queue_directory);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        snprintf(why, whylen, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    chmod(dir, 0755);
    unlink(sun.sun_path); /* a previous daemon's */
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) <
            0 ||
        bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        snprintf(why, whylen, "wake-up socket %s: %s", sun.sun_path,
                 strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    chmod(sun.sun_path, 0666);
    return fd;
}

void daemon_wake_send(const char *queue_directory)
{
    struct sockaddr_un sun;
    int fd;

    if (wake_address(queue_directory, &sun) < 0)
        return;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return;
    (void)sendto(fd, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                 (struct sockaddr *)&sun, sizeof(sun));
    close(fd);
}
