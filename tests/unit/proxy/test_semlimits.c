/*
 * test_semlimits.c - the limits of an allowed request (proxy/judge/semlimits.c,
 * sem_admit) without a gateway: the policy decides (policy_decide) a request
 * of the shared fixture (sessfake.h), the real counters (limits.c, in memory) count, and a fake
 * session answers the refusal sem_admit returns as http_refuse would (the
 * JSON answer of respond.c into a test buffer) and records it
 * (sessfake.h).  Covered: the order (each secret's limit, then the rule's, then
 * its budget) and that a refused request takes nothing from the limits after
 * the one that refused it; a request admitted twice (resent on a stale pooled
 * upstream) counted once; the 429's Retry-After and JSON body naming the limit
 * and its kind; a budget refunded; fail closed (503) with no counters and with
 * counters that cannot be saved.  The values here are fake.
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
#include "proxy/core/context.h"
#include "proxy/judge/limits.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/semantic_int.h"
#include "proxy/core/refusal.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/store/store.h"
#include "secrets/secrets.h"
#include <event2/event.h>
#include "common/clock.h"
#include "tests/unit/proxy/sessfake.h"
#include "tests/unit/proxy/redis_fixture.h"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - id: list\n"
	"        allow: { method: GET, path: /list, limit: { rate: 2/minute } }\n"
	"      - id: pay\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /pay\n"
	"          budget: { sum: \"form:amount\", max: 10, per: day, scope: global }\n"
	"      - id: free\n"
	"        allow: { method: GET, path: /free }\n"
	"      - id: tip\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /tip\n"
	"          budget: { sum: \"form:amount\", max: 3, per: day }\n"
	"secrets:\n"
	"  tok:\n"
	"    source: env:UNIT_TOK\n"
	"    hosts: [api.example.test]\n"
	"    inject: [header:Authorization]\n"
	"    limit: { rate: 1/hour, per: global }\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [10.200.1.2/32]\n";

/* ---- the fake session: refusals are answered (JSON) and recorded ---- */

static struct evbuffer *client_out;   /* the bytes toward the client */

/* sem_admit(<c>) as relay_dial calls it, a refusal answered as http_refuse would (not git, not gRPC): its return */
static int
admit(struct conn *c)
{
	int rc = sem_admit(c, &fake_rf);

	if (rc < 0)
		respond_refusal(client_out, &fake_rf, c->host, fake_rf.close);
	return fake_ret(c, rc);
}

/* semantic.c's: r->sem made on first use */
struct sem_req *
sem_req_of(struct req *r)
{
	if (r->sem == NULL)
		r->sem = xcalloc(1, sizeof(*r->sem));
	return r->sem;
}

/* ---- fixture (sessfake.h): the counters in memory, the outcome of the current case ---- */

static struct policy_decision dec;

static int
setup(void **state)
{
	struct fake_fx *f = fake_fx_new(yaml);
	char err[512];

	if (f == NULL)
		return -1;
	f->gw.limits = limits_open(NULL, err, sizeof(err));
	if (f->gw.limits == NULL)
		return -1;
	client_out = evbuffer_new();
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fake_fx *f = *state;

	if (f->gw.limits != NULL)
		limits_close(f->gw.limits);
	mcp_req_free(&f->r);
	free(f->r.sem);
	evbuffer_free(client_out);
	fake_fx_free(f);
	return 0;
}

/*
 * A new request <method> <path> (form body <body> or NULL) of sandbox agent-1, decided by the policy as the
 * session does; <uses_tok>: it injects secret tok.  Returns the conn; its req's sem carries the outcome.
 */
static struct conn *
request(struct fake_fx *f, const char *method, const char *path, const char *body, int uses_tok)
{
	struct policy_request q;
	struct sem_req *s;
	size_t i;

	mcp_req_free(&f->r);
	free(f->r.sem);
	fake_fx_conn(f, "api.example.test");
	evbuffer_drain(client_out, evbuffer_get_length(client_out));
	memset(&q, 0, sizeof(q));
	q.method = method;
	q.method_len = strlen(method);
	q.path = path;
	q.path_len = strlen(path);
	if (body != NULL) {
		q.content_type = "application/x-www-form-urlencoded";
		q.content_type_len = strlen(q.content_type);
		q.body = body;
		q.body_len = strlen(body);
		q.body_complete = 1;
		q.has_body = 1;
	}
	policy_decide(f->pol, f->c.entry, &q, &dec);
	assert_int_equal(dec.act.verdict, POLICY_REQ_ALLOW);
	s = sem_req_of(&f->r);
	s->rule = dec.act.rule;
	s->limit = dec.act.limit;
	s->budget = dec.act.budget;
	s->amount = dec.act.amount;
	if (uses_tok) {
		for (i = 0; i < policy_secret_count(f->pol) && strcmp(policy_secret_get(f->pol, i)->name, "tok") != 0; i++)
			;
		assert_true(i < policy_secret_count(f->pol));
		f->r.cred->uses[0].s = policy_secret_get(f->pol, i);
		f->r.cred->nuses = 1;
	}
	return &f->c;
}

