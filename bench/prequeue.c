/*
 * NAME
 *	prequeue - fill a spool with messages, fast, for drain benchmarks
 * SYNOPSIS
 *	build/bench/prequeue QUEUE_DIRECTORY MESSAGES [DOMAINS [RCPTS [BYTES]]]
 * DESCRIPTION
 *	Stores MESSAGES messages in the spool under QUEUE_DIRECTORY (made
 *	if missing), incoming, as sluiced would after accepting them: each
 *	from bench@sluice.bench with RCPTS recipients (default 1)
 *	u<N>@d<D>.bench, the domains d1.bench to d<DOMAINS>.bench
 *	(default 1) taken in turn, and a body of about BYTES bytes
 *	(default 2048) with From, To, Subject and Message-ID headers.
 *
 *	It goes through the spool's group commit with up to 256 messages in
 *	flight, so 100,000 messages take seconds, where one "sluice
 *	sendmail" per message (a process and an fsync each) takes minutes.
 *	The daemon must not be running on that queue. Prints the count
 *	stored and the time taken; exits 1 if any message could not be
 *	stored.
 *
 *	Not a test: bench/drain.sh uses it; run by hand.
 */

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "util/util.h"

#define IN_FLIGHT 256

static atomic_long done_ok, done_failed;

static void stored(void *ctx, struct spool_msg *m, int status, const char *why)
{
    (void)ctx;
    if (status < 0) {
        if (atomic_fetch_add(&done_failed, 1) == 0)
            fprintf(stderr, "prequeue: %s\n", why);
    } else {
        atomic_fetch_add(&done_ok, 1);
    }
    spool_msg_free(m);
}

static char *body_of(long n, int domains, int bytes)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_buf_printf(&b,
                    "From: bench@sluice.bench\r\nTo: u%ld@d%ld.bench\r\n"
                    "Subject: drain %ld\r\nMessage-ID: <%ld@sluice.bench>\r\n"
                    "\r\n",
                    n, n % domains + 1, n, n);
    while ((int)b.len < bytes)
        util_buf_puts(&b, "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcd"
                          "efghijklmnopqrstuvwxyz012345\r\n");
    return util_buf_take(&b);
}

static struct spool_msg *message(long n, int domains, int rcpts, int bytes)
{
    struct spool_msg *m = spool_msg_new();
    char addr[64];

    m->sender = xstrdup("bench@sluice.bench");
    m->body = body_of(n, domains, bytes);
    for (int i = 0; i < rcpts; i++) {
        long r = n * rcpts + i;

        snprintf(addr, sizeof(addr), "u%ld@d%ld.bench", r, r % domains + 1);
        if (spool_msg_add_rcpt(m, addr, NULL, 0, NULL) < 0) {
            fprintf(stderr, "prequeue: bad address %s\n", addr);
            exit(1);
        }
    }
    return m;
}

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    struct spool_config cf = {0};
    struct spool *sp;
    char why[512];
    long messages, sent = 0;
    int domains = argc > 3 ? atoi(argv[3]) : 1;
    int rcpts = argc > 4 ? atoi(argv[4]) : 1;
    int bytes = argc > 5 ? atoi(argv[5]) : 2048;
    double t0;

    if (argc < 3 || (messages = atol(argv[2])) <= 0 || domains <= 0 ||
        rcpts <= 0 || bytes < 0) {
        fprintf(stderr, "usage: prequeue QUEUE_DIRECTORY MESSAGES [DOMAINS "
                        "[RCPTS [BYTES]]]\n");
        return 2;
    }
    cf.queue_directory = argv[1];
    if (spool_open(&sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0) {
        fprintf(stderr, "prequeue: %s\n", why);
        return 1;
    }
    t0 = seconds();
    while (sent < messages) {
        if (sent - atomic_load(&done_ok) - atomic_load(&done_failed) >=
            IN_FLIGHT) {
            usleep(200);
            continue;
        }
        if (spool_submit(sp, message(sent, domains, rcpts, bytes), stored,
                         NULL) < 0) {
            fprintf(stderr, "prequeue: cannot submit\n");
            return 1;
        }
        sent++;
    }
    while (atomic_load(&done_ok) + atomic_load(&done_failed) < messages)
        usleep(1000);
    spool_close(sp);
    printf("prequeue: %ld messages of %d recipients stored in %.2f s\n",
           atomic_load(&done_ok), rcpts, seconds() - t0);
    return atomic_load(&done_failed) > 0;
}
