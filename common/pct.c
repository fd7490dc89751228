/*
 * common/pct.c - percent-encoding (pct.h).
 */
#include "common/hex.h"
#include "common/pct.h"

int
pct_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
	       c == '_' || c == '~';
}

size_t
pct_encode(char *out, const void *in, size_t n, pct_keep_fn *keep, unsigned flags)
{
	const unsigned char *v = in;
	int upper = !(flags & PCT_LOWER), plus = (flags & PCT_SPACE_PLUS) != 0;
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if (keep(v[i])) {
			out[o++] = (char)v[i];
		} else if (plus && v[i] == ' ') {
			out[o++] = '+';
		} else {
			out[o++] = '%';
			hex_pair(out + o, v[i], upper);
			o += 2;
		}
	}
	return o;
}
