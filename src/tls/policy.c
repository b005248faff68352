/*
 * NAME
 *	policy 3 - TLS security levels and the TLS policy table
 * SYNOPSIS
 *	#include "tls/tls.h"
 *
 *	int	tls_level_parse(const char *word, enum tls_level *out)
 *	const char *tls_level_name(enum tls_level level)
 *	int	tls_level_enforced(enum tls_level level)
 *	int	tls_policy_parse(const char *text, struct tls_policy *p,
 *			char *why, size_t whylen)
 *	int	tls_protocols_parse(const char *text, int *min, int *max,
 *			char *why, size_t whylen)
 *	const char *tls_cipher_list(const char *grade)
 *	struct tls_policy_map *tls_policy_map_load(const char *param,
 *			const char *value, char *why, size_t whylen)
 *	int	tls_policy_map_find(const struct tls_policy_map *m,
 *			const char *nexthop, struct tls_policy *out)
 *	void	tls_policy_map_free(struct tls_policy_map *m)
 * DESCRIPTION
 *	The words are Postfix's (TLS_README, "TLS security levels"; the
 *	smtp_tls_policy_maps syntax of postconf(5)): a policy is a level,
 *	then name=value attributes separated by white space, and a value
 *	that is a list separates its items with ":" because white space
 *	ends it ("secure match=.example.com:example.com", "encrypt
 *	protocols=!SSLv2:!SSLv3 ciphers=high").
 *
 *	Levels the reference has and sluice does not (fingerprint, and
 *	the obsolete verify-with-peername forms) are refused by name, so
 *	that a table brought from Postfix fails at load with a reason,
 *	not at a delivery. An attribute sluice does not know is refused
 *	too: a policy that asks for something must not be taken as one
 *	that does not.
 *
 *	Protocols are the reference's names SSLv2, SSLv3, TLSv1, TLSv1.1,
 *	TLSv1.2 and TLSv1.3, as a list (commas, spaces or colons): NAME
 *	includes, !NAME excludes, >=NAME and <=NAME bound. The result is
 *	the range between the lowest and the highest protocol left; a
 *	hole in the middle is not kept (OpenSSL bounds a range), and SSLv2
 *	is never offered. A list that leaves nothing is an error.
 *
 *	The cipher grades follow Postfix's tls_high_cipherlist and
 *	tls_medium_cipherlist without the anonymous ciphers a client has
 *	no use for; low and export are medium today (OpenSSL 3 has no
 *	weaker ones to offer), null is the ciphers without encryption.
 *	They bound TLS 1.2 and below; TLS 1.3's suites are all strong.
 *
 *	The table is read with util/'s table reader and kept sorted by
 *	key, for a binary search; keys are lower-cased, and a duplicate
 *	key is an error naming the line of the first.
 */

#include "tls/tls.h"
#include "util/util.h"

#include <ctype.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const level_names[] = {
    [TLS_LEV_NONE] = "none",           [TLS_LEV_MAY] = "may",
    [TLS_LEV_ENCRYPT] = "encrypt",     [TLS_LEV_DANE] = "dane",
    [TLS_LEV_DANE_ONLY] = "dane-only", [TLS_LEV_VERIFY] = "verify",
    [TLS_LEV_SECURE] = "secure",
};

#define NLEVELS (sizeof(level_names) / sizeof(level_names[0]))

int tls_level_parse(const char *word, enum tls_level *out)
{
    for (size_t i = 0; i < NLEVELS; i++)
        if (strcasecmp(word, level_names[i]) == 0) {
            *out = (enum tls_level)i;
            return 0;
        }
    return -1;
}

const char *tls_level_name(enum tls_level level)
{
    return (size_t)level < NLEVELS ? level_names[level] : "none";
}

int tls_level_enforced(enum tls_level level)
{
    return level != TLS_LEV_NONE && level != TLS_LEV_MAY &&
           level != TLS_LEV_DANE;
}

/* The reference's protocol names and OpenSSL's versions. */
static const struct {
    const char *name;
    int version;
} protocols[] = {
    {"SSLv2", 0x0200},           {"SSLv3", SSL3_VERSION},
    {"TLSv1", TLS1_VERSION},     {"TLSv1.1", TLS1_1_VERSION},
    {"TLSv1.2", TLS1_2_VERSION}, {"TLSv1.3", TLS1_3_VERSION},
};

#define NPROTOCOLS (sizeof(protocols) / sizeof(protocols[0]))

