/*
 * proxy/session/conn.c - a client connection from accept to close: the proxy head
 * (explicit) or ClientHello (transparent), the connection verdict, the TLS
 * handshake with a minted leaf, and the single teardown.
 *
 * Before anything is consumed the gateway only peeks (MSG_PEEK, woken
 * edge-triggered by each new segment), so the ClientHello stays in the socket
 * for the TLS library or, in passthrough, for the upstream, untouched.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/metrics.h"
#include "ca/ca.h"
#include "policy/judge.h"
#include "proxy/codec/tls_hello.h"
#include "proxy/session/session.h"
#include "proxy/dns/dns.h"
#include "proxy/core/context.h"
#include "audit/writer.h"
#include "proxy/net/linger.h"
#include "proxy/session/conn_ops.h"

/* from linux/netfilter_ipv4.h and ip6_tables.h, which clash with netinet/in.h */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

static const char *state_names[] = {
	"?", "peek", "tls-accept", "request-head", "dial", "relay", "tunnel", "closing", "dead", "hold-body", "h2",
};

#define B(s) (1u << (s))
/*
 * Which states each state may move to.  Peers trigger transitions but never
 * choose them, so an illegal one is a gateway bug: it is logged and the
 * connection is closed (fail closed), never asserted (a remote crash).
 */
static const unsigned legal_next[] = {
	[CONN_S_PEEK] = B(CONN_S_TLS_ACCEPT) | B(CONN_S_REQ_HEAD) | B(CONN_S_DIAL) | B(CONN_S_CLOSING),
	[CONN_S_TLS_ACCEPT] = B(CONN_S_REQ_HEAD) | B(CONN_S_H2) | B(CONN_S_CLOSING),
	[CONN_S_REQ_HEAD] = B(CONN_S_REQ_HEAD) | B(CONN_S_HOLD) | B(CONN_S_DIAL) | B(CONN_S_RELAY) | B(CONN_S_CLOSING),
	[CONN_S_DIAL] = B(CONN_S_RELAY) | B(CONN_S_TUNNEL) | B(CONN_S_REQ_HEAD) | B(CONN_S_CLOSING),
	[CONN_S_RELAY] = B(CONN_S_REQ_HEAD) | B(CONN_S_DIAL) | B(CONN_S_TUNNEL) | B(CONN_S_CLOSING),
	[CONN_S_TUNNEL] = B(CONN_S_CLOSING),
	[CONN_S_CLOSING] = 0,
	[CONN_S_DEAD] = 0,
	[CONN_S_HOLD] = B(CONN_S_DIAL) | B(CONN_S_REQ_HEAD) | B(CONN_S_CLOSING),
	[CONN_S_H2] = B(CONN_S_CLOSING),
};
#undef B

void
conn_set_state(struct conn *c, enum conn_state s)
{
	/* Only DEAD is final; leaving it would resurrect a closed connection. */
	if (c->state == CONN_S_DEAD)
		return;
	if (s != CONN_S_DEAD && !(legal_next[c->state] & (1u << s))) {
		log_warnx("c%llu: illegal state change %s -> %s: closing the connection", (unsigned long long)c->id,
		          state_names[c->state], state_names[s]);
		if (c->state == CONN_S_CLOSING)
			return;
		s = CONN_S_CLOSING;
		conn_arm_timer(c, 0);
	}
	log_debug("c%llu: %s -> %s", (unsigned long long)c->id, state_names[c->state], state_names[s]);
	c->state = s;
}

/* The host of a connection that has none yet: shared, never freed. */
static char host_none[] = "";

void
conn_set_host(struct conn *c, const char *host)
{
	if (c->host != host_none)
		free(c->host);
	c->host = host[0] != '\0' ? xstrdup(host) : host_none;
}

static void
reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->ev != NULL)
		event_free(c->ev);
	if (!conn_ops(c)->stream)
		sbxreg_release(c->sbx);
	conn_set_host(c, "");
	free(c->sni);
	free(c);
}

/*
 * An intercepted connection ending after its TLS handshake without a request
 * (issue 24): a GnuTLS client (Debian's git, wget) that does not trust the CA
 * completes the handshake, then checks the certificate and closes, where an
 * OpenSSL client fails the handshake (the "tls" denial).  Recorded, so that
 * case is seen in the audit and the log too.
 */
