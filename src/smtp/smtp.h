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
 *	int	smtp_header_value(const char *text, size_t len,
 *			const char *name, char *out, size_t outlen)
 *	int	smtp_domain_valid(const char *domain)
 *	int	smtp_helo_name_valid(const char *name)
 *
 *	void	smtp_addr_list_add(struct smtp_addr_list *l, const char *addr)
 *	void	smtp_addr_list_uniq(struct smtp_addr_list *l)
 *	void	smtp_addr_list_free(struct smtp_addr_list *l)
 *
 *	void	smtp_reply_init(struct smtp_reply *r)
 *	int	smtp_reply_line(struct smtp_reply *r, const char *line,
 *			size_t len)
 *	void	smtp_reply_free(struct smtp_reply *r)
 *	size_t	smtp_enhanced_code(const char *p, size_t len)
 *	unsigned smtp_ehlo_features(const struct smtp_reply *r,
 *			uint64_t *size_limit)
 *	unsigned smtp_ehlo_auth(const struct smtp_reply *r)
 *	void	smtp_auth_plain(struct util_buf *out, const char *user,
 *			const char *pass)
 *	ssize_t	smtp_auth_challenge(const char *text, unsigned char *out,
 *			size_t outlen)
 *	void	smtp_stuff(struct smtp_stuffer *st, const char *p, size_t len,
 *			smtp_emit_fn *emit, void *ctx)
 *	void	smtp_stuff_end(struct smtp_stuffer *st, smtp_emit_fn *emit,
 *			void *ctx)
 *
 *	int	smtp_date(char *buf, size_t len, time_t t)
 *
 *	int	smtp_mime_downgrade(const char *in, size_t len,
 *			struct util_buf *out)
 *
 *	void	smtp_compose_field(struct util_buf *out, const char *name,
 *			const char *value)
 *	void	smtp_compose_mailbox(struct util_buf *out, const char *name,
 *			const char *display, const char *address)
 *	void	smtp_compose_body(struct util_buf *out,
 *			const struct smtp_compose *c)
 *	int	smtp_compose_type_valid(const char *content_type)
 *	int	smtp_compose_id_valid(const char *content_id)
 *
 *	int	smtp_node_set(struct smtp_node *n, const char *domain,
 *			int subdomains)
 *	int	smtp_node_parse(struct smtp_node *n, const char *text)
 *	void	smtp_node_format(const struct smtp_node *n, char *buf,
 *			size_t len)
 *	int	smtp_node_match(const struct smtp_node *n, const char *name)
 *
 *	int	smtp_command_parse(const char *line, size_t len,
 *			struct smtp_command *cmd, char *why, size_t whylen)
 *	void	smtp_command_free(struct smtp_command *cmd)
 *
 *	int	smtp_utf8_valid(const char *s, size_t len)
 *	int	smtp_ascii(const char *s, size_t len)
 *	int	smtp_header_ascii(const char *msg, size_t len)
 *
 *	void	smtp_data_init(struct smtp_data_reader *r, int mode,
 *			uint64_t limit)
 *	int	smtp_data_feed(struct smtp_data_reader *r, const char *p,
 *			size_t len, size_t *used, smtp_emit_fn *emit, void *ctx)
 *	int	smtp_data_finish(struct smtp_data_reader *r,
 *			smtp_emit_fn *emit, void *ctx)
 *	int	smtp_data_strip_parse(const char *text,
 *			unsigned char set[SMTP_STRIP_SET], char *why,
 *			size_t whylen)
 * DESCRIPTION
 *	The smtp/ layer turns protocol text into values and back, without
 *	doing any I/O, so that every codec can be tested to the byte. This
 *	header is the layer's whole public face: address syntax
 *	(address.c); replies, enhanced status codes, EHLO keywords and
 *	dot-stuffing (reply.c, described there); RFC 5322 dates (date.c,
 *	described there); the commands an SMTP server reads (command.c,
 *	described there); the message content after DATA or in BDAT
 *	chunks, with the smuggling defence (data.c, described there); the
 *	node of an ETRN or a flush, a domain with or without its
 *	subdomains (node.c, described there); 8-bit MIME content made 7-bit
 *	for a server without 8BITMIME (mime.c, described there); a MIME
 *	message built from a text, an HTML text and attachments, with its
 *	header fields encoded and folded (compose.c, described there); the SMTP
 *	AUTH mechanisms an EHLO offers, PLAIN's response and a 334
 *	challenge decoded (auth.c, described there); well-formed UTF-8 and
 *	what needs SMTPUTF8 (utf8.c, described there).
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
 *	smtp_header_value() (header.c) finds the first header field of a
 *	name in a message's text (its start is enough) and gives its
 *	value, unfolded and trimmed: 1, or 0 when there is none.
 *
 *	smtp_domain_valid() applies the same rule to a domain alone (what
 *	follows "@"): labels of letters, digits, "-", "_" or 8-bit bytes,
 *	each 1 to 63 octets, at most 255 in all, or an address literal in
 *	brackets. smtp_helo_name_valid() is stricter, for the name a client
 *	sends in EHLO, HELO or LHLO: a domain in ASCII (labels of letters,
 *	digits, "-" and "_", none starting or ending with "-"), or an
 *	address literal that holds a real address, [192.0.2.1] or
 *	[IPv6:2001:db8::1]. Both return 1 or 0; the empty string is never
 *	valid.
 *
 *	A struct smtp_addr_list starts zeroed ("= {0}").
 *	smtp_addr_list_add() appends a copy of addr.
 *	smtp_addr_list_uniq() removes every address that equals (byte for
 *	byte) one before it, keeping the order of first appearance.
 *	smtp_addr_list_free() frees the addresses and leaves the list empty
 *	and reusable.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

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
int smtp_header_value(const char *text, size_t len, const char *name, char *out,
                      size_t outlen);
