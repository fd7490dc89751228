/*
 * test_semreq.c - semantic rules in the request path (proxy/judge/semantic.c)
 * without a gateway: a request head parsed by the real parser, a struct
 * conn / struct req of the shared fixture (sessfake.h), the client's body bytes arriving in a test
 * buffer (cio_in) a piece at a time and moved by a fake req_body_hold (the
 * net below), and a recording session above (the refusals semantic.c
 * returns, recorded as the session would answer them: sessfake.h;
 * the steps sem_hold_pump returns, counted as hold.c would take them).  Covered: the body bound (413 from Content-Length at once, and
 * from a chunked body as soon as it grows past max_body), a body decided only
 * once whole whatever the pieces, allow and deny with the rule's id, report
 * mode (passes, audit members say what would have happened), a hold with no
 * approvals registry (503, fail closed) and with no body (parked at once),
 * and the gateway's bound on held bytes (503), given back at the request's end.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "proxy/h2/h2.h"
#include "proxy/core/context.h"
#include "audit/writer.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/semantic_int.h"
#include "tests/unit/proxy/sessfake.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/core/refusal.h"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - id: post-to-bots\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /chat\n"
	"          json: { \"$.channel\": { in: [C0BOTS] } }\n"
	"          max_body: 64\n"
	"      - id: refunds\n"
	"        hold: { method: POST, path: /refunds, timeout: 1m }\n"
	"      - id: ping\n"
	"        hold: { method: GET, path: /ping }\n"
	"  report.test:\n"
	"    mode: report\n"
	"    rules:\n"
	"      - id: no-admin\n"
	"        deny: { path: \"/admin/**\" }\n"
	"  mcp.test:\n"
	"    mcp: { endpoint: /mcp, error_code: -32005 }\n"
	"    rules:\n"
	"      - { id: list, allow: { method: POST, path: /mcp, mcp: { method: [tools/list] } } }\n"
	"      - { id: reads, allow: { method: POST, path: /mcp, mcp: { tool: \"get_*\", audit: [\"$.repo\"] } } }\n"
	"      - id: pay\n"
	"        allow: { method: POST, path: /mcp, mcp: { tool: pay },\n"
	"                 budget: { sum: \"json:$.params.arguments.amount\", max: 10, per: day } }\n"
	"      - id: tip\n"
	"        allow: { method: POST, path: /mcp, mcp: { tool: tip },\n"
	"                 budget: { sum: \"json:$.params.arguments.amount\", max: 3, per: day } }\n"
	"  mcp-open.test:\n"
	"    mcp: { endpoint: /mcp }\n"
	"    rules:\n"
	"      - { id: anything, allow: { method: POST, path: /mcp } }\n";

/* ---- the session above and the net below ---- */

static struct {
	int sent, dialled, waits;
} seen;
static struct evbuffer *client_in;   /* the client's bytes not read yet (cio_in) */
static int chunked_end;              /* the fake chunked body ends once client_in is empty */
static size_t fed;                   /* body bytes the client has sent so far */

/* What the session does with the step sem_hold_pump returns (proxy/session/hold.c), counted. */
static int
step_taken(int step)
{
	switch (step) {
	case HOLD_SEND_WHOLE:
		seen.sent++;     /* the held body is whole and allowed: cred_body_finish, then the dial */
		return 0;
	case HOLD_SEND_STREAM:
	case HOLD_SEND:
		seen.dialled++;  /* the command section goes first (cred_body_stream), then the dial */
		return 0;
	case HOLD_MORE:
	case HOLD_MORE_MOVED:
		seen.waits++;    /* more of the body is awaited */
		return 0;
	case HOLD_REFUSED:
		return -1;
	default:
		return 0;
	}
}

int
relay_dial(struct conn *c, struct refusal *rf)
{
	(void)c, (void)rf;
	seen.dialled++;
	return 0;
}

struct evbuffer *
cio_in(struct conn *c)
{
	(void)c;
	return client_in;
}

