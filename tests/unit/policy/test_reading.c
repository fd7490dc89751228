/*
 * tests/unit/policy/test_reading.c - requests judged as upstream frameworks
 * read them (issue 19): ';' path parameters (keep judges both readings,
 * strip, refuse), method overrides (headers, _method in the query and in a
 * form body), bodies on GET/HEAD/OPTIONS, and GraphQL requests whose query
 * string or body the graphql condition cannot read.
 */
#include <stdlib.h>

#include "semtest.h"

/* Decides <r> with has_body <hb>; the verdict, with the rule in *<rule>. */
static enum policy_req_verdict
decide(const struct policy *p, const char *host, const struct st_req *r, int hb, const char **rule,
       size_t *need)
{
	static struct policy_decision d;
	struct policy_conn_decision cd;
	struct policy_header hs[4];
	struct policy_request q;
	char path[256];
	const char *err = NULL;
	long n;

	policy_decide_conn(p, host, 443, &cd);
	st_request(r, &q, hs);
	n = policy_host_path(cd.host, q.path, q.path_len, path, sizeof(path), &err);
	if (n < 0) {
		*rule = err;
		return (enum policy_req_verdict)-1;
	}
	q.path = path;
	q.path_len = (size_t)n;
	q.has_body = hb;
	if (need != NULL)
		*need = policy_body_need(p, cd.host, &q, NULL);
	policy_decide(p, cd.host, &q, &d);
	*rule = d.act.rule;
	return d.act.verdict;
}

#define EXPECT(p_, host_, r_, hb_, verdict_, rule_)                                                          \
	do {                                                                                                 \
		const char *rl_;                                                                             \
		int v_ = (int)decide((p_), (host_), (r_), (hb_), &rl_, NULL);                                \
		if (v_ != (int)(verdict_) || strstr(rl_, (rule_)) == NULL)                                   \
			fail_msg("line %d: %s %s: expected %d by %s, got %d by %s", __LINE__, (r_)->method,  \
			         (r_)->path, (int)(verdict_), (rule_), v_, rl_);                            \
	} while (0)

static const char params_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  keep.test:\n"
	"    rules:\n"
	"      - { id: admin, deny: { path: \"/admin/**\" } }\n"
	"      - { id: public, allow: { path: \"/public/**\" } }\n"
	"      - { id: jsession, allow: { path: \"/app/*\" } }\n"
	"      - { id: txt, allow: { path: \"/files/*.txt\" } }\n"
	"  strip.test:\n"
	"    path_params: strip\n"
	"    rules:\n"
	"      - { id: public, allow: { path: \"/public/**\" } }\n"
	"  refuse.test:\n"
	"    path_params: refuse\n"
	"    rules:\n"
	"      - { id: public, allow: { path: \"/public/**\" } }\n";

static void
test_path_params(void **state)
{
	struct policy *p = st_load(params_yaml);
	struct st_req r = {.method = "GET"};

	(void)state;
#define P(host_, path_, verdict_, rule_) \
	do { r.path = (path_); EXPECT(p, (host_), &r, 0, (verdict_), (rule_)); } while (0)
	/* the finding, and variants: a dot segment with parameters is refused everywhere */
	P("keep.test", "/public/..;/admin/users", -1, "dot segment");
	P("keep.test", "/public/%2e%2e;x/admin/users", -1, "dot segment");
	P("strip.test", "/public/.;/x", -1, "dot segment");
	/* keep: both readings must be allowed */
	P("keep.test", "/public/a;jsessionid=1", POLICY_REQ_ALLOW, "public");
	P("keep.test", "/app/x;jsessionid=1", POLICY_REQ_ALLOW, "jsession");
	/* "/app/x;y/z" matches the app glob literally, stripped it is "/app/x/z": no rule, default deny */
	P("keep.test", "/app/x;y/z", POLICY_REQ_DENY, "default");
	/* "/admin;x/users" is not under the admin glob literally, stripped it is */
	P("keep.test", "/admin;x/users", POLICY_REQ_DENY, "default");
	/* allowed as sent, denied stripped: the stricter reading stands */
	P("keep.test", "/files/a.txt", POLICY_REQ_ALLOW, "txt");
	P("keep.test", "/files/secret.key;.txt", POLICY_REQ_DENY, "default");
	P("keep.test", "/files/a.txt;v=1", POLICY_REQ_DENY, "default");
	P("keep.test", "/public;x/../admin/users", POLICY_REQ_DENY, "admin");
	/* a parameter that hides the denied prefix from the literal reading: "/public/x;/../../admin" normalises away */
	P("keep.test", "/public/x", POLICY_REQ_ALLOW, "public");
	/* strip: judged and (the gateway) forwarded without them */
	P("strip.test", "/public;a=1/x;b=2", POLICY_REQ_ALLOW, "public");
	P("strip.test", "/other;x", POLICY_REQ_DENY, "default");
	/* refuse: any ';' */
	P("refuse.test", "/public/a;x", -1, "path_params: refuse");
	P("refuse.test", "/public/a", POLICY_REQ_ALLOW, "public");
#undef P
	policy_unref(p);
}

