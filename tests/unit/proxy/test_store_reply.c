/*
 * tests/unit/proxy/test_store_reply.c - the pure parts of proxy/store/: the
 * keys of counters and their escaping (every pair of tricky names gives a
 * different key, bounds), and the reply readers fed every hiredis reply
 * type (status, error, NOSCRIPT, integer, nil, bulk, arrays of the wrong
 * length, types, nesting and ranges) through hiredis's own RESP parser.
 * No Redis is needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "proxy/store/store.h"
#include "proxy/store/store_int.h"

/* ---- keys ---- */

static void
test_keys(void **state)
{
	/* tricky names: the separator, the escape, the global and missing marks, hash tags, blanks, UTF-8 */
	static const char *const names[] = {"a", "a:b", "a%3Ab", "%", "*", "?", "%2A", "%3F", "{x}", "a b", "\xc3\xa9",
	                                    ":", "::", "a:*", "rule:1", "b:a", "1"};
	const size_t n = sizeof(names) / sizeof(names[0]);
	static char keys[17 * 17 * 2 + 17 * 2][128];
	size_t nk = 0, i, j, k;
	char big[STORE_NAME_MAX + 2];
	char out[STORE_KEY_MAX];

	(void)state;
	assert_int_equal(store_key(out, sizeof(out), "sluice:", STORE_KIND_RATE, "rule:api", 0, "sb:1"), 26);
	assert_string_equal(out, "sluice:r:rule%3Aapi:sb%3A1");
	assert_true(store_key(out, sizeof(out), "p:", STORE_KIND_BUDGET, "budget:x", 1, "ignored") > 0);
	assert_string_equal(out, "p:b:budget%3Ax:*");
	assert_true(store_key(out, sizeof(out), NULL, STORE_KIND_BUDGET, "k", 0, NULL) > 0);
	assert_string_equal(out, "b:k:?");
	assert_true(store_key(out, sizeof(out), NULL, STORE_KIND_RATE, "k", 0, "*") > 0);
	assert_string_equal(out, "r:k:%2A");
	/* every (key, sandbox) pair, and every key's global counter, gives a different key: no name reaches another's */
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++)
			for (k = 0; k < 2; k++)
				assert_true(store_key(keys[nk++], 128, "s:", k ? STORE_KIND_RATE : STORE_KIND_BUDGET, names[i], 0,
				                      names[j]) > 0);
		for (k = 0; k < 2; k++)
			assert_true(store_key(keys[nk++], 128, "s:", k ? STORE_KIND_RATE : STORE_KIND_BUDGET, names[i], 1,
			                      NULL) > 0);
	}
	for (i = 0; i < nk; i++) {
		for (j = i + 1; j < nk; j++)
			assert_string_not_equal(keys[i], keys[j]);
		/* exactly two separators after the prefix "s:": kind:key:sandbox */
		for (j = 2, k = 0; keys[i][j] != '\0'; j++)
			k += keys[i][j] == ':';
		assert_int_equal(k, 2);
	}
	/* bounds: an empty or oversized name, a long prefix, a small buffer */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(store_key(out, sizeof(out), NULL, STORE_KIND_RATE, "", 0, "s"), -1);
	assert_int_equal(store_key(out, sizeof(out), NULL, STORE_KIND_RATE, big, 0, "s"), -1);
	assert_int_equal(store_key(out, sizeof(out), NULL, STORE_KIND_RATE, "k", 0, big), -1);
	big[STORE_PREFIX_MAX + 1] = '\0';
	assert_int_equal(store_key(out, sizeof(out), big, STORE_KIND_RATE, "k", 0, "s"), -1);
	assert_int_equal(store_key(out, 6, NULL, STORE_KIND_RATE, "k", 0, "s"), 5);
	assert_int_equal(store_key(out, 5, NULL, STORE_KIND_RATE, "k", 0, "s"), -1);
	assert_int_equal(store_key(out, 7, NULL, STORE_KIND_RATE, "k", 0, ":"), -1);
	assert_int_equal(store_key(out, sizeof(out), NULL, (enum store_kind)7, "k", 0, "s"), -1);
}

