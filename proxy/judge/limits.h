/*
 * proxy/judge/limits.h - the counters of rate limits and budgets (policy.h's
 * struct policy_limit and struct policy_budget), kept across reloads and
 * restarts in a state file.
 *
 * A counter is named by the policy's key ("rule:<id>", "limit:<name>",
 * "budget:<name>", "secret:<name>"), its kind (a rate limit and a budget of
 * one key are two counters) and the sandbox ("*" for a global one; a NULL
 * sandbox of a per-sandbox counter counts as "?", which no sandbox name or
 * address can be).  Keys and sandbox names may hold any byte but NUL: the
 * state file escapes them.
 *
 * Rate limits are token buckets of lim->count tokens, refilled continuously
 * at count per period (kept in thousandths of a token).  Budgets are sums in
 * fixed windows aligned to UTC hours or days (period_s 3600 or 86400).
 * Counters that are back to their initial state (a full bucket, a past
 * window) are dropped when the state is next written, also for keys no
 * longer in the policy.
 *
 * Threads: every take, refund and peek is thread-safe (one mutex per shard
 * of the counters, held for a hash lookup and a few integer operations);
 * limits_persist and limits_close run on one thread (the gateway's main
 * thread).  Time is the wall clock in ms (the window edges are UTC); a clock
 * that steps back never refills a bucket or reopens a window.
 *
 * Errors a caller turns into an answer: SLUICE_ETOOBIG (LIMITS_COUNTERS_MAX
 * counters exist, or a key over LIMITS_KEY_MAX) and SLUICE_EIO (the state
 * cannot be saved: see limits_persist): the request is refused with 503,
 * fail closed, not counted.
 */
#ifndef SLUICE_PROXY_LIMITS_H
#define SLUICE_PROXY_LIMITS_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"

#define LIMITS_COUNTERS_MAX 65536     /* counters at once; a new one past this fails closed (503) */
#define LIMITS_KEY_MAX 1024           /* bytes of a key; of a sandbox name: LIMITS_SANDBOX_MAX */
#define LIMITS_SANDBOX_MAX 256
#define LIMITS_LINE_MAX 8192          /* bytes of one state file line (escaped key and sandbox fit) */
#define LIMITS_FILE_MAX (64u << 20)   /* bytes of a state file read at start */
#define LIMITS_UNSAVED_MAX_MS 10000   /* the state unsaved this long: takes fail closed (SLUICE_EIO) */

struct limits;

/* Opens (creates) the counters of <state_file> (NULL: in memory only); a file that does not parse is an error
 * (fail closed: the gateway does not start, the message names the file and the line). */
struct limits *limits_open(const char *state_file, char *err, size_t errcap);
void limits_close(struct limits *l);      /* persists (if dirty) and frees */
/* Takes one token of rate limit <lim> for <sandbox> (ignored when lim->scope is global) at <now_ms> (wall clock
 * ms). Returns 0 allowed, 1 refused with *retry_after_s (>= 1) set, or a negative SLUICE_E*. Thread-safe. */
int limits_rate_take(struct limits *l, const struct policy_limit *lim, const char *sandbox, uint64_t now_ms,
                     unsigned *retry_after_s);
/* Adds <amount> (millionths, >= 0) to budget <b>'s window for <sandbox>/global if the sum stays <= b->max.
 * Windows are fixed, aligned to UTC hours/days; a refusal's *retry_after_s is the time to the window's end.
 * Returns 0 taken, 1 refused, or a negative SLUICE_E*. Thread-safe. */
int limits_budget_take(struct limits *l, const struct policy_budget *b, const char *sandbox, int64_t amount,
                       uint64_t now_ms, unsigned *retry_after_s);
/* Gives back what limits_budget_take took (a request refused later, e.g. by a rate limit or upstream failure
 * before any byte was sent). */
void limits_budget_refund(struct limits *l, const struct policy_budget *b, const char *sandbox, int64_t amount,
                          uint64_t now_ms);
/* Writes the state file atomically (tmp + fsync + rename + fsync dir) when anything changed since the last
 * write; called from the main thread at least every second, and at stop. 0 or SLUICE_EIO. */
int limits_persist(struct limits *l);
/* For /metrics and tests: the current value of a counter, -1 when unknown. */
int64_t limits_peek(struct limits *l, const char *key, const char *sandbox, uint64_t now_ms);

/* ---- extensions (compatible with the contract above) ---- */

enum limits_kind {
	LIMITS_RATE = 1,
	LIMITS_BUDGET = 2,
};

/*
 * limits_peek of one kind: a rate counter's tokens in thousandths (refilled
 * to <now_ms> when its rate is known, i.e. once taken since start), or a
 * budget's sum in millionths in the window holding <now_ms> (0 when that
 * window has not started yet).  limits_peek itself returns the budget's sum
 * when <key>/<sandbox> has a budget counter, else the rate's thousandths.
 * <sandbox> "*" names a global counter.  -1: no such counter.
 */
int64_t limits_peek_kind(struct limits *l, enum limits_kind kind, const char *key, const char *sandbox,
                         uint64_t now_ms);

/*
 * Opens counters from the state file text <buf>/<len> (<name> in error
 * messages), in memory only (never written): for tests and the fuzzer.
 * NULL with "name:line: why" in <err> when it does not parse.
 */
struct limits *limits_open_buffer(const char *name, const char *buf, size_t len, char *err, size_t errcap);

/*
 * Writes the state as state file text into <out> (capacity <cap>): the
 * length (that would be needed, as snprintf), or -1 when a counter cannot be
 * written (never: keys are checked at take).  For tests; limits_persist
 * writes the same text.
 */
long limits_format(struct limits *l, char *out, size_t cap);

/* Number of counters held (expired ones included until the next write). */
size_t limits_count(struct limits *l);

/*
 * Marks the state as unsaveable (<on> 1: the state directory is not
 * writable) or saveable again.  While unsaveable every take returns
 * SLUICE_EIO (fail closed: counters would not survive a restart) and
 * limits_persist tries to write even when nothing changed, clearing the
 * mark when a write succeeds.  limits_persist sets it itself when writes
 * have failed for LIMITS_UNSAVED_MAX_MS.
 */
void limits_set_unsaveable(struct limits *l, int on);
/* 1 while unsaveable (see above), else 0. */
int limits_unsaveable(struct limits *l);

#endif
