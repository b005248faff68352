/*
 * NAME
 *	inject_content 3 - the injection API's structured content
 * SYNOPSIS
 *	#include "daemon/inject_impl.h"
 *
 *	struct inject_content *inject_content_create(
 *			const struct util_json *content, char *why,
 *			size_t whylen)
 *	char	*inject_content_build(const struct inject_content *c,
 *			const struct inject_vars *v, const char *boundary,
 *			char *why, size_t whylen)
 *	void	inject_content_free(struct inject_content *c)
 * DESCRIPTION
 *	KumoMTA's injection API takes, instead of an RFC 5322 message, an
 *	object that describes one:
 *
 *	    {"subject": "Hello {{ name }}",
 *	     "text_body": "...", "html_body": "<p>...</p>",
 *	     "from": {"email": "news@example.com", "name": "News"},
 *	     "reply_to": {"email": "help@example.com", "name": "Help"},
 *	     "headers": {"X-Campaign": "{{ campaign }}"},
 *	     "attachments": [{"data": "R0lGOD...", "base64": true,
 *	                      "content_type": "image/gif",
 *	                      "file_name": "pixel.gif",
 *	                      "content_id": "pixel"}]}
 *
 *	inject_content_create() checks one and keeps what every recipient
 *	shares (attachments decoded once): text_body or html_body (one at
 *	least) are strings; subject, header values and names are strings
 *	of one line of at most INJECT_VALUE_MAX bytes, names without
 *	control characters; from and reply_to have an email (an address
 *	with a domain, in ASCII) and an optional name; header names are
 *	RFC 5322 field names, not one of the fields sluice writes itself
 *	(From, Reply-To, To, Subject, MIME-Version, Content-*); attachments
 *	(at most ATTACHMENTS_MAX) have data (UTF-8 text, or base64 with
 *	"base64": true), a content_type (smtp_compose_type_valid()), an
 *	optional file_name and an optional content_id
 *	(smtp_compose_id_valid()). Any other field, or a value of another
 *	type, makes it return NULL with the reason, naming the field.
 *
 *	inject_content_build() makes the message for one recipient: From:
 *	and Reply-To: as given, To: the recipient (with its name), Subject:
 *	and the headers with their variables expanded (template.c), then
 *	the MIME body of smtp_compose_body() with the text's variables
 *	expanded and the HTML's expanded and escaped. Attachments are not
 *	expanded, as in KumoMTA. Date:, Message-ID: and, without from,
 *	From: are added later, as for any submission. It returns the
 *	message (malloc'd), or NULL with why (a missing variable, a value
 *	too long once expanded).
 */

#include "daemon/inject_impl.h"
#include "smtp/smtp.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ATTACHMENTS_MAX 100
#define HEADERS_MAX     100
#define NAME_MAX_BYTES  200 /* a display name or a file name */

struct inject_content {
    const struct util_json *json;
    struct smtp_attachment *att;
    unsigned char **data; /* decoded, per attachment */
    size_t natt;
};

static const char *const content_fields[] = {
    "subject",  "text_body", "html_body",   "from",
    "reply_to", "headers",   "attachments", NULL};

