/*
 * proxy/session/resp_head.c - the upstream's response head for the request
 * in flight (session.h: relay_response_head): parsed within the limits,
 * a stale pooled connection's request sent again when it may be, interim
 * responses relayed, the credential module's response rules and the MCP
 * filter begun, the head re-framed for the client, a WebSocket 101
 * checked and switched to a tunnel.
 */
#include <string.h>
#include <stdlib.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/session/session.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"
#include "audit/writer.h"

#define RESP_HEAD_MIN 32768

/*
 * May the request of <c> be sent again on a fresh connection, its upstream having ended before a byte of the
 * answer? Only what the upstream cannot have acted on, or may see twice: an h2 stream still marked reused was
 * refused unprocessed (REFUSED_STREAM, or beyond a GOAWAY: h2up.c; RFC 9113, section 8.7); on a pooled HTTP/1.1
 * connection the upstream may have read the request before it closed, so only a request that came without a body
 * and whose method is idempotent goes again (RFC 9110, section 9.2.2: a proxy MUST NOT automatically retry
 * non-idempotent requests). A held body (MCP, semantic rules, the secret scan) is forwarded inside up_head with
 * r->body set to H1_BODY_NONE, so r->body alone cannot tell: r->up_no_reuse says whether it came with one.
 */
static int
retry_allowed(const struct conn *c)
{
	static const char *const idempotent[] = {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"};
	const struct req *r = c->req;
	size_t i;

	if (!c->up->reused || r->up_head == NULL || r->body != H1_BODY_NONE || r->head_copy_sent)
		return 0;
	if (c->up->h2s != NULL)
		return 1;
	if (r->up_no_reuse)
		return 0;
	for (i = 0; i < sizeof(idempotent) / sizeof(idempotent[0]); i++)
		if (strcmp(r->method, idempotent[i]) == 0)
			return 1;
	return 0;
}

int
relay_response_head(struct conn *c)
{
	const struct policy_limits *lim = conn_limits(c);
	/* bounded by the upstream's read watermark, or a larger head would stall instead of failing */
	size_t maxh = lim->header_bytes > RESP_HEAD_MIN ? lim->header_bytes : RESP_HEAD_MIN;

	if (maxh > PROXY_HIGH_WATER - 1)
		maxh = PROXY_HIGH_WATER - 1;
	struct h1_limits hl = {maxh, maxh, H1_MAX_HEADERS};
	struct evbuffer *uin = bufferevent_get_input(c->up->bev), *cout = cio_out(c), *hout;
	struct h1_message *m = c->w->msg;
	struct req *r = c->req;
	size_t len = evbuffer_get_length(uin), cap = len < maxh + 1 ? len : maxh + 1;
	const struct h1_header *cl;
	const char *err = NULL, *head;
	int n, mk;

	if (len == 0) {
		if (c->up_eof) {
			if (retry_allowed(c)) {
				/* a pooled connection the upstream had closed: dial afresh, once */
				struct refusal rf;

				r->head_copy_sent = 1;
				upstream_free(c->up);
				c->up = NULL;
				if (relay_dial(c, &rf) != 0)
					http_refuse(c, &rf);
				return 1;
			}
			relay_abort(c, "upstream closed before responding", 502);
			return 1;
		}
		return 0;
	}
	head = (const char *)evbuffer_pullup(uin, (ev_ssize_t)cap);
	n = h1_parse_response(head, cap, &hl, r->method, r->method_len, m, &err);
	if (n == -2) {
		if (len > maxh) {
			relay_abort(c, "upstream response head too large", 502);
			return 1;
		}
		if (c->up_eof) {
			relay_abort(c, "upstream closed inside the response head", 502);
			return 1;
		}
		return 0;
	}
	if (n < 0) {
		char why[160];
		snprintf(r->rule_buf, sizeof(r->rule_buf), "malformed upstream response: %s", err ? err : "?");
		memcpy(why, r->rule_buf, sizeof(why) < sizeof(r->rule_buf) ? sizeof(why) : sizeof(r->rule_buf));
		relay_abort(c, r->rule_buf, 502);
		return 1;
	}
	if (m->status < 200) {
		if (m->status == 101 && r->websocket) {
			if (conn_ops(c)->ws_accept_check(c, m) != 0) {
				/* the key was ours (HTTP/2 has none): an upstream that did not answer it did not upgrade */
				evbuffer_drain(uin, (size_t)n);
				relay_abort(c, "upstream's Sec-WebSocket-Accept does not answer the key", 502);
				return 1;
			}
			/* from a host secrets are bound to, its answer's head is scrubbed like any other */
			hout = r->cred->hscrub != NULL ? evbuffer_new() : cout;
			if (conn_ops(c)->ws_as_200) {
				/* RFC 8441: the stream answers 200 (no 101 in HTTP/2) and then carries the byte stream */
				evbuffer_add(hout, SLUICE_LIT("HTTP/1.1 200 OK\r\n"));
				http_copy_headers(hout, m, "sec-websocket-accept", NULL);
			} else {
				h1_out_status(hout, 101, m->reason, m->reason_len);
				http_copy_headers(hout, m, NULL, NULL);
				evbuffer_add(hout, SLUICE_LIT("Connection: Upgrade\r\n"));
				if ((cl = h1_find_header(m, "upgrade")) != NULL)
					http_append_header(hout, cl);
			}
			evbuffer_add(hout, SLUICE_LIT("\r\n"));
			evbuffer_drain(uin, (size_t)n);
			if (hout != cout) {
				int sr = cred_resp_scrub_head(c, hout, cout);
				evbuffer_free(hout);
				if (sr != 0) {
					relay_abort(c, "cannot scrub the response", 502);
					return 1;
				}
			}
			r->status = 101;
			http_audit_request(c, AUDIT_VERDICT_ALLOW);
			conn_set_state(c, CONN_S_TUNNEL);
			conn_arm_timer(c, lim->idle_ms);
			if (ws_tunnel_start(c) != 0) {
				conn_close(c);
				return 1;
			}
			tunnel_pump(c);
			return 1;
		}
		if (m->status == 101) {
			evbuffer_drain(uin, (size_t)n);
			relay_abort(c, "upstream switched protocols without an upgrade request", 502);
			return 1;
		}
		if (r->minor_version == 1 || conn_ops(c)->interim) {  /* interim responses (100, 103): HTTP/1.1 and h2 clients */
			/* a 103's Link fields, or any field of a 1xx, can echo a value too */
			hout = r->cred->hscrub != NULL ? evbuffer_new() : cout;
			h1_out_status(hout, m->status, m->reason, m->reason_len);
			http_copy_headers(hout, m, NULL, NULL);
			evbuffer_add(hout, SLUICE_LIT("\r\n"));
			if (hout != cout) {
				int sr = cred_resp_scrub_head(c, hout, cout);
				evbuffer_free(hout);
				if (sr != 0) {
					evbuffer_drain(uin, (size_t)n);
					relay_abort(c, "cannot scrub the response", 502);
					return 1;
				}
			}
		}
		evbuffer_drain(uin, (size_t)n);
		return 1;
	}
	if (r->websocket && conn_ops(c)->ws_as_200 && m->status < 300) {
		/* to an extended CONNECT a 2xx means "tunnel open": only a checked 101 may say that */
		evbuffer_drain(uin, (size_t)n);
		relay_abort(c, "upstream answered the WebSocket upgrade without switching protocols", 502);
		return 1;
	}
	if (m->status == 206 && r->cred->hscrub != NULL) {
		/*
		 * Range and If-Range never reach a host secrets are bound to (http.c):
		 * a 206 nobody asked for is a piece the sandbox could stitch a value
		 * from, each too short to be scrubbed.
		 */
		evbuffer_drain(uin, (size_t)n);
		relay_abort(c, "a partial response (206) from a host secrets are bound to", 502);
		return 1;
	}
	/* an MCP answer is filtered (judge/mcp_resp.c): one that cannot be is refused before its head goes out */
	if ((mk = mcp_resp_begin(c, m)) < 0) {
		evbuffer_drain(uin, (size_t)n);
		r->client_keep_alive = 0;
		relay_abort(c, "an MCP answer that cannot be filtered (a Content-Encoding other than identity)", 502);
		return 1;
	}
	r->status = m->status;
	if (m->status == 401)  /* an expired token: mint a new one (exec: sources) */
		for (size_t i = 0; i < r->cred->nuses; i++)
			cred_entry_rejected(r->cred->uses[i].e);
	r->resp_body = m->framing;
	r->resp_left = m->content_length;
	/*
	 * a body on GET, HEAD or OPTIONS (get_bodies: allow) may be one the upstream ignored and would read as the
	 * next request: the connection is not pooled after it
	 */
	r->upstream_keep_alive = m->keep_alive && m->framing != H1_BODY_UNTIL_CLOSE &&
	                         !(r->up_no_reuse && (r->is_head || strcmp(r->method, "GET") == 0 ||
	                                              strcmp(r->method, "OPTIONS") == 0));
	h1_chunked_init(&r->resp_chunk, PROXY_TRAILER_MAX);
	/* from a host secrets are bound to, the head is built aside and scrubbed on its way out (credresp.c) */
	hout = r->cred->hscrub != NULL || mk != MCP_RESP_NONE ? evbuffer_new() : cout;
	h1_out_status(hout, m->status, m->reason, m->reason_len);
	if ((r->cred->hscrub != NULL || mk != MCP_RESP_NONE) && m->framing != H1_BODY_NONE) {
		/*
		 * the body is decoded and scrubbed, or filtered: lengths change, so it goes out chunked, unencoded;
		 * a small unencoded one (an MCP JSON answer, up to its bound) is held whole and keeps a
		 * Content-Length (credresp.c, relay_mcp)
		 */
		http_copy_headers(hout, m, "content-encoding", NULL);
		if (mk == MCP_RESP_JSON || (mk == MCP_RESP_NONE && cred_resp_holds(m))) {
			r->cred->scrub_whole = r->cred->hscrub != NULL;
		} else if (r->minor_version == 1) {
			evbuffer_add(hout, SLUICE_LIT("Transfer-Encoding: chunked\r\n"));
			r->cred->scrub_chunked = r->cred->hscrub != NULL;
			if (mk != MCP_RESP_NONE)
				mcp_resp_frame(r)->chunked = r->cred->hscrub == NULL;
		} else {
			r->client_keep_alive = 0;
		}
		goto framed;
	}
	http_copy_headers(hout, m, NULL, NULL);
	switch (m->framing) {
	case H1_BODY_LENGTH:
		h1_out_uint_field(hout, SLUICE_LIT("Content-Length"), m->content_length, 0);
		break;
	case H1_BODY_CHUNKED:
	case H1_BODY_UNTIL_CLOSE:
		if (r->minor_version == 1) {
			evbuffer_add(hout, SLUICE_LIT("Transfer-Encoding: chunked\r\n"));
			r->resp_chunked_out = 1;
		} else {
			r->client_keep_alive = 0;
		}
		break;
	case H1_BODY_NONE:
		cl = h1_find_header(m, "content-length");
		if (r->is_head || m->status == 204 || m->status == 304) {
			if (cl != NULL && m->status != 204)
				http_append_header(hout, cl);
		} else {
			evbuffer_add(hout, SLUICE_LIT("Content-Length: 0\r\n"));
		}
		break;
	}
framed:
	if (!r->client_keep_alive)
		evbuffer_add(hout, SLUICE_LIT("Connection: close\r\n"));
	evbuffer_add(hout, SLUICE_LIT("\r\n"));
	if (hout != cout && r->cred->hscrub == NULL) {
		/* filtered, not scrubbed: a JSON answer's head waits for its new length (relay_mcp), a stream's goes */
		if (mk == MCP_RESP_JSON) {
			struct mcp_frame *f = mcp_resp_frame(r);

			if ((f->head = evbuffer_new()) == NULL)
				fatalx("out of memory");
			evbuffer_remove_buffer(hout, f->head, evbuffer_get_length(hout) - 2);
		} else {
			evbuffer_add_buffer(cout, hout);
		}
		evbuffer_free(hout);
	} else if (hout != cout) {
		int sr = cred_resp_head(c, hout, m, cout);
		evbuffer_free(hout);
		if (sr != 0) {
			evbuffer_drain(uin, (size_t)n);
			r->client_keep_alive = 0;
			r->status = 0;  /* nothing of the head went out: the client gets a 502 */
			relay_abort(c, sr == -2 ? "the response's Content-Encoding cannot be scrubbed" : "cannot scrub the response",
			            502);
			return 1;
		}
	}
	evbuffer_drain(uin, (size_t)n);
	r->resp = m->framing == H1_BODY_NONE ? RESP_S_DONE : RESP_S_BODY;
	return 1;
}
