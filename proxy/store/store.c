/*
 * proxy/store/store.c - the operations of the asynchronous Redis client of
 * the shared counters (store.h): the commands with their timers
 * (store_conn.c has the connection, its handshake and backoff).
 *
 * An operation (struct store_op) lives while hiredis holds it as a reply's
 * privdata (_in_redis) or its caller holds its handle (not yet delivered,
 * not cancelled); it goes back to the free list when neither does.  hiredis
 * calls every pending reply callback with a NULL reply when a connection
 * goes away, so each operation is handed back exactly once.
 *
 * Rate batches.  A rate take does not go to hiredis at once: it joins the
 * open batch of its counter (the same key, count and period) made in this
 * loop round, or opens one (s->open, newest first; the last BATCH_SCAN
 * opened are looked at).  At the round's end (s->batch_ev, an event made
 * active) each batch goes as one EVALSHA asking for all its takes; the
 * reply grants the first k of them, in the order they were made.  The
 * leader (the op that opened the batch) is the reply's privdata; its
 * followers hang from it (_follow, in order) and, like it, count as held
 * (_in_redis) from the moment they join until the reply (or the loss of
 * the connection) hands each of them back.  Each keeps its own timer and
 * can be cancelled alone.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <hiredis/async.h>

#include "common/log.h"
#include "common/sluice.h"
#include "store_conn_int.h"
#include "secrets/secrets.h"

#define NUM_MAX 24                  /* decimal text of one argument (an int64, with its NUL) */
#define FREE_OPS_MAX 256            /* operations kept on the free list; more are freed */
#define BATCH_SCAN 8                /* open batches a rate take looks at for its counter */

const uint64_t store_latency_bounds_us[STORE_LATENCY_BUCKETS] = {
	50, 100, 150, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, UINT64_MAX,
};

struct store_op {
	struct store *_s;
	struct store_op *_next;          /* free list */
	store_cb *_cb;
	store_raw_cb *_rcb;              /* store_raw: the reply's reader (NULL: none) */
	int _raw;                        /* a store_raw command: no script, no NOSCRIPT retry */
	void *_arg;
	struct event _timer;
	enum store_script _sc;
	uint32_t _period_s;              /* budget take: bounds its reply */
	int _in_redis;                   /* hiredis holds it as privdata, or a rate batch does */
	struct store_op *_follow;        /* rate batch: the next take of the leader's batch (in order) */
	struct store_op *_tail;          /* leader: the last take of its batch */
	struct store_op *_open_next;     /* leader, before it is sent: the next open batch (s->open) */
	uint32_t _nbatch;                /* leader: takes in its batch, itself included */
	uint32_t _count;                 /* rate take: the limit's count (with the key and period: the counter) */
	int _done;                       /* delivered or cancelled: the caller no longer holds it */
	int _retried;                    /* NOSCRIPT: loaded and sent again once */
	uint64_t _sent_us;               /* monotonic, when sent */
	uint64_t _conn;                  /* the connection it was sent on */
	int _argc;
	const char *_argv[8];
	size_t _argl[8];
	char _key[STORE_KEY_MAX];
	char _num[4][NUM_MAX];
};
/* ---- operations ---- */

static void
op_release(struct store_op *op)
{
	struct store *s = op->_s;

	s->pending--;
	if (s->nfree < FREE_OPS_MAX) {
		op->_next = s->free_ops;
		s->free_ops = op;
		s->nfree++;
	} else {
		free(op);
	}
}

/* Gives <res> to the caller unless it cancelled or was already answered; frees <op> when hiredis let go of it. */
static void
op_finish(struct store_op *op, struct store_result *res, const redisReply *r)
{
	struct store *s = op->_s;

	if (!op->_done) {
		op->_done = 1;
		evtimer_del(&op->_timer);
		if (res->outcome < 0)
			count_err(s, res->outcome);
		else if (res->outcome == STORE_REFUSED)
			count(&s->st.refused, 1);
		if (!op->_raw)
			op->_cb(res, op->_arg);
		else if (op->_rcb != NULL)
			op->_rcb(res->outcome >= 0 ? r : NULL, res->outcome, op->_arg);
	}
	if (!op->_in_redis)
		op_release(op);
}

