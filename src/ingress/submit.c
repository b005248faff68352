/*
 * NAME
 *	submit 3 - read and prepare a locally submitted message
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	int	submit_read(FILE *in, int dot_ends, uint64_t size_limit,
 *			struct submit_input *out, char *why, size_t whylen)
 *	void	submit_input_free(struct submit_input *msg)
 *
 *	size_t	submit_header_end(const struct submit_input *msg,
 *			size_t *body)
 *	size_t	submit_header_get(const struct submit_input *msg,
 *			const char *name, char ***values)
 *	void	submit_header_values_free(char **values)
 *	size_t	submit_header_remove(struct submit_input *msg,
 *			const char *name)
 *
 *	int	submit_recipients_from_headers(const struct submit_input *msg,
 *			struct smtp_addr_list *out, char *why, size_t whylen)
 *	void	submit_remove_bcc(struct submit_input *msg)
 *	int	submit_add_missing_headers(struct submit_input *msg,
 *			const char *sender, const char *full_name,
 *			const char *hostname, time_t now, const char *queue_id)
 *
 *	int	submit_parse_notify(const char *text, unsigned *bits)
 *	int	submit_parse_ret(const char *text, enum spool_ret *ret)
 *	int	submit_envid_valid(const char *envid)
 * DESCRIPTION
 *	What "sluice sendmail" does to a message between the program that
 *	writes it and the spool.
 *
 *	submit_read() reads the message from in, a line at a time (so that
 *	a writer that waits for our exit status after its last line does
 *	not wait forever): a line ends with LF, one CR before the LF is
 *	removed, and every line is stored with CRLF, a last line without
 *	LF too. Nothing is unstuffed or stuffed. With dot_ends (sendmail
 *	without -i), a line holding a single "." ends the input and
 *	nothing after it is read. size_limit (0: none) bounds the stored
 *	size, CRLFs included, which is what SMTP's SIZE counts; reading
 *	stops as soon as the limit is passed, with SUBMIT_DATAERR
 *	"message too big: more than N bytes". A NUL byte is SUBMIT_DATAERR
 *	"message contains a NUL byte"; a read error is SUBMIT_TEMPFAIL
 *	"error reading the message: REASON". On error out is left empty.
 *	submit_input_free() frees the data; a caller may take msg->data
 *	(for the spool's body) and set it to NULL instead.
 *
 *	Headers. The header section is the longest run of lines from the
 *	start that are header fields ("Name:" with a name of printable
 *	ASCII other than ":", white space allowed before the colon) or
 *	continuation lines (starting with a space or a tab, after a
 *	field). It ends at the first empty line, which separates it from
 *	the body, or, as Postfix does with broken input, at the first line
 *	that is neither, which then starts the body; with neither, the
 *	whole message is headers. submit_header_end() returns the length
 *	of the header section and sets *body (if not NULL) to where the
 *	body starts: past the empty line, or at the first non-header line,
 *	or at the end.
 *
 *	submit_header_get() finds the fields called name (compared without
 *	regard to case) and returns how many, with *values set to a
 *	NULL-terminated array of their bodies, unfolded (every CRLF of a
 *	continuation removed) and without leading or trailing white space,
 *	or to NULL when there is none; submit_header_values_free() frees
 *	it. submit_header_remove() removes every such field with its
 *	continuation lines and returns how many it removed.
 *
 *	submit_recipients_from_headers() is "sendmail -t": it appends to
 *	out the addresses of every To:, Cc: and Bcc: field, in the order
 *	of the fields; if the message has a Resent-To:, Resent-Cc: or
 *	Resent-Bcc: field, it takes the addresses of those instead (RFC
 *	5322 section 3.6.6: the resent fields say where the message goes
 *	now). Bare local parts stay bare. On a syntax error it returns -1
 *	with "FIELD: REASON" in why (FIELD as the message spells it) and
 *	out is left as it was. submit_remove_bcc() removes every Bcc: and
 *	Resent-Bcc: field.
 *
 *	submit_add_missing_headers() completes a locally submitted
 *	message, as Postfix's cleanup does: when the message has no From:
 *	field it adds "From: sender", or "From: Full Name <sender>" with a
 *	non-empty full_name (sendmail -F); the name is written as atoms
 *	when it can be, else as a quoted string, and with 8-bit bytes as
 *	RFC 2047 encoded words (smtp_compose_mailbox()); it
 *	is cut to SUBMIT_FULL_NAME_MAX bytes and control characters become
 *	spaces. The null sender ("") is written MAILER-DAEMON@hostname.
 *	Without Date: it adds the local time of now in RFC 5322 form with
 *	a numeric zone ("Fri, 22 Nov 2024 09:05:03 +0100"); without
 *	Message-ID: it adds "<queue_id@hostname>". When the message has
 *	any Resent-* field these are Resent-From:, Resent-Date: and
 *	Resent-Message-ID:, checked and added in place of the others. The
 *	new fields go at the end of the header section, in that order.
 *	When the header section ended at a line that is not a header, an
 *	empty line is put before that line, so that the body is not read
 *	as broken headers. Nothing else is added (Received: is for SMTP
 *	ingress). It returns 0, or -1 with errno EINVAL when sender,
 *	hostname or queue_id holds a control character, hostname or
 *	queue_id a space or nothing, or the time cannot be converted; the
 *	message is then unchanged.
 *
 *	submit_parse_notify() parses sendmail's -N: "never", or words of
 *	"success", "failure", "delay", any case, separated by commas or
 *	white space, into SPOOL_NOTIFY_* bits; "never" must be alone.
 *	submit_parse_ret() parses -R: "full" or "hdrs", any case. Both
 *	return 0 or -1. submit_envid_valid() tells (1 or 0) whether an
 *	-V envelope id is 1 to 100 printable ASCII characters without
 *	spaces (RFC 3461 section 4.4).
 */

