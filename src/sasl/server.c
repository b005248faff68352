/*
 * NAME
 *	server 3 - the SASL server: a back end and its conversations
 * SYNOPSIS
 *	#include "sasl/sasl.h"
 *
 *	struct sasl_server *sasl_server_create(struct event_base *base,
 *			const struct sasl_params *p, char *why, size_t whylen)
 *	void	sasl_server_free(struct sasl_server *s)
 *	const char *sasl_server_type(const struct sasl_server *s)
 *	struct sasl_conv *sasl_conv_start(struct sasl_server *s,
 *			const char *mech, const char *initial,
 *			const struct sasl_client *client,
 *			sasl_reply_fn *fn, void *arg)
 *	void	sasl_conv_step(struct sasl_conv *c, const char *response)
 *	const char *sasl_conv_user(const struct sasl_conv *c)
 *	void	sasl_conv_free(struct sasl_conv *c)
 * DESCRIPTION
 *	sasl_server_create() makes the back end that p->type names
 *	("passwd-file" or "dovecot"; empty is passwd-file) on p->path
 *	(required): the passwd-file is read now, and a bad one is an
 *	error; Dovecot's socket is connected at the first login. With
 *	base NULL nothing runs: the parameters and files are only
 *	checked. sasl_server_free() lets go of the creator's reference;
 *	the back end goes with the last conversation.
 *
 *	sasl_conv_start() begins a conversation in mechanism mech (PLAIN
 *	or LOGIN, any case; NULL for another, which RFC 4954 answers with
 *	504) with the initial response of the AUTH command (base64, "="
 *	for an empty one, NULL for none). sasl_conv_step() gives the
 *	client's answer to a challenge. Either's result comes through fn
 *	from the loop (sasl.h). A response that is not strict base64
 *	(util_base64_decode()) is SASL_BAD at once, without the back end.
 *	sasl_conv_user() is the user name the client gave, once known
 *	("" before; for the failure's log line). sasl_conv_free() ends
 *	the conversation; no answer follows.
 */

#include "sasl/sasl_impl.h"
#include "util/util.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct sasl_backend *const backends[] = {
    &sasl_file_backend,
    &sasl_dovecot_backend,
};

struct sasl_server *sasl_server_create(struct event_base *base,
                                       const struct sasl_params *p, char *why,
                                       size_t whylen)
{
    const char *type = p->type && *p->type ? p->type : "passwd-file";
    const struct sasl_backend *ops = NULL;
    struct sasl_server *s;
    char bwhy[512];
    void *be;

    for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
        if (strcmp(type, backends[i]->name) == 0)
            ops = backends[i];
    if (ops == NULL) {
        snprintf(why, whylen,
                 "smtpd_sasl_type: \"%s\" is not one of passwd-file, dovecot",
                 type);
        return NULL;
    }
    if (p->path == NULL || *p->path == 0) {
        snprintf(why, whylen,
                 "smtpd_sasl_path: empty; smtpd_sasl_type = %s needs %s", type,
                 ops == &sasl_file_backend ? "the passwd-file"
                                           : "Dovecot's auth socket");
        return NULL;
    }
    if ((be = ops->create(base, p, bwhy, sizeof(bwhy))) == NULL) {
        snprintf(why, whylen, "smtpd_sasl_path: %s", bwhy);
        return NULL;
    }
    s = xcalloc(1, sizeof(*s));
    s->ops = ops;
    s->be = be;
    s->base = base;
    s->refs = 1;
    return s;
}

static void server_unref(struct sasl_server *s)
{
    if (--s->refs > 0)
        return;
    s->ops->free(s->be);
    free(s);
}

void sasl_server_free(struct sasl_server *s)
{
    if (s != NULL)
        server_unref(s);
}

const char *sasl_server_type(const struct sasl_server *s)
{
    return s->ops->name;
}

/* ------------------------------------------------------- conversations */

static void deliver_cb(evutil_socket_t fd, short what, void *arg)
{
    struct sasl_conv *c = arg;

    (void)fd;
    (void)what;
    c->fn(c->arg, c->result, c->text);
}

void sasl_conv_reply(struct sasl_conv *c, enum sasl_result r, const char *text)
{
    c->result = r;
    snprintf(c->text, sizeof(c->text), "%s", text ? text : "");
    event_active(c->deliver, EV_TIMEOUT, 1);
}

/* Is text strict base64 (or "=", the empty response)? */
static int base64_ok(const char *text)
{
    size_t n = strlen(text);
    unsigned char *out;
    ssize_t got;

    if (strcmp(text, "=") == 0)
        return 1;
    out = xmalloc(UTIL_BASE64_DECODED_MAX(n) + 1);
    got = util_base64_decode(out, UTIL_BASE64_DECODED_MAX(n) + 1, text, n, 0);
    free(out);
    return got >= 0;
}

struct sasl_conv *sasl_conv_start(struct sasl_server *s, const char *mech,
                                  const char *initial,
                                  const struct sasl_client *client,
                                  sasl_reply_fn *fn, void *arg)
{
    struct sasl_conv *c;

    if (strcasecmp(mech, "PLAIN") != 0 && strcasecmp(mech, "LOGIN") != 0)
        return NULL;
    c = xcalloc(1, sizeof(*c));
    c->s = s;
    s->refs++;
    c->fn = fn;
    c->arg = arg;
    for (size_t i = 0; mech[i]; i++)
        c->mech[i] =
            (char)(mech[i] >= 'a' && mech[i] <= 'z' ? mech[i] - 32 : mech[i]);
    snprintf(c->rip, sizeof(c->rip), "%s", client->rip ? client->rip : "");
    snprintf(c->lip, sizeof(c->lip), "%s", client->lip ? client->lip : "");
    c->secured = client->secured;
    c->deliver = evtimer_new(s->base, deliver_cb, c);
    if (c->deliver == NULL)
        util_panic("sasl: evtimer_new failed");
    if (initial != NULL && !base64_ok(initial))
        sasl_conv_reply(c, SASL_BAD, "Cannot decode response");
    else
        s->ops->start(c, initial);
    return c;
}

void sasl_conv_step(struct sasl_conv *c, const char *response)
{
    c->step++;
    if (!base64_ok(response) || strcmp(response, "=") == 0)
        sasl_conv_reply(c, SASL_BAD, "Cannot decode response");
    else
        c->s->ops->step(c, response);
}

const char *sasl_conv_user(const struct sasl_conv *c)
{
    return c->user;
}

void sasl_conv_free(struct sasl_conv *c)
{
    if (c == NULL)
        return;
    c->s->ops->abort(c);
    event_free(c->deliver);
    server_unref(c->s);
    free(c);
}
