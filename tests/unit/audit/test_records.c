/*
 * tests/unit/audit/test_records.c - the pieces under query, tail and summary:
 * the time parser, terminal escaping, filters and the request join, key files,
 * checkpoint lines, the line reader, the table and the summary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "common/jcs.h"
#include "common/sluice.h"
#include "audit/audit.h"

int test_records_run(void);

static void
test_time(void **state)
{
	int64_t t, now = 1796098027123LL;

	(void)state;
	assert_int_equal(audit_time_parse("2026-12-01T04:07:07.123Z", 0, &t), 0);
	assert_int_equal(t, 1796098027123LL);
	assert_int_equal(audit_time_parse("2026-12-01t04:07:07.1234567z", 0, &t), 0);
	assert_int_equal(t, 1796098027123LL);
	assert_int_equal(audit_time_parse("2026-12-01", 0, &t), 0);
	assert_int_equal(t, 1796083200000LL);
	assert_int_equal(audit_time_parse("2024-02-29T23:59:59+02:00", 0, &t), 0);
	assert_int_equal(t, 1709243999000LL);
	assert_int_equal(audit_time_parse("1969-12-31T23:00:00Z", 0, &t), 0);
	assert_int_equal(t, -3600000LL);
	assert_int_equal(audit_time_parse("2026-12-01T04:07:60Z", 0, &t), 0);  /* leap second */
	assert_int_equal(audit_time_parse("10m", now, &t), 0);
	assert_int_equal(t, now - 600000);
	assert_int_equal(audit_time_parse("2h", now, &t), 0);
	assert_int_equal(t, now - 7200000);
	assert_int_equal(audit_time_parse("1d", now, &t), 0);
	assert_int_equal(t, now - 86400000);
	assert_int_equal(audit_time_parse("3w", now, &t), 0);
	assert_int_equal(t, now - 3 * 7 * 86400000LL);
	assert_int_equal(audit_time_parse("45s", now, &t), 0);
	assert_int_equal(t, now - 45000);
	static const char *const bad[] = {"", "m", "10", "10x", "-5m", "1.5h", "99999999999m", "2026-13-01",
	                                  "2026-02-29", "2026-12-01T25:00:00Z", "2026-12-01T04:07:07",
	                                  "2026-12-01T04:07:07.Z", "2026-12-01T04:07:07+2:00", "2026-12-01T04:07:07Zx",
	                                  "2026/12/01", "yesterday"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(audit_time_parse(bad[i], now, &t), SLUICE_EINVAL);
}

static const char *
esc(const char *s, size_t n, size_t width)
{
	static char out[256];

	out[0] = '\0';
	audit_term_escape(out, sizeof(out), s, n, width);
	return out;
}

static void
test_escape(void **state)
{
	char small[8];

	(void)state;
	assert_string_equal(esc("api.example.test", 16, 100), "api.example.test");
	assert_string_equal(esc("\x1b[31mred", 8, 100), "\\x1b[31mred");
	assert_string_equal(esc("/a\r\n{\"type\":\"request\"", 21, 100), "/a\\x0d\\x0a{\"type\":\"request\"");
	assert_string_equal(esc("a\\x1b", 5, 100), "a\\\\x1b");
	assert_string_equal(esc("\x7f\x01", 2, 100), "\\x7f\\x01");
	assert_string_equal(esc("a\0b", 3, 100), "a\\x00b");
	/* what the writer's \u00XX of raw bytes decodes to: U+0080..U+00FF, shown as the byte */
	assert_string_equal(esc("\xc2\x9b" "31m", 5, 100), "\\x9b31m");  /* C1 CSI */
	assert_string_equal(esc("caf\xc3\xa9", 5, 100), "caf\\xe9");
	assert_string_equal(esc("\xe2\x80\xae" "gpj", 6, 100), "\\u{202e}gpj");  /* right-to-left override */
	assert_string_equal(esc("\xff\xc3", 2, 100), "\\xff\\xc3");  /* invalid UTF-8 */
	assert_string_equal(esc("\xed\xa0\x80", 3, 100), "\\xed\\xa0\\x80");  /* a surrogate */
	assert_string_equal(esc("\xc0\xaf", 2, 100), "\\xc0\\xaf");  /* overlong */
	/* truncation: never inside an escape, ends in "..." */
	assert_string_equal(esc("abcdefghijklmnop", 16, 10), "abcdefg...");
	assert_string_equal(esc("abcdefghij", 10, 10), "abcdefghij");
	assert_string_equal(esc("\x1b\x1b\x1b", 3, 9), "\\x1b...");
	assert_int_equal(audit_term_escape(small, 0, "x", 1, 5), 0);
	small[0] = '\0';
	audit_term_escape(small, sizeof(small), "abcdefghijkl", 12, 100);
	assert_string_equal(small, "abcdefg");
	/* appends */
	memcpy(small, "ab", 3);
	audit_term_escape(small, sizeof(small), "cd", 2, 100);
	assert_string_equal(small, "abcd");
}