#include "ingress/ingress.h"
#include "ingress/ingress_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---------------------------------------------------------------- read */

static void input_reset(struct submit_input *msg)
{
    free(msg->data);
    msg->data = NULL;
    msg->len = msg->size = 0;
}

void submit_input_free(struct submit_input *msg)
{
    input_reset(msg);
}

static void input_put(struct submit_input *msg, const char *data, size_t len)
{
    struct util_buf b = {msg->data, msg->len, msg->size};

    util_buf_add(&b, data, len);
    msg->data = b.data;
    msg->len = b.len;
    msg->size = b.size;
}

/* Is the line at start (not yet terminated) the lone "." that ends it? */
static int line_is_dot(const struct submit_input *msg, size_t start)
{
    return msg->len - start == 1 && msg->data[start] == '.';
}

/* The line from start is complete: strip one CR, store it with CRLF. */
static int line_end(struct submit_input *msg, size_t start, int dot_ends)
{
    if (msg->len > start && msg->data[msg->len - 1] == '\r')
        msg->len--;
    if (dot_ends && line_is_dot(msg, start)) {
        msg->len = start;
        msg->data[start] = 0;
        return 1;
    }
    input_put(msg, "\r\n", 2);
    return 0;
}

/* Give up reading: unlock in, leave out empty. */
static int read_fail(FILE *in, struct submit_input *out, int status)
{
    funlockfile(in);
    input_reset(out);
    return status;
}

static int too_big(FILE *in, struct submit_input *out, uint64_t size_limit,
                   char *why, size_t whylen)
{
    snprintf(why, whylen, "message too big: more than %llu bytes",
             (unsigned long long)size_limit);
    return read_fail(in, out, SUBMIT_DATAERR);
}

int submit_read(FILE *in, int dot_ends, uint64_t size_limit,
                struct submit_input *out, char *why, size_t whylen)
{
    size_t start = 0; /* where the current line begins in out */
    int ended = 0;
    int ch;
    char c;

    memset(out, 0, sizeof(*out));
    input_put(out, "", 0);
    flockfile(in);
    while (!ended && (ch = getc_unlocked(in)) != EOF) {
        if (ch == 0) {
            snprintf(why, whylen, "message contains a NUL byte");
            return read_fail(in, out, SUBMIT_DATAERR);
        }
        if (ch == '\n') {
            ended = line_end(out, start, dot_ends);
            start = out->len;
        } else {
            c = (char)ch;
            input_put(out, &c, 1);
        }
        /*
         * A line being read may still lose a CR, or be the "." that
         * is not stored: only 2 bytes over the limit is surely over.
         */
        if (size_limit > 0 && (out->len > size_limit + 2 ||
                               (start == out->len && out->len > size_limit)))
            return too_big(in, out, size_limit, why, whylen);
    }
    if (!ended && ferror(in)) {
        snprintf(why, whylen, "error reading the message: %s", strerror(errno));
        return read_fail(in, out, SUBMIT_TEMPFAIL);
    }
    if (!ended && out->len > start)
        line_end(out, start, dot_ends);
    if (size_limit > 0 && out->len > size_limit)
        return too_big(in, out, size_limit, why, whylen);
    funlockfile(in);
    return SUBMIT_OK;
}

/* ------------------------------------------------------------- headers */

