/*
 * test_core_destdb - Finch's destination database in memory: open
 * connections by recency, jobs and idleness, last close, retry times,
 * and the garbage collector
 *
 * Quotes are from ../shared/seeds/finch-mta-scheduling.txt.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "core/core.h"

#define SEC 1000

/*
 * "It allows us to look up efficiently any connection(s) that we have
 * currently open to a destination, whether they are active or idle, and
 * how old they are."
 */
static void test_connections(void **state)
{
    struct core_destdb *db = core_destdb_memory(600 * SEC);
    struct core_conn_view c[4];
    struct core_host_view v;

    (void)state;
    assert_int_equal(db->ops->host_get(db, "10.0.0.1:25", &v, c, 4), 0);
    assert_int_equal(v.nconns, 0);
    assert_int_equal(v.last_close, -1);
    assert_int_equal(v.retry_at, -1);
    db->ops->conn_open(db, "10.0.0.1:25", 7, 1 * SEC);
    db->ops->conn_open(db, "10.0.0.1:25", 8, 2 * SEC);
    db->ops->conn_open(db, "10.0.0.2:25", 9, 3 * SEC);
    db->ops->conn_jobs(db, "10.0.0.1:25", 7, 2, 4 * SEC);
    db->ops->conn_jobs(db, "10.0.0.1:25", 8, 1, 4 * SEC);
    db->ops->conn_jobs(db, "10.0.0.1:25", 8, 0, 5 * SEC);
    assert_int_equal(db->ops->host_get(db, "10.0.0.1:25", &v, c, 4), 1);
    assert_int_equal(v.nconns, 2);
    /* most recently opened first */
    assert_int_equal(c[0].conn, 8);
    assert_int_equal(c[0].opened, 2 * SEC);
    assert_int_equal(c[0].jobs, 0);
    assert_int_equal(c[0].idle_since, 5 * SEC);
    assert_int_equal(c[1].conn, 7);
    assert_int_equal(c[1].jobs, 2);
    /* a short buffer gets the newest, and the count of all */
    assert_int_equal(db->ops->host_get(db, "10.0.0.1:25", &v, c, 1), 1);
    assert_int_equal(v.nconns, 2);
    assert_int_equal(c[0].conn, 8);
    assert_int_equal(db->ops->count(db), 2);
    db->ops->free(db);
}

/*
 * "When we close the last connection to a destination, we keep a record
 * of when it was made"; "For broken destinations it records when we
 * should next bother to try to connecting to them."
 */
static void test_close_and_retry(void **state)
{
    struct core_destdb *db = core_destdb_memory(600 * SEC);
    struct core_conn_view c[4];
    struct core_host_view v;

    (void)state;
    db->ops->conn_open(db, "mx:25", 1, 1 * SEC);
    db->ops->conn_open(db, "mx:25", 2, 2 * SEC);
    db->ops->conn_close(db, "mx:25", 1, 3 * SEC);
    db->ops->host_get(db, "mx:25", &v, c, 4);
    assert_int_equal(v.nconns, 1);
    assert_int_equal(c[0].conn, 2);
    assert_int_equal(v.last_close, 3 * SEC);
    db->ops->conn_close(db, "mx:25", 2, 4 * SEC);
    db->ops->host_get(db, "mx:25", &v, c, 4);
    assert_int_equal(v.nconns, 0);
    assert_int_equal(v.last_close, 4 * SEC);
    db->ops->host_fail(db, "dead:25", 300 * SEC);
    assert_int_equal(db->ops->host_get(db, "dead:25", &v, c, 4), 1);
    assert_int_equal(v.retry_at, 300 * SEC);
    db->ops->host_ok(db, "dead:25");
    db->ops->host_get(db, "dead:25", &v, c, 4);
    assert_int_equal(v.retry_at, -1);
    db->ops->host_ok(db, "never-seen:25"); /* makes no record */
    assert_int_equal(db->ops->count(db), 2);
    db->ops->free(db);
}

