/*
 * test_credreq.c - the binding of placeholders to places (proxy/cred/credreq.c)
 * without a gateway: a policy loaded from YAML, a struct conn and struct req
 * built here, a fake secret store (the cred.c interface of proxy_int.h) and a
 * fake session above (http_answer records the refusal instead of writing it;
 * the refusals redesign turns that into a returned refusal).  Covered: a
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
#include "proxy/proxy_int.h"

#define PH "sluice_ph_UnitTok0123456789abcdefghij"
#define PH_OTHER "sluice_ph_UnitOther0123456789abcdefgh"
#define VAL "v&l=1 x/%"     /* needs percent-encoding in a query */
#define VAL_OTHER "other-value-42"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"hosts:\n"
	"  api.example.test: {}\n"
	"  plain.test:\n"
	"    allow_plaintext: true\n"
	"    ports: [80]\n"
	"  other.test: {}\n"
	"secrets:\n"
	"  tok:\n"
	"    source: env:UNIT_TOK\n"
	"    placeholder: " PH "\n"
	"    hosts: [api.example.test, plain.test]\n"
	"    inject: [header:Authorization, query:key, basic]\n"
	"    sandboxes: [agent-1]\n"
	"  other:\n"
	"    source: env:UNIT_OTHER\n"
	"    placeholder: " PH_OTHER "\n"
	"    hosts: [other.test]\n"
	"    inject: [header:X-Api-Key]\n"
	"sandboxes:\n"
	"  agent-1:\n"
	"    addresses: [10.200.1.2/32]\n"
	"  agent-2:\n"
	"    addresses: [10.200.1.3/32]\n";

/* ---- the fake secret store: what cred.c would give ---- */

struct cred_value {
	const uint8_t *p;
	size_t len;
	int refs;
};

struct cred_entry {
	const char *name;
	const char *placeholder;
	struct cred_value *val;   /* NULL: unavailable */
};

struct cred_store {
	struct cred_entry e[2];
};

static struct cred_value val_tok = {(const uint8_t *)VAL, sizeof(VAL) - 1, 0};
static struct cred_value val_other = {(const uint8_t *)VAL_OTHER, sizeof(VAL_OTHER) - 1, 0};
static struct cred_store store;

const struct cred_entry *
cred_entry_of(struct cred_store *st, const struct policy_secret *s)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (strcmp(st->e[i].name, s->name) == 0)
			return &st->e[i];
	return NULL;
}

const char *
cred_placeholder(const struct cred_entry *e)
{
	return e->placeholder;
}

struct cred_value *
cred_value_take(struct cred_store *st, const struct cred_entry *e, char *why, size_t cap)
{
	(void)st;
	if (e->val == NULL) {
		snprintf(why, cap, "not fetched yet");
		return NULL;
	}
	e->val->refs++;
	return e->val;
}

void
cred_value_drop(struct cred_value *v)
{
	if (v != NULL)
		v->refs--;
}

const uint8_t *
cred_value_bytes(const struct cred_value *v, size_t *len)
{
	*len = v->len;
	return v->p;
}

int
cred_proxy_auth(struct cred_store *st, const struct policy *p, const char *user, size_t ulen, const char *pw,
                size_t pwlen, const char **sandbox)
{
	(void)st, (void)p, (void)user, (void)ulen, (void)pw, (void)pwlen, (void)sandbox;
	return -1;
}

/* ---- the fake session above: answers are recorded ---- */

struct answer {
	int n;
	int status;
	char error[64];
	char rule[64];
	char reason[512];
};
static struct answer ans;
static int trailers_hit;   /* what cred_trailers_search reports */

void
http_answer(struct conn *c, int status, const char *error, const char *rule, const char *reason, int audit)
{
	(void)c;
	assert_int_equal(audit, 1);   /* every refusal of a placeholder is audited */
	ans.n++;
	ans.status = status;
	snprintf(ans.error, sizeof(ans.error), "%s", error);
	snprintf(ans.rule, sizeof(ans.rule), "%s", rule);
	snprintf(ans.reason, sizeof(ans.reason), "%s", reason);
}

const char *
conn_peer_str(const struct conn *c, char *buf)
{
	(void)c;
	snprintf(buf, CONN_ADDR_STR, "10.200.1.2:40000");
	return buf;
}

