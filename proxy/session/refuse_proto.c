/*
 * proxy/session/refuse_proto.c - refusals in the client's own protocol (issue 24).
 *
 * A JSON 403 is read only by clients that print bodies.  git prints
 * "RPC failed; HTTP 403" and gRPC "Received http2 header with status: 403":
 * the rule and the reason reach no one.  So a refused request that is one of
 * theirs is answered in their protocol, chosen from the request's facts:
 *
 *  - git info/refs and git-upload-pack: 200 with an "ERR <reason>" pkt-line,
 *    which git prints as "fatal: remote error: <reason>";
 *  - git-receive-pack: 200 with a report-status ("unpack ok", then
 *    "ng <ref> <reason>" for every ref of the push: it is refused whole), on
 *    side-band 1 when the client asked for side-band(-64k), so git prints
 *    "! [remote rejected] main -> main (<reason>)".  The pack the client is
 *    still sending is read and discarded first (REFUSE_GIT_DRAIN_MAX, and the
 *    body timer), else git's curl sees the connection close under its upload
 *    and prints "RPC failed" instead of the report; then the connection closes;
 *  - gRPC (HTTP/2): trailers-only, grpc-status 7 PERMISSION_DENIED, or 8
 *    RESOURCE_EXHAUSTED for a limit (429) or a body too large (413), with the
 *    reason percent-encoded in grpc-message.
 *
 * The reason carries no CR/LF (control bytes become spaces) and is bounded
 * (REFUSE_TEXT_MAX).  The audit records the refusal as before: the record is
 * written when the refusal is decided, with its status (403, 429, 413), not
 * the 200 that carries it on the wire.
 */
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/pct.h"
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/session/session.h"
#include "proxy/core/refusal.h"
#include "proxy/session/conn_ops.h"

#define GIT_PKT_MAX 65520       /* git's LARGE_PACKET_MAX: side-band-64k */
#define GIT_PKT_SMALL 1000      /* side-band (not -64k) */
#define GIT_LINE_MAX (4096 + REFUSE_TEXT_MAX + 8) /* "ng <ref> <reason>\n": policy bounds a ref to 4096 bytes */

struct refuse_git {
	struct evbuffer *buf;   /* the body's start (REFUSE_GIT_SECTION_MAX): its command section names the refs */
	uint64_t drained;       /* body bytes read and discarded */
	unsigned char kept;     /* <buf> holds the section kept when it was decided (semantic.c) */
	unsigned char draining; /* reading the body before the report */
	int status;
	char rule[128];
	char text[REFUSE_TEXT_MAX + 1];
};

static int
ends_with(const char *s, size_t n, const char *lit, size_t litlen)
{
	return n >= litlen && memcmp(s + n - litlen, lit, litlen) == 0;
}

/* The list <s>/<n> of items separated by <sep> has the item <item>/<ilen> (a query's params, git's capabilities). */
static int
has_item(const char *s, size_t n, char sep, const char *item, size_t ilen)
{
	size_t i = 0;

	while (i < n) {
		size_t j = i;

		while (j < n && s[j] != sep)
			j++;
		if (j - i == ilen && memcmp(s + i, item, ilen) == 0)
			return 1;
		i = j + 1;
	}
	return 0;
}

static int
content_type_is(const struct h1_message *m, const char *lit)
{
	const struct h1_header *ct = h1_find_header(m, "content-type");

	return ct != NULL && sluice_iov_ieq(ct->value, ct->value_len, lit);
}

