/*
 * tests/fuzz/fuzz_scrub.c - the scrubber on arbitrary needles, bodies and
 * splits.
 *
 * Layout: a mode byte; then needles, each a length byte and its bytes and a
 * replacement likewise (mode bit 0 clear), or one value (mode bit 0 set)
 * added with all its echo forms; then a count of cut points and their sizes;
 * the rest is the body.  The body scrubbed in the fuzzer's pieces must equal
 * the one-shot result, hits included, the held-back tail must stay under the
 * longest needle, and with plain needles both must equal a naive
 * leftmost-longest reference.  With one value, each percent-encoding an
 * encoder writes (RFC 3986 in both hex cases, encodeURIComponent, Python's
 * quote and quote_plus, WHATWG forms, PHP urlencode: an encoder written here
 * apart from the scrubber's) of 8 bytes or more must be replaced when it
 * stands alone, and the value is added with a second secret through
 * scrub_set_add_secrets at a tag past 32.
 */
#include <event2/buffer.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/sluice.h"
#include "secrets/scrub.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NEEDLES_MAX 8
#define TAG_HIGH 700   /* a tag past the old limit of 32 */

struct needle {
	const uint8_t *from, *to;
	size_t from_len, to_len;
};

/* Takes <n> bytes from the input; NULL when it runs out. */
static const uint8_t *
take(const uint8_t **p, size_t *left, size_t n)
{
	const uint8_t *r = *p;

	if (*left < n)
		return NULL;
	*p += n;
	*left -= n;
	return r;
}

/* <v> percent-encoded by encoder <style> (0..5) in <lower> hex into <out> (room for 3n); its length. */
static size_t
encode(const uint8_t *v, size_t n, int style, int lower, uint8_t *out)
{
	static const char *const keep[] = {"-._~", "-._~!'()*", "-._~/", "-._~", "*-._", "-._"};
	const char *hex = lower ? "0123456789abcdef" : "0123456789ABCDEF";
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		uint8_t c = v[i];
		int alnum = (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');

		if (alnum || (c != 0 && strchr(keep[style], c) != NULL))
			out[o++] = c;
		else if (c == ' ' && style >= 3)
			out[o++] = '+';
		else {
			out[o++] = '%';
			out[o++] = (uint8_t)hex[c >> 4];
			out[o++] = (uint8_t)hex[c & 15];
		}
	}
	return o;
}

/* Every encoding of <v> that is a form the scrubber claims (8 bytes or more) is replaced when alone in a body. */
static void
check_forms(const struct scrub_set *set, const uint8_t *v, size_t n)
{
	uint8_t body[3 * 48 + 2];
	struct evbuffer *out = evbuffer_new();
	struct scrub_hits h;
	size_t len;
	int style, lower;

	for (style = 0; style < 6; style++)
		for (lower = 0; lower < 2; lower++) {
			body[0] = '[';
			len = encode(v, n, style, lower, body + 1);
			body[1 + len] = ']';
			if (len < 8)
				continue;
			memset(&h, 0, sizeof(h));
			if (scrub_buffer(set, body, len + 2, out, &h) != 0)
				abort();
			if (scrub_hits_first(&h) < 0)
				abort();
			evbuffer_drain(out, evbuffer_get_length(out));
		}
	evbuffer_free(out);
}

static uint8_t *
flatten(struct evbuffer *b, size_t *len)
{
	*len = evbuffer_get_length(b);
	return evbuffer_pullup(b, -1);
}

/* The reference: at each position the longest needle (first added on a tie), or the byte. */
static void
reference(const struct needle *nd, size_t nn, const uint8_t *in, size_t len, struct evbuffer *out,
          struct scrub_hits *hits)
{
	size_t i = 0, k;

