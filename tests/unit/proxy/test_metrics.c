/*
 * tests/unit/proxy/test_metrics.c - proxy/metrics.c: the exact exposition of
 * a known set of counters, label escaping, host bucketing ("other" for every
 * host outside the policy, the pattern for a wildcard entry), each audit
 * record type, the label bounds, reloads (generation, bucketing by the new
 * policy, failures) and /healthz, and counting from threads during a swap.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <event2/buffer.h>
#include <jansson.h>

#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/metrics.h"
#include "proxy/gateway_int.h"

static struct policy *
load(const char *yaml)
{
	struct policy *pol = NULL;
	char err[512];

	if (policy_load_buffer("m.yaml", yaml, strlen(yaml), NULL, &pol, err, sizeof(err)) != 0)
		fail_msg("load: %s", err);
	return pol;
}

static const char pol1[] =
	"ca: /x\n"
	"default: allow\n"
	"hosts:\n"
	"  api.example.test: {}\n"
	"  \"*.pypi.org\": {}\n"
	"  10.1.2.3: {}\n";

static const char pol2[] =
	"ca: /x\n"
	"hosts:\n"
	"  new.example.test: {}\n";

/* The whole exposition, NUL-terminated (the caller frees). */
static char *
render(struct metrics *m, const struct metrics_gauges *g)
{
	struct evbuffer *b = evbuffer_new();
	size_t n;
	char *s;

	metrics_render(m, g, b);
	n = evbuffer_get_length(b);
	s = malloc(n + 1);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

/* 1 if <line> (a whole line) is in <text>. */
static int
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p = text;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
		p++;
	}
	return 0;
}

static struct audit_rec
rec(enum audit_kind kind)
{
	struct audit_rec r = {.kind = kind, .status = -1, .bytes_up = -1, .bytes_down = -1, .duration_ms = -1,
	                      .upstream_tls = -1};
	return r;
}

static void
req(struct metrics *m, const char *host, enum audit_verdict verdict, const char *rule)
{
	struct audit_rec r = rec(AUDIT_KIND_REQUEST);

	r.host = host;
	r.verdict = verdict;
	r.rule = rule;
	metrics_audit(m, &r);
}

static void
resp(struct metrics *m, const char *host, int status)
{
	struct audit_rec r = rec(AUDIT_KIND_RESPONSE);

	r.host = host;
	r.status = status;
	metrics_audit(m, &r);
}

static void
dns(struct metrics *m, const char *answer)
{
	struct audit_rec r = rec(AUDIT_KIND_DNS);

	r.host = "x.example";
	r.dns_answer = answer;
	r.verdict = AUDIT_VERDICT_ALLOW;
	metrics_audit(m, &r);
}

