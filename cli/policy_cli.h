/*
 * cli/policy_cli.h - `sluice policy check|test|explain` (cli/policy.c,
 * cli/policy_cases.c): a request described on the command line or in a
 * cases file, judged by the gateway's own judge (policy/judge.h).
 */
#ifndef SLUICE_CLI_POLICY_CLI_H
#define SLUICE_CLI_POLICY_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"
#include "policy/judge.h"

#define CLI_HEADERS_MAX 64  /* headers of one described request */
#define CLI_URL_MAX 8192    /* bytes of a URL */

/* A request as a user describes it. */
struct cli_req {
	const char *method;
	const char *url;
	struct policy_header headers[CLI_HEADERS_MAX];
	size_t nheaders;
	const char *content_type;  /* the Content-Type sent, NULL: none */
	int ct_in_headers;         /* 1: <content_type> is one of <headers> (sent as given, duplicates too) */
	const char *body;          /* NULL: no body */
	size_t body_len;
	const char *sandbox;       /* counters per sandbox: NULL is "(none)" */
};

/*
 * <rq> as the gateway would see it on the wire, for policy_judge
 * (policy/judge.h): the connection's facts from the URL, the request's with
 * the path normalised by policy_judge_path and the body whole.  Borrows
 * <rq>; <d> holds the host, the path and the headers the facts point to.
 */
struct cli_described {
	struct judge_conn cf;
	struct judge_req rq;
	char host[260];
	char path[CLI_URL_MAX + 2];
	struct policy_header headers[CLI_HEADERS_MAX + 1];
};

/*
 * Fills <d> from <rq> and judges the connection (policy_judge_conn), then
 * normalises the path (policy_judge_path), in the gateway's order: 0 (to
 * policy_judge, d->cf judged); 1 when <out> is already the outcome (the
 * connection refused or passed through, or the path refused); -1 with <err>
 * set when <rq> cannot be judged at all (a bad URL).
 */
int cli_describe(const struct policy *pol, const struct cli_req *rq, struct cli_described *d,
                 struct judge_outcome *out, char *err, size_t errlen);

/* Limit and budget counters across the cases of one file (time stands still); a judge_counters view. */
struct cli_counter {
	char *key;
	uint64_t used;
	int64_t spent;
};
struct cli_counters {
	struct cli_counter *v;
	size_t n;
};
/* The read-only view of <c> that policy_judge reads. */
void cli_counters_view(struct cli_counters *c, struct judge_counters *view);
/* Applies the takes outcome <o> asks for, as the gateway applies them (a refused budget keeps the token). */
void cli_counters_apply(struct cli_counters *c, const struct judge_outcome *o, const char *sandbox);
void cli_counters_free(struct cli_counters *c);

/*
 * Judges <d> (cli_describe returned 0) as the gateway does: with
 * policy_judge, or, when the body is a JSON-RPC batch POSTed to the host's
 * MCP endpoint, element by element with policy_judge_mcp_batch (the
 * batch's outcome in <out>).  *<nbatch> gets the batch's size (0: not a
 * batch) and *<at> the element whose outcome <out> is.  With <ctr>, the
 * counters view is read and the takes are applied afterwards (a batch's
 * allowed elements each take theirs, only when the whole batch passes).
 */
void cli_judge(const struct policy *pol, struct cli_described *d, struct cli_counters *ctr, const char *sandbox,
               struct judge_outcome *out, size_t *nbatch, size_t *at, policy_explain_fn explain, void *arg);

/* `sluice policy test FILE CASES.yaml` (cli/policy_cases.c). */
int cli_policy_test(int argc, char **argv);

#endif
