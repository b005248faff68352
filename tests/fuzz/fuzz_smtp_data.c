/*
 * NAME
 *	fuzz_smtp_data 1 - libFuzzer target: the DATA and BDAT reader
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	The first input byte chooses DOT or RAW mode and how the rest is cut
 *	into pieces; the rest is fed to smtp_data_feed() piece by piece, as
 *	packets would arrive. Under ASan and UBSan it checks the reader's
 *	promises: the bytes used never exceed the piece; the content that
 *	comes out never holds a bare CR or LF (every LF after a CR, every
 *	CR before an LF) nor a NUL; r->size is what came out while under
 *	the limit and without a NUL;
 *	after SMTP_DATA_DONE in DOT mode the bytes used end in CRLF.CRLF.
 */

#include "smtp/smtp.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    uint64_t bytes;
    int last_cr; /* the previous content byte was a CR */
};

static void emit(void *ctx, const char *p, size_t n)
{
    struct seen *s = ctx;

    for (size_t i = 0; i < n; i++) {
        if (p[i] == 0)
            abort(); /* a NUL came out */
        if (p[i] == '\n' && !s->last_cr)
            abort(); /* a bare LF came out */
        if (s->last_cr && p[i] != '\n')
            abort(); /* a bare CR came out */
        s->last_cr = p[i] == '\r';
    }
    s->bytes += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct smtp_data_reader r;
    struct seen s = {0, 0};
    const char *p = (const char *)data + 1;
    size_t left, piece, fed = 0;
    int rc = SMTP_DATA_MORE;

    if (size < 1)
        return 0;
    left = size - 1;
    piece = (data[0] & 0x3f) + 1;
    smtp_data_init(&r, data[0] & 0x80 ? SMTP_DATA_RAW : SMTP_DATA_DOT,
                   data[0] & 0x40 ? 64 : 0);
    while (left > 0 && rc == SMTP_DATA_MORE) {
        size_t n = left < piece ? left : piece, used = 0;

        rc = smtp_data_feed(&r, p, n, &used, emit, &s);
        if (used > n || (rc == SMTP_DATA_MORE && used != n))
            abort();
        p += used;
        left -= used;
        fed += used;
    }
    if (rc == SMTP_DATA_DONE &&
        (fed < 3 || memcmp(data + 1 + fed - 3, ".\r\n", 3) != 0))
        abort();
    if (rc == SMTP_DATA_MORE && r.mode == SMTP_DATA_RAW)
        rc = smtp_data_finish(&r, emit, &s);
    if (!r.too_big && !r.nul && r.size != s.bytes)
        abort();
    return 0;
}
