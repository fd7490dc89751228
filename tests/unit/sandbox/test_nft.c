/*
 * tests/unit/sandbox/test_nft.c - the nftables table of a sandbox (nft.c).
 *
 * Golden files: the whole script for two fixed plans, byte for byte.  Every
 * rendered script also passes `nft -c -f -` when run as root (skipped
 * otherwise).  Injection attempts through every field that reaches the script
 * are refused, and so are too small buffers, without a partial script.
 *
 * Also a helper for tests/integration/test_nft_rules.sh, which has no other
 * way to get the real rules: when the first argument is one of these, main()
 * does that instead of running the tests (exit status 0 on success):
 *   --print ID INDEX TPORT DPORT    prints nft_render's script for that plan
 *   --print-delete ID               prints nft_render_delete's script
 *   --apply ID INDEX TPORT DPORT    renders and applies it with nft_apply
 *   --remove ID                     applies the delete script with nft_apply
 *   --stale                         nft_list_tables + nft_stale_tables: one name a line
 *   --rejected TABLE                nft_rejected_read: prints "PACKETS BYTES"
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/sluice.h"
#include "sandbox-glue/nft.h"
#include "sandbox-glue/sandbox.h"

#ifndef SLUICE_GOLDEN_DIR
#error SLUICE_GOLDEN_DIR must be defined by the build
#endif

static void
plan(struct sandbox_net *n, const char *id, unsigned index)
{
	assert_int_equal(sandbox_net_plan(n, id, index, 15001, 15353), 0);
}

static char *
read_golden(const char *name)
{
	char path[512];
	FILE *f;
	char *buf;
	size_t got;

	snprintf(path, sizeof(path), "%s/%s", SLUICE_GOLDEN_DIR, name);
	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open golden file %s", path);
	buf = xcalloc(1, NFT_SCRIPT_MAX + 1);
	got = fread(buf, 1, NFT_SCRIPT_MAX, f);
	fclose(f);
	buf[got] = '\0';
	return buf;
}

static void
check_with_nft(const char *script, int expect)
{
	char err[NFT_ERR_MAX];
	int r;

	if (geteuid() != 0)
		return;
	r = nft_check(script, err, sizeof(err));
	if (r != expect)
		fail_msg("nft -c: expected %d, got %d (%s)\n%s", expect, r, err, script);
}

static void
golden(const char *id, unsigned index, const char *file)
{
	struct sandbox_net n;
	char buf[NFT_SCRIPT_MAX];
	char *want;
	int len;

	plan(&n, id, index);
	len = nft_render(&n, buf, sizeof(buf));
	assert_true(len > 0);
	assert_int_equal((size_t)len, strlen(buf));
	want = read_golden(file);
	if (strcmp(buf, want) != 0)
		fail_msg("%s differs from the rendered script:\n%s", file, buf);
	free(want);
	check_with_nft(buf, 0);
}

static void
test_golden_index1(void **state)
{
	(void)state;
	golden("0a1b2c3d", 1, "nft_index1.nft");
}

static void
test_golden_index16383(void **state)
{
	(void)state;
	golden("9f8e7d6c", SANDBOX_MAX_INDEX, "nft_index16383.nft");
}

/* the properties that matter, independently of the golden text */
static void
test_rules(void **state)
{
	struct sandbox_net n;
	char buf[NFT_SCRIPT_MAX];
	const char *udp53, *tcp53, *tcp, *nd, *rej;

	(void)state;
	plan(&n, "0a1b2c3d", 1);
	assert_true(nft_render(&n, buf, sizeof(buf)) > 0);
	assert_ptr_equal(strstr(buf, "add table inet sluice_0a1b2c3d\ndelete table inet sluice_0a1b2c3d\n"
	                             "table inet sluice_0a1b2c3d {\n"),
	                 strstr(buf, "add table"));
	udp53 = strstr(buf, "iifname \"slh0a1b2c3d\" udp dport 53 redirect to :15353\n");
	tcp53 = strstr(buf, "iifname \"slh0a1b2c3d\" tcp dport 53 redirect to :53\n");
	tcp = strstr(buf, "iifname \"slh0a1b2c3d\" meta l4proto tcp redirect to :15001\n");
	assert_non_null(udp53);
	assert_non_null(tcp53);
	assert_non_null(tcp);
	assert_true(tcp53 < tcp);
	nd = strstr(buf, "icmpv6 type { nd-neighbor-solicit, nd-neighbor-advert, nd-router-solicit } ip6 hoplimit 255 "
	                 "accept\n");
	rej = strstr(buf, "meta l4proto tcp counter name \"rejected\" reject with tcp reset\n"
	                  "\t\tcounter name \"rejected\" reject with icmpx type admin-prohibited\n\t}\n");
	assert_non_null(nd);
	assert_non_null(rej);
	assert_true(nd < rej);
	assert_non_null(strstr(buf, "ip saddr 10.200.0.6 tcp dport 15001 accept\n"));
	assert_non_null(strstr(buf, "ip6 saddr fd00:5c::6 udp dport 15353 accept\n"));
	assert_non_null(strstr(buf, "\t\tiifname \"slh0a1b2c3d\" drop\n\t\toifname \"slh0a1b2c3d\" drop\n"));
	assert_non_null(strstr(buf, "\tcounter rejected {\n\t}\n"));
	/* the only table named is the sandbox's */
	assert_null(strstr(buf, "flush"));
	assert_int_equal((int)(strstr(buf, "table inet ") - buf), (int)(strstr(buf, "add table inet ") + 4 - buf));
}

