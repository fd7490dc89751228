/*
 * proxy/judge/limits.c - the counters of rate limits and budgets: token buckets
 * and fixed UTC windows, sharded under one mutex per shard.
 *
 * Token bucket arithmetic, in integers: tokens are kept in thousandths; a
 * bucket of <count> tokens per <period_s> seconds refills <count>/<period_s>
 * thousandths per millisecond.  A refill credits floor((elapsed * count +
 * frac) / period_s) thousandths and keeps the remainder in frac, so a
 * fraction is never lost nor granted twice however often the bucket is
 * looked at (the remainder, under a thousandth, is not saved to the file).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "limits_int.h"

uint32_t
limits_hash(enum limits_kind kind, const char *key, const char *sandbox)
{
	uint32_t h = 2166136261u;
	const unsigned char *p;

	h = (h ^ (uint32_t)kind) * 16777619u;
	for (p = (const unsigned char *)key; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	h = (h ^ 0xffu) * 16777619u;  /* a separator no key byte can be confused with (NUL is not allowed) */
	for (p = (const unsigned char *)sandbox; *p != '\0'; p++)
		h = (h ^ *p) * 16777619u;
	h ^= h >> 15;
	return h;
}

static struct limits_shard *
shard_of(struct limits *l, uint32_t h)
{
	return &l->shards[h % LIMITS_SHARDS];
}

struct limits_ctr *
limits_find(struct limits *l, uint32_t h, enum limits_kind kind, const char *key, const char *sandbox)
{
	struct limits_ctr *c;

	for (c = shard_of(l, h)->b[(h / LIMITS_SHARDS) % LIMITS_BUCKETS]; c != NULL; c = c->next)
		if (c->hash == h && c->kind == kind && strcmp(c->key, key) == 0 && strcmp(c->sandbox, sandbox) == 0)
			return c;
	return NULL;
}

struct limits_ctr *
limits_insert(struct limits *l, uint32_t h, enum limits_kind kind, const char *key, const char *sandbox)
{
	size_t kl = strlen(key), sl = strlen(sandbox);
	struct limits_ctr *c = xcalloc(1, sizeof(*c) + kl + 1 + sl + 1);
	struct limits_shard *s = shard_of(l, h);
	unsigned b = (h / LIMITS_SHARDS) % LIMITS_BUCKETS;

	memcpy(c->key, key, kl + 1);
	c->sandbox = c->key + kl + 1;
	memcpy(c->sandbox, sandbox, sl + 1);
	c->hash = h;
	c->kind = kind;
	c->next = s->b[b];
	s->b[b] = c;
	return c;
}

static uint64_t
period_ms(const struct limits_ctr *c)
{
	return (uint64_t)(c->period_s != 0 ? c->period_s : LIMITS_PERIOD_UNKNOWN_S) * 1000u;
}

int
limits_expired(const struct limits_ctr *c, uint64_t now_ms)
{
	/* a bucket refills completely within one period; a window ends after one */
	return now_ms >= c->ms && now_ms - c->ms >= period_ms(c);
}

struct limits *
limits_alloc(void)
{
	struct limits *l = xcalloc(1, sizeof(*l));
	unsigned i;

	for (i = 0; i < LIMITS_SHARDS; i++)
		pthread_mutex_init(&l->shards[i].mu, NULL);
	atomic_init(&l->n, 0);
	atomic_init(&l->changes, 0);
	atomic_init(&l->unsaveable, 0);
	return l;
}

void
limits_free(struct limits *l)
{
	struct limits_ctr *c;
	unsigned i, b;

	if (l == NULL)
		return;
	for (i = 0; i < LIMITS_SHARDS; i++) {
		for (b = 0; b < LIMITS_BUCKETS; b++)
			while ((c = l->shards[i].b[b]) != NULL) {
				l->shards[i].b[b] = c->next;
				free(c);
			}
		pthread_mutex_destroy(&l->shards[i].mu);
	}
	free(l->path);
	free(l->tmp);
	free(l->dir);
	free(l);
}

/* The counter's sandbox: "*" when global, "?" for a client without a name (or a name that is "*"). */
static const char *
sandbox_of(enum policy_scope scope, const char *sandbox)
{
	if (scope == POLICY_SCOPE_GLOBAL)
		return LIMITS_GLOBAL;
	if (sandbox == NULL || strcmp(sandbox, LIMITS_GLOBAL) == 0)
		return LIMITS_NOBODY;
	return sandbox;
}

