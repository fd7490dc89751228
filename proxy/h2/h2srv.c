/*
 * proxy/h2/h2srv.c - HTTP/2 toward the client (ALPN "h2"): an nghttp2 server
 * session on the client connection, and one virtual connection per stream
 * that runs the ordinary pipeline (policy, secrets, held bodies, relay,
 * scrubbing, audit) on an HTTP/1.1 rendering of the stream.  This file has
 * the session, the client's frames, stream lifetime and the pump;
 * h2srv_resp.c turns what a virtual connection answers into frames (the
 * response head, DATA, trailers, refusals, the WebSocket accept check).
 *
 * A stream's HEADERS become an HTTP/1.1 request head (h2conv_request_to_h1,
 * which refuses every downgrade-smuggling form) written into the virtual
 * connection's input, followed by its DATA (chunk-framed when the client gave
 * no content-length).  The virtual connection answers with HTTP/1.0
 * semantics (no chunking, the body ends when the request does), which is
 * read back here: the status line and fields become HEADERS
 * (h2conv_response_to_nv, never-indexed when a secret was injected), the rest
 * is DATA, and the end of the request is END_STREAM.
 *
 * Trailers.  A chunked response's trailer lines reach the stream aside
 * (h2srv_trailers, from the relay, scrubbed when a secret was injected) and
 * go out as a trailing HEADERS frame after the last DATA.  A client's
 * trailers (a HEADERS block after DATA) end a chunk-framed request body as
 * its trailer section; after a content-length body they are dropped.
 *
 * Reentrancy: the pipeline runs inside nghttp2's callbacks (a DATA chunk
 * pumps its stream's connection), and nghttp2's callbacks run inside the
 * pipeline's writes.  So neither calls the other's API directly: a stream
 * only raises flags (pending, drained, want_reset, consume), and
 * h2srv_pump, outside every nghttp2 call, services them.
 *
 * Bounds: SETTINGS_MAX_CONCURRENT_STREAMS, a per-stream window that only
 * reopens as the pipeline consumes the body (no automatic WINDOW_UPDATE), the
 * header list bounded by limits.header_bytes, nghttp2's CONTINUATION and
 * stream-reset limits, and the response queue of each stream bounded by the
 * relay's own backpressure (PROXY_HIGH_WATER).
 *
 * WebSocket (RFC 8441): an extended CONNECT (:protocol websocket) becomes an
 * HTTP/1.1 upgrade with a Sec-WebSocket-Key generated here; the upstream's
 * 101 is checked against it (h2srv_ws_accept_check) and answered on the
 * stream as a 200 (relay.c), then DATA both ways is the WebSocket byte
 * stream (wstunnel.c searches and scrubs its frames as for HTTP/1.1).  The
 * client's END_STREAM is the tunnel's client EOF; RST_STREAM closes it.
 *
 * Audit.  A stream that reaches its pipeline is recorded there, like any
 * request.  One refused here is recorded here (h2srv_audit_refusal): a
 * translation error answered with a status, a head that resets the stream,
 * bad trailers, and a stream nghttp2 itself reset for a malformed block.  A
 * client's own RST_STREAM is not a refusal; resets too fast end the
 * connection with GOAWAY, recorded once as a denial.  Refusals on one
 * connection are recorded one by one up to PROXY_REFUSALS_AUDITED, then only
 * counted (http_refusal_admit): one record with the count when it closes.
 */
#include <string.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "h2srv_int.h"
#include "proxy/metrics.h"
#include "proxy/judge/semantic.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"

/* ---- the virtual connection of a stream ---- */

static void
vc_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct h2stream *st = arg;

	(void)buf;
	if (info->n_added > 0) {
		/* what the answer's head needs from the request, while it is there */
		if (st->vc != NULL && st->vc->req != NULL) {
			st->no_index |= st->vc->req->cred->nuses > 0;
			st->head_req = st->vc->req->is_head != 0;
		}
		st->pending = 1;
		cio_kick(st->s->c);
	}
}

static void
vc_in_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct h2stream *st = arg;
	size_t n;

	(void)buf;
	if (info->n_deleted == 0 || st->data_unconsumed == 0)
		return;
	/* the pipeline took bytes: reopen the window for as much DATA (heads and chunk lines are not DATA) */
	n = info->n_deleted < st->data_unconsumed ? info->n_deleted : st->data_unconsumed;
	st->data_unconsumed -= n;
	st->consume += n;
	cio_kick(st->s->c);
}

