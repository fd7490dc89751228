/*
 * test_secrets.c - where secret values come from and what stands in for them.
 *
 * Sources: env, file and exec give the value without its trailing newline;
 * missing, empty, over-long, multi-line values and failing, silent or slow
 * programs are errors whose text never contains the value.  Placeholders
 * are stable per (key, name), differ across names and keys, and have each
 * format's shape.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "common/sluice.h"
#include "secrets/secrets.h"

#define VALUE "s3cr3t-V4lue-for-the-test"

static char dir[] = "/tmp/sluice-secrets-test.XXXXXX";

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Fetches <spec>; returns the SLUICE_E* code and the value (or "") in <val>. */
static int
fetch(const char *spec, unsigned timeout_ms, char *val, size_t cap, const char **err)
{
	struct secret_source src;
	struct secret_buf *b = NULL;
	int r;

	*err = NULL;
	val[0] = '\0';
	r = secret_source_parse(spec, &src, err);
	if (r != 0)
		return r;
	r = secret_fetch(&src, timeout_ms, &b, err);
	secret_source_dispose(&src);
	if (r == 0) {
		assert_non_null(b);
		assert_true(b->len < cap);
		memcpy(val, b->p, b->len);
		val[b->len] = '\0';
		secret_buf_free(b);
	} else {
		assert_null(b);
		assert_non_null(*err);
		assert_null(strstr(*err, "s3cr3t"));  /* never the value */
	}
	return r;
}

static void
write_file(const char *name, const char *data, size_t len, char *path, size_t cap)
{
	FILE *f;

	snprintf(path, cap, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void
test_parse(void **state)
{
	struct secret_source src;
	const char *err = NULL;

	(void)state;
	assert_int_equal(secret_source_parse("env:GITHUB_TOKEN", &src, &err), 0);
	assert_int_equal(src.kind, SECRET_SRC_ENV);
	assert_string_equal(src.arg, "GITHUB_TOKEN");
	secret_source_dispose(&src);
	assert_int_equal(secret_source_parse("file:/run/secrets/gh", &src, &err), 0);
	assert_int_equal(src.kind, SECRET_SRC_FILE);
	secret_source_dispose(&src);
	assert_int_equal(secret_source_parse("exec:/usr/local/bin/mint --app 1", &src, &err), 0);
	assert_int_equal(src.kind, SECRET_SRC_EXEC);
	assert_string_equal(src.arg, "/usr/local/bin/mint --app 1");
	secret_source_dispose(&src);
	assert_int_equal(secret_source_parse("env:", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse("env:1BAD", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse("env:A-B", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse("file:relative/path", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse("exec:   ", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse("vault:x", &src, &err), SLUICE_EINVAL);
	assert_int_equal(secret_source_parse(VALUE, &src, &err), SLUICE_EINVAL);
}

static void
test_env(void **state)
{
	char val[SECRET_MAX_BYTES + 8];
	const char *err;

	(void)state;
	setenv("SLUICE_TEST_SECRET", VALUE "\n", 1);
	assert_int_equal(fetch("env:SLUICE_TEST_SECRET", 0, val, sizeof(val), &err), 0);
	assert_string_equal(val, VALUE);
	unsetenv("SLUICE_TEST_SECRET");
	assert_int_equal(fetch("env:SLUICE_TEST_SECRET", 0, val, sizeof(val), &err), SLUICE_ENOENT);
	setenv("SLUICE_TEST_SECRET", "", 1);
	assert_int_equal(fetch("env:SLUICE_TEST_SECRET", 0, val, sizeof(val), &err), SLUICE_EINVAL);
	setenv("SLUICE_TEST_SECRET", "s3cr3t\r\nInjected: yes", 1);
	assert_int_equal(fetch("env:SLUICE_TEST_SECRET", 0, val, sizeof(val), &err), SLUICE_EINVAL);
	unsetenv("SLUICE_TEST_SECRET");
}

static void
test_file(void **state)
{
	char val[SECRET_MAX_BYTES + 8], path[256], spec[300], *big;
	const char *err;

	(void)state;
	write_file("crlf", VALUE "\r\n", sizeof(VALUE) + 1, path, sizeof(path));
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), 0);
	assert_string_equal(val, VALUE);
	write_file("nul", "s3cr3t\0x", 8, path, sizeof(path));
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), SLUICE_EINVAL);
	snprintf(spec, sizeof(spec), "file:%s/missing", dir);
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), SLUICE_ENOENT);
	/* exactly the bound (plus a newline) is fine; one byte more is not */
	big = malloc(SECRET_MAX_BYTES + 2);
	assert_non_null(big);
	memset(big, 'k', SECRET_MAX_BYTES + 2);
	big[SECRET_MAX_BYTES] = '\n';
	write_file("max", big, SECRET_MAX_BYTES + 1, path, sizeof(path));
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), 0);
	assert_int_equal(strlen(val), SECRET_MAX_BYTES);
	memset(big, 'k', SECRET_MAX_BYTES + 2);
	write_file("over", big, SECRET_MAX_BYTES + 1, path, sizeof(path));
	snprintf(spec, sizeof(spec), "file:%s", path);
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), SLUICE_ETOOBIG);
	free(big);
}

