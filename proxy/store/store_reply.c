/*
 * proxy/store/store_reply.c - the store's Lua scripts and the readers of
 * Redis's replies (store_int.h): pure functions over hiredis's redisReply.
 */
#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "store_int.h"
#include "proxy/store/fleet.h"

/*
 * GCRA in microseconds of Redis's TIME.  T = ceil(period / count) and the
 * tolerance is count * T, so from an empty counter exactly count takes pass
 * at once and then one per T: never more than count per period.  ARGV[3]
 * takes are asked at once (a batch of one loop round, store.c): take j
 * (1-based) passes when tat + j * T - now <= count * T, so the first
 * floor((now + count * T - tat) / T) of them pass (none past ARGV[3]): the
 * same as that many single takes at this instant, in order.  The answer is
 * {takes granted, ms until the next one could pass (0 when all passed)}.
 * Every value is an integer below 2^53 (microseconds, T at most a period),
 * so the arithmetic is exact.  The TAT is written with %.0f (Lua 5.1's
 * tostring keeps only 14 digits) and expires when the bucket would be full
 * again.  A value that is not a number (a Redis written by someone else) is
 * a script error: the take fails closed.
 */
static const char rate_lua[] =
	"if redis.replicate_commands then redis.replicate_commands() end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local n = tonumber(ARGV[1])\n"
	"local tt = math.ceil(tonumber(ARGV[2]) * 1000000 / n)\n"
	"local want = tonumber(ARGV[3])\n"
	"local v = redis.call('GET', KEYS[1])\n"
	"local tat = now\n"
	"if v then tat = tonumber(v) if tat == nil then return redis.error_reply('ERR sluice: counter is not a number') end end\n"
	"if tat < now then tat = now end\n"
	"local k = math.floor((now + n * tt - tat) / tt)\n"
	"if k > want then k = want end\n"
	"if k < 0 then k = 0 end\n"
	"if k > 0 then\n"
	"  tat = tat + k * tt\n"
	"  redis.call('SET', KEYS[1], string.format('%.0f', tat), 'PX', math.ceil((tat - now) / 1000))\n"
	"end\n"
	"if k == want then return {k, 0} end\n"
	"return {k, math.ceil((tat + tt - now - n * tt) / 1000)}\n";

/*
 * A fixed window of Redis's TIME: the key is KEYS[1] .. ':' .. start.  The
 * sum is compared before INCRBY (both exact below 2^53, see store.h), and
 * INCRBY gets the amount as the caller's decimal text.
 */
static const char take_lua[] =
	"if redis.replicate_commands then redis.replicate_commands() end\n"
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1])\n"
	"local per = tonumber(ARGV[3])\n"
	"local w = now - (now % per)\n"
	"local k = KEYS[1] .. ':' .. string.format('%.0f', w)\n"
	"local left = (w + per - now) * 1000 - math.floor(tonumber(t[2]) / 1000)\n"
	"local v = redis.call('GET', k)\n"
	"local c = 0\n"
	"if v then c = tonumber(v) if c == nil then return redis.error_reply('ERR sluice: counter is not a number') end end\n"
	"if c + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return {0, left, w} end\n"
	"redis.call('INCRBY', k, ARGV[1])\n"
	"redis.call('EXPIREAT', k, w + per + tonumber(ARGV[4]))\n"
	"return {1, left, w}\n";

/* DECRBY of a window that still exists, floored at 0 by adding back (INCRBY keeps the expiry). */
static const char refund_lua[] =
	"local k = KEYS[1] .. ':' .. ARGV[2]\n"
	"if redis.call('EXISTS', k) == 0 then return {0} end\n"
	"local n = redis.call('DECRBY', k, ARGV[1])\n"
	"if n < 0 then redis.call('INCRBY', k, -n) end\n"
	"return {1}\n";

const char *
store_script_text(enum store_script sc)
{
	switch (sc) {
	case STORE_SCRIPT_RATE:
		return rate_lua;
	case STORE_SCRIPT_TAKE:
		return take_lua;
	case STORE_SCRIPT_REFUND:
		return refund_lua;
	default:
		return "";
	}
}

const char *
store_outcome_str(enum store_outcome o)
{
	switch (o) {
	case STORE_ALLOWED:
		return "allowed";
	case STORE_REFUSED:
		return "refused";
	case STORE_ETIMEOUT:
		return "the store did not answer in time";
	case STORE_EDOWN:
		return "the store cannot be reached";
	case STORE_EREPLY:
		return "the store answered with an error or an unexpected reply";
	case STORE_EUNSAFE:
		return "the store may evict keys (maxmemory-policy is not noeviction)";
	case STORE_EINVAL:
		return "the counter cannot be kept in the store (key or amount out of bounds)";
	case STORE_EBUSY:
		return "too many operations waiting for the store";
	case STORE_ESHUTDOWN:
		return "the store was shut down";
	case STORE_ENOSCRIPT:
		return "the store lost its scripts";
	}
	return "unknown store outcome";
}