static int
names_ok(const char *key, const char *sandbox)
{
	if (key == NULL || key[0] == '\0')
		return SLUICE_EINVAL;
	if (strnlen(key, LIMITS_KEY_MAX + 1) > LIMITS_KEY_MAX || strnlen(sandbox, LIMITS_SANDBOX_MAX + 1) > LIMITS_SANDBOX_MAX)
		return SLUICE_ETOOBIG;
	return 0;
}

/*
 * The counter (found or made) with its shard locked: 0, or a negative
 * SLUICE_E* with nothing locked.  *<made> is 1 for a new counter.
 */
static int
get_locked(struct limits *l, enum limits_kind kind, const char *key, const char *sandbox, struct limits_ctr **out,
           int *made)
{
	uint32_t h = limits_hash(kind, key, sandbox);
	struct limits_shard *s = shard_of(l, h);
	struct limits_ctr *c;

	*made = 0;
	pthread_mutex_lock(&s->mu);
	c = limits_find(l, h, kind, key, sandbox);
	if (c == NULL) {
		if (atomic_fetch_add(&l->n, 1) >= LIMITS_COUNTERS_MAX) {
			atomic_fetch_sub(&l->n, 1);
			pthread_mutex_unlock(&s->mu);
			return SLUICE_ETOOBIG;
		}
		c = limits_insert(l, h, kind, key, sandbox);
		*made = 1;
	}
	*out = c;
	return 0;
}

static void
unlock(struct limits *l, const struct limits_ctr *c)
{
	pthread_mutex_unlock(&shard_of(l, c->hash)->mu);
}

static void
changed(struct limits *l)
{
	atomic_fetch_add_explicit(&l->changes, 1, memory_order_relaxed);
}

/* Whole seconds (at least 1) covering <ms>. */
static unsigned
seconds_of(uint64_t ms)
{
	uint64_t s = (ms + 999) / 1000;

	if (s < 1)
		s = 1;
	return s > UINT_MAX ? UINT_MAX : (unsigned)s;
}

/* Refills <c> (count, period_s known) up to <now_ms>; c->frac carries the part of a thousandth not yet credited. */
static void
refill(struct limits_ctr *c, uint64_t now_ms)
{
	int64_t cap = (int64_t)c->count * 1000;
	uint64_t e, num, add;

	if (c->val >= cap || (now_ms > c->ms && now_ms - c->ms >= (uint64_t)c->period_s * 1000u)) {
		c->val = cap;
		c->frac = 0;
		if (now_ms > c->ms)
			c->ms = now_ms;
		return;
	}
	if (now_ms <= c->ms)
		return;  /* no time passed, or the clock stepped back: no credit */
	e = now_ms - c->ms;
	num = e * c->count + c->frac;   /* e < 86400000 and count < 2^32: below 2^59 */
	add = num / c->period_s;
	c->frac = (uint32_t)(num % c->period_s);
	c->ms = now_ms;
	if ((int64_t)add >= cap - c->val) {
		c->val = cap;
		c->frac = 0;
	} else {
		c->val += (int64_t)add;
	}
}

/* The rate of <c> is now <lim>'s (a reload may change it): a bucket over its new size is cut to it. */
static void
set_rate(struct limits_ctr *c, const struct policy_limit *lim, uint64_t now_ms, int made)
{
	int64_t cap = (int64_t)lim->count * 1000;

	if (made) {
		c->val = cap;
		c->ms = now_ms;
	} else if (c->count == 0) {
		/* read from the file: its time is when the tokens were counted */
		if (c->val > cap)
			c->val = cap;
	}
	if (c->count != lim->count || c->period_s != lim->period_s)
		c->frac = 0;
	c->count = lim->count;
	c->period_s = lim->period_s;
	if (c->val > cap)
		c->val = cap;
}

