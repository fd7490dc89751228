/*
 * proxy/conn.c - a client connection from accept to close: the proxy head
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
#include <event2/bufferevent_ssl.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/proxy_int.h"

/* from linux/netfilter_ipv4.h and ip6_tables.h, which clash with netinet/in.h */
#ifndef SO_ORIGINAL_DST
#define SO_ORIGINAL_DST 80
#endif
#ifndef IP6T_SO_ORIGINAL_DST
#define IP6T_SO_ORIGINAL_DST 80
#endif

static const char *state_names[] = {
	"?", "peek", "tls-accept", "request-head", "dial", "relay", "tunnel", "closing", "dead",
};

int64_t
proxy_ms_since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

#define B(s) (1u << (s))
/*
 * Which states each state may move to.  Peers trigger transitions but never
 * choose them, so an illegal one is a gateway bug: it is logged and the
 * connection is closed (fail closed), never asserted (a remote crash).
 */
static const unsigned legal_next[] = {
	[CONN_S_PEEK] = B(CONN_S_TLS_ACCEPT) | B(CONN_S_REQ_HEAD) | B(CONN_S_DIAL) | B(CONN_S_CLOSING),
	[CONN_S_TLS_ACCEPT] = B(CONN_S_REQ_HEAD) | B(CONN_S_CLOSING),
	[CONN_S_REQ_HEAD] = B(CONN_S_REQ_HEAD) | B(CONN_S_DIAL) | B(CONN_S_RELAY) | B(CONN_S_CLOSING),
	[CONN_S_DIAL] = B(CONN_S_RELAY) | B(CONN_S_TUNNEL) | B(CONN_S_REQ_HEAD) | B(CONN_S_CLOSING),
	[CONN_S_RELAY] = B(CONN_S_REQ_HEAD) | B(CONN_S_DIAL) | B(CONN_S_TUNNEL) | B(CONN_S_CLOSING),
	[CONN_S_TUNNEL] = B(CONN_S_CLOSING),
	[CONN_S_CLOSING] = 0,
	[CONN_S_DEAD] = 0,
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

void
conn_arm_timer(struct conn *c, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(c->timer, &tv);
}

static void
reap_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	if (c->timer != NULL)
		event_free(c->timer);
	if (c->peek_ev != NULL)
		event_free(c->peek_ev);
	free(c->sni);
	free(c);
}

void
conn_close(struct conn *c)
{
	struct worker *w = c->w;

	if (c->state == CONN_S_DEAD)
		return;
	conn_set_state(c, CONN_S_DEAD);
	http_req_reset(c);
	if (c->up != NULL) {
		upstream_free(c->up);  /* mid-request: not reusable */
		c->up = NULL;
	}
	if (c->peek_ev != NULL)
		event_del(c->peek_ev);
	evtimer_del(c->timer);
	if (c->bev != NULL) {
		bufferevent_free(c->bev);  /* closes fd, frees the SSL */
		c->bev = NULL;
	} else if (c->fd != -1) {
		close(c->fd);
	}
	c->fd = -1;
	if (c->counted)
		gateway_client_put(w->gw, (struct sockaddr *)&c->peer);
	LIST_REMOVE(c, link);
	w->nconns--;
	atomic_fetch_sub(&w->gw->nconns, 1);
	policy_unref(c->pol);
	c->pol = NULL;
	event_base_once(w->base, -1, EV_TIMEOUT, reap_cb, c, &(struct timeval){0, 0});
}

void
audit_conn(struct conn *c, const char *verdict, const char *rule, const char *reason, int status)
{
	struct audit_rec r = {
		.type = "connection",
		.sandbox = c->peer_str,
		.client = c->peer_str,
		.dest = c->has_dest ? c->dest_str : NULL,
		.sni = c->sni,
		.host = c->host[0] ? c->host : NULL,
		.verdict = verdict,
		.rule = rule,
		.reason = reason,
		.status = status,
		.bytes_up = -1,
		.bytes_down = -1,
		.duration_ms = proxy_ms_since(&c->t0),
		.upstream_tls = -1,
		.conn_id = c->id,
	};

	audit_write(c->w->gw->audit, &r);
}

