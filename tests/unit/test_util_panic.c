/*
 * test_util_panic - util_panic and util_vpanic: the hook gets the
 * message, stderr gets "sluice: PREFIX MESSAGE", and the process aborts
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "util/util.h"

#include "abort_fixture.h"

/* The hook writes what it got to stderr, ahead of the panic's line. */
static void hook(const char *message)
{
    fprintf(stderr, "hook[%s]\n", message);
}

static void layer_panic(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    util_vpanic("layer: ", fmt, ap);
}

static void plain(void *arg)
{
    (void)arg;
    util_panic("queue %s: busy %d > window %d", "smtp:a.example", 3, 2);
}

static void hooked(void *arg)
{
    (void)arg;
    util_panic_hook_set(hook);
    util_panic("out of memory allocating %zu bytes", (size_t)64);
}

static void layered(void *arg)
{
    (void)arg;
    util_panic_hook_set(hook);
    layer_panic("index %d", 7);
}

static void test_panic(void **state)
{
    (void)state;
    expect_abort(plain, NULL,
                 "sluice: panic: queue smtp:a.example: busy 3 > window 2\n");
    expect_abort(hooked, NULL,
                 "hook[out of memory allocating 64 bytes]\n"
                 "sluice: panic: out of memory allocating 64 bytes\n");
    expect_abort(layered, NULL, "hook[index 7]\nsluice: layer: index 7\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_panic),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
