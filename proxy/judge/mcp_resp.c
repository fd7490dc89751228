/*
 * proxy/judge/mcp_resp.c - MCP responses: list results filtered in
 * application/json answers and in the events of text/event-stream answers
 * (proxy/judge/mcp_resp.h says what passes, what is refused, the bounds).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <event2/buffer.h>

#include "common/fold.h"
#include "common/log.h"
#include "common/sluice.h"
#include "proxy/core/conn.h"
#include "proxy/codec/h1_parse.h"
#include "proxy/codec/sse.h"
#include "proxy/net/net.h"
#include "proxy/judge/mcp_resp.h"
#include "proxy/judge/mcp_req.h"

struct mcp_resp {
	enum mcp_resp_kind kind;
	struct evbuffer *in;            /* de-framed body bytes from the relay */
	struct evbuffer *out;           /* filtered bytes for the relay */
	struct sse_parser sse;          /* MCP_RESP_SSE */
	long removed;                   /* entries removed over the whole answer */
	enum policy_mcp_method list;    /* the last list filtered, for the record */
	struct mcp_frame frame;         /* the relay's */
	struct policy_mcp_scan scan;    /* the list-result scanner, reused for every text of the answer */
	char *dumped;                   /* the jansson path's last rewritten text */
};

/* The media type of <m>'s Content-Type is <type> (case-insensitive, parameters ignored). */
static int
media_is(const struct h1_message *m, const char *type)
{
	const struct h1_header *ct = h1_find_header(m, "content-type");
	size_t n = 0, tl = strlen(type);

	if (ct == NULL)
		return 0;
	while (n < ct->value_len && ct->value[n] != ';' && ct->value[n] != ' ' && ct->value[n] != '\t')
		n++;
	return n == tl && strncasecmp(ct->value, type, tl) == 0;
}

int
mcp_resp_begin(struct conn *c, const struct h1_message *m)
{
	struct req *r = c->req;
	const struct h1_header *ce;
	const char *endpoint;
	struct mcp_resp *s;
	int code, kind;

	if (m->framing == H1_BODY_NONE || !policy_host_mcp(c->entry, &endpoint, &code) || r->path == NULL ||
	    strcmp(r->path, endpoint) != 0)
		return MCP_RESP_NONE;
	if (media_is(m, "application/json"))
		kind = MCP_RESP_JSON;
	else if (media_is(m, "text/event-stream"))
		kind = MCP_RESP_SSE;
	else
		return MCP_RESP_NONE;  /* no list result an MCP client would read (the SDK refuses other types) */
	ce = h1_find_header(m, "content-encoding");
	if (ce != NULL && !sluice_iov_ieq(ce->value, ce->value_len, "identity"))
		return -1;  /* an encoded list could not be filtered: never relayed unread */
	if ((s = calloc(1, sizeof(*s))) == NULL || (s->in = evbuffer_new()) == NULL || (s->out = evbuffer_new()) == NULL) {
		if (s != NULL && s->in != NULL)
			evbuffer_free(s->in);
		free(s);
		return -1;
	}
	s->kind = (enum mcp_resp_kind)kind;
	policy_mcp_scan_init(&s->scan);
	if (kind == MCP_RESP_SSE)
		sse_parser_init(&s->sse, MCP_RESP_EVENT_MAX);
	r->mcpr = s;
	return kind;
}

struct evbuffer *
mcp_resp_in(struct req *r)
{
	return r->mcpr->in;
}

struct evbuffer *
mcp_resp_out(struct req *r)
{
	return r->mcpr->out;
}

struct mcp_frame *
mcp_resp_frame(struct req *r)
{
	return &r->mcpr->frame;
}

enum mcp_resp_kind
mcp_resp_kind_of(const struct req *r)
{
	return r->mcpr != NULL ? r->mcpr->kind : MCP_RESP_NONE;
}

