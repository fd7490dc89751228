/*
 * proxy/judge/semantic.c - semantic rules in the request path (issue 6): see
 * semantic.h for the order of things.
 *
 * The body a rule reads is held in r->hold by the same mechanism that holds
 * bodies for secret injection (credbody.c), once for both: the rule reads it
 * as the sandbox sent it, with placeholders, and the values are injected
 * only after the decision.  So the fields an operator is shown for a hold
 * are placeholders, never values.
 *
 * A git push (every rule that could decide it reads only git: conditions)
 * holds only the pkt-line command section; once policy_git_section_len says
 * it is complete, the decision is made on it, and the section goes upstream
 * followed by the rest of the pack, streamed by the relay with its usual
 * backpressure: a 50 MiB push costs what a small one does.
 *
 * Limits are taken last, at relay_dial, when everything that could refuse
 * the request for its content has had its say: each secret's limit, then
 * the rule's rate limit, then its budget (semlimits.c).  A budget taken is
 * given back when the request ends before its first byte went upstream.
 */
#include <string.h>
#include <time.h>
#include <openssl/evp.h>
#include <event2/buffer.h>
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
#include "proxy/core/context.h"
#include "proxy/store/store.h"
#include "audit/writer.h"
#include "proxy/judge/semantic.h"
#include "semantic_int.h"
#include "proxy/judge/mcp_req.h"

static void approval_done(void *arg, enum approval_decision decision, const char *by);

struct sem_req *
sem_req_of(struct req *r)
{
	if (r->sem == NULL)
		r->sem = xcalloc(1, sizeof(*r->sem));
	return r->sem;
}

int
sem_holds_body(const struct conn *c)
{
	const struct sem_req *s = c->req->sem;

	return s != NULL && (s->phase == SEM_P_BODY || s->phase == SEM_P_HOLDBODY);
}

int
sem_park_pending(const struct conn *c)
{
	return c->req->sem != NULL && c->req->sem->phase == SEM_P_PARK;
}

int
sem_pumps(const struct conn *c)
{
	return sem_holds_body(c) || sem_waiting(c);
}

int
sem_waiting(const struct conn *c)
{
	return c->req != NULL && c->req->sem != NULL && c->req->sem->phase == SEM_P_WAIT;
}

/* ---- the request as the judge (policy/judge.h) reads it ---- */

static void
facts_of(const struct conn *c, const struct policy_header *hdr, size_t n, uint64_t total, struct judge_conn *cf,
         struct judge_req *q)
{
	const struct req *r = c->req;

	memset(cf, 0, sizeof(*cf));
	cf->sandbox = c->sandbox;
	cf->host = c->host;
	cf->port = c->port;
	cf->mode = c->mode == CONN_MODE_TRANSPARENT ? JUDGE_CONN_TRANSPARENT : JUDGE_CONN_EXPLICIT;
	cf->tls = c->tls;
	cf->judged = 1;  /* conn.c or request_host(), with policy_judge_conn */
	cf->entry = c->entry;
	memset(q, 0, sizeof(*q));
	q->method = r->method;
	q->method_len = r->method_len;
	q->path = r->path;
	q->path_len = r->path_len;
	if (r->query != NULL) {  /* kept with its '?' */
		q->query = r->query + 1;
		q->query_len = strlen(r->query + 1);
	}
	q->headers = hdr;
	q->nheaders = n;
	q->has_body = r->body != H1_BODY_NONE;
	q->body_len_known = r->body == H1_BODY_LENGTH;
	q->body_total = total;
}

/* Copies the head's fields for a decision made once the body is held (the parsed head is gone by then). */
static int
headers_keep(struct sem_req *s, const struct policy_header *hdr, size_t n)
{
	struct policy_header *out;
	size_t i, bytes = 0;
	char *p;

	for (i = 0; i < n; i++)
		bytes += hdr[i].name_len + hdr[i].value_len;
	s->hblock = try_malloc(n * sizeof(*out) + bytes + 1);
	if (s->hblock == NULL)
		return -1;
	out = s->hblock;
	p = (char *)(out + n);
	for (i = 0; i < n; i++) {
		memcpy(p, hdr[i].name, hdr[i].name_len);
		out[i].name = p;
		out[i].name_len = hdr[i].name_len;
		p += hdr[i].name_len;
		memcpy(p, hdr[i].value, hdr[i].value_len);
		out[i].value = p;
		out[i].value_len = hdr[i].value_len;
		p += hdr[i].value_len;
	}
	s->hdr = out;
	s->nhdr = n;
	return 0;
}

