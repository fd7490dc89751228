/*
 * tests/unit/policy/test_mcp_scan.c - the list-result scanner
 * (policy/mcp_scan.c) against the jansson path, differentially
 * (mcp_scan_diff.h): on generated responses (escaped keys and names, keys
 * folding to the ones the filter reads, duplicate keys, nested "tools",
 * numbers jansson writes otherwise, non-object entries, batches, errors),
 * on their truncations and byte flips, and on named cases: the scanner
 * removes the same entries or leaves the text to jansson, never reads a
 * text jansson refuses, and takes the common shapes itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "policy/mcp.h"
#include "policy/policy.h"
#include "tests/unit/policy/mcp_scan_diff.h"
#include "tests/unit/policy/semtest.h"

static const char yaml[] =
	"ca: /x\n"
	"default: deny\n"
	"hosts:\n"
	"  mcp.example.test:\n"
	"    mcp: { endpoint: /mcp }\n"
	"    rules:\n"
	"      - { id: no-drop, deny: { method: POST, path: /mcp, mcp: { tool: \"drop_*\" } } }\n"
	"      - { id: keep, allow: { method: POST, path: /mcp, mcp: { tool: [\"keep_*\", \"file:///ok/*\", p_one] } } }\n";

static struct policy *pol;
static const struct policy_host *host;
static struct policy_mcp_scan sc;

static int
setup(void **state)
{
	struct policy_conn_decision cd;

	(void)state;
	pol = st_load(yaml);
	policy_decide_conn(pol, "mcp.example.test", 443, &cd);
	host = cd.host;
	policy_mcp_scan_init(&sc);
	return host != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	policy_mcp_scan_dispose(&sc);
	policy_unref(pol);
	return 0;
}

/* ---- a generator of responses ---- */

struct gen {
	char *b;
	size_t n, cap;
	uint32_t seed;
};

static unsigned
rnd(struct gen *g, unsigned m)
{
	g->seed = g->seed * 1103515245u + 12345u;
	return (g->seed >> 8) % m;
}

static void
put(struct gen *g, const char *s)
{
	size_t k = strlen(s);

	if (g->n + k + 1 > g->cap) {
		g->cap = (g->n + k + 1) * 2;
		g->b = realloc(g->b, g->cap);
		assert_non_null(g->b);
	}
	memcpy(g->b + g->n, s, k + 1);
	g->n += k;
}

static void
sp(struct gen *g)
{
	static const char *const w[] = {"", "", "", " ", "\n", "\t ", "\r\n"};

	put(g, w[rnd(g, 7)]);
}

static const char *const names[] = {
	"keep_a", "drop_b", "keep\\u005fc", "dro\\u0070_d", "other", "p_one", "keep_\\u00e9", "keep_\xc3\xa9",
	"file:///ok/x", "file:///no/y", "file:\\/\\/\\/ok\\/z", "keep_a\\n", "", "keep_a", "drop_b", "\\ud83d\\ude00",
};
static const char *const numbers[] = {
	"0", "-0", "7", "-12", "123456789012345678", "1234567890123456789", "99999999999999999999", "1.5", "1.50",
	"0.0001", "-2.25", "1.0", "1e3", "1E-2", "3.14159265358979323846", "1.000000000000001",
};
static const char *const strings[] = {
	"\"x\"", "\"\"", "\"a\\\"b\"", "\"\\u00e9t\\u00e9\"", "\"\xe2\x82\xac\"", "\"tab\\tnl\\n\"", "\"\\/\"",
	"\"\\ud83d\\ude00\"", "\"\\u0000\"", "\"tools\"", "\"name\"", "\"\\\\\"",
};

static void gen_value(struct gen *g, int depth);

static void
gen_key(struct gen *g, const char *k)
{
	put(g, "\"");
	put(g, k);
	put(g, "\"");
	sp(g);
	put(g, ":");
	sp(g);
}

