/*
 * test_detect_stream.c - the streaming decoded-view search (secrets/
 * detect_stream.c): each encoded form of a placeholder (percent, any mix and
 * case, partial, double; JSON \u escapes and short escapes, a surrogate pair
 * before it, JSON in a JSON string, percent then JSON and JSON then percent;
 * base64 and base64url at each alignment, percent-encoded base64)
 * is found whatever the split (every single cut, and byte by byte), with the
 * right id; the raw bytes of an encoded placeholder are never all released
 * before it is found (the held-back count covers what could still decode
 * into one); a case change and an escape cut off by the end are not found;
 * the stream agrees with ph_detect() on a whole buffer for these forms.
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
#define PH2 "sk-proj-Zz_9-Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn7Mm6Ll5Kk4Jj3Ii2Hh1Gg0Ff"

static struct ph_stream *
mk(void)
{
	struct ph_stream *s = ph_stream_new();

	assert_int_equal(ph_stream_add(s, PH, strlen(PH), 7), 0);
	assert_int_equal(ph_stream_add(s, PH2, strlen(PH2), 9), 0);
	return s;
}

/*
 * Feeds <t>/<n> cut at <cut> (n: whole), then ends: the id found or -1.
 * Checks that before the hit, the decided bytes never reach past <start>.
 */
static long
run(const char *t, size_t n, size_t cut, size_t start)
{
	struct ph_stream *s = mk();
	size_t id = 0, fed = 0, pos[3] = {0, cut < n ? cut : n, n}, k;
	long ret = -1;
	int r;

	for (k = 0; k < 2 && ret < 0; k++) {
		r = ph_stream_feed(s, (const uint8_t *)t + pos[k], pos[k + 1] - pos[k], &id);
		assert_true(r >= 0);
		fed = pos[k + 1];
		if (r == 1)
			ret = (long)id;
		else if (fed - ph_stream_held(s) > start) {
			print_error("released %zu > %zu (cut %zu of \"%.*s\")\n", fed - ph_stream_held(s), start, cut,
			            (int)n, t);
			fail();
		}
	}
	if (ret < 0 && (r = ph_stream_end(s, &id)) == 1)
		ret = (long)id;
	assert_true(r >= 0);
	ph_stream_free(s);
	return ret;
}

/* Byte by byte, with the release check at every byte. */
static long
run_bytes(const char *t, size_t n, size_t start)
{
	struct ph_stream *s = mk();
	size_t id = 0, i;
	long ret = -1;

	for (i = 0; i < n && ret < 0; i++) {
		if (ph_stream_feed(s, (const uint8_t *)t + i, 1, &id) == 1)
			ret = (long)id;
		else
			assert_true(i + 1 - ph_stream_held(s) <= start);
	}
	if (ret < 0 && ph_stream_end(s, &id) == 1)
		ret = (long)id;
	ph_stream_free(s);
	return ret;
}

/*
 * <enc> framed by text: found with <want> at every cut and byte by byte,
 * agreeing with ph_detect(); before the hit no more than <lead> bytes of
 * <enc> were released.
 */
static void
check_lead(const char *enc, long want, size_t lead)
{
	static const char pre[] = "{\"a\": \"x%zz \\q ", post[] = " y\"}";
	char t[4096];
	size_t n, cut, start = sizeof(pre) - 1 + lead;
	const char *ph[2] = {PH, PH2};
	size_t pl[2] = {strlen(PH), strlen(PH2)};
	unsigned char f[2] = {0, 0};

	n = (size_t)snprintf(t, sizeof(t), "%s%s%s", pre, enc, post);
	assert_true(n < sizeof(t));
	for (cut = 0; cut <= n; cut++)
		if (run(t, n, cut, want >= 0 ? start : n) != want) {
			print_error("cut %zu of \"%s\"\n", cut, t);
			fail();
		}
	assert_int_equal(run_bytes(t, n, want >= 0 ? start : n), want);
	assert_true(ph_detect((const uint8_t *)t, n, ph, pl, 2, f) >= 0);
	if (want == 7)
		assert_true(f[0]);
	if (want == 9)
		assert_true(f[1]);
}

static void
check(const char *enc, long want)
{
	check_lead(enc, want, 0);
}

/* Percent-encodes every <every>th byte of <p>: the high digit in <lower> case, the low one alternating. */
static char *
pct(const char *p, unsigned every, int lower, char *out)
{
	static const char up[] = "0123456789ABCDEF", lo[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; p[i]; i++) {
		if (i % every == 0) {
			out[o++] = '%';
			out[o++] = (lower ? lo : up)[(unsigned char)p[i] >> 4];
			out[o++] = (i % 2 ? up : lo)[p[i] & 15];
		} else {
			out[o++] = p[i];
		}
	}
	out[o] = '\0';
	return out;
}

static void
test_literal(void **st)
{
	(void)st;
	check(PH, 7);
	check(PH2, 9);
	check("sluice_ph_ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", -1);  /* one letter's case */
	check("sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678", -1);   /* one byte short */
}