static void
parse(struct audit_record *r, const char *line)
{
	assert_int_equal(audit_record_parse(r, line, strlen(line)), 0);
}

#define REQ_ALLOW                                                                                              \
	"{\"seq\":1,\"time\":\"2026-12-01T04:07:07.123Z\",\"type\":\"request\",\"sandbox\":\"agent-1\",\"id\":\"5-1\"," \
	"\"host\":\"api.github.com\",\"method\":\"GET\",\"path\":\"/user\",\"verdict\":\"allow\","                   \
	"\"secrets\":[{\"name\":\"github\",\"place\":\"header:authorization\"}],\"prev\":\"x\"}"
#define RESP                                                                                                   \
	"{\"seq\":2,\"time\":\"2026-12-01T04:07:08.000Z\",\"type\":\"response\",\"sandbox\":\"agent-1\",\"id\":\"5-1\"," \
	"\"status\":200,\"bytes_up\":0,\"bytes_down\":12,\"duration_ms\":40,\"scrubbed\":[\"github\"],\"prev\":\"x\"}"
#define REQ_DENY                                                                                               \
	"{\"seq\":3,\"time\":\"2026-12-01T05:00:00.000Z\",\"type\":\"request\",\"sandbox\":\"agent-2\",\"id\":\"6-1\"," \
	"\"host\":\"evil.test\",\"method\":\"POST\",\"path\":\"/x\",\"verdict\":\"deny\",\"rule\":\"default\","     \
	"\"reason\":\"host not in policy\",\"status\":403,\"prev\":\"x\"}"
#define DENIAL                                                                                                 \
	"{\"seq\":4,\"time\":\"2026-12-01T05:00:01.000Z\",\"type\":\"denial\",\"sandbox\":\"agent-2\","                \
	"\"sni\":\"Evil.test\",\"rule\":\"tls\",\"reason\":\"bad tls\",\"prev\":\"x\"}"
#define EXFIL                                                                                                  \
	"{\"seq\":5,\"time\":\"2026-12-01T05:00:02.000Z\",\"type\":\"exfiltration_attempt\",\"sandbox\":\"agent-2\"," \
	"\"id\":\"6-2\",\"secret\":\"slack\",\"place\":\"body\",\"host\":\"a.slack.com\",\"rule\":\"secrets\",\"prev\":\"x\"}"

