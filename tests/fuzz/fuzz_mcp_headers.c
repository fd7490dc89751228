/*
 * tests/fuzz/fuzz_mcp_headers.c - the check of the Mcp-Method, Mcp-Name and
 * Mcp-Param-* headers against a JSON-RPC body (proxy/judge/mcp_req.c,
 * mcp_req_headers_check) on arbitrary input: lines "Name: value" up to an
 * empty line are the headers, the rest the body (read with policy_mcp_parse).
 *
 * Checks, on every input: no crash or read out of bounds (ASan); the check
 * is deterministic; a check that passes with a plain Mcp-Name header means
 * that header is exactly the message's name (or uri); a body without
 * Mcp-* headers always passes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/mcp.h"
#include "policy/policy.h"
#include "proxy/judge/mcp_req.h"

#define HDR_MAX 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size, *nl, *colon, *why, *why2;
	struct policy_header h[HDR_MAX];
	struct policy_mcp_body b;
	enum policy_mcp_error e;
	size_t n = 0, i, mcp = 0;

	while (s < end && n < HDR_MAX) {
		nl = memchr(s, '\n', (size_t)(end - s));
		if (nl == NULL || nl == s) {
			s = nl != NULL ? nl + 1 : s;
			break;
		}
		colon = memchr(s, ':', (size_t)(nl - s));
		if (colon != NULL) {
			h[n].name = s;
			h[n].name_len = (size_t)(colon - s);
			h[n].value = colon + 1;
			h[n].value_len = (size_t)(nl - colon - 1);
			if (h[n].name_len >= 4 && strncasecmp(h[n].name, "mcp-", 4) == 0)
				mcp++;
			n++;
		}
		s = nl + 1;
	}
	memset(&b, 0, sizeof(b));
	if (policy_mcp_parse(s, (size_t)(end - s), &b, &e) != 0) {
		policy_mcp_body_dispose(&b);
		return 0;
	}
	why = mcp_req_headers_check(h, n, &b);
	why2 = mcp_req_headers_check(h, n, &b);
	if (why != why2)
		abort();
	if (mcp == 0 && why != NULL)
		abort();
	for (i = 0; why == NULL && i < n; i++)
		if (h[i].name_len == 8 && strncasecmp(h[i].name, "mcp-name", 8) == 0 &&
		    (h[i].value_len < 2 || memcmp(h[i].value, "=?", 2) != 0) &&
		    (b.msgs[0].name == NULL || h[i].value_len != b.msgs[0].name_len ||
		     memcmp(h[i].value, b.msgs[0].name, h[i].value_len) != 0))
			abort();
	policy_mcp_body_dispose(&b);
	return 0;
}
