/*
 * test_util_buf - the growing buffer: bytes, strings, formatted text,
 * reset, take and free
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static void test_empty(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    char *s;

    (void)state;
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    s = util_buf_take(&b);
    assert_string_equal(s, "");
    free(s);
    util_buf_free(&b);
    assert_null(b.data);
}

static void test_bytes_keep_a_nul_after_them(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    static const char rec[] = {1, 0, 2};

    (void)state;
    util_buf_add(&b, rec, sizeof(rec));
    assert_int_equal(b.len, 3);
    assert_memory_equal(b.data, rec, 3);
    assert_int_equal(b.data[3], 0);
    util_buf_add(&b, "", 0);
    assert_int_equal(b.len, 3);
    util_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.size, 0);
}

static void test_strings_and_printf(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    char *s;

    (void)state;
    util_buf_puts(&b, "1");
    for (int i = 2; i <= 5; i++)
        util_buf_printf(&b, " %d", i);
    assert_string_equal(b.data, "1 2 3 4 5");
    assert_int_equal(b.len, 9);
    util_buf_reset(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(b.data, "");
    util_buf_printf(&b, "%s=%05d", "n", 42);
    s = util_buf_take(&b);
    assert_string_equal(s, "n=00042");
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    free(s);
}

static void test_growth(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    char expect[10001];

    (void)state;
    for (int i = 0; i < 10000; i++) {
        expect[i] = (char)('a' + i % 26);
        util_buf_add(&b, &expect[i], 1);
    }
    expect[10000] = 0;
    assert_int_equal(b.len, 10000);
    assert_true(b.size > b.len);
    assert_string_equal(b.data, expect);
    util_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_bytes_keep_a_nul_after_them),
        cmocka_unit_test(test_strings_and_printf),
        cmocka_unit_test(test_growth),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
