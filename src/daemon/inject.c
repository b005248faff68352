/*
 * NAME
 *	inject 3 - POST /api/inject: messages from a program, over HTTP
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	int	daemon_inject_route(struct ops_http *http,
 *			const struct conf *conf,
 *			const struct daemon_inject_ops *ops,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	daemon_inject_route() adds POST /api/inject to the HTTP listener
 *	when http_token_file names a file in conf (nothing, and 0, when it
 *	is empty). ops gives the daemon's side: conf() the configuration in
 *	force when a request comes (a reload replaces it), store() each
 *	message, which the daemon signs as it does a local submission
 *	(DKIM) and hands to the group commit, calling done once it is
 *	durable or refused. The token file's first line is the bearer
 *	token a request must carry ("Authorization: Bearer TOKEN",
 *	compared in constant time); a
 *	file that cannot be read, or whose token is shorter than 16
 *	bytes, makes it return -1 with the reason.
 *
 *	The request body is one JSON object (util_json_parse(), strict):
 *
 *	    {"envelope_sender": "bounces@example.com",
 *	     "recipients": [{"email": "a@example.net",
 *	                     "substitutions": {"name": "Ann"}}, ...],
 *	     "substitutions": {"campaign": "November"},
 *	     "content": "From: ...\r\nSubject: Hello {{ name }}\r\n\r\n..."}
 *
 *	envelope_sender ("" for the null sender), recipients (1 to
 *	smtpd_recipient_limit, each with email, an optional name and
 *	optional substitutions) and content are required; substitutions
 *	are optional. Any other field, anywhere, is refused. content is
 *	an RFC 5322 message (LF or CRLF), or an object describing one,
 *	KumoMTA's structured content (inject_content.c): then each
 *	recipient gets a MIME message of its own, with its To: field.
 *	"{{ NAME }}" (template.c) is replaced by the recipient's
 *	substitution of that name, its email or name ("email", "name"),
 *	else the request's substitution; one found nowhere is refused;
 *	values are strings of one line. A message given as a string
 *	without any "{{ NAME }}" goes once to every recipient; with them,
 *	one message per recipient. Each message is completed as a local
 *	submission is (Date, Message-ID, From from the envelope sender
 *	when missing) and bounded by message_size_limit.
 *
 *	The answer comes once every message is durable in the spool: 200
 *	with {"queue_ids": [...], "recipients": N}; 400 with {"error":
 *	"REASON"} for a request that is not acceptable (bad JSON with the
 *	byte where, an unknown field, a bad address, a missing variable, a
 *	message too big); 401 without the right token; 503 with the reason
 *	when the spool cannot take them (what was stored stays stored and
 *	is named). Each message is logged as "ID: http=ADDRESS
 *	from=<SENDER>".
 */

#include "conf/conf.h"
#include "daemon/daemon.h"
#include "daemon/inject_impl.h"
#include "ingress/ingress.h"
#include "ops/ops.h"
#include "qmgr/qmgr.h"
#include "smtp/smtp.h"
#include "spool/spool.h"
#include "util/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define TOKEN_MIN 16

struct inject {
    struct daemon_inject_ops ops;
    char token[256];
};

/* One request under way: its messages, and the answer they make. */
struct inject_call {
    struct ops_http_call *call;
    long pending;
    long recipients;
    int failed;
    char why[512];
    struct util_buf ids;
};

static int token_equal(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char d = la != lb;

    for (size_t i = 0; i < la; i++)
        d |= (unsigned char)(a[i] ^ b[i < lb ? i : 0]);
    return d == 0;
}

static void reply_error(struct ops_http_call *c, int status, const char *why)
{
    struct util_buf b = UTIL_BUF_INIT;

    util_buf_puts(&b, "{\"error\": ");
    util_json_string(&b, why);
    util_buf_puts(&b, "}\n");
    ops_http_call_reply(c, status, "application/json", b.data, b.len,
                        status == 401 ? "WWW-Authenticate" : NULL,
                        "Bearer realm=\"sluice\"");
    util_buf_free(&b);
}

/* Only the fields named, in object v; -1 with why naming another. */
static int fields_only(const struct util_json *v, const char *where,
                       const char *const *names, char *why, size_t whylen)
{
    for (size_t i = 0; i < v->count; i++) {
        size_t k = 0;

        while (names[k] && strcmp(names[k], v->names[i]) != 0)
            k++;
        if (names[k] == NULL) {
            char quoted[96];

            util_quote(quoted, sizeof(quoted), v->names[i], strlen(v->names[i]),
                       UTIL_QUOTE_8BIT);
            snprintf(why, whylen, "unknown field %s in %s", quoted, where);
            return -1;
        }
    }
    return 0;
}

