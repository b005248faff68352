/*
 * test_core_zthread - ZMailer's threads, thread-rings and idle agents, one
 * test per sentence of the seed that says what the scheduler does
 *
 * Quotes are from ../shared/seeds/zmailer-scheduler-notes.txt.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "core/core.h"

#define SEC 1000

/* Random numbers from a script, so that each shuffle is known. */
static unsigned rand_script[16];
static size_t rand_next;

static unsigned scripted(void *ctx, unsigned n)
{
    (void)ctx;
    return rand_script[rand_next++ % 16] % n;
}

static const struct core_zrule smtp_rule = {
    .index = 1, .maxring = 0, .idlemax = 60 * SEC};
static const struct core_zrule host_rule = {
    .index = 2, .maxring = 0, .idlemax = 60 * SEC, .per_host = 1};

static struct core_zsched *zs(int maxta)
{
    rand_next = 0;
    memset(rand_script, 0, sizeof(rand_script));
    return core_zsched_create(maxta, 30 * SEC, scripted, NULL);
}

static void add(struct core_zsched *z, const struct core_zrule *r,
                const char *channel, const char *host, uint64_t id,
                core_time_t wakeup, core_time_t now,
                struct core_zstart_result *out)
{
    core_zsched_vertex_add(z, r, channel, host, id, wakeup, wakeup, now, out);
}

static struct core_zthread_view view(struct core_zsched *z, const char *ch,
                                     const char *host, int rule)
{
    struct core_zthread_view v;

    core_zsched_thread_view(z, ch, host, rule, &v);
    return v;
}

/* "if there is no thread with same set of triplet: config/channel/thread,
 * a new thread is created, else the new vertex is appended into the
 * existing thread." */
static void test_thread_by_triplet(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    struct core_zrule other = smtp_rule;

    (void)state;
    other.index = 3;
    add(z, &smtp_rule, "smtp", "a.example", 1, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "a.example", 2, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "b.example", 3, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "relay", "a.example", 4, 10 * SEC, 0, &r);
    add(z, &other, "smtp", "a.example", 5, 10 * SEC, 0, &r);
    assert_int_equal(view(z, "smtp", "a.example", 1).vertices, 2);
    assert_int_equal(view(z, "smtp", "b.example", 1).vertices, 1);
    assert_int_equal(view(z, "relay", "a.example", 1).vertices, 1);
    assert_int_equal(view(z, "smtp", "a.example", 3).vertices, 1);
    assert_false(view(z, "smtp", "c.example", 1).found);
    core_zsched_free(z);
}

/* "Vertices within threads are kept in time-order, and first vertex has
 * its time-stamp copied into thread "wakeup" time." */
static void test_time_order_and_wakeup(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t ids[4];

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 50 * SEC, 0, &r);
    assert_int_equal(view(z, "smtp", "a", 1).wakeup, 50 * SEC);
    add(z, &smtp_rule, "smtp", "a", 2, 20 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "a", 3, 70 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "a", 4, 20 * SEC, 0, &r);
    assert_int_equal(core_zsched_thread_vertices(z, "smtp", "a", 1, ids, 4), 4);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 4);
    assert_int_equal(ids[2], 1);
    assert_int_equal(ids[3], 3);
    assert_int_equal(view(z, "smtp", "a", 1).wakeup, 20 * SEC);
    core_zsched_free(z);
}

/* "the thread-ring will contain all that have matching pair:
 * config/channel" */
static void test_ring_without_host(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "b", 2, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "c", 3, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "relay", "d", 4, 10 * SEC, 0, &r);
    assert_int_equal(view(z, "smtp", "a", 1).ring_threads, 3);
    assert_int_equal(view(z, "smtp", "c", 1).ring_threads, 3);
    assert_int_equal(view(z, "relay", "d", 1).ring_threads, 1);
    core_zsched_free(z);
}

/* "if the config-entry argv has "$host", the thread-ring can only have
 * one thread in it" */