static const char override_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  api.test:\n"
	"    rules:\n"
	"      - { id: post-only, allow: { method: POST, path: \"/items\" } }\n"
	"      - { id: get, allow: { method: GET, path: \"/items\" } }\n"
	"      - { id: reads, allow: { method: [GET, HEAD, OPTIONS], path: \"/search\" } }\n"
	"  open.test: {}\n"
	"  search.test:\n"
	"    get_bodies: allow\n"
	"    rules:\n"
	"      - { id: search, allow: { method: GET, path: /search, json: { \"$.q\": { regex: \"[a-z]+\" } } } }\n"
	"      - { id: deny-delete-form, deny: { method: DELETE, path: /search } }\n"
	"      - { id: any, allow: { path: /search } }\n";

static void
test_overrides_and_get_bodies(void **state)
{
	struct policy *p = st_load(override_yaml);
	struct st_req r = {.method = "POST", .path = "/items"};
	size_t need = 0;
	const char *rule;

	(void)state;
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "post-only");
	/* every override header, any case, on every host, even one without rules */
	r.h[0] = "X-HTTP-Method-Override: DELETE";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_DENY, "request");
	EXPECT(p, "open.test", &r, 0, POLICY_REQ_DENY, "request");
	r.h[0] = "x-http-method: DELETE";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_DENY, "request");
	r.h[0] = "X-Method-Override:  put ";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_DENY, "request");
	/* naming its own method is fine */
	r.h[0] = "X-HTTP-Method-Override: post";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "post-only");
	r.h[0] = NULL;
	/* _method in the query string: decoded, its name folded */
	r.query = "_method=DELETE";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_DENY, "request");
	r.query = "a=1&%5Fmethod=delete";
	EXPECT(p, "open.test", &r, 0, POLICY_REQ_DENY, "request");
	r.query = "_METHOD=PATCH";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_DENY, "request");
	r.query = "_method=POST";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "post-only");
	r.query = "x_method=DELETE";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "post-only");
	r.query = NULL;
	/* _method in a form body: held on a POST where rules allow other methods on the path, then checked */
	r.ctype = "application/x-www-form-urlencoded";
	r.body = NULL;
	decide(p, "api.test", &r, 1, &rule, &need);
	assert_true(need > 0);
	decide(p, "open.test", &r, 1, &rule, &need);
	assert_int_equal(need, 0);
	r.body = "a=1&_method=DELETE";
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_DENY, "request");
	r.body = "a=1&_method=post";
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_ALLOW, "post-only");
	r.body = "a=1&_m%65thod=PUT";
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_DENY, "request");
	r.ctype = NULL;
	r.body = NULL;
	/* bodies on GET, HEAD, OPTIONS: refused unless get_bodies: allow */
	r.method = "GET";
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "get");
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_DENY, "request");
	EXPECT(p, "open.test", &r, 1, POLICY_REQ_DENY, "request");
	r.path = "/search";
	r.method = "HEAD";
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_DENY, "request");
	r.method = "OPTIONS";
	EXPECT(p, "api.test", &r, 1, POLICY_REQ_DENY, "request");
	EXPECT(p, "api.test", &r, 0, POLICY_REQ_ALLOW, "reads");
	/* get_bodies: allow: judged like any other body */
	r.method = "GET";
	r.ctype = "application/json";
	r.body = "{\"q\":\"abc\"}";
	EXPECT(p, "search.test", &r, 1, POLICY_REQ_ALLOW, "search");
	r.body = "{\"q\":\"ABC!\"}";
	EXPECT(p, "search.test", &r, 1, POLICY_REQ_ALLOW, "any");
	policy_unref(p);
}

