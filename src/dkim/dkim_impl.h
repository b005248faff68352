#ifndef SLUICE_DKIM_IMPL_H
#define SLUICE_DKIM_IMPL_H

/*
 * NAME
 *	dkim_impl 3h - what the files of dkim/ share, and its unit tests
 * DESCRIPTION
 *	A key (struct dkim_key) is one KeyTable entry with its private key
 *	loaded; a rule (struct dkim_rule) one SigningTable entry, its key
 *	found. struct dkim_keys holds both tables and the
 *	canonicalization every signature uses.
 */

#include "dkim/dkim.h"

#include <openssl/evp.h>

enum dkim_alg {
    DKIM_RSA_SHA256,
    DKIM_ED25519_SHA256,
};

struct dkim_key {
    char *name;
    char domain[DKIM_NAME_MAX + 1];
    char selector[DKIM_NAME_MAX + 1];
    char *path;
    EVP_PKEY *pkey;
    enum dkim_alg alg;
};

struct dkim_rule {
    char *pattern; /* lowercased */
    struct dkim_key *key;
};

struct dkim_keys {
    struct dkim_key *keys;
    size_t nkeys;
    struct dkim_rule *rules;
    size_t nrules;
    int wildcards;      /* the SigningTable was "refile:" */
    int multiple;       /* every match signs, not the first alone */
    int relaxed_header; /* canonicalization */
    int relaxed_body;
};

EVP_PKEY *dkim_key_read(const char *path, enum dkim_alg *alg, char *why,
                        size_t whylen);
int dkim_pattern_match(const char *pattern, const char *s);

#endif
