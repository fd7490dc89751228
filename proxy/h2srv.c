/*
 * proxy/h2srv.c - HTTP/2 toward the client (ALPN "h2"): an nghttp2 server
 * session on the client connection, and one virtual connection per stream
 * that runs the ordinary pipeline (policy, secrets, held bodies, relay,
 * scrubbing, audit) on an HTTP/1.1 rendering of the stream.
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
 * Work in progress (issue 4): the per-stream audit of refusals made here is
 * not done yet.
 */
#include <string.h>
#include <event2/buffer.h>
#include <nghttp2/nghttp2.h>
#include <openssl/evp.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/h2conv.h"
#include "proxy/proxy_int.h"

#define H2_MAX_STREAMS 100          /* SETTINGS_MAX_CONCURRENT_STREAMS */
#define H2_STREAM_WINDOW 65535      /* request body bytes a stream may have in flight */
#define H2_RESETS_BURST 1000        /* client RST_STREAMs tolerated in a burst ... */
#define H2_RESETS_RATE 33           /* ... then per second (nghttp2's limit; GOAWAY beyond) */
#define H2_MAX_CONTINUATIONS 8      /* CONTINUATION frames per header block */
#define H2_FIELDS_MAX H1_MAX_HEADERS
#define H2_RESETS_OURS_BURST 200.0  /* client resets before ours: ENHANCE_YOUR_CALM beyond this burst ... */
#define H2_RESETS_OURS_RATE 20.0    /* ... refilled at this many per second */

struct h2stream {
	struct h2srv *s;
	int32_t id;
	struct conn *vc;              /* the request's virtual connection; NULL once it closed */
	struct evbuffer *hdr;         /* the header block as received: (u32 nlen, u32 vlen, name, value)... */
	size_t nfields;
	struct evbuffer *in, *out;    /* the virtual connection's buffers (owned here) */
	struct evbuffer *trailers;    /* the response's trailer lines, held for the end of DATA, or NULL */
	size_t data_unconsumed;       /* DATA bytes given to the pipeline and not yet consumed by it */
	size_t consume;               /* DATA bytes consumed, for the next WINDOW_UPDATE (h2srv_pump) */
	int refuse_status;            /* an answer of the gateway's to submit (h2srv_pump), or 0 */
	uint32_t reset_code;          /* a RST_STREAM to submit (h2srv_pump) */
	unsigned chunked : 1;         /* the body is chunk-framed into <in> */
	unsigned pending : 1;         /* the virtual connection wrote or ended: service it (h2srv_pump) */
	unsigned drained : 1;         /* DATA went out: the virtual connection may produce more */
	unsigned want_reset : 1;      /* a RST_STREAM is due (reset_code) */
	unsigned starting : 1;        /* translated: its virtual connection starts at the next service */
	unsigned req_ended : 1;       /* the client's END_STREAM arrived */
	unsigned no_index : 1;        /* a secret was injected: its answer's fields are never indexed */
	unsigned head_req : 1;        /* the request was HEAD (the answer's framing) */
	unsigned head_sent : 1;       /* response HEADERS submitted */
	unsigned out_eof : 1;         /* the response is complete */
	unsigned deferred : 1;        /* the data source said DEFERRED */
	unsigned reset : 1;           /* a RST_STREAM was submitted */
	unsigned ws : 1;              /* an extended CONNECT (WebSocket): <ws_key> was generated */
	char ws_key[H2CONV_WS_KEY_LEN];
	LIST_ENTRY(h2stream) link;
};

struct h2srv {
	nghttp2_session *ng;
	struct conn *c;
	size_t consume_conn;          /* DATA of streams already gone, for the connection's WINDOW_UPDATE */
	double reset_tokens;          /* client RST_STREAMs still allowed (a bucket: H2_RESETS_OURS_*) */
	struct timespec reset_t;
	LIST_HEAD(, h2stream) streams;
	unsigned nstreams;
};


/* ---- the virtual connection of a stream ---- */

