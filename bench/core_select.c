/*
 * NAME
 *	core_select - how fast core/ selects entries, how much memory it uses
 * SYNOPSIS
 *	build/bench/core_select [JOBS [DESTINATIONS [RCPTS_PER_JOB [SECONDS]]]]
 * DESCRIPTION
 *	Keeps JOBS messages (default 10,000) active in one transport, each
 *	with RCPTS_PER_JOB recipients (default 10) for destinations drawn
 *	at random among DESTINATIONS (default 1,000), and for SECONDS
 *	(default 2) selects entries with core_select() while up to 100
 *	deliveries (the transport's process limit) are in flight, ending
 *	the oldest delivery whenever nothing more can be selected. A
 *	finished message is replaced by a new one, so the number of active
 *	jobs stays put. Destination windows start at 5 and grow to 20 with
 *	feedback, so jobs become blockers and are unblocked as they would
 *	be in the daemon.
 *
 *	Prints selections per second (each with its matching end of
 *	delivery and the replacement messages, i.e. the scheduler's whole
 *	work per entry) and the bytes of scheduler state per in-core
 *	recipient, measured with mallinfo2() around building the initial
 *	workload (malloc's own overhead included; core/ stores no address
 *	strings, only the caller's recipient numbers).
 *
 *	Not a test: run by hand, numbers in doc/scheduling.md.
 */

#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/core.h"
#include "util/util.h"

#define FLIGHT 100

static uint64_t rng_state = 42;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static struct core_queue **dests;
static int ndests, rcpts_per_job;
static long finished, next_id;
static struct core *core;

static void add_message(core_time_t now)
{
    struct core_message *m = core_message_create(core, ++next_id, now, NULL);

    for (int i = 0; i < rcpts_per_job; i++)
        core_message_add(m, dests[rng() % ndests], (uint64_t)i);
    core_message_release(m);
}

static void message_done(void *ctx, struct core_message *m)
{
    (void)ctx;
    (void)m;
    finished++;
}

static double seconds(void)
{
    return (double)util_clock_mono_us() / 1e6;
}

int main(int argc, char **argv)
{
    static const struct core_callbacks cb = {.message_done = message_done};
    int jobs = argc > 1 ? atoi(argv[1]) : 10000;
    double duration = argc > 4 ? atof(argv[4]) : 2.0;
    struct core_transport_params p;
    struct core_transport *t;
    struct core_entry *flight[FLIGHT];
    int head = 0, count = 0;
    struct mallinfo2 before, after;
    long selections = 0, rcpts;
    core_time_t now = 0;
    double start, elapsed;
    char key[32];

    ndests = argc > 2 ? atoi(argv[2]) : 1000;
    rcpts_per_job = argc > 3 ? atoi(argv[3]) : 10;
    if (jobs < 1 || ndests < 1 || rcpts_per_job < 1 || duration <= 0) {
        fprintf(stderr, "usage: core_select [JOBS [DESTINATIONS "
                        "[RCPTS_PER_JOB [SECONDS]]]]\n");
        return 64;
    }
    core = core_create(&cb, NULL);
    core_transport_params_init(&p);
    t = core_transport_create(core, "smtp", &p);
    dests = malloc(sizeof(*dests) * ndests);
    for (int i = 0; i < ndests; i++) {
        snprintf(key, sizeof(key), "d%d.example", i);
        dests[i] = core_queue_create(t, key);
    }

    before = mallinfo2();
    for (int i = 0; i < jobs; i++)
        add_message(now);
    after = mallinfo2();
    rcpts = (long)jobs * rcpts_per_job;

    start = seconds();
    do {
        for (int batch = 0; batch < 10000; batch++) {
            struct core_entry *e;

            if (count < FLIGHT && (e = core_select(core, now)) != NULL) {
                flight[(head + count++) % FLIGHT] = e;
                selections++;
                continue;
            }
            if (count == 0)
                break;
            core_entry_done(flight[head], now, CORE_HOP_OK, NULL);
            head = (head + 1) % FLIGHT;
            count--;
            while (finished > 0) {
                finished--;
                add_message(now);
            }
            now += 1; /* a millisecond per delivery */
        }
        elapsed = seconds() - start;
    } while (elapsed < duration);

    printf("core_select: %d active jobs, %d destinations, %d recipients "
           "per job\n",
           jobs, ndests, rcpts_per_job);
    printf("selections per second: %.0f (%ld in %.2f s)\n",
           selections / elapsed, selections, elapsed);
    printf("scheduler bytes per in-core recipient: %.1f (%zu bytes for %ld "
           "recipients)\n",
           (double)(after.uordblks - before.uordblks) / rcpts,
           after.uordblks - before.uordblks, rcpts);
    while (count > 0) {
        core_entry_done(flight[head], now, CORE_HOP_OK, NULL);
        head = (head + 1) % FLIGHT;
        count--;
    }
    core_free(core);
    free(dests);
    return 0;
}
