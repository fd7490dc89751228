/*
 * test_chain.c - the audit chain's arithmetic (audit/chain.c, audit/format.c):
 * the wrapped line byte for byte, prev as the SHA-256 of the previous line,
 * the mac over the line without its mac member, the forward-secure key,
 * seq parsing and the key file's text.  Every hash and mac here is computed
 * independently with OpenSSL's EVP interfaces, not with the code under test.
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
#include <openssl/hmac.h>
#include "audit/writer_int.h"

#define GENESIS "0000000000000000000000000000000000000000000000000000000000000000"
#define PREV_AB "abababababababababababababababababababababababababababababababab"

static void
hexs(const uint8_t *p, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* SHA-256 through EVP_Digest, as hex. */
static void
sha_hex(const void *p, size_t n, char out[65])
{
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	assert_int_equal(EVP_Digest(p, n, md, &len, EVP_sha256(), NULL), 1);
	assert_int_equal(len, 32);
	hexs(md, 32, out);
}

/* HMAC-SHA-256 through EVP_MAC, as hex. */
static void
mac_hex(const uint8_t key[32], const void *p, size_t n, char out[65])
{
	EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
	EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
	OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", (char *)"SHA256", 0), OSSL_PARAM_END};
	uint8_t md[64];
	size_t len = 0;

	assert_non_null(ctx);
	assert_int_equal(EVP_MAC_init(ctx, key, 32, params), 1);
	assert_int_equal(EVP_MAC_update(ctx, p, n), 1);
	assert_int_equal(EVP_MAC_final(ctx, md, &len, sizeof(md)), 1);
	assert_int_equal(len, 32);
	hexs(md, 32, out);
	EVP_MAC_CTX_free(ctx);
	EVP_MAC_free(mac);
}

/* K_{n+1} = SHA-256("sluice-audit-key-v1" || K_n), by hand. */
static void
evolve_ref(uint8_t key[32])
{
	uint8_t in[19 + 32], md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	memcpy(in, "sluice-audit-key-v1", 19);
	memcpy(in + 19, key, 32);
	assert_int_equal(EVP_Digest(in, sizeof(in), md, &len, EVP_sha256(), NULL), 1);
	memcpy(key, md, 32);
}

static const char body1[] = "\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"start\",\"sandbox\":\"-\",\"run\":\"0123456789abcdef\"";
static const char body2[] = "\"time\":\"2026-12-01T04:07:07.124Z\",\"type\":\"dns\",\"sandbox\":\"sb\",\"host\":\"a.test\"";

static void
test_golden_unkeyed(void **state)
{
	struct audit_chain ch;
	char line[1024], want[1024], h1[65];
	long n;

	(void)state;
	audit_chain_init(&ch, 1, NULL, NULL);
	n = audit_chain_wrap(&ch, body1, strlen(body1), line, sizeof(line));
	snprintf(want, sizeof(want), "{\"seq\":1,%s,\"prev\":\"%s\"}\n", body1, GENESIS);
	assert_int_equal(n, (long)strlen(want));
	assert_memory_equal(line, want, (size_t)n);
	/* the next prev is the SHA-256 of the whole line without its "\n" */
	sha_hex(line, (size_t)n - 1, h1);
	assert_string_equal(ch.prev, h1);
	assert_int_equal(ch.seq, 2);
	n = audit_chain_wrap(&ch, body2, strlen(body2), line, sizeof(line));
	snprintf(want, sizeof(want), "{\"seq\":2,%s,\"prev\":\"%s\"}\n", body2, h1);
	assert_int_equal(n, (long)strlen(want));
	assert_memory_equal(line, want, (size_t)n);
	assert_null(strstr(line, "\"mac\""));
}

