/*
 * NAME
 *	test_ingress_smtpd 1 - unit tests of the SMTP server's sessions
 * SYNOPSIS
 *	build/tests/test_ingress_smtpd
 * DESCRIPTION
 *	Tests src/ingress/smtpd.c, session.c, command.c, content.c,
 *	deadline.c and receive.c (STARTTLS: test_ingress_starttls):
 *	each test starts a session on one end of a socket pair, with a
 *	made-up client address, and talks to it from the other end, running
 *	the event loop in this thread until the expected bytes have come
 *	(smtpd_fixture.h: a fake store, flush, backlog and spool_free).
 *	Replies are compared to the byte; RFC text is quoted where a reply
 *	comes from it. Deadline tests send a byte at a time, in real time,
 *	with margins of a second or more against the deadlines.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ingress/ingress.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <signal.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "smtpd_fixture.h"
#include "util/util.h"

/* ------------------------------------------------------------ tests */

/* RFC 1869: the EHLO response lists the extensions, one per line. */
static void test_greeting_and_ehlo(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    chat(fd, "HELO other.test\r\n", "250 mx.test\r\n");
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    expect_close(fd, "");
    assert_true(was_logged("connect from unknown[127.0.0.1]"));
    assert_true(was_logged("disconnect from unknown[127.0.0.1] ehlo=1 "
                           "helo=1 quit=1 commands=3"));
}

/* A whole transaction: envelope and content as stored, Received: first. */
static void test_transaction(void **state)
{
    int fd = hello("127.0.0.1");
    const struct spool_msg *m;
    const char *rcvd;

    (void)state;
    chat(fd, "MAIL FROM:<s@x.test> SIZE=100 RET=HDRS ENVID=e+2B1\r\n",
         "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<a@far.test> NOTIFY=SUCCESS,FAILURE ORCPT=rfc822;o@x\r\n",
         "250 2.1.5 Ok\r\n");
    chat(fd, "DATA\r\n", "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: hi\r\n\r\n..dot\r\nbody\r\n.\r\n");
    assert_int_equal(nstored, 0 + 0); /* nothing before the loop runs */
    expect(fd, "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    m = stored[0];
    expect(fd, m->id);
    expect(fd, "\r\n");
    assert_string_equal(m->sender, "s@x.test");
    assert_string_equal(m->envid, "e+1");
    assert_int_equal(m->ret, SPOOL_RET_HDRS);
    assert_int_equal(m->nrcpt, 1);
    assert_string_equal(m->rcpt[0].address, "a@far.test");
    assert_int_equal(m->rcpt[0].notify,
                     SPOOL_NOTIFY_SUCCESS | SPOOL_NOTIFY_FAILURE);
    assert_string_equal(m->rcpt[0].orcpt, "rfc822;o@x");
    assert_int_equal(strlen(m->id), 14);
    /* RFC 5321 4.4; the "for" clause with one recipient, Postfix's form */
    rcvd = m->body;
    assert_memory_equal(rcvd,
                        "Received: from client.test (unknown [127.0.0.1])\r\n"
                        "\tby mx.test (sluice) with ESMTP id ",
                        85);
    assert_memory_equal(rcvd + 85, m->id, 14);
    assert_memory_equal(rcvd + 99, "\r\n\tfor <a@far.test>; ", 21);
    assert_string_equal(after_received(m),
                        "Subject: hi\r\n\r\n.dot\r\nbody\r\n");
    assert_int_equal(m->size, strlen(m->body));
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    close(fd);
}

/* Durability: the 250 waits until the store says the message is durable. */
static void test_answer_waits_for_store(void **state)
{
    int fd = hello("127.0.0.1");
    char reply[64];

    (void)state;
    mode = STORE_LATER;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@far.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "x\r\n.\r\nNOOP\r\n");
    expect_silence(fd, 100);
    assert_int_equal(nstored, 1);
    assert_int_equal(smtpd_server_busy(server), 1);
    late_done(late_conn, 0, stored[0]->id, NULL);
    snprintf(reply, sizeof(reply), "250 2.0.0 Ok: queued as %s\r\n",
             stored[0]->id);
    /* the pipelined NOOP is answered after the message */
    strcat(reply, "250 2.0.0 Ok\r\n");
    expect(fd, reply);
    assert_int_equal(smtpd_server_busy(server), 0);
    close(fd);
}

/* A store that fails: 452 (spool full), and MAIL refused for a while. */
static void test_store_failure(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    mode = STORE_FAIL;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@far.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    chat(fd, "x\r\n.\r\n",
         "452 4.3.1 Insufficient system storage: spool full\r\n");
    chat(fd, "MAIL FROM:<s@x.test>\r\n",
         "452 4.3.1 Insufficient system storage: spool full\r\n");
    close(fd);
}

/* queue_minfree counts the free pages in the spool's file, which never
 * shrinks, as free space: a spool that once filled the disk and was
 * emptied takes mail again. */
static void test_storage_spool_free(void **state)
{
    struct statvfs fs;
    uint64_t avail;
    int fd;

    (void)state;
    assert_int_equal(statvfs("/tmp", &fs), 0);
    avail = (uint64_t)fs.f_bavail * fs.f_frsize;
    params.queue_directory = "/tmp";
    params.queue_minfree = avail + (1ULL << 30); /* a GB short */
    fd = hello("127.0.0.1");
    chat(fd, "MAIL FROM:<s@x.test>\r\n",
         "452 4.3.1 Insufficient system storage\r\n");
    assert_true(was_logged("warning: not enough free space in /tmp: "));
    spool_free = 4LL << 30; /* what deleted messages left in the spool */
    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    close(fd);
}

/* RFC 2920: a client may send a group of commands without waiting. */
static void test_pipelining(void **state)
{
    int fd = connect_from("127.0.0.1");
    char reply[512];

    (void)state;
    expect(fd, greeting);
    put(fd, "EHLO c\r\nMAIL FROM:<>\r\nRCPT TO:<a@far.test>\r\n"
            "RCPT TO:<b@far.test>\r\nDATA\r\nm\r\n.\r\nRSET\r\nNOOP\r\n"
            "QUIT\r\n");
    snprintf(reply, sizeof(reply), "%s%s", ehlo_reply,
             "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.1.5 Ok\r\n"
             "354 End data with <CR><LF>.<CR><LF>\r\n"
             "250 2.0.0 Ok: queued as ");
    expect(fd, reply);
    assert_int_equal(nstored, 1);
    snprintf(reply, sizeof(reply),
             "%s\r\n250 2.0.0 Ok\r\n250 2.0.0 Ok\r\n"
             "221 2.0.0 Bye\r\n",
             stored[0]->id);
    expect_close(fd, reply);
    assert_string_equal(stored[0]->sender, "");
    assert_int_equal(stored[0]->nrcpt, 2);
    /* more than one recipient: no "for" clause */
    assert_non_null(strstr(stored[0]->body, stored[0]->id));
    assert_null(strstr(stored[0]->body, "for <"));
}

