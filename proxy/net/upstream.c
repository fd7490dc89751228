/*
 * proxy/net/upstream.c - connections to the real hosts: resolve, refuse special
 * addresses, connect, verify TLS, and pool idle keep-alive connections per
 * worker (a pooled connection saves the upstream handshake).
 *
 * Security: the gateway resolves the name itself and dials its own answer,
 * never the address the sandbox dialled.  Loopback, private, link-local,
 * CGNAT, multicast, unspecified and the IPv6 forms that embed them are refused
 * unless the host entry says allow_private.  Verification failures are never
 * downgraded: there is no insecure fallback.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <event2/util.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/metrics.h"
#include "proxy/net/net.h"
#include "proxy/core/context.h"
#include "audit/writer.h"

#define SESSION_SLOTS 128
#define MEMO_SLOTS 256
#define MEMO_H1_SECONDS 300    /* an HTTP/1.1-only answer is trusted this long, then h2 is offered again */

/* What a host chose when h2 was offered (ALPN), shared by the workers: UPSTREAM_ALPN_H1 or _H2. */
struct up_memo {
	char key[HOST_BUF + 8];
	unsigned proto;
	time_t at;
};

struct up_session {
	char key[HOST_BUF + 8];
	SSL_SESSION *sess;
};

/* FNV-1a of a "host:port" key. */
static unsigned
key_hash(const char *key)
{
	unsigned h = 2166136261u;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 16777619u;
	return h;
}

static void
host_key(const char *host, unsigned port, char *key, size_t cap)
{
	snprintf(key, cap, "%s:%u", host, port);
}

/* The slot of <key> (the caller holds memo_mu). */
static struct up_memo *
memo_slot(struct gateway *gw, const char *key)
{
	if (gw->memo == NULL)
		gw->memo = xcalloc(MEMO_SLOTS, sizeof(struct up_memo));
	return &gw->memo[key_hash(key) % MEMO_SLOTS];
}

unsigned
upstream_alpn_memo(struct worker *w, const char *host, unsigned port)
{
	char key[HOST_BUF + 8];
	struct up_memo *m;
	unsigned proto = 0;

	host_key(host, port, key, sizeof(key));
	pthread_mutex_lock(&w->gw->memo_mu);
	m = memo_slot(w->gw, key);
	if (m->proto != 0 && strcmp(m->key, key) == 0 &&
	    (m->proto != UPSTREAM_ALPN_H1 || time(NULL) - m->at <= MEMO_H1_SECONDS))
		proto = m->proto;
	pthread_mutex_unlock(&w->gw->memo_mu);
	return proto;
}

void
upstream_alpn_remember(struct worker *w, const char *host, unsigned port, unsigned proto)
{
	char key[HOST_BUF + 8];
	struct up_memo *m;

	host_key(host, port, key, sizeof(key));
	pthread_mutex_lock(&w->gw->memo_mu);
	m = memo_slot(w->gw, key);
	memcpy(m->key, key, sizeof(m->key));
	m->proto = proto;
	m->at = time(NULL);
	pthread_mutex_unlock(&w->gw->memo_mu);
}

static int up_ex_index = -1;
static pthread_once_t up_ex_once = PTHREAD_ONCE_INIT;

static void
ex_index_init(void)
{
	up_ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

static unsigned
session_slot(const char *key)
{
	return key_hash(key) % SESSION_SLOTS;
}

static void
session_key(const struct upstream *up, char *key, size_t cap)
{
	host_key(up->host, up->port, key, cap);
}

/* OpenSSL hands us each new session (TLS 1.3: after the handshake, in a ticket). */
static int
new_session_cb(SSL *ssl, SSL_SESSION *sess)
{
	struct upstream *up = SSL_get_ex_data(ssl, up_ex_index);
	struct up_session *slot;
	char key[HOST_BUF + 8];

	if (up == NULL || up->w->sessions == NULL)
		return 0;
	session_key(up, key, sizeof(key));
	slot = &up->w->sessions[session_slot(key)];
	if (slot->sess != NULL)
		SSL_SESSION_free(slot->sess);
	memcpy(slot->key, key, sizeof(slot->key));
	slot->sess = sess;
	return 1;  /* we keep the reference */
}

SSL_CTX *
upstream_ctx_create(const struct policy_config *cfg, const char **err)
{
	SSL_CTX *ctx;

	pthread_once(&up_ex_once, ex_index_init);
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL) {
		*err = "cannot create the upstream TLS context";
		return NULL;
	}
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	if (cfg->ca_bundle != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, cfg->ca_bundle, NULL) != 1) {
			*err = "cannot load upstream.ca_bundle";
			SSL_CTX_free(ctx);
			return NULL;
		}
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		*err = "cannot load the system trust store";
		SSL_CTX_free(ctx);
		return NULL;
	}
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
	SSL_CTX_sess_set_new_cb(ctx, new_session_cb);
	return ctx;
}

