/*
 * NAME
 *	spawner_client 3 - sluiced's side of the agent spawner
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_spawner *deliver_spawner_start(const char *agent_user,
 *			const char *mail_owner, char *why, size_t whylen)
 *	void	deliver_spawner_free(struct deliver_spawner *sp)
 *
 *	#include "deliver/agent_impl.h"
 *
 *	void	spawner_attach(struct deliver_spawner *sp,
 *			struct event_base *base, spawner_exit_fn *exit_fn,
 *			spawner_lost_fn *lost_fn, void *ctx)
 *	int	spawner_spawn(struct deliver_spawner *sp, char *const *argv,
 *			char *const *env, const int fds[3], pid_t *pid,
 *			char *why, size_t whylen)
 *	int	spawner_kill(struct deliver_spawner *sp, pid_t pid, int sig)
 *	int	spawner_wait(struct deliver_spawner *sp, pid_t pid, int ms,
 *			int *status)
 *	void	spawner_pump(struct deliver_spawner *sp, int ms)
 *	int	spawner_lost(const struct deliver_spawner *sp)
 *	int	spawner_restartable(const struct deliver_spawner *sp)
 *	struct deliver_spawner *spawner_restart(struct deliver_spawner *sp,
 *			char *why, size_t whylen)
 *	pid_t	spawner_pid(const struct deliver_spawner *sp)
 *	int	spawner_fd(const struct deliver_spawner *sp)
 * DESCRIPTION
 *	deliver_spawner_start() looks agent_user up (spawner_user_find())
 *	and forks the spawner (spawner_main()) on a SOCK_SEQPACKET socket
 *	pair; the calling process becomes a child subreaper, so that the
 *	agents of a spawner that died come to it to be reaped.
 *	deliver_spawner_free() closes the socket (the spawner ends its
 *	agents and exits) and waits for the spawner, three seconds at
 *	most.
 *
 *	spawner_attach() puts the socket on the event loop: each EXIT the
 *	spawner reports goes to exit_fn, and lost_fn hears once that the
 *	spawner is gone (its socket closed), with its wait status when it
 *	could be collected (-1 otherwise).
 *
 *	spawner_spawn() starts argv with env (a NULL-terminated array of
 *	NAME=VALUE) and fds as its standard input, output and error, and
 *	waits for the answer, five seconds at most: 0 with the pid, or -1
 *	with why ("cannot execute PATH: REASON", the spawner's refusal of
 *	agent_user, or the spawner gone). An answer that comes too late
 *	is killed when it arrives. EXIT reports read meanwhile wait for
 *	the event loop, so that nothing calls exit_fn from inside.
 *
 *	spawner_kill() asks for a signal to pid and its process group
 *	(SIGTERM or SIGKILL; the spawner refuses any pid it did not
 *	start). spawner_wait() waits up to ms for pid's EXIT and takes it
 *	(1 with status; 0 when it did not come): agent.c's reason for an
 *	agent whose pipe just closed. spawner_pump() reads and dispatches
 *	for up to ms: agent_pool_free()'s wait for the agents it ended.
 *
 *	spawner_restartable() says whether a lost spawner may be forked
 *	again: when this process is root, or never was (its agents ran as
 *	it does anyway); a daemon that gave up root cannot start one that
 *	changes users (decision 134). spawner_restart() frees a lost one
 *	and forks another with the same users.
 */

#include "deliver/agent_impl.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define ANSWER_MS    5000
#define FREE_WAIT_MS 3000

struct pending_exit {
    pid_t pid;
    int status;
};

struct deliver_spawner {
    int fd;
    pid_t pid;
    int root; /* started by root */
    int lost, lost_told;
    int status; /* the spawner's, when lost and collected; else -1 */
    char *user, *mail_owner;
    uint32_t seq;
    struct event *ev;
    spawner_exit_fn *exit_fn;
    spawner_lost_fn *lost_fn;
    void *ctx;
    struct pending_exit *pending;
    size_t npending;
};

struct deliver_spawner *deliver_spawner_start(const char *agent_user,
                                              const char *mail_owner, char *why,
                                              size_t whylen)
{
    struct deliver_spawner *sp;
    struct spawner_user u;
    int sv[2];
    pid_t pid;

    if (spawner_user_find(agent_user, mail_owner, &u, why, whylen) < 0)
        return NULL;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0 ||
        (pid = fork()) < 0) {
        snprintf(why, whylen, "cannot start the agent spawner: %s",
                 strerror(errno));
        return NULL;
    }
    if (pid == 0) {
        close(sv[0]);
        spawner_main(sv[1], &u);
    }
    close(sv[1]);
    (void)prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
    sp = xcalloc(1, sizeof(*sp));
    sp->fd = sv[0];
    sp->pid = pid;
    sp->root = geteuid() == 0;
    sp->status = -1;
    sp->user = xstrdup(agent_user ? agent_user : "");
    sp->mail_owner = xstrdup(mail_owner ? mail_owner : "");
    return sp;
}

