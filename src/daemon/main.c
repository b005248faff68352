/*
 * NAME
 *	sluiced 8 - the sluice delivery daemon
 * SYNOPSIS
 *	sluiced [-f] [-c FILE]
 * DESCRIPTION
 *	Opens the spool (creating it if needed), puts messages a crash left
 *	active back in the incoming queue, imports the maildrop, and runs
 *	the queue manager on one event loop until told to stop. See
 *	doc/sluiced.8 for the whole story; the parts are:
 *
 *	configuration: -c FILE, else $SLUICE_CONFIG, else the default file
 *	if it exists, else the built-in defaults (conf_path()).
 *
 *	privileges: started as root, it becomes mail_owner before it reads
 *	anything else (privilege.c), keeping only CAP_NET_BIND_SERVICE
 *	until the listeners are bound; systemd hears READY=1 once it takes
 *	mail and STOPPING=1 at a stop (notify.c).
 *
 *	logging: with -f, to stderr, one line per event, prefixed with the
 *	time and "sluiced[PID]:"; without -f the daemon detaches and logs
 *	to syslog (facility mail).
 *
 *	signals: SIGTERM or SIGINT drain (no new deliveries, those in flight
 *	finish, at most STOP_GRACE_SECONDS) and stop; what was not delivered
 *	stays in the spool as it was. SIGHUP reloads the configuration and
 *	the routing table, all or nothing: one that does not load leaves
 *	the running one in place (logged with the reason); parameters read
 *	only at start (queue_directory, queue_map_size*, dns_servers) are
 *	named in a warning when they changed.
 *
 *	wake-ups: a datagram on QUEUE_DIRECTORY/public/wakeup (sent by
 *	"sluice sendmail" and "sluice import" after they store mail) makes
 *	the daemon import the maildrop and look at the incoming queue at
 *	once.
 *
 *	options: -f, -c FILE; --help (or -h) and --version print to
 *	stdout and exit 0.
 *
 *	Exit status: 0 after a stop by signal; 1 when it cannot start (bad
 *	configuration, spool, routing table), with the reason logged; 64 on
 *	a usage error.
 */

#include "daemon/daemon.h"

#include "deliver/deliver.h"
#include "dkim/dkim.h"
#include "dns/dns.h"
#include "ingress/ingress.h"
#include "ops/ops.h"
#include "qmgr/qmgr.h"
#include "route/route.h"
#include "spool/spool.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define STOP_GRACE_SECONDS 10
#define STOP_LEAVE_MS      5000 /* past the grace: leaving a cluster */

struct daemon {
    int foreground;
    const char *config; /* -c FILE, or NULL */
    struct conf *conf;
    struct spool *sp;
    struct route_table *routes;
    struct qmgr_tls *tls;     /* until the queue manager takes it */
    struct conf_rules *rules; /* scheduler_rules, until it takes them */
    struct dkim_keys *dkim;   /* signing keys; NULL: none (ingress/sign.c) */
    struct deliver_spawner *spawner; /* until the queue manager takes it */
    struct dns_resolver *dns;
    struct event_base *base;
    struct qmgr *q;
    struct local_server *local;
    struct ops_control *control;
    struct ops_http *http; /* NULL: http_listen is empty */
    struct smtpd_server *smtpd;
    struct smtpd_server *submission; /* smtpd_submission_listen, or NULL */
    char *queue_directory;
    int lock_fd;
    int wake_fd;
    struct event *wake_ev, *stop_check;
    int64_t stop_deadline; /* monotonic ms */
    int stop_warned;       /* the abandoned deliveries are logged */
};

