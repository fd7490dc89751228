/*
 * proxy/proxy_int.h - private types of the proxy module.
 *
 * Threads: the gateway's main thread owns signals, reload and the admin
 * socket; each worker thread owns one event loop and everything reachable
 * from its connections.  What workers share is named here: the gateway
 * (read-only after start), the leaf cache (ca/, sharded locks), the audit
 * queue (one short lock per record) and the per-client connection counts
 * (one short lock per accept/close).
 */
#ifndef SLUICE_PROXY_INT_H
#define SLUICE_PROXY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <time.h>
#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <openssl/ssl.h>
#include <nghttp2/nghttp2.h>

#include "common/host.h"
#include "common/netaddr.h"
#include "policy/policy.h"
#include "ca/ca.h"
#include "proxy/judge/approvals.h"
#include "proxy/audit_api.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/sbxreg.h"
#include "proxy/dns/synth.h"
#include "proxy/codec/tls_hello.h"
#include "secrets/secrets.h"
#include "secrets/scrub.h"
#include "secrets/detect.h"

#define PROXY_MAX_WORKERS 64
#define PROXY_HIGH_WATER (64 * 1024)   /* bytes queued toward a peer before the other side stops reading */
#define PROXY_POOL_MAX 64              /* idle upstream connections per worker */
#define PROXY_POOL_IDLE_MS 30000       /* an idle pooled upstream of the warm set is closed after this */
#define PROXY_POOL_WARM 4              /* idle upstreams per worker kept for PROXY_POOL_IDLE_MS */
#define PROXY_POOL_SPARE_MS 2000       /* idle upstreams beyond the warm set close after this */
#define PROXY_TRAILER_MAX 8192         /* chunked trailer section bound */
#define PROXY_CLIENT_SLOTS 1024        /* buckets of the per-client connection counter */
#define PROXY_MMAP_THRESHOLD (16 * 1024) /* allocations this large bypass the heap (TLS record buffers) */
#define UP_READ_CHUNK (8 * 1024 - 256)  /* an upstream's TLS plaintext per read: its buffer chain stays under 8 KiB */
#define PROXY_TRIM_SECONDS 5           /* how often freed heap pages go back to the kernel */
#define CONN_ADDR_STR 64               /* an address with port as text, "[v6]:port" */
#define PROXY_LINGER_MS 2000           /* how long a closing connection discards unread request bytes */
/* semantic rules (semantic.c): bodies held for a decision or an approval */
#define PROXY_HOLD_BODY_MAX (1024 * 1024)  /* the body held for approval when the hold rule reads none (max_body's default) */
#define PROXY_H2_HELD_MAX (32u << 20)      /* held bodies across one HTTP/2 connection's streams: a stream past it gets 503 */
#define PROXY_HELD_MAX (512u << 20)        /* held bodies across the gateway: a request past it gets 503 */
#define PROXY_REFUSALS_AUDITED 256          /* refusals on one client connection recorded one by one; beyond: a count */
#define PROXY_HOLD_GRACE_MS 5000           /* a request waiting for approval: its connection's deadline after the hold's */

struct gateway;
struct worker;
struct conn;
struct upstream;
struct audit;
struct cred_store;
struct cred_entry;
struct cred_value;
struct scrub_set;
struct scrub_stream;
struct unzip;
struct up_memo;
struct limits;
struct reload_state;
struct sem_req;

/* ---- cred.c: the secret store (values fetched on the main thread, shared by the workers) ---- */

/* Loads (or creates) the placeholder key in <ca_dir>; NULL with *err. */
struct cred_store *cred_store_create(const char *ca_dir, const char **err);
/* Main thread: makes an entry (placeholder, value) for every secret of <pol> not seen before. */
void cred_store_sync(struct cred_store *st, const struct policy *pol);
/* Main thread: re-runs exec: sources whose ttl ran out. */
void cred_store_refresh(struct cred_store *st);
void cred_store_destroy(struct cred_store *st);
/* The entry for <s> (valid until cred_store_destroy), NULL if <s> was never synced. */
const struct cred_entry *cred_entry_of(struct cred_store *st, const struct policy_secret *s);
const char *cred_placeholder(const struct cred_entry *e);
/* A reference to <e>'s current value, or NULL with the reason in <why>. */
struct cred_value *cred_value_take(struct cred_store *st, const struct cred_entry *e, char *why, size_t cap);
void cred_value_drop(struct cred_value *v);
/*
 * The value <e>'s current one replaced (a reference, or NULL): never
 * injected, only scrubbed, since a rotated token may stay valid and be
 * echoed for a while.  It goes at the next change.
 */
