#ifndef SLUICE_INGRESS_PRIVATE_H
#define SLUICE_INGRESS_PRIVATE_H

/*
 * NAME
 *	ingress_private 3h - what the files of src/ingress/ share
 * SYNOPSIS
 *	#include "ingress/ingress_private.h"
 * DESCRIPTION
 *	Nothing outside src/ingress/ includes this header.
 *
 *	Memory comes from util/'s allocators, which never return NULL;
 *	growing strings are util/'s struct util_buf, whole writes to a
 *	descriptor util_write_all(). ingress_panic() reports a programming
 *	error through util_vpanic() ("sluice: ingress: MESSAGE" on stderr)
 *	and aborts.
 *
 *	ingress_notify_format() writes DSN NOTIFY bits in the one form
 *	maildrop files use: "never", or the words of "success,failure,delay"
 *	that are set, in that order; "" for 0.
 *
 *	ingress_path_join() writes "DIR/NAME" into buf (len bytes), and
 *	panics when it does not fit.
 *
 *	The staging file of a session's large message (staging.c, which
 *	describes each function):
 *
 *	int	staging_dir_prepare(const char *dir, long *removed,
 *			char *why, size_t whylen)
 *	struct staging *staging_create(const char *dir, const char *id,
 *			char *why, size_t whylen)
 *	int	staging_append(struct staging *st, const void *p, size_t n,
 *			char *why, size_t whylen)
 *	uint64_t staging_size(const struct staging *st)
 *	int	staging_head(const struct staging *st, struct util_buf *b,
 *			size_t max, char *why, size_t whylen)
 *	int	staging_insert(struct staging *st, uint64_t at,
 *			const void *p, size_t n, char *why, size_t whylen)
 *	int	staging_read(const struct staging *st, uint64_t from,
 *			staging_read_fn *fn, void *ctx, char *why,
 *			size_t whylen)
 *	void	staging_hand_over(struct staging *st, struct spool_msg *m)
 *	void	staging_discard(struct staging *st)
 *
 *	maildrop_envelope_format() appends to b what a maildrop file holds
 *	before message m's body (maildrop.c); MAILDROP_END_LINE follows
 *	the body. It returns -1, with the reason in why, for a message
 *	that cannot be written (no sender, no recipient, no body).
 */

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>

#define MAILDROP_END_LINE "end\n" /* the last line of a maildrop file */

struct spool_msg;
struct staging;

void ingress_notify_format(unsigned bits, char *buf, size_t len);
void ingress_path_join(char *buf, size_t len, const char *dir,
                       const char *name);
int maildrop_envelope_format(const struct spool_msg *m, struct util_buf *b,
                             char *why, size_t whylen);

int staging_dir_prepare(const char *dir, long *removed, char *why,
                        size_t whylen);
struct staging *staging_create(const char *dir, const char *id, char *why,
                               size_t whylen);
int staging_append(struct staging *st, const void *p, size_t n, char *why,
                   size_t whylen);
uint64_t staging_size(const struct staging *st);
int staging_head(const struct staging *st, struct util_buf *b, size_t max,
                 char *why, size_t whylen);
int staging_insert(struct staging *st, uint64_t at, const void *p, size_t n,
                   char *why, size_t whylen);
typedef void staging_read_fn(void *ctx, const char *p, size_t n);
int staging_read(const struct staging *st, uint64_t from, staging_read_fn *fn,
                 void *ctx, char *why, size_t whylen);
void staging_hand_over(struct staging *st, struct spool_msg *m);
void staging_discard(struct staging *st);

void ingress_panic(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#endif
