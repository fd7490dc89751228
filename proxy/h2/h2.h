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
#include "proxy/core/conn.h"

/* The session operations of an HTTP/2 client connection (its ALPN chose h2) and of a stream's virtual
 * connection (proxy/session/conn_ops.h says what each does); the gateway gives the first to the session. */
extern const struct conn_ops conn_ops_h2_conn;
extern const struct conn_ops conn_ops_h2_vc;

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
/* Those four as the upstream multiplexer the gateway gives net (gw->up_mux). */
extern const struct upstream_mux h2up_mux;
/*
 * h2srv.c (HTTP/2 toward the client): its functions are private to proxy/h2/
 * (h2srv_int.h); the session reaches a connection or a stream through
 * conn_ops (proxy/session/conn_ops.h).
 */
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

#endif
