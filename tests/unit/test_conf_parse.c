/*
 * NAME
 *	test_conf_parse 1 - unit tests of the configuration file reader
 * SYNOPSIS
 *	build/tests/test_conf_parse
 * DESCRIPTION
 *	Tests src/conf/file.c: the "name = value" syntax with comments,
 *	blank lines and continuation lines; every error message with its
 *	file and line; missing, empty and unreadable files; and input that
 *	is not a configuration file at all (long lines, binary junk, NUL
 *	bytes, no final newline). Each test writes its file into a
 *	directory made by mkdtemp() and removes it.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "conf/conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHY_SIZE 2048

static char dir[64];
static char path[128];

static int group_setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "%s", "/tmp/test_conf_parse.XXXXXX");
    if (mkdtemp(dir) == NULL)
        return -1;
    snprintf(path, sizeof(path), "%s/sluice.conf", dir);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

static int setup(void **state)
{
    *state = conf_create();
    return 0;
}

static int teardown(void **state)
{
    conf_free(*state);
    unlink(path);
    return 0;
}

static void write_file(const char *data, size_t len)
{
    FILE *fp = fopen(path, "w");

    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

/* Write text to the file and load it; returns conf_load()'s status. */
static int load_text(struct conf *conf, const char *text, char *why,
                     size_t whylen)
{
    write_file(text, strlen(text));
    why[0] = 0;
    return conf_load(conf, path, 1, why, whylen);
}

static void load_ok(struct conf *conf, const char *text)
{
    char why[WHY_SIZE];

    if (load_text(conf, text, why, sizeof(why)) != 0)
        fail_msg("conf_load: %s", why);
}

/* The load must fail with "PATH, line N: " and then exactly expected. */
static void load_fails_at(struct conf *conf, const char *text, int line,
                          const char *expected)
{
    char why[WHY_SIZE];
    char full[WHY_SIZE];

    assert_int_equal(load_text(conf, text, why, sizeof(why)), -1);
    snprintf(full, sizeof(full), "%s, line %d: %s", path, line, expected);
    assert_string_equal(why, full);
}

static void test_missing_file_optional(void **state)
{
    struct conf *conf = *state;
    char why[WHY_SIZE] = "";

    assert_int_equal(
        conf_load(conf, "/nonexistent/sluice.conf", 0, why, sizeof(why)), 0);
    assert_string_equal(why, "");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 100);
}

static void test_missing_file_required(void **state)
{
    struct conf *conf = *state;
    char why[WHY_SIZE] = "";

    assert_int_equal(
        conf_load(conf, "/nonexistent/sluice.conf", 1, why, sizeof(why)), -1);
    assert_string_equal(why,
                        "/nonexistent/sluice.conf: No such file or directory");
}

static void test_directory(void **state)
{
    struct conf *conf = *state;
    char why[WHY_SIZE] = "";
    char expected[WHY_SIZE];

    /* Not "missing": an error even when the file need not exist. */
    assert_int_equal(conf_load(conf, dir, 0, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected), "%s: Is a directory", dir);
    assert_string_equal(why, expected);
}

static void test_empty_file(void **state)
{
    struct conf *conf = *state;

    load_ok(conf, "");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 100);
    load_ok(conf, "\n\n   \n\t\n# nothing here\n");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 100);
    assert_int_equal(conf_override_count(conf), 0);
}

static void test_settings(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    load_ok(conf, "default_process_limit = 50\n"
                  "smtp_destination_concurrency_limit=7\n"
                  "minimal_backoff_time\t=\t10s \t\n"
                  "maximal_queue_lifetime =2\r\n"
                  "destination_concurrency_feedback_debug= yes\n");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 50);
    assert_int_equal(
        conf_int(conf, "smtp", CONF_default_destination_concurrency_limit), 7);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_minimal_backoff_time),
                     10000);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_maximal_queue_lifetime),
                     172800000);
    assert_int_equal(
        conf_bool(conf, NULL, CONF_destination_concurrency_feedback_debug), 1);
    assert_int_equal(conf_lookup(conf, "minimal_backoff_time", &info), 0);
    assert_string_equal(info.value, "10s");
    assert_string_equal(info.file, path);
    assert_int_equal(info.line, 3);
    assert_int_equal(
        conf_lookup(conf, "smtp_destination_concurrency_limit", &info), 0);
    assert_string_equal(info.file, path);
    assert_int_equal(info.line, 2);
}

