/*
 * tests/fuzz/fuzz_mcp_scan.c - the list-result scanner (policy/mcp_scan.c)
 * differentially against the jansson path (policy_mcp_parse and
 * policy_mcp_list_filter) on arbitrary text (tests/unit/policy/mcp_scan_diff.h).
 *
 * The first byte picks the list the request asked for (none, tools,
 * resources, prompts); the rest is the text.  Aborts when the scanner reads
 * a text the reader refuses or that is not one response, reads another id,
 * removes another count, writes JSON that differs from jansson's, or writes
 * something the reader would filter again.  The scanner is reused across
 * inputs, as a stream reuses it across events.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz_mcp_common.h"
#include "policy/mcp.h"
#include "policy/policy.h"
#include "tests/unit/policy/mcp_scan_diff.h"

static const char policy_yaml[] = FUZZ_MCP_POLICY_HEAD ", \"p\"] } } }\n";

static struct policy *pol;
static const struct policy_host *host;
static struct policy_mcp_scan sc;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum policy_mcp_method lists[4] = {POLICY_MCP_M_NONE, POLICY_MCP_M_TOOLS_LIST,
	                                                POLICY_MCP_M_RESOURCES_LIST, POLICY_MCP_M_PROMPTS_LIST};
	const char *why;
	char *text;

	if (pol == NULL) {
		pol = fuzz_mcp_policy(policy_yaml, &host);
		policy_mcp_scan_init(&sc);
	}
	if (size < 1 || size > (1u << 20))
		return 0;
	/* a copy of exactly the text's size, so that ASan sees a read past its end */
	if ((text = malloc(size - 1 + 1)) == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	if (diff_check(&sc, pol, host, lists[data[0] & 3], text, size - 1, &why) < 0) {
		fprintf(stderr, "fuzz_mcp_scan: %s\n", why);
		abort();
	}
	free(text);
	return 0;
}
