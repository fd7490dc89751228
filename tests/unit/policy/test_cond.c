/*
 * tests/unit/policy/test_cond.c - conditions on JSON, form, query and header
 * values: every operator, exact decimals, [*] and repeated fields judged by
 * every value, content types, and the bad bodies of issue 6 (10,000-deep
 * JSON, invalid UTF-8, duplicate keys, bodies not held).
 */
#include <stdlib.h>

#include "semtest.h"
#include "policy/policy_int.h"

#define J "application/json"
#define F "application/x-www-form-urlencoded"

static const char ops_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  j.test:\n"
	"    rules:\n"
	"      - { id: eq, allow: { path: /eq, json: { \"$.a\": { eq: usd } } } }\n"
	"      - { id: num, allow: { path: /num, json: { \"$.n\": { eq: 5000 } } } }\n"
	"      - { id: qnum, allow: { path: /qnum, json: { \"$.n\": { eq: \"0123\" } } } }\n"
	"      - { id: in, allow: { path: /in, json: { \"$.c\": { in: [C0BOTS, C0ALERTS] } } } }\n"
	"      - { id: notin, allow: { path: /notin, json: { \"$.c\": { not_in: [C0EVIL] } } } }\n"
	"      - { id: re, allow: { path: /re, json: { \"$.m\": { regex: \"gpt-4o(-mini)?\" } } } }\n"
	"      - { id: range, allow: { path: /range, json: { \"$.x\": { min: 0.5, max: \"50.00\" } } } }\n"
	"      - { id: exists, allow: { path: /exists, json: { \"$.k\": { exists: true } } } }\n"
	"      - { id: absent, allow: { path: /absent, json: { \"$.k\": { absent: true } } } }\n"
	"      - { id: all, allow: { path: /all, json: { \"$.items[*].amount\": { max: 100 } } } }\n"
	"      - { id: idx, allow: { path: /idx, json: { \"$.messages[0].role\": system } } }\n"
	"      - { id: anykey, allow: { path: /anykey, json: { \"$.meta.*\": { regex: \"[a-z]+\" } } } }\n"
	"      - { id: quoted, allow: { path: /quoted, json: { \"$['a.b']\": { eq: \"true\" } } } }\n"
	"      - { id: bool, allow: { path: /bool, json: { \"$.stream\": { eq: false } } } }\n"
	"      - { id: deny-big, deny: { path: /deny, json: { \"$.items[*].amount\": { min: 1000 } } } }\n"
	"      - { id: after-deny, allow: { path: /deny } }\n"
	"      - { id: two, allow: { path: /two, json: { \"$.a\": { eq: x }, \"$.b\": { eq: y } } } }\n";

/* One JSON case on <host> (a variable of the test) with the test's <p> and <r>. */
#define CASE(path_, body_, verdict_, rule_)                                   \
	do {                                                                  \
		r.path = (path_);                                             \
		r.body = (body_);                                             \
		ST_EXPECT(p, host, &r, (verdict_), (rule_));                  \
	} while (0)

