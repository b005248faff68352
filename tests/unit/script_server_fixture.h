#ifndef SLUICE_TEST_SCRIPT_SERVER_FIXTURE_H
#define SLUICE_TEST_SCRIPT_SERVER_FIXTURE_H

/*
 * script_server_fixture.h - a scripted SMTP server on loopback, in a
 * thread, for the delivery client's tests (test_deliver, test_deliver_auth),
 * and addr_of() for the address to give the client. Include after cmocka.h.
 */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "deliver/deliver.h"

/*
 * The scripted server: for each step, read `lines` command lines (a DATA
 * body counts as one line, up to its final "."), then write `reply`
 * (which may hold several replies). A step with lines -1 closes the
 * connection and accepts the next one. Everything read is kept in `got`.
 */
struct step {
    int lines;
    const char *reply;
};

struct server {
    int listen_fd;
    int port;
    const struct step *script;
    char got[8192];
    size_t got_len;
    pthread_t thread;
    int close_after; /* close after this many steps (0 = at the end) */
    int accepted;    /* connections closed by a -1 step */
};

static int read_line(int fd, char *buf, size_t len)
{
    size_t n = 0;

    while (n + 1 < len) {
        ssize_t r = read(fd, buf + n, 1);

        if (r <= 0)
            return -1;
        if (buf[n++] == '\n')
            break;
    }
    buf[n] = 0;
    return (int)n;
}

static void *server_run(void *arg)
{
    struct server *sv = arg;
    int fd = accept(sv->listen_fd, NULL, NULL);
    char line[2048];
    int in_data = 0;

    if (fd < 0)
        return NULL;
    for (int i = 0; sv->script[i].reply; i++) {
        if (sv->script[i].lines < 0) {
            close(fd);
            sv->accepted++;
            in_data = 0;
            if ((fd = accept(sv->listen_fd, NULL, NULL)) < 0)
                return NULL;
            continue;
        }
        for (int l = 0; l < sv->script[i].lines;) {
            int n = read_line(fd, line, sizeof(line));

            if (n < 0)
                goto out;
            if (sv->got_len + n < sizeof(sv->got)) {
                memcpy(sv->got + sv->got_len, line, n);
                sv->got_len += n;
                sv->got[sv->got_len] = 0;
            }
            if (in_data) {
                if (strcmp(line, ".\r\n") == 0) {
                    in_data = 0;
                    l++;
                }
                continue;
            }
            if (strncmp(line, "DATA", 4) == 0 &&
                strstr(sv->script[i].reply, "354") != NULL &&
                l + 1 == sv->script[i].lines)
                in_data = 0;
            l++;
        }
        if (write(fd, sv->script[i].reply, strlen(sv->script[i].reply)) < 0)
            goto out;
        if (strstr(sv->script[i].reply, "354 ") != NULL)
            in_data = 1;
        if (sv->close_after && i + 1 == sv->close_after)
            goto out;
    }
    /* Drain until the client closes. */
    while (read_line(fd, line, sizeof(line)) > 0) {
        if (sv->got_len + strlen(line) < sizeof(sv->got)) {
            strcat(sv->got, line);
            sv->got_len += strlen(line);
        }
    }
out:
    close(fd);
    return NULL;
}

static void server_start(struct server *sv, const struct step *script)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);
    int one = 1;

    memset(sv, 0, sizeof(*sv));
    sv->script = script;
    sv->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(sv->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(sv->listen_fd, (struct sockaddr *)&sin, sizeof(sin)),
                     0);
    assert_int_equal(listen(sv->listen_fd, 4), 0);
    getsockname(sv->listen_fd, (struct sockaddr *)&sin, &len);
    sv->port = ntohs(sin.sin_port);
    pthread_create(&sv->thread, NULL, server_run, sv);
}

static void server_stop(struct server *sv)
{
    shutdown(sv->listen_fd, SHUT_RDWR);
    close(sv->listen_fd);
    pthread_join(sv->thread, NULL);
}

static void addr_of(struct deliver_addr *a, const char *host, int port)
{
    struct sockaddr_in *sin = (struct sockaddr_in *)&a->sa;

    memset(a, 0, sizeof(*a));
    snprintf(a->host, sizeof(a->host), "%s", host);
    sin->sin_family = AF_INET;
    sin->sin_port = htons((uint16_t)port);
    sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a->salen = sizeof(*sin);
}

#endif