static const char expected_full[] =
	"# HELP sluice_build_info The running gateway's version (always 1).\n"
	"# TYPE sluice_build_info gauge\n"
	"sluice_build_info{version=\"" SLUICE_VERSION "\"} 1\n"
	"# HELP sluice_requests_total Requests decided, by verdict and policy host entry (hosts outside the policy: other).\n"
	"# TYPE sluice_requests_total counter\n"
	"sluice_requests_total{verdict=\"allow\",host=\"*.pypi.org\"} 2\n"
	"sluice_requests_total{verdict=\"allow\",host=\"10.1.2.3\"} 1\n"
	"sluice_requests_total{verdict=\"allow\",host=\"api.example.test\"} 3\n"
	"sluice_requests_total{verdict=\"deny\",host=\"api.example.test\"} 1\n"
	"sluice_requests_total{verdict=\"allow\",host=\"other\"} 1\n"
	"sluice_requests_total{verdict=\"deny\",host=\"other\"} 1\n"
	"# HELP sluice_responses_total Responses to allowed requests, by host and status class.\n"
	"# TYPE sluice_responses_total counter\n"
	"sluice_responses_total{host=\"api.example.test\",class=\"2xx\"} 2\n"
	"sluice_responses_total{host=\"api.example.test\",class=\"5xx\"} 1\n"
	"sluice_responses_total{host=\"other\",class=\"4xx\"} 1\n"
	"sluice_responses_total{host=\"other\",class=\"other\"} 1\n"
	"# HELP sluice_denials_total Refused requests and connections, by rule.\n"
	"# TYPE sluice_denials_total counter\n"
	"sluice_denials_total{rule=\"api.example.test/rules/0\"} 1\n"
	"sluice_denials_total{rule=\"default\"} 1\n"
	"sluice_denials_total{rule=\"tls\"} 2\n"
	"# HELP sluice_exfiltration_attempts_total Placeholders sent where their secret is not bound, by secret.\n"
	"# TYPE sluice_exfiltration_attempts_total counter\n"
	"sluice_exfiltration_attempts_total{secret=\"gh\"} 1\n"
	"# HELP sluice_scrubs_total Responses that had a secret's value scrubbed, by secret.\n"
	"# TYPE sluice_scrubs_total counter\n"
	"sluice_scrubs_total{secret=\"gh\"} 1\n"
	"sluice_scrubs_total{secret=\"npm\"} 1\n"
	"# HELP sluice_dns_queries_total DNS questions answered, by kind of answer.\n"
	"# TYPE sluice_dns_queries_total counter\n"
	"sluice_dns_queries_total{answer=\"synthetic\"} 2\n"
	"sluice_dns_queries_total{answer=\"nxdomain\"} 1\n"
	"sluice_dns_queries_total{answer=\"nodata\"} 1\n"
	"sluice_dns_queries_total{answer=\"refused\"} 1\n"
	"sluice_dns_queries_total{answer=\"error\"} 1\n"
	"# HELP sluice_tls_handshake_failures_total TLS handshakes that failed or timed out, by side (client: the "
	"sandbox; upstream: the real host).\n"
	"# TYPE sluice_tls_handshake_failures_total counter\n"
	"sluice_tls_handshake_failures_total{side=\"client\"} 2\n"
	"sluice_tls_handshake_failures_total{side=\"upstream\"} 1\n"
	"# HELP sluice_connections_open Client connections open now.\n"
	"# TYPE sluice_connections_open gauge\n"
	"sluice_connections_open 3\n"
	"# HELP sluice_h2_streams_open HTTP/2 streams from clients open now.\n"
	"# TYPE sluice_h2_streams_open gauge\n"
	"sluice_h2_streams_open 1\n"
	"# HELP sluice_leaf_cache_entries Leaf certificates in the cache.\n"
	"# TYPE sluice_leaf_cache_entries gauge\n"
	"sluice_leaf_cache_entries 7\n"
	"# HELP sluice_leaf_cache_hits_total Leaf lookups served from the cache.\n"
	"# TYPE sluice_leaf_cache_hits_total counter\n"
	"sluice_leaf_cache_hits_total 40\n"
	"# HELP sluice_leaf_cache_misses_total Leaf lookups that had to mint.\n"
	"# TYPE sluice_leaf_cache_misses_total counter\n"
	"sluice_leaf_cache_misses_total 8\n"
	"# HELP sluice_audit_queue_depth Audit records waiting to be written.\n"
	"# TYPE sluice_audit_queue_depth gauge\n"
	"sluice_audit_queue_depth 0\n"
	"# HELP sluice_audit_write_errors_total Failed audit log writes.\n"
	"# TYPE sluice_audit_write_errors_total counter\n"
	"sluice_audit_write_errors_total 2\n"
	"# HELP sluice_audit_syslog_dropped_total Audit lines the syslog copy dropped (collector down or slow; the file has them).\n"
	"# TYPE sluice_audit_syslog_dropped_total counter\n"
	"sluice_audit_syslog_dropped_total 5\n"
	"# HELP sluice_audit_ocsf_errors_total OCSF events that could not be written.\n"
	"# TYPE sluice_audit_ocsf_errors_total counter\n"
	"sluice_audit_ocsf_errors_total 0\n"
	"# HELP sluice_audit_healthy 1 while the audit log is written, 0 while it fails (requests get 503).\n"
	"# TYPE sluice_audit_healthy gauge\n"
	"sluice_audit_healthy 1\n"
	"# HELP sluice_policy_generation Policies loaded: 1 at start, +1 per successful reload.\n"
	"# TYPE sluice_policy_generation gauge\n"
	"sluice_policy_generation 1\n"
	"# HELP sluice_policy_last_reload_success 1 if the last reload succeeded (or none was tried), 0 if it failed.\n"
	"# TYPE sluice_policy_last_reload_success gauge\n"
	"sluice_policy_last_reload_success 1\n"
	"# HELP sluice_sandboxes_registered Sandboxes registered over the admin socket.\n"
	"# TYPE sluice_sandboxes_registered gauge\n"
	"sluice_sandboxes_registered 2\n";

