/*
 * test_spool_crash - the spool survives writers killed at any instant
 *
 * "A test that runs writers in child processes and SIGKILLs them at random
 * moments (at least 200 kills) then checks that every message whose
 * submission returned success is intact and that no partly written message
 * is visible."
 *
 * One spool, a series of writer processes. Each writer opens the spool and
 * stores messages until it is killed: its main thread with spool_store(),
 * three more threads through spool_submit() in bursts of one to four
 * messages. A message is a pure function of its (writer, sequence) pair,
 * its "pair": recipients, sender, ENVID "c<writer>-s<seq>", arrival time
 * and a binary body of 1 byte to 200 KB (inline, overflow pages, many
 * pages), so that anything found in the spool can be checked against what
 * it must be. Only after spool_store() returned 0, or the callback
 * reported 0, does the writer tell the parent, in one write(2) of a
 * fixed-size record on a pipe (atomic: shorter than PIPE_BUF), the pair
 * and the queue id. A fourth thread meanwhile changes messages that
 * earlier writers stored and the parent saw acknowledged: deletes some,
 * defers some with recipient results, makes some active, as the pair
 * decides; it announces each change before it starts and confirms it
 * after it returned.
 *
 * The parent kills each writer with SIGKILL: at once, a few milliseconds
 * after the fork, or a few milliseconds after its first acknowledgement,
 * the delays drawn from a seeded generator (SLUICE_CRASH_SEED). Then it
 * opens the spool itself, runs spool_recover() (nothing may be corrupt;
 * exactly the active messages go back to incoming) and checks:
 *
 *  - every acknowledged message is there under its queue id, envelope,
 *    recipients and body exactly as the pair says, unless a delete of it
 *    was announced (and it is gone if the delete was confirmed);
 *  - a changed message is wholly in its old or wholly in its new version
 *    (state, times, attempts and recipient results together), and in the
 *    new one if the change was confirmed;
 *  - every message in the spool decodes entirely and is one of the above,
 *    or a complete unacknowledged one (written, not yet reported when its
 *    writer died); no pair is there twice;
 *  - the incoming and deferred indices list exactly the messages in
 *    those states;
 *  - underneath (raw LMDB): no recipient or body record without its
 *    message, nothing in the corrupt database.
 *
 * Randomness is only in the timing: what is checked does not depend on the
 * seed. SIGKILL kills the process, not the machine: this shows that no
 * interrupted transaction is ever visible and that start-up needs no
 * repair; it cannot show what a power cut does to unsynced pages.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lmdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "spool/spool.h"
#include "util/util.h"

#define KILLS           500 /* writers, each one killed */
#define SUBMITTERS      3   /* spool_submit() threads per writer */
#define WRITER_MAX_MSGS 400 /* a writer that gets this far waits */
#define MAX_BODY        200000

/* What a writer tells the parent. */
enum rec_kind {
    REC_ACK,    /* pair stored under id: spool_store() or callback said 0 */
    REC_INTENT, /* about to change pair (op) */
    REC_DONE,   /* the change returned 0 */
    REC_FAIL,   /* something returned an error: why */
};

/* What the pair decides should happen to an acknowledged message. */
enum op {
    OP_NONE,
    OP_DELETE,
    OP_DEFER,
    OP_ACTIVATE,
};

struct rec {
    uint32_t kind, op, child, seq;
    char id[SPOOL_ID_MAX + 1];
    char why[163];
};

_Static_assert(sizeof(struct rec) <= PIPE_BUF, "record writes are atomic");

/* What the parent learnt about one pair. */
struct entry {
    char id[SPOOL_ID_MAX + 1];
    unsigned char acked, intent, done, seen;
};

struct child_log {
    struct entry *e;
    uint32_t n;
};

static struct child_log logs[KILLS];

