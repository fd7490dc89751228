/*
 * proxy/session/relay.c - one request in flight: dial (or reuse) the upstream, send
 * the head, stream the request body up and the response down with
 * backpressure (64 KiB watermarks each way), re-frame chunked and
 * close-delimited bodies, MCP answers through their filter, byte tunnels,
 * and finish or abort the request.  The response head is resp_head.c's.
 */
#include <string.h>
#include <stdlib.h>
#include <event2/buffer.h>
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/session/session.h"
#include "proxy/core/refusal.h"
#include "proxy/session/conn_ops.h"
#include "proxy/judge/semantic.h"
#include "proxy/store/store.h"
#include "proxy/core/context.h"
#include "proxy/core/h1_out.h"
#include "audit/writer.h"

static void dial_done(struct upstream *up, const char *err, int status, void *arg);

static void
up_readcb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_pump(arg);
}

static void
up_writecb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	conn_pump(arg);
}

static void
up_eventcb(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	http_upstream_event(arg, what);
}

void
http_upstream_event(struct conn *c, short what)
{
	if (!(what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT)))
		return;
	c->up_eof = 1;
	conn_pump(c);
}

static void send_head(struct conn *c);
static int dial_failed(struct conn *c, const char *err, int status, struct refusal *rf);

/* The request's record is in the audit file: its head may go upstream now. */
static void
relay_resume(void *arg)
{
	struct conn *c = arg;
	struct refusal rf;

	if (c->req == NULL || !c->req->audit_parked)
		return;
	c->req->audit_parked = 0;
	if (c->state != CONN_S_DIAL || c->up == NULL)
		return;
	if (revoke_send_check(c, &rf) != 0) {  /* revoked while its record was written */
		http_refuse(c, &rf);  /* an event's outermost frame (refusal.h) */
		return;
	}
	send_head(c);
	relay_pump(c);
}

/*
 * The upstream is ready.  The first byte of the request goes up only once
 * its audit record is in the file (docs/audit-schema.md): until then the
 * request waits here, parked, with the connection's other work going on.
 * 1 when the head went out, 0 when parked (relay_resume follows), -1 refused (<rf>).
 */
static int
start_relay(struct conn *c, struct refusal *rf)
{
	struct req *r = c->req;

	/* injected values leave only under facts still current: revoked since it was judged, it is refused */
	if (revoke_send_check(c, rf) != 0)
		return -1;
	relay_own_upstream(c);
	c->up_eof = 0;
	if (audit_park(c->w->gw->audit, r->audit_seq, relay_resume, c) == 0) {
		r->audit_parked = 1;
		return 0;
	}
	send_head(c);
	return 1;
}

static void
send_head(struct conn *c)
{
	struct req *r = c->req;
	struct evbuffer *uout = bufferevent_get_output(c->up->bev);
	size_t n = evbuffer_get_length(r->up_head);

	c->up->no_index = r->cred->nuses > 0;  /* an h2 upstream never indexes a head that carries secrets */
	bufferevent_setwatermark(c->up->bev, EV_WRITE, PROXY_HIGH_WATER / 2, 0);
	bufferevent_setwatermark(c->up->bev, EV_READ, 0, PROXY_HIGH_WATER);
	/* keep the head for one resend if a pooled connection turns out stale */
	evbuffer_add(uout, evbuffer_pullup(r->up_head, -1), n);
	conn_set_state(c, CONN_S_RELAY);
	r->resp = RESP_S_HEAD;
	r->body_done = r->body_done || r->body == H1_BODY_NONE;  /* a git push's body may be whole already (semantic.c) */
	if (r->sem != NULL)
		sem_sent(r);
	conn_arm_timer(c, conn_limits(c)->body_ms);
	cio_read(c, 1);
	r->up_queued = evbuffer_get_length(uout);
}

void
relay_own_upstream(struct conn *c)
{
	upstream_set_owner(c->up, up_readcb, up_writecb, up_eventcb, c);
}