int
limits_rate_take(struct limits *l, const struct policy_limit *lim, const char *sandbox, uint64_t now_ms,
                 unsigned *retry_after_s)
{
	struct limits_ctr *c;
	const char *sb;
	uint64_t need, at;
	int made, ret;

	if (l == NULL || lim == NULL || lim->count == 0 || lim->period_s == 0 || retry_after_s == NULL)
		return SLUICE_EINVAL;
	sb = sandbox_of(lim->scope, sandbox);
	if ((ret = names_ok(lim->key, sb)) != 0)
		return ret;
	if (atomic_load_explicit(&l->unsaveable, memory_order_relaxed))
		return SLUICE_EIO;
	if ((ret = get_locked(l, LIMITS_RATE, lim->key, sb, &c, &made)) != 0)
		return ret;
	set_rate(c, lim, now_ms, made);
	refill(c, now_ms);
	if (c->val >= 1000) {
		c->val -= 1000;
		changed(l);
		unlock(l, c);
		return 0;
	}
	/* the whole token is there at c->ms + the time the missing part takes (c->frac of it is there already) */
	need = (uint64_t)(1000 - c->val) * c->period_s - c->frac;
	at = c->ms + (need + c->count - 1) / c->count;
	*retry_after_s = seconds_of(at > now_ms ? at - now_ms : 0);
	if (made)
		changed(l);
	unlock(l, c);
	return 1;
}

/* Moves <c> to the window holding <now_ms> (period <p> ms): the sum of an earlier window is forgotten. */
static void
window_at(struct limits_ctr *c, uint64_t now_ms, uint64_t p, int made)
{
	uint64_t cur = now_ms - now_ms % p;

	if (made || c->ms < cur) {
		c->ms = cur;
		c->val = 0;
	} else if (c->ms < cur + p) {
		c->ms = cur;   /* the same window, also when the period changed to a longer one */
	}
	/* else: a later window (the clock stepped back): it goes on until its own end */
}

int
limits_budget_take(struct limits *l, const struct policy_budget *b, const char *sandbox, int64_t amount,
                   uint64_t now_ms, unsigned *retry_after_s)
{
	struct limits_ctr *c;
	const char *sb;
	uint64_t p;
	int made, ret;

	if (l == NULL || b == NULL || b->period_s == 0 || b->max < 0 || amount < 0 || retry_after_s == NULL)
		return SLUICE_EINVAL;
	sb = sandbox_of(b->scope, sandbox);
	if ((ret = names_ok(b->key, sb)) != 0)
		return ret;
	if (atomic_load_explicit(&l->unsaveable, memory_order_relaxed))
		return SLUICE_EIO;
	if ((ret = get_locked(l, LIMITS_BUDGET, b->key, sb, &c, &made)) != 0)
		return ret;
	p = (uint64_t)b->period_s * 1000u;
	window_at(c, now_ms, p, made);
	c->period_s = b->period_s;
	if (amount <= b->max - c->val) {   /* c->val <= max <= POLICY_AMOUNT_MAX: no overflow */
		c->val += amount;
		changed(l);
		unlock(l, c);
		return 0;
	}
	*retry_after_s = seconds_of(c->ms + p > now_ms ? c->ms + p - now_ms : 0);
	if (made)
		changed(l);
	unlock(l, c);
	return 1;
}

void
limits_budget_refund(struct limits *l, const struct policy_budget *b, const char *sandbox, int64_t amount,
                     uint64_t now_ms)
{
	struct limits_shard *s;
	struct limits_ctr *c;
	const char *sb;
	uint64_t p, cur;
	uint32_t h;

	if (l == NULL || b == NULL || b->period_s == 0 || amount <= 0)
		return;
	sb = sandbox_of(b->scope, sandbox);
	if (names_ok(b->key, sb) != 0)
		return;
	h = limits_hash(LIMITS_BUDGET, b->key, sb);
	s = shard_of(l, h);
	p = (uint64_t)b->period_s * 1000u;
	cur = now_ms - now_ms % p;
	pthread_mutex_lock(&s->mu);
	c = limits_find(l, h, LIMITS_BUDGET, b->key, sb);
	/* only into the window it was taken from: an ended window's sum is gone already */
	if (c != NULL && c->ms >= cur) {
		c->val -= amount < c->val ? amount : c->val;
		changed(l);
	}
	pthread_mutex_unlock(&s->mu);
}

int64_t
limits_peek_kind(struct limits *l, enum limits_kind kind, const char *key, const char *sandbox, uint64_t now_ms)
{
	struct limits_shard *s;
	struct limits_ctr *c, tmp;
	int64_t v = -1;
	uint32_t h;

	if (l == NULL || key == NULL || sandbox == NULL)
		return -1;
	h = limits_hash(kind, key, sandbox);
	s = shard_of(l, h);
	pthread_mutex_lock(&s->mu);
	c = limits_find(l, h, kind, key, sandbox);
	if (c != NULL) {
		tmp = *c;
		if (kind == LIMITS_RATE && tmp.count != 0)
			refill(&tmp, now_ms);
		if (kind == LIMITS_BUDGET && tmp.ms + period_ms(&tmp) <= now_ms)
			tmp.val = 0;   /* that window has ended */
		v = tmp.val;
	}
	pthread_mutex_unlock(&s->mu);
	return v;
}