static void
vc_out_cb(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct h2stream *st = arg;

	(void)buf;
	if (info->n_added > 0) {
		/* what the answer's head needs from the request, while it is there */
		if (st->vc != NULL && st->vc->req != NULL) {
			st->no_index |= st->vc->req->nuses > 0;
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
	conn_set_host(c, p->host);
	c->sni = p->sni != NULL ? xstrdup(p->sni) : NULL;
	c->port = p->port;
	c->tls = 1;
	c->judged = 1;
	c->io_on = 1;
	c->io_reading = 1;
	c->h2 = st;
	c->h2_stream = 1;
	c->alpn_h1 = p->alpn_h1;  /* the upstream is offered what the client offered */
	c->alpn_h2 = p->alpn_h2;
	c->in = st->in;
	c->out = st->out;
	c->client_eof = st->ws && st->req_ended;  /* a WebSocket's END_STREAM came in the read that started it */
	clock_gettime(CLOCK_MONOTONIC, &c->t0);
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
	return st;
}

static void
stream_free(struct h2stream *st)
{
	if (st->vc != NULL) {
		st->vc->h2 = NULL;  /* conn_close of a stream's connection no longer reaches back here */
		st->vc->in = st->vc->out = NULL;  /* ours */
		conn_close(st->vc);
		st->vc = NULL;
	}
	LIST_REMOVE(st, link);
	st->s->nstreams--;
	evbuffer_free(st->hdr);
	evbuffer_free(st->in);
	evbuffer_free(st->out);
	if (st->trailers != NULL)
		evbuffer_free(st->trailers);
	free(st);
}

/* Asks for a RST_STREAM (submitted by h2srv_pump). */
static void
stream_reset(struct h2stream *st, uint32_t code)
{
	if (st->reset || st->want_reset)
		return;
	st->want_reset = 1;
	st->reset_code = code;
	st->pending = 1;
	cio_kick(st->s->c);
}

static ssize_t data_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *arg);

/* Refuses a stream before any pipeline runs (a translation error): a JSON answer, logged. */
static void
stream_refuse(struct h2stream *st, int status, const char *reason)
{
	char peer[CONN_ADDR_STR];
	struct conn *p = st->s->c;
	struct evbuffer_ptr e;

	log_info("c%llu: stream %d from %s refused (%d): %s", (unsigned long long)p->id, (int)st->id,
	         conn_peer_str(p, peer), status, reason);
	respond_json(st->out, status, status == 421 ? "misdirected request" : "bad request", p->host, "http2", reason,
	             0);
	/* the answer's HTTP/1.1 head is ours: keep only its body, the status goes in HEADERS */
	e = evbuffer_search(st->out, "\r\n\r\n", 4, NULL);
	if (e.pos >= 0)
		evbuffer_drain(st->out, (size_t)e.pos + 4);
	st->refuse_status = status;
	st->out_eof = 1;
	st->pending = 1;
}

static void
refusal_submit(struct h2stream *st)
{
	char code[4];
	nghttp2_nv nv[2];

	snprintf(code, sizeof(code), "%03d", st->refuse_status);
	nv[0] = (nghttp2_nv){(uint8_t *)":status", (uint8_t *)code, 7, 3, NGHTTP2_NV_FLAG_NONE};
	nv[1] = (nghttp2_nv){(uint8_t *)"content-type", (uint8_t *)"application/json", 12, 16, NGHTTP2_NV_FLAG_NONE};
	st->refuse_status = 0;
	st->head_sent = 1;
	if (nghttp2_submit_response(st->s->ng, st->id, nv, 2, &(nghttp2_data_provider){{.ptr = st}, data_read}) != 0) {
		st->reset = 1;
		nghttp2_submit_rst_stream(st->s->ng, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_INTERNAL_ERROR);
	}
}

/* ---- response: what the virtual connection wrote ---- */

/*
 * The held trailer lines become the trailing HEADERS frame; submitting it from
 * the data source with NO_END_STREAM is what nghttp2 documents for trailers.
 * 0, or -1 (the lines do not translate: the stream is reset, never ended).
 */
static int
trailers_submit(struct h2stream *st, uint32_t *flags)
{
	struct worker *w = st->s->c->w;
	nghttp2_nv nva[H2_FIELDS_MAX];
	/* the names go to the scratch buffer: the data source runs inside mem_send, outside every parse */
	struct h2conv_nvbuf nb = {nva, H2_FIELDS_MAX, 0, (char *)w->scratch, w->scratch_cap, 0};
	size_t len = evbuffer_get_length(st->trailers);
	const char *err = NULL;

	if (h2conv_trailers_to_nv((const char *)evbuffer_pullup(st->trailers, -1), len,
	                          st->no_index ? H2CONV_NV_NO_INDEX : 0, &nb, &err) != 0) {
		log_warnx("c%llu: stream %d: response trailers not sent: %s", (unsigned long long)st->s->c->id,
		          (int)st->id, err);
		return -1;
	}
	/* the fields are copied: the lines may go */
	if (nb.nvlen > 0) {
		if (nghttp2_submit_trailer(st->s->ng, st->id, nb.nva, nb.nvlen) != 0)
			return -1;
		*flags |= NGHTTP2_DATA_FLAG_NO_END_STREAM;
	}
	evbuffer_drain(st->trailers, len);
	return 0;
}

/*
 * The answer is complete: END_STREAM, or the trailers that carry it.  When
 * the client is still sending its body (the upstream answered without reading
 * it all), RST_STREAM NO_ERROR after it tells the client to stop (RFC 9113
 * 8.1) instead of leaving it to send on.  0, or -1 (reset the stream).
 */
static int
data_end(struct h2stream *st, uint32_t *flags)
{
	*flags |= NGHTTP2_DATA_FLAG_EOF;
	if (st->trailers != NULL && evbuffer_get_length(st->trailers) > 0 && trailers_submit(st, flags) != 0)
		return -1;
	if (!st->req_ended)
		stream_reset(st, NGHTTP2_NO_ERROR);
	return 0;
}

static ssize_t
data_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags, nghttp2_data_source *src,
          void *arg)
{
	struct h2stream *st = src->ptr;
	size_t n = evbuffer_get_length(st->out);

	(void)ng;
	(void)id;
	(void)arg;
	if (n == 0) {
		if (st->out_eof)
			return data_end(st, flags) == 0 ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
		st->deferred = 1;
		return NGHTTP2_ERR_DEFERRED;
	}
	if (n > len)
		n = len;
	evbuffer_remove(st->out, buf, n);
	if (st->out_eof && evbuffer_get_length(st->out) == 0 && data_end(st, flags) != 0)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	st->drained = 1;  /* room in the queue: the relay may read the upstream again (h2srv_pump) */
	return (ssize_t)n;
}