static void
latency(struct store *s, uint64_t us)
{
	size_t i;

	count(&s->st.latency_count, 1);
	count(&s->st.latency_sum_us, us);
	/* one bucket per reply; store_stats_get makes them cumulative */
	for (i = 0; i < STORE_LATENCY_BUCKETS - 1 && us > store_latency_bounds_us[i]; i++)
		;
	count(&s->st.latency_le[i], 1);
}

static int op_send(struct store_op *op);

/* 1 when no take of <lead>'s batch (a single op: itself) still waits for its outcome. */
static int
batch_done(const struct store_op *lead)
{
	const struct store_op *o;

	for (o = lead; o != NULL; o = o->_follow)
		if (!o->_done)
			return 0;
	return 1;
}

/*
 * Hands back every take of <lead>'s batch, leader first: an outcome < 0
 * goes to each; else the first res->granted are ALLOWED and the others
 * REFUSED with the reply's retry.  Each op is freed as it is handed back.
 */
static void
batch_finish(struct store_op *lead, const struct store_result *res)
{
	struct store_op *o = lead, *next;
	struct store_result one;
	uint32_t i = 0;

	for (; o != NULL; o = next, i++) {
		next = o->_follow;
		one = *res;
		if (res->outcome >= 0) {
			one.outcome = i < res->granted ? STORE_ALLOWED : STORE_REFUSED;
			one.retry_after_ms = i < res->granted ? 0 : res->retry_after_ms;
		}
		one.granted = 0;
		o->_in_redis = 0;
		op_finish(o, &one, NULL);
	}
}

static void
on_loaded(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store *s = ac->data;
	uintptr_t sc = (uintptr_t)priv;
	char sha[STORE_SHA_LEN + 1];

	/* the text did not change, so neither did its sha; a failed load shows as NOSCRIPT again, then EREPLY */
	if (reply != NULL && sc < STORE_NSCRIPT && store_reply_sha(reply, sha) == 0)
		memcpy(s->sha[sc], sha, sizeof(sha));
}

static void
on_reply(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store_op *op = priv;
	struct store *s = op->_s;
	struct store_result res;
	uint64_t now;

	(void)ac;
	op->_in_redis = 0;
	if (reply != NULL) {
		now = mono_us();
		s->last_reply_us = now;
		latency(s, now - op->_sent_us);
	}
	if (op->_raw) {
		memset(&res, 0, sizeof(res));
		res.outcome = reply == NULL ? (s->closing ? STORE_ESHUTDOWN : STORE_EDOWN) :
		              ((const redisReply *)reply)->type == REDIS_REPLY_ERROR ? STORE_EREPLY : STORE_ALLOWED;
		op_finish(op, &res, reply);
		return;
	}
	store_reply_script(op->_sc, op->_sc == STORE_SCRIPT_RATE ? op->_nbatch : op->_period_s, reply, &res);
	if (res.outcome == STORE_ENOSCRIPT) {
		if (!op->_retried && !batch_done(op) && s->ac != NULL && s->ac == ac && s->state == STORE_S_READY) {
			op->_retried = 1;
			count(&s->st.noscript, 1);
			if (redisAsyncCommand(ac, on_loaded, (void *)(uintptr_t)op->_sc, "SCRIPT LOAD %s",
			                      store_script_text(op->_sc)) == REDIS_OK && op_send(op) == 0)
				return;
		}
		res.outcome = STORE_EREPLY;
	}
	if (reply == NULL)
		res.outcome = s->closing ? STORE_ESHUTDOWN : STORE_EDOWN;
	if (res.outcome == STORE_EREPLY && !batch_done(op) && may_log(s, LOG_REPLY)) {
		const redisReply *r = reply;
		char e[128];

		log_warnx("store: unexpected reply (type %d%s%s): the operation fails", r->type,
		          r->type == REDIS_REPLY_ERROR ? ": " : "",
		          r->type == REDIS_REPLY_ERROR ? log_escape(e, sizeof(e), r->str, r->len) : "");
	}
	if (op->_sc == STORE_SCRIPT_RATE)
		batch_finish(op, &res);
	else
		op_finish(op, &res, reply);
}