struct cred_value *cred_prev_value_take(struct cred_store *st, const struct cred_entry *e);
const uint8_t *cred_value_bytes(const struct cred_value *v, size_t *len);
/* Changes whenever any entry's value does (a fetch, a refresh, a new entry): scrub sets built before are stale. */
unsigned cred_store_gen(struct cred_store *st);
/* An upstream answered 401 to <e>'s value: an exec: source is re-run at the next tick (cred_store_refresh). */
void cred_entry_rejected(const struct cred_entry *e);
/* Checks explicit-proxy credentials against the sandboxes' proxy_auth: 0 and *sandbox, or -1. */
int cred_proxy_auth(struct cred_store *st, const struct policy *p, const char *user, size_t ulen, const char *pw,
                    size_t pwlen, const char **sandbox);

#define CRED_USES_MAX 8   /* (secret, place) pairs injected into one request */

/* A secret one request injects: borrowed entry, a value reference, where, and the Basic credential built. */
struct cred_use {
	const struct policy_secret *s;
	const struct cred_entry *e;
	struct cred_value *v;
	enum policy_inject_kind kind;           /* the bound place's kind: code tests this, never the text */
	char place[POLICY_JSON_PATH_MAX + 16];  /* as bound, for the audit: "header:authorization", "json:$.a[*].b" */
	struct secret_buf *basic;   /* "user:value" as injected, for scrubbing its echo; NULL if none */
	char *basic_ph;             /* the same credential as the client sent it (with the placeholder) */
};

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
 * Answers refusal <status> (403, 429, 413) of the current request in its
 * client's protocol when it is a git or gRPC request: 1 when it did (the
 * request is answered, or, for a push with a body, the body is being drained
 * first: refuse_proto_draining), 0 when the JSON answer is the one.  <error>,
 * <rule> and <reason> are copied (a 429's reason carries its retry time).
 * <audit>: as http_answer's (the record is written now, before any drain).
 */
int refuse_proto_answer(struct conn *c, int status, const char *error, const char *rule, const char *reason,
                        int audit);
/* A refused push's body is being read and discarded (CONN_S_HOLD): refuse_proto_pump drives it. */
int refuse_proto_draining(const struct conn *c);
void refuse_proto_pump(struct conn *c);
/* The drain's timer ran out: the report is written with what was read, and the connection closes. */
void refuse_proto_timeout(struct conn *c);
/*
 * A push's body start <buf>/<len> is about to go upstream (its command section decided on, semantic.c, or
 * the body held whole for secrets, credbody.c): its first REFUSE_GIT_SECTION_MAX bytes are copied, to name
 * its refs if a limit refuses it at relay_dial.  Nothing for requests that are no git push.
 */
void refuse_proto_keep_section(struct conn *c, const char *buf, size_t len);
void refuse_proto_free(struct req *r);

/* ---- upstream.c ---- */

enum upstream_state {
	UP_S_RESOLVING = 1,
	UP_S_CONNECTING = 2,
	UP_S_READY = 3,
	UP_S_POOLED = 4,
	UP_S_FAILED = 5,
};

/* Called once when a dial finishes: <err> NULL on success, else a static reason. */
typedef void (*upstream_cb)(struct upstream *up, const char *err, int status, void *arg);

/* ALPN protocols an upstream dial may offer: the overlap of the client's list with these two. */
#define UPSTREAM_ALPN_H1 1u
#define UPSTREAM_ALPN_H2 2u
/* A WebSocket upgrade from a client that offered h2: an existing h2 session may carry it (RFC 8441) if it allows. */
#define UPSTREAM_ALPN_WS 4u
struct h2up_stream;
struct h2up_sess;

#define UPSTREAM_TENANT_MAX 48   /* conn_tenant(): "r<registration id>", "s<sandbox name>", "a<address>", "c<conn id>" */

struct upstream {
	struct worker *w;
	enum upstream_state state;
	char tenant[UPSTREAM_TENANT_MAX]; /* whose requests it carries: never reused by another tenant (conn_tenant) */
	struct bufferevent *bev;
	SSL *ssl;                        /* owned by bev when tls */
	int tls;
	int allow_private;
	char host[HOST_BUF];
	unsigned port;
	char addr_str[64];               /* the address dialled, for logs */
	struct sockaddr_storage addr;
	socklen_t addrlen;
	struct evdns_getaddrinfo_request *dnsreq;
	upstream_cb cb;
	void *cb_arg;
	int in_dial;                     /* inside upstream_dial: report by state, not by callback */
	int reused;                      /* came from the pool */
	int refused;                     /* failed because its address is not allowed, not by a fault */
	struct event *timer;             /* connect timeout, or idle timeout while pooled */
	char errbuf[512];                /* detail of a failure (verification error text) */
	TAILQ_ENTRY(upstream) pool_link;
	unsigned alpn;                   /* UPSTREAM_ALPN_* offered (TLS only) */
	int no_index;                    /* the request carries injected secrets: never HPACK-indexed (h2up.c) */
	struct h2up_stream *h2s;         /* an HTTP/2 stream of a shared session: <bev> is its pair end (h2up.c) */
	struct h2up_sess *h2wait;        /* waiting for this session's handshake (h2up.c) */
	LIST_ENTRY(upstream) wait_link;
};
TAILQ_HEAD(upstream_list, upstream);

/*
 * Dials <host>:<port> (TLS when <tls>) for <tenant> (conn_tenant): an idle
 * pooled connection to the same host/port/tls of the same tenant if the
 * worker has one, else resolve (upstream.resolve
 * overrides first), refuse special addresses unless <allow_private>, connect,
 * verify.  Returns the upstream, already UP_S_READY (pooled) or UP_S_FAILED
 * (errbuf says why) when that is known at once; otherwise <cb> reports the
 * outcome later, exactly once.  The caller owns the upstream: upstream_release
 * or upstream_free.  While owned, the upstream's read/write/event activity is
 * reported through <cb> with <err> NULL and status 0 is never repeated: see
 * upstream_set_owner.
 */
struct upstream *upstream_dial(struct worker *w, const char *tenant, const char *host, unsigned port, int tls,
                               int allow_private, unsigned alpn, upstream_cb cb, void *arg);
/* A new upstream for <tenant> for upstream_redial (not dialled yet); the caller owns it. */
struct upstream *upstream_new(struct worker *w, const char *tenant, const char *host, unsigned port, int tls,
                              int allow_private, unsigned alpn, upstream_cb cb, void *arg);
/* Dials <up> (again) offering <alpn>; its callback reports, also when it fails at once. */
void upstream_redial(struct upstream *up, unsigned alpn);
/* Moves <from>'s READY connection into <up> (whose dial never ran); <from> keeps nothing but is still to free. */
void upstream_adopt(struct upstream *up, struct upstream *from);
/* What <host>:<port> chose when offered h2, remembered by the gateway: UPSTREAM_ALPN_H1, _H2, or 0 (unknown). */
unsigned upstream_alpn_memo(struct worker *w, const char *host, unsigned port);
void upstream_alpn_remember(struct worker *w, const char *host, unsigned port, unsigned proto);
/* Callbacks for an owned, READY upstream: <readcb>/<writecb> on data and drain, <eventcb> on EOF/error/timeout. */
void upstream_set_owner(struct upstream *up, bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                        bufferevent_event_cb eventcb, void *arg);
/* Gives a READY, idle, reusable upstream back to the worker's pool (or frees it). */
void upstream_release(struct upstream *up);
/* Closes and frees (safe from inside the upstream's own callbacks). */
void upstream_free(struct upstream *up);
/* Worker-level pool teardown. */
void upstream_pool_clear(struct worker *w);
SSL_CTX *upstream_ctx_create(const struct policy_config *cfg, const char **err);

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
	void *h2;                       /* h2srv.c */
};
LIST_HEAD(conn_list, conn);