static void test_ring_with_host(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;

    (void)state;
    add(z, &host_rule, "mdir", "a", 1, 10 * SEC, 0, &r);
    add(z, &host_rule, "mdir", "b", 2, 10 * SEC, 0, &r);
    add(z, &host_rule, "mdir", "a", 3, 10 * SEC, 0, &r);
    assert_int_equal(view(z, "mdir", "a", 2).ring_threads, 1);
    assert_int_equal(view(z, "mdir", "a", 2).vertices, 2);
    assert_int_equal(view(z, "mdir", "b", 2).ring_threads, 1);
    core_zsched_free(z);
}

/* "when a vertex is added into the thread structures, the thread is
 * attempted to start right away." and "Only one transport agent is to be
 * running on any given thread at any given moment, but there can be
 * multiple agents in the thread-ring." */
static void test_one_agent_per_thread(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    assert_int_equal(r.agent, 1);
    add(z, &smtp_rule, "smtp", "a", 2, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_BUSY);
    add(z, &smtp_rule, "smtp", "b", 3, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    assert_int_equal(r.agent, 2);
    assert_int_equal(view(z, "smtp", "a", 1).agent, 1);
    assert_int_equal(view(z, "smtp", "b", 1).agent, 2);
    assert_int_equal(view(z, "smtp", "b", 1).ring_agents, 2);
    /* a vertex that is not due yet does not start its thread */
    add(z, &smtp_rule, "smtp", "c", 4, 5 * SEC, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NOT_DUE);
    assert_int_equal(core_zsched_agents(z), 2);
    core_zsched_free(z);
}

/* "All vertices within a thread are attempted to deliver at the same
 * run." A vertex arriving during the run joins it. */
static void test_whole_thread_in_one_run(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    struct core_zrule aged = smtp_rule;
    uint64_t v, agent, seen = 0;

    (void)state;
    aged.ageorder = 1;
    add(z, &aged, "smtp", "a", 1, 0, 0, &r);
    agent = r.agent;
    add(z, &aged, "smtp", "a", 2, 0, 0, &r);
    add(z, &aged, "smtp", "a", 3, 0, 0, &r);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(core_zsched_next_vertex(z, agent, 0, &v), 1);
        seen |= 1u << v;
    }
    assert_int_equal(seen, 0xe);
    assert_int_equal(core_zsched_next_vertex(z, agent, 0, &v), 0);
    core_zsched_free(z);
}

/* "Order of vertices within the thread is randomized at the initiation
 * time" */
static void test_randomized_order(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t v, agent;

    (void)state;
    /* the thread waits (not due) while three vertices arrive */
    add(z, &smtp_rule, "smtp", "a", 1, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "a", 2, 10 * SEC, 0, &r);
    add(z, &smtp_rule, "smtp", "a", 3, 10 * SEC, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NOT_DUE);
    /* Fisher-Yates: i=3 swaps 2 and 0, i=2 swaps 1 and 1: 3 2 1 */
    rand_script[0] = 0;
    rand_script[1] = 1;
    assert_int_equal(core_zsched_agenda(z, 10 * SEC, &r, 1), 1);
    agent = r.agent;
    assert_int_equal(core_zsched_next_vertex(z, agent, 10 * SEC, &v), 1);
    assert_int_equal(v, 3);
    assert_int_equal(core_zsched_next_vertex(z, agent, 10 * SEC, &v), 1);
    assert_int_equal(v, 2);
    assert_int_equal(core_zsched_next_vertex(z, agent, 10 * SEC, &v), 1);
    assert_int_equal(v, 1);
    core_zsched_free(z);
}

/* "(Here use of 'ageorder' will make sure the order is kept in strict
 * ascending age order.)" */
static void test_ageorder(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    struct core_zrule aged = smtp_rule;
    uint64_t v;

    (void)state;
    aged.ageorder = 1;
    rand_script[0] = 0; /* a shuffle would move things: none happens */
    core_zsched_vertex_add(z, &aged, "smtp", "a", 1, 9 * SEC, 300, 0, &r);
    core_zsched_vertex_add(z, &aged, "smtp", "a", 2, 9 * SEC, 100, 0, &r);
    core_zsched_vertex_add(z, &aged, "smtp", "a", 3, 9 * SEC, 200, 0, &r);
    assert_int_equal(core_zsched_agenda(z, 9 * SEC, &r, 1), 1);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 9 * SEC, &v), 1);
    assert_int_equal(v, 2);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 9 * SEC, &v), 1);
    assert_int_equal(v, 3);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 9 * SEC, &v), 1);
    assert_int_equal(v, 1);
    core_zsched_free(z);
}

