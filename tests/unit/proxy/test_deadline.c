/*
 * test_deadline.c - the per-worker deadline heap (proxy/net/deadline.c).
 *
 * Deadlines fire in order, once, and only when due; re-arming moves a
 * deadline both ways; a cancelled or dead connection never fires; a handler
 * that re-arms for "now" waits for the next round instead of looping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "proxy/net/deadline.c"

#define N 200

static struct conn *fired[4 * N];
static size_t nfired;
static int rearm_now;  /* the handler re-arms with 0 ms */

static void
expired(struct conn *c)
{
	fired[nfired++] = c;
	if (rearm_now)
		conn_arm_timer(c, 0);
}

/* deadline.c reports through the worker's net_ops, never by calling the session: only .expired is used */
static const struct net_ops ops = {.expired = expired};

static int
setup(void **state)
{
	struct worker *w = calloc(1, sizeof(*w));

	w->base = event_base_new();
	assert_non_null(w->base);
	assert_int_equal(deadline_init(w), 0);
	net_ops_set(w, &ops);
	nfired = 0;
	rearm_now = 0;
	*state = w;
	return 0;
}

static int
teardown(void **state)
{
	struct worker *w = *state;

	deadline_dispose(w);
	event_base_free(w->base);
	free(w);
	return 0;
}

static void
check_heap(struct worker *w)
{
	for (size_t i = 0; i < w->ndl; i++) {
		assert_int_equal(w->dl[i]->dl_pos, i + 1);
		if (i > 0)
			assert_true(w->dl[(i - 1) / 2]->deadline <= w->dl[i]->deadline);
	}
}

static void
test_order_and_cancel(void **state)
{
	struct worker *w = *state;
	static struct conn c[N];

	memset(c, 0, sizeof(c));
	srand(7);
	for (int i = 0; i < N; i++) {
		c[i].w = w;
		c[i].state = CONN_S_REQ_HEAD;
		conn_arm_timer(&c[i], 20 + (unsigned)(rand() % 60));
		check_heap(w);
	}
	/* re-arm a third later and a third earlier, cancel every tenth */
	for (int i = 0; i < N; i += 3)
		conn_arm_timer(&c[i], 200);
	for (int i = 1; i < N; i += 3)
		conn_arm_timer(&c[i], 5);
	for (int i = 0; i < N; i += 10)
		conn_disarm_timer(&c[i]);
	conn_disarm_timer(&c[0]);  /* twice is harmless */
	check_heap(w);
	c[5].state = CONN_S_DEAD;
	conn_disarm_timer(&c[5]);
	conn_arm_timer(&c[5], 1);  /* dead: refused */
	assert_int_equal(c[5].dl_pos, 0);

	event_base_dispatch(w->base);  /* returns when the heap is empty: no event left */
	assert_int_equal(w->ndl, 0);
	for (size_t i = 1; i < nfired; i++)
		assert_true(fired[i - 1]->deadline <= fired[i]->deadline);
	for (int i = 0; i < N; i++) {
		size_t n = 0;
		for (size_t k = 0; k < nfired; k++)
			n += fired[k] == &c[i];
		assert_int_equal(n, i % 10 == 0 || i == 5 ? 0 : 1);
	}
}

static void
test_rearm_now_waits(void **state)
{
	struct worker *w = *state;
	static struct conn c;

	memset(&c, 0, sizeof(c));
	c.w = w;
	c.state = CONN_S_CLOSING;
	rearm_now = 1;
	conn_arm_timer(&c, 0);
	event_base_loop(w->base, EVLOOP_ONCE);
	assert_int_equal(nfired, 1);  /* once per round, not a loop */
	event_base_loop(w->base, EVLOOP_ONCE);
	assert_int_equal(nfired, 2);
	rearm_now = 0;
	conn_disarm_timer(&c);
	assert_int_equal(w->ndl, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order_and_cancel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rearm_now_waits, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
