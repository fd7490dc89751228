/*
 * proxy/session/session.h - the connection and request state machine: a
 * client connection (struct conn, conn.c), the request in flight on it
 * (struct req, http.c), the relay to the upstream and back (relay.c), byte
 * and WebSocket tunnels (relay.c, wstunnel.c), and the answers the gateway
 * writes itself (respond.c, refuse_proto.c).
 *
 * Ownership and lifetime (the rule every module below keeps):
 *  - A struct conn belongs to its worker from conn_accept to its reaping:
 *    conn_close marks it CONN_S_DEAD and the worker frees it later, never
 *    inside one of its own callbacks.  An HTTP/2 stream's virtual connection
 *    belongs to the stream (proxy/h2/h2.h) and is closed the same way.
 *  - c->req, the request in flight, belongs to the connection: created by the
 *    session at a request head and freed only by the session when the request
 *    ends (http_next_request, conn_close).  Each module that keeps state for
 *    a request keeps it in its own member of struct req, allocates it, and
 *    frees it in its *_free / *_release function, which the session calls at
 *    the request's end (r->sem: semantic.h; r->uses, r->scrub*, r->hold:
 *    cred.h; r->ws: wstunnel.c; r->refuse: refuse_proto.c).
 *  - Answering a request (http_answer and its kin) ends it: c->req may be
 *    gone on return, so a caller that answered returns at once and says so
 *    (-1) to its own caller.
 *  - Strings in struct req point into the request's own storage or to static
 *    text; c->pol and c->entry are the snapshot the connection was judged by
 *    (a reference held until reaping).
 */
#ifndef SLUICE_PROXY_SESSION_H
#define SLUICE_PROXY_SESSION_H

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
#include "proxy/sbxreg.h"
#include "audit/writer.h"
#include "secrets/scrub.h"
#include "proxy/net/net.h"
#include "proxy/cred/cred.h"

struct worker;
struct upstream;
struct host_scrub;
struct ph_stream;
struct ws_tunnel;
struct sem_req;
struct refuse_git;
struct h2srv;
struct h2stream;

#define PROXY_LINGER_MS 2000           /* how long a closing connection discards unread request bytes */
/* semantic rules (semantic.c): bodies held for a decision or an approval */
#define PROXY_H2_HELD_MAX (32u << 20)      /* held bodies across one HTTP/2 connection's streams: a stream past it gets 503 */
#define PROXY_HELD_MAX (512u << 20)        /* held bodies across the gateway: a request past it gets 503 */
#define PROXY_REFUSALS_AUDITED 256          /* refusals on one client connection recorded one by one; beyond: a count */
#define PROXY_HOLD_GRACE_MS 5000           /* a request waiting for approval: its connection's deadline after the hold's */
/* ---- respond.c: answers the gateway writes itself ---- */

/*
 * Queues a complete response with a JSON body on <out>:
 *   {"error":<error>,"host":<host>,"rule":<rule>,"reason":<reason>}
 * with Content-Type application/json, Content-Length, and Connection: close
 * when <close>.  NULL fields are omitted.
 */
void respond_json(struct evbuffer *out, int status, const char *error, const char *host,
                  const char *rule, const char *reason, int close);
/*
 * respond_json with <phrase> (a static literal: printable ASCII, no CR/LF) as the status line's reason
 * phrase instead of the status's own, for answers whose client prints only the status line (a CONNECT).
 */
void respond_json_phrase(struct evbuffer *out, int status, const char *phrase, const char *error, const char *host,
                         const char *rule, const char *reason, int close);
/* Queues refusal <rf> (refusal.h) as its JSON answer (a 429 with Retry-After and its limit's members). */
struct refusal;
void respond_refusal(struct evbuffer *out, const struct refusal *rf, const char *host, int close);
const char *respond_status_text(int status);

/* ---- refuse_proto.c: refusals in the client's own protocol (git smart HTTP, gRPC) ---- */

/* What kind of request a refusal answers, from its facts (path, query, Content-Type, HTTP/2). */
enum refuse_proto {
	REFUSE_PROTO_HTTP = 0,         /* anything else: the JSON answers of respond.c */
	REFUSE_PROTO_GIT_ADV_UPLOAD,   /* GET .../info/refs?service=git-upload-pack */
	REFUSE_PROTO_GIT_ADV_RECEIVE,  /* GET .../info/refs?service=git-receive-pack */
	REFUSE_PROTO_GIT_UPLOAD,       /* POST .../git-upload-pack, application/x-git-upload-pack-request */
	REFUSE_PROTO_GIT_RECEIVE,      /* POST .../git-receive-pack, application/x-git-receive-pack-request */
	REFUSE_PROTO_GRPC,             /* an HTTP/2 request with Content-Type application/grpc[+...|;...] */
};