static void
test_render_exact(void **state)
{
	struct policy *pol = load(pol1);
	struct metrics *m = metrics_create(pol);
	struct metrics_gauges g = {3, 7, 40, 8, 0, 2, 5, 0, 1, 2};
	struct audit_rec r;
	const char *scrubbed[] = {"gh", "npm"};
	char *out;

	(void)state;
	policy_unref(pol);  /* the metrics hold their own reference */
	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "api.example.test", AUDIT_VERDICT_DENY, "api.example.test/rules/0");
	req(m, "files.pypi.org", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "a.b.pypi.org", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "10.1.2.3", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "not-in-policy.example", AUDIT_VERDICT_ALLOW, NULL);  /* default: allow, but no entry: other */
	req(m, "pypi.org", AUDIT_VERDICT_DENY, "default");           /* "*.pypi.org" needs one label more */
	resp(m, "api.example.test", 200);
	resp(m, "api.example.test", 204);
	resp(m, "api.example.test", 502);
	resp(m, "elsewhere.example", 404);
	resp(m, "elsewhere.example", 999);
	r = rec(AUDIT_KIND_CONNECTION);
	r.verdict = AUDIT_VERDICT_DENY;
	r.rule = "tls";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_DENIAL);
	r.rule = "tls";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_CONNECTION);          /* an allowed connection (passthrough) is no denial */
	r.verdict = AUDIT_VERDICT_ALLOW;
	r.rule = "api.example.test";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_EXFILTRATION_ATTEMPT);
	r.secret = "gh";
	r.host = "evil.example";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_SCRUB);
	r.scrubbed = scrubbed;
	r.nscrubbed = 2;
	metrics_audit(m, &r);
	dns(m, "A 198.18.0.7");
	dns(m, "AAAA fd00::7");
	dns(m, "NXDOMAIN");
	dns(m, "NODATA");
	dns(m, "REFUSED");
	dns(m, "SERVFAIL");
	metrics_tls_failure(m, METRICS_SIDE_CLIENT);
	metrics_tls_failure(m, METRICS_SIDE_CLIENT);
	metrics_tls_failure(m, METRICS_SIDE_UPSTREAM);
	metrics_h2_stream(m, 1);
	metrics_h2_stream(m, 1);
	metrics_h2_stream(m, -1);
	out = render(m, &g);
	assert_string_equal(out, expected_full);
	free(out);
	metrics_destroy(m);
}

static void
test_render_unknown_gauges_left_out(void **state)
{
	struct metrics *m = metrics_create(NULL);
	struct metrics_gauges g;
	char *out;

	(void)state;
	metrics_gauges_init(&g);
	out = render(m, &g);
	assert_null(strstr(out, "sluice_audit_queue_depth"));
	assert_null(strstr(out, "sluice_audit_write_errors_total"));
	assert_null(strstr(out, "sluice_audit_healthy"));
	assert_null(strstr(out, "sluice_connections_open"));
	assert_true(has_line(out, "sluice_policy_generation 0"));
	assert_true(has_line(out, "sluice_h2_streams_open 0"));
	assert_true(has_line(out, "sluice_dns_queries_total{answer=\"nodata\"} 0"));
	assert_true(has_line(out, "sluice_tls_handshake_failures_total{side=\"upstream\"} 0"));
	/* no policy: every host is other */
	free(out);
	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);
	out = render(m, &g);
	assert_true(has_line(out, "sluice_requests_total{verdict=\"allow\",host=\"other\"} 1"));
	free(out);
	metrics_destroy(m);
}

static void
test_label_escape(void **state)
{
	struct evbuffer *b = evbuffer_new();
	char out[64];
	size_t n;

	(void)state;
	metrics_label_escape(b, "a\\b\"c\nd\te");
	metrics_label_escape(b, "");
	metrics_label_escape(b, "\"");
	n = evbuffer_get_length(b);
	assert_true(n < sizeof(out));
	evbuffer_remove(b, out, n);
	out[n] = '\0';
	assert_string_equal(out, "a\\\\b\\\"c\\nd\te\\\"");
	evbuffer_free(b);
}