static void
test_filters(void **state)
{
	struct audit_record a, r, d, n, x;
	struct audit_filter f;
	struct audit_join *j = audit_join_create();
	const struct audit_record *req;

	(void)state;
	parse(&a, REQ_ALLOW);
	parse(&r, RESP);
	parse(&d, REQ_DENY);
	parse(&n, DENIAL);
	parse(&x, EXFIL);
	assert_int_equal(a.seq, 1);
	assert_int_equal(a.time_ms, 1796098027123LL);
	assert_int_equal(r.status, 200);
	audit_join_add(j, &a);
	audit_join_add(j, &d);
	req = audit_join_find(j, &r);
	assert_non_null(req);
	assert_string_equal(req->host, "api.github.com");
	assert_null(audit_join_find(j, &a));  /* a request is its own */

	audit_filter_init(&f);
	assert_true(audit_filter_match(&f, &a, NULL));
	/* --host on a response works through its request; the case of a host does not matter */
	f.host = "API.github.com";
	assert_true(audit_filter_match(&f, &a, NULL));
	assert_true(audit_filter_match(&f, &r, req));
	assert_false(audit_filter_match(&f, &r, NULL));
	assert_false(audit_filter_match(&f, &d, NULL));
	f.host = "*.github.com";
	assert_true(audit_filter_match(&f, &a, NULL));
	f.host = "*.api.github.com";
	assert_false(audit_filter_match(&f, &a, NULL));
	f.host = "evil.test";  /* a denial has only sni */
	assert_true(audit_filter_match(&f, &n, NULL));
	/* --status with --host */
	audit_filter_init(&f);
	f.host = "api.github.com";
	assert_int_equal(audit_filter_status(&f, "200"), 0);
	assert_true(audit_filter_match(&f, &r, req));
	assert_false(audit_filter_match(&f, &a, NULL));  /* the request has no status */
	assert_int_equal(audit_filter_status(&f, "2xx"), 0);
	assert_true(audit_filter_match(&f, &r, req));
	assert_int_equal(audit_filter_status(&f, "4xx"), 0);
	assert_false(audit_filter_match(&f, &r, req));
	assert_int_equal(audit_filter_status(&f, "600"), SLUICE_EINVAL);
	assert_int_equal(audit_filter_status(&f, "40"), SLUICE_EINVAL);
	assert_int_equal(audit_filter_status(&f, "4x0"), SLUICE_EINVAL);
	/* --verdict: a denial and an exfiltration attempt are denials; a response inherits allow */
	audit_filter_init(&f);
	f.verdict = "deny";
	assert_false(audit_filter_match(&f, &a, NULL));
	assert_true(audit_filter_match(&f, &d, NULL));
	assert_true(audit_filter_match(&f, &n, NULL));
	assert_true(audit_filter_match(&f, &x, NULL));
	assert_false(audit_filter_match(&f, &r, req));
	f.verdict = "allow";
	assert_true(audit_filter_match(&f, &r, req));
	assert_false(audit_filter_match(&f, &n, NULL));
	/* --secret: secrets[].name, secret, scrubbed */
	audit_filter_init(&f);
	f.secret = "github";
	assert_true(audit_filter_match(&f, &a, NULL));
	assert_true(audit_filter_match(&f, &r, req));
	assert_false(audit_filter_match(&f, &d, NULL));
	f.secret = "slack";
	assert_true(audit_filter_match(&f, &x, NULL));
	assert_false(audit_filter_match(&f, &a, NULL));
	f.secret = "git";
	assert_false(audit_filter_match(&f, &a, NULL));
	/* --sandbox, --type (a list) */
	audit_filter_init(&f);
	f.sandbox = "agent-1";
	assert_true(audit_filter_match(&f, &r, req));
	assert_false(audit_filter_match(&f, &d, NULL));
	f.sandbox = "agent";
	assert_false(audit_filter_match(&f, &a, NULL));
	audit_filter_init(&f);
	f.type = "denial,exfiltration_attempt";
	assert_false(audit_filter_match(&f, &a, NULL));
	assert_true(audit_filter_match(&f, &n, NULL));
	assert_true(audit_filter_match(&f, &x, NULL));
	f.type = "denia";
	assert_false(audit_filter_match(&f, &n, NULL));
	/* --since / --until, inclusive */
	audit_filter_init(&f);
	f.since_ms = 1796098027123LL;
	assert_true(audit_filter_match(&f, &a, NULL));
	f.since_ms++;
	assert_false(audit_filter_match(&f, &a, NULL));
	assert_true(audit_filter_match(&f, &d, NULL));
	f.until_ms = 1796101200000LL;  /* 05:00:00.000 */
	assert_true(audit_filter_match(&f, &d, NULL));
	assert_false(audit_filter_match(&f, &n, NULL));
	audit_record_dispose(&a);
	audit_record_dispose(&r);
	audit_record_dispose(&d);
	audit_record_dispose(&n);
	audit_record_dispose(&x);
	audit_join_destroy(j);
}

static void
test_record_parse(void **state)
{
	struct audit_record r;

	(void)state;
	assert_int_equal(audit_record_parse(&r, "[1]", 3), SLUICE_EPARSE);
	assert_int_equal(audit_record_parse(&r, "{\"a\":1", 6), SLUICE_EPARSE);
	/* two members of one name: refused, not shown one way and filtered another */
	assert_int_equal(audit_record_parse(&r, "{\"host\":\"a\",\"host\":\"b\"}", 25), SLUICE_EPARSE);
	/* a NUL in a value never equals a shorter name */
	{
		struct audit_filter f;
		const char *l = "{\"seq\":1,\"sandbox\":\"agent-1\\u0000x\"}";

		parse(&r, l);
		audit_filter_init(&f);
		f.sandbox = "agent-1";
		assert_false(audit_filter_match(&f, &r, NULL));
		audit_record_dispose(&r);
	}
	parse(&r, "{\"seq\":0,\"status\":\"200\",\"time\":\"yesterday\"}");
	assert_int_equal(r.seq, -1);
	assert_int_equal(r.status, -1);
	assert_true(r.time_ms == INT64_MIN);
	audit_record_dispose(&r);
}