static int
client_has(const char *s)
{
	return evbuffer_search(client_out, s, strlen(s), NULL).pos != -1;
}

/* ---- the order: secrets' limits, the rule's, the budget; a refusal takes nothing after it ---- */

static void
test_order(void **state)
{
	struct fake_fx *f = *state;

	/* 1: tok's limit (1/hour) and the rule's (2/minute) each give one token */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 1)), 0);
	assert_int_equal(fake_ans.n, 0);
	/* 2: tok's limit refuses first; the rule's is not touched */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 1)), -1);
	assert_int_equal(fake_ans.status, 429);
	assert_string_equal(fake_ans.rule, "secret:tok");
	assert_string_equal(f->r.sem->limit_key, "secret:tok");
	assert_string_equal(f->r.sem->limit_kind, "rate");
	assert_true(client_has("HTTP/1.1 429 Too Many Requests\r\n"));
	assert_true(client_has("\r\nRetry-After: "));
	assert_true(client_has("\"limit\":\"secret:tok\""));
	assert_true(client_has("\"kind\":\"rate\""));
	/* 3: without the secret, the rule still has its second token (the refusal above took none) */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), 0);
	/* 4: now the rule's limit refuses, naming the rule's counter */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), -1);
	assert_int_equal(fake_ans.status, 429);
	assert_string_equal(fake_ans.rule, "list");
	assert_string_equal(f->r.sem->limit_key, "rule:list");
	assert_non_null(strstr(fake_ans.reason, "rate limit rule:list (2/minute, per sandbox) is exhausted"));
}

/* a request admitted again (resent after a stale pooled upstream) is counted once */
static void
test_admit_once(void **state)
{
	struct fake_fx *f = *state;
	struct conn *c = request(f, "GET", "/list", NULL, 0);

	assert_int_equal(admit(c), 0);
	assert_int_equal(admit(c), 0);
	assert_int_equal(admit(c), 0);
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), 0);   /* the second of 2/minute */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), -1);
}

static void
test_budget(void **state)
{
	struct fake_fx *f = *state;
	struct conn *c;

	assert_int_equal(admit(request(f, "POST", "/pay", "amount=6", 0)), 0);
	assert_int_equal(f->r.sem->budget_taken, 1);
	assert_string_equal(f->r.sem->amount_text, "6");
	/* 6 + 6 > 10 */
	assert_int_equal(admit(request(f, "POST", "/pay", "amount=6", 0)), -1);
	assert_int_equal(fake_ans.status, 429);
	assert_string_equal(f->r.sem->limit_kind, "budget");
	assert_string_equal(f->r.sem->limit_key, "rule:pay");
	assert_non_null(strstr(fake_ans.reason, "would be exceeded by this request's 6"));
	assert_true(client_has("\"kind\":\"budget\""));
	assert_int_equal(f->r.sem->budget_taken, 0);
	/* 3.5 still fits (9.5); a request that never went upstream gives its amount back (6 again) */
	c = request(f, "POST", "/pay", "amount=3.5", 0);
	assert_int_equal(admit(c), 0);
	assert_string_equal(f->r.sem->amount_text, "3.5");
	sem_budget_refund(c);
	assert_int_equal(admit(request(f, "POST", "/pay", "amount=4", 0)), 0);
	assert_int_equal(admit(request(f, "POST", "/pay", "amount=0.5", 0)), -1);   /* 6 + 4 = 10: full */
}

/* fail closed: no counters, or counters that cannot be saved, refuse a limited request (503) */
static void
test_fail_closed(void **state)
{
	struct fake_fx *f = *state;
	struct limits *l = f->gw.limits;

	f->gw.limits = NULL;
	assert_int_equal(admit(request(f, "GET", "/free", NULL, 0)), 0);   /* nothing to count: not touched */
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), -1);
	assert_int_equal(fake_ans.status, 503);
	assert_int_equal(admit(request(f, "GET", "/free", NULL, 1)), -1);   /* the secret's limit */
	assert_int_equal(fake_ans.status, 503);
	f->gw.limits = l;
	limits_set_unsaveable(l, 1);
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), -1);
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "limits unavailable");
	assert_non_null(strstr(fake_ans.reason, "cannot be saved"));
	assert_int_equal(f->r.client_keep_alive, 0);
	limits_set_unsaveable(l, 0);
	assert_int_equal(admit(request(f, "GET", "/list", NULL, 0)), 0);
}