static void test_comments(void **state)
{
    struct conf *conf = *state;

    load_ok(conf, "# a comment = with an equals sign\n"
                  "   # an indented comment\n"
                  "#default_process_limit = 1\n"
                  "default_process_limit = 60\n"
                  "\t# tab, then comment\n");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 60);
    /* '#' after the start of a line is part of the value. */
    load_fails_at(conf, "\n\ndefault_process_limit = 5 # five\n", 3,
                  "default_process_limit: bad value \"5 # five\": expected an "
                  "integer between 1 and 100000");
}

static void test_continuation(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    load_ok(conf, "default_destination_concurrency_positive_feedback =\n"
                  "    1/concurrency\n"
                  "default_process_limit\n"
                  "  =\n"
                  "\n"
                  "  # a comment does not end the logical line\n"
                  "\t42\n"
                  "maximal_backoff_time = 1\n");
    assert_int_equal(
        conf_feedback(conf, NULL,
                      CONF_default_destination_concurrency_positive_feedback)
            .form,
        CONF_FEEDBACK_CONCURRENCY);
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 42);
    assert_int_equal(conf_lookup(conf, "default_process_limit", &info), 0);
    assert_int_equal(info.line, 3);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_maximal_backoff_time), 1000);
}

static void test_continuation_joins_with_one_space(void **state)
{
    struct conf *conf = *state;

    /* The pieces "5" and "x" join as "5 x": the error shows it. */
    load_fails_at(conf,
                  "default_process_limit = 5   \n"
                  "      x\n",
                  1,
                  "default_process_limit: bad value \"5 x\": expected an "
                  "integer between 1 and 100000");
}

static void test_continuation_without_start(void **state)
{
    struct conf *conf = *state;

    load_fails_at(conf, "  default_process_limit = 5\n", 1,
                  "continuation line (starting with white space) with "
                  "nothing before it");
    load_fails_at(conf, "# comment\n\n\tx\ndefault_process_limit = 5\n", 3,
                  "continuation line (starting with white space) with "
                  "nothing before it");
}

static void test_missing_equals(void **state)
{
    struct conf *conf = *state;

    load_fails_at(conf, "default_process_limit = 5\n\nfoo bar\n", 3,
                  "expected \"name = value\": \"foo bar\"");
    load_fails_at(conf, "default_process_limit\n", 1,
                  "expected \"name = value\": \"default_process_limit\"");
    /* A value may not continue a line that is not a setting. */
    load_fails_at(conf, "default_process_limit\n  5\n", 1,
                  "expected \"name = value\": \"default_process_limit 5\"");
}

static void test_missing_name(void **state)
{
    struct conf *conf = *state;

    load_fails_at(conf, "# x\n= 5\n", 2, "no parameter name before \"=\"");
    load_fails_at(conf, "=\n", 1, "no parameter name before \"=\"");
}

/* Collects the warnings conf_unknown_warn() gives, one per line. */
struct warnings {
    char text[WHY_SIZE];
    int count;
};

static void warning_add(void *ctx, const char *text)
{
    struct warnings *w = ctx;
    size_t used = strlen(w->text);

    snprintf(w->text + used, sizeof(w->text) - used, "%s\n", text);
    w->count++;
}

