/*
 * tests/unit/proxy/test_h2conv_nv.c - HTTP/1.1 -> HTTP/2 heads (nv arrays,
 * never-indexed flags) and a round-trip property test: random HTTP/1.1
 * requests through h1 -> h2 -> h1 (test_h2conv.c has the h2 -> h1 side).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/codec/h2conv.h"

#define NV(n, v) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, sizeof(v) - 1, 0}
#define NVEND {NULL, NULL, 0, 0, 0}
#define MAXNV 12
#define OUT_CAP 4096

static const struct h1_limits LIM = {8192, 4096, 256};
static char OUT[OUT_CAP];
static struct h1_message M;

/* ---- h1 -> h2 ---- */

static nghttp2_nv NVA[64];
static char NVBUF[1024];

static void
nv_is(const struct h2conv_nvbuf *o, size_t i, const char *name, const char *value, uint8_t flags)
{
	assert_true(i < o->nvlen);
	if (o->nva[i].namelen != strlen(name) || memcmp(o->nva[i].name, name, strlen(name)) != 0 ||
	    o->nva[i].valuelen != strlen(value) || memcmp(o->nva[i].value, value, strlen(value)) != 0) {
		print_error("nv %zu: got %.*s: %.*s, want %s: %s\n", i, (int)o->nva[i].namelen,
		            o->nva[i].name, (int)o->nva[i].valuelen, o->nva[i].value, name, value);
		fail();
	}
	assert_int_equal(o->nva[i].flags, flags);
}

static void
parse_resp(const char *s)
{
	const char *err;

	assert_int_equal(h1_parse_response(s, strlen(s), &LIM, "GET", 3, &M, &err), (int)strlen(s));
}

static void
parse_req(const char *s)
{
	const char *err;
	int status;

	assert_int_equal(h1_parse_request(s, strlen(s), &LIM, &M, &err, &status), (int)strlen(s));
}

