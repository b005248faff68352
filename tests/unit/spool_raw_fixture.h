#ifndef SLUICE_TEST_SPOOL_RAW_FIXTURE_H
#define SLUICE_TEST_SPOOL_RAW_FIXTURE_H

/*
 * spool_raw_fixture.h - write the spool's LMDB databases under the spool's
 * feet, as a bad disk or a bug would: for the tests of what sluice does
 * with records it cannot read. Include after cmocka.h.
 */

#include <lmdb.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* In a child process (LMDB wants one environment per process), put raw
 * bytes into one of the spool's databases, or with val NULL delete the
 * record. */
static void raw_put(const char *dir, const char *db, const void *key,
                    size_t klen, const void *val, size_t vlen)
{
    pid_t pid = fork();
    int status;

    assert_true(pid >= 0);
    if (pid == 0) {
        MDB_env *env;
        MDB_txn *txn;
        MDB_dbi dbi;
        MDB_val k = {klen, (void *)key}, v = {vlen, (void *)val};
        char path[128];

        snprintf(path, sizeof(path), "%s/db", dir);
        if (mdb_env_create(&env) || mdb_env_set_maxdbs(env, 8) ||
            mdb_env_open(env, path, 0, 0600) ||
            mdb_txn_begin(env, NULL, 0, &txn) ||
            mdb_dbi_open(txn, db, 0, &dbi) ||
            (val ? mdb_put(txn, dbi, &k, &v, 0)
                 : mdb_del(txn, dbi, &k, NULL)) ||
            mdb_txn_commit(txn))
            _exit(1);
        mdb_env_close(env);
        _exit(0);
    }
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif
