#ifndef SLUICE_DAEMON_INJECT_IMPL_H
#define SLUICE_DAEMON_INJECT_IMPL_H

/*
 * NAME
 *	inject_impl 3h - the injection API's parts, for daemon/ alone
 * SYNOPSIS
 *	#include "daemon/inject_impl.h"
 *
 *	int	inject_template_has_variables(const char *text)
 *	char	*inject_template_expand(const char *text,
 *			const struct inject_vars *v, int html, char *why,
 *			size_t whylen)
 *
 *	struct inject_content *inject_content_create(
 *			const struct util_json *content, char *why,
 *			size_t whylen)
 *	char	*inject_content_build(const struct inject_content *c,
 *			const struct inject_vars *v, const char *boundary,
 *			char *why, size_t whylen)
 *	void	inject_content_free(struct inject_content *c)
 * DESCRIPTION
 *	inject.c is POST /api/inject itself; template.c the "{{ NAME }}"
 *	variables of its texts; inject_content.c its structured content
 *	(subject, text_body, html_body, ...), checked once and built into
 *	a MIME message for each recipient. Each file says more.
 */

#include <stddef.h>

struct util_json;

/* Where a variable's value is looked for, in this order. */
struct inject_vars {
    const struct util_json *mine; /* the recipient's substitutions */
    const char *email;            /* the recipient's, as "email" */
    const char *name;             /* the recipient's, as "name"; or NULL */
    const struct util_json *all;  /* the request's substitutions */
};

/* Bytes of a header field value, template or expanded (RFC 5322 2.1.1). */
#define INJECT_VALUE_MAX 998

int inject_template_has_variables(const char *text);
char *inject_template_expand(const char *text, const struct inject_vars *v,
                             int html, char *why, size_t whylen);

struct inject_content;

struct inject_content *inject_content_create(const struct util_json *content,
                                             char *why, size_t whylen);
char *inject_content_build(const struct inject_content *c,
                           const struct inject_vars *v, const char *boundary,
                           char *why, size_t whylen);
void inject_content_free(struct inject_content *c);

#endif
