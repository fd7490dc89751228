/*
 * test_scrub.c - response scrubbing and the gzip/deflate decoder.
 *
 * Scrubbing: every echo form of a value (literal, base64 at the three
 * alignments, percent, JSON) becomes the same form of its placeholder, in one
 * shot and when the value is split at every offset across two feeds;
 * matching is leftmost-longest, replaced text is not rescanned, near misses
 * are left alone, the tail is held back only while it could begin a value,
 * and the hit mask names the secrets found.  Decoding: gzip, zlib and raw
 * deflate, corrupt input, trailing garbage, and a 10 MiB bomb that streams in
 * UNZIP_OUT_MAX steps.  The values here are fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include <openssl/evp.h>
#include <zlib.h>
#include "common/sluice.h"
#include "secrets/scrub.h"

/* A token and its placeholder: same length, same first byte (as with provider-shaped placeholders). */
#define VALUE "tst_FakeT0kenV4lue0123456789abcdefghijkl"
#define PH "tst_PlaceH0lderXXXXXXXXXXXXXXXXXXXXXXXXX"
#define VALUE2 "sk-other/secret+with&reserved\"chars\\ok"
#define PH2 "sk-placeholder-2"

#define U8(s) ((const uint8_t *)(s))

/* The contents of <b> as a NUL-terminated heap string; drains <b>. */
static char *
drain(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	assert_non_null(s);
	assert_int_equal(evbuffer_remove(b, s, n), (int)n);
	s[n] = '\0';
	return s;
}

static struct scrub_set *
two_secrets(void)
{
	struct scrub_set *s = scrub_set_new();

	assert_int_equal(scrub_set_add_secret(s, U8(VALUE), strlen(VALUE), PH, 3), 0);
	assert_int_equal(scrub_set_add_secret(s, U8(VALUE2), strlen(VALUE2), PH2, 17), 0);
	return s;
}

/* One-shot scrub of <in>; returns a heap string. */
static char *
oneshot(const struct scrub_set *s, const char *in, size_t len, uint32_t *hits)
{
	struct evbuffer *out = evbuffer_new();
	struct scrub_hits h;
	char *r;

	memset(&h, 0, sizeof(h));
	assert_int_equal(scrub_buffer(s, U8(in), len, out, &h), 0);
	*hits = (uint32_t)h.w[0];
	assert_true(h.w[0] >> 32 == 0);
	r = drain(out);
	evbuffer_free(out);
	return r;
}

/* One-shot scrub of <in> must give exactly <want> and <want_hits>. */
static void
expect(const struct scrub_set *s, const char *in, const char *want, uint32_t want_hits)
{
	uint32_t hits;
	char *r = oneshot(s, in, strlen(in), &hits);

	assert_string_equal(r, want);
	assert_int_equal(hits, want_hits);
	free(r);
}

/* Streamed scrub of <in> fed in pieces of the sizes in <cuts> (then the rest). */
static char *
streamed(const struct scrub_set *s, const char *in, size_t len, const size_t *cuts, size_t ncuts, uint32_t *hits)
{
	struct scrub_stream *st = scrub_stream_new(s);
	struct evbuffer *out = evbuffer_new();
	size_t off = 0, i;
	struct scrub_hits h;
	char *r;

	memset(&h, 0, sizeof(h));
	for (i = 0; i < ncuts && off < len; i++) {
		size_t n = cuts[i] < len - off ? cuts[i] : len - off;

		assert_int_equal(scrub_stream_feed(st, U8(in + off), n, out, &h), 0);
		assert_true(scrub_stream_held(st) < scrub_set_max_len(s));
		off += n;
	}
	assert_int_equal(scrub_stream_feed(st, U8(in + off), len - off, out, &h), 0);
	assert_int_equal(scrub_stream_end(st, out, &h), 0);
	*hits = (uint32_t)h.w[0];
	assert_int_equal(scrub_stream_held(st), 0);
	r = drain(out);
	evbuffer_free(out);
	scrub_stream_free(st);
	return r;
}

static char *
b64(const char *in, size_t len)
{
	char *out = malloc(4 * (len / 3 + 1) + 1);

	assert_non_null(out);
	EVP_EncodeBlock((unsigned char *)out, U8(in), (int)len);
	return out;
}

/* Decodes padded base64 <in>; returns a heap string and its length in *len. */
static char *
unb64(const char *in, size_t *len)
{
	size_t n = strlen(in);
	char *out = malloc(n + 1);
	int r;

	assert_non_null(out);
	assert_int_equal(n % 4, 0);
	r = EVP_DecodeBlock((unsigned char *)out, U8(in), (int)n);
	assert_true(r >= 0);
	while (n > 0 && in[n - 1] == '=') {
		r--;
		n--;
	}
	out[r] = '\0';
	*len = (size_t)r;
	return out;
}

