/*
 * NAME
 *	sendmail 3 - "sluice sendmail" (and sendmail itself), "sluice import"
 * SYNOPSIS
 *	sluice sendmail [-t] [-f sender] [-F name] [-i|-oi] [-N dsn] [-R ret]
 *		[-V envid] [-bm] [-C file] [--] [recipient...]
 *	sendmail ...	(the same, when the program is called sendmail)
 *	sluice import
 * DESCRIPTION
 *	sendmail reads a message on standard input and hands it to the
 *	running daemon over its submission socket (ingress/local.c), which
 *	stores it in its next group commit; sendmail exits 0 only once the
 *	message is durable. When no daemon answers, sendmail stores the
 *	message in the spool itself, or, for a caller who may not write
 *	the spool (an ordinary user: cron, a web application), leaves it
 *	in the maildrop directory, written and synced before the exit; the
 *	daemon imports the maildrop when it starts and when woken, and
 *	"sluice import" (run by the spool's owner) does the same by hand.
 *	A daemon that takes the request but does not answer within
 *	SENDMAIL_TIMEOUT seconds may still store it: the message is then
 *	stored the other way too, with a warning (a possible duplicate,
 *	never a loss).
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
 *	other -o options and -v, -B are accepted and ignored, as other
 *	sendmail replacements do. Missing From, Date and Message-ID
 *	headers are added.
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

#include "cli/cli.h"
#include "ingress/ingress.h"
#include "daemon/daemon.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define EX_USAGE    64
#define EX_DATAERR  65
#define EX_TEMPFAIL 75

#define SENDMAIL_TIMEOUT 100 /* seconds to wait for the daemon's answer */

static int sendmail_run(const struct cli *cli, int argc, char **argv);
static int import_run(const struct cli *cli, int argc, char **argv);

const struct cli_command cli_sendmail_command = {
    "sendmail",
    "[-t] [-f sender] [-F name] [-i|-oi] [-N dsn] [-R ret] [-V envid] [-bm] "
    "[--] [recipient...]",
    "submit a message read on standard input",
    sendmail_run,
};

const struct cli_command cli_import_command = {
    "import",
    "",
    "move messages from the maildrop into the spool",
    import_run,
};

struct sendmail_opts {
    int extract;  /* -t */
    int dot_ends; /* not -i */
    const char *sender, *full_name, *envid, *config;
    unsigned notify;
    enum spool_ret ret;
};

static void usage(void)
{
    fprintf(stderr, "usage: sendmail %s\n", cli_sendmail_command.args);
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
            if (strcmp(opt, "-bm") != 0) {
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

static void host_name(const struct conf *conf, char *buf, size_t len)
{
    snprintf(buf, len, "%s", conf_str(conf, NULL, "myhostname"));
}

/* The envelope sender: -f, or login@myhostname. */
static char *sender_address(const struct sendmail_opts *o, const char *host)
{
    struct passwd *pw;
    char buf[512];

    if (o->sender) {
        if (strcmp(o->sender, "<>") == 0 || *o->sender == 0)
            return strdup("");
        return strdup(o->sender);
    }
    pw = getpwuid(getuid());
    snprintf(buf, sizeof(buf), "%s@%s", pw ? pw->pw_name : "nobody", host);
    return strdup(buf);
}

/* A unique token for the Message-ID: time, pid and randomness. */
static void message_token(char *buf, size_t len)
{
    uint32_t r = 0;
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];

    if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
        r = (uint32_t)now;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof(stamp), "%Y%m%d%H%M%S", &tm);
    snprintf(buf, len, "%s.%ld.%08X", stamp, (long)getpid(), r);
}

/*
 * The recipients: command line, then headers with -t; a bare local part
 * gets @myhostname; each address once, in order of first appearance.
 */
