/*
 * NAME
 *	pool 3 - the external agents of one cache: idle ones, failures,
 *	exits
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	struct agent_pool *agent_pool_create(struct event_base *base)
 *	void	agent_pool_free(struct agent_pool *p)
 *	void	agent_pool_log_set(struct agent_pool *p,
 *			deliver_agent_log_fn *fn, void *ctx)
 *	void	agent_pool_log(struct agent_pool *p, int warning,
 *			const char *channel, const char *fmt, ...)
 *	void	agent_pool_add(struct agent_pool *p, struct agent *a)
 *	void	agent_pool_remove(struct agent_pool *p, struct agent *a)
 *	struct agent *agent_pool_take(struct agent_pool *p, const char *key,
 *			char *const *argv)
 *	void	agent_pool_put(struct agent_pool *p, struct agent *a)
 *	void	agent_pool_drop(struct agent_pool *p, const char *key,
 *			size_t keep)
 *	int	agent_pool_wait(struct agent_pool *p, const char *key)
 *	void	agent_pool_failed(struct agent_pool *p, const char *key,
 *			int restart_ms)
 *	void	agent_pool_reap(struct agent_pool *p, pid_t pid,
 *			const char *channel, int term)
 *	size_t	agent_pool_count(const struct agent_pool *p)
 *	void	agent_pool_counted(struct agent_pool *p, const char *channel,
 *			int started)
 *	size_t	agent_pool_stats(const struct agent_pool *p,
 *			struct deliver_agent_stats *out, size_t max)
 *	struct event_base *agent_pool_base(const struct agent_pool *p)
 *	void	agent_pool_spawner_set(struct agent_pool *p,
 *			struct deliver_spawner *sp)
 *	struct deliver_spawner *agent_pool_spawner(struct agent_pool *p,
 *			const char *user, char *why, size_t whylen)
 *	void	agent_pool_kill(struct agent_pool *p, pid_t pid, int sig)
 *	int	agent_pool_exit_wait(struct agent_pool *p, pid_t pid,
 *			int ms, int *status)
 * DESCRIPTION
 *	A pool holds every agent its cache's deliveries started
 *	(agent_pool_add(), agent_pool_remove()), busy or idle; the idle
 *	ones are ZMailer's "thread-ring idle pool" under the postfix
 *	scheduler: a delivery takes one (agent_pool_take()) kept under
 *	its request's cache_key and started with the same argv, the most
 *	recently idle first, so that the oldest are those that reach
 *	idlemax (decision 115's rule); an agent whose key matches but
 *	whose argv differs (the rules changed at a reload) is ended.
 *	agent_pool_put() puts one back, at the head. agent_pool_drop()
 *	ends the idle agents under key but the keep most recently idle
 *	(deliver_cache_trim(): ZMailer's driver ends an agent of its own
 *	so).
 *
 *	agent_pool_failed() remembers that an agent under key failed:
 *	agent_pool_wait() says for restart_ms afterwards that no new one
 *	should start for it (decision 132).
 *
 *	The agents are the spawner's children, not sluiced's (spawner.c,
 *	decision 134): the pool owns the spawner it was given
 *	(agent_pool_spawner_set()) or forks its own at the first agent
 *	(agent_pool_spawner(), as whatever user the process is), signals
 *	through it (agent_pool_kill()) and hears every exit from it. A
 *	lost spawner is logged; its agents die with it (the kernel kills
 *	them) and come to sluiced, a child subreaper, to be reaped on the
 *	pool's timer for a few seconds. agent_pool_spawner() then forks a
 *	new one when spawner_restartable() allows, and otherwise says why
 *	not: agent deliveries are deferred until sluiced restarts.
 *
 *	agent_pool_reap() takes over a process that has been told to end
 *	(term 1: SIGTERM sent, SIGKILL after five seconds; term 0: it is
 *	ending on its own; -1: SIGKILL sent) until the spawner reports its
 *	exit, logging how it ended, so that no agent is left a zombie. An
 *	exit reported for a running agent marks it reaped, its status kept
 *	for agent.c's reason; agent_pool_exit_wait() waits up to ms for
 *	one (1 with status). agent_pool_free() ends every agent, waits for
 *	each (a second, then SIGKILL) and frees the spawner, which ends
 *	what is left and exits.
 *
 *	agent_pool_counted() counts an agent started (started 1) or failed
 *	(0) under its channel; agent_pool_stats() gives each channel's
 *	counts with its agents at a job or starting and idle, for the
 *	status and the metrics.
 *
 *	agent_pool_log() writes a line through the function
 *	agent_pool_log_set() gave, or nowhere.
 */

