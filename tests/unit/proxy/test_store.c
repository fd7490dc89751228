/*
 * tests/unit/proxy/test_store.c - proxy/store/: the shared counters against
 * a real redis-server the test starts on a unix socket of its own
 * (redis_fixture.h; stopped in the group teardown, and killed with the test
 * process if it crashes).  (Keys and the reply readers, which need no
 * Redis, are in test_store_reply.c.)  Two event bases and 200
 * concurrent takes on one cap of 50 (exactly 50 allowed, for a budget and
 * for a rate limit); rate takes of one round batched into one script per
 * counter, granted in order; refunds; windows and buckets that roll with Redis's
 * TIME; NOSCRIPT after SCRIPT FLUSH; a stopped Redis (SIGSTOP) giving
 * STORE_ETIMEOUT, then recovering; kill and restart; an evicting
 * maxmemory-policy refused for budgets (through CONFIG GET and, with CONFIG
 * denied, INFO); a wrong password failing closed with the password in no
 * output; cancel and destroy with operations in flight; the state:
 * section's options to a ready store; TCP to a Redis on 127.0.0.1.  Every
 * wait is bounded.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <hiredis/hiredis.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/store/store.h"
#include "proxy/store/store_int.h"
#include "secrets/secrets.h"
#include "redis_fixture.h"

#define WAIT_MS 8000            /* the longest any wait in this file may take */
#define TIMEOUT_MS 200          /* the stores' per-operation timeout */
#define UNIT INT64_C(1000000)

static struct rfx rs;

/* ---- helpers ---- */

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void
tick(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
}

/* Runs <base> until *<flag> >= <want> or <ms> passed; returns whether it got there. */
static int
run_until(struct event_base *base, const int *flag, int want, unsigned ms)
{
	struct event *t = event_new(base, -1, EV_PERSIST, tick, NULL);
	struct timeval tv = {0, 5000};
	uint64_t end = now_ms() + ms;

	event_add(t, &tv);
	while (__atomic_load_n(flag, __ATOMIC_RELAXED) < want && now_ms() < end)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(t);
	return __atomic_load_n(flag, __ATOMIC_RELAXED) >= want;
}

static int ready_flag;

static int
wait_ready(struct event_base *base, struct store *s, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	while (store_state_get(s) != STORE_S_READY && now_ms() < end) {
		ready_flag = 0;
		run_until(base, &ready_flag, 1, 20);
	}
	return store_state_get(s) == STORE_S_READY;
}

static struct secret_buf *
pw_buf(const char *pw)
{
	struct secret_buf *b = secret_buf_new(strlen(pw) + 1);

	assert_non_null(b);
	memcpy(b->p, pw, strlen(pw));
	b->len = strlen(pw);
	return b;
}

/* A store on <base> to the fixture's Redis with <pw> (NULL: the right one). */
static struct store *
mk_store(struct event_base *base, const char *pw, unsigned backoff_max_ms)
{
	struct secret_buf *b = pw_buf(pw != NULL ? pw : rs.password);
	struct store_opts o = {.unix_path = rs.sock, .password = b, .timeout_ms = TIMEOUT_MS, .key_prefix = "t:",
	                       .backoff_max_ms = backoff_max_ms};
	const char *err = NULL;
	struct store *s = store_create(base, &o, &err);

	secret_buf_free(b);
	assert_non_null(s);
	return s;
}

static void flush(void);

/* An empty Redis and a store on <base> that is ready. */
static struct store *
ready_store(struct event_base *base, unsigned backoff_max_ms)
{
	struct store *s;

	flush();
	s = mk_store(base, NULL, backoff_max_ms);
	assert_true(wait_ready(base, s, WAIT_MS));
	return s;
}

/* Results of many operations, counted by outcome. */
struct tally {
	int done;
	int allowed, refused, timeout, down, other, shutdown;
	struct store_result last;
};

static void
tally_cb(const struct store_result *res, void *arg)
{
	struct tally *t = arg;

	switch (res->outcome) {
	case STORE_ALLOWED:
		t->allowed++;
		break;
	case STORE_REFUSED:
		t->refused++;
		break;
	case STORE_ETIMEOUT:
		t->timeout++;
		break;
	case STORE_EDOWN:
		t->down++;
		break;
	case STORE_ESHUTDOWN:
		t->shutdown++;
		break;
	default:
		t->other++;
		break;
	}
	t->last = *res;
	__atomic_fetch_add(&t->done, 1, __ATOMIC_RELAXED);
}

static struct policy_budget
budget(const char *key, int64_t max_units, uint32_t period_s, enum policy_scope scope)
{
	struct policy_budget b = {SLUICE_DECONST(char *, key), SLUICE_DECONST(char *, "form:amount"), max_units * UNIT, period_s, scope};

	return b;
}

