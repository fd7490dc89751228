/*
 * tests/unit/policy/test_path.c - policy_path_normalise case table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "policy/policy.h"

struct path_case {
	const char *in;
	int keep;
	const char *out; /* NULL: refused */
	const char *err; /* fragment of the refusal */
};

static const struct path_case cases[] = {
	{"/ok/../admin", 0, "/admin", NULL},
	{"/ok/%2e%2e/admin", 0, "/admin", NULL},
	{"/ok/%2E%2E/nope/a", 0, "/nope/a", NULL},
	{"/ok%2Fadmin", 0, NULL, "encoded slash"},
	{"/ok%2Fadmin", 1, "/ok%2Fadmin", NULL},
	{"/a%2fb", 1, "/a%2Fb", NULL},
	{"//admin", 0, "/admin", NULL},
	{"/ok/./x", 0, "/ok/x", NULL},
	{"/ok/.", 0, "/ok/", NULL},
	{"/ok/..", 0, "/", NULL},
	{"/..", 0, NULL, "above the root"},
	{"/a/../../b", 0, NULL, "above the root"},
	{"/%00", 0, NULL, "NUL"},
	{"/%00", 1, NULL, "NUL"},
	{"/%zz", 0, NULL, "percent"},
	{"/%4", 0, NULL, "percent"},
	{"/%", 0, NULL, "percent"},
	{"/a%41", 0, "/aA", NULL},
	{"/a%20b", 0, "/a%20b", NULL},
	{"/a%3fb", 0, "/a%3Fb", NULL},
	{"/a%25b", 0, "/a%25b", NULL},
	{"/a b", 0, NULL, "invalid character"},
	{"/a\\b", 0, NULL, "invalid character"},
	{"/a%5cb", 0, NULL, "encoded backslash"},
	{"/a%5cb", 1, "/a%5Cb", NULL},
	{"", 0, NULL, "start with '/'"},
	{"abc", 0, NULL, "start with '/'"},
	{"/%7e", 0, "/~", NULL},
	{"/a/b/", 0, "/a/b/", NULL},
	{"/ok/..%2f", 0, NULL, "encoded slash"},
	{"/ok/..%2f", 1, "/ok/..%2F", NULL},
	{"/;x=1", 0, "/;x=1", NULL},
	{"/!$&'()*+,;=:@-._~", 0, "/!$&'()*+,;=:@-._~", NULL},
	{"/", 0, "/", NULL},
	{"///", 0, "/", NULL},
	{"/.", 0, "/", NULL},
	{"/./", 0, "/", NULL},
	{"/a/./../b", 0, "/b", NULL},
	{"/a/b/../../c/", 0, "/c/", NULL},
	{"/a/b/c/../..", 0, "/a/", NULL},
	{"/...", 0, "/...", NULL},
	{"/..a/.b", 0, "/..a/.b", NULL},
	{"/%2e", 0, "/", NULL},
	{"/%2E.", 0, NULL, "above the root"},
	{"/a/%2E.", 0, "/", NULL},
	{"/a//b//", 0, "/a/b/", NULL},
	{"/a?b", 0, NULL, "invalid character"},
	{"/a#b", 0, NULL, "invalid character"},
	{"/a\"b", 0, NULL, "invalid character"},
	{"/a<b", 0, NULL, "invalid character"},
	{"/a{b", 0, NULL, "invalid character"},
	{"/a|b", 0, NULL, "invalid character"},
	{"/a^b", 0, NULL, "invalid character"},
	{"/a`b", 0, NULL, "invalid character"},
	{"/a\x7f", 0, NULL, "invalid character"},
	{"/a\x80", 0, NULL, "invalid character"},
	{"/a\t", 0, NULL, "invalid character"},
	{"/%C3%A9", 0, "/%C3%A9", NULL},
	{"/%c3%a9", 0, "/%C3%A9", NULL},
	/* ';' parameters on a dot segment: Tomcat, Jetty and Spring read "..;x" as ".." (issue 19) */
	{"/public/..;/admin/users", 0, NULL, "dot segment with ';'"},
	{"/public/..;x=1/admin", 0, NULL, "dot segment with ';'"},
	{"/public/.;/admin", 0, NULL, "dot segment with ';'"},
	{"/public/%2e%2e;/admin", 0, NULL, "dot segment with ';'"},
	{"/public/%2E;jsessionid=1/x", 0, NULL, "dot segment with ';'"},
	{"/public/..;", 0, NULL, "dot segment with ';'"},
	{"/a;x/..;y", 0, NULL, "dot segment with ';'"},
	{"/public/...;x/a", 0, "/public/...;x/a", NULL},
	{"/public/..x;/a", 0, "/public/..x;/a", NULL},
	{"/public/a;..", 0, "/public/a;..", NULL},
	{"/public;x/a", 0, "/public;x/a", NULL},
	{"/public/..%3B/admin", 0, "/public/..%3B/admin", NULL},
};