static void
test_json_ops(void **state)
{
	const char *host = "j.test";
	struct policy *p = st_load(ops_yaml);
	struct st_req r = {.method = "POST", .ctype = J};

	(void)state;
	CASE("/eq", "{\"a\":\"usd\"}", POLICY_REQ_ALLOW, "eq");
	CASE("/eq", "{\"a\":\"USD\"}", POLICY_REQ_DENY, "default");
	CASE("/eq", "{\"a\":[\"usd\"]}", POLICY_REQ_DENY, "default");
	CASE("/eq", "{}", POLICY_REQ_DENY, "default");
	/* numbers: exact, whatever the spelling; a numeric literal also matches a decimal string */
	CASE("/num", "{\"n\":5000}", POLICY_REQ_ALLOW, "num");
	CASE("/num", "{\"n\":5000.00}", POLICY_REQ_ALLOW, "num");
	CASE("/num", "{\"n\":5e3}", POLICY_REQ_ALLOW, "num");
	CASE("/num", "{\"n\":\"05000\"}", POLICY_REQ_ALLOW, "num");
	CASE("/num", "{\"n\":5000.000001}", POLICY_REQ_DENY, "default");
	CASE("/num", "{\"n\":\"5000x\"}", POLICY_REQ_DENY, "default");
	/* a quoted literal is text */
	CASE("/qnum", "{\"n\":\"0123\"}", POLICY_REQ_ALLOW, "qnum");
	CASE("/qnum", "{\"n\":\"123\"}", POLICY_REQ_DENY, "default");
	CASE("/qnum", "{\"n\":123}", POLICY_REQ_ALLOW, "qnum");
	CASE("/in", "{\"c\":\"C0ALERTS\"}", POLICY_REQ_ALLOW, "in");
	CASE("/in", "{\"c\":\"C0EVIL\"}", POLICY_REQ_DENY, "default");
	CASE("/notin", "{\"c\":\"C0X\"}", POLICY_REQ_ALLOW, "notin");
	CASE("/notin", "{\"c\":\"C0EVIL\"}", POLICY_REQ_DENY, "default");
	CASE("/notin", "{}", POLICY_REQ_DENY, "default");
	/* regexes are anchored at both ends */
	CASE("/re", "{\"m\":\"gpt-4o\"}", POLICY_REQ_ALLOW, "re");
	CASE("/re", "{\"m\":\"gpt-4o-mini\"}", POLICY_REQ_ALLOW, "re");
	CASE("/re", "{\"m\":\"gpt-4o-minix\"}", POLICY_REQ_DENY, "default");
	CASE("/re", "{\"m\":\"xgpt-4o\"}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":50}", POLICY_REQ_ALLOW, "range");
	CASE("/range", "{\"x\":0.5}", POLICY_REQ_ALLOW, "range");
	CASE("/range", "{\"x\":\"12.25\"}", POLICY_REQ_ALLOW, "range");
	CASE("/range", "{\"x\":50.01}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":0.49999}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":-1}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":\"ten\"}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":true}", POLICY_REQ_DENY, "default");
	/* more digits than a double keeps: not compared as if rounded */
	CASE("/range", "{\"x\":50.0000000000000000001}", POLICY_REQ_DENY, "default");
	CASE("/range", "{\"x\":\"50.0000000000000000001\"}", POLICY_REQ_DENY, "default");
	CASE("/exists", "{\"k\":null}", POLICY_REQ_ALLOW, "exists");
	CASE("/exists", "{\"j\":1}", POLICY_REQ_DENY, "default");
	CASE("/absent", "{\"j\":1}", POLICY_REQ_ALLOW, "absent");
	CASE("/absent", "{\"k\":1}", POLICY_REQ_DENY, "default");
	/* [*]: every element, and at least one */
	CASE("/all", "{\"items\":[{\"amount\":1},{\"amount\":100}]}", POLICY_REQ_ALLOW, "all");
	CASE("/all", "{\"items\":[{\"amount\":1},{\"amount\":101}]}", POLICY_REQ_DENY, "default");
	CASE("/all", "{\"items\":[{\"amount\":1},{\"amt\":1000}]}", POLICY_REQ_ALLOW, "all");
	CASE("/all", "{\"items\":[]}", POLICY_REQ_DENY, "default");
	CASE("/idx", "{\"messages\":[{\"role\":\"system\"},{\"role\":\"user\"}]}", POLICY_REQ_ALLOW, "idx");
	CASE("/idx", "{\"messages\":[{\"role\":\"user\"},{\"role\":\"system\"}]}", POLICY_REQ_DENY, "default");
	CASE("/anykey", "{\"meta\":{\"a\":\"x\",\"b\":\"y\"}}", POLICY_REQ_ALLOW, "anykey");
	CASE("/anykey", "{\"meta\":{\"a\":\"x\",\"b\":\"Y\"}}", POLICY_REQ_DENY, "default");
	CASE("/quoted", "{\"a.b\":\"true\"}", POLICY_REQ_ALLOW, "quoted");
	CASE("/quoted", "{\"a\":{\"b\":\"true\"}}", POLICY_REQ_DENY, "default");
	CASE("/bool", "{\"stream\":false}", POLICY_REQ_ALLOW, "bool");
	CASE("/bool", "{\"stream\":true}", POLICY_REQ_DENY, "default");
	/* a deny rule matches when any value does */
	CASE("/deny", "{\"items\":[{\"amount\":1},{\"amount\":5000}]}", POLICY_REQ_DENY, "deny-big");
	CASE("/deny", "{\"items\":[{\"amount\":1},{\"amount\":2}]}", POLICY_REQ_ALLOW, "after-deny");
	CASE("/deny", "{\"items\":[]}", POLICY_REQ_ALLOW, "after-deny");
	/* ... and when it cannot read the body */
	CASE("/deny", "{\"items\":[{\"amount\":1}],\"items\":[]}", POLICY_REQ_DENY, "deny-big");
	CASE("/deny", "not json", POLICY_REQ_DENY, "deny-big");
	CASE("/two", "{\"a\":\"x\",\"b\":\"y\"}", POLICY_REQ_ALLOW, "two");
	CASE("/two", "{\"a\":\"x\",\"b\":\"z\"}", POLICY_REQ_DENY, "default");
	policy_unref(p);
}

