/*
 * NAME
 *	qshape 3 - "sluice qshape": the queue by domain and age, as qshape
 * SYNOPSIS
 *	sluice qshape [-s] [-l] [-b BUCKETS] [-t MINUTES] [-w WIDTH]
 *		[incoming|active|deferred|hold|corrupt...]
 *
 *	struct cli_qshape *cli_qshape_create(int tick, int buckets,
 *			int linear)
 *	void	cli_qshape_add(struct cli_qshape *qs, const char *address,
 *			int64_t age_us)
 *	void	cli_qshape_print(const struct cli_qshape *qs, FILE *fp,
 *			int width)
 *	void	cli_qshape_free(struct cli_qshape *qs)
 * DESCRIPTION
 *	sluice qshape prints what Postfix's qshape(1) prints for its queue,
 *	in the same layout, so that an operator reads it the same way: for
 *	each recipient domain of the messages in the queues named (default
 *	incoming and active, as qshape's), how many recipients still to be
 *	delivered there are, in total (column T) and by the age of their
 *	message. The age columns are buckets of MINUTES (-t, default 5)
 *	that double from one to the next (5, 10, 20, ... minutes: the
 *	column is the bucket's upper bound), BUCKETS of them (-b, default
 *	10), the last without a bound ("1280+"); with -l they grow
 *	linearly instead (5, 10, 15, ...). -s counts sender domains, one
 *	per message, instead. The first line is the column heads, then
 *	TOTAL and one line per domain, the largest first (TOTAL sorts with
 *	them, so a domain that has every recipient and a name shorter than
 *	"TOTAL" comes before it, as in qshape); domains
 *	are right-aligned so that the rows end at column WIDTH (-w, default
 *	80), and a domain too long for the space left shows its last
 *	characters after a "+". The null sender is MAILER-DAEMON. Exit
 *	status 0, 1 when the spool cannot be read, 64 on a usage error.
 *
 *	The table is its own object, so that a test can fill it with
 *	chosen ages: cli_qshape_create() makes an empty one with the
 *	bucket length in minutes, the number of buckets and whether they
 *	grow linearly; cli_qshape_add() counts one address (its domain,
 *	lower-cased, without trailing dots) of a message age_us old;
 *	cli_qshape_print() prints it; cli_qshape_free() frees it.
 *
 *	Not done: qshape's -p (parent domains) and -m, and its interim
 *	results on a terminal (-N, -n).
 */

#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QSHAPE_BUCKETS_MAX 100
#define QSHAPE_DOMAIN_MIN  18 /* qshape's narrowest domain column */

struct qshape_row {
    char *domain;
    long count[QSHAPE_BUCKETS_MAX + 1]; /* [0]: the total */
};

struct cli_qshape {
    int tick, buckets, linear;
    struct qshape_row total;
    struct qshape_row *rows;
    size_t nrows, cap;
    size_t *slots; /* open hash of rows by domain: index + 1, 0 empty */
    size_t nslots;
};

struct cli_qshape *cli_qshape_create(int tick, int buckets, int linear)
{
    struct cli_qshape *qs = xcalloc(1, sizeof(*qs));

    qs->tick = tick;
    qs->buckets = buckets;
    qs->linear = linear;
    qs->total.domain = xstrdup("TOTAL");
    qs->nslots = 64;
    qs->slots = xcalloc(qs->nslots, sizeof(*qs->slots));
    return qs;
}

void cli_qshape_free(struct cli_qshape *qs)
{
    if (qs == NULL)
        return;
    for (size_t i = 0; i < qs->nrows; i++)
        free(qs->rows[i].domain);
    free(qs->rows);
    free(qs->slots);
    free(qs->total.domain);
    free(qs);
}

/* qshape's bucket: 1 under one tick, then 2 + log2 of the ticks. */
static int bucket_of(const struct cli_qshape *qs, int64_t age_us)
{
    double m = (double)age_us / 1e6 / (60.0 * qs->tick);
    int b;

    if (m < 1)
        return 1;
    b = qs->linear ? (int)(m + 1) : 2 + (int)(log(m) / log(2));
    return b < qs->buckets ? b : qs->buckets;
}

static size_t domain_hash(const char *d)
{
    size_t h = 5381;

    for (; *d; d++)
        h = h * 33 + (unsigned char)*d;
    return h;
}

static void slots_grow(struct cli_qshape *qs)
{
    free(qs->slots);
    qs->nslots *= 2;
    qs->slots = xcalloc(qs->nslots, sizeof(*qs->slots));
    for (size_t i = 0; i < qs->nrows; i++) {
        size_t s = domain_hash(qs->rows[i].domain) & (qs->nslots - 1);

        while (qs->slots[s])
            s = (s + 1) & (qs->nslots - 1);
        qs->slots[s] = i + 1;
    }
}

