/*
 * tests/unit/common/test_netaddr.c - special address classes, CIDR lists,
 * formatting and listen addresses.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>
#include <cmocka.h>

#include "common/netaddr.h"
#include "common/sluice.h"

int test_netaddr_run(void);

/* Fills <ss> from a numeric v4 or v6 address and a port. */
static const struct sockaddr *
mk_sa(struct sockaddr_storage *ss, const char *addr, unsigned port)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else {
		if (inet_pton(AF_INET6, addr, &s6->sin6_addr) != 1)
			fail_msg("test bug: bad address %s", addr);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	return (const struct sockaddr *)ss;
}

struct special_case {
	const char *addr;
	const char *cls;  /* NULL: ordinary public; "*": any special class */
};

static const struct special_case special_cases[] = {
	/* IPv4 */
	{"127.0.0.1", "loopback"},
	{"127.255.255.254", "loopback"},
	{"10.1.2.3", "private"},
	{"172.16.0.1", "private"},
	{"172.31.255.255", "private"},
	{"172.15.255.255", NULL},
	{"172.32.0.1", NULL},
	{"192.168.1.1", "private"},
	{"192.169.0.1", NULL},
	{"169.254.169.254", "link-local"},
	{"169.253.0.1", NULL},
	{"100.64.0.1", "cgnat"},
	{"100.127.255.255", "cgnat"},
	{"100.63.255.255", NULL},
	{"100.128.0.1", NULL},
	{"0.0.0.0", "unspecified"},
	{"0.1.2.3", "unspecified"},
	{"224.0.0.1", "multicast"},
	{"239.255.255.255", "multicast"},
	{"223.255.255.255", NULL},
	{"240.0.0.1", "reserved"},
	{"255.255.255.255", "broadcast"},
	{"192.0.0.8", "reserved"},
	{"192.0.2.1", "documentation"},
	{"198.51.100.1", "documentation"},
	{"203.0.113.1", "documentation"},
	{"198.18.0.1", "benchmarking"},
	{"198.19.255.255", "benchmarking"},
	{"8.8.8.8", NULL},
	{"1.1.1.1", NULL},
	{"11.0.0.1", NULL},
	{"126.255.255.255", NULL},
	{"128.0.0.1", NULL},
	/* IPv6 */
	{"::1", "loopback"},
	{"::", "unspecified"},
	{"::ffff:127.0.0.1", "loopback"},
	{"::ffff:a9fe:a9fe", "link-local"},
	{"::ffff:10.0.0.1", "private"},
	{"::ffff:100.64.0.1", "cgnat"},
	{"::ffff:0.0.0.0", "unspecified"},
	{"::ffff:255.255.255.255", "broadcast"},
	{"::ffff:8.8.8.8", NULL},
	{"64:ff9b::a9fe:a9fe", "link-local"},
	{"64:ff9b::127.0.0.1", "loopback"},
	{"64:ff9b::10.0.0.1", "private"},
	{"64:ff9b::8.8.8.8", NULL},           /* the well-known /96: judged by the IPv4 inside */
	/* SIIT ::ffff:0:0:0/96 (RFC 7915 IPv4-translated) */
	{"::ffff:0:127.0.0.1", "loopback"},
	{"::ffff:0:a9fe:a9fe", "link-local"},
	{"::ffff:0:10.1.2.3", "private"},
	{"::ffff:0:8.8.8.8", NULL},
	/* the rest of 64:ff9b::/32 is refused unless listed: local-use /48 and other embeddings */
	{"64:ff9b:1::a9fe:a9fe", "nat64"},
	{"64:ff9b:1:a9fe:a9:fe00::", "nat64"},
	{"64:ff9b:1::808:808", "nat64"},
	{"64:ff9b:a9fe:a9fe::", "nat64"},
	{"64:ff9b:0:0:1::a9fe:a9fe", "nat64"},
	{"2002:7f00:1::", "loopback"},
	{"2002:a9fe:a9fe::1", "link-local"},
	{"2002:a00:1::", "private"},
	{"2002:c0a8:101::", "private"},
	{"fe80::1", "link-local"},
	{"febf:ffff::1", "link-local"},
	{"fec0::1", "site-local"},
	{"fc00::1", "unique-local"},
	{"fd00:5c::1", "unique-local"},
	{"fdff:ffff::1", "unique-local"},
	{"ff02::1", "multicast"},
	{"ff0e::1", "multicast"},
	{"2001:db8::1", "documentation"},
	{"2001::1", "*"},          /* Teredo */
	{"100::1", "reserved"},
	{"::127.0.0.1", "*"},      /* deprecated compatible form */
	{"::10.0.0.1", "*"},
	{"::8.8.8.8", "*"},
	{"::2", "*"},
	{"2606:4700::1", NULL},
	{"2a00:1450:4001::200e", NULL},
	{"2001:4860:4860::8888", NULL},
	{"fb00::1", NULL},
	{"fe00::1", NULL},
};

