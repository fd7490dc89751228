/*
 * policy/glob.c - path globs: '*' within one segment, '**' across segments.
 *
 * A glob is compiled to a bit-parallel NFA (shift-and) so that matching a
 * hostile path costs O(path length) whatever the glob: no backtracking.
 * Literal parts are normalised like paths (policy_path_normalise): %XX of an
 * unreserved byte is decoded, other %XX are upper-cased, so that the glob
 * and the normalised path spell the same bytes the same way.
 */
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"
#include "common/sluice.h"
#include "policy_int.h"

enum {
	TOK_STAR = 256,
	TOK_DSTAR = 257,
};

static void
bit_set(uint64_t *w, unsigned i)
{
	w[i / 64] |= (uint64_t)1 << (i % 64);
}

/* Checks a finished segment <seg>/<n> (tokens) is not "." or "..". */
static int
dot_segment(const unsigned *seg, size_t n)
{
	if (n == 1 && seg[0] == '.')
		return 1;
	if (n == 2 && seg[0] == '.' && seg[1] == '.')
		return 1;
	return 0;
}

int
policy_glob_compile(struct policy_glob *g, const char *src, size_t len, const char **err)
{
	unsigned tok[POLICY_GLOB_TOKENS_MAX];
	size_t ntok = 0, segstart = 0, i = 0;

	memset(g, 0, sizeof(*g));
	if (len == 0 || src[0] != '/') {
		*err = "a path glob must start with '/'";
		return -1;
	}
	while (i < len) {
		unsigned c = (unsigned char)src[i], t;

		if (c == '*') {
			size_t run = 0;

			while (i < len && src[i] == '*') {
				run++;
				i++;
			}
			t = run == 1 ? TOK_STAR : TOK_DSTAR;
		} else if (c == '%') {
			int hi, lo;

			if (len - i < 3 || (hi = sluice_hexval((unsigned char)src[i + 1])) < 0 ||
			    (lo = sluice_hexval((unsigned char)src[i + 2])) < 0) {
				*err = "bad percent-encoding in path glob";
				return -1;
			}
			c = (unsigned)(hi * 16 + lo);
			if (c == 0) {
				*err = "%00 in path glob";
				return -1;
			}
			i += 3;
			if (policy_is_unreserved(c)) {
				t = c;
			} else {
				if (ntok + 3 > POLICY_GLOB_TOKENS_MAX) {
					*err = "path glob too long";
					return -1;
				}
				tok[ntok++] = '%';
				tok[ntok++] = (unsigned char)hex_upper[c >> 4];
				t = (unsigned char)hex_upper[c & 15];
			}
		} else if (c == '/' || policy_is_pchar(c)) {
			t = c;
			i++;
		} else {
			*err = "invalid character in path glob";
			return -1;
		}
		if (t == '/') {
			if (ntok > 0 && ntok == segstart) {
				*err = "empty segment ('//') in path glob never matches a normalised path";
				return -1;
			}
			if (dot_segment(tok + segstart, ntok - segstart)) {
				*err = "'.' or '..' segment in path glob never matches a normalised path";
				return -1;
			}
		}
		if (ntok >= POLICY_GLOB_TOKENS_MAX) {
			*err = "path glob too long";
			return -1;
		}
		tok[ntok++] = t;
		if (t == '/')
			segstart = ntok;
	}
	if (dot_segment(tok + segstart, ntok - segstart)) {
		*err = "'.' or '..' segment in path glob never matches a normalised path";
		return -1;
	}

	g->ntok = (unsigned)ntok;
	g->lit = xcalloc(1, sizeof(*g->lit)); /* class 0: matches nothing */
	g->nlit = 1;
	for (i = 0; i < ntok; i++) {
		if (tok[i] == TOK_STAR || tok[i] == TOK_DSTAR) {
			bit_set(g->star, (unsigned)i);
			if (tok[i] == TOK_DSTAR)
				bit_set(g->dstar, (unsigned)i);
			continue;
		}
		if (g->cls[tok[i]] == 0) {
			g->lit = xrealloc(g->lit, (g->nlit + 1) * sizeof(*g->lit));
			memset(g->lit[g->nlit], 0, sizeof(*g->lit));
			g->cls[tok[i]] = (uint8_t)g->nlit++;
		}
		bit_set(g->lit[g->cls[tok[i]]], (unsigned)i);
	}
	return 0;
}

/* <w> = <w> << 1 across the words. */
static void
shl1(uint64_t *w)
{
	unsigned k;

	for (k = POLICY_GLOB_WORDS - 1; k > 0; k--)
		w[k] = (w[k] << 1) | (w[k - 1] >> 63);
	w[0] <<= 1;
}

/* Adds the states reachable by letting a star match nothing. */
static void
close_stars(const struct policy_glob *g, uint64_t *st)
{
	uint64_t t[POLICY_GLOB_WORDS];
	unsigned k;

	/* Runs of stars are merged at compile time, so one step suffices. */
	for (k = 0; k < POLICY_GLOB_WORDS; k++)
		t[k] = st[k] & g->star[k];
	shl1(t);
	for (k = 0; k < POLICY_GLOB_WORDS; k++)
		st[k] |= t[k];
}

int
policy_glob_match(const struct policy_glob *g, const char *s, size_t len)
{
	uint64_t st[POLICY_GLOB_WORDS] = {1};
	size_t i;
	unsigned k;

	close_stars(g, st);
	for (i = 0; i < len; i++) {
		unsigned c = (unsigned char)s[i];
		const uint64_t *lit = g->lit[g->cls[c]];
		const uint64_t *loop = c == '/' ? g->dstar : g->star;
		uint64_t adv[POLICY_GLOB_WORDS];
		uint64_t any = 0;

		for (k = 0; k < POLICY_GLOB_WORDS; k++)
			adv[k] = st[k] & lit[k];
		shl1(adv);
		for (k = 0; k < POLICY_GLOB_WORDS; k++) {
			st[k] = adv[k] | (st[k] & loop[k]);
			any |= st[k];
		}
		if (!any)
			return 0;
		close_stars(g, st);
	}
	return (st[g->ntok / 64] >> (g->ntok % 64)) & 1;
}

void
policy_glob_dispose(struct policy_glob *g)
{
	free(g->lit);
	g->lit = NULL;
	g->nlit = 0;
}
