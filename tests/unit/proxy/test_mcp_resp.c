/*
 * tests/unit/proxy/test_mcp_resp.c - MCP answers through the real session
 * over the fake net (netfake.h): proxy/judge/mcp_resp.c as the relay drives
 * it.  A JSON answer split in two is held, filtered and sent with its new
 * Content-Length (nothing before its end); an SSE answer fed one byte at a
 * time lets a heartbeat through before the event after it is complete, and
 * the list event is filtered; a server-to-client request in an event is
 * remembered in the gateway's table and answered by POSTs on other connections (judged as answers to their
 * methods, once, never by another sandbox: mcp_peer.c); an answer off the endpoint, or of
 * another type, passes untouched; an encoded one is refused (502).  Each
 * request ends once (teardown), and ASan/LSan watch the frees.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <jansson.h>
#include "common/sluice.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/judge/mcp_peer.h"
#include "proxy/judge/limits.h"
#include "common/clock.h"
#include "tests/unit/proxy/netfake.h"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"default: deny\n"
	"hosts:\n"
	"  mcp.example.test:\n"
	"    mcp: { endpoint: /mcp }\n"
	"    rules:\n"
	"      - id: any\n"
	"        allow: { method: GET, path: /mcp }\n"
	"      - id: other\n"
	"        allow: { method: GET, path: /other }\n"
	"      - id: keep\n"
	"        allow: { method: POST, path: /mcp, mcp: { tool: \"keep_*\" } }\n"
	"      - id: no-drop\n"
	"        deny: { method: POST, path: /mcp, mcp: { tool: \"drop_*\" } }\n"
	"      - id: sampling\n"
	"        allow: { method: POST, path: /mcp, mcp: { method: [sampling/createMessage] } }\n"
	"      - id: tips\n"
	"        allow: { method: POST, path: /mcp, mcp: { tool: tip },\n"
	"                 budget: { sum: \"json:$.params.arguments.n\", max: 10, per: day } }\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [127.0.0.2/32]\n";

#define LIST "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\"},{\"name\":\"drop_b\"}]}}"
#define KEPT "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\"}]}}"
#define GET_MCP "GET /mcp HTTP/1.1\r\nHost: mcp.example.test\r\n\r\n"

static int
setup(void **state)
{
	*state = nf_new(yaml);
	return *state != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	nf_assert_ended_once(*state);
	nf_free(*state);
	return 0;
}

static struct nf_client *
client(struct nf *nf)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct nf_client *cl = nf_accept(nf, "CONNECT mcp.example.test:443 HTTP/1.1\r\nHost: mcp.example.test:443\r\n\r\n");
	char buf[sizeof(ok)];

	assert_non_null(cl->c);
	assert_int_equal(read(cl->fd, buf, sizeof(ok) - 1), (ssize_t)sizeof(ok) - 1);
	assert_memory_equal(buf, ok, sizeof(ok) - 1);
	return cl;
}

/* <cl> sends <req>; the upstream's request is drained and returned. */
static struct nf_up *
sent(struct nf *nf, struct nf_client *cl, const char *req)
{
	struct nf_up *u;

	nf_send(cl, req);
	nf_run(nf);
	u = nf_up_held(cl);
	free(nf_up_take(u));
	return u;
}

static void
test_json(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u = sent(nf, cl, GET_MCP);
	char head[256], *s;
	size_t n = sizeof(LIST) - 1;

	snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
	nf_up_send(u, head);
	nf_up_send(u, "{\"jsonrpc\":\"2.0\",\"id\":1,");
	nf_run(nf);
	assert_int_equal(evbuffer_get_length(cl->rx), 0);  /* held: not even the head before the end */
	nf_up_send(u, LIST + strlen("{\"jsonrpc\":\"2.0\",\"id\":1,"));
	nf_run(nf);
	s = nf_rx_take(cl);
	snprintf(head, sizeof(head), "Content-Length: %zu\r\n\r\n" KEPT, sizeof(KEPT) - 1);
	assert_non_null(strstr(s, head));
	assert_null(strstr(s, "drop_b"));
	free(s);
	assert_null(cl->c->req);
	assert_int_equal(nf_up(nf, 0)->released, 1);
}

static void answers(struct nf *nf, struct nf_client *same);