/* core/body.c's: moves what the framing allows from the client's input to r->hold (the body as sent: length,
 * or "chunked" here raw) */
int
req_body_hold(struct conn *c, struct evbuffer *in, struct refusal *rf)
{
	struct req *r = c->req;
	struct evbuffer *out = r->hold;
	size_t n = evbuffer_get_length(in);

	(void)rf;
	if (r->body == H1_BODY_LENGTH && n > r->body_left)
		n = (size_t)r->body_left;
	if (n == 0 && !(r->body == H1_BODY_CHUNKED && chunked_end && !r->body_done))
		return 0;
	evbuffer_remove_buffer(in, out, n);
	if (r->body == H1_BODY_LENGTH)
		r->body_left -= n;
	if ((r->body == H1_BODY_LENGTH && r->body_left == 0) ||
	    (r->body == H1_BODY_CHUNKED && chunked_end && evbuffer_get_length(in) == 0))
		r->body_done = 1;
	return 1;
}

static void
unexpected(const char *what)
{
	fail_msg("semantic.c called %s", what);
}

void
cio_read(struct conn *c, int on)
{
	(void)c, (void)on;
}

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	(void)c, (void)ms;
}

void
conn_set_state(struct conn *c, enum conn_state s)
{
	c->state = s;
}

void
conn_close(struct conn *c)
{
	(void)c;
	unexpected("conn_close");
}

void
conn_pump(struct conn *c)
{
	(void)c;
	unexpected("conn_pump");
}

int
cred_scan_begin(struct conn *c)
{
	(void)c;
	unexpected("cred_scan_begin");
	return -1;
}

void
http_audit_request(struct conn *c, enum audit_verdict verdict)
{
	(void)c, (void)verdict;
}

const char *
conn_req_id(struct conn *c)
{
	(void)c;
	return "1-1";
}

void
refuse_proto_keep_section(struct conn *c, const char *buf, size_t len)
{
	(void)c, (void)buf, (void)len;
}

void
sem_budget_refund(struct conn *c)
{
	(void)c;
	unexpected("sem_budget_refund");
}


int
approvals_add(struct approvals *a, const struct approval_info *info, unsigned timeout_ms, struct event_base *base,
              approval_cb cb, void *arg, char id[17])
{
	(void)a, (void)info, (void)timeout_ms, (void)base, (void)cb, (void)arg, (void)id;
	unexpected("approvals_add");
	return SLUICE_EINVAL;
}

void
approvals_cancel(struct approvals *a, const char *id)
{
	(void)a, (void)id;
}

const char *
approvals_decision_name(int decision)
{
	return decision == 1 ? "approved" : "other";
}

/* ---- fixture (sessfake.h): the parsed head of the current case ---- */

static struct h1_message msg;
static char head_buf[1024];

static int
setup(void **state)
{
	struct fake_fx *f = fake_fx_new(yaml);

	if (f == NULL)
		return -1;
	client_in = evbuffer_new();
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fake_fx *f = *state;

	evbuffer_free(client_in);
	fake_fx_free(f);
	return 0;
}

/* Parses <head> toward <host> and runs sem_head as http.c does: its return. */
static int
head(struct fake_fx *f, const char *host, const char *h)
{
	static const struct h1_limits lim = {8192, 4096, 100};
	const char *err = NULL;
	int status = 0, n;

	memset(&seen, 0, sizeof(seen));
	chunked_end = 0;
	fed = 0;
	atomic_store(&f->gw.held, 0);   /* a failed case before does not fail the next */
	evbuffer_drain(client_in, evbuffer_get_length(client_in));
	fake_fx_conn(f, host);
	snprintf(head_buf, sizeof(head_buf), "%s", h);
	n = h1_parse_request(head_buf, strlen(head_buf), &lim, &msg, &err, &status);
	assert_int_equal(n, (int)strlen(head_buf));
	memcpy(f->r.method, msg.method, msg.method_len);
	f->r.method_len = msg.method_len;
	f->r.path = xstrndup(msg.target, msg.target_len);
	f->r.path_len = msg.target_len;
	f->r.body = msg.framing;
	f->r.body_left = msg.content_length;
	f->r.client_keep_alive = 1;
	return fake_ret(&f->c, sem_head(&f->c, &msg, &fake_rf));
}

