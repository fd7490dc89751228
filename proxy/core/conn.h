/*
 * proxy/core/conn.h - the record of a client connection (struct conn) and of
 * the request in flight on it (struct req): data only, read by every layer of
 * the request path (net, h2, cred, judge, session), written by the module
 * that owns each part.  The functions that drive them are the session's
 * (proxy/session/session.h); how a connection's protocol is asked is
 * struct conn_ops, set on the connection by whoever speaks it.
 *
 * Ownership and lifetime (the rule every module keeps):
 *  - A struct conn belongs to its worker from conn_accept to its reaping:
 *    conn_close marks it CONN_S_DEAD and the worker frees it later, never
 *    inside one of its own callbacks.  An HTTP/2 stream's virtual connection
 *    belongs to the stream (proxy/h2/h2.h) and is closed the same way.
 *  - c->req, the request in flight, belongs to the connection: created by the
 *    session at a request head and freed only by the session when the request
 *    ends (http_next_request, conn_close).  Each module that keeps state for
 *    a request keeps it in its own member of struct req, allocates it, and
 *    frees it in its *_free / *_release function, which the session calls at
 *    the request's end (r->sem: semantic.h; r->cred, r->hold:
 *    cred.h; r->ws: wstunnel.c; r->refuse: refuse_proto.c).
 *  - Answering a request (http_answer and its kin) ends it: c->req may be
 *    gone on return, so a caller that answered returns at once and says so
 *    (-1) to its own caller.
 *  - Strings in struct req point into the request's own storage or to static
 *    text; c->pol and c->entry are the snapshot the connection was judged by
 *    (a reference held until reaping).
 *  - c->ops is never NULL: conn_accept sets the HTTP/1.1 operations, the
 *    HTTP/2 module replaces them when it takes a connection over (ALPN h2)
 *    or creates a stream's virtual connection.
 */
#ifndef SLUICE_PROXY_CORE_CONN_H
#define SLUICE_PROXY_CORE_CONN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <openssl/ssl.h>
#include "policy/policy.h"
#include "proxy/codec/h1_parse.h"

#define CONN_ADDR_STR 64               /* an address with port as text, "[v6]:port" */
#define PROXY_TRAILER_MAX 8192         /* chunked trailer section bound (both directions, HTTP/1.1 and 2) */

struct conn;
struct req;
struct worker;
struct upstream;
struct cred_req;
struct sem_req;
struct mcp_req;
struct ws_tunnel;
struct refuse_git;
struct mcp_resp;
struct sbx_entry;
struct h2srv;
struct h2stream;
struct h1_message;

/*
 * How the session meets the client's protocol (proxy/session/conn_ops.h has
 * the details and the HTTP/1.1 implementation, proxy/h2/h2.h the HTTP/2 ones).
 */
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
	/* 1: the I/O pumps it in each round even when no bytes moved, and again while it queued output (its
	 * streams kick it: HTTP/2); 0: only when bytes moved */
	unsigned char pump_each_round;
	/* The connection was revoked (revoke.c) while it speaks this protocol (HTTP/2: GOAWAY). */
	void (*revoke)(struct conn *c, const char *why);
};

enum conn_mode {
	CONN_MODE_TRANSPARENT = 1,
	CONN_MODE_EXPLICIT = 2,
};

enum conn_state {
	CONN_S_PEEK = 1,        /* reading the proxy head (explicit) or ClientHello (transparent) */
	CONN_S_TLS_ACCEPT = 2,  /* TLS handshake with the client */
	CONN_S_REQ_HEAD = 3,    /* waiting for or reading a request head */
	CONN_S_DIAL = 4,        /* request parsed, upstream being dialled */
	CONN_S_RELAY = 5,       /* request body up, response down */
	CONN_S_TUNNEL = 6,      /* bytes both ways (passthrough, WebSocket) */
	CONN_S_CLOSING = 7,     /* flushing the last answer, then close */
	CONN_S_DEAD = 8,        /* waiting to be reaped */
	CONN_S_HOLD = 9,        /* request body held whole before dialling (credbody.c) */
	CONN_S_H2 = 10,         /* an HTTP/2 client connection: its streams are virtual connections (h2srv.c) */
};

enum resp_state {
	RESP_S_HEAD = 1,
	RESP_S_BODY = 2,
	RESP_S_DONE = 3,
};