static void
audit_no_request(struct conn *c)
{
	char peer[CONN_ADDR_STR], dest[CONN_ADDR_STR], esc[200];
	struct audit_rec r = {
		.kind = AUDIT_KIND_NO_REQUEST,
		.rule = "tls",
		.reason = "the client closed after the TLS handshake without sending a request (a client that does not "
		          "trust the Sluice CA often does: see the operator guide, troubleshooting)",
		.status = -1,
		.bytes_up = -1,
		.bytes_down = -1,
		.upstream_tls = -1,
	};

	if (!c->tls || conn_ops(c)->stream || c->nreq != 0 || (c->state != CONN_S_REQ_HEAD && c->state != CONN_S_H2) ||
	    conn_ops(c)->had_requests(c))
		return;
	r.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer);
	r.client = conn_peer_str(c, peer);
	r.dest = conn_dest_str(c, dest);
	r.sni = c->sni;
	r.host = c->host[0] ? c->host : NULL;
	r.duration_ms = clock_ms_since(&c->t0);
	r.conn_id = c->id;
	log_info("c%llu: %s closed after the TLS handshake without a request (%s): does it trust the Sluice CA?",
	         (unsigned long long)c->id, r.client, log_escape(esc, sizeof(esc), c->host, strlen(c->host)));
	audit_write(c->w->gw->audit, &r);
}

void
conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->state == CONN_S_DEAD)
		return;
	audit_no_request(c);  /* reads the state: before DEAD */
	conn_ops(c)->closing(c);  /* a stream's: reads the state, before DEAD */
	conn_set_state(c, CONN_S_DEAD);
	conn_ops(c)->release(c);
	http_req_reset(c);
	if (c->up != NULL) {
		upstream_free(c->up);  /* mid-request: not reusable */
		c->up = NULL;
	}
	if (c->ev != NULL)
		event_del(c->ev);
	conn_disarm_timer(c);
	cio_free(c);
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	if (c->counted)
		gateway_client_put(w->gw, &c->peer.sa);
	if (!conn_ops(c)->stream) {  /* a stream's connection is not in the worker's list */
		LIST_REMOVE(c, link);
		w->nconns--;
		atomic_fetch_sub(&w->gw->nconns, 1);
	}
	policy_unref(c->pol);
	c->pol = NULL;
	event_base_once(w->base, -1, EV_TIMEOUT, reap_cb, c, &(struct timeval){0, 0});
}

void
audit_conn(struct conn *c, enum audit_verdict verdict, const char *rule, const char *reason, int status)
{
	char peer[CONN_ADDR_STR], dest[CONN_ADDR_STR];
	struct audit_rec r = {
		.kind = AUDIT_KIND_CONNECTION,
		.sandbox = c->sandbox != NULL ? c->sandbox : conn_peer_str(c, peer),
		.client = conn_peer_str(c, peer),
		.dest = conn_dest_str(c, dest),
		.sni = c->sni,
		.host = c->host[0] ? c->host : NULL,
		.verdict = verdict,
		.rule = rule,
		.reason = reason,
		.status = status,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = clock_ms_since(&c->t0),
		.upstream_tls = -1,
		.conn_id = c->id,
	};

	audit_write(c->w->gw->audit, &r);
}

/* Ends the peek phase: the socket's bytes now belong to cio.c, plain (explicit or port-80 HTTP, or a refusal). */
static void
plain_start(struct conn *c)
{
	cio_start(c, NULL);
}

void
conn_refuse(struct conn *c, int status, const char *error, const char *rule, const char *reason)
{
	char esc[200];

	char peer[CONN_ADDR_STR];

	log_info("c%llu: %s refused: %s (%s)", (unsigned long long)c->id, conn_peer_str(c, peer), reason,
	         log_escape(esc, sizeof(esc), c->host, strlen(c->host)));
	audit_conn(c, AUDIT_VERDICT_DENY, rule, reason, status > 0 ? status : -1);
	atomic_fetch_add(&c->w->gw->ndenied, 1);
	if (status <= 0) {
		conn_close(c);
		return;
	}
	if (!c->io_on)
		plain_start(c);
	respond_json(cio_out(c), status, error, c->host, rule, reason, 1);
	conn_set_state(c, CONN_S_CLOSING);
	cio_read(c, 0);
	conn_arm_timer(c, 5000);
}

