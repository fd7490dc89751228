/*
 * tests/unit/policy/test_mcp.c - MCP (issue 23, groundwork): the JSON-RPC
 * message reader (kinds, extraction, every refusal of the "bad
 * input" and variants of it), the mcp: condition and host entry in the
 * loader (line:col errors), judging messages with policy_decide, and the
 * tools/list (resources, prompts) filter with its predicate.
 */
#include <stdlib.h>

#include "semtest.h"
#include "policy/mcp.h"

/* ---- the reader ---- */

static enum policy_mcp_error
parse_err(const char *s)
{
	struct policy_mcp_body b;
	enum policy_mcp_error e;
	int rc = policy_mcp_parse(s, strlen(s), &b, &e);

	assert_int_equal(rc, e == POLICY_MCP_OK ? 0 : -1);
	policy_mcp_body_dispose(&b);
	return e;
}

static void
test_parse_kinds(void **state)
{
	static const char call[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"create_issue\","
	                           "\"arguments\":{\"owner\":\"acme\"}}}";
	struct policy_mcp_body b;
	enum policy_mcp_error e;

	(void)state;
	assert_int_equal(policy_mcp_parse(call, strlen(call), &b, &e), 0);
	assert_int_equal(b.batch, 0);
	assert_int_equal(b.nmsgs, 1);
	assert_int_equal(b.msgs[0].kind, POLICY_MCP_REQUEST);
	assert_int_equal(b.msgs[0].method_id, POLICY_MCP_M_TOOLS_CALL);
	assert_string_equal(b.msgs[0].method, "tools/call");
	assert_int_equal(b.msgs[0].name_len, 12);
	assert_memory_equal(b.msgs[0].name, "create_issue", 12);
	assert_int_equal(json_integer_value(b.msgs[0].id), 7);
	assert_string_equal(json_string_value(json_object_get(b.msgs[0].arguments, "owner")), "acme");
	policy_mcp_body_dispose(&b);

	assert_int_equal(policy_mcp_parse("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", 54, &b, &e), 0);
	assert_int_equal(b.msgs[0].kind, POLICY_MCP_NOTIFICATION);
	assert_null(b.msgs[0].id);
	assert_int_equal(b.msgs[0].method_id, POLICY_MCP_M_OTHER);
	policy_mcp_body_dispose(&b);

	static const char rr[] = "{\"jsonrpc\":\"2.0\",\"id\":\"a1\",\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///r/x\"}}";
	assert_int_equal(policy_mcp_parse(rr, strlen(rr), &b, &e), 0);
	assert_int_equal(b.msgs[0].method_id, POLICY_MCP_M_RESOURCES_READ);
	assert_memory_equal(b.msgs[0].name, "file:///r/x", 11);
	assert_string_equal(json_string_value(b.msgs[0].id), "a1");
	policy_mcp_body_dispose(&b);

	static const char resp[] = "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}";
	assert_int_equal(policy_mcp_parse(resp, strlen(resp), &b, &e), 0);
	assert_int_equal(b.msgs[0].kind, POLICY_MCP_RESPONSE);
	assert_non_null(b.msgs[0].result);
	assert_null(b.msgs[0].method);
	policy_mcp_body_dispose(&b);

	static const char batch[] = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
	                            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":{}},"
	                            "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-1,\"message\":\"m\"}}]";
	assert_int_equal(policy_mcp_parse(batch, strlen(batch), &b, &e), 0);
	assert_int_equal(b.batch, 1);
	assert_int_equal(b.nmsgs, 3);
	assert_int_equal(b.msgs[0].kind, POLICY_MCP_REQUEST);
	assert_int_equal(b.msgs[1].kind, POLICY_MCP_NOTIFICATION);
	assert_int_equal(b.msgs[2].kind, POLICY_MCP_RESPONSE);
	assert_non_null(b.msgs[2].error);
	policy_mcp_body_dispose(&b);
	/* prompts/get: a name too */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"p.1\","
	                           "\"arguments\":{\"a\":\"b\"}}}"), POLICY_MCP_OK);
}

#define REQ(tail) "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"" tail "}"

