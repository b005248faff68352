/*
 * NAME
 *	passwd 3 - Dovecot's passwd-file: users and their password hashes
 * SYNOPSIS
 *	#include "sasl/sasl.h"
 *
 *	int	sasl_passwd_line(const char *text, struct sasl_entry *e,
 *			char *why, size_t whylen)
 *	struct sasl_passwd *sasl_passwd_load(const char *path, char *why,
 *			size_t whylen)
 *	const struct sasl_entry *sasl_passwd_find(
 *			const struct sasl_passwd *p, const char *user)
 *	size_t	sasl_passwd_count(const struct sasl_passwd *p)
 *	void	sasl_passwd_free(struct sasl_passwd *p)
 *	int	sasl_entry_verify(const struct sasl_entry *e,
 *			const char *password)
 * DESCRIPTION
 *	A passwd-file line is "user:{SCHEME}secret" followed by Dovecot's
 *	optional fields (":uid:gid:gecos:home:shell:extra"), which sluice
 *	ignores. The schemes:
 *
 *	{PLAIN}, {CLEAR}   the password itself
 *	{SHA512-CRYPT}     a crypt(3) hash "$6$..."
 *	{SHA256-CRYPT}     "$5$..."
 *	{BLF-CRYPT}        bcrypt, "$2a$", "$2b$" or "$2y$..."
 *	{CRYPT}            any "$id$..." hash libcrypt knows ("$y$"
 *			   yescrypt too); a secret without a {SCHEME} is
 *			   taken as {CRYPT}, Dovecot's default for this
 *			   file
 *
 *	The hash must be of the scheme's kind, and of a method the
 *	system's libcrypt can compute (asked once per method with
 *	crypt_gensalt_rn()): a file that names a scheme sluice cannot
 *	check is refused when it is read, not found out when a user
 *	logs in.
 *
 *	sasl_passwd_line() parses one line into e; -1 with the reason.
 *	sasl_passwd_load() reads the file at path (util_table_read():
 *	comments, blank lines; its errors, and each bad line's, name the
 *	file and the line; a user given twice is an error) and returns
 *	the users sorted for lookup, or NULL with the reason.
 *	sasl_passwd_find() finds a user, without regard to case as
 *	Dovecot's default auth_username_format (%Lu) does; NULL when
 *	unknown.
 *
 *	sasl_entry_verify() says whether password is the user's (1), in
 *	time that does not tell how much of it was right: {PLAIN} with
 *	sasl_secret_equal(), the crypt schemes by hashing password with
 *	crypt_rn() and comparing the results the same way. A crypt costs
 *	milliseconds (bcrypt at cost 12 about 200 ms): it runs on the
 *	back end's worker thread (worker.c), never on the event loop.
 */

#include "sasl/sasl.h"
#include "util/util.h"

#include <crypt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct line_entry {
    struct sasl_entry e;
    int line;
};

struct sasl_passwd {
    struct line_entry *v;
    size_t n, size;
};

static const struct {
    const char *name;
    enum sasl_scheme scheme;
} schemes[] = {
    {"PLAIN", SASL_SCHEME_PLAIN},         {"CLEAR", SASL_SCHEME_PLAIN},
    {"CRYPT", SASL_SCHEME_CRYPT},         {"SHA512-CRYPT", SASL_SCHEME_SHA512},
    {"SHA256-CRYPT", SASL_SCHEME_SHA256}, {"BLF-CRYPT", SASL_SCHEME_BLF},
};

/* Can libcrypt make hashes of the method "$id$"? Asked once per id. */
static int method_known(const char *prefix)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char known[16][8], unknown[16][8];
    static int nknown, nunknown;
    char out[CRYPT_GENSALT_OUTPUT_SIZE];
    int ok = -1;

    pthread_mutex_lock(&lock);
    for (int i = 0; i < nknown && ok < 0; i++)
        if (strcmp(known[i], prefix) == 0)
            ok = 1;
    for (int i = 0; i < nunknown && ok < 0; i++)
        if (strcmp(unknown[i], prefix) == 0)
            ok = 0;
    if (ok < 0) {
        ok = crypt_gensalt_rn(prefix, 0, NULL, 0, out, sizeof(out)) != NULL;
        if (ok && nknown < 16)
            snprintf(known[nknown++], sizeof(known[0]), "%s", prefix);
        else if (!ok && nunknown < 16)
            snprintf(unknown[nunknown++], sizeof(unknown[0]), "%s", prefix);
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

/* A crypt(3) hash of the scheme's kind that libcrypt can compute. */
static int hash_check(enum sasl_scheme scheme, const char *h, char *why,
                      size_t whylen)
{
    char prefix[8];
    size_t n;

    if (h[0] != '$' || (n = strcspn(h + 1, "$")) == 0 || n > 4 ||
        h[1 + n] != '$') {
        snprintf(why, whylen, "not a crypt(3) hash \"$id$...\"");
        return -1;
    }
    snprintf(prefix, sizeof(prefix), "$%.*s$", (int)n, h + 1);
    if (h[strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                    "0123456789./$=,-")] != 0) {
        snprintf(why, whylen, "a character that no crypt(3) hash has");
        return -1;
    }
    if ((scheme == SASL_SCHEME_SHA512 && strcmp(prefix, "$6$") != 0) ||
        (scheme == SASL_SCHEME_SHA256 && strcmp(prefix, "$5$") != 0) ||
        (scheme == SASL_SCHEME_BLF && strcmp(prefix, "$2a$") != 0 &&
         strcmp(prefix, "$2b$") != 0 && strcmp(prefix, "$2y$") != 0)) {
        snprintf(why, whylen, "a %s hash where the scheme wants another",
                 prefix);
        return -1;
    }
    if (!method_known(prefix)) {
        snprintf(why, whylen, "this system's libcrypt has no %s hashes",
                 prefix);
        return -1;
    }
    return 0;
}

