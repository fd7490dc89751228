/*
 * test_refusal.c - refusals are values (proxy/session/refusal.h).
 *
 * A placeholder found where its secret is not bound, deep inside the JSON
 * walk of a held body (proxy/cred/credbody.c), comes back to the caller of
 * cred_body_finish() as a struct refusal: status, error, rule and a reason
 * naming the place, with nothing written to the client and the request
 * still the caller's (c->req, its held body and its head untouched).  The
 * same for a placeholder in a JSON key, in a form field, in an unparsed
 * body, and for refusal_set()/refusal_close() and refusal_err_text()
 * themselves.  No gateway runs: the connection, worker and gateway are
 * plain structs around a real policy and secret store.
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
#include <event2/buffer.h>
#include "proxy/session/session.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/refusal.h"
#include "proxy/core/context.h"

static const char yaml[] =
	"ca: /nonexistent\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - allow: { method: POST }\n"
	"secrets:\n"
	"  tok:\n"
	"    source: env:SLUICE_TEST_REFUSAL_TOK\n"
	"    hosts: [api.example.test]\n"
	"    inject: [\"json:$.auth\", \"form:auth\"]\n"
	"sandboxes:\n"
	"  s1:\n"
	"    addresses: [10.0.0.1/32]\n";

struct fixture {
	char dir[64];
	struct policy *pol;
	struct cred_store *st;
	struct gateway gw;
	struct worker w;
	struct conn c;
	char host[32];
	const char *ph;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	const char *err = NULL;
	char perr[256];

	snprintf(f->dir, sizeof(f->dir), "/tmp/sluice-refusal-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	setenv("SLUICE_TEST_REFUSAL_TOK", "not-a-real-secret-value", 1);
	if (policy_load_buffer("r.yaml", yaml, strlen(yaml), NULL, &f->pol, perr, sizeof(perr)) != 0)
		fail_msg("%s", perr);
	f->st = cred_store_create(f->dir, &err);
	assert_non_null(f->st);
	cred_store_sync(f->st, f->pol);
	f->ph = cred_placeholder(cred_entry_of(f->st, policy_secret_get(f->pol, 0)));
	assert_non_null(f->ph);
	f->gw.creds = f->st;
	f->w.gw = &f->gw;
	f->c.id = 1;
	f->c.w = &f->w;
	f->c.ops = &conn_ops_h1;
	f->c.pol = f->pol;
	struct policy_conn_decision d;

	policy_decide_conn(f->pol, "api.example.test", 443, &d);
	assert_int_equal(d.verdict, POLICY_INTERCEPT);
	f->c.entry = d.host;
	f->c.port = 443;
	snprintf(f->host, sizeof(f->host), "api.example.test");
	f->c.host = f->host;
	f->c.sandbox = "s1";
	f->c.tls = 1;
	f->c.state = CONN_S_HOLD;
	f->c.fd = -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[128];

	cred_store_destroy(f->st);
	policy_unref(f->pol);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/* A request holding <body> whole, as credbody.c has it once the body is read. */
static struct req *
held(struct fixture *f, const char *body, enum cred_body_type type)
{
	struct req *r = calloc(1, sizeof(*r));

	r->cred = cred_req_new();
	r->minor_version = 1;
	r->client_keep_alive = 1;
	r->body = H1_BODY_LENGTH;
	r->body_done = 1;
	r->cred->body_type = (unsigned char)type;
	r->cred->body_injectable = 1;
	r->cred->hold_max = CRED_BODY_INJECT_MAX;
	memcpy(r->method, "POST", 5);
	r->method_len = 4;
	r->up_head = evbuffer_new();
	evbuffer_add_printf(r->up_head, "POST /v1 HTTP/1.1\r\nHost: api.example.test\r\n");
	r->hold = evbuffer_new();
	evbuffer_add(r->hold, body, strlen(body));
	f->c.req = r;
	return r;
}

static void
req_free(struct fixture *f, struct req *r)
{
	cred_release(r);
	cred_hold_free(r);
	evbuffer_free(r->up_head);
	free(r);
	f->c.req = NULL;
}

/* <fmt> with every %s the placeholder. */
static void
body_of(struct fixture *f, char *buf, size_t cap, const char *fmt)
{
	const char *p;
	size_t o = 0;

	for (p = fmt; *p != '\0' && o + 1 < cap; p++) {
		if (p[0] == '%' && p[1] == 's') {
			o += (size_t)snprintf(buf + o, cap - o, "%s", f->ph);
			p++;
		} else {
			buf[o++] = *p;
		}
	}
	buf[o < cap ? o : cap - 1] = '\0';
}