/* The request in flight on a connection (one at a time: pipelined requests wait in the input). */
struct req {
	char method[40];
	size_t method_len;
	char *path;                     /* normalised path, heap, freed at request end */
	size_t path_len;
	char *query;                    /* "?..." or NULL, heap */
	int minor_version;
	int is_head;
	int client_keep_alive;
	int websocket;
	struct evbuffer *up_head;       /* the head to send upstream, built at parse time */
	enum h1_framing body;           /* request body framing */
	uint64_t body_left;
	struct h1_chunked body_chunk;
	int body_done;
	enum resp_state resp;
	enum h1_framing resp_body;
	uint64_t resp_left;
	struct h1_chunked resp_chunk;
	int resp_chunked_out;           /* re-encode the response body as chunked toward the client */
	int head_copy_sent;             /* up_head kept for one retry on a stale pooled upstream */
	int upstream_tls;               /* -1 until dialled */
	int refused;                    /* the gateway refused the upstream (a private address) */
	int status;
	int upstream_keep_alive;
	struct cred_req *cred;          /* cred/: the secrets this request uses, its searches and scrubbers (cred.h) */
	int up_no_reuse;                /* a request with a body (set for every such one; only GET/HEAD/OPTIONS use it) */
	uint64_t bytes_up;
	uint64_t bytes_down;
	struct timespec t0;
	const char *rule;
	const char *reason;
	char rule_buf[512];
	struct ws_tunnel *ws;           /* wstunnel.c: the frames of an upgraded WebSocket, or NULL */
	struct evbuffer *hold;          /* credbody.c: the request body held before dialling (decoded) */
	struct evbuffer *req_trailers;  /* the trailer lines of a held or searched chunked body (never sent), or NULL */
	uint64_t body_total;            /* the body's Content-Length as the client sent it */
	struct evbuffer *resp_trailers; /* relay.c: the raw trailer field lines of a chunked response, or NULL */
	uint64_t audit_seq;             /* the seq of its request record (0: not queued, or the log is off) */
	char audit_id[32];              /* "<conn>-<n>": its records' "id" */
	unsigned char audit_decided;    /* the request record is queued */
	unsigned char audit_done;       /* the outcome is recorded (response, or the denied request) */
	unsigned char audit_exfil;      /* its exfiltration_attempt record is queued */
	unsigned char audit_parked;     /* waiting for its record before the first byte goes upstream */
	struct sem_req *sem;            /* semantic.c: a held body, a hold, limits, report mode; NULL when none */
	struct mcp_req *mcp;            /* judge/mcp_req.c: the JSON-RPC messages of an MCP POST; NULL when none */
	size_t up_queued;               /* relay.c: bytes queued toward the upstream when the body timer was last armed */
	unsigned char proto;            /* enum refuse_proto: how a refusal is answered */
	struct refuse_git *refuse;      /* refuse_proto.c: a refused push being drained, or its kept section; NULL */
	struct mcp_resp *mcpr;          /* judge/mcp_resp.c: an MCP answer being filtered, or NULL */
};

/* A peer's socket address, IPv4 or IPv6, in the space of the larger one. */
union conn_addr {
	struct sockaddr sa;
	struct sockaddr_in in4;
	struct sockaddr_in6 in6;
};

/*
 * One client connection.  Kept small on purpose: a thousand idle keep-alive
 * connections cost what this struct, its SSL and two libevent events cost
 * (see docs/performance.md).  Strings are formatted when logged, not kept.
 */
