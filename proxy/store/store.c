/*
 * proxy/store/store.c - the asynchronous Redis client of the shared
 * counters (store.h): the connection with its handshake and backoff, and
 * the operations with their timers.
 *
 * An operation (struct store_op) lives while hiredis holds it as a reply's
 * privdata (_in_redis) or its caller holds its handle (not yet delivered,
 * not cancelled); it goes back to the free list when neither does.  hiredis
 * calls every pending reply callback with a NULL reply when a connection
 * goes away, so each operation is handed back exactly once.
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
#include "store_int.h"
#include "secrets/secrets.h"

#define NUM_MAX 24                  /* decimal text of one argument (an int64, with its NUL) */
#define FREE_OPS_MAX 256            /* operations kept on the free list; more are freed */

const uint64_t store_latency_bounds_us[STORE_LATENCY_BUCKETS] = {
	50, 100, 150, 250, 500, 1000, 2500, 5000, 10000, 50000, 250000, UINT64_MAX,
};

enum log_kind {
	LOG_CONN = 0,    /* connect failures, lost connections */
	LOG_REPLY = 1,   /* error replies and bad shapes */
	LOG_TIMEOUT = 2,
	NLOG = 3,
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
	int _in_redis;                   /* hiredis holds it as privdata */
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
	time_t last_log[NLOG];
	struct store_stats st;           /* relaxed atomics (store_stats_get reads from any thread) */
	char *channel;                   /* store_create_sub: <prefix><channel>, SUBSCRIBEd after the handshake */
	store_msg_cb *msg_cb;
	void *msg_arg;
};

enum hs_step {
	HS_AUTH = 1,
	HS_SELECT = 2,
	HS_CONFIG = 3,
	HS_INFO = 4,
	HS_SCRIPT = 5,   /* + enum store_script */
};

static void connect_start(struct store *s);

