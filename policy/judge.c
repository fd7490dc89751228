/*
 * policy/judge.c - the one judge (judge.h): connection verdict, path,
 * body bound, git section, rules, hold bound, counters view, in that order.
 * Reads the snapshot and the facts only; allocates nothing of its own (the
 * rules may parse a held body: policy_decide frees what it makes).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/sluice.h"
#include "policy/judge.h"
#include "policy/mcp.h"

const char *
policy_judge_verdict_name(enum judge_verdict v)
{
	switch (v) {
	case JUDGE_ALLOW:
		return "allow";
	case JUDGE_DENY:
		return "deny";
	case JUDGE_HOLD:
		return "hold";
	case JUDGE_PASSTHROUGH:
		return "passthrough";
	case JUDGE_NEED_BODY:
		return "need-body";
	}
	return "deny";
}

const char *
policy_period_name(uint32_t s)
{
	return s == 1 ? "second" : s == 60 ? "minute" : s == 3600 ? "hour" : s == 86400 ? "day" : "period";
}

const char *
policy_amount_fmt(int64_t v, char *buf, size_t cap)
{
	int64_t whole = v / POLICY_AMOUNT_SCALE, frac = v % POLICY_AMOUNT_SCALE;
	int n;

	if (frac < 0)
		frac = -frac;
	if (frac == 0) {
		snprintf(buf, cap, "%" PRId64, whole);
		return buf;
	}
	n = snprintf(buf, cap, "%s%" PRId64 ".%06" PRId64, v < 0 && whole == 0 ? "-" : "", whole, frac);
	while (n > 0 && (size_t)n < cap && buf[n - 1] == '0')
		buf[--n] = '\0';
	return buf;
}

static void
outcome_init(struct judge_outcome *out, const struct policy_host *entry)
{
	/* the decision's text is left as it is: it is read only when <decided> */
	memset(out, 0, offsetof(struct judge_outcome, dec));
	out->_reason[0] = '\0';
	out->entry = entry;
	out->git_section = -1;
}

static void
set(struct judge_outcome *out, enum judge_verdict v, enum judge_stage st, int status, const char *rule,
    const char *reason)
{
	out->verdict = v;
	out->stage = st;
	out->status = status;
	out->rule = rule;
	out->reason = reason;
}

void
policy_judge_conn(const struct policy *pol, const struct judge_conn *cf, struct judge_outcome *out)
{
	struct policy_conn_decision d;

	policy_decide_conn(pol, cf->host, cf->port, &d);
	outcome_init(out, d.host);
	switch (d.verdict) {
	case POLICY_DENY:
		set(out, JUDGE_DENY, JUDGE_AT_CONN, cf->mode == JUDGE_CONN_TRANSPARENT && cf->tls ? 0 : 403, d.rule,
		    d.reason);
		return;
	case POLICY_PASSTHROUGH:
		if (cf->tls) {
			set(out, JUDGE_PASSTHROUGH, JUDGE_AT_CONN, 200, d.rule, NULL);
			return;
		}
		break;  /* plain HTTP is read whatever the entry says */
	case POLICY_INTERCEPT:
		break;
	}
	set(out, JUDGE_ALLOW, JUDGE_AT_CONN, 200, d.rule, NULL);
}

long
policy_judge_path(const struct policy_host *h, const char *in, size_t len, char *buf, size_t cap,
                  struct judge_outcome *out)
{
	const char *err = NULL;
	long n = policy_host_path(h, in, len, buf, cap, &err);

	if (n < 0) {
		outcome_init(out, h);
		set(out, JUDGE_DENY, JUDGE_AT_PATH, 400, "path", err != NULL ? err : "malformed path");
	}
	return n;
}

void
policy_judge_too_large(struct judge_outcome *out, size_t bound, int hold)
{
	snprintf(out->_reason, sizeof(out->_reason),
	         hold ? "a request held for approval is held whole: its body is larger than %zu bytes"
	              : "the request body is larger than the max_body of the rules that read it (%zu bytes)",
	         bound);
	set(out, JUDGE_DENY, JUDGE_AT_BODY, 413, "max_body", out->_reason);
}

/* The request as the rules read it, without its body. */
static void
request_of(const struct judge_req *rq, struct policy_request *q)
{
	size_t i, ct;

	memset(q, 0, sizeof(*q));
	q->method = rq->method;
	q->method_len = rq->method_len;
	q->path = rq->path;
	q->path_len = rq->path_len;
	q->query = rq->query;
	q->query_len = rq->query != NULL ? rq->query_len : 0;
	q->headers = rq->headers;
	q->nheaders = rq->nheaders;
	q->has_body = rq->has_body;
	q->mcp_msg = rq->mcp_msg;
	/*
	 * Content-Type given only when there is exactly one: with two, no one
	 * can say which the upstream reads, and the policy, finding them among
	 * the headers itself, judges the body as of no known type
	 */
	for (i = 0, ct = 0; i < rq->nheaders; i++)
		if (sluice_iov_ieq(rq->headers[i].name, rq->headers[i].name_len, "content-type") && ct++ == 0) {
			q->content_type = rq->headers[i].value;
			q->content_type_len = rq->headers[i].value_len;
		}
	if (ct > 1) {
		q->content_type = NULL;
		q->content_type_len = 0;
	}
}