/* A close another member of a cluster reports: the host is "closed" here
 * too (no longer unused), the later close counting, and collected as a
 * local close is. */
static void test_host_closed(void **state)
{
    struct core_destdb *db = core_destdb_memory(600 * SEC);
    struct core_conn_view c[4];
    struct core_host_view v;

    (void)state;
    db->ops->host_closed(db, "far:25", 5 * SEC);
    assert_int_equal(db->ops->host_get(db, "far:25", &v, c, 4), 1);
    assert_int_equal(v.last_close, 5 * SEC);
    assert_int_equal(v.nconns, 0);
    assert_int_equal(v.retry_at, -1);
    db->ops->host_closed(db, "far:25", 3 * SEC); /* older: ignored */
    db->ops->host_get(db, "far:25", &v, c, 4);
    assert_int_equal(v.last_close, 5 * SEC);
    db->ops->conn_open(db, "far:25", 1, 6 * SEC);
    db->ops->conn_close(db, "far:25", 1, 7 * SEC);
    db->ops->host_closed(db, "far:25", 9 * SEC);
    db->ops->host_get(db, "far:25", &v, c, 4);
    assert_int_equal(v.last_close, 9 * SEC);
    db->ops->gc(db, 608 * SEC);
    assert_int_equal(db->ops->count(db), 1);
    db->ops->gc(db, 609 * SEC);
    assert_int_equal(db->ops->count(db), 0);
    db->ops->free(db);
}

/*
 * "The destdb has a garbage collector to remove stale retry and
 * closed-connection records": a record goes a lifetime after its last
 * close and its retry time, never while a connection is open; the
 * table stays usable as it grows and shrinks.
 */
static void test_gc(void **state)
{
    struct core_destdb *db = core_destdb_memory(60 * SEC);
    struct core_conn_view c[1];
    struct core_host_view v;
    char name[32];

    (void)state;
    db->ops->conn_open(db, "open:25", 1, 0);
    db->ops->conn_open(db, "closed:25", 2, 0);
    db->ops->conn_close(db, "closed:25", 2, 10 * SEC);
    db->ops->host_fail(db, "retry:25", 100 * SEC);
    db->ops->conn_open(db, "both:25", 3, 0);
    db->ops->conn_close(db, "both:25", 3, 10 * SEC);
    db->ops->host_fail(db, "both:25", 200 * SEC);
    db->ops->gc(db, 69 * SEC);
    assert_int_equal(db->ops->count(db), 4);
    db->ops->gc(db, 70 * SEC);
    assert_int_equal(db->ops->host_get(db, "closed:25", &v, c, 1), 0);
    assert_int_equal(db->ops->count(db), 3);
    db->ops->gc(db, 160 * SEC);
    assert_int_equal(db->ops->host_get(db, "retry:25", &v, c, 1), 0);
    db->ops->gc(db, 260 * SEC);
    assert_int_equal(db->ops->host_get(db, "both:25", &v, c, 1), 0);
    db->ops->gc(db, 100000 * SEC);
    assert_int_equal(db->ops->host_get(db, "open:25", &v, c, 1), 1);
    assert_int_equal(db->ops->count(db), 1);
    for (int i = 0; i < 1000; i++) {
        snprintf(name, sizeof(name), "10.0.%d.%d:25", i / 256, i % 256);
        db->ops->conn_open(db, name, (uint64_t)(100 + i), 0);
        db->ops->conn_close(db, name, (uint64_t)(100 + i), 1 * SEC);
    }
    assert_int_equal(db->ops->count(db), 1001);
    assert_int_equal(db->ops->host_get(db, "10.0.3.231:25", &v, c, 1), 1);
    assert_int_equal(v.last_close, 1 * SEC);
    db->ops->gc(db, 61 * SEC);
    assert_int_equal(db->ops->count(db), 1);
    db->ops->free(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connections),
        cmocka_unit_test(test_close_and_retry),
        cmocka_unit_test(test_host_closed),
        cmocka_unit_test(test_gc),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
