/*
 * test_util_list - the words of a list parameter: separators, empty
 * lists, membership ignoring case
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "util/util.h"

static void test_next(void **state)
{
    const char *cur = " a.example,[10.0.0.1]:25\t,, b.example\n";
    const char *w;
    size_t len;

    (void)state;
    w = util_list_next(&cur, &len);
    assert_int_equal(len, 9);
    assert_memory_equal(w, "a.example", 9);
    w = util_list_next(&cur, &len);
    assert_int_equal(len, 13);
    assert_memory_equal(w, "[10.0.0.1]:25", 13);
    w = util_list_next(&cur, &len);
    assert_int_equal(len, 9);
    assert_memory_equal(w, "b.example", 9);
    assert_null(util_list_next(&cur, &len));
    assert_null(util_list_next(&cur, &len));
    cur = "";
    assert_null(util_list_next(&cur, &len));
    cur = " ,\t";
    assert_null(util_list_next(&cur, &len));
}

static void test_has(void **state)
{
    (void)state;
    assert_true(util_list_has("a.example, [relay.example]:587", "A.Example"));
    assert_true(
        util_list_has("a.example, [relay.example]:587", "[relay.example]:587"));
    assert_false(util_list_has("a.example, b.example", "example"));
    assert_false(util_list_has("a.example, b.example", "a.example.org"));
    assert_false(util_list_has("", "a.example"));
    assert_false(util_list_has("a.example", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_next),
        cmocka_unit_test(test_has),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
