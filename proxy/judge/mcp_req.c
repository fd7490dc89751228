/*
 * proxy/judge/mcp_req.c - MCP on the request path (mcp_req.h): a POST to a
 * host's MCP endpoint judged per JSON-RPC message, its headers checked
 * against its body, and what the answer, the limits and the audit record
 * need of its messages kept in r->mcp.
 */
#include <string.h>
#include <strings.h>
#include <stdint.h>
#include <openssl/evp.h>
#include "common/json.h"
#include "common/sluice.h"
#include "policy/judge.h"
#include "policy/mcp.h"
#include "audit/audit.h"
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "audit/writer.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/judge/mcp_peer.h"
#include "proxy/core/context.h"
#include "common/clock.h"

#define PARAM_PREFIX "mcp-param-"
_Static_assert(MCP_REQ_BUDGET_TAKES_MAX == 16, "judge_batch's refusal names the bound");
#define HDR_VALUE_MAX 8192  /* a decoded Mcp-Name / Mcp-Param-* value, at most */
#define MCP_REQ_CLIENT_MAX (256 + 1 + 20 + 1)  /* "<sandbox>#<registration>": a name, '#', a uint64, NUL */

int
mcp_req_applies(const struct conn *c)
{
	const struct req *r = c->req;
	const char *ep;
	int code;

	if (r == NULL || r->path == NULL || !policy_host_mcp(c->entry, &ep, &code))
		return 0;
	return r->method_len == 4 && memcmp(r->method, "POST", 4) == 0 && strlen(ep) == r->path_len &&
	       memcmp(ep, r->path, r->path_len) == 0;
}

static struct mcp_req *
mcp_of(struct req *r)
{
	if (r->mcp == NULL && (r->mcp = try_malloc(sizeof(*r->mcp))) != NULL)
		memset(r->mcp, 0, sizeof(*r->mcp));
	return r->mcp;
}

int
mcp_req_head(struct conn *c, const struct h1_message *m)
{
	struct req *r = c->req;
	const struct h1_header *sid = NULL;
	struct mcp_req *mr;
	char peer[CONN_ADDR_STR], reg[MCP_REQ_CLIENT_MAX];
	const char *ep, *who;
	size_t i;
	int code, n;

	if (r == NULL || r->path == NULL || !policy_host_mcp(c->entry, &ep, &code) || strlen(ep) != r->path_len ||
	    memcmp(ep, r->path, r->path_len) != 0)
		return 0;
	if ((mr = mcp_of(r)) == NULL)
		return -1;
	for (i = 0; i < m->nheaders; i++) {
		if (!sluice_iov_ieq(m->headers[i].name, m->headers[i].name_len, "mcp-session-id"))
			continue;
		if (sid != NULL)
			return 0;  /* two sessions: no key, so nothing of it is correlated (fail closed) */
		sid = &m->headers[i];
	}
	/* who may answer: the client as the limits know it (its sandbox, else its address), toward this host; a
	 * sandbox that `sluice run` registered, by this registration (a later one of the same name is another) */
	who = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	if (c->sandbox != NULL && c->sbx != NULL) {
		n = snprintf(reg, sizeof(reg), "%s#%llu", c->sandbox, (unsigned long long)c->sbx_id);
		if (n < 0 || (size_t)n >= sizeof(reg))
			return 0;  /* no key: nothing of it is correlated (fail closed) */
		who = reg;
	}
	if (c->host != NULL && mcp_peer_key_make(&mr->peer_key, who, c->host, sid != NULL ? sid->value : NULL,
	                      sid != NULL ? sid->value_len : 0) == 0)
		mr->keyed = 1;
	return 0;
}

const struct mcp_peer_key *
mcp_req_peer_key(const struct req *r)
{
	return r->mcp != NULL && r->mcp->keyed ? &r->mcp->peer_key : NULL;
}

/* <id> as compact JSON text into <buf> (MCP_PEER_ID_TEXT_MAX + 1): 0, or -1. */
static int
peer_id_text(const json_t *id, char *buf)
{
	size_t n;

	if (id == NULL)
		return -1;
	n = json_dumpb(id, buf, MCP_PEER_ID_TEXT_MAX, JSON_ENCODE_ANY | JSON_COMPACT);
	if (n == 0 || n >= MCP_PEER_ID_TEXT_MAX)
		return -1;
	buf[n] = '\0';
	return 0;
}

