#ifndef SLUICE_DAEMON_H
#define SLUICE_DAEMON_H

/*
 * NAME
 *	daemon 3h - the process shell: configuration, one daemon per
 *	queue, wake-ups
 * SYNOPSIS
 *	#include "daemon/daemon.h"
 *
 *	struct conf *daemon_conf_create(void)
 *	struct conf *daemon_conf_open(const char *opt_path, char *why,
 *			size_t whylen)
 *	void	daemon_spool_config(const struct conf *conf,
 *			struct spool_config *cf)
 *	int	daemon_config_load(const char *opt_path,
 *			struct daemon_config *cf, conf_warn_fn *warn,
 *			void *ctx, char *why, size_t whylen)
 *	void	daemon_config_free(struct daemon_config *cf)
 *	void	daemon_smtpd_params(const struct conf *conf,
 *			const char *queue_directory, struct smtpd_params *p)
 *	char	*daemon_dns_servers(const struct conf *conf)
 *	int	daemon_dkim_signs(const struct conf *conf)
 *	int	daemon_dkim_load(const struct conf *conf,
 *			struct dkim_keys **keys, char *why, size_t whylen)
 *
 *	struct conf *daemon_submission_conf(const char *opt_path,
 *			const struct conf *conf, char *why, size_t whylen)
 *	void	daemon_submission_params(const struct conf *sub,
 *			const char *queue_directory, struct smtpd_params *p)
 *
 *	int	daemon_pid_lock(const char *queue_directory, char *why,
 *			size_t whylen)
 *	long	daemon_pid_running(const char *queue_directory)
 *
 *	int	daemon_wake_listen(const char *queue_directory, char *why,
 *			size_t whylen)
 *	void	daemon_wake_send(const char *queue_directory)
 *
 *	int	daemon_privilege_drop(const struct conf *conf,
 *			conf_warn_fn *warn, void *ctx, char *note,
 *			size_t notelen, char *why, size_t whylen)
 *	void	daemon_privilege_done(void)
 *	int	daemon_privilege_dropped(void)
 *	void	daemon_notify(const char *state)
 *
 *	void	daemon_log_syslog(void)
 *	int	daemon_log_file(const char *path, char *why, size_t whylen)
 *	void	daemon_logv(int prio, const char *service, const char *fmt,
 *			va_list ap)
 *
 *	struct ops_control *daemon_control_create(struct event_base *base,
 *			const char *queue_directory, struct qmgr *q,
 *			daemon_control_log_fn *log, void *log_ctx,
 *			char *why, size_t whylen)
 *	void	daemon_verify_command(struct ops_control *c, struct qmgr *q)
 *	int	daemon_verify_args(const char *args, int *cached,
 *			long *wait_ms, char ***addresses, size_t *n,
 *			char *why, size_t whylen)
 *	int	daemon_status_args(const char *args, int *json,
 *			long *max_destinations, char *why, size_t whylen)
 *	int	daemon_inject_route(struct ops_http *http,
 *			const struct conf *conf,
 *			const struct daemon_inject_ops *ops,
 *			char *why, size_t whylen)
 *	int	daemon_http_create(struct event_base *base,
 *			const struct conf *conf, struct qmgr *q,
 *			const struct daemon_inject_ops *inject,
 *			struct ops_http **http, char *why, size_t whylen)
 * DESCRIPTION
 *	daemon/ is sluiced's process shell (main.c: options, logging,
 *	signals, reload, limits, the stop) and what the commands share
 *	with it, so that they agree with the daemon without reaching into
 *	the queue manager.
 *
 *	daemon_conf_create() and daemon_config_load() give the
 *	configuration as sluiced takes it, with every check sluiced makes
 *	(config.c): sluiced, "sluice config" and "sluice reload" share
 *	them. daemon_conf_open() is daemon_conf_create() and conf_load() of
 *	the file conf_path(opt_path) chooses, without the other checks (the
 *	commands that only read parameters use it); NULL with the reason in
 *	why. daemon_spool_config() fills the spool's configuration
 *	(queue_directory, queue_map_size, queue_map_size_limit) from conf;
 *	strings point into conf. daemon_smtpd_params() and daemon_dns_servers() turn
 *	parameters into what the SMTP server and the resolver take.
 *	daemon_submission_conf() and daemon_submission_params() (submission.c)
 *	do the same for the submission listener, with its overrides.
 *
 *	One daemon per queue: daemon_pid_lock() takes an exclusive lock on
 *	QUEUE_DIRECTORY/pid and writes the caller's pid into it; it returns
 *	the descriptor, to keep open for as long as the daemon runs, or -1
 *	with the reason ("another sluiced (pid N) is running on queue
 *	DIR"). daemon_pid_running() returns the pid of the daemon holding
 *	that lock, or 0 when none does, without taking it.
 *
 *	The wake-up socket lets programs that stored mail say so:
 *	daemon_wake_listen() binds a datagram socket at
 *	QUEUE_DIRECTORY/public/wakeup (mode 0666 in a 0755 directory) and
 *	returns its descriptor (non-blocking), or -1 with a reason;
 *	daemon_wake_send() sends it one datagram and ignores every error
 *	(no daemon: the mail waits for the next start or queue run).
 *
 *	daemon_privilege_drop() (privilege.c) makes a daemon started as
 *	root run as mail_owner, queue_directory its own, keeping only the
 *	right to bind ports below 1024 until daemon_privilege_done();
 *	a mail_owner that does not exist is an error when the
 *	configuration names it, a warning at the built-in default
 *	(decision 89); daemon_privilege_dropped() says whether it did.
 *	daemon_notify() (notify.c) sends systemd a state
 *	("READY=1") on $NOTIFY_SOCKET, if set.
 *
 *	daemon_logv() (log.c) writes one log line tagged as Postfix tags
 *	its own, "sluice/SERVICE[PID]", to standard error with an RFC 3339
 *	time and the host name, or to syslog after daemon_log_syslog(),
 *	and to maillog_file once daemon_log_file() has opened it.
 *
 *	daemon_control_create() (control.c) opens the control socket
 *	(ops/, QUEUE_DIRECTORY/private/control, mode 0660) with sluiced's
 *	verbs: "status [--json] [--all | --destinations N]", the queue
 *	manager's state, busiest destinations first, at most
 *	DAEMON_STATUS_DESTINATIONS of each transport unless asked
 *	otherwise; "suspend DESTINATION [DURATION]" and "resume
 *	DESTINATION", the operator's suspension of a destination (log
 *	gets the line each one logs). daemon_http_create() starts the HTTP
 *	listener of http_listen, if any: GET /metrics (Prometheus) and GET
 *	/api/status (the JSON of sluice status --json), and with
 *	http_token_file POST /api/inject (daemon_inject_route(), inject.c:
 *	messages from a program, answered once they are in the spool). daemon_status_args() checks status's arguments, for the
 *	daemon and for `sluice status`.
 */