static void
on_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct store_op *op = arg;
	struct store *s = op->_s;
	struct store_result res = {.outcome = STORE_ETIMEOUT};
	int stalled = op->_conn == s->conn && s->ac != NULL && s->last_reply_us < op->_sent_us;

	(void)fd;
	(void)what;
	count(&s->st.timeouts, 1);
	if (may_log(s, LOG_TIMEOUT))
		log_warnx("store: no answer within %ums%s", s->timeout_ms, stalled ? ": the connection is dropped" : "");
	op_finish(op, &res, NULL);   /* <op> may be freed from here on only if hiredis let go of it: it has not */
	if (stalled)
		store_conn_drop(s);
}

static int
op_send(struct store_op *op)
{
	struct store *s = op->_s;

	op->_argv[1] = s->sha[op->_sc];
	op->_argl[1] = STORE_SHA_LEN;
	if (redisAsyncCommandArgv(s->ac, on_reply, op, op->_argc, op->_argv, op->_argl) != REDIS_OK)
		return -1;
	op->_in_redis = 1;
	op->_sent_us = mono_us();
	op->_conn = s->conn;
	return 0;
}

/* Sets argument <i> (from 4) to the decimal text of <v>. */
static void
op_num(struct store_op *op, int i, unsigned long long v)
{
	int n = snprintf(op->_num[i - 4], NUM_MAX, "%llu", v);

	op->_argv[i] = op->_num[i - 4];
	op->_argl[i] = (size_t)n;
}

/* An operation from the free list (or new), counted as pending; NULL (and *<ret>) at STORE_PENDING_MAX. */
static struct store_op *
op_alloc(struct store *s, int *ret)
{
	struct store_op *op;

	if (s->pending >= STORE_PENDING_MAX) {
		*ret = STORE_EBUSY;
		return NULL;
	}
	if (s->free_ops != NULL) {
		op = s->free_ops;
		s->free_ops = op->_next;
		s->nfree--;
	} else {
		op = xmalloc(sizeof(*op));
	}
	op->_s = s;
	op->_cb = NULL;
	op->_rcb = NULL;
	op->_raw = 0;
	op->_period_s = 0;
	op->_in_redis = 0;
	op->_done = 0;
	op->_retried = 0;
	op->_follow = NULL;
	op->_tail = op;
	op->_open_next = NULL;
	op->_nbatch = 1;
	op->_count = 0;
	s->pending++;
	return op;
}

/* Allocates and fills the common part; returns NULL (and *<ret>) when the store cannot take it. */
static struct store_op *
op_new(struct store *s, enum store_script sc, const char *key, enum policy_scope scope, const char *sandbox,
       store_cb *cb, int *ret)
{
	struct store_op *op;
	long klen;

	if (s->state != STORE_S_READY || s->ac == NULL) {
		*ret = STORE_EDOWN;
		return NULL;
	}
	if (sc != STORE_SCRIPT_RATE && !s->budgets_ok) {
		*ret = STORE_EUNSAFE;
		return NULL;
	}
	if ((op = op_alloc(s, ret)) == NULL)
		return NULL;
	op->_cb = cb;
	op->_sc = sc;
	klen = store_key(op->_key, sizeof(op->_key), s->prefix, sc == STORE_SCRIPT_RATE ? STORE_KIND_RATE : STORE_KIND_BUDGET,
	                 key, scope == POLICY_SCOPE_GLOBAL, sandbox);
	if (klen < 0) {
		op_release(op);
		*ret = STORE_EINVAL;
		return NULL;
	}
	op->_argv[0] = "EVALSHA";
	op->_argl[0] = 7;
	op->_argv[2] = "1";
	op->_argl[2] = 1;
	op->_argv[3] = op->_key;
	op->_argl[3] = (size_t)klen;
	return op;
}