	while (i < len) {
		size_t best = nn;

		for (k = 0; k < nn; k++)
			if (nd[k].from_len <= len - i && memcmp(in + i, nd[k].from, nd[k].from_len) == 0 &&
			    (best == nn || nd[k].from_len > nd[best].from_len))
				best = k;
		if (best == nn) {
			evbuffer_add(out, in + i, 1);
			i++;
			continue;
		}
		evbuffer_add(out, nd[best].to, nd[best].to_len);
		hits->w[0] |= (uint64_t)1 << best;
		i += nd[best].from_len;
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *mode, *c;
	size_t left = size, nn = 0, ncuts = 0, cuts[16], i, off, l1, l2;
	struct needle nd[NEEDLES_MAX];
	struct scrub_set *set;
	struct scrub_stream *st;
	struct evbuffer *one, *str, *ref;
	struct scrub_hits h1, h2, h3;
	uint8_t *o1, *o2;

	if ((mode = take(&p, &left, 1)) == NULL)
		return 0;
	memset(&h1, 0, sizeof(h1));
	memset(&h2, 0, sizeof(h2));
	memset(&h3, 0, sizeof(h3));
	set = scrub_set_new();
	if (mode[0] & 1) {
		const uint8_t *lb = take(&p, &left, 1), *v;
		char ph[32];

		if (lb == NULL || (v = take(&p, &left, lb[0] % 48 + 1)) == NULL) {
			scrub_set_free(set);
			return 0;
		}
		memcpy(ph, "PH_placeholder_0123456789abcdef", 32);
		ph[(mode[0] >> 1) % 31 + 1] = '\0';
		if (mode[0] & 64) {
			/* the bulk path, with a second secret and a tag past 32 */
			struct scrub_secret two[2] = {{v, lb[0] % 48 + 1, ph, TAG_HIGH}, {(const uint8_t *)"other-value-xyz", 15,
			                                                                      "PH_other", 9}};
			if (scrub_set_add_secrets(set, two, 2) != 0)
				abort();
		} else if (scrub_set_add_secret(set, v, lb[0] % 48 + 1, ph, 5) != 0) {
			abort();
		}
		if (scrub_set_add_basic(set, v, lb[0] % 48 + 1, (const uint8_t *)ph, strlen(ph), 6) != 0)
			abort();
		check_forms(set, v, lb[0] % 48 + 1);
	} else {
		size_t want = (mode[0] >> 1) % NEEDLES_MAX + 1;

		while (nn < want) {
			const uint8_t *fl = take(&p, &left, 1), *f, *tl, *t;

			if (fl == NULL || (f = take(&p, &left, fl[0] % 12 + 1)) == NULL || (tl = take(&p, &left, 1)) == NULL ||
			    (t = take(&p, &left, tl[0] % 8)) == NULL)
				break;
			nd[nn].from = f;
			nd[nn].from_len = fl[0] % 12 + 1;
			nd[nn].to = t;
			nd[nn].to_len = tl[0] % 8;
			if (scrub_set_add(set, f, nd[nn].from_len, t, nd[nn].to_len, (unsigned)nn) != 0)
				abort();
			nn++;
		}
	}
	if ((c = take(&p, &left, 1)) != NULL) {
		ncuts = c[0] % 16;
		for (i = 0; i < ncuts; i++) {
			const uint8_t *b = take(&p, &left, 1);

			cuts[i] = b == NULL ? 0 : b[0];
		}
	}
	one = evbuffer_new();
	str = evbuffer_new();
	ref = evbuffer_new();
	if (scrub_buffer(set, p, left, one, &h1) != 0)
		abort();
	st = scrub_stream_new(set);
	off = 0;
	for (i = 0; i <= ncuts; i++) {
		size_t n = i == ncuts ? left - off : (cuts[i] < left - off ? cuts[i] : left - off);

		if (scrub_stream_feed(st, p + off, n, str, &h2) != 0)
			abort();
		if (scrub_set_max_len(set) > 0 && scrub_stream_held(st) >= scrub_set_max_len(set))
			abort();
		off += n;
	}
	if (scrub_stream_end(st, str, &h2) != 0 || scrub_stream_held(st) != 0)
		abort();
	o1 = flatten(one, &l1);
	o2 = flatten(str, &l2);
	if (l1 != l2 || (l1 > 0 && memcmp(o1, o2, l1) != 0) || memcmp(&h1, &h2, sizeof(h1)) != 0)
		abort();
	if (!(mode[0] & 1)) {
		/* First added wins a tie: the reference keeps the first longest it sees. */
		reference(nd, nn, p, left, ref, &h3);
		o2 = flatten(ref, &l2);
		if (l1 != l2 || (l1 > 0 && memcmp(o1, o2, l1) != 0) || memcmp(&h1, &h3, sizeof(h1)) != 0)
			abort();
	}
	scrub_stream_free(st);
	scrub_set_free(set);
	evbuffer_free(one);
	evbuffer_free(str);
	evbuffer_free(ref);
	return 0;
}