static void
gen_object(struct gen *g, int depth)
{
	static const char *const keys[] = {"a", "tools", "name", "uri", "type", "b\\u0063", "properties", "Name"};
	unsigned i, k = rnd(g, 4);

	put(g, "{");
	for (i = 0; i < k; i++) {
		if (i > 0)
			put(g, ",");
		sp(g);
		/* the same key twice now and then: the reader refuses the text */
		gen_key(g, rnd(g, 40) == 0 ? keys[0] : i == 0 ? keys[0] : keys[1 + rnd(g, 7)]);
		gen_value(g, depth + 1);
		sp(g);
	}
	put(g, "}");
}

static void
gen_value(struct gen *g, int depth)
{
	unsigned k = rnd(g, depth > 3 ? 4 : 7);

	switch (k) {
	case 0:
		put(g, numbers[rnd(g, sizeof(numbers) / sizeof(numbers[0]))]);
		break;
	case 1:
		put(g, strings[rnd(g, sizeof(strings) / sizeof(strings[0]))]);
		break;
	case 2:
		put(g, rnd(g, 2) ? "true" : rnd(g, 2) ? "false" : "null");
		break;
	case 3:
		put(g, "\"s\"");
		break;
	case 4:
	case 5:
		gen_object(g, depth);
		break;
	default: {
		unsigned i, n = rnd(g, 4);

		put(g, "[");
		for (i = 0; i < n; i++) {
			if (i > 0)
				put(g, ",");
			sp(g);
			gen_value(g, depth + 1);
		}
		put(g, "]");
	}
	}
}

/* An entry of a list keyed by <field>. */
static void
gen_entry(struct gen *g, const char *field)
{
	unsigned shape = rnd(g, 20);

	if (shape == 0) {
		put(g, rnd(g, 2) ? "\"junk\"" : rnd(g, 2) ? "5" : "[]");
		return;
	}
	put(g, "{");
	sp(g);
	if (shape == 1) {
		gen_key(g, "description");
		put(g, "\"no name\"");
	} else {
		/* the field, plain or with escapes ("na\u006de"), a string or not */
		if (rnd(g, 4) == 0)
			gen_key(g, strcmp(field, "uri") == 0 ? "ur\\u0069" : "na\\u006de");
		else
			gen_key(g, field);
		if (shape == 2) {
			put(g, "7");
		} else {
			put(g, "\"");
			put(g, names[rnd(g, sizeof(names) / sizeof(names[0]))]);
			put(g, "\"");
		}
	}
	if (rnd(g, 3) == 0) {
		put(g, ",");
		sp(g);
		gen_key(g, "inputSchema");
		gen_object(g, 2);
	}
	if (rnd(g, 12) == 0) {
		/* a key folding to the field (the entry is removed), or the field again (the text is refused) */
		put(g, ",");
		gen_key(g, rnd(g, 2) ? (strcmp(field, "uri") == 0 ? "URI" : "NAME") : field);
		put(g, "\"keep_a\"");
	}
	if (rnd(g, 3) == 0) {
		put(g, ",");
		gen_key(g, "description");
		gen_value(g, 3);
	}
	sp(g);
	put(g, "}");
}

static void
gen_list(struct gen *g, const char *key, const char *field)
{
	unsigned i, n = rnd(g, 6);

	gen_key(g, key);
	if (rnd(g, 15) == 0) {
		put(g, "{}");  /* not an array */
		return;
	}
	put(g, "[");
	for (i = 0; i < n; i++) {
		if (i > 0)
			put(g, ",");
		sp(g);
		gen_entry(g, field);
		sp(g);
	}
	put(g, "]");
}

static void
gen_result(struct gen *g)
{
	unsigned i, k = 1 + rnd(g, 3);

	put(g, "{");
	for (i = 0; i < k; i++) {
		unsigned m = rnd(g, 10);

		if (i > 0)
			put(g, ",");
		sp(g);
		if (i == 0 || m < 3)
			gen_list(g, i == 0 ? (rnd(g, 4) == 0 ? "resources" : rnd(g, 3) == 0 ? "prompts" : "tools")
			                   : m == 0 ? "prompts" : m == 1 ? "resources" : "Tools",
			         i == 0 ? "name" : "name");
		else if (m < 6)
			gen_key(g, "nextCursor"), put(g, "\"c\"");
		else
			gen_key(g, "meta"), gen_object(g, 2);  /* a "tools" key may be in it: not the list */
	}
	put(g, "}");
}

