/*
 * cli/policy_cli.h - `sluice policy check|test|explain` (cli/policy.c,
 * cli/policy_cases.c): a request described on the command line or in a
 * cases file, judged as the gateway would judge it.
 */
#ifndef SLUICE_CLI_POLICY_CLI_H
#define SLUICE_CLI_POLICY_CLI_H

#include <stddef.h>
#include <stdint.h>
#include "policy/policy.h"

#define CLI_HEADERS_MAX 64  /* headers of one described request */
#define CLI_URL_MAX 8192    /* bytes of a URL */

/* A request as a user describes it. */
struct cli_req {
	const char *method;
	const char *url;
	struct policy_header headers[CLI_HEADERS_MAX];
	size_t nheaders;
	const char *content_type;  /* NULL: from headers */
	const char *body;          /* NULL: no body */
	size_t body_len;
	const char *sandbox;       /* counters per sandbox: NULL is "(none)" */
};

/* Limit and budget counters across the cases of one file (time stands still). */
struct cli_counter {
	char *key;
	uint64_t used;
	int64_t spent;
};
struct cli_counters {
	struct cli_counter *v;
	size_t n;
};

/* What the gateway would do. */
struct cli_result {
	const char *verdict;       /* "allow", "deny", "hold", "passthrough" */
	const char *rule;
	const char *reason;        /* NULL when none */
	int status;                /* 400, 403, 413, 429, or 200: forwarded (a hold: once approved) */
	int decided;               /* d is filled (the request reached the rules) */
	char host[260];
	char path[CLI_URL_MAX];
	struct policy_decision d;
};

/*
 * Judges <rq> against <pol>: the connection, the path, the body bound, the
 * rules (<fn> sees each one considered, may be NULL), then the counters when
 * <ctr> is not NULL.  Returns 0, or -1 with <err> set when <rq> cannot be
 * judged at all (a bad URL).
 */
int cli_judge(const struct policy *pol, const struct cli_req *rq, struct cli_counters *ctr, struct cli_result *res,
              policy_explain_fn fn, void *arg, char *err, size_t errlen);
void cli_counters_free(struct cli_counters *c);
/* An amount in millionths as a decimal: "12.5". */
const char *cli_amount(int64_t v, char *buf, size_t cap);

/* `sluice policy test FILE CASES.yaml` (cli/policy_cases.c). */
int cli_policy_test(int argc, char **argv);

#endif
