/*
 * proxy/session/wstunnel.c - an upgraded WebSocket connection, frame by frame, when
 * the policy declares secrets (issue 3, section 5).
 *
 * Client frames: the unmasked payload of every frame (data and control, one
 * continuous search across frames, messages and reads) is searched for the
 * placeholder of every secret of the policy, in its decoded views too
 * (secrets/detect.h, ph_stream: percent-decoded once and twice, JSON
 * unescaped; base64 and base64url forms), since a placeholder is refused
 * in whatever form it is written.  Frames go upstream unchanged,
 * byte for byte, as soon as their payload is decided; bytes that may begin a
 * placeholder wait in the client input for the next bytes, except at the end
 * of a frame: the frame must go out whole for the peer to proceed.  So a
 * placeholder split across two frames is found when its last part arrives,
 * after its first part went out.  That is acceptable because placeholders are
 * not secret: what matters is that the whole placeholder never reaches the
 * upstream and that the attempt is refused and audited.  A placeholder found
 * closes the connection at once (the upstream is dropped: nothing more goes
 * out, not even what was queued), with a close frame 1008 to the client when
 * possible, and an exfiltration_attempt audit record with the upgrade
 * request's id, place "websocket".
 *
 * Upstream frames from a host secrets are bound to: text and binary
 * messages are scrubbed of the values of every secret bound to the host
 * (credscrub.c; one scrub stream per message, so a value split across
 * fragments is replaced whole) and re-framed, since scrubbing changes lengths:
 * each data frame yields one frame of the scrubbed bytes decided so far (more
 * than one past WS_TEXT_EMIT bytes), and the frame with FIN flushes the
 * stream.  Control frames may come between the fragments of a message and
 * keep their place; they are held whole (125 bytes at most) and scrubbed.  No
 * data frame is ever held whole: payloads stream, and the only bytes held are
 * the scrubber's and the search's held-back tails (each under the longest
 * needle).
 */
#include <string.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "common/log.h"
#include "common/sluice.h"
#include "proxy/session/session.h"
#include "proxy/codec/ws.h"
#include "proxy/core/context.h"
#include "secrets/detect.h"
#include "secrets/scrub.h"


struct ws_tunnel {
	/* client -> upstream */
	struct ws_reader crd;
	struct ph_stream *search;                    /* the placeholders, in the decoded views too */
	uint64_t pend;                               /* payload bytes at the front of the input searched, not sent */
	uint8_t scratch[WS_STEP];                    /* unmasked payload being searched */
	/* upstream -> client */
	struct ws_reader srd;
	const struct scrub_set *scrub;               /* borrowed from the request; NULL: frames pass unchanged */
	struct scrub_stream *scrub_st;
	struct evbuffer *scrub_out;                  /* scrubbed payload of the current frame not yet framed */
	int text;                                    /* the current upstream frame is scrubbed data (text or binary) */
	int ctl;                                     /* the current upstream frame is a control frame, held whole */
	unsigned msg_op;                             /* the opcode of the scrubbed message in progress */
	int text_started;                            /* a frame of the current message went out */
	int down_mid;                                /* the client's output ends inside a frame */
};

struct ws_tunnel *
ws_tunnel_create(const struct scrub_set *scrub)
{
	struct ws_tunnel *t = xcalloc(1, sizeof(*t));

	ws_reader_init(&t->crd, 1);
	ws_reader_init(&t->srd, 0);
	t->search = ph_stream_new();
	t->scrub = scrub;
	if (scrub != NULL) {
		t->scrub_st = scrub_stream_new(scrub);
		t->scrub_out = evbuffer_new();
	}
	if (t->search == NULL || (scrub != NULL && t->scrub_out == NULL)) {
		ws_tunnel_destroy(t);
		return NULL;
	}
	return t;
}

int
ws_tunnel_search_add(struct ws_tunnel *t, const char *ph, size_t len, size_t id)
{
	return ph_stream_add(t->search, ph, len, id);
}

void
ws_tunnel_destroy(struct ws_tunnel *t)
{
	if (t == NULL)
		return;
	ph_stream_free(t->search);
	scrub_stream_free(t->scrub_st);  /* wipes a held-back part of a value */
	if (t->scrub_out != NULL) {
		size_t n = evbuffer_get_length(t->scrub_out);
		if (n > 0)
			sluice_wipe(evbuffer_pullup(t->scrub_out, -1), n);
		evbuffer_free(t->scrub_out);
	}
	free(t);
}

