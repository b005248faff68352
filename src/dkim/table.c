/*
 * NAME
 *	table 3 - OpenDKIM's SigningTable and KeyTable
 * SYNOPSIS
 *	#include "dkim/dkim.h"
 *
 *	struct dkim_keys *dkim_keys_load(const char *signing_table,
 *			const char *key_table, const char *canon,
 *			char *why, size_t whylen)
 *	const struct dkim_key *dkim_keys_find(const struct dkim_keys *k,
 *			const char *address)
 *	size_t	dkim_keys_find_all(const struct dkim_keys *k,
 *			const char *address, const struct dkim_key **keys,
 *			size_t max)
 *	void	dkim_keys_multiple_set(struct dkim_keys *k, int on)
 *	void	dkim_keys_free(struct dkim_keys *k)
 *
 *	#include "dkim/dkim_impl.h"
 *
 *	int	dkim_pattern_match(const char *pattern, const char *s)
 * DESCRIPTION
 *	An operator who signed with OpenDKIM keeps its two tables; sluice
 *	reads them as OpenDKIM does, in this subset:
 *
 *	The KeyTable (dkim_key_table: a file, "hash:" or "texthash:" in
 *	front allowed and meaning the same text file) has lines
 *
 *	    KEYNAME  DOMAIN:SELECTOR:/PATH/TO/KEY.pem
 *
 *	KEYNAME any word, DOMAIN the signing domain (d=), SELECTOR the
 *	selector (s=), both DNS names, and the absolute path of the
 *	private key (keys.c). OpenDKIM's other forms (a key inline instead
 *	of a path, "%" for the From: domain) are refused, with the line.
 *
 *	The SigningTable (dkim_signing_table) has lines
 *
 *	    PATTERN  KEYNAME
 *
 *	As a plain file its PATTERNs are keys looked up as OpenDKIM looks
 *	up a plain table: the whole From: address ("user@example.com")
 *	first, then its domain ("example.com"). With "refile:" in front
 *	of the file name each PATTERN is a pattern in which "*" matches
 *	any run of characters ("*@example.com", "*@*.example.com",
 *	"user@*"), compared with the whole address, the lines tried in
 *	order and the first match taken, as OpenDKIM's refile: does. Both
 *	forms compare without case. KEYNAME must be in the KeyTable. With
 *	dkim_multiple_signatures (OpenDKIM's MultipleSignatures) every
 *	match signs, in that order, each key once, at most
 *	DKIM_SIGNATURES_MAX: a domain with an RSA and an Ed25519 key has
 *	two lines for it.
 *
 *	Both files are read with util/table.c's reader: "#" comments,
 *	blank lines ignored, a line that starts with white space
 *	continues the one before it. A line with a field missing or too
 *	many, a bad domain or selector, a duplicate key name, a key that
 *	cannot be loaded or a key name unknown is refused with the file
 *	and line ("/etc/dkim/KeyTable, line 3: ...").
 *
 *	canon is dkim_canonicalization: "relaxed/relaxed" (the default),
 *	"relaxed/simple", "simple/relaxed" or "simple/simple" (header/body).
 *
 *	dkim_keys_load() returns the tables, or NULL with the reason.
 *	dkim_keys_find() returns the key for address (lowercase), or NULL;
 *	dkim_keys_find_all() writes the keys for it (the first alone unless
 *	dkim_keys_multiple_set() turned multiple signatures on), at most
 *	max, and returns their number.
 *	dkim_pattern_match() says whether s matches pattern ("*" any run).
 */

#include "dkim/dkim_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DKIM_TABLE_MAX 100000 /* entries of one table: beyond any real one */

/* ------------------------------------------------------------ patterns */

