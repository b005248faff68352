/*
 * test_conf_rules - the scheduler rules file (scheduler_rules): ZMailer's
 * scheduler.conf form, sequential matching, and every bad input refused
 * with its file and line
 *
 * Quotes are from ../shared/seeds/zmailer-scheduler-notes.txt.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "core/core.h"

static char path[64];

static void write_file(const char *text, size_t len)
{
    FILE *fp;
    int fd;

    strcpy(path, "/tmp/test_conf_rules.XXXXXX");
    fd = mkstemp(path);
    assert_true(fd >= 0);
    fp = fdopen(fd, "w");
    assert_non_null(fp);
    assert_int_equal(fwrite(text, 1, len, fp), len);
    fclose(fp);
}

static struct conf_rules *load(const char *text, char *why, size_t whylen)
{
    struct conf_rules *r;

    write_file(text, strlen(text));
    r = conf_rules_load(path, why, whylen);
    unlink(path);
    return r;
}

/* A refused file: why is "PATH, line N: expect". */
static void refused(const char *text, int line, const char *expect)
{
    char why[512], want[512];
    struct conf_rules *r = load(text, why, sizeof(why));

    assert_null(r);
    snprintf(want, sizeof(want), "%s, line %d: %s", path, line, expect);
    assert_string_equal(why, want);
}

static const char sample[] =
    "# defaults for everything, as ZMailer's */* clause\n"
    "*/*\tinterval=1m idlemax=5m\n"
    "\tmaxta=40\n"
    "\n"
    "smtp/*.slow.example\n"
    "\t# a comment inside a clause\n"
    "\tmaxring=2 ageorder\n"
    "\tcommand=\"smtp\"\n"
    "smtp/dialup.example  QueueOnly COMMAND=smtp\n"
    "lmtp   command=lmtp\n"
    "mdir/*\tretries=\"1 1 2 3 5 8\" skew=5\n"
    "\tcommand=\"/usr/lib/sluice/maildir -d /var/mail/$host ${channel}\"\n"
    "smtp/*\tcommand=smtp maxring=20\n";

/* "When a vertex is scanned in, it is looked up from configurations
 * (sequential match - first to match is the match)": the clauses are
 * walked in order, options picked up, the first with a command ends it. */
static void test_sequential_match(void **state)
{
    char why[256];
    struct conf_rules *r = load(sample, why, sizeof(why));
    struct conf_rule_match m;

    (void)state;
    assert_non_null(r);
    assert_int_equal(conf_rules_count(r), 6);
    assert_int_equal(conf_rules_maxta(r), 40);
    assert_int_equal(conf_rules_match(r, "smtp", "mx.slow.example", &m), 0);
    assert_int_equal(m.index, 1);
    assert_int_equal(m.line, 5);
    assert_int_equal(m.agent, CONF_RULE_SMTP);
    assert_int_equal(m.maxring, 2);
    assert_int_equal(m.ageorder, 1);
    assert_int_equal(m.idlemax, 300000); /* from the first clause */
    assert_int_equal(m.interval, 60000);
    /* a later clause would also match, the first with a command wins */
    assert_int_equal(conf_rules_match(r, "smtp", "other.example", &m), 0);
    assert_int_equal(m.index, 5);
    assert_int_equal(m.maxring, 20);
    assert_int_equal(m.ageorder, 0);
    /* keywords in any case; host names in any case */
    assert_int_equal(conf_rules_match(r, "smtp", "DialUp.Example", &m), 0);
    assert_int_equal(m.index, 2);
    assert_int_equal(m.queueonly, 1);
    /* a selector without "/" is a channel, any host */
    assert_int_equal(conf_rules_match(r, "lmtp", "anything", &m), 0);
    assert_int_equal(m.agent, CONF_RULE_LMTP);
    assert_int_equal(m.idlemax, 300000);
    /* no clause with a command for this channel */
    assert_int_equal(conf_rules_match(r, "relay", "x.example", &m), -1);
    assert_true(conf_rules_channel_known(r, "smtp"));
    assert_false(conf_rules_channel_known(r, "relay"));
    conf_rules_free(r);
}