/* ---- the pure functions of a pair ---------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t pair_hash(uint32_t c, uint32_t s, uint32_t salt)
{
    return mix64(((uint64_t)c << 32 | s) ^ mix64(salt));
}

static enum op pair_op(uint32_t c, uint32_t s)
{
    switch (pair_hash(c, s, 3) % 8) {
    case 0:
        return OP_DELETE;
    case 1:
        return OP_DEFER;
    case 2:
        return OP_ACTIVATE;
    default:
        return OP_NONE;
    }
}

static uint32_t pair_nrcpt(uint32_t c, uint32_t s)
{
    uint64_t h = pair_hash(c, s, 1);

    /* Now and then enough recipients to fill a few pages. */
    return h % 16 == 0 ? 40 + (uint32_t)(h >> 8) % 40
                       : 1 + (uint32_t)(h >> 8) % 4;
}

/*
 * 1 byte to 200 KB: values inline in a leaf page (up to about 2 KB), in
 * overflow pages, in long runs of them. Big bodies are rare enough that
 * a run writes about 100 MB.
 */
static size_t pair_size(uint32_t c, uint32_t s)
{
    uint64_t h = pair_hash(c, s, 2);
    uint64_t r = h >> 8, k = h % 16;

    if (k < 6)
        return 1 + r % 100;
    if (k < 10)
        return 100 + r % 3900;
    if (k < 15)
        return 4000 + r % 36000;
    return 40000 + r % (MAX_BODY - 40000 + 1);
}

static void pair_body(uint32_t c, uint32_t s, unsigned char *p, size_t len)
{
    uint64_t x = pair_hash(c, s, 4);

    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = mix64(x + i);
        size_t n = len - i < 8 ? len - i : 8;

        memcpy(p + i, &v, n);
    }
}

static char *pair_sender(uint32_t c, uint32_t s)
{
    char buf[64];

    if (pair_hash(c, s, 5) % 10 == 0)
        return strdup(""); /* the null sender */
    snprintf(buf, sizeof(buf), "sender-c%u-s%u@from.test", c, s);
    return strdup(buf);
}

static void pair_rcpt(uint32_t c, uint32_t s, uint32_t i, char *addr,
                      char *orig, char *orcpt, size_t len, unsigned *notify)
{
    uint64_t h = pair_hash(c, s, 6);

    snprintf(addr, len, "r%u-c%u-s%u@d%u.test", i, c, s,
             (unsigned)((h + i) % 7));
    *orig = *orcpt = 0;
    if (i % 3 == 0)
        snprintf(orig, len, "R%u-C%u-S%u@D.test", i, c, s);
    if (i % 2 == 0)
        snprintf(orcpt, len, "rfc822;r%u-c%u-s%u@orcpt.test", i, c, s);
    *notify = (unsigned)((h >> 16) + i) % 16;
}

static int64_t pair_arrival(uint32_t c, uint32_t s)
{
    return 1700000000000000LL + (int64_t)c * 1000000000LL + s;
}

static int64_t pair_next_attempt(uint32_t c, uint32_t s)
{
    return 1800000000000000LL + (int64_t)c * 1000000000LL + s;
}

static struct spool_msg *pair_msg(uint32_t c, uint32_t s)
{
    struct spool_msg *m = spool_msg_new();
    char envid[32], addr[80], orig[80], orcpt[80];
    uint32_t n = pair_nrcpt(c, s);

    snprintf(envid, sizeof(envid), "c%u-s%u", c, s);
    m->sender = pair_sender(c, s);
    m->envid = strdup(envid);
    m->ret = (enum spool_ret)(pair_hash(c, s, 7) % 3);
    m->arrival = pair_arrival(c, s);
    m->size = pair_size(c, s);
    m->body = malloc(m->size);
    pair_body(c, s, (unsigned char *)m->body, m->size);
    for (uint32_t i = 0; i < n; i++) {
        unsigned notify;

        pair_rcpt(c, s, i, addr, orig, orcpt, sizeof(addr), &notify);
        spool_msg_add_rcpt(m, addr, *orig ? orig : NULL, notify,
                           *orcpt ? orcpt : NULL);
    }
    return m;
}

/* The recipient results of OP_DEFER: the first delivered, the last (if
 * there are two or more) deferred. */
