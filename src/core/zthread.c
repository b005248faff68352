/*
 * NAME
 *	zthread 3 - ZMailer's threads, thread-rings and idle agents
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core_zsched *core_zsched_create(int maxta,
 *			core_time_t limit_delay,
 *			unsigned (*rand)(void *ctx, unsigned n), void *rand_ctx)
 *	void	core_zsched_free(struct core_zsched *z)
 *	void	core_zsched_vertex_add(struct core_zsched *z,
 *			const struct core_zrule *r, const char *channel,
 *			const char *host, uint64_t vertex, core_time_t wakeup,
 *			core_time_t age, core_time_t now,
 *			struct core_zstart_result *out)
 *	size_t	core_zsched_agenda(struct core_zsched *z, core_time_t now,
 *			struct core_zstart_result *out, size_t max)
 *	size_t	core_zsched_flush(struct core_zsched *z, const char *host,
 *			core_time_t now, struct core_zstart_result *out,
 *			size_t max)
 *	int	core_zsched_next_vertex(struct core_zsched *z, uint64_t agent,
 *			core_time_t now, uint64_t *vertex)
 *	void	core_zsched_vertex_done(struct core_zsched *z, uint64_t agent,
 *			uint64_t vertex, core_time_t retry)
 *	void	core_zsched_agent_gone(struct core_zsched *z, uint64_t agent,
 *			core_time_t now, core_time_t backoff)
 *	size_t	core_zsched_idle_expire(struct core_zsched *z,
 *			core_time_t now, uint64_t *ended, size_t max)
 *	core_time_t core_zsched_next_timer(const struct core_zsched *z)
 *	void	core_zsched_summary(const struct core_zsched *z,
 *			const char *channel, struct core_zsummary *s)
 *	int	core_zsched_agent_thread(const struct core_zsched *z,
 *			uint64_t agent, const char **channel,
 *			const char **host, core_time_t *idlemax)
 *	void	core_zsched_maxta_set(struct core_zsched *z, int maxta)
 * DESCRIPTION
 *	The seed's scheduler as data and decisions, with no I/O: time
 *	comes in as an argument, random numbers from the caller, and the
 *	agents are numbers the caller maps to its processes or sessions.
 *
 *	A vertex (one recipient of one message, the caller's number) is
 *	matched at arrival to the thread of its triplet (rule, channel,
 *	host) (core_zsched_vertex_add()); a new thread is made when there
 *	is none. A thread keeps its vertices in wake-up time order, and
 *	its wake-up time is its first vertex's. Threads belong to a
 *	thread-ring: all threads of the same rule and channel, or the
 *	thread alone when the rule's command has $host (per_host). A ring
 *	lives while it has threads or agents.
 *
 *	Adding a vertex tries to start its thread at once, unless the rule
 *	is queueonly: such a thread starts only through
 *	core_zsched_flush() (ETRN or "sluice flush" for its host), which
 *	starts every thread of the host whatever its wake-up time.
 *	core_zsched_agenda() is the seed's doagenda(): it tries to start
 *	every thread whose wake-up time has come.
 *
 *	Starting a thread: a thread with an agent is BUSY (one agent per
 *	thread at a time). Otherwise the most recently idled agent of the
 *	ring's idle pool takes it (REUSE: the warm one, so that the pool's
 *	oldest expire first); else, below the rule's maxring (agents of
 *	the ring, idle ones included) and maxta (agents overall), a NEW
 *	agent is started. At maxta with an idle agent in another ring, the
 *	one idle longest is ended to make room (its number in ended).
 *	Else the thread met a resource limit (LIMIT) and is rescheduled:
 *	its vertices wake no earlier than now + limit_delay; it is never
 *	dropped. A started thread's run order is fixed then: every vertex
 *	of the thread, shuffled (Fisher-Yates with the caller's rand(ctx,
 *	n), 0 <= result < n), or by age, oldest first, with ageorder.
 *
 *	core_zsched_next_vertex() is the seed's pick_next_vertex(): the
 *	next vertex of the agent's run (1 and *vertex), skipping vertices
 *	gone or rescheduled by a report in this run. When the run is over
 *	the agent takes another due thread of the same ring; when there is
 *	none it goes to the ring's idle pool (0).
 *
 *	core_zsched_vertex_done() is the agent's report on a vertex it was
 *	fed: retry < 0 removes it (delivered, or failed for good); else it
 *	is rescheduled at retry, in time order, and not fed again in this
 *	run. A thread left empty is deleted.
 *
 *	core_zsched_agent_gone() is the caller's word that an agent ended
 *	on its own (it crashed, hung and was killed, spoke garbage, exited
 *	mid-job): it is forgotten, and its thread, if it had one, is
 *	released with every vertex it holds waking no earlier than now +
 *	backoff, so that the thread restarts with a new agent after the
 *	backoff. Nothing leaves the thread: the vertices it was fed and did
 *	not report are still there (the caller defers them, never marks
 *	them delivered).
 *
 *	core_zsched_idle_expire() ends the idle agents whose rule's
 *	idlemax has passed, writing their numbers to ended (up to max);
 *	core_zsched_next_timer() is the earliest time something is due: a
 *	thread's wake-up (queueonly and running threads aside) or an idle
 *	agent's expiry, or CORE_TIME_NEVER.
 *
 *	core_zsched_summary() sums a channel's threads, rings, vertices
 *	and agents (running and idle), for an operator's view.
 *	core_zsched_agent_thread() names the channel and host of the
 *	thread an agent runs and its rule's idlemax (1), or says it runs
 *	none (0; both "", idlemax 0).
 *	core_zsched_maxta_set() changes maxta (a reload): agents above it
 *	are not ended, no new one starts until they are fewer.
 *
 *	Threads and rings are found by a walk of the rings: the daemon
 *	side, which has many, will want an index (see doc/decisions.md).
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

struct zvertex {
    uint64_t id;
    core_time_t wakeup;
    core_time_t age;
    int tried; /* fed or rescheduled in this run (the seed's "proc") */
};