/* ---- the budgets of an MCP batch's elements: each taken, all or none ---- */

#define UNIT INT64_C(1000000)

/* The budget of rule <path>'s (POST, form amount=1) decision. */
static const struct policy_budget *
budget_of(struct fake_fx *f, const char *path)
{
	request(f, "POST", path, "amount=1", 0);
	assert_non_null(dec.act.budget);
	return dec.act.budget;
}

/*
 * A new request of a batch of <n> elements, element i taking <amt>[i] (units) from <b>[i], as mcp_req_judge
 * leaves it for sem_admit (the batch itself takes no budget of its own).  Returns the conn.
 */
static struct conn *
batch(struct fake_fx *f, size_t n, const struct policy_budget *const *b, const double *amt)
{
	struct mcp_req *mr;
	size_t i;

	request(f, "GET", "/free", NULL, 0);
	mr = xcalloc(1, sizeof(*mr));
	mr->judged = 1;
	mr->batch = 1;
	mr->n = n;
	for (i = 0; i < n; i++) {
		mr->m[i].kind = POLICY_MCP_REQUEST;
		mr->m[i].budget = b[i];
		mr->m[i].amount = (int64_t)(amt[i] * (double)UNIT);
		mr->m[i].rule = "pay";
	}
	f->r.mcp = mr;
	return &f->c;
}

/* The sum of budget <key> for <sbx> ("*": global), in units. */
static double
sum(struct fake_fx *f, const char *key, const char *sbx)
{
	int64_t v = limits_peek_kind(f->gw.limits, LIMITS_BUDGET, key, sbx, clock_wall_ms());

	return v < 0 ? 0 : (double)v / (double)UNIT;
}

static void
test_batch_budgets(void **state)
{
	struct fake_fx *f = *state;
	const struct policy_budget *pay = budget_of(f, "/pay"), *tip = budget_of(f, "/tip");
	struct conn *c;

	/* the same budget twice and another one: each element takes its own amount */
	c = batch(f, 3, (const struct policy_budget *[]){pay, pay, tip}, (const double[]){4, 5, 1});
	assert_int_equal(admit(c), 0);
	assert_true(f->r.mcp->m[0].budget_taken && f->r.mcp->m[1].budget_taken && f->r.mcp->m[2].budget_taken);
	assert_true(sum(f, "rule:pay", "*") == 9 && sum(f, "rule:tip", "*") == 1);
	/* the third take does not fit (9.5 + 1 > 10): refused (429), the two before it given back */
	c = batch(f, 3, (const struct policy_budget *[]){pay, tip, pay}, (const double[]){0.5, 1, 1});
	assert_int_equal(admit(c), -1);
	assert_int_equal(fake_ans.status, 429);
	assert_string_equal(f->r.sem->limit_key, "rule:pay");
	assert_string_equal(f->r.sem->limit_kind, "budget");
	assert_non_null(strstr(fake_ans.reason, "would be exceeded by this request's 1"));
	assert_true(sum(f, "rule:pay", "*") == 9 && sum(f, "rule:tip", "*") == 1);
	assert_int_equal(f->r.sem->budget_taken, 0);
	assert_false(f->r.mcp->m[0].budget_taken || f->r.mcp->m[1].budget_taken);
	/* one budget three times: 1 + 1 + 1 > 3 - 1: refused, nothing kept */
	c = batch(f, 3, (const struct policy_budget *[]){tip, tip, tip}, (const double[]){1, 1, 1});
	assert_int_equal(admit(c), -1);
	assert_true(sum(f, "rule:tip", "*") == 1);
	/* admitted, then never sent (the upstream dial failed, the client went away): every element's amount back */
	c = batch(f, 2, (const struct policy_budget *[]){tip, pay}, (const double[]){2, 1});
	assert_int_equal(admit(c), 0);
	assert_true(sum(f, "rule:pay", "*") == 10 && sum(f, "rule:tip", "*") == 3);
	sem_budget_refund(c);
	assert_true(sum(f, "rule:pay", "*") == 9 && sum(f, "rule:tip", "*") == 1);
	assert_int_equal(f->r.sem->budget_taken, 0);
	sem_budget_refund(c);  /* a second refund gives nothing more */
	assert_true(sum(f, "rule:pay", "*") == 9);
}

