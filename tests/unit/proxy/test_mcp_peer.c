/*
 * test_mcp_peer.c - the gateway's table of server-to-client MCP requests
 * (proxy/judge/mcp_peer.c) alone: taken once, by its own key only (another
 * sandbox, host or session takes nothing), expiry after MCP_PEER_TTL_MS,
 * the per-key bound and the table's bound (the oldest goes, its answer is
 * refused), a request seen twice kept once, ids over the bound refused, and
 * workers adding and taking at once.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <cmocka.h>
#include "proxy/judge/mcp_peer.h"

#define T0 1000000u

static struct mcp_peer_key
key(const char *sbx, const char *host, const char *session)
{
	struct mcp_peer_key k;

	assert_int_equal(mcp_peer_key_make(&k, sbx, host, session, session != NULL ? strlen(session) : 0), 0);
	return k;
}

static int
add(struct mcp_peers *t, const struct mcp_peer_key *k, const char *method, const char *id, uint64_t now)
{
	return mcp_peers_add(t, k, method, strlen(method), id, now);
}

static void
test_take_once_own_key(void **state)
{
	struct mcp_peers *t = mcp_peers_create();
	struct mcp_peer_key a = key("agent-1", "mcp.example.test", "s-1");
	struct mcp_peer_key b = key("agent-2", "mcp.example.test", "s-1");
	struct mcp_peer_key h = key("agent-1", "other.example.test", "s-1");
	struct mcp_peer_key s = key("agent-1", "mcp.example.test", "s-2");
	struct mcp_peer_key n = key("agent-1", "mcp.example.test", NULL);
	struct mcp_peer_key x1 = key("agent-1", "mcp.example.test", NULL), x2 = key("agent-", "1mcp.example.test", NULL);
	char m[64];

	(void)state;
	assert_memory_not_equal(x1.d, x2.d, sizeof(x1.d));  /* the parts are separated: no shifting between them */
	assert_int_equal(add(t, &a, "sampling/createMessage", "\"s1\"", T0), 0);
	assert_int_equal(mcp_peers_take(t, &b, "\"s1\"", m, sizeof(m), T0), 0);   /* another sandbox */
	assert_int_equal(mcp_peers_take(t, &h, "\"s1\"", m, sizeof(m), T0), 0);   /* another host */
	assert_int_equal(mcp_peers_take(t, &s, "\"s1\"", m, sizeof(m), T0), 0);   /* another session */
	assert_int_equal(mcp_peers_take(t, &n, "\"s1\"", m, sizeof(m), T0), 0);   /* no session */
	assert_int_equal(mcp_peers_take(t, &a, "1", m, sizeof(m), T0), 0);        /* another id ("s1" is a string) */
	assert_int_equal(mcp_peers_count(t), 1);
	assert_int_equal(mcp_peers_take(t, &a, "\"s1\"", m, sizeof(m), T0 + 1), 1);
	assert_string_equal(m, "sampling/createMessage");
	assert_int_equal(mcp_peers_take(t, &a, "\"s1\"", m, sizeof(m), T0 + 2), 0);   /* once */
	/* seen twice (a replayed stream): kept once */
	assert_int_equal(add(t, &a, "roots/list", "7", T0), 0);
	assert_int_equal(add(t, &a, "roots/list", "7", T0 + 5), 0);
	assert_int_equal(mcp_peers_count(t), 1);
	assert_int_equal(mcp_peers_take(t, &a, "7", NULL, 0, T0 + 6), 1);
	assert_int_equal(mcp_peers_take(t, &a, "7", NULL, 0, T0 + 6), 0);
	mcp_peers_destroy(t);
}

