/*
 * NAME
 *	starttls 3 - the SMTP and LMTP client's STARTTLS (RFC 3207)
 * SYNOPSIS
 *	#include "deliver/smtp_impl.h"
 *
 *	void	starttls_out_init(struct deliver_session *s)
 *	int	starttls_out_after_ehlo(struct deliver_session *s)
 *	void	starttls_out_reply(struct deliver_session *s)
 *	void	starttls_out_established(struct deliver_session *s)
 *	void	starttls_out_failed(struct deliver_session *s, int timed_out)
 *	const char *starttls_out_cache_key(const struct deliver_session *s,
 *			int tls)
 * DESCRIPTION
 *	The reference's security levels on the client (TLS_README, "Client
 *	TLS security levels"):
 * .IP none
 *	No STARTTLS.
 * .IP may
 *	STARTTLS when the server offers it; the certificate is not checked
 *	(the log says what it was worth). A server that refuses STARTTLS
 *	gets the mail in plaintext on the same connection; a handshake
 *	that fails or times out is retried on a new connection to the same
 *	address without STARTTLS, once (the reference's "retry in
 *	plaintext").
 * .IP encrypt
 *	TLS is required, the certificate is not checked.
 * .IP verify
 *	TLS is required, the certificate must verify to a trusted CA and
 *	name one of the match names (smtp_tls_verify_cert_match:
 *	"hostname", the server's name as the MX record gives it).
 * .IP secure
 *	The same with smtp_tls_secure_cert_match ("nexthop, dot-nexthop":
 *	names the MX records cannot forge).
 * .IP dane, dane-only
 *	DANE (RFC 7672) when the caller found DNSSEC-validated TLSA
 *	records for the server; without them dane is may, and dane-only
 *	fails.
 * .PP
 *	At the levels that require TLS, a server that does not offer
 *	STARTTLS, refuses it, fails the handshake or shows a certificate
 *	the level does not accept gets no mail: the connection is closed
 *	and the next address is tried, and when none is left the
 *	recipients are deferred with the reason in the reference's words
 *	("TLS is required, but was not offered by host X", "Server
 *	certificate not trusted", "Server certificate not verified",
 *	"Cannot start TLS: handshake failure"), dsn 4.7.4 or 4.7.5. The
 *	message never goes in plaintext.
 *
 *	After the handshake the client sends EHLO again (RFC 3207, 4.2:
 *	the server forgets what the first one said) and the transaction
 *	goes over TLS. starttls_out_init() resolves the request's names for
 *	each address as it is tried (hostname is the address's host,
 *	nexthop the request's next hop, dot-nexthop the same with a dot
 *	before it) and computes the two cache keys: connections made under
 *	one TLS policy are cached apart from those of another, and within
 *	a policy those in TLS apart from those in plaintext (at none, may
 *	and encrypt without MTA-STS, where no name is checked, the next
 *	hop and the names to match are not part of the policy, so that
 *	domains sharing an exchanger share its connections);
 *	starttls_out_cache_key() gives the one for a connection's state. A
 *	delivery at may or dane takes a cached TLS connection before a
 *	plaintext one; at an enforcing level only a TLS one; at none only
 *	a plaintext one (deliver_start()).
 *
 *	Each TLS failure is also noted in the result's tls_fail[] with its
 *	kind, host and address, and our own address on the connection
 *	(TLS reporting counts them, RFC 8460: sending-mta-ip). A
 *	certificate that does not verify only because it has expired is
 *	a failure of its own kind (certificate-expired); the reason text
 *	is the reference's "Server certificate not trusted" with
 *	OpenSSL's "certificate has expired".
 *
 *	Sessions are resumed under a key of the address, the name sent,
 *	and the policy, so that a session checked under one policy is
 *	never taken as checked under another.
 */

#include "deliver/smtp_impl.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static void fail_note(struct deliver_session *s, enum deliver_tls_fail kind,
                      const char *reason);

/* What DNSSEC said of the current address's host, or NULL. */
static const struct deliver_dane *dane_of(const struct deliver_session *s)
{
    const char *host = s->req.addrs[s->addr].host;

    for (size_t i = 0; i < s->req.tls.ndane; i++)
        if (strcasecmp(s->req.tls.dane[i].host, host) == 0)
            return &s->req.tls.dane[i];
    return NULL;
}

