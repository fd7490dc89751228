/*
 * proxy/h2/h2up.c - HTTP/2 toward upstreams: one TLS connection per session,
 * shared by the concurrent requests of one tenant (conn_tenant: a sandbox)
 * of a worker to the same host:port (one upstream handshake, many streams);
 * two sandboxes never share a session.
 *
 * The relay speaks HTTP/1.1 to every upstream.  A stream's struct upstream
 * has as its <bev> one end of a libevent bufferevent pair; the other end
 * (<pb>) is ours: the request head written there is parsed (h1_parse_request)
 * and submitted as HEADERS (h2conv_request_to_nv, never-indexed when the
 * request carries an injected secret), its body (Content-Length or chunked)
 * becomes DATA and its chunked trailers a trailing HEADERS.  The response
 * HEADERS become an HTTP/1.1 head (h2conv_response_to_h1, which refuses
 * every downgrade-smuggling form a hostile upstream could try), its DATA the
 * body (chunk-framed unless the upstream gave a content-length), its
 * trailers the chunked trailer section.  A stream that ends in error shows
 * the relay an EOF, so the relay answers 502 (or truncates) as for a socket.
 *
 * Reentrancy: nghttp2's callbacks only write into pair buffers and raise
 * flags; pair callbacks are deferred by libevent, so the relay never runs
 * inside nghttp2.  Every nghttp2 call other than a callback's own work is
 * made by sess_pump, from the session's events.
 *
 * Bounds: each stream's receive window (H2UP_STREAM_WINDOW) reopens only as
 * the relay takes the response from the pair, and the session's
 * (H2UP_CONN_WINDOW) likewise, so a slow client stalls its stream, not the
 * connection, and memory per session is bounded by the windows plus the
 * pair watermarks; header lists are bounded by limits.header_bytes and
 * H1_MAX_HEADERS; nghttp2's CONTINUATION, SETTINGS and outbound-ACK limits
 * are set.
 */
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/log.h"
#include "common/sluice.h"
#include "h2up_int.h"
#include "proxy/core/context.h"

static void sess_pump(struct h2up_sess *s);
static void sess_destroy(struct h2up_sess *s, const char *why);

void
h2up_stream_mark(struct h2up_stream *st)
{
	if (st->s == NULL || st->marked)
		return;
	st->marked = 1;
	TAILQ_INSERT_TAIL(&st->s->dirty, st, dirty_link);
	h2up_sess_kick(st->s);
}

void
h2up_sess_kick(struct h2up_sess *s)
{
	if (s == NULL || s->kicked || s->dead)
		return;
	s->kicked = 1;
	event_active(s->kick, EV_TIMEOUT, 1);
}

static void
kick_cb(evutil_socket_t fd, short what, void *arg)
{
	struct h2up_sess *s = arg;

	(void)fd;
	(void)what;
	s->kicked = 0;
	sess_pump(s);
}

static void
idle_check(struct h2up_sess *s)
{
	struct timeval tv = {PROXY_POOL_IDLE_MS / 1000, (PROXY_POOL_IDLE_MS % 1000) * 1000};

	if (s != NULL && s->state == SESS_READY && s->nstreams == 0 && s->nwait == 0)
		evtimer_add(s->idle, &tv);
}

/* ---- streams ---- */

/* The relay sees the upstream end: what was written reaches it first, then EOF. */
void
h2up_stream_eof(struct h2up_stream *st)
{
	if (st->pb != NULL && st->up != NULL)
		bufferevent_flush(st->pb, EV_WRITE, BEV_FINISHED);
}

static void
stream_destroy(struct h2up_stream *st)
{
	struct h2up_sess *s = st->s;

	if (s != NULL) {
		if (st->marked)
			TAILQ_REMOVE(&s->dirty, st, dirty_link);
		if (st->id > 0 && !st->closed)
			nghttp2_session_set_stream_user_data(s->ng, st->id, NULL);
		s->consume_conn += st->unacked + st->consume;
		LIST_REMOVE(st, link);
		s->nstreams--;
		idle_check(s);
	}
	if (st->pb != NULL)
		bufferevent_free(st->pb);
	evbuffer_free(st->data);
	evbuffer_free(st->hdr);
	if (st->trailers != NULL)
		evbuffer_free(st->trailers);
	free(st);
}