static void
gen_response(struct gen *g)
{
	unsigned order = rnd(g, 3), i, extra = rnd(g, 25);

	g->n = 0;
	put(g, "");
	sp(g);
	if (extra == 0)
		put(g, "[");
	put(g, "{");
	for (i = 0; i < 3; i++) {
		unsigned which = (i + order) % 3;

		if (i > 0)
			put(g, ",");
		sp(g);
		if (which == 0) {
			gen_key(g, extra == 1 ? "json\\u0072pc" : "jsonrpc");
			put(g, extra == 2 ? "\"1.0\"" : "\"2.0\"");
		} else if (which == 1) {
			static const char *const ids[] = {"1", "42", "-3", "\"abc\"", "\"a\\u0062\"", "0", "1.5", "null"};

			gen_key(g, "id");
			put(g, ids[rnd(g, 8)]);
		} else {
			gen_key(g, extra == 3 ? "error" : "result");
			gen_result(g);
		}
	}
	if (extra == 4)
		put(g, ",\"method\":\"x\"");
	sp(g);
	put(g, "}");
	if (extra == 0)
		put(g, "]");
	sp(g);
}

static enum policy_mcp_method
list_of(unsigned k)
{
	static const enum policy_mcp_method l[] = {POLICY_MCP_M_NONE, POLICY_MCP_M_NONE, POLICY_MCP_M_TOOLS_LIST,
	                                           POLICY_MCP_M_RESOURCES_LIST, POLICY_MCP_M_PROMPTS_LIST};

	return l[k % 5];
}

static int
check(enum policy_mcp_method list, const char *s, size_t n)
{
	const char *why;
	int r = diff_check(&sc, pol, host, list, s, n, &why);

	if (r < 0)
		fail_msg("%s (list %d): %.*s", why, (int)list, (int)n, s);
	return r;
}

/* Generated responses, and their truncations and byte flips. */
static void
test_generated(void **state)
{
	struct gen g = {.seed = 23};
	unsigned i, read = 0, total = 0, removed = 0;

	(void)state;
	for (i = 0; i < 20000; i++) {
		enum policy_mcp_method list = list_of(rnd(&g, 5));
		size_t n, k;
		char c;

		gen_response(&g);
		n = g.n;
		read += (unsigned)check(list, g.b, n);
		removed += sc.outlen > 0;
		total++;
		/* truncated, a byte changed, a byte inserted */
		k = rnd(&g, (unsigned)n + 1);
		check(list, g.b, k);
		if (n > 0) {
			k = rnd(&g, (unsigned)n);
			c = g.b[k];
			g.b[k] = "{}[]\",:\\ 0aeu\x80"[rnd(&g, 15)];
			check(list, g.b, n);
			g.b[k] = c;
		}
	}
	/* the scanner takes most of them itself (the rest: escapes and numbers it leaves to jansson, refusals) */
	print_message("scanned %u of %u generated responses, %u filtered\n", read, total, removed);
	assert_true(read * 5 > total);
	assert_true(removed * 20 > total);
	free(g.b);
}

/* The text <s> for <list>: the scanner reads it (1) or leaves it (0) as <want>, and agrees with jansson. */
static long
named(enum policy_mcp_method list, const char *s, int want)
{
	assert_int_equal(check(list, s, strlen(s)), want);
	if (want != 1)
		return -9;
	return policy_mcp_scan_filter(&sc, list);
}