static void
test_golden_keyed(void **state)
{
	struct audit_chain ch;
	uint8_t k[32], k1[32];
	char line[1024], covered[1024], want[1024], m[65], h[65];
	const char *mp;
	long n;
	int i;

	(void)state;
	for (i = 0; i < 32; i++)
		k1[i] = (uint8_t)(i + 1);
	memcpy(k, k1, 32);
	audit_chain_init(&ch, 41, PREV_AB, k1);
	for (i = 0; i < 3; i++) {
		n = audit_chain_wrap(&ch, body2, strlen(body2), line, sizeof(line));
		assert_true(n > 0);
		/* mac last: ,"mac":"<64 hex>"} then \n */
		mp = strstr(line, ",\"mac\":\"");
		assert_non_null(mp);
		assert_int_equal((long)(mp - line) + 8 + 64 + 3, n);
		/* covered bytes: the line up to ,"mac":" and then "}" */
		memcpy(covered, line, (size_t)(mp - line));
		covered[mp - line] = '}';
		mac_hex(k, covered, (size_t)(mp - line) + 1, m);
		snprintf(want, sizeof(want), "%.*s,\"mac\":\"%s\"}\n", (int)(mp - line), line, m);
		assert_int_equal(n, (long)strlen(want));
		assert_memory_equal(line, want, (size_t)n);
		if (i == 0) {
			assert_memory_equal(line, "{\"seq\":41,", 10);
			assert_non_null(strstr(line, ",\"prev\":\"" PREV_AB "\",\"mac\":"));
		}
		/* prev of the next covers the mac too */
		sha_hex(line, (size_t)n - 1, h);
		assert_string_equal(ch.prev, h);
		/* the key moved on: K_{n+1}, and K_n is no longer held */
		evolve_ref(k);
		assert_memory_equal(ch.key, k, 32);
	}
	assert_int_equal(ch.seq, 44);
	/* a mac made with K_41 does not verify with K_42: the key really changes per record */
	memcpy(k, k1, 32);
	evolve_ref(k);
	mac_hex(k, covered, strlen(covered), h);
	assert_string_not_equal(h, m);
	audit_chain_wipe(&ch);
	assert_false(ch.keyed);
	for (i = 0; i < 32; i++)
		assert_int_equal(ch.key[i], 0);
}

static void
test_wrap_too_small_changes_nothing(void **state)
{
	struct audit_chain ch, before;
	uint8_t k1[32] = {7};
	char line[64];

	(void)state;
	audit_chain_init(&ch, 5, NULL, k1);
	before = ch;
	assert_int_equal(audit_chain_wrap(&ch, body1, strlen(body1), line, sizeof(line)), -1);
	assert_memory_equal(&ch, &before, sizeof(ch));
}

static void
test_evolve_matches_reference(void **state)
{
	uint8_t a[32], b[32];
	int i;

	(void)state;
	memset(a, 0x5a, sizeof(a));
	memcpy(b, a, 32);
	for (i = 0; i < 100; i++) {
		audit_key_evolve(a);
		evolve_ref(b);
	}
	assert_memory_equal(a, b, 32);
}

static void
test_line_seq(void **state)
{
	static const struct {
		const char *line;
		int ok;
		uint64_t seq;
	} cases[] = {
		{"{\"seq\":1,\"time\":\"x\"}", 1, 1},
		{"{\"seq\":18446744073709551615,\"a\":1}", 1, UINT64_MAX},
		{"{\"seq\":18446744073709551616,\"a\":1}", 0, 0},  /* overflow */
		{"{\"seq\":0,\"a\":1}", 0, 0},                      /* seq starts at 1 */
		{"{\"seq\":01,\"a\":1}", 0, 0},                     /* no leading zero */
		{"{\"seq\":12}", 0, 0},                             /* no members after */
		{"{\"seq\": 1,\"a\":1}", 0, 0},
		{"{\"time\":\"x\",\"seq\":1,", 0, 0},               /* seq first */
		{"{\"seq\":\"1\",", 0, 0},
		{"{\"seq\":", 0, 0},
		{"", 0, 0},
	};
	uint64_t seq;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		seq = 0;
		assert_int_equal(audit_line_seq(cases[i].line, strlen(cases[i].line), &seq), cases[i].ok ? 0 : -1);
		if (cases[i].ok)
			assert_true(seq == cases[i].seq);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_unkeyed),
		cmocka_unit_test(test_golden_keyed),
		cmocka_unit_test(test_wrap_too_small_changes_nothing),
		cmocka_unit_test(test_evolve_matches_reference),
		cmocka_unit_test(test_line_seq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