size_t
mcp_resp_queue_max(const struct req *r)
{
	/* a JSON body is held whole (one byte over the bound is how the bound is seen); a stream moves on */
	return r->mcpr->kind == MCP_RESP_JSON ? MCP_RESP_JSON_MAX + 1 : PROXY_HIGH_WATER;
}

/* ---- filtering ---- */

/*
 * The list method that the request with <id> asked for (the request in
 * flight, proxy/judge/mcp_req.h), when it asked for a list; else
 * POLICY_MCP_M_NONE, and the result is filtered by its shape, which is what
 * an uncorrelated result gets in any case: over-filtering, never under.
 */
static enum policy_mcp_method
request_list_method(struct conn *c, const json_t *id)
{
	enum policy_mcp_method m = c->req != NULL ? mcp_req_method_of(c->req, id) : POLICY_MCP_M_NONE;

	return m == POLICY_MCP_M_TOOLS_LIST || m == POLICY_MCP_M_RESOURCES_LIST || m == POLICY_MCP_M_PROMPTS_LIST
	           ? m
	           : POLICY_MCP_M_NONE;
}

/* The list a result is by its shape, for the record. */
static enum policy_mcp_method
shape_of(const json_t *result)
{
	if (json_is_array(json_object_get(result, "tools")))
		return POLICY_MCP_M_TOOLS_LIST;
	if (json_is_array(json_object_get(result, "resources")))
		return POLICY_MCP_M_RESOURCES_LIST;
	if (json_is_array(json_object_get(result, "prompts")))
		return POLICY_MCP_M_PROMPTS_LIST;
	return POLICY_MCP_M_NONE;
}

/* The byte sequence of LONG S (U+017F), which folds to 's' (common/fold.h). */
static int
has_long_s(const char *t, size_t n)
{
	const char *p = t, *e = t + n;

	while ((p = memchr(p, 0xc5, (size_t)(e - p))) != NULL) {
		if (++p < e && (unsigned char)*p == 0xbf)
			return 1;
	}
	return 0;
}

/*
 * 1 when JSON text <t>/<n> may hold a list result or a server request: the
 * rest (tool results, notifications: most events of a stream) need not be
 * parsed.  A JSON key is a string followed by a colon; without a backslash
 * it is spelled as it is, so a list result has the keys "result" and
 * "tools", "resources" or "prompts", and a request "method" and "id"; with
 * one (a key may be written with \u escapes) every text is read.
 * Case-folding clients read "Result" or "reſult" (LONG S) as result: keys
 * are matched without case, and a text with a LONG S is read.  A text that
 * is not JSON is no list to any client.  One look per colon (fewer than
 * quotes), back over white space to the key that ends there.
 */
static int
may_matter(const char *t, size_t n)
{
	static const char *const words[6] = {"method", "id", "result", "tools", "resources", "prompts"};
	static const size_t wlen[6] = {6, 2, 6, 5, 9, 7};
	const char *p = t, *e = t + n;
	unsigned seen = 0;  /* bit k: the key words[k] seen */
	size_t k;

	if (memchr(t, '\\', n) != NULL || has_long_s(t, n))
		return 1;
	for (; (p = memchr(p, ':', (size_t)(e - p))) != NULL; p++) {
		const char *q = p;  /* back to the quote that closes the key */

		while (q > t && (q[-1] == ' ' || q[-1] == '\t' || q[-1] == '\n' || q[-1] == '\r'))
			q--;
		if (q == t || q[-1] != '"')
			continue;
		q--;
		for (k = 0; k < 6; k++)
			if ((size_t)(q - t) > wlen[k] && q[-(ptrdiff_t)wlen[k] - 1] == '"' &&
			    (q[-(ptrdiff_t)wlen[k]] | 0x20) == words[k][0] && strncasecmp(q - wlen[k], words[k], wlen[k]) == 0)
				seen |= 1u << k;
		if ((seen & 3) == 3 || ((seen & 4) && (seen & 0x38)))
			return 1;
	}
	return 0;
}