/* A substitutions object: string values of one line. */
static int substitutions_check(const struct util_json *v, char *why,
                               size_t whylen)
{
    if (v == NULL)
        return 0;
    if (v->type != UTIL_JSON_OBJECT) {
        snprintf(why, whylen, "substitutions must be an object");
        return -1;
    }
    for (size_t i = 0; i < v->count; i++) {
        const struct util_json *s = v->items[i];

        if (s->type != UTIL_JSON_STRING || strpbrk(s->string, "\r\n")) {
            snprintf(why, whylen,
                     "substitution \"%.64s\" must be a string of one line",
                     v->names[i]);
            return -1;
        }
    }
    return 0;
}

/* A Message-ID token: random, hex. */
static void message_token(char *buf, size_t len)
{
    unsigned char r[8];

    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        memset(r, 0, sizeof(r));
    snprintf(buf, len, "%02x%02x%02x%02x%02x%02x%02x%02x.%lld", r[0], r[1],
             r[2], r[3], r[4], r[5], r[6], r[7], (long long)time(NULL));
}

/* One message: content as stored, for the recipients. NULL with why. */
static struct spool_msg *message_make(const struct conf *conf,
                                      const char *sender, const char *content,
                                      const struct util_json *rcpts,
                                      size_t first, size_t count, char *why,
                                      size_t whylen)
{
    struct submit_input msg = {0};
    struct spool_msg *m;
    char host[256], token[64];
    FILE *fp;
    int rc;

    if ((fp = fmemopen((void *)content, strlen(content), "r")) == NULL) {
        snprintf(why, whylen, "cannot read the content: %s", strerror(errno));
        return NULL;
    }
    rc = submit_read(fp, 0,
                     (uint64_t)conf_int(conf, NULL, CONF_message_size_limit),
                     &msg, why, whylen);
    fclose(fp);
    if (rc != SUBMIT_OK)
        return NULL;
    snprintf(host, sizeof(host), "%s", conf_str(conf, NULL, CONF_myhostname));
    if (host[0] == 0)
        util_host_name(host, sizeof(host));
    message_token(token, sizeof(token));
    if (submit_add_missing_headers(&msg, sender, "", host, time(NULL), token) <
        0) {
        snprintf(why, whylen, "cannot add the missing headers: %s",
                 strerror(errno));
        submit_input_free(&msg);
        return NULL;
    }
    m = spool_msg_new();
    m->sender = xstrdup(sender);
    for (size_t i = first; i < first + count; i++)
        spool_msg_add_rcpt(m, util_json_get(rcpts->items[i], "email")->string,
                           NULL, 0, NULL);
    m->arrival = spool_now();
    m->body = msg.data; /* taken over */
    m->size = msg.len;
    msg.data = NULL;
    submit_input_free(&msg);
    return m;
}

static void call_answer(struct inject_call *ic)
{
    struct util_buf b = UTIL_BUF_INIT;

    if (ic->failed) {
        util_buf_puts(&b, "{\"error\": ");
        util_json_string(&b, ic->why);
        util_buf_printf(&b, ", \"queue_ids\": [%s]}\n",
                        ic->ids.data ? ic->ids.data : "");
        ops_http_call_reply(ic->call, 503, "application/json", b.data, b.len,
                            NULL, NULL);
    } else {
        util_buf_printf(&b, "{\"queue_ids\": [%s], \"recipients\": %ld}\n",
                        ic->ids.data ? ic->ids.data : "", ic->recipients);
        ops_http_call_reply(ic->call, 200, "application/json", b.data, b.len,
                            NULL, NULL);
    }
    util_buf_free(&b);
    util_buf_free(&ic->ids);
    free(ic);
}

static void message_stored(void *ctx, int status, const char *id,
                           const char *why)
{
    struct inject_call *ic = ctx;

    if (status == 0) {
        if (ic->ids.len > 0)
            util_buf_puts(&ic->ids, ", ");
        util_json_string(&ic->ids, id);
    } else if (!ic->failed) {
        ic->failed = 1;
        snprintf(ic->why, sizeof(ic->why), "not stored: %s",
                 why ? why : "unknown error");
    }
    if (--ic->pending == 0)
        call_answer(ic);
}

