/*
 * tests/unit/sandbox/test_run.c - sandbox-glue/run.c without root: the
 * workload's environment and bubblewrap's status documents (the admin
 * socket client's tests are tests/unit/common/test_admin_client.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "sandbox-glue/run.h"

static const char *
env_get(char **envp, const char *name)
{
	size_t n = strlen(name), i;

	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

static void
test_env_base(void **state)
{
	char *envp[RUN_ENV_MAX + 1];
	const char *extra[] = {"GITHUB_TOKEN=ph_1", "FOO=bar", "FOO=baz", "SSL_CERT_FILE=/x"};
	int n;

	(void)state;
	setenv("TERM", "xterm-256color", 1);
	setenv("LANG", "bad value", 1);
	setenv("SECRET_OF_LAUNCHER", "s3cr3t", 1);
	n = run_env_make(extra, 4, 1, envp, RUN_ENV_MAX + 1);
	assert_true(n > 0);
	assert_null(envp[n]);
	assert_string_equal(env_get(envp, "HOME"), "/workspace");
	assert_string_equal(env_get(envp, "TERM"), "xterm-256color");
	assert_string_equal(env_get(envp, "LANG"), "C.UTF-8"); /* ours had a space: not passed */
	assert_string_equal(env_get(envp, "CURL_CA_BUNDLE"), "/etc/ssl/certs/ca-certificates.crt");
	assert_string_equal(env_get(envp, "npm_config_cafile"), "/etc/ssl/certs/ca-certificates.crt");
	assert_string_equal(env_get(envp, "SSL_CERT_FILE"), "/x"); /* a later entry wins */
	assert_string_equal(env_get(envp, "GITHUB_TOKEN"), "ph_1");
	assert_string_equal(env_get(envp, "FOO"), "baz");
	assert_null(env_get(envp, "SECRET_OF_LAUNCHER"));
	/* PATH HOME TERM LANG + 7 CA variables + GITHUB_TOKEN FOO */
	assert_int_equal(n, 13);
	run_env_free(envp);
	n = run_env_make(NULL, 0, 0, envp, RUN_ENV_MAX + 1);
	assert_string_equal(env_get(envp, "HOME"), "/tmp");
	run_env_free(envp);
}

static void
test_env_refusals(void **state)
{
	char *envp[RUN_ENV_MAX + 1], *big;
	const char *bad1[] = {"NOEQUALS"}, *bad2[] = {"1X=a"}, *bad3[] = {"A-B=c"}, *bad4[] = {"=v"}, *big1[1];

	(void)state;
	assert_int_equal(run_env_make(bad1, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad2, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad3, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	assert_int_equal(run_env_make(bad4, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	big = malloc(RUN_ENV_ENTRY_MAX + 2);
	memset(big, 'v', RUN_ENV_ENTRY_MAX + 1);
	memcpy(big, "A=", 2);
	big[RUN_ENV_ENTRY_MAX + 1] = '\0';
	big1[0] = big;
	assert_int_equal(run_env_make(big1, 1, 0, envp, RUN_ENV_MAX + 1), SLUICE_EINVAL);
	free(big);
	/* the base entries alone do not fit 5 slots */
	assert_int_equal(run_env_make(NULL, 0, 0, envp, 5), SLUICE_ETOOBIG);
	assert_int_equal(run_env_name_valid("A_1", 3), 1);
	assert_int_equal(run_env_name_valid("_", 1), 1);
	assert_int_equal(run_env_name_valid("", 0), 0);
	assert_int_equal(run_env_name_valid("9A", 2), 0);
	assert_int_equal(run_env_name_valid("A B", 3), 0);
}

static void
test_status_parse(void **state)
{
	pid_t pid = 0;
	int code = -1;

	(void)state;
	run_status_parse("{ \"child-pid\": 4242 }\n", &pid, &code);
	assert_int_equal(pid, 4242);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\": 4242 }\n{ \"exit-code\": 7 }\n", &pid, &code);
	assert_int_equal(code, 7);
	pid = 0;
	code = -1;
	run_status_parse("{ \"child-pid\": -1, \"exit-code\": 300 }", &pid, &code);
	assert_int_equal(pid, 0);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\" 5 \"exit-code\": x }", &pid, &code);
	assert_int_equal(pid, 0);
	assert_int_equal(code, -1);
	run_status_parse("{ \"child-pid\": 99999999999999999999 }", &pid, &code);
	assert_int_equal(pid, 0);
	run_status_parse("", &pid, &code);
	assert_int_equal(pid, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_env_base),
		cmocka_unit_test(test_env_refusals),
		cmocka_unit_test(test_status_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