/* The characters of base64(<a> zero bytes + <v>) that depend only on <v>. */
static char *
b64_run(const char *v, unsigned a)
{
	size_t n = strlen(v), first = (4 * a + 2) / 3, last = 4 * (a + n) / 3;
	char *tmp = calloc(1, n + 3), *enc;

	assert_non_null(tmp);
	memcpy(tmp + a, v, n);
	enc = b64(tmp, a + n);
	memmove(enc, enc + first, last - first);
	enc[last - first] = '\0';
	free(tmp);
	return enc;
}

static void
assert_no_runs(const char *out, const char *v)
{
	unsigned a;

	assert_null(strstr(out, v));
	for (a = 0; a < 3; a++) {
		char *run = b64_run(v, a);

		assert_null(strstr(out, run));
		free(run);
	}
}

static void
test_literal(void **state)
{
	struct scrub_set *s = two_secrets();
	const char *in = "{\"token\":\"" VALUE "\",\"again\":\"" VALUE "\"}";

	(void)state;
	expect(s, in, "{\"token\":\"" PH "\",\"again\":\"" PH "\"}", 1u << 3);
	scrub_set_free(s);
}

/* The percent-encodings other encoders write (issue 17): each one of VALUE3 is scrubbed to the same form of PH3. */
#define VALUE3 "a b/c!d'e(f)g*h~i_j.k-l+m=n"
#define PH3 "sluice_ph_percent_forms_0123"
static void
test_percent_forms(void **state)
{
	static const char *forms[] = {
		"a%20b%2Fc%21d%27e%28f%29g%2Ah~i_j.k-l%2Bm%3Dn", /* RFC 3986, curl */
		"a%20b%2fc%21d%27e%28f%29g%2ah~i_j.k-l%2bm%3dn", /* the same, lower-case hex */
		"a%20b%2Fc!d'e(f)g*h~i_j.k-l%2Bm%3Dn",           /* encodeURIComponent */
		"a%20b/c%21d%27e%28f%29g%2Ah~i_j.k-l%2Bm%3Dn",   /* Python quote (keeps '/') */
		"a%20b/c%21d%27e%28f%29g%2ah~i_j.k-l%2bm%3dn",
		"a+b%2Fc%21d%27e%28f%29g%2Ah~i_j.k-l%2Bm%3Dn",   /* quote_plus, Go QueryEscape */
		"a+b%2Fc%21d%27e%28f%29g*h%7Ei_j.k-l%2Bm%3Dn",   /* WHATWG forms, URLSearchParams */
		"a+b%2Fc%21d%27e%28f%29g%2Ah%7Ei_j.k-l%2Bm%3Dn", /* PHP urlencode */
		"a+b%2fc%21d%27e%28f%29g%2ah%7ei_j.k-l%2bm%3dn",
	};
	struct scrub_set *s = scrub_set_new();
	uint32_t hits;
	size_t i;

	(void)state;
	assert_int_equal(scrub_set_add_secret(s, U8(VALUE3), strlen(VALUE3), PH3, 5), 0);
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		char in[256], *r;

		snprintf(in, sizeof(in), "q=%s&x=1", forms[i]);
		r = oneshot(s, in, strlen(in), &hits);
		assert_int_equal(hits, 1u << 5);
		assert_string_equal(r, "q=" PH3 "&x=1");  /* PH3 holds only unreserved bytes: every form of it is PH3 */
		free(r);
	}
	scrub_set_free(s);
}

