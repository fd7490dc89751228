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

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"

struct pair {
	uint8_t *from;
	uint8_t *to;
	size_t from_len;
	size_t to_len;
	unsigned tag;
};

/* The needles (of two bytes or more) sharing one first-two-byte key. */
struct bucket {
	uint16_t key;
	uint32_t start;  /* into order[] */
	uint32_t count;
};

#define WINDOW_MAX 32  /* the longest window; shifts fit a byte */
#define WINDOW_MIN 4   /* shorter needles: no window, a bitmap test at every position */
#define SHIFT_BITS 12  /* the shift table's index: a hash of two bytes */

/* Two bytes to a shift-table slot (the first byte's high nibble is folded in). */
#define SHIFT_SLOT(b0, b1) ((((unsigned)(b0) << 4) ^ (unsigned)(b1)) & ((1u << SHIFT_BITS) - 1))

struct scrub_set {
	struct pair *pairs;
	size_t n;
	size_t cap;
	size_t max_len;
	/* The index, rebuilt after every add. */
	uint64_t pair_map[65536 / 64];  /* first two bytes of a needle; every (c, *) for a one-byte needle c */
	uint64_t first_map[4];          /* first byte of a needle of two bytes or more */
	int32_t single[256];            /* the one-byte needle c, or -1 */
	uint32_t *order;                /* pair indices: by key, then longest first, then first added */
	struct bucket *buckets;         /* sorted by key */
	size_t nbuckets;
	size_t win;                     /* the window, or 0 */
	uint8_t shift[1u << SHIFT_BITS]; /* by SHIFT_SLOT of a window's last two bytes: how far it may slide */
};

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

static void
pair_wipe(struct pair *p)
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
		pair_wipe(&s->pairs[i]);
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

static void
reindex(struct scrub_set *s)
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
static void
pair_push(struct scrub_set *s, const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len,
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

static int
pair_ok(const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len, unsigned tag)
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
	if (!pair_ok(from, from_len, to, to_len, tag))
		return SLUICE_EINVAL;
	pair_push(s, from, from_len, to, to_len, tag);
	reindex(s);
	return 0;
}

/* ---- the echo forms of a value ---- */

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Standard base64 of <in> with '=' padding into <out> (room for 4 * ceil(n / 3)); returns its length. */
static size_t
b64_encode(const uint8_t *in, size_t n, uint8_t *out)
{
	size_t i, o = 0;

	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];

		out[o++] = (uint8_t)b64_alphabet[v >> 18];
		out[o++] = (uint8_t)b64_alphabet[(v >> 12) & 63];
		out[o++] = (uint8_t)b64_alphabet[(v >> 6) & 63];
		out[o++] = (uint8_t)b64_alphabet[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);

		out[o++] = (uint8_t)b64_alphabet[v >> 18];
		out[o++] = (uint8_t)b64_alphabet[(v >> 12) & 63];
		out[o++] = i + 1 < n ? (uint8_t)b64_alphabet[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	return o;
}

/*
 * The base64 characters of <v>/<n> placed at offset <align> (0..2) of an
 * encoded stream: those that depend on its bytes only, or with <terminal>
 * everything from the first of them to the end of a stream that ends with
 * <v> (its partial last character and padding).  <tmp> has room for
 * n + 2 bytes and <out> for 4 * ceil((n + 2) / 3).  Returns the length.
 */
static size_t
b64_form(const uint8_t *v, size_t n, unsigned align, int terminal, uint8_t *tmp, uint8_t *out)
{
	size_t first = (4 * align + 2) / 3;  /* ceil(4a / 3): the first character without a byte before <v> */
	size_t last = 4 * (align + n) / 3;   /* one past the last character without a byte after <v> */
	size_t total;

	memset(tmp, 0, align);
	memcpy(tmp + align, v, n);
	total = b64_encode(tmp, align + n, out);
	if (terminal)
		last = total;
	if (last <= first)
		return 0;
	memmove(out, out + first, last - first);
	return last - first;
}

static int
unreserved(uint8_t c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

/* Percent-encoding of <v>/<n> into <out> (room for 3n). */
static size_t
pct_form(const uint8_t *v, size_t n, int lower, uint8_t *out)
{
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (unreserved(v[i])) {
			out[o++] = v[i];
			continue;
		}
		out[o++] = '%';
		out[o++] = (uint8_t)hex[v[i] >> 4];
		out[o++] = (uint8_t)hex[v[i] & 15];
	}
	return o;
}

enum { JSON_PLAIN = 0, JSON_SLASH = 1, JSON_HTML = 2 };

/*
 * JSON string escaping of <v>/<n> into <out> (room for 6n): the short escapes
 * and \u00xx for other control bytes; JSON_SLASH also writes '/' as "\/"
 * (PHP), JSON_HTML writes < > & as \u003c \u003e \u0026 (Go).
 */
static size_t
json_form(const uint8_t *v, size_t n, int variant, uint8_t *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		uint8_t c = v[i];
		uint8_t e = 0;

		switch (c) {
		case '"': e = '"'; break;
		case '\\': e = '\\'; break;
		case '\b': e = 'b'; break;
		case '\f': e = 'f'; break;
		case '\n': e = 'n'; break;
		case '\r': e = 'r'; break;
		case '\t': e = 't'; break;
		case '/': e = variant == JSON_SLASH ? '/' : 0; break;
		default: break;
		}
		if (e != 0) {
			out[o++] = '\\';
			out[o++] = e;
		} else if (c < 0x20 || (variant == JSON_HTML && (c == '<' || c == '>' || c == '&'))) {
			memcpy(out + o, "\\u00", 4);
			out[o + 4] = (uint8_t)hex[c >> 4];
			out[o + 5] = (uint8_t)hex[c & 15];
			o += 6;
		} else {
			out[o++] = c;
		}
	}
	return o;
}