void
conn_tls_failed(struct conn *c, const char *why)
{
	char peer[CONN_ADDR_STR];

	log_info("c%llu: TLS handshake with %s failed: %s", (unsigned long long)c->id, conn_peer_str(c, peer), why);
	audit_conn(c, AUDIT_VERDICT_DENY, "tls", "client TLS handshake failed (does the sandbox trust the Sluice CA?)", -1);
	metrics_tls_failure(c->w->gw->metrics, METRICS_SIDE_CLIENT);
	conn_close(c);
}

void
conn_pump(struct conn *c)
{
	switch (c->state) {
	case CONN_S_REQ_HEAD:
	case CONN_S_HOLD:
	case CONN_S_DIAL:
	case CONN_S_RELAY:
		http_pump(c);
		return;
	case CONN_S_TUNNEL:
		tunnel_pump(c);
		return;
	case CONN_S_H2:
		conn_ops(c)->pump(c);
		return;
	case CONN_S_CLOSING:
		if (conn_ops(c)->stream) {  /* the stream ends once its answer is handed over */
			if (cio_out_len(c) == 0)
				conn_close(c);
			return;
		}
		if (!c->io_on || c->client_eof) {
			conn_close(c);
			return;
		}
		if (cio_out_len(c) > 0)
			return;
		/*
		 * Lingering close: the client may still be sending bytes we will not
		 * read (a request body, the rest of a refused head).  Closing now would
		 * answer them with a RST that can destroy our answer in flight, so
		 * after TLS's close_notify the socket goes to the one lingering close
		 * (net/linger.h) and the connection itself is freed now.
		 */
		{
			struct worker *w = c->w;
			int fd = c->fd;

			c->shut_wr = 1;
			cio_shutdown(c);
			c->fd = -1;
			conn_close(c);
			conn_linger_fd(w, fd);
		}
		return;
	default:
		return;
	}
}

void
conn_expired(struct conn *c)
{
	switch (c->state) {
	case CONN_S_PEEK:
		if (c->mode == CONN_MODE_EXPLICIT && c->head_started) {
			conn_refuse(c, 408, "request timeout", "limits.request_head",
			            "request head not received in time (limits.request_head)");
			return;
		}
		audit_conn(c, AUDIT_VERDICT_DENY, "limits.request_head",
		           c->mode == CONN_MODE_EXPLICIT ? "timed out waiting for the proxy request (limits.request_head)"
		                                         : "timed out waiting for the ClientHello (limits.request_head)",
		           -1);
		conn_close(c);
		return;
	case CONN_S_TLS_ACCEPT:
		audit_conn(c, AUDIT_VERDICT_DENY, "limits.tls_handshake", "TLS handshake timed out (limits.tls_handshake)", -1);
		metrics_tls_failure(c->w->gw->metrics, METRICS_SIDE_CLIENT);
		conn_close(c);
		return;
	case CONN_S_CLOSING:
		conn_close(c);
		return;
	default:
		http_timeout(c);
		return;
	}
}

static void
start_tls(struct conn *c)
{
	struct gateway *gw = c->w->gw;
	const char *err = NULL;
	X509 *leaf;
	SSL *ssl;

	leaf = ca_leaf_get(gw->ca, c->host, &err);
	if (leaf == NULL) {
		conn_refuse(c, 0, NULL, "tls", err != NULL ? err : "cannot mint a certificate for this name");
		return;
	}
	ssl = SSL_new(c->w->srv_ctx);
	if (ssl == NULL || SSL_use_certificate(ssl, leaf) != 1 || SSL_use_PrivateKey(ssl, ca_leaf_key(gw->ca)) != 1 ||
	    SSL_set_fd(ssl, c->fd) != 1) {
		X509_free(leaf);
		SSL_free(ssl);
		conn_refuse(c, 0, NULL, "tls", "cannot set up the client TLS session");
		return;
	}
	X509_free(leaf);
	SSL_set_app_data(ssl, c);  /* the ALPN choice (gateway.c) looks at the connection */
	SSL_set_accept_state(ssl);
	conn_set_state(c, CONN_S_TLS_ACCEPT);
	cio_start(c, ssl);
	conn_arm_timer(c, gw->cfg->limits.tls_handshake_ms);
}

