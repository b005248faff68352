#ifndef SLUICE_DKIM_H
#define SLUICE_DKIM_H

/*
 * NAME
 *	dkim 3h - DKIM signing (RFC 6376, RFC 8463) with OpenSSL
 * SYNOPSIS
 *	#include "dkim/dkim.h"
 *
 *	Canonicalization (canon.c):
 *
 *	void	dkim_canon_header(struct util_buf *out, const char *field,
 *			size_t len, int relaxed)
 *	void	dkim_body_init(struct dkim_body *b, int relaxed,
 *			dkim_body_out_fn *out, void *ctx)
 *	void	dkim_body_feed(struct dkim_body *b, const char *p, size_t n)
 *	void	dkim_body_finish(struct dkim_body *b)
 *
 *	The signing and key tables (table.c), and the keys (keys.c):
 *
 *	struct dkim_keys *dkim_keys_load(const char *signing_table,
 *			const char *key_table, const char *canon,
 *			char *why, size_t whylen)
 *	const struct dkim_key *dkim_keys_find(const struct dkim_keys *k,
 *			const char *address)
 *	size_t	dkim_keys_find_all(const struct dkim_keys *k,
 *			const char *address, const struct dkim_key **keys,
 *			size_t max)
 *	void	dkim_keys_multiple_set(struct dkim_keys *k, int on)
 *	void	dkim_keys_free(struct dkim_keys *k)
 *
 *	A message's header section (header.c):
 *
 *	int	dkim_header_split(const char *head, size_t len,
 *			int whole, struct dkim_header *h)
 *	int	dkim_header_from(const struct dkim_header *h, char *addr,
 *			size_t len)
 *	void	dkim_header_free(struct dkim_header *h)
 *
 *	Signing (sign.c):
 *
 *	struct dkim_sign *dkim_sign_begin(const struct dkim_keys *k,
 *			const char *head, size_t len, int whole,
 *			char *why, size_t whylen)
 *	void	dkim_sign_body(struct dkim_sign *s, const char *p, size_t n)
 *	int	dkim_sign_end(struct dkim_sign *s, time_t now,
 *			struct util_buf *field, char *why, size_t whylen)
 *	size_t	dkim_sign_count(const struct dkim_sign *s)
 *	const char *dkim_sign_domain(const struct dkim_sign *s, size_t i)
 *	const char *dkim_sign_selector(const struct dkim_sign *s, size_t i)
 *	void	dkim_sign_free(struct dkim_sign *s)
 *	int	dkim_sign_message(const struct dkim_keys *k, const char *msg,
 *			size_t len, time_t now, struct util_buf *field,
 *			char *note, size_t notelen)
 * DESCRIPTION
 *	Mail that sluice accepts from its own senders is signed once, at
 *	acceptance (ingress/ and the daemon's local paths call this layer;
 *	decision 81), with a DKIM-Signature header field put at the top
 *	of the message. The algorithms are rsa-sha256 (RFC 6376) and
 *	ed25519-sha256 (RFC 8463), on OpenSSL 3 directly (decision 80).
 *
 *	dkim_canon_header() appends field (one header field with its
 *	continuation lines and its CRLF) in the relaxed or simple form of
 *	RFC 6376 3.4.1 and 3.4.2, ending in CRLF. The body canonicalizer
 *	(struct dkim_body) is a stream: dkim_body_feed() takes the body in
 *	pieces of any size and dkim_body_finish() ends it, and the
 *	canonical bytes go to out in pieces, so that a body of any size is
 *	hashed in constant memory (RFC 6376 3.4.3, 3.4.4). Line ends are
 *	CRLF, as in a stored message; a lone CR or LF is an ordinary
 *	character.
 *
 *	dkim_keys_load() reads the SigningTable and the KeyTable in
 *	OpenDKIM's syntax (table.c says exactly what is supported), named
 *	by the values of dkim_signing_table ("refile:" allowed) and
 *	dkim_key_table, and
 *	every key file the KeyTable names (keys.c: PEM, RSA of at least
 *	1024 bits or Ed25519), with canon ("relaxed/relaxed",
 *	"relaxed/simple", "simple/relaxed" or "simple/simple") for every
 *	signature. It returns NULL with a reason that names the file and
 *	the line. dkim_keys_find() gives the key that signs mail from
 *	address (the From: header's), or NULL; dkim_keys_find_all() gives
 *	all of them (at most max), after dkim_keys_multiple_set() turned
 *	OpenDKIM's MultipleSignatures on, else the first alone.
 *
 *	dkim_header_split() finds the header fields of a message's head
 *	(its first bytes, or the whole message when whole is set; the
 *	header section must end within them) and returns their count, or
 *	-1 when the header section does not end there.
 *	dkim_header_from() writes the address of the one From: field,
 *	lowercased, and returns 0, or -1 when there is no From:, more than
 *	one, or no address in it.
 *
 *	dkim_sign_begin() looks at the head of a message (at least its
 *	whole header section; whole: all of the message) and returns a
 *	signing context, or NULL with the reason (no From:, no signing
 *	table entry for its address, the header section too long); the
 *	body bytes the head holds are hashed already. The caller then
 *	gives the rest of the message, after those len bytes, to
 *	dkim_sign_body() in pieces, and
 *	dkim_sign_end() appends the DKIM-Signature field, folded in lines
 *	of at most 78 characters and ending in CRLF, to field.
 *	dkim_sign_message() does all of it for a message in memory: it
 *	returns 1 with the field, 0 with why the message is not signed in
 *	note (no key for it), or -1 with the error in note.
 *
 *	The fields signed are those of RFC 6376 5.4.1's list that the
 *	message has (From, Reply-To, Subject, Date, To, Cc, Resent-*,
 *	In-Reply-To, References, List-*, Message-ID, MIME-Version,
 *	Content-Type, Content-Transfer-Encoding), each as often as it
 *	occurs, and From once more (oversigned: no From: can be added
 *	without breaking the signature).
 */

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Signatures one message gets at most (dkim_multiple_signatures). */
#define DKIM_SIGNATURES_MAX 4