/* RFC 5321 4.1.4 and 4.3.2: the order of commands; 500, 501, 502, 555. */
static void test_sequence_and_syntax(void **state)
{
    int fd = connect_from("127.0.0.1");

    (void)state;
    expect(fd, greeting);
    chat(fd, "MAIL FROM:<s@x.test>\r\n",
         "503 5.5.1 Error: send HELO/EHLO first\r\n");
    chat(fd, "ETRN relay.test\r\n",
         "503 5.5.1 Error: send HELO/EHLO first\r\n");
    chat(fd, "HELO c\r\n", "250 mx.test\r\n");
    chat(fd, "RCPT TO:<a@far.test>\r\n",
         "503 5.5.1 Error: need MAIL command\r\n");
    chat(fd, "DATA\r\n", "503 5.5.1 Error: need MAIL command\r\n");
    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "MAIL FROM:<s@x.test>\r\n",
         "503 5.5.1 Error: nested MAIL command\r\n");
    chat(fd, "DATA\r\n", "503 5.5.1 Error: need RCPT command\r\n");
    chat(fd, "ETRN relay.test\r\n",
         "503 5.5.1 Error: MAIL transaction in progress\r\n");
    chat(fd, "RSET\r\n", "250 2.0.0 Ok\r\n");
    chat(fd, "RCPT TO:<a@far.test>\r\n",
         "503 5.5.1 Error: need MAIL command\r\n");
    chat(fd, "FROB\r\n", "500 5.5.2 Error: command not recognized\r\n");
    chat(fd, "EXPN list\r\n", "502 5.5.1 Error: command not implemented\r\n");
    chat(fd, "STARTTLS\r\n", "502 5.5.1 Error: command not implemented\r\n");
    chat(fd, "MAIL FROM:s@x.test\r\n",
         "501 5.5.4 Syntax: MAIL FROM:<address>\r\n");
    chat(fd, "MAIL FROM:<s@x.test> FROB=1\r\n",
         "555 5.5.4 Unsupported parameter FROB\r\n");
    chat(fd, "VRFY someone\r\n",
         "252 2.0.0 Cannot VRFY user, but will accept "
         "message and attempt delivery\r\n");
    chat(fd, "HELP\r\n",
         "214 2.0.0 Commands: EHLO HELO MAIL RCPT DATA BDAT "
         "RSET NOOP QUIT VRFY HELP ETRN\r\n");
    chat(fd, "NOOP\r\n", "250 2.0.0 Ok\r\n");
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    close(fd);
    assert_int_equal(nstored, 0);
}

/* RFC 5321 4.5.3.1.10: 452 for too many recipients; the rest go later. */
static void test_recipient_limit(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    put(fd,
        "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nRCPT TO:<b@f.test>\r\n"
        "RCPT TO:<c@f.test>\r\nRCPT TO:<d@f.test>\r\n");
    expect(fd,
           "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.1.5 Ok\r\n250 2.1.5 Ok\r\n"
           "452 4.5.3 Error: too many recipients\r\n");
    close(fd);
}

/* RFC 1870: SIZE too big at MAIL, or content over the limit: 552. */
static void test_size_limit(void **state)
{
    int fd = hello("127.0.0.1");
    char big[1200];

    (void)state;
    chat(fd, "MAIL FROM:<s@x.test> SIZE=1001\r\n",
         "552 5.3.4 Message size exceeds fixed limit\r\n");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    memset(big, 'x', sizeof(big) - 3);
    memcpy(big + sizeof(big) - 3, "\r\n", 3);
    put(fd, big);
    chat(fd, ".\r\n", "552 5.3.4 Message size exceeds fixed limit\r\n");
    /* the session goes on, with a new transaction */
    chat(fd, "RCPT TO:<a@f.test>\r\n",
         "503 5.5.1 Error: need MAIL command\r\n");
    assert_int_equal(nstored, 0);
    close(fd);
}

/* Relay control: mynetworks relays anywhere, others only to relay_domains. */
static void test_relay_control(void **state)
{
    int fd;

    (void)state;
    params.recipient_limit = 4;
    fd = hello("127.0.0.9");
    put(fd, "MAIL FROM:<s@x.test>\r\n"
            "RCPT TO:<a@far.test>\r\n"
            "RCPT TO:<a@relay.test>\r\n"
            "RCPT TO:<a@deep.relay.test>\r\n"
            "RCPT TO:<a@sub.test>\r\n"
            "RCPT TO:<a@x.sub.test>\r\n"
            "RCPT TO:<a%far.test@relay.test>\r\n"
            "RCPT TO:<Postmaster>\r\n");
    expect(fd, "250 2.1.0 Ok\r\n"
               "554 5.7.1 <a@far.test>: Relay access denied\r\n"
               "250 2.1.5 Ok\r\n"
               "250 2.1.5 Ok\r\n"
               "554 5.7.1 <a@sub.test>: Relay access denied\r\n"
               "250 2.1.5 Ok\r\n"
               "554 5.7.1 <a%far.test@relay.test>: Relay access denied\r\n"
               "250 2.1.5 Ok\r\n");
    assert_true(was_logged("NOQUEUE: reject: RCPT from unknown[127.0.0.9]: "
                           "554 5.7.1 <a@far.test>: Relay access denied; "
                           "from=<s@x.test> to=<a@far.test> proto=ESMTP "
                           "helo=<client.test>"));
    close(fd);
}

/* The smuggling defence: a bare LF in DATA ends the session, unstored. */
static void test_bare_lf_smuggling(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: x\r\n\r\nhi\n.\r\nMAIL FROM:<evil@x.test>\r\n"
            "RCPT TO:<victim@f.test>\r\nDATA\r\nforged\r\n.\r\n");
    expect_close(fd, "521 5.5.2 mx.test Error: bare <LF> received\r\n");
    assert_int_equal(nstored, 0);
    assert_true(was_logged("warning: bare <LF> received after DATA from "
                           "unknown[127.0.0.1]: disconnected"));
}

/* A bare CR, too ("\r.\r" is another spelling of an end). */
static void test_bare_cr(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "hi\r.\r\n");
    expect_close(fd, "521 5.5.2 mx.test Error: bare <CR> received\r\n");
    assert_int_equal(nstored, 0);
}

/* A NUL in the header section is refused, always, with nothing stored;
 * the session goes on. */
static void test_nul_in_header(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    PUT_LIT(fd, "Subject: a\0b\r\n\r\nbody\r\n.\r\n");
    expect(fd, "554 5.6.0 Error: NUL character in message header\r\n");
    chat(fd, "NOOP\r\n", "250 2.0.0 Ok\r\n");
    assert_int_equal(nstored, 0);
    assert_true(was_logged("NOQUEUE: reject: DATA from unknown[127.0.0.1]: "
                           "554 5.6.0 Error: NUL character in message header; "
                           "from=<s@x.test> proto=ESMTP helo=<client.test>"));
    /* BDAT too */
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nBDAT 9 LAST\r\n");
    PUT_LIT(fd, "X: \0\r\n\r\nb");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "554 5.6.0 Error: NUL character in message header\r\n");
    assert_int_equal(nstored, 0);
    close(fd);
}