/* Has the host validated TLSA records of a usage DANE takes? */
static int dane_usable(const struct deliver_dane *d)
{
    if (d == NULL || d->state != DELIVER_DANE_RECORDS)
        return 0;
    for (size_t i = 0; i < d->ntlsa; i++)
        if (d->tlsa[i].usage == 2 || d->tlsa[i].usage == 3)
            return 1;
    return 0;
}

/*
 * The level that applies to the current address. At dane and dane-only
 * it depends on the host: TLS_LEV_DANE means usable TLSA records (TLS
 * required, DANE authenticates); validated records of no usable kind
 * mean encrypt (RFC 7672, 2.2: TLS is still mandatory); no validated
 * records mean may at dane, and a host dane-only cannot use.
 */
static enum tls_level level_dane(const struct deliver_session *s)
{
    enum tls_level level = s->req.tls.level;
    const struct deliver_dane *d;

    if (level != TLS_LEV_DANE && level != TLS_LEV_DANE_ONLY)
        return level;
    d = dane_of(s);
    if (dane_usable(d))
        return TLS_LEV_DANE;
    if (d && d->state == DELIVER_DANE_RECORDS)
        return TLS_LEV_ENCRYPT;
    return level == TLS_LEV_DANE ? TLS_LEV_MAY : TLS_LEV_DANE_ONLY;
}

/*
 * RFC 8461, 4.2 and 5.1: under an MTA-STS policy in enforce mode the
 * server must offer TLS with a certificate valid for the MX host's
 * name; a level that checks less becomes verify with that name. DANE
 * with usable records, verify and secure stay as they are (RFC 8461, 2:
 * DANE, where there is DANE, comes first).
 */
static int sts_raises(const struct deliver_session *s, enum tls_level level)
{
    return s->req.tls.sts == DELIVER_STS_ENFORCE && level != TLS_LEV_DANE &&
           level != TLS_LEV_DANE_ONLY && level != TLS_LEV_VERIFY &&
           level != TLS_LEV_SECURE;
}

static enum tls_level level_now(const struct deliver_session *s)
{
    enum tls_level level;

    if (s->req.tls.ctx == NULL || s->tls_plain)
        return TLS_LEV_NONE;
    level = level_dane(s);
    return sts_raises(s, level) ? TLS_LEV_VERIFY : level;
}

/* TLS is required at the current address. */
static int required(enum tls_level level)
{
    return level == TLS_LEV_DANE || tls_level_enforced(level);
}

static int level_checks_names(enum tls_level level)
{
    return level == TLS_LEV_VERIFY || level == TLS_LEV_SECURE;
}

static unsigned port_of(const struct deliver_addr *a)
{
    if (a->sa.ss_family == AF_INET)
        return ntohs(((const struct sockaddr_in *)&a->sa)->sin_port);
    if (a->sa.ss_family == AF_INET6)
        return ntohs(((const struct sockaddr_in6 *)&a->sa)->sin6_port);
    return 0;
}

int starttls_out_host_ok(struct deliver_session *s, char *reason, size_t len)
{
    enum tls_level level = s->req.tls.ctx ? s->req.tls.level : TLS_LEV_NONE;
    const struct deliver_dane *d;

    if (level != TLS_LEV_DANE && level != TLS_LEV_DANE_ONLY)
        return 1;
    d = dane_of(s);
    if (d && d->state == DELIVER_DANE_FAILED) {
        /* RFC 7672, 2.2: a TLSA lookup that fails makes the host
         * unusable, at dane too (an attacker could make it fail) */
        snprintf(reason, len, "TLSA lookup error for %s:%u: %s",
                 s->req.addrs[s->addr].host, port_of(&s->req.addrs[s->addr]),
                 d->why);
        fail_note(s, DELIVER_TLS_FAIL_TLSA_LOOKUP, reason);
        return 0;
    }
    if (level == TLS_LEV_DANE_ONLY &&
        !(d && d->state == DELIVER_DANE_RECORDS)) {
        snprintf(reason, len,
                 "TLS is required, but host %s has no DNSSEC-validated "
                 "TLSA records",
                 s->req.addrs[s->addr].host);
        fail_note(s, DELIVER_TLS_FAIL_DANE_REQUIRED, reason);
        return 0;
    }
    return 1;
}