static void
expect_refused(const struct sandbox_net *n, const char *what)
{
	char buf[NFT_SCRIPT_MAX];
	int r;

	memset(buf, 'x', sizeof(buf));
	r = nft_render(n, buf, sizeof(buf));
	if (r != SLUICE_EINVAL)
		fail_msg("%s: expected SLUICE_EINVAL, got %d:\n%s", what, r, r > 0 ? buf : "");
	assert_string_equal(buf, "");
}

#define SET(field, val) memcpy(n.field, val, sizeof(val))

static void
test_injection(void **state)
{
	static const char *const bad_names[] = {
		"sluice_0a1b2c3d; flush ruleset", "sluice x", "sluice\nflush ruleset", "sluice\"", "x}", "Sluice",
		"sluice-x", "", "sluice_0a1b2c\t", "a{", "a#b", "a\\b", "\xc3\xa9", "slh;x", "slh x", "slh\"x", "slh\nx",
	};
	static const char *const bad_v4[] = {
		"10.200.0.6 tcp", "10.200.0.6\n", "10.200.0.256", "010.200.0.6", "10.200.0.6/30", "", "fd00:5c::6", "10.200.6",
	};
	static const char *const bad_v6[] = {
		"fd00:5c::6 }", "fd00:5c::6\n", "fd00:5c::6/126", "", "10.200.0.6", "fd00:5c:::6", "fd00:5c::6%eth0",
	};
	struct sandbox_net n, good;
	size_t k;
	char buf[NFT_SCRIPT_MAX];

	(void)state;
	plan(&good, "0a1b2c3d", 1);
	for (k = 0; k < sizeof(bad_names) / sizeof(bad_names[0]); k++) {
		n = good;
		memset(n.table, 0, sizeof(n.table));
		memcpy(n.table, bad_names[k], strlen(bad_names[k]));
		expect_refused(&n, bad_names[k]);
		assert_int_equal(nft_render_delete(&n, buf, sizeof(buf)), SLUICE_EINVAL);
		assert_string_equal(buf, "");
		if (strlen(bad_names[k]) >= sizeof(n.host_if))
			continue;
		n = good;
		memset(n.host_if, 0, sizeof(n.host_if));
		memcpy(n.host_if, bad_names[k], strlen(bad_names[k]));
		expect_refused(&n, bad_names[k]);
	}
	for (k = 0; k < sizeof(bad_v4) / sizeof(bad_v4[0]); k++) {
		n = good;
		memset(n.sbx_v4, 0, sizeof(n.sbx_v4));
		memcpy(n.sbx_v4, bad_v4[k], strlen(bad_v4[k]));
		expect_refused(&n, bad_v4[k]);
		n = good;
		memset(n.host_v4, 0, sizeof(n.host_v4));
		memcpy(n.host_v4, bad_v4[k], strlen(bad_v4[k]));
		expect_refused(&n, bad_v4[k]);
	}
	for (k = 0; k < sizeof(bad_v6) / sizeof(bad_v6[0]); k++) {
		n = good;
		memset(n.sbx_v6, 0, sizeof(n.sbx_v6));
		memcpy(n.sbx_v6, bad_v6[k], strlen(bad_v6[k]));
		expect_refused(&n, bad_v6[k]);
		n = good;
		memset(n.host_v6, 0, sizeof(n.host_v6));
		memcpy(n.host_v6, bad_v6[k], strlen(bad_v6[k]));
		expect_refused(&n, bad_v6[k]);
	}
	/* names filling their whole array, without a NUL */
	n = good;
	memset(n.table, 'a', sizeof(n.table));
	expect_refused(&n, "table without NUL");
	assert_int_equal(nft_render_delete(&n, buf, sizeof(buf)), SLUICE_EINVAL);
	n = good;
	memset(n.host_if, 'a', sizeof(n.host_if));
	expect_refused(&n, "host_if without NUL");
	n = good;
	memset(n.sbx_v4, '1', sizeof(n.sbx_v4));
	expect_refused(&n, "sbx_v4 without NUL");
	n = good;
	memset(n.sbx_v6, '1', sizeof(n.sbx_v6));
	expect_refused(&n, "sbx_v6 without NUL");
	/* ports */
	n = good;
	n.transparent_port = 0;
	expect_refused(&n, "transparent port 0");
	n = good;
	n.dns_port = 0;
	expect_refused(&n, "dns port 0");
	n = good;
	n.transparent_port = 53;
	expect_refused(&n, "transparent port 53 (would accept DNS over TCP)");

	/* a non-canonical but valid address is printed canonically */
	n = good;
	SET(sbx_v6, "FD00:005C:0:0::6");
	assert_true(nft_render(&n, buf, sizeof(buf)) > 0);
	assert_non_null(strstr(buf, "ip6 saddr fd00:5c::6 tcp dport 15001 accept\n"));
	assert_null(strstr(buf, "FD00"));
	/* the longest valid names fit */
	n = good;
	memset(n.table, 0, sizeof(n.table));
	memset(n.table, 'z', sizeof(n.table) - 1);
	memset(n.host_if, 0, sizeof(n.host_if));
	memset(n.host_if, '9', sizeof(n.host_if) - 1);
	assert_true(nft_render(&n, buf, sizeof(buf)) > 0);
	check_with_nft(buf, 0);
}

