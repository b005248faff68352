/*
 * NAME
 *	command 3 - SMTP commands as a server reads them (RFC 5321 4.1)
 * SYNOPSIS
 *	#include "smtp/smtp.h"
 *
 *	int	smtp_command_parse(const char *line, size_t len,
 *			struct smtp_command *cmd, char *why, size_t whylen)
 *	void	smtp_command_free(struct smtp_command *cmd)
 * DESCRIPTION
 *	smtp_command_parse() reads one command line (without its CRLF) into
 *	cmd, which it clears first (free it with smtp_command_free()). It
 *	returns 0, or the reply code of the refusal with the rest of the
 *	reply (enhanced status code and text) in why:
 *
 *	SMTP_PARSE_UNKNOWN (500)  not a command the server knows
 *	SMTP_PARSE_SYNTAX (501)   bad arguments; a parameter malformed or
 *				  given twice; a NUL byte in the line
 *	SMTP_PARSE_ADDRESS (501)  a path whose address is not valid
 *	SMTP_PARSE_PARAM (555)	  a MAIL or RCPT parameter the server does
 *				  not support
 *
 *	Verbs and parameter keywords are compared without case. The
 *	arguments each verb takes:
 *
 *	EHLO, HELO host     cmd->arg (the rest of the line, trimmed)
 *	MAIL FROM:<path>    cmd->path: the address without brackets, "" for
 *			    the null path, a source route dropped (RFC 5321
 *			    4.1.1.3 and appendix C); a space after the colon
 *			    is accepted, as clients send one. Parameters
 *			    SIZE=n, BODY=7BIT|8BITMIME, RET=FULL|HDRS,
 *			    ENVID=xtext (decoded into cmd->envid) and
 *			    SMTPUTF8 (RFC 6531 3.4, no value:
 *			    cmd->smtputf8; repeated, as Python's smtplib
 *			    may send it, is taken once).
 *	RCPT TO:<path>      the same, not null; NOTIFY=NEVER or a list of
 *			    SUCCESS, FAILURE, DELAY (cmd->notify,
 *			    SMTP_NOTIFY_* bits) and ORCPT=type;xtext
 *			    (cmd->orcpt, "type;decoded").
 *	DATA, RSET, QUIT, STARTTLS   no argument
 *	NOOP [anything]     ignored argument (4.1.1.9)
 *	VRFY string         cmd->arg
 *	HELP [string]       cmd->arg or NULL
 *	ETRN node           cmd->arg: a domain, "@domain" or "#queue"
 *			    (RFC 1985)
 *	BDAT size [LAST]    cmd->chunk, cmd->last (RFC 3030)
 *	AUTH mechanism [initial-response]
 *			    cmd->arg, cmd->path (RFC 4954 4: the response
 *			    as sent, base64 or "=", not decoded) or NULL
 *
 *	The parser checks syntax only; which commands are allowed when (a
 *	MAIL before EHLO, a second MAIL) is the session's business. A path
 *	longer than RFC 5321's 256 octets, or an address that
 *	smtp_address_valid() refuses, is SMTP_PARSE_ADDRESS.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define PATH_MAX_OCTETS 256 /* RFC 5321 4.5.3.1.3, brackets included */
#define ENVID_MAX       100 /* RFC 3461 4.4 */
#define ORCPT_MAX       500 /* RFC 3461 4.2 */

static const struct {
    const char *name;
    enum smtp_verb verb;
} verbs[] = {
    {"EHLO", SMTP_CMD_EHLO},         {"HELO", SMTP_CMD_HELO},
    {"MAIL", SMTP_CMD_MAIL},         {"RCPT", SMTP_CMD_RCPT},
    {"DATA", SMTP_CMD_DATA},         {"BDAT", SMTP_CMD_BDAT},
    {"RSET", SMTP_CMD_RSET},         {"NOOP", SMTP_CMD_NOOP},
    {"QUIT", SMTP_CMD_QUIT},         {"VRFY", SMTP_CMD_VRFY},
    {"HELP", SMTP_CMD_HELP},         {"ETRN", SMTP_CMD_ETRN},
    {"STARTTLS", SMTP_CMD_STARTTLS}, {"AUTH", SMTP_CMD_AUTH},
};

static int refuse(char *why, size_t whylen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(char *why, size_t whylen, int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, whylen, fmt, ap);
    va_end(ap);
    return code;
}

static char *dup_n(const char *p, size_t n)
{
    char *s = xmalloc(n + 1);

    memcpy(s, p, n);
    s[n] = 0;
    return s;
}