static void pair_results(uint32_t c, uint32_t s, struct spool_result res[2],
                         char reason[2][64], uint32_t *nres)
{
    uint32_t n = pair_nrcpt(c, s);

    snprintf(reason[0], 64, "2.0.0 ok c%u-s%u", c, s);
    snprintf(reason[1], 64, "4.4.1 try later c%u-s%u", c, s);
    res[0] = (struct spool_result){
        0, SPOOL_RCPT_DELIVERED, 250, reason[0], 0, 0, NULL};
    res[1] = (struct spool_result){
        n - 1, SPOOL_RCPT_DEFERRED, 451, reason[1], 0, 0, NULL};
    *nres = n > 1 ? 2 : 1;
}

/* ---- the writer process ------------------------------------------- */

struct writer {
    uint32_t child;
    int fd;
    struct spool *sp;
    atomic_uint seq;
    /* changes to make: pairs the parent saw acknowledged */
    uint32_t *cand_child, *cand_seq;
    char (*cand_id)[SPOOL_ID_MAX + 1];
    size_t ncand;
};

struct submitter {
    struct writer *w;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int inflight;
};

static void tell(struct writer *w, enum rec_kind kind, enum op op,
                 uint32_t child, uint32_t seq, const char *id, const char *why)
{
    struct rec r;

    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.op = op;
    r.child = child;
    r.seq = seq;
    if (id)
        snprintf(r.id, sizeof(r.id), "%s", id);
    if (why)
        snprintf(r.why, sizeof(r.why), "%s", why);
    if (write(w->fd, &r, sizeof(r)) != (ssize_t)sizeof(r))
        _exit(5);
}

static void fail_child(struct writer *w, uint32_t seq, const char *why)
{
    tell(w, REC_FAIL, OP_NONE, w->child, seq, NULL, why);
    _exit(4);
}

static uint32_t next_seq(struct writer *w)
{
    uint32_t s = atomic_fetch_add(&w->seq, 1);

    if (s >= WRITER_MAX_MSGS)
        for (;;)
            pause(); /* enough: wait to be killed */
    return s;
}