void conn_accept(struct worker *w, enum conn_mode mode, evutil_socket_t fd, const struct sockaddr *sa,
                 socklen_t salen);
void conn_close(struct conn *c);
/* Drives the connection as far as its buffers allow; the one place state advances. */
void conn_pump(struct conn *c);
void conn_set_state(struct conn *c, enum conn_state s);
/*
 * deadline.c: each connection has at most one deadline, the limit of its
 * current state; re-arming replaces it.  conn_expired() runs when it passes.
 */
void conn_arm_timer(struct conn *c, unsigned ms);
void conn_disarm_timer(struct conn *c);
void conn_expired(struct conn *c);
/* The worker's deadline heap and its one timer (after w->base exists), and their teardown. */
int deadline_init(struct worker *w);
void deadline_dispose(struct worker *w);
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

/*
 * cio.c: the client socket's bytes once the peek is over.  Output appended
 * to cio_out() is sent without further calls; input arrives in cio_in() and
 * conn_pump() runs after each round of I/O.
 */
/* Takes over the socket: plain when <ssl> is NULL, else TLS as the server (<ssl> taken, handshake first). */
void cio_start(struct conn *c, SSL *ssl);
/* The two buffers, created on first use. */
struct evbuffer *cio_in(struct conn *c);
struct evbuffer *cio_out(struct conn *c);
size_t cio_in_len(const struct conn *c);
size_t cio_out_len(const struct conn *c);
/* Reading on or off (backpressure, or no more requests wanted). */
void cio_read(struct conn *c, int on);
/* Schedules an I/O round (and a pump): new output, or an HTTP/2 stream that wants service. */
void cio_kick(struct conn *c);
/* Runs the I/O for a wake-up of the connection's event. */
void cio_event(struct conn *c, short what);
/* Ends our sending side of TLS: close_notify (the FIN is the lingering close's, worker_linger). */
void cio_shutdown(struct conn *c);
/* Frees the SSL and the buffers (not the socket, not the event). */
void cio_free(struct conn *c);

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
/* Answers the current request with a JSON refusal, audits it when <audit>, and moves on. */
void http_answer(struct conn *c, int status, const char *error, const char *rule, const char *reason, int audit);
/* http_answer in two halves, for answers written by their caller: 1 when the connection may stay open after <status>, */
int http_answer_keep(const struct conn *c, int status);
/* ... and, once the answer is queued on cio_out(), the rest: records <status>, <rule>, <reason>, audits, moves on. */
void http_answer_end(struct conn *c, int status, const char *rule, const char *reason, int audit, int keep);
/* The current request's id, given once: "<conn>-<n>" (a stream's n is its stream id). */
const char *http_req_id(struct conn *c);
int http_append_header(struct evbuffer *out, const struct h1_header *h);
/* Copies <m>'s end-to-end headers (no hop-by-hop, no Content-Length), minus <skip1>/<skip2>. */
void http_copy_headers(struct evbuffer *out, const struct h1_message *m, const char *skip1, const char *skip2);

