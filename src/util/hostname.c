/*
 * NAME
 *	hostname 3 - this system's host name, as myhostname's default
 * SYNOPSIS
 *	#include "util/util.h"
 *
 *	int	util_host_name(char *buf, size_t len)
 * DESCRIPTION
 *	See util.h. The name comes from gethostname(); when it has no dot,
 *	getaddrinfo() with AI_CANONNAME is asked for the canonical name
 *	(from /etc/hosts or DNS, as the system's resolver is set up), and
 *	that is used when it has a dot. A name that is empty, longer than
 *	a domain may be, or has bytes no host name has, is not used: the
 *	result is then "localhost", so that what goes into EHLO is never
 *	empty or junk.
 *
 *	The answer is remembered in a static buffer after the first call
 *	(a process asks at start and at every reload; the name of a
 *	running system rarely changes, and the lookup may be slow). The
 *	first call is not thread-safe; later ones only read.
 */

#include "util/util.h"

#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HOST_NAME_BYTES 256

static char cached[HOST_NAME_BYTES];
static int cached_fqdn = -1;

/* Letters, digits, '-', '_' and dots: what gethostname() may sensibly give. */
static int name_usable(const char *name)
{
    size_t n = strlen(name);

    if (n == 0 || n >= HOST_NAME_BYTES - 1 || name[0] == '.' ||
        name[n - 1] == '.' || strstr(name, "..") != NULL)
        return 0;
    for (; *name; name++)
        if (!((*name >= 'a' && *name <= 'z') ||
              (*name >= 'A' && *name <= 'Z') ||
              (*name >= '0' && *name <= '9') || *name == '-' || *name == '_' ||
              *name == '.'))
            return 0;
    return 1;
}

/* The canonical name of an unqualified one, if the resolver knows it. */
static void canonical(char *name, size_t len)
{
    struct addrinfo hints, *res = NULL;

    memset(&hints, 0, sizeof(hints));
    hints.ai_flags = AI_CANONNAME;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(name, NULL, &hints, &res) != 0 || res == NULL)
        return;
    if (res->ai_canonname != NULL && strchr(res->ai_canonname, '.') &&
        name_usable(res->ai_canonname))
        snprintf(name, len, "%s", res->ai_canonname);
    freeaddrinfo(res);
}

int util_host_name(char *buf, size_t len)
{
    if (cached_fqdn < 0) {
        if (gethostname(cached, sizeof(cached) - 1) < 0)
            cached[0] = 0;
        cached[sizeof(cached) - 1] = 0;
        if (name_usable(cached) && strchr(cached, '.') == NULL)
            canonical(cached, sizeof(cached));
        if (!name_usable(cached))
            snprintf(cached, sizeof(cached), "localhost");
        cached_fqdn = strchr(cached, '.') != NULL;
    }
    snprintf(buf, len, "%s", cached);
    return cached_fqdn;
}
