/*
 * NAME
 *	fuzz_util_json 1 - libFuzzer target: the strict JSON parser
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes to util_json_parse(), as the HTTP injection
 *	API does with a request body, under AddressSanitizer and UBSan: a
 *	crash, an overrun or undefined behaviour is a bug. It also checks
 *	the contract: a refusal says why; a tree accepted holds strings
 *	that are C strings of their length, objects whose names are
 *	unique, and writing every string back with util_json_string() and
 *	parsing that gives the same string. The seed corpus is
 *	tests/fuzz/corpus/util_json/.
 */

#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct util_json *v)
{
    if (v->type == UTIL_JSON_STRING) {
        struct util_buf b = UTIL_BUF_INIT;
        struct util_json *again;
        char why[128];

        if (strlen(v->string) != v->length)
            abort();
        util_json_string(&b, v->string);
        again = util_json_parse(b.data, b.len, why, sizeof(why));
        if (again == NULL || strcmp(again->string, v->string) != 0)
            abort();
        util_json_free(again);
        util_buf_free(&b);
    }
    for (size_t i = 0; i < v->count; i++) {
        if (v->type == UTIL_JSON_OBJECT)
            for (size_t j = 0; j < i; j++)
                if (strcmp(v->names[i], v->names[j]) == 0)
                    abort();
        check(v->items[i]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[128];
    struct util_json *v =
        util_json_parse((const char *)data, size, why, sizeof(why));

    if (v == NULL) {
        if (why[0] == 0)
            abort();
        return 0;
    }
    check(v);
    util_json_free(v);
    return 0;
}
