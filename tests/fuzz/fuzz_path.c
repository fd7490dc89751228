/*
 * tests/fuzz/fuzz_path.c - policy_path_normalise with both keep_slashes
 * values: the output starts with '/', never holds "/./", "/../" or "//",
 * never ends in "/." or "/..", uses only pchar and '/', and normalising it
 * again is the identity.  Its ';' parameters stripped (policy_path_strip_params):
 * no ';' is left, the result is no longer, starts with '/', has no "//", and
 * normalises to itself (no dot segment can appear: dot segments with
 * parameters are refused first).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check(const char *in, size_t len, int keep)
{
	char *out = malloc(len + 1), *again = malloc(len + 1);
	const char *err = NULL;
	long n, m;
	size_t i;

	if (out == NULL || again == NULL)
		abort();
	n = policy_path_normalise(in, len, keep, out, len + 1, &err);
	if (n < 0) {
		if (n != -1 || err == NULL)
			__builtin_trap();
		goto out;
	}
	if (n < 1 || (size_t)n > len || out[0] != '/' || out[n] != '\0' || strlen(out) != (size_t)n)
		__builtin_trap();
	if (strstr(out, "/./") != NULL || strstr(out, "/../") != NULL || strstr(out, "//") != NULL)
		__builtin_trap();
	if ((n >= 2 && memcmp(out + n - 2, "/.", 2) == 0) || (n >= 3 && memcmp(out + n - 3, "/..", 3) == 0))
		__builtin_trap();
	for (i = 0; i < (size_t)n; i++) {
		unsigned char c = (unsigned char)out[i];

		if (c <= 0x20 || c >= 0x7f || strchr("\\\"<>^`{|}#?[]", c) != NULL)
			__builtin_trap();
		/* only reserved bytes stay encoded, in upper case; %2F/%5C only when kept */
		if (c == '%') {
			if (i + 2 >= (size_t)n)
				__builtin_trap();
			if ((out[i + 1] >= 'a' && out[i + 1] <= 'f') || (out[i + 2] >= 'a' && out[i + 2] <= 'f'))
				__builtin_trap();
			if (!keep && (memcmp(out + i, "%2F", 3) == 0 || memcmp(out + i, "%5C", 3) == 0))
				__builtin_trap();
		}
	}
	m = policy_path_normalise(out, (size_t)n, keep, again, len + 1, &err);
	if (m != n || memcmp(out, again, (size_t)n + 1) != 0)
		__builtin_trap();
	m = (long)policy_path_strip_params(out, (size_t)n, again, len + 1);
	if (m < 1 || m > n || again[0] != '/' || strchr(again, ';') != NULL || strstr(again, "//") != NULL ||
	    strlen(again) != (size_t)m)
		__builtin_trap();
	{
		char *third = malloc((size_t)m + 2);
		long k;

		if (third == NULL)
			abort();
		k = policy_path_normalise(again, (size_t)m, keep, third, (size_t)m + 2, &err);
		if (k != m || memcmp(third, again, (size_t)m + 1) != 0)
			__builtin_trap();
		free(third);
	}
out:
	free(out);
	free(again);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check((const char *)data, size, 0);
	check((const char *)data, size, 1);
	return 0;
}