/* Reads a frame header from the front of <in> into <rd>: its length, -2 or -1 (*err). */
static int
read_head(struct ws_reader *rd, struct evbuffer *in, const char **err)
{
	size_t n = evbuffer_get_length(in);

	if (n == 0)
		return -2;
	if (n > WS_HEAD_MAX)
		n = WS_HEAD_MAX;
	return ws_reader_head(rd, evbuffer_pullup(in, (ev_ssize_t)n), n, err);
}

int
ws_tunnel_from_client(struct ws_tunnel *t, struct evbuffer *in, struct evbuffer *out, size_t cap, size_t *id,
                      const char **err)
{
	struct ws_reader *rd = &t->crd;
	struct evbuffer_ptr pos;
	size_t avail, n, held;
	uint64_t rel;
	int h, r;

	for (;;) {
		if (evbuffer_get_length(out) >= cap)
			return WS_RELAY_BLOCKED;
		if (!rd->in_frame) {
			h = read_head(rd, in, err);
			if (h == -2)
				return WS_RELAY_MORE;
			if (h < 0)
				return WS_RELAY_BAD;
			evbuffer_remove_buffer(in, out, (size_t)h);
			t->pend = 0;
			if (rd->left == 0)
				ws_reader_consume(rd, 0);
			continue;
		}
		avail = evbuffer_get_length(in);
		n = 0;
		if (t->pend < rd->left && avail > t->pend) {
			/* search the next bytes of the payload, unmasked in scratch */
			n = avail - (size_t)t->pend;
			if (n > WS_STEP)
				n = WS_STEP;
			if ((uint64_t)n > rd->left - t->pend)
				n = (size_t)(rd->left - t->pend);
			if (evbuffer_ptr_set(in, &pos, (size_t)t->pend, EVBUFFER_PTR_SET) != 0 ||
			    evbuffer_copyout_from(in, &pos, t->scratch, n) != (ev_ssize_t)n) {
				*err = "cannot read the frame's payload";
				return WS_RELAY_BAD;
			}
			ws_unmask(t->scratch, n, rd->f.mask, rd->off + t->pend);
			r = ph_stream_feed(t->search, t->scratch, n, id);
			if (r != 0) {
				*err = r > 0 ? "placeholder found" : "out of memory";
				return r > 0 ? WS_RELAY_FOUND : WS_RELAY_BAD;
			}
			t->pend += n;
		}
		/* the frame's end goes out whole; before it, only what no placeholder can still claim */
		if (t->pend == rd->left) {
			rel = t->pend;
		} else {
			held = ph_stream_held(t->search);
			rel = t->pend > held ? t->pend - held : 0;
		}
		if (rel > 0) {
			evbuffer_remove_buffer(in, out, (size_t)rel);
			t->pend -= rel;
			ws_reader_consume(rd, rel);
		} else if (n == 0) {
			return WS_RELAY_MORE;
		}
	}
}

/* Frames what the scrubber produced so far into <out>, as one text frame or continuation. */
static void
text_emit(struct ws_tunnel *t, struct evbuffer *out, int fin)
{
	uint8_t head[WS_HEAD_MAX];
	size_t n = evbuffer_get_length(t->scrub_out), hl;

	if (n == 0 && !fin)
		return;
	hl = ws_frame_head_write(head, fin, t->text_started ? WS_OP_CONT : t->msg_op, n);
	evbuffer_add(out, head, hl);
	evbuffer_add_buffer(out, t->scrub_out);
	t->text_started = !fin;
}

/* The current text frame ended: its scrubbed bytes go out, and at FIN the rest of the message. 0 or -1. */
static int
text_frame_end(struct ws_tunnel *t, struct evbuffer *out, struct scrub_hits *hits)
{
	int fin = t->srd.f.fin;

	if (fin && scrub_stream_end(t->scrub_st, t->scrub_out, hits) != 0)
		return -1;
	text_emit(t, out, fin);
	return 0;
}

/*
 * A control frame from the upstream, its header already drained: taken once
 * whole (rd->left <= WS_CTL_MAX), scrubbed and re-framed.  1 done, 0 wait, -1
 * out of memory.
 */
static int
ctl_frame(struct ws_tunnel *t, struct evbuffer *in, struct evbuffer *out, struct scrub_hits *hits)
{
	struct ws_reader *rd = &t->srd;
	uint8_t head[WS_HEAD_MAX], pay[WS_CTL_MAX];
	size_t n = (size_t)rd->left, hl, m;
	int ret;

	if (evbuffer_get_length(in) < n)
		return 0;
	ret = n > 0 ? scrub_buffer(t->scrub, evbuffer_pullup(in, (ev_ssize_t)n), n, t->scrub_out, hits) : 0;
	evbuffer_drain(in, n);
	ws_reader_consume(rd, n);
	t->ctl = 0;
	if (ret != 0)
		return -1;
	/* a placeholder longer than the value may push it past the bound: cut (a placeholder is no secret) */
	m = evbuffer_remove(t->scrub_out, pay, sizeof(pay)) ;
	evbuffer_drain(t->scrub_out, evbuffer_get_length(t->scrub_out));
	hl = ws_frame_head_write(head, 1, rd->f.opcode, m);
	evbuffer_add(out, head, hl);
	evbuffer_add(out, pay, m);
	sluice_wipe(pay, sizeof(pay));
	return 1;
}

