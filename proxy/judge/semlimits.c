/*
 * proxy/judge/semlimits.c - the limits of an allowed request (semantic.h:
 * sem_admit): each secret's rate limit, then the rule's, then (an MCP
 * batch) each element's limit and each element's budget, then the rule's
 * budget, taken at relay_dial once nothing else can refuse the request; a
 * refusal is a 429 whose Retry-After and JSON body say which limit and when
 * it resets; a counter that cannot be kept is a 503 (fail closed).  Budgets
 * taken are refunded (sem_budget_refund) if the request never went upstream,
 * and at once when a later budget of the same request refuses it (a batch
 * takes all of its elements' amounts or none).
 *
 * With state.backend: redis each limit is asked of the worker's store
 * (store/store.h) one after the other: sem_admit returns 1 (waiting) and the
 * store's callback (admit_done) goes on with the next step, then hands the
 * outcome to the session (w->sem_hooks->admitted).  A store that cannot
 * answer (down, timeout, a bad reply, a Redis that may evict a budget's key)
 * refuses with 503 naming the store (on_error: deny), or counts the limit
 * with this gateway's own counters, its cap scaled by local_share (on_error:
 * local; the request's record says so).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/log.h"
#include "common/sluice.h"
#include "policy/judge.h"
#include "proxy/judge/limits.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/store/store.h"
#include "proxy/judge/semantic.h"
#include "semantic_int.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/core/context.h"

#define SHARE_ONE 1000000u           /* local_share's unit: millionths of a cap */
#define FALLBACK_LOG_INTERVAL_MS 10000
#define SHARED_SANDBOX_MAX (64 + 1 + 64 + 1)  /* "<gateway_id>/<registered name>": ids and names are at most 64 */