/* One line of printable text (8-bit allowed), at most max bytes. */
static int one_line(const struct util_json *v, size_t max)
{
    if (v->type != UTIL_JSON_STRING || v->length > max)
        return 0;
    for (const char *p = v->string; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}

static int fail(char *why, size_t whylen, const char *fmt, const char *what)
{
    snprintf(why, whylen, fmt, what);
    return -1;
}

/* Only the named fields in object v; -1 naming another. */
static int known(const struct util_json *v, const char *where,
                 const char *const *names, char *why, size_t whylen)
{
    for (size_t i = 0; i < v->count; i++) {
        size_t k = 0;
        char quoted[96];

        while (names[k] && strcmp(names[k], v->names[i]) != 0)
            k++;
        if (names[k] != NULL)
            continue;
        util_quote(quoted, sizeof(quoted), v->names[i], strlen(v->names[i]),
                   UTIL_QUOTE_8BIT);
        snprintf(why, whylen, "unknown field %s in %s", quoted, where);
        return -1;
    }
    return 0;
}

static int address_check(const struct util_json *v, const char *where,
                         char *why, size_t whylen)
{
    static const char *const fields[] = {"email", "name", NULL};
    const struct util_json *email = util_json_get(v, "email");
    const struct util_json *name = util_json_get(v, "name");

    if (v->type != UTIL_JSON_OBJECT)
        return fail(why, whylen, "content: %s must be an object", where);
    if (known(v, where, fields, why, whylen) < 0)
        return -1;
    if (email == NULL || email->type != UTIL_JSON_STRING ||
        !smtp_address_valid(email->string) ||
        strchr(email->string, '@') == NULL ||
        strpbrk(email->string, "\"\\()<>,;: \t") != NULL)
        return fail(why, whylen, "content: %s.email must be an address", where);
    for (const char *p = email->string; *p; p++)
        if ((unsigned char)*p >= 0x80)
            return fail(why, whylen,
                        "content: %s.email must be an address in ASCII", where);
    if (name != NULL && !one_line(name, NAME_MAX_BYTES))
        return fail(why, whylen,
                    "content: %s.name must be a string of one line of at "
                    "most 200 bytes",
                    where);
    return 0;
}

static int header_name_ok(const char *n)
{
    static const char *const ours[] = {"From",
                                       "Reply-To",
                                       "To",
                                       "Subject",
                                       "MIME-Version",
                                       "Content-Type",
                                       "Content-Transfer-Encoding",
                                       "Content-Disposition",
                                       "Content-ID",
                                       NULL};
    size_t len = strlen(n);

    if (len == 0 || len > 76)
        return 0;
    for (const char *p = n; *p; p++)
        if (*p <= ' ' || *p >= 0x7f || *p == ':')
            return 0;
    for (int i = 0; ours[i]; i++)
        if (strcasecmp(n, ours[i]) == 0)
            return 0;
    return 1;
}

static int headers_check(const struct util_json *h, char *why, size_t whylen)
{
    char quoted[96];

    if (h->type != UTIL_JSON_OBJECT || h->count > HEADERS_MAX)
        return fail(why, whylen, "%s",
                    "content: headers must be an object of at most 100 "
                    "fields");
    for (size_t i = 0; i < h->count; i++) {
        util_quote(quoted, sizeof(quoted), h->names[i], strlen(h->names[i]),
                   UTIL_QUOTE_8BIT);
        if (!header_name_ok(h->names[i]))
            return fail(why, whylen,
                        "content: header %s is not a field name sluice "
                        "takes (From, To, Subject, Reply-To, MIME-Version "
                        "and Content-* are set by their fields)",
                        quoted);
        if (!one_line(h->items[i], INJECT_VALUE_MAX))
            return fail(why, whylen,
                        "content: header %s must be a string of one line "
                        "of at most 998 bytes",
                        quoted);
    }
    return 0;
}

static int fields_check(const struct util_json *c, char *why, size_t whylen)
{
    const struct util_json *text = util_json_get(c, "text_body");
    const struct util_json *html = util_json_get(c, "html_body");
    const struct util_json *subject = util_json_get(c, "subject");
    const struct util_json *v;

    if (known(c, "content", content_fields, why, whylen) < 0)
        return -1;
    if ((text == NULL && html == NULL) ||
        (text != NULL && text->type != UTIL_JSON_STRING) ||
        (html != NULL && html->type != UTIL_JSON_STRING))
        return fail(why, whylen, "%s",
                    "content: text_body or html_body (strings) must be "
                    "given");
    if (subject != NULL && !one_line(subject, INJECT_VALUE_MAX))
        return fail(why, whylen, "%s",
                    "content: subject must be a string of one line of at "
                    "most 998 bytes");
    if ((v = util_json_get(c, "from")) != NULL &&
        address_check(v, "from", why, whylen) < 0)
        return -1;
    if ((v = util_json_get(c, "reply_to")) != NULL &&
        address_check(v, "reply_to", why, whylen) < 0)
        return -1;
    if ((v = util_json_get(c, "headers")) != NULL &&
        headers_check(v, why, whylen) < 0)
        return -1;
    return 0;
}

/* Attachment i of array a, checked and decoded into c. */
static int attachment_take(struct inject_content *c, const struct util_json *a,
                           size_t i, char *why, size_t whylen)
{
    static const char *const fields[] = {
        "data", "base64", "content_type", "file_name", "content_id", NULL};
    const struct util_json *data = util_json_get(a, "data");
    const struct util_json *b64 = util_json_get(a, "base64");
    const struct util_json *type = util_json_get(a, "content_type");
    const struct util_json *file = util_json_get(a, "file_name");
    const struct util_json *id = util_json_get(a, "content_id");
    struct smtp_attachment *t = &c->att[i];
    char where[64];
    ssize_t n;

    snprintf(where, sizeof(where), "attachment %zu", i + 1);
    if (a->type != UTIL_JSON_OBJECT)
        return fail(why, whylen, "content: %s must be an object", where);
    if (known(a, where, fields, why, whylen) < 0)
        return -1;
    if (data == NULL || data->type != UTIL_JSON_STRING ||
        (b64 != NULL && b64->type != UTIL_JSON_BOOL))
        return fail(why, whylen,
                    "content: %s: data (a string) is needed, base64 is "
                    "true or false",
                    where);
    if (type == NULL || type->type != UTIL_JSON_STRING ||
        !smtp_compose_type_valid(type->string))
        return fail(why, whylen,
                    "content: %s: content_type must be a MIME type such as "
                    "image/png (not multipart or message)",
                    where);
    if (file != NULL && !one_line(file, NAME_MAX_BYTES))
        return fail(why, whylen,
                    "content: %s: file_name must be a string of one line "
                    "of at most 200 bytes",
                    where);
    if (id != NULL &&
        (id->type != UTIL_JSON_STRING || !smtp_compose_id_valid(id->string)))
        return fail(why, whylen,
                    "content: %s: content_id must be letters, digits and "
                    "RFC 5322 atext, with one \"@\" at most",
                    where);
    c->data[i] = xmalloc(UTIL_BASE64_DECODED_MAX(data->length) + 1);
    if (b64 != NULL && b64->boolean) {
        n = util_base64_decode(c->data[i],
                               UTIL_BASE64_DECODED_MAX(data->length),
                               data->string, data->length, UTIL_BASE64_SPACE);
        if (n < 0)
            return fail(why, whylen, "content: %s: data is not base64", where);
    } else {
        memcpy(c->data[i], data->string, data->length);
        n = (ssize_t)data->length;
    }
    *t = (struct smtp_attachment){c->data[i], (size_t)n, type->string,
                                  file ? file->string : NULL,
                                  id ? id->string : NULL};
    return 0;
}

struct inject_content *inject_content_create(const struct util_json *content,
                                             char *why, size_t whylen)
{
    struct inject_content *c;
    const struct util_json *a;

    if (fields_check(content, why, whylen) < 0)
        return NULL;
    a = util_json_get(content, "attachments");
    if (a != NULL &&
        (a->type != UTIL_JSON_ARRAY || a->count > ATTACHMENTS_MAX)) {
        snprintf(why, whylen,
                 "content: attachments must be an array of at most %d",
                 ATTACHMENTS_MAX);
        return NULL;
    }
    c = xcalloc(1, sizeof(*c));
    c->json = content;
    c->natt = a ? a->count : 0;
    c->att = xcalloc(c->natt + 1, sizeof(*c->att));
    c->data = xcalloc(c->natt + 1, sizeof(*c->data));
    for (size_t i = 0; i < c->natt; i++) {
        if (attachment_take(c, a->items[i], i, why, whylen) < 0) {
            inject_content_free(c);
            return NULL;
        }
    }
    return c;
}

void inject_content_free(struct inject_content *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->natt; i++)
        free(c->data[i]);
    free(c->data);
    free(c->att);
    free(c);
}