#include "deliver/agent_impl.h"

#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define REAP_TICK_MS  100
#define ORPHAN_US     (3 * 1000000LL)
#define TERM_GRACE_US (5 * 1000000LL)
#define FREE_GRACE_US (1 * 1000000LL)
#define CHANNEL_MAX   64

struct failure {
    char *key;
    int64_t until_us; /* monotonic */
};

struct exiting {
    pid_t pid;
    char channel[CHANNEL_MAX];
    int64_t since_us;
    int term;   /* SIGTERM sent: SIGKILL after the grace */
    int killed; /* SIGKILL asked for */
};

struct counts {
    char *channel;
    uint64_t started, failed;
};

struct agent_pool {
    struct event_base *base;
    deliver_agent_log_fn *log;
    void *log_ctx;
    TAILQ_HEAD(, agent) agents; /* the idle ones first, latest first */
    size_t count;
    struct failure *failures;
    size_t nfailures;
    struct exiting *exiting;
    size_t nexiting;
    struct event *reap_ev;
    struct deliver_spawner *spawner; /* NULL until the first agent */
    int64_t orphans_until;           /* a lost spawner's agents: reap them */
    struct counts *counts;           /* per channel: few, the transports */
    size_t ncounts;
};

static void reap_cb(evutil_socket_t fd, short what, void *arg);

struct agent_pool *agent_pool_create(struct event_base *base)
{
    struct agent_pool *p = xcalloc(1, sizeof(*p));

    p->base = base;
    TAILQ_INIT(&p->agents);
    p->reap_ev = evtimer_new(base, reap_cb, p);
    if (p->reap_ev == NULL)
        util_panic("agent pool: cannot make a timer");
    return p;
}

struct event_base *agent_pool_base(const struct agent_pool *p)
{
    return p->base;
}

void agent_pool_log_set(struct agent_pool *p, deliver_agent_log_fn *fn,
                        void *ctx)
{
    p->log = fn;
    p->log_ctx = ctx;
}

