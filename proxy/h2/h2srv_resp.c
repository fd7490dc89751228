/*
 * proxy/h2/h2srv_resp.c - what a client stream's virtual connection answers,
 * turned into frames: the HTTP/1.0 response head it wrote becomes HEADERS
 * (h2conv_response_to_nv, never-indexed when a secret was injected), the rest
 * is the DATA source, the relay's trailer lines a trailing HEADERS, and the
 * gateway's own refusals a JSON answer.  Also the WebSocket accept check of
 * an extended CONNECT.  Only h2srv_pump (h2srv.c) calls into nghttp2 from
 * here, apart from the data source nghttp2 itself calls.  See h2srv.c for
 * the design.
 */
#include <string.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/sluice.h"
#include "h2srv_int.h"
#include "proxy/codec/ws.h"
#include "proxy/core/context.h"
#include "audit/writer.h"

/* ---- refusals: the gateway's own answer on a stream ---- */

static ssize_t data_read(nghttp2_session *ng, int32_t id, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *arg);

/* The value of pseudo-header <name> in the stream's collected fields, escaped by the audit writer; NULL if none. */
static const char *
field(struct h2stream *st, const char *name, char *buf, size_t cap)
{
	nghttp2_nv nva[H2_FIELDS_MAX];
	size_t i, nl = strlen(name);

	if (st->nfields == 0 || st->nfields > H2_FIELDS_MAX)
		return NULL;
	h2_fields_nva(st->hdr, st->nfields, nva);
	for (i = 0; i < st->nfields; i++)
		if (nva[i].namelen == nl && memcmp(nva[i].name, name, nl) == 0) {
			snprintf(buf, cap, "%.*s", (int)nva[i].valuelen, (const char *)nva[i].value);
			return buf;
		}
	return NULL;
}

void
h2srv_audit_refusal(struct h2stream *st, int status, const char *reason)
{
	struct conn *p = st->s->c;
	char peer[CONN_ADDR_STR], dest[CONN_ADDR_STR], id[32], method[40], path[1024];
	struct audit_rec a;

	if (st->audited)
		return;
	st->audited = 1;
	atomic_fetch_add(&p->w->gw->nrequests, 1);
	atomic_fetch_add(&p->w->gw->ndenied, 1);
	if (!http_refusal_admit(p))
		return;
	snprintf(id, sizeof(id), "%llu-%d", (unsigned long long)p->id, (int)st->id);
	a = AUDIT_REC_INIT(AUDIT_KIND_REQUEST);
	a.sandbox = p->sandbox != NULL ? p->sandbox : conn_peer_str(p, peer);
	a.id = id;
	a.client = conn_peer_str(p, peer);
	a.dest = conn_dest_str(p, dest);
	a.sni = p->sni;
	a.host = p->host[0] ? p->host : NULL;
	a.method = field(st, ":method", method, sizeof(method));
	/* a refused path is not normalised: written as sent (escaped), without its query unless audit.log_query */
	a.path = field(st, ":path", path, sizeof(path));
	a.http_version = "2";
	a.verdict = AUDIT_VERDICT_DENY;
	a.rule = "http2";
	a.reason = reason;
	a.status = status;
	a.conn_id = p->id;
	if (a.path != NULL && !p->w->gw->cfg->audit_log_query)
		path[strcspn(path, "?")] = '\0';
	audit_write(p->w->gw->audit, &a);
}

/* Refuses a stream before any pipeline runs (a translation error): a JSON answer, logged and audited. */
void
h2srv_stream_refuse(struct h2stream *st, int status, const char *reason)
{
	char peer[CONN_ADDR_STR];
	struct conn *p = st->s->c;
	struct evbuffer_ptr e;

	log_info("c%llu: stream %d from %s refused (%d): %s", (unsigned long long)p->id, (int)st->id,
	         conn_peer_str(p, peer), status, reason);
	h2srv_audit_refusal(st, status, reason);
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

void
h2srv_refusal_submit(struct h2stream *st)
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
	/*
	 * A body still coming after the answer: RST_STREAM NO_ERROR stops the
	 * client (RFC 9113 8.1).  When what is left is small and announced (a
	 * short POST that raced the answer) it is let in and discarded instead:
	 * curl 7.88 takes such a reset as an error although it has the answer.
	 */
	if (!st->req_ended && (st->req_left < 0 || st->req_left > H2_STREAM_WINDOW))
		h2srv_stream_reset(st, NGHTTP2_NO_ERROR);
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
int
h2srv_head_submit(struct h2stream *st)
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

void
h2srv_trailers(struct conn *vc, struct evbuffer *lines)
{
	struct h2stream *st = vc->h2.stream;

	if (st == NULL || st->reset || st->want_reset) {
		evbuffer_drain(lines, evbuffer_get_length(lines));
		return;
	}
	if (st->trailers == NULL && (st->trailers = evbuffer_new()) == NULL)
		fatalx("out of memory");
	evbuffer_add_buffer(st->trailers, lines);
}

int
h2srv_ws_accept_check(struct conn *vc, const struct h1_message *m)
{
	struct h2stream *st = vc->h2.stream;
	const struct h1_header *a = h1_find_header(m, "sec-websocket-accept");
	char want[WS_ACCEPT_LEN + 1];

	if (st == NULL || !st->ws || a == NULL || ws_accept(st->ws_key, H2CONV_WS_KEY_LEN, want) != 0)
		return -1;
	return a->value_len == WS_ACCEPT_LEN && memcmp(want, a->value, WS_ACCEPT_LEN) == 0 ? 0 : -1;
}
