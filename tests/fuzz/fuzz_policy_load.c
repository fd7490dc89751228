/*
 * tests/fuzz/fuzz_policy_load.c - policy_load_buffer on arbitrary bytes; on
 * success, exercise the decisions and free everything.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const hosts[] = {"a.example", "b.a.example", "10.1.2.3", "::1", "example.com", "x"};
	static const char *const paths[] = {"/", "/repos/a/b", "/a/b/c.json", "/re/123"};
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	char err[256];
	size_t i, j;

	if (policy_load_buffer("fuzz.yaml", (const char *)data, size, &cfg, &pol, err, sizeof(err)) != 0) {
		if (cfg != NULL || pol != NULL || memchr(err, '\0', sizeof(err)) == NULL)
			__builtin_trap();
		return 0;
	}
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		struct policy_conn_decision cd;

		policy_decide_conn(pol, hosts[i], 443, &cd);
		if (cd.rule == NULL || (cd.verdict == POLICY_DENY) != (cd.reason != NULL))
			__builtin_trap();
		if (cd.host != NULL && policy_host_key(cd.host) == NULL)
			__builtin_trap();
		for (j = 0; j < sizeof(paths) / sizeof(paths[0]); j++) {
			struct policy_req_decision rd;

			policy_decide_request(pol, cd.host, "GET", 3, paths[j], strlen(paths[j]), &rd);
			if (rd.rule == NULL || rd.allow == (rd.reason != NULL))
				__builtin_trap();
		}
	}
	policy_config_free(cfg);
	policy_unref(policy_ref(pol));
	policy_unref(pol);
	return 0;
}
