/*
 * common/pct.h - the one percent encoder (RFC 3986 section 2.1).
 *
 * Which bytes stay as they are is the caller's choice (a keep function):
 * the places that encode differ in what they must keep (a query value, a
 * gRPC message, a counter file's field), not in how they encode the rest.
 */
#ifndef SLUICE_COMMON_PCT_H
#define SLUICE_COMMON_PCT_H

#include <stddef.h>

/* Nonzero when <c> is written as itself. */
typedef int pct_keep_fn(unsigned char c);

/* RFC 3986 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~". */
int pct_unreserved(unsigned char c);

enum pct_flags {
	PCT_UPPER = 0,            /* %2F (RFC 3986's recommendation) */
	PCT_LOWER = 1 << 0,       /* %2f */
	PCT_SPACE_PLUS = 1 << 1,  /* ' ' as '+' (forms), unless <keep> keeps it */
};

/* The most bytes pct_encode writes for <n> input bytes. */
#define PCT_ENCODED_MAX(n) (3 * (n))

/*
 * Writes <in>/<n> to <out> (room for PCT_ENCODED_MAX(<n>); no NUL): each
 * byte <keep> accepts as itself, else (with PCT_SPACE_PLUS) a space as '+',
 * else "%XX".  Returns the bytes written.
 */
size_t pct_encode(char *out, const void *in, size_t n, pct_keep_fn *keep, unsigned flags);

#endif
