/*
 * NAME
 *	smtpd 3 - the SMTP server: listeners, limits, relay policy, flow
 * SYNOPSIS
 *	#include "ingress/ingress.h"
 *
 *	struct smtpd_server *smtpd_server_create(struct event_base *base,
 *			const struct smtpd_params *p,
 *			const struct smtpd_ops *ops, char *why, size_t whylen)
 *	int	smtpd_server_params_set(struct smtpd_server *s,
 *			const struct smtpd_params *p, char *why,
 *			size_t whylen)
 *	int	smtpd_params_check(const struct smtpd_params *p, char *why,
 *			size_t whylen)
 *	int	smtpd_session_start(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen)
 *	int	smtpd_session_start_tls(struct smtpd_server *s, int fd,
 *			const struct sockaddr *sa, socklen_t salen)
 *	void	smtpd_server_close(struct smtpd_server *s)
 *	long	smtpd_server_busy(const struct smtpd_server *s)
 *	long	smtpd_server_sessions(const struct smtpd_server *s)
 *	void	smtpd_server_free(struct smtpd_server *s)
 * DESCRIPTION
 *	The server brings mail in over SMTP on the daemon's event loop: one
 *	session per client, all on one thread, each handing its finished
 *	messages to ops->store (the queue manager's group commit), so that
 *	many clients share one fsync per commit. A session answers 250 to
 *	the end of a message only once the store says it is durable.
 *
 *	smtpd_server_create() listens on every address of p->listen
 *	("127.0.0.1:2525", "[::1]:2525", separated by commas or spaces;
 *	empty: none, and the server only takes what smtpd_session_start()
 *	gives it) and of p->tls_wrapper_listen (listener.c) and returns
 *	the server, or NULL with the reason (a bad
 *	address, a port in use, a bad mynetworks). smtpd_server_params_set()
 *	applies new parameters (a reload) to sessions from their next
 *	command on; the listeners stay. It returns -1 with a reason and
 *	changes nothing when a value is bad. smtpd_params_check() finds
 *	what either would refuse in p (smtpd_listen syntax included, but
 *	no binding), for "sluice config" and "sluice reload".
 *
 *	smtpd_session_start() starts a session on a connected socket fd
 *	(taken over) from the client at sa: what the listeners do for
 *	each connection, and what tests do with one end of a socket pair
 *	and a made-up client address. It returns 0, or -1 when the client
 *	was turned away (fd closed after a 421). smtpd_session_start_tls()
 *	does the same for a client that speaks TLS from its first byte
 *	(implicit TLS, as on port 465): the greeting follows the handshake.
 *
 *	TLS (starttls.c): smtpd_tls_cert_file and _key_file, or
 *	smtpd_tls_chain_files, make the server's TLS context (tls/), at
 *	creation and again at each smtpd_server_params_set(): a file that
 *	cannot be read or a key that does not match is an error there
 *	(the daemon does not start; a reload is refused and the context in
 *	use stays). Sessions under way keep the context they began with.
 *	smtpd_tls_security_level is none, may or encrypt; empty means may
 *	when there is a certificate and none without (decision 46);
 *	encrypt, or wrapper-mode listeners, without a certificate is an
 *	error.
 *
 *	Limits, checked when a client connects:
 *	- smtpd_client_connection_count_limit: a client address with that
 *	  many sessions open gets "421 4.7.0 ... too many connections" and
 *	  is disconnected (0: no limit), unless it is in
 *	  smtpd_client_event_limit_exceptions (Postfix's default, as here:
 *	  $mynetworks, so that a local injector may open many sessions).
 *	- SMTPD_SESSION_MAX sessions at once in all: beyond that the
 *	  listeners stop accepting and clients wait in the listen queue.
 *	  From SMTPD_STRESS_ON sessions until fewer than SMTPD_STRESS_OFF
 *	  are left, the server is under stress: every session's deadlines
 *	  are per record and at most smtpd_stress_timeout (deadline.c), so
 *	  that clients holding sessions by trickling bytes make room.
 *	  They also stop for SMTPD_ACCEPT_PAUSE_MS when accept() fails (out
 *	  of file descriptors), rather than be called again at once.
 *	- in_flow_backlog_limit: with more messages than that in the
 *	  incoming queue, a new client gets "421 4.3.2 ... try again later".
 *
 *	Flow control, checked at each MAIL (smtpd_flow_delay(),
 *	smtpd_storage_check()):
 *	- Above in_flow_backlog_limit messages waiting in the incoming
 *	  queue, MAIL gets "452 4.3.1 Too much mail waiting (N messages
 *	  in the incoming queue), try again later".
 *	- Above qmgr_message_active_limit of them (the queue manager cannot
 *	  take in what comes), each MAIL is answered only after
 *	  in_flow_delay: acceptance slows to the pace of delivery, as
 *	  Postfix's in_flow_delay does, instead of filling the queue. A
 *	  warning says so, at most once a minute.
 *	- Less free space than queue_minfree, or than 1.5 times the
 *	  message (its SIZE, else message_size_limit), is "452 4.3.1
 *	  Insufficient system storage"; so is any MAIL within
 *	  SMTPD_STORE_LATCH seconds of a store that failed (spool full).
 *	  Free space is the queue file system's, plus, when that is short,
 *	  what deleted messages left free inside the spool's file
 *	  (ops->spool_free): the file never shrinks, and once it had filled
 *	  the disk the file system alone would say "full" for ever.
 *
 *	Relay policy: smtpd_relay_restrictions (restrict.c; by default a
 *	client in mynetworks, or one logged in with AUTH, may send to any
 *	domain, another only to relay_domains), where
 *	smtpd_relay_domain() matches "example.com" to that domain and its
 *	subdomains and ".example.com" only to its subdomains (Postfix's
 *	default matching). smtpd_sender_restrictions and
 *	smtpd_sender_login_maps tie sender addresses to logins.
 *
 *	AUTH (auth.c): with smtpd_sasl_auth_enable the back end of
 *	smtpd_sasl_type on smtpd_sasl_path (sasl/) is made here, at
 *	creation and at each smtpd_server_params_set(), like the TLS
 *	context: a passwd-file that cannot be read or has a bad line is
 *	an error (the daemon does not start; a reload is refused and the
 *	users in use stay). AUTH only in TLS (smtpd_tls_auth_only) on a
 *	server without TLS is an error too: no client could log in.
 *
 *	Bare line ends (smtpd_bare_mode()): what smtpd_forbid_bare_newline
 *	says (disconnect, normalize, note, reject; content.c and
 *	smtp/data.c say what each does), or normalize for a client in
 *	smtpd_forbid_bare_newline_exclusions. The parameter's values are
 *	checked here, with message_strip_characters (a set of bytes, no CR
 *	or LF) and the network lists.
 *
 *	Message content (content.c) is held in memory up to
 *	smtpd_staging_threshold bytes per message, and past it written to a
 *	staging file in <queue_directory>/staging (staging.c), which
 *	smtpd_server_create() makes (mode 0700) and empties, logging
 *	"warning: DIR: removed N staging files left by an earlier run";
 *	with an empty queue_directory nothing is staged. Only content held
 *	in memory counts against smtpd_memory_limit.
 *
 *	smtpd_server_close() is the start of a stop: the listeners close,
 *	every session gets "421 4.3.2 ... Service shutting down" and is
 *	closed, except those whose message is being stored, which get their
 *	answer first; smtpd_server_busy() counts those.
 *	smtpd_server_sessions() counts the sessions open. After
 *	smtpd_server_free() a store's late answer is still safe: it only
 *	frees what is left of its session.
 */