int
sbxreg_secret_allowed(const struct sbx_entry *e, const char *name)
{
	(void)e, (void)name;
	fail_msg("no registered sandbox in these tests");
	return 0;
}

void
cred_resp_free(struct req *r)
{
	(void)r;
}

int
cred_trailers_search(struct conn *c, size_t *secret)
{
	(void)c;
	*secret = 0;
	return trailers_hit;
}

/* ---- fixture: one policy; a conn and req per case ---- */

struct fx {
	struct policy_config *cfg;
	struct policy *pol;
	struct gateway *gw;
	struct worker w;
	struct conn c;
	struct req r;
	char host[64];
};

static int
group_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char err[512];

	if (f == NULL || policy_load_buffer("unit.yaml", yaml, sizeof(yaml) - 1, &f->cfg, &f->pol, err, sizeof(err)) != 0) {
		fprintf(stderr, "policy: %s\n", err);
		return -1;
	}
	f->gw = calloc(1, sizeof(*f->gw));
	if (f->gw == NULL)
		return -1;
	store.e[0] = (struct cred_entry){"tok", PH, &val_tok};
	store.e[1] = (struct cred_entry){"other", PH_OTHER, &val_other};
	f->gw->creds = &store;
	f->w.gw = f->gw;
	*state = f;
	return 0;
}

static int
group_teardown(void **state)
{
	struct fx *f = *state;

	policy_unref(f->pol);
	policy_config_free(f->cfg);
	free(f->gw);
	free(f);
	return 0;
}

/* A TLS connection of sandbox <sandbox> to <host> whose request head as built is <head>. */
static struct conn *
conn_for(struct fx *f, const char *sandbox, const char *host, int tls, const char *head)
{
	struct policy_conn_decision d;
	size_t i;

	memset(&f->c, 0, sizeof(f->c));
	memset(&f->r, 0, sizeof(f->r));
	memset(&ans, 0, sizeof(ans));
	trailers_hit = 0;
	store.e[0].val = &val_tok;
	val_tok.refs = val_other.refs = 0;   /* a failed case before does not fail the next */
	f->c.w = &f->w;
	f->c.pol = f->pol;
	f->c.tls = tls ? 1 : 0;
	f->c.sandbox = NULL;
	for (i = 0; sandbox != NULL && i < policy_sandbox_count(f->pol); i++)
		if (strcmp(policy_sandbox_get(f->pol, i)->name, sandbox) == 0)
			f->c.sandbox = policy_sandbox_get(f->pol, i)->name;   /* borrowed from pol, as http.c does */
	if (sandbox != NULL)
		assert_non_null(f->c.sandbox);
	snprintf(f->host, sizeof(f->host), "%s", host);
	f->c.host = f->host;
	policy_decide_conn(f->pol, host, tls ? 443 : 80, &d);
	f->c.entry = d.host;
	f->c.req = &f->r;
	f->r.up_head = evbuffer_new();
	assert_non_null(f->r.up_head);
	evbuffer_add(f->r.up_head, head, strlen(head));
	return &f->c;
}

static char *
head_of(struct fx *f)
{
	size_t n = evbuffer_get_length(f->r.up_head);
	char *s = malloc(n + 1);

	assert_non_null(s);
	evbuffer_copyout(f->r.up_head, s, n);
	s[n] = '\0';
	return s;
}

static void
done(struct fx *f)
{
	cred_release(&f->r);
	/* every value reference taken for the request is given back */
	assert_int_equal(val_tok.refs, 0);
	assert_int_equal(val_other.refs, 0);
	evbuffer_free(f->r.up_head);
	f->r.up_head = NULL;
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
	struct fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, cases[i].head);
		char *out;

		assert_int_equal(cred_check_head(c), 0);
		assert_int_equal(ans.n, 0);
		assert_int_equal(f->r.nuses, 1);
		assert_string_equal(f->r.uses[0].place, cases[i].place);
		assert_int_equal(val_tok.refs, 1);
		out = head_of(f);
		assert_non_null(strstr(out, cases[i].want));
		assert_null(strstr(out, PH));
		assert_null(f->r.event);
		free(out);
		done(f);
	}
}