int
ws_tunnel_from_server(struct ws_tunnel *t, struct evbuffer *in, struct evbuffer *out, size_t cap,
                      struct scrub_hits *hits, const char **err)
{
	struct ws_reader *rd = &t->srd;
	size_t avail, n;
	int h, done;

	for (;;) {
		if (evbuffer_get_length(out) >= cap)
			return WS_RELAY_BLOCKED;
		if (!rd->in_frame) {
			h = read_head(rd, in, err);
			if (h == -2)
				return WS_RELAY_MORE;
			if (h < 0)
				return WS_RELAY_BAD;
			t->text = t->scrub != NULL && rd->f.opcode < WS_OP_CLOSE &&
			          (rd->kind == WS_OP_TEXT || rd->kind == WS_OP_BINARY);
			t->ctl = t->scrub != NULL && rd->f.opcode >= WS_OP_CLOSE;
			if (t->ctl && rd->left > WS_CTL_MAX) {
				*err = "control frame longer than 125 bytes";
				return WS_RELAY_BAD;
			}
			if (t->text && !t->text_started)
				t->msg_op = rd->kind;
			if (t->text || t->ctl) {
				evbuffer_drain(in, (size_t)h);  /* re-framed as it is scrubbed */
			} else {
				evbuffer_remove_buffer(in, out, (size_t)h);
				t->down_mid = rd->left > 0;
			}
			if (rd->left == 0 && !t->ctl) {
				ws_reader_consume(rd, 0);
				if (t->text && text_frame_end(t, out, hits) != 0)
					goto nomem;
			}
			continue;
		}
		if (t->ctl) {
			if ((h = ctl_frame(t, in, out, hits)) < 0)
				goto nomem;
			if (h == 0)
				return WS_RELAY_MORE;
			continue;
		}
		avail = evbuffer_get_length(in);
		if (avail == 0)
			return WS_RELAY_MORE;
		n = avail < WS_STEP ? avail : WS_STEP;
		if ((uint64_t)n > rd->left)
			n = (size_t)rd->left;
		if (!t->text) {
			evbuffer_remove_buffer(in, out, n);
			if (ws_reader_consume(rd, n))
				t->down_mid = 0;
			continue;
		}
		if (scrub_stream_feed(t->scrub_st, evbuffer_pullup(in, (ev_ssize_t)n), n, t->scrub_out, hits) != 0)
			goto nomem;
		evbuffer_drain(in, n);
		done = ws_reader_consume(rd, n);
		if (done && text_frame_end(t, out, hits) != 0)
			goto nomem;
		if (!done && evbuffer_get_length(t->scrub_out) >= WS_TEXT_EMIT)
			text_emit(t, out, 0);  /* a long frame goes out in fragments: nothing is held whole */
	}
nomem:
	*err = "out of memory";
	return WS_RELAY_BAD;
}

int
ws_tunnel_close_client(struct ws_tunnel *t, struct evbuffer *out, unsigned code)
{
	uint8_t f[4];

	if (t->down_mid)
		return -1;
	f[0] = 0x80 | WS_OP_CLOSE;
	f[1] = 2;
	f[2] = (uint8_t)(code >> 8);
	f[3] = (uint8_t)code;
	t->down_mid = 1;  /* nothing may follow a close frame */
	return evbuffer_add(out, f, sizeof(f)) == 0 ? 0 : -1;
}

/* ---- the connection's side ---- */


/* Drops the upstream at once: after a refusal nothing more may reach it, not even bytes already queued. */
static void
drop_upstream(struct conn *c)
{
	if (c->up != NULL) {
		upstream_free(c->up);
		c->up = NULL;
	}
}

static void
refuse_framing(struct conn *c, const char *side, const char *why)
{
	struct ws_tunnel *t = c->req->ws;
	char peer[CONN_ADDR_STR];

	log_info("c%llu: %s websocket closed: malformed frame from the %s: %s (%s)", (unsigned long long)c->id,
	         conn_peer_str(c, peer), side, why, c->host);
	drop_upstream(c);
	ws_tunnel_close_client(t, cio_out(c), WS_CLOSE_PROTOCOL);
	tunnel_end(c);
}