/* "All attempted threads that met resource limits, are re-scheduled."
 * maxring first, then maxta. */
static void test_limits_reschedule(void **state)
{
    struct core_zsched *z = zs(2);
    struct core_zstart_result r, started[4];
    struct core_zrule one = smtp_rule;
    uint64_t v;

    (void)state;
    one.maxring = 1;
    add(z, &one, "smtp", "a", 1, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    add(z, &one, "smtp", "b", 2, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_LIMIT);
    assert_true(view(z, "smtp", "b", 1).found);
    assert_int_equal(view(z, "smtp", "b", 1).wakeup, 30 * SEC);
    add(z, &smtp_rule, "relay", "c", 3, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    add(z, &smtp_rule, "relay", "d", 4, 0, 0, &r); /* maxta 2 */
    assert_int_equal(r.how, CORE_ZSTART_LIMIT);
    assert_int_equal(view(z, "relay", "d", 1).wakeup, 30 * SEC);
    /* not dropped: when its time comes, the ring's agent, done with its
     * own thread, takes it */
    assert_int_equal(core_zsched_next_vertex(z, 1, 0, &v), 1);
    core_zsched_vertex_done(z, 1, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, 1, 30 * SEC, &v), 1);
    assert_int_equal(v, 2);
    /* d met maxta again (agent 2 is still on c): rescheduled again */
    assert_int_equal(core_zsched_agenda(z, 30 * SEC, started, 4), 0);
    assert_true(view(z, "relay", "d", 1).found);
    assert_int_equal(view(z, "relay", "d", 1).wakeup, 60 * SEC);
    core_zsched_free(z);
}

/* "As an alternate to start of an agent, agents that have earlier
 * completed their jobs can be found from thread-group idle pool." and
 * "When feed_child() runs out of the thread, it pics another from the
 * same thread-group." */
static void test_idle_pool_reuse(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t v, agent;

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    agent = r.agent;
    add(z, &smtp_rule, "smtp", "b", 2, 5 * SEC, 0, &r); /* not due yet */
    assert_int_equal(core_zsched_next_vertex(z, agent, 0, &v), 1);
    core_zsched_vertex_done(z, agent, v, -1);
    assert_false(view(z, "smtp", "a", 1).found); /* empty: deleted */
    /* b is due: the agent goes on to it rather than to the pool */
    assert_int_equal(core_zsched_next_vertex(z, agent, 5 * SEC, &v), 1);
    assert_int_equal(v, 2);
    core_zsched_vertex_done(z, agent, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, agent, 5 * SEC, &v), 0);
    assert_int_equal(view(z, "smtp", "c", 1).found, 0);
    /* idle, its ring empty of threads but kept for its agent */
    add(z, &smtp_rule, "smtp", "c", 3, 6 * SEC, 6 * SEC, &r);
    assert_int_equal(r.how, CORE_ZSTART_REUSE);
    assert_int_equal(r.agent, agent);
    assert_int_equal(core_zsched_agents(z), 1);
    core_zsched_free(z);
}

/* The pool gives out the agent idled last, so that its oldest expire. */
static void test_idle_pool_warmest_first(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t v, ended[4];

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    add(z, &smtp_rule, "smtp", "b", 2, 0, 0, &r);
    assert_int_equal(core_zsched_next_vertex(z, 1, 0, &v), 1);
    core_zsched_vertex_done(z, 1, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, 1, 1 * SEC, &v), 0);
    assert_int_equal(core_zsched_next_vertex(z, 2, 0, &v), 1);
    core_zsched_vertex_done(z, 2, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, 2, 2 * SEC, &v), 0);
    add(z, &smtp_rule, "smtp", "c", 3, 3 * SEC, 3 * SEC, &r);
    assert_int_equal(r.how, CORE_ZSTART_REUSE);
    assert_int_equal(r.agent, 2);
    assert_int_equal(view(z, "smtp", "c", 1).ring_idle, 1);
    assert_int_equal(core_zsched_idle_expire(z, 61 * SEC, ended, 4), 1);
    assert_int_equal(ended[0], 1);
    assert_int_equal(core_zsched_agents(z), 1);
    core_zsched_free(z);
}