/* A rule id with every escaped byte, as a policy may spell it, renders escaped. */
static void
test_render_escapes_labels(void **state)
{
	struct metrics *m = metrics_create(NULL);
	struct metrics_gauges g;
	char *out;

	(void)state;
	metrics_gauges_init(&g);
	req(m, "h", AUDIT_VERDICT_DENY, "id \"x\"\\y\nz");
	out = render(m, &g);
	assert_true(has_line(out, "sluice_denials_total{rule=\"id \\\"x\\\"\\\\y\\nz\"} 1"));
	free(out);
	metrics_destroy(m);
}

/* Hosts outside the policy never show their name: a thousand of them are one "other" series. */
static void
test_host_bucketing(void **state)
{
	struct policy *pol = load(pol1);
	struct metrics *m = metrics_create(pol);
	struct metrics_gauges g;
	char host[64], *out;
	int i;

	(void)state;
	metrics_gauges_init(&g);
	for (i = 0; i < 1000; i++) {
		snprintf(host, sizeof(host), "h%d.attacker.example", i);
		req(m, host, AUDIT_VERDICT_ALLOW, NULL);
		resp(m, host, 200);
	}
	req(m, "pypi.org.attacker.example", AUDIT_VERDICT_ALLOW, NULL);
	req(m, "x.pypi.org", AUDIT_VERDICT_DENY, "r");
	req(m, NULL, AUDIT_VERDICT_DENY, "r");
	req(m, "", AUDIT_VERDICT_DENY, "r");
	req(m, "API.EXAMPLE.TEST", AUDIT_VERDICT_ALLOW, NULL);  /* not canonical: no entry matches it */
	out = render(m, &g);
	assert_true(has_line(out, "sluice_requests_total{verdict=\"allow\",host=\"other\"} 1002"));
	assert_true(has_line(out, "sluice_responses_total{host=\"other\",class=\"2xx\"} 1000"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"deny\",host=\"*.pypi.org\"} 1"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"deny\",host=\"other\"} 2"));
	assert_null(strstr(out, "attacker"));
	assert_null(strstr(out, "API"));
	free(out);
	metrics_destroy(m);
	policy_unref(pol);
}

static void
test_verdicts_and_scrub_forms(void **state)
{
	struct policy *pol = load(pol1);
	struct metrics *m = metrics_create(pol);
	struct metrics_gauges g;
	struct audit_rec r;
	const char *names[] = {"a", "b"};
	char *out;

	(void)state;
	metrics_gauges_init(&g);
	req(m, "api.example.test", (enum audit_verdict)42, NULL);  /* out of range: other */
	req(m, "api.example.test", AUDIT_VERDICT_NONE, NULL);
	r = rec(AUDIT_KIND_SCRUB);             /* names as secret_names */
	r.secret_names = names;
	r.nsecrets = 2;
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_SCRUB);             /* one name as secret */
	r.secret = "a";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_REQUEST);           /* an event on a request record is not counted (the separate record is) */
	r.host = "api.example.test";
	r.verdict = AUDIT_VERDICT_DENY;
	r.rule = "secrets";
	r.event = "exfiltration_attempt";
	r.secret = "a";
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_EXFILTRATION_ATTEMPT);  /* no secret name: other */
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_START);
	metrics_audit(m, &r);
	r = rec(AUDIT_KIND_UNKNOWN);
	metrics_audit(m, &r);
	metrics_audit(m, NULL);
	out = render(m, &g);
	assert_null(strstr(out, "sluice_requests_total{verdict=\"error\""));  /* no record has that verdict */
	assert_true(has_line(out, "sluice_requests_total{verdict=\"other\",host=\"api.example.test\"} 2"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"deny\",host=\"api.example.test\"} 1"));
	assert_true(has_line(out, "sluice_scrubs_total{secret=\"a\"} 2"));
	assert_true(has_line(out, "sluice_scrubs_total{secret=\"b\"} 1"));
	assert_true(has_line(out, "sluice_denials_total{rule=\"secrets\"} 1"));
	assert_true(has_line(out, "sluice_exfiltration_attempts_total{secret=\"other\"} 1"));
	assert_null(strstr(out, "sluice_exfiltration_attempts_total{secret=\"a\"}"));
	free(out);
	metrics_destroy(m);
	policy_unref(pol);
}