static struct conn *
vc_new(struct h2stream *st)
{
	struct conn *p = st->s->c, *c = xcalloc(1, sizeof(*c));

	c->id = p->id;  /* one client connection: its streams' audit lines share its id */
	c->nreq = (uint32_t)st->id - 1;  /* ... and its request is "<id>-<stream id>" */
	c->w = p->w;
	c->mode = p->mode;
	c->state = CONN_S_PEEK;
	c->fd = -1;
	c->peer = p->peer;
	c->dest = p->dest;
	c->has_dest = p->has_dest;
	c->pol = policy_ref(p->pol);
	c->entry = p->entry;
	c->sandbox = p->sandbox;
	c->sbx = p->sbx;  /* borrowed: the connection holds the reference */
	c->sbx_id = p->sbx_id;
	c->pol_gen = p->pol_gen;  /* an older policy is adopted at the request's start (revoke.c) */
	c->revoke_gen = p->revoke_gen;
	c->revoked = p->revoked;
	conn_set_host(c, p->host);
	c->sni = p->sni != NULL ? xstrdup(p->sni) : NULL;
	c->port = p->port;
	c->tls = 1;
	c->judged = 1;
	c->io_on = 1;
	c->io_reading = 1;
	c->h2.stream = st;
	c->h2_stream = 1;
	c->ops = &conn_ops_h2_vc;
	c->alpn_h1 = p->alpn_h1;  /* the upstream is offered what the client offered */
	c->alpn_h2 = p->alpn_h2;
	c->in = st->in;
	c->out = st->out;
	c->client_eof = st->ws && st->req_ended;  /* a WebSocket's END_STREAM came in the read that started it */
	clock_mono(&c->t0);
	return c;
}

static struct h2stream *
stream_new(struct h2srv *s, int32_t id)
{
	struct h2stream *st = xcalloc(1, sizeof(*st));

	st->s = s;
	st->id = id;
	st->hdr = evbuffer_new();
	st->in = evbuffer_new();
	st->out = evbuffer_new();
	if (st->hdr == NULL || st->in == NULL || st->out == NULL)
		fatalx("out of memory");
	evbuffer_add_cb(st->in, vc_in_cb, st);
	evbuffer_add_cb(st->out, vc_out_cb, st);
	LIST_INSERT_HEAD(&s->streams, st, link);
	s->nstreams++;
	metrics_h2_stream(s->c->w->gw->metrics, 1);
	return st;
}

static void
stream_free(struct h2stream *st)
{
	if (st->vc != NULL) {
		st->vc->h2.stream = NULL;  /* conn_close of a stream's connection no longer reaches back here */
		st->vc->in = st->vc->out = NULL;  /* ours */
		conn_close(st->vc);
		st->vc = NULL;
	}
	LIST_REMOVE(st, link);
	st->s->nstreams--;
	metrics_h2_stream(st->s->c->w->gw->metrics, -1);
	evbuffer_free(st->hdr);
	evbuffer_free(st->in);
	evbuffer_free(st->out);
	if (st->trailers != NULL)
		evbuffer_free(st->trailers);
	free(st);
}

/* Asks for a RST_STREAM (submitted by h2srv_pump). */
void
h2srv_stream_reset(struct h2stream *st, uint32_t code)
{
	if (st->reset || st->want_reset)
		return;
	st->want_reset = 1;
	st->reset_code = code;
	st->pending = 1;
	cio_kick(st->s->c);
}

/* ---- a stream's service (the pump) and its end ---- */

/* Services one stream's flags: only here are nghttp2's stream functions called. */
static void
stream_service(struct h2stream *st)
{
	nghttp2_session *ng = st->s->ng;

	if (st->consume > 0) {
		nghttp2_session_consume(ng, st->id, st->consume);
		st->consume = 0;
	}
	if (!st->pending || st->reset)
		return;
	st->pending = 0;
	if (st->starting && st->want_reset)
		st->starting = 0;  /* reset in the read that started it (bad trailers): never starts */
	if (st->starting) {
		st->starting = 0;
		st->vc = vc_new(st);
		conn_start_requests(st->vc);  /* may close it again at once (a refusal): flags only */
		return;
	}
	if (st->want_reset) {
		st->reset = 1;
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, st->reset_code);
		return;
	}
	if (st->refuse_status != 0) {
		h2srv_refusal_submit(st);
		return;
	}
	if (!st->head_sent && evbuffer_get_length(st->out) > 0 && h2srv_head_submit(st) != 0) {
		st->reset = 1;
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
		return;
	}
	if (st->head_sent && st->deferred && (evbuffer_get_length(st->out) > 0 || st->out_eof)) {
		st->deferred = 0;
		nghttp2_session_resume_data(ng, st->id);
	}
}

