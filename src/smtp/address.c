/*
 * NAME
 *	address 3 - RFC 5322 address lists, RFC 5321 envelope addresses
 * SYNOPSIS
 *	#include "smtp/smtp.h"
#include "util/util.h"
 *
 *	int	smtp_address_list_parse(const char *text, size_t len,
 *			struct smtp_addr_list *out, char *why, size_t whylen)
 *	int	smtp_address_valid(const char *addr)
 *	int	smtp_domain_valid(const char *domain)
 *	int	smtp_helo_name_valid(const char *name)
 *
 *	void	smtp_addr_list_add(struct smtp_addr_list *l, const char *addr)
 *	void	smtp_addr_list_uniq(struct smtp_addr_list *l)
 *	void	smtp_addr_list_free(struct smtp_addr_list *l)
 * DESCRIPTION
 *	smtp_address_list_parse() is a tokenizer and a recursive-descent
 *	parser without recursion (groups do not nest, comments are counted)
 *	for the grammar of RFC 5322 section 3.4 with the obsolete forms of
 *	section 4.4 that old software still writes:
 *
 *	    address-list = [address] *("," [address])
 *	    address      = mailbox / group
 *	    mailbox      = [phrase] "<" [route] addr-spec ">" / addr-spec
 *	    group        = phrase ":" [mailbox *("," [mailbox])] ";"
 *	    route        = "@" domain *("," ["@" domain]) ":"
 *	    addr-spec    = word *("." word) ["@" domain]
 *	    domain       = atom *("." atom) / "[" dtext "]"
 *	    phrase       = 1*(word / ".")
 *
 *	White space, line folding (CR and LF count as white space) and
 *	comments, nested, may appear between any two tokens and are
 *	dropped. Atoms may hold 8-bit bytes (RFC 6532). An addr-spec comes
 *	out as its words and atoms joined by dots, quoted strings and
 *	domain literals as written minus any CR or LF. Empty list elements
 *	(", ,") are skipped, as the obsolete syntax allows.
 *
 *	Where the standard is strict and real mail is not, the parser
 *	accepts: a bare local part without "@domain" (also inside angle
 *	brackets), and a group left open at the end of the text
 *	("undisclosed-recipients:"). It rejects everything else: a name
 *	without an address ("John Smith,"), "<>", a nested group, a local
 *	part with an empty word ("a..b@x"), junk after an address, and
 *	unterminated quoted strings, comments or domain literals. The
 *	reason reads "WHAT at "TEXT"" where TEXT is the text from the
 *	offending place on (cut after 40 bytes, unprintable bytes as
 *	\xHH), or "WHAT at end of text".
 *
 *	smtp_address_valid() checks one envelope address by the rules of
 *	RFC 5321 section 4.1.2, relaxed to allow 8-bit bytes (RFC 6531)
 *	and "_" in domain labels, which real host names contain.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Bytes of the offending text quoted in a reason. */
#define EXCERPT_MAX 40

/* Longest domain label (RFC 1035) and domain. */
#define LABEL_MAX 63

/* Append s[0..n) without CR and LF: what unfolding leaves of a token. */
static void buf_add_unfolded(struct util_buf *b, const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (s[i] != '\r' && s[i] != '\n')
            util_buf_add(b, s + i, 1);
}

/* The list takes ownership of addr. */
static void list_append(struct smtp_addr_list *l, char *addr)
{
    if (l->count == l->size) {
        l->size = l->size ? 2 * l->size : 8;
        l->addr = xrealloc(l->addr, l->size * sizeof(*l->addr));
    }
    l->addr[l->count++] = addr;
}

void smtp_addr_list_add(struct smtp_addr_list *l, const char *addr)
{
    list_append(l, xstrdup(addr));
}

/* Quadratic, but lists are short; keeping the order matters more. */
void smtp_addr_list_uniq(struct smtp_addr_list *l)
{
    size_t i;
    size_t j;
    size_t kept = 0;

    for (i = 0; i < l->count; i++) {
        for (j = 0; j < kept; j++)
            if (strcmp(l->addr[j], l->addr[i]) == 0)
                break;
        if (j < kept)
            free(l->addr[i]);
        else
            l->addr[kept++] = l->addr[i];
    }
    l->count = kept;
}