static void
test_percent(void **st)
{
	char buf[1024];
	unsigned every;

	(void)st;
	for (every = 1; every <= 7; every++) {
		check(pct(PH, every, 0, buf), 7);  /* mixed hex case within each escape */
		check(pct(PH, every, 1, buf), 7);
		check(pct(PH2, every, 0, buf), 9);
	}
	check("%73luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678%39", 7);   /* first and last only */
	check("%2573luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678%2539", 7); /* double: %25 is '%' */
	check("%25%37%33luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7); /* double, every byte of the escape */
	check_lead("%%73luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7, 1); /* a stray '%' before it */
	check("%7sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678", -1);      /* a bad escape is not a byte */
	check("sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678%3", -1);      /* an escape cut off by the end */
}

static void
test_json(void **st)
{
	(void)st;
	check("\\u0073luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7);
	check("\\u0073\\u006C\\u0075\\u0069\\u0063\\u0065_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678\\u0039", 7);
	check_lead("\\ud83d\\ude00sluice\\u005fph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7, 12); /* a pair before */
	check_lead("\\ud83d\\u0073luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7, 6); /* a lone high surrogate */
	check("sluice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz012345678\\/9", -1);              /* "\/" is '/', not '9' */
	check("sk-proj-Zz\\/9-Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp9Oo8Nn7Mm6Ll5Kk4Jj3Ii2Hh1Gg0Ff", -1);
	check("\\\\u0073luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7);  /* JSON in a JSON string: unescaped twice */
	check("%5Cu0073luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7);     /* percent, then JSON */
	check("\\u002573luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 7);     /* JSON, then percent: "%73" */
}

static void
test_base64(void **st)
{
	uint8_t raw[256], enc[512];
	char buf[1024];
	size_t pre, n, k;
	int len;

	(void)st;
	for (pre = 0; pre < 3; pre++) {
		/* the characters made of the bytes before the placeholder only may go */
		n = (size_t)snprintf((char *)raw, sizeof(raw), "%.*sBearer %s:x", (int)pre, "ab", PH);
		EVP_EncodeBlock(enc, raw, (int)n);
		check_lead((const char *)enc, 7, (4 * (pre + 7) + 2) / 3);
		n = (size_t)snprintf((char *)raw, sizeof(raw), "%.*s%s", (int)pre, "\xfb\xff", PH2);
		len = EVP_EncodeBlock(enc, raw, (int)n);
		for (k = 0; k < (size_t)len; k++)  /* base64url */
			enc[k] = enc[k] == '+' ? '-' : enc[k] == '/' ? '_' : enc[k];
		check_lead((const char *)enc, 9, (4 * pre + 2) / 3);
		/* a percent-encoded base64 form ('=' and '+' written as %3D and %2B) */
		n = (size_t)snprintf((char *)raw, sizeof(raw), "%.*s%s", (int)pre, "\xfb\xff", PH);
		len = EVP_EncodeBlock(enc, raw, (int)n);
		for (k = 0, n = 0; k < (size_t)len; k++)
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, enc[k] == '+' || enc[k] == '/' ? "%%%02X" : "%c",
			                      enc[k]);
		check_lead(buf, 7, strlen(buf));
	}
}

static void
test_end_and_restart(void **st)
{
	struct ph_stream *s = mk();
	size_t id = 0;

	(void)st;
	/* "%7" then the end: passes as it is; the next stream starts clean */
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"%7", 2, &id), 0);
	assert_int_equal(ph_stream_held(s), 2);
	assert_int_equal(ph_stream_end(s, &id), 0);
	assert_int_equal(ph_stream_held(s), 0);
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"3luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 46, &id), 0);
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"\\u00", 4, &id), 0);
	assert_int_equal(ph_stream_held(s), 4);
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"73", 2, &id), 0);
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"luice_ph_Ab3dEfGh1jKlMn0pQrStUvWxYz0123456789", 45, &id), 1);
	assert_int_equal(id, 7);
	assert_int_equal(ph_stream_add(s, "late_placeholder", 16, 1), SLUICE_EINVAL);  /* needles fixed at the first feed */
	ph_stream_free(s);
	s = ph_stream_new();
	assert_int_equal(ph_stream_add(s, "", 0, 1), SLUICE_EINVAL);
	/* a placeholder shorter than SCRUB_FORM_MIN is still searched (only its encoded forms have that floor) */
	assert_int_equal(ph_stream_add(s, "tok_XY", 6, 3), 0);
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"a tok_%58Y", 10, &id), 1);
	assert_int_equal(id, 3);
	ph_stream_free(s);
	s = ph_stream_new();
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)PH, strlen(PH), &id), 0);  /* no needles: nothing held */
	assert_int_equal(ph_stream_held(s), 0);
	ph_stream_free(s);
}

/* A long stream of text without escapes releases all but under a needle's length. */
static void
test_release(void **st)
{
	struct ph_stream *s = mk();
	uint8_t buf[5000];
	size_t id = 0;

	(void)st;
	memset(buf, 'q', sizeof(buf));
	memcpy(buf + sizeof(buf) - 3, "%2", 2);
	buf[sizeof(buf) - 1] = '5';
	assert_int_equal(ph_stream_feed(s, buf, sizeof(buf), &id), 0);
	assert_int_equal(ph_stream_held(s), 3);  /* "%25" may begin "%2573" */
	assert_int_equal(ph_stream_feed(s, (const uint8_t *)"x", 1, &id), 0);
	assert_true(ph_stream_held(s) <= 1);  /* 'x' may begin a base64 form */
	ph_stream_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal), cmocka_unit_test(test_percent),        cmocka_unit_test(test_json),
		cmocka_unit_test(test_base64),  cmocka_unit_test(test_end_and_restart), cmocka_unit_test(test_release),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