/* The body arrives in pieces of <piece> bytes, the session pumping after each, as http.c does in CONN_S_HOLD. */
static void
body(struct fake_fx *f, const char *b, size_t piece)
{
	size_t len = strlen(b), off;

	assert_true(sem_holds_body(&f->c));
	f->r.hold = evbuffer_new();
	for (off = 0; off < len && fake_ans.n + seen.sent == 0; off += piece) {
		evbuffer_add(client_in, b + off, len - off < piece ? len - off : piece);
		fed += len - off < piece ? len - off : piece;
		if (off + piece >= len)
			chunked_end = 1;
		fake_ret(&f->c, step_taken(sem_hold_pump(&f->c, &fake_rf)));
		/* decided only once the body is whole */
		if (off + piece < len && f->r.body != H1_BODY_CHUNKED)
			assert_int_equal(seen.sent, 0);
	}
}

static void
end(struct fake_fx *f)
{
	sem_req_free(&f->c);
	assert_null(f->r.sem);
	if (f->r.hold != NULL)
		evbuffer_free(f->r.hold);
	f->r.hold = NULL;
	free(f->r.path);
	assert_int_equal(atomic_load(&f->gw.held), 0);   /* every held byte counted is given back */
}

/* ---- the body bound ---- */

static void
test_body_bound(void **state)
{
	struct fake_fx *f = *state;
	char big[200];

	/* a Content-Length over max_body: 413 at the head, nothing held */
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 65\r\n\r\n"), -1);
	assert_int_equal(fake_ans.status, 413);
	assert_string_equal(fake_ans.rule, "max_body");
	assert_non_null(strstr(fake_ans.reason, "(64 bytes)"));
	assert_int_equal(f->r.client_keep_alive, 0);
	end(f);
	/* chunked: 413 as soon as it grows past 64, before it ends */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"),
	                 0);
	body(f, big, 40);
	assert_int_equal(fake_ans.status, 413);
	assert_int_equal(seen.sent, 0);
	assert_true(fed < strlen(big));   /* refused before the end arrived */
	end(f);
	/* exactly 64 is held and decided */
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 64\r\n\r\n"), 0);
	body(f, "{\"channel\":\"C0BOTS\",\"text\":\"0123456789012345678901234567890123\"}", 7);
	assert_int_equal(fake_ans.n, 0);
	assert_int_equal(seen.sent, 1);
	end(f);
}

/* ---- decided with the body, whatever its pieces ---- */

static void
test_decided_whole(void **state)
{
	static const char *const bodies[] = {"{\"channel\":\"C0BOTS\"}", "{\"channel\":\"C0EVIL\"}"};
	struct fake_fx *f = *state;
	size_t piece, i;
	char h[256];

	for (i = 0; i < 2; i++)
		for (piece = 1; piece <= strlen(bodies[i]); piece++) {
			snprintf(h, sizeof(h), "POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
			         "Content-Length: %zu\r\n\r\n", strlen(bodies[i]));
			assert_int_equal(head(f, "api.example.test", h), 0);
			assert_int_equal(fake_ans.n, 0);
			body(f, bodies[i], piece);
			if (i == 0) {
				assert_int_equal(seen.sent, 1);
				assert_int_equal(fake_ans.n, 0);
				assert_string_equal(f->r.rule, "post-to-bots");
			} else {
				assert_int_equal(seen.sent, 0);
				assert_int_equal(fake_ans.status, 403);
				assert_string_equal(fake_ans.rule, "default");
			}
			/* the body the decision read is what is sent: all of it is in r->hold */
			assert_int_equal(evbuffer_get_length(f->r.hold), strlen(bodies[i]));
			end(f);
		}
}

