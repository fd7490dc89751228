/*
 * test_session.c - the HTTP/1.1 session's state machine (proxy/session/) without a
 * gateway: the real conn.c, http.c, relay.c, respond.c and the cred/, judge/,
 * codec and policy code under them, over the fake net of netfake.h (the
 * client's bytes in memory, a fake upstream on a bufferevent pair, deadlines
 * the test fires), with a policy compiled from YAML.  The client comes in
 * through conn_accept with a CONNECT; what it sends after the tunnel's 200 is
 * what TLS would hand over.  Covered: an allowed request, the head that goes
 * upstream normalised; keep-alive (the pooled upstream reused); a pipelined
 * pair in one read, a refused one in front of an allowed one, a last request
 * with Connection: close; responses chunked, split, with an interim 100, to
 * a HEAD, from an upstream that closes (not pooled) and close-delimited
 * (re-framed chunked); request bodies held (re-framed with their length) and
 * streamed, a placeholder late in a streamed one; a denied path (403 with
 * the rule id, the connection kept, or closed when Connection: close says
 * so or a body was left unread, nothing upstream); malformed heads (two
 * Content-Length, CL+TE: 400, closed, nothing upstream); the upstream
 * failing before its response head (refused dial, a dial that fails later,
 * an EOF after the head went up: 502, the request freed, the next request
 * served); a stale pooled upstream (a bodyless GET sent again once, a POST never); deadlines
 * (idle, request head, dial, response); plain HTTP through the explicit proxy
 * (absolute-form, each request judged by its own host); a JSON body held for a semantic rule,
 * allowed and denied; a placeholder in an unbound place (403 exfiltration,
 * nothing upstream) and in its bound header (injected upstream, scrubbed back
 * in the response).  Each request ends once: one request record and one final
 * record for each (checked at every teardown), c->req gone,
 * and ASan/LSan watch the frees.  The secret value here is fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "common/sluice.h"
#include "tests/unit/proxy/netfake.h"

#define PH "sluice_ph_SessTok0123456789abcdefghij"
#define VAL "sess-fake-value-42"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - id: read\n"
	"        allow: { method: GET, path: \"/v1/**\" }\n"
	"      - id: no-admin\n"
	"        deny: { path: \"/admin/**\" }\n"
	"      - id: upload\n"
	"        allow: { method: [POST, HEAD], path: /upload }\n"
	"      - id: post-to-bots\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /chat\n"
	"          json: { \"$.channel\": { in: [C0BOTS] } }\n"
	"  plain.test:\n"
	"    allow_plaintext: true\n"
	"    ports: [80]\n"
	"secrets:\n"
	"  tok:\n"
	"    source: env:SESS_UNIT_TOK\n"
	"    placeholder: " PH "\n"
	"    hosts: [api.example.test]\n"
	"    inject: [header:Authorization]\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [127.0.0.2/32]\n";

static const char connect_head[] = "CONNECT api.example.test:443 HTTP/1.1\r\nHost: api.example.test:443\r\n\r\n";

static int
setup(void **state)
{
	setenv("SESS_UNIT_TOK", VAL, 1);
	*state = nf_new(yaml);
	return *state != NULL ? 0 : -1;
}

static int
teardown(void **state)
{
	nf_assert_ended_once(*state);   /* whatever the path, each request ended once */
	nf_free(*state);
	return 0;
}

/* A client through the CONNECT tunnel, ready for requests (its 200 checked). */
static struct nf_client *
client(struct nf *nf)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct nf_client *cl = nf_accept(nf, connect_head);
	char buf[sizeof(ok)];

	assert_non_null(cl->c);
	assert_int_equal(read(cl->fd, buf, sizeof(ok) - 1), (ssize_t)sizeof(ok) - 1);
	assert_memory_equal(buf, ok, sizeof(ok) - 1);
	assert_int_equal(cl->c->state, CONN_S_REQ_HEAD);
	assert_int_equal(cl->c->tls, 1);
	assert_string_equal(cl->c->sandbox, "agent-1");
	return cl;
}

/* 1 when <s> holds <sub>. */
static int
has(const char *s, const char *sub)
{
	return strstr(s, sub) != NULL;
}

