/*
 * NAME
 *	test_smtp_command 1 - unit tests of the SMTP command parser
 * SYNOPSIS
 *	build/tests/test_smtp_command
 * DESCRIPTION
 *	Tests src/smtp/command.c against RFC 5321 section 4.1 and the
 *	extensions the server offers (SIZE, 8BITMIME, DSN, CHUNKING, ETRN):
 *	every verb with good arguments, verbs in any case, the reply class
 *	and text of each kind of error (unknown command 500, bad arguments
 *	501, an unknown or malformed parameter 555, a parameter given twice),
 *	paths (the null path, a source route dropped, a bare postmaster),
 *	xtext decoding of ENVID and ORCPT, and limits.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "smtp/smtp.h"

#include <stdio.h>
#include <string.h>

static struct smtp_command cmd;
static char why[256];

static int parse(const char *line)
{
    smtp_command_free(&cmd);
    why[0] = 0;
    return smtp_command_parse(line, strlen(line), &cmd, why, sizeof(why));
}

static void fails(const char *line, int code, const char *text)
{
    int rc = parse(line);

    if (rc != code || strcmp(why, text) != 0)
        fail_msg("\"%s\": got %d \"%s\", expected %d \"%s\"", line, rc, why,
                 code, text);
}

static void test_simple_verbs(void **state)
{
    (void)state;
    assert_int_equal(parse("EHLO client.example"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_EHLO);
    assert_string_equal(cmd.arg, "client.example");
    assert_int_equal(parse("helo [192.0.2.1]"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_HELO);
    assert_string_equal(cmd.arg, "[192.0.2.1]");
    assert_int_equal(parse("DATA"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_DATA);
    assert_int_equal(parse("rset"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_RSET);
    assert_int_equal(parse("NOOP"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_NOOP);
    assert_int_equal(parse("NOOP anything at all"), 0); /* 4.1.1.9 */
    assert_int_equal(parse("QuIt"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_QUIT);
    assert_int_equal(parse("VRFY postmaster"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_VRFY);
    assert_string_equal(cmd.arg, "postmaster");
    assert_int_equal(parse("HELP"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_HELP);
    assert_null(cmd.arg);
    assert_int_equal(parse("HELP mail"), 0);
    assert_string_equal(cmd.arg, "mail");
    assert_int_equal(parse("ETRN example.org"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_ETRN);
    assert_string_equal(cmd.arg, "example.org");
    assert_int_equal(parse("ETRN @example.org"), 0);
    assert_string_equal(cmd.arg, "@example.org");
    assert_int_equal(parse("BDAT 1000"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_BDAT);
    assert_int_equal(cmd.chunk, 1000);
    assert_int_equal(cmd.last, 0);
    assert_int_equal(parse("bdat 0 last"), 0);
    assert_int_equal(cmd.chunk, 0);
    assert_int_equal(cmd.last, 1);
    /* trailing white space is forgiven: the chunk size must not be lost */
    assert_int_equal(parse("BDAT 10 "), 0);
    assert_int_equal(cmd.chunk, 10);
    assert_int_equal(cmd.last, 0);
    assert_int_equal(parse("BDAT 7\tLAST \t"), 0);
    assert_int_equal(cmd.chunk, 7);
    assert_int_equal(cmd.last, 1);
    assert_int_equal(parse("STARTTLS"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_STARTTLS);
    /* RFC 4954: AUTH mechanism [initial-response] */
    assert_int_equal(parse("AUTH PLAIN"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_AUTH);
    assert_string_equal(cmd.arg, "PLAIN");
    assert_null(cmd.path);
    assert_int_equal(parse("auth login  YWxpY2U= "), 0);
    assert_string_equal(cmd.arg, "login");
    assert_string_equal(cmd.path, "YWxpY2U=");
    assert_int_equal(parse("AUTH PLAIN ="), 0);
    assert_string_equal(cmd.path, "=");
}

static void test_verb_errors(void **state)
{
    (void)state;
    fails("", SMTP_PARSE_UNKNOWN, "5.5.2 Error: command not recognized");
    fails("FOO bar", SMTP_PARSE_UNKNOWN, "5.5.2 Error: command not recognized");
    fails("MAILFROM:<a@b>", SMTP_PARSE_UNKNOWN,
          "5.5.2 Error: command not recognized");
    fails("EHLO", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: EHLO hostname");
    fails("HELO  ", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: HELO hostname");
    fails("DATA now", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: DATA");
    fails("RSET x", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: RSET");
    fails("QUIT now", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: QUIT");
    fails("VRFY", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: VRFY address");
    fails("ETRN", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: ETRN domain");
    fails("ETRN bad domain", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: ETRN domain");
    fails("BDAT", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: BDAT size [LAST]");
    fails("BDAT x", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: BDAT size [LAST]");
    fails("BDAT 10 LATER", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: BDAT size [LAST]");
    fails("BDAT 10 LASTX", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: BDAT size [LAST]");
    fails("BDAT 10x", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: BDAT size [LAST]");
    fails("BDAT 99999999999999999999", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: BDAT size [LAST]");
    fails("STARTTLS now", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: STARTTLS");
    fails("AUTH", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: AUTH mechanism");
    fails("AUTH PLAIN a b", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: AUTH mechanism");
}

static void test_mail(void **state)
{
    (void)state;
    assert_int_equal(parse("MAIL FROM:<alice@example.org>"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_MAIL);
    assert_string_equal(cmd.path, "alice@example.org");
    assert_int_equal(cmd.has_size, 0);
    assert_int_equal(parse("mail from:<>"), 0);
    assert_string_equal(cmd.path, "");
    /* A space after the colon is common and harmless: accepted. */
    assert_int_equal(parse("MAIL FROM: <a@b.example>"), 0);
    assert_string_equal(cmd.path, "a@b.example");
    /* A source route is dropped (RFC 5321 4.1.1.3, C.). */
    assert_int_equal(
        parse("MAIL FROM:<@relay.example,@r2.example:a@b.example>"), 0);
    assert_string_equal(cmd.path, "a@b.example");
    assert_int_equal(
        parse("MAIL FROM:<a@b.example> SIZE=12345 BODY=8BITMIME RET=HDRS "
              "ENVID=QQ314159+2Bx"),
        0);
    assert_int_equal(cmd.has_size, 1);
    assert_int_equal(cmd.size, 12345);
    assert_int_equal(cmd.body_8bit, 1);
    assert_int_equal(cmd.ret, SMTP_RET_HDRS);
    assert_string_equal(cmd.envid, "QQ314159+x");
    assert_int_equal(parse("MAIL FROM:<a@b.example> body=7bit ret=full"), 0);
    assert_int_equal(cmd.body_8bit, 0);
    assert_int_equal(cmd.ret, SMTP_RET_FULL);
    assert_int_equal(parse("MAIL FROM:<\"odd user\"@b.example>"), 0);
    assert_string_equal(cmd.path, "\"odd user\"@b.example");
}

static void test_mail_errors(void **state)
{
    (void)state;
    fails("MAIL", SMTP_PARSE_SYNTAX, "5.5.4 Syntax: MAIL FROM:<address>");
    fails("MAIL TO:<a@b>", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: MAIL FROM:<address>");
    fails("MAIL FROM:a@b.example", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: MAIL FROM:<address>");
    fails("MAIL FROM:<a@b.example", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: MAIL FROM:<address>");
    fails("MAIL FROM:<a b@c.example>", SMTP_PARSE_ADDRESS,
          "5.1.7 Bad sender address syntax");
    fails("MAIL FROM:<a@b.example>x", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: MAIL FROM:<address>");
    fails("MAIL FROM:<a@b.example> SIZE=abc", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad SIZE parameter");
    fails("MAIL FROM:<a@b.example> SIZE=1 SIZE=2", SMTP_PARSE_SYNTAX,
          "5.5.4 SIZE given twice");
    fails("MAIL FROM:<a@b.example> BODY=BINARYMIME", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad BODY parameter");
    fails("MAIL FROM:<a@b.example> RET=ALL", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad RET parameter");
    fails("MAIL FROM:<a@b.example> ENVID=a+ZZ", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad ENVID parameter");
    fails("MAIL FROM:<a@b.example> AUTH=<>", SMTP_PARSE_PARAM,
          "5.5.4 Unsupported parameter AUTH");
    fails("MAIL FROM:<a@b.example> NOTIFY=NEVER", SMTP_PARSE_PARAM,
          "5.5.4 Unsupported parameter NOTIFY");
}

/* RFC 6531 3.4: SMTPUTF8 on MAIL, without a value; UTF-8 addresses. */
static void test_mail_smtputf8(void **state)
{
    (void)state;
    assert_int_equal(parse("MAIL FROM:<a@b.example> smtputf8"), 0);
    assert_int_equal(cmd.smtputf8, 1);
    assert_int_equal(parse("MAIL FROM:<a@b.example>"), 0);
    assert_int_equal(cmd.smtputf8, 0);
    assert_int_equal(parse("MAIL FROM:<\xc3\xa9l\xc3\xa8ve@\xc3\xa9"
                           "cole.example> "
                           "SMTPUTF8 BODY=8BITMIME"),
                     0);
    assert_string_equal(cmd.path, "\xc3\xa9l\xc3\xa8ve@\xc3\xa9"
                                  "cole.example");
    assert_int_equal(cmd.smtputf8, 1);
    assert_int_equal(cmd.body_8bit, 1);
    fails("MAIL FROM:<a@b.example> SMTPUTF8=yes", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad SMTPUTF8 parameter");
    /* smtplib's send_message(mail_options=["SMTPUTF8"]) sends it twice */
    assert_int_equal(
        parse("MAIL FROM:<a@b.example> SMTPUTF8 SMTPUTF8 BODY=8BITMIME"), 0);
    assert_int_equal(cmd.smtputf8, 1);
    fails("RCPT TO:<a@b.example> SMTPUTF8", SMTP_PARSE_PARAM,
          "5.5.4 Unsupported parameter SMTPUTF8");
}

static void test_rcpt(void **state)
{
    (void)state;
    assert_int_equal(parse("RCPT TO:<bob@example.net>"), 0);
    assert_int_equal(cmd.verb, SMTP_CMD_RCPT);
    assert_string_equal(cmd.path, "bob@example.net");
    assert_int_equal(cmd.notify, 0);
    assert_null(cmd.orcpt);
    assert_int_equal(parse("RCPT TO:<Postmaster>"), 0);
    assert_string_equal(cmd.path, "Postmaster");
    assert_int_equal(parse("rcpt to:<bob@example.net> NOTIFY=SUCCESS,DELAY "
                           "ORCPT=rfc822;Bob+40Example.net"),
                     0);
    assert_int_equal(cmd.notify, SMTP_NOTIFY_SUCCESS | SMTP_NOTIFY_DELAY);
    assert_string_equal(cmd.orcpt, "rfc822;Bob@Example.net");
    assert_int_equal(parse("RCPT TO:<bob@example.net> NOTIFY=never"), 0);
    assert_int_equal(cmd.notify, SMTP_NOTIFY_NEVER);
}

static void test_rcpt_errors(void **state)
{
    (void)state;
    fails("RCPT TO:<>", SMTP_PARSE_ADDRESS,
          "5.1.3 Bad recipient address syntax");
    fails("RCPT FROM:<a@b.example>", SMTP_PARSE_SYNTAX,
          "5.5.4 Syntax: RCPT TO:<address>");
    fails("RCPT TO:<a@b.example> NOTIFY=NEVER,SUCCESS", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad NOTIFY parameter");
    fails("RCPT TO:<a@b.example> NOTIFY=", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad NOTIFY parameter");
    fails("RCPT TO:<a@b.example> NOTIFY=SOMETIMES", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad NOTIFY parameter");
    fails("RCPT TO:<a@b.example> ORCPT=b@c", SMTP_PARSE_SYNTAX,
          "5.5.4 Bad ORCPT parameter");
    fails("RCPT TO:<a@b.example> SIZE=10", SMTP_PARSE_PARAM,
          "5.5.4 Unsupported parameter SIZE");
}

static void test_limits(void **state)
{
    char line[1200];

    (void)state;
    /* A path longer than 256 octets (RFC 5321 4.5.3.1.3). */
    snprintf(line, sizeof(line), "MAIL FROM:<%0300d@b.example>", 0);
    fails(line, SMTP_PARSE_ADDRESS, "5.1.7 Bad sender address syntax");
    /* A NUL inside the line. */
    smtp_command_free(&cmd);
    assert_int_equal(smtp_command_parse("NOOP\0x", 6, &cmd, why, sizeof(why)),
                     SMTP_PARSE_SYNTAX);
    assert_string_equal(why, "5.5.2 Error: NUL character in command");
}

static int teardown(void **state)
{
    (void)state;
    smtp_command_free(&cmd);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_verbs),
        cmocka_unit_test(test_verb_errors),
        cmocka_unit_test(test_mail),
        cmocka_unit_test(test_mail_errors),
        cmocka_unit_test(test_mail_smtputf8),
        cmocka_unit_test(test_rcpt),
        cmocka_unit_test(test_rcpt_errors),
        cmocka_unit_test(test_limits),
    };

    return cmocka_run_group_tests(tests, NULL, teardown);
}