static int add_rcpts(struct spool_msg *m, struct smtp_addr_list *list,
                     const char *host, unsigned notify)
{
    char buf[SMTP_ADDRESS_MAX + 300];

    for (size_t i = 0; i < list->count; i++) {
        const char *addr = list->addr[i];

        if (strchr(addr, '@') == NULL) {
            snprintf(buf, sizeof(buf), "%s@%s", addr, host);
            free(list->addr[i]);
            list->addr[i] = strdup(buf);
        }
    }
    smtp_addr_list_uniq(list);
    for (size_t i = 0; i < list->count; i++) {
        if (!smtp_address_valid(list->addr[i])) {
            fprintf(stderr, "sendmail: bad recipient address \"%s\"\n",
                    list->addr[i]);
            return EX_USAGE;
        }
        spool_msg_add_rcpt(m, list->addr[i], NULL, notify, NULL);
    }
    return 0;
}

/* Read, check and prepare the message; 0 or an exit status. */
static int sendmail_message(const struct sendmail_opts *o, int argc,
                            char **argv, int first, const struct conf *conf,
                            struct spool_msg *m)
{
    struct submit_input in = {0};
    struct smtp_addr_list list = {0};
    char host[256], token[64], why[512];
    int rc;

    host_name(conf, host, sizeof(host));
    m->sender = sender_address(o, host);
    if (*m->sender && !smtp_address_valid(m->sender)) {
        fprintf(stderr, "sendmail: bad sender address \"%s\"\n", m->sender);
        return EX_USAGE;
    }
    for (int i = first; i < argc; i++) {
        if (!smtp_address_valid(argv[i])) {
            fprintf(stderr, "sendmail: bad recipient address \"%s\"\n",
                    argv[i]);
            return EX_USAGE;
        }
        smtp_addr_list_add(&list, argv[i]);
    }
    rc = submit_read(stdin, o->dot_ends,
                     (uint64_t)conf_int(conf, NULL, "message_size_limit"), &in,
                     why, sizeof(why));
    if (rc != SUBMIT_OK) {
        fprintf(stderr, "sendmail: %s\n", why);
        smtp_addr_list_free(&list);
        return rc == SUBMIT_DATAERR ? EX_DATAERR : EX_TEMPFAIL;
    }
    if (o->extract) {
        if (submit_recipients_from_headers(&in, &list, why, sizeof(why)) < 0) {
            fprintf(stderr, "sendmail: %s\n", why);
            rc = EX_DATAERR;
            goto done;
        }
        submit_remove_bcc(&in);
    }
    if ((rc = add_rcpts(m, &list, host, o->notify)) != 0)
        goto done;
    if (m->nrcpt == 0) {
        fprintf(stderr, "sendmail: no recipient given%s\n",
                o->extract ? " or found in the headers" : "");
        rc = EX_USAGE;
        goto done;
    }
    message_token(token, sizeof(token));
    if (submit_add_missing_headers(&in, m->sender, o->full_name, host,
                                   time(NULL), token) < 0) {
        fprintf(stderr, "sendmail: cannot add the missing headers: %s\n",
                strerror(errno));
        rc = EX_TEMPFAIL;
        goto done;
    }
    m->envid = o->envid ? strdup(o->envid) : NULL;
    m->ret = o->ret;
    m->arrival = spool_now();
    m->body = in.data; /* taken over */
    m->size = in.len;
    in.data = NULL;
done:
    submit_input_free(&in);
    smtp_addr_list_free(&list);
    return rc;
}