/* In the body a NUL is refused too, by default; with
 * message_strip_characters = \0 it is removed instead. */
static void test_nul_in_body(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    PUT_LIT(fd, "Subject: a\r\n\r\nbo\0dy\r\n.\r\n");
    expect(fd, "554 5.6.0 Error: NUL character in message body\r\n");
    assert_int_equal(nstored, 0);
    close(fd);
    teardown(state);
    setup(state);
    params.strip_chars = "\\0";
    fd = hello("127.0.0.1");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    PUT_LIT(fd, "Subject: a\r\n\r\nbo\0dy\r\n.\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    assert_string_equal(after_received(stored[0]),
                        "Subject: a\r\n\r\nbody\r\n");
    close(fd);
}

/* message_strip_characters may not hold CR or LF. */
static void test_strip_chars_bad(void **state)
{
    struct smtpd_params p;
    char why[256];

    (void)state;
    server_start();
    p = params;
    p.strip_chars = "\\r";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), -1);
    assert_string_equal(why, "message_strip_characters: CR and LF cannot be "
                             "stripped (lines would lose their ends)");
}

/* MAIL, RCPT (to a relay domain: any client may) and DATA. */
static void data_begin(int fd)
{
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@relay.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
}

/* "250 ... queued as ID" for the n-th message stored. */
static void expect_queued(int fd, int n)
{
    char reply[64];

    expect(fd, "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, n);
    snprintf(reply, sizeof(reply), "%s\r\n", stored[n - 1]->id);
    expect(fd, reply);
}

/* smtpd_forbid_bare_newline = normalize: a bare LF ends a line, in
 * commands and content, and is stored as CRLF; only CRLF.CRLF ends the
 * data, so no smuggling form ends it. A bare CR is refused (550). */
static void test_bare_newline_normalize(void **state)
{
    int fd;

    (void)state;
    params.bare_newline = "normalize";
    fd = hello("127.0.0.1");
    chat(fd, "NOOP\n", "250 2.0.0 Ok\r\n");
    data_begin(fd);
    put(fd, "Subject: x\n\nhi\n.\nMAIL FROM:<evil@x.test>\r\n"
            "RCPT TO:<victim@f.test>\r\nDATA\r\nforged\r\n.\r\n");
    expect_queued(fd, 1);
    assert_string_equal(after_received(stored[0]),
                        "Subject: x\r\n\r\nhi\r\nMAIL FROM:<evil@x.test>\r\n"
                        "RCPT TO:<victim@f.test>\r\nDATA\r\nforged\r\n");
    data_begin(fd);
    put(fd, "a\r\n.\nb\n.\r\nc\r\n.\r\n");
    expect_queued(fd, 2);
    assert_string_equal(after_received(stored[1]), "a\r\nb\r\nc\r\n");
    data_begin(fd);
    put(fd, "a\r\n.\r MAIL FROM:<evil@x.test>\r\n.\r\n");
    expect(fd, "550 5.5.2 mx.test Error: bare <CR> received\r\n");
    assert_true(was_logged("warning: bare <CR> received after DATA from "
                           "unknown[127.0.0.1]: message rejected"));
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n"
            "BDAT 6 LAST\r\nx\ny\n.\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n");
    expect_queued(fd, 3);
    assert_string_equal(after_received(stored[2]), "x\r\ny\r\n.\r\n");
    chat(fd, "QUIT\n", "221 2.0.0 Bye\r\n");
    close(fd);
}

/* reject: a command or a message with a bare LF is refused with
 * smtpd_forbid_bare_newline_reject_code, and the session goes on; the
 * message is read to its CRLF.CRLF first, and nothing is stored. */
static void test_bare_newline_reject(void **state)
{
    int fd;

    (void)state;
    params.bare_newline = "reject";
    fd = hello("127.0.0.1");
    chat(fd, "NOOP\n", "550 5.5.2 mx.test Error: bare <LF> received\r\n");
    assert_true(was_logged("warning: bare <LF> received in a command from "
                           "unknown[127.0.0.1]: rejected"));
    put(fd, "MAIL FROM:<s@x.test>\nRCPT TO:<a@f.test>\r\n");
    expect(fd, "550 5.5.2 mx.test Error: bare <LF> received\r\n"
               "503 5.5.1 Error: need MAIL command\r\n");
    data_begin(fd);
    put(fd, "hi\n.\nMAIL FROM:<evil@x.test>\r\nRCPT TO:<victim@f.test>\r\n"
            "DATA\r\nforged\r\n.\r\nNOOP\r\n");
    expect(fd, "550 5.5.2 mx.test Error: bare <LF> received\r\n"
               "250 2.0.0 Ok\r\n");
    assert_true(was_logged("warning: bare <LF> received after DATA from "
                           "unknown[127.0.0.1]: message rejected"));
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n"
            "BDAT 4 LAST\r\nx\ny\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "550 5.5.2 mx.test Error: bare <LF> received\r\n");
    assert_int_equal(nstored, 0);
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    close(fd);
    /* 521 (Postfix: "521 to disconnect"): the session ends */
    teardown(state);
    setup(state);
    params.bare_newline = "reject";
    params.bare_code = 521;
    fd = hello("127.0.0.1");
    data_begin(fd);
    put(fd, "hi\n.\r\nstill content\r\n.\r\nNOOP\r\n");
    expect_close(fd, "521 5.5.2 mx.test Error: bare <LF> received\r\n");
    assert_int_equal(nstored, 0);
    assert_true(was_logged("warning: bare <LF> received after DATA from "
                           "unknown[127.0.0.1]: disconnected"));
}

/* note: as normalize, and "notes=bare_lf" on the disconnect line. */
static void test_bare_newline_note(void **state)
{
    int fd;

    (void)state;
    params.bare_newline = "note";
    fd = hello("127.0.0.1");
    data_begin(fd);
    put(fd, "hi\nthere\r\n.\r\n");
    expect_queued(fd, 1);
    assert_string_equal(after_received(stored[0]), "hi\r\nthere\r\n");
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    expect_close(fd, "");
    assert_true(was_logged("disconnect from unknown[127.0.0.1] ehlo=1 mail=1 "
                           "rcpt=1 data=1 quit=1 commands=5 notes=bare_lf"));
}

/* smtpd_forbid_bare_newline_exclusions: those clients normalize; the
 * others keep the mode (here the default, disconnect: 521 at once). */
static void test_bare_newline_exclusions(void **state)
{
    int in, out;

    (void)state;
    params.bare_exempt = "127.0.0.1/32";
    in = hello("127.0.0.1");
    data_begin(in);
    put(in, "hi\n.\r\nmore\r\n.\r\n");
    expect_queued(in, 1);
    assert_string_equal(after_received(stored[0]), "hi\r\nmore\r\n");
    close(in);
    out = hello("127.0.0.9");
    data_begin(out);
    put(out, "hi\n.\r\nmore\r\n.\r\n");
    expect_close(out, "521 5.5.2 mx.test Error: bare <LF> received\r\n");
    assert_int_equal(nstored, 1);
}

