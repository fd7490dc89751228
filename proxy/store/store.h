/*
 * proxy/store/store.h - the shared counters of rate limits and budgets in
 * Redis (issue 22): one asynchronous client per worker event_base, attached
 * to libevent by store_ev.c (hiredis's adapter, with a bound).  The judge
 * asks it instead of limits.h when `state.backend: redis` (semlimits.c).
 *
 * Operations (each one Lua script run with EVALSHA, so it is atomic in Redis
 * and concurrent gateways never overspend; time is Redis's TIME, never the
 * gateway's clock, so gateways with skewed clocks agree on the window):
 *   - store_rate_take: GCRA with an emission interval T = ceil(period /
 *     count) microseconds and a burst of count tokens (a request is allowed
 *     while its theoretical arrival time stays within count * T of now); the
 *     same bucket as limits.h's token bucket of count tokens refilled over
 *     period, never faster.  The rate takes of one counter made in one
 *     event-loop round go to Redis as one EVALSHA asking for all of them
 *     (at most STORE_BATCH_MAX): the script grants the first k that fit, in
 *     the order they were made, exactly as k single takes at that instant
 *     would; each take still gets its own callback, timer and cancel;
 *   - store_budget_take: a fixed window aligned to Redis's TIME (start =
 *     now - now % period_s, so UTC hours and days); the amount is added with
 *     INCRBY only if the window's sum stays <= max, otherwise nothing is
 *     added; the key expires STORE_BUDGET_GRACE_S after the window's end;
 *   - store_budget_refund: DECRBY of an earlier take's window (floored at 0;
 *     a window key that expired is left alone).
 * Amounts are integers in the policy's millionths (POLICY_AMOUNT_SCALE),
 * passed to INCRBY as decimal text, never INCRBYFLOAT.  Redis's Lua has only
 * doubles, which are exact to 2^53: an amount or a max over STORE_AMOUNT_MAX
 * (about 9.007e9 units) is refused with STORE_EINVAL (fail closed) rather
 * than compared inexactly.
 *
 * Keys (store_key): <key_prefix><kind>:<policy key>:<sandbox>[:<window>],
 * kind "r" (rate) or "b" (budget).  The policy key and the sandbox name are
 * escaped: a byte of A-Z a-z 0-9 '_' '.' '-' stands for itself, every other
 * byte (':' '%' '*' '?' '{' '}' blanks, controls, UTF-8) becomes '%' and two
 * upper-case hex digits.  A global counter's sandbox is "*", a per-sandbox
 * counter without a sandbox name is "?"; neither can come out of the
 * escaping, and an escaped part never holds ':', so one key has exactly one
 * reading and a sandbox name cannot address another sandbox's (or the
 * global) counter.  The prefix is the operator's (state.redis.key_prefix,
 * checked by the loader) and is not escaped.
 *
 * Each operation waits at most opts.timeout_ms (a libevent timer: hiredis
 * 0.14 has no timeouts of its own); past it the callback gets
 * STORE_ETIMEOUT.  A reply arriving after that, or after store_cancel, is
 * read and dropped: the callback is never called twice, nor after cancel.
 * When an operation times out and the connection has answered nothing
 * since that operation was sent, the connection is taken as stalled: it is
 * dropped (its other operations get STORE_EDOWN) and a new one is made.
 *
 * Connection: created at store_create and again after every loss, with a
 * backoff doubling from STORE_BACKOFF_MIN_MS to opts.backoff_max_ms
 * (STORE_BACKOFF_MAX_MS when 0), reset once a connection is ready.  On each
 * connection, before any operation is sent: AUTH <password> when a password
 * is set (an error reply: the connection is dropped and the store stays
 * down, fail closed; the log says authentication failed, never the value),
 * SELECT <db>, then `CONFIG GET maxmemory-policy` (or, when CONFIG is renamed
 * or refused, `INFO memory`): only "noeviction" is safe for budgets, because
 * under any other policy Redis may drop a budget's key and so reset what was
 * spent.  Under another or an unknown policy the store is ready for rate
 * limits but refuses budget operations with STORE_EUNSAFE (and says why in
 * the log, once per connection).  Then SCRIPT LOAD of the three scripts.  An
 * EVALSHA answered NOSCRIPT (Redis restarted, or SCRIPT FLUSH) loads the
 * script again and retries once.  While the store is not ready, operations
 * fail at once with STORE_EDOWN (no callback).
 *
 * Errors are logged at most once per STORE_LOG_INTERVAL_S per kind; no log
 * line, error string or counter ever holds the password.
 *
 * Threads: a store belongs to the thread running its event_base; every
 * function but store_stats_get must be called there.  store_stats_get may
 * run on any thread (counters are relaxed atomics).
 *
 * Memory: the password is copied into a secret_buf (its own pages, wiped
 * when freed).  hiredis itself formats the AUTH command into its output
 * buffer, which it frees without wiping: the one copy this module cannot
 * wipe.  Operations come from a per-store free list: after warm-up a take
 * allocates nothing of ours (hiredis allocates its command and reply).
 */
