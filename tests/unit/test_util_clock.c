/*
 * test_util_clock - the monotonic clock (milliseconds, microseconds)
 * and the wall clock agree with the system's and move forward
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <time.h>

#include "util/util.h"

static void test_monotonic(void **state)
{
    struct timespec ts, pause = {0, 20 * 1000000};
    int64_t before_ms, before_us, sys_ms, after_ms, after_us;

    (void)state;
    before_us = util_clock_mono_us();
    before_ms = util_clock_mono_ms();
    clock_gettime(CLOCK_MONOTONIC, &ts);
    sys_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    assert_true(before_ms <= sys_ms && sys_ms - before_ms < 1000);
    assert_true(before_us / 1000 <= before_ms);
    nanosleep(&pause, NULL);
    after_ms = util_clock_mono_ms();
    after_us = util_clock_mono_us();
    assert_true(after_ms - before_ms >= 20 && after_ms - before_ms < 5000);
    assert_true(after_us - before_us >= 20000);
    assert_true(after_us / 1000 >= after_ms);
}

/* The wall clock between two readings of time(): a machine whose clock
 * is stepped between them (as virtual machines' are) gets three tries. */
static void test_wall(void **state)
{
    int agree = 0;

    (void)state;
    for (int i = 0; i < 3 && !agree; i++) {
        int64_t before = (int64_t)time(NULL);
        int64_t us = util_clock_wall_us();
        int64_t after = (int64_t)time(NULL);

        agree = us / 1000000 >= before && us / 1000000 <= after;
    }
    assert_true(agree);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monotonic),
        cmocka_unit_test(test_wall),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
