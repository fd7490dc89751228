/*
 * tests/fuzz/fuzz_store_reply.c - the readers of Redis's replies
 * (proxy/store/store_reply.c) over reply trees that hiredis's own RESP
 * reader (redisReaderCreate/redisReaderFeed) builds from the input: every
 * reply type, nesting, nil, wrong lengths and types.  The first byte picks
 * the budget period the take's reader is bounded by; the rest is fed to the
 * reader in two pieces (split by the second byte), so replies are also cut
 * across feeds.  Each reply, and each element of an array, goes through
 * every reader (the counters' and the fleet's), whose answers are checked
 * against the contract.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/store/store_int.h"

/* The fleet's readers (a subscriber's pushes, ZRANGEBYSCORE, MGET, SET NX): their answers within the contract. */
static void
fleet_readers(const redisReply *r)
{
	static char ids[16][FLEET_ID_LEN + 1];
	const char *p;
	size_t n, i;
	long k;

	if (store_reply_message(r, "ch", 2, &p, &n) == 1 && (n > FLEET_REC_MAX || r->elements != 3))
		abort();
	k = store_reply_ids(r, 16, ids);
	if (k > 16 || (k >= 0 && (r == NULL || r->type != REDIS_REPLY_ARRAY)))
		abort();
	for (i = 0; k > 0 && i < (size_t)k; i++)
		if (strlen(ids[i]) != FLEET_ID_LEN || strspn(ids[i], "0123456789abcdef") != FLEET_ID_LEN)
			abort();
	if (r != NULL && store_reply_mget(r, r->type == REDIS_REPLY_ARRAY ? r->elements : 0) == 0)
		for (i = 0; i < r->elements; i++)
			if (store_reply_mget_at(r, i, &p, &n) == 1 && n > FLEET_REC_MAX)
				abort();
	if (store_reply_set_nx(r) == 1 && r->type != REDIS_REPLY_STATUS)
		abort();
}

static void
check(const redisReply *r, uint32_t period)
{
	struct store_result res;
	char val[64], sha[STORE_SHA_LEN + 1];
	int sc;

	for (sc = 0; sc <= STORE_NSCRIPT; sc++) {
		enum store_outcome o = store_reply_script((enum store_script)sc, period, r, &res);

		if (o != res.outcome)
			abort();
		if (o == STORE_ALLOWED || o == STORE_REFUSED) {
			if (r == NULL || r->type != REDIS_REPLY_ARRAY || sc == STORE_NSCRIPT)
				abort();
			if (sc == STORE_SCRIPT_TAKE && (res.window_s % period != 0 || res.retry_after_ms > (uint64_t)period * 1000))
				abort();
			if (res.retry_after_ms > STORE_RETRY_MAX_MS)
				abort();
		} else if (o != STORE_EREPLY && o != STORE_ENOSCRIPT && o != STORE_EDOWN) {
			abort();
		}
	}
	if (store_reply_ok(r) == 0 && (r->type != REDIS_REPLY_STATUS || r->len != 2))
		abort();
	if (store_reply_sha(r, sha) == 0 && strlen(sha) != STORE_SHA_LEN)
		abort();
	if (store_reply_config_evict(r, val, sizeof(val)) > STORE_EVICT_UNKNOWN || strlen(val) >= sizeof(val))
		abort();
	if (store_reply_info_evict(r, val, sizeof(val)) > STORE_EVICT_UNKNOWN || strlen(val) >= sizeof(val))
		abort();
	fleet_readers(r);
}

/*
 * hiredis 0.14's reader allocates an array's declared element count before it
 * reads one element ("*310100000\r\n" is a 2.4 GB calloc) and has no bound to
 * set (1.0 added maxelements).  That is hiredis's, not the readers' under test:
 * inputs declaring an array over ARRAY_MAX are skipped.  The gateway's exposure
 * (a Redis that answers such a header makes the worker allocate it) is in the
 * threat model's "Redis is in the trusted base".
 */
#define ARRAY_MAX 4096

static int
declares_big_array(const uint8_t *p, size_t n)
{
	size_t i, j;

	for (i = 0; i < n; i++) {
		unsigned long v = 0;

		if (p[i] != '*')
			continue;
		for (j = i + 1; j < n && p[j] >= '0' && p[j] <= '9' && v <= ARRAY_MAX; j++)
			v = v * 10 + (unsigned long)(p[j] - '0');
		if (v > ARRAY_MAX)
			return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t periods[] = {1, 60, 3600, 86400};
	redisReader *rd;
	uint32_t period;
	size_t split;
	void *rep;
	int n = 0;

	if (size < 2)
		return 0;
	period = periods[data[0] & 3];
	split = data[1] % (size - 1);
	data += 2;
	size -= 2;
	if (declares_big_array(data, size))
		return 0;
	if ((rd = redisReaderCreate()) == NULL)
		return 0;
	check(NULL, period);
	if (redisReaderFeed(rd, (const char *)data, split) != REDIS_OK ||
	    redisReaderFeed(rd, (const char *)data + split, size - split) != REDIS_OK)
		goto out;
	while (n++ < 64 && redisReaderGetReply(rd, &rep) == REDIS_OK && rep != NULL) {
		const redisReply *r = rep;
		size_t i;

		check(r, period);
		if (r->type == REDIS_REPLY_ARRAY)
			for (i = 0; i < r->elements && i < 8; i++)
				check(r->element[i], period);
		freeReplyObject(rep);
	}
out:
	redisReaderFree(rd);
	return 0;
}
