/*
 * proxy/h2/h2up_stream.c - one stream of an upstream HTTP/2 session: the
 * relay's HTTP/1.1 request (from the pair) becomes HEADERS, DATA and
 * trailers; the upstream's response frames become the HTTP/1.1 response the
 * relay reads.  Every field crosses h2conv, which refuses what could smuggle.
 */
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include "common/log.h"
#include "common/sluice.h"
#include "h2up_int.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"

/*
 * The request's chunked trailers as a trailing HEADERS (nghttp2 allows this
 * from the data source callback).  1 submitted, 0 none to send (all dropped,
 * or malformed: h1_chunked_decode took them, h2conv refuses what HTTP/2
 * cannot carry, and then the body just ends).
 */
static int
submit_trailers(struct h2up_stream *st)
{
	struct worker *w = st->s->w;
	nghttp2_nv nva[H1_MAX_HEADERS];
	/* the names go to <scratch>: the data source runs inside mem_send, outside every parse */
	struct h2conv_nvbuf nb = {nva, H1_MAX_HEADERS, 0, (char *)w->scratch, w->scratch_cap, 0};
	const char *err = NULL;
	size_t len = evbuffer_get_length(st->trailers);

	if (h2conv_trailers_to_nv((const char *)evbuffer_pullup(st->trailers, -1), len,
	                          st->up != NULL && st->up->no_index ? H2CONV_NV_NO_INDEX : 0, &nb, &err) != 0) {
		log_info("h2 upstream %s: request trailers dropped: %s", st->s->host, err != NULL ? err : "?");
		return 0;
	}
	if (nb.nvlen == 0 || nghttp2_submit_trailer(st->s->ng, st->id, nb.nva, nb.nvlen) != 0)
		return 0;
	return 1;
}

