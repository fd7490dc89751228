/* proxy/session/conn_ops.c - the HTTP/1.1 side of conn_ops.h, the shared no-ops, and which side a connection is on */
#include "proxy/session/session.h"
#include "proxy/session/conn_ops.h"

void
conn_op_nothing(struct conn *c)
{
	(void)c;
}

int
conn_op_no_requests(const struct conn *c)
{
	(void)c;
	return 0;
}

int
conn_op_not_waiting(struct conn *c)
{
	(void)c;
	return 0;
}

struct conn *
conn_op_self(struct conn *c)
{
	return c;
}

size_t *
conn_op_no_held(struct conn *c)
{
	(void)c;
	return NULL;
}

int
conn_op_no_trailers(struct conn *c, struct evbuffer *lines)
{
	(void)c;
	(void)lines;
	return 0;  /* framed by the caller in the last chunk, or dropped (HTTP/1.0) */
}

static int
h1_ws_accept(struct conn *c, const struct h1_message *m)
{
	(void)c;
	(void)m;
	return 0;  /* the client sent the key and checks the upstream's answer itself */
}

void
conn_op_no_revoke(struct conn *c, const char *why)
{
	(void)c;
	(void)why;
}

const struct conn_ops conn_ops_h1 = {
	.stream = 0,
	.http_version = NULL,
	.start = NULL,
	.pump = http_pump,
	.closing = conn_op_nothing,
	.release = conn_op_nothing,
	.had_requests = conn_op_no_requests,
	.waiting = conn_op_not_waiting,
	.parent = conn_op_self,
	.held = conn_op_no_held,
	.trailers = conn_op_no_trailers,
	.abort = conn_op_nothing,
	.ws_accept_check = h1_ws_accept,
	.ws_as_200 = 0,
	.interim = 0,
	.revoke = conn_op_no_revoke,
};