/* ---- reply readers ---- */

static redisReply *
parse(const char *resp)
{
	redisReader *rd = redisReaderCreate();
	void *rep = NULL;

	assert_non_null(rd);
	assert_int_equal(redisReaderFeed(rd, resp, strlen(resp)), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
	assert_non_null(rep);
	redisReaderFree(rd);
	return rep;
}

/* A bulk string reply holding <body>. */
static redisReply *
bulk(const char *body)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "$%zu\r\n%s\r\n", strlen(body), body);
	return parse(buf);
}

struct reply_case {
	enum store_script sc;
	const char *resp;
	enum store_outcome want;
	uint64_t retry, window;
};

static void
test_replies(void **state)
{
	static const struct reply_case cases[] = {
		{STORE_SCRIPT_RATE, "*2\r\n:1\r\n:0\r\n", STORE_ALLOWED, 0, 0},
		{STORE_SCRIPT_RATE, "*2\r\n:0\r\n:1500\r\n", STORE_REFUSED, 1500, 0},
		{STORE_SCRIPT_RATE, "*2\r\n:1\r\n:5\r\n", STORE_EREPLY, 0, 0},       /* allowed with a retry */
		{STORE_SCRIPT_RATE, "*2\r\n:2\r\n:0\r\n", STORE_EREPLY, 0, 0},       /* allowed out of range */
		{STORE_SCRIPT_RATE, "*2\r\n:0\r\n:-1\r\n", STORE_EREPLY, 0, 0},      /* negative retry */
		{STORE_SCRIPT_RATE, "*2\r\n:0\r\n:99999999999999\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "*3\r\n:1\r\n:0\r\n:0\r\n", STORE_EREPLY, 0, 0},  /* wrong length */
		{STORE_SCRIPT_RATE, "*1\r\n:1\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "*0\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "*-1\r\n", STORE_EREPLY, 0, 0},                  /* nil array */
		{STORE_SCRIPT_RATE, "*2\r\n$1\r\n1\r\n:0\r\n", STORE_EREPLY, 0, 0},  /* a string element */
		{STORE_SCRIPT_RATE, "*2\r\n:1\r\n$-1\r\n", STORE_EREPLY, 0, 0},      /* a nil element */
		{STORE_SCRIPT_RATE, "*2\r\n*1\r\n:1\r\n:0\r\n", STORE_EREPLY, 0, 0}, /* a nested array */
		{STORE_SCRIPT_RATE, "*2\r\n+OK\r\n:0\r\n", STORE_EREPLY, 0, 0},      /* a status element */
		{STORE_SCRIPT_RATE, "*2\r\n-ERR x\r\n:0\r\n", STORE_EREPLY, 0, 0},   /* an error element */
		{STORE_SCRIPT_RATE, ":1\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "$1\r\n1\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "$-1\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "+OK\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "-ERR Error running script\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "-OOM command not allowed\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_RATE, "-NOSCRIPT No matching script\r\n", STORE_ENOSCRIPT, 0, 0},
		{STORE_SCRIPT_TAKE, "*3\r\n:1\r\n:1000\r\n:3600\r\n", STORE_ALLOWED, 1000, 3600},
		{STORE_SCRIPT_TAKE, "*3\r\n:0\r\n:3600000\r\n:7200\r\n", STORE_REFUSED, 3600000, 7200},
		{STORE_SCRIPT_TAKE, "*3\r\n:0\r\n:3600001\r\n:7200\r\n", STORE_EREPLY, 0, 0}, /* past the window */
		{STORE_SCRIPT_TAKE, "*3\r\n:1\r\n:10\r\n:3601\r\n", STORE_EREPLY, 0, 0},      /* not a window start */
		{STORE_SCRIPT_TAKE, "*3\r\n:1\r\n:10\r\n:-3600\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_TAKE, "*2\r\n:1\r\n:0\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_TAKE, "*3\r\n:1\r\n:10\r\n$4\r\n3600\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_REFUND, "*1\r\n:1\r\n", STORE_ALLOWED, 0, 0},
		{STORE_SCRIPT_REFUND, "*1\r\n:0\r\n", STORE_ALLOWED, 0, 0},
		{STORE_SCRIPT_REFUND, "*1\r\n:7\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_REFUND, "*2\r\n:1\r\n:1\r\n", STORE_EREPLY, 0, 0},
		{STORE_SCRIPT_REFUND, ":1\r\n", STORE_EREPLY, 0, 0},
		{(enum store_script)9, "*1\r\n:1\r\n", STORE_EREPLY, 0, 0},
	};
	struct store_result res;
	char val[64], sha[STORE_SHA_LEN + 1];
	redisReply *r;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = parse(cases[i].resp);
		/* a rate take's bound is the takes asked (one here), a budget's its period */
		assert_int_equal(store_reply_script(cases[i].sc, cases[i].sc == STORE_SCRIPT_RATE ? 1 : 3600, r, &res),
		                 cases[i].want);
		assert_int_equal(res.outcome, cases[i].want);
		if (cases[i].want >= 0) {
			assert_int_equal(res.retry_after_ms, cases[i].retry);
			assert_int_equal(res.window_s, cases[i].window);
		}
		freeReplyObject(r);
	}
	assert_int_equal(store_reply_script(STORE_SCRIPT_RATE, 1, NULL, &res), STORE_EDOWN);
	/* a batch of 5 rate takes: {granted, retry}; the retry only when some were refused */
	{
		static const struct {
			uint32_t asked;
			const char *resp;
			enum store_outcome want;
			uint32_t granted;
			uint64_t retry;
		} b[] = {
			{5, "*2\r\n:3\r\n:250\r\n", STORE_ALLOWED, 3, 250},
			{5, "*2\r\n:5\r\n:0\r\n", STORE_ALLOWED, 5, 0},
			{5, "*2\r\n:0\r\n:100\r\n", STORE_REFUSED, 0, 100},
			{5, "*2\r\n:5\r\n:7\r\n", STORE_EREPLY, 0, 0},   /* all granted, yet a retry */
			{5, "*2\r\n:6\r\n:0\r\n", STORE_EREPLY, 0, 0},   /* more granted than asked */
			{0, "*2\r\n:0\r\n:0\r\n", STORE_EREPLY, 0, 0},   /* none asked */
			{STORE_BATCH_MAX + 1, "*2\r\n:1\r\n:9\r\n", STORE_EREPLY, 0, 0},
			{STORE_BATCH_MAX, "*2\r\n:64\r\n:0\r\n", STORE_ALLOWED, 64, 0},
		};
		for (i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
			r = parse(b[i].resp);
			assert_int_equal(store_reply_script(STORE_SCRIPT_RATE, b[i].asked, r, &res), b[i].want);
			if (b[i].want >= 0) {
				assert_int_equal(res.granted, b[i].granted);
				assert_int_equal(res.retry_after_ms, b[i].retry);
			}
			freeReplyObject(r);
		}
	}
	r = parse("*3\r\n:1\r\n:0\r\n:0\r\n");
	assert_int_equal(store_reply_script(STORE_SCRIPT_TAKE, 0, r, &res), STORE_EREPLY);  /* no period: no bound */
	freeReplyObject(r);

	r = parse("+OK\r\n");
	assert_int_equal(store_reply_ok(r), 0);
	freeReplyObject(r);
	r = parse("-WRONGPASS invalid username-password pair\r\n");
	assert_int_equal(store_reply_ok(r), STORE_EREPLY);
	freeReplyObject(r);
	r = parse("$2\r\nOK\r\n");
	assert_int_equal(store_reply_ok(r), STORE_EREPLY);
	freeReplyObject(r);
	assert_int_equal(store_reply_ok(NULL), STORE_EDOWN);

	r = parse("$40\r\n0123456789abcdef0123456789abcdef01234567\r\n");
	assert_int_equal(store_reply_sha(r, sha), 0);
	assert_string_equal(sha, "0123456789abcdef0123456789abcdef01234567");
	freeReplyObject(r);
	r = parse("$40\r\n0123456789ABCDEF0123456789abcdef01234567\r\n");
	assert_int_equal(store_reply_sha(r, sha), STORE_EREPLY);
	freeReplyObject(r);
	r = parse("$3\r\nabc\r\n");
	assert_int_equal(store_reply_sha(r, sha), STORE_EREPLY);
	freeReplyObject(r);
	r = parse(":1\r\n");
	assert_int_equal(store_reply_sha(r, sha), STORE_EREPLY);
	freeReplyObject(r);

	r = parse("*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_NO);
	freeReplyObject(r);
	r = parse("*2\r\n$16\r\nmaxmemory-policy\r\n$17\r\nvolatile-lru\x1b[31m\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_YES);
	assert_null(strchr(val, '\x1b'));  /* escaped for the log */
	freeReplyObject(r);
	r = parse("*0\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	r = parse("*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	r = parse("*2\r\n$16\r\nmaxmemory-policy\r\n:0\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	r = parse("-NOPERM this user has no permissions to run the 'config|get' command\r\n");
	assert_int_equal(store_reply_config_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	assert_int_equal(store_reply_config_evict(NULL, val, sizeof(val)), STORE_EVICT_UNKNOWN);

	r = bulk("# Memory\r\nused_memory:1\r\nmaxmemory_policy:noeviction\r\n\r\n");
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_NO);
	freeReplyObject(r);
	r = bulk("# Memory\r\nmaxmemory_policy:allkeys-lru\r\n\r\n");
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_YES);
	assert_string_equal(val, "allkeys-lru");
	freeReplyObject(r);
	/* only at the start of a line, and not a longer field name */
	r = bulk("x_maxmemory_policy:noeviction\r\nmaxmemory_policy_x:noeviction");
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	r = bulk("maxmemory_policy:noevictionX");
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_YES);
	freeReplyObject(r);
	r = bulk("a\nmaxmemory_policy:noeviction");   /* last line, no CRLF */
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_NO);
	freeReplyObject(r);
	r = parse("-ERR unknown command\r\n");
	assert_int_equal(store_reply_info_evict(r, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	freeReplyObject(r);
	assert_int_equal(store_reply_info_evict(NULL, val, sizeof(val)), STORE_EVICT_UNKNOWN);
	for (i = 0; i < 10; i++)
		assert_non_null(store_outcome_str((enum store_outcome)(1 - (int)i)));
}

/* The reader the store connects with: an array header over STORE_REPLY_ARRAY_MAX is an error, never allocated. */
static void
test_array_bound(void **state)
{
	static const char *big[] = {"*300000000\r\n", "*1025\r\n", "*2\r\n*2147483647\r\n", "*3\r\n:1\r\n*2000\r\n"};
	redisReader *rd;
	void *rep = NULL;
	size_t i;

	(void)state;
	assert_non_null(store_reply_fns());
	for (i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
		rd = redisReaderCreateWithFunctions(store_reply_fns());
		assert_non_null(rd);
		assert_int_equal(redisReaderFeed(rd, big[i], strlen(big[i])), REDIS_OK);
		assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_ERR);
		assert_null(rep);
		redisReaderFree(rd);
	}
	/* within the bound: read as hiredis reads it */
	rd = redisReaderCreateWithFunctions(store_reply_fns());
	assert_int_equal(redisReaderFeed(rd, SLUICE_LIT("*3\r\n:1\r\n:0\r\n:1700000000\r\n")), REDIS_OK);
	assert_int_equal(redisReaderGetReply(rd, &rep), REDIS_OK);
	assert_non_null(rep);
	assert_int_equal(((redisReply *)rep)->type, REDIS_REPLY_ARRAY);
	assert_int_equal(((redisReply *)rep)->elements, 3);
	freeReplyObject(rep);
	redisReaderFree(rd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_replies),
		cmocka_unit_test(test_array_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
