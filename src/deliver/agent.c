/*
 * NAME
 *	agent 3 - an external agent: its process and the job it runs
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	void	agent_job_start(struct deliver_session *s)
 *	void	agent_job_cancel(struct deliver_session *s)
 *	void	agent_end(struct agent *a, int term)
 * DESCRIPTION
 *	agent_job_start() is deliver_start() for a request of the agent
 *	type (deliver.h): it takes an idle agent from the pool of the
 *	request's cache under its cache_key, or starts one, unless an
 *	agent under that key failed less than agent.restart_ms ago; it
 *	feeds the job once the agent has said #hungry, reads one result
 *	per recipient and, at the next #hungry, finishes the session and
 *	puts the agent back in the pool for agent.idle_ms.
 *
 *	Starting (decisions 131 and 134): the pool's spawner (spawner.c),
 *	a process that stayed root, forks and executes argv[0] with argv,
 *	never a shell, as agent_user, with the three pipes made here as
 *	its standard input, output and error; it signals the agent when
 *	asked and reports its exit. The environment is fixed:
 *	PATH=/usr/local/bin:/usr/bin:/bin, HOME=/, SLUICE_PROTOCOL=hungry
 *	and SLUICE_CHANNEL, nothing inherited. A failed exec or a refused
 *	agent_user comes back as the spawner's answer, so that the
 *	delivery gets the reason at once.

 *	The pipes are non-blocking bufferevents on the loop. Standard
 *	output is read in lines (LF), each at most agent.line_limit bytes
 *	and all of a job's at most agent.output_limit; standard error is
 *	logged, each line cut at 200 bytes and controls shown as "?", at
 *	most 20 lines per job.
 *
 *	Failure (decision 132): an agent that exits or closes a pipe, is
 *	still at its job when agent.time_limit_ms is up (counted from the
 *	job's start), passes a limit, writes a line hungry_parse()
 *	refuses, answers a recipient twice, says #hungry with recipients
 *	unanswered, or writes anything while idle is killed (SIGKILL, its
 *	process group too) and handed to the pool to be reaped; the
 *	recipients it had not answered are deferred with dsn 4.3.0 and the
 *	reason ("agent mdir[1234] failed: ..."), hop_ok 0, and no agent
 *	starts under its key for agent.restart_ms. One that exits while
 *	idle has simply ended.
 *
 *	agent_job_cancel() abandons a session's job (daemon shutdown): its
 *	agent is killed. agent_end() ends an agent: its pipes closed, its
 *	timer gone, term 1 sends SIGTERM (an idle agent told to go), 2
 *	SIGKILL, 0 nothing (it is going), and the pool reaps it.
 */

#define _GNU_SOURCE /* pipe2() */

#include "deliver/agent_impl.h"
#include "deliver/smtp_impl.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define STDERR_LINES 20
#define STDERR_SHOWN 200
#define ENV_MAX      8

static int pipe_pair(int fds[2])
{
    return pipe2(fds, O_CLOEXEC);
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0)
            close(fds[i]);
}

static struct bufferevent *pipe_event(struct event_base *base, int fd)
{
    evutil_make_socket_nonblocking(fd);
    return bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
}

static void out_read_cb(struct bufferevent *bev, void *arg);
static void err_read_cb(struct bufferevent *bev, void *arg);
static void pipe_event_cb(struct bufferevent *bev, short what, void *arg);
static void timer_cb(evutil_socket_t fd, short what, void *arg);

