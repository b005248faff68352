/*
 * test_util_io - whole writes and reads: through a pipe bigger than its
 * buffer, in small pieces, up to the end of the file, at an offset, and
 * errors
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/util.h"

#define BIG (256 * 1024) /* more than a pipe holds: writes come up short */

static void fill(char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (char)(i * 7 + i / 251);
}

static void test_through_a_pipe(void **state)
{
    char *out = malloc(BIG);
    char *in = malloc(BIG + 1);
    int fds[2];
    int status;
    pid_t pid;

    (void)state;
    fill(out, BIG);
    assert_int_equal(pipe(fds), 0);
    if ((pid = fork()) == 0) {
        close(fds[0]);
        /* One big write, then a second in pieces of 1000 bytes. */
        if (util_write_all(fds[1], out, BIG / 2) < 0)
            _exit(1);
        for (size_t at = BIG / 2; at < BIG; at += 1000)
            if (util_write_all(fds[1], out + at,
                               BIG - at < 1000 ? BIG - at : 1000) < 0)
                _exit(2);
        _exit(0);
    }
    assert_true(pid > 0);
    close(fds[1]);
    assert_int_equal(util_read_all(fds[0], in, BIG), BIG);
    assert_memory_equal(in, out, BIG);
    /* At the end of the file: fewer bytes than asked, then none. */
    assert_int_equal(util_read_all(fds[0], in, 10), 0);
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    free(out);
    free(in);
}

static void test_short_at_end_of_file(void **state)
{
    char in[16];
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    assert_int_equal(util_write_all(fds[1], "hello", 5), 0);
    assert_int_equal(util_write_all(fds[1], "", 0), 0);
    close(fds[1]);
    assert_int_equal(util_read_all(fds[0], in, sizeof(in)), 5);
    assert_memory_equal(in, "hello", 5);
    close(fds[0]);
}

static void test_errors(void **state)
{
    char in[4];
    int fds[2];

    (void)state;
    assert_int_equal(pipe(fds), 0);
    close(fds[0]);
    close(fds[1]);
    errno = 0;
    assert_int_equal(util_write_all(fds[1], "x", 1), -1);
    assert_int_equal(errno, EBADF);
    errno = 0;
    assert_int_equal(util_read_all(fds[0], in, sizeof(in)), -1);
    assert_int_equal(errno, EBADF);
}

/* At an offset: the file offset stays where it was; past the end, short. */
static void test_at_offset(void **state)
{
    char path[] = "/tmp/test_util_io.XXXXXX";
    char in[8];
    int fd = mkstemp(path);

    (void)state;
    assert_true(fd >= 0);
    unlink(path);
    assert_int_equal(util_write_all(fd, "0123456789", 10), 0);
    assert_int_equal(util_pwrite_all(fd, "abc", 3, 4), 0);
    assert_int_equal(lseek(fd, 0, SEEK_CUR), 10);
    assert_int_equal(util_pread_all(fd, in, 8, 2), 8);
    assert_memory_equal(in, "23abc789", 8);
    assert_int_equal(util_pread_all(fd, in, 8, 7), 3);
    assert_memory_equal(in, "789", 3);
    assert_int_equal(util_pread_all(fd, in, 8, 10), 0);
    close(fd);
    errno = 0;
    assert_int_equal(util_pread_all(fd, in, 1, 0), -1);
    assert_int_equal(errno, EBADF);
    assert_int_equal(util_pwrite_all(fd, "x", 1, 0), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_through_a_pipe),
        cmocka_unit_test(test_short_at_end_of_file),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_at_offset),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
