/*
 * secrets/scrub.c - one pass over a body for every needle, replacing each
 * real value (in every echo form) by its placeholder, across feed boundaries.
 *
 * The scan is Wu-Manber's: a window as long as the shortest needle (up to
 * WINDOW_MAX) slides over the input, and a table indexed by a hash of the
 * window's last two bytes says how far it may move without passing the start
 * of any needle (4 KiB, so that building a set per response stays cheap).
 * Only where it may not move does it look the position's first two bytes up
 * among the needles, longest first.  Needles shorter than 4 bytes (only
 * scrub_set_add() makes them) fall back to testing every position's first
 * two bytes against a 64 Kibit map of the needles' first two bytes.
 * Matching is leftmost-longest and replaced text is not rescanned.  A
 * position is decided only when no byte still to come can change the
 * decision, so a stream's output for any split of a body is exactly the
 * one-shot output.
 */
#include "secrets/scrub.h"
#include "scrub_int.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"

struct scrub_stream {
	const struct scrub_set *set;
	uint8_t *buf;  /* the held-back tail, then room to join it to the next input */
	size_t cap;
	size_t tlen;
};

enum { VERDICT_NONE = 0, VERDICT_MATCH = 1, VERDICT_HOLD = 2 };

static int
bit_test(const uint64_t *map, unsigned k)
{
	return (int)((map[k >> 6] >> (k & 63)) & 1);
}

static void
bit_set(uint64_t *map, unsigned k)
{
	map[k >> 6] |= (uint64_t)1 << (k & 63);
}

struct scrub_set *
scrub_set_new(void)
{
	struct scrub_set *s = xcalloc(1, sizeof(*s));

	memset(s->single, 0xff, sizeof(s->single));
	return s;
}

void
scrub_pair_wipe(struct pair *p)
{
	sluice_wipe(p->from, p->from_len);
	sluice_wipe(p->to, p->to_len);
	free(p->from);
	free(p->to);
	sluice_wipe(p, sizeof(*p));
}

void
scrub_set_free(struct scrub_set *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++)
		scrub_pair_wipe(&s->pairs[i]);
	free(s->pairs);
	free(s->order);
	free(s->buckets);
	/* The maps say which byte pairs begin a secret: wipe them too. */
	sluice_wipe(s, sizeof(*s));
	free(s);
}

size_t
scrub_set_max_len(const struct scrub_set *s)
{
	return s->max_len;
}

struct sort_ent {
	uint16_t key;
	uint32_t len;
	uint32_t idx;
};

static int
sort_ent_cmp(const void *a, const void *b)
{
	const struct sort_ent *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return x->idx < y->idx ? -1 : (x->idx > y->idx);
}

/*
 * The shift table: a window ending in two bytes of slot h may slide by
 * win - q for the smallest such distance over every needle whose first win
 * bytes hold two bytes of slot h ending at q (2 <= q <= win); by win - 1
 * when none does.  Bytes sharing a slot only make shifts shorter.
 */
static void
window_build(struct scrub_set *s)
{
	size_t i, q, min_len = SIZE_MAX;

	for (i = 0; i < s->n; i++)
		if (s->pairs[i].from_len < min_len)
			min_len = s->pairs[i].from_len;
	s->win = min_len < WINDOW_MAX ? min_len : WINDOW_MAX;
	if (s->n == 0 || s->win < WINDOW_MIN) {
		s->win = 0;
		return;
	}
	memset(s->shift, (int)(s->win - 1), sizeof(s->shift));
	for (i = 0; i < s->n; i++) {
		const uint8_t *f = s->pairs[i].from;

		for (q = 2; q <= s->win; q++) {
			unsigned k = SHIFT_SLOT(f[q - 2], f[q - 1]);

			if (s->shift[k] > s->win - q)
				s->shift[k] = (uint8_t)(s->win - q);
		}
	}
}