static void
test_expiry_and_bounds(void **state)
{
	struct mcp_peers *t = mcp_peers_create();
	struct mcp_peer_key a = key("agent-1", "mcp.example.test", NULL), b;
	char id[32], big[MCP_PEER_ID_TEXT_MAX + 2], sbx[32];
	size_t i;

	(void)state;
	/* expiry: answerable until MCP_PEER_TTL_MS after it was seen */
	assert_int_equal(add(t, &a, "ping", "1", T0), 0);
	assert_int_equal(add(t, &a, "ping", "2", T0), 0);
	assert_int_equal(mcp_peers_take(t, &a, "1", NULL, 0, T0 + MCP_PEER_TTL_MS - 1), 1);
	assert_int_equal(mcp_peers_take(t, &a, "2", NULL, 0, T0 + MCP_PEER_TTL_MS), 0);
	assert_int_equal(mcp_peers_count(t), 0);
	/* per key: MCP_PEER_KEY_MAX, the oldest goes */
	for (i = 0; i < MCP_PEER_KEY_MAX + 1; i++) {
		snprintf(id, sizeof(id), "%zu", i);
		assert_int_equal(add(t, &a, "ping", id, T0 + i), 0);
	}
	assert_int_equal(mcp_peers_count(t), MCP_PEER_KEY_MAX);
	assert_int_equal(mcp_peers_take(t, &a, "0", NULL, 0, T0 + 100), 0);
	assert_int_equal(mcp_peers_take(t, &a, "1", NULL, 0, T0 + 100), 1);
	snprintf(id, sizeof(id), "%u", MCP_PEER_KEY_MAX);
	assert_int_equal(mcp_peers_take(t, &a, id, NULL, 0, T0 + 100), 1);
	/* the table: MCP_PEER_MAX over many keys, the oldest goes (a's entries, the first in) */
	for (i = 0; i < MCP_PEER_MAX; i++) {
		snprintf(sbx, sizeof(sbx), "s%zu", i);
		b = key(sbx, "mcp.example.test", NULL);
		assert_int_equal(add(t, &b, "ping", "1", T0 + 200), 0);
	}
	assert_int_equal(mcp_peers_count(t), MCP_PEER_MAX);
	assert_int_equal(mcp_peers_take(t, &a, "2", NULL, 0, T0 + 300), 0);
	b = key("s0", "mcp.example.test", NULL);
	assert_int_equal(mcp_peers_take(t, &b, "1", NULL, 0, T0 + 300), 1);
	/* an id or a method over the bound is not kept */
	memset(big, '7', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(add(t, &a, "ping", big, T0), -1);
	memset(big, 'm', POLICY_MCP_METHOD_MAX + 1);
	big[POLICY_MCP_METHOD_MAX + 1] = '\0';
	assert_int_equal(add(t, &a, big, "1", T0), -1);
	mcp_peers_destroy(t);
}

/*
 * An entry still waiting is not lost because many others were added and
 * answered around it: the table is never full here, so nothing may go (the
 * first version reused its slots as a ring and overwrote it after
 * MCP_PEER_MAX adds).
 */
static void
test_waiting_entry_survives_churn(void **state)
{
	struct mcp_peers *t = mcp_peers_create();
	struct mcp_peer_key a = key("agent-1", "mcp.example.test", NULL), b = key("agent-2", "mcp.example.test", NULL);
	char id[32];
	size_t i;

	(void)state;
	assert_int_equal(add(t, &a, "sampling/createMessage", "7", T0), 0);
	for (i = 0; i < 3 * MCP_PEER_MAX; i++) {
		snprintf(id, sizeof(id), "%zu", i);
		assert_int_equal(add(t, &b, "ping", id, T0), 0);
		assert_int_equal(mcp_peers_take(t, &b, id, NULL, 0, T0), 1);
	}
	assert_int_equal(mcp_peers_take(t, &a, "7", NULL, 0, T0), 1);
	assert_int_equal(mcp_peers_count(t), 0);
	mcp_peers_destroy(t);
}

/* workers at once: each adds and takes its own; every take finds its entry exactly once */
struct worker_arg {
	struct mcp_peers *t;
	int n;
	int found;
};

static void *
worker(void *p)
{
	struct worker_arg *w = p;
	char sbx[32], id[32];
	struct mcp_peer_key k;
	int i;

	snprintf(sbx, sizeof(sbx), "w%d", w->n);
	if (mcp_peer_key_make(&k, sbx, "mcp.example.test", NULL, 0) != 0)
		return NULL;
	for (i = 0; i < 2000; i++) {
		snprintf(id, sizeof(id), "%d", i);
		if (mcp_peers_add(w->t, &k, "ping", 4, id, T0) == 0)
			w->found += mcp_peers_take(w->t, &k, id, NULL, 0, T0);
	}
	return NULL;
}

static void
test_threads(void **state)
{
	struct mcp_peers *t = mcp_peers_create();
	struct worker_arg w[4];
	pthread_t th[4];
	int i;

	(void)state;
	for (i = 0; i < 4; i++) {
		w[i] = (struct worker_arg){.t = t, .n = i};
		assert_int_equal(pthread_create(&th[i], NULL, worker, &w[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].found, 2000);
	}
	assert_int_equal(mcp_peers_count(t), 0);
	mcp_peers_destroy(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_once_own_key),
		cmocka_unit_test(test_expiry_and_bounds),
		cmocka_unit_test(test_waiting_entry_survives_churn),
		cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