#include "ingress/smtpd_impl.h"

#include <ctype.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define FLOW_LOG_INTERVAL 60 /* s between in_flow_delay warnings */

void smtpd_log(struct smtpd_server *s, const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (s == NULL || s->ops.log == NULL)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    s->ops.log(s->ops.ctx, line);
}

/* ------------------------------------------------------- configuration */

static void conf_clear(struct smtpd_conf *cf)
{
    free(cf->hostname);
    free(cf->queue_directory);
    ingress_nets_free(cf->mynetworks);
    ingress_nets_free(cf->exempt);
    ingress_nets_free(cf->bare_exempt);
    ingress_nets_free(cf->dkim_hosts);
    for (size_t i = 0; i < cf->nrelay; i++)
        free(cf->relay_domains[i]);
    free(cf->relay_domains);
    tls_context_free(cf->tls);
    sasl_server_free(cf->sasl);
    login_maps_free(cf->login_maps);
    memset(cf, 0, sizeof(*cf));
}

/* Split a list on commas and white space; calls fn for each word. */
int smtpd_list_each(const char *list, int (*fn)(void *, const char *),
                    void *ctx)
{
    const char *p = list ? list : "";
    char word[512];

    for (;;) {
        size_t n;

        p += strspn(p, ", \t\r\n");
        if (*p == 0)
            return 0;
        n = strcspn(p, ", \t\r\n");
        if (n >= sizeof(word))
            n = sizeof(word) - 1;
        memcpy(word, p, n);
        word[n] = 0;
        p += strcspn(p, ", \t\r\n");
        if (fn(ctx, word) < 0)
            return -1;
    }
}

