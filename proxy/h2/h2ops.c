/*
 * proxy/h2/h2ops.c - the HTTP/2 sides of conn_ops.h: the client connection
 * (its session, state CONN_S_H2) and each stream's virtual connection.
 */
#include "h2srv_int.h"
#include "proxy/session/conn_ops.h"

static int
h2_no_ws(struct conn *c, const struct h1_message *m)
{
	(void)c;
	(void)m;
	return -1;  /* the connection itself carries no request */
}

static int
vc_trailers(struct conn *vc, struct evbuffer *lines)
{
	h2srv_trailers(vc, lines);
	return 1;
}

const struct conn_ops conn_ops_h2_conn = {
	.stream = 0,
	.http_version = NULL,
	.start = h2srv_start,
	.pump = h2srv_pump,
	.closing = conn_op_nothing,
	.release = h2srv_free,
	.had_requests = h2srv_had_streams,
	.waiting = h2srv_waiting,
	.parent = conn_op_self,
	.held = conn_op_no_held,
	.trailers = conn_op_no_trailers,
	.abort = conn_op_nothing,
	.ws_accept_check = h2_no_ws,
	.ws_as_200 = 0,
	.interim = 0,
	.pump_each_round = 1,
	.revoke = h2srv_revoke,
};

const struct conn_ops conn_ops_h2_vc = {
	.stream = 1,
	.http_version = "2",
	.start = NULL,
	.pump = NULL,
	.closing = h2srv_stream_closed,
	.release = conn_op_nothing,
	.had_requests = conn_op_no_requests,
	.waiting = conn_op_not_waiting,
	.parent = h2srv_parent,
	.held = h2srv_held,
	.trailers = vc_trailers,
	.abort = h2srv_stream_abort,
	.ws_accept_check = h2srv_ws_accept_check,
	.ws_as_200 = 1,
	.interim = 1,
	.revoke = conn_op_no_revoke,
};
