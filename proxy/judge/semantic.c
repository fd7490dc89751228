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
#include "proxy/judge/limits.h"
#include "proxy/proxy_int.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/semantic_int.h"

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

/* ---- the request as the policy judges it ---- */

static void
request_of(const struct conn *c, const struct policy_header *hdr, size_t n, struct policy_request *q)
{
	const struct req *r = c->req;
	size_t i, ct;

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
	/*
	 * Content-Type given only when there is exactly one: with two, no one
	 * can say which the upstream reads, and the policy, finding them among
	 * the headers itself, judges the body as of no known type
	 */
	for (i = 0, ct = 0; i < n; i++)
		if (sluice_iov_ieq(hdr[i].name, hdr[i].name_len, "content-type") && ct++ == 0) {
			q->content_type = hdr[i].value;
			q->content_type_len = hdr[i].value_len;
		}
	if (ct > 1) {
		q->content_type = NULL;
		q->content_type_len = 0;
	}
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

/* ---- answers ---- */

static void
unavailable(struct conn *c, const char *error, const char *rule, const char *reason)
{
	c->req->client_keep_alive = 0;
	http_answer(c, 503, error, rule, reason, 1);
}

static void
too_large(struct conn *c, size_t bound, int hold)
{
	struct req *r = c->req;

	snprintf(r->rule_buf, sizeof(r->rule_buf),
	         hold ? "a request held for approval is held whole: its body is larger than %zu bytes"
	              : "the request body is larger than the max_body of the rules that read it (%zu bytes)",
	         bound);
	r->client_keep_alive = 0;
	http_answer(c, 413, "request too large", "max_body", r->rule_buf, 1);
}

/* Counts the held body's growth against the gateway's and the HTTP/2 connection's bounds: 0, or -1 (503). */
static int
account(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct gateway *gw = c->w->gw;
	size_t len = evbuffer_get_length(r->hold), add;

	if (len <= s->acct)
		return 0;
	add = len - s->acct;
	if (s->conn_acct == NULL && c->h2_stream)
		s->conn_acct = h2srv_held(c);
	s->acct = len;
	if (s->conn_acct != NULL)
		*s->conn_acct += add;
	if (atomic_fetch_add(&gw->held, add) + add > PROXY_HELD_MAX) {
		unavailable(c, "gateway busy", "max_body",
		            "request bodies held for policy rules are at the gateway's bound (PROXY_HELD_MAX, 512 MiB)");
		return -1;
	}
	if (s->conn_acct != NULL && *s->conn_acct > PROXY_H2_HELD_MAX) {
		unavailable(c, "gateway busy", "max_body",
		            "request bodies held on this HTTP/2 connection are at its bound (PROXY_H2_HELD_MAX, 32 MiB)");
		return -1;
	}
	return 0;
}

/* ---- holds: parked until an operator decides ---- */

/* The body a hold binds, at most: the rules' max_body when they read it, else PROXY_HOLD_BODY_MAX. */
static size_t
hold_cap(const struct sem_req *s)
{
	return s->need > PROXY_HOLD_BODY_MAX ? s->need : PROXY_HOLD_BODY_MAX;
}

/* Parks the request (its body, if any, whole in r->hold): 1 parked, -1 answered. */
static int
park(struct conn *c, const struct policy_decision *d)
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
		unavailable(c, "approval unavailable", d->act.rule, "cannot hash the request body");
		return -1;
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
	info.request_id = http_req_id(c);
	r->body = H1_BODY_NONE;  /* read whole: every answer from now on can keep the connection */
	rc = gw->approvals != NULL ? approvals_add(gw->approvals, &info, ms, c->w->base, approval_done, c, s->hold_id)
	                           : SLUICE_EINVAL;
	free(path);
	if (rc != 0) {
		s->hold_id[0] = '\0';
		unavailable(c, "approval unavailable", d->act.rule,
		            rc == SLUICE_ETOOBIG  ? "too many requests are waiting for approval"
		            : rc == SLUICE_ECLOSED ? "the gateway is stopping: no new holds"
		                                   : "the request cannot be held for approval");
		return -1;
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

	s->parked = 0;
	s->phase = SEM_P_NONE;
	s->hold_outcome = approvals_decision_name(decision);
	snprintf(s->hold_by, sizeof(s->hold_by), "%s", by != NULL ? by : "?");
	log_info("c%llu: held request %s %s by %s", (unsigned long long)c->id, s->hold_id, s->hold_outcome, s->hold_by);
	switch (decision) {
	case APPROVAL_APPROVED:
		/* exactly the request that was approved: the body held, whose hash the operator saw */
		if (r->hold != NULL)
			cred_hold_done(c);
		else
			relay_dial(c);
		break;
	case APPROVAL_REJECTED:
		snprintf(r->rule_buf, sizeof(r->rule_buf), "rejected by %s", s->hold_by);
		http_answer(c, 403, "denied by policy", s->rule, r->rule_buf, 1);
		break;
	case APPROVAL_TIMEOUT:
		http_answer(c, 403, "denied by policy", s->rule, "approval timed out", 1);
		break;
	case APPROVAL_SHUTDOWN:
	case APPROVAL_CANCELLED:  /* never given to a callback; fails closed if it were */
	default:
		unavailable(c, "gateway stopping", s->rule, "the gateway is stopping: the held request was not sent");
		break;
	}
	if (c->state != CONN_S_DEAD)
		conn_pump(c);
}

void
sem_park_start(struct conn *c)
{
	struct sem_req *s = c->req->sem;

	conn_set_state(c, CONN_S_HOLD);
	(void)park(c, s->dec);
}

int
sem_timeout(struct conn *c)
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
	http_answer(c, 403, "denied by policy", s->rule, "approval timed out", 1);
	return 1;
}