static void
headers_drop(struct sem_req *s)
{
	free(s->hblock);
	s->hblock = NULL;
	s->hdr = NULL;
	s->nhdr = 0;
}

/* A field pointer of decision <from> moved into <to> (values live in the decision's own _text). */
static const char *
rebase(const struct policy_decision *from, const struct policy_decision *to, const char *p)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)from->_text;

	if (a >= lo && a < lo + sizeof(from->_text))
		return to->_text + (a - lo);
	return p;
}

static struct policy_decision *
decision_copy(const struct policy_decision *d)
{
	struct policy_decision *n = try_malloc(sizeof(*n));
	size_t i;

	if (n == NULL)
		return NULL;
	memcpy(n, d, sizeof(*n));
	for (i = 0; i < n->nfields; i++) {
		n->fields[i].place = rebase(d, n, d->fields[i].place);
		n->fields[i].value = rebase(d, n, d->fields[i].value);
	}
	return n;
}

/* ---- refusals (returned: the session answers them) ---- */

static int
unavailable(struct refusal *rf, enum refusal_err err, const char *rule, const char *reason)
{
	return refusal_close(rf, 503, err, rule, reason);
}

/* Fills <rf> from a refusal of the judge <o> (its rule, reason and status: 400, 403, 413); returns -1. */
static int
refuse(struct conn *c, const struct judge_outcome *o, struct refusal *rf)
{
	struct req *r = c->req;
	const char *reason = o->reason != NULL ? o->reason : "denied";

	if (reason == o->_reason) {  /* <o> is the caller's frame: the refusal is answered after it returns */
		snprintf(r->rule_buf, sizeof(r->rule_buf), "%s", reason);
		reason = r->rule_buf;
	}
	if (o->status == 413)
		return refusal_close(rf, 413, REFUSAL_TOO_LARGE, o->rule, reason);
	if (r->body_done)
		r->body = H1_BODY_NONE;  /* read whole: the connection can stay */
	refusal_set(rf, o->status, o->status == 400 ? REFUSAL_BAD_REQUEST : REFUSAL_DENIED, o->rule, reason);
	mcp_req_refusal(r, rf);  /* on an MCP endpoint: JSON-RPC errors */
	return -1;
}

/* A body found larger than <bound> while it streams in (chunked): 413 into <rf>; returns -1. */
static int
too_large(struct conn *c, size_t bound, int hold, struct refusal *rf)
{
	struct judge_outcome o;

	policy_judge_too_large(&o, bound, hold);
	return refuse(c, &o, rf);
}

/* Counts the held body's growth against the gateway's and the HTTP/2 connection's bounds: 0, or -1 (503). */
static int
account(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct gateway *gw = c->w->gw;
	size_t len = evbuffer_get_length(r->hold), add;

	if (len <= s->acct)
		return 0;
	add = len - s->acct;
	if (s->conn_acct == NULL)
		s->conn_acct = conn_ops(c)->held(c);
	s->acct = len;
	if (s->conn_acct != NULL)
		*s->conn_acct += add;
	if (atomic_fetch_add(&gw->held, add) + add > PROXY_HELD_MAX)
		return unavailable(rf, REFUSAL_GATEWAY_BUSY, "max_body",
		                   "request bodies held for policy rules are at the gateway's bound "
		                   "(PROXY_HELD_MAX, 512 MiB)");
	if (s->conn_acct != NULL && *s->conn_acct > PROXY_H2_HELD_MAX)
		return unavailable(rf, REFUSAL_GATEWAY_BUSY, "max_body",
		                   "request bodies held on this HTTP/2 connection are at its bound "
		                   "(PROXY_H2_HELD_MAX, 32 MiB)");
	return 0;
}

