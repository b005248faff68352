/*
 * NAME
 *	node 3 - the node of an ETRN or a flush: a domain, with or without
 *	its subdomains
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_node_set(struct smtp_node *n, const char *domain,
 *			int subdomains)
 *	int	smtp_node_parse(struct smtp_node *n, const char *text)
 *	void	smtp_node_format(const struct smtp_node *n, char *buf,
 *			size_t len)
 *	int	smtp_node_match(const struct smtp_node *n, const char *name)
 * DESCRIPTION
 *	A node names the mail that ETRN (RFC 1985) or "sluice flush" asks
 *	for: the mail for one domain, or for a domain and all its
 *	subdomains. ETRN writes the second "@example.com", a flush request
 *	".example.com"; both become the same value here, so nothing after
 *	the parser depends on either spelling.
 *
 *	smtp_node_set() makes n the node of domain (smtp_domain_valid():
 *	labels, or an address literal), with its subdomains when subdomains
 *	is non-zero. smtp_node_parse() reads the written form, "domain" or
 *	".domain". Both return 0, or -1 when the domain is not valid, and
 *	then leave n empty (an empty domain, no subdomains).
 *
 *	smtp_node_format() writes the node back in its written form into
 *	buf (len bytes, SMTP_NODE_TEXT_MAX always enough), cut to fit and
 *	ending in a NUL.
 *
 *	smtp_node_match() tells whether name, a domain or an address (the
 *	domain is what follows its last "@"), falls in the node: the same
 *	domain ignoring ASCII case, or, with subdomains, one whose name ends
 *	in "." and the domain. It returns 1 or 0.
 */

#include "smtp/smtp.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

int smtp_node_set(struct smtp_node *n, const char *domain, int subdomains)
{
    size_t len = strlen(domain);

    n->domain[0] = 0;
    n->subdomains = 0;
    if (len >= sizeof(n->domain) || !smtp_domain_valid(domain))
        return -1;
    memcpy(n->domain, domain, len + 1);
    n->subdomains = subdomains != 0;
    return 0;
}

int smtp_node_parse(struct smtp_node *n, const char *text)
{
    int subdomains = text[0] == '.';

    return smtp_node_set(n, text + subdomains, subdomains);
}

void smtp_node_format(const struct smtp_node *n, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", n->subdomains ? "." : "", n->domain);
}

int smtp_node_match(const struct smtp_node *n, const char *name)
{
    const char *at = strrchr(name, '@');
    const char *d = at ? at + 1 : name;
    size_t dlen = strlen(d), len = strlen(n->domain);

    if (strcasecmp(d, n->domain) == 0)
        return 1;
    return n->subdomains && dlen > len && d[dlen - len - 1] == '.' &&
           strcasecmp(d + dlen - len, n->domain) == 0;
}