/* A 429: the limit <key> (<kind>) refused; Retry-After and a JSON body say which and when it resets. */
static int
refuse_limit(struct conn *c, const char *rule, const char *key, const char *kind, unsigned retry, uint64_t now,
             const char *what, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = sem_req_of(r);
	time_t t = (time_t)(now / 1000u) + (time_t)retry;
	struct tm tm;

	if (retry == 0)
		retry = 1;
	s->limit_key = key;
	s->limit_kind = kind;
	s->retry_after = retry;
	if (gmtime_r(&t, &tm) == NULL || strftime(s->reset, sizeof(s->reset), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(s->reset, sizeof(s->reset), "?");
	snprintf(r->rule_buf, sizeof(r->rule_buf), "%s: resets in %u s (%s)", what, retry, s->reset);
	/* git, gRPC: answered in the client's protocol, the retry time in the reason; else JSON with Retry-After */
	refusal_set(rf, 429, REFUSAL_RATE_LIMITED, rule, r->rule_buf);
	rf->limit = (struct refusal_limit){.key = key, .kind = kind, .retry_after = retry, .reset = s->reset};
	mcp_req_refusal(r, rf);  /* on an MCP endpoint: JSON-RPC errors, with Retry-After */
	return -1;
}

/* A limit that cannot be counted (limits.h: too many counters, state not saveable): 503, fail closed. */
static int
limits_failed(const char *rule, int rc, struct refusal *rf)
{
	return refusal_close(rf, 503, REFUSAL_LIMITS_UNAVAILABLE, rule,
	                     rc == SLUICE_ETOOBIG ? "too many rate limit and budget counters: refused (fail closed)"
	                                          : "the counters of limits and budgets cannot be saved (state_dir): "
	                                            "refused (fail closed)");
}

/* The shared counters did not answer (<o> < 0) and on_error is deny: 503 naming the store. */
static int
store_failed(struct conn *c, const char *rule, enum store_outcome o, struct refusal *rf)
{
	struct req *r = c->req;

	snprintf(r->rule_buf, sizeof(r->rule_buf),
	         o == STORE_EUNSAFE ? "the shared counters (state.backend: redis) may evict keys (maxmemory-policy is not "
	                              "noeviction): budgets are refused (fail closed)"
	                            : "the shared counters (state.backend: redis) are unavailable (%s): refused (fail closed)",
	         store_outcome_str(o));
	return refusal_close(rf, 503, REFUSAL_LIMITS_UNAVAILABLE, rule, r->rule_buf);
}

/* <cap> scaled by this gateway's share of the fleet (state.local_share, or 1/fleet_size), rounded down
 * (never above its share: the fleet's sum stays within the cap). */
static int64_t
local_cap(const struct policy_config *cfg, int64_t cap)
{
	uint64_t share = cfg->local_share;
	uint64_t v = (uint64_t)(cap > 0 ? cap : 0);

	if (share == 0)  /* 1/fleet_size, exactly */
		return (int64_t)(v / (cfg->fleet_size > 0 ? cfg->fleet_size : 1u));
	return (int64_t)((v / SHARE_ONE) * share + (v % SHARE_ONE) * share / SHARE_ONE);
}

/* on_error: local took over from the store (<o>): logged once per interval, marked on the record. */
static void
fell_back(struct conn *c, enum store_outcome o)
{
	static _Atomic uint64_t last_log;
	uint64_t now = clock_mono_ms(), prev = atomic_load(&last_log);

	sem_req_of(c->req)->fallback = 1;
	if ((prev == 0 || now - prev >= FALLBACK_LOG_INTERVAL_MS) && atomic_compare_exchange_strong(&last_log, &prev, now))
		log_warnx("the shared counters (state.backend: redis) are unavailable (%s): limits are counted by this "
		          "gateway alone, each cap scaled by its share (on_error: local)",
		          store_outcome_str(o));
}

/* One token of rate limit <lim> from the local counters, its count scaled when <scaled>: 0, or -1 refused. */
static int
take_rate(struct conn *c, const struct policy_limit *lim, const char *rule, const char *sbx, int scaled,
          struct refusal *rf)
{
	struct limits *l = c->w->gw->limits;
	struct policy_limit local;
	uint64_t now = clock_wall_ms();
	char what[400];
	unsigned retry = 0;
	int rc;

	if (scaled) {
		local = *lim;
		local.count = (uint32_t)local_cap(c->w->gw->cfg, (int64_t)lim->count);
		lim = &local;
	}
	rc = l != NULL ? limits_rate_take(l, lim, sbx, now, &retry) : SLUICE_EIO;
	if (rc < 0)
		return limits_failed(rule, rc, rf);
	if (rc == 0)
		return 0;
	snprintf(what, sizeof(what), "rate limit %s (%u/%s, %s%s) is exhausted", lim->key, (unsigned)lim->count,
	         policy_period_name(lim->period_s), lim->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox",
	         scaled ? ", this gateway's share" : "");
	return refuse_limit(c, rule, lim->key, "rate", retry, now, what, rf);
}

/*
 * One budget take: the request's own (s->budget) or a batch element's
 * (mcp_req_budget_at), its amount and rule, and where the take is marked.
 */
struct take {
	const struct policy_budget *b;
	int64_t amount;
	const char *rule;
	unsigned char *taken, *shared;
	uint64_t *window_s;
};

/* The budget's refusal (429) for take <t> (max <max>, scaled when <scaled>). */
static int
refuse_budget(struct conn *c, const struct take *t, int64_t max, int scaled, unsigned retry, struct refusal *rf)
{
	char what[400], a[32], m[32];

	snprintf(what, sizeof(what), "budget %s (%s per %s, %s%s) would be exceeded by this request's %s", t->b->key,
	         policy_amount_fmt(max, m, sizeof(m)), policy_period_name(t->b->period_s),
	         t->b->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox", scaled ? ", this gateway's share" : "",
	         policy_amount_fmt(t->amount, a, sizeof(a)));
	return refuse_limit(c, t->rule, t->b->key, "budget", retry, clock_wall_ms(), what, rf);
}

/* A take succeeded: marked on it, and on the request (sem_budget_refund gives back what it took). */
static void
taken(struct conn *c, const struct take *t, int shared, uint64_t window_s)
{
	struct sem_req *s = c->req->sem;

	*t->taken = 1;
	*t->shared = shared != 0;
	*t->window_s = window_s;
	s->budget_taken = 1;
	if (t->b == s->budget)
		policy_amount_fmt(s->amount, s->amount_text, sizeof(s->amount_text));
}

/* Take <t> from the local counters (its max scaled when <scaled>): 0, or -1 refused. */
static int
take_budget(struct conn *c, const struct take *t, const char *sbx, int scaled, struct refusal *rf)
{
	struct limits *l = c->w->gw->limits;
	struct policy_budget local;
	const struct policy_budget *b = t->b;
	unsigned retry = 0;
	int rc;

	if (scaled) {
		local = *b;
		local.max = local_cap(c->w->gw->cfg, b->max);
		b = &local;
	}
	rc = l != NULL ? limits_budget_take(l, b, sbx, t->amount, clock_wall_ms(), &retry) : SLUICE_EIO;
	if (rc < 0)
		return limits_failed(t->rule, rc, rf);
	if (rc > 0)
		return refuse_budget(c, t, b->max, scaled, retry, rf);
	taken(c, t, 0, 0);
	return 0;
}

/*
 * The steps of sem_admit, in order: 0..nuses-1 each secret's limit (once per
 * secret), nuses the rule's limit, then SEM_MCP_STEPS steps for the allowed
 * elements of an MCP batch (each its own rule's limit: N calls through one
 * limit take N), then SEM_MCP_STEPS steps for their budgets (each element's
 * amount, one budget taken as often as elements name it), and last the
 * request's own budget (LAST_STEP; a batch has none: its elements do).
 * Every rate limit comes before every budget, so only a budget can refuse
 * once a budget was taken, and what the batch took is given back then.
 */
#define SEM_MCP_STEPS POLICY_MCP_BATCH_MAX
#define LIMIT_STEPS(r) ((r)->cred->nuses + SEM_MCP_STEPS)      /* the last step that is a rate limit */
#define BUDGET_STEPS(r) (LIMIT_STEPS(r) + SEM_MCP_STEPS)       /* the last step that is an element's budget */
#define LAST_STEP(r) (BUDGET_STEPS(r) + 1)                     /* the request's budget */

/* The limit of step <i> (see above), or NULL when that step takes none. */
static const struct policy_limit *
step_limit(struct conn *c, size_t i)
{
	const struct req *r = c->req;
	size_t k;

	if (i < r->cred->nuses) {
		for (k = 0; k < i && r->cred->uses[k].s != r->cred->uses[i].s; k++)
			;
		return k < i ? NULL : policy_secret_limit(c->pol, r->cred->uses[i].s->name);
	}
	if (i == r->cred->nuses)
		return r->sem->limit;
	return i <= LIMIT_STEPS(r) ? mcp_req_limit(r, i - r->cred->nuses - 1) : NULL;
}

/* The budget take of step <i> into <t>: 1, or 0 when that step takes none. */
static int
step_budget(struct conn *c, size_t i, struct take *t)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct mcp_req_msg *el;

	if (i <= LIMIT_STEPS(r))
		return 0;
	if (i <= BUDGET_STEPS(r)) {
		if ((el = mcp_req_budget_at(r, i - LIMIT_STEPS(r) - 1)) == NULL)
			return 0;
		*t = (struct take){.b = el->budget, .amount = el->amount, .rule = el->rule != NULL ? el->rule : s->rule,
		                   .taken = &el->budget_taken, .shared = &el->budget_shared, .window_s = &el->window_s};
		return 1;
	}
	if (s->budget == NULL)
		return 0;
	*t = (struct take){.b = s->budget, .amount = s->amount, .rule = s->rule, .taken = &s->own_taken,
	                   .shared = &s->budget_shared, .window_s = &s->window_s};
	return 1;
}

static const char *
step_rule(struct conn *c, size_t i, const struct policy_limit *lim)
{
	return i < c->req->cred->nuses ? lim->key : c->req->sem->rule;
}

static void admit_done(const struct store_result *res, void *arg);

/*
 * The sandbox a shared counter is kept for: a sandbox of the configuration
 * (or a client outside every sandbox) by its name, the same on every gateway
 * (fleet-wide); one that `sluice run` registered with this gateway lives only
 * here, so it is "<gateway_id>/<name>" and never shares a counter with a
 * sandbox of the same name on another host.  Written into <buf> when prefixed.
 */
static const char *
shared_sandbox(struct conn *c, const char *sbx, char *buf, size_t cap)
{
	const char *gid = c->w->gw->cfg->gateway_id;

	if (c->sbx == NULL || c->sandbox == NULL || gid == NULL)
		return sbx;
	snprintf(buf, cap, "%s/%s", gid, c->sandbox);
	return buf;
}

/* The outcome <o> of step <i> (from the store; negative: it did not answer): 0 go on, -1 refused (<rf>). */
static int
step_outcome(struct conn *c, size_t i, const struct store_result *res, const char *sbx, struct refusal *rf)
{
	struct sem_req *s = c->req->sem;
	const struct policy_limit *lim = i <= LIMIT_STEPS(c->req) ? step_limit(c, i) : NULL;
	struct take t = {.rule = s->rule};
	const char *rule;
	unsigned retry = (unsigned)((res->retry_after_ms + 999u) / 1000u);

	if (lim == NULL && !step_budget(c, i, &t))
		return 0;  /* never: admit_run asks the store only for a step that takes */
	rule = lim != NULL ? step_rule(c, i, lim) : t.rule;
	if (res->outcome < 0) {
		if (c->w->gw->cfg->state_on_error != POLICY_STATE_LOCAL || res->outcome == STORE_EINVAL)
			return store_failed(c, rule, res->outcome, rf);
		fell_back(c, res->outcome);
		return lim != NULL ? take_rate(c, lim, rule, sbx, 1, rf) : take_budget(c, &t, sbx, 1, rf);
	}
	if (lim != NULL) {
		char what[400];

		if (res->outcome == STORE_ALLOWED)
			return 0;
		snprintf(what, sizeof(what), "rate limit %s (%u/%s, %s, shared) is exhausted", lim->key,
		         (unsigned)lim->count, policy_period_name(lim->period_s),
		         lim->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox");
		return refuse_limit(c, rule, lim->key, "rate", retry, clock_wall_ms(), what, rf);
	}
	if (res->outcome != STORE_ALLOWED)
		return refuse_budget(c, &t, t.b->max, 0, retry, rf);
	taken(c, &t, 1, res->window_s);
	return 0;
}

/* A step refused (<rc> < 0) after budgets were taken for the request: every one of them is given back. */
static int
admit_failed(struct conn *c, int rc)
{
	if (rc < 0 && c->req->sem->budget_taken)
		sem_budget_refund(c);
	return rc;
}

/* Takes the steps from s->lim_next on: 0 all taken, -1 refused (<rf>), 1 waiting for the store. */
static int
admit_run(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct store *st = c->w->store;
	char peer[CONN_ADDR_STR], sbuf[SHARED_SANDBOX_MAX];
	const char *sbx = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer), *ssbx;
	const struct policy_limit *lim;
	struct take t;
	struct store_result res;
	size_t i;
	int rc;

	for (; (i = s->lim_next) <= LAST_STEP(r); s->lim_next++) {
		lim = i <= LIMIT_STEPS(r) ? step_limit(c, i) : NULL;
		if (lim == NULL && !step_budget(c, i, &t))
			continue;
		if (st == NULL) {  /* backend: file */
			if ((lim != NULL ? take_rate(c, lim, step_rule(c, i, lim), sbx, 0, rf) : take_budget(c, &t, sbx, 0, rf)) != 0)
				return admit_failed(c, -1);
			continue;
		}
		ssbx = shared_sandbox(c, sbx, sbuf, sizeof(sbuf));
		rc = lim != NULL ? store_rate_take(st, lim, ssbx, admit_done, c, &s->store_op)
		                 : store_budget_take(st, t.b, ssbx, t.amount, admit_done, c, &s->store_op);
		if (rc == 0)
			return 1;
		res = (struct store_result){.outcome = (enum store_outcome)rc};
		if (step_outcome(c, i, &res, sbx, rf) != 0)
			return admit_failed(c, -1);
	}
	s->admitted = 1;
	return 0;
}

/* The store answered the step sem_admit waits for: the next one, or the outcome to the session. */
static void
admit_done(const struct store_result *res, void *arg)
{
	struct conn *c = arg;
	struct sem_req *s = c->req->sem;
	char peer[CONN_ADDR_STR];
	const char *sbx = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	struct refusal rf;
	int rc;

	s->store_op = NULL;
	rc = admit_failed(c, step_outcome(c, s->lim_next, res, sbx, &rf));
	if (rc == 0) {
		s->lim_next++;
		rc = admit_run(c, &rf);
	}
	if (rc > 0)
		return;
	c->w->sem_hooks->admitted(c, rc < 0 ? &rf : NULL);
}

int
sem_admit(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;

	if (s != NULL && (s->admitted || s->store_op != NULL))
		return s->admitted ? 0 : 1;
	if (r->cred->nuses == 0 && (s == NULL || (s->limit == NULL && s->budget == NULL)) &&
	    (r->mcp == NULL || !r->mcp->batch))
		return 0;
	s = sem_req_of(r);
	s->lim_next = 0;
	return admit_run(c, rf);
}

int
sem_admit_waiting(const struct conn *c)
{
	return c->req != NULL && c->req->sem != NULL && c->req->sem->store_op != NULL;
}

int
sem_admit_timeout(struct conn *c, struct refusal *rf)
{
	struct sem_req *s = c->req != NULL ? c->req->sem : NULL;

	if (s == NULL || s->store_op == NULL)
		return 0;
	store_cancel(s->store_op);
	s->store_op = NULL;
	(void)store_failed(c, s->rule != NULL ? s->rule : "limits", STORE_ETIMEOUT, rf);
	return 1;
}

/* A refund's answer: nothing waits for it (the request is gone); the store counts and logs a failure. */
static void
refund_done(const struct store_result *res, void *arg)
{
	(void)res;
	(void)arg;
}

/* Gives back take <t> (marked taken) of the request on <c>, where it was taken; the mark is cleared. */
static void
refund_one(struct conn *c, const struct take *t, const char *sbx)
{
	struct store_op *op;
	char sbuf[SHARED_SANDBOX_MAX];

	*t->taken = 0;
	if (*t->shared) {
		if (c->w->store == NULL ||
		    store_budget_refund(c->w->store, t->b, shared_sandbox(c, sbx, sbuf, sizeof(sbuf)), t->amount,
		                        *t->window_s, refund_done, NULL, &op) != 0)
			log_warnx("c%llu: budget %s: the refund could not be sent to the shared counters",
			          (unsigned long long)c->id, t->b->key);
		return;
	}
	if (c->w->gw->limits != NULL)
		limits_budget_refund(c->w->gw->limits, t->b, sbx, t->amount, clock_wall_ms());
}

void
sem_budget_refund(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	char peer[CONN_ADDR_STR];
	const char *sbx = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	struct take t;
	size_t i;

	/* every budget step that took: the request's own, or each of a batch's elements */
	for (i = LIMIT_STEPS(r) + 1; i <= LAST_STEP(r); i++)
		if (step_budget(c, i, &t) && *t.taken)
			refund_one(c, &t, sbx);
	s->budget_taken = 0;
}
