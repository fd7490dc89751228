/*
 * proxy/session/http.c - HTTP/1.1 requests on a client connection: parse the head,
 * establish which host it names, normalise and judge the path, forward it
 * over the (pooled) upstream connection (relay.c), stream both bodies with
 * backpressure.  How a request ends (its audit records, the one answer) is
 * answer.c.  One request is in flight at a time: pipelined
 * requests wait in the input buffer (bounded by its read watermark), so
 * responses leave in order.
 */
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include <event2/buffer.h>
#include "common/clock.h"
#include "common/log.h"
#include "common/sluice.h"
#include "policy/judge.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/session/session.h"
#include "proxy/dns/dns.h"
#include "proxy/judge/semantic.h"
#include "proxy/core/context.h"
#include "audit/writer.h"
#include "proxy/session/conn_ops.h"
#include "proxy/core/refusal.h"
#include "proxy/core/h1_out.h"

#define AE_SCRUBBABLE "Accept-Encoding: gzip, deflate\r\n"  /* what the scrubber decodes (credresp.c) */


static int read_request(struct conn *c);

#define CONNECT_TRANSPARENT_PHRASE "Sandbox Is Transparent: Unset HTTPS_PROXY"
#define CONNECT_TRANSPARENT_REASON                                                                              \
	"CONNECT to a transparent sandbox's gateway: this sandbox needs no proxy (its traffic is redirected to the " \
	"gateway); unset HTTPS_PROXY, HTTP_PROXY and ALL_PROXY and connect directly"

void
http_req_reset(struct conn *c)
{
	struct req *r = c->req;

	audit_unpark(c);  /* a request or passthrough waiting for its audit record */
	if (c->state == CONN_S_DEAD)
		http_refusals_flush(c);  /* the connection ends (conn_close): the count of refusals not recorded */
	if (r == NULL)
		return;
	if (sem_cancel(c) && !r->audit_decided) {  /* a pending hold is cancelled before anything it points to goes */
		r->reason = "the client went away while the request waited for approval";
		http_audit_request(c, AUDIT_VERDICT_DENY);
	}
	sem_req_free(c);
	refuse_proto_free(r);
	cred_release(r);
	cred_hold_free(r);
	ws_tunnel_free(r);
	mcp_resp_free(r);
	free(r->path);
	free(r->query);
	if (r->up_head != NULL)
		evbuffer_free(r->up_head);
	if (r->resp_trailers != NULL)
		evbuffer_free(r->resp_trailers);
	free(r);
	c->req = NULL;
}

/* A fresh request; between requests a connection holds none (idle connections stay small). */
static struct req *
req_new(struct conn *c)
{
	http_req_reset(c);
	c->req = xcalloc(1, sizeof(*c->req));
	c->req->cred = cred_req_new();
	c->req->minor_version = -1;   /* unknown until the head parses */
	c->req->upstream_tls = -1;    /* unknown until an upstream is dialled */
	clock_mono(&c->req->t0);
	return c->req;
}

/* "<method> <path><query> HTTP/1.1\r\n" into r->up_head. */
static void
up_request_line(struct req *r)
{
	const struct h1_out_piece pc[] = {{r->method, strlen(r->method)}, {" ", 1}, {r->path, strlen(r->path)},
	                                  {r->query, r->query != NULL ? strlen(r->query) : 0}, {SLUICE_LIT(" HTTP/1.1\r\n")}};

	h1_out_pieces(r->up_head, pc, sizeof(pc) / sizeof(pc[0]));
}

/* A Host field for a request that had none: the host, with its port when it is not the scheme's. */
static void
up_host(const struct conn *c, struct evbuffer *out)
{
	char num[H1_OUT_NUM_MAX];
	size_t nl, hl = strlen(c->host);
	const char *port = h1_out_utoa(num, sizeof(num), c->port, 10, &nl);
	const int v6 = memchr(c->host, ':', hl) != NULL;

	if ((c->tls && c->port == 443) || (!c->tls && c->port == 80)) {
		h1_out_field(out, SLUICE_LIT("Host"), c->host, hl);
		return;
	}
	const struct h1_out_piece pc[] = {{SLUICE_LIT("Host: ")}, {"[", v6}, {c->host, hl}, {"]", v6}, {":", 1},
	                                  {port, nl}, {"\r\n", 2}};
	h1_out_pieces(out, pc, sizeof(pc) / sizeof(pc[0]));
}