static void
test_named(void **state)
{
	(void)state;
	/* an escaped key and escaped names are read as jansson reads them */
	assert_int_equal(named(POLICY_MCP_M_TOOLS_LIST,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"na\\u006de\":\"dro\\u0070_b\"},"
	                       "{\"name\":\"keep\\u005fa\"}]}}", 1), 1);
	assert_non_null(strstr(sc.out, "keep\\u005fa"));  /* kept bytes are copied as they came */
	assert_null(strstr(sc.out, "dro\\u0070_b"));
	/* "\u0074ools" is the list */
	assert_int_equal(named(POLICY_MCP_M_NONE,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"\\u0074ools\":[{\"name\":\"drop_b\"}]}}", 1), 1);
	assert_string_equal(sc.out, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"\\u0074ools\":[]}}");
	/* a duplicate name (or any duplicate key): the reader refuses it, the scanner leaves it */
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\",\"name\":\"drop_b\"}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\",\"na\\u006de\":\"drop_b\"}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\",\"x\":{\"a\":1,\"a\":2}}]}}", 0);
	/* a key folding to name: the entry goes */
	assert_int_equal(named(POLICY_MCP_M_TOOLS_LIST,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"keep_a\",\"NAME\":\"drop_b\"},"
	                       "{\"name\":\"keep_c\"}]}}", 1), 1);
	/* "Tools" beside "tools": refused there, so not the scanner's to answer */
	assert_int_equal(named(POLICY_MCP_M_NONE,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[],\"Tools\":[{\"name\":\"drop_b\"}]}}", 1),
	                 -2);
	/* a lone "Tools": the list to a case-folding client, refused there */
	assert_int_equal(named(POLICY_MCP_M_NONE,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"Tools\":[{\"name\":\"drop_b\"}]}}", 1), -2);
	/* nested "tools" in other members are not the list */
	assert_int_equal(named(POLICY_MCP_M_NONE,
	                       "{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"result\":{\"meta\":{\"tools\":[{\"name\":\"drop_x\"}]},"
	                       "\"tools\":[{\"name\":\"keep_a\",\"inputSchema\":{\"tools\":[{\"name\":\"drop_y\"}]}},"
	                       "{\"name\":\"drop_b\"}]}}", 1), 1);
	assert_non_null(strstr(sc.out, "drop_x"));
	assert_non_null(strstr(sc.out, "drop_y"));
	assert_null(strstr(sc.out, "drop_b"));
	/* a tools/list answer without tools: refused by the reader's path */
	assert_int_equal(named(POLICY_MCP_M_TOOLS_LIST, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}", 1),
	                 -2);
	assert_int_equal(named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}", 1), 0);
	/* numbers jansson writes otherwise (1.50 as 1.5, -0 as 0): the scanner keeps their bytes, the JSON is equal */
	assert_int_equal(named(POLICY_MCP_M_TOOLS_LIST,
	                       "{\"jsonrpc\":\"2.0\",\"id\":-0,\"result\":{\"tools\":[{\"name\":\"keep_a\",\"v\":[1.50,-0,1.0,"
	                       "123456789012345678]},{\"name\":\"drop_b\"}]}}", 1), 1);
	assert_non_null(strstr(sc.out, "[1.50,-0,1.0,123456789012345678]"));
	/* an exponent, 19 digits, a real a double rounds, \u0000, a surrogate pair, an error, a batch: jansson's */
	named(POLICY_MCP_M_TOOLS_LIST, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\",\"v\":1e3}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\",\"v\":1234567890123456789}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\",\"v\":0.10000000000000001}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\",\"d\":\"\\u0000\"}]}}", 0);
	named(POLICY_MCP_M_TOOLS_LIST,
	      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\",\"d\":\"\\ud83d\\ude00\"}]}}", 0);
	named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"x\"}}", 0);
	named(POLICY_MCP_M_NONE, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\"}]}}]", 0);
	/* not JSON, not UTF-8, a raw control byte, trailing bytes: never read */
	named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"drop_b\"}]}", 0);
	named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"\xc0\xaf\"}]}}", 0);
	named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{\"name\":\"a\x01\"}]}}", 0);
	named(POLICY_MCP_M_NONE, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}} x", 0);
	/* resources by uri, prompts by name */
	assert_int_equal(named(POLICY_MCP_M_RESOURCES_LIST,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"resources\":[{\"uri\":\"file:///ok/a\",\"name\":\"drop_b\"},"
	                       "{\"uri\":\"file:\\/\\/\\/no\\/b\"}]}}", 1), 1);
	assert_int_equal(named(POLICY_MCP_M_PROMPTS_LIST,
	                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"prompts\":[{\"name\":\"p_one\"},{\"name\":\"p_two\"}]}}", 1), 1);
}