/* A host with 150 secrets (one per sandbox): every value scrubbed with its own tag, past the old 32. */
static void
test_many_secrets(void **state)
{
	enum { N = 150 };
	static char vals[N][48], phs[N][48];
	struct scrub_secret v[N];
	struct scrub_set *s = scrub_set_new(), *d;
	struct scrub_hits h;
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	size_t i, n;
	char *r;

	(void)state;
	for (i = 0; i < N; i++) {
		snprintf(vals[i], sizeof(vals[i]), "ghp_Sbx%03zuTokenValue%08zx", i, i * 2654435761u);
		snprintf(phs[i], sizeof(phs[i]), "ghp_PLACEHOLDER_%03zu_xxxxxxxxxxx", i);
		v[i] = (struct scrub_secret){U8(vals[i]), strlen(vals[i]), phs[i], (unsigned)(i * 6)};
	}
	for (i = 0; i < N; i++)
		evbuffer_add_printf(in, "{\"k\":\"%s\"} ", vals[N - 1 - i]);
	assert_int_equal(scrub_set_add_secrets(s, v, N), 0);
	d = scrub_set_dup(s);
	assert_int_equal(scrub_set_count(d), scrub_set_count(s));
	for (int pass = 0; pass < 2; pass++) {
		n = evbuffer_get_length(in);
		memset(&h, 0, sizeof(h));
		assert_int_equal(scrub_buffer(pass ? d : s, evbuffer_pullup(in, -1), n, out, &h), 0);
		r = drain(out);
		for (i = 0; i < N; i++) {
			assert_null(strstr(r, vals[i]));
			assert_non_null(strstr(r, phs[i]));
			assert_true(scrub_hits_has(&h, (unsigned)(i * 6)));
			assert_false(scrub_hits_has(&h, (unsigned)(i * 6 + 1)));
		}
		assert_int_equal(scrub_hits_first(&h), 0);
		free(r);
	}
	/* all or nothing: one bad secret leaves the set as it was */
	v[7].tag = SCRUB_TAGS;
	n = scrub_set_count(d);
	assert_int_equal(scrub_set_add_secrets(d, v, N), SLUICE_EINVAL);
	assert_int_equal(scrub_set_count(d), n);
	scrub_set_free(d);
	scrub_set_free(s);
	evbuffer_free(in);
	evbuffer_free(out);
}

/* base64 of prefix + VALUE (+ suffix) at each alignment: no run survives, and the decoding round trips. */
static void
test_base64_alignments(void **state)
{
	static const char *prefixes[] = {"x-access-token:", "", "a", "ab", "Authorization: Bearer "};
	static const char *suffixes[] = {"", "\n", "zz", "and some more text after it"};
	struct scrub_set *s = two_secrets();
	size_t i, j, dlen;
	uint32_t hits;
	char plain[256], want[256];

	(void)state;
	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		for (j = 0; j < sizeof(suffixes) / sizeof(suffixes[0]); j++) {
			char *enc, *r, *dec;

			snprintf(plain, sizeof(plain), "%s%s%s", prefixes[i], VALUE, suffixes[j]);
			snprintf(want, sizeof(want), "%s%s%s", prefixes[i], PH, suffixes[j]);
			enc = b64(plain, strlen(plain));
			r = oneshot(s, enc, strlen(enc), &hits);
			assert_int_equal(hits, 1u << 3);
			assert_no_runs(r, VALUE);
			dec = unb64(r, &dlen);
			assert_int_equal(dlen, strlen(want));
			/* Only the bits VALUE shares a character with on either side may stay. */
			if (j == 0 || (strlen(prefixes[i]) + strlen(VALUE)) % 3 == 0)
				assert_string_equal(dec, want);
			else
				assert_memory_equal(dec, want, strlen(want) - strlen(suffixes[j]) - 1);
			assert_null(strstr(dec, VALUE));
			free(enc);
			free(r);
			free(dec);
		}
	}
	scrub_set_free(s);
}

/* A value and placeholder of other lengths: still no run, and the terminal form decodes exactly. */
static void
test_base64_lengths(void **state)
{
	struct scrub_set *s = scrub_set_new();
	const char *v = "Zv9-longer-secret-value-77";
	const char *ph = "Zshort_ph_1";
	unsigned a;
	uint32_t hits;

	(void)state;
	assert_int_equal(scrub_set_add_secret(s, U8(v), strlen(v), ph, 0), 0);
	for (a = 0; a < 3; a++) {
		char plain[64], want[64], *enc, *r, *dec;
		size_t dlen;

		snprintf(plain, sizeof(plain), "%.*s%s", (int)a, "xy", v);
		snprintf(want, sizeof(want), "%.*s%s", (int)a, "xy", ph);
		enc = b64(plain, strlen(plain));
		r = oneshot(s, enc, strlen(enc), &hits);
		assert_int_equal(hits, 1);
		assert_no_runs(r, v);
		dec = unb64(r, &dlen);
		assert_string_equal(dec, want);  /* same first byte: the shared character matches too */
		free(enc);
		free(r);
		free(dec);
	}
	scrub_set_free(s);
}