static struct policy_limit
rate(const char *key, uint32_t count, uint32_t period_s, enum policy_scope scope)
{
	struct policy_limit l = {SLUICE_DECONST(char *, key), count, period_s, scope};

	return l;
}

static void
flush(void)
{
	assert_int_equal(rfx_cmd(&rs, "FLUSHALL"), 0);
}

/* One budget take on <s>, waited for. */
static struct store_result
take1(struct event_base *base, struct store *s, const struct policy_budget *b, const char *sb, int64_t amount)
{
	struct tally t = {0};
	struct store_op *op;

	assert_int_equal(store_budget_take(s, b, sb, amount, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	return t.last;
}

static struct store_result
rate1(struct event_base *base, struct store *s, const struct policy_limit *l, const char *sb)
{
	struct tally t = {0};
	struct store_op *op;

	assert_int_equal(store_rate_take(s, l, sb, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	return t.last;
}

/* ---- group fixture ---- */

static int
group_setup(void **state)
{
	(void)state;
	signal(SIGPIPE, SIG_IGN);
	return rfx_start(&rs);
}

static int
group_teardown(void **state)
{
	(void)state;
	rfx_stop(&rs);
	return 0;
}

/* ---- against Redis ---- */

struct worker {
	const struct policy_budget *b;
	const struct policy_limit *l;
	int n;
	struct tally t;
};

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	struct event_base *base = event_base_new();
	struct store *s = mk_store(base, NULL, 0);
	struct store_op *op;
	int i;

	if (!wait_ready(base, s, WAIT_MS))
		fail_msg("store not ready");
	for (i = 0; i < w->n; i++) {
		if (w->b != NULL)
			assert_int_equal(store_budget_take(s, w->b, "sb", UNIT, tally_cb, &w->t, &op), 0);
		else
			assert_int_equal(store_rate_take(s, w->l, "sb", tally_cb, &w->t, &op), 0);
	}
	run_until(base, &w->t.done, w->n, WAIT_MS);
	store_destroy(s);
	event_base_free(base);
	return NULL;
}

/* Two event bases (two threads, two connections) with 100 concurrent takes each on one cap of 50. */
static void
test_concurrent_cap(void **state)
{
	struct policy_budget b = budget("budget:cap", 50, 86400, POLICY_SCOPE_GLOBAL);
	struct policy_limit l = rate("limit:cap", 50, 86400, POLICY_SCOPE_GLOBAL);
	struct worker w[2];
	pthread_t th[2];
	int round, i;

	(void)state;
	flush();
	for (round = 0; round < 2; round++) {
		memset(w, 0, sizeof(w));
		for (i = 0; i < 2; i++) {
			w[i].b = round == 0 ? &b : NULL;
			w[i].l = round == 1 ? &l : NULL;
			w[i].n = 100;
			assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
		}
		for (i = 0; i < 2; i++)
			pthread_join(th[i], NULL);
		assert_int_equal(w[0].t.done + w[1].t.done, 200);
		assert_int_equal(w[0].t.allowed + w[1].t.allowed, 50);
		assert_int_equal(w[0].t.refused + w[1].t.refused, 150);
	}
}

/* The EVALSHA calls Redis has run since the last CONFIG RESETSTAT (INFO commandstats), or -1. */
static long
evalsha_calls(void)
{
	redisContext *c = rfx_admin(&rs);
	redisReply *rep;
	const char *p;
	long n = -1;

	if (c == NULL)
		return -1;
	rep = redisCommand(c, "INFO commandstats");
	if (rep != NULL && rep->type == REDIS_REPLY_STRING)
		n = (p = strstr(rep->str, "cmdstat_evalsha:calls=")) != NULL ? strtol(p + 22, NULL, 10) : 0;
	if (rep != NULL)
		freeReplyObject(rep);
	redisFree(c);
	return n;
}

/*
 * Rate takes made in one loop round go as one EVALSHA per counter (at most
 * STORE_BATCH_MAX takes each): 150 takes on a limit of 100 and 10 on a
 * per-sandbox limit of 3, interleaved, are 3 + 1 scripts; exactly the first
 * 100 and the first 3 pass, in the order they were made, and the refused
 * ones get the time until a token; a cancelled leader and a cancelled
 * follower get no callback (their tokens are still taken); the next round
 * starts a new batch on the state the last one left.
 */
struct ordered {
	int done, allowed, refused;
	int max_allowed, min_refused;   /* indexes of the takes: every allowed one was made before every refused one */
	uint64_t retry;
};
struct slot {
	struct ordered *o;
	int idx;
};

static void
ordered_cb(const struct store_result *res, void *arg)
{
	const struct slot *sl = arg;
	struct ordered *o = sl->o;

	if (res->outcome == STORE_ALLOWED) {
		o->allowed++;
		if (sl->idx > o->max_allowed)
			o->max_allowed = sl->idx;
	} else if (res->outcome == STORE_REFUSED) {
		o->refused++;
		o->retry = res->retry_after_ms;
		if (sl->idx < o->min_refused)
			o->min_refused = sl->idx;
	}
	o->done++;
}

static void
test_batch(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, 0);
	struct policy_limit l = rate("limit:batch", 100, 3600, POLICY_SCOPE_GLOBAL);
	struct policy_limit per = rate("limit:batch-sb", 3, 3600, POLICY_SCOPE_SANDBOX);
	struct ordered g = {.max_allowed = -1, .min_refused = 1000}, sb = g, other = g;
	struct slot gs[150], ss[10], os = {&other, 0};
	struct tally *gone = xcalloc(1, sizeof(*gone));
	struct store_op *op, *lead = NULL, *mid = NULL;
	int i;

	(void)state;
	assert_int_equal(rfx_cmd(&rs, "CONFIG RESETSTAT"), 0);
	for (i = 0; i < 150; i++) {
		/* take 0 leads the first batch; take 1 follows it: both cancelled, both still counted in Redis */
		gs[i] = (struct slot){&g, i};
		assert_int_equal(store_rate_take(s, &l, NULL, i < 2 ? tally_cb : ordered_cb, i < 2 ? (void *)gone : &gs[i],
		                                 &op), 0);
		if (i == 0)
			lead = op;
		else if (i == 1)
			mid = op;
		if (i % 15 == 0) {
			ss[i / 15] = (struct slot){&sb, i / 15};
			assert_int_equal(store_rate_take(s, &per, "sb-a", ordered_cb, &ss[i / 15], &op), 0);
		}
	}
	assert_int_equal(store_rate_take(s, &per, "sb-b", ordered_cb, &os, &op), 0);  /* another counter */
	store_cancel(lead);
	store_cancel(mid);
	free(gone);   /* a callback for either would now be a use after free (ASan) */
	assert_true(run_until(base, &g.done, 148, WAIT_MS));
	assert_true(run_until(base, &sb.done, 10, WAIT_MS));
	assert_true(run_until(base, &other.done, 1, WAIT_MS));
	assert_int_equal(g.allowed, 98);      /* 100 tokens: two went to the cancelled takes */
	assert_int_equal(g.refused, 50);
	assert_int_equal(g.max_allowed, 99);  /* in the order made: takes 0..99 passed, 100..149 did not */
	assert_int_equal(g.min_refused, 100);
	assert_true(g.retry > 0 && g.retry <= 36000);  /* one token is T = 36 s */
	assert_int_equal(sb.allowed, 3);
	assert_int_equal(sb.refused, 7);
	assert_int_equal(sb.max_allowed, 2);
	assert_int_equal(sb.min_refused, 3);
	assert_int_equal(other.allowed, 1);
	/* 150 takes: 64 + 64 + 22; the per-sandbox counters: one script each */
	assert_int_equal(evalsha_calls(), 5);
	/* the next round: a batch of its own, on what the first left (no token left) */
	g = (struct ordered){.max_allowed = -1, .min_refused = 1000};
	for (i = 0; i < 3; i++)
		assert_int_equal(store_rate_take(s, &l, NULL, ordered_cb, &gs[i + 2], &op), 0);
	assert_true(run_until(base, &g.done, 3, WAIT_MS));
	assert_int_equal(g.refused, 3);
	assert_int_equal(evalsha_calls(), 6);
	store_destroy(s);
	event_base_free(base);
}

/* Refunds give capacity back to the take's window, never below zero; per-sandbox budgets are apart. */
static void
test_refund(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, 0);
	struct policy_budget b = budget("budget:refund", 10, 86400, POLICY_SCOPE_SANDBOX);
	struct store_result r;
	struct tally t = {0};
	struct store_op *op;
	uint64_t window;
	int i;

	(void)state;
	assert_true(store_budgets_ok(s));
	r = take1(base, s, &b, "a", 7 * UNIT);
	assert_int_equal(r.outcome, STORE_ALLOWED);
	window = r.window_s;
	assert_int_equal(window % 86400, 0);
	assert_int_equal(take1(base, s, &b, "a", 4 * UNIT).outcome, STORE_REFUSED);
	assert_int_equal(take1(base, s, &b, "a", 3 * UNIT).outcome, STORE_ALLOWED);   /* exactly the cap */
	assert_int_equal(take1(base, s, &b, "a", 1).outcome, STORE_REFUSED);
	/* another sandbox, and a name with the separator, have their own budgets */
	assert_int_equal(take1(base, s, &b, "b", 10 * UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, "a:b", 10 * UNIT).outcome, STORE_ALLOWED);
	/* refund 5: 5 more fit, then nothing */
	assert_int_equal(store_budget_refund(s, &b, "a", 5 * UNIT, window, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	assert_int_equal(t.allowed, 1);
	for (i = 0; i < 5; i++)
		assert_int_equal(take1(base, s, &b, "a", UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, "a", 1).outcome, STORE_REFUSED);
	/* a refund larger than the sum stops at zero: then the whole cap fits, and no more */
	memset(&t, 0, sizeof(t));
	assert_int_equal(store_budget_refund(s, &b, "a", 1000 * UNIT, window, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	assert_int_equal(take1(base, s, &b, "a", 10 * UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, "a", 1).outcome, STORE_REFUSED);
	/* a refund to a window that no longer exists does not create it */
	memset(&t, 0, sizeof(t));
	assert_int_equal(store_budget_refund(s, &b, "a", UNIT, window - 86400, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	assert_int_equal(t.allowed, 1);
	/* out of bounds: refused before anything is sent */
	assert_int_equal(store_budget_take(s, &b, "a", -1, tally_cb, &t, &op), STORE_EINVAL);
	assert_null(op);
	assert_int_equal(store_budget_take(s, &b, "a", STORE_AMOUNT_MAX + 1, tally_cb, &t, &op), STORE_EINVAL);
	b.max = STORE_AMOUNT_MAX + 1;
	assert_int_equal(store_budget_take(s, &b, "a", 1, tally_cb, &t, &op), STORE_EINVAL);
	store_destroy(s);
	event_base_free(base);
}

/* Budget windows and rate buckets follow Redis's TIME: a 2 s window ends and a new one starts. */
static void
test_windows_roll(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, 0);
	struct policy_budget b = budget("budget:roll", 3, 2, POLICY_SCOPE_GLOBAL);
	struct policy_limit l = rate("limit:roll", 2, 1, POLICY_SCOPE_SANDBOX);
	redisContext *c;
	redisReply *rep;
	struct store_result r;
	long long redis_now;
	uint64_t w0;
	int i;

	(void)state;
	c = rfx_admin(&rs);
	assert_non_null(c);
	rep = redisCommand(c, "TIME");
	assert_true(rep != NULL && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2);
	redis_now = strtoll(rep->element[0]->str, NULL, 10);
	freeReplyObject(rep);
	r = take1(base, s, &b, NULL, UNIT);
	assert_int_equal(r.outcome, STORE_ALLOWED);
	w0 = r.window_s;
	/* the window is Redis's (TIME floored to the period), not this process's clock */
	assert_true((long long)w0 >= redis_now - 2 && (long long)w0 <= redis_now + 2);
	assert_int_equal(w0 % 2, 0);
	rep = redisCommand(c, "TTL t:b:budget%%3Aroll:*:%llu", (unsigned long long)w0);
	assert_true(rep != NULL && rep->type == REDIS_REPLY_INTEGER);
	assert_true(rep->integer > STORE_BUDGET_GRACE_S - 5 && rep->integer <= STORE_BUDGET_GRACE_S + 2);
	freeReplyObject(rep);
	redisFree(c);
	for (i = 0; i < 2; i++)
		assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_ALLOWED);
	r = take1(base, s, &b, NULL, UNIT);
	assert_int_equal(r.outcome, STORE_REFUSED);
	assert_true(r.retry_after_ms <= 2000);
	rfx_sleep_ms((unsigned)r.retry_after_ms + 50);
	r = take1(base, s, &b, NULL, UNIT);
	assert_int_equal(r.outcome, STORE_ALLOWED);
	assert_true(r.window_s >= w0 + 2);

	/* 2 per second: two at once, the third waits at most a second, then one more fits */
	assert_int_equal(rate1(base, s, &l, "x").outcome, STORE_ALLOWED);
	assert_int_equal(rate1(base, s, &l, "x").outcome, STORE_ALLOWED);
	r = rate1(base, s, &l, "x");
	assert_int_equal(r.outcome, STORE_REFUSED);
	assert_true(r.retry_after_ms >= 1 && r.retry_after_ms <= 1000);
	assert_int_equal(rate1(base, s, &l, "y").outcome, STORE_ALLOWED);   /* per sandbox */
	rfx_sleep_ms((unsigned)r.retry_after_ms + 20);
	assert_int_equal(rate1(base, s, &l, "x").outcome, STORE_ALLOWED);
	assert_int_equal(rate1(base, s, &l, "x").outcome, STORE_REFUSED);
	store_destroy(s);
	event_base_free(base);
}

/* SCRIPT FLUSH between takes: NOSCRIPT, load again, retry once; the take is counted once. */
static void
test_noscript(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, 0);
	struct policy_budget b = budget("budget:ns", 2, 86400, POLICY_SCOPE_GLOBAL);
	struct policy_limit l = rate("limit:ns", 5, 60, POLICY_SCOPE_GLOBAL);
	struct store_stats st;
	size_t i;

	(void)state;
	assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(rfx_cmd(&rs, "SCRIPT FLUSH"), 0);
	assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_REFUSED);   /* counted once each */
	assert_int_equal(rfx_cmd(&rs, "SCRIPT FLUSH"), 0);
	assert_int_equal(rate1(base, s, &l, NULL).outcome, STORE_ALLOWED);
	store_stats_get(s, &st);
	assert_int_equal(st.noscript, 2);
	assert_true(st.latency_count >= 4);
	/* the histogram is cumulative and its last bucket (+Inf) counts every timed reply */
	for (i = 1; i < STORE_LATENCY_BUCKETS; i++)
		assert_true(st.latency_le[i] >= st.latency_le[i - 1]);
	assert_int_equal(st.latency_le[STORE_LATENCY_BUCKETS - 1], st.latency_count);
	assert_true(st.latency_sum_us > 0);
	assert_int_equal(st.refused, 1);
	store_destroy(s);
	event_base_free(base);
}

/* A Redis that stops answering (SIGSTOP): STORE_ETIMEOUT within the bound; after SIGCONT the store recovers. */
static void
test_timeout(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, STORE_BACKOFF_MIN_MS);
	struct policy_limit l = rate("limit:to", 1000, 1, POLICY_SCOPE_GLOBAL);
	struct tally t = {0};
	struct store_op *op;
	struct store_stats st;
	uint64_t t0, el;
	int i;

	(void)state;
	kill(rs.pid, SIGSTOP);
	t0 = now_ms();
	for (i = 0; i < 10; i++)
		assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 10, WAIT_MS));
	el = now_ms() - t0;
	/* the first times out; the stalled connection is dropped and the others are then lost with it */
	assert_int_equal(t.allowed + t.refused, 0);
	assert_true(t.timeout >= 1);
	assert_int_equal(t.timeout + t.down, 10);
	assert_true(el >= TIMEOUT_MS - 5);
	assert_true(el < TIMEOUT_MS + 3000);  /* the bound, with room for a loaded machine */
	store_stats_get(s, &st);
	assert_true(st.timeouts >= 1);
	assert_true(st.disconnects >= 1);
	kill(rs.pid, SIGCONT);
	assert_true(wait_ready(base, s, WAIT_MS));
	assert_int_equal(rate1(base, s, &l, NULL).outcome, STORE_ALLOWED);
	store_destroy(s);
	event_base_free(base);
}