static void
exfiltration(struct conn *c, size_t idx)
{
	struct req *r = c->req;
	const struct policy_secret *s = policy_secret_get(c->pol, idx);
	char peer[CONN_ADDR_STR];

	drop_upstream(c);
	snprintf(r->rule_buf, sizeof(r->rule_buf), "placeholder of secret '%s' in a WebSocket frame from the client: "
	         "placeholders are not injected into WebSocket frames", s->name);
	log_info("c%llu: %s exfiltration attempt refused: %s (%s)", (unsigned long long)c->id, conn_peer_str(c, peer),
	         r->rule_buf, c->host);
	r->cred->event = "exfiltration_attempt";
	r->cred->event_secret = s->name;
	snprintf(r->cred->event_place, sizeof(r->cred->event_place), "websocket");
	r->rule = "secrets";
	r->reason = r->rule_buf;
	http_audit_request(c, AUDIT_VERDICT_DENY);
	ws_tunnel_close_client(r->ws, cio_out(c), WS_CLOSE_POLICY);
	tunnel_end(c);
}

int
ws_tunnel_start(struct conn *c)
{
	struct req *r = c->req;
	const struct scrub_set *scrub;
	struct ws_tunnel *t;
	const struct cred_entry *e;
	const char *ph;
	size_t i, n = policy_secret_count(c->pol);
	int err;

	if (r == NULL || n == 0)
		return 0;  /* no secrets: the byte tunnel */
	/* the host's set (credresp.c), whatever the upgrade request injected; r keeps it while the tunnel lives */
	scrub = cred_resp_set(c, &err);
	if (err || (t = ws_tunnel_create(scrub)) == NULL)
		goto fail;
	r->ws = t;
	for (i = 0; i < n; i++) {
		e = cred_entry_of(c->w->gw->creds, policy_secret_get(c->pol, i));
		if (e == NULL)
			continue;
		ph = cred_placeholder(e);
		if (ws_tunnel_search_add(t, ph, strlen(ph), i) != 0)
			goto fail;
	}
	return 0;
fail:
	log_warnx("c%llu: cannot set up the WebSocket frame search: closing", (unsigned long long)c->id);
	ws_tunnel_free(r);
	return -1;
}

void
ws_tunnel_pump(struct conn *c)
{
	struct req *r = c->req;
	struct ws_tunnel *t = r->ws;
	struct evbuffer *cin = cio_in(c), *cout = cio_out(c);
	struct evbuffer *uin = bufferevent_get_input(c->up->bev), *uout = bufferevent_get_output(c->up->bev);
	size_t before, idx = 0, i;
	struct scrub_hits hits;
	const char *err = "?";
	int a, b;

	if (evbuffer_get_length(cin) > 0 || evbuffer_get_length(uin) > 0)
		conn_arm_timer(c, conn_limits(c)->idle_ms);
	before = evbuffer_get_length(uout);
	a = ws_tunnel_from_client(t, cin, uout, PROXY_HIGH_WATER, &idx, &err);
	r->bytes_up += evbuffer_get_length(uout) - before;
	if (a == WS_RELAY_FOUND) {
		exfiltration(c, idx);
		return;
	}
	if (a == WS_RELAY_BAD) {
		refuse_framing(c, "client", err);
		return;
	}
	before = evbuffer_get_length(cout);
	memset(&hits, 0, sizeof(hits));
	b = ws_tunnel_from_server(t, uin, cout, PROXY_HIGH_WATER, &hits, &err);
	r->bytes_down += evbuffer_get_length(cout) - before;
	for (i = 0; i < policy_secret_count(c->pol) && i < SCRUB_TAGS; i++)
		if (scrub_hits_has(&hits, (unsigned)i) && !scrub_hits_has(&r->cred->scrub_hits, (unsigned)i))
			log_info("c%llu: secret '%s' scrubbed from a WebSocket frame", (unsigned long long)c->id,
			         policy_secret_get(c->pol, i)->name);
	scrub_hits_or(&r->cred->scrub_hits, &hits);
	if (b == WS_RELAY_BAD) {
		refuse_framing(c, "upstream", err);
		return;
	}
	if ((c->client_eof && a == WS_RELAY_MORE) || (c->up_eof && b == WS_RELAY_MORE)) {
		/* one side ended (a partial frame or a held-back tail is dropped, never sent) */
		tunnel_end(c);
		return;
	}
	relay_backpressure(c);
}

void
ws_tunnel_free(struct req *r)
{
	if (r == NULL)
		return;
	ws_tunnel_destroy(r->ws);
	r->ws = NULL;
}
