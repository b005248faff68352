/*
 * NAME
 *	fuzz_deliver_hungry 1 - libFuzzer target: the hungry protocol's
 *	result lines and xtext (deliver/hungry.c)
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	The first byte is the job's recipient count (0 to 255); the rest is
 *	what an agent wrote, cut at newlines, each line given to
 *	hungry_parse() as the runner gives it, under AddressSanitizer and
 *	UBSan. It checks the contract: a refusal says why; a result names
 *	a recipient below the count, its enhanced code has the status's
 *	class, its text lies inside the line and holds no control
 *	character. Each line is also decoded as xtext: what decodes
 *	encodes to a word that decodes to the same bytes, and any line
 *	without NUL encodes to a word that decodes back to it. The seed
 *	corpus is tests/fuzz/corpus/deliver_hungry/.
 */

#include "deliver/agent_impl.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *line, size_t len, size_t nrcpt)
{
    struct hungry_line h;
    char why[160] = "";
    static const char cls[] = {'2', '4', '5'};

    if (hungry_parse(line, len, nrcpt, &h, why, sizeof(why)) < 0) {
        if (why[0] == 0)
            abort();
        return;
    }
    if (h.kind == HUNGRY_LINE_READY)
        return;
    if (h.index >= nrcpt || h.enhanced[0] != cls[h.status] || h.text < line ||
        h.text + h.textlen > line + len)
        abort();
    for (size_t i = 0; i < h.textlen; i++)
        if ((unsigned char)h.text[i] < 0x20 || h.text[i] == 0x7f)
            abort();
}

static void check_xtext(const char *line, size_t len)
{
    struct util_buf b = UTIL_BUF_INIT;
    char *dec = hungry_unxtext(line, len), *again, *copy;

    if (dec != NULL) {
        util_buf_add(&b, "", 0);
        hungry_xtext(&b, dec);
        again = hungry_unxtext(b.data, b.len);
        if (again == NULL || strcmp(again, dec) != 0)
            abort();
        free(again);
        free(dec);
        util_buf_reset(&b);
    }
    if (memchr(line, 0, len) == NULL) {
        copy = xstrndup(line, len);
        util_buf_add(&b, "", 0);
        hungry_xtext(&b, copy);
        again = hungry_unxtext(b.data, b.len);
        if (again == NULL || strcmp(again, copy) != 0)
            abort();
        free(again);
        free(copy);
    }
    util_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p, *end, *nl;
    size_t nrcpt;

    if (size == 0)
        return 0;
    nrcpt = data[0];
    p = (const char *)data + 1;
    end = (const char *)data + size;
    while (p <= end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            nl = end;
        check_line(p, (size_t)(nl - p), nrcpt);
        check_xtext(p, (size_t)(nl - p));
        p = nl + 1;
    }
    return 0;
}
