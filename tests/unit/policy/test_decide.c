/*
 * tests/unit/policy/test_decide.c - verdicts (allow, deny, hold), modes
 * (enforce, report, off; per host and per rule), limits and budgets in the
 * decision, the relevant fields of a hold, policy_body_need, explanations,
 * the path-only API, and policy check's findings (shadowed rules,
 * overlapping wildcards, secrets bound to hosts they cannot reach).
 */
#include <stdlib.h>

#include "semtest.h"
#include "policy/policy_int.h"

static const char modes_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  m.test:\n"
	"    rules:\n"
	"      - { id: off-deny, mode: off, deny: { path: /a } }\n"
	"      - { id: report-deny, deny: { path: \"/a/**\", mode: report } }\n"
	"      - { id: report-allow, mode: report, allow: { path: /b } }\n"
	"      - { id: allow-a, allow: { path: \"/a/**\" } }\n"
	"  r.test:\n"
	"    mode: report\n"
	"    rules:\n"
	"      - { id: r-deny, deny: { path: /x } }\n"
	"      - { id: r-enforced, mode: enforce, deny: { path: /y } }\n"
	"  o.test:\n"
	"    mode: off\n"
	"    rules:\n"
	"      - { id: o-allow, allow: { path: /x } }\n"
	"      - { id: o-on, mode: enforce, allow: { path: /z } }\n";