/* plain HTTP: only toward a host whose entry has allow_plaintext */
static void
test_plaintext(void **state)
{
	struct fx *f = *state;
	struct conn *c = conn_for(f, "agent-1", "plain.test", 0,
	                          "GET / HTTP/1.1\r\nHost: plain.test\r\nAuthorization: " PH "\r\n\r\n");

	assert_int_equal(cred_check_head(c), 0);
	assert_int_equal(f->r.nuses, 1);
	done(f);
	c = conn_for(f, "agent-1", "api.example.test", 0,
	             "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: " PH "\r\n\r\n");
	assert_int_equal(cred_check_head(c), -1);
	assert_int_equal(ans.status, 403);
	assert_non_null(strstr(ans.reason, "plain HTTP"));
	done(f);
}

/* ---- refused: a placeholder anywhere but a bound place, or by someone who may not ---- */

static void
test_unbound_places(void **state)
{
	static const struct {
		const char *head;
		const char *place;   /* the place the refusal names (r->event_place) */
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
	struct fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, cases[i].head);
		char *out;

		assert_int_equal(cred_check_head(c), -1);
		assert_int_equal(ans.n, 1);
		assert_int_equal(ans.status, 403);
		assert_string_equal(ans.error, "exfiltration attempt");
		assert_string_equal(ans.rule, "secrets");
		assert_non_null(f->r.event);
		assert_string_equal(f->r.event, "exfiltration_attempt");
		assert_string_equal(f->r.event_secret, "tok");
		if (strncmp(f->r.event_place, cases[i].place, strlen(cases[i].place)) != 0)
			fail_msg("case %zu: refused at '%s', expected '%s'", i, f->r.event_place, cases[i].place);
		/* nothing was rewritten: no value in the head */
		out = head_of(f);
		assert_null(strstr(out, VAL));
		free(out);
		done(f);
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
	struct fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct conn *c = conn_for(f, cases[i].sandbox, cases[i].host, 1,
		                          "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " PH "\r\n\r\n");

		assert_int_equal(cred_check_head(c), -1);
		assert_int_equal(ans.status, 403);
		if (strstr(ans.reason, cases[i].why) == NULL)
			fail_msg("case %zu: reason '%s', expected '%s'", i, ans.reason, cases[i].why);
		assert_int_equal(f->r.nuses, 0);
		done(f);
	}
	/* the other secret in its own bound place on its own host passes; tok's placeholder beside it does not */
	conn_for(f, "agent-1", "other.test", 1, "GET / HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: " PH_OTHER "\r\n\r\n");
	assert_int_equal(cred_check_head(&f->c), 0);
	assert_int_equal(val_other.refs, 1);
	done(f);
	conn_for(f, "agent-1", "other.test", 1,
	         "GET / HTTP/1.1\r\nHost: other.test\r\nX-Api-Key: " PH_OTHER "\r\nAuthorization: " PH "\r\n\r\n");
	assert_int_equal(cred_check_head(&f->c), -1);
	assert_string_equal(f->r.event_secret, "tok");
	done(f);
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
	struct fx *f = *state;
	size_t i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		struct conn *c = conn_for(f, "agent-1", "api.example.test", 1, heads[i]);

		if (cred_check_head(c) != -1)
			fail_msg("case %zu: an encoded placeholder was not refused", i);
		assert_int_equal(ans.status, 403);
		assert_non_null(strstr(ans.reason, "encoded"));
		assert_int_equal(f->r.nuses, 0);
		done(f);
	}
}

static void
test_unavailable(void **state)
{
	struct fx *f = *state;
	struct conn *c = conn_for(f, "agent-1", "api.example.test", 1,
	                          "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: " PH "\r\n\r\n");
	char *out;

	store.e[0].val = NULL;
	assert_int_equal(cred_check_head(c), -1);
	assert_int_equal(ans.status, 503);
	assert_string_equal(ans.error, "secret unavailable");
	assert_non_null(strstr(ans.reason, "not fetched yet"));
	assert_null(f->r.event);   /* not an exfiltration attempt */
	out = head_of(f);
	assert_non_null(strstr(out, PH));
	free(out);
	done(f);
}