static struct qshape_row *row_find(struct cli_qshape *qs, const char *domain)
{
    size_t s;

    if (2 * (qs->nrows + 1) > qs->nslots)
        slots_grow(qs);
    s = domain_hash(domain) & (qs->nslots - 1);
    for (; qs->slots[s]; s = (s + 1) & (qs->nslots - 1))
        if (strcmp(qs->rows[qs->slots[s] - 1].domain, domain) == 0)
            return &qs->rows[qs->slots[s] - 1];
    if (qs->nrows == qs->cap) {
        qs->cap = qs->cap ? 2 * qs->cap : 64;
        qs->rows = xrealloc(qs->rows, qs->cap * sizeof(*qs->rows));
    }
    memset(&qs->rows[qs->nrows], 0, sizeof(qs->rows[0]));
    qs->rows[qs->nrows].domain = xstrdup(domain);
    qs->slots[s] = ++qs->nrows;
    return &qs->rows[qs->nrows - 1];
}

/*
 * The domain qshape counts an address under: what follows its last
 * "@", in lower case, ".." made ".", one dot taken off each end; the
 * null address is MAILER-DAEMON.
 */
static void domain_of(const char *address, char *out, size_t len)
{
    const char *at = strrchr(address, '@');
    const char *p = at ? at + 1 : address;
    size_t n = 0;

    if (*address == 0) {
        snprintf(out, len, "MAILER-DAEMON");
        return;
    }
    for (; *p && n + 1 < len; p++)
        if (!(*p == '.' && n > 0 && out[n - 1] == '.'))
            out[n++] = (char)tolower((unsigned char)*p);
    out[n] = 0;
    if (n > 1 && out[n - 1] == '.')
        out[--n] = 0;
    if (n > 1 && out[0] == '.')
        memmove(out, out + 1, n--);
}

void cli_qshape_add(struct cli_qshape *qs, const char *address, int64_t age_us)
{
    int b = bucket_of(qs, age_us);
    struct qshape_row *row;
    char domain[256];

    domain_of(address, domain, sizeof(domain));
    row = row_find(qs, domain);
    qs->total.count[0]++;
    qs->total.count[b]++;
    row->count[0]++;
    row->count[b]++;
}

/* The column heads: T, then each bucket's upper bound, the last "N+". */
static void heads_make(const struct cli_qshape *qs, char (*heads)[24])
{
    long t = 0;

    snprintf(heads[0], sizeof(heads[0]), "T");
    for (int i = 1; i <= qs->buckets; i++) {
        if (i < qs->buckets) {
            t += t && !qs->linear ? t : qs->tick;
            snprintf(heads[i], sizeof(heads[i]), "%ld", t);
        } else {
            snprintf(heads[i], sizeof(heads[i]), "%ld+", t);
        }
    }
}

static void row_print(FILE *fp, const char *domain, int dw, const int *cw,
                      int n, char (*cells)[24])
{
    size_t len = strlen(domain);

    if ((int)len > dw)
        fprintf(fp, "+%s", domain + len - (size_t)(dw - 1));
    else
        fprintf(fp, "%*s", dw, domain);
    for (int i = 0; i < n; i++)
        fprintf(fp, "%*s", cw[i], cells[i]);
    fprintf(fp, "\n");
}

static void counts_print(FILE *fp, const struct qshape_row *row, int dw,
                         const int *cw, int n)
{
    char cells[QSHAPE_BUCKETS_MAX + 1][24];

    for (int i = 0; i < n; i++)
        snprintf(cells[i], sizeof(cells[i]), "%ld", row->count[i]);
    row_print(fp, row->domain, dw, cw, n, cells);
}

/* Largest total first; then the shorter name, then by name. */
static int row_order(const void *a, const void *b)
{
    const struct qshape_row *x = a, *y = b;
    size_t lx = strlen(x->domain), ly = strlen(y->domain);

    if (x->count[0] != y->count[0])
        return x->count[0] > y->count[0] ? -1 : 1;
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(x->domain, y->domain);
}

void cli_qshape_print(const struct cli_qshape *qs, FILE *fp, int width)
{
    char heads[QSHAPE_BUCKETS_MAX + 1][24];
    int cw[QSHAPE_BUCKETS_MAX + 1], n = qs->buckets + 1, dw = width;
    struct qshape_row *sorted;

    heads_make(qs, heads);
    /* Each column as wide as its head or its total, plus one; at least 3. */
    for (int i = 0; i < n; i++) {
        char total[24];
        int l = snprintf(total, sizeof(total), "%ld", qs->total.count[i]);

        if ((int)strlen(heads[i]) >= l)
            l = (int)strlen(heads[i]);
        cw[i] = l > 2 ? l + 1 : 3;
        dw -= cw[i];
    }
    if (dw < QSHAPE_DOMAIN_MIN)
        dw = QSHAPE_DOMAIN_MIN;
    row_print(fp, "", dw, cw, n, heads);
    /* TOTAL sorts with the domains, as in qshape (first, but for a tie). */
    sorted = xcalloc(qs->nrows + 1, sizeof(*sorted));
    memcpy(sorted, qs->rows, qs->nrows * sizeof(*sorted));
    sorted[qs->nrows] = qs->total;
    qsort(sorted, qs->nrows + 1, sizeof(*sorted), row_order);
    for (size_t i = 0; i <= qs->nrows; i++)
        counts_print(fp, &sorted[i], dw, cw, n);
    free(sorted);
}

