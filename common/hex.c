/*
 * common/hex.c - hex digits (hex.h).
 */
#include "common/hex.h"

const char hex_lower[17] = "0123456789abcdef";
const char hex_upper[17] = "0123456789ABCDEF";

char *
hex_encode(char *out, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex_lower[b[i] >> 4];
		out[2 * i + 1] = hex_lower[b[i] & 15];
	}
	out[2 * n] = '\0';
	return out;
}