static void
test_parse_refusals(void **state)
{
	char big[512];
	size_t i, o;

	(void)state;
	/* malformed JSON, trailing garbage, not UTF-8, nested too deeply */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,"), POLICY_MCP_E_JSON);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\"}") "x"), POLICY_MCP_E_JSON);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"ping\"}"), POLICY_MCP_E_JSON);
	o = 0;
	for (i = 0; i < 70; i++)
		big[o++] = '[';
	big[o] = '\0';
	assert_int_equal(parse_err(big), POLICY_MCP_E_JSON);
	/* duplicate keys at the top and deep inside */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}"), POLICY_MCP_E_DUPLICATE);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\",\"arguments\":{\"x\":{\"y\":1,\"y\":2}}}")),
	                 POLICY_MCP_E_DUPLICATE);
	/* not an object; a batch with a non-object element; empty and oversized batches */
	assert_int_equal(parse_err("\"ping\""), POLICY_MCP_E_NOT_OBJECT);
	assert_int_equal(parse_err("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},7]"), POLICY_MCP_E_NOT_OBJECT);
	assert_int_equal(parse_err("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},[]]"), POLICY_MCP_E_NOT_OBJECT);
	assert_int_equal(parse_err("[]"), POLICY_MCP_E_BATCH);
	{
		char *s = malloc(65 * 48 + 8);
		size_t n = 0;

		s[n++] = '[';
		for (i = 0; i < 65; i++)
			n += (size_t)snprintf(s + n, 48, "%s{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"ping\"}", i ? "," : "", i);
		s[n++] = ']';
		s[n] = '\0';
		assert_int_equal(parse_err(s), POLICY_MCP_E_BATCH);
		free(s);
	}
	/* version */
	assert_int_equal(parse_err("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}"), POLICY_MCP_E_VERSION);
	assert_int_equal(parse_err("{\"id\":1,\"method\":\"ping\"}"), POLICY_MCP_E_VERSION);
	/* ids: non-scalar, null, real, missing on a response, too long */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}"), POLICY_MCP_E_ID);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}"), POLICY_MCP_E_ID);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}"), POLICY_MCP_E_ID);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}"), POLICY_MCP_E_ID);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}"), POLICY_MCP_E_ID);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"result\":{}}"), POLICY_MCP_E_ID);
	memset(big, 'a', 300);
	snprintf(big, sizeof(big), "{\"jsonrpc\":\"2.0\",\"id\":\"%0300d\",\"method\":\"ping\"}", 0);
	assert_int_equal(parse_err(big), POLICY_MCP_E_ID);
	/* members: unknown, case variants (a case-folding server reads "Method" or "Params" as the real one) */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"extra\":1}"), POLICY_MCP_E_MEMBER);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"Method\":\"tools/call\"}"),
	                 POLICY_MCP_E_MEMBER);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\"},\"PARAMS\":{\"name\":\"b\"}")), POLICY_MCP_E_MEMBER);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\",\"Name\":\"b\"}")), POLICY_MCP_E_MEMBER);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\",\"ARGUMENTS\":{}}")), POLICY_MCP_E_MEMBER);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"result\":{}}"), POLICY_MCP_E_MEMBER);
	/* method */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}"), POLICY_MCP_E_METHOD);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}"), POLICY_MCP_E_METHOD);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\\nb\"}"), POLICY_MCP_E_METHOD);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1}"), POLICY_MCP_E_METHOD);
	/* params and arguments not objects */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}"), POLICY_MCP_E_PARAMS);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":\"x\"}"), POLICY_MCP_E_PARAMS);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\",\"arguments\":[1,2]}")), POLICY_MCP_E_ARGUMENTS);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a\",\"arguments\":null}")), POLICY_MCP_E_ARGUMENTS);
	/* tool names: missing, not a string, over-long, not strict */
	assert_int_equal(parse_err(REQ("")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{}")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":5}")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a b\"}")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"a/b\"}")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"caf\\u00e9\"}")), POLICY_MCP_E_NAME);
	assert_int_equal(parse_err(REQ(",\"params\":{\"name\":\"\"}")), POLICY_MCP_E_NAME);
	snprintf(big, sizeof(big), REQ(",\"params\":{\"name\":\"%0129d\"}"), 0);
	assert_int_equal(parse_err(big), POLICY_MCP_E_NAME);
	snprintf(big, sizeof(big), REQ(",\"params\":{\"name\":\"%0128d\"}"), 0);
	assert_int_equal(parse_err(big), POLICY_MCP_OK);
	/* a NUL is refused by jansson itself (no JSON_ALLOW_NUL) */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"a\\u0000\"}}"),
	                 POLICY_MCP_E_JSON);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"prompts/get\",\"params\":{\"name\":\"a\\u0007\"}}"),
	                 POLICY_MCP_E_NAME);
	/* resources/read uri */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{}}"),
	                 POLICY_MCP_E_URI);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":\"a\\rb\"}}"),
	                 POLICY_MCP_E_URI);
	/* responses: both, neither, not objects */
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{}}"), POLICY_MCP_E_RESPONSE);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[]}"), POLICY_MCP_E_RESPONSE);
	assert_int_equal(parse_err("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"no\"}"), POLICY_MCP_E_RESPONSE);
	assert_string_equal(policy_mcp_strerror(POLICY_MCP_E_PARAMS), "params is not an object");
}