/* relay.c: the request in flight (DIAL, RELAY) and byte tunnels. */
/* Dials or reuses the upstream for the parsed request and starts relaying. */
void relay_dial(struct conn *c);
/* Moves body bytes both ways as far as the watermarks allow; finishes the request at its end. */
void relay_pump(struct conn *c);
/* Fails the request in flight: a JSON answer if no response head went out yet, else a truncating close. */
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

/*
 * credreq.c: placeholders in the request head that leaves.  cred_check_head()
 * searches r->up_head as built (every place, in every decoded view:
 * credhead.c), takes the values of placeholders written in bound places
 * (r->uses), rewrites r->up_head with each value only inside its place, and
 * answers 403 or 503 (returning -1) for a placeholder anywhere else.
 * cred_release() drops the values and wipes the head.
 */
int cred_check_head(struct conn *c);
/*
 * credresp.c: <head> is the response head as built for the client: scrubbed
 * into <cout>; when the response has a body, sets up its decoder and
 * scrubber.  0, -1 (out of memory) or -2 (an encoding that cannot be decoded).
 */
int cred_resp_head(struct conn *c, struct evbuffer *head, const struct h1_message *m, struct evbuffer *cout);
/*
 * 1 when response <m>'s body is held whole to be scrubbed and keeps a
 * Content-Length: an unencoded Content-Length body of at most
 * CRED_RESP_WHOLE_MAX bytes, not gRPC.  Clients that need a length (or an
 * HTTP/1.0 one that would lose keep-alive) get one for most API answers.
 */
