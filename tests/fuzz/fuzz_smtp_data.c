/*
 * NAME
 *	fuzz_smtp_data 1 - libFuzzer target: the DATA and BDAT reader
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	The first input byte chooses DOT or RAW mode (0x80), a size limit
 *	(0x40), the STRICT or NORMALIZE reading of bare line ends (0x20;
 *	NORMALIZE also strips NUL and \001, message_strip_characters) and
 *	how the rest is cut into pieces (0x1f); the rest is fed to
 *	smtp_data_feed() piece by piece, as packets would arrive. Under ASan
 *	and UBSan it checks the reader's promises, in both readings: the
 *	bytes used never exceed the piece; the content that comes out never
 *	holds a bare CR or LF (every LF after a CR, every CR before an LF),
 *	a NUL, or a byte of the strip set; r->size is what came out while
 *	under the limit and without a NUL; and SMTP_DATA_DONE comes only
 *	after CRLF.CRLF (or "." CRLF at the very start): no smuggling form
 *	ends the data, normalized or not.
 */

#include "smtp/smtp.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
    uint64_t bytes;
    int last_cr;   /* the previous content byte was a CR */
    int stripping; /* \001 is in the strip set */
};

/* NORMALIZE's strip set: NUL and \001. */
static const char strip_spec[] = "\\0\\001";

static void emit(void *ctx, const char *p, size_t n)
{
    struct seen *s = ctx;

    for (size_t i = 0; i < n; i++) {
        if (p[i] == 0 || (p[i] == 1 && s->stripping))
            abort(); /* a NUL, or a byte that is stripped, came out */
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
    struct seen s = {0, 0, 0};
    const char *p = (const char *)data + 1;
    size_t left, piece, fed = 0;
    int rc = SMTP_DATA_MORE;

    if (size < 1)
        return 0;
    left = size - 1;
    piece = (data[0] & 0x1f) + 1;
    smtp_data_init(&r, data[0] & 0x80 ? SMTP_DATA_RAW : SMTP_DATA_DOT,
                   data[0] & 0x40 ? 64 : 0);
    if (data[0] & 0x20) {
        char why[128];

        r.newline = SMTP_NEWLINE_NORMALIZE;
        if (smtp_data_strip_parse(strip_spec, r.strip, why, sizeof(why)) < 0)
            abort();
        s.stripping = 1;
    }
    while (left > 0 && rc == SMTP_DATA_MORE) {
        size_t n = left < piece ? left : piece, used = 0;

        rc = smtp_data_feed(&r, p, n, &used, emit, &s);
        if (used > n || (rc == SMTP_DATA_MORE && used != n))
            abort();
        p += used;
        left -= used;
        fed += used;
    }
    /* only CRLF.CRLF ends the data, or "." CRLF at the very start */
    if (rc == SMTP_DATA_DONE &&
        !(fed == 3 && memcmp(data + 1, ".\r\n", 3) == 0) &&
        (fed < 5 || memcmp(data + 1 + fed - 5, "\r\n.\r\n", 5) != 0))
        abort();
    if (rc == SMTP_DATA_MORE && r.mode == SMTP_DATA_RAW)
        rc = smtp_data_finish(&r, emit, &s);
    if (rc < 0 && r.newline == SMTP_NEWLINE_NORMALIZE)
        abort(); /* NORMALIZE notes bare line ends, it never stops */
    if (!r.too_big && !r.nul && r.size != s.bytes)
        abort();
    return 0;
}