/* "If no jobs appear within some time (configurable with 'idlemax='
 * entry in config file), the transporter programs from idle pool are
 * killed." */
static void test_idlemax_expiry(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t v, ended[4];

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 0, &v), 1);
    core_zsched_vertex_done(z, r.agent, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 10 * SEC, &v), 0);
    assert_int_equal(core_zsched_next_timer(z), 70 * SEC);
    assert_int_equal(core_zsched_idle_expire(z, 69 * SEC, ended, 4), 0);
    assert_int_equal(core_zsched_idle_expire(z, 70 * SEC, ended, 4), 1);
    assert_int_equal(ended[0], r.agent);
    assert_int_equal(core_zsched_agents(z), 0);
    assert_int_equal(core_zsched_next_timer(z), CORE_TIME_NEVER);
    /* the next vertex needs a new agent */
    add(z, &smtp_rule, "smtp", "a", 2, 80 * SEC, 80 * SEC, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    core_zsched_free(z);
}

/* At maxta, an idle agent of another ring is ended to make room. */
static void test_maxta_ends_idle_elsewhere(void **state)
{
    struct core_zsched *z = zs(1);
    struct core_zstart_result r;
    uint64_t v, first;

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    first = r.agent;
    assert_int_equal(core_zsched_next_vertex(z, first, 0, &v), 1);
    core_zsched_vertex_done(z, first, v, -1);
    assert_int_equal(core_zsched_next_vertex(z, first, 0, &v), 0);
    add(z, &host_rule, "mdir", "x", 2, 1 * SEC, 1 * SEC, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    assert_int_equal(r.ended, first);
    assert_int_equal(core_zsched_agents(z), 1);
    core_zsched_free(z);
}

/* "The "proc"-pointer is used as a flag to tell that the re-scheduled
 * vertex is not eligible for a startup with current thread processing
 * agents (if it was re-scheduled because of something that transport
 * agent reported)" */
static void test_reported_retry_not_fed_again(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    uint64_t v, ids[2];

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 0, &v), 1);
    core_zsched_vertex_done(z, r.agent, v, 0); /* retry "now" */
    assert_int_equal(core_zsched_next_vertex(z, r.agent, 0, &v), 0);
    assert_int_equal(core_zsched_thread_vertices(z, "smtp", "a", 1, ids, 2), 1);
    assert_int_equal(view(z, "smtp", "a", 1).running, 0);
    core_zsched_free(z);
}

/* "(Except when the configuration is equiped with 'queueonly' option --
 * then only SMTP originated "ETRN hostpart" will start the thread.)" */
static void test_queueonly_released_by_etrn(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r, started[4];
    struct core_zrule held = smtp_rule;

    (void)state;
    held.queueonly = 1;
    add(z, &held, "smtp", "dialup.example", 1, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_QUEUEONLY);
    add(z, &held, "smtp", "other.example", 2, 0, 0, &r);
    assert_int_equal(core_zsched_agenda(z, 100 * SEC, started, 4), 0);
    assert_int_equal(core_zsched_next_timer(z), CORE_TIME_NEVER);
    assert_int_equal(
        core_zsched_flush(z, "dialup.example", 100 * SEC, started, 4), 1);
    assert_int_equal(started[0].how, CORE_ZSTART_NEW);
    assert_int_equal(view(z, "smtp", "dialup.example", 1).running, 1);
    assert_int_equal(view(z, "smtp", "other.example", 1).running, 0);
    core_zsched_free(z);
}

/* The issue: an agent that crashes, hangs, speaks garbage or exits
 * mid-job loses nothing, and its thread restarts with a new agent after
 * a backoff. */