#define CRED_RESP_WHOLE_MAX (64u << 10)
int cred_resp_holds(const struct h1_message *m);
/* Moves decoded body bytes (r->scrub_in) through unzip and the scrubber to the client; <end> flushes. 0 or -1. */
int cred_resp_pump(struct conn *c, int end);
void cred_resp_free(struct req *r);
/* Bytes the relay may queue for the scrubber: a gRPC message is scrubbed whole, so up to one message. */
#define CRED_GRPC_MSG_MAX (4u << 20)    /* gRPC's default receive limit */
size_t cred_resp_queue_max(const struct req *r);
/*
 * The set c->req's response is scrubbed with (r->scrub, set up on first use):
 * the host's (credscrub.c), copied and extended when the request injected
 * what the host's set lacks (the exact Basic credential, or a value newer
 * than the set).  NULL when the host has no bound secret, and on an error
 * (*err = 1: out of memory; the caller fails the response).  WebSocket
 * frames use it (wstunnel.c), borrowed from r.
 */
const struct scrub_set *cred_resp_set(struct conn *c, int *err);
/* Scrubs the head (an interim one too) built in <head> into <cout> with cred_resp_set(). 0 or -1. */
int cred_resp_scrub_head(struct conn *c, struct evbuffer *head, struct evbuffer *cout);

/*
 * credscrub.c: every response, interim response, trailer and WebSocket
 * message from a host that any secret is bound to is scrubbed with the
 * values of every secret bound to that host, whether or not its request
 * injected one (a value the service stored is read back by later requests).
 * Each worker keeps one set per (policy snapshot, host), tagged with the
 * policy's secret index, rebuilt when cred_store_gen() moves (a reload, an
 * exec: refresh on its ttl or after a 401, a new entry).
 *
 * cred_host_scrub() sets c->req->hscrub for c->host under c->pol (NULL when
 * no secret is bound to it): 0, or -1 when the set cannot be built (the
 * caller refuses the request: a bound host's response is never relayed
 * unscrubbed).  The request holds a reference until cred_release().
 */
struct host_scrub;
int cred_host_scrub(struct conn *c);
/* The set of <h> (never NULL; may be empty when no bound secret has a value). */
const struct scrub_set *host_scrub_set(const struct host_scrub *h);
/* 1 when <v> is one of the values <h> was built from. */
int host_scrub_has_value(const struct host_scrub *h, const struct cred_value *v);
void host_scrub_drop(struct host_scrub *h);
/* Frees worker <w>'s cache (worker_join). */
void cred_scrub_cache_free(struct worker *w);
/*
 * Explicit proxy: a Proxy-Authorization header in <m> makes the client the
 * sandbox whose proxy_auth it matches.  0 (no header, or it matched), -1
 * (it matched none: the caller answers 407).
 */
int cred_client_auth(struct conn *c, const struct h1_message *m);
/* Sets up the streaming search of the request body (r->scan_in collects decoded body bytes). 0 or -1. */
int cred_scan_begin(struct conn *c);
/*
 * Moves r->scan_in through the search into <uout> (chunk-framed for a
 * chunked body; <end> also flushes and ends it).  0, 1 when a placeholder
 * was found (nothing of it was sent: the caller refuses the request), -1
 * out of memory.
 */
int cred_scan_pump(struct conn *c, struct evbuffer *uout, int end);
/*
 * One placeholder of <s> found at <place> ("header:x", "basic", "query:p",
 * "path", "json:$.a[0]", "form:f", "body", ...): allowed (its value taken into
 * r->uses) or refused.  0, or -1 when answered (403, or 503 when the value is
 * unavailable).
 */