static void load_warns(const char *text, const char *expected, int count)
{
    struct conf *conf = conf_create();
    struct warnings w = {"", 0};
    char why[WHY_SIZE];
    char want[WHY_SIZE];

    assert_int_equal(load_text(conf, text, why, sizeof(why)), 0);
    conf_unknown_warn(conf, warning_add, &w);
    /* "%s" in expected stands for the file's path, once per warning */
    snprintf(want, sizeof(want), expected, path, path, path, path);
    assert_string_equal(w.text, want);
    assert_int_equal(w.count, count);
    conf_free(conf);
}

/*
 * Issue 14: a Postfix operator brings a main.cf; the names sluice does
 * not implement get one warning each, with the closest known name when
 * the name looks like a typo, and the file loads.
 */
static void test_unknown_parameter(void **state)
{
    struct conf *conf = *state;
    char why[WHY_SIZE];

    load_warns("default_process_limit = 5\nfoo = 1\n",
               "%s, line 2: unknown parameter \"foo\" ignored\n", 1);
    load_warns("smtpd_banner = $myhostname ESMTP\n"
               "minimal_backof_time = 10s\n"
               "smtp_destination_concurency_limit = 3\n"
               "alias_maps = hash:/etc/aliases\n",
               "%s, line 1: unknown parameter \"smtpd_banner\" ignored\n"
               "%s, line 2: unknown parameter \"minimal_backof_time\" "
               "ignored (did you mean \"minimal_backoff_time\"?)\n"
               "%s, line 3: unknown parameter "
               "\"smtp_destination_concurency_limit\" ignored (did you mean "
               "\"smtp_destination_concurrency_limit\"?)\n"
               "%s, line 4: unknown parameter \"alias_maps\" ignored\n",
               4);
    /* a name that is not a name at all is still an error */
    load_fails_at(conf, "foo bar = 1\n", 1, "bad parameter name \"foo bar\"");
    assert_int_equal(
        load_text(conf, "smtp_maximal_queue_lifetime = 1d\n", why, sizeof(why)),
        0);
}

/* Postfix's user-defined parameters: an unknown name may be referred to. */
static void test_unknown_parameter_referred_to(void **state)
{
    struct conf *conf = *state;
    struct warnings w = {"", 0};
    char why[WHY_SIZE];

    assert_int_equal(load_text(conf,
                               "relay_domains = $mydomain, other.example\n"
                               "mydomain = example.com\n",
                               why, sizeof(why)),
                     0);
    assert_string_equal(conf_str(conf, NULL, CONF_relay_domains),
                        "example.com, other.example");
    conf_unknown_warn(conf, warning_add, &w);
    assert_int_equal(w.count, 0);
    /* a bad value in a user-defined parameter matters where it is used */
    load_fails_at(conf, "mydomain = ${x\n", 1,
                  "mydomain: bad value \"${x\": expected $name, ${name} or $$");
}

static void test_suggest(void **state)
{
    struct conf *conf = *state;
    char buf[300];

    assert_int_equal(
        conf_suggest(conf, "maximal_backoff_tmie", buf, sizeof(buf)),
        strlen("maximal_backoff_time"));
    assert_string_equal(buf, "maximal_backoff_time");
    assert_int_equal(
        conf_suggest(conf, "relay_smtp_helo_nmae", buf, sizeof(buf)),
        strlen("relay_smtp_helo_name"));
    assert_string_equal(buf, "relay_smtp_helo_name");
    assert_int_equal(conf_suggest(conf, "virtual_alias_maps", buf, sizeof(buf)),
                     0);
    assert_string_equal(buf, "");
    assert_int_equal(
        conf_suggest(conf, "maximal_backoff_time", buf, sizeof(buf)), 0);
}