/* Redis killed with operations in flight (EDOWN), unreachable (EDOWN at once), restarted (reconnects). */
static void
test_restart(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, STORE_BACKOFF_MIN_MS);
	struct policy_budget b = budget("budget:rs", 5, 86400, POLICY_SCOPE_GLOBAL);
	struct tally t = {0};
	struct store_op *op;
	int i;

	(void)state;
	kill(rs.pid, SIGSTOP);   /* so that the takes are surely in flight when it dies */
	for (i = 0; i < 3; i++)
		assert_int_equal(store_budget_take(s, &b, NULL, UNIT, tally_cb, &t, &op), 0);
	event_base_loop(base, EVLOOP_NONBLOCK);
	rfx_kill(&rs);
	assert_true(run_until(base, &t.done, 3, WAIT_MS));
	assert_int_equal(t.down + t.timeout, 3);
	assert_int_not_equal(store_state_get(s), STORE_S_READY);
	assert_int_equal(store_budget_take(s, &b, NULL, UNIT, tally_cb, &t, &op), STORE_EDOWN);
	assert_null(op);
	/* a few reconnect attempts fail meanwhile; then Redis is back (empty: no scripts, no counters) */
	rfx_sleep_ms(300);
	event_base_loop(base, EVLOOP_NONBLOCK);
	assert_int_equal(rfx_spawn(&rs), 0);
	assert_true(wait_ready(base, s, WAIT_MS));
	for (i = 0; i < 5; i++)
		assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_REFUSED);
	store_destroy(s);
	event_base_free(base);
}

