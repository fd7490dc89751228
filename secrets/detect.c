/*
 * secrets/detect.c - a placeholder searched in a place and in every view of
 * it an upstream could decode (percent, JSON escapes, base64 and base64url at
 * any alignment), stacked PH_DETECT_DEPTH deep.  See detect.h.
 *
 * These decoders are lenient on purpose: a strict decoder stops at the first
 * bad escape, and an attacker would put one before the placeholder.  They
 * are for searching, never for what is sent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "secrets/detect.h"
#include "decode_int.h"

#define B64_RUN_MIN 4   /* base64 characters a run needs before it is decoded (one whole group) */

size_t
ph_decode_bound(size_t len)
{
	return len + 8;
}

/*
 * One decoding pass of <p> into <out> with <token> (decode_int.h, the rules
 * detect_stream.c applies to a stream): its length; *changed when some
 * escape was decoded.
 */
static size_t
pass(size_t (*token)(const uint8_t *, size_t, int, uint8_t *, size_t *, int *), uint8_t esc, const uint8_t *p,
     size_t len, uint8_t *out, int *changed)
{
	const uint8_t *e;
	size_t i = 0, o = 0, olen, run;
	int decoded;

	while (i < len) {
		/* the bytes up to the next escape character pass as they are */
		e = memchr(p + i, esc, len - i);
		run = e == NULL ? len - i : (size_t)(e - (p + i));
		memmove(out + o, p + i, run);
		o += run;
		i += run;
		if (i == len)
			break;
		i += token(p + i, len - i, 1, out + o, &olen, &decoded);
		o += olen;
		*changed |= decoded;
	}
	return o;
}

long
ph_decode_percent(const uint8_t *p, size_t len, uint8_t *out)
{
	size_t n;
	int changed = 0, round;

	n = pass(ph_pct_token, '%', p, len, out, &changed);
	if (!changed)
		return -1;
	/* "%2573" is "%73" to an upstream that decodes twice: decode to a fixpoint, in place (it only shrinks) */
	for (round = 1; round < PH_DETECT_PCT_ROUNDS && changed; round++) {
		changed = 0;
		n = pass(ph_pct_token, '%', out, n, out, &changed);
	}
	return (long)n;
}

long
ph_decode_percent_once(const uint8_t *p, size_t len, uint8_t *out)
{
	int changed = 0;
	size_t n = pass(ph_pct_token, '%', p, len, out, &changed);

	return changed ? (long)n : -1;
}

long
ph_decode_json(const uint8_t *p, size_t len, uint8_t *out)
{
	int changed = 0;
	size_t n = pass(ph_json_token, '\\', p, len, out, &changed);

	return changed ? (long)n : -1;
}

/* The 6-bit value of a base64 or base64url character (both alphabets at once), or -1. */
static int
b64val(uint8_t ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+' || ch == '-')
		return 62;
	if (ch == '/' || ch == '_')
		return 63;
	return -1;
}