static void submitted(void *ctx, struct spool_msg *m, int status,
                      const char *why)
{
    struct submitter *t = ctx;
    uint32_t seq = (uint32_t)strtoul(strchr(m->envid, 's') + 1, NULL, 10);

    if (status != 0)
        fail_child(t->w, seq, why);
    tell(t->w, REC_ACK, OP_NONE, t->w->child, seq, m->id, NULL);
    spool_msg_free(m);
    pthread_mutex_lock(&t->lock);
    t->inflight--;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void *submit_loop(void *arg)
{
    struct submitter *t = arg;
    struct writer *w = t->w;

    for (;;) {
        uint32_t s = next_seq(w);
        int burst = 1 + (int)(pair_hash(w->child, s, 8) % 4);

        pthread_mutex_lock(&t->lock);
        t->inflight = burst;
        pthread_mutex_unlock(&t->lock);
        for (int i = 0; i < burst; i++) {
            if (i > 0)
                s = next_seq(w);
            if (spool_submit(w->sp, pair_msg(w->child, s), submitted, t) < 0)
                fail_child(w, s, "spool_submit failed");
        }
        pthread_mutex_lock(&t->lock);
        while (t->inflight > 0)
            pthread_cond_wait(&t->cond, &t->lock);
        pthread_mutex_unlock(&t->lock);
    }
    return NULL;
}

static void *change_loop(void *arg)
{
    struct writer *w = arg;
    char why[256];

    for (size_t i = 0; i < w->ncand; i++) {
        uint32_t c = w->cand_child[i], s = w->cand_seq[i];
        enum op op = pair_op(c, s);
        struct spool_change ch = {0};
        struct spool_result res[2];
        char reason[2][64];
        int rc;

        tell(w, REC_INTENT, op, c, s, w->cand_id[i], NULL);
        if (op == OP_DELETE) {
            rc = spool_delete(w->sp, w->cand_id[i], why, sizeof(why));
        } else {
            ch.has_state = 1;
            ch.has_attempts = 1;
            if (op == OP_DEFER) {
                ch.state = SPOOL_DEFERRED;
                ch.has_next_attempt = 1;
                ch.next_attempt = pair_next_attempt(c, s);
                ch.attempts = 1;
                pair_results(c, s, res, reason, &ch.nresults);
                ch.results = res;
            } else {
                ch.state = SPOOL_ACTIVE;
                ch.attempts = 2;
            }
            rc = spool_update(w->sp, w->cand_id[i], &ch, why, sizeof(why));
        }
        if (rc != 0)
            fail_child(w, s, why);
        tell(w, REC_DONE, op, c, s, w->cand_id[i], NULL);
    }
    return NULL;
}

static void writer_run(struct writer *w, const char *dir, int flags)
{
    struct spool_config cf = {dir, 1 << 20, 0}; /* the map has to grow */
    struct submitter t[SUBMITTERS];
    pthread_t tid;
    char why[256];

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (spool_open(&w->sp, &cf, flags, why, sizeof(why)) < 0)
        fail_child(w, 0, why);
    if (pthread_create(&tid, NULL, change_loop, w) != 0)
        fail_child(w, 0, "pthread_create");
    for (int i = 0; i < SUBMITTERS; i++) {
        t[i].w = w;
        pthread_mutex_init(&t[i].lock, NULL);
        pthread_cond_init(&t[i].cond, NULL);
        t[i].inflight = 0;
        if (pthread_create(&tid, NULL, submit_loop, &t[i]) != 0)
            fail_child(w, 0, "pthread_create");
    }
    for (;;) {
        uint32_t s = next_seq(w);
        struct spool_msg *m = pair_msg(w->child, s);

        if (spool_store(w->sp, m, why, sizeof(why)) != 0)
            fail_child(w, s, why);
        tell(w, REC_ACK, OP_NONE, w->child, s, m->id, NULL);
        spool_msg_free(m);
    }
}

/* ---- the parent ---------------------------------------------------- */

struct run {
    char dir[64];
    uint64_t rng;
    int fd;
    uint32_t child;
    long acks, acks_this_child, intents, dones, failures;
    long early; /* writers killed before their first acknowledgement */
    char first_failure[256];
};

static uint64_t run_rand(struct run *r)
{
    return mix64(r->rng++);
}

static double now_s(void)
{
    return (double)util_clock_mono_us() / 1e6;
}

static struct entry *log_entry(uint32_t c, uint32_t s)
{
    struct child_log *l;

    if (c >= KILLS)
        return NULL;
    l = &logs[c];
    if (s >= l->n) {
        uint32_t n = s + 64;

        l->e = realloc(l->e, n * sizeof(*l->e));
        memset(l->e + l->n, 0, (n - l->n) * sizeof(*l->e));
        l->n = n;
    }
    return &l->e[s];
}

static void take(struct run *r, const struct rec *rec)
{
    struct entry *e = log_entry(rec->child, rec->seq);

    if (e == NULL || rec->kind > REC_FAIL) {
        r->failures++;
        snprintf(r->first_failure, sizeof(r->first_failure),
                 "bad record from writer %u", r->child);
        return;
    }
    switch (rec->kind) {
    case REC_ACK:
        if ((e->acked || rec->child != r->child) && r->failures++ == 0)
            snprintf(r->first_failure, sizeof(r->first_failure),
                     "c%u-s%u acknowledged twice or by another writer",
                     rec->child, rec->seq);
        e->acked = 1;
        memcpy(e->id, rec->id, sizeof(e->id));
        r->acks++;
        r->acks_this_child++;
        break;
    case REC_INTENT:
        if ((!e->acked || e->intent || strcmp(e->id, rec->id) != 0 ||
             rec->op != pair_op(rec->child, rec->seq)) &&
            r->failures++ == 0)
            snprintf(r->first_failure, sizeof(r->first_failure),
                     "c%u-s%u: unexpected change", rec->child, rec->seq);
        e->intent = (unsigned char)rec->op;
        r->intents++;
        break;
    case REC_DONE:
        e->done = (unsigned char)rec->op;
        r->dones++;
        break;
    case REC_FAIL:
        if (r->failures++ == 0)
            snprintf(r->first_failure, sizeof(r->first_failure),
                     "writer %u, c%u-s%u: %s", r->child, rec->child, rec->seq,
                     rec->why);
        break;
    }
}

/* Read what is there; at the end, everything up to end of file. */
static int drain(struct run *r, int to_eof)
{
    static unsigned char buf[64 * sizeof(struct rec)];
    static size_t have;
    ssize_t n;

    for (;;) {
        n = read(r->fd, buf + have, sizeof(buf) - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN && to_eof) {
            struct timespec ts = {0, 100000};

            nanosleep(&ts, NULL);
            continue;
        }
        if (n <= 0)
            break;
        have += (size_t)n;
        while (have >= sizeof(struct rec)) {
            struct rec rec;

            memcpy(&rec, buf, sizeof(rec));
            take(r, &rec);
            have -= sizeof(rec);
            memmove(buf, buf + sizeof(rec), have);
        }
    }
    if (n == 0 && have != 0) {
        have = 0;
        return -1; /* a torn record: writes were not atomic */
    }
    return 0;
}

/* Read the pipe until the deadline, or the first acknowledgement. */
static void wait_until(struct run *r, double deadline, int first_ack)
{
    while (now_s() < deadline && r->failures == 0 &&
           !(first_ack && r->acks_this_child > 0)) {
        struct timespec ts = {0, 100000};

        drain(r, 0);
        nanosleep(&ts, NULL);
    }
}

/* Candidates for changes: acknowledged, not yet announced, op decided. */
static void writer_candidates(struct writer *w)
{
    size_t cap = 0;

    w->ncand = 0;
    for (uint32_t c = 0; c < KILLS; c++)
        for (uint32_t s = 0; s < logs[c].n; s++) {
            struct entry *e = &logs[c].e[s];

            if (!e->acked || e->intent || pair_op(c, s) == OP_NONE)
                continue;
            if (w->ncand == cap) {
                cap = cap ? cap * 2 : 64;
                w->cand_child = realloc(w->cand_child, cap * sizeof(uint32_t));
                w->cand_seq = realloc(w->cand_seq, cap * sizeof(uint32_t));
                w->cand_id = realloc(w->cand_id, cap * sizeof(*w->cand_id));
            }
            w->cand_child[w->ncand] = c;
            w->cand_seq[w->ncand] = s;
            memcpy(w->cand_id[w->ncand], e->id, sizeof(e->id));
            w->ncand++;
        }
}

/* One writer: fork, let it run, kill it. */
static void one_writer(struct run *r, struct writer *w, int *created)
{
    int p[2], status;
    uint64_t mode = run_rand(r) % 10;
    double start;
    pid_t pid;

    writer_candidates(w);
    w->child = r->child;
    assert_int_equal(pipe(p), 0);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        w->fd = p[1];
        writer_run(w, r->dir, *created ? 0 : SPOOL_CREATE);
        _exit(6);
    }
    close(p[1]);
    r->fd = p[0];
    fcntl(r->fd, F_SETFL, O_NONBLOCK);
    r->acks_this_child = 0;
    start = now_s();
    if (mode == 0 && *created) {
        /* at once: often before or while the spool is opened */
    } else if (mode <= 3 && *created) {
        wait_until(r, start + (double)(run_rand(r) % 4000) / 1e6, 0);
    } else {
        wait_until(r, start + 60, 1);
        if (r->acks_this_child == 0 || r->failures) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            drain(r, 1);
            if (r->failures)
                fail_msg("%s", r->first_failure);
            fail_msg("writer %u acknowledged nothing in 60 s", r->child);
        }
        wait_until(r, now_s() + (double)(run_rand(r) % 5000) / 1e6, 0);
    }
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (drain(r, 1) < 0)
        fail_msg("writer %u: a torn record on the pipe", r->child);
    close(r->fd);
    if (r->failures)
        fail_msg("%s", r->first_failure);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        fail_msg("writer %u ended with status %#x, not by SIGKILL", r->child,
                 status);
    if (r->acks_this_child == 0)
        r->early++;
    if (r->acks > 0)
        *created = 1;
    r->child++;
}