void
h2srv_stream_closed(struct conn *vc)
{
	struct h2stream *st = vc->h2.stream;

	if (st == NULL)
		return;
	st->vc = NULL;
	vc->in = vc->out = NULL;  /* ours */
	vc->h2.stream = NULL;
	st->consume += st->data_unconsumed;
	st->data_unconsumed = 0;
	st->pending = 1;
	cio_kick(st->s->c);
	/* a request that ended in order (CLOSING: its answer complete) ends the stream; anything else resets it */
	if (vc->state == CONN_S_CLOSING)
		st->out_eof = 1;
	else if (!st->out_eof)
		h2srv_stream_reset(st, NGHTTP2_INTERNAL_ERROR);
}

void
h2srv_stream_abort(struct conn *vc)
{
	struct h2stream *st = vc->h2.stream;

	if (st != NULL)
		h2srv_stream_reset(st, NGHTTP2_INTERNAL_ERROR);
}

size_t *
h2srv_held(struct conn *vc)
{
	struct h2stream *st = vc->h2_stream ? vc->h2.stream : NULL;

	return st != NULL ? &st->s->held : NULL;
}

struct conn *
h2srv_parent(struct conn *vc)
{
	struct h2stream *st = vc->h2_stream ? vc->h2.stream : NULL;

	return st != NULL ? st->s->c : NULL;
}

int
h2srv_had_streams(const struct conn *c)
{
	const struct h2srv *s = c->h2_conn ? c->h2.sess : NULL;

	return s != NULL && nghttp2_session_get_last_proc_stream_id(s->ng) > 0;
}

int
h2srv_waiting(struct conn *c)
{
	struct h2srv *s = c->h2_conn ? c->h2.sess : NULL;
	struct h2stream *st;

	if (s == NULL)
		return 0;
	LIST_FOREACH(st, &s->streams, link)
		if (st->vc != NULL && sem_waiting(st->vc))
			return 1;
	return 0;
}

/* ---- request: the client's frames ---- */

static int
on_begin_headers(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2srv *s = arg;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	nghttp2_session_set_stream_user_data(ng, f->hd.stream_id, stream_new(s, f->hd.stream_id));
	return 0;
}