static void test_agent_gone(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r, started[2];
    struct core_zrule aged = smtp_rule;
    uint64_t v, agent, ids[4];

    (void)state;
    aged.ageorder = 1;
    core_zsched_vertex_add(z, &aged, "smtp", "a", 1, 0, 1, 0, &r);
    agent = r.agent;
    core_zsched_vertex_add(z, &aged, "smtp", "a", 2, 0, 2, 0, &r);
    core_zsched_vertex_add(z, &aged, "smtp", "a", 3, 0, 3, 0, &r);
    assert_int_equal(core_zsched_next_vertex(z, agent, 0, &v), 1);
    core_zsched_vertex_done(z, agent, v, -1); /* 1 delivered */
    assert_int_equal(core_zsched_next_vertex(z, agent, 0, &v), 1);
    assert_int_equal(v, 2); /* fed, never reported: the agent dies */
    core_zsched_agent_gone(z, agent, 10 * SEC, 60 * SEC);
    assert_int_equal(core_zsched_agents(z), 0);
    assert_int_equal(core_zsched_thread_vertices(z, "smtp", "a", 1, ids, 4), 2);
    assert_int_equal(ids[0], 2);
    assert_int_equal(ids[1], 3);
    assert_int_equal(view(z, "smtp", "a", 1).running, 0);
    assert_int_equal(view(z, "smtp", "a", 1).wakeup, 70 * SEC);
    assert_int_equal(core_zsched_next_timer(z), 70 * SEC);
    assert_int_equal(core_zsched_agenda(z, 69 * SEC, started, 2), 0);
    assert_int_equal(core_zsched_agenda(z, 70 * SEC, started, 2), 1);
    assert_int_equal(started[0].how, CORE_ZSTART_NEW);
    assert_true(started[0].agent != agent);
    assert_int_equal(core_zsched_next_vertex(z, started[0].agent, 70 * SEC, &v),
                     1);
    assert_int_equal(v, 2);
    /* a report from the dead agent is ignored */
    core_zsched_vertex_done(z, agent, 3, -1);
    assert_int_equal(view(z, "smtp", "a", 1).vertices, 2);
    /* an idle agent that dies is just forgotten */
    core_zsched_agent_gone(z, 999, 70 * SEC, SEC);
    assert_int_equal(core_zsched_agents(z), 1);
    core_zsched_free(z);
}

/* A property over random work: no vertex is ever lost or duplicated,
 * maxta and maxring hold, an agent is on at most one thread. */
struct live {
    uint64_t agent[64];
    uint64_t fed[64]; /* its last vertex not yet reported, 0: none */
    size_t n;
};

static void live_add(struct live *l, const struct core_zstart_result *r)
{
    if (r->ended)
        for (size_t i = 0; i < l->n; i++)
            if (l->agent[i] == r->ended)
                l->agent[i] = l->agent[--l->n], l->fed[i] = l->fed[l->n];
    if ((r->how == CORE_ZSTART_NEW) && l->n < 64) {
        l->agent[l->n] = r->agent;
        l->fed[l->n++] = 0;
    }
}

static void live_drop(struct live *l, uint64_t agent)
{
    for (size_t i = 0; i < l->n; i++)
        if (l->agent[i] == agent)
            l->agent[i] = l->agent[--l->n], l->fed[i] = l->fed[l->n];
}

static unsigned lcg_state;

static unsigned lcg(unsigned n)
{
    lcg_state = lcg_state * 1103515245u + 12345u;
    return (lcg_state >> 16) % n;
}

static unsigned lcg_rand(void *ctx, unsigned n)
{
    (void)ctx;
    return lcg(n);
}

static size_t total_vertices(struct core_zsched *z, int check_agents)
{
    static const char *const hosts[] = {"a", "b", "c", "d"};
    size_t total = 0;

    for (int h = 0; h < 4; h++) {
        struct core_zthread_view v = view(z, "smtp", hosts[h], 1);

        total += v.vertices + view(z, "mdir", hosts[h], 2).vertices;
        if (check_agents && v.found)
            assert_true(v.ring_agents <= 2); /* maxring */
    }
    return total;
}