/* Element <i> of the array <r> as an integer in <lo>..<hi>: 0 and *<v>, or -1. */
static int
elem_int(const redisReply *r, size_t i, long long lo, long long hi, long long *v)
{
	const redisReply *e;

	if (i >= r->elements || r->element == NULL || (e = r->element[i]) == NULL || e->type != REDIS_REPLY_INTEGER ||
	    e->integer < lo || e->integer > hi)
		return -1;
	*v = e->integer;
	return 0;
}

static int
is_error_prefix(const redisReply *r, const char *lit)
{
	size_t n = strlen(lit);

	return r->type == REDIS_REPLY_ERROR && r->str != NULL && r->len >= n && memcmp(r->str, lit, n) == 0;
}

enum store_outcome
store_reply_script(enum store_script sc, uint32_t bound, const redisReply *r, struct store_result *out)
{
	static const size_t want[STORE_NSCRIPT] = {2, 3, 1};
	long long a, b, w;

	memset(out, 0, sizeof(*out));
	out->outcome = STORE_EREPLY;
	if (r == NULL)
		return out->outcome = STORE_EDOWN;
	if (is_error_prefix(r, "NOSCRIPT"))
		return out->outcome = STORE_ENOSCRIPT;
	if ((unsigned)sc >= STORE_NSCRIPT || r->type != REDIS_REPLY_ARRAY || r->elements != want[sc])
		return out->outcome;
	if (sc == STORE_SCRIPT_RATE) {
		/* {granted, retry_ms}: granted of <bound> takes asked; a retry only when some were refused */
		if (bound < 1 || bound > STORE_BATCH_MAX || elem_int(r, 0, 0, bound, &a) != 0 ||
		    elem_int(r, 1, 0, (long long)STORE_RETRY_MAX_MS, &b) != 0 || (a == bound && b != 0))
			return out->outcome;
		out->granted = (uint32_t)a;
		out->retry_after_ms = a == bound ? 0 : (uint64_t)b;
		return out->outcome = a > 0 ? STORE_ALLOWED : STORE_REFUSED;
	}
	if (elem_int(r, 0, 0, 1, &a) != 0)
		return out->outcome;
	switch (sc) {
	case STORE_SCRIPT_TAKE:  /* <bound> is the budget's period_s */
		if (bound == 0 || elem_int(r, 1, 0, (long long)bound * 1000, &b) != 0 ||
		    elem_int(r, 2, 0, INT64_MAX, &w) != 0 || w % bound != 0)
			return out->outcome;
		out->retry_after_ms = (uint64_t)b;
		out->window_s = (uint64_t)w;
		break;
	case STORE_SCRIPT_REFUND:
		a = 1;  /* refunded, or nothing left to refund: either way done */
		break;
	default:
		return out->outcome;
	}
	return out->outcome = a == 1 ? STORE_ALLOWED : STORE_REFUSED;
}

int
store_reply_ok(const redisReply *r)
{
	if (r == NULL)
		return STORE_EDOWN;
	if (r->type == REDIS_REPLY_STATUS && r->str != NULL && r->len == 2 && memcmp(r->str, "OK", 2) == 0)
		return 0;
	return STORE_EREPLY;
}

int
store_reply_sha(const redisReply *r, char sha[STORE_SHA_LEN + 1])
{
	size_t i;

	if (r == NULL)
		return STORE_EDOWN;
	if (r->type != REDIS_REPLY_STRING || r->str == NULL || r->len != STORE_SHA_LEN)
		return STORE_EREPLY;
	for (i = 0; i < STORE_SHA_LEN; i++)
		if (!((r->str[i] >= '0' && r->str[i] <= '9') || (r->str[i] >= 'a' && r->str[i] <= 'f')))
			return STORE_EREPLY;
	memcpy(sha, r->str, STORE_SHA_LEN);
	sha[STORE_SHA_LEN] = '\0';
	return 0;
}

static enum store_evict
evict_of(const char *v, size_t len, char *val, size_t cap)
{
	log_escape(val, cap, v, len);
	return len == 10 && memcmp(v, "noeviction", 10) == 0 ? STORE_EVICT_NO : STORE_EVICT_YES;
}

enum store_evict
store_reply_config_evict(const redisReply *r, char *val, size_t cap)
{
	const redisReply *k, *v;

	if (cap > 0)
		val[0] = '\0';
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 2 || r->element == NULL)
		return STORE_EVICT_UNKNOWN;
	k = r->element[0];
	v = r->element[1];
	if (k == NULL || v == NULL || k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
	    k->str == NULL || v->str == NULL || k->len != 16 || memcmp(k->str, "maxmemory-policy", 16) != 0)
		return STORE_EVICT_UNKNOWN;
	return evict_of(v->str, v->len, val, cap);
}

