/*
 * NAME
 *	message 3 - the message "sluice sendmail" submits
 * SYNOPSIS
 *	#include "sendmail/sendmail_impl.h"
 *
 *	int	sendmail_message_prepare(const struct sendmail_opts *o,
 *			int argc, char **argv, int first,
 *			const struct conf *conf, struct spool_msg *m)
 * DESCRIPTION
 *	sendmail_message_prepare() fills m from the options o, the
 *	recipients argv[first..argc-1] and the message on standard input:
 *	the envelope sender (-f, or the caller's login name at
 *	myhostname), the recipients (the command line's, then with -t the
 *	headers'; a bare local part gets @myhostname; each address once,
 *	in order of first appearance), DSN NOTIFY, RET and ENVID, and the
 *	content, read by submit_read() within message_size_limit, with
 *	Bcc removed (-t) and the missing From, Date and Message-ID
 *	headers added. The message asks for SMTPUTF8 with -SMTPUTF8, or
 *	when its sender, a recipient or a header field is not ASCII (the
 *	reference's autodetection for sendmail). It returns 0, or an exit
 *	status (EX_USAGE,
 *	EX_DATAERR, EX_TEMPFAIL) after one line with the reason on
 *	standard error.
 */

#include "sendmail/sendmail_impl.h"

#include "ingress/ingress.h"
#include "util/util.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

static void host_name(const struct conf *conf, char *buf, size_t len)
{
    snprintf(buf, len, "%s", conf_str(conf, NULL, CONF_myhostname));
}

/* The envelope sender: -f, or login@myhostname. */
static char *sender_address(const struct sendmail_opts *o, const char *host)
{
    struct passwd *pw;
    char buf[512];

    if (o->sender) {
        if (strcmp(o->sender, "<>") == 0 || *o->sender == 0)
            return xstrdup("");
        return xstrdup(o->sender);
    }
    pw = getpwuid(getuid());
    snprintf(buf, sizeof(buf), "%s@%s", pw ? pw->pw_name : "nobody", host);
    return xstrdup(buf);
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
            list->addr[i] = xstrdup(buf);
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

/*
 * SMTPUTF8 autodetection, as Postfix's smtputf8_autodetect_classes
 * default does for its sendmail: a UTF-8 sender, recipient or header
 * field makes the message ask for SMTPUTF8 (decision 86).
 */
static int utf8_detected(const struct spool_msg *m,
                         const struct submit_input *in)
{
    if (!smtp_ascii(m->sender, strlen(m->sender)))
        return 1;
    for (uint32_t i = 0; i < m->nrcpt; i++)
        if (!smtp_ascii(m->rcpt[i].address, strlen(m->rcpt[i].address)))
            return 1;
    return !smtp_header_ascii(in->data, in->len);
}

/* Read, check and prepare the message; 0 or an exit status. */
int sendmail_message_prepare(const struct sendmail_opts *o, int argc,
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
                     (uint64_t)conf_int(conf, NULL, CONF_message_size_limit),
                     &in, why, sizeof(why));
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
    m->envid = o->envid ? xstrdup(o->envid) : NULL;
    m->ret = o->ret;
    m->smtputf8 = o->smtputf8 || utf8_detected(m, &in);
    m->arrival = spool_now();
    m->body = in.data; /* taken over */
    m->size = in.len;
    in.data = NULL;
done:
    submit_input_free(&in);
    smtp_addr_list_free(&list);
    return rc;
}
