/*
 * NAME
 *	retry 3 - backoff and expiry of deferred messages
 * SYNOPSIS
 *	#include "qmgr/qmgr.h"
 *
 *	void	qmgr_retry_params(const struct conf *conf, struct qmgr_retry *r)
 *	enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r,
 *			int deferred, int null_sender, int64_t arrival,
 *			int64_t now, int64_t *next_attempt)
 *	int64_t	qmgr_retry_jitter(int64_t wait, uint32_t rnd)
 * DESCRIPTION
 *	See qmgr.h. The backoff is the message's age rather than a count of
 *	attempts, as in the reference: a message retried when due has aged
 *	by the previous wait, so the wait doubles without any state beyond
 *	the arrival time, and a message that waited longer (a stopped
 *	daemon, a held message) is not retried in a burst.
 */

#include "qmgr/qmgr.h"

void qmgr_retry_params(const struct conf *conf, struct qmgr_retry *r)
{
    r->min_backoff = conf_time_ms(conf, NULL, CONF_minimal_backoff_time) * 1000;
    r->max_backoff = conf_time_ms(conf, NULL, CONF_maximal_backoff_time) * 1000;
    r->lifetime = conf_time_ms(conf, NULL, CONF_maximal_queue_lifetime) * 1000;
    r->bounce_lifetime =
        conf_time_ms(conf, NULL, CONF_bounce_queue_lifetime) * 1000;
}

int64_t qmgr_retry_jitter(int64_t wait, uint32_t rnd)
{
    /* rnd % 1001 in thousandths of a tenth: 0 to 10 % more. */
    return wait + wait * (int64_t)(rnd % 1001) / 10000;
}

enum qmgr_fate qmgr_retry_decide(const struct qmgr_retry *r, int deferred,
                                 int null_sender, int64_t arrival, int64_t now,
                                 int64_t *next_attempt)
{
    int64_t lifetime = null_sender ? r->bounce_lifetime : r->lifetime;
    int64_t age = now - arrival;
    int64_t wait = age;

    if (!deferred)
        return QMGR_DONE;
    if (lifetime == 0 || age > lifetime)
        return QMGR_EXPIRE;
    if (wait > r->max_backoff)
        wait = r->max_backoff;
    if (wait < r->min_backoff)
        wait = r->min_backoff;
    *next_attempt = now + wait;
    return QMGR_RETRY;
}