static void say(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say_as(int prio, const char *service, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A line of the process itself: "sluice/master". */
static void say(int prio, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    daemon_logv(prio, "master", fmt, ap);
    va_end(ap);
}

/* A line of one part of the daemon, under its service's name (log.c). */
static void say_as(int prio, const char *service, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    daemon_logv(prio, service, fmt, ap);
    va_end(ap);
}

static void qmgr_log(void *ctx, int level, const char *service,
                     const char *line)
{
    (void)ctx;
    say_as(level == QMGR_LOG_WARNING ? LOG_WARNING : LOG_INFO, service, "%s",
           line);
}

/*
 * Mail from local programs is signed when its From: has a key (decision
 * 81); a signing failure refuses it for now, as OpenDKIM tempfails. The
 * log lines are ingress/sign.c's.
 */
static void sign_log(void *ctx, const char *line)
{
    (void)ctx;
    say_as(LOG_INFO, "cleanup", "%s", line);
}

static int local_sign(struct daemon *d, struct spool_msg *m, char *why,
                      size_t whylen)
{
    char problem[512];

    if (d->dkim == NULL)
        return 0;
    if (m->id[0] == 0) /* the id the spool keeps, for the log line */
        spool_id_new(m->id, spool_now());
    if (ingress_sign(d->dkim, m, time(NULL), sign_log, NULL, problem,
                     sizeof(problem)) < 0) {
        snprintf(why, whylen, "DKIM signing failed: %s", problem);
        return -1;
    }
    return 0;
}

static int import_store(void *ctx, struct spool_msg *m, uid_t owner, char *why,
                        size_t whylen)
{
    struct daemon *d = ctx;

    if (local_sign(d, m, why, whylen) < 0 ||
        spool_store(d->sp, m, why, whylen) < 0)
        return -1;
    say_as(LOG_INFO, "pickup", "%s: uid=%lu from=<%s>", m->id,
           (unsigned long)owner, m->sender);
    return 0;
}

/* A message from the submission socket: into the group commit. */
static void local_store(void *ctx, struct spool_msg *m, uid_t uid,
                        ingress_done_fn *done, void *conn)
{
    struct daemon *d = ctx;
    char origin[SMTP_ADDRESS_MAX + 64], why[600];

    snprintf(origin, sizeof(origin), "uid=%lu from=<%s>", (unsigned long)uid,
             m->sender);
    if (local_sign(d, m, why, sizeof(why)) < 0) {
        say(LOG_WARNING, "%s: %s", m->id, why);
        spool_msg_free(m);
        done(conn, LOCAL_TEMPFAIL, NULL, why);
        return;
    }
    qmgr_submit(d->q, m, origin, done, conn);
}

/* The injection API's configuration: the one in force now. */
static const struct conf *inject_conf(void *ctx)
{
    struct daemon *d = ctx;

    return d->conf;
}

/* A message from the injection API: signed as local mail, then stored. */
static void inject_store(void *ctx, struct spool_msg *m, const char *origin,
                         daemon_inject_done_fn *done, void *done_ctx)
{
    struct daemon *d = ctx;
    char why[600];

    if (local_sign(d, m, why, sizeof(why)) < 0) {
        say(LOG_WARNING, "%s: %s", m->id, why);
        spool_msg_free(m);
        done(done_ctx, -1, NULL, why);
        return;
    }
    qmgr_submit(d->q, m, origin, done, done_ctx);
}

/* A message from an SMTP client: into the same group commit. */
static void smtpd_store(void *ctx, struct spool_msg *m, const char *origin,
                        ingress_done_fn *done, void *conn)
{
    struct daemon *d = ctx;

    qmgr_submit(d->q, m, origin, done, conn);
}

/* Flow control: how long the incoming queue is. */
static long smtpd_backlog(void *ctx)
{
    struct daemon *d = ctx;

    return spool_count(d->sp, SPOOL_INDEX_INCOMING);
}

/* Free space: what deleted messages left free in the spool's file. */
static int64_t smtpd_spool_free(void *ctx)
{
    struct daemon *d = ctx;

    return spool_free_bytes(d->sp);
}

/* The server writes "warning: " itself; say() adds it for LOG_WARNING. */
static void smtpd_log(void *ctx, const char *line)
{
    (void)ctx;
    if (strncmp(line, "warning: ", 9) == 0)
        say_as(LOG_WARNING, "smtpd", "%s", line + 9);
    else
        say_as(LOG_INFO, "smtpd", "%s", line);
}

/*
 * The SMTP server's client names (smtpd_peername_lookup), from the
 * daemon's resolver (dns_lookup_peer()). A session that ends or times
 * out first cancels its request; the resolver's answer then only
 * frees it.
 */
struct peer_request {
    ingress_peer_fn *done; /* NULL once cancelled */
    void *conn;
};

static void peer_answer(void *ctx, struct dns_peer_result *res)
{
    struct peer_request *q = ctx;

    if (q->done != NULL)
        q->done(q->conn, res->status == DNS_OK ? res->name : NULL,
                res->why[0] ? res->why : NULL);
    dns_peer_result_free(res);
    free(q);
}

static void *peer_lookup(void *ctx, const struct sockaddr *sa, socklen_t salen,
                         ingress_peer_fn *done, void *conn)
{
    struct daemon *d = ctx;
    struct peer_request *q = xmalloc(sizeof(*q));

    q->done = done;
    q->conn = conn;
    if (dns_lookup_peer(d->dns, sa, salen, peer_answer, q) < 0) {
        free(q);
        return NULL;
    }
    return q;
}

static void peer_cancel(void *ctx, void *lookup)
{
    (void)ctx;
    ((struct peer_request *)lookup)->done = NULL;
}

/*
 * reject_unverified_recipient and _sender: the queue manager's probes
 * (qmgr/verify.c), waited for address_verify_poll_count times
 * address_verify_poll_delay at most, as the reference's smtpd polls.
 */
struct verify_request {
    ingress_verify_fn *done;
    void *conn;
    struct qmgr_verify_wait *wait;
};

static int verify_status(const struct qmgr_verify_answer *a)
{
    return a->status == QMGR_VERIFY_DELIVERABLE     ? INGRESS_VERIFY_OK
           : a->status == QMGR_VERIFY_UNDELIVERABLE ? INGRESS_VERIFY_BOUNCE
                                                    : INGRESS_VERIFY_DEFER;
}

static void verify_answer(void *ctx, const struct qmgr_verify_answer *a)
{
    struct verify_request *r = ctx;
    ingress_verify_fn *done = r->done;
    void *conn = r->conn;

    free(r);
    done(conn, verify_status(a), a->text);
}

static void *verify_start(void *ctx, const char *address, int *status,
                          char *text, size_t textlen, ingress_verify_fn *done,
                          void *conn)
{
    struct daemon *d = ctx;
    struct verify_request *r = xcalloc(1, sizeof(*r));
    struct qmgr_verify_answer a;
    int64_t wait = conf_int(d->conf, NULL, CONF_address_verify_poll_count) *
                   conf_time_ms(d->conf, NULL, CONF_address_verify_poll_delay);

    r->done = done;
    r->conn = conn;
    if (qmgr_verify(d->q, address, wait, 0, &a, verify_answer, r, &r->wait) ==
        0)
        return r;
    free(r);
    *status = verify_status(&a);
    snprintf(text, textlen, "%s", a.text);
    return NULL;
}

static void verify_cancel(void *ctx, void *wait)
{
    struct verify_request *r = wait;

    (void)ctx;
    qmgr_verify_cancel(r->wait);
    free(r);
}

/* "sluice flush [DOMAIN]" through the submission socket, and ETRN. */
static void local_flush_request(void *ctx, const struct smtp_node *node,
                                ingress_flushed_fn *done, void *conn)
{
    struct daemon *d = ctx;

    qmgr_flush(d->q, node, done, conn);
}

static void local_log(void *ctx, const char *line)
{
    (void)ctx;
    say_as(LOG_WARNING, "pickup", "%s", line);
}

static void control_log(void *ctx, const char *line)
{
    (void)ctx;
    say(LOG_INFO, "%s", line);
}

/* Move the maildrop into the spool; then look at the incoming queue. */
static void import_and_wake(struct daemon *d)
{
    struct maildrop_stats st = {0};
    char why[512];

    if (maildrop_import(d->queue_directory, import_store, d, &st, why,
                        sizeof(why)) < 0)
        say(LOG_WARNING, "maildrop: %s", why);
    if (st.imported || st.malformed || st.failed)
        say(LOG_INFO,
            "maildrop: %lu imported, %lu malformed (set aside), %lu left",
            st.imported, st.malformed, st.failed);
    qmgr_wake(d->q);
}

static void wake_cb(evutil_socket_t fd, short what, void *arg)
{
    char buf[64];

    (void)what;
    while (recv(fd, buf, sizeof(buf), 0) > 0)
        continue;
    import_and_wake(arg);
}

static void stop_check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct daemon *d = arg;
    long busy = qmgr_busy(d->q) + local_server_busy(d->local) +
                smtpd_server_busy(d->smtpd) + smtpd_server_busy(d->submission);

    (void)fd;
    (void)what;
    if (busy > 0 && util_clock_mono_ms() < d->stop_deadline)
        return;
    if (busy > 0 && !d->stop_warned) {
        say(LOG_WARNING,
            "stop: %ld deliveries or writes still going after %d s; "
            "abandoned, their mail stays queued",
            busy, STOP_GRACE_SECONDS);
        d->stop_warned = 1;
    }
    /* out of the cluster, its leases given back (decision 136) */
    if (qmgr_leave(d->q) &&
        util_clock_mono_ms() < d->stop_deadline + STOP_LEAVE_MS)
        return;
    event_base_loopbreak(d->base);
}

/* A panic (a bug, memory exhausted) reaches the log before the abort. */
static void panic_log(const char *message)
{
    say(LOG_CRIT, "panic: %s", message);
}

static void config_warn(void *ctx, const char *text)
{
    (void)ctx;
    say(LOG_WARNING, "%s", text);
}

/* Read and check the configuration and the routing table it names. */
static int load_config(const char *config, struct daemon_config *cf, char *why,
                       size_t whylen)
{
    return daemon_config_load(config, cf, config_warn, NULL, why, whylen);
}

/* Parameters read once at start: a change waits for a restart. */
static void restart_only(const struct conf *old, const struct conf *new)
{
    static const enum conf_param_id strs[] = {CONF_queue_directory,
                                              CONF_mail_owner,
                                              CONF_agent_user,
                                              CONF_dns_servers,
                                              CONF_smtpd_listen,
                                              CONF_smtpd_submission_listen,
                                              CONF_http_listen,
                                              CONF_http_token_file,
                                              CONF_smtpd_tls_wrapper_listen,
                                              CONF_smtp_mta_sts_CAfile};
    static const enum conf_param_id ints[] = {
        CONF_queue_map_size, CONF_queue_map_size_limit,
        CONF_smtp_mta_sts_max_policy_size};
    const char *changed[16];
    int n = 0;

    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (strcmp(conf_str(old, NULL, strs[i]), conf_str(new, NULL, strs[i])))
            changed[n++] = conf_params[strs[i]].name;
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (conf_int(old, NULL, ints[i]) != conf_int(new, NULL, ints[i]))
            changed[n++] = conf_params[ints[i]].name;
    if (conf_bool(old, NULL, CONF_smtpd_tls_wrappermode) !=
        conf_bool(new, NULL, CONF_smtpd_tls_wrappermode))
        changed[n++] = conf_params[CONF_smtpd_tls_wrappermode].name;
    if (conf_bool(old, NULL, CONF_smtp_mta_sts_enable) !=
        conf_bool(new, NULL, CONF_smtp_mta_sts_enable))
        changed[n++] = conf_params[CONF_smtp_mta_sts_enable].name;
    if (conf_time_ms(old, NULL, CONF_smtp_mta_sts_fetch_timeout) !=
        conf_time_ms(new, NULL, CONF_smtp_mta_sts_fetch_timeout))
        changed[n++] = conf_params[CONF_smtp_mta_sts_fetch_timeout].name;
    for (int i = 0; i < n; i++)
        say(LOG_WARNING,
            "reload: %s changed; the new value takes effect when sluiced "
            "restarts",
            changed[i]);
}

/*
 * SIGHUP: a new configuration and routing table, all or nothing. One
 * that does not load or validate leaves the running one in place.
 */
static void reload(struct daemon *d)
{
    struct local_params lp = {0};
    struct smtpd_params sp;
    struct daemon_config cf;
    struct route_table *routes;
    struct qmgr_tls *tls;
    struct dkim_keys *dkim;
    struct conf *conf, *sub;
    const char *path;
    char why[1024];

    if (load_config(d->config, &cf, why, sizeof(why)) < 0) {
        say(LOG_WARNING, "reload failed, the running configuration stays: %s",
            why);
        return;
    }
    conf = cf.conf;
    routes = cf.routes;
    tls = cf.tls;
    dkim = cf.dkim;
    path = cf.path;
    sub = daemon_submission_conf(d->config, conf, why, sizeof(why));
    daemon_smtpd_params(conf, d->queue_directory, &sp);
    sp.dkim = dkim;
    if ((sub == NULL && why[0] != 0) ||
        smtpd_server_params_set(d->smtpd, &sp, why, sizeof(why)) < 0) {
        say(LOG_WARNING, "reload failed, the running configuration stays: %s",
            why);
        route_free(routes);
        qmgr_tls_free(tls);
        dkim_keys_free(dkim);
        conf_rules_free(cf.rules);
        conf_free(conf);
        conf_free(sub);
        return;
    }
    if (d->submission != NULL && sub != NULL) {
        /* checked with the configuration: only a file changed meanwhile */
        daemon_submission_params(sub, d->queue_directory, &sp);
        sp.dkim = dkim; /* what its logged-in clients send is signed */
        if (smtpd_server_params_set(d->submission, &sp, why, sizeof(why)) < 0)
            say(LOG_WARNING,
                "reload: submission listener: %s; its configuration stays",
                why);
    }
    conf_free(sub);
    restart_only(d->conf, conf);
    /* Opened again, so that a reload follows a rotated log. */
    if (daemon_log_file(conf_str(conf, NULL, CONF_maillog_file), why,
                        sizeof(why)) < 0)
        say(LOG_WARNING, "reload: %s; logging on where it was", why);
    qmgr_reload(d->q, conf, routes);
    qmgr_tls_set(d->q, tls);
    qmgr_rules_set(d->q, cf.rules); /* the old threads run out */
    lp.size_limit = (uint64_t)conf_int(conf, NULL, CONF_message_size_limit);
    lp.log = local_log;
    lp.flush = local_flush_request;
    local_server_params_set(d->local, &lp);
    route_free(d->routes);
    conf_free(d->conf);
    dkim_keys_free(d->dkim); /* the server has the new ones */
    d->conf = conf;
    d->routes = routes;
    d->dkim = dkim;
    say(LOG_INFO, "reloaded: %s", path ? path : "built-in defaults");
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct daemon *d = arg;
    struct timeval tick = {0, 50000};

    (void)what;
    if (sig == SIGHUP) {
        if (d->stop_check == NULL)
            reload(d);
        return;
    }
    if (d->stop_check != NULL)
        return; /* already stopping */
    say(LOG_INFO, "stopping on signal %d: draining deliveries in flight",
        (int)sig);
    daemon_notify("STOPPING=1");
    local_server_close(d->local);
    smtpd_server_close(d->smtpd);
    smtpd_server_close(d->submission);
    qmgr_drain(d->q);
    d->stop_deadline = util_clock_mono_ms() + STOP_GRACE_SECONDS * 1000;
    d->stop_check = event_new(d->base, -1, EV_PERSIST, stop_check_cb, d);
    event_add(d->stop_check, &tick);
}

/*
 * SMTP sessions and deliveries take a descriptor each, and a soft limit
 * of 1024 (the usual default) is soon reached: raise it to the hard
 * limit, at most FD_LIMIT_WANTED.
 */
#define FD_LIMIT_WANTED 65536

static void raise_fd_limit(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= FD_LIMIT_WANTED ||
        rl.rlim_cur >= rl.rlim_max)
        return;
    rl.rlim_cur = rl.rlim_max < FD_LIMIT_WANTED ? rl.rlim_max : FD_LIMIT_WANTED;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        say(LOG_WARNING, "cannot raise the file descriptor limit: %s",
            strerror(errno));
}