/* One header field: its name, colon, and end past its last line. */
struct field {
    size_t start;
    size_t name_len;
    size_t colon;
    size_t end;
};

/* Offset past the LF of the line at pos, or the end of the data. */
static size_t next_line(const char *data, size_t len, size_t pos)
{
    const char *nl = memchr(data + pos, '\n', len - pos);

    return nl ? (size_t)(nl - data) + 1 : len;
}

static int is_wsp(int ch)
{
    return ch == ' ' || ch == '\t';
}

/*
 * If the line [pos, end) is a header field line, return the length of
 * its name and set *colon; else return 0.
 */
static size_t header_name(const char *data, size_t pos, size_t end,
                          size_t *colon)
{
    size_t i = pos;
    size_t name_end;

    while (i < end && data[i] > ' ' && data[i] < 0x7f && data[i] != ':')
        i++;
    if (i == pos)
        return 0;
    name_end = i;
    while (i < end && is_wsp(data[i]))
        i++;
    if (i == end || data[i] != ':')
        return 0;
    *colon = i;
    return name_end - pos;
}

static int is_empty_line(const char *data, size_t pos, size_t end)
{
    return (end - pos == 2 && data[pos] == '\r') || end - pos == 1;
}

size_t submit_header_end(const struct submit_input *msg, size_t *body)
{
    const char *data = msg->data;
    size_t pos = 0;
    size_t end;
    size_t colon;
    int first = 1;

    for (; pos < msg->len; pos = end, first = 0) {
        end = next_line(data, msg->len, pos);
        if (data[end - 1] == '\n' && is_empty_line(data, pos, end)) {
            if (body != NULL)
                *body = end;
            return pos;
        }
        if (!first && is_wsp(data[pos]))
            continue;
        if (header_name(data, pos, end, &colon) == 0)
            break;
    }
    if (body != NULL)
        *body = pos;
    return pos;
}

/* The field at *pos (< hdr_end); moves *pos past it. */
static void field_at(const struct submit_input *msg, size_t hdr_end,
                     size_t *pos, struct field *f)
{
    size_t end = next_line(msg->data, msg->len, *pos);

    f->start = *pos;
    f->name_len = header_name(msg->data, *pos, end, &f->colon);
    if (f->name_len == 0)
        ingress_panic("header section: no field at offset %zu", *pos);
    while (end < hdr_end && is_wsp(msg->data[end]))
        end = next_line(msg->data, msg->len, end);
    f->end = end;
    *pos = end;
}

static int field_is(const struct submit_input *msg, const struct field *f,
                    const char *name)
{
    return strlen(name) == f->name_len &&
           strncasecmp(msg->data + f->start, name, f->name_len) == 0;
}

/* The next field called name at or after *pos: 1 with it in f, or 0. */
static int field_next(const struct submit_input *msg, size_t hdr_end,
                      size_t *pos, const char *name, struct field *f)
{
    while (*pos < hdr_end) {
        field_at(msg, hdr_end, pos, f);
        if (field_is(msg, f, name))
            return 1;
    }
    return 0;
}

/* Does the message have a field whose name starts with prefix? */
static int has_field_prefix(const struct submit_input *msg, const char *prefix)
{
    size_t hdr_end = submit_header_end(msg, NULL);
    size_t plen = strlen(prefix);
    size_t pos = 0;
    struct field f;

    while (pos < hdr_end) {
        field_at(msg, hdr_end, &pos, &f);
        if (f.name_len >= plen &&
            strncasecmp(msg->data + f.start, prefix, plen) == 0)
            return 1;
    }
    return 0;
}

static int has_field(const struct submit_input *msg, const char *name)
{
    size_t pos = 0;
    struct field f;

    return field_next(msg, submit_header_end(msg, NULL), &pos, name, &f);
}

/* The body of field f, unfolded and trimmed, in a new string. */
static char *field_value(const struct submit_input *msg, const struct field *f)
{
    const char *s = msg->data + f->colon + 1;
    const char *e = msg->data + f->end;
    char *value = xmalloc((size_t)(e - s) + 1);
    size_t n = 0;

    for (; s < e; s++) {
        if (*s == '\n' || (*s == '\r' && s + 1 < e && s[1] == '\n'))
            continue;
        value[n++] = *s;
    }
    while (n > 0 && is_wsp(value[n - 1]))
        n--;
    value[n] = 0;
    for (s = value; is_wsp(*s); s++)
        ;
    memmove(value, s, n + 1 - (size_t)(s - value));
    return value;
}