#ifndef SLUICE_PROXY_STORE_H
#define SLUICE_PROXY_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "common/sluice.h"
#include "policy/policy.h"

struct event_base;
struct secret_buf;

#define STORE_PREFIX_MAX 64          /* bytes of key_prefix */
#define STORE_NAME_MAX 1024          /* bytes of a policy key or a sandbox name before escaping */
#define STORE_KEY_MAX (STORE_PREFIX_MAX + 2 * 3 * STORE_NAME_MAX + 32)  /* an escaped key, with its NUL */
#define STORE_TIMEOUT_MIN_MS 1
#define STORE_TIMEOUT_MAX_MS 10000   /* opts.timeout_ms bounds (state.redis.timeout) */
#define STORE_BACKOFF_MIN_MS 100     /* first reconnect delay */
#define STORE_BACKOFF_MAX_MS 5000    /* longest reconnect delay (default of opts.backoff_max_ms) */
#define STORE_HANDSHAKE_MIN_MS 1000  /* a connection not ready within max(this, 4 * timeout) is dropped */
#define STORE_PENDING_MAX 65536      /* operations in flight per store; more fail with STORE_EBUSY */
#define STORE_AMOUNT_MAX INT64_C(9007199254740991)  /* 2^53 - 1 millionths: exact in Redis's Lua */
#define STORE_BUDGET_GRACE_S 3600    /* a budget window's key outlives its end by this (late refunds) */
#define STORE_LOG_INTERVAL_S 10      /* at most one log line per kind of error per interval */
#define STORE_LATENCY_BUCKETS 12     /* see store_latency_bounds_us */
#define STORE_ERR_KINDS 8            /* -STORE_ESHUTDOWN + 1: store_stats.err_kind */

/* What an operation came to.  Non-negative: Redis answered; negative: it did not (fail closed, or local). */
enum store_outcome {
	STORE_ALLOWED = 0,       /* taken (or refunded) */
	STORE_REFUSED = 1,       /* over the rate or the cap: nothing taken; retry_after_ms says when */
	STORE_ETIMEOUT = -1,     /* no answer within opts.timeout_ms */
	STORE_EDOWN = -2,        /* no ready connection, or it was lost while waiting */
	STORE_EREPLY = -3,       /* an error reply (script error, OOM, ...) or a reply of the wrong shape */
	STORE_EUNSAFE = -4,      /* budgets: this Redis may evict keys (maxmemory-policy is not noeviction) */
	STORE_EINVAL = -5,       /* a key over STORE_KEY_MAX, an amount outside 0..STORE_AMOUNT_MAX, a bad limit */
	STORE_EBUSY = -6,        /* STORE_PENDING_MAX operations already in flight */
	STORE_ESHUTDOWN = -7,    /* store_destroy ran while this operation waited */
	STORE_ENOSCRIPT = -8,    /* internal: EVALSHA answered NOSCRIPT (never given to a callback) */
};