/* The argument with leading and trailing white space removed, or NULL. */
static char *trimmed(const char *p)
{
    const char *end;

    while (*p == ' ' || *p == '\t')
        p++;
    end = p + strlen(p);
    while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    return end > p ? dup_n(p, (size_t)(end - p)) : NULL;
}

static int hexval(int c)
{
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/*
 * RFC 3461 xtext, decoded: printable characters but "+" and "=" as
 * themselves, "+HH" for any octet. The result must be printable (the
 * notices carry it in header fields); NULL when not valid.
 */
static char *xtext_decode(const char *p, size_t n, size_t max)
{
    char *out = xmalloc(n + 1);
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)p[i];

        if (c == '+') {
            int hi, lo;

            if (i + 2 >= n)
                goto bad;
            hi = hexval((unsigned char)p[i + 1]);
            lo = hexval((unsigned char)p[i + 2]);
            if (hi < 0 || lo < 0)
                goto bad;
            c = hi * 16 + lo;
            i += 2;
        } else if (c < 33 || c > 126 || c == '=') {
            goto bad;
        }
        if (c < 32 || c > 126)
            goto bad;
        out[o++] = (char)c;
    }
    out[o] = 0;
    if (o == 0 || o > max)
        goto bad;
    return out;
bad:
    free(out);
    return NULL;
}

/* NOTIFY=NEVER | SUCCESS,FAILURE,DELAY in any order, each once. */
static int notify_parse(const char *v, unsigned *bits)
{
    static const struct {
        const char *word;
        unsigned bit;
    } words[] = {{"SUCCESS", SMTP_NOTIFY_SUCCESS},
                 {"FAILURE", SMTP_NOTIFY_FAILURE},
                 {"DELAY", SMTP_NOTIFY_DELAY}};
    unsigned b = 0;

    if (strcasecmp(v, "NEVER") == 0) {
        *bits = SMTP_NOTIFY_NEVER;
        return 0;
    }
    while (*v) {
        size_t n = strcspn(v, ",");
        size_t k;

        for (k = 0; k < 3; k++)
            if (strlen(words[k].word) == n &&
                strncasecmp(v, words[k].word, n) == 0)
                break;
        if (k == 3 || (b & words[k].bit))
            return -1;
        b |= words[k].bit;
        v += n;
        if (*v == ',' && *++v == 0)
            return -1;
    }
    if (b == 0)
        return -1;
    *bits = b;
    return 0;
}

/* "<path>": where it ends (past ">"), or NULL; the address in *addr. */
static const char *path_parse(const char *p, char **addr)
{
    const char *start = p, *mailbox;
    int quoted = 0;

    *addr = NULL;
    if (*p++ != '<')
        return NULL;
    for (; *p && (quoted || *p != '>'); p++) {
        if (quoted && *p == '\\' && p[1])
            p++;
        else if (*p == '"')
            quoted = !quoted;
    }
    if (*p != '>')
        return NULL;
    mailbox = start + 1;
    /* A source route: "@a,@b:" before the mailbox. */
    if (*mailbox == '@') {
        const char *colon = memchr(mailbox, ':', (size_t)(p - mailbox));

        if (colon == NULL)
            return NULL;
        mailbox = colon + 1;
    }
    *addr = dup_n(mailbox, (size_t)(p - mailbox));
    return p + 1;
}

struct params {
    struct smtp_command *cmd;
    int seen_size, seen_body, seen_ret, seen_envid, seen_notify, seen_orcpt;
};