/* ---- checking what is left ----------------------------------------- */

struct found {
    char id[SPOOL_ID_MAX + 1];
    enum spool_state state;
    uint32_t nrcpt;
};

struct found_list {
    struct found *f;
    size_t n, cap;
};

static int found_cb(void *ctx, const struct spool_msg *m)
{
    struct found_list *l = ctx;

    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 1024;
        l->f = realloc(l->f, l->cap * sizeof(*l->f));
    }
    snprintf(l->f[l->n].id, sizeof(l->f[0].id), "%s", m->id);
    l->f[l->n].state = m->state;
    l->f[l->n].nrcpt = m->nrcpt;
    l->n++;
    return 0;
}

static int found_cmp(const void *a, const void *b)
{
    return strcmp(((const struct found *)a)->id, ((const struct found *)b)->id);
}

static struct found *found_get(struct found_list *l, const char *id)
{
    struct found key;

    snprintf(key.id, sizeof(key.id), "%s", id);
    return bsearch(&key, l->f, l->n, sizeof(*l->f), found_cmp);
}

static long problems;

static void problem(const char *fmt, ...)
{
    va_list ap;

    if (problems++ >= 20)
        return;
    printf("# ");
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
}

static int str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Is got, version by version, what the pair says? 1 yes, 0 no. */
static int same_msg(const struct spool_msg *got, uint32_t c, uint32_t s,
                    enum op applied, unsigned char *scratch)
{
    struct spool_msg *want = pair_msg(c, s);
    struct spool_result res[2];
    char reason[2][64];
    uint32_t nres = 0;
    int ok = 1;

