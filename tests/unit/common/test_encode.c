/*
 * tests/unit/common/test_encode.c - the one of each primitive: hex, percent,
 * base64 (against OpenSSL's encoder for every length), the JSON string
 * escaper (every byte, every flag, cut-short output), the literal macro and
 * the clocks.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "common/b64.h"
#include "common/clock.h"
#include "common/hex.h"
#include "common/json.h"
#include "common/pct.h"
#include "common/sluice.h"

int test_encode_run(void);

static void
test_hex(void **state)
{
	const uint8_t in[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
	char out[2 * sizeof(in) + 1], two[3] = {0};

	(void)state;
	memset(out, 'x', sizeof(out));
	assert_ptr_equal(hex_encode(out, in, sizeof(in)), out);
	assert_string_equal(out, "00017f80abff");
	out[0] = 'x';
	hex_encode(out, in, 0);
	assert_string_equal(out, "");
	hex_pair(two, 0xab, 0);
	assert_string_equal(two, "ab");
	hex_pair(two, 0xab, 1);
	assert_string_equal(two, "AB");
	hex_pair(two, 0x0f, 1);
	assert_string_equal(two, "0F");
}

static int
keep_none(unsigned char c)
{
	(void)c;
	return 0;
}

static void
test_pct(void **state)
{
	static const char in[] = "a-Z.0_~ /?%\x80\xff+";
	char out[PCT_ENCODED_MAX(sizeof(in))];
	size_t n;
	unsigned c;

	(void)state;
	n = pct_encode(out, in, sizeof(in) - 1, pct_unreserved, PCT_UPPER);
	assert_int_equal(n, strlen("a-Z.0_~%20%2F%3F%25%80%FF%2B"));
	assert_memory_equal(out, "a-Z.0_~%20%2F%3F%25%80%FF%2B", n);
	n = pct_encode(out, in, sizeof(in) - 1, pct_unreserved, PCT_LOWER | PCT_SPACE_PLUS);
	assert_memory_equal(out, "a-Z.0_~+%2f%3f%25%80%ff%2b", n);
	/* the keep function wins over PCT_SPACE_PLUS; nothing kept: every byte is 3 */
	n = pct_encode(out, " ", 1, keep_none, PCT_SPACE_PLUS);
	assert_memory_equal(out, "+", n);
	n = pct_encode(out, "ab", 2, keep_none, PCT_UPPER);
	assert_memory_equal(out, "%61%62", n);
	assert_int_equal(pct_encode(out, "", 0, keep_none, 0), 0);
	/* pct_unreserved is RFC 3986's set exactly */
	for (c = 0; c < 256; c++) {
		int want = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		           (c != 0 && strchr("-._~", (int)c) != NULL);

		assert_int_equal(pct_unreserved((unsigned char)c) != 0, want);
	}
}

static void
test_b64(void **state)
{
	static const char *const vec[][2] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},
	                                     {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
	                                     {"foobar", "Zm9vYmFy"}};
	unsigned char in[256], want[B64_ENCODED_LEN(256) + 1];
	char out[B64_ENCODED_LEN(256) + 1];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {  /* RFC 4648 section 10 */
		n = b64_encode(out, vec[i][0], strlen(vec[i][0]));
		assert_int_equal(n, strlen(vec[i][1]));
		assert_memory_equal(out, vec[i][1], n);
	}
	for (i = 0; i < sizeof(in); i++)
		in[i] = (unsigned char)(i * 37 + 11);
	for (i = 0; i <= sizeof(in); i++) {
		int w = EVP_EncodeBlock(want, in, (int)i);

		memset(out, '#', sizeof(out));
		n = b64_encode(out, in, i);
		assert_int_equal(n, (size_t)w);
		assert_int_equal(n, B64_ENCODED_LEN(i));
		assert_memory_equal(out, want, n);
		assert_int_equal(out[n], '#');  /* no NUL, nothing past the length */
	}
}

static void
test_json_escape_flags(void **state)
{
	char out[64];
	size_t n;

	(void)state;
	n = json_escape(out, sizeof(out), "a\"b\\c\n\x01/<>&\x7f\xc3\xa9", 14, JSON_ESC_PLAIN);
	assert_memory_equal(out, "a\\\"b\\\\c\\u000a\\u0001/<>&\x7f\xc3\xa9", n);
	n = json_escape(out, sizeof(out), "\n\x7f\xc3", 3, JSON_ESC_ASCII);
	assert_memory_equal(out, "\\u000a\\u007f\\u00c3", n);
	n = json_escape(out, sizeof(out), "\b\f\n\r\t\x01", 6, JSON_ESC_SHORT);
	assert_memory_equal(out, "\\b\\f\\n\\r\\t\\u0001", n);
	n = json_escape(out, sizeof(out), "a/b", 3, JSON_ESC_SLASH);
	assert_memory_equal(out, "a\\/b", n);
	n = json_escape(out, sizeof(out), "<&>", 3, JSON_ESC_HTML);
	assert_memory_equal(out, "\\u003c\\u0026\\u003e", n);
	/* measuring, and output cut short: the length is still the whole escape's */
	assert_int_equal(json_escape(NULL, 0, "\"x\n", 3, JSON_ESC_PLAIN), 9);
	memset(out, '#', sizeof(out));
	assert_int_equal(json_escape(out, 4, "\"x\n", 3, JSON_ESC_PLAIN), 9);
	assert_int_equal(out[4], '#');
	assert_int_equal(json_escape(out, 0, "", 0, JSON_ESC_ASCII), 0);
}