const struct net_ops session_net_ops = {
	.start_requests = conn_start_requests,
	.tls_failed = conn_tls_failed,
	.pump = conn_pump,
	.expired = conn_expired,
};

void
conn_start_requests(struct conn *c)
{
	const unsigned char *alpn = NULL;
	unsigned alen = 0;

	if (c->ssl != NULL)
		SSL_get0_alpn_selected(c->ssl, &alpn, &alen);
	if (alen == 2 && memcmp(alpn, "h2", 2) == 0) {
		/* the HTTP/2 module (given by the gateway: the session does not call it) takes the connection over */
		if (c->w->gw->h2_ops == NULL || c->w->gw->h2_ops->start(c) != 0)
			conn_close(c);
		return;
	}
	conn_set_state(c, CONN_S_REQ_HEAD);
	conn_arm_timer(c, c->w->gw->cfg->limits.request_head_ms);
	conn_pump(c);
}

/* passthrough: once the upstream TCP connection is up, relay bytes both ways. */
static void
passthrough_ready(struct upstream *up, const char *err, int status, void *arg)
{
	struct conn *c = arg;
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	(void)up;
	if (err != NULL) {
		upstream_free(c->up);
		c->up = NULL;
		if (c->mode == CONN_MODE_EXPLICIT)
			conn_refuse(c, status ? status : 502, "upstream failed", "upstream", err);
		else
			conn_refuse(c, 0, NULL, "upstream", err);
		return;
	}
	plain_start(c);
	if (c->mode == CONN_MODE_EXPLICIT)
		evbuffer_add(cio_out(c), established, sizeof(established) - 1);
	audit_conn(c, AUDIT_VERDICT_ALLOW, c->entry ? policy_host_key(c->entry) : "default", "passthrough", -1);
	conn_set_state(c, CONN_S_TUNNEL);
	relay_own_upstream(c);
	conn_arm_timer(c, c->w->gw->cfg->limits.idle_ms);
	conn_pump(c);
}

/* Applies the connection verdict (policy/judge.h) for c->host:c->port: a CONNECT tunnel or a TLS ClientHello. */
static void
judge(struct conn *c)
{
	struct judge_conn cf = {c->sandbox, c->host, c->port, JUDGE_CONN_EXPLICIT, 1, 0, NULL};
	struct judge_outcome d;
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	ssize_t n;

	if (c->mode == CONN_MODE_TRANSPARENT)
		cf.mode = JUDGE_CONN_TRANSPARENT;
	policy_judge_conn(c->pol, &cf, &d);
	c->entry = d.entry;
	c->judged = 1;
	switch (d.verdict) {
	case JUDGE_DENY:
	case JUDGE_HOLD:       /* never a connection's verdict: refused */
	case JUDGE_NEED_BODY:
		conn_refuse(c, c->mode == CONN_MODE_EXPLICIT ? 403 : 0, "denied by policy", d.rule,
		            d.reason != NULL ? d.reason : "denied");
		return;
	case JUDGE_PASSTHROUGH:
		conn_set_state(c, CONN_S_DIAL);
		conn_arm_timer(c, c->w->gw->cfg->limits.upstream_connect_ms + 1000);
		char tenant[UPSTREAM_TENANT_MAX];

		c->up = upstream_dial(c->w, conn_tenant(c, tenant), c->host, c->port, 0, policy_host_allow_private(d.entry),
		                      0, passthrough_ready, c);
		if (c->up->state == UP_S_FAILED)
			passthrough_ready(c->up, c->up->errbuf, 502, c);
		return;
	case JUDGE_ALLOW:
		if (c->mode == CONN_MODE_EXPLICIT) {
			n = send(c->fd, established, sizeof(established) - 1, MSG_NOSIGNAL);
			if (n != (ssize_t)sizeof(established) - 1) {
				conn_close(c);
				return;
			}
		}
		start_tls(c);
		return;
	}
}