static void
test_json_bad_bodies(void **state)
{
	struct policy *p = st_load(ops_yaml);
	struct st_req r = {.method = "POST", .ctype = J, .path = "/eq"};
	char *deep = malloc(20002 + 16);
	size_t i;

	(void)state;
	/* duplicate keys: the acceptance's trick */
	r.body = "{\"a\":\"usd\",\"a\":\"evil\"}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.body = "{\"a\":\"usd\",\"x\":{\"y\":1,\"y\":2}}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* invalid UTF-8, in a value and in a key */
	r.body = "{\"a\":\"usd\",\"b\":\"\xff\"}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.body = "{\"a\":\"usd\",\"\xc3\x28\":1}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* \u0000 in a string */
	r.body = "{\"a\":\"usd\\u0000\"}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* 10,000 deep: refused before jansson recurses */
	memcpy(deep, "{\"a\":\"usd\",\"b\":", 15);
	for (i = 0; i < 10000; i++)
		deep[15 + i] = '[';
	for (i = 0; i < 10000; i++)
		deep[15 + 10000 + i] = ']';
	deep[20015] = '}';
	deep[20016] = '\0';
	r.body = deep;
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* 64 levels are fine, 65 are not */
	for (i = 0; i < 63; i++)
		deep[15 + i] = '[';
	for (i = 0; i < 63; i++)
		deep[15 + 63 + i] = ']';
	deep[15 + 126] = '}';
	deep[15 + 127] = '\0';
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	memmove(deep + 16, deep + 15, 128);
	deep[15] = '[';
	deep[15 + 128] = ']';
	deep[15 + 129] = '}';
	deep[15 + 130] = '\0';
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* brackets inside strings do not count */
	r.body = "{\"a\":\"usd\",\"s\":\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[\"}";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	/* trailing garbage, a top-level scalar, an empty body */
	r.body = "{\"a\":\"usd\"} x";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.body = "\"usd\"";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.body = "";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* another content type, a Content-Encoding, a body not held or not whole */
	r.body = "{\"a\":\"usd\"}";
	r.ctype = "text/plain";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.ctype = "Application/JSON; charset=utf-8";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	r.ctype = "application/vnd.api+json";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	r.h[0] = "Content-Encoding: gzip";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.h[0] = "Content-Encoding: identity";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	r.h[0] = NULL;
	r.partial = 1;
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	r.partial = 0;
	r.body = NULL;
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	/* Content-Type from the headers when the field is not set; two of them: unreadable */
	r.body = "{\"a\":\"usd\"}";
	r.ctype = NULL;
	r.h[0] = "content-type: application/json";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_ALLOW, "eq");
	r.h[1] = "Content-Type: application/json";
	ST_EXPECT(p, "j.test", &r, POLICY_REQ_DENY, "default");
	free(deep);
	policy_unref(p);
}

static const char form_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  f.test:\n"
	"    rules:\n"
	"      - id: pay\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /pay\n"
	"          form: { amount: { max: 5000 }, currency: { eq: usd }, \"meta data\": { absent: true } }\n"
	"      - { id: q, allow: { path: /q, query: { page: { regex: \"[0-9]{1,3}\" }, debug: { absent: true } } } }\n"
	"      - { id: h, allow: { path: /h, headers: { X-Api-Version: { in: [\"2022-11-28\"] }, X-Debug: { absent: true } } } }\n"
	"      - { id: no-debug, deny: { path: /hd, headers: { x-debug: { exists: true } } } }\n"
	"      - { id: hd-ok, allow: { path: /hd } }\n";

static void
test_form_query_headers(void **state)
{
	struct policy *p = st_load(form_yaml);
	struct st_req r = {.method = "POST", .ctype = F, .path = "/pay"};

	(void)state;
#define FORM(body_, verdict_, rule_)                                 \
	do {                                                         \
		r.body = (body_);                                    \
		ST_EXPECT(p, "f.test", &r, (verdict_), (rule_));     \
	} while (0)
	FORM("amount=4000&currency=usd", POLICY_REQ_ALLOW, "pay");
	FORM("currency=usd&amount=5000.00", POLICY_REQ_ALLOW, "pay");
	FORM("amount=6000&currency=usd", POLICY_REQ_DENY, "default");
	/* the same field twice: every value is judged */
	FORM("amount=100&amount=9000&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=100&currency=usd&currency=eur", POLICY_REQ_DENY, "default");
	FORM("amount=100&amount=200&currency=usd", POLICY_REQ_ALLOW, "pay");
	/* decoded names and values */
	FORM("am%6Funt=4000&currency=%75sd", POLICY_REQ_ALLOW, "pay");
	FORM("amount=4000&currency=usd&meta+data=1", POLICY_REQ_DENY, "default");
	FORM("amount=4000&currency=usd&meta%20data=1", POLICY_REQ_DENY, "default");
	FORM("amount=4000&&currency=usd&", POLICY_REQ_ALLOW, "pay");
	/* not decimals, bad escapes, no value */
	FORM("amount=4e3&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=+4000&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=0x10&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=4000;amount=9000&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=4000&currency=usd&x=%zz", POLICY_REQ_ALLOW, "pay");
	FORM("amount=4000&currency=usd&%zz=1", POLICY_REQ_DENY, "default");
	FORM("amount=%34000&currency=usd", POLICY_REQ_ALLOW, "pay");
	FORM("amount&currency=usd", POLICY_REQ_DENY, "default");
	FORM("amount=-1&currency=usd", POLICY_REQ_ALLOW, "pay");
	r.ctype = J;
	FORM("amount=4000&currency=usd", POLICY_REQ_DENY, "default");
#undef FORM
	r = (struct st_req){.path = "/q", .query = "page=12"};
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_ALLOW, "q");
	r.query = "page=1234";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r.query = "page=1&page=x";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r.query = "page=%31&x=y";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_ALLOW, "q");
	r.query = "page=1&debug";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r.query = NULL;
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r = (struct st_req){.path = "/h", .h = {"x-api-version: 2022-11-28 "}};
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_ALLOW, "h");
	r.h[1] = "X-API-VERSION: 2023";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r.h[1] = "X-Debug: 1";
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "default");
	r = (struct st_req){.path = "/hd", .h = {"a: b", "X-DEBUG:"}};
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_DENY, "no-debug");
	r.h[1] = NULL;
	ST_EXPECT(p, "f.test", &r, POLICY_REQ_ALLOW, "hd-ok");
	policy_unref(p);
}

