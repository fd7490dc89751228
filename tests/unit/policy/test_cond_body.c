/*
 * tests/unit/policy/test_cond_body.c - GraphQL documents (every operation,
 * aliases, fragments, batches, operationName) and git receive-pack command
 * sections (create, update, delete, the "0000" probe, malformed pkt-lines).
 */
#include <stdlib.h>

#include "semtest.h"
#include "policy/cond_int.h"

static struct policy_gql_doc *
gql(const char *q, int want_ok)
{
	static struct policy_gql_doc d;
	const char *err = NULL;
	int r;

	memset(&d, 0, sizeof(d));
	r = policy_gql_parse(q, strlen(q), &d, &err);
	if ((r == 0) != want_ok)
		fail_msg("%s: %s (%s)", q, r == 0 ? "parsed" : "refused", err);
	return &d;
}

static void
expect_fields(const struct policy_gql_doc *d, const char *want)
{
	char got[512] = "";
	size_t i, o = 0;

	for (i = 0; i < d->nfields; i++)
		o += (size_t)snprintf(got + o, sizeof(got) - o, "%s%.*s", i ? "," : "", (int)d->fields[i].len, d->fields[i].s);
	assert_string_equal(got, want);
}

static void
test_gql_parser(void **state)
{
	struct policy_gql_doc *d;

	(void)state;
	d = gql("{ viewer { login } }", 1);
	assert_int_equal(d->nops, 1);
	assert_int_equal(d->ops[0].type, POLICY_GQL_QUERY);
	assert_null(d->ops[0].name);
	expect_fields(d, "viewer");
	d = gql("query Q($n: Int = 3, $s: [String!]!) @dir(a: 1) { a: repository(owner: \"o\", name: $s) { issues(first: $n) "
	        "{ nodes { title } } } rateLimit { cost } }", 1);
	assert_int_equal(d->ops[0].name_len, 1);
	expect_fields(d, "repository,rateLimit");
	/* an alias names the field it stands for: the field is what runs */
	d = gql("query Safe { viewer: deleteRepository(input: {id: \"x\"}) { clientMutationId } }", 1);
	expect_fields(d, "deleteRepository");
	/* every operation of the document */
	d = gql("query Safe { viewer { login } } mutation Evil { deleteRepository(input: {}) { x } }", 1);
	assert_int_equal(d->nops, 2);
	assert_int_equal(d->ops[1].type, POLICY_GQL_MUTATION);
	expect_fields(d, "viewer,deleteRepository");
	/* fragments and inline fragments at the root */
	d = gql("mutation M { ...F ... on Mutation { b } ... @include(if: true) { c } } fragment F on Mutation { a ...G } "
	        "fragment G on Mutation { d }", 1);
	expect_fields(d, "a,d,b,c");
	d = gql("subscription { onEvent { id } }", 1);
	assert_int_equal(d->ops[0].type, POLICY_GQL_SUBSCRIPTION);
	/* strings, block strings, comments, commas, numbers, a BOM */
	d = gql("\xef\xbb\xbf# c {\n query { a(s: \"}\\\"\\u00e9\", b: \"\"\"x } \\\"\"\" y\"\"\", n: -1.5e3, l: [1, 2,], o: {k: null}) , }", 1);
	expect_fields(d, "a");
	/* refused */
	gql("", 0);
	gql("fragment F on Query { a }", 0);
	gql("{ ...Unknown }", 0);
	gql("type Query { a: Int }", 0);
	gql("query { a", 0);
	gql("query { a(x: ) }", 0);
	gql("query { a(x: \"unterminated) }", 0);
	gql("query { a(x: \"bad \\q\") }", 0);
	gql("query { a(x: 01) }", 0);
	gql("query { a(x: 1x) }", 0);
	gql("query { a } }", 0);
	gql("query { . }", 0);
	gql("{ a } fragment F on Q { ...F }", 1);
	gql("{ ...F } fragment F on Q { ...F }", 0);
	{
		/* deep nesting and an exponential fragment chain are bounded */
		char q[600];
		size_t i, o = 0;

		o += (size_t)snprintf(q + o, sizeof(q) - o, "{ a ");
		for (i = 0; i < 70; i++)
			q[o++] = '{', q[o++] = 'b';
		for (i = 0; i < 70; i++)
			q[o++] = '}';
		q[o++] = '}';
		q[o] = '\0';
		gql(q, 0);
		gql("{ ...A } fragment A on Q { ...B ...B } fragment B on Q { ...C ...C } fragment C on Q { ...D ...D } "
		    "fragment D on Q { ...E ...E } fragment E on Q { ...F1 ...F1 } fragment F1 on Q { ...G ...G } "
		    "fragment G on Q { ...H ...H } fragment H on Q { ...I ...I } fragment I on Q { ...J ...J } "
		    "fragment J on Q { ...K ...K } fragment K on Q { ...L ...L } fragment L on Q { ...M ...M } "
		    "fragment M on Q { ...N ...N } fragment N on Q { x }", 0);
	}
}