static const char gql_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  g.test:\n"
	"    rules:\n"
	"      - { id: no-mutations, deny: { path: /graphql, graphql: { type: mutation } } }\n"
	"      - { id: reads, allow: { path: /graphql, graphql: { type: query } } }\n";

static void
test_graphql_unreadable(void **state)
{
	struct policy *p = st_load(gql_yaml);
	struct st_req r = {.method = "POST", .path = "/graphql", .ctype = "application/json",
	                   .body = "{\"query\":\"{ viewer { login } }\"}"};

	(void)state;
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_ALLOW, "reads");
	/* the URL's members win in express-graphql and others */
	r.query = "query=mutation%7BdeleteAll%7D";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "operationName=Evil";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "a=1&variables=%7B%7D";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "extensions=x";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "%71uery=x";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "Query=x";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.query = "queryx=1";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_ALLOW, "reads");
	/* a GET with the document in the URL */
	r.method = "GET";
	r.body = NULL;
	r.query = "query=%7Bviewer%7Blogin%7D%7D";
	EXPECT(p, "g.test", &r, 0, POLICY_REQ_DENY, "no-mutations");
	r.method = "POST";
	r.query = NULL;
	/* bodies that are not JSON GraphQL requests */
	r.ctype = "application/graphql";
	r.body = "mutation { deleteAll }";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.ctype = "multipart/form-data; boundary=b";
	r.body = "--b\r\nContent-Disposition: form-data; name=\"operations\"\r\n\r\n{\"query\":\"mutation{a}\"}\r\n--b--\r\n";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.ctype = "application/json";
	r.body = "{\"extensions\":{\"persistedQuery\":{\"version\":1,\"sha256Hash\":\"abc\"}}}";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	/* twins by case: a Go server reads the last */
	r.body = "{\"query\":\"{ viewer { login } }\",\"Query\":\"mutation { deleteAll }\"}";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	r.body = "{\"query\":\"query A { a } mutation B { b }\",\"operationName\":\"A\",\"OPERATIONNAME\":\"B\"}";
	EXPECT(p, "g.test", &r, 1, POLICY_REQ_DENY, "no-mutations");
	policy_unref(p);
}

static void
test_config_keys(void **state)
{
	struct policy_config *cfg = NULL;
	struct policy *pol = NULL;
	char err[512];
	static const char ok[] = "ca: /x\nupstream:\n  nat64_prefixes: [\"64:ff9b:1::/48\", \"2001:db8:64::/96\"]\n";

	(void)state;
	assert_int_equal(policy_load_buffer("s.yaml", ok, strlen(ok), &cfg, &pol, err, sizeof(err)), 0);
	assert_int_equal(cfg->nnat64_prefixes, 2);
	assert_int_equal(cfg->nat64_prefixes[0].prefix, 48);
	policy_config_free(cfg);
	policy_unref(pol);
	st_load_err("ca: /x\nupstream:\n  nat64_prefixes: [\"64:ff9b:1::/50\"]\n", err, sizeof(err));
	assert_non_null(strstr(err, "length 32, 40, 48, 56, 64 or 96"));
	st_load_err("ca: /x\nupstream:\n  nat64_prefixes: [\"10.0.0.0/8\"]\n", err, sizeof(err));
	assert_non_null(strstr(err, "IPv6 prefix"));
	st_load_err("ca: /x\nupstream:\n  nat64_prefixes: [\"64:ff9b:1::\"]\n", err, sizeof(err));
	assert_non_null(strstr(err, "IPv6 prefix"));
	st_load_err("ca: /x\nhosts:\n  a.test: { path_params: drop }\n", err, sizeof(err));
	assert_non_null(strstr(err, "expected keep, strip or refuse"));
	st_load_err("ca: /x\nhosts:\n  a.test: { get_bodies: yes }\n", err, sizeof(err));
	assert_non_null(strstr(err, "expected refuse or allow"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_params),
		cmocka_unit_test(test_overrides_and_get_bodies),
		cmocka_unit_test(test_graphql_unreadable),
		cmocka_unit_test(test_config_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