static void
test_basic(void **state)
{
	struct scrub_set *s = scrub_set_new();
	const char *cred = "x-access-token:" VALUE, *cph = "x-access-token:" PH;
	char *enc = b64(cred, strlen(cred)), *encph = b64(cph, strlen(cph)), in[256], want[256], *r;
	uint32_t hits;

	(void)state;
	assert_int_equal(scrub_set_add_basic(s, U8(cred), strlen(cred), U8(cph), strlen(cph), 9), 0);
	snprintf(in, sizeof(in), "Authorization: Basic %s\r\n", enc);
	snprintf(want, sizeof(want), "Authorization: Basic %s\r\n", encph);
	r = oneshot(s, in, strlen(in), &hits);
	assert_string_equal(r, want);
	assert_int_equal(hits, 1u << 9);
	assert_int_equal(scrub_set_add_basic(s, U8(""), 0, U8(cph), strlen(cph), 9), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add_basic(s, U8(cred), strlen(cred), U8(cph), strlen(cph), SCRUB_TAGS), SLUICE_EINVAL);
	free(r);
	free(enc);
	free(encph);
	scrub_set_free(s);
}

static void
test_percent_json(void **state)
{
	struct scrub_set *s = two_secrets();
	/* VALUE2 = sk-other/secret+with&reserved"chars\ok */
	const char *in = "q=sk-other%2Fsecret%2Bwith%26reserved%22chars%5Cok"
	                 "&l=sk-other%2fsecret%2bwith%26reserved%22chars%5cok"
	                 " j=\"sk-other/secret+with&reserved\\\"chars\\\\ok\""
	                 " p=\"sk-other\\/secret+with&reserved\\\"chars\\\\ok\""
	                 " g=\"sk-other/secret+with\\u0026reserved\\\"chars\\\\ok\""
	                 " raw=" VALUE2;
	const char *want = "q=sk-placeholder-2&l=sk-placeholder-2 j=\"sk-placeholder-2\" p=\"sk-placeholder-2\""
	                   " g=\"sk-placeholder-2\" raw=sk-placeholder-2";

	(void)state;
	expect(s, in, want, 1u << 17);
	scrub_set_free(s);
}

/* A placeholder whose forms differ too: percent and JSON forms map to the same form of it. */
static void
test_forms_of_placeholder(void **state)
{
	struct scrub_set *s = scrub_set_new();
	const char *in = "a%3Ab%2Fc%3Dd-value and \"a:b\\/c=d-value\"";

	(void)state;
	assert_int_equal(scrub_set_add_secret(s, U8("a:b/c=d-value"), 13, "ph/x=y:z", 1), 0);
	expect(s, in, "ph%2Fx%3Dy%3Az and \"ph\\/x=y:z\"", 2);
	scrub_set_free(s);
}

/* Every form of both values in one body, split at every offset across two feeds. */
static void
test_split_everywhere(void **state)
{
	struct scrub_set *s = two_secrets();
	char body[2048], *enc1, *enc2, *enc3, *want;
	size_t len, cut;
	uint32_t hits, whits;

	(void)state;
	enc1 = b64("x-access-token:" VALUE, strlen("x-access-token:" VALUE));
	enc2 = b64("a" VALUE "bc", strlen("a" VALUE "bc"));
	enc3 = b64("ab" VALUE2, strlen("ab" VALUE2));
	len = (size_t)snprintf(body, sizeof(body),
	                       "HTTP echo " VALUE " %s %s %s sk-other%%2Fsecret%%2Bwith%%26reserved%%22chars%%5Cok "
	                       "\"sk-other\\/secret+with&reserved\\\"chars\\\\ok\" " VALUE VALUE " end",
	                       enc1, enc2, enc3);
	want = oneshot(s, body, len, &whits);
	assert_int_equal(whits, (1u << 3) | (1u << 17));
	assert_no_runs(want, VALUE);
	assert_null(strstr(want, "sk-other"));
	for (cut = 0; cut <= len; cut++) {
		char *r = streamed(s, body, len, &cut, 1, &hits);

		assert_string_equal(r, want);
		assert_int_equal(hits, whits);
		free(r);
	}
	{
		/* And one byte at a time. */
		size_t ones[2048], i;
		char *r;

		for (i = 0; i < len; i++)
			ones[i] = 1;
		r = streamed(s, body, len, ones, len, &hits);
		assert_string_equal(r, want);
		free(r);
	}
	free(enc1);
	free(enc2);
	free(enc3);
	free(want);
	scrub_set_free(s);
}