/* Ends a dial: <failed> with the reason already in up->errbuf. */
static void
finish(struct upstream *up, int failed, int status)
{
	if (up->timer != NULL)
		evtimer_del(up->timer);
	up->state = failed ? UP_S_FAILED : UP_S_READY;
	if (failed && up->errbuf[0] == '\0')
		memcpy(up->errbuf, "upstream failed", sizeof("upstream failed"));
	if (up->in_dial || up->cb == NULL)
		return;
	up->cb(up, failed ? up->errbuf : NULL, status, up->cb_arg);
}

static void
pooled_close(struct upstream *up)
{
	TAILQ_REMOVE(&up->w->pool, up, pool_link);
	up->w->npool--;
	up->state = UP_S_FAILED;
	upstream_free(up);
}

static void
up_readcb(struct bufferevent *bev, void *arg)
{
	struct upstream *up = arg;

	(void)bev;
	if (up->state == UP_S_POOLED)  /* an idle upstream may not speak: drop it */
		pooled_close(up);
}

/* The socket under the upstream's bufferevent (TLS is a filter over it). */
static evutil_socket_t
up_fd(const struct upstream *up)
{
	struct bufferevent *sock = bufferevent_get_underlying(up->bev);

	return bufferevent_getfd(sock != NULL ? sock : up->bev);
}

static void
up_eventcb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream *up = arg;
	unsigned long e;
	char ebuf[120];
	long vr;
	int soerr;

	(void)bev;
	if (up->state == UP_S_POOLED) {
		pooled_close(up);
		return;
	}
	if (up->state != UP_S_CONNECTING)
		return;
	if (what & BEV_EVENT_CONNECTED) {
		if (up->tls && (vr = SSL_get_verify_result(up->ssl)) != X509_V_OK) {
			snprintf(up->errbuf, sizeof(up->errbuf), "upstream certificate rejected: %s",
			         X509_verify_cert_error_string(vr));
			metrics_tls_failure(up->w->gw->metrics, METRICS_SIDE_UPSTREAM);
			finish(up, 1, 502);
			return;
		}
		finish(up, 0, 0);
		return;
	}
	soerr = 0;
	getsockopt(up_fd(up), SOL_SOCKET, SO_ERROR, &soerr, &(socklen_t){sizeof(soerr)});
	if (soerr != 0) {
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream connect to %s failed: %s", up->addr_str,
		         strerror(soerr));
	} else if (up->tls && (vr = SSL_get_verify_result(up->ssl)) != X509_V_OK) {
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream certificate rejected: %s",
		         X509_verify_cert_error_string(vr));
		metrics_tls_failure(up->w->gw->metrics, METRICS_SIDE_UPSTREAM);
	} else if (up->tls && (e = bufferevent_get_openssl_error(up->bev)) != 0 && ERR_GET_LIB(e) != 0) {
		ERR_error_string_n(e, ebuf, sizeof(ebuf));
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream TLS handshake failed: %s", ebuf);
		metrics_tls_failure(up->w->gw->metrics, METRICS_SIDE_UPSTREAM);
	} else if (EVUTIL_SOCKET_ERROR() != 0 && (what & BEV_EVENT_ERROR)) {
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream connect to %s failed: %s", up->addr_str,
		         evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
	} else {
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream %s closed during the handshake", up->addr_str);
	}
	finish(up, 1, 502);
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct upstream *up = arg;

	(void)fd;
	(void)what;
	if (up->state == UP_S_POOLED) {
		pooled_close(up);
		return;
	}
	if (up->state == UP_S_RESOLVING && up->dnsreq != NULL) {
		struct evdns_getaddrinfo_request *r = up->dnsreq;
		up->dnsreq = NULL;
		up->state = UP_S_FAILED;  /* the cancel callback sees FAILED and stays quiet */
		evdns_getaddrinfo_cancel(r);
	}
	snprintf(up->errbuf, sizeof(up->errbuf), "upstream connect timed out (limits.upstream_connect)");
	up->state = UP_S_CONNECTING;  /* so finish() reports */
	finish(up, 1, 504);
}

