/*
 * NAME
 *	sync 3 - one exchange with Redis: the request and its reply
 * SYNOPSIS
 *	#include "cluster/cluster_impl.h"
 *
 *	void	cluster_sync_send(struct cluster *c)
 * DESCRIPTION
 *	cluster_sync_send() asks the caller for every queue's demand,
 *	closes the lease table's round and sends script.c's script with
 *	the round's queues and the host facts waiting to go out (they go
 *	with it: lost if it fails, decision 100). The reply, checked
 *	strictly, gives the live members, each queue's leases, target,
 *	starts and connections
 *	by its rate (then the caps callback), when a rate fits one more
 *	start (a sync then), and, when pulled, the other members' host
 *	facts (into destdb); a reply that is an error or malformed makes the
 *	member decide alone and drops the connection.
 */

#include "cluster/cluster_impl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "util/util.h"

struct sync_args {
    const char **argv;
    size_t *len;
    int argc, cap;
};

static void arg_add(struct sync_args *a, char *s)
{
    if (a->argc == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->argv = xrealloc(a->argv, (size_t)a->cap * sizeof(*a->argv));
        a->len = xrealloc(a->len, (size_t)a->cap * sizeof(*a->len));
    }
    a->argv[a->argc] = s;
    a->len[a->argc++] = strlen(s);
}

static void arg_fmt(struct sync_args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void arg_fmt(struct sync_args *a, const char *fmt, ...)
{
    char buf[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    arg_add(a, xstrdup(buf));
}

static void args_free(struct sync_args *a, int from)
{
    for (int i = from; i < a->argc; i++)
        free((char *)a->argv[i]);
    free(a->argv);
    free(a->len);
}

/* The facts of one kind: their count, then HOST WHEN each. */
static void facts_args(struct cluster *c, struct sync_args *a, int kind)
{
    size_t n = 0;

    for (size_t i = 0; i < c->nfacts; i++)
        n += c->facts[i].kind == kind;
    arg_fmt(a, "%zu", n);
    for (size_t i = 0; i < c->nfacts; i++)
        if (c->facts[i].kind == kind) {
            arg_fmt(a, "%s", c->facts[i].host);
            arg_fmt(a, "%lld", (long long)c->facts[i].retry_wall);
        }
}

/* EVAL script numkeys KEYS... ARGV... (doc/cluster.md). */
static void sync_args(struct cluster *c, struct sync_args *a)
{
    arg_add(a, (char *)"EVAL");
    arg_add(a, (char *)cluster_sync_script);
    arg_fmt(a, "%zu", 7 + 4 * c->nreqs);
    arg_fmt(a, "%smembers", c->tag);
    arg_fmt(a, "%shosts", c->tag);
    arg_fmt(a, "%ssuspend", c->tag);
    arg_fmt(a, "%sdead", c->tag);
    arg_fmt(a, "%sseen", c->tag);
    arg_fmt(a, "%srecent", c->tag);
    arg_fmt(a, "%srecentseq", c->tag);
    for (size_t i = 0; i < c->nreqs; i++) {
        arg_fmt(a, "%slease:%s", c->tag, c->reqs[i].name);
        arg_fmt(a, "%swant:%s", c->tag, c->reqs[i].name);
        arg_fmt(a, "%srate:%s", c->tag, c->reqs[i].name);
        arg_fmt(a, "%sconnrate:%s", c->tag, c->reqs[i].name);
    }
    arg_fmt(a, "%s", c->member);
    arg_fmt(a, "%lld", (long long)c->lease_ms);
    arg_fmt(a, "%d", c->pull);
    arg_fmt(a, "%zu", c->nreqs);
    arg_fmt(a, "%lld", (long long)c->alone_ms);
    for (size_t i = 0; i < c->nreqs; i++) {
        arg_fmt(a, "%d", c->reqs[i].limit);
        arg_fmt(a, "%d", c->reqs[i].want);
        arg_fmt(a, "%d", c->reqs[i].busy);
        for (int k = 0; k < CLUSTER_RATES; k++) {
            arg_fmt(a, "%d", c->reqs[i].rate[k].count);
            arg_fmt(a, "%lld", (long long)c->reqs[i].rate[k].period);
            arg_fmt(a, "%d", c->reqs[i].rate[k].want);
        }
    }
    facts_args(c, a, CLUSTER_FACT_RETRY);
    arg_fmt(a, "%zu", c->susp.out.n);
    for (size_t i = 0; i < c->susp.out.n; i++) {
        arg_fmt(a, "%s", c->susp.out.v[i].dest);
        arg_fmt(a, "%lld", (long long)c->susp.out.v[i].until);
    }
    arg_fmt(a, "%zu", c->dead.out.n);
    for (size_t i = 0; i < c->dead.out.n; i++) {
        arg_fmt(a, "%s", c->dead.out.v[i].dest);
        arg_fmt(a, "%lld", (long long)c->dead.out.v[i].until);
        arg_fmt(a, "%s", c->dead.out.v[i].why);
    }
    facts_args(c, a, CLUSTER_FACT_CLOSE);
    c->nfacts = 0;
    arg_fmt(a, "%lld", c->recent_seen);
    arg_fmt(a, "%d", c->leave == CLUSTER_LEAVING);
    /* in flight now; back to out if this sync fails */
    cluster_shared_send(&c->susp);
    cluster_shared_send(&c->dead);
}

static int reply_int(const redisReply *r, long long *v)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return -1;
    *v = r->integer;
    return 0;
}

/* The other members' facts, HOST RETRY pairs, into destdb. */
static int reply_facts(struct cluster *c, const redisReply *r)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return -1;
    for (size_t i = 0; i < r->elements; i += 2) {
        const redisReply *h = r->element[i], *t = r->element[i + 1];
        char *end;
        long long when;

        if (h->type != REDIS_REPLY_STRING || t->type != REDIS_REPLY_STRING)
            return -1;
        when = strtoll(t->str, &end, 10);
        if (*end != '\0' || when <= 0)
            return -1;
        if (c->destdb != NULL)
            cluster_destdb_apply(c->destdb, h->str, when);
    }
    return 0;
}