static int domain_add(void *ctx, const char *word)
{
    struct smtpd_conf *cf = ctx;
    char *d = xstrdup(word);

    for (char *c = d; *c; c++) {
        if ((unsigned char)*c <= ' ' || *c == '@') {
            free(d);
            return -1;
        }
        *c = (char)tolower((unsigned char)*c);
    }
    cf->relay_domains = xrealloc(cf->relay_domains,
                                 (cf->nrelay + 1) * sizeof(*cf->relay_domains));
    cf->relay_domains[cf->nrelay++] = d;
    return 0;
}

/* A network list parameter; NULL (with why set) when it is bad. */
static struct ingress_nets *nets_parse(const char *name, const char *list,
                                       char *why, size_t whylen)
{
    struct ingress_nets *n;
    char nwhy[256];

    n = ingress_nets_parse(list ? list : "", nwhy, sizeof(nwhy));
    if (n == NULL)
        snprintf(why, whylen, "%s: %s", name, nwhy);
    return n;
}

/* smtpd_forbid_bare_newline: Postfix's values, and sluice's default. */
static int bare_mode_parse(const char *text, enum bare_mode *mode, char *why,
                           size_t whylen)
{
    static const struct {
        const char *name;
        enum bare_mode mode;
    } modes[] = {
        {"disconnect", BARE_DISCONNECT},
        {"normalize", BARE_NORMALIZE},
        {"yes", BARE_NORMALIZE},
        {"no", BARE_NORMALIZE},
        {"note", BARE_NOTE},
        {"reject", BARE_REJECT},
    };

    if (text == NULL || *text == 0)
        text = "disconnect";
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (strcasecmp(text, modes[i].name) == 0) {
            *mode = modes[i].mode;
            return 0;
        }
    }
    snprintf(why, whylen,
             "smtpd_forbid_bare_newline: \"%s\" is not one of disconnect, "
             "normalize, yes, no, note, reject",
             text);
    return -1;
}

/* The parameters that are lists or sets; -1 with why when one is bad. */
static int conf_parse_lists(struct smtpd_conf *cf, const struct smtpd_params *p,
                            char *why, size_t whylen)
{
    char nwhy[256];

    if ((cf->mynetworks =
             nets_parse("mynetworks", p->mynetworks, why, whylen)) == NULL ||
        (cf->exempt = nets_parse("smtpd_client_event_limit_exceptions",
                                 p->exempt, why, whylen)) == NULL ||
        (cf->bare_exempt = nets_parse("smtpd_forbid_bare_newline_exclusions",
                                      p->bare_exempt, why, whylen)) == NULL ||
        (cf->dkim_hosts = nets_parse("dkim_internal_hosts", p->dkim_hosts, why,
                                     whylen)) == NULL ||
        bare_mode_parse(p->bare_newline, &cf->bare_mode, why, whylen) < 0)
        return -1;
    cf->dkim = p->dkim;
    if (smtpd_list_each(p->relay_domains, domain_add, cf) < 0) {
        snprintf(why, whylen, "relay_domains: not a domain in \"%s\"",
                 p->relay_domains);
        return -1;
    }
    if (smtp_data_strip_parse(p->strip_chars, cf->strip, nwhy, sizeof(nwhy)) <
        0) {
        snprintf(why, whylen, "message_strip_characters: %s", nwhy);
        return -1;
    }
    return 0;
}

/* Is a parameter's value empty (white space and commas only)? */
static int empty(const char *v)
{
    return v == NULL || v[strspn(v, ", \t\r\n")] == 0;
}

/*
 * The TLS context and level. A server with wrapper-mode listeners, or
 * that must have TLS, and no certificate could never serve a client:
 * refused, rather than found out at the first one.
 */