static void
test_decimals(void **state)
{
	struct policy_dec a, b;
	int64_t x;

	(void)state;
	assert_int_equal(policy_dec_parse("50.00", 5, 0, &a), 0);
	assert_int_equal(policy_dec_parse("5e1", 3, 1, &b), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), 0);
	assert_int_equal(policy_dec_parse("5e1", 3, 0, &b), -1);
	assert_int_equal(policy_dec_parse("-0.001", 6, 0, &a), 0);
	assert_int_equal(policy_dec_parse("0", 1, 0, &b), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), -1);
	assert_int_equal(policy_dec_parse("-0", 2, 0, &a), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), 0);
	assert_int_equal(policy_dec_parse("0.1", 3, 0, &a), 0);
	assert_int_equal(policy_dec_parse("0.10000000000000000001", 22, 0, &b), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), -1);
	assert_int_equal(policy_dec_parse("99", 2, 0, &a), 0);
	assert_int_equal(policy_dec_parse("100", 3, 0, &b), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), -1);
	assert_int_equal(policy_dec_parse("-99", 3, 0, &a), 0);
	assert_int_equal(policy_dec_parse("-100", 4, 0, &b), 0);
	assert_int_equal(policy_dec_cmp(&a, &b), 1);
	/* not numbers */
	assert_int_equal(policy_dec_parse("", 0, 0, &a), -1);
	assert_int_equal(policy_dec_parse("-", 1, 0, &a), -1);
	assert_int_equal(policy_dec_parse(".5", 2, 0, &a), -1);
	assert_int_equal(policy_dec_parse("5.", 2, 0, &a), -1);
	assert_int_equal(policy_dec_parse("+5", 2, 0, &a), -1);
	assert_int_equal(policy_dec_parse("1.2.3", 5, 0, &a), -1);
	assert_int_equal(policy_dec_parse("1e99999", 7, 1, &a), -1);
	/* 41 significant digits */
	assert_int_equal(policy_dec_parse("12345678901234567890123456789012345678901", 41, 0, &a), -1);
	assert_int_equal(policy_dec_parse("12345678901234567890123456789012345678900000", 44, 0, &a), 0);
	/* amounts in millionths */
	assert_int_equal(policy_dec_parse("12.5", 4, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), 0);
	assert_int_equal(x, 12500000);
	assert_int_equal(policy_dec_parse("0.000001", 8, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), 0);
	assert_int_equal(x, 1);
	assert_int_equal(policy_dec_parse("0.0000001", 9, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), -1);
	assert_int_equal(policy_dec_parse("-1", 2, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), -1);
	assert_int_equal(policy_dec_parse("9000000000000", 13, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), 0);
	assert_int_equal(policy_dec_parse("9000000000001", 13, 0, &a), 0);
	assert_int_equal(policy_dec_amount(&a, &x), -1);
}

