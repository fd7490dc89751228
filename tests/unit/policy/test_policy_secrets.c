/*
 * tests/unit/policy/test_policy_secrets.c - secrets:, sandboxes:,
 * sandbox_env: and allow_plaintext in sluice.yaml (issue 3): the interface
 * example, every accessor, and each refusal with its file:line:col.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "common/sluice.h"
#include "policy/policy.h"

/*
 * The interface example of issue 3, with the CA and hosts a loadable file
 * needs.  github's source is the exec: alternative its comment names: the
 * example's ttl is only allowed with exec: sources.
 */
static const char example_yaml[] =
	"ca: /var/lib/sluice/ca\n"                                               /* 1 */
	"hosts:\n"
	"  api.github.com: {}\n"
	"secrets:\n"
	"  github:\n"                                                            /* 5 */
	"    source: exec:/usr/local/bin/mint-gh-token\n"
	"    ttl: 50m                          # exec sources only\n"
	"    format: github                    # placeholder shaped like the provider's tokens\n"
	"    hosts: [api.github.com, github.com]\n"
	"    inject: [header:Authorization, basic]\n"                            /* 10 */
	"    sandboxes: [agent-1]              # optional; default: every registered sandbox\n"
	"  openai:\n"
	"    source: file:/run/secrets/openai\n"
	"    hosts: [api.openai.com]\n"
	"    inject: [header:Authorization]\n"                                   /* 15 */
	"sandboxes:                            # known clients\n"
	"  agent-1:\n"
	"    addresses: [10.200.1.2/32]\n"
	"  ci-runner:\n"
	"    proxy_auth: { user: ci, password: env:CI_PROXY_PASSWORD }   # explicit-proxy clients\n" /* 20 */
	"sandbox_env:                          # what the launcher puts in the sandbox's environment\n"
	"  GITHUB_TOKEN: github                # the placeholder of secret \"github\"\n"
	"  OPENAI_API_KEY: openai\n";

/* Everything else: defaults, wildcards, IP hosts, every place kind, v6 and mixed sandboxes. */
static const char more_yaml[] =
	"ca: /ca\n"
	"hosts:\n"
	"  plain.test:\n"
	"    allow_plaintext: true\n"
	"    ports: [80]\n"
	"  tls.test:\n"
	"    allow_plaintext: false\n"
	"  other.test: {}\n"
	"secrets:\n"
	"  wild:\n"
	"    source: env:WILD_TOKEN\n"
	"    placeholder: sluice-test-placeholder-0001\n"
	"    hosts: [\"*.github.com\", 10.1.2.3, \"[::1]\", Example.COM.]\n"
	"  places:\n"
	"    source: \"exec: /bin/mint  --flag\"\n"
	"    ttl: 24h\n"
	"    placeholder: other_placeholder.value-2\n"
	"    hosts: [api.example.net]\n"
	"    inject: [query:api_key, \"json:$.auth.token\", form:password, header:X-Api-Key, basic]\n"
	"    sandboxes: [both, agent-1]\n"
	"  short:\n"
	"    source: exec:/bin/true\n"
	"    ttl: 1\n"
	"    hosts: [a.test]\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [10.200.1.2/32, \"fd00::2/128\"]\n"
	"  both:\n"
	"    addresses: [10.200.2.0/24]\n"
	"    proxy_auth: { user: both-user, password: file:/run/secrets/pp }\n"
	"  ci:\n"
	"    addresses: []\n"
	"    proxy_auth: { user: ci, password: env:CI_PW }\n"
	"sandbox_env:\n"
	"  Z_LAST: short\n"
	"  _A: wild\n"
	"  WILD2: wild\n";

/* Secrets bound to hosts without an entry are lint errors (test_decide.c): not what these tests are about. */
static int
load(const char *yaml, struct policy **pol, char *err, size_t errlen)
{
	return policy_load_buffer_flags("t.yaml", yaml, strlen(yaml), POLICY_LOAD_LINT_ERRORS_OK, NULL, pol, err,
	                                errlen);
}

static struct sockaddr_in
sin4(const char *a)
{
	struct sockaddr_in s;

	memset(&s, 0, sizeof(s));
	s.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
	return s;
}

static struct sockaddr_in6
sin6(const char *a)
{
	struct sockaddr_in6 s;

	memset(&s, 0, sizeof(s));
	s.sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, a, &s.sin6_addr), 1);
	return s;
}

