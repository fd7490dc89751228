/*
 * tests/fuzz/fuzz_mcp_common.h - shared by the fuzz_mcp_* targets: the MCP
 * host's policy (rules that show some names and hide others), loaded once.
 */
#ifndef SLUICE_TESTS_FUZZ_MCP_COMMON_H
#define SLUICE_TESTS_FUZZ_MCP_COMMON_H

#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

/* The policy's text up to its last allow list (a target may add names to it, then close it with "] } } }\n"). */
#define FUZZ_MCP_POLICY_HEAD \
	"ca: /x\n" \
	"hosts:\n" \
	"  m.test:\n" \
	"    mcp: { endpoint: /mcp }\n" \
	"    rules:\n" \
	"      - { deny: { path: /mcp, mcp: { tool: \"d*\" } } }\n" \
	"      - { allow: { path: /mcp, mcp: { tool: [\"a*\", \"file:///x/*\""
#define FUZZ_MCP_POLICY FUZZ_MCP_POLICY_HEAD "] } } }\n"

/* <yaml> loaded the first time (a target passes the same text every time), m.test's host in *<host>; aborts if it does not load. */
static struct policy *
fuzz_mcp_policy(const char *yaml, const struct policy_host **host)
{
	static struct policy *pol;
	static const struct policy_host *h;

	if (pol == NULL) {
		struct policy_conn_decision cd;
		char err[512];

		if (policy_load_buffer("f.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err)) != 0)
			abort();
		policy_decide_conn(pol, "m.test", 443, &cd);
		h = cd.host;
	}
	*host = h;
	return pol;
}

#endif