/* Decodes the base64 characters <p>/<len> from their start (a partial last group gives its whole bytes). */
static size_t
b64_run(const uint8_t *p, size_t len, uint8_t *out)
{
	uint32_t acc = 0;
	size_t i, o = 0;
	int bits = 0;

	for (i = 0; i < len; i++) {
		acc = acc << 6 | (uint32_t)b64val(p[i]);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (uint8_t)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	return o;
}

/*
 * One alignment: every run of base64 characters decoded from its <align>th
 * character, runs separated by a NUL.  A placeholder encoded inside a longer
 * base64 text starts at one of the four alignments of its run.
 */
static long
b64_view(const uint8_t *p, size_t len, unsigned align, size_t min_out, uint8_t *out)
{
	size_t i = 0, j, o = 0;
	int any = 0;

	while (i < len) {
		if (b64val(p[i]) < 0) {
			i++;
			continue;
		}
		for (j = i; j < len && b64val(p[j]) >= 0; j++)
			;
		/* a run whose decoding is shorter than every needle cannot hold one */
		if (j - i >= B64_RUN_MIN && j - i > align && (j - i - align) * 3 / 4 >= min_out) {
			if (any)
				out[o++] = '\0';
			o += b64_run(p + i + align, j - i - align, out + o);
			any = 1;
		}
		i = j;
	}
	return any ? (long)o : -1;
}

long
ph_decode_base64(const uint8_t *p, size_t len, uint8_t *out)
{
	return b64_view(p, len, 0, 0, out);
}

struct needles {
	const char *const *ph;
	const size_t *len;
	size_t n;
	unsigned char *found;
	size_t nfound;
	size_t minlen;       /* the shortest needle not found yet: every decoding shrinks, so shorter views hold none */
};

#define VIEW_STACK 1024  /* views this small are decoded on the stack */

static int search(struct needles *nd, const uint8_t *p, size_t len, int depth);

/* Decodes <p> with step <k> (0 percent, 1 JSON, 2..5 base64 at alignment k - 2) and searches the view. */
static int
search_step(struct needles *nd, const uint8_t *p, size_t len, int depth, int k)
{
	size_t cap = ph_decode_bound(len);
	uint8_t stack[VIEW_STACK], *buf = cap <= sizeof(stack) ? stack : try_malloc(cap);
	long n;
	int ret = 0;

	if (buf == NULL)
		return SLUICE_ENOMEM;
	n = k == 0 ? ph_decode_percent(p, len, buf) : k == 1 ? ph_decode_json(p, len, buf)
	                                                     : b64_view(p, len, (unsigned)(k - 2), nd->minlen, buf);
	if (n >= 0)
		ret = search(nd, buf, (size_t)n, depth - 1);
	sluice_wipe(buf, n > 0 ? (size_t)n : 0);
	if (buf != stack)
		free(buf);
	return ret;
}

#define PAIRS_BITS 4096   /* the byte-pair filter of a view: one bit per hashed pair */
#define PAIRS_FROM 8      /* needles from which on the filter pays for itself */
#define PAIR(a, b) ((((unsigned)(a) * 31u) + (unsigned)(b)) & (PAIRS_BITS - 1))

/* 0 when some byte pair of <ph> (its start, middle and end) is not in the view's pair set <bm>: it is not there. */
static int
pairs_may(const uint64_t *bm, const char *ph, size_t len)
{
	size_t at[3] = {0, len / 2 - 1, len - 2}, k, h;

	for (k = 0; k < 3; k++) {
		h = PAIR((uint8_t)ph[at[k]], (uint8_t)ph[at[k] + 1]);
		if (!(bm[h / 64] & (1ull << (h % 64))))
			return 0;
	}
	return 1;
}

static int
search(struct needles *nd, const uint8_t *p, size_t len, int depth)
{
	uint64_t bm[PAIRS_BITS / 64];
	size_t i, h;
	int k, ret, filter = nd->n - nd->nfound >= PAIRS_FROM;

	if (len < nd->minlen)
		return 0;
	/* many needles: one pass over the view saves a memmem for each needle that cannot be in it */
	if (filter) {
		memset(bm, 0, sizeof(bm));
		for (i = 0; i + 1 < len; i++) {
			h = PAIR(p[i], p[i + 1]);
			bm[h / 64] |= 1ull << (h % 64);
		}
	}
	for (i = 0; i < nd->n; i++)
		if (!nd->found[i] && nd->len[i] > 0 && nd->len[i] <= len &&
		    (!filter || nd->len[i] < 2 || pairs_may(bm, nd->ph[i], nd->len[i])) &&
		    memmem(p, len, nd->ph[i], nd->len[i]) != NULL) {
			nd->found[i] = 1;
			nd->nfound++;
		}
	if (depth == 0 || nd->nfound == nd->n)
		return 0;
	/* cheap tests first: most places have no '%' and no '\' */
	for (k = 0; k < 6; k++) {
		if ((k == 0 && memchr(p, '%', len) == NULL) || (k == 1 && memchr(p, '\\', len) == NULL))
			continue;
		if ((ret = search_step(nd, p, len, depth, k)) != 0)
			return ret;
		if (nd->nfound == nd->n)
			break;
	}
	return 0;
}

int
ph_detect(const uint8_t *p, size_t len, const char *const *ph, const size_t *phlen, size_t n, unsigned char *found)
{
	struct needles nd = {ph, phlen, n, found, 0, 0};
	size_t i;
	int ret;

	if (len > PH_DETECT_PLACE_MAX)
		return SLUICE_ETOOBIG;
	nd.minlen = SIZE_MAX;
	for (i = 0; i < n; i++) {
		nd.nfound += found[i] != 0;
		if (!found[i] && phlen[i] > 0 && phlen[i] < nd.minlen)
			nd.minlen = phlen[i];
	}
	if (nd.minlen == SIZE_MAX)
		return (int)nd.nfound;  /* nothing left to find */
	if ((ret = search(&nd, p, len, PH_DETECT_DEPTH)) != 0)
		return ret;
	return (int)nd.nfound;
}