static void
test_example(void **state)
{
	struct policy *pol = NULL;
	const struct policy_secret *s;
	const struct policy_sandbox *sb;
	const char *var, *sec;
	char err[512];

	(void)state;
	assert_int_equal(load(example_yaml, &pol, err, sizeof(err)), 0);
	assert_non_null(pol);

	assert_int_equal(policy_secret_count(pol), 2);
	s = policy_secret_get(pol, 0);
	assert_non_null(s);
	assert_ptr_equal(policy_secret_find(pol, "github"), s);
	assert_string_equal(s->name, "github");
	assert_string_equal(s->source, "exec:/usr/local/bin/mint-gh-token");
	assert_int_equal(s->ttl_s, 3000);
	assert_string_equal(s->format, "github");
	assert_null(s->placeholder);
	assert_int_equal(s->nhosts, 2);
	assert_string_equal(s->hosts[0], "api.github.com");
	assert_string_equal(s->hosts[1], "github.com");
	assert_int_equal(s->ninject, 2);
	assert_int_equal(s->inject[0].kind, POLICY_INJECT_HEADER);
	assert_string_equal(s->inject[0].arg, "authorization");
	assert_int_equal(s->inject[1].kind, POLICY_INJECT_BASIC);
	assert_null(s->inject[1].arg);
	assert_int_equal(s->nsandboxes, 1);
	assert_string_equal(s->sandboxes[0], "agent-1");
	assert_int_equal(policy_secret_host_bound(s, "api.github.com"), 1);
	assert_int_equal(policy_secret_host_bound(s, "github.com"), 1);
	assert_int_equal(policy_secret_host_bound(s, "gist.github.com"), 0);
	assert_int_equal(policy_secret_host_bound(s, "api.openai.com"), 0);
	assert_int_equal(policy_secret_sandbox_allowed(s, "agent-1"), 1);
	assert_int_equal(policy_secret_sandbox_allowed(s, "ci-runner"), 0);
	assert_int_equal(policy_secret_sandbox_allowed(s, NULL), 0);

	s = policy_secret_get(pol, 1);
	assert_ptr_equal(policy_secret_find(pol, "openai"), s);
	assert_string_equal(s->name, "openai");
	assert_string_equal(s->source, "file:/run/secrets/openai");
	assert_int_equal(s->ttl_s, 0);
	assert_null(s->format);
	assert_null(s->placeholder);
	assert_int_equal(s->nhosts, 1);
	assert_string_equal(s->hosts[0], "api.openai.com");
	assert_int_equal(s->ninject, 1);
	assert_int_equal(s->inject[0].kind, POLICY_INJECT_HEADER);
	assert_string_equal(s->inject[0].arg, "authorization");
	assert_int_equal(s->nsandboxes, 0);
	assert_int_equal(policy_secret_sandbox_allowed(s, "agent-1"), 1);
	assert_int_equal(policy_secret_sandbox_allowed(s, "anything"), 1);
	assert_int_equal(policy_secret_sandbox_allowed(s, NULL), 0);
	assert_null(policy_secret_get(pol, 2));
	assert_null(policy_secret_find(pol, "GitHub"));
	assert_null(policy_secret_find(pol, NULL));

	assert_int_equal(policy_sandbox_count(pol), 2);
	sb = policy_sandbox_get(pol, 0);
	assert_string_equal(sb->name, "agent-1");
	assert_int_equal(sb->naddrs, 1);
	assert_int_equal(sb->addrs[0].family, AF_INET);
	assert_memory_equal(sb->addrs[0].addr, "\x0a\xc8\x01\x02", 4);
	assert_int_equal(sb->addrs[0].prefix, 32);
	assert_null(sb->proxy_user);
	assert_null(sb->proxy_password);
	sb = policy_sandbox_get(pol, 1);
	assert_string_equal(sb->name, "ci-runner");
	assert_int_equal(sb->naddrs, 0);
	assert_string_equal(sb->proxy_user, "ci");
	assert_string_equal(sb->proxy_password, "env:CI_PROXY_PASSWORD");
	assert_null(policy_sandbox_get(pol, 2));

	assert_int_equal(policy_sandbox_env_count(pol), 2);
	policy_sandbox_env_get(pol, 0, &var, &sec);
	assert_string_equal(var, "GITHUB_TOKEN");
	assert_string_equal(sec, "github");
	policy_sandbox_env_get(pol, 1, &var, &sec);
	assert_string_equal(var, "OPENAI_API_KEY");
	assert_string_equal(sec, "openai");
	policy_sandbox_env_get(pol, 2, &var, &sec);
	assert_null(var);
	assert_null(sec);

	policy_unref(pol);
}

