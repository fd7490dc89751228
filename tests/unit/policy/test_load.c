/*
 * tests/unit/policy/test_load.c - loading sluice.yaml: every field of the
 * full example, defaults, and each refusal with its exact file:line:col.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "audit/writer.h"

/* The example of the brief, verbatim (line numbers matter below). */
static const char full_yaml[] =
	"listen:\n"                                                     /* 1 */
	"  transparent: \"[::]:15001\"          # string, optional\n"
	"  proxy: \"127.0.0.1:3128\"            # string, optional\n"
	"  admin: \"unix:/run/sluice/admin.sock\"   # string, optional\n"
	"  dns: \"[::]:15053\"                  # string, optional\n"   /* 5 */
	"  proxy_clients: [127.0.0.0/8, \"::1/128\"]\n"
	"user: nobody                         # default \"nobody\"\n"
	"ca: /var/lib/sluice/ca               # required\n"
	"leaf_cache: 10000                    # positive integer, default 10000\n"
	"upstream:\n"                                                   /* 10 */
	"  ca_bundle: /etc/ssl/certs/ca-certificates.crt\n"
	"  resolve:\n"
	"    internal.test: 127.0.0.1\n"
	"audit:\n"
	"  file: /var/log/sluice/audit.jsonl  # optional\n"            /* 15 */
	"  log_query: false                   # bool, default false\n"
	"workers: 2\n"
	"limits:\n"
	"  tls_handshake: 10s\n"
	"  request_head: 10s\n"                                         /* 20 */
	"  idle: 60s\n"
	"  body: 30s\n"
	"  upstream_connect: 10s\n"
	"  drain: 10s\n"
	"  conns_per_client: 256\n"                                     /* 25 */
	"  header_count: 100                  # max 256 (H1_MAX_HEADERS)\n"
	"  header_bytes: 32768                # 1024 .. 1048576\n"
	"  request_line: 8192                 # 256 .. header_bytes\n"
	"default: deny\n"
	"hosts:\n"                                                      /* 30 */
	"  api.github.com:\n"
	"    rules:\n"
	"      - allow: { method: GET, path: \"/repos/**\" }\n"
	"      - deny:  { method: [PUT, DELETE], path: \"/repos/*/*/git/refs/heads/main\", id: protect-main }\n"
	"  \"*.pypi.org\":\n"                                           /* 35 */
	"    rules:\n"
	"      - allow: { method: [GET, HEAD] }\n"
	"  pinned.example.com:\n"
	"    verdict: passthrough\n"
	"  internal.test:\n"                                            /* 40 */
	"    allow_private: true\n"
	"    encoded_slashes: keep\n"
	"    ports: [8443]\n"
	"    rules:\n"
	"      - allow: { method: GET }\n"                              /* 45 */
	"  10.1.2.3:\n"
	"    rules: [ { allow: { method: GET } } ]\n";

static int
load(const char *yaml, struct policy_config **cfg, struct policy **pol, char *err, size_t errlen)
{
	return policy_load_buffer("t.yaml", yaml, strlen(yaml), cfg, pol, err, errlen);
}

/* audit.syslog's new keys and audit.ocsf (issue 22 item 3); today's keys keep their meaning */
static void
test_audit_sinks(void **state)
{
	static const char *const on = "ca: /x\naudit:\n  syslog: { address: \"tcp://127.0.0.1:601\", format: rfc5424, "
	                              "enterprise: \"32473.7\" }\n  ocsf: { file: /var/log/sluice/ocsf.jsonl }\n";
	static const char *const off = "ca: /x\naudit: { syslog: { enabled: false, address: \"unix:/dev/log\" } }\n";
	static const char *const old = "ca: /x\naudit: { syslog: { enabled: true } }\n";
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct audit_opts o;
	char err[512];

	(void)state;
	assert_int_equal(load(on, &cfg, &pol, err, sizeof(err)), 0);
	policy_audit_opts(cfg, &o);
	assert_int_equal(o.syslog, 1);  /* an address alone turns the copy on */
	assert_string_equal(o.syslog_address, "tcp://127.0.0.1:601");
	assert_string_equal(o.syslog_enterprise, "32473.7");
	assert_string_equal(o.ocsf_file, "/var/log/sluice/ocsf.jsonl");
	policy_config_free(cfg);
	policy_unref(pol);
	assert_int_equal(load(off, &cfg, &pol, err, sizeof(err)), 0);
	policy_audit_opts(cfg, &o);
	assert_int_equal(o.syslog, 0);  /* enabled: false wins */
	assert_string_equal(o.syslog_address, "unix:/dev/log");
	assert_null(o.syslog_enterprise);
	assert_null(o.ocsf_file);
	policy_config_free(cfg);
	policy_unref(pol);
	assert_int_equal(load(old, &cfg, &pol, err, sizeof(err)), 0);
	policy_audit_opts(cfg, &o);
	assert_int_equal(o.syslog, 1);
	assert_string_equal(o.syslog_address, "local");
	policy_config_free(cfg);
	policy_unref(pol);
}

