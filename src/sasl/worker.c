/*
 * NAME
 *	worker 3 - password hashes checked off the event loop
 * SYNOPSIS
 *	#include "sasl/sasl_impl.h"
 *
 *	struct sasl_worker *sasl_worker_create(struct event_base *base,
 *			char *why, size_t whylen)
 *	struct sasl_job *sasl_worker_submit(struct sasl_worker *w,
 *			const struct sasl_entry *e, const char *password,
 *			void (*done)(void *arg, int match), void *arg)
 *	void	sasl_job_cancel(struct sasl_job *j)
 *	void	sasl_worker_free(struct sasl_worker *w)
 * DESCRIPTION
 *	A crypt(3) hash costs 2 ms (SHA512-CRYPT, 5000 rounds) to 200 ms
 *	(bcrypt at cost 12) of one core: on the event loop, every other
 *	session and the queue manager would wait that long for each login
 *	attempt, and a password guesser would stall them all (decision
 *	72). So the passwd-file back end hands each check to one worker
 *	thread, which takes jobs in order and posts each result back
 *	through a pipe that the loop watches.
 *
 *	sasl_worker_create() starts the thread. sasl_worker_submit()
 *	queues a check of password against e (both copied) and returns
 *	the job; done(arg, match) is called on the loop thread once it is
 *	done, unless sasl_job_cancel() came first (the session went away:
 *	the job still runs, if it has begun, and is then freed).
 *	sasl_worker_free() stops the thread (waiting for the check under
 *	way) and frees every job; no done is called after it.
 */

#include "sasl/sasl_impl.h"
#include "util/util.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

struct sasl_job {
    TAILQ_ENTRY(sasl_job) link;
    struct sasl_entry entry;
    char password[SASL_FIELD_MAX + 1];
    int match;
    int cancelled; /* loop thread only */
    void (*done)(void *arg, int match);
    void *arg;
};

struct sasl_worker {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    TAILQ_HEAD(, sasl_job) queue; /* under lock */
    int stop;                     /* under lock */
    int pipe[2];                  /* worker -> loop: finished jobs */
    struct event *ev;
};

static void job_free(struct sasl_job *j)
{
    explicit_bzero(j->password, sizeof(j->password));
    free(j);
}

static void *worker_main(void *arg)
{
    struct sasl_worker *w = arg;
    struct sasl_job *j;

    for (;;) {
        pthread_mutex_lock(&w->lock);
        while (!w->stop && TAILQ_EMPTY(&w->queue))
            pthread_cond_wait(&w->cond, &w->lock);
        if (w->stop) {
            pthread_mutex_unlock(&w->lock);
            return NULL;
        }
        j = TAILQ_FIRST(&w->queue);
        TAILQ_REMOVE(&w->queue, j, link);
        pthread_mutex_unlock(&w->lock);
        j->match = sasl_entry_verify(&j->entry, j->password);
        /* a pointer is less than PIPE_BUF: written whole or not at all */
        while (write(w->pipe[1], &j, sizeof(j)) < 0 && errno == EINTR)
            ;
    }
}

/* Finished jobs, on the loop thread. */
static void finished_cb(evutil_socket_t fd, short what, void *arg)
{
    struct sasl_job *j;

    (void)what;
    (void)arg;
    while (read(fd, &j, sizeof(j)) == (ssize_t)sizeof(j)) {
        if (!j->cancelled)
            j->done(j->arg, j->match);
        job_free(j);
    }
}

struct sasl_worker *sasl_worker_create(struct event_base *base, char *why,
                                       size_t whylen)
{
    struct sasl_worker *w = xcalloc(1, sizeof(*w));

    TAILQ_INIT(&w->queue);
    w->pipe[0] = w->pipe[1] = -1;
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, NULL);
    if (pipe(w->pipe) < 0) {
        snprintf(why, whylen, "pipe: %s", strerror(errno));
        goto fail;
    }
    fcntl(w->pipe[0], F_SETFL, O_NONBLOCK);
    fcntl(w->pipe[0], F_SETFD, FD_CLOEXEC);
    fcntl(w->pipe[1], F_SETFD, FD_CLOEXEC);
    w->ev = event_new(base, w->pipe[0], EV_READ | EV_PERSIST, finished_cb, w);
    if (w->ev == NULL || event_add(w->ev, NULL) < 0) {
        snprintf(why, whylen, "cannot watch the worker's pipe");
        goto fail;
    }
    if ((errno = pthread_create(&w->thread, NULL, worker_main, w)) != 0) {
        snprintf(why, whylen, "pthread_create: %s", strerror(errno));
        goto fail;
    }
    return w;
fail:
    if (w->ev)
        event_free(w->ev);
    if (w->pipe[0] >= 0) {
        close(w->pipe[0]);
        close(w->pipe[1]);
    }
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
    return NULL;
}

struct sasl_job *sasl_worker_submit(struct sasl_worker *w,
                                    const struct sasl_entry *e,
                                    const char *password,
                                    void (*done)(void *arg, int match),
                                    void *arg)
{
    struct sasl_job *j = xcalloc(1, sizeof(*j));

    j->entry = *e;
    snprintf(j->password, sizeof(j->password), "%s", password);
    j->done = done;
    j->arg = arg;
    pthread_mutex_lock(&w->lock);
    TAILQ_INSERT_TAIL(&w->queue, j, link);
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    return j;
}

void sasl_job_cancel(struct sasl_job *j)
{
    j->cancelled = 1;
}

void sasl_worker_free(struct sasl_worker *w)
{
    struct sasl_job *j;

    if (w == NULL)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    while ((j = TAILQ_FIRST(&w->queue)) != NULL) {
        TAILQ_REMOVE(&w->queue, j, link);
        job_free(j);
    }
    while (read(w->pipe[0], &j, sizeof(j)) == (ssize_t)sizeof(j))
        job_free(j);
    event_free(w->ev);
    close(w->pipe[0]);
    close(w->pipe[1]);
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
}
