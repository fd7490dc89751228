/*
 * test_detect.c - the placeholder search in decoded views (secrets/detect.c):
 * raw; percent-encoding of any subset of the bytes with either case of hex,
 * double encoding; JSON \u escapes (and a surrogate pair around it); base64
 * and base64url at every alignment, padded or not, inside longer text;
 * base64 of a percent-encoded placeholder and the reverse; case changes are
 * not found; several placeholders at once; the bound on a place.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include "common/sluice.h"
#include "secrets/detect.h"

#define PH "sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"
#define PH2 "xoxb-fake-placeholder-of-a-slack-bot-AbCdEfGhIjKlMnOpQrStUvWx"   /* shaped like one, not a token */

static int
found1(const char *s)
{
	const char *ph = PH;
	size_t l = strlen(PH);
	unsigned char f = 0;

	assert_true(ph_detect((const uint8_t *)s, strlen(s), &ph, &l, 1, &f) >= 0);
	return f;
}

static void
test_raw_and_case(void **st)
{
	(void)st;
	assert_true(found1(PH));
	assert_true(found1("Bearer " PH " x"));
	assert_false(found1("sluice_ph_ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"));  /* one letter's case */
	assert_false(found1("SLUICE_PH_AB3DEFGH1JKLMN0PQRSTUVWXYZ0123456789"));
	assert_false(found1(""));
	assert_false(found1(PH + 1));
}

static void
test_percent(void **st)
{
	char buf[512], *o;
	const char *p;
	unsigned mask;

	(void)st;
	/* every subset pattern of the first 8 bytes, hex case alternating */
	for (mask = 1; mask < 256; mask++) {
		o = buf;
		for (p = PH; *p; p++) {
			size_t k = (size_t)(p - PH);
			if (k < 8 && (mask & (1u << k)))
				o += snprintf(o, 8, (k & 1) ? "%%%02X" : "%%%02x", (unsigned char)*p);
			else
				*o++ = *p;
		}
		*o = '\0';
		assert_true(found1(buf));
	}
	assert_true(found1("/x/%2573luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"));  /* %25 then %73 */
	assert_true(found1("%7"  "3luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789%"));      /* a dangling % after */
	assert_false(found1("%ZZluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"));
}

static void
test_json(void **st)
{
	(void)st;
	assert_true(found1("{\"a\":\"\\u0073luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789\"}"));
	assert_true(found1("\\u0073\\u006C\\u0075ice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"));
	assert_true(found1("\\ud83d\\ude00sluice\\u005fph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789"));
	assert_true(found1("sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz01234567\\u0038\\u0039"));
}

static void
b64(const char *pre, const char *in, int url, int pad, char *out)
{
	char tmp[512];
	size_t n = (size_t)snprintf(tmp, sizeof(tmp), "%s%s", pre, in), k;

	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)tmp, (int)n);
	for (k = 0; out[k]; k++) {
		if (url && out[k] == '+')
			out[k] = '-';
		if (url && out[k] == '/')
			out[k] = '_';
	}
	while (!pad && k > 0 && out[k - 1] == '=')
		out[--k] = '\0';
}

static void
test_base64(void **st)
{
	static const char *const pre[] = {"", "a", "ab", "abc", "{\"user\":\"x\",\"t\":\""};
	char enc[1024], text[1200];
	size_t i;
	int url, pad;

	(void)st;
	for (i = 0; i < sizeof(pre) / sizeof(pre[0]); i++)
		for (url = 0; url < 2; url++)
			for (pad = 0; pad < 2; pad++) {
				b64(pre[i], PH "\"}", url, pad, enc);
				snprintf(text, sizeof(text), "token=%s&x=1", enc);
				assert_true(found1(text));
			}
	/* base64 of a percent-encoded placeholder, and percent-encoding of its base64 */
	b64("", "%73luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 0, 1, enc);
	assert_true(found1(enc));
	b64("", PH, 0, 1, enc);
	snprintf(text, sizeof(text), "%%%02X%s", (unsigned char)enc[0], enc + 1);
	assert_true(found1(text));
	/* base64 of a case-changed placeholder is not one */
	b64("", "Sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 0, 1, enc);
	assert_false(found1(enc));
}

static void
test_many(void **st)
{
	const char *ph[3] = {PH, PH2, "never-there-placeholder"};
	size_t l[3] = {strlen(PH), strlen(PH2), strlen(ph[2])};
	unsigned char f[3] = {0, 0, 0};
	char enc[512], text[1024];

	(void)st;
	b64("x", PH2, 1, 0, enc);
	snprintf(text, sizeof(text), "a %s b %%73luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", enc);
	assert_int_equal(ph_detect((const uint8_t *)text, strlen(text), ph, l, 3, f), 2);
	assert_true(f[0] && f[1] && !f[2]);
	assert_int_equal(ph_detect((const uint8_t *)"x", PH_DETECT_PLACE_MAX + 1, ph, l, 3, f), SLUICE_ETOOBIG);
}

static void
test_decoders(void **st)
{
	uint8_t out[64];

	(void)st;
	assert_int_equal(ph_decode_percent((const uint8_t *)"abc", 3, out), -1);
	assert_int_equal(ph_decode_percent((const uint8_t *)"a%2541", 6, out), 2);  /* %25 -> %, then %41 -> A */
	assert_memory_equal(out, "aA", 2);
	assert_int_equal(ph_decode_json((const uint8_t *)"plain", 5, out), -1);
	assert_int_equal(ph_decode_json((const uint8_t *)"\\n\\u00e9", 8, out), 3);
	assert_memory_equal(out, "\n\xc3\xa9", 3);
	assert_int_equal(ph_decode_base64((const uint8_t *)"!!", 2, out), -1);
	assert_int_equal(ph_decode_base64((const uint8_t *)"aGVsbG8", 7, out), 5);
	assert_memory_equal(out, "hello", 5);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_and_case), cmocka_unit_test(test_percent), cmocka_unit_test(test_json),
		cmocka_unit_test(test_base64),       cmocka_unit_test(test_many),    cmocka_unit_test(test_decoders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