/* ---- holds: parked until an operator decides ---- */

/* The body a hold binds, at most (the judge's hold_body_max). */
static size_t
hold_cap(const struct sem_req *s)
{
	return s->hold_max;
}

/* Parks the request (its body, if any, whole in r->hold): 1 parked, -1 refused (<rf>). */
static int
park(struct conn *c, const struct policy_decision *d, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = sem_req_of(r);
	struct gateway *gw = c->w->gw;
	char peer[CONN_ADDR_STR], *path;
	const char *q;
	size_t len = r->hold != NULL ? evbuffer_get_length(r->hold) : 0, plen;
	struct approval_info info;
	unsigned ms = d->act.hold_ms;
	int rc;

	memset(&info, 0, sizeof(info));
	if (EVP_Digest(len > 0 ? evbuffer_pullup(r->hold, -1) : (const unsigned char *)"", len, info.body_sha256, NULL,
	               EVP_sha256(), NULL) != 1) {
		return unavailable(rf, REFUSAL_APPROVAL_UNAVAILABLE, d->act.rule, "cannot hash the request body");
	}
	/* the operator sees the query too: it is part of what is approved (the audit keeps it only with log_query) */
	q = r->query;
	plen = r->path_len + (q != NULL ? strlen(q) : 0) + 1;
	path = xmalloc(plen);
	snprintf(path, plen, "%s%s", r->path, q != NULL ? q : "");
	info.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	info.method = r->method;
	info.host = c->host;
	info.path = path;
	info.rule = d->act.rule;
	info.fields = d->fields;
	info.nfields = d->nfields;
	info.request_id = conn_req_id(c);
	r->body = H1_BODY_NONE;  /* read whole: every answer from now on can keep the connection */
	rc = gw->approvals != NULL ? approvals_add(gw->approvals, &info, ms, c->w->base, approval_done, c, s->hold_id)
	                           : SLUICE_EINVAL;
	free(path);
	if (rc != 0) {
		s->hold_id[0] = '\0';
		return unavailable(rf, REFUSAL_APPROVAL_UNAVAILABLE, d->act.rule,
		                   rc == SLUICE_ETOOBIG  ? "too many requests are waiting for approval"
		                   : rc == SLUICE_ECLOSED ? "the gateway is stopping: no new holds"
		                                          : "the request cannot be held for approval");
	}
	s->parked = 1;
	s->phase = SEM_P_WAIT;
	s->rule = d->act.rule;
	log_info("c%llu: %s %s%s held for approval %s (rule %s, %u ms)", (unsigned long long)c->id, r->method, c->host,
	         r->path, s->hold_id, s->rule, ms);
	free(s->dec);  /* <d> may be it: not read from here on */
	s->dec = NULL;
	/* the approval's own timer answers first; this one only guards against a lost callback */
	conn_arm_timer(c, ms + PROXY_HOLD_GRACE_MS);
	cio_read(c, 1);  /* the client going away is seen, and cancels the hold */
	return 1;
}

