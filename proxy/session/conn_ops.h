/*
 * proxy/session/conn_ops.h - how the session meets the client's protocol.
 *
 * A request reaches http.c on a struct conn: an HTTP/1.1 client connection,
 * or the virtual connection of one HTTP/2 stream (proxy/h2/h2srv.c), whose
 * bytes are the stream's rendered as HTTP/1.1.  Whatever differs between the
 * two (trailers, aborts, holds counted per connection, WebSocket accepts,
 * revocation, the connection's life) is asked through these operations, so
 * no module outside proxy/h2/ tests which one a connection is.
 *
 * Three implementations: conn_ops_h1 (session/conn_ops.c), and in proxy/h2/
 * conn_ops_h2_conn (the HTTP/2 client connection itself, state CONN_S_H2)
 * and conn_ops_h2_vc (a stream's virtual connection).  Every pointer is set;
 * an operation that means nothing for an implementation does nothing (start
 * and pump are NULL where the connection never takes over or pumps itself).
 * Borrowed arguments only; nothing here takes or frees what it is given
 * unless said.
 */
#ifndef SLUICE_PROXY_CONN_OPS_H
#define SLUICE_PROXY_CONN_OPS_H

#include <stddef.h>
#include "proxy/core/conn.h"

struct conn;
struct evbuffer;
struct h1_message;


extern const struct conn_ops conn_ops_h1;

/* The operations that do nothing, for an implementation where they mean nothing (conn_ops.c). */
void conn_op_nothing(struct conn *c);
int conn_op_no_requests(const struct conn *c);
int conn_op_not_waiting(struct conn *c);
struct conn *conn_op_self(struct conn *c);
size_t *conn_op_no_held(struct conn *c);
int conn_op_no_trailers(struct conn *c, struct evbuffer *lines);
void conn_op_no_revoke(struct conn *c, const char *why);


#endif