pid_t spawner_pid(const struct deliver_spawner *sp)
{
    return sp->pid;
}

int spawner_fd(const struct deliver_spawner *sp)
{
    return sp->fd;
}

int spawner_lost(const struct deliver_spawner *sp)
{
    return sp->lost;
}

int spawner_restartable(const struct deliver_spawner *sp)
{
    return !sp->root || geteuid() == 0;
}

/* Its end: the status collected when it is there within ms. */
static void spawner_collect(struct deliver_spawner *sp, int ms)
{
    for (int t = 0; sp->pid > 0 && t <= ms; t += 10) {
        int st;
        pid_t r = waitpid(sp->pid, &st, WNOHANG);

        if (r == sp->pid || (r < 0 && errno == ECHILD)) {
            sp->status = r == sp->pid ? st : -1;
            sp->pid = -sp->pid; /* gone: never signalled again */
            return;
        }
        if (t < ms)
            usleep(10000);
    }
}

static void lose(struct deliver_spawner *sp)
{
    if (sp->lost)
        return;
    sp->lost = 1;
    if (sp->ev) {
        event_del(sp->ev);
        event_active(sp->ev, EV_READ, 0); /* lost_fn from the loop */
    }
}

static void pending_add(struct deliver_spawner *sp, pid_t pid, int status)
{
    sp->pending =
        xrealloc(sp->pending, (sp->npending + 1) * sizeof(*sp->pending));
    sp->pending[sp->npending].pid = pid;
    sp->pending[sp->npending++].status = status;
    if (sp->ev)
        event_active(sp->ev, EV_READ, 0);
}