/* 1 if the object <o> has a member "result", or one a case-folding client reads as it ("Result", "reſult"). */
static int
result_member(const json_t *o)
{
	const char *k;
	json_t *v;
	size_t n;

	json_object_keylen_foreach(SLUICE_DECONST(json_t *, o), k, n, v)
		if (sluice_fold_eq(k, n, "result", 6))
			return 1;
	return 0;
}

/* 1 if <v> (a message, or a batch of them) has a result member: a list result could be in it. */
static int
has_result(const json_t *v)
{
	size_t i;

	if (json_is_object(v))
		return result_member(v);
	for (i = 0; i < json_array_size(v); i++)
		if (json_is_object(json_array_get(v, i)) && result_member(json_array_get(v, i)))
			return 1;
	return 0;
}

/*
 * JSON text the strict reader refused: an error answer the reader does not
 * take as a message (the SDK's {"error":...,"id":null} to a bad request, a
 * 405 to a GET) passes as it is; text that is not JSON (or has a duplicate
 * key), or that has a result the filter could not read, is refused.
 */
static int
unread_text(const char *t, size_t n, const char **why)
{
	json_t *root = json_loadb(t, n, JSON_REJECT_DUPLICATES, NULL);
	int pass = root != NULL && !has_result(root);

	json_decref(root);
	if (pass)
		return 0;
	*why = "an MCP answer that is not a JSON-RPC message the gateway reads";
	return -1;
}

/* The id the scanner read, as the request side's correlation takes it (a new reference; NULL: memory). */
static json_t *
scan_id(const struct policy_mcp_scan *sc)
{
	char num[32];

	if (sc->id_string)
		return json_stringn(sc->id + 1, sc->id_len - 2);
	if (sc->id_len >= sizeof(num))
		return NULL;
	memcpy(num, sc->id, sc->id_len);
	num[sc->id_len] = '\0';
	return json_integer(strtoll(num, NULL, 10));
}

/*
 * The fast path of filter_text: the scanner (policy/mcp.h) on a text that
 * starts with '{'.  1 filtered (*<out> the scanner's), 0 passes as it is,
 * -1 refused (*<why>), -2 not sure: the jansson path reads it.
 */
static int
filter_scan(struct conn *c, struct mcp_resp *s, const char *t, size_t n, const char **out, size_t *outlen,
            const char **why)
{
	enum policy_mcp_method list;
	json_t *id;
	long x;
	int rc = policy_mcp_scan_read(&s->scan, c->pol, c->entry, t, n);

	if (rc == -2)
		return -2;
	if (rc < 0) {
		*why = "out of memory filtering an MCP answer";
		return -1;
	}
	if (c->req == NULL || c->req->mcp == NULL) {
		list = POLICY_MCP_M_NONE;  /* no request read (a GET stream): nothing to correlate, no id to build */
	} else {
		if ((id = scan_id(&s->scan)) == NULL) {
			*why = "out of memory filtering an MCP answer";
			return -1;
		}
		list = request_list_method(c, id);
		json_decref(id);
	}
	x = policy_mcp_scan_filter(&s->scan, list);
	if (x == -2 || x == 0)
		return (int)x;
	if (x < 0) {
		*why = "out of memory filtering an MCP answer";
		return -1;
	}
	s->removed += x;
	s->list = list != POLICY_MCP_M_NONE ? list : s->scan.list;
	*out = s->scan.out;
	*outlen = s->scan.outlen;
	return 1;
}

/*
 * One JSON-RPC text <s>/<n> (a body, or an event's data): 0 when it passes as
 * it is, 1 with *<out>/<outlen> its filtered text (owned by <s>, valid until
 * the next call), -1 refused (*<why>).  Text that does not start like JSON
 * passes when <strict> is 0 (an event's data need not be JSON-RPC) and is
 * refused otherwise.  A single response goes to the scanner first; what it
 * is not sure of (and every request, batch and error) is read with jansson.
 */
