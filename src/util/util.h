#ifndef SLUICE_UTIL_H
#define SLUICE_UTIL_H

/*
 * NAME
 *	util 3h - what every layer shares
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_host_name(char *buf, size_t len)
 * DESCRIPTION
 *	util/ sits below every other layer and uses libc only. This header
 *	is its whole public face.
 *
 *	SLUICE_VERSION is the version of every program, in one place.
 *
 *	util_host_name() writes this system's host name into buf, as
 *	Postfix finds the default of myhostname: gethostname(), and when
 *	that name has no dot, the canonical name getaddrinfo() gives for
 *	it, if that one has a dot. It returns 1 when the name written is
 *	fully qualified (has a dot), 0 when it is not (the caller should
 *	warn), and writes "localhost" (returning 0) when the system has no
 *	usable name. The result is computed once per process and then
 *	remembered: the canonical lookup may consult DNS.
 */

#include <stddef.h>

#ifndef SLUICE_VERSION
#define SLUICE_VERSION "0.2.0"
#endif

int util_host_name(char *buf, size_t len);

#endif