static int conf_parse_tls(struct smtpd_conf *cf, const struct smtpd_params *p,
                          char *why, size_t whylen)
{
    struct tls_files files = {p->tls_cert_file, p->tls_key_file,
                              p->tls_chain_files};
    const char *level = p->tls_level ? p->tls_level : "";
    int have = !empty(p->tls_cert_file) || !empty(p->tls_chain_files);

    if (strcmp(level, "") == 0)
        cf->tls_level = have ? STARTTLS_MAY : STARTTLS_NONE;
    else if (strcmp(level, "none") == 0)
        cf->tls_level = STARTTLS_NONE;
    else if (strcmp(level, "may") == 0)
        cf->tls_level = STARTTLS_MAY;
    else if (strcmp(level, "encrypt") == 0)
        cf->tls_level = STARTTLS_ENCRYPT;
    else {
        snprintf(why, whylen,
                 "smtpd_tls_security_level: \"%s\" is not one of none, may, "
                 "encrypt (or empty)",
                 level);
        return -1;
    }
    if (!have && (cf->tls_level != STARTTLS_NONE || p->tls_wrappermode ||
                  !empty(p->tls_wrapper_listen))) {
        snprintf(why, whylen,
                 "%s needs a certificate: set "
                 "smtpd_tls_cert_file or smtpd_tls_chain_files",
                 cf->tls_level != STARTTLS_NONE ? "smtpd_tls_security_level"
                 : p->tls_wrappermode           ? "smtpd_tls_wrappermode"
                                                : "smtpd_tls_wrapper_listen");
        return -1;
    }
    if (have && (cf->tls = tls_server_context_create("smtpd_tls", &files, why,
                                                     whylen)) == NULL)
        return -1;
    cf->tls_received_header = p->tls_received_header;
    cf->starttls_timeout_ms =
        p->starttls_timeout_ms > 0 ? p->starttls_timeout_ms : 300000;
    return 0;
}

/* A reply code of 4xx or 5xx, else the reference's default. */
static long code_or(long code, long dflt)
{
    return code >= 400 && code <= 599 ? code : dflt;
}

/* The relay restrictions of sluice before they were a parameter. */
#define RELAY_RESTRICTIONS_DEFAULT                                             \
    "permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination"

/*
 * AUTH and the restrictions. The passwd-file is read here, at start and
 * at each reload (a bad one refuses the reload and the server keeps its
 * users); base NULL only checks.
 */
static int conf_parse_auth(struct smtpd_conf *cf, struct event_base *base,
                           const struct smtpd_params *p, char *why,
                           size_t whylen)
{
    const char *relay = p->relay_restrictions ? p->relay_restrictions
                                              : RELAY_RESTRICTIONS_DEFAULT;
    struct sasl_params sp = {p->sasl_type, p->sasl_path, p->sasl_timeout_ms,
                             "smtp"};

    if (restrict_parse("smtpd_relay_restrictions", relay, RESTRICT_RELAY,
                       &cf->relay_restrictions, why, whylen) < 0 ||
        restrict_parse("smtpd_sender_restrictions", p->sender_restrictions,
                       RESTRICT_SENDER, &cf->sender_restrictions, why,
                       whylen) < 0 ||
        restrict_parse(
            "smtpd_recipient_restrictions",
            p->recipient_restrictions ? p->recipient_restrictions : "",
            RESTRICT_RECIPIENT, &cf->recipient_restrictions, why, whylen) < 0 ||
        login_maps_load(p->sender_login_maps, &cf->login_maps, why, whylen) < 0)
        return -1;
    if (p->sasl_auth_enable &&
        (cf->sasl = sasl_server_create(base, &sp, why, whylen)) == NULL)
        return -1;
    cf->tls_auth_only = p->tls_auth_only;
    cf->auth_required = p->auth_required && cf->sasl != NULL;
    if (cf->sasl != NULL && cf->tls_auth_only &&
        cf->tls_level == STARTTLS_NONE && !p->tls_wrappermode &&
        empty(p->tls_wrapper_listen)) {
        snprintf(why, whylen,
                 "smtpd_sasl_auth_enable: AUTH is offered only in TLS "
                 "(smtpd_tls_auth_only = yes) and the server has no TLS: "
                 "set smtpd_tls_cert_file, or smtpd_tls_auth_only = no");
        return -1;
    }
    cf->unv_rcpt_reject = code_or(p->unverified_recipient_reject_code, 450);
    cf->unv_rcpt_defer = code_or(p->unverified_recipient_defer_code, 450);
    cf->unv_sender_reject = code_or(p->unverified_sender_reject_code, 450);
    cf->unv_sender_defer = code_or(p->unverified_sender_defer_code, 450);
    cf->auth_header = p->sasl_auth_header;
    cf->auth_delay_ms = p->sasl_delay_ms;
    cf->auth_delay_limit_ms = p->sasl_delay_limit_ms > p->sasl_delay_ms
                                  ? p->sasl_delay_limit_ms
                                  : p->sasl_delay_ms;
    return 0;
}