/* Each value split at each of its offsets, right at the end of the first feed: nothing partial comes out. */
static void
test_split_never_partial(void **state)
{
	struct scrub_set *s = two_secrets();
	struct scrub_stream *st = scrub_stream_new(s);
	struct evbuffer *out = evbuffer_new();
	size_t k, vlen = strlen(VALUE);
	struct scrub_hits hits = {{0}};

	(void)state;
	for (k = 1; k < vlen; k++) {
		char *r;

		assert_int_equal(scrub_stream_feed(st, U8("<" VALUE), 1 + k, out, &hits), 0);
		r = drain(out);
		assert_string_equal(r, "<");  /* the value's first k bytes are held, not sent */
		assert_int_equal(scrub_stream_held(st), k);
		free(r);
		assert_int_equal(scrub_stream_feed(st, U8(VALUE + k), vlen - k, out, &hits), 0);
		r = drain(out);
		assert_string_equal(r, PH);
		free(r);
	}
	assert_int_equal(hits.w[0], 1u << 3);
	evbuffer_free(out);
	scrub_stream_free(st);
	scrub_set_free(s);
}

static void
test_overlap(void **state)
{
	struct scrub_set *s = scrub_set_new();

	(void)state;
	assert_int_equal(scrub_set_add(s, U8("abcdef"), 6, U8("1"), 1, 1), 0);
	assert_int_equal(scrub_set_add(s, U8("cdefgh"), 6, U8("2"), 1, 2), 0);
	assert_int_equal(scrub_set_add(s, U8("abcdefgh"), 8, U8("3"), 1, 3), 0);
	assert_int_equal(scrub_set_add(s, U8("ghij"), 4, U8("4"), 1, 4), 0);
	assert_int_equal(scrub_set_add(s, U8("zz"), 2, U8("zzz"), 3, 5), 0);
	assert_int_equal(scrub_set_add(s, U8("q"), 1, U8("Q"), 1, 6), 0);
	assert_int_equal(scrub_set_max_len(s), 8);
	/* Longest at the leftmost start wins; the bytes it used are gone. */
	expect(s, "xabcdefghijx", "x3ijx", 1u << 3);
	expect(s, "abcdefg", "1g", 1u << 1);
	expect(s, "xcdefghij", "x2ij", 1u << 2);
	/* Replaced text is not rescanned. */
	expect(s, "zzzz-zzz", "zzzzzz-zzzz", 1u << 5);
	expect(s, "qq", "QQ", 1u << 6);
	scrub_set_free(s);
}

static void
test_no_false_match(void **state)
{
	struct scrub_set *s = two_secrets();
	const char *in = "tst_FakeT0kenV4lue0123456789abcdefghijk tst_FakeT0kenV4lue0123456789abcdefghijkL "
	                 "Ghp_R3alT0kenV4lue0123456789abcdefghijkl sk-other/secret+with&reserved\"chars\\o "
	                 "hello world, gh gh tst_ sk- %2F \\u0026";

	(void)state;
	expect(s, in, in, 0);
	scrub_set_free(s);
}

/* Short forms are skipped: an 8-byte minimum keeps chance matches out. */
static void
test_short_forms(void **state)
{
	struct scrub_set *s = scrub_set_new();

	(void)state;
	assert_int_equal(scrub_set_add_secret(s, U8("abc12"), 5, "PLACEHLD", 0), 0);
	/* The literal and the 6-character base64 run (here inside "abc123") are too short to scrub. */
	expect(s, "abc12 YWJjMTIz", "abc12 YWJjMTIz", 0);
	/* The base64 of a stream that ends with it is 8 characters: kept. */
	expect(s, "YWJjMTI=", "UExBQ0VITEQ=", 1);
	assert_int_equal(scrub_set_add_secret(s, U8("abcd1234"), 8, "PLACEHLD", 0), 0);
	expect(s, "abcd1234", "PLACEHLD", 1);
	scrub_set_free(s);
}

static void
test_tail_and_end(void **state)
{
	struct scrub_set *s = two_secrets();
	struct scrub_stream *st = scrub_stream_new(s);
	struct evbuffer *out = evbuffer_new();
	struct scrub_hits hits = {{0}};
	char *r;

	(void)state;
	/* Nothing that could begin a value: nothing held. */
	assert_int_equal(scrub_stream_feed(st, U8("plain text."), 11, out, &hits), 0);
	assert_int_equal(scrub_stream_held(st), 0);
	r = drain(out);
	assert_string_equal(r, "plain text.");
	free(r);
	/* A value's prefix is held back until the end flushes it as it is. */
	assert_int_equal(scrub_stream_feed(st, U8("xx tst_Fake"), 11, out, &hits), 0);
	assert_int_equal(scrub_stream_held(st), 8);
	r = drain(out);
	assert_string_equal(r, "xx ");
	free(r);
	assert_int_equal(scrub_stream_end(st, out, &hits), 0);
	r = drain(out);
	assert_string_equal(r, "tst_Fake");
	free(r);
	assert_int_equal(scrub_hits_first(&hits), -1);
	/* A prefix that turns out not to be one is released by the next feed. */
	assert_int_equal(scrub_stream_feed(st, U8("tst_Fak"), 7, out, &hits), 0);
	assert_int_equal(evbuffer_get_length(out), 0);
	assert_int_equal(scrub_stream_feed(st, U8("!"), 1, out, &hits), 0);
	r = drain(out);
	assert_string_equal(r, "tst_Fak!");
	free(r);
	assert_int_equal(scrub_stream_held(st), 0);
	evbuffer_free(out);
	scrub_stream_free(st);
	scrub_set_free(s);
}

