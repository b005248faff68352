/*
 * NAME
 *	restrict 3 - who may relay, and who may send as whom
 * SYNOPSIS
 *	#include "ingress/smtpd_impl.h"
 *
 *	int	restrict_parse(const char *param, const char *list,
 *			int relay, struct restrict_list *out, char *why,
 *			size_t whylen)
 *	int	login_maps_load(const char *value, struct login_map **out,
 *			char *why, size_t whylen)
 *	void	login_maps_free(struct login_map *m)
 *	int	restrict_sender(struct smtpd_session *ss, const char *rcpt,
 *			char *reply, size_t replylen)
 *	int	restrict_relay(struct smtpd_session *ss, const char *rcpt,
 *			char *reply, size_t replylen)
 *	int	restrict_recipient(struct smtpd_session *ss,
 *			const char *rcpt, char *reply, size_t replylen)
 * DESCRIPTION
 *	Postfix's restriction lists, as far as sluice has them: each
 *	entry decides (permit, or a reply that refuses) or has no
 *	opinion, and the first that decides wins; a list that ends
 *	without a decision permits.
 *
 *	smtpd_relay_restrictions (applied at each RCPT):
 *	permit_mynetworks        the client is in mynetworks: permit
 *	permit_sasl_authenticated the client has logged in (AUTH): permit
 *	reject_unauth_destination the recipient is not in relay_domains
 *			         (or has a local part that routes on, "%",
 *			         "!", "@"; a bare "postmaster" is always
 *			         allowed): "554 5.7.1 <R>: Relay access
 *			         denied"
 *	defer_unauth_destination the same with "454 4.7.1"
 *	permit, reject           always; reject is "554 5.7.1 <R>: Relay
 *			         access denied"
 *
 *	restrict_parse() refuses an unknown name with the parameter's
 *	name, and a relay list without reject_unauth_destination,
 *	defer_unauth_destination or reject, which would make an open
 *	relay (Postfix refuses the same at start). The default (decision
 *	70) is "permit_mynetworks, permit_sasl_authenticated,
 *	reject_unauth_destination": what sluice did before the list
 *	existed.
 *
 *	smtpd_sender_restrictions (applied at each RCPT, before the relay
 *	restrictions, as Postfix's smtpd_delay_reject = yes does):
 *	permit_mynetworks, permit_sasl_authenticated, permit, and
 *	reject_sender_login_mismatch: a client logged in as a user who
 *	does not own the sender address (smtpd_sender_login_maps), or not
 *	logged in while the address has an owner, gets "553 5.7.1 <S>:
 *	Sender address rejected: not owned by user U" or "... not logged
 *	in"; reject_authenticated_sender_login_mismatch and
 *	reject_unauthenticated_sender_login_mismatch are each half of it.
 *	An address no map entry names is owned by no one: a logged-in
 *	client may use it (Postfix's rule, too).
 *
 *	smtpd_sender_login_maps is a table file (util/table.c: "hash:" or
 *	"texthash:" prefixes, comments, continuation lines): "address
 *	login, login..." or "@domain login...". The full address is
 *	looked up, then "@domain", without regard to case; logins are
 *	compared without case. login_maps_load() reads it (an empty
 *	value is no table); -1 with the file and line of a bad entry.
 *
 *	smtpd_recipient_restrictions (applied at each RCPT, after the
 *	relay restrictions, as the reference does; empty by default):
 *	permit_mynetworks, permit_sasl_authenticated, permit, reject,
 *	reject_unauth_destination, defer_unauth_destination (as above),
 *	reject_unverified_recipient and reject_unverified_sender (both
 *	verify.c: the address verified by a probe). reject_unverified_sender
 *	may also stand in smtpd_sender_restrictions.
 *
 *	restrict_sender(), restrict_relay() and restrict_recipient()
 *	return 0 to go on, or -1 with the whole reply line in reply; the
 *	sender and recipient lists return 1 when an address verification
 *	is under way: the RCPT waits for its answer and is evaluated again
 *	(command.c), the answer then at hand.
 */

#include "ingress/smtpd_impl.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Where each may be used: bits of 1 << enum restrict_where. */
#define IN_S (1 << RESTRICT_SENDER)
#define IN_L (1 << RESTRICT_RELAY)
#define IN_R (1 << RESTRICT_RECIPIENT)

static const struct {
    const char *name;
    enum restriction r;
    int where;
} names[] = {
    {"permit_mynetworks", R_PERMIT_MYNETWORKS, IN_S | IN_L | IN_R},
    {"permit_sasl_authenticated", R_PERMIT_SASL, IN_S | IN_L | IN_R},
    {"reject_unauth_destination", R_REJECT_UNAUTH_DEST, IN_L | IN_R},
    {"defer_unauth_destination", R_DEFER_UNAUTH_DEST, IN_L | IN_R},
    {"permit", R_PERMIT, IN_S | IN_L | IN_R},
    {"reject", R_REJECT, IN_L | IN_R},
    {"reject_sender_login_mismatch", R_SENDER_LOGIN_MISMATCH, IN_S},
    {"reject_authenticated_sender_login_mismatch", R_AUTH_SENDER_MISMATCH,
     IN_S},
    {"reject_unauthenticated_sender_login_mismatch", R_UNAUTH_SENDER_MISMATCH,
     IN_S},
    {"reject_unverified_recipient", R_UNVERIFIED_RECIPIENT, IN_R},
    {"reject_unverified_sender", R_UNVERIFIED_SENDER, IN_S | IN_R},
};

