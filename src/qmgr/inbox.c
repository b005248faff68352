/*
 * NAME
 *	inbox 3 - work handed to the event loop's thread from other threads
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	struct qmgr_inbox *qmgr_inbox_create(struct event_base *base)
 *	void	qmgr_inbox_post(struct qmgr_inbox *in, qmgr_inbox_fn *fn,
 *			void *ctx)
 *	void	qmgr_inbox_free(struct qmgr_inbox *in)
 * DESCRIPTION
 *	See qmgr.h. A mutex-protected list and a pipe: a post that finds
 *	the list empty writes one byte to wake the loop; the loop empties
 *	the pipe before it takes the list, so a post that lands after the
 *	take finds the list empty again and wakes it once more. No item is
 *	ever left waiting for a wake that does not come. This needs no
 *	threading support from libevent.
 */

#include "qmgr/qmgr.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct inbox_item {
    struct inbox_item *next;
    qmgr_inbox_fn *fn;
    void *ctx;
};

struct qmgr_inbox {
    pthread_mutex_t lock;
    struct inbox_item *head, *tail;
    int pipe[2]; /* read end, write end; both non-blocking */
    struct event *ev;
};

/* Run every item posted so far, in order, on the calling thread. */
static void inbox_drain(struct qmgr_inbox *in)
{
    struct inbox_item *list, *next;

    pthread_mutex_lock(&in->lock);
    list = in->head;
    in->head = in->tail = NULL;
    pthread_mutex_unlock(&in->lock);
    for (; list != NULL; list = next) {
        next = list->next;
        list->fn(list->ctx);
        free(list);
    }
}

static void inbox_wake_cb(evutil_socket_t fd, short what, void *arg)
{
    char buf[64];

    (void)what;
    while (read(fd, buf, sizeof(buf)) > 0)
        continue;
    inbox_drain(arg);
}

static int nonblocking_pipe(int fds[2])
{
    if (pipe(fds) < 0)
        return -1;
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(fds[i], F_GETFL);

        if (fl < 0 || fcntl(fds[i], F_SETFL, fl | O_NONBLOCK) < 0 ||
            fcntl(fds[i], F_SETFD, FD_CLOEXEC) < 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
    }
    return 0;
}

struct qmgr_inbox *qmgr_inbox_create(struct event_base *base)
{
    struct qmgr_inbox *in = xcalloc(1, sizeof(*in));

    if (nonblocking_pipe(in->pipe) < 0) {
        free(in);
        return NULL;
    }
    pthread_mutex_init(&in->lock, NULL);
    in->ev =
        event_new(base, in->pipe[0], EV_READ | EV_PERSIST, inbox_wake_cb, in);
    if (in->ev == NULL || event_add(in->ev, NULL) < 0) {
        qmgr_inbox_free(in);
        return NULL;
    }
    return in;
}

void qmgr_inbox_post(struct qmgr_inbox *in, qmgr_inbox_fn *fn, void *ctx)
{
    struct inbox_item *it = xmalloc(sizeof(*it));
    int was_empty;

    it->next = NULL;
    it->fn = fn;
    it->ctx = ctx;
    pthread_mutex_lock(&in->lock);
    was_empty = in->head == NULL;
    if (in->tail)
        in->tail->next = it;
    else
        in->head = it;
    in->tail = it;
    pthread_mutex_unlock(&in->lock);
    /* A full pipe already holds a wake-up: EAGAIN is fine. */
    if (was_empty)
        while (write(in->pipe[1], "", 1) < 0 && errno == EINTR)
            continue;
}

void qmgr_inbox_free(struct qmgr_inbox *in)
{
    if (in == NULL)
        return;
    inbox_drain(in);
    if (in->ev)
        event_free(in->ev);
    close(in->pipe[0]);
    close(in->pipe[1]);
    pthread_mutex_destroy(&in->lock);
    free(in);
}