/* ---- the same with the shared counters (state.backend: redis): a redis-server of the test's own ---- */

static struct rfx rs;
static struct event_base *rbase;
static int admitted_n;
static int admitted_rc;

static void
hook_admitted(struct conn *c, struct refusal *rf)
{
	admitted_rc = rf != NULL ? -1 : 0;
	if (rf != NULL) {
		fake_rf = *rf;
		respond_refusal(client_out, rf, c->host, rf->close);
		(void)fake_ret(c, -1);
	}
	admitted_n++;
}

static const struct sem_hooks hooks = {.admitted = hook_admitted};

static int
setup_redis(void **state)
{
	struct fake_fx *f;
	struct secret_buf *pw;
	struct store_opts o = {.timeout_ms = 2000, .key_prefix = "t:", .backoff_max_ms = 100};
	const char *err = NULL;
	uint64_t end;

	if (setup(state) != 0 || rfx_start(&rs) != 0)
		return -1;
	f = *state;
	f->gw.cfg = f->cfg;
	rbase = event_base_new();
	pw = secret_buf_new(strlen(rs.password) + 1);
	memcpy(pw->p, rs.password, strlen(rs.password));
	pw->len = strlen(rs.password);
	o.unix_path = rs.sock;
	o.password = pw;
	f->w.store = store_create(rbase, &o, &err);
	secret_buf_free(pw);
	if (f->w.store == NULL)
		return -1;
	f->w.sem_hooks = &hooks;
	for (end = clock_mono_ms() + RFX_START_MS; store_state_get(f->w.store) != STORE_S_READY && clock_mono_ms() < end;)
		event_base_loop(rbase, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	return store_state_get(f->w.store) == STORE_S_READY ? 0 : -1;
}

static int
teardown_redis(void **state)
{
	struct fake_fx *f = *state;

	store_destroy(f->w.store);
	f->w.store = NULL;
	event_base_free(rbase);
	rfx_stop(&rs);
	return teardown(state);
}

/* sem_admit through the store: its outcome once the store has answered every step (bounded). */
static int
admit_shared(struct conn *c)
{
	uint64_t end = clock_mono_ms() + 5000;
	int rc;

	admitted_n = 0;
	rc = admit(c);
	if (rc <= 0)
		return rc;
	while (admitted_n == 0 && clock_mono_ms() < end)
		event_base_loop(rbase, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(admitted_n, 1);
	return admitted_rc;
}

/* Runs the store's loop a while: the refunds' answers, which nothing waits for. */
static void
run_pending(void)
{
	uint64_t end = clock_mono_ms() + 300;

	while (clock_mono_ms() < end)
		event_base_loop(rbase, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void
test_batch_budgets_shared(void **state)
{
	struct fake_fx *f = *state;
	const struct policy_budget *pay = budget_of(f, "/pay"), *tip = budget_of(f, "/tip");
	struct conn *c;

	c = batch(f, 3, (const struct policy_budget *[]){pay, pay, tip}, (const double[]){4, 5, 1});
	assert_int_equal(admit_shared(c), 0);
	assert_true(f->r.mcp->m[0].budget_shared && f->r.mcp->m[1].budget_shared && f->r.mcp->m[2].budget_shared);
	/* 9 + 0.5 fits, 9.5 + 1 does not: refused, the elements before it given back in the store */
	c = batch(f, 3, (const struct policy_budget *[]){pay, tip, pay}, (const double[]){0.5, 1, 1});
	assert_int_equal(admit_shared(c), -1);
	assert_int_equal(fake_ans.status, 429);
	assert_string_equal(f->r.sem->limit_key, "rule:pay");
	run_pending();  /* the refunds' answers */
	/* so 1 still fits in pay (9 + 1 = 10) and 2 in tip (1 + 2 = 3): had the refunds not come, both would not */
	c = batch(f, 2, (const struct policy_budget *[]){pay, tip}, (const double[]){1, 2});
	assert_int_equal(admit_shared(c), 0);
	/* admitted, never sent: every element's amount back in the store */
	sem_budget_refund(c);
	run_pending();
	c = batch(f, 2, (const struct policy_budget *[]){pay, tip}, (const double[]){1, 2});
	assert_int_equal(admit_shared(c), 0);
	c = batch(f, 1, (const struct policy_budget *[]){tip}, (const double[]){0.5});
	assert_int_equal(admit_shared(c), -1);  /* full now: 3 of 3 */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admit_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_closed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_budgets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch_budgets_shared, setup_redis, teardown_redis),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
