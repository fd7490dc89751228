/*
 * tests/unit/policy/semtest.h - helpers shared by the semantic-rule tests:
 * load a policy from text, describe a request in one struct, decide it.
 */
#ifndef SLUICE_TESTS_UNIT_POLICY_SEMTEST_H
#define SLUICE_TESTS_UNIT_POLICY_SEMTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

/* Loads <yaml> as `sluice policy check` does: lint errors are counted, not fatal. */
static inline struct policy *
st_load(const char *yaml)
{
	struct policy *pol = NULL;
	char err[1024];

	if (policy_load_buffer_flags("s.yaml", yaml, strlen(yaml), POLICY_LOAD_LINT_ERRORS_OK, NULL, &pol, err,
	                             sizeof(err)) != 0)
		fail_msg("load: %s", err);
	return pol;
}

/* The load error of <yaml> ("" when it loads). */
static inline const char *
st_load_err(const char *yaml, char *err, size_t cap)
{
	struct policy *pol = NULL;

	err[0] = '\0';
	if (policy_load_buffer("s.yaml", yaml, strlen(yaml), NULL, &pol, err, cap) == 0)
		policy_unref(pol);
	return err;
}

/* A request: headers as "Name: value" strings (at most 4). body NULL: not held. */
struct st_req {
	const char *method;
	const char *path;
	const char *query;
	const char *ctype;
	const char *body;
	size_t body_len;     /* 0: strlen(body) */
	int partial;         /* the body is a prefix */
	const char *h[4];
};

static inline void
st_request(const struct st_req *r, struct policy_request *q, struct policy_header *hs)
{
	size_t i;

	memset(q, 0, sizeof(*q));
	q->method = r->method != NULL ? r->method : "GET";
	q->method_len = strlen(q->method);
	q->path = r->path != NULL ? r->path : "/";
	q->path_len = strlen(q->path);
	q->query = r->query;
	q->query_len = r->query != NULL ? strlen(r->query) : 0;
	q->content_type = r->ctype;
	q->content_type_len = r->ctype != NULL ? strlen(r->ctype) : 0;
	q->body = r->body;
	q->body_len = r->body == NULL ? 0 : r->body_len != 0 ? r->body_len : strlen(r->body);
	q->body_complete = !r->partial;
	for (i = 0; i < 4 && r->h[i] != NULL; i++) {
		const char *c = strchr(r->h[i], ':');

		hs[i].name = r->h[i];
		hs[i].name_len = (size_t)(c - r->h[i]);
		hs[i].value = c + 1;
		hs[i].value_len = strlen(c + 1);
	}
	q->headers = hs;
	q->nheaders = i;
}

/* Decides <r> on <host> of <pol>; returns the act outcome's rule, verdict in *<v>. */
static inline const char *
st_decide(const struct policy *pol, const char *host, const struct st_req *r, enum policy_req_verdict *v,
          struct policy_decision *dout)
{
	static struct policy_decision d;
	struct policy_conn_decision cd;
	struct policy_header hs[4];
	struct policy_request q;

	policy_decide_conn(pol, host, 443, &cd);
	st_request(r, &q, hs);
	policy_decide(pol, cd.host, &q, dout != NULL ? dout : &d);
	*v = (dout != NULL ? dout : &d)->act.verdict;
	return (dout != NULL ? dout : &d)->act.rule;
}

#define ST_EXPECT(pol, host, req, verdict, rule)                                              \
	do {                                                                                  \
		enum policy_req_verdict v_;                                                   \
		const char *r_ = st_decide((pol), (host), (req), &v_, NULL);                   \
		if (v_ != (verdict) || strcmp(r_, (rule)) != 0)                               \
			fail_msg("line %d: expected %s by %s, got %s by %s", __LINE__,       \
			         policy_verdict_name(verdict), (rule), policy_verdict_name(v_), r_); \
	} while (0)

#endif