/* The other members' connection records since the last applied
 * (decision 121): { SEQ, BEHIND, KIND, HOST, WHEN, ... }. BEHIND: some
 * were lost (the list is capped) or the count started again: the next
 * sync pulls the whole hosts' hash. */
static int reply_recent(struct cluster *c, const redisReply *r)
{
    long long seq, behind, when;
    char *end;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 ||
        (r->elements - 2) % 3 != 0 || reply_int(r->element[0], &seq) < 0 ||
        reply_int(r->element[1], &behind) < 0 || seq < 0)
        return -1;
    for (size_t i = 2; i < r->elements; i += 3) {
        const redisReply *k = r->element[i], *h = r->element[i + 1],
                         *t = r->element[i + 2];

        if (k->type != REDIS_REPLY_STRING || h->type != REDIS_REPLY_STRING ||
            t->type != REDIS_REPLY_STRING || k->len != 1 ||
            (k->str[0] != CLUSTER_FACT_RETRY &&
             k->str[0] != CLUSTER_FACT_CLOSE))
            return -1;
        when = strtoll(t->str, &end, 10);
        if (*end != '\0' || end == t->str || when <= 0)
            return -1;
        if (c->destdb == NULL)
            continue;
        if (k->str[0] == CLUSTER_FACT_RETRY)
            cluster_destdb_apply(c->destdb, h->str, when);
        else
            cluster_destdb_closed(c->destdb, h->str, when);
    }
    c->recent_seen = seq;
    if (behind) {
        c->pull = 1;
        cluster_poke(c);
    }
    return 0;
}

/* An array of nreqs integers, none negative. */
static int reply_counts(const struct cluster *c, const redisReply *r)
{
    long long v;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != c->nreqs)
        return -1;
    for (size_t i = 0; i < c->nreqs; i++)
        if (reply_int(r->element[i], &v) < 0 || v < 0)
            return -1;
    return 0;
}

/* An entry's value: "UNTIL" or, with a reason, "UNTIL REASON". */
static int susp_value(const redisReply *u, struct cluster_susp *e, int why)
{
    char *end;

    if (u->type != REDIS_REPLY_STRING)
        return -1;
    e->until = strtoll(u->str, &end, 10);
    if (end == u->str || e->until < 0)
        return -1;
    if (why && *end == ' ')
        snprintf(e->why, sizeof(e->why), "%s", end + 1);
    else if (*end != '\0')
        return -1;
    return 0;
}