static int protocol_index(const char *name, size_t len)
{
    for (size_t i = 0; i < NPROTOCOLS; i++)
        if (strlen(protocols[i].name) == len &&
            strncasecmp(protocols[i].name, name, len) == 0)
            return (int)i;
    return -1;
}

int tls_protocols_parse(const char *text, int *min, int *max, char *why,
                        size_t whylen)
{
    const char *sep = ", \t:";
    unsigned included = 0, excluded = 0;
    int lo = 0, hi = (int)NPROTOCOLS - 1, first = -1, last = -1;

    for (const char *p = text + strspn(text, sep); *p; p += strspn(p, sep)) {
        size_t n = strcspn(p, sep);
        const char *name = p;
        size_t skip = 0;
        int i;

        p += n;
        if (n >= 2 &&
            (strncmp(name, ">=", 2) == 0 || strncmp(name, "<=", 2) == 0))
            skip = 2;
        else if (n >= 1 && name[0] == '!')
            skip = 1;
        if ((i = protocol_index(name + skip, n - skip)) < 0) {
            snprintf(why, whylen, "unknown TLS protocol \"%.*s\"",
                     (int)(n - skip > 40 ? 40 : n - skip), name + skip);
            return -1;
        }
        if (skip == 1)
            excluded |= 1u << i;
        else if (skip == 2 && name[0] == '>')
            lo = i > lo ? i : lo;
        else if (skip == 2)
            hi = i < hi ? i : hi;
        else
            included |= 1u << i;
    }
    excluded |= 1u; /* SSLv2: OpenSSL 3 has none to offer */
    for (int i = lo; i <= hi; i++) {
        if ((excluded & (1u << i)) || (included && !(included & (1u << i))))
            continue;
        if (first < 0)
            first = i;
        last = i;
    }
    if (first < 0) {
        snprintf(why, whylen, "TLS protocols \"%.60s\" leave no protocol",
                 text);
        return -1;
    }
    *min = first == 1 ? 0 : protocols[first].version;
    *max = last == (int)NPROTOCOLS - 1 ? 0 : protocols[last].version;
    return 0;
}

const char *tls_cipher_list(const char *grade)
{
    if (strcasecmp(grade, "high") == 0)
        return "HIGH:!aNULL:@STRENGTH";
    if (strcasecmp(grade, "medium") == 0 || strcasecmp(grade, "low") == 0 ||
        strcasecmp(grade, "export") == 0)
        return "HIGH:MEDIUM:!aNULL:@STRENGTH";
    if (strcasecmp(grade, "null") == 0)
        return "eNULL:!aNULL";
    return NULL;
}

/* value (len bytes) into dst, or an error naming the attribute. */
static int attribute_copy(char *dst, size_t size, const char *name,
                          const char *value, size_t len, char *why,
                          size_t whylen)
{
    if (len == 0 || len >= size) {
        snprintf(why, whylen, "TLS policy attribute %s: %s value", name,
                 len == 0 ? "empty" : "overlong");
        return -1;
    }
    memcpy(dst, value, len);
    dst[len] = 0;
    return 0;
}

static int attribute_parse(const char *text, size_t n, struct tls_policy *p,
                           char *why, size_t whylen)
{
    const char *eq = memchr(text, '=', n);
    size_t nlen = eq ? (size_t)(eq - text) : n;
    const char *value = eq ? eq + 1 : "";
    size_t vlen = eq ? n - nlen - 1 : 0;
    int lo, hi;

    if (eq == NULL) {
        snprintf(why, whylen,
                 "TLS policy attribute \"%.*s\": expected name=value",
                 (int)(n > 40 ? 40 : n), text);
        return -1;
    }
    if (nlen == 5 && strncasecmp(text, "match", 5) == 0)
        return attribute_copy(p->match, sizeof(p->match), "match", value, vlen,
                              why, whylen);
    if (nlen == 9 && strncasecmp(text, "protocols", 9) == 0) {
        if (attribute_copy(p->protocols, sizeof(p->protocols), "protocols",
                           value, vlen, why, whylen) < 0)
            return -1;
        return tls_protocols_parse(p->protocols, &lo, &hi, why, whylen);
    }
    if (nlen == 7 && strncasecmp(text, "ciphers", 7) == 0) {
        if (attribute_copy(p->ciphers, sizeof(p->ciphers), "ciphers", value,
                           vlen, why, whylen) < 0)
            return -1;
        if (tls_cipher_list(p->ciphers) == NULL) {
            snprintf(why, whylen,
                     "TLS policy attribute ciphers: unknown grade \"%s\" "
                     "(expected high, medium, low, export or null)",
                     p->ciphers);
            return -1;
        }
        return 0;
    }
    snprintf(why, whylen,
             "TLS policy attribute \"%.*s\" is not supported (sluice knows "
             "match, protocols and ciphers)",
             (int)(nlen > 40 ? 40 : nlen), text);
    return -1;
}