size_t submit_header_get(const struct submit_input *msg, const char *name,
                         char ***values)
{
    size_t hdr_end = submit_header_end(msg, NULL);
    size_t pos = 0;
    size_t count = 0;
    struct field f;

    *values = NULL;
    while (field_next(msg, hdr_end, &pos, name, &f)) {
        *values = xrealloc(*values, (count + 2) * sizeof(**values));
        (*values)[count++] = field_value(msg, &f);
        (*values)[count] = NULL;
    }
    return count;
}

void submit_header_values_free(char **values)
{
    char **v;

    if (values == NULL)
        return;
    for (v = values; *v != NULL; v++)
        free(*v);
    free(values);
}

/* Cut [start, end) out of the message. */
static void input_cut(struct submit_input *msg, size_t start, size_t end)
{
    memmove(msg->data + start, msg->data + end, msg->len - end + 1);
    msg->len -= end - start;
}

/* Put len bytes at offset at. */
static void input_insert(struct submit_input *msg, size_t at, const char *data,
                         size_t len)
{
    size_t tail = msg->len - at;

    input_put(msg, data, len); /* makes room */
    memmove(msg->data + at + len, msg->data + at, tail);
    memcpy(msg->data + at, data, len);
}

size_t submit_header_remove(struct submit_input *msg, const char *name)
{
    size_t hdr_end = submit_header_end(msg, NULL);
    size_t pos = 0;
    size_t removed = 0;
    struct field f;

    while (field_next(msg, hdr_end, &pos, name, &f)) {
        input_cut(msg, f.start, f.end);
        hdr_end -= f.end - f.start;
        pos = f.start;
        removed++;
    }
    return removed;
}

void submit_remove_bcc(struct submit_input *msg)
{
    submit_header_remove(msg, "Bcc");
    submit_header_remove(msg, "Resent-Bcc");
}

/* ------------------------------------------------------------------ -t */

static const char *const plain_recipient_fields[] = {"To", "Cc", "Bcc", NULL};
static const char *const resent_recipient_fields[] = {"Resent-To", "Resent-Cc",
                                                      "Resent-Bcc", NULL};

static int field_in(const struct submit_input *msg, const struct field *f,
                    const char *const *names)
{
    for (; *names != NULL; names++)
        if (field_is(msg, f, *names))
            return 1;
    return 0;
}

int submit_recipients_from_headers(const struct submit_input *msg,
                                   struct smtp_addr_list *out, char *why,
                                   size_t whylen)
{
    const char *const *names = plain_recipient_fields;
    struct smtp_addr_list found = {0};
    size_t hdr_end = submit_header_end(msg, NULL);
    size_t pos = 0;
    size_t i;
    struct field f;
    char reason[512];
    char *value;
    int status = 0;

    while (pos < hdr_end) {
        field_at(msg, hdr_end, &pos, &f);
        if (field_in(msg, &f, resent_recipient_fields))
            names = resent_recipient_fields;
    }
    for (pos = 0; pos < hdr_end && status == 0;) {
        field_at(msg, hdr_end, &pos, &f);
        if (!field_in(msg, &f, names))
            continue;
        value = field_value(msg, &f);
        status = smtp_address_list_parse(value, strlen(value), &found, reason,
                                         sizeof(reason));
        if (status < 0)
            snprintf(why, whylen, "%.*s: %s", (int)f.name_len,
                     msg->data + f.start, reason);
        free(value);
    }
    for (i = 0; status == 0 && i < found.count; i++)
        smtp_addr_list_add(out, found.addr[i]);
    smtp_addr_list_free(&found);
    return status;
}

/* ------------------------------------------------------ missing headers */

/*
 * What may go into a header field as given: no control character (a CR
 * or LF would start a field of the caller's choosing), and for a host
 * name or queue id no space and not nothing.
 */
static int header_safe(const char *s, int is_token)
{
    if (*s == 0 && is_token)
        return 0;
    for (; *s != 0; s++)
        if ((unsigned char)*s < ' ' || *s == 0x7f || (is_token && *s == ' '))
            return 0;
    return 1;
}

/*
 * The -F name as the phrase of a mailbox: cut between UTF-8 characters
 * at SUBMIT_FULL_NAME_MAX bytes, control characters made spaces, the
 * ends trimmed; NULL when nothing is left. smtp_compose_mailbox()
 * writes it as atoms, a quoted string or RFC 2047 encoded words.
 */
