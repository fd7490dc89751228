/*
 * tests/unit/policy/test_state.c - the state: section (policy/config_state.c):
 * defaults, the issue's example, redis:// and unix: URLs, the password as a
 * source (never a value, never in the URL), bounds, unknown keys with their
 * line:col, and state_dir accepted as the older name of state.dir (both at
 * once refused).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sluice.h"
#include "policy/policy.h"

static struct policy_config *
load(const char *yaml, char *err, size_t cap)
{
	char buf[2048];
	struct policy_config *cfg = NULL;
	int n = snprintf(buf, sizeof(buf), "ca: /tmp/ca\nhosts: {}\n%s\n", yaml);

	err[0] = '\0';
	if (policy_load_buffer("t.yaml", buf, (size_t)n, &cfg, NULL, err, cap) != 0)
		return NULL;
	return cfg;
}

static void
test_defaults(void **state)
{
	char err[512], host[256];
	struct policy_config *cfg = load("", err, sizeof(err));

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(cfg->state_backend, POLICY_STATE_FILE);
	assert_string_equal(cfg->state_dir, POLICY_STATE_DIR_DEFAULT);
	assert_int_equal(cfg->state_on_error, POLICY_STATE_DENY);
	assert_int_equal(cfg->fleet_size, 1);
	assert_int_equal(cfg->local_share, 0);
	assert_null(cfg->redis.url);
	assert_null(cfg->redis.password);
	assert_int_equal(cfg->redis.timeout_ms, 50);
	assert_string_equal(cfg->redis.key_prefix, "sluice:");
	assert_int_equal(gethostname(host, sizeof(host)), 0);
	if (strspn(host, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == strlen(host) &&
	    strlen(host) <= 64)
		assert_string_equal(cfg->gateway_id, host);
	else
		assert_string_equal(cfg->gateway_id, "sluice");
	policy_config_free(cfg);
}

static void
test_issue_example(void **state)
{
	char err[512];
	struct policy_config *cfg = load(
		"state:\n"
		"  backend: redis\n"
		"  redis: { url: \"redis://127.0.0.1:6379/0\", password: env:SLUICE_REDIS_PASSWORD, timeout: 50ms, "
		"key_prefix: \"sluice:\" }\n"
		"  gateway_id: host-7\n"
		"  fleet_size: 10\n"
		"  on_error: deny\n",
		err, sizeof(err));

	(void)state;
	assert_non_null(cfg);
	assert_int_equal(cfg->state_backend, POLICY_STATE_REDIS);
	assert_string_equal(cfg->redis.host, "127.0.0.1");
	assert_int_equal(cfg->redis.port, 6379);
	assert_int_equal(cfg->redis.db, 0);
	assert_null(cfg->redis.unix_path);
	assert_string_equal(cfg->redis.password, "env:SLUICE_REDIS_PASSWORD");
	assert_string_equal(cfg->gateway_id, "host-7");
	assert_int_equal(cfg->fleet_size, 10);
	policy_config_free(cfg);

	cfg = load("state: { backend: redis, redis: { url: \"unix:/run/redis/redis.sock?db=3\", timeout: 2s, "
	           "password: file:/etc/sluice/redis.pw }, on_error: local, local_share: 0.25, dir: /srv/state }",
	           err, sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->redis.unix_path, "/run/redis/redis.sock");
	assert_null(cfg->redis.host);
	assert_int_equal(cfg->redis.db, 3);
	assert_int_equal(cfg->redis.timeout_ms, 2000);
	assert_int_equal(cfg->state_on_error, POLICY_STATE_LOCAL);
	assert_int_equal(cfg->local_share, 250000);
	assert_string_equal(cfg->state_dir, "/srv/state");
	policy_config_free(cfg);

	cfg = load("state: { redis: { url: \"redis://[fd00::5]:6380/12\" } }", err, sizeof(err));
	assert_non_null(cfg);
	assert_int_equal(cfg->state_backend, POLICY_STATE_FILE);   /* redis: given, backend still file */
	assert_string_equal(cfg->redis.host, "fd00::5");
	assert_int_equal(cfg->redis.port, 6380);
	assert_int_equal(cfg->redis.db, 12);
	policy_config_free(cfg);

	cfg = load("state: { redis: { url: \"redis://cache.internal\" } }", err, sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->redis.host, "cache.internal");
	assert_int_equal(cfg->redis.port, 6379);
	policy_config_free(cfg);

	/* the older name alone still works */
	cfg = load("state_dir: /srv/old", err, sizeof(err));
	assert_non_null(cfg);
	assert_string_equal(cfg->state_dir, "/srv/old");
	policy_config_free(cfg);
}

