/*
 * NAME
 *	sendmail 3 - "sluice sendmail", and sendmail itself
 * SYNOPSIS
 *	sluice sendmail [-t] [-f sender] [-F name] [-i|-oi] [-N dsn] [-R ret]
 *		[-V envid] [-bm] [-C file] [--] [recipient...]
 *	sluice sendmail -bs [-C file]
 *	sluice sendmail -bp [-C file]
 *	sendmail ...	(the same, when the program is called sendmail)
 * DESCRIPTION
 *	sendmail reads a message on standard input and hands it to the
 *	running daemon over its submission socket (ingress/local.c), which
 *	stores it in its next group commit; sendmail exits 0 only once the
 *	message is durable. When no daemon answers, sendmail stores the
 *	message in the spool itself, or, for a caller who may not write
 *	the spool (an ordinary user: cron, a web application), leaves it
 *	in the maildrop directory (store.c).
 *
 *	Input ends at end of file, or at a line with a single "." unless
 *	-i (or -oi) is given. -t takes recipients from the To, Cc and Bcc
 *	headers (Resent-* when there are any), in addition to those on the
 *	command line, and removes Bcc. -f sets the envelope sender ("<>" or
 *	"" for the null sender; default: the caller's login name at
 *	myhostname). -F is the full name for a From header that is
 *	missing. -N sets DSN NOTIFY for every recipient (never, or a
 *	comma-separated list of success, failure, delay), -R the RET
 *	(full, hdrs), -V the ENVID. -bm, the default mode, is accepted; -C
 *	names the configuration file (as -c does for the sluice command);
 *	-SMTPUTF8 asks for SMTPUTF8 delivery (RFC 6531), as Postfix's
 *	sendmail does; a message whose sender, a recipient or a header
 *	field is not ASCII asks for it anyway (message.c); -bs speaks SMTP
 *	on standard input and output instead of reading one
 *	message (stdio_smtp.c); -bp lists the queue, as mailq (cli/main.c
 *	runs sluice queue for it);
 *	other -o options and -v, -B are accepted and ignored, as other
 *	sendmail replacements do. Missing From, Date and Message-ID
 *	headers are added (message.c).
 *
 *	Exit status (sysexits.h): 0 the message is safely stored; 64
 *	usage error (bad option, bad address, no recipient); 65 the
 *	message is not acceptable (a NUL byte, too big, or refused by the
 *	daemon); 75 temporary
 *	failure (the spool or the disk is full, cannot write the maildrop,
 *	reading failed, no daemon runs and there is no spool: sendmail
 *	never creates the queue directory, which is sluiced's to make, so
 *	a missing installation is reported rather than started in the
 *	default place). Every failure writes one line with the reason to
 *	standard error.
 */

#include "sendmail/sendmail.h"
#include "sendmail/sendmail_impl.h"

#include "daemon/daemon.h"
#include "ingress/ingress.h"

#include <stdio.h>
#include <string.h>

static void usage(void)
{
    fprintf(stderr, "usage: sendmail %s\n", SENDMAIL_ARGS);
}

/* Parse the options; recipients start at *first. 0 or EX_USAGE. */
static int sendmail_options(int argc, char **argv, struct sendmail_opts *o,
                            int *first)
{
    int i;

    o->dot_ends = 1;
    for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
        const char *opt = argv[i];
        const char *val = NULL;

        if (strcmp(opt, "--") == 0) {
            i++;
            break;
        }
        if (strcmp(opt, "-SMTPUTF8") == 0) { /* Postfix's, not a cluster */
            o->smtputf8 = 1;
            continue;
        }
        if (strchr("fFNRVC", opt[1]) && opt[1]) {
            val = opt[2] ? opt + 2 : (i + 1 < argc ? argv[++i] : NULL);
            if (val == NULL) {
                fprintf(stderr, "sendmail: option -%c needs an argument\n",
                        opt[1]);
                return EX_USAGE;
            }
        }
        switch (opt[1]) {
        case 't':
            o->extract = 1;
            break;
        case 'i':
            o->dot_ends = 0;
            break;
        case 'o':
            if (strcmp(opt, "-oi") == 0)
                o->dot_ends = 0;
            break; /* other -o options: ignored */
        case 'v':
        case 'B':
            break;
        case 'b':
            if (strcmp(opt, "-bs") == 0)
                o->smtp = 1;
            else if (strcmp(opt, "-bm") != 0) {
                fprintf(stderr, "sendmail: mode %s is not supported\n", opt);
                return EX_USAGE;
            }
            break;
        case 'f':
            o->sender = val;
            break;
        case 'F':
            o->full_name = val;
            break;
        case 'C':
            o->config = val;
            break;
        case 'N':
            if (submit_parse_notify(val, &o->notify) < 0) {
                fprintf(stderr,
                        "sendmail: bad -N value \"%s\": expected "
                        "never, or success, failure, delay\n",
                        val);
                return EX_USAGE;
            }
            break;
        case 'R':
            if (submit_parse_ret(val, &o->ret) < 0) {
                fprintf(stderr,
                        "sendmail: bad -R value \"%s\": expected full or "
                        "hdrs\n",
                        val);
                return EX_USAGE;
            }
            break;
        case 'V':
            if (!submit_envid_valid(val)) {
                fprintf(stderr, "sendmail: bad -V envelope id\n");
                return EX_USAGE;
            }
            o->envid = val;
            break;
        default:
            fprintf(stderr, "sendmail: unknown option %s\n", opt);
            usage();
            return EX_USAGE;
        }
    }
    *first = i;
    return 0;
}

int sendmail_main(const char *config_path, int argc, char **argv)
{
    struct sendmail_opts o = {0};
    struct spool_msg *m;
    struct conf *conf;
    char why[1024];
    int first, rc;

    if ((rc = sendmail_options(argc, argv, &o, &first)) != 0)
        return rc;
    conf =
        daemon_conf_open(o.config ? o.config : config_path, why, sizeof(why));
    if (conf == NULL) {
        fprintf(stderr, "sluice: %s\n", why);
        return EX_TEMPFAIL;
    }
    if (o.smtp) {
        rc = sendmail_smtp(conf);
        conf_free(conf);
        return rc;
    }
    m = spool_msg_new();
    rc = sendmail_message_prepare(&o, argc, argv, first, conf, m);
    if (rc == 0)
        rc = sendmail_store(conf, m);
    spool_msg_free(m);
    conf_free(conf);
    return rc;
}