static void
test_response_to_nv(void **state)
{
	struct h2conv_nvbuf o = {NVA, 64, 0, NVBUF, sizeof(NVBUF), 0};
	const char *err;
	int r;

	(void)state;
	parse_resp("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close, X-Hop\r\n"
	           "X-Hop: 1\r\nKeep-Alive: timeout=5\r\nTransfer-Encoding: chunked\r\nSet-Cookie: a=1\r\n"
	           "Upgrade: h2c\r\nProxy-Connection: x\r\nTE: trailers\r\nSet-Cookie: b=2\r\n\r\n");
	r = h2conv_response_to_nv(&M, 1, 0, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 4);
	nv_is(&o, 0, ":status", "200", 0);
	nv_is(&o, 1, "content-type", "text/html", 0);
	nv_is(&o, 2, "set-cookie", "a=1", 0);
	nv_is(&o, 3, "set-cookie", "b=2", 0);

	parse_resp("HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Secret: s3cr3t\r\n\r\n");
	r = h2conv_response_to_nv(&M, 1, H2CONV_NV_NO_INDEX | H2CONV_NV_KEEP_CONTENT_LENGTH, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 3);
	nv_is(&o, 0, ":status", "201", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 1, "content-length", "2", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 2, "x-secret", "s3cr3t", NGHTTP2_NV_FLAG_NO_INDEX);
	r = h2conv_response_to_nv(&M, 1, 0, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 2);   /* content-length dropped without the flag */
	nv_is(&o, 1, "x-secret", "s3cr3t", 0);

	parse_resp("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
	r = h2conv_response_to_nv(&M, 0, H2CONV_NV_KEEP_CONTENT_LENGTH, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 1);
	r = h2conv_response_to_nv(&M, 1, 0, &o, &err);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(err, "body on a status that has none");

	parse_resp("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
	r = h2conv_response_to_nv(&M, 0, 0, &o, &err);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(err, "101 cannot be sent over HTTP/2");

	parse_resp("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n");
	o.nva_cap = 2;
	r = h2conv_response_to_nv(&M, 0, 0, &o, &err);
	assert_int_equal(r, SLUICE_ETOOBIG);
	o.nva_cap = 64;
	o.buf_cap = 4;
	r = h2conv_response_to_nv(&M, 0, 0, &o, &err);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_string_equal(err, "nv buffer too small");
}

static void
test_request_to_nv(void **state)
{
	struct h2conv_nvbuf o = {NVA, 64, 0, NVBUF, sizeof(NVBUF), 0};
	const char *err;
	int r;

	(void)state;
	parse_req("POST /p?q HTTP/1.1\r\nHost: Example.com\r\nUser-Agent: x\r\nContent-Length: 3\r\n"
	          "TE: deflate, trailers\r\nConnection: TE, keep-alive\r\nKeep-Alive: 5\r\n"
	          "Cookie: a=1; b=2\r\nAuthorization: Bearer s3cr3t\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, H2CONV_NV_NO_INDEX, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 9);
	nv_is(&o, 0, ":method", "POST", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 1, ":scheme", "https", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 2, ":authority", "Example.com", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 3, ":path", "/p?q", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 4, "user-agent", "x", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 5, "content-length", "3", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 6, "te", "trailers", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 7, "cookie", "a=1; b=2", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 8, "authorization", "Bearer s3cr3t", NGHTTP2_NV_FLAG_NO_INDEX);

	parse_req("GET /x HTTP/1.1\r\nHost: sandbox-said.com\r\nTE: gzip\r\nTransfer-Encoding: chunked\r\n\r\n");
	r = h2conv_request_to_nv(&M, "https", "api.example.com:8443", 0, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 4);
	nv_is(&o, 2, ":authority", "api.example.com:8443", 0);

	parse_req("OPTIONS * HTTP/1.1\r\nHost: a.com\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_int_equal(r, 0);
	nv_is(&o, 3, ":path", "*", 0);

	parse_req("GET /chat HTTP/1.1\r\nHost: a.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
	          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n");
	assert_int_equal(M.upgrade_websocket, 1);
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(err, "WebSocket upgrade needs extended CONNECT (RFC 8441)");
	r = h2conv_request_to_nv(&M, NULL, NULL, H2CONV_NV_EXTENDED_CONNECT, &o, &err);
	assert_int_equal(r, 0);
	assert_int_equal(o.nvlen, 6);
	nv_is(&o, 0, ":method", "CONNECT", 0);
	nv_is(&o, 4, ":protocol", "websocket", 0);
	nv_is(&o, 5, "sec-websocket-version", "13", 0);

	parse_req("CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:443\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(err, "CONNECT cannot be sent as an HTTP/2 request");
	parse_req("GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_string_equal(err, "request target is not origin-form");
	parse_req("GET / HTTP/1.0\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(err, "no authority");
	parse_req("GET / HTTP/1.1\r\nHost: a@b.com\r\n\r\n");
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_string_equal(err, "bad authority");
	parse_req("GET / HTTP/1.1\r\nHost: a.com\r\n\r\n");
	r = h2conv_request_to_nv(&M, "HTTPS", NULL, 0, &o, &err);
	assert_string_equal(err, "bad scheme");
	o.nva_cap = 3;
	r = h2conv_request_to_nv(&M, NULL, NULL, 0, &o, &err);
	assert_int_equal(r, SLUICE_ETOOBIG);
}

/* ---- round trip: h1 request -> h2 (to an upstream) -> h1 (as if from a client) ---- */

static uint32_t rng = 12345;

static uint32_t
rnd(uint32_t n)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 8) % n;
}

static const char *const METHODS[] = {"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS", "X-Y.Z~1"};
static const char *const SPECIAL[] = {"host", "content-length", "transfer-encoding", "connection", "keep-alive",
                                      "te", "upgrade", "cookie", "expect", "proxy-connection",
                                      "http2-settings", "sec-websocket-key"};

static int
special(const char *n, size_t len)
{
	size_t i, k;

	for (i = 0; i < sizeof(SPECIAL) / sizeof(SPECIAL[0]); i++) {
		if (strlen(SPECIAL[i]) != len)
			continue;
		for (k = 0; k < len && (n[k] | 0x20) == SPECIAL[i][k]; k++)
			;
		if (k == len)
			return 1;
	}
	return 0;
}

static size_t
gen_request(char *s, size_t cap, int *framing)
{
	static const char tchar[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
	static const char pchar[] = "abcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@%/?";
	size_t n = 0, i, k, nh = rnd(12);
	char name[16];

	n += (size_t)snprintf(s + n, cap - n, "%s /", METHODS[rnd(8)]);
	for (i = rnd(30); i > 0; i--)
		s[n++] = pchar[rnd(sizeof(pchar) - 1)];
	n += (size_t)snprintf(s + n, cap - n, " HTTP/1.1\r\nHost: example.com\r\n");
	for (k = 0; k < nh; k++) {
		size_t nl = 1 + rnd(12), vl = rnd(20);

		for (i = 0; i < nl; i++)
			name[i] = tchar[rnd(sizeof(tchar) - 1)];
		if (special(name, nl))
			continue;
		memcpy(s + n, name, nl);
		n += nl;
		s[n++] = ':';
		s[n++] = ' ';
		for (i = 0; i < vl; i++) {
			unsigned char c = (unsigned char)(0x20 + rnd(0x100 - 0x20));

			if (c == 0x7f || ((i == 0 || i == vl - 1) && c == ' '))
				c = 'v';
			if (rnd(20) == 0 && i > 0 && i < vl - 1)
				c = '\t';
			s[n++] = (char)c;
		}
		s[n++] = '\r';
		s[n++] = '\n';
	}
	*framing = (int)rnd(3);
	if (*framing == 1)
		n += (size_t)snprintf(s + n, cap - n, "Content-Length: %u\r\n", 1 + rnd(100000));
	else if (*framing == 2)
		n += (size_t)snprintf(s + n, cap - n, "Transfer-Encoding: chunked\r\n");
	if (rnd(4) == 0)
		n += (size_t)snprintf(s + n, cap - n, "Cookie: a=%u; b=2\r\n", rnd(1000));
	n += (size_t)snprintf(s + n, cap - n, "\r\n");
	return n;
}

static int
name_ieq(const char *a, size_t an, const char *b, size_t bn)
{
	size_t i;

	if (an != bn)
		return 0;
	for (i = 0; i < an; i++)
		if ((a[i] | 0x20) != (b[i] | 0x20) && a[i] != b[i])
			return 0;
	return 1;
}

static void
test_round_trip(void **state)
{
	static char in[4096];
	static struct h1_message m1;
	struct h2conv_nvbuf o = {NVA, 64, 0, NVBUF, sizeof(NVBUF), 0};
	struct h2conv_req_opts ro = {"example.com", "https", 64, 0, 0};
	struct h2conv_request info;
	struct h2conv_err e;
	const char *err;
	size_t len, outlen, i, j;
	int iter, framing, status, r;

	(void)state;
	for (iter = 0; iter < 3000; iter++) {
		len = gen_request(in, sizeof(in), &framing);
		r = h1_parse_request(in, len, &LIM, &m1, &err, &status);
		if (r != (int)len) {
			print_error("generator made a bad request (%s):\n%.*s\n", err, (int)len, in);
			fail();
		}
		r = h2conv_request_to_nv(&m1, NULL, NULL, 0, &o, &err);
		assert_int_equal(r, 0);
		ro.end_stream = framing == 0;
		r = h2conv_request_to_h1(o.nva, o.nvlen, &ro, OUT, OUT_CAP, &outlen, &info, &e);
		if (r != 0) {
			print_error("refused (%s):\n%.*s\n", e.reason, (int)len, in);
			fail();
		}
		r = h1_parse_request(OUT, outlen, &LIM, &M, &err, &status);
		assert_int_equal(r, (int)outlen);
		assert_int_equal(M.method_len, m1.method_len);
		assert_memory_equal(M.method, m1.method, m1.method_len);
		assert_int_equal(M.target_len, m1.target_len);
		assert_memory_equal(M.target, m1.target, m1.target_len);
		assert_int_equal(M.framing, m1.framing);
		assert_true(M.content_length == m1.content_length);
		assert_int_equal(M.host->value_len, m1.host->value_len);
		assert_memory_equal(M.host->value, m1.host->value, m1.host->value_len);
		/* the other fields, in order, names case-insensitively, values exactly */
		for (i = 0, j = 0;; i++, j++) {
			while (i < m1.nheaders && special(m1.headers[i].name, m1.headers[i].name_len))
				i++;
			while (j < M.nheaders && special(M.headers[j].name, M.headers[j].name_len))
				j++;
			if (i == m1.nheaders || j == M.nheaders)
				break;
			assert_true(name_ieq(m1.headers[i].name, m1.headers[i].name_len, M.headers[j].name,
			                     M.headers[j].name_len));
			assert_int_equal(m1.headers[i].value_len, M.headers[j].value_len);
			assert_memory_equal(m1.headers[i].value, M.headers[j].value, M.headers[j].value_len);
		}
		assert_int_equal(i, m1.nheaders);
		assert_int_equal(j, M.nheaders);
		if (h1_find_header(&m1, "cookie") != NULL) {
			const struct h1_header *c1 = h1_find_header(&m1, "cookie"), *c2 = h1_find_header(&M, "cookie");

			assert_non_null(c2);
			assert_int_equal(c1->value_len, c2->value_len);
			assert_memory_equal(c1->value, c2->value, c1->value_len);
		}
	}
}

/* ---- trailer lines -> nv ---- */

static int
trailers(const char *s, size_t len, unsigned flags, struct h2conv_nvbuf *o, const char **err)
{
	o->nva = NVA;
	o->nva_cap = 64;
	o->buf = NVBUF;
	o->buf_cap = sizeof(NVBUF);
	return h2conv_trailers_to_nv(s, len, flags, o, err);
}

static void
test_trailers_to_nv(void **state)
{
	struct h2conv_nvbuf o;
	const char *err;
	const char *in = "X-Checksum: abc\r\nGrpc-Status:0\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"
	                 "Host: evil\r\nTE: trailers\r\nTrailer: x\r\nConnection: close\r\nKeep-Alive: 1\r\n"
	                 "Proxy-Connection: x\r\nUpgrade: h2c\r\nHTTP2-Settings: AAA\r\nx-a:  v w \t\r\nX-Empty:\r\n"
	                 "x-tab: a\tb\r\nx-8bit: \xc3\xa9\r\n";

	(void)state;
	assert_int_equal(trailers(in, strlen(in), 0, &o, &err), 0);
	assert_null(err);
	assert_int_equal(o.nvlen, 6);
	nv_is(&o, 0, "x-checksum", "abc", 0);
	nv_is(&o, 1, "grpc-status", "0", 0);
	nv_is(&o, 2, "x-a", "v w", 0);
	nv_is(&o, 3, "x-empty", "", 0);
	nv_is(&o, 4, "x-tab", "a\tb", 0);
	nv_is(&o, 5, "x-8bit", "\xc3\xa9", 0);
	/* values are borrowed from the lines, names lower-cased into the buffer */
	assert_ptr_equal(o.nva[0].value, (const uint8_t *)in + 12);
	assert_ptr_equal(o.nva[0].name, (const uint8_t *)NVBUF);

	/* never-indexed when asked */
	assert_int_equal(trailers("A: 1\r\nB: 2\r\n", 12, H2CONV_NV_NO_INDEX, &o, &err), 0);
	assert_int_equal(o.nvlen, 2);
	nv_is(&o, 0, "a", "1", NGHTTP2_NV_FLAG_NO_INDEX);
	nv_is(&o, 1, "b", "2", NGHTTP2_NV_FLAG_NO_INDEX);

	/* empty section, and one where everything is dropped */
	assert_int_equal(trailers("", 0, 0, &o, &err), 0);
	assert_int_equal(o.nvlen, 0);
	assert_int_equal(trailers("content-length: 1\r\n", 19, 0, &o, &err), 0);
	assert_int_equal(o.nvlen, 0);
}

static void
test_trailers_to_nv_refused(void **state)
{
	static const struct {
		const char *in;
		size_t len;  /* 0: strlen */
		const char *why;
	} cases[] = {
		{"bad name: x\r\n", 0, "bad trailer field name"},
		{"x-a : 1\r\n", 0, "bad trailer field name"},
		{": 1\r\n", 0, "empty trailer field name"},
		{"x-a 1\r\n", 0, "bad trailer field name"},
		{"x-a\r\n", 0, "bad trailer field name"},
		{"x(a): 1\r\n", 0, "bad trailer field name"},
		{"x-a: 1\r\n continued\r\n", 0, "obsolete line folding in trailers"},
		{"\tx-a: 1\r\n", 0, "obsolete line folding in trailers"},
		{"x-a: 1\nx-b: 2\r\n", 0, "bare CR or LF in trailers"},
		{"x-a: 1\rx-b: 2\r\n", 0, "bare CR or LF in trailers"},
		{"x-a: 1\r", 0, "bare CR or LF in trailers"},
		{"x-a: 1", 0, "trailer line without CRLF"},
		{"x-a: 1\r\n\r\n", 0, "empty trailer line"},
		{"x-a: 1\0z\r\n", 11, "NUL in trailer line"},
		{"x-a: 1\x01z\r\n", 0, "control byte in trailer value"},
		{"x-a: 1\x7fz\r\n", 0, "control byte in trailer value"},
		{"x-\x80: 1\r\n", 0, "bad trailer field name"},
	};
	struct h2conv_nvbuf o;
	const char *err;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = cases[i].len ? cases[i].len : strlen(cases[i].in);

		err = NULL;
		if (trailers(cases[i].in, len, 0, &o, &err) != SLUICE_EINVAL || err == NULL ||
		    strcmp(err, cases[i].why) != 0) {
			print_error("case %zu: err %s, want %s\n", i, err ? err : "(none)", cases[i].why);
			fail();
		}
	}
	/* bounds: the nv array and the name buffer */
	o = (struct h2conv_nvbuf){NVA, 1, 0, NVBUF, sizeof(NVBUF), 0};
	assert_int_equal(h2conv_trailers_to_nv("a: 1\r\nb: 2\r\n", 12, 0, &o, &err), SLUICE_ETOOBIG);
	assert_string_equal(err, "nv buffer too small");
	o = (struct h2conv_nvbuf){NVA, 8, 0, NVBUF, 4, 0};
	assert_int_equal(h2conv_trailers_to_nv("abcde: 1\r\n", 10, 0, &o, &err), SLUICE_ETOOBIG);
	o = (struct h2conv_nvbuf){NVA, 8, 0, NVBUF, 5, 0};
	assert_int_equal(h2conv_trailers_to_nv("abcde: 1\r\n", 10, 0, &o, &err), 0);
	nv_is(&o, 0, "abcde", "1", 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_response_to_nv),
		cmocka_unit_test(test_request_to_nv),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_trailers_to_nv),
		cmocka_unit_test(test_trailers_to_nv_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
