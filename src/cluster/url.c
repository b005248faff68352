/*
 * NAME
 *	url 3 - cluster_redis_url
 * SYNOPSIS
 *	#include "cluster/cluster.h"
 *
 *	int	cluster_url_parse(const char *text, struct cluster_url *u,
 *			char *why, size_t whylen)
 *	char	*cluster_url_shown(const char *text)
 * DESCRIPTION
 *	cluster_url_parse() reads redis://[[USER]:PASSWORD@]IP[:PORT][/]
 *	(IPv6 in brackets; the port 6379 when absent), the same with
 *	rediss:// for TLS (u->tls; decision 117), or
 *	unix://[[USER]:PASSWORD@]/PATH into u; 0, or -1 with the reason in
 *	why. The host is an IP address and nothing else: a name would be
 *	looked up with a blocking getaddrinfo(), stopping the event loop
 *	(with TLS, cluster_redis_tls_server_name names the certificate's
 *	name). There is no database number (the key prefix separates
 *	clusters).
 *
 *	cluster_url_shown() is the URL as the logs show it (allocated): the
 *	password, if any, replaced by "***" (decision 117).
 */

#include "cluster/cluster.h"

#include "util/util.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int url_fail(char *why, size_t whylen, const char *what)
{
    snprintf(why, whylen, "cluster_redis_url: %s", what);
    return -1;
}

/* "[USER]:PASSWORD@" at the start of *p, if any. */
static int url_userinfo(const char **p, struct cluster_url *u, char *why,
                        size_t whylen)
{
    const char *at = strchr(*p, '@'), *colon;
    size_t ulen, plen;

    if (at == NULL)
        return 0;
    colon = memchr(*p, ':', (size_t)(at - *p));
    if (colon == NULL)
        return url_fail(why, whylen, "USER:PASSWORD@ needs the colon");
    ulen = (size_t)(colon - *p);
    plen = (size_t)(at - colon - 1);
    if (memchr(colon + 1, ':', plen) != NULL)
        return url_fail(why, whylen, "a password with a colon");
    if (ulen >= sizeof(u->user) || plen >= sizeof(u->password))
        return url_fail(why, whylen, "user or password too long");
    memcpy(u->user, *p, ulen);
    memcpy(u->password, colon + 1, plen);
    *p = at + 1;
    return 0;
}

static int url_port(const char *s, struct cluster_url *u, char *why,
                    size_t whylen)
{
    char *end;
    long port;

    if (*s == '\0' || strcmp(s, "/") == 0) {
        u->port = 6379;
        return 0;
    }
    if (*s != ':')
        return url_fail(why, whylen, "junk after the address");
    port = strtol(s + 1, &end, 10);
    if (end == s + 1 || port < 1 || port > 65535 ||
        (*end != '\0' && strcmp(end, "/") != 0))
        return url_fail(why, whylen, "the port is not a number 1 to 65535");
    u->port = (int)port;
    return 0;
}

static int url_tcp(const char *p, struct cluster_url *u, char *why,
                   size_t whylen)
{
    unsigned char addr[16];
    size_t len;
    const char *end;

    if (*p == '[') {
        if ((end = strchr(p, ']')) == NULL)
            return url_fail(why, whylen, "no ] after the IPv6 address");
        len = (size_t)(end - p - 1);
        p++;
        end++;
    } else {
        len = strcspn(p, ":/");
        end = p + len;
    }
    if (len == 0 || len >= sizeof(u->ip))
        return url_fail(why, whylen, "no IP address");
    memcpy(u->ip, p, len);
    u->ip[len] = '\0';
    if (inet_pton(AF_INET, u->ip, addr) != 1 &&
        inet_pton(AF_INET6, u->ip, addr) != 1)
        return url_fail(why, whylen,
                        "the host must be an IP address (a name would be "
                        "looked up blocking the daemon)");
    return url_port(end, u, why, whylen);
}

int cluster_url_parse(const char *text, struct cluster_url *u, char *why,
                      size_t whylen)
{
    const char *p;

    memset(u, 0, sizeof(*u));
    if (strncmp(text, "redis://", 8) == 0 ||
        strncmp(text, "rediss://", 9) == 0) {
        u->tls = text[5] == 's';
        p = text + 8 + u->tls;
        if (url_userinfo(&p, u, why, whylen) < 0)
            return -1;
        return url_tcp(p, u, why, whylen);
    }
    if (strncmp(text, "unix://", 7) != 0)
        return url_fail(why, whylen, "neither redis://, rediss:// nor unix://");
    p = text + 7;
    u->unix_socket = 1;
    if (url_userinfo(&p, u, why, whylen) < 0)
        return -1;
    if (*p != '/')
        return url_fail(why, whylen, "unix:// needs an absolute path");
    if (strlen(p) >= sizeof(u->path))
        return url_fail(why, whylen, "the socket's path is too long");
    snprintf(u->path, sizeof(u->path), "%s", p);
    return 0;
}

char *cluster_url_shown(const char *text)
{
    const char *start = strstr(text, "://"), *at, *colon;
    char *out;
    size_t len;

    if (start == NULL || (at = strchr(start + 3, '@')) == NULL ||
        (colon = memchr(start + 3, ':', (size_t)(at - start - 3))) == NULL)
        return xstrdup(text);
    len = (size_t)(colon + 1 - text) + 3 + strlen(at) + 1;
    out = xmalloc(len);
    snprintf(out, len, "%.*s***%s", (int)(colon + 1 - text), text, at);
    return out;
}
