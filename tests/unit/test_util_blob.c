/*
 * test_util_blob - util/blob.c: one copy of the bytes, freed with the last
 * reference. Leaks and double frees show under "make asan" and
 * "make valgrind".
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* Adopted bytes are the blob's own: the same pointer, not a copy. */
static void test_adopt(void **state)
{
    char *data = xstrdup("Subject: x\r\n\r\nbody\r\n");
    struct util_blob *b = util_blob_adopt(data, strlen(data));

    (void)state;
    assert_ptr_equal(util_blob_data(b), data);
    assert_int_equal(util_blob_len(b), 20);
    util_blob_unref(b);
}

/* A copy holds len bytes and a NUL after them, apart from the source. */
static void test_copy(void **state)
{
    char src[] = "abc\0def";
    struct util_blob *b = util_blob_copy(src, 7);

    (void)state;
    assert_ptr_not_equal(util_blob_data(b), src);
    assert_int_equal(util_blob_len(b), 7);
    assert_memory_equal(util_blob_data(b), "abc\0def", 8);
    src[0] = 'X';
    assert_int_equal(util_blob_data(b)[0], 'a');
    util_blob_unref(b);
}

/* Every owner reads the same bytes until the last one lets go. */
static void test_references(void **state)
{
    struct util_blob *b = util_blob_copy("body", 4);
    struct util_blob *r1 = util_blob_ref(b);
    struct util_blob *r2 = util_blob_ref(b);
    const char *data = util_blob_data(b);

    (void)state;
    assert_ptr_equal(r1, b);
    assert_ptr_equal(r2, b);
    util_blob_unref(b);
    assert_ptr_equal(util_blob_data(r1), data);
    assert_string_equal(util_blob_data(r1), "body");
    util_blob_unref(r1);
    assert_string_equal(util_blob_data(r2), "body");
    util_blob_unref(r2); /* freed here: asan/valgrind see no leak */
    util_blob_unref(NULL);
}

/* An empty body is a blob too, with readable (empty) data. */
static void test_empty(void **state)
{
    struct util_blob *b = util_blob_copy("", 0);

    (void)state;
    assert_int_equal(util_blob_len(b), 0);
    assert_string_equal(util_blob_data(b), "");
    util_blob_unref(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adopt),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_references),
        cmocka_unit_test(test_empty),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
