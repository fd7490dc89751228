/*
 * proxy/session/answer.c - how a request ends: its audit records (the
 * request, the exfiltration attempt, the response; refusals past the bound
 * only counted), the one answer to a refusal (http_refuse, and the
 * http_answer* family under it), the cut of an exchange whose head went out
 * (http_truncate), and the move to the next request or the lingering close.
 * Only the session writes an answer and frees a request, and it does so here.
 */
#include <string.h>
#include <stdlib.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/session/session.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/core/context.h"
#include "audit/writer.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/refusal.h"

/* The request record: at the decision (allow, no status), or a refusal's only record (deny and the status). */
static uint64_t
audit_request_rec(struct conn *c, enum audit_verdict verdict, int with_status)
{
	struct req *r = c->req;
	char pathbuf[1024], peer[CONN_ADDR_STR], dest[CONN_ADDR_STR];
	const char *path = r->path, *names[CRED_USES_MAX], *places[CRED_USES_MAX];
	size_t i;

	if (r->query != NULL && c->w->gw->cfg->audit_log_query && r->path != NULL) {
		snprintf(pathbuf, sizeof(pathbuf), "%s%s", r->path, r->query);
		path = pathbuf;
	}
	for (i = 0; i < r->cred->nuses; i++) {
		names[i] = r->cred->uses[i].s->name;
		places[i] = r->cred->uses[i].place;
	}
	struct audit_rec a = {
		.kind = AUDIT_KIND_REQUEST,
		.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		.id = conn_req_id(c),
		.client = conn_peer_str(c, peer),
		.dest = conn_dest_str(c, dest),
		.sni = c->sni,
		.host = c->host[0] ? c->host : NULL,
		.secret_names = names,
		.secret_places = places,
		.nsecrets = r->cred->nuses,
		.method = r->method[0] ? r->method : NULL,
		.path = path,
		.http_version = conn_ops(c)->http_version != NULL ? conn_ops(c)->http_version
		                : r->minor_version < 0 ? NULL : r->minor_version == 0 ? "1.0" : "1.1",
		.verdict = verdict,
		.rule = r->rule,
		.reason = r->reason,
		.status = with_status && r->status > 0 ? r->status : -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.conn_id = c->id,
		.limit_retry_after = -1,
	};
	if (r->sem != NULL)
		sem_audit_fill(r, &a);
	if (r->mcp != NULL)
		mcp_req_audit_fill(r, &a);
	return audit_write(c->w->gw->audit, &a);
}

static void
audit_exfil_rec(struct conn *c)
{
	struct req *r = c->req;
	char peer[CONN_ADDR_STR];
	struct audit_rec a = {
		.kind = AUDIT_KIND_EXFILTRATION_ATTEMPT,
		.event = "exfiltration_attempt",
		.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		.id = conn_req_id(c),
		.secret = r->cred->event_secret,
		.place = r->cred->event_place,
		.host = c->host[0] ? c->host : NULL,
		.rule = "secrets",
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.conn_id = c->id,
	};

	audit_write(c->w->gw->audit, &a);
}

/* The outcome of a request that was let through: a scrub record when values were scrubbed, then its response. */
static void
audit_response_rec(struct conn *c)
{
	struct req *r = c->req;
	char peer[CONN_ADDR_STR];
	const char *scrubbed[SCRUB_TAGS];
	size_t i, n = 0;
	long removed;

	/* tag i: policy secret i (credscrub.c), whether or not this request injected it */
	for (i = 0; i < policy_secret_count(c->pol) && i < SCRUB_TAGS; i++)
		if (scrub_hits_has(&r->cred->scrub_hits, (unsigned)i))
			scrubbed[n++] = policy_secret_get(c->pol, i)->name;
	struct audit_rec a = {
		.kind = AUDIT_KIND_SCRUB,
		.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		.id = conn_req_id(c),
		.host = c->host[0] ? c->host : NULL,
		.scrubbed = scrubbed,
		.nscrubbed = n,
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.conn_id = c->id,
	};
	if (n > 0)
		audit_write(c->w->gw->audit, &a);
	a.kind = AUDIT_KIND_RESPONSE;
	a.status = r->status > 0 ? r->status : -1;
	a.bytes_up = (int64_t)r->bytes_up;
	a.bytes_down = (int64_t)r->bytes_down;
	a.duration_ms = clock_ms_since(&r->t0);
	a.upstream_tls = r->upstream_tls;
	a.rule = r->rule;
	a.reason = r->reason;
	a.mcp_list = mcp_resp_audit(r, &removed);
	a.mcp_removed = removed;
	audit_write(c->w->gw->audit, &a);
}

int
http_audit_decide(struct conn *c)
{
	struct req *r = c->req;

	if (r->audit_decided)
		return 0;
	r->audit_seq = audit_request_rec(c, AUDIT_VERDICT_ALLOW, 0);
	r->audit_decided = 1;
	/* recorded: from now on they describe the outcome (an upstream failure, a cut transfer) */
	r->rule = NULL;
	r->reason = NULL;
	return r->audit_seq == 0 && audit_enabled(c->w->gw->audit) ? -1 : 0;
}

int
http_refusal_admit(struct conn *c)
{
	struct conn *p = conn_ops(c)->parent(c);

	if (p == NULL)
		return 1;
	if (p->nrefused < PROXY_REFUSALS_AUDITED) {
		p->nrefused++;
		return 1;
	}
	p->nrefused_quiet++;
	return 0;
}