enum refuse_proto
refuse_proto_of(const struct conn *c, const struct h1_message *m, const char *path, size_t path_len)
{
	const struct h1_header *ct;
	const char *q = memchr(path, '?', path_len);
	size_t plen = q != NULL ? (size_t)(q - path) : path_len, qlen = 0;

	if (q != NULL) {
		const char *hash = memchr(q, '#', path_len - plen);

		q++;
		qlen = (hash != NULL ? (size_t)(hash - q) : path_len - plen - 1);
	}
	if (m->method_len == 3 && memcmp(m->method, "GET", 3) == 0 && ends_with(path, plen, SLUICE_LIT("/info/refs"))) {
		/* the query (without '?', up to a '#') has "service=<svc>" */
		if (has_item(q, qlen, '&', SLUICE_LIT("service=git-upload-pack")))
			return REFUSE_PROTO_GIT_ADV_UPLOAD;
		if (has_item(q, qlen, '&', SLUICE_LIT("service=git-receive-pack")))
			return REFUSE_PROTO_GIT_ADV_RECEIVE;
		return REFUSE_PROTO_HTTP;
	}
	if (m->method_len != 4 || memcmp(m->method, "POST", 4) != 0)
		return REFUSE_PROTO_HTTP;
	if (ends_with(path, plen, SLUICE_LIT("/git-upload-pack")) && content_type_is(m, "application/x-git-upload-pack-request"))
		return REFUSE_PROTO_GIT_UPLOAD;
	if (ends_with(path, plen, SLUICE_LIT("/git-receive-pack")) &&
	    content_type_is(m, "application/x-git-receive-pack-request"))
		return REFUSE_PROTO_GIT_RECEIVE;
	/* gRPC is HTTP/2 only: "application/grpc", "application/grpc+proto", "application/grpc;..." */
	if (conn_ops(c)->stream && (ct = h1_find_header(m, "content-type")) != NULL && ct->value_len >= 16 &&
	    sluice_iov_ieq(ct->value, 16, "application/grpc") &&
	    (ct->value_len == 16 || ct->value[16] == '+' || ct->value[16] == ';'))
		return REFUSE_PROTO_GRPC;
	return REFUSE_PROTO_HTTP;
}

/* "<error>: rule <rule>: <reason>", at most REFUSE_TEXT_MAX bytes, control bytes (CR, LF) as spaces. */
static void
text_of(char *out, size_t cap, const char *error, const char *rule, const char *reason)
{
	size_t i;

	snprintf(out, cap, "%s: rule %s: %s", error != NULL ? error : "refused", rule != NULL ? rule : "?",
	         reason != NULL ? reason : "refused");
	for (i = 0; out[i] != '\0'; i++)
		if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
			out[i] = ' ';
}

/* One pkt-line: four hex digits of length (its own four included), then <s>. */
static void
pkt(struct evbuffer *out, const char *s, size_t len)
{
	evbuffer_add_printf(out, "%04zx", len + 4);
	evbuffer_add(out, s, len);
}

static void
answer_200(struct conn *c, const char *ctype, struct evbuffer *body, int keep)
{
	struct evbuffer *out = cio_out(c);

	evbuffer_add_printf(out,
	                    "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-cache\r\n%s\r\n",
	                    ctype, evbuffer_get_length(body), keep ? "" : "Connection: close\r\n");
	evbuffer_add_buffer(out, body);
}

/* The report-status of the refused push whose body starts with <g->buf>, in <body>. */
static void
git_report(struct refuse_git *g, struct evbuffer *body)
{
	const char *refs[REFUSE_GIT_REFS_MAX], *caps, *buf;
	size_t lens[REFUSE_GIT_REFS_MAX], n = 0, caps_len = 0, i, len = evbuffer_get_length(g->buf);
	size_t tl = strlen(g->text), band = 0;
	struct evbuffer *rep = evbuffer_new();
	char line[GIT_LINE_MAX];
	long sec;

	if (rep == NULL)
		fatalx("out of memory");
	buf = len > 0 ? (const char *)evbuffer_pullup(g->buf, -1) : "";
	sec = policy_git_refs(buf, len, refs, lens, REFUSE_GIT_REFS_MAX, &n, &caps, &caps_len);
	if (sec > 0 && n > 0) {
		/* every ref is refused: the push is refused whole */
		pkt(rep, SLUICE_LIT("unpack ok\n"));
		for (i = 0; i < n; i++) {
			int l = snprintf(line, sizeof(line), "ng %.*s %s\n", (int)lens[i], refs[i], g->text);

			if (l > 0 && (size_t)l < sizeof(line))
				pkt(rep, line, (size_t)l);
		}
		if (has_item(caps, caps_len, ' ', SLUICE_LIT("side-band-64k")))
			band = GIT_PKT_MAX;
		else if (has_item(caps, caps_len, ' ', SLUICE_LIT("side-band")))
			band = GIT_PKT_SMALL;
	} else {
		/* the refs are not known (the body's start is gone or malformed): git prints "remote unpack failed: ..." */
		int l = snprintf(line, sizeof(line), "unpack %.*s\n", (int)tl, g->text);

		pkt(rep, line, (size_t)l);
	}
	evbuffer_add(rep, SLUICE_LIT("0000"));
	if (band == 0) {
		evbuffer_add_buffer(body, rep);
	} else {
		/* side-band: the report's pkt-lines cut into band-1 packets (byte 1, then data), then a flush */
		char chunk[GIT_PKT_MAX];
		int got;

		chunk[0] = '\001';
		while ((got = evbuffer_remove(rep, chunk + 1, band - 5)) > 0)
			pkt(body, chunk, (size_t)got + 1);
		evbuffer_add(body, SLUICE_LIT("0000"));
	}
	evbuffer_free(rep);
}