static char *full_name_phrase(const char *full_name)
{
    size_t n = strnlen(full_name, SUBMIT_FULL_NAME_MAX);
    char *name = xstrndup(full_name, n);
    char *p, *phrase = NULL;
    size_t i;

    if (full_name[n] != 0)
        while (n > 0 && ((unsigned char)full_name[n] & 0xc0) == 0x80)
            name[--n] = 0;
    for (i = 0; i < n; i++)
        if ((unsigned char)name[i] < ' ' || name[i] == 0x7f)
            name[i] = ' ';
    while (n > 0 && name[n - 1] == ' ')
        name[--n] = 0;
    for (p = name; *p == ' '; p++)
        ;
    if (*p != 0)
        phrase = xstrdup(p);
    free(name);
    return phrase;
}

static void add_from(struct util_buf *b, const char *field, const char *sender,
                     const char *full_name, const char *hostname)
{
    char *phrase = full_name != NULL ? full_name_phrase(full_name) : NULL;
    char *addr;

    if (*sender)
        addr = xstrdup(sender);
    else {
        addr = xmalloc(strlen(hostname) + sizeof("MAILER-DAEMON@"));
        sprintf(addr, "MAILER-DAEMON@%s", hostname);
    }
    smtp_compose_mailbox(b, field, phrase, addr);
    free(phrase);
    free(addr);
}

static int add_date(struct util_buf *b, const char *field, time_t now)
{
    char date[SMTP_DATE_MAX];

    if (smtp_date(date, sizeof(date), now) < 0)
        return -1;
    util_buf_printf(b, "%s: %s\r\n", field, date);
    return 0;
}

int submit_add_missing_headers(struct submit_input *msg, const char *sender,
                               const char *full_name, const char *hostname,
                               time_t now, const char *queue_id)
{
    struct util_buf add = UTIL_BUF_INIT;
    const char *resent;
    char name[32];
    size_t hdr_end;
    size_t body;

    if (!header_safe(sender, 0) || !header_safe(hostname, 1) ||
        !header_safe(queue_id, 1)) {
        errno = EINVAL;
        return -1;
    }
    resent = has_field_prefix(msg, "Resent-") ? "Resent-" : "";
    snprintf(name, sizeof(name), "%sFrom", resent);
    if (!has_field(msg, name))
        add_from(&add, name, sender, full_name, hostname);
    snprintf(name, sizeof(name), "%sDate", resent);
    if (!has_field(msg, name) && add_date(&add, name, now) < 0) {
        util_buf_free(&add);
        return -1;
    }
    snprintf(name, sizeof(name), "%sMessage-ID", resent);
    if (!has_field(msg, name))
        util_buf_printf(&add, "%s: <%s@%s>\r\n", name, queue_id, hostname);
    hdr_end = submit_header_end(msg, &body);
    if (hdr_end == body && body < msg->len)
        util_buf_add(&add, "\r\n", 2);
    if (add.len > 0)
        input_insert(msg, hdr_end, add.data, add.len);
    util_buf_free(&add);
    return 0;
}

/* ------------------------------------------------------- DSN arguments */

int submit_parse_notify(const char *text, unsigned *bits)
{
    static const struct {
        const char *word;
        unsigned bit;
    } words[] = {
        {"never", SPOOL_NOTIFY_NEVER},
        {"success", SPOOL_NOTIFY_SUCCESS},
        {"failure", SPOOL_NOTIFY_FAILURE},
        {"delay", SPOOL_NOTIFY_DELAY},
    };
    const char *sep = ", \t";
    unsigned found = 0;
    size_t n;
    size_t i;

    for (text += strspn(text, sep); *text != 0; text += strspn(text, sep)) {
        n = strcspn(text, sep);
        for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
            if (strlen(words[i].word) == n &&
                strncasecmp(text, words[i].word, n) == 0)
                break;
        if (i == sizeof(words) / sizeof(words[0]))
            return -1;
        found |= words[i].bit;
        text += n;
    }
    if (found == 0 ||
        ((found & SPOOL_NOTIFY_NEVER) && found != SPOOL_NOTIFY_NEVER))
        return -1;
    *bits = found;
    return 0;
}

int submit_parse_ret(const char *text, enum spool_ret *ret)
{
    if (strcasecmp(text, "full") == 0)
        *ret = SPOOL_RET_FULL;
    else if (strcasecmp(text, "hdrs") == 0)
        *ret = SPOOL_RET_HDRS;
    else
        return -1;
    return 0;
}

int submit_envid_valid(const char *envid)
{
    size_t n;

    for (n = 0; envid[n] != 0; n++)
        if (envid[n] <= ' ' || envid[n] >= 0x7f || n >= SUBMIT_ENVID_MAX)
            return 0;
    return n > 0;
}
