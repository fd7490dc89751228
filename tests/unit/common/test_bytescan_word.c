/*
 * tests/unit/common/test_bytescan_word.c - common/bytescan.h's word path
 * (BYTESCAN_NO_SIMD), built in its own translation unit so that
 * test_bytescan.c checks it beside the SSE2 path.
 */
#include <stddef.h>

#define BYTESCAN_NO_SIMD
#include "common/bytescan.h"

size_t bytescan3_word(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c);

size_t
bytescan3_word(const char *s, size_t n, unsigned char a, unsigned char b, unsigned char c)
{
	return bytescan3(s, n, a, b, c);
}