struct qshape_walk {
    struct spool *sp;
    struct cli_qshape *qs;
    unsigned states; /* bits by enum spool_state */
    int senders;
    int64_t now;
    int failed;
};

static int qshape_one(void *ctx, const struct spool_msg *listed)
{
    struct qshape_walk *w = ctx;
    int64_t age = w->now - listed->arrival;
    struct spool_msg *m;
    char why[512];

    if (!(w->states & (1u << listed->state)))
        return 0;
    if (w->senders) {
        cli_qshape_add(w->qs, listed->sender, age);
        return 0;
    }
    if (spool_get(w->sp, listed->id, &m, SPOOL_GET_RCPTS, why, sizeof(why)) <
        0) {
        if (errno != ENOENT) { /* gone meanwhile: delivered or deleted */
            fprintf(stderr, "sluice: qshape: %s\n", why);
            w->failed = 1;
        }
        return 0;
    }
    for (uint32_t i = 0; i < m->nrcpt; i++)
        if (m->rcpt[i].status == SPOOL_RCPT_PENDING ||
            m->rcpt[i].status == SPOOL_RCPT_DEFERRED)
            cli_qshape_add(w->qs, m->rcpt[i].address, age);
    spool_msg_free(m);
    return 0;
}

static int state_bit(const char *name, unsigned *states)
{
    for (int s = SPOOL_INCOMING; s <= SPOOL_CORRUPT; s++)
        if (strcmp(name, spool_state_name((enum spool_state)s)) == 0) {
            *states |= 1u << s;
            return 0;
        }
    return -1;
}

static int number(const char *s, int min, int max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

static int qshape_usage(void)
{
    fprintf(stderr, "usage: sluice qshape [-s] [-l] [-b BUCKETS] "
                    "[-t MINUTES] [-w WIDTH] "
                    "[incoming|active|deferred|hold|corrupt...]\n");
    return CLI_EXIT_USAGE;
}

static int qshape_run(const struct cli *cli, int argc, char **argv)
{
    struct qshape_walk w = {0};
    int tick = 5, buckets = 10, linear = 0, width = 80, ch;
    struct conf *conf;
    char why[512];

    optind = 1;
    opterr = 0;
    while ((ch = getopt(argc, argv, "+slb:t:w:")) != -1) {
        switch (ch) {
        case 's':
            w.senders = 1;
            break;
        case 'l':
            linear = 1;
            break;
        case 'b':
            if (number(optarg, 1, QSHAPE_BUCKETS_MAX, &buckets) < 0)
                return qshape_usage();
            break;
        case 't':
            if (number(optarg, 1, 1000000, &tick) < 0)
                return qshape_usage();
            break;
        case 'w':
            if (number(optarg, 1, 10000, &width) < 0)
                return qshape_usage();
            width = width > 80 ? width : 80; /* qshape: wider only */
            break;
        default:
            return qshape_usage();
        }
    }
    for (int i = optind; i < argc; i++)
        if (state_bit(argv[i], &w.states) < 0) {
            fprintf(stderr, "sluice: qshape: no queue \"%s\"\n", argv[i]);
            return qshape_usage();
        }
    if (w.states == 0)
        w.states = 1u << SPOOL_INCOMING | 1u << SPOOL_ACTIVE;
    if ((conf = cli_spool_open(cli, "qshape", SPOOL_READONLY, &w.sp)) == NULL)
        return CLI_EXIT_FAIL;
    conf_free(conf);
    w.qs = cli_qshape_create(tick, buckets, linear);
    w.now = spool_now();
    if (spool_list(w.sp, SPOOL_INDEX_ALL, qshape_one, &w, why, sizeof(why)) <
        0) {
        fprintf(stderr, "sluice: qshape: %s\n", why);
        w.failed = 1;
    }
    spool_close(w.sp);
    if (!w.failed)
        cli_qshape_print(w.qs, stdout, width);
    cli_qshape_free(w.qs);
    return w.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

CLI_COMMAND(cli_qshape_command, "qshape",
            "[-s] [-l] [-b N] [-t MIN] [-w WIDTH] [QUEUE...]",
            "recipients per domain by age, as Postfix's qshape", qshape_run);