/* The relay took response bytes from the pair: reopen the window for as much DATA. */
static void
pb_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct h2up_stream *st = arg;
	size_t n;

	(void)buf;
	if (info->n_deleted == 0 || st->unacked == 0)
		return;
	n = info->n_deleted < st->unacked ? info->n_deleted : st->unacked;
	st->unacked -= n;
	st->consume += n;
	h2up_stream_mark(st);
}

static void
pb_readcb(struct bufferevent *bev, void *arg)
{
	struct h2up_stream *st = arg;

	(void)bev;
	st->feed = 1;
	h2up_stream_mark(st);
}

static void
pb_eventcb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	(void)arg;  /* the relay's end closes only by being freed (h2up_detach) */
}

/* A new stream for <up> on READY session <s>: <up> becomes READY with the pair end as its bev. */
static void
stream_attach(struct h2up_sess *s, struct upstream *up)
{
	struct h2up_stream *st = xcalloc(1, sizeof(*st));
	struct bufferevent *pair[2];

	if (bufferevent_pair_new(s->w->base, 0, pair) != 0)
		fatalx("out of memory");
	st->s = s;
	st->up = up;
	st->pb = pair[1];
	st->data = evbuffer_new();
	st->hdr = evbuffer_new();
	if (st->data == NULL || st->hdr == NULL)
		fatalx("out of memory");
	bufferevent_setcb(st->pb, pb_readcb, NULL, pb_eventcb, st);
	bufferevent_setwatermark(st->pb, EV_READ, 0, PROXY_HIGH_WATER);
	bufferevent_enable(st->pb, EV_READ | EV_WRITE);
	evbuffer_add_cb(bufferevent_get_output(st->pb), pb_out_cb, st);
	up->bev = pair[0];
	up->h2s = st;
	up->state = UP_S_READY;
	LIST_INSERT_HEAD(&s->streams, st, link);
	s->nstreams++;
	evtimer_del(s->idle);
}

static int
on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2up_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	struct h2up_sess *s = arg;

	if (st == NULL)
		return 0;
	nghttp2_session_set_stream_user_data(ng, id, NULL);
	st->closed = 1;
	s->consume_conn += st->unacked + st->consume;
	st->unacked = st->consume = 0;
	if (st->up == NULL) {
		stream_destroy(st);
		return 0;
	}
	if (!st->complete) {
		if (code != NGHTTP2_REFUSED_STREAM)
			st->up->reused = 0;  /* the upstream may have acted on it: never sent again */
		log_info("h2 upstream %s: stream %d closed before its response ended (%s)", s->host, (int)id,
		         nghttp2_http2_strerror(code));
		h2up_stream_eof(st);
	}
	return 0;
}

/* ---- the session ---- */

static void
phys_readcb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	sess_pump(arg);
}

static void
phys_eventcb(struct bufferevent *bev, short what, void *arg)
{
	struct h2up_sess *s = arg;

	(void)bev;
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
		sess_destroy(s, "the upstream connection ended");
}

static void
idle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct h2up_sess *s = arg;

	(void)fd;
	(void)what;
	if (s->nstreams == 0 && s->nwait == 0)
		sess_destroy(s, NULL);
}

