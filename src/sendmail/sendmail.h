#ifndef SLUICE_SENDMAIL_H
#define SLUICE_SENDMAIL_H

/*
 * NAME
 *	sendmail 3h - "sluice sendmail", and sendmail itself
 * SYNOPSIS
 *	#include "sendmail/sendmail.h"
 *
 *	int	sendmail_main(const char *config_path, int argc, char **argv)
 * DESCRIPTION
 *	sendmail_main() is the sendmail command: argv[0] is its name,
 *	the options and recipients follow (SENDMAIL_ARGS, for usage
 *	lines). It reads the message on standard input, builds it
 *	(message.c) and hands it to the daemon, the spool or the maildrop
 *	(store.c); the configuration is the file config_path, or the one
 *	the -C option names, else the default (conf_path()). It returns
 *	the exit status: 0 once the message is stored, EX_USAGE,
 *	EX_DATAERR or EX_TEMPFAIL (sysexits.h) otherwise. The sluice
 *	command (cli/main.c) runs it as "sluice sendmail" and when called
 *	sendmail.
 */

#define SENDMAIL_ARGS                                                          \
    "[-t] [-f sender] [-F name] [-i|-oi] [-N dsn] [-R ret] [-V envid] "        \
    "[-bm|-bs|-bp] "                                                           \
    "[--] [recipient...]"

int sendmail_main(const char *config_path, int argc, char **argv);

#endif