struct conn {
	uint64_t id;
	struct worker *w;
	enum conn_mode mode;
	enum conn_state state;
	evutil_socket_t fd;
	union conn_addr peer;
	union conn_addr dest;           /* original destination (transparent) */
	struct event *ev;               /* the socket, EV_READ|EV_WRITE|EV_ET, accept to close */
	SSL *ssl;                       /* client-side TLS, or NULL (cio.c) */
	struct evbuffer *in;            /* cio.c: NULL while empty and idle; use cio_in() */
	struct evbuffer *out;           /* cio.c: likewise; use cio_out() */
	size_t io_wpending;             /* the length of an SSL_write to retry with the same bytes */
	struct policy *pol;             /* the snapshot this connection was judged by */
	const struct policy_host *entry;
	const char *sandbox;            /* the known sandbox this client is (borrowed from pol or sbx), NULL if none */
	struct sbx_entry *sbx;          /* a registered sandbox (sbxreg.c): a reference, given back at reap; streams borrow */
	uint64_t sbx_id;                /* ... the registration it was judged under (sbxreg_entry_current) */
	uint64_t pol_gen;               /* the generation of <pol> (revoke.c) */
	uint64_t revoke_gen;            /* the secrets-and-sandboxes generation <pol> belongs to (revoke.c) */
	const char *revoked;            /* why its facts were withdrawn (static text): no further request, NULL if not */
	char *host;                     /* the judged host, heap ("" until known on plain HTTP); conn_set_host() */
	char *sni;                      /* the SNI as sent, heap, NULL if none */
	struct upstream *up;
	struct req *req;                /* the request in flight, NULL between requests */
	const struct conn_ops *ops;     /* how its protocol is asked: never NULL (see the top) */
	struct timespec t0;
	LIST_ENTRY(conn) link;
	uint64_t deadline;              /* CLOCK_MONOTONIC ms when the current limit runs out (deadline.c) */
	unsigned dl_pos;                /* 1 + its slot in the worker's deadline heap, 0 when not armed */
	unsigned port;
	uint32_t nreq;                  /* requests begun: audit ids "<id>-<n>" (a stream's starts at its stream id - 1) */
	uint32_t nrefused;              /* refusals recorded one by one (http_refusal_admit; a stream's: its connection's) */
	uint32_t nrefused_quiet;        /* refusals past PROXY_REFUSALS_AUDITED: only counted, one record at close */
	unsigned has_dest : 1;
	unsigned tls : 1;               /* client side is TLS */
	unsigned judged : 1;            /* host has a connection verdict */
	unsigned client_eof : 1;        /* the client sent its last byte (or its side failed) */
	unsigned up_eof : 1;            /* the upstream closed its side */
	unsigned head_started : 1;      /* bytes of the next request head have arrived */
	unsigned shut_wr : 1;           /* our side of the socket is shut down */
	unsigned counted : 1;           /* holds a per-client slot */
	unsigned io_on : 1;             /* cio.c owns the socket (after the peek) */
	unsigned io_reading : 1;        /* reading is wanted (backpressure turns it off) */
	unsigned io_full : 1;           /* reading stopped at the input bound */
	unsigned io_dead : 1;           /* the client side failed: no more I/O */
	unsigned io_kicked : 1;         /* an I/O round is scheduled or running */
	unsigned io_rblocked : 1;       /* a read found the socket empty: the next EV_READ edge says when to try again */
	unsigned io_wblocked : 1;       /* a write found the socket full: ... the next EV_WRITE edge */
	unsigned h2_conn : 1;           /* an HTTP/2 client connection: <h2> is its session */
	unsigned h2_stream : 1;         /* a stream's virtual connection: <h2> is its stream, no socket */
	unsigned alpn_h1 : 1;           /* the client's ALPN list offered http/1.1 */
	unsigned alpn_h2 : 1;           /* ... and h2 (the upstream is offered only this overlap) */
	union {                         /* h2srv.c (proxy/h2/h2.h), by h2_conn / h2_stream: */
		struct h2srv *sess;     /* ... an HTTP/2 client connection's session */
		struct h2stream *stream; /* ... a stream's virtual connection's stream */
	} h2;
};

/*
 * The step a request whose body is held takes next (CONN_S_HOLD): what the
 * judge (sem_hold_pump, an operator's decision) returns to the session,
 * which alone dials, answers, or closes (proxy/session/hold.c).
 */
enum hold_step {
	HOLD_REFUSED = -1,      /* the struct refusal passed along is filled: the session answers it */
	HOLD_PARKED = 0,        /* nothing to do now: the request waits for an operator */
	HOLD_MORE = 1,          /* more of the body is awaited (none arrived this time) */
	HOLD_MORE_MOVED = 2,    /* more of the body is awaited, and some arrived: its timer starts again */
	HOLD_SEND_WHOLE = 3,    /* the body is held whole: cred_body_finish (search, inject), then the dial */
	HOLD_SEND_STREAM = 4,   /* the held start goes first and the rest streams (cred_body_stream), then the dial */
	HOLD_SEND = 5,          /* nothing is held: the dial */
	HOLD_CLIENT_GONE = 6,   /* the client went away while the request waited: the connection closes */
};

/* ---- conn.c: facts of the record, for every layer ---- */

/* The client's (or the original destination's) address as text, into <buf> (CONN_ADDR_STR bytes, net.h). */
const char *conn_peer_str(const struct conn *c, char *buf);
const char *conn_dest_str(const struct conn *c, char *buf);
/* The gateway's limits (the configuration <c> was accepted under). */
const struct policy_limits *conn_limits(struct conn *c);
/* The current request's id, given once: "<conn>-<n>" (a stream's n is its stream id). */
const char *conn_req_id(struct conn *c);

/* The operations of <c>: the one place that says which protocol a connection speaks. */
static inline const struct conn_ops *
conn_ops(const struct conn *c)
{
	return c->ops;
}

#endif