static int
on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nlen, const uint8_t *value,
          size_t vlen, uint8_t flags, void *arg)
{
	struct h2stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	struct h2srv *s = arg;

	(void)flags;
	if (st == NULL || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (f->headers.cat != NGHTTP2_HCAT_REQUEST && f->headers.cat != NGHTTP2_HCAT_HEADERS)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (f->headers.cat == NGHTTP2_HCAT_HEADERS && st->vc == NULL && !st->starting)
		return 0;  /* trailers of a stream no pipeline reads (refused, or its answer done): ignored */
	/* trailers are bounded like the head (the head's fields are gone by then) */
	if (h2_fields_add(st->hdr, &st->nfields, H2_FIELDS_MAX, (size_t)s->c->w->gw->cfg->limits.header_bytes, name, nlen,
	                  value, vlen) != 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	return 0;
}

static void
hdr_clear(struct h2stream *st)
{
	evbuffer_drain(st->hdr, evbuffer_get_length(st->hdr));
	st->nfields = 0;
}

/* A whole request head: translate it and start its virtual connection. */
static void
request_start(struct h2stream *st, int end_stream)
{
	struct conn *p = st->s->c;
	const struct policy_limits *lim = &p->w->gw->cfg->limits;
	nghttp2_nv nva[H2_FIELDS_MAX];
	struct h2conv_req_opts o = {p->sni, "https", H2_FIELDS_MAX, end_stream, 1};
	struct h2conv_request info;
	struct h2conv_err e;
	char *head = (char *)p->w->scratch;
	size_t hlen = 0;

	h2_fields_nva(st->hdr, st->nfields, nva);
	if (h2conv_request_to_h1(nva, st->nfields, &o, head, p->w->scratch_cap < lim->header_bytes ? p->w->scratch_cap
	                                                                                            : lim->header_bytes,
	                         &hlen, &info, &e) != 0) {
		if (e.malformed) {
			h2srv_audit_refusal(st, -1, e.reason);
			h2srv_stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
			return;
		}
		h2srv_stream_refuse(st, e.status, e.reason);
		return;
	}
	if (info.websocket) {
		/* the key the upstream's 101 must answer (h2srv_ws_accept_check); only we write this name capitalised */
		const char *k = memmem(head, hlen, "\r\nSec-WebSocket-Key: ", 21);

		if (!info.ws_key_generated || k == NULL || (size_t)(k - head) + 21 + H2CONV_WS_KEY_LEN > hlen) {
			h2srv_stream_refuse(st, 500, "no WebSocket key");
			return;
		}
		memcpy(st->ws_key, k + 21, H2CONV_WS_KEY_LEN);
		st->ws = 1;
	}
	hdr_clear(st);
	st->begun = 1;
	st->chunked = info.chunked;
	st->req_left = info.content_length;
	evbuffer_add(st->in, head, hlen);
	/*
	 * The pipeline starts after this read is handled (h2srv_pump), not here:
	 * a stream reset in the same read (rapid reset) never dials an upstream.
	 */
	st->starting = 1;
	st->pending = 1;
}

/*
 * The client's trailers (a HEADERS block after DATA, with END_STREAM) end a
 * chunk-framed body as its trailer section.  After a content-length body
 * HTTP/1.1 has no place for them: they are dropped (RFC 9110 6.5.1 lets a
 * recipient discard trailers).  A block that does not translate resets the
 * stream: the head already went up, so no answer of ours can replace it.
 */
static void
request_trailers(struct h2stream *st, int end_stream)
{
	struct conn *p = st->s->c;
	const struct policy_limits *lim = &p->w->gw->cfg->limits;
	nghttp2_nv nva[H2_FIELDS_MAX];
	struct h2conv_err e;
	char *out = (char *)p->w->scratch;
	size_t len = 0;

	if (!end_stream) {  /* nghttp2 refuses this itself; never trust it to */
		hdr_clear(st);
		h2srv_audit_refusal(st, -1, "trailers without END_STREAM");
		h2srv_stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
		return;
	}
	if (!st->chunked) {
		hdr_clear(st);
		if (st->ws && st->vc != NULL) {  /* trailers end a WebSocket stream too: the tunnel's client EOF */
			st->vc->client_eof = 1;
			conn_pump(st->vc);
		}
		return;
	}
	h2_fields_nva(st->hdr, st->nfields, nva);
	if (h2conv_trailers_to_h1(nva, st->nfields, H2_FIELDS_MAX, out,
	                          p->w->scratch_cap < lim->header_bytes ? p->w->scratch_cap : lim->header_bytes, &len,
	                          &e) != 0) {
		log_info("c%llu: stream %d: request trailers refused: %s", (unsigned long long)p->id, (int)st->id, e.reason);
		hdr_clear(st);
		h2srv_audit_refusal(st, -1, e.reason);
		h2srv_stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
		return;
	}
	hdr_clear(st);
	evbuffer_add(st->in, out, len);
	if (st->vc != NULL)
		conn_pump(st->vc);
}

/* A client RST_STREAM: rapid reset (CVE-2023-44487) ends the connection with ENHANCE_YOUR_CALM. */
static void
count_reset(struct h2srv *s)
{
	struct timespec now;
	double dt;

	clock_mono(&now);
	dt = clock_ts_diff(&s->reset_t, &now);
	s->reset_t = now;
	s->reset_tokens += dt * H2_RESETS_OURS_RATE;
	if (s->reset_tokens > H2_RESETS_OURS_BURST)
		s->reset_tokens = H2_RESETS_OURS_BURST;
	s->reset_tokens -= 1.0;
	if (s->reset_tokens < 0.0 && nghttp2_session_want_read(s->ng)) {
		log_info("c%llu: HTTP/2 client reset streams too fast: GOAWAY (ENHANCE_YOUR_CALM)",
		         (unsigned long long)s->c->id);
		audit_conn(s->c, AUDIT_VERDICT_DENY, "http2", "the client reset streams too fast: GOAWAY (ENHANCE_YOUR_CALM)", -1);
		nghttp2_session_terminate_session(s->ng, NGHTTP2_ENHANCE_YOUR_CALM);
	}
}

static int
on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2stream *st;

	if (f->hd.type == NGHTTP2_RST_STREAM) {
		if ((st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id)) != NULL)
			st->client_reset = 1;
		count_reset(arg);
		return 0;
	}
	if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
		return 0;
	st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (st == NULL)
		return 0;
	if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
		st->req_ended = 1;
	if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST)
		request_start(st, (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
	else if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_HEADERS &&
	         (st->vc != NULL || st->starting))
		request_trailers(st, (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0);
	else if (f->hd.type == NGHTTP2_DATA && (f->hd.flags & NGHTTP2_FLAG_END_STREAM) &&
	         (st->vc != NULL || st->starting)) {
		if (st->chunked)
			evbuffer_add(st->in, SLUICE_LIT("0\r\n\r\n"));
		if (st->ws && st->vc != NULL)
			st->vc->client_eof = 1;  /* the WebSocket tunnel's client side ended (vc_new if not started) */
		if (st->vc != NULL)
			conn_pump(st->vc);
	}
	return 0;
}

static int
on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *arg)
{
	struct h2stream *st = nghttp2_session_get_stream_user_data(ng, id);

	(void)flags;
	if (st != NULL && st->req_left > 0)
		st->req_left -= (int64_t)len < st->req_left ? (int64_t)len : st->req_left;
	if (st == NULL || (st->vc == NULL && !st->starting)) {
		/* nobody reads it: give the window back (h2srv_pump; not from inside this callback) */
		if (st != NULL)
			st->consume += len;
		else
			((struct h2srv *)arg)->consume_conn += len;
		return 0;
	}
	if (st->chunked)
		h1_out_chunk_size(st->in, len);
	evbuffer_add(st->in, data, len);
	if (st->chunked)
		evbuffer_add(st->in, SLUICE_LIT("\r\n"));
	st->data_unconsumed += len;
	if (st->vc != NULL)
		conn_pump(st->vc);
	return 0;
}