static void
test_too_small(void **state)
{
	struct sandbox_net n;
	char buf[NFT_SCRIPT_MAX], *small;
	int len, dlen;
	size_t cap;

	(void)state;
	plan(&n, "9f8e7d6c", SANDBOX_MAX_INDEX);
	len = nft_render(&n, buf, sizeof(buf));
	assert_true(len > 0 && len < NFT_SCRIPT_MAX);
	assert_int_equal(nft_render(&n, NULL, 0), SLUICE_ETOOBIG);
	for (cap = 1; cap <= (size_t)len; cap++) {
		small = xmalloc(cap);
		memset(small, 'x', cap);
		assert_int_equal(nft_render(&n, small, cap), SLUICE_ETOOBIG);
		assert_int_equal(small[0], '\0');
		free(small);
	}
	small = xmalloc((size_t)len + 1);
	assert_int_equal(nft_render(&n, small, (size_t)len + 1), len);
	assert_string_equal(small, buf);
	free(small);

	dlen = nft_render_delete(&n, buf, sizeof(buf));
	assert_int_equal(dlen, (int)strlen("add table inet sluice_9f8e7d6c\ndelete table inet sluice_9f8e7d6c\n"));
	assert_string_equal(buf, "add table inet sluice_9f8e7d6c\ndelete table inet sluice_9f8e7d6c\n");
	check_with_nft(buf, 0);
	for (cap = 1; cap <= (size_t)dlen; cap++) {
		memset(buf, 'x', sizeof(buf));
		assert_int_equal(nft_render_delete(&n, buf, cap), SLUICE_ETOOBIG);
		assert_int_equal(buf[0], '\0');
	}
	assert_int_equal(nft_render_delete(&n, NULL, 0), SLUICE_ETOOBIG);
}

