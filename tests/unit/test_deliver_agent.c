/*
 * test_deliver_agent - an external agent behind deliver_start()
 * (deliver/agent.c, pool.c; sluice-agent(7)), with small sh agents: a
 * result line that arrives in two writes, the job line as the agent
 * reads it (xtext of hostile addresses, the null sender, the message's
 * size and LF line ends), reuse of the idle agent, a line over the
 * limit, garbage, a program that cannot be executed.
 */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "deliver/deliver.h"

static struct deliver_result *result;
static struct event_base *base;

static void done_cb(void *ctx, struct deliver_result *res)
{
    (void)ctx;
    result = res;
    event_base_loopbreak(base);
}

static const struct deliver_rcpt rcpts[] = {
    {"a@x.test", NULL, 0},
    {"\"b c\"@x.test", NULL, 0},
};

/* One delivery of "Subject: t\r\n\r\nbody\r\n" to script (sh -c). */
static struct deliver_result *run(struct deliver_cache *c, const char *script,
                                  const char *sender, size_t line_limit)
{
    static const char body[] = "Subject: t\r\n\r\nbody\r\n";
    char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
    struct deliver_request req = {0};
    struct timeval cap = {5, 0};

    req.proto = DELIVER_AGENT;
    req.queue_id = "Q1";
    req.sender = sender;
    req.rcpt = rcpts;
    req.nrcpt = 2;
    req.body = util_blob_copy(body, sizeof(body) - 1);
    req.cache = c;
    req.cache_key = "t/0/*";
    req.agent.argv = argv;
    req.agent.channel = "t";
    req.agent.user = "nobody";
    req.agent.idle_ms = 5000;
    req.agent.time_limit_ms = 3000;
    req.agent.restart_ms = 0;
    req.agent.line_limit = line_limit;
    req.agent.output_limit = 65536;
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    util_blob_unref(req.body);
    event_base_loopexit(base, &cap);
    event_base_dispatch(base);
    assert_non_null(result);
    return result;
}

static struct deliver_cache *setup(void)
{
    struct deliver_cache_params p = {0};

    signal(SIGPIPE, SIG_IGN);
    base = event_base_new();
    return deliver_cache_create(base, &p);
}

static void teardown(struct deliver_cache *c)
{
    deliver_cache_free(c);
    event_base_free(base);
}

static void test_split_line_and_reuse(void **state)
{
    static const char script[] =
        "echo '#hungry'\n"
        "while read -r verb id size rest; do\n"
        "  dd bs=1 count=$size of=/dev/null 2>/dev/null\n"
        "  printf '1 o'; sleep 0.1; printf 'k 2.0.0 sp'; sleep 0.1\n"
        "  printf 'lit\\n2 bounce 5.1.1 no\\n#hungry\\n'\n"
        "done\n";
    struct deliver_cache *c = setup();
    struct deliver_result *r;

    (void)state;
    r = run(c, script, "s@y.test", 256);
    assert_int_equal(r->hop_ok, 1);
    assert_string_equal(r->relay, "t");
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->rcpt[0].enhanced, "2.0.0");
    assert_string_equal(r->rcpt[0].text, "split");
    assert_int_equal(r->rcpt[1].status, DELIVER_BOUNCE);
    assert_string_equal(r->rcpt[1].text, "no");
    assert_int_equal(r->conn_use, 1);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_agents(c), 1);
    r = run(c, script, "s@y.test", 256);
    assert_int_equal(r->conn_use, 2); /* the same agent, its second job */
    assert_int_equal(deliver_cache_agents(c), 1);
    deliver_result_free(r);
    teardown(c);
}

static void test_command_changed(void **state)
{
    static const char one[] =
        "echo '#hungry'\n"
        "while read -r verb id size rest; do\n"
        "  dd bs=1 count=$size of=/dev/null 2>/dev/null\n"
        "  printf '1 ok 2.0.0\\n2 ok 2.0.0\\n#hungry\\n'\n"
        "done\n";
    char two[sizeof(one) + 8];
    struct deliver_cache *c = setup();
    struct deliver_result *r;

    (void)state;
    snprintf(two, sizeof(two), "%s#two\n", one);
    r = run(c, one, "s@y.test", 256);
    deliver_result_free(r);
    r = run(c, one, "s@y.test", 256);
    assert_int_equal(r->conn_use, 2);
    deliver_result_free(r);
    /* the same key, another command (a reload): a new agent */
    r = run(c, two, "s@y.test", 256);
    assert_int_equal(r->hop_ok, 1);
    assert_int_equal(r->conn_use, 1);
    assert_int_equal(deliver_cache_agents(c), 1);
    deliver_result_free(r);
    teardown(c);
}