/* A recipient, checked: the where is "recipient N"; -1 with why. */
static int recipient_check(const struct util_json *r, const char *where,
                           char *why, size_t whylen)
{
    static const char *const fields[] = {"email", "name", "substitutions",
                                         NULL};
    const struct util_json *email = util_json_get(r, "email");
    const struct util_json *name = util_json_get(r, "name");

    if (r->type != UTIL_JSON_OBJECT) {
        snprintf(why, whylen, "%s must be an object", where);
        return -1;
    }
    if (fields_only(r, where, fields, why, whylen) < 0)
        return -1;
    if (email == NULL || email->type != UTIL_JSON_STRING ||
        !smtp_address_valid(email->string) ||
        strchr(email->string, '@') == NULL) {
        snprintf(why, whylen, "%s: email must be an address", where);
        return -1;
    }
    if (name != NULL && (name->type != UTIL_JSON_STRING || name->length > 200 ||
                         strpbrk(name->string, "\r\n\t") != NULL)) {
        snprintf(why, whylen,
                 "%s: name must be a string of one line of at most 200 "
                 "bytes",
                 where);
        return -1;
    }
    return substitutions_check(util_json_get(r, "substitutions"), why, whylen);
}

/* The request, checked; -1 with why. */
static int request_check(const struct conf *conf, const struct util_json *req,
                         char *why, size_t whylen)
{
    static const char *const top[] = {"envelope_sender", "recipients",
                                      "substitutions", "content", NULL};
    const struct util_json *sender = util_json_get(req, "envelope_sender");
    const struct util_json *rcpts = util_json_get(req, "recipients");
    const struct util_json *content = util_json_get(req, "content");
    long limit = conf_int(conf, NULL, CONF_smtpd_recipient_limit);

    if (req->type != UTIL_JSON_OBJECT) {
        snprintf(why, whylen, "the request must be a JSON object");
        return -1;
    }
    if (fields_only(req, "the request", top, why, whylen) < 0 ||
        substitutions_check(util_json_get(req, "substitutions"), why, whylen) <
            0)
        return -1;
    if (sender == NULL || sender->type != UTIL_JSON_STRING ||
        (sender->length > 0 && !smtp_address_valid(sender->string))) {
        snprintf(why, whylen, "envelope_sender must be an address or \"\"");
        return -1;
    }
    if (content == NULL ||
        (content->type != UTIL_JSON_OBJECT &&
         (content->type != UTIL_JSON_STRING || content->length == 0))) {
        snprintf(why, whylen,
                 "content must be a message (a string) or an object");
        return -1;
    }
    if (rcpts == NULL || rcpts->type != UTIL_JSON_ARRAY || rcpts->count == 0 ||
        (long)rcpts->count > limit) {
        snprintf(why, whylen,
                 "recipients must be an array of 1 to %ld recipients", limit);
        return -1;
    }
    for (size_t i = 0; i < rcpts->count; i++) {
        char where[64];

        snprintf(where, sizeof(where), "recipient %zu", i + 1);
        if (recipient_check(rcpts->items[i], where, why, whylen) < 0)
            return -1;
    }
    return 0;
}

/* Recipient i's variables. */
static struct inject_vars vars_of(const struct util_json *req, size_t i)
{
    const struct util_json *r = util_json_get(req, "recipients")->items[i];
    const struct util_json *name = util_json_get(r, "name");

    return (struct inject_vars){
        util_json_get(r, "substitutions"), util_json_get(r, "email")->string,
        name ? name->string : NULL, util_json_get(req, "substitutions")};
}