/* The rule and secret tables stop growing at their bound; the rest counts under "other". */
static void
test_label_bounds(void **state)
{
	struct metrics *m = metrics_create(NULL);
	struct metrics_gauges g;
	struct audit_rec r;
	char name[METRICS_LABEL_MAX + 8], line[128], *out, *p;
	int i, series = 0;

	(void)state;
	metrics_gauges_init(&g);
	for (i = 0; i < METRICS_RULES_MAX + 50; i++) {
		snprintf(name, sizeof(name), "rule-%04d", i);
		req(m, "h", AUDIT_VERDICT_DENY, name);
		req(m, "h", AUDIT_VERDICT_DENY, name);
	}
	memset(name, 'x', METRICS_LABEL_MAX + 1);
	name[METRICS_LABEL_MAX + 1] = '\0';
	req(m, "h", AUDIT_VERDICT_DENY, name);                     /* too long: other */
	name[METRICS_LABEL_MAX] = '\0';
	req(m, "h", AUDIT_VERDICT_DENY, name);                     /* exactly the bound: but the table is full: other */
	for (i = 0; i < METRICS_SECRETS_MAX + 3; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		r = rec(AUDIT_KIND_EXFILTRATION_ATTEMPT);
		r.secret = name;
		metrics_audit(m, &r);
	}
	out = render(m, &g);
	for (p = out; (p = strstr(p, "\nsluice_denials_total{")) != NULL; p++)
		series++;
	assert_int_equal(series, METRICS_RULES_MAX + 1);
	snprintf(line, sizeof(line), "sluice_denials_total{rule=\"other\"} %d", 50 * 2 + 2);
	assert_true(has_line(out, line));
	assert_true(has_line(out, "sluice_denials_total{rule=\"rule-0000\"} 2"));
	assert_true(has_line(out, "sluice_exfiltration_attempts_total{secret=\"other\"} 3"));
	free(out);
	metrics_destroy(m);
}

static char *
healthz(struct metrics *m, int audit_healthy, int *code)
{
	struct metrics_gauges g;
	struct evbuffer *b = evbuffer_new();
	size_t n;
	char *s;

	metrics_gauges_init(&g);
	g.audit_healthy = audit_healthy;
	*code = metrics_healthz(m, &g, b);
	n = evbuffer_get_length(b);
	s = malloc(n + 1);
	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

static void
test_reload_and_healthz(void **state)
{
	struct policy *p1 = load(pol1), *p2 = load(pol2);
	struct metrics *m = metrics_create(p1);
	struct metrics_gauges g;
	json_t *j;
	char *out;
	int code;

	(void)state;
	metrics_gauges_init(&g);
	out = healthz(m, 1, &code);
	assert_int_equal(code, 200);
	assert_non_null(strstr(out, "{\"status\":\"ok\",\"audit\":\"ok\",\"policy_generation\":1,\"last_reload\":null,"
	                            "\"uptime_s\":"));
	assert_int_equal(out[strlen(out) - 1], '\n');
	free(out);
	out = healthz(m, -1, &code);  /* unknown audit health reads as ok */
	assert_int_equal(code, 200);
	free(out);
	out = healthz(m, 0, &code);
	assert_int_equal(code, 503);
	assert_non_null(strstr(out, "{\"status\":\"degraded\",\"audit\":\"failing\",\"policy_generation\":1,"));
	free(out);

	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);
	metrics_reload_failed(m, "m.yaml:3:1: bad \"thing\"\n\x1b[31m\xff");
	out = render(m, &g);
	assert_true(has_line(out, "sluice_policy_last_reload_success 0"));
	assert_true(has_line(out, "sluice_policy_generation 1"));
	free(out);
	out = healthz(m, 1, &code);
	assert_int_equal(code, 200);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last_reload"), "result")), "error");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last_reload"), "error")),
	                    "m.yaml:3:1: bad \"thing\"??[31m?");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "last_reload"), "generation")), 1);
	json_decref(j);
	free(out);

	metrics_policy_loaded(m, p2);
	policy_unref(p2);
	policy_unref(p1);  /* the metrics dropped theirs at the swap: this frees it */
	req(m, "api.example.test", AUDIT_VERDICT_ALLOW, NULL);  /* no longer in the policy: other */
	req(m, "new.example.test", AUDIT_VERDICT_ALLOW, NULL);
	out = render(m, &g);
	assert_true(has_line(out, "sluice_policy_last_reload_success 1"));
	assert_true(has_line(out, "sluice_policy_generation 2"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"allow\",host=\"api.example.test\"} 1"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"allow\",host=\"new.example.test\"} 1"));
	assert_true(has_line(out, "sluice_requests_total{verdict=\"allow\",host=\"other\"} 1"));
	free(out);
	out = healthz(m, 1, &code);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	assert_int_equal(json_integer_value(json_object_get(j, "policy_generation")), 2);
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "last_reload"), "result")), "ok");
	assert_null(json_object_get(json_object_get(j, "last_reload"), "error"));
	assert_non_null(json_string_value(json_object_get(json_object_get(j, "last_reload"), "time")));
	json_decref(j);
	free(out);
	metrics_destroy(m);
}

