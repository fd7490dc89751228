/*
 * tests/integration/jsonfold/judge.c - how the gateway's condition code
 * reads the fields of each body on stdin (one a line): a policy of hold
 * rules, one per field, decided with policy_explain as the gateway decides
 * (policy_decide).  One output line per body: "<amount>\t<pay.sku>", each
 * the value the rule read (a hold captures it), "-" when the rule's path
 * selects nothing, or "?" when the rule cannot judge the body.
 * A test program, never part of sluice.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

static const char yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  d.test:\n"
	"    rules:\n"
	"      - { id: amount, hold: { path: /amount, json: { \"$.amount\": { regex: \"v[0-9]+\" } } } }\n"
	"      - { id: sku, hold: { path: /sku, json: { \"$.pay.sku\": { regex: \"v[0-9]+\" } } } }\n";

struct seen {
	int cant;
};

static void
step(void *arg, const struct policy_explain_step *s)
{
	struct seen *x = arg;

	if (s->result == 2)
		x->cant = 1;
}

static void
read_field(const struct policy *pol, const struct policy_host *h, const char *path, const char *body, size_t len)
{
	static struct policy_decision d;
	struct policy_request q;
	struct seen x = {0};

	memset(&q, 0, sizeof(q));
	q.method = "POST";
	q.method_len = 4;
	q.path = path;
	q.path_len = strlen(path);
	q.content_type = "application/json";
	q.content_type_len = strlen(q.content_type);
	q.body = body;
	q.body_len = len;
	q.body_complete = 1;
	policy_explain(pol, h, &q, &d, step, &x);
	if (x.cant)
		fputs("?", stdout);
	else if (d.act.verdict != POLICY_REQ_HOLD || d.nfields == 0)
		fputs("-", stdout);
	else
		fputs(d.fields[0].value, stdout);
}

int
main(void)
{
	struct policy_conn_decision cd;
	struct policy *pol = NULL;
	char err[512], *line = NULL;
	size_t cap = 0;
	ssize_t n;

	if (policy_load_buffer("judge.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err)) != 0) {
		fprintf(stderr, "judge: %s\n", err);
		return 2;
	}
	policy_decide_conn(pol, "d.test", 443, &cd);
	while ((n = getline(&line, &cap, stdin)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = '\0';
		read_field(pol, cd.host, "/amount", line, (size_t)n);
		fputs("\t", stdout);
		read_field(pol, cd.host, "/sku", line, (size_t)n);
		fputs("\n", stdout);
	}
	free(line);
	policy_unref(pol);
	return 0;
}
