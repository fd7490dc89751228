/*
 * test_credreq.c - the binding of placeholders to places (proxy/cred/credreq.c)
 * without a gateway: a policy loaded from YAML, a struct conn and struct req
 * built here, a fake secret store (the cred.c interface of proxy/cred/cred.h) and a
 * fake session above (cred_check_head returns its refusal: the test records
 * it as the session would answer it, sessfake.h).  Covered: a
 * placeholder in each bound place (header, query, Basic) is replaced by its
 * value; anywhere else (method, path, other header, header name, other query
 * key, cookie) it is refused as an exfiltration attempt naming the place; who
 * may use it (unknown client, other sandbox, other host, plain HTTP with and
 * without allow_plaintext); encoded placeholders; an unavailable value (503);
 * the value references released; and the streaming body search split at
 * every byte, plain and chunk-framed.  The values here are fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "tests/unit/proxy/credfake.h"

static int trailers_hit;   /* what cred_trailers_search (credbody.c) reports */

int
cred_trailers_search(struct conn *c, size_t *secret)
{
	(void)c;
	*secret = 0;
	return trailers_hit;
}

static struct conn *
conn_for(struct cf *f, const char *sandbox, const char *host, int tls, const char *head)
{
	trailers_hit = 0;
	return cf_conn(f, sandbox, host, tls, head);
}

/* ---- allowed: the value replaces the placeholder only in its place ---- */

static void
test_bound_places(void **state)
{
	static const struct {
		const char *head;
		const char *want;     /* in the head that leaves */
		const char *place;    /* the use recorded */
	} cases[] = {
		{"GET /v1 HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer " PH "\r\n\r\n",
		 "\r\nAuthorization: Bearer " VAL "\r\n", "header:authorization"},
		{"GET /v1?a=1&key=" PH " HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "?a=1&key=v%26l%3D1%20x%2F%25 ",
		 "query:key"},
		/* "user:" PH in base64 goes out as "user:" VAL in base64 */
		{"GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Basic "
		 "dXNlcjpzbHVpY2VfcGhfVW5pdFRvazAxMjM0NTY3ODlhYmNkZWZnaGlq\r\n\r\n",
		 "Authorization: Basic dXNlcjp2Jmw9MSB4LyU=\r\n", "basic"},
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, cases[i].head);
		char *out;

		assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), 0);
		assert_int_equal(fake_ans.n, 0);
		assert_int_equal(f->r.cred->nuses, 1);
		assert_string_equal(f->r.cred->uses[0].place, cases[i].place);
		assert_int_equal(cf_val_tok.refs, 1);
		out = cf_head(f);
		assert_non_null(strstr(out, cases[i].want));
		assert_null(strstr(out, PH));
		assert_null(f->r.cred->event);
		free(out);
		cf_done(f);
	}
}

/* plain HTTP: only toward a host whose entry has allow_plaintext */
static void
test_plaintext(void **state)
{
	struct cf *f = *state;
	struct conn *c = conn_for(f, "agent-1", "plain.test", 0,
	                          "GET / HTTP/1.1\r\nHost: plain.test\r\nAuthorization: " PH "\r\n\r\n");

	assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), 0);
	assert_int_equal(f->r.cred->nuses, 1);
	cf_done(f);
	c = conn_for(f, "agent-1", "api.example.test", 0,
	             "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: " PH "\r\n\r\n");
	assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), -1);
	assert_int_equal(fake_ans.status, 403);
	assert_non_null(strstr(fake_ans.reason, "plain HTTP"));
	cf_done(f);
}

/* ---- refused: a placeholder anywhere but a bound place, or by someone who may not ---- */

