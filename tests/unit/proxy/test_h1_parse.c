/*
 * tests/unit/proxy/test_h1_parse.c - the HTTP/1.1 head and chunked parsers.
 *
 * Every table case is also fed one byte at a time, and must give the same
 * answer as the whole buffer does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/codec/h1_parse.h"

static const struct h1_limits LIM = {8192, 1024, 100};

/* ---- helpers ---- */

static int
same_message(const struct h1_message *a, const struct h1_message *b)
{
	size_t i;

	if (a->method_len != b->method_len || a->target_len != b->target_len ||
	    a->status != b->status || a->reason_len != b->reason_len ||
	    a->minor_version != b->minor_version || a->nheaders != b->nheaders ||
	    a->framing != b->framing || a->content_length != b->content_length ||
	    a->keep_alive != b->keep_alive || a->expect_continue != b->expect_continue ||
	    a->upgrade_websocket != b->upgrade_websocket || (a->host == NULL) != (b->host == NULL))
		return 0;
	for (i = 0; i < a->nheaders; i++)
		if (a->headers[i].name_len != b->headers[i].name_len ||
		    a->headers[i].value_len != b->headers[i].value_len)
			return 0;
	return 1;
}

/*
 * Parses <s>/<n> as a request whole, then one byte more at a time: the first
 * answer that is not -2 must be the whole buffer's, with the same status.
 */
static int
req_n(const char *s, size_t n, const struct h1_limits *lim, struct h1_message *msg, int *status,
      int bytewise)
{
	static struct h1_message m2;
	const char *err, *err2;
	int r, r2, st2;
	size_t k;

	r = h1_parse_request(s, n, lim, msg, &err, status);
	if (r == -1)
		assert_non_null(err);
	if (r == -1)
		assert_true(*status == 400 || *status == 414 || *status == 431 || *status == 501 ||
		            *status == 505 || *status == 417);
	if (r >= 0)
		assert_int_equal(*status, 0);
	if (!bytewise)
		return r;
	for (k = 0; k <= n; k++) {
		r2 = h1_parse_request(s, k, lim, &m2, &err2, &st2);
		if (r2 != -2)
			break;
	}
	if (r == -2) {
		assert_true(k > n);
		return r;
	}
	if (r2 != r || st2 != *status) {
		print_error("bytewise mismatch at %zu: %d/%d vs %d/%d (%s)\n", k, r2, st2, r, *status,
		            err2 ? err2 : "");
		fail();
	}
	if (r > 0) {
		assert_int_equal(k, (size_t)r);
		assert_true(same_message(msg, &m2));
	}
	return r;
}

static int
req(const char *s, struct h1_message *msg, int *status)
{
	return req_n(s, strlen(s), &LIM, msg, status, 1);
}

static int
resp_n(const char *s, size_t n, const char *method, struct h1_message *msg, int bytewise)
{
	static struct h1_message m2;
	const char *err, *err2;
	int r, r2 = -2;
	size_t k;

	r = h1_parse_response(s, n, &LIM, method, method ? strlen(method) : 0, msg, &err);
	if (r == -1)
		assert_non_null(err);
	if (!bytewise)
		return r;
	for (k = 0; k <= n; k++) {
		r2 = h1_parse_response(s, k, &LIM, method, method ? strlen(method) : 0, &m2, &err2);
		if (r2 != -2)
			break;
	}
	assert_int_equal(r2, r);
	if (r > 0) {
		assert_int_equal(k, (size_t)r);
		assert_true(same_message(msg, &m2));
	}
	return r;
}

static int
resp(const char *s, const char *method, struct h1_message *msg)
{
	return resp_n(s, strlen(s), method, msg, 1);
}

