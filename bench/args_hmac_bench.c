/*
 * bench/args_hmac_bench.c - the cost of the audit fingerprint of MCP
 * arguments (issue 23): RFC 8785 canonicalisation (common/jcs.c) and the
 * keyed HMAC over it (audit_args_hmac, audit/keys.c), on the arguments of a
 * tools/call of about 1 KiB, against parsing the same message with jansson
 * (what the judge does already).  Not a test: build with `cmake --build
 * BUILD --target args_hmac_bench` and run it; it prints the median and 99th
 * percentile in ns per call for each step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/jcs.h"
#include "common/sluice.h"
#include "audit/audit.h"

#define ROUNDS 2001 /* timed batches */
#define BATCH 50    /* calls per batch */

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int
null_sink(void *arg, const char *p, size_t n)
{
	(void)p;
	*(size_t *)arg += n;
	return 0;
}

enum step { PARSE, JCS, HMAC_ARGS };

static void
run(const char *label, enum step st, const char *text, json_t *args)
{
	static double t[ROUNDS];
	uint8_t key[AUDIT_KEY_BYTES] = {1, 2, 3};
	char hex[AUDIT_HASH_HEX + 1];
	size_t i, j, sink = 0;

	for (i = 0; i < ROUNDS; i++) {
		double t0 = now_ns();

		for (j = 0; j < BATCH; j++) {
			if (st == PARSE) {
				json_t *v = json_loads(text, JSON_REJECT_DUPLICATES, NULL);

				json_decref(v);
			} else if (st == JCS) {
				if (jcs_emit(args, 1 << 20, null_sink, &sink) != 0)
					abort();
			} else if (audit_args_hmac(key, args, hex) != 0) {
				abort();
			}
		}
		t[i] = (now_ns() - t0) / BATCH;
	}
	qsort(t, ROUNDS, sizeof(t[0]), cmp);
	printf("%-44s median %8.0f ns   p99 %8.0f ns\n", label, t[ROUNDS / 2], t[ROUNDS * 99 / 100]);
}

int
main(void)
{
	char text[4096];
	json_t *msg, *args;
	char *canon;
	int n;

	/* a create_issue of about 1 KiB: strings, integers, a real, a list, a nested object */
	n = snprintf(text, sizeof(text),
	             "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":{\"name\":\"create_issue\","
	             "\"arguments\":{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"Flaky test in the parser suite\","
	             "\"body\":\"%s\",\"labels\":[\"bug\",\"flaky\",\"ci\",\"parser\"],\"assignees\":[\"alice\",\"bob\"],"
	             "\"milestone\":17,\"weight\":2.5,\"meta\":{\"source\":\"agent\",\"run\":123456789,\"confidence\":0.87}}}}",
	             "The parser test fails about one run in twenty on the shared runners. It looks like a race between "
	             "the reader and the timer; the log below shows the timer firing before the first read completes. "
	             "Steps: run the suite in a loop with two workers, watch for the timeout. Expected: no timeout. "
	             "Seen: a timeout after 30 s, once in about twenty runs, on both runners. The failure started after "
	             "the change that moved the deadline heap; reverting it makes the failure go away in 200 runs. "
	             "Attached: the last 100 lines of the log, and the environment. Please look into the ordering of "
	             "the timer and the read callback, and add a test that runs them in both orders.");
	msg = json_loadb(text, (size_t)n, 0, NULL);
	args = json_object_get(json_object_get(msg, "params"), "arguments");
	if (args == NULL)
		return 1;
	canon = json_dumps(args, JSON_COMPACT);
	printf("message %d bytes; arguments %zu bytes compact\n", n, canon != NULL ? strlen(canon) : 0);
	free(canon);
	run("parse the message (jansson, as the judge does)", PARSE, text, NULL);
	run("jcs_emit of the arguments", JCS, NULL, args);
	run("audit_args_hmac of the arguments", HMAC_ARGS, NULL, args);
	json_decref(msg);
	return 0;
}