/* The request of <cl> ended (between requests a connection holds none) and it waits for the next one. */
static void
assert_idle(struct nf_client *cl)
{
	assert_non_null(cl->c);
	assert_null(cl->c->req);
	assert_null(cl->c->up);
	assert_int_equal(cl->c->state, CONN_S_REQ_HEAD);
}

/* <cl> was closed after its answer went out (the lingering close). */
static void
assert_closed(struct nf_client *cl)
{
	assert_null(cl->c);
	assert_true(cl->closed);
	assert_true(cl->lingered);
}

/* The upstream answers 200 with <body> on <u>. */
static void
respond(struct nf *nf, struct nf_up *u, const char *body)
{
	char resp[256];

	snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", strlen(body), body);
	nf_up_send(u, resp);
	nf_run(nf);
}

/* <cl> sends <req>; the answer that reaches the client holds <want> and <also> (NULL: nothing more to check). */
static void
answered(struct nf *nf, struct nf_client *cl, const char *req, const char *want, const char *also)
{
	char *s;

	nf_send(cl, req);
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_true(has(s, want));
	if (also != NULL)
		assert_true(has(s, also));
	free(s);
}

/*
 * <cl> sends <req>, which goes up on the upstream its connection holds as <up> exactly (NULL: only its
 * request line, <req>'s first line, is checked); it answers 200 with <body>, which reaches the client, and
 * the connection waits for the next request.  Returns that upstream.
 */
static struct nf_up *
served(struct nf *nf, struct nf_client *cl, const char *req, const char *up, const char *body)
{
	struct nf_up *u;
	char *s;

	nf_send(cl, req);
	nf_run(nf);
	u = nf_up_held(cl);
	s = nf_up_take(u);
	if (up != NULL)
		assert_string_equal(s, up);
	else
		assert_memory_equal(s, req, (size_t)(strstr(req, "\r\n") - req));
	free(s);
	respond(nf, u, body);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 200 OK\r\n"));
	assert_non_null(strstr(s, "\r\n\r\n"));
	assert_string_equal(strstr(s, "\r\n\r\n") + 4, body);
	free(s);
	assert_idle(cl);
	return u;
}

/* ---- allowed: the head that leaves, keep-alive, pipelining ---- */

static void
test_allowed_keepalive(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u;
	char *s;

	/* dot segments are resolved before the judge and what leaves is the normalised path */
	nf_send(cl, "GET /v1/a/../b/./c?x=1 HTTP/1.1\r\nHost: api.example.test\r\nAccept: */*\r\n\r\n");
	nf_run(nf);
	assert_int_equal(nf->nups, 1);
	u = nf_up(nf, 0);
	assert_string_equal(u->host, "api.example.test");
	assert_int_equal(u->port, 443);
	assert_int_equal(u->tls, 1);
	assert_int_equal(cl->c->state, CONN_S_RELAY);
	s = nf_up_take(u);
	assert_string_equal(s, "GET /v1/b/c?x=1 HTTP/1.1\r\nHost: api.example.test\r\nAccept: */*\r\n\r\n");
	free(s);
	s = nf_rx_take(cl);
	assert_string_equal(s, "");   /* nothing toward the client before the response */
	free(s);
	respond(nf, u, "hello");
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 200 OK\r\n"));
	assert_true(has(s, "\r\n\r\nhello"));
	free(s);
	assert_idle(cl);
	assert_int_equal(u->released, 1);   /* back to the pool, not freed */
	assert_int_equal(nf_recs(nf, AUDIT_KIND_REQUEST), 1);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 1);
	assert_int_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->status, 200);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "read");

	/* keep-alive: a second request on the connection, on the pooled upstream */
	assert_ptr_equal(served(nf, cl, "GET /v1/again HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	                        "GET /v1/again HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "two"), u);
	assert_int_equal(nf->nups, 1);
	assert_int_equal(u->reused, 1);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 2);
}

