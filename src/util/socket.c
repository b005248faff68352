/*
 * NAME
 *	socket 3 - the daemon's Unix sockets in its queue directory
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_socket_address(struct sockaddr_un *sun,
 *			const char *queue_directory, const char *name,
 *			char *why, size_t whylen)
 *	int	util_socket_listen(const char *queue_directory,
 *			const char *name, int type, mode_t mode,
 *			const char *what, char *why, size_t whylen)
 * DESCRIPTION
 *	sluiced listens on Unix sockets under its queue directory (the
 *	submission socket, the wake-up socket), and its clients find them
 *	there by name. Both sides build the address the same way here.
 *
 *	util_socket_address() fills sun with QUEUE_DIRECTORY/NAME. It
 *	returns 0, or -1 with "queue_directory DIR: name too long for a
 *	socket" in why when the path does not fit in sun_path.
 *
 *	util_socket_listen() makes the socket NAME (for instance
 *	"public/submit") of type SOCK_STREAM or SOCK_DGRAM, non-blocking
 *	and closed on exec: it creates NAME's folder if need be and sets
 *	its mode to 0755 (so a restrictive umask cannot shut users out),
 *	removes a previous daemon's socket, binds, gives the socket its
 *	mode (0666 for the submission and wake-up sockets, writable by
 *	every local user: who may submit is decided by the peer's
 *	credentials, not by the file mode; 0660 for the control socket,
 *	its owner and group only) before anyone can connect, and for a
 *	stream socket listens. It returns the descriptor, or -1 with the reason
 *	in why: "mkdir DIR: ...", or "WHAT PATH: ..." naming the socket
 *	(what says which one, "submission socket").
 */

#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_BACKLOG 128

int util_socket_address(struct sockaddr_un *sun, const char *queue_directory,
                        const char *name, char *why, size_t whylen)
{
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    if (snprintf(sun->sun_path, sizeof(sun->sun_path), "%s/%s", queue_directory,
                 name) < (int)sizeof(sun->sun_path))
        return 0;
    snprintf(why, whylen, "queue_directory %s: name too long for a socket",
             queue_directory);
    return -1;
}

/* The folder the socket is in, made if missing. */
static int socket_folder(const char *path, char *why, size_t whylen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    const char *slash = strrchr(path, '/');

    if (slash == NULL || slash == path)
        return 0;
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
        snprintf(why, whylen, "mkdir %s: %s", dir, strerror(errno));
        return -1;
    }
    (void)chmod(dir, 0755); /* whatever the umask made of it */
    return 0;
}

int util_socket_listen(const char *queue_directory, const char *name, int type,
                       mode_t mode, const char *what, char *why, size_t whylen)
{
    struct sockaddr_un sun;
    int fd;

    if (util_socket_address(&sun, queue_directory, name, why, whylen) < 0 ||
        socket_folder(sun.sun_path, why, whylen) < 0)
        return -1;
    unlink(sun.sun_path); /* a previous daemon's */
    fd = socket(AF_UNIX, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
        chmod(sun.sun_path, mode) < 0 ||
        (type == SOCK_STREAM && listen(fd, LISTEN_BACKLOG) < 0)) {
        snprintf(why, whylen, "%s %s: %s", what, sun.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}
