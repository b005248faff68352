/*
 * NAME
 *	fuzz_smtp_command 1 - libFuzzer target: the SMTP command parser
 * SYNOPSIS
 *	make fuzz [FUZZ_SECONDS=60]
 * DESCRIPTION
 *	Feeds arbitrary bytes to smtp_command_parse() as one command line
 *	(NUL bytes, no CRLF, any length) and frees what it returns, under
 *	AddressSanitizer and UBSan: a crash, a leak, an overrun or undefined
 *	behaviour is a bug. It also checks the contract: a refusal is one of
 *	the documented reply codes with a reply text, a success names a
 *	verb, SMTPUTF8 only on MAIL; and that smtp_utf8_valid() takes
 *	every ASCII line. The seed corpus is tests/fuzz/corpus/smtp_command/.
 */

#include "smtp/smtp.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct smtp_command cmd;
    char why[256] = "";
    int rc;

    rc = smtp_command_parse((const char *)data, size, &cmd, why, sizeof(why));
    if (rc != 0 && rc != SMTP_PARSE_UNKNOWN && rc != SMTP_PARSE_SYNTAX &&
        rc != SMTP_PARSE_PARAM)
        abort();
    if (rc != 0 && (why[0] < '4' || why[0] > '5' || why[1] != '.'))
        abort(); /* a refusal starts with its enhanced status code */
    if (rc == 0 && cmd.verb == SMTP_CMD_UNKNOWN)
        abort();
    if (rc == 0 && (cmd.verb == SMTP_CMD_MAIL || cmd.verb == SMTP_CMD_RCPT) &&
        cmd.path == NULL)
        abort();
    if (rc == 0 && cmd.smtputf8 && cmd.verb != SMTP_CMD_MAIL)
        abort(); /* RFC 6531 3.4: a MAIL parameter only */
    /* ASCII is UTF-8; the server's check of a line must not overrun */
    if (smtp_ascii((const char *)data, size) &&
        !smtp_utf8_valid((const char *)data, size))
        abort();
    smtp_command_free(&cmd);
    return 0;
}