static void test_bad_values(void **state)
{
    struct conf *conf = *state;

    load_fails_at(conf, "default_process_limit = 0\n", 1,
                  "default_process_limit: bad value \"0\": expected an "
                  "integer between 1 and 100000");
    load_fails_at(conf, "\nsmtp_process_limit = many\n", 2,
                  "smtp_process_limit: bad value \"many\": expected an "
                  "integer between 1 and 100000");
    load_fails_at(conf, "\n\nqueue_run_delay = 5 minutes\n", 3,
                  "queue_run_delay: bad value \"5 minutes\": expected a time "
                  "like 300s, 5m, 1h");
    load_fails_at(conf, "smtp_connection_cache_on_demand = on\n", 1,
                  "smtp_connection_cache_on_demand: bad value \"on\": "
                  "expected yes or no");
    load_fails_at(conf,
                  "smtp_destination_concurrency_positive_feedback = 1/x\n", 1,
                  "smtp_destination_concurrency_positive_feedback: bad value "
                  "\"1/x\": expected x, x/y, x/concurrency or "
                  "x/sqrt_concurrency with a value between 0 and 1");
    load_fails_at(conf, "concurrency_feedback_rounding = postfix\n", 1,
                  "concurrency_feedback_rounding: bad value \"postfix\": "
                  "expected one of: seed, postfix3");
    load_fails_at(conf, "default_process_limit =\n", 1,
                  "default_process_limit: bad value \"\": expected an "
                  "integer between 1 and 100000");
}

static void test_later_setting_wins(void **state)
{
    struct conf *conf = *state;
    struct conf_info info;

    load_ok(conf, "default_process_limit = 10\n"
                  "smtp_process_limit = 1\n"
                  "default_process_limit = 20\n"
                  "smtp_process_limit = 2\n");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 20);
    assert_int_equal(conf_int(conf, "smtp", CONF_default_process_limit), 2);
    assert_int_equal(conf_lookup(conf, "default_process_limit", &info), 0);
    assert_int_equal(info.line, 3);
    assert_int_equal(conf_override_count(conf), 1);
}

static void test_no_trailing_newline(void **state)
{
    struct conf *conf = *state;

    load_ok(conf, "default_process_limit = 7");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 7);
    load_ok(conf, "default_process_limit =\n  8");
    assert_int_equal(conf_int(conf, NULL, CONF_default_process_limit), 8);
    load_fails_at(conf, "default_process_limit = 7\nx", 2,
                  "expected \"name = value\": \"x\"");
}

static void test_expansion_in_file(void **state)
{
    struct conf *conf = *state;

    load_ok(conf,
            "smtp_destination_concurrency_limit = $default_process_limit\n"
            "default_process_limit = 30\n");
    /* The reference sees the later setting: expansion is at lookup. */
    assert_int_equal(
        conf_int(conf, "smtp", CONF_default_destination_concurrency_limit), 30);
    load_fails_at(conf,
                  "default_process_limit = 5\n"
                  "initial_destination_concurrency = ${nope}\n",
                  2,
                  "initial_destination_concurrency: bad value \"${nope}\": "
                  "unknown parameter \"nope\"");
}

static void test_expansion_loop_in_file(void **state)
{
    struct conf *conf = *state;

    /*
     * The walk starts at initial_destination_concurrency (first in the
     * table), so the loop closes at default_process_limit, on line 2.
     */
    load_fails_at(conf,
                  "# a loop over two lines\n"
                  "default_process_limit = $initial_destination_concurrency\n"
                  "initial_destination_concurrency = $default_process_limit\n",
                  2,
                  "default_process_limit: bad value "
                  "\"$initial_destination_concurrency\": $name expansion "
                  "loop: initial_destination_concurrency -> "
                  "default_process_limit -> initial_destination_concurrency");
}

static void test_earliest_error_reported(void **state)
{
    struct conf *conf = *state;

    /* Both lines are bad after expansion; the first one is reported. */
    load_fails_at(conf,
                  "message_size_limit = 20000000\n"
                  "smtp_process_limit = $message_size_limit\n"
                  "default_process_limit = $nope\n",
                  2,
                  "smtp_process_limit: bad value \"$message_size_limit\": "
                  "expands to \"20000000\": expected an integer between 1 and "
                  "100000");
}

