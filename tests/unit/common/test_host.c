/*
 * tests/unit/common/test_host.c - host_canon, host_is_canonical,
 * host_split_authority.
 *
 * Every input is copied into a heap buffer of exactly its length (no NUL
 * after it) and every output is a heap buffer of exactly HOST_BUF bytes, so
 * ASan reports any read past the input or write past the output.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/host.h"

int test_host_run(void);

#define ERR (-1)

struct canon_case {
	const char *in;
	size_t len;
	int kind;         /* HOST_* or ERR */
	const char *out;  /* expected canonical text when kind > 0 */
};

/* sizeof keeps embedded NULs in the length. */
#define C(s, k, o) {s, sizeof(s) - 1, k, o}

static const struct canon_case canon_cases[] = {
	/* DNS names */
	C("Example.COM.", HOST_DNS, "example.com"),
	C("example.com", HOST_DNS, "example.com"),
	C("localhost", HOST_DNS, "localhost"),
	C("LOCALHOST.", HOST_DNS, "localhost"),
	C("example.com.evil.test", HOST_DNS, "example.com.evil.test"),
	C("xn--80ak6aa92e.com", HOST_DNS, "xn--80ak6aa92e.com"),
	C("a-b.c_d.example", HOST_DNS, "a-b.c_d.example"),
	C("1.example.com", HOST_DNS, "1.example.com"),
	C("123.abc", HOST_DNS, "123.abc"),
	C("a.0xg", HOST_DNS, "a.0xg"),  /* 0xg is not a number */
	C("", ERR, NULL),
	C(".", ERR, NULL),
	C("..", ERR, NULL),
	C("a..b", ERR, NULL),
	C(".a.com", ERR, NULL),
	C("a.com..", ERR, NULL),
	C("-a.com", ERR, NULL),
	C("a-.com", ERR, NULL),
	C("a.com-", ERR, NULL),
	C("a.-com", ERR, NULL),
	C("foo bar", ERR, NULL),
	C("foo\tbar", ERR, NULL),
	C("foo\r\nbar", ERR, NULL),
	C("a/b", ERR, NULL),
	C("a@b", ERR, NULL),
	C("a\\b", ERR, NULL),
	C("ex\xc3\xa4mple.com", ERR, NULL),  /* UTF-8 must arrive as A-labels */
	C("example.com\0.evil.test", ERR, NULL),
	C("\0example.com", ERR, NULL),
	C("example.com\0", ERR, NULL),
	C("[", ERR, NULL),
	C("[]", ERR, NULL),
	C("[::1", ERR, NULL),
	C("::1]", ERR, NULL),
	C("[example.com]", ERR, NULL),
	C("[1.2.3.4]", ERR, NULL),

	/* IPv4, every inet_aton form becomes a dotted quad */
	C("127.0.0.1", HOST_IPV4, "127.0.0.1"),
	C("127.1", HOST_IPV4, "127.0.0.1"),
	C("2130706433", HOST_IPV4, "127.0.0.1"),
	C("0x7f000001", HOST_IPV4, "127.0.0.1"),
	C("0X7F000001", HOST_IPV4, "127.0.0.1"),
	C("0177.0.0.1", HOST_IPV4, "127.0.0.1"),
	C("0x7f.1", HOST_IPV4, "127.0.0.1"),
	C("127.0.0.1.", HOST_IPV4, "127.0.0.1"),
	C("1.2.3", HOST_IPV4, "1.2.0.3"),
	C("1.16777215", HOST_IPV4, "1.255.255.255"),
	C("4294967295", HOST_IPV4, "255.255.255.255"),
	C("0", HOST_IPV4, "0.0.0.0"),
	C("00000000000000000000000177.1", HOST_IPV4, "127.0.0.1"),
	C("169.254.169.254", HOST_IPV4, "169.254.169.254"),
	C("1.2.3.256", ERR, NULL),
	C("1.2.3.4.5", ERR, NULL),
	C("1.2.65536", ERR, NULL),
	C("1.16777216", ERR, NULL),
	C("4294967296", ERR, NULL),
	C("0x100000000", ERR, NULL),
	C("99999999999999999999999", ERR, NULL),
	C("08.0.0.1", ERR, NULL),    /* 8 is not an octal digit */
	C("1.2.3.09", ERR, NULL),
	C("1..2.3", ERR, NULL),
	C("1.2.3.4..", ERR, NULL),
	C("a.1", ERR, NULL),         /* ends in a number but is no IPv4 address */
	C("example.123", ERR, NULL),
	C("a.0x1f", ERR, NULL),
	C("1.2.3.-1", ERR, NULL),
	C("1.2.3.+1", ERR, NULL),
	C("127.0.0.1\0", ERR, NULL),
	C("127.0.0.1\0.evil", ERR, NULL),

	/* IPv6 */
	C("[::1]", HOST_IPV6, "::1"),
	C("::1", HOST_IPV6, "::1"),
	C("[::ffff:127.0.0.1]", HOST_IPV6, "::ffff:127.0.0.1"),
	C("::FFFF:7f00:1", HOST_IPV6, "::ffff:127.0.0.1"),
	C("[2001:DB8:0:0:0:0:0:1]", HOST_IPV6, "2001:db8::1"),
	C("2001:db8:0:0:1:0:0:1", HOST_IPV6, "2001:db8::1:0:0:1"),
	C("[0:0:0:0:0:0:0:0]", HOST_IPV6, "::"),
	C("fe80::1%eth0", ERR, NULL),
	C("[fe80::1%eth0]", ERR, NULL),
	C("[fe80::1%25eth0]", ERR, NULL),
	C("[::1]:443", ERR, NULL),
	C(":::1", ERR, NULL),
	C("1:2:3:4:5:6:7:8:9", ERR, NULL),
	C("[::g]", ERR, NULL),
	C("[ ::1]", ERR, NULL),
	C("::1\0evil", ERR, NULL),       /* NUL must not cut the literal short */
	C("[::1\0evil]", ERR, NULL),
	C("[::1\0]", ERR, NULL),
	C("[::ffff:127.0.0.1\0.evil.test]", ERR, NULL),
};