/* ---- report mode: passes, and the audit says what enforcement would have done ---- */

static void
test_report_mode(void **state)
{
	struct fake_fx *f = *state;
	struct audit_rec a;

	assert_int_equal(head(f, "report.test", "GET /admin/users HTTP/1.1\r\nHost: report.test\r\n\r\n"), 0);
	assert_int_equal(fake_ans.n, 0);
	assert_non_null(f->r.sem);
	memset(&a, 0, sizeof(a));
	sem_audit_fill(&f->r, &a);
	assert_non_null(a.report_verdict);
	assert_string_equal(a.report_verdict, "deny");
	assert_string_equal(a.report_rule, "no-admin");
	end(f);
	/* not matched by the report-mode rule: the host's default is reported, and the request passes (mode report) */
	assert_int_equal(head(f, "report.test", "GET /other HTTP/1.1\r\nHost: report.test\r\n\r\n"), 0);
	assert_int_equal(fake_ans.n, 0);
	memset(&a, 0, sizeof(a));
	sem_audit_fill(&f->r, &a);
	assert_non_null(a.mode);
	assert_string_equal(a.mode, "report");
	end(f);
}

/* ---- holds fail closed without an approvals registry ---- */

static void
test_hold_unavailable(void **state)
{
	struct fake_fx *f = *state;

	/* no body: parked at once (sem_park_start), and with no registry refused 503 */
	assert_int_equal(head(f, "api.example.test", "GET /ping HTTP/1.1\r\nHost: api.example.test\r\n\r\n"), 0);
	assert_true(sem_park_pending(&f->c));
	f->c.state = CONN_S_HOLD;  /* the session enters CONN_S_HOLD first (http.c), then parks */
	fake_ret(&f->c, sem_park_start(&f->c, &fake_rf));
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "approval unavailable");
	assert_int_equal(seen.dialled + seen.sent, 0);
	assert_false(sem_waiting(&f->c));
	end(f);
	/* with a body: held whole first, then the same */
	assert_int_equal(head(f, "api.example.test", "POST /refunds HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Length: 9\r\n\r\n"), 0);
	assert_false(sem_park_pending(&f->c));
	body(f, "id=pi_123", 4);
	assert_int_equal(fake_ans.status, 503);
	assert_int_equal(seen.dialled + seen.sent, 0);
	end(f);
}

/* ---- the gateway's bound on held bytes ---- */

static void
test_held_bound(void **state)
{
	struct fake_fx *f = *state;

	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n"), 0);
	atomic_store(&f->gw.held, PROXY_HELD_MAX - 10);   /* other requests hold all but 10 bytes */
	body(f, "{\"channel\":\"C0BOTS\"}", 20);
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "gateway busy");
	assert_int_equal(seen.sent, 0);
	sem_req_free(&f->c);
	assert_int_equal(atomic_load(&f->gw.held), PROXY_HELD_MAX - 10);   /* its 20 given back */
	atomic_store(&f->gw.held, 0);
	end(f);
}

/* ---- MCP endpoints (issue 23): judged per JSON-RPC message, refusals answered as JSON-RPC errors ---- */

static char answer_text[4096];

/* POSTs <body> to <host>'s /mcp with the extra head lines <hdrs>, the body whole: the step sem_hold_pump returns;
 * a refusal is rendered as the session answers it (respond_refusal) into answer_text, then recorded (fake_ret). */