int cred_found(struct conn *c, const struct policy_secret *s, const struct cred_entry *e, const char *place);
/* Refuses the request as an exfiltration attempt of <s> at <place>, because <why>: 403, audited; returns -1. */
int cred_refuse(struct conn *c, const struct policy_secret *s, const char *place, const char *why);
/* <s>'s placeholder was found at <place> only in a decoded view (or cut up): refused as cred_refuse; returns -1. */
int cred_refuse_encoded(struct conn *c, const struct policy_secret *s, const char *place);

/*
 * credbody.c: request bodies held whole and searched before dialling; JSON
 * and form fields injected.  cred_hold_begin() decides at the head (1: hold,
 * 0: stream through the search, -1: out of memory); cred_hold_start() enters
 * CONN_S_HOLD once the head is consumed; cred_hold_pump() reads the body and
 * then dials (or refuses).
 */
enum cred_body_type { CRED_BODY_OTHER = 0, CRED_BODY_JSON = 1, CRED_BODY_FORM = 2 };
#define CRED_BODY_HOLD_MAX (PROXY_HIGH_WATER / 2)   /* bytes of a body held whole when nothing could be injected */
#define CRED_BODY_INJECT_MAX (1024 * 1024)          /* bytes of a JSON or form body a secret may be injected into */
int cred_hold_begin(struct conn *c, const struct h1_message *m);
/*
 * A request body with a Content-Encoding (other than identity) toward a host
 * a secret is bound to cannot be searched for placeholders: 415, audited.
 * 0, or -1 when answered.
 */
int cred_body_coding_check(struct conn *c, const struct h1_message *m);
/* The trailers of a held or searched body (r->req_trailers): 1 and *<secret> when a placeholder is in them, 0, -1. */
int cred_trailers_search(struct conn *c, size_t *secret);
void cred_hold_start(struct conn *c);
void cred_hold_pump(struct conn *c);
/* The held body is whole (r->hold): search it, inject, send it with a Content-Length (relay_dial), or refuse. */
void cred_hold_done(struct conn *c);
void cred_hold_free(struct req *r);
/* A held body is not whole yet: 400 if the client closed, else wait for more (the body timer rearmed on <progress>). */
void cred_hold_wait(struct conn *c, int progress);
/* relay.c: moves request body bytes from <in> to <out> (re-chunked when <reencode>): 1 progress, 0 wait, -1 bad. */
int relay_body_move(struct conn *c, struct evbuffer *in, struct evbuffer *out, int reencode, const char **err);
void cred_release(struct req *r);

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
/* Makes <c> the owner of its READY upstream's callbacks (relay and tunnel). */
void relay_own_upstream(struct conn *c);

/* ---- worker.c ---- */

struct worker {
	unsigned idx;
	pthread_t thread;
	struct gateway *gw;
	struct event_base *base;
	struct evdns_base *dns;
	struct evconnlistener *l_transparent;
	struct evconnlistener *l_proxy;
	struct policy *pol;              /* current snapshot; only this thread touches it */
	uint64_t pol_gen, revoke_gen;    /* its generation and secrets-and-sandboxes generation (revoke.c) */
	struct event *mail_ev;
	pthread_mutex_t mail_mu;
	struct policy *mail_pol;         /* a new snapshot handed over by the main thread */
	uint64_t mail_gen, mail_revoke_gen;
	int mail_drain;
	int mail_revoke;                 /* a sandbox registration was removed: sweep the connections */
	SSL_CTX *srv_ctx;                /* client-facing TLS */
	SSL_CTX *up_ctx;                 /* upstream TLS (verifying) */
	uint8_t *scratch;                /* peek buffer, this thread only */
	size_t scratch_cap;
	struct h1_message *msg;          /* parse scratch, this thread only */
	struct upstream_list pool;
	unsigned npool;
	struct up_session *sessions;     /* upstream TLS sessions by host, this thread only */
	LIST_HEAD(, h2up_sess) h2up;     /* shared upstream HTTP/2 sessions (h2up.c) */
	unsigned nh2up;
	struct host_scrub *hscrubs;      /* credscrub.c: scrub sets by host, most recently used first */
	unsigned nhscrubs;
	struct conn_list conns;
	unsigned nconns;
	unsigned nlinger;                /* sockets in a lingering close (worker_linger): a drain waits for them */
	struct conn **dl;                /* deadline heap (deadline.c), earliest first */
	size_t ndl, dl_cap;
	struct event *dl_ev;             /* fires at dl[0]'s deadline */
	uint64_t dl_at;                  /* the deadline dl_ev is set for, 0 if none */
	int draining;
	struct event *drain_ev;
	atomic_int finished;             /* set by the thread as its last act */
};

