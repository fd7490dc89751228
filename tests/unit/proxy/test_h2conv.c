/*
 * tests/unit/proxy/test_h2conv.c - HTTP/2 <-> HTTP/1.1 head translation.
 *
 * Every accepted h2 -> h1 output is compared byte for byte and re-parsed with
 * h1_parse_request / h1_parse_response / h1_chunked_decode; every refusal is
 * checked for its exact return code, status, class and reason
 * (test_h2conv_nv.c has the h1 -> h2 side and the round trip).
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

static size_t
nv_count(const nghttp2_nv *nv)
{
	size_t n = 0;

	while (n < MAXNV && nv[n].name != NULL)
		n++;
	return n;
}

static int
iov_is(struct sluice_iov v, const char *lit)
{
	return v.len == strlen(lit) && memcmp(v.base, lit, v.len) == 0;
}

/* ---- h2 -> h1 requests ---- */

struct rcase {
	const char *what;
	nghttp2_nv nv[MAXNV];
	int end_stream;
	const char *sni;
	int ret, status, malformed;
	const char *reason;
};

#define B4 NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "example.com")

static const struct rcase REFUSE[] = {
	{"pseudo after regular", {NV(":method", "GET"), NV(":scheme", "https"), NV("x", "1"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "pseudo-header after regular field"},
	{"unknown pseudo", {B4, NV(":foo", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "unknown pseudo-header"},
	{":status in request", {NV(":status", "200"), B4, NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "unknown pseudo-header"},
	{"duplicate :path", {B4, NV(":path", "/x"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "duplicate pseudo-header"},
	{"duplicate :authority", {B4, NV(":authority", "example.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "duplicate pseudo-header"},
	{"missing :method", {NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "missing :method"},
	{"missing :scheme", {NV(":method", "GET"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "missing :scheme"},
	{"missing :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "missing :path"},
	{"no authority", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "missing :authority and host"},
	{"empty :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", ""), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "empty :path"},
	{"* without OPTIONS", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "*"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "'*' :path without OPTIONS"},
	{"relative :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "a/b"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, ":path not origin-form"},
	{"absolute :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "https://b.com/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, ":path not origin-form"},
	{"space in :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/a HTTP/1.1"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in :path"},
	{"# in :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/a#frag"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in :path"},
	{"tab in :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/a\tb"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in :path"},
	{"non-ASCII :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/\xc3\xa9"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in :path"},
	{"CRLF in :path", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/ HTTP/1.1\r\nX: y"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "CR, LF or NUL in field value"},
	{"CRLF in :method", {NV(":method", "GET / HTTP/1.1\r\n"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "CR, LF or NUL in field value"},
	{"space in :method", {NV(":method", "GE T"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :method"},
	{"empty :method", {NV(":method", ""), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :method"},
	{"long :method", {NV(":method", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 0, "method too long"},
	{"uppercase name", {B4, NV("X-Foo", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "uppercase field name"},
	{"space in name", {B4, NV("x foo", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in field name"},
	{"colon in name", {B4, NV("x:y", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in field name"},
	{"NUL in name", {B4, NV("x\0y", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad byte in field name"},
	{"empty name", {B4, NV("", "1"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "empty field name"},
	{"CR in value", {B4, NV("x", "a\rb"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "CR, LF or NUL in field value"},
	{"LF in value", {B4, NV("x", "a\nTransfer-Encoding: chunked"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "CR, LF or NUL in field value"},
	{"NUL in value", {B4, NV("x", "a\0b"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "CR, LF or NUL in field value"},
	{"CTL in value", {B4, NV("x", "a\x01" "b"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "control byte in field value"},
	{"DEL in value", {B4, NV("x", "a\x7f"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "control byte in field value"},
	{"leading space", {B4, NV("x", " a"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "whitespace around field value"},
	{"trailing tab", {B4, NV("x", "a\t"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "whitespace around field value"},
	{"connection", {B4, NV("connection", "close"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "connection-specific field"},
	{"keep-alive", {B4, NV("keep-alive", "timeout=5"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "connection-specific field"},
	{"proxy-connection", {B4, NV("proxy-connection", "keep-alive"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "connection-specific field"},
	{"transfer-encoding", {B4, NV("transfer-encoding", "chunked"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "connection-specific field"},
	{"upgrade h2c", {B4, NV("upgrade", "h2c"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "connection-specific field"},
	{"te gzip", {B4, NV("te", "gzip"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "te other than trailers"},
	{"te list", {B4, NV("te", "trailers, gzip"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "te other than trailers"},
	{"cl letters", {B4, NV("content-length", "abc"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "bad content-length"},
	{"cl empty", {B4, NV("content-length", ""), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "bad content-length"},
	{"cl sign", {B4, NV("content-length", "+5"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "bad content-length"},
	{"cl list", {B4, NV("content-length", "5, 5"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "bad content-length"},
	{"cl differing", {B4, NV("content-length", "5"), NV("content-length", "6"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "differing content-length"},
	{"cl too large", {B4, NV("content-length", "9007199254740993"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 0, "content-length too large"},
	{"cl overflow", {B4, NV("content-length", "99999999999999999999999999999"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 0, "content-length too large"},
	{"cl without DATA", {B4, NV("content-length", "5"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "content-length differs from the DATA sent"},
	{"authority vs host", {B4, NV("host", "evil.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 421, 0, ":authority and host differ"},
	{"authority vs host port", {B4, NV("host", "example.com:8443"), NVEND}, 1, NULL, SLUICE_EINVAL, 421, 0, ":authority and host differ"},
	{"authority vs SNI", {B4, NVEND}, 1, "other.com", SLUICE_EINVAL, 421, 0, ":authority differs from the TLS server name"},
	{"host vs SNI", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV("host", "evil.com"), NVEND}, 1, "example.com", SLUICE_EINVAL, 421, 0, ":authority differs from the TLS server name"},
	{"IP authority vs SNI", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "127.0.0.1"), NVEND}, 1, "example.com", SLUICE_EINVAL, 421, 0, ":authority differs from the TLS server name"},
	{"userinfo", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "user@example.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :authority"},
	{"space in authority", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a .com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :authority"},
	{"empty authority", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", ""), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :authority"},
	{"bad port", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com:99999"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad :authority"},
	{"bad host", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV("host", "a.com/x"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "bad host"},
	{"duplicate host", {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"), NV("host", "a.com"), NV("host", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 1, "duplicate host"},
	{"plain CONNECT", {NV(":method", "CONNECT"), NV(":authority", "a.com:443"), NVEND}, 0, NULL, SLUICE_EINVAL, 501, 0, "CONNECT is not supported over HTTP/2"},
	{"CONNECT other protocol", {NV(":method", "CONNECT"), NV(":protocol", "connect-udp"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 0, NULL, SLUICE_EINVAL, 501, 0, "unsupported :protocol"},
	{":protocol on GET", {B4, NV(":protocol", "websocket"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, ":protocol without CONNECT"},
	{"ws without authority", {NV(":method", "CONNECT"), NV(":protocol", "websocket"), NV(":scheme", "https"), NV(":path", "/"), NV("host", "a.com"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 1, "extended CONNECT without :authority"},
	{"ws content-length", {NV(":method", "CONNECT"), NV(":protocol", "websocket"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NV("content-length", "5"), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 0, "content-length on extended CONNECT"},
	{"ws end_stream", {NV(":method", "CONNECT"), NV(":protocol", "websocket"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 0, "extended CONNECT ended with its HEADERS"},
	{"ws key", {NV(":method", "CONNECT"), NV(":protocol", "websocket"), NV(":scheme", "https"), NV(":path", "/"), NV(":authority", "a.com"), NV("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="), NVEND}, 0, NULL, SLUICE_EINVAL, 400, 0, "sec-websocket-key on extended CONNECT"},
	{"http scheme", {NV(":method", "GET"), NV(":scheme", "http"), NV(":path", "/"), NV(":authority", "a.com"), NVEND}, 1, NULL, SLUICE_EINVAL, 400, 0, "unexpected :scheme"},
	{"expect other", {B4, NV("expect", "200-ok"), NVEND}, 1, NULL, SLUICE_EINVAL, 417, 0, "unsupported expect"},
};

static int
run_req(const nghttp2_nv *nv, size_t n, int end_stream, const char *sni, size_t cap, size_t *len,
        struct h2conv_request *info, struct h2conv_err *e)
{
	struct h2conv_req_opts o = {sni, NULL, 100, end_stream, 0};

	return h2conv_request_to_h1(nv, n, &o, OUT, cap, len, info, e);
}

static void
test_request_refusals(void **state)
{
	struct h2conv_request info;
	struct h2conv_err e;
	size_t i, len;
	int r;

	(void)state;
	for (i = 0; i < sizeof(REFUSE) / sizeof(REFUSE[0]); i++) {
		const struct rcase *c = &REFUSE[i];

		r = run_req(c->nv, nv_count(c->nv), c->end_stream, c->sni, OUT_CAP, &len, &info, &e);
		if (r != c->ret || e.status != c->status || e.malformed != c->malformed ||
		    e.reason == NULL || strcmp(e.reason, c->reason) != 0) {
			print_error("case '%s': got %d %d %d '%s'\n", c->what, r, e.status, e.malformed,
			            e.reason ? e.reason : "(null)");
			fail();
		}
		assert_int_equal(len, 0);
	}
}

/* Translates, compares with <want>, and checks h1_parse_request agrees. */
static void
req_ok(const nghttp2_nv *nv, int end_stream, const char *sni, const char *want,
       struct h2conv_request *info)
{
	struct h2conv_err e;
	const char *err;
	size_t len;
	int r, status;

	r = run_req(nv, nv_count(nv), end_stream, sni, OUT_CAP, &len, info, &e);
	if (r != 0) {
		print_error("refused: %s\n", e.reason);
		fail();
	}
	if (len != strlen(want) || memcmp(OUT, want, len) != 0) {
		print_error("got:\n%.*s\nwant:\n%s\n", (int)len, OUT, want);
		fail();
	}
	r = h1_parse_request(OUT, len, &LIM, &M, &err, &status);
	assert_int_equal(r, (int)len);
	assert_int_equal(M.method_len, info->method.len);
	assert_memory_equal(M.method, info->method.base, M.method_len);
	assert_int_equal(M.target_len, info->path.len);
	assert_memory_equal(M.target, info->path.base, M.target_len);
	assert_non_null(M.host);
	assert_int_equal(M.host->value_len, info->authority.len);
	assert_int_equal(M.nheaders, info->nfields);
	assert_true(info->nfields <= nv_count(nv));
	if (info->content_length > 0)
		assert_int_equal(M.framing, H1_BODY_LENGTH);
	else if (info->chunked)
		assert_int_equal(M.framing, H1_BODY_CHUNKED);
	else
		assert_int_equal(M.framing, H1_BODY_NONE);
}

static void
test_request_get(void **state)
{
	static const nghttp2_nv nv[] = {NV(":method", "GET"), NV(":scheme", "https"),
	                                NV(":authority", "Example.COM"), NV(":path", "/a?b=1"),
	                                NV("user-agent", "curl/8.0 (x\ty)"), NV("accept", "*/*"),
	                                NV("x-empty", ""), NV("x-obs", "caf\xc3\xa9"), NVEND};
	struct h2conv_request info;

	(void)state;
	req_ok(nv, 1, "example.com.",
	       "GET /a?b=1 HTTP/1.1\r\nHost: Example.COM\r\nuser-agent: curl/8.0 (x\ty)\r\n"
	       "accept: */*\r\nx-empty: \r\nx-obs: caf\xc3\xa9\r\n\r\n",
	       &info);
	assert_true(iov_is(info.method, "GET"));
	assert_true(iov_is(info.path, "/a?b=1"));
	assert_true(iov_is(info.authority, "Example.COM"));
	assert_string_equal(info.host, "example.com");
	assert_int_equal(info.port, 443);
	assert_int_equal(info.content_length, -1);
	assert_int_equal(info.has_body, 0);
	assert_int_equal(info.chunked, 0);
	assert_int_equal(info.websocket, 0);
	assert_int_equal(info.te_trailers, 0);
	assert_int_equal(info.nfields, 5);
}

static void
test_request_bodies(void **state)
{
	static const nghttp2_nv cl[] = {NV(":method", "POST"), NV(":scheme", "https"),
	                                NV(":authority", "example.com:8443"), NV(":path", "/p"),
	                                NV("content-length", "007"), NV("content-type", "text/plain"),
	                                NV("content-length", "7"), NVEND};
	static const nghttp2_nv chunk[] = {NV(":method", "POST"), NV(":scheme", "https"),
	                                   NV(":authority", "example.com"), NV(":path", "/p"),
	                                   NV("te", "trailers"), NV("content-type", "application/grpc"), NVEND};
	static const nghttp2_nv zero[] = {NV(":method", "PUT"), NV(":scheme", "https"),
	                                  NV(":authority", "example.com"), NV(":path", "/p"),
	                                  NV("content-length", "0"), NVEND};
	struct h2conv_request info;

	(void)state;
	/* port ignored against the SNI; equal content-lengths collapse into one, normalised */
	req_ok(cl, 0, "example.com",
	       "POST /p HTTP/1.1\r\nHost: example.com:8443\r\ncontent-type: text/plain\r\n"
	       "Content-Length: 7\r\n\r\n",
	       &info);
	assert_int_equal(info.content_length, 7);
	assert_int_equal(info.port, 8443);
	assert_int_equal(info.has_body, 1);
	req_ok(chunk, 0, NULL,
	       "POST /p HTTP/1.1\r\nHost: example.com\r\nte: trailers\r\ncontent-type: application/grpc\r\n"
	       "Transfer-Encoding: chunked\r\n\r\n",
	       &info);
	assert_int_equal(info.chunked, 1);
	assert_int_equal(info.te_trailers, 1);
	assert_int_equal(info.content_length, -1);
	req_ok(zero, 1, NULL, "PUT /p HTTP/1.1\r\nHost: example.com\r\nContent-Length: 0\r\n\r\n", &info);
	assert_int_equal(info.content_length, 0);
	assert_int_equal(info.has_body, 0);
}

static void
test_request_cookies_host(void **state)
{
	static const nghttp2_nv ck[] = {B4, NV("cookie", "a=1"), NV("x", "y"), NV("cookie", ""),
	                                NV("cookie", "b=2"), NV("z", "w"), NVEND};
	static const nghttp2_nv host[] = {NV(":method", "GET"), NV(":scheme", "https"), NV(":path", "/"),
	                                  NV("accept", "*/*"), NV("host", "example.com"), NVEND};
	static const nghttp2_nv both[] = {B4, NV("host", "EXAMPLE.com:443"), NV("expect", "100-continue"),
	                                  NVEND};
	static const nghttp2_nv opt[] = {NV(":method", "OPTIONS"), NV(":scheme", "https"), NV(":path", "*"),
	                                 NV(":authority", "[::1]:8443"), NVEND};
	struct h2conv_request info;

	(void)state;
	req_ok(ck, 1, NULL, "GET / HTTP/1.1\r\nHost: example.com\r\nx: y\r\nz: w\r\ncookie: a=1; b=2\r\n\r\n",
	       &info);
	req_ok(host, 1, "example.com", "GET / HTTP/1.1\r\nHost: example.com\r\naccept: */*\r\n\r\n", &info);
	assert_true(iov_is(info.authority, "example.com"));
	/* host agrees with :authority (case and default port aside): one Host line, from :authority */
	req_ok(both, 0, NULL,
	       "GET / HTTP/1.1\r\nHost: example.com\r\nexpect: 100-continue\r\n"
	       "Transfer-Encoding: chunked\r\n\r\n",
	       &info);
	req_ok(opt, 1, NULL, "OPTIONS * HTTP/1.1\r\nHost: [::1]:8443\r\n\r\n", &info);
	assert_string_equal(info.host, "::1");
	assert_int_equal(info.port, 8443);
}

static void
test_request_websocket(void **state)
{
	static const nghttp2_nv ws[] = {NV(":method", "CONNECT"), NV(":protocol", "websocket"),
	                                NV(":scheme", "https"), NV(":path", "/chat?x"),
	                                NV(":authority", "example.com"), NV("sec-websocket-version", "13"),
	                                NV("origin", "https://example.com"), NVEND};
	static const nghttp2_nv ws2[] = {NV(":method", "CONNECT"), NV(":protocol", "websocket"),
	                                 NV(":scheme", "https"), NV(":path", "/chat"),
	                                 NV(":authority", "example.com"), NVEND};
	struct h2conv_req_opts o = {"example.com", "https", 100, 0, 1};
	struct h2conv_request info;
	struct h2conv_err e;
	const char *err, *want = "GET /chat HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\n"
	                         "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ";
	size_t len;
	int r, status;

	(void)state;
	req_ok(ws, 0, NULL,
	       "GET /chat?x HTTP/1.1\r\nHost: example.com\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
	       "sec-websocket-version: 13\r\norigin: https://example.com\r\n\r\n",
	       &info);
	assert_int_equal(info.websocket, 1);
	assert_int_equal(info.ws_key_generated, 0);
	assert_int_equal(M.upgrade_websocket, 1);
	assert_int_equal(M.framing, H1_BODY_NONE);

	r = h2conv_request_to_h1(ws2, nv_count(ws2), &o, OUT, OUT_CAP, &len, &info, &e);
	assert_int_equal(r, 0);
	assert_int_equal(len, strlen(want) + H2CONV_WS_KEY_LEN + 4);
	assert_memory_equal(OUT, want, strlen(want));
	assert_memory_equal(OUT + strlen(want) + H2CONV_WS_KEY_LEN - 2, "==\r\n\r\n", 6);
	assert_int_equal(info.ws_key_generated, 1);
	r = h1_parse_request(OUT, len, &LIM, &M, &err, &status);
	assert_int_equal(r, (int)len);
	assert_int_equal(M.upgrade_websocket, 1);
	assert_non_null(h1_find_header(&M, "sec-websocket-key"));
	assert_int_equal(h1_find_header(&M, "sec-websocket-key")->value_len, H2CONV_WS_KEY_LEN);
}

static void
test_request_bounds(void **state)
{
	static const nghttp2_nv nv[] = {B4, NV("a", "1"), NV("b", "2"), NVEND};
	struct h2conv_req_opts o = {NULL, NULL, 5, 1, 0};
	struct h2conv_request info;
	struct h2conv_err e;
	const char *want = "GET / HTTP/1.1\r\nHost: example.com\r\na: 1\r\nb: 2\r\n\r\n";
	size_t len, cap;
	int r;

	(void)state;
	r = h2conv_request_to_h1(nv, 6, &o, OUT, OUT_CAP, &len, &info, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_int_equal(e.status, 431);
	assert_string_equal(e.reason, "too many header fields");
	o.max_fields = 6;
	/* every capacity below the exact size is refused, without writing past it */
	for (cap = 0; cap < strlen(want); cap++) {
		memset(OUT, 'Z', sizeof(OUT));
		r = h2conv_request_to_h1(nv, 6, &o, OUT, cap, &len, &info, &e);
		assert_int_equal(r, SLUICE_ETOOBIG);
		assert_int_equal(e.status, 431);
		assert_string_equal(e.reason, "request head too large");
		assert_int_equal(OUT[cap], 'Z');
	}
	r = h2conv_request_to_h1(nv, 6, &o, OUT, cap, &len, &info, &e);
	assert_int_equal(r, 0);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(OUT, want, len);
	/* max_fields is capped at H2CONV_MAX_FIELDS */
	o.max_fields = SIZE_MAX;
	r = h2conv_request_to_h1(nv, H2CONV_MAX_FIELDS + 1, &o, OUT, OUT_CAP, &len, &info, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
}

/* ---- h2 -> h1 responses and trailers ---- */

static int
run_resp(const nghttp2_nv *nv, int end_stream, const char *method, size_t *len,
         struct h2conv_response *info, struct h2conv_err *e)
{
	struct h2conv_resp_opts o = {100, end_stream, method, method ? strlen(method) : 0};

	return h2conv_response_to_h1(nv, nv_count(nv), &o, OUT, OUT_CAP, len, info, e);
}

static void
resp_ok(const nghttp2_nv *nv, int end_stream, const char *method, const char *want,
        enum h1_framing framing)
{
	struct h2conv_response info;
	struct h2conv_err e;
	const char *err;
	size_t len;
	int r;

	r = run_resp(nv, end_stream, method, &len, &info, &e);
	if (r != 0) {
		print_error("refused: %s\n", e.reason);
		fail();
	}
	if (len != strlen(want) || memcmp(OUT, want, len) != 0) {
		print_error("got:\n%.*s\nwant:\n%s\n", (int)len, OUT, want);
		fail();
	}
	assert_int_equal(info.framing, framing);
	r = h1_parse_response(OUT, len, &LIM, method, method ? strlen(method) : 0, &M, &err);
	assert_int_equal(r, (int)len);
	assert_int_equal(M.status, info.status);
	assert_int_equal(M.framing, framing);
	assert_int_equal(M.nheaders, info.nfields);
}

static void
resp_refused(const nghttp2_nv *nv, int end_stream, const char *method, const char *reason)
{
	struct h2conv_response info;
	struct h2conv_err e;
	size_t len;
	int r;

	r = run_resp(nv, end_stream, method, &len, &info, &e);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_int_equal(e.status, 400);
	assert_int_equal(e.malformed, 1);
	assert_string_equal(e.reason, reason);
}

static void
test_response_ok(void **state)
{
	static const nghttp2_nv cl[] = {NV(":status", "200"), NV("content-type", "text/plain"),
	                                NV("content-length", "5"), NV("set-cookie", "a=1"), NVEND};
	static const nghttp2_nv ch[] = {NV(":status", "404"), NV("content-type", "text/html"), NVEND};
	static const nghttp2_nv no[] = {NV(":status", "599"), NV("x", "y"), NVEND};
	static const nghttp2_nv n204[] = {NV(":status", "204"), NV("content-length", "0"), NVEND};
	static const nghttp2_nv n304[] = {NV(":status", "304"), NV("content-length", "10"), NVEND};
	static const nghttp2_nv c100[] = {NV(":status", "100"), NVEND};
	static const nghttp2_nv c103[] = {NV(":status", "103"), NV("link", "</a>; rel=preload"), NVEND};
	static const nghttp2_nv grpc[] = {NV(":status", "200"), NV("content-type", "application/grpc"),
	                                  NV("te", "trailers"), NVEND};

	(void)state;
	resp_ok(cl, 0, "GET",
	        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\nContent-Length: 5\r\n\r\n",
	        H1_BODY_LENGTH);
	resp_ok(ch, 0, "GET", "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n",
	        H1_BODY_CHUNKED);
	resp_ok(no, 1, "GET", "HTTP/1.1 599 \r\nx: y\r\nContent-Length: 0\r\n\r\n", H1_BODY_NONE);
	resp_ok(n204, 1, "GET", "HTTP/1.1 204 No Content\r\n\r\n", H1_BODY_NONE);
	resp_ok(n304, 1, "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", H1_BODY_NONE);
	resp_ok(cl, 1, "HEAD",
	        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\nContent-Length: 5\r\n\r\n",
	        H1_BODY_NONE);
	resp_ok(ch, 0, "HEAD", "HTTP/1.1 404 Not Found\r\ncontent-type: text/html\r\n\r\n", H1_BODY_NONE);
	resp_ok(c100, 0, "POST", "HTTP/1.1 100 Continue\r\n\r\n", H1_BODY_NONE);
	resp_ok(c103, 0, "GET", "HTTP/1.1 103 Early Hints\r\nlink: </a>; rel=preload\r\n\r\n", H1_BODY_NONE);
	resp_ok(cl, 0, "CONNECT", "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\nset-cookie: a=1\r\n\r\n",
	        H1_BODY_NONE);
	resp_ok(grpc, 0, "POST",
	        "HTTP/1.1 200 OK\r\ncontent-type: application/grpc\r\nte: trailers\r\n"
	        "Transfer-Encoding: chunked\r\n\r\n",
	        H1_BODY_CHUNKED);
}

static void
test_response_refusals(void **state)
{
	static const nghttp2_nv none[] = {NV("x", "1"), NVEND};
	static const nghttp2_nv dup[] = {NV(":status", "200"), NV(":status", "200"), NVEND};
	static const nghttp2_nv late[] = {NV("x", "1"), NV(":status", "200"), NVEND};
	static const nghttp2_nv two[] = {NV(":status", "20"), NVEND};
	static const nghttp2_nv four[] = {NV(":status", "2000"), NVEND};
	static const nghttp2_nv alpha[] = {NV(":status", "2x0"), NVEND};
	static const nghttp2_nv low[] = {NV(":status", "099"), NVEND};
	static const nghttp2_nv high[] = {NV(":status", "600"), NVEND};
	static const nghttp2_nv sw[] = {NV(":status", "101"), NV("upgrade", "websocket"), NVEND};
	static const nghttp2_nv path[] = {NV(":status", "200"), NV(":path", "/"), NVEND};
	static const nghttp2_nv te[] = {NV(":status", "200"), NV("transfer-encoding", "chunked"), NVEND};
	static const nghttp2_nv conn[] = {NV(":status", "200"), NV("connection", "close"), NVEND};
	static const nghttp2_nv crlf[] = {NV(":status", "200"), NV("x", "a\r\n\r\nHTTP/1.1 200 OK"), NVEND};
	static const nghttp2_nv upper[] = {NV(":status", "200"), NV("Set-Cookie", "a"), NVEND};
	static const nghttp2_nv cl[] = {NV(":status", "200"), NV("content-length", "5"), NVEND};
	static const nghttp2_nv cl2[] = {NV(":status", "200"), NV("content-length", "5"),
	                                 NV("content-length", "4"), NVEND};
	static const nghttp2_nv cl100[] = {NV(":status", "100"), NV("content-length", "0"), NVEND};
	static const nghttp2_nv cl204[] = {NV(":status", "204"), NV("content-length", "3"), NVEND};
	static const nghttp2_nv c100[] = {NV(":status", "100"), NVEND};

	(void)state;
	resp_refused(none, 1, "GET", "missing :status");
	resp_refused(dup, 1, "GET", "duplicate :status");
	resp_refused(late, 1, "GET", "pseudo-header after regular field");
	resp_refused(two, 1, "GET", "bad :status");
	resp_refused(four, 1, "GET", "bad :status");
	resp_refused(alpha, 1, "GET", "bad :status");
	resp_refused(low, 1, "GET", "bad :status");
	resp_refused(high, 1, "GET", "bad :status");
	resp_refused(sw, 0, "GET", "101 in HTTP/2");
	resp_refused(path, 1, "GET", "unknown pseudo-header");
	resp_refused(te, 0, "GET", "connection-specific field");
	resp_refused(conn, 0, "GET", "connection-specific field");
	resp_refused(crlf, 0, "GET", "CR, LF or NUL in field value");
	resp_refused(upper, 0, "GET", "uppercase field name");
	resp_refused(cl, 1, "GET", "content-length differs from the DATA sent");
	resp_refused(cl2, 0, "GET", "differing content-length");
	resp_refused(cl100, 0, "GET", "content-length in 1xx response");
	resp_refused(cl204, 1, "GET", "content-length in 204 response");
	resp_refused(c100, 1, "GET", "1xx response ended the stream");
}

static void
test_response_bounds(void **state)
{
	static const nghttp2_nv nv[] = {NV(":status", "200"), NV("a", "1"), NV("b", "2"), NVEND};
	struct h2conv_resp_opts o = {2, 0, "GET", 3};
	struct h2conv_response info;
	struct h2conv_err e;
	size_t len;
	int r;

	(void)state;
	r = h2conv_response_to_h1(nv, 3, &o, OUT, OUT_CAP, &len, &info, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_string_equal(e.reason, "too many header fields");
	o.max_fields = 3;
	r = h2conv_response_to_h1(nv, 3, &o, OUT, 20, &len, &info, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_string_equal(e.reason, "response head too large");
	assert_int_equal(e.status, 502);
}

static void
test_trailers(void **state)
{
	static const nghttp2_nv grpc[] = {NV("grpc-status", "0"), NV("grpc-message", "all good"), NVEND};
	static const nghttp2_nv ps[] = {NV(":status", "200"), NVEND};
	static const nghttp2_nv cl[] = {NV("content-length", "5"), NVEND};
	static const nghttp2_nv host[] = {NV("host", "a.com"), NVEND};
	static const nghttp2_nv crlf[] = {NV("x", "1\r\n0"), NVEND};
	static const nghttp2_nv conn[] = {NV("connection", "close"), NVEND};
	const char *want = "0\r\ngrpc-status: 0\r\ngrpc-message: all good\r\n\r\n";
	const char *data, *tr, *err;
	struct h1_chunked ch;
	struct h2conv_err e;
	size_t len, dlen, trlen;
	int done = 0, r;

	(void)state;
	r = h2conv_trailers_to_h1(grpc, 2, 10, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, 0);
	assert_int_equal(len, strlen(want));
	assert_memory_equal(OUT, want, len);
	h1_chunked_init(&ch, 1024);
	r = h1_chunked_decode(&ch, OUT, len, &data, &dlen, &done, &tr, &trlen, &err);
	assert_int_equal(r, (int)len);
	assert_int_equal(done, 1);
	assert_int_equal(trlen, len - 5);
	r = h2conv_trailers_to_h1(grpc, 0, 10, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, 0);
	assert_int_equal(len, 5);
	assert_memory_equal(OUT, "0\r\n\r\n", 5);

	r = h2conv_trailers_to_h1(ps, 1, 10, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_int_equal(e.malformed, 1);
	assert_string_equal(e.reason, "pseudo-header in trailers");
	r = h2conv_trailers_to_h1(cl, 1, 10, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_int_equal(e.malformed, 0);
	assert_int_equal(e.status, 400);
	assert_string_equal(e.reason, "framing or routing field in trailers");
	r = h2conv_trailers_to_h1(host, 1, 10, OUT, OUT_CAP, &len, &e);
	assert_string_equal(e.reason, "framing or routing field in trailers");
	r = h2conv_trailers_to_h1(crlf, 1, 10, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, SLUICE_EINVAL);
	assert_string_equal(e.reason, "CR, LF or NUL in field value");
	r = h2conv_trailers_to_h1(conn, 1, 10, OUT, OUT_CAP, &len, &e);
	assert_string_equal(e.reason, "connection-specific field");
	r = h2conv_trailers_to_h1(grpc, 2, 1, OUT, OUT_CAP, &len, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_string_equal(e.reason, "too many trailer fields");
	r = h2conv_trailers_to_h1(grpc, 2, 10, OUT, strlen(want) - 1, &len, &e);
	assert_int_equal(r, SLUICE_ETOOBIG);
	assert_string_equal(e.reason, "trailer section too large");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_refusals),
		cmocka_unit_test(test_request_get),
		cmocka_unit_test(test_request_bodies),
		cmocka_unit_test(test_request_cookies_host),
		cmocka_unit_test(test_request_websocket),
		cmocka_unit_test(test_request_bounds),
		cmocka_unit_test(test_response_ok),
		cmocka_unit_test(test_response_refusals),
		cmocka_unit_test(test_response_bounds),
		cmocka_unit_test(test_trailers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