static void
client_eventcb(struct bufferevent *bev, short what, void *arg);
static void
client_readcb(struct bufferevent *bev, void *arg);
static void
client_writecb(struct bufferevent *bev, void *arg);

/* The client's read bound: a whole request head must fit, or a large one would stall instead of failing. */
static size_t
read_high(const struct conn *c)
{
	size_t head = (size_t)c->w->gw->cfg->limits.header_bytes + 1;

	return head > PROXY_HIGH_WATER ? head : PROXY_HIGH_WATER;
}

/* Ends the peek phase: the socket's bytes now belong to a bufferevent or an upstream relay. */
static void
peek_stop(struct conn *c)
{
	/* deferred free: this may run inside peek_cb, so only delete now */
	if (c->peek_ev != NULL)
		event_del(c->peek_ev);
}

/* Wraps the raw socket in a plain bufferevent (explicit or port-80 HTTP, or to answer a refusal). */
static int
plain_bev(struct conn *c)
{
	peek_stop(c);
	c->bev = bufferevent_socket_new(c->w->base, c->fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL)
		return -1;
	bufferevent_setcb(c->bev, client_readcb, client_writecb, client_eventcb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, read_high(c));
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	return 0;
}

void
conn_refuse(struct conn *c, int status, const char *error, const char *rule, const char *reason)
{
	char esc[200];

	log_info("c%llu: %s refused: %s (%s)", (unsigned long long)c->id, c->peer_str, reason,
	         log_escape(esc, sizeof(esc), c->host, strlen(c->host)));
	audit_conn(c, "deny", rule, reason, status > 0 ? status : -1);
	atomic_fetch_add(&c->w->gw->ndenied, 1);
	if (status <= 0 || (c->bev == NULL && plain_bev(c) == -1)) {
		conn_close(c);
		return;
	}
	respond_json(bufferevent_get_output(c->bev), status, error, c->host, rule, reason, 1);
	conn_set_state(c, CONN_S_CLOSING);
	bufferevent_disable(c->bev, EV_READ);
	conn_arm_timer(c, 5000);
}

static void
client_readcb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_pump(arg);
}

static void
client_writecb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_pump(arg);
}

static void
client_eventcb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	unsigned long e;
	char ebuf[120];

	(void)bev;
	if (c->state == CONN_S_TLS_ACCEPT) {
		if (what & BEV_EVENT_CONNECTED) {
			conn_start_requests(c);
			return;
		}
		e = bufferevent_get_openssl_error(c->bev);
		if (e != 0)
			ERR_error_string_n(e, ebuf, sizeof(ebuf));
		else
			snprintf(ebuf, sizeof(ebuf), "client closed during the handshake");
		log_info("c%llu: TLS handshake with %s failed: %s", (unsigned long long)c->id, c->peer_str, ebuf);
		audit_conn(c, "deny", "tls", "client TLS handshake failed (does the sandbox trust the Sluice CA?)", -1);
		conn_close(c);
		return;
	}
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
		c->client_eof = 1;
		conn_pump(c);
	}
}

void
conn_pump(struct conn *c)
{
	switch (c->state) {
	case CONN_S_REQ_HEAD:
	case CONN_S_DIAL:
	case CONN_S_RELAY:
		http_pump(c);
		return;
	case CONN_S_TUNNEL:
		tunnel_pump(c);
		return;
	case CONN_S_CLOSING:
		if (c->bev == NULL || c->client_eof) {
			conn_close(c);
			return;
		}
		if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
			return;
		/*
		 * Lingering close: the client may still be sending bytes we will not
		 * read (a request body, the rest of a refused head).  Closing now would
		 * answer them with a RST that can destroy our answer in flight, so end
		 * our side (the FIN also ends close-delimited bodies), discard what
		 * arrives, and close on the client's EOF or when the timer ends.
		 */
		if (!c->shut_wr) {
			c->shut_wr = 1;
			shutdown(bufferevent_getfd(c->bev), SHUT_WR);
			conn_arm_timer(c, PROXY_LINGER_MS);
			bufferevent_enable(c->bev, EV_READ);
		}
		evbuffer_drain(bufferevent_get_input(c->bev), evbuffer_get_length(bufferevent_get_input(c->bev)));
		return;
	default:
		return;
	}
}