/* Drop the addresses from index keep on. */
static void list_truncate(struct smtp_addr_list *l, size_t keep)
{
    while (l->count > keep)
        free(l->addr[--l->count]);
}

void smtp_addr_list_free(struct smtp_addr_list *l)
{
    list_truncate(l, 0);
    free(l->addr);
    l->addr = NULL;
    l->size = 0;
}

/*
 * The tokenizer. Characters are classified once, as RFC 5322 does:
 * specials, white space, controls, and atext (everything else,
 * including 8-bit bytes).
 */
enum tok_kind {
    TOK_END,
    TOK_ATOM,    /* 1*atext */
    TOK_QUOTED,  /* "..." with the quotes */
    TOK_LITERAL, /* [...] with the brackets */
    TOK_SPECIAL, /* one of < > : ; @ , . */
};

struct tok {
    enum tok_kind kind;
    int ch;            /* TOK_SPECIAL: which */
    const char *start; /* raw text */
    size_t len;
};

struct parse {
    const char *p;        /* next unread byte */
    const char *end;      /* end of the text */
    struct tok tok;       /* the current token */
    struct util_buf word; /* local part or phrase being read */
    struct util_buf addr; /* addr-spec being built */
    struct smtp_addr_list *out;
    char *why;
    size_t whylen;
};