static int
sess_start(struct h2up_sess *s)
{
	const struct policy_limits *lim = &s->w->gw->cfg->limits;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	nghttp2_settings_entry set[] = {
		{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2UP_STREAM_WINDOW},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, lim->header_bytes},
	};
	int r;

	if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
		fatalx("out of memory");
	h2up_callbacks(cb);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_continuations(opt, H2UP_MAX_CONTINUATIONS);
	nghttp2_option_set_max_settings(opt, 32);
	nghttp2_option_set_max_outbound_ack(opt, 1000);
	nghttp2_option_set_peer_max_concurrent_streams(opt, H2UP_MAX_STREAMS);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	r = nghttp2_session_client_new2(&s->ng, cb, s, opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	if (r != 0)
		return -1;
	nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, set, sizeof(set) / sizeof(set[0]));
	nghttp2_session_set_local_window_size(s->ng, NGHTTP2_FLAG_NONE, 0, H2UP_CONN_WINDOW);
	bufferevent_setcb(s->phys->bev, phys_readcb, phys_readcb, phys_eventcb, s);
	bufferevent_setwatermark(s->phys->bev, EV_WRITE, PROXY_HIGH_WATER / 2, 0);
	bufferevent_enable(s->phys->bev, EV_READ | EV_WRITE);
	s->state = SESS_READY;
	return 0;
}

/* Tells a waiter how its dial ended: it owns the result from here. */
static void
waiter_report(struct upstream *up, const char *err, int status)
{
	if (err != NULL) {
		snprintf(up->errbuf, sizeof(up->errbuf), "%s", err);
		up->state = UP_S_FAILED;
	}
	if (up->cb != NULL)
		up->cb(up, err != NULL ? up->errbuf : NULL, status, up->cb_arg);
}

static struct upstream *
waiter_pop(struct h2up_sess *s)
{
	struct upstream *up = LIST_FIRST(&s->waiters);

	if (up != NULL) {
		LIST_REMOVE(up, wait_link);
		up->h2wait = NULL;
		s->nwait--;
	}
	return up;
}

/* The session's connection is up (or not): its waiters become streams, or HTTP/1.1 dials, or failures. */
static void
phys_done(struct upstream *phys, const char *err, int status, void *arg)
{
	struct h2up_sess *s = arg;
	struct upstream *up;
	const unsigned char *alpn = NULL;
	unsigned alen = 0;

	if (err != NULL) {
		s->dead = 1;  /* a request answered meanwhile finds no place here */
		while ((up = waiter_pop(s)) != NULL) {
			up->refused = phys->refused;
			waiter_report(up, err, status);
		}
		sess_destroy(s, NULL);
		return;
	}
	SSL_get0_alpn_selected(phys->ssl, &alpn, &alen);
	if (alen == 2 && memcmp(alpn, "h2", 2) == 0 && sess_start(s) == 0) {
		upstream_alpn_remember(s->w, s->host, s->port, UPSTREAM_ALPN_H2);
		while ((up = waiter_pop(s)) != NULL) {
			stream_attach(s, up);
			waiter_report(up, NULL, 0);
		}
		idle_check(s);
		sess_pump(s);
		return;
	}
	/* HTTP/1.1: the first waiter takes the connection, the others dial their own */
	s->dead = 1;
	upstream_alpn_remember(s->w, s->host, s->port, UPSTREAM_ALPN_H1);
	if ((up = waiter_pop(s)) != NULL) {
		upstream_adopt(up, phys);
		waiter_report(up, NULL, 0);
	}
	while ((up = waiter_pop(s)) != NULL)
		upstream_redial(up, UPSTREAM_ALPN_H1);
	sess_destroy(s, NULL);
}

static void
sess_destroy(struct h2up_sess *s, const char *why)
{
	struct h2up_stream *st;
	struct upstream *up;

	if (why != NULL)
		log_info("h2 upstream %s:%u: %s", s->host, s->port, why);
	s->dead = 1;
	while ((up = waiter_pop(s)) != NULL)
		waiter_report(up, why != NULL ? why : "the upstream session ended", 502);
	while ((st = LIST_FIRST(&s->streams)) != NULL) {
		LIST_REMOVE(st, link);
		s->nstreams--;
		if (st->marked)
			TAILQ_REMOVE(&s->dirty, st, dirty_link);
		st->marked = 0;
		st->s = NULL;
		if (st->up == NULL) {
			stream_destroy(st);
			continue;
		}
		if (!st->complete)
			h2up_stream_eof(st);
	}
	LIST_REMOVE(s, link);
	s->w->nh2up--;
	if (s->ng != NULL)
		nghttp2_session_del(s->ng);
	upstream_free(s->phys);
	event_free(s->kick);
	event_free(s->idle);
	evbuffer_free(s->sendbuf);
	free(s);
}

