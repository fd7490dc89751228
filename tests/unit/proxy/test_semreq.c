/*
 * test_semreq.c - semantic rules in the request path (proxy/judge/semantic.c)
 * without a gateway: a request head parsed by the real parser, a struct
 * conn / struct req of the shared fixture (sessfake.h), the client's body bytes arriving in a test
 * buffer (cio_in) a piece at a time and moved by a fake req_body_hold (the
 * net below), and a recording session above (the refusals semantic.c
 * returns, recorded as the session would answer them: sessfake.h;
 * the steps sem_hold_pump returns, counted as hold.c would take them).  Covered: the body bound (413 from Content-Length at once, and
 * from a chunked body as soon as it grows past max_body), a body decided only
 * once whole whatever the pieces, allow and deny with the rule's id, report
 * mode (passes, audit members say what would have happened), a hold with no
 * approvals registry (503, fail closed) and with no body (parked at once),
 * and the gateway's bound on held bytes (503), given back at the request's end.
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
#include "proxy/h2/h2.h"
#include "proxy/core/context.h"
#include "audit/writer.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/judge/semantic.h"
#include "proxy/judge/semantic_int.h"
#include "tests/unit/proxy/sessfake.h"

static const char yaml[] =
	"ca: /nonexistent/ca\n"
	"default: deny\n"
	"hosts:\n"
	"  api.example.test:\n"
	"    rules:\n"
	"      - id: post-to-bots\n"
	"        allow:\n"
	"          method: POST\n"
	"          path: /chat\n"
	"          json: { \"$.channel\": { in: [C0BOTS] } }\n"
	"          max_body: 64\n"
	"      - id: refunds\n"
	"        hold: { method: POST, path: /refunds, timeout: 1m }\n"
	"      - id: ping\n"
	"        hold: { method: GET, path: /ping }\n"
	"  report.test:\n"
	"    mode: report\n"
	"    rules:\n"
	"      - id: no-admin\n"
	"        deny: { path: \"/admin/**\" }\n";

/* ---- the session above and the net below ---- */

static struct {
	int sent, dialled, waits;
} seen;
static struct evbuffer *client_in;   /* the client's bytes not read yet (cio_in) */
static int chunked_end;              /* the fake chunked body ends once client_in is empty */
static size_t fed;                   /* body bytes the client has sent so far */

/* What the session does with the step sem_hold_pump returns (proxy/session/hold.c), counted. */
static int
step_taken(int step)
{
	switch (step) {
	case HOLD_SEND_WHOLE:
		seen.sent++;     /* the held body is whole and allowed: cred_body_finish, then the dial */
		return 0;
	case HOLD_SEND_STREAM:
	case HOLD_SEND:
		seen.dialled++;  /* the command section goes first (cred_body_stream), then the dial */
		return 0;
	case HOLD_MORE:
	case HOLD_MORE_MOVED:
		seen.waits++;    /* more of the body is awaited */
		return 0;
	case HOLD_REFUSED:
		return -1;
	default:
		return 0;
	}
}

int
relay_dial(struct conn *c, struct refusal *rf)
{
	(void)c, (void)rf;
	seen.dialled++;
	return 0;
}

struct evbuffer *
cio_in(struct conn *c)
{
	(void)c;
	return client_in;
}

/* core/body.c's: moves what the framing allows from the client's input to r->hold (the body as sent: length,
 * or "chunked" here raw) */
int
req_body_hold(struct conn *c, struct evbuffer *in, struct refusal *rf)
{
	struct req *r = c->req;
	struct evbuffer *out = r->hold;
	size_t n = evbuffer_get_length(in);

	(void)rf;
	if (r->body == H1_BODY_LENGTH && n > r->body_left)
		n = (size_t)r->body_left;
	if (n == 0 && !(r->body == H1_BODY_CHUNKED && chunked_end && !r->body_done))
		return 0;
	evbuffer_remove_buffer(in, out, n);
	if (r->body == H1_BODY_LENGTH)
		r->body_left -= n;
	if ((r->body == H1_BODY_LENGTH && r->body_left == 0) ||
	    (r->body == H1_BODY_CHUNKED && chunked_end && evbuffer_get_length(in) == 0))
		r->body_done = 1;
	return 1;
}

static void
unexpected(const char *what)
{
	fail_msg("semantic.c called %s", what);
}

void
cio_read(struct conn *c, int on)
{
	(void)c, (void)on;
}

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	(void)c, (void)ms;
}

void
conn_set_state(struct conn *c, enum conn_state s)
{
	c->state = s;
}

void
conn_close(struct conn *c)
{
	(void)c;
	unexpected("conn_close");
}

void
conn_pump(struct conn *c)
{
	(void)c;
	unexpected("conn_pump");
}

int
cred_scan_begin(struct conn *c)
{
	(void)c;
	unexpected("cred_scan_begin");
	return -1;
}