static void
test_null_is_noop(void **state)
{
	struct audit_rec r = rec(AUDIT_KIND_REQUEST);
	struct metrics_gauges g;
	struct evbuffer *b = evbuffer_new();

	(void)state;
	metrics_gauges_init(&g);
	metrics_audit(NULL, &r);
	metrics_tls_failure(NULL, METRICS_SIDE_CLIENT);
	metrics_h2_stream(NULL, 1);
	metrics_policy_loaded(NULL, NULL);
	metrics_reload_failed(NULL, "x");
	metrics_render(NULL, &g, b);
	assert_int_equal(evbuffer_get_length(b), 0);
	metrics_destroy(NULL);
	evbuffer_free(b);
}

#define NTHREADS 8
#define PER_THREAD 20000

struct worker_arg {
	struct metrics *m;
	int idx;
};

static void *
counter_thread(void *arg)
{
	struct worker_arg *a = arg;
	char host[32];
	int i;

	for (i = 0; i < PER_THREAD; i++) {
		snprintf(host, sizeof(host), "%s", i % 2 ? "api.example.test" : "x.pypi.org");
		req(a->m, host, AUDIT_VERDICT_ALLOW, NULL);
		metrics_tls_failure(a->m, METRICS_SIDE_UPSTREAM);
	}
	return NULL;
}

/* Threads count while the main thread swaps policies (both keep the two names): no count is lost. */
static void
test_threads_and_swaps(void **state)
{
	struct policy *pol = load(pol1);
	struct metrics *m = metrics_create(pol);
	struct metrics_gauges g;
	pthread_t t[NTHREADS];
	struct worker_arg a[NTHREADS];
	char line[128], *out;
	int i;

	(void)state;
	metrics_gauges_init(&g);
	for (i = 0; i < NTHREADS; i++) {
		a[i].m = m;
		a[i].idx = i;
		assert_int_equal(pthread_create(&t[i], NULL, counter_thread, &a[i]), 0);
	}
	for (i = 0; i < 200; i++) {
		struct policy *p = load(pol1);
		metrics_policy_loaded(m, p);
		policy_unref(p);
	}
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	out = render(m, &g);
	snprintf(line, sizeof(line), "sluice_requests_total{verdict=\"allow\",host=\"api.example.test\"} %d",
	         NTHREADS * PER_THREAD / 2);
	assert_true(has_line(out, line));
	snprintf(line, sizeof(line), "sluice_requests_total{verdict=\"allow\",host=\"*.pypi.org\"} %d",
	         NTHREADS * PER_THREAD / 2);
	assert_true(has_line(out, line));
	snprintf(line, sizeof(line), "sluice_tls_handshake_failures_total{side=\"upstream\"} %d", NTHREADS * PER_THREAD);
	assert_true(has_line(out, line));
	assert_true(has_line(out, "sluice_policy_generation 201"));
	free(out);
	metrics_destroy(m);
	policy_unref(pol);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_render_exact),
		cmocka_unit_test(test_render_unknown_gauges_left_out),
		cmocka_unit_test(test_label_escape),
		cmocka_unit_test(test_render_escapes_labels),
		cmocka_unit_test(test_host_bucketing),
		cmocka_unit_test(test_verdicts_and_scrub_forms),
		cmocka_unit_test(test_label_bounds),
		cmocka_unit_test(test_reload_and_healthz),
		cmocka_unit_test(test_null_is_noop),
		cmocka_unit_test(test_threads_and_swaps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
