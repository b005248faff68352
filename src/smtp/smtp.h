#ifndef SLUICE_SMTP_H
#define SLUICE_SMTP_H

/*
 * NAME
 *	smtp 3h - protocol codecs with no I/O: address syntax
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_address_list_parse(const char *text, size_t len,
 *			struct smtp_addr_list *out, char *why, size_t whylen)
 *	int	smtp_address_valid(const char *addr)
 *
 *	void	smtp_addr_list_add(struct smtp_addr_list *l, const char *addr)
 *	void	smtp_addr_list_uniq(struct smtp_addr_list *l)
 *	void	smtp_addr_list_free(struct smtp_addr_list *l)
 * DESCRIPTION
 *	The smtp/ layer turns protocol text into values and back, without
 *	doing any I/O, so that every codec can be tested to the byte. This
 *	header is the layer's whole public face. So far it holds address
 *	syntax (address.c); command and reply parsing, ESMTP keywords,
 *	enhanced status codes and dot-stuffing will join it.
 *
 *	smtp_address_list_parse() reads an RFC 5322 address-list, the body
 *	of a To:, Cc: or Bcc: header field (folded or not), and appends
 *	the addr-spec of every mailbox to out, in order: "local@domain",
 *	with a quoted local part kept quoted. Display names, comments and
 *	group names are dropped; a route address <@a,@b:x@y> gives x@y; a
 *	bare local part (no "@domain") is returned as it is, for the
 *	caller to qualify. On a syntax error it returns -1 with a reason
 *	naming the offending text in why, and out is left as it was.
 *
 *	smtp_address_valid() tells whether addr is acceptable as an
 *	envelope address given on a command line: an RFC 5321 dot-string
 *	or quoted local part of at most 64 octets, optionally followed by
 *	"@" and a domain (dot-separated labels of letters, digits, "-",
 *	"_" or 8-bit bytes, or an address literal in brackets), at most 254
 *	octets in all, no control characters, no space outside quotes. The
 *	empty string (the null sender) is not an address: callers handle
 *	it before asking. It returns 1 or 0.
 *
 *	A struct smtp_addr_list starts zeroed ("= {0}").
 *	smtp_addr_list_add() appends a copy of addr.
 *	smtp_addr_list_uniq() removes every address that equals (byte for
 *	byte) one before it, keeping the order of first appearance.
 *	smtp_addr_list_free() frees the addresses and leaves the list empty
 *	and reusable.
 */

#include <stddef.h>

/* Limits of RFC 5321 section 4.5.3.1. */
#define SMTP_LOCAL_PART_MAX 64
#define SMTP_ADDRESS_MAX    254

struct smtp_addr_list {
    char **addr;  /* addr-specs, in order */
    size_t count; /* how many */
    size_t size;  /* allocated slots */
};

int smtp_address_list_parse(const char *text, size_t len,
                            struct smtp_addr_list *out, char *why,
                            size_t whylen);
int smtp_address_valid(const char *addr);

void smtp_addr_list_add(struct smtp_addr_list *l, const char *addr);
void smtp_addr_list_uniq(struct smtp_addr_list *l);
void smtp_addr_list_free(struct smtp_addr_list *l);

#endif