/* ---- the loader ---- */

#define GH_HOST                                                                                                   \
	"ca: /x\n"                                                                                                \
	"hosts:\n"                                                                                                \
	"  mcp.example.test:\n"                                                                                   \
	"    mcp: { endpoint: /mcp, error_code: -32001 }\n"                                                       \
	"    rules:\n"

static const char gh_yaml[] =
	GH_HOST
	"      - id: lifecycle\n"
	"        allow: { method: POST, path: /mcp, mcp: { method: [initialize, notifications/initialized, ping, tools/list] } }\n"
	"      - id: no-deletes\n"
	"        deny: { method: POST, path: /mcp, mcp: { tool: \"delete_*\" } }\n"
	"      - id: issues-in-widgets\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /mcp\n"
	"          mcp:\n"
	"            tool: create_issue\n"
	"            arguments: { \"$.owner\": { eq: acme }, \"$.repo\": { eq: widgets }, \"$.title\": { exists: true } }\n"
	"      - id: ask-before-merge\n"
	"        hold: { method: POST, path: /mcp, mcp: { tool: merge_pull_request }, timeout: 10m }\n"
	"      - id: read-docs\n"
	"        allow: { method: POST, path: /mcp, mcp: { tool: [\"file:///docs/*\", search, \"get_*\"] } }\n"
	"  open.test:\n"
	"    mcp: { endpoint: /v1/mcp }\n"
	"    rules:\n"
	"      - { deny: { path: /v1/mcp, mcp: { tool: [secret_tool] } } }\n"
	"      - { allow: { method: POST, path: /v1/mcp } }\n";

static void
test_load_ok(void **state)
{
	struct policy *p = st_load(gh_yaml);
	struct policy_conn_decision cd;
	const char *ep = NULL;
	int code = 0;

	(void)state;
	/* an mcp: condition is a condition: the rules after an mcp rule on the same path are not shadowed */
	if (policy_warning_count(p) != 0)
		fail_msg("warning: %s", policy_warning_get(p, 0));
	policy_decide_conn(p, "mcp.example.test", 443, &cd);
	assert_int_equal(policy_host_mcp(cd.host, &ep, &code), 1);
	assert_string_equal(ep, "/mcp");
	assert_int_equal(code, -32001);
	policy_decide_conn(p, "open.test", 443, &cd);
	assert_int_equal(policy_host_mcp(cd.host, &ep, &code), 1);
	assert_int_equal(code, POLICY_MCP_ERROR_CODE_DEFAULT);
	policy_unref(p);
}

static void
expect_err(const char *yaml, const char *where, const char *what)
{
	char err[1024];

	st_load_err(yaml, err, sizeof(err));
	if (strstr(err, where) == NULL || strstr(err, what) == NULL)
		fail_msg("expected '%s' ... '%s', got '%s'", where, what, err);
}