/* The parent's side of a started child. */
static struct agent *agent_make(struct agent_pool *p,
                                const struct deliver_request *req,
                                const char *key, pid_t pid, int in, int out,
                                int err)
{
    struct agent *a = xcalloc(1, sizeof(*a));
    struct event_base *base = agent_pool_base(p);
    size_t n = 0;

    while (req->agent.argv[n])
        n++;
    a->argv = xcalloc(n + 1, sizeof(*a->argv));
    for (size_t i = 0; i < n; i++)
        a->argv[i] = xstrdup(req->agent.argv[i]);
    a->key = xstrdup(key);
    a->channel = xstrdup(req->agent.channel ? req->agent.channel : "agent");
    a->pid = pid;
    a->in = pipe_event(base, in);
    a->out = pipe_event(base, out);
    a->err = pipe_event(base, err);
    a->timer = evtimer_new(base, timer_cb, a);
    if (a->in == NULL || a->out == NULL || a->err == NULL || a->timer == NULL)
        util_panic("agent: cannot make its events");
    bufferevent_setcb(a->in, NULL, NULL, pipe_event_cb, a);
    bufferevent_setcb(a->out, out_read_cb, NULL, pipe_event_cb, a);
    bufferevent_setcb(a->err, err_read_cb, NULL, pipe_event_cb, a);
    bufferevent_setwatermark(a->out, EV_READ, 0, req->agent.line_limit + 1);
    bufferevent_enable(a->in, EV_WRITE);
    bufferevent_enable(a->out, EV_READ);
    bufferevent_enable(a->err, EV_READ);
    a->state = AGENT_STARTING;
    agent_pool_add(p, a);
    return a;
}

/* The request's program started by the spawner; NULL with why. */
static struct agent *agent_spawn(struct agent_pool *p,
                                 const struct deliver_request *req,
                                 const char *key, char *why, size_t whylen)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    char chan[128],
        *env[ENV_MAX] = {"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/",
                         "SLUICE_PROTOCOL=hungry", chan, NULL};
    struct deliver_spawner *sp;
    pid_t pid;
    int rc;

    snprintf(chan, sizeof(chan), "SLUICE_CHANNEL=%s",
             req->agent.channel ? req->agent.channel : "");
    if ((sp = agent_pool_spawner(p, req->agent.user, why, whylen)) == NULL)
        return NULL;
    if (pipe_pair(in) < 0 || pipe_pair(out) < 0 || pipe_pair(err) < 0) {
        snprintf(why, whylen, "cannot start %s: %s", req->agent.argv[0],
                 strerror(errno));
        close_all(in, 2), close_all(out, 2), close_all(err, 2);
        return NULL;
    }
    rc = spawner_spawn(sp, req->agent.argv, env,
                       (int[3]){in[0], out[1], err[1]}, &pid, why, whylen);
    close(in[0]), close(out[1]), close(err[1]);
    if (rc < 0) {
        close(in[1]), close(out[0]), close(err[0]);
        return NULL;
    }
    return agent_make(p, req, key, pid, in[1], out[0], err[0]);
}

/* One recipient's answer, once. */
static void rcpt_answer(struct deliver_session *s, size_t i,
                        enum deliver_status st, const char *dsn,
                        const char *text, size_t len)
{
    struct deliver_rcpt_result *r = &s->res->rcpt[i];

    s->decided[i] = 1;
    r->status = st;
    r->code = 0;
    snprintf(r->enhanced, sizeof(r->enhanced), "%s", dsn);
    free(r->text);
    r->text = xstrndup(text, len);
}

/* The session ends: every recipient is decided. */
static void job_finish(struct agent *a, int hop_ok, const char *reason)
{
    struct deliver_session *s = a->job;

    a->job = NULL;
    s->agent = NULL;
    s->res->hop_ok = hop_ok;
    if (!hop_ok) {
        free(s->res->hop_reason);
        s->res->hop_reason = xstrdup(reason);
        for (size_t i = 0; i < s->req.nrcpt; i++)
            if (!s->decided[i])
                rcpt_answer(s, i, DELIVER_DEFER, "4.3.0", reason,
                            strlen(reason));
    }
    if (s->handshake_us == 0) /* never fed: no job time (d of delays=) */
        s->handshake_us = util_clock_mono_us();
    s->handshake_ok = 1;
    s->uses = a->jobs;
    connection_finish(s);
}

/* How the process ended, if it has: a few ms for one that just did. */
static void exit_reason(struct agent *a, char *buf, size_t len)
{
    int st = a->status;

    if (!a->reaped && agent_pool_exit_wait(a->pool, a->pid, 20, &st))
        a->reaped = 1; /* nothing to kill or wait for */
    if (!a->reaped)
        return;
    if (WIFSIGNALED(st))
        snprintf(buf, len, "killed by signal %d", WTERMSIG(st));
    else
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
}