static int conf_parse(struct smtpd_conf *cf, struct event_base *base,
                      const struct smtpd_params *p, char *why, size_t whylen)
{
    memset(cf, 0, sizeof(*cf));
    if (conf_parse_lists(cf, p, why, whylen) < 0 ||
        conf_parse_tls(cf, p, why, whylen) < 0 ||
        conf_parse_auth(cf, base, p, why, whylen) < 0) {
        conf_clear(cf);
        return -1;
    }
    cf->hostname = xstrdup(p->hostname ? p->hostname : "localhost");
    cf->queue_directory = xstrdup(p->queue_directory ? p->queue_directory : "");
    cf->size_limit = p->size_limit;
    cf->queue_minfree = p->queue_minfree;
    cf->recipient_limit = p->recipient_limit > 0 ? p->recipient_limit : 1;
    cf->connection_limit = p->connection_limit;
    cf->error_limit = p->error_limit > 0 ? p->error_limit : 1;
    /* a line must fit in what a session reads ahead, or reading stops */
    cf->line_limit = p->line_limit < 512                   ? 512
                     : p->line_limit > SMTPD_INPUT_MAX / 2 ? SMTPD_INPUT_MAX / 2
                                                           : p->line_limit;
    cf->timeout_ms = p->timeout_ms > 0 ? p->timeout_ms : 1000;
    cf->stress_timeout_ms =
        p->stress_timeout_ms > 0 && p->stress_timeout_ms < cf->timeout_ms
            ? p->stress_timeout_ms
            : cf->timeout_ms;
    cf->per_record_deadline = p->per_record_deadline;
    cf->in_flow_delay_ms = p->in_flow_delay_ms;
    cf->active_limit = p->active_limit;
    cf->backlog_limit = p->backlog_limit;
    cf->hopcount_limit = p->hopcount_limit > 0 ? p->hopcount_limit : 50;
    cf->junk_limit = p->junk_limit;
    cf->memory_limit = p->memory_limit;
    cf->staging_threshold = p->staging_threshold;
    cf->add_missing_headers = p->add_missing_headers;
    cf->smtputf8 = p->smtputf8_enable;
    cf->peername_lookup = p->peername_lookup;
    cf->peername_timeout_ms = p->peername_lookup_timeout_ms > 0
                                  ? p->peername_lookup_timeout_ms
                                  : 5000;
    cf->bare_code =
        p->bare_code >= 500 && p->bare_code <= 599 ? p->bare_code : 550;
    return 0;
}

/* The syntax of one smtpd_listen word, without binding. */
static int listen_word_check(void *arg, const char *word)
{
    if (listener_word_check(word) < 0) {
        snprintf(arg, SMTPD_HELO_MAX, "%.200s", word);
        return -1;
    }
    return 0;
}

int smtpd_params_check(const struct smtpd_params *p, char *why, size_t whylen)
{
    struct smtpd_conf cf;
    char bad[SMTPD_HELO_MAX];

    if (conf_parse(&cf, NULL, p, why, whylen) < 0)
        return -1;
    conf_clear(&cf);
    if (smtpd_list_each(p->listen, listen_word_check, bad) < 0 ||
        smtpd_list_each(p->tls_wrapper_listen, listen_word_check, bad) < 0) {
        snprintf(why, whylen,
                 "%s: \"%s\" is not ADDRESS:PORT or [IPV6-ADDRESS]:PORT",
                 smtpd_list_each(p->listen, listen_word_check, bad) < 0
                     ? "smtpd_listen"
                     : "smtpd_tls_wrapper_listen",
                 bad);
        return -1;
    }
    return 0;
}

int smtpd_server_params_set(struct smtpd_server *s,
                            const struct smtpd_params *p, char *why,
                            size_t whylen)
{
    struct smtpd_conf cf;

    if (conf_parse(&cf, s->base, p, why, whylen) < 0)
        return -1;
    conf_clear(&s->cf);
    s->cf = cf;
    return 0;
}

/* ------------------------------------------------------------- policy */