void starttls_out_init(struct deliver_session *s)
{
    const struct deliver_tls *t = &s->req.tls;
    char ident[1400];

    enum tls_level level = t->ctx ? t->level : TLS_LEV_NONE;

    /*
     * Everything a connection was checked against, for the keys. At the
     * levels that check no name (none, may, encrypt) and without an
     * MTA-STS policy, the names to match and the next hop play no part:
     * a connection to a host may then carry mail for every domain whose
     * exchanger it is, as the reference's connections do.
     */
    if (level <= TLS_LEV_ENCRYPT && t->sts == DELIVER_STS_NONE)
        snprintf(ident, sizeof(ident), "%s|%s|%d|%d|%s", tls_level_name(level),
                 t->servername, t->min_version, t->max_version, t->ciphers);
    else
        snprintf(ident, sizeof(ident), "%s|%s|%s|%s|%d|%d|%s|sts%d",
                 tls_level_name(level), t->match, t->servername, t->nexthop,
                 t->min_version, t->max_version, t->ciphers, (int)t->sts);
    s->tls_ident = xstrdup(ident);
    if (s->req.cache_key) {
        size_t n = strlen(s->req.cache_key) + strlen(ident) + 16;

        s->key_tls = xmalloc(n);
        s->key_plain = xmalloc(n);
        snprintf(s->key_tls, n, "%s\n%s\ntls", s->req.cache_key, ident);
        snprintf(s->key_plain, n, "%s\n%s\nplain", s->req.cache_key, ident);
    }
}

const char *starttls_out_cache_key(const struct deliver_session *s, int tls)
{
    return tls ? s->key_tls : s->key_plain;
}

/* The text of an IPv4 or IPv6 socket address into out, or "". */
static void addr_text(const struct sockaddr_storage *sa, char *out, size_t len)
{
    const void *in = NULL;

    if (sa->ss_family == AF_INET)
        in = &((const struct sockaddr_in *)sa)->sin_addr;
    else if (sa->ss_family == AF_INET6)
        in = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (in == NULL || inet_ntop(sa->ss_family, in, out, (socklen_t)len) == NULL)
        out[0] = 0;
}

/* Our address on the connection (RFC 8460's sending-mta-ip), or "". */
static void local_addr(const struct deliver_session *s, char *out, size_t len)
{
    struct bufferevent *b = s->bev;
    struct sockaddr_storage sa;
    socklen_t salen = sizeof(sa);
    evutil_socket_t fd = -1;

    /* a TLS filter has no socket of its own: the one under it */
    for (; b != NULL && (fd = bufferevent_getfd(b)) < 0;
         b = bufferevent_get_underlying(b))
        ;
    memset(&sa, 0, sizeof(sa));
    if (fd < 0 || getsockname(fd, (struct sockaddr *)&sa, &salen) < 0)
        sa.ss_family = AF_UNSPEC;
    addr_text(&sa, out, len);
}

/* Why TLS failed at the current address, for TLS reporting. */
static void fail_note(struct deliver_session *s, enum deliver_tls_fail kind,
                      const char *reason)
{
    const struct deliver_addr *a = &s->req.addrs[s->addr];
    struct deliver_tls_failure *f;

    if (s->res->ntls_fail++ >= DELIVER_TLS_FAILS_MAX)
        return;
    f = &s->res->tls_fail[s->res->ntls_fail - 1];
    f->kind = kind;
    snprintf(f->host, sizeof(f->host), "%s", a->host);
    addr_text(&a->sa, f->addr, sizeof(f->addr));
    local_addr(s, f->local, sizeof(f->local));
    snprintf(f->reason, sizeof(f->reason), "%s", reason);
}

/* A TLS failure on this address: the next one, with the dsn. */
static void tls_fail(struct deliver_session *s, enum deliver_tls_fail kind,
                     const char *dsn, const char *reason)
{
    fail_note(s, kind, reason);
    connection_next_address_dsn(s, dsn, reason);
}

