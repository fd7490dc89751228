/*
 * tests/fuzz/fuzz_mcp_msg.c - the JSON-RPC / MCP message reader
 * (policy/mcp.c) and the list filter (policy/mcp_list.c) on arbitrary bodies.
 *
 * Checks, on every input:
 *   - a body that reads gives consistent messages: a request has a method and
 *     an id, a notification a method and no id, a response an id and exactly
 *     one of result and error; a tools/call or prompts/get name is strict;
 *   - the reader is deterministic (a second read agrees);
 *   - a filtered list result reads back as a response, and filtering it again
 *     removes nothing (the filter is idempotent), under a policy with rules
 *     that show some names and hide others.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_mcp_common.h"
#include "policy/mcp.h"

static const char policy_yaml[] = FUZZ_MCP_POLICY;

static struct policy *pol;
static const struct policy_host *host;

static void
check_msg(const struct policy_mcp_msg *m)
{
	switch (m->kind) {
	case POLICY_MCP_REQUEST:
		if (m->method == NULL || m->id == NULL)
			abort();
		break;
	case POLICY_MCP_NOTIFICATION:
		if (m->method == NULL || m->id != NULL)
			abort();
		break;
	case POLICY_MCP_RESPONSE:
		if (m->id == NULL || (m->result == NULL) == (m->error == NULL) || m->method != NULL)
			abort();
		break;
	default:
		abort();
	}
	if (m->method_id == POLICY_MCP_M_TOOLS_CALL || m->method_id == POLICY_MCP_M_PROMPTS_GET)
		if (m->name == NULL || !policy_mcp_name_ok(m->name, m->name_len))
			abort();
	if (m->arguments != NULL && !json_is_object(m->arguments))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_mcp_body a, b;
	enum policy_mcp_error ea, eb;
	int ra, rb;
	size_t i;

	pol = fuzz_mcp_policy(policy_yaml, &host);
	ra = policy_mcp_parse((const char *)data, size, &a, &ea);
	rb = policy_mcp_parse((const char *)data, size, &b, &eb);
	if (ra != rb || ea != eb || (ra == 0) != (ea == POLICY_MCP_OK))
		abort();
	if (ra == 0) {
		if (a.nmsgs != b.nmsgs || a.nmsgs == 0 || (a.batch && a.nmsgs > POLICY_MCP_BATCH_MAX))
			abort();
		for (i = 0; i < a.nmsgs; i++) {
			check_msg(&a.msgs[i]);
			if (a.msgs[i].kind != b.msgs[i].kind || a.msgs[i].method_id != b.msgs[i].method_id)
				abort();
		}
	}
	policy_mcp_body_dispose(&a);
	policy_mcp_body_dispose(&b);

	{
		char *out = NULL, *out2 = NULL;
		size_t outlen = 0, outlen2 = 0;
		long x = policy_mcp_filter_text(pol, host, POLICY_MCP_M_NONE, (const char *)data, size, &out, &outlen);

		if (x > 0) {
			if (out == NULL || policy_mcp_parse(out, outlen, &a, &ea) != 0)
				abort();
			policy_mcp_body_dispose(&a);
			if (policy_mcp_filter_text(pol, host, POLICY_MCP_M_NONE, out, outlen, &out2, &outlen2) != 0)
				abort();
		} else if (out != NULL) {
			abort();
		}
		free(out);
		free(out2);
	}
	return 0;
}
