/*
 * test_credbody.c - placeholders in a held request body (proxy/cred/credbody.c,
 * cred_body_finish) without a gateway: the credfake.h store and session, a body
 * put in r->hold as the session would, relay_dial recorded instead of
 * dialling, a refusal returned to the test (fake_ret).  Covered: a placeholder injected in a bound JSON field (numbers
 * and spacing as written) and form field (percent-encoded); refused in an
 * unbound field, a JSON key, an object with keys that differ only by case, a
 * JSON escape, a body that is not JSON, a body of another type, a _method
 * override, the trailers, a body over the injection bound; a body without one
 * passes byte for byte.  The values here are fake.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <jansson.h>
#include <event2/buffer.h>
#include "common/sluice.h"
#include "policy/policy.h"
#include "proxy/session/session.h"
#include "proxy/judge/semantic.h"
#include "tests/unit/proxy/credfake.h"

/* ---- the session and net around credbody.c: only relay_dial is expected ---- */

static int dialled;

int
relay_dial(struct conn *c, struct refusal *rf)
{
	(void)c, (void)rf;
	dialled++;
	return 0;
}

void
refuse_proto_keep_section(struct conn *c, const char *buf, size_t len)
{
	(void)c, (void)buf, (void)len;
}

static void
unexpected(const char *what)
{
	fail_msg("credbody.c called %s in cred_body_finish", what);
}

struct evbuffer *
cio_in(struct conn *c)
{
	(void)c;
	unexpected("cio_in");
	return NULL;
}

struct evbuffer *
cio_out(struct conn *c)
{
	(void)c;
	unexpected("cio_out");
	return NULL;
}

void
cio_read(struct conn *c, int on)
{
	(void)c, (void)on;
	unexpected("cio_read");
}

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	(void)c, (void)ms;
	unexpected("conn_arm_timer");
}

void
conn_set_state(struct conn *c, enum conn_state s)
{
	(void)c, (void)s;
	unexpected("conn_set_state");
}

const struct policy_limits *
conn_limits(struct conn *c)
{
	(void)c;
	unexpected("http_limits");
	return NULL;
}

int
req_body_move(struct conn *c, struct evbuffer *in, struct evbuffer *out, int reencode, const char **err)
{
	(void)c, (void)in, (void)out, (void)reencode, (void)err;
	unexpected("req_body_move");
	return -1;
}

/* ---- a held body, decided ---- */

/* POST of <body> (<type>) held whole toward api.example.test by <sandbox>; cred_body_finish's outcome: 0 dialled. */
static int
held(struct cf *f, const char *sandbox, enum cred_body_type type, const char *body, const char *trailers)
{
	struct conn *c = cf_conn(f, sandbox, "api.example.test", 1, "POST /v1 HTTP/1.1\r\nHost: api.example.test\r\n");

	dialled = 0;
	memcpy(f->r.method, "POST", 5);
	f->r.method_len = 4;
	f->r.body = H1_BODY_LENGTH;
	f->r.cred->body_type = (unsigned char)type;
	f->r.cred->body_injectable = type != CRED_BODY_OTHER;
	f->r.cred->hold_max = type != CRED_BODY_OTHER ? CRED_BODY_INJECT_MAX : CRED_BODY_HOLD_MAX;
	f->r.hold = evbuffer_new();
	evbuffer_add(f->r.hold, body, strlen(body));
	if (trailers != NULL) {
		f->r.req_trailers = evbuffer_new();
		evbuffer_add(f->r.req_trailers, trailers, strlen(trailers));
	}
	fake_ret(c, cred_body_finish(c, &fake_rf) == 0 ? relay_dial(c, &fake_rf) : -1);  /* as hold.c does */
	assert_int_equal(dialled + fake_ans.n, 1);   /* exactly one of: sent on, refused */
	return dialled ? 0 : -1;
}

/* The body that leaves (after the head's Content-Length), malloc'd; checks the length it declares. */
static char *
body_sent(struct cf *f)
{
	char *h = cf_head(f), *b = strstr(h, "\r\n\r\n"), *cl = strstr(h, "\r\nContent-Length: "), *out;

	assert_non_null(b);
	assert_non_null(cl);
	b += 4;
	assert_int_equal(strtoul(cl + 18, NULL, 10), strlen(b));
	out = strdup(b);
	free(h);
	return out;
}

static void
end(struct cf *f)
{
	cred_hold_free(&f->r);
	if (f->r.hold != NULL)
		evbuffer_free(f->r.hold);
	if (f->r.req_trailers != NULL)
		evbuffer_free(f->r.req_trailers);
	f->r.hold = f->r.req_trailers = NULL;
	cf_done(f);
}

static void
test_json_injected(void **state)
{
	struct cf *f = *state;
	json_t *doc;
	char *b;

	assert_int_equal(held(f, "agent-1", CRED_BODY_JSON, "{ \"auth\": {\"token\": \"" PH "\"}, \"n\": 1.50 }", NULL), 0);
	assert_int_equal(f->r.cred->nuses, 1);
	assert_string_equal(f->r.cred->uses[0].place, "json:$.auth.token");
	b = body_sent(f);
	assert_non_null(strstr(b, "\"n\": 1.50 }"));   /* never re-serialised */
	assert_null(strstr(b, PH));
	doc = json_loads(b, 0, NULL);
	assert_non_null(doc);
	assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "auth"), "token")), VAL);
	json_decref(doc);
	free(b);
	end(f);
}