int dkim_pattern_match(const char *pattern, const char *s)
{
    const char *star = NULL, *resume = NULL;

    /* Greedy with one backtrack point: linear-ish, never exponential. */
    while (*s) {
        if (*pattern == '*') {
            star = pattern++;
            resume = s;
        } else if (*pattern == *s) {
            pattern++;
            s++;
        } else if (star != NULL) {
            pattern = star + 1;
            s = ++resume;
        } else {
            return 0;
        }
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == 0;
}

/* ---------------------------------------------------------------- lines */

/* The line's two fields; -1 with the reason when it has not two. */
static int two_fields(char *line, char **a, char **b, char *why, size_t whylen)
{
    char *extra;

    *a = strtok_r(line, " \t", &extra);
    *b = strtok_r(NULL, " \t", &extra);
    if (*a == NULL || *b == NULL || strtok_r(NULL, " \t", &extra) != NULL) {
        snprintf(why, whylen, "expected two fields, NAME and VALUE");
        return -1;
    }
    return 0;
}

static void lower(char *s)
{
    for (; *s; s++)
        *s = (char)tolower((unsigned char)*s);
}

/* A domain or a selector: labels of letters, digits, "-" and "_". */
static int dns_name_valid(const char *s)
{
    size_t label = 0, n = strlen(s);

    if (n == 0 || n > DKIM_NAME_MAX || s[0] == '.' || s[n - 1] == '.')
        return 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (label == 0)
                return 0;
            label = 0;
        } else if (isalnum((unsigned char)*s) || *s == '-' || *s == '_') {
            if (++label > 63)
                return 0;
        } else {
            return 0;
        }
    }
    return 1;
}

static struct dkim_key *key_named(const struct dkim_keys *k, const char *name)
{
    for (size_t i = 0; i < k->nkeys; i++)
        if (strcmp(k->keys[i].name, name) == 0)
            return &k->keys[i];
    return NULL;
}

/* "KEYNAME DOMAIN:SELECTOR:PATH" */
static int key_line(void *ctx, int line, const char *text, char *why,
                    size_t whylen)
{
    struct dkim_keys *k = ctx;
    char *copy = xstrdup(text), *name, *value, *sel, *path;
    struct dkim_key *key;
    int rc = -1;

    (void)line;
    if (two_fields(copy, &name, &value, why, whylen) < 0)
        goto out;
    if (k->nkeys >= DKIM_TABLE_MAX) {
        snprintf(why, whylen, "more than %d entries", DKIM_TABLE_MAX);
        goto out;
    }
    if (key_named(k, name) != NULL) {
        snprintf(why, whylen, "key name %s is there twice", name);
        goto out;
    }
    if ((sel = strchr(value, ':')) == NULL ||
        (path = strchr(sel + 1, ':')) == NULL) {
        snprintf(why, whylen, "expected DOMAIN:SELECTOR:/PATH after %s", name);
        goto out;
    }
    *sel++ = 0;
    *path++ = 0;
    lower(value);
    if (!dns_name_valid(value) || !dns_name_valid(sel)) {
        snprintf(why, whylen, "bad %s \"%s\"",
                 dns_name_valid(value) ? "selector" : "signing domain",
                 dns_name_valid(value) ? sel : value);
        goto out;
    }
    if (path[0] != '/') {
        snprintf(why, whylen,
                 "the key must be the absolute path of a PEM file, not "
                 "\"%.64s\"",
                 path);
        goto out;
    }
    k->keys = xrealloc(k->keys, (k->nkeys + 1) * sizeof(*k->keys));
    key = &k->keys[k->nkeys];
    memset(key, 0, sizeof(*key));
    if ((key->pkey = dkim_key_read(path, &key->alg, why, whylen)) == NULL)
        goto out;
    key->name = xstrdup(name);
    snprintf(key->domain, sizeof(key->domain), "%s", value);
    snprintf(key->selector, sizeof(key->selector), "%s", sel);
    key->path = xstrdup(path);
    k->nkeys++;
    rc = 0;
out:
    free(copy);
    return rc;
}

/* "PATTERN KEYNAME" */
static int signing_line(void *ctx, int line, const char *text, char *why,
                        size_t whylen)
{
    struct dkim_keys *k = ctx;
    char *copy = xstrdup(text), *pattern, *name;
    struct dkim_key *key;
    int rc = -1;

    (void)line;
    if (two_fields(copy, &pattern, &name, why, whylen) < 0)
        goto out;
    if (k->nrules >= DKIM_TABLE_MAX) {
        snprintf(why, whylen, "more than %d entries", DKIM_TABLE_MAX);
        goto out;
    }
    if ((key = key_named(k, name)) == NULL) {
        snprintf(why, whylen, "key name %s is not in the KeyTable", name);
        goto out;
    }
    lower(pattern);
    k->rules = xrealloc(k->rules, (k->nrules + 1) * sizeof(*k->rules));
    k->rules[k->nrules].pattern = xstrdup(pattern);
    k->rules[k->nrules].key = key;
    k->nrules++;
    rc = 0;
out:
    free(copy);
    return rc;
}