void
mcp_req_peer_add(struct conn *c, const struct policy_mcp_msg *msg)
{
	const struct mcp_peer_key *k = c->req != NULL ? mcp_req_peer_key(c->req) : NULL;
	char id[MCP_PEER_ID_TEXT_MAX + 1];

	if (k == NULL || msg->method == NULL || peer_id_text(msg->id, id) != 0)
		return;  /* unremembered: its answer is refused as uncorrelated (fails closed) */
	(void)mcp_peers_add(c->w->gw->mcp_peers, k, msg->method, msg->method_len, id, clock_mono_ms());
}

/* The server request of c->req's key with id <id>: 1 taken (its method in <method>/<cap>), else 0. */
static int
peer_take(struct conn *c, const json_t *id, char *method, size_t cap)
{
	const struct mcp_peer_key *k = mcp_req_peer_key(c->req);
	char t[MCP_PEER_ID_TEXT_MAX + 1];

	if (k == NULL || peer_id_text(id, t) != 0)
		return 0;
	return mcp_peers_take(c->w->gw->mcp_peers, k, t, method, cap, clock_mono_ms());
}

/* ---- the headers that mirror the body (SEP-2243: the 2026 revision) ---- */

/*
 * A header value as the client meant it into <out>/<cap>: as sent, or the
 * bytes of a "=?base64?...?=" sentinel.  The length, or -1 (bad base64, too long).
 */
static long
hdr_value(const char *v, size_t n, char *out, size_t cap)
{
	static const char pre[] = "=?base64?", post[] = "?=";
	size_t bn;
	int k;

	if (n >= sizeof(pre) - 1 + sizeof(post) - 1 && strncasecmp(v, pre, sizeof(pre) - 1) == 0 &&
	    memcmp(v + n - 2, post, 2) == 0) {
		bn = n - (sizeof(pre) - 1) - (sizeof(post) - 1);
		if (bn % 4 != 0 || bn / 4 * 3 >= cap)
			return -1;
		k = EVP_DecodeBlock((unsigned char *)out, (const unsigned char *)v + sizeof(pre) - 1, (int)bn);
		if (k < 0)
			return -1;
		if (bn >= 1 && v[n - 3] == '=')  /* EVP_DecodeBlock keeps the padding's zero bytes */
			k -= (bn >= 2 && v[n - 4] == '=') ? 2 : 1;
		return k;
	}
	if (n >= cap)
		return -1;
	memcpy(out, v, n);
	return (long)n;
}

/* 1 when argument value <a> is what header text <s>/<n> says (a string as is; integers, booleans as JSON). */
static int
param_agrees(const json_t *a, const char *s, size_t n)
{
	char num[32];
	int k;

	if (json_is_string(a))
		return json_string_length(a) == n && memcmp(json_string_value(a), s, n) == 0;
	if (json_is_integer(a)) {
		k = snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(a));
		return k > 0 && (size_t)k == n && memcmp(num, s, n) == 0;
	}
	if (json_is_boolean(a))
		return n == (json_is_true(a) ? 4u : 5u) && memcmp(s, json_is_true(a) ? "true" : "false", n) == 0;
	return 0;  /* a real, an object, an array, null: no header can carry it exactly */
}

/* The argument of <args> whose key is <name>/<n> folded (exactly one), or NULL; *<amb> 1 when several are. */
static const json_t *
arg_named(const json_t *args, const char *name, size_t n, int *amb)
{
	const char *k;
	const json_t *found = NULL;
	void *it;

	*amb = 0;
	if (!json_is_object(args))
		return NULL;
	/* jansson's iterators take a non-const object; nothing is changed through them */
	for (it = json_object_iter((json_t *)(uintptr_t)args); it != NULL;
	     it = json_object_iter_next((json_t *)(uintptr_t)args, it)) {
		k = json_object_iter_key(it);
		if (strlen(k) == n && strncasecmp(k, name, n) == 0) {
			if (found != NULL)
				*amb = 1;
			found = json_object_iter_value(it);
		}
	}
	return found;
}