static int
filter_text(struct conn *c, struct mcp_resp *s, const char *t, size_t n, int strict, const char **out,
            size_t *outlen, const char **why)
{
	struct policy_mcp_body b;
	enum policy_mcp_error err;
	enum policy_mcp_method list;
	size_t i, k = 0;
	long x, total = 0;
	int ret = 0;

	while (k < n && (t[k] == ' ' || t[k] == '\t' || t[k] == '\r' || t[k] == '\n'))
		k++;
	if (k == n || !may_matter(t + k, n - k))
		return 0;  /* an empty body (202 Accepted) or an empty data field; or no list result can be in it */
	if (t[k] != '{' && t[k] != '[') {
		if (!strict)
			return 0;
		*why = "an MCP answer that is not JSON";
		return -1;
	}
	if (t[k] == '{' && (ret = filter_scan(c, s, t, n, out, outlen, why)) != -2)
		return ret;
	ret = 0;
	if (policy_mcp_parse(t, n, &b, &err) != 0) {
		policy_mcp_body_dispose(&b);
		return unread_text(t, n, why);
	}
	for (i = 0; i < b.nmsgs; i++) {
		const struct policy_mcp_msg *msg = &b.msgs[i];
		json_t *res;

		if (msg->kind == POLICY_MCP_REQUEST) {
			mcp_req_peer_add(c, msg);
			continue;
		}
		if (msg->kind != POLICY_MCP_RESPONSE || msg->result == NULL)
			continue;
		res = json_object_get(SLUICE_DECONST(json_t *, msg->obj), "result");
		list = request_list_method(c, msg->id);
		x = policy_mcp_list_filter(c->pol, c->entry, list, res);
		if (x < 0) {
			*why = "an MCP list result the gateway cannot filter (over its bound, or a member a client could read "
			       "as the list)";
			ret = -1;
			break;
		}
		if (x > 0) {
			total += x;
			s->list = list != POLICY_MCP_M_NONE ? list : shape_of(res);
		}
	}
	if (ret == 0 && total > 0) {
		free(s->dumped);
		s->dumped = NULL;
		if (b.inexact) {
			*why = "an MCP list result with a number the filter cannot rewrite exactly";
			ret = -1;
		} else if ((s->dumped = json_dumps(b.root, JSON_COMPACT)) == NULL) {
			*why = "out of memory filtering an MCP answer";
			ret = -1;
		} else {
			*out = s->dumped;
			*outlen = strlen(s->dumped);
			s->removed += total;
			ret = 1;
		}
	}
	policy_mcp_body_dispose(&b);
	return ret;
}

/* One SSE unit <u> whose event was rewritten to <data>/<dlen>: rendered into space reserved in s->out. */
static int
sse_unit_put(struct mcp_resp *s, const struct sse_unit *u, const char *data, size_t dlen)
{
	struct evbuffer_iovec v;
	/* enough for an event whose new data is one line (compact JSON): rendered once */
	size_t need = u->raw_len + dlen + 8, got;

	for (;;) {
		if (evbuffer_reserve_space(s->out, (ev_ssize_t)need, &v, 1) != 1 || v.iov_len < need)
			return -1;
		if ((got = sse_unit_rewrite(u, data, dlen, v.iov_base, v.iov_len)) <= v.iov_len)
			break;
		need = got;  /* data of several lines: the exact size, reserved again (nothing was committed) */
	}
	v.iov_len = got;
	return evbuffer_commit_space(s->out, &v, 1);
}

/*
 * One SSE unit <u>: 0 when it passes as it is, 1 when its event is to be
 * rewritten with the data *<data>/<dlen> (owned by <s>), -1 refused (*<why>).
 */
static int
sse_unit_filter(struct conn *c, struct mcp_resp *s, const struct sse_unit *u, const char **data, size_t *dlen,
                const char **why)
{
	if (u->kind != SSE_UNIT_EVENT || !u->has_data)
		return 0;
	return filter_text(c, s, u->data, u->data_len, 0, data, dlen, why);
}

