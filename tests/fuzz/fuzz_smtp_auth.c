/*
 * NAME
 *	fuzz_smtp_auth 1 - libFuzzer target: what an SMTP server says to
 *	the client's AUTH
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes, as CRLF- or LF-separated reply lines, to
 *	smtp_reply_line() and, once a reply is complete, to
 *	smtp_ehlo_auth() (the mechanisms an EHLO offers) and to
 *	smtp_auth_challenge() (its text as a 334 challenge), under
 *	AddressSanitizer and UBSan. It checks the contract: only the known
 *	bits are set, a mechanism only with SMTP_AUTH_OFFERED; a challenge
 *	decodes to at most the buffer's size, and what decodes encodes back
 *	to the same text (strict base64 has one spelling). The seed corpus
 *	is tests/fuzz/corpus/smtp_auth/.
 */

#include "smtp/smtp.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct smtp_reply *r)
{
    unsigned bits = smtp_ehlo_auth(r);
    unsigned char out[512];
    ssize_t n;

    if (bits & ~(SMTP_AUTH_OFFERED | SMTP_AUTH_PLAIN | SMTP_AUTH_LOGIN))
        abort();
    if ((bits & (SMTP_AUTH_PLAIN | SMTP_AUTH_LOGIN)) &&
        !(bits & SMTP_AUTH_OFFERED))
        abort();
    n = smtp_auth_challenge(r->text, out, sizeof(out));
    if (n > (ssize_t)sizeof(out))
        abort();
    if (n > 0) {
        struct util_buf b = {0};

        util_base64_encode(&b, out, (size_t)n, 0);
        if (strcmp(b.data, r->text) != 0)
            abort();
        util_buf_free(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct smtp_reply r;
    size_t start = 0;

    smtp_reply_init(&r);
    for (size_t i = 0; i <= size; i++) {
        int rc;

        if (i < size && data[i] != '\n')
            continue;
        rc = smtp_reply_line(&r, (const char *)data + start,
                             i - start - (i > start && data[i - 1] == '\r'));
        start = i + 1;
        if (rc < 0)
            smtp_reply_free(&r);
        else if (rc == 1) {
            check(&r);
            smtp_reply_free(&r);
        }
    }
    smtp_reply_free(&r);
    return 0;
}