int smtp_domain_valid(const char *domain);
int smtp_helo_name_valid(const char *name);

void smtp_addr_list_add(struct smtp_addr_list *l, const char *addr);
void smtp_addr_list_uniq(struct smtp_addr_list *l);
void smtp_addr_list_free(struct smtp_addr_list *l);

#define SMTP_REPLY_MAX_LINES 100
#define SMTP_REPLY_MAX_TEXT  (64 * 1024)

/* A reply being read, or read. */
struct smtp_reply {
    int code;          /* 250, 421, ... */
    char enhanced[16]; /* "2.1.5", or "" */
    char *text;        /* the lines' texts joined by spaces */
    size_t text_len;
    size_t lines;
    size_t nline; /* each line's text, cut to 127 bytes */
    char line[SMTP_REPLY_MAX_LINES][128];
};

/* EHLO keywords. */
#define SMTP_EXT_PIPELINING          0x01u
#define SMTP_EXT_SIZE                0x02u
#define SMTP_EXT_8BITMIME            0x04u
#define SMTP_EXT_STARTTLS            0x08u
#define SMTP_EXT_ENHANCEDSTATUSCODES 0x10u
#define SMTP_EXT_CHUNKING            0x20u
#define SMTP_EXT_DSN                 0x40u
#define SMTP_EXT_SMTPUTF8            0x80u

/* SMTP AUTH (RFC 4954): the keyword, and the mechanisms sluice speaks. */
#define SMTP_AUTH_OFFERED 0x01u
#define SMTP_AUTH_PLAIN   0x02u /* RFC 4616 */
#define SMTP_AUTH_LOGIN   0x04u /* draft-murchison-sasl-login */

typedef void smtp_emit_fn(void *ctx, const char *p, size_t len);

/* Dot-stuffing state across calls; zeroed: at a line start. */
struct smtp_stuffer {
    int mid_line;
    char tail[2];
    uint64_t bytes;
    size_t line_limit; /* break longer lines; 0: none */
    size_t column;     /* characters of the line so far */
    long folded;       /* lines broken */
};

void smtp_reply_init(struct smtp_reply *r);
int smtp_reply_line(struct smtp_reply *r, const char *line, size_t len);
void smtp_reply_free(struct smtp_reply *r);
size_t smtp_enhanced_code(const char *p, size_t len);
unsigned smtp_ehlo_features(const struct smtp_reply *r, uint64_t *size_limit);
unsigned smtp_ehlo_auth(const struct smtp_reply *r);
struct util_buf;
void smtp_auth_plain(struct util_buf *out, const char *user, const char *pass);
ssize_t smtp_auth_challenge(const char *text, unsigned char *out,
                            size_t outlen);