#include "conf/conf.h"

#include <stdarg.h>
#include <stddef.h>

struct event_base;
struct ops_control;
struct ops_http;
struct qmgr;
struct dkim_keys;
struct conf_rules;
struct route_table;
struct smtpd_params;
struct spool_config;
struct spool_msg;

#define DAEMON_STATUS_DESTINATIONS 50

/* A configuration that passed every check sluiced makes. */
struct daemon_config {
    struct conf *conf;
    struct route_table *routes;
    struct qmgr_tls *tls;     /* the SMTP client's TLS (qmgr_tls_load()) */
    struct dkim_keys *dkim;   /* DKIM signing keys; NULL: no signing */
    struct conf_rules *rules; /* scheduler_rules; NULL: none */
    const char *path;         /* the file read (it may be missing) */
};

struct conf *daemon_conf_create(void);
struct conf *daemon_conf_open(const char *opt_path, char *why, size_t whylen);
void daemon_spool_config(const struct conf *conf, struct spool_config *cf);
int daemon_privilege_drop(const struct conf *conf, conf_warn_fn *warn,
                          void *ctx, char *note, size_t notelen, char *why,
                          size_t whylen);
void daemon_privilege_done(void);
int daemon_privilege_dropped(void);
void daemon_notify(const char *state);
int daemon_config_load(const char *opt_path, struct daemon_config *cf,
                       conf_warn_fn *warn, void *ctx, char *why, size_t whylen);
void daemon_config_free(struct daemon_config *cf);
void daemon_smtpd_params(const struct conf *conf, const char *queue_directory,
                         struct smtpd_params *p);
char *daemon_dns_servers(const struct conf *conf);
int daemon_dkim_signs(const struct conf *conf);
int daemon_dkim_load(const struct conf *conf, struct dkim_keys **keys,
                     char *why, size_t whylen);
struct conf *daemon_submission_conf(const char *opt_path,
                                    const struct conf *conf, char *why,
                                    size_t whylen);
void daemon_submission_params(const struct conf *sub,
                              const char *queue_directory,
                              struct smtpd_params *p);

int daemon_pid_lock(const char *queue_directory, char *why, size_t whylen);
long daemon_pid_running(const char *queue_directory);
int daemon_wake_listen(const char *queue_directory, char *why, size_t whylen);
void daemon_wake_send(const char *queue_directory);
void daemon_log_syslog(void);
int daemon_log_file(const char *path, char *why, size_t whylen);
void daemon_logv(int prio, const char *service, const char *fmt, va_list ap);

typedef void daemon_control_log_fn(void *ctx, const char *line);
struct ops_control *
daemon_control_create(struct event_base *base, const char *queue_directory,
                      struct qmgr *q, daemon_control_log_fn *log, void *log_ctx,
                      char *why, size_t whylen);
/* The verify verb (verify.c). */
#define DAEMON_VERIFY_MAX     64    /* addresses in one request */
#define DAEMON_VERIFY_WAIT_MS 10000 /* the longest wait, unless told */
void daemon_verify_command(struct ops_control *c, struct qmgr *q);
int daemon_verify_args(const char *args, int *cached, long *wait_ms,
                       char ***addresses, size_t *n, char *why, size_t whylen);

int daemon_status_args(const char *args, int *json, long *max_destinations,
                       char *why, size_t whylen);
/* The daemon's side of the injection API (inject.c). */
typedef void daemon_inject_done_fn(void *ctx, int status, const char *id,
                                   const char *why);
struct daemon_inject_ops {
    const struct conf *(*conf)(void *ctx); /* in force now */
    void (*store)(void *ctx, struct spool_msg *m, const char *origin,
                  daemon_inject_done_fn *done, void *done_ctx);
    void *ctx;
};
int daemon_inject_route(struct ops_http *http, const struct conf *conf,
                        const struct daemon_inject_ops *ops, char *why,
                        size_t whylen);
int daemon_http_create(struct event_base *base, const struct conf *conf,
                       struct qmgr *q, const struct daemon_inject_ops *inject,
                       struct ops_http **http, char *why, size_t whylen);

#endif
