/*
 * common/bytescan.h - the first of two or three given bytes in a span, 16
 * bytes a step (SSE2, which every x86-64 has) or 8 (a word's bit tricks
 * elsewhere).  For the parsers that look for a few delimiters in long runs
 * of ordinary bytes (proxy/codec/sse.c, proxy/judge/mcp_resp.c), where a
 * memchr per delimiter pays a call and a pass per byte value.
 *
 * Header only, pure: reads s[0..n) and nothing past it, allocates nothing.
 * O(n).  Defining BYTESCAN_NO_SIMD before including it selects the word
 * path (tests/unit/common/test_bytescan.c checks both).
 */
#ifndef SLUICE_COMMON_BYTESCAN_H
#define SLUICE_COMMON_BYTESCAN_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__) && !defined(BYTESCAN_NO_SIMD)
#include <emmintrin.h>
#endif

#define BYTESCAN_ONES_ 0x0101010101010101ull
#define BYTESCAN_HIGHS_ 0x8080808080808080ull
/* nonzero iff a byte of <x> is 0 (the lowest such byte's high bit is set; higher ones may be set falsely) */
#define BYTESCAN_ZERO_(x) (((x) - BYTESCAN_ONES_) & ~(x) & BYTESCAN_HIGHS_)

/* The first i in [0, <n>) with <s>[i] one of <a>, <b>, <c>; <n> when none.  Pass a byte twice for two. */
static inline size_t
bytescan3(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c)
{
	size_t i = 0;

#if defined(__SSE2__) && !defined(BYTESCAN_NO_SIMD)
	const __m128i va = _mm_set1_epi8((char)a), vb = _mm_set1_epi8((char)b), vc = _mm_set1_epi8((char)c);

	for (; n - i >= 16; i += 16) {
		__m128i w = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
		int m = _mm_movemask_epi8(
		    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(w, va), _mm_cmpeq_epi8(w, vb)), _mm_cmpeq_epi8(w, vc)));

		if (m != 0)
			return i + (size_t)__builtin_ctz((unsigned)m);
	}
#else
	for (; n - i >= 8; i += 8) {
		uint64_t w;

		memcpy(&w, s + i, 8);
		if (BYTESCAN_ZERO_(w ^ (BYTESCAN_ONES_ * a)) | BYTESCAN_ZERO_(w ^ (BYTESCAN_ONES_ * b)) |
		    BYTESCAN_ZERO_(w ^ (BYTESCAN_ONES_ * c)))
			break; /* one of them is among these eight: the loop below finds which */
	}
#endif
	for (; i < n; i++) {
		unsigned char x = (unsigned char)s[i];

		if (x == a || x == b || x == c)
			return i;
	}
	return n;
}

/* The first i in [0, <n>) with <s>[i] one of <a>, <b>; <n> when none. */
static inline size_t
bytescan2(const char *s, size_t n, unsigned char a, unsigned char b)
{
	return bytescan3(s, n, a, b, b);
}

#endif