static const char gql_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  api.github.com:\n"
	"    rules:\n"
	"      - id: no-deletes\n"
	"        deny: { path: /graphql, graphql: { fields: { regex: \"delete.*\" } } }\n"
	"      - id: reads\n"
	"        allow: { method: POST, path: /graphql, graphql: { type: query } }\n"
	"      - id: prs\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /graphql\n"
	"          graphql: { type: mutation, name: { in: [OpenPR] }, fields: { in: [createPullRequest] } }\n";

static void
test_gql_rules(void **state)
{
	struct policy *p = st_load(gql_yaml);
	struct st_req r = {.method = "POST", .path = "/graphql", .ctype = "application/json"};

	(void)state;
#define Q(body_, verdict_, rule_)                                            \
	do {                                                                 \
		r.body = (body_);                                            \
		ST_EXPECT(p, "api.github.com", &r, (verdict_), (rule_));     \
	} while (0)
	Q("{\"query\":\"{ viewer { login } }\"}", POLICY_REQ_ALLOW, "reads");
	Q("{\"query\":\"query A { viewer { login } } query B { rateLimit { cost } }\"}", POLICY_REQ_ALLOW, "reads");
	Q("{\"query\":\"mutation OpenPR { createPullRequest(input: {}) { x } }\"}", POLICY_REQ_ALLOW, "prs");
	Q("{\"query\":\"mutation OpenPR($i: X!) { createPullRequest(input: $i) { x } }\",\"operationName\":\"OpenPR\","
	  "\"variables\":{}}", POLICY_REQ_ALLOW, "prs");
	/* a mutation hidden behind an allowed name, as a second operation, behind an alias, in a fragment */
	Q("{\"query\":\"mutation OpenPR { createPullRequest(input: {}) { x } mergePullRequest(input: {}) { x } }\"}",
	  POLICY_REQ_DENY, "default");
	Q("{\"query\":\"query Q { viewer { login } } mutation OpenPR { mergePullRequest(input: {}) { x } }\","
	  "\"operationName\":\"Q\"}", POLICY_REQ_DENY, "default");
	Q("{\"query\":\"mutation OpenPR { createPullRequest: mergePullRequest(input: {}) { x } }\"}", POLICY_REQ_DENY,
	  "default");
	Q("{\"query\":\"mutation OpenPR { ...F } fragment F on Mutation { mergePullRequest(input: {}) { x } }\"}",
	  POLICY_REQ_DENY, "default");
	Q("{\"query\":\"mutation OpenPR { viewer: deleteRepository(input: {}) { x } }\"}", POLICY_REQ_DENY, "no-deletes");
	Q("[{\"query\":\"{ viewer { login } }\"},{\"query\":\"mutation { deleteIssue(input: {}) { x } }\"}]",
	  POLICY_REQ_DENY, "no-deletes");
	Q("[{\"query\":\"{ viewer { login } }\"},{\"query\":\"{ rateLimit { cost } }\"}]", POLICY_REQ_ALLOW, "reads");
	/* operationName must name an operation of the document */
	Q("{\"query\":\"{ viewer { login } }\",\"operationName\":\"Other\"}", POLICY_REQ_DENY, "no-deletes");
	Q("{\"query\":\"{ viewer { login } }\",\"operationName\":null}", POLICY_REQ_ALLOW, "reads");
	/* unreadable: the deny rule matches */
	Q("{\"query\":\"{ viewer \"}", POLICY_REQ_DENY, "no-deletes");
	Q("{\"query\":5}", POLICY_REQ_DENY, "no-deletes");
	Q("{\"persisted\":\"abc\"}", POLICY_REQ_DENY, "no-deletes");
	Q("{\"query\":\"{ a }\",\"query\":\"mutation { deleteRepository { x } }\"}", POLICY_REQ_DENY, "no-deletes");
	Q("[]", POLICY_REQ_DENY, "no-deletes");
#undef Q
	policy_unref(p);
}

