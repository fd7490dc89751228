/*
 * test_semantic.c - the request record's semantic members (issue 6,
 * proxy/judge/semantic.c fills them, audit/writer.c writes them): mode, report,
 * limit, hold and budget, as nested objects in the documented order
 * (after status, before conn), each only when set, escaped like every
 * other string, and an overflow of a nested object loses the record (it is
 * never written half) rather than producing a broken line.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include "audit/writer_int.h"
#include "proxy/gateway_int.h"

static struct audit_rec
base_rec(void)
{
	struct audit_rec r = {
		.kind = AUDIT_KIND_REQUEST,
		.sandbox = "sb1",
		.id = "7-1",
		.client = "10.200.1.2",
		.host = "api.example.test",
		.method = "POST",
		.path = "/v1/payment_intents",
		.http_version = "1.1",
		.verdict = AUDIT_VERDICT_DENY,
		.rule = "small-payments",
		.reason = "rate limit rule:small-payments (2/second, per sandbox) is exhausted: resets in 1 s (x)",
		.status = 429,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = -1,
		.upstream_tls = -1,
		.conn_id = 7,
		.limit_retry_after = -1,
	};
	return r;
}

static json_t *
format(const struct audit_rec *r, char *buf, size_t cap, long *n)
{
	json_error_t e;

	*n = audit_rec_format(r, buf, cap, 2048);
	if (*n < 0)
		return NULL;
	return json_loadb(buf, (size_t)*n, JSON_REJECT_DUPLICATES, &e);
}

/* A plain request record has none of the semantic members. */
static void
test_none(void **state)
{
	struct audit_rec r = base_rec();
	char buf[4096];
	long n;
	json_t *j;

	(void)state;
	j = format(&r, buf, sizeof(buf), &n);
	assert_non_null(j);
	assert_null(json_object_get(j, "mode"));
	assert_null(json_object_get(j, "report"));
	assert_null(json_object_get(j, "limit"));
	assert_null(json_object_get(j, "hold"));
	assert_null(json_object_get(j, "budget"));
	json_decref(j);
}

/* Every member, nested, in order: ... "status", mode, report, limit, hold, budget, "conn". */
static void
test_all(void **state)
{
	struct audit_rec r = base_rec();
	char buf[4096];
	const char *p, *order[] = {"\"status\":429", "\"mode\":\"report\"", "\"report\":{", "\"limit\":{", "\"hold\":{",
	                           "\"budget\":{", "\"conn\":7"};
	size_t i;
	long n;
	json_t *j, *o;

	(void)state;
	r.mode = "report";
	r.report_verdict = "deny";
	r.report_rule = "no-tools";
	r.report_reason = "denied by rule";
	r.limit_key = "rule:small-payments";
	r.limit_kind = "rate";
	r.limit_retry_after = 1;
	r.limit_reset = "2026-12-01T05:00:00Z";
	r.hold_id = "0123456789abcdef";
	r.hold_outcome = "approved";
	r.hold_by = "uid:0(root)";
	r.budget_key = "rule:small-payments";
	r.budget_amount = "12.5";
	j = format(&r, buf, sizeof(buf), &n);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "mode")), "report");
	o = json_object_get(j, "report");
	assert_true(json_is_object(o));
	assert_string_equal(json_string_value(json_object_get(o, "verdict")), "deny");
	assert_string_equal(json_string_value(json_object_get(o, "rule")), "no-tools");
	assert_string_equal(json_string_value(json_object_get(o, "reason")), "denied by rule");
	o = json_object_get(j, "limit");
	assert_string_equal(json_string_value(json_object_get(o, "key")), "rule:small-payments");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "rate");
	assert_int_equal(json_integer_value(json_object_get(o, "retry_after")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "reset")), "2026-12-01T05:00:00Z");
	o = json_object_get(j, "hold");
	assert_string_equal(json_string_value(json_object_get(o, "id")), "0123456789abcdef");
	assert_string_equal(json_string_value(json_object_get(o, "outcome")), "approved");
	assert_string_equal(json_string_value(json_object_get(o, "by")), "uid:0(root)");
	o = json_object_get(j, "budget");
	assert_string_equal(json_string_value(json_object_get(o, "amount")), "12.5");
	json_decref(j);
	for (p = buf, i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		p = strstr(p, order[i]);
		assert_non_null(p);
	}
	assert_null(memchr(buf, '\n', (size_t)n));
}

/* A rule id is the operator's text, a reason may quote a peer: both escaped inside the nested object. */
static void
test_escaped(void **state)
{
	struct audit_rec r = base_rec();
	char buf[4096];
	long n;
	json_t *j, *o;

	(void)state;
	r.report_verdict = "hold";
	r.report_rule = "x\"},\"verdict\":\"allow";
	r.report_reason = "a\r\n{\"type\":\"request\"}\x1b[31m";
	j = format(&r, buf, sizeof(buf), &n);
	assert_non_null(j);
	o = json_object_get(j, "report");
	assert_int_equal(json_object_size(o), 3);
	assert_string_equal(json_string_value(json_object_get(o, "rule")), "x\"},\"verdict\":\"allow");
	assert_string_equal(json_string_value(json_object_get(j, "verdict")), "deny");
	assert_null(memchr(buf, '\x1b', (size_t)n));
	assert_null(memchr(buf, '\r', (size_t)n));
	json_decref(j);
}

/* A record that does not fit is refused whole (-1), at every size around the nested members. */
static void
test_overflow(void **state)
{
	struct audit_rec r = base_rec();
	char buf[4096], big[900];
	size_t cap, full;
	long n;

	(void)state;
	memset(big, 'r', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r.report_verdict = "deny";
	r.report_rule = big;
	r.hold_id = "0123456789abcdef";
	r.hold_outcome = "timeout";
	n = audit_rec_format(&r, buf, sizeof(buf), 2048);
	assert_true(n > 0);
	full = (size_t)n;
	for (cap = full - 40; cap <= full + 1; cap++) {
		n = audit_rec_format(&r, buf, cap, 2048);
		if (cap > full)
			assert_int_equal(n, (long)full);
		else
			assert_int_equal(n, -1);
	}
	/* a nested object over the record's bound loses the record, never half of it */
	{
		static char huge[AUDIT_BODY_MAX + 16];
		char line[AUDIT_BODY_MAX];

		memset(huge, 'h', sizeof(huge) - 1);
		r.report_rule = huge;
		assert_int_equal(audit_rec_format(&r, line, sizeof(line), 2048), -1);
		assert_int_equal(line[0], '\0');
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_all),
		cmocka_unit_test(test_escaped),
		cmocka_unit_test(test_overflow),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