int
relay_dial(struct conn *c, struct refusal *rf)
{
	int allow_private = c->entry != NULL && policy_host_allow_private(c->entry);
	char tenant[UPSTREAM_TENANT_MAX];
	unsigned alpn = 0;
	int rc;

	/*
	 * The upstream is offered what the client offered of h2 and http/1.1.  A
	 * WebSocket upgrade is dialled as HTTP/1.1, unless the worker already has
	 * an h2 session to the host that allows extended CONNECT (RFC 8441).
	 */
	if (c->tls) {
		alpn = (c->alpn_h1 || !c->alpn_h2) ? UPSTREAM_ALPN_H1 : 0;
		if (c->alpn_h2)
			alpn |= c->req->websocket ? UPSTREAM_ALPN_WS : UPSTREAM_ALPN_H2;
		if (c->req->websocket)
			alpn |= UPSTREAM_ALPN_H1;
		if (alpn == 0)
			alpn = UPSTREAM_ALPN_H1;
	}

	/* allowed: the limits of its rule and secrets (429, or 503 when they cannot be counted) */
	rc = sem_admit(c, rf);
	if (rc < 0)
		return -1;
	if (rc > 0) {
		/* asked of the shared counters: parked (no read, no dial) until w->sem_hooks->admitted */
		if (c->state != CONN_S_DIAL)
			conn_set_state(c, CONN_S_DIAL);
		cio_read(c, 0);
		conn_arm_timer(c, c->w->gw->store_opts != NULL ? c->w->gw->store_opts->timeout_ms + 1000u : 1000u);
		return 0;
	}
	/* decided and allowed: its record is queued now, and written before its first byte goes up */
	if (!c->req->audit_decided && http_audit_decide(c) != 0)
		return refusal_close(rf, 503, REFUSAL_AUDIT_UNAVAILABLE, "audit",
		                     "the audit log cannot take this request's record: not sent");
	/* between requests a connection holds no upstream: idle ones wait in the worker's pool */
	c->req->upstream_tls = c->tls;
	if (c->state != CONN_S_DIAL)  /* already there when it waited for the shared counters */
		conn_set_state(c, CONN_S_DIAL);
	cio_read(c, 0);
	conn_arm_timer(c, conn_limits(c)->upstream_connect_ms + 1000);
	c->up = upstream_dial(c->w, conn_tenant(c, tenant), c->host, c->port, c->tls, allow_private, alpn, dial_done, c);
	if (c->up->state == UP_S_READY) {
		rc = start_relay(c, rf);
		if (rc < 0)
			return -1;
		if (rc > 0)
			relay_pump(c);
	} else if (c->up->state == UP_S_FAILED) {
		return dial_failed(c, c->up->errbuf, 502, rf);
	}
	return 0;
}

/* The dial failed with <err>: the reason is copied (the answer frees the upstream), -1 with <rf>. */
static int
dial_failed(struct conn *c, const char *err, int status, struct refusal *rf)
{
	snprintf(c->req->rule_buf, sizeof(c->req->rule_buf), "%s", err);
	c->req->refused = c->up->refused;
	upstream_free(c->up);
	c->up = NULL;
	log_info("c%llu: %s", (unsigned long long)c->id, c->req->rule_buf);
	return refusal_set(rf, status ? status : 502, REFUSAL_UPSTREAM_FAILED, "upstream", c->req->rule_buf);
}

static void
dial_done(struct upstream *up, const char *err, int status, void *arg)
{
	struct conn *c = arg;
	struct refusal rf;
	int rc;

	(void)up;
	rc = err != NULL ? dial_failed(c, err, status, &rf) : start_relay(c, &rf);
	if (rc < 0)
		http_refuse(c, &rf);  /* an event's outermost frame (refusal.h) */
	else if (rc > 0)
		relay_pump(c);
}

/*
 * The relay's one exit for a failure one of its events sees: <rf> is answered
 * (the session's http_refuse) while no response head went out to the client,
 * else the exchange is cut (http_truncate, with <rf>'s reason).
 */