void
scrub_reindex(struct scrub_set *s)
{
	struct sort_ent *ents;
	size_t i, m = 0, nb = 0;
	unsigned c;

	memset(s->pair_map, 0, sizeof(s->pair_map));
	memset(s->first_map, 0, sizeof(s->first_map));
	memset(s->single, 0xff, sizeof(s->single));
	free(s->order);
	free(s->buckets);
	s->order = NULL;
	s->buckets = NULL;
	s->nbuckets = 0;
	s->max_len = 0;
	ents = xcalloc(s->n + 1, sizeof(*ents));
	for (i = 0; i < s->n; i++) {
		const struct pair *p = &s->pairs[i];

		if (p->from_len > s->max_len)
			s->max_len = p->from_len;
		if (p->from_len == 1) {
			if (s->single[p->from[0]] < 0)
				s->single[p->from[0]] = (int32_t)i;
			for (c = 0; c < 256; c++)
				bit_set(s->pair_map, (unsigned)p->from[0] << 8 | c);
			continue;
		}
		ents[m].key = (uint16_t)(p->from[0] << 8 | p->from[1]);
		ents[m].len = (uint32_t)p->from_len;
		ents[m].idx = (uint32_t)i;
		bit_set(s->pair_map, ents[m].key);
		bit_set(s->first_map, p->from[0]);
		m++;
	}
	window_build(s);
	qsort(ents, m, sizeof(*ents), sort_ent_cmp);
	s->order = xcalloc(m + 1, sizeof(*s->order));
	s->buckets = xcalloc(m + 1, sizeof(*s->buckets));
	for (i = 0; i < m; i++) {
		s->order[i] = ents[i].idx;
		if (nb == 0 || s->buckets[nb - 1].key != ents[i].key) {
			s->buckets[nb].key = ents[i].key;
			s->buckets[nb].start = (uint32_t)i;
			nb++;
		}
		s->buckets[nb - 1].count++;
	}
	s->nbuckets = nb;
	sluice_wipe(ents, (s->n + 1) * sizeof(*ents));
	free(ents);
}

/* Appends a pair without reindexing; the caller has checked the arguments. */
void
scrub_pair_push(struct scrub_set *s, const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len,
          unsigned tag)
{
	struct pair *p;

	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		struct pair *np = xcalloc(ncap, sizeof(*np));

		if (s->n > 0)
			memcpy(np, s->pairs, s->n * sizeof(*np));
		sluice_wipe(s->pairs, s->n * sizeof(*np));
		free(s->pairs);
		s->pairs = np;
		s->cap = ncap;
	}
	p = &s->pairs[s->n++];
	p->from = xmalloc(from_len);
	memcpy(p->from, from, from_len);
	p->from_len = from_len;
	p->to = xmalloc(to_len ? to_len : 1);
	if (to_len > 0)
		memcpy(p->to, to, to_len);
	p->to_len = to_len;
	p->tag = tag;
}

int
scrub_pair_ok(const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len, unsigned tag)
{
	if (from == NULL || from_len == 0 || from_len > SCRUB_NEEDLE_MAX)
		return 0;
	if ((to == NULL && to_len > 0) || to_len > SCRUB_NEEDLE_MAX)
		return 0;
	return tag < SCRUB_TAGS;
}

int
scrub_set_add(struct scrub_set *s, const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len,
              unsigned tag)
{
	if (!scrub_pair_ok(from, from_len, to, to_len, tag))
		return SLUICE_EINVAL;
	scrub_pair_push(s, from, from_len, to, to_len, tag);
	scrub_reindex(s);
	return 0;
}

struct scrub_set *
scrub_set_dup(const struct scrub_set *s)
{
	struct scrub_set *d = scrub_set_new();
	size_t i;

	for (i = 0; i < s->n; i++)
		scrub_pair_push(d, s->pairs[i].from, s->pairs[i].from_len, s->pairs[i].to, s->pairs[i].to_len, s->pairs[i].tag);
	scrub_reindex(d);
	return d;
}

size_t
scrub_set_count(const struct scrub_set *s)
{
	return s->n;
}

int
scrub_hits_first(const struct scrub_hits *h)
{
	size_t k;

	for (k = 0; k < SCRUB_TAGS / 64; k++)
		if (h->w[k] != 0)
			return (int)(k * 64 + (size_t)__builtin_ctzll(h->w[k]));
	return -1;
}

