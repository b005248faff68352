/*
 * NAME
 *	route 3 - routing tables: load, resolve, transports
 * SYNOPSIS
 *	#include "route/route.h"
 *
 *	struct route_table *route_load(const struct conf *conf, char *why,
 *			size_t whylen)
 *	void	route_free(struct route_table *t)
 *	int	route_resolve(const struct route_table *t, const char *address,
 *			struct route_result *out, char *why, size_t whylen)
 *
 *	int	route_transport_count(const struct route_table *t)
 *	const struct route_transport *route_transport_at(
 *			const struct route_table *t, int i)
 *	const struct route_transport *route_transport_find(
 *			const struct route_table *t, const char *name)
 * DESCRIPTION
 *	See route.h for the contract. The plan: everything that can be
 *	wrong is found by route_load(), once, so that route_resolve() (run
 *	for every recipient) only parses the recipient's domain and does
 *	at most one hash lookup per label plus one for "*". A table is
 *	never changed after route_load(): many threads may resolve with
 *	one table at once.
 *
 *	The "transports" list is NAME:TYPE words separated by commas or
 *	white space. A transport name must be usable as the prefix of a
 *	per-transport override ([a-z0-9_-]); a name declared twice, an
 *	unknown type or a word without a colon is an error that quotes the
 *	word.
 *
 *	default_transport is TRANSPORT or TRANSPORT:NEXTHOP, as the
 *	reference's: "error:5.1.2 no such domain" bounces what no table
 *	entry routes with that text, "relay:[10.0.0.1]:2525" sends it
 *	there. A NEXTHOP given there wins over the relay host (the
 *	reference's order of precedence); an empty one ("smtp:") is no
 *	next hop.
 *
 *	The relay host applies to the default transport only, and only
 *	when that transport is smtp or lmtp: a transport table result never
 *	goes to the relay host, so "example.com :" (or "example.com smtp:")
 *	sends a domain directly even when a relay host is set. A default
 *	transport of type discard or error without a NEXTHOP gets an empty
 *	text.
 */

#include "route/route.h"
#include "route/route_impl.h"

#include "conf/conf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QUOTED 96

