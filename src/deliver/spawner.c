/*
 * NAME
 *	spawner 3 - the privileged process that starts external agents
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	int	spawner_user_find(const char *name, const char *mail_owner,
 *			struct spawner_user *u, char *why, size_t whylen)
 *	void	spawner_main(int fd, const struct spawner_user *u)
 * DESCRIPTION
 *	The spawner (decision 134) is forked by sluiced before it gives
 *	up root and stays root, doing nothing but this: it reads START
 *	and KILL messages (spawn.c) from sluiced on fd, a SOCK_SEQPACKET
 *	socket, starts agents, signals them, reaps them, and reports.
 *
 *	spawner_user_find() decides, in sluiced before the fork, whom the
 *	agents run as: nobody to change to when the process is not root
 *	(the agents run as it does); as root, agent_user (default nobody)
 *	with its uid, gid and groups, refused with a reason kept in u
 *	(every START then FAILED with it) when it does not exist, has uid
 *	0, or has the uid of mail_owner (the spool's owner: an agent of
 *	that uid could read and change every queued message), and when
 *	the process lacks CAP_KILL (a capability bounding set without
 *	it: the agents of another uid could be neither signalled nor
 *	killed with the spawner). It returns
 *	-1 with why only when the lookup itself failed.
 *
 *	spawner_main() never returns. It closes every descriptor but fd
 *	and 0 to 2, ignores SIGINT, SIGHUP, SIGTERM and SIGPIPE (a
 *	terminal's ^C, or systemd's SIGTERM to every process of the unit,
 *	reaches sluiced, which stops it: sluiced's end, not a signal, ends
 *	the spawner; SIGKILL still does), becomes a child subreaper (what
 *	an agent leaves behind is reaped here), names itself
 *	"sluice-spawner" and loops: a START is checked (spawn_decode(),
 *	exactly three descriptors), the program forked and executed as
 *	agent.c used to (signals reset, the three descriptors as standard
 *	input, output and error, everything else closed at the exec, "/"
 *	as working directory, a session of its own, the user, then
 *	PR_SET_PDEATHSIG SIGKILL so that the agent dies with the spawner)
 *	and answered STARTED or FAILED once the exec succeeded or failed;
 *	a KILL is honoured only for a pid the spawner started and has not
 *	reaped (its process group, then itself); anything else is answered
 *	REFUSED and costs only that message. SIGCHLD (a signalfd) reaps
 *	and reports EXIT for each agent. An end of file from sluiced (it
 *	stopped or died) ends the agents: SIGTERM, a second, SIGKILL, and
 *	the spawner exits.
 */

#define _GNU_SOURCE /* pipe2(), getgrouplist() */

#include "deliver/agent_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN_MAX 4096
#define END_GRACE_MS 1000

/* Root without CAP_KILL (a narrow bounding set) cannot signal agents
 * of another uid, nor does their PR_SET_PDEATHSIG reach them. */
static int can_kill(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];

    return syscall(SYS_capget, &h, d) != 0 ||
           (d[0].effective & (1u << CAP_KILL)) != 0;
}

int spawner_user_find(const char *name, const char *mail_owner,
                      struct spawner_user *u, char *why, size_t whylen)
{
    struct passwd *pw;
    uid_t owner = (uid_t)-1;

    memset(u, 0, sizeof(*u));
    if (geteuid() != 0)
        return 0; /* never root: the agents run as sluiced does */
    if (name == NULL || *name == 0)
        name = "nobody";
    if (mail_owner && (pw = getpwnam(mail_owner)) != NULL)
        owner = pw->pw_uid;
    errno = 0;
    if ((pw = getpwnam(name)) == NULL) {
        if (errno != 0 && errno != ENOENT && errno != ESRCH) {
            snprintf(why, whylen, "agent_user %s: %s", name, strerror(errno));
            return -1;
        }
        snprintf(u->refused, sizeof(u->refused), "agent_user %s: no such user",
                 name);
        return 0;
    }
    if (pw->pw_uid == 0 || pw->pw_uid == owner) {
        snprintf(u->refused, sizeof(u->refused),
                 pw->pw_uid == 0
                     ? "agent_user %s: an agent never runs as root"
                     : "agent_user %s has the uid of mail_owner: an agent "
                       "could read and change the queue",
                 name);
        return 0;
    }
    if (!can_kill()) {
        snprintf(u->refused, sizeof(u->refused),
                 "the agent spawner has no CAP_KILL (the capability bounding "
                 "set must include it): it could not stop agents");
        return 0;
    }
    u->change = 1;
    u->uid = pw->pw_uid;
    u->gid = pw->pw_gid;
    u->ngroups = SPAWNER_GROUPS_MAX;
    if (getgrouplist(name, pw->pw_gid, u->groups, &u->ngroups) < 0) {
        u->groups[0] = pw->pw_gid; /* too many: its own group alone */
        u->ngroups = 1;
    }
    return 0;
}