static int mail_param(struct params *ps, const char *key, const char *val,
                      char *why, size_t whylen)
{
    struct smtp_command *c = ps->cmd;

    if (strcasecmp(key, "SIZE") == 0) {
        char *end;

        if (ps->seen_size++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 SIZE given twice");
        errno = 0;
        if (val == NULL || !isdigit((unsigned char)*val) || strlen(val) > 20 ||
            (c->size = strtoull(val, &end, 10), errno != 0 || *end != 0))
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad SIZE parameter");
        c->has_size = 1;
    } else if (strcasecmp(key, "BODY") == 0) {
        if (ps->seen_body++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 BODY given twice");
        if (val != NULL && strcasecmp(val, "8BITMIME") == 0)
            c->body_8bit = 1;
        else if (val == NULL || strcasecmp(val, "7BIT") != 0)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad BODY parameter");
    } else if (strcasecmp(key, "RET") == 0) {
        if (ps->seen_ret++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 RET given twice");
        if (val != NULL && strcasecmp(val, "FULL") == 0)
            c->ret = SMTP_RET_FULL;
        else if (val != NULL && strcasecmp(val, "HDRS") == 0)
            c->ret = SMTP_RET_HDRS;
        else
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad RET parameter");
    } else if (strcasecmp(key, "SMTPUTF8") == 0) {
        /* given twice is harmless, and Python's smtplib sends it twice
         * when told to and the message needs it: taken, as Postfix does */
        if (val != NULL)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad SMTPUTF8 parameter");
        c->smtputf8 = 1;
    } else if (strcasecmp(key, "ENVID") == 0) {
        if (ps->seen_envid++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 ENVID given twice");
        if (val == NULL ||
            (c->envid = xtext_decode(val, strlen(val), ENVID_MAX)) == NULL)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad ENVID parameter");
    } else {
        return refuse(why, whylen, SMTP_PARSE_PARAM,
                      "5.5.4 Unsupported parameter %.40s", key);
    }
    return 0;
}

static int rcpt_param(struct params *ps, const char *key, const char *val,
                      char *why, size_t whylen)
{
    struct smtp_command *c = ps->cmd;

    if (strcasecmp(key, "NOTIFY") == 0) {
        if (ps->seen_notify++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 NOTIFY given twice");
        if (val == NULL || notify_parse(val, &c->notify) < 0)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad NOTIFY parameter");
    } else if (strcasecmp(key, "ORCPT") == 0) {
        const char *semi = val ? strchr(val, ';') : NULL;
        char *addr;
        size_t tlen;

        if (ps->seen_orcpt++)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 ORCPT given twice");
        tlen = semi ? (size_t)(semi - val) : 0;
        for (size_t i = 0; i < tlen; i++)
            if (!isalnum((unsigned char)val[i]) && val[i] != '-')
                tlen = 0;
        if (tlen == 0 || (addr = xtext_decode(semi + 1, strlen(semi + 1),
                                              ORCPT_MAX)) == NULL)
            return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                          "5.5.4 Bad ORCPT parameter");
        c->orcpt = xmalloc(tlen + 1 + strlen(addr) + 1);
        sprintf(c->orcpt, "%.*s;%s", (int)tlen, val, addr);
        free(addr);
    } else {
        return refuse(why, whylen, SMTP_PARSE_PARAM,
                      "5.5.4 Unsupported parameter %.40s", key);
    }
    return 0;
}

/* " KEY[=VALUE]" ...: each to mail_param() or rcpt_param(). */
static int params_parse(struct smtp_command *c, const char *p, char *why,
                        size_t whylen, const char *usage)
{
    struct params ps = {c, 0, 0, 0, 0, 0, 0};
    char key[64], *val;
    int rc;

    while (*p) {
        size_t n, k;

        if (*p != ' ')
            return refuse(why, whylen, SMTP_PARSE_SYNTAX, "5.5.4 Syntax: %s",
                          usage);
        while (*p == ' ')
            p++;
        if (*p == 0)
            break;
        n = strcspn(p, " ");
        k = strcspn(p, "=");
        if (k > n)
            k = n;
        if (k == 0 || k >= sizeof(key))
            return refuse(why, whylen, SMTP_PARSE_SYNTAX, "5.5.4 Syntax: %s",
                          usage);
        memcpy(key, p, k);
        key[k] = 0;
        val = k < n ? dup_n(p + k + 1, n - k - 1) : NULL;
        rc = c->verb == SMTP_CMD_MAIL ? mail_param(&ps, key, val, why, whylen)
                                      : rcpt_param(&ps, key, val, why, whylen);
        free(val);
        if (rc != 0)
            return rc;
        p += n;
    }
    return 0;
}

/* MAIL FROM:<path> [params] or RCPT TO:<path> [params]. */
static int path_command(struct smtp_command *c, const char *args, char *why,
                        size_t whylen)
{
    int mail = c->verb == SMTP_CMD_MAIL;
    const char *usage = mail ? "MAIL FROM:<address>" : "RCPT TO:<address>";
    const char *word = mail ? "FROM:" : "TO:";
    const char *p, *end;

    if (strncasecmp(args, word, strlen(word)) != 0)
        return refuse(why, whylen, SMTP_PARSE_SYNTAX, "5.5.4 Syntax: %s",
                      usage);
    p = args + strlen(word);
    while (*p == ' ')
        p++;
    if ((end = path_parse(p, &c->path)) == NULL)
        return refuse(why, whylen, SMTP_PARSE_SYNTAX, "5.5.4 Syntax: %s",
                      usage);
    if ((size_t)(end - p) > PATH_MAX_OCTETS ||
        (c->path[0] == 0 ? !mail : !smtp_address_valid(c->path)))
        return refuse(why, whylen, SMTP_PARSE_ADDRESS, "%s",
                      mail ? "5.1.7 Bad sender address syntax"
                           : "5.1.3 Bad recipient address syntax");
    return params_parse(c, end, why, whylen, usage);
}

/* A node for ETRN: a domain, "@domain" or "#queue", nothing else. */
static int etrn_node_ok(const char *s)
{
    if (s == NULL || *s == 0)
        return 0;
    for (const char *p = s + (*s == '@' || *s == '#'); *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_[]:", *p))
            return 0;
    return s[(*s == '@' || *s == '#')] != 0;
}

static int bdat_parse(struct smtp_command *c, const char *args)
{
    const char *p = args;
    char *end;

    if (!isdigit((unsigned char)*p) || strspn(p, "0123456789") > 19)
        return -1;
    errno = 0;
    c->chunk = strtoull(p, &end, 10);
    if (errno != 0 || (*end != 0 && *end != ' ' && *end != '\t'))
        return -1;
    /* white space at the end is forgiven: a chunk size is too precious */
    end += strspn(end, " \t");
    if (strncasecmp(end, "LAST", 4) == 0 &&
        end[4 + strspn(end + 4, " \t")] == 0)
        c->last = 1;
    else if (*end != 0)
        return -1;
    return 0;
}

/* "mechanism [initial-response]": two words at most. */
static int auth_parse(struct smtp_command *c, const char *p)
{
    size_t n = strcspn(p, " \t");
    const char *r = p + n;

    if (n == 0)
        return -1;
    c->arg = dup_n(p, n);
    r += strspn(r, " \t");
    n = strcspn(r, " \t");
    if (n > 0)
        c->path = dup_n(r, n);
    r += n;
    return r[strspn(r, " \t")] == 0 ? 0 : -1;
}

int smtp_command_parse(const char *line, size_t len, struct smtp_command *cmd,
                       char *why, size_t whylen)
{
    const char *name = "";
    char *copy, *args;
    size_t vlen;
    int rc = 0;

    memset(cmd, 0, sizeof(*cmd));
    if (memchr(line, 0, len) != NULL)
        return refuse(why, whylen, SMTP_PARSE_SYNTAX,
                      "5.5.2 Error: NUL character in command");
    copy = dup_n(line, len);
    vlen = strcspn(copy, " ");
    args = copy + vlen;
    while (*args == ' ')
        args++;
    for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
        if (strlen(verbs[i].name) == vlen &&
            strncasecmp(copy, verbs[i].name, vlen) == 0) {
            cmd->verb = verbs[i].verb;
            name = verbs[i].name;
        }
    switch (cmd->verb) {
    case SMTP_CMD_UNKNOWN:
        rc = refuse(why, whylen, SMTP_PARSE_UNKNOWN,
                    "5.5.2 Error: command not recognized");
        break;
    case SMTP_CMD_EHLO:
    case SMTP_CMD_HELO:
        if ((cmd->arg = trimmed(args)) == NULL)
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX,
                        "5.5.4 Syntax: %s hostname",
                        cmd->verb == SMTP_CMD_EHLO ? "EHLO" : "HELO");
        break;
    case SMTP_CMD_MAIL:
    case SMTP_CMD_RCPT:
        rc = path_command(cmd, args, why, whylen);
        break;
    case SMTP_CMD_DATA:
    case SMTP_CMD_RSET:
    case SMTP_CMD_QUIT:
    case SMTP_CMD_STARTTLS:
        if (*args)
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX, "5.5.4 Syntax: %s",
                        name);
        break;
    case SMTP_CMD_NOOP:
        break;
    case SMTP_CMD_VRFY:
        if ((cmd->arg = trimmed(args)) == NULL)
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX,
                        "5.5.4 Syntax: VRFY address");
        break;
    case SMTP_CMD_HELP:
        cmd->arg = trimmed(args);
        break;
    case SMTP_CMD_ETRN:
        cmd->arg = trimmed(args);
        if (!etrn_node_ok(cmd->arg))
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX,
                        "5.5.4 Syntax: ETRN domain");
        break;
    case SMTP_CMD_AUTH:
        if (auth_parse(cmd, args) < 0)
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX,
                        "5.5.4 Syntax: AUTH mechanism");
        break;
    case SMTP_CMD_BDAT:
        if (bdat_parse(cmd, args) < 0)
            rc = refuse(why, whylen, SMTP_PARSE_SYNTAX,
                        "5.5.4 Syntax: BDAT size [LAST]");
        break;
    }
    free(copy);
    return rc;
}

void smtp_command_free(struct smtp_command *cmd)
{
    free(cmd->arg);
    free(cmd->path);
    free(cmd->envid);
    free(cmd->orcpt);
    memset(cmd, 0, sizeof(*cmd));
}