/* A Redis that may evict keys is not used for budgets (rate limits still are): by CONFIG GET, and by INFO
 * when CONFIG is denied. */
static void
test_evicting_refused(void **state)
{
	static const char *const setups[][2] = {
		{"CONFIG SET maxmemory-policy allkeys-lru", "ACL SETUSER default +@all"},
		{"CONFIG SET maxmemory-policy volatile-ttl", "ACL SETUSER default +@all"},
		{"CONFIG SET maxmemory-policy allkeys-lru", "ACL SETUSER default -config"},
		{"CONFIG SET maxmemory-policy noeviction", "ACL SETUSER default -config"},
	};
	struct policy_budget b = budget("budget:ev", 5, 86400, POLICY_SCOPE_GLOBAL);
	struct policy_limit l = rate("limit:ev", 5, 60, POLICY_SCOPE_GLOBAL);
	struct tally t = {0};
	struct store_op *op;
	size_t i;

	(void)state;
	for (i = 0; i < 4; i++) {
		struct event_base *base = event_base_new();
		struct store *s;
		int safe = i == 3;

		assert_int_equal(rfx_cmd(&rs, "ACL SETUSER default +@all"), 0);
		assert_int_equal(rfx_cmd(&rs, setups[i][0]), 0);
		assert_int_equal(rfx_cmd(&rs, setups[i][1]), 0);
		flush();
		s = mk_store(base, NULL, 0);
		assert_true(wait_ready(base, s, WAIT_MS));
		assert_int_equal(store_budgets_ok(s), safe);
		if (safe) {
			assert_int_equal(take1(base, s, &b, NULL, UNIT).outcome, STORE_ALLOWED);
		} else {
			assert_int_equal(store_budget_take(s, &b, NULL, UNIT, tally_cb, &t, &op), STORE_EUNSAFE);
			assert_null(op);
			assert_int_equal(store_budget_refund(s, &b, NULL, UNIT, 0, tally_cb, &t, &op), STORE_EUNSAFE);
		}
		assert_int_equal(rate1(base, s, &l, NULL).outcome, STORE_ALLOWED);
		store_destroy(s);
		event_base_free(base);
	}
	assert_int_equal(rfx_cmd(&rs, "ACL SETUSER default +@all"), 0);
	assert_int_equal(rfx_cmd(&rs, "CONFIG SET maxmemory-policy noeviction"), 0);
	assert_int_equal(t.done, 0);
}