static void agent_fail(struct agent *a, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void err_lines(struct agent *a, struct evbuffer *in, int all);

/*
 * What it wrote on stderr before failing, logged before it goes: the
 * pipe may hold it still when its output's failure comes first. (A
 * bufferevent's input takes no data but its own reads: a buffer of our
 * own.)
 */
static void err_drain(struct agent *a)
{
    struct evbuffer *in;
    evutil_socket_t fd;

    if (a->err == NULL || (fd = bufferevent_getfd(a->err)) < 0 ||
        (in = evbuffer_new()) == NULL)
        return;
    evbuffer_add_buffer(in, bufferevent_get_input(a->err));
    for (int i = 0; i < 4 && evbuffer_read(in, fd, 4096) > 0; i++)
        ;
    err_lines(a, in, 1);
    evbuffer_free(in);
}

static void agent_fail(struct agent *a, const char *fmt, ...)
{
    char what[600], reason[800];
    long pid = a->pid;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    err_drain(a);
    snprintf(reason, sizeof(reason), "agent %s[%ld] failed: %s", a->channel,
             pid, what);
    agent_pool_log(a->pool, 1, a->channel, "agent pid %ld failed%s: %s", pid,
                   a->job ? " while delivering" : "", what);
    agent_pool_counted(a->pool, a->channel, 0);
    if (a->job) {
        agent_pool_failed(a->pool, a->key, a->job->req.agent.restart_ms);
        job_finish(a, 0, reason);
    }
    agent_end(a, 2);
}

/* An end of file or error on a pipe. */
static void agent_gone(struct agent *a, const char *pipe)
{
    char how[80];

    snprintf(how, sizeof(how), "closed its %s", pipe);
    exit_reason(a, how, sizeof(how));
    if (a->state == AGENT_IDLE) {
        agent_pool_log(a->pool, 0, a->channel,
                       "agent pid %ld ended while idle: %s", (long)a->pid, how);
        agent_end(a, 0);
        return;
    }
    agent_fail(a, "%s", how);
}

/* Feed the job: the line, then the content. */
static void job_feed(struct agent *a)
{
    struct deliver_session *s = a->job;
    const struct util_blob *body = s->req.body;
    struct util_buf content = UTIL_BUF_INIT, line = UTIL_BUF_INIT;

    hungry_content(&content, util_blob_data(body), util_blob_len(body));
    hungry_job(&line, s->req.queue_id ? s->req.queue_id : "-", content.len,
               s->req.sender, s->req.rcpt, s->req.nrcpt);
    bufferevent_write(a->in, line.data, line.len);
    if (content.len > 0)
        bufferevent_write(a->in, content.data, content.len);
    util_buf_free(&line);
    util_buf_free(&content);
    a->hungry = 0;
    a->state = AGENT_BUSY;
    s->handshake_us = util_clock_mono_us(); /* c of delays=: until fed */
}

static void job_arm(struct agent *a, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    evtimer_add(a->timer, &tv);
}

/* #hungry: ready for its first job, or done with one; -1: failed. */
static int agent_ready(struct agent *a)
{
    struct deliver_session *s = a->job;
    int idle_ms;

    if (a->state == AGENT_STARTING) {
        a->hungry = 1;
        if (s != NULL)
            job_feed(a);
        return 0;
    }
    if (a->state != AGENT_BUSY) {
        agent_fail(a, "said #hungry while idle");
        return -1;
    }
    if (a->answered < s->req.nrcpt) {
        agent_fail(a, "said #hungry with %zu of %zu recipients unanswered",
                   s->req.nrcpt - a->answered, s->req.nrcpt);
        return -1;
    }
    idle_ms = s->req.agent.idle_ms;
    job_finish(a, 1, NULL);
    a->state = AGENT_IDLE;
    a->hungry = 1;
    a->err_lines = 0;
    agent_pool_put(a->pool, a);
    job_arm(a, idle_ms);
    return 0;
}

/* A line the printable way, for the log and reasons. */
static void shown(char *buf, size_t size, const char *line, size_t len)
{
    size_t n = len < size - 1 ? len : size - 1;

    for (size_t i = 0; i < n; i++)
        buf[i] =
            (unsigned char)line[i] < 0x20 || line[i] == 0x7f ? '?' : line[i];
    buf[n] = 0;
}

static const char *default_text(enum deliver_status st)
{
    return st == DELIVER_OK      ? "delivered"
           : st == DELIVER_DEFER ? "deferred by the agent"
                                 : "bounced by the agent";
}

/* One line of its output; -1: the agent failed and is gone. */
static int agent_line(struct agent *a, const char *line, size_t len)
{
    struct deliver_session *s = a->job;
    size_t nrcpt = a->state == AGENT_BUSY ? s->req.nrcpt : 0;
    struct hungry_line h;
    char why[160], seen[80];

    if (hungry_parse(line, len, nrcpt, &h, why, sizeof(why)) < 0) {
        shown(seen, sizeof(seen), line, len);
        agent_fail(a, "protocol error: %s: \"%s\"", why, seen);
        return -1;
    }
    if (h.kind == HUNGRY_LINE_READY)
        return agent_ready(a);
    if (s->decided[h.index]) {
        agent_fail(a, "protocol error: recipient %zu answered twice",
                   h.index + 1);
        return -1;
    }
    if (h.textlen == 0) {
        h.text = default_text(h.status);
        h.textlen = strlen(h.text);
    }
    rcpt_answer(s, h.index, h.status, h.enhanced, h.text, h.textlen);
    a->answered++;
    return 0;
}

/* A line over its limits; -1: the agent failed and is gone. */
static int line_limits(struct agent *a, size_t len)
{
    const struct deliver_agent *p = &a->job->req.agent;

    a->output += len + 1;
    if (len > p->line_limit) {
        agent_fail(a, "a line longer than %zu bytes", p->line_limit);
        return -1;
    }
    if (a->output > p->output_limit) {
        agent_fail(a, "more than %zu bytes of output for one job",
                   p->output_limit);
        return -1;
    }
    return 0;
}

static void out_read_cb(struct bufferevent *bev, void *arg)
{
    struct agent *a = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    char *line;
    size_t len;
    int rc;

    while (a->state != AGENT_IDLE &&
           (line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL) {
        rc = line_limits(a, len);
        if (rc == 0)
            rc = agent_line(a, line, len);
        free(line);
        if (rc < 0)
            return; /* a is gone */
    }
    if (evbuffer_get_length(in) == 0)
        return;
    if (a->state == AGENT_IDLE)
        agent_fail(a, "wrote while idle");
    else if (evbuffer_get_length(in) > a->job->req.agent.line_limit)
        agent_fail(a, "a line longer than %zu bytes",
                   a->job->req.agent.line_limit);
}

/* Log the lines of in; with all, a last one without its newline too. */
static void err_lines(struct agent *a, struct evbuffer *in, int all)
{
    char *line, text[STDERR_SHOWN + 1];
    size_t len;

    while ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) != NULL ||
           evbuffer_get_length(in) > (all ? 0 : 4 * STDERR_SHOWN)) {
        if (line == NULL) { /* no newline in sight: what there is */
            len = evbuffer_get_length(in);
            line = xmalloc(len + 1);
            evbuffer_remove(in, line, len);
        }
        shown(text, sizeof(text), line, len);
        free(line);
        if (a->err_lines++ < STDERR_LINES)
            agent_pool_log(a->pool, 1, a->channel, "agent pid %ld: stderr: %s",
                           (long)a->pid, text);
        else if (a->err_lines == STDERR_LINES + 1)
            agent_pool_log(a->pool, 1, a->channel,
                           "agent pid %ld: stderr: more lines dropped",
                           (long)a->pid);
    }
}

