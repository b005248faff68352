/*
 * NAME
 *	spool - durable messages per second: the LMDB spool with group
 *	commit against one file per message with an fsync each
 * SYNOPSIS
 *	build/bench/spool [DIRECTORY [SECONDS [SUBMITTERS]]]
 * DESCRIPTION
 *	Durable messages per second, four ways, for a body of 2 KB and
 *	then of 100 KB (each message has one sender and three recipients),
 *	SECONDS (default 5) per run:
 *
 *	spool, threads: SUBMITTERS threads (default 64) each call
 *	spool_store() and take the next message when the previous one is
 *	durable.
 *
 *	spool, one loop: the way the SMTP server will use the spool: one
 *	thread keeps SUBMITTERS messages in flight with spool_submit(), one
 *	per session, and submits a new one for each that the committer
 *	reports durable; it is woken once per commit, not once per message.
 *
 *	files, threads: the classic queue directory, as Postfix's cleanup
 *	processes do it: SUBMITTERS threads each write one file per message
 *	under tmp/ (envelope and body), fsync it, rename it into queue/ and
 *	fsync queue/.
 *
 *	files, one writer: the same with a single writer.
 *
 *	Each run counts the messages durable when it ended; the spool's
 *	runs report their group commits (spool_stats()). The ratios printed
 *	at the end are what the spool is for: "at least 20 times the
 *	file-per-message rate for 2 KB messages".
 *
 *	DIRECTORY (default: a new directory under /var/tmp, which is on a
 *	disk where /tmp may be tmpfs) must be on the disk to be measured:
 *	the program prints its file system and warns on tmpfs, where an
 *	fsync costs nothing, and what one 4 KB write and fsync costs there.
 *	Each run writes into a subdirectory of its own and removes it
 *	afterwards, with a sync(2) between runs so that one run's
 *	write-back does not fall into the next. A run stops early after
 *	200,000 messages (2 KB) or 10,000 (100 KB) to bound the disk space
 *	it takes.
 *
 *	Not a test: run by hand, numbers in doc/spool.md.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "util/util.h"

#define TMPFS_MAGIC 0x01021994

struct run {
    const char *dir; /* this run's directory */
    size_t size;     /* body bytes */
    long max;        /* stop after this many messages */
    double seconds;
    int threads;
    struct spool *sp; /* NULL: one file per message */
    char *body;
    atomic_long done;
    atomic_long failed;
    atomic_int stop;
    char why[PATH_MAX + 128]; /* the first failure */
};

struct worker {
    struct run *run;
    int n;
};

static double now_s(void)
{
    return (double)util_clock_mono_us() / 1e6;
}

static const char *const rcpts[3] = {"alice@one.example", "bob@two.example",
                                     "carol@three.example"};
static const char sender[] = "sender@bench.example";

static struct spool_msg *bench_msg(const struct run *r)
{
    struct spool_msg *m = spool_msg_new();

    m->sender = strdup(sender);
    m->body = r->body; /* shared, read only; taken back before the free */
    m->size = r->size;
    for (int i = 0; i < 3; i++)
        spool_msg_add_rcpt(m, rcpts[i], NULL, 0, NULL);
    return m;
}

static int counted(struct run *r)
{
    if (atomic_fetch_add(&r->done, 1) + 1 >= r->max)
        atomic_store(&r->stop, 1);
    return !atomic_load(&r->stop);
}

static void *spool_worker(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->run;
    char why[256];

    while (!atomic_load(&r->stop)) {
        struct spool_msg *m = bench_msg(r);

        int rc = spool_store(r->sp, m, why, sizeof(why));

        m->body = NULL;
        spool_msg_free(m);
        if (rc != 0) {
            if (atomic_fetch_add(&r->failed, 1) == 0)
                snprintf(r->why, sizeof(r->why), "%s", why);
            continue;
        }
        if (!counted(r))
            break;
    }
    return NULL;
}