static void
test_unbound_places(void **state)
{
	static const struct {
		const char *head;
		const char *place;   /* the place the refusal names (r->cred->event_place) */
	} cases[] = {
		{"GET /repos/" PH " HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "path"},
		{"GET /v1?other=" PH " HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "query:other"},
		{"GET /v1?" PH "=1 HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "query"},
		{"GET / HTTP/1.1\r\nHost: api.example.test\r\nX-Forward: " PH "\r\n\r\n", "header:x-forward"},
		{"GET / HTTP/1.1\r\nHost: api.example.test\r\nCookie: s=" PH "\r\n\r\n", "header:cookie"},
		{"GET / HTTP/1.1\r\nHost: api.example.test\r\nX-" PH ": 1\r\n\r\n", "header name"},
		{PH " / HTTP/1.1\r\nHost: api.example.test\r\n\r\n", "method"},
		/* a second copy in an unbound place refuses the whole head, the bound one included */
		{"GET /" PH " HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer " PH "\r\n\r\n", "path"},
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, cases[i].head);
		char *out;

		assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), -1);
		assert_int_equal(fake_ans.n, 1);
		assert_int_equal(fake_ans.status, 403);
		assert_string_equal(fake_ans.error, "exfiltration attempt");
		assert_string_equal(fake_ans.rule, "secrets");
		assert_non_null(f->r.cred->event);
		assert_string_equal(f->r.cred->event, "exfiltration_attempt");
		assert_string_equal(f->r.cred->event_secret, "tok");
		if (strncmp(f->r.cred->event_place, cases[i].place, strlen(cases[i].place)) != 0)
			fail_msg("case %zu: refused at '%s', expected '%s'", i, f->r.cred->event_place, cases[i].place);
		/* nothing was rewritten: no value in the head */
		out = cf_head(f);
		assert_null(strstr(out, VAL));
		free(out);
		cf_done(f);
	}
}

static void
test_who_may_use(void **state)
{
	static const struct {
		const char *sandbox;
		const char *host;
		const char *why;
	} cases[] = {
		{NULL, "api.example.test", "not a known sandbox"},
		{"agent-2", "api.example.test", "may not use the secret"},
		{"agent-1", "other.test", "host is not bound"},
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, cases[i].sandbox, cases[i].host, 1,
		                          "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " PH "\r\n\r\n");

		assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), -1);
		assert_int_equal(fake_ans.status, 403);
		if (strstr(fake_ans.reason, cases[i].why) == NULL)
			fail_msg("case %zu: reason '%s', expected '%s'", i, fake_ans.reason, cases[i].why);
		assert_int_equal(f->r.cred->nuses, 0);
		cf_done(f);
	}
	/* the other secret in its own bound place on its own host passes; tok's placeholder beside it does not */
	conn_for(f, "agent-1", "other.test", 1, "GET / HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: " PH_OTHER "\r\n\r\n");
	assert_int_equal(fake_ret(&f->c, cred_check_head(&f->c, &fake_rf)), 0);
	assert_int_equal(cf_val_other.refs, 1);
	cf_done(f);
	conn_for(f, "agent-1", "other.test", 1,
	         "GET / HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: " PH_OTHER "\r\nAuthorization: " PH "\r\n\r\n");
	assert_int_equal(fake_ret(&f->c, cred_check_head(&f->c, &fake_rf)), -1);
	assert_string_equal(f->r.cred->event_secret, "tok");
	cf_done(f);
}

/* in a bound place, but written encoded (percent, base64) or cut in pieces: refused, never injected */
static void
test_encoded(void **state)
{
	static const char *const heads[] = {
		"GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer sluice%5Fph_UnitTok0123456789abcdefghij\r\n\r\n",
		/* a query value is its percent-decoded form (key=sluice%5Fph... is the placeholder); base64 in it is not */
		"GET /v1?key=c2x1aWNlX3BoX1VuaXRUb2swMTIzNDU2Nzg5YWJjZGVmZ2hpag%3D%3D HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
		/* base64 of the placeholder itself in a header that is bound (not a Basic credential) */
		"GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: Bearer "
		"c2x1aWNlX3BoX1VuaXRUb2swMTIzNDU2Nzg5YWJjZGVmZ2hpag==\r\n\r\n",
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, heads[i]);

		if (fake_ret(c, cred_check_head(c, &fake_rf)) != -1)
			fail_msg("case %zu: an encoded placeholder was not refused", i);
		assert_int_equal(fake_ans.status, 403);
		assert_non_null(strstr(fake_ans.reason, "encoded"));
		assert_int_equal(f->r.cred->nuses, 0);
		cf_done(f);
	}
}

static void
test_unavailable(void **state)
{
	struct cf *f = *state;
	struct conn *c = conn_for(f, "agent-1", "api.example.test", 1,
	                          "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: " PH "\r\n\r\n");
	char *out;

	cf_store.e[0].val = NULL;
	assert_int_equal(fake_ret(c, cred_check_head(c, &fake_rf)), -1);
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "secret unavailable");
	assert_non_null(strstr(fake_ans.reason, "not fetched yet"));
	assert_null(f->r.cred->event);   /* not an exfiltration attempt */
	out = cf_head(f);
	assert_non_null(strstr(out, PH));
	free(out);
	cf_done(f);
}

