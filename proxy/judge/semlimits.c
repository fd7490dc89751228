/*
 * proxy/judge/semlimits.c - the limits of an allowed request (semantic.h:
 * sem_admit): each secret's rate limit, then the rule's, then its budget,
 * taken at relay_dial once nothing else can refuse the request; a refusal
 * is a 429 whose Retry-After and JSON body say which limit and when it
 * resets; a counter that cannot be kept is a 503 (fail closed).  A budget
 * taken is refunded (sem_budget_refund) if the request never went upstream.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/json.h"
#include "common/sluice.h"
#include "policy/judge.h"
#include "proxy/judge/limits.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"
#include "proxy/judge/semantic.h"
#include "semantic_int.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/core/context.h"

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

/* One token of rate limit <lim> for the request (<rule> names it in a refusal): 0, or -1 refused (429, 503). */
static int
take_rate(struct conn *c, const struct policy_limit *lim, const char *rule, const char *sbx, uint64_t now,
          struct refusal *rf)
{
	struct limits *l = c->w->gw->limits;
	char what[400];
	unsigned retry = 0;
	int rc = l != NULL ? limits_rate_take(l, lim, sbx, now, &retry) : SLUICE_EIO;

	if (rc < 0)
		return limits_failed(rule, rc, rf);
	if (rc == 0)
		return 0;
	snprintf(what, sizeof(what), "rate limit %s (%u/%s, %s) is exhausted", lim->key, (unsigned)lim->count,
	         policy_period_name(lim->period_s), lim->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox");
	return refuse_limit(c, rule, lim->key, "rate", retry, now, what, rf);
}

int
sem_admit(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct limits *l = c->w->gw->limits;
	const struct policy_limit *lim;
	char peer[CONN_ADDR_STR], what[400], a[32], m[32];
	const char *sbx = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	uint64_t now = 0;
	unsigned retry = 0;
	size_t i, k;
	int rc;

	if (s != NULL && s->admitted)
		return 0;
	if (r->cred->nuses == 0 && (s == NULL || (s->limit == NULL && s->budget == NULL)) && r->mcp == NULL)
		return 0;
	/* each secret the request uses, once */
	for (i = 0; i < r->cred->nuses; i++) {
		for (k = 0; k < i && r->cred->uses[k].s != r->cred->uses[i].s; k++)
			;
		if (k < i || (lim = policy_secret_limit(c->pol, r->cred->uses[i].s->name)) == NULL)
			continue;
		if (now == 0)
			now = clock_wall_ms();
		if (take_rate(c, lim, lim->key, sbx, now, rf) != 0)
			return -1;
	}
	s = sem_req_of(r);
	s->admitted = 1;
	if (now == 0)
		now = clock_wall_ms();
	if (s->limit != NULL && take_rate(c, s->limit, s->rule, sbx, now, rf) != 0)
		return -1;
	/* a batch on an MCP endpoint: each allowed element's own limit (N calls through one limit take N) */
	for (i = 0; i < POLICY_MCP_BATCH_MAX; i++)
		if ((lim = mcp_req_limit(r, i)) != NULL && take_rate(c, lim, s->rule, sbx, now, rf) != 0)
			return -1;
	if (s->budget != NULL) {
		rc = l != NULL ? limits_budget_take(l, s->budget, sbx, s->amount, now, &retry) : SLUICE_EIO;
		if (rc < 0)
			return limits_failed(s->rule, rc, rf);
		if (rc > 0) {
			snprintf(what, sizeof(what), "budget %s (%s per %s, %s) would be exceeded by this request's %s",
			         s->budget->key, policy_amount_fmt(s->budget->max, m, sizeof(m)),
			         policy_period_name(s->budget->period_s),
			         s->budget->scope == POLICY_SCOPE_GLOBAL ? "global" : "per sandbox",
			         policy_amount_fmt(s->amount, a, sizeof(a)));
			return refuse_limit(c, s->rule, s->budget->key, "budget", retry, now, what, rf);
		}
		s->budget_taken = 1;
		policy_amount_fmt(s->amount, s->amount_text, sizeof(s->amount_text));
	}
	return 0;
}

void
sem_budget_refund(struct conn *c)
{
	struct sem_req *s = c->req->sem;
	char peer[CONN_ADDR_STR];

	if (c->w->gw->limits != NULL)
		limits_budget_refund(c->w->gw->limits, s->budget, c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		                     s->amount, clock_wall_ms());
}