/* ---- the answers ---- */

static void
git_err(struct conn *c, const char *ctype, const char *text, int keep)
{
	struct evbuffer *body = evbuffer_new();
	char line[REFUSE_TEXT_MAX + 8];
	int l = snprintf(line, sizeof(line), "ERR %s", text);

	if (body == NULL)
		fatalx("out of memory");
	pkt(body, line, (size_t)l);
	answer_200(c, ctype, body, keep);
	evbuffer_free(body);
}

/* grpc-message: percent-encoded (gRPC's spec: bytes outside 0x20-0x7e, and '%'). */
static int
grpc_keeps(unsigned char b)
{
	return b >= 0x20 && b <= 0x7e && b != '%';
}

static void
grpc_answer(struct conn *c, int status, const char *text)
{
	char msg[PCT_ENCODED_MAX(REFUSE_TEXT_MAX) + 1];

	msg[pct_encode(msg, text, strnlen(text, REFUSE_TEXT_MAX), grpc_keeps, PCT_UPPER)] = '\0';
	/* trailers-only: a HEADERS frame that ends the stream (h2srv_head_submit: no body) */
	evbuffer_add_printf(cio_out(c),
	                    "HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\ngrpc-status: %d\r\n"
	                    "grpc-message: %s\r\nContent-Length: 0\r\n\r\n",
	                    status == 403 ? 7 : 8, msg);
}

static struct refuse_git *
git_of(struct req *r)
{
	if (r->refuse == NULL) {
		r->refuse = xcalloc(1, sizeof(*r->refuse));
		if ((r->refuse->buf = evbuffer_new()) == NULL)
			fatalx("out of memory");
	}
	return r->refuse;
}

void
refuse_proto_keep_section(struct conn *c, const char *buf, size_t len)
{
	struct refuse_git *g;

	if (c->req->proto != REFUSE_PROTO_GIT_RECEIVE || len == 0)
		return;
	g = git_of(c->req);
	evbuffer_drain(g->buf, evbuffer_get_length(g->buf));
	evbuffer_add(g->buf, buf, len < REFUSE_GIT_SECTION_MAX ? len : REFUSE_GIT_SECTION_MAX);
	g->kept = 1;
}

/*
 * The push's body is read (or its bound or timer is reached): the report is
 * written, and <end> says how the session ends the request (recorded and
 * audited already; the connection closes).
 */
static void
git_finish(struct conn *c, struct refusal *end)
{
	struct req *r = c->req;
	struct refuse_git *g = r->refuse;
	struct evbuffer *body = evbuffer_new();

	if (body == NULL)
		fatalx("out of memory");
	g->draining = 0;
	if (!r->body_done)
		log_info("c%llu: refused push: %llu bytes of its body read and discarded, the rest not read",
		         (unsigned long long)c->id, (unsigned long long)g->drained);
	git_report(g, body);
	answer_200(c, "application/x-git-receive-pack-result", body, 0);
	evbuffer_free(body);
	r->client_keep_alive = 0;
	refusal_close(end, g->status, REFUSAL_DENIED, g->rule, g->text);
	end->quiet = 1;
}

