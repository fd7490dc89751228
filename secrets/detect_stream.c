/*
 * secrets/detect_stream.c - the decoded-view placeholder search on a stream
 * (detect.h, "on a stream"): a tree of views, each fed chunk by chunk.
 *
 *   raw ──┬── percent ──┬── percent   (the second catches "%2573")
 *         │             └── JSON
 *         └── JSON ─────┬── JSON
 *                       └── percent
 *
 * (every pair of the two decodings ph_detect() stacks, PH_DETECT_DEPTH deep,
 * except that its percent step repeats to a fixpoint and here twice)
 *
 * Every view runs one scrub stream (search only: no output) over the one
 * needle set (each placeholder and its base64 / base64url forms, mapped to
 * themselves; the tag is the placeholder's index).  A view's decoder keeps
 * the bytes of an escape that is not decided yet (at most
 * PH_TOKEN_IN_MAX - 1) and decodes them with the next chunk, with the rules
 * of decode_int.h that detect.c applies to a whole place: the views of a
 * stream are exactly the whole-buffer views of everything fed, however it
 * was cut.
 *
 * Each view byte remembers the raw offset of the first byte of the token it
 * came from (the last RING of them, in a ring: the search holds back less
 * than its longest needle), so what a view still holds back, or a decoder
 * still keeps, is mapped back to the raw bytes that could still become part
 * of a placeholder: ph_stream_held() counts from the earliest of them.
 */
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "secrets/detect.h"
#include "decode_int.h"
#include "secrets/scrub.h"
#include "scrub_int.h"

#define CHUNK 4096                                  /* raw bytes decoded per round */
#define PEND_MAX (PH_TOKEN_IN_MAX - 1)              /* bytes a decoder keeps between rounds */
#define VIEW_IN_MAX (CHUNK + 2 * PEND_MAX)          /* a view's input in one round: its parent's output and
                                                       its own kept bytes (outputs never outgrow inputs) */

_Static_assert(PH_STREAM_MAX <= SCRUB_TAGS, "one needle set tags every placeholder");

enum step { STEP_RAW = 0, STEP_PCT, STEP_JSON };

/* The views, parents before children. */
static const struct view_def {
	int parent;
	enum step step;
} view_defs[] = {
	{-1, STEP_RAW},
	{0, STEP_PCT},
	{1, STEP_PCT},
	{0, STEP_JSON},
	{3, STEP_JSON},  /* a JSON string inside a JSON string: "\\u0073" */
	{1, STEP_JSON},  /* "%5Cu0073" */
	{3, STEP_PCT},   /* "\u00253" ... "\u0025" is '%' */
};
#define NVIEWS (sizeof(view_defs) / sizeof(view_defs[0]))

/* One round's bytes of a view and their raw offsets: its own, or its parent's where it decoded nothing. */
struct round {
	const uint8_t *b;
	const uint64_t *at;
	size_t n;
	uint8_t sb[VIEW_IN_MAX];
	uint64_t sat[VIEW_IN_MAX];
	size_t own;                    /* bytes of sb in use (wiped after the round) */
};

struct view {
	struct scrub_stream *st;
	uint8_t pend[PEND_MAX];        /* the decoder's undecided input */
	uint64_t pend_at[PEND_MAX];    /* its raw offsets */
	size_t npend;
	uint64_t *ring;                /* raw offset of each of the last <ring_mask> + 1 view bytes */
	uint64_t out;                  /* view bytes so far */
};

struct ph_stream {
	struct scrub_set *set;
	size_t *id;                    /* by tag: the caller's id */
	size_t n;
	size_t ring_mask;
	struct view v[NVIEWS];
	uint64_t fed;                  /* raw bytes fed */
	int started;                   /* a feed happened: the needles are fixed */
};

/*
 * The scratch of a round (about 260 KiB), one per thread: a round never
 * outlives its call, and the state that does (kept escapes, held tails, the
 * ring) is the searcher's, so a search costs no scratch between feeds.
 */
static _Thread_local struct round rounds[NVIEWS];

struct ph_stream *
ph_stream_new(void)
{
	struct ph_stream *s = xcalloc(1, sizeof(*s));
	size_t k;

	s->set = scrub_set_new();
	for (k = 0; k < NVIEWS; k++)
		s->v[k].st = scrub_stream_new(s->set);
	return s;
}

int
ph_stream_add(struct ph_stream *s, const char *ph, size_t len, size_t id)
{
	size_t k, want;
	int ret;

	if (s->started)
		return SLUICE_EINVAL;
	if (s->n == PH_STREAM_MAX)
		return SLUICE_ETOOBIG;
	if ((ret = scrub_set_add_search(s->set, ph, len, (unsigned)s->n)) != 0)
		return ret;
	s->id = xrealloc(s->id, (s->n + 1) * sizeof(*s->id));
	s->id[s->n++] = id;
	/* the ring covers what a search can hold back: under its longest needle */
	for (want = 64; want < scrub_set_max_len(s->set); want *= 2)
		;
	if (want - 1 > s->ring_mask) {
		s->ring_mask = want - 1;
		for (k = 0; k < NVIEWS; k++) {
			free(s->v[k].ring);
			s->v[k].ring = xcalloc(want, sizeof(*s->v[k].ring));
		}
	}
	return 0;
}

size_t
ph_stream_count(const struct ph_stream *s)
{
	return s->n;
}