static void err_read_cb(struct bufferevent *bev, void *arg)
{
    err_lines(arg, bufferevent_get_input(bev), 0);
}

static void pipe_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct agent *a = arg;

    (void)what;
    if (bev == a->err) { /* its stderr closed: nothing more to log */
        bufferevent_free(a->err);
        a->err = NULL;
        return;
    }
    agent_gone(a, bev == a->in ? "input" : "output");
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    struct agent *a = arg;

    (void)fd;
    (void)what;
    if (a->state == AGENT_IDLE) {
        agent_pool_log(a->pool, 0, a->channel,
                       "agent pid %ld ended after idlemax", (long)a->pid);
        agent_end(a, 1);
        return;
    }
    agent_fail(a, "still at its job after the time limit of %d ms",
               a->job ? a->job->req.agent.time_limit_ms : 0);
}

void agent_end(struct agent *a, int term)
{
    struct agent_pool *p = a->pool;

    if (a->job != NULL) /* a session must not keep a freed agent */
        a->job->agent = NULL;
    agent_pool_remove(p, a);
    if (a->in)
        bufferevent_free(a->in); /* an end of file for its input */
    if (a->out)
        bufferevent_free(a->out);
    if (a->err)
        bufferevent_free(a->err);
    if (a->timer)
        event_free(a->timer);
    if (!a->reaped) {
        if (term > 0) {
            int sig = term == 2 ? SIGKILL : SIGTERM;

            agent_pool_kill(p, a->pid, sig);
        }
        agent_pool_reap(p, a->pid, a->channel, term == 2 ? -1 : term);
    }
    for (size_t i = 0; a->argv[i]; i++)
        free(a->argv[i]);
    free(a->argv);
    free(a->key);
    free(a->channel);
    free(a);
}

