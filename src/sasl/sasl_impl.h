#ifndef SLUICE_SASL_IMPL_H
#define SLUICE_SASL_IMPL_H

/*
 * NAME
 *	sasl_impl 3h - what the sasl/ layer's files share
 * SYNOPSIS
 *	#include "sasl/sasl_impl.h"
 *
 *	The back ends (file.c, dovecot.c), for the server:
 *
 *	extern const struct sasl_backend sasl_file_backend
 *	extern const struct sasl_backend sasl_dovecot_backend
 *
 *	The server (server.c), for the back ends:
 *
 *	void	sasl_conv_reply(struct sasl_conv *c, enum sasl_result r,
 *			const char *text)
 *
 *	The worker thread (worker.c), for the passwd-file back end:
 *
 *	struct sasl_worker *sasl_worker_create(struct event_base *base,
 *			char *why, size_t whylen)
 *	struct sasl_job *sasl_worker_submit(struct sasl_worker *w,
 *			const struct sasl_entry *e, const char *password,
 *			void (*done)(void *arg, int match), void *arg)
 *	void	sasl_job_cancel(struct sasl_job *j)
 *	void	sasl_worker_free(struct sasl_worker *w)
 * DESCRIPTION
 *	A back end is a vtable (struct sasl_backend): create its state
 *	from the parameters (base NULL: check only), free it, start a
 *	conversation, take the client's next response, and forget a
 *	conversation (abort). It answers through sasl_conv_reply(), which
 *	server.c delivers from the loop: a back end may call it from
 *	inside start or step.
 */

#include "sasl/sasl.h"

#include <sys/queue.h>

struct event;
struct sasl_job;
struct sasl_worker;

struct sasl_backend {
    const char *name;
    void *(*create)(struct event_base *base, const struct sasl_params *p,
                    char *why, size_t whylen);
    void (*free)(void *be);
    void (*start)(struct sasl_conv *c, const char *initial);
    void (*step)(struct sasl_conv *c, const char *response);
    void (*abort)(struct sasl_conv *c);
};

struct sasl_server {
    const struct sasl_backend *ops;
    void *be;
    struct event_base *base;
    int refs; /* the owner and each conversation */
};

struct sasl_conv {
    struct sasl_server *s;
    sasl_reply_fn *fn;
    void *arg;
    char mech[SASL_MECH_MAX + 1];  /* upper case */
    char user[SASL_FIELD_MAX + 1]; /* the user name, once known */
    char rip[64], lip[64];
    int secured;
    int step;              /* responses taken so far */
    struct event *deliver; /* the answer, from the loop */
    enum sasl_result result;
    char text[SASL_FIELD_MAX * 2 + 64];
    /* the back end's */
    struct sasl_job *job;        /* passwd-file: a hash being checked */
    unsigned id;                 /* dovecot: the request's id */
    struct event *timer;         /* dovecot: its answer's deadline */
    TAILQ_ENTRY(sasl_conv) link; /* dovecot: requests under way */
    int linked;                  /* dovecot: in the list of requests */
    unsigned conn;               /* dovecot: the connection it began on */
    char *pending;               /* dovecot: its line, until sent */
};

extern const struct sasl_backend sasl_file_backend;
extern const struct sasl_backend sasl_dovecot_backend;

void sasl_conv_reply(struct sasl_conv *c, enum sasl_result r, const char *text);

struct sasl_worker *sasl_worker_create(struct event_base *base, char *why,
                                       size_t whylen);
struct sasl_job *sasl_worker_submit(struct sasl_worker *w,
                                    const struct sasl_entry *e,
                                    const char *password,
                                    void (*done)(void *arg, int match),
                                    void *arg);
void sasl_job_cancel(struct sasl_job *j);
void sasl_worker_free(struct sasl_worker *w);

#endif
