/*
 * NAME
 *	policy 3 - an MTA-STS policy: parsing, copying, writing out
 * SYNOPSIS
 *	#include "sts/sts_impl.h"
 *
 *	int	sts_policy_parse(const char *text, size_t len,
 *			struct sts_policy *out, char *why, size_t whylen)
 *	void	sts_policy_copy(struct sts_policy *dst,
 *			const struct sts_policy *src)
 *	void	sts_policy_clear(struct sts_policy *p)
 *	const char *sts_mode_name(enum sts_mode mode)
 *	void	sts_policy_format(struct util_buf *b,
 *			const struct sts_policy *p)
 * DESCRIPTION
 *	RFC 8461 section 3.2: the policy is "a set of key/value pairs",
 *	one per line, "sts-policy-term = LF / CRLF", a key, ":", optional
 *	white space, the value. Required: "version" ("STSv1"), "mode"
 *	("enforce", "testing" or "none"), "max_age" (1 to 10 digits,
 *	"maximum value of 31557600") and "mx" patterns ("one or more",
 *	a domain or "*." and a domain), which a policy of mode none may
 *	leave out. Keys and the required values are case-sensitive, as the
 *	grammar's %s strings are. "Additional key/value pairs" (extension
 *	fields) are ignored, as are blank lines. A policy that gives
 *	version, mode or max_age twice is refused rather than guessed
 *	at, and so is one with a NUL byte or a line without a colon.
 *
 *	sts_policy_format() writes p as a policy file in that syntax (the
 *	cache's record, cache.c), which sts_policy_parse() reads back.
 */

#include "sts/sts_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STS_MX_PATTERNS_MAX 1000 /* mx lines kept, at most */

static const char *const mode_names[] = {"none", "testing", "enforce"};

const char *sts_mode_name(enum sts_mode mode)
{
    return (unsigned)mode <= STS_ENFORCE ? mode_names[mode] : "unknown";
}

void sts_policy_clear(struct sts_policy *p)
{
    for (size_t i = 0; i < p->nmx; i++)
        free(p->mx[i]);
    free(p->mx);
    memset(p, 0, sizeof(*p));
}

void sts_policy_copy(struct sts_policy *dst, const struct sts_policy *src)
{
    *dst = *src;
    dst->mx = xcalloc(src->nmx ? src->nmx : 1, sizeof(*dst->mx));
    for (size_t i = 0; i < src->nmx; i++)
        dst->mx[i] = xstrdup(src->mx[i]);
}

/* One field's value, its key and line number, as the parser sees it. */
struct field {
    const char *key;
    size_t klen;
    const char *val;
    size_t vlen;
    int line;
};

static int is_wsp(char c)
{
    return c == ' ' || c == '\t';
}

static int key_is(const struct field *f, const char *key)
{
    return f->klen == strlen(key) && memcmp(f->key, key, f->klen) == 0;
}

static int val_is(const struct field *f, const char *val)
{
    return f->vlen == strlen(val) && memcmp(f->val, val, f->vlen) == 0;
}

static int max_age_parse(const struct field *f, int64_t *out)
{
    int64_t n = 0;

    if (f->vlen == 0 || f->vlen > 10)
        return -1;
    for (size_t i = 0; i < f->vlen; i++) {
        if (f->val[i] < '0' || f->val[i] > '9')
            return -1;
        n = n * 10 + (f->val[i] - '0');
    }
    if (n > STS_MAX_AGE_MAX)
        return -1;
    *out = n;
    return 0;
}

/* An mx value: a host name, or "*." and one. */
static int mx_valid(const struct field *f)
{
    const char *v = f->val;
    size_t len = f->vlen;

    if (len > 2 && v[0] == '*' && v[1] == '.') {
        v += 2;
        len -= 2;
    }
    if (len > 0 && v[len - 1] == '.')
        len--;
    return sts_name_valid(v, len);
}