#define H2UP_PUMP_ROUNDS 4

static void
sess_pump(struct h2up_sess *s)
{
	struct evbuffer *in, *out;
	struct h2up_stream *st;
	const uint8_t *data;
	ssize_t r;
	size_t n;
	int round, more = 1;

	if (s->state != SESS_READY || s->dead)
		return;
	in = bufferevent_get_input(s->phys->bev);
	out = bufferevent_get_output(s->phys->bev);
	if ((n = evbuffer_get_length(in)) > 0) {
		r = nghttp2_session_mem_recv(s->ng, evbuffer_pullup(in, -1), n);
		if (r < 0) {
			log_info("h2 upstream %s: session error: %s", s->host, nghttp2_strerror((int)r));
			nghttp2_session_terminate_session(s->ng, NGHTTP2_PROTOCOL_ERROR);
			evbuffer_drain(in, n);
		} else {
			evbuffer_drain(in, (size_t)r);
		}
	}
	for (round = 0; more && round < H2UP_PUMP_ROUNDS; round++) {
		while ((st = TAILQ_FIRST(&s->dirty)) != NULL) {
			TAILQ_REMOVE(&s->dirty, st, dirty_link);
			st->marked = 0;
			if (st->closed)
				continue;
			if (st->want_reset) {
				st->want_reset = 0;
				st->closed = 1;  /* on_stream_close destroys it (the relay let go) */
				nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
				continue;
			}
			if (st->consume > 0) {
				nghttp2_session_consume(s->ng, st->id, st->consume);
				st->consume = 0;
			}
			if (st->feed && st->up != NULL && h2up_stream_feed(st) != 0) {
				if (st->id > 0)
					nghttp2_submit_rst_stream(s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_CANCEL);
				else
					st->closed = 1;
				h2up_stream_eof(st);
			}
		}
		if (s->consume_conn > 0) {
			nghttp2_session_consume_connection(s->ng, s->consume_conn);
			s->consume_conn = 0;
		}
		/* gathered first: each addition to a TLS bufferevent's output may be its own record and write(2) */
		while (evbuffer_get_length(out) + evbuffer_get_length(s->sendbuf) < PROXY_HIGH_WATER &&
		       (r = nghttp2_session_mem_send(s->ng, &data)) > 0)
			evbuffer_add(s->sendbuf, data, (size_t)r);
		if (evbuffer_get_length(s->sendbuf) > 0)
			evbuffer_add_buffer(out, s->sendbuf);
		more = !TAILQ_EMPTY(&s->dirty);  /* the data sources asked for more of their bodies */
	}
	if (more)
		h2up_sess_kick(s);
	if (!nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng) && evbuffer_get_length(out) == 0)
		sess_destroy(s, "the upstream session ended (GOAWAY)");
}

/* ---- the relay's side ---- */