/* The smallest RSA key accepted (RFC 8301 3.2). */
#define DKIM_RSA_BITS_MIN 1024

/* A signing domain and a selector: DNS names. */
#define DKIM_NAME_MAX 253

typedef void dkim_body_out_fn(void *ctx, const char *p, size_t n);

#define DKIM_BODY_PIECE 4096

struct dkim_body {
    int relaxed;
    dkim_body_out_fn *out;
    void *ctx;
    int cr;              /* the last byte was a CR, not yet placed */
    int wsp;             /* relaxed: white space waiting in this line */
    unsigned long crlfs; /* line ends waiting (empty lines at the end) */
    int any;             /* something other than line ends went out */
    size_t n;            /* bytes in piece */
    char piece[DKIM_BODY_PIECE];
};

void dkim_canon_header(struct util_buf *out, const char *field, size_t len,
                       int relaxed);
void dkim_body_init(struct dkim_body *b, int relaxed, dkim_body_out_fn *out,
                    void *ctx);
void dkim_body_feed(struct dkim_body *b, const char *p, size_t n);
void dkim_body_finish(struct dkim_body *b);

/* One header field of a message: its bytes, CRLF and continuations. */
struct dkim_field {
    const char *p;
    size_t len;
    size_t name_len; /* the name, without white space before the colon */
};

struct dkim_header {
    struct dkim_field *f;
    size_t n;
    size_t body; /* offset of the body in the head */
};

int dkim_header_split(const char *head, size_t len, int whole,
                      struct dkim_header *h);
int dkim_header_from(const struct dkim_header *h, char *addr, size_t len);
void dkim_header_free(struct dkim_header *h);

struct dkim_keys;
struct dkim_key;
struct dkim_sign;

struct dkim_keys *dkim_keys_load(const char *signing_table,
                                 const char *key_table, const char *canon,
                                 char *why, size_t whylen);
const struct dkim_key *dkim_keys_find(const struct dkim_keys *k,
                                      const char *address);
size_t dkim_keys_find_all(const struct dkim_keys *k, const char *address,
                          const struct dkim_key **keys, size_t max);
void dkim_keys_multiple_set(struct dkim_keys *k, int on);
void dkim_keys_free(struct dkim_keys *k);

struct dkim_sign *dkim_sign_begin(const struct dkim_keys *k, const char *head,
                                  size_t len, int whole, char *why,
                                  size_t whylen);
void dkim_sign_body(struct dkim_sign *s, const char *p, size_t n);
int dkim_sign_end(struct dkim_sign *s, time_t now, struct util_buf *field,
                  char *why, size_t whylen);
size_t dkim_sign_count(const struct dkim_sign *s);
const char *dkim_sign_domain(const struct dkim_sign *s, size_t i);
const char *dkim_sign_selector(const struct dkim_sign *s, size_t i);
void dkim_sign_free(struct dkim_sign *s);
int dkim_sign_message(const struct dkim_keys *k, const char *msg, size_t len,
                      time_t now, struct util_buf *field, char *note,
                      size_t notelen);

#endif
