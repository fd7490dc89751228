/*
 * tests/unit/sandbox/test_plan.c - sandbox ids, names and address plans (plan.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/sandbox.h"

static void
test_id(void **state)
{
	char a[SANDBOX_ID_LEN + 1], b[SANDBOX_ID_LEN + 1];
	size_t i;

	(void)state;
	assert_int_equal(sandbox_id_new(a), 0);
	assert_int_equal(sandbox_id_new(b), 0);
	assert_int_equal(strlen(a), SANDBOX_ID_LEN);
	for (i = 0; i < SANDBOX_ID_LEN; i++)
		assert_non_null(strchr("0123456789abcdef", a[i]));
	assert_string_not_equal(a, b);
}

static void
test_names(void **state)
{
	(void)state;
	assert_true(sandbox_name_valid("agent-1"));
	assert_true(sandbox_name_valid("A.b_c"));
	assert_true(sandbox_name_valid("abcdefghijabcdefghijabcdefghij12"));  /* 32 */
	assert_false(sandbox_name_valid(""));
	assert_false(sandbox_name_valid("abcdefghijabcdefghijabcdefghij123"));  /* 33 */
	assert_false(sandbox_name_valid("-x"));
	assert_false(sandbox_name_valid(".x"));
	assert_false(sandbox_name_valid("a b"));
	assert_false(sandbox_name_valid("a/b"));
	assert_false(sandbox_name_valid("a\"b"));
}

static void
test_plan(void **state)
{
	struct sandbox_net n;

	(void)state;
	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3d", 1, 15001, 15353), 0);
	assert_string_equal(n.table, "sluice_0a1b2c3d");
	assert_string_equal(n.netns, "sluice_0a1b2c3d");
	assert_string_equal(n.host_if, "slh0a1b2c3d");
	assert_string_equal(n.sbx_if, "sls0a1b2c3d");
	assert_string_equal(n.host_v4, "10.200.0.5");
	assert_string_equal(n.sbx_v4, "10.200.0.6");
	assert_string_equal(n.host_v6, "fd00:5c::5");
	assert_string_equal(n.sbx_v6, "fd00:5c::6");
	assert_int_equal(n.transparent_port, 15001);
	assert_int_equal(n.dns_port, 15353);

	assert_int_equal(sandbox_net_plan(&n, "ffffffff", SANDBOX_MAX_INDEX, 1, 2), 0);
	assert_string_equal(n.host_v4, "10.200.255.253");
	assert_string_equal(n.sbx_v4, "10.200.255.254");
	assert_string_equal(n.host_v6, "fd00:5c::fffd");
	assert_string_equal(n.sbx_v6, "fd00:5c::fffe");

	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3d", 0, 1, 2), SLUICE_EINVAL);
	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3d", SANDBOX_MAX_INDEX + 1, 1, 2), SLUICE_EINVAL);
	assert_int_equal(sandbox_net_plan(&n, "0A1B2C3D", 1, 1, 2), SLUICE_EINVAL);
	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3", 1, 1, 2), SLUICE_EINVAL);
	assert_int_equal(sandbox_net_plan(&n, "0a1b2c3d0", 1, 1, 2), SLUICE_EINVAL);
	assert_int_equal(sandbox_net_plan(&n, "0a1b;c3d", 1, 1, 2), SLUICE_EINVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_id),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
