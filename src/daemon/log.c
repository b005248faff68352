/*
 * NAME
 *	log 3 - sluiced's log lines, in the forms Postfix's tools read
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	void	daemon_log_syslog(void)
 *	int	daemon_log_file(const char *path, char *why, size_t whylen)
 *	void	daemon_logv(int prio, const char *service, const char *fmt,
 *			va_list ap)
 * DESCRIPTION
 *	Every line is tagged as Postfix tags its own: "sluice/SERVICE[PID]"
 *	where SERVICE says which part of the daemon speaks, under the
 *	names Postfix's daemons have: smtpd (the SMTP server), pickup
 *	(local submissions), cleanup (DKIM signing, message-id=), qmgr (the queue
 *	manager), the transport's name for a delivery's outcome (smtp,
 *	relay, lmtp, error, discard...), master (the process itself). A
 *	warning reads "warning: TEXT", a fatal error "fatal: TEXT", as
 *	Postfix writes them, so that tools that look for the words find
 *	them.
 *
 *	Where lines go: standard error by default (sluiced -f), as
 *
 *	    2026-11-27T10:06:17.741+00:00 HOST sluice/qmgr[1071]: TEXT
 *
 *	(RFC 3339 time with its offset, the host name: what pflogsumm and
 *	syslog readers parse); daemon_log_syslog() sends them to syslog
 *	instead (facility mail, the tag as the ident), for a detached
 *	daemon. daemon_log_file() also appends every line, in the form
 *	above, to path (maillog_file; NULL or "": none), opened again each
 *	time it is called, so that a reload follows a log rotation; -1
 *	with the reason when it cannot be opened (the file in use stays).
 *	daemon_logv() writes one line.
 */

#include "daemon/daemon.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static int to_syslog;
static FILE *maillog;

void daemon_log_syslog(void)
{
    to_syslog = 1;
}

int daemon_log_file(const char *path, char *why, size_t whylen)
{
    FILE *fp = NULL;
    int fd;

    if (path != NULL && path[0] != 0) {
        fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
        if (fd < 0 || (fp = fdopen(fd, "a")) == NULL) {
            snprintf(why, whylen, "maillog_file %s: %s", path, strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        setvbuf(fp, NULL, _IOLBF, 0);
    }
    if (maillog != NULL)
        fclose(maillog);
    maillog = fp;
    return 0;
}

/* "2026-11-27T10:06:17.741+00:00 HOST sluice/SERVICE[PID]: " */
static void prefix(char *buf, size_t len, const char *service)
{
    int64_t now_us = util_clock_wall_us();
    time_t sec = (time_t)(now_us / 1000000);
    char stamp[32], zone[8], host[256];
    struct tm tm;

    localtime_r(&sec, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    strftime(zone, sizeof(zone), "%z", &tm); /* +hhmm */
    util_host_name(host, sizeof(host));
    snprintf(buf, len, "%s.%03ld%.3s:%.2s %s sluice/%s[%ld]: ", stamp,
             (long)(now_us % 1000000) / 1000, zone, zone + 3, host, service,
             (long)getpid());
}

void daemon_logv(int prio, const char *service, const char *fmt, va_list ap)
{
    static char ident[64];
    char line[4096], head[400];
    /* in the text too, as Postfix writes it, for tools that grep */
    const char *level = prio == LOG_WARNING ? "warning: "
                        : prio == LOG_ERR   ? "fatal: "
                                            : "";

    vsnprintf(line, sizeof(line), fmt, ap);
    if (to_syslog) {
        char want[sizeof(ident)];

        snprintf(want, sizeof(want), "sluice/%s", service);
        if (strcmp(want, ident) != 0) {
            memcpy(ident, want, sizeof(ident));
            openlog(ident, LOG_PID, LOG_MAIL);
        }
        syslog(prio, "%s%s", level, line);
    }
    if (!to_syslog || maillog != NULL)
        prefix(head, sizeof(head), service);
    if (!to_syslog)
        fprintf(stderr, "%s%s%s\n", head, level, line);
    if (maillog != NULL)
        fprintf(maillog, "%s%s%s\n", head, level, line);
}
