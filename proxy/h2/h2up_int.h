/*
 * proxy/h2/h2up_int.h - what the two halves of HTTP/2 toward upstreams share:
 * h2up.c (sessions: dial, share, pump, close) and h2up_stream.c (a stream's
 * translation between the relay's HTTP/1.1 and the upstream's frames).
 * See h2up.c for the design.
 */
#ifndef SLUICE_PROXY_H2UP_INT_H
#define SLUICE_PROXY_H2UP_INT_H

#include <nghttp2/nghttp2.h>
#include "proxy/codec/h2conv.h"
#include "proxy/h2/h2.h"
#include "proxy/core/context.h"
#include "proxy/codec/ws.h"

#define H2UP_MAX_STREAMS 100            /* streams we run on one session, whatever the upstream allows */
#define H2UP_STREAM_WINDOW (64 * 1024)  /* response bytes one stream may have unconsumed (HTTP/2's default) */
/* the session's window is the sum of its streams': streams stalled by slow clients never block the others */
#define H2UP_CONN_WINDOW (H2UP_MAX_STREAMS * H2UP_STREAM_WINDOW)
#define H2UP_MAX_CONTINUATIONS 8
#define H2UP_CHUNK_PULL 16384           /* bytes made contiguous for one chunked-decoder step */

enum sess_state { SESS_CONNECTING = 1, SESS_READY = 2 };

struct h2up_stream {
	struct h2up_sess *s;          /* NULL once the session is gone */
	struct upstream *up;          /* the relay's side; NULL once it let go */
	struct bufferevent *pb;       /* our end of the pair */
	int32_t id;                   /* 0 until submitted */
	/* the request, from the relay's HTTP/1.1 */
	enum h1_framing body;
	uint64_t body_left;
	struct h1_chunked chunk;
	struct evbuffer *data;        /* decoded request body waiting to go out as DATA */
	struct evbuffer *trailers;    /* the request's chunked trailer lines, or NULL */
	char method[H2CONV_METHOD_MAX + 1];
	/* the response */
	struct evbuffer *hdr;         /* the header block being received: (u32 nlen, u32 vlen, name, value)... */
	size_t nfields;
	size_t unacked;               /* DATA written to the pair and not yet taken by the relay */
	size_t consume;               /* DATA taken by the relay: the next WINDOW_UPDATE (sess_pump) */
	unsigned head_done : 1;       /* the request head was submitted */
	unsigned body_done : 1;       /* the request body is all in <data> */
	unsigned deferred : 1;        /* the data source said DEFERRED */
	unsigned resp_head : 1;       /* the final response head went to the relay */
	unsigned resp_chunked : 1;    /* ... saying Transfer-Encoding: chunked */
	unsigned complete : 1;        /* the response ended in order */
	unsigned closed : 1;          /* nghttp2 closed the stream */
	unsigned want_reset : 1;      /* the relay let go of an open stream: RST_STREAM CANCEL (sess_pump) */
	unsigned feed : 1;            /* the pair has request bytes to take (sess_pump) */
	unsigned marked : 1;          /* on the session's <dirty> list */
	unsigned tunnel : 1;          /* a WebSocket over extended CONNECT: raw bytes both ways after the 200 */
	char ws_accept[WS_ACCEPT_LEN + 1];  /* the Sec-WebSocket-Accept our 101 to the relay carries */
	LIST_ENTRY(h2up_stream) link;
	TAILQ_ENTRY(h2up_stream) dirty_link;
};

struct h2up_sess {
	struct worker *w;
	struct upstream *phys;        /* the TLS connection */
	nghttp2_session *ng;
	enum sess_state state;
	char host[HOST_BUF];
	char tenant[UPSTREAM_TENANT_MAX];  /* whose requests its streams carry (conn_tenant): one tenant only */
	unsigned port;
	int allow_private;
	unsigned goaway : 1;          /* no new streams */
	unsigned kicked : 1;
	unsigned dead : 1;
	size_t consume_conn;          /* DATA of streams already closed, for the session's WINDOW_UPDATE */
	unsigned nstreams, nwait;
	LIST_HEAD(, h2up_stream) streams;
	TAILQ_HEAD(, h2up_stream) dirty;  /* streams with something for sess_pump to do */
	LIST_HEAD(, upstream) waiters;
	struct event *kick;           /* runs sess_pump from the loop */
	struct evbuffer *sendbuf;     /* frames gathered for one write to the connection */
	struct event *idle;           /* closes a session without streams */
	LIST_ENTRY(h2up_sess) link;
};

/* Runs the session's pump from the loop (not from inside nghttp2). */
void h2up_sess_kick(struct h2up_sess *s);
/* <st> has work for the pump (feed, consume, want_reset): queued on its session, which is kicked. */
void h2up_stream_mark(struct h2up_stream *st);
/* The relay sees the upstream end of <st>: what was written reaches it first, then EOF. */
void h2up_stream_eof(struct h2up_stream *st);
/* Takes what the relay wrote into the stream's pair: the head (submitted), then the body. 0, or -1 (fail it). */
int h2up_stream_feed(struct h2up_stream *st);
/* Sets the response-side callbacks (fields, frames, DATA) of an upstream session. */
void h2up_callbacks(nghttp2_session_callbacks *cb);

#endif
