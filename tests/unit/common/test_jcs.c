/*
 * tests/unit/common/test_jcs.c - RFC 8785 canonical JSON (common/jcs.c):
 * the RFC's own examples (section 3.2.2's whole-document example, section
 * 3.2.3's sorting example, Appendix B's number table), integers past 2^53,
 * not-finite numbers, bounds, bad UTF-8, and canonical text read back.
 */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/jcs.h"
#include "common/sluice.h"

int test_jcs_run(void);

static double
bits(uint64_t u)
{
	double d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* RFC 8785 Appendix B, Table 1 (the NaN and Infinity rows are refused: test_not_finite). */
static void
test_appendix_b(void **state)
{
	static const struct {
		uint64_t bits;
		const char *text;
	} t[] = {
		{0x0000000000000000, "0"}, {0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"}, {0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"}, {0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"}, {0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"}, {0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"}, {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"}, {0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"}, {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"}, {0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"}, {0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"}, {0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"}, {0x43143ff3c1cb0959, "1424953923781206.2"},
	};
	char buf[JCS_NUMBER_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int n = jcs_number(bits(t[i].bits), buf);

		assert_int_equal(n, (int)strlen(t[i].text));
		assert_string_equal(buf, t[i].text);
		/* and read back: the same double (both zeros are 0) */
		assert_true(strtod(buf, NULL) == bits(t[i].bits));
	}
	/* more of ECMAScript's layout: the plain and the exponent forms at their edges */
	jcs_number(1e21, buf);
	assert_string_equal(buf, "1e+21");
	jcs_number(1e20, buf);
	assert_string_equal(buf, "100000000000000000000");
	jcs_number(1e-7, buf);
	assert_string_equal(buf, "1e-7");
	jcs_number(1.5e-7, buf);
	assert_string_equal(buf, "1.5e-7");
	jcs_number(0.1, buf);
	assert_string_equal(buf, "0.1");
	jcs_number(-12.5, buf);
	assert_string_equal(buf, "-12.5");
	jcs_number(123456789012345680000.0, buf);
	assert_string_equal(buf, "123456789012345680000");
}

static void
test_not_finite(void **state)
{
	char buf[JCS_NUMBER_MAX], *out = (char *)"x";
	size_t len = 7;

	(void)state;
	assert_int_equal(jcs_number(bits(0x7fffffffffffffff), buf), SLUICE_EINVAL); /* NaN */
	assert_int_equal(jcs_number(bits(0x7ff0000000000000), buf), SLUICE_EINVAL); /* Infinity */
	assert_int_equal(jcs_number(bits(0xfff0000000000000), buf), SLUICE_EINVAL); /* -Infinity */
	/* jansson refuses to make a not-finite real; a tree cannot carry one in.  Text cannot either. */
	assert_null(json_real(NAN));
	assert_int_equal(jcs_from_text("[1e400]", 7, 100, &out, &len), SLUICE_EPARSE);
	assert_null(out);
	assert_int_equal(len, 0);
}

static void
check_text(const char *in, const char *want)
{
	char *out = NULL, *again = NULL;
	size_t len = 0, len2 = 0;

	assert_int_equal(jcs_from_text(in, strlen(in), 1 << 20, &out, &len), 0);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(out, want, len);
	/* canonical text is a fixed point */
	assert_int_equal(jcs_from_text(out, len, 1 << 20, &again, &len2), 0);
	assert_int_equal(len2, len);
	assert_memory_equal(again, out, len);
	free(out);
	free(again);
}

/* RFC 8785 section 3.2.2: the example of the whole scheme. */
static void
test_rfc_example(void **state)
{
	(void)state;
	check_text("{\n  \"numbers\": [333333333.33333329, 1E30, 4.50,\n              2e-3, 0.000000000000000000000000001],\n"
	           "  \"string\": \"\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\\"\\/\",\n"
	           "  \"literals\": [null, true, false]\n}",
	           "{\"literals\":[null,true,false],\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
	           "\"string\":\"\xe2\x82\xac$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

/* RFC 8785 section 3.2.3: names sorted by UTF-16 code units (the emoji's surrogates sort before U+FB33). */
static void
test_rfc_sorting(void **state)
{
	(void)state;
	check_text("{\n  \"\\u20ac\": \"Euro Sign\",\n  \"\\r\": \"Carriage Return\",\n  \"\\ufb33\": \"Hebrew Letter Dalet With "
	           "Dagesh\",\n  \"1\": \"One\",\n  \"\\ud83d\\ude00\": \"Emoji: Grinning Face\",\n  \"\\u0080\": \"Control\",\n"
	           "  \"\\u00f6\": \"Latin Small Letter O With Diaeresis\"\n}",
	           "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xc2\x80\":\"Control\",\"\xc3\xb6\":\"Latin Small Letter O With "
	           "Diaeresis\",\"\xe2\x82\xac\":\"Euro Sign\",\"\xf0\x9f\x98\x80\":\"Emoji: Grinning Face\",\"\xef\xac\xb3\":"
	           "\"Hebrew Letter Dalet With Dagesh\"}");
	/* a prefix sorts first; nested objects are sorted too; arrays keep their order; more than fit on the stack */
	check_text("{\"ab\":1,\"a\":{\"z\":[3,2,1],\"y\":{}},\"\":0}", "{\"\":0,\"a\":{\"y\":{},\"z\":[3,2,1]},\"ab\":1}");
	check_text("{\"k40\":0,\"k39\":0,\"k38\":0,\"k37\":0,\"k36\":0,\"k35\":0,\"k34\":0,\"k33\":0,\"k32\":0,\"k31\":0,"
	           "\"k30\":0,\"k29\":0,\"k28\":0,\"k27\":0,\"k26\":0,\"k25\":0,\"k24\":0,\"k23\":0,\"k22\":0,\"k21\":0,"
	           "\"k20\":0,\"k19\":0,\"k18\":0,\"k17\":0,\"k16\":0,\"k15\":0,\"k14\":0,\"k13\":0,\"k12\":0,\"k11\":0,"
	           "\"k10\":0,\"k09\":0,\"k08\":0,\"k07\":0,\"k06\":0,\"k05\":0,\"k04\":0,\"k03\":0,\"k02\":0,\"k01\":0}",
	           "{\"k01\":0,\"k02\":0,\"k03\":0,\"k04\":0,\"k05\":0,\"k06\":0,\"k07\":0,\"k08\":0,\"k09\":0,\"k10\":0,"
	           "\"k11\":0,\"k12\":0,\"k13\":0,\"k14\":0,\"k15\":0,\"k16\":0,\"k17\":0,\"k18\":0,\"k19\":0,\"k20\":0,"
	           "\"k21\":0,\"k22\":0,\"k23\":0,\"k24\":0,\"k25\":0,\"k26\":0,\"k27\":0,\"k28\":0,\"k29\":0,\"k30\":0,"
	           "\"k31\":0,\"k32\":0,\"k33\":0,\"k34\":0,\"k35\":0,\"k36\":0,\"k37\":0,\"k38\":0,\"k39\":0,\"k40\":0}");
}

/* Strings: the minimal escapes, nothing else escaped (DEL, U+2028, NUL inside a string). */
static void
test_strings(void **state)
{
	(void)state;
	check_text("[\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f \\u007f\\u2028\\/\"]",
	           "[\"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f \x7f\xe2\x80\xa8/\"]");
	check_text("\"plain\"", "\"plain\"");
	check_text("  true ", "true");
}

/* Integers as the double they convert to: beyond 2^53 the nearest double, and beyond 2^63 read as one. */
static void
test_integers(void **state)
{
	json_t *v = json_pack("[I,I,I,I,I]", (json_int_t)9007199254740993LL, (json_int_t)-9007199254740993LL,
	                      (json_int_t)INT64_MAX, (json_int_t)0, (json_int_t)-7);
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(jcs_dump(v, 4096, &out, &len), 0);
	assert_string_equal(out, "[9007199254740992,-9007199254740992,9223372036854776000,0,-7]");
	free(out);
	json_decref(v);
	check_text("[18446744073709551616, 1.0, -0, -0.0, 10, 1e2]", "[18446744073709552000,1,0,0,10,100]");
}

static void
test_bounds(void **state)
{
	char deep[2 * (JCS_DEPTH_MAX + 1) + 1], *out = NULL;
	size_t len = 0, i;
	json_t *v;

	(void)state;
	for (i = 0; i <= JCS_DEPTH_MAX; i++) {
		deep[i] = '[';
		deep[2 * (JCS_DEPTH_MAX + 1) - 1 - i] = ']';
	}
	deep[2 * (JCS_DEPTH_MAX + 1)] = '\0';
	assert_int_equal(jcs_from_text(deep, strlen(deep), 1 << 20, &out, &len), SLUICE_ETOOBIG);
	assert_null(out);
	/* one level less is fine */
	assert_int_equal(jcs_from_text(deep + 1, strlen(deep) - 2, 1 << 20, &out, &len), 0);
	assert_int_equal(len, 2 * JCS_DEPTH_MAX);
	free(out);
	/* the output bound: exactly enough, one byte short */
	assert_int_equal(jcs_from_text("{\"a\": [1, 2]}", 13, 13, &out, &len), 0);
	assert_string_equal(out, "{\"a\":[1,2]}");
	free(out);
	assert_int_equal(jcs_from_text("{\"a\": [1, 2]}", 13, 11, &out, &len), 0);
	free(out);
	assert_int_equal(jcs_from_text("{\"a\": [1, 2]}", 13, 10, &out, &len), SLUICE_ETOOBIG);
	assert_null(out);
	/* duplicate names and bad JSON are errors */
	assert_int_equal(jcs_from_text("{\"a\":1,\"a\":2}", 13, 100, &out, &len), SLUICE_EPARSE);
	assert_int_equal(jcs_from_text("{", 1, 100, &out, &len), SLUICE_EPARSE);
	/* a tree built without jansson's UTF-8 check: refused, not written */
	v = json_object();
	assert_int_equal(json_object_set_new_nocheck(v, "\xc3", json_true()), 0);
	assert_int_equal(jcs_dump(v, 100, &out, &len), SLUICE_EINVAL);
	json_decref(v);
	v = json_stringn_nocheck("\xed\xa0\x80", 3); /* a UTF-8-encoded surrogate */
	assert_int_equal(jcs_dump(v, 100, &out, &len), SLUICE_EINVAL);
	json_decref(v);
	assert_int_equal(jcs_emit(NULL, 100, NULL, NULL), SLUICE_EINVAL);
}

int
test_jcs_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_appendix_b), cmocka_unit_test(test_not_finite), cmocka_unit_test(test_rfc_example),
		cmocka_unit_test(test_rfc_sorting), cmocka_unit_test(test_strings),   cmocka_unit_test(test_integers),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests_name("common/jcs", tests, NULL, NULL);
}