static uint64_t
mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void
count(uint64_t *c, uint64_t n)
{
	__atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* An error outcome <o> (< 0) given or returned: counted in total and by kind. */
static void
count_err(struct store *s, int o)
{
	count(&s->st.errors, 1);
	if (o < 0 && -o < STORE_ERR_KINDS)
		count(&s->st.err_kind[-o], 1);
}

/* 1 when a line of <kind> may be logged now (at most one per STORE_LOG_INTERVAL_S). */
static int
may_log(struct store *s, enum log_kind kind)
{
	time_t now = time(NULL);

	if (s->last_log[kind] != 0 && now - s->last_log[kind] < STORE_LOG_INTERVAL_S)
		return 0;
	s->last_log[kind] = now;
	return 1;
}

static const char *
where(const struct store *s, char *buf, size_t cap)
{
	if (s->unix_path != NULL)
		snprintf(buf, cap, "unix:%s", s->unix_path);
	else
		snprintf(buf, cap, "%s:%u", s->host, s->port);
	return buf;
}

/* ---- connection ---- */

static void
schedule_retry(struct store *s)
{
	struct timeval tv;

	s->state = STORE_S_BACKOFF;
	__atomic_store_n(&s->st.up, 0, __ATOMIC_RELAXED);
	s->budgets_ok = 0;
	if (s->closing)
		return;
	tv.tv_sec = s->backoff_ms / 1000;
	tv.tv_usec = (suseconds_t)(s->backoff_ms % 1000) * 1000;
	evtimer_add(s->retry_ev, &tv);
	s->backoff_ms = s->backoff_ms * 2 > s->backoff_max_ms ? s->backoff_max_ms : s->backoff_ms * 2;
}

/* The current connection <ac> is gone (hiredis frees it after this returns): once per connection. */
static void
conn_lost(struct store *s, const redisAsyncContext *ac)
{
	if (s->ac != ac || ac == NULL)
		return;
	s->ac = NULL;
	evtimer_del(s->hs_ev);
	count(&s->st.disconnects, 1);
	schedule_retry(s);
}

/* Drops the current connection now (not from inside a hiredis callback: then the free is deferred by hiredis). */
static void
conn_drop(struct store *s)
{
	redisAsyncContext *ac = s->ac;

	if (ac == NULL)
		return;
	s->state = STORE_S_BACKOFF;  /* operations started from the callbacks below fail at once */
	__atomic_store_n(&s->st.up, 0, __ATOMIC_RELAXED);
	/* conn_lost runs from the disconnect callback when the connection was up; make sure it runs once anyway */
	redisAsyncFree(ac);
	conn_lost(s, ac);
}

static void
on_connect(const redisAsyncContext *ac, int status)
{
	struct store *s = ac->data;
	char w[STORE_NAME_MAX + 16];

	if (status == REDIS_OK)
		return;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: cannot connect: %s", where(s, w, sizeof(w)), ac->errstr);
	conn_lost(s, ac);
}

static void
on_disconnect(const redisAsyncContext *ac, int status)
{
	struct store *s = ac->data;
	char w[STORE_NAME_MAX + 16];

	if (!s->closing && status != REDIS_OK && may_log(s, LOG_CONN))
		log_warnx("store %s: connection lost: %s", where(s, w, sizeof(w)), ac->errstr);
	conn_lost(s, ac);
}

static void
hs_fail(struct store *s, redisAsyncContext *ac, const char *why)
{
	char w[STORE_NAME_MAX + 16];

	if (s->hs_failed)
		return;
	s->hs_failed = 1;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: %s; not used, retrying", where(s, w, sizeof(w)), why);
	/* inside a reply callback: hiredis frees after it returns, then calls on_disconnect */
	redisAsyncFree(ac);
}

/* A subscriber's channel: every push it receives (confirmations, messages), until the connection goes. */
static void
on_sub(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store *s = priv;
	const char *p = NULL;
	size_t n = 0;
	int rc;

	(void)ac;
	if (reply == NULL)
		return;  /* the connection is going away: on_disconnect reconnects */
	s->last_reply_us = mono_us();
	rc = store_reply_message(reply, s->channel, strlen(s->channel), &p, &n);
	if (rc == 1)
		s->msg_cb(p, n, s->msg_arg);
	else if (rc < 0 && may_log(s, LOG_REPLY))
		log_warnx("store: unexpected push on the subscriber (type %d): ignored", ((const redisReply *)reply)->type);
}

static void
hs_done(struct store *s)
{
	char w[STORE_NAME_MAX + 16];

	evtimer_del(s->hs_ev);
	if (s->channel != NULL) {
		const char *argv[2] = {"SUBSCRIBE", s->channel};
		size_t argl[2] = {9, strlen(s->channel)};

		if (redisAsyncCommandArgv(s->ac, on_sub, s, 2, argv, argl) != REDIS_OK) {
			hs_fail(s, s->ac, "SUBSCRIBE could not be sent");
			return;
		}
		s->budgets_ok = 1;  /* not used; keeps the ready line short */
	}
	s->state = STORE_S_READY;
	__atomic_store_n(&s->st.up, 1, __ATOMIC_RELAXED);
	s->backoff_ms = STORE_BACKOFF_MIN_MS;
	count(&s->st.connects, 1);
	log_info("store %s: ready%s", where(s, w, sizeof(w)),
	         s->budgets_ok ? "" : " for rate limits only (budgets refused: keys may be evicted)");
}

static void
evict_checked(struct store *s, enum store_evict e, const char *val, const char *how)
{
	char w[STORE_NAME_MAX + 16];

	s->budgets_ok = e == STORE_EVICT_NO;
	if (e == STORE_EVICT_YES)
		log_warnx("store %s: maxmemory-policy is %s, not noeviction: Redis may drop a budget's key and so reset "
		          "what was spent; budgets are refused on this Redis (rate limits are counted)",
		          where(s, w, sizeof(w)), val);
	else if (e == STORE_EVICT_UNKNOWN)
		log_warnx("store %s: maxmemory-policy cannot be read (%s): budgets are refused on this Redis, since it "
		          "may evict their keys (rate limits are counted)", where(s, w, sizeof(w)), how);
}

static void
on_handshake(redisAsyncContext *ac, void *reply, void *priv)
{
	struct store *s = ac->data;
	const redisReply *r = reply;
	uintptr_t step = (uintptr_t)priv;
	char val[64];

	if (r == NULL || s->hs_failed)
		return;  /* the connection is going away: on_disconnect / conn_lost reconnects */
	s->last_reply_us = mono_us();
	switch (step) {
	case HS_AUTH:
		if (store_reply_ok(r) != 0)
			return hs_fail(s, ac, "authentication failed (AUTH was refused)");
		break;
	case HS_SELECT:
		if (store_reply_ok(r) != 0)
			return hs_fail(s, ac, "SELECT of the database was refused");
		break;
	case HS_CONFIG: {
		enum store_evict e = store_reply_config_evict(r, val, sizeof(val));

		if (e == STORE_EVICT_UNKNOWN) {
			/* CONFIG renamed or refused (ACL): INFO memory says the same */
			if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_INFO, "INFO memory") != REDIS_OK)
				return hs_fail(s, ac, "INFO could not be sent");
			s->hs_left++;
		} else {
			evict_checked(s, e, val, "CONFIG GET");
		}
		break;
	}
	case HS_INFO:
		evict_checked(s, store_reply_info_evict(r, val, sizeof(val)), val, "CONFIG GET and INFO memory refused");
		break;
	default:
		if (step < HS_SCRIPT || step >= HS_SCRIPT + STORE_NSCRIPT ||
		    store_reply_sha(r, s->sha[step - HS_SCRIPT]) != 0)
			return hs_fail(s, ac, "SCRIPT LOAD was refused");
		break;
	}
	if (--s->hs_left == 0)
		hs_done(s);
}