static void
test_pipelined(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u;
	char *s;

	/* two requests in one read: the second waits in the input until the first is answered */
	nf_send(cl, "GET /v1/one HTTP/1.1\r\nHost: api.example.test\r\n\r\n"
	            "GET /v1/two HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(nf->nups, 1);
	u = nf_up(nf, 0);
	s = nf_up_take(u);
	assert_string_equal(s, "GET /v1/one HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	free(s);
	assert_true(cio_in_len(cl->c) > 0);
	respond(nf, u, "first");
	/* the first answer went out, then the second request up the same (pooled) upstream */
	s = nf_up_take(u);
	assert_string_equal(s, "GET /v1/two HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	free(s);
	assert_int_equal(u->reused, 1);
	respond(nf, u, "second");
	s = nf_rx_take(cl);
	assert_true(has(s, "\r\n\r\nfirst"));
	assert_true(strstr(s, "first") < strstr(s, "second"));   /* in order */
	free(s);
	assert_idle(cl);
	assert_int_equal(cio_in_len(cl->c), 0);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 2);
	/* a refused one first: answered, and the one behind it still served */
	nf_send(cl, "GET /admin/a HTTP/1.1\r\nHost: api.example.test\r\n\r\n"
	            "GET /v1/three HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	s = nf_up_take(u);
	assert_string_equal(s, "GET /v1/three HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	free(s);
	respond(nf, u, "third");
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_true(strstr(s, "403 Forbidden") < strstr(s, "200 OK"));
	assert_true(has(s, "\r\n\r\nthird"));
	free(s);
	assert_idle(cl);
	/* the client's last request says Connection: close: answered, then closed, the upstream kept for others */
	nf_send(cl, "GET /v1/last HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n");
	nf_run(nf);
	s = nf_up_take(u);
	assert_true(has(s, "GET /v1/last HTTP/1.1\r\n"));
	free(s);
	respond(nf, u, "bye");
	s = nf_rx_take(cl);
	assert_true(has(s, "\r\n\r\nbye"));
	free(s);
	assert_closed(cl);
	assert_int_equal(u->released, 1);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 4);
}

/* ---- plain HTTP through the explicit proxy: absolute-form targets, each request judged by its own ---- */

static void
test_plain_proxy(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = nf_accept(nf, "GET http://plain.test/a/./b HTTP/1.1\r\nHost: plain.test\r\n\r\n");
	struct nf_up *u;
	char *s;

	assert_non_null(cl->c);
	assert_int_equal(cl->c->tls, 0);
	u = nf_up_held(cl);
	assert_int_equal(u->tls, 0);
	assert_int_equal(u->port, 80);
	s = nf_up_take(u);
	assert_string_equal(s, "GET /a/b HTTP/1.1\r\nHost: plain.test\r\n\r\n");   /* origin-form upstream */
	free(s);
	respond(nf, u, "plain");
	s = nf_rx_take(cl);
	assert_true(has(s, "\r\n\r\nplain"));
	free(s);
	assert_idle(cl);
	/* on the same connection, a request for another host is judged by that host's rules */
	answered(nf, cl, "GET http://api.example.test/admin/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	         "HTTP/1.1 403 Forbidden\r\n", "\"rule\":\"no-admin\"");
	assert_int_equal(nf->nups, 1);
	/* and its allowed requests go to it, in plain HTTP on its port 80 (allow_plaintext is about secrets only) */
	u = served(nf, cl, "GET http://api.example.test/v1/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	           "GET /v1/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "x");
	assert_string_equal(u->host, "api.example.test");
	assert_int_equal(u->port, 80);
	assert_int_equal(nf->nups, 2);
	/* an origin-form target is no proxy request: 400 */
	answered(nf, cl, "GET /v1/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	         "HTTP/1.1 400 Bad Request\r\n", "absolute-form");
	assert_closed(cl);
	assert_int_equal(nf->nups, 2);
}

/* ---- the response side: framings, interim answers, an upstream that closes ---- */

/* The payload of the chunked body <b> (ended by its last chunk) into <out>: its length, or -1 when it is not one. */
static long
dechunk(const char *b, char *out, size_t cap)
{
	size_t n = 0;
	unsigned long len;
	char *end;

	for (;;) {
		len = strtoul(b, &end, 16);
		if (end == b || strncmp(end, "\r\n", 2) != 0)
			return -1;
		b = end + 2;
		if (len == 0)
			return strcmp(b, "\r\n") == 0 ? (long)n : -1;
		if (n + len >= cap || strlen(b) < len + 2 || strncmp(b + len, "\r\n", 2) != 0)
			return -1;
		memcpy(out + n, b, len);
		n += len;
		b += len + 2;
	}
}

/* <cl> sends <req> and the upstream answers <resp> (then closes when <eof>): what reached the client (malloc'd). */
static char *
relayed(struct nf *nf, struct nf_client *cl, const char *req, const char *resp, int eof)
{
	struct nf_up *u;
	char *s;

	nf_send(cl, req);
	nf_run(nf);
	u = nf_up_held(cl);
	free(nf_up_take(u));
	nf_up_send(u, resp);
	nf_run(nf);
	if (eof)
		nf_up_close(nf, u, 0);
	s = nf_rx_take(cl);
	return s;
}

/* <got> (taken) is <want>. */
static void
expect(char *got, const char *want)
{
	assert_string_equal(got, want);
	free(got);
}

static void
test_responses(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	char body[64], *s;
	const char *chunked = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";

	/* chunked: relayed as chunked, the upstream pooled after its last chunk */
	expect(relayed(nf, cl, "GET /v1/chunked HTTP/1.1\r\nHost: api.example.test\r\n\r\n", chunked, 0), chunked);
	assert_idle(cl);
	assert_int_equal(nf_up(nf, 0)->released, 1);
	/* the head in two pieces: nothing reaches the client before it is whole */
	nf_send(cl, "GET /v1/split HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	free(nf_up_take(nf_up(nf, 0)));
	nf_up_send(nf_up(nf, 0), "HTTP/1.1 200 OK\r\nContent-Le");
	nf_run(nf);
	assert_int_equal(evbuffer_get_length(cl->rx), 0);
	nf_up_send(nf_up(nf, 0), "ngth: 2\r\n\r\nok");
	nf_run(nf);
	free(nf_rx_take(cl));
	assert_idle(cl);
	/* an interim 100 goes through before the final answer */
	expect(relayed(nf, cl, "GET /v1/interim HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	               "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 0),
	       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n");
	assert_idle(cl);
	/* HEAD: a Content-Length and no body */
	expect(relayed(nf, cl, "HEAD /upload HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	               "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 0),
	       "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n");
	assert_idle(cl);
	assert_int_equal(nf_up(nf, 0)->released, 1);
	/* the upstream says it closes: served, and that upstream is not pooled */
	expect(relayed(nf, cl, "GET /v1/last HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	               "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 0),
	       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
	assert_idle(cl);
	assert_int_equal(nf_up(nf, 0)->freed, 1);
	/* a body that ends with the upstream's close: re-framed chunked toward the keep-alive client */
	s = relayed(nf, cl, "GET /v1/eof HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "HTTP/1.1 200 OK\r\n\r\nuntil close", 1);
	assert_memory_equal(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", 47);
	assert_int_equal(dechunk(s + 47, body, sizeof(body)), 11);   /* cut where the reads fell */
	assert_memory_equal(body, "until close", 11);
	free(s);
	assert_idle(cl);
	assert_int_equal(nf_up(nf, 1)->freed, 1);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 6);
}

/* ---- request bodies that are not held: streamed up in their framing ---- */

#define BIG 40000   /* over CRED_BODY_HOLD_MAX: streamed, searched as it goes */

static void
test_request_bodies(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	struct nf_up *u;
	static char big[BIG + 1];
	char head[256], *s;

	/* a small body with secrets declared is held whole, searched, and sent with its length */
	nf_send(cl, "POST /upload HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/octet-stream\r\n"
	            "Transfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n");
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_HOLD);
	assert_int_equal(nf->nups, 0);
	nf_send(cl, "3\r\nefg\r\n0\r\n\r\n");
	nf_run(nf);
	u = nf_up_held(cl);
	s = nf_up_take(u);
	assert_string_equal(s, "POST /upload HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/octet-stream\r\n"
	                       "Content-Length: 7\r\n\r\nabcdefg");
	free(s);
	respond(nf, u, "stored");
	free(nf_rx_take(cl));
	assert_idle(cl);
	/* a large one streams: bytes go up before the rest arrived */
	memset(big, 'x', BIG);
	snprintf(head, sizeof(head), "POST /upload HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: %d\r\n\r\n", BIG);
	nf_send(cl, head);
	big[BIG / 2] = '\0';
	nf_send(cl, big);
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_RELAY);
	s = nf_up_take(u);
	assert_true(has(s, "\r\nContent-Length: 40000\r\n\r\nxxxx"));
	assert_true(strlen(strstr(s, "\r\n\r\n") + 4) <= BIG / 2);
	free(s);
	nf_send(cl, big);
	nf_run(nf);
	free(nf_up_take(u));
	respond(nf, u, "big");
	s = nf_rx_take(cl);
	assert_true(has(s, "\r\n\r\nbig"));
	free(s);
	assert_idle(cl);
	/* a placeholder late in a streamed body: found before it leaves; the exchange is cut, nothing answered after */
	big[BIG / 2] = 'x';
	memcpy(big + BIG - 100, PH, sizeof(PH) - 1);
	nf_send(cl, head);
	nf_send(cl, big);
	nf_run(nf);
	s = nf_up_take(u);
	assert_non_null(strstr(s, "\r\n\r\n"));
	assert_true(strlen(strstr(s, "\r\n\r\n") + 4) <= BIG - 100);   /* not a byte of the placeholder */
	free(s);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_EXFILTRATION_ATTEMPT), 1);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_true(has(s, "\"error\":\"exfiltration attempt\""));
	free(s);
	assert_closed(cl);
	assert_int_equal(u->freed, 1);   /* the upstream had part of the body: never reused */
}

/* ---- denied by a rule: answered here, nothing upstream ---- */

static void
test_denied(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	char *s;

	nf_send(cl, "GET /admin/users HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_true(has(s, "Content-Type: application/json\r\n"));
	assert_true(has(s, "\"rule\":\"no-admin\""));
	assert_false(has(s, "Connection: close"));
	free(s);
	assert_int_equal(nf->nups, 0);
	assert_idle(cl);   /* kept */
	assert_int_equal(nf_recs(nf, AUDIT_KIND_DENIAL) + nf_recs(nf, AUDIT_KIND_REQUEST), 1);
	/* no rule matches: the host's default, named "default" */
	answered(nf, cl, "DELETE /v1/x HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
	         "HTTP/1.1 403 Forbidden\r\n", "\"rule\":\"default\"");
	assert_idle(cl);
	/*
	 * refused with a body it did not read: the connection ends, or the body (here a request of its own)
	 * would be read as the next request
	 */
	nf_send(cl, "POST /admin/x HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 53\r\n\r\n"
	            "GET /v1/smuggled HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_true(has(s, "Connection: close\r\n"));
	assert_false(has(s, "HTTP/1.1 200"));
	free(s);
	assert_closed(cl);
	assert_int_equal(nf->nups, 0);
	cl = client(nf);
	/* the client says it closes: answered, then closed */
	answered(nf, cl, "GET /admin/x HTTP/1.1\r\nHost: api.example.test\r\nConnection: close\r\n\r\n",
	         "HTTP/1.1 403 Forbidden\r\n", "Connection: close\r\n");
	assert_closed(cl);
	assert_int_equal(nf->nups, 0);
}

/* ---- malformed heads: 400, closed, nothing upstream ---- */

static void
test_malformed(void **state)
{
	static const char *const heads[] = {
		"POST /v1/x HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd",
		"POST /v1/x HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
		"3\r\nabc\r\n0\r\n\r\n",
		"POST /v1/x HTTP/1.1\r\nHost: api.example.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\nabc",
		"GET /v1/x HTTP/1.1\r\nHost: api.example.test\r\nBad Header: 1\r\n\r\n",   /* a variant not listed */
	};
	struct nf *nf = *state;
	size_t i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct nf_client *cl = client(nf);

		answered(nf, cl, heads[i], "HTTP/1.1 400 Bad Request\r\n", "Connection: close\r\n");
		assert_closed(cl);
		assert_int_equal(nf->nups, 0);
		/* refused before its decision: its one request record, a deny with the status answered */
		assert_int_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->verdict, AUDIT_VERDICT_DENY);
		assert_int_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->status, 400);
	}
	assert_int_equal(nf_recs(nf, AUDIT_KIND_REQUEST), i);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 0);
}

/* ---- the upstream fails before its response head: 502, the request freed, the next one served ---- */

enum fail_how {
	FAIL_DIAL_NOW = 0,   /* the dial is refused at once */
	FAIL_DIAL_LATER,     /* the dial fails from its callback */
	FAIL_EOF,            /* a fresh upstream closes after the head went up, before any response byte */
	FAIL_HOW_COUNT
};

/* A request on a new client whose upstream fails as <how> says: the 502 checked; the client after it. */
static struct nf_client *
fail_one(struct nf *nf, enum fail_how how)
{
	struct nf_client *cl = client(nf);
	size_t before = nf->nups;
	char *s;

	nf->next_dial = how == FAIL_DIAL_NOW ? NF_DIAL_FAIL : how == FAIL_DIAL_LATER ? NF_DIAL_LATER : NF_DIAL_READY;
	nf_send(cl, "GET /v1/fails HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(nf->nups, before + 1);
	if (how == FAIL_DIAL_LATER) {
		assert_int_equal(cl->c->state, CONN_S_DIAL);
		s = nf_rx_take(cl);
		assert_string_equal(s, "");   /* nothing answered before the dial says how it went */
		free(s);
		nf_up_connect(nf, nf_up(nf, before), "connect to 10.200.0.9:443: timed out (fake net)");
	} else if (how == FAIL_EOF) {
		assert_int_equal(cl->c->state, CONN_S_RELAY);
		s = nf_up_take(nf_up(nf, before));
		assert_true(has(s, "GET /v1/fails HTTP/1.1\r\n"));
		free(s);
		nf_up_close(nf, nf_up(nf, before), 0);
	}
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 502 Bad Gateway\r\n"));
	assert_true(has(s, "\"rule\":\"upstream\""));
	free(s);
	assert_int_equal(nf_up(nf, before)->freed, 1);   /* never pooled */
	assert_int_equal(nf_up(nf, before)->released, 0);
	assert_int_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->status, 502);
	return cl;
}

static void
test_upstream_fails(void **state)
{
	struct nf *nf = *state;
	int how;

	for (how = 0; how < FAIL_HOW_COUNT; how++) {
		/* a 5xx of the gateway's ends the connection, and its request with it */
		assert_closed(fail_one(nf, (enum fail_how)how));
		/* the next request (on a new connection) is served */
		served(nf, client(nf), "GET /v1/next HTTP/1.1\r\nHost: api.example.test\r\n\r\n", NULL, "ok");
	}
	/* each request ended once: three 502s and three 200s, one response record each */
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 2 * FAIL_HOW_COUNT);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_REQUEST), 2 * FAIL_HOW_COUNT);
}

