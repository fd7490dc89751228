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

#endif