/* A shared set, DEST VALUE pairs (0: not pulled), merged into s. */
static int reply_shared(struct cluster *c, const redisReply *r,
                        struct cluster_shared *s,
                        const struct cluster_susp_fns *fns, int why)
{
    struct cluster_susp *set;
    size_t n = 0;
    int bad = 0;

    if (r->type == REDIS_REPLY_INTEGER)
        return 0;
    if (r->type != REDIS_REPLY_ARRAY || r->elements % 2 != 0)
        return -1;
    set = xcalloc(r->elements / 2 + 1, sizeof(*set));
    for (size_t i = 0; i < r->elements && !bad; i += 2, n++) {
        const redisReply *d = r->element[i];

        bad = d->type != REDIS_REPLY_STRING || d->len >= sizeof(set[n].dest) ||
              susp_value(r->element[i + 1], &set[n], why) < 0;
        if (!bad)
            snprintf(set[n].dest, sizeof(set[n].dest), "%s", d->str);
    }
    if (!bad && fns->suspend != NULL)
        cluster_shared_pulled(s, set, n, fns, c->cb.ctx);
    free(set);
    return bad ? -1 : 0;
}

static int reply_apply(struct cluster *c, const redisReply *r)
{
    const redisReply *grants, *tokens, *targets, *ctokens;
    long long v, wait;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 10 ||
        reply_int(r->element[0], &v) < 0 || v < 1 ||
        reply_counts(c, r->element[1]) < 0 ||
        reply_counts(c, r->element[3]) < 0 ||
        reply_counts(c, r->element[6]) < 0 ||
        reply_counts(c, r->element[7]) < 0 ||
        reply_int(r->element[4], &wait) < 0)
        return -1;
    if (reply_facts(c, r->element[2]) < 0 ||
        reply_shared(c, r->element[5], &c->susp, &c->cb.susp, 0) < 0 ||
        reply_shared(c, r->element[8], &c->dead, &c->cb.dead, 1) < 0 ||
        reply_recent(c, r->element[9]) < 0)
        return -1;
    grants = r->element[1];
    tokens = r->element[3];
    targets = r->element[6];
    ctokens = r->element[7];
    c->members = (int)v;
    for (size_t i = 0; i < c->nreqs; i++) {
        cluster_leases_grant(c->leases, c->reqs[i].name,
                             (int)grants->element[i]->integer,
                             (int)targets->element[i]->integer);
        cluster_leases_tokens_add(c->leases, c->reqs[i].name, CLUSTER_RATE_MSG,
                                  (int)tokens->element[i]->integer);
        cluster_leases_tokens_add(c->leases, c->reqs[i].name, CLUSTER_RATE_CONN,
                                  (int)ctokens->element[i]->integer);
    }
    if (wait >= 0)
        cluster_rate_wait(c, wait);
    return 0;
}

static void on_reply(void *arg, const redisReply *reply)
{
    struct cluster *c = arg;

    if (reply == NULL || c->seq == 0)
        return; /* given up on: timed out or dropped */
    c->seq = 0;
    evtimer_del(c->timeout_ev);
    if (c->leave == CLUSTER_LEAVING) {
        c->leave = CLUSTER_LEFT;
        cluster_log(c, reply->type == REDIS_REPLY_ERROR,
                    "cluster %s: %s as %s%s%s", c->name,
                    reply->type == REDIS_REPLY_ERROR
                        ? "could not leave"
                        : "left, leases given back,",
                    c->member, reply->type == REDIS_REPLY_ERROR ? ": " : "",
                    reply->type == REDIS_REPLY_ERROR ? reply->str : "");
        return;
    }
    if (reply->type == REDIS_REPLY_ERROR || reply_apply(c, reply) < 0) {
        cluster_susp_unsent(c);
        cluster_go_alone(c, reply->type == REDIS_REPLY_ERROR
                                ? reply->str
                                : "a malformed reply to the sync script");
        cluster_drop(c);
        return;
    }
    c->ok_sent_at = c->sent_at;
    cluster_shared_sent(&c->susp); /* Redis has them */
    cluster_shared_sent(&c->dead);
    cluster_go_joined(c);
    cluster_caps(c);
    if (c->dirty) {
        c->dirty = 0;
        cluster_poke(c);
    }
}

void cluster_sync_send(struct cluster *c)
{
    struct sync_args a = {0};

    if (c->cb.demand && c->leave != CLUSTER_LEAVING)
        c->cb.demand(c->cb.ctx); /* leaving: no queue asks for anything */
    free(c->reqs);
    c->nreqs = cluster_leases_round(c->leases, &c->reqs);
    sync_args(c, &a);
    c->seq = ++c->next_seq;
    c->sent_at = util_clock_mono_ms();
    cluster_conn_send(c->conn, a.argc, a.argv, a.len, on_reply, c);
    c->pull = 0;
    args_free(&a, 2);
}