/* a pooled upstream the server had closed: the request (no body) is sent again on a fresh dial, once */
static void
test_stale_pooled(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf), *cl2;
	struct nf_up *u;
	char *s;

	u = served(nf, cl, "GET /v1/a HTTP/1.1\r\nHost: api.example.test\r\n\r\n", NULL, "a");
	assert_int_equal(u->released, 1);
	nf_send(cl, "GET /v1/b HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(u->reused, 1);
	free(nf_up_take(u));
	nf_up_close(nf, u, 0);   /* stale: EOF before any response byte */
	assert_int_equal(u->freed, 1);
	assert_int_equal(nf->nups, 2);
	s = nf_up_take(nf_up(nf, 1));
	assert_string_equal(s, "GET /v1/b HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	free(s);
	respond(nf, nf_up(nf, 1), "b");
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 200 OK\r\n"));
	assert_true(has(s, "\r\n\r\nb"));
	free(s);
	assert_idle(cl);
	/* two idle upstreams in the pool: ups[1] and, from a second client in flight at the same time, ups[2] */
	cl2 = client(nf);
	nf_send(cl, "GET /v1/c HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_send(cl2, "GET /v1/d HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(nf->nups, 3);
	respond(nf, nf_up_held(cl), "c");
	respond(nf, nf_up_held(cl2), "d");
	free(nf_rx_take(cl));
	free(nf_rx_take(cl2));
	assert_true(nf_up(nf, 1)->released && nf_up(nf, 2)->released);
	/* both stale: the request is sent again once (on the second), and then it is a 502, not a third try */
	nf_send(cl, "GET /v1/e HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	nf_up_close(nf, nf_up_held(cl), 0);
	u = nf_up_held(cl);
	assert_int_equal(u->reused, 1);
	s = nf_up_take(u);
	assert_true(has(s, "GET /v1/e HTTP/1.1\r\n"));
	free(s);
	nf_up_close(nf, u, 0);
	assert_int_equal(nf->nups, 3);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 502 Bad Gateway\r\n"));
	free(s);
	assert_closed(cl);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE), 5);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_REQUEST), 5);   /* resent, recorded once */
}