int
http_append_header(struct evbuffer *out, const struct h1_header *h)
{
	return h1_out_field(out, h->name, h->name_len, h->value, h->value_len);
}

/* Copies the end-to-end headers of <m>, minus the <nskip> names of <skip> (NULL entries skip nothing). */
static void
copy_headers(struct evbuffer *out, const struct h1_message *m, const char *const *skip, size_t nskip)
{
	size_t i, k;

	for (i = 0; i < m->nheaders; i++) {
		const struct h1_header *h = &m->headers[i];

		if (h1_is_hop_by_hop(h->name, h->name_len) || h1_connection_lists(m, h->name, h->name_len))
			continue;
		if (sluice_iov_ieq(h->name, h->name_len, "content-length"))
			continue;
		for (k = 0; k < nskip; k++)
			if (skip[k] != NULL && sluice_iov_ieq(h->name, h->name_len, skip[k]))
				break;
		if (k == nskip)
			http_append_header(out, h);
	}
}

void
http_copy_headers(struct evbuffer *out, const struct h1_message *m, const char *skip1, const char *skip2)
{
	const char *skip[2] = {skip1, skip2};

	copy_headers(out, m, skip, 2);
}

/* Splits an absolute-form target "http(s)://authority/path?q" into authority and the rest. */
static int
absolute_form(const char *t, size_t n, int *https, const char **auth, size_t *auth_len, const char **rest,
              size_t *rest_len)
{
	size_t skip, i;

	if (n >= 7 && strncasecmp(t, "http://", 7) == 0) {
		skip = 7;
		*https = 0;
	} else if (n >= 8 && strncasecmp(t, "https://", 8) == 0) {
		skip = 8;
		*https = 1;
	} else {
		return -1;
	}
	for (i = skip; i < n && t[i] != '/' && t[i] != '?'; i++)
		if (t[i] == '@' || t[i] == '#')
			return -1;   /* userinfo or fragment in a request target: refused */
	*auth = t + skip;
	*auth_len = i - skip;
	*rest = t + i;
	*rest_len = n - i;
	return *auth_len > 0 ? 0 : -1;
}