/* cred_body_finish on <fmt>'s body refuses it with 403 as an exfiltration at <place>, leaving the request whole. */
static void
refused_at(struct fixture *f, const char *fmt, enum cred_body_type type, const char *place, size_t nuses)
{
	char body[512], want[128];
	struct refusal rf;
	struct req *r;
	size_t head_len, hold_len;

	body_of(f, body, sizeof(body), fmt);
	r = held(f, body, type);
	head_len = evbuffer_get_length(r->up_head);
	hold_len = evbuffer_get_length(r->hold);
	memset(&rf, 0xa5, sizeof(rf));
	assert_int_equal(cred_body_finish(&f->c, &rf), -1);
	/* the value */
	assert_int_equal(rf.status, 403);
	assert_int_equal(rf.err, REFUSAL_EXFILTRATION);
	assert_string_equal(refusal_err_text(rf.err), "exfiltration attempt");
	assert_string_equal(rf.rule, "secrets");
	assert_non_null(rf.reason);
	snprintf(want, sizeof(want), "in %s:", place);
	if (strstr(rf.reason, want) == NULL)
		fail_msg("reason '%s' does not name %s", rf.reason, place);
	assert_null(rf.limit.key);
	assert_null(rf.phrase);
	assert_int_equal(rf.quiet, 0);
	/* still the caller's: not freed, not answered, not moved on */
	assert_ptr_equal(f->c.req, r);
	assert_ptr_equal(rf.reason, r->rule_buf);  /* borrowed from the request, valid until it is answered */
	assert_non_null(r->hold);
	assert_int_equal(evbuffer_get_length(r->hold), hold_len);
	assert_int_equal(evbuffer_get_length(r->up_head), head_len);
	assert_int_equal(r->cred->nuses, nuses);  /* a bound place met first: its value taken, dropped with the request */
	assert_string_equal(r->cred->event, "exfiltration_attempt");
	assert_string_equal(r->cred->event_secret, "tok");
	assert_string_equal(r->cred->event_place, place);
	assert_int_equal(r->status, 0);
	assert_int_equal(r->audit_decided, 0);
	assert_null(f->c.out);  /* nothing was written toward the client */
	assert_int_equal(f->c.state, CONN_S_HOLD);
	assert_null(f->c.up);
	req_free(f, r);
}

static void
json_deep(void **state)
{
	refused_at(*state, "{\"a\":[1,{\"b\":{\"c\":\"x %s y\"}}],\"auth\":\"ok\"}", CRED_BODY_JSON, "json:$.a[1].b.c", 0);
}

static void
json_sibling_of_bound(void **state)
{
	/* the bound place holds it too: the second, unbound one still refuses */
	refused_at(*state, "{\"auth\":\"%s\",\"note\":{\"deep\":[[\"%s\"]]}}", CRED_BODY_JSON, "json:$.note.deep[0][0]", 1);
}

static void
json_key(void **state)
{
	refused_at(*state, "{\"x\":{\"%s\":1}}", CRED_BODY_JSON, "json key", 0);
}

static void
form_field(void **state)
{
	refused_at(*state, "a=1&note=%s&auth=z", CRED_BODY_FORM, "form:note", 0);
}

static void
not_json(void **state)
{
	/* declared JSON but not: nothing in it is a field */
	refused_at(*state, "{\"auth\": %s", CRED_BODY_JSON, "body", 0);
}

static void
values(void **state)
{
	struct refusal rf;

	(void)state;
	assert_int_equal(refusal_set(&rf, 429, REFUSAL_RATE_LIMITED, "r1", "why"), -1);
	assert_int_equal(rf.status, 429);
	assert_int_equal(rf.close, 0);
	assert_null(rf.limit.key);
	assert_int_equal(refusal_close(&rf, 503, REFUSAL_LIMITS_UNAVAILABLE, "r2", "why not"), -1);
	assert_int_equal(rf.close, 1);
	assert_string_equal(rf.rule, "r2");
	assert_string_equal(refusal_err_text(REFUSAL_BAD_REQUEST), "bad request");
	assert_string_equal(refusal_err_text(REFUSAL_DENIED), "denied by policy");
	assert_string_equal(refusal_err_text(REFUSAL_GATEWAY_STOPPING), "gateway stopping");
	assert_string_equal(refusal_err_text((enum refusal_err)0), "refused");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(json_deep, setup, teardown),
		cmocka_unit_test_setup_teardown(json_sibling_of_bound, setup, teardown),
		cmocka_unit_test_setup_teardown(json_key, setup, teardown),
		cmocka_unit_test_setup_teardown(form_field, setup, teardown),
		cmocka_unit_test_setup_teardown(not_json, setup, teardown),
		cmocka_unit_test(values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