/* file:$CREDENTIALS_DIRECTORY/NAME: systemd's LoadCredential= directory, read at fetch time, never outside it */
static void
test_credentials(void **state)
{
	static const char *const bad[] = {
		"file:$CREDENTIALS_DIRECTORY/../etc/shadow", "file:$CREDENTIALS_DIRECTORY/a/b",
		"file:$CREDENTIALS_DIRECTORY/..",            "file:$CREDENTIALS_DIRECTORY/.",
		"file:$CREDENTIALS_DIRECTORY/",              "file:$CREDENTIALS_DIRECTORY",
		"file:$HOME/x",
	};
	char val[SECRET_MAX_BYTES + 8], path[256];
	struct secret_source src;
	const char *err;
	size_t i;

	(void)state;
	write_file("gh_token", VALUE "\n", sizeof(VALUE), path, sizeof(path));
	assert_int_equal(secret_source_parse("file:$CREDENTIALS_DIRECTORY/gh_token", &src, &err), 0);
	assert_int_equal(src.kind, SECRET_SRC_FILE);
	secret_source_dispose(&src);
	unsetenv("CREDENTIALS_DIRECTORY");
	assert_int_equal(fetch("file:$CREDENTIALS_DIRECTORY/gh_token", 0, val, sizeof(val), &err), SLUICE_ENOENT);
	assert_non_null(strstr(err, "CREDENTIALS_DIRECTORY"));
	setenv("CREDENTIALS_DIRECTORY", "relative", 1);
	assert_int_equal(fetch("file:$CREDENTIALS_DIRECTORY/gh_token", 0, val, sizeof(val), &err), SLUICE_ENOENT);
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	assert_int_equal(fetch("file:$CREDENTIALS_DIRECTORY/gh_token", 0, val, sizeof(val), &err), 0);
	assert_string_equal(val, VALUE);
	assert_int_equal(fetch("file:$CREDENTIALS_DIRECTORY/missing", 0, val, sizeof(val), &err), SLUICE_ENOENT);
	/* a name that would leave the directory, or none at all, does not load */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(secret_source_parse(bad[i], &src, &err), SLUICE_EINVAL);
	unsetenv("CREDENTIALS_DIRECTORY");
}

