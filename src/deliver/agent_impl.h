#ifndef SLUICE_AGENT_IMPL_H
#define SLUICE_AGENT_IMPL_H

/*
 * NAME
 *	agent_impl 3h - what the external agents' files share
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	The hungry protocol's codec (hungry.c):
 *
 *	void	hungry_xtext(struct util_buf *b, const char *s)
 *	char	*hungry_unxtext(const char *s, size_t n)
 *	void	hungry_job(struct util_buf *b, const char *id, size_t size,
 *			const char *sender, const struct deliver_rcpt *rcpt,
 *			size_t n)
 *	void	hungry_content(struct util_buf *b, const char *body,
 *			size_t len)
 *	int	hungry_parse(const char *line, size_t len, size_t nrcpt,
 *			struct hungry_line *out, char *why, size_t whylen)
 *
 *	One agent and its job (agent.c), for connection.c:
 *
 *	void	agent_job_start(struct deliver_session *s)
 *	void	agent_job_cancel(struct deliver_session *s)
 *
 *	The pool (pool.c), for agent.c and cache.c:
 *
 *	struct agent_pool *agent_pool_create(struct event_base *base)
 *	void	agent_pool_free(struct agent_pool *p)
 *	void	agent_pool_log_set(struct agent_pool *p,
 *			deliver_agent_log_fn *fn, void *ctx)
 *	void	agent_pool_log(struct agent_pool *p, int warning,
 *			const char *channel, const char *fmt, ...)
 *	struct agent *agent_pool_take(struct agent_pool *p, const char *key,
 *			char *const *argv)
 *	void	agent_pool_put(struct agent_pool *p, struct agent *a)
 *	void	agent_pool_add(struct agent_pool *p, struct agent *a)
 *	void	agent_pool_remove(struct agent_pool *p, struct agent *a)
 *	int	agent_pool_wait(struct agent_pool *p, const char *key)
 *	void	agent_pool_failed(struct agent_pool *p, const char *key,
 *			int restart_ms)
 *	void	agent_pool_reap(struct agent_pool *p, pid_t pid,
 *			const char *channel, int term)
 *	size_t	agent_pool_count(const struct agent_pool *p)
 *	void	agent_pool_counted(struct agent_pool *p, const char *channel,
 *			int started)
 *	size_t	agent_pool_stats(const struct agent_pool *p,
 *			struct deliver_agent_stats *out, size_t max)
 *
 *	struct agent_pool *deliver_cache_agent_pool(struct deliver_cache *c)
 *
 *	void	agent_end(struct agent *a, int term)
 *	void	agent_pool_spawner_set(struct agent_pool *p,
 *			struct deliver_spawner *sp)
 *	struct deliver_spawner *agent_pool_spawner(struct agent_pool *p,
 *			const char *user, char *why, size_t whylen)
 *	void	agent_pool_kill(struct agent_pool *p, pid_t pid, int sig)
 *	int	agent_pool_exit_wait(struct agent_pool *p, pid_t pid,
 *			int ms, int *status)
 *
 *	The spawner's messages (spawn.c), the spawner (spawner.c) and
 *	sluiced's side of it (spawner_client.c):
 *
 *	void	spawn_encode(struct util_buf *b, const struct spawn_msg *m)
 *	int	spawn_decode(char *buf, size_t n, struct spawn_msg *m,
 *			char *why, size_t whylen)
 *	int	spawner_user_find(const char *name, const char *mail_owner,
 *			struct spawner_user *u, char *why, size_t whylen)
 *	void	spawner_main(int fd, const struct spawner_user *u)
 *	void	spawner_attach(struct deliver_spawner *sp,
 *			struct event_base *base, spawner_exit_fn *exit_fn,
 *			spawner_lost_fn *lost_fn, void *ctx)
 *	int	spawner_spawn(struct deliver_spawner *sp, char *const *argv,
 *			char *const *env, const int fds[3], pid_t *pid,
 *			char *why, size_t whylen)
 *	int	spawner_kill(struct deliver_spawner *sp, pid_t pid, int sig)
 *	int	spawner_wait(struct deliver_spawner *sp, pid_t pid, int ms,
 *			int *status)
 *	void	spawner_pump(struct deliver_spawner *sp, int ms)
 *	int	spawner_lost(const struct deliver_spawner *sp)
 *	int	spawner_restartable(const struct deliver_spawner *sp)
 *	struct deliver_spawner *spawner_restart(struct deliver_spawner *sp,
 *			char *why, size_t whylen)
 *	pid_t	spawner_pid(const struct deliver_spawner *sp)
 *	int	spawner_fd(const struct deliver_spawner *sp)
 * DESCRIPTION
 *	Nothing outside deliver/'s agent files (and their unit tests and
 *	fuzz target) includes this header; each file describes its
 *	functions. A struct agent is one running program: its pipes on
 *	the event loop, the job it has (a session), what it answered.
 */