/* "Name: value" with value expanded; -1 with why. */
static int field_add(struct util_buf *out, const char *name, const char *value,
                     const struct inject_vars *v, char *why, size_t whylen)
{
    char *x = inject_template_expand(value, v, 0, why, whylen);

    if (x == NULL)
        return -1;
    if (strlen(x) > INJECT_VALUE_MAX) {
        snprintf(why, whylen,
                 "%s is longer than %d bytes once its variables are "
                 "expanded",
                 name, INJECT_VALUE_MAX);
        free(x);
        return -1;
    }
    smtp_compose_field(out, name, x);
    free(x);
    return 0;
}

static int header_fields(struct util_buf *out, const struct util_json *c,
                         const struct inject_vars *v, char *why, size_t whylen)
{
    const struct util_json *from = util_json_get(c, "from");
    const struct util_json *reply = util_json_get(c, "reply_to");
    const struct util_json *subject = util_json_get(c, "subject");
    const struct util_json *h = util_json_get(c, "headers");
    const struct util_json *n;

    if (from != NULL) {
        n = util_json_get(from, "name");
        smtp_compose_mailbox(out, "From", n ? n->string : NULL,
                             util_json_get(from, "email")->string);
    }
    if (reply != NULL) {
        n = util_json_get(reply, "name");
        smtp_compose_mailbox(out, "Reply-To", n ? n->string : NULL,
                             util_json_get(reply, "email")->string);
    }
    smtp_compose_mailbox(out, "To", v->name, v->email);
    if (subject != NULL &&
        field_add(out, "Subject", subject->string, v, why, whylen) < 0)
        return -1;
    for (size_t i = 0; h != NULL && i < h->count; i++)
        if (field_add(out, h->names[i], h->items[i]->string, v, why, whylen) <
            0)
            return -1;
    return 0;
}

char *inject_content_build(const struct inject_content *c,
                           const struct inject_vars *v, const char *boundary,
                           char *why, size_t whylen)
{
    const struct util_json *text = util_json_get(c->json, "text_body");
    const struct util_json *html = util_json_get(c->json, "html_body");
    struct util_buf out = UTIL_BUF_INIT;
    struct smtp_compose mc = {NULL, NULL, c->att, c->natt, boundary};
    char *t = NULL, *h = NULL;

    if (header_fields(&out, c->json, v, why, whylen) < 0 ||
        (text != NULL && (t = inject_template_expand(text->string, v, 0, why,
                                                     whylen)) == NULL) ||
        (html != NULL && (h = inject_template_expand(html->string, v, 1, why,
                                                     whylen)) == NULL)) {
        free(t);
        util_buf_free(&out);
        return NULL;
    }
    mc.text = t;
    mc.html = h;
    smtp_compose_body(&out, &mc);
    free(t);
    free(h);
    return util_buf_take(&out);
}
