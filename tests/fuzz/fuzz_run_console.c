/*
 * tests/fuzz/fuzz_run_console.c - the guest console reader of `sluice run`'s
 * VM backends (sandbox-glue/run_console.c): bytes the guest controls, fed in
 * two pieces split where the first byte says.  Every line it passes on is
 * within RUN_CONSOLE_LINE_MAX, it never emits more than it was given, and
 * the status it takes from "SLUICE_EXIT n" stays in -1..255.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include "sandbox-glue/run_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

static size_t outn;

static void
emit(void *arg, enum run_console_to to, const char *p, size_t len, int nl)
{
	volatile char last;

	(void)arg;
	if (to != RUN_CONSOLE_STDOUT && to != RUN_CONSOLE_STDERR)
		abort();
	if (len > RUN_CONSOLE_LINE_MAX)
		abort();
	if (to == RUN_CONSOLE_STDOUT)
		outn += len + (nl != 0);
	last = len > 0 ? p[len - 1] : 0;
	(void)last;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static struct run_console c;
	size_t cut = n > 0 ? d[0] % (n + 1) : 0;

	outn = 0;
	run_console_init(&c, emit, NULL, (int)(n & 1));
	run_console_feed(&c, (const char *)d, cut);
	run_console_feed(&c, (const char *)d + cut, n - cut);
	run_console_end(&c);
	if (c.status < -1 || c.status > 255)
		abort();
	if (outn > n + 1)
		abort();
	return 0;
}