#define Z40 "0000000000000000000000000000000000000000"
#define A40 "1111111111111111111111111111111111111111"
#define B40 "2222222222222222222222222222222222222222"

/* Builds a pkt-line for <payload> (of <n> bytes) into <out>; returns its length. */
static size_t
pkt(char *out, const char *payload, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = n + 4;

	out[0] = hex[(len >> 12) & 15];
	out[1] = hex[(len >> 8) & 15];
	out[2] = hex[(len >> 4) & 15];
	out[3] = hex[len & 15];
	memcpy(out + 4, payload, n);
	return n + 4;
}

static size_t
push(char *buf, const char *const *cmds, size_t ncmds, const char *tail)
{
	size_t o = 0, i;
	char line[256];

	for (i = 0; i < ncmds; i++) {
		int n = snprintf(line, sizeof(line), "%s%s\n", cmds[i], "");

		if (i == 0) {
			/* capabilities after a NUL on the first command */
			line[n - 1] = '\0';
			memcpy(line + n, " report-status side-band-64k\n", 29);
			n += 29;
		}
		o += pkt(buf + o, line, (size_t)n);
	}
	memcpy(buf + o, "0000", 4);
	o += 4;
	memcpy(buf + o, tail, strlen(tail));
	return o + strlen(tail);
}

static void
test_git_section(void **state)
{
	const char *c1[] = {A40 " " B40 " refs/heads/agent/x"};
	const char *c2[] = {Z40 " " B40 " refs/heads/agent/new", A40 " " Z40 " refs/heads/old"};
	char buf[1024];
	size_t n, ncmds;
	struct policy_git_cmd cmds[4];
	const char *err;

	(void)state;
	n = push(buf, c1, 1, "PACK....");
	assert_int_equal(policy_git_section_len(buf, n), (long)(n - 8));
	/* need more at every cut before the flush */
	{
		size_t cut;

		for (cut = 0; cut < n - 8; cut++)
			assert_int_equal(policy_git_section_len(buf, cut), -2);
	}
	n = push(buf, c2, 2, "");
	assert_int_equal(policy_git_parse(buf, n, cmds, &ncmds, &err), (long)n);
	assert_int_equal(ncmds, 2);
	assert_int_equal(cmds[0].kind, POLICY_GIT_CREATE);
	assert_int_equal(cmds[1].kind, POLICY_GIT_DELETE);
	assert_int_equal(cmds[1].ref_len, strlen("refs/heads/old"));
	/* the probe */
	assert_int_equal(policy_git_section_len("0000", 4), 4);
	assert_int_equal(policy_git_section_len("0000PACK", 8), 4);
	/* shallow lines first */
	n = pkt(buf, "shallow " A40, 48);
	n += push(buf + n, c1, 1, "");
	assert_int_equal(policy_git_section_len(buf, n), (long)n);
	/* malformed */
	assert_int_equal(policy_git_section_len("zzzz", 4), -1);
	assert_int_equal(policy_git_section_len("0001", 4), -1);
	assert_int_equal(policy_git_section_len("0004", 4), -1);
	assert_int_equal(policy_git_section_len("fff1", 4), -1);
	{
		static const char *const bad[] = {
			A40 " " B40,                                       /* no ref */
			A40 " " B40 " heads/x",                            /* not under refs/ */
			A40 " " B40 " refs/heads/a..b",
			A40 " " B40 " refs/heads/a b",
			A40 " " B40 " refs/heads/x.lock",
			A40 " " B40 " refs/heads/x/",
			A40 " " B40 " refs/heads/@{x}",
			A40 " " B40 " refs/heads/a\\b",
			Z40 " " Z40 " refs/heads/x",                       /* both zero */
			"111111111111111111111111111111111111111 " B40 " refs/heads/x",
			"111111111111111111111111111111111111111G " B40 " refs/heads/x",
			"push-cert",
		};
		size_t i;

		for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			n = pkt(buf, bad[i], strlen(bad[i]));
			memcpy(buf + n, "0000", 4);
			if (policy_git_section_len(buf, n + 4) != -1)
				fail_msg("accepted: %s", bad[i]);
		}
	}
	/* a second command with a NUL */
	n = push(buf, c1, 1, "");
	n -= 4;
	n += pkt(buf + n, A40 " " B40 " refs/heads/y\0x", 40 + 1 + 40 + 14 + 2);
	memcpy(buf + n, "0000", 4);
	assert_int_equal(policy_git_section_len(buf, n + 4), -1);
}