static char *
capture(void (*fn)(FILE *, void *), void *arg)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);

	fn(m, arg);
	fclose(m);
	return buf;
}

struct rows {
	const char *const *lines;
	size_t n;
};

static void
table(FILE *out, void *arg)
{
	struct rows *rs = arg;
	struct audit_join *j = audit_join_create();
	struct audit_record r;
	size_t i;

	audit_table_header(out);
	for (i = 0; i < rs->n; i++) {
		parse(&r, rs->lines[i]);
		audit_join_add(j, &r);
		audit_table_row(out, &r, audit_join_find(j, &r));
		audit_record_dispose(&r);
	}
	audit_join_destroy(j);
}

static void
test_table(void **state)
{
	static const char *const lines[] = {
		REQ_ALLOW, RESP, REQ_DENY,
		"{\"seq\":6,\"time\":\"2026-12-01T05:00:03.000Z\",\"type\":\"request\",\"sandbox\":\"agent-2\",\"id\":\"7-1\","
		"\"host\":\"x\\u001b[31m.test\",\"method\":\"GET\",\"path\":\"/a\\r\\n{\\\"type\\\":\\\"request\\\"}"
		"\\u00c2\\u009b2J\",\"verdict\":\"allow\",\"prev\":\"x\"}",
	};
	struct rows rs = {lines, 4};
	char *out;

	(void)state;
	out = capture(table, &rs);
	assert_string_equal(out,
		"TIME                           SEQ  TYPE                  SANDBOX           VERDICT  STATUS  METHOD   HOST                              PATH/DETAIL\n"
		"2026-12-01T04:07:07.123Z         1  request               agent-1           allow         -  GET      api.github.com                    /user secrets=github@header:authorization\n"
		"2026-12-01T04:07:08.000Z         2  response              agent-1           allow       200  GET      api.github.com                    /user up=0 down=12 ms=40 scrubbed=github\n"
		"2026-12-01T05:00:00.000Z         3  request               agent-2           deny        403  POST     evil.test                         /x reason=host not in policy\n"
		"2026-12-01T05:00:03.000Z         6  request               agent-2           allow         -  GET      x\\x1b[31m.test                    /a\\x0d\\x0a{\"type\":\"request\"}\\xc2\\x9b2J\n");
	assert_null(memchr(out, 0x1b, strlen(out)));
	assert_null(strchr(out, '\r'));
	free(out);
}

static void
summary(FILE *out, void *arg)
{
	struct rows *rs = arg;
	struct audit_summary *s = audit_summary_create();
	struct audit_record r;
	size_t i;

	for (i = 0; i < rs->n; i++) {
		parse(&r, rs->lines[i]);
		audit_summary_add(s, &r);
		audit_record_dispose(&r);
	}
	audit_summary_print(s, out);
	audit_summary_destroy(s);
}

static void
test_summary(void **state)
{
	static const char *const lines[] = {REQ_ALLOW, RESP, REQ_DENY, DENIAL, EXFIL, REQ_ALLOW,
		"{\"type\":\"request\",\"sandbox\":\"agent-1\",\"host\":\"pypi.org\",\"verdict\":\"allow\"}",
		"{\"type\":\"request\",\"sandbox\":\"\\u001b]0;x\",\"host\":\"a\",\"verdict\":\"allow\"}"};
	struct rows rs = {lines, 8};
	char *out;

	(void)state;
	out = capture(summary, &rs);
	assert_string_equal(out,
		"SANDBOX   REQUESTS  DENIALS  EXFILTRATION  SECRETS     HOSTS\n"
		"\\x1b]0;x         1        0             0  -           a (1)\n"
		"agent-1          3        0             0  github (2)  api.github.com (2), pypi.org (1)\n"
		"agent-2          1        2             1  -           -\n");
	free(out);
}

/* Requests on an MCP endpoint (docs/audit-schema.md, the mcp fields): one message, and a batch. */
#define MCP_CALL \
	"{\"seq\":10,\"time\":\"2026-12-01T06:00:00.000Z\",\"type\":\"request\",\"sandbox\":\"agent-1\",\"id\":\"9-1\"," \
	"\"host\":\"mcp.test\",\"method\":\"POST\",\"path\":\"/mcp\",\"verdict\":\"allow\",\"rule\":\"issues\"," \
	"\"mcp_method\":\"tools/call\",\"tool\":\"create_issue\",\"rpc_id\":3,\"args_hmac\":\"" \
	"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\",\"args\":{\"$.repo\":\"widgets\"},\"prev\":\"x\"}"