/* (mcp_req.h) A batch carries none; each header at most once; a Mcp-Param-X names one argument (its key folded). */
const char *
mcp_req_headers_check(const struct policy_header *hdrs, size_t nhdrs, const struct policy_mcp_body *b)
{
	const struct policy_mcp_msg *m = &b->msgs[0];
	const struct policy_header *h;
	char val[HDR_VALUE_MAX];
	const json_t *a;
	size_t i, nm = 0, nn = 0, pn = sizeof(PARAM_PREFIX) - 1;
	long vn;
	int amb;

	if (b->nmsgs == 0)
		return "no message";
	for (i = 0; i < nhdrs; i++) {
		h = &hdrs[i];
		if (sluice_iov_ieq(h->name, h->name_len, "mcp-method")) {
			if (b->batch || nm++ > 0 || m->method == NULL || h->value_len != m->method_len ||
			    memcmp(h->value, m->method, m->method_len) != 0)
				return "the Mcp-Method header does not match the body's method";
		} else if (sluice_iov_ieq(h->name, h->name_len, "mcp-name")) {
			vn = hdr_value(h->value, h->value_len, val, sizeof(val));
			if (b->batch || nn++ > 0 || m->name == NULL || vn < 0 || (size_t)vn != m->name_len ||
			    memcmp(val, m->name, m->name_len) != 0)
				return "the Mcp-Name header does not match the body's tool, prompt or resource name";
		} else if (h->name_len > pn && strncasecmp(h->name, PARAM_PREFIX, pn) == 0) {
			if (b->batch || m->method_id != POLICY_MCP_M_TOOLS_CALL)
				return "an Mcp-Param header on a body that is not one tools/call";
			a = arg_named(m->arguments, h->name + pn, h->name_len - pn, &amb);
			vn = hdr_value(h->value, h->value_len, val, sizeof(val));
			if (a == NULL || amb || vn < 0 || !param_agrees(a, val, (size_t)vn))
				return "an Mcp-Param header does not match the argument it names";
		}
	}
	/* each Mcp-Param header names its own argument: two naming one are caught as ambiguous above only when
	 * the keys differ; the same header twice is a header list the upstream may join: refused */
	for (i = 0; i < nhdrs; i++) {
		size_t j;

		h = &hdrs[i];
		if (h->name_len <= pn || strncasecmp(h->name, PARAM_PREFIX, pn) != 0)
			continue;
		for (j = i + 1; j < nhdrs; j++)
			if (hdrs[j].name_len == h->name_len && strncasecmp(hdrs[j].name, h->name, h->name_len) == 0)
				return "an Mcp-Param header is given twice";
	}
	return NULL;
}

/* ---- what is kept of the messages ---- */