/* Accepts <sa> as the address to dial, or says why not. */
static int
address_ok(struct upstream *up, const struct sockaddr *sa)
{
	const struct policy_config *cfg = up->w->gw->cfg;
	const char *cls = netaddr_special_nat64(sa, cfg->nat64_prefixes, cfg->nnat64_prefixes);

	if (cls != NULL && !up->allow_private) {
		up->refused = 1;
		snprintf(up->errbuf, sizeof(up->errbuf),
		         "%s resolves to a %s address; the host entry does not say allow_private", up->host, cls);
		return 0;
	}
	return 1;
}

static void
set_addr(struct upstream *up, const struct sockaddr *sa, socklen_t len)
{
	memcpy(&up->addr, sa, len);
	up->addrlen = len;
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)&up->addr)->sin_port = htons((uint16_t)up->port);
	else
		((struct sockaddr_in6 *)&up->addr)->sin6_port = htons((uint16_t)up->port);
	netaddr_format((struct sockaddr *)&up->addr, 1, up->addr_str, sizeof(up->addr_str));
}

/* Parses an IP literal into <up>'s address; 1 if it was one. */
static int
literal_addr(struct upstream *up, const char *text)
{
	struct sockaddr_in s4 = {0};
	struct sockaddr_in6 s6 = {0};

	if (inet_pton(AF_INET, text, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		set_addr(up, (struct sockaddr *)&s4, sizeof(s4));
		return 1;
	}
	if (inet_pton(AF_INET6, text, &s6.sin6_addr) == 1) {
		s6.sin6_family = AF_INET6;
		set_addr(up, (struct sockaddr *)&s6, sizeof(s6));
		return 1;
	}
	return 0;
}

/* Offers the upstream the protocols of up->alpn (none: the server assumes HTTP/1.1). */
static int
set_alpn(struct upstream *up)
{
	static const unsigned char h1[] = "\x08http/1.1", h2[] = "\x02h2", both[] = "\x02h2\x08http/1.1";

	switch (up->alpn) {
	case UPSTREAM_ALPN_H1:
		return SSL_set_alpn_protos(up->ssl, h1, sizeof(h1) - 1) == 0 ? 0 : -1;
	case UPSTREAM_ALPN_H2:
		return SSL_set_alpn_protos(up->ssl, h2, sizeof(h2) - 1) == 0 ? 0 : -1;
	case UPSTREAM_ALPN_H1 | UPSTREAM_ALPN_H2:
		return SSL_set_alpn_protos(up->ssl, both, sizeof(both) - 1) == 0 ? 0 : -1;
	default:
		return 0;
	}
}

/*
 * TLS as a filter over the socket bufferevent <sock>, for an upstream that
 * may carry an h2 session: the socket side takes what the kernel holds in
 * one read(2) and OpenSSL reads its records from memory, and the records of
 * a loop round leave in one write(2).  (bufferevent_openssl on the socket
 * reads each record's header and then its body, and with read-ahead it left
 * records inside the SSL object.)  HTTP/1.1-only upstreams keep that one: the
 * filter's socket side reads at most 4 KiB per read(2) (libevent 2.1), which
 * doubled the CPU of a 1 MiB download, and its plaintext chains come from
 * the heap, which cost an idle client connection ~0.7 KiB (docs/performance.md).
 */
static struct bufferevent *
tls_filter(struct worker *w, struct bufferevent *sock, SSL *ssl)
{
	struct bufferevent *bev;

	bev = bufferevent_openssl_filter_new(w->base, sock, ssl, BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		fatalx("out of memory");  /* who owns the SSL after a failure is unclear: only memory fails here */
	/* a filter finishes its handshake only while enabled (libevent 2.1) */
	bufferevent_enable(bev, EV_READ | EV_WRITE);
	/*
	 * The filter encrypts into the socket side's buffer only up to this
	 * bound; past it, bytes wait in the filter's own output, where the
	 * relay's backpressure (a write watermark on the upstream) sees them.
	 */
	bufferevent_setwatermark(sock, EV_WRITE, 0, PROXY_HIGH_WATER);
	return bev;
}

static int
start_connect(struct upstream *up)
{
	struct worker *w = up->w;
	struct up_session *slot;
	struct bufferevent *sock;
	char key[HOST_BUF + 8];
	struct in6_addr tmp;
	int is_ip;

	if (!address_ok(up, (struct sockaddr *)&up->addr))
		return -1;
	if (up->tls) {
		up->ssl = SSL_new(w->up_ctx);
		if (up->ssl == NULL) {
			snprintf(up->errbuf, sizeof(up->errbuf), "cannot create an upstream TLS session");
			return -1;
		}
		SSL_set_ex_data(up->ssl, up_ex_index, up);
		is_ip = inet_pton(AF_INET, up->host, &tmp) == 1 || inet_pton(AF_INET6, up->host, &tmp) == 1;
		if (is_ip) {
			X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(up->ssl), up->host);
		} else {
			SSL_set_tlsext_host_name(up->ssl, up->host);
			SSL_set1_host(up->ssl, up->host);
		}
		if (set_alpn(up) != 0) {
			snprintf(up->errbuf, sizeof(up->errbuf), "cannot set the upstream ALPN list");
			return -1;
		}
		session_key(up, key, sizeof(key));
		slot = &w->sessions[session_slot(key)];
		if (slot->sess != NULL && strcmp(slot->key, key) == 0)
			SSL_set_session(up->ssl, slot->sess);
	}
	if (up->tls && !(up->alpn & (UPSTREAM_ALPN_H2 | UPSTREAM_ALPN_WS))) {
		up->bev = bufferevent_openssl_socket_new(w->base, -1, up->ssl, BUFFEREVENT_SSL_CONNECTING,
		                                         BEV_OPT_CLOSE_ON_FREE);
		if (up->bev == NULL)
			fatalx("out of memory");  /* who owns the SSL after a failure is unclear: only memory fails here */
		sock = up->bev;
	} else {
		sock = bufferevent_socket_new(w->base, -1, BEV_OPT_CLOSE_ON_FREE);
		if (sock == NULL)
			fatalx("out of memory");
		up->bev = up->tls ? tls_filter(w, sock, up->ssl) : sock;
	}
	bufferevent_setcb(up->bev, up_readcb, NULL, up_eventcb, up);
	/*
	 * On either kind, libevent reserves room for each read up to this: past
	 * 16 KiB the chain would come from mmap (PROXY_MMAP_THRESHOLD), one
	 * mmap and one munmap (a TLB shoot-down) per response.
	 */
	bufferevent_set_max_single_read(up->bev, UP_READ_CHUNK);
	up->state = UP_S_CONNECTING;
	if (bufferevent_socket_connect(sock, (struct sockaddr *)&up->addr, up->addrlen) == -1) {
		snprintf(up->errbuf, sizeof(up->errbuf), "upstream connect to %s failed: %s", up->addr_str,
		         strerror(errno));
		return -1;
	}
	/* request heads are small writes: never hold them back for an ACK */
	setsockopt(bufferevent_getfd(sock), IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	return 0;
}

static void
dns_cb(int result, struct evutil_addrinfo *res, void *arg)
{
	struct upstream *up = arg;
	struct evutil_addrinfo *ai;
	int found = 0;

	up->dnsreq = NULL;
	if (up->state != UP_S_RESOLVING) {  /* cancelled */
		if (res != NULL)
			evutil_freeaddrinfo(res);
		return;
	}
	if (result != 0) {
		snprintf(up->errbuf, sizeof(up->errbuf), "cannot resolve %s: %s", up->host,
		         evutil_gai_strerror(result));
	} else {
		for (ai = res; ai != NULL && !found; ai = ai->ai_next) {
			if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
				continue;
			set_addr(up, ai->ai_addr, (socklen_t)ai->ai_addrlen);
			found = address_ok(up, ai->ai_addr);
		}
		if (!found && up->errbuf[0] == '\0')
			snprintf(up->errbuf, sizeof(up->errbuf), "%s has no usable address", up->host);
	}
	if (res != NULL)
		evutil_freeaddrinfo(res);
	if (!found) {
		up->state = UP_S_CONNECTING;
		finish(up, 1, 502);
		return;
	}
	up->errbuf[0] = '\0';
	if (start_connect(up) == -1) {
		up->state = UP_S_CONNECTING;
		finish(up, 1, 502);
	}
}

/*
 * An idle connection to <host>:<port> that carried <tenant>'s requests, and
 * only those: a connection is never handed from one sandbox to another, so
 * an upstream that answers out of turn (a desync, a hostile server) can only
 * mislead the tenant it was already talking to.
 */
static struct upstream *
pool_take(struct worker *w, const char *tenant, const char *host, unsigned port, int tls, int allow_private)
{
	struct upstream *up;

	TAILQ_FOREACH(up, &w->pool, pool_link) {
		if (up->port == port && up->tls == tls && up->allow_private == allow_private &&
		    strcmp(up->host, host) == 0 && strcmp(up->tenant, tenant) == 0) {
			TAILQ_REMOVE(&w->pool, up, pool_link);
			w->npool--;
			evtimer_del(up->timer);
			up->state = UP_S_READY;
			up->reused = 1;
			return up;
		}
	}
	return NULL;
}

/* Starts (or restarts) the dial of <up>, whose host, port, tls, allow_private and alpn are set. */
static void
dial_begin(struct upstream *up)
{
	struct worker *w = up->w;
	const struct policy_config *cfg = w->gw->cfg;
	struct evutil_addrinfo hints;
	const char *override = NULL;
	size_t i;

	if (up->timer == NULL)
		up->timer = evtimer_new(w->base, timer_cb, up);
	up->in_dial = 1;
	up->reused = 0;
	up->refused = 0;
	up->errbuf[0] = '\0';
	up->state = UP_S_RESOLVING;
	struct timeval tv = {cfg->limits.upstream_connect_ms / 1000, (cfg->limits.upstream_connect_ms % 1000) * 1000};
	evtimer_add(up->timer, &tv);
	for (i = 0; i < cfg->nresolve; i++)
		if (strcmp(cfg->resolve[i].name, up->host) == 0)
			override = cfg->resolve[i].addr;
	if (literal_addr(up, override != NULL ? override : up->host)) {
		if (start_connect(up) == -1)
			finish(up, 1, 502);
	} else {
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_protocol = IPPROTO_TCP;
		up->dnsreq = evdns_getaddrinfo(w->dns, up->host, NULL, &hints, dns_cb, up);
		if (up->state == UP_S_CONNECTING && up->errbuf[0] != '\0')
			finish(up, 1, 502);
	}
	up->in_dial = 0;
}

struct upstream *
upstream_new(struct worker *w, const char *tenant, const char *host, unsigned port, int tls, int allow_private,
             unsigned alpn, upstream_cb cb, void *arg)
{
	struct upstream *up = xcalloc(1, sizeof(*up));

	up->w = w;
	snprintf(up->tenant, sizeof(up->tenant), "%s", tenant);
	up->tls = tls;
	up->allow_private = allow_private;
	up->alpn = tls ? alpn : 0;
	up->port = port;
	snprintf(up->host, sizeof(up->host), "%s", host);
	up->cb = cb;
	up->cb_arg = arg;
	return up;
}

struct upstream *
upstream_dial(struct worker *w, const char *tenant, const char *host, unsigned port, int tls, int allow_private,
              unsigned alpn, upstream_cb cb, void *arg)
{
	const struct upstream_mux *mux = w->gw->up_mux;
	struct upstream *up;
	int h2 = mux != NULL && tls && (alpn & UPSTREAM_ALPN_H2) != 0;

	if (mux == NULL)
		alpn &= ~UPSTREAM_ALPN_H2;

	if (w->sessions == NULL)
		w->sessions = xcalloc(SESSION_SLOTS, sizeof(*w->sessions));
	/* a stream on a shared HTTP/2 connection to the host, if there is one with room */
	if (mux != NULL && (h2 || (tls && (alpn & UPSTREAM_ALPN_WS))) &&
	    (up = mux->attach(w, tenant, host, port, allow_private, !h2, cb, arg)) != NULL)
		return up;
	up = pool_take(w, tenant, host, port, tls, allow_private);
	if (up != NULL) {
		up->cb = cb;
		up->cb_arg = arg;
		return up;
	}
	if (h2 && upstream_alpn_memo(w, host, port) != UPSTREAM_ALPN_H1) {
		/* h2 offered: the connection becomes a shared session, the caller its first stream */
		up = upstream_new(w, tenant, host, port, tls, allow_private, alpn, NULL, NULL);
		dial_begin(up);
		return mux->session_new(w, up, cb, arg);
	}
	/* HTTP/1.1 is what the host speaks (or all the client offered) */
	up = upstream_new(w, tenant, host, port, tls, allow_private, UPSTREAM_ALPN_H1, cb, arg);
	dial_begin(up);
	return up;
}

void
upstream_redial(struct upstream *up, unsigned alpn)
{
	up->alpn = up->tls ? alpn : 0;
	dial_begin(up);
	if (up->state == UP_S_FAILED && up->cb != NULL)
		up->cb(up, up->errbuf, 502, up->cb_arg);
}

void
upstream_adopt(struct upstream *up, struct upstream *from)
{
	up->bev = from->bev;
	up->ssl = from->ssl;
	if (up->timer == NULL)
		up->timer = evtimer_new(up->w->base, timer_cb, up);
	memcpy(&up->addr, &from->addr, sizeof(up->addr));
	up->addrlen = from->addrlen;
	memcpy(up->addr_str, from->addr_str, sizeof(up->addr_str));
	up->alpn = from->alpn;
	if (up->ssl != NULL)
		SSL_set_ex_data(up->ssl, up_ex_index, up);
	bufferevent_setcb(up->bev, up_readcb, NULL, up_eventcb, up);
	up->state = UP_S_READY;
	from->bev = NULL;
	from->ssl = NULL;
}

void
upstream_set_owner(struct upstream *up, bufferevent_data_cb readcb, bufferevent_data_cb writecb,
                   bufferevent_event_cb eventcb, void *arg)
{
	bufferevent_setcb(up->bev, readcb, writecb, eventcb, arg);
	bufferevent_enable(up->bev, EV_READ | EV_WRITE);
}

void
upstream_release(struct upstream *up)
{
	struct worker *w = up->w;
	struct upstream *old;

	if (up->h2s != NULL) {  /* a stream: its connection stays with its session */
		upstream_free(up);
		return;
	}
	if (up->state != UP_S_READY || w->draining || evbuffer_get_length(bufferevent_get_input(up->bev)) > 0 ||
	    evbuffer_get_length(bufferevent_get_output(up->bev)) > 0) {
		upstream_free(up);
		return;
	}
	if (w->npool >= PROXY_POOL_MAX) {
		old = TAILQ_LAST(&w->pool, upstream_list);
		pooled_close(old);
	}
	up->state = UP_S_POOLED;
	up->cb = NULL;
	bufferevent_setcb(up->bev, up_readcb, NULL, up_eventcb, up);
	bufferevent_set_timeouts(up->bev, NULL, NULL);
	bufferevent_enable(up->bev, EV_READ);
	TAILQ_INSERT_HEAD(&w->pool, up, pool_link);
	w->npool++;
	/*
	 * A warm set stays for PROXY_POOL_IDLE_MS; spares beyond it (left by a burst)
	 * go after PROXY_POOL_SPARE_MS idle.  The pool is LIFO, so under steady load
	 * spares are reused long before that, and an idle gateway sheds them.
	 */
	unsigned ms = w->npool <= PROXY_POOL_WARM ? PROXY_POOL_IDLE_MS : PROXY_POOL_SPARE_MS;
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	evtimer_add(up->timer, &tv);
}

void
upstream_free(struct upstream *up)
{
	if (up == NULL)
		return;
	if (up->h2s != NULL || up->h2wait != NULL)
		up->w->gw->up_mux->detach(up);  /* only the mux makes these */
	if (up->dnsreq != NULL) {
		struct evdns_getaddrinfo_request *r = up->dnsreq;
		up->dnsreq = NULL;
		up->state = UP_S_FAILED;
		evdns_getaddrinfo_cancel(r);
	}
	if (up->timer != NULL)
		event_free(up->timer);
	if (up->bev != NULL) {
		if (up->ssl != NULL)
			SSL_set_ex_data(up->ssl, up_ex_index, NULL);
		bufferevent_free(up->bev);  /* frees the SSL and closes the socket */
	} else if (up->ssl != NULL) {
		SSL_free(up->ssl);
	}
	free(up);
}

void
upstream_pool_clear(struct worker *w)
{
	struct upstream *up;
	unsigned i;

	while ((up = TAILQ_FIRST(&w->pool)) != NULL)
		pooled_close(up);
	if (w->gw->up_mux != NULL)
		w->gw->up_mux->clear(w);
	if (w->sessions != NULL) {
		for (i = 0; i < SESSION_SLOTS; i++)
			if (w->sessions[i].sess != NULL)
				SSL_SESSION_free(w->sessions[i].sess);
		free(w->sessions);
		w->sessions = NULL;
	}
}
