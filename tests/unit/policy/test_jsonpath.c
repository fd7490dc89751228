/*
 * tests/unit/policy/test_jsonpath.c - JSON path syntax, matching and
 * spelling, and the urlencoded-form reader (policy/jsonpath.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

static int
ok(const char *p)
{
	return policy_json_path_ok(p, strlen(p));
}

static void
test_syntax(void **state)
{
	static const char *const good[] = {
	    "$.a", "$.token", "$.a.b.c", "$.messages[0].role", "$.items[*].amount", "$['a b']", "$['it\\'s']",
	    "$['back\\\\slash'].x", "$[0]", "$[*]", "$.*", "$.*.x", "$.a-b_c", "$['']", "$.a[12][3]",
	};
	static const char *const bad[] = {
	    "", "$", "a.b", "$.", "$..a", "$.a.", "$[", "$[]", "$[01]", "$[1", "$[-1]", "$['a'", "$['a]", "$['\\x']",
	    "$.a b", "$a", "$.a]", "$[*", "$[**]", "$.a*", "$.*a", "$[1234567890]", "$.a\\b", "$.'a'",
	};
	char longp[POLICY_JSON_PATH_MAX + 8];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (!ok(good[i]))
			fail_msg("rejected %s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ok(bad[i]))
			fail_msg("accepted %s", bad[i]);
	memset(longp, 'a', sizeof(longp));
	longp[0] = '$';
	longp[1] = '.';
	assert_true(policy_json_path_ok(longp, POLICY_JSON_PATH_MAX));
	assert_false(policy_json_path_ok(longp, POLICY_JSON_PATH_MAX + 1));
}

static void
test_match(void **state)
{
	(void)state;
	assert_true(policy_json_path_match("$.token", "$.token"));
	assert_false(policy_json_path_match("$.token", "$.tokens"));
	assert_false(policy_json_path_match("$.token", "$.token.x"));
	assert_false(policy_json_path_match("$.a.b", "$.a"));
	assert_true(policy_json_path_match("$.items[*].key", "$.items[3].key"));
	assert_false(policy_json_path_match("$.items[*].key", "$.items.key"));
	assert_false(policy_json_path_match("$.items[*].key", "$.items['3'].key"));
	assert_true(policy_json_path_match("$.items[2]", "$.items[2]"));
	assert_false(policy_json_path_match("$.items[2]", "$.items[20]"));
	assert_true(policy_json_path_match("$.*.x", "$.anything.x"));
	assert_true(policy_json_path_match("$.*.x", "$['a b'].x"));
	assert_false(policy_json_path_match("$.*.x", "$[0].x"));
	/* one key, two spellings */
	assert_true(policy_json_path_match("$['token']", "$.token"));
	assert_true(policy_json_path_match("$.token", "$['token']"));
	assert_true(policy_json_path_match("$['it\\'s']", "$['it\\'s']"));
	assert_false(policy_json_path_match("$['it\\'s']", "$['its']"));
	/* not paths */
	assert_false(policy_json_path_match("token", "token"));
	assert_false(policy_json_path_match("$.a", "$.a.."));
}

static void
test_spell(void **state)
{
	char buf[64] = "$";
	size_t n = 1;

	(void)state;
	assert_int_equal(policy_json_path_key(buf, sizeof(buf), &n, "auth", 4), 0);
	assert_int_equal(policy_json_path_index(buf, sizeof(buf), &n, 12), 0);
	assert_int_equal(policy_json_path_key(buf, sizeof(buf), &n, "gh token", 8), 0);
	assert_int_equal(policy_json_path_key(buf, sizeof(buf), &n, "1x", 2), 0);
	assert_int_equal(policy_json_path_key(buf, sizeof(buf), &n, "a'\\", 3), 0);
	assert_string_equal(buf, "$.auth[12]['gh token']['1x']['a\\'\\\\']");
	assert_int_equal(n, strlen(buf));
	assert_true(policy_json_path_match("$.auth[*]['gh token'].*.*", buf));
	/* a control byte has no spelling; nor does what does not fit */
	n = 1;
	buf[1] = '\0';
	assert_int_equal(policy_json_path_key(buf, sizeof(buf), &n, "a\nb", 3), -1);
	assert_int_equal(policy_json_path_key(buf, 8, &n, "abcdefgh", 8), -1);
	assert_int_equal(n, 1);
	assert_string_equal(buf, "$");
}

static void
test_form(void **state)
{
	static const char body[] = "a=1&&b&c=x%20y+z&=v&d=%zz&e=%4";
	struct policy_form_iter it = {body, body + sizeof(body) - 1};
	const char *n, *v;
	size_t nl, vl;
	char out[32];

	(void)state;
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_memory_equal(n, "a", nl);
	assert_int_equal(vl, 1);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_int_equal(nl, 1);
	assert_int_equal(vl, 0);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_int_equal(policy_form_decode(v, vl, out, sizeof(out)), 5);
	assert_memory_equal(out, "x y z", 5);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_int_equal(nl, 0);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_int_equal(policy_form_decode(v, vl, out, sizeof(out)), -1);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 1);
	assert_int_equal(policy_form_decode(v, vl, out, sizeof(out)), -1);
	assert_int_equal(policy_form_next(&it, &n, &nl, &v, &vl), 0);
	assert_int_equal(policy_form_decode("abc", 3, out, 2), -1);
	assert_int_equal(policy_form_decode("%41%62", 6, out, 2), 2);
	assert_memory_equal(out, "Ab", 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_syntax),
	    cmocka_unit_test(test_match),
	    cmocka_unit_test(test_spell),
	    cmocka_unit_test(test_form),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
