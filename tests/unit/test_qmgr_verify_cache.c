/*
 * test_qmgr_verify_cache - address verification answers and their
 * lifetimes (the reference's address_verify_positive_expire_time 31d,
 * _positive_refresh_time 7d, _negative_expire_time 3d,
 * _negative_refresh_time 3h, _negative_cache yes), and the bound on
 * how many are kept.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "qmgr/qmgr.h"

#define HOUR (3600 * 1000LL)
#define DAY  (24 * HOUR)

static const struct qmgr_verify_cache_params defaults = {
    31 * DAY, 7 * DAY, 3 * DAY, 3 * HOUR, 1, 1000,
};

static struct qmgr_verify_answer answer(enum qmgr_verify_status st,
                                        const char *text)
{
    struct qmgr_verify_answer a = {0};

    a.status = st;
    snprintf(a.dsn, sizeof(a.dsn), "%s",
             st == QMGR_VERIFY_DELIVERABLE     ? "2.1.5"
             : st == QMGR_VERIFY_UNDELIVERABLE ? "5.1.1"
                                               : "4.4.1");
    snprintf(a.text, sizeof(a.text), "%s", text);
    return a;
}

/* Fresh until the refresh time, stale (served) until expiry, then gone. */
static void test_positive_lifetimes(void **state)
{
    struct qmgr_verify_cache *c = qmgr_verify_cache_create(&defaults);
    struct qmgr_verify_answer a = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok"), o;
    int64_t t0 = 1000 * DAY;

    (void)state;
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0, &o),
                     QMGR_VERIFY_MISS);
    qmgr_verify_cache_put(c, "u@x.test", &a, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 7 * DAY - 1, &o),
                     QMGR_VERIFY_FRESH);
    assert_int_equal(o.status, QMGR_VERIFY_DELIVERABLE);
    assert_string_equal(o.text, "250 Ok");
    assert_int_equal(o.updated, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 7 * DAY, &o),
                     QMGR_VERIFY_STALE);
    assert_int_equal(
        qmgr_verify_cache_get(c, "u@x.test", t0 + 31 * DAY - 1, &o),
        QMGR_VERIFY_STALE);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 31 * DAY, &o),
                     QMGR_VERIFY_MISS);
    assert_int_equal(qmgr_verify_cache_count(c), 0);
    qmgr_verify_cache_free(c);
}

/* A refresh probe's answer starts the clocks again. */
static void test_refresh_renews(void **state)
{
    struct qmgr_verify_cache *c = qmgr_verify_cache_create(&defaults);
    struct qmgr_verify_answer a = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok"), o;
    int64_t t0 = 1000 * DAY;

    (void)state;
    qmgr_verify_cache_put(c, "u@x.test", &a, t0);
    qmgr_verify_cache_put(c, "u@x.test", &a, t0 + 8 * DAY);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 14 * DAY, &o),
                     QMGR_VERIFY_FRESH);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 35 * DAY, &o),
                     QMGR_VERIFY_STALE);
    assert_int_equal(qmgr_verify_cache_count(c), 1);
    qmgr_verify_cache_free(c);
}

/* Negative answers live 3h fresh, 3d in all; undetermined ones too. */
static void test_negative_lifetimes(void **state)
{
    struct qmgr_verify_cache *c = qmgr_verify_cache_create(&defaults);
    struct qmgr_verify_answer a = answer(QMGR_VERIFY_UNDELIVERABLE, "550 no");
    struct qmgr_verify_answer d = answer(QMGR_VERIFY_UNDETERMINED, "refused");
    struct qmgr_verify_answer o;
    int64_t t0 = 1000 * DAY;

    (void)state;
    qmgr_verify_cache_put(c, "bad@x.test", &a, t0);
    qmgr_verify_cache_put(c, "slow@x.test", &d, t0);
    assert_int_equal(
        qmgr_verify_cache_get(c, "bad@x.test", t0 + 3 * HOUR - 1, &o),
        QMGR_VERIFY_FRESH);
    assert_int_equal(o.status, QMGR_VERIFY_UNDELIVERABLE);
    assert_string_equal(o.dsn, "5.1.1");
    assert_int_equal(qmgr_verify_cache_get(c, "bad@x.test", t0 + 3 * HOUR, &o),
                     QMGR_VERIFY_STALE);
    assert_int_equal(qmgr_verify_cache_get(c, "slow@x.test", t0 + HOUR, &o),
                     QMGR_VERIFY_FRESH);
    assert_int_equal(o.status, QMGR_VERIFY_UNDETERMINED);
    assert_int_equal(qmgr_verify_cache_get(c, "bad@x.test", t0 + 3 * DAY, &o),
                     QMGR_VERIFY_MISS);
    qmgr_verify_cache_free(c);
}

/* address_verify_negative_cache = no: failures are not kept, and one
 * removes the answer before it; a deliverable one still is kept. */