struct client_slot {
	uint8_t addr[16];                /* IPv6 or v4-mapped */
	unsigned count;
	struct client_slot *next;
};

struct gateway {
	const char *config_path;
	const struct policy_config *cfg;
	struct ca *ca;
	struct policy *pol;              /* main thread's current snapshot */
	struct audit *audit;
	struct sbxreg *sbx;              /* sandboxes registered over the admin socket */
	struct synth *synth;             /* names <-> synthetic addresses the DNS responder gave out */
	struct dns_responder *dns;       /* listen.dns (main thread), NULL if none */
	int dns_fd;                      /* its socket until the responder takes it */
	unsigned nworkers;
	struct worker workers[PROXY_MAX_WORKERS];
	int fd_transparent[PROXY_MAX_WORKERS];
	int fd_proxy[PROXY_MAX_WORKERS];
	struct netaddr_listen la_transparent;
	struct netaddr_listen la_proxy;
	int admin_fd;
	int lock_fd;                     /* flock on <admin>.gateway.lock: one gateway per admin socket */
	struct event_base *base;
	atomic_ulong nconns;
	atomic_ullong next_conn_id;      /* connection ids, unique across workers */
	atomic_ullong pol_gen;           /* the policy generation in force (reload.c; workers follow by mail) */
	atomic_ullong revoke_gen;        /* +1 by each reload that changes secrets or sandboxes (revoke.c) */
	atomic_ulong nrequests;
	atomic_ulong ndenied;
	pthread_mutex_t clients_mu;
	struct client_slot *clients[PROXY_CLIENT_SLOTS];
	SSL_CTX *srv_ctx;
	SSL_CTX *up_ctx;
	struct event *done_ev;
	struct event *trim_ev;           /* periodic malloc_trim, and the secret store's ttl refresh */
	struct cred_store *creds;
	struct metrics *metrics;         /* /metrics counters (metrics.h): any thread counts, lock-free */
	pthread_mutex_t memo_mu;         /* guards <memo> (one short lock per client handshake and per h2 dial) */
	struct up_memo *memo;            /* what each host chose when offered h2, shared by the workers (upstream.c) */
	unsigned nstarted;
	struct evhttp *admin;
	int stopping;
	struct approvals *approvals;     /* requests held for an operator (approvals.h) */
	struct limits *limits;           /* counters of rate limits and budgets (limits.h), any thread; saved by reload.c */
	struct reload_state *reload;     /* reload.c: generation, config file watch, counters' save timer */
	atomic_size_t held;              /* bytes of request bodies held for semantic rules (semantic.c, PROXY_HELD_MAX) */
};

/*
 * ---- reload.c: hot reload and the counters' state file (main thread) ----
 * reload_init() (gateway_create, as root) makes state_dir (0700, given to
 * `user:`) and reads <state_dir>/counters into gw->limits: -1 with *<err>
 * (naming the file and the line) when it does not parse: the gateway does
 * not start.  reload_start() (gateway_run, after the privilege drop) logs
 * the policy's warnings, checks state_dir is writable (else takes fail
 * closed), starts the one-second save timer and, with reload.watch, the
 * config file watch.  reload_stop() (the workers have finished) stops them
 * and saves the counters; reload_free() (gateway_destroy) saves and frees.
 * gateway_reload() compiles the config file again and swaps the policy in
 * (open connections keep theirs), or keeps the old one; logs, counts
 * (metrics) and audits (config_reload) the result.  <why>: "SIGHUP", "file
 * changed".
 */
int reload_init(struct gateway *gw, const char **err);
void reload_start(struct gateway *gw);
void reload_stop(struct gateway *gw);
void reload_free(struct gateway *gw);
void gateway_reload(struct gateway *gw, const char *why);