/* Every byte alone and inside text, with every flag set: what a JSON parser reads back is the input. */
static void
test_json_escape_roundtrip(void **state)
{
	unsigned flags[] = {JSON_ESC_ASCII, JSON_ESC_ASCII | JSON_ESC_SHORT, JSON_ESC_ASCII | JSON_ESC_SLASH,
	                    JSON_ESC_ASCII | JSON_ESC_HTML,
	                    JSON_ESC_ASCII | JSON_ESC_SHORT | JSON_ESC_SLASH | JSON_ESC_HTML};
	char in[3], doc[2 + JSON_ESCAPED_MAX(3) + 1];
	size_t f, n;
	unsigned c;

	(void)state;
	for (f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		for (c = 1; c < 256; c++) {
			json_t *s;
			json_error_t e;

			in[0] = 'a';
			in[1] = (char)c;
			in[2] = 'z';
			n = json_escape(doc + 1, sizeof(doc) - 2, in, 3, flags[f]);
			assert_true(n <= JSON_ESCAPED_MAX(3));
			doc[0] = '"';
			doc[n + 1] = '"';
			s = json_loadb(doc, n + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
			if (s == NULL)
				fail_msg("flags %u byte %u: %s", flags[f], c, e.text);
			/* ASCII mode maps bytes >= 0x80 to U+0080..U+00FF (two UTF-8 bytes) */
			if (c < 0x80) {
				assert_int_equal(json_string_length(s), 3);
				assert_memory_equal(json_string_value(s), in, 3);
			} else {
				assert_int_equal(json_string_length(s), 4);
			}
			json_decref(s);
		}
	}
}

static void
test_jb_empty_array(void **state)
{
	char buf[64];
	struct jbuf jb;

	(void)state;
	jb_init(&jb, buf, sizeof(buf));
	jb_empty_array(&jb, "s");
	jb_int(&jb, "a", 1);
	jb_empty_array(&jb, "t");
	assert_int_equal(jb_finish(&jb, 0), (long)strlen("{\"s\":[],\"a\":1,\"t\":[]}"));
	assert_string_equal(buf, "{\"s\":[],\"a\":1,\"t\":[]}");
	jb_init(&jb, buf, 8);
	jb_empty_array(&jb, "secrets");  /* does not fit: the object is refused, never written without it */
	assert_int_equal(jb_finish(&jb, 0), -1);
}

static void
put2(char *dst, const char *s, size_t n)
{
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static void
test_lit(void **state)
{
	char b[32];

	(void)state;
	put2(b, SLUICE_LIT("Connection: close\r\n"));
	assert_string_equal(b, "Connection: close\r\n");
	put2(b, SLUICE_LIT(""));
	assert_string_equal(b, "");
	put2(b, SLUICE_LIT("a\0b"));  /* sizeof counts what strlen would not */
	assert_memory_equal(b, "a\0b", 4);
}

static void
test_clock(void **state)
{
	struct timespec a, b;
	uint64_t m1, m2, ns1, ns2, w;
	time_t t0, t1;

	(void)state;
	clock_mono(&a);
	m1 = clock_mono_ms();
	ns1 = clock_mono_ns();
	t0 = time(NULL);
	w = clock_wall_ms();
	t1 = time(NULL);
	m2 = clock_mono_ms();
	ns2 = clock_mono_ns();
	clock_mono(&b);
	assert_true(m2 >= m1);
	assert_true(ns2 >= ns1);
	assert_true(clock_mono_us() >= ns1 / 1000);
	assert_true(clock_mono_s() >= (uint64_t)a.tv_sec);
	assert_true(clock_ms_since(&a) >= 0);
	assert_true(clock_ts_diff(&a, &b) >= 0.0);
	/* the units agree: ms, us and ns read the same clock */
	assert_true(ns1 / 1000000u >= (uint64_t)a.tv_sec * 1000u);
	assert_true(w / 1000 >= (uint64_t)t0 && w / 1000 <= (uint64_t)t1);
	clock_wall(&a);
	assert_true((uint64_t)a.tv_sec >= (uint64_t)t0);
	b.tv_sec = a.tv_sec + 2;
	b.tv_nsec = a.tv_nsec;
	assert_true(clock_ts_diff(&a, &b) == 2.0);
}

int
test_encode_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hex),
		cmocka_unit_test(test_pct),
		cmocka_unit_test(test_b64),
		cmocka_unit_test(test_json_escape_flags),
		cmocka_unit_test(test_json_escape_roundtrip),
		cmocka_unit_test(test_jb_empty_array),
		cmocka_unit_test(test_lit),
		cmocka_unit_test(test_clock),
	};

	return cmocka_run_group_tests_name("common/encode", tests, NULL, NULL);
}
