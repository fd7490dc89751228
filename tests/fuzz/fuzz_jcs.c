/*
 * tests/fuzz/fuzz_jcs.c - RFC 8785 canonical JSON (common/jcs.c).
 * Properties: canonicalising the canonical form gives the same bytes; the
 * canonical form is JSON that jansson reads back to an equal value (numbers
 * compared as doubles); the first 8 bytes read as a double either are not
 * finite (refused) or give a number text that reads back to that double
 * (both zeros as "0").
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/jcs.h"
#include "common/sluice.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1u << 20)

static void
number(const uint8_t *data, size_t size)
{
	char buf[JCS_NUMBER_MAX];
	double d;
	int n;

	if (size < sizeof(d))
		return;
	memcpy(&d, data, sizeof(d));
	n = jcs_number(d, buf);
	if (!isfinite(d)) {
		if (n != SLUICE_EINVAL)
			__builtin_trap();
		return;
	}
	if (n <= 0 || n >= JCS_NUMBER_MAX || strlen(buf) != (size_t)n || strtod(buf, NULL) != d)
		__builtin_trap();
	if (d == 0 && strcmp(buf, "0") != 0)
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL, *again = NULL;
	size_t len = 0, len2 = 0;
	json_t *a, *b;
	int ret;

	number(data, size);
	ret = jcs_from_text((const char *)data, size, OUT_MAX, &out, &len);
	if (ret != 0) {
		if (out != NULL || len != 0)
			__builtin_trap();
		return 0;
	}
	if (out == NULL || strlen(out) > len || out[len] != '\0')
		__builtin_trap();
	if (jcs_from_text(out, len, OUT_MAX, &again, &len2) != 0 || len2 != len || memcmp(out, again, len) != 0)
		__builtin_trap();
	a = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, NULL);
	b = json_loadb(out, len, JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, NULL);
	if (a == NULL || b == NULL || !json_equal(a, b))
		__builtin_trap();
	json_decref(a);
	json_decref(b);
	free(out);
	free(again);
	return 0;
}
