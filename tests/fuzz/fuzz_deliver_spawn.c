/*
 * NAME
 *	fuzz_deliver_spawn 1 - libFuzzer target: the agent spawner's
 *	messages (deliver/spawn.c)
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	The input is one packet as the spawner (or sluiced) receives it,
 *	given to spawn_decode() under AddressSanitizer and UBSan. It checks
 *	the contract: a refusal says why; an accepted START has 1 to
 *	SPAWN_ARGV_MAX arguments and at most SPAWN_ENV_MAX environment
 *	strings, NULL-terminated arrays, every string inside the packet,
 *	a non-empty program and NAME=VALUE environment strings; any
 *	accepted message encodes again (spawn_encode()) to the same
 *	bytes. The seed corpus is tests/fuzz/corpus/deliver_spawn/.
 */

#include "deliver/agent_impl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inside(const char *s, const char *buf, size_t size)
{
    if (s < buf || s + strlen(s) >= buf + size)
        abort();
}

static void check(const struct spawn_msg *m, const char *buf, size_t size)
{
    if (m->type != SPAWN_START)
        return;
    if (m->argc < 1 || m->argc > SPAWN_ARGV_MAX || m->envc > SPAWN_ENV_MAX ||
        m->argv[m->argc] != NULL || m->env[m->envc] != NULL ||
        m->argv[0][0] == 0)
        abort();
    for (size_t i = 0; i < m->argc; i++)
        inside(m->argv[i], buf, size);
    for (size_t i = 0; i < m->envc; i++) {
        inside(m->env[i], buf, size);
        if (m->env[i][0] == '=' || strchr(m->env[i], '=') == NULL)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct util_buf again = UTIL_BUF_INIT;
    struct spawn_msg m;
    char why[200] = "", *buf = malloc(size + 1);

    memcpy(buf, data, size);
    if (spawn_decode(buf, size, &m, why, sizeof(why)) < 0) {
        if (why[0] == 0)
            abort();
        free(buf);
        return 0;
    }
    check(&m, buf, size);
    spawn_encode(&again, &m);
    if (again.len != size || memcmp(again.data, data, size) != 0)
        abort();
    util_buf_free(&again);
    free(buf);
    return 0;
}