/* "if the config-entry argv has "$host", the thread-ring can only have
 * one thread in it": the rule says so, and the words expand. */
static void test_program_and_host(void **state)
{
    char why[256];
    struct conf_rules *r = load(sample, why, sizeof(why));
    struct conf_rule_match m;
    struct core_zrule z;
    char **argv;

    (void)state;
    assert_int_equal(conf_rules_match(r, "mdir", "box.example", &m), 0);
    assert_int_equal(m.agent, CONF_RULE_PROGRAM);
    assert_int_equal(m.argc, 4);
    assert_int_equal(m.per_host, 1);
    argv = conf_rules_argv(&m, "mdir", "box.example");
    assert_string_equal(argv[0], "/usr/lib/sluice/maildir");
    assert_string_equal(argv[1], "-d");
    assert_string_equal(argv[2], "/var/mail/box.example");
    assert_string_equal(argv[3], "mdir");
    assert_null(argv[4]);
    conf_rules_argv_free(argv);
    conf_rules_zrule(&m, &z);
    assert_int_equal(z.index, 4);
    assert_int_equal(z.per_host, 1);
    assert_int_equal(z.idlemax, 300000);
    /* retries: factors of interval, the last repeating, at most skew */
    assert_int_equal(conf_rules_retry_delay(&m, 0), 60000);
    assert_int_equal(conf_rules_retry_delay(&m, 2), 120000);
    assert_int_equal(conf_rules_retry_delay(&m, 4), 300000);
    assert_int_equal(conf_rules_retry_delay(&m, 5), 300000); /* 8 > skew */
    assert_int_equal(conf_rules_retry_delay(&m, 99), 300000);
    assert_int_equal(conf_rules_match(r, "smtp", "a.example", &m), 0);
    assert_int_equal(m.per_host, 0);
    assert_int_equal(conf_rules_retry_delay(&m, 7), 60000);
    conf_rules_free(r);
}

/* ZMailer: a clause with only its pattern takes the next one's options. */
static void test_empty_clause(void **state)
{
    char why[256];
    struct conf_rules *r =
        load("smtp/a.example\nsmtp/b.example\n\tmaxring=3 command=smtp\n", why,
             sizeof(why));
    struct conf_rule_match m;

    (void)state;
    assert_non_null(r);
    assert_int_equal(conf_rules_match(r, "smtp", "a.example", &m), 0);
    assert_int_equal(m.index, 0);
    assert_int_equal(m.maxring, 3);
    assert_int_equal(conf_rules_match(r, "smtp", "b.example", &m), 0);
    assert_int_equal(m.index, 1);
    conf_rules_free(r);
    refused("smtp/a command=smtp\nsmtp/b\n", 2,
            "a clause with no options and none after it to take them from");
}

