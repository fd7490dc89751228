/*
 * proxy/net/net.h - the bottom of the request path: the client socket's bytes
 * (cio.c), the upstream dial and its pool (upstream.c), the deadline heap
 * (deadline.c).  No HTTP here: net moves bytes and reports what happened.
 *
 * Calls go one way.  net never calls the session: what it has to report
 * upward (a client handshake done or failed, a round of I/O done, a deadline
 * passed) goes through the struct net_ops the worker gives it at set-up
 * (net_ops_set), and upstream events through the upstream_cb / bufferevent
 * callbacks the owner of a struct upstream gives at upstream_dial and
 * upstream_set_owner.
 *
 * Ownership: a struct upstream belongs to whoever dialled it until
 * upstream_release (back to the worker's pool) or upstream_free; cio owns a
 * connection's SSL and its two buffers from cio_start to cio_free (the
 * connection itself, its socket and its event are the session's).
 */
#ifndef SLUICE_PROXY_NET_H
#define SLUICE_PROXY_NET_H

#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <openssl/ssl.h>
#include "common/host.h"
#include "policy/policy.h"
#include "proxy/core/conn.h"

struct worker;
struct upstream;
struct conn;
struct h2up_stream;
struct h2up_sess;

#define PROXY_HIGH_WATER (64 * 1024)   /* bytes queued toward a peer before the other side stops reading */
#define PROXY_POOL_MAX 64              /* idle upstream connections per worker */
#define PROXY_POOL_IDLE_MS 30000       /* an idle pooled upstream of the warm set is closed after this */
#define PROXY_POOL_WARM 4              /* idle upstreams per worker kept for PROXY_POOL_IDLE_MS */
#define PROXY_POOL_SPARE_MS 2000       /* idle upstreams beyond the warm set close after this */
#define UP_READ_CHUNK (8 * 1024 - 256)  /* an upstream's TLS plaintext per read: its buffer chain stays under 8 KiB */
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

/*
 * The multiplexer of upstream HTTP/2 sessions (proxy/h2/h2up.c: h2up_mux),
 * which net does not call by name: the gateway gives it (gw->up_mux) and
 * upstream_dial asks it for a stream before dialling; NULL: every upstream
 * speaks HTTP/1.1.  Its operations are h2up_attach, h2up_session_new,
 * h2up_detach and h2up_clear (proxy/h2/h2.h says what each does).
 */
struct upstream_mux {
	struct upstream *(*attach)(struct worker *w, const char *tenant, const char *host, unsigned port,
	                           int allow_private, int ws, upstream_cb cb, void *arg);
	struct upstream *(*session_new)(struct worker *w, struct upstream *phys, upstream_cb cb, void *arg);
	void (*detach)(struct upstream *up);
	void (*clear)(struct worker *w);
};

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
 * deadline.c: each connection has at most one deadline, the limit of its
 * current state; re-arming replaces it.  When it passes, the worker's
 * net_ops->expired runs (the connection is disarmed first).
 */
void conn_arm_timer(struct conn *c, unsigned ms);
void conn_disarm_timer(struct conn *c);
/* The worker's deadline heap and its one timer (after w->base exists), and their teardown. */
int deadline_init(struct worker *w);
void deadline_dispose(struct worker *w);

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
/* Ends our sending side of TLS: close_notify (the FIN is the lingering close's, conn_linger_fd). */
void cio_shutdown(struct conn *c);
/* Frees the SSL and the buffers (not the socket, not the event). */
void cio_free(struct conn *c);

/*
 * What net reports upward, given once per worker before its first
 * connection (worker_start): the session's handlers.  net holds the
 * pointer; the struct must outlive the worker (a static const table).
 *   start_requests  the client side is ready for requests (TLS handshake
 *                   done, or plain from the start): cio.c
 *   tls_failed      the client TLS handshake failed with <why> (static):
 *                   the handler logs, audits and closes: cio.c
 *   pump            a round of I/O on <c> ended: drive its state: cio.c
 *   expired         <c>'s deadline passed (it is disarmed): deadline.c
 */
struct net_ops {
	void (*start_requests)(struct conn *c);
	void (*tls_failed)(struct conn *c, const char *why);
	void (*pump)(struct conn *c);
	void (*expired)(struct conn *c);
};
/* Sets the handlers of worker <w>'s connections (<ops> borrowed, never NULL once a connection exists): deadline.c. */
void net_ops_set(struct worker *w, const struct net_ops *ops);

#endif