#define REFUSE_TEXT_MAX 240            /* bytes of the reason put in a pkt-line or grpc-message (no LF) */
#define REFUSE_GIT_DRAIN_MAX (64u << 20) /* bytes of a refused push read and discarded before the answer */
#define REFUSE_GIT_SECTION_MAX (64u * 1024) /* bytes of its start kept to name its refs in the report */
#define REFUSE_GIT_REFS_MAX 64         /* refs named by one report; the others get no line (git: "no report") */

struct conn;
struct h1_message;
struct req;
/* <path>: the request target's path and query, as sent. */
enum refuse_proto refuse_proto_of(const struct conn *c, const struct h1_message *m, const char *path, size_t path_len);
/*
 * Writes refusal <rf> (403, 429, 413) of the current request in its client's
 * protocol when it is a git or gRPC request (http_refuse, the one caller).
 * REFUSE_PROTO_JSON: not such a request, the JSON answer is the one.
 * REFUSE_PROTO_ANSWERED: written; the session ends the request as <end> says
 * (status, rule, reason, quiet: already audited, close).  REFUSE_PROTO_DRAINING:
 * a push with a body, recorded and audited now, whose body is read first
 * (refuse_proto_pump).  <rf>'s text is copied where it must outlive the call
 * (a 429's reason carries its retry time).  Frees nothing.
 */
enum refuse_proto_outcome { REFUSE_PROTO_JSON = 0, REFUSE_PROTO_ANSWERED = 1, REFUSE_PROTO_DRAINING = 2 };
int refuse_proto_answer(struct conn *c, const struct refusal *rf, struct refusal *end);
/* A refused push's body is being read and discarded (CONN_S_HOLD): refuse_proto_pump drives it. */
int refuse_proto_draining(const struct conn *c);
/* 1 when the drain ended and the report is written (the session ends the request as <end> says), else 0. */
int refuse_proto_pump(struct conn *c, struct refusal *end);
/* The drain's timer ran out: the report is written with what was read; the session ends it as <end> says. */
void refuse_proto_timeout(struct conn *c, struct refusal *end);
/*
 * A push's body start <buf>/<len> is about to go upstream (its command section decided on, semantic.c, or
 * the body held whole for secrets, credbody.c): its first REFUSE_GIT_SECTION_MAX bytes are copied, to name
 * its refs if a limit refuses it at relay_dial.  Nothing for requests that are no git push.
 */
void refuse_proto_keep_section(struct conn *c, const char *buf, size_t len);
void refuse_proto_free(struct req *r);
/* ---- conn.c / http.c ---- */

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
	int body_injectable;            /* a secret may be injected into this body (a json: or form: place bound here) */
	int up_no_reuse;                /* a request with a body (set for every such one; only GET/HEAD/OPTIONS use it) */
	uint64_t bytes_up;
	uint64_t bytes_down;
	struct timespec t0;
	const char *rule;
	const char *reason;
	char rule_buf[512];
	struct cred_use uses[CRED_USES_MAX];  /* credreq.c */
	size_t nuses;
	struct host_scrub *hscrub;      /* credscrub.c: the host's scrub set; NULL (no secret bound to the host): none */
	const struct scrub_set *scrub;  /* credresp.c: what the response is scrubbed with (hscrub's, or scrub_own) */
	struct scrub_set *scrub_own;    /* the host's set plus what only this request holds (its Basic credential) */
	struct scrub_stream *scrub_st;  /* the body's scrubber, NULL when the body is not scrubbed */
	struct unzip *unzip;            /* the body's Content-Encoding decoder, or NULL */
	struct evbuffer *scrub_in, *scrub_plain, *scrub_out;
	struct scrub_hits scrub_hits;   /* tag i: the value of policy secret i was scrubbed */
	int scrub_chunked;              /* the scrubbed body goes out chunked (else until close) */
	int scrub_whole;                /* a small body scrubbed whole: the head waits for it and its Content-Length */
	struct evbuffer *scrub_head;    /* that head, scrubbed, without its last CRLF */
	struct ph_stream *scan;         /* credreq.c: the request body is searched for placeholders as it streams */
	struct evbuffer *scan_in;       /* decoded body bytes: the first scan_fed were searched, the rest not yet */
	size_t scan_fed;
	int scan_done;                  /* the search was flushed at the body's end */
	const char *event;              /* "exfiltration_attempt" or NULL */
	const char *event_secret;
	char event_place[256];
	struct ws_tunnel *ws;           /* wstunnel.c: the frames of an upgraded WebSocket, or NULL */
	struct evbuffer *hold;          /* credbody.c: the request body held before dialling (decoded) */
	struct evbuffer *req_trailers;  /* the trailer lines of a held or searched chunked body (never sent), or NULL */
	size_t hold_max;
	uint64_t body_total;            /* the body's Content-Length as the client sent it */
	unsigned char body_type;        /* enum cred_body_type, from Content-Type */
	unsigned char expect_continue;  /* the client waits for a 100 before sending the body */
	struct evbuffer *resp_trailers; /* relay.c: the raw trailer field lines of a chunked response, or NULL */
	unsigned char grpc;             /* credresp.c: a gRPC response, scrubbed message by message */
	uint64_t audit_seq;             /* the seq of its request record (0: not queued, or the log is off) */
	char audit_id[32];              /* "<conn>-<n>": its records' "id" */
	unsigned char audit_decided;    /* the request record is queued */
	unsigned char audit_done;       /* the outcome is recorded (response, or the denied request) */
	unsigned char audit_exfil;      /* its exfiltration_attempt record is queued */
	unsigned char audit_parked;     /* waiting for its record before the first byte goes upstream */
	struct sem_req *sem;            /* semantic.c: a held body, a hold, limits, report mode; NULL when none */
	size_t up_queued;               /* relay.c: bytes queued toward the upstream when the body timer was last armed */
	unsigned char proto;            /* enum refuse_proto: how a refusal is answered */
	struct refuse_git *refuse;      /* refuse_proto.c: a refused push being drained, or its kept section; NULL */
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

