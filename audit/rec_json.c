/*
 * audit/rec_json.c - a record's JSON line (writer_int.h: audit_rec_format,
 * audit_time_now): the members of each kind in a fixed order, every string
 * through the JSON writer (common/json.h), which escapes all bytes a peer
 * could use to end a line or forge a field (control bytes, quote,
 * backslash, DEL and every byte >= 0x80).  No header values are recorded.
 * Pure: formats into the caller's buffer, any thread.
 */
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include "common/clock.h"
#include "common/hex.h"
#include "common/json.h"
#include "common/sluice.h"
#include "writer_int.h"

void
audit_time_now(char *out, size_t cap)
{
	/* every record formats one: digits by hand, no printf */
	static const char pat[] = "0000-00-00T00:00:00.000Z";
	struct timespec ts;
	struct tm tm;
	char t[sizeof(pat)];
	unsigned v[7], w[7] = {4, 2, 2, 2, 2, 2, 3}, at[7] = {0, 5, 8, 11, 14, 17, 20}, i, k, x;

	clock_wall(&ts);
	gmtime_r(&ts.tv_sec, &tm);
	v[0] = (unsigned)(tm.tm_year + 1900) % 10000;
	v[1] = (unsigned)tm.tm_mon + 1;
	v[2] = (unsigned)tm.tm_mday;
	v[3] = (unsigned)tm.tm_hour;
	v[4] = (unsigned)tm.tm_min;
	v[5] = (unsigned)tm.tm_sec;
	v[6] = (unsigned)(ts.tv_nsec / 1000000);
	memcpy(t, pat, sizeof(pat));
	for (i = 0; i < 7; i++)
		for (k = w[i], x = v[i]; k > 0; k--, x /= 10)
			t[at[i] + k - 1] = (char)('0' + x % 10);
	if (cap == 0)
		return;
	k = cap - 1 < sizeof(pat) - 1 ? (unsigned)cap - 1 : (unsigned)sizeof(pat) - 1;
	memcpy(out, t, k);
	out[k] = '\0';
}

static void
path_member(struct jbuf *jb, const struct audit_rec *r, size_t path_max)
{
	if (r->path != NULL)
		jb_strn(jb, "path", r->path, strnlen(r->path, path_max));
}

/* "<key>":<text>, <n> bytes of JSON the gateway wrote itself (n < 0: unusable): a null replaced. */
static void
raw_member_n(struct jbuf *jb, const char *key, const char *text, long n)
{
	jb_null(jb, key);
	if (jb->overflow)
		return;
	jb->len -= 4;
	if (n < 0 || jb->len + (size_t)n >= jb->cap) {
		jb->overflow = 1;
		return;
	}
	memcpy(jb->buf + jb->len, text, (size_t)n);
	jb->len += (size_t)n;
}

/*
 * "<key>":<obj> where <obj> is a complete object written by a jbuf of its own
 * (common/json.h has no nesting): the member is started as null and the null
 * replaced, so an overflow of either marks the record unusable as usual.
 */
static void
object_member(struct jbuf *jb, const char *key, struct jbuf *obj)
{
	long n = jb_finish(obj, 0);

	raw_member_n(jb, key, obj->buf, n);
}

static void
raw_member(struct jbuf *jb, const char *key, const char *text)
{
	size_t n;

	if (text == NULL)
		return;
	n = strnlen(text, AUDIT_BODY_MAX);
	raw_member_n(jb, key, text, n >= AUDIT_BODY_MAX ? -1 : (long)n);
}

/* The request record's mcp members (issue 23, docs/audit-schema.md "The mcp fields"). */
static void
mcp_members(struct jbuf *jb, const struct audit_rec *r)
{
	jb_str(jb, "mcp_method", r->mcp_method);
	jb_str(jb, "mcp_answers", r->mcp_answers);
	jb_str(jb, "tool", r->mcp_tool);
	raw_member(jb, "rpc_id", r->mcp_rpc_id);
	if (r->mcp_batch == NULL && r->mcp_nhmac == 1)  /* the placeholder the writer fills (AUDIT_ARGS_HMAC_PH) */
		raw_member_n(jb, "args_hmac", "\"" AUDIT_ARGS_HMAC_ZEROS "\"", AUDIT_HASH_HEX + 2);
	raw_member(jb, "args", r->mcp_args);
	raw_member(jb, "mcp_batch", r->mcp_batch);
}