/* ---- deadlines: what each state does when its limit passes ---- */

static void
test_deadlines(void **state)
{
	struct nf *nf = *state;
	const struct policy_limits *lim = &nf->cfg->limits;
	struct nf_client *cl = client(nf);
	char *s;

	/* waiting for the first head: the head's limit; idle after a request: the idle limit */
	assert_int_equal(nf_deadline(cl), (long)lim->request_head_ms);
	served(nf, cl, "GET /v1/a HTTP/1.1\r\nHost: api.example.test\r\n\r\n", NULL, "a");
	assert_int_equal(nf_deadline(cl), (long)lim->idle_ms);
	nf_expire(nf, cl);   /* an idle keep-alive connection is closed without an answer */
	assert_null(cl->c);
	s = nf_rx_take(cl);
	assert_string_equal(s, "");
	free(s);
	/* half a head when the limit passes: 408, closed */
	cl = client(nf);
	nf_send(cl, "GET /v1/a HTTP/1.1\r\nHost: api.exa");
	nf_run(nf);
	assert_non_null(cl->c);
	nf_expire(nf, cl);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 408 Request Timeout\r\n"));
	assert_true(has(s, "\"rule\":\"limits.request_head\""));
	free(s);
	assert_closed(cl);
	/* a dial that does not finish in time: 504, the upstream freed */
	cl = client(nf);
	nf->next_dial = NF_DIAL_LATER;
	nf_send(cl, "GET /v1/slow HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_DIAL);
	assert_int_equal(nf_deadline(cl), (long)lim->upstream_connect_ms + 1000);
	nf_expire(nf, cl);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 504 Gateway Timeout\r\n"));
	assert_true(has(s, "\"rule\":\"limits.upstream_connect\""));
	free(s);
	assert_int_equal(nf_up(nf, nf->nups - 1)->freed, 1);
	assert_closed(cl);
	/* a response that stalls: 504 before its head, the connection closed */
	cl = client(nf);
	nf_send(cl, "GET /v1/stall HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_RELAY);
	assert_int_equal(nf_deadline(cl), (long)lim->body_ms);
	nf_expire(nf, cl);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 504 Gateway Timeout\r\n"));
	free(s);
	assert_closed(cl);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_RESPONSE) + nf_recs(nf, AUDIT_KIND_REQUEST), 2 + 1 + 2 + 2);
}