/* Every recipient deferred without an agent. */
static void job_refuse(struct deliver_session *s, const char *reason)
{
    struct agent none = {0};

    none.job = s;
    none.jobs = 0;
    job_finish(&none, 0, reason);
}

void agent_job_start(struct deliver_session *s)
{
    const struct deliver_request *req = &s->req;
    struct agent_pool *p =
        req->cache ? deliver_cache_agent_pool(req->cache) : NULL;
    const char *key = req->cache_key ? req->cache_key : req->agent.channel;
    char why[600], reason[700];
    struct agent *a;

    snprintf(s->res->relay, sizeof(s->res->relay), "%s",
             req->agent.channel ? req->agent.channel : "agent");
    if (p == NULL || req->agent.argv == NULL || req->agent.argv[0] == NULL) {
        job_refuse(s, "no agent program for this delivery");
        return;
    }
    if ((a = agent_pool_take(p, key, req->agent.argv)) == NULL) {
        if (agent_pool_wait(p, key)) {
            snprintf(reason, sizeof(reason),
                     "agent %s failed recently: another starts after "
                     "agent_restart_delay",
                     req->agent.channel);
            job_refuse(s, reason);
            return;
        }
        if ((a = agent_spawn(p, req, key, why, sizeof(why))) == NULL) {
            agent_pool_log(p, 1, req->agent.channel, "agent not started: %s",
                           why);
            agent_pool_counted(p, req->agent.channel, 0);
            agent_pool_failed(p, key, req->agent.restart_ms);
            job_refuse(s, why);
            return;
        }
        agent_pool_log(p, 0, req->agent.channel, "agent started: pid %ld: %s",
                       (long)a->pid, req->agent.argv[0]);
        agent_pool_counted(p, req->agent.channel, 1);
    }
    evtimer_del(a->timer);
    a->job = s;
    s->agent = a;
    a->jobs++;
    a->answered = 0;
    a->output = 0;
    a->err_lines = 0;
    job_arm(a, req->agent.time_limit_ms);
    if (a->hungry) {
        a->state = AGENT_STARTING; /* it said #hungry: feed at once */
        job_feed(a);
    }
}

void agent_job_cancel(struct deliver_session *s)
{
    struct agent *a = s->agent;

    if (a == NULL)
        return;
    a->job = NULL;
    s->agent = NULL;
    agent_end(a, 2);
}