void conn_accept(struct worker *w, enum conn_mode mode, evutil_socket_t fd, const struct sockaddr *sa,
                 socklen_t salen);
void conn_close(struct conn *c);
/* Drives the connection as far as its buffers allow; the one place state advances. */
void conn_pump(struct conn *c);
void conn_set_state(struct conn *c, enum conn_state s);
/* <c>'s deadline passed (net_ops->expired): what the state it was armed for does about it. */
void conn_expired(struct conn *c);
/*
 * The session's handlers of what net reports (conn_start_requests,
 * conn_tls_failed, conn_pump, conn_expired): the worker gives them to net
 * with net_ops_set() before its first connection.
 */
extern const struct net_ops session_net_ops;
/* Starts serving requests (after TLS or on plain HTTP). */
void conn_start_requests(struct conn *c);
/* Ends the connection with an answer (queued, flushed, then closed) and a connection audit line. */
void conn_refuse(struct conn *c, int status, const char *error, const char *rule, const char *reason);
/* Replaces the judged host with a copy of <host>. */
void conn_set_host(struct conn *c, const char *host);
/* The client's (or the original destination's) address as text, into <buf> (CONN_ADDR_STR bytes). */
const char *conn_peer_str(const struct conn *c, char *buf);
const char *conn_dest_str(const struct conn *c, char *buf);
/* The client TLS handshake failed with <why>: logged, audited, closed. */
void conn_tls_failed(struct conn *c, const char *why);

/* http.c: request heads on a connection in REQ_HEAD: parse, name the host, judge, answer. */
void http_pump(struct conn *c);
const struct policy_limits *http_limits(struct conn *c);
/*
 * The current request is decided and allowed: its request record is queued
 * (once; relay_dial).  0, or -1 when the log could not take it (refuse 503).
 */
int http_audit_decide(struct conn *c);
/*
 * Records the current request's outcome: a request refused before its
 * decision gets its one request record (deny, with the status answered);
 * one let through gets its response record (and a scrub record).  An
 * exfiltration attempt (r->event) gets its own record, once.  <verdict>
 * ("allow"/"deny") only counts.
 */
void http_audit_request(struct conn *c, enum audit_verdict verdict);
/* Ends the current request: REQ_HEAD for the next one when <keep>, else a (deferred) lingering close. */
void http_next_request(struct conn *c, int keep);
/*
 * Refusals are answered by http_refuse() (proxy/session/refusal.h: the one
 * answer, and who frees c->req).  1 when the connection may stay open after
 * answering <status> to the current request.
 */