#include "deliver/deliver.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

struct bufferevent;
struct event;
struct event_base;
struct deliver_session;

#define HUNGRY_READY "#hungry"

enum hungry_kind {
    HUNGRY_LINE_READY,  /* #hungry */
    HUNGRY_LINE_RESULT, /* N STATUS CODE [TEXT] */
};

struct hungry_line {
    enum hungry_kind kind;
    size_t index; /* RESULT: the recipient, from 0 */
    enum deliver_status status;
    char enhanced[16];
    const char *text; /* into the line; "" when none was given */
    size_t textlen;
};

void hungry_xtext(struct util_buf *b, const char *s);
char *hungry_unxtext(const char *s, size_t n);
void hungry_job(struct util_buf *b, const char *id, size_t size,
                const char *sender, const struct deliver_rcpt *rcpt, size_t n);
void hungry_content(struct util_buf *b, const char *body, size_t len);
int hungry_parse(const char *line, size_t len, size_t nrcpt,
                 struct hungry_line *out, char *why, size_t whylen);

enum agent_state {
    AGENT_STARTING, /* no #hungry yet */
    AGENT_BUSY,     /* a job fed, results coming */
    AGENT_IDLE,     /* in the pool */
};

struct agent_pool;

struct agent {
    struct agent_pool *pool;
    char *key;     /* the pool's: the request's cache_key */
    char **argv;   /* as started */
    char *channel; /* the transport */
    pid_t pid;
    int reaped; /* its exit collected: nothing to kill */
    int status; /* when reaped by the spawner: its wait status, or -1 */
    struct bufferevent *in, *out, *err; /* its stdin, stdout, stderr */
    struct event *timer;                /* the job's time limit, or idlemax */
    enum agent_state state;
    int hungry;                  /* said #hungry, nothing fed since */
    struct deliver_session *job; /* the delivery it serves, or NULL */
    size_t answered;             /* recipients answered in this job */
    size_t output;               /* bytes on stdout in this job */
    size_t err_lines;            /* stderr lines logged since the job */
    int jobs;                    /* jobs taken, this one included */
    TAILQ_ENTRY(agent) link;     /* the pool's list */
};

struct agent_pool *agent_pool_create(struct event_base *base);
void agent_pool_free(struct agent_pool *p);
void agent_pool_log_set(struct agent_pool *p, deliver_agent_log_fn *fn,
                        void *ctx);
