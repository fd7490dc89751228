/*
 * tests/unit/proxy/sessfake.c - the recording session of the proxy/ unit
 * tests that run without a gateway (sessfake.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "proxy/session/session.h"
#include "tests/unit/proxy/sessfake.h"

struct fake_answer fake_ans;

void
fake_answer_reset(void)
{
	memset(&fake_ans, 0, sizeof(fake_ans));
}

void
http_answer(struct conn *c, int status, const char *error, const char *rule, const char *reason, int audit)
{
	(void)c;
	assert_int_equal(audit, 1);
	fake_ans.n++;
	fake_ans.status = status;
	snprintf(fake_ans.error, sizeof(fake_ans.error), "%s", error);
	snprintf(fake_ans.rule, sizeof(fake_ans.rule), "%s", rule);
	snprintf(fake_ans.reason, sizeof(fake_ans.reason), "%s", reason);
}

int
fake_policy(const char *yaml, struct policy_config **cfg, struct policy **pol)
{
	char err[512];

	if (policy_load_buffer("unit.yaml", yaml, strlen(yaml), cfg, pol, err, sizeof(err)) != 0) {
		fprintf(stderr, "policy: %s\n", err);
		return -1;
	}
	return 0;
}

const char *
conn_peer_str(const struct conn *c, char *buf)
{
	(void)c;
	snprintf(buf, CONN_ADDR_STR, "10.200.1.2:40000");
	return buf;
}