struct zring;
struct zagent;

struct zthread {
    struct zring *ring;
    char *host;
    struct zvertex *v; /* in wake-up order */
    size_t nv, cap;
    uint64_t *run; /* this run's order */
    size_t nrun, runpos, runcap;
    struct zagent *agent;
    struct zthread *next;
};

struct zagent {
    uint64_t id;
    struct zring *ring;
    struct zthread *thread; /* NULL: idle (or between threads) */
    int idle;
    core_time_t idle_since;
    struct zagent *next;
};

struct zring {
    struct core_zrule rule;
    char *channel;
    char *host; /* per_host rings only */
    struct zthread *threads;
    int nthreads, nagents, nidle;
    struct zring *next;
};

struct core_zsched {
    int maxta;
    core_time_t limit_delay;
    unsigned (*rand)(void *ctx, unsigned n);
    void *rand_ctx;
    struct zring *rings;
    struct zagent *agents;
    int nagents;
    uint64_t last_agent;
};

struct core_zsched *core_zsched_create(int maxta, core_time_t limit_delay,
                                       unsigned (*rand)(void *ctx, unsigned n),
                                       void *rand_ctx)
{
    struct core_zsched *z = xcalloc(1, sizeof(*z));

    z->maxta = maxta;
    z->limit_delay = limit_delay;
    z->rand = rand;
    z->rand_ctx = rand_ctx;
    return z;
}

static void thread_free(struct zthread *t)
{
    free(t->host);
    free(t->v);
    free(t->run);
    free(t);
}

void core_zsched_free(struct core_zsched *z)
{
    if (z == NULL)
        return;
    while (z->agents) {
        struct zagent *a = z->agents;

        z->agents = a->next;
        free(a);
    }
    while (z->rings) {
        struct zring *r = z->rings;

        z->rings = r->next;
        while (r->threads) {
            struct zthread *t = r->threads;

            r->threads = t->next;
            thread_free(t);
        }
        free(r->channel);
        free(r->host);
        free(r);
    }
    free(z);
}

static int ring_is(const struct zring *r, int rule, const char *channel,
                   const char *host)
{
    return r->rule.index == rule && strcmp(r->channel, channel) == 0 &&
           (r->host == NULL || strcmp(r->host, host) == 0);
}

static struct zring *ring_find(const struct core_zsched *z, int rule,
                               const char *channel, const char *host)
{
    for (struct zring *r = z->rings; r; r = r->next)
        if (ring_is(r, rule, channel, host))
            return r;
    return NULL;
}