/* Store in the spool, or leave in the maildrop; 0 or EX_TEMPFAIL. */
static int sendmail_deliver(const struct conf *conf, struct spool_msg *m)
{
    struct spool_config cf;
    struct spool *sp;
    char why[512], dir[4096], name[64], id[64];

    cli_spool_config(conf, &cf);
    switch (local_submit(cf.queue_directory, m, SENDMAIL_TIMEOUT * 1000, id,
                         sizeof(id), why, sizeof(why))) {
    case LOCAL_OK:
        return 0;
    case LOCAL_REJECT:
        fprintf(stderr, "sendmail: refused by sluiced: %s\n", why);
        return EX_DATAERR;
    case LOCAL_TEMPFAIL:
        fprintf(stderr, "sendmail: sluiced cannot store the message now: %s\n",
                why);
        return EX_TEMPFAIL;
    case LOCAL_NO_ANSWER:
        fprintf(stderr,
                "sendmail: warning: %s; storing the message without the "
                "daemon (it may be delivered twice)\n",
                why);
        break;
    default: /* no daemon: store it ourselves */
        break;
    }
    if (access(cf.queue_directory, F_OK) < 0) {
        /* Only sluiced (or "sluice import") makes a spool: a missing
         * one means a missing installation, not a place to start one. */
        fprintf(stderr,
                "sendmail: no sluiced is running and there is no spool at %s "
                "(%s): start sluiced, which creates it, or set "
                "queue_directory\n",
                cf.queue_directory, strerror(errno));
        return EX_TEMPFAIL;
    }
    if (spool_open(&sp, &cf, SPOOL_CREATE | SPOOL_NO_COMMITTER, why,
                   sizeof(why)) == 0) {
        int rc = spool_store(sp, m, why, sizeof(why));

        spool_close(sp);
        /* The owner makes sure the maildrop exists for everybody else. */
        maildrop_create(cf.queue_directory, name, sizeof(name));
        if (rc < 0) {
            fprintf(stderr, "sendmail: %s\n", why);
            return EX_TEMPFAIL;
        }
        daemon_wake_send(cf.queue_directory);
        return 0;
    }
    if (errno != EACCES) {
        fprintf(stderr, "sendmail: %s\n", why);
        return EX_TEMPFAIL;
    }
    snprintf(dir, sizeof(dir), "%s/%s", cf.queue_directory, MAILDROP_DIR);
    if (maildrop_write(dir, m, name, sizeof(name), why, sizeof(why)) < 0) {
        fprintf(stderr, "sendmail: %s\n", why);
        return EX_TEMPFAIL;
    }
    daemon_wake_send(cf.queue_directory);
    return 0;
}

static int sendmail_run(const struct cli *cli, int argc, char **argv)
{
    struct sendmail_opts o = {0};
    struct spool_msg *m;
    struct conf *conf;
    int first, rc;

    if ((rc = sendmail_options(argc, argv, &o, &first)) != 0)
        return rc;
    conf = cli_conf_open(o.config ? o.config : cli->config_path);
    if (conf == NULL)
        return EX_TEMPFAIL;
    m = spool_msg_new();
    rc = sendmail_message(&o, argc, argv, first, conf, m);
    if (rc == 0)
        rc = sendmail_deliver(conf, m);
    spool_msg_free(m);
    conf_free(conf);
    return rc;
}

struct import_ctx {
    struct spool *sp;
};

static int import_store(void *ctx, struct spool_msg *m, uid_t owner, char *why,
                        size_t whylen)
{
    struct import_ctx *ic = ctx;

    (void)owner;
    return spool_store(ic->sp, m, why, whylen);
}

static int import_run(const struct cli *cli, int argc, char **argv)
{
    struct maildrop_stats st = {0};
    struct import_ctx ic;
    struct spool_config cf;
    struct conf *conf;
    char why[512];
    int rc;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: sluice import\n");
        return CLI_EXIT_USAGE;
    }
    if ((conf = cli_spool_open(cli, "import", SPOOL_CREATE | SPOOL_NO_COMMITTER,
                               &ic.sp)) == NULL)
        return CLI_EXIT_FAIL;
    cli_spool_config(conf, &cf);
    if (maildrop_create(cf.queue_directory, why, sizeof(why)) < 0) {
        fprintf(stderr, "sluice: import: %s\n", why);
        rc = -1;
    } else {
        rc = maildrop_import(cf.queue_directory, import_store, &ic, &st, why,
                             sizeof(why));
        if (rc < 0)
            fprintf(stderr, "sluice: import: %s\n", why);
    }
    if (st.imported > 0)
        daemon_wake_send(cf.queue_directory);
    printf("imported %lu, malformed %lu (moved to %s), failed %lu, stale "
           "temporary files %lu\n",
           st.imported, st.malformed, MAILDROP_BAD_DIR, st.failed, st.stale);
    spool_close(ic.sp);
    conf_free(conf);
    return rc < 0 || st.failed ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