/* An operator decided (or the hold timed out, or the gateway stops): on the worker's thread. */
static void
approval_done(void *arg, enum approval_decision decision, const char *by)
{
	struct conn *c = arg;
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct refusal rf;
	enum hold_step step;

	s->parked = 0;
	s->phase = SEM_P_NONE;
	s->hold_outcome = approvals_decision_name(decision);
	snprintf(s->hold_by, sizeof(s->hold_by), "%s", by != NULL ? by : "?");
	log_info("c%llu: held request %s %s by %s", (unsigned long long)c->id, s->hold_id, s->hold_outcome, s->hold_by);
	switch (decision) {
	case APPROVAL_APPROVED:
		/* exactly the request that was approved: the body held, whose hash the operator saw */
		step = r->hold != NULL ? HOLD_SEND_WHOLE : HOLD_SEND;
		break;
	case APPROVAL_REJECTED:
		snprintf(r->rule_buf, sizeof(r->rule_buf), "rejected by %s", s->hold_by);
		step = refusal_set(&rf, 403, REFUSAL_DENIED, s->rule, r->rule_buf);
		break;
	case APPROVAL_TIMEOUT:
		step = refusal_set(&rf, 403, REFUSAL_DENIED, s->rule, "approval timed out");
		break;
	case APPROVAL_SHUTDOWN:
	case APPROVAL_CANCELLED:  /* never given to a callback; fails closed if it were */
	default:
		step = unavailable(&rf, REFUSAL_GATEWAY_STOPPING, s->rule,
		                   "the gateway is stopping: the held request was not sent");
		break;
	}
	if (step == HOLD_REFUSED)
		mcp_req_refusal(r, &rf);
	/* an event's outermost frame: the session goes on from here (sends, or answers <rf>) */
	c->w->sem_hooks->resumed(c, step, &rf);
}

int
sem_park_start(struct conn *c, struct refusal *rf)
{
	struct sem_req *s = c->req->sem;

	return park(c, s->dec, rf) < 0 ? -1 : 0;
}

int
sem_timeout(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;

	if (s == NULL || s->phase != SEM_P_WAIT)
		return 0;
	if (s->parked)
		approvals_cancel(c->w->gw->approvals, s->hold_id);
	s->parked = 0;
	s->phase = SEM_P_NONE;
	s->hold_outcome = approvals_decision_name(APPROVAL_TIMEOUT);
	snprintf(s->hold_by, sizeof(s->hold_by), "timeout");
	refusal_set(rf, 403, REFUSAL_DENIED, s->rule, "approval timed out");
	mcp_req_refusal(r, rf);
	return 1;
}

/* ---- applying a decision: the one place ---- */

/*
 * Applies the judge's outcome <o>.  <whole>: the body is held whole (or there
 * is none), so a hold can be parked now.  0: allowed, go on; 1: a hold,
 * parked or to be parked once its body is whole; -1: refused (<rf>).
 */
static int
apply(struct conn *c, const struct judge_outcome *o, int whole, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	const struct policy_decision *d = &o->dec;
	const struct policy_outcome *a = &d->act;

	if (o->decided) {
		if (s == NULL && (d->mode == POLICY_MODE_REPORT || d->reported || a->limit != NULL || a->budget != NULL ||
		                  a->verdict == POLICY_REQ_HOLD))
			s = sem_req_of(r);
		if (s != NULL) {
			s->report_mode = o->report_mode != 0;
			s->reported = d->reported != 0;
			s->report = d->report;
			s->rule = a->rule;
			s->limit = o->limit;
			s->budget = o->budget;
			s->amount = o->amount;
		}
		r->rule = a->rule;
		r->reason = a->reason;
	}
	if (o->verdict == JUDGE_ALLOW)
		return 0;
	if (o->verdict != JUDGE_HOLD)
		return refuse(c, o, rf);
	/* a hold: the request waits for an operator, with the whole body the approval binds (at most hold_max) */
	s->hold_max = o->hold_body_max;
	if (whole)
		return park(c, d, rf);
	if ((s->dec = decision_copy(d)) == NULL)
		return unavailable(rf, REFUSAL_APPROVAL_UNAVAILABLE, a->rule, "out of memory");
	s->phase = r->body == H1_BODY_NONE ? SEM_P_PARK : SEM_P_HOLDBODY;
	return 1;
}