/* One item of a names list, resolved for the current address. */
static size_t name_resolve(const struct deliver_session *s, const char *item,
                           size_t len, char *out, size_t size)
{
    const char *host = s->req.addrs[s->addr].host;
    const char *hop = s->req.tls.nexthop;

    if (len == 8 && strncmp(item, "hostname", 8) == 0)
        return (size_t)snprintf(out, size, "%s", host);
    if (len == 7 && strncmp(item, "nexthop", 7) == 0)
        return (size_t)snprintf(out, size, "%s", hop);
    if (len == 11 && strncmp(item, "dot-nexthop", 11) == 0)
        return (size_t)snprintf(out, size, ".%s", hop);
    return (size_t)snprintf(out, size, "%.*s", (int)len, item);
}

/* The match names of the level, resolved; returns how many. */
static size_t names_resolve(const struct deliver_session *s, char names[][256],
                            size_t max)
{
    const char *sep = ", \t:";
    const char *list = s->req.tls.match;
    size_t n = 0;

    for (const char *p = list + strspn(list, sep); *p && n < max;
         p += strspn(p, sep)) {
        size_t len = strcspn(p, sep);

        if (name_resolve(s, p, len, names[n], sizeof(names[n])) > 0 &&
            names[n][0] != '[' && names[n][0] != 0)
            n++;
        p += len;
    }
    return n;
}

/* FNV-1a of TLSA records: sessions checked against others differ. */
static unsigned tlsa_digest(const struct tls_tlsa *t, size_t n)
{
    uint32_t h = 2166136261u;

    for (size_t i = 0; i < n; i++) {
        unsigned char head[3] = {t[i].usage, t[i].selector, t[i].mtype};

        for (size_t k = 0; k < 3 + t[i].len; k++) {
            h ^= k < 3 ? head[k] : t[i].data[k - 3];
            h *= 16777619u;
        }
    }
    return h;
}

static void tls_begin(struct deliver_session *s)
{
    enum tls_level level = level_now(s);
    struct tls_connect_params p = {0};
    char names[8][256];
    const char *match[8];
    char sni[256] = "", key[2048];
    size_t n = 0;
    struct bufferevent *bev;
    const char *spec = s->req.tls.servername;

    if (spec[0] != 0)
        name_resolve(s, spec, strlen(spec), sni, sizeof(sni));
    /* no SNI for an address literal (RFC 6066, 3) */
    if (sni[0] != 0 && strspn(sni, "0123456789.:[]") != strlen(sni))
        p.servername = sni;
    if (sts_raises(s, level_dane(s)) || s->req.tls.sts == DELIVER_STS_TESTING) {
        /* MTA-STS: the MX host's name, checked (or, testing, seen) */
        snprintf(names[0], sizeof(names[0]), "%s", s->req.addrs[s->addr].host);
        n = 1;
    } else if (level_checks_names(level)) {
        n = names_resolve(s, names, 8);
    }
    if (level == TLS_LEV_DANE) {
        const struct deliver_dane *d = dane_of(s);

        /* RFC 7672, 3.2.2 and 8.1: the TLSA base domain is the
         * reference identifier and the SNI */
        p.tlsa = d->tlsa;
        p.ntlsa = d->ntlsa;
        p.dane_base = s->req.addrs[s->addr].host;
        snprintf(names[0], sizeof(names[0]), "%s", p.dane_base);
        snprintf(sni, sizeof(sni), "%s", p.dane_base);
        p.servername = sni;
        n = 1;
    }
    for (size_t i = 0; i < n; i++)
        match[i] = names[i];
    p.match = match;
    p.nmatch = n;
    p.min_version = s->req.tls.min_version;
    p.max_version = s->req.tls.max_version;
    p.ciphers = s->req.tls.ciphers[0] ? s->req.tls.ciphers : NULL;
    /* the policy asked for, not only the level it came to here: a
     * session checked at dane is not one checked at dane-only */
    snprintf(key, sizeof(key), "%s|%s|%s|%s|%08x", s->res->relay, sni,
             s->tls_ident, tls_level_name(level), tlsa_digest(p.tlsa, p.ntlsa));
    p.resume_key = key;
    bev = tls_session_connect(s->req.tls.ctx, s->bev, &p);
    if (bev == NULL) {
        starttls_out_failed(s, 0);
        return;
    }
    s->bev = bev;
    s->state = ST_TLS;
    smtp_reply_free(&s->reply); /* the 220, read_cb leaves it to us */
    connection_setcb(s);
    connection_timer_arm(s, s->req.timeouts.helo);
}