/* Apply one field to out: 0, or -1 with why. */
static int field_apply(const struct field *f, struct sts_policy *out,
                       unsigned *seen, char *why, size_t whylen)
{
    static const char *const once[] = {"version", "mode", "max_age"};
    unsigned i;

    for (i = 0; i < 3; i++)
        if (key_is(f, once[i])) {
            if (*seen & (1u << i)) {
                snprintf(why, whylen, "line %d: %s given twice", f->line,
                         once[i]);
                return -1;
            }
            *seen |= 1u << i;
        }
    if (key_is(f, "version") && !val_is(f, "STSv1")) {
        snprintf(why, whylen, "line %d: version is not STSv1", f->line);
        return -1;
    }
    if (key_is(f, "mode")) {
        for (i = 0; i < 3 && !val_is(f, mode_names[i]); i++)
            ;
        if (i == 3) {
            snprintf(why, whylen,
                     "line %d: mode is not enforce, testing or none", f->line);
            return -1;
        }
        out->mode = (enum sts_mode)i;
    }
    if (key_is(f, "max_age") && max_age_parse(f, &out->max_age) < 0) {
        snprintf(why, whylen, "line %d: max_age is not a number of 0 to %d",
                 f->line, STS_MAX_AGE_MAX);
        return -1;
    }
    if (key_is(f, "mx")) {
        if (!mx_valid(f)) {
            snprintf(why, whylen, "line %d: mx is not a host name pattern",
                     f->line);
            return -1;
        }
        if (out->nmx == STS_MX_PATTERNS_MAX) {
            snprintf(why, whylen, "line %d: more than %d mx patterns", f->line,
                     STS_MX_PATTERNS_MAX);
            return -1;
        }
        out->mx = xrealloc(out->mx, (out->nmx + 1) * sizeof(*out->mx));
        out->mx[out->nmx++] = xstrndup(f->val, f->vlen);
    }
    return 0;
}

/* Cut one line of len bytes at p into a field: 0, 1 for a blank line, -1. */
static int field_cut(const char *p, size_t len, struct field *f)
{
    const char *colon, *end;

    while (len > 0 && is_wsp(p[len - 1]))
        len--;
    if (len == 0)
        return 1;
    if ((colon = memchr(p, ':', len)) == NULL || colon == p)
        return -1;
    end = p + len;
    f->key = p;
    f->klen = (size_t)(colon - p);
    for (f->val = colon + 1; f->val < end && is_wsp(*f->val); f->val++)
        ;
    f->vlen = (size_t)(end - f->val);
    return 0;
}

static int lines_parse(const char *text, size_t len, struct sts_policy *out,
                       unsigned *seen, char *why, size_t whylen)
{
    const char *p = text, *end = text + len;
    struct field f;
    int line = 0, rc;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);

        line++;
        if (n > 0 && p[n - 1] == '\r')
            n--;
        f.line = line;
        if ((rc = field_cut(p, n, &f)) < 0) {
            snprintf(why, whylen, "line %d: not a key: value pair", line);
            return -1;
        }
        if (rc == 0 && field_apply(&f, out, seen, why, whylen) < 0)
            return -1;
        p = nl ? nl + 1 : end;
    }
    return 0;
}

int sts_policy_parse(const char *text, size_t len, struct sts_policy *out,
                     char *why, size_t whylen)
{
    unsigned seen = 0;

    memset(out, 0, sizeof(*out));
    if (memchr(text, 0, len) != NULL) {
        snprintf(why, whylen, "a NUL byte in the policy");
        return -1;
    }
    if (lines_parse(text, len, out, &seen, why, whylen) < 0) {
        sts_policy_clear(out);
        return -1;
    }
    if (seen != 7 || (out->nmx == 0 && out->mode != STS_NONE)) {
        snprintf(why, whylen, "no %s",
                 !(seen & 1)   ? "version"
                 : !(seen & 2) ? "mode"
                 : !(seen & 4) ? "max_age"
                               : "mx");
        sts_policy_clear(out);
        return -1;
    }
    return 0;
}

void sts_policy_format(struct util_buf *b, const struct sts_policy *p)
{
    util_buf_printf(b, "version: STSv1\nmode: %s\n", sts_mode_name(p->mode));
    for (size_t i = 0; i < p->nmx; i++)
        util_buf_printf(b, "mx: %s\n", p->mx[i]);
    util_buf_printf(b, "max_age: %lld\n", (long long)p->max_age);
}