int sasl_passwd_line(const char *text, struct sasl_entry *e, char *why,
                     size_t whylen)
{
    size_t ulen = strcspn(text, ":"), slen;
    const char *secret, *close;

    memset(e, 0, sizeof(*e));
    if (text[ulen] != ':' || ulen == 0 || ulen > SASL_FIELD_MAX) {
        snprintf(why, whylen, "%s",
                 ulen == 0           ? "no user name"
                 : text[ulen] != ':' ? "no password field"
                                     : "user name too long");
        return -1;
    }
    for (size_t i = 0; i < ulen; i++)
        if ((unsigned char)text[i] <= ' ' || text[i] == 0x7f) {
            snprintf(why, whylen,
                     "white space or a control character in "
                     "the user name");
            return -1;
        }
    memcpy(e->user, text, ulen);
    secret = text + ulen + 1;
    e->scheme = SASL_SCHEME_CRYPT;
    if (secret[0] == '{') {
        size_t i, nlen;

        if ((close = strchr(secret, '}')) == NULL ||
            close > secret + strcspn(secret, ":")) {
            snprintf(why, whylen, "no \"}\" after the scheme's name");
            return -1;
        }
        nlen = (size_t)(close - secret - 1);
        for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++)
            if (strlen(schemes[i].name) == nlen &&
                strncasecmp(secret + 1, schemes[i].name, nlen) == 0)
                break;
        if (i == sizeof(schemes) / sizeof(schemes[0])) {
            snprintf(why, whylen,
                     "unknown password scheme {%.*s} (sluice knows PLAIN, "
                     "CLEAR, CRYPT, SHA512-CRYPT, SHA256-CRYPT, BLF-CRYPT)",
                     (int)(nlen > 40 ? 40 : nlen), secret + 1);
            return -1;
        }
        e->scheme = schemes[i].scheme;
        secret = close + 1;
    }
    slen = strcspn(secret, ":");
    if (slen == 0 || slen >= sizeof(e->secret)) {
        snprintf(why, whylen, "%s",
                 slen == 0 ? "empty password" : "password field too long");
        return -1;
    }
    memcpy(e->secret, secret, slen);
    if (e->scheme != SASL_SCHEME_PLAIN &&
        hash_check(e->scheme, e->secret, why, whylen) < 0)
        return -1;
    return 0;
}

static int entry_cmp(const void *a, const void *b)
{
    return strcasecmp(((const struct line_entry *)a)->e.user,
                      ((const struct line_entry *)b)->e.user);
}

static int load_line(void *ctx, int line, const char *text, char *why,
                     size_t whylen)
{
    struct sasl_passwd *p = ctx;

    if (p->n == p->size) {
        p->size = p->size ? 2 * p->size : 16;
        p->v = xrealloc(p->v, p->size * sizeof(*p->v));
    }
    if (sasl_passwd_line(text, &p->v[p->n].e, why, whylen) < 0)
        return -1;
    p->v[p->n++].line = line;
    return 0;
}

struct sasl_passwd *sasl_passwd_load(const char *path, char *why, size_t whylen)
{
    struct sasl_passwd *p = xcalloc(1, sizeof(*p));

    if (util_table_read(path, load_line, p, why, whylen) < 0) {
        sasl_passwd_free(p);
        return NULL;
    }
    if (p->n > 1)
        qsort(p->v, p->n, sizeof(*p->v), entry_cmp);
    for (size_t i = 1; i < p->n; i++)
        if (entry_cmp(&p->v[i - 1], &p->v[i]) == 0) {
            const struct line_entry *x = &p->v[i - 1], *y = &p->v[i];
            const struct line_entry *later = x->line > y->line ? x : y;

            snprintf(why, whylen, "%s, line %d: user \"%s\" is also on line %d",
                     path, later->line, later->e.user,
                     later == x ? y->line : x->line);
            sasl_passwd_free(p);
            return NULL;
        }
    return p;
}

const struct sasl_entry *sasl_passwd_find(const struct sasl_passwd *p,
                                          const char *user)
{
    struct line_entry key;
    const struct line_entry *found;

    if (p == NULL || p->n == 0 || strlen(user) > SASL_FIELD_MAX)
        return NULL;
    snprintf(key.e.user, sizeof(key.e.user), "%s", user);
    found = bsearch(&key, p->v, p->n, sizeof(*p->v), entry_cmp);
    return found ? &found->e : NULL;
}

size_t sasl_passwd_count(const struct sasl_passwd *p)
{
    return p ? p->n : 0;
}

void sasl_passwd_free(struct sasl_passwd *p)
{
    if (p == NULL)
        return;
    free(p->v);
    free(p);
}

int sasl_entry_verify(const struct sasl_entry *e, const char *password)
{
    struct crypt_data *data;
    const char *h;
    int ok;

    if (e->scheme == SASL_SCHEME_PLAIN)
        return sasl_secret_equal(password, e->secret);
    data = xcalloc(1, sizeof(*data)); /* 32 KB: not on a thread's stack */
    h = crypt_rn(password, e->secret, data, (int)sizeof(*data));
    ok = h != NULL && h[0] != '*' && sasl_secret_equal(h, e->secret);
    free(data);
    return ok;
}