static int
on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2stream *st = nghttp2_session_get_stream_user_data(ng, id);

	if (st != NULL) {
		/* reset before any pipeline had it, not by the client: nghttp2 refused a malformed block */
		if (!st->begun && !st->client_reset && code != NGHTTP2_NO_ERROR)
			h2srv_audit_refusal(st, -1, code == NGHTTP2_PROTOCOL_ERROR ? "malformed request header block (PROTOCOL_ERROR)"
			                                                           : "stream reset before its request was read");
		nghttp2_session_set_stream_user_data(ng, id, NULL);
		((struct h2srv *)arg)->consume_conn += st->consume + st->data_unconsumed;
		st->consume = st->data_unconsumed = 0;
		stream_free(st);
	}
	return 0;
}

/* ---- the session ---- */

int
h2srv_start(struct conn *c)
{
	const struct policy_limits *lim = &c->w->gw->cfg->limits;
	nghttp2_session_callbacks *cb;
	nghttp2_option *opt;
	struct h2srv *s = xcalloc(1, sizeof(*s));
	nghttp2_settings_entry set[] = {
		{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, H2_MAX_STREAMS},
		{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, H2_STREAM_WINDOW},
		{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, lim->header_bytes},
		{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
		{NGHTTP2_SETTINGS_ENABLE_CONNECT_PROTOCOL, 1},  /* RFC 8441: WebSocket streams */
	};
	int r;

	LIST_INIT(&s->streams);
	s->c = c;
	s->reset_tokens = H2_RESETS_OURS_BURST;
	clock_mono(&s->reset_t);
	if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
		fatalx("out of memory");
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, h2_fields_invalid);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	nghttp2_option_set_no_auto_window_update(opt, 1);
	nghttp2_option_set_max_continuations(opt, H2_MAX_CONTINUATIONS);
	nghttp2_option_set_stream_reset_rate_limit(opt, H2_RESETS_BURST, H2_RESETS_RATE);
	nghttp2_option_set_max_settings(opt, 32);
	nghttp2_option_set_max_outbound_ack(opt, 1000);
	nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
	r = nghttp2_session_server_new2(&s->ng, cb, s, opt);
	nghttp2_session_callbacks_del(cb);
	nghttp2_option_del(opt);
	if (r != 0) {
		free(s);
		return -1;
	}
	c->h2.sess = s;
	c->h2_conn = 1;
	c->ops = &conn_ops_h2_conn;
	nghttp2_submit_settings(s->ng, NGHTTP2_FLAG_NONE, set, sizeof(set) / sizeof(set[0]));
	conn_set_state(c, CONN_S_H2);
	conn_arm_timer(c, lim->idle_ms);
	conn_pump(c);
	return 0;
}

#define H2_PUMP_ROUNDS 8