/* Bad values are refused, the running ones stay. */
static void test_bare_newline_bad_values(void **state)
{
    struct smtpd_params p;
    char why[256];

    (void)state;
    server_start();
    p = params;
    p.bare_newline = "sometimes";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), -1);
    assert_string_equal(why, "smtpd_forbid_bare_newline: \"sometimes\" is not "
                             "one of disconnect, normalize, yes, no, note, "
                             "reject");
    p = params;
    p.bare_exempt = "10.0.0.1/8";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), -1);
    assert_memory_equal(why, "smtpd_forbid_bare_newline_exclusions: ", 38);
}

/* RFC 3030: BDAT chunks, pipelined, the last one LAST. */
static void test_bdat(void **state)
{
    int fd = hello("127.0.0.1");
    char reply[256];

    (void)state;
    put(fd, "MAIL FROM:<s@x.test> BODY=8BITMIME\r\nRCPT TO:<a@f.test>\r\n");
    bdat(fd, "Subject: x\r\n\r\n", 0);
    bdat(fd, "body", 0);
    bdat(fd, "\r\nmore", 1);
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "250 2.0.0 Ok: 14 bytes\r\n250 2.0.0 Ok: 18 bytes\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    snprintf(reply, sizeof(reply), "%s\r\n", stored[0]->id);
    expect(fd, reply);
    /* a last line without CRLF gets one */
    assert_string_equal(after_received(stored[0]),
                        "Subject: x\r\n\r\nbody\r\nmore\r\n");
    /* BDAT 0 LAST ends a message too */
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n"
            "BDAT 3\r\nx\r\nBDAT 0 LAST\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.0.0 Ok: 3 bytes\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 2);
    close(fd);
}

/* RFC 3030 2: every RCPT before the first chunk; a BDAT whose size
 * cannot be read ends the session (its bytes cannot be told apart). */
static void test_bdat_order(void **state)
{
    int fd = hello("127.0.0.1"), fd2;

    (void)state;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n");
    bdat(fd, "Subject: x\r\n", 0);
    put(fd, "RCPT TO:<b@f.test>\r\n");
    bdat(fd, "\r\nbody\r\n", 1);
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.0.0 Ok: 12 bytes\r\n"
               "503 5.5.1 Error: RCPT after BDAT\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    assert_int_equal(stored[0]->nrcpt, 1);
    close(fd);
    fd2 = hello("127.0.0.1");
    put(fd2, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nBDAT 12x\r\n"
             "QUIT\r\n");
    expect_close(fd2, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
                      "501 5.5.4 Syntax: BDAT size [LAST]\r\n");
}

/* smtpd_junk_command_limit: NOOP, VRFY, ETRN, RSET beyond it are errors. */
static void test_junk_commands(void **state)
{
    int fd;

    (void)state;
    params.junk_limit = 2;
    params.error_limit = 3;
    fd = hello("127.0.0.1");
    put(fd, "NOOP\r\nRSET\r\nNOOP\r\nVRFY x\r\nNOOP\r\nNOOP\r\n");
    expect_close(fd, "250 2.0.0 Ok\r\n250 2.0.0 Ok\r\n250 2.0.0 Ok\r\n"
                     "252 2.0.0 Cannot VRFY user, but will accept message "
                     "and attempt delivery\r\n250 2.0.0 Ok\r\n"
                     "421 4.7.0 mx.test Error: too many errors\r\n");
}

/* smtpd_memory_limit: content beyond what all sessions may hold is
 * dropped and the message refused at its end; the session goes on. */
static void test_memory_limit(void **state)
{
    int fd;
    char big[700];

    (void)state;
    params.memory_limit = 600;
    fd = hello("127.0.0.1");
    memset(big, 'x', sizeof(big) - 3);
    memcpy(big + sizeof(big) - 3, "\r\n", 3);
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, big);
    chat(fd, ".\r\n",
         "452 4.3.1 Insufficient system resources, try again later\r\n");
    assert_int_equal(nstored, 0);
    assert_true(was_logged("warning: smtpd_memory_limit (600 bytes) reached"));
    /* what it held is given back: a small message goes through */
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\nx\r\n"
            ".\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    close(fd);
}

/* A reload that takes a network out of mynetworks applies to sessions
 * already open, from their next command. */
static void test_reload_open_session(void **state)
{
    struct smtpd_params p;
    char why[256];
    int fd = hello("127.0.0.1");

    (void)state;
    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<a@far.test>\r\n", "250 2.1.5 Ok\r\n");
    p = params;
    p.mynetworks = "127.0.0.2/32";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), 0);
    chat(fd, "RCPT TO:<b@far.test>\r\n",
         "554 5.7.1 <b@far.test>: Relay access denied\r\n");
    close(fd);
}

/* A refused chunk's bytes are read to its end, never as commands. */
static void test_bdat_refused_chunk(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    bdat(fd, "RCPT TO:<a@f.test>\r\nX\r\n", 0);
    expect(fd, "503 5.5.1 Error: need MAIL command\r\n");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n");
    bdat(fd, "bare\nLF\r\n", 0);
    bdat(fd, "QUIT\r\n", 1);
    put(fd, "NOOP\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "554 5.6.0 Error: bare <LF> in message content\r\n"
               "503 5.5.1 Error: need MAIL command\r\n"
               "250 2.0.0 Ok\r\n");
    assert_int_equal(nstored, 0);
    /* DATA after BDAT in one transaction is out of order */
    put(fd,
        "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nBDAT 1\r\nxDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n250 2.0.0 Ok: 1 bytes\r\n"
               "503 5.5.1 Error: DATA after BDAT\r\n");
    close(fd);
}

/* RFC 1985: ETRN starts delivery of the node's deferred mail. */
static void test_etrn(void **state)
{
    int fd = hello("127.0.0.9");

    (void)state;
    flush_count = 3;
    chat(fd, "ETRN relay.test\r\n",
         "253 2.0.0 OK, 3 pending messages for node relay.test started\r\n");
    assert_string_equal(flushed_domain, "relay.test");
    flush_count = 0;
    chat(fd, "ETRN @relay.test\r\n",
         "251 2.0.0 OK, no messages waiting for node .relay.test\r\n");
    assert_string_equal(flushed_domain, ".relay.test");
    chat(fd, "ETRN far.test\r\n",
         "459 4.7.1 <far.test>: Node not allowed: not in relay_domains\r\n");
    chat(fd, "ETRN #queue\r\n",
         "458 4.3.0 Unable to queue messages for node "
         "#queue: named queues are not supported\r\n");
    chat(fd, "ETRN bad/domain\r\n", "501 5.5.4 Syntax: ETRN domain\r\n");
    /* the domain rule of smtp_domain_valid(), as everywhere else */
    chat(fd, "ETRN relay..test\r\n", "501 5.5.4 Syntax: ETRN domain\r\n");
    chat(fd, "ETRN @\r\n", "501 5.5.4 Syntax: ETRN domain\r\n");
    close(fd);
}

