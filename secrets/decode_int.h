/*
 * secrets/decode_int.h - the per-token decoding rules of the placeholder
 * search, one copy for the whole-buffer views (detect.c) and the streaming
 * ones (detect_stream.c), so that both decode every byte sequence the same
 * way.  Nothing outside secrets/ includes this.
 *
 * A token is one literal byte or one escape.  Each function decodes the token
 * at the start of <p>/<n> (n >= 1): it writes its bytes to <out> (room for
 * PH_TOKEN_OUT_MAX), sets *olen and *decoded (1 when an escape was decoded,
 * 0 for a byte passed through), and returns the bytes it consumed (>= 1).
 * Without <final> it returns 0 instead when bytes past <n> could still change
 * the decoding (then <n> < PH_TOKEN_IN_MAX): the caller keeps those bytes and
 * asks again with more.  With <final> (the whole place, or a stream's end)
 * it always decides.  Lenient on purpose: an escape that does not decode is
 * passed through byte by byte, as detect.c describes.
 */
#ifndef SLUICE_SECRETS_DECODE_INT_H
#define SLUICE_SECRETS_DECODE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "common/sluice.h"

#define PH_TOKEN_IN_MAX 12   /* the longest token read: a JSON surrogate pair "\ud83d\ude00" */
#define PH_TOKEN_OUT_MAX 4   /* the most bytes one token decodes to (a UTF-8 character) */

static inline size_t
ph_token_literal(const uint8_t *p, uint8_t *out, size_t *olen, int *decoded)
{
	out[0] = p[0];
	*olen = 1;
	*decoded = 0;
	return 1;
}

/* "%XX" with either case of hex; anything else passes through. */
static inline size_t
ph_pct_token(const uint8_t *p, size_t n, int final, uint8_t *out, size_t *olen, int *decoded)
{
	int hi, lo;

	if (p[0] != '%')
		return ph_token_literal(p, out, olen, decoded);
	if (n < 3 && !final && (n < 2 || sluice_hexval(p[1]) >= 0))
		return 0;
	if (n >= 3 && (hi = sluice_hexval(p[1])) >= 0 && (lo = sluice_hexval(p[2])) >= 0) {
		out[0] = (uint8_t)(hi << 4 | lo);
		*olen = 1;
		*decoded = 1;
		return 3;
	}
	return ph_token_literal(p, out, olen, decoded);
}

/* Four hex digits at <p>: the code unit, or -1 (also when fewer than <n> >= 4 ... are there: the caller checks). */
static inline long
ph_hex4(const uint8_t *p)
{
	long v = 0;
	int k, d;

	for (k = 0; k < 4; k++) {
		if ((d = sluice_hexval(p[k])) < 0)
			return -1;
		v = v << 4 | d;
	}
	return v;
}

/* 1 when the <n> bytes at <p> could begin "\uXXXX" (n <= 6). */
static inline int
ph_u_prefix(const uint8_t *p, size_t n)
{
	size_t k;

	if (n >= 1 && p[0] != '\\')
		return 0;
	if (n >= 2 && p[1] != 'u')
		return 0;
	for (k = 2; k < n; k++)
		if (sluice_hexval(p[k]) < 0)
			return 0;
	return 1;
}

static inline size_t
ph_utf8_put(uint8_t *out, unsigned long cp)
{
	if (cp < 0x80) {
		out[0] = (uint8_t)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (uint8_t)(0xc0 | cp >> 6);
		out[1] = (uint8_t)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (uint8_t)(0xe0 | cp >> 12);
		out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (uint8_t)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (uint8_t)(0xf0 | cp >> 18);
	out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (uint8_t)(0x80 | (cp & 0x3f));
	return 4;
}

/* JSON string escapes: "\uXXXX" (a surrogate pair is one character), the short escapes "\" \\ \/ \b \f \n \r \t". */
static inline size_t
ph_json_token(const uint8_t *p, size_t n, int final, uint8_t *out, size_t *olen, int *decoded)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	long u, lo;

	if (p[0] != '\\')
		return ph_token_literal(p, out, olen, decoded);
	if (n < 2)
		return final ? ph_token_literal(p, out, olen, decoded) : 0;
	if (p[1] == 'u') {
		if (n < 6)
			return !final && ph_u_prefix(p, n) ? 0 : ph_token_literal(p, out, olen, decoded);
		if ((u = ph_hex4(p + 2)) < 0)
			return ph_token_literal(p, out, olen, decoded);
		*decoded = 1;
		if (u >= 0xd800 && u < 0xdc00) {
			if (n < 12 && !final && ph_u_prefix(p + 6, n - 6))
				return 0;
			if (n >= 12 && p[6] == '\\' && p[7] == 'u' && (lo = ph_hex4(p + 8)) >= 0xdc00 && lo < 0xe000) {
				*olen = ph_utf8_put(out, 0x10000 + (((unsigned long)u - 0xd800) << 10) +
				                             ((unsigned long)lo - 0xdc00));
				return 12;
			}
		}
		*olen = ph_utf8_put(out, (unsigned long)u);
		return 6;
	}
	if (p[1] != '\0' && (k = strchr(from, p[1])) != NULL) {
		out[0] = (uint8_t)to[k - from];
		*olen = 1;
		*decoded = 1;
		return 2;
	}
	return ph_token_literal(p, out, olen, decoded);
}

#endif