int smtpd_relay_domain(const struct smtpd_server *s, const char *domain)
{
    size_t dlen = strlen(domain);

    for (size_t i = 0; i < s->cf.nrelay; i++) {
        const char *r = s->cf.relay_domains[i];
        size_t rlen = strlen(r);

        if (r[0] != '.' && strcasecmp(domain, r) == 0)
            return 1;
        /* "example.com" and ".example.com" both match sub.example.com */
        if (r[0] != '.' && dlen > rlen + 1 && domain[dlen - rlen - 1] == '.' &&
            strcasecmp(domain + dlen - rlen, r) == 0)
            return 1;
        if (r[0] == '.' && dlen > rlen &&
            strcasecmp(domain + dlen - rlen, r) == 0)
            return 1;
    }
    return 0;
}

/*
 * What deleted messages left free in the spool's file: the file never
 * shrinks, so after the disk filled once the file system alone would
 * say "full" for ever. Asked only when the file system is short.
 */
static uint64_t spool_free(struct smtpd_server *s)
{
    int64_t n = s->ops.spool_free ? s->ops.spool_free(s->ops.ctx) : 0;

    return n > 0 ? (uint64_t)n : 0;
}

int smtpd_storage_check(struct smtpd_server *s, uint64_t size, char *why,
                        size_t whylen)
{
    struct statvfs fs;
    uint64_t need, avail;

    if (s->store_failed != 0 &&
        time(NULL) - s->store_failed < SMTPD_STORE_LATCH) {
        snprintf(why, whylen, "Insufficient system storage: %s", s->store_why);
        return -1;
    }
    if (s->cf.queue_directory[0] == 0 ||
        statvfs(s->cf.queue_directory, &fs) < 0)
        return 0; /* cannot tell: the store will say */
    if (size == 0)
        size = s->cf.size_limit;
    need = size > UINT64_MAX / 2 ? UINT64_MAX : size + size / 2;
    if (need < s->cf.queue_minfree)
        need = s->cf.queue_minfree;
    avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    if (avail < need)
        avail += spool_free(s);
    if (avail < need) {
        snprintf(why, whylen, "Insufficient system storage");
        smtpd_log(s,
                  "warning: not enough free space in %s: %llu bytes, "
                  "need %llu",
                  s->cf.queue_directory, (unsigned long long)avail,
                  (unsigned long long)need);
        return -1;
    }
    return 0;
}

long smtpd_flow_delay(struct smtpd_server *s, char *why, size_t whylen)
{
    long waiting;
    time_t now;

    if (s->ops.backlog == NULL)
        return 0;
    waiting = s->ops.backlog(s->ops.ctx);
    if (s->cf.backlog_limit > 0 && waiting >= s->cf.backlog_limit) {
        snprintf(why, whylen,
                 "Too much mail waiting (%ld messages in the incoming "
                 "queue), try again later",
                 waiting);
        return -1;
    }
    if (s->cf.in_flow_delay_ms <= 0 || waiting <= s->cf.active_limit)
        return 0;
    now = time(NULL);
    if (now - s->flow_logged >= FLOW_LOG_INTERVAL) {
        s->flow_logged = now;
        smtpd_log(s,
                  "warning: %ld messages in the incoming queue, more than "
                  "qmgr_message_active_limit (%ld): each new message "
                  "waits in_flow_delay (%ld ms)",
                  waiting, s->cf.active_limit, s->cf.in_flow_delay_ms);
    }
    return s->cf.in_flow_delay_ms;
}

void smtpd_store_failed(struct smtpd_server *s, const char *why)
{
    s->store_failed = time(NULL);
    snprintf(s->store_why, sizeof(s->store_why), "%s", why ? why : "");
}

/* Is the client in mynetworks, as the parameters say now? */
int smtpd_client_trusted(const struct smtpd_session *ss)
{
    return ss->s != NULL &&
           ingress_nets_match(ss->s->cf.mynetworks,
                              (const struct sockaddr *)&ss->addr);
}

/*
 * What a bare line end from this client does: smtpd_forbid_bare_newline,
 * or normalize for the clients in its exclusions (Postfix's excluded
 * clients get its legacy "no", which sluice reads as normalize: no
 * value reopens smuggling). Looked up as the parameters say now.
 */
enum bare_mode smtpd_bare_mode(const struct smtpd_session *ss)
{
    if (ss->s == NULL)
        return BARE_DISCONNECT;
    if (ingress_nets_match(ss->s->cf.bare_exempt,
                           (const struct sockaddr *)&ss->addr))
        return BARE_NORMALIZE;
    return ss->s->cf.bare_mode;
}