static void
test_sse(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u = sent(nf, cl, GET_MCP);
	const char *ev = ": ping\n\nid: 4\ndata: " LIST "\n\n"
	                 "data: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"sampling/createMessage\",\"params\":{}}\n\n"
	                 "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":{}}\n\n";
	char one[2] = {0, 0}, *s;
	size_t i;

	nf_up_send(u, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_non_null(strstr(s, "Transfer-Encoding: chunked\r\n"));  /* a stream's head goes at once */
	free(s);
	for (i = 0; ev[i] != '\0'; i++) {
		char chunk[16];

		one[0] = ev[i];
		snprintf(chunk, sizeof(chunk), "1\r\n%s\r\n", one);
		nf_up_send(u, chunk);
		nf_run(nf);
		if (i == 6) {  /* the heartbeat's line came: it is out at once, as is the blank line after it */
			s = nf_rx_take(cl);
			assert_string_equal(s, "7\r\n: ping\n\r\n");
			free(s);
		}
		if (i == 7) {
			s = nf_rx_take(cl);
			assert_string_equal(s, "1\r\n\n\r\n");
			free(s);
		}
		if (i > 7 && i < 20)  /* inside the next event: nothing of it yet */
			assert_int_equal(evbuffer_get_length(cl->rx), 0);
	}
	nf_up_send(u, "0\r\n\r\n");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_non_null(strstr(s, "id: 4\ndata: " KEPT "\n\n"));
	assert_null(strstr(s, "drop_b"));
	assert_non_null(strstr(s, "sampling/createMessage"));
	assert_non_null(strstr(s, "0\r\n\r\n"));
	free(s);
	assert_null(cl->c->req);
	assert_int_equal(mcp_peers_count(nf->gw.mcp_peers), 2);
	answers(nf, cl);
}

#define ANSWER(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"role\":\"assistant\"}}"

/* A POST of JSON-RPC <body> to the endpoint on <cl>'s connection (NULL: a new one, of agent-1; <sandbox>: as
 * another sandbox). */
static struct nf_client *
post_on(struct nf *nf, struct nf_client *cl, const char *sandbox, const char *body)
{
	char req[512];

	if (cl == NULL)
		cl = client(nf);
	if (sandbox != NULL)
		cl->c->sandbox = sandbox;  /* who the gateway takes the client for: the table's key */
	snprintf(req, sizeof(req),
	         "POST /mcp HTTP/1.1\r\nHost: mcp.example.test\r\nContent-Type: application/json\r\n"
	         "Content-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	nf_send(cl, req);
	nf_run(nf);
	return cl;
}

static struct nf_client *
post_answer(struct nf *nf, const char *sandbox, const char *body)
{
	return post_on(nf, NULL, sandbox, body);
}

/* The answer <cl> got starts with <status>. */
static void
got(struct nf_client *cl, const char *status)
{
	char *s = nf_rx_take(cl);

	assert_non_null(s);
	assert_memory_equal(s, status, strlen(status));
	free(s);
}

/*
 * The server's requests of test_sse, seen on its GET stream, answered by POSTs on other connections and on the
 * stream's own (<same>): judged as answers to their methods (sampling allowed by a rule, elicitation by none),
 * each once, never by another sandbox.
 */
static void
answers(struct nf *nf, struct nf_client *same)
{
	struct nf_client *cl;
	struct nf_up *u;

	/* another sandbox cannot take it (and taking nothing, leaves it) */
	cl = post_answer(nf, "agent-2", ANSWER("\"s1\""));
	got(cl, "HTTP/1.1 403 ");
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "mcp");
	assert_int_equal(mcp_peers_count(nf->gw.mcp_peers), 2);
	/* the same sandbox on a new connection: correlated, judged as an answer to sampling/createMessage */
	cl = post_answer(nf, NULL, ANSWER("\"s1\""));
	u = nf_up_held(cl);
	assert_non_null(u);
	free(nf_up_take(u));
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "sampling");
	nf_up_send(u, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
	nf_run(nf);
	got(cl, "HTTP/1.1 202 ");
	/* once */
	cl = post_answer(nf, NULL, ANSWER("\"s1\""));
	got(cl, "HTTP/1.1 403 ");
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "mcp");
	/* an answer to elicitation/create, on the stream's own connection: correlated (rule default, not mcp), but no
	 * rule allows it: 403 (no id to answer with an error) */
	cl = post_on(nf, same, NULL, ANSWER("9"));
	got(cl, "HTTP/1.1 403 ");
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "default");
	assert_int_equal(mcp_peers_count(nf->gw.mcp_peers), 0);
}

#define TIP(id, n) "{\"jsonrpc\":\"2.0\",\"id\":" #id ",\"method\":\"tools/call\",\"params\":{\"name\":\"tip\"," \
                         "\"arguments\":{\"n\":" #n "}}}"

/* The sum taken from budget rule:tips (global), in units. */
static int64_t
tips(struct nf *nf)
{
	int64_t v = limits_peek_kind(nf->gw.limits, LIMITS_BUDGET, "rule:tips", "*", clock_wall_ms());

	return v < 0 ? 0 : v / 1000000;
}