static int send_msg(struct deliver_spawner *sp, const struct spawn_msg *m,
                    const int *fds, size_t nfds)
{
    char cbuf[CMSG_SPACE(3 * sizeof(int))];
    struct util_buf b = UTIL_BUF_INIT;
    struct iovec iov;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    ssize_t sent;

    spawn_encode(&b, m);
    iov.iov_base = b.data;
    iov.iov_len = b.len;
    if (nfds > 0) {
        struct cmsghdr *c;

        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
    }
    do
        sent = sendmsg(sp->fd, &mh, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    util_buf_free(&b);
    if (sent < 0)
        lose(sp);
    return sent < 0 ? -1 : 0;
}

int spawner_kill(struct deliver_spawner *sp, pid_t pid, int sig)
{
    struct spawn_msg m = {0};

    if (sp->lost || pid <= 0)
        return -1;
    m.type = SPAWN_KILL;
    m.pid = pid;
    m.value = sig;
    return send_msg(sp, &m, NULL, 0);
}

/*
 * One packet, waiting up to ms (0: none there, no wait): 1 with m
 * (pointing into buf), 0 when nothing came, -1 when the spawner is gone.
 */
static int receive(struct deliver_spawner *sp, char *buf, int ms,
                   struct spawn_msg *m)
{
    struct pollfd p = {sp->fd, POLLIN, 0};
    char why[200];
    ssize_t got;

    if (sp->lost)
        return -1;
    if (ms > 0 && poll(&p, 1, ms) == 0)
        return 0;
    got = recv(sp->fd, buf, SPAWN_MSG_MAX + 1, MSG_DONTWAIT | MSG_TRUNC);
    if (got < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (got <= 0) {
        lose(sp);
        return -1;
    }
    if (got > SPAWN_MSG_MAX ||
        spawn_decode(buf, (size_t)got, m, why, sizeof(why)) < 0)
        return 0; /* the spawner is ours: a bug; nothing to act on */
    return 1;
}

/* A message that is not the answer awaited: kept, or acted on. */
static void aside(struct deliver_spawner *sp, const struct spawn_msg *m)
{
    if (m->type == SPAWN_EXIT)
        pending_add(sp, m->pid, m->value);
    else if (m->type == SPAWN_STARTED) /* too late: nobody waits for it */
        spawner_kill(sp, m->pid, SIGKILL);
}

static int64_t now_ms(void)
{
    return util_clock_mono_us() / 1000;
}

int spawner_spawn(struct deliver_spawner *sp, char *const *argv,
                  char *const *env, const int fds[3], pid_t *pid, char *why,
                  size_t whylen)
{
    static char buf[SPAWN_MSG_MAX + 1];
    struct spawn_msg m = {0};
    int64_t end = now_ms() + ANSWER_MS;
    int rc;

    m.type = SPAWN_START;
    m.seq = ++sp->seq;
    while (argv[m.argc] && m.argc < SPAWN_ARGV_MAX)
        m.argv[m.argc] = argv[m.argc], m.argc++;
    while (env[m.envc] && m.envc < SPAWN_ENV_MAX)
        m.env[m.envc] = env[m.envc], m.envc++;
    if (send_msg(sp, &m, fds, 3) < 0) {
        snprintf(why, whylen, "the agent spawner is gone");
        return -1;
    }
    while (now_ms() < end) {
        struct spawn_msg r;

        if ((rc = receive(sp, buf, (int)(end - now_ms()) + 1, &r)) < 0)
            break;
        if (rc == 0)
            continue;
        if (r.seq != m.seq ||
            (r.type != SPAWN_STARTED && r.type != SPAWN_FAILED &&
             r.type != SPAWN_REFUSED)) {
            aside(sp, &r);
            continue;
        }
        if (r.type == SPAWN_STARTED) {
            *pid = r.pid;
            return 0;
        }
        snprintf(why, whylen, "%s", r.text);
        return -1;
    }
    snprintf(why, whylen, "the agent spawner %s",
             sp->lost ? "is gone" : "did not answer within 5 s");
    return -1;
}

int spawner_wait(struct deliver_spawner *sp, pid_t pid, int ms, int *status)
{
    static char buf[SPAWN_MSG_MAX + 1];
    int64_t end = now_ms() + ms;
    struct spawn_msg r;

    for (size_t i = 0; i < sp->npending; i++)
        if (sp->pending[i].pid == pid) {
            *status = sp->pending[i].status;
            sp->pending[i] = sp->pending[--sp->npending];
            return 1;
        }
    while (now_ms() < end) {
        int rc = receive(sp, buf, (int)(end - now_ms()) + 1, &r);

        if (rc < 0)
            break;
        if (rc > 0 && r.type == SPAWN_EXIT && r.pid == pid) {
            *status = r.value;
            return 1;
        }
        if (rc > 0)
            aside(sp, &r);
    }
    return 0;
}

/* The EXIT reports kept, to exit_fn; a lost spawner, to lost_fn. */
static void dispatch(struct deliver_spawner *sp)
{
    while (sp->npending > 0) {
        struct pending_exit x = sp->pending[0];

        memmove(sp->pending, sp->pending + 1,
                --sp->npending * sizeof(*sp->pending));
        if (sp->exit_fn)
            sp->exit_fn(sp->ctx, x.pid, x.status);
    }
    if (sp->lost && !sp->lost_told) {
        sp->lost_told = 1;
        spawner_collect(sp, 200);
        if (sp->lost_fn)
            sp->lost_fn(sp->ctx, sp->pid < 0 ? -sp->pid : sp->pid, sp->status);
    }
}

void spawner_pump(struct deliver_spawner *sp, int ms)
{
    static char buf[SPAWN_MSG_MAX + 1];
    int64_t end = now_ms() + ms;
    struct spawn_msg r;

    while (now_ms() < end) {
        int rc = receive(sp, buf, (int)(end - now_ms()) + 1, &r);

        if (rc > 0)
            aside(sp, &r);
        dispatch(sp);
        if (rc < 0)
            return;
    }
}

static void read_cb(evutil_socket_t fd, short what, void *arg)
{
    static char buf[SPAWN_MSG_MAX + 1];
    struct deliver_spawner *sp = arg;
    struct spawn_msg r;

    (void)fd;
    (void)what;
    while (receive(sp, buf, 0, &r) > 0)
        aside(sp, &r);
    dispatch(sp);
}

void spawner_attach(struct deliver_spawner *sp, struct event_base *base,
                    spawner_exit_fn *exit_fn, spawner_lost_fn *lost_fn,
                    void *ctx)
{
    sp->exit_fn = exit_fn;
    sp->lost_fn = lost_fn;
    sp->ctx = ctx;
    if (sp->ev == NULL) {
        sp->ev = event_new(base, sp->fd, EV_READ | EV_PERSIST, read_cb, sp);
        if (sp->ev == NULL)
            util_panic("agent spawner: cannot make its event");
        if (!sp->lost)
            event_add(sp->ev, NULL);
    }
    if (sp->lost || sp->npending > 0)
        event_active(sp->ev, EV_READ, 0);
}

void deliver_spawner_free(struct deliver_spawner *sp)
{
    if (sp == NULL)
        return;
    if (sp->ev)
        event_free(sp->ev);
    close(sp->fd);
    spawner_collect(sp, FREE_WAIT_MS);
    if (sp->pid > 0) { /* still there: as root it can be made to go */
        kill(sp->pid, SIGKILL);
        spawner_collect(sp, 100);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) /* the agents it left us */
        ;
    free(sp->pending);
    free(sp->user);
    free(sp->mail_owner);
    free(sp);
}

struct deliver_spawner *spawner_restart(struct deliver_spawner *sp, char *why,
                                        size_t whylen)
{
    struct deliver_spawner *n =
        deliver_spawner_start(sp->user, sp->mail_owner, why, whylen);

    deliver_spawner_free(sp);
    return n;
}
