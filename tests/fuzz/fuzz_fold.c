/*
 * tests/fuzz/fuzz_fold.c - key folding (common/fold.h) on arbitrary bytes:
 * sluice_fold_eq is reflexive and symmetric, agrees with byte equality of
 * sluice_fold_key's folded forms, which fit 3 * len and fold to themselves;
 * and policy_form_overrides_method on the same bytes as a form never reads
 * out of bounds.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/fold.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	size_t half = size / 2, la, lb, lc;
	char *fa, *fb, *fc;
	int eq;

	fa = malloc(3 * size + 1);
	fb = malloc(3 * size + 1);
	fc = malloc(9 * size + 1);
	if (fa == NULL || fb == NULL || fc == NULL)
		abort();
	if (!sluice_fold_eq(s, size, s, size))
		__builtin_trap();
	eq = sluice_fold_eq(s, half, s + half, size - half);
	if (eq != sluice_fold_eq(s + half, size - half, s, half))
		__builtin_trap();
	la = sluice_fold_key(s, half, fa);
	lb = sluice_fold_key(s + half, size - half, fb);
	if (la > 3 * half || lb > 3 * (size - half))
		__builtin_trap();
	if (eq != (la == lb && memcmp(fa, fb, la) == 0))
		__builtin_trap();
	lc = sluice_fold_key(fa, la, fc);
	if (lc != la || memcmp(fa, fc, la) != 0 || !sluice_fold_eq(s, half, fa, la))
		__builtin_trap();
	(void)policy_form_overrides_method("POST", 4, s, size);
	free(fa);
	free(fb);
	free(fc);
	return 0;
}