int64_t
limits_peek(struct limits *l, const char *key, const char *sandbox, uint64_t now_ms)
{
	int64_t v = limits_peek_kind(l, LIMITS_BUDGET, key, sandbox, now_ms);

	return v >= 0 ? v : limits_peek_kind(l, LIMITS_RATE, key, sandbox, now_ms);
}

size_t
limits_count(struct limits *l)
{
	return l != NULL ? atomic_load(&l->n) : 0;
}

void
limits_set_unsaveable(struct limits *l, int on)
{
	if (l != NULL)
		atomic_store(&l->unsaveable, on ? 1 : 0);
}

int
limits_unsaveable(struct limits *l)
{
	return l != NULL && atomic_load(&l->unsaveable);
}

/* "<dir>/name" -> "<dir>" ("." when there is no slash, "/" for "/name"). */
static char *
dir_of(const char *path)
{
	const char *s = strrchr(path, '/');

	if (s == NULL)
		return xstrdup(".");
	if (s == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(s - path));
}

struct limits *
limits_open(const char *state_file, char *err, size_t errcap)
{
	struct limits *l = limits_alloc();
	size_t n;

	if (state_file == NULL)
		return l;
	n = strlen(state_file);
	if (n == 0 || n > 4000) {
		snprintf(err, errcap, "state file name: empty or too long");
		limits_free(l);
		return NULL;
	}
	l->path = xstrdup(state_file);
	l->tmp = xmalloc(n + 5);
	memcpy(l->tmp, state_file, n);
	memcpy(l->tmp + n, ".tmp", sizeof(".tmp"));
	l->dir = dir_of(state_file);
	if (limits_state_load(l, err, errcap) != 0) {
		limits_free(l);
		return NULL;
	}
	return l;
}

struct limits *
limits_open_buffer(const char *name, const char *buf, size_t len, char *err, size_t errcap)
{
	struct limits *l = limits_alloc();

	if (limits_state_parse(l, name, buf, len, err, errcap) != 0) {
		limits_free(l);
		return NULL;
	}
	return l;
}

long
limits_format(struct limits *l, char *out, size_t cap)
{
	char *buf = NULL;
	size_t len = 0;

	if (l == NULL || limits_state_format(l, 0, &buf, &len) != 0)
		return -1;
	if (cap > 0) {
		size_t n = len < cap - 1 ? len : cap - 1;

		memcpy(out, buf, n);
		out[n] = '\0';
	}
	free(buf);
	return (long)len;
}

int
limits_persist(struct limits *l)
{
	uint64_t seen, now;
	char *buf = NULL;
	size_t len = 0;
	int unsaveable, ret;

	if (l == NULL || l->path == NULL)
		return 0;
	seen = atomic_load(&l->changes);
	unsaveable = atomic_load(&l->unsaveable);
	if (seen == l->saved && !unsaveable && !l->failing)
		return 0;
	now = clock_wall_ms();
	if (limits_state_format(l, now, &buf, &len) != 0)
		ret = SLUICE_EIO;
	else
		ret = limits_state_write(l, buf, len);
	free(buf);
	if (ret == 0) {
		l->saved = seen;
		if (l->failing || unsaveable)
			log_info("the counters are saved to %s again", l->path);
		l->failing = 0;
		atomic_store(&l->unsaveable, 0);
		return 0;
	}
	if (!l->failing) {
		log_warn("cannot save the counters to %s (retried every second)", l->path);
		l->failing = 1;
		l->fail_since_ms = now;
	}
	if (!unsaveable && now - l->fail_since_ms >= LIMITS_UNSAVED_MAX_MS) {
		log_warnx("the counters of rate limits and budgets have not been saved for %u s: requests that take "
		          "from them are refused (503) until %s can be written", LIMITS_UNSAVED_MAX_MS / 1000, l->path);
		atomic_store(&l->unsaveable, 1);
	}
	return SLUICE_EIO;
}

void
limits_close(struct limits *l)
{
	if (l == NULL)
		return;
	if (l->path != NULL && atomic_load(&l->changes) != l->saved && limits_persist(l) != 0)
		log_warnx("the last changes of the counters were not saved to %s", l->path);
	limits_free(l);
}