static void
test_load_errors(void **state)
{
	(void)state;
	/* unknown keys, at their line and column */
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tools: x } }\n", "s.yaml:6:", "unknown key 'tools'");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: /mcp, code: 1 }\n", "s.yaml:4:", "unknown key 'code'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: {} }\n", "s.yaml:6:", "at least one of method, tool, arguments");
	/* bad tool names and globs */
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: \"a b\" } }\n", "s.yaml:6:", "bad tool 'a b'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: [ok, \"x/y\"] } }\n", "s.yaml:6:", "bad tool 'x/y'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: \"..\" } }\n", "s.yaml:6:", "bad tool glob '..'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: [a, a] } }\n", "s.yaml:6:", "duplicate tool 'a'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: { eq: a } } }\n", "s.yaml:6:", "expected a tool name");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: \"file:///a*b\" } }\n", "s.yaml:6:",
	           "bad resource URI");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { method: \"tools call\" } }\n", "s.yaml:6:",
	           "expected a JSON-RPC method");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { arguments: { \"x\": { eq: 1 } } } }\n", "s.yaml:6:",
	           "bad JSON path 'x' in hosts.mcp.example.test.rules[0].allow.mcp.arguments");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { arguments: { \"$.x\": { eq: 1, bogus: 2 } } } }\n",
	           "s.yaml:6:", "unknown key 'bogus'");
	/* a tool rule outside an mcp endpoint: no endpoint, another path, not POST */
	expect_err("ca: /x\nhosts:\n  a.test:\n    rules:\n      - allow: { path: /mcp, mcp: { tool: x } }\n", "s.yaml:5:",
	           "host a.test has no MCP endpoint");
	expect_err(GH_HOST "      - allow: { path: /other, mcp: { tool: x } }\n", "s.yaml:6:",
	           "whose path /other is not the host's MCP endpoint /mcp");
	expect_err(GH_HOST "      - allow: { method: GET, path: /mcp, mcp: { tool: x } }\n", "s.yaml:6:", "excludes POST");
	/* a regex path is tried on the endpoint too; one that can match it is fine */
	expect_err(GH_HOST "      - allow: { path: \"regex:^/api/.*$\", mcp: { tool: x } }\n", "s.yaml:6:",
	           "whose path regex:^/api/.*$ cannot match the host's MCP endpoint /mcp");
	{
		struct policy *p = st_load(GH_HOST "      - allow: { path: \"regex:^/(mcp|sse)$\", mcp: { tool: x } }\n");

		policy_unref(p);
	}
	/* the host entry */
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { error_code: -32001 }\n", "s.yaml:4:", "missing required key 'endpoint'");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: /mcp, error_code: -32020 }\n", "s.yaml:4:",
	           "from -32000 to -32019");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: /mcp, error_code: -31999 }\n", "s.yaml:4:",
	           "from -32000 to -32019");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: \"/m*\" }\n", "s.yaml:4:", "no *");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: mcp }\n", "s.yaml:4:", "bad path");
	expect_err("ca: /x\nhosts:\n  a.test:\n    mcp: { endpoint: \"/a//b\" }\n", "s.yaml:4:", "bad path");
}

/* ---- judging ---- */

static struct st_req
post(const char *body)
{
	struct st_req r = {.method = "POST", .path = "/mcp", .ctype = "application/json", .body = body};

	return r;
}

#define CALL(tool, args)                                                                                          \
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"" tool "\",\"arguments\":" args "}}"