/* <op> was sent: its timeout starts. */
static void
op_arm(struct store_op *op)
{
	struct store *s = op->_s;
	struct timeval tv;

	evtimer_assign(&op->_timer, s->base, on_timeout, op);
	tv.tv_sec = s->timeout_ms / 1000;
	tv.tv_usec = (suseconds_t)(s->timeout_ms % 1000) * 1000;
	evtimer_add(&op->_timer, &tv);
	count(&s->st.ops, 1);
}

static int
refuse(struct store *s, int ret, struct store_op **out)
{
	*out = NULL;
	count_err(s, ret);
	return ret;
}

static int
op_start(struct store_op *op, void *arg, struct store_op **out)
{
	struct store *s = op->_s;

	op->_arg = arg;
	if (op_send(op) != 0) {
		op_release(op);
		count_err(s, STORE_EDOWN);
		return STORE_EDOWN;
	}
	op_arm(op);
	*out = op;
	return 0;
}

int
store_raw(struct store *s, int argc, const char **argv, const size_t *argl, store_raw_cb *cb, void *arg)
{
	struct store_op *op;
	int ret = STORE_EDOWN;

	if (argc < 1 || argc > STORE_RAW_ARGS_MAX || argv == NULL || argl == NULL)
		return refuse(s, STORE_EINVAL, &op);
	if (s->state != STORE_S_READY || s->ac == NULL || s->channel != NULL)
		return refuse(s, STORE_EDOWN, &op);
	if ((op = op_alloc(s, &ret)) == NULL)
		return refuse(s, ret, &op);
	op->_raw = 1;
	op->_rcb = cb;
	op->_arg = arg;
	if (redisAsyncCommandArgv(s->ac, on_reply, op, argc, argv, argl) != REDIS_OK) {
		op_release(op);
		return refuse(s, STORE_EDOWN, &op);
	}
	op->_in_redis = 1;
	op->_sent_us = mono_us();
	op->_conn = s->conn;
	op_arm(op);
	return 0;
}

static void
on_batch(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	store_batches_send(arg);
}

/* Adds rate take <op> to the open batch of its counter, or opens one (and arms the round's send). */
static void
batch_join(struct store *s, struct store_op *op)
{
	struct store_op *lead;
	int i = 0;

	for (lead = s->open; lead != NULL && i < BATCH_SCAN; lead = lead->_open_next, i++) {
		if (lead->_nbatch < STORE_BATCH_MAX && lead->_count == op->_count && lead->_period_s == op->_period_s &&
		    lead->_argl[3] == op->_argl[3] && memcmp(lead->_key, op->_key, op->_argl[3]) == 0) {
			lead->_tail->_follow = op;
			lead->_tail = op;
			lead->_nbatch++;
			return;
		}
	}
	if (s->batch_ev == NULL && (s->batch_ev = event_new(s->base, -1, 0, on_batch, s)) == NULL)
		fatalx("store: out of memory");
	if (s->open == NULL)
		event_active(s->batch_ev, EV_TIMEOUT, 1);
	op->_open_next = s->open;
	s->open = op;
}

