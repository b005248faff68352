#ifndef SLUICE_SENDMAIL_IMPL_H
#define SLUICE_SENDMAIL_IMPL_H

/*
 * NAME
 *	sendmail_impl 3h - what the files of "sluice sendmail" share
 * SYNOPSIS
 *	#include "sendmail/sendmail_impl.h"
 *
 *	int	sendmail_message_prepare(const struct sendmail_opts *o,
 *			int argc, char **argv, int first,
 *			const struct conf *conf, struct spool_msg *m)
 *	int	sendmail_store(const struct conf *conf, struct spool_msg *m)
 *	int	sendmail_smtp(const struct conf *conf)
 * DESCRIPTION
 *	Nothing outside src/sendmail/ includes this header. A struct
 *	sendmail_opts is what the options (sendmail.c) asked for. The
 *	exit statuses are sysexits.h's. message.c, store.c and
 *	stdio_smtp.c describe their functions.
 */

#include "conf/conf.h"
#include "spool/spool.h"

#define EX_USAGE    64
#define EX_DATAERR  65
#define EX_TEMPFAIL 75

struct sendmail_opts {
    int extract;  /* -t */
    int dot_ends; /* not -i */
    int smtp;     /* -bs */
    int smtputf8; /* -SMTPUTF8 */
    const char *sender, *full_name, *envid, *config;
    unsigned notify;
    enum spool_ret ret;
};

int sendmail_message_prepare(const struct sendmail_opts *o, int argc,
                             char **argv, int first, const struct conf *conf,
                             struct spool_msg *m);
int sendmail_store(const struct conf *conf, struct spool_msg *m);
int sendmail_smtp(const struct conf *conf);

#endif
