/*
 * NAME
 *	notify 3 - telling systemd how sluiced is doing
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	void	daemon_notify(const char *state)
 * DESCRIPTION
 *	daemon_notify() sends state ("READY=1", "STOPPING=1", ...) as one
 *	datagram to the socket named by $NOTIFY_SOCKET, which systemd
 *	sets for a unit of Type=notify: a path, or an abstract socket
 *	when it starts with "@". Without the variable it does nothing;
 *	every error is ignored (a lost READY=1 shows as a start that
 *	timed out, in systemd's log). This is the whole of sd_notify(3)
 *	that sluiced needs, without libsystemd.
 */

#include "daemon/daemon.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

void daemon_notify(const char *state)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    size_t len;
    int fd;

    if (path == NULL || (path[0] != '/' && path[0] != '@') ||
        (len = strlen(path)) >= sizeof(sun.sun_path))
        return;
    memcpy(sun.sun_path, path, len);
    if (path[0] == '@')
        sun.sun_path[0] = 0;
    if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) < 0)
        return;
    (void)sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                 (struct sockaddr *)&sun,
                 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len));
    close(fd);
}