/* A batch that took from a budget and never left (the upstream dial failed) gives every element's amount back. */
static void
test_batch_budget_refund(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl;
	struct nf_up *u;

	nf->next_dial = NF_DIAL_FAIL;
	cl = post_answer(nf, NULL, "[" TIP(1, 4) "," TIP(2, 5) "]");
	got(cl, "HTTP/1.1 502 ");
	assert_int_equal(tips(nf), 0);
	/* so 6 + 4 = 10 fits now */
	cl = post_answer(nf, NULL, "[" TIP(3, 6) "," TIP(4, 4) "]");
	u = nf_up_held(cl);
	free(nf_up_take(u));
	assert_int_equal(tips(nf), 10);
	nf_up_send(u, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n[]");
	nf_run(nf);
	got(cl, "HTTP/1.1 200 ");
	assert_int_equal(tips(nf), 10);  /* sent: spent */
	/* full: a batch whose second take does not fit is refused whole, its first element's amount given back */
	cl = post_answer(nf, NULL, "[" TIP(5, 0) "," TIP(6, 1) "]");
	got(cl, "HTTP/1.1 200 ");  /* JSON-RPC errors -32019 */
	assert_int_equal(tips(nf), 10);
}

/* <cl> sends <req>; the upstream's answer LIST of type <type> reaches the client unchanged. */
static void
passes(struct nf *nf, struct nf_client *cl, const char *req, const char *type)
{
	struct nf_up *u = sent(nf, cl, req);
	char resp[256], *s;

	snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %zu\r\n\r\n%s", type,
	         sizeof(LIST) - 1, LIST);
	nf_up_send(u, resp);
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_non_null(strstr(s, LIST));
	free(s);
}

static void
test_passes_and_refused(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u;
	char *s;

	/* off the endpoint: relayed as it came, the hidden tool too; another type on the endpoint: untouched */
	passes(nf, cl, "GET /other HTTP/1.1\r\nHost: mcp.example.test\r\n\r\n", "application/json");
	passes(nf, cl, GET_MCP, "text/plain");
	/* encoded: it could not be read, so it is refused before its head goes out */
	u = sent(nf, cl, GET_MCP);
	nf_up_send(u, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nabcd");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_memory_equal(s, "HTTP/1.1 502 ", 13);
	free(s);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->reason,
	                    "an MCP answer that cannot be filtered (a Content-Encoding other than identity)");
}

/* <cl> sends a GET of the endpoint; the JSON answer <body> is refused (502) with <reason> audited. */
static void
refused(struct nf *nf, struct nf_client *cl, const char *body, const char *reason)
{
	struct nf_up *u = sent(nf, cl, GET_MCP);
	char resp[512], *s;

	snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	         strlen(body), body);
	nf_up_send(u, resp);
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_memory_equal(s, "HTTP/1.1 502 ", 13);
	assert_null(strstr(s, "drop_b"));
	free(s);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->reason, reason);
}

/*
 * Members a case-folding client (Go's encoding/json) reads as "result" or
 * "tools" are not a way around the filter: such an answer is refused, not
 * relayed unread (before: "Result" and a lone "Tools" passed untouched).
 */
static void
test_folded_members(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);

	refused(nf, cl, "{\"jsonrpc\":\"2.0\",\"id\":1,\"Result\":{\"tools\":[{\"name\":\"drop_b\"}]}}",
	        "an MCP answer that is not a JSON-RPC message the gateway reads");
	cl = client(nf);
	refused(nf, cl, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"Tools\":[{\"name\":\"drop_b\"}]}}",
	        "an MCP list result the gateway cannot filter (over its bound, or a member a client could read as the list)");
	cl = client(nf);
	refused(nf, cl, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tool\xc5\xbf\":[{\"name\":\"drop_b\"}]}}",
	        "an MCP list result the gateway cannot filter (over its bound, or a member a client could read as the list)");
}

/*
 * Events the scanner leaves to jansson: one filtered there (a surrogate
 * escape), then one refused there (a real a double rounds, beside a hidden
 * tool): the stream ends, and the first's rewritten text is freed once
 * (before: freed when the second was refused and again with the answer;
 * ASan watches).
 */