static void
test_stale(void **state)
{
	char names[4][NFT_TABLE_NAME_MAX];
	size_t n = 99;

	(void)state;
	assert_int_equal(nft_stale_tables("table inet sluice_0a1b2c3d\n"
	                                  "table ip sluice_11111111\n"        /* other family */
	                                  "table inet sluice_0A1B2C3D\n"      /* upper case */
	                                  "table inet sluice_0a1b2c3\n"       /* 7 hex */
	                                  "table inet sluice_0a1b2c3d0\n"     /* 9 hex */
	                                  "table inet sluice_0a1b2c3g\n"      /* not hex */
	                                  "table inet xsluice_0a1b2c3d\n"     /* prefix */
	                                  "table inet sluice_22222222 extra\n" /* trailing word */
	                                  "table inet sluice_33333333 \r\n"   /* trailing blanks */
	                                  "table  inet\tsluice_44444444\n"    /* blank runs */
	                                  "tables inet sluice_55555555\n"
	                                  "table inet\n"
	                                  "table\n"
	                                  "\n"
	                                  "inet sluice_66666666\n"
	                                  "table inet filter\n"
	                                  "table inet sluice_77777777",       /* no final newline */
	                                  names, 4, &n),
	                 0);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], "sluice_0a1b2c3d");
	assert_string_equal(names[1], "sluice_33333333");
	assert_string_equal(names[2], "sluice_44444444");
	assert_string_equal(names[3], "sluice_77777777");

	n = 99;
	assert_int_equal(nft_stale_tables("", names, 4, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(nft_stale_tables("table inet sluice_0a1b2c3d\ntable inet sluice_0a1b2c3e\n"
	                                  "table inet sluice_0a1b2c3f\n",
	                                  names, 2, &n),
	                 SLUICE_ETOOBIG);
	assert_int_equal(n, 2);
	assert_string_equal(names[1], "sluice_0a1b2c3e");
	assert_int_equal(nft_stale_tables("table inet sluice_0a1b2c3d\n", names, 0, &n), SLUICE_ETOOBIG);
	assert_int_equal(n, 0);
}

static void
test_counter(void **state)
{
	uint64_t p = 1, b = 1;

	(void)state;
	assert_int_equal(nft_counter_parse("table inet sluice_0a1b2c3d {\n\tcounter rejected {\n"
	                                   "\t\tpackets 7 bytes 420\n\t}\n}\n",
	                                   &p, &b),
	                 0);
	assert_true(p == 7 && b == 420);
	assert_int_equal(nft_counter_parse("packets 18446744073709551615 bytes 0", &p, &b), 0);
	assert_true(p == UINT64_MAX && b == 0);
	p = b = 5;
	assert_int_equal(nft_counter_parse("packets 18446744073709551616 bytes 0\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("packets -1 bytes 0\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("packets 1 bytes\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("packets 1 bytes 2 x\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("packets 0x1 bytes 2\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("counter rejected {\n}\n", &p, &b), SLUICE_EPARSE);
	assert_int_equal(nft_counter_parse("", &p, &b), SLUICE_EPARSE);
	assert_true(p == 5 && b == 5);
}

/* nft itself refuses a broken script and says why on its first stderr line; as root only */
static void
test_nft_errors(void **state)
{
	char err[NFT_ERR_MAX], tiny[8];
	uint64_t p, b;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(nft_check("table inet sluice_test { chain c { bogus } }\n", err, sizeof(err)), SLUICE_EIO);
	assert_true(strlen(err) > 0);
	assert_null(strchr(err, '\n'));
	assert_non_null(strstr(err, "rror"));
	assert_int_equal(nft_check("table inet sluice_test { chain c { bogus } }\n", tiny, sizeof(tiny)), SLUICE_EIO);
	assert_int_equal(strlen(tiny), sizeof(tiny) - 1);
	assert_int_equal(nft_check("", err, sizeof(err)), 0);
	assert_int_equal(nft_check("", NULL, 0), 0);
	/* a table that does not exist (the id is random enough to be absent) */
	assert_int_equal(nft_rejected_read("sluice_zz0unit0", &p, &b, err, sizeof(err)), SLUICE_EIO);
	assert_true(strlen(err) > 0);
	assert_int_equal(nft_rejected_read("bad name", &p, &b, err, sizeof(err)), SLUICE_EINVAL);
}

/* ------------------------------------------------------------------ helper mode for the integration test */

static int
num(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && s[0] != '-' && *v <= max;
}

static int
helper(int argc, char **argv)
{
	struct sandbox_net n;
	char buf[NFT_SCRIPT_MAX], err[NFT_ERR_MAX];
	static char list[NFT_LIST_MAX];
	char names[256][NFT_TABLE_NAME_MAX];
	unsigned long index = 1, tp = 1, dp = 1;
	const char *mode = argv[1];
	size_t count, k;
	uint64_t p, b;
	int r;

	if ((strcmp(mode, "--print") == 0 || strcmp(mode, "--apply") == 0) && argc == 6) {
		if (!num(argv[3], SANDBOX_MAX_INDEX, &index) || !num(argv[4], 65535, &tp) || !num(argv[5], 65535, &dp))
			goto usage;
	} else if ((strcmp(mode, "--print-delete") == 0 || strcmp(mode, "--remove") == 0) && argc == 3) {
	} else if (strcmp(mode, "--stale") == 0 && argc == 2) {
		r = nft_list_tables(list, sizeof(list), err, sizeof(err));
		if (r != 0 || (r = nft_stale_tables(list, names, 256, &count)) != 0) {
			fprintf(stderr, "test_nft --stale: %s (%s)\n", sluice_strerror(r), err);
			return 1;
		}
		for (k = 0; k < count; k++)
			printf("%s\n", names[k]);
		return 0;
	} else if (strcmp(mode, "--rejected") == 0 && argc == 3) {
		r = nft_rejected_read(argv[2], &p, &b, err, sizeof(err));
		if (r != 0) {
			fprintf(stderr, "test_nft --rejected: %s (%s)\n", sluice_strerror(r), err);
			return 1;
		}
		printf("%llu %llu\n", (unsigned long long)p, (unsigned long long)b);
		return 0;
	} else {
		goto usage;
	}
	if (sandbox_net_plan(&n, argv[2], (unsigned)index, (uint16_t)tp, (uint16_t)dp) != 0)
		goto usage;
	if (strcmp(mode, "--print") == 0 || strcmp(mode, "--apply") == 0)
		r = nft_render(&n, buf, sizeof(buf));
	else
		r = nft_render_delete(&n, buf, sizeof(buf));
	if (r < 0) {
		fprintf(stderr, "test_nft %s: %s\n", mode, sluice_strerror(r));
		return 1;
	}
	if (strncmp(mode, "--print", 7) == 0) {
		fputs(buf, stdout);
		return 0;
	}
	r = nft_apply(buf, err, sizeof(err));
	if (r != 0) {
		fprintf(stderr, "test_nft %s: %s (%s)\n", mode, sluice_strerror(r), err);
		return 1;
	}
	return 0;
usage:
	fprintf(stderr, "usage: test_nft [--print|--apply ID INDEX TPORT DPORT | --print-delete|--remove ID | --stale |"
	                " --rejected TABLE]\n");
	return 2;
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_golden_index1),
		cmocka_unit_test(test_golden_index16383),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_injection),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_stale),
		cmocka_unit_test(test_counter),
		cmocka_unit_test(test_nft_errors),
	};

	if (argc > 1)
		return helper(argc, argv);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