static void
relay_fail(struct conn *c, const struct refusal *rf)
{
	struct req *r = c->req;

	log_info("c%llu: %s", (unsigned long long)c->id, rf->reason);
	/* a body held whole to be scrubbed or filtered (an MCP answer): its head never went out */
	if (r->cred->scrub_head != NULL || (r->mcpr != NULL && mcp_resp_frame(r)->head != NULL)) {
		r->resp = RESP_S_HEAD;
		r->status = 0;
	}
	if (r->resp == RESP_S_HEAD && r->status == 0) {
		http_refuse(c, rf);
		return;
	}
	/* the head is out: flush what was relayed, then close so the client sees the truncation (an h2 stream: reset) */
	http_truncate(c, rf->reason);
}

void
relay_abort(struct conn *c, const char *why, int status)
{
	struct refusal rf;

	if (status < 500)
		refusal_close(&rf, status, REFUSAL_BAD_REQUEST, "http", why);
	else
		refusal_close(&rf, status, REFUSAL_UPSTREAM_FAILED, "upstream", why);
	relay_fail(c, &rf);
}

/*
 * An MCP answer's bytes through its filter (judge/mcp_resp.c), then to the
 * scrubber when the host has one (secrets are scrubbed from what leaves),
 * else framed to the client: a JSON answer whole at <end> with its new
 * Content-Length, a stream chunked or as it comes.  0, or -1 when the answer
 * was refused or the stream cut (audited with the reason).
 */
int
relay_mcp(struct conn *c, int end)
{
	struct req *r = c->req;
	struct mcp_frame *f = mcp_resp_frame(r);
	struct evbuffer *out = mcp_resp_out(r), *cout = cio_out(c);
	const char *why = "cannot filter the MCP answer";
	size_t n;

	if (mcp_resp_pump(c, end, &why) != 0) {
		r->client_keep_alive = 0;
		relay_abort(c, why, 502);
		return -1;
	}
	if (r->cred->scrub_st != NULL) {
		evbuffer_add_buffer(r->cred->scrub_in, out);
		return 0;
	}
	n = evbuffer_get_length(out);
	if (f->head != NULL) {
		if (!end)
			return 0;
		evbuffer_add_buffer(cout, f->head);
		evbuffer_free(f->head);
		f->head = NULL;
		h1_out_uint_field(cout, SLUICE_LIT("Content-Length"), n, 1);
		evbuffer_add_buffer(cout, out);
		return 0;
	}
	if (n > 0 && f->chunked)
		h1_out_chunk_size(cout, n);
	evbuffer_add_buffer(cout, out);
	if (n > 0 && f->chunked)
		evbuffer_add(cout, SLUICE_LIT("\r\n"));
	if (end && f->chunked)
		evbuffer_add(cout, SLUICE_LIT("0\r\n\r\n"));
	return 0;
}

static void
finish_request(struct conn *c)
{
	struct req *r = c->req;
	int keep_up = r->upstream_keep_alive && r->body_done && !c->up_eof;

	http_audit_request(c, AUDIT_VERDICT_ALLOW);
	if (keep_up)
		upstream_release(c->up);
	else
		upstream_free(c->up);
	c->up = NULL;
	http_next_request(c, r->client_keep_alive && r->body_done);
}

/*
 * The chunked response body ended (not scrubbed: cred_resp_pump ends those):
 * its trailers go where the client can take them.  An HTTP/1.1 client gets
 * the last chunk with them, an h2 stream a trailing HEADERS frame, and an
 * HTTP/1.0 client nothing: no framing of its can carry them.
 */
static void
resp_body_end(struct conn *c)
{
	struct req *r = c->req;
	struct evbuffer *cout = cio_out(c), *t = r->resp_trailers;

	if (r->resp_chunked_out) {
		evbuffer_add(cout, SLUICE_LIT("0\r\n"));
		if (t != NULL)
			evbuffer_add_buffer(cout, t);
		evbuffer_add(cout, SLUICE_LIT("\r\n"));
	} else if (t != NULL && evbuffer_get_length(t) > 0) {
		(void)conn_ops(c)->trailers(c, t);  /* an h2 stream: a trailing HEADERS frame; HTTP/1.0: dropped */
	}
	if (t != NULL)
		evbuffer_drain(t, evbuffer_get_length(t));
}