static void
test_exec(void **state)
{
	char val[SECRET_MAX_BYTES + 8], spec[300];
	const char *err;

	(void)state;
	assert_int_equal(fetch("exec:/bin/echo " VALUE, 0, val, sizeof(val), &err), 0);
	assert_string_equal(val, VALUE);
	assert_int_equal(fetch("exec:printf %s " VALUE, 0, val, sizeof(val), &err), 0);  /* found on PATH */
	assert_string_equal(val, VALUE);
	assert_int_equal(fetch("exec:/bin/false", 0, val, sizeof(val), &err), SLUICE_EIO);
	assert_int_equal(fetch("exec:/nonexistent/mint-token", 0, val, sizeof(val), &err), SLUICE_EIO);
	assert_int_equal(fetch("exec:/bin/true", 0, val, sizeof(val), &err), SLUICE_EINVAL);  /* printed nothing */
	/* a program that hangs is killed at the deadline */
	assert_int_equal(fetch("exec:/bin/sleep 30", 200, val, sizeof(val), &err), SLUICE_ETIMEDOUT);
	/* what it prints on stderr goes nowhere (the test's output stays clean) */
	snprintf(spec, sizeof(spec), "exec:/bin/sh -c echo${IFS}s3cr3t>&2;echo${IFS}%s", "ok");
	assert_int_equal(fetch(spec, 0, val, sizeof(val), &err), 0);
	assert_string_equal(val, "ok");
	/* an endless writer is cut at the bound */
	assert_int_equal(fetch("exec:/usr/bin/yes", 0, val, sizeof(val), &err), SLUICE_ETOOBIG);
}

static void
test_placeholder(void **state)
{
	uint8_t key[SECRET_KEY_BYTES], key2[SECRET_KEY_BYTES];
	char a[SECRET_PLACEHOLDER_MAX], b[SECRET_PLACEHOLDER_MAX];
	const char *err = NULL;
	static const struct {
		const char *format, *prefix;
		size_t len;
	} shapes[] = {
		{NULL, "sluice_ph_", 50}, {"github", "ghp_", 40},      {"openai", "sk-proj-", 72},
		{"anthropic", "sk-ant-api03-", 101}, {"slack", "xoxb-", 57}, {"stripe", "sk_live_", 107},
	};

	(void)state;
	memset(key, 7, sizeof(key));
	memset(key2, 8, sizeof(key2));
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		assert_int_equal(secret_placeholder(key, "github", shapes[i].format, a, sizeof(a), &err), 0);
		assert_int_equal(strncmp(a, shapes[i].prefix, strlen(shapes[i].prefix)), 0);
		assert_int_equal(strlen(a), shapes[i].len);
		for (const char *p = a; *p; p++)
			assert_true((*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			            *p == '_' || *p == '-');
		/* stable for the same key and name */
		assert_int_equal(secret_placeholder(key, "github", shapes[i].format, b, sizeof(b), &err), 0);
		assert_string_equal(a, b);
		/* another name or another key gives another placeholder */
		assert_int_equal(secret_placeholder(key, "github2", shapes[i].format, b, sizeof(b), &err), 0);
		assert_string_not_equal(a, b);
		assert_int_equal(secret_placeholder(key2, "github", shapes[i].format, b, sizeof(b), &err), 0);
		assert_string_not_equal(a, b);
	}
	assert_int_equal(secret_placeholder(key, "x", "gitlab", a, sizeof(a), &err), SLUICE_EINVAL);
	assert_int_equal(secret_placeholder(key, "", NULL, a, sizeof(a), &err), SLUICE_EINVAL);
	assert_int_equal(secret_placeholder(key, "x", "stripe", a, 40, &err), SLUICE_ETOOBIG);
}

static void
test_buf(void **state)
{
	struct secret_buf *b = secret_buf_new(100);

	(void)state;
	assert_non_null(b);
	assert_true(b->cap >= 100);
	memset(b->p, 'x', b->cap);  /* writable over its whole mapping */
	secret_buf_free(b);
	secret_buf_free(NULL);
	assert_null(secret_buf_new(0));
	assert_null(secret_buf_new(SECRET_MAX_BYTES * 4));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),       cmocka_unit_test(test_env),
		cmocka_unit_test(test_file),        cmocka_unit_test(test_credentials), cmocka_unit_test(test_exec),
		cmocka_unit_test(test_placeholder), cmocka_unit_test(test_buf),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
