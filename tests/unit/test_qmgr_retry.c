/*
 * test_qmgr_retry - what becomes of a message when its last in-core entry
 * is done (postfix-reference-notes.md, "Queue life cycle"): removed when
 * nothing was deferred; else expired after the lifetime, or deferred with
 * a retry time of "now + clamp(now - arrival, minimal_backoff_time,
 * maximal_backoff_time) (so the wait roughly doubles per attempt)".
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "qmgr/qmgr.h"

#define SEC  1000000LL /* microseconds */
#define HOUR (3600 * SEC)
#define DAY  (24 * HOUR)

static struct conf *conf_defaults(void)
{
    struct conf *conf = conf_create();
    char why[256];

    if (conf_validate(conf, why, sizeof(why)) != 0)
        fail_msg("conf_validate: %s", why);
    return conf;
}

static void test_defaults(void **state)
{
    struct conf *conf = conf_defaults();
    struct qmgr_retry r;

    (void)state;
    qmgr_retry_params(conf, &r);
    assert_int_equal(r.min_backoff, 300 * SEC);
    assert_int_equal(r.max_backoff, 4000 * SEC);
    assert_int_equal(r.lifetime, 5 * DAY);
    assert_int_equal(r.bounce_lifetime, 5 * DAY);
    conf_free(conf);
}

static void test_backoff_doubles(void **state)
{
    struct conf *conf = conf_defaults();
    struct qmgr_retry r;
    int64_t arrival = 1000 * DAY, now = arrival, next = 0;
    int64_t waits[8];

    (void)state;
    qmgr_retry_params(conf, &r);
    /* Nothing deferred: the message is done. */
    assert_int_equal(qmgr_retry_decide(&r, 0, 0, arrival, now, &next),
                     QMGR_DONE);
    /* A first failure at once: the minimum. */
    assert_int_equal(qmgr_retry_decide(&r, 1, 0, arrival, now, &next),
                     QMGR_RETRY);
    assert_int_equal(next - now, 300 * SEC);
    /* Retrying when due: the age, so each wait doubles, up to the max. */
    for (int i = 0; i < 8; i++) {
        now = next;
        assert_int_equal(qmgr_retry_decide(&r, 1, 0, arrival, now, &next),
                         QMGR_RETRY);
        waits[i] = (next - now) / SEC;
    }
    assert_int_equal(waits[0], 300);
    assert_int_equal(waits[1], 600);
    assert_int_equal(waits[2], 1200);
    assert_int_equal(waits[3], 2400);
    assert_int_equal(waits[4], 4000);
    assert_int_equal(waits[7], 4000);
    /* A clock that went back: still at least the minimum. */
    assert_int_equal(
        qmgr_retry_decide(&r, 1, 0, arrival, arrival - HOUR, &next),
        QMGR_RETRY);
    assert_int_equal(next - (arrival - HOUR), 300 * SEC);
    conf_free(conf);
}

/*
 * Jitter: up to a tenth more than the backoff, so that messages deferred
 * together (or machines restarted together) do not come back in step.
 */
static void test_jitter(void **state)
{
    int64_t seen[1001];
    int distinct = 0;

    (void)state;
    assert_int_equal(qmgr_retry_jitter(300 * SEC, 0), 300 * SEC);
    assert_int_equal(qmgr_retry_jitter(300 * SEC, 500), 315 * SEC);
    assert_int_equal(qmgr_retry_jitter(300 * SEC, 1000), 330 * SEC);
    assert_int_equal(qmgr_retry_jitter(300 * SEC, 1001), 300 * SEC);
    for (uint32_t rnd = 0; rnd <= 1000; rnd++) {
        int64_t w = qmgr_retry_jitter(4000 * SEC, rnd * 7919u);

        assert_true(w >= 4000 * SEC && w <= 4400 * SEC);
        seen[rnd] = w;
    }
    for (int i = 0; i <= 1000; i++) {
        int first = 1;

        for (int j = 0; j < i && first; j++)
            first = seen[j] != seen[i];
        distinct += first;
    }
    assert_true(distinct > 900);
}

static void test_expiry(void **state)
{
    struct conf *conf = conf_defaults();
    struct qmgr_retry r;
    int64_t arrival = 1000 * DAY, next = 0;
    char why[256];

    (void)state;
    qmgr_retry_params(conf, &r);
    /* At the lifetime it is still retried; past it, it expires. */
    assert_int_equal(
        qmgr_retry_decide(&r, 1, 0, arrival, arrival + 5 * DAY, &next),
        QMGR_RETRY);
    assert_int_equal(
        qmgr_retry_decide(&r, 1, 0, arrival, arrival + 5 * DAY + 1, &next),
        QMGR_EXPIRE);
    /* A bounce (null sender) lives by bounce_queue_lifetime. */
    assert_int_equal(
        conf_set(conf, "bounce_queue_lifetime", "1d", why, sizeof(why)), 0);
    qmgr_retry_params(conf, &r);
    assert_int_equal(
        qmgr_retry_decide(&r, 1, 1, arrival, arrival + 2 * DAY, &next),
        QMGR_EXPIRE);
    assert_int_equal(
        qmgr_retry_decide(&r, 1, 0, arrival, arrival + 2 * DAY, &next),
        QMGR_RETRY);
    /* A lifetime of 0: one attempt only. */
    assert_int_equal(
        conf_set(conf, "maximal_queue_lifetime", "0", why, sizeof(why)), 0);
    qmgr_retry_params(conf, &r);
    assert_int_equal(qmgr_retry_decide(&r, 1, 0, arrival, arrival, &next),
                     QMGR_EXPIRE);
    assert_int_equal(qmgr_retry_decide(&r, 0, 0, arrival, arrival, &next),
                     QMGR_DONE);
    conf_free(conf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_backoff_doubles),
        cmocka_unit_test(test_jitter),
        cmocka_unit_test(test_expiry),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