static char *
dup_n(const char *s, size_t n)
{
	char *d = try_malloc(n + 1);

	if (d != NULL) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

/* Copies message <m>: 0, or -1 out of memory. */
static int
keep_msg(const struct policy_host *h, const struct policy_mcp_msg *m, const char *rule, struct mcp_req_msg *k)
{
	json_t *args = NULL;

	k->kind = m->kind;
	k->method_id = m->method_id;
	if (m->kind != POLICY_MCP_RESPONSE &&
	    (m->method_id == POLICY_MCP_M_TOOLS_CALL || m->method_id == POLICY_MCP_M_PROMPTS_GET)) {
		k->fp = 1;
		/* a reference: the subtree outlives the body's root (policy_mcp_body_dispose) */
		k->arguments = m->arguments != NULL ? json_incref((json_t *)(uintptr_t)m->arguments) : NULL;
	}
	if (m->method != NULL && (k->method = dup_n(m->method, m->method_len)) == NULL)
		return -1;
	if (m->name != NULL && (k->name = dup_n(m->name, m->name_len)) == NULL)
		return -1;
	if (m->id != NULL && (k->id = json_dumps(m->id, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		return -1;
	if (rule != NULL && m->arguments != NULL) {
		if (policy_mcp_audit_args(h, rule, m->arguments, &args) != 0)
			return -1;
		if (args != NULL) {
			k->args = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
			json_decref(args);
			if (k->args == NULL)
				return -1;
		}
	}
	return 0;
}

/* The audit's mcp_batch array (docs/audit-schema.md): JSON text, or NULL out of memory. */
static char *
batch_json(const struct mcp_req *mr)
{
	json_t *arr = json_array(), *o, *v;
	const struct mcp_req_msg *k;
	char amt[32];
	char *out;
	size_t i;

	if (arr == NULL)
		return NULL;
	for (i = 0; i < mr->n; i++) {
		k = &mr->m[i];
		if ((o = json_object()) == NULL || json_array_append_new(arr, o) != 0)
			goto fail;
		if (k->method != NULL && json_object_set_new(o, "mcp_method", json_string(k->method)) != 0)
			goto fail;
		if (k->name != NULL && json_object_set_new(o, "tool", json_string(k->name)) != 0)
			goto fail;
		if (k->answers[0] != '\0' && json_object_set_new(o, "mcp_answers", json_string(k->answers)) != 0)
			goto fail;
		if (k->id != NULL && ((v = json_loads(k->id, JSON_DECODE_ANY, NULL)) == NULL ||
		                      json_object_set_new(o, "rpc_id", v) != 0))
			goto fail;
		/* the placeholder the audit writer fills: compact, it prints as AUDIT_ARGS_HMAC_PH */
		if (k->fp && json_object_set_new(o, "args_hmac", json_string(AUDIT_ARGS_HMAC_ZEROS)) != 0)
			goto fail;
		if (k->args != NULL &&
		    ((v = json_loads(k->args, 0, NULL)) == NULL || json_object_set_new(o, "args", v) != 0))
			goto fail;
		if (k->budget != NULL && ((v = json_object()) == NULL || json_object_set_new(o, "budget", v) != 0 ||
		                          json_object_set_new(v, "key", json_string(k->budget->key)) != 0 ||
		                          json_object_set_new(v, "amount", json_string(policy_amount_fmt(k->amount, amt,
		                                                                           sizeof(amt)))) != 0))
			goto fail;
		if (json_object_set_new(o, "verdict", json_string(k->verdict)) != 0 ||
		    (k->rule != NULL && json_object_set_new(o, "rule", json_string(k->rule)) != 0))
			goto fail;
	}
	out = json_dumps(arr, JSON_COMPACT);
	json_decref(arr);
	return out;
fail:
	json_decref(arr);
	return NULL;
}

/* ---- judging ---- */

static int
bad_body(struct conn *c, enum policy_mcp_error e, struct refusal *rf)
{
	struct req *r = c->req;

	snprintf(r->rule_buf, sizeof(r->rule_buf), "malformed JSON-RPC body: %s", policy_mcp_strerror(e));
	if (r->body_done)
		r->body = H1_BODY_NONE;  /* read whole: the connection can stay */
	return refusal_set(rf, 400, REFUSAL_BAD_REQUEST, "mcp", r->rule_buf);
}

/* The verdict text of a batch element's outcome. */
static const char *
element_verdict(const struct judge_outcome *o)
{
	return o->verdict == JUDGE_ALLOW ? "allow" : o->verdict == JUDGE_HOLD ? "hold" : "deny";
}

/*
 * Each response the client POSTs among <b>'s messages is correlated with the
 * server request it answers (mcp_peers_take, by c->req's key only: see
 * mcp_req_head; each is taken once, denied or not): its method goes into
 * mr->m[i].answers, and msg->answers points there, so that the rules judge
 * it as the answer to that method.  Returns the index of the first response
 * that answers none seen, or -1.
 */
static int
correlate(struct conn *c, struct policy_mcp_body *b, struct mcp_req *mr)
{
	int first = -1;
	size_t i;

	for (i = 0; i < b->nmsgs; i++) {
		struct policy_mcp_msg *m = &b->msgs[i];
		struct mcp_req_msg *k = &mr->m[i];

		if (m->kind != POLICY_MCP_RESPONSE)
			continue;
		if (!peer_take(c, m->id, k->answers, sizeof(k->answers)) || k->answers[0] == '\0') {
			k->answers[0] = '\0';
			if (first < 0)
				first = (int)i;
			continue;
		}
		m->answers = k->answers;
		m->answers_len = strlen(k->answers);
	}
	return first;
}

/* A client-posted response that answers no server request seen: refused (fail closed). */
static void
deny_uncorrelated(struct conn *c, struct judge_outcome *o)
{
	memset(o, 0, sizeof(*o));
	o->verdict = JUDGE_DENY;
	o->stage = JUDGE_AT_RULES;
	o->status = 403;
	o->rule = "mcp";
	o->reason = "a JSON-RPC response that answers no server request seen by this sandbox";
	o->entry = c->entry;
}

static int
judge_batch(struct conn *c, const struct judge_conn *cf, const struct judge_req *q, struct policy_mcp_body *b,
            struct judge_outcome *o, struct mcp_req *mr)
{
	struct judge_outcome *each = try_malloc(b->nmsgs * sizeof(*each));
	size_t i, at = 0, nbudget = 0;
	int unc;

	if (each == NULL)
		return -1;
	memset(each, 0, b->nmsgs * sizeof(*each));
	unc = correlate(c, b, mr);
	policy_judge_mcp_batch(c->pol, cf, q, b, NULL, o, each, &at, NULL, NULL);
	for (i = 0; i < b->nmsgs; i++) {
		if (b->msgs[i].kind == POLICY_MCP_RESPONSE && mr->m[i].answers[0] == '\0')
			deny_uncorrelated(c, &each[i]);
		mr->m[i].verdict = element_verdict(&each[i]);
		mr->m[i].rule = each[i].rule;
		if (keep_msg(c->entry, &b->msgs[i], each[i].decided ? each[i].dec.act.rule : NULL, &mr->m[i]) != 0) {
			free(each);
			return -1;
		}
		if (each[i].verdict == JUDGE_ALLOW || each[i].verdict == JUDGE_HOLD) {
			mr->m[i].limit = each[i].limit;
			mr->m[i].budget = each[i].budget;
			mr->m[i].amount = each[i].budget != NULL ? each[i].amount : 0;
			nbudget += each[i].budget != NULL;
		}
	}
	if (unc >= 0) {
		deny_uncorrelated(c, o);
	} else if (o->verdict == JUDGE_ALLOW || o->verdict == JUDGE_HOLD) {
		/* the limits and budgets of every element are taken by sem_admit (mcp_req_limit, mcp_req_budget_at),
		 * not the ones of <o>'s element */
		o->limit = NULL;
		o->budget = NULL;
		o->amount = 0;
		if (nbudget > MCP_REQ_BUDGET_TAKES_MAX) {  /* a bound on the takes (and refunds) of one request */
			o->verdict = JUDGE_DENY;
			o->status = 403;
			o->rule = "mcp";
			o->reason = "a batch may take from budgets at most 16 times (MCP_REQ_BUDGET_TAKES_MAX)";
		}
	}
	free(each);
	return 0;
}

int
mcp_req_judge(struct conn *c, const struct judge_conn *cf, const struct judge_req *q, struct judge_outcome *o,
              struct refusal *rf)
{
	struct req *r = c->req;
	struct policy_mcp_body b;
	struct judge_req one;
	struct mcp_req *mr;
	enum policy_mcp_error e = POLICY_MCP_OK;
	const char *ep, *why;
	size_t i;

	if (!q->body_complete) {
		policy_judge_too_large(o, q->need, 0);
		o->entry = c->entry;
		return 0;
	}
	if ((mr = mcp_of(r)) == NULL)
		return refusal_close(rf, 503, REFUSAL_INTERNAL, "mcp", "out of memory");
	mr->judged = 1;
	(void)policy_host_mcp(c->entry, &ep, &mr->code);
	if (policy_mcp_parse(q->body, q->body_len, &b, &e) != 0) {
		policy_mcp_body_dispose(&b);
		mr->rpc.code = e == POLICY_MCP_E_JSON || e == POLICY_MCP_E_DUPLICATE ? MCP_REQ_CODE_PARSE : MCP_REQ_CODE_INVALID;
		return e == POLICY_MCP_E_NOMEM ? refusal_close(rf, 503, REFUSAL_INTERNAL, "mcp", "out of memory")
		                               : bad_body(c, e, rf);
	}
	if ((why = mcp_req_headers_check(q->headers, q->nheaders, &b)) != NULL) {
		policy_mcp_body_dispose(&b);
		mr->rpc.code = MCP_REQ_CODE_HEADER;
		if (r->body_done)
			r->body = H1_BODY_NONE;
		return refusal_set(rf, 400, REFUSAL_BAD_REQUEST, "mcp", why);
	}
	mr->batch = b.batch;
	mr->n = b.nmsgs;
	if (b.batch) {
		if (judge_batch(c, cf, q, &b, o, mr) != 0)
			goto nomem;
		if ((mr->batch_json = batch_json(mr)) == NULL)
			goto nomem;
	} else {
		one = *q;
		one.mcp_msg = &b.msgs[0];
		if (correlate(c, &b, mr) >= 0)
			deny_uncorrelated(c, o);
		else
			policy_judge(c->pol, cf, &one, NULL, o, NULL, NULL);
		if (keep_msg(c->entry, &b.msgs[0], o->decided ? o->dec.act.rule : NULL, &mr->m[0]) != 0)
			goto nomem;
	}
	for (i = 0; i < mr->n; i++)
		mr->m[i].verdict = mr->m[i].verdict != NULL ? mr->m[i].verdict : element_verdict(o);
	policy_mcp_body_dispose(&b);
	return 0;
nomem:
	policy_mcp_body_dispose(&b);
	return refusal_close(rf, 503, REFUSAL_INTERNAL, "mcp", "out of memory");
}

void
mcp_req_refusal(struct req *r, struct refusal *rf)
{
	struct mcp_req *mr = r->mcp;
	size_t i;

	if (mr == NULL || !mr->judged)
		return;
	if (rf->status == 400) {  /* the body or its headers: one error of id null */
		if (mr->rpc.code == 0)
			mr->rpc.code = MCP_REQ_CODE_INVALID;
		mr->rpc.ids = mr->ids;
		mr->rpc.nids = 0;
		mr->rpc.batch = 0;
		rf->jsonrpc = &mr->rpc;
		return;
	}
	if (rf->status != 403 && rf->status != 429)
		return;
	mr->rpc.nids = 0;
	for (i = 0; i < mr->n; i++)
		if (mr->m[i].kind == POLICY_MCP_REQUEST && mr->m[i].id != NULL)
			mr->ids[mr->rpc.nids++] = mr->m[i].id;
	if (mr->rpc.nids == 0)
		return;  /* notifications (and responses) have no id to answer: a 403 with the JSON reason */
	mr->rpc.code = rf->status == 429 ? MCP_REQ_CODE_LIMITED : mr->code;
	mr->rpc.ids = mr->ids;
	mr->rpc.batch = mr->batch != 0;
	rf->jsonrpc = &mr->rpc;
	mr->http_status = refusal_http_status(rf);  /* the record keeps the verdict's status and says this one */
}

const struct policy_limit *
mcp_req_limit(const struct req *r, size_t i)
{
	const struct mcp_req *mr = r->mcp;

	return mr != NULL && mr->batch && i < mr->n ? mr->m[i].limit : NULL;
}

struct mcp_req_msg *
mcp_req_budget_at(struct req *r, size_t i)
{
	struct mcp_req *mr = r->mcp;

	return mr != NULL && mr->batch && i < mr->n && mr->m[i].budget != NULL ? &mr->m[i] : NULL;
}

void
mcp_req_audit_fill(struct req *r, struct audit_rec *a)
{
	struct mcp_req *mr = r->mcp;
	size_t i, n = 0;

	if (mr == NULL || mr->n == 0)
		return;
	for (i = 0; i < mr->n; i++)
		if (mr->m[i].fp)
			mr->fp_args[n++] = mr->m[i].arguments;
	a->mcp_hmac_args = mr->fp_args;
	a->mcp_nhmac = n;
	a->http_status = mr->http_status;
	if (mr->batch) {
		a->mcp_batch = mr->batch_json;
		return;
	}
	a->mcp_method = mr->m[0].method;
	a->mcp_answers = mr->m[0].answers[0] != '\0' ? mr->m[0].answers : NULL;
	a->mcp_tool = mr->m[0].name;
	a->mcp_rpc_id = mr->m[0].id;
	a->mcp_args = mr->m[0].args;
}

enum policy_mcp_method
mcp_req_method_of(const struct req *r, const json_t *id)
{
	const struct mcp_req *mr = r->mcp;
	enum policy_mcp_method m = POLICY_MCP_M_NONE;
	char *t;
	size_t i;

	if (mr == NULL || id == NULL || (t = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL)
		return POLICY_MCP_M_NONE;
	for (i = 0; i < mr->n; i++)
		if (mr->m[i].kind == POLICY_MCP_REQUEST && mr->m[i].id != NULL && strcmp(mr->m[i].id, t) == 0) {
			m = mr->m[i].method_id;
			break;
		}
	free(t);
	return m;
}

int
mcp_req_awaits(const struct req *r)
{
	const struct mcp_req *mr = r->mcp;
	size_t i;

	for (i = 0; mr != NULL && i < mr->n; i++)
		if (mr->m[i].kind == POLICY_MCP_REQUEST && mr->m[i].id != NULL)
			return 1;
	return 0;
}

void
mcp_req_free(struct req *r)
{
	struct mcp_req *mr = r->mcp;
	size_t i;

	if (mr == NULL)
		return;
	for (i = 0; i < POLICY_MCP_BATCH_MAX; i++) {
		free(mr->m[i].method);
		free(mr->m[i].name);
		free(mr->m[i].id);
		free(mr->m[i].args);
		json_decref(mr->m[i].arguments);
	}
	free(mr->batch_json);
	free(mr);
	r->mcp = NULL;
}