/* The submission listener, when smtpd_submission_listen names one. */
static int submission_start(struct daemon *d, const struct smtpd_ops *ops,
                            char *why, size_t whylen)
{
    struct smtpd_params sp;
    struct conf *sub = daemon_submission_conf(d->config, d->conf, why, whylen);
    char swhy[512];

    if (sub == NULL)
        return why[0] != 0 ? -1 : 0;
    daemon_submission_params(sub, d->queue_directory, &sp);
    sp.dkim = d->dkim; /* what its logged-in clients send is signed */
    d->submission = smtpd_server_create(d->base, &sp, ops, swhy, sizeof(swhy));
    conf_free(sub);
    if (d->submission == NULL) {
        snprintf(why, whylen, "submission listener: %s", swhy);
        return -1;
    }
    return 0;
}

/*
 * Started as root: become mail_owner before anything else is read, so
 * that the start reads every file as a reload will (decision 89). The
 * file is read once here for mail_owner, queue_directory and agent_user
 * alone: the agent spawner is forked first, and stays root (decision
 * 134).
 */
static int privilege_drop(struct daemon *d)
{
    struct conf *conf;
    char why[1024], note[256];
    int rc;

    if (geteuid() != 0)
        return 0;
    if ((conf = daemon_conf_open(d->config, why, sizeof(why))) == NULL) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->spawner = deliver_spawner_start(conf_str(conf, NULL, CONF_agent_user),
                                       conf_str(conf, NULL, CONF_mail_owner),
                                       why, sizeof(why));
    rc = d->spawner == NULL
             ? -1
             : daemon_privilege_drop(conf, config_warn, NULL, note,
                                     sizeof(note), why, sizeof(why));
    conf_free(conf);
    if (rc < 0)
        say(LOG_ERR, "%s", why);
    else if (note[0] != 0)
        say(LOG_INFO, "running as mail_owner %s", note);
    return rc;
}

