/*
 * proxy/core/context.h - the two contexts every layer of proxy/ runs in:
 * struct gateway (one per process; read-only for the workers after start,
 * except its atomics and the structures that carry their own locks) and
 * struct worker (one per thread: its event loop and what only that thread
 * touches).  Types only, as h2o's h2o_context_t: what the functions on
 * them are is each owner's header (proxy/gateway_int.h for the gateway and
 * worker themselves, proxy/net/net.h for the pool and deadline heap, ...).
 *
 * Threads: the gateway's main thread owns signals, reload and the admin
 * socket; each worker thread owns one event loop and everything reachable
 * from its connections.  What workers share is named here: the gateway
 * (read-only after start), the leaf cache (ca/, sharded locks), the audit
 * queue (one short lock per record) and the per-client connection counts
 * (one short lock per accept/close).
 */
#ifndef SLUICE_PROXY_CORE_CONTEXT_H
#define SLUICE_PROXY_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <event2/event.h>
#include <openssl/ssl.h>
#include "common/netaddr.h"
#include "policy/policy.h"

struct audit;
struct ca;
struct sbxreg;
struct synth;
struct dns_responder;
struct metrics;
struct up_memo;
struct up_session;
struct limits;
struct mcp_peers;
struct reload_state;
struct approvals;
struct approvals_fleet;
struct host_scrub;
struct evhttp;
struct evconnlistener;
struct evdns_base;
struct h1_message;
struct h2up_sess;
struct upstream;
struct conn;
struct cred_store;
struct store;
struct store_opts;
struct secret_buf;
struct net_ops;
struct sem_hooks;
TAILQ_HEAD(upstream_list, upstream);
LIST_HEAD(conn_list, conn);

#define PROXY_MAX_WORKERS 64
#define PROXY_CLIENT_SLOTS 1024        /* buckets of the per-client connection counter */
#define PROXY_MMAP_THRESHOLD (16 * 1024) /* allocations this large bypass the heap (TLS record buffers) */
#define PROXY_TRIM_SECONDS 5           /* how often freed heap pages go back to the kernel */
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
	const struct net_ops *net_ops;   /* net.h: how net reports to the session (net_ops_set) */
	const struct sem_hooks *sem_hooks; /* judge/semantic.h: how an operator's decision reaches the session */
	struct store *store;             /* state.backend: redis: this worker's client of the shared counters
	                                  * (store/store.h), on <base>; NULL with backend: file */
	struct upstream_list pool;
	unsigned npool;
	struct up_session *sessions;     /* upstream TLS sessions by host, this thread only */
	LIST_HEAD(, h2up_sess) h2up;     /* shared upstream HTTP/2 sessions (h2up.c) */
	unsigned nh2up;
	struct host_scrub *hscrubs;      /* credscrub.c: scrub sets by host, most recently used first */
	unsigned nhscrubs;
	struct conn_list conns;
	unsigned nconns;
	unsigned nlinger;                /* sockets in a lingering close (conn_linger_fd): a drain waits for them */
	struct conn **dl;                /* deadline heap (deadline.c), earliest first */
	size_t ndl, dl_cap;
	struct event *dl_ev;             /* fires at dl[0]'s deadline */
	uint64_t dl_at;                  /* the deadline dl_ev is set for, 0 if none */
	int draining;
	struct event *drain_ev;
	atomic_int finished;             /* set by the thread as its last act */
};

/* A draining worker's loop ends once its last connection and its last lingering close are gone. */
static inline void
worker_drain_check(struct worker *w)
{
	if (w->draining && w->nconns == 0 && w->nlinger == 0)
		event_base_loopexit(w->base, NULL);
}

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
	const struct upstream_mux *up_mux; /* the upstream HTTP/2 sessions (proxy/h2), set by gateway.c (net.h) */
	const struct conn_ops *h2_ops;   /* the HTTP/2 operations (proxy/h2), set by gateway.c: an ALPN h2 connection
	                                  * is taken over by h2_ops->start (the session does not call proxy/h2) */
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
	struct mcp_peers *mcp_peers;     /* server-to-client MCP requests seen, any thread (judge/mcp_peer.h) */
	struct limits *limits;           /* counters of rate limits and budgets (limits.h), any thread; saved by reload.c */
	struct reload_state *reload;     /* reload.c: generation, config file watch, counters' save timer */
	struct store_opts *store_opts;   /* state.backend: redis: the options each worker's store is made with
	                                  * (reload.c: made at start, freed at stop); NULL with backend: file */
	struct secret_buf *store_pw;     /* state.redis.password, read once at start (borrowed by store_opts) */
	struct secret_buf *fleet_key;    /* state.fleet_key, read once at start; freed once the fleet client copied it */
	struct approvals_fleet *approvals_fleet;  /* backend: redis with a fleet key: holds shared (approvals_fleet.h) */
	atomic_size_t held;              /* bytes of request bodies held for semantic rules (semantic.c, PROXY_HELD_MAX) */
};

/*
 * clients.c: takes a per-client connection slot (limits.conns_per_client) for <sa>: 0, or -1 when the
 * client is at its limit.  Any thread; gateway_client_put gives one back.
 */
int gateway_client_take(struct gateway *gw, const struct sockaddr *sa);
void gateway_client_put(struct gateway *gw, const struct sockaddr *sa);

#endif
