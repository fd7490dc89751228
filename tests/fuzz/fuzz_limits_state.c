/*
 * tests/fuzz/fuzz_limits_state.c - the counters' state file parser
 * (proxy/judge/limits_state.c): any input is refused with "name:line: why" or
 * loaded; a loaded state written out and read back gives the same text
 * (every key and sandbox escaped so that no byte breaks a line or a field);
 * then takes, refunds and peeks driven by the input's last bytes keep the
 * arithmetic inside its bounds (sanitizers watch for overflow).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/judge/limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);


int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *const keys[] = {"rule:a", "rule:a b", "*", "rule:\xff"};
	struct policy_limit lim;
	struct policy_budget b;
	struct limits *l, *l2;
	char err[512], *out, *out2;
	uint64_t now = UINT64_C(1709251200000);
	unsigned ra;
	long n, m;
	size_t i, cap = 3 * size + 4096;   /* escaping at most triples a name */

	if (size > (1u << 20))
		return 0;
	l = limits_open_buffer("fuzz", (const char *)data, size, err, sizeof(err));
	if (l == NULL) {
		if (strncmp(err, "fuzz:", 5) != 0)
			__builtin_trap();
		return 0;
	}
	out = malloc(cap);
	out2 = malloc(cap);
	if (out == NULL || out2 == NULL)
		abort();
	n = limits_format(l, out, cap);
	if (n < 0 || (size_t)n >= cap || strlen(out) != (size_t)n)
		__builtin_trap();
	l2 = limits_open_buffer("again", out, (size_t)n, err, sizeof(err));
	if (l2 == NULL)
		__builtin_trap();
	m = limits_format(l2, out2, cap);
	if (m != n || memcmp(out, out2, (size_t)n) != 0)
		__builtin_trap();
	/* arithmetic on whatever the file held */
	for (i = 0; i + 4 <= size && i < 64; i += 4) {
		char *key = keys[data[i] & 3];
		uint32_t count = (uint32_t)data[i + 1] * 16777619u + 1;
		uint32_t periods[] = {1, 60, 3600, 86400};

		now += (uint64_t)data[i + 2] * 997 * (data[i + 3] & 0x80 ? 1000 : 1);
		if (data[i + 3] & 0x40)
			now -= 50000;   /* the clock steps back */
		lim = (struct policy_limit){key, count, periods[data[i + 3] & 3], (data[i] & 4) ? POLICY_SCOPE_GLOBAL
		                                                                                 : POLICY_SCOPE_SANDBOX};
		b = (struct policy_budget){key, "json:$.a", (int64_t)count * 1000, (data[i + 3] & 8) ? 3600 : 86400,
		                           (data[i] & 8) ? POLICY_SCOPE_GLOBAL : POLICY_SCOPE_SANDBOX};
		if (limits_rate_take(l2, &lim, "sb", now, &ra) == 1 && ra == 0)
			__builtin_trap();
		if (limits_budget_take(l2, &b, "sb", (int64_t)data[i + 2] * 1000003, now, &ra) == 1 && ra == 0)
			__builtin_trap();
		if (data[i] & 16)
			limits_budget_refund(l2, &b, "sb", (int64_t)data[i + 1] * 999983, now);
		if (limits_peek_kind(l2, LIMITS_RATE, key, "*", now) < -1 || limits_peek(l2, key, "sb", now) < -1)
			__builtin_trap();
	}
	limits_close(l2);
	limits_close(l);
	free(out);
	free(out2);
	return 0;
}