int starttls_out_after_ehlo(struct deliver_session *s)
{
    enum tls_level level = level_now(s);
    char reason[600];

    if (s->tls_on || level == TLS_LEV_NONE)
        return 0;
    if (!(s->features & SMTP_EXT_STARTTLS)) {
        if (!required(level))
            return 0;
        snprintf(reason, sizeof(reason),
                 "TLS is required, but was not offered by host %s", s->peer);
        tls_fail(s, DELIVER_TLS_FAIL_STARTTLS, "4.7.4", reason);
        return 1;
    }
    s->state = ST_STARTTLS;
    evbuffer_add(bufferevent_get_output(s->bev), "STARTTLS\r\n", 10);
    connection_timer_arm(s, s->req.timeouts.helo);
    return 1;
}

void starttls_out_reply(struct deliver_session *s)
{
    char reason[600];

    if (s->reply.code / 100 == 2) {
        tls_begin(s);
        return;
    }
    if (!required(level_now(s))) {
        /* may: the server keeps talking in plaintext */
        protocol_ehlo_done(s);
        return;
    }
    snprintf(reason, sizeof(reason),
             "TLS is required, but host %s refused to start TLS: %d %s",
             s->peer, s->reply.code, s->reply.text);
    tls_fail(s, DELIVER_TLS_FAIL_STARTTLS, "4.7.4", reason);
}

void starttls_out_established(struct deliver_session *s)
{
    enum tls_level level = level_now(s);
    struct deliver_tls_result *r = &s->res->tls;
    struct tls_summary sum;
    struct tls_peer peer;
    char reason[800];

    tls_session_peer(s->bev, &peer);
    if ((level_checks_names(level) || (level == TLS_LEV_DANE && peer.dane)) &&
        !peer.matched) {
        /* the reference: at verify and secure an untrusted chain is
         * "not trusted"; a name that does not match, or DANE that does
         * not authenticate, "not verified" */
        snprintf(reason, sizeof(reason), "Server certificate not %s%s%s%s",
                 peer.trusted || level == TLS_LEV_DANE ? "verified" : "trusted",
                 peer.why[0] ? " (" : "", peer.why, peer.why[0] ? ")" : "");
        tls_fail(s,
                 peer.expired            ? DELIVER_TLS_FAIL_EXPIRED
                 : level == TLS_LEV_DANE ? DELIVER_TLS_FAIL_DANE
                 : peer.trusted          ? DELIVER_TLS_FAIL_HOST_MISMATCH
                                         : DELIVER_TLS_FAIL_NOT_TRUSTED,
                 "4.7.5", reason);
        return;
    }
    tls_session_summary(s->bev, &sum);
    memset(r, 0, sizeof(*r));
    r->used = 1;
    r->established = 1;
    r->word = peer.word;
    r->expired = peer.expired;
    snprintf(r->peer, sizeof(r->peer), "%s", s->res->relay);
    snprintf(r->cipher, sizeof(r->cipher), "%s", sum.cipher);
    snprintf(r->details, sizeof(r->details), "%s", sum.details);
    s->tls_on = 1;
    s->features = 0;
    s->state = ST_EHLO;
    evbuffer_add_printf(bufferevent_get_output(s->bev), "%s %s\r\n",
                        s->req.proto == DELIVER_LMTP ? "LHLO" : "EHLO",
                        s->req.helo_name);
    connection_timer_arm(s, s->req.timeouts.helo);
}

void starttls_out_failed(struct deliver_session *s, int timed_out)
{
    char why[256] = "", reason[1000];

    if (s->bev != NULL && tls_session_active(s->bev))
        tls_session_error(s->bev, why, sizeof(why));
    if (!required(level_now(s)) && !s->tls_plain) {
        /* may: once more on a new connection, in plaintext */
        s->tls_plain = 1;
        connection_retry_address(s);
        return;
    }
    snprintf(reason, sizeof(reason),
             "Cannot start TLS: handshake failure with host %s%s%s", s->peer,
             timed_out ? ": timed out"
             : why[0]  ? ": "
                       : "",
             timed_out ? "" : why);
    tls_fail(s, DELIVER_TLS_FAIL_HANDSHAKE, "4.7.5", reason);
}