void
http_refusals_flush(struct conn *c)
{
	char peer[CONN_ADDR_STR], dest[CONN_ADDR_STR], why[160];

	if (conn_ops(c)->stream || c->nrefused_quiet == 0)
		return;
	snprintf(why, sizeof(why), "%u more refusals on this connection, past the %u recorded one by one",
	         (unsigned)c->nrefused_quiet, (unsigned)PROXY_REFUSALS_AUDITED);
	struct audit_rec a = AUDIT_REC_INIT(AUDIT_KIND_DENIAL);

	a.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	a.client = conn_peer_str(c, peer);
	a.dest = conn_dest_str(c, dest);
	a.sni = c->sni;
	a.host = c->host[0] ? c->host : NULL;
	a.rule = "audit.refusals";
	a.reason = why;
	a.conn_id = c->id;
	a.suppressed = c->nrefused_quiet;
	audit_write(c->w->gw->audit, &a);
	c->nrefused_quiet = 0;
}

void
http_audit_request(struct conn *c, enum audit_verdict verdict)
{
	struct req *r = c->req;
	int quiet = 0;

	if (!r->audit_decided) {
		/* refused (or failed) before its decision: nothing went upstream, this is its one record */
		verdict = AUDIT_VERDICT_DENY;
		quiet = !http_refusal_admit(c);
		if (!quiet)
			r->audit_seq = audit_request_rec(c, verdict, 1);
		r->audit_decided = 1;
		r->audit_done = 1;
	}
	if (r->cred->event != NULL && !r->audit_exfil) {
		if (!quiet)
			audit_exfil_rec(c);
		r->audit_exfil = 1;
	}
	if (!r->audit_done) {
		audit_response_rec(c);
		r->audit_done = 1;
	}
	atomic_fetch_add(&c->w->gw->nrequests, 1);
	if (c->sbx != NULL)
		atomic_fetch_add(&c->sbx->requests, 1);
	if (verdict == AUDIT_VERDICT_DENY) {
		atomic_fetch_add(&c->w->gw->ndenied, 1);
		if (c->sbx != NULL)
			atomic_fetch_add(&c->sbx->denied, 1);
	}
}

const char *
http_refusal_rule(int status, const char *err)
{
	/* name the limit a refusal comes from, so the operator knows which knob it is */
	if (status == 414)
		return "limits.request_line";
	if (status == 431 && err != NULL && strstr(err, "header fields") != NULL)
		return "limits.header_count";
	if (status == 431)
		return "limits.header_bytes";
	return "http";
}

/* Enters REQ_HEAD for the next request, or closes when the connection cannot go on. */
void
http_next_request(struct conn *c, int keep)
{
	http_req_reset(c);
	c->head_started = 0;
	if (!keep || c->client_eof || c->w->draining) {
		/* never closed from here: callers still hold views into the buffers */
		conn_set_state(c, CONN_S_CLOSING);
		cio_read(c, 0);
		conn_arm_timer(c, cio_out_len(c) > 0 ? 5000 : 0);
		return;
	}
	conn_set_state(c, CONN_S_REQ_HEAD);
	cio_read(c, 1);
	conn_arm_timer(c, conn_limits(c)->idle_ms);
}

/*
 * Answers the current request ourselves.  The request body (if any) was not
 * read, so the connection closes after the answer unless there was none.
 */
int
http_answer_keep(const struct conn *c, int status)
{
	const struct req *r = c->req;

	return r->client_keep_alive && r->body == H1_BODY_NONE && status != 400 && status != 408 && status != 431 &&
	       status != 414 && status < 500;
}

/* Ends the refused request: records <status>, <rule>, <reason>, audits when <audit>, frees c->req, moves on. */
void
http_answer_end(struct conn *c, int status, const char *rule, const char *reason, int audit, int keep)
{
	struct req *r = c->req;

	r->status = status;
	r->rule = rule;
	r->reason = reason;
	if (audit)
		/* a refusal of the gateway's is a deny; an allowed request whose upstream failed stays allow */
		http_audit_request(c, status < 500 || r->refused ? AUDIT_VERDICT_DENY : AUDIT_VERDICT_ALLOW);
	if (c->up != NULL) {
		upstream_free(c->up);
		c->up = NULL;
	}
	http_next_request(c, keep);
}

void
http_refuse(struct conn *c, const struct refusal *rf)
{
	struct refusal end;
	int keep;

	if (rf->close)
		c->req->client_keep_alive = 0;
	switch (refuse_proto_answer(c, rf, &end)) {
	case REFUSE_PROTO_DRAINING:
		return;  /* a refused git push: its body is read first (refuse_proto_pump), then the request ends */
	case REFUSE_PROTO_ANSWERED:
		http_answer_end(c, end.status, end.rule, end.reason, !end.quiet, !end.close);
		return;
	default:
		break;
	}
	keep = http_answer_keep(c, rf->status);
	respond_refusal(cio_out(c), rf, c->host, !keep);
	http_answer_end(c, rf->status, rf->rule, rf->reason, !rf->quiet, keep);
}

/* Refuses the current request with a JSON answer (the refusals http.c decides itself). */
void
http_answer(struct conn *c, int status, enum refusal_err err, const char *rule, const char *reason)
{
	struct refusal rf;

	refusal_set(&rf, status, err, rule, reason);
	http_refuse(c, &rf);
}

/* The request in flight failed after its head went out: flush what was relayed, then close (a stream: reset). */
void
http_truncate(struct conn *c, const char *why)
{
	struct req *r = c->req;

	conn_ops(c)->abort(c);
	r->reason = why;
	r->client_keep_alive = 0;
	http_audit_request(c, AUDIT_VERDICT_ALLOW);
	if (c->up != NULL) {
		upstream_free(c->up);
		c->up = NULL;
	}
	http_next_request(c, 0);
}
