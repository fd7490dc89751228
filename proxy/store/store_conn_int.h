/*
 * proxy/store/store_conn_int.h - inside the store (store.c, store_conn.c): the
 * store itself, shared by its connection (store_conn.c: connect, handshake,
 * backoff, subscribe, the store's life) and its operations (store.c: the
 * commands and their timers).  Not a public header: store.h is the contract.
 */
#ifndef SLUICE_PROXY_STORE_CONN_INT_H
#define SLUICE_PROXY_STORE_CONN_INT_H

#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <event2/event.h>
#include <hiredis/async.h>

#include "store_int.h"
#include "secrets/secrets.h"

enum log_kind {
	LOG_CONN = 0,    /* connect failures, lost connections */
	LOG_REPLY = 1,   /* error replies and bad shapes */
	LOG_TIMEOUT = 2,
	NLOG = 3,
};
struct store {
	struct event_base *base;
	redisAsyncContext *ac;           /* NULL between connections */
	enum store_state state;
	int closing;
	char *host, *unix_path, *prefix;
	unsigned port, db, timeout_ms, backoff_max_ms, backoff_ms;
	size_t unread_max;          /* store_opts.unread_max (store_ev.c's bound) */
	struct secret_buf *password;
	char sha[STORE_NSCRIPT][STORE_SHA_LEN + 1];
	int budgets_ok;
	int hs_left;                     /* handshake replies still awaited */
	int hs_failed;
	uint64_t conn;                   /* connection number, from 1 */
	uint64_t last_reply_us;          /* monotonic, last reply on the current connection */
	struct event *retry_ev, *hs_ev;
	size_t pending;                  /* operations not yet given back */
	struct store_op *free_ops;
	size_t nfree;
	struct store_op *open;           /* rate batches of this loop round not yet sent (their leaders) */
	struct event *batch_ev;          /* active while <open> is not empty: sends them at the round's end */
	time_t last_log[NLOG];
	struct store_stats st;           /* relaxed atomics (store_stats_get reads from any thread) */
	char *channel;                   /* store_create_sub: <prefix><channel>, SUBSCRIBEd after the handshake */
	store_msg_cb *msg_cb;
	void *msg_arg;
};
/*
 * The connection (store_conn.c).  store_conn_start: a new connection and
 * its handshake (backoff on failure).  store_conn_drop: drops the current
 * one now (not from inside a hiredis callback); every operation waiting
 * is handed back by hiredis with a NULL reply.
 */
void store_conn_start(struct store *s);
void store_conn_drop(struct store *s);

/* What the store's operations take: free on destroy (store.c). */
void store_ops_free(struct store *s);
/* Sends the open rate batches now (store_destroy, before it drops the connection, so that they are handed
 * back with the others); on a store that is not ready they fail (STORE_ESHUTDOWN when closing, else EDOWN). */
void store_batches_send(struct store *s);

static inline uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static inline void
count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* An error outcome <o> (< 0) given or returned: counted in total and by kind. */
static inline void
count_err(struct store *s, int o)
{
	count(&s->st.errors, 1);
	if (o < 0 && -o < STORE_ERR_KINDS)
		count(&s->st.err_kind[-o], 1);
}

/* 1 when a line of <kind> may be logged now (at most one per STORE_LOG_INTERVAL_S). */
static inline int
may_log(struct store *s, enum log_kind kind)
{
	time_t now = time(NULL);

	if (s->last_log[kind] != 0 && now - s->last_log[kind] < STORE_LOG_INTERVAL_S)
		return 0;
	s->last_log[kind] = now;
	return 1;
}

static inline const char *
where(const struct store *s, char *buf, size_t cap)
{
	if (s->unix_path != NULL)
		snprintf(buf, cap, "unix:%s", s->unix_path);
	else
		snprintf(buf, cap, "%s:%u", s->host, s->port);
	return buf;
}

#endif
