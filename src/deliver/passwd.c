/*
 * NAME
 *	passwd 3 - the SMTP client's password table and SASL security options
 * SYNOPSIS
 *	#include "deliver/deliver.h"
 *
 *	struct deliver_passwd *deliver_passwd_load(const char *param,
 *			const char *value, char *why, size_t whylen)
 *	struct deliver_passwd *deliver_passwd_ref(struct deliver_passwd *m)
 *	void	deliver_passwd_free(struct deliver_passwd *m)
 *	int	deliver_passwd_find(const struct deliver_passwd *m,
 *			const char *host, const char *nexthop,
 *			struct deliver_credentials *out)
 *	int	deliver_sasl_options_parse(const char *text, unsigned *out,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	smtp_sasl_password_maps is a text table in the reference's syntax
 *	(read with util/'s table reader: comments, continuation lines, a
 *	hash: or texthash: prefix dropped): a key, white space, then
 *	user:password. The password is everything after the first ":", so
 *	it may hold colons and spaces (the reference splits the value the
 *	same way); a value with no ":" or an empty user name is refused,
 *	as is a duplicate key. Keys are compared without regard to case.
 *	Messages name the file, the line and the key, never the value.
 *
 *	deliver_passwd_load() returns the table named by the value of
 *	param, NULL with why empty when there is none, or NULL with a
 *	message. The table is reference-counted: a delivery keeps the one
 *	it started with across a reload (deliver_passwd_ref()); the last
 *	deliver_passwd_free() wipes the passwords before freeing them.
 *	Once loaded, the values live in one mapping marked MADV_DONTDUMP,
 *	so that a core dump of the daemon does not carry them.
 *
 *	deliver_passwd_find() looks up the credentials for one server as
 *	the reference's smtp_sasl_passwd_lookup() does (decision 77): the
 *	remote host's name first (the MX host, or the name inside the
 *	brackets of [host]:port), then the next hop exactly as the
 *	transport or relayhost writes it ("[relay.example]:587",
 *	"example.com"). No parent-domain matching, no port canonicalizing:
 *	a table written for Postfix finds the same entry. It returns 1
 *	and points out's fields into the table (valid while the caller
 *	holds a reference), or 0.
 *
 *	deliver_sasl_options_parse() reads smtp_sasl_security_options or
 *	smtp_sasl_tls_security_options: a list (commas or spaces) of the
 *	reference's words noplaintext, noactive, nodictionary,
 *	noanonymous and mutual_auth, into DELIVER_SASL_* bits; an unknown
 *	word is an error naming it.
 */

#include "deliver/deliver.h"
#include "util/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

struct passwd_entry {
    struct util_table_key k; /* key lower case; first, for util_table_* */
    char *value;             /* "user\0password": one allocation, wiped */
    size_t value_len;        /* bytes of value, the NUL after it included */
    size_t user_len;
};

struct deliver_passwd {
    int refs;
    struct passwd_entry *entries;
    size_t count, alloc;
    char *secrets; /* every value, out of core dumps; NULL: not packed */
    size_t secrets_len;
};

static int table_line(void *ctx, int line, const char *text, char *why,
                      size_t whylen)
{
    struct deliver_passwd *m = ctx;
    size_t n = strcspn(text, " \t");
    const char *value = text + n + strspn(text + n, " \t");
    const char *colon = strchr(value, ':');
    struct passwd_entry e = {0};

    if (*value == 0) {
        snprintf(why, whylen, "no user:password after \"%.60s\"", text);
        return -1;
    }
    if (colon == NULL || colon == value) {
        snprintf(why, whylen,
                 "the value for \"%.*s\" is not user:password (a user "
                 "name, \":\", the password)",
                 (int)(n > 60 ? 60 : n), text);
        return -1;
    }
    e.k.key = xstrndup(text, n);
    for (char *k = e.k.key; *k; k++)
        *k = (char)tolower((unsigned char)*k);
    e.value_len = strlen(value) + 1;
    e.value = xmalloc(e.value_len);
    memcpy(e.value, value, e.value_len);
    e.user_len = (size_t)(colon - value);
    e.value[e.user_len] = 0;
    e.k.line = line;
    if (m->count == m->alloc) {
        m->alloc = m->alloc ? 2 * m->alloc : 16;
        m->entries = xrealloc(m->entries, m->alloc * sizeof(*m->entries));
    }
    m->entries[m->count++] = e;
    return 0;
}

/*
 * Move every value into one mapping that core dumps leave out
 * (MADV_DONTDUMP): a crash report of the daemon should not carry the
 * passwords. Where the mapping cannot be had, the values stay where
 * they are.
 */
