#ifndef SLUICE_DNSMASQ_FIXTURE_H
#define SLUICE_DNSMASQ_FIXTURE_H

/*
 * dnsmasq_fixture - dnsmasq as a name server for tests, on a free loopback
 * port (../shared/TESTING-PEERS.md): peer_start() runs it with the given
 * records and waits until it answers a probe name; peer_stop() stops it
 * by its PID. It dies with the test if the test crashes
 * (PR_SET_PDEATHSIG). find_dnsmasq() returns its path ($SLUICE_DNSMASQ or
 * the usual places) or NULL; tests keep it in dnsmasq_path.
 *
 * Include after cmocka.h.
 */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "dns/dns.h"
#include "util/util.h"

#define DNSMASQ_MAX_ARGS 256

static const char *dnsmasq_path;

struct peer {
    pid_t pid;
    int port;
    char servers[32]; /* "127.0.0.1:PORT" */
};

static inline const char *find_dnsmasq(void)
{
    static const char *dirs[] = {"/usr/sbin", "/sbin", "/usr/local/sbin",
                                 "/usr/bin", "/bin"};
    static char path[256];
    const char *env = getenv("SLUICE_DNSMASQ");
    size_t i;

    if (env && *env)
        return access(env, X_OK) == 0 ? env : NULL;
    for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        snprintf(path, sizeof(path), "%s/dnsmasq", dirs[i]);
        if (access(path, X_OK) == 0)
            return path;
    }
    return NULL;
}

/* A port free for both UDP and TCP on 127.0.0.1 (for now), or -1. */
static inline int free_port_once(void)
{
    struct sockaddr_in sin;
    socklen_t len = sizeof(sin);
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    int t = socket(AF_INET, SOCK_STREAM, 0);
    int port = -1;

    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (u >= 0 && t >= 0 &&
        bind(u, (struct sockaddr *)&sin, sizeof(sin)) == 0 &&
        getsockname(u, (struct sockaddr *)&sin, &len) == 0 &&
        bind(t, (struct sockaddr *)&sin, sizeof(sin)) == 0)
        port = ntohs(sin.sin_port);
    if (u >= 0)
        close(u);
    if (t >= 0)
        close(t);
    return port;
}

/* The kernel's free UDP port may be busy for TCP: try a few. */
static inline int free_port(void)
{
    int i, port = -1;

    for (i = 0; i < 50 && port < 0; i++)
        port = free_port_once();
    return port;
}

static inline void peer_stop(struct peer *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGCONT); /* a stopped process does not die of TERM */
    kill(p->pid, SIGTERM);
    waitpid(p->pid, NULL, 0);
    p->pid = 0;
}

static inline void probe_done(void *ctx, struct dns_result *res)
{
    *(int *)ctx = res->status == DNS_OK ? 1 : -1;
    dns_result_free(res);
}

static inline int64_t monotonic_ms(void)
{
    return util_clock_mono_ms();
}

/*
 * Ask the peer for probe until it answers: 0. -1 when it died (the port
 * was taken, most likely) or has not answered within 5 s (a loaded
 * machine), with the reason on stderr.
 */
static inline int peer_wait(struct peer *p, const char *probe)
{
    struct event_base *b = event_base_new();
    struct dns_config cf = {p->servers, 200, 1, 0, 1};
    int64_t deadline = monotonic_ms() + 5000;
    int status, rc = -1;

    while (rc < 0) {
        struct dns_resolver *r;
        int got = 0;

        if (waitpid(p->pid, &status, WNOHANG) == p->pid) {
            fprintf(stderr, "dnsmasq on port %d exited with status %d\n",
                    p->port, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            p->pid = 0;
            break;
        }
        if (monotonic_ms() > deadline) {
            fprintf(stderr, "dnsmasq on port %d does not answer\n", p->port);
            break;
        }
        if ((r = dns_create(b, &cf, NULL, 0)) == NULL) {
            fprintf(stderr, "dns_create failed for %s\n", p->servers);
            break;
        }
        dns_lookup_host(r, probe, probe_done, &got);
        while (got == 0)
            event_base_loop(b, EVLOOP_ONCE);
        dns_free(r);
        if (got > 0)
            rc = 0;
        else
            usleep(20000);
    }
    event_base_free(b);
    return rc;
}

/* Start dnsmasq with records on a free port; 0 once it answers probe. */
static inline int peer_start(struct peer *p, const char **records,
                             char (*extra)[64], int nextra, const char *probe)
{
    const char *argv[DNSMASQ_MAX_ARGS];
    char port_opt[32];
    const char **rec;
    int attempt, n, fd, i;

    for (attempt = 0; attempt < 5; attempt++) {
        if ((p->port = free_port()) < 0) {
            fprintf(stderr, "no free port for dnsmasq\n");
            return -1;
        }
        snprintf(port_opt, sizeof(port_opt), "--port=%d", p->port);
        snprintf(p->servers, sizeof(p->servers), "127.0.0.1:%d", p->port);
        n = 0;
        argv[n++] = dnsmasq_path;
        /*
         * Not --no-daemon: in that debug mode dnsmasq serves TCP in its
         * only process and, while c-ares keeps a TCP connection open
         * (a truncated reply sent it there, more queries are pending),
         * answers nothing on UDP.
         */
        argv[n++] = "--keep-in-foreground";
        argv[n++] = "--conf-file=/dev/null";
        argv[n++] = "--pid-file=";
        argv[n++] = "--log-facility=-"; /* stderr, not syslog */
        argv[n++] = port_opt;
        argv[n++] = "--listen-address=127.0.0.1";
        argv[n++] = "--bind-interfaces";
        argv[n++] = "--no-resolv";
        argv[n++] = "--no-hosts";
        for (rec = records; *rec; rec++)
            argv[n++] = *rec;
        for (i = 0; i < nextra; i++)
            argv[n++] = extra[i];
        argv[n] = NULL;
        if ((p->pid = fork()) < 0) {
            fprintf(stderr, "fork: %s\n", strerror(errno));
            return -1;
        }
        if (p->pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            if ((fd = open("/dev/null", O_RDWR)) >= 0) {
                dup2(fd, 0);
                dup2(fd, 1);
                if (getenv("SLUICE_TEST_VERBOSE") == NULL)
                    dup2(fd, 2);
            }
            execv(dnsmasq_path, (char *const *)argv);
            _exit(127);
        }
        if (peer_wait(p, probe) == 0)
            return 0;
        peer_stop(p);
    }
    return -1;
}

#endif