static struct zring *ring_get(struct core_zsched *z,
                              const struct core_zrule *rule,
                              const char *channel, const char *host)
{
    struct zring *r = ring_find(z, rule->index, channel, host);

    if (r)
        return r;
    r = xcalloc(1, sizeof(*r));
    r->rule = *rule;
    r->channel = xstrdup(channel);
    r->host = rule->per_host ? xstrdup(host) : NULL;
    r->next = z->rings;
    z->rings = r;
    return r;
}

static struct zthread *thread_find(const struct zring *r, const char *host)
{
    for (struct zthread *t = r->threads; t; t = t->next)
        if (strcmp(t->host, host) == 0)
            return t;
    return NULL;
}

static struct zthread *thread_get(struct zring *r, const char *host)
{
    struct zthread *t = thread_find(r, host);

    if (t)
        return t;
    t = xcalloc(1, sizeof(*t));
    t->ring = r;
    t->host = xstrdup(host);
    t->next = r->threads;
    r->threads = t;
    r->nthreads++;
    return t;
}

/* A ring with neither threads nor agents goes. */
static void ring_maybe_free(struct core_zsched *z, struct zring *r)
{
    if (r->nthreads > 0 || r->nagents > 0)
        return;
    for (struct zring **p = &z->rings; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    free(r->channel);
    free(r->host);
    free(r);
}

/* The seed's delete_thread(): an empty thread leaves its ring. */
static void thread_delete(struct core_zsched *z, struct zthread *t)
{
    struct zring *r = t->ring;

    for (struct zthread **p = &r->threads; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    r->nthreads--;
    if (t->agent)
        t->agent->thread = NULL;
    thread_free(t);
    ring_maybe_free(z, r);
}

static core_time_t thread_wakeup(const struct zthread *t)
{
    return t->nv ? t->v[0].wakeup : CORE_TIME_NEVER;
}

/* Keep time order: after every vertex that wakes no later. */
static void vertex_insert(struct zthread *t, const struct zvertex *v)
{
    size_t i = t->nv;

    if (t->nv == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 4;
        t->v = xrealloc(t->v, t->cap * sizeof(*t->v));
    }
    while (i > 0 && t->v[i - 1].wakeup > v->wakeup) {
        t->v[i] = t->v[i - 1];
        i--;
    }
    t->v[i] = *v;
    t->nv++;
}

static struct zvertex *vertex_find(struct zthread *t, uint64_t id)
{
    for (size_t i = 0; i < t->nv; i++)
        if (t->v[i].id == id)
            return t->v + i;
    return NULL;
}

static void vertex_remove(struct zthread *t, struct zvertex *v)
{
    size_t i = (size_t)(v - t->v);

    memmove(t->v + i, t->v + i + 1, (t->nv - i - 1) * sizeof(*t->v));
    t->nv--;
}

static void run_append(struct zthread *t, uint64_t id)
{
    if (t->nrun == t->runcap) {
        t->runcap = t->runcap ? 2 * t->runcap : 4;
        t->run = xrealloc(t->run, t->runcap * sizeof(*t->run));
    }
    t->run[t->nrun++] = id;
}

/* Oldest first; equal ages keep their time order (insertion sort). */
static void run_by_age(struct zthread *t)
{
    for (size_t i = 1; i < t->nrun; i++) {
        uint64_t id = t->run[i];
        core_time_t age = vertex_find(t, id)->age;
        size_t j = i;

        while (j > 0 && vertex_find(t, t->run[j - 1])->age > age) {
            t->run[j] = t->run[j - 1];
            j--;
        }
        t->run[j] = id;
    }
}

static void run_shuffle(struct core_zsched *z, struct zthread *t)
{
    for (size_t i = t->nrun; i > 1; i--) {
        size_t j = z->rand(z->rand_ctx, (unsigned)i);
        uint64_t tmp;

        if (j >= i)
            util_panic("zthread: rand gave %zu for %zu", j, i);
        tmp = t->run[i - 1];
        t->run[i - 1] = t->run[j];
        t->run[j] = tmp;
    }
}

/* The run: every vertex of the thread, in the rule's order. */
static void run_prepare(struct core_zsched *z, struct zthread *t)
{
    t->nrun = t->runpos = 0;
    for (size_t i = 0; i < t->nv; i++) {
        t->v[i].tried = 0;
        run_append(t, t->v[i].id);
    }
    if (t->ring->rule.ageorder)
        run_by_age(t);
    else
        run_shuffle(z, t);
}

static void agent_take(struct core_zsched *z, struct zagent *a,
                       struct zthread *t)
{
    if (a->idle) {
        a->idle = 0;
        a->ring->nidle--;
    }
    a->thread = t;
    t->agent = a;
    run_prepare(z, t);
}

/* The ring's most recently idled agent. */
static struct zagent *idle_newest(const struct core_zsched *z,
                                  const struct zring *r)
{
    struct zagent *best = NULL;

    for (struct zagent *a = z->agents; a; a = a->next)
        if (a->idle && a->ring == r &&
            (best == NULL || a->idle_since > best->idle_since))
            best = a;
    return best;
}

static void agent_end(struct core_zsched *z, struct zagent *a)
{
    struct zring *r = a->ring;

    for (struct zagent **p = &z->agents; *p; p = &(*p)->next)
        if (*p == a) {
            *p = a->next;
            break;
        }
    if (a->thread)
        a->thread->agent = NULL;
    if (a->idle)
        r->nidle--;
    r->nagents--;
    z->nagents--;
    free(a);
    ring_maybe_free(z, r);
}

/* At maxta: the agent idle longest in a ring other than r, ended. */
static uint64_t idle_evict(struct core_zsched *z, const struct zring *r)
{
    struct zagent *old = NULL;
    uint64_t id;

    for (struct zagent *a = z->agents; a; a = a->next)
        if (a->idle && a->ring != r &&
            (old == NULL || a->idle_since < old->idle_since))
            old = a;
    if (old == NULL)
        return 0;
    id = old->id;
    agent_end(z, old);
    return id;
}

static struct zagent *agent_new(struct core_zsched *z, struct zring *r)
{
    struct zagent *a = xcalloc(1, sizeof(*a));

    a->id = ++z->last_agent;
    a->ring = r;
    a->next = z->agents;
    z->agents = a;
    r->nagents++;
    z->nagents++;
    return a;
}

/* Every vertex of a thread that met a limit wakes no earlier than at. */
static void thread_reschedule(struct zthread *t, core_time_t at)
{
    for (size_t i = 0; i < t->nv; i++)
        if (t->v[i].wakeup < at)
            t->v[i].wakeup = at;
}

/* A thread that found no idle agent: a new one, or the limit. */
static void start_new(struct core_zsched *z, struct zthread *t, core_time_t now,
                      struct core_zstart_result *out)
{
    struct zring *r = t->ring;

    if (r->rule.maxring > 0 && r->nagents >= r->rule.maxring) {
        out->how = CORE_ZSTART_LIMIT;
    } else if (z->maxta > 0 && z->nagents >= z->maxta &&
               (out->ended = idle_evict(z, r)) == 0) {
        out->how = CORE_ZSTART_LIMIT;
    } else {
        struct zagent *a = agent_new(z, r);

        agent_take(z, a, t);
        out->how = CORE_ZSTART_NEW;
        out->agent = a->id;
        return;
    }
    thread_reschedule(t, now + z->limit_delay);
}

static void thread_start(struct core_zsched *z, struct zthread *t,
                         core_time_t now, int flush,
                         struct core_zstart_result *out)
{
    struct zagent *a;

    memset(out, 0, sizeof(*out));
    if (t->agent)
        out->how = CORE_ZSTART_BUSY;
    else if (t->ring->rule.queueonly && !flush)
        out->how = CORE_ZSTART_QUEUEONLY;
    else if (!flush && thread_wakeup(t) > now)
        out->how = CORE_ZSTART_NOT_DUE;
    else if ((a = idle_newest(z, t->ring)) != NULL) {
        agent_take(z, a, t);
        out->how = CORE_ZSTART_REUSE;
        out->agent = a->id;
    } else
        start_new(z, t, now, out);
}

void core_zsched_vertex_add(struct core_zsched *z, const struct core_zrule *r,
                            const char *channel, const char *host,
                            uint64_t vertex, core_time_t wakeup,
                            core_time_t age, core_time_t now,
                            struct core_zstart_result *out)
{
    struct zthread *t = thread_get(ring_get(z, r, channel, host), host);
    struct zvertex v = {vertex, wakeup, age, 0};

    vertex_insert(t, &v);
    if (t->agent)
        run_append(t, vertex); /* a running thread feeds it in this run */
    thread_start(z, t, now, 0, out);
}

static int started(const struct core_zstart_result *r)
{
    return r->how == CORE_ZSTART_NEW || r->how == CORE_ZSTART_REUSE;
}

/* Try every thread that pick() accepts; the started ones go to out.
 * A start may end an idle agent and so free its ring: the walk
 * restarts after every start (a start never makes a thread startable
 * again, so this ends). */
static size_t start_all(struct core_zsched *z, const char *host,
                        core_time_t now, struct core_zstart_result *out,
                        size_t max)
{
    size_t n = 0;
    int again = 1;

    while (again && n < max) {
        again = 0;
        for (struct zring *r = z->rings; r && !again; r = r->next)
            for (struct zthread *t = r->threads; t && !again; t = t->next) {
                struct core_zstart_result res;

                if (t->agent || (host && strcmp(t->host, host) != 0))
                    continue;
                thread_start(z, t, now, host != NULL, &res);
                if (started(&res)) {
                    out[n++] = res;
                    again = 1;
                }
            }
    }
    return n;
}

size_t core_zsched_agenda(struct core_zsched *z, core_time_t now,
                          struct core_zstart_result *out, size_t max)
{
    return start_all(z, NULL, now, out, max);
}

size_t core_zsched_flush(struct core_zsched *z, const char *host,
                         core_time_t now, struct core_zstart_result *out,
                         size_t max)
{
    return start_all(z, host, now, out, max);
}

static struct zagent *agent_find(const struct core_zsched *z, uint64_t id)
{
    for (struct zagent *a = z->agents; a; a = a->next)
        if (a->id == id)
            return a;
    return NULL;
}

/* Another due thread of the agent's ring, without an agent; not the
 * one it just ran (what that run rescheduled is not for this agent). */
static struct zthread *ring_next_thread(const struct zring *r,
                                        const struct zthread *done,
                                        core_time_t now)
{
    if (r->rule.queueonly)
        return NULL;
    for (struct zthread *t = r->threads; t; t = t->next)
        if (t != done && t->agent == NULL && thread_wakeup(t) <= now)
            return t;
    return NULL;
}

/* The next vertex of the agent's run, or 0 when the run is over. */
static int run_next(struct zthread *t, uint64_t *vertex)
{
    while (t->runpos < t->nrun) {
        struct zvertex *v = vertex_find(t, t->run[t->runpos++]);

        if (v && !v->tried) {
            v->tried = 1;
            *vertex = v->id;
            return 1;
        }
    }
    return 0;
}

int core_zsched_next_vertex(struct core_zsched *z, uint64_t agent,
                            core_time_t now, uint64_t *vertex)
{
    struct zagent *a = agent_find(z, agent);
    struct zthread *t, *done = NULL;

    if (a == NULL || a->idle)
        return 0;
    while (1) {
        if (a->thread && run_next(a->thread, vertex))
            return 1;
        if (a->thread) {
            done = a->thread;
            a->thread->agent = NULL;
            a->thread = NULL;
        }
        if ((t = ring_next_thread(a->ring, done, now)) == NULL)
            break;
        agent_take(z, a, t);
    }
    a->idle = 1;
    a->idle_since = now;
    a->ring->nidle++;
    return 0;
}

void core_zsched_vertex_done(struct core_zsched *z, uint64_t agent,
                             uint64_t vertex, core_time_t retry)
{
    struct zagent *a = agent_find(z, agent);
    struct zthread *t = a ? a->thread : NULL;
    struct zvertex *v = t ? vertex_find(t, vertex) : NULL;
    struct zvertex again;

    if (v == NULL)
        return; /* not this agent's: a late or wrong report */
    again = *v;
    vertex_remove(t, v);
    if (retry >= 0) {
        again.wakeup = retry;
        again.tried = 1;
        vertex_insert(t, &again);
    } else if (t->nv == 0) {
        thread_delete(z, t); /* the seed's unvertex() */
    }
}

void core_zsched_agent_gone(struct core_zsched *z, uint64_t agent,
                            core_time_t now, core_time_t backoff)
{
    struct zagent *a = agent_find(z, agent);

    if (a == NULL)
        return;
    if (a->thread)
        thread_reschedule(a->thread, now + backoff);
    agent_end(z, a);
}

size_t core_zsched_idle_expire(struct core_zsched *z, core_time_t now,
                               uint64_t *ended, size_t max)
{
    size_t n = 0;
    struct zagent *a = z->agents;

    while (a && n < max) {
        struct zagent *next = a->next;

        if (a->idle && now - a->idle_since >= a->ring->rule.idlemax) {
            ended[n++] = a->id;
            agent_end(z, a);
        }
        a = next;
    }
    return n;
}

core_time_t core_zsched_next_timer(const struct core_zsched *z)
{
    core_time_t next = CORE_TIME_NEVER;

    for (const struct zagent *a = z->agents; a; a = a->next)
        if (a->idle && a->idle_since + a->ring->rule.idlemax < next)
            next = a->idle_since + a->ring->rule.idlemax;
    for (const struct zring *r = z->rings; r; r = r->next)
        for (const struct zthread *t = r->threads; t; t = t->next)
            if (!r->rule.queueonly && t->agent == NULL &&
                thread_wakeup(t) < next)
                next = thread_wakeup(t);
    return next;
}

void core_zsched_thread_view(const struct core_zsched *z, const char *channel,
                             const char *host, int rule,
                             struct core_zthread_view *v)
{
    const struct zring *r = ring_find(z, rule, channel, host);
    const struct zthread *t = r ? thread_find(r, host) : NULL;

    memset(v, 0, sizeof(*v));
    if (t == NULL)
        return;
    v->found = 1;
    v->running = t->agent != NULL;
    v->agent = t->agent ? t->agent->id : 0;
    v->wakeup = thread_wakeup(t);
    v->vertices = t->nv;
    v->ring_threads = r->nthreads;
    v->ring_agents = r->nagents;
    v->ring_idle = r->nidle;
}

size_t core_zsched_thread_vertices(const struct core_zsched *z,
                                   const char *channel, const char *host,
                                   int rule, uint64_t *ids, size_t max)
{
    const struct zring *r = ring_find(z, rule, channel, host);
    const struct zthread *t = r ? thread_find(r, host) : NULL;
    size_t n = 0;

    for (size_t i = 0; t && i < t->nv && n < max; i++)
        ids[n++] = t->v[i].id;
    return n;
}

int core_zsched_agents(const struct core_zsched *z)
{
    return z->nagents;
}

const char *core_zstart_name(enum core_zstart how)
{
    static const char *const names[] = {"new",   "reuse",     "busy",
                                        "limit", "queueonly", "not due"};

    return (unsigned)how < sizeof(names) / sizeof(names[0]) ? names[how] : "?";
}

void core_zsched_summary(const struct core_zsched *z, const char *channel,
                         struct core_zsummary *s)
{
    memset(s, 0, sizeof(*s));
    for (const struct zring *r = z->rings; r; r = r->next) {
        if (strcmp(r->channel, channel) != 0)
            continue;
        s->rings++;
        s->threads += (size_t)r->nthreads;
        s->agents += r->nagents;
        s->idle += r->nidle;
        for (const struct zthread *t = r->threads; t; t = t->next)
            s->vertices += t->nv;
    }
    s->running = s->agents - s->idle;
}

int core_zsched_agent_thread(const struct core_zsched *z, uint64_t agent,
                             const char **channel, const char **host,
                             core_time_t *idlemax)
{
    const struct zagent *a = agent_find(z, agent);

    *channel = *host = "";
    *idlemax = 0;
    if (a == NULL || a->thread == NULL)
        return 0;
    *channel = a->ring->channel;
    *host = a->thread->host;
    *idlemax = a->ring->rule.idlemax;
    return 1;
}

void core_zsched_maxta_set(struct core_zsched *z, int maxta)
{
    z->maxta = maxta;
}