static void
test_set_errors(void **state)
{
	struct scrub_set *s = scrub_set_new();
	uint8_t *big = malloc(SCRUB_NEEDLE_MAX + 1);
	size_t before;

	(void)state;
	assert_non_null(big);
	memset(big, '%', SCRUB_NEEDLE_MAX + 1);
	assert_int_equal(scrub_set_max_len(s), 0);
	assert_int_equal(scrub_set_add(s, U8(""), 0, U8("x"), 1, 0), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add(s, big, SCRUB_NEEDLE_MAX + 1, U8("x"), 1, 0), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add(s, U8("abcdefgh"), 8, U8("x"), 1, SCRUB_TAGS), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add(s, big, SCRUB_NEEDLE_MAX, U8(""), 0, 31), 0);
	assert_int_equal(scrub_set_max_len(s), SCRUB_NEEDLE_MAX);
	assert_int_equal(scrub_set_add_secret(s, U8(""), 0, "PLACEHOLDER", 0), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add_secret(s, U8(VALUE), strlen(VALUE), "", 0), SLUICE_EINVAL);
	assert_int_equal(scrub_set_add_secret(s, U8(VALUE), strlen(VALUE), PH, SCRUB_TAGS), SLUICE_EINVAL);
	/* 8 KiB of reserved bytes: the percent form is 24 KiB, within the bound. */
	assert_int_equal(scrub_set_add_secret(s, big, 8192, PH, 1), 0);
	/* 8 KiB of control bytes: the JSON form (48 KiB) is over it, and nothing of the secret stays. */
	memset(big, 1, 8192);
	before = scrub_set_max_len(s);
	assert_int_equal(scrub_set_add_secret(s, big, 8192, PH, 2), SLUICE_EINVAL);
	assert_int_equal(scrub_set_max_len(s), before);
	{
		uint32_t hits;
		char *r = oneshot(s, (const char *)big, 8192, &hits);

		assert_int_equal(hits, 0);  /* its literal was rolled back */
		assert_memory_equal(r, big, 8192);
		free(r);
	}
	free(big);
	scrub_set_free(s);
}

/* Random bodies with values planted, in random pieces: streamed equals one-shot. */
static void
test_random_splits(void **state)
{
	struct scrub_set *s = two_secrets();
	static const char alpha[] = "tst_Fsk-oake/\"\\%2F ";
	char body[4096];
	size_t cuts[64];
	unsigned seed = 12345, it;

	(void)state;
	for (it = 0; it < 300; it++) {
		size_t len = 0, i;
		uint32_t h1, h2;
		char *a, *b;

		while (len < sizeof(body) - 64) {
			seed = seed * 1103515245u + 12345u;
			if ((seed >> 16) % 50 == 0) {
				const char *v = (seed >> 8) & 1 ? VALUE : VALUE2;
				size_t vl = strlen(v) - ((seed >> 20) % 3 == 0 ? (seed >> 24) % 4 : 0);

				memcpy(body + len, v, vl);
				len += vl;
			} else {
				body[len++] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
			}
		}
		for (i = 0; i < 64; i++) {
			seed = seed * 1103515245u + 12345u;
			cuts[i] = (seed >> 16) % 97;
		}
		a = oneshot(s, body, len, &h1);
		b = streamed(s, body, len, cuts, 64, &h2);
		assert_string_equal(a, b);
		assert_int_equal(h1, h2);
		free(a);
		free(b);
	}
	scrub_set_free(s);
}

/* ---- unzip ---- */