int http_answer_keep(const struct conn *c, int status);
/* The request in flight fails after its head went out: audited, flushed, closed (a stream: reset); c->req freed. */
void http_truncate(struct conn *c, const char *why);
/* The current request's id, given once: "<conn>-<n>" (a stream's n is its stream id). */
const char *http_req_id(struct conn *c);
int http_append_header(struct evbuffer *out, const struct h1_header *h);
/* Copies <m>'s end-to-end headers (no hop-by-hop, no Content-Length), minus <skip1>/<skip2>. */
void http_copy_headers(struct evbuffer *out, const struct h1_message *m, const char *skip1, const char *skip2);

/* relay.c: the request in flight (DIAL, RELAY) and byte tunnels. */
/*
 * Dials or reuses the upstream for the parsed request and starts relaying: 0
 * (dialling, parked for its audit record, or relaying: what fails later is
 * answered from the event that sees it), or -1 refused now (<rf>: 429, 503).
 */
int relay_dial(struct conn *c, struct refusal *rf);
/* Moves body bytes both ways as far as the watermarks allow; finishes the request at its end. */
void relay_pump(struct conn *c);
/*
 * Fails the request in flight from one of the relay's events: a JSON answer
 * (http_refuse) if no response head went out yet, else a truncating close
 * (http_truncate).  c->req is freed either way.
 */
void relay_abort(struct conn *c, const char *why, int status);
/*
 * The body timer ran out in RELAY: 1 when the upstream took some of the
 * bytes queued toward it since the timer was armed (a held body, queued
 * whole, going out slowly), so the exchange is not stalled; else 0.
 */
int relay_up_progress(struct conn *c);
void http_req_reset(struct conn *c);
void http_upstream_event(struct conn *c, short what);
void http_timeout(struct conn *c);
/* The rule to report for a head parser refusal: the limit it enforces, or "http". */
const char *http_refusal_rule(int status, const char *err);
void audit_conn(struct conn *c, enum audit_verdict verdict, const char *rule, const char *reason, int status);
/*
 * The audit's bound on refusals per client connection (rapid resets, floods
 * of bad streams or denied requests must not fill the disk): 1 when this
 * refusal on <c> (or on the connection a stream of <c> belongs to) is
 * recorded, 0 when it is past PROXY_REFUSALS_AUDITED and only counted.
 * http_refusals_flush() writes the count as one "denial" record
 * (rule "audit.refusals", member "suppressed") when the connection ends.
 */
int http_refusal_admit(struct conn *c);
void http_refusals_flush(struct conn *c);

/* relay.c: moves request body bytes from <in> to <out> (re-chunked when <reencode>): 1 progress, 0 wait, -1 bad. */
int relay_body_move(struct conn *c, struct evbuffer *in, struct evbuffer *out, int reencode, const char **err);

/* tunnel: bytes both ways until either side closes. */
void tunnel_pump(struct conn *c);
/* A tunnel's side ended: flush what the client is owed, then close both (CLOSING, 5 s). */
void tunnel_end(struct conn *c);
/* Each side reads only while the other side's queue is under PROXY_HIGH_WATER (relay and tunnels). */
void relay_backpressure(struct conn *c);

/*
 * wstunnel.c: an upgraded WebSocket connection, frame by frame.
 * ws_tunnel_start() runs at the upstream's 101, in state CONN_S_TUNNEL: when
 * the policy declares secrets it sets r->ws, and from then on frames from the
 * client are searched for placeholders (one found: audited as an
 * exfiltration attempt, connection closed) and text frames from the upstream
 * are scrubbed of the values r->uses injected.  0, or -1 (the caller closes).
 * tunnel_pump() hands over to ws_tunnel_pump() while r->ws is set.
 */
struct ws_tunnel;
int ws_tunnel_start(struct conn *c);
void ws_tunnel_pump(struct conn *c);
void ws_tunnel_free(struct req *r);
/* Takes <fd> (our answer handed to the kernel) into the lingering close of PROXY_LINGER_MS (net/linger.h),
 * counted in <w>->nlinger so that a drain waits for it. */
void conn_linger_fd(struct worker *w, int fd);
/* Makes <c> the owner of its READY upstream's callbacks (relay and tunnel). */
void relay_own_upstream(struct conn *c);

/*
 * 1 if the client of <c> may use secret <s>: the secret's `sandboxes:` admit
 * the client's name, and a sandbox registered at run time named it (or
 * named none) when that registration is who the client is.
 */
static inline int
conn_may_use_secret(const struct conn *c, const struct policy_secret *s)
{
	if (!policy_secret_sandbox_allowed(s, c->sandbox))
		return 0;
	return c->sbx == NULL || c->sandbox != c->sbx->name || sbxreg_secret_allowed(c->sbx, s->name);
}

#endif
