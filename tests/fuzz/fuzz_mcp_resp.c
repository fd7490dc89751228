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
 *     answer's list events (checked on the second pass: nothing removed);
 *   - a stream's events are judged alone: each complete unit through a
 *     filter of its own gives the bytes the stream's filter gave for it
 *     (what the filter remembers between events, its repeat of the last
 *     list result, changes nothing that leaves).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>

#include "tests/fuzz/fuzz_mcp_common.h"
#include "policy/judge.h"
#include "proxy/codec/sse.h"
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

/*
 * The complete units of the stream <body>/<n>, each through a filter of its
 * own, into <out>: 0, -1 when one is refused (the stream's filter refused
 * it too: not compared), or 1 when a unit after the first opens with 0xEF (a
 * filter of its own would read a byte order mark there: not compared).
 */
static int
run_units(const uint8_t *body, size_t n, struct evbuffer *out)
{
	struct sse_parser p;
	struct sse_unit u;
	size_t off = 0;
	long r, removed;
	int rc = 0;

	sse_parser_init(&p, 0);
	while (rc == 0 && off < n && (r = sse_parse(&p, (const char *)body + off, n - off, &u)) > 0) {
		if (off > 0 && (unsigned char)u.raw[0] == 0xef)
			rc = 1;
		else if (run(0, (const uint8_t *)u.raw, u.raw_len, 96, out, &removed) != 0)
			rc = -1;  /* in one piece (1 + 96 % 97 = 97 bytes a piece at most: the split does not matter) */
		off += (size_t)r;
	}
	sse_parser_dispose(&p);
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
		/* each event alone: the same bytes */
		evbuffer_drain(b, evbuffer_get_length(b));
		if (!json && run_units(data + 1, size - 1, b) == 0 &&
		    (evbuffer_get_length(b) != n || (n > 0 && memcmp(evbuffer_pullup(b, -1), p, n) != 0)))
			abort();
	}
	evbuffer_free(a);
	evbuffer_free(b);
	return 0;
}