/* The response head is complete in <out>: submit it as HEADERS.  0, or -1 (reset). */
static int
submit_head(struct h2stream *st)
{
	struct worker *w = st->s->c->w;
	struct h1_limits hl = {PROXY_HIGH_WATER, PROXY_HIGH_WATER, H1_MAX_HEADERS};
	struct h1_message *m = w->msg;  /* free here: h2srv_pump runs outside every parse */
	size_t len = evbuffer_get_length(st->out);
	const char *err = NULL, *method = st->head_req ? "HEAD" : "GET";
	nghttp2_nv nva[H1_MAX_HEADERS + 5];
	struct h2conv_nvbuf nb = {nva, H1_MAX_HEADERS + 5, 0, (char *)w->scratch, w->scratch_cap, 0};
	unsigned flags = 0;
	int n, has_body;

again:
	len = evbuffer_get_length(st->out);
	if (len == 0)
		return 0;
	n = h1_parse_response((const char *)evbuffer_pullup(st->out, -1), len, &hl, method, strlen(method), m, &err);
	if (n == -2)
		return 0;
	if (n < 0) {
		log_warnx("c%llu: stream %d: our own response head did not parse: %s", (unsigned long long)st->s->c->id,
		          (int)st->id, err ? err : "?");
		return -1;
	}
	if (n > 0 && m->status < 200) {  /* an interim answer (100 Continue, 103): HEADERS without END_STREAM */
		nb.nvlen = nb.buf_len = 0;
		if (h2conv_response_to_nv(m, 0, 0, &nb, &err) != 0 ||
		    nghttp2_submit_headers(st->s->ng, NGHTTP2_FLAG_NONE, st->id, NULL, nb.nva, nb.nvlen, NULL) < 0)
			return -1;
		evbuffer_drain(st->out, (size_t)n);
		goto again;
	}
	has_body = m->framing != H1_BODY_NONE;
	if (m->framing == H1_BODY_LENGTH)
		flags |= H2CONV_NV_KEEP_CONTENT_LENGTH;  /* the relay sends exactly that: a truncation shows */
	if (st->no_index)
		flags |= H2CONV_NV_NO_INDEX;
	if (h2conv_response_to_nv(m, has_body, flags, &nb, &err) != 0) {
		log_warnx("c%llu: stream %d: response head not sent: %s", (unsigned long long)st->s->c->id, (int)st->id,
		          err);
		return -1;
	}
	/* the nv point into <out>: submit copies them before the head is drained */
	if (nghttp2_submit_response(st->s->ng, st->id, nb.nva, nb.nvlen,
	                            has_body ? &(nghttp2_data_provider){{.ptr = st}, data_read} : NULL) != 0)
		return -1;
	st->head_sent = 1;
	evbuffer_drain(st->out, (size_t)n);
	if (!has_body)
		st->out_eof = 1;
	return 0;
}

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
		refusal_submit(st);
		return;
	}
	if (!st->head_sent && evbuffer_get_length(st->out) > 0 && submit_head(st) != 0) {
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
	struct h2stream *st = vc->h2;

	if (st == NULL)
		return;
	st->vc = NULL;
	vc->in = vc->out = NULL;  /* ours */
	vc->h2 = NULL;
	st->consume += st->data_unconsumed;
	st->data_unconsumed = 0;
	st->pending = 1;
	cio_kick(st->s->c);
	/* a request that ended in order (CLOSING: its answer complete) ends the stream; anything else resets it */
	if (vc->state == CONN_S_CLOSING)
		st->out_eof = 1;
	else if (!st->out_eof)
		stream_reset(st, NGHTTP2_INTERNAL_ERROR);
}

