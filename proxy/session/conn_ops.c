/* proxy/session/conn_ops.c - the HTTP/1.1 side of conn_ops.h, and which side a connection is on */
#include "proxy/proxy_int.h"
#include "proxy/session/conn_ops.h"

static void
h1_nothing(struct conn *c)
{
	(void)c;
}

static int
h1_none(const struct conn *c)
{
	(void)c;
	return 0;
}

static int
h1_not_waiting(struct conn *c)
{
	(void)c;
	return 0;
}

static struct conn *
h1_parent(struct conn *c)
{
	return c;
}

static size_t *
h1_held(struct conn *c)
{
	(void)c;
	return NULL;
}

static int
h1_trailers(struct conn *c, struct evbuffer *lines)
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

static void
h1_revoke(struct conn *c, const char *why)
{
	(void)c;
	(void)why;
}

const struct conn_ops conn_ops_h1 = {
	.stream = 0,
	.http_version = NULL,
	.start = NULL,
	.pump = http_pump,
	.closing = h1_nothing,
	.release = h1_nothing,
	.had_requests = h1_none,
	.waiting = h1_not_waiting,
	.parent = h1_parent,
	.held = h1_held,
	.trailers = h1_trailers,
	.abort = h1_nothing,
	.ws_accept_check = h1_ws_accept,
	.ws_as_200 = 0,
	.interim = 0,
	.revoke = h1_revoke,
};

const struct conn_ops *
conn_ops(const struct conn *c)
{
	if (c->h2_stream)
		return &conn_ops_h2_vc;
	return c->h2_conn ? &conn_ops_h2_conn : &conn_ops_h1;
}
