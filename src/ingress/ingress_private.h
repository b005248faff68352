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
 *	Memory comes from util/'s allocators, which never return NULL.
 *	ingress_panic() reports a programming error and aborts.
 *
 *	A struct ingress_buf is a growing byte string, zeroed to start,
 *	kept NUL-terminated once anything was added (it may hold NUL bytes
 *	too). ingress_buf_add() appends bytes, ingress_buf_addf() a
 *	printf-formatted string.
 *
 *	ingress_notify_format() writes DSN NOTIFY bits in the one form
 *	maildrop files use: "never", or the words of "success,failure,delay"
 *	that are set, in that order; "" for 0.
 */

#include "util/util.h"

#include <stddef.h>

struct ingress_buf {
    char *s;
    size_t len;
    size_t size;
};

void ingress_buf_add(struct ingress_buf *b, const void *data, size_t len);
void ingress_buf_addf(struct ingress_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

void ingress_notify_format(unsigned bits, char *buf, size_t len);

void ingress_panic(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

#endif