/* Reads the file <path> into a heap buffer (*<len>). */
static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = xmalloc(1 << 20);

	assert_non_null(f);
	*len = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/* A wrong password: never ready, every operation refused at once; neither password in any output. */
static void
test_wrong_password(void **state)
{
	static const char wrong[] = "wrong-password-7f3a9c";
	struct policy_limit l = rate("limit:pw", 5, 60, POLICY_SCOPE_GLOBAL);
	struct event_base *base = event_base_new();
	char path[128];
	struct tally t = {0};
	struct store_op *op;
	struct store *s;
	int fd, saved;
	size_t len;
	char *out;

	(void)state;
	snprintf(path, sizeof(path), "%s/stderr", rs.dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd != -1);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	close(fd);
	s = mk_store(base, wrong, STORE_BACKOFF_MIN_MS);
	assert_false(wait_ready(base, s, 1500));
	assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, &t, &op), STORE_EDOWN);
	assert_null(op);
	store_destroy(s);
	/* the right password fails too when it is not this Redis's... and an absent one */
	{
		struct store_opts o = {.unix_path = rs.sock, .timeout_ms = TIMEOUT_MS};
		const char *err = NULL;

		s = store_create(base, &o, &err);
		assert_non_null(s);
		assert_false(wait_ready(base, s, 500));
		store_destroy(s);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	out = slurp(path, &len);
	unlink(path);
	assert_non_null(strstr(out, "authentication failed"));
	assert_null(memmem(out, len, wrong, strlen(wrong)));
	assert_null(memmem(out, len, rs.password, strlen(rs.password)));
	free(out);
	event_base_free(base);
}