struct upstream *
h2up_attach(struct worker *w, const char *tenant, const char *host, unsigned port, int allow_private, int ws,
            upstream_cb cb, void *arg)
{
	struct h2up_sess *s;
	struct upstream *up;
	uint32_t max;

	LIST_FOREACH(s, &w->h2up, link) {
		/* one tenant's session: no stream of another sandbox, no HPACK table shared with one either */
		if (s->dead || s->goaway || s->port != port || s->allow_private != allow_private ||
		    strcmp(s->host, host) != 0 || strcmp(s->tenant, tenant) != 0)
			continue;
		if (ws && (s->state != SESS_READY ||
		           nghttp2_session_get_remote_settings(s->ng, NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL) != 1))
			continue;
		if (s->state == SESS_CONNECTING) {
			if (s->nwait >= H2UP_MAX_STREAMS)
				continue;
			up = upstream_new(w, tenant, host, port, 1, allow_private, UPSTREAM_ALPN_H2, cb, arg);
			up->state = UP_S_CONNECTING;
			up->h2wait = s;
			LIST_INSERT_HEAD(&s->waiters, up, wait_link);
			s->nwait++;
			return up;
		}
		max = nghttp2_session_get_remote_settings(s->ng, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
		if (s->nstreams >= (max < H2UP_MAX_STREAMS ? max : H2UP_MAX_STREAMS))
			continue;
		up = upstream_new(w, tenant, host, port, 1, allow_private, UPSTREAM_ALPN_H2, cb, arg);
		up->reused = 1;  /* a stream the upstream refuses (GOAWAY) is retried once on another */
		stream_attach(s, up);
		return up;
	}
	return NULL;
}

struct upstream *
h2up_session_new(struct worker *w, struct upstream *phys, upstream_cb cb, void *arg)
{
	struct upstream *up =
		upstream_new(w, phys->tenant, phys->host, phys->port, 1, phys->allow_private, phys->alpn, cb, arg);
	struct h2up_sess *s;

	if (phys->state == UP_S_FAILED) {  /* failed at once: the caller learns it from the state */
		memcpy(up->errbuf, phys->errbuf, sizeof(up->errbuf));
		up->refused = phys->refused;
		up->state = UP_S_FAILED;
		upstream_free(phys);
		return up;
	}
	s = xcalloc(1, sizeof(*s));
	s->w = w;
	s->phys = phys;
	s->state = SESS_CONNECTING;
	snprintf(s->host, sizeof(s->host), "%s", phys->host);
	memcpy(s->tenant, phys->tenant, sizeof(s->tenant));
	s->port = phys->port;
	s->allow_private = phys->allow_private;
	LIST_INIT(&s->streams);
	TAILQ_INIT(&s->dirty);
	LIST_INIT(&s->waiters);
	s->kick = event_new(w->base, -1, 0, kick_cb, s);
	s->idle = evtimer_new(w->base, idle_cb, s);
	s->sendbuf = evbuffer_new();
	if (s->kick == NULL || s->idle == NULL || s->sendbuf == NULL)
		fatalx("out of memory");
	LIST_INSERT_HEAD(&w->h2up, s, link);
	w->nh2up++;
	phys->cb = phys_done;
	phys->cb_arg = s;
	up->state = UP_S_CONNECTING;
	up->h2wait = s;
	LIST_INSERT_HEAD(&s->waiters, up, wait_link);
	s->nwait++;
	return up;
}

void
h2up_detach(struct upstream *up)
{
	struct h2up_stream *st = up->h2s;
	struct h2up_sess *s;

	if (up->h2wait != NULL) {
		s = up->h2wait;
		LIST_REMOVE(up, wait_link);
		s->nwait--;
		up->h2wait = NULL;
		return;
	}
	up->h2s = NULL;
	st->up = NULL;
	s = st->s;
	/* its pair end (up->bev) is freed by upstream_free; nothing more reaches the relay */
	if (s == NULL || st->closed || st->id <= 0) {  /* nothing open upstream */
		stream_destroy(st);
		return;
	}
	st->want_reset = !st->complete || !st->body_done;
	if (!st->want_reset)
		return;  /* ended in order: on_stream_close destroys it */
	h2up_stream_mark(st);
}

void
h2up_clear(struct worker *w)
{
	struct h2up_sess *s;

	while ((s = LIST_FIRST(&w->h2up)) != NULL)
		sess_destroy(s, NULL);
}

const struct upstream_mux h2up_mux = {
	.attach = h2up_attach,
	.session_new = h2up_session_new,
	.detach = h2up_detach,
	.clear = h2up_clear,
};