/* ---- the streaming search of a body too large to hold ---- */

/* Feeds <body> in two pieces split at <cut>: 1 when the search hit; the bytes sent upstream in <sent>. */
static int
scan_split(struct cf *f, const char *body, size_t cut, enum h1_framing framing, struct evbuffer *sent)
{
	size_t len = strlen(body);
	int r;

	conn_for(f, "agent-1", "api.example.test", 1, "POST / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	f->r.body = framing;
	assert_int_equal(cred_scan_begin(&f->c), 0);
	evbuffer_add(f->r.cred->scan_in, body, cut);
	r = cred_scan_pump(&f->c, sent, 0);
	if (r == 0) {
		evbuffer_add(f->r.cred->scan_in, body + cut, len - cut);
		r = cred_scan_pump(&f->c, sent, 1);
	}
	return r;
}

static void
test_scan_split_anywhere(void **state)
{
	static const char clean[] = "{\"text\":\"sluice_ph_UnitTok0123 is not one\",\"n\":1}";
	static const char dirty[] = "{\"text\":\"hello " PH " world\"}";
	static const char escaped[] = "{\"text\":\"sluice\\u005fph_UnitTok0123456789abcdefghij\"}";
	struct cf *f = *state;
	size_t cut;

	for (cut = 0; cut <= sizeof(clean) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();
		char *got;

		assert_int_equal(scan_split(f, clean, cut, H1_BODY_LENGTH, sent), 0);
		assert_int_equal(evbuffer_get_length(sent), sizeof(clean) - 1);
		got = (char *)evbuffer_pullup(sent, -1);
		assert_memory_equal(got, clean, sizeof(clean) - 1);
		evbuffer_free(sent);
		cf_done(f);
	}
	for (cut = 0; cut <= sizeof(dirty) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();

		assert_int_equal(scan_split(f, dirty, cut, H1_BODY_LENGTH, sent), 1);
		assert_false(cf_has(sent, PH));
		assert_false(cf_has(sent, "sluice_ph_Unit"));   /* not even its start went up */
		assert_string_equal(f->r.cred->event_place, "body");
		assert_non_null(strstr(f->r.rule_buf, "too large to hold"));
		evbuffer_free(sent);
		cf_done(f);
	}
	/* a decoded view: the JSON escape of '_' hides the placeholder from a raw search, not from this one */
	for (cut = 0; cut <= sizeof(escaped) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();

		assert_int_equal(scan_split(f, escaped, cut, H1_BODY_LENGTH, sent), 1);
		evbuffer_free(sent);
		cf_done(f);
	}
}

static void
test_scan_chunked_and_trailers(void **state)
{
	static const char body[] = "a=1&b=2";
	struct cf *f = *state;
	struct evbuffer *sent = evbuffer_new();
	char *got;

	assert_int_equal(scan_split(f, body, 3, H1_BODY_CHUNKED, sent), 0);
	got = malloc(evbuffer_get_length(sent) + 1);
	assert_non_null(got);
	got[evbuffer_copyout(sent, got, evbuffer_get_length(sent))] = '\0';
	assert_string_equal(got, "3\r\na=1\r\n4\r\n&b=2\r\n0\r\n\r\n");
	free(got);
	evbuffer_free(sent);
	cf_done(f);
	/* a placeholder in the trailers (cred_trailers_search, credbody.c) refuses the body at its end */
	sent = evbuffer_new();
	conn_for(f, "agent-1", "api.example.test", 1, "POST / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	f->r.body = H1_BODY_CHUNKED;
	assert_int_equal(cred_scan_begin(&f->c), 0);
	trailers_hit = 1;
	evbuffer_add(f->r.cred->scan_in, body, sizeof(body) - 1);
	assert_int_equal(cred_scan_pump(&f->c, sent, 1), 1);
	assert_string_equal(f->r.cred->event_place, "trailers");
	assert_false(cf_has(sent, "0\r\n\r\n"));   /* the body was not ended: the caller refuses it */
	evbuffer_free(sent);
	cf_done(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bound_places),
		cmocka_unit_test(test_plaintext),
		cmocka_unit_test(test_unbound_places),
		cmocka_unit_test(test_who_may_use),
		cmocka_unit_test(test_encoded),
		cmocka_unit_test(test_unavailable),
		cmocka_unit_test(test_scan_split_anywhere),
		cmocka_unit_test(test_scan_chunked_and_trailers),
	};

	return cmocka_run_group_tests(tests, cf_setup, cf_teardown);
}