static int
iov_eq(const char *p, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* ---- requests ---- */

static struct h1_message M;

static void
test_request_basic(void **state)
{
	const char *s = "GET /a?b=c HTTP/1.1\r\nHost: example.com\r\nX-Empty:\r\n"
	                "X-Pad: \t v a l \t \r\n\r\nBODY";
	int status;

	(void)state;
	assert_int_equal(req(s, &M, &status), (int)strlen(s) - 4);
	assert_true(iov_eq(M.method, M.method_len, "GET"));
	assert_true(iov_eq(M.target, M.target_len, "/a?b=c"));
	assert_int_equal(M.minor_version, 1);
	assert_int_equal(M.nheaders, 3);
	assert_true(iov_eq(M.headers[0].name, M.headers[0].name_len, "Host"));
	assert_true(iov_eq(M.headers[0].value, M.headers[0].value_len, "example.com"));
	assert_int_equal(M.headers[1].value_len, 0);
	assert_true(iov_eq(M.headers[2].value, M.headers[2].value_len, "v a l"));
	assert_ptr_equal(M.host, &M.headers[0]);
	assert_int_equal(M.framing, H1_BODY_NONE);
	assert_int_equal(M.content_length, 0);
	assert_int_equal(M.keep_alive, 1);
	assert_int_equal(M.expect_continue, 0);
	assert_int_equal(M.upgrade_websocket, 0);
	assert_ptr_equal(h1_find_header(&M, "x-PAD"), &M.headers[2]);
	assert_null(h1_find_header(&M, "x-pa"));
}

static void
test_request_obs_text_and_connect(void **state)
{
	const char *s = "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
	                "X-Latin: caf\xc3\xa9\r\n\r\n";
	int status;

	(void)state;
	assert_int_equal(req(s, &M, &status), (int)strlen(s));
	assert_true(iov_eq(M.method, M.method_len, "CONNECT"));
	assert_true(iov_eq(M.target, M.target_len, "example.com:443"));
	assert_true(iov_eq(M.headers[1].value, M.headers[1].value_len, "caf\xc3\xa9"));
}

struct req_case {
	const char *in;
	int status;   /* 0: parses; else the refusal */
};

#define H11 "GET / HTTP/1.1\r\nHost: a\r\n"
#define M33 "ABCDEFGHIJABCDEFGHIJABCDEFGHIJABC"

static const struct req_case REQ_CASES[] = {
	{H11 "\r\n", 0},
	/* line endings */
	{"GET / HTTP/1.1\nHost: a\r\n\r\n", 400},
	{H11 "\n", 400},
	{H11 "X: b\n\r\n", 400},
	{H11 "X: b\rY: c\r\n\r\n", 400},
	{H11 "\r\r\n", 400},
	{"GET / HTTP/1.1\r\rHost: a\r\n\r\n", 400},
	{"GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.1\r\nHost: a\r\n\r", -2},
	{"GET / HTTP/1.1\r\nHost: a\r\n", -2},
	/* leading empty lines */
	{"\r\n" H11 "\r\n", 0},
	{"\r\n\r\n" H11 "\r\n", 0},
	{"\r\n\r\n\r\n" H11 "\r\n", 400},
	{"\n" H11 "\r\n", 400},
	{"\r" H11 "\r\n", 400},
	/* obs-fold */
	{H11 "X: b\r\n c\r\n\r\n", 400},
	{H11 "X: b\r\n\tc\r\n\r\n", 400},
	{"GET / HTTP/1.1\r\n Host: a\r\n\r\n", 400},
	/* field names */
	{H11 "X : b\r\n\r\n", 400},
	{H11 "X\t: b\r\n\r\n", 400},
	{H11 ": b\r\n\r\n", 400},
	{H11 "X b\r\n\r\n", 400},
	{H11 "X(y): b\r\n\r\n", 400},
	{H11 "X/y: b\r\n\r\n", 400},
	{H11 "X-~!#$%&'*+.^_`|: b\r\n\r\n", 0},
	/* field values */
	{H11 "X: a\x01" "b\r\n\r\n", 400},
	{H11 "X: a\x1f" "b\r\n\r\n", 400},
	{H11 "X: a\x7f" "b\r\n\r\n", 400},
	{H11 "X: a\x0b" "\r\n\r\n", 400},
	{H11 "X: a\tb \x80\xff\r\n\r\n", 0},
	/* request line */
	{" / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{M33 " / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"ABCDEFGHIJABCDEFGHIJABCDEFGHIJAB / HTTP/1.1\r\nHost: a\r\n\r\n", 0},
	{"G@T / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400},
	{"GET /  HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET /\t HTTP/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET /\r\n\r\n", 400},
	{"GET\r\n\r\n", 400},
	{"GET / \r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505},
	{"GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505},
	{"GET / HTTP/0.9\r\nHost: a\r\n\r\n", 505},
	{"GET / http/1.1\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.1x\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/11\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.10\r\nHost: a\r\n\r\n", 400},
	{"GET / HTTP/1.1\r\n\r\n", 400},   /* no Host in 1.1 */
	{"GET / HTTP/1.0\r\n\r\n", 0},
	{"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", 400},
	{"GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", 400},
	/* Transfer-Encoding */
	{H11 "Transfer-Encoding: chunked\r\n\r\n", 0},
	{H11 "transfer-encoding:  CHUNKED \t\r\n\r\n", 0},
	{H11 "Transfer-Encoding: gzip, chunked\r\n\r\n", 501},
	{H11 "Transfer-Encoding: chunked, chunked\r\n\r\n", 501},
	{H11 "Transfer-Encoding: gzip\r\n\r\n", 501},
	{H11 "Transfer-Encoding: identity\r\n\r\n", 501},
	{H11 "Transfer-Encoding:\r\n\r\n", 501},
	{H11 "Transfer-Encoding: chunked;q=1\r\n\r\n", 501},
	{H11 "Transfer-Encoding: \"chunked\"\r\n\r\n", 501},
	{H11 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{H11 "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{H11 "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", 400},
	{H11 "Content-Length: 5\r\nTransfer-Encoding: gzip\r\n\r\n", 400},
	{"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
	{H11 "Transfer-Encoding : chunked\r\n\r\n", 400},
	{H11 "Transfer-Encoding\x0b: chunked\r\n\r\n", 400},
	/* Content-Length */
	{H11 "Content-Length: 5\r\n\r\n", 0},
	{H11 "Content-Length: \r\n\r\n", 400},
	{H11 "Content-Length: +5\r\n\r\n", 400},
	{H11 "Content-Length: -5\r\n\r\n", 400},
	{H11 "Content-Length: 5 5\r\n\r\n", 400},
	{H11 "Content-Length: 5, 5\r\n\r\n", 400},
	{H11 "Content-Length: 5,5\r\n\r\n", 400},
	{H11 "Content-Length: 0x5\r\n\r\n", 400},
	{H11 "Content-Length: 5.0\r\n\r\n", 400},
	{H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", 400},
	{H11 "Content-Length: 5\r\ncontent-length: 6\r\n\r\n", 400},
	{H11 "Content-Length: 9007199254740992\r\n\r\n", 0},
	{H11 "Content-Length: 9007199254740993\r\n\r\n", 400},
	{H11 "Content-Length: 99999999999999999999999999\r\n\r\n", 400},
	{H11 "Content-Length: 18446744073709551616\r\n\r\n", 400},
	/* Expect */
	{H11 "Expect: 100-continue\r\n\r\n", 0},
	{H11 "Expect: 100-Continue\r\n\r\n", 0},
	{H11 "Expect: 200-ok\r\n\r\n", 417},
	{H11 "Expect: 100-continue\r\nExpect: foo\r\n\r\n", 417},
};

static void
test_request_table(void **state)
{
	size_t i;
	int r, status, want;

	(void)state;
	for (i = 0; i < sizeof(REQ_CASES) / sizeof(REQ_CASES[0]); i++) {
		const char *in = REQ_CASES[i].in;
		size_t n = strlen(in);

		want = REQ_CASES[i].status;
		r = req_n(in, n, &LIM, &M, &status, 1);
		if (want == 0 && r != (int)n) {
			print_error("case %zu: want %zu, got %d/%d\n", i, n, r, status);
			fail();
		} else if (want == -2 && r != -2) {
			print_error("case %zu: want -2, got %d/%d\n", i, r, status);
			fail();
		} else if (want > 0 && (r != -1 || status != want)) {
			print_error("case %zu: want -1/%d, got %d/%d\n", i, want, r, status);
			fail();
		}
	}
}

static void
test_request_nul(void **state)
{
	static const char a[] = "GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char b[] = "GET / HTTP/1.1\r\nHost: a\r\nX: a\0b\r\n\r\n";
	static const char c[] = "GET / HTTP/1.1\r\nHost: a\r\nX\0: ab\r\n\r\n";
	static const char d[] = "G\0T / HTTP/1.1\r\nHost: a\r\n\r\n";
	int status;

	(void)state;
	assert_int_equal(req_n(a, sizeof(a) - 1, &LIM, &M, &status, 1), -1);
	assert_int_equal(status, 400);
	assert_int_equal(req_n(b, sizeof(b) - 1, &LIM, &M, &status, 1), -1);
	assert_int_equal(status, 400);
	assert_int_equal(req_n(c, sizeof(c) - 1, &LIM, &M, &status, 1), -1);
	assert_int_equal(status, 400);
	assert_int_equal(req_n(d, sizeof(d) - 1, &LIM, &M, &status, 1), -1);
	assert_int_equal(status, 400);
}

static void
test_request_errors(void **state)
{
	const char *err;
	int status;

	(void)state;
	assert_int_equal(h1_parse_request(H11 "X: b\r\n c\r\n\r\n", strlen(H11) + 13, &LIM, &M, &err,
	                                  &status), -1);
	assert_string_equal(err, "obsolete line folding");
	assert_int_equal(h1_parse_request(H11 "X : b\r\n\r\n", strlen(H11) + 8, &LIM, &M, &err,
	                                  &status), -1);
	assert_string_equal(err, "whitespace before colon");
	assert_int_equal(h1_parse_request(H11 "\n", strlen(H11) + 1, &LIM, &M, &err, &status), -1);
	assert_string_equal(err, "bare CR or LF in head");
}

static void
test_request_framing(void **state)
{
	int status;

	(void)state;
	assert_true(req(H11 "Transfer-Encoding: chunked\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.framing, H1_BODY_CHUNKED);
	assert_true(req(H11 "Content-Length: 42\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.framing, H1_BODY_LENGTH);
	assert_int_equal(M.content_length, 42);
	assert_true(req(H11 "Content-Length:  007 \r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.framing, H1_BODY_LENGTH);
	assert_int_equal(M.content_length, 7);
	assert_true(req(H11 "Content-Length: 0\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.framing, H1_BODY_NONE);
	assert_int_equal(M.content_length, 0);
	assert_true(req(H11 "Content-Length: 9007199254740992\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.content_length, UINT64_C(9007199254740992));
	assert_true(req("POST / HTTP/1.1\r\nHost: a\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.framing, H1_BODY_NONE);
}

static void
test_request_connection(void **state)
{
	int status;

	(void)state;
	assert_true(req(H11 "\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 1);
	assert_true(req(H11 "Connection: close\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 0);
	assert_true(req(H11 "Connection: Keep-Alive, CLOSE\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 0);
	assert_true(req(H11 "Connection: foo\r\nConnection: ,, close ,\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 0);
	assert_true(req(H11 "Connection: closed\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 1);
	assert_true(req("GET / HTTP/1.0\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 0);
	assert_int_equal(M.minor_version, 0);
	assert_null(M.host);
	assert_true(req("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 1);
	assert_true(req("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.keep_alive, 0);

	assert_true(req(H11 "Expect: 100-continue\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.expect_continue, 1);
	assert_true(req("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.expect_continue, 0);

	assert_true(req(H11 "Connection: keep-alive, Upgrade\r\nUpgrade: WebSocket\r\n\r\n", &M,
	                &status) > 0);
	assert_int_equal(M.upgrade_websocket, 1);
	assert_int_equal(M.keep_alive, 1);
	assert_true(req(H11 "Upgrade: websocket\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.upgrade_websocket, 0);
	assert_true(req(H11 "Connection: upgrade\r\nUpgrade: h2c\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.upgrade_websocket, 0);
	assert_true(req(H11 "Connection: upgrade\r\n\r\n", &M, &status) > 0);
	assert_int_equal(M.upgrade_websocket, 0);

	assert_true(req(H11 "Connection: X-Foo , close\r\nX-Foo: 1\r\n\r\n", &M, &status) > 0);
	assert_int_equal(h1_connection_lists(&M, "x-foo", 5), 1);
	assert_int_equal(h1_connection_lists(&M, "X-Foo", 5), 1);
	assert_int_equal(h1_connection_lists(&M, "x-fo", 4), 0);
	assert_int_equal(h1_connection_lists(&M, "close", 5), 1);
	assert_int_equal(h1_connection_lists(&M, "host", 4), 0);
	assert_int_equal(h1_connection_lists(&M, "", 0), 0);
}

static void
test_hop_by_hop(void **state)
{
	static const char *const yes[] = {
		"Connection", "keep-alive", "PROXY-CONNECTION", "Proxy-Authenticate",
		"proxy-authorization", "TE", "trailer", "Transfer-Encoding", "upgrade",
	};
	static const char *const no[] = {"host", "content-length", "t", "trailers", "tex", "upgrades", ""};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		assert_int_equal(h1_is_hop_by_hop(yes[i], strlen(yes[i])), 1);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_int_equal(h1_is_hop_by_hop(no[i], strlen(no[i])), 0);
	assert_int_equal(h1_is_hop_by_hop("te-x", 2), 1);
}

/* ---- limits ---- */

/* A request whose line is "GET /xxx... HTTP/1.1" of exactly <line> bytes. */
static char *
long_line_request(size_t line, int complete)
{
	char *s = malloc(line + 64);
	size_t n = line - strlen("GET / HTTP/1.1");

	assert_non_null(s);
	memcpy(s, "GET /", 5);
	memset(s + 5, 'x', n);
	memcpy(s + 5 + n, " HTTP/1.1", 9);
	if (complete)
		memcpy(s + line, "\r\nHost: a\r\n\r\n", 14);
	else
		s[line] = '\0';
	return s;
}

static void
test_request_line_limit(void **state)
{
	struct h1_limits lim = {8192, 100, 100};
	char *s;
	int status;

	(void)state;
	s = long_line_request(100, 1);
	assert_int_equal(req_n(s, strlen(s), &lim, &M, &status, 1), (int)strlen(s));
	free(s);
	s = long_line_request(101, 1);
	assert_int_equal(req_n(s, strlen(s), &lim, &M, &status, 1), -1);
	assert_int_equal(status, 414);
	/* incomplete: 100 bytes may still end well, 101 cannot */
	assert_int_equal(req_n(s, 100, &lim, &M, &status, 0), -2);
	assert_int_equal(req_n(s, 101, &lim, &M, &status, 0), -1);
	assert_int_equal(status, 414);
	free(s);
	/* a line of exactly the limit, its CR in, its LF not yet */
	s = long_line_request(100, 1);
	assert_int_equal(req_n(s, 101, &lim, &M, &status, 0), -2);
	free(s);
	/* a bad byte early in an over-long line: still 414, whatever the split */
	s = long_line_request(300, 1);
	s[1] = '\x01';
	assert_int_equal(req_n(s, strlen(s), &lim, &M, &status, 1), -1);
	assert_int_equal(status, 414);
	free(s);
}

static char *
padded_request(size_t total)
{
	const char *head = "GET / HTTP/1.1\r\nHost: a\r\nX: ";
	size_t h = strlen(head);
	char *s = malloc(total + 1);

	assert_non_null(s);
	assert_true(total > h + 4);
	memcpy(s, head, h);
	memset(s + h, 'v', total - h - 4);
	memcpy(s + total - 4, "\r\n\r\n", 4);
	s[total] = '\0';
	return s;
}

static void
test_head_limit(void **state)
{
	struct h1_limits lim = {300, 100, 100};
	char *s;
	int status;

	(void)state;
	s = padded_request(300);
	assert_int_equal(req_n(s, 300, &lim, &M, &status, 1), 300);
	assert_int_equal(req_n(s, 299, &lim, &M, &status, 0), -2);
	free(s);
	s = padded_request(301);
	assert_int_equal(req_n(s, 301, &lim, &M, &status, 1), -1);
	assert_int_equal(status, 431);
	assert_int_equal(req_n(s, 300, &lim, &M, &status, 0), -2);
	free(s);
	/* a head that never ends: -2 up to the limit, 431 one past it */
	s = padded_request(1000);
	assert_int_equal(req_n(s, 300, &lim, &M, &status, 0), -2);
	assert_int_equal(req_n(s, 301, &lim, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	assert_int_equal(req_n(s, 1000, &lim, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	free(s);
}

static char *
many_headers(size_t count, size_t *len)
{
	const char *head = "GET / HTTP/1.1\r\nHost: a\r\n";
	size_t h = strlen(head), i, off;
	char *s = malloc(h + count * 16 + 3);

	assert_non_null(s);
	memcpy(s, head, h);
	off = h;
	for (i = 0; i < count; i++)
		off += (size_t)snprintf(s + off, 16, "X%05zu: v\r\n", i % 100000);
	memcpy(s + off, "\r\n", 3);
	*len = off + 2;
	return s;
}

static void
test_header_count_limit(void **state)
{
	struct h1_limits lim = {1 << 20, 1024, 10};
	struct h1_limits big = {1 << 20, 1024, 100000};   /* clamped to H1_MAX_HEADERS */
	size_t n;
	char *s;
	int status;

	(void)state;
	s = many_headers(9, &n);   /* 9 + Host = 10 */
	assert_int_equal(req_n(s, n, &lim, &M, &status, 1), (int)n);
	assert_int_equal(M.nheaders, 10);
	free(s);
	s = many_headers(10, &n);
	assert_int_equal(req_n(s, n, &lim, &M, &status, 1), -1);
	assert_int_equal(status, 431);
	free(s);
	s = many_headers(H1_MAX_HEADERS - 1, &n);
	assert_int_equal(req_n(s, n, &big, &M, &status, 0), (int)n);
	assert_int_equal(M.nheaders, H1_MAX_HEADERS);
	free(s);
	s = many_headers(10000, &n);
	assert_int_equal(req_n(s, n, &LIM, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	assert_int_equal(req_n(s, n, &big, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	free(s);
}

static void
test_huge_header_line(void **state)
{
	size_t n = 1 << 20;
	char *s = padded_request(n);
	int status;

	(void)state;
	assert_int_equal(req_n(s, n, &LIM, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	assert_int_equal(req_n(s, LIM.max_head_bytes + 1, &LIM, &M, &status, 0), -1);
	assert_int_equal(status, 431);
	assert_int_equal(req_n(s, LIM.max_head_bytes, &LIM, &M, &status, 0), -2);
	free(s);
}

/* ---- responses ---- */

static void
test_response_basic(void **state)
{
	(void)state;
	assert_int_equal(resp("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "GET", &M), 38);
	assert_int_equal(M.status, 200);
	assert_true(iov_eq(M.reason, M.reason_len, "OK"));
	assert_int_equal(M.framing, H1_BODY_LENGTH);
	assert_int_equal(M.content_length, 5);
	assert_int_equal(M.keep_alive, 1);
	assert_null(M.host);

	assert_true(resp("HTTP/1.1 404 Not \tFound \x80\r\nHost: x\r\n\r\n", "GET", &M) > 0);
	assert_true(iov_eq(M.reason, M.reason_len, "Not \tFound \x80"));
	assert_null(M.host);
	assert_int_equal(M.framing, H1_BODY_UNTIL_CLOSE);
	assert_int_equal(M.keep_alive, 0);

	assert_true(resp("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "GET", &M) > 0);
	assert_int_equal(M.reason_len, 0);
	assert_int_equal(M.framing, H1_BODY_NONE);
	assert_true(resp("HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\n", "GET", &M) > 0);
	assert_int_equal(M.reason_len, 0);
}

struct resp_case {
	const char *in;
	const char *method;
	int ok;
	enum h1_framing framing;
	uint64_t cl;
	int keep_alive;
};

static const struct resp_case RESP_CASES[] = {
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", 1, H1_BODY_CHUNKED, 0, 1},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n", "GET", 1,
	 H1_BODY_CHUNKED, 0, 0},
	{"HTTP/1.1 200 OK\r\n\r\n", "GET", 1, H1_BODY_UNTIL_CLOSE, 0, 0},
	{"HTTP/1.0 200 OK\r\n\r\n", "GET", 1, H1_BODY_UNTIL_CLOSE, 0, 0},
	{"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\n", "GET", 1, H1_BODY_LENGTH, 3, 0},
	{"HTTP/1.0 200 OK\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\n", "GET", 1,
	 H1_BODY_LENGTH, 3, 1},
	{"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HEAD", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 200 OK\r\n\r\n", "HEAD", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "head", 1, H1_BODY_LENGTH, 9, 1},
	{"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n", "GET", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", "GET", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 100 Continue\r\n\r\n", "POST", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", "GET", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 200 OK\r\n\r\n", "CONNECT", 1, H1_BODY_NONE, 0, 1},
	{"HTTP/1.1 407 Auth\r\nContent-Length: 4\r\n\r\n", "CONNECT", 1, H1_BODY_LENGTH, 4, 1},
	{"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", NULL, 1, H1_BODY_LENGTH, 4, 1},
	{"HTTP/1.1 599 X\r\n\r\n", "GET", 1, H1_BODY_UNTIL_CLOSE, 0, 0},
	/* refusals */
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 304 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", 0,
	 0, 0, 0},
	{"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 099 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 600 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 20 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 2000 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 2x0 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1  200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 O\x01K\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 O\x7fK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/2 200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/2.0 200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.2 200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"http/1.1 200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nX: y\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nX: y\r\n z\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nX : y\r\n\r\n", "GET", 0, 0, 0, 0},
	{"\r\nHTTP/1.1 200 OK\r\n\r\n", "GET", 0, 0, 0, 0},
	{"HTTP/1.1 200 OK\r\nX: y\r\r\n\r\n", "GET", 0, 0, 0, 0},
};

static void
test_response_table(void **state)
{
	size_t i;
	int r;

	(void)state;
	for (i = 0; i < sizeof(RESP_CASES) / sizeof(RESP_CASES[0]); i++) {
		const struct resp_case *c = &RESP_CASES[i];

		r = resp(c->in, c->method, &M);
		if (c->ok ? r != (int)strlen(c->in) : r != -1) {
			print_error("response case %zu: got %d\n", i, r);
			fail();
		}
		if (!c->ok)
			continue;
		if (M.framing != c->framing || M.content_length != c->cl || M.keep_alive != c->keep_alive) {
			print_error("response case %zu: framing %d cl %llu ka %d\n", i, (int)M.framing,
			            (unsigned long long)M.content_length, M.keep_alive);
			fail();
		}
	}
}

#define FOUR "HTTP/1.1 200 OK\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\n\r\n"
#define FIVE "HTTP/1.1 200 OK\r\nA: 1\r\nB: 1\r\nC: 1\r\nD: 1\r\nE: 1\r\n\r\n"

static void
test_response_limits(void **state)
{
	struct h1_limits lim = {300, 50, 4};
	char s[400];
	const char *err;

	(void)state;
	memset(s, 'x', sizeof(s));
	memcpy(s, "HTTP/1.1 200 ", 13);
	memcpy(s + 50, "\r\n\r\n", 4);   /* a 50-byte status line */
	assert_int_equal(h1_parse_response(s, 54, &lim, "GET", 3, &M, &err), 54);
	memcpy(s + 50, "x\r\n\r\n", 5);
	assert_int_equal(h1_parse_response(s, 55, &lim, "GET", 3, &M, &err), -1);
	assert_int_equal(h1_parse_response(s, 50, &lim, "GET", 3, &M, &err), -2);
	assert_int_equal(h1_parse_response(s, 51, &lim, "GET", 3, &M, &err), -1);

	assert_int_equal(h1_parse_response(FOUR, strlen(FOUR), &lim, "GET", 3, &M, &err),
	                 (int)strlen(FOUR));
	assert_int_equal(h1_parse_response(FIVE, strlen(FIVE), &lim, "GET", 3, &M, &err), -1);
	memcpy(s, "HTTP/1.1 200 OK\r\nX: ", 20);
	memset(s + 20, 'v', sizeof(s) - 20);
	assert_int_equal(h1_parse_response(s, 300, &lim, "GET", 3, &M, &err), -2);
	assert_int_equal(h1_parse_response(s, 301, &lim, "GET", 3, &M, &err), -1);
	memcpy(s + 296, "\r\n\r\n", 4);
	assert_int_equal(h1_parse_response(s, 300, &lim, "GET", 3, &M, &err), 300);
}

/* ---- chunked ---- */

struct dechunked {
	int ok;           /* 1 done, 0 need more at the end, -1 error */
	char data[4096];
	size_t data_len;
	char trailers[4096];
	size_t trailers_len;
	size_t consumed;
};

/*
 * Feeds <in>/<n> to a decoder the way a connection would, in pieces that end
 * at <splits> (ascending, < n), keeping unconsumed bytes for the next call.
 */
static void
dechunk(const char *in, size_t n, const size_t *splits, size_t nsplits, size_t max_trailers,
        struct dechunked *out)
{
	struct h1_chunked c;
	char pending[8192];
	size_t plen = 0, fed = 0, next, s = 0;
	const char *data, *tr, *err;
	size_t dlen, tlen;
	int r, done;

	memset(out, 0, sizeof(*out));
	h1_chunked_init(&c, max_trailers);
	assert_true(n <= sizeof(pending));
	for (;;) {
		next = s < nsplits ? splits[s++] : n;
		memcpy(pending + plen, in + fed, next - fed);
		plen += next - fed;
		fed = next;
		for (;;) {
			r = h1_chunked_decode(&c, pending, plen, &data, &dlen, &done, &tr, &tlen, &err);
			assert_int_not_equal(r, 0);
			if (r == -1) {
				assert_non_null(err);
				out->ok = -1;
				return;
			}
			if (r == -2)
				break;
			assert_true((size_t)r <= plen);
			if (dlen) {
				assert_true(data >= pending && data + dlen <= pending + r);
				assert_true(out->data_len + dlen <= sizeof(out->data));
				memcpy(out->data + out->data_len, data, dlen);
				out->data_len += dlen;
			}
			out->consumed += (size_t)r;
			if (done) {
				assert_true(tr >= pending && tr + tlen <= pending + r);
				memcpy(out->trailers, tr, tlen);
				out->trailers_len = tlen;
				out->ok = 1;
				/* and once done, it stays done */
				assert_int_equal(h1_chunked_decode(&c, pending + r, plen - r, &data, &dlen,
				                                   &done, &tr, &tlen, &err), -1);
				return;
			}
			memmove(pending, pending + r, plen - r);
			plen -= (size_t)r;
		}
		if (fed == n) {
			out->ok = 0;
			return;
		}
	}
}

static void
same_dechunked(const struct dechunked *a, const struct dechunked *b)
{
	assert_int_equal(a->ok, b->ok);
	if (a->ok < 0)
		return;
	assert_int_equal(a->data_len, b->data_len);
	assert_memory_equal(a->data, b->data, a->data_len);
	assert_int_equal(a->trailers_len, b->trailers_len);
	assert_memory_equal(a->trailers, b->trailers, a->trailers_len);
	assert_int_equal(a->consumed, b->consumed);
}

/* Whole, then split in two at every offset, then one byte at a time. */
static void
dechunk_all_ways(const char *in, size_t n, size_t max_trailers, struct dechunked *out)
{
	static struct dechunked other;
	size_t splits[8192], k;

	dechunk(in, n, NULL, 0, max_trailers, out);
	for (k = 1; k < n; k++) {
		dechunk(in, n, &k, 1, max_trailers, &other);
		same_dechunked(out, &other);
	}
	for (k = 1; k < n; k++)
		splits[k - 1] = k;
	dechunk(in, n, splits, n ? n - 1 : 0, max_trailers, &other);
	same_dechunked(out, &other);
}

struct chunk_case {
	const char *in;
	int ok;
	const char *data;
	const char *trailers;
};

static const struct chunk_case CHUNK_CASES[] = {
	{"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 1, "hello world", ""},
	{"0\r\n\r\n", 1, "", ""},
	{"5;a=b;c\r\nhello\r\n0;last\r\n\r\n", 1, "hello", ""},
	{"5 ; a = b\t;c=\"x\\\"y;z\"\r\nhello\r\n0\r\n\r\n", 1, "hello", ""},
	{"5;a=\"\"\r\nhello\r\n0\r\n\r\n", 1, "hello", ""},
	{"A\r\n0123456789\r\na\r\nabcdefghij\r\n0\r\n\r\n", 1, "0123456789abcdefghij", ""},
	{"005\r\nhello\r\n0000\r\n\r\n", 1, "hello", ""},
	{"0000000000000005\r\nhello\r\n0\r\n\r\n", 1, "hello", ""},
	{"1\r\nx\r\n1\r\ny\r\n1\r\nz\r\n0\r\n\r\n", 1, "xyz", ""},
	{"3\r\n\r\n\r\r\n0\r\n\r\n", 1, "\r\n\r", ""},
	{"5\r\nhello\r\n0\r\nX-T: 1\r\nY:2 \r\n\r\n", 1, "hello", "X-T: 1\r\nY:2 \r\n"},
	{"5\r\nhello\r\n0\r\nX: \x80\r\n\r\n", 1, "hello", "X: \x80\r\n"},
	/* incomplete */
	{"5\r\nhello\r\n0\r\n", 0, "hello", ""},
	{"5\r\nhel", 0, "hel", ""},
	{"10\r\nhello", 0, "hello", ""},
	/* refusals */
	{"5\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\n0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\n\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\nX: 1\n\r\n", -1, NULL, NULL},
	{"5\rhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhelloX\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\rX0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhell\r\n0\r\n\r\n", -1, NULL, NULL},
	{" 5\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"+5\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"-5\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"0x5\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5 \r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a \r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"g\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"00000000000000005\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"4000000000000001\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"ffffffffffffffff\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;=b\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=\"b\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=\"b\x01\"\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=b\x01\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=\"\\\x01\"\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=\"\\\"\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=b c\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5;a=b\"c\"\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5,a\r\nhello\r\n0\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\nX : 1\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\nX: 1\r\n y\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\n y\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\nX: \x01\r\n\r\n", -1, NULL, NULL},
	{"5\r\nhello\r\n0\r\nnocolon\r\n\r\n", -1, NULL, NULL},
};

static void
test_chunked_table(void **state)
{
	static struct dechunked d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(CHUNK_CASES) / sizeof(CHUNK_CASES[0]); i++) {
		const struct chunk_case *c = &CHUNK_CASES[i];

		dechunk_all_ways(c->in, strlen(c->in), 1024, &d);
		if (d.ok != c->ok) {
			print_error("chunk case %zu: got %d\n", i, d.ok);
			fail();
		}
		if (c->ok < 0)
			continue;
		assert_int_equal(d.data_len, strlen(c->data));
		assert_memory_equal(d.data, c->data, d.data_len);
		if (c->ok == 1) {
			assert_int_equal(d.consumed, strlen(c->in));
			assert_int_equal(d.trailers_len, strlen(c->trailers));
			assert_memory_equal(d.trailers, c->trailers, d.trailers_len);
		}
	}
}

static void
test_chunked_multi(void **state)
{
	static struct dechunked d;
	static char in[6000], want[4096];
	size_t n = 0, w = 0, i, len;

	(void)state;
	/* chunks of 1..40 bytes, hex sizes of mixed case, some extensions */
	for (i = 1; i <= 40; i++) {
		len = i;
		n += (size_t)snprintf(in + n, sizeof(in) - n, i % 3 ? "%zx\r\n" : "%zX;i=%zu\r\n", len, i);
		memset(in + n, 'a' + (int)(i % 26), len);
		memset(want + w, 'a' + (int)(i % 26), len);
		n += len;
		w += len;
		memcpy(in + n, "\r\n", 2);
		n += 2;
	}
	memcpy(in + n, "0\r\nT: v\r\n\r\n", 11);
	n += 11;
	dechunk_all_ways(in, n, 1024, &d);
	assert_int_equal(d.ok, 1);
	assert_int_equal(d.data_len, w);
	assert_memory_equal(d.data, want, w);
	assert_int_equal(d.trailers_len, 6);
	assert_int_equal(d.consumed, n);
}

static void
test_chunked_limits(void **state)
{
	static char in[8192];
	static struct dechunked d;
	struct h1_chunked c;
	const char *data, *tr, *err;
	size_t dlen, tlen, n;
	int done;

	(void)state;
	/* trailers exactly at the bound, and one byte past it */
	memcpy(in, "0\r\nX: 12345\r\n\r\n", 15);   /* field lines: 10 bytes */
	dechunk_all_ways(in, 15, 10, &d);
	assert_int_equal(d.ok, 1);
	assert_int_equal(d.trailers_len, 10);
	dechunk_all_ways(in, 15, 9, &d);
	assert_int_equal(d.ok, -1);
	dechunk_all_ways("0\r\n\r\n", 5, 0, &d);
	assert_int_equal(d.ok, 1);
	assert_int_equal(d.trailers_len, 0);
	dechunk_all_ways("0\r\nX:\r\n\r\n", 9, 0, &d);
	assert_int_equal(d.ok, -1);
	/* a trailer section that never ends is refused past the bound */
	memset(in, 'x', 200);
	memcpy(in, "0\r\nX: ", 6);
	h1_chunked_init(&c, 64);
	assert_int_equal(h1_chunked_decode(&c, in, 200, &data, &dlen, &done, &tr, &tlen, &err), 3);
	/* 66 bytes (64 of fields, 2 of final CRLF) without an end cannot end well */
	assert_int_equal(h1_chunked_decode(&c, in + 3, 65, &data, &dlen, &done, &tr, &tlen, &err), -2);
	assert_int_equal(h1_chunked_decode(&c, in + 3, 66, &data, &dlen, &done, &tr, &tlen, &err), -1);
	assert_non_null(err);
	assert_int_equal(h1_chunked_decode(&c, in + 3, 2, &data, &dlen, &done, &tr, &tlen, &err), -1);

	/* a chunk-size line of 4096 bytes with its CRLF passes; 4097 does not */
	memset(in, 'a', sizeof(in));
	memcpy(in, "1;x=", 4);
	memcpy(in + 4094, "\r\nZ\r\n0\r\n\r\n", 10);
	dechunk(in, 4104, NULL, 0, 0, &d);
	assert_int_equal(d.ok, 1);
	assert_int_equal(d.data_len, 1);
	memset(in, 'a', sizeof(in));
	memcpy(in, "1;x=", 4);
	memcpy(in + 4095, "\r\nZ\r\n0\r\n\r\n", 10);
	dechunk(in, 4105, NULL, 0, 0, &d);
	assert_int_equal(d.ok, -1);
	memset(in, 'a', sizeof(in));
	memcpy(in, "1;x=", 4);
	h1_chunked_init(&c, 0);
	assert_int_equal(h1_chunked_decode(&c, in, 4094, &data, &dlen, &done, &tr, &tlen, &err), -2);
	assert_int_equal(h1_chunked_decode(&c, in, 4095, &data, &dlen, &done, &tr, &tlen, &err), -1);

	/* the largest size is accepted, and data comes as it arrives */
	h1_chunked_init(&c, 0);
	n = strlen("4000000000000000\r\n");
	memcpy(in, "4000000000000000\r\nabc", n + 3);
	assert_int_equal(h1_chunked_decode(&c, in, n + 3, &data, &dlen, &done, &tr, &tlen, &err), (int)n + 3);
	assert_int_equal(dlen, 3);
	assert_ptr_equal(data, in + n);
	assert_int_equal(done, 0);
	assert_true(c.remaining == (UINT64_C(1) << 62) - 3);
	assert_int_equal(h1_chunked_decode(&c, in, 0, &data, &dlen, &done, &tr, &tlen, &err), -2);
	assert_int_equal(h1_chunked_decode(&c, "xy", 2, &data, &dlen, &done, &tr, &tlen, &err), 2);
	assert_int_equal(dlen, 2);
}

static void
test_chunked_error_after_data(void **state)
{
	struct h1_chunked c;
	const char *data, *tr, *err;
	size_t dlen, tlen;
	int done;
	const char *in = "3\r\nabcX";

	(void)state;
	/* the data before the bad byte is handed out; the error comes next call */
	h1_chunked_init(&c, 0);
	assert_int_equal(h1_chunked_decode(&c, in, 7, &data, &dlen, &done, &tr, &tlen, &err), 6);
	assert_int_equal(dlen, 3);
	assert_int_equal(h1_chunked_decode(&c, in + 6, 1, &data, &dlen, &done, &tr, &tlen, &err), -1);
	assert_non_null(err);
	/* and stays in error */
	assert_int_equal(h1_chunked_decode(&c, "\r\n", 2, &data, &dlen, &done, &tr, &tlen, &err), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_basic),
		cmocka_unit_test(test_request_obs_text_and_connect),
		cmocka_unit_test(test_request_table),
		cmocka_unit_test(test_request_nul),
		cmocka_unit_test(test_request_errors),
		cmocka_unit_test(test_request_framing),
		cmocka_unit_test(test_request_connection),
		cmocka_unit_test(test_hop_by_hop),
		cmocka_unit_test(test_request_line_limit),
		cmocka_unit_test(test_head_limit),
		cmocka_unit_test(test_header_count_limit),
		cmocka_unit_test(test_huge_header_line),
		cmocka_unit_test(test_response_basic),
		cmocka_unit_test(test_response_table),
		cmocka_unit_test(test_response_limits),
		cmocka_unit_test(test_chunked_table),
		cmocka_unit_test(test_chunked_multi),
		cmocka_unit_test(test_chunked_limits),
		cmocka_unit_test(test_chunked_error_after_data),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