/* ----------------------------------------------------------- sessions */

/*
 * Stress: near its session limit the server cuts slow clients short, as
 * Postfix does when its smtpd processes reach their limit (master.cf's
 * process limit sets "stress", and smtpd_timeout is
 * ${stress?{10}:{300}}s). Here every session shares one process, so
 * the count of sessions is the measure, with hysteresis so that the
 * state does not flap at the threshold; sessions already open get the
 * shorter deadline from their current record on.
 */
static void stress_update(struct smtpd_server *s)
{
    struct smtpd_session *ss;

    if (!s->stress && s->nsessions >= SMTPD_STRESS_ON) {
        s->stress = 1;
        smtpd_log(s,
                  "warning: %ld SMTP sessions, near the limit of %d: "
                  "stress: deadlines per command and content line, of "
                  "smtpd_stress_timeout (%ld ms)",
                  s->nsessions, SMTPD_SESSION_MAX, s->cf.stress_timeout_ms);
        LIST_FOREACH(ss, &s->sessions, link)
            deadline_tighten(ss);
    } else if (s->stress && s->nsessions < SMTPD_STRESS_OFF) {
        s->stress = 0;
        smtpd_log(s, "stress over: %ld SMTP sessions", s->nsessions);
    }
}

void smtpd_session_gone(struct smtpd_session *ss)
{
    struct smtpd_server *s = ss->s;

    if (s == NULL)
        return;
    peer_cancel(ss);   /* its answer must not find the session gone */
    verify_cancel(ss); /* nor a verification's */
    LIST_REMOVE(ss, link);
    ss->s = NULL;
    s->nsessions--;
    if (s->paused && !s->closing && s->nsessions < SMTPD_SESSION_MAX)
        listener_enable(s, 1);
    stress_update(s);
}