static void test_refused(void **state)
{
    (void)state;
    refused("smtp/* command=\"smtp\n", 1, "a double quote that is not closed");
    refused("smtp/*\n\tcommand=smtp\n\tmaxrings=3\n", 1,
            "unknown option \"maxrings=3\"");
    refused("smtp/* maxchannel=20 command=smtp\n", 1,
            "maxchannel is a ZMailer keyword that sluice does not implement");
    refused("*/* maxta=10\nsmtp/* maxta=20 command=smtp\n", 2,
            "maxta: the limit is global and already set on line 1");
    refused("smtp/* command=\"bin/agent $host\"\n", 1,
            "command: \"bin/agent\" is neither smtp, lmtp nor the absolute "
            "path of a program");
    refused("smtp/* command=\"/bin/agent $user\"\n", 1,
            "command: unknown variable in \"$user\": expected $host or "
            "$channel");
    refused("smtp/* command=\"smtp -c $channel\"\n", 1,
            "command: the built-in smtp takes no arguments");
    refused("smtp/* command=\"\"\n", 1, "command: empty");
    refused("smtp/* maxring=0 command=smtp\n", 1,
            "maxring: bad value \"0\": expected a number from 1 to 100000");
    refused("smtp/* maxring=12x command=smtp\n", 1,
            "maxring: bad value \"12x\": expected a number from 1 to 100000");
    refused("smtp/* maxring command=smtp\n", 1,
            "maxring needs a value (maxring=...)");
    refused("smtp/* ageorder=yes command=smtp\n", 1,
            "ageorder is a flag: it takes no value");
    refused("smtp/* maxring=2 maxring=3 command=smtp\n", 1,
            "maxring given twice in one clause");
    refused("smtp/* idlemax=forever command=smtp\n", 1,
            "idlemax: bad value \"forever\": expected a time like 300s, 5m, "
            "1h");
    refused("smtp/* retries=\"1 x\" command=smtp\n", 1,
            "retries: bad value \"x\": expected a number from 1 to 1000");
    refused("smtp/* retries=\"\" command=smtp\n", 1,
            "retries: expected factors such as \"1 1 2 3 5 8\"");
    /* an option written at the start of a line is not a selector */
    refused("smtp/*\nmaxring=3\n", 2,
            "bad selector \"maxring=3\": a clause starts with its "
            "channel/host pattern (options go after it or on lines that "
            "start with white space)");
    refused("smtp/ command=smtp\n", 1, "selector with an empty host pattern");
    refused("/x command=smtp\n", 1, "selector with an empty channel pattern");
    refused("\tcommand=smtp\n", 1,
            "continuation line (starting with white space) with nothing "
            "before it");
}

/* Hostile files: garbage, NUL bytes, an endless line, too many words. */
static void test_hostile(void **state)
{
    size_t big = 2 * 65536;
    char *text = malloc(big + 32);
    char why[512], want[512];
    struct conf_rules *r;

    (void)state;
    refused("\x01\xff\xfe garbage\n", 1,
            "bad selector \"\\x01\\xff\\xfe\": a clause starts with its "
            "channel/host pattern (options go after it or on lines that "
            "start with white space)");
    write_file("smtp/* co\0mmand=smtp\n", 21);
    assert_null(conf_rules_load(path, why, sizeof(why)));
    unlink(path);
    snprintf(want, sizeof(want), "%s, line 1: line contains a NUL byte", path);
    assert_string_equal(why, want);
    /* one line of 128 KiB: refused, not read whole */
    memcpy(text, "smtp/* command=\"/bin/x ", 23);
    memset(text + 23, 'a', big - 23);
    text[big] = '\n';
    write_file(text, big + 1);
    assert_null(conf_rules_load(path, why, sizeof(why)));
    unlink(path);
    assert_non_null(strstr(why, ", line 1: line longer than 65536 bytes"));
    /* a word over 1 KiB */
    memcpy(text, "smtp/* command=", 15);
    memset(text + 15, 'b', 2000);
    strcpy(text + 2015, "\n");
    refused(text, 1, "a word longer than 1023 bytes");
    /* 33 words */
    strcpy(text, "smtp/* command=\"/bin/x");
    for (int i = 0; i < 32; i++)
        strcat(text, " w");
    strcat(text, "\"\n");
    refused(text, 1, "command: more than 32 words");
    free(text);
    assert_null(conf_rules_load("/nonexistent/rules", why, sizeof(why)));
    assert_string_equal(why, "/nonexistent/rules: No such file or directory");
    r = conf_rules_load("/dev/null", why, sizeof(why));
    assert_null(r);
    assert_string_equal(why, "/dev/null: not a regular file");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sequential_match),
        cmocka_unit_test(test_program_and_host),
        cmocka_unit_test(test_empty_clause),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_hostile),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