/*
 * a pooled upstream that closes under a request it may have acted on: a POST is never sent again (RFC 9110,
 * 9.2.2), neither one whose body was held for a semantic rule (forwarded with its head, r->body then NONE) nor one
 * without a body; it is a 502 and the connection ends
 */
static void
test_stale_pooled_post(void **state)
{
	struct nf *nf = *state;
	static const char *const reqs[] = {
		"POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
		"Content-Length: 20\r\n\r\n{\"channel\":\"C0BOTS\"}",
		"POST /upload HTTP/1.1\r\nHost: api.example.test\r\nContent-Length: 0\r\n\r\n",
	};
	struct nf_client *cl;
	struct nf_up *u;
	size_t i, nups;
	char *s;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		cl = client(nf);
		u = served(nf, cl, "GET /v1/a HTTP/1.1\r\nHost: api.example.test\r\n\r\n", NULL, "a");
		assert_int_equal(u->released, 1);
		nups = nf->nups;
		nf_send(cl, reqs[i]);
		nf_run(nf);
		assert_int_equal(u->reused, 1);
		s = nf_up_take(u);
		assert_true(has(s, "POST /"));
		free(s);
		nf_up_close(nf, u, 0);   /* EOF before any response byte: the upstream may have acted on it */
		assert_int_equal(u->freed, 1);
		assert_int_equal(nf->nups, nups);   /* no second dial: not sent again */
		s = nf_rx_take(cl);
		assert_true(has(s, "HTTP/1.1 502 Bad Gateway\r\n"));
		free(s);
		assert_closed(cl);
		assert_int_equal(nf_rec_last(nf, AUDIT_KIND_RESPONSE)->status, 502);
	}
}

