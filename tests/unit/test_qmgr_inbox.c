/*
 * test_qmgr_inbox - work handed to the event loop's thread from other
 * threads (the spool's committer calls back from its own thread; the queue
 * manager's state belongs to the loop): every item runs once, on the loop
 * thread, in the order each thread posted them.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdlib.h>

#include "qmgr/qmgr.h"

#define THREADS 4
#define ITEMS   5000

struct item {
    int thread, seq;
};

static pthread_t loop_thread;
static int last_seq[THREADS];
static int ran, wrong_thread, out_of_order;
static struct qmgr_inbox *inbox;
static struct event_base *base;

static void run_item(void *ctx)
{
    struct item *it = ctx;

    if (!pthread_equal(pthread_self(), loop_thread))
        wrong_thread++;
    if (it->seq != last_seq[it->thread] + 1)
        out_of_order++;
    last_seq[it->thread] = it->seq;
    free(it);
    if (++ran == THREADS * ITEMS)
        event_base_loopbreak(base);
}

static void *poster(void *arg)
{
    int t = (int)(intptr_t)arg;

    for (int i = 1; i <= ITEMS; i++) {
        struct item *it = malloc(sizeof(*it));

        it->thread = t;
        it->seq = i;
        qmgr_inbox_post(inbox, run_item, it);
    }
    return NULL;
}

static void test_many_threads(void **state)
{
    pthread_t th[THREADS];
    struct timeval limit = {30, 0};

    (void)state;
    base = event_base_new();
    inbox = qmgr_inbox_create(base);
    assert_non_null(inbox);
    loop_thread = pthread_self();
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, poster, (void *)(intptr_t)t);
    event_base_loopexit(base, &limit); /* a bound, should it hang */
    event_base_dispatch(base);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    assert_int_equal(ran, THREADS * ITEMS);
    assert_int_equal(wrong_thread, 0);
    assert_int_equal(out_of_order, 0);
    qmgr_inbox_free(inbox);
    event_base_free(base);
}

static int counted;

static void count(void *ctx)
{
    (void)ctx;
    counted++;
}

/* Posted from the loop thread itself, and drained by qmgr_inbox_free(). */
static void test_same_thread_and_free(void **state)
{
    (void)state;
    base = event_base_new();
    inbox = qmgr_inbox_create(base);
    qmgr_inbox_post(inbox, count, NULL);
    qmgr_inbox_post(inbox, count, NULL);
    assert_int_equal(counted, 0); /* never from inside the post */
    event_base_loop(base, EVLOOP_NONBLOCK);
    assert_int_equal(counted, 2);
    qmgr_inbox_post(inbox, count, NULL);
    qmgr_inbox_free(inbox); /* runs what is left: nothing is lost */
    assert_int_equal(counted, 3);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_threads),
        cmocka_unit_test(test_same_thread_and_free),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