void
relay_pump(struct conn *c)
{
	struct req *r = c->req;
	struct evbuffer *cin, *cout, *uin, *uout, *bout, *qout;
	const char *err = NULL;
	int progress = 1, p;

	while (progress && c->state == CONN_S_RELAY) {
		progress = 0;
		/*
		 * the client side failed (a reset, a TLS alert, a write that found it gone): what is relayed now is dropped
		 * unread (cio.c), and an upstream that never ends its answer (an SSE stream) would be read for nobody until
		 * it does; the exchange ends here, the upstream connection with it
		 */
		if (c->io_dead) {
			http_truncate(c, "the client went away during the exchange");
			return;
		}
		cin = cio_in(c);
		cout = cio_out(c);
		uin = bufferevent_get_input(c->up->bev);
		uout = bufferevent_get_output(c->up->bev);
		/* request body, upward */
		/* with secrets declared, the body goes through the placeholder search (credreq.c) */
		qout = r->cred->scan != NULL ? r->cred->scan_in : uout;
		while (!r->body_done && evbuffer_get_length(uout) < PROXY_HIGH_WATER && evbuffer_get_length(cin) > 0) {
			p = req_body_move(c, cin, qout, qout == uout, &err);
			if (p < 0) {
				relay_abort(c, "malformed chunked request body", 400);
				return;
			}
			if (p == 0)
				break;
			progress = 1;
		}
		if (r->cred->scan != NULL && (evbuffer_get_length(r->cred->scan_in) > r->cred->scan_fed || r->body_done) && !r->cred->scan_done) {
			r->cred->scan_done = r->body_done;
			p = cred_scan_pump(c, uout, r->body_done);
			if (p != 0) {
				struct refusal rf;

				if (p < 0)
					refusal_close(&rf, 500, REFUSAL_UPSTREAM_FAILED, "upstream",
					              "cannot search the request body");
				else
					/* also while the response head is held to be scrubbed whole (it never went out) */
					refusal_close(&rf, 403, REFUSAL_EXFILTRATION, "secrets", r->rule_buf);
				relay_fail(c, &rf);
				return;
			}
		}
		if (!r->body_done && c->client_eof && evbuffer_get_length(cin) == 0) {
			relay_abort(c, "client closed inside the request body", 400);
			return;
		}
		/* response */
		if (r->resp == RESP_S_HEAD) {
			if (relay_response_head(c) == 0)
				goto wait;
			if (c->state != CONN_S_RELAY)
				return;
			progress = 1;
			continue;
		}
		/*
		 * an MCP answer goes through its filter first (relay_mcp), a scrubbed body through the scrubber's
		 * queue (credresp.c), else straight to the client
		 */
		bout = r->mcpr != NULL ? mcp_resp_in(r) : r->cred->scrub_st != NULL ? r->cred->scrub_in : cout;
		while (r->resp == RESP_S_BODY && evbuffer_get_length(cout) < PROXY_HIGH_WATER &&
		       evbuffer_get_length(bout) < (bout == cout          ? PROXY_HIGH_WATER
		                                    : r->mcpr != NULL ? mcp_resp_queue_max(r)
		                                                      : cred_resp_queue_max(r)) &&
		       evbuffer_get_length(uin) > 0) {
			if (r->resp_body == H1_BODY_LENGTH) {
				if (body_move_counted(uin, bout, &r->resp_left, &r->bytes_down))
					r->resp = RESP_S_DONE;
			} else if (r->resp_body == H1_BODY_CHUNKED) {
				int done = 0;
				p = body_chunked_step(uin, bout, &r->resp_chunk, r->resp_chunked_out, &r->bytes_down, &done,
				                 &r->resp_trailers, &err);
				if (p < 0) {
					relay_abort(c, "malformed chunked response body", 502);
					return;
				}
				if (done) {
					r->resp = RESP_S_DONE;
					if (r->cred->scrub_st == NULL && r->mcpr == NULL)
						resp_body_end(c);
				}
				if (p == 0)
					break;
			} else {  /* until close */
				size_t n = evbuffer_get_length(uin);
				if (r->resp_chunked_out)
					h1_out_chunk_size(cout, n);
				evbuffer_remove_buffer(uin, bout, n);
				if (r->resp_chunked_out)
					evbuffer_add(cout, SLUICE_LIT("\r\n"));
				r->bytes_down += n;
			}
			progress = 1;
			if (r->mcpr != NULL && relay_mcp(c, 0) != 0)
				return;
			if (r->cred->scrub_st != NULL && cred_resp_pump(c, 0) != 0) {
				relay_abort(c, "cannot decode the response body to scrub it", 502);
				return;
			}
		}
		if (r->resp == RESP_S_BODY && c->up_eof && evbuffer_get_length(uin) == 0) {
			if (r->resp_body != H1_BODY_UNTIL_CLOSE) {
				relay_abort(c, "upstream closed inside the response body", 502);
				return;
			}
			if (r->resp_chunked_out)
				evbuffer_add(cout, SLUICE_LIT("0\r\n\r\n"));
			r->resp = RESP_S_DONE;
		}
		if (r->mcpr != NULL && relay_mcp(c, r->resp == RESP_S_DONE) != 0)
			return;
		if (r->cred->scrub_st != NULL && cred_resp_pump(c, r->resp == RESP_S_DONE) != 0) {
			relay_abort(c, "cannot decode the response body to scrub it", 502);
			return;
		}
		if (r->resp == RESP_S_DONE) {
			if (!r->body_done) {  /* answered before the body ended: neither side can be reused */
				r->client_keep_alive = 0;
				r->upstream_keep_alive = 0;
				r->body_done = 1;
			}
			finish_request(c);
			return;
		}
	}
wait:
	if (progress) {
		conn_arm_timer(c, conn_limits(c)->body_ms);
		r->up_queued = evbuffer_get_length(bufferevent_get_output(c->up->bev));
	}
	relay_backpressure(c);
}