/* ---- a body held for a semantic rule ---- */

static void
test_semantic_body(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	static const char ok[] = "{\"channel\":\"C0BOTS\",\"text\":\"hi\"}";
	static const char evil[] = "{\"channel\":\"C0EVIL\",\"text\":\"hi\"}";
	char head[256], part[64], *s;
	size_t half = sizeof(ok) / 2;

	/* allowed: the head arrives, the body in two pieces; nothing goes up before the body is whole */
	snprintf(head, sizeof(head), "POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
	         "Content-Length: %zu\r\n\r\n", sizeof(ok) - 1);
	nf_send(cl, head);
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_HOLD);
	snprintf(part, sizeof(part), "%.*s", (int)half, ok);
	nf_send(cl, part);
	nf_run(nf);
	assert_int_equal(cl->c->state, CONN_S_HOLD);
	assert_int_equal(nf->nups, 0);
	nf_send(cl, ok + half);
	nf_run(nf);
	assert_int_equal(nf->nups, 1);
	s = nf_up_take(nf_up(nf, 0));
	assert_true(has(s, "POST /chat HTTP/1.1\r\n"));
	snprintf(head, sizeof(head), "\r\nContent-Length: %zu\r\n", sizeof(ok) - 1);
	assert_true(has(s, head));
	assert_true(has(s, "\r\n\r\n{\"channel\":\"C0BOTS\",\"text\":\"hi\"}"));
	free(s);
	respond(nf, nf_up(nf, 0), "posted");
	s = nf_rx_take(cl);
	assert_true(has(s, "\r\n\r\nposted"));
	free(s);
	assert_idle(cl);
	assert_string_equal(nf_rec_last(nf, AUDIT_KIND_REQUEST)->rule, "post-to-bots");
	/* denied by what the body says: 403, nothing upstream */
	snprintf(head, sizeof(head), "POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
	         "Content-Length: %zu\r\n\r\n%s", sizeof(evil) - 1, evil);
	answered(nf, cl, head, "HTTP/1.1 403 Forbidden\r\n", "\"rule\":\"default\"");
	s = nf_up_take(nf_up(nf, 0));
	assert_string_equal(s, "");
	free(s);
	assert_int_equal(nf->nups, 1);
	/* its body was read whole to judge it: the connection is in step and goes on */
	served(nf, cl, "GET /v1/after HTTP/1.1\r\nHost: api.example.test\r\n\r\n", NULL, "after");
}