static void
timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;

	(void)fd;
	(void)what;
	switch (c->state) {
	case CONN_S_PEEK:
		if (c->mode == CONN_MODE_EXPLICIT && c->head_started) {
			conn_refuse(c, 408, "request timeout", "limits.request_head",
			            "request head not received in time (limits.request_head)");
			return;
		}
		audit_conn(c, "deny", "limits.request_head",
		           c->mode == CONN_MODE_EXPLICIT ? "timed out waiting for the proxy request (limits.request_head)"
		                                         : "timed out waiting for the ClientHello (limits.request_head)",
		           -1);
		conn_close(c);
		return;
	case CONN_S_TLS_ACCEPT:
		audit_conn(c, "deny", "limits.tls_handshake", "TLS handshake timed out (limits.tls_handshake)", -1);
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

	peek_stop(c);
	leaf = ca_leaf_get(gw->ca, c->host, &err);
	if (leaf == NULL) {
		conn_refuse(c, 0, NULL, "tls", err != NULL ? err : "cannot mint a certificate for this name");
		return;
	}
	c->ssl = SSL_new(c->w->srv_ctx);
	if (c->ssl == NULL || SSL_use_certificate(c->ssl, leaf) != 1 ||
	    SSL_use_PrivateKey(c->ssl, ca_leaf_key(gw->ca)) != 1) {
		X509_free(leaf);
		if (c->ssl != NULL)
			SSL_free(c->ssl);
		c->ssl = NULL;
		conn_refuse(c, 0, NULL, "tls", "cannot set up the client TLS session");
		return;
	}
	X509_free(leaf);
	c->bev = bufferevent_openssl_socket_new(c->w->base, c->fd, c->ssl, BUFFEREVENT_SSL_ACCEPTING,
	                                        BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		SSL_free(c->ssl);
		c->ssl = NULL;
		conn_refuse(c, 0, NULL, "tls", "cannot set up the client TLS session");
		return;
	}
	c->tls = 1;
	bufferevent_setcb(c->bev, client_readcb, client_writecb, client_eventcb, c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, read_high(c));
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	conn_set_state(c, CONN_S_TLS_ACCEPT);
	conn_arm_timer(c, gw->cfg->limits.tls_handshake_ms);
}

void
conn_start_requests(struct conn *c)
{
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
	if (plain_bev(c) == -1) {
		conn_close(c);
		return;
	}
	if (c->mode == CONN_MODE_EXPLICIT)
		evbuffer_add(bufferevent_get_output(c->bev), established, sizeof(established) - 1);
	audit_conn(c, "allow", c->entry ? policy_host_key(c->entry) : "default", "passthrough", -1);
	conn_set_state(c, CONN_S_TUNNEL);
	upstream_set_owner(c->up, client_readcb, client_writecb, client_eventcb, c);
	conn_arm_timer(c, c->w->gw->cfg->limits.idle_ms);
	conn_pump(c);
}

