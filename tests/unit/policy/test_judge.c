/*
 * tests/unit/policy/test_judge.c - the one judge (policy/judge.h) on its
 * own: the connection verdict (deny, passthrough, plain HTTP to a
 * passthrough host, transparent status 0), the path refusal, the body bound
 * at the head and with the body, JUDGE_NEED_BODY and the second call, the
 * git section (malformed, incomplete, decided on the section), holds (hold_ms,
 * the hold's body bound), report mode, the takes asked for and the counters
 * view (rate, then budget; which takes to apply), Content-Type from the head
 * (two of them: none known), the _method form check, and the text helpers.
 */
#include <stdlib.h>

#include "semtest.h"
#include "policy/judge.h"

static const char yaml[] =
	"ca: /x\n"
	"default: deny\n"
	"hosts:\n"
	"  pass.test: { verdict: passthrough }\n"
	"  a.test:\n"
	"    rules:\n"
	"      - { id: no-admin, deny: { path: \"/admin/**\" } }\n"
	"      - id: pay\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /pay\n"
	"          form: { amount: { min: 1, max: 5000 } }\n"
	"          budget: { sum: \"form:amount\", max: 100, per: day }\n"
	"      - { id: small, allow: { method: PUT, path: /small, json: { \"$.a\": { eq: 1 } }, max_body: 64 } }\n"
	"      - id: chat\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /chat\n"
	"          json: { \"$.model\": { eq: m1 } }\n"
	"          limit: { rate: 2/hour, per: sandbox }\n"
	"      - id: refund\n"
	"        hold: { method: POST, path: /refund, timeout: 2m }\n"
	"      - id: push\n"
	"        allow: { method: POST, path: /r.git/git-receive-pack, git: { refs: [\"refs/heads/agent/**\"] } }\n"
	"      - { id: tools, mode: report, deny: { path: /report } }\n"
	"      - { id: read, allow: { method: GET } }\n"
	"      - { id: forms, allow: { method: POST, path: /form } }\n"
	"  r.test:\n"
	"    mode: report\n"
	"    rules:\n"
	"      - { id: r-deny, deny: { path: /x } }\n"
	"secrets:\n"
	"  f:\n"
	"    source: env:F\n"
	"    hosts: [a.test]\n"
	"    inject: [\"form:token\"]\n";

static struct policy *pol;

static int
setup(void **state)
{
	(void)state;
	pol = st_load(yaml);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	policy_unref(pol);
	return 0;
}

struct fx {
	struct judge_conn cf;
	struct judge_req rq;
	struct policy_header h[4];
	struct judge_outcome o;
};

/* A request of <method> to https://<host><path> with body <body> (NULL: none) of type <ct> (NULL: none). */
static void
fx_init(struct fx *f, const char *host, const char *method, const char *path, const char *ct, const char *body)
{
	memset(f, 0, sizeof(*f));
	f->cf.host = host;
	f->cf.port = 443;
	f->cf.tls = 1;
	f->cf.sandbox = "s1";
	f->rq.method = method;
	f->rq.method_len = strlen(method);
	f->rq.path = path;
	f->rq.path_len = strlen(path);
	if (ct != NULL) {
		f->h[0].name = "Content-Type";
		f->h[0].name_len = 12;
		f->h[0].value = ct;
		f->h[0].value_len = strlen(ct);
		f->rq.headers = f->h;
		f->rq.nheaders = 1;
	}
	if (body != NULL) {
		f->rq.has_body = body[0] != '\0';
		f->rq.body_len_known = 1;
		f->rq.body_total = strlen(body);
		f->rq.body = body;
		f->rq.body_len = strlen(body);
		f->rq.body_complete = 1;
	}
}

static void
judge(struct fx *f, const struct judge_counters *ctr)
{
	assert_int_equal(policy_judge(pol, &f->cf, &f->rq, ctr, &f->o, NULL, NULL), 0);
}

static void
test_conn(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, "nowhere.test", "GET", "/", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.stage, JUDGE_AT_CONN);
	assert_int_equal(f.o.status, 403);
	assert_string_equal(f.o.rule, "default");
	/* a refused transparent TLS connection is closed, not answered */
	f.cf.mode = JUDGE_CONN_TRANSPARENT;
	policy_judge_conn(pol, &f.cf, &f.o);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.status, 0);
	/* passthrough: TLS only; plain HTTP to the same entry is read */
	fx_init(&f, "pass.test", "GET", "/", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_PASSTHROUGH);
	assert_false(f.o.decided);
	f.cf.tls = 0;
	f.cf.port = 80;
	policy_judge_conn(pol, &f.cf, &f.o);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_non_null(f.o.entry);
	/* judged: the entry given is used, the connection not judged again */
	fx_init(&f, "nowhere.test", "GET", "/x", NULL, NULL);
	f.cf.judged = 1;
	f.cf.entry = NULL;
	judge(&f, NULL);
	assert_int_equal(f.o.stage, JUDGE_AT_RULES);
	assert_string_equal(f.o.rule, "default");
}