#define MCP_RESP \
	"{\"seq\":11,\"time\":\"2026-12-01T06:00:01.000Z\",\"type\":\"response\",\"sandbox\":\"agent-1\",\"id\":\"9-1\"," \
	"\"status\":200,\"prev\":\"x\"}"
#define MCP_BATCH \
	"{\"seq\":12,\"time\":\"2026-12-01T06:00:02.000Z\",\"type\":\"request\",\"sandbox\":\"agent-2\",\"id\":\"9-2\"," \
	"\"host\":\"mcp.test\",\"method\":\"POST\",\"path\":\"/mcp\",\"verdict\":\"deny\",\"rule\":\"default\"," \
	"\"status\":200,\"mcp_batch\":[{\"mcp_method\":\"tools/call\",\"tool\":\"create_issue\",\"rpc_id\":\"a\"," \
	"\"verdict\":\"allow\",\"rule\":\"issues\"},{\"mcp_method\":\"tools/call\",\"tool\":\"delete_repository\"," \
	"\"rpc_id\":\"b\",\"verdict\":\"deny\",\"rule\":\"default\"}],\"prev\":\"x\"}"
#define MCP_LIST \
	"{\"seq\":13,\"time\":\"2026-12-01T06:00:03.000Z\",\"type\":\"request\",\"sandbox\":\"agent-2\",\"id\":\"9-3\"," \
	"\"host\":\"mcp.test\",\"method\":\"POST\",\"path\":\"/mcp\",\"verdict\":\"allow\",\"rule\":\"lifecycle\"," \
	"\"mcp_method\":\"tools/list\",\"rpc_id\":4,\"prev\":\"x\"}"
#define MCP_LIST_RESP \
	"{\"seq\":14,\"time\":\"2026-12-01T06:00:04.000Z\",\"type\":\"response\",\"sandbox\":\"agent-2\",\"id\":\"9-3\"," \
	"\"status\":200,\"mcp_method\":\"tools/list\",\"removed\":3,\"prev\":\"x\"}"
#define MCP_HOLD \
	"{\"seq\":15,\"time\":\"2026-12-01T06:00:05.000Z\",\"type\":\"request\",\"sandbox\":\"agent-1\",\"id\":\"9-4\"," \
	"\"host\":\"mcp.test\",\"method\":\"POST\",\"path\":\"/mcp\",\"verdict\":\"allow\",\"rule\":\"ask\"," \
	"\"mcp_method\":\"tools/call\",\"tool\":\"merge_pull_request\",\"rpc_id\":5,\"hold\":{\"id\":\"0011223344556677\"," \
	"\"outcome\":\"approved\",\"by\":\"uid:0(root)\"},\"prev\":\"x\"}"

/* --tool: the request that names it, its response by the join, a batch that names it among others. */
static void
test_mcp_filter(void **state)
{
	static const char *const lines[] = {REQ_ALLOW, MCP_CALL, MCP_RESP, MCP_BATCH, MCP_LIST, MCP_LIST_RESP, MCP_HOLD};
	static const struct {
		const char *tool;
		int match[7];
	} t[] = {
		{"create_issue", {0, 1, 1, 1, 0, 0, 0}},
		{"delete_repository", {0, 0, 0, 1, 0, 0, 0}},
		{"merge_pull_request", {0, 0, 0, 0, 0, 0, 1}},
		{"create", {0, 0, 0, 0, 0, 0, 0}},
		{"Create_issue", {0, 0, 0, 0, 0, 0, 0}},
	};
	struct audit_record r[7];
	struct audit_filter f;
	struct audit_join *j = audit_join_create();
	size_t i, k;

	(void)state;
	for (i = 0; i < 7; i++) {
		parse(&r[i], lines[i]);
		audit_join_add(j, &r[i]);
	}
	for (k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		audit_filter_init(&f);
		f.tool = t[k].tool;
		for (i = 0; i < 7; i++)
			assert_int_equal(audit_filter_match(&f, &r[i], audit_join_find(j, &r[i])), t[k].match[i]);
	}
	/* with other filters: a denied batch that names the tool */
	audit_filter_init(&f);
	f.tool = "create_issue";
	f.verdict = "deny";
	assert_int_equal(audit_filter_match(&f, &r[3], NULL), 1);
	assert_int_equal(audit_filter_match(&f, &r[1], NULL), 0);
	/* a malformed batch names nothing and breaks nothing */
	{
		struct audit_record b;

		parse(&b, "{\"type\":\"request\",\"mcp_batch\":[1,\"x\",{\"tool\":7}],\"tool\":[\"create_issue\"]}");
		assert_int_equal(audit_filter_match(&f, &b, NULL), 0);
		audit_record_dispose(&b);
	}
	for (i = 0; i < 7; i++)
		audit_record_dispose(&r[i]);
	audit_join_destroy(j);
}

