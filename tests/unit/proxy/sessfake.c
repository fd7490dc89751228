/*
 * tests/unit/proxy/sessfake.c - the recording session of the proxy/ unit
 * tests that run without a gateway (sessfake.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "proxy/session/session.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/refusal.h"
#include "tests/unit/proxy/sessfake.h"

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
