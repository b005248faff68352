/*
 * NAME
 *	spawn 3 - the messages between sluiced and its agent spawner
 * SYNOPSIS
 *	#include "deliver/agent_impl.h"
 *
 *	void	spawn_encode(struct util_buf *b, const struct spawn_msg *m)
 *	int	spawn_decode(char *buf, size_t n, struct spawn_msg *m,
 *			char *why, size_t whylen)
 * DESCRIPTION
 *	sluiced and the spawner (spawner.c, decision 134) talk over a
 *	SOCK_SEQPACKET socket pair, one message per packet: a fixed
 *	header (struct spawn_head: a magic number, the type, a sequence
 *	number, a pid, a value, the counts of argv and environment
 *	strings, the length of what follows) and then exactly that many
 *	NUL-terminated strings. Both ends are the same program on the
 *	same machine: numbers are in the host's order.
 *
 *	sluiced sends START (argv and environment; the agent's standard
 *	input, output and error ride along as SCM_RIGHTS) and KILL (a pid
 *	and SIGTERM or SIGKILL). The spawner answers STARTED (the pid) or
 *	FAILED (errno in value, a reason), reports EXIT (a pid and its
 *	wait status) for every agent it reaped, and REFUSED (a reason) for
 *	a message it could not take.
 *
 *	spawn_encode() appends one message to b. spawn_decode() checks a
 *	received packet of n bytes strictly and fills m with pointers into
 *	buf: the magic, a known type, the length matching the packet, the
 *	counts within SPAWN_ARGV_MAX and SPAWN_ENV_MAX, exactly the
 *	announced strings filling the rest (a non-empty program, every
 *	environment string NAME=VALUE), the fields each type does not use
 *	zero; -1 with why otherwise. It never reads past n.
 */

#include "deliver/agent_impl.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define SPAWN_MAGIC 0x73706e31u /* "spn1" */

struct spawn_head {
    uint32_t magic;
    uint32_t type;
    uint32_t seq;
    int32_t pid;
    int32_t value;
    uint32_t argc;
    uint32_t envc;
    uint32_t len; /* bytes of strings after the header */
};

static void strings_put(struct util_buf *b, char *const *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        util_buf_add(b, v[i], strlen(v[i]) + 1);
}

void spawn_encode(struct util_buf *b, const struct spawn_msg *m)
{
    struct spawn_head h = {SPAWN_MAGIC, (uint32_t)m->type,
                           m->seq,      (int32_t)m->pid,
                           m->value,    0,
                           0,           0};
    size_t at = b->len;

    util_buf_add(b, &h, sizeof(h));
    if (m->type == SPAWN_START) {
        h.argc = (uint32_t)m->argc;
        h.envc = (uint32_t)m->envc;
        strings_put(b, m->argv, m->argc);
        strings_put(b, m->env, m->envc);
    } else if (m->text != NULL) {
        h.argc = 1;
        util_buf_add(b, m->text, strlen(m->text) + 1);
    }
    h.len = (uint32_t)(b->len - at - sizeof(h));
    memcpy(b->data + at, &h, sizeof(h));
}

/* Split n bytes into exactly count NUL-terminated strings. */
static int strings_get(char *p, size_t n, char **out, size_t count)
{
    size_t k = 0, start = 0;

    for (size_t i = 0; i < n; i++) {
        if (p[i] != 0)
            continue;
        if (k == count)
            return -1;
        out[k++] = p + start;
        start = i + 1;
    }
    return k == count && start == n ? 0 : -1;
}

static int start_check(struct spawn_msg *m, char *s, size_t len, char *why,
                       size_t whylen)
{
    char *all[SPAWN_ARGV_MAX + SPAWN_ENV_MAX];

    if (m->argc < 1 || m->argc > SPAWN_ARGV_MAX || m->envc > SPAWN_ENV_MAX) {
        snprintf(why, whylen, "start: %zu arguments, %zu environment strings",
                 m->argc, m->envc);
        return -1;
    }
    if (m->pid != 0 || m->value != 0 ||
        strings_get(s, len, all, m->argc + m->envc) < 0) {
        snprintf(why, whylen, "start: malformed strings");
        return -1;
    }
    memcpy(m->argv, all, m->argc * sizeof(*all));
    m->argv[m->argc] = NULL;
    memcpy(m->env, all + m->argc, m->envc * sizeof(*all));
    m->env[m->envc] = NULL;
    if (m->argv[0][0] == 0) {
        snprintf(why, whylen, "start: an empty program name");
        return -1;
    }
    for (size_t i = 0; i < m->envc; i++)
        if (m->env[i][0] == '=' || strchr(m->env[i], '=') == NULL) {
            snprintf(why, whylen,
                     "start: environment string %zu is not "
                     "NAME=VALUE",
                     i + 1);
            return -1;
        }
    return 0;
}

/* What every type but START carries: a pid, a value, a text or not. */
static int other_check(struct spawn_msg *m, const struct spawn_head *h, char *s,
                       size_t len, char *why, size_t whylen)
{
    int text = m->type == SPAWN_FAILED || m->type == SPAWN_REFUSED;
    int pid = m->type != SPAWN_REFUSED && m->type != SPAWN_FAILED;

    if (h->envc != 0 || h->argc != (text ? 1u : 0u) ||
        (text && strings_get(s, len, &m->text, 1) < 0) || (!text && len != 0) ||
        (pid && m->pid <= 0) || (!pid && m->pid != 0)) {
        snprintf(why, whylen, "message type %u: malformed", h->type);
        return -1;
    }
    if (m->type == SPAWN_KILL && m->value != SIGTERM && m->value != SIGKILL) {
        snprintf(why, whylen, "kill: signal %d refused", m->value);
        return -1;
    }
    if (m->type == SPAWN_STARTED && m->value != 0) {
        snprintf(why, whylen, "started: malformed");
        return -1;
    }
    return 0;
}

int spawn_decode(char *buf, size_t n, struct spawn_msg *m, char *why,
                 size_t whylen)
{
    struct spawn_head h;

    memset(m, 0, sizeof(*m));
    if (n < sizeof(h) || n > SPAWN_MSG_MAX) {
        snprintf(why, whylen, "a message of %zu bytes", n);
        return -1;
    }
    memcpy(&h, buf, sizeof(h));
    if (h.magic != SPAWN_MAGIC || h.type < SPAWN_START ||
        h.type > SPAWN_REFUSED || h.len != n - sizeof(h)) {
        snprintf(why, whylen, "a malformed header");
        return -1;
    }
    m->type = (enum spawn_type)h.type;
    m->seq = h.seq;
    m->pid = (pid_t)h.pid;
    m->value = h.value;
    m->argc = h.argc;
    m->envc = h.envc;
    if (m->type == SPAWN_START)
        return start_check(m, buf + sizeof(h), h.len, why, whylen);
    m->argc = m->envc = 0;
    return other_check(m, &h, buf + sizeof(h), h.len, why, whylen);
}