void smtp_stuff(struct smtp_stuffer *st, const char *p, size_t len,
                smtp_emit_fn *emit, void *ctx);
void smtp_stuff_end(struct smtp_stuffer *st, smtp_emit_fn *emit, void *ctx);

struct util_buf;
int smtp_mime_downgrade(const char *in, size_t len, struct util_buf *out);

/* A MIME message from its parts (compose.c). */
#define SMTP_COMPOSE_TYPE_MAX 200 /* bytes of a Content-Type value */
#define SMTP_COMPOSE_ID_MAX   200 /* bytes of a Content-ID, without <> */

struct smtp_attachment {
    const unsigned char *data;
    size_t len;
    const char *content_type; /* smtp_compose_type_valid() */
    const char *file_name;    /* UTF-8, or NULL */
    const char *content_id;   /* without <>; NULL: not inline */
};

struct smtp_compose {
    const char *text; /* text/plain, UTF-8; NULL: none */
    const char *html; /* text/html, UTF-8; NULL: none */
    const struct smtp_attachment *att;
    size_t natt;
    const char *boundary; /* "=_" and a random token */
};

void smtp_compose_field(struct util_buf *out, const char *name,
                        const char *value);
void smtp_compose_mailbox(struct util_buf *out, const char *name,
                          const char *display, const char *address);
void smtp_compose_body(struct util_buf *out, const struct smtp_compose *c);
int smtp_compose_type_valid(const char *content_type);
int smtp_compose_id_valid(const char *content_id);

/* "Sun, 22 Nov 2026 03:30:00 +0100" and its NUL fit in this. */
#define SMTP_DATE_MAX 40

int smtp_date(char *buf, size_t len, time_t t);

/* The node of an ETRN or a flush (node.c). */
#define SMTP_DOMAIN_MAX    255                   /* RFC 5321 4.5.3.1.2 */
#define SMTP_NODE_TEXT_MAX (SMTP_DOMAIN_MAX + 2) /* ".domain" and a NUL */

struct smtp_node {
    char domain[SMTP_DOMAIN_MAX + 1]; /* as written, case kept */
    int subdomains;                   /* its subdomains are in it too */
};

int smtp_node_set(struct smtp_node *n, const char *domain, int subdomains);
int smtp_node_parse(struct smtp_node *n, const char *text);
void smtp_node_format(const struct smtp_node *n, char *buf, size_t len);
int smtp_node_match(const struct smtp_node *n, const char *name);

/* SMTP commands a server reads (command.c). */
enum smtp_verb {
    SMTP_CMD_UNKNOWN,
    SMTP_CMD_EHLO,
    SMTP_CMD_HELO,
    SMTP_CMD_MAIL,
    SMTP_CMD_RCPT,
    SMTP_CMD_DATA,
    SMTP_CMD_BDAT,
    SMTP_CMD_RSET,
    SMTP_CMD_NOOP,
    SMTP_CMD_QUIT,
    SMTP_CMD_VRFY,
    SMTP_CMD_HELP,
    SMTP_CMD_ETRN,
    SMTP_CMD_STARTTLS,
    SMTP_CMD_AUTH,
};

/* What smtp_command_parse() returns when it refuses: the reply code. */
#define SMTP_PARSE_UNKNOWN 500 /* no such command */
#define SMTP_PARSE_SYNTAX  501 /* bad arguments or parameter values */
#define SMTP_PARSE_ADDRESS 501 /* a path's address is not valid */
#define SMTP_PARSE_PARAM   555 /* an unsupported MAIL or RCPT parameter */

/* DSN NOTIFY bits (the spool's SPOOL_NOTIFY_* have the same values). */
#define SMTP_NOTIFY_NEVER   1u
#define SMTP_NOTIFY_SUCCESS 2u
#define SMTP_NOTIFY_FAILURE 4u
#define SMTP_NOTIFY_DELAY   8u

/* DSN RET (the spool's enum spool_ret has the same values). */
#define SMTP_RET_FULL 1
#define SMTP_RET_HDRS 2