static void
test_modes(void **state)
{
	struct policy *p = st_load(modes_yaml);
	struct policy_decision d;
	struct st_req r = {.path = "/a"};
	enum policy_req_verdict v;

	(void)state;
	/* off: as if not written */
	ST_EXPECT(p, "m.test", &r, POLICY_REQ_DENY, "default");
	/* a report rule records what it would do; the enforced rules decide */
	r.path = "/a/1";
	st_decide(p, "m.test", &r, &v, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_string_equal(d.act.rule, "allow-a");
	assert_int_equal(d.mode, POLICY_MODE_ENFORCE);
	assert_int_equal(d.reported, 1);
	assert_int_equal(d.report.verdict, POLICY_REQ_DENY);
	assert_string_equal(d.report.rule, "report-deny");
	assert_string_equal(d.report.reason, "denied by rule");
	/* a report allow never opens what the enforced rules refuse */
	r.path = "/b";
	st_decide(p, "m.test", &r, &v, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_DENY);
	assert_string_equal(d.act.rule, "default");
	assert_int_equal(d.reported, 1);
	assert_string_equal(d.report.rule, "report-allow");
	/* a host in report mode: requests pass, the report says what enforce would do */
	r.path = "/x";
	st_decide(p, "r.test", &r, &v, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_string_equal(d.act.rule, "r.test");
	assert_int_equal(d.mode, POLICY_MODE_REPORT);
	assert_int_equal(d.reported, 1);
	assert_int_equal(d.report.verdict, POLICY_REQ_DENY);
	assert_string_equal(d.report.rule, "r-deny");
	r.path = "/nothing";
	st_decide(p, "r.test", &r, &v, &d);
	assert_int_equal(d.act.verdict, POLICY_REQ_ALLOW);
	assert_int_equal(d.mode, POLICY_MODE_REPORT);
	assert_string_equal(d.report.rule, "default");
	assert_string_equal(d.report.reason, "no rule matched");
	/* a rule's own mode overrides its host's */
	r.path = "/y";
	ST_EXPECT(p, "r.test", &r, POLICY_REQ_DENY, "r-enforced");
	r.path = "/x";
	ST_EXPECT(p, "o.test", &r, POLICY_REQ_DENY, "default");
	r.path = "/z";
	ST_EXPECT(p, "o.test", &r, POLICY_REQ_ALLOW, "o-on");
	{
		struct policy_conn_decision cd;

		policy_decide_conn(p, "r.test", 443, &cd);
		assert_int_equal(policy_host_mode(cd.host), POLICY_MODE_REPORT);
	}
	policy_unref(p);
}

static const char hold_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  api.stripe.com:\n"
	"    rules:\n"
	"      - id: small-payments\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /v1/payment_intents\n"
	"          form: { amount: { max: 5000 }, currency: { eq: usd } }\n"
	"          budget: { sum: \"form:amount\", max: \"200.00\", per: day }\n"
	"          limit: { rate: 30/hour, per: global }\n"
	"      - id: refunds\n"
	"        hold: { method: POST, path: /v1/refunds, timeout: 10m, form: { amount: { exists: true } }, "
	"headers: { idempotency-key: { exists: true } } }\n"
	"      - id: any-hold\n"
	"        hold: { path: /v1/other }\n"
	"  llm.test:\n"
	"    rules:\n"
	"      - id: json-budget\n"
	"        allow: { path: /v1, json: { \"$.model\": { in: [m1] } }, budget: { sum: \"json:$.items[*].n\", max: 10, per: hour, scope: sandbox } }\n";

static void
test_hold_limit_budget(void **state)
{
	struct policy *p = st_load(hold_yaml);
	struct policy_decision d;
	struct st_req r = {.method = "POST", .path = "/v1/payment_intents", .ctype = "application/x-www-form-urlencoded",
	                   .body = "amount=12.5&currency=usd"};
	enum policy_req_verdict v;

	(void)state;
	st_decide(p, "api.stripe.com", &r, &v, &d);
	assert_int_equal(v, POLICY_REQ_ALLOW);
	assert_non_null(d.act.limit);
	assert_string_equal(d.act.limit->key, "rule:small-payments");
	assert_int_equal(d.act.limit->count, 30);
	assert_int_equal(d.act.limit->period_s, 3600);
	assert_int_equal(d.act.limit->scope, POLICY_SCOPE_GLOBAL);
	assert_non_null(d.act.budget);
	assert_string_equal(d.act.budget->key, "rule:small-payments");
	assert_string_equal(d.act.budget->sum, "form:amount");
	assert_int_equal(d.act.budget->max, 200 * POLICY_AMOUNT_SCALE);
	assert_int_equal(d.act.budget->period_s, 86400);
	assert_int_equal(d.act.budget->scope, POLICY_SCOPE_GLOBAL);
	assert_int_equal(d.act.amount, 12500000);
	assert_int_equal(d.nfields, 0);
	/* a budget that cannot count the request: the allow rule does not match */
	r.body = "amount=0.0000001&currency=usd";
	ST_EXPECT(p, "api.stripe.com", &r, POLICY_REQ_DENY, "default");
	r.body = "amount=-5&currency=usd";
	ST_EXPECT(p, "api.stripe.com", &r, POLICY_REQ_DENY, "default");
	/* hold: the timeout and what the conditions read */
	r.path = "/v1/refunds";
	r.body = "amount=300&reason=dup&amount=2";
	r.h[0] = "Idempotency-Key: k1";
	st_decide(p, "api.stripe.com", &r, &v, &d);
	assert_int_equal(v, POLICY_REQ_HOLD);
	assert_string_equal(d.act.rule, "refunds");
	assert_string_equal(d.act.reason, "held for approval");
	assert_int_equal(d.act.hold_ms, 600000);
	assert_int_equal(d.nfields, 3);
	assert_string_equal(d.fields[0].place, "header:idempotency-key");
	assert_string_equal(d.fields[0].value, "k1");
	assert_string_equal(d.fields[1].place, "form:amount");
	assert_string_equal(d.fields[1].value, "300");
	assert_string_equal(d.fields[2].value, "2");
	/* a hold rule holds what it cannot read */
	r.body = NULL;
	ST_EXPECT(p, "api.stripe.com", &r, POLICY_REQ_HOLD, "refunds");
	r.path = "/v1/other";
	st_decide(p, "api.stripe.com", &r, &v, &d);
	assert_int_equal(v, POLICY_REQ_HOLD);
	assert_int_equal(d.act.hold_ms, 300000);
	/* a JSON sum over [*] */
	r = (struct st_req){.method = "POST", .path = "/v1", .ctype = "application/json",
	                    .body = "{\"model\":\"m1\",\"items\":[{\"n\":1.5},{\"n\":2},{\"x\":1}]}"};
	st_decide(p, "llm.test", &r, &v, &d);
	assert_int_equal(v, POLICY_REQ_ALLOW);
	assert_int_equal(d.act.amount, 3500000);
	assert_int_equal(d.act.budget->period_s, 3600);
	assert_int_equal(d.act.budget->scope, POLICY_SCOPE_SANDBOX);
	r.body = "{\"model\":\"m1\",\"items\":[{\"n\":\"two\"}]}";
	ST_EXPECT(p, "llm.test", &r, POLICY_REQ_DENY, "default");
	r.body = "{\"model\":\"m1\",\"items\":[{\"n\":1.0000000000000000001}]}";
	ST_EXPECT(p, "llm.test", &r, POLICY_REQ_DENY, "default");
	policy_unref(p);
}

static const char need_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  n.test:\n"
	"    rules:\n"
	"      - { id: admin, deny: { path: \"/admin/**\" } }\n"
	"      - { id: j, allow: { method: POST, path: \"/j/**\", json: { \"$.a\": 1 }, max_body: 64K } }\n"
	"      - { id: f, allow: { method: POST, path: \"/j/f\", form: { a: 1 }, max_body: 2M } }\n"
	"      - { id: q, allow: { method: POST, path: \"/j/**\", query: { skip: { exists: true } } } }\n"
	"      - { id: rep, mode: report, allow: { path: \"/r\" } }\n"
	"      - { id: r2, allow: { path: \"/r\", json: { \"$.b\": 1 } } }\n"
	"  plain.test: {}\n";

static void
test_body_need(void **state)
{
	struct policy *p = st_load(need_yaml);
	struct policy_conn_decision cd;
	struct policy_request q;
	struct policy_header hs[4];
	struct st_req r = {.method = "POST"};
	unsigned flags = 7;

	(void)state;
	policy_decide_conn(p, "n.test", 443, &cd);
#define NEED(path_, query_, want_)                                                      \
	do {                                                                            \
		r.path = (path_);                                                       \
		r.query = (query_);                                                     \
		st_request(&r, &q, hs);                                                 \
		assert_int_equal(policy_body_need(p, cd.host, &q, &flags), (want_));    \
		assert_int_equal(flags, 0);                                             \
	} while (0)
	NEED("/admin/x", NULL, 0);
	NEED("/j/x", NULL, 65536);
	NEED("/j/f", NULL, 2u << 20);
	/* a rule that needs no body and certainly matches stops the walk */
	NEED("/j/x", "skip=1", 65536);
	NEED("/other", NULL, 0);
	/* a report rule does not stop it */
	NEED("/r", NULL, POLICY_MAX_BODY_DEFAULT);
	r.method = "GET";
	NEED("/j/x", NULL, 0);
	policy_decide_conn(p, "plain.test", 443, &cd);
	NEED("/j/x", NULL, 0);
	assert_int_equal(policy_body_need(p, NULL, &q, NULL), 0);
#undef NEED
	policy_unref(p);
}

struct steps {
	char text[2048];
	size_t len;
};

static void
on_step(void *arg, const struct policy_explain_step *st)
{
	struct steps *s = arg;

	s->len += (size_t)snprintf(s->text + s->len, sizeof(s->text) - s->len, "%zu %s %s %s %u %d %s\n", st->index,
	                           st->rule, policy_verdict_name(st->verdict), policy_mode_name(st->mode), st->line,
	                           st->result, st->why != NULL ? st->why : "-");
}

static void
test_explain(void **state)
{
	struct policy *p = st_load(modes_yaml);
	struct policy *q = st_load(hold_yaml);
	struct policy_conn_decision cd;
	struct policy_request rq;
	struct policy_header hs[4];
	struct policy_decision d;
	struct steps s = {"", 0};
	struct st_req r = {.method = "GET", .path = "/a/1"};

	(void)state;
	policy_decide_conn(p, "m.test", 443, &cd);
	st_request(&r, &rq, hs);
	policy_explain(p, cd.host, &rq, &d, on_step, &s);
	assert_string_equal(s.text,
	                    "0 off-deny deny off 5 -1 mode off\n"
	                    "1 report-deny deny report 6 1 -\n"
	                    "2 report-allow allow report 7 0 path /a/1 does not match /b\n"
	                    "3 allow-a allow enforce 8 1 -\n");
	s.len = 0;
	s.text[0] = '\0';
	policy_decide_conn(q, "api.stripe.com", 443, &cd);
	r = (struct st_req){.method = "POST", .path = "/v1/payment_intents", .ctype = "application/x-www-form-urlencoded",
	                    .body = "amount=9000&currency=usd"};
	st_request(&r, &rq, hs);
	policy_explain(q, cd.host, &rq, &d, on_step, &s);
	assert_string_equal(s.text,
	                    "0 small-payments allow enforce 5 0 form amount: \"9000\" fails max 5000\n"
	                    "1 refunds hold enforce 12 0 path /v1/payment_intents does not match /v1/refunds\n"
	                    "2 any-hold hold enforce 14 0 path /v1/payment_intents does not match /v1/other\n");
	s.len = 0;
	s.text[0] = '\0';
	r.path = "/v1/refunds";
	r.ctype = "text/plain";
	r.h[0] = "Idempotency-Key: k";
	st_request(&r, &rq, hs);
	policy_explain(q, cd.host, &rq, &d, on_step, &s);
	assert_string_equal(s.text,
	                    "0 small-payments allow enforce 5 0 path /v1/refunds does not match /v1/payment_intents\n"
	                    "1 refunds hold enforce 12 2 form amount: cannot judge: the body is not "
	                    "application/x-www-form-urlencoded\n");
	policy_unref(p);
	policy_unref(q);
}

static void
test_path_only_api(void **state)
{
	struct policy *p = st_load(hold_yaml);
	struct policy *m = st_load(modes_yaml);
	struct policy_conn_decision cd;
	struct policy_req_decision d;

	(void)state;
	policy_decide_conn(p, "api.stripe.com", 443, &cd);
	/* no body: an allow rule that reads one does not match, a hold rule holds, and the old API denies */
	policy_decide_request(p, cd.host, "POST", 4, "/v1/payment_intents", 19, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "default");
	policy_decide_request(p, cd.host, "POST", 4, "/v1/refunds", 11, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "refunds");
	assert_string_equal(d.reason, "held for approval");
	policy_decide_request(p, cd.host, "POST", 4, "/v1/other", 9, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "any-hold");
	assert_string_equal(d.reason, "held for approval");
	/* an allow rule that wants a query parameter absent cannot tell without the query */
	{
		struct policy *qp = st_load("ca: /x\nhosts:\n  q.test:\n    rules:\n"
		                            "      - { id: a, allow: { query: { debug: { absent: true } } } }\n"
		                            "      - { id: h, hold: { headers: { x: { absent: true } } } }\n");

		policy_decide_conn(qp, "q.test", 443, &cd);
		policy_decide_request(qp, cd.host, "GET", 3, "/", 1, &d);
		assert_int_equal(d.allow, 0);
		assert_string_equal(d.rule, "h");
		policy_unref(qp);
	}
	policy_decide_conn(m, "m.test", 443, &cd);
	policy_decide_request(m, cd.host, "GET", 3, "/a/b", 4, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "allow-a");
	policy_unref(p);
	policy_unref(m);
}

static void
expect_lint(const char *yaml, const char *const *want, size_t nwant, size_t nerrors)
{
	struct policy *p = st_load(yaml);
	size_t i;

	for (i = 0; i < policy_warning_count(p) && i < nwant; i++)
		assert_string_equal(policy_warning_get(p, i), want[i]);
	if (policy_warning_count(p) != nwant) {
		for (i = 0; i < policy_warning_count(p); i++)
			print_error("%s\n", policy_warning_get(p, i));
		fail_msg("%zu findings, expected %zu", policy_warning_count(p), nwant);
	}
	assert_int_equal(policy_lint_errors(p), nerrors);
	policy_unref(p);
}

static void
test_lint(void **state)
{
	static const char shadow_yaml[] =
		"ca: /x\n"
		"hosts:\n"
		"  a.test:\n"
		"    rules:\n"
		"      - { id: r0, allow: { method: [GET, HEAD], path: \"/repos/**\" } }\n"
		"      - { id: r1, deny: { method: GET, path: \"/repos/*/x\" } }\n"
		"      - { id: r2, allow: { method: POST, path: \"/repos/x\" } }\n"
		"      - { id: r3, allow: { method: GET, path: \"/reposx\" } }\n"
		"      - { id: r4, allow: { method: GET, path: \"/repos/a\", json: { \"$.a\": 1 } } }\n"
		"      - { id: r5, mode: report, allow: { path: \"/**\" } }\n"
		"      - { id: r6, allow: { path: \"/z\" } }\n"
		"      - { id: r7, deny: { path: \"regex:/a[0-9]\" } }\n"
		"      - { id: r8, allow: { path: \"regex:/a[0-9]\" } }\n"
		"      - { id: r9, allow: { path: \"regex:/b[0-9]\" } }\n"
		"      - { id: r10, deny: { path: \"regex:/b[0-9]\" } }\n"
		"      - { id: r11, allow: { path: \"/q/*\" } }\n"
		"      - { id: r12, allow: { path: \"/q/a\" } }\n"
		"      - { id: r13, allow: { json: { \"$.a\": 1 } } }\n"
		"      - { id: r14, allow: {} }\n"
		"      - { id: r15, allow: { path: /anything } }\n";
	static const char *const shadow_want[] = {
		"s.yaml:6:9: warning: rule 'r1' (hosts.a.test.rules[1]) can never match: rule 'r0' (line 5) matches every "
		"request it would",
		"s.yaml:9:9: warning: rule 'r4' (hosts.a.test.rules[4]) can never match: rule 'r0' (line 5) matches every "
		"request it would",
		"s.yaml:13:9: warning: rule 'r8' (hosts.a.test.rules[8]) can never match: rule 'r7' (line 12) matches every "
		"request it would",
		"s.yaml:20:9: warning: rule 'r15' (hosts.a.test.rules[15]) can never match: rule 'r14' (line 19) matches "
		"every request it would",
	};
	static const char overlap_yaml[] =
		"ca: /x\n"
		"hosts:\n"
		"  \"*.example.com\": {}\n"
		"  api.example.com: {}\n"
		"  \"*.deep.example.com\": {}\n"
		"  example.com: {}\n"
		"  other.test: {}\n";
	static const char *const overlap_want[] = {
		"s.yaml:3:3: warning: host entry '*.example.com' also covers 'api.example.com' (line 4), whose more specific "
		"entry wins: the rules of '*.example.com' do not apply there",
		"s.yaml:3:3: warning: host entry '*.example.com' also covers '*.deep.example.com' (line 5), whose more "
		"specific entry wins: the rules of '*.example.com' do not apply there",
	};
	static const char secrets_yaml[] =
		"ca: /x\n"
		"hosts:\n"
		"  api.test:\n"
		"    rules:\n"
		"      - deny: { path: /x }\n"
		"  ok.test: {}\n"
		"  held.test:\n"
		"    rules:\n"
		"      - hold: { path: /x }\n"
		"  pt.test: { verdict: passthrough }\n"
		"  no.test: { verdict: deny }\n"
		"  \"*.wild.test\": {}\n"
		"secrets:\n"
		"  s:\n"
		"    source: env:S\n"
		"    hosts: [ok.test, api.test, missing.test, pt.test, no.test, held.test, a.wild.test, \"*.x.wild.test\", "
		"\"*.none.test\"]\n"
		"    limit: { rate: 100/day }\n";
	static const char *const secrets_want[] = {
		"s.yaml:16:22: warning: secret 's' is bound to host 'api.test', whose entry 'api.test' has no allow rule",
		"s.yaml:16:32: error: secret 's' is bound to host 'missing.test', which has no entry in hosts (and default "
		"is deny): it can never be used",
		"s.yaml:16:46: warning: secret 's' is bound to host 'pt.test', whose entry 'pt.test' is passthrough: nothing "
		"is injected into traffic the gateway does not read",
		"s.yaml:16:55: warning: secret 's' is bound to host 'no.test', whose entry 'no.test' says verdict: deny",
		"s.yaml:16:105: error: secret 's' is bound to host '*.none.test', which has no entry in hosts (and default "
		"is deny): it can never be used",
	};
	struct policy *p;
	const struct policy_limit *l;

	(void)state;
	expect_lint(shadow_yaml, shadow_want, 4, 0);
	expect_lint(overlap_yaml, overlap_want, 2, 0);
	expect_lint(secrets_yaml, secrets_want, 5, 2);
	{
		/* the gateway's load (no flag) refuses it, naming the first error */
		char err[1024];

		assert_string_equal(st_load_err(secrets_yaml, err, sizeof(err)),
		                    "s.yaml:16:32: error: secret 's' is bound to host 'missing.test', which has no entry in "
		                    "hosts (and default is deny): it can never be used (and more: `sluice policy check` "
		                    "lists them)");
	}
	p = st_load(secrets_yaml);
	l = policy_secret_limit(p, "s");
	assert_non_null(l);
	assert_string_equal(l->key, "secret:s");
	assert_int_equal(l->count, 100);
	assert_int_equal(l->period_s, 86400);
	assert_int_equal(l->scope, POLICY_SCOPE_SANDBOX);
	assert_null(policy_secret_limit(p, "t"));
	assert_int_equal(policy_secret_count(p), 1);
	policy_unref(p);
	/* default allow: a host without an entry is reachable */
	p = st_load("ca: /x\ndefault: allow\nsecrets:\n  s:\n    source: env:S\n    hosts: [x.test]\n");
	assert_int_equal(policy_warning_count(p), 0);
	policy_unref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_modes),
		cmocka_unit_test(test_hold_limit_budget),
		cmocka_unit_test(test_body_need),
		cmocka_unit_test(test_explain),
		cmocka_unit_test(test_path_only_api),
		cmocka_unit_test(test_lint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