/* Searches one round of view <k>: 1 (*tag), 0, or SLUICE_ENOMEM. */
static int
search(struct ph_stream *s, size_t k, const struct round *r, int final, int *tag)
{
	struct view *v = &s->v[k];
	struct scrub_hits hits;
	size_t i, from;

	memset(&hits, 0, sizeof(hits));
	if (r->n > 0 && scrub_stream_feed(v->st, r->b, r->n, NULL, &hits) != 0)
		return SLUICE_ENOMEM;
	if (final && scrub_stream_end(v->st, NULL, &hits) != 0)
		return SLUICE_ENOMEM;
	from = r->n > s->ring_mask + 1 ? r->n - (s->ring_mask + 1) : 0;
	for (i = from; i < r->n; i++)
		v->ring[(v->out + i) & s->ring_mask] = r->at[i];
	v->out += r->n;
	return (*tag = scrub_hits_first(&hits)) >= 0;
}

/* Decodes <in> (the parent's round) through view <k>'s step into <out>, keeping the undecided end. */
static void
decode(struct view *v, enum step step, const struct round *in, int final, struct round *out)
{
	uint8_t joint[VIEW_IN_MAX], esc = step == STEP_PCT ? '%' : '\\', *ob = out->sb;
	uint64_t jat[VIEW_IN_MAX], *oat = out->sat;
	const uint8_t *src = in->b, *e;
	const uint64_t *sat = in->at;
	size_t n = in->n, i = 0, o = 0, olen, used, m, run;
	int decoded;

	if (v->npend == 0 && (n == 0 || memchr(src, esc, n) == NULL)) {
		/* nothing to decode: the view is its parent's bytes */
		out->b = in->b;
		out->at = in->at;
		out->n = in->n;
		out->own = 0;
		return;
	}
	if (v->npend > 0) {
		memcpy(joint, v->pend, v->npend);
		memcpy(jat, v->pend_at, v->npend * sizeof(*jat));
		if (n > 0) {
			memcpy(joint + v->npend, src, n);
			memcpy(jat + v->npend, sat, n * sizeof(*jat));
		}
		n += v->npend;
		src = joint;
		sat = jat;
	}
	while (i < n) {
		e = memchr(src + i, esc, n - i);
		run = e == NULL ? n - i : (size_t)(e - (src + i));
		memcpy(ob + o, src + i, run);
		memcpy(oat + o, sat + i, run * sizeof(*oat));
		o += run;
		i += run;
		if (i == n)
			break;
		used = step == STEP_PCT ? ph_pct_token(src + i, n - i, final, ob + o, &olen, &decoded)
		                        : ph_json_token(src + i, n - i, final, ob + o, &olen, &decoded);
		if (used == 0)
			break;  /* an escape still open: kept for the next round */
		for (m = 0; m < olen; m++)
			oat[o + m] = sat[i];
		o += olen;
		i += used;
	}
	v->npend = n - i;
	memcpy(v->pend, src + i, v->npend);
	memcpy(v->pend_at, sat + i, v->npend * sizeof(*sat));
	if (src == joint)
		sluice_wipe(joint, n);
	out->b = ob;
	out->at = oat;
	out->n = o;
	out->own = o;
}

/* One round of raw bytes (at most CHUNK) through every view: 1 (*id), 0, or SLUICE_ENOMEM. */
static int
round_feed(struct ph_stream *s, const uint8_t *p, size_t len, int final, size_t *id)
{
	struct round *r;
	size_t k, i;
	int tag = -1, ret = 0;

	if (s->n == 0)
		return 0;  /* nothing to find */
	r = rounds;
	for (i = 0; i < len; i++)
		r[0].sat[i] = s->fed + i;
	r[0].b = p;  /* borrowed for the round */
	r[0].at = r[0].sat;
	r[0].n = len;
	r[0].own = 0;
	s->fed += len;
	s->started = 1;
	for (k = 0; k < NVIEWS && ret == 0; k++) {
		if (k > 0)
			decode(&s->v[k], view_defs[k].step, &r[view_defs[k].parent], final, &r[k]);
		ret = search(s, k, &r[k], final, &tag);
	}
	if (ret == 1)
		*id = s->id[tag];
	while (k-- > 0)  /* the views this round reached */
		sluice_wipe(r[k].sb, r[k].own);
	return ret;
}

int
ph_stream_feed(struct ph_stream *s, const uint8_t *p, size_t len, size_t *id)
{
	size_t n;
	int ret;

	while (len > 0) {
		n = len < CHUNK ? len : CHUNK;
		if ((ret = round_feed(s, p, n, 0, id)) != 0)
			return ret;
		p += n;
		len -= n;
	}
	return 0;
}

int
ph_stream_end(struct ph_stream *s, size_t *id)
{
	return round_feed(s, NULL, 0, 1, id);
}

size_t
ph_stream_held(const struct ph_stream *s)
{
	uint64_t first = s->fed, at;
	size_t k, h;

	if (s->n == 0)
		return 0;
	for (k = 0; k < NVIEWS; k++) {
		const struct view *v = &s->v[k];

		if ((h = scrub_stream_held(v->st)) > 0 && (at = v->ring[(v->out - h) & s->ring_mask]) < first)
			first = at;
		if (v->npend > 0 && v->pend_at[0] < first)
			first = v->pend_at[0];
	}
	return (size_t)(s->fed - first);
}

void
ph_stream_free(struct ph_stream *s)
{
	size_t k;

	if (s == NULL)
		return;
	for (k = 0; k < NVIEWS; k++) {
		scrub_stream_free(s->v[k].st);  /* wipes its held-back tail */
		sluice_wipe(s->v[k].pend, sizeof(s->v[k].pend));
		free(s->v[k].ring);
	}
	scrub_set_free(s->set);
	free(s->id);
	free(s);
}