/* Every descriptor from 3 up closes at the exec. */
static void cloexec_rest(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 3u, ~0u, 4u /* CLOSE_RANGE_CLOEXEC */) == 0)
        return;
#endif
    struct rlimit rl;
    int max = 65536;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)max)
        max = (int)rl.rlim_cur;
    for (int fd = 3; fd < max; fd++)
        fcntl(fd, F_SETFD, FD_CLOEXEC);
}

/* In the child: only async-signal-safe calls until the exec. */
static void child_run(const struct spawn_msg *m, const int fds[3], int report,
                      const struct spawner_user *u, pid_t parent)
{
    sigset_t none;
    int err;

    for (int sig = 1; sig < NSIG; sig++)
        signal(sig, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i) < 0 || fcntl(i, F_SETFD, 0) < 0)
            goto fail;
    cloexec_rest();
    if (setsid() < 0 || chdir("/") < 0)
        goto fail;
    if (u->change && (setgroups((size_t)u->ngroups, u->groups) < 0 ||
                      setgid(u->gid) < 0 || setuid(u->uid) < 0))
        goto fail;
    /* after setuid(), which clears it; the spawner may be gone already */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0L, 0L, 0L) < 0 || getppid() != parent)
        goto fail;
    execve(m->argv[0], m->argv, m->env);
fail:
    err = errno ? errno : ESRCH;
    if (write(report, &err, sizeof(err)) < 0)
        _exit(126);
    _exit(127);
}

struct spawner {
    int fd;
    const struct spawner_user *user;
    pid_t children[CHILDREN_MAX];
    size_t nchildren;
};

static void say(struct spawner *s, const struct spawn_msg *m)
{
    struct util_buf b = UTIL_BUF_INIT;

    spawn_encode(&b, m);
    /* sluiced gone: the end of file on fd ends the spawner */
    (void)send(s->fd, b.data, b.len, MSG_NOSIGNAL);
    util_buf_free(&b);
}

static void answer(struct spawner *s, enum spawn_type type, uint32_t seq,
                   pid_t pid, int value, const char *text)
{
    struct spawn_msg m;

    memset(&m, 0, sizeof(m));
    m.type = type;
    m.seq = seq;
    m.pid = pid;
    m.value = value;
    m.text = (char *)text;
    say(s, &m);
}

/* The child's errno from before its exec, or 0 once it ran. */
static int exec_wait(int report, pid_t pid)
{
    int err = 0;
    ssize_t got;

    do
        got = read(report, &err, sizeof(err));
    while (got < 0 && errno == EINTR);
    if (got == (ssize_t)sizeof(err)) {
        waitpid(pid, NULL, 0);
        return err ? err : EIO;
    }
    return 0;
}