/* Load errors of the condition keys name file:line:column and what was expected. */
static void
test_cond_errors(void **state)
{
	static const struct {
		const char *rule;
		const char *err;
	} cases[] = {
		{"{ allow: { json: { \"$.a\": { eq: 1, bogus: 2 } } } }",
		 "s.yaml:5:44: unknown key 'bogus' in hosts.a.test.rules[0].allow.json.$.a; expected one of: eq, in"},
		{"{ allow: { json: { \"a.b\": { eq: 1 } } } }", "s.yaml:5:28: bad JSON path 'a.b' in hosts.a.test.rules[0].allow.json"},
		{"{ allow: { json: { \"$.a\": { regex: \"(\" } } } }",
		 "s.yaml:5:44: bad regex in hosts.a.test.rules[0].allow.json.$.a at offset 1: missing closing parenthesis"},
		{"{ allow: { json: { \"$.a\": { min: ten } } } }",
		 "s.yaml:5:42: expected a decimal number (\"5000\", \"-1.25\") for min"},
		{"{ allow: { json: { \"$.a\": { min: 5, max: 4 } } } }", "s.yaml:5:42: min is larger than max"},
		{"{ allow: { json: { \"$.a\": { in: [] } } } }", "s.yaml:5:41: expected a list of 1 to 1024 values"},
		{"{ allow: { json: { \"$.a\": { in: [[x]] } } } }", "s.yaml:5:42: expected a string or a number"},
		{"{ allow: { json: { \"$.a\": {} } } }", "s.yaml:5:35: expected at least one operator in hosts.a.test.rules[0].allow.json.$.a"},
		{"{ allow: { json: { \"$.a\": { absent: true, eq: 1 } } } }", "s.yaml:5:35: absent with a value operator"},
		{"{ allow: { json: { \"$.a\": { exists: true, absent: true } } } }", "s.yaml:5:59: exists and absent contradict"},
		{"{ allow: { json: { \"$.a\": { exists: yes } } } }", "s.yaml:5:45: expected true or false for exists"},
		{"{ allow: { json: [a] } }", "s.yaml:5:26: expected a map of JSON paths to operator maps in hosts.a.test.rules[0].allow.json"},
		{"{ allow: { headers: { \"X Y\": { eq: 1 } } } }", "s.yaml:5:31: bad header name 'X Y'"},
		{"{ allow: { headers: { x: a, X: b } } }", "s.yaml:5:37: duplicate name 'X' in hosts.a.test.rules[0].allow.headers"},
		{"{ allow: { form: { a: 1 }, json: { \"$.a\": 1 } } }", "a body is one or the other"},
		{"{ allow: { git: { refs: [refs/heads/x] }, json: { \"$.a\": 1 } } }", "git with json"},
		{"{ allow: { git: { refs: [\"/refs/x\"] } } }", "s.yaml:5:34: bad ref glob '/refs/x'"},
		{"{ allow: { git: { deny: [force] } } }", "s.yaml:5:34: expected create, update or delete (or a list of them)"},
		{"{ allow: { git: {} } }", "s.yaml:5:25: expected at least one of refs, ops, deny"},
		{"{ allow: { graphql: { type: [read] } } }", "s.yaml:5:38: expected query, mutation or subscription"},
		{"{ allow: { graphql: { op: x } } }", "s.yaml:5:31: unknown key 'op' in hosts.a.test.rules[0].allow.graphql"},
		{"{ allow: { path: /x, max_body: 1M } }", "max_body in hosts.a.test.rules[0].allow, which reads no body"},
		{"{ allow: { json: { \"$.a\": 1 }, max_body: 17M } }", "s.yaml:5:50: expected a size for hosts.a.test.rules[0].allow.max_body"},
		{"{ allow: { timeout: 1m } }", "s.yaml:5:29: timeout in hosts.a.test.rules[0].allow: only a hold rule waits"},
		{"{ hold: { timeout: 25h } }", "s.yaml:5:28: expected a duration for hosts.a.test.rules[0].hold.timeout"},
		{"{ hold: { timeout: 0 } }", "expected a duration"},
		{"{ deny: { limit: { rate: 1/second } } }", "s.yaml:5:26: limit in hosts.a.test.rules[0].deny: a deny rule"},
		{"{ allow: { limit: { rate: 30/fortnight } } }", "s.yaml:5:35: expected a rate N/second, N/minute, N/hour or N/day"},
		{"{ allow: { limit: { rate: 0/hour } } }", "expected a rate"},
		{"{ allow: { limit: { per: sandbox } } }", "missing required key 'rate'"},
		{"{ allow: { limit: { rate: 1/hour, per: team } } }", "expected sandbox or global for hosts.a.test.rules[0].allow.limit.per"},
		{"{ allow: { budget: { sum: \"body:amount\", max: 1 } } }", "expected \"form:<field>\" or \"json:$.<path>\""},
		{"{ allow: { budget: { sum: \"form:amount\", max: -1 } } }", "expected a non-negative decimal number"},
		{"{ allow: { budget: { sum: \"form:amount\", max: 1, per: week } } }", "expected day or hour"},
		{"{ allow: { budget: { sum: \"form:amount\" } } }", "missing required key 'max'"},
		{"{ allow: { budget: { sum: \"form:amount\", max: 1 }, json: { \"$.a\": 1 } } }", "one or the other"},
		{"{ allow: {}, deny: {} }", "expected exactly one of allow, deny in hosts.a.test.rules[0], or hold"},
		{"{ hold: {}, id: a, allow: {} }", "expected exactly one of allow, deny"},
		{"{ id: a, allow: { id: b } }", "s.yaml:5:31: id given twice"},
		{"{ mode: report, allow: { mode: off } }", "mode given twice"},
		{"{ mode: audit, allow: {} }", "s.yaml:5:17: expected enforce, report or off for hosts.a.test.rules[0].mode"},
		{"{ allow: { mode: on } }", "expected enforce, report or off for hosts.a.test.rules[0].allow.mode"},
		{"{ allow: { method: GET, bogus_key: 1 } }",
		 "s.yaml:5:33: unknown key 'bogus_key' in hosts.a.test.rules[0].allow; expected one of: method, path, id, mode, query"},
	};
	char yaml[1024], err[1024];
	size_t i;
	int bad = 0;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(yaml, sizeof(yaml), "ca: /x\nhosts:\n  a.test:\n    rules:\n      - %s\n", cases[i].rule);
		st_load_err(yaml, err, sizeof(err));
		if (strstr(err, cases[i].err) == NULL) {
			print_error("case %zu: %s\n  want: %s\n  got:  %s\n", i, cases[i].rule, cases[i].err, err);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
	st_load_err("ca: /x\nhosts:\n  a.test:\n    mode: shadow\n", err, sizeof(err));
	assert_string_equal(err, "s.yaml:4:11: expected enforce, report or off for hosts.a.test.mode");
	/* counters are kept by id: two counted rules may not share one */
	st_load_err("ca: /x\nhosts:\n  a.test:\n    rules:\n      - { id: x, allow: { limit: { rate: 1/day } } }\n"
	            "  b.test:\n    rules:\n      - { id: x, allow: { limit: { rate: 1/day } } }\n",
	            err, sizeof(err));
	assert_string_equal(err, "s.yaml:8:9: duplicate rule id 'x' (also at line 5): rules with limit or budget need "
	                         "their own ids, their counters are kept by id");
	/* a limit and a budget are different counters; a shared name must declare one counter */
	assert_string_equal(st_load_err("ca: /x\nhosts:\n  a.test:\n    rules:\n      - { id: x, allow: { limit: { rate: 1/day } } }\n"
	                                "      - { id: x, allow: { budget: { sum: \"form:a\", max: 1 } } }\n"
	                                "      - { allow: { limit: { rate: 1/day, name: n } } }\n"
	                                "      - { allow: { limit: { rate: 1/day, name: n } } }\n",
	                                err, sizeof(err)), "");
	st_load_err("ca: /x\nhosts:\n  a.test:\n    rules:\n      - { allow: { budget: { sum: \"form:a\", max: 1, name: n } } }\n"
	            "      - { allow: { budget: { sum: \"form:b\", max: 2, name: n } } }\n", err, sizeof(err));
	assert_string_equal(err, "s.yaml:6:9: counter 'budget:n' is declared differently at line 5: rules that share a "
	                         "name share one counter");
	st_load_err("ca: /x\nhosts:\n  a.test:\n    rules:\n      - { allow: { limit: { rate: 1/day, name: \"a b\" } } }\n",
	            err, sizeof(err));
	assert_string_equal(err, "s.yaml:5:48: expected a counter name (1 to 64 characters, no spaces) for "
	                         "hosts.a.test.rules[0].allow.limit.name");
	st_load_err("ca: /x\nsecrets:\n  s:\n    source: env:X\n    hosts: [a.test]\n    limit: { rate: 5/minute, per: everyone }\n",
	            err, sizeof(err));
	assert_string_equal(err, "s.yaml:6:35: expected sandbox or global for secrets.s.limit.per");
}

/*
 * Keys equal under case folding (Go's encoding/json, ASP.NET Core) on a path a rule reads: cannot judge, so
 * allow rules do not match and deny rules do; such keys elsewhere change nothing.
 */
static const char fold_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  f.test:\n"
	"    rules:\n"
	"      - { id: deny-big, deny: { path: /d, json: { \"$.amount\": { min: 1000 } } } }\n"
	"      - { id: small, allow: { path: /a, json: { \"$.amount\": { max: 100 } } } }\n"
	"      - { id: deep, allow: { path: /deep, json: { \"$.pay.items[*].sku\": { in: [ok] } } } }\n"
	"      - { id: any, allow: { path: /d } }\n"
	"      - { id: uni, allow: { path: /u, json: { \"$['gr\u00f6\u00dfe']\": { eq: s } } } }\n";

static void
test_json_fold(void **state)
{
	const char *host = "f.test";
	struct policy *p = st_load(fold_yaml);
	struct st_req r = {.method = "POST", .ctype = J};

	(void)state;
	CASE("/a", "{\"amount\":1}", POLICY_REQ_ALLOW, "small");
	/* the body, and variants: upper case, mixed case, alone, KELVIN SIGN, LONG S, escaped */
	CASE("/a", "{\"amount\":1,\"AMOUNT\":100000}", POLICY_REQ_DENY, "default");
	CASE("/a", "{\"AMOUNT\":100000,\"amount\":1}", POLICY_REQ_DENY, "default");
	CASE("/a", "{\"amount\":1,\"aMoUnT\":100000}", POLICY_REQ_DENY, "default");
	CASE("/a", "{\"Amount\":100000}", POLICY_REQ_DENY, "default");
	CASE("/d", "{\"amount\":1,\"AMOUNT\":100000}", POLICY_REQ_DENY, "deny-big");
	CASE("/d", "{\"Amount\":100000}", POLICY_REQ_DENY, "deny-big");
	CASE("/d", "{\"amount\":1}", POLICY_REQ_ALLOW, "any");
	r.path = "/a";
	r.body = "{\"amount\":1,\"amount\xe2\x84\xaa\":5}";  /* a key that is not it: K is not t */
	ST_EXPECT(p, host, &r, POLICY_REQ_ALLOW, "small");
	CASE("/a", "{\"amount\":1,\"\\u0061mount\":100000}", POLICY_REQ_DENY, "default"); /* an exact duplicate, escaped */
	CASE("/deep", "{\"pay\":{\"items\":[{\"sku\":\"ok\"}]}}", POLICY_REQ_ALLOW, "deep");
	CASE("/deep", "{\"pay\":{\"items\":[{\"sku\":\"ok\"},{\"sku\":\"ok\",\"\xc5\xbfku\":\"evil\"}]}}", POLICY_REQ_DENY,
	     "default");
	CASE("/deep", "{\"pay\":{\"items\":[{\"sku\":\"ok\"}],\"ITEMS\":[{\"sku\":\"evil\"}]}}", POLICY_REQ_DENY, "default");
	CASE("/deep", "{\"pay\":{\"items\":[{\"sku\":\"ok\"}]},\"PAY\":{}}", POLICY_REQ_DENY, "default");
	CASE("/deep", "{\"pay\":{\"items\":[{\"\\u212Aey\":1,\"sku\":\"ok\"}]},\"\\u017Fku\":1}", POLICY_REQ_ALLOW, "deep");
	/* an escaped letter folds like any other */
	CASE("/a", "{\"amount\":1,\"AMOUN\\u0054\":5}", POLICY_REQ_DENY, "default");
	/* objects no rule reads are not affected */
	CASE("/a", "{\"amount\":1,\"metadata\":{\"Env\":\"a\",\"env\":\"b\"}}", POLICY_REQ_ALLOW, "small");
	CASE("/a", "{\"amount\":1,\"Env\":\"a\",\"env\":\"b\"}", POLICY_REQ_ALLOW, "small");
	/* Unicode simple folding beyond ASCII: \u00f6 / \u00d6, \u00df / \u1e9e */
	CASE("/u", "{\"gr\xc3\xb6\xc3\x9f" "e\":\"s\"}", POLICY_REQ_ALLOW, "uni");
	CASE("/u", "{\"gr\xc3\xb6\xc3\x9f" "e\":\"s\",\"GR\xc3\x96\xe1\xba\x9e" "E\":\"t\"}", POLICY_REQ_DENY, "default");
#undef CASE
	policy_unref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_ops),
		cmocka_unit_test(test_json_fold),
		cmocka_unit_test(test_json_bad_bodies),
		cmocka_unit_test(test_form_query_headers),
		cmocka_unit_test(test_decimals),
		cmocka_unit_test(test_cond_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
