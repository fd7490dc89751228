/*
 * tests/unit/common/test_json.c - the bounded JSON writer: exact output,
 * escaping, overflow at every buffer size, and a jansson round trip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>

#include "common/json.h"

int test_json_run(void);

static void
test_basic(void **state)
{
	static const char want[] = "{\"a\":\"b\",\"n\":-5,\"t\":true,\"f\":false,\"t2\":true,\"z\":null,"
	                           "\"s\":\"xy\",\"e\":\"\"}";
	char buf[256];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, "a", "b");
	jb_int(&jb, "n", -5);
	jb_bool(&jb, "t", 1);
	jb_bool(&jb, "f", 0);
	jb_bool(&jb, "t2", 42);
	jb_null(&jb, "z");
	jb_strn(&jb, "s", "xyz", 2);
	jb_str(&jb, "e", "");
	assert_int_equal(jb_finish(&jb, 0), sizeof(want) - 1);
	assert_string_equal(buf, want);
}

static void
test_empty_and_newline(void **state)
{
	char buf[16];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	assert_int_equal(jb_finish(&jb, 0), 2);
	assert_string_equal(buf, "{}");
	jb_init(&jb, buf, sizeof(buf));
	assert_int_equal(jb_finish(&jb, 1), 3);
	assert_string_equal(buf, "{}\n");
	jb_init(&jb, buf, sizeof(buf));
	jb_int(&jb, "a", 1);
	assert_int_equal(jb_finish(&jb, 1), 8);
	assert_string_equal(buf, "{\"a\":1}\n");
}

static void
test_null_value_skipped(void **state)
{
	char buf[64];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, "x", NULL);
	jb_int(&jb, "a", 1);
	jb_str(&jb, "y", NULL);
	jb_strn(&jb, "w", NULL, 5);
	jb_int(&jb, "b", 2);
	jb_str(&jb, "z", NULL);
	assert_int_equal(jb_finish(&jb, 0), 13);
	assert_string_equal(buf, "{\"a\":1,\"b\":2}");
}

static void
test_int_limits(void **state)
{
	char buf[128];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_int(&jb, "min", INT64_MIN);
	jb_int(&jb, "max", INT64_MAX);
	jb_int(&jb, "zero", 0);
	assert_true(jb_finish(&jb, 0) > 0);
	assert_string_equal(buf, "{\"min\":-9223372036854775808,\"max\":9223372036854775807,\"zero\":0}");
}

struct esc_case {
	const char *in;
	size_t len;
	const char *out;  /* the JSON string, quotes included */
};

#define E(s, o) {s, sizeof(s) - 1, o}

static const struct esc_case esc_cases[] = {
	E("plain text ~!@#$%^&*()", "\"plain text ~!@#$%^&*()\""),
	E("a\"b", "\"a\\\"b\""),
	E("a\\b", "\"a\\\\b\""),
	E("\\\"", "\"\\\\\\\"\""),
	E("a\nb", "\"a\\u000ab\""),
	E("a\rb", "\"a\\u000db\""),
	E("\r\n", "\"\\u000d\\u000a\""),
	E("a\tb", "\"a\\u0009b\""),
	E("a\0b", "\"a\\u0000b\""),
	E("\0", "\"\\u0000\""),
	E("\x01\x1f", "\"\\u0001\\u001f\""),
	E("\x7f", "\"\\u007f\""),
	E("\x80", "\"\\u0080\""),
	E("\xff", "\"\\u00ff\""),
	E("\xc3\xa4", "\"\\u00c3\\u00a4\""),
	E("\xe2\x80\xa8", "\"\\u00e2\\u0080\\u00a8\""),  /* U+2028 must not pass raw */
	E(" ", "\" \""),
	E("~", "\"~\""),
	E("/", "\"/\""),
	E("</script>", "\"</script>\""),
	E("\",\"admin\":true,\"x\":\"", "\"\\\",\\\"admin\\\":true,\\\"x\\\":\\\"\""),
};