static int start(struct daemon *d)
{
    struct daemon_inject_ops inject = {inject_conf, inject_store, d};
    struct local_params lp = {0};
    struct smtpd_params sp;
    struct smtpd_ops ops = {.store = smtpd_store,
                            .flush = local_flush_request,
                            .backlog = smtpd_backlog,
                            .spool_free = smtpd_spool_free,
                            .log = smtpd_log,
                            .peer_lookup = peer_lookup,
                            .peer_cancel = peer_cancel,
                            .verify = verify_start,
                            .verify_cancel = verify_cancel};
    struct spool_config cf = {0};
    struct spool_recovery rec = {0};
    struct dns_config dc = {0};
    struct daemon_config dcf;
    char why[1024];
    char *servers;

    if (privilege_drop(d) < 0)
        return -1;
    if (load_config(d->config, &dcf, why, sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->conf = dcf.conf;
    d->routes = dcf.routes;
    d->tls = dcf.tls;
    d->dkim = dcf.dkim;
    d->rules = dcf.rules;
    if (daemon_log_file(conf_str(d->conf, NULL, CONF_maillog_file), why,
                        sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->queue_directory = xstrdup(conf_str(d->conf, NULL, CONF_queue_directory));
    if (mkdir(d->queue_directory, 0755) < 0 && errno != EEXIST) {
        say(LOG_ERR, "mkdir %s: %s", d->queue_directory, strerror(errno));
        return -1;
    }
    if ((d->lock_fd = daemon_pid_lock(d->queue_directory, why, sizeof(why))) <
        0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    daemon_spool_config(d->conf, &cf);
    cf.queue_directory = d->queue_directory;
    if (spool_open(&d->sp, &cf, SPOOL_CREATE, why, sizeof(why)) < 0 ||
        spool_recover(d->sp, &rec, why, sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    if (rec.active_to_incoming || rec.corrupt)
        say(LOG_INFO, "recovery: %ld messages back to incoming, %ld corrupt",
            rec.active_to_incoming, rec.corrupt);
    if (maildrop_create(d->queue_directory, why, sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    raise_fd_limit();
    d->base = event_base_new();
    servers = daemon_dns_servers(d->conf);
    dc.servers = servers;
    d->dns = dns_create(d->base, &dc, why, sizeof(why));
    free(servers);
    if (d->dns == NULL) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    if ((d->wake_fd =
             daemon_wake_listen(d->queue_directory, why, sizeof(why))) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->q = qmgr_create(d->base, d->conf, d->sp, d->routes, d->dns, qmgr_log, d);
    if (d->q == NULL) {
        say(LOG_ERR, "cannot start the queue manager (out of resources)");
        return -1;
    }
    qmgr_tls_set(d->q, d->tls);
    d->tls = NULL; /* the queue manager's */
    qmgr_rules_set(d->q, d->rules);
    d->rules = NULL; /* the queue manager's too */
    if (d->spawner != NULL)
        qmgr_spawner_set(d->q, d->spawner);
    d->spawner = NULL; /* the queue manager's */
    lp.size_limit = (uint64_t)conf_int(d->conf, NULL, CONF_message_size_limit);
    lp.log = local_log;
    lp.flush = local_flush_request;
    d->local = local_server_create(d->base, d->queue_directory, &lp,
                                   local_store, d, why, sizeof(why));
    if (d->local == NULL) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->control = daemon_control_create(d->base, d->queue_directory, d->q,
                                       control_log, d, why, sizeof(why));
    if (d->control == NULL) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    if (daemon_http_create(d->base, d->conf, d->q, &inject, &d->http, why,
                           sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    ops.ctx = d;
    daemon_smtpd_params(d->conf, d->queue_directory, &sp);
    sp.dkim = d->dkim;
    d->smtpd = smtpd_server_create(d->base, &sp, &ops, why, sizeof(why));
    if (d->smtpd == NULL || submission_start(d, &ops, why, sizeof(why)) < 0) {
        say(LOG_ERR, "%s", why);
        return -1;
    }
    d->wake_ev =
        event_new(d->base, d->wake_fd, EV_READ | EV_PERSIST, wake_cb, d);
    event_add(d->wake_ev, NULL);
    daemon_privilege_done(); /* every listener is bound */
    return 0;
}

static void finish(struct daemon *d)
{
    ops_control_free(d->control);
    d->control = NULL;
    ops_http_free(d->http);
    d->http = NULL;
    local_server_close(d->local);
    smtpd_server_close(d->smtpd);
    smtpd_server_close(d->submission);
    if (d->q)
        qmgr_stop(d->q);
    dns_free(d->dns);
    spool_close(d->sp);
    qmgr_free(d->q);
    if (d->wake_ev)
        event_free(d->wake_ev);
    if (d->stop_check)
        event_free(d->stop_check);
    if (d->wake_fd > 0)
        close(d->wake_fd);
    local_server_free(d->local);
    smtpd_server_free(d->smtpd);
    smtpd_server_free(d->submission);
    route_free(d->routes);
    qmgr_tls_free(d->tls);
    conf_rules_free(d->rules);
    deliver_spawner_free(d->spawner);
    dkim_keys_free(d->dkim);
    if (d->base)
        event_base_free(d->base);
    conf_free(d->conf);
    if (d->lock_fd > 0)
        close(d->lock_fd);
    free(d->queue_directory);
}

#define USAGE "usage: sluiced [-f] [-c FILE]\n"

static int usage(void)
{
    fprintf(stderr, USAGE);
    return 64;
}

static int help(void)
{
    printf(USAGE
           "\n"
           "The sluice delivery daemon and SMTP server (see sluiced(8)).\n"
           "  -f          stay in the foreground, log to stderr\n"
           "  -c FILE     read FILE instead of $SLUICE_CONFIG or "
           "/etc/sluice/sluice.conf\n"
           "  --help      show this text\n"
           "  --version   print the version\n");
    return 0;
}

/* --help and --version, the only long options; also -h. */
static int long_option(int argc, char **argv, int *rc)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            *rc = help();
            return 1;
        }
        if (strcmp(argv[i], "--version") == 0) {
            printf("sluiced %s\n", SLUICE_VERSION);
            *rc = 0;
            return 1;
        }
        if (strcmp(argv[i], "-c") == 0)
            i++; /* FILE may be any word */
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct daemon d = {0};
    struct event *sig[4];
    static const int signals[4] = {SIGTERM, SIGINT, SIGHUP, 0};
    int c, rc = 0;

    if (long_option(argc, argv, &rc))
        return rc;
    util_panic_hook_set(panic_log);
    while ((c = getopt(argc, argv, "fc:")) != -1) {
        switch (c) {
        case 'f':
            d.foreground = 1;
            break;
        case 'c':
            d.config = optarg;
            break;
        default:
            return usage();
        }
    }
    if (optind != argc)
        return usage();
    signal(SIGPIPE, SIG_IGN);
    if (!d.foreground) {
        daemon_log_syslog();
        if (daemon(0, 0) < 0) {
            say(LOG_ERR, "cannot detach: %s", strerror(errno));
            return 1;
        }
    }
    d.wake_fd = -1;
    d.lock_fd = -1;
    if (start(&d) < 0) {
        finish(&d);
        return 1;
    }
    say(LOG_INFO, "started: queue %s", d.queue_directory);
    import_and_wake(&d);
    daemon_notify("READY=1");
    for (int i = 0; signals[i]; i++) {
        sig[i] = evsignal_new(d.base, signals[i], signal_cb, &d);
        event_add(sig[i], NULL);
    }
    event_base_dispatch(d.base);
    for (int i = 0; signals[i]; i++)
        event_free(sig[i]);
    {
        struct qmgr_stats st;

        qmgr_stats(d.q, &st);
        say(LOG_INFO,
            "stopped: %ld sent, %ld deferred, %ld bounced, %ld messages "
            "removed",
            st.delivered, st.deferred, st.bounced, st.removed);
    }
    finish(&d);
    return rc;
}