/* The request record's semantic members (issue 6): mode, report, limit, hold, budget. */
static void
semantic_members(struct jbuf *jb, const struct audit_rec *r)
{
	char tmp[AUDIT_BODY_MAX];  /* a nested object is bounded by the record's own bound */
	struct jbuf o;

	jb_str(jb, "mode", r->mode);
	jb_str(jb, "limits_counted", r->limits_counted);
	if (r->report_verdict != NULL) {
		jb_init(&o, tmp, sizeof(tmp));
		jb_str(&o, "verdict", r->report_verdict);
		jb_str(&o, "rule", r->report_rule);
		jb_str(&o, "reason", r->report_reason);
		object_member(jb, "report", &o);
	}
	if (r->limit_key != NULL) {
		jb_init(&o, tmp, sizeof(tmp));
		jb_str(&o, "key", r->limit_key);
		jb_str(&o, "kind", r->limit_kind);
		if (r->limit_retry_after >= 0)
			jb_int(&o, "retry_after", r->limit_retry_after);
		jb_str(&o, "reset", r->limit_reset);
		object_member(jb, "limit", &o);
	}
	if (r->hold_id != NULL) {
		jb_init(&o, tmp, sizeof(tmp));
		jb_str(&o, "id", r->hold_id);
		jb_str(&o, "outcome", r->hold_outcome);
		jb_str(&o, "by", r->hold_by);
		object_member(jb, "hold", &o);
	}
	if (r->budget_key != NULL) {
		jb_init(&o, tmp, sizeof(tmp));
		jb_str(&o, "key", r->budget_key);
		jb_str(&o, "amount", r->budget_amount);
		object_member(jb, "budget", &o);
	}
}