int
sem_head(struct conn *c, const struct h1_message *m, struct refusal *rf)
{
	struct req *r = c->req;
	struct policy_header hdr[H1_MAX_HEADERS];
	struct judge_conn cf;
	struct judge_req q;
	struct judge_outcome o;
	struct sem_req *s;
	size_t i, n = m->nheaders < H1_MAX_HEADERS ? m->nheaders : H1_MAX_HEADERS;

	for (i = 0; i < n; i++) {
		hdr[i].name = m->headers[i].name;
		hdr[i].name_len = m->headers[i].name_len;
		hdr[i].value = m->headers[i].value;
		hdr[i].value_len = m->headers[i].value_len;
	}
	facts_of(c, hdr, n, r->body_left, &cf, &q);
	if (mcp_req_head(c, m) != 0)  /* the key its server requests and their answers go by (mcp_peer.h) */
		return unavailable(rf, REFUSAL_INTERNAL, "mcp", "out of memory");
	policy_judge(c->pol, &cf, &q, NULL, &o, NULL, NULL);
	if (mcp_req_applies(c) && !(o.verdict == JUDGE_DENY && o.status == 413)) {
		/* an MCP POST is judged per message, whatever the head alone would say: its body is held */
		if (r->body == H1_BODY_NONE)
			return refusal_set(rf, 400, REFUSAL_BAD_REQUEST, "mcp", "a POST to the MCP endpoint without a body");
		if (o.verdict != JUDGE_NEED_BODY || (o.need_flags & POLICY_NEED_GIT_SECTION)) {
			o.verdict = JUDGE_NEED_BODY;
			o.need = MCP_REQ_BODY_MAX;
			o.need_flags = 0;
		}
		if (r->body == H1_BODY_LENGTH && r->body_left > o.need)
			return too_large(c, o.need, 0, rf);
	}
	if (o.verdict == JUDGE_NEED_BODY) {  /* held (sem_hold_pump), then judged again with it (decide) */
		s = sem_req_of(r);
		if (headers_keep(s, hdr, n) != 0)
			return unavailable(rf, REFUSAL_INTERNAL, "max_body", "cannot hold the request head");
		s->need = o.need;
		s->flags = o.need_flags;
		s->phase = SEM_P_BODY;
		return 0;
	}
	/* a hold is parked once the head's work is done (sem_park_start) or its body is held */
	return apply(c, &o, 0, rf) < 0 ? -1 : 0;
}

/*
 * The body (or the start of it, with the git section) is held: judged with it
 * and acted on.  1: more is needed; else the step the session takes (hold.h).
 */
static int
decide(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct judge_conn cf;
	struct judge_req q;
	struct judge_outcome o;
	size_t len = evbuffer_get_length(r->hold);
	int rc;

	facts_of(c, s->hdr, s->nhdr, r->body_total, &cf, &q);
	q.body = len > 0 ? (const char *)evbuffer_pullup(r->hold, -1) : "";
	q.body_len = len;
	q.body_complete = r->body_done;
	q.need_known = 1;
	q.need = s->need;
	q.need_flags = s->flags;
	if (mcp_req_applies(c)) {
		if (mcp_req_judge(c, &cf, &q, &o, rf) != 0) {
			mcp_req_refusal(r, rf);
			headers_drop(s);
			s->phase = SEM_P_NONE;
			return HOLD_REFUSED;
		}
	} else {
		policy_judge(c->pol, &cf, &q, NULL, &o, NULL, NULL);
	}
	if (o.verdict == JUDGE_NEED_BODY)
		return 1;
	if (o.git_section > 0)
		s->git_section = (size_t)o.git_section;  /* the session keeps it: names the refs if refused later (a limit) */
	headers_drop(s);
	s->phase = SEM_P_NONE;
	rc = apply(c, &o, r->body_done, rf);
	if (rc > 0 && s->phase == SEM_P_HOLDBODY)
		return sem_hold_pump(c, rf);  /* a hold decided on a git section: the rest of its body, some read already */
	if (rc != 0)
		return rc < 0 ? HOLD_REFUSED : HOLD_PARKED;
	/* whole: secrets searched and injected, sent with a Content-Length; else the command section first */
	return r->body_done ? HOLD_SEND_WHOLE : HOLD_SEND_STREAM;
}

