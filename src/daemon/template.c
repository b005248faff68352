/*
 * NAME
 *	template 3 - "{{ NAME }}" in the injection API's texts
 * SYNOPSIS
 *	#include "daemon/inject_impl.h"
 *
 *	int	inject_template_has_variables(const char *text)
 *	char	*inject_template_expand(const char *text,
 *			const struct inject_vars *v, int html, char *why,
 *			size_t whylen)
 * DESCRIPTION
 *	A variable is "{{", optional spaces, a NAME of letters, digits,
 *	"_", "-" and ".", optional spaces and "}}"; anything else between
 *	braces is text. This is the part of KumoMTA's templates (MiniJinja)
 *	that a substitution needs, and no more: no filters, no logic.
 *
 *	inject_template_has_variables() tells whether text holds one.
 *	inject_template_expand() returns text (malloc'd) with each replaced
 *	by its value, found as KumoMTA finds it: the recipient's
 *	substitutions, then "email" and "name" (the recipient's own
 *	fields), then the request's substitutions. A variable found
 *	nowhere makes it return NULL with "no substitution for {{ NAME }}"
 *	in why. With html, values are escaped for HTML as MiniJinja's
 *	auto-escaping of an .html template does ("&", "<", ">", quotes
 *	and "/" as entities), so that a value cannot add markup.
 *	Substitution values are strings of one line (the request is
 *	checked for that before), so that a value in a header field can
 *	never start another field.
 */

#include "daemon/inject_impl.h"
#include "util/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_LEN 128

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/*
 * The next "{{ NAME }}" in text from p: its start in *at, its end in
 * *end, its name in name; 0 when there is none.
 */
static int next_variable(const char *p, const char **at, const char **end,
                         char *name, size_t len)
{
    for (; (p = strstr(p, "{{")) != NULL; p += 2) {
        const char *q = p + 2, *n;
        size_t nl;

        while (*q == ' ')
            q++;
        for (n = q; name_char(*q); q++)
            ;
        nl = (size_t)(q - n);
        while (*q == ' ')
            q++;
        if (nl == 0 || nl >= len || q[0] != '}' || q[1] != '}')
            continue;
        memcpy(name, n, nl);
        name[nl] = 0;
        *at = p;
        *end = q + 2;
        return 1;
    }
    return 0;
}

int inject_template_has_variables(const char *text)
{
    const char *at, *end;
    char name[NAME_MAX_LEN];

    return next_variable(text, &at, &end, name, sizeof(name));
}

static const char *lookup(const struct inject_vars *v, const char *name)
{
    const struct util_json *j = util_json_get(v->mine, name);

    if (j != NULL)
        return j->string;
    if (strcmp(name, "email") == 0 && v->email != NULL)
        return v->email;
    if (strcmp(name, "name") == 0 && v->name != NULL)
        return v->name;
    j = util_json_get(v->all, name);
    return j ? j->string : NULL;
}

static void put_html(struct util_buf *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&':
            util_buf_puts(b, "&amp;");
            break;
        case '<':
            util_buf_puts(b, "&lt;");
            break;
        case '>':
            util_buf_puts(b, "&gt;");
            break;
        case '"':
            util_buf_puts(b, "&quot;");
            break;
        case '\'':
            util_buf_puts(b, "&#x27;");
            break;
        case '/':
            util_buf_puts(b, "&#x2f;");
            break;
        default:
            util_buf_add(b, s, 1);
        }
    }
}

char *inject_template_expand(const char *text, const struct inject_vars *v,
                             int html, char *why, size_t whylen)
{
    struct util_buf b = UTIL_BUF_INIT;
    const char *p = text, *at, *end, *value;
    char name[NAME_MAX_LEN];

    while (next_variable(p, &at, &end, name, sizeof(name))) {
        if ((value = lookup(v, name)) == NULL) {
            snprintf(why, whylen, "no substitution for {{ %s }}", name);
            util_buf_free(&b);
            return NULL;
        }
        util_buf_add(&b, p, (size_t)(at - p));
        if (html)
            put_html(&b, value);
        else
            util_buf_puts(&b, value);
        p = end;
    }
    util_buf_puts(&b, p);
    return b.data ? util_buf_take(&b) : xstrdup("");
}