/* A MIME boundary: "=_" and a random token. */
static void boundary_make(char *buf, size_t len)
{
    unsigned char r[12];

    if (getrandom(r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        memset(r, 0x5a, sizeof(r));
    snprintf(buf, len, "=_sluice_");
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(buf + strlen(buf), len - strlen(buf), "%02x", r[i]);
}

/* Recipient i's text of the request's content (malloc'd); NULL with why. */
static char *text_of(const struct util_json *req,
                     const struct inject_content *built, size_t i, char *why,
                     size_t whylen)
{
    const struct util_json *content = util_json_get(req, "content");
    struct inject_vars v = vars_of(req, i);
    char boundary[64];

    if (built == NULL)
        return inject_template_expand(content->string, &v, 0, why, whylen);
    boundary_make(boundary, sizeof(boundary));
    return inject_content_build(built, &v, boundary, why, whylen);
}

/*
 * The request's messages in msgs (*n of them): one for all recipients
 * when the content is a message without variables, else one each;
 * -1 with why, nothing made.
 */
static int messages_make(const struct conf *conf, const struct util_json *req,
                         struct spool_msg **msgs, size_t *n, char *why,
                         size_t whylen)
{
    const char *sender = util_json_get(req, "envelope_sender")->string;
    const struct util_json *content = util_json_get(req, "content");
    const struct util_json *rcpts = util_json_get(req, "recipients");
    struct inject_content *built = NULL;
    size_t per = rcpts->count;

    if (content->type == UTIL_JSON_OBJECT) {
        if ((built = inject_content_create(content, why, whylen)) == NULL)
            return -1;
        per = 1; /* To: names each recipient, as KumoMTA's builder does */
    } else if (inject_template_has_variables(content->string)) {
        per = 1;
    }
    for (*n = 0; *n * per < rcpts->count; (*n)++) {
        size_t i = *n * per;
        char *text = per == 1 ? text_of(req, built, i, why, whylen)
                              : xstrdup(content->string);

        if (text == NULL ||
            (msgs[*n] = message_make(conf, sender, text, rcpts, i, per, why,
                                     whylen)) == NULL) {
            free(text);
            while (*n > 0)
                spool_msg_free(msgs[--*n]);
            inject_content_free(built);
            return -1;
        }
        free(text);
    }
    inject_content_free(built);
    return 0;
}

static void inject_call(void *ctx, struct ops_http_call *c)
{
    struct inject *in = ctx;
    const struct conf *conf = in->ops.conf(in->ops.ctx);
    const char *auth = ops_http_call_header(c, "Authorization");
    struct util_json *req;
    struct spool_msg **msgs = NULL;
    struct inject_call *ic;
    const char *body;
    char why[512], peer[64], origin[SMTP_ADDRESS_MAX + 96];
    size_t len, n = 0;

    if (auth == NULL || strncmp(auth, "Bearer ", 7) != 0 ||
        !token_equal(auth + 7, in->token)) {
        reply_error(c, 401, "a bearer token is needed (http_token_file)");
        return;
    }
    body = ops_http_call_body(c, &len);
    if ((req = util_json_parse(body, len, why, sizeof(why))) == NULL ||
        request_check(conf, req, why, sizeof(why)) < 0 ||
        (msgs = xcalloc(util_json_get(req, "recipients")->count + 1,
                        sizeof(*msgs)),
         messages_make(conf, req, msgs, &n, why, sizeof(why))) < 0) {
        free(msgs);
        util_json_free(req);
        reply_error(c, 400, why);
        return;
    }
    /* Everything is acceptable: store it all, answer when it is durable. */
    ic = xcalloc(1, sizeof(*ic));
    ic->call = c;
    ic->pending = 1; /* this function's own, until every submit is made */
    ic->recipients = (long)util_json_get(req, "recipients")->count;
    snprintf(origin, sizeof(origin), "http=%s from=<%s>",
             ops_http_call_peer(c, peer, sizeof(peer)),
             util_json_get(req, "envelope_sender")->string);
    for (size_t k = 0; k < n; k++) {
        ic->pending++;
        in->ops.store(in->ops.ctx, msgs[k], origin, message_stored, ic);
    }
    free(msgs);
    util_json_free(req);
    if (--ic->pending == 0)
        call_answer(ic);
}

int daemon_inject_route(struct ops_http *http, const struct conf *conf,
                        const struct daemon_inject_ops *ops, char *why,
                        size_t whylen)
{
    static struct inject in; /* one daemon, one listener */
    const char *path = conf_str(conf, NULL, CONF_http_token_file);
    FILE *fp;
    char line[sizeof(in.token) + 2];
    size_t n;

    if (path[0] == 0)
        return 0;
    if ((fp = fopen(path, "r")) == NULL) {
        snprintf(why, whylen, "http_token_file %s: %s", path, strerror(errno));
        return -1;
    }
    if (fgets(line, sizeof(line), fp) == NULL)
        line[0] = 0;
    fclose(fp);
    n = strcspn(line, "\r\n");
    line[n] = 0;
    if (n < TOKEN_MIN || n >= sizeof(in.token)) {
        snprintf(why, whylen,
                 "http_token_file %s: the first line must be a token of %d "
                 "to %zu bytes",
                 path, TOKEN_MIN, sizeof(in.token) - 1);
        return -1;
    }
    in.ops = *ops;
    memcpy(in.token, line, n + 1);
    explicit_bzero(line, sizeof(line));
    ops_http_route_post(http, "/api/inject", inject_call, &in);
    return 0;
}