/*
 * The body the rules read, into <q>: 0 to decide, 1 when <out> is filled (a
 * refusal, or JUDGE_NEED_BODY).
 */
static int
body_of(const struct judge_req *rq, const struct policy *pol, const struct policy_host *entry,
        struct policy_request *q, struct judge_outcome *out)
{
	size_t need = 0, len;
	unsigned flags = 0;
	long sec;

	if (!rq->has_body) {  /* rules that read the body read an empty one */
		q->body = "";
		q->body_complete = 1;
		return 0;
	}
	if (rq->need_known) {
		need = rq->need;
		flags = rq->need_flags;
	} else {
		need = policy_body_need(pol, entry, q, &flags);
	}
	out->need = need;
	out->need_flags = flags;
	if (need == 0)
		return 0;  /* no rule reads it: decided without (body NULL) */
	/* a git push may be any size: only its command section is held */
	if (rq->body_len_known && rq->body_total > need && !(flags & POLICY_NEED_GIT_SECTION)) {
		policy_judge_too_large(out, need, 0);
		return 1;
	}
	len = rq->body != NULL ? rq->body_len : 0;
	if (flags & POLICY_NEED_GIT_SECTION) {
		sec = rq->body != NULL ? policy_git_section_len(rq->body, len) : -2;
		if (sec == -1 || (sec == -2 && rq->body != NULL && rq->body_complete)) {
			set(out, JUDGE_DENY, JUDGE_AT_BODY, 403, "git", "malformed git pkt-line");
			return 1;
		}
		if (sec == -2) {
			if (len > need) {
				policy_judge_too_large(out, need, 0);
				return 1;
			}
			set(out, JUDGE_NEED_BODY, JUDGE_AT_BODY, 0, NULL, NULL);
			return 1;
		}
		out->git_section = sec;
		q->body = rq->body;
		q->body_len = (size_t)sec;
		q->body_complete = rq->body_complete && (size_t)sec == len;
		return 0;
	}
	if (len > need) {
		policy_judge_too_large(out, need, 0);
		return 1;
	}
	if (rq->body == NULL || !rq->body_complete) {
		set(out, JUDGE_NEED_BODY, JUDGE_AT_BODY, 0, NULL, NULL);
		return 1;
	}
	q->body = rq->body;
	q->body_len = len;
	q->body_complete = 1;
	return 0;
}

/* 1 if a secret with a form: place is bound to <host> and usable by <sandbox> (NULL: any), for a form body. */
static int
form_injectable(const struct policy *pol, const char *host, const char *sandbox, const struct policy_request *q)
{
	const struct policy_secret *s;
	size_t i, k;

	if (q->content_type == NULL || q->content_type_len < 33 ||
	    strncasecmp(q->content_type, "application/x-www-form-urlencoded", 33) != 0)
		return 0;
	for (i = 0; i < policy_secret_count(pol); i++) {
		s = policy_secret_get(pol, i);
		if (!policy_secret_host_bound(s, host) || (sandbox != NULL && !policy_secret_sandbox_allowed(s, sandbox)))
			continue;
		for (k = 0; k < s->ninject; k++)
			if (s->inject[k].kind == POLICY_INJECT_FORM)
				return 1;
	}
	return 0;
}

/* The counters view on an allow or a hold: 429 when a take it asks for would be refused. */
static void
counters(const struct judge_counters *ctr, const char *sandbox, struct judge_outcome *out)
{
	if (out->limit != NULL && ctr->rate_left != NULL && ctr->rate_left(ctr->arg, out->limit, sandbox) == 0) {
		out->refused_take = JUDGE_TAKE_LIMIT;
		out->stage = JUDGE_AT_COUNTERS;
		out->status = 429;
		out->reason = "rate limit reached";
		return;
	}
	if (out->budget != NULL && ctr->budget_left != NULL &&
	    out->amount > ctr->budget_left(ctr->arg, out->budget, sandbox)) {
		out->refused_take = JUDGE_TAKE_BUDGET;
		out->stage = JUDGE_AT_COUNTERS;
		out->status = 429;
		out->reason = "budget exhausted";
	}
}