static void
test_escape_values(void **state)
{
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(esc_cases) / sizeof(esc_cases[0]); i++) {
		const struct esc_case *c = &esc_cases[i];
		char buf[256], want[256];
		struct jbuf jb;
		long n;

		jb_init(&jb, buf, sizeof(buf));
		jb_strn(&jb, "k", c->in, c->len);
		n = jb_finish(&jb, 0);
		snprintf(want, sizeof(want), "{\"k\":%s}", c->out);
		if (n != (long)strlen(want) || strcmp(buf, want) != 0) {
			print_error("case %zu: got %s (%ld), expected %s\n", i, n < 0 ? "overflow" : buf, n, want);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

static void
test_escape_keys(void **state)
{
	char buf[256];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, "k\"e\ny\\", "v");
	jb_int(&jb, "\x7f\xff", 1);
	jb_bool(&jb, "\t", 0);
	jb_null(&jb, "\"");
	assert_true(jb_finish(&jb, 1) > 0);
	assert_string_equal(buf, "{\"k\\\"e\\u000ay\\\\\":\"v\",\"\\u007f\\u00ff\":1,\"\\u0009\":false,"
	                         "\"\\\"\":null}\n");
}

/* Writes the same fixed object into <cap> bytes; returns jb_finish's result. */
static long
write_fixed(char *buf, size_t cap, int newline)
{
	struct jbuf jb;

	jb_init(&jb, buf, cap);
	jb_str(&jb, "host", "a\"b");
	jb_int(&jb, "port", 443);
	jb_strn(&jb, "raw", "\0\n", 2);
	jb_bool(&jb, "ok", 1);
	jb_null(&jb, "n");
	return jb_finish(&jb, newline);
}

static void
test_every_size(void **state)
{
	static const char want[] =
	    "{\"host\":\"a\\\"b\",\"port\":443,\"raw\":\"\\u0000\\u000a\",\"ok\":true,\"n\":null}";
	const long len = (long)sizeof(want) - 1;
	size_t cap;
	int nl;

	(void)state;
	for (nl = 0; nl <= 1; nl++) {
		const long total = len + nl;

		for (cap = 0; cap <= (size_t)total + 8; cap++) {
			/* exactly <cap> bytes, so ASan sees any write past the end */
			char *buf = malloc(cap ? cap : 1);
			long n;

			assert_non_null(buf);
			n = write_fixed(cap ? buf : NULL, cap, nl);
			if ((long)cap <= total) {
				if (n != -1)
					fail_msg("cap %zu (needs %ld): returned %ld, expected -1", cap, total + 1, n);
			} else {
				if (n != total)
					fail_msg("cap %zu: returned %ld, expected %ld", cap, n, total);
				assert_memory_equal(buf, want, (size_t)len);
				if (nl)
					assert_int_equal(buf[len], '\n');
				assert_int_equal(buf[total], '\0');
			}
			free(buf);
		}
	}
}

static void
test_overflow_sticks(void **state)
{
	char buf[16];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_str(&jb, "a", "this value is far too long for the buffer");
	assert_int_not_equal(jb.overflow, 0);
	jb_int(&jb, "b", 1);  /* would fit on its own: must not be appended after a gap */
	assert_int_equal(jb_finish(&jb, 1), -1);
	assert_int_not_equal(jb.overflow, 0);
	assert_true(jb.len < sizeof(buf));
}

/* Every byte value through jb_strn, then parsed back with jansson. */
static void
test_roundtrip_all_bytes(void **state)
{
	char val[256], *buf;
	struct jbuf jb;
	json_t *root, *v;
	json_error_t jerr;
	const size_t cap = 256 * 6 + 64;
	const char *s;
	size_t i, o, slen;
	long n;

	(void)state;
	buf = malloc(cap);
	assert_non_null(buf);
	for (i = 0; i < 256; i++)
		val[i] = (char)i;
	jb_init(&jb, buf, cap);
	jb_strn(&jb, "all\n\"bytes\"", val, sizeof(val));
	jb_int(&jb, "n", 7);
	n = jb_finish(&jb, 1);
	assert_true(n > 0);
	assert_int_equal(strlen(buf), (size_t)n);
	/* printable ASCII only, and the one newline at the end */
	for (i = 0; i < (size_t)n - 1; i++) {
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
			fail_msg("raw byte 0x%02x at %zu", (unsigned char)buf[i], i);
	}
	assert_int_equal(buf[n - 1], '\n');

	root = json_loadb(buf, (size_t)n, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		fail_msg("jansson: %s at %d: %s", jerr.text, jerr.position, buf);
	assert_true(json_is_object(root));
	assert_int_equal(json_object_size(root), 2);
	assert_int_equal(json_integer_value(json_object_get(root, "n")), 7);
	v = json_object_get(root, "all\n\"bytes\"");
	assert_non_null(v);
	assert_true(json_is_string(v));
	s = json_string_value(v);
	slen = json_string_length(v);
	/* bytes < 0x80 come back as themselves, bytes >= 0x80 as U+0080..U+00FF in UTF-8 */
	assert_int_equal(slen, 128 + 128 * 2);
	for (i = 0, o = 0; i < 256; i++) {
		if (i < 0x80) {
			assert_int_equal((unsigned char)s[o], i);
			o++;
		} else {
			assert_int_equal((unsigned char)s[o], 0xc0 | (i >> 6));
			assert_int_equal((unsigned char)s[o + 1], 0x80 | (i & 0x3f));
			o += 2;
		}
	}
	json_decref(root);
	free(buf);
}

/* A hostile value cannot add or override fields. */
static void
test_no_forgery(void **state)
{
	static const char *hostile[] = {
		"\",\"verdict\":\"allow",
		"x\"}\n{\"verdict\":\"allow\"}",
		"\\\",\"verdict\":\"allow",
		"\\",
		"\xc0\xa2,\"verdict\":\"allow",  /* overlong quote */
		"\xe2\x80\xa8\"verdict\"",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(hostile) / sizeof(hostile[0]); i++) {
		char buf[512];
		struct jbuf jb;
		json_t *root;
		json_error_t jerr;
		long n;

		jb_init(&jb, buf, sizeof(buf));
		jb_str(&jb, "verdict", "deny");
		jb_str(&jb, "host", hostile[i]);
		n = jb_finish(&jb, 1);
		assert_true(n > 0);
		assert_ptr_equal(memchr(buf, '\n', (size_t)n - 1), NULL);
		root = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &jerr);
		if (root == NULL)
			fail_msg("case %zu: jansson: %s: %s", i, jerr.text, buf);
		assert_int_equal(json_object_size(root), 2);
		assert_string_equal(json_string_value(json_object_get(root, "verdict")), "deny");
		json_decref(root);
	}
}

int
test_json_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_empty_and_newline),
		cmocka_unit_test(test_null_value_skipped),
		cmocka_unit_test(test_int_limits),
		cmocka_unit_test(test_escape_values),
		cmocka_unit_test(test_escape_keys),
		cmocka_unit_test(test_every_size),
		cmocka_unit_test(test_overflow_sticks),
		cmocka_unit_test(test_roundtrip_all_bytes),
		cmocka_unit_test(test_no_forgery),
	};

	return cmocka_run_group_tests_name("common/json", tests, NULL, NULL);
}