static int
mcp_post(struct fake_fx *f, const char *host, const char *hdrs, const char *b)
{
	char h[1024];
	struct evbuffer *out;
	size_t n;
	int step;

	snprintf(h, sizeof(h), "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n%sContent-Length: %zu\r\n\r\n",
	         host, hdrs, strlen(b));
	answer_text[0] = '\0';
	if (head(f, host, h) != 0) {
		snprintf(answer_text, sizeof(answer_text), "head refused %d", fake_ans.status);
		return HOLD_REFUSED;
	}
	assert_true(sem_holds_body(&f->c));  /* held whatever the rules read */
	f->r.hold = evbuffer_new();
	evbuffer_add(client_in, b, strlen(b));
	step = sem_hold_pump(&f->c, &fake_rf);
	if (step == HOLD_REFUSED) {
		out = evbuffer_new();
		respond_refusal(out, &fake_rf, host, 0);
		n = evbuffer_get_length(out) < sizeof(answer_text) - 1 ? evbuffer_get_length(out) : sizeof(answer_text) - 1;
		evbuffer_remove(out, answer_text, n);
		answer_text[n] = '\0';
		evbuffer_free(out);
		fake_ret(&f->c, -1);
	}
	return step;
}

static void
mcp_end(struct fake_fx *f)
{
	end(f);
	assert_null(f->r.mcp);  /* freed with the request (sem_req_free) */
}