static void
on_hs_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct store *s = arg;
	char w[STORE_NAME_MAX + 16];

	(void)fd;
	(void)what;
	if (may_log(s, LOG_CONN))
		log_warnx("store %s: not ready within the handshake bound; retrying", where(s, w, sizeof(w)));
	conn_drop(s);
}

static int
send_handshake(struct store *s, redisAsyncContext *ac)
{
	int i;

	s->hs_left = 0;
	s->hs_failed = 0;
	if (s->password != NULL) {
		const char *argv[2] = {"AUTH", (const char *)s->password->p};
		size_t argl[2] = {4, s->password->len};

		if (redisAsyncCommandArgv(ac, on_handshake, (void *)(uintptr_t)HS_AUTH, 2, argv, argl) != REDIS_OK)
			return -1;
		s->hs_left++;
	}
	if (s->channel != NULL) {
		/* a subscriber: no counters on it (channels are not per database) */
		if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_SELECT, "SELECT %u", s->db) != REDIS_OK)
			return -1;
		s->hs_left++;
		return 0;
	}
	if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_SELECT, "SELECT %u", s->db) != REDIS_OK ||
	    redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)HS_CONFIG, "CONFIG GET maxmemory-policy") != REDIS_OK)
		return -1;
	s->hs_left += 2;
	for (i = 0; i < STORE_NSCRIPT; i++) {
		if (redisAsyncCommand(ac, on_handshake, (void *)(uintptr_t)(HS_SCRIPT + i), "SCRIPT LOAD %s",
		                      store_script_text((enum store_script)i)) != REDIS_OK)
			return -1;
		s->hs_left++;
	}
	return 0;
}

/* Redis sent more than STORE_UNREAD_MAX bytes of a reply not yet whole (store_ev.c): drop the connection. */
static void
on_overflow(redisAsyncContext *ac, void *arg)
{
	struct store *s = arg;
	char w[STORE_NAME_MAX + 16];

	if (may_log(s, LOG_REPLY))
		log_warnx("store %s: a reply over %u bytes; connection dropped", where(s, w, sizeof(w)),
		          (unsigned)s->unread_max);
	count_err(s, STORE_EREPLY);
	if (s->ac == ac)
		conn_drop(s);
	else
		redisAsyncFree(ac);
}

