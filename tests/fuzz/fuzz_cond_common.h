/*
 * tests/fuzz/fuzz_cond_common.h - shared by the fuzz_cond_* targets: one
 * policy loaded once, and a decision on a body from the fuzzer.  Checks what
 * must hold whatever the body: a decision is always made, an allow comes
 * only from an allow rule (or the default), and explaining decides the same.
 */
#ifndef SLUICE_TESTS_FUZZ_COND_COMMON_H
#define SLUICE_TESTS_FUZZ_COND_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static struct policy *
fc_policy(const char *yaml)
{
	static struct policy *pol;
	char err[512];

	if (pol == NULL && policy_load_buffer("fuzz.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err)) != 0)
		__builtin_trap();
	return pol;
}

static void
fc_nop(void *arg, const struct policy_explain_step *st)
{
	(void)arg;
	if (st->rule == NULL)
		__builtin_trap();
}

static void
fc_decide(const struct policy *pol, const char *host, const char *method, const char *path, const char *ctype,
          const char *query, const uint8_t *data, size_t size, int partial)
{
	struct policy_conn_decision cd;
	struct policy_request q;
	struct policy_decision d, e;
	struct policy_header h = {"X-Test", 6, (const char *)data, size > 64 ? 64 : size};
	unsigned flags;
	size_t i;

	policy_decide_conn(pol, host, 443, &cd);
	memset(&q, 0, sizeof(q));
	q.method = method;
	q.method_len = strlen(method);
	q.path = path;
	q.path_len = strlen(path);
	q.query = query;
	q.query_len = query != NULL ? strlen(query) : 0;
	q.headers = &h;
	q.nheaders = 1;
	q.content_type = ctype;
	q.content_type_len = strlen(ctype);
	(void)policy_body_need(pol, cd.host, &q, &flags);
	q.body = (const char *)data;
	q.body_len = size;
	q.body_complete = !partial;
	policy_decide(pol, cd.host, &q, &d);
	policy_explain(pol, cd.host, &q, &e, fc_nop, NULL);
	if (d.act.verdict != e.act.verdict || strcmp(d.act.rule, e.act.rule) != 0 || d.nfields != e.nfields)
		__builtin_trap();
	if (d.act.budget != NULL && d.act.verdict == POLICY_REQ_ALLOW && d.act.amount < 0)
		__builtin_trap();
	for (i = 0; i < d.nfields; i++)
		if (strlen(d.fields[i].value) > POLICY_FIELD_VALUE_MAX + 3)
			__builtin_trap();
}

#endif