void agent_pool_log(struct agent_pool *p, int warning, const char *channel,
                    const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
struct agent *agent_pool_take(struct agent_pool *p, const char *key,
                              char *const *argv);
void agent_pool_put(struct agent_pool *p, struct agent *a);
void agent_pool_drop(struct agent_pool *p, const char *key, size_t keep);
void agent_pool_add(struct agent_pool *p, struct agent *a);
void agent_pool_remove(struct agent_pool *p, struct agent *a);
int agent_pool_wait(struct agent_pool *p, const char *key);
void agent_pool_failed(struct agent_pool *p, const char *key, int restart_ms);
void agent_pool_reap(struct agent_pool *p, pid_t pid, const char *channel,
                     int term);
size_t agent_pool_count(const struct agent_pool *p);
void agent_pool_counted(struct agent_pool *p, const char *channel, int started);
size_t agent_pool_stats(const struct agent_pool *p,
                        struct deliver_agent_stats *out, size_t max);
struct event_base *agent_pool_base(const struct agent_pool *p);

struct agent_pool *deliver_cache_agent_pool(struct deliver_cache *c);

void agent_pool_spawner_set(struct agent_pool *p, struct deliver_spawner *sp);
struct deliver_spawner *agent_pool_spawner(struct agent_pool *p,
                                           const char *user, char *why,
                                           size_t whylen);
void agent_pool_kill(struct agent_pool *p, pid_t pid, int sig);
int agent_pool_exit_wait(struct agent_pool *p, pid_t pid, int ms, int *status);

/* The spawner's messages (spawn.c; decision 134). */
#define SPAWN_MSG_MAX  65536
#define SPAWN_ARGV_MAX 64
#define SPAWN_ENV_MAX  16

enum spawn_type {
    SPAWN_START = 1, /* sluiced: argv, env and three descriptors */
    SPAWN_KILL,      /* sluiced: pid, value the signal */
    SPAWN_STARTED,   /* spawner: seq, pid */
    SPAWN_FAILED,    /* spawner: seq, value an errno, text */
    SPAWN_EXIT,      /* spawner: pid, value its wait status */
    SPAWN_REFUSED,   /* spawner: seq when known, text */
};

struct spawn_msg {
    enum spawn_type type;
    uint32_t seq;
    pid_t pid;
    int value;
    size_t argc, envc;
    char *argv[SPAWN_ARGV_MAX + 1]; /* NULL-terminated */
    char *env[SPAWN_ENV_MAX + 1];   /* NULL-terminated */
    char *text;                     /* FAILED, REFUSED */
};

void spawn_encode(struct util_buf *b, const struct spawn_msg *m);
int spawn_decode(char *buf, size_t n, struct spawn_msg *m, char *why,
                 size_t whylen);

/* Whom the agents run as (spawner.c). */
#define SPAWNER_GROUPS_MAX 64

struct spawner_user {
    int change; /* 0: as the spawner runs */
    uid_t uid;
    gid_t gid;
    gid_t groups[SPAWNER_GROUPS_MAX];
    int ngroups;
    char refused[256]; /* not empty: every start fails with it */
};

int spawner_user_find(const char *name, const char *mail_owner,
                      struct spawner_user *u, char *why, size_t whylen);
void spawner_main(int fd, const struct spawner_user *u)
#if defined(__GNUC__)
    __attribute__((noreturn))
#endif
    ;

/* sluiced's side (spawner_client.c). */
typedef void spawner_exit_fn(void *ctx, pid_t pid, int status);
typedef void spawner_lost_fn(void *ctx, pid_t spawner, int status);

void spawner_attach(struct deliver_spawner *sp, struct event_base *base,
                    spawner_exit_fn *exit_fn, spawner_lost_fn *lost_fn,
                    void *ctx);
int spawner_spawn(struct deliver_spawner *sp, char *const *argv,
                  char *const *env, const int fds[3], pid_t *pid, char *why,
                  size_t whylen);
int spawner_kill(struct deliver_spawner *sp, pid_t pid, int sig);
int spawner_wait(struct deliver_spawner *sp, pid_t pid, int ms, int *status);
void spawner_pump(struct deliver_spawner *sp, int ms);
int spawner_lost(const struct deliver_spawner *sp);
int spawner_restartable(const struct deliver_spawner *sp);
struct deliver_spawner *spawner_restart(struct deliver_spawner *sp, char *why,
                                        size_t whylen);
pid_t spawner_pid(const struct deliver_spawner *sp);
int spawner_fd(const struct deliver_spawner *sp);

void agent_job_start(struct deliver_session *s);
void agent_job_cancel(struct deliver_session *s);
void agent_end(struct agent *a, int term);

#endif