static void test_negative_cache_off(void **state)
{
    struct qmgr_verify_cache_params p = defaults;
    struct qmgr_verify_cache *c;
    struct qmgr_verify_answer ok = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok");
    struct qmgr_verify_answer bad = answer(QMGR_VERIFY_UNDELIVERABLE, "550");
    struct qmgr_verify_answer o;
    int64_t t0 = 1000 * DAY;

    (void)state;
    p.neg_cache = 0;
    c = qmgr_verify_cache_create(&p);
    qmgr_verify_cache_put(c, "bad@x.test", &bad, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "bad@x.test", t0, &o),
                     QMGR_VERIFY_MISS);
    qmgr_verify_cache_put(c, "u@x.test", &ok, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0, &o),
                     QMGR_VERIFY_FRESH);
    qmgr_verify_cache_put(c, "u@x.test", &bad, t0 + 1);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 2, &o),
                     QMGR_VERIFY_MISS);
    assert_int_equal(qmgr_verify_cache_count(c), 0);
    qmgr_verify_cache_free(c);
}

/* A deferred probe keeps a deliverable answer that has not expired; its
 * next renewal waits a negative refresh time. */
static void test_undetermined_keeps_positive(void **state)
{
    struct qmgr_verify_cache *c = qmgr_verify_cache_create(&defaults);
    struct qmgr_verify_answer ok = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok");
    struct qmgr_verify_answer d = answer(QMGR_VERIFY_UNDETERMINED, "timeout");
    struct qmgr_verify_answer o;
    int64_t t0 = 1000 * DAY, t1 = t0 + 8 * DAY;

    (void)state;
    qmgr_verify_cache_put(c, "u@x.test", &ok, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t1, &o),
                     QMGR_VERIFY_STALE);
    qmgr_verify_cache_put(c, "u@x.test", &d, t1);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t1 + HOUR, &o),
                     QMGR_VERIFY_FRESH);
    assert_int_equal(o.status, QMGR_VERIFY_DELIVERABLE);
    assert_int_equal(o.updated, t0);
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t1 + 3 * HOUR, &o),
                     QMGR_VERIFY_STALE);
    /* expiry still counts from the probe that said deliverable */
    assert_int_equal(qmgr_verify_cache_get(c, "u@x.test", t0 + 31 * DAY, &o),
                     QMGR_VERIFY_MISS);
    qmgr_verify_cache_free(c);
}

/* The domain's case does not matter; the local part's does. */
static void test_key_case(void **state)
{
    struct qmgr_verify_cache *c = qmgr_verify_cache_create(&defaults);
    struct qmgr_verify_answer ok = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok");
    struct qmgr_verify_answer o;

    (void)state;
    qmgr_verify_cache_put(c, "User@X.Test", &ok, 1);
    assert_int_equal(qmgr_verify_cache_get(c, "User@x.test", 2, &o),
                     QMGR_VERIFY_FRESH);
    assert_int_equal(qmgr_verify_cache_get(c, "user@x.test", 2, &o),
                     QMGR_VERIFY_MISS);
    qmgr_verify_cache_free(c);
}

/* At most limit answers: the least recently used goes first. */
static void test_bounded_lru(void **state)
{
    struct qmgr_verify_cache_params p = defaults;
    struct qmgr_verify_cache *c;
    struct qmgr_verify_answer ok = answer(QMGR_VERIFY_DELIVERABLE, "250 Ok");
    struct qmgr_verify_answer o;
    char addr[64];

    (void)state;
    p.limit = 100;
    c = qmgr_verify_cache_create(&p);
    for (int i = 0; i < 100; i++) {
        snprintf(addr, sizeof(addr), "u%d@x.test", i);
        qmgr_verify_cache_put(c, addr, &ok, 10);
    }
    /* u0 used again: u1 is now the least recently used */
    assert_int_equal(qmgr_verify_cache_get(c, "u0@x.test", 11, &o),
                     QMGR_VERIFY_FRESH);
    for (int i = 100; i < 10000; i++) {
        snprintf(addr, sizeof(addr), "u%d@x.test", i);
        qmgr_verify_cache_put(c, addr, &ok, 12);
        assert_true(qmgr_verify_cache_count(c) <= 100);
        if (i == 100) {
            assert_int_equal(qmgr_verify_cache_get(c, "u1@x.test", 13, &o),
                             QMGR_VERIFY_MISS);
            assert_int_equal(qmgr_verify_cache_get(c, "u0@x.test", 13, &o),
                             QMGR_VERIFY_FRESH);
        }
    }
    assert_int_equal(qmgr_verify_cache_count(c), 100);
    assert_int_equal(qmgr_verify_cache_get(c, "u9999@x.test", 13, &o),
                     QMGR_VERIFY_FRESH);
    /* a smaller limit at reload pushes the oldest out at once */
    p.limit = 10;
    qmgr_verify_cache_params_set(c, &p);
    assert_int_equal(qmgr_verify_cache_count(c), 10);
    assert_int_equal(qmgr_verify_cache_get(c, "u9999@x.test", 13, &o),
                     QMGR_VERIFY_FRESH);
    qmgr_verify_cache_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_positive_lifetimes),
        cmocka_unit_test(test_refresh_renews),
        cmocka_unit_test(test_negative_lifetimes),
        cmocka_unit_test(test_negative_cache_off),
        cmocka_unit_test(test_undetermined_keeps_positive),
        cmocka_unit_test(test_key_case),
        cmocka_unit_test(test_bounded_lru),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
