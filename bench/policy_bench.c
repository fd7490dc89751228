/*
 * bench/policy_bench.c - the cost of deciding one request against a
 * generated 500-rule policy with JSON conditions (issue 6: at most 20 us at
 * the median).  Not a test: build with `cmake --build BUILD --target
 * policy_bench` and run it; it prints the median and 99th percentile in ns
 * per decision for each shape.
 *
 * Each shape is run with a small body (a chat message, about 100 bytes) and
 * a body of about 1 KiB.  Parsing the body with jansson is most of the
 * cost: jansson builds a tree, one allocation per value.
 *
 * Shapes:
 *  - spread:   50 hosts x 10 rules; the request's host has 10 rules, it
 *              matches the last one, whose JSON conditions read the body;
 *  - one host: 500 rules on one host, each with a path glob and JSON
 *              conditions; the request reaches the 500th (every earlier rule
 *              fails on its path), parsing the body once;
 *  - all json: 500 rules on one host with the same path: every rule reads
 *              the body (parsed once) and fails on its JSON condition
 *              until the last: the worst case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/policy.h"

#define RULES 500
#define ROUNDS 2001   /* timed batches */
#define BATCH 50      /* decisions per batch */

struct buf {
	char *s;
	size_t len, cap;
};

static void
put(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#include <stdarg.h>
static void
put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + 4096;
		b->s = realloc(b->s, b->cap);
		if (b->s == NULL)
			abort();
	}
	b->len += (size_t)n;
}

static struct policy *
load(const struct buf *b)
{
	struct policy *p = NULL;
	char err[512];

	if (policy_load_buffer("bench.yaml", b->s, b->len, NULL, &p, err, sizeof(err)) != 0) {
		fprintf(stderr, "policy_bench: %s\n", err);
		exit(1);
	}
	return p;
}

static void
rule(struct buf *b, int i, const char *path)
{
	put(b, "      - id: r%d\n        allow:\n          method: POST\n          path: \"%s\"\n", i, path);
	put(b, "          json:\n            \"$.kind\": { in: [k%d, k%da, k%db] }\n", i, i, i);
	put(b, "            \"$.amount\": { min: 0, max: \"%d.50\" }\n", 1000 + i);
	put(b, "            \"$.items[*].sku\": { regex: \"sku-[0-9]{1,6}\" }\n");
}

static int
cmp_u64(const void *a, const void *b)
{
	unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;

	return x < y ? -1 : x > y;
}

static unsigned long long
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void
run(const char *name, const struct policy *p, const char *host, const char *path, const char *body,
    const char *want_rule)
{
	static unsigned long long t[ROUNDS];
	struct policy_conn_decision cd;
	struct policy_request q;
	struct policy_decision d;
	int i, k;

	memset(&q, 0, sizeof(q));
	q.method = "POST";
	q.method_len = 4;
	q.path = path;
	q.path_len = strlen(path);
	q.content_type = "application/json";
	q.content_type_len = strlen(q.content_type);
	q.body = body;
	q.body_len = strlen(body);
	q.body_complete = 1;
	for (i = 0; i < ROUNDS; i++) {
		unsigned long long t0 = now_ns();

		for (k = 0; k < BATCH; k++) {
			policy_decide_conn(p, host, 443, &cd);
			policy_decide(p, cd.host, &q, &d);
		}
		t[i] = (now_ns() - t0) / BATCH;
	}
	if (d.act.verdict != POLICY_REQ_ALLOW || strcmp(d.act.rule, want_rule) != 0) {
		fprintf(stderr, "policy_bench: %s: decided %s by %s, expected allow by %s\n", name,
		        policy_verdict_name(d.act.verdict), d.act.rule, want_rule);
		exit(1);
	}
	qsort(t, ROUNDS, sizeof(t[0]), cmp_u64);
	printf("%-9s %d rules, body %4zu bytes: median %6llu ns, p99 %6llu ns of CPU per decision\n", name, RULES,
	       q.body_len, t[ROUNDS / 2], t[ROUNDS * 99 / 100]);
}

int
main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct buf b = {NULL, 0, 0}, body = {NULL, 0, 0}, small = {NULL, 0, 0};
	struct policy *p;
	char path[64], want[16];
	int h, i;

	/* a 1 KiB JSON body */
	put(&body, "{\"kind\":\"k%d\",\"amount\":1000.25,\"items\":[", RULES - 1);
	for (i = 0; i < 24; i++)
		put(&body, "%s{\"sku\":\"sku-%06d\",\"qty\":%d}", i ? "," : "", i, i + 1);
	put(&body, "],\"note\":\"%s\"}", "benchmark body, padded to about one kibibyte of JSON");
	put(&small, "{\"kind\":\"k%d\",\"amount\":12.5,\"items\":[{\"sku\":\"sku-000001\"}],\"text\":\"deploy finished\"}",
	    RULES - 1);
	printf("policy_bench: deciding one request (host lookup and rules), %d rounds of %d, CPU time "
	       "(goal: <= 20000 ns at the median)\n", ROUNDS, BATCH);

	/* spread: 50 hosts x 10 rules */
	put(&b, "ca: /x\nhosts:\n");
	for (h = 0; h < RULES / 10; h++) {
		put(&b, "  h%d.example.com:\n    rules:\n", h);
		for (i = 0; i < 10; i++) {
			snprintf(path, sizeof(path), "/api/v1/res%d/**", i);
			rule(&b, h * 10 + i, path);
		}
	}
	p = load(&b);
	snprintf(want, sizeof(want), "r%d", RULES - 1);
	if (only == NULL || strcmp(only, "spread") == 0) {
		run("spread", p, "h49.example.com", "/api/v1/res9/items/42", small.s, want);
		run("spread", p, "h49.example.com", "/api/v1/res9/items/42", body.s, want);
	}
	policy_unref(p);

	/* one host, 500 path globs */
	b.len = 0;
	put(&b, "ca: /x\nhosts:\n  api.example.com:\n    rules:\n");
	for (i = 0; i < RULES; i++) {
		snprintf(path, sizeof(path), "/api/v1/res%d/**", i);
		rule(&b, i, path);
	}
	p = load(&b);
	if (only == NULL || strcmp(only, "one") == 0) {
		run("one host", p, "api.example.com", "/api/v1/res499/items/42", small.s, want);
		run("one host", p, "api.example.com", "/api/v1/res499/items/42", body.s, want);
	}
	policy_unref(p);

	/* one host, one path: every rule reads the body */
	b.len = 0;
	put(&b, "ca: /x\nhosts:\n  api.example.com:\n    rules:\n");
	for (i = 0; i < RULES; i++)
		rule(&b, i, "/api/v1/**");
	p = load(&b);
	if (only == NULL || strcmp(only, "all") == 0) {
		run("all json", p, "api.example.com", "/api/v1/items/42", small.s, want);
		run("all json", p, "api.example.com", "/api/v1/items/42", body.s, want);
	}
	policy_unref(p);

	free(b.s);
	free(body.s);
	free(small.s);
	return 0;
}
