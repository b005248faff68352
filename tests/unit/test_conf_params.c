/*
 * test_conf_params - src/conf/params.def is the one source of the
 * parameters: enum conf_param_id and conf_params[] come from it in the
 * same order, so CONF_<name> names the entry of <name>, and the getters
 * read a parameter by its symbol as they did by its name.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "conf/conf.h"

/* Every symbol indexes the entry of its own name, and none is missing. */
static void test_symbols_index_their_entries(void **state)
{
    size_t n = 0;

    (void)state;
    assert_int_equal(conf_param_count, CONF_PARAM_COUNT);
#define CONF_PARAM(id, type, ...)                                              \
    assert_string_equal(conf_params[CONF_##id].name, #id);                     \
    n++;
#include "conf/params.def"
#undef CONF_PARAM
    assert_int_equal(n, conf_param_count);
}

/* A lookup by symbol and by name give the same value, overrides too. */
static void test_symbol_and_name_agree(void **state)
{
    struct conf *conf = conf_create();
    char why[256];

    (void)state;
    assert_int_equal(conf_set(conf, "queue_run_delay", "7m", why, sizeof(why)),
                     0);
    assert_int_equal(conf_set(conf, "relay_destination_concurrency_limit", "3",
                              why, sizeof(why)),
                     0);
    assert_int_equal(conf_validate(conf, why, sizeof(why)), 0);
    assert_int_equal(conf_time_ms(conf, NULL, CONF_queue_run_delay), 420000);
    assert_int_equal(conf_time_ms_named(conf, NULL, "queue_run_delay"), 420000);
    assert_int_equal(
        conf_int(conf, "relay", CONF_default_destination_concurrency_limit), 3);
    assert_int_equal(
        conf_int(conf, "smtp", CONF_default_destination_concurrency_limit), 20);
    assert_int_equal(
        conf_int_named(conf, NULL, "relay_destination_concurrency_limit"), 3);
    assert_string_equal(conf_str(conf, NULL, CONF_default_transport), "smtp");
    conf_free(conf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_symbols_index_their_entries),
        cmocka_unit_test(test_symbol_and_name_agree),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
