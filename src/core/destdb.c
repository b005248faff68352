/*
 * NAME
 *	destdb 3 - what is known of each delivery host, in memory
 * SYNOPSIS
 *	#include "core/core.h"
 *
 *	struct core_destdb *core_destdb_memory(core_time_t record_lifetime)
 * DESCRIPTION
 *	Finch's destdb: "For broken destinations it records when we should
 *	next bother to try to connecting to them. It allows us to look up
 *	efficiently any connection(s) that we have currently open to a
 *	destination, whether they are active or idle, and how old they
 *	are. When we close the last connection to a destination, we keep
 *	a record of when it was made to help the decision of where to open
 *	new connections. The destdb has a garbage collector to remove stale
 *	retry and closed-connection records."
 *
 *	core_destdb_memory() keeps it in this process: host records in a
 *	hash table by name, each with its open connections in an array,
 *	most recently opened last. The operations are core.h's vtable. A
 *	record lives while the host has an open connection, and after its
 *	last close and its retry time for record_lifetime more; gc()
 *	removes the rest. So what it holds grows with the hosts recently
 *	used, never with the queue.
 *
 *	Connections are the caller's numbers; an operation on a
 *	connection the database does not hold is a bug and panics, as
 *	does opening one twice.
 */

#include "core/core.h"

#include <stdlib.h>
#include <string.h>

#include "core/core_impl.h"

struct dd_host {
    char *name;
    struct dd_host *next; /* hash chain */
    core_time_t last_close, retry_at;
    struct core_conn_view *conns; /* most recently opened last */
    size_t nconns, cap;
};

struct dd_memory {
    struct core_destdb db; /* first: the vtable's pointer is ours */
    core_time_t lifetime;
    struct dd_host **hash;
    size_t size, count;
};

#define DD(db) ((struct dd_memory *)(db))

static struct dd_host **dd_slot(struct dd_memory *m, const char *name)
{
    struct dd_host **pp = &m->hash[core_hash(name, m->size)];

    while (*pp && strcmp((*pp)->name, name) != 0)
        pp = &(*pp)->next;
    return pp;
}

static void dd_grow(struct dd_memory *m)
{
    size_t size = m->size * 2;
    struct dd_host **hash = xcalloc(size, sizeof(*hash));

    for (size_t i = 0; i < m->size; i++) {
        struct dd_host *h, *next;

        for (h = m->hash[i]; h; h = next) {
            size_t slot = core_hash(h->name, size);

            next = h->next;
            h->next = hash[slot];
            hash[slot] = h;
        }
    }
    free(m->hash);
    m->hash = hash;
    m->size = size;
}

/* The record of name, made when absent. */
static struct dd_host *dd_host(struct dd_memory *m, const char *name)
{
    struct dd_host **pp = dd_slot(m, name), *h = *pp;

    if (h != NULL)
        return h;
    h = xcalloc(1, sizeof(*h));
    h->name = xstrdup(name);
    h->last_close = h->retry_at = -1;
    *pp = h;
    if (++m->count > m->size)
        dd_grow(m);
    return h;
}

static struct core_conn_view *dd_conn(struct dd_host *h, uint64_t conn)
{
    for (size_t i = 0; i < h->nconns; i++)
        if (h->conns[i].conn == conn)
            return &h->conns[i];
    return NULL;
}

static struct core_conn_view *dd_conn_must(struct dd_memory *m,
                                           const char *name, uint64_t conn)
{
    struct dd_host *h = *dd_slot(m, name);
    struct core_conn_view *c = h ? dd_conn(h, conn) : NULL;

    if (c == NULL)
        util_panic("destdb: host %s has no connection %llu", name,
                   (unsigned long long)conn);
    return c;
}

static void dd_conn_open(struct core_destdb *db, const char *name,
                         uint64_t conn, core_time_t now)
{
    struct dd_host *h = dd_host(DD(db), name);

    if (dd_conn(h, conn) != NULL)
        util_panic("destdb: host %s: connection %llu opened twice", name,
                   (unsigned long long)conn);
    if (h->nconns == h->cap) {
        h->cap = h->cap ? 2 * h->cap : 4;
        h->conns = xrealloc(h->conns, h->cap * sizeof(*h->conns));
    }
    h->conns[h->nconns++] =
        (struct core_conn_view){.conn = conn, .opened = now, .idle_since = now};
}