/* ---- applying a decision: the one place ---- */

/*
 * Applies decision <d>.  <whole>: the body is held whole (or there is none),
 * so a hold can be parked now.  0: allowed, go on; 1: a hold, parked or to be
 * parked once its body is whole; -1: answered.
 */
static int
apply(struct conn *c, const struct policy_decision *d, int whole)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	const struct policy_outcome *a = &d->act;

	if (s == NULL && (d->mode == POLICY_MODE_REPORT || d->reported || a->limit != NULL || a->budget != NULL ||
	                  a->verdict == POLICY_REQ_HOLD))
		s = sem_req_of(r);
	if (s != NULL) {
		s->report_mode = d->mode == POLICY_MODE_REPORT;
		s->reported = d->reported != 0;
		s->report = d->report;
		s->rule = a->rule;
		s->limit = a->limit;
		s->budget = a->budget;
		s->amount = a->amount;
	}
	r->rule = a->rule;
	r->reason = a->reason;
	if (a->verdict == POLICY_REQ_ALLOW)
		return 0;
	if (a->verdict != POLICY_REQ_HOLD) {
		if (r->body_done)
			r->body = H1_BODY_NONE;  /* read whole: the connection can stay */
		http_answer(c, 403, "denied by policy", a->rule, a->reason != NULL ? a->reason : "denied", 1);
		return -1;
	}
	/* a hold: the request waits for an operator, with the whole body the approval binds */
	if (whole)
		return park(c, d);
	if (r->body == H1_BODY_LENGTH && r->body_left + (r->hold != NULL ? evbuffer_get_length(r->hold) : 0) > hold_cap(s)) {
		too_large(c, hold_cap(s), 1);
		return -1;
	}
	if ((s->dec = decision_copy(d)) == NULL) {
		unavailable(c, "approval unavailable", a->rule, "out of memory");
		return -1;
	}
	s->phase = r->body == H1_BODY_NONE ? SEM_P_PARK : SEM_P_HOLDBODY;
	return 1;
}

int
sem_head(struct conn *c, const struct h1_message *m)
{
	struct req *r = c->req;
	struct policy_header hdr[H1_MAX_HEADERS];
	struct policy_request q;
	struct policy_decision d;
	struct sem_req *s;
	unsigned flags = 0;
	size_t need, i, n = m->nheaders < H1_MAX_HEADERS ? m->nheaders : H1_MAX_HEADERS;

	for (i = 0; i < n; i++) {
		hdr[i].name = m->headers[i].name;
		hdr[i].name_len = m->headers[i].name_len;
		hdr[i].value = m->headers[i].value;
		hdr[i].value_len = m->headers[i].value_len;
	}
	request_of(c, hdr, n, &q);
	/* no body: nothing to hold, and a rule that reads one reads an empty one (below) */
	need = r->body != H1_BODY_NONE ? policy_body_need(c->pol, c->entry, &q, &flags) : 0;
	if (need > 0) {
		/* a git push may be any size: only its command section is held */
		if (r->body == H1_BODY_LENGTH && r->body_left > need && !(flags & POLICY_NEED_GIT_SECTION)) {
			too_large(c, need, 0);
			return -1;
		}
		s = sem_req_of(r);
		if (headers_keep(s, hdr, n) != 0) {
			unavailable(c, "internal error", "max_body", "cannot hold the request head");
			return -1;
		}
		s->need = need;
		s->flags = flags;
		s->phase = SEM_P_BODY;
		return 0;
	}
	if (r->body == H1_BODY_NONE) {  /* rules that read the body read an empty one */
		q.body = "";
		q.body_complete = 1;
	}
	policy_decide(c->pol, c->entry, &q, &d);
	/* a hold is parked once the head's work is done (sem_park_start) or its body is held */
	return apply(c, &d, 0) < 0 ? -1 : 0;
}

