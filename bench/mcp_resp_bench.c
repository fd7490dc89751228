/*
 * bench/mcp_resp_bench.c - the MCP answer filter (proxy/judge/mcp_resp.c) in
 * process, without the network: CPU per event of an SSE stream pumped
 * through it in 16 KiB pieces (as TLS records bring it), against copying the
 * same pieces from one evbuffer to another (what relaying an unfiltered body
 * costs beyond the network).  Not a test.  `cmake --build B --target
 * mcp_resp_bench && B/tests/unit/proxy/mcp_resp_bench [EVENTS [ROUNDS [all|mix|esc|big]]]`.
 *
 * Streams: "all", every event a tools/list result of two tools (one hidden);
 * "mix", progress notifications and tool results with a list result every
 * 100 events; "esc", the "all" stream with the tool names written with \u
 * escapes (read by the scanner, not jansson); "big", one application/json
 * tools/list answer of 10,000 tools, half hidden.  Medians of ROUNDS rounds.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>

#include "policy/judge.h"
#include "tests/unit/proxy/mcp_resp_harness.h"

static const char policy_yaml[] =
	"ca: /x\n"
	"default: deny\n"
	"hosts:\n"
	"  m.test:\n"
	"    mcp: { endpoint: /mcp }\n"
	"    rules:\n"
	"      - { id: stream, allow: { method: GET, path: /mcp } }\n"
	"      - { id: call, allow: { method: POST, path: /mcp, mcp: { tool: \"bench_*\" } } }\n";

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);  /* CPU time: less moved by the other tenants of a shared machine */
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *
stream(const char *kind, int events, size_t *len)
{
	size_t cap = (size_t)events * 200 + 1, n = 0;
	char *b = malloc(cap);
	int i;

	if (b == NULL)
		exit(1);
	for (i = 0; i < events; i++) {
		if (strcmp(kind, "esc") == 0)
			n += (size_t)snprintf(b + n, cap - n, "id: %d\nevent: message\ndata: {\"jsonrpc\": \"2.0\", \"id\": %d, "
			                      "\"result\": {\"tools\": [{\"name\": \"bench\\u005fa\"}, {\"name\": \"drop\\u005fb\"}]}}\n\n",
			                      i, i);
		else if (strcmp(kind, "all") == 0 || i % 100 == 0)
			n += (size_t)snprintf(b + n, cap - n, "id: %d\nevent: message\ndata: {\"jsonrpc\": \"2.0\", \"id\": %d, "
			                      "\"result\": {\"tools\": [{\"name\": \"bench_a\"}, {\"name\": \"drop_b\"}]}}\n\n", i, i);
		else if (i % 2)
			n += (size_t)snprintf(b + n, cap - n, "id: %d\nevent: message\ndata: {\"jsonrpc\": \"2.0\", \"method\": "
			                      "\"notifications/progress\", \"params\": {\"progressToken\": 1, \"progress\": %d}}\n\n",
			                      i, i);
		else
			n += (size_t)snprintf(b + n, cap - n, "id: %d\nevent: message\ndata: {\"jsonrpc\": \"2.0\", \"id\": %d, "
			                      "\"result\": {\"content\": [{\"type\": \"text\", \"text\": \"line\"}]}}\n\n", i, i);
	}
	*len = n;
	return b;
}