static void start(struct spawner *s, const struct spawn_msg *m,
                  const int fds[3])
{
    char why[600];
    int rep[2];
    pid_t pid, me = getpid();
    int e;

    if (s->user->refused[0] != 0) {
        answer(s, SPAWN_FAILED, m->seq, 0, EPERM, s->user->refused);
        return;
    }
    if (s->nchildren == CHILDREN_MAX) {
        answer(s, SPAWN_FAILED, m->seq, 0, EAGAIN, "too many agents");
        return;
    }
    if (pipe2(rep, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
        snprintf(why, sizeof(why), "cannot start %s: %s", m->argv[0],
                 strerror(errno));
        answer(s, SPAWN_FAILED, m->seq, 0, errno, why);
        return;
    }
    if (pid == 0)
        child_run(m, fds, rep[1], s->user, me);
    close(rep[1]);
    e = exec_wait(rep[0], pid);
    close(rep[0]);
    if (e != 0) {
        snprintf(why, sizeof(why), "cannot execute %s: %s", m->argv[0],
                 strerror(e));
        answer(s, SPAWN_FAILED, m->seq, 0, e, why);
        return;
    }
    s->children[s->nchildren++] = pid;
    answer(s, SPAWN_STARTED, m->seq, pid, 0, NULL);
}

static ssize_t child_index(const struct spawner *s, pid_t pid)
{
    for (size_t i = 0; i < s->nchildren; i++)
        if (s->children[i] == pid)
            return (ssize_t)i;
    return -1;
}

/* One message from sluiced, with the descriptors that came with it. */
static void request(struct spawner *s, char *buf, size_t n, int *fds,
                    size_t nfds)
{
    struct spawn_msg m;
    char why[200];

    if (spawn_decode(buf, n, &m, why, sizeof(why)) < 0)
        answer(s, SPAWN_REFUSED, 0, 0, 0, why);
    else if (m.type == SPAWN_START && nfds == 3)
        start(s, &m, fds);
    else if (m.type == SPAWN_START)
        answer(s, SPAWN_REFUSED, m.seq, 0, 0,
               "start: three descriptors needed");
    else if (nfds != 0 || m.type != SPAWN_KILL)
        answer(s, SPAWN_REFUSED, m.seq, 0, 0, "an unexpected message");
    else if (child_index(s, m.pid) < 0)
        answer(s, SPAWN_REFUSED, m.seq, 0, 0, "kill: not an agent");
    else {
        kill(-m.pid, m.value);
        kill(m.pid, m.value);
    }
}

/* Receive one packet; 0 at the end of file, -1 on an error to ignore. */
static int receive(struct spawner *s)
{
    static char buf[SPAWN_MSG_MAX + 1];
    char cbuf[CMSG_SPACE(8 * sizeof(int))];
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    int fds[8];
    size_t nfds = 0;
    ssize_t got;

    mh.msg_control = cbuf;
    mh.msg_controllen = sizeof(cbuf);
    got = recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC);
    if (got == 0)
        return 0;
    if (got < 0)
        return errno == EINTR || errno == EAGAIN ? -1 : 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        size_t k;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < 8; i++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
        answer(s, SPAWN_REFUSED, 0, 0, 0, "a truncated message");
    else
        request(s, buf, (size_t)got, fds, nfds);
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    return -1;
}

/* Reap what ended; report the agents among them. */
static void reap(struct spawner *s)
{
    int st;
    pid_t pid;
    ssize_t i;

    while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
        if ((i = child_index(s, pid)) < 0)
            continue; /* an agent's orphan, adopted by the subreaper */
        s->children[i] = s->children[--s->nchildren];
        answer(s, SPAWN_EXIT, 0, pid, st, NULL);
    }
}

/* sluiced is gone: end the agents, then the spawner. */
static void end_all(struct spawner *s, int sfd)
{
    struct pollfd p = {sfd, POLLIN, 0};
    struct signalfd_siginfo si;

    for (size_t i = 0; i < s->nchildren; i++)
        kill(-s->children[i], SIGTERM), kill(s->children[i], SIGTERM);
    for (int t = 0; t < END_GRACE_MS / 50 && s->nchildren > 0; t++) {
        if (poll(&p, 1, 50) > 0)
            (void)!read(sfd, &si, sizeof(si));
        reap(s);
    }
    for (size_t i = 0; i < s->nchildren; i++) {
        kill(-s->children[i], SIGKILL), kill(s->children[i], SIGKILL);
        waitpid(s->children[i], NULL, 0);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) /* orphans already gone */
        ;
    _exit(0);
}

static int signals_prepare(void)
{
    sigset_t chld;

    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, NULL);
    return signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
}

void spawner_main(int fd, const struct spawner_user *u)
{
    static struct spawner s;
    struct pollfd p[2];
    struct signalfd_siginfo si;
    int sfd;

    if (fd != 3 && dup2(fd, 3) < 0)
        _exit(1);
#ifdef SYS_close_range
    if (syscall(SYS_close_range, 4u, ~0u, 0u) != 0)
#endif
        for (int i = 4; i < 1024; i++) /* sluiced's, none the spawner's */
            close(i);
    s.fd = 3;
    s.user = u;
    prctl(PR_SET_NAME, "sluice-spawner", 0L, 0L, 0L);
    prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
    if ((sfd = signals_prepare()) < 0)
        _exit(1);
    for (;;) {
        p[0] = (struct pollfd){s.fd, POLLIN, 0};
        p[1] = (struct pollfd){sfd, POLLIN, 0};
        if (poll(p, 2, -1) < 0)
            continue;
        if (p[1].revents) {
            while (read(sfd, &si, sizeof(si)) > 0)
                ;
            reap(&s);
        }
        if (p[0].revents && receive(&s) == 0)
            end_all(&s, sfd);
    }
}