    if (applied == OP_DEFER)
        pair_results(c, s, res, reason, &nres);
    ok &= str_eq(got->sender, want->sender) && str_eq(got->envid, want->envid);
    ok &= got->ret == want->ret && got->arrival == want->arrival;
    ok &= got->size == want->size && got->nrcpt == want->nrcpt;
    ok &= got->state == (applied == OP_DEFER ? SPOOL_DEFERRED : SPOOL_INCOMING);
    ok &= got->attempts == (applied == OP_DEFER      ? 1u
                            : applied == OP_ACTIVATE ? 2u
                                                     : 0u);
    ok &= got->next_attempt ==
          (applied == OP_DEFER ? pair_next_attempt(c, s) : 0);
    ok &= got->corrupt_reason == NULL && got->created > 0;
    for (uint32_t i = 0; ok && i < want->nrcpt; i++) {
        const struct spool_rcpt *a = &got->rcpt[i], *b = &want->rcpt[i];
        enum spool_rcpt_status st = SPOOL_RCPT_PENDING;
        const char *why = NULL;
        int code = 0;

        for (uint32_t k = 0; k < nres; k++)
            if (res[k].rcpt == i) {
                st = res[k].status;
                code = res[k].code;
                why = res[k].reason;
            }
        ok &= str_eq(a->address, b->address) && str_eq(a->orig, b->orig) &&
              str_eq(a->orcpt, b->orcpt) && a->notify == b->notify;
        ok &= a->status == st && a->code == code && str_eq(a->reason, why);
    }
    if (ok) {
        pair_body(c, s, scratch, want->size);
        ok &= memcmp(got->body, scratch, want->size) == 0;
    }
    spool_msg_free(want);
    return ok;
}

/* One message in the spool: decodes whole, is a version it may be. */
static void check_present(struct spool *sp, const struct found *f,
                          unsigned char *scratch)
{
    struct spool_msg *got;
    struct entry *e;
    unsigned c, s;
    char why[256];
    int n = 0;

    if (spool_get(sp, f->id, &got, SPOOL_GET_RCPTS | SPOOL_GET_BODY, why,
                  sizeof(why)) != 0) {
        problem("%s: listed but cannot be read whole: %s", f->id, why);
        return;
    }
    if (got->envid == NULL ||
        sscanf(got->envid, "c%u-s%u%n", &c, &s, &n) != 2 ||
        got->envid[n] != 0 || c >= KILLS || s >= WRITER_MAX_MSGS) {
        problem("%s: not a message of this test (envid %s)", f->id,
                got->envid ? got->envid : "none");
        spool_msg_free(got);
        return;
    }
    e = log_entry(c, s);
    if (e->seen++)
        problem("%s: c%u-s%u is in the spool twice", f->id, c, s);
    if (e->acked && strcmp(e->id, f->id) != 0)
        problem("%s: c%u-s%u was acknowledged as %s", f->id, c, s, e->id);
    if (e->done == OP_DELETE)
        problem("%s: c%u-s%u is there after its delete returned", f->id, c, s);
    if (e->done == OP_DEFER || e->done == OP_ACTIVATE) {
        if (!same_msg(got, c, s, (enum op)e->done, scratch))
            problem("%s: c%u-s%u is not wholly as its change left it", f->id, c,
                    s);
    } else if (!same_msg(got, c, s, OP_NONE, scratch) &&
               !(e->intent &&
                 same_msg(got, c, s, (enum op)e->intent, scratch))) {
        problem("%s: c%u-s%u is neither wholly as stored nor wholly "
                "changed",
                f->id, c, s);
    }
    spool_msg_free(got);
}