void
http_audit_request(struct conn *c, enum audit_verdict verdict)
{
	(void)c, (void)verdict;
}

const char *
conn_req_id(struct conn *c)
{
	(void)c;
	return "1-1";
}

void
refuse_proto_keep_section(struct conn *c, const char *buf, size_t len)
{
	(void)c, (void)buf, (void)len;
}

void
sem_budget_refund(struct conn *c)
{
	(void)c;
	unexpected("sem_budget_refund");
}


int
approvals_add(struct approvals *a, const struct approval_info *info, unsigned timeout_ms, struct event_base *base,
              approval_cb cb, void *arg, char id[17])
{
	(void)a, (void)info, (void)timeout_ms, (void)base, (void)cb, (void)arg, (void)id;
	unexpected("approvals_add");
	return SLUICE_EINVAL;
}

void
approvals_cancel(struct approvals *a, const char *id)
{
	(void)a, (void)id;
}

const char *
approvals_decision_name(int decision)
{
	return decision == 1 ? "approved" : "other";
}

/* ---- fixture (sessfake.h): the parsed head of the current case ---- */

static struct h1_message msg;
static char head_buf[1024];

static int
setup(void **state)
{
	struct fake_fx *f = fake_fx_new(yaml);

	if (f == NULL)
		return -1;
	client_in = evbuffer_new();
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fake_fx *f = *state;

	evbuffer_free(client_in);
	fake_fx_free(f);
	return 0;
}

/* Parses <head> toward <host> and runs sem_head as http.c does: its return. */
static int
head(struct fake_fx *f, const char *host, const char *h)
{
	static const struct h1_limits lim = {8192, 4096, 100};
	const char *err = NULL;
	int status = 0, n;

	memset(&seen, 0, sizeof(seen));
	chunked_end = 0;
	fed = 0;
	atomic_store(&f->gw.held, 0);   /* a failed case before does not fail the next */
	evbuffer_drain(client_in, evbuffer_get_length(client_in));
	fake_fx_conn(f, host);
	snprintf(head_buf, sizeof(head_buf), "%s", h);
	n = h1_parse_request(head_buf, strlen(head_buf), &lim, &msg, &err, &status);
	assert_int_equal(n, (int)strlen(head_buf));
	memcpy(f->r.method, msg.method, msg.method_len);
	f->r.method_len = msg.method_len;
	f->r.path = xstrndup(msg.target, msg.target_len);
	f->r.path_len = msg.target_len;
	f->r.body = msg.framing;
	f->r.body_left = msg.content_length;
	f->r.client_keep_alive = 1;
	return fake_ret(&f->c, sem_head(&f->c, &msg, &fake_rf));
}

/* The body arrives in pieces of <piece> bytes, the session pumping after each, as http.c does in CONN_S_HOLD. */
static void
body(struct fake_fx *f, const char *b, size_t piece)
{
	size_t len = strlen(b), off;

	assert_true(sem_holds_body(&f->c));
	f->r.hold = evbuffer_new();
	for (off = 0; off < len && fake_ans.n + seen.sent == 0; off += piece) {
		evbuffer_add(client_in, b + off, len - off < piece ? len - off : piece);
		fed += len - off < piece ? len - off : piece;
		if (off + piece >= len)
			chunked_end = 1;
		fake_ret(&f->c, step_taken(sem_hold_pump(&f->c, &fake_rf)));
		/* decided only once the body is whole */
		if (off + piece < len && f->r.body != H1_BODY_CHUNKED)
			assert_int_equal(seen.sent, 0);
	}
}

static void
end(struct fake_fx *f)
{
	sem_req_free(&f->c);
	assert_null(f->r.sem);
	if (f->r.hold != NULL)
		evbuffer_free(f->r.hold);
	f->r.hold = NULL;
	free(f->r.path);
	assert_int_equal(atomic_load(&f->gw.held), 0);   /* every held byte counted is given back */
}

/* ---- the body bound ---- */

static void
test_body_bound(void **state)
{
	struct fake_fx *f = *state;
	char big[200];

	/* a Content-Length over max_body: 413 at the head, nothing held */
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 65\r\n\r\n"), -1);
	assert_int_equal(fake_ans.status, 413);
	assert_string_equal(fake_ans.rule, "max_body");
	assert_non_null(strstr(fake_ans.reason, "(64 bytes)"));
	assert_int_equal(f->r.client_keep_alive, 0);
	end(f);
	/* chunked: 413 as soon as it grows past 64, before it ends */
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"),
	                 0);
	body(f, big, 40);
	assert_int_equal(fake_ans.status, 413);
	assert_int_equal(seen.sent, 0);
	assert_true(fed < strlen(big));   /* refused before the end arrived */
	end(f);
	/* exactly 64 is held and decided */
	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 64\r\n\r\n"), 0);
	body(f, "{\"channel\":\"C0BOTS\",\"text\":\"0123456789012345678901234567890123\"}", 7);
	assert_int_equal(fake_ans.n, 0);
	assert_int_equal(seen.sent, 1);
	end(f);
}