/* smtpd_hard_error_limit: too many errors end the session. */
static void test_error_limit(void **state)
{
    int fd;

    (void)state;
    params.error_limit = 3;
    fd = hello("127.0.0.1");
    put(fd, "FROB\r\nFROB\r\nFROB\r\nNOOP\r\n");
    expect_close(fd, "500 5.5.2 Error: command not recognized\r\n"
                     "500 5.5.2 Error: command not recognized\r\n"
                     "500 5.5.2 Error: command not recognized\r\n"
                     "421 4.7.0 mx.test Error: too many errors\r\n");
    assert_true(was_logged("too many errors after UNKNOWN from "
                           "unknown[127.0.0.1]"));
}

/* line_length_limit: a longer command line is refused, and skipped. */
static void test_line_too_long(void **state)
{
    int fd = hello("127.0.0.1");
    char line[2000];

    (void)state;
    memset(line, 'a', sizeof(line) - 1);
    line[sizeof(line) - 1] = 0;
    put(fd, "NOOP ");
    put(fd, line);
    chat(fd, "\r\nNOOP\r\n",
         "500 5.5.2 Error: line too long\r\n250 2.0.0 Ok\r\n");
    close(fd);
}

/* smtpd_timeout: a silent client gets 421 4.4.2 and is disconnected. */
static void test_timeout(void **state)
{
    int fd;

    (void)state;
    params.timeout_ms = 100;
    fd = hello("127.0.0.1");
    expect_close(fd, "421 4.4.2 mx.test Error: timeout exceeded\r\n");
    assert_true(was_logged("timeout after EHLO from unknown[127.0.0.1]"));
}

/* A deadline per command line, not per byte: a client that sends one
 * byte at a time within smtpd_timeout, but not a whole line, is cut. */
static void test_deadline_per_line(void **state)
{
    int fd;

    (void)state;
    params.timeout_ms = 1500;
    fd = hello("127.0.0.1");
    trickle(fd, "NOOP\r\n", 500); /* the line would be whole at 2.5 s */
    expect_close_within(fd, "421 4.4.2 mx.test Error: timeout exceeded\r\n",
                        300);
    assert_true(was_logged("timeout after EHLO from unknown[127.0.0.1]"));
}

/* In DATA, each line (or line_length_limit bytes of one) is a record
 * with its own deadline: a message may take longer than smtpd_timeout,
 * one line may not. */
static void test_deadline_per_data_record(void **state)
{
    char line[32];
    int fd;

    (void)state;
    params.timeout_ms = 1500;
    fd = hello("127.0.0.1");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    for (int i = 0; i < 6; i++) { /* 3 s in all */
        snprintf(line, sizeof(line), "line %d\r\n", i);
        put(fd, line);
        spin(500);
    }
    chat(fd, ".\r\n", "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    expect(fd, stored[0]->id);
    expect(fd, "\r\n");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    trickle(fd, "abcdef", 500);
    /* closed long before: a deadline per byte would still be running */
    expect_close_within(fd, "421 4.4.2 mx.test Error: timeout exceeded\r\n",
                        300);
    assert_true(was_logged("timeout after DATA from unknown[127.0.0.1]"));
    assert_int_equal(nstored, 1);
}

/* smtpd_per_record_deadline = no: the deadline restarts with every read,
 * as Postfix's does by default (outside stress). */
static void test_deadline_per_read(void **state)
{
    int fd;

    (void)state;
    params.timeout_ms = 1500;
    params.per_record_deadline = 0;
    fd = hello("127.0.0.1");
    trickle(fd, "NOOP\r\n", 500);
    chat(fd, "QUIT\r\n", "250 2.0.0 Ok\r\n221 2.0.0 Bye\r\n");
    close(fd);
}

/* Stress: with SMTPD_STRESS_ON sessions open, deadlines are per record
 * and smtpd_stress_timeout, for sessions already open too; below
 * SMTPD_STRESS_OFF they are back to normal. */
static void test_stress(void **state)
{
    static int fd[SMTPD_STRESS_ON];
    char address[32], line[256];
    int slow, quick;

    (void)state;
    params.timeout_ms = 60000;
    params.stress_timeout_ms = 2000;
    params.per_record_deadline = 0;
    params.connection_limit = 0;
    slow = hello("127.0.0.1");
    put(slow, "NO"); /* a line begun before the stress */
    spin(2200);
    for (int i = 1; i < SMTPD_STRESS_ON; i++) {
        snprintf(address, sizeof(address), "10.0.%d.%d", i / 250, i % 250);
        fd[i] = connect_from(address);
    }
    assert_int_equal(smtpd_server_sessions(server), SMTPD_STRESS_ON);
    snprintf(line, sizeof(line),
             "warning: %d SMTP sessions, near the limit of %d: stress: "
             "deadlines per command and content line, of "
             "smtpd_stress_timeout (2000 ms)",
             SMTPD_STRESS_ON, SMTPD_SESSION_MAX);
    assert_true(was_logged(line));
    /* the line begun long ago is past its new deadline at once */
    expect_close(slow, "421 4.4.2 mx.test Error: timeout exceeded\r\n");
    /* a client that sends whole lines in time is served */
    quick = hello("127.0.0.1");
    chat(quick, "NOOP\r\n", "250 2.0.0 Ok\r\n");
    trickle(quick, "NOOP\r\n", 700); /* whole after 3.5 s */
    expect_close(quick, "421 4.4.2 mx.test Error: timeout exceeded\r\n");
    for (int i = 1; i < SMTPD_STRESS_ON; i++)
        close(fd[i]);
    spin(200);
    assert_int_equal(smtpd_server_sessions(server), 0);
    snprintf(line, sizeof(line), "stress over: %d SMTP sessions",
             SMTPD_STRESS_OFF - 1);
    assert_true(was_logged(line));
}

/* smtpd_client_connection_count_limit, per client address. */
static void test_connection_limit(void **state)
{
    int a, b, c, d;

    (void)state;
    a = connect_from("127.0.0.9");
    b = connect_from("127.0.0.9");
    c = connect_from("127.0.0.9");
    d = connect_from("127.0.0.2");
    expect(a, greeting);
    expect(b, greeting);
    expect_close(c, "421 4.7.0 mx.test Error: too many connections from "
                    "127.0.0.9\r\n");
    expect(d, greeting);
    assert_int_equal(smtpd_server_sessions(server), 3);
    assert_true(was_logged("warning: connection count limit 2 exceeded by "
                           "unknown[127.0.0.9], turned away"));
    close(a);
    close(b);
    close(d);
}

/* smtpd_client_event_limit_exceptions (Postfix's default: $mynetworks):
 * a client in it is not held to the connection count limit. */
static void test_connection_limit_exceptions(void **state)
{
    int fd[4];

    (void)state;
    for (int i = 0; i < 4; i++)
        fd[i] = connect_from("127.0.0.1");
    for (int i = 0; i < 4; i++)
        expect(fd[i], greeting);
    assert_int_equal(smtpd_server_sessions(server), 4);
    for (int i = 0; i < 4; i++)
        close(fd[i]);
    /* an empty list exempts no one, mynetworks included */
    teardown(state);
    setup(state);
    params.exempt = "";
    for (int i = 0; i < 3; i++)
        fd[i] = connect_from("127.0.0.1");
    expect(fd[0], greeting);
    expect(fd[1], greeting);
    expect_close(fd[2], "421 4.7.0 mx.test Error: too many connections from "
                        "127.0.0.1\r\n");
    close(fd[0]);
    close(fd[1]);
}

/* Flow control: a long incoming queue slows MAIL, a longer one stops it. */
static void test_flow_control(void **state)
{
    int fd = hello("127.0.0.1");
    int late;

    (void)state;
    backlog = 11; /* more than qmgr_message_active_limit (10) */
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\n");
    expect_silence(fd, 50); /* in_flow_delay is 200 ms */
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n");
    assert_true(was_logged("warning: 11 messages in the incoming queue"));
    chat(fd, "RSET\r\n", "250 2.0.0 Ok\r\n");
    backlog = 100; /* in_flow_backlog_limit */
    chat(fd, "MAIL FROM:<s@x.test>\r\n",
         "452 4.3.1 Too much mail waiting (100 messages in the incoming "
         "queue), try again later\r\n");
    late = connect_from("127.0.0.2");
    expect_close(late, "421 4.3.2 mx.test Too much mail waiting (100 "
                       "messages in the incoming queue), try again later\r\n");
    close(fd);
}

/* Stopping: 421 4.3.2 to idle sessions; one being stored gets its 250. */
static void test_shutdown(void **state)
{
    int idle = hello("127.0.0.1");
    int busy = hello("127.0.0.2");
    char reply[128];

    (void)state;
    mode = STORE_LATER;
    put(busy, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@relay.test>\r\nDATA\r\n");
    expect(busy, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
                 "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(busy, "x\r\n.\r\n");
    expect_silence(busy, 30);
    smtpd_server_close(server);
    expect_close(idle, "421 4.3.2 mx.test Service shutting down\r\n");
    assert_int_equal(smtpd_server_busy(server), 1);
    late_done(late_conn, 0, stored[0]->id, NULL);
    snprintf(reply, sizeof(reply),
             "250 2.0.0 Ok: queued as %s\r\n"
             "421 4.3.2 mx.test Service shutting down\r\n",
             stored[0]->id);
    expect_close(busy, reply);
}

/* A store's answer after the server is freed is harmless. */
static void test_answer_after_free(void **state)
{
    int fd = hello("127.0.0.1");

    (void)state;
    mode = STORE_LATER;
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "x\r\n.\r\n");
    expect_silence(fd, 30);
    smtpd_server_free(server);
    server = NULL;
    event_base_free(base); /* the daemon frees its loop last; a test may not */
    base = NULL;
    late_done(late_conn, 0, stored[0]->id, NULL);
    close(fd);
}

/* always_add_missing_headers: Date: and Message-ID: only when asked. */
static void test_missing_headers(void **state)
{
    int fd;
    char want[256];

    (void)state;
    params.add_missing_headers = 1;
    fd = hello("127.0.0.1");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n"
            "From: s@x.test\r\nSubject: x\r\n\r\nbody\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    snprintf(want, sizeof(want), "\r\nMessage-ID: <%s@mx.test>\r\n\r\nbody\r\n",
             stored[0]->id);
    assert_non_null(strstr(stored[0]->body, "\r\nDate: "));
    assert_non_null(strstr(stored[0]->body, want));
    close(fd);
    teardown(state);
    setup(state);
    fd = hello("127.0.0.1");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n"
            "Subject: x\r\n\r\nbody\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_string_equal(after_received(stored[0]),
                        "Subject: x\r\n\r\nbody\r\n");
    close(fd);
}