/* Cancelled operations never call back (also when their reply comes, or their timer would fire); destroy gives
 * the rest STORE_ESHUTDOWN. */
static void
test_cancel_destroy(void **state)
{
	struct event_base *base = event_base_new();
	struct store *s = ready_store(base, 0);
	struct policy_limit l = rate("limit:cancel", 1000, 1, POLICY_SCOPE_GLOBAL);
	struct tally *gone = xcalloc(1, sizeof(*gone)), t = {0}, end = {0};
	struct store_op *ops[50], *op;
	struct store_stats st;
	int i;

	(void)state;
	for (i = 0; i < 50; i++)
		assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, gone, &ops[i]), 0);
	for (i = 0; i < 50; i++)
		store_cancel(ops[i]);
	free(gone);   /* as a request would be: a callback now would be a use after free (ASan) */
	assert_int_equal(rate1(base, s, &l, NULL).outcome, STORE_ALLOWED);   /* after the 50 replies */
	/* cancelled while Redis is stopped: no timeout callback either */
	kill(rs.pid, SIGSTOP);
	gone = xcalloc(1, sizeof(*gone));
	assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, gone, &op), 0);
	store_cancel(op);
	free(gone);
	assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, &t, &op), 0);
	assert_true(run_until(base, &t.done, 1, WAIT_MS));
	assert_int_equal(t.timeout, 1);
	kill(rs.pid, SIGCONT);
	assert_true(wait_ready(base, s, WAIT_MS));
	store_stats_get(s, &st);
	assert_true(st.ops >= 53);
	/* destroy with operations in flight */
	for (i = 0; i < 5; i++)
		assert_int_equal(store_rate_take(s, &l, NULL, tally_cb, &end, &op), 0);
	store_destroy(s);
	assert_int_equal(end.done, 5);
	assert_int_equal(end.shutdown, 5);
	event_base_free(base);
}