/* ---- decided with the body, whatever its pieces ---- */

static void
test_decided_whole(void **state)
{
	static const char *const bodies[] = {"{\"channel\":\"C0BOTS\"}", "{\"channel\":\"C0EVIL\"}"};
	struct fake_fx *f = *state;
	size_t piece, i;
	char h[256];

	for (i = 0; i < 2; i++)
		for (piece = 1; piece <= strlen(bodies[i]); piece++) {
			snprintf(h, sizeof(h), "POST /chat HTTP/1.1\r\nHost: api.example.test\r\nContent-Type: application/json\r\n"
			         "Content-Length: %zu\r\n\r\n", strlen(bodies[i]));
			assert_int_equal(head(f, "api.example.test", h), 0);
			assert_int_equal(fake_ans.n, 0);
			body(f, bodies[i], piece);
			if (i == 0) {
				assert_int_equal(seen.sent, 1);
				assert_int_equal(fake_ans.n, 0);
				assert_string_equal(f->r.rule, "post-to-bots");
			} else {
				assert_int_equal(seen.sent, 0);
				assert_int_equal(fake_ans.status, 403);
				assert_string_equal(fake_ans.rule, "default");
			}
			/* the body the decision read is what is sent: all of it is in r->hold */
			assert_int_equal(evbuffer_get_length(f->r.hold), strlen(bodies[i]));
			end(f);
		}
}

/* ---- report mode: passes, and the audit says what enforcement would have done ---- */

static void
test_report_mode(void **state)
{
	struct fake_fx *f = *state;
	struct audit_rec a;

	assert_int_equal(head(f, "report.test", "GET /admin/users HTTP/1.1\r\nHost: report.test\r\n\r\n"), 0);
	assert_int_equal(fake_ans.n, 0);
	assert_non_null(f->r.sem);
	memset(&a, 0, sizeof(a));
	sem_audit_fill(&f->r, &a);
	assert_non_null(a.report_verdict);
	assert_string_equal(a.report_verdict, "deny");
	assert_string_equal(a.report_rule, "no-admin");
	end(f);
	/* not matched by the report-mode rule: the host's default is reported, and the request passes (mode report) */
	assert_int_equal(head(f, "report.test", "GET /other HTTP/1.1\r\nHost: report.test\r\n\r\n"), 0);
	assert_int_equal(fake_ans.n, 0);
	memset(&a, 0, sizeof(a));
	sem_audit_fill(&f->r, &a);
	assert_non_null(a.mode);
	assert_string_equal(a.mode, "report");
	end(f);
}

/* ---- holds fail closed without an approvals registry ---- */

static void
test_hold_unavailable(void **state)
{
	struct fake_fx *f = *state;

	/* no body: parked at once (sem_park_start), and with no registry refused 503 */
	assert_int_equal(head(f, "api.example.test", "GET /ping HTTP/1.1\r\nHost: api.example.test\r\n\r\n"), 0);
	assert_true(sem_park_pending(&f->c));
	f->c.state = CONN_S_HOLD;  /* the session enters CONN_S_HOLD first (http.c), then parks */
	fake_ret(&f->c, sem_park_start(&f->c, &fake_rf));
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "approval unavailable");
	assert_int_equal(seen.dialled + seen.sent, 0);
	assert_false(sem_waiting(&f->c));
	end(f);
	/* with a body: held whole first, then the same */
	assert_int_equal(head(f, "api.example.test", "POST /refunds HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Length: 9\r\n\r\n"), 0);
	assert_false(sem_park_pending(&f->c));
	body(f, "id=pi_123", 4);
	assert_int_equal(fake_ans.status, 503);
	assert_int_equal(seen.dialled + seen.sent, 0);
	end(f);
}

/* ---- the gateway's bound on held bytes ---- */

static void
test_held_bound(void **state)
{
	struct fake_fx *f = *state;

	assert_int_equal(head(f, "api.example.test", "POST /chat HTTP/1.1\r\nHost: api.example.test\r\n"
	                                             "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n"), 0);
	atomic_store(&f->gw.held, PROXY_HELD_MAX - 10);   /* other requests hold all but 10 bytes */
	body(f, "{\"channel\":\"C0BOTS\"}", 20);
	assert_int_equal(fake_ans.status, 503);
	assert_string_equal(fake_ans.error, "gateway busy");
	assert_int_equal(seen.sent, 0);
	sem_req_free(&f->c);
	assert_int_equal(atomic_load(&f->gw.held), PROXY_HELD_MAX - 10);   /* its 20 given back */
	atomic_store(&f->gw.held, 0);
	end(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body_bound),
		cmocka_unit_test(test_decided_whole),
		cmocka_unit_test(test_report_mode),
		cmocka_unit_test(test_hold_unavailable),
		cmocka_unit_test(test_held_bound),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