struct bad {
	const char *yaml;
	const char *want;   /* a part of the error, with its line:col */
};

static void
test_bad(void **state)
{
	static const struct bad cases[] = {
		{"state: { bogus: 1 }", "t.yaml:3:10: unknown key 'bogus' in state"},
		{"state: { redis: { url: \"redis://h\", user: x } }", "t.yaml:3:37: unknown key 'user' in state.redis"},
		{"state: []", "t.yaml:3:8: expected a map of state settings"},
		{"state: { backend: etcd }", "t.yaml:3:19: expected 'file' or 'redis'"},
		{"state: { backend: redis }", "t.yaml:3:8: state.backend is redis but state.redis"},
		{"state: { redis: { password: env:X } }", "missing required key 'url' in state.redis"},
		{"state: { redis: { url: \"redis://u:secretpw@h:6379/0\" } }", "a user or password in state.redis.url"},
		{"state: { redis: { url: \"redis://:secretpw@h\" } }", "a user or password in state.redis.url"},
		{"state: { redis: { url: \"rediss://h:6379\" } }", "no TLS"},
		{"state: { redis: { url: \"http://h\" } }", "expected \"redis://host:port/db\""},
		{"state: { redis: { url: \"redis://\" } }", "missing or overlong host"},
		{"state: { redis: { url: \"redis://h:65536\" } }", "expected a port"},
		{"state: { redis: { url: \"redis://h:01\" } }", "expected a port"},
		{"state: { redis: { url: \"redis://h:6379x\" } }", "expected a port"},
		{"state: { redis: { url: \"redis://h/x\" } }", "expected a database number"},
		{"state: { redis: { url: \"redis://h/10000\" } }", "expected a database number"},
		{"state: { redis: { url: \"redis://h_h\" } }", "bad host"},
		{"state: { redis: { url: \"redis://[::1\" } }", "bad IPv6 address"},
		{"state: { redis: { url: \"redis://[zz]\" } }", "bad IPv6 address"},
		{"state: { redis: { url: \"unix:relative.sock\" } }", "expected an absolute socket path"},
		{"state: { redis: { url: \"unix:/s?db=x\" } }", "expected \"?db=N\""},
		{"state: { redis: { url: \"unix:/s?dbx=1\" } }", "expected \"?db=N\""},
		{"state: { redis: { url: \"unix:/a\\tb\" } }", "control character"},
		{"state: { redis: { url: \"redis://h\", password: \"hunter2hunter2\" } }", "bad password source"},
		{"state: { redis: { url: \"redis://h\", password: \"exec:/bin/pw\" } }", "exec: is not supported"},
		{"state: { redis: { url: \"redis://h\", timeout: 0ms } }", "expected a duration for state.redis.timeout"},
		{"state: { redis: { url: \"redis://h\", timeout: 11s } }", "expected a duration for state.redis.timeout"},
		{"state: { redis: { url: \"redis://h\", key_prefix: \"a b\" } }", "state.redis.key_prefix"},
		{"state: { gateway_id: \"\" }", "state.gateway_id"},
		{"state: { gateway_id: \"a:b\" }", "state.gateway_id"},
		{"state: { fleet_size: 0 }", "state.fleet_size"},
		{"state: { fleet_size: 10001 }", "state.fleet_size"},
		{"state: { on_error: allow }", "expected 'deny' or 'local'"},
		{"state: { local_share: 0 }", "state.local_share"},
		{"state: { local_share: 1.01 }", "state.local_share"},
		{"state: { local_share: 0.0000001 }", "state.local_share"},
		{"state: { local_share: -0.5 }", "state.local_share"},
		{"state: { dir: relative/path }", "absolute directory path for state.dir"},
		{"state: { dir: /a }\nstate_dir: /b", "t.yaml:4:12: state_dir and state.dir are both given"},
		{"state_dir: /b\nstate: { dir: /a }", "t.yaml:3:12: state_dir and state.dir are both given"},
	};
	char err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct policy_config *cfg = load(cases[i].yaml, err, sizeof(err));

		if (cfg != NULL || strstr(err, cases[i].want) == NULL)
			fail_msg("case %zu (%s): got '%s'", i, cases[i].yaml, cfg != NULL ? "loaded" : err);
		/* a password written where a source belongs is not echoed back */
		assert_null(strstr(err, "secretpw"));
		assert_null(strstr(err, "hunter2"));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_issue_example),
		cmocka_unit_test(test_bad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