struct strip_case {
	const char *in, *out;
};

static void
test_strip_params(void **state)
{
	static const struct strip_case sc[] = {
		{"/a;x/b", "/a/b"}, {"/a;x/;y/b;", "/a/b"}, {"/a/;x", "/a"}, {"/;x", "/"}, {"/a;x/", "/a/"},
		{"/a", "/a"}, {"/", "/"}, {"/a;b;c/d;e=f", "/a/d"}, {"/public;x/admin", "/public/admin"},
	};
	char out[64];
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(sc) / sizeof(sc[0]); i++) {
		n = policy_path_strip_params(sc[i].in, strlen(sc[i].in), out, sizeof(out));
		assert_int_equal(n, strlen(out));
		if (strcmp(out, sc[i].out) != 0)
			fail_msg("strip '%s': expected '%s', got '%s'", sc[i].in, sc[i].out, out);
	}
}

static void
test_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct path_case *c = &cases[i];
		size_t len = strlen(c->in);
		char out[256];
		const char *err = NULL;
		long n;

		memset(out, 'X', sizeof(out));
		n = policy_path_normalise(c->in, len, c->keep, out, len + 1, &err);
		if (c->out == NULL) {
			if (n != -1 || err == NULL || strstr(err, c->err) == NULL)
				fail_msg("case %zu '%s' keep=%d: expected refusal '%s', got %ld '%s'", i, c->in,
				         c->keep, c->err, n, n >= 0 ? out : (err ? err : "(null)"));
		} else {
			if (n < 0 || strcmp(out, c->out) != 0 || (size_t)n != strlen(c->out))
				fail_msg("case %zu '%s' keep=%d: expected '%s', got %ld '%s'", i, c->in, c->keep,
				         c->out, n, n >= 0 ? out : (err ? err : "(null)"));
		}
	}
}

static void
test_embedded_nul(void **state)
{
	char out[16];
	const char *err = NULL;

	(void)state;
	assert_int_equal(policy_path_normalise("/a\0b", 4, 0, out, sizeof(out), &err), -1);
	assert_non_null(strstr(err, "invalid character"));
}

static void
test_small_buffer(void **state)
{
	char out[4];
	const char *err = NULL;

	(void)state;
	/* "/abcd" needs 6 bytes */
	assert_int_equal(policy_path_normalise("/abcd", 5, 0, out, sizeof(out), &err), -1);
	assert_non_null(strstr(err, "too small"));
	assert_int_equal(policy_path_normalise("/abc", 4, 0, out, sizeof(out), &err), -1);
	assert_int_equal(policy_path_normalise("/ab", 3, 0, out, sizeof(out), &err), 3);
	assert_string_equal(out, "/ab");
	/* <cap> = len + 1 always suffices */
	assert_int_equal(policy_path_normalise("/a%41", 5, 0, out, 4, &err), 3);
	assert_string_equal(out, "/aA");
	{
		char big[8];

		assert_int_equal(policy_path_normalise("/a/../b", 7, 0, big, sizeof(big), &err), 2);
		assert_string_equal(big, "/b");
		assert_int_equal(policy_path_normalise("/%2f%2F", 7, 1, big, sizeof(big), &err), 7);
		assert_string_equal(big, "/%2F%2F");
	}
	assert_int_equal(policy_path_normalise("/", 1, 0, out, 1, &err), -1);
}

static void
test_idempotent(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char a[256], b[256];
		const char *err = NULL;
		long n, m;

		if (cases[i].out == NULL)
			continue;
		n = policy_path_normalise(cases[i].in, strlen(cases[i].in), cases[i].keep, a, sizeof(a), &err);
		assert_true(n > 0);
		m = policy_path_normalise(a, (size_t)n, cases[i].keep, b, sizeof(b), &err);
		assert_int_equal(m, n);
		assert_string_equal(a, b);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_embedded_nul),
		cmocka_unit_test(test_small_buffer),
		cmocka_unit_test(test_idempotent),
		cmocka_unit_test(test_strip_params),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