int
refuse_proto_answer(struct conn *c, const struct refusal *rf, struct refusal *end)
{
	struct req *r = c->req;
	struct refuse_git *g;
	char text[REFUSE_TEXT_MAX + 1];
	int keep, status = rf->status, audit = !rf->quiet;
	const char *error = refusal_err_text(rf->err), *rule = rf->rule, *reason = rf->reason;

	/* a 429's <reason> says when the limit resets: the retry time reaches the client in the text */
	/* policy refusals and limits; gRPC also a body too large (RESOURCE_EXHAUSTED); the rest keep their JSON */
	if (r == NULL || r->proto == REFUSE_PROTO_HTTP ||
	    !(status == 403 || status == 429 || (status == 413 && r->proto == REFUSE_PROTO_GRPC)))
		return REFUSE_PROTO_JSON;
	text_of(text, sizeof(text), error, rule, reason);
	log_info("c%llu: %s refused in %s's protocol: %s", (unsigned long long)c->id, r->method,
	         r->proto == REFUSE_PROTO_GRPC ? "gRPC" : "git", text);
	keep = http_answer_keep(c, status);
	switch ((enum refuse_proto)r->proto) {
	case REFUSE_PROTO_GIT_ADV_UPLOAD:
		git_err(c, "application/x-git-upload-pack-advertisement", text, keep);
		break;
	case REFUSE_PROTO_GIT_ADV_RECEIVE:
		git_err(c, "application/x-git-receive-pack-advertisement", text, keep);
		break;
	case REFUSE_PROTO_GIT_UPLOAD:
		git_err(c, "application/x-git-upload-pack-result", text, keep);
		break;
	case REFUSE_PROTO_GRPC:
		grpc_answer(c, status, text);
		break;
	case REFUSE_PROTO_GIT_RECEIVE:
		g = git_of(r);
		g->status = status;
		snprintf(g->rule, sizeof(g->rule), "%s", rule != NULL ? rule : "?");
		memcpy(g->text, text, sizeof(g->text));
		/* the body's start so far (a body held for a rule or a secret) names the refs */
		if (!g->kept && r->hold != NULL && evbuffer_get_length(g->buf) == 0)
			evbuffer_remove_buffer(r->hold, g->buf, REFUSE_GIT_SECTION_MAX);
		/* recorded now, as every refusal is when it is decided */
		r->status = status;
		r->rule = g->rule;
		r->reason = g->text;
		if (audit)
			http_audit_request(c, AUDIT_VERDICT_DENY);
		if (r->body_done || r->body == H1_BODY_NONE ||
		    (c->state != CONN_S_REQ_HEAD && c->state != CONN_S_HOLD)) {
			git_finish(c, end);
			return REFUSE_PROTO_ANSWERED;
		}
		/* read the pack the client is sending (and discard it), then report: see the top of the file */
		g->draining = 1;
		if (c->state != CONN_S_HOLD)
			conn_set_state(c, CONN_S_HOLD);
		cio_read(c, 1);
		conn_arm_timer(c, conn_limits(c)->body_ms);
		return REFUSE_PROTO_DRAINING;
	default:
		return REFUSE_PROTO_JSON;
	}
	*end = *rf;
	end->close = !keep;
	return REFUSE_PROTO_ANSWERED;
}

int
refuse_proto_draining(const struct conn *c)
{
	return c->req != NULL && c->req->refuse != NULL && c->req->refuse->draining;
}

int
refuse_proto_pump(struct conn *c, struct refusal *end)
{
	struct req *r = c->req;
	struct refuse_git *g = r->refuse;
	struct evbuffer *cin = cio_in(c);
	const char *err = NULL;
	int p, progress = 0;

	for (;;) {
		size_t have = evbuffer_get_length(g->buf);

		if (r->body_done || g->drained > REFUSE_GIT_DRAIN_MAX)
			break;
		p = req_body_move(c, cin, g->buf, 0, &err);
		if (p <= 0)
			break;
		progress = 1;
		/* the start is kept for the report; the rest is discarded as it comes */
		if (g->kept || have >= REFUSE_GIT_SECTION_MAX) {
			size_t now = evbuffer_get_length(g->buf);

			evbuffer_drain(g->buf, now - have);
			g->drained += now - have;
		} else if (evbuffer_get_length(g->buf) > REFUSE_GIT_SECTION_MAX) {
			size_t over = evbuffer_get_length(g->buf) - REFUSE_GIT_SECTION_MAX;
			struct evbuffer *tmp = evbuffer_new();

			if (tmp == NULL)
				fatalx("out of memory");
			evbuffer_remove_buffer(g->buf, tmp, REFUSE_GIT_SECTION_MAX);
			evbuffer_free(g->buf);
			g->buf = tmp;
			g->drained += over;
		}
	}
	if (r->body_done || g->drained > REFUSE_GIT_DRAIN_MAX || c->client_eof || (err != NULL)) {
		git_finish(c, end);
		return 1;
	}
	if (progress)
		conn_arm_timer(c, conn_limits(c)->body_ms);
	return 0;
}

void
refuse_proto_timeout(struct conn *c, struct refusal *end)
{
	git_finish(c, end);
}

void
refuse_proto_free(struct req *r)
{
	if (r->refuse == NULL)
		return;
	evbuffer_free(r->refuse->buf);
	free(r->refuse);
	r->refuse = NULL;
}
