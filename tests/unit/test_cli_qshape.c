/*
 * test_cli_qshape - the table of "sluice qshape" (src/cli/qshape.c) with
 * chosen ages: bucket edges, the domain Postfix's qshape counts an
 * address under, the layout. qshape.sh compares whole tables with
 * Postfix's own qshape on real queues; this pins the edges it cannot
 * reach with ages measured against a moving clock.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#define MIN_US (60 * 1000000LL)

static char *print(const struct cli_qshape *qs, int width)
{
    char *out = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&out, &len);

    assert_non_null(fp);
    cli_qshape_print(qs, fp, width);
    fclose(fp);
    return out;
}

/* "the first bucket counts messages between 0 and 5 minutes old" and
 * "Each bucket has a maximum queue age that is twice as large as that
 * of the previous bucket. The last bucket has no age limit." */
static void test_bucket_edges(void **state)
{
    struct cli_qshape *qs = cli_qshape_create(5, 4, 0);
    char *out;

    (void)state;
    cli_qshape_add(qs, "a@x.test", 5 * MIN_US - 1);  /* under 5: "5" */
    cli_qshape_add(qs, "b@x.test", 5 * MIN_US);      /* 5 to 10: "10" */
    cli_qshape_add(qs, "c@x.test", 10 * MIN_US - 1); /* still "10" */
    cli_qshape_add(qs, "d@x.test", 10 * MIN_US);     /* 10 to 20: "20" */
    cli_qshape_add(qs, "e@x.test", 20 * MIN_US);     /* the last: "20+" */
    cli_qshape_add(qs, "f@x.test", 9999 * MIN_US);
    out = print(qs, 80);
    assert_string_equal(out, "                                                 "
                             "                 T  5 10 20 20+\n"
                             "                                                 "
                             "          TOTAL  6  1  2  1   2\n"
                             "                                                 "
                             "         x.test  6  1  2  1   2\n");
    free(out);
    cli_qshape_free(qs);
}

/* -l: "use a linear age sequence, in other words simple multiples of
 * bucket_time". */
static void test_linear(void **state)
{
    struct cli_qshape *qs = cli_qshape_create(3, 4, 1);
    char *out;

    (void)state;
    cli_qshape_add(qs, "a@x.test", 2 * MIN_US);
    cli_qshape_add(qs, "a@x.test", 3 * MIN_US);
    cli_qshape_add(qs, "a@x.test", 8 * MIN_US);
    cli_qshape_add(qs, "a@x.test", 9 * MIN_US);
    out = print(qs, 80);
    assert_string_equal(out, "                                                 "
                             "                  T  3  6  9 9+\n"
                             "                                                 "
                             "           TOTAL  4  1  1  1  1\n"
                             "                                                 "
                             "          x.test  4  1  1  1  1\n");
    free(out);
    cli_qshape_free(qs);
}

/* The domain: after the last "@", lower case, ".." as ".", one dot off
 * each end; the null address is MAILER-DAEMON; a name too long for its
 * column shows its end after "+"; the largest total first. One bucket
 * is qshape's "0+" (its heads: the loop ends before the first tick). */
static void test_domains(void **state)
{
    struct cli_qshape *qs = cli_qshape_create(5, 1, 0);
    char *out;

    (void)state;
    cli_qshape_add(qs, "\"a@b\"@Sub..Example.TEST.", 0);
    cli_qshape_add(qs, "x@sub.example.test", 0);
    cli_qshape_add(qs, "", 0);
    cli_qshape_add(qs,
                   "y@a-very-long-name-that-cannot-fit-in-the-column-"
                   "left-for-it-at-all.example.test",
                   0);
    out = print(qs, 80);
    assert_string_equal(out, "                                                 "
                             "                           T 0+\n"
                             "                                                 "
                             "                    TOTAL  4  4\n"
                             "                                                 "
                             "         sub.example.test  2  2\n"
                             "                                                 "
                             "            MAILER-DAEMON  1  1\n"
                             "+y-long-name-that-cannot-fit-in-the-column-left-"
                             "for-it-at-all.example.test  1  1\n");
    free(out);
    cli_qshape_free(qs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_edges),
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_domains),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
