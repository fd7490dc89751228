/*
 * common/hex.h - the one hex encoder (the decoder of one digit is
 * sluice_hexval() in sluice.h).
 */
#ifndef SLUICE_COMMON_HEX_H
#define SLUICE_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

/* The digits, "0123456789abcdef" and "0123456789ABCDEF". */
extern const char hex_lower[17];
extern const char hex_upper[17];

/*
 * Writes the 2 * <n> lower-case hex digits of <p>/<n> to <out> and a NUL
 * (<out> has room for 2 * <n> + 1).  Returns <out>.
 */
char *hex_encode(char *out, const void *p, size_t n);

/* The two digits of <b> into <out>[0..1], upper case when <upper>; no NUL. */
static inline void
hex_pair(char *out, unsigned char b, int upper)
{
	const char *d = upper ? hex_upper : hex_lower;

	out[0] = d[b >> 4];
	out[1] = d[b & 15];
}

#endif
