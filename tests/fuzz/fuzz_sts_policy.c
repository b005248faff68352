/*
 * NAME
 *	fuzz_sts_policy 1 - libFuzzer target: MTA-STS policies, TXT records
 *	and MX patterns
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes to sts_policy_parse() as a policy file (NUL
 *	bytes, any line ends, any length), and, cut at its first NUL, to
 *	sts_txt_parse() as a TXT record, under AddressSanitizer and UBSan:
 *	a crash, a leak, an overrun or undefined behaviour is a bug. It
 *	also checks the contract: a policy accepted has a mode, a max_age
 *	within the RFC's bounds, an mx pattern unless its mode is none,
 *	survives sts_policy_copy(), and matches each of its own patterns
 *	that names a host; a refusal says why; an id accepted is 1 to 32
 *	letters and digits. The seed corpus is
 *	tests/fuzz/corpus/sts_policy/.
 */

#include "sts/sts.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_policy(const struct sts_policy *p)
{
    struct sts_policy copy;

    if (p->mode != STS_NONE && p->mode != STS_TESTING && p->mode != STS_ENFORCE)
        abort();
    if (p->max_age < 0 || p->max_age > STS_MAX_AGE_MAX)
        abort();
    if (p->mode != STS_NONE && p->nmx == 0)
        abort();
    for (size_t i = 0; i < p->nmx; i++)
        if (p->mx[i][0] != '*' && !sts_mx_match(p, p->mx[i]))
            abort();
    sts_policy_copy(&copy, p);
    if (copy.nmx != p->nmx)
        abort();
    sts_policy_clear(&copy);
}

static void check_txt(const uint8_t *data, size_t size)
{
    char *txt = malloc(size + 1), id[STS_ID_MAX + 1];
    size_t len;

    memcpy(txt, data, size);
    txt[size] = 0;
    if (sts_txt_parse(txt, id) == 0) {
        len = strlen(id);
        if (len == 0 || len > STS_ID_MAX ||
            strspn(id, "abcdefghijklmnopqrstuvwxyz"
                       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                       "0123456789") != len)
            abort();
    }
    free(txt);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sts_policy p;
    char why[256] = "";

    if (sts_policy_parse((const char *)data, size, &p, why, sizeof(why)) == 0) {
        check_policy(&p);
        sts_policy_clear(&p);
    } else if (why[0] == 0) {
        abort();
    }
    check_txt(data, size);
    return 0;
}