/* Compresses <in> with <wbits> (MAX_WBITS zlib, -MAX_WBITS raw, 16 + MAX_WBITS gzip). */
static uint8_t *
compress_with(const uint8_t *in, size_t len, int wbits, size_t *olen)
{
	z_stream zs;
	size_t cap = compressBound((uLong)len) + 64;
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	*olen = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* Feeds <in> in pieces of <step> bytes (the rest passed again as told); returns the last result. */
static int
unzip_all(const char *enc, const uint8_t *in, size_t len, size_t step, struct evbuffer *out)
{
	struct unzip *z = unzip_new(enc);
	size_t off = 0, used;
	int r = 0;

	assert_non_null(z);
	while (off < len) {
		size_t n = len - off < step ? len - off : step;

		r = unzip_feed(z, in + off, n, out, &used);
		if (r < 0)
			break;
		assert_true(used <= n);
		off += used;
		if (r == 1)
			break;
	}
	unzip_free(z);
	return r;
}

static void
test_unzip_formats(void **state)
{
	static const struct {
		const char *enc;
		int wbits;
	} cases[] = {
		{"gzip", 16 + MAX_WBITS}, {"x-gzip", 16 + MAX_WBITS}, {"GZip", 16 + MAX_WBITS},
		{"deflate", MAX_WBITS},    {"Deflate", -MAX_WBITS},
	};
	const char *text = "{\"echo\":\"" VALUE "\"} and the rest of a fairly ordinary response body";
	size_t i, clen, step;

	(void)state;
	assert_null(unzip_new("br"));
	assert_null(unzip_new("identity"));
	assert_null(unzip_new(NULL));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t *c = compress_with(U8(text), strlen(text), cases[i].wbits, &clen);

		for (step = 1; step <= clen; step = step < 8 ? step + 1 : step * 3) {
			struct evbuffer *out = evbuffer_new();
			char *r;

			assert_int_equal(unzip_all(cases[i].enc, c, clen, step, out), 1);
			r = drain(out);
			assert_string_equal(r, text);
			free(r);
			evbuffer_free(out);
		}
		free(c);
	}
}

static void
test_unzip_errors(void **state)
{
	const char *text = "a body that gets compressed and then damaged in several ways, 1234567890";
	struct evbuffer *out = evbuffer_new();
	size_t clen, used;
	uint8_t *c, *bad;
	struct unzip *z;

	(void)state;
	c = compress_with(U8(text), strlen(text), 16 + MAX_WBITS, &clen);
	bad = malloc(clen + 4);
	assert_non_null(bad);
	/* A bad gzip magic. */
	memcpy(bad, c, clen);
	bad[0] ^= 0xff;
	assert_int_equal(unzip_all("gzip", bad, clen, clen, out), -1);
	/* A bad CRC. */
	memcpy(bad, c, clen);
	bad[clen - 6] ^= 0x01;
	assert_int_equal(unzip_all("gzip", bad, clen, clen, out), -1);
	/* Trailing garbage in the same piece, and in a later one. */
	memcpy(bad, c, clen);
	memcpy(bad + clen, "junk", 4);
	assert_int_equal(unzip_all("gzip", bad, clen + 4, clen + 4, out), -1);
	z = unzip_new("gzip");
	assert_int_equal(unzip_feed(z, c, clen, out, &used), 1);
	assert_int_equal(used, clen);
	assert_int_equal(unzip_feed(z, NULL, 0, out, &used), 1);
	assert_int_equal(unzip_feed(z, U8("x"), 1, out, &used), -1);
	assert_int_equal(unzip_feed(z, NULL, 0, out, &used), -1);  /* failed stays failed */
	unzip_free(z);
	/* Truncated: all consumed, more wanted. */
	z = unzip_new("gzip");
	assert_int_equal(unzip_feed(z, c, clen - 3, out, &used), 0);
	assert_int_equal(used, clen - 3);
	unzip_free(z);
	free(c);
	/* Corrupt deflate, both wrappers. */
	c = compress_with(U8(text), strlen(text), MAX_WBITS, &clen);
	memcpy(bad, c, clen);
	bad[clen - 1] ^= 0x55;  /* the Adler-32 */
	assert_int_equal(unzip_all("deflate", bad, clen, 5, out), -1);
	free(c);
	memcpy(bad, "\xff\xff\xff\xff\xff\xff", 6);  /* raw: a reserved block type */
	assert_int_equal(unzip_all("deflate", bad, 6, 6, out), -1);
	free(bad);
	evbuffer_free(out);
}