static void secrets_pack(struct deliver_passwd *m)
{
    size_t total = 0, off = 0;
    char *p;

    for (size_t i = 0; i < m->count; i++)
        total += m->entries[i].value_len;
    if (total == 0)
        return;
    p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
             -1, 0);
    if (p == MAP_FAILED)
        return;
    (void)madvise(p, total, MADV_DONTDUMP);
    for (size_t i = 0; i < m->count; i++) {
        struct passwd_entry *e = &m->entries[i];

        memcpy(p + off, e->value, e->value_len);
        explicit_bzero(e->value, e->value_len);
        free(e->value);
        e->value = p + off;
        off += e->value_len;
    }
    m->secrets = p;
    m->secrets_len = total;
}

struct deliver_passwd *deliver_passwd_load(const char *param, const char *value,
                                           char *why, size_t whylen)
{
    struct deliver_passwd *m;
    char *path;

    why[0] = 0;
    if (util_table_path(param, value, &path, why, whylen) < 0 || path == NULL)
        return NULL;
    m = xcalloc(1, sizeof(*m));
    m->refs = 1;
    if (util_table_read(path, table_line, m, why, whylen) < 0) {
        free(path);
        deliver_passwd_free(m);
        return NULL;
    }
    if (util_table_sort(m->entries, m->count, sizeof(*m->entries), path, why,
                        whylen) < 0) {
        free(path);
        deliver_passwd_free(m);
        return NULL;
    }
    free(path);
    secrets_pack(m);
    return m;
}

struct deliver_passwd *deliver_passwd_ref(struct deliver_passwd *m)
{
    if (m)
        m->refs++;
    return m;
}

void deliver_passwd_free(struct deliver_passwd *m)
{
    if (m == NULL || --m->refs > 0)
        return;
    for (size_t i = 0; i < m->count; i++) {
        if (m->secrets == NULL) {
            explicit_bzero(m->entries[i].value, m->entries[i].value_len);
            free(m->entries[i].value);
        }
        free(m->entries[i].k.key);
    }
    if (m->secrets) {
        explicit_bzero(m->secrets, m->secrets_len);
        munmap(m->secrets, m->secrets_len);
    }
    free(m->entries);
    free(m);
}

static const struct passwd_entry *find(const struct deliver_passwd *m,
                                       const char *name)
{
    char key[600];

    if (name == NULL || *name == 0 || strlen(name) >= sizeof(key))
        return NULL;
    for (size_t i = 0; (key[i] = (char)tolower((unsigned char)name[i])); i++)
        ;
    return util_table_find(m->entries, m->count, sizeof(*m->entries), key);
}

int deliver_passwd_find(const struct deliver_passwd *m, const char *host,
                        const char *nexthop, struct deliver_credentials *out)
{
    const struct passwd_entry *e;

    if (m == NULL)
        return 0;
    if ((e = find(m, host)) == NULL && (e = find(m, nexthop)) == NULL)
        return 0;
    out->key = e->k.key;
    out->user = e->value;
    out->pass = e->value + e->user_len + 1;
    return 1;
}

int deliver_sasl_options_parse(const char *text, unsigned *out, char *why,
                               size_t whylen)
{
    static const struct {
        const char *word;
        unsigned bit;
    } words[] = {
        {"noplaintext", DELIVER_SASL_NOPLAINTEXT},
        {"noactive", DELIVER_SASL_NOACTIVE},
        {"nodictionary", DELIVER_SASL_NODICTIONARY},
        {"noanonymous", DELIVER_SASL_NOANONYMOUS},
        {"mutual_auth", DELIVER_SASL_MUTUAL_AUTH},
    };
    const char *sep = ", \t";
    unsigned bits = 0;

    for (const char *p = text + strspn(text, sep); *p; p += strspn(p, sep)) {
        size_t len = strcspn(p, sep), w;

        for (w = 0; w < sizeof(words) / sizeof(words[0]); w++)
            if (len == strlen(words[w].word) &&
                strncasecmp(p, words[w].word, len) == 0)
                break;
        if (w == sizeof(words) / sizeof(words[0])) {
            snprintf(why, whylen,
                     "unknown SASL security option \"%.*s\" (noplaintext, "
                     "noactive, nodictionary, noanonymous, mutual_auth)",
                     (int)(len > 40 ? 40 : len), p);
            return -1;
        }
        bits |= words[w].bit;
        p += len;
    }
    *out = bits;
    return 0;
}