/* One queue file: the envelope as text lines, a blank line, the body. */
static int file_write(struct run *r, int qfd, int n, long seq, char *why,
                      size_t whylen)
{
    char tmp[PATH_MAX], name[64], head[512];
    int fd, len;

    len = snprintf(head, sizeof(head), "S%s\nR%s\nR%s\nR%s\n\n", sender,
                   rcpts[0], rcpts[1], rcpts[2]);
    snprintf(name, sizeof(name), "%d-%ld", n, seq);
    snprintf(tmp, sizeof(tmp), "%s/tmp/%s", r->dir, name);
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0600)) < 0) {
        snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
        return -1;
    }
    /* Postfix writes the envelope and the content into the same file. */
    if (util_write_all(fd, head, (size_t)len) < 0 ||
        util_write_all(fd, r->body, r->size) < 0 || fsync(fd) < 0) {
        snprintf(why, whylen, "%s: %s", tmp, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    if (renameat(AT_FDCWD, tmp, qfd, name) < 0 || fsync(qfd) < 0) {
        snprintf(why, whylen, "%s: rename: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

static void *file_worker(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->run;
    char path[PATH_MAX], why[sizeof(r->why)];
    long seq = 0;
    int qfd;

    snprintf(path, sizeof(path), "%s/queue", r->dir);
    if ((qfd = open(path, O_RDONLY | O_DIRECTORY)) < 0) {
        snprintf(r->why, sizeof(r->why), "%s: %s", path, strerror(errno));
        atomic_fetch_add(&r->failed, 1);
        return NULL;
    }
    while (!atomic_load(&r->stop)) {
        if (file_write(r, qfd, w->n, seq++, why, sizeof(why)) < 0) {
            if (atomic_fetch_add(&r->failed, 1) == 0)
                memcpy(r->why, why, sizeof(why));
            atomic_store(&r->stop, 1);
            break;
        }
        if (!counted(r))
            break;
    }
    close(qfd);
    return NULL;
}

/* Remove what a run wrote: dir and what is under it, two levels deep. */
static void rm_tree(const char *dir, int depth)
{
    char path[PATH_MAX];
    struct dirent *d;
    struct stat st;
    DIR *dp;

    if ((dp = opendir(dir)) != NULL) {
        while ((d = readdir(dp)) != NULL) {
            if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
                continue;
            snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
            if (depth > 0 && lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
                rm_tree(path, depth - 1);
            else
                unlink(path);
        }
        closedir(dp);
    }
    rmdir(dir);
}

/* Run the threads for the run's time; messages per second, or -1. */
static double run_threads(struct run *r, void *(*fn)(void *))
{
    pthread_t *t = calloc((size_t)r->threads, sizeof(*t));
    struct worker *w = calloc((size_t)r->threads, sizeof(*w));
    struct timespec tick = {0, 10 * 1000 * 1000};
    double start = now_s(), end;

    for (int i = 0; i < r->threads; i++) {
        w[i].run = r;
        w[i].n = i;
        if (pthread_create(&t[i], NULL, fn, &w[i]) != 0) {
            fprintf(stderr, "spool: pthread_create failed\n");
            exit(1);
        }
    }
    while (!atomic_load(&r->stop) && now_s() - start < r->seconds)
        nanosleep(&tick, NULL);
    atomic_store(&r->stop, 1);
    for (int i = 0; i < r->threads; i++)
        pthread_join(t[i], NULL);
    end = now_s();
    free(t);
    free(w);
    return atomic_load(&r->done) / (end - start);
}

static double bench_spool(struct run *r, long *commits)
{
    struct spool_config cf = {r->dir, 8ULL << 30, 0};
    struct spool_stats st;
    char why[256];
    double rate;

    /* Map sized up front: growth is not what is measured here. */
    if (spool_open(&r->sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0) {
        fprintf(stderr, "spool: %s\n", why);
        exit(1);
    }
    rate = run_threads(r, spool_worker);
    spool_stats(r->sp, &st);
    *commits = st.commits;
    spool_close(r->sp);
    r->sp = NULL;
    return rate;
}

/*
 * The event-loop way: one thread keeps one message in flight per session
 * (SUBMITTERS of them) with spool_submit(), as the SMTP server's loop
 * will: the committer's callbacks count completions and wake the loop
 * once, which then submits as many new messages.
 */
struct loop {
    struct run *run;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    long completed; /* not yet replaced by a new submission */
};

static void loop_done(void *ctx, struct spool_msg *m, int status,
                      const char *why)
{
    struct loop *l = ctx;
    struct run *r = l->run;

    m->body = NULL;
    spool_msg_free(m);
    if (status != 0) {
        if (atomic_fetch_add(&r->failed, 1) == 0)
            snprintf(r->why, sizeof(r->why), "%s", why);
    } else {
        counted(r);
    }
    pthread_mutex_lock(&l->lock);
    if (l->completed++ == 0)
        pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

static double bench_spool_loop(struct run *r, long *commits)
{
    struct spool_config cf = {r->dir, 8ULL << 30, 0};
    struct loop l = {r, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct spool_stats st;
    double start, end;
    long in_flight = 0;
    char why[256];

    if (spool_open(&r->sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0) {
        fprintf(stderr, "spool: %s\n", why);
        exit(1);
    }
    start = now_s();
    for (int i = 0; i < r->threads; i++, in_flight++)
        spool_submit(r->sp, bench_msg(r), loop_done, &l);
    pthread_mutex_lock(&l.lock);
    while (!atomic_load(&r->stop) && now_s() - start < r->seconds) {
        long n;

        while (l.completed == 0)
            pthread_cond_wait(&l.wake, &l.lock);
        n = l.completed;
        l.completed = 0;
        pthread_mutex_unlock(&l.lock);
        for (long i = 0; i < n && !atomic_load(&r->stop); i++)
            spool_submit(r->sp, bench_msg(r), loop_done, &l);
        pthread_mutex_lock(&l.lock);
    }
    pthread_mutex_unlock(&l.lock);
    atomic_store(&r->stop, 1);
    spool_stats(r->sp, &st);
    spool_close(r->sp); /* waits for what is in flight */
    end = now_s();
    r->sp = NULL;
    *commits = st.commits;
    (void)in_flight;
    return atomic_load(&r->done) / (end - start);
}

static double bench_files(struct run *r)
{
    char path[PATH_MAX];

    if (mkdir(r->dir, 0700) < 0) {
        fprintf(stderr, "spool: %s: %s\n", r->dir, strerror(errno));
        exit(1);
    }
    snprintf(path, sizeof(path), "%s/tmp", r->dir);
    mkdir(path, 0700);
    snprintf(path, sizeof(path), "%s/queue", r->dir);
    mkdir(path, 0700);
    return run_threads(r, file_worker);
}

/* The file system of dir, by name from /proc/self/mounts if possible. */
static void fs_describe(const char *dir, char *out, size_t len, int *tmpfs)
{
    char real[PATH_MAX], dev[256], mnt[PATH_MAX], type[64];
    char best[PATH_MAX + 400];
    size_t bestlen = 0;
    struct statfs sf;
    FILE *f;

    *tmpfs = statfs(dir, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
    snprintf(out, len, "statfs type %#lx",
             statfs(dir, &sf) == 0 ? (unsigned long)sf.f_type : 0UL);
    if (realpath(dir, real) == NULL ||
        (f = fopen("/proc/self/mounts", "r")) == NULL)
        return;
    while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, mnt, type) == 3) {
        size_t n = strlen(mnt);

        if (strncmp(real, mnt, n) == 0 &&
            (real[n] == '/' || real[n] == 0 || n == 1) && n >= bestlen) {
            bestlen = n;
            snprintf(best, sizeof(best), "%s (%s on %s)", type, dev, mnt);
        }
    }
    fclose(f);
    if (bestlen)
        snprintf(out, len, "%s", best);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* What one flush costs here: median of 4 KB write + fsync, in ms. */
static double fsync_ms(const char *base)
{
    char path[PATH_MAX], block[4096];
    double t[101];
    int fd, n = 0;

    snprintf(path, sizeof(path), "%s/fsync-probe", base);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0)
        return -1;
    memset(block, 'x', sizeof(block));
    for (; n < 101; n++) {
        double start = now_s();

        if (pwrite(fd, block, sizeof(block), (off_t)n * 4096) < 0 ||
            fsync(fd) < 0)
            break;
        t[n] = (now_s() - start) * 1000;
    }
    close(fd);
    unlink(path);
    if (n == 0)
        return -1;
    qsort(t, (size_t)n, sizeof(t[0]), cmp_double);
    return t[n / 2];
}

static void report(const char *size, const char *store, const struct run *r,
                   double rate, long commits)
{
    long n = atomic_load(&r->done);

    if (commits > 0)
        printf("%-7s %-22s %8ld %10.0f %9ld %8.1f\n", size, store, n, rate,
               commits, (double)n / (double)commits);
    else
        printf("%-7s %-22s %8ld %10.0f %9s %8s\n", size, store, n, rate, "-",
               "-");
    if (atomic_load(&r->failed))
        printf("#   %ld failed, the first: %s\n", atomic_load(&r->failed),
               r->why);
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        size_t size;
        long cap;
    } sizes[2] = {{"2 KB", 2048, 200000}, {"100 KB", 100 * 1024, 10000}};
    char base[PATH_MAX] = "/var/tmp/sluice-bench.XXXXXX", fs[PATH_MAX + 400];
    double seconds = argc > 2 ? atof(argv[2]) : 5;
    int threads = argc > 3 ? atoi(argv[3]) : 64, tmpfs, made = 0;
    double ratio[2][3];

    if (argc > 4 || seconds <= 0 || threads <= 0) {
        fprintf(stderr, "usage: %s [DIRECTORY [SECONDS [SUBMITTERS]]]\n",
                argv[0]);
        return 2;
    }
    if (argc > 1) {
        snprintf(base, sizeof(base), "%s", argv[1]);
        if (mkdir(base, 0700) < 0 && errno != EEXIST) {
            fprintf(stderr, "spool: %s: %s\n", base, strerror(errno));
            return 1;
        }
    } else if (mkdtemp(base) == NULL) {
        perror("spool: mkdtemp");
        return 1;
    } else {
        made = 1;
    }
    printf("#");
    for (int i = 0; i < argc; i++)
        printf(" %s", argv[i]);
    printf("\n");
    fs_describe(base, fs, sizeof(fs), &tmpfs);
    printf("# directory %s: %s\n", base, fs);
    if (tmpfs)
        printf("# WARNING: tmpfs: fsync costs nothing here, the numbers say "
               "nothing about a disk\n");
    printf("# %d submitters, 1 sender and 3 recipients per message, %.1f s "
           "per run, %ld CPUs\n",
           threads, seconds, sysconf(_SC_NPROCESSORS_ONLN));
    printf("# one 4 KB write + fsync: %.2f ms (median of 101)\n",
           fsync_ms(base));
    printf("%-7s %-22s %8s %10s %9s %8s\n", "body", "store", "messages",
           "msgs/s", "commits", "msgs/cmt");
    for (int s = 0; s < 2; s++) {
        static const char *const kinds[4] = {
            "spool, threads", "spool, one loop", "files, threads",
            "files, one writer"};
        double rate[4];

        for (int kind = 0; kind < 4; kind++) {
            struct run r = {0};
            char dir[PATH_MAX + 32];
            long commits = 0;

            snprintf(dir, sizeof(dir), "%s/%d-%zu", base, kind, sizes[s].size);
            r.dir = dir;
            r.size = sizes[s].size;
            r.max = sizes[s].cap;
            r.seconds = seconds;
            r.threads = kind == 3 ? 1 : threads;
            r.body = malloc(r.size);
            for (size_t i = 0; i < r.size; i++)
                r.body[i] = (i + 1) % 78 == 0 ? '\n' : 'a' + (char)(i % 26);
            sync();
            rate[kind] = kind == 0   ? bench_spool(&r, &commits)
                         : kind == 1 ? bench_spool_loop(&r, &commits)
                                     : bench_files(&r);
            report(sizes[s].name, kinds[kind], &r, rate[kind], commits);
            free(r.body);
            rm_tree(dir, 1);
        }
        ratio[s][0] = rate[0] / rate[2];
        ratio[s][1] = rate[1] / rate[2];
        ratio[s][2] = rate[1] / rate[3];
    }
    for (int s = 0; s < 2; s++)
        printf("# %s: spool / files: %.1fx (threads / threads), %.1fx (one "
               "loop / threads), %.1fx (one loop / one writer)%s\n",
               sizes[s].name, ratio[s][0], ratio[s][1], ratio[s][2],
               s == 0 ? "; target: at least 20x" : "");
    if (made)
        rmdir(base);
    return 0;
}