int
relay_up_progress(struct conn *c)
{
	struct req *r = c->req;
	size_t q;

	if (r == NULL || c->up == NULL || c->up->bev == NULL)
		return 0;
	q = evbuffer_get_length(bufferevent_get_output(c->up->bev));
	if (q == 0 || q >= r->up_queued)
		return 0;
	r->up_queued = q;
	return 1;
}

static void
tunnel_resume(void *arg)
{
	conn_pump(arg);
}

void
tunnel_pump(struct conn *c)
{
	struct evbuffer *cin, *cout, *uin, *uout;

	if (c->state != CONN_S_TUNNEL || c->up == NULL)
		return;
	/* a passthrough moves nothing before the connection record that allowed it is written */
	if (c->req == NULL && audit_conn_gate(c->w->gw->audit, c->id, tunnel_resume, c))
		return;
	if (c->req != NULL && c->req->ws != NULL) {
		ws_tunnel_pump(c);
		return;
	}
	cin = cio_in(c);
	cout = cio_out(c);
	uin = bufferevent_get_input(c->up->bev);
	uout = bufferevent_get_output(c->up->bev);
	if (evbuffer_get_length(cin) > 0 || evbuffer_get_length(uin) > 0)
		conn_arm_timer(c, conn_limits(c)->idle_ms);
	if (evbuffer_get_length(uout) < PROXY_HIGH_WATER)
		evbuffer_remove_buffer(cin, uout, PROXY_HIGH_WATER - evbuffer_get_length(uout));
	if (evbuffer_get_length(cout) < PROXY_HIGH_WATER)
		evbuffer_remove_buffer(uin, cout, PROXY_HIGH_WATER - evbuffer_get_length(cout));
	if ((c->client_eof && evbuffer_get_length(cin) == 0) || (c->up_eof && evbuffer_get_length(uin) == 0)) {
		tunnel_end(c);
		return;
	}
	relay_backpressure(c);
}

void
tunnel_end(struct conn *c)
{
	/* one side ended: flush what the client is owed, then close both */
	conn_set_state(c, CONN_S_CLOSING);
	conn_arm_timer(c, 5000);
	conn_pump(c);
}

void
relay_backpressure(struct conn *c)
{
	/* a side reads only while the other side's queue is short */
	cio_read(c, evbuffer_get_length(bufferevent_get_output(c->up->bev)) < PROXY_HIGH_WATER);
	if (cio_out_len(c) < PROXY_HIGH_WATER)
		bufferevent_enable(c->up->bev, EV_READ);
	else
		bufferevent_disable(c->up->bev, EV_READ);
}

