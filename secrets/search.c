/*
 * secrets/search.c - a streaming search for any number of placeholders: one
 * scrub stream per SCRUB_TAGS of them (each placeholder mapped to itself),
 * all fed the same bytes.  The caller keeps its own bytes and releases those
 * the search has decided: everything fed except the longest held-back tail.
 */
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "secrets/scrub.h"

struct ph_search {
	struct scrub_set **set;
	struct scrub_stream **st;
	size_t *id;              /* the caller's id of each placeholder, in the order added */
	size_t n, cap;           /* placeholders; capacity of <id> */
	struct evbuffer *sink;   /* the streams' output: their input again, discarded */
};

struct ph_search *
ph_search_new(void)
{
	struct ph_search *s = xcalloc(1, sizeof(*s));

	s->sink = evbuffer_new();
	if (s->sink == NULL) {
		free(s);
		return NULL;
	}
	return s;
}

static int add(struct ph_search *s, const char *ph, size_t len, size_t id, int forms);

int
ph_search_add(struct ph_search *s, const char *ph, size_t len, size_t id)
{
	return add(s, ph, len, id, 0);
}

int
ph_search_add_forms(struct ph_search *s, const char *ph, size_t len, size_t id)
{
	return add(s, ph, len, id, 1);
}

static int
add(struct ph_search *s, const char *ph, size_t len, size_t id, int forms)
{
	size_t k = s->n / SCRUB_TAGS;
	int ret;

	if (s->n == PH_SEARCH_MAX)
		return SLUICE_ETOOBIG;
	if (s->n == s->cap) {
		s->cap = s->cap == 0 ? SCRUB_TAGS : s->cap * 2;
		s->id = xrealloc(s->id, s->cap * sizeof(*s->id));
		s->set = xrealloc(s->set, s->cap / SCRUB_TAGS * sizeof(*s->set));
		s->st = xrealloc(s->st, s->cap / SCRUB_TAGS * sizeof(*s->st));
	}
	if (s->n % SCRUB_TAGS == 0) {
		s->set[k] = scrub_set_new();
		s->st[k] = scrub_stream_new(s->set[k]);
		if (s->st[k] == NULL) {
			scrub_set_free(s->set[k]);
			return SLUICE_ENOMEM;
		}
	}
	/* its echo forms map to themselves too: a hit is reported the same way, nothing is rewritten */
	ret = forms ? scrub_set_add_secret(s->set[k], (const uint8_t *)ph, len, ph, (unsigned)(s->n % SCRUB_TAGS))
	            : scrub_set_add(s->set[k], (const uint8_t *)ph, len, (const uint8_t *)ph, len, (unsigned)(s->n % SCRUB_TAGS));
	if (ret != 0) {
		if (s->n % SCRUB_TAGS == 0) {  /* the set made for it stays empty: drop it */
			scrub_stream_free(s->st[k]);
			scrub_set_free(s->set[k]);
		}
		return ret;
	}
	s->id[s->n++] = id;
	return 0;
}

int
ph_search_feed(struct ph_search *s, const uint8_t *p, size_t len, size_t *id)
{
	struct scrub_hits hits;
	size_t k;
	int tag;

	for (k = 0; k * SCRUB_TAGS < s->n; k++) {
		memset(&hits, 0, sizeof(hits));
		if (scrub_stream_feed(s->st[k], p, len, s->sink, &hits) != 0)
			return -1;
		evbuffer_drain(s->sink, evbuffer_get_length(s->sink));
		if ((tag = scrub_hits_first(&hits)) >= 0) {
			*id = s->id[k * SCRUB_TAGS + (size_t)tag];
			return 1;
		}
	}
	return 0;
}

size_t
ph_search_held(const struct ph_search *s)
{
	size_t k, h, max = 0;

	for (k = 0; k * SCRUB_TAGS < s->n; k++)
		if ((h = scrub_stream_held(s->st[k])) > max)
			max = h;
	return max;
}

size_t
ph_search_count(const struct ph_search *s)
{
	return s->n;
}

void
ph_search_free(struct ph_search *s)
{
	size_t k;

	if (s == NULL)
		return;
	for (k = 0; k * SCRUB_TAGS < s->n; k++) {
		scrub_stream_free(s->st[k]);
		scrub_set_free(s->set[k]);
	}
	free(s->set);
	free(s->st);
	free(s->id);
	evbuffer_free(s->sink);
	free(s);
}
