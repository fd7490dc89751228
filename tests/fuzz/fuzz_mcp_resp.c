/*
 * tests/fuzz/fuzz_mcp_resp.c - the MCP answer filter (proxy/judge/mcp_resp.c)
 * on arbitrary answers, fed in pieces the input chooses.
 *
 * The first byte picks the type (even: text/event-stream, odd:
 * application/json) and seeds the split; the rest is the body.  Checks, on
 * every input:
 *   - the filter never crashes, and a failure is a refusal (-1 with a reason);
 *   - what it lets out is filtered for good: fed again, whole, it comes out
 *     byte for byte the same and removes nothing (the filter is idempotent,
 *     and every unit it re-emits is one it would pass);
 *   - no entry a rule denies ("d*") is in what came out of a filtered
 *     answer's list events (checked on the second pass: nothing removed).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>

#include "tests/fuzz/fuzz_mcp_common.h"
#include "policy/judge.h"
#include "tests/unit/proxy/mcp_resp_harness.h"

static const char policy_yaml[] = FUZZ_MCP_POLICY;

static struct policy *pol;
static const struct policy_host *host;

/* Runs the filter over <body>/<n> in pieces of 1 + seed % 97 bytes; 0 with what came out in <out>, or -1. */
static int
run(int json, const uint8_t *body, size_t n, unsigned seed, struct evbuffer *out, long *removed)
{
	struct conn c;
	struct req r;
	struct h1_message m;
	const char *why = NULL;
	size_t off = 0, step;
	int rc = 0;

	if (harness_begin(&c, &r, &m, pol, host, json) != (json ? MCP_RESP_JSON : MCP_RESP_SSE))
		abort();
	while (rc == 0 && off < n) {
		step = 1 + seed % 97;
		seed = seed * 1103515245u + 12345u;
		if (step > n - off)
			step = n - off;
		evbuffer_add(mcp_resp_in(&r), body + off, step);
		off += step;
		if (evbuffer_get_length(mcp_resp_in(&r)) > mcp_resp_queue_max(&r))
			break;
		rc = mcp_resp_pump(&c, 0, &why);
		evbuffer_add_buffer(out, mcp_resp_out(&r));
	}
	if (rc == 0) {
		rc = mcp_resp_pump(&c, 1, &why);
		evbuffer_add_buffer(out, mcp_resp_out(&r));
	}
	if (rc != 0 && why == NULL)
		abort();  /* a refusal always says why (it is audited) */
	(void)mcp_resp_audit(&r, removed);
	mcp_resp_free(&r);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct evbuffer *a, *b;
	long ra = 0, rb = 0;
	int json;

	pol = fuzz_mcp_policy(policy_yaml, &host);
	if (size < 1 || size > (1u << 20))
		return 0;
	json = data[0] & 1;
	a = evbuffer_new();
	b = evbuffer_new();
	if (run(json, data + 1, size - 1, data[0], a, &ra) == 0) {
		size_t n = evbuffer_get_length(a);
		const uint8_t *p = evbuffer_pullup(a, -1);

		/* filtered for good: again, whole, the same bytes and nothing removed */
		if (run(json, p, n, 7, b, &rb) != 0 || rb != 0 || evbuffer_get_length(b) != n ||
		    (n > 0 && memcmp(evbuffer_pullup(b, -1), p, n) != 0))
			abort();
	}
	evbuffer_free(a);
	evbuffer_free(b);
	return 0;
}
