/*
 * tests/unit/proxy/sessfake.c - the recording session of the proxy/ unit
 * tests that run without a gateway (sessfake.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "proxy/session/session.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/refusal.h"
#include "tests/unit/proxy/sessfake.h"
#include "proxy/judge/mcp_resp.h"

struct fake_answer fake_ans;
struct refusal fake_rf;

void
fake_answer_reset(void)
{
	memset(&fake_ans, 0, sizeof(fake_ans));
	memset(&fake_rf, 0, sizeof(fake_rf));
}

/* What the session's answer of <rf> on <c> would say, recorded. */
static void
record(struct conn *c, const struct refusal *rf)
{
	assert_int_equal(rf->quiet, 0);   /* audited */
	assert_true(rf->status >= 400 && rf->status <= 599);
	assert_non_null(rf->rule);
	assert_non_null(rf->reason);
	fake_ans.n++;
	fake_ans.status = rf->status;
	snprintf(fake_ans.error, sizeof(fake_ans.error), "%s", refusal_err_text(rf->err));
	snprintf(fake_ans.rule, sizeof(fake_ans.rule), "%s", rf->rule);
	snprintf(fake_ans.reason, sizeof(fake_ans.reason), "%s", rf->reason);
	fake_ans.close = rf->close;
	if (rf->close)
		c->req->client_keep_alive = 0;   /* http_refuse's first step */
}

int
fake_ret(struct conn *c, int ret)
{
	if (ret < 0)
		assert_int_not_equal(fake_rf.status, 0);   /* refused: the refusal is filled */
	if (fake_rf.status != 0)
		record(c, &fake_rf);
	memset(&fake_rf, 0, sizeof(fake_rf));
	return ret;
}

void
http_refuse(struct conn *c, const struct refusal *rf)
{
	record(c, rf);
}

static int
no_trailers(struct conn *c, struct evbuffer *lines)
{
	(void)c, (void)lines;
	fail_msg("trailers: not an HTTP/2 stream");
	return 0;
}

static void
no_abort(struct conn *c)
{
	(void)c;
	fail_msg("abort: not expected");
}

static const struct conn_ops fake_ops_h1 = {
	.held = conn_op_no_held,
	.trailers = no_trailers,
	.abort = no_abort,
};

size_t *
conn_op_no_held(struct conn *c)
{
	(void)c;
	return NULL;
}

/* The operations every connection of these tests speaks (a fake HTTP/1.1): set on each conn by its fixture. */
const struct conn_ops *const sessfake_ops = &fake_ops_h1;

int
fake_policy(const char *yaml, struct policy_config **cfg, struct policy **pol)
{
	char err[512];

	if (policy_load_buffer("unit.yaml", yaml, strlen(yaml), cfg, pol, err, sizeof(err)) != 0) {
		fprintf(stderr, "policy: %s\n", err);
		return -1;
	}
	return 0;
}

const char *
conn_peer_str(const struct conn *c, char *buf)
{
	(void)c;
	snprintf(buf, CONN_ADDR_STR, "10.200.1.2:40000");
	return buf;
}

struct fake_fx *
fake_fx_new(const char *yaml)
{
	struct fake_fx *f = calloc(1, sizeof(*f));

	if (f == NULL || fake_policy(yaml, &f->cfg, &f->pol) != 0) {
		free(f);
		return NULL;
	}
	f->w.gw = &f->gw;
	return f;
}

void
fake_fx_free(struct fake_fx *f)
{
	free(f->r.cred);
	policy_unref(f->pol);
	policy_config_free(f->cfg);
	free(f);
}

struct conn *
fake_fx_conn(struct fake_fx *f, const char *host)
{
	struct policy_conn_decision d;

	free(f->r.cred);
	memset(&f->c, 0, sizeof(f->c));
	memset(&f->r, 0, sizeof(f->r));
	f->r.cred = calloc(1, sizeof(*f->r.cred));  /* cred_req_new without credreq.c */
	assert_non_null(f->r.cred);
	fake_answer_reset();
	f->c.w = &f->w;
	f->c.ops = sessfake_ops;
	f->c.pol = f->pol;
	f->c.tls = 1;
	f->c.state = CONN_S_REQ_HEAD;
	snprintf(f->host, sizeof(f->host), "%s", host);
	f->c.host = f->host;
	f->c.sandbox = policy_sandbox_count(f->pol) > 0 ? policy_sandbox_get(f->pol, 0)->name : NULL;
	policy_decide_conn(f->pol, host, 443, &d);
	assert_int_equal(d.verdict, POLICY_INTERCEPT);
	f->c.entry = d.host;
	f->c.req = &f->r;
	return &f->c;
}
