/*
 * NAME
 *	fuzz_tls_policy 1 - libFuzzer target: TLS policies of
 *	smtp_tls_policy_maps and protocol lists
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes, cut at the first NUL, to tls_policy_parse()
 *	as the right-hand side of a policy table entry and to
 *	tls_protocols_parse() as a protocols value, under AddressSanitizer
 *	and UBSan: a crash, an overrun or undefined behaviour is a bug. It
 *	also checks the contract: a policy accepted has a known level, its
 *	strings are terminated and its protocols and ciphers, when given,
 *	parse again; a refusal says why; a protocol range accepted is not
 *	empty. The seed corpus is tests/fuzz/corpus/tls_policy/.
 */

#include "tls/tls.h"

#include <openssl/ssl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    struct tls_policy p;
    char why[256];
    int lo, hi;

    memcpy(text, data, size);
    text[size] = 0;
    why[0] = 0;
    if (tls_policy_parse(text, &p, why, sizeof(why)) == 0) {
        if ((int)p.level < TLS_LEV_NONE || p.level > TLS_LEV_SECURE)
            abort();
        if (strlen(tls_level_name(p.level)) == 0 ||
            memchr(p.match, 0, sizeof(p.match)) == NULL ||
            memchr(p.protocols, 0, sizeof(p.protocols)) == NULL ||
            memchr(p.ciphers, 0, sizeof(p.ciphers)) == NULL)
            abort();
        if (p.protocols[0] &&
            tls_protocols_parse(p.protocols, &lo, &hi, why, sizeof(why)) < 0)
            abort();
        if (p.ciphers[0] && tls_cipher_list(p.ciphers) == NULL)
            abort();
    } else if (why[0] == 0) {
        abort();
    }
    why[0] = 0;
    if (tls_protocols_parse(text, &lo, &hi, why, sizeof(why)) == 0) {
        if (lo != 0 && hi != 0 && lo > hi)
            abort();
    } else if (why[0] == 0) {
        abort();
    }
    free(text);
    return 0;
}