static void
test_mcp_single(void **state)
{
	struct fake_fx *f = *state;
	struct audit_rec a;
	json_t *id;

	/* allowed: the message is kept for the response side and the audit */
	assert_int_equal(mcp_post(f, "mcp.test", "", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}"),
	                 HOLD_SEND_WHOLE);
	assert_non_null(f->r.mcp);
	id = json_integer(7);
	assert_int_equal(mcp_req_method_of(&f->r, id), POLICY_MCP_M_TOOLS_LIST);
	json_decref(id);
	id = json_string("7");  /* "7" is another id than 7 */
	assert_int_equal(mcp_req_method_of(&f->r, id), POLICY_MCP_M_NONE);
	json_decref(id);
	mcp_end(f);
	/* the audit members: only the audit: path in clear */
	assert_int_equal(mcp_post(f, "mcp.test", "", "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"tools/call\","
	                                             "\"params\":{\"name\":\"get_issue\",\"arguments\":{\"repo\":\"w\",\"t\":\"secret\"}}}"),
	                 HOLD_SEND_WHOLE);
	memset(&a, 0, sizeof(a));
	mcp_req_audit_fill(&f->r, &a);
	assert_string_equal(a.mcp_method, "tools/call");
	assert_string_equal(a.mcp_tool, "get_issue");
	assert_string_equal(a.mcp_rpc_id, "\"q\"");
	assert_string_equal(a.mcp_args, "{\"$.repo\":\"w\"}");
	mcp_end(f);
	/* denied: HTTP 200, a JSON-RPC error with the request's id and the host's code */
	assert_int_equal(mcp_post(f, "mcp.test", "", "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\","
	                                             "\"params\":{\"name\":\"delete_repo\"}}"),
	                 HOLD_REFUSED);
	assert_int_equal(fake_ans.status, 403);
	assert_non_null(strstr(answer_text, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(answer_text, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-32005,\"message\":"
	                                    "\"denied by policy\",\"data\":{\"rule\":\"default\""));
	assert_int_equal(seen.sent + seen.dialled, 0);
	/* the record: the verdict's status (403, above) and the one the answer had */
	memset(&a, 0, sizeof(a));
	mcp_req_audit_fill(&f->r, &a);
	assert_int_equal(a.http_status, 200);
	mcp_end(f);
	/* a notification denied: no id to answer, a 403 with the JSON reason */
	assert_int_equal(mcp_post(f, "mcp.test", "", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}"), HOLD_REFUSED);
	assert_non_null(strstr(answer_text, "HTTP/1.1 403 "));
	assert_null(strstr(answer_text, "jsonrpc"));
	memset(&a, 0, sizeof(a));
	mcp_req_audit_fill(&f->r, &a);
	assert_int_equal(a.http_status, 0);  /* answered at its status */
	mcp_end(f);
	/* a client-posted response: refused (no server request seen) */
	assert_int_equal(mcp_post(f, "mcp.test", "", "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}"), HOLD_REFUSED);
	assert_string_equal(fake_ans.rule, "mcp");
	assert_non_null(strstr(answer_text, "HTTP/1.1 403 "));
	mcp_end(f);
}

static void
test_mcp_batch(void **state)
{
	struct fake_fx *f = *state;
	struct audit_rec a;

	assert_int_equal(mcp_post(f, "mcp.test", "", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},"
	                                             "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"get_x\"}}]"),
	                 HOLD_SEND_WHOLE);
	mcp_end(f);
	/* one element denied: one error per request id, in a JSON array; the notification gets none */
	assert_int_equal(mcp_post(f, "mcp.test", "", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"},"
	                                             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/y\"},"
	                                             "{\"jsonrpc\":\"2.0\",\"id\":\"z\",\"method\":\"tools/call\",\"params\":{\"name\":\"drop\"}}]"),
	                 HOLD_REFUSED);
	assert_non_null(strstr(answer_text, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(answer_text, "\r\n\r\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":"));
	assert_non_null(strstr(answer_text, "},{\"jsonrpc\":\"2.0\",\"id\":\"z\",\"error\":"));
	memset(&a, 0, sizeof(a));
	mcp_req_audit_fill(&f->r, &a);
	assert_non_null(a.mcp_batch);
	/* the placeholder of its fingerprint, which the audit writer fills (AUDIT_ARGS_HMAC_PH) */
	assert_non_null(strstr(a.mcp_batch, "\"tool\":\"drop\",\"rpc_id\":\"z\"" AUDIT_ARGS_HMAC_PH
	                                     ",\"verdict\":\"deny\",\"rule\":\"default\""));
	assert_int_equal(a.mcp_nhmac, 1);
	assert_null(a.mcp_tool);
	mcp_end(f);
}

#define PAY(id, tool, n) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\",\"params\":{\"name\":\"" tool \
                         "\",\"arguments\":{\"amount\":" #n "}}}"

/* a batch whose elements take from budgets: allowed, each element's budget and amount kept for sem_admit */
static void
test_mcp_batch_budgets(void **state)
{
	struct fake_fx *f = *state;
	struct audit_rec a;
	struct mcp_req_msg *el;
	char body[8192];
	size_t i, n;

	/* the same budget twice and another one: allowed (sem_admit takes them, all or none) */
	assert_int_equal(mcp_post(f, "mcp.test", "", "[" PAY(1, "pay", 4) "," PAY(2, "pay", 5) "," PAY(3, "tip", 1) "]"),
	                 HOLD_SEND_WHOLE);
	assert_null(f->r.sem->budget);  /* the batch takes none of its own */
	assert_non_null(el = mcp_req_budget_at(&f->r, 0));
	assert_string_equal(el->budget->key, "rule:pay");
	assert_int_equal(el->amount, 4 * INT64_C(1000000));
	assert_non_null(el = mcp_req_budget_at(&f->r, 1));
	assert_int_equal(el->amount, 5 * INT64_C(1000000));
	assert_non_null(el = mcp_req_budget_at(&f->r, 2));
	assert_string_equal(el->budget->key, "rule:tip");
	assert_null(mcp_req_budget_at(&f->r, 3));
	memset(&a, 0, sizeof(a));
	mcp_req_audit_fill(&f->r, &a);
	assert_non_null(strstr(a.mcp_batch, "\"budget\":{\"key\":\"rule:pay\",\"amount\":\"5\"}"));
	mcp_end(f);
	/* more takes than MCP_REQ_BUDGET_TAKES_MAX: refused whole, one error per id */
	n = (size_t)snprintf(body, sizeof(body), "[");
	for (i = 0; i <= MCP_REQ_BUDGET_TAKES_MAX; i++)
		n += (size_t)snprintf(body + n, sizeof(body) - n, "%s{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"tools/call\","
		                      "\"params\":{\"name\":\"tip\",\"arguments\":{\"amount\":0}}}", i > 0 ? "," : "", i);
	snprintf(body + n, sizeof(body) - n, "]");
	assert_int_equal(mcp_post(f, "mcp.test", "", body), HOLD_REFUSED);
	assert_int_equal(fake_ans.status, 403);
	assert_string_equal(fake_ans.rule, "mcp");
	assert_non_null(strstr(answer_text, "at most 16 times"));
	assert_non_null(strstr(answer_text, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(seen.sent + seen.dialled, 0);
	mcp_end(f);
}

static void
test_mcp_bad(void **state)
{
	static const char *const bad[] = {
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", "[]", "[1]", "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"x\"}", "{\"jsonrpc\":\"2.0\",\"id\":1,\"Method\":\"ping\"}",
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a b\"}}",
	};
	struct fake_fx *f = *state;
	size_t i;

	/* on a host whose only rule reads no body, the body is held and read all the same: 400, JSON-RPC id null */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(mcp_post(f, "mcp-open.test", "", bad[i]), HOLD_REFUSED);
		assert_int_equal(fake_ans.status, 400);
		assert_string_equal(fake_ans.rule, "mcp");
		assert_non_null(strstr(answer_text, "HTTP/1.1 400 "));
		assert_non_null(strstr(answer_text, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32"));
		assert_int_equal(seen.sent + seen.dialled, 0);
		mcp_end(f);
	}
	assert_int_equal(mcp_post(f, "mcp-open.test", "", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"anything\"}"),
	                 HOLD_SEND_WHOLE);
	mcp_end(f);
}

static void
test_mcp_headers(void **state)
{
	static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"get_a\","
	                           "\"arguments\":{\"Repo\":\"w\",\"n\":12,\"ok\":true,\"r\":1.5}}}";
	static const struct {
		const char *hdrs;
		int ok;
	} cases[] = {
		{"Mcp-Method: tools/call\r\nMcp-Name: get_a\r\n", 1},
		{"Mcp-Name: =?base64?Z2V0X2E=?=\r\n", 1},            /* padded base64 of get_a */
		{"Mcp-Param-repo: w\r\nMcp-Param-N: 12\r\nMcp-Param-ok: true\r\n", 1},
		{"Mcp-Session-Id: abc\r\n", 1},
		{"Mcp-Method: tools/list\r\n", 0},
		{"Mcp-Name: get_b\r\n", 0},
		{"Mcp-Name: =?base64?Z2V0X2I=?=\r\n", 0},            /* get_b */
		{"Mcp-Name: =?base64?!!!!?=\r\n", 0},
		{"Mcp-Name: get_a\r\nMcp-Name: get_a\r\n", 0},      /* twice */
		{"Mcp-Param-Repo: x\r\n", 0},
		{"Mcp-Param-N: 012\r\n", 0},
		{"Mcp-Param-r: 1.5\r\n", 0},                         /* a real: cannot be checked exactly */
		{"Mcp-Param-missing: x\r\n", 0},
		{"Mcp-Param-ok: true\r\nMcp-Param-ok: true\r\n", 0},
	};
	struct fake_fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int step = mcp_post(f, "mcp.test", cases[i].hdrs, call);

		if (cases[i].ok) {
			assert_int_equal(step, HOLD_SEND_WHOLE);
		} else {
			assert_int_equal(step, HOLD_REFUSED);
			assert_int_equal(fake_ans.status, 400);
			assert_non_null(strstr(answer_text, "\"code\":-32020"));
		}
		mcp_end(f);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_bound),
		cmocka_unit_test(test_decided_whole),
		cmocka_unit_test(test_report_mode),
		cmocka_unit_test(test_hold_unavailable),
		cmocka_unit_test(test_held_bound),
		cmocka_unit_test(test_mcp_single),
		cmocka_unit_test(test_mcp_batch),
		cmocka_unit_test(test_mcp_batch_budgets),
		cmocka_unit_test(test_mcp_bad),
		cmocka_unit_test(test_mcp_headers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
