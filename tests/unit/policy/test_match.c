/*
 * tests/unit/policy/test_match.c - host lookup, request decisions, globs,
 * regexes and reference counting.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "policy/policy_int.h"

static struct policy *
load_pol(const char *yaml)
{
	struct policy *pol = NULL;
	char err[512];
	int ret;

	ret = policy_load_buffer("m.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err));
	if (ret != 0)
		fail_msg("load: %s", err);
	return pol;
}

static const char hosts_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  example.com: {}\n"
	"  \"*.example.com\": { verdict: passthrough }\n"
	"  \"*.deep.example.com\": { verdict: deny }\n"
	"  \"*.com\": { ports: [8443, 443] }\n"
	"  exact.deep.example.com: {}\n"
	"  10.1.2.3: {}\n"
	"  \"::1\": { ports: [80] }\n"
	"  \"*.test\": { ports: [1, 65535] }\n";

struct conn_case {
	const char *host;
	unsigned port;
	enum policy_verdict verdict;
	const char *key;    /* NULL: no entry */
	const char *rule;
	const char *reason; /* NULL when not denied */
};

static const struct conn_case conn_cases[] = {
	{"example.com", 443, POLICY_INTERCEPT, "example.com", "example.com", NULL},
	{"example.com", 80, POLICY_INTERCEPT, "example.com", "example.com", NULL},
	{"example.com", 8080, POLICY_DENY, "example.com", "example.com", "port not allowed"},
	{"a.example.com", 443, POLICY_PASSTHROUGH, "*.example.com", "*.example.com", NULL},
	{"a.b.example.com", 443, POLICY_PASSTHROUGH, "*.example.com", "*.example.com", NULL},
	/* longest wildcard wins, exact beats every wildcard */
	{"x.deep.example.com", 443, POLICY_DENY, "*.deep.example.com", "*.deep.example.com", "host denied by policy"},
	{"y.x.deep.example.com", 443, POLICY_DENY, "*.deep.example.com", "*.deep.example.com", "host denied by policy"},
	{"deep.example.com", 443, POLICY_PASSTHROUGH, "*.example.com", "*.example.com", NULL},
	{"exact.deep.example.com", 443, POLICY_INTERCEPT, "exact.deep.example.com", "exact.deep.example.com", NULL},
	/* label boundaries: fall through to *.com only */
	{"evilexample.com", 443, POLICY_INTERCEPT, "*.com", "*.com", NULL},
	{"evilexample.com", 80, POLICY_DENY, "*.com", "*.com", "port not allowed"},
	{"evilexample.com", 8443, POLICY_INTERCEPT, "*.com", "*.com", NULL},
	{"example.com.evil.test", 443, POLICY_DENY, "*.test", "*.test", "port not allowed"},
	{"example.com.evil.test", 65535, POLICY_INTERCEPT, "*.test", "*.test", NULL},
	{"example.com.evil", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{"com", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{"test", 1, POLICY_DENY, NULL, "default", "host not in policy"},
	{"xexample.org", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	/* IP literals: exact entry only, never a wildcard */
	{"10.1.2.3", 443, POLICY_INTERCEPT, "10.1.2.3", "10.1.2.3", NULL},
	{"10.1.2.3", 22, POLICY_DENY, "10.1.2.3", "10.1.2.3", "port not allowed"},
	{"10.1.2.4", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{"1.2.3.4", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{"::1", 80, POLICY_INTERCEPT, "::1", "::1", NULL},
	{"::1", 443, POLICY_DENY, "::1", "::1", "port not allowed"},
	{"::2", 80, POLICY_DENY, NULL, "default", "host not in policy"},
	{"", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{".", 443, POLICY_DENY, NULL, "default", "host not in policy"},
	{"a.", 443, POLICY_DENY, NULL, "default", "host not in policy"},
};

static void
test_conn_table(void **state)
{
	struct policy *pol = load_pol(hosts_yaml);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(conn_cases) / sizeof(conn_cases[0]); i++) {
		const struct conn_case *c = &conn_cases[i];
		struct policy_conn_decision d;
		const char *key;

		memset(&d, 0xa5, sizeof(d));
		policy_decide_conn(pol, c->host, c->port, &d);
		key = d.host != NULL ? policy_host_key(d.host) : NULL;
		if (d.verdict != c->verdict || (key == NULL) != (c->key == NULL) ||
		    (key != NULL && strcmp(key, c->key) != 0) || strcmp(d.rule, c->rule) != 0 ||
		    (d.reason == NULL) != (c->reason == NULL) ||
		    (d.reason != NULL && strcmp(d.reason, c->reason) != 0))
			fail_msg("case %zu %s:%u: got verdict %d key %s rule %s reason %s", i, c->host, c->port,
			         d.verdict, key ? key : "-", d.rule, d.reason ? d.reason : "-");
	}
	policy_unref(pol);
}

static void
test_conn_default_allow(void **state)
{
	struct policy *pol = load_pol("ca: /x\ndefault: allow\nhosts:\n  a.example: { verdict: deny }\n");
	struct policy_conn_decision d;

	(void)state;
	policy_decide_conn(pol, "b.example", 22, &d);
	assert_int_equal(d.verdict, POLICY_INTERCEPT);
	assert_null(d.host);
	assert_string_equal(d.rule, "default");
	assert_null(d.reason);
	policy_decide_conn(pol, "a.example", 443, &d);
	assert_int_equal(d.verdict, POLICY_DENY);
	assert_string_equal(d.reason, "host denied by policy");
	assert_string_equal(d.rule, "a.example");
	policy_unref(pol);
}

static void
test_many_hosts(void **state)
{
	char *yaml = xmalloc(2000 * 40 + 64);
	size_t o = 0, i;
	struct policy *pol;
	struct policy_conn_decision d;
	char name[64];

	(void)state;
	o += (size_t)snprintf(yaml, 64, "ca: /x\nhosts:\n");
	for (i = 0; i < 1000; i++)
		o += (size_t)snprintf(yaml + o, 80, "  h%zu.example: {}\n  \"*.w%zu.example\": {}\n", i, i);
	pol = load_pol(yaml);
	for (i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "h%zu.example", i);
		policy_decide_conn(pol, name, 443, &d);
		assert_non_null(d.host);
		assert_string_equal(policy_host_key(d.host), name);
		snprintf(name, sizeof(name), "a.b.w%zu.example", i);
		policy_decide_conn(pol, name, 443, &d);
		assert_non_null(d.host);
		assert_string_equal(policy_host_key(d.host) + 2, name + 4);
	}
	policy_decide_conn(pol, "h1000.example", 443, &d);
	assert_null(d.host);
	policy_unref(pol);
	free(yaml);
}

static const char rules_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  r.example:\n"
	"    rules:\n"
	"      - deny: { path: \"/repos/*/secret\" }\n"                   /* 0 */
	"      - allow: { method: GET, path: \"/repos/**\" }\n"           /* 1 */
	"      - allow: { method: [PUT, PATCH], path: \"/one/*\" }\n"     /* 2 */
	"      - allow: { method: \"*\", path: \"/any/*/x/**/end\", id: any-method }\n" /* 3 */
	"      - deny: { method: DELETE, id: no-delete }\n"             /* 4 */
	"      - allow: { path: \"regex:/re/[0-9]+\" }\n"                 /* 5 */
	"      - allow: { path: \"/pre*fix/x\" }\n"                       /* 6 */
	"      - allow: { path: \"/enc/%7euser/%2f\" }\n"                 /* 7 */
	"      - allow: { path: \"/dir/\" }\n"                            /* 8 */
	"      - allow: { method: [GET, \"*\"], path: \"/star-in-list\" }\n" /* 9 */
	"      - deny: { path: \"regex:(a|aa)+b\" }\n"                    /* 10 */
	"      - allow: { path: \"/**.json\" }\n"                         /* 11 */
	"  open.example: {}\n"
	"  empty.example: { rules: [] }\n";

struct req_case {
	const char *host;
	const char *method;
	const char *path;
	int allow;
	const char *rule;
	const char *reason;
};

static const struct req_case req_cases[] = {
	{"r.example", "GET", "/repos/a/secret", 0, "r.example/rules/0", "denied by rule"},
	{"r.example", "GET", "/repos/a/b/secret", 1, "r.example/rules/1", NULL}, /* '*' is one segment */
	{"r.example", "GET", "/repos/", 1, "r.example/rules/1", NULL},
	{"r.example", "GET", "/repos", 0, "default", "no rule matched"},
	{"r.example", "GET", "/repos/a/b/c/d", 1, "r.example/rules/1", NULL},
	{"r.example", "POST", "/repos/a", 0, "default", "no rule matched"},
	{"r.example", "get", "/repos/a", 0, "default", "no rule matched"},  /* methods are case-sensitive */
	{"r.example", "PUT", "/one/a", 1, "r.example/rules/2", NULL},
	{"r.example", "PATCH", "/one/", 1, "r.example/rules/2", NULL},     /* '*' may be empty */
	{"r.example", "PUT", "/one/a/b", 0, "default", "no rule matched"},
	{"r.example", "PUTX", "/one/a", 0, "default", "no rule matched"},
	{"r.example", "PU", "/one/a", 0, "default", "no rule matched"},
	/* a double star is any bytes: the glob needs both slashes around it */
	{"r.example", "BREW", "/any/q/x/end", 0, "default", "no rule matched"},
	{"r.example", "BREW", "/any/q/x/y/end", 1, "any-method", NULL},
	{"r.example", "BREW", "/any/q/x/1/2/3/end", 1, "any-method", NULL},
	{"r.example", "BREW", "/any/q/r/x/end", 0, "default", "no rule matched"},
	{"r.example", "BREW", "/any/q/x/end/", 0, "default", "no rule matched"},
	{"r.example", "DELETE", "/repos/a", 0, "no-delete", "denied by rule"},
	{"r.example", "DELETE", "/re/1", 0, "no-delete", "denied by rule"},
	{"r.example", "POST", "/re/123", 1, "r.example/rules/5", NULL},
	{"r.example", "POST", "/re/123x", 0, "default", "no rule matched"}, /* end-anchored */
	{"r.example", "POST", "/x/re/123", 0, "default", "no rule matched"}, /* start-anchored */
	{"r.example", "POST", "/prefix/x", 1, "r.example/rules/6", NULL},
	{"r.example", "POST", "/pre-and-fix/x", 1, "r.example/rules/6", NULL},
	{"r.example", "POST", "/pre/fix/x", 0, "default", "no rule matched"},
	{"r.example", "POST", "/enc/~user/%2F", 1, "r.example/rules/7", NULL}, /* glob normalised */
	{"r.example", "POST", "/dir/", 1, "r.example/rules/8", NULL},
	{"r.example", "POST", "/dir", 0, "default", "no rule matched"},
	{"r.example", "OPTIONS", "/star-in-list", 1, "r.example/rules/9", NULL},
	{"r.example", "POST", "/a.json", 1, "r.example/rules/11", NULL},
	{"r.example", "POST", "/a/b/c.json", 1, "r.example/rules/11", NULL},
	{"r.example", "POST", "/a/b/c.jsonx", 0, "default", "no rule matched"},
	{"r.example", "POST", "/", 0, "default", "no rule matched"},
	{"open.example", "DELETE", "/anything", 1, "open.example", NULL},
	{"empty.example", "GET", "/", 0, "default", "no rule matched"},
};

static void
test_req_table(void **state)
{
	struct policy *pol = load_pol(rules_yaml);
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
		const struct req_case *c = &req_cases[i];
		struct policy_conn_decision cd;
		struct policy_req_decision d;

		policy_decide_conn(pol, c->host, 443, &cd);
		assert_non_null(cd.host);
		memset(&d, 0xa5, sizeof(d));
		policy_decide_request(pol, cd.host, c->method, strlen(c->method), c->path, strlen(c->path), &d);
		if (d.allow != c->allow || strcmp(d.rule, c->rule) != 0 || (d.reason == NULL) != (c->reason == NULL) ||
		    (d.reason != NULL && strcmp(d.reason, c->reason) != 0))
			fail_msg("case %zu %s %s: got allow %d rule %s reason %s", i, c->method, c->path, d.allow,
			         d.rule, d.reason ? d.reason : "-");
	}
	policy_unref(pol);
}

static void
test_req_lengths(void **state)
{
	struct policy *pol = load_pol(rules_yaml);
	struct policy_conn_decision cd;
	struct policy_req_decision d;

	(void)state;
	policy_decide_conn(pol, "r.example", 443, &cd);
	/* method and path are (ptr, len): trailing bytes are not part of them */
	policy_decide_request(pol, cd.host, "PUTTING", 3, "/one/a/zzz", 6, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "r.example/rules/2");
	policy_decide_request(pol, cd.host, "PUT\0", 4, "/one/a", 6, &d);
	assert_int_equal(d.allow, 0);
	policy_decide_request(pol, cd.host, "", 0, "/re/1", 5, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "r.example/rules/5");
	policy_decide_request(pol, cd.host, "POST", 4, "/re/1\n", 6, &d);
	assert_int_equal(d.allow, 0);
	policy_unref(pol);
}

static void
test_req_default(void **state)
{
	struct policy *deny = load_pol("ca: /x\n");
	struct policy *allow = load_pol("ca: /x\ndefault: allow\nhosts:\n  a.example: { rules: [ {deny: {method: GET}} ] }\n");
	struct policy_conn_decision cd;
	struct policy_req_decision d;

	(void)state;
	policy_decide_request(deny, NULL, "GET", 3, "/", 1, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "default");
	assert_string_equal(d.reason, "host not in policy");
	policy_decide_request(allow, NULL, "GET", 3, "/", 1, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "default");
	assert_null(d.reason);
	policy_decide_conn(allow, "a.example", 443, &cd);
	policy_decide_request(allow, cd.host, "GET", 3, "/", 1, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "a.example/rules/0");
	policy_decide_request(allow, cd.host, "POST", 4, "/", 1, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "default");
	assert_null(d.reason);
	policy_unref(deny);
	policy_unref(allow);
}

static void
test_regex_limits(void **state)
{
	/* catastrophic backtracking: the match limit stops it; a deny rule then denies */
	struct policy *pol = load_pol("ca: /x\nhosts:\n  a.example:\n    rules:\n"
	                              "      - allow: { path: \"regex:/(a+)+$\" }\n"
	                              "      - deny: { path: \"regex:/(b+)+$\", id: slow-deny }\n"
	                              "      - allow: {}\n");
	struct policy_conn_decision cd;
	struct policy_req_decision d;
	char path[64];

	(void)state;
	policy_decide_conn(pol, "a.example", 443, &cd);
	memset(path, 'a', sizeof(path));
	path[0] = '/';
	path[sizeof(path) - 1] = '!';
	policy_decide_request(pol, cd.host, "GET", 3, path, sizeof(path), &d);
	/* the allow regex failed to run: not a match; falls to the last rule */
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "a.example/rules/2");
	memset(path, 'b', sizeof(path));
	path[0] = '/';
	path[sizeof(path) - 1] = '!';
	policy_decide_request(pol, cd.host, "GET", 3, path, sizeof(path), &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "slow-deny");
	policy_decide_request(pol, cd.host, "GET", 3, "/bbb", 4, &d);
	assert_int_equal(d.allow, 0);
	assert_string_equal(d.rule, "slow-deny");
	policy_decide_request(pol, cd.host, "GET", 3, "/bbbc", 5, &d);
	assert_int_equal(d.allow, 1);
	assert_string_equal(d.rule, "a.example/rules/2");
	policy_unref(pol);
}

static void
test_long_glob(void **state)
{
	/* a glob of 255 tokens uses every state bit; 256 is refused */
	char yaml[1024], glob[300], path[300], err[512];
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	struct policy_req_decision d;
	size_t i;

	(void)state;
	glob[0] = '/';
	for (i = 1; i < 254; i++)
		glob[i] = 'a';
	glob[254] = '*';
	glob[255] = '\0';
	snprintf(yaml, sizeof(yaml), "ca: /x\nhosts:\n  a.example: { rules: [ {allow: {path: \"%s\"}} ] }\n", glob);
	pol = load_pol(yaml);
	policy_decide_conn(pol, "a.example", 443, &cd);
	memcpy(path, glob, 254);
	policy_decide_request(pol, cd.host, "GET", 3, path, 254, &d);
	assert_int_equal(d.allow, 1);
	memcpy(path + 254, "zz", 2);
	policy_decide_request(pol, cd.host, "GET", 3, path, 256, &d);
	assert_int_equal(d.allow, 1);
	path[255] = '/';
	policy_decide_request(pol, cd.host, "GET", 3, path, 256, &d);
	assert_int_equal(d.allow, 0);
	policy_decide_request(pol, cd.host, "GET", 3, path, 253, &d);
	assert_int_equal(d.allow, 0);
	policy_unref(pol);

	glob[255] = 'b';
	glob[256] = '\0';
	snprintf(yaml, sizeof(yaml), "ca: /x\nhosts:\n  a.example: { rules: [ {allow: {path: \"%s\"}} ] }\n", glob);
	assert_int_equal(policy_load_buffer("g.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err)), SLUICE_EINVAL);
	assert_non_null(strstr(err, "g.yaml:3:40: bad path in hosts.a.example.rules[0].allow.path: path glob too long"));
}

/* Reference glob matcher: plain backtracking over the glob text. */
static int
ref_match(const char *p, const char *s)
{
	size_t k;

	if (*p == '\0')
		return *s == '\0';
	if (p[0] == '*' && p[1] == '*') {
		while (*p == '*')
			p++;
		for (k = 0;; k++) {
			if (ref_match(p, s + k))
				return 1;
			if (s[k] == '\0')
				return 0;
		}
	}
	if (p[0] == '*') {
		for (k = 0;; k++) {
			if (ref_match(p + 1, s + k))
				return 1;
			if (s[k] == '\0' || s[k] == '/')
				return 0;
		}
	}
	return *s == *p && ref_match(p + 1, s + 1);
}

static void
test_glob_differential(void **state)
{
	static const char galpha[] = "/ab**";
	static const char salpha[] = "/ab";
	unsigned seed = 12345, compiled = 0, matched = 0;
	int i, j;

	(void)state;
	for (i = 0; i < 4000; i++) {
		char glob[16], path[16];
		struct policy_glob g;
		const char *err;
		int gl = 1 + (int)((seed = seed * 1103515245 + 12345) >> 16) % 10, k;

		glob[0] = '/';
		for (k = 1; k < gl; k++)
			glob[k] = galpha[((seed = seed * 1103515245 + 12345) >> 16) % 5];
		glob[gl] = '\0';
		if (policy_glob_compile(&g, glob, (size_t)gl, &err) != 0)
			continue;
		compiled++;
		for (j = 0; j < 20; j++) {
			int pl = (int)((seed = seed * 1103515245 + 12345) >> 16) % 12, want, got;

			for (k = 0; k < pl; k++)
				path[k] = salpha[((seed = seed * 1103515245 + 12345) >> 16) % 3];
			path[pl] = '\0';
			want = ref_match(glob, path);
			got = policy_glob_match(&g, path, (size_t)pl);
			matched += (unsigned)want;
			if (want != got)
				fail_msg("glob '%s' path '%s': want %d got %d", glob, path, want, got);
		}
		policy_glob_dispose(&g);
	}
	/* the generator must exercise both outcomes */
	assert_true(compiled > 1000);
	assert_true(matched > 1000);
}

static void *
unref_thread(void *arg)
{
	struct policy *pol = arg;
	struct policy_conn_decision cd;
	struct policy_req_decision d;
	int i;

	for (i = 0; i < 1000; i++) {
		policy_decide_conn(pol, "r.example", 443, &cd);
		policy_decide_request(pol, cd.host, "POST", 4, "/re/42", 6, &d);
		if (!d.allow)
			return (void *)1;
	}
	policy_unref(pol);
	return NULL;
}

static void
test_refcount(void **state)
{
	struct policy *pol = load_pol(rules_yaml);
	pthread_t th[4];
	void *res;
	int i;

	(void)state;
	assert_ptr_equal(policy_ref(pol), pol);
	policy_unref(pol);
	assert_null(policy_ref(NULL));
	policy_unref(NULL);
	/* each thread holds a reference and drops it; the last one frees (ASan checks) */
	for (i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&th[i], NULL, unref_thread, policy_ref(pol)), 0);
	policy_unref(pol);
	for (i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(th[i], &res), 0);
		assert_null(res);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conn_table),
		cmocka_unit_test(test_conn_default_allow),
		cmocka_unit_test(test_many_hosts),
		cmocka_unit_test(test_req_table),
		cmocka_unit_test(test_req_lengths),
		cmocka_unit_test(test_req_default),
		cmocka_unit_test(test_regex_limits),
		cmocka_unit_test(test_long_glob),
		cmocka_unit_test(test_glob_differential),
		cmocka_unit_test(test_refcount),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