void
store_batches_send(struct store *s)
{
	struct store_op *lead, *next, *first = NULL;
	struct store_result res;

	/* s->open is newest first: sent oldest first, so that the takes made first are granted first.  A
	 * callback below (a batch that fails) may make takes: they open batches of the next send. */
	for (lead = s->open, s->open = NULL; lead != NULL; lead = next) {
		next = lead->_open_next;
		lead->_open_next = first;
		first = lead;
	}
	while ((lead = first) != NULL) {
		first = lead->_open_next;
		lead->_open_next = NULL;
		op_num(lead, 4, lead->_count);
		op_num(lead, 5, lead->_period_s);
		op_num(lead, 6, lead->_nbatch);
		lead->_argc = 7;
		if (s->state == STORE_S_READY && s->ac != NULL && op_send(lead) == 0)
			continue;
		memset(&res, 0, sizeof(res));
		res.outcome = s->closing ? STORE_ESHUTDOWN : STORE_EDOWN;
		batch_finish(lead, &res);
	}
}

int
store_rate_take(struct store *s, const struct policy_limit *lim, const char *sandbox, store_cb *cb, void *arg,
                struct store_op **out)
{
	struct store_op *op;
	int ret;

	*out = NULL;
	if (lim == NULL || lim->key == NULL || lim->count == 0 || lim->period_s == 0 || cb == NULL)
		return refuse(s, STORE_EINVAL, out);
	if ((op = op_new(s, STORE_SCRIPT_RATE, lim->key, lim->scope, sandbox, cb, &ret)) == NULL)
		return refuse(s, ret, out);
	op->_arg = arg;
	op->_count = lim->count;
	op->_period_s = lim->period_s;
	batch_join(s, op);
	op->_in_redis = 1;              /* held by its batch from now on */
	op->_sent_us = mono_us();
	op->_conn = s->conn;
	op_arm(op);
	*out = op;
	return 0;
}

int
store_budget_take(struct store *s, const struct policy_budget *b, const char *sandbox, int64_t amount, store_cb *cb,
                  void *arg, struct store_op **out)
{
	struct store_op *op;
	int ret;

	*out = NULL;
	if (b == NULL || b->key == NULL || b->period_s == 0 || b->max < 0 || b->max > STORE_AMOUNT_MAX || amount < 0 ||
	    amount > STORE_AMOUNT_MAX || cb == NULL)
		return refuse(s, STORE_EINVAL, out);
	if ((op = op_new(s, STORE_SCRIPT_TAKE, b->key, b->scope, sandbox, cb, &ret)) == NULL)
		return refuse(s, ret, out);
	op->_period_s = b->period_s;
	op_num(op, 4, (unsigned long long)amount);
	op_num(op, 5, (unsigned long long)b->max);
	op_num(op, 6, b->period_s);
	op_num(op, 7, STORE_BUDGET_GRACE_S);
	op->_argc = 8;
	return op_start(op, arg, out);
}

int
store_budget_refund(struct store *s, const struct policy_budget *b, const char *sandbox, int64_t amount,
                    uint64_t window_s, store_cb *cb, void *arg, struct store_op **out)
{
	struct store_op *op;
	int ret;

	*out = NULL;
	if (b == NULL || b->key == NULL || amount < 0 || amount > STORE_AMOUNT_MAX || cb == NULL ||
	    window_s > (uint64_t)INT64_MAX)
		return refuse(s, STORE_EINVAL, out);
	if ((op = op_new(s, STORE_SCRIPT_REFUND, b->key, b->scope, sandbox, cb, &ret)) == NULL)
		return refuse(s, ret, out);
	op_num(op, 4, (unsigned long long)amount);
	op_num(op, 5, window_s);
	op->_argc = 6;
	return op_start(op, arg, out);
}

void
store_cancel(struct store_op *op)
{
	if (op == NULL || op->_done)
		return;
	op->_done = 1;
	evtimer_del(&op->_timer);
	if (!op->_in_redis)
		op_release(op);
}

void
store_ops_free(struct store *s)
{
	struct store_op *op;

	if (s->batch_ev != NULL)
		event_free(s->batch_ev);
	s->batch_ev = NULL;
	while ((op = s->free_ops) != NULL) {
		s->free_ops = op->_next;
		free(op);
	}
}