/*
 * Adds one form of a secret unless it is shorter than 8 bytes (too likely to
 * occur by chance) or the secret already has it (pairs from <first> on).
 */
static int
form_add(struct scrub_set *s, size_t first, const uint8_t *from, size_t from_len, const uint8_t *to,
         size_t to_len, unsigned tag)
{
	size_t i;

	if (from_len < 8)
		return 0;
	if (!pair_ok(from, from_len, to, to_len, tag))
		return SLUICE_EINVAL;
	for (i = first; i < s->n; i++)
		if (s->pairs[i].from_len == from_len && memcmp(s->pairs[i].from, from, from_len) == 0)
			return 0;
	pair_push(s, from, from_len, to, to_len, tag);
	return 0;
}

static int
has_byte(const uint8_t *v, size_t n, const char *set)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i] != 0 && strchr(set, v[i]) != NULL)
			return 1;
	return 0;
}

int
scrub_set_add_secret(struct scrub_set *s, const uint8_t *value, size_t vlen, const char *placeholder,
                     unsigned tag)
{
	const uint8_t *ph = (const uint8_t *)placeholder;
	size_t plen, big, first = s->n, fl, tl;
	uint8_t *tmp = NULL, *fb = NULL, *tb = NULL;
	unsigned a;
	int ret = SLUICE_EINVAL, lower, variant;

	if (value == NULL || vlen == 0 || vlen > SCRUB_NEEDLE_MAX || placeholder == NULL || tag >= SCRUB_TAGS)
		return SLUICE_EINVAL;
	plen = strlen(placeholder);
	if (plen == 0 || plen > SCRUB_NEEDLE_MAX)
		return SLUICE_EINVAL;
	big = (vlen > plen ? vlen : plen) + 8;
	tmp = xmalloc(big);
	fb = xmalloc(6 * big);
	tb = xmalloc(6 * big);

	if ((ret = form_add(s, first, value, vlen, ph, plen, tag)) != 0)
		goto out;
	for (a = 0; a < 3; a++) {
		fl = b64_form(value, vlen, a, 0, tmp, fb);
		tl = b64_form(ph, plen, a, 0, tmp, tb);
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			goto out;
		if ((a + vlen) % 3 == 0)
			continue;  /* the stream's end falls on a character boundary: no partial form */
		fl = b64_form(value, vlen, a, 1, tmp, fb);
		tl = b64_form(ph, plen, a, 1, tmp, tb);
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			goto out;
	}
	for (lower = 0; lower < 2; lower++) {
		fl = pct_form(value, vlen, lower, fb);
		tl = pct_form(ph, plen, lower, tb);
		if (fl == vlen)
			break;  /* nothing to encode: the literal already covers it */
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			goto out;
	}
	for (variant = JSON_PLAIN; variant <= JSON_HTML; variant++) {
		if (variant == JSON_SLASH && !has_byte(value, vlen, "/"))
			continue;
		if (variant == JSON_HTML && !has_byte(value, vlen, "<>&"))
			continue;
		fl = json_form(value, vlen, variant, fb);
		tl = json_form(ph, plen, variant, tb);
		if (fl == vlen && memcmp(fb, value, vlen) == 0)
			continue;
		if ((ret = form_add(s, first, fb, fl, tb, tl, tag)) != 0)
			goto out;
	}
	ret = 0;
out:
	if (ret != 0)
		while (s->n > first)
			pair_wipe(&s->pairs[--s->n]);
	reindex(s);
	sluice_wipe(tmp, big);
	sluice_wipe(fb, 6 * big);
	sluice_wipe(tb, 6 * big);
	free(tmp);
	free(fb);
	free(tb);
	return ret;
}

int
scrub_set_add_basic(struct scrub_set *s, const uint8_t *cred, size_t len, const uint8_t *cred_ph, size_t ph_len,
                    unsigned tag)
{
	uint8_t *fb, *tb;
	size_t fl, tl;
	int ret;

	if (cred == NULL || len == 0 || cred_ph == NULL || ph_len == 0 || len > SCRUB_NEEDLE_MAX / 2 ||
	    ph_len > SCRUB_NEEDLE_MAX / 2)
		return SLUICE_EINVAL;
	fb = xmalloc(4 * (len / 3 + 1));
	tb = xmalloc(4 * (ph_len / 3 + 1));
	fl = b64_encode(cred, len, fb);
	tl = b64_encode(cred_ph, ph_len, tb);
	ret = scrub_set_add(s, fb, fl, tb, tl, tag);
	sluice_wipe(fb, fl);
	sluice_wipe(tb, tl);
	free(fb);
	free(tb);
	return ret;
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
	if (len == 0)
		return 0;
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
     struct evbuffer *out, uint32_t *hits, size_t *stop)
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
			*hits |= (uint32_t)1 << s->pairs[pi].tag;
		i += s->pairs[pi].from_len;
		run = i;
	}
	*stop = i;
	return emit(out, buf + run, i - run);
}

int
scrub_buffer(const struct scrub_set *set, const uint8_t *in, size_t len, struct evbuffer *out, uint32_t *hits)
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
scrub_stream_feed(struct scrub_stream *st, const uint8_t *in, size_t len, struct evbuffer *out, uint32_t *hits)
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
scrub_stream_end(struct scrub_stream *st, struct evbuffer *out, uint32_t *hits)
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