/* Each index lists exactly the messages in its state. */
static void check_index(struct spool *sp, struct found_list *all,
                        enum spool_index index, enum spool_state state)
{
    struct found_list l = {0};
    char why[256];
    size_t want = 0;

    assert_int_equal(spool_list(sp, index, found_cb, &l, why, sizeof(why)), 0);
    for (size_t i = 0; i < all->n; i++)
        want += all->f[i].state == state;
    if (l.n != want)
        problem("index %d lists %zu messages, %zu are %s", index, l.n, want,
                spool_state_name(state));
    for (size_t i = 0; i < l.n; i++) {
        struct found *f = found_get(all, l.f[i].id);

        if (f == NULL || f->state != state)
            problem("index %d lists %s, which is %s", index, l.f[i].id,
                    f ? spool_state_name(f->state) : "not there");
    }
    free(l.f);
}

static uint32_t rcpt_index(const unsigned char *key)
{
    return (uint32_t)key[16] << 24 | (uint32_t)key[17] << 16 |
           (uint32_t)key[18] << 8 | key[19];
}

/* Underneath: no record without its message, nothing marked corrupt. */
static void check_raw(const char *dir, struct found_list *all)
{
    static const char *const names[] = {"rcpt", "body", "corrupt"};
    char path[128];
    MDB_env *env;
    MDB_txn *txn;
    size_t rcpts = 0;

    for (size_t i = 0; i < all->n; i++)
        rcpts += all->f[i].nrcpt;
    snprintf(path, sizeof(path), "%s/db", dir);
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 8), 0);
    assert_int_equal(mdb_env_open(env, path, MDB_RDONLY, 0600), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, MDB_RDONLY, &txn), 0);
    for (int d = 0; d < 3; d++) {
        MDB_dbi dbi;
        MDB_cursor *cur;
        MDB_val k, v;
        size_t n = 0;

        assert_int_equal(mdb_dbi_open(txn, names[d], 0, &dbi), 0);
        assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
        while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0) {
            char id[SPOOL_ID_MAX + 1] = {0};
            struct found *f;

            n++;
            memcpy(id, k.mv_data, k.mv_size < 16 ? k.mv_size : 16);
            f = found_get(all, id);
            if (d == 2)
                problem("corrupt database holds a record of %s", id);
            else if (f == NULL)
                problem("%s record of %s, a message that is not there",
                        names[d], id);
            else if (d == 0 &&
                     (k.mv_size != 20 || rcpt_index(k.mv_data) >= f->nrcpt))
                problem("%s: a recipient record past its %u recipients", id,
                        f->nrcpt);
        }
        mdb_cursor_close(cur);
        if (d == 0 && n != rcpts)
            problem("%zu recipient records, the messages have %zu", n, rcpts);
        if (d == 1 && n != all->n)
            problem("%zu bodies for %zu messages", n, all->n);
    }
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static void check_spool(struct run *r, long *present, long *unacked)
{
    struct spool_config cf = {r->dir, 1 << 20, 0};
    struct spool_recovery rec;
    struct found_list all = {0};
    unsigned char *scratch = malloc(MAX_BODY);
    struct spool *sp;
    char why[256];
    long active = 0;

    if (spool_open(&sp, &cf, 0, why, sizeof(why)) != 0)
        fail_msg("open after the kills: %s", why);
    /* Before recovery: only announced activations may be active. */
    assert_int_equal(
        spool_list(sp, SPOOL_INDEX_ALL, found_cb, &all, why, sizeof(why)), 0);
    for (size_t i = 0; i < all.n; i++)
        if (all.f[i].state == SPOOL_ACTIVE)
            active++;
        else if (all.f[i].state != SPOOL_INCOMING &&
                 all.f[i].state != SPOOL_DEFERRED)
            problem("%s: state %s", all.f[i].id,
                    spool_state_name(all.f[i].state));
    all.n = 0;
    if (spool_recover(sp, &rec, why, sizeof(why)) != 0)
        fail_msg("spool_recover: %s", why);
    if (rec.corrupt != 0 || rec.active_to_incoming != active)
        problem("recovery: %ld corrupt, %ld active to incoming (%ld active)",
                rec.corrupt, rec.active_to_incoming, active);
    assert_int_equal(spool_recover(sp, &rec, why, sizeof(why)), 0);
    assert_int_equal(rec.corrupt + rec.active_to_incoming, 0);

    assert_int_equal(
        spool_list(sp, SPOOL_INDEX_ALL, found_cb, &all, why, sizeof(why)), 0);
    qsort(all.f, all.n, sizeof(*all.f), found_cmp);
    for (size_t i = 0; i < all.n; i++)
        check_present(sp, &all.f[i], scratch);
    for (uint32_t c = 0; c < KILLS; c++)
        for (uint32_t s = 0; s < logs[c].n; s++) {
            struct entry *e = &logs[c].e[s];

            if (e->acked && !e->seen && e->intent != OP_DELETE)
                problem("c%u-s%u, acknowledged as %s, is lost", c, s, e->id);
            if (e->seen && !e->acked)
                ++*unacked;
        }
    check_index(sp, &all, SPOOL_INDEX_INCOMING, SPOOL_INCOMING);
    check_index(sp, &all, SPOOL_INDEX_DEFERRED, SPOOL_DEFERRED);
    spool_close(sp);
    check_raw(r->dir, &all);
    *present = (long)all.n;
    free(all.f);
    free(scratch);
}