void
h2srv_pump(struct conn *c)
{
	struct h2srv *s = c->h2.sess;
	struct evbuffer *in = cio_in(c), *out = cio_out(c);
	struct h2stream *st, *next;
	size_t n = evbuffer_get_length(in);
	const uint8_t *data;
	ssize_t r = 0;
	int round, more = 1;

	if (n > 0) {
		r = nghttp2_session_mem_recv(s->ng, evbuffer_pullup(in, -1), n);
		if (r < 0) {
			log_info("c%llu: HTTP/2 session error: %s", (unsigned long long)c->id, nghttp2_strerror((int)r));
			if (nghttp2_session_want_read(s->ng))  /* once: the session reads nothing after this */
				audit_conn(c, AUDIT_VERDICT_DENY, "http2", nghttp2_strerror((int)r), -1);
			nghttp2_session_terminate_session(s->ng, NGHTTP2_PROTOCOL_ERROR);
			evbuffer_drain(in, n);
		} else {
			evbuffer_drain(in, (size_t)r);
		}
		conn_arm_timer(c, conn_limits(c)->idle_ms);
	}
	for (round = 0; more && round < H2_PUMP_ROUNDS && c->state == CONN_S_H2; round++) {
		more = 0;
		if (s->consume_conn > 0) {
			nghttp2_session_consume_connection(s->ng, s->consume_conn);
			s->consume_conn = 0;
		}
		LIST_FOREACH(st, &s->streams, link)
			stream_service(st);
		if (s->goaway == H2_GOAWAY_DUE) {
			/* the streams begun so far finish; nghttp2 ignores any the client opens after these */
			s->goaway = H2_GOAWAY_SENT;
			nghttp2_submit_goaway(s->ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(s->ng),
			                      NGHTTP2_NO_ERROR, NULL, 0);
		}
		while (evbuffer_get_length(out) < PROXY_HIGH_WATER && (r = nghttp2_session_mem_send(s->ng, &data)) > 0)
			evbuffer_add(out, data, (size_t)r);
		if (r < 0)
			log_info("c%llu: HTTP/2 send error: %s", (unsigned long long)c->id, nghttp2_strerror((int)r));
		/* streams whose queue drained may produce more; those that did come round again */
		for (st = LIST_FIRST(&s->streams); st != NULL; st = next) {
			next = LIST_NEXT(st, link);
			if (st->drained && st->vc != NULL) {
				st->drained = 0;
				conn_pump(st->vc);
			}
			more |= st->pending || st->consume > 0;
		}
	}
	if (more)
		cio_kick(c);
	if (s->goaway == H2_GOAWAY_SENT && s->nstreams == 0) {
		/* revoked, and its last stream ended: a final GOAWAY, then the connection closes */
		s->goaway = H2_GOAWAY_FINAL;
		nghttp2_session_terminate_session(s->ng, NGHTTP2_NO_ERROR);
		while (evbuffer_get_length(out) < PROXY_HIGH_WATER && (r = nghttp2_session_mem_send(s->ng, &data)) > 0)
			evbuffer_add(out, data, (size_t)r);
	}
	if ((!nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng)) || c->client_eof) {
		conn_set_state(c, CONN_S_CLOSING);
		conn_arm_timer(c, cio_out_len(c) > 0 ? 5000 : 0);
	}
}

void
h2srv_revoke(struct conn *c, const char *why)
{
	struct h2srv *s = c->h2.sess;
	struct h2stream *st;

	if (s == NULL || !c->h2_conn || s->goaway != H2_GOAWAY_NONE)
		return;
	s->goaway = H2_GOAWAY_DUE;
	LIST_FOREACH(st, &s->streams, link) {
		if (st->vc == NULL)
			continue;
		st->vc->revoked = why;
		/* a WebSocket whose upgrade carried an injected value ends now; others finish */
		if (st->vc->state == CONN_S_TUNNEL && st->vc->req != NULL && st->vc->req->cred->nuses > 0) {
			revoke_audit(st->vc, "tunnel_closed", why);
			h2srv_stream_reset(st, NGHTTP2_CANCEL);
		}
	}
	cio_kick(c);
}

void
h2srv_free(struct conn *c)
{
	struct h2srv *s = c->h2.sess;
	struct h2stream *st;

	if (s == NULL || !c->h2_conn)
		return;
	while ((st = LIST_FIRST(&s->streams)) != NULL) {
		nghttp2_session_set_stream_user_data(s->ng, st->id, NULL);
		stream_free(st);
	}
	nghttp2_session_del(s->ng);
	free(s);
	c->h2.sess = NULL;
}
