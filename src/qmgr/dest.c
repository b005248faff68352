/*
 * NAME
 *	dest 3 - destination queues: created with their route, freed when idle
 * SYNOPSIS
 *	#include "qmgr/qmgr_impl.h"
 *
 *	struct core_queue *qm_dest_queue(struct qmgr *q,
 *			const struct route_result *r)
 *	void	qm_dest_release(struct core_queue *cq)
 *	void	qm_dest_sweep(struct qmgr *q)
 * DESCRIPTION
 *	qm_dest_queue() finds or creates the destination queue of route r
 *	(and its transport), keeping the route with it. qm_dest_release()
 *	frees a queue that has nothing left to remember; qm_dest_sweep()
 *	does so for every queue, at each queue run.
 */

#include "qmgr/qmgr_impl.h"

#include <stdlib.h>
#include <string.h>

struct core_queue *qm_dest_queue(struct qmgr *q, const struct route_result *r)
{
    struct core_transport *t = core_transport_find(q->core, r->transport);
    struct core_queue *cq;
    const char *key;

    if (t == NULL) {
        struct core_transport_params p;

        conf_core_params(q->conf, r->transport, &p);
        t = core_transport_create(q->core, r->transport, &p);
    }
    /* Queues live in their transport, by the queue key, so that core/'s
     * lines read "smtp:example.com: ..." as Postfix's do. */
    key = r->key.queue;
    if ((cq = core_queue_find(t, key)) == NULL) {
        struct qm_dest *d = xcalloc(1, sizeof(*d));

        d->route = *r;
        d->route.address = NULL; /* the one field that points outside */
        d->q = q;
        cq = core_queue_create(t, key);
        core_queue_ctx_set(cq, d);
        qm_cluster_queue(q, cq);
    }
    return cq;
}

/*
 * Free a destination queue with nothing waiting, nothing in flight and no
 * state to remember (not dead, no rate delay running, no failures that a
 * success has not cleared: mail trickling to a dead site must still add
 * up to a dead destination): its route goes with it, and the next mail
 * for it starts at the initial window. In a cluster a queue whose
 * idle connections the agent keeps stays until they close, so that its
 * leases cover them (decision 111); the sweep frees it then.
 */
void qm_dest_release(struct core_queue *cq)
{
    struct qm_dest *dest = core_queue_ctx(cq);
    void *d;

    if (qm_cluster_keeps(dest->q, cq))
        return;
    if (core_queue_release(cq, &d))
        free(d);
}

/* Dead destinations that came back idle, and any other idle queue. */
void qm_dest_sweep(struct qmgr *q)
{
    struct core_transport *t = NULL;

    while ((t = core_transport_next(q->core, t)) != NULL) {
        struct core_queue *cq, *next;

        for (cq = core_queue_next(t, NULL); cq != NULL; cq = next) {
            next = core_queue_next(t, cq);
            qm_dest_release(cq);
        }
    }
}