static ssize_t
req_data_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
              nghttp2_data_source *src, void *arg)
{
	struct h2up_stream *st = src->ptr;
	size_t n = evbuffer_get_length(st->data);

	(void)ng;
	(void)id;
	(void)arg;
	if (st->tunnel) {  /* WebSocket bytes as the relay wrote them: no framing to decode, no end but a reset */
		struct evbuffer *in = bufferevent_get_input(st->pb);
		n = evbuffer_get_length(in);
		if (n == 0) {
			st->deferred = 1;
			return NGHTTP2_ERR_DEFERRED;
		}
		if (n > len)
			n = len;
		evbuffer_remove(in, buf, n);
		return (ssize_t)n;
	}
	if (n == 0 && !st->body_done) {
		st->deferred = 1;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (n > len)
		n = len;
	evbuffer_remove(st->data, buf, n);
	st->feed = 1;  /* room: more of the body may be decoded from the pair (sess_pump) */
	h2up_stream_mark(st);
	if (st->body_done && evbuffer_get_length(st->data) == 0) {
		*flags |= NGHTTP2_DATA_FLAG_EOF;
		if (st->trailers != NULL && submit_trailers(st) == 1)
			*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;  /* the trailers end the stream */
	}
	return (ssize_t)n;
}

/* Submits the request head in the pair, if whole.  1 submitted, 0 wait, -1 refused (the stream ends). */
static int
submit_head(struct h2up_stream *st)
{
	struct worker *w = st->s->w;
	const struct policy_limits *lim = &w->gw->cfg->limits;
	struct h1_limits hl = {lim->header_bytes + 4096, lim->header_bytes + 4096, H1_MAX_HEADERS};
	struct evbuffer *in = bufferevent_get_input(st->pb);
	struct h1_message *m = w->msg;  /* free here: sess_pump runs outside every parse */
	nghttp2_nv nva[H1_MAX_HEADERS + 5];
	struct h2conv_nvbuf nb = {nva, H1_MAX_HEADERS + 5, 0, (char *)w->scratch, w->scratch_cap, 0};
	nghttp2_data_provider prd = {{.ptr = st}, req_data_read};
	size_t len = evbuffer_get_length(in);
	const char *err = NULL;
	unsigned flags = st->up != NULL && st->up->no_index ? H2CONV_NV_NO_INDEX : 0;
	int n, status = 0;
	int32_t id;

	if (len == 0)
		return 0;
	n = h1_parse_request((const char *)evbuffer_pullup(in, -1), len, &hl, m, &err, &status);
	if (n == -2)
		return 0;
	if (n > 0 && m->upgrade_websocket) {
		/* RFC 8441: CONNECT :protocol websocket; the relay gets the 101 it expects, with the accept of its key */
		const struct h1_header *k = h1_find_header(m, "sec-websocket-key");
		if (k == NULL || ws_accept(k->value, k->value_len, st->ws_accept) != 0) {
			log_warnx("h2 upstream %s: WebSocket upgrade without a usable key", st->s->host);
			return -1;
		}
		flags |= H2CONV_NV_EXTENDED_CONNECT;
		st->tunnel = 1;
	}
	if (n < 0 || h2conv_request_to_nv(m, "https", NULL, flags, &nb, &err) != 0) {
		log_warnx("h2 upstream %s: request not sent: %s", st->s->host, err != NULL ? err : "?");
		return -1;
	}
	snprintf(st->method, sizeof(st->method), "%.*s", (int)m->method_len, m->method);
	if (st->tunnel)
		snprintf(st->method, sizeof(st->method), "CONNECT");  /* its 200 has no body framing */
	st->body = m->framing;
	st->body_left = m->content_length;
	st->body_done = m->framing == H1_BODY_NONE && !st->tunnel;
	h1_chunked_init(&st->chunk, PROXY_TRAILER_MAX);
	/* the nv point into the pair's input and <scratch>: submitting copies them before the head is drained */
	id = nghttp2_submit_request(st->s->ng, NULL, nb.nva, nb.nvlen, st->body_done ? NULL : &prd, st);
	if (id < 0) {
		log_warnx("h2 upstream %s: cannot open a stream: %s", st->s->host, nghttp2_strerror(id));
		return -1;
	}
	st->id = id;
	st->head_done = 1;
	evbuffer_drain(in, (size_t)n);
	return 1;
}

/* One chunked-decoder step from the pair into <data>: 1 progress, 0 wait, -1 malformed. */
static int
body_chunked(struct h2up_stream *st, struct evbuffer *in)
{
	size_t len = evbuffer_get_length(in), cap = len < H2UP_CHUNK_PULL ? len : H2UP_CHUNK_PULL, off, dlen = 0, tlen = 0;
	const char *p, *data = NULL, *tr = NULL, *err = NULL;
	int n, done = 0;

	p = (const char *)evbuffer_pullup(in, (ev_ssize_t)cap);
	n = h1_chunked_decode(&st->chunk, p, cap, &data, &dlen, &done, &tr, &tlen, &err);
	if (n == -2)
		return cap == H2UP_CHUNK_PULL ? -1 : 0;
	if (n < 0)
		return -1;
	if (done && tlen > 0) {
		st->trailers = evbuffer_new();
		if (st->trailers == NULL)
			fatalx("out of memory");
		evbuffer_add(st->trailers, tr, tlen);
	}
	off = dlen > 0 ? (size_t)(data - p) : 0;
	if (dlen > 0) {
		evbuffer_drain(in, off);
		evbuffer_remove_buffer(in, st->data, dlen);
	}
	evbuffer_drain(in, (size_t)n - off - dlen);
	st->body_done = done != 0;
	return 1;
}

int
h2up_stream_feed(struct h2up_stream *st)
{
	struct evbuffer *in = bufferevent_get_input(st->pb);
	size_t before = evbuffer_get_length(st->data), n;
	int r;

	st->feed = 0;
	if (!st->head_done && (r = submit_head(st)) <= 0)
		return r;
	if (st->tunnel) {  /* the data source reads the pair itself */
		if (st->deferred && evbuffer_get_length(in) > 0) {
			st->deferred = 0;
			nghttp2_session_resume_data(st->s->ng, st->id);
		}
		return 0;
	}
	while (!st->body_done && evbuffer_get_length(st->data) < PROXY_HIGH_WATER && evbuffer_get_length(in) > 0) {
		if (st->body == H1_BODY_LENGTH) {
			n = evbuffer_get_length(in);
			if (n > st->body_left)
				n = (size_t)st->body_left;
			evbuffer_remove_buffer(in, st->data, n);
			st->body_left -= n;
			st->body_done = st->body_left == 0;
		} else if ((r = body_chunked(st, in)) <= 0) {
			if (r < 0) {
				log_warnx("h2 upstream %s: malformed chunked request body", st->s->host);
				return -1;
			}
			break;
		}
	}
	if (st->deferred && (evbuffer_get_length(st->data) != before || st->body_done)) {
		st->deferred = 0;
		nghttp2_session_resume_data(st->s->ng, st->id);
	}
	return 0;
}

/* ---- the response: nghttp2's callbacks ---- */

static int
on_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nlen, const uint8_t *value,
          size_t vlen, uint8_t flags, void *arg)
{
	struct h2up_stream *st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	struct h2up_sess *s = arg;

	(void)flags;
	if (st == NULL || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (h2_fields_add(st->hdr, &st->nfields, H1_MAX_HEADERS, (size_t)s->w->gw->cfg->limits.header_bytes, name, nlen,
	                  value, vlen) != 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  /* resets the stream: the relay answers 502 */
	return 0;
}

/*
 * The upstream's 200 to an extended CONNECT, as the 101 the relay expects
 * for its upgrade: the status line replaced, the fields kept, the upgrade
 * fields and the accept of the relay's key added.
 */
static void
upgraded_head(struct h2up_stream *st, struct evbuffer *out, const char *head, size_t len)
{
	const char *eol = memchr(head, '\n', len);
	size_t skip = eol != NULL ? (size_t)(eol - head) + 1 : len;

	evbuffer_add(out, SLUICE_LIT("HTTP/1.1 101 Switching Protocols\r\n"));
	if (len >= skip + 2)
		evbuffer_add(out, head + skip, len - skip - 2);  /* the fields, without the final CRLF */
	evbuffer_add_printf(out, "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: %s\r\n\r\n",
	                    st->ws_accept);
}

/* A whole header block (a response head, an interim one, or trailers) for the relay. 0, or -1 (reset). */
static int
header_block(struct h2up_stream *st, int end_stream)
{
	struct worker *w = st->s->w;
	struct evbuffer *out = bufferevent_get_output(st->pb);
	nghttp2_nv nva[H1_MAX_HEADERS];
	struct h2conv_resp_opts o = {H1_MAX_HEADERS, end_stream, st->method, strlen(st->method)};
	struct h2conv_response info;
	struct h2conv_err e = {NULL, 0, 0};
	size_t len = 0, nf = st->nfields;
	int r;

	h2_fields_nva(st->hdr, nf, nva);
	st->nfields = 0;
	if (!st->resp_head) {
		r = h2conv_response_to_h1(nva, nf, &o, (char *)w->scratch, w->scratch_cap, &len, &info, &e);
		if (r == 0 && st->tunnel && info.status >= 200 && info.status < 300) {
			upgraded_head(st, out, (const char *)w->scratch, len);
			st->resp_head = 1;
		} else if (r == 0) {
			if (st->tunnel && info.status >= 200)
				st->tunnel = 0;  /* refused: an ordinary answer, and the relay ends the request */
			evbuffer_add(out, w->scratch, len);
			if (info.status >= 200) {
				st->resp_head = 1;
				st->resp_chunked = info.framing == H1_BODY_CHUNKED;
			}
		}
	} else if (!end_stream) {
		e.reason = "HEADERS in the middle of the body";
		r = -1;
	} else if (st->resp_chunked) {
		r = h2conv_trailers_to_h1(nva, nf, H1_MAX_HEADERS, (char *)w->scratch, w->scratch_cap, &len, &e);
		if (r == 0) {
			evbuffer_add(out, w->scratch, len);
			st->resp_chunked = 0;  /* the last chunk is written */
		}
	} else {
		r = 0;  /* trailers after a Content-Length body: HTTP/1.1 cannot carry them */
	}
	evbuffer_drain(st->hdr, evbuffer_get_length(st->hdr));
	if (r != 0) {
		log_info("h2 upstream %s: stream %d refused: %s", st->s->host, (int)st->id, e.reason ? e.reason : "?");
		return -1;
	}
	return 0;
}

static int
on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2up_sess *s = arg;
	struct h2up_stream *st;
	int end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;

	if (f->hd.type == NGHTTP2_GOAWAY) {
		s->goaway = 1;
		return 0;
	}
	if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA)
		return 0;
	st = nghttp2_session_get_stream_user_data(ng, f->hd.stream_id);
	if (st == NULL)
		return 0;
	if (f->hd.type == NGHTTP2_HEADERS && st->up == NULL) {  /* nobody reads it */
		evbuffer_drain(st->hdr, evbuffer_get_length(st->hdr));
		st->nfields = 0;
	}
	if (f->hd.type == NGHTTP2_HEADERS && st->up != NULL && header_block(st, end) != 0) {
		nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_PROTOCOL_ERROR);
		return 0;
	}
	if (end && st->resp_head && st->up != NULL) {
		if (st->resp_chunked)
			evbuffer_add(bufferevent_get_output(st->pb), SLUICE_LIT("0\r\n\r\n"));
		st->complete = 1;
		if (st->tunnel)
			h2up_stream_eof(st);  /* the upstream ended its side of the WebSocket: the relay's tunnel ends */
	}
	return 0;
}

static int
on_data_chunk(nghttp2_session *ng, uint8_t flags, int32_t id, const uint8_t *data, size_t len, void *arg)
{
	struct h2up_stream *st = nghttp2_session_get_stream_user_data(ng, id);
	struct h2up_sess *s = arg;
	struct evbuffer *out;

	(void)flags;
	if (st == NULL || st->up == NULL || !st->resp_head) {
		/* nobody reads it: give the window back */
		if (st != NULL) {
			st->consume += len;
			h2up_stream_mark(st);
		} else {
			s->consume_conn += len;
			h2up_sess_kick(s);
		}
		return 0;
	}
	out = bufferevent_get_output(st->pb);
	st->unacked += len;  /* before the write: the pair may hand it over at once (pb_out_cb) */
	if (st->resp_chunked)
		h1_out_chunk_size(out, len);
	evbuffer_add(out, data, len);
	if (st->resp_chunked)
		evbuffer_add(out, SLUICE_LIT("\r\n"));
	return 0;
}

void
h2up_callbacks(nghttp2_session_callbacks *cb)
{
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, h2_fields_invalid);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
}
