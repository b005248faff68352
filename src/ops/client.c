/*
 * NAME
 *	client 3 - a request to the running daemon over its control socket
 * SYNOPSIS
 *	#include "ops/ops.h"
 *
 *	int	ops_control_call(const char *queue_directory,
 *			const char *request, int timeout_s,
 *			struct util_buf *reply, char *why, size_t whylen)
 * DESCRIPTION
 *	See ops.h. The call blocks (it is for the sluice command), with
 *	one deadline for the whole exchange: connect, the request line,
 *	and the reply read to the end of the connection.
 */

#include "ops/ops.h"
#include "util/util.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Wait for fd to be ready for events, until deadline; 0 or -1 (errno). */
static int wait_ready(int fd, short events, int64_t deadline)
{
    struct pollfd p = {fd, events, 0};
    int64_t left;
    int n;

    for (;;) {
        left = deadline - util_clock_mono_ms();
        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        n = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -1;
    }
}

int ops_control_call(const char *queue_directory, const char *request,
                     int timeout_s, struct util_buf *reply, char *why,
                     size_t whylen)
{
    struct sockaddr_un sun;
    struct util_buf in = UTIL_BUF_INIT;
    int64_t deadline = util_clock_mono_ms() + (int64_t)timeout_s * 1000;
    size_t sent = 0, len = strlen(request);
    char buf[4096], *nl;
    int fd, err, rc = -1;
    ssize_t n;

    if (util_socket_address(&sun, queue_directory, OPS_CONTROL_SOCKET, why,
                            whylen) < 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        err = errno;
        snprintf(why, whylen, "%s: %s", sun.sun_path, strerror(err));
        if (fd >= 0)
            close(fd);
        errno = err;
        return -1;
    }
    while (sent < len + 1) {
        const char *p = sent < len ? request + sent : "\n";
        size_t left = sent < len ? len - sent : 1;

        if (wait_ready(fd, POLLOUT, deadline) < 0 ||
            (n = send(fd, p, left, MSG_NOSIGNAL | MSG_DONTWAIT)) < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            goto io_fail;
        }
        sent += (size_t)n;
    }
    for (;;) {
        if (wait_ready(fd, POLLIN, deadline) < 0)
            goto io_fail;
        n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0)
            goto io_fail;
        if (n == 0)
            break;
        util_buf_add(&in, buf, (size_t)n);
    }
    if (in.len == 0 || (nl = memchr(in.data, '\n', in.len)) == NULL) {
        snprintf(why, whylen, "the daemon's answer was cut short");
        errno = EPROTO;
    } else if (strncmp(in.data, "ok\n", 3) == 0) {
        util_buf_add(reply, nl + 1, in.len - (size_t)(nl + 1 - in.data));
        rc = 0;
    } else if (strncmp(in.data, "error ", 6) == 0) {
        snprintf(why, whylen, "%.*s", (int)(nl - in.data - 6), in.data + 6);
        rc = 1;
    } else {
        snprintf(why, whylen, "the daemon's answer makes no sense");
        errno = EPROTO;
    }
    close(fd);
    util_buf_free(&in);
    return rc;
io_fail:
    err = errno;
    snprintf(why, whylen, "%s: %s", sun.sun_path,
             err == ETIMEDOUT ? "no answer in time" : strerror(err));
    close(fd);
    util_buf_free(&in);
    errno = err;
    return -1;
}
