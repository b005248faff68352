#ifndef SLUICE_SINK_FIXTURE_H
#define SLUICE_SINK_FIXTURE_H

/*
 * sink_fixture - Postfix's smtp-sink as a receiving server for tests, on
 * a free loopback port (../shared/TESTING-PEERS.md), started and stopped
 * by the test, by its PID. Each message it receives is dumped to a file of
 * its own in sk->dir.
 *
 * A failed assertion leaves the test without running its sink_stop():
 * every sink still running when the test program exits is stopped then
 * (its privileges dropped to postfix, smtp-sink cannot be asked to die
 * with its parent), so that no sink outlives its test.
 *
 * Include after cmocka.h.
 */

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SINK "/usr/sbin/smtp-sink"

struct sink {
    pid_t pid;
    int port;
    char dir[64];
    char path[96]; /* sink_start_unix(): its socket */
};

#define SINK_MAX 32

static pid_t sink_running[SINK_MAX];

static void sink_stop_all(void)
{
    for (int i = 0; i < SINK_MAX; i++) {
        if (sink_running[i] > 0) {
            kill(sink_running[i], SIGTERM);
            waitpid(sink_running[i], NULL, 0);
            sink_running[i] = 0;
        }
    }
}

/* Note a running sink (pid) or forget one (pid, forget). */
static inline void sink_note(pid_t pid, int forget)
{
    static int registered;

    if (!registered && atexit(sink_stop_all) == 0)
        registered = 1;
    for (int i = 0; i < SINK_MAX; i++) {
        if (forget ? sink_running[i] == pid : sink_running[i] == 0) {
            sink_running[i] = forget ? 0 : pid;
            return;
        }
    }
}

static inline void sink_make_dir(struct sink *sk)
{
    snprintf(sk->dir, sizeof(sk->dir), "/tmp/sluice-sink.XXXXXX");
    if (mkdtemp(sk->dir) == NULL)
        sk->dir[0] = 0;
    chmod(sk->dir, 0777);
}

/*
 * Run smtp-sink on listen (its address argument) with up to two extra
 * options, and wait until a connection to to succeeds. 0, or -1 when it
 * exited first (the port was taken, or there is no smtp-sink).
 */
static inline int sink_run(struct sink *sk, const char *listen,
                           const char *opt1, const char *opt2,
                           const struct sockaddr *to, socklen_t tolen)
{
    char dump[128];

    snprintf(dump, sizeof(dump), "%s/%%M.", sk->dir);
    if ((sk->pid = fork()) == 0) {
        const char *argv[12];
        int n = 0;

        argv[n++] = SINK;
        if (geteuid() == 0) {
            argv[n++] = "-u";
            argv[n++] = "postfix";
        }
        argv[n++] = "-d";
        argv[n++] = dump;
        if (opt1)
            argv[n++] = opt1;
        if (opt2)
            argv[n++] = opt2;
        argv[n++] = listen;
        argv[n++] = "16";
        argv[n] = NULL;
        freopen("/dev/null", "w", stderr);
        execv(SINK, (char *const *)argv);
        _exit(127);
    }
    for (int wait = 0; wait < 100; wait++) {
        int fd = socket(to->sa_family, SOCK_STREAM, 0);
        int status;

        if (connect(fd, to, tolen) == 0) {
            close(fd);
            sink_note(sk->pid, 0);
            return 0;
        }
        close(fd);
        if (waitpid(sk->pid, &status, WNOHANG) == sk->pid)
            return -1;
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    kill(sk->pid, SIGTERM);
    waitpid(sk->pid, NULL, 0);
    return -1;
}

/* Start smtp-sink with extra options on a free port; wait until it
 * answers. Returns 0, or -1 if it cannot run here. */
static inline int sink_start(struct sink *sk, const char *opt1,
                             const char *opt2)
{
    char addr[64];

    sink_make_dir(sk);
    if (sk->dir[0] == 0)
        return -1;
    for (int attempt = 0; attempt < 20; attempt++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in sin = {0};
        socklen_t len = sizeof(sin);

        sin.sin_family = AF_INET;
        sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        bind(fd, (struct sockaddr *)&sin, sizeof(sin));
        getsockname(fd, (struct sockaddr *)&sin, &len);
        sk->port = ntohs(sin.sin_port);
        close(fd);
        snprintf(addr, sizeof(addr), "127.0.0.1:%d", sk->port);
        if (sink_run(sk, addr, opt1, opt2, (struct sockaddr *)&sin,
                     sizeof(sin)) == 0)
            return 0;
    }
    return -1;
}

/*
 * smtp-sink -L on a local socket, sk->dir/lmtp.sock (sk->path), started
 * in a directory made beforehand (sk->dir, from sink_unix_dir()) so that
 * a test can use the path before the sink exists. 0 or -1.
 */
static inline void sink_unix_dir(struct sink *sk)
{
    sink_make_dir(sk);
    snprintf(sk->path, sizeof(sk->path), "%s/lmtp.sock", sk->dir);
}

static inline int sink_start_unix(struct sink *sk)
{
    char listen[160];
    struct sockaddr_un sun = {.sun_family = AF_UNIX};

    snprintf(listen, sizeof(listen), "unix:%s", sk->path);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sk->path);
    return sink_run(sk, listen, "-L", NULL, (struct sockaddr *)&sun,
                    sizeof(sun));
}

static inline void sink_stop(struct sink *sk)
{
    char cmd[128];

    kill(sk->pid, SIGTERM);
    waitpid(sk->pid, NULL, 0);
    sink_note(sk->pid, 1);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", sk->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", sk->dir);
}

/* The one message smtp-sink dumped, in *buf. */
static inline size_t sink_dump(struct sink *sk, char *buf, size_t len)
{
    DIR *d = opendir(sk->dir);
    struct dirent *e;
    size_t n = 0;

    buf[0] = 0;
    while (d && (e = readdir(d)) != NULL) {
        char path[400];
        FILE *fp;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof(path), "%s/%s", sk->dir, e->d_name);
        if ((fp = fopen(path, "r")) != NULL) {
            n = fread(buf, 1, len - 1, fp);
            buf[n] = 0;
            fclose(fp);
        }
    }
    if (d)
        closedir(d);
    return n;
}

/*
 * Without smtp-sink a test fails and names the package that brings it:
 * a fresh machine must show what .ci/install-deps did not install.
 */
#define SINK_PACKAGE "postfix"
#define NEED_SINK(sk, o1, o2)                                                  \
    do {                                                                       \
        if (sink_start(sk, o1, o2) < 0)                                        \
            fail_msg("cannot run %s: install the Debian package %s (bash "     \
                     ".ci/install-deps)",                                      \
                     SINK, SINK_PACKAGE);                                      \
    } while (0)

/* How many messages smtp-sink has dumped so far. */
static inline int sink_count(struct sink *sk)
{
    DIR *d = opendir(sk->dir);
    struct dirent *e;
    int n = 0;

    while (d && (e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

#endif