static int same_client(const struct sockaddr_storage *a,
                       const struct sockaddr *b)
{
    if (a->ss_family != b->sa_family)
        return 0;
    if (b->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (b->sa_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr,
                      sizeof(struct in6_addr)) == 0;
    return 1; /* a Unix socket: one client */
}

/* Turn a client away at once, with one reply. */
static int turn_away(int fd, const char *reply)
{
    ssize_t n = write(fd, reply, strlen(reply)); /* best effort */

    (void)n;
    close(fd);
    return -1;
}

void smtpd_client_text(const struct sockaddr *sa, socklen_t salen, char *addr,
                       size_t addrlen, char *client, size_t clientlen)
{
    char host[INET6_ADDRSTRLEN] = "";
    const void *in = NULL;

    (void)salen;
    if (sa->sa_family == AF_INET)
        in = &((const struct sockaddr_in *)sa)->sin_addr;
    else if (sa->sa_family == AF_INET6)
        in = &((const struct sockaddr_in6 *)sa)->sin6_addr;
    if (in == NULL || !inet_ntop(sa->sa_family, in, host, sizeof(host)))
        snprintf(host, sizeof(host), "local");
    /* Received: writes IPv6 as Postfix does, "IPv6:::1" (RFC 5321) */
    snprintf(addr, addrlen, "%s%s", sa->sa_family == AF_INET6 ? "IPv6:" : "",
             host);
    snprintf(client, clientlen, "unknown[%s]", host);
}

int smtpd_session_start(struct smtpd_server *s, int fd,
                        const struct sockaddr *sa, socklen_t salen)
{
    return smtpd_session_open(s, fd, sa, salen, 0);
}

int smtpd_session_start_tls(struct smtpd_server *s, int fd,
                            const struct sockaddr *sa, socklen_t salen)
{
    return smtpd_session_open(s, fd, sa, salen, 1);
}

int smtpd_session_open(struct smtpd_server *s, int fd,
                       const struct sockaddr *sa, socklen_t salen, int tls)
{
    struct smtpd_session *ss;
    char line[512], why[256], addr[64], client[80];
    long same = 0;

    smtpd_client_text(sa, salen, addr, sizeof(addr), client, sizeof(client));
    if (s->closing)
        return turn_away(fd, "421 4.3.2 Service shutting down\r\n");
    LIST_FOREACH(ss, &s->sessions, link)
        same += same_client(&ss->addr, sa);
    if (s->cf.connection_limit > 0 && same >= s->cf.connection_limit &&
        !ingress_nets_match(s->cf.exempt, sa)) {
        smtpd_log(s,
                  "warning: connection count limit %ld exceeded by %s, "
                  "turned away",
                  s->cf.connection_limit, client);
        snprintf(line, sizeof(line),
                 "421 4.7.0 %s Error: too many connections from %s\r\n",
                 s->cf.hostname, addr);
        return turn_away(fd, line);
    }
    if (smtpd_flow_delay(s, why, sizeof(why)) < 0) {
        smtpd_log(s, "reject: connect from %s: 421 4.3.2 %s", client, why);
        snprintf(line, sizeof(line), "421 4.3.2 %s %s\r\n", s->cf.hostname,
                 why);
        return turn_away(fd, line);
    }
    if (tls && s->cf.tls == NULL) { /* a reload took the certificate */
        smtpd_log(s,
                  "warning: no TLS certificate: connection from %s "
                  "closed",
                  client);
        close(fd);
        return -1;
    }
    ss = session_create(s, fd, sa, salen, tls);
    if (ss == NULL) {
        close(fd);
        return -1;
    }
    LIST_INSERT_HEAD(&s->sessions, ss, link);
    if (++s->nsessions >= SMTPD_SESSION_MAX && !s->paused)
        listener_enable(s, 0);
    stress_update(s);
    return 0;
}

/*
 * The staging directory beside the spool, for messages past
 * smtpd_staging_threshold (staging.c). Whatever is in it was left by a
 * daemon that stopped while receiving: no client had a 250 for it.
 * Without a queue directory (tests, fuzzing) nothing is staged.
 */
static int staging_start(struct smtpd_server *s, char *why, size_t whylen)
{
    char dir[4096], swhy[512];
    long removed;

    if (s->cf.queue_directory[0] == 0)
        return 0;
    ingress_path_join(dir, sizeof(dir), s->cf.queue_directory, "staging");
    if (staging_dir_prepare(dir, &removed, swhy, sizeof(swhy)) < 0) {
        snprintf(why, whylen, "smtpd: staging: %s", swhy);
        return -1;
    }
    if (removed > 0)
        smtpd_log(s,
                  "warning: %s: removed %ld staging file%s left by an "
                  "earlier run (messages never acknowledged)",
                  dir, removed, removed == 1 ? "" : "s");
    s->staging_dir = xstrdup(dir);
    return 0;
}

struct smtpd_server *smtpd_server_create(struct event_base *base,
                                         const struct smtpd_params *p,
                                         const struct smtpd_ops *ops, char *why,
                                         size_t whylen)
{
    struct smtpd_server *s = xmalloc(sizeof(*s));

    memset(s, 0, sizeof(*s));
    s->base = base;
    s->ops = *ops;
    LIST_INIT(&s->sessions);
    s->failures = failures_create();
    if (conf_parse(&s->cf, base, p, why, whylen) < 0) {
        failures_free(s->failures);
        free(s);
        return NULL;
    }
    if (staging_start(s, why, whylen) < 0) {
        smtpd_server_free(s);
        return NULL;
    }
    if (listener_open(s, p->listen, "smtpd_listen", p->tls_wrappermode, why,
                      whylen) < 0 ||
        listener_open(s, p->tls_wrapper_listen, "smtpd_tls_wrapper_listen", 1,
                      why, whylen) < 0) {
        smtpd_server_free(s);
        return NULL;
    }
    return s;
}

void smtpd_server_close(struct smtpd_server *s)
{
    struct smtpd_session *ss, *next;

    if (s == NULL || s->closing)
        return;
    s->closing = 1;
    listener_close(s);
    for (ss = LIST_FIRST(&s->sessions); ss != NULL; ss = next) {
        next = LIST_NEXT(ss, link);
        session_shutdown(ss);
    }
}

long smtpd_server_busy(const struct smtpd_server *s)
{
    const struct smtpd_session *ss;
    long n = 0;

    if (s == NULL)
        return 0;
    LIST_FOREACH(ss, &s->sessions, link)
        n += session_busy(ss);
    return n;
}

long smtpd_server_sessions(const struct smtpd_server *s)
{
    return s ? s->nsessions : 0;
}

void smtpd_server_free(struct smtpd_server *s)
{
    struct smtpd_session *ss;

    if (s == NULL)
        return;
    smtpd_server_close(s);
    while ((ss = LIST_FIRST(&s->sessions)) != NULL)
        session_orphan(ss);
    if (s->resume_ev)
        event_free(s->resume_ev);
    conf_clear(&s->cf);
    failures_free(s->failures);
    free(s->staging_dir);
    free(s);
}