int tls_policy_parse(const char *text, struct tls_policy *p, char *why,
                     size_t whylen)
{
    const char *sep = " \t";
    const char *s = text + strspn(text, sep);
    size_t n = strcspn(s, sep);
    char word[32];

    memset(p, 0, sizeof(*p));
    snprintf(word, sizeof(word), "%.*s", (int)(n < 31 ? n : 31), s);
    if (n == 0 || n > 31 || tls_level_parse(word, &p->level) < 0) {
        if (strcasecmp(word, "fingerprint") == 0)
            snprintf(why, whylen,
                     "TLS security level fingerprint is not supported");
        else
            snprintf(why, whylen,
                     "unknown TLS security level \"%.*s\" (expected none, "
                     "may, encrypt, dane, dane-only, verify or secure)",
                     (int)(n > 40 ? 40 : n), s);
        return -1;
    }
    for (s += n, s += strspn(s, sep); *s; s += strspn(s, sep)) {
        n = strcspn(s, sep);
        if (attribute_parse(s, n, p, why, whylen) < 0)
            return -1;
        s += n;
    }
    return 0;
}

struct policy_entry {
    struct util_table_key k; /* first, for util_table_* */
    struct tls_policy policy;
};

struct tls_policy_map {
    struct policy_entry *entries;
    size_t count, alloc;
};

static int table_line(void *ctx, int line, const char *text, char *why,
                      size_t whylen)
{
    struct tls_policy_map *m = ctx;
    size_t n = strcspn(text, " \t");
    struct policy_entry e = {0};

    if (text[n] == 0) {
        snprintf(why, whylen, "no policy after \"%.*s\"",
                 (int)(n > 60 ? 60 : n), text);
        return -1;
    }
    if (tls_policy_parse(text + n, &e.policy, why, whylen) < 0)
        return -1;
    e.k.key = xstrndup(text, n);
    for (char *k = e.k.key; *k; k++)
        *k = (char)tolower((unsigned char)*k);
    e.k.line = line;
    if (m->count == m->alloc) {
        m->alloc = m->alloc ? 2 * m->alloc : 16;
        m->entries = xrealloc(m->entries, m->alloc * sizeof(*m->entries));
    }
    m->entries[m->count++] = e;
    return 0;
}

struct tls_policy_map *tls_policy_map_load(const char *param, const char *value,
                                           char *why, size_t whylen)
{
    struct tls_policy_map *m;
    char *path;

    why[0] = 0;
    if (util_table_path(param, value, &path, why, whylen) < 0 || path == NULL)
        return NULL;
    m = xcalloc(1, sizeof(*m));
    if (util_table_read(path, table_line, m, why, whylen) < 0) {
        free(path);
        tls_policy_map_free(m);
        return NULL;
    }
    if (util_table_sort(m->entries, m->count, sizeof(*m->entries), path, why,
                        whylen) < 0) {
        free(path);
        tls_policy_map_free(m);
        return NULL;
    }
    free(path);
    return m;
}

static const struct policy_entry *find(const struct tls_policy_map *m,
                                       const char *key)
{
    return util_table_find(m->entries, m->count, sizeof(*m->entries), key);
}

int tls_policy_map_find(const struct tls_policy_map *m, const char *nexthop,
                        struct tls_policy *out)
{
    const struct policy_entry *e;
    char key[600];

    if (m == NULL)
        return 0;
    snprintf(key, sizeof(key), "%s", nexthop);
    for (char *k = key; *k; k++)
        *k = (char)tolower((unsigned char)*k);
    if ((e = find(m, key)) == NULL && key[0] != '[' && strchr(key, ':') == NULL)
        for (const char *dot = strchr(key, '.'); dot && e == NULL;
             dot = strchr(dot + 1, '.'))
            e = find(m, dot);
    if (e == NULL)
        return 0;
    *out = e->policy;
    return 1;
}

void tls_policy_map_free(struct tls_policy_map *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->count; i++)
        free(m->entries[i].k.key);
    free(m->entries);
    free(m);
}