/* ---- placeholders: injected where bound, refused elsewhere ---- */

static void
test_placeholder(void **state)
{
	struct nf *nf = *state;
	struct nf_client *cl = client(nf);
	char *s;

	/* in the query, a place it is not bound to: refused as an exfiltration attempt before anything leaves */
	nf_send(cl, "GET /v1/search?q=" PH " HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	nf_run(nf);
	s = nf_rx_take(cl);
	assert_true(has(s, "HTTP/1.1 403 Forbidden\r\n"));
	assert_true(has(s, "\"error\":\"exfiltration attempt\""));
	assert_false(has(s, VAL));
	free(s);
	assert_int_equal(nf->nups, 0);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_EXFILTRATION_ATTEMPT), 1);
	assert_idle(cl);   /* a refusal of a request without a body keeps the connection */
	/* a variant not listed: in the body of an allowed request */
	cl = client(nf);
	answered(nf, cl, "POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
	                 "Content-Length: 67\r\n\r\n{\"channel\":\"C0BOTS\",\"text\":\"" PH "\"}",
	         "HTTP/1.1 403 Forbidden\r\n", "\"error\":\"exfiltration attempt\"");
	assert_int_equal(nf->nups, 0);
	assert_int_equal(nf_recs(nf, AUDIT_KIND_EXFILTRATION_ATTEMPT), 2);
	/* in its bound header: the value leaves, and comes back scrubbed to the placeholder */
	cl = client(nf);
	nf_send(cl, "GET /v1/me HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer " PH "\r\n\r\n");
	nf_run(nf);
	assert_int_equal(nf->nups, 1);
	s = nf_up_take(nf_up(nf, 0));
	assert_true(has(s, "\r\nAuthorization: Bearer " VAL "\r\n"));
	assert_false(has(s, PH));
	free(s);
	respond(nf, nf_up(nf, 0), "token " VAL);
	s = nf_rx_take(cl);
	assert_false(has(s, VAL));
	assert_true(has(s, PH));
	free(s);
	assert_idle(cl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_allowed_keepalive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pipelined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_plain_proxy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_responses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_request_bodies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_denied, setup, teardown),
		cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_upstream_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_pooled, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_pooled_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deadlines, setup, teardown),
		cmocka_unit_test_setup_teardown(test_semantic_body, setup, teardown),
		cmocka_unit_test_setup_teardown(test_placeholder, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