/* Takes a per-client connection slot; 0, or -1 when the client is at its limit. */
int gateway_client_take(struct gateway *gw, const struct sockaddr *sa);
void gateway_client_put(struct gateway *gw, const struct sockaddr *sa);
int worker_start(struct worker *w);
/*
 * Hands <pol> (taken; its generation <gen> and secrets-and-sandboxes
 * generation <rgen>) and/or a drain order to <w>'s thread. Thread-safe.
 */
void worker_post(struct worker *w, struct policy *pol, uint64_t gen, uint64_t rgen, int drain);
/* Tells <w>'s thread a sandbox registration was removed: its connections are swept (revoke.c). Thread-safe. */
void worker_post_revoke(struct worker *w);
/* Stops <w>'s loop at once (drain deadline). Thread-safe. */
/* Serves the admin socket (admin.c) on the main thread's base. */
void admin_start(struct gateway *gw);
/* approvals' note hook (approvals_set_note, <arg> the gateway): writes each outcome's `approval` audit record. */
void admin_approval_note(void *arg, const char *id, const struct approval_info *info, enum approval_decision decision,
                         const char *by);

/* The DNS responder's socket, bound before the privilege drop (gwdns.c): 0, or -1 with *<err>. */
int gwdns_bind(struct gateway *gw, const char *spec, const char **err);
/* Starts / stops answering on the main thread's base. */
void gwdns_start(struct gateway *gw);
void gwdns_stop(struct gateway *gw);
/*
 * A transparent connection to a synthetic address: the name it stands for
 * must be <host> (have_name: from SNI or Host), or becomes <host> (no name
 * given).  0, or -1 with *<reason> (the connection is refused).
 */
int gwdns_check(struct conn *c, char *host, size_t cap, int have_name, const char **reason);

void worker_stop(struct worker *w);
/* Takes <fd> (our answer handed to the kernel) into a lingering close of PROXY_LINGER_MS (net/linger.h). */
void worker_linger(struct worker *w, int fd);
void worker_join(struct worker *w);

/*
 * ---- revoke.c: revocation reaches open connections (issue 17) ----
 * revoke_policies_differ(): main thread: 1 when the secrets or sandboxes of
 *   <a> and <b> differ (the reload then bumps gw->revoke_gen).
 * revoke_sweep(): worker thread, after its mail brought a policy or a
 *   removal: revoke_conn() on each connection whose secrets-and-sandboxes
 *   generation is older or whose registration was removed.
 * revoke_conn(): ends <c>'s use of its old facts (<why>, static text): an
 *   idle HTTP/1.1 connection closes, a busy one after its request in flight,
 *   HTTP/2 gets GOAWAY, a WebSocket tunnel that carries an injected value
 *   closes; audited ("revocation").  Once per connection.
 * revoke_request_start(): a new request on <c> (after req_new): 421 and
 *   close when <c> was revoked; adopts the worker's newer policy (identity,
 *   host verdict: 403 when now denied).  0 go on, -1 answered.
 * revoke_stale(): why <c>'s facts are no longer current (any thread's view:
 *   the gateway's generation, the registration), NULL when they are.
 * revoke_send_check(): the injected request of <c> is about to leave: 0, or
 *   -1 when it was refused instead (503, audited) because revoke_stale().
 * revoke_audit(): the "revocation" record: <action> done to <c>, <why>.
 * conn_tenant(): the tenant <c>'s upstream connections belong to, into <buf>
 *   (UPSTREAM_TENANT_MAX bytes): its sandbox registration id, else its
 *   sandbox's name, else its address.  Returns <buf>.
 */
int revoke_policies_differ(const struct policy *a, const struct policy *b);
void revoke_sweep(struct worker *w);
void revoke_conn(struct conn *c, const char *why);
int revoke_request_start(struct conn *c);
const char *revoke_stale(const struct conn *c);
int revoke_send_check(struct conn *c);
void revoke_audit(struct conn *c, const char *action, const char *why);
const char *conn_tenant(const struct conn *c, char *buf);
/*
 * h2srv.c: HTTP/2 connection <c> was revoked (<why>): GOAWAY (its open
 * streams finish, no new stream starts), its streams are marked revoked,
 * and a WebSocket stream that carries an injected value is reset; the
 * connection closes when its last stream ends.
 */
void h2srv_revoke(struct conn *c, const char *why);

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
