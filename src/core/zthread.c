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
 *	Nothing here is found by a walk of what grows with the queue
 *	(decision 127): rings, threads (by triplet and by host), agents
 *	and vertices are in hash tables that grow with them; a thread's
 *	vertices are a list in wake-up order (a new vertex, whose wake-up
 *	is the latest, goes at the tail); the threads that wait for a
 *	wake-up time are in a heap by it, so that the agenda and the next
 *	timer look at its top; each ring keeps its idle agents in the order
 *	they went idle, and all idle agents are in one such list too. A
 *	thread that meets a limit or loses its agent gets a time before
 *	which it does not start (not every vertex moved). What is still
 *	walked: an agent whose run is over looks through its ring's
 *	threads for another due one (one thread in a ring of the built-in
 *	agents, which are per host), the idle agents (at most maxta) for
 *	the next expiry, and core_zsched_summary() its channel's rings.
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

#define NOT_IN_HEAP ((size_t)-1)
#define TABLE_MIN   64

struct zthread;

struct zvertex {
    uint64_t id;
    core_time_t wakeup;
    core_time_t age;
    int tried; /* fed or rescheduled in this run (the seed's "proc") */
    struct zthread *thread;
    struct zvertex *prev, *next; /* the thread's, in wake-up order */
    struct zvertex *hnext;       /* the table by id */
};

struct zring;
struct zagent;

struct zthread {
    struct zring *ring;
    char *host;
    struct zvertex *head, *tail; /* in wake-up order */
    size_t nv;
    core_time_t not_before; /* met a limit, or its agent died */
    uint64_t *run;          /* this run's order */
    size_t nrun, runpos, runcap;
    struct zagent *agent;
    size_t heap;                   /* its place in the wake-up heap */
    struct zthread *rprev, *rnext; /* the ring's threads */
    struct zthread *hnext;         /* the table by (ring, host) */
    struct zthread *host_next;     /* the table by host */
};

struct zagent {
    uint64_t id;
    struct zring *ring;
    struct zthread *thread; /* NULL: idle (or between threads) */
    int idle;
    core_time_t idle_since;
    struct zagent *hnext;         /* the table by id */
    struct zagent *iprev, *inext; /* the ring's idle pool, oldest first */
    struct zagent *gprev, *gnext; /* every idle agent, oldest first */
};

struct zring {
    struct core_zrule rule;
    char *channel;
    char *host; /* per_host rings only */
    struct zthread *threads;
    int nthreads, nagents, nidle;
    size_t nvertices;
    struct zagent *idle_head, *idle_tail;
    struct zring *hnext;       /* the table by (rule, channel, host) */
    struct zring *prev, *next; /* every ring */
};

/* A chained hash table of elements that carry their own chain link. */
struct ztable {
    void **b;
    size_t size, n;
    size_t link; /* offsetof the element's chain pointer */
    size_t (*hash)(const void *e);
};

struct core_zsched {
    int maxta;
    core_time_t limit_delay;
    unsigned (*rand)(void *ctx, unsigned n);
    void *rand_ctx;
    struct zring *rings;
    struct ztable ring_t, thread_t, host_t, agent_t, vertex_t;
    struct zthread **heap; /* threads waiting for their wake-up time */
    size_t nheap, heapcap;
    struct zagent *idle_head, *idle_tail;
    int nagents;
    uint64_t last_agent;
};