static void random_step(struct core_zsched *z, struct live *l,
                        const struct core_zrule *rules, uint64_t *next_id,
                        size_t *outstanding, core_time_t now)
{
    static const char *const hosts[] = {"a", "b", "c", "d"};
    struct core_zstart_result r, started[8];
    uint64_t ended[8], v;
    unsigned op = lcg(6);
    size_t k, i;

    if (op == 0) {
        int which = (int)lcg(2);

        core_zsched_vertex_add(z, rules + which, which ? "mdir" : "smtp",
                               hosts[lcg(4)], (*next_id)++,
                               now + (core_time_t)lcg(3) * SEC, now, now, &r);
        (*outstanding)++;
        live_add(l, &r);
    } else if (op == 1) {
        k = core_zsched_agenda(z, now, started, 8);
        for (i = 0; i < k; i++)
            live_add(l, started + i);
    } else if (op == 2 && l->n) {
        i = lcg((unsigned)l->n);
        if (l->fed[i] == 0 && core_zsched_next_vertex(z, l->agent[i], now, &v))
            l->fed[i] = v;
    } else if (op == 3 && l->n) {
        i = lcg((unsigned)l->n);
        if (l->fed[i]) {
            int retry = (int)lcg(2);

            core_zsched_vertex_done(z, l->agent[i], l->fed[i],
                                    retry ? now + SEC : -1);
            *outstanding -= retry ? 0 : 1;
            l->fed[i] = 0;
        }
    } else if (op == 4 && l->n && lcg(4) == 0) {
        i = lcg((unsigned)l->n);
        core_zsched_agent_gone(z, l->agent[i], now, 2 * SEC);
        live_drop(l, l->agent[i]);
    } else {
        k = core_zsched_idle_expire(z, now, ended, 8);
        for (i = 0; i < k; i++)
            live_drop(l, ended[i]);
    }
}

static void test_nothing_lost_property(void **state)
{
    struct core_zsched *z;
    struct core_zrule rules[2] = {smtp_rule, host_rule};
    struct live l = {{0}, {0}, 0};
    uint64_t next_id = 1;
    size_t outstanding = 0;
    core_time_t now = 0;

    (void)state;
    rules[0].maxring = 2;
    rules[0].idlemax = 5 * SEC;
    rules[1].idlemax = 5 * SEC;
    lcg_state = 20;
    z = core_zsched_create(3, 2 * SEC, lcg_rand, NULL);
    for (int step = 0; step < 20000; step++) {
        random_step(z, &l, rules, &next_id, &outstanding, now);
        now += (core_time_t)lcg(300);
        assert_true(core_zsched_agents(z) <= 3); /* maxta */
        assert_int_equal(core_zsched_agents(z), (int)l.n);
        assert_int_equal(total_vertices(z, 1), outstanding);
    }
    assert_true(next_id > 1000);
    core_zsched_free(z);
}

/* What sluice status shows of a channel, and whose thread an agent runs
 * (the daemon names its agent's host in the log from it). */
static void test_summary_and_agent_thread(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r;
    struct core_zsummary s;
    const char *channel, *host;
    core_time_t idlemax;
    uint64_t v;

    (void)state;
    add(z, &host_rule, "smtp", "a", 1, 0, 0, &r);
    add(z, &host_rule, "smtp", "a", 2, 0, 0, &r);
    add(z, &host_rule, "smtp", "b", 3, 5 * SEC, 0, &r);
    add(z, &smtp_rule, "lmtp", "c", 4, 0, 0, &r);
    core_zsched_summary(z, "smtp", &s);
    assert_int_equal(s.rings, 2); /* $host: a ring per host */
    assert_int_equal(s.threads, 2);
    assert_int_equal(s.vertices, 3);
    assert_int_equal(s.agents, 1);
    assert_int_equal(s.running, 1);
    assert_int_equal(s.idle, 0);
    assert_int_equal(core_zsched_agent_thread(z, 1, &channel, &host, &idlemax),
                     1);
    assert_string_equal(channel, "smtp");
    assert_string_equal(host, "a");
    assert_int_equal(idlemax, 60 * SEC);
    /* agent 1 runs a dry: idle, running no thread */
    while (core_zsched_next_vertex(z, 1, 0, &v))
        core_zsched_vertex_done(z, 1, v, -1);
    assert_int_equal(core_zsched_agent_thread(z, 1, &channel, &host, &idlemax),
                     0);
    assert_string_equal(host, "");
    assert_int_equal(core_zsched_agent_thread(z, 99, &channel, &host, &idlemax),
                     0);
    core_zsched_summary(z, "smtp", &s);
    assert_int_equal(s.threads, 1);
    assert_int_equal(s.vertices, 1);
    assert_int_equal(s.idle, 1);
    assert_int_equal(s.running, 0);
    core_zsched_summary(z, "lmtp", &s);
    assert_int_equal(s.rings, 1);
    assert_int_equal(s.vertices, 1);
    core_zsched_summary(z, "none", &s);
    assert_int_equal(s.rings + s.threads + s.vertices, 0);
    core_zsched_free(z);
}