enum store_evict
store_reply_info_evict(const redisReply *r, char *val, size_t cap)
{
	static const char field[] = "maxmemory_policy:";
	const size_t flen = sizeof(field) - 1;
	size_t i = 0;

	if (cap > 0)
		val[0] = '\0';
	if (r == NULL || (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_STATUS) || r->str == NULL)
		return STORE_EVICT_UNKNOWN;
	/* line by line: the field only counts at the start of a line */
	while (i < r->len) {
		const char *line = r->str + i, *nl = memchr(line, '\n', r->len - i);
		size_t n = nl != NULL ? (size_t)(nl - line) : r->len - i;

		i += n + 1;
		if (n > 0 && line[n - 1] == '\r')
			n--;
		if (n >= flen && memcmp(line, field, flen) == 0)
			return evict_of(line + flen, n - flen, val, cap);
	}
	return STORE_EVICT_UNKNOWN;
}

static redisReplyObjectFunctions bounded_fns;
static void *(*default_array)(const redisReadTask *, int);
static pthread_once_t fns_once = PTHREAD_ONCE_INIT;

/* hiredis's array, unless it declares more elements than any answer of ours has. */
static void *
bounded_array(const redisReadTask *task, int elements)
{
	if (elements < 0 || elements > STORE_REPLY_ARRAY_MAX)
		return NULL;
	return default_array(task, elements);
}

static void
fns_init(void)
{
	redisReader *r = redisReaderCreate();  /* the defaults are static in hiredis: copied from a reader */

	if (r == NULL)
		return;
	bounded_fns = *r->fn;
	default_array = bounded_fns.createArray;
	bounded_fns.createArray = bounded_array;
	redisReaderFree(r);
}

redisReplyObjectFunctions *
store_reply_fns(void)
{
	pthread_once(&fns_once, fns_init);
	return default_array != NULL ? &bounded_fns : NULL;
}

int
store_reply_message(const redisReply *r, const char *chan, size_t chanlen, const char **p, size_t *n)
{
	const redisReply *k, *c, *v;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != 3 || r->element == NULL)
		return -1;
	k = r->element[0];
	c = r->element[1];
	v = r->element[2];
	if (k == NULL || c == NULL || v == NULL || k->type != REDIS_REPLY_STRING || c->type != REDIS_REPLY_STRING ||
	    c->len != chanlen || memcmp(c->str, chan, chanlen) != 0)
		return -1;
	if (k->len == 9 && memcmp(k->str, "subscribe", 9) == 0)
		return v->type == REDIS_REPLY_INTEGER ? 0 : -1;
	if (k->len != 7 || memcmp(k->str, "message", 7) != 0 || v->type != REDIS_REPLY_STRING || v->len > FLEET_REC_MAX)
		return -1;
	*p = v->str;
	*n = v->len;
	return 1;
}

long
store_reply_ids(const redisReply *r, size_t max, char (*ids)[FLEET_ID_LEN + 1])
{
	size_t i, j, n = 0;

	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements > max || (r->elements > 0 && r->element == NULL))
		return -1;
	for (i = 0; i < r->elements; i++) {
		const redisReply *e = r->element[i];

		if (e == NULL || e->type != REDIS_REPLY_STRING || e->len != FLEET_ID_LEN)
			continue;
		for (j = 0; j < FLEET_ID_LEN && ((e->str[j] >= '0' && e->str[j] <= '9') || (e->str[j] >= 'a' && e->str[j] <= 'f'));
		     j++)
			;
		if (j < FLEET_ID_LEN)
			continue;
		memcpy(ids[n], e->str, FLEET_ID_LEN);
		ids[n++][FLEET_ID_LEN] = '\0';
	}
	return (long)n;
}

int
store_reply_mget(const redisReply *r, size_t n)
{
	return r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == n && (n == 0 || r->element != NULL) ? 0 : -1;
}

int
store_reply_mget_at(const redisReply *r, size_t i, const char **p, size_t *len)
{
	const redisReply *e = i < r->elements ? r->element[i] : NULL;

	if (e == NULL)
		return -1;
	if (e->type == REDIS_REPLY_NIL)
		return 0;
	if (e->type != REDIS_REPLY_STRING || e->len > FLEET_REC_MAX || (e->len > 0 && e->str == NULL))
		return -1;
	*p = e->str;
	*len = e->len;
	return 1;
}

int
store_reply_set_nx(const redisReply *r)
{
	if (r == NULL)
		return -1;
	if (r->type == REDIS_REPLY_NIL)
		return 0;
	return r->type == REDIS_REPLY_STATUS && r->len == 2 && memcmp(r->str, "OK", 2) == 0 ? 1 : -1;
}
