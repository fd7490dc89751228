/*
 * tests/fuzz/fuzz_judge.c - the one judge (policy/judge.h) over fuzzed
 * requests, as the gateway calls it: at the head (no body), then with a
 * prefix of the body, then with all of it.  Input: one byte choosing the
 * method and Content-Type, the path up to '\n' (normalised by
 * policy_judge_path first), then the body.  Invariants: with the whole body
 * the judge never asks for more; a refusal names a rule, a reason and a
 * status; an allow or a hold asks only for takes of its own rule.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/judge.h"

static const char yaml[] =
	"ca: /x\n"
	"default: deny\n"
	"hosts:\n"
	"  a.test:\n"
	"    rules:\n"
	"      - { id: no-admin, deny: { path: \"/admin/**\" } }\n"
	"      - { id: pay, allow: { method: POST, path: /pay, form: { amount: { max: 5000 } },\n"
	"          budget: { sum: \"form:amount\", max: 100 }, max_body: 4K } }\n"
	"      - { id: chat, allow: { method: POST, path: \"/chat/**\", json: { \"$.model\": { in: [a, b] } },\n"
	"          limit: { rate: 5/minute } } }\n"
	"      - { id: gql, allow: { method: POST, path: /graphql, graphql: { type: query } } }\n"
	"      - { id: refund, hold: { method: POST, path: /refund, form: { id: { exists: true } } } }\n"
	"      - { id: push, deny: { method: POST, path: /r/git-receive-pack, git: { refs: [refs/heads/main] } } }\n"
	"      - { id: report, mode: report, deny: { path: \"/r/**\" } }\n"
	"      - { id: read, allow: { method: GET } }\n";

static struct policy *pol;

static void
check(const struct judge_outcome *o, int whole)
{
	if (whole && o->verdict == JUDGE_NEED_BODY)
		abort();
	if (o->verdict == JUDGE_DENY && (o->rule == NULL || o->reason == NULL || o->status < 400))
		abort();
	if ((o->limit != NULL || o->budget != NULL) && o->verdict != JUDGE_ALLOW && o->verdict != JUDGE_HOLD)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE"};
	static const char *const types[] = {"application/json", "application/x-www-form-urlencoded",
	                                    "application/x-git-receive-pack-request", "text/plain"};
	struct judge_conn cf = {"s", "a.test", 443, JUDGE_CONN_EXPLICIT, 1, 0, NULL};
	struct judge_outcome *o;
	struct judge_req rq;
	struct policy_header h;
	const char *nl;
	char *path;
	size_t plen, blen;
	long n;

	if (pol == NULL) {
		char err[512];

		if (policy_load_buffer("f.yaml", yaml, sizeof(yaml) - 1, NULL, &pol, err, sizeof(err)) != 0)
			abort();
	}
	if (size < 2 || data[1] != '/')
		return 0;
	nl = memchr(data + 1, '\n', size - 1);
	plen = nl != NULL ? (size_t)(nl - (const char *)data - 1) : size - 1;
	blen = nl != NULL ? size - 2 - plen : 0;
	o = calloc(1, sizeof(*o));
	path = malloc(plen + 2);
	if (o == NULL || path == NULL)
		abort();
	policy_judge_conn(pol, &cf, o);
	cf.judged = 1;
	cf.entry = o->entry;
	n = policy_judge_path(cf.entry, (const char *)data + 1, plen, path, plen + 2, o);
	if (n < 0) {
		check(o, 1);
		goto out;
	}
	memset(&rq, 0, sizeof(rq));
	rq.method = methods[data[0] & 3];
	rq.method_len = strlen(rq.method);
	rq.path = path;
	rq.path_len = (size_t)n;
	h.name = "Content-Type";
	h.name_len = 12;
	h.value = types[(data[0] >> 2) & 3];
	h.value_len = strlen(h.value);
	rq.headers = &h;
	rq.nheaders = 1;
	rq.has_body = blen > 0;
	rq.body_len_known = (data[0] & 16) != 0;
	rq.body_total = blen;
	/* the head, then half of the body, then all of it */
	policy_judge(pol, &cf, &rq, NULL, o, NULL, NULL);
	check(o, !rq.has_body);
	if (o->verdict != JUDGE_NEED_BODY)
		goto out;
	rq.need_known = 1;
	rq.need = o->need;
	rq.need_flags = o->need_flags;
	rq.body = (const char *)data + 2 + plen;
	rq.body_len = blen / 2;
	policy_judge(pol, &cf, &rq, NULL, o, NULL, NULL);
	check(o, 0);
	rq.body_len = blen;
	rq.body_complete = 1;
	policy_judge(pol, &cf, &rq, NULL, o, NULL, NULL);
	check(o, 1);
out:
	free(path);
	free(o);
	return 0;
}