int
sem_hold_pump(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	size_t len, cap;
	long sec = -2;
	int p, rc, progress = 0, git;

	if (s->phase == SEM_P_WAIT)  /* the client going away cancels the hold (sem_req_free) */
		return c->client_eof ? HOLD_CLIENT_GONE : HOLD_PARKED;
	git = s->phase == SEM_P_BODY && (s->flags & POLICY_NEED_GIT_SECTION);
	cap = s->phase == SEM_P_BODY ? s->need : hold_cap(s);
	for (;;) {
		len = evbuffer_get_length(r->hold);
		if (git && len > 0 &&
		    (sec = policy_git_section_len((const char *)evbuffer_pullup(r->hold, -1), len)) != -2)
			break;
		if (r->body_done || len > cap)
			break;
		if ((p = req_body_hold(c, cio_in(c), rf)) < 0)
			return HOLD_REFUSED;
		if (p == 0)
			break;
		progress = 1;
		if (account(c, rf) != 0)
			return HOLD_REFUSED;
	}
	if (s->phase == SEM_P_BODY) {
		/* the judge reads the held body: the git section's framing, the bound, the rules */
		if (r->body_done || len > cap || (git && sec != -2)) {
			rc = decide(c, rf);
			if (rc != 1)
				return rc;
		}
	} else if (len > cap) {
		return too_large(c, cap, 1, rf);
	} else if (r->body_done) {
		return park(c, s->dec, rf) < 0 ? HOLD_REFUSED : HOLD_PARKED;
	}
	return progress ? HOLD_MORE_MOVED : HOLD_MORE;
}

size_t
sem_git_section(struct conn *c)
{
	struct sem_req *s = c->req->sem;
	size_t n = s != NULL ? s->git_section : 0;

	if (s != NULL)
		s->git_section = 0;
	return n;
}

void
sem_sent(struct req *r)
{
	if (r->sem != NULL)
		r->sem->sent = 1;
}

int
sem_cancel(struct conn *c)
{
	struct sem_req *s = c->req->sem;

	if (s == NULL || !s->parked)
		return 0;
	/* the client went away while its request waited: no callback may follow */
	approvals_cancel(c->w->gw->approvals, s->hold_id);
	s->parked = 0;
	s->phase = SEM_P_NONE;
	s->hold_outcome = approvals_decision_name(APPROVAL_CANCELLED);
	snprintf(s->hold_by, sizeof(s->hold_by), "client");
	return 1;
}

void
sem_req_free(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;

	if (s == NULL) {
		mcp_req_free(r);
		return;
	}
	(void)sem_cancel(c);  /* the session cancelled it first (and audited); this one only if it did not */
	if (s->store_op != NULL) {  /* freed while its limits were asked of the shared counters */
		store_cancel(s->store_op);
		s->store_op = NULL;
	}
	if (s->budget_taken && !s->sent)
		sem_budget_refund(c);  /* a batch's elements' budgets are in r->mcp: freed after */
	mcp_req_free(r);
	if (s->acct > 0) {
		atomic_fetch_sub(&c->w->gw->held, s->acct);
		if (s->conn_acct != NULL)
			*s->conn_acct -= s->acct;
	}
	headers_drop(s);
	free(s->dec);
	free(s);
	r->sem = NULL;
}

void
sem_audit_fill(const struct req *r, struct audit_rec *a)
{
	const struct sem_req *s = r->sem;

	if (s->report_mode)
		a->mode = "report";
	if (s->reported) {
		a->report_verdict = policy_verdict_name(s->report.verdict);
		a->report_rule = s->report.rule;
		a->report_reason = s->report.reason;
	}
	if (s->limit_key != NULL) {
		a->limit_key = s->limit_key;
		a->limit_kind = s->limit_kind;
		a->limit_retry_after = s->retry_after;
		a->limit_reset = s->reset;
	}
	if (s->hold_id[0] != '\0') {
		a->hold_id = s->hold_id;
		a->hold_outcome = s->hold_outcome;
		a->hold_by = s->hold_by[0] != '\0' ? s->hold_by : NULL;
	}
	if (s->fallback)
		a->limits_counted = "local";  /* on_error: local: the shared counters did not answer */
	if (s->own_taken) {  /* a batch's elements' budgets are in its mcp_batch (mcp_req.c) */
		a->budget_key = s->budget->key;
		a->budget_amount = s->amount_text;
	}
}
