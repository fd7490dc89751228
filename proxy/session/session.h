/*
 * proxy/session/session.h - the connection and request state machine: a
 * client connection (struct conn, conn.c), the request in flight on it
 * (struct req, http.c), the relay to the upstream and back (relay.c), byte
 * and WebSocket tunnels (relay.c, wstunnel.c), and the answers the gateway
 * writes itself (respond.c, refuse_proto.c).
 *
 * struct conn and struct req, and the rule of who owns what in them, are in
 * proxy/core/conn.h (the record every layer reads); this header is what the
 * session does with them.
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
#include "proxy/core/conn.h"
#include "proxy/core/refusal.h"
#include "proxy/core/body.h"
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
#define PROXY_REFUSALS_AUDITED 256          /* refusals on one client connection recorded one by one; beyond: a count */
/*
 * The session's one answer (http.c): writes <rf> in the client's protocol
 * (git, gRPC: refuse_proto.c; else JSON: respond.c), records and audits it,
 * and ends the request: c->req is freed (or, for a refused git push whose
 * body is drained first, freed when the drain ends).  <rf> and what it
 * points to are read before anything is freed.
 */
void http_refuse(struct conn *c, const struct refusal *rf);

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
/* The client TLS handshake failed with <why>: logged, audited, closed. */
void conn_tls_failed(struct conn *c, const char *why);

/* http.c: request heads on a connection in REQ_HEAD: parse, name the host, judge, answer. */
void http_pump(struct conn *c);
/*
 * The current request is decided and allowed: its request record is queued
 * (once; relay_dial).  0, or -1 when the log could not take it (refuse 503).
 */
int http_audit_decide(struct conn *c);
/*
 * Records the current request's outcome: a request refused before its
 * decision gets its one request record (deny, with the status answered);
 * one let through gets its response record (and a scrub record).  An
 * exfiltration attempt (r->cred->event) gets its own record, once.  <verdict>
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
/*
 * answer.c, for the session's own files only (http.c, refuse_proto.c, hold.c):
 * http_answer() refuses the current request with a JSON answer decided by the
 * session itself (a bad head, an audit that cannot be written);
 * http_answer_end() ends a refused request whose answer is written: records
 * <status>, <rule>, <reason>, audits when <audit>, frees c->req, moves on.
 */
void http_answer(struct conn *c, int status, enum refusal_err err, const char *rule, const char *reason);
void http_answer_end(struct conn *c, int status, const char *rule, const char *reason, int audit, int keep);
/* The request in flight fails after its head went out: audited, flushed, closed (a stream: reset); c->req freed. */
void http_truncate(struct conn *c, const char *why);
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
/*
 * An MCP answer's bytes through its filter, then to the client (relay.c): 0,
 * or -1 when the answer was refused or the stream cut (audited).
 */
int relay_mcp(struct conn *c, int end);
/* resp_head.c: the response head arrived in RELAY: 1 when handled (sent on, refused, retried), 0 to wait. */
int relay_response_head(struct conn *c);
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
 * are scrubbed of the values r->cred->uses injected.  0, or -1 (the caller closes).
 * tunnel_pump() hands over to ws_tunnel_pump() while r->ws is set.
 */
struct ws_tunnel;
int ws_tunnel_start(struct conn *c);
void ws_tunnel_pump(struct conn *c);
void ws_tunnel_free(struct req *r);
/* ---- revoked.c: revocation reaches open connections (what is stale: proxy/cred/revoke.c) ---- */

/*
 * revoke_sweep(): worker thread, after its mail brought a policy or a
 *   removal: revoke_conn() on each connection revoke_why() names.
 * revoke_conn(): ends <c>'s use of its old facts (<why>, static text): an
 *   idle HTTP/1.1 connection closes, a busy one after its request in flight,
 *   HTTP/2 gets GOAWAY, a WebSocket tunnel that carries an injected value
 *   closes; audited ("revocation").  Once per connection.
 */
void revoke_sweep(struct worker *w);
void revoke_conn(struct conn *c, const char *why);

/* ---- hold.c: a request body held before the dial (CONN_S_HOLD) ---- */

/* Enters CONN_S_HOLD once the head is consumed (a 100 Continue first, when the client waits for one). */
void hold_start(struct conn *c);
/* CONN_S_HOLD: reads the body, has it judged and prepared, then dials: 0, or -1 refused (<rf>, to answer). */
int hold_pump(struct conn *c, struct refusal *rf);
/* The judge's way back to the session when an operator decided (judge/semantic.h): the worker gives it. */
extern const struct sem_hooks session_sem_hooks;

/* Takes <fd> (our answer handed to the kernel) into the lingering close of PROXY_LINGER_MS (net/linger.h),
 * counted in <w>->nlinger so that a drain waits for it. */
void conn_linger_fd(struct worker *w, int fd);
/* Makes <c> the owner of its READY upstream's callbacks (relay and tunnel). */
void relay_own_upstream(struct conn *c);


#endif