static void test_kill_writers(void **state)
{
    const char *seed = getenv("SLUICE_CRASH_SEED");
    struct run r = {.dir = "/tmp/sluice-crash.XXXXXX"};
    struct writer w = {0};
    long present = 0, unacked = 0, dones = 0;
    double start = now_s();
    int created = 0;
    char cmd[128];
    struct stat st;

    (void)state;
    r.rng = seed ? strtoull(seed, NULL, 10) : 20261122;
    assert_non_null(mkdtemp(r.dir));
    printf("# spool %s (removed if the test passes)\n", r.dir);
    for (int i = 0; i < KILLS; i++)
        one_writer(&r, &w, &created);
    free(w.cand_child);
    free(w.cand_seq);
    free(w.cand_id);
    snprintf(cmd, sizeof(cmd), "%s/db/data.mdb", r.dir);
    assert_int_equal(stat(cmd, &st), 0);
    check_spool(&r, &present, &unacked);
    for (uint32_t c = 0; c < KILLS; c++)
        for (uint32_t s = 0; s < logs[c].n; s++)
            dones += logs[c].e[s].done != OP_NONE;
    printf("# seed %llu: %u writers killed (%ld before their first "
           "acknowledgement), %ld messages acknowledged, %ld changes "
           "announced, %ld returned; %ld messages in the spool (%ld "
           "unacknowledged), data.mdb %.0f MB, %.1f s\n",
           (unsigned long long)(seed ? strtoull(seed, NULL, 10) : 20261122),
           r.child, r.early, r.acks, r.intents, dones, present, unacked,
           (double)st.st_size / 1e6, now_s() - start);
    for (uint32_t c = 0; c < KILLS; c++)
        free(logs[c].e);
    if (problems == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf %s", r.dir);
        assert_int_equal(system(cmd), 0);
    } else {
        fail_msg("%ld problems; the spool is kept in %s", problems, r.dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kill_writers),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