/* Static text for <o> ("timeout", "refused", ...), for logs and JSON reasons; never NULL. */
const char *store_outcome_str(enum store_outcome o);

struct store_result {
	enum store_outcome outcome;
	uint64_t retry_after_ms;  /* REFUSED: ms until a take could succeed (rate) or the window ends (budget);
	                           * ALLOWED budget take: ms left in its window; else 0 */
	uint64_t window_s;        /* budget take (ALLOWED or REFUSED): the window's start, Redis TIME in UTC
	                           * seconds; pass it to store_budget_refund.  Else 0 */
	uint32_t granted;         /* inside the store: the takes of a rate batch that passed; callers read
	                           * <outcome> */
};

/* Called once per operation, on the store's thread, unless the operation was cancelled.  <res> is borrowed
 * for the call.  The operation's handle is invalid from the moment the callback is entered.  The callback
 * may start new operations; it must not call store_destroy. */
typedef void store_cb(const struct store_result *res, void *arg);

enum store_state {
	STORE_S_CONNECTING = 1,   /* connect and handshake in progress */
	STORE_S_READY = 2,        /* operations are sent */
	STORE_S_BACKOFF = 3,      /* lost; waiting to reconnect */
};

struct store_opts {
	const char *host;          /* TCP: host name or address; NULL when unix_path is set */
	unsigned port;             /* TCP port (1..65535) */
	const char *unix_path;     /* a unix socket path, or NULL */
	unsigned db;               /* SELECT <db> (0..) */
	const struct secret_buf *password;  /* borrowed; copied. NULL: no AUTH */
	unsigned timeout_ms;       /* per operation, STORE_TIMEOUT_MIN_MS..STORE_TIMEOUT_MAX_MS */
	const char *key_prefix;    /* at most STORE_PREFIX_MAX bytes; NULL is "" */
	unsigned backoff_max_ms;   /* 0: STORE_BACKOFF_MAX_MS; else STORE_BACKOFF_MIN_MS..STORE_BACKOFF_MAX_MS */
	size_t unread_max;         /* bytes of a reply not yet whole before the connection is dropped; 0: 64 KiB */
};

struct store;
struct store_op;

/*
 * Fills <o> from cfg->redis (state.redis: its strings are borrowed from
 * <cfg>, which must outlive the store_create calls) and reads the password
 * from its source (env:/file:, as secrets are read) into *<pw>, taken by the
 * caller (secret_buf_free; NULL when there is no password) and borrowed by
 * o->password.  Read once at start, then given to each worker's
 * store_create.  0, or a negative SLUICE_E* with *<err> (static text, never
 * the value).
 */
int store_opts_from_config(const struct policy_config *cfg, struct store_opts *o, struct secret_buf **pw,
                           const char **err);
/* state.fleet_key read from its source into *<key> (taken; NULL when not configured): 0, or a negative
 * SLUICE_E* with *<err> (static; never the value), also when the key is shorter than FLEET_KEY_MIN bytes. */
int store_fleet_key_from_config(const struct policy_config *cfg, struct secret_buf **key, const char **err);

/*
 * Creates a store on <base> (borrowed; must outlive the store) and starts
 * connecting.  <o> is copied.  NULL with *<err> (static text) for bad
 * options; a Redis that cannot be reached is not an error here (the store
 * retries; operations fail with STORE_EDOWN meanwhile).
 */
struct store *store_create(struct event_base *base, const struct store_opts *o, const char **err);

/*
 * Drops the connection and frees the store.  Every operation still waiting
 * gets its callback with STORE_ESHUTDOWN (cancelled ones do not); handles
 * are invalid afterwards.  Never from inside a store callback.  NULL is fine.
 */
void store_destroy(struct store *s);

enum store_state store_state_get(const struct store *s);
/* 1 when budget operations are allowed on the current connection (ready, and maxmemory-policy is
 * noeviction), else 0. */
int store_budgets_ok(const struct store *s);