static void
test_mcp_table_summary(void **state)
{
	static const char *const lines[] = {REQ_ALLOW, MCP_CALL, MCP_RESP, MCP_BATCH, MCP_LIST, MCP_LIST_RESP, MCP_HOLD,
		"{\"type\":\"request\",\"sandbox\":\"agent-3\",\"verdict\":\"deny\",\"tool\":\"x\\u001b[2Jy\"}"};
	struct rows rs = {lines, 7};
	char *out;

	(void)state;
	out = capture(table, &rs);
	assert_non_null(strstr(out, "/mcp mcp=tools/call tool=create_issue rpc_id=3\n"));
	assert_non_null(strstr(out, "/mcp batch=2\n"));
	assert_non_null(strstr(out, "/mcp removed=3\n"));
	/* no argument value is shown, not even the ones recorded in clear: --format json has them */
	assert_null(strstr(out, "widgets"));
	free(out);
	rs.n = 8;
	out = capture(summary, &rs);
	assert_string_equal(out,
		"SANDBOX  REQUESTS  DENIALS  EXFILTRATION  SECRETS     HOSTS\n"
		"agent-1         3        0             0  github (1)  mcp.test (2), api.github.com (1)\n"
		"agent-2         2        1             0  -           mcp.test (1)\n"
		"agent-3         1        1             0  -           -\n"
		"\n"
		"TOOL                   CALLS  DENIALS   HELD  SANDBOXES\n"
		"create_issue               2        0      0  agent-1 (1), agent-2 (1)\n"
		"delete_repository          1        1      0  agent-2 (1)\n"
		"merge_pull_request         1        0      1  agent-1 (1)\n"
		"x\\x1b[2Jy                  1        1      0  agent-3 (1)\n");
	assert_null(memchr(out, 0x1b, strlen(out)));
	free(out);
}