void agent_pool_log(struct agent_pool *p, int warning, const char *channel,
                    const char *fmt, ...)
{
    char text[1024];
    va_list ap;

    if (p->log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    p->log(p->log_ctx, warning, channel, text);
}

void agent_pool_add(struct agent_pool *p, struct agent *a)
{
    a->pool = p;
    TAILQ_INSERT_TAIL(&p->agents, a, link);
    p->count++;
}

void agent_pool_remove(struct agent_pool *p, struct agent *a)
{
    TAILQ_REMOVE(&p->agents, a, link);
    p->count--;
}

size_t agent_pool_count(const struct agent_pool *p)
{
    return p->count;
}

void agent_pool_counted(struct agent_pool *p, const char *channel, int started)
{
    size_t i;

    for (i = 0; i < p->ncounts; i++)
        if (strcmp(p->counts[i].channel, channel) == 0)
            break;
    if (i == p->ncounts) {
        p->counts = xrealloc(p->counts, (i + 1) * sizeof(*p->counts));
        memset(p->counts + i, 0, sizeof(*p->counts));
        p->counts[p->ncounts++].channel = xstrdup(channel);
    }
    if (started)
        p->counts[i].started++;
    else
        p->counts[i].failed++;
}

size_t agent_pool_stats(const struct agent_pool *p,
                        struct deliver_agent_stats *out, size_t max)
{
    size_t n = p->ncounts < max ? p->ncounts : max;
    const struct agent *a;

    for (size_t i = 0; i < n; i++) {
        memset(out + i, 0, sizeof(*out));
        out[i].channel = p->counts[i].channel;
        out[i].started = p->counts[i].started;
        out[i].failed = p->counts[i].failed;
        TAILQ_FOREACH(a, &p->agents, link)
            if (strcmp(a->channel, out[i].channel) == 0) {
                if (a->state == AGENT_IDLE)
                    out[i].idle++;
                else
                    out[i].running++;
            }
    }
    return n;
}

static int argv_same(char *const *a, char *const *b)
{
    size_t i;

    for (i = 0; a[i] && b[i]; i++)
        if (strcmp(a[i], b[i]) != 0)
            return 0;
    return a[i] == NULL && b[i] == NULL;
}

struct agent *agent_pool_take(struct agent_pool *p, const char *key,
                              char *const *argv)
{
    struct agent *a, *next;

    for (a = TAILQ_FIRST(&p->agents); a; a = next) {
        next = TAILQ_NEXT(a, link);
        if (a->state != AGENT_IDLE || strcmp(a->key, key) != 0)
            continue;
        if (argv_same(a->argv, argv))
            return a;
        agent_pool_log(p, 0, a->channel,
                       "agent pid %ld ended: its command changed",
                       (long)a->pid);
        agent_end(a, 1);
    }
    return NULL;
}

void agent_pool_put(struct agent_pool *p, struct agent *a)
{
    TAILQ_REMOVE(&p->agents, a, link);
    TAILQ_INSERT_HEAD(&p->agents, a, link);
}

void agent_pool_drop(struct agent_pool *p, const char *key, size_t keep)
{
    struct agent *a, *next;
    size_t seen = 0;

    for (a = TAILQ_FIRST(&p->agents); a; a = next) {
        next = TAILQ_NEXT(a, link);
        if (a->state == AGENT_IDLE && strcmp(a->key, key) == 0 &&
            ++seen > keep) {
            agent_pool_log(p, 0, a->channel, "agent pid %ld ended: dropped",
                           (long)a->pid);
            agent_end(a, 1);
        }
    }
}

/* The failures whose time is up are forgotten. */
static void failures_expire(struct agent_pool *p, int64_t now)
{
    size_t k = 0;

    for (size_t i = 0; i < p->nfailures; i++) {
        if (p->failures[i].until_us > now)
            p->failures[k++] = p->failures[i];
        else
            free(p->failures[i].key);
    }
    p->nfailures = k;
}

int agent_pool_wait(struct agent_pool *p, const char *key)
{
    failures_expire(p, util_clock_mono_us());
    for (size_t i = 0; i < p->nfailures; i++)
        if (strcmp(p->failures[i].key, key) == 0)
            return 1;
    return 0;
}

void agent_pool_failed(struct agent_pool *p, const char *key, int restart_ms)
{
    int64_t until = util_clock_mono_us() + (int64_t)restart_ms * 1000;

    if (restart_ms <= 0)
        return;
    for (size_t i = 0; i < p->nfailures; i++)
        if (strcmp(p->failures[i].key, key) == 0) {
            p->failures[i].until_us = until;
            return;
        }
    p->failures =
        xrealloc(p->failures, (p->nfailures + 1) * sizeof(*p->failures));
    p->failures[p->nfailures].key = xstrdup(key);
    p->failures[p->nfailures++].until_us = until;
}

/* How a process ended, for the log. */
static void exit_log(struct agent_pool *p, const struct exiting *x, int st)
{
    if (WIFSIGNALED(st))
        agent_pool_log(p, WTERMSIG(st) != SIGTERM, x->channel,
                       "agent pid %ld killed by signal %d", (long)x->pid,
                       WTERMSIG(st));
    else
        agent_pool_log(p, WEXITSTATUS(st) != 0, x->channel,
                       "agent pid %ld exited with status %d", (long)x->pid,
                       WEXITSTATUS(st));
}

/* SIGKILL what outstayed its grace; what a lost spawner left, reaped. */
static void reap_some(struct agent_pool *p, int64_t grace_us)
{
    int64_t now = util_clock_mono_us();

    for (size_t i = 0; i < p->nexiting; i++) {
        struct exiting *x = p->exiting + i;

        if (!x->killed && now - x->since_us > grace_us) {
            agent_pool_kill(p, x->pid, SIGKILL);
            x->killed = 1;
        }
    }
    if (p->orphans_until > now)
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
}

/* The spawner reaped pid: a running agent, or one told to end. */
static void exit_cb(void *ctx, pid_t pid, int status)
{
    struct agent_pool *p = ctx;
    struct agent *a;

    TAILQ_FOREACH(a, &p->agents, link)
        if (a->pid == pid) {
            a->reaped = 1;
            a->status = status;
            return;
        }
    for (size_t i = 0; i < p->nexiting; i++)
        if (p->exiting[i].pid == pid) {
            exit_log(p, p->exiting + i, status);
            p->exiting[i] = p->exiting[--p->nexiting];
            return;
        }
}

static void reap_arm(struct agent_pool *p);

static void lost_cb(void *ctx, pid_t pid, int status)
{
    struct agent_pool *p = ctx;
    char how[64] = "its status unknown";

    if (status != -1 && WIFSIGNALED(status))
        snprintf(how, sizeof(how), "killed by signal %d", WTERMSIG(status));
    else if (status != -1)
        snprintf(how, sizeof(how), "exited with status %d",
                 WEXITSTATUS(status));
    agent_pool_log(p, 1, "agent", "agent spawner pid %ld ended (%s): %s",
                   (long)pid, how,
                   spawner_restartable(p->spawner)
                       ? "its agents are killed; a new spawner starts with "
                         "the next agent"
                       : "its agents are killed; agent deliveries are "
                         "deferred until sluiced restarts");
    p->nexiting = 0; /* the kernel killed them: orphans now */
    p->orphans_until = util_clock_mono_us() + ORPHAN_US;
    reap_arm(p);
}

void agent_pool_spawner_set(struct agent_pool *p, struct deliver_spawner *sp)
{
    if (p->spawner != NULL && p->spawner != sp)
        deliver_spawner_free(p->spawner);
    p->spawner = sp;
    if (sp != NULL)
        spawner_attach(sp, p->base, exit_cb, lost_cb, p);
}

struct deliver_spawner *agent_pool_spawner(struct agent_pool *p,
                                           const char *user, char *why,
                                           size_t whylen)
{
    struct deliver_spawner *sp = p->spawner;

    if (sp != NULL && !spawner_lost(sp))
        return sp;
    if (sp != NULL && !spawner_restartable(sp)) {
        snprintf(why, whylen,
                 "the agent spawner is gone: agents start again when "
                 "sluiced restarts");
        return NULL;
    }
    sp = sp ? spawner_restart(sp, why, whylen)
            : deliver_spawner_start(user, NULL, why, whylen);
    p->spawner = NULL;
    if (sp == NULL)
        return NULL;
    agent_pool_spawner_set(p, sp);
    agent_pool_log(p, 0, "agent", "agent spawner started: pid %ld",
                   (long)spawner_pid(sp));
    return sp;
}

void agent_pool_kill(struct agent_pool *p, pid_t pid, int sig)
{
    if (p->spawner != NULL)
        (void)spawner_kill(p->spawner, pid, sig);
}

int agent_pool_exit_wait(struct agent_pool *p, pid_t pid, int ms, int *status)
{
    return p->spawner != NULL && spawner_wait(p->spawner, pid, ms, status);
}

static void reap_arm(struct agent_pool *p)
{
    struct timeval tv = {0, REAP_TICK_MS * 1000};

    if (p->nexiting > 0 || p->orphans_until > util_clock_mono_us())
        evtimer_add(p->reap_ev, &tv);
}

static void reap_cb(evutil_socket_t fd, short what, void *arg)
{
    struct agent_pool *p = arg;

    (void)fd;
    (void)what;
    reap_some(p, TERM_GRACE_US);
    reap_arm(p);
}

void agent_pool_reap(struct agent_pool *p, pid_t pid, const char *channel,
                     int term)
{
    struct exiting *x;

    p->exiting = xrealloc(p->exiting, (p->nexiting + 1) * sizeof(*x));
    x = p->exiting + p->nexiting++;
    memset(x, 0, sizeof(*x));
    x->pid = pid;
    snprintf(x->channel, sizeof(x->channel), "%s", channel);
    x->since_us = util_clock_mono_us();
    x->term = term > 0;
    reap_arm(p);
}

void agent_pool_free(struct agent_pool *p)
{
    struct agent *a;
    int64_t start = util_clock_mono_us();

    if (p == NULL)
        return;
    while ((a = TAILQ_FIRST(&p->agents)) != NULL)
        agent_end(a, 1);
    /* a second for the SIGTERM, then SIGKILL, and a wait for each */
    while (p->nexiting > 0 && p->spawner != NULL && !spawner_lost(p->spawner) &&
           util_clock_mono_us() - start < FREE_GRACE_US)
        spawner_pump(p->spawner, REAP_TICK_MS);
    for (size_t i = 0; i < p->nexiting; i++)
        agent_pool_kill(p, p->exiting[i].pid, SIGKILL);
    deliver_spawner_free(p->spawner); /* it waits for what is left */
    for (size_t i = 0; i < p->nfailures; i++)
        free(p->failures[i].key);
    free(p->failures);
    for (size_t i = 0; i < p->ncounts; i++)
        free(p->counts[i].channel);
    free(p->counts);
    free(p->exiting);
    event_free(p->reap_ev);
    free(p);
}