static void test_job_line(void **state)
{
    char path[] = "/tmp/test_deliver_agent.XXXXXX", script[512], line[256];
    int fd = mkstemp(path);
    struct deliver_cache *c = setup();
    struct deliver_result *r;
    FILE *f;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    chmod(path, 0666);
    snprintf(script, sizeof(script),
             "echo '#hungry'; IFS= read -r job; "
             "dd bs=1 count=17 2>/dev/null | od -c | head -1 >/dev/null; "
             "printf '%%s\\n' \"$job\" >%s; "
             "echo '1 ok 2.0.0'; echo '2 defer 4.2.0'; echo '#hungry'; "
             "sleep 5",
             path);
    r = run(c, script, "", 256);
    if (r->rcpt[0].status != DELIVER_OK)
        fail_msg("%s", r->rcpt[0].text);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK);
    assert_string_equal(r->rcpt[0].text, "delivered");
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[1].text, "deferred by the agent");
    deliver_result_free(r);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    unlink(path);
    /* 17 bytes: the CRLFs made LF; the null sender; xtext */
    assert_string_equal(line, "job Q1 17 <> a@x.test \"b+20c\"@x.test\n");
    teardown(c);
}

static void expect_failure(const char *script, size_t limit, const char *why)
{
    struct deliver_cache *c = setup();
    struct deliver_result *r = run(c, script, "s@y.test", limit);

    assert_int_equal(r->hop_ok, 0);
    assert_int_equal(r->rcpt[0].status, DELIVER_OK); /* answered: stands */
    assert_int_equal(r->rcpt[1].status, DELIVER_DEFER);
    assert_string_equal(r->rcpt[1].enhanced, "4.3.0");
    if (strstr(r->rcpt[1].text, why) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", r->rcpt[1].text, why);
    deliver_result_free(r);
    assert_int_equal(deliver_cache_agents(c), 0); /* it is gone */
    teardown(c);
}

static void test_oversize_line(void **state)
{
    (void)state;
    expect_failure("echo '#hungry'; read -r l; echo '1 ok 2.0.0'; "
                   "printf '2 ok 2.0.0 %0100d\\n' 0; sleep 5",
                   64, "a line longer than 64 bytes");
}

static void test_garbage(void **state)
{
    (void)state;
    expect_failure("echo '#hungry'; read -r l; echo '1 ok 2.0.0'; "
                   "echo 'HELO there'; sleep 5",
                   256,
                   "protocol error: expected a recipient number: \"HELO "
                   "there\"");
    expect_failure("echo '#hungry'; read -r l; echo '1 ok 2.0.0'; "
                   "echo '#hungry'; sleep 5",
                   256, "said #hungry with 1 of 2 recipients unanswered");
    expect_failure("echo '#hungry'; read -r l; echo '1 ok 2.0.0'; "
                   "echo '1 ok 2.0.0'; sleep 5",
                   256, "recipient 1 answered twice");
    expect_failure("echo '#hungry'; read -r l; echo '1 ok 2.0.0'; exit 7", 256,
                   "exited with status 7");
}

static void test_cannot_execute(void **state)
{
    struct deliver_cache *c = setup();
    struct deliver_request req = {0};
    char *argv[] = {"/nonexistent/agent", NULL};

    (void)state;
    req.proto = DELIVER_AGENT;
    req.sender = "s@y.test";
    req.rcpt = rcpts;
    req.nrcpt = 2;
    req.cache = c;
    req.cache_key = "t/0/*";
    req.agent.argv = argv;
    req.agent.channel = "t";
    req.agent.user = "nobody";
    req.agent.time_limit_ms = 1000;
    req.agent.line_limit = 256;
    req.agent.output_limit = 1024;
    req.agent.restart_ms = 60000;
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    event_base_dispatch(base);
    assert_non_null(result);
    assert_int_equal(result->hop_ok, 0);
    assert_string_equal(result->rcpt[0].text,
                        "cannot execute /nonexistent/agent: No such file or "
                        "directory");
    deliver_result_free(result);
    /* within agent_restart_delay: deferred without a try */
    result = NULL;
    deliver_start(base, &req, done_cb, NULL);
    event_base_dispatch(base);
    assert_non_null(result);
    assert_string_equal(result->rcpt[1].text,
                        "agent t failed recently: another starts after "
                        "agent_restart_delay");
    deliver_result_free(result);
    teardown(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_line_and_reuse),
        cmocka_unit_test(test_command_changed),
        cmocka_unit_test(test_job_line),
        cmocka_unit_test(test_oversize_line),
        cmocka_unit_test(test_garbage),
        cmocka_unit_test(test_cannot_execute),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