/* ---- the streaming search of a body too large to hold ---- */

/* Feeds <body> in two pieces split at <cut>: 1 when the search hit; the bytes sent upstream in <sent>. */
static int
scan_split(struct fx *f, const char *body, size_t cut, enum h1_framing framing, struct evbuffer *sent)
{
	size_t len = strlen(body);
	int r;

	conn_for(f, "agent-1", "api.example.test", 1, "POST / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	f->r.body = framing;
	assert_int_equal(cred_scan_begin(&f->c), 0);
	evbuffer_add(f->r.scan_in, body, cut);
	r = cred_scan_pump(&f->c, sent, 0);
	if (r == 0) {
		evbuffer_add(f->r.scan_in, body + cut, len - cut);
		r = cred_scan_pump(&f->c, sent, 1);
	}
	return r;
}

static int
has(struct evbuffer *b, const char *s)
{
	return evbuffer_search(b, s, strlen(s), NULL).pos != -1;
}

static void
test_scan_split_anywhere(void **state)
{
	static const char clean[] = "{\"text\":\"sluice_ph_UnitTok0123 is not one\",\"n\":1}";
	static const char dirty[] = "{\"text\":\"hello " PH " world\"}";
	static const char escaped[] = "{\"text\":\"sluice\\u005fph_UnitTok0123456789abcdefghij\"}";
	struct fx *f = *state;
	size_t cut;

	for (cut = 0; cut <= sizeof(clean) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();
		char *got;

		assert_int_equal(scan_split(f, clean, cut, H1_BODY_LENGTH, sent), 0);
		assert_int_equal(evbuffer_get_length(sent), sizeof(clean) - 1);
		got = (char *)evbuffer_pullup(sent, -1);
		assert_memory_equal(got, clean, sizeof(clean) - 1);
		evbuffer_free(sent);
		done(f);
	}
	for (cut = 0; cut <= sizeof(dirty) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();

		assert_int_equal(scan_split(f, dirty, cut, H1_BODY_LENGTH, sent), 1);
		assert_false(has(sent, PH));
		assert_false(has(sent, "sluice_ph_Unit"));   /* not even its start went up */
		assert_string_equal(f->r.event_place, "body");
		assert_non_null(strstr(f->r.rule_buf, "too large to hold"));
		evbuffer_free(sent);
		done(f);
	}
	/* a decoded view: the JSON escape of '_' hides the placeholder from a raw search, not from this one */
	for (cut = 0; cut <= sizeof(escaped) - 1; cut++) {
		struct evbuffer *sent = evbuffer_new();

		assert_int_equal(scan_split(f, escaped, cut, H1_BODY_LENGTH, sent), 1);
		evbuffer_free(sent);
		done(f);
	}
}

static void
test_scan_chunked_and_trailers(void **state)
{
	static const char body[] = "a=1&b=2";
	struct fx *f = *state;
	struct evbuffer *sent = evbuffer_new();
	char *got;

	assert_int_equal(scan_split(f, body, 3, H1_BODY_CHUNKED, sent), 0);
	got = malloc(evbuffer_get_length(sent) + 1);
	assert_non_null(got);
	got[evbuffer_copyout(sent, got, evbuffer_get_length(sent))] = '\0';
	assert_string_equal(got, "3\r\na=1\r\n4\r\n&b=2\r\n0\r\n\r\n");
	free(got);
	evbuffer_free(sent);
	done(f);
	/* a placeholder in the trailers (cred_trailers_search, credbody.c) refuses the body at its end */
	sent = evbuffer_new();
	conn_for(f, "agent-1", "api.example.test", 1, "POST / HTTP/1.1\r\nHost: api.example.test\r\n\r\n");
	f->r.body = H1_BODY_CHUNKED;
	assert_int_equal(cred_scan_begin(&f->c), 0);
	trailers_hit = 1;
	evbuffer_add(f->r.scan_in, body, sizeof(body) - 1);
	assert_int_equal(cred_scan_pump(&f->c, sent, 1), 1);
	assert_string_equal(f->r.event_place, "trailers");
	assert_false(has(sent, "0\r\n\r\n"));   /* the body was not ended: the caller refuses it */
	evbuffer_free(sent);
	done(f);
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

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
