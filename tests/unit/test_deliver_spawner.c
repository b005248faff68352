/*
 * test_deliver_spawner - the agent spawner (deliver/spawner.c,
 * spawner_client.c) and its messages (spawn.c; decision 134): a START
 * encoded and decoded, every truncation of it refused; hostile packets
 * on the spawner's socket (garbage, oversize, a header that promises
 * more than comes, bad counts, descriptors where none belong, a START
 * without its three descriptors, a KILL of a pid it did not start or
 * with another signal) each answered REFUSED, the descriptors that came
 * with them closed, and the spawner still starting, reporting and
 * killing agents afterwards.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <event2/event.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "deliver/agent_impl.h"

static char *const true_argv[] = {"/bin/true", NULL};
static char *const sleep_argv[] = {"/bin/sleep", "30", NULL};
static char *const env[] = {"PATH=/bin", "A=b=c", NULL};

static void start_msg(struct util_buf *b, char *const *argv)
{
    struct spawn_msg m = {0};

    m.type = SPAWN_START;
    m.seq = 7;
    for (; argv[m.argc]; m.argc++)
        m.argv[m.argc] = argv[m.argc];
    for (; env[m.envc]; m.envc++)
        m.env[m.envc] = env[m.envc];
    spawn_encode(b, &m);
}

static void test_codec(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    struct spawn_msg m;
    char why[200], *copy;

    (void)state;
    start_msg(&b, sleep_argv);
    assert_int_equal(spawn_decode(b.data, b.len, &m, why, sizeof(why)), 0);
    assert_int_equal(m.type, SPAWN_START);
    assert_int_equal(m.seq, 7);
    assert_int_equal(m.argc, 2);
    assert_string_equal(m.argv[1], "30");
    assert_null(m.argv[2]);
    assert_string_equal(m.env[1], "A=b=c");
    assert_null(m.env[2]);
    for (size_t n = 0; n < b.len; n++) { /* every truncation refused */
        copy = xmalloc(n + 1);
        memcpy(copy, b.data, n);
        assert_int_equal(spawn_decode(copy, n, &m, why, sizeof(why)), -1);
        free(copy);
    }
    b.data[b.len - 1] = 'x'; /* the last string unterminated */
    assert_int_equal(spawn_decode(b.data, b.len, &m, why, sizeof(why)), -1);
    util_buf_free(&b);
}

static void test_codec_fields(void **state)
{
    struct util_buf b = UTIL_BUF_INIT;
    struct spawn_msg m = {0}, out;
    char why[200];
    char *const bad_env[] = {"NOEQUALS", NULL};

    (void)state;
    m.type = SPAWN_KILL;
    m.pid = 42;
    m.value = SIGSTOP;
    spawn_encode(&b, &m);
    assert_int_equal(spawn_decode(b.data, b.len, &out, why, sizeof(why)), -1);
    assert_string_equal(why, "kill: signal 19 refused");
    util_buf_reset(&b);
    m.value = SIGKILL;
    m.pid = 0;
    spawn_encode(&b, &m);
    assert_int_equal(spawn_decode(b.data, b.len, &out, why, sizeof(why)), -1);
    util_buf_reset(&b);
    memset(&m, 0, sizeof(m));
    m.type = SPAWN_START;
    m.argc = 1;
    m.argv[0] = "/bin/true";
    m.envc = 1;
    m.env[0] = bad_env[0];
    spawn_encode(&b, &m);
    assert_int_equal(spawn_decode(b.data, b.len, &out, why, sizeof(why)), -1);
    assert_string_equal(why, "start: environment string 1 is not NAME=VALUE");
    util_buf_free(&b);
}