static const struct {
    const char *name;
    enum route_type type;
} types[] = {
    {"smtp", ROUTE_SMTP},   {"lmtp", ROUTE_LMTP},   {"discard", ROUTE_DISCARD},
    {"error", ROUTE_ERROR}, {"agent", ROUTE_AGENT},
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

void route_free(struct route_table *t)
{
    int i;

    if (t == NULL)
        return;
    for (i = 0; i < t->ntransports; i++)
        free((char *)t->transports[i].name);
    free(t->transports);
    route_hop_free(&t->relay);
    route_hop_free(&t->default_hop);
    route_map_free(t->map);
    free(t);
}

static int transport_index(const struct route_table *t, const char *name,
                           size_t len)
{
    int i;

    for (i = 0; i < t->ntransports; i++)
        if (strncmp(t->transports[i].name, name, len) == 0 &&
            t->transports[i].name[len] == 0)
            return i;
    return -1;
}

int route_refuse(char *why, size_t whylen, const char *before, const char *text,
                 size_t len, const char *fmt, ...)
{
    char quoted[QUOTED];
    int n;
    va_list ap;

    util_quote(quoted, sizeof(quoted), text, len, UTIL_QUOTE_8BIT);
    n = snprintf(why, whylen, "%s%s", before, quoted);
    if (n >= 0 && (size_t)n < whylen) {
        va_start(ap, fmt);
        vsnprintf(why + n, whylen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* One NAME:TYPE word of "transports". */
static int transport_add(struct route_table *t, const char *word, size_t len,
                         char *why, size_t whylen)
{
    const char *colon = memchr(word, ':', len);
    const char *bad = "transports: bad entry ";
    size_t nlen;
    size_t i;

    if (colon == NULL)
        return route_refuse(why, whylen, bad, word, len,
                            ": expected NAME:TYPE");
    nlen = (size_t)(colon - word);
    if (!route_transport_name_valid(word, nlen))
        return route_refuse(why, whylen, bad, word, len,
                            ": a transport name is 1 to %d of a-z, 0-9, _ "
                            "and -",
                            ROUTE_NAME_MAX);
    for (i = 0; i < NTYPES; i++)
        if (strlen(types[i].name) == len - nlen - 1 &&
            memcmp(types[i].name, colon + 1, len - nlen - 1) == 0)
            break;
    if (i == NTYPES)
        return route_refuse(why, whylen, bad, word, len,
                            ": unknown type: expected smtp, lmtp, discard, "
                            "error or agent");
    if (transport_index(t, word, nlen) >= 0) {
        snprintf(why, whylen,
                 "transports: transport \"%.*s\" is declared "
                 "twice",
                 (int)nlen, word);
        return -1;
    }
    t->transports = xrealloc(t->transports, (size_t)(t->ntransports + 1) *
                                                sizeof(*t->transports));
    t->transports[t->ntransports].name = xstrndup(word, nlen);
    t->transports[t->ntransports].type = types[i].type;
    t->ntransports++;
    return 0;
}

static int transports_load(struct route_table *t, const char *list, char *why,
                           size_t whylen)
{
    static const char seps[] = ", \t\r\n\v\f";
    size_t len;

    for (list += strspn(list, seps); *list; list += strspn(list, seps)) {
        len = strcspn(list, seps);
        if (transport_add(t, list, len, why, whylen) < 0)
            return -1;
        list += len;
    }
    return 0;
}

/* default_transport: TRANSPORT or TRANSPORT:NEXTHOP. */
static int default_load(struct route_table *t, const char *value, char *why,
                        size_t whylen)
{
    const char *colon = strchr(value, ':');
    size_t nlen = colon ? (size_t)(colon - value) : strlen(value);
    enum route_type type;
    char problem[256];

    if ((t->default_transport = transport_index(t, value, nlen)) < 0)
        return route_refuse(why, whylen, "default_transport: ", value, nlen,
                            " is not a declared transport (see transports)");
    type = t->transports[t->default_transport].type;
    if (colon != NULL && route_hop_parse(colon + 1, type, &t->default_hop,
                                         problem, sizeof(problem)) < 0)
        return route_refuse(why, whylen, "default_transport: bad next hop ",
                            colon + 1, strlen(colon + 1),
                            " for transport %s: %s",
                            t->transports[t->default_transport].name, problem);
    return 0;
}

static int defaults_load(struct route_table *t, const struct conf *conf,
                         char *why, size_t whylen)
{
    const char *relay = conf_str(conf, NULL, CONF_relayhost);
    char problem[256];

    if (default_load(t, conf_str(conf, NULL, CONF_default_transport), why,
                     whylen) < 0)
        return -1;
    if (route_hop_parse(relay, ROUTE_SMTP, &t->relay, problem,
                        sizeof(problem)) < 0)
        return route_refuse(why, whylen, "relayhost: bad value ", relay,
                            strlen(relay), ": %s", problem);
    return 0;
}

struct route_table *route_load(const struct conf *conf, char *why,
                               size_t whylen)
{
    const char *transports = conf_str(conf, NULL, CONF_transports);
    const char *maps = conf_str(conf, NULL, CONF_transport_maps);
    struct route_table *t = xmalloc(sizeof(*t));

    memset(t, 0, sizeof(*t));
    if (transports_load(t, transports, why, whylen) < 0 ||
        defaults_load(t, conf, why, whylen) < 0 ||
        route_map_load(t, maps, why, whylen) < 0) {
        route_free(t);
        return NULL;
    }
    for (int i = 0; i < t->ntransports; i++) {
        struct route_transport *tr = t->transports + i;

        tr->per_recipient =
            tr->type != ROUTE_ERROR &&
            conf_int(conf, tr->name,
                     CONF_default_destination_recipient_limit) == 1;
    }
    return t;
}

int route_transport_count(const struct route_table *t)
{
    return t->ntransports;
}

const struct route_transport *route_transport_at(const struct route_table *t,
                                                 int i)
{
    return i >= 0 && i < t->ntransports ? t->transports + i : NULL;
}

const struct route_transport *route_transport_find(const struct route_table *t,
                                                   const char *name)
{
    int i = transport_index(t, name, strlen(name));

    return i >= 0 ? t->transports + i : NULL;
}

/* The recipient's domain, parsed. */
struct domain {
    char key[ROUTE_DOMAIN_MAX + 1]; /* lookup key: name or "[ipv4]" */
    enum route_domain kind;
};

static int address_parse(const char *address, struct domain *d, char *why,
                         size_t whylen)
{
    const char *at;
    const char *problem;

    if (address == NULL || *address == 0) {
        snprintf(why, whylen, "the null address has no route");
        return -1;
    }
    if ((at = strrchr(address, '@')) == NULL)
        problem = "no @domain";
    else if (at == address)
        problem = "empty local part";
    else if (at[1] == 0)
        problem = "empty domain";
    else if (route_domain_parse(at + 1, strlen(at + 1), d->key, &d->kind) < 0)
        problem = at[1] == '[' ? "bad address literal: expected [IPv4] or "
                                 "[IPv6:address]"
                               : "bad domain";
    else
        return 0;
    return route_refuse(why, whylen, "bad address ", address, strlen(address),
                        ": %s", problem);
}

/* The entry that routes domain d, or NULL for the default route. */
static const struct route_entry *lookup(const struct route_map *m,
                                        const struct domain *d)
{
    const struct route_entry *e;
    const char *dot;

    if (m == NULL)
        return NULL;
    if ((e = route_map_find(m, d->key)) != NULL)
        return e;
    if (d->kind == ROUTE_DOMAIN_NAME)
        for (dot = strchr(d->key, '.'); dot; dot = strchr(dot + 1, '.'))
            if ((e = route_map_find(m, dot)) != NULL)
                return e;
    return m->wildcard >= 0 ? m->entries + m->wildcard : NULL;
}

/* The host of a domain used as next hop: the name, or the bare address. */
static void domain_host(const struct domain *d, char *out, size_t len)
{
    const char *key = d->key;
    size_t klen = strlen(key);

    if (d->kind == ROUTE_DOMAIN_NAME) {
        snprintf(out, len, "%s", key);
        return;
    }
    key++, klen -= 2; /* the brackets */
    if (d->kind == ROUTE_DOMAIN_IPV6)
        key += 5, klen -= 5; /* "ipv6:" */
    snprintf(out, len, "%.*s", (int)klen, key);
}

/* The recipient's own queue: "localpart@" before the next hop, lower-cased. */
static void key_per_recipient(struct route_result *out)
{
    const char *at = strrchr(out->address, '@');
    size_t local = (size_t)(at - out->address);
    size_t hop = strlen(out->key.queue);
    char *key = out->key.queue;

    /* address_parse() found the "@"; a local part over RFC 5321's 64
     * bytes is cut to what the key holds. */
    if (local + 1 + hop >= sizeof(out->key.queue))
        local = sizeof(out->key.queue) - 2 - hop;
    memmove(key + local + 1, key, hop + 1);
    memcpy(key, out->address, local);
    key[local] = '@';
    for (char *p = key; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
}

static void result_fill(const struct route_table *t, int transport,
                        const struct route_hop *hop, const struct domain *d,
                        struct route_result *out)
{
    const struct route_transport *tr = t->transports + transport;

    snprintf(out->transport, sizeof(out->transport), "%s", tr->name);
    out->type = tr->type;
    out->port = 0;
    out->mx = 0;
    out->unix_path = 0;
    if (tr->type == ROUTE_DISCARD || tr->type == ROUTE_ERROR) {
        snprintf(out->nexthop, sizeof(out->nexthop), "%s",
                 hop && hop->host ? hop->host : "");
    } else if (hop && hop->host) {
        snprintf(out->nexthop, sizeof(out->nexthop), "%s", hop->host);
        out->port = hop->port;
        out->mx = tr->type == ROUTE_SMTP && !hop->bracketed;
        out->unix_path = hop->unix_path;
    } else {
        domain_host(d, out->nexthop, sizeof(out->nexthop));
        out->mx = tr->type == ROUTE_SMTP && d->kind == ROUTE_DOMAIN_NAME;
    }
    route_nexthop_format(out, out->key.queue, sizeof(out->key.queue));
    snprintf(out->key.cache, sizeof(out->key.cache), "%s:%s", tr->name,
             out->key.queue);
    if (tr->per_recipient)
        key_per_recipient(out);
}

int route_resolve(const struct route_table *t, const char *address,
                  struct route_result *out, char *why, size_t whylen)
{
    const struct route_entry *e;
    enum route_type type;
    struct domain d;

    if (address_parse(address, &d, why, whylen) < 0)
        return -1;
    out->address = address;
    if ((e = lookup(t->map, &d)) != NULL) {
        result_fill(t, e->transport, &e->hop, &d, out);
    } else if (t->default_hop.host != NULL) {
        result_fill(t, t->default_transport, &t->default_hop, &d, out);
    } else {
        type = t->transports[t->default_transport].type;
        result_fill(t, t->default_transport,
                    type == ROUTE_SMTP || type == ROUTE_LMTP ? &t->relay : NULL,
                    &d, out);
    }
    return 0;
}