static void
connect_start(struct store *s)
{
	redisAsyncContext *ac;
	struct timeval tv;
	char w[STORE_NAME_MAX + 16];
	unsigned hs_ms;

	s->state = STORE_S_CONNECTING;
	s->budgets_ok = 0;
	ac = s->unix_path != NULL ? redisAsyncConnectUnix(s->unix_path) : redisAsyncConnect(s->host, (int)s->port);
	if (ac == NULL || ac->err) {
		if (may_log(s, LOG_CONN))
			log_warnx("store %s: cannot connect: %s", where(s, w, sizeof(w)),
			          ac != NULL ? ac->errstr : "out of memory");
		if (ac != NULL)
			redisAsyncFree(ac);
		count(&s->st.disconnects, 1);
		schedule_retry(s);
		return;
	}
	ac->data = s;
	s->ac = ac;
	s->conn++;
	if (store_reply_fns() == NULL) {  /* the bounded reader (store_int.h) or no connection */
		conn_drop(s);
		return;
	}
	ac->c.reader->fn = store_reply_fns();
	if (store_ev_attach(ac, s->base, s->unread_max, on_overflow, s) != 0 || redisAsyncSetConnectCallback(ac, on_connect) != REDIS_OK ||
	    redisAsyncSetDisconnectCallback(ac, on_disconnect) != REDIS_OK || send_handshake(s, ac) != 0) {
		conn_drop(s);
		return;
	}
	hs_ms = 4 * s->timeout_ms > STORE_HANDSHAKE_MIN_MS ? 4 * s->timeout_ms : STORE_HANDSHAKE_MIN_MS;
	tv.tv_sec = hs_ms / 1000;
	tv.tv_usec = (suseconds_t)(hs_ms % 1000) * 1000;
	evtimer_add(s->hs_ev, &tv);
}