void
h2srv_trailers(struct conn *vc, struct evbuffer *lines)
{
	struct h2stream *st = vc->h2;

	if (st == NULL || st->reset || st->want_reset) {
		evbuffer_drain(lines, evbuffer_get_length(lines));
		return;
	}
	if (st->trailers == NULL && (st->trailers = evbuffer_new()) == NULL)
		fatalx("out of memory");
	evbuffer_add_buffer(st->trailers, lines);
}

void
h2srv_stream_abort(struct conn *vc)
{
	struct h2stream *st = vc->h2;

	if (st != NULL)
		stream_reset(st, NGHTTP2_INTERNAL_ERROR);
}

#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"  /* RFC 6455 1.3 */

int
h2srv_ws_accept_check(struct conn *vc, const struct h1_message *m)
{
	struct h2stream *st = vc->h2;
	const struct h1_header *a = h1_find_header(m, "sec-websocket-accept");
	unsigned char in[H2CONV_WS_KEY_LEN + sizeof(WS_GUID) - 1], md[EVP_MAX_MD_SIZE];
	unsigned char want[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
	unsigned int mdlen = 0;
	int n;

	if (st == NULL || !st->ws || a == NULL)
		return -1;
	memcpy(in, st->ws_key, H2CONV_WS_KEY_LEN);
	memcpy(in + H2CONV_WS_KEY_LEN, WS_GUID, sizeof(WS_GUID) - 1);
	if (EVP_Digest(in, sizeof(in), md, &mdlen, EVP_sha1(), NULL) != 1)
		return -1;
	n = EVP_EncodeBlock(want, md, (int)mdlen);
	if (n <= 0 || (size_t)n != a->value_len || memcmp(want, a->value, (size_t)n) != 0)
		return -1;
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
	uint32_t l[2] = {(uint32_t)nlen, (uint32_t)vlen};

	(void)flags;
	if (st == NULL || f->hd.type != NGHTTP2_HEADERS)
		return 0;
	if (f->headers.cat != NGHTTP2_HCAT_REQUEST && f->headers.cat != NGHTTP2_HCAT_HEADERS)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	if (f->headers.cat == NGHTTP2_HCAT_HEADERS && st->vc == NULL && !st->starting)
		return 0;  /* trailers of a stream no pipeline reads (refused, or its answer done): ignored */
	/* trailers are bounded like the head (the head's fields are gone by then) */
	if (st->nfields == H2_FIELDS_MAX ||
	    evbuffer_get_length(st->hdr) + nlen + vlen > (size_t)s->c->w->gw->cfg->limits.header_bytes)
		return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
	evbuffer_add(st->hdr, l, sizeof(l));
	evbuffer_add(st->hdr, name, nlen);
	evbuffer_add(st->hdr, value, vlen);
	st->nfields++;
	return 0;
}

/* nghttp2 drops a field it finds invalid and delivers the rest: refuse the stream instead. */
static int
on_invalid_header(nghttp2_session *ng, const nghttp2_frame *f, const uint8_t *name, size_t nlen,
                  const uint8_t *value, size_t vlen, uint8_t flags, void *arg)
{
	(void)ng;
	(void)f;
	(void)name;
	(void)nlen;
	(void)value;
	(void)vlen;
	(void)flags;
	(void)arg;
	return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
}

/* The collected header block as an nv list (views into <hdr>, valid until it is drained). */
static void
hdr_nva(struct h2stream *st, nghttp2_nv *nva)
{
	uint8_t *b = evbuffer_pullup(st->hdr, -1);
	size_t i, off = 0;
	uint32_t l[2];

	for (i = 0; i < st->nfields; i++) {
		memcpy(l, b + off, sizeof(l));
		nva[i] = (nghttp2_nv){b + off + 8, b + off + 8 + l[0], l[0], l[1], 0};
		off += 8 + l[0] + l[1];
	}
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

	hdr_nva(st, nva);
	if (h2conv_request_to_h1(nva, st->nfields, &o, head, p->w->scratch_cap < lim->header_bytes ? p->w->scratch_cap
	                                                                                            : lim->header_bytes,
	                         &hlen, &info, &e) != 0) {
		if (e.malformed) {
			stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
			return;
		}
		stream_refuse(st, e.status, e.reason);
		return;
	}
	if (info.websocket) {
		/* the key the upstream's 101 must answer (h2srv_ws_accept_check); only we write this name capitalised */
		const char *k = memmem(head, hlen, "\r\nSec-WebSocket-Key: ", 21);

		if (!info.ws_key_generated || k == NULL || (size_t)(k - head) + 21 + H2CONV_WS_KEY_LEN > hlen) {
			stream_refuse(st, 500, "no WebSocket key");
			return;
		}
		memcpy(st->ws_key, k + 21, H2CONV_WS_KEY_LEN);
		st->ws = 1;
	}
	hdr_clear(st);
	st->chunked = info.chunked;
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
		stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
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
	hdr_nva(st, nva);
	if (h2conv_trailers_to_h1(nva, st->nfields, H2_FIELDS_MAX, out,
	                          p->w->scratch_cap < lim->header_bytes ? p->w->scratch_cap : lim->header_bytes, &len,
	                          &e) != 0) {
		log_info("c%llu: stream %d: request trailers refused: %s", (unsigned long long)p->id, (int)st->id, e.reason);
		hdr_clear(st);
		stream_reset(st, NGHTTP2_PROTOCOL_ERROR);
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

	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (double)(now.tv_sec - s->reset_t.tv_sec) + (double)(now.tv_nsec - s->reset_t.tv_nsec) / 1e9;
	s->reset_t = now;
	s->reset_tokens += dt * H2_RESETS_OURS_RATE;
	if (s->reset_tokens > H2_RESETS_OURS_BURST)
		s->reset_tokens = H2_RESETS_OURS_BURST;
	s->reset_tokens -= 1.0;
	if (s->reset_tokens < 0.0 && nghttp2_session_want_read(s->ng)) {
		log_info("c%llu: HTTP/2 client reset streams too fast: GOAWAY (ENHANCE_YOUR_CALM)",
		         (unsigned long long)s->c->id);
		nghttp2_session_terminate_session(s->ng, NGHTTP2_ENHANCE_YOUR_CALM);
	}
}

static int
on_frame_recv(nghttp2_session *ng, const nghttp2_frame *f, void *arg)
{
	struct h2stream *st;

	if (f->hd.type == NGHTTP2_RST_STREAM) {
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
			evbuffer_add(st->in, "0\r\n\r\n", 5);
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
	if (st == NULL || (st->vc == NULL && !st->starting)) {
		/* nobody reads it: give the window back (h2srv_pump; not from inside this callback) */
		if (st != NULL)
			st->consume += len;
		else
			((struct h2srv *)arg)->consume_conn += len;
		return 0;
	}
	if (st->chunked)
		evbuffer_add_printf(st->in, "%zx\r\n", len);
	evbuffer_add(st->in, data, len);
	if (st->chunked)
		evbuffer_add(st->in, "\r\n", 2);
	st->data_unconsumed += len;
	if (st->vc != NULL)
		conn_pump(st->vc);
	return 0;
}

static int
on_stream_close(nghttp2_session *ng, int32_t id, uint32_t code, void *arg)
{
	struct h2stream *st = nghttp2_session_get_stream_user_data(ng, id);

	(void)code;
	if (st != NULL) {
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
	clock_gettime(CLOCK_MONOTONIC, &s->reset_t);
	if (nghttp2_session_callbacks_new(&cb) != 0 || nghttp2_option_new(&opt) != 0)
		fatalx("out of memory");
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_invalid_header_callback(cb, on_invalid_header);
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
	c->h2 = s;
	c->h2_conn = 1;
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
	struct h2srv *s = c->h2;
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
			nghttp2_session_terminate_session(s->ng, NGHTTP2_PROTOCOL_ERROR);
			evbuffer_drain(in, n);
		} else {
			evbuffer_drain(in, (size_t)r);
		}
		conn_arm_timer(c, http_limits(c)->idle_ms);
	}
	for (round = 0; more && round < H2_PUMP_ROUNDS && c->state == CONN_S_H2; round++) {
		more = 0;
		if (s->consume_conn > 0) {
			nghttp2_session_consume_connection(s->ng, s->consume_conn);
			s->consume_conn = 0;
		}
		LIST_FOREACH(st, &s->streams, link)
			stream_service(st);
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
	if ((!nghttp2_session_want_read(s->ng) && !nghttp2_session_want_write(s->ng)) || c->client_eof) {
		conn_set_state(c, CONN_S_CLOSING);
		conn_arm_timer(c, cio_out_len(c) > 0 ? 5000 : 0);
	}
}

void
h2srv_free(struct conn *c)
{
	struct h2srv *s = c->h2;
	struct h2stream *st;

	if (s == NULL || !c->h2_conn)
		return;
	while ((st = LIST_FIRST(&s->streams)) != NULL) {
		nghttp2_session_set_stream_user_data(s->ng, st->id, NULL);
		stream_free(st);
	}
	nghttp2_session_del(s->ng);
	free(s);
	c->h2 = NULL;
}