static void
test_full_example(void **state)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	struct policy_req_decision rd;
	char err[512];

	(void)state;
	assert_int_equal(load(full_yaml, &cfg, &pol, err, sizeof(err)), 0);
	assert_non_null(cfg);
	assert_non_null(pol);
	assert_string_equal(cfg->listen_transparent, "[::]:15001");
	assert_string_equal(cfg->listen_proxy, "127.0.0.1:3128");
	assert_string_equal(cfg->listen_admin, "unix:/run/sluice/admin.sock");
	assert_string_equal(cfg->listen_dns, "[::]:15053");
	assert_int_equal(cfg->nproxy_clients, 2);
	assert_int_equal(cfg->proxy_clients[0].family, AF_INET);
	assert_int_equal(cfg->proxy_clients[0].addr[0], 127);
	assert_int_equal(cfg->proxy_clients[0].prefix, 8);
	assert_int_equal(cfg->proxy_clients[1].family, AF_INET6);
	assert_int_equal(cfg->proxy_clients[1].addr[15], 1);
	assert_int_equal(cfg->proxy_clients[1].prefix, 128);
	assert_string_equal(cfg->user, "nobody");
	assert_string_equal(cfg->ca_dir, "/var/lib/sluice/ca");
	assert_int_equal(cfg->leaf_cache, 10000);
	assert_string_equal(cfg->ca_bundle, "/etc/ssl/certs/ca-certificates.crt");
	assert_int_equal(cfg->nresolve, 1);
	assert_string_equal(cfg->resolve[0].name, "internal.test");
	assert_string_equal(cfg->resolve[0].addr, "127.0.0.1");
	assert_string_equal(cfg->audit_file, "/var/log/sluice/audit.jsonl");
	assert_int_equal(cfg->audit_log_query, 0);
	assert_int_equal(cfg->workers, 2);
	assert_int_equal(cfg->limits.tls_handshake_ms, 10000);
	assert_int_equal(cfg->limits.request_head_ms, 10000);
	assert_int_equal(cfg->limits.idle_ms, 60000);
	assert_int_equal(cfg->limits.body_ms, 30000);
	assert_int_equal(cfg->limits.upstream_connect_ms, 10000);
	assert_int_equal(cfg->limits.drain_ms, 10000);
	assert_int_equal(cfg->limits.conns_per_client, 256);
	assert_int_equal(cfg->limits.header_count, 100);
	assert_int_equal(cfg->limits.header_bytes, 32768);
	assert_int_equal(cfg->limits.request_line_bytes, 8192);

	/* hosts: each entry with its attributes */
	policy_decide_conn(pol, "api.github.com", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_non_null(cd.host);
	assert_string_equal(policy_host_key(cd.host), "api.github.com");
	assert_string_equal(cd.rule, "api.github.com");
	assert_null(cd.reason);
	assert_int_equal(policy_host_allow_private(cd.host), 0);
	assert_int_equal(policy_host_keep_encoded_slashes(cd.host), 0);
	policy_decide_request(pol, cd.host, "GET", 3, "/repos/a/b", 10, &rd);
	assert_int_equal(rd.allow, 1);
	assert_string_equal(rd.rule, "api.github.com/rules/0");
	assert_null(rd.reason);
	policy_decide_request(pol, cd.host, "PUT", 3, "/repos/o/r/git/refs/heads/main", 30, &rd);
	assert_int_equal(rd.allow, 0);
	assert_string_equal(rd.rule, "protect-main");
	assert_string_equal(rd.reason, "denied by rule");
	policy_decide_request(pol, cd.host, "POST", 4, "/repos/a/b", 10, &rd);
	assert_int_equal(rd.allow, 0);
	assert_string_equal(rd.rule, "default");
	assert_string_equal(rd.reason, "no rule matched");

	policy_decide_conn(pol, "files.pypi.org", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_string_equal(policy_host_key(cd.host), "*.pypi.org");
	policy_decide_request(pol, cd.host, "HEAD", 4, "/x", 2, &rd);
	assert_int_equal(rd.allow, 1);
	assert_string_equal(rd.rule, "*.pypi.org/rules/0");
	policy_decide_request(pol, cd.host, "head", 4, "/x", 2, &rd);
	assert_int_equal(rd.allow, 0);

	policy_decide_conn(pol, "pinned.example.com", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_PASSTHROUGH);
	assert_string_equal(cd.rule, "pinned.example.com");
	policy_decide_request(pol, cd.host, "DELETE", 6, "/", 1, &rd);
	assert_int_equal(rd.allow, 1); /* no rules list */
	assert_string_equal(rd.rule, "pinned.example.com");

	policy_decide_conn(pol, "internal.test", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_DENY);
	assert_string_equal(cd.reason, "port not allowed");
	assert_string_equal(cd.rule, "internal.test");
	policy_decide_conn(pol, "internal.test", 8443, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_int_equal(policy_host_allow_private(cd.host), 1);
	assert_int_equal(policy_host_keep_encoded_slashes(cd.host), 1);

	policy_decide_conn(pol, "10.1.2.3", 80, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_string_equal(policy_host_key(cd.host), "10.1.2.3");
	policy_decide_request(pol, cd.host, "GET", 3, "/", 1, &rd);
	assert_int_equal(rd.allow, 1);
	assert_string_equal(rd.rule, "10.1.2.3/rules/0");

	policy_decide_conn(pol, "example.org", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_DENY);
	assert_null(cd.host);
	assert_string_equal(cd.rule, "default");
	assert_string_equal(cd.reason, "host not in policy");

	policy_config_free(cfg);
	policy_unref(pol);
}

static void
test_defaults(void **state)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	char err[512];

	(void)state;
	assert_int_equal(load("ca: /ca\n", &cfg, &pol, err, sizeof(err)), 0);
	assert_null(cfg->listen_transparent);
	assert_null(cfg->listen_proxy);
	assert_null(cfg->listen_admin);
	assert_null(cfg->listen_dns);
	assert_int_equal(cfg->nproxy_clients, 2);
	assert_int_equal(cfg->proxy_clients[0].family, AF_INET);
	assert_int_equal(cfg->proxy_clients[0].addr[0], 127);
	assert_int_equal(cfg->proxy_clients[0].prefix, 8);
	assert_int_equal(cfg->proxy_clients[1].family, AF_INET6);
	assert_int_equal(cfg->proxy_clients[1].prefix, 128);
	assert_string_equal(cfg->user, "nobody");
	assert_string_equal(cfg->ca_dir, "/ca");
	assert_int_equal(cfg->leaf_cache, 10000);
	assert_null(cfg->ca_bundle);
	assert_int_equal(cfg->nresolve, 0);
	assert_null(cfg->audit_file);
	assert_int_equal(cfg->audit_log_query, 0);
	assert_int_equal(cfg->workers, 0);
	assert_string_equal(cfg->sandbox_backend, "netns");
	assert_int_equal(cfg->sandbox_uid, 1000);
	assert_null(cfg->qemu_kernel);
	assert_null(cfg->qemu_initrd);
	assert_int_equal(cfg->qemu_kvm, 0);
	assert_int_equal(cfg->qemu_memory_mib, 256);
	assert_int_equal(cfg->limits.tls_handshake_ms, 10000);
	assert_int_equal(cfg->limits.request_head_ms, 10000);
	assert_int_equal(cfg->limits.idle_ms, 60000);
	assert_int_equal(cfg->limits.body_ms, 30000);
	assert_int_equal(cfg->limits.upstream_connect_ms, 10000);
	assert_int_equal(cfg->limits.drain_ms, 10000);
	assert_int_equal(cfg->limits.conns_per_client, 256);
	assert_int_equal(cfg->limits.header_count, 100);
	assert_int_equal(cfg->limits.header_bytes, 32768);
	assert_int_equal(cfg->limits.request_line_bytes, 8192);
	policy_decide_conn(pol, "example.com", 443, &cd);
	assert_int_equal(cd.verdict, POLICY_DENY);
	policy_config_free(cfg);
	policy_unref(pol);
}

static void
test_values(void **state)
{
	static const char yaml[] =
		"ca: /ca\n"
		"user: sluice\n"
		"leaf_cache: 5\n"
		"workers: 64\n"
		"audit: { log_query: true }\n"
		"listen: { proxy_clients: [] }\n"
		"upstream:\n"
		"  resolve: { A.Example.: \"::ffff:1.2.3.4\", b.example: \"2001:DB8:0:0::1\" }\n"
		"limits:\n"
		"  tls_handshake: 500ms\n"
		"  request_head: 3\n"
		"  idle: 2m\n"
		"  body: \"45s\"\n"
		"  upstream_connect: 1ms\n"
		"  drain: 0\n"
		"  conns_per_client: 1\n"
		"  header_count: 256\n"
		"  header_bytes: 1024\n"
		"sandbox:\n"
		"  backend: qemu\n"
		"  uid: 2000\n"
		"  qemu: { kernel: /v/vmlinux, initrd: /v/initrd.gz, accel: kvm, memory: 1G }\n"
		"default: allow\n";
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	struct policy_req_decision rd;
	char err[512];

	(void)state;
	assert_int_equal(load(yaml, &cfg, &pol, err, sizeof(err)), 0);
	assert_string_equal(cfg->user, "sluice");
	assert_int_equal(cfg->leaf_cache, 5);
	assert_int_equal(cfg->workers, 64);
	assert_string_equal(cfg->sandbox_backend, "qemu");
	assert_int_equal(cfg->sandbox_uid, 2000);
	assert_string_equal(cfg->qemu_kernel, "/v/vmlinux");
	assert_string_equal(cfg->qemu_initrd, "/v/initrd.gz");
	assert_int_equal(cfg->qemu_kvm, 1);
	assert_int_equal(cfg->qemu_memory_mib, 1024);
	assert_int_equal(cfg->audit_log_query, 1);
	assert_int_equal(cfg->nproxy_clients, 0);
	assert_int_equal(cfg->nresolve, 2);
	assert_string_equal(cfg->resolve[0].name, "a.example");
	assert_string_equal(cfg->resolve[0].addr, "::ffff:1.2.3.4");
	assert_string_equal(cfg->resolve[1].name, "b.example");
	assert_string_equal(cfg->resolve[1].addr, "2001:db8::1");
	assert_int_equal(cfg->limits.tls_handshake_ms, 500);
	assert_int_equal(cfg->limits.request_head_ms, 3000);
	assert_int_equal(cfg->limits.idle_ms, 120000);
	assert_int_equal(cfg->limits.body_ms, 45000);
	assert_int_equal(cfg->limits.upstream_connect_ms, 1);
	assert_int_equal(cfg->limits.drain_ms, 0);
	assert_int_equal(cfg->limits.conns_per_client, 1);
	assert_int_equal(cfg->limits.header_count, 256);
	assert_int_equal(cfg->limits.header_bytes, 1024);
	assert_int_equal(cfg->limits.request_line_bytes, 1024); /* default clamped to header_bytes */
	/* default: allow */
	policy_decide_conn(pol, "anything.example", 8080, &cd);
	assert_int_equal(cd.verdict, POLICY_INTERCEPT);
	assert_null(cd.host);
	assert_string_equal(cd.rule, "default");
	assert_null(cd.reason);
	policy_decide_request(pol, NULL, "PATCH", 5, "/x", 2, &rd);
	assert_int_equal(rd.allow, 1);
	assert_string_equal(rd.rule, "default");
	assert_null(rd.reason);
	policy_config_free(cfg);
	policy_unref(pol);
}

static void
test_out_pointers_optional(void **state)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	char err[512];

	(void)state;
	assert_int_equal(load(full_yaml, NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(load(full_yaml, &cfg, NULL, NULL, 0), 0);
	assert_non_null(cfg);
	policy_config_free(cfg);
	assert_int_equal(load(full_yaml, NULL, &pol, NULL, 0), 0);
	assert_non_null(pol);
	policy_unref(pol);
	/* failure leaves the out pointers NULL */
	cfg = (void *)1;
	pol = (void *)1;
	assert_int_equal(load("user: x\n", &cfg, &pol, NULL, 0), SLUICE_EINVAL);
	assert_null(cfg);
	assert_null(pol);
}

static void
test_load_file(void **state)
{
	char path[] = "/tmp/sluice-policy-test-XXXXXX";
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	char err[512], want[600];
	int fd;

	(void)state;
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, full_yaml, strlen(full_yaml)), (long)strlen(full_yaml));
	assert_int_equal(policy_load_file(path, &cfg, &pol, err, sizeof(err)), 0);
	assert_string_equal(cfg->ca_dir, "/var/lib/sluice/ca");
	policy_config_free(cfg);
	policy_unref(pol);
	/* an error names the file */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(pwrite(fd, "ca: /x\nbogus: 1\n", 16, 0), 16);
	assert_int_equal(policy_load_file(path, &cfg, &pol, err, sizeof(err)), SLUICE_EINVAL);
	snprintf(want, sizeof(want), "%s:2:1: unknown key 'bogus' in the top level", path);
	assert_non_null(strstr(err, want));
	close(fd);
	unlink(path);
	assert_int_equal(policy_load_file(path, &cfg, &pol, err, sizeof(err)), SLUICE_ENOENT);
	assert_null(cfg);
	assert_null(pol);
	assert_int_equal(policy_load_file("/tmp", &cfg, &pol, err, sizeof(err)), SLUICE_EIO);
}

struct err_case {
	const char *yaml;
	const char *where;  /* exact "t.yaml:L:C: " prefix */
	const char *reason; /* fragment */
};

static const struct err_case err_cases[] = {
	/* unknown keys at every level */
	{"ca: /x\nfoo: 1\n", "t.yaml:2:1: ",
	 "unknown key 'foo' in the top level; expected one of: listen, user, ca, leaf_cache, upstream, audit, workers, limits, default, hosts"},
	{"ca: /x\nlisten:\n  proxy: \"127.0.0.1:3128\"\n  bogus: 1\n", "t.yaml:4:3: ",
	 "unknown key 'bogus' in listen; expected one of: transparent, proxy, admin, dns, proxy_clients"},
	{"ca: /x\nupstream: { cabundle: /x }\n", "t.yaml:2:13: ", "unknown key 'cabundle' in upstream"},
	{"ca: /x\naudit: { path: /x }\n", "t.yaml:2:10: ", "unknown key 'path' in audit"},
	{"ca: /x\nlimits:\n  idle: 1\n  timeout: 1\n", "t.yaml:4:3: ", "unknown key 'timeout' in limits"},
	{"ca: /x\nhosts:\n  api.github.com:\n    verdict: intercept\n    foo: 1\n", "t.yaml:5:5: ",
	 "unknown key 'foo' in hosts.api.github.com; expected one of: verdict, ports, allow_private, encoded_slashes, rules"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { method: GET, pth: /x }\n", "t.yaml:5:31: ",
	 "unknown key 'pth' in hosts.a.example.rules[0].allow; expected one of: method, path, id"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: {}\n      - permit: {}\n", "t.yaml:6:9: ",
	 "unknown key 'permit' in hosts.a.example.rules[1]; expected one of: allow, deny"},
	/* duplicates */
	{"ca: /x\nca: /y\n", "t.yaml:2:1: ", "duplicate key 'ca' in the top level"},
	{"ca: /x\nhosts:\n  a.example: { verdict: deny, verdict: intercept }\n", "t.yaml:3:31: ",
	 "duplicate key 'verdict' in hosts.a.example"},
	{"ca: /x\nhosts:\n  a.example: {}\n  b.example: {}\n  A.Example.: {}\n", "t.yaml:5:3: ",
	 "duplicate host 'a.example' in hosts (also at line 3)"},
	{"ca: /x\nhosts:\n  \"*.example\": {}\n  \"*.EXAMPLE\": {}\n", "t.yaml:4:3: ", "duplicate host '*.example'"},
	{"ca: /x\nhosts:\n  127.0.0.1: {}\n  127.1: {}\n", "t.yaml:4:3: ", "duplicate host '127.0.0.1'"},
	{"ca: /x\nupstream:\n  resolve:\n    a.example: 1.2.3.4\n    A.example: 1.2.3.5\n", "t.yaml:5:5: ",
	 "duplicate host 'a.example' in upstream.resolve"},
	/* types */
	{"ca: /x\nworkers: many\n", "t.yaml:2:10: ", "expected workers (an integer from 0 to 64)"},
	{"ca: /x\nworkers: 257\n", "t.yaml:2:10: ", "expected workers (an integer from 0 to 64)"},
	{"ca: /x\nworkers: \"2\"\n", "t.yaml:2:10: ", "expected workers"},
	{"ca: /x\nworkers: -1\n", "t.yaml:2:10: ", "expected workers"},
	{"ca: /x\nleaf_cache: 0\n", "t.yaml:2:13: ", "expected leaf_cache (an integer from 1"},
	{"ca: [a]\n", "t.yaml:1:5: ", "expected a directory name for ca"},
	{"ca:\n", "t.yaml:1:4: ", "expected a directory name for ca"},
	{"ca: \"/x\\0y\"\n", "t.yaml:1:5: ", "NUL byte in a directory name for ca"},
	{"ca: /x\nuser: {a: b}\n", "t.yaml:2:7: ", "expected a user name for user"},
	{"ca: /x\nlisten: [a]\n", "t.yaml:2:9: ", "expected a map of listen addresses"},
	{"ca: /x\nhosts: [a]\n", "t.yaml:2:8: ", "expected a map of hosts"},
	{"ca: /x\nhosts:\n  a.example: [a]\n", "t.yaml:3:14: ", "expected a map of host settings"},
	{"ca: /x\nhosts:\n  a.example:\n", "t.yaml:3:13: ", "expected a map of host settings"},
	{"ca: /x\nhosts:\n  a.example: { rules: {allow: {}} }\n", "t.yaml:3:23: ", "expected a list of rules in hosts.a.example.rules"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { method: {a: b} }\n", "t.yaml:5:26: ",
	 "expected a method or a list of methods in hosts.a.example.rules[0].allow.method"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { method: [GET, [POST]] }\n", "t.yaml:5:32: ",
	 "expected a list of methods"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { method: [] }\n", "t.yaml:5:26: ",
	 "expected a non-empty list of methods"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { method: \"GE T\" }\n", "t.yaml:5:26: ",
	 "expected an HTTP method token"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { id: \"\" }\n", "t.yaml:5:22: ",
	 "expected a non-empty rule id"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: [GET]\n", "t.yaml:5:16: ",
	 "expected a map with method, path, id"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - GET\n", "t.yaml:5:9: ",
	 "expected a rule: a map with one key, allow or deny"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - { allow: {}, deny: {} }\n", "t.yaml:5:9: ",
	 "expected exactly one of allow, deny in hosts.a.example.rules[0]"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - {}\n", "t.yaml:5:9: ", "expected exactly one of allow, deny"},
	{"ca: /x\nhosts:\n  a.example: { allow_private: yes }\n", "t.yaml:3:31: ", "expected true or false for hosts.a.example.allow_private"},
	{"ca: /x\nhosts:\n  a.example: { allow_private: \"true\" }\n", "t.yaml:3:31: ", "expected true or false"},
	{"ca: /x\naudit: { log_query: 1 }\n", "t.yaml:2:21: ", "expected true or false for audit.log_query"},
	/* audit.syslog and audit.ocsf (issue 22 item 3) */
	{"ca: /x\naudit: { syslog: { enterprise: \"32473.\" } }\n", "t.yaml:2:32: ",
	 "expected an enterprise number (\"32473\", \"32473.1\"; at most 25 characters) for audit.syslog.enterprise"},
	{"ca: /x\naudit: { syslog: { enterprise: \"x32473\" } }\n", "t.yaml:2:32: ", "for audit.syslog.enterprise"},
	{"ca: /x\naudit: { syslog: { enterprise: \"12345678901234567890123456\" } }\n", "t.yaml:2:32: ",
	 "at most 25 characters"},
	{"ca: /x\naudit: { syslog: { adress: local } }\n", "t.yaml:2:", "adress"},
	{"ca: /x\naudit: { syslog: { address: \"unix:dev/log\" } }\n", "t.yaml:2:29: ",
	 "expected \"local\", \"unix:/path\", \"udp://host:port\" or \"tcp://host:port\" for audit.syslog.address"},
	{"ca: /x\naudit: { ocsf: { file: /x, format: json } }\n", "t.yaml:2:", "format"},
	{"ca: /x\naudit: { ocsf: /x }\n", "t.yaml:2:16: ", "expected a map of OCSF export settings"},
	{"ca: /x\nhosts:\n  a.example: { encoded_slashes: decode }\n", "t.yaml:3:33: ",
	 "expected reject or keep for hosts.a.example.encoded_slashes"},
	{"ca: /x\ndefault: permit\n", "t.yaml:2:10: ", "expected 'deny' or 'allow' for default"},
	/* ports */
	{"ca: /x\nhosts:\n  a.example: { ports: [0] }\n", "t.yaml:3:24: ", "expected a port (an integer from 1 to 65535)"},
	{"ca: /x\nhosts:\n  a.example: { ports: [443, 70000] }\n", "t.yaml:3:29: ", "expected a port (an integer from 1 to 65535)"},
	{"ca: /x\nhosts:\n  a.example: { ports: 443 }\n", "t.yaml:3:23: ", "expected a list of ports in hosts.a.example.ports"},
	{"ca: /x\nhosts:\n  a.example: { ports: [] }\n", "t.yaml:3:23: ", "expected a list of 1 to"},
	/* verdict */
	{"ca: /x\nhosts:\n  a.example: { verdict: block }\n", "t.yaml:3:25: ",
	 "expected intercept, passthrough or deny for hosts.a.example.verdict"},
	/* paths */
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - deny: { path: \"regex:/a(\" }\n", "t.yaml:5:23: ",
	 "bad regex in hosts.a.example.rules[0].deny.path at offset 3: missing closing parenthesis"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: admin }\n", "t.yaml:5:24: ",
	 "bad path in hosts.a.example.rules[0].allow.path: a path glob must start with '/'"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: \"/a b\" }\n", "t.yaml:5:24: ",
	 "invalid character in path glob"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: \"/a//b\" }\n", "t.yaml:5:24: ",
	 "empty segment"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: \"/a/../b\" }\n", "t.yaml:5:24: ",
	 "'.' or '..' segment"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: \"/a/%2e\" }\n", "t.yaml:5:24: ",
	 "'.' or '..' segment"},
	{"ca: /x\nhosts:\n  a.example:\n    rules:\n      - allow: { path: \"/a%0\" }\n", "t.yaml:5:24: ",
	 "bad percent-encoding"},
	/* host keys */
	{"ca: /x\nhosts:\n  \"*\": {}\n", "t.yaml:3:3: ", "bad host '*' in hosts"},
	{"ca: /x\nhosts:\n  \"*.\": {}\n", "t.yaml:3:3: ", "bad host '*.' in hosts"},
	{"ca: /x\nhosts:\n  \"*.1.2.3.4\": {}\n", "t.yaml:3:3: ", "bad host '*.1.2.3.4' in hosts"},
	{"ca: /x\nhosts:\n  \"a*.example\": {}\n", "t.yaml:3:3: ", "bad host 'a*.example' in hosts"},
	{"ca: /x\nhosts:\n  \"exa mple\": {}\n", "t.yaml:3:3: ", "bad host 'exa mple' in hosts"},
	/* listen and upstream values */
	{"ca: /x\nlisten:\n  admin: \"127.0.0.1:9\"\n", "t.yaml:3:10: ", "expected \"unix:/path\" for listen.admin"},
	{"ca: /x\nlisten:\n  proxy: \"unix:/x\"\n", "t.yaml:3:10: ", "expected an IP address and port for listen.proxy"},
	{"ca: /x\nlisten:\n  transparent: \"nowhere\"\n", "t.yaml:3:16: ", "bad listen address for listen.transparent"},
	{"ca: /x\nlisten:\n  proxy_clients: [10.0.0.0/33]\n", "t.yaml:3:19: ", "bad CIDR block in listen.proxy_clients"},
	{"ca: /x\nlisten:\n  proxy_clients: 10.0.0.0/8\n", "t.yaml:3:18: ", "expected a list of CIDR blocks"},
	{"ca: /x\nupstream:\n  ca_bundle: [a]\n", "t.yaml:3:14: ", "expected a file name for upstream.ca_bundle"},
	{"ca: /x\nupstream:\n  resolve:\n    a.example: nowhere\n", "t.yaml:4:16: ", "expected an IPv4 or IPv6 address"},
	{"ca: /x\nupstream:\n  resolve:\n    a.example: 127.1\n", "t.yaml:4:16: ", "expected an IPv4 or IPv6 address"},
	{"ca: /x\nupstream:\n  resolve:\n    1.2.3.4: 1.2.3.4\n", "t.yaml:4:5: ", "expected a DNS host name in upstream.resolve"},
	{"ca: /x\nupstream:\n  resolve: [a]\n", "t.yaml:3:12: ", "expected a map of host names to IP addresses"},
	/* limits */
	{"ca: /x\nlimits: { idle: 10h }\n", "t.yaml:2:17: ", "expected a duration for limits.idle"},
	{"ca: /x\nlimits: { idle: 0s }\n", "t.yaml:2:17: ", "expected a duration for limits.idle"},
	/* sandbox: */
	{"ca: /x\nsandbox: { backend: docker }\n", "t.yaml:2:21: ", "expected 'netns', 'qemu' or 'firecracker' for sandbox.backend"},
	{"ca: /x\nsandbox: { uid: 0 }\n", "t.yaml:2:17: ", "sandbox.uid (never 0)"},
	{"ca: /x\nsandbox: { user: 5 }\n", "t.yaml:2:12: ", "unknown key 'user' in sandbox"},
	{"ca: /x\nsandbox: { qemu: { accel: hvf } }\n", "t.yaml:2:27: ", "expected 'tcg' or 'kvm' for sandbox.qemu.accel"},
	{"ca: /x\nsandbox: { qemu: { memory: 32M } }\n", "t.yaml:2:28: ", "expected a size for sandbox.qemu.memory"},
	{"ca: /x\nsandbox: { qemu: { memory: 256 } }\n", "t.yaml:2:28: ", "expected a size for sandbox.qemu.memory"},
	{"ca: /x\nsandbox: { qemu: { kernel: vmlinux } }\n", "t.yaml:2:28: ", "an absolute path for sandbox.qemu.kernel"},
	{"ca: /x\nlimits: { body: 1441m }\n", "t.yaml:2:17: ", "expected a duration for limits.body"},
	{"ca: /x\nlimits: { body: s }\n", "t.yaml:2:17: ", "expected a duration for limits.body"},
	{"ca: /x\nlimits: { header_count: 257 }\n", "t.yaml:2:25: ", "expected limits.header_count (an integer from 1 to 256)"},
	{"ca: /x\nlimits: { header_bytes: 1023 }\n", "t.yaml:2:25: ", "expected limits.header_bytes (an integer from 1024 to 1048576)"},
	{"ca: /x\nlimits: { header_bytes: 8192, request_line: 8193 }\n", "t.yaml:2:45: ",
	 "(an integer from 256 to 8192)"},
	{"ca: /x\nlimits: { request_line: 255 }\n", "t.yaml:2:25: ", "limits.request_line"},
	/* document level */
	{"user: x\n", "t.yaml:1:1: ", "missing required key 'ca'"},
	{"", "t.yaml:1:1: ", "empty configuration"},
	{"# only a comment\n", "t.yaml:1:1: ", "empty configuration"},
	{"- ca\n", "t.yaml:1:1: ", "expected a map at the top level"},
	{"ca: &a /x\nuser: *a\n", "t.yaml:2:7: ", "YAML aliases are not supported"},
	{"ca: /x\n---\nca: /y\n", "t.yaml:2:1: ", "expected a single YAML document"},
	{"ca: /x\n  bad: indent\n", "t.yaml:2:6: ", "YAML syntax error: mapping values are not allowed in this context"},
	{"ca: /x\nhosts: { a.example: {}\n", "t.yaml:3:1: ", "YAML syntax error: did not find expected ',' or '}'"},
	{"ca: \"/x\n", "t.yaml:2:1: ", "YAML syntax error: found unexpected end of stream"},
	{"ca: /x\n? [a]\n: 1\n", "t.yaml:2:3: ", "expected a plain key in the top level"},
};

static void
test_errors(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		const struct err_case *c = &err_cases[i];
		struct policy_config *cfg = (void *)1;
		struct policy *pol = (void *)1;
		char err[1024];
		int ret;

		memset(err, 0, sizeof(err));
		ret = load(c->yaml, &cfg, &pol, err, sizeof(err));
		if (ret >= 0 || cfg != NULL || pol != NULL || strncmp(err, c->where, strlen(c->where)) != 0 ||
		    strstr(err, c->reason) == NULL)
			fail_msg("case %zu: want '%s...%s', got %d '%s'", i, c->where, c->reason, ret, err);
	}
}

static void
test_deep_nesting(void **state)
{
	char buf[4096], err[512];
	size_t o = 0, i;

	(void)state;
	o += (size_t)snprintf(buf, sizeof(buf), "ca: /x\nhosts: ");
	for (i = 0; i < 1000; i++)
		buf[o++] = '[';
	buf[o] = '\0';
	assert_int_equal(load(buf, NULL, NULL, err, sizeof(err)), SLUICE_EINVAL);
	assert_non_null(strstr(err, "t.yaml:2:39: YAML nested too deeply"));
}

static void
test_small_errbuf(void **state)
{
	char err[8];

	(void)state;
	assert_int_equal(load("ca: /x\nfoo: 1\n", NULL, NULL, err, sizeof(err)), SLUICE_EINVAL);
	assert_string_equal(err, "t.yaml:");
	assert_int_equal(load("ca: /x\nfoo: 1\n", NULL, NULL, NULL, 0), SLUICE_EINVAL);
}

static void
test_buffer_edges(void **state)
{
	struct policy_config *cfg = (void *)1;
	char err[256];

	(void)state;
	assert_int_equal(policy_load_buffer("n.yaml", NULL, 0, &cfg, NULL, err, sizeof(err)), SLUICE_EINVAL);
	assert_null(cfg);
	assert_string_equal(err, "n.yaml:1:1: empty configuration; expected a map with at least 'ca'");
	/* the size bound is checked before the bytes are read */
	assert_int_equal(policy_load_buffer("n.yaml", "ca: /x\n", (size_t)1 << 30, &cfg, NULL, err, sizeof(err)),
	                 SLUICE_ETOOBIG);
	assert_non_null(strstr(err, "n.yaml:1:1: configuration larger than"));
	/* no name: a placeholder */
	assert_int_equal(policy_load_buffer(NULL, "x: 1\n", 5, NULL, NULL, err, sizeof(err)), SLUICE_EINVAL);
	assert_non_null(strstr(err, "<buffer>:1:1: unknown key 'x'"));
}

static void
test_host_keys_canonical(void **state)
{
	static const char yaml[] =
		"ca: /x\n"
		"hosts:\n"
		"  \"*.Example.COM\": {}\n"
		"  WWW.Example.COM.: {}\n"
		"  \"[::1]\": {}\n"
		"  \"2001:DB8::0:1\": {}\n"
		"  0x7f000002: {}\n";
	struct policy *pol = NULL;
	struct policy_conn_decision cd;
	char err[512];

	(void)state;
	assert_int_equal(load(yaml, NULL, &pol, err, sizeof(err)), 0);
	policy_decide_conn(pol, "a.example.com", 443, &cd);
	assert_string_equal(policy_host_key(cd.host), "*.example.com");
	policy_decide_conn(pol, "www.example.com", 443, &cd);
	assert_string_equal(policy_host_key(cd.host), "www.example.com");
	policy_decide_conn(pol, "::1", 443, &cd);
	assert_string_equal(policy_host_key(cd.host), "::1");
	policy_decide_conn(pol, "2001:db8::1", 80, &cd);
	assert_string_equal(policy_host_key(cd.host), "2001:db8::1");
	policy_decide_conn(pol, "127.0.0.2", 80, &cd);
	assert_string_equal(policy_host_key(cd.host), "127.0.0.2");
	policy_unref(pol);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_example),
		cmocka_unit_test(test_audit_sinks),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_values),
		cmocka_unit_test(test_out_pointers_optional),
		cmocka_unit_test(test_load_file),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_deep_nesting),
		cmocka_unit_test(test_small_errbuf),
		cmocka_unit_test(test_host_keys_canonical),
		cmocka_unit_test(test_buffer_edges),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
