/*
 * bench/store_bench.c - the Redis store's cost (proxy/store/store.h): a
 * redis-server of its own on a unix socket (tests/unit/proxy/redis_fixture.h),
 * one store on one event base, rate-limit takes of a global limit.
 *   1. latency: one take in flight at a time, N takes: p50, p90, p99 in us;
 *   2. throughput: D takes in flight (a worker serving D requests at once),
 *      N takes: takes per second;
 *   3. the same two for a budget take.
 * Not a test (no assertions on time; the machine is shared).  Usage:
 *   store_bench [N (20000)] [D (64)]
 * Build: cmake --build build/release --target store_bench
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/store/store.h"
#include "secrets/secrets.h"
#include "tests/unit/proxy/redis_fixture.h"

struct run {
	struct event_base *base;
	struct store *s;
	const struct policy_limit *lim;
	const struct policy_budget *b;
	int todo, inflight, done, bad;
	uint64_t *lat;         /* per take, us (latency runs only) */
	uint64_t t_sent;
};

static uint64_t
us_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void start(struct run *r);

static void
done_cb(const struct store_result *res, void *arg)
{
	struct run *r = arg;

	if (r->lat != NULL)
		r->lat[r->done] = us_now() - r->t_sent;
	if (res->outcome < 0)
		r->bad++;
	r->done++;
	r->inflight--;
	if (r->todo > 0)
		start(r);
}

static void
start(struct run *r)
{
	struct store_op *op;
	int ret;

	r->t_sent = us_now();
	if (r->lim != NULL)
		ret = store_rate_take(r->s, r->lim, NULL, done_cb, r, &op);
	else
		ret = store_budget_take(r->s, r->b, NULL, 1, done_cb, r, &op);
	r->todo--;
	if (ret != 0) {
		r->bad++;
		r->done++;
		return;
	}
	r->inflight++;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* N takes with <depth> in flight; prints the figures. */
static void
measure(struct event_base *base, struct store *s, const struct policy_limit *lim, const struct policy_budget *b,
        int n, int depth, const char *what)
{
	struct run r = {base, s, lim, b, n, 0, 0, 0, NULL, 0};
	uint64_t t0, el;
	int i;

	if (depth == 1)
		r.lat = calloc((size_t)n, sizeof(*r.lat));
	t0 = us_now();
	for (i = 0; i < depth && r.todo > 0; i++)
		start(&r);
	while (r.done < n)
		event_base_loop(base, EVLOOP_ONCE);
	el = us_now() - t0;
	if (depth == 1) {
		qsort(r.lat, (size_t)n, sizeof(*r.lat), cmp);
		printf("%-6s latency, 1 in flight: p50 %llu us, p90 %llu us, p99 %llu us (%d takes, %d errors)\n", what,
		       (unsigned long long)r.lat[n / 2], (unsigned long long)r.lat[n * 9 / 10],
		       (unsigned long long)r.lat[n * 99 / 100], n, r.bad);
		free(r.lat);
	}
	printf("%-6s throughput, %d in flight: %.0f takes/s (%d takes in %.3f s, %d errors)\n", what, depth,
	       n / (el / 1e6), n, el / 1e6, r.bad);
}

int
main(int argc, char **argv)
{
	int n = argc > 1 ? (int)strtol(argv[1], NULL, 10) : 20000, depth = argc > 2 ? (int)strtol(argv[2], NULL, 10) : 64;
	struct policy_limit lim = {"limit:bench", 1000000000u, 1, POLICY_SCOPE_GLOBAL};
	struct policy_budget b = {"budget:bench", "form:amount", STORE_AMOUNT_MAX, 86400, POLICY_SCOPE_GLOBAL};
	struct event_base *base;
	struct secret_buf *pw;
	struct store_opts o = {0};
	struct store *s;
	const char *err = NULL;
	struct rfx rs;
	uint64_t end;

	if (n < 100 || depth < 1) {
		fprintf(stderr, "usage: store_bench [N >= 100] [D >= 1]\n");
		return 2;
	}
	if (rfx_start(&rs) != 0) {
		fprintf(stderr, "store_bench: cannot start redis-server\n");
		rfx_stop(&rs);
		return 1;
	}
	base = event_base_new();
	pw = secret_buf_new(sizeof(rs.password));
	memcpy(pw->p, rs.password, strlen(rs.password));
	pw->len = strlen(rs.password);
	o.unix_path = rs.sock;
	o.password = pw;
	o.timeout_ms = 1000;
	o.key_prefix = "bench:";
	s = store_create(base, &o, &err);
	secret_buf_free(pw);
	end = us_now() + 5000000;
	while (s != NULL && store_state_get(s) != STORE_S_READY && us_now() < end)
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	if (s == NULL || store_state_get(s) != STORE_S_READY) {
		fprintf(stderr, "store_bench: the store is not ready\n");
		rfx_stop(&rs);
		return 1;
	}
	printf("redis-server on a unix socket; %d takes per figure\n", n);
	measure(base, s, &lim, NULL, n / 10, 1, "warmup");
	measure(base, s, &lim, NULL, n, 1, "rate");
	measure(base, s, &lim, NULL, n, depth, "rate");
	measure(base, s, NULL, &b, n, 1, "budget");
	measure(base, s, NULL, &b, n, depth, "budget");
	store_destroy(s);
	event_base_free(base);
	rfx_stop(&rs);
	return 0;
}
