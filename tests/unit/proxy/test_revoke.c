/*
 * test_revoke.c - what revocation (proxy/cred/revoke.c) and tenant keys decide.
 *
 * revoke_policies_differ() sees every change of a secret or a sandbox that
 * matters for injection, and no change of rules alone; conn_tenant() keys a
 * registered sandbox by its registration id (a name registered again is a
 * new tenant), a policy sandbox by its name and an unknown client by its
 * address; sbxreg ids are never reused and a removed registration is not
 * current.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include "proxy/gateway_int.h"

static const char base[] =
	"ca: /nonexistent\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - allow: { method: GET }\n"
	"%s"
	"secrets:\n"
	"  a:\n"
	"    source: %s\n"
	"    hosts: [api.example.test]\n"
	"    inject: [%s]\n"
	"%s"
	"sandboxes:\n"
	"  s1:\n"
	"    addresses: [%s]\n";

static struct policy *
load(const char *rule, const char *src, const char *inject, const char *sbx, const char *addr)
{
	char yaml[2048], err[256];
	struct policy *p = NULL;

	snprintf(yaml, sizeof(yaml), base, rule, src, inject, sbx, addr);
	if (policy_load_buffer("r.yaml", yaml, strlen(yaml), NULL, &p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return p;
}

static void
differ(void **state)
{
	struct policy *a = load("", "env:A", "header:authorization", "", "10.0.0.1/32");
	struct policy *same = load("", "env:A", "header:authorization", "", "10.0.0.1/32");
	struct policy *rule = load("      - deny: { path: \"/x/**\" }\n", "env:A", "header:authorization", "", "10.0.0.1/32");
	struct policy *src = load("", "env:B", "header:authorization", "", "10.0.0.1/32");
	struct policy *place = load("", "env:A", "header:x-key", "", "10.0.0.1/32");
	struct policy *sbxs = load("", "env:A", "header:authorization", "    sandboxes: [s1]\n", "10.0.0.1/32");
	struct policy *addr = load("", "env:A", "header:authorization", "", "10.0.0.2/32");

	(void)state;
	assert_int_equal(revoke_policies_differ(a, same), 0);
	assert_int_equal(revoke_policies_differ(a, rule), 0);   /* rules alone: the next request is judged anew */
	assert_int_equal(revoke_policies_differ(a, src), 1);
	assert_int_equal(revoke_policies_differ(a, place), 1);
	assert_int_equal(revoke_policies_differ(a, sbxs), 1);
	assert_int_equal(revoke_policies_differ(a, addr), 1);
	assert_int_equal(revoke_policies_differ(src, a), 1);
	policy_unref(a);
	policy_unref(same);
	policy_unref(rule);
	policy_unref(src);
	policy_unref(place);
	policy_unref(sbxs);
	policy_unref(addr);
}

static void
tenants(void **state)
{
	struct sbxreg *reg = sbxreg_new();
	char name[SBXREG_NAME_MAX + 1], err[200], k1[UPSTREAM_TENANT_MAX], k2[UPSTREAM_TENANT_MAX];
	static const char body[] = "{\"name\":\"t1\",\"addresses\":[\"10.1.0.3/32\"]}";
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct conn c;
	struct sbx_entry *e1, *e2;
	uint64_t id1;

	(void)state;
	inet_pton(AF_INET, "10.1.0.3", &sa.sin_addr);
	assert_int_equal(sbxreg_add(reg, body, sizeof(body) - 1, name, err, sizeof(err)), 0);
	e1 = sbxreg_by_addr(reg, (struct sockaddr *)&sa);
	assert_non_null(e1);
	id1 = e1->id;
	assert_true(sbxreg_entry_current(e1, id1));
	memset(&c, 0, sizeof(c));
	c.id = 7;
	memcpy(&c.peer, &sa, sizeof(sa));
	c.sbx = e1;
	c.sbx_id = id1;
	c.sandbox = e1->name;
	conn_tenant(&c, k1);
	/* removed: no longer current, even though the connection still holds the entry */
	assert_int_equal(sbxreg_remove(reg, "t1"), 0);
	assert_false(sbxreg_entry_current(e1, id1));
	/* the same name and address again: another registration, another tenant */
	assert_int_equal(sbxreg_add(reg, body, sizeof(body) - 1, name, err, sizeof(err)), 0);
	e2 = sbxreg_by_addr(reg, (struct sockaddr *)&sa);
	assert_non_null(e2);
	assert_true(e2->id != id1);
	c.sbx = e2;
	c.sbx_id = e2->id;
	c.sandbox = e2->name;
	assert_string_not_equal(conn_tenant(&c, k2), k1);
	/* a policy sandbox: its name; an unknown client: its address */
	c.sbx = NULL;
	c.sandbox = "agent";
	assert_string_equal(conn_tenant(&c, k2), "sagent");
	c.sandbox = NULL;
	assert_string_equal(conn_tenant(&c, k2), "a10.1.0.3");
	/* a name too long to be a key: a key of its own connection, shared with no one */
	c.sandbox = "a-sandbox-name-much-longer-than-the-tenant-key-may-be-0123456789";
	assert_string_equal(conn_tenant(&c, k2), "c7");
	sbxreg_release(e1);
	sbxreg_release(e2);
	sbxreg_free(reg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(differ),
		cmocka_unit_test(tenants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