/* The client's HELO goes into a comment: parentheses cannot close it. */
static void test_received_sanitized(void **state)
{
    int fd = connect_from("127.0.0.1");

    (void)state;
    expect(fd, greeting);
    chat(fd, "HELO evil)(x\r\n", "250 mx.test\r\n");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\nx\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_memory_equal(stored[0]->body,
                        "Received: from evil??x (unknown [127.0.0.1])\r\n"
                        "\tby mx.test (sluice) with SMTP id ",
                        80);
    close(fd);
}

/* hopcount_limit: Received: headers, ours included, beyond it: a loop. */
static void test_mail_loop(void **state)
{
    int fd;

    (void)state;
    params.hopcount_limit = 3;
    fd = hello("127.0.0.1");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n"
            "Received: from a\r\nReceived: from b\r\nSubject: ok\r\n\r\n"
            "x\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    expect(fd, stored[0]->id);
    expect(fd, "\r\n");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@f.test>\r\nDATA\r\n"
            "Received: from a\r\nReceived: from b\r\nReceived: from c\r\n"
            "\r\nx\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "554 5.4.6 Error: too many hops\r\n");
    assert_int_equal(nstored, 1);
    assert_true(was_logged("NOQUEUE: reject: DATA from unknown[127.0.0.1]: "
                           "554 5.4.6 Error: too many hops (4 Received: "
                           "headers); from=<s@x.test> proto=ESMTP "
                           "helo=<client.test>"));
    close(fd);
}

/* A reload's bad value changes nothing; a good one applies at once. */
static void test_params_reload(void **state)
{
    struct smtpd_params p;
    char why[256];
    int fd;

    (void)state;
    server_start();
    p = params;
    p.mynetworks = "300.0.0.1";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), -1);
    assert_memory_equal(why, "mynetworks: ", 12);
    p.mynetworks = "127.0.0.1/32";
    p.relay_domains = "far.test";
    assert_int_equal(smtpd_server_params_set(server, &p, why, sizeof(why)), 0);
    fd = hello("127.0.0.9");
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@far.test>\r\n"
            "RCPT TO:<a@relay.test>\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "554 5.7.1 <a@relay.test>: Relay access denied\r\n");
    close(fd);
}

static long cpu_ms(const struct rusage *r)
{
    return (r->ru_utime.tv_sec + r->ru_stime.tv_sec) * 1000L +
           (r->ru_utime.tv_usec + r->ru_stime.tv_usec) / 1000;
}

/* Out of descriptors, the listener pauses instead of spinning; once
 * descriptors are back, the waiting clients are served. */