static char *
dup_exact(const char *s, size_t n)
{
	char *p = malloc(n ? n : 1);

	assert_non_null(p);
	memcpy(p, s, n);
	return p;
}

static void
show(const char *s, size_t n, char *out, size_t cap)
{
	size_t i, o = 0;

	for (i = 0; i < n && o + 5 < cap; i++) {
		unsigned char c = (unsigned char)s[i];
		int w = (c >= 0x20 && c < 0x7f) ? snprintf(out + o, cap - o, "%c", c)
		                                 : snprintf(out + o, cap - o, "\\x%02x", c);
		o += (size_t)w;
	}
	out[o] = '\0';
}

static void
test_canon_table(void **state)
{
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
		const struct canon_case *c = &canon_cases[i];
		char *in = dup_exact(c->in, c->len);
		char *out = malloc(HOST_BUF);
		const char *err = NULL;
		char shown[128];
		int kind;

		assert_non_null(out);
		memset(out, 'Z', HOST_BUF);
		kind = host_canon(in, c->len, out, &err);
		show(c->in, c->len, shown, sizeof(shown));
		if (kind != c->kind) {
			print_error("host_canon(\"%s\"): kind %d, expected %d (%s)\n", shown, kind, c->kind,
			            kind > 0 ? out : (err ? err : "no err"));
			failed++;
		} else if (kind > 0 && strcmp(out, c->out) != 0) {
			print_error("host_canon(\"%s\"): \"%s\", expected \"%s\"\n", shown, out, c->out);
			failed++;
		} else if (kind < 0 && (err == NULL || err[0] == '\0')) {
			print_error("host_canon(\"%s\"): error without a reason\n", shown);
			failed++;
		}
		free(in);
		free(out);
	}
	assert_int_equal(failed, 0);
}