/* A reload's maxta: lowered, no new agent starts while as many run;
 * raised, the waiting thread starts at its next agenda. */
static void test_maxta_set(void **state)
{
    struct core_zsched *z = zs(1);
    struct core_zstart_result r, started[2];

    (void)state;
    add(z, &smtp_rule, "smtp", "a", 1, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_NEW);
    add(z, &smtp_rule, "smtp", "b", 2, 0, 0, &r);
    assert_int_equal(r.how, CORE_ZSTART_LIMIT);
    core_zsched_maxta_set(z, 2);
    assert_int_equal(core_zsched_agenda(z, 29 * SEC, started, 2), 0);
    assert_int_equal(core_zsched_next_timer(z), 30 * SEC);
    assert_int_equal(core_zsched_agenda(z, 30 * SEC, started, 2), 1);
    assert_int_equal(started[0].how, CORE_ZSTART_NEW);
    core_zsched_maxta_set(z, 1);
    add(z, &smtp_rule, "smtp", "c", 3, 30 * SEC, 30 * SEC, &r);
    assert_int_equal(r.how, CORE_ZSTART_LIMIT);
    core_zsched_free(z);
}

/* The wake-up heap and the tables behind the same functions: many
 * threads, due at many times, come out of the agenda in time order,
 * each taking the ring's one agent in turn. */
static void test_agenda_in_time_order(void **state)
{
    struct core_zsched *z = zs(0);
    struct core_zstart_result r, started[1];
    char host[16];
    uint64_t v;

    (void)state;
    for (int i = 0; i < 500; i++) {
        snprintf(host, sizeof(host), "h%d", i);
        /* wake-ups 1..500 s, scattered */
        add(z, &smtp_rule, "smtp", host, (uint64_t)i + 1,
            (core_time_t)(((i * 7919) % 500) + 1) * SEC, 0, &r);
        assert_int_equal(r.how, CORE_ZSTART_NOT_DUE);
    }
    for (core_time_t t = 1; t <= 500; t++) {
        assert_int_equal(core_zsched_next_timer(z), t * SEC);
        assert_int_equal(core_zsched_agenda(z, t * SEC, started, 1), 1);
        assert_int_equal(
            core_zsched_next_vertex(z, started[0].agent, t * SEC, &v), 1);
        assert_int_equal(((v - 1) * 7919) % 500 + 1, t);
        core_zsched_vertex_done(z, started[0].agent, v, -1);
        assert_int_equal(
            core_zsched_next_vertex(z, started[0].agent, t * SEC, &v), 0);
    }
    core_zsched_free(z);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thread_by_triplet),
        cmocka_unit_test(test_time_order_and_wakeup),
        cmocka_unit_test(test_ring_without_host),
        cmocka_unit_test(test_ring_with_host),
        cmocka_unit_test(test_one_agent_per_thread),
        cmocka_unit_test(test_whole_thread_in_one_run),
        cmocka_unit_test(test_randomized_order),
        cmocka_unit_test(test_ageorder),
        cmocka_unit_test(test_limits_reschedule),
        cmocka_unit_test(test_idle_pool_reuse),
        cmocka_unit_test(test_idle_pool_warmest_first),
        cmocka_unit_test(test_idlemax_expiry),
        cmocka_unit_test(test_maxta_ends_idle_elsewhere),
        cmocka_unit_test(test_reported_retry_not_fed_again),
        cmocka_unit_test(test_queueonly_released_by_etrn),
        cmocka_unit_test(test_agent_gone),
        cmocka_unit_test(test_nothing_lost_property),
        cmocka_unit_test(test_summary_and_agent_thread),
        cmocka_unit_test(test_maxta_set),
        cmocka_unit_test(test_agenda_in_time_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