static void
test_decide_messages(void **state)
{
	struct policy *p = st_load(gh_yaml);
	struct st_req r;

	(void)state;
	r = post("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_ALLOW, "lifecycle");
	r = post("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_ALLOW, "lifecycle");
	r = post(CALL("create_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"t\"}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_ALLOW, "issues-in-widgets");
	/* another repository; a missing title; no arguments */
	r = post(CALL("create_issue", "{\"owner\":\"acme\",\"repo\":\"gadgets\",\"title\":\"t\"}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	r = post(CALL("create_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\"}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	r = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"create_issue\"}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	/* case-variant argument keys: an upstream may read either, so the allow cannot hold */
	r = post(CALL("create_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\",\"Repo\":\"gadgets\",\"title\":\"t\"}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	r = post(CALL("merge_pull_request", "{}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_HOLD, "ask-before-merge");
	r = post(CALL("delete_repository", "{}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	/* a tool no rule names is denied; so is one that differs by case */
	r = post(CALL("drop_everything", "{}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	r = post(CALL("Create_issue", "{\"owner\":\"acme\",\"repo\":\"widgets\",\"title\":\"t\"}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	/* globs, lists and resource URIs */
	r = post(CALL("get_file", "{}"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_ALLOW, "read-docs");
	r = post("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///docs/a.md\"}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_ALLOW, "read-docs");
	r = post("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"file:///etc/passwd\"}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	/* a URI pattern never matches a tool name, nor a name pattern a URI */
	r = post("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"resources/read\",\"params\":{\"uri\":\"search\"}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "default");
	/* malformed messages cannot be judged: allow rules do not match, deny rules do */
	r = post("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"search\",\"name\":\"x\"}}");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	r = post(CALL("search", "[1]"));
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	/* a batch is not judged whole, even when every element would pass */
	r = post("[" CALL("search", "{}") "]");
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	/* not JSON by content type; a body that was not held */
	r = post(CALL("search", "{}"));
	r.ctype = "text/plain";
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	r = post(CALL("search", "{}"));
	r.partial = 1;
	ST_EXPECT(p, "mcp.example.test", &r, POLICY_REQ_DENY, "no-deletes");
	policy_unref(p);
}

/* The caller judges each element of a batch by handing it over in policy_request.mcp_msg. */
static void
test_decide_batch_elements(void **state)
{
	static const char batch[] = "[" CALL("search", "{}") "," CALL("delete_repository", "{}") "]";
	struct policy *p = st_load(gh_yaml);
	struct policy_conn_decision cd;
	struct policy_mcp_body b;
	struct policy_decision d;
	struct policy_request q;
	struct policy_header hs[4];
	struct st_req r = post(batch);
	enum policy_mcp_error e;

	(void)state;
	assert_int_equal(policy_mcp_parse(batch, strlen(batch), &b, &e), 0);
	policy_decide_conn(p, "mcp.example.test", 443, &cd);
	st_request(&r, &q, hs);
	q.mcp_msg = &b.msgs[0];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_string_equal(d.act.rule, "read-docs");
	q.mcp_msg = &b.msgs[1];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_DENY);
	assert_string_equal(d.act.rule, "no-deletes");
	policy_mcp_body_dispose(&b);
	policy_unref(p);
}

/*
 * A response the caller correlated (msg->answers: the server request's method) is judged as the answer to that
 * method; json: conditions and a budget's json: sum of an element are rooted at the element.
 */
static void
test_decide_answers_and_roots(void **state)
{
	static const char yaml[] = "ca: /x\n"
	                           "hosts:\n"
	                           "  m.test:\n"
	                           "    mcp: { endpoint: /mcp }\n"
	                           "    rules:\n"
	                           "      - id: sampling\n"
	                           "        allow: { method: POST, path: /mcp, mcp: { method: [sampling/createMessage] } }\n"
	                           "      - id: tips\n"
	                           "        allow: { method: POST, path: /mcp, mcp: { tool: tip }, json: { \"$.params.arguments.n\": { max: 5 } },\n"
	                           "                 budget: { sum: \"json:$.params.arguments.n\", max: 10, per: day } }\n";
	static const char resp[] = "[{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"result\":{}},{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}},"
	                           CALL("tip", "{\"n\":4}") "," CALL("tip", "{\"n\":6}") "]";
	struct policy *p = st_load(yaml);
	struct policy_conn_decision cd;
	struct policy_mcp_body b;
	struct policy_decision d;
	struct policy_request q;
	struct policy_header hs[4];
	struct st_req r = post(resp);
	enum policy_mcp_error e;

	(void)state;
	assert_int_equal(policy_mcp_parse(resp, strlen(resp), &b, &e), 0);
	policy_decide_conn(p, "m.test", 443, &cd);
	st_request(&r, &q, hs);
	/* not correlated: no method, no mcp: method condition matches */
	q.mcp_msg = &b.msgs[0];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_DENY);
	/* the answer to sampling/createMessage: allowed by its method; to elicitation/create: not */
	b.msgs[0].answers = "sampling/createMessage";
	b.msgs[0].answers_len = strlen(b.msgs[0].answers);
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_string_equal(d.act.rule, "sampling");
	b.msgs[1].answers = "elicitation/create";
	b.msgs[1].answers_len = strlen(b.msgs[1].answers);
	q.mcp_msg = &b.msgs[1];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_DENY);
	assert_string_equal(d.act.rule, "default");
	/* json: and the budget's sum read the element: 4 passes (max 5) and takes 4; 6 does not pass */
	q.mcp_msg = &b.msgs[2];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_string_equal(d.act.rule, "tips");
	assert_int_equal(d.act.amount, 4 * INT64_C(1000000));
	q.mcp_msg = &b.msgs[3];
	policy_decide(p, cd.host, &q, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_DENY);
	policy_mcp_body_dispose(&b);
	policy_unref(p);
}

/* mcp.audit: the argument values a rule lets the record hold in clear; the rest only as a fingerprint. */
static void
test_audit_args(void **state)
{
	struct policy *p = st_load(GH_HOST
		"      - id: issues\n"
		"        allow:\n"
		"          method: POST\n"
		"          path: /mcp\n"
		"          mcp: { tool: create_issue, audit: [\"$.repo\", \"$.labels[*]\", \"$.missing\", \"$.Owner\"] }\n"
		"      - id: plain\n"
		"        allow: { method: POST, path: /mcp, mcp: { tool: search } }\n");
	json_t *args = json_loads("{\"owner\":\"acme\",\"repo\":\"widgets\",\"labels\":[\"bug\",\"p1\"],"
	                          "\"body\":\"the secret plan\"}", 0, NULL);
	struct policy_conn_decision cd;
	const struct policy_host *h;
	json_t *out = NULL;
	char *text;

	(void)state;
	policy_decide_conn(p, "mcp.example.test", 443, &cd);
	h = cd.host;
	assert_int_equal(policy_mcp_audit_args(h, "issues", args, &out), 0);
	assert_non_null(out);
	text = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
	assert_string_equal(text, "{\"$.labels[*]\":[\"bug\",\"p1\"],\"$.repo\":\"widgets\"}");
	free(text);
	json_decref(out);
	/* a rule without audit:, an unknown rule, no arguments: nothing in clear */
	assert_int_equal(policy_mcp_audit_args(h, "plain", args, &out), 0);
	assert_null(out);
	assert_int_equal(policy_mcp_audit_args(h, "default", args, &out), 0);
	assert_null(out);
	assert_int_equal(policy_mcp_audit_args(h, "issues", NULL, &out), 0);
	assert_null(out);
	/* "Repo" beside "repo": which one the server reads cannot be told, so neither is recorded in clear */
	json_decref(args);
	args = json_loads("{\"repo\":\"widgets\",\"Repo\":\"other\"}", 0, NULL);
	assert_int_equal(policy_mcp_audit_args(h, "issues", args, &out), 0);
	assert_null(out);
	json_decref(args);
	policy_unref(p);
	/* the loader: a list of JSON paths, each once */
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: x, audit: \"$.repo\" } }\n", "s.yaml:6:",
	           "expected a list of 1 to 16 JSON paths");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: x, audit: [repo] } }\n", "s.yaml:6:",
	           "bad JSON path 'repo' in hosts.mcp.example.test.rules[0].allow.mcp.audit");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: x, audit: [\"$.a\", \"$.a\"] } }\n", "s.yaml:6:",
	           "duplicate path '$.a'");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { tool: x, audit: [[\"$.a\"]] } }\n", "s.yaml:6:",
	           "expected a JSON path");
	expect_err(GH_HOST "      - allow: { path: /mcp, mcp: { audit: [\"$.a\"] } }\n", "s.yaml:6:",
	           "at least one of method, tool, arguments");
}

/* ---- tools/list filtering ---- */

static const struct policy_host *
host_of(const struct policy *p, const char *name)
{
	struct policy_conn_decision cd;

	policy_decide_conn(p, name, 443, &cd);
	return cd.host;
}

static void
test_visible(void **state)
{
	struct policy *p = st_load(gh_yaml);
	const struct policy_host *h = host_of(p, "mcp.example.test"), *o = host_of(p, "open.test");

	(void)state;
#define VIS(host, list, s) policy_mcp_visible(p, (host), (list), (s), strlen(s))
	assert_true(VIS(h, POLICY_MCP_M_TOOLS_LIST, "create_issue"));        /* conditional allow: could */
	assert_true(VIS(h, POLICY_MCP_M_TOOLS_LIST, "merge_pull_request"));  /* hold */
	assert_true(VIS(h, POLICY_MCP_M_TOOLS_LIST, "get_me"));
	assert_false(VIS(h, POLICY_MCP_M_TOOLS_LIST, "delete_repository"));  /* deny before any allow */
	assert_false(VIS(h, POLICY_MCP_M_TOOLS_LIST, "list_secrets"));       /* no rule: default deny */
	assert_false(VIS(h, POLICY_MCP_M_TOOLS_LIST, "bad name"));           /* could never be called */
	assert_true(VIS(h, POLICY_MCP_M_RESOURCES_LIST, "file:///docs/x"));
	assert_false(VIS(h, POLICY_MCP_M_RESOURCES_LIST, "file:///etc/x"));
	assert_true(VIS(h, POLICY_MCP_M_PROMPTS_LIST, "search"));
	assert_false(VIS(h, POLICY_MCP_M_PROMPTS_LIST, "file:///docs/x"));
	/* a path-only allow shows everything a deny before it does not hide */
	assert_true(VIS(o, POLICY_MCP_M_TOOLS_LIST, "anything"));
	assert_false(VIS(o, POLICY_MCP_M_TOOLS_LIST, "secret_tool"));
	assert_false(VIS(o, POLICY_MCP_M_NONE, "anything"));
#undef VIS
	policy_unref(p);
}

static void
test_list_filter(void **state)
{
	static const char resp[] =
		"{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"create_issue\",\"inputSchema\":{\"type\":\"object\"}},"
		"{\"name\":\"delete_repository\"},{\"name\":\"search\",\"x\":[1,2.5]},{\"name\":7},\"junk\","
		"{\"name\":\"secret_ops\"}],\"nextCursor\":\"c\"}}";
	struct policy *p = st_load(gh_yaml);
	const struct policy_host *h = host_of(p, "mcp.example.test");
	char *out = NULL;
	size_t outlen = 0;
	json_t *j, *res;

	(void)state;
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_TOOLS_LIST, resp, strlen(resp), &out, &outlen), 4);
	j = json_loadb(out, outlen, 0, NULL);
	assert_non_null(j);
	res = json_object_get(j, "result");
	assert_int_equal(json_array_size(json_object_get(res, "tools")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(res, "tools"), 1), "name")),
	                    "search");
	assert_string_equal(json_string_value(json_object_get(res, "nextCursor")), "c");
	assert_int_equal(json_integer_value(json_object_get(j, "id")), 4);
	json_decref(j);
	free(out);
	/* uncorrelated (a replayed event): the shape says it is a list; still filtered */
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, resp, strlen(resp), &out, &outlen), 4);
	free(out);
	/* nothing to remove: the text passes as it is */
	static const char clean[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"search\"}]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_TOOLS_LIST, clean, strlen(clean), &out, &outlen), 0);
	assert_null(out);
	/* other results pass; an error answer passes */
	static const char other[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"content\":[]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, other, strlen(other), &out, &outlen), 0);
	/* refused: a tools/list answer without a tools array, "Tools" beside "tools", not a response */
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_TOOLS_LIST, other, strlen(other), &out, &outlen), -1);
	static const char twin[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[],\"Tools\":[{\"name\":\"x\"}]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, twin, strlen(twin), &out, &outlen), -1);
	static const char twin2[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tools\":[{\"name\":\"search\",\"NAME\":\"delete_repository\"}]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, twin2, strlen(twin2), &out, &outlen), 1);
	free(out);
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, "[]", 2, &out, &outlen), -1);
	/* by shape: a lone "Tools" (or "toolſ") is the list to a case-folding client: refused, not passed unread */
	static const char folded[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"Tools\":[{\"name\":\"delete_x\"}]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, folded, strlen(folded), &out, &outlen), -1);
	static const char longs[] = "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"tool\xc5\xbf\":[{\"name\":\"delete_x\"}]}}";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, longs, strlen(longs), &out, &outlen), -1);
	/* resources and prompts; a batch of answers */
	static const char batch[] = "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resources\":[{\"uri\":\"file:///docs/a\"},"
	                            "{\"uri\":\"file:///home/x\"}]}},{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"prompts\":"
	                            "[{\"name\":\"get_x\"},{\"name\":\"nope\"}]}}]";
	assert_int_equal(policy_mcp_filter_text(p, h, POLICY_MCP_M_NONE, batch, strlen(batch), &out, &outlen), 2);
	assert_non_null(strstr(out, "file:///docs/a"));
	assert_null(strstr(out, "file:///home/x"));
	assert_null(strstr(out, "nope"));
	free(out);
	policy_unref(p);
}

/* 10,000 tools: filtered in one pass; over POLICY_MCP_LIST_MAX refused. */
static void
test_list_filter_large(void **state)
{
	struct policy *p = st_load(gh_yaml);
	const struct policy_host *h = host_of(p, "mcp.example.test");
	json_t *res = json_object(), *arr = json_array();
	size_t i;
	char name[32];

	(void)state;
	for (i = 0; i < 10000; i++) {
		snprintf(name, sizeof(name), i % 2 ? "get_%zu" : "delete_%zu", i);
		json_array_append_new(arr, json_pack("{s:s,s:s}", "name", name, "description", "a tool"));
	}
	json_object_set_new(res, "tools", arr);
	assert_int_equal(policy_mcp_list_filter(p, h, POLICY_MCP_M_TOOLS_LIST, res), 5000);
	assert_int_equal(json_array_size(json_object_get(res, "tools")), 5000);
	json_decref(res);
	res = json_object();
	arr = json_array();
	for (i = 0; i <= POLICY_MCP_LIST_MAX; i++)
		json_array_append_new(arr, json_object());
	json_object_set_new(res, "tools", arr);
	assert_int_equal(policy_mcp_list_filter(p, h, POLICY_MCP_M_TOOLS_LIST, res), -1);
	json_decref(res);
	policy_unref(p);
}

/* Hosts without rules, in report mode, and a default-allow policy show everything. */
static void
test_visible_defaults(void **state)
{
	struct policy *p = st_load("ca: /x\ndefault: allow\nhosts:\n  a.test:\n    mcp: { endpoint: /mcp }\n"
	                           "  r.test:\n    mode: report\n    mcp: { endpoint: /mcp }\n    rules:\n"
	                           "      - { deny: { path: /mcp, mcp: { tool: x } } }\n"
	                           "  d.test:\n    mcp: { endpoint: /mcp }\n    rules:\n"
	                           "      - { allow: { path: /other } }\n");

	(void)state;
	assert_true(policy_mcp_visible(p, host_of(p, "a.test"), POLICY_MCP_M_TOOLS_LIST, "x", 1));
	assert_true(policy_mcp_visible(p, host_of(p, "r.test"), POLICY_MCP_M_TOOLS_LIST, "x", 1));
	assert_true(policy_mcp_visible(p, host_of(p, "d.test"), POLICY_MCP_M_TOOLS_LIST, "x", 1)); /* default: allow */
	policy_unref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_kinds),
		cmocka_unit_test(test_parse_refusals),
		cmocka_unit_test(test_load_ok),
		cmocka_unit_test(test_load_errors),
		cmocka_unit_test(test_decide_messages),
		cmocka_unit_test(test_decide_batch_elements),
		cmocka_unit_test(test_decide_answers_and_roots),
		cmocka_unit_test(test_audit_args),
		cmocka_unit_test(test_visible),
		cmocka_unit_test(test_list_filter),
		cmocka_unit_test(test_list_filter_large),
		cmocka_unit_test(test_visible_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