static void
peek_explicit(struct conn *c, const uint8_t *buf, size_t n)
{
	const struct policy_limits *lim = &c->w->gw->cfg->limits;
	struct h1_limits hl = {lim->header_bytes, lim->request_line_bytes, lim->header_count};
	struct h1_message *m = c->w->msg;
	const char *err = NULL;
	char host[HOST_BUF];
	int status = 400, r, kind;

	c->head_started = 1;
	r = h1_parse_request((const char *)buf, n, &hl, m, &err, &status);
	if (r == -2 && n < c->w->scratch_cap)
		return;
	if (r < 0) {
		if (r == -2) {
			status = 431;
			err = "request head too large (limits.header_bytes)";
		}
		conn_refuse(c, status, "bad request", http_refusal_rule(status, err), err ? err : "malformed request");
		return;
	}
	if (m->method_len != 7 || memcmp(m->method, "CONNECT", 7) != 0) {
		/* absolute-form plain HTTP: leave the bytes in the socket for the request parser */
		plain_start(c);
		conn_start_requests(c);
		return;
	}
	/* consume exactly the CONNECT head; what follows is the tunnel */
	if (recv(c->fd, c->w->scratch, (size_t)r, 0) != r) {
		conn_close(c);
		return;
	}
	if (cred_client_auth(c, m) != 0) {
		conn_refuse(c, 407, "proxy authentication failed", "sandboxes",
		            "Proxy-Authorization matches no sandbox's proxy_auth");
		return;
	}
	kind = host_split_authority(m->target, m->target_len, 0, host, &c->port, &err);
	if (kind < 0) {
		conn_refuse(c, 400, "bad request", "http", err);
		return;
	}
	conn_set_host(c, host);
	judge(c);
}

static void
peek_transparent(struct conn *c, const uint8_t *buf, size_t n)
{
	struct tls_hello hello;
	const char *err = NULL;
	char host[HOST_BUF];
	int r;

	if (!tls_hello_looks_tls(buf, n)) {
		if (buf[0] >= 'A' && buf[0] <= 'Z') {  /* a request line: plain HTTP */
			plain_start(c);
			conn_start_requests(c);
			return;
		}
		conn_refuse(c, 0, NULL, "protocol", "neither a TLS ClientHello nor an HTTP request");
		return;
	}
	r = tls_hello_parse(buf, n, &hello);
	if (r == -2 && n < TLS_HELLO_MAX_BYTES && n < c->w->scratch_cap)
		return;
	if (r < 0) {
		conn_refuse(c, 0, NULL, "tls", "malformed or oversized TLS ClientHello");
		return;
	}
	if (hello.has_sni) {
		c->sni = xstrndup(hello.sni, hello.sni_len);
		if (host_canon(hello.sni, hello.sni_len, host, &err) < 0) {
			conn_refuse(c, 0, NULL, "tls", "SNI is not a valid host name");
			return;
		}
	} else {
		netaddr_format(&c->dest.sa, 0, host, sizeof(host));
	}
	if (gwdns_check(c->w->gw->synth, c->has_dest ? &c->dest.sa : NULL, host, sizeof(host), hello.has_sni,
	                &err) != 0) {
		conn_refuse(c, 0, NULL, "listen.dns", err);
		return;
	}
	conn_set_host(c, host);
	judge(c);
}

/* The socket's one event: the peek until a verdict, then cio.c's I/O. */
static void
io_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	if (c->io_on) {
		cio_event(c, what);
		return;
	}
	/* between the verdict and cio_start() (a passthrough dial) the bytes wait in the socket */
	if (c->state != CONN_S_PEEK || !(what & EV_READ))
		return;
	n = recv(fd, c->w->scratch, c->w->scratch_cap, MSG_PEEK);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_close(c);
		return;
	}
	if (c->mode == CONN_MODE_EXPLICIT)
		peek_explicit(c, c->w->scratch, (size_t)n);
	else
		peek_transparent(c, c->w->scratch, (size_t)n);
}