/*
 * Starts an operation.  Returns 0 with *<op> set: <cb> will be called once
 * with the outcome (unless store_cancel(*op) runs first).  Or a negative
 * STORE_E* outcome (EDOWN, EUNSAFE, EINVAL, EBUSY): no callback will come,
 * *<op> is NULL.  The callback is never called from inside these functions.
 *
 * <sandbox>: the sandbox name, used when the limit or budget is per sandbox
 * (POLICY_SCOPE_SANDBOX; NULL counts as "?"), ignored when global.  <lim>
 * and <b> are borrowed for the call (their key is copied into the request).
 * store_rate_take takes one token of <lim> (count tokens per period_s, any
 * period_s >= 1).  store_budget_take adds <amount> (0..STORE_AMOUNT_MAX
 * millionths) to <b>'s current window if the sum stays <= b->max (also
 * <= STORE_AMOUNT_MAX); b->period_s >= 1.  store_budget_refund gives
 * <amount> back to the window that started at <window_s> (from the take's
 * result); its outcome is ALLOWED whether or not the window still existed.
 */
int store_rate_take(struct store *s, const struct policy_limit *lim, const char *sandbox, store_cb *cb, void *arg,
                    struct store_op **op);
int store_budget_take(struct store *s, const struct policy_budget *b, const char *sandbox, int64_t amount,
                      store_cb *cb, void *arg, struct store_op **op);
int store_budget_refund(struct store *s, const struct policy_budget *b, const char *sandbox, int64_t amount,
                        uint64_t window_s, store_cb *cb, void *arg, struct store_op **op);

/*
 * Cancels <op> (its request is being freed): its callback will not be
 * called, and the reply, if one comes, is dropped.  The handle is invalid
 * afterwards.  Only for an operation whose callback has not been entered.
 */
void store_cancel(struct store_op *op);

/* Counters for /metrics (monotonic since store_create). */
struct store_stats {
	uint64_t ops;             /* operations started (returned 0) */
	uint64_t errors;          /* outcomes < 0 given to callbacks or returned at start (EDOWN, EREPLY, ...) */
	uint64_t timeouts;        /* of which STORE_ETIMEOUT */
	uint64_t refused;         /* STORE_REFUSED outcomes */
	uint64_t connects;        /* connections that became ready */
	uint64_t disconnects;     /* connections lost or dropped (stalled, failed handshake) */
	uint64_t noscript;        /* NOSCRIPT answers that loaded a script again */
	uint64_t latency_count;   /* replies timed */
	uint64_t latency_sum_us;  /* their sum, microseconds from send to reply */
	uint64_t latency_le[STORE_LATENCY_BUCKETS];  /* replies with latency <= store_latency_bounds_us[i]
	                                              * (cumulative, as a Prometheus histogram) */
	uint64_t err_kind[STORE_ERR_KINDS];  /* <errors> by kind: err_kind[-outcome], e.g. [-STORE_EDOWN] */
	uint64_t up;              /* a gauge: 1 while a connection is ready, else 0 */
};
/* The upper bounds of the latency buckets in microseconds (the last is UINT64_MAX: +Inf). */
extern const uint64_t store_latency_bounds_us[STORE_LATENCY_BUCKETS];
/* Copies <s>'s counters into *<out>; any thread. */
void store_stats_get(const struct store *s, struct store_stats *out);

enum store_kind {
	STORE_KIND_RATE = 1,      /* "r" */
	STORE_KIND_BUDGET = 2,    /* "b" (store_budget_* append ":<window>" in the script) */
};

/*
 * Writes the key of a counter (the rule in this header's comment) into
 * <out> (<cap> bytes, NUL-terminated): <prefix> (NULL is ""), <kind>, the
 * escaped <policy_key> (1..STORE_NAME_MAX bytes) and, when <global>, "*",
 * else the escaped <sandbox> (at most STORE_NAME_MAX bytes; NULL: "?").
 * Returns the key's length, or -1 when an input is out of bounds or the key
 * does not fit.  Pure.
 */
long store_key(char *out, size_t cap, const char *prefix, enum store_kind kind, const char *policy_key, int global,
               const char *sandbox);

#endif
