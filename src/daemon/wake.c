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
#include "util/util.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define WAKE_SOCKET "public/wakeup"

int daemon_wake_listen(const char *queue_directory, char *why, size_t whylen)
{
    return util_socket_listen(queue_directory, WAKE_SOCKET, SOCK_DGRAM, 0666,
                              "wake-up socket", why, whylen);
}

void daemon_wake_send(const char *queue_directory)
{
    struct sockaddr_un sun;
    char why[256];
    int fd;

    if (util_socket_address(&sun, queue_directory, WAKE_SOCKET, why,
                            sizeof(why)) < 0)
        return;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return;
    (void)sendto(fd, "w", 1, MSG_DONTWAIT | MSG_NOSIGNAL,
                 (struct sockaddr *)&sun, sizeof(sun));
    close(fd);
}