/* Works out which host a request on this connection names; 0, or an answer was sent. */
static int
request_host(struct conn *c, const struct h1_message *m, const char **path, size_t *path_len)
{
	char host[HOST_BUF], ahost[HOST_BUF];
	unsigned port = 0, aport = 0;
	const char *err = NULL, *auth, *rest;
	size_t auth_len, rest_len;
	int https, has_abs = 0, dflt = c->tls ? 443 : 80;

	if (m->target_len > 0 && m->target[0] == '/') {
		*path = m->target;
		*path_len = m->target_len;
		if (c->mode == CONN_MODE_EXPLICIT && !c->tls) {
			http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "a proxy request needs an absolute-form target or CONNECT");
			return -1;
		}
	} else if (absolute_form(m->target, m->target_len, &https, &auth, &auth_len, &rest, &rest_len) == 0) {
		if (https != c->tls) {
			http_answer(c, 400, REFUSAL_BAD_REQUEST, "http",
			       c->tls ? "http:// target inside a TLS connection" : "https:// targets need CONNECT");
			return -1;
		}
		if (host_split_authority(auth, auth_len, dflt, ahost, &aport, &err) < 0) {
			http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", err);
			return -1;
		}
		has_abs = 1;
		*path = rest_len > 0 ? rest : "/";
		*path_len = rest_len > 0 ? rest_len : 1;
		if ((*path)[0] == '?') {  /* "http://h?q": the path is "/" */
			http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "absolute-form target without a path");
			return -1;
		}
	} else {
		http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "request target is not origin-form or absolute-form");
		return -1;
	}
	c->req->proto = (unsigned char)refuse_proto_of(c, m, *path, *path_len);
	if (m->host != NULL) {
		if (host_split_authority(m->host->value, m->host->value_len, dflt, host, &port, &err) < 0) {
			http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "malformed Host header");
			return -1;
		}
	} else if (!has_abs && (c->tls == 0 || m->minor_version == 1)) {
		http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "missing Host header");
		return -1;
	}
	if (has_abs && m->host != NULL && (strcmp(ahost, host) != 0 || aport != port)) {
		http_answer(c, 421, REFUSAL_MISDIRECTED, "host", "Host header differs from the request target");
		return -1;
	}
	if (!has_abs && m->host == NULL) {  /* HTTP/1.0 inside TLS: the judged host */
		snprintf(host, sizeof(host), "%s", c->host);
		port = c->port;
	} else if (has_abs) {
		memcpy(host, ahost, sizeof(host));
		port = aport;
	}
	if (c->tls || (c->mode == CONN_MODE_TRANSPARENT && c->judged)) {
		/* inside TLS the judged host is the SNI or CONNECT authority; the request must name it */
		if (strcmp(host, c->host) != 0 || (c->tls && port != c->port && (has_abs || port != (unsigned)dflt))) {
			http_answer(c, 421, REFUSAL_MISDIRECTED, "host",
			       c->mode == CONN_MODE_EXPLICIT ? "Host differs from the CONNECT authority"
			                                     : "Host differs from the TLS server name (SNI)");
			return -1;
		}
		return 0;
	}
	if (c->mode == CONN_MODE_TRANSPARENT) {
		const char *why;
		const struct sockaddr *dest = c->has_dest ? &c->dest.sa : NULL;

		port = c->port;  /* plain HTTP redirected: the port the sandbox dialled */
		if (gwdns_check(c->w->gw->synth, dest, host, sizeof(host), 1, &why) != 0) {
			http_answer(c, 421, REFUSAL_MISDIRECTED, "listen.dns", why);
			return -1;
		}
	}
	if (!c->judged || strcmp(host, c->host) != 0 || port != c->port) {
		struct judge_conn cf = {c->sandbox, NULL, port, JUDGE_CONN_EXPLICIT, 0, 0, NULL};
		struct judge_outcome o;

		conn_set_host(c, host);
		c->port = port;
		cf.host = c->host;  /* plain HTTP: judged here, a refusal answered (a passthrough entry is read) */
		policy_judge_conn(c->pol, &cf, &o);
		c->entry = o.entry;
		c->judged = 1;
		if (o.verdict == JUDGE_DENY) {
			c->judged = 0;
			http_answer(c, 403, REFUSAL_DENIED, o.rule, o.reason);
			return -1;
		}
	}
	return 0;
}

