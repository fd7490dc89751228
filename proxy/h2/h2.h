/*
 * proxy/h2/h2.h - HTTP/2 on both sides: toward upstreams (h2up*.c: sessions
 * shared by a worker's requests, each stream seen by the relay as a struct
 * upstream) and toward the client (h2srv*.c: each stream a virtual struct conn
 * that the session drives like an HTTP/1.1 connection); h2fields.c collects
 * header blocks for both.
 *
 * Ownership: a client connection in CONN_S_H2 owns its struct h2srv
 * (c->h2.sess, h2srv_start .. h2srv_free); each stream owns its virtual
 * connection's buffers and points to it (c->h2.stream on that connection),
 * the link cut from either side when one goes (h2srv_stream_closed).  An
 * upstream stream or waiter belongs to the struct upstream that h2up_attach
 * returned, until h2up_detach.
 */
#ifndef SLUICE_PROXY_H2_H
#define SLUICE_PROXY_H2_H

#include <stddef.h>
#include <stdint.h>
#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>
#include "proxy/net/net.h"

struct conn;
struct worker;
struct h1_message;

/*
 * h2up.c: HTTP/2 toward upstreams.  One TLS connection per session, shared
 * by the concurrent requests of a worker to the same host:port: each
 * request gets a struct upstream whose <bev> is one end of a bufferevent
 * pair, so the relay speaks HTTP/1.1 to it exactly as to a socket; the
 * other end is translated to and from the stream's frames here.
 *
 * h2up_attach(): a stream on a READY session with room, or a place among the
 * waiters of one still handshaking (state UP_S_CONNECTING, <cb> reports);
 * NULL when the worker has no such session.  <ws>: a WebSocket upgrade, for
 * a READY session whose upstream allows extended CONNECT only (RFC 8441).  h2up_session_new(): <phys> is
 * a dial just begun offering h2; returns the caller's upstream (a waiter, or
 * already UP_S_FAILED).  If the host answers without h2 the first waiter
 * takes the connection as HTTP/1.1 and the others dial their own.
 * h2up_detach(): the owner lets go of a stream or a waiter (upstream_free).
 */
struct upstream *h2up_attach(struct worker *w, const char *tenant, const char *host, unsigned port,
                             int allow_private, int ws, upstream_cb cb, void *arg);
struct upstream *h2up_session_new(struct worker *w, struct upstream *phys, upstream_cb cb, void *arg);
void h2up_detach(struct upstream *up);
/* Closes every session of the worker (its streams see their upstream end). */
void h2up_clear(struct worker *w);
/*
 * h2srv.c: HTTP/2 toward the client.  h2srv_start() takes over a TLS
 * connection whose ALPN is h2 (state CONN_S_H2); h2srv_pump() is its pump;
 * h2srv_free() ends every stream (conn_close); h2srv_stream_closed() tells a
 * stream its virtual connection is going (an answer complete in CLOSING ends
 * the stream, anything else resets it).
 */
int h2srv_start(struct conn *c);
/*
 * h2fields.c: a header block collected field by field (both HTTP/2 sides).
 * h2_fields_add() appends one: 0, or -1 past <max_fields> or <max_bytes>
 * (names and values); h2_fields_nva() gives <nfields> views into <hdr>
 * (valid until it changes); h2_fields_invalid() is the
 * on_invalid_header_callback of both: nghttp2 would drop such a field and
 * deliver the rest, the gateway resets the stream instead.
 */
int h2_fields_add(struct evbuffer *hdr, size_t *nfields, size_t max_fields, size_t max_bytes, const uint8_t *name,
                  size_t nlen, const uint8_t *value, size_t vlen);
void h2_fields_nva(struct evbuffer *hdr, size_t nfields, nghttp2_nv *nva);
int h2_fields_invalid(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                      const uint8_t *value, size_t vlen, uint8_t flags, void *arg);
void h2srv_pump(struct conn *c);
void h2srv_free(struct conn *c);
void h2srv_stream_closed(struct conn *vc);
/*
 * The response relayed on stream connection <vc> ended with trailer fields:
 * <lines> holds them raw ("Name: value CRLF"..., already scrubbed), and is
 * drained.  They go out as a trailing HEADERS frame after the last DATA.
 */
void h2srv_trailers(struct conn *vc, struct evbuffer *lines);
/*
 * The response relayed on stream connection <vc> failed after its head went
 * out: its stream is reset (INTERNAL_ERROR) instead of ended, so the client
 * sees the truncation.  The connection still closes as usual.
 */
void h2srv_stream_abort(struct conn *vc);
/* Stream connection <vc>'s HTTP/2 connection's count of held body bytes (PROXY_H2_HELD_MAX), NULL for others. */
size_t *h2srv_held(struct conn *vc);
/* The client connection a stream's virtual connection <vc> belongs to (NULL once the stream is gone). */
struct conn *h2srv_parent(struct conn *vc);
/* 1 when one of the HTTP/2 connection <c>'s streams waits for an operator's approval (it is not idle). */
int h2srv_waiting(struct conn *c);
/* An HTTP/2 client connection <c> on which the client opened a stream (sent a request): 1, else 0. */
int h2srv_had_streams(const struct conn *c);
/*
 * An upstream answered 101 to the WebSocket upgrade of stream connection
 * <vc> (an RFC 8441 extended CONNECT): 0 when its Sec-WebSocket-Accept
 * matches the key generated for the stream, else -1 (not a WebSocket
 * stream, or a wrong or missing accept: refuse the upgrade).
 */
int h2srv_ws_accept_check(struct conn *vc, const struct h1_message *m);
/*
 * h2srv.c: HTTP/2 connection <c> was revoked (<why>): GOAWAY (its open
 * streams finish, no new stream starts), its streams are marked revoked,
 * and a WebSocket stream that carries an injected value is reset; the
 * connection closes when its last stream ends.
 */
void h2srv_revoke(struct conn *c, const char *why);

#endif