static void
test_path(void **state)
{
	struct judge_outcome o;
	char buf[64];

	(void)state;
	assert_int_equal(policy_judge_path(NULL, "/a/./b/../c", 11, buf, sizeof(buf), &o), 4);
	assert_string_equal(buf, "/a/c");
	assert_true(policy_judge_path(NULL, "/../x", 5, buf, sizeof(buf), &o) < 0);
	assert_int_equal(o.verdict, JUDGE_DENY);
	assert_int_equal(o.stage, JUDGE_AT_PATH);
	assert_int_equal(o.status, 400);
	assert_string_equal(o.rule, "path");
	assert_non_null(o.reason);
}

static void
test_rules_and_report(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, "a.test", "GET", "/admin/x", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.stage, JUDGE_AT_RULES);
	assert_int_equal(f.o.status, 403);
	assert_string_equal(f.o.rule, "no-admin");
	assert_true(f.o.decided);
	fx_init(&f, "a.test", "GET", "/report", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_string_equal(f.o.rule, "read");
	assert_int_equal(f.o.dec.reported, 1);
	assert_string_equal(f.o.dec.report.rule, "tools");
	assert_false(f.o.report_mode);
	/* a host in report mode: passes, and says so */
	fx_init(&f, "r.test", "GET", "/other", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_true(f.o.report_mode);
}

static void
test_body(void **state)
{
	struct fx f;
	struct judge_outcome first;

	(void)state;
	/* at the head: the body is asked for */
	fx_init(&f, "a.test", "POST", "/chat", "application/json", "{\"model\":\"m1\"}");
	f.rq.body = NULL;
	f.rq.body_len = 0;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_NEED_BODY);
	assert_int_equal(f.o.need, 1024 * 1024);
	first = f.o;
	/* held but not all of it: still asked for */
	f.rq.body = "{\"model\"";
	f.rq.body_len = 8;
	f.rq.body_complete = 0;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_NEED_BODY);
	/* the second call, with the need of the first */
	f.rq.body = "{\"model\":\"m1\"}";
	f.rq.body_len = strlen(f.rq.body);
	f.rq.body_complete = 1;
	f.rq.need_known = 1;
	f.rq.need = first.need;
	f.rq.need_flags = first.need_flags;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_string_equal(f.o.rule, "chat");
	assert_non_null(f.o.limit);
	assert_null(f.o.budget);
	/* over the rules' max_body: 413 at the head (Content-Length) and with the body */
	fx_init(&f, "a.test", "PUT", "/small", "application/json", "{\"a\":1}");
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_int_equal(f.o.need, 64);
	f.rq.body = NULL;
	f.rq.body_total = 65;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.stage, JUDGE_AT_BODY);
	assert_int_equal(f.o.status, 413);
	assert_string_equal(f.o.rule, "max_body");
	assert_non_null(strstr(f.o.reason, "64 bytes"));
	f.rq.body_len_known = 0;
	f.rq.body = "{\"a\":1,\"pad\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}";
	f.rq.body_len = strlen(f.rq.body);
	judge(&f, NULL);
	assert_int_equal(f.o.status, 413);
	/* two Content-Types: none known, so the form rule cannot judge and the default decides */
	fx_init(&f, "a.test", "POST", "/pay", "application/x-www-form-urlencoded", "amount=1");
	f.h[1] = f.h[0];
	f.rq.nheaders = 2;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_string_equal(f.o.rule, "default");
}

static void
test_git(void **state)
{
	static const char push[] = "00691111111111111111111111111111111111111111 2222222222222222222222222222222222222222"
	                           " refs/heads/agent/x\n" /* 0x69 = 105 bytes */ "0000PACKxxxx";
	struct fx f;

	(void)state;
	assert_int_equal(strlen("00691111111111111111111111111111111111111111 2222222222222222222222222222222222222222"
	                        " refs/heads/agent/x\n"), 0x69);
	fx_init(&f, "a.test", "POST", "/r.git/git-receive-pack", "application/x-git-receive-pack-request", push);
	f.rq.body_total = 50u << 20;  /* a push may be any size: only its section is read */
	f.rq.body = NULL;
	f.rq.body_len = 0;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_NEED_BODY);
	assert_true(f.o.need_flags & POLICY_NEED_GIT_SECTION);
	f.rq.body = push;
	f.rq.body_len = 20;  /* the section is not whole yet */
	f.rq.body_complete = 0;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_NEED_BODY);
	f.rq.body_len = strlen(push);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_string_equal(f.o.rule, "push");
	assert_int_equal(f.o.git_section, 0x69 + 4);
	/* malformed, and cut short at the end: refused before any rule */
	fx_init(&f, "a.test", "POST", "/r.git/git-receive-pack", "application/x-git-receive-pack-request", "zzzz x");
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.status, 403);
	assert_string_equal(f.o.rule, "git");
	assert_false(f.o.decided);
	fx_init(&f, "a.test", "POST", "/r.git/git-receive-pack", "application/x-git-receive-pack-request", "0044111");
	judge(&f, NULL);
	assert_string_equal(f.o.rule, "git");
}