void
scrub_hits_or(struct scrub_hits *dst, const struct scrub_hits *src)
{
	size_t k;

	for (k = 0; k < SCRUB_TAGS / 64; k++)
		dst->w[k] |= src->w[k];
}

/* ---- the scan ---- */

static const struct bucket *
bucket_find(const struct scrub_set *s, unsigned key)
{
	size_t lo = 0, hi = s->nbuckets;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->buckets[mid].key == key)
			return &s->buckets[mid];
		if (s->buckets[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/*
 * What happens at <buf>[i] (i < n): the longest needle there (MATCH, *pi),
 * none (NONE), or HOLD when bytes past <n> could still make a longer needle
 * match there (never with <final>: then there are no more bytes).
 */
static int
verdict(const struct scrub_set *s, const uint8_t *buf, size_t n, size_t i, int final, size_t *pi)
{
	size_t avail = n - i, k;
	int32_t one;

	if (avail >= 2) {
		const struct bucket *b = bucket_find(s, (unsigned)buf[i] << 8 | buf[i + 1]);

		for (k = 0; b != NULL && k < b->count; k++) {
			const struct pair *p = &s->pairs[s->order[b->start + k]];

			if (p->from_len <= avail) {
				if (memcmp(buf + i + 2, p->from + 2, p->from_len - 2) == 0) {
					*pi = s->order[b->start + k];
					return VERDICT_MATCH;
				}
			} else if (!final && memcmp(buf + i + 2, p->from + 2, avail - 2) == 0) {
				return VERDICT_HOLD;
			}
		}
	} else if (!final && bit_test(s->first_map, buf[i])) {
		return VERDICT_HOLD;
	}
	one = s->single[buf[i]];
	if (one >= 0) {
		*pi = (size_t)one;
		return VERDICT_MATCH;
	}
	return VERDICT_NONE;
}

static int
emit(struct evbuffer *out, const uint8_t *p, size_t len)
{
	if (len == 0 || out == NULL)
		return 0;  /* no <out>: a search, the bytes are not wanted */
	return evbuffer_add(out, p, len) == 0 ? 0 : SLUICE_ENOMEM;
}

/*
 * Scrubs <buf>/<n> from <start>, deciding every position below <limit>, into
 * <out>.  *stop is where it stopped: at or past <limit> (a needle may run
 * past it), or below it at the first undecided position (only without
 * <final>); the bytes from *stop on are not written.
 */
static int
scan(const struct scrub_set *s, const uint8_t *buf, size_t n, size_t start, size_t limit, int final,
     struct evbuffer *out, struct scrub_hits *hits, size_t *stop)
{
	const uint64_t *map = s->pair_map;
	size_t i = start, run = start, pi = 0, end;
	int v, ret;

	*stop = start;
	if (n == 0)
		return 0;
	end = limit < n ? limit : n - 1;  /* positions with a second byte, below <limit> */
	if (limit > n)
		limit = n;
	while (i < limit) {
		if (s->win != 0 && i + s->win <= n) {
			const size_t w2 = s->win - 2;

			while (i < limit && i + s->win <= n) {
				unsigned sh = s->shift[SHIFT_SLOT(buf[i + w2], buf[i + w2 + 1])];

				if (sh == 0) {
					if (bit_test(map, (unsigned)buf[i] << 8 | buf[i + 1]))
						break;
					sh = 1;
				}
				i += sh;
			}
			if (i >= limit)
				break;
			if (i + s->win > n)
				continue;  /* the last few positions: the bitmap below */
		} else if (i < end) {
			/* The hot loop: two bytes, one bit test. */
			while (i + 4 <= end) {
				unsigned k0 = (unsigned)buf[i] << 8 | buf[i + 1];
				unsigned k1 = (unsigned)buf[i + 1] << 8 | buf[i + 2];
				unsigned k2 = (unsigned)buf[i + 2] << 8 | buf[i + 3];
				unsigned k3 = (unsigned)buf[i + 3] << 8 | buf[i + 4];

				if (bit_test(map, k0) | bit_test(map, k1) | bit_test(map, k2) | bit_test(map, k3))
					break;
				i += 4;
			}
			while (i < end && !bit_test(map, (unsigned)buf[i] << 8 | buf[i + 1]))
				i++;
			if (i >= limit)
				break;  /* nothing up to <limit>; else i is a candidate, or n - 1 */
		}
		v = verdict(s, buf, n, i, final, &pi);
		if (v == VERDICT_NONE) {
			i++;
			continue;
		}
		if (v == VERDICT_HOLD)
			break;
		if ((ret = emit(out, buf + run, i - run)) != 0 ||
		    (ret = emit(out, s->pairs[pi].to, s->pairs[pi].to_len)) != 0)
			return ret;
		if (hits != NULL)
			hits->w[s->pairs[pi].tag >> 6] |= (uint64_t)1 << (s->pairs[pi].tag & 63);
		i += s->pairs[pi].from_len;
		run = i;
	}
	*stop = i;
	return emit(out, buf + run, i - run);
}

int
scrub_buffer(const struct scrub_set *set, const uint8_t *in, size_t len, struct evbuffer *out,
             struct scrub_hits *hits)
{
	size_t stop;

	if (set->n == 0 || len == 0)
		return emit(out, in, len);
	return scan(set, in, len, 0, len, 1, out, hits, &stop);
}

struct scrub_stream *
scrub_stream_new(const struct scrub_set *set)
{
	struct scrub_stream *st = xcalloc(1, sizeof(*st));

	st->set = set;
	return st;
}

void
scrub_stream_free(struct scrub_stream *st)
{
	if (st == NULL)
		return;
	sluice_wipe(st->buf, st->cap);
	free(st->buf);
	free(st);
}

size_t
scrub_stream_held(const struct scrub_stream *st)
{
	return st->tlen;
}

/* Room for a tail and the input joined to it: twice the longest needle. */
static int
stream_reserve(struct scrub_stream *st)
{
	size_t want = 2 * st->set->max_len;
	uint8_t *nb;

	if (st->cap >= want)
		return 0;
	nb = try_malloc(want);
	if (nb == NULL)
		return SLUICE_ENOMEM;
	if (st->tlen > 0)
		memcpy(nb, st->buf, st->tlen);
	sluice_wipe(st->buf, st->cap);
	free(st->buf);
	st->buf = nb;
	st->cap = want;
	return 0;
}

int
scrub_stream_feed(struct scrub_stream *st, const uint8_t *in, size_t len, struct evbuffer *out,
                  struct scrub_hits *hits)
{
	const struct scrub_set *s = st->set;
	size_t take, n, p, q = 0, r;
	int ret;

	if (s->n == 0 && st->tlen == 0)
		return emit(out, in, len);
	if ((ret = stream_reserve(st)) != 0)
		return ret;
	if (st->tlen > 0) {
		/*
		 * Join the tail to enough input that every tail position is
		 * decided (a needle is at most max_len long), unless the input
		 * ends first.
		 */
		take = len < s->max_len ? len : s->max_len;
		if (take > 0)
			memcpy(st->buf + st->tlen, in, take);
		n = st->tlen + take;
		if ((ret = scan(s, st->buf, n, 0, st->tlen, 0, out, hits, &p)) != 0)
			return ret;
		if (p < st->tlen) {
			/* Undecided within the tail: then the input is all in buf. */
			memmove(st->buf, st->buf + p, n - p);
			sluice_wipe(st->buf + (n - p), p);
			st->tlen = n - p;
			return 0;
		}
		q = p - st->tlen;
		sluice_wipe(st->buf, n);
		st->tlen = 0;
	}
	if ((ret = scan(s, in, len, q, len, 0, out, hits, &r)) != 0)
		return ret;
	if (r < len) {
		memcpy(st->buf, in + r, len - r);
		st->tlen = len - r;
	}
	return 0;
}

int
scrub_stream_end(struct scrub_stream *st, struct evbuffer *out, struct scrub_hits *hits)
{
	size_t p;
	int ret = 0;

	if (st->tlen > 0) {
		ret = scan(st->set, st->buf, st->tlen, 0, st->tlen, 1, out, hits, &p);
		sluice_wipe(st->buf, st->tlen);
		st->tlen = 0;
	}
	return ret;
}
