/*
 * NAME
 *	zsched - time ZMailer's thread scheduler (core/zthread.c) at scale
 * SYNOPSIS
 *	build/bench/zsched [VERTICES...]
 * DESCRIPTION
 *	For each count of vertices (default 10000, 50000 and 100000), in
 *	two shapes: spread over one host per ten vertices (many threads,
 *	each its own ring, as the built-in SMTP agent makes them), and all
 *	for one host (one long thread): adds them all (maxta 100, so most
 *	threads meet the limit and wait), then runs the queue dry as the
 *	daemon would (the agenda, each agent fed and reporting until its
 *	run is over, the clock moving on by the limit delay), and prints
 *	the microseconds per vertex of each phase and of next_timer calls.
 *	A measurement, printed for a person (doc/performance.md), never
 *	asserted.
 */

#include "core/core.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static unsigned lcg(void *ctx, unsigned n)
{
    static uint64_t s = 88172645463325252ULL;

    (void)ctx;
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((s >> 33) % n);
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

struct agents {
    uint64_t id[4096];
    size_t n;
};

static void agents_add(struct agents *a, const struct core_zstart_result *r)
{
    if ((r->how == CORE_ZSTART_NEW || r->how == CORE_ZSTART_REUSE) &&
        a->n < sizeof(a->id) / sizeof(a->id[0]))
        a->id[a->n++] = r->agent;
}

/* One step of every busy agent: a vertex delivered, or its run over. */
static size_t agents_step(struct core_zsched *z, struct agents *a,
                          core_time_t now)
{
    size_t done = 0, k = 0;

    for (size_t i = 0; i < a->n; i++) {
        uint64_t v;

        if (core_zsched_next_vertex(z, a->id[i], now, &v)) {
            core_zsched_vertex_done(z, a->id[i], v, -1);
            done++;
            a->id[k++] = a->id[i];
        }
    }
    a->n = k;
    return done;
}

static void bench(size_t vertices, size_t per_host)
{
    struct core_zsched *z = core_zsched_create(100, 1000, lcg, NULL);
    struct core_zrule rule = {1, 0, 100000, 0, 0, 1};
    struct core_zstart_result out[128];
    struct agents busy = {0};
    uint64_t ended[128];
    core_time_t now = 0;
    size_t done = 0, rounds = 0, timers = 0;
    double t0, t1, t2, tt = 0;
    char host[32];

    t0 = now_us();
    for (size_t i = 0; i < vertices; i++) {
        struct core_zstart_result r;

        snprintf(host, sizeof(host), "h%zu.example", i / per_host);
        core_zsched_vertex_add(z, &rule, "smtp", host, i + 1, now, now, now,
                               &r);
        agents_add(&busy, &r);
    }
    t1 = now_us();
    while (done < vertices && rounds < 100000000) {
        double ts;

        now += 10; /* a delivery takes 10 ms */
        done += agents_step(z, &busy, now);
        rounds++;
        if (busy.n > 0 && rounds % 100 != 0)
            continue;
        ts = now_us();
        if (core_zsched_next_timer(z) > now && busy.n == 0)
            now = core_zsched_next_timer(z);
        tt += now_us() - ts;
        timers++;
        (void)core_zsched_idle_expire(z, now, ended, 128);
        for (size_t n = core_zsched_agenda(z, now, out, 128), k = 0; k < n; k++)
            agents_add(&busy, &out[k]);
    }
    t2 = now_us();
    printf("%7zu vertices, %6zu hosts: add %.2f us/vertex, drain %.2f "
           "us/vertex, next_timer %.2f us/call (%zu calls)\n",
           vertices, (vertices + per_host - 1) / per_host, (t1 - t0) / vertices,
           (t2 - t1) / vertices, timers ? tt / timers : 0, timers);
    core_zsched_free(z);
}

int main(int argc, char **argv)
{
    size_t counts[16] = {10000, 50000, 100000};
    int n = 3;

    if (argc > 1) {
        n = 0;
        for (int i = 1; i < argc && n < 16; i++)
            counts[n++] = (size_t)strtoul(argv[i], NULL, 10);
    }
    for (int i = 0; i < n; i++) {
        bench(counts[i], 10);
        bench(counts[i], counts[i]);
    }
    return 0;
}