static size_t str_hash(size_t h, const char *s)
{
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

static size_t id_hash(uint64_t id)
{
    return (size_t)(id * 11400714819323198485ULL);
}

static size_t ring_key(int rule, const char *channel, const char *host)
{
    size_t h = str_hash(14695981039346656037ULL + (size_t)rule, channel);

    return host ? str_hash(h * 31, host) : h;
}

static size_t ring_hash(const void *e)
{
    const struct zring *r = e;

    return ring_key(r->rule.index, r->channel, r->host);
}

static size_t thread_key(const struct zring *r, const char *host)
{
    return str_hash(id_hash((uintptr_t)r), host);
}

static size_t thread_hash(const void *e)
{
    const struct zthread *t = e;

    return thread_key(t->ring, t->host);
}

static size_t host_hash(const void *e)
{
    return str_hash(14695981039346656037ULL, ((const struct zthread *)e)->host);
}

static size_t agent_hash(const void *e)
{
    return id_hash(((const struct zagent *)e)->id);
}

static size_t vertex_hash(const void *e)
{
    return id_hash(((const struct zvertex *)e)->id);
}

static void **link_of(const struct ztable *t, void *e)
{
    return (void **)((char *)e + t->link);
}

static void table_init(struct ztable *t, size_t link,
                       size_t (*hash)(const void *e))
{
    t->size = TABLE_MIN;
    t->b = xcalloc(t->size, sizeof(*t->b));
    t->link = link;
    t->hash = hash;
}

/* Twice the buckets when there are more elements than buckets. */
static void table_grow(struct ztable *t)
{
    size_t size = t->size * 2;
    void **b = xcalloc(size, sizeof(*b));

    for (size_t i = 0; i < t->size; i++)
        while (t->b[i] != NULL) {
            void *e = t->b[i];
            size_t slot = t->hash(e) % size;

            t->b[i] = *link_of(t, e);
            *link_of(t, e) = b[slot];
            b[slot] = e;
        }
    free(t->b);
    t->b = b;
    t->size = size;
}

static void table_add(struct ztable *t, void *e)
{
    size_t slot;

    if (t->n >= t->size)
        table_grow(t);
    slot = t->hash(e) % t->size;
    *link_of(t, e) = t->b[slot];
    t->b[slot] = e;
    t->n++;
}

static void table_del(struct ztable *t, void *e)
{
    void **p = &t->b[t->hash(e) % t->size];

    while (*p != NULL && *p != e)
        p = link_of(t, *p);
    if (*p == NULL)
        util_panic("zthread: an element missing from its table");
    *p = *link_of(t, e);
    t->n--;
}

/* The chain that holds key's elements. */
static void *table_chain(const struct ztable *t, size_t key)
{
    return t->b[key % t->size];
}

/* The wake-up heap: a thread is in it while it has vertices, no agent
 * and its rule is not queueonly; ordered by thread_wakeup(). */
static core_time_t thread_wakeup(const struct zthread *t)
{
    core_time_t w;

    if (t->nv == 0)
        return CORE_TIME_NEVER;
    w = t->head->wakeup;
    return w > t->not_before ? w : t->not_before;
}

static void heap_set(struct core_zsched *z, size_t i, struct zthread *t)
{
    z->heap[i] = t;
    t->heap = i;
}

static void heap_up(struct core_zsched *z, size_t i)
{
    struct zthread *t = z->heap[i];

    while (i > 0 && thread_wakeup(z->heap[(i - 1) / 2]) > thread_wakeup(t)) {
        heap_set(z, i, z->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(z, i, t);
}

static void heap_down(struct core_zsched *z, size_t i)
{
    struct zthread *t = z->heap[i];

    while (2 * i + 1 < z->nheap) {
        size_t c = 2 * i + 1;

        if (c + 1 < z->nheap &&
            thread_wakeup(z->heap[c + 1]) < thread_wakeup(z->heap[c]))
            c++;
        if (thread_wakeup(z->heap[c]) >= thread_wakeup(t))
            break;
        heap_set(z, i, z->heap[c]);
        i = c;
    }
    heap_set(z, i, t);
}

static void heap_remove(struct core_zsched *z, struct zthread *t)
{
    size_t i = t->heap;
    struct zthread *last;

    if (i == NOT_IN_HEAP)
        return;
    t->heap = NOT_IN_HEAP;
    last = z->heap[--z->nheap];
    if (last == t)
        return;
    heap_set(z, i, last);
    heap_up(z, i);
    heap_down(z, last->heap);
}

/* Put t where it belongs after any change to it. */
static void heap_fix(struct core_zsched *z, struct zthread *t)
{
    int waits = t->nv > 0 && t->agent == NULL && !t->ring->rule.queueonly;

    if (!waits) {
        heap_remove(z, t);
        return;
    }
    if (t->heap == NOT_IN_HEAP) {
        if (z->nheap == z->heapcap) {
            z->heapcap = z->heapcap ? 2 * z->heapcap : 64;
            z->heap = xrealloc(z->heap, z->heapcap * sizeof(*z->heap));
        }
        heap_set(z, z->nheap++, t);
    }
    heap_up(z, t->heap);
    heap_down(z, t->heap);
}

struct core_zsched *core_zsched_create(int maxta, core_time_t limit_delay,
                                       unsigned (*rand)(void *ctx, unsigned n),
                                       void *rand_ctx)
{
    struct core_zsched *z = xcalloc(1, sizeof(*z));

    z->maxta = maxta;
    z->limit_delay = limit_delay;
    z->rand = rand;
    z->rand_ctx = rand_ctx;
    table_init(&z->ring_t, offsetof(struct zring, hnext), ring_hash);
    table_init(&z->thread_t, offsetof(struct zthread, hnext), thread_hash);
    table_init(&z->host_t, offsetof(struct zthread, host_next), host_hash);
    table_init(&z->agent_t, offsetof(struct zagent, hnext), agent_hash);
    table_init(&z->vertex_t, offsetof(struct zvertex, hnext), vertex_hash);
    return z;
}

static void thread_free(struct zthread *t)
{
    while (t->head) {
        struct zvertex *v = t->head;

        t->head = v->next;
        free(v);
    }
    free(t->host);
    free(t->run);
    free(t);
}

void core_zsched_free(struct core_zsched *z)
{
    if (z == NULL)
        return;
    for (size_t i = 0; i < z->agent_t.size; i++)
        while (z->agent_t.b[i]) {
            struct zagent *a = z->agent_t.b[i];

            z->agent_t.b[i] = a->hnext;
            free(a);
        }
    while (z->rings) {
        struct zring *r = z->rings;

        z->rings = r->next;
        while (r->threads) {
            struct zthread *t = r->threads;

            r->threads = t->rnext;
            thread_free(t);
        }
        free(r->channel);
        free(r->host);
        free(r);
    }
    free(z->ring_t.b);
    free(z->thread_t.b);
    free(z->host_t.b);
    free(z->agent_t.b);
    free(z->vertex_t.b);
    free(z->heap);
    free(z);
}

static struct zring *ring_find(const struct core_zsched *z, int rule,
                               const char *channel, const char *host)
{
    struct zring *r = table_chain(&z->ring_t, ring_key(rule, channel, NULL));
    struct zring *h = table_chain(&z->ring_t, ring_key(rule, channel, host));

    /* a ring is per (rule, channel), or per host with $host */
    for (; r; r = r->hnext)
        if (r->host == NULL && r->rule.index == rule &&
            strcmp(r->channel, channel) == 0)
            return r;
    for (; h; h = h->hnext)
        if (h->host != NULL && h->rule.index == rule &&
            strcmp(h->channel, channel) == 0 && strcmp(h->host, host) == 0)
            return h;
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
    if (z->rings)
        z->rings->prev = r;
    z->rings = r;
    table_add(&z->ring_t, r);
    return r;
}

static struct zthread *thread_find(const struct core_zsched *z,
                                   const struct zring *r, const char *host)
{
    struct zthread *t = table_chain(&z->thread_t, thread_key(r, host));

    for (; t; t = t->hnext)
        if (t->ring == r && strcmp(t->host, host) == 0)
            return t;
    return NULL;
}

static struct zthread *thread_get(struct core_zsched *z, struct zring *r,
                                  const char *host)
{
    struct zthread *t = thread_find(z, r, host);

    if (t)
        return t;
    t = xcalloc(1, sizeof(*t));
    t->ring = r;
    t->host = xstrdup(host);
    t->heap = NOT_IN_HEAP;
    t->rnext = r->threads;
    if (r->threads)
        r->threads->rprev = t;
    r->threads = t;
    r->nthreads++;
    table_add(&z->thread_t, t);
    table_add(&z->host_t, t);
    return t;
}

/* A ring with neither threads nor agents goes. */
static void ring_maybe_free(struct core_zsched *z, struct zring *r)
{
    if (r->nthreads > 0 || r->nagents > 0)
        return;
    table_del(&z->ring_t, r);
    if (r->prev)
        r->prev->next = r->next;
    else
        z->rings = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r->channel);
    free(r->host);
    free(r);
}

/* The seed's delete_thread(): an empty thread leaves its ring. */
static void thread_delete(struct core_zsched *z, struct zthread *t)
{
    struct zring *r = t->ring;

    heap_remove(z, t);
    table_del(&z->thread_t, t);
    table_del(&z->host_t, t);
    if (t->rprev)
        t->rprev->rnext = t->rnext;
    else
        r->threads = t->rnext;
    if (t->rnext)
        t->rnext->rprev = t->rprev;
    r->nthreads--;
    if (t->agent)
        t->agent->thread = NULL;
    thread_free(t);
    ring_maybe_free(z, r);
}

/* Keep time order: after every vertex that wakes no later. */
static void vertex_insert(struct core_zsched *z, struct zthread *t,
                          struct zvertex *v)
{
    struct zvertex *after = t->tail;

    while (after && after->wakeup > v->wakeup)
        after = after->prev;
    v->thread = t;
    v->prev = after;
    v->next = after ? after->next : t->head;
    if (v->next)
        v->next->prev = v;
    else
        t->tail = v;
    if (after)
        after->next = v;
    else
        t->head = v;
    t->nv++;
    t->ring->nvertices++;
    heap_fix(z, t);
}

static struct zvertex *vertex_find(const struct core_zsched *z,
                                   const struct zthread *t, uint64_t id)
{
    struct zvertex *v = table_chain(&z->vertex_t, id_hash(id));

    for (; v; v = v->hnext)
        if (v->id == id && v->thread == t)
            return v;
    return NULL;
}

/* Out of its thread's list (it stays in the table by id). */
static void vertex_unlink(struct zthread *t, struct zvertex *v)
{
    if (v->prev)
        v->prev->next = v->next;
    else
        t->head = v->next;
    if (v->next)
        v->next->prev = v->prev;
    else
        t->tail = v->prev;
    t->nv--;
    t->ring->nvertices--;
}

static void run_append(struct zthread *t, uint64_t id)
{
    if (t->nrun == t->runcap) {
        t->runcap = t->runcap ? 2 * t->runcap : 4;
        t->run = xrealloc(t->run, t->runcap * sizeof(*t->run));
    }
    t->run[t->nrun++] = id;
}

struct by_age {
    core_time_t age;
    size_t seq; /* its place in time order: equal ages keep it */
    uint64_t id;
};

static int by_age_cmp(const void *a, const void *b)
{
    const struct by_age *x = a, *y = b;

    if (x->age != y->age)
        return x->age < y->age ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Oldest first; equal ages keep their time order. */
static void run_by_age(struct zthread *t)
{
    struct by_age *a = xcalloc(t->nv + 1, sizeof(*a));
    size_t n = 0;

    for (struct zvertex *v = t->head; v; v = v->next, n++)
        a[n] = (struct by_age){v->age, n, v->id};
    qsort(a, n, sizeof(*a), by_age_cmp);
    for (size_t i = 0; i < n; i++)
        t->run[i] = a[i].id;
    free(a);
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
    for (struct zvertex *v = t->head; v; v = v->next) {
        v->tried = 0;
        run_append(t, v->id);
    }
    if (t->ring->rule.ageorder)
        run_by_age(t);
    else
        run_shuffle(z, t);
}

static void idle_unlink(struct core_zsched *z, struct zagent *a)
{
    struct zring *r = a->ring;

    if (a->iprev)
        a->iprev->inext = a->inext;
    else
        r->idle_head = a->inext;
    if (a->inext)
        a->inext->iprev = a->iprev;
    else
        r->idle_tail = a->iprev;
    if (a->gprev)
        a->gprev->gnext = a->gnext;
    else
        z->idle_head = a->gnext;
    if (a->gnext)
        a->gnext->gprev = a->gprev;
    else
        z->idle_tail = a->gprev;
    a->iprev = a->inext = a->gprev = a->gnext = NULL;
    a->idle = 0;
    r->nidle--;
}

/* Idle since now: the newest of its ring's pool and of all. */
static void idle_link(struct core_zsched *z, struct zagent *a, core_time_t now)
{
    struct zring *r = a->ring;

    a->idle = 1;
    a->idle_since = now;
    a->iprev = r->idle_tail;
    if (r->idle_tail)
        r->idle_tail->inext = a;
    else
        r->idle_head = a;
    r->idle_tail = a;
    a->gprev = z->idle_tail;
    if (z->idle_tail)
        z->idle_tail->gnext = a;
    else
        z->idle_head = a;
    z->idle_tail = a;
    r->nidle++;
}

static void agent_take(struct core_zsched *z, struct zagent *a,
                       struct zthread *t)
{
    if (a->idle)
        idle_unlink(z, a);
    a->thread = t;
    t->agent = a;
    t->not_before = 0;
    heap_remove(z, t);
    run_prepare(z, t);
}

static void agent_end(struct core_zsched *z, struct zagent *a)
{
    struct zring *r = a->ring;

    table_del(&z->agent_t, a);
    if (a->idle)
        idle_unlink(z, a);
    if (a->thread) {
        a->thread->agent = NULL;
        heap_fix(z, a->thread);
    }
    r->nagents--;
    z->nagents--;
    free(a);
    ring_maybe_free(z, r);
}

/* At maxta: the agent idle longest in a ring other than r, ended. */
static uint64_t idle_evict(struct core_zsched *z, const struct zring *r)
{
    struct zagent *old = z->idle_head;
    uint64_t id;

    while (old && old->ring == r)
        old = old->gnext;
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
    table_add(&z->agent_t, a);
    r->nagents++;
    z->nagents++;
    return a;
}

/* A thread that met a limit does not start before at. */
static void thread_reschedule(struct core_zsched *z, struct zthread *t,
                              core_time_t at)
{
    if (t->not_before < at)
        t->not_before = at;
    heap_fix(z, t);
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
    thread_reschedule(z, t, now + z->limit_delay);
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
    else if ((a = t->ring->idle_tail) != NULL) {
        /* the ring's most recently idled agent: the warm one */
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
    struct zthread *t = thread_get(z, ring_get(z, r, channel, host), host);
    struct zvertex *v = xcalloc(1, sizeof(*v));

    v->id = vertex;
    v->wakeup = wakeup;
    v->age = age;
    table_add(&z->vertex_t, v);
    vertex_insert(z, t, v);
    if (t->agent)
        run_append(t, vertex); /* a running thread feeds it in this run */
    thread_start(z, t, now, 0, out);
}

static int started(const struct core_zstart_result *r)
{
    return r->how == CORE_ZSTART_NEW || r->how == CORE_ZSTART_REUSE;
}

/* The seed's doagenda(): the due threads, from the top of the heap. A
 * thread that meets a limit goes back later in it (limit_delay). */
size_t core_zsched_agenda(struct core_zsched *z, core_time_t now,
                          struct core_zstart_result *out, size_t max)
{
    size_t n = 0;

    while (n < max && z->nheap > 0 && thread_wakeup(z->heap[0]) <= now) {
        struct core_zstart_result res;

        thread_start(z, z->heap[0], now, 0, &res);
        if (started(&res))
            out[n++] = res;
        else if (res.how != CORE_ZSTART_LIMIT || z->limit_delay <= 0)
            break; /* nothing else can change this turn */
    }
    return n;
}

/* Every thread of host, whatever its wake-up time (ETRN). */
size_t core_zsched_flush(struct core_zsched *z, const char *host,
                         core_time_t now, struct core_zstart_result *out,
                         size_t max)
{
    size_t key = str_hash(14695981039346656037ULL, host), n = 0, k = 0;
    struct zthread **todo = NULL;

    for (struct zthread *t = table_chain(&z->host_t, key); t; t = t->host_next)
        if (t->agent == NULL && strcmp(t->host, host) == 0) {
            todo = xrealloc(todo, (k + 1) * sizeof(*todo));
            todo[k++] = t;
        }
    for (size_t i = 0; i < k && n < max; i++) {
        struct core_zstart_result res;

        thread_start(z, todo[i], now, 1, &res);
        if (started(&res))
            out[n++] = res;
    }
    free(todo);
    return n;
}

static struct zagent *agent_find(const struct core_zsched *z, uint64_t id)
{
    struct zagent *a = table_chain(&z->agent_t, id_hash(id));

    for (; a; a = a->hnext)
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
    for (struct zthread *t = r->threads; t; t = t->rnext)
        if (t != done && t->agent == NULL && thread_wakeup(t) <= now)
            return t;
    return NULL;
}

/* The next vertex of the agent's run, or 0 when the run is over. */
static int run_next(const struct core_zsched *z, struct zthread *t,
                    uint64_t *vertex)
{
    while (t->runpos < t->nrun) {
        struct zvertex *v = vertex_find(z, t, t->run[t->runpos++]);

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
        if (a->thread && run_next(z, a->thread, vertex))
            return 1;
        if (a->thread) {
            done = a->thread;
            a->thread->agent = NULL;
            a->thread = NULL;
            heap_fix(z, done);
        }
        if ((t = ring_next_thread(a->ring, done, now)) == NULL)
            break;
        agent_take(z, a, t);
    }
    idle_link(z, a, now);
    return 0;
}

void core_zsched_vertex_done(struct core_zsched *z, uint64_t agent,
                             uint64_t vertex, core_time_t retry)
{
    struct zagent *a = agent_find(z, agent);
    struct zthread *t = a ? a->thread : NULL;
    struct zvertex *v = t ? vertex_find(z, t, vertex) : NULL;

    if (v == NULL)
        return; /* not this agent's: a late or wrong report */
    vertex_unlink(t, v);
    if (retry >= 0) {
        v->wakeup = retry;
        v->tried = 1;
        vertex_insert(z, t, v);
        return;
    }
    table_del(&z->vertex_t, v);
    free(v);
    if (t->nv == 0)
        thread_delete(z, t); /* the seed's unvertex() */
    else
        heap_fix(z, t);
}

void core_zsched_agent_gone(struct core_zsched *z, uint64_t agent,
                            core_time_t now, core_time_t backoff)
{
    struct zagent *a = agent_find(z, agent);

    if (a == NULL)
        return;
    if (a->thread)
        a->thread->not_before = now + backoff;
    agent_end(z, a);
}

size_t core_zsched_idle_expire(struct core_zsched *z, core_time_t now,
                               uint64_t *ended, size_t max)
{
    size_t n = 0;
    struct zagent *a = z->idle_head;

    while (a && n < max) {
        struct zagent *next = a->gnext;

        if (now - a->idle_since >= a->ring->rule.idlemax) {
            ended[n++] = a->id;
            agent_end(z, a);
        }
        a = next;
    }
    return n;
}

core_time_t core_zsched_next_timer(const struct core_zsched *z)
{
    core_time_t next = z->nheap ? thread_wakeup(z->heap[0]) : CORE_TIME_NEVER;

    for (const struct zagent *a = z->idle_head; a; a = a->gnext)
        if (a->idle_since + a->ring->rule.idlemax < next)
            next = a->idle_since + a->ring->rule.idlemax;
    return next;
}

void core_zsched_thread_view(const struct core_zsched *z, const char *channel,
                             const char *host, int rule,
                             struct core_zthread_view *v)
{
    const struct zring *r = ring_find(z, rule, channel, host);
    const struct zthread *t = r ? thread_find(z, r, host) : NULL;

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
    const struct zthread *t = r ? thread_find(z, r, host) : NULL;
    size_t n = 0;

    for (const struct zvertex *v = t ? t->head : NULL; v && n < max;
         v = v->next)
        ids[n++] = v->id;
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
        s->vertices += r->nvertices;
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
