#ifndef SLUICE_CORE_IMPL_H
#define SLUICE_CORE_IMPL_H

/*
 * NAME
 *	core_impl 3h - helpers shared by the files of core/, and only by them
 * SYNOPSIS
 *	#include "core/core_impl.h"
 *
 *	void	*core_alloc(size_t size)
 *	char	*core_strdup(const char *s)
 *	void	core_log(struct core *core, enum core_log_level level,
 *			const char *fmt, ...)
 *	void	core_panic(struct core *core, const char *fmt, ...)
 *	void	core_timer_arm(struct core *core, struct core_timer *timer,
 *			core_time_t when)
 *	void	core_timer_disarm(struct core *core, struct core_timer *timer)
 *
 *	void	core_transport_free(struct core_transport *t)
 *	int	core_transport_can_start(const struct core_transport *t)
 *	void	core_transport_start(struct core_transport *t)
 *	void	core_transport_done(struct core_transport *t, core_time_t now)
 *	int	core_queue_limit(const struct core_queue *q)
 *	int	core_queue_open(const struct core_queue *q)
 *
 *	Jobs, entries, messages (job.c, entry.c, message.c):
 *	struct core_job *core_job_create(struct core_message *m,
 *			struct core_transport *t)
 *	void	core_job_free(struct core_job *job)
 *	void	core_job_entry_added(struct core_job *job)
 *	void	core_job_entry_dropped(struct core_job *job)
 *	void	core_job_entry_selected(struct core_job *job)
 *	void	core_job_block(struct core_job *job)
 *	void	core_job_unstack(struct core_job *job)
 *	void	core_job_retire(struct core_job *job)
 *	void	core_candidate_reset(struct core_transport *t)
 *	void	core_queue_unblock(struct core_queue *q)
 *	void	core_queue_destroy(struct core_queue *q)
 *	void	core_queue_drop_entries(struct core_queue *q)
 *	void	core_queue_defer_todo(struct core_queue *q, const char *reason)
 *	void	core_entry_start(struct core_entry *e, core_time_t now)
 *	void	core_entry_free(struct core_entry *e)
 *	void	core_entry_free_rcpts(struct core_entry *e)
 *	void	core_message_free(struct core_message *m)
 * DESCRIPTION
 *	core_alloc() and core_strdup() never return NULL: running out of
 *	memory aborts, so call sites stay short. core_log() formats a line
 *	and hands it to the log callback. core_panic() reports a broken
 *	invariant (a bug, never bad input) through the log callback and
 *	aborts. Timers are kept in one list sorted by time; arming searches
 *	from the tail, because most timers are set to "now + a fixed
 *	delay" and so belong at the end.
 *
 *	The transport functions are the transport's half of a delivery
 *	start and end (queue.c calls them); core_queue_limit() is the
 *	queue's effective concurrency limit (1 under a destination rate
 *	delay, 0 for none); core_queue_open() says whether the queue itself
 *	(not counting its transport) may start one more delivery.
 *
 *	The job, entry and message functions are described in job.c,
 *	entry.c and message.c.
 */

#include "core/core.h"

void *core_alloc(size_t size);
char *core_strdup(const char *s);
void core_log(struct core *core, enum core_log_level level, const char *fmt,
              ...) __attribute__((format(printf, 3, 4)));
void core_panic(struct core *core, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
void core_timer_arm(struct core *core, struct core_timer *timer,
                    core_time_t when);
void core_timer_disarm(struct core *core, struct core_timer *timer);
void core_transport_free(struct core_transport *t);
int core_transport_can_start(const struct core_transport *t);
void core_transport_start(struct core_transport *t);
void core_transport_done(struct core_transport *t, core_time_t now);
int core_queue_limit(const struct core_queue *q);
int core_queue_open(const struct core_queue *q);

struct core_job *core_job_create(struct core_message *m,
                                 struct core_transport *t);
void core_job_free(struct core_job *job);
void core_job_entry_added(struct core_job *job);
void core_job_entry_dropped(struct core_job *job);
void core_job_entry_selected(struct core_job *job);
void core_job_block(struct core_job *job);
void core_job_unstack(struct core_job *job);
void core_job_retire(struct core_job *job);
void core_candidate_reset(struct core_transport *t);
void core_queue_unblock(struct core_queue *q);
void core_queue_destroy(struct core_queue *q);
void core_queue_drop_entries(struct core_queue *q);
void core_queue_defer_todo(struct core_queue *q, const char *reason);
void core_entry_start(struct core_entry *e, core_time_t now);
void core_entry_free(struct core_entry *e);
void core_entry_free_rcpts(struct core_entry *e);
void core_message_free(struct core_message *m);

#endif