/*
 * The units of s->in through the parser into s->out.  Units that pass as
 * they are and lie in the input as it came (not gathered by the parser
 * across pieces) are copied in runs: one evbuffer_add per piece of input,
 * not one per event.
 */
static int
sse_pump(struct conn *c, struct mcp_resp *s, int end, const char **why)
{
	struct evbuffer_iovec v;
	struct sse_unit u;
	const char *data;
	size_t dlen;
	long rc;
	int put;

	while (evbuffer_peek(s->in, -1, NULL, &v, 1) == 1 && v.iov_len > 0) {
		const char *base = v.iov_base;
		size_t off = 0, run = 0;  /* bytes [run, off) pass as they are and are not copied yet */

		while (off < v.iov_len) {
			rc = sse_parse(&s->sse, base + off, v.iov_len - off, &u);
			if (rc == -2)
				break;  /* the parser holds the rest of the piece */
			if (rc < 0) {
				*why = "an MCP event over the gateway's bound (MCP_RESP_EVENT_MAX)";
				return -1;
			}
			if ((put = sse_unit_filter(c, s, &u, &data, &dlen, why)) < 0)
				return -1;
			if (put == 0 && u.raw == base + off) {
				off += (size_t)rc;  /* in place: the run grows */
				continue;
			}
			if (evbuffer_add(s->out, base + run, off - run) != 0 ||
			    (put == 1 ? sse_unit_put(s, &u, data, dlen) : evbuffer_add(s->out, u.raw, u.raw_len)) != 0)
				goto nomem;
			off += (size_t)rc;
			run = off;
		}
		if (evbuffer_add(s->out, base + run, off - run) != 0)
			goto nomem;
		evbuffer_drain(s->in, v.iov_len);
	}
	/* an event the stream ended inside is dropped (a browser drops it too): it could not be filtered */
	(void)end;
	return 0;
nomem:
	*why = "out of memory filtering an MCP event";
	return -1;
}

int
mcp_resp_pump(struct conn *c, int end, const char **why)
{
	struct mcp_resp *s = c->req->mcpr;
	size_t n = evbuffer_get_length(s->in), outlen = 0;
	const char *out = NULL;
	int rc;

	if (s->kind == MCP_RESP_SSE)
		return sse_pump(c, s, end, why);
	if (n > MCP_RESP_JSON_MAX) {
		*why = "an MCP answer over the gateway's bound (MCP_RESP_JSON_MAX)";
		return -1;
	}
	if (!end)
		return 0;
	rc = filter_text(c, s, (const char *)evbuffer_pullup(s->in, -1), n, 1, &out, &outlen, why);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return evbuffer_add_buffer(s->out, s->in);
	evbuffer_drain(s->in, n);
	return evbuffer_add(s->out, out, outlen);
}

const char *
mcp_resp_audit(const struct req *r, long *removed)
{
	*removed = 0;
	if (r->mcpr == NULL || r->mcpr->removed == 0)
		return NULL;
	*removed = r->mcpr->removed;
	switch (r->mcpr->list) {
	case POLICY_MCP_M_TOOLS_LIST:
		return "tools/list";
	case POLICY_MCP_M_RESOURCES_LIST:
		return "resources/list";
	case POLICY_MCP_M_PROMPTS_LIST:
		return "prompts/list";
	default:
		return NULL;
	}
}

void
mcp_resp_free(struct req *r)
{
	struct mcp_resp *s = r->mcpr;

	if (s == NULL)
		return;
	if (s->kind == MCP_RESP_SSE)
		sse_parser_dispose(&s->sse);
	policy_mcp_scan_dispose(&s->scan);
	free(s->dumped);
	evbuffer_free(s->in);
	evbuffer_free(s->out);
	if (s->frame.head != NULL)
		evbuffer_free(s->frame.head);
	free(s);
	r->mcpr = NULL;
}
