#ifndef SLUICE_ABORT_FIXTURE_H
#define SLUICE_ABORT_FIXTURE_H

/*
 * abort_fixture - run a function that must abort (a panic) in a child
 * process, with its stderr captured, and check what it said.
 *
 * expect_abort(fn, arg, expected) calls fn(arg) in a child; the child
 * must die of SIGABRT, and its stderr must begin with expected.
 *
 * Include after cmocka.h.
 */

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void expect_abort(void (*fn)(void *), void *arg, const char *expected)
{
    char out[1024];
    char scratch[512];
    size_t len = 0;
    size_t copy;
    ssize_t n;
    int fds[2];
    int status;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    if ((pid = fork()) == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn(arg);
        _exit(0);
    }
    assert_true(pid > 0);
    close(fds[1]);
    /* Read to the end, so that the child never blocks on a full pipe. */
    while ((n = read(fds[0], scratch, sizeof(scratch))) > 0) {
        copy = (size_t)n < sizeof(out) - 1 - len ? (size_t)n
                                                 : sizeof(out) - 1 - len;
        memcpy(out + len, scratch, copy);
        len += copy;
    }
    close(fds[0]);
    out[len] = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    /* Valgrind, if it runs the child, adds its own lines after ours. */
    assert_true(strncmp(out, expected, strlen(expected)) == 0);
}

#endif