static void
test_hold(void **state)
{
	struct fx f;

	(void)state;
	fx_init(&f, "a.test", "POST", "/refund", NULL, NULL);
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_HOLD);
	assert_string_equal(f.o.rule, "refund");
	assert_int_equal(f.o.hold_ms, 120000);
	assert_int_equal(f.o.hold_body_max, JUDGE_HOLD_BODY_MAX);
	assert_int_equal(f.o.status, 200);
	/* the approval binds the whole body: a larger one is refused at once */
	fx_init(&f, "a.test", "POST", "/refund", "text/plain", "x");
	f.rq.body = NULL;
	f.rq.body_total = JUDGE_HOLD_BODY_MAX + 1;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_int_equal(f.o.status, 413);
	assert_true(f.o.decided);
	assert_non_null(strstr(f.o.reason, "held for approval"));
}

/* A counters view with <rate> tokens and <budget> left, whatever the counter. */
static uint64_t rate_v;
static int64_t budget_v;
static uint64_t
rate_left(void *arg, const struct policy_limit *lim, const char *sandbox)
{
	(void)arg;
	(void)lim;
	assert_string_equal(sandbox, "s1");
	return rate_v;
}
static int64_t
budget_left(void *arg, const struct policy_budget *b, const char *sandbox)
{
	(void)arg;
	(void)b;
	(void)sandbox;
	return budget_v;
}

static void
test_takes(void **state)
{
	struct judge_counters view = {rate_left, budget_left, NULL};
	struct fx f;

	(void)state;
	fx_init(&f, "a.test", "POST", "/pay", "application/x-www-form-urlencoded", "amount=60");
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_non_null(f.o.budget);
	assert_int_equal(f.o.amount, 60 * POLICY_AMOUNT_SCALE);
	/* without a view, nothing is refused for counters: the caller takes them (the gateway) */
	assert_int_equal(f.o.refused_take, JUDGE_TAKE_ALL);
	budget_v = 59 * POLICY_AMOUNT_SCALE;
	judge(&f, &view);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	assert_int_equal(f.o.stage, JUDGE_AT_COUNTERS);
	assert_int_equal(f.o.status, 429);
	assert_int_equal(f.o.refused_take, JUDGE_TAKE_BUDGET);
	budget_v = 60 * POLICY_AMOUNT_SCALE;
	judge(&f, &view);
	assert_int_equal(f.o.status, 200);
	assert_int_equal(f.o.refused_take, JUDGE_TAKE_ALL);
	fx_init(&f, "a.test", "POST", "/chat", "application/json", "{\"model\":\"m1\"}");
	rate_v = 0;
	judge(&f, &view);
	assert_int_equal(f.o.status, 429);
	assert_int_equal(f.o.refused_take, JUDGE_TAKE_LIMIT);
	assert_string_equal(f.o.rule, "chat");
	rate_v = 1;
	judge(&f, &view);
	assert_int_equal(f.o.status, 200);
	/* a denied request asks for no take */
	fx_init(&f, "a.test", "POST", "/pay", "application/x-www-form-urlencoded", "amount=6000");
	judge(&f, &view);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_null(f.o.budget);
	assert_null(f.o.limit);
}

static void
test_method_override(void **state)
{
	struct fx f;

	(void)state;
	/* a form a secret may be injected into, that no rule reads: its _method is read, after the rules */
	fx_init(&f, "a.test", "POST", "/form", "application/x-www-form-urlencoded", "_method=DELETE&a=1");
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_DENY);
	assert_string_equal(f.o.rule, "request");
	fx_init(&f, "a.test", "POST", "/form", "application/x-www-form-urlencoded", "_method=POST");
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_ALLOW);
	/* where the override could matter the policy holds the form itself (policy/screen.c): asked for */
	fx_init(&f, "a.test", "POST", "/form", "application/x-www-form-urlencoded", "_method=DELETE");
	f.rq.body = NULL;
	judge(&f, NULL);
	assert_int_equal(f.o.verdict, JUDGE_NEED_BODY);
}

static void
test_text(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(policy_period_name(60), "minute");
	assert_string_equal(policy_period_name(86400), "day");
	assert_string_equal(policy_period_name(7), "period");
	assert_string_equal(policy_amount_fmt(12500000, b, sizeof(b)), "12.5");
	assert_string_equal(policy_amount_fmt(200000000, b, sizeof(b)), "200");
	assert_string_equal(policy_amount_fmt(-500000, b, sizeof(b)), "-0.5");
	assert_string_equal(policy_judge_verdict_name(JUDGE_HOLD), "hold");
	assert_string_equal(policy_judge_verdict_name(JUDGE_PASSTHROUGH), "passthrough");
	assert_int_equal(policy_judge(NULL, NULL, NULL, NULL, NULL, NULL, NULL), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn),      cmocka_unit_test(test_path),  cmocka_unit_test(test_rules_and_report),
		cmocka_unit_test(test_body),      cmocka_unit_test(test_git),   cmocka_unit_test(test_hold),
		cmocka_unit_test(test_takes),     cmocka_unit_test(test_method_override),
		cmocka_unit_test(test_text),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
