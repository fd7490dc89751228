/*
 * proxy/h2/h2srv_int.h - what the two halves of HTTP/2 toward the client share:
 * h2srv.c (the session, the client's frames, stream lifetime, the pump) and
 * h2srv_resp.c (what a stream's virtual connection answers: the response
 * head, the DATA source, trailers, refusals, the WebSocket accept check).
 * See h2srv.c for the design.
 */
#ifndef SLUICE_PROXY_H2SRV_INT_H
#define SLUICE_PROXY_H2SRV_INT_H

#include <nghttp2/nghttp2.h>
#include "proxy/codec/h2conv.h"
#include "proxy/h2/h2.h"
#include "proxy/session/session.h"

#define H2_MAX_STREAMS 100          /* SETTINGS_MAX_CONCURRENT_STREAMS */
#define H2_STREAM_WINDOW 65535      /* request body bytes a stream may have in flight */
#define H2_RESETS_BURST 1000        /* client RST_STREAMs tolerated in a burst ... */
#define H2_RESETS_RATE 33           /* ... then per second (nghttp2's limit; GOAWAY beyond) */
#define H2_MAX_CONTINUATIONS 8      /* CONTINUATION frames per header block */
#define H2_FIELDS_MAX H1_MAX_HEADERS
#define H2_RESETS_OURS_BURST 200.0  /* client resets before ours: ENHANCE_YOUR_CALM beyond this burst ... */
#define H2_RESETS_OURS_RATE 20.0    /* ... refilled at this many per second */

struct h2stream {
	struct h2srv *s;
	int32_t id;
	struct conn *vc;              /* the request's virtual connection; NULL once it closed */
	struct evbuffer *hdr;         /* the header block as received: (u32 nlen, u32 vlen, name, value)... */
	size_t nfields;
	struct evbuffer *in, *out;    /* the virtual connection's buffers (owned here) */
	struct evbuffer *trailers;    /* the response's trailer lines, held for the end of DATA, or NULL */
	size_t data_unconsumed;       /* DATA bytes given to the pipeline and not yet consumed by it */
	size_t consume;               /* DATA bytes consumed, for the next WINDOW_UPDATE (h2srv_pump) */
	int refuse_status;            /* an answer of the gateway's to submit (h2srv_pump), or 0 */
	uint32_t reset_code;          /* a RST_STREAM to submit (h2srv_pump) */
	unsigned chunked : 1;         /* the body is chunk-framed into <in> */
	unsigned pending : 1;         /* the virtual connection wrote or ended: service it (h2srv_pump) */
	unsigned drained : 1;         /* DATA went out: the virtual connection may produce more */
	unsigned want_reset : 1;      /* a RST_STREAM is due (reset_code) */
	unsigned starting : 1;        /* translated: its virtual connection starts at the next service */
	unsigned req_ended : 1;       /* the client's END_STREAM arrived */
	int64_t req_left;             /* request body bytes its content-length still announces, -1 if none given */
	unsigned no_index : 1;        /* a secret was injected: its answer's fields are never indexed */
	unsigned head_req : 1;        /* the request was HEAD (the answer's framing) */
	unsigned head_sent : 1;       /* response HEADERS submitted */
	unsigned out_eof : 1;         /* the response is complete */
	unsigned deferred : 1;        /* the data source said DEFERRED */
	unsigned reset : 1;           /* a RST_STREAM was submitted */
	unsigned ws : 1;              /* an extended CONNECT (WebSocket): <ws_key> was generated */
	unsigned begun : 1;           /* its head translated: the pipeline (or a refusal of ours) has it */
	unsigned audited : 1;         /* a refusal of this stream was recorded (or counted) here */
	unsigned client_reset : 1;    /* the client reset it (RST_STREAM): not a refusal */
	char ws_key[H2CONV_WS_KEY_LEN];
	LIST_ENTRY(h2stream) link;
};

/* A revoked connection's GOAWAY (h2srv_revoke): due, sent (streams finish), final (the connection closes). */
enum h2_goaway { H2_GOAWAY_NONE = 0, H2_GOAWAY_DUE = 1, H2_GOAWAY_SENT = 2, H2_GOAWAY_FINAL = 3 };

struct h2srv {
	nghttp2_session *ng;
	struct conn *c;
	enum h2_goaway goaway;
	size_t consume_conn;          /* DATA of streams already gone, for the connection's WINDOW_UPDATE */
	double reset_tokens;          /* client RST_STREAMs still allowed (a bucket: H2_RESETS_OURS_*) */
	struct timespec reset_t;
	LIST_HEAD(, h2stream) streams;
	unsigned nstreams;
	size_t held;                  /* request body bytes its streams hold for semantic rules (PROXY_H2_HELD_MAX) */
};

/* Asks for a RST_STREAM with <code> (submitted by h2srv_pump); at most one per stream. */
void h2srv_stream_reset(struct h2stream *st, uint32_t code);
/* Refuses a stream before any pipeline runs (a translation error): a JSON answer with <status>, logged. */
void h2srv_stream_refuse(struct h2stream *st, int status, const char *reason);
/*
 * Records a refusal of stream <st> made here, before or outside its pipeline
 * (a translation error, a reset, bad trailers): a "request" record with
 * verdict deny, rule "http2", <status> (-1: none, the stream was reset) and
 * <reason>, within the connection's bound (http_refusal_admit).  Once per stream.
 */
void h2srv_audit_refusal(struct h2stream *st, int status, const char *reason);
/* Submits the refusal h2srv_stream_refuse prepared (from h2srv_pump, outside every nghttp2 call). */
void h2srv_refusal_submit(struct h2stream *st);
/* The response head is complete in the stream's <out>: submit it as HEADERS.  0, or -1 (reset). */
int h2srv_head_submit(struct h2stream *st);

/*
 * The HTTP/2 client side's operations, which proxy/h2/h2ops.c offers the
 * session as conn_ops_h2_conn and conn_ops_h2_vc (proxy/session/conn_ops.h).
 */
/*
 * h2srv.c: HTTP/2 toward the client.  h2srv_start() takes over a TLS
 * connection whose ALPN is h2 (state CONN_S_H2); h2srv_pump() is its pump;
 * h2srv_free() ends every stream (conn_close); h2srv_stream_closed() tells a
 * stream its virtual connection is going (an answer complete in CLOSING ends
 * the stream, anything else resets it).
 */
int h2srv_start(struct conn *c);
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