/* AUTH: arg is the mechanism, path the initial response as sent (base64
 * or "="), or NULL. */
struct smtp_command {
    enum smtp_verb verb;
    char *arg;       /* EHLO/HELO host, VRFY string, HELP topic, ETRN node */
    char *path;      /* MAIL/RCPT: the address, "" for <> */
    int has_size;    /* MAIL SIZE= given: */
    uint64_t size;   /*   its value */
    int body_8bit;   /* MAIL BODY=8BITMIME */
    int smtputf8;    /* MAIL SMTPUTF8 (RFC 6531 3.4) */
    int ret;         /* MAIL RET=: 0, SMTP_RET_FULL, SMTP_RET_HDRS */
    char *envid;     /* MAIL ENVID=, decoded, or NULL */
    unsigned notify; /* RCPT NOTIFY=: SMTP_NOTIFY_* bits, 0 if not given */
    char *orcpt;     /* RCPT ORCPT=: "type;address" decoded, or NULL */
    uint64_t chunk;  /* BDAT size */
    int last;        /* BDAT LAST */
};

int smtp_command_parse(const char *line, size_t len, struct smtp_command *cmd,
                       char *why, size_t whylen);
void smtp_command_free(struct smtp_command *cmd);

int smtp_utf8_valid(const char *s, size_t len);
int smtp_ascii(const char *s, size_t len);
int smtp_header_ascii(const char *msg, size_t len);

/* Message content as a server reads it (data.c). */
#define SMTP_DATA_DOT 1 /* after DATA: dot-stuffed, ends at CRLF.CRLF */
#define SMTP_DATA_RAW 2 /* BDAT chunks: as it is */

#define SMTP_DATA_MORE    0  /* all taken; more wanted */
#define SMTP_DATA_DONE    1  /* the end of data */
#define SMTP_DATA_BARE_LF -1 /* an LF without CR: refused */
#define SMTP_DATA_BARE_CR -2 /* a CR without LF: refused */

/* What a reader found that makes the message unacceptable (r->nul). */
#define SMTP_DATA_NUL_HEADER 1 /* a NUL in the header section */
#define SMTP_DATA_NUL_BODY   2 /* a NUL in the body, not stripped */

#define SMTP_STRIP_SET 32 /* bytes of a strip set: one bit per byte value */

/* How a reader takes bare line ends (r->newline). */
#define SMTP_NEWLINE_STRICT    0 /* refused where seen: an error */
#define SMTP_NEWLINE_NORMALIZE 1 /* a bare LF ends a line; noted in r->bare */

/* Bare line ends a NORMALIZE reader saw (r->bare). */
#define SMTP_DATA_SAW_BARE_LF 1
#define SMTP_DATA_SAW_BARE_CR 2

struct smtp_data_reader {
    int mode;       /* SMTP_DATA_DOT or SMTP_DATA_RAW */
    int state;      /* where in a line (data.c) */
    uint64_t limit; /* message size limit, 0 = none */
    uint64_t size;  /* content bytes so far, stored form */
    int too_big;    /* size passed limit: nothing more emitted */
    /* bytes dropped from the content (message_strip_characters) */
    unsigned char strip[SMTP_STRIP_SET];
    int body;        /* past the header section (its empty line) */
    size_t line_out; /* bytes emitted of the current line */
    int nul;         /* SMTP_DATA_NUL_*: refused, nothing more emitted */
    int newline;     /* SMTP_NEWLINE_*; STRICT after smtp_data_init() */
    unsigned bare;   /* SMTP_DATA_SAW_* (NORMALIZE) */
    int after_bare;  /* the current line began after a bare LF */
};

void smtp_data_init(struct smtp_data_reader *r, int mode, uint64_t limit);
int smtp_data_feed(struct smtp_data_reader *r, const char *p, size_t len,
                   size_t *used, smtp_emit_fn *emit, void *ctx);
int smtp_data_finish(struct smtp_data_reader *r, smtp_emit_fn *emit, void *ctx);
int smtp_data_strip_parse(const char *text, unsigned char set[SMTP_STRIP_SET],
                          char *why, size_t whylen);

#endif