/* Parses and handles one request head; 1 when the state moved on, 0 to wait for bytes. */
static int
read_request(struct conn *c)
{
	const struct policy_limits *lim = conn_limits(c);
	struct h1_limits hl = {lim->header_bytes, lim->request_line_bytes, lim->header_count};
	struct evbuffer *in = cio_in(c);
	struct h1_message *m = c->w->msg;
	struct req *r;
	size_t len = evbuffer_get_length(in), cap, path_len = 0, plen;
	const char *err = NULL, *path = NULL, *q;
	char *head;
	int status = 400, n, hold;
	long nl;
	const struct h1_header *te;
	struct refusal rf;
	struct judge_outcome jo[1];

	if (len == 0) {
		if (c->client_eof)
			conn_close(c);
		return 0;
	}
	if (!c->head_started) {
		c->head_started = 1;
		conn_arm_timer(c, lim->request_head_ms);
	}
	cap = len < (size_t)lim->header_bytes + 1 ? len : (size_t)lim->header_bytes + 1;
	head = (char *)evbuffer_pullup(in, (ev_ssize_t)cap);
	n = h1_parse_request(head, cap, &hl, m, &err, &status);
	if (n == -2) {
		if (c->client_eof) {
			conn_close(c);
			return 0;
		}
		if (cap <= lim->header_bytes)
			return 0;
		n = -1;
		status = 431;
		err = "request head too large (limits.header_bytes)";
	}
	r = req_new(c);
	if (n < 0) {
		r->client_keep_alive = 0;
		http_answer(c, status, REFUSAL_BAD_REQUEST, http_refusal_rule(status, err), err ? err : "malformed request");
		return 1;
	}
	if (m->method_len >= sizeof(r->method)) {
		http_answer(c, 400, REFUSAL_BAD_REQUEST, "http", "method too long");
		return 1;
	}
	memcpy(r->method, m->method, m->method_len);
	r->method_len = m->method_len;
	r->minor_version = conn_ops(c)->stream ? 0 : m->minor_version;  /* a stream: one answer, ended by END_STREAM */
	r->is_head = m->method_len == 4 && memcmp(m->method, "HEAD", 4) == 0;
	r->client_keep_alive = m->keep_alive && !conn_ops(c)->stream;
	r->websocket = m->upgrade_websocket;
	r->body = m->framing;
	r->body_left = m->content_length;
	/* a body on GET/HEAD/OPTIONS that get_bodies: allow let through: the upstream connection ends with it */
	r->up_no_reuse = r->body != H1_BODY_NONE;
	h1_chunked_init(&r->body_chunk, PROXY_TRAILER_MAX);
	/* <m> points into <in>: the head is drained only after its last use below */
	/* judged under the newest policy, or refused when the connection's facts were revoked (revoke.c) */
	if (revoke_request_start(c, &rf) != 0) {
		http_refuse(c, &rf);
		evbuffer_drain(in, (size_t)n);
		return 1;
	}
	if (m->method_len == 7 && memcmp(m->method, "CONNECT", 7) == 0) {
		evbuffer_drain(in, (size_t)n);
		if (c->mode == CONN_MODE_TRANSPARENT) {
			/*
			 * a proxy variable passed into a transparent sandbox: say so, also in the reason phrase,
			 * which is all that clients print of a refused CONNECT (Python, Go: "Tunnel connection failed: 405 ...")
			 */
			refusal_close(&rf, 405, REFUSAL_METHOD_NOT_ALLOWED, "http", CONNECT_TRANSPARENT_REASON);
			rf.phrase = CONNECT_TRANSPARENT_PHRASE;
			http_refuse(c, &rf);
			return 1;
		}
		http_answer(c, 405, REFUSAL_METHOD_NOT_ALLOWED, "http", "CONNECT is only accepted as the first request");
		return 1;
	}
	if (request_host(c, m, &path, &path_len) < 0) {
		evbuffer_drain(in, (size_t)n);
		return 1;
	}
	q = memchr(path, '?', path_len);
	plen = q ? (size_t)(q - path) : path_len;
	if (q != NULL)
		r->query = xstrndup(q, path_len - plen);
	r->path = xmalloc(plen + 2);
	/* normalised with the host's encoded_slashes and path_params by the judge, as `sluice policy test` does */
	nl = policy_judge_path(c->entry, path, plen, r->path, plen + 2, jo);
	if (nl < 0) {
		free(r->path);
		r->path = xstrndup(path, plen);  /* the raw path (escaped by the audit writer), before the drain */
		evbuffer_drain(in, (size_t)n);
		http_answer(c, jo->status, REFUSAL_BAD_REQUEST, jo->rule, jo->reason);
		return 1;
	}
	r->path_len = (size_t)nl;
	if (!audit_healthy(c->w->gw->audit)) {
		/* failing closed: a request that cannot be recorded is not served */
		evbuffer_drain(in, (size_t)n);
		r->client_keep_alive = 0;
		http_answer(c, 503, REFUSAL_AUDIT_UNAVAILABLE, "audit",
		            "the audit log cannot be written: new requests are refused until it can");
		return 1;
	}
	/* semantic rules (semantic.c): decided now, or once the body a rule reads is held */
	if (sem_head(c, m, &rf) != 0) {
		http_refuse(c, &rf);
		evbuffer_drain(in, (size_t)n);
		return 1;
	}
	if (c->mode == CONN_MODE_EXPLICIT && !c->tls && cred_client_auth(c, m) != 0) {
		evbuffer_drain(in, (size_t)n);
		http_answer(c, 407, REFUSAL_PROXY_AUTH, "sandboxes",
		            "Proxy-Authorization matches no sandbox's proxy_auth");
		return 1;
	}
	/* a host secrets are bound to: its response is scrubbed, whatever this request carries (credscrub.c) */
	if (cred_host_scrub(c) != 0) {
		evbuffer_drain(in, (size_t)n);
		http_answer(c, 500, REFUSAL_INTERNAL, "secrets", "cannot build the response scrubber");
		return 1;
	}
	/*
	 * with secrets declared a body is held and searched whole before dialling, if it is small enough;
	 * a body a semantic rule reads (or a hold binds) is held too, once, for both
	 */
	if (policy_secret_count(c->pol) > 0 && cred_body_coding_check(c, m, &rf) != 0) {
		http_refuse(c, &rf);
		evbuffer_drain(in, (size_t)n);
		return 1;
	}
	if ((hold = cred_hold_begin(c, m, sem_holds_body(c))) < 0) {
		evbuffer_drain(in, (size_t)n);
		http_answer(c, 500, REFUSAL_INTERNAL, "secrets", "cannot hold the request body");
		return 1;
	}
	/* build the head we send upstream while the parsed views are valid */
	r->up_head = evbuffer_new();
	up_request_line(r);
	if (m->host != NULL)
		http_append_header(r->up_head, m->host);
	else
		up_host(c, r->up_head);
	/*
	 * A held body is answered with our own 100; with secrets, no WebSocket
	 * extension (frames stay searchable); toward a host secrets are bound to,
	 * no gRPC message compression (grpc-accept-encoding; credhead.c drops it
	 * too where a secret is injected): the response's messages are scrubbed
	 * one by one (credresp.c), which needs them uncompressed; and the sandbox
	 * does not choose how such a response is encoded (Accept-Encoding) or cut
	 * into pieces, none holding a whole value (Range, If-Range, and
	 * Request-Range, which old servers honour).
	 */
	const int hs = r->cred->hscrub != NULL;
	const char *skip[] = {"host", hold ? "expect" : NULL,
	                      r->websocket && policy_secret_count(c->pol) > 0 ? "sec-websocket-extensions" : NULL,
	                      hs ? "grpc-accept-encoding" : NULL, hs ? "accept-encoding" : NULL, hs ? "range" : NULL,
	                      hs ? "if-range" : NULL, hs ? "request-range" : NULL};
	copy_headers(r->up_head, m, skip, sizeof(skip) / sizeof(skip[0]));
	/* every Accept-Encoding field becomes one naming only what the scrubber decodes */
	if (hs && h1_find_header(m, "accept-encoding") != NULL)
		evbuffer_add(r->up_head, AE_SCRUBBABLE, sizeof(AE_SCRUBBABLE) - 1);
	/* "TE: trailers" says the client takes trailers (gRPC needs it said upstream); other TE codings stay hop-by-hop */
	if ((te = h1_find_header(m, "te")) != NULL && sluice_iov_ieq(te->value, te->value_len, "trailers"))
		evbuffer_add(r->up_head, SLUICE_LIT("TE: trailers\r\n"));
	if (hold)
		;  /* the framing follows the body (credbody.c) */
	else if (r->body == H1_BODY_LENGTH)
		h1_out_uint_field(r->up_head, SLUICE_LIT("Content-Length"), r->body_left, 0);
	else if (r->body == H1_BODY_CHUNKED)
		evbuffer_add(r->up_head, SLUICE_LIT("Transfer-Encoding: chunked\r\n"));
	if (r->websocket) {
		const struct h1_header *u = h1_find_header(m, "upgrade");
		evbuffer_add(r->up_head, SLUICE_LIT("Connection: Upgrade\r\n"));
		if (u != NULL)
			http_append_header(r->up_head, u);
	}
	if (!hold)
		evbuffer_add(r->up_head, SLUICE_LIT("\r\n"));
	/*
	 * placeholders (credreq.c): searched in the head as it will leave, in every decoded view;
	 * values written only inside bound places, a placeholder anywhere else refused
	 */
	if (policy_secret_count(c->pol) > 0 && cred_check_head(c, &rf) != 0) {
		http_refuse(c, &rf);
		evbuffer_drain(in, (size_t)n);
		return 1;
	}
	evbuffer_drain(in, (size_t)n);
	if (hold) {
		hold_start(c);
		return 1;
	}
	if (sem_park_pending(c)) {  /* a hold with no body: it waits for an operator now */
		conn_set_state(c, CONN_S_HOLD);
		if (sem_park_start(c, &rf) != 0)
			http_refuse(c, &rf);
		return 1;
	}
	if (r->body != H1_BODY_NONE && policy_secret_count(c->pol) > 0 && cred_scan_begin(c) != 0) {
		http_answer(c, 500, REFUSAL_INTERNAL, "secrets", "cannot set up the request body search");
		return 1;
	}
	if (relay_dial(c, &rf) != 0)
		http_refuse(c, &rf);
	return 1;
}