static const char git_yaml[] =
	"ca: /x\n"
	"hosts:\n"
	"  github.com:\n"
	"    rules:\n"
	"      - id: no-main\n"
	"        deny: { path: \"/*/*/git-receive-pack\", git: { refs: [refs/heads/main] } }\n"
	"      - id: agent-branches\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: \"/*/*/git-receive-pack\"\n"
	"          git: { refs: [\"refs/heads/agent/**\"], deny: [delete] }\n";

static void
test_git_rules(void **state)
{
	struct policy *p = st_load(git_yaml);
	struct st_req r = {.method = "POST", .path = "/o/r/git-receive-pack",
	                   .ctype = "application/x-git-receive-pack-request"};
	const char *ok[] = {A40 " " B40 " refs/heads/agent/x", Z40 " " B40 " refs/heads/agent/a/b"};
	const char *del[] = {A40 " " Z40 " refs/heads/agent/x"};
	const char *main_[] = {A40 " " B40 " refs/heads/agent/x", A40 " " B40 " refs/heads/main"};
	const char *other[] = {A40 " " B40 " refs/heads/feature"};
	const char *tag[] = {Z40 " " B40 " refs/tags/agent/v1"};
	struct policy_header hs[4];
	struct policy_request q;
	struct policy_conn_decision cd;
	char buf[2048];
	unsigned flags;

	(void)state;
#define PUSH(cmds_, n_, verdict_, rule_)                                      \
	do {                                                                  \
		r.body_len = push(buf, (cmds_), (n_), "PACK\x00\x00\x00\x02");  \
		r.body = buf;                                                 \
		ST_EXPECT(p, "github.com", &r, (verdict_), (rule_));          \
	} while (0)
	PUSH(ok, 2, POLICY_REQ_ALLOW, "agent-branches");
	PUSH(del, 1, POLICY_REQ_DENY, "default");
	PUSH(main_, 2, POLICY_REQ_DENY, "no-main");
	PUSH(other, 1, POLICY_REQ_DENY, "default");
	PUSH(tag, 1, POLICY_REQ_DENY, "default");
	/* only the section is held: the pack after it is not needed */
	r.partial = 1;
	PUSH(ok, 2, POLICY_REQ_ALLOW, "agent-branches");
	r.body_len = push(buf, ok, 2, "") - 2;
	ST_EXPECT(p, "github.com", &r, POLICY_REQ_DENY, "no-main");
	r.partial = 0;
	/* the probe passes on to the real push */
	r.body = "0000";
	r.body_len = 4;
	ST_EXPECT(p, "github.com", &r, POLICY_REQ_ALLOW, "agent-branches");
	/* malformed, wrong content type: refused */
	r.body = "00zzgarbage";
	r.body_len = 0;
	ST_EXPECT(p, "github.com", &r, POLICY_REQ_DENY, "no-main");
	r.body_len = push(buf, ok, 2, "");
	r.body = buf;
	r.ctype = "application/octet-stream";
	ST_EXPECT(p, "github.com", &r, POLICY_REQ_DENY, "no-main");
	/* what to hold: only the command section, up to max_body */
	r.ctype = "application/x-git-receive-pack-request";
	policy_decide_conn(p, "github.com", 443, &cd);
	st_request(&r, &q, hs);
	assert_int_equal(policy_body_need(p, cd.host, &q, &flags), POLICY_MAX_BODY_DEFAULT);
	assert_int_equal(flags, POLICY_NEED_GIT_SECTION);
	q.path = "/o/r/info/refs";
	q.path_len = strlen(q.path);
	assert_int_equal(policy_body_need(p, cd.host, &q, &flags), 0);
	assert_int_equal(flags, 0);
#undef PUSH
	policy_unref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gql_parser),
		cmocka_unit_test(test_gql_rules),
		cmocka_unit_test(test_git_section),
		cmocka_unit_test(test_git_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