/* Builds <nlabels> labels of <llen> bytes joined by dots, plus <tail>. */
static size_t
make_name(char *buf, size_t cap, size_t nlabels, size_t llen, const char *tail)
{
	size_t o = 0, i;

	for (i = 0; i < nlabels; i++) {
		assert_true(o + llen + 1 < cap);
		memset(buf + o, 'a' + (int)(i % 26), llen);
		o += llen;
		if (i + 1 < nlabels)
			buf[o++] = '.';
	}
	assert_true(o + strlen(tail) < cap);
	memcpy(buf + o, tail, strlen(tail));
	o += strlen(tail);
	buf[o] = '\0';
	return o;
}

static int
canon(const char *s, size_t n, char *out)
{
	char *in = dup_exact(s, n);
	const char *err = NULL;
	int kind = host_canon(in, n, out, &err);

	free(in);
	if (kind < 0)
		assert_non_null(err);
	return kind;
}

static void
test_canon_lengths(void **state)
{
	char name[600];
	char *out = malloc(HOST_BUF);
	size_t n;

	(void)state;
	assert_non_null(out);

	/* a label of 63 bytes is fine, 64 is not */
	n = make_name(name, sizeof(name), 1, 63, ".com");
	assert_int_equal(canon(name, n, out), HOST_DNS);
	assert_string_equal(out, name);
	n = make_name(name, sizeof(name), 1, 64, ".com");
	assert_int_equal(canon(name, n, out), ERR);
	n = make_name(name, sizeof(name), 1, 64, "");
	assert_int_equal(canon(name, n, out), ERR);
	n = make_name(name, sizeof(name), 1, 63, "");
	assert_int_equal(canon(name, n, out), HOST_DNS);

	/* 4 labels of 63 + 3 dots = 255; trim to exactly 253 and 254 */
	n = make_name(name, sizeof(name), 4, 63, "");
	assert_int_equal(n, 255);
	name[253] = '\0';  /* ends "...d" + 61 bytes of 'd' */
	assert_int_equal(canon(name, 253, out), HOST_DNS);
	assert_int_equal(strlen(out), 253);
	assert_memory_equal(out, name, 253);
	/* 253 plus the root dot is still 253 */
	name[253] = '.';
	assert_int_equal(canon(name, 254, out), HOST_DNS);
	assert_int_equal(strlen(out), 253);
	/* 254 bytes */
	name[253] = 'd';
	assert_int_equal(canon(name, 254, out), ERR);
	/* 254 bytes and a dot */
	name[254] = '.';
	assert_int_equal(canon(name, 255, out), ERR);
	/* very long */
	memset(name, 'a', 599);
	assert_int_equal(canon(name, 599, out), ERR);
	/* upper case 253 is lowered */
	n = make_name(name, sizeof(name), 4, 63, "");
	name[253] = '\0';
	name[0] = 'A';
	assert_int_equal(canon(name, 253, out), HOST_DNS);
	assert_int_equal(out[0], 'a');

	/* a 253-byte input that ends in a number is judged as IPv4, not a name */
	n = make_name(name, sizeof(name), 4, 63, "");
	memcpy(name + 250, ".12", 3);
	assert_int_equal(canon(name, 253, out), ERR);

	/* a long IPv6 literal is refused, not truncated */
	memset(name, '0', sizeof(name));
	memcpy(name, "[0000:", 6);
	memcpy(name + 100, ":1]", 3);
	assert_int_equal(canon(name, 103, out), ERR);
	free(out);
}

/*
 * An empty (NULL, 0) view, e.g. a missing SNI, must be an error, not UB.
 * Run in a child: with -fno-sanitize-recover a UBSan report ends the process,
 * and must not take the remaining tests with it.
 */