/* --------------------------------------------------------------- tables */

static int canon_parse(struct dkim_keys *k, const char *canon, char *why,
                       size_t whylen)
{
    static const char *const forms[] = {"simple/simple", "simple/relaxed",
                                        "relaxed/simple", "relaxed/relaxed"};

    for (int i = 0; i < 4; i++)
        if (strcmp(canon, forms[i]) == 0) {
            k->relaxed_header = i >= 2;
            k->relaxed_body = i % 2;
            return 0;
        }
    snprintf(why, whylen, "dkim_canonicalization: unknown value \"%.64s\"",
             canon);
    return -1;
}

static int read_keys(struct dkim_keys *k, const char *key_table, char *why,
                     size_t whylen)
{
    char *path;
    int rc;

    if (util_table_path("dkim_key_table", key_table, &path, why, whylen) < 0)
        return -1;
    if (path == NULL) {
        snprintf(why, whylen, "dkim_signing_table is set, dkim_key_table not");
        return -1;
    }
    rc = util_table_read(path, key_line, k, why, whylen);
    free(path);
    return rc;
}

static int read_rules(struct dkim_keys *k, const char *signing_table, char *why,
                      size_t whylen)
{
    char *path;
    int rc;

    if (strncmp(signing_table, "refile:", 7) == 0) {
        k->wildcards = 1;
        signing_table += 7;
    }
    if (util_table_path("dkim_signing_table", signing_table, &path, why,
                        whylen) < 0)
        return -1;
    if (path == NULL) {
        snprintf(why, whylen, "dkim_signing_table: no file named");
        return -1;
    }
    rc = util_table_read(path, signing_line, k, why, whylen);
    free(path);
    return rc;
}

struct dkim_keys *dkim_keys_load(const char *signing_table,
                                 const char *key_table, const char *canon,
                                 char *why, size_t whylen)
{
    struct dkim_keys *k = xcalloc(1, sizeof(*k));

    if (canon_parse(k, canon, why, whylen) < 0 ||
        read_keys(k, key_table, why, whylen) < 0 ||
        read_rules(k, signing_table, why, whylen) < 0) {
        dkim_keys_free(k);
        return NULL;
    }
    return k;
}

void dkim_keys_multiple_set(struct dkim_keys *k, int on)
{
    k->multiple = on;
}

/* Add key to keys[*n] unless it is there or there is no room. */
static void key_add(const struct dkim_key **keys, size_t *n, size_t max,
                    const struct dkim_key *key)
{
    for (size_t i = 0; i < *n; i++)
        if (keys[i] == key)
            return;
    if (*n < max)
        keys[(*n)++] = key;
}

size_t dkim_keys_find_all(const struct dkim_keys *k, const char *address,
                          const struct dkim_key **keys, size_t max)
{
    const char *domain = strrchr(address, '@');
    size_t n = 0;

    if (!k->multiple && max > 1)
        max = 1;
    for (size_t i = 0; k->wildcards && i < k->nrules; i++)
        if (dkim_pattern_match(k->rules[i].pattern, address))
            key_add(keys, &n, max, k->rules[i].key);
    for (size_t i = 0; !k->wildcards && i < k->nrules; i++)
        if (strcmp(k->rules[i].pattern, address) == 0)
            key_add(keys, &n, max, k->rules[i].key);
    for (size_t i = 0; !k->wildcards && domain && i < k->nrules; i++)
        if (strcmp(k->rules[i].pattern, domain + 1) == 0)
            key_add(keys, &n, max, k->rules[i].key);
    return n;
}

const struct dkim_key *dkim_keys_find(const struct dkim_keys *k,
                                      const char *address)
{
    const struct dkim_key *key;

    return dkim_keys_find_all(k, address, &key, 1) ? key : NULL;
}

void dkim_keys_free(struct dkim_keys *k)
{
    if (k == NULL)
        return;
    for (size_t i = 0; i < k->nkeys; i++) {
        EVP_PKEY_free(k->keys[i].pkey);
        free(k->keys[i].name);
        free(k->keys[i].path);
    }
    for (size_t i = 0; i < k->nrules; i++)
        free(k->rules[i].pattern);
    free(k->keys);
    free(k->rules);
    free(k);
}