static void dd_conn_jobs(struct core_destdb *db, const char *name,
                         uint64_t conn, int jobs, core_time_t now)
{
    struct core_conn_view *c = dd_conn_must(DD(db), name, conn);

    if (jobs == 0 && c->jobs > 0)
        c->idle_since = now;
    c->jobs = jobs;
}

static void dd_conn_close(struct core_destdb *db, const char *name,
                          uint64_t conn, core_time_t now)
{
    struct dd_host *h = *dd_slot(DD(db), name);
    struct core_conn_view *c = dd_conn_must(DD(db), name, conn);
    size_t i = (size_t)(c - h->conns);

    memmove(c, c + 1, (h->nconns - i - 1) * sizeof(*c));
    h->nconns--;
    h->last_close = now;
}

/* Another process's close (a cluster's member): the later one counts. */
static void dd_host_closed(struct core_destdb *db, const char *name,
                           core_time_t when)
{
    struct dd_host *h = dd_host(DD(db), name);

    if (when > h->last_close)
        h->last_close = when;
}

static void dd_host_fail(struct core_destdb *db, const char *name,
                         core_time_t retry_at)
{
    dd_host(DD(db), name)->retry_at = retry_at;
}

static void dd_host_ok(struct core_destdb *db, const char *name)
{
    struct dd_host *h = *dd_slot(DD(db), name);

    if (h != NULL)
        h->retry_at = -1;
}

static int dd_host_get(struct core_destdb *db, const char *name,
                       struct core_host_view *v, struct core_conn_view *conns,
                       size_t max)
{
    struct dd_host *h = *dd_slot(DD(db), name);

    if (h == NULL) {
        *v = (struct core_host_view){-1, -1, 0};
        return 0;
    }
    v->last_close = h->last_close;
    v->retry_at = h->retry_at;
    v->nconns = h->nconns;
    for (size_t i = 0; i < h->nconns && i < max; i++)
        conns[i] = h->conns[h->nconns - 1 - i];
    return 1;
}

static void dd_host_free(struct dd_host *h)
{
    free(h->name);
    free(h->conns);
    free(h);
}

static void dd_gc(struct core_destdb *db, core_time_t now)
{
    struct dd_memory *m = DD(db);

    for (size_t i = 0; i < m->size; i++) {
        struct dd_host **pp = &m->hash[i], *h;

        while ((h = *pp) != NULL) {
            core_time_t last =
                h->last_close > h->retry_at ? h->last_close : h->retry_at;

            if (h->nconns == 0 && last + m->lifetime <= now) {
                *pp = h->next;
                dd_host_free(h);
                m->count--;
            } else {
                pp = &h->next;
            }
        }
    }
}

static size_t dd_count(const struct core_destdb *db)
{
    return ((const struct dd_memory *)db)->count;
}

static void dd_free(struct core_destdb *db)
{
    struct dd_memory *m = DD(db);

    for (size_t i = 0; i < m->size; i++) {
        struct dd_host *h, *next;

        for (h = m->hash[i]; h; h = next) {
            next = h->next;
            dd_host_free(h);
        }
    }
    free(m->hash);
    free(m);
}

static const struct core_destdb_ops dd_memory_ops = {
    .conn_open = dd_conn_open,
    .conn_jobs = dd_conn_jobs,
    .conn_close = dd_conn_close,
    .host_closed = dd_host_closed,
    .host_fail = dd_host_fail,
    .host_ok = dd_host_ok,
    .host_get = dd_host_get,
    .gc = dd_gc,
    .count = dd_count,
    .free = dd_free,
};

struct core_destdb *core_destdb_memory(core_time_t record_lifetime)
{
    struct dd_memory *m = xcalloc(1, sizeof(*m));

    m->db.ops = &dd_memory_ops;
    m->lifetime = record_lifetime;
    m->size = 64;
    m->hash = xcalloc(m->size, sizeof(*m->hash));
    return &m->db;
}