static void
test_canon_null_empty(void **state)
{
	pid_t pid;
	int status;

	(void)state;
	fflush(NULL);
	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		char out[HOST_BUF];
		const char *err = NULL;
		unsigned port = 0;
		int a = host_canon(NULL, 0, out, &err);
		int b = host_split_authority(NULL, 0, 443, out, &port, &err);

		_exit(a == ERR && b == ERR && err != NULL ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("host_canon(NULL, 0) / host_split_authority(NULL, 0): child %s %d (UBSan report above?)",
		         WIFEXITED(status) ? "exited" : "killed by signal",
		         WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
}

static void
test_canon_idempotent(void **state)
{
	size_t i;

	(void)state;
	/* canonical output canonicalises to itself, with the same kind */
	for (i = 0; i < sizeof(canon_cases) / sizeof(canon_cases[0]); i++) {
		const struct canon_case *c = &canon_cases[i];
		char out[HOST_BUF];

		if (c->kind < 0)
			continue;
		assert_int_equal(canon(c->out, strlen(c->out), out), c->kind);
		assert_string_equal(out, c->out);
		assert_int_equal(host_is_canonical(c->out), 1);
	}
}

static void
test_is_canonical(void **state)
{
	(void)state;
	assert_int_equal(host_is_canonical("example.com"), 1);
	assert_int_equal(host_is_canonical("localhost"), 1);
	assert_int_equal(host_is_canonical("127.0.0.1"), 1);
	assert_int_equal(host_is_canonical("::1"), 1);
	assert_int_equal(host_is_canonical("::ffff:127.0.0.1"), 1);
	assert_int_equal(host_is_canonical("Example.com"), 0);
	assert_int_equal(host_is_canonical("example.com."), 0);
	assert_int_equal(host_is_canonical("127.1"), 0);
	assert_int_equal(host_is_canonical("2130706433"), 0);
	assert_int_equal(host_is_canonical("[::1]"), 0);
	assert_int_equal(host_is_canonical("::FFFF:7f00:1"), 0);
	assert_int_equal(host_is_canonical("0:0::1"), 0);
	assert_int_equal(host_is_canonical(""), 0);
	assert_int_equal(host_is_canonical("a..b"), 0);
	assert_int_equal(host_is_canonical("a.1"), 0);
	assert_int_equal(host_is_canonical("foo bar"), 0);
	assert_int_equal(host_is_canonical("fe80::1%eth0"), 0);
}

static void
test_is_canonical_long(void **state)
{
	char name[400];

	(void)state;
	make_name(name, sizeof(name), 4, 63, "");
	name[253] = '\0';
	assert_int_equal(host_is_canonical(name), 1);
	name[253] = 'x';
	name[254] = '\0';
	assert_int_equal(host_is_canonical(name), 0);
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	assert_int_equal(host_is_canonical(name), 0);
}

struct auth_case {
	const char *in;
	size_t len;
	unsigned def;
	int kind;
	const char *host;
	unsigned port;
};

#define A(s, d, k, h, p) {s, sizeof(s) - 1, d, k, h, p}

static const struct auth_case auth_cases[] = {
	A("h:443", 0, HOST_DNS, "h", 443),
	A("Example.COM:8080", 0, HOST_DNS, "example.com", 8080),
	A("example.com.:443", 0, HOST_DNS, "example.com", 443),
	A("[::1]:8443", 0, HOST_IPV6, "::1", 8443),
	A("[::1]", 443, HOST_IPV6, "::1", 443),
	A("[::ffff:7f00:1]:1", 0, HOST_IPV6, "::ffff:127.0.0.1", 1),
	A("h", 443, HOST_DNS, "h", 443),
	A("h:80", 443, HOST_DNS, "h", 80),
	A("h:65535", 0, HOST_DNS, "h", 65535),
	A("h:1", 0, HOST_DNS, "h", 1),
	A("127.1:443", 0, HOST_IPV4, "127.0.0.1", 443),
	A("2130706433:443", 0, HOST_IPV4, "127.0.0.1", 443),
	A("h", 0, ERR, NULL, 0),
	A("[::1]", 0, ERR, NULL, 0),
	A("h:", 0, ERR, NULL, 0),
	A("h:", 443, ERR, NULL, 0),
	A("h:0", 0, ERR, NULL, 0),
	A("h:00000", 0, ERR, NULL, 0),
	A("h:65536", 0, ERR, NULL, 0),
	A("h:99999", 0, ERR, NULL, 0),
	A("h:123456", 0, ERR, NULL, 0),
	A("h:4294967739", 0, ERR, NULL, 0),  /* 2^32 + 443 */
	A("h:+5", 0, ERR, NULL, 0),
	A("h:-5", 0, ERR, NULL, 0),
	A("h: 5", 0, ERR, NULL, 0),
	A("h:5 ", 0, ERR, NULL, 0),
	A("h:0x1bb", 0, ERR, NULL, 0),
	A("h:443\0", 0, ERR, NULL, 0),
	A("h\0:443", 0, ERR, NULL, 0),
	A("h:443:443", 0, ERR, NULL, 0),
	A("::1:443", 0, ERR, NULL, 0),
	A("::1", 443, ERR, NULL, 0),
	A("[::1]x", 0, ERR, NULL, 0),
	A("[::1]x", 443, ERR, NULL, 0),
	A("[::1]:", 0, ERR, NULL, 0),
	A("[::1]]:443", 0, ERR, NULL, 0),
	A("[::1:443", 0, ERR, NULL, 0),
	A("[]:443", 0, ERR, NULL, 0),
	A("[h]:443", 0, ERR, NULL, 0),
	A("[1.2.3.4]:443", 0, ERR, NULL, 0),
	A("[fe80::1%eth0]:443", 0, ERR, NULL, 0),
	A(":443", 0, ERR, NULL, 0),
	A("", 443, ERR, NULL, 0),
	A("user@h:443", 0, ERR, NULL, 0),
	A("h/x:443", 0, ERR, NULL, 0),
	A("1.2.3.256:443", 0, ERR, NULL, 0),
	A("a.1:443", 0, ERR, NULL, 0),
};

static void
test_split_table(void **state)
{
	size_t i, failed = 0;

	(void)state;
	for (i = 0; i < sizeof(auth_cases) / sizeof(auth_cases[0]); i++) {
		const struct auth_case *c = &auth_cases[i];
		char *in = dup_exact(c->in, c->len);
		char *host = malloc(HOST_BUF);
		const char *err = NULL;
		unsigned port = 12345;
		char shown[128];
		int kind;

		assert_non_null(host);
		host[0] = '\0';
		kind = host_split_authority(in, c->len, c->def, host, &port, &err);
		show(c->in, c->len, shown, sizeof(shown));
		if (kind != c->kind) {
			print_error("host_split_authority(\"%s\", %u): kind %d, expected %d (%s)\n", shown, c->def,
			            kind, c->kind, kind > 0 ? host : (err ? err : "no err"));
			failed++;
		} else if (kind > 0 && (strcmp(host, c->host) != 0 || port != c->port)) {
			print_error("host_split_authority(\"%s\"): %s port %u, expected %s port %u\n", shown, host,
			            port, c->host, c->port);
			failed++;
		} else if (kind < 0 && err == NULL) {
			print_error("host_split_authority(\"%s\"): error without a reason\n", shown);
			failed++;
		}
		free(in);
		free(host);
	}
	assert_int_equal(failed, 0);
}

int
test_host_run(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_canon_table),
		cmocka_unit_test(test_canon_lengths),
		cmocka_unit_test(test_canon_null_empty),
		cmocka_unit_test(test_canon_idempotent),
		cmocka_unit_test(test_is_canonical),
		cmocka_unit_test(test_is_canonical_long),
		cmocka_unit_test(test_split_table),
	};

	return cmocka_run_group_tests_name("common/host", tests, NULL, NULL);
}