/* From the loaded state: section to a ready store: the URL, the password read from its file, the prefix. */
static void
test_from_config(void **state)
{
	struct event_base *base = event_base_new();
	struct policy_limit l = rate("limit:cfg", 5, 60, POLICY_SCOPE_GLOBAL);
	struct policy_config *cfg = NULL;
	struct secret_buf *pw = NULL;
	struct store_opts o;
	const char *err = NULL;
	char path[128], yaml[512], errbuf[512];
	redisContext *c;
	redisReply *rep;
	struct store *s;
	FILE *f;
	int n;

	(void)state;
	flush();
	snprintf(path, sizeof(path), "%s/redis.pw", rs.dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", rs.password);
	fclose(f);
	n = snprintf(yaml, sizeof(yaml),
	             "ca: /tmp/ca\nhosts: {}\nstate:\n  backend: redis\n  redis: { url: \"unix:%s?db=0\", password: \"file:%s\", "
	             "timeout: 300ms, key_prefix: \"cfg:\" }\n", rs.sock, path);
	assert_int_equal(policy_load_buffer("t.yaml", yaml, (size_t)n, &cfg, NULL, errbuf, sizeof(errbuf)), 0);
	assert_int_equal(store_opts_from_config(cfg, &o, &pw, &err), 0);
	assert_non_null(pw);
	assert_int_equal(o.timeout_ms, 300);
	assert_string_equal(o.unix_path, rs.sock);
	s = store_create(base, &o, &err);
	assert_non_null(s);
	assert_true(wait_ready(base, s, WAIT_MS));
	assert_int_equal(rate1(base, s, &l, NULL).outcome, STORE_ALLOWED);
	store_destroy(s);
	secret_buf_free(pw);
	policy_config_free(cfg);
	c = rfx_admin(&rs);
	assert_non_null(c);
	rep = redisCommand(c, "EXISTS cfg:r:limit%%3Acfg:*");
	assert_true(rep != NULL && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1);
	freeReplyObject(rep);
	redisFree(c);
	/* a source that cannot be read is an error naming no value */
	unlink(path);
	n = snprintf(yaml, sizeof(yaml), "ca: /tmp/ca\nhosts: {}\nstate: { redis: { url: \"redis://127.0.0.1\", "
	             "password: \"env:SLUICE_TEST_NO_SUCH_VARIABLE\" } }\n");
	assert_int_equal(policy_load_buffer("t.yaml", yaml, (size_t)n, &cfg, NULL, errbuf, sizeof(errbuf)), 0);
	assert_int_not_equal(store_opts_from_config(cfg, &o, &pw, &err), 0);
	assert_null(pw);
	assert_non_null(err);
	policy_config_free(cfg);
	event_base_free(base);
}

/* A free TCP port on 127.0.0.1 (bound and released: a race with other processes is possible, and harmless). */
static unsigned
free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd != -1);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

/* The same store over TCP to a Redis on loopback (redisAsyncConnect, not the unix socket). */
static void
test_tcp_loopback(void **state)
{
	struct event_base *base = event_base_new();
	struct policy_budget b = budget("budget:tcp", 2, 86400, POLICY_SCOPE_GLOBAL);
	struct rfx tcp;
	struct secret_buf *pw;
	struct store_opts o = {.host = "127.0.0.1", .timeout_ms = TIMEOUT_MS};
	const char *err = NULL;
	struct store *s;

	(void)state;
	if (rfx_start_port(&tcp, free_port()) != 0) {
		rfx_stop(&tcp);
		fail_msg("cannot start a redis-server on loopback");
	}
	pw = pw_buf(tcp.password);
	o.port = tcp.port;
	o.password = pw;
	s = store_create(base, &o, &err);
	secret_buf_free(pw);
	assert_non_null(s);
	if (!wait_ready(base, s, WAIT_MS)) {
		store_destroy(s);
		rfx_stop(&tcp);
		fail_msg("the store over TCP is not ready");
	}
	assert_int_equal(take1(base, s, &b, NULL, 2 * UNIT).outcome, STORE_ALLOWED);
	assert_int_equal(take1(base, s, &b, NULL, 1).outcome, STORE_REFUSED);
	store_destroy(s);
	rfx_stop(&tcp);
	event_base_free(base);
}