static void test_accept_out_of_fds(void **state)
{
    struct sockaddr_in sin = {0};
    socklen_t len = sizeof(sin);
    struct rlimit old, low;
    struct rusage before, after;
    char listen[64], buf[128];
    int probe, a, b, eof;

    (void)state;
    /* valgrind keeps its own descriptor limit: a lowered one stays low */
    if (getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload"))
        skip();
    probe = socket(AF_INET, SOCK_STREAM, 0);
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(probe, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(getsockname(probe, (struct sockaddr *)&sin, &len), 0);
    close(probe);
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", ntohs(sin.sin_port));
    params.listen = listen;
    server_start();
    a = socket(AF_INET, SOCK_STREAM, 0);
    b = socket(AF_INET, SOCK_STREAM, 0);
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    low = old;
    low.rlim_cur = (rlim_t)(a > b ? a : b) + 1; /* no descriptor left */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    assert_int_equal(connect(a, (struct sockaddr *)&sin, sizeof(sin)), 0);
    assert_int_equal(connect(b, (struct sockaddr *)&sin, sizeof(sin)), 0);
    fcntl(a, F_SETFL, O_NONBLOCK);
    fcntl(b, F_SETFL, O_NONBLOCK);
    getrusage(RUSAGE_SELF, &before);
    pump(a, buf, sizeof(buf), 0, 100, &eof);
    getrusage(RUSAGE_SELF, &after);
    assert_int_equal(smtpd_server_sessions(server), 0);
    /* a listener called again and again would burn the CPU meanwhile */
    assert_true(cpu_ms(&after) - cpu_ms(&before) < 50);
    assert_true(was_logged("warning: accept: Too many open files; not "
                           "accepting for 500 ms"));
    assert_int_equal(nlogged, 1); /* paused, not spinning */
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    expect(a, greeting);
    expect(b, greeting);
    assert_int_equal(smtpd_server_sessions(server), 2);
    close(a);
    close(b);
}

/* smtpd_listen: a bad address is refused with the reason. */
static void test_listen_errors(void **state)
{
    static const struct smtpd_ops ops = {.store = fake_store};
    char why[256];

    (void)state;
    params.listen = "127.0.0.1";
    assert_null(smtpd_server_create(base, &params, &ops, why, sizeof(why)));
    assert_string_equal(why, "smtpd_listen: \"127.0.0.1\" is not "
                             "ADDRESS:PORT or [IPV6-ADDRESS]:PORT");
    params.listen = "";
    params.relay_domains = "a@b";
    assert_null(smtpd_server_create(base, &params, &ops, why, sizeof(why)));
    assert_string_equal(why, "relay_domains: not a domain in \"a@b\"");
}

/* ---- the client's name (peer.c) ---- */

static ingress_peer_fn *peer_fn;
static void *peer_conn;
static int peer_asked, peer_cancelled;
static char peer_addr[64];
static int peer_token;

static void *fake_peer_lookup(void *ctx, const struct sockaddr *sa,
                              socklen_t salen, ingress_peer_fn *done,
                              void *conn)
{
    (void)ctx;
    (void)salen;
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, peer_addr,
              sizeof(peer_addr));
    peer_asked++;
    peer_fn = done;
    peer_conn = conn;
    return &peer_token;
}

static void fake_peer_cancel(void *ctx, void *lookup)
{
    (void)ctx;
    assert_ptr_equal(lookup, &peer_token);
    peer_cancelled++;
    peer_fn = NULL;
}

static int peer_connect(const char *address, long timeout_ms, int lookup)
{
    static const struct smtpd_ops ops = {.store = fake_store,
                                         .log = fake_log,
                                         .peer_lookup = fake_peer_lookup,
                                         .peer_cancel = fake_peer_cancel};
    char why[256];

    peer_fn = NULL;
    peer_asked = peer_cancelled = 0;
    params.peername_lookup = lookup;
    params.peername_lookup_timeout_ms = timeout_ms;
    server = smtpd_server_create(base, &params, &ops, why, sizeof(why));
    assert_non_null(server);
    return connect_from(address);
}

/*
 * Postfix's smtpd knows the name before it greets: the greeting waits
 * for the answer, early commands wait with it, and the name is in
 * "connect from", "client=", Received: and "disconnect from".
 */
static void test_peer_name_confirmed(void **state)
{
    int fd = peer_connect("127.0.0.2", 5000, 1);

    (void)state;
    assert_int_equal(peer_asked, 1);
    assert_string_equal(peer_addr, "127.0.0.2");
    put(fd, "HELO early.test\r\n");
    expect_silence(fd, 50);
    assert_false(was_logged("connect from"));
    assert_non_null(peer_fn);
    peer_fn(peer_conn, "good.test", NULL);
    expect(fd, greeting);
    expect(fd, "250 mx.test\r\n");
    assert_true(was_logged("connect from good.test[127.0.0.2]"));
    put(fd, "MAIL FROM:<s@x.test>\r\nRCPT TO:<a@relay.test>\r\nDATA\r\n"
            "x\r\n.\r\n");
    expect(fd, "250 2.1.0 Ok\r\n250 2.1.5 Ok\r\n"
               "354 End data with <CR><LF>.<CR><LF>\r\n"
               "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    {
        const char *want =
            "Received: from early.test (good.test [127.0.0.2])\r\n";

        assert_memory_equal(stored[0]->body, want, strlen(want));
    }
    expect(fd, stored[0]->id);
    expect(fd, "\r\n");
    chat(fd, "QUIT\r\n", "221 2.0.0 Bye\r\n");
    close(fd);
    event_base_loop(base, EVLOOP_NONBLOCK);
    assert_true(was_logged("disconnect from good.test[127.0.0.2] helo=1"));
    assert_int_equal(peer_cancelled, 0);
}

/* No confirmed name: unknown, and the lookup's warning is logged. */
static void test_peer_name_unknown(void **state)
{
    int fd = peer_connect("127.0.0.3", 5000, 1);

    (void)state;
    assert_non_null(peer_fn);
    peer_fn(peer_conn, NULL,
            "hostname liar.test does not resolve to address 127.0.0.3");
    expect(fd, greeting);
    assert_true(was_logged(
        "warning: hostname liar.test does not resolve to address 127.0.0.3"));
    assert_true(was_logged("connect from unknown[127.0.0.3]"));
    close(fd);
}

/* A lookup that never ends costs the client the timeout, no more. */
static void test_peer_name_timeout(void **state)
{
    int64_t t0;
    int fd;

    (void)state;
    t0 = util_clock_mono_ms();
    fd = peer_connect("127.0.0.4", 150, 1);
    expect(fd, greeting);
    assert_true(util_clock_mono_ms() - t0 >= 140);
    assert_int_equal(peer_cancelled, 1);
    assert_null(peer_fn);
    assert_true(was_logged(
        "warning: 127.0.0.4: client name lookup timed out after 150 ms"));
    assert_true(was_logged("connect from unknown[127.0.0.4]"));
    chat(fd, "HELO a.test\r\n", "250 mx.test\r\n");
    close(fd);
}

/* smtpd_peername_lookup = no: no lookup, the greeting at once. */
static void test_peer_name_off(void **state)
{
    int fd = peer_connect("127.0.0.5", 5000, 0);

    (void)state;
    expect(fd, greeting);
    assert_int_equal(peer_asked, 0);
    assert_true(was_logged("connect from unknown[127.0.0.5]"));
    close(fd);
}

/* A stop during the lookup: 421, the lookup cancelled. */
static void test_peer_name_shutdown(void **state)
{
    int fd = peer_connect("127.0.0.6", 5000, 1);

    (void)state;
    expect_silence(fd, 20);
    smtpd_server_close(server);
    expect(fd, "421 4.3.2 mx.test Service shutting down\r\n");
    assert_int_equal(peer_cancelled, 1);
    close(fd);
}

/* A client gone before the answer: the session ends after it. */
static void test_peer_name_client_gone(void **state)
{
    int fd;

    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as sluiced: the greeting finds no reader */
    fd = peer_connect("127.0.0.7", 5000, 1);
    expect_silence(fd, 20);
    close(fd);
    peer_fn(peer_conn, "gone.test", NULL);
    for (int i = 0; i < 50 && !was_logged("disconnect from"); i++)
        event_base_loop(base, EVLOOP_NONBLOCK);
    assert_true(was_logged("disconnect from gone.test[127.0.0.7]"));
    assert_int_equal(smtpd_server_sessions(server), 0);
}

/* ---- SMTPUTF8 (RFC 6531) ---- */

#define EHLO_UTF8                                                              \
    "250-mx.test\r\n250-PIPELINING\r\n250-SIZE 1000\r\n250-ETRN\r\n"           \
    "250-ENHANCEDSTATUSCODES\r\n250-8BITMIME\r\n250-DSN\r\n"                   \
    "250-SMTPUTF8\r\n250 CHUNKING\r\n"

static int utf8_hello(void)
{
    int fd;

    params.smtputf8_enable = 1;
    fd = connect_from("127.0.0.1");
    expect(fd, greeting);
    chat(fd, "EHLO client.test\r\n", EHLO_UTF8);
    return fd;
}

/* Offered; declared, a UTF-8 envelope is taken, and the flag kept. */
static void test_smtputf8_accepted(void **state)
{
    int fd = utf8_hello();
    const char *rcvd;

    (void)state;
    chat(fd, "MAIL FROM:<\xc3\xa9l\xc3\xa8ve@x.test> SMTPUTF8\r\n",
         "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<j\xc3\xb6rg@relay.test>\r\n", "250 2.1.5 Ok\r\n");
    chat(fd, "DATA\r\n", "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: gr\xc3\xbc\xc3\x9f"
            "e\r\n\r\nhi\r\n.\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    assert_int_equal(nstored, 1);
    assert_int_equal(stored[0]->smtputf8, 1);
    assert_string_equal(stored[0]->sender, "\xc3\xa9l\xc3\xa8ve@x.test");
    assert_string_equal(stored[0]->rcpt[0].address, "j\xc3\xb6rg@relay.test");
    rcvd = strstr(stored[0]->body, "with UTF8SMTP id ");
    assert_non_null(rcvd);
    /* the next transaction starts without it */
    expect(fd, stored[0]->id);
    expect(fd, "\r\n");
    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<j\xc3\xb6rg@relay.test>\r\n",
         "553 5.6.7 Must declare SMTPUTF8 to send unicode address\r\n");
    close(fd);
}

/* Not declared: a UTF-8 sender or recipient is refused, 553 5.6.7. */
static void test_smtputf8_undeclared(void **state)
{
    int fd = utf8_hello();

    (void)state;
    chat(fd, "MAIL FROM:<\xc3\xa9@x.test>\r\n",
         "553 5.6.7 Must declare SMTPUTF8 to send unicode address\r\n");
    chat(fd, "MAIL FROM:<s@x.test>\r\n", "250 2.1.0 Ok\r\n");
    chat(fd, "RCPT TO:<\xc3\xa9@relay.test>\r\n",
         "553 5.6.7 Must declare SMTPUTF8 to send unicode address\r\n");
    chat(fd, "RCPT TO:<a@relay.test>\r\n", "250 2.1.5 Ok\r\n");
    chat(fd, "DATA\r\n", "354 End data with <CR><LF>.<CR><LF>\r\n");
    put(fd, "Subject: x\r\n\r\nhi\r\n.\r\n");
    expect(fd, "250 2.0.0 Ok: queued as ");
    assert_int_equal(stored[0]->smtputf8, 0);
    assert_non_null(strstr(stored[0]->body, "with ESMTP id "));
    close(fd);
}

/* A command line that is not UTF-8; SMTPUTF8 where it is not offered. */
static void test_smtputf8_refusals(void **state)
{
    int fd = utf8_hello();

    (void)state;
    chat(fd, "MAIL FROM:<caf\xe9@x.test> SMTPUTF8\r\n",
         "500 5.5.2 Error: bad UTF-8 syntax\r\n");
    chat(fd, "NOOP \xed\xa0\x80\r\n", "500 5.5.2 Error: bad UTF-8 syntax\r\n");
    close(fd);
    smtpd_server_free(server);
    server = NULL;
    params.smtputf8_enable = 0;
    fd = hello("127.0.0.1"); /* no SMTPUTF8 in its EHLO */
    chat(fd, "MAIL FROM:<s@x.test> SMTPUTF8\r\n",
         "555 5.5.4 Unsupported parameter SMTPUTF8\r\n");
    close(fd);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_greeting_and_ehlo),
        T(test_peer_name_confirmed),
        T(test_peer_name_unknown),
        T(test_peer_name_timeout),
        T(test_peer_name_off),
        T(test_peer_name_shutdown),
        T(test_peer_name_client_gone),
        T(test_smtputf8_accepted),
        T(test_smtputf8_undeclared),
        T(test_smtputf8_refusals),
        T(test_transaction),
        T(test_answer_waits_for_store),
        T(test_store_failure),
        T(test_storage_spool_free),
        T(test_pipelining),
        T(test_sequence_and_syntax),
        T(test_recipient_limit),
        T(test_size_limit),
        T(test_relay_control),
        T(test_bare_lf_smuggling),
        T(test_bare_cr),
        T(test_bare_newline_normalize),
        T(test_bare_newline_reject),
        T(test_bare_newline_note),
        T(test_bare_newline_exclusions),
        T(test_bare_newline_bad_values),
        T(test_bdat),
        T(test_nul_in_header),
        T(test_nul_in_body),
        T(test_strip_chars_bad),
        T(test_bdat_refused_chunk),
        T(test_bdat_order),
        T(test_junk_commands),
        T(test_memory_limit),
        T(test_reload_open_session),
        T(test_etrn),
        T(test_error_limit),
        T(test_line_too_long),
        T(test_timeout),
        T(test_deadline_per_line),
        T(test_deadline_per_data_record),
        T(test_deadline_per_read),
        T(test_stress),
        T(test_connection_limit),
        T(test_connection_limit_exceptions),
        T(test_flow_control),
        T(test_shutdown),
        T(test_answer_after_free),
        T(test_missing_headers),
        T(test_received_sanitized),
        T(test_mail_loop),
        T(test_params_reload),
        T(test_accept_out_of_fds),
        T(test_listen_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
