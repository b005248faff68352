/*
 * NAME
 *	file 3 - the passwd-file back end: PLAIN and LOGIN against a file
 * SYNOPSIS
 *	#include "sasl/sasl_impl.h"
 *
 *	extern const struct sasl_backend sasl_file_backend
 * DESCRIPTION
 *	smtpd_sasl_type = passwd-file: the users of the file that
 *	smtpd_sasl_path names (passwd.c), read when the server is made
 *	(start and each reload; a bad file makes the server fail, so a
 *	reload keeps the users it had).
 *
 *	The mechanisms, as this back end runs them:
 *
 *	PLAIN	without an initial response, an empty challenge ("334 ");
 *		then the one message (sasl_plain_parse()).
 *	LOGIN	"Username:" then "Password:" (base64, as every client
 *		expects); an initial response is taken as the user name.
 *
 *	A message that does not parse is SASL_FAIL (the client gave bad
 *	credentials, however malformed). A user who is not in the file
 *	is checked against a made-up SHA512-CRYPT hash all the same, so
 *	that the time of the answer does not tell which users exist.
 *	{PLAIN} passwords are compared on the loop (constant time, a
 *	microsecond); hashes go to the worker thread (worker.c,
 *	decision 72). The user name of SASL_DONE is the file's.
 */

#include "sasl/sasl_impl.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOGIN_USER_PROMPT "VXNlcm5hbWU6" /* "Username:" */
#define LOGIN_PASS_PROMPT "UGFzc3dvcmQ6" /* "Password:" */
#define FAIL_REASON       "authentication failure"

struct file_be {
    struct sasl_passwd *users;
    struct sasl_worker *worker; /* NULL when only checking */
};

static void *file_create(struct event_base *base, const struct sasl_params *p,
                         char *why, size_t whylen)
{
    struct file_be *f = xcalloc(1, sizeof(*f));

    if ((f->users = sasl_passwd_load(p->path, why, whylen)) == NULL ||
        (base != NULL &&
         (f->worker = sasl_worker_create(base, why, whylen)) == NULL)) {
        sasl_passwd_free(f->users);
        free(f);
        return NULL;
    }
    return f;
}

static void file_free(void *be)
{
    struct file_be *f = be;

    sasl_worker_free(f->worker);
    sasl_passwd_free(f->users);
    free(f);
}

/* A response decoded: n bytes in out (NUL-terminated); -1 if not. */
static ssize_t decode(const char *b64, unsigned char *out, size_t outlen)
{
    ssize_t n;

    if (strcmp(b64, "=") == 0)
        n = 0;
    else
        n = util_base64_decode(out, outlen - 1, b64, strlen(b64), 0);
    if (n >= 0)
        out[n] = 0;
    return n;
}

static void checked(void *arg, int match)
{
    struct sasl_conv *c = arg;

    c->job = NULL;
    if (match)
        sasl_conv_reply(c, SASL_DONE, c->user);
    else
        sasl_conv_reply(c, SASL_FAIL, FAIL_REASON);
}

static void nobody_checked(void *arg, int match)
{
    (void)match;
    checked(arg, 0);
}

/* user and password are known: are they good? */
static void verify(struct sasl_conv *c, const char *user, const char *password)
{
    struct file_be *f = c->s->be;
    const struct sasl_entry *e = sasl_passwd_find(f->users, user);
    static const struct sasl_entry nobody = {"", SASL_SCHEME_SHA512,
                                             "$6$sluice.nobody$"};

    if (e != NULL || user != c->user) /* LOGIN's is there already */
        snprintf(c->user, sizeof(c->user), "%s", e ? e->user : user);
    if (e != NULL && e->scheme == SASL_SCHEME_PLAIN) {
        checked(c, sasl_entry_verify(e, password));
        return;
    }
    /* an unknown user costs what a known one does: the same answer */
    c->job = sasl_worker_submit(f->worker, e ? e : &nobody, password,
                                e ? checked : nobody_checked, c);
}

static void plain(struct sasl_conv *c, const char *b64)
{
    unsigned char msg[3 * (SASL_FIELD_MAX + 1) + 8];
    char user[SASL_FIELD_MAX + 1], password[SASL_FIELD_MAX + 1], why[128];
    ssize_t n = decode(b64, msg, sizeof(msg));

    if (n < 0 || sasl_plain_parse(msg, (size_t)n, user, password, why,
                                  sizeof(why)) < 0) {
        sasl_conv_reply(c, SASL_FAIL, FAIL_REASON);
        return;
    }
    verify(c, user, password);
    explicit_bzero(password, sizeof(password));
    explicit_bzero(msg, sizeof(msg));
}

/* LOGIN's user name (the first response), or its password. */
static void login(struct sasl_conv *c, const char *b64)
{
    unsigned char msg[SASL_FIELD_MAX + 8];
    char field[SASL_FIELD_MAX + 1], why[128];
    ssize_t n = decode(b64, msg, sizeof(msg));

    if (n < 0 ||
        sasl_login_field(msg, (size_t)n, field, why, sizeof(why)) < 0) {
        sasl_conv_reply(c, SASL_FAIL, FAIL_REASON);
        return;
    }
    if (c->user[0] == 0) {
        snprintf(c->user, sizeof(c->user), "%s", field);
        sasl_conv_reply(c, SASL_MORE, LOGIN_PASS_PROMPT);
        return;
    }
    verify(c, c->user, field);
    explicit_bzero(field, sizeof(field));
}

static void file_start(struct sasl_conv *c, const char *initial)
{
    int is_plain = strcmp(c->mech, "PLAIN") == 0;

    if (initial == NULL)
        sasl_conv_reply(c, SASL_MORE, is_plain ? "" : LOGIN_USER_PROMPT);
    else if (is_plain)
        plain(c, initial);
    else
        login(c, initial);
}

static void file_step(struct sasl_conv *c, const char *response)
{
    if (strcmp(c->mech, "PLAIN") == 0)
        plain(c, response);
    else
        login(c, response);
}

static void file_abort(struct sasl_conv *c)
{
    if (c->job != NULL)
        sasl_job_cancel(c->job);
    c->job = NULL;
}

const struct sasl_backend sasl_file_backend = {
    "passwd-file", file_create, file_free, file_start, file_step, file_abort,
};
