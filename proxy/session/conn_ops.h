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

struct conn;
struct evbuffer;
struct h1_message;

struct conn_ops {
	/* 1: a stream's virtual connection: one request, no socket, not in the worker's list, ended by END_STREAM */
	unsigned char stream;
	/* the "http_version" of its request records, NULL: the request's own ("1.0", "1.1") */
	const char *http_version;
	/* Takes over a connection whose ALPN chose this protocol (conn_start_requests): 0, or -1 (close it); NULL: h1, vc */
	int (*start)(struct conn *c);
	/* Pumps the connection in its own state (CONN_S_H2: its streams); NULL for a virtual connection */
	void (*pump)(struct conn *c);
	/* conn_close, before the state is DEAD: a stream's is told its virtual connection goes (ended or reset). */
	void (*closing)(struct conn *c);
	/* conn_close, once DEAD: what the protocol holds (an HTTP/2 session ends every stream). */
	void (*release)(struct conn *c);
	/* 1 when the client sent a request on it (audit's no_request record), as far as the protocol knows. */
	int (*had_requests)(const struct conn *c);
	/* 1 while one of its requests waits for an operator (its idle timer must not close it). */
	int (*waiting)(struct conn *c);
	/* The client connection it belongs to: itself, a stream's parent, or NULL once that is gone. */
	struct conn *(*parent)(struct conn *c);
	/* The count of held body bytes shared with its siblings (PROXY_H2_HELD_MAX), or NULL. */
	size_t *(*held)(struct conn *c);
	/*
	 * The relayed response ended with trailer field lines <lines> (raw, scrubbed): 1 when the protocol carries
	 * them itself (drained), 0 when the caller frames them (HTTP/1.1 chunked) or drops them.
	 */
	int (*trailers)(struct conn *c, struct evbuffer *lines);
	/* The response failed after its head went out: the client must see a truncation (a stream is reset). */
	void (*abort)(struct conn *c);
	/*
	 * An upstream's 101 to a WebSocket upgrade: 0 when the protocol accepts it (HTTP/1.1 passes the
	 * upstream's Sec-WebSocket-Accept on to the client, who checks it), -1 when the key the gateway
	 * generated was not answered (refuse the upgrade).
	 */
	int (*ws_accept_check)(struct conn *c, const struct h1_message *m);
	/* 1: a WebSocket accept is answered 200 and carried on the stream (RFC 8441), 0: 101 and an upgrade */
	unsigned char ws_as_200;
	/* Interim responses (1xx) reach the client: 1 always, 0 when the request's own version decides */
	unsigned char interim;
	/* The connection was revoked (revoke.c) while it speaks this protocol (HTTP/2: GOAWAY). */
	void (*revoke)(struct conn *c, const char *why);
};

extern const struct conn_ops conn_ops_h1;
extern const struct conn_ops conn_ops_h2_conn;
extern const struct conn_ops conn_ops_h2_vc;

/* The operations that do nothing, for an implementation where they mean nothing (conn_ops.c). */
void conn_op_nothing(struct conn *c);
int conn_op_no_requests(const struct conn *c);
int conn_op_not_waiting(struct conn *c);
struct conn *conn_op_self(struct conn *c);
size_t *conn_op_no_held(struct conn *c);
int conn_op_no_trailers(struct conn *c, struct evbuffer *lines);
void conn_op_no_revoke(struct conn *c, const char *why);

/* The operations of <c>: the one place that reads which protocol a connection speaks. */
const struct conn_ops *conn_ops(const struct conn *c);

#endif