/* An application/json tools/list answer of <tools> tools, every other one hidden. */
static char *
big(int tools, size_t *len)
{
	size_t cap = (size_t)tools * 120 + 64, n = 0;
	char *b = malloc(cap);
	int i;

	if (b == NULL)
		exit(1);
	n += (size_t)snprintf(b + n, cap - n, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[");
	for (i = 0; i < tools; i++)
		n += (size_t)snprintf(b + n, cap - n, "%s{\"name\":\"%s_%d\",\"description\":\"a tool\",\"inputSchema\":"
		                      "{\"type\":\"object\"}}", i ? "," : "", i % 2 ? "bench" : "drop", i);
	n += (size_t)snprintf(b + n, cap - n, "]}}");
	*len = n;
	return b;
}

/* Seconds to pump <s>/<n> through the filter (<filter> 1) or to copy it (0), in 16 KiB pieces. */
static double
run(struct policy *pol, const struct policy_host *host, const char *s, size_t n, int filter, int json, size_t *outn)
{
	struct evbuffer *in = evbuffer_new(), *out = evbuffer_new();
	struct conn c;
	struct req r;
	struct h1_message m;
	const char *why = NULL;
	size_t off = 0;
	double t0;

	t0 = now();
	if (filter && harness_begin(&c, &r, &m, pol, host, json) != (json ? MCP_RESP_JSON : MCP_RESP_SSE))
		exit(1);
	while (off < n) {
		size_t step = n - off < 16384 ? n - off : 16384;

		if (filter) {
			evbuffer_add(mcp_resp_in(&r), s + off, step);
			if (mcp_resp_pump(&c, 0, &why) != 0) {
				fprintf(stderr, "refused: %s\n", why);
				exit(1);
			}
			evbuffer_add_buffer(out, mcp_resp_out(&r));
		} else {
			evbuffer_add(in, s + off, step);
			evbuffer_add_buffer(out, in);
		}
		off += step;
		*outn = evbuffer_get_length(out);
		evbuffer_drain(out, *outn);
	}
	if (filter && json) {
		if (mcp_resp_pump(&c, 1, &why) != 0) {
			fprintf(stderr, "refused: %s\n", why);
			exit(1);
		}
		evbuffer_add_buffer(out, mcp_resp_out(&r));
		*outn = evbuffer_get_length(out);
	}
	t0 = now() - t0;
	if (filter)
		mcp_resp_free(&r);
	evbuffer_free(in);
	evbuffer_free(out);
	return t0;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static const char *const kinds[] = {"all", "mix", "esc"};
	int events = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 100000, rounds = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 9;
	int k, i;
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	char err[512];

	if (events <= 0 || rounds <= 0 || rounds > 99 ||
	    policy_load_buffer("b.yaml", policy_yaml, strlen(policy_yaml), NULL, &pol, err, sizeof(err)) != 0)
		return 1;
	policy_decide_conn(pol, "m.test", 443, &cd);
	for (k = 0; k < 3; k++) {
		size_t n, outn = 0;

		if (argc > 3 && strcmp(argv[3], kinds[k]) != 0)
			continue;
		char *s;
		double f[99], u[99];

		s = stream(kinds[k], events, &n);
		for (i = 0; i < rounds; i++) {
			f[i] = run(pol, cd.host, s, n, 1, 0, &outn);
			u[i] = run(pol, cd.host, s, n, 0, 0, &outn);
		}
		qsort(f, (size_t)rounds, sizeof(double), cmp);
		qsort(u, (size_t)rounds, sizeof(double), cmp);
		printf("%s: %d events, %zu bytes: filter %.0f ns/event (median of %d), copy %.0f ns/event\n", kinds[k], events,
		       n, f[rounds / 2] * 1e9 / events, rounds, u[rounds / 2] * 1e9 / events);
		free(s);
	}
	if (argc <= 3 || strcmp(argv[3], "big") == 0) {
		size_t n, outn = 0;
		char *s = big(10000, &n);
		double f[99];

		for (i = 0; i < rounds; i++)
			f[i] = run(pol, cd.host, s, n, 1, 1, &outn);
		qsort(f, (size_t)rounds, sizeof(double), cmp);
		printf("big: a JSON answer of 10,000 tools, %zu bytes (%zu out): filter %.2f ms (median of %d)\n", n, outn,
		       f[rounds / 2] * 1e3, rounds);
		free(s);
	}
	policy_unref(pol);
	return 0;
}