void
http_pump(struct conn *c)
{
	struct refusal rf;

	for (;;) {
		switch (c->state) {
		case CONN_S_REQ_HEAD:
			if (!read_request(c))
				return;
			break;
		case CONN_S_RELAY:
			relay_pump(c);
			return;
		case CONN_S_HOLD:
			if (refuse_proto_draining(c)) {
				if (refuse_proto_pump(c, &rf))
					http_answer_end(c, rf.status, rf.rule, rf.reason, !rf.quiet, !rf.close);
				if (c->state == CONN_S_HOLD)
					return;
				break;
			}
			if (hold_pump(c, &rf) != 0)
				http_refuse(c, &rf);
			/* a refused push is drained from here on (refuse_proto.c), with what is in its input already */
			if (c->state == CONN_S_HOLD && !refuse_proto_draining(c))
				return;
			break;
		case CONN_S_DIAL:
			return;
		default:
			conn_pump(c);
			return;
		}
	}
}

void
http_timeout(struct conn *c)
{
	struct refusal rf;

	switch (c->state) {
	case CONN_S_REQ_HEAD:
		if (c->head_started && cio_in_len(c) > 0) {
			req_new(c)->client_keep_alive = 0;
			http_answer(c, 408, REFUSAL_TIMEOUT, "limits.request_head", "request head not received in time");
			return;
		}
		conn_close(c);  /* idle keep-alive connection */
		return;
	case CONN_S_DIAL:
		if (sem_admit_waiting(c)) {  /* the shared counters' own timeout did not come: fail closed */
			if (sem_admit_timeout(c, &rf))
				http_refuse(c, &rf);
			return;
		}
		if (c->req->audit_parked) {
			audit_unpark(c);
			c->req->audit_parked = 0;
			c->req->client_keep_alive = 0;
			http_answer(c, 503, REFUSAL_AUDIT_UNAVAILABLE, "audit",
			            "the request's audit record was not written in time: not sent");
			return;
		}
		if (c->up != NULL) {
			upstream_free(c->up);
			c->up = NULL;
		}
		http_answer(c, 504, REFUSAL_UPSTREAM_FAILED, "limits.upstream_connect", "upstream connect timed out");
		return;
	case CONN_S_RELAY:
		if (relay_up_progress(c)) {
			conn_arm_timer(c, conn_limits(c)->body_ms);
			return;
		}
		relay_abort(c, "no progress in time (limits.body)", 504);
		return;
	case CONN_S_H2:
		if (conn_ops(c)->waiting(c)) {  /* a stream waits for an operator: the connection is not idle */
			conn_arm_timer(c, conn_limits(c)->idle_ms);
			return;
		}
		conn_close(c);
		return;
	case CONN_S_HOLD:
		if (refuse_proto_draining(c)) {
			refuse_proto_timeout(c, &rf);
			http_answer_end(c, rf.status, rf.rule, rf.reason, !rf.quiet, !rf.close);
			return;
		}
		if (sem_timeout(c, &rf)) {
			http_refuse(c, &rf);
			return;
		}
		c->req->client_keep_alive = 0;
		http_answer(c, 408, REFUSAL_TIMEOUT, "limits.body", "request body not received in time");
		return;
	case CONN_S_TUNNEL:
		conn_close(c);
		return;
	default:
		conn_close(c);
		return;
	}
}