static void test_long_lines(void **state)
{
    struct conf *conf = *state;
    const char *setting = "\ndefault_process_limit = ";
    size_t mb = 1024 * 1024;
    size_t len = 0;
    char *text = malloc(2 * mb + 64);
    char why[WHY_SIZE];
    char expected[WHY_SIZE];

    /* A megabyte of comment, then a megabyte-long bad value. */
    assert_non_null(text);
    text[len++] = '#';
    memset(text + len, 'c', mb);
    len += mb;
    memcpy(text + len, setting, strlen(setting));
    len += strlen(setting);
    memset(text + len, '9', mb);
    len += mb;
    write_file(text, len);
    free(text);
    assert_int_equal(conf_load(conf, path, 1, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected),
             "%s, line 2: default_process_limit: bad value "
             "\"9999999999999999999999999999999999999999999999999999999999"
             "999999...\": expected an integer between 1 and 100000",
             path);
    assert_string_equal(why, expected);
}

/* A small deterministic generator, so that a failure can be replayed. */
static uint32_t junk_next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void test_binary_junk(void **state)
{
    struct conf *conf;
    char why[WHY_SIZE];
    char prefix[256];
    char data[4096];
    uint32_t seed;
    size_t len;
    size_t i;
    int status;

    (void)state;
    snprintf(prefix, sizeof(prefix), "%s", path);
    for (seed = 1; seed <= 300; seed++) {
        uint32_t s = seed * 2654435761u;

        len = junk_next(&s) % sizeof(data);
        for (i = 0; i < len; i++) {
            /* Mostly bytes, some of the syntax's own characters. */
            switch (junk_next(&s) % 8) {
            case 0:
                data[i] = "=\n $#{}\t"[junk_next(&s) % 8];
                break;
            default:
                data[i] = (char)(1 + junk_next(&s) % 255); /* never NUL */
            }
        }
        write_file(data, len);
        conf = conf_create();
        why[0] = 0;
        status = conf_load(conf, path, 1, why, sizeof(why));
        /* Junk is either harmless or an error about this file. */
        if (status != 0) {
            assert_int_equal(status, -1);
            assert_true(strncmp(why, prefix, strlen(prefix)) == 0);
            assert_true(strlen(why) < 600);
        }
        conf_free(conf);
    }
}

static void test_nul_byte(void **state)
{
    struct conf *conf = *state;
    static const char data[] = "default_process_limit = 5\nx\0y = 1\n";
    char why[WHY_SIZE];
    char expected[WHY_SIZE];

    write_file(data, sizeof(data) - 1);
    assert_int_equal(conf_load(conf, path, 1, why, sizeof(why)), -1);
    snprintf(expected, sizeof(expected), "%s, line 2: line contains a NUL byte",
             path);
    assert_string_equal(why, expected);
}

static void test_junk_quoted_in_message(void **state)
{
    struct conf *conf = *state;

    load_fails_at(conf, "\x7f\xfe\x01 = 1\n", 1,
                  "bad parameter name \"\\x7f\\xfe\\x01\"");
    load_fails_at(conf,
                  "\xef\xbb\xbf"
                  "default_process_limit = 1\n",
                  1,
                  "bad parameter name "
                  "\"\\xef\\xbb\\xbfdefault_process_limit\"");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_missing_file_optional, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_missing_file_required, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_comments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_joins_with_one_space,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_continuation_without_start, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_missing_equals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_name, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unknown_parameter, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_parameter_referred_to,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_suggest, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_values, setup, teardown),
        cmocka_unit_test_setup_teardown(test_later_setting_wins, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_no_trailing_newline, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expansion_in_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_expansion_loop_in_file, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_earliest_error_reported, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_long_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_binary_junk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nul_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_junk_quoted_in_message, setup,
                                        teardown),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
