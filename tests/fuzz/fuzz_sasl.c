/*
 * NAME
 *	fuzz_sasl 1 - libFuzzer target: passwd-file lines and the PLAIN
 *	and LOGIN messages of SMTP AUTH
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes to sasl_passwd_line() (cut at the first NUL,
 *	as a line of a passwd-file), to sasl_plain_parse() and
 *	sasl_login_field() as they are (a decoded response may hold any
 *	byte), and to util_base64_decode() then sasl_plain_parse() (the
 *	response as the client sends it), under AddressSanitizer and UBSan:
 *	a crash, an overrun or undefined behaviour is a bug. It also checks
 *	the contract: an accepted line has a user without ':' or blanks and
 *	a secret, a hash of a crypt scheme starts with '$'; an accepted
 *	PLAIN message gives a user and a password of 1 to 255 bytes without
 *	NUL, and the authorization identity, when there is one, is the
 *	user; a refusal says why. The seed corpus is
 *	tests/fuzz/corpus/sasl/.
 */

#include "sasl/sasl.h"
#include "util/util.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_plain(const unsigned char *msg, size_t len)
{
    char user[SASL_FIELD_MAX + 1], pass[SASL_FIELD_MAX + 1], why[256];
    size_t ul, pl;

    why[0] = 0;
    if (sasl_plain_parse(msg, len, user, pass, why, sizeof(why)) < 0) {
        if (why[0] == 0)
            abort();
        return;
    }
    ul = strlen(user);
    pl = strlen(pass);
    if (ul == 0 || ul > SASL_FIELD_MAX || pl == 0 || pl > SASL_FIELD_MAX)
        abort();
    /* authzid NUL authcid NUL passwd, the authzid empty or the authcid */
    if (len != ul + pl + 2 && len != 2 * ul + pl + 2)
        abort();
    if (len == 2 * ul + pl + 2 && memcmp(msg, user, ul) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    struct sasl_entry e;
    char why[256], out[SASL_FIELD_MAX + 1];
    unsigned char *dec;
    ssize_t n;

    memcpy(text, data, size);
    text[size] = 0;
    why[0] = 0;
    if (sasl_passwd_line(text, &e, why, sizeof(why)) == 0) {
        if (e.user[0] == 0 || strpbrk(e.user, ": \t\r\n") != NULL ||
            e.secret[0] == 0 || strchr(e.secret, ':') != NULL ||
            (e.scheme != SASL_SCHEME_PLAIN && e.secret[0] != '$'))
            abort();
    } else if (why[0] == 0) {
        abort();
    }
    check_plain(data, size);
    why[0] = 0;
    if (sasl_login_field(data, size, out, why, sizeof(why)) == 0) {
        if (strlen(out) != size)
            abort();
    } else if (why[0] == 0) {
        abort();
    }
    dec = malloc(UTIL_BASE64_DECODED_MAX(size) + 1);
    n = util_base64_decode(dec, UTIL_BASE64_DECODED_MAX(size) + 1, text,
                           strlen(text), 0);
    if (n >= 0)
        check_plain(dec, (size_t)n);
    free(dec);
    free(text);
    return 0;
}
