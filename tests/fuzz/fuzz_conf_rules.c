/*
 * NAME
 *	fuzz_conf_rules 1 - libFuzzer target: the scheduler rules file
 *	(scheduler_rules, ZMailer's scheduler.conf form)
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes to conf_rules_load() as a whole file (through
 *	util_table_read(), as the daemon reads it) and, line by line, to
 *	conf_rules_line() and conf_rules_finish(), under AddressSanitizer
 *	and UBSan: a crash, an overrun, a leak or undefined behaviour is a
 *	bug. It also checks the contract: a refusal says why; rules
 *	accepted match some channels and hosts, and what a match gives is
 *	sane (a rule index below the clause count, argv words that expand
 *	to terminated strings, retry delays that are positive). The seed
 *	corpus is tests/fuzz/corpus/conf_rules/.
 */

#include "conf/conf.h"
#include "core/core.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void probe(const struct conf_rules *r)
{
    static const char *const pairs[][2] = {
        {"smtp", "mx.example"}, {"lmtp", "a"}, {"mdir", "B.Example"},
        {"relay", ""},          {"x", "*"},
    };
    struct conf_rule_match m;
    struct core_zrule z;

    for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
        char **argv;

        if (conf_rules_match(r, pairs[i][0], pairs[i][1], &m) < 0)
            continue;
        if (m.index < 0 || (size_t)m.index >= conf_rules_count(r) ||
            !conf_rules_channel_known(r, pairs[i][0]))
            abort();
        if ((m.agent == CONF_RULE_PROGRAM) != (m.argc > 0))
            abort();
        argv = conf_rules_argv(&m, pairs[i][0], pairs[i][1]);
        for (int j = 0; j < m.argc; j++)
            if (argv[j] == NULL || strlen(argv[j]) > 1 << 20)
                abort();
        if (argv[m.argc] != NULL)
            abort();
        conf_rules_argv_free(argv);
        for (int k = 0; k < 40; k++)
            if (conf_rules_retry_delay(&m, k) <= 0)
                abort();
        conf_rules_zrule(&m, &z);
        if (z.index != m.index || z.idlemax <= 0)
            abort();
    }
}

static void by_file(const uint8_t *data, size_t size)
{
    static char path[64];
    static int fd = -1;
    struct conf_rules *r;
    char why[512];

    if (fd < 0) { /* a file of no name, read as /proc/self/fd/N */
        strcpy(path, "/tmp/fuzz_conf_rules.XXXXXX");
        if ((fd = mkstemp(path)) < 0 || unlink(path) < 0)
            abort();
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    why[0] = 0;
    if ((r = conf_rules_load(path, why, sizeof(why))) == NULL) {
        if (why[0] == 0)
            abort();
        return;
    }
    probe(r);
    conf_rules_free(r);
}

static void by_line(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *save = NULL;
    struct conf_rules *r = conf_rules_create("fuzz");
    char why[512];
    int line = 0, bad = 0;

    memcpy(text, data, size);
    text[size] = 0;
    for (char *l = strtok_r(text, "\n", &save); l && !bad;
         l = strtok_r(NULL, "\n", &save)) {
        why[0] = 0;
        if (conf_rules_line(r, ++line, l, why, sizeof(why)) < 0) {
            if (why[0] == 0)
                abort();
            bad = 1;
        }
    }
    why[0] = 0;
    if (!bad && conf_rules_finish(r, why, sizeof(why)) == 0)
        probe(r);
    else if (!bad && why[0] == 0)
        abort();
    conf_rules_free(r);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    by_file(data, size);
    by_line(data, size);
    return 0;
}