static void
test_left_to_jansson(void **state)
{
	static const char ev1[] = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\","
	                          "\"d\":\"\\ud83d\\ude00\"},{\"name\":\"drop_b\"}]}}\n\n";
	static const char ev2[] = "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"tools\":[{\"name\":\"keep_a\","
	                          "\"v\":0.10000000000000001},{\"name\":\"drop_b\"}]}}\n\n";
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u = sent(nf, cl, GET_MCP);
	char chunk[512], *s;

	nf_up_send(u, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
	snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n", sizeof(ev1) - 1, ev1);
	nf_up_send(u, chunk);
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_non_null(strstr(s, "keep_a"));
	assert_null(strstr(s, "drop_b"));
	free(s);
	snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n", sizeof(ev2) - 1, ev2);
	nf_up_send(u, chunk);
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_null(strstr(s, "drop_b"));
	free(s);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->reason,
	                    "an MCP list result with a number the filter cannot rewrite exactly");
}

/* The data of one event <ev> in one chunk on <u>; what <cl> got (the caller frees it). */
static char *
event(struct nf *nf, struct nf_client *cl, struct nf_up *u, const char *ev)
{
	char chunk[512];

	snprintf(chunk, sizeof(chunk), "%zx\r\ndata: %s\n\n\r\n", strlen(ev) + 8, ev);
	nf_up_send(u, chunk);
	nf_run(nf);
	return nf_rx_take(cl);
}

#define LIST_ID(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"tools\":[{\"name\":\"keep_a\"},{\"name\":\"drop_b\"}]}}"
#define KEPT_ID(id) "{\"jsonrpc\":\"2.0\",\"id\":" id ",\"result\":{\"tools\":[{\"name\":\"keep_a\"}]}}"

/*
 * A stream of list results that differ only in the id is answered from the
 * last decision (mcp_resp.c, repeat_of): each event comes out as the scanner
 * would have written it, with its own id; a text that differs anywhere else
 * (one byte of a name, the id's type, white space beside the id) is read
 * again, and an id token the scanner would not read as one (a leading zero)
 * is no repeat: the stream is refused there (jansson reads no JSON-RPC message).
 */
static void
test_repeats(void **state)
{
	static const char *const same[][2] = {
		{LIST_ID("1"), "data: " KEPT_ID("1") "\n\n"},
		{LIST_ID("2"), "data: " KEPT_ID("2") "\n\n"},
		{LIST_ID("123456789012345678"), "data: " KEPT_ID("123456789012345678") "\n\n"},
		{LIST_ID("-7"), "data: " KEPT_ID("-7") "\n\n"},
		{LIST_ID("\"a-1\""), "data: " KEPT_ID("\"a-1\"") "\n\n"},  /* a string: read, and kept */
		{LIST_ID("\"zz\""), "data: " KEPT_ID("\"zz\"") "\n\n"},
		{LIST_ID("\"a,\\\"b\""), "data: " KEPT_ID("\"a,\\\"b\"") "\n\n"},  /* an escape: read */
		{LIST_ID("3 "), "data: " KEPT_ID("3 ") "\n\n"},                  /* white space: read */
		/* a byte of a name: now both are shown */
		{"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"keep_a\"},{\"name\":\"keep_b\"}]}}",
		 "data: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"keep_a\"},{\"name\":\"keep_b\"}]}}\n\n"},
		{"{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":[{\"name\":\"drop_a\"},{\"name\":\"keep_b\"}]}}",
		 "data: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"tools\":[{\"name\":\"keep_b\"}]}}\n\n"},
		{"{\"jsonrpc\":\"2.0\",\"id\":55,\"result\":{\"tools\":[{\"name\":\"drop_a\"},{\"name\":\"keep_c\"}]}}",
		 "data: {\"jsonrpc\":\"2.0\",\"id\":55,\"result\":{\"tools\":[{\"name\":\"keep_c\"}]}}\n\n"},
	};
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u = sent(nf, cl, GET_MCP);
	char want[512], *s;
	size_t i;

	nf_up_send(u, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
	nf_run(nf);
	free(nf_rx_take(cl));
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		s = event(nf, cl, u, same[i][0]);
		snprintf(want, sizeof(want), "%zx\r\n%s\r\n", strlen(same[i][1]), same[i][1]);
		assert_string_equal(s, want);
		free(s);
	}
	/* not JSON (an integer with a leading zero) though the rest is the last event's bytes: refused */
	s = event(nf, cl, u, LIST_ID("055"));
	assert_null(strstr(s, "drop"));
	assert_null(strstr(s, "055"));
	free(s);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->reason,
	                    "an MCP answer that is not a JSON-RPC message the gateway reads");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_json, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sse, setup, teardown),
		cmocka_unit_test_setup_teardown(test_passes_and_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_budget_refund, setup, teardown),
		cmocka_unit_test_setup_teardown(test_folded_members, setup, teardown),
		cmocka_unit_test_setup_teardown(test_left_to_jansson, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeats, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
