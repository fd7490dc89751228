/*
 * tests/unit/proxy/mcp_resp_harness.h - proxy/judge/mcp_resp.c linked alone,
 * for tests/fuzz/fuzz_mcp_resp.c and bench/mcp_resp_bench.c: the request
 * side's mcp_req_method_of and mcp_req_awaits (no request in flight: every
 * list result is filtered by its shape) and mcp_req_peer_add (no server request is
 * remembered), and an answer begun on the endpoint /mcp.  Include it in one
 * translation unit of a program (it defines those three).
 */
#ifndef SLUICE_TESTS_UNIT_PROXY_MCP_RESP_HARNESS_H
#define SLUICE_TESTS_UNIT_PROXY_MCP_RESP_HARNESS_H

#include <string.h>

#include "policy/mcp.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/core/conn.h"
#include "proxy/judge/mcp_req.h"
#include "proxy/judge/mcp_resp.h"

enum policy_mcp_method
mcp_req_method_of(const struct req *r, const json_t *id)
{
	(void)r;
	(void)id;
	return POLICY_MCP_M_NONE;
}

int
mcp_req_awaits(const struct req *r)
{
	(void)r;
	return 0;
}

/* The gateway's table of server requests (proxy/judge/mcp_peer.c) is not linked: none is remembered. */
void
mcp_req_peer_add(struct conn *c, const struct policy_mcp_msg *msg)
{
	(void)c;
	(void)msg;
}

static struct conn *
harness_self(struct conn *x)
{
	return x;
}

static const struct conn_ops harness_ops = {.parent = harness_self};

/*
 * <c>, <r> and <m> (caller storage) set up as a GET of /mcp on <host> under
 * <pol> answered with <json> ? application/json : text/event-stream, and
 * the answer begun: mcp_resp_begin's result.
 */
static int
harness_begin(struct conn *c, struct req *r, struct h1_message *m, struct policy *pol, const struct policy_host *host,
              int json)
{
	static char path[] = "/mcp";

	memset(c, 0, sizeof(*c));
	memset(r, 0, sizeof(*r));
	memset(m, 0, sizeof(*m));
	c->req = r;
	c->ops = &harness_ops;
	c->pol = pol;
	c->entry = host;
	r->path = path;
	m->framing = H1_BODY_CHUNKED;
	m->headers[0].name = "Content-Type";
	m->headers[0].name_len = 12;
	m->headers[0].value = json ? "application/json" : "text/event-stream";
	m->headers[0].value_len = strlen(m->headers[0].value);
	m->nheaders = 1;
	return mcp_resp_begin(c, m);
}

#endif