/* Applies the connection verdict for c->host:c->port. */
static void
judge(struct conn *c)
{
	struct policy_conn_decision d;
	static const char established[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	ssize_t n;

	policy_decide_conn(c->pol, c->host, c->port, &d);
	c->entry = d.host;
	c->judged = 1;
	switch (d.verdict) {
	case POLICY_DENY:
		conn_refuse(c, c->mode == CONN_MODE_EXPLICIT ? 403 : 0, "denied by policy", d.rule, d.reason);
		return;
	case POLICY_PASSTHROUGH:
		peek_stop(c);
		conn_set_state(c, CONN_S_DIAL);
		conn_arm_timer(c, c->w->gw->cfg->limits.upstream_connect_ms + 1000);
		c->up = upstream_dial(c->w, c->host, c->port, 0, policy_host_allow_private(d.host), passthrough_ready, c);
		if (c->up->state == UP_S_FAILED)
			passthrough_ready(c->up, c->up->errbuf, 502, c);
		return;
	case POLICY_INTERCEPT:
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
		if (plain_bev(c) == -1) {
			conn_close(c);
			return;
		}
		conn_start_requests(c);
		return;
	}
	/* consume exactly the CONNECT head; what follows is the tunnel */
	if (recv(c->fd, c->w->scratch, (size_t)r, 0) != r) {
		conn_close(c);
		return;
	}
	kind = host_split_authority(m->target, m->target_len, 0, c->host, &c->port, &err);
	if (kind < 0) {
		c->host[0] = '\0';
		conn_refuse(c, 400, "bad request", "http", err);
		return;
	}
	judge(c);
}

static void
peek_transparent(struct conn *c, const uint8_t *buf, size_t n)
{
	struct tls_hello hello;
	const char *err = NULL;
	int r;

	if (!tls_hello_looks_tls(buf, n)) {
		if (buf[0] >= 'A' && buf[0] <= 'Z') {  /* a request line: plain HTTP */
			if (plain_bev(c) == -1) {
				conn_close(c);
				return;
			}
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
		if (host_canon(hello.sni, hello.sni_len, c->host, &err) < 0) {
			conn_refuse(c, 0, NULL, "tls", "SNI is not a valid host name");
			return;
		}
	} else {
		netaddr_format((struct sockaddr *)&c->dest, 0, c->host, sizeof(c->host));
	}
	judge(c);
}

static void
peek_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn *c = arg;
	ssize_t n;

	(void)what;
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
	int r;

	r = getsockopt(c->fd, SOL_IP, SO_ORIGINAL_DST, &c->dest, &len);
	if (r == -1) {
		len = sizeof(c->dest);
		r = getsockopt(c->fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &c->dest, &len);
	}
	if (r == -1 || getsockname(c->fd, (struct sockaddr *)&local, &llen) == -1)
		return -1;
	c->has_dest = 1;
	netaddr_format((struct sockaddr *)&c->dest, 1, c->dest_str, sizeof(c->dest_str));
	/* not redirected: its original destination is the listener itself */
	if (c->dest.ss_family == AF_INET && local.ss_family == AF_INET6) {
		const uint8_t *a6 = ((struct sockaddr_in6 *)&local)->sin6_addr.s6_addr;
		const struct sockaddr_in *d4 = (struct sockaddr_in *)&c->dest;
		if (((struct sockaddr_in6 *)&local)->sin6_port == d4->sin_port && memcmp(a6 + 12, &d4->sin_addr, 4) == 0)
			return -1;
	} else if (c->dest.ss_family == AF_INET && local.ss_family == AF_INET) {
		if (memcmp(&c->dest, &local, sizeof(struct sockaddr_in)) == 0)
			return -1;
	} else if (c->dest.ss_family == AF_INET6 && local.ss_family == AF_INET6) {
		const struct sockaddr_in6 *d6 = (struct sockaddr_in6 *)&c->dest, *l6 = (struct sockaddr_in6 *)&local;
		if (d6->sin6_port == l6->sin6_port && memcmp(&d6->sin6_addr, &l6->sin6_addr, 16) == 0)
			return -1;
	}
	c->port = ntohs(c->dest.ss_family == AF_INET ? ((struct sockaddr_in *)&c->dest)->sin_port
	                                             : ((struct sockaddr_in6 *)&c->dest)->sin6_port);
	return 0;
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
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
	memcpy(&c->peer, sa, salen < sizeof(c->peer) ? salen : sizeof(c->peer));
	netaddr_format(sa, 0, c->peer_str, sizeof(c->peer_str));
	c->pol = policy_ref(w->pol);
	c->timer = evtimer_new(w->base, timer_cb, c);
	LIST_INSERT_HEAD(&w->conns, c, link);
	w->nconns++;
	atomic_fetch_add(&gw->nconns, 1);
	evutil_make_socket_nonblocking(fd);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
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
	if (mode == CONN_MODE_TRANSPARENT && original_dest(c) == -1) {
		conn_refuse(c, 0, NULL, "listen.transparent",
		            "connection was not redirected to the transparent listener");
		return;
	}
	c->peek_ev = event_new(w->base, fd, EV_READ | EV_PERSIST | EV_ET, peek_cb, c);
	event_add(c->peek_ev, NULL);
	conn_arm_timer(c, gw->cfg->limits.request_head_ms);
}