long
audit_rec_format(const struct audit_rec *r, char *buf, size_t cap, size_t path_max)
{
	struct jbuf jb;
	char now[40];
	enum audit_kind k = r->kind;

	audit_time_now(now, sizeof(now));
	jb_init(&jb, buf, cap);
	jb_str(&jb, AUDIT_FIELD_TIME, now);
	jb_str(&jb, AUDIT_FIELD_TYPE, audit_kind_name(k));
	jb_str(&jb, "sandbox", r->sandbox != NULL ? r->sandbox : "-");
	if (k == AUDIT_KIND_REQUEST) {
		jb_str(&jb, "id", r->id);
		jb_str(&jb, "client", r->client);
		jb_str(&jb, "dest", r->dest);
		jb_str(&jb, "sni", r->sni);
		jb_str(&jb, "host", r->host);
		jb_str(&jb, "method", r->method);
		path_member(&jb, r, path_max);
		jb_str(&jb, "http_version", r->http_version);
		jb_str(&jb, AUDIT_FIELD_VERDICT, audit_verdict_name(r->verdict));
		jb_str(&jb, "rule", r->rule);
		jb_str(&jb, "reason", r->reason);
		jb_pairs(&jb, "secrets", "name", r->secret_names, "place", r->secret_places, r->nsecrets);
		if (r->status >= 0)
			jb_int(&jb, "status", r->status);
		if (r->http_status > 0 && r->http_status != r->status)  /* answered at another status (JSON-RPC: 200) */
			jb_int(&jb, "http_status", r->http_status);
		semantic_members(&jb, r);
		mcp_members(&jb, r);
	} else if (k == AUDIT_KIND_RESPONSE) {
		jb_str(&jb, "id", r->id);
		if (r->status >= 0)
			jb_int(&jb, "status", r->status);
		if (r->bytes_up >= 0)
			jb_int(&jb, "bytes_up", r->bytes_up);
		if (r->bytes_down >= 0)
			jb_int(&jb, "bytes_down", r->bytes_down);
		if (r->duration_ms >= 0)
			jb_int(&jb, "duration_ms", r->duration_ms);
		if (r->upstream_tls >= 0)
			jb_bool(&jb, "upstream_tls", r->upstream_tls);
		jb_pairs(&jb, "scrubbed", NULL, r->scrubbed, NULL, NULL, r->nscrubbed);
		jb_str(&jb, "mcp_method", r->mcp_list);
		if (r->mcp_removed > 0)
			jb_int(&jb, "removed", r->mcp_removed);
		/* set only when the gateway ended the exchange itself (an upstream failure, a cut transfer) */
		jb_str(&jb, "rule", r->rule);
		jb_str(&jb, "reason", r->reason);
	} else if (k == AUDIT_KIND_CONNECTION || k == AUDIT_KIND_DENIAL || k == AUDIT_KIND_NO_REQUEST) {
		jb_str(&jb, "client", r->client);
		jb_str(&jb, "dest", r->dest);
		jb_str(&jb, "sni", r->sni);
		jb_str(&jb, "host", r->host);
		if (k == AUDIT_KIND_CONNECTION)
			jb_str(&jb, AUDIT_FIELD_VERDICT, audit_verdict_name(r->verdict));
		jb_str(&jb, "rule", r->rule);
		jb_str(&jb, "reason", r->reason);
		if (r->status >= 0)
			jb_int(&jb, "status", r->status);
		if (r->suppressed > 0)
			jb_int(&jb, "suppressed", r->suppressed);
		if (k == AUDIT_KIND_NO_REQUEST && r->duration_ms >= 0)
			jb_int(&jb, "duration_ms", r->duration_ms);
	} else if (k == AUDIT_KIND_DNS) {
		jb_str(&jb, "client", r->client);
		jb_str(&jb, "host", r->host);
		jb_str(&jb, "qtype", r->dns_qtype);
		jb_str(&jb, "answer", r->dns_answer);
		jb_str(&jb, AUDIT_FIELD_VERDICT, audit_verdict_name(r->verdict));
	} else if (k == AUDIT_KIND_EXFILTRATION_ATTEMPT) {
		jb_str(&jb, "id", r->id);
		jb_str(&jb, "secret", r->secret);
		jb_str(&jb, "place", r->place);
		jb_str(&jb, "host", r->host);
		jb_str(&jb, "rule", r->rule);
	} else if (k == AUDIT_KIND_SCRUB) {
		jb_str(&jb, "id", r->id);
		jb_pairs(&jb, "secrets", NULL, r->scrubbed, NULL, NULL, r->nscrubbed);
	} else if (k == AUDIT_KIND_APPROVAL) {
		jb_str(&jb, "id", r->id);
		jb_str(&jb, "request", r->request_id);
		jb_str(&jb, "decision", r->decision);
		jb_str(&jb, "by", r->by);
		jb_str(&jb, "rule", r->rule);
		jb_str(&jb, "host", r->host);
		jb_str(&jb, "method", r->method);
		path_member(&jb, r, path_max);
		jb_str(&jb, "body_sha256", r->body_sha256);
		jb_str(&jb, "gateway", r->gateway);
	} else if (k == AUDIT_KIND_REVOCATION) {
		/* revoke.c: a connection whose facts were withdrawn, what was done to it and why */
		jb_str(&jb, "id", r->id);
		jb_str(&jb, "client", r->client);
		jb_str(&jb, "host", r->host);
		jb_str(&jb, "action", r->result);
		jb_str(&jb, "reason", r->reason);
		if (r->generation >= 0)
			jb_int(&jb, "generation", r->generation);
	} else if (k == AUDIT_KIND_CONFIG_RELOAD) {
		jb_str(&jb, "result", r->result);
		if (r->generation >= 0)
			jb_int(&jb, "generation", r->generation);
		jb_str(&jb, "error", r->error);
		if (r->warnings >= 0)
			jb_int(&jb, "warnings", r->warnings);
	} else {
		jb_str(&jb, "rule", r->rule);
		jb_str(&jb, "reason", r->reason);
	}
	if (r->conn_id != 0 && k != AUDIT_KIND_EXFILTRATION_ATTEMPT && k != AUDIT_KIND_SCRUB && k != AUDIT_KIND_DNS)
		jb_int(&jb, "conn", (int64_t)r->conn_id);
	return jb_finish(&jb, 0);
}