static void
test_more(void **state)
{
	struct policy *pol = NULL;
	const struct policy_secret *s;
	const struct policy_sandbox *sb;
	struct policy_conn_decision cd;
	const char *var, *sec;
	char err[512];

	(void)state;
	assert_int_equal(load(more_yaml, &pol, err, sizeof(err)), 0);

	/* allow_plaintext, and the other host keys still read after it */
	policy_decide_conn(pol, "plain.test", 80, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_int_equal(policy_host_allow_plaintext(cd.host), 1);
	policy_decide_conn(pol, "plain.test", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_DENY);
	assert_string_equal(cd.reason, "port not allowed");
	policy_decide_conn(pol, "tls.test", 443, &cd);
	assert_int_equal(policy_host_allow_plaintext(cd.host), 0);
	policy_decide_conn(pol, "other.test", 443, &cd);
	assert_non_null(cd.host);
	assert_int_equal(policy_host_allow_plaintext(cd.host), 0);
	assert_int_equal(policy_host_allow_plaintext(NULL), 0);

	assert_int_equal(policy_secret_count(pol), 3);
	s = policy_secret_find(pol, "wild");
	assert_ptr_equal(s, policy_secret_get(pol, 0));
	assert_string_equal(s->placeholder, "sluice-test-placeholder-0001");
	assert_null(s->format);
	assert_int_equal(s->ttl_s, 0);
	assert_int_equal(s->nhosts, 4);
	assert_string_equal(s->hosts[0], "*.github.com");
	assert_string_equal(s->hosts[1], "10.1.2.3");
	assert_string_equal(s->hosts[2], "::1");
	assert_string_equal(s->hosts[3], "example.com");
	assert_int_equal(s->ninject, 1);
	assert_int_equal(s->inject[0].kind, POLICY_INJECT_HEADER);
	assert_string_equal(s->inject[0].arg, "authorization");
	/* wildcard: one or more labels before the suffix */
	assert_int_equal(policy_secret_host_bound(s, "api.github.com"), 1);
	assert_int_equal(policy_secret_host_bound(s, "a.b.github.com"), 1);
	assert_int_equal(policy_secret_host_bound(s, "github.com"), 0);
	assert_int_equal(policy_secret_host_bound(s, "xgithub.com"), 0);
	assert_int_equal(policy_secret_host_bound(s, ".github.com"), 0);
	assert_int_equal(policy_secret_host_bound(s, "github.com.evil.test"), 0);
	assert_int_equal(policy_secret_host_bound(s, "10.1.2.3"), 1);
	assert_int_equal(policy_secret_host_bound(s, "10.1.2.4"), 0);
	assert_int_equal(policy_secret_host_bound(s, "::1"), 1);
	assert_int_equal(policy_secret_host_bound(s, "example.com"), 1);
	assert_int_equal(policy_secret_host_bound(s, "www.example.com"), 0);
	assert_int_equal(policy_secret_host_bound(s, NULL), 0);
	assert_int_equal(policy_secret_host_bound(NULL, "api.github.com"), 0);

	s = policy_secret_get(pol, 1);
	assert_string_equal(s->name, "places");
	assert_string_equal(s->source, "exec: /bin/mint  --flag");
	assert_int_equal(s->ttl_s, 86400);
	assert_int_equal(s->ninject, 5);
	assert_int_equal(s->inject[0].kind, POLICY_INJECT_QUERY);
	assert_string_equal(s->inject[0].arg, "api_key");
	assert_int_equal(s->inject[1].kind, POLICY_INJECT_JSON);
	assert_string_equal(s->inject[1].arg, "$.auth.token");
	assert_int_equal(s->inject[2].kind, POLICY_INJECT_FORM);
	assert_string_equal(s->inject[2].arg, "password");
	assert_int_equal(s->inject[3].kind, POLICY_INJECT_HEADER);
	assert_string_equal(s->inject[3].arg, "x-api-key");
	assert_int_equal(s->inject[4].kind, POLICY_INJECT_BASIC);
	assert_null(s->inject[4].arg);
	assert_int_equal(s->nsandboxes, 2);
	assert_string_equal(s->sandboxes[0], "both");
	assert_string_equal(s->sandboxes[1], "agent-1");
	assert_int_equal(policy_secret_sandbox_allowed(s, "both"), 1);
	assert_int_equal(policy_secret_sandbox_allowed(s, "agent-1"), 1);
	assert_int_equal(policy_secret_sandbox_allowed(s, "ci"), 0);
	assert_int_equal(policy_secret_sandbox_allowed(s, "agent-"), 0);
	s = policy_secret_get(pol, 2);
	assert_string_equal(s->name, "short");
	assert_int_equal(s->ttl_s, 1);

	/* sandboxes by address: v4, v6, v4-mapped; first match wins */
	assert_int_equal(policy_sandbox_count(pol), 3);
	{
		struct sockaddr_in a = sin4("10.200.1.2"), b = sin4("10.200.1.3"), c = sin4("10.200.2.77");
		struct sockaddr_in6 d = sin6("fd00::2"), e = sin6("fd00::3"), f = sin6("::ffff:10.200.1.2"),
		                    g = sin6("::ffff:10.200.2.1"), h = sin6("::ffff:10.200.3.1");
		struct sockaddr u;

		sb = policy_sandbox_by_addr(pol, (struct sockaddr *)&a);
		assert_non_null(sb);
		assert_string_equal(sb->name, "agent-1");
		assert_null(policy_sandbox_by_addr(pol, (struct sockaddr *)&b));
		sb = policy_sandbox_by_addr(pol, (struct sockaddr *)&c);
		assert_non_null(sb);
		assert_string_equal(sb->name, "both");
		sb = policy_sandbox_by_addr(pol, (struct sockaddr *)&d);
		assert_non_null(sb);
		assert_string_equal(sb->name, "agent-1");
		assert_null(policy_sandbox_by_addr(pol, (struct sockaddr *)&e));
		sb = policy_sandbox_by_addr(pol, (struct sockaddr *)&f);
		assert_non_null(sb);
		assert_string_equal(sb->name, "agent-1");
		sb = policy_sandbox_by_addr(pol, (struct sockaddr *)&g);
		assert_non_null(sb);
		assert_string_equal(sb->name, "both");
		assert_null(policy_sandbox_by_addr(pol, (struct sockaddr *)&h));
		memset(&u, 0, sizeof(u));
		u.sa_family = AF_UNIX;
		assert_null(policy_sandbox_by_addr(pol, &u));
		assert_null(policy_sandbox_by_addr(pol, NULL));
	}

	/* sandboxes by proxy user: exact bytes, length included */
	sb = policy_sandbox_by_proxy_user(pol, "ci", 2);
	assert_non_null(sb);
	assert_string_equal(sb->name, "ci");
	assert_int_equal(sb->naddrs, 0);
	assert_string_equal(sb->proxy_password, "env:CI_PW");
	sb = policy_sandbox_by_proxy_user(pol, "both-user", 9);
	assert_non_null(sb);
	assert_string_equal(sb->name, "both");
	assert_string_equal(sb->proxy_password, "file:/run/secrets/pp");
	assert_int_equal(sb->naddrs, 1);
	assert_int_equal(sb->addrs[0].prefix, 24);
	assert_ptr_equal(policy_sandbox_by_proxy_user(pol, "cix", 2), policy_sandbox_by_proxy_user(pol, "ci", 2));
	assert_null(policy_sandbox_by_proxy_user(pol, "c", 1));
	assert_null(policy_sandbox_by_proxy_user(pol, "CI", 2));
	assert_null(policy_sandbox_by_proxy_user(pol, "both-use", 8));
	assert_null(policy_sandbox_by_proxy_user(pol, NULL, 0));
	assert_null(policy_sandbox_by_proxy_user(pol, "", 0)); /* agent-1 has no user */
	sb = policy_sandbox_get(pol, 0);
	assert_int_equal(sb->naddrs, 2);
	assert_int_equal(sb->addrs[1].family, AF_INET6);
	assert_int_equal(sb->addrs[1].prefix, 128);

	/* sandbox_env in the order written */
	assert_int_equal(policy_sandbox_env_count(pol), 3);
	policy_sandbox_env_get(pol, 0, &var, &sec);
	assert_string_equal(var, "Z_LAST");
	assert_string_equal(sec, "short");
	policy_sandbox_env_get(pol, 1, &var, &sec);
	assert_string_equal(var, "_A");
	assert_string_equal(sec, "wild");
	policy_sandbox_env_get(pol, 2, &var, &sec);
	assert_string_equal(var, "WILD2");
	assert_string_equal(sec, "wild");

	policy_unref(pol);
}

static void
test_none(void **state)
{
	struct policy *pol = NULL;
	const char *var = "x", *sec = "y";
	char err[256];

	(void)state;
	assert_int_equal(load("ca: /ca\nhosts:\n  a.test: {}\n", &pol, err, sizeof(err)), 0);
	assert_int_equal(policy_secret_count(pol), 0);
	assert_null(policy_secret_get(pol, 0));
	assert_null(policy_secret_find(pol, "github"));
	assert_int_equal(policy_sandbox_count(pol), 0);
	assert_null(policy_sandbox_by_proxy_user(pol, "ci", 2));
	assert_int_equal(policy_sandbox_env_count(pol), 0);
	policy_sandbox_env_get(pol, 0, &var, &sec);
	assert_null(var);
	assert_null(sec);
	policy_unref(pol);
	/* empty maps are fine */
	assert_int_equal(load("ca: /ca\nsecrets: {}\nsandboxes: {}\nsandbox_env: {}\n", &pol, err, sizeof(err)), 0);
	assert_int_equal(policy_secret_count(pol), 0);
	policy_unref(pol);
	assert_int_equal(policy_secret_count(NULL), 0);
	assert_int_equal(policy_sandbox_count(NULL), 0);
	assert_int_equal(policy_sandbox_env_count(NULL), 0);
	assert_null(policy_secret_find(NULL, "x"));
}

/* Each snapshot carries its own copy: freeing one (a reload swap) leaves the other intact. */
static void
test_snapshot_independent(void **state)
{
	struct policy *a = NULL, *b = NULL;
	const struct policy_secret *s;
	char err[256];

	(void)state;
	assert_int_equal(load(example_yaml, &a, err, sizeof(err)), 0);
	assert_int_equal(load(more_yaml, &b, err, sizeof(err)), 0);
	policy_unref(a);
	s = policy_secret_find(b, "wild");
	assert_non_null(s);
	assert_string_equal(s->hosts[0], "*.github.com");
	policy_unref(b);
}

struct bad {
	const char *yaml;  /* after "ca: /ca\n": line 1 is ca */
	const char *want;  /* substring of the message, with file:line:col */
};

static const struct bad bads[] = {
	/* unknown keys */
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    color: red\n",
	 "t.yaml:6:5: unknown key 'color' in secrets.a; expected one of: source, ttl, format, placeholder, hosts, inject, sandboxes"},
	{"sandboxes:\n  s:\n    address: [10.0.0.1]\n", "t.yaml:4:5: unknown key 'address' in sandboxes.s"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: u, password: env:P, realm: x }\n",
	 "t.yaml:4:45: unknown key 'realm' in sandboxes.s.proxy_auth"},
	{"secret:\n  a: {}\n", "t.yaml:2:1: unknown key 'secret' in the top level"},
	{"secrets: [a]\n", "t.yaml:2:10: expected a map of secrets (name: settings) for secrets"},
	{"sandboxes: x\n", "t.yaml:2:12: expected a map of sandboxes"},
	{"sandbox_env: [A]\n", "t.yaml:2:14: expected a map of VARIABLE: secret-name for sandbox_env"},
	{"secrets:\n  a: x\n", "t.yaml:3:6: expected a map of secret settings"},
	/* required keys */
	{"secrets:\n  a:\n    hosts: [x.test]\n", "t.yaml:3:3: missing required key 'source' in secrets.a"},
	{"secrets:\n  a:\n    source: env:A\n", "t.yaml:3:3: missing required key 'hosts' in secrets.a"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: []\n",
	 "t.yaml:5:12: expected a list of 1 to 256 hosts in secrets.a.hosts"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: x.test\n", "t.yaml:5:12: expected a list of 1 to 256 hosts"},
	/* names */
	{"secrets:\n  a/b:\n    source: env:A\n    hosts: [x.test]\n",
	 "t.yaml:3:3: bad secret name 'a/b'; expected 1 to 64 characters of A-Z a-z 0-9 _ . -"},
	{"secrets:\n  \"\":\n    source: env:A\n    hosts: [x.test]\n", "t.yaml:3:3: bad secret name ''"},
	{"secrets:\n  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:\n    source: env:A\n    hosts: [x.test]\n",
	 "t.yaml:3:3: bad secret name 'aaaa"},
	{"sandboxes:\n  \"agent 1\":\n    addresses: [10.0.0.1]\n", "t.yaml:3:3: bad sandbox name 'agent 1'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n  a:\n    source: env:B\n    hosts: [x.test]\n",
	 "t.yaml:6:3: duplicate secret 'a' in secrets"},
	{"sandboxes:\n  s: {addresses: [10.0.0.1]}\n  s: {addresses: [10.0.0.2]}\n",
	 "t.yaml:4:3: duplicate sandbox 's' in sandboxes"},
	/* source, ttl */
	{"secrets:\n  a:\n    source: foo:bar\n    hosts: [x.test]\n",
	 "t.yaml:4:13: bad source for secrets.a: a secret source is env:VAR, file:/path or exec:program [args]"},
	{"secrets:\n  a:\n    source: env:1X\n    hosts: [x.test]\n",
	 "t.yaml:4:13: bad source for secrets.a: env: needs a variable name"},
	{"secrets:\n  a:\n    source: file:relative\n    hosts: [x.test]\n",
	 "t.yaml:4:13: bad source for secrets.a: file: needs an absolute path"},
	{"secrets:\n  a:\n    source: [env:A]\n    hosts: [x.test]\n",
	 "t.yaml:4:13: expected a source (env:VAR, file:/path or exec:program) for secrets.a.source"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: 0\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl (seconds, or \"90s\", \"50m\", \"1h\"; 1s to 24h)"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: 25h\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: 86401\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: 2d\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: m\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl"},
	{"secrets:\n  a:\n    source: exec:/x\n    ttl: 99999999999s\n    hosts: [x.test]\n",
	 "t.yaml:5:10: expected a duration for secrets.a.ttl"},
	/* format, placeholder */
	{"secrets:\n  a:\n    source: env:A\n    format: github\n    placeholder: abcdefghijklmnopq\n    hosts: [x.test]\n",
	 "t.yaml:6:18: format and placeholder are exclusive in secrets.a"},
	{"secrets:\n  a:\n    source: env:A\n    format: gitlab\n    hosts: [x.test]\n",
	 "t.yaml:5:13: unknown format 'gitlab' for secrets.a; expected github, openai, anthropic, slack or stripe"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: abcdefghijklmno\n    hosts: [x.test]\n",
	 "t.yaml:5:18: bad placeholder for secrets.a; expected 16 to 127 characters of A-Z a-z 0-9 _ . -"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: \"abcdefgh ijklmnopq\"\n    hosts: [x.test]\n",
	 "t.yaml:5:18: bad placeholder for secrets.a"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: "
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
	 "    hosts: [x.test]\n",
	 "t.yaml:5:18: bad placeholder for secrets.a"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: PLACEHOLDER_0123456789\n    hosts: [x.test]\n"
	 "  b:\n    source: env:B\n    placeholder: PLACEHOLDER_0123456789\n    hosts: [y.test]\n",
	 "t.yaml:9:18: placeholder of secrets.b overlaps the placeholder of secrets.a (line 5): placeholders must differ and neither may contain the other"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: PLACEHOLDER_0123456789\n    hosts: [x.test]\n"
	 "  b:\n    source: env:B\n    placeholder: xPLACEHOLDER_0123456789x\n    hosts: [y.test]\n",
	 "t.yaml:9:18: placeholder of secrets.b overlaps the placeholder of secrets.a (line 5)"},
	{"secrets:\n  a:\n    source: env:A\n    placeholder: xPLACEHOLDER_0123456789x\n    hosts: [x.test]\n"
	 "  b:\n    source: env:B\n    hosts: [y.test]\n"
	 "  c:\n    source: env:B\n    placeholder: PLACEHOLDER_0123456789\n    hosts: [y.test]\n",
	 "t.yaml:12:18: placeholder of secrets.c overlaps the placeholder of secrets.a (line 5)"},
	/* hosts */
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test, \"exa mple.com\"]\n",
	 "t.yaml:5:21: bad host 'exa mple.com' in secrets.a.hosts"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [\"*.10.1.2.3\"]\n", "t.yaml:5:13: bad host '*.10.1.2.3'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [\"*\"]\n", "t.yaml:5:13: bad host '*'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test, X.Test.]\n",
	 "t.yaml:5:21: duplicate host 'x.test' in secrets.a.hosts"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [[x.test]]\n", "t.yaml:5:13: expected a host name in secrets.a.hosts"},
	/* inject */
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:Host]\n",
	 "t.yaml:6:14: refused place 'header:Host' in secrets.a.inject: a secret may not go into the host header"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:Content-Length]\n",
	 "t.yaml:6:14: refused place 'header:Content-Length'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:transfer-encoding]\n",
	 "t.yaml:6:14: refused place 'header:transfer-encoding'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:CONNECTION]\n",
	 "t.yaml:6:14: refused place 'header:CONNECTION'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [basic, header:Proxy-Authorization]\n",
	 "t.yaml:6:21: refused place 'header:Proxy-Authorization'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"header:X Y\"]\n",
	 "t.yaml:6:14: bad place 'header:X Y' in secrets.a.inject; expected header:<Name> with a header name token of 1 to 128 characters"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"header:\"]\n",
	 "t.yaml:6:14: bad place 'header:' in secrets.a.inject; expected header:<Name>"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [query:a&b]\n",
	 "t.yaml:6:14: bad place 'query:a&b' in secrets.a.inject; expected query:<param> with 1 to 128 characters, no '&', '=', '#' or space"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"query:a=b\"]\n",
	 "t.yaml:6:14: bad place 'query:a=b'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"query:a#b\"]\n",
	 "t.yaml:6:14: bad place 'query:a#b'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"query:a b\"]\n",
	 "t.yaml:6:14: bad place 'query:a b'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"query:\"]\n",
	 "t.yaml:6:14: bad place 'query:'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [query:"
	 "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]\n",
	 "t.yaml:6:14: bad place 'query:aaaa"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [json:a.b]\n",
	 "t.yaml:6:14: bad place 'json:a.b' in secrets.a.inject; expected json:$<path>"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"json:$.\"]\n",
	 "t.yaml:6:14: bad place 'json:$.'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"json:$.a..b\"]\n",
	 "t.yaml:6:14: bad place 'json:$.a..b'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"form:\"]\n",
	 "t.yaml:6:14: bad place 'form:' in secrets.a.inject; expected form:<field> with 1 to 128 characters"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [cookie:sid]\n",
	 "t.yaml:6:14: bad place 'cookie:sid' in secrets.a.inject; expected header:<Name>, basic, query:<param>, json:$.<path> or form:<field>"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [Basic]\n", "t.yaml:6:14: bad place 'Basic'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [basic, basic]\n",
	 "t.yaml:6:21: duplicate place in secrets.a.inject"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:X-Key, header:x-key]\n",
	 "t.yaml:6:28: duplicate place in secrets.a.inject"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [query:k, \"json:$.k\", query:k]\n",
	 "t.yaml:6:35: duplicate place in secrets.a.inject"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: []\n",
	 "t.yaml:6:13: expected a list of 1 to 32 places in secrets.a.inject"},
	/* a secret's sandboxes */
	{"sandboxes:\n  s1: {addresses: [10.0.0.1]}\nsecrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    sandboxes: [s1, nope]\n",
	 "t.yaml:8:21: unknown sandbox 'nope' in secrets.a.sandboxes; expected a name under sandboxes:"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    sandboxes: [s1]\n",
	 "t.yaml:6:17: unknown sandbox 's1'"},
	{"sandboxes:\n  s1: {addresses: [10.0.0.1]}\nsecrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    sandboxes: [s1, s1]\n",
	 "t.yaml:8:21: duplicate sandbox 's1' in secrets.a.sandboxes"},
	{"sandboxes:\n  s1: {addresses: [10.0.0.1]}\nsecrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    sandboxes: []\n",
	 "t.yaml:8:16: expected a list of 1 to 4096 sandbox names in secrets.a.sandboxes (leave it out for every sandbox)"},
	/* sandboxes */
	{"sandboxes:\n  s: {}\n", "t.yaml:3:3: sandboxes.s needs addresses or proxy_auth (or both)"},
	{"sandboxes:\n  s:\n    addresses: []\n", "t.yaml:3:3: sandboxes.s needs addresses or proxy_auth"},
	{"sandboxes:\n  s:\n    addresses: [10.0.0.0/33]\n",
	 "t.yaml:4:17: bad CIDR block '10.0.0.0/33' in sandboxes.s.addresses"},
	{"sandboxes:\n  s:\n    addresses: [10.0.0.1, fd00::/200]\n", "t.yaml:4:27: bad CIDR block 'fd00::/200'"},
	{"sandboxes:\n  s:\n    addresses: 10.0.0.1\n", "t.yaml:4:16: expected a list of at most 1024 CIDR blocks"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: u }\n",
	 "t.yaml:4:17: missing required key 'password' in sandboxes.s.proxy_auth"},
	{"sandboxes:\n  s:\n    proxy_auth: { password: env:P }\n",
	 "t.yaml:4:17: missing required key 'user' in sandboxes.s.proxy_auth"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: u, password: exec:/bin/pw }\n",
	 "t.yaml:4:38: bad password source for sandboxes.s.proxy_auth: expected env:VAR or file:/path (exec: is not supported here)"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: u, password: hunter2 }\n",
	 "t.yaml:4:38: bad password source for sandboxes.s.proxy_auth: a secret source is env:VAR"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: \"a:b\", password: env:P }\n",
	 "t.yaml:4:25: bad user in sandboxes.s.proxy_auth; expected 1 to 128 characters, no ':' or control characters"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: \"\", password: env:P }\n", "t.yaml:4:25: bad user"},
	{"sandboxes:\n  s:\n    proxy_auth: { user: ci, password: env:P }\n  t:\n    proxy_auth: { user: ci, password: env:Q }\n",
	 "t.yaml:6:25: duplicate proxy_auth user 'ci' in sandboxes.t.proxy_auth (also in sandboxes.s)"},
	/* sandbox_env */
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  1X: a\n",
	 "t.yaml:7:3: bad variable name '1X' in sandbox_env; expected [A-Za-z_][A-Za-z0-9_]*"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  A-B: a\n", "t.yaml:7:3: bad variable name 'A-B'"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  \"\": a\n", "t.yaml:7:3: bad variable name ''"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  TOKEN: b\n",
	 "t.yaml:7:10: unknown secret 'b' for sandbox_env.TOKEN; expected a name under secrets:"},
	{"sandbox_env:\n  TOKEN: a\n", "t.yaml:3:10: unknown secret 'a' for sandbox_env.TOKEN"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  T: a\n  T: a\n",
	 "t.yaml:8:3: duplicate variable 'T' in sandbox_env"},
	{"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\nsandbox_env:\n  T: [a]\n",
	 "t.yaml:7:6: unknown secret '(not a string)' for sandbox_env.T"},
	/* allow_plaintext */
	{"hosts:\n  x.test:\n    allow_plaintext: yes\n",
	 "t.yaml:4:22: expected true or false for hosts.x.test.allow_plaintext"},
	{"hosts:\n  x.test:\n    allow_plaintext: true\n    allow_plaintext: false\n",
	 "t.yaml:5:5: duplicate key 'allow_plaintext' in hosts.x.test"},
	{"hosts:\n  x.test:\n    allow_plaintext: true\n    plaintext: true\n", "t.yaml:5:5: unknown key 'plaintext' in hosts.x.test"},
	/* a bad host entry before allow_plaintext is still reported first */
	{"hosts:\n  \"bad host\":\n    allow_plaintext: maybe\n", "t.yaml:3:3: bad host 'bad host' in hosts"},
};