/* The spawner's answer to one packet sent with nfds descriptors. */
static int answer(int fd, const void *p, size_t n, int nfds, char *text,
                  size_t textlen)
{
    static char buf[SPAWN_MSG_MAX + 1];
    char cbuf[CMSG_SPACE(4 * sizeof(int))];
    struct iovec iov = {(void *)p, n};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    struct pollfd pf = {fd, POLLIN, 0};
    struct spawn_msg m;
    char why[200];
    ssize_t got;

    if (nfds > 0) {
        int fds[4];
        struct cmsghdr *c;

        for (int i = 0; i < nfds; i++)
            fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
        memset(cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf;
        mh.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
        assert_true(sendmsg(fd, &mh, 0) == (ssize_t)n);
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
    } else
        assert_true(send(fd, p, n, 0) == (ssize_t)n);
    assert_int_equal(poll(&pf, 1, 3000), 1);
    got = recv(fd, buf, sizeof(buf), 0);
    assert_true(got > 0);
    assert_int_equal(spawn_decode(buf, (size_t)got, &m, why, sizeof(why)), 0);
    snprintf(text, textlen, "%s", m.text ? m.text : "");
    return (int)m.type;
}

static int fd_count(pid_t pid)
{
    char path[64];
    DIR *d;
    int k = 0;

    snprintf(path, sizeof(path), "/proc/%ld/fd", (long)pid);
    if ((d = opendir(path)) == NULL)
        return -1;
    while (readdir(d) != NULL)
        k++;
    closedir(d);
    return k;
}

static void hostile(int fd)
{
    static char big[SPAWN_MSG_MAX + 100];
    struct util_buf b = UTIL_BUF_INIT;
    struct spawn_msg m = {0};
    char text[300];

    assert_int_equal(answer(fd, "garbage", 7, 0, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "a message of 7 bytes");
    memset(big, 'x', sizeof(big));
    assert_int_equal(answer(fd, big, sizeof(big), 3, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "a truncated message");
    start_msg(&b, true_argv);
    assert_int_equal(answer(fd, b.data, b.len - 3, 3, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "a malformed header");
    assert_int_equal(answer(fd, b.data, b.len, 0, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "start: three descriptors needed");
    assert_int_equal(answer(fd, b.data, b.len, 2, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_int_equal(answer(fd, b.data, b.len, 4, text, sizeof(text)),
                     SPAWN_REFUSED);
    util_buf_reset(&b);
    m.type = SPAWN_KILL;
    m.pid = 1;
    m.value = SIGKILL;
    spawn_encode(&b, &m);
    assert_int_equal(answer(fd, b.data, b.len, 0, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "kill: not an agent");
    assert_int_equal(answer(fd, b.data, b.len, 1, text, sizeof(text)),
                     SPAWN_REFUSED);
    assert_string_equal(text, "an unexpected message");
    util_buf_free(&b);
}

static pid_t exited_pid;
static int exited_status;

static void exit_cb(void *ctx, pid_t pid, int status)
{
    (void)ctx;
    exited_pid = pid;
    exited_status = status;
}

static void test_hostile_then_working(void **state)
{
    char why[300];
    struct deliver_spawner *sp;
    int fds[3], before, st = -1;
    pid_t pid;

    (void)state;
    signal(SIGPIPE, SIG_IGN);
    sp = deliver_spawner_start("nobody", NULL, why, sizeof(why));
    assert_non_null(sp);
    /* once it answers, it has closed what it inherited */
    assert_int_equal(answer(spawner_fd(sp), "x", 1, 0, why, sizeof(why)),
                     SPAWN_REFUSED);
    before = fd_count(spawner_pid(sp));
    assert_true(before > 0);
    hostile(spawner_fd(sp));
    /* none kept (it closes them just after its answer) */
    for (int t = 0; t < 100 && fd_count(spawner_pid(sp)) != before; t++)
        usleep(10000);
    assert_int_equal(fd_count(spawner_pid(sp)), before);
    for (int i = 0; i < 3; i++)
        fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
    assert_int_equal(
        spawner_spawn(sp, true_argv, env, fds, &pid, why, sizeof(why)), 0);
    assert_int_equal(spawner_wait(sp, pid, 3000, &st), 1);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    assert_int_equal(spawner_spawn(sp, (char *const[]){"/nonexistent", NULL},
                                   env, fds, &pid, why, sizeof(why)),
                     -1);
    assert_string_equal(
        why, "cannot execute /nonexistent: No such file or directory");
    assert_int_equal(
        spawner_spawn(sp, sleep_argv, env, fds, &pid, why, sizeof(why)), 0);
    assert_int_equal(spawner_kill(sp, pid, SIGKILL), 0);
    assert_int_equal(spawner_wait(sp, pid, 3000, &st), 1);
    assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    deliver_spawner_free(sp);
}

static void test_exit_reports_on_the_loop(void **state)
{
    struct event_base *base = event_base_new();
    struct timeval cap = {3, 0};
    char why[300];
    struct deliver_spawner *sp =
        deliver_spawner_start(NULL, NULL, why, sizeof(why));
    int fds[3];
    pid_t pid, spid;

    (void)state;
    assert_non_null(sp);
    spawner_attach(sp, base, exit_cb, NULL, NULL);
    for (int i = 0; i < 3; i++)
        fds[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
    assert_int_equal(
        spawner_spawn(sp, sleep_argv, env, fds, &pid, why, sizeof(why)), 0);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    spawner_kill(sp, pid, SIGTERM);
    exited_pid = 0;
    while (exited_pid == 0 && cap.tv_sec-- > 0) {
        struct timeval one = {1, 0};

        event_base_loopexit(base, &one);
        event_base_dispatch(base);
    }
    assert_int_equal(exited_pid, pid);
    assert_true(WIFSIGNALED(exited_status) &&
                WTERMSIG(exited_status) == SIGTERM);
    spid = spawner_pid(sp);
    deliver_spawner_free(sp); /* the spawner exits, and is reaped */
    assert_int_equal(kill(spid, 0), -1);
    event_base_free(base);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codec),
        cmocka_unit_test(test_codec_fields),
        cmocka_unit_test(test_hostile_then_working),
        cmocka_unit_test(test_exit_reports_on_the_loop),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