static void
test_special_table(void **state)
{
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(special_cases) / sizeof(special_cases[0]); i++) {
		const struct special_case *c = &special_cases[i];
		struct sockaddr_storage ss;
		const char *got = netaddr_special(mk_sa(&ss, c->addr, 443));
		int ok;

		if (c->cls == NULL)
			ok = got == NULL;
		else if (strcmp(c->cls, "*") == 0)
			ok = got != NULL;
		else
			ok = got != NULL && strcmp(got, c->cls) == 0;
		if (!ok) {
			print_error("netaddr_special(%s): %s, expected %s\n", c->addr, got ? got : "NULL",
			            c->cls ? c->cls : "NULL");
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

struct nat64_case {
	const char *addr;
	const char *cls;
};

/* upstream.nat64_prefixes: the IPv4 is read at the RFC 6052 position for the prefix's length */
static void
test_nat64_prefixes(void **state)
{
	static const char *const prefixes[] = {"64:ff9b:1::/48", "2001:db8:100::/40", "2001:db8:200::/56",
	                                       "2001:db8:300::/64", "2001:db8:400::/32", "2001:db8:122:344::/96"};
	static const struct nat64_case cases[] = {
		/* /48: bytes 6-7 and 9-10 (RFC 6052 2.4 example 192.0.2.33 = c000:221) */
		{"64:ff9b:1:a9fe:a9:fe00::", "link-local"},
		{"64:ff9b:1:7f00:1::", "loopback"},
		{"64:ff9b:1:808:8:800::", NULL},
		{"64:ff9b:1::a9fe:a9fe", "unspecified"},  /* 0.0.0.0 at the /48 position, not the /96 one */
		{"64:ff9b:1:a9fe:1a9:fe00::", "nat64"},   /* the u octet (bits 64-71) is not zero */
		/* /40: bytes 5-7 and 9 */
		{"2001:db8:1a9:fea9:fe::", "link-local"},
		{"2001:db8:108:808:8::", NULL},
		/* /56: byte 7 and 9-11 */
		{"2001:db8:200:a9:fe:a9fe::", "link-local"},
		/* /64: bytes 9-12 */
		{"2001:db8:300:0:a9:fea9:fe00:0", "link-local"},
		{"2001:db8:300:0:7f:1:0:0", "loopback"},
		/* /32: bytes 4-7 */
		{"2001:db8:a9fe:a9fe::", "link-local"},
		{"2001:db8:0a00:0001::", "private"},
		/* /96, inside the /40 above: the longest listed prefix counts */
		{"2001:db8:122:344::a9fe:a9fe", "link-local"},
		{"2001:db8:122:344::808:808", NULL},
		/* the well-known prefix and the rest of 64:ff9b::/32 as before */
		{"64:ff9b::a9fe:a9fe", "link-local"},
		{"64:ff9b:2::a9fe:a9fe", "nat64"},
	};
	struct netaddr_cidr list[6];
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < 6; i++)
		assert_int_equal(netaddr_cidr_parse(prefixes[i], &list[i]), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sockaddr_storage ss;
		const char *got = netaddr_special_nat64(mk_sa(&ss, cases[i].addr, 443), list, 6);

		if (cases[i].cls == NULL ? got != NULL : got == NULL || strcmp(got, cases[i].cls) != 0) {
			print_error("nat64 %s: %s, expected %s\n", cases[i].addr, got ? got : "NULL",
			            cases[i].cls ? cases[i].cls : "NULL");
			failed++;
		}
	}
	assert_int_equal(failed, 0);
	assert_true(netaddr_nat64_len_ok(48));
	assert_false(netaddr_nat64_len_ok(80));
}

static void
test_special_other_family(void **state)
{
	struct sockaddr_un un;

	(void)state;
	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	/* anything that is not a public IP is never "ordinary" */
	assert_non_null(netaddr_special((const struct sockaddr *)&un));
}

static void
test_cidr_parse(void **state)
{
	struct netaddr_cidr c;
	static const uint8_t ten[4] = {10, 0, 0, 0};
	static const uint8_t v6[16] = {0x20, 0x01, 0x0d, 0xb8};

	(void)state;
	assert_int_equal(netaddr_cidr_parse("10.0.0.0/8", &c), 0);
	assert_int_equal(c.family, AF_INET);
	assert_int_equal(c.prefix, 8);
	assert_memory_equal(c.addr, ten, 4);

	assert_int_equal(netaddr_cidr_parse("2001:db8::/32", &c), 0);
	assert_int_equal(c.family, AF_INET6);
	assert_int_equal(c.prefix, 32);
	assert_memory_equal(c.addr, v6, 16);

	assert_int_equal(netaddr_cidr_parse("1.2.3.4", &c), 0);
	assert_int_equal(c.prefix, 32);
	assert_int_equal(netaddr_cidr_parse("::1", &c), 0);
	assert_int_equal(c.family, AF_INET6);
	assert_int_equal(c.prefix, 128);
	assert_int_equal(netaddr_cidr_parse("0.0.0.0/0", &c), 0);
	assert_int_equal(c.prefix, 0);
	assert_int_equal(netaddr_cidr_parse("::/0", &c), 0);
	assert_int_equal(c.prefix, 0);
	assert_int_equal(netaddr_cidr_parse("10.0.0.0/32", &c), 0);
	assert_int_equal(netaddr_cidr_parse("::/128", &c), 0);
	assert_int_equal(c.prefix, 128);
}

static void
test_cidr_parse_errors(void **state)
{
	static const char *bad[] = {
		"", "/8", "10.0.0.0/", "10.0.0.0/33", "10.0.0.0/-1", "10.0.0.0/+8", "10.0.0.0/ 8",
		"10.0.0.0/8 ", " 10.0.0.0/8", "10.0.0.0/8/8", "10.0.0.0/8x", "10.0.0.0/0x8",
		"10.0.0.0/99999999999999999999", "10.0.0.0/4294967304", "::/129", "::/1000",
		"10/8", "10.0.0/24", "127.1", "0x7f000001", "2130706433", "10.0.0.256/8",
		"example.com", "example.com/8", "garbage", "fe80::1%eth0/64", "[::1]/128", "[::1]",
		"1.2.3.4:80", "::1 /128",
		"0000000000000000000000000000000000000000000000000000000000000000000000000000/8",
	};
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct netaddr_cidr c;
		int rc = netaddr_cidr_parse(bad[i], &c);

		if (rc != SLUICE_EINVAL) {
			print_error("netaddr_cidr_parse(\"%s\"): %d, expected SLUICE_EINVAL\n", bad[i], rc);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

static int
match1(const char *cidr, const char *addr)
{
	struct netaddr_cidr c;
	struct sockaddr_storage ss;

	if (netaddr_cidr_parse(cidr, &c) != 0)
		fail_msg("test bug: cidr %s", cidr);
	return netaddr_cidr_match(&c, 1, mk_sa(&ss, addr, 1));
}

struct match_case {
	const char *cidr;
	const char *addr;
	int match;
};

static const struct match_case match_cases[] = {
	{"10.0.0.0/8", "10.0.0.0", 1},
	{"10.0.0.0/8", "10.255.255.255", 1},
	{"10.0.0.0/8", "11.0.0.0", 0},
	{"10.0.0.0/8", "9.255.255.255", 0},
	{"172.16.0.0/12", "172.31.1.1", 1},
	{"172.16.0.0/12", "172.32.0.1", 0},
	{"192.168.1.128/25", "192.168.1.128", 1},
	{"192.168.1.128/25", "192.168.1.127", 0},
	{"10.1.2.3/8", "10.9.9.9", 1},      /* host bits in the network are ignored */
	{"1.2.3.4", "1.2.3.4", 1},
	{"1.2.3.4", "1.2.3.5", 0},
	{"1.2.3.4/31", "1.2.3.5", 1},
	{"0.0.0.0/0", "8.8.8.8", 1},
	{"0.0.0.0/0", "255.255.255.255", 1},
	{"0.0.0.0/0", "::1", 0},              /* a v4 list does not cover native v6 */
	/* v4-mapped peers match v4 CIDRs */
	{"127.0.0.0/8", "::ffff:127.0.0.1", 1},
	{"10.0.0.0/8", "::ffff:10.1.2.3", 1},
	{"10.0.0.0/8", "::ffff:11.1.2.3", 0},
	{"0.0.0.0/0", "::ffff:8.8.8.8", 1},
	{"10.0.0.0/8", "::10.1.2.3", 0},      /* compatible is not mapped */
	{"10.0.0.0/8", "64:ff9b::10.1.2.3", 0},
	/* v6 */
	{"::1", "::1", 1},
	{"::1/128", "::2", 0},
	{"2001:db8::/32", "2001:db8:ffff::1", 1},
	{"2001:db8::/32", "2001:db9::1", 0},
	{"fe80::/10", "febf::1", 1},
	{"fe80::/10", "fec0::1", 0},
	{"2001:db8::/33", "2001:db8:7fff::1", 1},
	{"2001:db8::/33", "2001:db8:8000::1", 0},
	{"2001:db8::/127", "2001:db8::1", 1},
	{"2001:db8::/127", "2001:db8::2", 0},
	{"::/0", "2606:4700::1", 1},
	{"::/0", "::ffff:1.2.3.4", 1},
	{"::ffff:0:0/96", "::ffff:1.2.3.4", 1},
	{"::ffff:0:0/96", "1.2.3.4", 1},       /* same address, other socket family */
	{"::ffff:127.0.0.0/104", "127.0.0.1", 1},
	{"::ffff:127.0.0.0/104", "128.0.0.1", 0},
	{"::1/128", "127.0.0.1", 0},
};

static void
test_cidr_match_table(void **state)
{
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		const struct match_case *c = &match_cases[i];
		int got = match1(c->cidr, c->addr);

		if (got != c->match) {
			print_error("netaddr_cidr_match(%s, %s): %d, expected %d\n", c->cidr, c->addr, got,
			            c->match);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

static void
test_cidr_match_list(void **state)
{
	struct netaddr_cidr list[3];
	struct sockaddr_storage ss;

	(void)state;
	assert_int_equal(netaddr_cidr_parse("10.0.0.0/8", &list[0]), 0);
	assert_int_equal(netaddr_cidr_parse("fd00::/8", &list[1]), 0);
	assert_int_equal(netaddr_cidr_parse("192.168.0.0/16", &list[2]), 0);
	assert_int_equal(netaddr_cidr_match(list, 3, mk_sa(&ss, "192.168.4.4", 1)), 1);
	assert_int_equal(netaddr_cidr_match(list, 3, mk_sa(&ss, "fd12::1", 1)), 1);
	assert_int_equal(netaddr_cidr_match(list, 3, mk_sa(&ss, "::ffff:10.0.0.1", 1)), 1);
	assert_int_equal(netaddr_cidr_match(list, 3, mk_sa(&ss, "8.8.8.8", 1)), 0);
	assert_int_equal(netaddr_cidr_match(list, 2, mk_sa(&ss, "192.168.4.4", 1)), 0);
	assert_int_equal(netaddr_cidr_match(list, 0, mk_sa(&ss, "10.0.0.1", 1)), 0);
	assert_int_equal(netaddr_cidr_match(NULL, 0, mk_sa(&ss, "10.0.0.1", 1)), 0);
}

struct fmt_case {
	const char *addr;
	unsigned port;
	const char *bare;
	const char *with_port;
};

static const struct fmt_case fmt_cases[] = {
	{"1.2.3.4", 80, "1.2.3.4", "1.2.3.4:80"},
	{"255.255.255.255", 65535, "255.255.255.255", "255.255.255.255:65535"},
	{"0.0.0.0", 0, "0.0.0.0", "0.0.0.0:0"},
	{"::1", 80, "::1", "[::1]:80"},
	{"2001:db8:0:0:1:0:0:1", 443, "2001:db8::1:0:0:1", "[2001:db8::1:0:0:1]:443"},
	{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 65535, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	 "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535"},
	{"::ffff:127.0.0.1", 3128, "127.0.0.1", "127.0.0.1:3128"},
	{"::ffff:10.1.2.3", 1, "10.1.2.3", "10.1.2.3:1"},
};

static void
test_format(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(fmt_cases) / sizeof(fmt_cases[0]); i++) {
		const struct fmt_case *c = &fmt_cases[i];
		struct sockaddr_storage ss;
		char out[64];

		memset(out, 'Z', sizeof(out));
		assert_ptr_equal(netaddr_format(mk_sa(&ss, c->addr, c->port), 0, out, sizeof(out)), out);
		assert_string_equal(out, c->bare);
		memset(out, 'Z', sizeof(out));
		assert_ptr_equal(netaddr_format(mk_sa(&ss, c->addr, c->port), 1, out, sizeof(out)), out);
		assert_string_equal(out, c->with_port);
	}
}

static void
test_format_small(void **state)
{
	struct sockaddr_storage ss;
	char *out = malloc(8);

	(void)state;
	assert_non_null(out);
	/* truncated, never overflowing, always terminated */
	netaddr_format(mk_sa(&ss, "255.255.255.255", 65535), 1, out, 8);
	assert_string_equal(out, "255.255");
	netaddr_format(mk_sa(&ss, "2001:db8::1", 443), 1, out, 8);
	assert_string_equal(out, "[2001:d");
	netaddr_format(mk_sa(&ss, "2001:db8::1", 443), 0, out, 1);
	assert_string_equal(out, "");
	free(out);
}

static void
test_format_unix(void **state)
{
	struct sockaddr_un un;
	char out[64];

	(void)state;
	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	netaddr_format((const struct sockaddr *)&un, 1, out, sizeof(out));
	assert_string_equal(out, "unix");
}

static void
test_listen_parse(void **state)
{
	struct netaddr_listen l;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)&l.ss;
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&l.ss;
	const struct sockaddr_un *un = (const struct sockaddr_un *)&l.ss;
	char path[200], out[64];

	(void)state;
	assert_int_equal(netaddr_listen_parse("[::]:15001", &l), 0);
	assert_int_equal(l.family, AF_INET6);
	assert_int_equal(s6->sin6_family, AF_INET6);
	assert_int_equal(ntohs(s6->sin6_port), 15001);
	assert_true(IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr));
	assert_int_equal(l.sslen, sizeof(struct sockaddr_in6));

	assert_int_equal(netaddr_listen_parse("127.0.0.1:3128", &l), 0);
	assert_int_equal(l.family, AF_INET);
	assert_int_equal(s4->sin_family, AF_INET);
	assert_int_equal(ntohs(s4->sin_port), 3128);
	assert_int_equal(ntohl(s4->sin_addr.s_addr), 0x7f000001);
	assert_int_equal(l.sslen, sizeof(struct sockaddr_in));
	assert_string_equal(netaddr_format((const struct sockaddr *)&l.ss, 1, out, sizeof(out)),
	                    "127.0.0.1:3128");

	assert_int_equal(netaddr_listen_parse("[::1]:65535", &l), 0);
	assert_int_equal(ntohs(s6->sin6_port), 65535);
	assert_string_equal(netaddr_format((const struct sockaddr *)&l.ss, 1, out, sizeof(out)),
	                    "[::1]:65535");
	assert_int_equal(netaddr_listen_parse("0.0.0.0:1", &l), 0);

	assert_int_equal(netaddr_listen_parse("unix:/run/x.sock", &l), 0);
	assert_int_equal(l.family, AF_UNIX);
	assert_int_equal(un->sun_family, AF_UNIX);
	assert_string_equal(un->sun_path, "/run/x.sock");
	assert_string_equal(l.path, "/run/x.sock");
	assert_int_equal(l.sslen, offsetof(struct sockaddr_un, sun_path) + strlen("/run/x.sock") + 1);

	/* the longest path that fits sun_path with its NUL */
	memcpy(path, "unix:/", 6);
	memset(path + 6, 'p', sizeof(un->sun_path) - 2);
	path[5 + sizeof(un->sun_path) - 1] = '\0';
	assert_int_equal(netaddr_listen_parse(path, &l), 0);
	assert_int_equal(strlen(l.path), sizeof(un->sun_path) - 1);
	/* one more byte does not */
	memset(path + 6, 'p', sizeof(un->sun_path) - 1);
	path[5 + sizeof(un->sun_path)] = '\0';
	assert_int_equal(netaddr_listen_parse(path, &l), SLUICE_EINVAL);
}

static void
test_listen_parse_errors(void **state)
{
	static const char *bad[] = {
		"", "127.0.0.1", "x:1", "localhost:3128", "unix:rel", "unix:", "unix:./x", "[::1]:99999",
		"127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:+1", "127.0.0.1: 1",
		"127.0.0.1:1 ", "127.0.0.1:0x50", "127.0.0.1:99999999999999999999",
		"127.0.0.1:18446744073709551696", ":3128", "[::1]", "[::1]:", "[::1]3128", "[]:3128",
		"::1:3128", "[127.0.0.1]:3128", "[fe80::1%eth0]:3128", "127.1:3128", "[::1:3128",
		"1.2.3.4:80:80", "[::1]:80]",
	};
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct netaddr_listen l;
		int rc = netaddr_listen_parse(bad[i], &l);

		if (rc != SLUICE_EINVAL) {
			print_error("netaddr_listen_parse(\"%s\"): %d, expected SLUICE_EINVAL\n", bad[i], rc);
			failed++;
		}
	}
	assert_int_equal(failed, 0);
}

int
test_netaddr_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_special_table),
		cmocka_unit_test(test_special_other_family),
		cmocka_unit_test(test_nat64_prefixes),
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_cidr_parse_errors),
		cmocka_unit_test(test_cidr_match_table),
		cmocka_unit_test(test_cidr_match_list),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_format_small),
		cmocka_unit_test(test_format_unix),
		cmocka_unit_test(test_listen_parse),
		cmocka_unit_test(test_listen_parse_errors),
	};

	return cmocka_run_group_tests_name("common/netaddr", tests, NULL, NULL);
}