static void
test_errors(void **state)
{
	char yaml[1024], err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct policy_config *cfg = (struct policy_config *)&yaml;
		struct policy *pol = (struct policy *)&yaml;
		int n = snprintf(yaml, sizeof(yaml), "ca: /ca\n%s", bads[i].yaml);

		assert_true(n > 0 && (size_t)n < sizeof(yaml));
		err[0] = '\0';
		if (policy_load_buffer("t.yaml", yaml, (size_t)n, &cfg, &pol, err, sizeof(err)) != SLUICE_EINVAL ||
		    strstr(err, bads[i].want) == NULL) {
			print_error("case %zu:\n%s\nwant: %s\ngot:  %s\n", i, yaml, bads[i].want, err);
			fail();
		}
		assert_null(cfg);
		assert_null(pol);
	}
}

/* What each bound accepts at its edge. */
static void
test_edges(void **state)
{
	static const char *const good[] = {
		"secrets:\n  a:\n    source: exec:/x\n    ttl: 86400\n    hosts: [x.test]\n",
		"secrets:\n  a:\n    source: exec:/x\n    ttl: 1440m\n    hosts: [x.test]\n",
		"secrets:\n  a:\n    source: exec:/x\n    ttl: 1s\n    hosts: [x.test]\n",
		"secrets:\n  aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:\n    source: env:A\n    hosts: [x.test]\n",
		"secrets:\n  a.B_c-9:\n    source: env:A\n    placeholder: abcdefghijklmnop\n    hosts: [x.test]\n",
		"secrets:\n  a:\n    source: env:A\n    placeholder: "
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
		"    hosts: [x.test]\n",
		"secrets:\n  a:\n    source: env:A\n    placeholder: PLACEHOLDER_A_0123456\n    hosts: [x.test]\n"
		"  b:\n    source: env:B\n    placeholder: PLACEHOLDER_B_0123456\n    hosts: [x.test]\n",
		"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [header:Proxy-Authorizationx, header:X-Host]\n",
		"secrets:\n  a:\n    source: env:A\n    hosts: [x.test]\n    inject: [\"form:a b&c=d\", \"json:$['a b'].c[*]\", header:k, query:k]\n",
		"sandboxes:\n  s:\n    proxy_auth: { user: \"user with spaces\", password: \"file:/x\" }\n",
		"hosts:\n  x.test:\n    allow_plaintext: false\n",
	};
	struct policy *pol;
	char yaml[1024], err[512];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int n = snprintf(yaml, sizeof(yaml), "ca: /ca\n%s", good[i]);

		assert_true(n > 0 && (size_t)n < sizeof(yaml));
		pol = NULL;
		if (load(yaml, &pol, err, sizeof(err)) != 0) {
			print_error("case %zu:\n%s\ngot: %s\n", i, yaml, err);
			fail();
		}
		policy_unref(pol);
	}
	pol = NULL;
	assert_int_equal(load("ca: /ca\nsecrets:\n  a:\n    source: exec:/x\n    ttl: 1440m\n    hosts: [x.test]\n", &pol,
	                      err, sizeof(err)), 0);
	assert_int_equal(policy_secret_get(pol, 0)->ttl_s, 86400);
	policy_unref(pol);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example),
		cmocka_unit_test(test_more),
		cmocka_unit_test(test_none),
		cmocka_unit_test(test_snapshot_independent),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