struct parse_ctx {
    struct restrict_list *out;
    enum restrict_where where;
    const char *bad;
    char word[128];
};

static int add_name(void *arg, const char *word)
{
    struct parse_ctx *p = arg;
    struct restrict_list *l = p->out;

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcasecmp(word, names[i].name) == 0 &&
            (names[i].where & (1 << p->where))) {
            if (l->n < RESTRICT_MAX)
                l->r[l->n++] = names[i].r;
            return 0;
        }
    snprintf(p->word, sizeof(p->word), "%s", word);
    return -1;
}

/* "a, b, c": the names that list where may hold. */
static void known_names(enum restrict_where where, char *buf, size_t len)
{
    size_t n = 0;

    buf[0] = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && n < len; i++)
        if (names[i].where & (1 << where))
            n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                                  names[i].name);
}

int restrict_parse(const char *param, const char *list,
                   enum restrict_where where, struct restrict_list *out,
                   char *why, size_t whylen)
{
    struct parse_ctx p = {out, where, NULL, ""};
    int relay = where == RESTRICT_RELAY, closed = 0;
    char known[600];

    memset(out, 0, sizeof(*out));
    if (smtpd_list_each(list, add_name, &p) < 0) {
        known_names(where, known, sizeof(known));
        snprintf(why, whylen,
                 "%s: unknown restriction \"%s\" (sluice knows %s)", param,
                 p.word, known);
        return -1;
    }
    for (size_t i = 0; i < out->n; i++)
        closed |= out->r[i] == R_REJECT_UNAUTH_DEST ||
                  out->r[i] == R_DEFER_UNAUTH_DEST || out->r[i] == R_REJECT;
    if (relay && !closed) {
        snprintf(why, whylen,
                 "%s: specify at least one of reject_unauth_destination, "
                 "defer_unauth_destination or reject (an open relay "
                 "otherwise)",
                 param);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------- smtpd_sender_login_maps */

struct login_map {
    char **key; /* lower case: "a@b.example" or "@b.example" */
    char **logins;
    size_t n;
};

static int map_line(void *ctx, int line, const char *text, char *why,
                    size_t whylen)
{
    struct login_map *m = ctx;
    size_t klen = strcspn(text, " \t");
    const char *v = text + klen;

    (void)line;
    v += strspn(v, " \t");
    if (*v == 0) {
        snprintf(why, whylen, "\"%.*s\" has no login", (int)klen, text);
        return -1;
    }
    m->key = xrealloc(m->key, (m->n + 1) * sizeof(*m->key));
    m->logins = xrealloc(m->logins, (m->n + 1) * sizeof(*m->logins));
    m->key[m->n] = xstrndup(text, klen);
    for (char *c = m->key[m->n]; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    m->logins[m->n++] = xstrdup(v);
    return 0;
}

int login_maps_load(const char *value, struct login_map **out, char *why,
                    size_t whylen)
{
    char *path = NULL;
    struct login_map *m;

    *out = NULL;
    if (util_table_path("smtpd_sender_login_maps", value ? value : "", &path,
                        why, whylen) < 0)
        return -1;
    if (path == NULL)
        return 0;
    m = xcalloc(1, sizeof(*m));
    if (util_table_read(path, map_line, m, why, whylen) < 0) {
        login_maps_free(m);
        free(path);
        return -1;
    }
    free(path);
    *out = m;
    return 0;
}

void login_maps_free(struct login_map *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n; i++) {
        free(m->key[i]);
        free(m->logins[i]);
    }
    free(m->key);
    free(m->logins);
    free(m);
}

static const char *map_find(const struct login_map *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcasecmp(m->key[i], key) == 0)
            return m->logins[i];
    return NULL;
}

/* The owners of sender: the address's entry, else its domain's. */
static const char *owners(const struct login_map *m, const char *sender)
{
    const char *found, *at = strrchr(sender, '@');

    if (*sender == 0)
        return NULL;
    if ((found = map_find(m, sender)) != NULL || at == NULL)
        return found;
    return map_find(m, at);
}

struct owner_ctx {
    const char *user;
    int found;
};

static int owner_is(void *arg, const char *word)
{
    struct owner_ctx *o = arg;

    o->found |= strcasecmp(word, o->user) == 0;
    return 0;
}

/* 0, or -1 with the reply: may this client send as its sender? */
static int login_mismatch(struct smtpd_session *ss, int authed, int unauthed,
                          char *reply, size_t replylen)
{
    const struct login_map *m = ss->s->cf.login_maps;
    const char *who;

    if (m == NULL || (who = owners(m, ss->sender)) == NULL)
        return 0;
    if (ss->sasl_username != NULL && authed) {
        struct owner_ctx o = {ss->sasl_username, 0};

        smtpd_list_each(who, owner_is, &o);
        if (o.found)
            return 0;
        snprintf(reply, replylen,
                 "553 5.7.1 <%s>: Sender address rejected: not owned by "
                 "user %s",
                 ss->sender, ss->sasl_username);
        return -1;
    }
    if (ss->sasl_username == NULL && unauthed) {
        snprintf(reply, replylen,
                 "553 5.7.1 <%s>: Sender address rejected: not logged in",
                 ss->sender);
        return -1;
    }
    return 0;
}

/* The permits every list shares: does restriction r end it with OK? */
static int restrict_permits(const struct smtpd_session *ss, enum restriction r)
{
    return r == R_PERMIT ||
           (r == R_PERMIT_MYNETWORKS && smtpd_client_trusted(ss)) ||
           (r == R_PERMIT_SASL && ss->sasl_username != NULL);
}

static int auth_destination(const struct smtpd_session *ss,
                            const char *address);

/* reject (always) or reject_ or defer_unauth_destination (unless rcpt's
 * domain is ours to take): "Relay access denied" in reply, 1. */
static int relay_denied(const struct smtpd_session *ss, enum restriction r,
                        const char *rcpt, char *reply, size_t replylen)
{
    if (r != R_REJECT && auth_destination(ss, rcpt))
        return 0;
    snprintf(reply, replylen, "%s <%s>: Relay access denied",
             r == R_DEFER_UNAUTH_DEST ? "454 4.7.1" : "554 5.7.1", rcpt);
    return 1;
}

int restrict_sender(struct smtpd_session *ss, const char *rcpt, char *reply,
                    size_t replylen)
{
    const struct restrict_list *l = &ss->s->cf.sender_restrictions;

    (void)rcpt;
    for (size_t i = 0; i < l->n; i++) {
        if (restrict_permits(ss, l->r[i]))
            return 0;
        switch (l->r[i]) {
        case R_SENDER_LOGIN_MISMATCH:
        case R_AUTH_SENDER_MISMATCH:
        case R_UNAUTH_SENDER_MISMATCH:
            if (login_mismatch(ss, l->r[i] != R_UNAUTH_SENDER_MISMATCH,
                               l->r[i] != R_AUTH_SENDER_MISMATCH, reply,
                               replylen) < 0)
                return -1;
            break;
        case R_UNVERIFIED_SENDER: {
            int rc = verify_check(ss, 1, ss->sender, reply, replylen);

            if (rc != 0)
                return rc;
            break;
        }
        default:
            break;
        }
    }
    return 0;
}

/* May anyone send to address (relay_domains, postmaster)? */
static int auth_destination(const struct smtpd_session *ss, const char *address)
{
    const char *at = strrchr(address, '@');

    if (at == NULL)
        return strcasecmp(address, "postmaster") == 0;
    /* a local part that routes on would make us relay for anyone */
    for (const char *p = address; p < at; p++)
        if (*p == '%' || *p == '!' || *p == '@')
            return 0;
    return smtpd_relay_domain(ss->s, at + 1);
}

int restrict_relay(struct smtpd_session *ss, const char *rcpt, char *reply,
                   size_t replylen)
{
    const struct restrict_list *l = &ss->s->cf.relay_restrictions;

    for (size_t i = 0; i < l->n; i++) {
        if (restrict_permits(ss, l->r[i]))
            return 0;
        switch (l->r[i]) {
        case R_REJECT_UNAUTH_DEST:
        case R_DEFER_UNAUTH_DEST:
        case R_REJECT:
            if (relay_denied(ss, l->r[i], rcpt, reply, replylen))
                return -1;
            break;
        default:
            break;
        }
    }
    return 0;
}

int restrict_recipient(struct smtpd_session *ss, const char *rcpt, char *reply,
                       size_t replylen)
{
    const struct restrict_list *l = &ss->s->cf.recipient_restrictions;
    int rc;

    for (size_t i = 0; i < l->n; i++) {
        if (restrict_permits(ss, l->r[i]))
            return 0;
        switch (l->r[i]) {
        case R_REJECT_UNAUTH_DEST:
        case R_DEFER_UNAUTH_DEST:
            if (relay_denied(ss, l->r[i], rcpt, reply, replylen))
                return -1;
            break;
        case R_REJECT:
            snprintf(reply, replylen,
                     "554 5.7.1 <%s>: Recipient address rejected: Access "
                     "denied",
                     rcpt);
            return -1;
        case R_UNVERIFIED_RECIPIENT:
        case R_UNVERIFIED_SENDER:
            rc =
                verify_check(ss, l->r[i] == R_UNVERIFIED_SENDER,
                             l->r[i] == R_UNVERIFIED_SENDER ? ss->sender : rcpt,
                             reply, replylen);
            if (rc != 0)
                return rc;
            break;
        default:
            break;
        }
    }
    return 0;
}