/* Options are checked. */
static void
test_opts(void **state)
{
	struct event_base *base = event_base_new();
	struct store_opts o = {.unix_path = "/nonexistent/sock", .timeout_ms = 50};
	const char *err = NULL;
	struct store *s;

	(void)state;
	o.timeout_ms = 0;
	assert_null(store_create(base, &o, &err));
	assert_non_null(err);
	o.timeout_ms = STORE_TIMEOUT_MAX_MS + 1;
	assert_null(store_create(base, &o, &err));
	o.timeout_ms = 50;
	o.host = "127.0.0.1";
	assert_null(store_create(base, &o, &err));   /* both a host and a socket */
	o.unix_path = NULL;
	o.port = 0;
	assert_null(store_create(base, &o, &err));
	o.host = NULL;
	o.unix_path = "/nonexistent/sock";
	o.backoff_max_ms = 10;
	assert_null(store_create(base, &o, &err));
	o.backoff_max_ms = 0;
	/* a socket that does not exist: created, down, and destroyed cleanly */
	s = store_create(base, &o, &err);
	assert_non_null(s);
	assert_int_equal(store_state_get(s), STORE_S_BACKOFF);
	store_destroy(s);
	event_base_free(base);
}

/* ---- a Redis that sends a reply without end ---- */

#define FLOOD_BYTES (8u * 1024 * 1024)  /* what the fake Redis tries to send as one bulk */

struct flood {
	int lfd;
	size_t sent;        /* bytes written before the gateway closed */
	int closed_early;   /* a write failed: the store stopped reading and closed */
};

static void *
flood_run(void *arg)
{
	struct flood *f = arg;
	char buf[16384];
	int fd = accept(f->lfd, NULL, NULL);

	if (fd < 0)
		return NULL;
	/* whatever the handshake asks first, the answer is a bulk of 100 MB that never ends */
	if (read(fd, buf, sizeof(buf)) <= 0 || write(fd, "$100000000\r\n", 13) != 13) {
		close(fd);
		return NULL;
	}
	memset(buf, 'x', sizeof(buf));
	while (f->sent < FLOOD_BYTES) {
		ssize_t n = send(fd, buf, sizeof(buf), MSG_NOSIGNAL);

		if (n <= 0) {
			f->closed_early = 1;
			break;
		}
		f->sent += (size_t)n;
	}
	close(fd);
	return NULL;
}

/*
 * A Redis that declares a 100 MB bulk and streams it: the store drops the
 * connection once STORE_UNREAD_MAX bytes wait unparsed (store_ev.c), instead
 * of buffering all of it as hiredis's own adapter does.  The fake Redis sees
 * its writes fail long before its 8 MiB are out.
 */
static void
test_reply_without_end(void **state)
{
	struct event_base *base = event_base_new();
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct store_opts o = {.timeout_ms = TIMEOUT_MS, .backoff_max_ms = 5000};
	struct flood f = {0};
	struct store_stats st;
	const char *err = NULL;
	struct store *s;
	pthread_t th;
	int guard = 0;

	(void)state;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s.flood", rs.sock);
	unlink(a.sun_path);
	f.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(f.lfd >= 0);
	assert_int_equal(bind(f.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(f.lfd, 1), 0);
	assert_int_equal(pthread_create(&th, NULL, flood_run, &f), 0);
	o.unix_path = a.sun_path;
	s = store_create(base, &o, &err);
	assert_non_null(s);
	/* run the loop until the fake Redis is done writing (it stops at FLOOD_BYTES at the latest) */
	{
		uint64_t end = now_ms() + WAIT_MS;

		while (!__atomic_load_n(&f.closed_early, __ATOMIC_RELAXED) &&
		       __atomic_load_n(&f.sent, __ATOMIC_RELAXED) < FLOOD_BYTES && now_ms() < end)
			run_until(base, &guard, 1, 20);
	}
	pthread_join(th, NULL);
	close(f.lfd);
	unlink(a.sun_path);
	assert_true(f.closed_early);
	assert_true(f.sent < FLOOD_BYTES / 4);   /* the reader held at most the bound and one read */
	assert_int_not_equal(store_state_get(s), STORE_S_READY);
	store_stats_get(s, &st);
	assert_true(st.errors >= 1);
	store_destroy(s);
	event_base_free(base);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts),
		cmocka_unit_test(test_reply_without_end),
		cmocka_unit_test(test_from_config),
		cmocka_unit_test(test_tcp_loopback),
		cmocka_unit_test(test_concurrent_cap),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_refund),
		cmocka_unit_test(test_windows_roll),
		cmocka_unit_test(test_noscript),
		cmocka_unit_test(test_evicting_refused),
		cmocka_unit_test(test_wrong_password),
		cmocka_unit_test(test_cancel_destroy),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_restart),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
