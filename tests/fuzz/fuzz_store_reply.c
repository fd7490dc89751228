/*
 * tests/fuzz/fuzz_store_reply.c - the readers of Redis's replies
 * (proxy/store/store_reply.c) over reply trees that hiredis's own RESP
 * reader (redisReaderCreate/redisReaderFeed) builds from the input: every
 * reply type, nesting, nil, wrong lengths and types.  The first byte picks
 * the budget period the take's reader is bounded by; the rest is fed to the
 * reader in two pieces (split by the second byte), so replies are also cut
 * across feeds.  The reader has the store's bounded reply functions.  Each
 * reply, and each element of an array, goes through every reader (the
 * counters' and the fleet's), whose answers are checked against the contract.
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
		/* a rate take's bound is the takes asked at once: the period's value, folded into 0..65 */
		uint32_t bound = sc == STORE_SCRIPT_RATE ? period % (STORE_BATCH_MAX + 2) : period;
		enum store_outcome o = store_reply_script((enum store_script)sc, bound, r, &res);

		if (o != res.outcome)
			abort();
		if (sc == STORE_SCRIPT_RATE && o >= 0 &&
		    (bound < 1 || bound > STORE_BATCH_MAX || res.granted > bound || (o == STORE_ALLOWED) != (res.granted > 0) ||
		     (res.granted == bound && res.retry_after_ms != 0)))
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
 * The reader is made with the store's own reply functions (store_reply_fns,
 * the bound on arrays hiredis 0.14 lacks), as store.c makes every
 * connection's: an input declaring an array over STORE_REPLY_ARRAY_MAX must
 * fail the reader before hiredis allocates its declared count, so such
 * inputs are fed like any other (a "*300000000" that got through would be a
 * multi-gigabyte calloc, which the fuzzer's -rss_limit_mb reports).
 */

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
	if ((rd = redisReaderCreate()) == NULL)
		return 0;
	if (store_reply_fns() == NULL)
		abort();
	rd->fn = store_reply_fns();
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
		if (r->type == REDIS_REPLY_ARRAY && r->elements > STORE_REPLY_ARRAY_MAX)
			abort();  /* the bound let an array through */
		freeReplyObject(rep);
	}
out:
	redisReaderFree(rd);
	return 0;
}