static void
test_form_injected(void **state)
{
	struct cf *f = *state;
	char *b;

	assert_int_equal(held(f, "agent-1", CRED_BODY_FORM, "user=me&password=" PH "&x=1", NULL), 0);
	b = body_sent(f);
	assert_string_equal(b, "user=me&password=v%26l%3D1%20x%2F%25&x=1");
	free(b);
	end(f);
}

static void
test_clean_passes(void **state)
{
	static const char *const bodies[] = {"{\"auth\":{\"token\":\"not one\"}}", "password=x", "plain text, no placeholder"};
	static const enum cred_body_type types[] = {CRED_BODY_JSON, CRED_BODY_FORM, CRED_BODY_OTHER};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < 3; i++) {
		char *b;

		assert_int_equal(held(f, "agent-1", types[i], bodies[i], NULL), 0);
		assert_int_equal(f->r.cred->nuses, 0);
		b = body_sent(f);
		assert_string_equal(b, bodies[i]);
		free(b);
		end(f);
	}
}

static void
test_refused(void **state)
{
	static const struct {
		const char *sandbox;
		enum cred_body_type type;
		const char *body;
		const char *trailers;
		const char *place;    /* r->cred->event_place */
		const char *why;      /* in the reason */
	} cases[] = {
		{"agent-1", CRED_BODY_JSON, "{\"other\":\"" PH "\"}", NULL, "json:$.other", "not bound to this place"},
		{"agent-1", CRED_BODY_JSON, "{\"auth\":[\"" PH "\"]}", NULL, "json:$.auth[0]", "not bound to this place"},
		{"agent-1", CRED_BODY_JSON, "{\"" PH "\":1}", NULL, "json key", "not bound to this place"},
		{"agent-1", CRED_BODY_JSON, "{\"auth\":{\"token\":\"" PH "\"},\"AUTH\":{\"token\":\"x\"}}", NULL,
		 "$", "differ only by case"},
		/* escaped in its bound field: the raw body has fewer copies than the fields decode to */
		{"agent-1", CRED_BODY_JSON, "{\"auth\":{\"token\":\"sluice\\u005fph_UnitTok0123456789abcdefghij\"}}", NULL,
		 "body", "not bound to this place"},
		{"agent-1", CRED_BODY_JSON, "{\"auth\":{\"token\":\"" PH "\"}", NULL, "body", "not bound to this place"},   /* not JSON */
		{"agent-1", CRED_BODY_OTHER, "token=" PH, NULL, "body", "not bound to this place"},
		{"agent-1", CRED_BODY_FORM, "user=" PH, NULL, "form:user", "not bound to this place"},
		{"agent-1", CRED_BODY_FORM, "password=sluice%5Fph_UnitTok0123456789abcdefghij%2500", NULL, "body",
		 "not bound to this place"},   /* percent-encoded in its bound field: as the escaped JSON one */
		{"agent-2", CRED_BODY_JSON, "{\"auth\":{\"token\":\"" PH "\"}}", NULL, "json:$.auth.token",
		 "may not use the secret"},
		{NULL, CRED_BODY_FORM, "password=" PH, NULL, "form:password", "not a known sandbox"},
		{"agent-1", CRED_BODY_JSON, "{\"auth\":{\"token\":\"" PH "\"}}", "X-Sig: " PH "\r\n", "trailers",
		 "never injected into"},
	};
	struct cf *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (held(f, cases[i].sandbox, cases[i].type, cases[i].body, cases[i].trailers) != -1)
			fail_msg("case %zu was sent on", i);
		assert_int_equal(fake_ans.status, 403);
		assert_string_equal(fake_ans.error, "exfiltration attempt");
		assert_string_equal(f->r.cred->event_secret, "tok");
		if (strcmp(f->r.cred->event_place, cases[i].place) != 0 || strstr(fake_ans.reason, cases[i].why) == NULL)
			fail_msg("case %zu: refused at '%s' because '%s'", i, f->r.cred->event_place, fake_ans.reason);
		end(f);
	}
	/* a form that would run as another method (_method) is refused before any placeholder is looked at */
	assert_int_equal(held(f, "agent-1", CRED_BODY_FORM, "_method=DELETE&password=" PH, NULL), -1);
	assert_int_equal(fake_ans.status, 403);
	assert_non_null(strstr(fake_ans.reason, "_method"));
	end(f);
}

/* over the injection bound (held for a semantic rule): searched whole, any placeholder refused */
static void
test_over_bound(void **state)
{
	struct cf *f = *state;
	size_t n = CRED_BODY_INJECT_MAX + 100;
	char *big = malloc(n + 1);

	assert_non_null(big);
	memset(big, 'a', n);
	big[n] = '\0';
	memcpy(big, "password=", 9);
	assert_int_equal(held(f, "agent-1", CRED_BODY_FORM, big, NULL), 0);   /* none: it goes as it came */
	end(f);
	memcpy(big + n / 2, PH, sizeof(PH) - 1);
	assert_int_equal(held(f, "agent-1", CRED_BODY_FORM, big, NULL), -1);
	assert_non_null(strstr(fake_ans.reason, "too large to hold"));
	end(f);
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_injected),
		cmocka_unit_test(test_form_injected),
		cmocka_unit_test(test_clean_passes),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_over_bound),
	};

	return cmocka_run_group_tests(tests, cf_setup, cf_teardown);
}
