#ifndef SLUICE_SENDMAIL_H
#define SLUICE_SENDMAIL_H

/*
 * NAME
 *	sendmail 3h - "sluice sendmail" (and sendmail itself), "sluice import"
 * SYNOPSIS
 *	#include "sendmail/sendmail.h"
 *
 *	extern const struct cli_command sendmail_command;
 *	extern const struct cli_command sendmail_import_command;
 * DESCRIPTION
 *	The two subcommands of the sluice command that bring mail in from
 *	the local system, for its table (cli/main.c): sendmail_command
 *	("sluice sendmail", and the program itself when it is called
 *	sendmail: sendmail.c, message.c, store.c) and
 *	sendmail_import_command ("sluice import": import.c). They run as
 *	the other subcommands do (cli/cli.h), with the sluice command's
 *	way of loading the configuration and opening the spool.
 */

#include "cli/cli.h"

extern const struct cli_command sendmail_command;
extern const struct cli_command sendmail_import_command;

#endif