/* The fingerprint of arguments: HMAC(HMAC(K, label), JCS(arguments)), computed here with OpenSSL alone. */
static void
test_args_hmac(void **state)
{
	uint8_t key[AUDIT_KEY_BYTES], sub[32], mac[32];
	unsigned int len = 0;
	char hex[AUDIT_HASH_HEX + 1], want[AUDIT_HASH_HEX + 1], other[AUDIT_HASH_HEX + 1];
	const char *canon = "{\"labels\":[\"bug\",\"\xe2\x82\xac\"],\"owner\":\"acme\",\"repo\":\"widgets\",\"n\":1}";
	json_t *a, *b, *c, *deep;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	/* the canonical bytes: names sorted by UTF-16 units ("n" < "o" < "r"; "labels" first), 1.0 is 1 */
	canon = "{\"labels\":[\"bug\",\"\xe2\x82\xac\"],\"n\":1,\"owner\":\"acme\",\"repo\":\"widgets\"}";
	assert_non_null(HMAC(EVP_sha256(), key, sizeof(key), (const uint8_t *)AUDIT_ARGS_LABEL,
	                     strlen(AUDIT_ARGS_LABEL), sub, &len));
	assert_non_null(HMAC(EVP_sha256(), sub, sizeof(sub), (const uint8_t *)canon, strlen(canon), mac, &len));
	for (i = 0; i < 32; i++)
		snprintf(want + 2 * i, 3, "%02x", mac[i]);
	a = json_loads("{\"repo\": \"widgets\", \"owner\": \"acme\", \"n\": 1.0, \"labels\": [\"bug\", \"\\u20ac\"]}", 0, NULL);
	b = json_loads("{\"n\":1,\"labels\":[\"bug\",\"\xe2\x82\xac\"],\"owner\":\"acme\",\"repo\":\"widgets\"}", 0, NULL);
	c = json_loads("{\"n\":1,\"labels\":[\"bug\",\"\xe2\x82\xac\"],\"owner\":\"acme\",\"repo\":\"gadgets\"}", 0, NULL);
	assert_int_equal(audit_args_hmac(key, a, hex), 0);
	assert_string_equal(hex, want);
	/* the same arguments written otherwise: the same fingerprint; another value: another */
	assert_int_equal(audit_args_hmac(key, b, other), 0);
	assert_string_equal(other, want);
	assert_int_equal(audit_args_hmac(key, c, other), 0);
	assert_string_not_equal(other, want);
	/* the next record's key: another fingerprint of the same arguments */
	audit_key_evolve(key);
	assert_int_equal(audit_args_hmac(key, a, other), 0);
	assert_string_not_equal(other, want);
	/* not the plain HMAC of the canonical bytes with the record's key (that is what a record's mac is) */
	assert_non_null(HMAC(EVP_sha256(), key, sizeof(key), (const uint8_t *)canon, strlen(canon), mac, &len));
	for (i = 0; i < 32; i++)
		snprintf(want + 2 * i, 3, "%02x", mac[i]);
	assert_string_not_equal(other, want);
	/* no arguments: as {} */
	assert_int_equal(audit_args_hmac(key, NULL, hex), 0);
	deep = json_object();
	assert_int_equal(audit_args_hmac(key, deep, other), 0);
	assert_string_equal(hex, other);
	json_decref(deep);
	/* too deep to canonicalise: an error, and no fingerprint */
	deep = json_array();
	for (i = 0; i < JCS_DEPTH_MAX + 1; i++) {
		json_t *outer = json_array();

		json_array_append_new(outer, deep);
		deep = outer;
	}
	assert_int_equal(audit_args_hmac(key, deep, hex), SLUICE_ETOOBIG);
	assert_string_equal(hex, "");
	json_decref(deep);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

static void
test_keys(void **state)
{
	static const uint8_t k2[32] = {0x87, 0x3d, 0x39, 0x77, 0x53, 0x25, 0x8c, 0xec, 0x3f, 0xc4, 0xdd,
	                               0x51, 0x40, 0x81, 0xbb, 0xfd, 0x2f, 0xc3, 0x2e, 0x0a, 0x4e, 0x57,
	                               0x3b, 0xc4, 0xbc, 0x27, 0x1f, 0x9e, 0x38, 0xdd, 0x2d, 0x5e};
	struct audit_key k;
	const char *err = NULL;
	const char *good = "sluice-audit-key v1 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n";
	char path[] = "/tmp/test-audit-key.XXXXXX";
	char buf[200];
	int i, fd;

	(void)state;
	assert_int_equal(audit_key_parse(good, strlen(good), &k, &err), 0);
	assert_int_equal(k.seq, 1);
	for (i = 0; i < 32; i++)
		assert_int_equal(k.key[i], i + 1);
	audit_key_evolve(k.key);
	assert_memory_equal(k.key, k2, 32);
	assert_int_equal(audit_key_parse(good, strlen(good) - 1, &k, &err), 0);  /* no final newline */
	{
		const char *upper = "sluice-audit-key v1 42 0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20";

		assert_int_equal(audit_key_parse(upper, strlen(upper), &k, &err), 0);
	}
	assert_int_equal(k.seq, 42);
	static const char *const bad[] = {
		"",
		"sluice-audit-key v2 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
		"sluice-audit-key v1 0 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
		"sluice-audit-key v1 x 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
		"sluice-audit-key v1 1  0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
		"sluice-audit-key v1 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2\n",
		"sluice-audit-key v1 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2g\n",
		"sluice-audit-key v1 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n\n",
		"sluice-audit-key v1 1 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2000\n",
		"sluice-audit-key v1 99999999999999999999 0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20\n",
	};
	for (size_t b = 0; b < sizeof(bad) / sizeof(bad[0]); b++) {
		struct audit_key before;

		memset(&k, 0xee, sizeof(k));
		before = k;
		err = NULL;
		assert_int_equal(audit_key_parse(bad[b], strlen(bad[b]), &k, &err), SLUICE_EPARSE);
		assert_non_null(err);
		assert_memory_equal(&k, &before, sizeof(k));  /* untouched on failure */
	}
	/* format (the writer's key file, keygen's) gives back the parsed text */
	assert_int_equal(audit_key_parse(good, strlen(good), &k, &err), 0);
	assert_int_equal(audit_key_format(&k, buf, sizeof(buf)), (int)strlen(good));
	assert_string_equal(buf, good);
	assert_int_equal(audit_key_format(&k, buf, 20), -1);
	assert_int_equal(buf[0], 0);  /* wiped */
	/* keygen: 0600, seq 1, refuses to overwrite; load reads it back */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(audit_key_generate(path, &err), SLUICE_EEXIST);
	unlink(path);
	assert_int_equal(audit_key_generate(path, &err), 0);
	assert_int_equal(audit_key_load(path, &k, &err), 0);
	assert_int_equal(k.seq, 1);
	{
		FILE *f = fopen(path, "r");
		struct stat st;

		assert_non_null(f);
		assert_non_null(fgets(buf, sizeof(buf), f));
		fclose(f);
		assert_int_equal(strlen(buf), 87);
		assert_memory_equal(buf, "sluice-audit-key v1 1 ", 22);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_mode & 0777, 0600);
	}
	assert_int_equal(audit_key_generate(path, &err), SLUICE_EEXIST);
	unlink(path);
	assert_int_equal(audit_key_load(path, &k, &err), SLUICE_ENOENT);
}