static void
on_retry(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	connect_start(arg);
}

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
	store_reply_script(op->_sc, op->_period_s, reply, &res);
	if (res.outcome == STORE_ENOSCRIPT) {
		if (!op->_retried && !op->_done && s->ac != NULL && s->ac == ac && s->state == STORE_S_READY) {
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
	if (res.outcome == STORE_EREPLY && !op->_done && may_log(s, LOG_REPLY)) {
		const redisReply *r = reply;
		char e[128];

		log_warnx("store: unexpected reply (type %d%s%s): the operation fails", r->type,
		          r->type == REDIS_REPLY_ERROR ? ": " : "",
		          r->type == REDIS_REPLY_ERROR ? log_escape(e, sizeof(e), r->str, r->len) : "");
	}
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
		conn_drop(s);
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
	op_num(op, 4, lim->count);
	op_num(op, 5, lim->period_s);
	op->_argc = 6;
	return op_start(op, arg, out);
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

/* ---- the store ---- */

static struct store *
store_new(struct event_base *base, const struct store_opts *o, const char **err)
{
	struct store *s;

	if (base == NULL || o == NULL || (o->unix_path == NULL) == (o->host == NULL)) {
		*err = "exactly one of a host or a unix socket path is needed";
		return NULL;
	}
	if (o->unix_path == NULL && (o->port == 0 || o->port > 65535)) {
		*err = "the port must be 1..65535";
		return NULL;
	}
	if (o->timeout_ms < STORE_TIMEOUT_MIN_MS || o->timeout_ms > STORE_TIMEOUT_MAX_MS) {
		*err = "the timeout must be 1ms..10s";
		return NULL;
	}
	if (o->key_prefix != NULL && strlen(o->key_prefix) > STORE_PREFIX_MAX) {
		*err = "the key prefix is too long";
		return NULL;
	}
	if (o->backoff_max_ms != 0 && (o->backoff_max_ms < STORE_BACKOFF_MIN_MS || o->backoff_max_ms > STORE_BACKOFF_MAX_MS)) {
		*err = "the backoff bound must be 100ms..5s";
		return NULL;
	}
	if (o->password != NULL && (o->password->len == 0 || o->password->len > SECRET_MAX_BYTES)) {
		*err = "the password is empty or too long";
		return NULL;
	}
	s = xcalloc(1, sizeof(*s));
	if (o->password != NULL) {
		if ((s->password = secret_buf_new(o->password->len + 1)) == NULL) {
			free(s);
			*err = "no memory for the password";
			return NULL;
		}
		memcpy(s->password->p, o->password->p, o->password->len);
		s->password->len = o->password->len;
		s->password->p[s->password->len] = '\0';
	}
	s->base = base;
	s->host = o->host != NULL ? xstrdup(o->host) : NULL;
	s->unix_path = o->unix_path != NULL ? xstrdup(o->unix_path) : NULL;
	s->prefix = xstrdup(o->key_prefix != NULL ? o->key_prefix : "");
	s->port = o->port;
	s->db = o->db;
	s->timeout_ms = o->timeout_ms;
	s->backoff_max_ms = o->backoff_max_ms != 0 ? o->backoff_max_ms : STORE_BACKOFF_MAX_MS;
	s->unread_max = o->unread_max != 0 ? o->unread_max : STORE_UNREAD_MAX;
	s->backoff_ms = STORE_BACKOFF_MIN_MS;
	s->retry_ev = evtimer_new(base, on_retry, s);
	s->hs_ev = evtimer_new(base, on_hs_timeout, s);
	if (s->retry_ev == NULL || s->hs_ev == NULL)
		fatalx("store: out of memory");
	return s;
}

struct store *
store_create(struct event_base *base, const struct store_opts *o, const char **err)
{
	struct store *s = store_new(base, o, err);

	if (s != NULL)
		connect_start(s);
	return s;
}

struct store *
store_create_sub(struct event_base *base, const struct store_opts *o, const char *channel, store_msg_cb *cb,
                 void *arg, const char **err)
{
	struct store *s;
	size_t n;

	if (channel == NULL || cb == NULL || (n = strlen(channel)) == 0 || n > STORE_NAME_MAX) {
		*err = "a subscriber needs a channel and a callback";
		return NULL;
	}
	if ((s = store_new(base, o, err)) == NULL)
		return NULL;
	n += strlen(s->prefix) + 1;
	s->channel = xmalloc(n);
	snprintf(s->channel, n, "%s%s", s->prefix, channel);
	s->msg_cb = cb;
	s->msg_arg = arg;
	connect_start(s);
	return s;
}

uint64_t
store_conn_id(const struct store *s)
{
	return s->state == STORE_S_READY ? s->conn : 0;
}

const char *
store_prefix(const struct store *s)
{
	return s->prefix;
}

void
store_destroy(struct store *s)
{
	struct store_op *op;

	if (s == NULL)
		return;
	s->closing = 1;
	conn_drop(s);  /* every operation waiting gets STORE_ESHUTDOWN through on_reply */
	evtimer_del(s->retry_ev);
	event_free(s->retry_ev);
	event_free(s->hs_ev);
	while ((op = s->free_ops) != NULL) {
		s->free_ops = op->_next;
		free(op);
	}
	secret_buf_free(s->password);
	free(s->host);
	free(s->unix_path);
	free(s->prefix);
	free(s->channel);
	free(s);
}

enum store_state
store_state_get(const struct store *s)
{
	return s->state;
}

int
store_budgets_ok(const struct store *s)
{
	return s->state == STORE_S_READY && s->budgets_ok;
}

void
store_stats_get(const struct store *s, struct store_stats *out)
{
	const uint64_t *src = (const uint64_t *)&s->st;
	uint64_t *dst = (uint64_t *)out;
	size_t i;

	for (i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	for (i = 1; i < STORE_LATENCY_BUCKETS; i++)
		out->latency_le[i] += out->latency_le[i - 1];
}