/* 10,000 tools, half hidden: the scanner takes it, and 64 levels of nesting but not 65. */
static void
test_large(void **state)
{
	struct gen g = {.seed = 1};
	char e[64];
	unsigned i;

	(void)state;
	put(&g, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"tools\":[");
	for (i = 0; i < 10000; i++) {
		snprintf(e, sizeof(e), "%s{\"name\":\"%s_%u\",\"description\":\"a tool\"}", i ? "," : "", i % 2 ? "keep" : "drop", i);
		put(&g, e);
	}
	put(&g, "]}}");
	assert_int_equal(check(POLICY_MCP_M_TOOLS_LIST, g.b, g.n), 1);
	assert_int_equal(policy_mcp_scan_filter(&sc, POLICY_MCP_M_TOOLS_LIST), 5000);
	g.n = 0;
	put(&g, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"tools\":[{\"name\":\"drop_a\"}],\"x\":");
	for (i = 0; i < 62; i++)
		put(&g, "[");
	for (i = 0; i < 62; i++)
		put(&g, "]");
	put(&g, "}}");
	assert_int_equal(check(POLICY_MCP_M_TOOLS_LIST, g.b, g.n), 1);  /* 64 levels */
	g.n = 0;
	put(&g, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"tools\":[{\"name\":\"drop_a\"}],\"x\":");
	for (i = 0; i < 63; i++)
		put(&g, "[");
	for (i = 0; i < 63; i++)
		put(&g, "]");
	put(&g, "}}");
	assert_int_equal(check(POLICY_MCP_M_TOOLS_LIST, g.b, g.n), 0);  /* 65: the reader refuses it */
	free(g.b);
}

/* An object of more keys than the scanner compares one by one is jansson's; one of exactly that many is its own. */
static void
test_wide_object(void **state)
{
	struct gen g = {.seed = 1};
	char e[32];
	unsigned i, k;

	(void)state;
	for (k = POLICY_MCP_SCAN_OBJ_KEYS; k <= POLICY_MCP_SCAN_OBJ_KEYS + 1; k++) {
		g.n = 0;
		put(&g, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"tools\":[{\"name\":\"drop_a\",\"inputSchema\":{");
		for (i = 0; i < k; i++) {
			snprintf(e, sizeof(e), "%s\"k%u\":%u", i ? "," : "", i, i);
			put(&g, e);
		}
		put(&g, "}}]}}");
		assert_int_equal(check(POLICY_MCP_M_TOOLS_LIST, g.b, g.n), k == POLICY_MCP_SCAN_OBJ_KEYS ? 1 : 0);
	}
	free(g.b);
}

/* A fresh scanner's first text has an empty list: no entry array exists yet (clang's UBSan in fuzz_mcp_resp caught
 * NULL + 0 here; gcc's does not flag it, so under gcc this test passes on that code too). */
static void
test_empty_first(void **state)
{
	static const char t[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}";
	struct policy_mcp_scan fresh;

	(void)state;
	policy_mcp_scan_init(&fresh);
	assert_int_equal(policy_mcp_scan_read(&fresh, pol, host, t, sizeof(t) - 1), 1);
	assert_int_equal(policy_mcp_scan_filter(&fresh, POLICY_MCP_M_TOOLS_LIST), 0);
	policy_mcp_scan_dispose(&fresh);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_named),
		cmocka_unit_test(test_generated),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_empty_first),
		cmocka_unit_test(test_wide_object),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