static void
test_checkpoint_lines(void **state)
{
	struct audit_checkpoints cp;
	const char *h = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char text[2048];

	(void)state;
	memset(&cp, 0, sizeof(cp));
	snprintf(text, sizeof(text),
	         "Dec  1 04:07:10 gw sluice[12]: sluice-audit checkpoint file=/var/log/a seq=30 hash=%s\n"
	         "no checkpoint here\n"
	         "head_seq=5 hash=%s\n"                        /* not " seq=" */
	         "seq=7 hash=%.63s\n"                          /* 63 digits */
	         "seq=8 hash=%sf\n"                            /* 65 digits */
	         "seq=0 hash=%s\n"
	         "file=/x seq=oops seq=10 hash=0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\n"
	         "seq=2 hash=%s",                              /* no final newline */
	         h, h, h, h, h, h);
	assert_int_equal(audit_checkpoints_parse(&cp, text, strlen(text), 1), 3);
	audit_checkpoints_sort(&cp);
	assert_int_equal(cp.n, 3);
	assert_int_equal(cp.v[0].seq, 2);
	assert_int_equal(cp.v[0].lineno, 8);
	assert_int_equal(cp.v[1].seq, 10);
	assert_string_equal(cp.v[1].hash, h);  /* lower-cased */
	assert_int_equal(cp.v[2].seq, 30);
	assert_int_equal(cp.v[2].lineno, 1);
	audit_checkpoints_dispose(&cp);
}

static void
test_reader(void **state)
{
	int p[2];
	struct audit_reader r;
	const char *line;
	size_t len;

	(void)state;
	assert_int_equal(audit_line_split("ab\ncd", 5, 10), 3);
	assert_int_equal(audit_line_split("abcd", 4, 10), -2);
	assert_int_equal(audit_line_split("abcdefghijkl", 12, 10), -1);
	assert_int_equal(audit_line_split("abcdefghij\n", 11, 10), 11);
	assert_int_equal(audit_line_split("abcdefghijk\n", 12, 10), -1);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "one\n0123456789abcdef\ntwo\nthr", 28), 28);
	audit_reader_init(&r, p[0], 8);
	assert_int_equal(audit_reader_next(&r, &line, &len), 1);
	assert_int_equal(len, 3);
	assert_memory_equal(line, "one", 3);
	assert_int_equal(audit_reader_next(&r, &line, &len), SLUICE_ETOOBIG);
	assert_int_equal(r.lineno, 2);
	assert_int_equal(audit_reader_next(&r, &line, &len), 1);
	assert_memory_equal(line, "two", 3);
	assert_int_equal(r.lineno, 3);
	close(p[1]);
	assert_int_equal(audit_reader_next(&r, &line, &len), 0);
	assert_int_equal(audit_reader_pending(&r), 3);
	audit_reader_dispose(&r);
	close(p[0]);
}

int
test_records_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_time),    cmocka_unit_test(test_escape),  cmocka_unit_test(test_filters),
		cmocka_unit_test(test_record_parse), cmocka_unit_test(test_table), cmocka_unit_test(test_summary),
		cmocka_unit_test(test_keys),    cmocka_unit_test(test_checkpoint_lines), cmocka_unit_test(test_reader),
		cmocka_unit_test(test_mcp_filter), cmocka_unit_test(test_mcp_table_summary), cmocka_unit_test(test_args_hmac),
	};

	return cmocka_run_group_tests_name("audit/records", tests, NULL, NULL);
}