int
policy_judge(const struct policy *pol, const struct judge_conn *cf, const struct judge_req *rq,
             const struct judge_counters *ctr, struct judge_outcome *out, policy_explain_fn explain, void *arg)
{
	const struct policy_host *entry;
	const struct policy_outcome *a;
	struct policy_request q;

	if (pol == NULL || cf == NULL || rq == NULL || out == NULL)
		return -1;
	if (!cf->judged) {
		policy_judge_conn(pol, cf, out);
		if (out->verdict != JUDGE_ALLOW)
			return 0;
		entry = out->entry;
	} else {
		entry = cf->entry;
	}
	outcome_init(out, entry);
	request_of(rq, &q);
	if (body_of(rq, pol, entry, &q, out) != 0)
		return 0;
	if (explain != NULL)
		policy_explain(pol, entry, &q, &out->dec, explain, arg);
	else
		policy_decide(pol, entry, &q, &out->dec);
	out->decided = 1;
	a = &out->dec.act;
	out->report_mode = out->dec.mode == POLICY_MODE_REPORT;
	switch (a->verdict) {
	case POLICY_REQ_DENY:
		set(out, JUDGE_DENY, JUDGE_AT_RULES, 403, a->rule, a->reason != NULL ? a->reason : "denied");
		return 0;
	case POLICY_REQ_HOLD:
		set(out, JUDGE_HOLD, JUDGE_AT_RULES, 200, a->rule, a->reason);
		out->hold_ms = a->hold_ms;
		out->hold_body_max = out->need > JUDGE_HOLD_BODY_MAX ? out->need : JUDGE_HOLD_BODY_MAX;
		/* the approval binds the whole body: one known to be larger is refused now */
		if (rq->has_body && rq->body_len_known && rq->body_total > out->hold_body_max) {
			policy_judge_too_large(out, out->hold_body_max, 1);
			return 0;
		}
		break;
	case POLICY_REQ_ALLOW:
		set(out, JUDGE_ALLOW, JUDGE_AT_RULES, 200, a->rule, a->reason);
		break;
	}
	out->limit = a->limit;
	out->budget = a->budget;
	out->amount = a->amount;
	if (out->budget != NULL && out->amount < 0) {  /* cannot happen (policy.h): fail closed all the same */
		set(out, JUDGE_DENY, JUDGE_AT_RULES, 403, a->rule, "budget sum cannot be read");
		out->limit = NULL;
		out->budget = NULL;
		return 0;
	}
	/*
	 * a form body no rule reads is read for its _method field where a secret may be injected into it: the
	 * gateway reads it there (proxy/cred/credbody.c, once held for the injection); here when it is given
	 */
	if (out->need == 0 && rq->has_body && rq->body != NULL && rq->body_complete &&
	    form_injectable(pol, cf->host, cf->sandbox, &q) &&
	    policy_form_overrides_method(rq->method, rq->method_len, rq->body, rq->body_len)) {
		set(out, JUDGE_DENY, JUDGE_AT_BODY, 403, "request", "a _method form field names another method than the request's");
		out->limit = NULL;
		out->budget = NULL;
		return 0;
	}
	if (ctr != NULL)
		counters(ctr, cf->sandbox, out);
	return 0;
}

/* How far an element's outcome goes toward refusing the batch: a denial, then a hold, then an allow. */
static int
severity(const struct judge_outcome *o)
{
	return o->verdict == JUDGE_DENY || o->status == 429 ? 2 : o->verdict == JUDGE_HOLD ? 1 : 0;
}

int
policy_judge_mcp_batch(const struct policy *pol, const struct judge_conn *cf, const struct judge_req *rq,
                       const struct policy_mcp_body *b, const struct judge_counters *ctr, struct judge_outcome *out,
                       struct judge_outcome *each, size_t *at, policy_explain_fn explain, void *arg)
{
	struct judge_req er;
	size_t i, worst = 0;
	int worst_sev = -1, sev;

	if (pol == NULL || cf == NULL || rq == NULL || b == NULL || out == NULL || !b->batch || b->nmsgs == 0)
		return -1;
	er = *rq;
	for (i = 0; i < b->nmsgs; i++) {
		er.mcp_msg = &b->msgs[i];
		policy_judge(pol, cf, &er, ctr, each != NULL ? &each[i] : out, explain, arg);
		sev = severity(each != NULL ? &each[i] : out);
		if (sev > worst_sev) {
			worst_sev = sev;
			worst = i;
		}
		if (each == NULL && sev == 2)
			break; /* <out> holds the first denial */
	}
	if (at != NULL)
		*at = worst;
	if (each == NULL && sev == 2)
		return 0;
	/* an outcome points into itself (reason, field texts): judged again into <out> rather than copied */
	er.mcp_msg = &b->msgs[worst];
	policy_judge(pol, cf, &er, ctr, out, NULL, NULL);
	return 0;
}