static int is_wsp(int ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static int is_special(int ch)
{
    return ch != 0 && strchr("()<>[]:;@\\,.\"", ch) != NULL;
}

static int is_ctl(int ch)
{
    return ch < 0x20 || ch == 0x7f;
}

static int is_atext(int ch)
{
    return !is_ctl(ch) && ch != ' ' && !is_special(ch);
}

/* Leave in ps->why "WHAT at "TEXT..."" or "WHAT at end of text". */
static int parse_fail(struct parse *ps, const char *at, const char *what)
{
    char quoted[4 * EXCERPT_MAX + 8];
    size_t used = 0;
    const char *s;
    unsigned char ch;

    if (at >= ps->end) {
        snprintf(ps->why, ps->whylen, "%s at end of text", what);
        return -1;
    }
    quoted[used++] = '"';
    for (s = at; s < ps->end && s - at < EXCERPT_MAX; s++) {
        ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            used += (size_t)sprintf(quoted + used, "\\%c", ch);
        else if (ch < 0x20 || ch >= 0x7f)
            used += (size_t)sprintf(quoted + used, "\\x%02x", ch);
        else
            quoted[used++] = (char)ch;
    }
    if (s < ps->end)
        used += (size_t)sprintf(quoted + used, "...");
    quoted[used++] = '"';
    quoted[used] = 0;
    snprintf(ps->why, ps->whylen, "%s at %s", what, quoted);
    return -1;
}

/* Skip white space and comments; comments nest and hold quoted-pairs. */
static int skip_cfws(struct parse *ps)
{
    const char *open;
    int depth;

    for (;;) {
        while (ps->p < ps->end && is_wsp((unsigned char)*ps->p))
            ps->p++;
        if (ps->p == ps->end || *ps->p != '(')
            return 0;
        open = ps->p++;
        for (depth = 1; depth > 0; ps->p++) {
            if (ps->p == ps->end)
                return parse_fail(ps, open, "unterminated comment");
            if (*ps->p == '\\' && ps->p + 1 < ps->end)
                ps->p++;
            else if (*ps->p == '(')
                depth++;
            else if (*ps->p == ')')
                depth--;
        }
    }
}

/* Scan a quoted string or domain literal up to its closing byte. */
static int scan_delimited(struct parse *ps, enum tok_kind kind, int close,
                          const char *what)
{
    const char *s = ps->p + 1;

    for (; s < ps->end && *s != close; s++) {
        if (*s == 0)
            return parse_fail(ps, s, "NUL byte");
        if (kind == TOK_LITERAL && *s == '[')
            return parse_fail(ps, s, "\"[\" inside a domain literal");
        if (*s == '\\' && s + 1 < ps->end)
            s++;
    }
    if (s == ps->end)
        return parse_fail(ps, ps->p, what);
    ps->tok.kind = kind;
    ps->tok.start = ps->p;
    ps->tok.len = (size_t)(s + 1 - ps->p);
    ps->p = s + 1;
    return 0;
}

/* Read the next token into ps->tok. */
static int lex_next(struct parse *ps)
{
    int ch;

    if (skip_cfws(ps) < 0)
        return -1;
    ps->tok.start = ps->p;
    ps->tok.len = 0;
    if (ps->p == ps->end) {
        ps->tok.kind = TOK_END;
        return 0;
    }
    ch = (unsigned char)*ps->p;
    if (ch == '"')
        return scan_delimited(ps, TOK_QUOTED, '"',
                              "unterminated quoted string");
    if (ch == '[')
        return scan_delimited(ps, TOK_LITERAL, ']',
                              "unterminated domain literal");
    if (ch != 0 && strchr("<>:;@,.", ch) != NULL) {
        ps->tok.kind = TOK_SPECIAL;
        ps->tok.ch = ch;
        ps->tok.len = 1;
        ps->p++;
        return 0;
    }
    if (!is_atext(ch))
        return parse_fail(ps, ps->p, "unexpected character");
    while (ps->p < ps->end && is_atext((unsigned char)*ps->p))
        ps->p++;
    ps->tok.kind = TOK_ATOM;
    ps->tok.len = (size_t)(ps->p - ps->tok.start);
    return 0;
}

static int tok_is(const struct parse *ps, int ch)
{
    return ps->tok.kind == TOK_SPECIAL && ps->tok.ch == ch;
}

static int tok_is_word(const struct parse *ps)
{
    return ps->tok.kind == TOK_ATOM || ps->tok.kind == TOK_QUOTED;
}

/*
 * What read_words() saw: nothing, a valid local part (word *("."
 * word)), or a phrase that cannot be one ("John Smith", "a..b").
 */
enum words {
    WORDS_NONE,
    WORDS_LOCAL,
    WORDS_PHRASE,
};

/* Read 1*(word / ".") into ps->word, joined as a local part would be. */
static int read_words(struct parse *ps, enum words *what)
{
    int last = 0; /* 0: nothing, 'w': a word, '.': a dot */
    int local = 1;

    util_buf_reset(&ps->word);
    while (tok_is_word(ps) || tok_is(ps, '.')) {
        if (tok_is(ps, '.')) {
            if (last != 'w')
                local = 0;
            util_buf_add(&ps->word, ".", 1);
            last = '.';
        } else {
            if (last == 'w')
                local = 0;
            buf_add_unfolded(&ps->word, ps->tok.start, ps->tok.len);
            last = 'w';
        }
        if (lex_next(ps) < 0)
            return -1;
    }
    if (last == 0)
        *what = WORDS_NONE;
    else
        *what = local && last == 'w' ? WORDS_LOCAL : WORDS_PHRASE;
    return 0;
}

/* domain = atom *("." atom) / domain-literal; appended to ps->addr. */
static int read_domain(struct parse *ps)
{
    if (ps->tok.kind == TOK_LITERAL) {
        buf_add_unfolded(&ps->addr, ps->tok.start, ps->tok.len);
        return lex_next(ps);
    }
    for (;;) {
        if (ps->tok.kind != TOK_ATOM)
            return parse_fail(ps, ps->tok.start, "expected a domain");
        util_buf_add(&ps->addr, ps->tok.start, ps->tok.len);
        if (lex_next(ps) < 0)
            return -1;
        if (!tok_is(ps, '.'))
            return 0;
        util_buf_add(&ps->addr, ".", 1);
        if (lex_next(ps) < 0)
            return -1;
    }
}

/* After a local part in ps->word: ["@" domain], then emit the address. */
static int finish_addr_spec(struct parse *ps)
{
    util_buf_reset(&ps->addr);
    util_buf_add(&ps->addr, ps->word.data, ps->word.len);
    if (tok_is(ps, '@')) {
        util_buf_add(&ps->addr, "@", 1);
        if (lex_next(ps) < 0 || read_domain(ps) < 0)
            return -1;
    }
    list_append(ps->out, util_buf_take(&ps->addr));
    return 0;
}

/* obs-route: "@" domain *("," ["@" domain]) ":" -- read and dropped. */
static int skip_route(struct parse *ps)
{
    while (tok_is(ps, '@')) {
        util_buf_reset(&ps->addr);
        if (lex_next(ps) < 0 || read_domain(ps) < 0)
            return -1;
        while (tok_is(ps, ','))
            if (lex_next(ps) < 0)
                return -1;
    }
    if (!tok_is(ps, ':'))
        return parse_fail(ps, ps->tok.start, "expected \":\" after a route");
    return lex_next(ps);
}

/* "<" [route] addr-spec ">", the "<" being the current token. */
static int read_angle_addr(struct parse *ps)
{
    const char *open = ps->tok.start;
    enum words what;

    if (lex_next(ps) < 0)
        return -1;
    if (tok_is(ps, '@') && skip_route(ps) < 0)
        return -1;
    if (tok_is(ps, '>'))
        return parse_fail(ps, open, "empty address");
    if (read_words(ps, &what) < 0)
        return -1;
    if (what == WORDS_NONE)
        return parse_fail(ps, ps->tok.start, "expected an address");
    if (what != WORDS_LOCAL)
        return parse_fail(ps, open + 1, "bad local part");
    if (finish_addr_spec(ps) < 0)
        return -1;
    if (!tok_is(ps, '>'))
        return parse_fail(ps, ps->tok.start, "expected \">\"");
    return lex_next(ps);
}

/*
 * One mailbox, or with in_group == 0 also a group. Returns 1 when a
 * group name and its ":" were read (the caller reads the members).
 */
static int read_address(struct parse *ps, int in_group)
{
    const char *start = ps->tok.start;
    enum words what;

    if (read_words(ps, &what) < 0)
        return -1;
    if (tok_is(ps, '<'))
        return read_angle_addr(ps);
    if (tok_is(ps, ':')) {
        if (what == WORDS_NONE)
            return parse_fail(ps, start, "group without a name");
        if (in_group)
            return parse_fail(ps, start, "nested group");
        return lex_next(ps) < 0 ? -1 : 1;
    }
    if (what == WORDS_NONE)
        return parse_fail(ps, start, "expected an address");
    if (what == WORDS_LOCAL)
        return finish_addr_spec(ps);
    if (tok_is(ps, '@'))
        return parse_fail(ps, start, "bad local part");
    return parse_fail(ps, start, "name without an address");
}

/* The members of a group, up to and including its ";". */
static int read_group(struct parse *ps)
{
    for (;;) {
        while (tok_is(ps, ','))
            if (lex_next(ps) < 0)
                return -1;
        if (tok_is(ps, ';'))
            return lex_next(ps);
        if (ps->tok.kind == TOK_END) /* left open: accepted */
            return 0;
        if (read_address(ps, 1) < 0)
            return -1;
        if (!tok_is(ps, ',') && !tok_is(ps, ';') && ps->tok.kind != TOK_END)
            return parse_fail(ps, ps->tok.start, "expected \",\" or \";\"");
    }
}

static int read_list(struct parse *ps)
{
    int status;

    if (lex_next(ps) < 0)
        return -1;
    for (;;) {
        while (tok_is(ps, ','))
            if (lex_next(ps) < 0)
                return -1;
        if (ps->tok.kind == TOK_END)
            return 0;
        if ((status = read_address(ps, 0)) < 0)
            return -1;
        if (status == 1 && read_group(ps) < 0)
            return -1;
        if (!tok_is(ps, ',') && ps->tok.kind != TOK_END)
            return parse_fail(ps, ps->tok.start, "expected \",\"");
    }
}

int smtp_address_list_parse(const char *text, size_t len,
                            struct smtp_addr_list *out, char *why,
                            size_t whylen)
{
    struct parse ps;
    size_t keep = out->count;
    int status;

    memset(&ps, 0, sizeof(ps));
    ps.p = text;
    ps.end = text + len;
    ps.out = out;
    ps.why = why;
    ps.whylen = whylen;
    status = read_list(&ps);
    util_buf_free(&ps.word);
    util_buf_free(&ps.addr);
    if (status < 0)
        list_truncate(out, keep);
    return status;
}

/* RFC 5321 atext, with 8-bit bytes (RFC 6531). */
static int is_smtp_atext(int ch)
{
    return ch >= 0x80 || (ch > ' ' && ch < 0x7f && !is_special(ch));
}

/* Dot-string or quoted string; returns its length, or 0 if bad. */
static size_t local_part_len(const char *s)
{
    const char *p = s;

    if (*p == '"') {
        for (p++; *p != '"'; p++) {
            if (*p == '\\')
                p++;
            if ((unsigned char)*p < ' ' || *p == 0x7f)
                return 0; /* also the end of the string */
        }
        return (size_t)(p + 1 - s);
    }
    for (;;) {
        if (!is_smtp_atext((unsigned char)*p))
            return 0;
        while (is_smtp_atext((unsigned char)*p))
            p++;
        if (*p != '.')
            return (size_t)(p - s);
        p++;
    }
}

static int is_helo_char(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
           (ch >= '0' && ch <= '9') || ch == '-' || ch == '_';
}

static int is_label_char(int ch)
{
    return ch >= 0x80 || is_helo_char(ch);
}

/*
 * Dot-separated labels of 1 to LABEL_MAX bytes that is_char() accepts;
 * with hyphen_ends 0, none may start or end with "-" (RFC 952).
 */
static int labels_valid(const char *d, int (*is_char)(int), int hyphen_ends)
{
    size_t n;

    for (;;) {
        for (n = 0; is_char((unsigned char)d[n]); n++)
            ;
        if (n == 0 || n > LABEL_MAX ||
            (!hyphen_ends && (d[0] == '-' || d[n - 1] == '-')))
            return 0;
        d += n;
        if (*d == 0)
            return 1;
        if (*d++ != '.')
            return 0;
    }
}

int smtp_domain_valid(const char *d)
{
    if (strlen(d) > SMTP_DOMAIN_MAX)
        return 0;
    if (*d == '[') {
        if (d[1] == ']')
            return 0;
        for (d++; *d != ']'; d++)
            if (*d == 0 || *d == '[' || *d == '\\' ||
                (unsigned char)*d <= ' ' || *d == 0x7f)
                return 0;
        return d[1] == 0;
    }
    return labels_valid(d, is_label_char, 1);
}

int smtp_address_valid(const char *addr)
{
    size_t local = local_part_len(addr);

    if (local == 0 || local > SMTP_LOCAL_PART_MAX ||
        strlen(addr) > SMTP_ADDRESS_MAX)
        return 0;
    if (addr[local] == 0)
        return 1;
    return addr[local] == '@' && smtp_domain_valid(addr + local + 1);
}

/* An address literal with a real address in it: [192.0.2.1], [IPv6:...]. */
static int helo_literal_valid(const char *name)
{
    char addr[INET6_ADDRSTRLEN + 8];
    unsigned char bin[sizeof(struct in6_addr)];
    size_t n = strlen(name);

    if (n < 3 || name[n - 1] != ']' || n - 2 >= sizeof(addr))
        return 0;
    memcpy(addr, name + 1, n - 2);
    addr[n - 2] = 0;
    if (strncasecmp(addr, "IPv6:", 5) == 0)
        return inet_pton(AF_INET6, addr + 5, bin) == 1;
    return inet_pton(AF_INET, addr, bin) == 1;
}

int smtp_helo_name_valid(const char *name)
{
    if (*name == '[')
        return helo_literal_valid(name);
    return strlen(name) <= SMTP_DOMAIN_MAX &&
           labels_valid(name, is_helo_char, 0);
}