/* 10 MiB of zeros, compressed: every call appends at most UNZIP_OUT_MAX and uses part of its input. */
static void
test_unzip_bomb(void **state)
{
	const size_t total = 10u << 20;
	uint8_t *zeros = calloc(1, total), *c;
	struct evbuffer *out = evbuffer_new();
	size_t clen, off = 0, got = 0, used, calls = 0, partial = 0;
	struct unzip *z;
	int r = 0;

	(void)state;
	assert_non_null(zeros);
	c = compress_with(zeros, total, 16 + MAX_WBITS, &clen);
	assert_true(clen < 64 * 1024);
	z = unzip_new("gzip");
	while (r == 0) {
		size_t n;

		r = unzip_feed(z, c + off, clen - off, out, &used);
		assert_true(r >= 0);
		n = evbuffer_get_length(out);
		assert_true(n <= UNZIP_OUT_MAX);
		if (used < clen - off)
			partial++;
		off += used;
		got += n;
		{
			/* The caller drains: the bytes are all zeros. */
			uint8_t chunk[4096];

			while (evbuffer_get_length(out) > 0) {
				int m = evbuffer_remove(out, chunk, sizeof(chunk));
				int k;

				for (k = 0; k < m; k++)
					assert_int_equal(chunk[k], 0);
			}
		}
		calls++;
		assert_true(calls < 1000);
	}
	assert_int_equal(r, 1);
	assert_int_equal(off, clen);
	assert_int_equal(got, total);
	assert_true(calls >= total / UNZIP_OUT_MAX);
	assert_true(partial > 0);
	unzip_free(z);
	free(c);
	free(zeros);
	evbuffer_free(out);
}

struct bits {
	uint8_t *p;
	size_t nbits;
};

static void
put_bit(struct bits *b, unsigned v)
{
	if (v)
		b->p[b->nbits >> 3] |= (uint8_t)(1u << (b->nbits & 7));
	b->nbits++;
}

/* A Huffman code goes out most significant bit first. */
static void
put_code(struct bits *b, unsigned code, unsigned len)
{
	while (len-- > 0)
		put_bit(b, (code >> len) & 1);
}

/*
 * The output cap may fall inside the last match of a raw deflate stream
 * whose end-of-block code shares that match's last byte: all input is read,
 * output is still inside zlib, and no input follows.  The decoder must then
 * report the last byte unused, so the caller calls again; else it would wait
 * forever.  A fixed-Huffman block: <j> 9-bit literals, a literal 0, 1017
 * matches (length 258, distance 1), end of block; j = 1 puts the end code in
 * the last match's byte.
 */
static void
test_unzip_pending(void **state)
{
	unsigned j, k;

	(void)state;
	for (j = 0; j < 8; j++) {
		uint8_t *c = calloc(1, 4096);
		struct bits b = {c, 0};
		struct evbuffer *out = evbuffer_new();
		struct unzip *z = unzip_new("deflate");
		size_t clen, off = 0, got = 0, used, want = j + 1 + 258u * 1017;
		int r = 0;

		assert_non_null(c);
		put_bit(&b, 1);  /* BFINAL */
		put_bit(&b, 1);  /* BTYPE 01: fixed Huffman */
		put_bit(&b, 0);
		for (k = 0; k < j; k++)
			put_code(&b, 0x190, 9);  /* literal 144 */
		put_code(&b, 0x30, 8);           /* literal 0 */
		for (k = 0; k < 1017; k++) {
			put_code(&b, 0xc5, 8);   /* length 258 */
			put_code(&b, 0, 5);      /* distance 1 */
		}
		put_code(&b, 0, 7);              /* end of block */
		clen = (b.nbits + 7) / 8;
		while (off < clen) {
			r = unzip_feed(z, c + off, clen - off, out, &used);
			assert_true(r >= 0);
			assert_true(evbuffer_get_length(out) <= UNZIP_OUT_MAX);
			got += evbuffer_get_length(out);
			evbuffer_drain(out, evbuffer_get_length(out));
			off += used;
			if (r == 1)
				break;
			if (j == 1 && used == clen - 1)
				assert_int_equal(got, UNZIP_OUT_MAX);  /* the byte kept back */
		}
		assert_int_equal(r, 1);  /* never "all used, more wanted" with the end already read */
		assert_int_equal(off, clen);
		assert_int_equal(got, want);
		unzip_free(z);
		evbuffer_free(out);
		free(c);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literal),
		cmocka_unit_test(test_base64_alignments),
		cmocka_unit_test(test_base64_lengths),
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_percent_json),
		cmocka_unit_test(test_forms_of_placeholder),
		cmocka_unit_test(test_split_everywhere),
		cmocka_unit_test(test_split_never_partial),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_no_false_match),
		cmocka_unit_test(test_short_forms),
		cmocka_unit_test(test_tail_and_end),
		cmocka_unit_test(test_set_errors),
		cmocka_unit_test(test_random_splits),
		cmocka_unit_test(test_unzip_formats),
		cmocka_unit_test(test_percent_forms),
		cmocka_unit_test(test_many_secrets),
		cmocka_unit_test(test_unzip_errors),
		cmocka_unit_test(test_unzip_bomb),
		cmocka_unit_test(test_unzip_pending),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