/* The git push's command section is decided on and allowed: it goes up, and the pack streams after it. */
static void
git_stream(struct conn *c)
{
	struct req *r = c->req;
	size_t len = evbuffer_get_length(r->hold);

	if (r->body == H1_BODY_LENGTH)
		evbuffer_add_printf(r->up_head, "Content-Length: %llu\r\n\r\n", (unsigned long long)r->body_total);
	else
		evbuffer_add(r->up_head, SLUICE_LIT("Transfer-Encoding: chunked\r\n\r\n"));
	if (policy_secret_count(c->pol) > 0) {
		/* the whole body goes through the placeholder search, the held part first */
		if (cred_scan_begin(c) != 0) {
			r->client_keep_alive = 0;
			http_answer(c, 500, "internal error", "secrets", "cannot set up the request body search", 1);
			return;
		}
		evbuffer_add_buffer(r->scan_in, r->hold);
	} else {
		if (r->body == H1_BODY_CHUNKED && len > 0)
			evbuffer_add_printf(r->up_head, "%zx\r\n", len);
		evbuffer_add_buffer(r->up_head, r->hold);
		if (r->body == H1_BODY_CHUNKED && len > 0)
			evbuffer_add(r->up_head, SLUICE_LIT("\r\n"));
	}
	evbuffer_free(r->hold);
	r->hold = NULL;
	relay_dial(c);
}

/* The body (or the git section, <blen> bytes of it) is held: decide with it and act. */
static void
decide(struct conn *c, size_t blen, int complete)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct policy_request q;
	struct policy_decision d;
	int rc;

	request_of(c, s->hdr, s->nhdr, &q);
	q.body = blen > 0 ? (const char *)evbuffer_pullup(r->hold, (ev_ssize_t)blen) : "";
	q.body_len = blen;
	q.body_complete = complete;
	policy_decide(c->pol, c->entry, &q, &d);
	if (s->flags & POLICY_NEED_GIT_SECTION)
		refuse_proto_keep_section(c, q.body, blen);  /* names the refs if it is refused later (a limit) */
	headers_drop(s);
	s->phase = SEM_P_NONE;
	rc = apply(c, &d, r->body_done);
	if (rc > 0 && s->phase == SEM_P_HOLDBODY) {
		sem_hold_pump(c);  /* a hold decided on a git section: the rest of its body, some of it read already */
		return;
	}
	if (rc != 0)
		return;  /* answered or parked */
	if (r->body_done)
		cred_hold_done(c);  /* secrets searched and injected, sent with a Content-Length */
	else
		git_stream(c);
}

void
sem_hold_pump(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;
	struct evbuffer *cin = cio_in(c);
	const char *err = NULL;
	size_t len, cap;
	long sec = -2;
	int p, progress = 0, git;

	if (s->phase == SEM_P_WAIT) {
		/* the client going away cancels the hold (sem_req_free); what it sends meanwhile waits in its input */
		if (c->client_eof)
			conn_close(c);
		return;
	}
	git = s->phase == SEM_P_BODY && (s->flags & POLICY_NEED_GIT_SECTION);
	cap = s->phase == SEM_P_BODY ? s->need : hold_cap(s);
	for (;;) {
		len = evbuffer_get_length(r->hold);
		if (git && len > 0 &&
		    (sec = policy_git_section_len((const char *)evbuffer_pullup(r->hold, -1), len)) != -2)
			break;
		if (r->body_done || len > cap)
			break;
		p = relay_body_move(c, cin, r->hold, 0, &err);
		if (p < 0) {
			r->client_keep_alive = 0;
			http_answer(c, 400, "bad request", "http", err ? err : "malformed chunked request body", 1);
			return;
		}
		if (p == 0)
			break;
		progress = 1;
		if (account(c) != 0)
			return;
	}
	if (git && (sec == -1 || (sec == -2 && r->body_done))) {
		if (r->body_done)
			r->body = H1_BODY_NONE;
		http_answer(c, 403, "denied by policy", "git", "malformed git pkt-line", 1);
		return;
	}
	if (git && sec > 0) {
		decide(c, (size_t)sec, r->body_done && (size_t)sec == len);
		return;
	}
	if (len > cap) {
		too_large(c, cap, s->phase == SEM_P_HOLDBODY);
		return;
	}
	if (r->body_done) {
		if (s->phase == SEM_P_BODY)
			decide(c, len, 1);
		else
			(void)park(c, s->dec);
		return;
	}
	cred_hold_wait(c, progress);
}

void
sem_sent(struct req *r)
{
	if (r->sem != NULL)
		r->sem->sent = 1;
}

void
sem_req_free(struct conn *c)
{
	struct req *r = c->req;
	struct sem_req *s = r->sem;

	if (s == NULL)
		return;
	if (s->parked) {
		/* the client went away while its request waited: no callback may follow */
		approvals_cancel(c->w->gw->approvals, s->hold_id);
		s->parked = 0;
		s->phase = SEM_P_NONE;
		s->hold_outcome = approvals_decision_name(APPROVAL_CANCELLED);
		snprintf(s->hold_by, sizeof(s->hold_by), "client");
		if (!r->audit_decided) {
			r->reason = "the client went away while the request waited for approval";
			http_audit_request(c, AUDIT_VERDICT_DENY);
		}
	}
	if (s->budget_taken && !s->sent)
		sem_budget_refund(c);
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
	if (s->budget_taken) {
		a->budget_key = s->budget->key;
		a->budget_amount = s->amount_text;
	}
}