/* Recovers where a redirected connection was going; -1 if it was not redirected. */
static int
original_dest(struct conn *c)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(c->dest), llen = sizeof(local);
	const struct sockaddr_in *d4 = &c->dest.in4;
	const struct sockaddr_in6 *d6 = &c->dest.in6;
	int r;

	r = getsockopt(c->fd, SOL_IP, SO_ORIGINAL_DST, &c->dest, &len);
	if (r == -1) {
		len = sizeof(c->dest);
		r = getsockopt(c->fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &c->dest, &len);
	}
	if (r == -1 || getsockname(c->fd, (struct sockaddr *)&local, &llen) == -1)
		return -1;
	c->has_dest = 1;
	/* not redirected: its original destination is the listener itself */
	if (c->dest.sa.sa_family == AF_INET && local.ss_family == AF_INET6) {
		const uint8_t *a6 = ((struct sockaddr_in6 *)&local)->sin6_addr.s6_addr;
		if (((struct sockaddr_in6 *)&local)->sin6_port == d4->sin_port && memcmp(a6 + 12, &d4->sin_addr, 4) == 0)
			return -1;
	} else if (c->dest.sa.sa_family == AF_INET && local.ss_family == AF_INET) {
		const struct sockaddr_in *l4 = (struct sockaddr_in *)&local;
		if (d4->sin_port == l4->sin_port && d4->sin_addr.s_addr == l4->sin_addr.s_addr)
			return -1;
	} else if (c->dest.sa.sa_family == AF_INET6 && local.ss_family == AF_INET6) {
		const struct sockaddr_in6 *l6 = (struct sockaddr_in6 *)&local;
		if (d6->sin6_port == l6->sin6_port && memcmp(&d6->sin6_addr, &l6->sin6_addr, 16) == 0)
			return -1;
	}
	c->port = ntohs(c->dest.sa.sa_family == AF_INET ? d4->sin_port : d6->sin6_port);
	return 0;
}

static void
linger_done(void *arg)
{
	struct worker *w = arg;

	w->nlinger--;
	worker_drain_check(w);
}

void
conn_linger_fd(struct worker *w, int fd)
{
	w->nlinger++;
	net_linger(w->base, fd, PROXY_LINGER_MS, linger_done, w);
}

void
conn_accept(struct worker *w, enum conn_mode mode, evutil_socket_t fd, const struct sockaddr *sa, socklen_t salen)
{
	struct gateway *gw = w->gw;
	struct conn *c;

	if (w->draining) {
		close(fd);
		return;
	}
	c = xcalloc(1, sizeof(*c));
	c->id = atomic_fetch_add(&gw->next_conn_id, 1) + 1;
	c->w = w;
	c->mode = mode;
	c->fd = fd;
	c->state = CONN_S_PEEK;
	clock_mono(&c->t0);
	memcpy(&c->peer, sa, salen < sizeof(c->peer) ? salen : sizeof(c->peer));
	c->host = host_none;
	c->ops = &conn_ops_h1;
	c->pol = policy_ref(w->pol);
	c->pol_gen = w->pol_gen;
	c->revoke_gen = w->revoke_gen;
	/* one registration for the connection's life: edge-triggered, both directions (cio.c) */
	c->ev = event_new(w->base, fd, EV_READ | EV_WRITE | EV_PERSIST | EV_ET, io_cb, c);
	LIST_INSERT_HEAD(&w->conns, c, link);
	w->nconns++;
	atomic_fetch_add(&gw->nconns, 1);
	evutil_make_socket_nonblocking(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
	if (c->ev == NULL || event_add(c->ev, NULL) == -1) {
		conn_close(c);
		return;
	}
	if (mode == CONN_MODE_EXPLICIT &&
	    !netaddr_cidr_match(gw->cfg->proxy_clients, gw->cfg->nproxy_clients, sa)) {
		conn_refuse(c, 0, NULL, "listen.proxy_clients", "client address not in listen.proxy_clients");
		return;
	}
	if (gateway_client_take(gw, sa) == -1) {
		conn_refuse(c, mode == CONN_MODE_EXPLICIT ? 429 : 0, "too many connections", "limits.conns_per_client",
		            "too many connections from this client (limits.conns_per_client)");
		return;
	}
	c->counted = 1;
	{
		const struct policy_sandbox *sb = policy_sandbox_by_addr(c->pol, sa);

		/* the policy's own sandboxes first; then those `sluice run` registered */
		if (sb == NULL && (c->sbx = sbxreg_by_addr(gw->sbx, sa)) != NULL) {
			c->sandbox = c->sbx->name;
			c->sbx_id = c->sbx->id;  /* the registration, not the address: one registered again is not this one */
		} else
			c->sandbox = sb != NULL ? sb->name : NULL;
	}
	if (mode == CONN_MODE_TRANSPARENT && original_dest(c) == -1) {
		conn_refuse(c, 0, NULL, "listen.transparent",
		            "connection was not redirected to the transparent listener");
		return;
	}
	conn_arm_timer(c, gw->cfg->limits.request_head_ms);
}
